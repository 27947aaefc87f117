//! Which process runs a run, and whether it is still alive: a run whose process died is shown
//! as interrupted.
//!
//! An owner is `<pid>:<start time>@<host>`, where `<host>` names the machine's boot and the
//! process's pid namespace (`<boot id>/<pid namespace>`): a process can tell from `/proc`
//! whether another one *of its own host* is alive, and nothing about one elsewhere (another
//! machine or container sharing a PostgreSQL store). Runs of other hosts carry a lease their
//! process renews ([`LEASE`]); one whose lease ran out is taken for dead. Owners written before
//! hosts were named (`<pid>:<start time>`) are taken for this host's.

use std::sync::OnceLock;
use std::time::Duration;

/// How long a run's lease lasts past its last renewal.
pub const LEASE: Duration = Duration::from_secs(30);

/// How often a process renews the leases of its running runs.
pub const RENEW_EVERY: Duration = Duration::from_secs(10);

/// What can be told of an owner from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Liveness {
    /// Running (this process, or one of this host that `/proc` shows).
    Alive,
    /// Gone (a process of this host that `/proc` no longer shows, or an unreadable owner).
    Dead,
    /// A process of another host: only its lease tells.
    Elsewhere,
}

/// This process as a run's owner: `<pid>:<start time>@<host>` (the start time, in clock ticks
/// after boot from `/proc/<pid>/stat`, tells a live process from a later one that got the same
/// pid).
pub(crate) fn this_process() -> &'static str {
    static OWNER: OnceLock<String> = OnceLock::new();
    OWNER.get_or_init(|| {
        let pid = std::process::id();
        format!("{pid}:{}@{}", start_time(pid).unwrap_or_default(), host())
    })
}

/// This host: the boot's id and the pid namespace (`unknown` where `/proc` does not say).
fn host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|id| id.trim().to_owned())
            .unwrap_or_else(|_| "unknown".to_owned());
        let namespace = std::fs::read_link("/proc/self/ns/pid")
            .map(|link| link.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "unknown".to_owned());
        format!("{boot}/{namespace}")
    })
}

/// Whether the process `owner` names is still running, as far as this process can tell. Where
/// `/proc` cannot be read (not Linux), only this process is known alive and every other owner
/// of this host is taken for dead, unless this process cannot read its own entry either: then
/// every owner is taken for alive, so that no live run is ever marked interrupted.
pub(crate) fn liveness(owner: &str) -> Liveness {
    if owner == this_process() {
        return Liveness::Alive;
    }
    let (process, owner_host) = match owner.split_once('@') {
        Some((process, owner_host)) => (process, Some(owner_host)),
        None => (owner, None),
    };
    if owner_host.is_some_and(|owner_host| owner_host != host()) {
        return Liveness::Elsewhere;
    }
    let Some((pid, started)) = process.split_once(':') else {
        return Liveness::Dead;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return Liveness::Dead;
    };
    if start_time(std::process::id()).is_none() {
        return Liveness::Alive;
    }
    if start_time(pid).is_some_and(|now| now.to_string() == started) {
        Liveness::Alive
    } else {
        Liveness::Dead
    }
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
        assert_eq!(liveness(this_process()), Liveness::Alive);
        let pid = std::process::id();
        let started = start_time(pid).unwrap_or_default();
        // Written before hosts were named: this host's.
        assert_eq!(liveness(&format!("{pid}:{started}")), Liveness::Alive);
        assert_eq!(liveness(&format!("{pid}:1")), Liveness::Dead, "other start");
        assert_eq!(liveness("4194305:1"), Liveness::Dead, "beyond pid_max");
        assert_eq!(
            liveness(&format!("4194305:1@{}", host())),
            Liveness::Dead,
            "this host, named"
        );
        assert_eq!(liveness("garbage"), Liveness::Dead);
        assert_eq!(
            liveness(&format!("{pid}:{started}@another-boot/pid:[1]")),
            Liveness::Elsewhere,
            "the same pid on another host tells nothing"
        );
    }
}
