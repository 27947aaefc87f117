//! [`WorkerError`]: what can go wrong between a worker, a submitter and NATS.

/// Why a NATS operation of a worker or submitter failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// The NATS server could not be reached (or the credentials could not be read).
    #[error("NATS connection to {url}: {message}")]
    Connect {
        /// The server URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// A JetStream stream, consumer or bucket could not be created or opened.
    #[error("JetStream set-up ({what}): {message}")]
    Setup {
        /// The stream, consumer or bucket.
        what: String,
        /// What went wrong.
        message: String,
    },
    /// A message could not be published, fetched or acknowledged.
    #[error("NATS {what}: {message}")]
    Nats {
        /// The operation.
        what: &'static str,
        /// What went wrong.
        message: String,
    },
    /// A task or result did not have the expected JSON shape.
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

impl WorkerError {
    pub(crate) fn nats(what: &'static str, error: impl std::fmt::Display) -> Self {
        Self::Nats {
            what,
            message: error.to_string(),
        }
    }

    pub(crate) fn setup(what: impl Into<String>, error: impl std::fmt::Display) -> Self {
        Self::Setup {
            what: what.into(),
            message: error.to_string(),
        }
    }
}

impl From<agent_protocol::ProtocolError> for WorkerError {
    fn from(error: agent_protocol::ProtocolError) -> Self {
        match error {
            agent_protocol::ProtocolError::InvalidTask(reason) => Self::InvalidTask(reason),
            agent_protocol::ProtocolError::Json { what, source } => Self::Json { what, source },
            other => Self::InvalidTask(other.to_string()),
        }
    }
}
