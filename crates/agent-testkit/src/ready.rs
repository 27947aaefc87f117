//! Waiting for a server child to say on its standard error that it is ready.

use std::io::{self, BufRead, BufReader};
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;

/// `child` (spawned with its standard error piped) once a line of its standard error holds
/// `marker`, within `timeout`; killed and reaped otherwise, with an error naming `what`. A
/// thread keeps reading the pipe to its end, so the child never blocks on a full pipe.
///
/// # Errors
///
/// The marker did not come in time (or the child ended first).
pub(crate) fn ready_on_stderr(
    mut child: Child,
    marker: &'static str,
    timeout: Duration,
    what: &str,
) -> io::Result<Child> {
    let stderr = child.stderr.take();
    let (ready, readiness) = mpsc::channel();
    std::thread::spawn(move || {
        let Some(stderr) = stderr else { return };
        let mut said = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !said && line.contains(marker) {
                said = true;
                let _ = ready.send(());
            }
        }
    });
    match readiness.recv_timeout(timeout) {
        Ok(()) => Ok(child),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(io::Error::other(format!("{what} did not become ready")))
        }
    }
}
