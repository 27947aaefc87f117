//! The records the store keeps and returns.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

// The vocabulary the store shares with every front end lives in agent-protocol; it is
// re-exported here, where it always was.
pub use agent_protocol::{EventId, EventKind, RunId, RunState, SessionState, TokenUsage};

/// Milliseconds since the Unix epoch (0 when the clock is before it).
#[must_use]
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

/// A session as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRecord {
    /// Its id (a UUID unless the creator chose one).
    pub id: String,
    /// The agent kind (`manus`, `swe`, ...) or `flow`.
    pub agent: String,
    /// The settings (overrides) the session was created with, as JSON.
    pub settings: Value,
    /// The workspace its agent works in.
    pub workspace: PathBuf,
    /// Where it stands.
    pub state: SessionState,
    /// Its first task, shortened (empty before the first run).
    pub title: String,
    /// When it was created (ms since the Unix epoch).
    pub created_at: i64,
    /// When it last changed (ms since the Unix epoch).
    pub updated_at: i64,
    /// How many runs it has.
    pub runs: i64,
}

/// What a new session is.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSession {
    /// Its id; `None` for a new UUID.
    pub id: Option<String>,
    /// The agent kind or `flow`.
    pub agent: String,
    /// The settings (overrides), as JSON (`Value::Null` is stored as `{}`).
    pub settings: Value,
    /// The workspace.
    pub workspace: PathBuf,
}

impl NewSession {
    /// A session of `agent` working in `workspace`, with no overrides and a new id.
    pub fn new(agent: impl Into<String>, workspace: impl Into<PathBuf>) -> Self {
        Self {
            id: None,
            agent: agent.into(),
            settings: Value::Object(serde_json::Map::new()),
            workspace: workspace.into(),
        }
    }

    /// With these settings.
    #[must_use]
    pub fn with_settings(mut self, settings: Value) -> Self {
        self.settings = settings;
        self
    }

    /// With this id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// How a run ended, as [`Store::finish_run`](crate::Store::finish_run) records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// How it ended.
    pub state: RunState,
    /// The outcome in words (``finished (special tool `terminate`)``, `max_steps (20)`, ...).
    pub status: String,
    /// The final answer.
    pub answer: Option<String>,
    /// The result text (OpenManus's `Step 1: ...` lines).
    pub text: String,
    /// The result text in parts whose concatenation is `text` (`"Step 1: "`, the first step's
    /// result, `"\nStep 2: "`, ...), so that each step's result, already stored with its
    /// events, is stored once; `None` stores `text` whole.
    pub text_parts: Option<Vec<String>>,
    /// Files created, changed and deleted (JSON; `Value::Null` when unknown).
    pub changes: Value,
    /// Tokens used.
    pub usage: TokenUsage,
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// Its id.
    pub id: RunId,
    /// Its session.
    pub session_id: String,
    /// The task.
    pub task: String,
    /// How it ended (`running` while it runs).
    pub state: RunState,
    /// The outcome in words (`None` while it runs).
    pub status: Option<String>,
    /// The final answer.
    pub answer: Option<String>,
    /// The result text.
    pub text: Option<String>,
    /// Files created, changed and deleted (JSON; `Null` when not recorded).
    pub changes: Value,
    /// Tokens used.
    pub usage: TokenUsage,
    /// When it started (ms since the Unix epoch).
    pub started_at: i64,
    /// When it ended (ms since the Unix epoch).
    pub finished_at: Option<i64>,
}

/// An event as stored, with its id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredEvent {
    /// Its id: increasing, never reused (the SSE `Last-Event-ID`).
    pub id: EventId,
    /// Its session.
    pub session_id: String,
    /// The run it belongs to (`None` for events outside a run).
    pub run_id: Option<RunId>,
    /// When it was recorded (ms since the Unix epoch).
    pub at: i64,
    /// What it is.
    pub kind: EventKind,
    /// The event's JSON.
    pub data: Value,
}

/// A JSON document as text, valid by construction: what an event is stored as. A writer that
/// has the event as a Rust value serialises it straight to this ([`JsonText::of`]) instead of
/// building a [`Value`] first; the [`Value`] is made again only for those who read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText(String);

impl JsonText {
    /// `value` serialised.
    ///
    /// # Errors
    ///
    /// `value`'s `Serialize` fails (a map with keys that are not strings, or its own error).
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_string(value).map(Self)
    }

    /// The text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The document as a [`Value`].
    ///
    /// # Errors
    ///
    /// Nesting deeper than serde_json reads (128 levels): a document written by
    /// [`JsonText::of`] may hold one.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.0)
    }
}

impl From<Value> for JsonText {
    fn from(value: Value) -> Self {
        Self(value.to_string())
    }
}

impl From<&Value> for JsonText {
    fn from(value: &Value) -> Self {
        Self(value.to_string())
    }
}

impl std::fmt::Display for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// An event to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// The run it belongs to.
    pub run_id: Option<RunId>,
    /// When it happened (ms since the Unix epoch).
    pub at: i64,
    /// What it is.
    pub kind: EventKind,
    /// Its JSON.
    pub data: JsonText,
}

impl NewEvent {
    /// An event of `kind` happening now.
    #[must_use]
    pub fn now(run_id: Option<RunId>, kind: EventKind, data: impl Into<JsonText>) -> Self {
        Self {
            run_id,
            at: now_ms(),
            kind,
            data: data.into(),
        }
    }
}

/// A change of a session's stored memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryWrite {
    /// Stores (or replaces) the message at position `seq`, given as JSON text.
    Put {
        /// The position (the memory's message id).
        seq: u64,
        /// The message's JSON.
        message: String,
    },
    /// Removes the messages at these positions.
    Remove {
        /// The positions.
        seqs: Vec<u64>,
    },
}

/// What one transaction writes: memory changes, events and model exchanges, for one session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// Memory changes, in order.
    pub memory: Vec<MemoryWrite>,
    /// Events, in order.
    pub events: Vec<NewEvent>,
    /// Model exchanges (requests, replies, errors).
    pub exchanges: Vec<NewExchange>,
}

impl Batch {
    /// Whether the batch writes nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.memory.is_empty() && self.events.is_empty() && self.exchanges.is_empty()
    }
}

/// Which part of a model exchange a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExchangePart {
    /// The request (as a change from its stream's previous request, or whole).
    Request,
    /// The model's reply.
    Reply,
    /// The error the request ended with.
    Error,
}

impl ExchangePart {
    /// The number stored.
    pub(crate) fn code(self) -> i64 {
        match self {
            Self::Request => 0,
            Self::Reply => 1,
            Self::Error => 2,
        }
    }

    /// The part a stored number names.
    pub(crate) fn from_code(code: i64) -> Option<Self> {
        match code {
            0 => Some(Self::Request),
            1 => Some(Self::Reply),
            2 => Some(Self::Error),
            _ => None,
        }
    }
}

/// A part of a model exchange to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewExchange {
    /// The run it belongs to.
    pub run_id: Option<RunId>,
    /// The model that sent it: a request's data may be a change from the previous request of
    /// the same stream.
    pub stream: i64,
    /// The request's number in the session ([`Store::next_exchange_seq`](crate::Store::next_exchange_seq)
    /// gives the first free one); its reply or error has the same.
    pub seq: i64,
    /// Which part it is.
    pub part: ExchangePart,
    /// When it happened (ms since the Unix epoch).
    pub at: i64,
    /// Its JSON.
    pub data: JsonText,
}

/// A part of a model exchange as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredExchange {
    /// Its session.
    pub session_id: String,
    /// The run it belongs to.
    pub run_id: Option<RunId>,
    /// The model that sent it.
    pub stream: i64,
    /// The request's number in the session.
    pub seq: i64,
    /// Which part it is.
    pub part: ExchangePart,
    /// When it happened (ms since the Unix epoch).
    pub at: i64,
    /// Its JSON.
    pub data: Value,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[derive(Serialize)]
    struct Event {
        r#type: &'static str,
        step: u32,
        text: String,
    }

    #[test]
    fn json_text_is_the_value_a_reader_gets_back() {
        let event = Event {
            r#type: "step_finished",
            step: 3,
            text: "a \"quoted\"\nline".into(),
        };
        let text = JsonText::of(&event).unwrap();
        // Written in the struct's order, straight from the event.
        assert_eq!(
            text.as_str(),
            r#"{"type":"step_finished","step":3,"text":"a \"quoted\"\nline"}"#
        );
        let value = text.to_value().unwrap();
        assert_eq!(value, serde_json::to_value(&event).unwrap());
        assert_eq!(JsonText::from(&value).to_value().unwrap(), value);
        assert_eq!(JsonText::from(value.clone()).to_string(), value.to_string());
    }
}
