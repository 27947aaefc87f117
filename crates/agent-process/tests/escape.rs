//! Processes that leave their group (`setsid`, a daemon's double fork) die with it, are reaped
//! once dead, and the host's own children keep their exit statuses (issue 21: no escapes).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agent_process::ProcessGroup;
use common::{PATIENCE, gone, parent_of, spawn_script, wait_parent, wait_reaped};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

fn me() -> i32 {
    i32::try_from(std::process::id()).unwrap()
}

#[tokio::test]
async fn a_setsid_child_of_the_leader_dies_with_the_group_and_is_reaped() {
    let (group, line) = spawn_script("setsid sleep 1000 & echo $!; wait").await;
    let escaped: i32 = line.trim().parse().unwrap();
    assert!(!gone(escaped));
    assert_eq!(
        parent_of(escaped),
        Some(group.pgid()),
        "still the shell's child"
    );
    drop(group);
    assert!(
        wait_reaped(escaped).await,
        "the process in a session of its own survived the group, or stayed a zombie"
    );
}

#[tokio::test]
async fn an_orphan_that_left_the_group_is_adopted_then_killed_with_its_group() {
    // The subshell starts the escapee and ends at once: the escapee is orphaned.
    let (group, line) = spawn_script("(setsid sleep 1000 & echo $!); exec sleep 1000").await;
    let escaped: i32 = line.trim().parse().unwrap();
    assert!(
        wait_parent(escaped, me()).await,
        "the orphan was not re-parented to this process (the subreaper) but to {:?}",
        parent_of(escaped)
    );
    group.shutdown(Duration::from_secs(5)).await;
    assert!(
        wait_reaped(escaped).await,
        "the adopted orphan survived the group's shutdown, or stayed a zombie"
    );
}

#[tokio::test]
async fn an_escapee_left_by_a_leader_that_exited_dies_when_the_group_is_dropped() {
    let (group, line) = spawn_script("setsid sleep 1000 >/dev/null 2>&1 & echo $!").await;
    let escaped: i32 = line.trim().parse().unwrap();
    group.wait_timeout(PATIENCE).await.unwrap();
    assert!(wait_parent(escaped, me()).await, "not adopted");
    assert!(!gone(escaped));
    drop(group);
    assert!(wait_reaped(escaped).await, "the escapee outlived its group");
}

#[tokio::test]
async fn an_adopted_process_that_dies_on_its_own_is_reaped() {
    let (group, line) = spawn_script("setsid sleep 1000 >/dev/null 2>&1 & echo $!").await;
    let escaped: i32 = line.trim().parse().unwrap();
    group.wait_timeout(PATIENCE).await.unwrap();
    assert!(wait_parent(escaped, me()).await, "not adopted");
    // Make sure the reaper has looked since the adoption: another group's escapee dies and is
    // reaped (by a pass that started after it was killed).
    let (other, line) = spawn_script("setsid sleep 1000 & echo $!; wait").await;
    let other_escaped: i32 = line.trim().parse().unwrap();
    drop(other);
    assert!(wait_reaped(other_escaped).await);
    // It dies while its group still exists: the reaper, woken by SIGCHLD, reaps it.
    kill(Pid::from_raw(escaped), Signal::SIGTERM).unwrap();
    assert!(
        wait_reaped(escaped).await,
        "the dead adopted process stayed a zombie: {:?}",
        std::fs::read_to_string(format!("/proc/{escaped}/stat"))
    );
    drop(group);
}

#[tokio::test]
async fn the_hosts_own_children_keep_their_exit_statuses() {
    // A child this program spawned itself, outside agent-process, in a group of its own.
    let mut own = std::process::Command::new("sh");
    own.args(["-c", "exit 7"]);
    std::os::unix::process::CommandExt::process_group(&mut own, 0);
    let mut own = own.spawn().unwrap();
    let own_pid = i32::try_from(own.id()).unwrap();
    // Wait until it is a zombie, then make the reaper run (a group with an escapee dies).
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !gone(own_pid) {
        assert!(tokio::time::Instant::now() < deadline, "sh never exited");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (group, line) = spawn_script("setsid sleep 1000 & echo $!; wait").await;
    let escaped: i32 = line.trim().parse().unwrap();
    drop(group);
    assert!(
        wait_reaped(escaped).await,
        "{:?} (this process: {})",
        std::fs::read_to_string(format!("/proc/{escaped}/stat")),
        me()
    );
    let status = own
        .wait()
        .expect("the host's child was not reaped by someone else");
    assert_eq!(status.code(), Some(7));
}

#[tokio::test]
async fn tokio_children_spawned_through_groups_keep_their_statuses() {
    // Several leaders exiting while escapees are reaped: each status still reaches its group.
    let (escaping, line) = spawn_script("setsid sleep 1000 & echo $!; wait").await;
    let escaped: i32 = line.trim().parse().unwrap();
    let mut groups = Vec::new();
    for code in 1..=5 {
        let mut command = tokio::process::Command::new("sh");
        command.args(["-c", &format!("exit {code}")]);
        groups.push((
            code,
            ProcessGroup::spawn("exit", &mut command).unwrap().group,
        ));
    }
    drop(escaping);
    for (code, group) in groups {
        let status = group.wait_timeout(PATIENCE).await.unwrap().expect("status");
        assert_eq!(status.code(), Some(code));
    }
    assert!(wait_reaped(escaped).await);
}
