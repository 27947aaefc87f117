//! The message schema shared by every layer: roles, messages, tool calls, `tool_choice` and the
//! agent state, serialising to exactly the OpenAI chat-completions format.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message (`system`, `user`, `assistant`, `tool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions from the framework.
    System,
    /// The person (or the framework speaking for them).
    User,
    /// The model.
    Assistant,
    /// The result of a tool call.
    Tool,
}

impl Role {
    /// The wire name of the role.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the model may use tools on a request (`none`, `auto`, `required`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// Tools are forbidden; only text is expected.
    None,
    /// The model decides (the default).
    #[default]
    Auto,
    /// The model must call at least one tool.
    Required,
}

impl ToolChoice {
    /// The wire name of the mode.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Auto => "auto",
            Self::Required => "required",
        }
    }
}

impl fmt::Display for ToolChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The function half of a tool call. `arguments` is the raw JSON text the model produced; it is
/// kept verbatim and parsed only when the tool runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Function {
    /// The tool name.
    pub name: String,
    /// The raw JSON arguments, exactly as the model wrote them.
    pub arguments: String,
}

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id; the `tool` message answering it carries the same id.
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// The function to call.
    pub function: Function,
}

fn function_type() -> String {
    "function".to_owned()
}

impl ToolCall {
    /// A function tool call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            kind: function_type(),
            function: Function {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }
}

/// The definition of a tool as sent to the model:
/// `{"type": "function", "function": {"name", "description", "parameters"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Always `"function"`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// The function's name, description and JSON-schema parameters.
    pub function: FunctionDefinition,
}

/// The function part of a [`ToolDefinition`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionDefinition {
    /// The tool name the model calls.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// A JSON schema whose root is `{"type": "object", ...}`.
    pub parameters: Value,
}

impl ToolDefinition {
    /// A function tool definition.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            kind: function_type(),
            function: FunctionDefinition {
                name: name.into(),
                description: description.into(),
                parameters,
            },
        }
    }
}

/// One chat message. Serialises to the OpenAI chat format: `role` always, every other key only when
/// it is set. `base64_image` is a framework key that the LLM client turns into an image content
/// part before the request leaves the process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Tool calls requested by an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The tool name on a `tool` message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The id of the call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A base64-encoded image attached to the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64_image: Option<String>,
}

impl Message {
    fn with_role(role: Role) -> Self {
        Self {
            role,
            content: None,
            tool_calls: None,
            name: None,
            tool_call_id: None,
            base64_image: None,
        }
    }

    /// A user message.
    pub fn user_message(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            ..Self::with_role(Role::User)
        }
    }

    /// A user message carrying an image.
    pub fn user_message_with_image(
        content: impl Into<String>,
        base64_image: impl Into<String>,
    ) -> Self {
        Self {
            base64_image: Some(base64_image.into()),
            ..Self::user_message(content)
        }
    }

    /// A system message.
    pub fn system_message(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            ..Self::with_role(Role::System)
        }
    }

    /// An assistant message with text.
    pub fn assistant_message(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            ..Self::with_role(Role::Assistant)
        }
    }

    /// A `tool` message answering the call `tool_call_id` of the tool `name`.
    pub fn tool_message(
        content: impl Into<String>,
        name: impl Into<String>,
        tool_call_id: impl Into<String>,
    ) -> Self {
        Self {
            content: Some(content.into()),
            name: Some(name.into()),
            tool_call_id: Some(tool_call_id.into()),
            ..Self::with_role(Role::Tool)
        }
    }

    /// An assistant message that requests `tool_calls`, with optional accompanying text
    /// (OpenManus's `from_tool_calls`, whose `content` defaults to `""`).
    pub fn from_tool_calls(tool_calls: Vec<ToolCall>, content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            tool_calls: Some(tool_calls),
            ..Self::with_role(Role::Assistant)
        }
    }

    /// Attaches an image to this message.
    #[must_use]
    pub fn with_image(mut self, base64_image: impl Into<String>) -> Self {
        self.base64_image = Some(base64_image.into());
        self
    }

    /// The text, or `""`.
    #[must_use]
    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or_default()
    }

    /// The tool calls of an assistant message (empty for other messages).
    #[must_use]
    pub fn calls(&self) -> &[ToolCall] {
        self.tool_calls.as_deref().unwrap_or_default()
    }

    /// True for an assistant message that requests at least one tool call.
    #[must_use]
    pub fn has_tool_calls(&self) -> bool {
        self.role == Role::Assistant && !self.calls().is_empty()
    }

    /// The message as a JSON object in the OpenAI chat format (OpenManus's `to_dict`).
    #[must_use]
    pub fn to_dict(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The lifecycle state of an agent (`IDLE`, `RUNNING`, `FINISHED`, `ERROR`).
///
/// The allowed transitions are listed by [`AgentState::can_transition_to`]:
///
/// ```text
/// IDLE ──run──▶ RUNNING ──finish──▶ FINISHED ──reset──▶ IDLE
///                  │ └──step error──▶ ERROR ──reset──▶ IDLE
///                  └──max steps / cancelled──▶ IDLE
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum AgentState {
    /// Ready to run.
    #[default]
    Idle,
    /// Inside `run()`.
    Running,
    /// The agent decided it is done (a special tool, a token limit, a custom rule).
    Finished,
    /// A step failed.
    Error,
}

impl AgentState {
    /// The wire name (`IDLE`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "IDLE",
            Self::Running => "RUNNING",
            Self::Finished => "FINISHED",
            Self::Error => "ERROR",
        }
    }

    /// Whether the state machine allows going from `self` to `next`. Staying in the same state is
    /// always allowed.
    #[must_use]
    pub fn can_transition_to(self, next: Self) -> bool {
        use AgentState::{Error, Finished, Idle, Running};
        self == next
            || matches!(
                (self, next),
                (Idle, Running) | (Running, Finished | Error | Idle) | (Finished | Error, Idle)
            )
    }
}

impl fmt::Display for AgentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_serialise_to_the_openai_chat_format() {
        let call = ToolCall::new("call_1", "bash", r#"{"command":"ls"}"#);
        let cases = [
            (
                Message::user_message("hi"),
                json!({"role": "user", "content": "hi"}),
            ),
            (
                Message::system_message("be brief"),
                json!({"role": "system", "content": "be brief"}),
            ),
            (
                Message::assistant_message("ok"),
                json!({"role": "assistant", "content": "ok"}),
            ),
            (
                Message::tool_message("out", "bash", "call_1"),
                json!({"role": "tool", "content": "out", "name": "bash", "tool_call_id": "call_1"}),
            ),
            (
                Message::from_tool_calls(vec![call], ""),
                json!({"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}
                ]}),
            ),
            (
                Message::user_message_with_image("look", "aGk="),
                json!({"role": "user", "content": "look", "base64_image": "aGk="}),
            ),
        ];
        for (message, expected) in cases {
            assert_eq!(message.to_dict(), expected);
            let back: Message = serde_json::from_value(expected).unwrap();
            assert_eq!(back, message);
        }
    }

    #[test]
    fn enums_use_their_wire_names() {
        assert_eq!(json!(ToolChoice::Required), json!("required"));
        assert_eq!(json!(ToolChoice::None), json!("none"));
        assert_eq!(json!(AgentState::Finished), json!("FINISHED"));
        assert_eq!(json!(Role::Tool), json!("tool"));
        assert_eq!(AgentState::Running.to_string(), "RUNNING");
        assert_eq!(ToolChoice::default(), ToolChoice::Auto);
    }

    #[test]
    fn state_machine_allows_only_the_documented_transitions() {
        use AgentState::{Error, Finished, Idle, Running};
        let all = [Idle, Running, Finished, Error];
        let allowed = [
            (Idle, Running),
            (Running, Finished),
            (Running, Error),
            (Running, Idle),
            (Finished, Idle),
            (Error, Idle),
        ];
        for from in all {
            for to in all {
                let expected = from == to || allowed.contains(&(from, to));
                assert_eq!(from.can_transition_to(to), expected, "{from} -> {to}");
            }
        }
    }

    #[test]
    fn tool_call_type_defaults_to_function_when_missing() {
        let call: ToolCall =
            serde_json::from_value(json!({"id": "a", "function": {"name": "t", "arguments": ""}}))
                .unwrap();
        assert_eq!(call.kind, "function");
    }
}
