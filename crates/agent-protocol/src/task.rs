//! The workers' messages: a task ([`TaskMessage`]), the events of its run ([`TaskEvent`]) and
//! its result ([`TaskResult`]), all JSON, in declaration order (their bytes are pinned by the
//! workspace's wire snapshots).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ProtocolError;
use crate::usage::TokenUsage;
use crate::vocabulary::{Ending, EventKind, RunId};

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

    /// Checks the id, the session id and the text (the agent kind is the runner's to check:
    /// `agent_worker::target_of`).
    ///
    /// # Errors
    ///
    /// [`ProtocolError::InvalidTask`] naming what is wrong.
    pub fn check(&self) -> Result<(), ProtocolError> {
        check_id("task id", &self.id)?;
        if let Some(session) = &self.options.session_id {
            check_id("session id", session)?;
        }
        if self.task.trim().is_empty() {
            return Err(ProtocolError::InvalidTask("the task text is empty".into()));
        }
        Ok(())
    }

    /// The task as JSON bytes.
    ///
    /// # Errors
    ///
    /// Never in practice (a JSON value always serialises).
    pub fn to_bytes(&self) -> Result<bytes::Bytes, ProtocolError> {
        to_bytes("task", self)
    }

    /// A task read from JSON bytes.
    ///
    /// # Errors
    ///
    /// The bytes are not a task.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProtocolError> {
        serde_json::from_slice(bytes).map_err(|source| ProtocolError::Json {
            what: "task",
            source,
        })
    }
}

/// Whether `id` can be a subject token and a KV key.
fn check_id(what: &str, id: &str) -> Result<(), ProtocolError> {
    let valid = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(ProtocolError::InvalidTask(format!(
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
    pub usage: TokenUsage,
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
    /// The result as JSON bytes.
    ///
    /// # Errors
    ///
    /// Never in practice.
    pub fn to_bytes(&self) -> Result<bytes::Bytes, ProtocolError> {
        to_bytes("result", self)
    }

    /// A result read from JSON bytes.
    ///
    /// # Errors
    ///
    /// The bytes are not a result.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProtocolError> {
        serde_json::from_slice(bytes).map_err(|source| ProtocolError::Json {
            what: "result",
            source,
        })
    }
}

fn to_bytes(what: &'static str, value: &impl Serialize) -> Result<bytes::Bytes, ProtocolError> {
    serde_json::to_vec(value)
        .map(bytes::Bytes::from)
        .map_err(|source| ProtocolError::Json { what, source })
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
        assert!(task.check().is_ok());
        let bad = task.clone().with_id("a.b");
        assert!(matches!(bad.check(), Err(ProtocolError::InvalidTask(_))));
        let bad_session = TaskMessage::new("swe", "x").in_session("a b");
        assert!(bad_session.check().is_err());
        let empty = TaskMessage::new("swe", "  ");
        assert!(empty.check().is_err());
        assert!(TaskMessage::from_bytes(b"{}").is_err());
    }
}
