//! Confinement of the agent's code-running tools on the host (`[permissions]`, `--sandbox`):
//! `bash`, `python_execute` and the DataAnalysis Python run with the file system read-only but
//! for the workspace (and a private `/tmp`), the user's secrets hidden and the network off,
//! unless the mode says otherwise.
//!
//! Unlike [`LocalSandbox`](crate::LocalSandbox) (a separate root with the workspace mounted in,
//! limits, sessions), a confinement keeps the host's view of the file system — the same paths,
//! programs and libraries — and only takes rights away. Two mechanisms, tried in order:
//!
//! 1. **bubblewrap**: new user, mount, PID, IPC and UTS (and, with the network off, network)
//!    namespaces; `/` bound read-only, a private `/tmp`, hidden paths covered by an empty
//!    directory or `/dev/null`, the writable paths bound back read-write.
//! 2. **Landlock** (where bwrap is missing or user namespaces are refused): the program is
//!    started through this process's own executable (the shim, see [`shim_main`]), which
//!    restricts itself with Landlock (read everywhere but the hidden paths, write only in the
//!    writable paths and a private temporary directory) and a seccomp filter (no `socket()` with
//!    the network off, no `io_uring`), then executes the program.
//!
//! Where neither can confine, [`Confinement::new`] fails with a message naming the opt-out
//! (`--sandbox full-access`); nothing runs unconfined without being told to.

mod bwrap;
mod cover;
mod shim;

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_config::{PermissionsSettings, SandboxMode};

pub use shim::{SHIM_ARG, shim_main};

/// How long a probe of a mechanism may take (it answers in milliseconds).
const PROBE_LIMIT: Duration = Duration::from_secs(60);

/// What a [`Confinement`] allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfinementOptions {
    /// The mode (`full-access` builds no confinement).
    pub mode: SandboxMode,
    /// The workspace: writable in `workspace-write`, readable in `read-only`.
    pub workspace: PathBuf,
    /// More writable directories (`workspace-write` only).
    pub writable: Vec<PathBuf>,
    /// Paths hidden from the tools (secrets). Paths that do not exist are skipped.
    pub hidden: Vec<PathBuf>,
    /// The tools may use the network (`workspace-write` only).
    pub network: bool,
}

impl ConfinementOptions {
    /// The default confinement of `mode` over `workspace`: nothing else writable, the default
    /// secrets hidden (under `$HOME`), no network.
    #[must_use]
    pub fn new(mode: SandboxMode, workspace: impl Into<PathBuf>) -> Self {
        let settings = PermissionsSettings {
            sandbox: mode,
            ..PermissionsSettings::default()
        };
        Self::from_settings(&settings, workspace)
    }

    /// The confinement `[permissions]` asks for over `workspace` (`~` in its paths is `$HOME`).
    #[must_use]
    pub fn from_settings(settings: &PermissionsSettings, workspace: impl Into<PathBuf>) -> Self {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|home| home.is_absolute());
        Self {
            mode: settings.sandbox,
            workspace: workspace.into(),
            writable: settings.writable_paths(home.as_deref()),
            hidden: settings.hidden_paths(home.as_deref()),
            network: settings.network,
        }
    }

    /// Also hides `paths` (e.g. the configuration files, which hold the API keys).
    #[must_use]
    pub fn hiding(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.hidden.extend(paths);
        self
    }

    /// The directories the tools may write (canonical, existing): the workspace and the extra
    /// ones in `workspace-write`, none otherwise.
    fn writable_dirs(&self) -> Vec<PathBuf> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return Vec::new();
        }
        std::iter::once(&self.workspace)
            .chain(&self.writable)
            .filter_map(|path| std::fs::canonicalize(path).ok())
            .collect()
    }

    /// The hidden paths that exist, canonical.
    fn hidden_paths(&self) -> Vec<PathBuf> {
        let mut hidden: Vec<PathBuf> = self
            .hidden
            .iter()
            .filter_map(|path| std::fs::canonicalize(path).ok())
            .filter(|path| path != Path::new("/"))
            .collect();
        hidden.sort();
        hidden.dedup();
        hidden
    }

    /// Whether the tools keep the network.
    fn network_allowed(&self) -> bool {
        self.mode == SandboxMode::FullAccess
            || (self.mode == SandboxMode::WorkspaceWrite && self.network)
    }
}

/// How a [`Confinement`] confines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// Linux namespaces through `bwrap`.
    Bubblewrap,
    /// Landlock and seccomp, applied by the shim before it executes the program.
    Landlock,
}

impl Mechanism {
    /// Its name in messages (`bubblewrap`, `landlock`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Bubblewrap => "bubblewrap",
            Self::Landlock => "landlock",
        }
    }
}

/// Why the tools cannot be confined.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// No mechanism can confine on this machine; nothing ran.
    #[error(
        "the tools cannot be confined here (sandbox mode `{mode}`): {findings}. Install \
         bubblewrap (`apt install bubblewrap`) and allow unprivileged user namespaces, or use a \
         kernel with Landlock; or run the tools unconfined on purpose with `--sandbox \
         full-access` (`[permissions] sandbox = \"full-access\"`)"
    )]
    Unavailable {
        /// The mode asked for.
        mode: SandboxMode,
        /// What each mechanism answered.
        findings: String,
    },
    /// A path of the options cannot be handed to the mechanism.
    #[error("the path {0} cannot be confined: it is not UTF-8")]
    NotUtf8(PathBuf),
    /// The private temporary directory could not be made.
    #[error("cannot make the tools' private temporary directory: {0}")]
    TempDir(#[source] std::io::Error),
}

/// The tools' confinement: the launcher their programs start under.
///
/// It owns the private temporary directory of the Landlock mechanism: keep it alive as long as
/// the tools it launches.
#[derive(Debug)]
pub struct Confinement {
    mechanism: Mechanism,
    mode: SandboxMode,
    network: bool,
    launcher: Vec<String>,
    _tmp: Option<tempfile::TempDir>,
}

impl Confinement {
    /// The confinement `options` ask for, by the first mechanism that works here (bubblewrap,
    /// then Landlock); `None` for `full-access`.
    ///
    /// # Errors
    ///
    /// [`ConfineError::Unavailable`] when no mechanism works, saying what each answered.
    pub async fn new(options: &ConfinementOptions) -> Result<Option<Self>, ConfineError> {
        if options.mode == SandboxMode::FullAccess {
            return Ok(None);
        }
        let mut findings = Vec::new();
        for mechanism in [Mechanism::Bubblewrap, Mechanism::Landlock] {
            match Self::with_mechanism(options, mechanism).await {
                Ok(confinement) => return Ok(Some(confinement)),
                Err(ConfineError::Unavailable { findings: why, .. }) => findings.push(why),
                Err(error) => return Err(error),
            }
        }
        Err(ConfineError::Unavailable {
            mode: options.mode,
            findings: findings.join("; "),
        })
    }

    /// The confinement `options` ask for, by `mechanism` only (probed first). `options.mode`
    /// must not be `full-access`: that mode is treated as `workspace-write` with the network.
    ///
    /// # Errors
    ///
    /// [`ConfineError::Unavailable`] when the mechanism does not work here.
    pub async fn with_mechanism(
        options: &ConfinementOptions,
        mechanism: Mechanism,
    ) -> Result<Self, ConfineError> {
        let (launcher, tmp) = match mechanism {
            Mechanism::Bubblewrap => (bwrap::launcher(options)?, None),
            Mechanism::Landlock => {
                let tmp = tempfile::Builder::new()
                    .prefix("openmanus-tools-")
                    .tempdir()
                    .map_err(ConfineError::TempDir)?;
                let launcher = shim::launcher(options, tmp.path()).map_err(|why| {
                    ConfineError::Unavailable {
                        mode: options.mode,
                        findings: format!("landlock: {why}"),
                    }
                })?;
                (launcher, Some(tmp))
            }
        };
        probe(&launcher)
            .await
            .map_err(|why| ConfineError::Unavailable {
                mode: options.mode,
                findings: format!("{}: {why}", mechanism.as_str()),
            })?;
        tracing::debug!(mechanism = mechanism.as_str(), mode = %options.mode, "tools confined");
        Ok(Self {
            mechanism,
            mode: options.mode,
            network: options.network_allowed(),
            launcher,
            _tmp: tmp,
        })
    }

    /// The command prefix a confined program starts under (append the program and its
    /// arguments): what `Bash::with_launcher` and `PythonExecute::with_launcher` take.
    #[must_use]
    pub fn launcher(&self) -> Vec<String> {
        self.launcher.clone()
    }

    /// The mechanism that confines.
    #[must_use]
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// The mode it enforces.
    #[must_use]
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Whether the confined programs may use the network.
    #[must_use]
    pub fn network_allowed(&self) -> bool {
        self.network
    }
}

/// Runs `true` under `launcher`: `Ok` when it exits 0, else what went wrong.
async fn probe(launcher: &[String]) -> Result<(), String> {
    let Some((program, args)) = launcher.split_first() else {
        return Err("no launcher".to_owned());
    };
    let mut command = tokio::process::Command::new(program);
    command.args(args).arg("true");
    match agent_process::output_within(program, &mut command, PROBE_LIMIT).await {
        Ok(Some(output)) if output.status.success() => Ok(()),
        Ok(Some(output)) => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let stderr = stderr.trim();
            Err(if stderr.is_empty() {
                format!("the probe ended with {}", output.status)
            } else {
                stderr.lines().last().unwrap_or(stderr).to_owned()
            })
        }
        Ok(None) => Err(format!(
            "the probe gave no answer in {} s",
            PROBE_LIMIT.as_secs()
        )),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("`{program}` is not installed"))
        }
        Err(error) => Err(format!("cannot start `{program}`: {error}")),
    }
}

/// `path` as text, for a launcher's arguments.
fn text(path: &Path) -> Result<String, ConfineError> {
    path.to_str()
        .map(str::to_owned)
        .ok_or_else(|| ConfineError::NotUtf8(path.to_path_buf()))
}
