//! The local backend: bubblewrap (`bwrap`) namespaces plus `prlimit` resource limits.
//!
//! Why one file past 700 lines (its tests included): the `bwrap` argument list, the probe
//! that checks it works here and the `Sandbox` methods that run under it are one confinement,
//! changed together; the display, the process pumps and the shell sessions are already apart.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use agent_process::{ProcessGroup, Spawned};
use async_trait::async_trait;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, Command};
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout_at};
use tracing::{debug, info, warn};

use crate::display::{DISPLAY_NUMBER, DisplayEndpoint, SocketDir, XServer, start_xvfb};
use crate::process::{Shared, pump};
use crate::sessions::ShellSessions;
use crate::{ExecOutput, Sandbox, SandboxError, SessionOutput, parse_memory_limit};

/// The `PATH` inside the sandbox (the host's own `PATH` may point into hidden directories).
pub const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// How to fix or disable the sandbox, appended to every probe failure.
const DISABLE_HINT: &str = "to run the tools without a sandbox instead, set `use_sandbox = false` under `[sandbox]` in the configuration (nothing is ever run unsandboxed silently)";

/// How long the pipes may stay open after the sandbox ended (nothing inside can outlive it).
const DRAIN: Duration = Duration::from_secs(2);

/// Settings of a [`LocalSandbox`].
#[derive(Debug, Clone, PartialEq)]
pub struct LocalSandboxOptions {
    /// The host directory that is the sandbox's read-write workspace (created if missing).
    pub workspace: PathBuf,
    /// Where the workspace appears inside the sandbox (absolute). Default `/workspace`.
    pub work_dir: PathBuf,
    /// Address-space limit of every sandboxed process, in bytes (`RLIMIT_AS`). Default 512 MiB.
    pub memory_limit: Option<u64>,
    /// CPUs; with the timeout it gives each process's CPU-time limit (`RLIMIT_CPU` =
    /// `ceil(timeout × cpu_limit)` seconds). Default 1.0.
    pub cpu_limit: Option<f64>,
    /// Processes of the sandbox's user (`RLIMIT_NPROC`, counted per user id on the host).
    /// Default 1024.
    pub max_processes: Option<u64>,
    /// Default timeout of [`Sandbox::run`]. Default 300 s.
    pub timeout: Duration,
    /// Share the host's network. Default `false`: a private network namespace with only a
    /// loopback of its own.
    pub network_enabled: bool,
    /// Host paths hidden inside the sandbox: directories become empty tmpfs, files read as empty.
    /// Default: `/root`, `/home`, `/run`, `/etc/shadow`, `/etc/gshadow`.
    pub hidden_paths: Vec<PathBuf>,
    /// Extra environment variables (the host environment is never passed in).
    pub env: Vec<(String, String)>,
    /// Bytes of stdout and of stderr kept per command (the rest is dropped). Default 10 MiB.
    pub output_limit: usize,
    /// A virtual display of this size (pixels) for the sandbox's programs: an Xvfb started with
    /// the sandbox, `DISPLAY=:0` in every instance (see [`LocalSandboxOptions::with_display`]).
    /// Default `None`: no display, no `DISPLAY`.
    pub display: Option<(u32, u32)>,
    /// The display's X server: a program name looked up on [`SANDBOX_PATH`] or a path (default
    /// [`crate::DEFAULT_X_SERVER`], `Xvfb`; `[sandbox] xvfb`).
    pub x_server: String,
}

impl LocalSandboxOptions {
    /// The defaults, with `workspace` as the workspace.
    #[must_use]
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            work_dir: PathBuf::from("/workspace"),
            memory_limit: Some(512 << 20),
            cpu_limit: Some(1.0),
            max_processes: Some(1024),
            timeout: Duration::from_secs(300),
            network_enabled: false,
            hidden_paths: ["/root", "/home", "/run", "/etc/shadow", "/etc/gshadow"]
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            env: Vec::new(),
            output_limit: 10 << 20,
            display: None,
            x_server: crate::DEFAULT_X_SERVER.to_owned(),
        }
    }

    /// Gives the sandbox a virtual display ([`crate::DEFAULT_SCREEN`], 1024×768): an Xvfb
    /// started by [`LocalSandbox::new`] in a sandbox instance of its own (without the per-command
    /// limits), its socket in a private host directory that every instance sees as
    /// `/tmp/.X11-unix`, and `DISPLAY=:0` set in every instance, so a program started by a
    /// command or a shell session draws on it. [`Sandbox::display`] says where the host reaches
    /// it; [`Sandbox::cleanup`] and drop stop it.
    #[must_use]
    pub fn with_display(mut self) -> Self {
        self.display = Some(crate::DEFAULT_SCREEN);
        self
    }

    /// Makes the workspace appear inside the sandbox at its own host path (the work dir is the
    /// workspace), so that paths are the same inside and outside: what the agent's tools need
    /// when they run in the sandbox (`bash`, `python_execute` and `str_replace_editor` then see
    /// the same absolute paths). `workspace` should be absolute and canonical (no symbolic link
    /// on the way).
    #[must_use]
    pub fn mirrored(mut self) -> Self {
        self.work_dir.clone_from(&self.workspace);
        self
    }

    /// The options from the `[sandbox]` settings (`work_dir`, `memory_limit` like `"512m"`,
    /// `cpu_limit`, `timeout` in seconds, `network_enabled`); other fields at their defaults.
    ///
    /// # Errors
    /// [`SandboxError::InvalidSetting`] for an unparsable memory limit, a non-positive CPU
    /// limit, a zero timeout or a relative work dir.
    pub fn from_settings(
        workspace: impl Into<PathBuf>,
        work_dir: &str,
        memory_limit: &str,
        cpu_limit: f64,
        timeout_secs: u64,
        network_enabled: bool,
    ) -> Result<Self, SandboxError> {
        if !(cpu_limit.is_finite() && cpu_limit > 0.0) {
            return Err(SandboxError::InvalidSetting(format!(
                "cpu_limit must be a positive number, not {cpu_limit}"
            )));
        }
        if timeout_secs == 0 {
            return Err(SandboxError::InvalidSetting(
                "timeout must be at least 1 second".into(),
            ));
        }
        Ok(Self {
            work_dir: PathBuf::from(work_dir),
            memory_limit: Some(parse_memory_limit(memory_limit)?),
            cpu_limit: Some(cpu_limit),
            timeout: Duration::from_secs(timeout_secs),
            network_enabled,
            ..Self::new(workspace)
        })
    }
}

/// What [`LocalSandbox::probe`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// `bwrap --version`, e.g. `bubblewrap 0.8.0`.
    pub bwrap_version: String,
}

/// How long each program of the probe may take ([`LocalSandbox::probe`]): they answer in
/// milliseconds; a program that hangs must not hang the agent's start.
pub const PROBE_LIMIT: Duration = Duration::from_secs(60);

/// What to do when `bwrap` cannot create its namespaces: allow unprivileged user namespaces, or
/// run the container with a profile that permits them.
pub const NAMESPACES_FIX: &str = "allow unprivileged user namespaces (`sysctl -w kernel.unprivileged_userns_clone=1`, `sysctl -w user.max_user_namespaces=15000`, on Ubuntu 24.04+ `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`), or in a container run it with a seccomp/AppArmor profile that permits `unshare`/`mount` (e.g. `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`, or `--privileged`)";

/// Why [`LocalSandbox::check`] found that sandboxes cannot run on this machine. Its text says
/// what is missing or forbidden and how to fix it (without [`LocalSandbox::probe`]'s hint on
/// disabling the sandbox).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeFailure {
    /// `bwrap` cannot be started: not installed (not on `PATH`), or not executable.
    #[error(
        "bubblewrap (`bwrap`) cannot be started ({error}); install it (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install bubblewrap`; `openmanus doctor` shows what this machine has)"
    )]
    BwrapMissing {
        /// Why it could not be started.
        error: String,
    },
    /// `prlimit` (util-linux), which applies the limits, cannot be started.
    #[error("`prlimit` (util-linux) cannot be started ({error}); install util-linux")]
    PrlimitMissing {
        /// Why it could not be started.
        error: String,
    },
    /// `bwrap` runs, but the kernel or the container refuses it the user, mount or PID
    /// namespaces it creates.
    #[error(
        "{bwrap_version} cannot create its namespaces here ({stderr}). The kernel or the container forbids user/mount/PID namespaces: {NAMESPACES_FIX}"
    )]
    NamespacesRefused {
        /// `bwrap --version`.
        bwrap_version: String,
        /// What `bwrap` said.
        stderr: String,
    },
    /// A program of the probe did not finish within its limit (it was killed).
    #[error("`{program}` did not answer within {} s", limit.as_secs())]
    NoAnswer {
        /// The program: `bwrap` or `prlimit`.
        program: String,
        /// The limit it had.
        limit: Duration,
    },
    /// Running the trial `bwrap` failed for another reason.
    #[error("running bwrap failed: {error}")]
    Trial {
        /// What failed.
        error: String,
    },
}

/// A sandbox on this machine: every command runs under `bwrap` in fresh user, mount, PID, IPC,
/// UTS, cgroup and (unless enabled) network namespaces, with all capabilities dropped, the host
/// filesystem read-only, some host paths hidden, a private `/tmp` and `/dev`, the workspace
/// read-write, no host environment, and `prlimit` resource limits.
#[derive(Debug)]
pub struct LocalSandbox {
    options: LocalSandboxOptions,
    /// The canonical host workspace.
    workspace: PathBuf,
    /// The `bwrap` arguments before the command.
    bwrap_args: Vec<String>,
    /// `prlimit` and its arguments, ending with `--`.
    limit_args: Vec<String>,
    sessions: ShellSessions<Session>,
    /// The display's X server (dropped, so killed, before its socket directory is removed).
    x_server: std::sync::Mutex<Option<XServer>>,
    /// Where the display is reached, while it runs.
    display: Option<DisplayEndpoint>,
    /// The private host directory of the display's socket.
    _socket_dir: Option<SocketDir>,
}

impl LocalSandbox {
    /// Checks that sandboxes can run here: `bwrap` and `prlimit` exist and `bwrap` can create
    /// its namespaces. Call it at start-up. It is [`LocalSandbox::check`] with
    /// [`PROBE_LIMIT`], its failure said as an error that also tells how to disable the sandbox.
    ///
    /// # Errors
    /// [`SandboxError::Unavailable`] saying what is missing or forbidden, and how to fix it or
    /// disable the sandbox.
    pub async fn probe() -> Result<Probe, SandboxError> {
        Self::check(PROBE_LIMIT)
            .await
            .map_err(|failure| SandboxError::Unavailable(format!("{failure}; {DISABLE_HINT}")))
    }

    /// The probe's findings, as data: `bwrap --version` and `prlimit --version` answer, and
    /// `bwrap` runs `prlimit -- true` in fresh user, mount, PID, IPC, UTS, cgroup and network
    /// namespaces with every capability dropped (what each sandbox does). Each program may take
    /// at most `limit`; one that hangs is killed. `bwrap` and `prlimit` are looked up on `PATH`.
    /// (`openmanus doctor` reports it.)
    ///
    /// # Errors
    /// The [`ProbeFailure`]: what is missing or forbidden.
    pub async fn check(limit: Duration) -> Result<Probe, ProbeFailure> {
        let version = bounded(
            "bwrap",
            Command::new("bwrap").arg("--version"),
            limit,
            |error| ProbeFailure::BwrapMissing { error },
        )
        .await?;
        let bwrap_version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
        bounded(
            "prlimit",
            Command::new("prlimit").arg("--version"),
            limit,
            |error| ProbeFailure::PrlimitMissing { error },
        )
        .await?;
        let mut trial = Command::new("bwrap");
        trial
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .args([
                "--unshare-all",
                "--unshare-user",
                "--cap-drop",
                "ALL",
                "--die-with-parent",
            ])
            .args(["--", "prlimit", "--as=268435456", "--", "true"]);
        let trial = bounded("bwrap", &mut trial, limit, |error| ProbeFailure::Trial {
            error,
        })
        .await?;
        if !trial.status.success() {
            return Err(ProbeFailure::NamespacesRefused {
                bwrap_version,
                stderr: String::from_utf8_lossy(&trial.stderr).trim().to_owned(),
            });
        }
        Ok(Probe { bwrap_version })
    }

    /// A sandbox with `options`: probes the machine, creates the workspace directory, and runs
    /// one trial command with the exact configuration so that a bad setting fails here.
    ///
    /// # Errors
    /// [`SandboxError::Unavailable`] from the probe or the trial, [`SandboxError::InvalidSetting`]
    /// for a bad option, [`SandboxError::Io`] when the workspace cannot be created.
    pub async fn new(options: LocalSandboxOptions) -> Result<Self, SandboxError> {
        let probe = Self::probe().await?;
        if !options.work_dir.is_absolute()
            || options
                .work_dir
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(SandboxError::InvalidSetting(format!(
                "work_dir must be an absolute path without `..`, not {}",
                options.work_dir.display()
            )));
        }
        if options.work_dir == Path::new("/") {
            return Err(SandboxError::InvalidSetting(
                "work_dir cannot be `/`".into(),
            ));
        }
        tokio::fs::create_dir_all(&options.workspace)
            .await
            .map_err(|e| {
                SandboxError::io(
                    format!("creating the workspace {}", options.workspace.display()),
                    e,
                )
            })?;
        let workspace = tokio::fs::canonicalize(&options.workspace)
            .await
            .map_err(|e| {
                SandboxError::io(
                    format!("resolving the workspace {}", options.workspace.display()),
                    e,
                )
            })?;
        let socket_dir = options.display.map(|_| SocketDir::create()).transpose()?;
        let x11_dir = socket_dir.as_ref().map(SocketDir::x11_dir);
        let bwrap_args = bwrap_args(&options, &workspace, x11_dir.as_deref())?;
        let limit_args = limit_args(&options);
        let mut sandbox = Self {
            options,
            workspace,
            bwrap_args,
            limit_args,
            sessions: ShellSessions::new(),
            x_server: std::sync::Mutex::new(None),
            display: None,
            _socket_dir: socket_dir,
        };
        let trial = sandbox.run("true", Some(Duration::from_secs(30))).await?;
        if trial.exit_code != Some(0) {
            return Err(SandboxError::Unavailable(format!(
                "a trial command in the configured sandbox failed ({}); check `work_dir` and the hidden paths; {DISABLE_HINT}",
                trial.stderr.trim()
            )));
        }
        if let (Some(size), Some(x11_dir)) = (sandbox.options.display, x11_dir) {
            let server = start_xvfb(
                &sandbox.desktop_launcher(),
                &sandbox.options.x_server,
                &x11_dir,
                size,
            )
            .await?;
            sandbox.display = Some(server.endpoint.clone());
            *sandbox
                .x_server
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(server);
        }
        info!(version = %probe.bwrap_version, workspace = %sandbox.workspace.display(), "sandbox ready");
        Ok(sandbox)
    }

    /// [`LocalSandbox::new`] with [`LocalSandboxOptions::from_settings`].
    ///
    /// # Errors
    /// As those two.
    pub async fn from_settings(
        workspace: impl Into<PathBuf>,
        work_dir: &str,
        memory_limit: &str,
        cpu_limit: f64,
        timeout_secs: u64,
        network_enabled: bool,
    ) -> Result<Self, SandboxError> {
        Self::new(LocalSandboxOptions::from_settings(
            workspace,
            work_dir,
            memory_limit,
            cpu_limit,
            timeout_secs,
            network_enabled,
        )?)
        .await
    }

    /// The options the sandbox was built with.
    #[must_use]
    pub fn options(&self) -> &LocalSandboxOptions {
        &self.options
    }

    /// The host directory of the workspace (canonical).
    #[must_use]
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The command line that runs a program in this sandbox: `bwrap`, its arguments (the same
    /// namespaces, binds, hidden paths, environment and network setting as [`Sandbox::run`]),
    /// `--`, then `prlimit` with the limits, ending with `--`. Append the program and its
    /// arguments, e.g. `bash --noprofile --norc`, and spawn it as the leader of its own process
    /// group: killing that group kills `bwrap` and so everything in the sandbox (the PID
    /// namespace dies with its init). This is what `Bash::with_launcher` and
    /// `PythonExecute::with_launcher` of agent-tools take.
    ///
    /// The program starts in the work dir with a fresh private `/tmp`, whatever the spawner's
    /// current directory; the host environment does not reach it. Each launch is a sandbox
    /// instance of its own: [`Sandbox::cleanup`] does not stop it, killing its group does.
    #[must_use]
    pub fn launcher(&self) -> Vec<String> {
        let mut argv = Vec::with_capacity(self.bwrap_args.len() + self.limit_args.len() + 2);
        argv.push("bwrap".to_owned());
        argv.extend(self.bwrap_args.iter().cloned());
        argv.push("--".to_owned());
        argv.extend(self.limit_args.iter().cloned());
        argv
    }

    /// The command line that runs a browser in this sandbox (`sandbox_browser`): like
    /// [`LocalSandbox::launcher`] but always on the host's network stack, so the agent can reach
    /// the browser's DevTools endpoint on loopback, with `HOME` in the private `/tmp` (the
    /// browser's caches stay out of the workspace) and without the `prlimit` limits (a browser
    /// reserves far more virtual memory than it uses, and lives as long as the session, so the
    /// per-command CPU budget does not fit it). Without `network_enabled`, keep the browser off
    /// the network with its own flags (the `sandbox_browser` tool does).
    #[must_use]
    pub fn browser_launcher(&self) -> Vec<String> {
        let mut argv = vec!["bwrap".to_owned()];
        argv.extend(self.bwrap_args.iter().cloned());
        if !self.options.network_enabled {
            argv.insert(3, "--share-net".to_owned());
        }
        argv.extend(["--setenv", "HOME", "/tmp", "--"].map(str::to_owned));
        argv
    }

    /// The command line the display's X server runs under: like [`LocalSandbox::launcher`]
    /// (the same namespaces, binds and network setting) but without the per-command `prlimit`
    /// limits, since the server lives as long as the sandbox.
    fn desktop_launcher(&self) -> Vec<String> {
        let mut argv = vec!["bwrap".to_owned()];
        argv.extend(self.bwrap_args.iter().cloned());
        argv.push("--".to_owned());
        argv
    }

    /// Where the host reaches the sandbox's display, when it was built with one.
    #[must_use]
    pub fn display(&self) -> Option<&DisplayEndpoint> {
        self.display.as_ref()
    }

    /// Whether programs in this sandbox may use the network.
    #[must_use]
    pub fn network_enabled(&self) -> bool {
        self.options.network_enabled
    }

    /// The work dir: where the workspace appears inside the sandbox.
    #[must_use]
    pub fn work_dir(&self) -> &Path {
        &self.options.work_dir
    }

    /// A `bwrap` command running `program args` in the sandbox, in its own process group.
    fn command(&self, program: &[&str]) -> Command {
        let mut command = Command::new("bwrap");
        command
            .args(&self.bwrap_args)
            .arg("--")
            .args(&self.limit_args)
            .args(program)
            .env_clear()
            .env("PATH", SANDBOX_PATH)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }
}

/// Runs `command` (`program ...`) for the probe: its output; [`ProbeFailure::NoAnswer`] when
/// it did not finish within `limit`, `cannot_start` with the error when it could not run.
async fn bounded(
    program: &str,
    command: &mut Command,
    limit: Duration,
    cannot_start: impl FnOnce(String) -> ProbeFailure,
) -> Result<std::process::Output, ProbeFailure> {
    match agent_process::output_within(program, command, limit).await {
        Ok(Some(output)) => Ok(output),
        Ok(None) => Err(ProbeFailure::NoAnswer {
            program: program.to_owned(),
            limit,
        }),
        Err(error) => Err(cannot_start(error.to_string())),
    }
}

/// The `bwrap` arguments: namespaces, mounts, environment.
fn bwrap_args(
    options: &LocalSandboxOptions,
    workspace: &Path,
    x11_dir: Option<&Path>,
) -> Result<Vec<String>, SandboxError> {
    let mut args: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| args.extend(items.iter().map(|s| (*s).to_owned()));
    push(&["--unshare-all", "--unshare-user"]);
    if options.network_enabled {
        push(&["--share-net"]);
    }
    push(&[
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
    ]);
    // The root is bwrap's own tmpfs: bind the host's top-level entries read-only one by one, so
    // that the work dir can be a new top-level directory; remounted read-only at the end.
    let top_of_work_dir = options
        .work_dir
        .components()
        .nth(1)
        .map(|c| c.as_os_str().to_owned());
    let work_dir_is_top = options.work_dir.components().count() == 2;
    let entries = std::fs::read_dir("/").map_err(|e| SandboxError::io("listing /", e))?;
    let mut names: Vec<_> = entries.filter_map(Result::ok).collect();
    names.sort_by_key(std::fs::DirEntry::file_name);
    for entry in names {
        let name = entry.file_name();
        if ["proc", "dev", "tmp", "sys"]
            .iter()
            .any(|skip| name == *skip)
            || (work_dir_is_top && Some(&name) == top_of_work_dir.as_ref())
        {
            continue;
        }
        let host = Path::new("/").join(&name);
        let host_text = text(&host)?;
        let is_link = entry.file_type().map(|t| t.is_symlink()).unwrap_or(false);
        if is_link {
            let target = std::fs::read_link(&host)
                .map_err(|e| SandboxError::io(format!("reading the link {host_text}"), e))?;
            let target = text(&target)?;
            push(&["--symlink", &target, &host_text]);
        } else {
            push(&["--ro-bind-try", &host_text, &host_text]);
        }
    }
    push(&["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]);
    if let Some(x11_dir) = x11_dir {
        push(&["--bind", &text(x11_dir)?, "/tmp/.X11-unix"]);
    }
    for hidden in &options.hidden_paths {
        let Ok(real) = std::fs::canonicalize(hidden) else {
            continue;
        };
        let real_text = text(&real)?;
        if real.is_dir() {
            push(&["--tmpfs", &real_text]);
        } else {
            push(&["--ro-bind", "/dev/null", &real_text]);
        }
    }
    let work_dir = text(&options.work_dir)?;
    push(&["--bind", &text(workspace)?, &work_dir, "--chdir", &work_dir]);
    push(&["--remount-ro", "/", "--clearenv"]);
    let mut env = vec![
        ("PATH".to_owned(), SANDBOX_PATH.to_owned()),
        ("HOME".to_owned(), work_dir.clone()),
        ("TMPDIR".to_owned(), "/tmp".to_owned()),
        ("LANG".to_owned(), "C.UTF-8".to_owned()),
        ("TERM".to_owned(), "dumb".to_owned()),
        ("PYTHONUNBUFFERED".to_owned(), "1".to_owned()),
    ];
    if x11_dir.is_some() {
        env.push(("DISPLAY".to_owned(), format!(":{DISPLAY_NUMBER}")));
    }
    env.extend(options.env.iter().cloned());
    for (key, value) in env {
        push(&["--setenv", &key, &value]);
    }
    Ok(args)
}

/// `prlimit --as=… --nproc=… --cpu=… --`.
fn limit_args(options: &LocalSandboxOptions) -> Vec<String> {
    let mut args = vec!["prlimit".to_owned()];
    if let Some(bytes) = options.memory_limit {
        args.push(format!("--as={bytes}"));
    }
    if let Some(processes) = options.max_processes {
        args.push(format!("--nproc={processes}"));
    }
    if let Some(cpus) = options.cpu_limit {
        let seconds = (options.timeout.as_secs_f64() * cpus).ceil().max(1.0);
        // Saturating float-to-int conversion; the value is positive and finite here.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let seconds = seconds as u64;
        args.push(format!("--cpu={seconds}"));
    }
    args.push("--".to_owned());
    args
}

fn text(path: &Path) -> Result<String, SandboxError> {
    path.to_str().map(str::to_owned).ok_or_else(|| {
        SandboxError::InvalidSetting(format!("the path {} is not UTF-8", path.display()))
    })
}

/// A started sandbox: its process group (`bwrap`'s), its stdin if piped, the buffers of stdout
/// and stderr, the pump tasks.
type Started = (
    ProcessGroup,
    Option<ChildStdin>,
    Arc<Shared>,
    Arc<Shared>,
    Vec<JoinHandle<()>>,
);

/// Spawns `command` in a supervised process group of its own: killing that group kills `bwrap`,
/// and so the whole sandbox (its PID-namespace init dies with it, `--die-with-parent`, and the
/// kernel kills every process left in a PID namespace whose init died, `setsid` ones included).
/// Returns the group and the pumps of stdout and stderr. Sessions (`keep_tail`) keep the newest
/// output over the limit, commands the first.
fn spawn(mut command: Command, limit: usize, keep_tail: bool) -> Result<Started, SandboxError> {
    let Spawned {
        group,
        stdin,
        stdout,
        stderr,
    } = ProcessGroup::spawn("bwrap", &mut command)
        .map_err(|e| SandboxError::io("starting bwrap", e))?;
    let (Some(stdout), Some(stderr)) = (stdout, stderr) else {
        return Err(SandboxError::io(
            "starting bwrap",
            std::io::Error::other("its pipes are missing"),
        ));
    };
    let (out, err) = if keep_tail {
        (Shared::tail(), Shared::tail())
    } else {
        (Shared::new(), Shared::new())
    };
    let tasks = vec![
        tokio::spawn(pump(stdout, Arc::clone(&out), limit)),
        tokio::spawn(pump(stderr, Arc::clone(&err), limit)),
    ];
    Ok((group, stdin, out, err, tasks))
}

/// The exit code of a status: the code, or 128 + the signal.
fn code_of(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

/// A long-lived `bash` in its own sandbox instance.
#[derive(Debug)]
struct Session {
    group: ProcessGroup,
    stdin: Option<ChildStdin>,
    stdout: Arc<Shared>,
    stderr: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Session {
    fn exit_code(&self) -> Option<i32> {
        self.group.exit_status().map(code_of)
    }

    async fn kill(mut self) {
        self.stdin = None;
        if !self.group.has_exited() {
            self.group.kill();
            if self.group.wait().await.is_none() {
                warn!("waiting for a killed session failed");
            }
        }
        for task in self.tasks {
            task.abort();
        }
    }
}

#[async_trait]
impl Sandbox for LocalSandbox {
    async fn run(
        &self,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<ExecOutput, SandboxError> {
        self.sessions.check_open().await?;
        let limit = timeout.unwrap_or(self.options.timeout);
        let deadline = Instant::now() + limit;
        let bwrap = self.command(&["bash", "-c", command]);
        let mut bwrap = bwrap;
        bwrap.stdin(Stdio::null());
        let (group, _, out, err, tasks) = spawn(bwrap, self.options.output_limit, false)?;
        debug!(command, "sandboxed command started");
        let waiting_failed = || {
            SandboxError::io(
                "waiting for bwrap",
                std::io::Error::other("bwrap could not be reaped"),
            )
        };
        let status = match timeout_at(deadline, group.wait()).await {
            Ok(status) => Some(status.ok_or_else(waiting_failed)?),
            Err(_) => {
                warn!(
                    command,
                    ?limit,
                    "sandboxed command timed out; killing its sandbox"
                );
                group.kill();
                group.wait().await.ok_or_else(waiting_failed)?;
                None
            }
        };
        // Nothing outlives the sandbox's PID namespace, so the pipes close at once; bounded anyway.
        let drain = Instant::now() + DRAIN;
        for task in tasks {
            if timeout_at(drain, task).await.is_err() {
                warn!("a sandbox pipe stayed open after the sandbox ended");
            }
        }
        let (stdout, out_cut) = out.take();
        let (stderr, err_cut) = err.take();
        Ok(ExecOutput {
            stdout,
            stderr,
            exit_code: status.map(code_of),
            timed_out: status.is_none(),
            truncated: out_cut || err_cut,
        })
    }

    async fn start_session(&self, name: &str) -> Result<(), SandboxError> {
        self.sessions
            .start(name, || async {
                let mut command = self.command(&["bash", "--noprofile", "--norc"]);
                command.stdin(Stdio::piped());
                let (group, stdin, stdout, stderr, tasks) =
                    spawn(command, self.options.output_limit, true)?;
                debug!(name, "sandboxed session started");
                Ok(Session {
                    group,
                    stdin,
                    stdout,
                    stderr,
                    tasks,
                })
            })
            .await
    }

    async fn send_to_session(&self, name: &str, input: &str) -> Result<(), SandboxError> {
        let mut session = self.sessions.get(name).await?;
        let stdin = session.stdin.as_mut().ok_or_else(|| {
            SandboxError::io(
                "writing to the session",
                std::io::Error::other("its input is closed"),
            )
        })?;
        stdin
            .write_all(input.as_bytes())
            .await
            .map_err(|e| SandboxError::io(format!("writing to the session {name:?}"), e))?;
        stdin
            .flush()
            .await
            .map_err(|e| SandboxError::io(format!("writing to the session {name:?}"), e))
    }

    async fn read_session(
        &self,
        name: &str,
        until: Option<&str>,
        timeout: Duration,
    ) -> Result<SessionOutput, SandboxError> {
        let deadline = Instant::now() + timeout;
        let (stdout, stderr) = {
            let session = self.sessions.get(name).await?;
            (Arc::clone(&session.stdout), Arc::clone(&session.stderr))
        };
        let matched = match until {
            Some(needle) => stdout.wait_for(needle, deadline).await,
            None => false,
        };
        let exit_code = self.sessions.peek(name, Session::exit_code).await.flatten();
        let (out, _) = stdout.take();
        let (err, _) = stderr.take();
        Ok(SessionOutput {
            stdout: out,
            stderr: err,
            matched,
            exit_code,
        })
    }

    async fn kill_session(&self, name: &str) -> Result<(), SandboxError> {
        let session = self.sessions.remove(name).await?;
        session.kill().await;
        Ok(())
    }

    async fn list_sessions(&self) -> Vec<String> {
        self.sessions.names().await
    }

    async fn cleanup(&self) -> Result<(), SandboxError> {
        for session in self.sessions.close().await {
            session.kill().await;
        }
        let server = self
            .x_server
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(server) = server {
            server.group.shutdown(Duration::from_secs(2)).await;
            debug!("the sandbox's display stopped");
        }
        Ok(())
    }

    fn workspace(&self) -> &Path {
        LocalSandbox::workspace(self)
    }

    fn work_dir(&self) -> &Path {
        LocalSandbox::work_dir(self)
    }

    fn network_enabled(&self) -> bool {
        LocalSandbox::network_enabled(self)
    }

    fn launcher(&self) -> Vec<String> {
        LocalSandbox::launcher(self)
    }

    fn browser_launcher(&self) -> Option<Vec<String>> {
        Some(LocalSandbox::browser_launcher(self))
    }

    fn display(&self) -> Option<DisplayEndpoint> {
        LocalSandbox::display(self).cloned()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn a_probe_program_that_hangs_is_no_answer_and_a_missing_one_cannot_start() {
        let limit = Duration::from_secs(3);
        let mut hangs = Command::new("sh");
        hangs.args(["-c", "exec sleep 300"]);
        let failure = bounded("bwrap", &mut hangs, limit, |error| {
            ProbeFailure::BwrapMissing { error }
        })
        .await
        .unwrap_err();
        assert_eq!(
            failure,
            ProbeFailure::NoAnswer {
                program: "bwrap".into(),
                limit
            }
        );
        assert_eq!(failure.to_string(), "`bwrap` did not answer within 3 s");
        let mut missing = Command::new("openmanus-no-such-bwrap");
        let failure = bounded("bwrap", &mut missing, limit, |error| {
            ProbeFailure::BwrapMissing { error }
        })
        .await
        .unwrap_err();
        assert!(
            matches!(&failure, ProbeFailure::BwrapMissing { error } if error.contains("No such file")),
            "{failure:?}"
        );
        let text = failure.to_string();
        assert!(text.contains("apt-get install bubblewrap"), "{text}");
        assert!(text.contains("`openmanus doctor`"), "{text}");
    }

    #[tokio::test]
    async fn a_probe_program_that_answers_gives_its_output() {
        let mut answers = Command::new("sh");
        answers.args(["-c", "echo bubblewrap 0.8.0"]);
        let output = bounded("bwrap", &mut answers, Duration::from_secs(60), |error| {
            ProbeFailure::BwrapMissing { error }
        })
        .await
        .unwrap();
        assert_eq!(output.stdout, b"bubblewrap 0.8.0\n");
    }

    #[test]
    fn refused_namespaces_say_how_to_allow_them() {
        let failure = ProbeFailure::NamespacesRefused {
            bwrap_version: "bubblewrap 0.8.0".into(),
            stderr: "bwrap: setting up uid map: Permission denied".into(),
        };
        let text = failure.to_string();
        assert!(
            text.starts_with("bubblewrap 0.8.0 cannot create its namespaces here (bwrap: setting up uid map: Permission denied)"),
            "{text}"
        );
        assert!(text.ends_with(NAMESPACES_FIX), "{text}");
    }
}
