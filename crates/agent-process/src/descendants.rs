//! The process table, read from `/proc`, and the descendants of a process in it: for the
//! emergency path and the escape sweep, which must also reach processes that left their group
//! (a `setsid`, or a tool that put its own children in groups of their own, like an MCP stdio
//! server running our bash tool).
//!
//! Freeze, then kill: the descendants found are sent SIGSTOP, the tree is walked again until no
//! new one appears (a stopped process cannot fork), and only then are they all sent SIGKILL. A
//! process killed first would orphan its children, out of reach of the walk.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// How many times the tree is walked again for descendants forked while it was being stopped.
pub(crate) const ROUNDS: usize = 16;

/// One line of the process table: what `/proc/<pid>/stat` says of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    /// The parent's pid.
    pub ppid: i32,
    /// The process group id.
    pub pgid: i32,
    /// Whether it is a zombie (dead, waiting for its parent to reap it), or dead (`X`, being
    /// torn down).
    pub zombie: bool,
    /// Whether it is stopped (`T`, or `t` under a tracer).
    pub stopped: bool,
    /// Its start time (clock ticks after boot): with the pid, names the process for good.
    pub start: u64,
}

/// What `/proc/<pid>/stat` says of `pid`, if it exists.
pub(crate) fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command, which may hold spaces and parentheses: state, ppid, pgrp, session,
    // tty_nr, tpgid, flags, minflt, cminflt, majflt, cmajflt, utime, stime, cutime, cstime,
    // priority, nice, num_threads, itrealvalue, starttime, ...
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().take(20).collect();
    Some(Stat {
        zombie: matches!(*fields.first()?, "Z" | "X"),
        stopped: matches!(*fields.first()?, "T" | "t"),
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Every process visible in `/proc`, zombies included.
pub(crate) fn table() -> BTreeMap<i32, Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .collect()
}

/// The live (not zombie) descendants of `root` in `table`.
pub(crate) fn descendants(table: &BTreeMap<i32, Stat>, root: i32) -> BTreeSet<i32> {
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for (pid, stat) in table {
        if !stat.zombie {
            children.entry(stat.ppid).or_default().push(*pid);
        }
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

/// This process's id.
pub(crate) fn me() -> i32 {
    nix::unistd::getpid().as_raw()
}

/// Sends SIGSTOP to the descendants of this process that `choose` picks (given the table and
/// the live descendants, it returns the ones it wants), walking the tree again until no new one
/// appears; returns the stopped ones, with their stat.
pub(crate) fn stop_descendants_where(
    mut choose: impl FnMut(&BTreeMap<i32, Stat>, BTreeSet<i32>) -> BTreeSet<i32>,
) -> BTreeMap<i32, Stat> {
    let me = me();
    let mut stopped = BTreeMap::new();
    for _ in 0..ROUNDS {
        let table = table();
        let fresh: Vec<(i32, Stat)> = choose(&table, descendants(&table, me))
            .into_iter()
            .filter(|pid| !stopped.contains_key(pid))
            .filter_map(|pid| Some((pid, *table.get(&pid)?)))
            .collect();
        if fresh.is_empty() {
            break;
        }
        let mut signalled = Vec::with_capacity(fresh.len());
        for (pid, stat) in fresh {
            // ESRCH: it ended meanwhile; EPERM: not ours to stop (it changed credentials).
            if kill(Pid::from_raw(pid), Signal::SIGSTOP).is_ok() {
                signalled.push(pid);
            }
            stopped.insert(pid, stat);
        }
        wait_stopped(signalled);
    }
    stopped
}

/// How long [`wait_stopped`] waits, in all, for the processes of one round to stop.
const STOP_PATIENCE: Duration = Duration::from_millis(200);

/// Waits (at most [`STOP_PATIENCE`]) until each of `pids` is stopped, dead or gone. A SIGSTOP
/// is only pending until its process next leaves the kernel: a process in the middle of a
/// `fork` or `setsid` finishes it first, so the walk that follows must not look before then (it
/// would miss the child, or read a group the process is leaving).
fn wait_stopped(pids: Vec<i32>) {
    let deadline = Instant::now() + STOP_PATIENCE;
    for pid in pids {
        while stat(pid).is_some_and(|s| !s.stopped && !s.zombie) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// Sends SIGKILL to `pids`; returns how many received it.
pub(crate) fn kill_all<'a>(pids: impl IntoIterator<Item = &'a i32>) -> usize {
    pids.into_iter()
        .filter(|pid| kill(Pid::from_raw(**pid), Signal::SIGKILL).is_ok())
        .count()
}
