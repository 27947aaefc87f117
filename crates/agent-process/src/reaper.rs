//! This process as the reaper of its descendants.
//!
//! On the first [`crate::ProcessGroup::spawn`] the process becomes a Linux *child subreaper*
//! (`prctl(PR_SET_CHILD_SUBREAPER)`): a process that leaves its group and is orphaned (a
//! `setsid sleep 300 &` whose shell ended, a daemon's double fork) is re-parented to this
//! process instead of init, so it stays a descendant, where the escape sweep
//! ([`crate::escape`]) and the emergency shutdown find it.
//!
//! A subreaper must also reap those adopted children once they die, without stealing an exit
//! status that belongs to someone else: tokio (and `std`) wait for the children *they* spawned
//! with `waitpid(pid)` on that pid. So this reaper never calls `waitpid(-1)`. After each
//! SIGCHLD it reads the process table and reaps, by pid, only zombie children it recognises as
//! adopted:
//!
//! * a process that was seen alive as a child of ours, carrying a group marker (the
//!   [`MARKER`](crate::marker::MARKER) variable every group leader gets in its environment, inherited by its
//!   descendants) while not being a leader itself — a leader is tokio's; recorded by pid and
//!   start time, so a reused pid is never mistaken for it;
//! * a zombie in a registered group that is not its leader (only a group's own members carry
//!   its id).
//!
//! A child the host program spawned itself carries no marker and leads no registered group, so
//! its status is never taken. The one case left: an adopted process nobody saw alive (its
//! parent, deep in a tool's tree, ended, and it died on its own before the next sweep or
//! SIGCHLD) stays a zombie until the host exits; it holds no resource but its pid.
//!
//! The reaper is a thread of its own with a small runtime (it must outlive the runtime of
//! whoever spawned the first group); it sleeps until a SIGCHLD or a sweep wakes it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, OnceLock, PoisonError};

use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Notify;
use tracing::{debug, warn};

use crate::descendants::{Stat, me, stat, table};
use crate::marker::{Environ, Marker, environ_of};
use crate::registry::entries;

/// The leaders tokio reaps: group number → leader pid (`None` while it is being spawned), from
/// just before the spawn until tokio reaped the leader.
static LEADERS: Mutex<BTreeMap<u64, Option<i32>>> = Mutex::new(BTreeMap::new());

/// Adopted processes to reap once they are zombie children of ours: pid → start time.
static ADOPTED: Mutex<BTreeMap<i32, u64>> = Mutex::new(BTreeMap::new());

/// How soon the reaper looks again at a child whose environment it could not read.
const AGAIN: std::time::Duration = std::time::Duration::from_millis(20);

/// How many times it looks again.
const LOOKS: u32 = 10;

/// Wakes the reaper thread.
static WAKE: OnceLock<Notify> = OnceLock::new();

fn wake() -> &'static Notify {
    WAKE.get_or_init(Notify::new)
}

/// Has the reaper thread run a pass soon.
pub(crate) fn wake_reaper() {
    wake().notify_one();
}

/// Group `id` is about to spawn its leader.
pub(crate) fn leader_spawning(id: u64) {
    LEADERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, None);
}

/// Group `id`'s leader is `pid`.
pub(crate) fn leader_spawned(id: u64, pid: i32) {
    LEADERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, Some(pid));
}

/// Group `id`'s leader was reaped by tokio, or never started.
pub(crate) fn leader_gone(id: u64) {
    LEADERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&id);
}

/// Whether `pid`, a child of ours carrying `marker`, was adopted (rather than spawned by us as a
/// group leader).
fn is_adopted(pid: i32, marker: Marker, leaders: &BTreeMap<u64, Option<i32>>) -> bool {
    if marker.host != me() {
        // A group of another host (an openmanus run inside one of our tools): not ours to wait.
        return true;
    }
    match leaders.get(&marker.id) {
        // Being spawned: this may be the leader itself, between its exec and our record.
        Some(None) => false,
        Some(Some(leader)) => *leader != pid,
        // The group's leader was reaped already: this is one of its descendants.
        None => true,
    }
}

/// Records processes (pid and stat) as adopted, to be reaped once they are zombie children
/// of ours; leaders are left out. Wakes the reaper.
pub(crate) fn adopt(processes: impl IntoIterator<Item = (i32, Stat)>) {
    let leaders: BTreeSet<i32> = LEADERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
        .flatten()
        .copied()
        .collect();
    let mut adopted = ADOPTED.lock().unwrap_or_else(PoisonError::into_inner);
    for (pid, stat) in processes {
        if !leaders.contains(&pid) {
            adopted.insert(pid, stat.start);
        }
    }
    drop(adopted);
    wake().notify_one();
}

/// What one pass of [`reap_adopted`] did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Pass {
    /// Adopted processes reaped.
    pub reaped: usize,
    /// Some live child's environment could not be read (it was in an `execve`): look again
    /// soon.
    pub unsure: bool,
}

/// One pass: records the live adopted children, reaps the dead ones.
pub(crate) fn reap_adopted() -> Pass {
    let mut pass = Pass::default();
    let me = me();
    // Locked before the table is read: an entry added meanwhile would be pruned as unknown.
    let mut adopted = ADOPTED.lock().unwrap_or_else(PoisonError::into_inner);
    let mut table = table();
    let leaders = LEADERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let leader_pids: BTreeSet<i32> = leaders.values().flatten().copied().collect();
    let groups: BTreeSet<i32> = entries().iter().map(|e| e.pgid()).collect();
    // Forget the ones that are gone (reaped by another parent) or whose pid was reused. Each is
    // read on its own rather than looked up in the walk, which is read while processes come and
    // go: one missing from it is neither forgotten nor left out of the pass below.
    adopted.retain(|pid, start| match stat(*pid) {
        Some(found) if found.start == *start => {
            table.entry(*pid).or_insert(found);
            true
        }
        _ => false,
    });
    for (&pid, stat) in table.iter().filter(|(_, s)| s.ppid == me) {
        if leader_pids.contains(&pid) {
            continue;
        }
        if !stat.zombie {
            match environ_of(pid) {
                Environ::Marked(m) if is_adopted(pid, m, &leaders) => {
                    adopted.insert(pid, stat.start);
                }
                Environ::Unknown => pass.unsure = true,
                Environ::Marked(_) | Environ::Unmarked => {}
            }
            continue;
        }
        let known = adopted.get(&pid) == Some(&stat.start);
        let group_member = groups.contains(&stat.pgid) && stat.pgid != pid;
        if !(known || group_member) {
            continue;
        }
        match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
            // Not reapable yet (still exiting): the SIGCHLD that follows brings it back.
            Ok(WaitStatus::StillAlive) => {}
            Ok(status) => {
                debug!(pid, ?status, "adopted process reaped");
                adopted.remove(&pid);
                pass.reaped += 1;
            }
            Err(error) => debug!(pid, %error, "reaping an adopted process"),
        }
    }
    pass
}

/// Makes this process a child subreaper and starts the reaper thread, once (after the keeper,
/// [`crate::keeper::ensure_started`], which the spawn starts first).
pub(crate) fn ensure_started() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        if let Err(error) = nix::sys::prctl::set_child_subreaper(true) {
            warn!(%error, "cannot become a child subreaper: processes that leave their group may outlive the run");
            return;
        }
        let started = std::thread::Builder::new()
            .name("agent-process-reaper".into())
            .spawn(run_reaper);
        if let Err(error) = started {
            warn!(%error, "cannot start the reaper thread: adopted processes stay zombies");
        }
    });
}

fn run_reaper() {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            warn!(%error, "reaper runtime");
            return;
        }
    };
    runtime.block_on(async {
        let mut children = match signal(SignalKind::child()) {
            Ok(children) => children,
            Err(error) => {
                warn!(%error, "reaper: cannot listen for SIGCHLD");
                return;
            }
        };
        let woken = wake();
        // Looks left for a child whose environment could not be read (one with a truly empty
        // environment stays unreadable: the looks are bounded).
        let mut again: u32 = 0;
        loop {
            let timer = tokio::select! {
                got = children.recv() => if got.is_none() { return } else { false },
                () = woken.notified() => false,
                // A child was caught in an `execve`: its environment is readable in a moment.
                () = tokio::time::sleep(AGAIN), if again > 0 => true,
            };
            let unsure = reap_adopted().unsure;
            again = match (unsure, timer) {
                (false, _) => 0,
                (true, false) => LOOKS,
                (true, true) => again.saturating_sub(1),
            };
        }
    });
}
