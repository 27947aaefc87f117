//! A stored session written out as a journal: the same JSONL lines a live run writes (`task`,
//! `event`, `flow_event`, `model_request`, `model_response`, `model_error`, `result`), so
//! [`JournalReader`](super::JournalReader) and every tool that reads journals read it. It
//! starts with a `session` line and ends with a `memory` line (the agent's memory as stored).
//! Events and model exchanges are interleaved by time (events first within a millisecond).
//! Sessions stored before the store kept model exchanges export without model lines.

use std::collections::{HashMap, VecDeque};
use std::io::Write;

use agent_store::{EventKind, ExchangePart, Store, StoreError, StoredEvent, StoredExchange};
use serde_json::{Value, json};

use super::encode::Encoder;
use super::format::{KIND_ERROR, KIND_REQUEST, KIND_RESPONSE, SEQ};
use super::reader::Bodies;
use super::texts::TextWriter;

/// How many events are read from the store at a time.
const PAGE: usize = 1000;

/// Why a session could not be exported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The store could not be read (or has no such session).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The output could not be written.
    #[error("cannot write the journal: {0}")]
    Io(#[from] std::io::Error),
    /// A stored model request cannot be rebuilt (it refers to what its stream never stored).
    #[error("the stored model request {seq} cannot be rebuilt: {what}")]
    Exchange {
        /// The request's number.
        seq: i64,
        /// What is wrong.
        what: String,
    },
}

/// Writes journal lines to any writer, long texts written once as in a live journal.
pub struct JournalWriter<W: Write> {
    out: W,
    texts: TextWriter,
    requests: Encoder,
    lines: u64,
}

impl<W: Write> JournalWriter<W> {
    /// A writer of journal lines to `out`.
    pub fn new(out: W) -> Self {
        Self {
            out,
            texts: TextWriter::default(),
            requests: Encoder::default(),
            lines: 0,
        }
    }

    /// Writes the `model_request` line of request `seq` with the wire `body`, encoded against
    /// the requests written before it (see [`journal`](crate::journal)).
    ///
    /// # Errors
    ///
    /// The output cannot be written.
    pub fn request(&mut self, time_ms: i64, seq: i64, body: Value) -> std::io::Result<()> {
        let mut data = serde_json::Map::new();
        data.insert(SEQ.into(), json!(seq));
        data.extend(self.requests.encode(body));
        self.write(time_ms, KIND_REQUEST, Value::Object(data))
    }

    /// Writes one line: `{"time_ms", "kind", ...fields of data}`.
    ///
    /// # Errors
    ///
    /// The output cannot be written.
    pub fn write(&mut self, time_ms: i64, kind: &str, data: Value) -> std::io::Result<()> {
        let mut line = serde_json::Map::new();
        line.insert("time_ms".into(), Value::String(time_ms.to_string()));
        line.insert("kind".into(), Value::String(kind.to_owned()));
        if let Value::Object(fields) = data {
            line.extend(fields);
        }
        let mut line = Value::Object(line);
        self.texts.encode(&mut line);
        serde_json::to_writer(&mut self.out, &line)?;
        self.out.write_all(b"\n")?;
        self.lines += 1;
        Ok(())
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Flushes and returns the writer.
    ///
    /// # Errors
    ///
    /// The output cannot be flushed.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Writes the stored session `id` to `out` as a journal; returns how many lines it wrote.
///
/// # Errors
///
/// The store cannot be read, or `out` cannot be written.
pub async fn export_session(store: &Store, id: &str, out: impl Write) -> Result<u64, ExportError> {
    let session = store.session(id).await?;
    let runs = store.runs(id).await?;
    let mut journal = JournalWriter::new(out);
    journal.write(session.created_at, "session", json!({ "session": session }))?;
    let mut events = Pages::default();
    let mut exchanges = Pages::default();
    // Each stream's requests are changes from its earlier ones: rebuilt in order.
    let mut bodies: HashMap<i64, Bodies> = HashMap::new();
    loop {
        if events.rows.is_empty() && !events.done {
            let page = store.events_after(id, events.after, PAGE).await?;
            events.fill(page, |e| e.id);
        }
        if exchanges.rows.is_empty() && !exchanges.done {
            let page = store.exchanges_after(id, exchanges.after, PAGE).await?;
            exchanges.fill(page, |e| e.seq);
        }
        let event_first = match (events.rows.front(), exchanges.rows.front()) {
            // Times are in milliseconds, and a fast step has several things in one: at the
            // same time a request follows the events before it (its step's start), and a reply
            // or an error comes before the events after it (what the agent made of it, up to
            // the run's end).
            (Some(event), Some(exchange)) => {
                event.at < exchange.at
                    || (event.at == exchange.at && exchange.part == ExchangePart::Request)
            }
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if event_first {
            if let Some(event) = events.rows.pop_front() {
                write_event(&mut journal, &runs, event)?;
            }
        } else if let Some(exchange) = exchanges.rows.pop_front() {
            write_exchange(&mut journal, &mut bodies, exchange)?;
        }
    }
    let messages = store.messages(id).await?;
    journal.write(
        session.updated_at,
        "memory",
        json!({ "messages": messages }),
    )?;
    let lines = journal.lines();
    journal.finish()?;
    Ok(lines)
}

/// Rows read from the store a page at a time.
struct Pages<T> {
    rows: VecDeque<T>,
    /// The key of the last row read.
    after: Option<i64>,
    /// Whether the last page was the last.
    done: bool,
}

impl<T> Default for Pages<T> {
    fn default() -> Self {
        Self {
            rows: VecDeque::new(),
            after: None,
            done: false,
        }
    }
}

impl<T> Pages<T> {
    fn fill(&mut self, page: Vec<T>, key: impl Fn(&T) -> i64) {
        match page.last() {
            Some(last) => self.after = Some(key(last)),
            None => self.done = true,
        }
        self.rows.extend(page);
    }
}

/// Writes a stored event as the line a live journal has for it.
fn write_event<W: Write>(
    journal: &mut JournalWriter<W>,
    runs: &[agent_store::RunRecord],
    event: StoredEvent,
) -> std::io::Result<()> {
    let (kind, mut data) = match event.kind {
        EventKind::Agent => ("event", json!({ "event": event.data })),
        EventKind::Flow => ("flow_event", json!({ "event": event.data })),
        EventKind::RunStarted => ("task", json!({ "task": event.data["task"] })),
        EventKind::RunFinished => {
            let run = runs.iter().find(|r| Some(r.id) == event.run_id);
            (
                "result",
                json!({
                    "status": event.data["status"],
                    "answer": event.data["answer"],
                    "changes": event.data["changes"],
                    "usage": event.data["usage"],
                    "text": run.and_then(|r| r.text.clone()).unwrap_or_default(),
                    "state": event.data["state"],
                }),
            )
        }
    };
    if let (Value::Object(fields), Some(run)) = (&mut data, event.run_id) {
        fields.insert("run_id".into(), json!(run));
    }
    journal.write(event.at, kind, data)
}

/// Writes a stored exchange as the line a live journal has for it, the request's body rebuilt
/// from its stream and encoded against the export's earlier requests.
fn write_exchange<W: Write>(
    journal: &mut JournalWriter<W>,
    bodies: &mut HashMap<i64, Bodies>,
    exchange: StoredExchange,
) -> Result<(), ExportError> {
    let seq = exchange.seq;
    let Value::Object(mut data) = exchange.data else {
        return Err(ExportError::Exchange {
            seq,
            what: "not a JSON object".into(),
        });
    };
    match exchange.part {
        ExchangePart::Request => {
            let body = bodies
                .entry(exchange.stream)
                .or_default()
                .body(data)
                .map_err(|what| ExportError::Exchange { seq, what })?;
            journal.request(exchange.at, seq, body)?;
        }
        ExchangePart::Reply | ExchangePart::Error => {
            let kind = if exchange.part == ExchangePart::Reply {
                KIND_RESPONSE
            } else {
                KIND_ERROR
            };
            let mut line = serde_json::Map::new();
            line.insert(SEQ.into(), json!(seq));
            line.append(&mut data);
            journal.write(exchange.at, kind, Value::Object(line))?;
        }
    }
    Ok(())
}
