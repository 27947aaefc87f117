//! The writing end of a journal: what the writer task receives, and the cheap handle that sends
//! it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use agent_core::AgentEvent;
use agent_llm::ChatResponse;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedSender;

use super::format::{KIND_REQUEST, KIND_RESPONSE, SEQ};

/// Milliseconds since the Unix epoch (0 when the clock is before it).
pub(crate) fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default()
}

/// What the writer task receives.
pub(crate) enum Entry {
    /// A line written as it is.
    Line(Value),
    /// A model request: `head` (time, kind, number) plus `body` encoded against what the
    /// journal already holds.
    Request {
        /// The line's first fields.
        head: Map<String, Value>,
        /// The wire body.
        body: Value,
    },
    /// A model request given as what changed since the previous request of the same `stream`
    /// (one [`JournaledModel`](super::JournaledModel)): the line written is the same as for
    /// the whole body, but nothing already known is formatted again.
    Delta {
        /// The line's first fields.
        head: Map<String, Value>,
        /// What changed.
        delta: RequestDelta,
    },
    /// A model's reply: the line `head` (time, kind, the number of its request) plus
    /// `response` (kept typed, so that a writer that stores it alone serialises it once).
    Reply {
        /// The line's first fields.
        head: Map<String, Value>,
        /// The reply.
        response: Box<ChatResponse>,
    },
    /// Flush and stop, even while handles to the journal are still alive.
    Close,
}

impl Entry {
    /// The line as a JSON object (a [`Reply`](Entry::Reply) as it is written in a journal).
    pub(crate) fn reply_line(mut head: Map<String, Value>, response: &ChatResponse) -> Value {
        head.insert(
            "response".into(),
            serde_json::to_value(response).unwrap_or(Value::Null),
        );
        Value::Object(head)
    }
}

/// A request body as the change from the previous request of its stream.
pub(crate) struct RequestDelta {
    /// Which model sent it: each keeps its own previous request.
    pub stream: u64,
    /// Every field of the body but `messages` and `tools`, as a JSON object.
    pub params: Arc<RawValue>,
    /// How many leading messages are those of the stream's previous request.
    pub keep: usize,
    /// The messages after them, as JSON text.
    pub new_messages: Vec<Arc<RawValue>>,
    /// The tools.
    pub tools: ToolsDelta,
}

/// The tools of a [`RequestDelta`].
pub(crate) enum ToolsDelta {
    /// The body has no `tools`.
    Absent,
    /// The same tools as the stream's previous request.
    Same,
    /// These tools.
    New(Vec<Value>),
}

/// Where a [`JournalHandle`]'s entries go: a JSONL journal's writer task, or the recorder of a
/// session kept in the store (which keeps the model exchanges and drops the other lines: the
/// store records events and runs itself).
pub(crate) trait EntrySink: Send + Sync {
    /// Queues `entry`; false once the writer has stopped.
    fn send(&self, entry: Entry) -> bool;
    /// Whether the writer has stopped.
    fn is_closed(&self) -> bool;
}

impl EntrySink for UnboundedSender<Entry> {
    fn send(&self, entry: Entry) -> bool {
        UnboundedSender::send(self, entry).is_ok()
    }

    fn is_closed(&self) -> bool {
        UnboundedSender::is_closed(self)
    }
}

/// Writes journal entries; cheap to clone. Entries sent after the journal closed are dropped.
#[derive(Clone, Default)]
pub struct JournalHandle {
    sender: Option<Arc<dyn EntrySink>>,
    /// The next request number, shared by every handle of the journal.
    requests: Arc<AtomicU64>,
}

impl JournalHandle {
    /// A handle sending to `sender`.
    pub(crate) fn new(sender: Arc<dyn EntrySink>) -> Self {
        Self {
            sender: Some(sender),
            requests: Arc::default(),
        }
    }

    /// Numbers the next request `next` (a session continued in the store goes on from the
    /// requests it already holds).
    pub(crate) fn number_requests_from(&self, next: u64) {
        self.requests.store(next, Ordering::Relaxed);
    }

    /// Writes one entry of kind `kind` with `data` (an object whose fields join the entry).
    pub fn write(&self, kind: &str, data: Value) {
        let Some(sender) = &self.sender else { return };
        let mut entry = head(kind);
        if let Value::Object(fields) = data {
            entry.extend(fields);
        }
        sender.send(Entry::Line(Value::Object(entry)));
    }

    /// Writes the `model_response` line of request `seq`.
    pub(crate) fn reply(&self, seq: u64, response: &ChatResponse) {
        let Some(sender) = &self.sender else { return };
        let mut head = head(KIND_RESPONSE);
        head.insert(SEQ.into(), json!(seq));
        sender.send(Entry::Reply {
            head,
            response: Box::new(response.clone()),
        });
    }

    /// Writes an agent event.
    pub fn event(&self, event: &AgentEvent) {
        self.write("event", json!({ "event": event }));
    }

    /// Writes a `model_request` line for the wire `body` and returns its number, which the
    /// line of its reply carries as `seq` too.
    pub fn request(&self, body: Value) -> u64 {
        let seq = self.requests.fetch_add(1, Ordering::Relaxed);
        if let Some(sender) = &self.sender {
            let mut head = head(KIND_REQUEST);
            head.insert(SEQ.into(), json!(seq));
            sender.send(Entry::Request { head, body });
        }
        seq
    }

    /// Writes a `model_request` line for a request given as a [`RequestDelta`]; returns its
    /// number.
    pub(crate) fn request_delta(&self, delta: RequestDelta) -> u64 {
        let seq = self.requests.fetch_add(1, Ordering::Relaxed);
        if let Some(sender) = &self.sender {
            let mut head = head(KIND_REQUEST);
            head.insert(SEQ.into(), json!(seq));
            sender.send(Entry::Delta { head, delta });
        }
        seq
    }

    /// Whether entries reach a journal (false for the default handle and after close).
    pub(crate) fn is_open(&self) -> bool {
        self.sender.as_ref().is_some_and(|s| !s.is_closed())
    }

    /// Asks the writer task to flush and stop.
    pub(crate) fn close(&self) {
        if let Some(sender) = &self.sender {
            sender.send(Entry::Close);
        }
    }
}

/// The first fields of every line: the time and the kind.
fn head(kind: &str) -> Map<String, Value> {
    let mut head = Map::new();
    head.insert("time_ms".into(), Value::String(now_ms().to_string()));
    head.insert("kind".into(), Value::String(kind.to_owned()));
    head
}
