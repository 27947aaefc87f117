//! The emergency shutdown, alone in its test binary: it kills every registered group of the
//! process, which would be the other tests' groups too.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_process::{
    emergency_shutdown, live_process_groups, register_emergency_hook, unregister_emergency_hook,
};
use common::{gone, spawn_script, wait_gone};

#[tokio::test]
async fn emergency_shutdown_kills_every_group_and_runs_the_hooks() {
    let (first, line) = spawn_script("sleep 1000 & echo $!; wait").await;
    let grandchild: i32 = line.trim().parse().unwrap();
    let (second, ready) = spawn_script("trap '' TERM; echo ready; while :; do sleep 1; done").await;
    assert_eq!(ready, "ready");
    // A process that left its group (a new session) is out of reach of killpg.
    let (third, line) = spawn_script("setsid sleep 1000 & echo $!; wait").await;
    let escaped: i32 = line.trim().parse().unwrap();
    // A child nobody registered.
    let mut unregistered = tokio::process::Command::new("sleep")
        .arg("1000")
        .spawn()
        .unwrap();
    let stray = i32::try_from(unregistered.id().unwrap()).unwrap();
    let leaders = [first.pgid(), second.pgid(), third.pgid()];

    let ran = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&ran);
    let _hook = register_emergency_hook("count", move || {
        counted.fetch_add(1, Ordering::SeqCst);
    });
    let removed = register_emergency_hook("removed", || panic!("an unregistered hook ran"));
    assert!(unregister_emergency_hook(removed));
    assert!(!unregister_emergency_hook(removed));
    let _panicking = register_emergency_hook("panics", || panic!("a hook that fails"));
    let after = Arc::new(AtomicUsize::new(0));
    let after_counted = Arc::clone(&after);
    let _last = register_emergency_hook("after the panic", move || {
        after_counted.fetch_add(1, Ordering::SeqCst);
    });

    let report = emergency_shutdown();
    assert_eq!(report.groups_killed, 3);
    // The three leaders, the grandchildren of the first and third, the stray; the second
    // group's `sleep 1` may be between two runs.
    assert!(report.descendants_killed >= 6, "{report:?}");
    assert_eq!(report.hooks_run, 3);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(
        after.load(Ordering::SeqCst),
        1,
        "a panicking hook stopped the others"
    );
    for pid in leaders.into_iter().chain([grandchild, escaped, stray]) {
        assert!(
            wait_gone(pid).await,
            "{pid} survived the emergency shutdown"
        );
    }
    let status = first.wait().await.expect("status");
    assert!(!status.success());
    second.wait().await;
    third.wait().await;
    unregistered.wait().await.unwrap();
    for leader in leaders {
        assert!(!live_process_groups().contains(&leader) || gone(leader));
    }
}
