//! Parsing chat-completions responses: whole JSON bodies and streamed chunks.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_core::ToolCall;
use serde_json::Value;

use crate::{ChatResponse, LlmError, REFUSED, TokenUsage};

mod chunk;
mod scan;

/// A tool-call id for a call the server sent without one: unique within the process, so two
/// steps never share an id.
fn synthetic_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("call_rs{:08}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn malformed(what: &str) -> LlmError {
    LlmError::MalformedResponse(what.to_owned())
}

/// Tool-call arguments as raw JSON text: a string is kept verbatim; an object (some servers send
/// one) is serialised.
fn arguments_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// An error object sent with a 200 status (inside a stream, or as a whole body), classified like
/// an HTTP error: the status comes from a numeric `code`, else from what the code or type names.
fn embedded_error(error: &Value) -> LlmError {
    let text = |key: &str| {
        error
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_lowercase()
    };
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or_else(|| {
            let (code, kind) = (text("code"), text("type"));
            let names = |needle: &str| code.contains(needle) || kind.contains(needle);
            if names("context_length") || names("invalid_request") {
                400
            } else if names("invalid_api_key") || names("authentication") {
                401
            } else if names("insufficient_quota") || names("rate_limit") {
                429
            } else {
                500
            }
        });
    crate::classify(
        status,
        |_| None,
        &serde_json::json!({ "error": error }).to_string(),
    )
}

/// Gives every call a non-empty id that no other call of the reply has (a repeated or missing
/// id would make the `tool` results ambiguous, and strict providers reject it).
fn unique_ids(mut calls: Vec<ToolCall>) -> Vec<ToolCall> {
    let mut seen = HashSet::new();
    for call in &mut calls {
        if call.id.is_empty() || !seen.insert(call.id.clone()) {
            call.id = synthetic_id();
            seen.insert(call.id.clone());
        }
    }
    calls
}

/// Reads `usage` from a response or chunk.
#[must_use]
pub fn parse_usage(value: &Value) -> Option<TokenUsage> {
    value.get("usage").and_then(usage_from)
}

/// Reads a `usage` object (`None` for anything else).
fn usage_from(usage: &Value) -> Option<TokenUsage> {
    if !usage.is_object() {
        return None;
    }
    let number = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let prompt_tokens = number("prompt_tokens");
    let completion_tokens = number("completion_tokens");
    let total = number("total_tokens");
    let cached_prompt_tokens = usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    // A total of 0 (or none) is not reported; one that is not input plus output is kept.
    let sum = prompt_tokens.saturating_add(completion_tokens);
    Some(TokenUsage {
        prompt_tokens,
        completion_tokens,
        cached_prompt_tokens,
        reported_total_tokens: (total != 0 && total != sum).then_some(total),
        ..TokenUsage::default()
    })
}

/// Parses a non-streamed chat completion.
///
/// # Errors
///
/// [`LlmError::MalformedResponse`] when the body is not a chat completion with a message.
pub fn parse_completion(body: &[u8]) -> Result<ChatResponse, LlmError> {
    parse_completion_reasoned(body).map(|(response, _)| response)
}

/// [`parse_completion`], with the model's reasoning when the message carries it
/// (`reasoning_content` or `reasoning`): shown, not part of the reply.
pub(crate) fn parse_completion_reasoned(
    body: &[u8],
) -> Result<(ChatResponse, Option<String>), LlmError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| LlmError::MalformedResponse(format!("invalid JSON in the response: {e}")))?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        return Err(embedded_error(error));
    }
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| malformed("the response has no choices"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| malformed("the first choice has no message"))?;
    let text = |key: &str| {
        message
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let refusal = text("refusal");
    let content = text("content").or_else(|| refusal.clone());
    let reasoning = text("reasoning_content").or_else(|| text("reasoning"));
    let mut tool_calls = Vec::new();
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let function = call
            .get("function")
            .ok_or_else(|| malformed("a tool call has no function"))?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("a tool call has no function name"))?;
        let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
        tool_calls.push(ToolCall::new(
            id,
            name,
            arguments_text(function.get("arguments")),
        ));
    }
    let finish_reason = match refusal {
        // A refusal (structured outputs) may come with `stop`: it is a refusal all the same.
        Some(_) => Some(REFUSED.to_owned()),
        None => choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    let response = ChatResponse {
        content,
        tool_calls: unique_ids(tool_calls),
        usage: parse_usage(&value),
        finish_reason,
        model: value
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .map(str::to_owned),
    };
    Ok((response, reasoning))
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a streamed reply from its chunks: content deltas are concatenated, tool-call
/// fragments are joined by their `index`.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    content: String,
    reasoning: String,
    refusal: String,
    calls: Vec<(u64, PartialCall)>,
    usage: Option<TokenUsage>,
    finish_reason: Option<String>,
    model: Option<String>,
    received_tokens: bool,
}

impl StreamAssembler {
    /// Whether any content or tool-call data has arrived.
    #[must_use]
    pub fn received_tokens(&self) -> bool {
        self.received_tokens
    }

    /// The reply text received so far.
    #[must_use]
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The model's reasoning received so far (`reasoning_content` or `reasoning` deltas): shown
    /// as it comes, not part of the reply.
    #[must_use]
    pub fn reasoning(&self) -> &str {
        &self.reasoning
    }

    /// Whether a chunk carried a `finish_reason`.
    #[must_use]
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Takes one `data:` payload (already known not to be `[DONE]`).
    ///
    /// # Errors
    ///
    /// [`LlmError::MalformedResponse`] for a chunk that is not JSON; an error object sent inside
    /// the stream becomes [`LlmError::Server`].
    pub fn push(&mut self, data: &str) -> Result<(), LlmError> {
        // The usual chunk is scanned straight into borrowed fields; one with a field of an
        // unexpected type (which the lenient reading skips) goes through a `Value`.
        match chunk::Chunk::scan(data) {
            Some(chunk) => self.apply(chunk),
            None => {
                let value: Value = serde_json::from_str(data).map_err(|e| {
                    LlmError::MalformedResponse(format!("invalid JSON in a stream chunk: {e}"))
                })?;
                self.apply(chunk::Chunk::from_value(&value))
            }
        }
    }

    fn apply(&mut self, chunk: chunk::Chunk<'_>) -> Result<(), LlmError> {
        if let Some(error) = chunk.error {
            return Err(embedded_error(&error));
        }
        if let Some(usage) = chunk.usage.as_ref().and_then(usage_from) {
            self.usage = Some(usage);
        }
        if self.model.is_none()
            && let Some(model) = chunk.model.filter(|m| !m.is_empty())
        {
            self.model = Some(model.into_owned());
        }
        let Some(choice) = chunk.choice else {
            return Ok(());
        };
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(reason.into_owned());
        }
        let Some(delta) = choice.delta else {
            return Ok(());
        };
        if let Some(text) = delta.reasoning.filter(|t| !t.is_empty()) {
            self.received_tokens = true;
            self.reasoning.push_str(&text);
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            self.received_tokens = true;
            self.content.push_str(&text);
        }
        if let Some(text) = delta.refusal.filter(|t| !t.is_empty()) {
            self.received_tokens = true;
            self.refusal.push_str(&text);
        }
        for fragment in delta.tool_calls {
            self.received_tokens = true;
            let id = fragment.id.filter(|s| !s.is_empty());
            let index = match fragment.index {
                Some(index) => index,
                // Without an index, a fragment with a new id starts a new call and one
                // without an id continues the latest call.
                None => match (self.calls.last(), id.as_deref()) {
                    (Some((last, call)), Some(id)) if !call.id.is_empty() && call.id != id => {
                        last + 1
                    }
                    (Some((last, _)), _) => *last,
                    (None, _) => 0,
                },
            };
            let at = match self.calls.iter().position(|(i, _)| *i == index) {
                Some(at) => at,
                None => {
                    self.calls.push((index, PartialCall::default()));
                    self.calls.len() - 1
                }
            };
            let call = &mut self.calls[at].1;
            if let Some(id) = id {
                id.as_ref().clone_into(&mut call.id);
            }
            if let Some(function) = fragment.function {
                // Some servers repeat the whole name in every fragment; others split it.
                if let Some(name) = function.name
                    && *name != call.name
                {
                    call.name.push_str(&name);
                }
                if let Some(arguments) = function.arguments {
                    call.arguments.push_str(&arguments);
                }
            }
        }
        Ok(())
    }

    /// The reply as far as it came before it was cut at `limit` bytes of the stream: what was
    /// assembled, marked as cut (`finish_reason` `length`, a note in its text).
    #[must_use]
    pub fn cut(mut self, limit: usize) -> ChatResponse {
        if !self.content.is_empty() {
            self.content.push('\n');
        }
        self.content.push_str(&crate::capped::cut_note(limit));
        self.finish_reason = Some("length".to_owned());
        self.finish()
    }

    /// The assembled reply.
    #[must_use]
    pub fn finish(mut self) -> ChatResponse {
        self.calls.sort_by_key(|(index, _)| *index);
        let tool_calls = self
            .calls
            .into_iter()
            .map(|(_, call)| ToolCall::new(call.id, call.name, call.arguments))
            .collect();
        let (content, finish_reason) = if self.refusal.is_empty() {
            (self.content, self.finish_reason)
        } else if self.content.is_empty() {
            (self.refusal, Some(REFUSED.to_owned()))
        } else {
            (self.content, Some(REFUSED.to_owned()))
        };
        ChatResponse {
            content: (!content.is_empty()).then_some(content),
            tool_calls: unique_ids(tool_calls),
            usage: self.usage,
            finish_reason,
            model: self.model,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_completion_with_tool_calls_parses() {
        let body = json!({
            "id": "x", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "echo", "arguments": {"text": "hi"}}}
                ]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
                      "prompt_tokens_details": {"cached_tokens": 4}}
        });
        let response = parse_completion(body.to_string().as_bytes()).unwrap();
        assert_eq!(response.content, None);
        assert_eq!(
            response.tool_calls,
            vec![
                ToolCall::new("c1", "bash", r#"{"command":"ls"}"#),
                ToolCall::new("c2", "echo", r#"{"text":"hi"}"#)
            ]
        );
        assert_eq!(
            response.usage,
            Some(TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 5,
                cached_prompt_tokens: 4,
                ..TokenUsage::default()
            })
        );
        assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(response.model.as_deref(), Some("gpt-4o-2024-08-06"));
    }

    #[test]
    fn malformed_completions_are_reported() {
        assert!(matches!(
            parse_completion(b"{not json"),
            Err(LlmError::MalformedResponse(_))
        ));
        assert!(matches!(
            parse_completion(br#"{"choices": []}"#),
            Err(LlmError::MalformedResponse(_))
        ));
        assert!(matches!(
            parse_completion(br#"{"choices": [{"index": 0}]}"#),
            Err(LlmError::MalformedResponse(_))
        ));
    }

    #[test]
    fn streamed_fragments_reassemble() {
        let chunks = [
            json!({"model": "", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
            json!({"model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "delta": {"content": "Let me "}}]}),
            json!({"model": "another", "choices": []}),
            json!({"choices": [{"index": 0, "delta": {"content": "check."}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": ""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"comm"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "c2", "function": {"name": "echo", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "and\":\"ls\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}),
        ];
        let mut assembler = StreamAssembler::default();
        assert!(!assembler.received_tokens());
        for chunk in chunks {
            assembler.push(&chunk.to_string()).unwrap();
        }
        assert!(assembler.finished());
        let response = assembler.finish();
        assert_eq!(response.content.as_deref(), Some("Let me check."));
        assert_eq!(
            response.tool_calls,
            vec![
                ToolCall::new("c1", "bash", r#"{"command":"ls"}"#),
                ToolCall::new("c2", "echo", "{}")
            ]
        );
        assert_eq!(response.usage.map(|u| u.total_tokens()), Some(7));
        // The first model a chunk names (an empty one is none).
        assert_eq!(response.model.as_deref(), Some("gpt-4o-2024-08-06"));
    }

    #[test]
    fn reasoning_deltas_are_kept_apart_from_the_reply() {
        let chunks = [
            // DeepSeek, vLLM, SGLang.
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "First, "}}]}),
            // OpenRouter, Ollama.
            json!({"choices": [{"index": 0, "delta": {"reasoning": "think."}}]}),
            // A field of an unexpected type takes the lenient path; both names in one chunk too.
            json!({"choices": [{"index": 0, "delta": {"reasoning_content": " Then", "reasoning": " Then", "content": 7}}]}),
            json!({"choices": [{"index": 0, "delta": {"reasoning_content": null, "content": "Answer."}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ];
        let mut assembler = StreamAssembler::default();
        assembler.push(&chunks[0].to_string()).unwrap();
        assert!(assembler.received_tokens(), "reasoning is received output");
        for chunk in &chunks[1..] {
            assembler.push(&chunk.to_string()).unwrap();
        }
        assert_eq!(assembler.reasoning(), "First, think. Then");
        assert_eq!(assembler.content(), "Answer.");
        assert_eq!(assembler.finish().content.as_deref(), Some("Answer."));
    }

    #[test]
    fn refusals_are_told_apart_streamed_or_not() {
        // OpenAI's structured-outputs refusal: no content, a `refusal`, and `stop`.
        let body = json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": null, "refusal": "I can't help with that."}}]});
        let response = parse_completion(body.to_string().as_bytes()).unwrap();
        assert!(response.refused());
        assert_eq!(response.content.as_deref(), Some("I can't help with that."));
        // A content filter's stop.
        let body = json!({"choices": [{"index": 0, "finish_reason": "content_filter",
            "message": {"role": "assistant", "content": "Partial"}}]});
        let response = parse_completion(body.to_string().as_bytes()).unwrap();
        assert!(response.refused());
        assert_eq!(response.content.as_deref(), Some("Partial"));
        let body = json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Fine", "refusal": null}}]});
        assert!(
            !parse_completion(body.to_string().as_bytes())
                .unwrap()
                .refused()
        );

        let mut assembler = StreamAssembler::default();
        for chunk in [
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "refusal": "I can't "}}]}),
            json!({"choices": [{"index": 0, "delta": {"refusal": "help."}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ] {
            assembler.push(&chunk.to_string()).unwrap();
        }
        assert!(assembler.received_tokens());
        let response = assembler.finish();
        assert!(response.refused());
        assert_eq!(response.content.as_deref(), Some("I can't help."));
    }

    #[test]
    fn a_whole_reply_keeps_its_reasoning_apart() {
        let body = json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "42", "reasoning_content": "Six times seven."}}]});
        let (response, reasoning) = parse_completion_reasoned(body.to_string().as_bytes()).unwrap();
        assert_eq!(response.content.as_deref(), Some("42"));
        assert_eq!(reasoning.as_deref(), Some("Six times seven."));
        let body = json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "42", "reasoning": "Counted."}}]});
        let (_, reasoning) = parse_completion_reasoned(body.to_string().as_bytes()).unwrap();
        assert_eq!(reasoning.as_deref(), Some("Counted."));
    }

    #[test]
    fn fragments_without_index_and_repeated_names() {
        let chunks = [
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "a", "function": {"name": "echo", "arguments": "{\"text\":"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"name": "echo", "arguments": "\"1\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "b", "function": {"name": "echo", "arguments": "{\"text\":\"2\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ];
        let mut assembler = StreamAssembler::default();
        for chunk in chunks {
            assembler.push(&chunk.to_string()).unwrap();
        }
        assert_eq!(
            assembler.finish().tool_calls,
            vec![
                ToolCall::new("a", "echo", r#"{"text":"1"}"#),
                ToolCall::new("b", "echo", r#"{"text":"2"}"#)
            ]
        );
    }

    #[test]
    fn missing_and_repeated_ids_are_replaced_by_unique_ones() {
        let body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "a", "arguments": "{}"}},
            {"id": "x", "type": "function", "function": {"name": "b", "arguments": "{}"}},
            {"id": "x", "type": "function", "function": {"name": "c", "arguments": "{}"}}
        ]}}]});
        let first = parse_completion(body.to_string().as_bytes())
            .unwrap()
            .tool_calls;
        let second = parse_completion(body.to_string().as_bytes())
            .unwrap()
            .tool_calls;
        let ids: HashSet<&str> = first.iter().chain(&second).map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids.len(),
            5,
            "x is kept once per reply; the rest are fresh: {first:?} {second:?}"
        );
        assert_eq!(first[1].id, "x");
        assert!(first.iter().all(|c| !c.id.is_empty()));
    }

    #[test]
    fn an_error_inside_a_stream_is_a_server_error() {
        let mut assembler = StreamAssembler::default();
        let err = assembler
            .push(r#"{"error": {"message": "overloaded"}}"#)
            .unwrap_err();
        assert_eq!(err, LlmError::server(500, "overloaded"));
        assert!(matches!(
            assembler.push("nope"),
            Err(LlmError::MalformedResponse(_))
        ));
    }
}
