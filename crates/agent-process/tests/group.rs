//! A process group's life: killed on drop and on shutdown (TERM, grace, KILL), grandchildren
//! included, unregistered once reaped.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use agent_process::{ProcessGroup, Signal, live_process_groups};
use common::{PATIENCE, gone, spawn_script, wait_gone};

#[tokio::test]
async fn dropping_the_group_kills_the_leader_and_its_grandchild() {
    let (group, line) = spawn_script("sleep 1000 & echo $!; wait").await;
    let grandchild: i32 = line.trim().parse().unwrap();
    let leader = group.pgid();
    assert!(live_process_groups().contains(&leader));
    assert!(!gone(grandchild) && !gone(leader));
    drop(group);
    assert!(wait_gone(leader).await, "the leader survived the drop");
    assert!(
        wait_gone(grandchild).await,
        "the grandchild survived the drop"
    );
    assert!(!live_process_groups().contains(&leader));
}

#[tokio::test]
async fn shutdown_ends_a_child_that_honours_term_with_term() {
    let (group, line) = spawn_script("echo ready; exec sleep 1000").await;
    assert_eq!(line, "ready");
    let status = group.shutdown(PATIENCE).await.expect("reaped");
    assert_eq!(status.signal(), Some(Signal::SIGTERM as i32));
    assert!(!live_process_groups().contains(&group.pgid()));
}

#[tokio::test]
async fn shutdown_kills_a_child_that_ignores_term_and_its_grandchild() {
    // An ignored signal stays ignored across fork and exec: the grandchild ignores TERM too.
    let (group, line) = spawn_script("trap '' TERM; sleep 1000 & echo $!; wait; wait; wait").await;
    let grandchild: i32 = line.trim().parse().unwrap();
    let status = group
        .shutdown(Duration::from_secs(1))
        .await
        .expect("reaped");
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    assert!(
        wait_gone(grandchild).await,
        "the grandchild survived the shutdown"
    );
    assert!(!live_process_groups().contains(&group.pgid()));
}

#[tokio::test]
async fn a_leader_that_exits_alone_is_reaped_and_unregistered() {
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", "exit 3"]);
    let group = ProcessGroup::spawn("exit 3", &mut command).unwrap().group;
    let status = group.wait_timeout(PATIENCE).await.unwrap().expect("status");
    assert_eq!(status.code(), Some(3));
    assert_eq!(group.exit_status().and_then(|s| s.code()), Some(3));
    assert!(group.has_exited());
    assert!(!live_process_groups().contains(&group.pgid()));
    // Never signalled again: its id may belong to someone else by now.
    assert!(!group.signal(Signal::SIGKILL));
}

#[tokio::test]
async fn a_group_outliving_its_leader_stays_registered_until_dropped() {
    let (group, line) = spawn_script("sleep 1000 >/dev/null & echo $!").await;
    let grandchild: i32 = line.trim().parse().unwrap();
    group.wait_timeout(PATIENCE).await.unwrap();
    assert!(!gone(grandchild));
    assert!(live_process_groups().contains(&group.pgid()));
    let signaller = group.signaller();
    drop(group);
    assert!(
        wait_gone(grandchild).await,
        "the background process survived the drop"
    );
    assert!(
        !signaller.signal(Signal::SIGTERM),
        "a killed group is signalled again"
    );
}

#[tokio::test]
async fn a_program_that_cannot_start_is_an_error() {
    let mut command = tokio::process::Command::new("/nonexistent/program");
    let error = ProcessGroup::spawn("nothing", &mut command).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
}
