//! The two wire dialects of A2A's JSON-RPC binding.
//!
//! * [`Dialect::Legacy`]: protocol 0.2 and 0.3 (a2a-sdk 0.2.x and 0.3.x, OpenManus's pin 0.2.5):
//!   methods `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`;
//!   objects tagged with `kind` (`"task"`, `"message"`, `"status-update"`, `"artifact-update"`,
//!   parts `"text"`/`"data"`/`"file"`); roles `user`/`agent`; states `input-required`, ….
//! * [`Dialect::V1`]: protocol 1.0 (a2a-sdk 1.x): methods `SendMessage`,
//!   `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask`; the proto3 JSON of
//!   `a2a.proto` — results wrapped by case (`{"task": …}`, `{"statusUpdate": …}`), parts by field
//!   (`{"text": …}`), enums `ROLE_USER`, `TASK_STATE_INPUT_REQUIRED`.
//!
//! Their method names do not overlap, so a server tells the dialect from the method.
//!
//! Why one file past 700 lines (its tests included): each conversion is written for both dialects
//! side by side, so a change to one is seen against the other; the types and the JSON-RPC framing
//! are already apart (`types.rs`, `rpc.rs`).

use serde_json::{Map, Value, json};

use crate::rpc::RpcError;
use crate::types::{
    Artifact, ArtifactUpdate, Message, Part, Role, SendParams, StatusUpdate, StreamEvent, Task,
    TaskQuery, TaskState, TaskStatus,
};

/// The protocol version of [`Dialect::V1`].
pub const PROTOCOL_V1: &str = "1.0";
/// The protocol version of [`Dialect::Legacy`] announced in the card.
pub const PROTOCOL_LEGACY: &str = "0.3.0";

/// A wire dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Protocol 0.2/0.3: `message/send`, `kind` tags.
    Legacy,
    /// Protocol 1.0: `SendMessage`, proto JSON.
    V1,
}

/// What a request asks for, whatever its dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Send a message, answer with the task (or a message).
    SendMessage,
    /// Send a message, answer with a stream of events.
    StreamMessage,
    /// A task as it stands.
    GetTask,
    /// Cancel a task.
    CancelTask,
    /// The events of a task again, from now on.
    Resubscribe,
    /// The tasks (1.0 only).
    ListTasks,
    /// Push notification settings ([`crate::PushOp`] tells which operation).
    PushConfig,
    /// The authenticated extended card (not configured here).
    ExtendedCard,
}

impl Dialect {
    /// The dialect and method of a method name; `None` for an unknown method.
    #[must_use]
    pub fn of_method(name: &str) -> Option<(Self, Method)> {
        let found = match name {
            "message/send" => (Self::Legacy, Method::SendMessage),
            "message/stream" => (Self::Legacy, Method::StreamMessage),
            "tasks/get" => (Self::Legacy, Method::GetTask),
            "tasks/cancel" => (Self::Legacy, Method::CancelTask),
            "tasks/resubscribe" => (Self::Legacy, Method::Resubscribe),
            "agent/getAuthenticatedExtendedCard" => (Self::Legacy, Method::ExtendedCard),
            "SendMessage" => (Self::V1, Method::SendMessage),
            "SendStreamingMessage" => (Self::V1, Method::StreamMessage),
            "GetTask" => (Self::V1, Method::GetTask),
            "CancelTask" => (Self::V1, Method::CancelTask),
            "SubscribeToTask" => (Self::V1, Method::Resubscribe),
            "ListTasks" => (Self::V1, Method::ListTasks),
            "GetExtendedAgentCard" => (Self::V1, Method::ExtendedCard),
            "CreateTaskPushNotificationConfig"
            | "GetTaskPushNotificationConfig"
            | "ListTaskPushNotificationConfigs"
            | "DeleteTaskPushNotificationConfig" => (Self::V1, Method::PushConfig),
            other if other.starts_with("tasks/pushNotificationConfig/") => {
                (Self::Legacy, Method::PushConfig)
            }
            _ => return None,
        };
        Some(found)
    }

    /// The method name of `method` in this dialect.
    #[must_use]
    pub fn method_name(self, method: Method) -> &'static str {
        match (self, method) {
            (Self::Legacy, Method::SendMessage) => "message/send",
            (Self::Legacy, Method::StreamMessage) => "message/stream",
            (Self::Legacy, Method::GetTask) => "tasks/get",
            (Self::Legacy, Method::CancelTask) => "tasks/cancel",
            (Self::Legacy, Method::Resubscribe) => "tasks/resubscribe",
            (Self::Legacy, Method::ListTasks) => "tasks/list",
            (Self::Legacy, Method::PushConfig) => "tasks/pushNotificationConfig/get",
            (Self::Legacy, Method::ExtendedCard) => "agent/getAuthenticatedExtendedCard",
            (Self::V1, Method::SendMessage) => "SendMessage",
            (Self::V1, Method::StreamMessage) => "SendStreamingMessage",
            (Self::V1, Method::GetTask) => "GetTask",
            (Self::V1, Method::CancelTask) => "CancelTask",
            (Self::V1, Method::Resubscribe) => "SubscribeToTask",
            (Self::V1, Method::ListTasks) => "ListTasks",
            (Self::V1, Method::PushConfig) => "GetTaskPushNotificationConfig",
            (Self::V1, Method::ExtendedCard) => "GetExtendedAgentCard",
        }
    }

    // ---- encoding ----

    /// A role.
    fn role(self, role: Role) -> &'static str {
        match (self, role) {
            (Self::Legacy, Role::User) => "user",
            (Self::Legacy, Role::Agent) => "agent",
            (Self::V1, Role::User) => "ROLE_USER",
            (Self::V1, Role::Agent) => "ROLE_AGENT",
        }
    }

    /// A task state.
    #[must_use]
    pub fn state(self, state: TaskState) -> &'static str {
        match self {
            Self::Legacy => match state {
                TaskState::Submitted => "submitted",
                TaskState::Working => "working",
                TaskState::InputRequired => "input-required",
                TaskState::AuthRequired => "auth-required",
                TaskState::Completed => "completed",
                TaskState::Canceled => "canceled",
                TaskState::Failed => "failed",
                TaskState::Rejected => "rejected",
                TaskState::Unknown => "unknown",
            },
            Self::V1 => match state {
                TaskState::Submitted => "TASK_STATE_SUBMITTED",
                TaskState::Working => "TASK_STATE_WORKING",
                TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
                TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
                TaskState::Completed => "TASK_STATE_COMPLETED",
                TaskState::Canceled => "TASK_STATE_CANCELED",
                TaskState::Failed => "TASK_STATE_FAILED",
                TaskState::Rejected => "TASK_STATE_REJECTED",
                TaskState::Unknown => "TASK_STATE_UNSPECIFIED",
            },
        }
    }

    /// A part.
    #[must_use]
    pub fn encode_part(self, part: &Part) -> Value {
        match (self, part) {
            (Self::Legacy, Part::Text(text)) => json!({ "kind": "text", "text": text }),
            (Self::Legacy, Part::Data(data)) => json!({ "kind": "data", "data": data }),
            (
                Self::Legacy,
                Part::File {
                    name,
                    media_type,
                    uri,
                    bytes,
                },
            ) => {
                let mut file = Map::new();
                insert_some(&mut file, "name", name.as_deref());
                insert_some(&mut file, "mimeType", media_type.as_deref());
                insert_some(&mut file, "uri", uri.as_deref());
                insert_some(&mut file, "bytes", bytes.as_deref());
                json!({ "kind": "file", "file": file })
            }
            (Self::V1, Part::Text(text)) => json!({ "text": text }),
            (Self::V1, Part::Data(data)) => json!({ "data": data }),
            (
                Self::V1,
                Part::File {
                    name,
                    media_type,
                    uri,
                    bytes,
                },
            ) => {
                let mut object = Map::new();
                insert_some(&mut object, "filename", name.as_deref());
                insert_some(&mut object, "mediaType", media_type.as_deref());
                insert_some(&mut object, "url", uri.as_deref());
                insert_some(&mut object, "raw", bytes.as_deref());
                Value::Object(object)
            }
        }
    }

    fn parts(self, parts: &[Part]) -> Value {
        Value::Array(parts.iter().map(|p| self.encode_part(p)).collect())
    }

    /// A message.
    #[must_use]
    pub fn encode_message(self, message: &Message) -> Value {
        let mut object = Map::new();
        if self == Self::Legacy {
            object.insert("kind".into(), json!("message"));
        }
        object.insert("messageId".into(), json!(message.message_id));
        object.insert("role".into(), json!(self.role(message.role)));
        object.insert("parts".into(), self.parts(&message.parts));
        insert_some(&mut object, "contextId", message.context_id.as_deref());
        insert_some(&mut object, "taskId", message.task_id.as_deref());
        if let Some(metadata) = &message.metadata {
            object.insert("metadata".into(), metadata.clone());
        }
        Value::Object(object)
    }

    /// A task status.
    #[must_use]
    pub fn encode_status(self, status: &TaskStatus) -> Value {
        let mut object = Map::new();
        object.insert("state".into(), json!(self.state(status.state)));
        if let Some(message) = &status.message {
            object.insert("message".into(), self.encode_message(message));
        }
        insert_some(&mut object, "timestamp", status.timestamp.as_deref());
        Value::Object(object)
    }

    /// An artifact.
    #[must_use]
    pub fn encode_artifact(self, artifact: &Artifact) -> Value {
        let mut object = Map::new();
        object.insert("artifactId".into(), json!(artifact.artifact_id));
        insert_some(&mut object, "name", artifact.name.as_deref());
        insert_some(&mut object, "description", artifact.description.as_deref());
        object.insert("parts".into(), self.parts(&artifact.parts));
        Value::Object(object)
    }

    /// A task.
    #[must_use]
    pub fn encode_task(self, task: &Task) -> Value {
        let mut object = Map::new();
        if self == Self::Legacy {
            object.insert("kind".into(), json!("task"));
        }
        object.insert("id".into(), json!(task.id));
        object.insert("contextId".into(), json!(task.context_id));
        object.insert("status".into(), self.encode_status(&task.status));
        object.insert(
            "artifacts".into(),
            Value::Array(
                task.artifacts
                    .iter()
                    .map(|a| self.encode_artifact(a))
                    .collect(),
            ),
        );
        object.insert(
            "history".into(),
            Value::Array(
                task.history
                    .iter()
                    .map(|m| self.encode_message(m))
                    .collect(),
            ),
        );
        Value::Object(object)
    }

    /// A stream event, as the `result` of one SSE message (or of `message/send`).
    #[must_use]
    pub fn encode_event(self, event: &StreamEvent) -> Value {
        match (self, event) {
            (Self::Legacy, StreamEvent::Task(task)) => self.encode_task(task),
            (Self::Legacy, StreamEvent::Message(message)) => self.encode_message(message),
            (Self::Legacy, StreamEvent::Status(update)) => json!({
                "kind": "status-update",
                "taskId": update.task_id,
                "contextId": update.context_id,
                "status": self.encode_status(&update.status),
                "final": update.is_final,
            }),
            (Self::Legacy, StreamEvent::Artifact(update)) => json!({
                "kind": "artifact-update",
                "taskId": update.task_id,
                "contextId": update.context_id,
                "artifact": self.encode_artifact(&update.artifact),
                "append": update.append,
                "lastChunk": update.last_chunk,
            }),
            (Self::V1, StreamEvent::Task(task)) => json!({ "task": self.encode_task(task) }),
            (Self::V1, StreamEvent::Message(message)) => {
                json!({ "message": self.encode_message(message) })
            }
            (Self::V1, StreamEvent::Status(update)) => json!({ "statusUpdate": {
                "taskId": update.task_id,
                "contextId": update.context_id,
                "status": self.encode_status(&update.status),
            }}),
            (Self::V1, StreamEvent::Artifact(update)) => json!({ "artifactUpdate": {
                "taskId": update.task_id,
                "contextId": update.context_id,
                "artifact": self.encode_artifact(&update.artifact),
                "append": update.append,
                "lastChunk": update.last_chunk,
            }}),
        }
    }

    /// The `params` of a send request.
    #[must_use]
    pub fn encode_send_params(self, params: &SendParams) -> Value {
        let mut configuration = Map::new();
        match self {
            Self::Legacy => {
                configuration.insert("blocking".into(), json!(params.blocking));
                configuration.insert("acceptedOutputModes".into(), json!(["text/plain"]));
            }
            Self::V1 => {
                if !params.blocking {
                    configuration.insert("returnImmediately".into(), json!(true));
                }
                configuration.insert("acceptedOutputModes".into(), json!(["text/plain"]));
            }
        }
        if let Some(length) = params.history_length {
            configuration.insert("historyLength".into(), json!(length));
        }
        json!({ "message": self.encode_message(&params.message), "configuration": configuration })
    }

    // ---- decoding ----

    /// Reads a role (either dialect's spelling).
    fn decode_role(value: &Value) -> Result<Role, RpcError> {
        match value.as_str() {
            Some("user" | "ROLE_USER") => Ok(Role::User),
            Some("agent" | "ROLE_AGENT") => Ok(Role::Agent),
            _ => Err(RpcError::invalid_params(format!(
                "unknown message role {value}"
            ))),
        }
    }

    /// Reads a task state (either dialect's spelling).
    #[must_use]
    pub fn decode_state(value: &Value) -> TaskState {
        match value.as_str().unwrap_or_default() {
            "submitted" | "TASK_STATE_SUBMITTED" => TaskState::Submitted,
            "working" | "TASK_STATE_WORKING" => TaskState::Working,
            "input-required" | "TASK_STATE_INPUT_REQUIRED" => TaskState::InputRequired,
            "auth-required" | "TASK_STATE_AUTH_REQUIRED" => TaskState::AuthRequired,
            "completed" | "TASK_STATE_COMPLETED" => TaskState::Completed,
            "canceled" | "TASK_STATE_CANCELED" | "TASK_STATE_CANCELLED" => TaskState::Canceled,
            "failed" | "TASK_STATE_FAILED" => TaskState::Failed,
            "rejected" | "TASK_STATE_REJECTED" => TaskState::Rejected,
            _ => TaskState::Unknown,
        }
    }

    /// Reads a part (either dialect's shape).
    ///
    /// # Errors
    ///
    /// `-32602` for something that is no part.
    pub fn decode_part(value: &Value) -> Result<Part, RpcError> {
        let kind = value.get("kind").and_then(Value::as_str);
        if let Some(text) = value.get("text").and_then(Value::as_str)
            && matches!(kind, None | Some("text"))
        {
            return Ok(Part::Text(text.to_owned()));
        }
        if let Some(data) = value.get("data")
            && matches!(kind, None | Some("data"))
        {
            return Ok(Part::Data(data.clone()));
        }
        if kind == Some("file") {
            let file = &value["file"];
            return Ok(Part::File {
                name: string(file, "name"),
                media_type: string(file, "mimeType"),
                uri: string(file, "uri"),
                bytes: string(file, "bytes"),
            });
        }
        if kind.is_none() && (value.get("url").is_some() || value.get("raw").is_some()) {
            return Ok(Part::File {
                name: string(value, "filename"),
                media_type: string(value, "mediaType"),
                uri: string(value, "url"),
                bytes: string(value, "raw"),
            });
        }
        Err(RpcError::invalid_params(format!(
            "not a message part: {value}"
        )))
    }

    /// Reads a message (either dialect's shape).
    ///
    /// # Errors
    ///
    /// `-32602` when it is not a message.
    pub fn decode_message(value: &Value) -> Result<Message, RpcError> {
        if !value.is_object() {
            return Err(RpcError::invalid_params("\"message\" must be an object"));
        }
        let message_id = string(value, "messageId")
            .ok_or_else(|| RpcError::invalid_params("the message has no \"messageId\""))?;
        let role = Self::decode_role(&value["role"])?;
        let parts = value["parts"]
            .as_array()
            .ok_or_else(|| RpcError::invalid_params("the message has no \"parts\" list"))?
            .iter()
            .map(Self::decode_part)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Message {
            message_id,
            role,
            parts,
            context_id: string(value, "contextId"),
            task_id: string(value, "taskId"),
            metadata: value.get("metadata").filter(|m| !m.is_null()).cloned(),
        })
    }

    /// Reads the `params` of `message/send`, `message/stream` (or `SendMessage`, …).
    ///
    /// # Errors
    ///
    /// `-32602` when they are not such parameters.
    pub fn decode_send_params(self, params: &Value) -> Result<SendParams, RpcError> {
        let message = Self::decode_message(&params["message"])?;
        let configuration = &params["configuration"];
        let blocking = match self {
            Self::Legacy => configuration["blocking"].as_bool().unwrap_or(true),
            Self::V1 => !configuration["returnImmediately"]
                .as_bool()
                .unwrap_or(false),
        };
        Ok(SendParams {
            message,
            blocking,
            history_length: history_length(&configuration["historyLength"])?,
        })
    }

    /// Reads the `params` of `tasks/get`, `tasks/cancel`, `tasks/resubscribe` (or `GetTask`, …).
    ///
    /// # Errors
    ///
    /// `-32602` without a task id.
    pub fn decode_task_query(params: &Value) -> Result<TaskQuery, RpcError> {
        let id = string(params, "id")
            .filter(|id| !id.is_empty())
            .ok_or_else(|| RpcError::invalid_params("\"id\" (the task id) is required"))?;
        Ok(TaskQuery {
            id,
            history_length: history_length(&params["historyLength"])?,
        })
    }

    /// Reads a status.
    ///
    /// # Errors
    ///
    /// `-32602` for a status message that is not a message.
    pub fn decode_status(value: &Value) -> Result<TaskStatus, RpcError> {
        Ok(TaskStatus {
            state: Self::decode_state(&value["state"]),
            message: match value.get("message").filter(|m| !m.is_null()) {
                Some(message) => Some(Self::decode_message(message)?),
                None => None,
            },
            timestamp: string(value, "timestamp"),
        })
    }

    /// Reads an artifact.
    ///
    /// # Errors
    ///
    /// `-32602` for parts that are not parts.
    pub fn decode_artifact(value: &Value) -> Result<Artifact, RpcError> {
        Ok(Artifact {
            artifact_id: string(value, "artifactId").unwrap_or_default(),
            name: string(value, "name"),
            description: string(value, "description"),
            parts: value["parts"]
                .as_array()
                .map(|parts| parts.iter().map(Self::decode_part).collect())
                .transpose()?
                .unwrap_or_default(),
        })
    }

    /// Reads a task.
    ///
    /// # Errors
    ///
    /// `-32602` (the caller may map it to an invalid agent response).
    pub fn decode_task(value: &Value) -> Result<Task, RpcError> {
        let id = string(value, "id").ok_or_else(|| RpcError::invalid_params("a task has no id"))?;
        Ok(Task {
            id,
            context_id: string(value, "contextId").unwrap_or_default(),
            status: Self::decode_status(&value["status"])?,
            artifacts: value["artifacts"]
                .as_array()
                .map(|a| a.iter().map(Self::decode_artifact).collect())
                .transpose()?
                .unwrap_or_default(),
            history: value["history"]
                .as_array()
                .map(|h| h.iter().map(Self::decode_message).collect())
                .transpose()?
                .unwrap_or_default(),
        })
    }

    /// Reads a stream event or a `message/send` result, in this dialect's shape.
    ///
    /// # Errors
    ///
    /// `-32602` for something that is none of them.
    pub fn decode_event(self, value: &Value) -> Result<StreamEvent, RpcError> {
        match self {
            Self::Legacy => match value["kind"].as_str() {
                Some("task") => Ok(StreamEvent::Task(Self::decode_task(value)?)),
                Some("message") => Ok(StreamEvent::Message(Self::decode_message(value)?)),
                Some("status-update") => Ok(StreamEvent::Status(StatusUpdate {
                    task_id: string(value, "taskId").unwrap_or_default(),
                    context_id: string(value, "contextId").unwrap_or_default(),
                    status: Self::decode_status(&value["status"])?,
                    is_final: value["final"].as_bool().unwrap_or(false),
                })),
                Some("artifact-update") => Ok(StreamEvent::Artifact(ArtifactUpdate {
                    task_id: string(value, "taskId").unwrap_or_default(),
                    context_id: string(value, "contextId").unwrap_or_default(),
                    artifact: Self::decode_artifact(&value["artifact"])?,
                    append: value["append"].as_bool().unwrap_or(false),
                    last_chunk: value["lastChunk"].as_bool().unwrap_or(false),
                })),
                _ => Err(RpcError::invalid_params(format!(
                    "not an A2A event: {value}"
                ))),
            },
            Self::V1 => {
                if let Some(task) = value.get("task") {
                    Ok(StreamEvent::Task(Self::decode_task(task)?))
                } else if let Some(message) = value.get("message") {
                    Ok(StreamEvent::Message(Self::decode_message(message)?))
                } else if let Some(update) = value.get("statusUpdate") {
                    let status = Self::decode_status(&update["status"])?;
                    Ok(StreamEvent::Status(StatusUpdate {
                        task_id: string(update, "taskId").unwrap_or_default(),
                        context_id: string(update, "contextId").unwrap_or_default(),
                        is_final: status.state.is_terminal() || status.state.is_interrupted(),
                        status,
                    }))
                } else if let Some(update) = value.get("artifactUpdate") {
                    Ok(StreamEvent::Artifact(ArtifactUpdate {
                        task_id: string(update, "taskId").unwrap_or_default(),
                        context_id: string(update, "contextId").unwrap_or_default(),
                        artifact: Self::decode_artifact(&update["artifact"])?,
                        append: update["append"].as_bool().unwrap_or(false),
                        last_chunk: update["lastChunk"].as_bool().unwrap_or(false),
                    }))
                } else if value.get("id").is_some() && value.get("status").is_some() {
                    // GetTask and CancelTask answer with the bare task.
                    Ok(StreamEvent::Task(Self::decode_task(value)?))
                } else {
                    Err(RpcError::invalid_params(format!(
                        "not an A2A event: {value}"
                    )))
                }
            }
        }
    }
}

/// A string field.
fn string(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn insert_some(object: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    if let Some(value) = value {
        object.insert(key.to_owned(), json!(value));
    }
}

/// A `historyLength`: absent, null or a non-negative integer.
fn history_length(value: &Value) -> Result<Option<usize>, RpcError> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                RpcError::invalid_params("\"historyLength\" must be a non-negative integer")
            }),
        _ => Err(RpcError::invalid_params(
            "\"historyLength\" must be a non-negative integer",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::code;

    fn task() -> Task {
        Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: Some(
                    Message::text(Role::Agent, "Which colour?")
                        .within(Some("c1".into()), Some("t1".into())),
                ),
                timestamp: Some("2026-01-01T00:00:00.000Z".into()),
            },
            artifacts: vec![Artifact {
                artifact_id: "answer".into(),
                name: Some("answer".into()),
                description: None,
                parts: vec![Part::Text("blue".into()), Part::Data(json!({"n": 1}))],
            }],
            history: vec![Message::text(Role::User, "Pick")],
        }
    }

    #[test]
    fn both_dialects_round_trip_a_task() {
        let task = task();
        for dialect in [Dialect::Legacy, Dialect::V1] {
            let encoded = dialect.encode_event(&StreamEvent::Task(task.clone()));
            assert_eq!(
                dialect.decode_event(&encoded).unwrap(),
                StreamEvent::Task(task.clone())
            );
        }
        let legacy = Dialect::Legacy.encode_task(&task);
        assert_eq!(legacy["kind"], "task");
        assert_eq!(legacy["status"]["state"], "input-required");
        assert_eq!(legacy["artifacts"][0]["parts"][0]["kind"], "text");
        let v1 = Dialect::V1.encode_event(&StreamEvent::Task(task));
        assert_eq!(v1["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(v1["task"]["status"]["message"]["role"], "ROLE_AGENT");
        assert_eq!(
            v1["task"]["artifacts"][0]["parts"][0],
            json!({"text": "blue"})
        );
    }

    #[test]
    fn what_a2a_sdk_0_2_5_sends_is_read() {
        let params = json!({
            "message": {
                "kind": "message", "messageId": "m1", "role": "user",
                "parts": [{"kind": "text", "text": "hello"}],
                "contextId": "c1"
            },
            "configuration": {"blocking": false, "acceptedOutputModes": ["text"]}
        });
        let send = Dialect::Legacy.decode_send_params(&params).unwrap();
        assert_eq!(send.message.joined_text(), "hello");
        assert_eq!(send.message.context_id.as_deref(), Some("c1"));
        assert!(!send.blocking);
        let v1 =
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
        let send = Dialect::V1.decode_send_params(&v1).unwrap();
        assert!(send.blocking);
        assert_eq!(send.message.role, Role::User);
    }

    #[test]
    fn bad_params_are_invalid_params() {
        for params in [
            json!({}),
            json!({"message": {"messageId": "m", "role": "robot", "parts": []}}),
            json!({"message": {"messageId": "m", "role": "user", "parts": [{"kind": "video"}]}}),
            json!({"message": {"role": "user", "parts": []}}),
        ] {
            let error = Dialect::Legacy.decode_send_params(&params).unwrap_err();
            assert_eq!(error.code, code::INVALID_PARAMS, "{params}");
        }
        assert_eq!(
            Dialect::decode_task_query(&json!({"historyLength": 2}))
                .unwrap_err()
                .code,
            code::INVALID_PARAMS
        );
        assert!(Dialect::decode_task_query(&json!({"id": "t", "historyLength": -1})).is_err());
    }

    #[test]
    fn methods_name_their_dialect() {
        assert_eq!(
            Dialect::of_method("message/stream"),
            Some((Dialect::Legacy, Method::StreamMessage))
        );
        assert_eq!(
            Dialect::of_method("SubscribeToTask"),
            Some((Dialect::V1, Method::Resubscribe))
        );
        assert_eq!(Dialect::of_method("tasks/explode"), None);
        for dialect in [Dialect::Legacy, Dialect::V1] {
            for method in [
                Method::SendMessage,
                Method::StreamMessage,
                Method::GetTask,
                Method::CancelTask,
                Method::Resubscribe,
            ] {
                assert_eq!(
                    Dialect::of_method(dialect.method_name(method)),
                    Some((dialect, method))
                );
            }
        }
    }
}
