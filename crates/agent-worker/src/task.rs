//! The messages on the wire: a task ([`TaskMessage`]), the events of its run ([`TaskEvent`])
//! and its result ([`TaskResult`]), all JSON.

use agent_session::{Ending, RunReport, Target};
use agent_store::{EventKind, RunId, StoredEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::WorkerError;

/// The longest task id accepted (it becomes a NATS subject token and a KV key).
const MAX_ID_LEN: usize = 128;

/// A task for the workers: what to run, and with which agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskMessage {
    /// The task's id: the de-duplication key of the queue, the key of its result and the last
    /// token of its event subject. Letters, digits, `-` and `_` only.
    pub id: String,
    /// The agent kind (`manus`, `swe`, `data_analysis`, ...) or `flow`.
    pub agent: String,
    /// The task text, given to the agent as its prompt.
    pub task: String,
    /// Options.
    #[serde(default)]
    pub options: TaskOptions,
}

/// A task's options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskOptions {
    /// The session the task continues: its conversation is read from the sessions bucket
    /// before the run and written back after it, so the next task of the session can run on
    /// any worker. `None`: a session of its own, named after the task id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Settings kept with the session (free JSON, as the server's session settings).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub settings: Value,
}

impl TaskMessage {
    /// A task with a new random id.
    #[must_use]
    pub fn new(agent: impl Into<String>, task: impl Into<String>) -> Self {
        Self {
            id: uuid::Uuid::new_v4().simple().to_string(),
            agent: agent.into(),
            task: task.into(),
            options: TaskOptions::default(),
        }
    }

    /// The same task with this id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// The same task, continuing session `id`.
    #[must_use]
    pub fn in_session(mut self, id: impl Into<String>) -> Self {
        self.options.session_id = Some(id.into());
        self
    }

    /// The session the task runs in: [`TaskOptions::session_id`], else the task id.
    #[must_use]
    pub fn session_id(&self) -> &str {
        self.options.session_id.as_deref().unwrap_or(&self.id)
    }

    /// Checks the id, the session id, the agent kind and the text.
    ///
    /// # Errors
    ///
    /// [`WorkerError::InvalidTask`] naming what is wrong.
    pub fn validate(&self) -> Result<Target, WorkerError> {
        check_id("task id", &self.id)?;
        if let Some(session) = &self.options.session_id {
            check_id("session id", session)?;
        }
        if self.task.trim().is_empty() {
            return Err(WorkerError::InvalidTask("the task text is empty".into()));
        }
        self.agent
            .parse::<Target>()
            .map_err(|error| WorkerError::InvalidTask(error.to_string()))
    }

    /// The task as JSON bytes.
    ///
    /// # Errors
    ///
    /// Never in practice (a JSON value always serialises).
    pub fn to_bytes(&self) -> Result<bytes::Bytes, WorkerError> {
        to_bytes("task", self)
    }

    /// A task read from JSON bytes.
    ///
    /// # Errors
    ///
    /// The bytes are not a task.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, WorkerError> {
        serde_json::from_slice(bytes).map_err(|source| WorkerError::Json {
            what: "task",
            source,
        })
    }
}

/// Whether `id` can be a subject token and a KV key.
fn check_id(what: &str, id: &str) -> Result<(), WorkerError> {
    let valid = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(WorkerError::InvalidTask(format!(
            "the {what} {id:?} must be 1 to {MAX_ID_LEN} letters, digits, '-' or '_'"
        )))
    }
}

/// One event of a task's run, as published on the task's event subject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEvent {
    /// The task.
    pub task_id: String,
    /// The session the task runs in.
    pub session_id: String,
    /// Which delivery of the task produced it (1 for the first; a redelivered task's events
    /// come again with the next number).
    pub attempt: u64,
    /// The worker that ran it.
    pub worker: String,
    /// Its number within the attempt: 1, 2, 3, ... with no gap, in the order of the run.
    pub seq: u64,
    /// The run it belongs to, as numbered by the worker's own record of the attempt.
    pub run_id: Option<RunId>,
    /// When it happened (ms since the Unix epoch).
    pub at: i64,
    /// What it is: `run_started`, `agent`, `flow` or `run_finished` (as the session store).
    pub kind: EventKind,
    /// Its JSON, as the session store keeps it.
    pub data: Value,
}

impl TaskEvent {
    pub(crate) fn from_stored(
        task: &TaskMessage,
        attempt: u64,
        worker: &str,
        event: StoredEvent,
    ) -> Self {
        Self {
            task_id: task.id.clone(),
            session_id: task.session_id().to_owned(),
            attempt,
            worker: worker.to_owned(),
            seq: u64::try_from(event.id).unwrap_or_default(),
            run_id: event.run_id,
            at: event.at,
            kind: event.kind,
            data: event.data,
        }
    }
}

/// Tokens a task used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskUsage {
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Of the input tokens, those read from the provider's prompt cache.
    #[serde(default)]
    pub cached_prompt_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
    /// The cost in US dollars at the models' prices; `None` when no call had a priced model.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// What a task came to, stored once under its id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The task.
    pub task_id: String,
    /// The session it ran in.
    pub session_id: String,
    /// The agent kind.
    pub agent: String,
    /// How it ended: `finished`, `max_steps`, `cancelled` or `failed`.
    pub ending: Ending,
    /// The outcome in words (`finished (special tool `terminate`)`, `error: ...`).
    pub status: String,
    /// The final answer.
    pub answer: Option<String>,
    /// OpenManus's result text (`Step 1: ...`).
    pub text: String,
    /// Files created, changed or deleted in the task's workspace.
    pub changes: Value,
    /// Tokens used.
    pub usage: TaskUsage,
    /// The worker that ran it.
    pub worker: String,
    /// The delivery that ran it to its end (1 unless it was redelivered).
    pub attempt: u64,
    /// How many events the attempt published.
    pub events: u64,
    /// When the attempt started and ended (ms since the Unix epoch).
    pub started_at: i64,
    /// When it ended.
    pub finished_at: i64,
}

impl TaskResult {
    pub(crate) fn from_report(
        task: &TaskMessage,
        report: &RunReport,
        worker: &str,
        attempt: u64,
    ) -> Self {
        Self {
            task_id: task.id.clone(),
            session_id: task.session_id().to_owned(),
            agent: task.agent.clone(),
            ending: report.ending(),
            status: report.status_text(),
            answer: report.answer.clone(),
            text: report.text.clone(),
            changes: serde_json::to_value(&report.changes).unwrap_or(Value::Null),
            usage: TaskUsage {
                prompt_tokens: report.usage.prompt_tokens,
                cached_prompt_tokens: report.usage.cached_prompt_tokens,
                completion_tokens: report.usage.completion_tokens,
                cost_usd: report.usage.is_priced().then_some(report.usage.cost_usd),
            },
            worker: worker.to_owned(),
            attempt,
            events: 0,
            started_at: 0,
            finished_at: agent_store::now_ms(),
        }
    }

    pub(crate) fn failed(task: &TaskMessage, status: String, worker: &str, attempt: u64) -> Self {
        Self {
            task_id: task.id.clone(),
            session_id: task.session_id().to_owned(),
            agent: task.agent.clone(),
            ending: Ending::Failed,
            status,
            answer: None,
            text: String::new(),
            changes: Value::Null,
            usage: TaskUsage::default(),
            worker: worker.to_owned(),
            attempt,
            events: 0,
            started_at: 0,
            finished_at: agent_store::now_ms(),
        }
    }

    /// The result as JSON bytes.
    ///
    /// # Errors
    ///
    /// Never in practice.
    pub fn to_bytes(&self) -> Result<bytes::Bytes, WorkerError> {
        to_bytes("result", self)
    }

    /// A result read from JSON bytes.
    ///
    /// # Errors
    ///
    /// The bytes are not a result.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, WorkerError> {
        serde_json::from_slice(bytes).map_err(|source| WorkerError::Json {
            what: "result",
            source,
        })
    }
}

fn to_bytes(what: &'static str, value: &impl Serialize) -> Result<bytes::Bytes, WorkerError> {
    serde_json::to_vec(value)
        .map(bytes::Bytes::from)
        .map_err(|source| WorkerError::Json { what, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_round_trips_and_is_checked() {
        let task = TaskMessage::new("swe", "Write a haiku").in_session("s-1");
        let back = TaskMessage::from_bytes(&task.to_bytes().unwrap()).unwrap();
        assert_eq!(back, task);
        assert_eq!(back.session_id(), "s-1");
        assert!(task.validate().is_ok());
        let bad = task.clone().with_id("a.b");
        assert!(matches!(bad.validate(), Err(WorkerError::InvalidTask(_))));
        let unknown = TaskMessage::new("nobody", "x");
        assert!(unknown.validate().is_err());
        let empty = TaskMessage::new("swe", "  ");
        assert!(empty.validate().is_err());
        assert!(TaskMessage::from_bytes(b"{}").is_err());
    }
}
