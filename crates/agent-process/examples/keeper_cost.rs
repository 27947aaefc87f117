//! What the keeper costs ([`agent_process::containment`]): the first spawn of a process, which
//! starts the keeper and moves the process into its cgroup, against the spawns after it (which
//! the keeper leaves alone: children inherit the cgroup at fork). Run it both ways:
//!
//! ```text
//! cargo run --release -p openmanus-agent-process --example keeper_cost
//! OPENMANUS_PROCESS_CGROUP=off cargo run --release -p openmanus-agent-process --example keeper_cost
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use agent_process::ProcessGroup;

const ROUNDS: u32 = 200;

async fn spawn_true() -> Duration {
    let mut command = tokio::process::Command::new("true");
    let started = Instant::now();
    let group = ProcessGroup::spawn("true", &mut command).unwrap().group;
    let spent = started.elapsed();
    group.wait().await;
    spent
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let first = spawn_true().await;
    let mut total = Duration::ZERO;
    let mut each: Vec<Duration> = Vec::new();
    for _ in 0..ROUNDS {
        let spent = spawn_true().await;
        total += spent;
        each.push(spent);
    }
    each.sort();
    println!(
        "containment {:?}: first spawn (keeper started) {first:?}; later spawns: mean {:?}, median {:?}, p99 {:?} ({ROUNDS})",
        agent_process::containment().unwrap(),
        total / ROUNDS,
        each[each.len() / 2],
        each[each.len() * 99 / 100],
    );
}
