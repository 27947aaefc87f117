//! Emergency hooks: clean-ups that [`crate::emergency_shutdown`] runs after it killed every
//! registered process group (for instance "remove the live Docker containers").

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A registered hook.
type Hook = Arc<dyn Fn() + Send + Sync>;

static HOOKS: Mutex<BTreeMap<u64, (String, Hook)>> = Mutex::new(BTreeMap::new());
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Identifies a registered emergency hook, to unregister it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HookId(u64);

/// Registers `hook`, named `name` in the logs, to run on [`crate::emergency_shutdown`]. It must
/// be synchronous and bounded: it runs on the emergency path, before the program exits.
pub fn register_emergency_hook(name: &str, hook: impl Fn() + Send + Sync + 'static) -> HookId {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    HOOKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, (name.to_owned(), Arc::new(hook)));
    HookId(id)
}

/// Removes a hook; false when it was not registered (any more).
pub fn unregister_emergency_hook(id: HookId) -> bool {
    HOOKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&id.0)
        .is_some()
}

/// The hooks right now, in registration order (the lock is not held while they run).
pub(crate) fn hooks() -> Vec<(String, Hook)> {
    HOOKS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
        .cloned()
        .collect()
}
