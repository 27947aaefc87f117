//! Chat-completion request and response types.

use std::sync::Arc;

use agent_core::{Message, ToolCall, ToolChoice, ToolDefinition};
use agent_protocol::TokenUsage;
use serde::{Deserialize, Serialize};

/// Whether a request offers no tool (then its `tools` are not written).
fn no_tools(tools: &Arc<[ToolDefinition]>) -> bool {
    tools.is_empty()
}

/// One chat-completion request, before the client shapes it for a provider.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// System messages sent first (the agent's system prompt; never stored in memory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system_msgs: Vec<Message>,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// Tools offered to the model (empty: a text-only request). Shared, not copied: an agent
    /// offers the same definitions step after step ([`ChatRequest::with_tools`] takes a `Vec`
    /// too).
    #[serde(default, skip_serializing_if = "no_tools")]
    pub tools: Arc<[ToolDefinition]>,
    /// How the model may use `tools` (meaningful only when tools are offered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Sampling temperature override (the client's configured value when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

impl ChatRequest {
    /// A request for `messages` with no system message and no tools.
    #[must_use]
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// Sets the system messages.
    #[must_use]
    pub fn with_system(mut self, system_msgs: Vec<Message>) -> Self {
        self.system_msgs = system_msgs;
        self
    }

    /// Offers `tools` under `tool_choice`. With no tools, no `tool_choice` is set (providers
    /// reject one without tools).
    #[must_use]
    pub fn with_tools(
        mut self,
        tools: impl Into<Arc<[ToolDefinition]>>,
        tool_choice: ToolChoice,
    ) -> Self {
        let tools = tools.into();
        self.tool_choice = (!tools.is_empty()).then_some(tool_choice);
        self.tools = tools;
        self
    }

    /// Sets the temperature.
    #[must_use]
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Every message in wire order: system messages, then the conversation.
    pub fn all_messages(&self) -> impl Iterator<Item = &Message> {
        self.system_msgs.iter().chain(&self.messages)
    }

    /// The tool names offered, in order.
    #[must_use]
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools
            .iter()
            .map(|t| t.function.name.as_str())
            .collect()
    }
}

/// The `finish_reason` of a reply the model declined: OpenAI's word for a content filter's
/// stop, also given to an OpenAI `refusal`, an Anthropic `stop_reason: refusal` and a Bedrock
/// guardrail's intervention.
pub const REFUSED: &str = "content_filter";

/// The assistant's reply to one request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The text, if any.
    #[serde(default)]
    pub content: Option<String>,
    /// Requested tool calls (arguments are raw JSON text).
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Token usage, when the provider reports it: the call's counts, no cost. Its JSON is a
    /// reply's ([`agent_protocol::usage::reply`]: `prompt_tokens`, `completion_tokens`,
    /// `total_tokens` as the provider reported it, `cached_prompt_tokens` when any).
    #[serde(default, with = "agent_protocol::usage::reply::option")]
    pub usage: Option<TokenUsage>,
    /// Why generation stopped (`stop`, `tool_calls`, `length`, ...).
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// The model that answered, as the provider names it (`gpt-4o-2024-08-06` for a request
    /// to `gpt-4o`), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl ChatResponse {
    /// A text-only reply.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            finish_reason: Some("stop".to_owned()),
            ..Self::default()
        }
    }

    /// A reply that calls tools, with optional text.
    #[must_use]
    pub fn tool_calls(content: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            content,
            tool_calls,
            finish_reason: Some("tool_calls".to_owned()),
            ..Self::default()
        }
    }

    /// A reply the model declined ([`REFUSED`]), saying `content`.
    pub fn refusal(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()).filter(|c| !c.is_empty()),
            finish_reason: Some(REFUSED.to_owned()),
            ..Self::default()
        }
    }

    /// Whether the model declined to answer: it refused, or a content filter stopped it
    /// (`finish_reason` [`REFUSED`]).
    #[must_use]
    pub fn refused(&self) -> bool {
        self.finish_reason.as_deref() == Some(REFUSED)
    }

    /// Attaches usage figures.
    #[must_use]
    pub fn with_usage(mut self, usage: TokenUsage) -> Self {
        self.usage = Some(usage);
        self
    }
}
