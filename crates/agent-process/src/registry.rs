//! The process-wide registry of live process groups.
//!
//! An [`Entry`] is one group: its id, a name for the logs, and whether it may still be signalled
//! ("armed"). Signalling and disarming happen under the entry's lock, so no signal goes to a group
//! after it was found empty and disarmed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tracing::debug;

/// The registered groups, by registration number.
static LIVE: Mutex<BTreeMap<u64, Arc<Entry>>> = Mutex::new(BTreeMap::new());
/// The next registration number.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// One registered process group.
#[derive(Debug)]
pub(crate) struct Entry {
    id: u64,
    pgid: i32,
    name: String,
    /// False once the group must not be signalled again: killed for good, or found empty after
    /// its leader was reaped (its id may then be reused).
    armed: Mutex<bool>,
    /// Whether the escape sweep ran (it runs once, when the group is killed for good).
    swept: AtomicBool,
}

impl Entry {
    /// A fresh registration number, for a group about to be spawned.
    pub(crate) fn next_id() -> u64 {
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers the group `pgid` under `id` (from [`Entry::next_id`]), armed.
    pub(crate) fn register(id: u64, pgid: i32, name: &str) -> Arc<Self> {
        let entry = Arc::new(Self {
            id,
            pgid,
            name: name.to_owned(),
            armed: Mutex::new(true),
            swept: AtomicBool::new(false),
        });
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(entry.id, Arc::clone(&entry));
        entry
    }

    /// The process group id.
    pub(crate) fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The name given at spawn.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Sends `signal` to the whole group while it is armed; true if the signal was delivered
    /// to at least one process.
    pub(crate) fn signal(&self, signal: Signal) -> bool {
        let armed = self.armed.lock().unwrap_or_else(PoisonError::into_inner);
        *armed && self.send(signal)
    }

    /// The registration number (also the group's marker, see [`crate::reaper`]).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Sends SIGKILL to the group (if armed) and to the processes that left it, then disarms
    /// and unregisters it. The escape sweep ([`crate::escape`]) runs once: `freeze(id, leader)`
    /// under the lock, before the group's SIGKILL; `kill` with what it froze after it, before the
    /// group is unregistered.
    pub(crate) fn kill_for_good<T>(
        &self,
        freeze: impl FnOnce(u64, i32) -> T,
        kill: impl FnOnce(T),
    ) {
        let mut armed = self.armed.lock().unwrap_or_else(PoisonError::into_inner);
        let escaped = if self.swept.swap(true, Ordering::AcqRel) {
            None
        } else {
            Some(freeze(self.id, self.pgid))
        };
        if *armed {
            self.send(Signal::SIGKILL);
            *armed = false;
        }
        drop(armed);
        if let Some(escaped) = escaped {
            kill(escaped);
        }
        self.unregister();
    }

    /// The leader was reaped: when no process is left in the group, disarm and unregister it
    /// (its id is free for reuse from now on). A group that still has members keeps its id (the
    /// kernel does not reuse the id of a live process group) and stays armed.
    pub(crate) fn leader_reaped(&self) {
        let mut armed = self.armed.lock().unwrap_or_else(PoisonError::into_inner);
        if *armed && killpg(Pid::from_raw(self.pgid), None) == Err(Errno::ESRCH) {
            *armed = false;
        }
        let disarmed = !*armed;
        drop(armed);
        if disarmed {
            self.unregister();
        }
    }

    fn send(&self, signal: Signal) -> bool {
        match killpg(Pid::from_raw(self.pgid), signal) {
            Ok(()) => true,
            Err(error) => {
                // ESRCH (nobody left in the group) is the normal case after an exit.
                if error != Errno::ESRCH {
                    debug!(pgid = self.pgid, name = %self.name, %signal, %error, "killpg");
                }
                false
            }
        }
    }

    fn unregister(&self) {
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

/// The registered entries right now (the lock is not held while they are used).
pub(crate) fn entries() -> Vec<Arc<Entry>> {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
        .cloned()
        .collect()
}

/// The ids of the process groups registered right now, in registration order.
#[must_use]
pub fn live_process_groups() -> Vec<i32> {
    entries().iter().map(|e| e.pgid()).collect()
}
