//! Every descendant of this process, found through `/proc`: for the emergency path, which must
//! also reach processes that left their group (a `setsid`, or a tool that put its own children
//! in groups of their own, like an MCP stdio server running our bash tool).
//!
//! Freeze, then kill: the descendants found are sent SIGSTOP, the tree is walked again until no
//! new one appears (a stopped process cannot fork), and only then are they all sent SIGKILL. A
//! process killed first would orphan its children to init, out of reach of the walk.

use std::collections::{BTreeMap, BTreeSet};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// How many times the tree is walked again for descendants forked while it was being stopped.
const ROUNDS: usize = 16;

/// The parent of every live (not zombie) process, from `/proc/*/stat`.
fn parents() -> BTreeMap<i32, i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // After the command, which may hold spaces and parentheses: state, ppid, ...
            let (_, rest) = stat.rsplit_once(')')?;
            let mut fields = rest.split_whitespace();
            let state = fields.next()?;
            let ppid = fields.next()?.parse().ok()?;
            (state != "Z").then_some((pid, ppid))
        })
        .collect()
}

/// The live descendants of `root`.
fn descendants(root: i32) -> BTreeSet<i32> {
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for (pid, ppid) in parents() {
        children.entry(ppid).or_default().push(pid);
    }
    let mut found = BTreeSet::new();
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        for &child in children.get(&pid).map(Vec::as_slice).unwrap_or_default() {
            if found.insert(child) {
                todo.push(child);
            }
        }
    }
    found
}

/// Sends SIGSTOP to every descendant of this process, walking the tree again until no new one
/// appears; returns the stopped ones.
pub(crate) fn stop_descendants() -> BTreeSet<i32> {
    let Ok(me) = i32::try_from(std::process::id()) else {
        return BTreeSet::new();
    };
    let mut stopped = BTreeSet::new();
    for _ in 0..ROUNDS {
        let fresh: Vec<i32> = descendants(me)
            .into_iter()
            .filter(|pid| !stopped.contains(pid))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for pid in fresh {
            // ESRCH: it ended meanwhile; EPERM: not ours to stop (it changed credentials).
            let _ = kill(Pid::from_raw(pid), Signal::SIGSTOP);
            stopped.insert(pid);
        }
    }
    stopped
}

/// Sends SIGKILL to `pids`; returns how many received it.
pub(crate) fn kill_all(pids: &BTreeSet<i32>) -> usize {
    pids.iter()
        .filter(|pid| kill(Pid::from_raw(**pid), Signal::SIGKILL).is_ok())
        .count()
}
