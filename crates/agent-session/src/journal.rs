//! The run journal: one JSON object per line — every agent event, every request sent to the
//! model and its reply — written under the workspace so a run can be inspected later.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use agent_core::{AgentEvent, EventBus};
use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmClient, LlmError, LlmSettings};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

/// Where journals go, inside the workspace.
pub const JOURNAL_DIR: &str = ".openmanus/runs";

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default()
}

/// A journal being written by a background task.
pub struct Journal {
    path: PathBuf,
    sender: UnboundedSender<Entry>,
    writer: Option<JoinHandle<std::io::Result<u64>>>,
}

/// What the writer task receives.
enum Entry {
    Line(Value),
    /// Flush and stop, even while handles to the journal are still alive.
    Close,
}

impl Journal {
    /// Creates `<workspace>/.openmanus/runs/<time>-<agent>.jsonl`.
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
        let writer = tokio::task::spawn_blocking(move || {
            let mut out = std::io::BufWriter::new(file);
            let mut lines = 0;
            while let Some(Entry::Line(entry)) = receiver.blocking_recv() {
                serde_json::to_writer(&mut out, &entry)?;
                out.write_all(b"\n")?;
                // Each entry reaches the file at once: a process that must exit without
                // unwinding (a second Ctrl-C) loses nothing already written.
                out.flush()?;
                lines += 1;
            }
            out.flush()?;
            Ok(lines)
        });
        Ok(Self {
            path,
            sender,
            writer: Some(writer),
        })
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A handle for writing entries from elsewhere.
    pub fn handle(&self) -> JournalHandle {
        JournalHandle {
            sender: Some(self.sender.clone()),
        }
    }

    /// Flushes and closes the file; returns how many entries it holds.
    ///
    /// # Errors
    ///
    /// A write error of the background writer.
    pub async fn close(mut self) -> std::io::Result<u64> {
        let _ = self.sender.send(Entry::Close);
        match self.writer.take() {
            Some(writer) => writer.await.map_err(std::io::Error::other)?,
            None => Ok(0),
        }
    }
}

impl Journal {
    /// The model a run talks to: an HTTP client for `settings` whose retries are reported on
    /// `events` (when given), wrapped so every request and reply lands in this journal.
    ///
    /// # Errors
    ///
    /// Settings the client cannot use (see [`LlmClient::new`]).
    pub fn model(
        &self,
        settings: LlmSettings,
        events: Option<&EventBus>,
    ) -> Result<Arc<dyn ChatModel>, LlmError> {
        let mut client = LlmClient::new(settings)?;
        if let Some(events) = events {
            client = client.with_events(events.clone());
        }
        let client = Arc::new(client);
        Ok(Arc::new(
            JournaledModel::new(client.clone(), self.handle()).with_wire_body(client),
        ))
    }
}

/// Writes journal entries; cheap to clone. Entries sent after the journal closed are dropped.
#[derive(Clone, Default)]
pub struct JournalHandle {
    sender: Option<UnboundedSender<Entry>>,
}

impl JournalHandle {
    /// Writes one entry of kind `kind` with `data` (an object whose fields join the entry).
    pub fn write(&self, kind: &str, data: Value) {
        let Some(sender) = &self.sender else { return };
        let mut entry = json!({"time_ms": now_ms().to_string(), "kind": kind});
        if let (Some(entry), Value::Object(fields)) = (entry.as_object_mut(), data) {
            entry.extend(fields);
        }
        let _ = sender.send(Entry::Line(entry));
    }

    /// Writes an agent event.
    pub fn event(&self, event: &AgentEvent) {
        self.write("event", json!({ "event": event }));
    }
}

/// A model that records every request and reply in the journal, then passes them on.
pub struct JournaledModel {
    inner: Arc<dyn ChatModel>,
    journal: JournalHandle,
    wire: Option<Arc<LlmClient>>,
}

impl JournaledModel {
    /// Wraps `inner`; requests are journaled as `ChatRequest`s.
    pub fn new(inner: Arc<dyn ChatModel>, journal: JournalHandle) -> Self {
        Self {
            inner,
            journal,
            wire: None,
        }
    }

    /// Journals each request as the JSON body `client` sends (model, max_tokens, the formatted
    /// messages, ...) instead of the `ChatRequest`.
    #[must_use]
    pub fn with_wire_body(mut self, client: Arc<LlmClient>) -> Self {
        self.wire = Some(client);
        self
    }
}

#[async_trait]
impl ChatModel for JournaledModel {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let entry = match &self.wire {
            Some(client) => json!({ "body": client.request_body(&request) }),
            None => json!({ "request": &request }),
        };
        self.journal.write("model_request", entry);
        let result = self.inner.complete(request).await;
        match &result {
            Ok(response) => self
                .journal
                .write("model_response", json!({ "response": response })),
            Err(error) => self
                .journal
                .write("model_error", json!({ "error": error.to_string() })),
        }
        result
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    fn supports_images(&self) -> bool {
        self.inner.supports_images()
    }
}
