//! `[permissions]`: what the agent's code-running tools (`bash`, `python_execute`, the
//! DataAnalysis Python) may do on this machine without being given more. The settings
//! vocabulary only; `agent-sandbox` turns it into a confinement (`Confinement::from_settings`).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where the code-running tools may write, and whether they reach the network
/// (`[permissions] sandbox`, `--sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// `"read-only"`: the tools read the file system (the secrets hidden) and write nowhere but a
    /// private temporary directory; no network.
    ReadOnly,
    /// `"workspace-write"`: as `read-only`, and the workspace (plus `[permissions] writable`) is
    /// writable; the network only with `[permissions] network = true`. The default.
    #[default]
    WorkspaceWrite,
    /// `"full-access"`: no confinement — the tools act with the user's full authority, as
    /// OpenManus's do. Only when asked for.
    FullAccess,
}

impl SandboxMode {
    /// Every mode, in order of what it allows.
    pub const ALL: [SandboxMode; 3] = [Self::ReadOnly, Self::WorkspaceWrite, Self::FullAccess];

    /// The spelling in the configuration and on the command line.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::FullAccess => "full-access",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that is not a [`SandboxMode`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a sandbox mode (read-only, workspace-write or full-access)")]
pub struct UnknownSandboxMode(pub String);

impl FromStr for SandboxMode {
    type Err = UnknownSandboxMode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text)
            .ok_or_else(|| UnknownSandboxMode(text.to_owned()))
    }
}

/// What is hidden from the tools by default (`~` is the user's home): keys, tokens, credential
/// stores and browser profiles. `[permissions] hidden` adds to it. A hidden directory reads as
/// empty, a hidden file as empty (bubblewrap) or cannot be opened (Landlock).
pub const DEFAULT_HIDDEN: &[&str] = &[
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.config/openmanus",
    "~/.password-store",
    "~/.local/share/keyrings",
    "~/.pypirc",
    "~/.npmrc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.mozilla",
    "~/.config/google-chrome",
    "~/.config/chromium",
    "~/.config/BraveSoftware",
    "~/.var/app",
    "/run/docker.sock",
    "/var/run/docker.sock",
];

/// `[permissions]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsSettings {
    /// The sandbox mode of the code-running tools. Default `"workspace-write"`.
    pub sandbox: SandboxMode,
    /// In `workspace-write`, the tools may use the network. Default `false`. (The model's own
    /// requests are openmanus's and are never confined; `browser_use` keeps its network.)
    pub network: bool,
    /// More directories the tools may write in `workspace-write` (`~` is the home). Default none.
    pub writable: Vec<String>,
    /// More paths hidden from the tools, besides [`DEFAULT_HIDDEN`] (`~` is the home).
    pub hidden: Vec<String>,
}

impl Default for PermissionsSettings {
    fn default() -> Self {
        Self {
            sandbox: SandboxMode::WorkspaceWrite,
            network: false,
            writable: Vec::new(),
            hidden: Vec::new(),
        }
    }
}

impl PermissionsSettings {
    /// Every hidden path, [`DEFAULT_HIDDEN`] then `hidden`, with `~` replaced by `home` (paths
    /// starting with `~` are left out when there is no home).
    #[must_use]
    pub fn hidden_paths(&self, home: Option<&std::path::Path>) -> Vec<PathBuf> {
        DEFAULT_HIDDEN
            .iter()
            .copied()
            .chain(self.hidden.iter().map(String::as_str))
            .filter_map(|path| expand_home(path, home))
            .collect()
    }

    /// The extra writable directories, `~` replaced by `home`.
    #[must_use]
    pub fn writable_paths(&self, home: Option<&std::path::Path>) -> Vec<PathBuf> {
        self.writable
            .iter()
            .filter_map(|path| expand_home(path, home))
            .collect()
    }
}

/// `path` with a leading `~/` (or a lone `~`) replaced by `home`; `None` when it needs a home
/// and there is none.
fn expand_home(path: &str, home: Option<&std::path::Path>) -> Option<PathBuf> {
    match path.strip_prefix('~') {
        Some("") => home.map(std::path::Path::to_path_buf),
        Some(rest) => match rest.strip_prefix('/') {
            Some(rest) => home.map(|home| home.join(rest)),
            None => Some(PathBuf::from(path)),
        },
        None => Some(PathBuf::from(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn modes_read_back_from_their_spelling() {
        for mode in SandboxMode::ALL {
            assert_eq!(mode.as_str().parse::<SandboxMode>(), Ok(mode));
        }
        let error = "danger".parse::<SandboxMode>().unwrap_err();
        assert!(error.to_string().contains("workspace-write"), "{error}");
        assert_eq!(SandboxMode::default(), SandboxMode::WorkspaceWrite);
    }

    #[test]
    fn the_section_reads_from_toml_and_refuses_what_it_does_not_know() {
        let settings: PermissionsSettings =
            toml::from_str("sandbox = \"read-only\"\nnetwork = true\nhidden = [\"~/x\"]").unwrap();
        assert_eq!(settings.sandbox, SandboxMode::ReadOnly);
        assert!(settings.network);
        assert_eq!(settings.hidden, ["~/x"]);
        assert!(toml::from_str::<PermissionsSettings>("sandbox = \"yolo\"").is_err());
        assert!(toml::from_str::<PermissionsSettings>("network_enabled = true").is_err());
        let empty: PermissionsSettings = toml::from_str("").unwrap();
        assert_eq!(empty, PermissionsSettings::default());
    }

    #[test]
    fn the_home_is_put_in_and_paths_needing_none_are_kept() {
        let settings = PermissionsSettings {
            hidden: vec!["~/notes/keys".into(), "/srv/secret".into(), "~x".into()],
            writable: vec!["~".into(), "/data".into()],
            ..PermissionsSettings::default()
        };
        let hidden = settings.hidden_paths(Some(Path::new("/home/u")));
        assert_eq!(hidden[0], Path::new("/home/u/.ssh"));
        assert!(hidden.ends_with(&[
            PathBuf::from("/home/u/notes/keys"),
            PathBuf::from("/srv/secret"),
            PathBuf::from("~x"),
        ]));
        let without_home = settings.hidden_paths(None);
        assert!(without_home.iter().all(|p| !p.starts_with("~/")));
        assert!(without_home.contains(&PathBuf::from("/srv/secret")));
        assert_eq!(
            settings.writable_paths(Some(Path::new("/home/u"))),
            [PathBuf::from("/home/u"), PathBuf::from("/data")]
        );
        assert_eq!(settings.writable_paths(None), [PathBuf::from("/data")]);
    }
}
