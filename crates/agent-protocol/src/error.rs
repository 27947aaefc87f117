//! [`ProtocolError`]: a message that is not what the protocol says.

/// A message that cannot be written or read, or a task that is not valid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A task, event or result did not have the expected JSON shape.
    #[error("invalid {what}: {source}")]
    Json {
        /// What was being read or written.
        what: &'static str,
        /// The error.
        #[source]
        source: serde_json::Error,
    },
    /// The task is not valid (empty text, bad id, unknown agent kind).
    #[error("invalid task: {0}")]
    InvalidTask(String),
}
