//! What the process table says of other processes, read from `/proc`: for diagnostics, and for
//! tests that check that what a tool started is gone.

use crate::descendants::{descendants, stat, table};

/// Whether `pid` runs: it exists and is not a zombie (dead, waiting to be reaped).
#[must_use]
pub fn is_running(pid: i32) -> bool {
    stat(pid).is_some_and(|stat| !stat.zombie)
}

/// The start time of `pid` (clock ticks after boot), while it exists: with the pid, it names a
/// process for good (a reused pid has another start time).
#[must_use]
pub fn start_time(pid: i32) -> Option<u64> {
    stat(pid).map(|stat| stat.start)
}

/// The parent of `pid`, while `pid` exists.
#[must_use]
pub fn parent_of(pid: i32) -> Option<i32> {
    stat(pid).map(|stat| stat.ppid)
}

/// The running processes whose command line (its arguments joined by spaces) contains
/// `needle`, in pid order.
#[must_use]
pub fn processes_with(needle: &str) -> Vec<i32> {
    table()
        .into_iter()
        .filter(|(_, stat)| !stat.zombie)
        .map(|(pid, _)| pid)
        .filter(|&pid| command_line(pid).is_some_and(|line| line.contains(needle)))
        .collect()
}

/// The command line of `pid` (its arguments joined by spaces), while it exists.
#[must_use]
pub fn command_line(pid: i32) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(String::from_utf8_lossy(&cmdline).replace('\0', " "))
}

/// The running descendants of `root` (its children, theirs, ...; zombies left out), in pid
/// order: what a process started, and what was re-parented to it as a subreaper.
#[must_use]
pub fn descendants_of(root: i32) -> Vec<i32> {
    descendants(&table(), root).into_iter().collect()
}

/// The running members of the process group `pgid` (zombies left out), in pid order.
#[must_use]
pub fn group_members(pgid: i32) -> Vec<i32> {
    table()
        .into_iter()
        .filter(|(_, stat)| !stat.zombie && stat.pgid == pgid)
        .map(|(pid, _)| pid)
        .collect()
}

/// The pid of `inner` as this process sees it, when `inner` is a pid inside a PID namespace
/// (a confined tool's `$$`) of a descendant of `ancestor`; `inner` itself when it is a
/// descendant of `ancestor` in this namespace. `None` when no such process runs.
#[must_use]
pub fn host_pid(inner: i32, ancestor: i32) -> Option<i32> {
    let descends = |mut pid: i32| {
        for _ in 0..4096 {
            match parent_of(pid) {
                Some(parent) if parent == ancestor => return true,
                Some(parent) if parent > 1 => pid = parent,
                _ => return false,
            }
        }
        false
    };
    table()
        .into_iter()
        .filter(|(_, stat)| !stat.zombie)
        .map(|(pid, _)| pid)
        .find(|&pid| {
            let nested = std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|status| {
                    let line = status.lines().find(|line| line.starts_with("NSpid:"))?;
                    line.split_whitespace().last()?.parse::<i32>().ok()
                });
            nested == Some(inner) && descends(pid)
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)]

    use super::*;

    #[test]
    fn this_process_runs_has_a_parent_and_is_found_by_its_command_line() {
        let me = i32::try_from(std::process::id()).unwrap_or_default();
        assert!(is_running(me));
        assert_eq!(
            parent_of(me),
            Some(i32::try_from(std::os::unix::process::parent_id()).unwrap_or_default())
        );
        let name = std::env::args().next().unwrap_or_default();
        assert!(processes_with(&name).contains(&me), "{name}");
        assert!(!is_running(i32::MAX));
        assert_eq!(parent_of(i32::MAX), None);
        assert!(command_line(me).is_some_and(|line| line.starts_with(&name)));
        assert_eq!(command_line(i32::MAX), None);
    }

    #[test]
    fn a_child_is_a_descendant_and_a_member_of_its_group() {
        use std::os::unix::process::CommandExt;
        let me = i32::try_from(std::process::id()).unwrap_or_default();
        let mut child = std::process::Command::new("sleep")
            .arg("300")
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start sleep: {e}"));
        let pid = i32::try_from(child.id()).unwrap_or_default();
        assert!(descendants_of(me).contains(&pid));
        assert_eq!(group_members(pid), vec![pid], "the leader of its own group");
        assert!(!descendants_of(pid).contains(&me));
        let _ = child.kill();
        let _ = child.wait();
        assert!(!descendants_of(me).contains(&pid), "a reaped child is gone");
        assert!(group_members(pid).is_empty());
    }
}
