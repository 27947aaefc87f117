//! The sandbox's virtual display: an Xvfb started in a sandbox instance of its own, its socket
//! in a private host directory that every instance of the sandbox sees as `/tmp/.X11-unix`.
//!
//! Every bubblewrap instance has a private `/tmp` and (without the network) a private network
//! namespace, so neither the usual `/tmp/.X11-unix` nor X's abstract socket would reach from one
//! instance to the next. The socket directory is therefore a host directory, created per sandbox
//! inside a `0700` directory of its own (only this user reaches it), and bound into every
//! instance; `DISPLAY=:0` is set in every instance. Display `:0` is free by construction: the
//! socket directory and the lock file's `/tmp` are the sandbox's own. The host process (the
//! `computer_use` tool) connects to the socket by its host path.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use agent_process::{ProcessGroup, Spawned};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::Command;
use tokio::time::timeout;
use tracing::{debug, warn};

use crate::SandboxError;

/// The display number inside a sandbox (`DISPLAY=:0`).
pub const DISPLAY_NUMBER: u32 = 0;

/// The screen size of a sandbox's display unless set otherwise: 1024×768, 24-bit colour. Its
/// screenshots fit the 1920×1080 box OpenManus scales images to, so they are never scaled and
/// their pixels are the display's coordinates.
pub const DEFAULT_SCREEN: (u32, u32) = (1024, 768);

/// How long the X server may take to accept connections (generous: a loaded machine).
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a sandbox's display is reached from the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayEndpoint {
    /// The host path of the X server's Unix socket.
    pub socket: PathBuf,
    /// The display name programs in the sandbox use (`:0`).
    pub name: String,
    /// The screen size in pixels.
    pub size: (u32, u32),
    /// The X server's host process id (for logs and tests).
    pub server_pid: u32,
}

/// A private host directory holding the X socket directory; removed on drop, and by the
/// emergency shutdown (a second Ctrl-C exits without running drops).
#[derive(Debug)]
pub(crate) struct SocketDir {
    root: PathBuf,
    hook: agent_process::HookId,
}

impl SocketDir {
    /// Creates `$TMPDIR/openmanus-display-…` (mode 0700) with an `X11-unix` directory inside.
    pub(crate) fn create() -> Result<Self, SandboxError> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let root = std::env::temp_dir().join(format!(
            "openmanus-display-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&root)
            .map_err(|e| SandboxError::io(format!("creating {}", root.display()), e))?;
        let hook = {
            let root = root.clone();
            agent_process::register_emergency_hook(
                "remove a display's socket directory",
                move || {
                    let _ = std::fs::remove_dir_all(&root);
                },
            )
        };
        let dir = Self { root, hook };
        std::fs::DirBuilder::new()
            .mode(0o1777)
            .create(dir.x11_dir())
            .map_err(|e| SandboxError::io("creating the X socket directory", e))?;
        Ok(dir)
    }

    /// The directory bound at `/tmp/.X11-unix` inside the sandbox.
    pub(crate) fn x11_dir(&self) -> PathBuf {
        self.root.join("X11-unix")
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        agent_process::unregister_emergency_hook(self.hook);
        if let Err(error) = std::fs::remove_dir_all(&self.root) {
            debug!(%error, dir = %self.root.display(), "removing the X socket directory");
        }
    }
}

/// A running X server (Xvfb) of a sandbox: killed with its group on drop.
#[derive(Debug)]
pub(crate) struct XServer {
    pub(crate) group: ProcessGroup,
    pub(crate) endpoint: DisplayEndpoint,
}

/// The X server a sandbox's display runs unless set otherwise (`[sandbox] xvfb`): `Xvfb`, looked
/// up on the sandbox's `PATH`.
pub const DEFAULT_X_SERVER: &str = "Xvfb";

/// The arguments after the server's name: display `:0`, readiness on `-displayfd 1`, no TCP, no
/// reset when the last client leaves, no MIT-SHM (shared memory does not cross the sandbox's IPC
/// namespaces: clients must not try it), the screen at `size` with 24-bit colour.
pub(crate) fn x_server_args(size: (u32, u32)) -> Vec<String> {
    let mut args = vec![format!(":{DISPLAY_NUMBER}")];
    args.extend(
        ["-displayfd", "1", "-nolisten", "tcp", "-noreset"]
            .into_iter()
            .map(str::to_owned),
    );
    args.extend(["-extension", "MIT-SHM"].into_iter().map(str::to_owned));
    args.extend([
        "-screen".to_owned(),
        "0".to_owned(),
        format!("{}x{}x24", size.0, size.1),
    ]);
    args
}

/// Why a display cannot start when its X server program is missing: `place` says where it was
/// looked for, `fix` how to install it.
pub(crate) fn x_server_missing(program: &str, place: &str, fix: &str) -> SandboxError {
    SandboxError::DisplayUnavailable(format!(
        "the X server `{program}` is not installed {place} ({fix})"
    ))
}

/// Where the local sandbox finds its X server `program` (`[sandbox] xvfb`): a path (it holds a
/// `/`) as it is, a name on [`crate::SANDBOX_PATH`], the `PATH` inside the sandbox (not this
/// process's); `None` when it is not a file there. (`openmanus doctor` reports it.)
#[must_use]
pub fn x_server_path(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let path = Path::new(program);
        return path.is_file().then(|| path.to_path_buf());
    }
    crate::SANDBOX_PATH
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|candidate| candidate.is_file())
}

/// Checks a display number line written to `-displayfd`: it must be [`DISPLAY_NUMBER`].
#[cfg(feature = "docker")]
pub(crate) fn check_display_number(
    program: &str,
    number: Option<u32>,
    errors: &str,
) -> Result<(), SandboxError> {
    if number == Some(DISPLAY_NUMBER) {
        return Ok(());
    }
    Err(wrong_display(program, number, errors))
}

/// The error of a server that reported another display (or none) on `-displayfd`.
fn wrong_display(program: &str, number: Option<u32>, errors: &str) -> SandboxError {
    SandboxError::DisplayUnavailable(format!(
        "the X server ({program}) did not start on display :{DISPLAY_NUMBER} (it reported {number:?}): {}",
        last_lines(errors)
    ))
}

/// Starts `launcher` + `program :0 …` (`program` is normally `Xvfb`) in its own supervised
/// process group and waits until it accepts connections (`-displayfd` writes the display number
/// then).
pub(crate) async fn start_xvfb(
    launcher: &[String],
    program: &str,
    x11_dir: &Path,
    size: (u32, u32),
) -> Result<XServer, SandboxError> {
    if x_server_path(program).is_none() {
        return Err(x_server_missing(
            program,
            "on this machine",
            "Debian/Ubuntu: `apt-get install xvfb`; `openmanus doctor` shows what this machine has",
        ));
    }
    let Some((launcher_program, args)) = launcher.split_first() else {
        return Err(SandboxError::InvalidSetting(
            "the display needs a launcher".into(),
        ));
    };
    let mut command = Command::new(launcher_program);
    command
        .args(args)
        .arg(program)
        .args(x_server_args(size))
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let Spawned {
        group,
        stdout,
        stderr,
        ..
    } = ProcessGroup::spawn("Xvfb", &mut command).map_err(|e| {
        SandboxError::DisplayUnavailable(format!(
            "the X server ({program}) cannot be started ({e}); install it (Debian/Ubuntu: `apt-get install xvfb`; `openmanus doctor` shows what this machine has)"
        ))
    })?;
    let (Some(stdout), Some(stderr)) = (stdout, stderr) else {
        return Err(SandboxError::io(
            "starting Xvfb",
            std::io::Error::other("its pipes are missing"),
        ));
    };
    let errors = tokio::spawn(read_all(stderr));
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::select! {
        line = timeout(READY_TIMEOUT, lines.next_line()) => line,
        status = group.wait() => {
            let text = errors.await.unwrap_or_default();
            return Err(SandboxError::DisplayUnavailable(format!(
                "the X server ({program}) exited at once ({status:?}): {}",
                last_lines(&text)
            )));
        }
    };
    let number = match ready {
        Ok(Ok(Some(line))) => line.trim().parse::<u32>().ok(),
        Ok(Ok(None) | Err(_)) => None,
        Err(_) => {
            group.kill();
            return Err(SandboxError::DisplayUnavailable(format!(
                "the X server ({program}) did not accept connections within {}s",
                READY_TIMEOUT.as_secs()
            )));
        }
    };
    if number != Some(DISPLAY_NUMBER) {
        group.kill();
        let text = errors.await.unwrap_or_default();
        return Err(wrong_display(program, number, &text));
    }
    // Keep both pipes drained so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    tokio::spawn(async move {
        let text = errors.await.unwrap_or_default();
        if !text.trim().is_empty() {
            debug!(stderr = %last_lines(&text), "Xvfb ended");
        }
    });
    let endpoint = DisplayEndpoint {
        socket: x11_dir.join(format!("X{DISPLAY_NUMBER}")),
        name: format!(":{DISPLAY_NUMBER}"),
        size,
        server_pid: group.pid(),
    };
    if !endpoint.socket.exists() {
        warn!(socket = %endpoint.socket.display(), "Xvfb is ready but its socket is not where expected");
    }
    debug!(pid = group.pid(), socket = %endpoint.socket.display(), "the sandbox's display is ready");
    Ok(XServer { group, endpoint })
}

/// Reads a pipe to its end (bounded to the last 64 KiB).
async fn read_all(mut pipe: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut chunk = [0_u8; 4096];
    while let Ok(n) = pipe.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&chunk[..n]);
        if kept.len() > 64 << 10 {
            kept.drain(..kept.len() - (64 << 10));
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// The last few lines of a server's error output, for a message.
pub(crate) fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_x_server_is_found_by_path_or_on_the_sandbox_path_only() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("Xvfb");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        let given = program.to_str().unwrap();
        assert_eq!(x_server_path(given), Some(program.clone()));
        assert_eq!(x_server_path(&format!("{given}-missing")), None);
        // A name is looked up where the sandbox looks: `sh` is in /bin or /usr/bin.
        let sh = x_server_path("sh").unwrap();
        assert!(
            sh.starts_with("/usr/bin") || sh.starts_with("/bin"),
            "{sh:?}"
        );
        assert_eq!(x_server_path("openmanus-no-such-xvfb"), None);
    }
}
