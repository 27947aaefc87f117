//! Environment variables withheld from every child process: the secrets of the host (provider
//! API keys and the variables the configuration read them from) stay with the client.
//!
//! The set only grows (a host may run sessions of several configurations); a variable the
//! spawning code sets explicitly on its command (an MCP server's `env` entry in `mcp.json`) is
//! passed as given.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::sync::{Mutex, PoisonError};

use tokio::process::Command;

static WITHHELD: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Withholds the variables `names` from every child process spawned from now on through
/// [`crate::ProcessGroup::spawn`] (unless the command sets one explicitly).
pub fn withhold_env<I, S>(names: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut withheld = WITHHELD.lock().unwrap_or_else(PoisonError::into_inner);
    withheld.extend(names.into_iter().map(Into::into));
}

/// The variables withheld from child processes, sorted.
#[must_use]
pub fn withheld_env() -> Vec<String> {
    WITHHELD
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .cloned()
        .collect()
}

/// Removes the withheld variables from `command`'s environment, except those it sets itself.
pub(crate) fn scrub(command: &mut Command) {
    let explicit: BTreeSet<&OsStr> = command.as_std().get_envs().map(|(k, _)| k).collect();
    let withheld = WITHHELD.lock().unwrap_or_else(PoisonError::into_inner);
    let remove: Vec<String> = withheld
        .iter()
        .filter(|name| !explicit.contains(OsStr::new(name.as_str())))
        .cloned()
        .collect();
    drop(withheld);
    drop(explicit);
    for name in remove {
        command.env_remove(name);
    }
}
