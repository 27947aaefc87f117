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

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tracing::debug;

use crate::descendants::{Stat, descendants, kill_all, stop_descendants_where};
use crate::marker::{Environ, Marker, environ_of, marker_of};
use crate::reaper::adopt;

/// How many times the sweep looks again while an environment is unreadable.
const LOOKS: u32 = 10;

/// How long it waits before it looks again.
const AGAIN: Duration = Duration::from_millis(2);

/// What the sweep found of a group.
#[derive(Debug, Default)]
pub(crate) struct Frozen {
    /// Its live processes, frozen (SIGSTOP), with their stat.
    live: BTreeMap<i32, Stat>,
    /// Its members already dead as children of ours (orphans re-parented to this process that
    /// an earlier signal to the group killed): nobody else will reap them.
    dead: BTreeMap<i32, Stat>,
}

/// The processes of group `id` led by `leader` that are still descendants of this process,
/// frozen (SIGSTOP), and its dead members that are children of ours.
pub(crate) fn freeze(id: u64, leader: i32) -> Frozen {
    let mine = Marker {
        host: crate::descendants::me(),
        id,
    };
    // The leader's pid names the group's tree only while it carries the group's marker: once
    // the leader has been reaped, the pid may belong to any other process of ours.
    let leader_is_ours = marker_of(leader) == Some(mine);
    // A process in the middle of an `execve` has no readable environment for a moment: the
    // sweep looks again, a bounded number of times, while some descendant's is unreadable.
    let mut live = BTreeMap::new();
    let mut dead = BTreeMap::new();
    for _ in 0..LOOKS {
        let mut unsure = false;
        let found = stop_descendants_where(|table, all| {
            // A zombie's environment cannot be read, so its marker cannot name it: its process
            // group (the leader's pid) does. The leader itself is tokio's to reap.
            dead.extend(table.iter().filter(|(pid, stat)| {
                stat.zombie && stat.ppid == mine.host && stat.pgid == leader && **pid != leader
            }));
            let below = if leader_is_ours {
                descendants(table, leader)
            } else {
                BTreeSet::new()
            };
            all.into_iter()
                .filter(|pid| {
                    if (leader_is_ours && *pid == leader) || below.contains(pid) {
                        return true;
                    }
                    match environ_of(*pid) {
                        Environ::Marked(marker) => marker == mine,
                        Environ::Unknown => {
                            unsure = true;
                            false
                        }
                        Environ::Unmarked => false,
                    }
                })
                .collect()
        });
        live.extend(found);
        if !unsure {
            break;
        }
        std::thread::sleep(AGAIN);
    }
    Frozen { live, dead }
}

/// Kills the frozen processes and hands them, with the dead ones, to the reaper; returns how
/// many were killed.
pub(crate) fn kill(frozen: Frozen) -> usize {
    let Frozen { live, dead } = frozen;
    let killed = kill_all(live.keys());
    if killed > 0 {
        debug!(killed, "escaped processes killed");
    }
    adopt(live.into_iter().chain(dead));
    killed
}
