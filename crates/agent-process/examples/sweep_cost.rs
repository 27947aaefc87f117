//! What the escape sweep costs: the time to kill a group for good (drop), which walks `/proc`
//! for the processes that left it, and the time from a leader's exit to its status (the reaper
//! pass of the reap task). Run with
//! `cargo run --release -p openmanus-agent-process --example sweep_cost`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use agent_process::ProcessGroup;

const ROUNDS: u32 = 50;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let processes = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count();
    let mut dropping = Duration::ZERO;
    let mut exiting = Duration::ZERO;
    for _ in 0..ROUNDS {
        let mut command = tokio::process::Command::new("sleep");
        command.arg("1000");
        let group = ProcessGroup::spawn("sleep", &mut command).unwrap().group;
        let watch = group.exit_watch();
        let started = Instant::now();
        drop(group);
        dropping += started.elapsed();
        let mut watch = watch;
        watch.wait().await;

        let mut command = tokio::process::Command::new("true");
        let group = ProcessGroup::spawn("true", &mut command).unwrap().group;
        let started = Instant::now();
        group.wait().await;
        exiting += started.elapsed();
    }
    println!(
        "{processes} processes on the machine; kill for good (drop, with the sweep): {:?} a group; spawn of `true` to its reaped status (with the reaper pass): {:?}",
        dropping / ROUNDS,
        exiting / ROUNDS
    );
}
