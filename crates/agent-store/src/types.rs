//! The records the store keeps and returns.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::StoreError;

/// A run's id (its row id; increasing over the whole store).
pub type RunId = i64;
/// An event's id: increasing over the whole store, never reused (the SSE `Last-Event-ID`).
pub type EventId = i64;

/// Milliseconds since the Unix epoch (0 when the clock is before it).
#[must_use]
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// The text stored (and serialised): snake case.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = StoreError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    other => Err(StoreError::corrupt($what, format!("unknown value {other:?}"))),
                }
            }
        }
    };
}

text_enum!(
    /// Where a session stands: the state of its latest run, or idle before the first.
    SessionState, "session state" {
        /// No run yet, or the last one ran out of steps (a new task continues it).
        Idle = "idle",
        /// A run is in progress.
        Running = "running",
        /// The last run finished.
        Finished = "finished",
        /// The last run failed.
        Failed = "failed",
        /// The last run was cancelled, or its process ended in the middle of it.
        Interrupted = "interrupted",
    }
);

text_enum!(
    /// How a run ended (or that it has not).
    RunState, "run state" {
        /// In progress (or its process died and nobody has looked since:
        /// [`Store::mark_interrupted_runs`](crate::Store::mark_interrupted_runs)).
        Running = "running",
        /// The agent finished (or the flow completed its plan).
        Finished = "finished",
        /// The step budget ran out first.
        MaxSteps = "max_steps",
        /// The run was cancelled.
        Cancelled = "cancelled",
        /// The run failed.
        Failed = "failed",
        /// The process running it ended in the middle of it (killed, crashed).
        Interrupted = "interrupted",
    }
);

impl RunState {
    /// The state a session takes when its latest run ends so.
    #[must_use]
    pub fn session_state(self) -> SessionState {
        match self {
            Self::Running => SessionState::Running,
            Self::Finished => SessionState::Finished,
            Self::MaxSteps => SessionState::Idle,
            Self::Failed => SessionState::Failed,
            Self::Cancelled | Self::Interrupted => SessionState::Interrupted,
        }
    }
}

text_enum!(
    /// What a stored event is.
    EventKind, "event kind" {
        /// An `agent_core::AgentEvent` (its JSON, tagged by `type`).
        Agent = "agent",
        /// A planning-flow event (`agents::flow::FlowEvent`'s JSON).
        Flow = "flow",
        /// A run began: `{"run_id", "task"}`.
        RunStarted = "run_started",
        /// A run ended: `{"run_id", "state", "status", "answer", "usage", "changes"}`.
        RunFinished = "run_finished",
    }
);

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

/// Tokens used by a run, and what they cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenUsage {
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
    pub data: Value,
}

impl NewEvent {
    /// An event of `kind` happening now.
    #[must_use]
    pub fn now(run_id: Option<RunId>, kind: EventKind, data: Value) -> Self {
        Self {
            run_id,
            at: now_ms(),
            kind,
            data,
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

/// What one transaction writes: memory changes, then events, for one session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// Memory changes, in order.
    pub memory: Vec<MemoryWrite>,
    /// Events, in order.
    pub events: Vec<NewEvent>,
}

impl Batch {
    /// Whether the batch writes nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.memory.is_empty() && self.events.is_empty()
    }
}
