//! [`StreamGate`]: holds a mock's streamed reply part-way until the test releases it, so a test
//! can show that a client hands over the first pieces before the reply has ended.

use std::sync::Arc;

use tokio::sync::Notify;

/// A gate a mock's stream waits at (see [`AnthropicReply::HeldStream`](crate::AnthropicReply)).
/// Clones share the gate; [`StreamGate::release`] before the stream reaches it lets it through
/// without waiting.
#[derive(Debug, Clone, Default)]
pub struct StreamGate(Arc<Notify>);

impl StreamGate {
    /// A closed gate.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens the gate: the stream waiting at it (or the next to arrive) goes on.
    pub fn release(&self) {
        self.0.notify_one();
    }

    /// Waits until the gate is opened.
    pub(crate) async fn wait(&self) {
        self.0.notified().await;
    }
}

impl PartialEq for StreamGate {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for StreamGate {}
