//! The Docker backend: one container per sandbox through the Docker Engine API (bollard), with
//! OpenManus's settings — image, work dir, memory and CPU limits, network off unless enabled.
//! The workspace is a host directory bind-mounted at the work dir, so files are read and
//! written on the host side with the same path checks as the local backend.
//!
//! Why one file past 700 lines (its tests included): the container's creation, its exec calls
//! and the `Sandbox` methods share the one Engine API client and container id; the display in a
//! container is already apart (`docker_display.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{RemoveContainerOptions, StartContainerOptions};
use futures::StreamExt;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout_at};
use tracing::{debug, warn};

use crate::display::{DISPLAY_NUMBER, DisplayEndpoint, SocketDir};
use crate::docker_display;
use crate::docker_owner;
use crate::process::Shared;
use crate::sessions::ShellSessions;
use crate::{ExecOutput, Sandbox, SandboxError, SessionOutput};

/// How long the engine may take to record an exec's process id once the process runs.
const PID_WAIT: Duration = Duration::from_secs(10);

/// How a [`DockerSandbox`] is set up (`[sandbox]` with `backend = "docker"`).
#[derive(Debug, Clone)]
pub struct DockerSandboxOptions {
    /// The host directory mounted read-write at `work_dir`.
    pub workspace: PathBuf,
    /// The image (default `python:3.12-slim`); it must be present or pullable.
    pub image: String,
    /// Where the workspace appears in the container (default `/workspace`).
    pub work_dir: PathBuf,
    /// Memory limit in bytes.
    pub memory_limit: Option<u64>,
    /// CPUs (e.g. 1.0).
    pub cpu_limit: Option<f64>,
    /// Default command timeout.
    pub timeout: Duration,
    /// Give the container a network (default: none at all).
    pub network_enabled: bool,
    /// The shell commands run with (`bash`, or `sh` for images without bash).
    pub shell: String,
    /// At most this many bytes of each output stream are kept.
    pub output_limit: usize,
    /// The engine's address (`unix:///var/run/docker.sock`, `tcp://host:2375`); `None`: the
    /// `DOCKER_HOST` environment variable, else the local socket.
    pub docker_host: Option<String>,
    /// A virtual display of this size (pixels): the image's X server started in the container,
    /// its socket bind-mounted from a private host directory at `/tmp/.X11-unix`, `DISPLAY=:0`
    /// for every command (see [`DockerSandboxOptions::with_display`]). Default `None`.
    pub display: Option<(u32, u32)>,
    /// The display's X server, a program on the image's `PATH` or a path in the image (default
    /// [`crate::DEFAULT_X_SERVER`], `Xvfb`).
    pub x_server: String,
}

impl DockerSandboxOptions {
    /// OpenManus's defaults over `workspace`.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            image: "python:3.12-slim".to_owned(),
            work_dir: PathBuf::from("/workspace"),
            memory_limit: Some(512 * 1024 * 1024),
            cpu_limit: Some(1.0),
            timeout: Duration::from_secs(300),
            network_enabled: false,
            shell: "bash".to_owned(),
            output_limit: 1024 * 1024,
            docker_host: None,
            display: None,
            x_server: crate::DEFAULT_X_SERVER.to_owned(),
        }
    }

    /// Gives the sandbox a virtual display ([`crate::DEFAULT_SCREEN`], 1024×768): the image's
    /// Xvfb, started by [`DockerSandbox::new`] in the container (so the image must contain it,
    /// with the X programs the agent is to use), its socket in a private host directory
    /// (mode 0700) bind-mounted at `/tmp/.X11-unix`, and `DISPLAY=:0` in the container's
    /// environment. [`Sandbox::display`] says where the host reaches it; removing the container
    /// (cleanup, drop) ends it and everything drawn on it.
    #[must_use]
    pub fn with_display(mut self) -> Self {
        self.display = Some(crate::DEFAULT_SCREEN);
        self
    }
}

/// A long-lived shell in the container.
struct DockerSession {
    input: std::pin::Pin<Box<dyn AsyncWrite + Send>>,
    stdout: Arc<Shared>,
    stderr: Arc<Shared>,
    pump: JoinHandle<()>,
    exec_id: String,
    /// The shell's process id inside the container (it prints it first).
    pid: Option<u32>,
}

/// A sandbox in a Docker container. [`Sandbox::cleanup`] (or dropping it) removes the container.
pub struct DockerSandbox {
    docker: Docker,
    container: String,
    /// The host directory of the workspace (canonical).
    workspace: PathBuf,
    options: DockerSandboxOptions,
    sessions: ShellSessions<DockerSession>,
    /// Where the display is reached, when the sandbox has one.
    display: Option<DisplayEndpoint>,
    /// The task draining the X server's exec output.
    x_pump: Option<JoinHandle<()>>,
    /// The private host directory of the display's socket (removed on drop).
    _socket_dir: Option<SocketDir>,
}

impl std::fmt::Debug for DockerSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerSandbox")
            .field("container", &self.container)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn unavailable(address: &str, error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Unavailable(format!(
        "no Docker engine answers at {address} ({error}); start the Docker daemon or set DOCKER_HOST, or use [sandbox] backend = \"local\" (bubblewrap)"
    ))
}

fn engine(error: impl std::fmt::Display) -> SandboxError {
    SandboxError::io(
        "the Docker engine",
        std::io::Error::other(error.to_string()),
    )
}

/// Connects to the engine named by `docker_host` (or the defaults) and checks that it answers.
///
/// # Errors
///
/// [`SandboxError::Unavailable`] when no engine answers within five seconds.
pub async fn connect_docker(docker_host: Option<&str>) -> Result<Docker, SandboxError> {
    let address = docker_address(docker_host);
    let docker = if let Some(path) = address.strip_prefix("unix://") {
        Docker::connect_with_unix(path, 120, bollard::API_DEFAULT_VERSION)
    } else if address.starts_with("tcp://") || address.starts_with("http://") {
        Docker::connect_with_http(&address, 120, bollard::API_DEFAULT_VERSION)
    } else {
        return Err(SandboxError::InvalidSetting(format!(
            "the Docker address {address:?} is neither unix:// nor tcp://"
        )));
    }
    .map_err(|e| unavailable(&address, e))?;
    match tokio::time::timeout(Duration::from_secs(5), docker.ping()).await {
        Ok(Ok(_)) => Ok(docker),
        Ok(Err(e)) => Err(unavailable(&address, e)),
        Err(_) => Err(unavailable(&address, "no answer within 5 s")),
    }
}

/// The Docker engine that answered [`docker_engine`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerEngine {
    /// Where it was reached: `docker_host`, else `DOCKER_HOST`, else the local socket
    /// (`unix:///var/run/docker.sock`).
    pub address: String,
    /// The engine's version (`27.3.1`), when it says.
    pub version: Option<String>,
    /// The Engine API version it speaks (`1.47`), when it says.
    pub api_version: Option<String>,
}

/// Asks the engine [`connect_docker`] reaches (the Docker backend's) for its version: whether
/// an engine answers here, and which. The version request may take at most `limit` (the
/// connection's ping, [`connect_docker`]'s five seconds). (`openmanus doctor` reports it.)
///
/// # Errors
///
/// [`SandboxError::Unavailable`] when no engine answers (in time), or it answers the version
/// request with an error; [`SandboxError::InvalidSetting`] for an address that is neither
/// `unix://` nor `tcp://`.
pub async fn docker_engine(
    docker_host: Option<&str>,
    limit: Duration,
) -> Result<DockerEngine, SandboxError> {
    let address = docker_address(docker_host);
    let docker = connect_docker(Some(&address)).await?;
    let version = match tokio::time::timeout(limit, docker.version()).await {
        Ok(Ok(version)) => version,
        Ok(Err(e)) => return Err(unavailable(&address, e)),
        Err(_) => {
            return Err(unavailable(
                &address,
                format!("no version within {} s", limit.as_secs()),
            ));
        }
    };
    Ok(DockerEngine {
        address,
        version: version.version,
        api_version: version.api_version,
    })
}

/// The engine's address: `docker_host`, else `DOCKER_HOST`, else the local socket.
fn docker_address(docker_host: Option<&str>) -> String {
    docker_host
        .map(str::to_owned)
        .or_else(|| std::env::var("DOCKER_HOST").ok())
        .unwrap_or_else(|| "unix:///var/run/docker.sock".to_owned())
}

impl DockerSandbox {
    /// Starts a shell in the container for a named session: it prints its pid first (so the
    /// session can be killed), then reads commands.
    async fn start_shell(&self) -> Result<DockerSession, SandboxError> {
        let shell = &self.options.shell;
        let cmd = vec![
            "sh".to_owned(),
            "-c".to_owned(),
            format!("echo \"__OPENMANUS_PID_$$\"; exec {shell}"),
        ];
        let (exec_id, started) = self.exec(cmd, true).await?;
        let StartExecResults::Attached { output, input } = started else {
            return Err(engine("the session did not attach"));
        };
        let stdout = Shared::tail();
        let stderr = Shared::tail();
        let pump = pump_exec(
            output,
            Arc::clone(&stdout),
            Arc::clone(&stderr),
            self.options.output_limit,
        );
        // Read the pid line, and keep whatever followed it.
        let mut changes = stdout.subscribe();
        let deadline = Instant::now() + Duration::from_secs(10);
        let pid = loop {
            let found = stdout.with(|b| {
                let line_end = b.data.iter().position(|&byte| byte == b'\n')?;
                let line: Vec<u8> = b.data.drain(..=line_end).collect();
                let pid = String::from_utf8_lossy(&line)
                    .trim()
                    .strip_prefix("__OPENMANUS_PID_")
                    .and_then(|p| p.parse::<u32>().ok());
                Some(pid)
            });
            if let Some(pid) = found {
                break pid;
            }
            if timeout_at(deadline, changes.changed()).await.is_err() {
                break None;
            }
        };
        Ok(DockerSession {
            input,
            stdout,
            stderr,
            pump,
            exec_id,
            pid,
        })
    }

    /// Connects to the engine, checks the image is there, and creates and starts the container
    /// (`sleep infinity`, the workspace bound at the work dir, the limits, no network unless
    /// enabled).
    ///
    /// # Errors
    ///
    /// [`SandboxError::Unavailable`] without an engine; [`SandboxError::InvalidSetting`] for a
    /// missing image or bad paths; an engine error otherwise.
    pub async fn new(options: DockerSandboxOptions) -> Result<Self, SandboxError> {
        let docker = connect_docker(options.docker_host.as_deref()).await?;
        std::fs::create_dir_all(&options.workspace)
            .map_err(|e| SandboxError::at(&options.workspace, "creating", e))?;
        let workspace = options
            .workspace
            .canonicalize()
            .map_err(|e| SandboxError::at(&options.workspace, "resolving", e))?;
        if !options.work_dir.is_absolute() {
            return Err(SandboxError::InvalidSetting(format!(
                "work_dir {} must be absolute",
                options.work_dir.display()
            )));
        }
        if docker.inspect_image(&options.image).await.is_err() {
            return Err(SandboxError::InvalidSetting(format!(
                "the image {:?} is not on the Docker engine; pull or build it first (docker pull {})",
                options.image, options.image
            )));
        }
        let text = |p: &Path| p.to_string_lossy().into_owned();
        let socket_dir = options.display.map(|_| SocketDir::create()).transpose()?;
        let mut binds = vec![format!("{}:{}", text(&workspace), text(&options.work_dir))];
        let mut env = vec!["PYTHONUNBUFFERED=1".to_owned(), "LANG=C.UTF-8".to_owned()];
        if let Some(dir) = &socket_dir {
            binds.push(format!("{}:/tmp/.X11-unix", text(&dir.x11_dir())));
            env.push(format!("DISPLAY=:{DISPLAY_NUMBER}"));
        }
        let host_config = HostConfig {
            binds: Some(binds),
            memory: options
                .memory_limit
                .and_then(|bytes| i64::try_from(bytes).ok()),
            nano_cpus: options.cpu_limit.map(|cpus| {
                // Saturating float-to-int conversion of a small positive number.
                #[allow(clippy::cast_possible_truncation)]
                let nanos = (cpus * 1e9).round() as i64;
                nanos
            }),
            network_mode: Some(if options.network_enabled {
                "bridge".to_owned()
            } else {
                "none".to_owned()
            }),
            init: Some(true),
            cap_drop: Some(vec!["ALL".to_owned()]),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            ..HostConfig::default()
        };
        // The workspace owner's ids: files the sandbox writes there belong to whoever owns the
        // workspace, and a container root without capabilities could not write a workspace
        // owned by an ordinary user.
        let owner = std::fs::metadata(&workspace)
            .map_err(|e| SandboxError::at(&workspace, "reading", e))?;
        let user = {
            use std::os::unix::fs::MetadataExt;
            format!("{}:{}", owner.uid(), owner.gid())
        };
        let body = ContainerCreateBody {
            image: Some(options.image.clone()),
            user: Some(user),
            cmd: Some(vec!["sleep".to_owned(), "infinity".to_owned()]),
            working_dir: Some(text(&options.work_dir)),
            env: Some(env),
            network_disabled: Some(!options.network_enabled),
            host_config: Some(host_config),
            labels: Some(docker_owner::labels()),
            ..ContainerCreateBody::default()
        };
        // The containers of processes that died without cleaning up (SIGKILL) go first.
        docker_owner::reap_orphans(&docker).await;
        let created = docker
            .create_container(
                None::<bollard::query_parameters::CreateContainerOptions>,
                body,
            )
            .await
            .map_err(engine)?;
        let container = created.id;
        live().insert((options.docker_host.clone(), container.clone()));
        if let Err(e) = docker
            .start_container(&container, None::<StartContainerOptions>)
            .await
        {
            remove(&docker, &container).await;
            return Err(engine(e));
        }
        debug!(%container, image = %options.image, "Docker sandbox started");
        let mut sandbox = Self {
            docker,
            container,
            workspace,
            options,
            sessions: ShellSessions::new(),
            display: None,
            x_pump: None,
            _socket_dir: socket_dir,
        };
        if let Err(error) = sandbox.start_display().await {
            // Nothing of a sandbox that failed to start is left behind.
            sandbox.sessions.close().await;
            remove(&sandbox.docker, &sandbox.container).await;
            return Err(error);
        }
        Ok(sandbox)
    }

    /// Starts the image's X server in the container when the options ask for a display, and
    /// waits until it accepts connections on the bind-mounted socket.
    async fn start_display(&mut self) -> Result<(), SandboxError> {
        let (Some(size), Some(dir)) = (self.options.display, &self._socket_dir) else {
            return Ok(());
        };
        let socket = dir.x11_dir().join(format!("X{DISPLAY_NUMBER}"));
        let program = self.options.x_server.clone();
        let (exec_id, started) = self
            .exec(docker_display::command(&program, size), false)
            .await?;
        let StartExecResults::Attached { output, .. } = started else {
            return Err(engine("the X server's exec did not attach"));
        };
        let pump = docker_display::wait_ready(&program, &self.options.image, output).await?;
        let server_pid = self.exec_pid(&exec_id).await;
        if !socket.exists() {
            warn!(socket = %socket.display(), "the container's X server is ready but its socket is not where expected");
        }
        debug!(server_pid, socket = %socket.display(), "the Docker sandbox's display is ready");
        self.display = Some(DisplayEndpoint {
            socket,
            name: format!(":{DISPLAY_NUMBER}"),
            size,
            server_pid,
        });
        self.x_pump = Some(pump);
        Ok(())
    }

    /// The exec's host process id (the X server itself, once `sh` has exec'd it), or 0 when
    /// the engine does not tell. The engine records the id only after its `exec` call returns,
    /// which can be after the process has already written (and so after it was seen ready):
    /// asked too early, it answers 0, so this asks again until the id is there, the exec has
    /// ended, or a generous bound has passed.
    async fn exec_pid(&self, exec_id: &str) -> u32 {
        let deadline = Instant::now() + PID_WAIT;
        loop {
            let inspect = match self.docker.inspect_exec(exec_id).await {
                Ok(inspect) => inspect,
                Err(e) => {
                    warn!(error = %e, "the X server's exec could not be inspected");
                    return 0;
                }
            };
            let pid = inspect
                .pid
                .and_then(|pid| u32::try_from(pid).ok())
                .unwrap_or(0);
            if pid > 0 || inspect.running == Some(false) || Instant::now() >= deadline {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The container's id.
    #[must_use]
    pub fn container_id(&self) -> &str {
        &self.container
    }

    async fn exec(
        &self,
        cmd: Vec<String>,
        stdin: bool,
    ) -> Result<(String, StartExecResults), SandboxError> {
        let exec = self
            .docker
            .create_exec(
                &self.container,
                CreateExecOptions {
                    cmd: Some(cmd),
                    attach_stdin: Some(stdin),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    working_dir: Some(self.options.work_dir.to_string_lossy().into_owned()),
                    ..CreateExecOptions::default()
                },
            )
            .await
            .map_err(engine)?;
        let started = self
            .docker
            .start_exec(&exec.id, None)
            .await
            .map_err(engine)?;
        Ok((exec.id, started))
    }

    async fn exit_code(&self, exec_id: &str) -> Option<i32> {
        let inspect = self.docker.inspect_exec(exec_id).await.ok()?;
        if inspect.running == Some(true) {
            return None;
        }
        inspect.exit_code.and_then(|c| i32::try_from(c).ok())
    }
}

/// Copies an exec's output stream into the two buffers.
fn pump_exec(
    mut output: std::pin::Pin<
        Box<dyn futures::Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>,
    >,
    stdout: Arc<Shared>,
    stderr: Arc<Shared>,
    limit: usize,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(Ok(chunk)) = output.next().await {
            match chunk {
                LogOutput::StdErr { message } => stderr.append(&message, limit),
                LogOutput::StdOut { message } | LogOutput::Console { message } => {
                    stdout.append(&message, limit);
                }
                LogOutput::StdIn { .. } => {}
            }
        }
        stdout.finish();
        stderr.finish();
    })
}

async fn remove(docker: &Docker, container: &str) {
    let options = RemoveContainerOptions {
        force: true,
        v: true,
        ..RemoveContainerOptions::default()
    };
    let removal = docker.remove_container(container, Some(options));
    match tokio::time::timeout(Duration::from_secs(20), removal).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            warn!(%container, error = %e, "could not remove the Docker sandbox's container");
        }
        Err(_) => warn!(%container, "removing the Docker sandbox's container timed out"),
    }
    live().retain(|(_, id)| id != container);
}

/// A container this process created: the engine address it was created on, and its id.
type LiveContainer = (Option<String>, String);

/// The containers this process created and has not removed yet.
fn live() -> std::sync::MutexGuard<'static, std::collections::HashSet<LiveContainer>> {
    static LIVE: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<LiveContainer>>> =
        std::sync::OnceLock::new();
    LIVE.get_or_init(|| {
        // The first container this process creates puts the clean-up on the one emergency
        // path (a second Ctrl-C): no front end has to name it.
        agent_process::register_emergency_hook(
            "remove the live Docker sandbox containers",
            remove_live_containers_now,
        );
        Default::default()
    })
    .lock()
    .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes, before returning, every Docker sandbox container this process created and has
/// not removed yet: for a process about to exit without unwinding (a second Ctrl-C), where
/// [`Sandbox::cleanup`] and `Drop` no longer get to run. Registered as an
/// `agent_process::emergency_shutdown` hook when the first container is created. Works from inside or outside a tokio
/// runtime (it uses a thread of its own); bounded to about twenty seconds.
pub fn remove_live_containers_now() {
    let containers: Vec<LiveContainer> = live().iter().cloned().collect();
    if containers.is_empty() {
        return;
    }
    let worker = std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async move {
            for (host, container) in containers {
                if let Ok(docker) = connect_docker(host.as_deref()).await {
                    remove(&docker, &container).await;
                }
            }
        });
    });
    let _ = worker.join();
}

#[async_trait]
impl Sandbox for DockerSandbox {
    async fn run(
        &self,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<ExecOutput, SandboxError> {
        self.sessions.check_open().await?;
        let limit = timeout.unwrap_or(self.options.timeout);
        // Whole seconds, rounded up, so the command gets at least its limit.
        let seconds = limit
            .as_secs()
            .saturating_add(u64::from(limit.subsec_nanos() > 0))
            .max(1);
        let limit = Duration::from_secs(seconds);
        let seconds = seconds.to_string();
        // `timeout` kills the command's whole process group with SIGKILL at the limit.
        let cmd = vec![
            "timeout".to_owned(),
            "-s".to_owned(),
            "KILL".to_owned(),
            seconds,
            self.options.shell.clone(),
            "-c".to_owned(),
            command.to_owned(),
        ];
        let started_at = Instant::now();
        let (exec_id, started) = self.exec(cmd, false).await?;
        let StartExecResults::Attached { output, .. } = started else {
            return Err(engine("the exec did not attach"));
        };
        let out = Shared::new();
        let err = Shared::new();
        let pump = pump_exec(
            output,
            Arc::clone(&out),
            Arc::clone(&err),
            self.options.output_limit,
        );
        // The engine ends the stream when the command ends; a grace period covers a stuck one.
        let deadline = started_at + limit + Duration::from_secs(10);
        if timeout_at(deadline, pump).await.is_err() {
            warn!(command, "the Docker exec did not end after its timeout");
        }
        let Some(code) = self.exit_code(&exec_id).await else {
            return Err(engine(format!(
                "the engine does not report how `{command}` ended"
            )));
        };
        let timed_out = code == 137 && started_at.elapsed() >= limit;
        let (stdout, out_cut) = out.take();
        let (stderr, err_cut) = err.take();
        Ok(ExecOutput {
            stdout,
            stderr,
            exit_code: if timed_out { None } else { Some(code) },
            timed_out,
            truncated: out_cut || err_cut,
        })
    }

    async fn start_session(&self, name: &str) -> Result<(), SandboxError> {
        self.sessions.start(name, || self.start_shell()).await
    }

    async fn send_to_session(&self, name: &str, input: &str) -> Result<(), SandboxError> {
        let mut session = self.sessions.get(name).await?;
        // A shell that does not read its input must not hold every session up.
        let write = async {
            session.input.write_all(input.as_bytes()).await?;
            session.input.flush().await
        };
        match tokio::time::timeout(Duration::from_secs(10), write).await {
            Ok(result) => {
                result.map_err(|e| SandboxError::io(format!("writing to the session {name:?}"), e))
            }
            Err(_) => Err(SandboxError::io(
                format!("writing to the session {name:?}"),
                std::io::Error::other("the shell has not read its input for 10 s"),
            )),
        }
    }

    async fn read_session(
        &self,
        name: &str,
        until: Option<&str>,
        timeout: Duration,
    ) -> Result<SessionOutput, SandboxError> {
        let deadline = Instant::now() + timeout;
        let (stdout, stderr, exec_id) = {
            let session = self.sessions.get(name).await?;
            (
                Arc::clone(&session.stdout),
                Arc::clone(&session.stderr),
                session.exec_id.clone(),
            )
        };
        let matched = match until {
            Some(needle) => stdout.wait_for(needle, deadline).await,
            None => false,
        };
        let eof = stdout.with(|b| b.eof);
        let exit_code = if eof {
            self.exit_code(&exec_id).await
        } else {
            None
        };
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
        if let Some(pid) = session.pid {
            // The shell's process group (what it started), then the shell itself.
            let kill =
                format!("kill -KILL -- -{pid} 2>/dev/null; kill -KILL {pid} 2>/dev/null; true");
            if let Ok((_, StartExecResults::Attached { mut output, .. })) = self
                .exec(vec!["sh".to_owned(), "-c".to_owned(), kill], false)
                .await
            {
                let drained = async { while output.next().await.is_some() {} };
                if tokio::time::timeout(Duration::from_secs(10), drained)
                    .await
                    .is_err()
                {
                    warn!(session = name, "killing the session's shell did not finish");
                }
            }
        }
        session.pump.abort();
        Ok(())
    }

    async fn list_sessions(&self) -> Vec<String> {
        self.sessions.names().await
    }

    async fn cleanup(&self) -> Result<(), SandboxError> {
        for session in self.sessions.close().await {
            session.pump.abort();
        }
        // Removing the container ends the X server and every program on the display.
        remove(&self.docker, &self.container).await;
        if let Some(pump) = &self.x_pump {
            pump.abort();
        }
        Ok(())
    }

    fn workspace(&self) -> &Path {
        &self.workspace
    }

    fn work_dir(&self) -> &Path {
        &self.options.work_dir
    }

    fn network_enabled(&self) -> bool {
        self.options.network_enabled
    }

    fn display(&self) -> Option<DisplayEndpoint> {
        self.display.clone()
    }

    /// `docker exec -i -w <work dir> <container>` (with `-H` when an address was configured):
    /// the program runs in the container through the `docker` command, which must be on
    /// `PATH`. Killing the prefix's process group ends the client; a process it started in the
    /// container lives on until the container is removed.
    fn launcher(&self) -> Vec<String> {
        let mut argv = vec!["docker".to_owned()];
        if let Some(host) = &self.options.docker_host {
            argv.extend(["-H".to_owned(), host.clone()]);
        }
        argv.extend([
            "exec".to_owned(),
            "-i".to_owned(),
            "-w".to_owned(),
            self.options.work_dir.to_string_lossy().into_owned(),
            self.container.clone(),
        ]);
        argv
    }
}

impl Drop for DockerSandbox {
    fn drop(&mut self) {
        let cleaned = self.sessions.is_closed_now();
        if cleaned {
            return;
        }
        // Remove the container in the background when a runtime is there to do it.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let docker = self.docker.clone();
            let container = self.container.clone();
            handle.spawn(async move { remove(&docker, &container).await });
        } else {
            warn!(container = %self.container, "dropped outside a runtime; the container is left");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// An engine on loopback that answers every request (`/_ping`, `/version`) with the same
    /// version object, one request a connection.
    async fn fake_engine() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("tcp://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let body = r#"{"Version":"27.3.1","ApiVersion":"1.47"}"#;
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        address
    }

    #[tokio::test]
    async fn an_engine_that_answers_gives_its_version() {
        let address = fake_engine().await;
        let engine = docker_engine(Some(&address), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(engine.address, address);
        assert_eq!(engine.version.as_deref(), Some("27.3.1"));
        assert_eq!(engine.api_version.as_deref(), Some("1.47"));
    }

    #[tokio::test]
    async fn no_engine_is_unavailable_naming_the_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = format!("tcp://{}", listener.local_addr().unwrap());
        drop(listener);
        let error = docker_engine(Some(&address), Duration::from_secs(60))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, SandboxError::Unavailable(text) if text.contains(&address)),
            "{error}"
        );
    }
}
