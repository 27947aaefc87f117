//! Which process runs a run, and whether it is still alive: a run whose process died is shown
//! as interrupted.

use std::sync::OnceLock;

/// This process as a run's owner: `<pid>:<start time>` (the start time, in clock ticks after
/// boot from `/proc/<pid>/stat`, tells a live process from a later one that got the same pid).
pub(crate) fn this_process() -> &'static str {
    static OWNER: OnceLock<String> = OnceLock::new();
    OWNER.get_or_init(|| {
        let pid = std::process::id();
        format!("{pid}:{}", start_time(pid).unwrap_or_default())
    })
}

/// Whether the process `owner` names is still running. Where `/proc` cannot be read (not
/// Linux), only this process is known alive and every other owner is taken for dead, unless
/// this process cannot read its own entry either: then every owner is taken for alive, so that
/// no live run is ever marked interrupted.
pub(crate) fn is_alive(owner: &str) -> bool {
    if owner == this_process() {
        return true;
    }
    let Some((pid, started)) = owner.split_once(':') else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    if start_time(std::process::id()).is_none() {
        return true;
    }
    start_time(pid).is_some_and(|now| now.to_string() == started)
}

/// Field 22 of `/proc/<pid>/stat` (after the parenthesised command name); `None` for a process
/// that does not exist or is a zombie.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // After the command: state (field 3) ... starttime (field 22).
    if fields.first() == Some(&"Z") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_dead_or_reused_pid_is_not() {
        assert!(is_alive(this_process()));
        let pid = std::process::id();
        assert!(!is_alive(&format!("{pid}:1")), "same pid, other start time");
        assert!(!is_alive("4194305:1"), "beyond pid_max");
        assert!(!is_alive("garbage"));
    }
}
