//! What a session's event stream carries: the events the store recorded (with their ids) and
//! the server's own notices about the session (its place in the line, a question waiting for an
//! answer, the end of a run), which are live only.

use agent_store::StoredEvent;
use serde::Serialize;

/// One item of a session's live stream.
#[derive(Debug, Clone)]
pub enum Notice {
    /// An event, once stored.
    Stored(StoredEvent),
    /// A notice about the session's state (not stored).
    Status(Status),
    /// Events may have been skipped on the way: a client replays from the store.
    Resync,
}

/// The session's live state, as the page shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Status {
    /// A run is queued or going.
    pub busy: bool,
    /// The run's place in the line of runs waiting for a slot (1 = next).
    pub queue_position: Option<usize>,
    /// The question `ask_human` is waiting to have answered.
    pub question: Option<String>,
    /// Why the last task could not run, if it could not.
    pub error: Option<String>,
}
