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

    /// The body serialised, into a buffer sized for it at once: the request holds the whole
    /// conversation (tens of KB late in a run), and growing a buffer from serde_json's
    /// default size copied it over again at each doubling.
    ///
    /// # Errors
    ///
    /// A message or tool cannot be serialised.
    pub fn to_bytes(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::with_capacity(self.written_len());
        serde_json::to_writer(&mut out, self)?;
        Ok(out)
    }

    /// About how long the body's JSON is: exact for written messages and tools, a guess for
    /// typed ones (the buffer grows as usual past it).
    fn written_len(&self) -> usize {
        /// The fields besides the messages and tools, the commas and brackets.
        const FRAME: usize = 256;
        let messages = match &self.messages {
            BodyMessages::Typed(messages) => messages.len() * 256,
            BodyMessages::Written(messages) => messages.iter().map(|m| m.get().len() + 1).sum(),
        };
        let tools = self.tools.as_deref().map_or(0, |raw| raw.get().len());
        FRAME + self.model.len() + messages + tools
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use agent_core::Message;
    use serde_json::value::to_raw_value;

    use super::*;
    use crate::format::wire_messages;

    fn body<'a>(messages: BodyMessages<'a>, tools: Option<Box<RawValue>>) -> Body<'a> {
        Body {
            max_completion_tokens: None,
            max_tokens: Some(100),
            messages,
            model: "gpt-test",
            stream: true,
            stream_options: Some(StreamOptions {
                include_usage: true,
            }),
            temperature: Some(0.0),
            tool_choice: Some("auto"),
            tools,
        }
    }

    #[test]
    fn a_body_in_a_buffer_sized_at_once_is_the_same_json() {
        let conversation = [
            Message::user_message("a question \"quoted\"".repeat(40)),
            Message::assistant_message("an answer ü".repeat(300)),
        ];
        let typed = wire_messages(&conversation, false);
        let written: Vec<Arc<RawValue>> = typed
            .iter()
            .map(|m| Arc::from(to_raw_value(m).unwrap()))
            .collect();
        let tools = Some(to_raw_value(&serde_json::json!([{"type": "function"}])).unwrap());
        for body in [
            body(BodyMessages::Typed(typed.clone()), None),
            body(BodyMessages::Written(written), tools),
        ] {
            let bytes = body.to_bytes().unwrap();
            assert_eq!(bytes, serde_json::to_vec(&body).unwrap());
            if let BodyMessages::Written(_) = body.messages {
                // Written messages and tools are counted exactly: no growing past the hint.
                assert!(body.written_len() >= bytes.len(), "{}", body.written_len());
            }
        }
    }
}
