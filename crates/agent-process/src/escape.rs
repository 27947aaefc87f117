//! The escape sweep: when a group is killed for good, the processes that left it die with it.
//!
//! A group's processes are found in this process's tree (kept whole by the subreaper,
//! [`crate::reaper`]): everything below the leader while it lives, and every descendant whose
//! environment carries the group's marker (the ones orphaned when their parent ended, now
//! children of ours). They are frozen first, then killed with the group, then handed to the
//! reaper. This runs once per group, when it is killed for good (drop, [`kill`], the end of
//! [`shutdown`]), never on a step of the agent.
//!
//! [`kill`]: crate::ProcessGroup::kill
//! [`shutdown`]: crate::ProcessGroup::shutdown

use std::collections::BTreeMap;

use tracing::debug;

use crate::descendants::{Stat, descendants, kill_all, stop_descendants_where};
use crate::marker::{Marker, marker_of};
use crate::reaper::adopt;

/// The processes of group `id` led by `leader` that are still descendants of this process,
/// frozen (SIGSTOP), with their stat.
pub(crate) fn freeze(id: u64, leader: i32) -> BTreeMap<i32, Stat> {
    let mine = Marker {
        host: crate::descendants::me(),
        id,
    };
    stop_descendants_where(|table, all| {
        let below = descendants(table, leader);
        all.into_iter()
            .filter(|pid| *pid == leader || below.contains(pid) || marker_of(*pid) == Some(mine))
            .collect()
    })
}

/// Kills the frozen processes and hands them to the reaper; returns how many were killed.
pub(crate) fn kill(frozen: BTreeMap<i32, Stat>) -> usize {
    let killed = kill_all(frozen.keys());
    if killed > 0 {
        debug!(killed, "escaped processes killed");
    }
    adopt(frozen);
    killed
}
