//! The one emergency shutdown: every registered process group killed, every hook run.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tracing::{debug, warn};

use std::collections::{BTreeMap, BTreeSet};

use crate::descendants::{Stat, stop_descendants_where};
use crate::hooks::hooks;
use crate::registry::entries;

/// What [`emergency_shutdown`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EmergencyReport {
    /// Process groups that were sent SIGKILL and had at least one process to receive it.
    pub groups_killed: usize,
    /// Descendant processes of this process that were sent SIGKILL (in a registered group or
    /// not).
    pub descendants_killed: usize,
    /// Emergency hooks run.
    pub hooks_run: usize,
}

/// Kills every registered process group and every descendant of this process at once (SIGKILL,
/// no grace), then runs every registered emergency hook, in registration order; returns what it
/// did.
///
/// Descendants are frozen first (SIGSTOP, the tree walked again until no new one appears), then
/// the groups and the frozen processes are killed: so a process that left its group (`setsid`,
/// or the bash of an MCP stdio server, in a group of that server's making) dies too, instead of
/// being orphaned to init when its parent is killed.
///
/// For a program about to exit without running destructors (`std::process::exit` after a second
/// Ctrl-C), where the owners' own kill-on-drop never happens. It is synchronous and takes only
/// short-held locks, so it can run from a signal-handling task (`tokio::signal`) or thread; it
/// is not meant for a raw async-signal handler. A hook that panics is reported and the others
/// still run.
pub fn emergency_shutdown() -> EmergencyReport {
    let mut report = EmergencyReport::default();
    let frozen = stop_descendants();
    let mut killed_groups = BTreeSet::new();
    for entry in entries() {
        if entry.signal(Signal::SIGKILL) {
            report.groups_killed += 1;
            killed_groups.insert(entry.pgid());
            debug!(
                pgid = entry.pgid(),
                name = entry.name(),
                "emergency: group killed"
            );
        }
    }
    // Every frozen process is sent its own SIGKILL (one that left its group since the walk read
    // it escaped the group's). One that is already gone was in a group just killed (and reaped
    // since): it counts as killed by its group.
    report.descendants_killed = frozen
        .iter()
        .filter(|(pid, stat)| {
            kill(Pid::from_raw(**pid), Signal::SIGKILL).is_ok()
                || killed_groups.contains(&stat.pgid)
        })
        .count();
    for (name, hook) in hooks() {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook()));
        match ran {
            Ok(()) => debug!(%name, "emergency hook ran"),
            Err(_) => warn!(%name, "emergency hook panicked"),
        }
        report.hooks_run += 1;
    }
    report
}

/// Sends SIGSTOP to every descendant of this process, walking the tree again until no new one
/// appears; returns the stopped ones. The keeper ([`crate::keeper`]) is left alone: it must
/// outlive this process.
fn stop_descendants() -> BTreeMap<i32, Stat> {
    let keeper = crate::keeper::keeper_pid();
    stop_descendants_where(|_, mut all| {
        if let Some(keeper) = keeper {
            all.remove(&keeper);
        }
        all
    })
}
