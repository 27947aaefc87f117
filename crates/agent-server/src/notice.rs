//! What a session's event stream carries: the events the store recorded (with their ids) and
//! the server's own notices about the session (its place in the line, a question waiting for an
//! answer, the end of a run), which are live only.

use agent_store::StoredEvent;
use agent_tools::Choice;
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
    /// Another process sharing the store stored events of the session up to this id: a
    /// client that has not seen them reads them from the store.
    Poke(agent_store::EventId),
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
    /// The answers the question offers (an approval's allow once / … / deny), as buttons;
    /// empty for a free question.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Choice>,
    /// Why the last task could not run, if it could not.
    pub error: Option<String>,
    /// Grows with every change, also across restarts of the server (it is at least the time
    /// of the change in microseconds): a client that got a newer status (on the event stream)
    /// than the one an HTTP answer carries keeps the newer one.
    pub version: u64,
}

impl Status {
    /// The status of a session with no live agent: nothing going, as of now.
    #[must_use]
    pub fn at_rest() -> Self {
        Self {
            version: now_micros(),
            ..Self::default()
        }
    }

    /// Moves the version on after a change.
    pub fn bump(&mut self) {
        self.version = self.version.saturating_add(1).max(now_micros());
    }
}

fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_only_grow_and_a_session_at_rest_is_as_of_now() {
        let mut status = Status::at_rest();
        assert!(
            status.version > 1_700_000_000_000_000,
            "microseconds since the epoch"
        );
        let mut seen = status.version;
        for _ in 0..1000 {
            status.bump();
            assert!(status.version > seen);
            seen = status.version;
        }
        // A status far in the future (a clock set back) still moves on.
        status.version = u64::MAX - 1;
        status.bump();
        assert_eq!(status.version, u64::MAX);
    }
}
