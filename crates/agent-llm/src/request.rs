//! The chat-completions request body as typed structs that borrow from the request, serialised
//! once per request straight to bytes (no `serde_json::Value` tree in between).
//!
//! The fields are declared in the order a `serde_json::Value` object prints its keys (sorted),
//! so the bytes are exactly those of the earlier `Value`-built body.

use std::sync::Arc;

use agent_core::ToolDefinition;
use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::format::WireMessage;

/// The request body.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Body<'a> {
    /// Reasoning models' completion limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    /// Other models' completion limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The formatted messages.
    pub messages: BodyMessages<'a>,
    /// The model name.
    pub model: &'a str,
    /// Whether to stream.
    pub stream: bool,
    /// `{"include_usage": true}` when streaming with usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// The sampling temperature (not for reasoning models).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// How the model may use the tools (only with tools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'a str>,
    /// The tools, as written once for the definitions an agent offers step after step
    /// (absent when there are none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Box<RawValue>>,
}

/// `stream_options`.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct StreamOptions {
    /// Ask for a final chunk with `usage`.
    pub include_usage: bool,
}

/// A tool definition on the wire, keys in `Value` order.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct WireTool<'a> {
    /// The function.
    pub function: WireToolFunction<'a>,
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: &'a str,
}

/// The function of a [`WireTool`].
#[derive(Debug, Clone, Serialize)]
pub(crate) struct WireToolFunction<'a> {
    /// What the tool does.
    pub description: &'a str,
    /// The tool name.
    pub name: &'a str,
    /// The JSON schema of the parameters.
    pub parameters: &'a Value,
}

impl<'a> From<&'a ToolDefinition> for WireTool<'a> {
    fn from(tool: &'a ToolDefinition) -> Self {
        Self {
            function: WireToolFunction {
                description: &tool.function.description,
                name: &tool.function.name,
                parameters: &tool.function.parameters,
            },
            kind: &tool.kind,
        }
    }
}

impl Body<'_> {
    /// The messages and tools as JSON values, for the token counter.
    pub fn counted_parts(&self) -> (Vec<Value>, Vec<Value>) {
        let tools = self
            .tools
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default();
        let messages = match &self.messages {
            BodyMessages::Typed(messages) => values_of(messages),
            BodyMessages::Written(messages) => messages
                .iter()
                .map(|raw| serde_json::from_str(raw.get()).unwrap_or(Value::Null))
                .collect(),
        };
        (messages, tools)
    }
}

/// The body's `messages`: formatted for this body, or as written (mostly for earlier bodies:
/// see [`WrittenMessages`](crate::written::WrittenMessages)). Both print the same bytes.
#[derive(Debug, Clone)]
pub(crate) enum BodyMessages<'a> {
    /// Formatted now.
    Typed(Vec<WireMessage<'a>>),
    /// Each message's JSON.
    Written(Vec<Arc<RawValue>>),
}

impl Serialize for BodyMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Typed(messages) => messages.serialize(serializer),
            Self::Written(messages) => messages.serialize(serializer),
        }
    }
}

fn to_value<T: Serialize>(item: &T) -> Value {
    serde_json::to_value(item).unwrap_or(Value::Null)
}

fn values_of<T: Serialize>(items: &[T]) -> Vec<Value> {
    items.iter().map(to_value).collect()
}
