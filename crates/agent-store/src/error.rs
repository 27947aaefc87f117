//! [`StoreError`]: why the store could not do what was asked.

use thiserror::Error;

/// Why a store operation failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database refused, or could not be reached.
    #[error("the session store: {0}")]
    Database(#[from] sqlx::Error),
    /// The schema could not be brought up to date.
    #[error("the session store's schema: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The store's URL is not one.
    #[error("the session store's URL {url} is not valid: {reason}")]
    Url {
        /// The URL, its password hidden.
        url: String,
        /// Why.
        reason: String,
    },
    /// The database's directory could not be created.
    #[error("cannot create the session store's directory {path}: {source}")]
    Directory {
        /// The directory.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No session has this id.
    #[error("no session {0}")]
    NoSession(String),
    /// More than one session id starts with this prefix.
    #[error("{prefix} names {count} sessions; give more of the id")]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// How many sessions it names.
        count: usize,
    },
    /// The session has a run going in a live process (this one or another sharing the store):
    /// a session runs one task at a time.
    #[error("session {session} has a run going (run {run})")]
    Running {
        /// The session.
        session: String,
        /// Its running run.
        run: i64,
    },
    /// No run has this id.
    #[error("no run {0}")]
    NoRun(i64),
    /// No task has this id.
    #[error("no task {0}")]
    NoTask(String),
    /// The writer recording a session has stopped (the session was closed).
    #[error("the session's recorder has stopped")]
    Closed,
    /// A stored value could not be read back (a JSON column, an unknown state).
    #[error("the session store holds an unreadable {what}: {reason}")]
    Corrupt {
        /// What could not be read.
        what: &'static str,
        /// Why.
        reason: String,
    },
}

impl StoreError {
    pub(crate) fn corrupt(what: &'static str, reason: impl ToString) -> Self {
        Self::Corrupt {
            what,
            reason: reason.to_string(),
        }
    }
}

impl From<agent_protocol::UnknownValue> for StoreError {
    fn from(error: agent_protocol::UnknownValue) -> Self {
        Self::corrupt(error.what, format!("unknown value {:?}", error.value))
    }
}
