//! A host killed with SIGKILL leaves no tool behind: a real host process (this test binary run
//! again as `host`) starts a bash that puts a child in a session of its own (`setsid`) and one
//! in the background, and one that cleared its environment; the host is killed with SIGKILL,
//! and the keeper kills them all (through the cgroup, or the group marker where there is none).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_process::{CGROUP_SWITCH, Containment, ProcessGroup, containment};

/// Set in the host's environment: the `host` test then plays the host instead of returning.
const HOST: &str = "AGENT_PROCESS_TEST_HOST";

/// Generous: the machine is loaded.
const PATIENCE: Duration = Duration::from_secs(90);

/// The host: spawns the tool and prints what it started, then waits to be killed.
#[test]
fn host() {
    let Some(clear) = std::env::var_os(HOST) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // A session of its own, a plain background child, and (when asked) one with an empty
        // environment (the marker gone): each prints its pid.
        let mut script = String::from(
            "setsid sh -c 'echo @@ setsid $$; exec sleep 300' &\n\
             sh -c 'echo @@ background $$; exec sleep 300' &\n",
        );
        if clear == "clear" {
            script.push_str("env -i /bin/sh -c 'echo @@ cleared $$; exec sleep 300' &\n");
        }
        script.push_str("wait\n");
        let mut command = tokio::process::Command::new("bash");
        command
            .arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::inherit());
        let spawned = ProcessGroup::spawn("tool", &mut command).unwrap();
        println!("\n@@ containment {:?}", containment().unwrap());
        println!("@@ leader {}", spawned.group.pid());
        // Held until the SIGKILL: no clean-up of ours ever runs.
        std::mem::forget(spawned);
        std::future::pending::<()>().await;
    });
}

/// What the host printed, once it printed `want` pid lines.
struct Host {
    child: std::process::Child,
    containment: String,
    pids: Vec<(String, i32)>,
}

fn start_host(mode: &str, cgroup: bool, want: usize) -> Host {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "host", "--nocapture", "--test-threads", "1"])
        .env(HOST, mode)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if !cgroup {
        command.env(CGROUP_SWITCH, "off");
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    let mut containment = String::new();
    let mut pids = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while pids.len() < want + 1 || containment.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = receiver
            .recv_timeout(left)
            .expect("the host printed its processes in time");
        let Some((_, line)) = line.split_once("@@ ") else {
            continue;
        };
        if let Some(rest) = line.strip_prefix("containment ") {
            containment = rest.to_owned();
        } else if let Some((what, pid)) = line.split_once(' ')
            && let Ok(pid) = pid.trim().parse::<i32>()
        {
            pids.push((what.to_owned(), pid));
        }
    }
    Host {
        child,
        containment,
        pids,
    }
}

fn wait_all_gone(pids: &[(String, i32)]) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let alive: Vec<&(String, i32)> = pids.iter().filter(|(_, p)| !common::gone(*p)).collect();
        if alive.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still alive {PATIENCE:?} after the host's SIGKILL: {alive:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn sigkill(child: &mut std::process::Child) {
    let pid = i32::try_from(child.id()).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    child.wait().unwrap();
}

/// Whether this machine lets a process make a cgroup of its own (this test process spawns one
/// group to find out: the keeper starts with the first spawn).
fn cgroup_here() -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut command = tokio::process::Command::new("true");
        let group = ProcessGroup::spawn("probe", &mut command).unwrap().group;
        group.wait().await;
    });
    matches!(containment(), Some(Containment::Cgroup(_)))
}

#[test]
fn a_host_killed_with_sigkill_leaves_no_tool_in_its_cgroup() {
    if std::env::var_os(HOST).is_some() {
        return;
    }
    if !cgroup_here() {
        println!("no writable cgroup v2 here: the cgroup containment is not tested");
        return;
    }
    let mut host = start_host("clear", true, 3);
    assert!(
        host.containment.starts_with("Cgroup("),
        "{}",
        host.containment
    );
    let dir = host
        .containment
        .trim_start_matches("Cgroup(\"")
        .trim_end_matches("\")")
        .to_owned();
    assert!(std::path::Path::new(&dir).join("cgroup.procs").exists());
    for (what, pid) in &host.pids {
        assert!(!common::gone(*pid), "{what} {pid} runs before the kill");
    }
    sigkill(&mut host.child);
    wait_all_gone(&host.pids);
    // The keeper removes the cgroup once it is empty.
    let deadline = Instant::now() + PATIENCE;
    while std::path::Path::new(&dir).exists() {
        assert!(Instant::now() < deadline, "{dir} is still there");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn without_a_cgroup_the_marker_still_reaches_setsid_and_background_children() {
    if std::env::var_os(HOST).is_some() {
        return;
    }
    let mut host = start_host("keep", false, 2);
    assert_eq!(host.containment, "Marker");
    for (what, pid) in &host.pids {
        assert!(!common::gone(*pid), "{what} {pid} runs before the kill");
    }
    sigkill(&mut host.child);
    wait_all_gone(&host.pids);
}
