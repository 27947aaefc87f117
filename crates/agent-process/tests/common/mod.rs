//! Helpers shared by the tests: real child processes, checked through /proc.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::time::Duration;

use agent_process::{ProcessGroup, Spawned};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// Generous: the machine is loaded.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Whether `pid` is gone (no such process, or a zombie awaiting its reaper).
pub fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Polls until `pid` is gone; false after [`PATIENCE`].
pub async fn wait_gone(pid: i32) -> bool {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while tokio::time::Instant::now() < deadline {
        if gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gone(pid)
}

/// Runs `script` with `sh -c` in a group of its own; it must print one line (a pid, or
/// `ready`) which is returned with the group.
pub async fn spawn_script(script: &str) -> (ProcessGroup, String) {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(script)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped());
    let Spawned { group, stdout, .. } = ProcessGroup::spawn("test script", &mut command).unwrap();
    let mut lines = BufReader::new(stdout.unwrap()).lines();
    let line = tokio::time::timeout(PATIENCE, lines.next_line())
        .await
        .expect("the script printed its line in time")
        .unwrap()
        .expect("a line");
    // Keep reading (and discarding) so the script never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (group, line)
}

/// Whether `pid` left no trace at all: not even a zombie (it was reaped).
pub fn reaped(pid: i32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Polls until `pid` was reaped; false after [`PATIENCE`].
pub async fn wait_reaped(pid: i32) -> bool {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while tokio::time::Instant::now() < deadline {
        if reaped(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    reaped(pid)
}

/// The parent of `pid`, from `/proc/<pid>/stat`.
pub fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Polls until `pid`'s parent is `parent`; false after [`PATIENCE`].
pub async fn wait_parent(pid: i32, parent: i32) -> bool {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while tokio::time::Instant::now() < deadline {
        if parent_of(pid) == Some(parent) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}
