//! The run journal: one JSON object per line — every agent event, every request sent to the
//! model and its reply — written under the workspace so a run can be inspected later.
//!
//! The journal grows linearly with the run: a request is not written whole (its body repeats
//! the whole conversation, so whole bodies grow quadratically), but as what is new in it; and
//! a long text already in the journal is written as a reference to it.
//!
//! # Lines
//!
//! Every line has `time_ms` (milliseconds since the Unix epoch, as a string) and `kind`:
//!
//! * `session` — the first line of a session's journal: `{"session": {"agent", "workspace"}}`,
//!   the agent kind (or `flow`) and the workspace, as an exported session's first line has them
//!   (what a [replay](crate::replay) rebuilds, and where it moves recorded paths from).
//! * `task`, `result`, `event` (an agent event under `event`), `flow_event`, ... — written by
//!   the front end with [`JournalHandle::write`] / [`JournalHandle::event`], fields as given.
//! * `model_request` — one request to the model, numbered by `seq` (0, 1, ...):
//!   * `params`: every field of the body but `messages` and `tools`, verbatim (`model`,
//!     `max_tokens` or `max_completion_tokens`, `temperature`, `tool_choice`, `stream`,
//!     `stream_options`);
//!   * `new_messages`: the messages this journal has not written before, which take the next
//!     message numbers (the first message written is 0);
//!   * `messages`: the body's messages, in order, as half-open ranges `[start, end)` of message
//!     numbers. A message is written once however often it is sent: the system prompt once, each
//!     turn once, an ephemeral next-step prompt once; a request whose list is not an extension
//!     of the previous one (memory truncation dropped turns, another conversation shares the
//!     model) is just other ranges;
//!   * `tools` (when the body has tools): `[name, schema hash]` pairs, the hash being the first
//!     16 hex digits of the SHA-256 of the tool's JSON; `new_tools` maps the hashes seen for the
//!     first time to the tools' full JSON.
//! * `model_response` — the reply to request `seq`: content, tool calls, `usage` and finish
//!   reason under `response`; `model_error` — the error text of a failed request `seq`.
//!
//! # Long texts
//!
//! A string of [`MIN_TEXT`] bytes or more that an earlier line (or an earlier place in the same
//! line) already holds is written as the reference `"\u0000<n>"`: the n-th such long text of
//! the journal, counting each distinct one once, in the order the lines hold them (object
//! fields in line order, arrays in order). So an observation is written once, though it is in
//! the `tool_call_finished` event, in the `step_finished` event and in the next request; and a
//! file viewed twice unchanged is written once. A string that starts with `\u0000` is written
//! with a second `\u0000` in front. The reader puts every text back.
//!
//! A session recorded in the store is written out in the same format by [`export_session`]
//! (`openmanus sessions export`).
//!
//! [`JournalReader`] (and [`read`], [`request_bodies`]) read a journal back and rebuild every
//! request body exactly, equal as JSON to the body the HTTP client sent (retries resend that
//! same body). Journals of older versions, whose `model_request` lines hold the whole `body`,
//! read the same way.
//!
//! ```
//! use agent_session::journal::{self, Journal};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let workspace = tempfile::tempdir().unwrap();
//! let journal = Journal::create(workspace.path(), "demo").unwrap();
//! let handle = journal.handle();
//! let system = json!({"role": "system", "content": "Be brief."});
//! let first = json!({"model": "m", "messages": [system, {"role": "user", "content": "hi"}]});
//! handle.request(first.clone());
//! let path = journal.path().to_path_buf();
//! journal.close().await.unwrap();
//! assert_eq!(journal::request_bodies(&path).unwrap(), [first]);
//! # });
//! ```

mod encode;
mod export;
pub(crate) mod format;
mod handle;
mod model;
mod reader;
mod texts;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::EventBus;
use agent_llm::{ChatModel, LlmError, LlmSettings, Model};
use tokio::sync::mpsc::unbounded_channel;
use tokio::task::JoinHandle;

pub use export::{ExportError, JournalWriter, export_session};
pub use handle::JournalHandle;
pub use model::JournaledModel;
pub use reader::{JournalLine, JournalReader, ReadError, read, request_bodies};

pub use texts::MIN_TEXT;

pub(crate) use encode::Encoder;
pub(crate) use handle::{Entry, EntrySink};

use handle::now_ms;
use texts::TextWriter;

/// How many queued entries the writer takes at once.
const BATCH: usize = 256;

/// Where journals go, inside the workspace.
pub const JOURNAL_DIR: &str = ".openmanus/runs";

/// A journal being written by a task on the runtime.
pub struct Journal {
    path: PathBuf,
    handle: JournalHandle,
    writer: Option<JoinHandle<std::io::Result<u64>>>,
}

impl Journal {
    /// Creates `<workspace>/.openmanus/runs/<time>-<pid>-<agent>.jsonl`.
    ///
    /// # Errors
    ///
    /// When the directory or the file cannot be created.
    pub fn create(workspace: &Path, agent: &str) -> std::io::Result<Self> {
        let dir = workspace.join(JOURNAL_DIR);
        std::fs::create_dir_all(&dir)?;
        let name: String = agent
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        let path = dir.join(format!("{}-{}-{name}.jsonl", now_ms(), std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        let (sender, mut receiver) = unbounded_channel::<Entry>();
        let shown = path.display().to_string();
        // The writer is a task on the runtime, not a thread of its own: it takes everything
        // queued since it last ran (one wake-up and one write per batch, not per entry; on a
        // current-thread runtime no thread is woken at all). The writes are small appends to a
        // local file.
        let writer = tokio::spawn(async move {
            let written = write_lines(file, &mut receiver).await;
            if let Err(error) = &written {
                // Said at once (a full disk, a removed directory): the run goes on without its
                // journal, and `close` returns the error.
                tracing::warn!(
                    journal = %shown,
                    %error,
                    "the run journal cannot be written; the run goes on without it"
                );
            }
            written
        });
        Ok(Self {
            path,
            handle: JournalHandle::new(Arc::new(sender)),
            writer: Some(writer),
        })
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A handle for writing entries from elsewhere.
    pub fn handle(&self) -> JournalHandle {
        self.handle.clone()
    }

    /// Flushes and closes the file; returns how many entries it holds.
    ///
    /// # Errors
    ///
    /// A write error of the background writer.
    pub async fn close(mut self) -> std::io::Result<u64> {
        self.handle.close();
        match self.writer.take() {
            Some(writer) => writer.await.map_err(std::io::Error::other)?,
            None => Ok(0),
        }
    }

    /// The model a run talks to: the client `settings.api_type` names, speaking tools as
    /// `settings.tool_call_mode` says ([`Model`]), whose retries are reported on `events` (when
    /// given), wrapped so every request and reply lands in this journal.
    ///
    /// # Errors
    ///
    /// Settings the client cannot use (see [`Model::new`]).
    pub fn model(
        &self,
        settings: LlmSettings,
        events: Option<&EventBus>,
    ) -> Result<Arc<dyn ChatModel>, LlmError> {
        journaled_model(settings, events, self.handle())
    }
}

/// The model a run talks to (see [`Journal::model`]), its requests and replies written to
/// `journal`.
pub(crate) fn journaled_model(
    settings: LlmSettings,
    events: Option<&EventBus>,
    journal: JournalHandle,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    let mut client = Model::new(settings)?;
    if let Some(events) = events {
        client = client.with_events(events.clone());
    }
    let client = Arc::new(client);
    Ok(Arc::new(
        JournaledModel::new(client.clone(), journal).with_wire_body(client),
    ))
}

/// Writes every entry received to `file`, one line each, until the journal is closed; returns
/// how many lines it wrote, or the first write error.
async fn write_lines(
    file: std::fs::File,
    receiver: &mut tokio::sync::mpsc::UnboundedReceiver<Entry>,
) -> std::io::Result<u64> {
    let mut out = std::io::BufWriter::new(file);
    let mut encoder = Encoder::default();
    let mut texts = TextWriter::default();
    let mut lines = 0;
    let mut entries = Vec::with_capacity(BATCH);
    let mut open = true;
    while open && receiver.recv_many(&mut entries, BATCH).await > 0 {
        for entry in entries.drain(..) {
            let mut line = match entry {
                Entry::Line(line) => line,
                Entry::Request { mut head, body } => {
                    head.extend(encoder.encode(body));
                    serde_json::Value::Object(head)
                }
                Entry::Delta { mut head, delta } => {
                    head.extend(encoder.encode_delta(delta).into_map());
                    serde_json::Value::Object(head)
                }
                Entry::Reply { head, response } => Entry::reply_line(head, &response),
                Entry::Close => {
                    open = false;
                    break;
                }
            };
            texts.encode(&mut line);
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
            lines += 1;
        }
        // Each batch reaches the file before the writer waits again: a process that must exit
        // without unwinding (a second Ctrl-C) loses nothing already written.
        out.flush()?;
    }
    out.flush()?;
    Ok(lines)
}
