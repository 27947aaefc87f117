//! The Messages API's JSON: the request body made from a [`ChatRequest`], and replies and error
//! objects read back into [`ChatResponse`] and [`LlmError`].
//!
//! What the API rejects and this module never sends: roles that do not alternate (consecutive
//! messages of one role are merged into one turn), a `tool_use` not answered by a `tool_result`
//! at the start of the next user turn, empty text blocks, system messages inside `messages`.

use agent_core::{Message, Role, ToolChoice};
use serde_json::{Map, Value, json};
use tracing::warn;

use crate::blocks::{Image, tool_input, tool_use_id};
use crate::{ChatRequest, ChatResponse, LlmError, TokenUsage};

/// The API version header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// What the body needs beyond the request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyOptions<'a> {
    /// The model.
    pub model: &'a str,
    /// `max_tokens` (required by the API).
    pub max_tokens: u32,
    /// The configured temperature (the request's override wins).
    pub temperature: f64,
    /// Whether to stream.
    pub stream: bool,
    /// Whether images are sent (else dropped with a warning).
    pub vision: bool,
}

/// `{"type": "ephemeral"}`: a prompt-caching breakpoint.
fn cache_control() -> Value {
    json!({"type": "ephemeral"})
}

/// The request body. The last system block and the last tool carry `cache_control`, so a run
/// pays for its system prompt and tool schemas once per cache lifetime, not every step.
pub(crate) fn body(request: &ChatRequest, options: BodyOptions<'_>) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(options.model));
    body.insert("max_tokens".into(), json!(options.max_tokens));
    let temperature = request
        .temperature
        .unwrap_or(options.temperature)
        .clamp(0.0, 1.0);
    body.insert("temperature".into(), json!(temperature));

    let mut system: Vec<Value> = request
        .all_messages()
        .filter(|m| m.role == Role::System)
        .filter_map(|m| m.content.as_deref())
        .filter(|t| !t.trim().is_empty())
        .map(|t| json!({"type": "text", "text": t}))
        .collect();
    if let Some(Value::Object(last)) = system.last_mut() {
        last.insert("cache_control".into(), cache_control());
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }

    body.insert(
        "messages".into(),
        Value::Array(messages(&request.messages, options.vision)),
    );

    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.function.name,
                    "description": t.function.description,
                    "input_schema": t.function.parameters,
                })
            })
            .collect();
        if let Some(Value::Object(last)) = tools.last_mut() {
            last.insert("cache_control".into(), cache_control());
        }
        body.insert("tools".into(), Value::Array(tools));
        let choice = match request.tool_choice {
            Some(ToolChoice::Required) => "any",
            // Tools stay declared (the conversation may hold tool blocks, which need them).
            Some(ToolChoice::None) => "none",
            _ => "auto",
        };
        body.insert("tool_choice".into(), json!({"type": choice}));
    }
    if options.stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

/// What an empty tool-use id is sent as (ids must match `^[a-zA-Z0-9_-]+$`).
const EMPTY_TOOL_USE_ID: &str = "toolu_empty";

fn image_block(base64_image: &str) -> Value {
    let image = Image::new(base64_image);
    json!({"type": "image", "source": {
        "type": "base64",
        "media_type": image.media_type,
        "data": image.data,
    }})
}

/// The conversation as alternating user/assistant turns of content blocks.
fn messages(conversation: &[Message], vision: bool) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in conversation {
        let text = message.content.as_deref().filter(|t| !t.trim().is_empty());
        let image = message
            .base64_image
            .as_deref()
            .filter(|i| !i.trim().is_empty());
        let image = match image {
            Some(_) if !vision => {
                warn!(role = %message.role, "dropping an image the model cannot receive");
                None
            }
            other => other,
        };
        let (role, blocks) = match message.role {
            Role::System => continue,
            Role::User => {
                let mut blocks = Vec::new();
                if let Some(text) = text {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                if let Some(image) = image {
                    blocks.push(image_block(image));
                }
                ("user", blocks)
            }
            Role::Assistant => {
                let mut blocks = Vec::new();
                if let Some(text) = text {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in message.calls() {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": tool_use_id(&call.id, EMPTY_TOOL_USE_ID),
                        "name": call.function.name,
                        "input": tool_input(&call.function.arguments),
                    }));
                }
                ("assistant", blocks)
            }
            Role::Tool => {
                let mut content = Vec::new();
                if let Some(text) = text {
                    content.push(json!({"type": "text", "text": text}));
                }
                if let Some(image) = image {
                    content.push(image_block(image));
                }
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": tool_use_id(
                        message.tool_call_id.as_deref().unwrap_or_default(),
                        EMPTY_TOOL_USE_ID,
                    ),
                });
                if !content.is_empty() {
                    block["content"] = Value::Array(content);
                }
                if text.is_some_and(|t| t.starts_with("Error:")) {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    if turns.first().is_some_and(|(role, _)| *role == "assistant") {
        // The API wants the user to speak first.
        turns.insert(
            0,
            ("user", vec![json!({"type": "text", "text": "(continue)"})]),
        );
    }
    turns
        .into_iter()
        .map(|(role, mut blocks)| {
            if role == "user" {
                // Tool results open their turn.
                blocks
                    .sort_by_key(|b| b.get("type").and_then(Value::as_str) != Some("tool_result"));
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

/// Our `finish_reason` for the API's `stop_reason`.
pub(crate) fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        "refusal" => crate::REFUSED,
        other => other,
    }
    .to_owned()
}

/// Usage from a `usage` object: cached input (read and written) counts as input.
pub(crate) fn usage(value: &Value) -> TokenUsage {
    let number = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0);
    let input = number("input_tokens")
        .saturating_add(number("cache_creation_input_tokens"))
        .saturating_add(number("cache_read_input_tokens"));
    TokenUsage {
        prompt_tokens: input,
        completion_tokens: number("output_tokens"),
        cached_prompt_tokens: number("cache_read_input_tokens"),
        ..TokenUsage::default()
    }
}

/// An error object (`{"type": "overloaded_error", "message": ...}`) sent with a 200 status or
/// inside a stream, classified as the same error would be over HTTP.
pub(crate) fn embedded_error(error: &Value) -> LlmError {
    let status = match error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    };
    crate::classify(
        status,
        |_| None,
        &json!({"type": "error", "error": error}).to_string(),
    )
}

/// Parses a whole (not streamed) Messages reply.
///
/// # Errors
///
/// [`LlmError::MalformedResponse`] when the body is not a message; an error object is
/// classified.
pub(crate) fn parse_message(body: &[u8]) -> Result<ChatResponse, LlmError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| LlmError::MalformedResponse(format!("invalid JSON in the response: {e}")))?;
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(embedded_error(value.get("error").unwrap_or(&Value::Null)));
    }
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::MalformedResponse("the response has no content".into()))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                calls.push(agent_core::ToolCall::new(id, name, input.to_string()));
            }
            _ => {}
        }
    }
    Ok(ChatResponse {
        content: (!text.is_empty()).then_some(text),
        tool_calls: calls,
        usage: value.get("usage").map(usage),
        finish_reason: value
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(finish_reason),
        model: value
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::{ToolCall, ToolDefinition};

    fn options() -> BodyOptions<'static> {
        BodyOptions {
            model: "claude-sonnet-4",
            max_tokens: 1024,
            temperature: 0.0,
            stream: false,
            vision: true,
        }
    }

    #[test]
    fn turns_alternate_results_answer_calls_and_caching_marks_system_and_tools() {
        let mut result = Message::tool_message("Error: no such file", "bash", "call.1");
        result.base64_image = Some("iVBORw0KGgo".into());
        let request = ChatRequest::new(vec![
            Message::user_message("task"),
            Message::from_tool_calls(
                vec![ToolCall::new("call.1", "bash", r#"{"command":"ls"}"#)],
                "Looking.",
            ),
            result,
            Message::user_message("next step?"),
            Message::assistant_message(""),
            Message::assistant_message("done"),
        ])
        .with_system(vec![Message::system_message("be brief")])
        .with_tools(
            vec![ToolDefinition::new(
                "bash",
                "run",
                json!({"type": "object"}),
            )],
            ToolChoice::Required,
        );
        let body = body(&request, options());
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            body["tools"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "task"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "ls"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "is_error": true, "content": [
                        {"type": "text", "text": "Error: no such file"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo"}}
                    ]},
                    {"type": "text", "text": "next step?"}
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
            ])
        );
    }

    #[test]
    fn replies_stop_reasons_usage_and_errors() {
        let reply = parse_message(br#"{"type":"message","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"ls"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5}}"#).unwrap();
        assert_eq!(reply.content.as_deref(), Some("ok"));
        assert_eq!(
            reply.tool_calls[0].function.arguments,
            r#"{"command":"ls"}"#
        );
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            reply.usage,
            Some(TokenUsage {
                prompt_tokens: 100,
                completion_tokens: 5,
                cached_prompt_tokens: 90,
                ..TokenUsage::default()
            })
        );
        let error = parse_message(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap_err();
        assert!(
            matches!(error, LlmError::Server { status: 529, .. }),
            "{error:?}"
        );
        assert!(error.is_retryable());
        assert_eq!(finish_reason("max_tokens"), "length");
    }
}
