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

/// When a tool call that needs more than its sandbox mode allows is asked about
/// (`[permissions] approval`, `--ask-for-approval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// `"untrusted"`: ask before any code-running call not known to be harmless (a few
    /// read-only commands such as `ls`, `cat`, `git status`), and when the sandbox refuses one.
    Untrusted,
    /// `"on-request"`: calls run confined; one the sandbox refused is offered to run again
    /// unconfined, asked of whoever drives the run. The default.
    #[default]
    OnRequest,
    /// `"never"`: never ask; what the sandbox refuses stays refused, and the observation says
    /// so and how to allow it.
    Never,
}

impl ApprovalPolicy {
    /// Every policy.
    pub const ALL: [ApprovalPolicy; 3] = [Self::Untrusted, Self::OnRequest, Self::Never];

    /// The spelling in the configuration and on the command line.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Untrusted => "untrusted",
            Self::OnRequest => "on-request",
            Self::Never => "never",
        }
    }
}

impl fmt::Display for ApprovalPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that is not an [`ApprovalPolicy`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an approval policy (untrusted, on-request or never)")]
pub struct UnknownApprovalPolicy(pub String);

impl FromStr for ApprovalPolicy {
    type Err = UnknownApprovalPolicy;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|policy| policy.as_str() == text)
            .ok_or_else(|| UnknownApprovalPolicy(text.to_owned()))
    }
}

/// What a [`PermissionRule`] decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleDecision {
    /// The matching call runs unconfined, unasked.
    Allow,
    /// The matching call is refused, unasked.
    Deny,
}

/// One rule (`[[permissions.rules]]`, or a line of the rules file an "always" answer wrote):
/// every given field must match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionRule {
    /// The tool (`bash`, `python_execute`); any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The command (bash) or code (Python) starts with this, after leading blanks (`git
    /// status`, `pip install`); any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The paths the call names lie under this one (`~` is the home, a relative path is taken
    /// from the workspace): for `deny`, any of them; for `allow`, all of them (and it names at
    /// least one). Any call when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Only in this workspace (its absolute path); everywhere when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Allow or deny.
    pub decision: RuleDecision,
}

/// A tool call as rules see it.
#[derive(Debug, Clone, Copy)]
pub struct RuleSubject<'a> {
    /// The tool.
    pub tool: &'a str,
    /// Its command (bash) or code (Python); empty for other tools.
    pub text: &'a str,
    /// The absolute paths it names, lexically normalised (its `path` argument, and the
    /// absolute or `~` paths in its text).
    pub paths: &'a [PathBuf],
    /// The workspace.
    pub workspace: &'a std::path::Path,
    /// The home directory, for rules whose path starts with `~`.
    pub home: Option<&'a std::path::Path>,
}

impl PermissionRule {
    /// Whether the rule applies to `call`.
    #[must_use]
    pub fn matches(&self, call: &RuleSubject<'_>) -> bool {
        self.tool
            .as_deref()
            .is_none_or(|wanted| wanted == call.tool)
            && self
                .prefix
                .as_deref()
                .is_none_or(|prefix| call.text.trim_start().starts_with(prefix))
            && self
                .workspace
                .as_deref()
                .is_none_or(|wanted| std::path::Path::new(wanted) == call.workspace)
            && self.path.as_deref().is_none_or(|wanted| {
                let Some(root) = expand_home(wanted, call.home) else {
                    return false;
                };
                let root = call.workspace.join(root);
                let under = |path: &PathBuf| path.starts_with(&root);
                match self.decision {
                    RuleDecision::Deny => call.paths.iter().any(under),
                    RuleDecision::Allow => !call.paths.is_empty() && call.paths.iter().all(under),
                }
            })
    }
}

/// The rules file: `[[rules]]` entries, where an "always" answer appends one
/// (`$XDG_CONFIG_HOME/openmanus/rules.toml` or `~/.config/openmanus/rules.toml`, hidden from
/// the tools).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesFile {
    /// The rules, in order.
    #[serde(default)]
    pub rules: Vec<PermissionRule>,
}

/// The rules file cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RulesFileError {
    /// Reading or writing it failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It is not a rules file.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl RulesFile {
    /// Where the rules file is, from the environment's `XDG_CONFIG_HOME` and `HOME`.
    #[must_use]
    pub fn default_path() -> Option<PathBuf> {
        let absolute = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let dir =
            absolute("XDG_CONFIG_HOME").or_else(|| absolute("HOME").map(|h| h.join(".config")))?;
        Some(dir.join("openmanus").join("rules.toml"))
    }

    /// The rules in `path`; none when it does not exist.
    ///
    /// # Errors
    ///
    /// It cannot be read, or is not a rules file.
    pub fn load(path: &std::path::Path) -> Result<Self, RulesFileError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self::default());
            }
            Err(source) => {
                return Err(RulesFileError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        toml::from_str(&text).map_err(|error| RulesFileError::Invalid {
            path: path.to_path_buf(),
            message: error.to_string(),
        })
    }

    /// Appends `rule` to the file at `path` (created, with its directory, when missing).
    ///
    /// # Errors
    ///
    /// It cannot be read or written.
    pub fn append(path: &std::path::Path, rule: PermissionRule) -> Result<(), RulesFileError> {
        let mut file = Self::load(path)?;
        file.rules.push(rule);
        let io = |source| RulesFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let text = toml::to_string(&file).map_err(|error| RulesFileError::Invalid {
            path: path.to_path_buf(),
            message: error.to_string(),
        })?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        std::fs::write(
            path,
            format!("# openmanus permission rules (`openmanus rules`)\n{text}"),
        )
        .map_err(io)
    }
}

/// `[permissions]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsSettings {
    /// The sandbox mode of the code-running tools. Default `"workspace-write"`.
    pub sandbox: SandboxMode,
    /// When to ask. Default `"on-request"`; with nobody to ask, `"never"`.
    pub approval: ApprovalPolicy,
    /// Rules, checked before the rules file's, first match wins.
    pub rules: Vec<PermissionRule>,
    /// In `workspace-write`, the tools may use the network. Default `false`. (The model's own
    /// requests are openmanus's and are never confined; `browser_use` keeps its network.)
    pub network: bool,
    /// More directories the tools may write in `workspace-write` (`~` is the home). Default none.
    pub writable: Vec<String>,
    /// More paths hidden from the tools, besides [`DEFAULT_HIDDEN`] (`~` is the home).
    pub hidden: Vec<String>,
    /// The user's hooks (`[[permissions.hooks]]`), in order.
    pub hooks: Vec<crate::hooks::HookSettings>,
}

impl Default for PermissionsSettings {
    fn default() -> Self {
        Self {
            sandbox: SandboxMode::WorkspaceWrite,
            approval: ApprovalPolicy::OnRequest,
            rules: Vec::new(),
            network: false,
            writable: Vec::new(),
            hidden: Vec::new(),
            hooks: Vec::new(),
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
    fn rules_match_on_every_given_field_and_the_file_keeps_what_is_appended() {
        let rule = PermissionRule {
            tool: Some("bash".into()),
            prefix: Some("git status".into()),
            path: None,
            workspace: None,
            decision: RuleDecision::Allow,
        };
        let ws = Path::new("/w");
        let call = |tool, text| RuleSubject {
            tool,
            text,
            paths: &[],
            workspace: ws,
            home: None,
        };
        assert!(rule.matches(&call("bash", "  git status --short")));
        assert!(!rule.matches(&call("python_execute", "git status")));
        assert!(!rule.matches(&call("bash", "git push")));
        let pinned = PermissionRule {
            workspace: Some("/other".into()),
            ..rule.clone()
        };
        assert!(!pinned.matches(&call("bash", "git status")));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/rules.toml");
        assert_eq!(RulesFile::load(&path).unwrap(), RulesFile::default());
        RulesFile::append(&path, rule.clone()).unwrap();
        RulesFile::append(&path, pinned.clone()).unwrap();
        assert_eq!(RulesFile::load(&path).unwrap().rules, [rule, pinned]);
        std::fs::write(&path, "[[rules]]\nverdict = 1\n").unwrap();
        assert!(RulesFile::load(&path).is_err());
        for policy in ApprovalPolicy::ALL {
            assert_eq!(policy.as_str().parse::<ApprovalPolicy>(), Ok(policy));
        }
        assert!("sometimes".parse::<ApprovalPolicy>().is_err());
    }

    #[test]
    fn a_path_rule_denies_a_call_naming_any_path_under_it_and_allows_one_naming_only_such() {
        let paths = |list: &[&str]| list.iter().map(PathBuf::from).collect::<Vec<_>>();
        fn call<'a>(paths: &'a [PathBuf]) -> impl Fn(&PermissionRule) -> bool + 'a {
            move |rule| {
                rule.matches(&RuleSubject {
                    tool: "bash",
                    text: "",
                    paths,
                    workspace: Path::new("/w"),
                    home: Some(Path::new("/home/me")),
                })
            }
        }
        let deny = PermissionRule {
            tool: None,
            prefix: None,
            path: Some("~/private".into()),
            workspace: None,
            decision: RuleDecision::Deny,
        };
        let allow = PermissionRule {
            path: Some("~/.cache/pip".into()),
            decision: RuleDecision::Allow,
            ..deny.clone()
        };
        let mixed = paths(&["/w/a", "/home/me/private/key"]);
        assert!(call(&mixed)(&deny));
        assert!(!call(&paths(&["/home/me/privateer"]))(&deny));
        assert!(!call(&[])(&deny));
        assert!(call(&paths(&[
            "/home/me/.cache/pip/x",
            "/home/me/.cache/pip"
        ]))(&allow));
        assert!(!call(&paths(&["/home/me/.cache/pip/x", "/etc/passwd"]))(
            &allow
        ));
        assert!(
            !call(&[])(&allow),
            "a call naming no path is not allowed by a path"
        );
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
