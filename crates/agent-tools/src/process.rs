//! A process-wide registry of the process groups the tools started (bash sessions, Python
//! interpreters), so a program that must exit at once — a second Ctrl-C — can still kill them:
//! `std::process::exit` runs no destructor, so the sessions' own kill-on-drop never happens.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Keeps a process group in the registry while it lives; dropping it only unregisters (the
/// owner kills its group itself).
#[derive(Debug)]
pub struct GroupRegistration(i32);

impl GroupRegistration {
    /// Registers the process group `pgid`.
    #[must_use]
    pub fn new(pgid: i32) -> Self {
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(pgid);
        Self(pgid)
    }
}

impl Drop for GroupRegistration {
    fn drop(&mut self) {
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.0);
    }
}

/// The process groups currently registered.
#[must_use]
pub fn live_process_groups() -> Vec<i32> {
    LIVE.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .copied()
        .collect()
}

/// Sends SIGKILL to every registered process group (for a program about to exit without running
/// destructors); returns how many groups were signalled.
pub fn kill_all_process_groups() -> usize {
    let groups = live_process_groups();
    groups
        .iter()
        .filter(|pgid| killpg(Pid::from_raw(**pgid), Signal::SIGKILL).is_ok())
        .count()
}
