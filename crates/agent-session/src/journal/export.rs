//! A stored session written out as a journal: the same JSONL lines a live run writes (`task`,
//! `event`, `flow_event`, `result`), so [`JournalReader`](super::JournalReader) and every tool
//! that reads journals read it. The store keeps no model requests: an exported journal has no
//! `model_request` lines; it starts with a `session` line and ends with a `memory` line (the
//! agent's memory as stored).

use std::io::Write;

use agent_store::{EventKind, Store, StoreError};
use serde_json::{Value, json};

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
}

/// Writes journal lines to any writer, long texts written once as in a live journal.
pub struct JournalWriter<W: Write> {
    out: W,
    texts: TextWriter,
    lines: u64,
}

impl<W: Write> JournalWriter<W> {
    /// A writer of journal lines to `out`.
    pub fn new(out: W) -> Self {
        Self {
            out,
            texts: TextWriter::default(),
            lines: 0,
        }
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
    let mut after = None;
    loop {
        let events = store.events_after(id, after, PAGE).await?;
        let Some(last) = events.last() else { break };
        after = Some(last.id);
        for event in events {
            let (kind, data) = match event.kind {
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
            let mut data = data;
            if let (Value::Object(fields), Some(run)) = (&mut data, event.run_id) {
                fields.insert("run_id".into(), json!(run));
            }
            journal.write(event.at, kind, data)?;
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
