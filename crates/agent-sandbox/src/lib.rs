//! # agent-sandbox
//!
//! Sandboxes for openmanus-rs: the agent's commands and file operations run confined.
//!
//! - [`Sandbox`] is the async interface: run a command with a timeout (stdout, stderr and the
//!   exit code, every output line kept), read and write files, copy in and out, long-lived named
//!   shell sessions, cleanup. Paths are resolved inside the sandbox workspace; `..` segments and
//!   symbolic links that lead out of it are refused.
//! - [`LocalSandbox`] is the backend on this machine: bubblewrap (`bwrap`) namespaces with the
//!   host filesystem read-only, some host paths hidden, the workspace (a host directory) read-write,
//!   a private `/tmp`, no network unless enabled, `prlimit` limits on memory, CPU time and
//!   processes, and the whole process tree killed on timeout, drop and cleanup.
//!   [`LocalSandbox::probe`] says plainly when the machine cannot run it ([`LocalSandbox::check`]
//!   gives the same findings as data); nothing ever runs unsandboxed silently.
//! - `DockerSandbox` runs the same interface in a container of a Docker engine (the `docker`
//!   cargo feature, on by default; without it `backend = "docker"` is refused by name).
//! - [`LocalSandboxOptions::with_display`] (and `DockerSandboxOptions::with_display`) gives a
//!   sandbox a virtual X display: an Xvfb in the sandbox (in the container, from the image, on
//!   the Docker backend), `DISPLAY` set for its programs, reached from the host through
//!   [`Sandbox::display`] (agent-desktop's `computer_use` drives it; see `docs/desktop.md`).
//! - [`from_settings`] turns the `[sandbox]` section of `config.toml` into one of them (the
//!   backend is chosen here, nowhere else).
//!
//! The threat model is in `docs/sandbox.md`.
//!
//! ```
//! use std::time::Duration;
//! use agent_sandbox::{LocalSandbox, LocalSandboxOptions, Sandbox};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let sandbox = LocalSandbox::new(LocalSandboxOptions::new(dir.path())).await?;
//! sandbox.write_file("hello.txt", b"42\n").await?;
//! let out = sandbox.run("cat hello.txt; exit 3", Some(Duration::from_secs(10))).await?;
//! assert_eq!(out.stdout, "42\n");
//! assert_eq!(out.exit_code, Some(3));
//! assert!(sandbox.run("echo x > /etc/x", None).await?.exit_code != Some(0));
//! assert!(sandbox.read_file("../escape").await.is_err());
//! sandbox.cleanup().await?;
//! # Ok(())
//! # }
//! ```

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;

pub mod confine;
mod display;
#[cfg(feature = "docker")]
mod docker;
#[cfg(feature = "docker")]
mod docker_display;
#[cfg(feature = "docker")]
mod docker_owner;
mod error;
mod host;
mod limits;
mod local;
mod operator;
mod path;
mod process;
mod sessions;
mod settings;
pub mod tools;

pub use confine::{ConfineError, Confinement, ConfinementOptions, Mechanism, shim_main};
pub use display::{
    DEFAULT_SCREEN, DEFAULT_X_SERVER, DISPLAY_NUMBER, DisplayEndpoint, x_server_path,
};
#[cfg(feature = "docker")]
pub use docker::{
    DockerEngine, DockerSandbox, DockerSandboxOptions, connect_docker, docker_engine,
    remove_live_containers_now,
};
pub use error::SandboxError;
pub use limits::parse_memory_limit;
pub use local::{
    LocalSandbox, LocalSandboxOptions, NAMESPACES_FIX, PROBE_LIMIT, Probe, ProbeFailure,
    SANDBOX_PATH,
};
pub use operator::SandboxFileOperator;
pub use settings::{SandboxFeatures, from_settings};

/// What a command run in a sandbox produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// Its standard output (lossy UTF-8), every line kept.
    pub stdout: String,
    /// Its standard error (lossy UTF-8).
    pub stderr: String,
    /// The exit code (128 + the signal when a signal ended it); `None` when it timed out.
    pub exit_code: Option<i32>,
    /// It was killed, with every process it started, at its timeout.
    pub timed_out: bool,
    /// Some output beyond the backend's limit was dropped.
    pub truncated: bool,
}

/// What [`Sandbox::read_session`] took from a shell session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionOutput {
    /// Standard output produced since the last read.
    pub stdout: String,
    /// Standard error produced since the last read.
    pub stderr: String,
    /// The awaited text appeared in the output (always `false` when none was awaited).
    pub matched: bool,
    /// The shell's exit code, once it has exited.
    pub exit_code: Option<i32>,
}

/// A place to run the agent's commands and file operations confined.
///
/// Paths are sandbox paths: relative to the workspace, or absolute under the sandbox's work dir
/// (e.g. `/workspace/a.txt`). Anything that leaves the workspace is refused with
/// [`SandboxError::PathRefused`].
#[async_trait]
pub trait Sandbox: Send + Sync {
    /// Runs `command` with `bash -c` in the workspace. At `timeout` (or the sandbox's default)
    /// the command and every process it started are killed and `timed_out` is set.
    async fn run(
        &self,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<ExecOutput, SandboxError>;

    /// Reads a file of the workspace. The default reads it on the host side of the workspace
    /// (every backend's workspace is a host directory), opened beneath the workspace.
    async fn read_file(&self, path: &str) -> Result<Vec<u8>, SandboxError> {
        host::read(self.workspace(), self.work_dir(), path).await
    }

    /// Writes a file of the workspace, creating its parent directories (default: on the host
    /// side, as [`Sandbox::read_file`]).
    async fn write_file(&self, path: &str, contents: &[u8]) -> Result<(), SandboxError> {
        host::write(self.workspace(), self.work_dir(), path, contents).await
    }

    /// Copies a host file or directory into the workspace at `path`.
    async fn copy_in(&self, host_source: &Path, path: &str) -> Result<(), SandboxError> {
        host::copy_in(self.workspace(), self.work_dir(), host_source, path).await
    }

    /// Copies a file or directory of the workspace out to the host (symbolic links refused).
    async fn copy_out(&self, path: &str, host_target: &Path) -> Result<(), SandboxError> {
        host::copy_out(self.workspace(), self.work_dir(), path, host_target).await
    }

    /// Starts a long-lived `bash` named `name`, reading commands from its input.
    async fn start_session(&self, name: &str) -> Result<(), SandboxError>;

    /// Sends `input` (e.g. a command and a newline) to the session's shell.
    async fn send_to_session(&self, name: &str, input: &str) -> Result<(), SandboxError>;

    /// Takes the session's output so far. With `until`, first waits (at most `timeout`) for that
    /// text to appear on its standard output or for the shell to exit.
    async fn read_session(
        &self,
        name: &str,
        until: Option<&str>,
        timeout: Duration,
    ) -> Result<SessionOutput, SandboxError>;

    /// Kills the session's shell and everything it started.
    async fn kill_session(&self, name: &str) -> Result<(), SandboxError>;

    /// The names of the running sessions.
    async fn list_sessions(&self) -> Vec<String>;

    /// Kills every session; the sandbox refuses further commands. The workspace stays.
    async fn cleanup(&self) -> Result<(), SandboxError>;

    /// The host directory that is the sandbox's workspace.
    fn workspace(&self) -> &Path;

    /// Where the workspace appears inside the sandbox.
    fn work_dir(&self) -> &Path;

    /// Whether programs in the sandbox may use the network.
    fn network_enabled(&self) -> bool;

    /// The command prefix that runs a program inside the sandbox (append the program and its
    /// arguments; spawn it as the leader of its own process group). This is what
    /// `Bash::with_launcher` and `PythonExecute::with_launcher` of agent-tools take.
    fn launcher(&self) -> Vec<String>;

    /// The prefix a browser is started under inside the sandbox, when the backend can run one
    /// there with its DevTools endpoint reachable from this process (default: it cannot).
    fn browser_launcher(&self) -> Option<Vec<String>> {
        None
    }

    /// Where the host reaches the sandbox's virtual display (an X server whose programs run in
    /// the sandbox, `DISPLAY` set for them), when the sandbox was built with one (default: it
    /// has none).
    fn display(&self) -> Option<DisplayEndpoint> {
        None
    }

    /// The host path of the sandbox path `path`, refused when it leaves the workspace.
    ///
    /// # Errors
    ///
    /// [`SandboxError::PathRefused`].
    fn host_path(&self, path: &str) -> Result<std::path::PathBuf, SandboxError> {
        crate::path::resolve(self.workspace(), self.work_dir(), path)
    }
}

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
