//! [`ApprovalSwitch`]: the approval policy of agents already built, changed while they live
//! (an editor's mode menu over ACP).

use std::sync::{Arc, Mutex, PoisonError};

use agent_config::ApprovalPolicy;

/// A shared approval policy: every gate built with it asks as it says now. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct ApprovalSwitch(Arc<Mutex<ApprovalPolicy>>);

impl ApprovalSwitch {
    /// A switch set to `policy`.
    #[must_use]
    pub fn new(policy: ApprovalPolicy) -> Self {
        Self(Arc::new(Mutex::new(policy)))
    }

    /// The policy now.
    #[must_use]
    pub fn get(&self) -> ApprovalPolicy {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the policy of every gate that shares this switch.
    pub fn set(&self, policy: ApprovalPolicy) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = policy;
    }
}
