//! The A2A objects, independent of the wire dialect: messages and their parts, tasks, their
//! status and artifacts, and the events of a stream. [`crate::Dialect`] turns them into the
//! JSON of one protocol version and back.

use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The client (a person or another agent).
    User,
    /// The agent answering.
    Agent,
}

/// One piece of a message or an artifact.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text.
    Text(String),
    /// Structured data (a JSON value).
    Data(Value),
    /// A file, by URL or inline (base64).
    File {
        /// The file's name.
        name: Option<String>,
        /// Its media type.
        media_type: Option<String>,
        /// Where it can be fetched.
        uri: Option<String>,
        /// Its bytes, base64.
        bytes: Option<String>,
    },
}

impl Part {
    /// The text of a text part.
    #[must_use]
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            _ => None,
        }
    }
}

/// A message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Its id, chosen by its sender.
    pub message_id: String,
    /// Its author.
    pub role: Role,
    /// Its content.
    pub parts: Vec<Part>,
    /// The conversation it belongs to.
    pub context_id: Option<String>,
    /// The task it belongs to.
    pub task_id: Option<String>,
    /// Extra data, passed through.
    pub metadata: Option<Value>,
}

impl Message {
    /// A message of `role` holding `text`, with a new id.
    #[must_use]
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            message_id: uuid::Uuid::new_v4().to_string(),
            role,
            parts: vec![Part::Text(text.into())],
            context_id: None,
            task_id: None,
            metadata: None,
        }
    }

    /// Sets the conversation and task.
    #[must_use]
    pub fn within(mut self, context_id: Option<String>, task_id: Option<String>) -> Self {
        self.context_id = context_id;
        self.task_id = task_id;
        self
    }

    /// The text parts joined by newlines; data parts as their JSON.
    #[must_use]
    pub fn joined_text(&self) -> String {
        joined_text(&self.parts)
    }
}

/// The text parts of `parts` joined by newlines; data parts as their JSON; files by name.
#[must_use]
pub fn joined_text(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|part| match part {
            Part::Text(text) => text.clone(),
            Part::Data(data) => data.to_string(),
            Part::File { name, uri, .. } => format!(
                "[file {}]",
                name.as_deref().or(uri.as_deref()).unwrap_or("(inline)")
            ),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// Accepted, not started.
    Submitted,
    /// Being worked on.
    Working,
    /// Waiting for the client's next message (the agent asked a question).
    InputRequired,
    /// Waiting for credentials.
    AuthRequired,
    /// Done; its artifacts hold the result.
    Completed,
    /// Cancelled.
    Canceled,
    /// Failed.
    Failed,
    /// Refused by the agent.
    Rejected,
    /// A state this side does not know.
    Unknown,
}

impl TaskState {
    /// Whether the task can change no more.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Canceled | Self::Failed | Self::Rejected
        )
    }

    /// Whether the task waits for the client (a stream ends there too).
    #[must_use]
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }
}

/// A task's state, with the agent's message about it and when it was reached.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// What the agent says about it (the question, for `input-required`).
    pub message: Option<Message>,
    /// When, RFC 3339.
    pub timestamp: Option<String>,
}

impl TaskStatus {
    /// `state` now, with `message`.
    #[must_use]
    pub fn now(state: TaskState, message: Option<Message>) -> Self {
        Self {
            state,
            message,
            timestamp: Some(crate::time::now_rfc3339()),
        }
    }
}

/// A result of a task.
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    /// Its id, unique within the task.
    pub artifact_id: String,
    /// Its name.
    pub name: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its content.
    pub parts: Vec<Part>,
}

/// A unit of work an agent does for a client.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Its id.
    pub id: String,
    /// The conversation it belongs to.
    pub context_id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// Its results.
    pub artifacts: Vec<Artifact>,
    /// The messages exchanged, oldest first.
    pub history: Vec<Message>,
}

/// A change of a task's status, as a stream reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusUpdate {
    /// The task.
    pub task_id: String,
    /// Its conversation.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// Whether it is the stream's last event (0.2/0.3 say so; 1.0 ends the stream).
    pub is_final: bool,
}

/// A new or grown artifact, as a stream reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactUpdate {
    /// The task.
    pub task_id: String,
    /// Its conversation.
    pub context_id: String,
    /// The artifact (or its next chunk).
    pub artifact: Artifact,
    /// Whether the parts add to an artifact sent before.
    pub append: bool,
    /// Whether this is the artifact's last chunk.
    pub last_chunk: bool,
}

/// One event of a `message/stream` or `tasks/resubscribe` stream; also what `message/send`
/// answers (a task or a message).
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// The task as it stands.
    Task(Task),
    /// A message (an agent that answers without a task).
    Message(Message),
    /// A status change.
    Status(StatusUpdate),
    /// An artifact.
    Artifact(ArtifactUpdate),
}

impl StreamEvent {
    /// The task id the event is about, if any.
    #[must_use]
    pub fn task_id(&self) -> Option<&str> {
        match self {
            Self::Task(task) => Some(&task.id),
            Self::Message(message) => message.task_id.as_deref(),
            Self::Status(update) => Some(&update.task_id),
            Self::Artifact(update) => Some(&update.task_id),
        }
    }
}

/// The parameters of `message/send` and `message/stream`.
#[derive(Debug, Clone, PartialEq)]
pub struct SendParams {
    /// The message.
    pub message: Message,
    /// Wait for the task to end or to need input before answering (`message/send` only);
    /// true unless the client says otherwise.
    pub blocking: bool,
    /// How many messages of the history to return.
    pub history_length: Option<usize>,
}

/// The parameters of `tasks/get`, `tasks/cancel` and `tasks/resubscribe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskQuery {
    /// The task.
    pub id: String,
    /// How many messages of the history to return (`tasks/get`).
    pub history_length: Option<usize>,
}
