//! The model call's OpenTelemetry span: `chat {model}` by the GenAI semantic conventions,
//! written with `tracing` (target `gen_ai`, see `agent-telemetry`), around every call a
//! [`Model`](crate::Model) makes: the agents' steps, the compaction's summaries, the flow's
//! planner. With no layer recording the target it costs a callsite check.

use agent_config::ApiType;
use agent_core::Message;
use agent_telemetry::{attributes, capture};
use serde_json::{Value, json};
use tracing::field::Empty;

use crate::{ChatRequest, ChatResponse, LlmError, LlmSettings};

/// `gen_ai.provider.name` of an `api_type`.
#[must_use]
pub fn provider_name(api_type: ApiType) -> &'static str {
    match api_type {
        ApiType::Openai => "openai",
        ApiType::Azure => "azure.ai.openai",
        ApiType::Ollama => "ollama",
        ApiType::Anthropic => "anthropic",
        ApiType::Aws => "aws.bedrock",
    }
}

/// The server a model's calls go to (`server.address`, `server.port`), read from its
/// `base_url` once.
#[derive(Debug, Clone, Default)]
pub(crate) struct Server {
    address: Option<String>,
    port: Option<i64>,
}

impl Server {
    pub(crate) fn of(base_url: &str) -> Self {
        let Ok(url) = url::Url::parse(base_url) else {
            return Self::default();
        };
        Self {
            address: url.host_str().map(str::to_owned),
            port: url.port_or_known_default().map(i64::from),
        }
    }
}

/// The span of one call of `request` with `settings` to `server`.
pub(crate) fn chat(
    settings: &LlmSettings,
    server: &Server,
    request: &ChatRequest,
) -> tracing::Span {
    let span = agent_telemetry::genai_span!(
    "chat",
        otel.name = %format_args!("chat {}", settings.model),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider_name(settings.api_type),
        gen_ai.request.model = %settings.model,
        gen_ai.request.max_tokens = i64::from(settings.max_tokens),
        gen_ai.request.temperature = request.temperature.unwrap_or(settings.temperature),
        server.address = server.address.as_deref(),
        server.port = server.port,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        gen_ai.system_instructions = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if capture::enabled() {
        if let Some(system) = captured_messages(&request.system_msgs) {
            span.record("gen_ai.system_instructions", system);
        }
        if let Some(input) = captured_messages(&request.messages) {
            span.record("gen_ai.input.messages", input);
        }
    }
    span
}

/// Records the reply (or the failure) on the call's span.
pub(crate) fn record_reply(span: &tracing::Span, reply: &Result<ChatResponse, LlmError>) {
    if span.is_disabled() {
        return;
    }
    match reply {
        Ok(response) => {
            if let Some(model) = &response.model {
                span.record("gen_ai.response.model", model.as_str());
            }
            if let Some(usage) = &response.usage {
                span.record("gen_ai.usage.input_tokens", int(usage.prompt_tokens));
                span.record("gen_ai.usage.output_tokens", int(usage.completion_tokens));
                // Absent rather than 0 when nothing came from the provider's cache.
                if usage.cached_prompt_tokens > 0 {
                    span.record(
                        "gen_ai.usage.cache_read.input_tokens",
                        int(usage.cached_prompt_tokens),
                    );
                }
            }
            attributes::set_strings(
                span,
                "gen_ai.response.finish_reasons",
                response.finish_reason.iter().cloned(),
            );
            if capture::enabled() {
                let output = output_message(response);
                if let Some(output) = capture::captured(&output.to_string()) {
                    span.record("gen_ai.output.messages", output);
                }
            }
        }
        Err(error) => {
            span.record("error.type", error_type(error));
            span.record("otel.status_code", "ERROR");
            // The text can quote the provider's reply: recorded only as captured content.
            if let Some(text) = capture::captured(&error.to_string()) {
                span.record("otel.status_description", text);
            }
        }
    }
}

/// Records the call in the GenAI metrics (`agent_telemetry::metrics`), when they are exported.
pub(crate) fn record_metrics(
    settings: &LlmSettings,
    server: &Server,
    duration: std::time::Duration,
    reply: &Result<ChatResponse, LlmError>,
) {
    if !agent_telemetry::metrics::enabled() {
        return;
    }
    let error = reply.as_ref().err().map(error_type);
    let response = reply.as_ref().ok();
    let call = agent_telemetry::metrics::Call {
        operation: "chat",
        provider: provider_name(settings.api_type),
        request_model: &settings.model,
        response_model: response.and_then(|r| r.model.as_deref()),
        server_address: server.address.as_deref(),
        server_port: server.port,
        error_type: error.as_deref(),
    };
    let tokens = response
        .and_then(|r| r.usage.as_ref())
        .map(|usage| (usage.prompt_tokens, usage.completion_tokens));
    agent_telemetry::metrics::record(&call, duration, tokens);
}

/// A short, low-cardinality name of what failed (`error.type`).
fn error_type(error: &LlmError) -> String {
    match error {
        LlmError::Authentication(_) => "authentication".to_owned(),
        LlmError::RateLimited { .. } => "rate_limited".to_owned(),
        LlmError::QuotaExhausted(_) => "quota_exhausted".to_owned(),
        LlmError::ContextLengthExceeded(_) => "context_length_exceeded".to_owned(),
        LlmError::TokenLimitExceeded(_) => "token_limit_exceeded".to_owned(),
        LlmError::InvalidRequest(_) => "invalid_request".to_owned(),
        LlmError::Server { status, .. } => status.to_string(),
        LlmError::Network(_) => "network".to_owned(),
        LlmError::Connect(_) => "connect".to_owned(),
        LlmError::Timeout(_) => "timeout".to_owned(),
        LlmError::StreamInterrupted { .. } => "stream_interrupted".to_owned(),
        LlmError::MalformedResponse(_) => "malformed_response".to_owned(),
    }
}

/// `messages` in the conventions' JSON (`[{"role", "parts": [...]}]`), scrubbed and cut, when
/// content is captured.
fn captured_messages(messages: &[Message]) -> Option<String> {
    if messages.is_empty() {
        return None;
    }
    let list: Vec<Value> = messages.iter().map(message).collect();
    capture::captured(&Value::Array(list).to_string())
}

/// One message in the conventions' JSON.
fn message(message: &Message) -> Value {
    let mut parts = Vec::new();
    if let Some(text) = message.content.as_deref().filter(|t| !t.is_empty()) {
        match &message.tool_call_id {
            Some(id) => parts.push(json!({"type": "tool_call_response", "id": id, "result": text})),
            None => parts.push(json!({"type": "text", "content": text})),
        }
    }
    for call in message.tool_calls.iter().flatten() {
        parts.push(tool_call(call));
    }
    if message.base64_image.is_some() {
        // The image itself is not recorded: its size would dwarf the rest.
        parts.push(json!({"type": "blob", "modality": "image", "content": "[image]"}));
    }
    json!({"role": message.role.as_str(), "parts": parts})
}

fn tool_call(call: &agent_core::ToolCall) -> Value {
    let arguments = serde_json::from_str::<Value>(&call.function.arguments)
        .unwrap_or_else(|_| Value::String(call.function.arguments.clone()));
    json!({"type": "tool_call", "id": call.id, "name": call.function.name, "arguments": arguments})
}

/// The reply as the conventions' output message.
fn output_message(response: &ChatResponse) -> Value {
    let mut parts = Vec::new();
    if let Some(text) = response.content.as_deref().filter(|t| !t.is_empty()) {
        parts.push(json!({"type": "text", "content": text}));
    }
    for call in &response.tool_calls {
        parts.push(tool_call(call));
    }
    json!([{
        "role": "assistant",
        "parts": parts,
        "finish_reason": response.finish_reason.as_deref().unwrap_or("stop"),
    }])
}

/// `n` as the signed integer OpenTelemetry attributes hold (the `tracing` bridge would write an
/// unsigned one as text).
fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}
