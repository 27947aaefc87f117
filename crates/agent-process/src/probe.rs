//! Short programs: [`find_on_path`] finds one as `PATH` would, [`output_within`] runs it (a
//! `--version`, a capability probe) to its end, but never for longer than a limit.

use std::io;
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use crate::group::{ProcessGroup, Spawned};

/// The first file named `name` in the directories of this process's `PATH`, as a program
/// started by that name would be found; `None` when there is none. (Only files count; whether
/// one is executable shows when it is started.)
#[must_use]
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Runs `command` in a process group of its own ([`ProcessGroup::spawn`], registered under
/// `name`) with standard input closed, and collects its exit status, standard output and standard
/// error, as [`Command::output`] does, but for at most `limit`: a program that hangs (or leaves
/// a child holding its output open) is killed with its whole group, and `Ok(None)` says it did
/// not finish in time.
///
/// It is meant for probes: `chromium --version`, `bwrap` creating its namespaces, `python3 -c
/// "import pandas"`. Their output is small; it is held in memory whole.
///
/// # Errors
///
/// The program could not be started (not found, not executable: the error's kind says), its
/// output could not be read, or its exit status is unknown.
pub async fn output_within(
    name: &str,
    command: &mut Command,
    limit: Duration,
) -> io::Result<Option<Output>> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let Spawned {
        group,
        stdout,
        stderr,
        ..
    } = ProcessGroup::spawn(name, command)?;
    let finished = async {
        let (stdout, stderr, status) =
            tokio::join!(read_all(stdout), read_all(stderr), group.wait());
        Ok::<_, io::Error>((stdout?, stderr?, status))
    };
    let Ok(finished) = tokio::time::timeout(limit, finished).await else {
        tracing::debug!(
            name,
            limit_secs = limit.as_secs_f64(),
            "no answer in time: killed"
        );
        group.kill();
        return Ok(None);
    };
    let (stdout, stderr, status) = finished?;
    let status =
        status.ok_or_else(|| io::Error::other(format!("the exit status of {name} is unknown")))?;
    Ok(Some(Output {
        status,
        stdout,
        stderr,
    }))
}

/// Everything a pipe gives until its end (nothing when the stream was not piped).
async fn read_all(pipe: Option<impl AsyncRead + Unpin>) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if let Some(mut pipe) = pipe {
        pipe.read_to_end(&mut bytes).await?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[tokio::test]
    async fn a_program_that_ends_gives_its_status_and_both_streams() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo out; echo err >&2; exit 3"]);
        let output = output_within("sh", &mut command, Duration::from_secs(60))
            .await
            .unwrap()
            .expect("it ended in time");
        assert_eq!(output.status.code(), Some(3));
        assert_eq!(output.stdout, b"out\n");
        assert_eq!(output.stderr, b"err\n");
    }

    #[tokio::test]
    async fn a_program_that_hangs_is_killed_with_its_children_at_the_limit() {
        let dir = std::env::temp_dir().join(format!("output-within-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pid_file = dir.join("child");
        let mut command = Command::new("sh");
        // A child that holds the output open, and a leader that waits for it.
        command.args([
            "-c",
            &format!("sleep 300 & echo $! > {}; wait", pid_file.display()),
        ]);
        let output = output_within("hanging", &mut command, Duration::from_secs(5))
            .await
            .unwrap();
        assert!(output.is_none(), "{output:?}");
        // SIGKILL went to the whole group: the sleep is gone (or a zombie being reaped). (On a
        // machine so loaded that sh did not start in 5 s there is no child to look for.)
        let child = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok());
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while let Some(child) = child {
            let alive = std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
                !stat
                    .rsplit(')')
                    .next()
                    .unwrap_or_default()
                    .trim_start()
                    .starts_with('Z')
            });
            if !alive {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "the child survived");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn programs_are_found_on_path_and_missing_ones_are_not() {
        let sh = find_on_path("sh").expect("sh is on PATH");
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{sh:?}");
        assert_eq!(find_on_path("openmanus-no-such-program"), None);
    }

    #[tokio::test]
    async fn a_missing_program_is_an_error_of_kind_not_found() {
        let mut command = Command::new("openmanus-no-such-program");
        let error = output_within("none", &mut command, Duration::from_secs(60))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }
}
