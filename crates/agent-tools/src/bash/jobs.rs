//! The processes a shell's commands left behind: what a cancelled command started in the
//! background (`sleep 300 & wait` interrupted leaves the `sleep`), found in `/proc`.

use std::collections::HashMap;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tracing::debug;

/// Kills (SIGKILL) every process of `shell`'s process group but the shell itself, and every
/// descendant of the shell that left the group (`setsid`, a job of its own); returns how many
/// were killed. `shell` is the group's leader, alive (so its pid names no other process).
pub(super) fn kill_left_behind(shell: i32) -> usize {
    let mut killed = 0;
    for pid in left_behind(shell) {
        match kill(Pid::from_raw(pid), Signal::SIGKILL) {
            Ok(()) => killed += 1,
            Err(error) => debug!(pid, %error, "a process left by a command could not be killed"),
        }
    }
    killed
}

/// The processes [`kill_left_behind`] kills.
fn left_behind(shell: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // pid → (parent, process group), for every process readable now.
    let mut table = HashMap::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Some(ids) = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|stat| parent_and_group(&stat))
        {
            table.insert(pid, ids);
        }
    }
    let descends = |mut pid: i32| {
        // A chain longer than the table would be a loop; stop there.
        for _ in 0..table.len() {
            match table.get(&pid) {
                Some(&(parent, _)) if parent == shell => return true,
                Some(&(parent, _)) if parent > 1 => pid = parent,
                _ => return false,
            }
        }
        false
    };
    table
        .iter()
        .filter(|(pid, (_, group))| **pid != shell && (*group == shell || descends(**pid)))
        .map(|(pid, _)| *pid)
        .collect()
}

/// Fields 4 and 5 (parent, process group) of a `/proc/<pid>/stat` line; the command name in
/// field 2 may hold spaces and parentheses, so the fields are counted after its last `)`.
fn parent_and_group(stat: &str) -> Option<(i32, i32)> {
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let _state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some((parent, group))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_parent_and_group() {
        assert_eq!(
            parent_and_group("4242 (sleep) S 4200 4200 4200 0 -1 4194560 ..."),
            Some((4200, 4200))
        );
        assert_eq!(
            parent_and_group("7 (a) b (c)) R 1 7 7 0"),
            Some((1, 7)),
            "a name with spaces and parentheses"
        );
        assert_eq!(parent_and_group("garbage"), None);
    }
}
