//! The Docker backend's virtual display: the image's Xvfb, run in the sandbox's container by an
//! exec of its own, its socket in a private host directory bind-mounted at `/tmp/.X11-unix`.
//!
//! The X server runs inside the container, as on the bubblewrap backend it runs inside the
//! sandbox: the programs the agent starts talk only to a confined server, the server and every
//! program on it die when the container is removed (cleanup, drop, the emergency hook), and
//! display `:0` is free by construction (the container's own `/tmp` holds the lock file, its own
//! network namespace the abstract socket). The host reaches the server through the socket's host
//! path; `docs/desktop.md` says why this beats an Xvfb on the host.

use std::pin::Pin;

use bollard::container::LogOutput;
use futures::{Stream, StreamExt};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tracing::debug;

use crate::SandboxError;
use crate::display::{
    DISPLAY_NUMBER, READY_TIMEOUT, check_display_number, last_lines, x_server_missing,
};

/// What the wrapper shell prints when the image has no such program.
const MISSING_MARK: &str = "__OPENMANUS_NO_X_SERVER__";

/// The exec's command: `sh` checks the program is on the image's `PATH` (saying so plainly when
/// it is not), then becomes it.
pub(crate) fn command(program: &str, size: (u32, u32)) -> Vec<String> {
    let mut cmd = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        format!(
            "command -v \"$0\" >/dev/null 2>&1 || {{ echo {MISSING_MARK} >&2; exit 127; }}; exec \"$0\" \"$@\""
        ),
        program.to_owned(),
    ];
    cmd.extend(crate::display::x_server_args(size));
    cmd
}

/// An exec's output stream, as bollard hands it over.
pub(crate) type Output =
    Pin<Box<dyn Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>;

/// Reads the X server's exec output until it writes its display number (it accepts connections
/// then), and keeps draining it afterwards (the returned task; aborting it is harmless, the
/// server dies with the container).
///
/// # Errors
///
/// [`SandboxError::DisplayUnavailable`] when the image has no such program, when the server
/// ends first (quoting its last words), reports another display, or is not ready within
/// [`READY_TIMEOUT`].
pub(crate) async fn wait_ready(
    program: &str,
    image: &str,
    mut output: Output,
) -> Result<JoinHandle<()>, SandboxError> {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let read_line = async {
        while let Some(chunk) = output.next().await {
            match chunk {
                Ok(LogOutput::StdOut { message } | LogOutput::Console { message }) => {
                    stdout.extend_from_slice(&message);
                    if stdout.contains(&b'\n') {
                        return true;
                    }
                }
                Ok(LogOutput::StdErr { message }) => stderr.extend_from_slice(&message),
                Ok(LogOutput::StdIn { .. }) => {}
                Err(_) => break,
            }
        }
        false
    };
    let got_line = match timeout(READY_TIMEOUT, read_line).await {
        Ok(got_line) => got_line,
        Err(_) => {
            return Err(SandboxError::DisplayUnavailable(format!(
                "the X server ({program}) did not accept connections within {}s",
                READY_TIMEOUT.as_secs()
            )));
        }
    };
    let errors = String::from_utf8_lossy(&stderr).into_owned();
    if errors.contains(MISSING_MARK) {
        return Err(x_server_missing(
            program,
            &format!("in the Docker image {image:?}"),
            "add it to the image, e.g. `RUN apt-get install -y xvfb` in its Dockerfile, or use backend = \"local\"",
        ));
    }
    if !got_line {
        return Err(SandboxError::DisplayUnavailable(format!(
            "the X server ({program}) exited at once in the container: {}",
            last_lines(&errors)
        )));
    }
    let text = String::from_utf8_lossy(&stdout);
    let number = text
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<u32>().ok());
    check_display_number(program, number, &errors)?;
    debug!(
        display = DISPLAY_NUMBER,
        "the container's X server is ready"
    );
    Ok(tokio::spawn(async move {
        while let Some(Ok(_)) = output.next().await {}
    }))
}
