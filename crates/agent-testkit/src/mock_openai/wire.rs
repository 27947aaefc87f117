//! The OpenAI wire format: completion objects, SSE chunk streams and error bodies.

use std::io;

use agent_llm::TokenUsage;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};

use super::reply::Completion;

/// Longest content delta / argument fragment, in characters.
const MAX_FRAGMENT_CHARS: usize = 8;
/// A non-empty string is split into at least this many fragments (when it has that many
/// characters), so that clients really have to reassemble.
const MIN_FRAGMENTS: usize = 3;

/// Identity of one response: `id`, `created` and `model` are shared by every chunk.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    pub(crate) id: String,
    pub(crate) created: u64,
    pub(crate) model: String,
}

/// `{"error": {"message", "type", "param", "code"}}`.
pub(crate) fn error_body(
    message: &str,
    error_type: &str,
    param: Option<&str>,
    code: Option<&str>,
) -> Value {
    json!({
        "error": {
            "message": message,
            "type": error_type,
            "param": param,
            "code": code,
        }
    })
}

/// An error response with an OpenAI-shaped body.
pub(crate) fn error_response(
    status: StatusCode,
    message: &str,
    error_type: &str,
    param: Option<&str>,
    code: Option<&str>,
) -> Response {
    json_response(status, &error_body(message, error_type, param, code))
}

/// A JSON response with an exact `Content-Length`.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

fn usage_json(usage: TokenUsage) -> Value {
    let mut value = json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens(),
    });
    if usage.cached_prompt_tokens > 0 {
        value["prompt_tokens_details"] = json!({ "cached_tokens": usage.cached_prompt_tokens });
    }
    value
}

fn tool_calls_json(completion: &Completion) -> Value {
    completion
        .tool_calls
        .iter()
        .map(|call| {
            json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            })
        })
        .collect()
}

/// The non-streaming `chat.completion` object.
pub(crate) fn completion_json(
    completion: &Completion,
    envelope: &Envelope,
    usage: TokenUsage,
) -> Value {
    let mut message = json!({"role": "assistant", "content": completion.content});
    if let Some(reasoning) = &completion.reasoning {
        message["reasoning_content"] = json!(reasoning);
    }
    if let Some(refusal) = &completion.refusal {
        message["refusal"] = json!(refusal);
    }
    if !completion.tool_calls.is_empty() {
        message["tool_calls"] = tool_calls_json(completion);
    }
    json!({
        "id": envelope.id,
        "object": "chat.completion",
        "created": envelope.created,
        "model": envelope.model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": completion.effective_finish_reason(),
        }],
        "usage": usage_json(usage),
    })
}

/// Splits `text` into small fragments on character boundaries: at most [`MAX_FRAGMENT_CHARS`]
/// characters each and, when `text` is long enough, at least [`MIN_FRAGMENTS`] of them.
pub(crate) fn fragments(text: &str) -> Vec<&str> {
    let chars = text.chars().count();
    if chars == 0 {
        return Vec::new();
    }
    let size = chars.div_ceil(MIN_FRAGMENTS).clamp(1, MAX_FRAGMENT_CHARS);
    let mut out = Vec::with_capacity(chars.div_ceil(size));
    let mut start = 0;
    for (count, (at, _)) in text.char_indices().enumerate() {
        if count > 0 && count % size == 0 {
            out.push(&text[start..at]);
            start = at;
        }
    }
    out.push(&text[start..]);
    out
}

/// The `chat.completion.chunk` events of a streamed reply, in order (without `[DONE]`):
/// the role, the content deltas, each tool call's opening delta and argument fragments, the
/// finish reason, and — when `include_usage` — a final chunk with empty `choices` and the usage.
pub(crate) fn stream_chunks(
    completion: &Completion,
    envelope: &Envelope,
    usage: TokenUsage,
    include_usage: bool,
) -> Vec<Value> {
    let chunk = |delta: Value, finish_reason: Option<&str>| {
        let mut chunk = json!({
            "id": envelope.id,
            "object": "chat.completion.chunk",
            "created": envelope.created,
            "model": envelope.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        });
        if include_usage {
            // With include_usage, OpenAI sends `"usage": null` on every chunk but the last.
            chunk["usage"] = Value::Null;
        }
        chunk
    };
    let opening_content = if completion.content.is_some() {
        json!("")
    } else {
        Value::Null
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": opening_content}),
        None,
    )];
    if let Some(reasoning) = &completion.reasoning {
        chunks.extend(
            fragments(reasoning)
                .into_iter()
                .map(|piece| chunk(json!({"reasoning_content": piece}), None)),
        );
    }
    if let Some(content) = &completion.content {
        chunks.extend(
            fragments(content)
                .into_iter()
                .map(|piece| chunk(json!({"content": piece}), None)),
        );
    }
    if let Some(refusal) = &completion.refusal {
        chunks.extend(
            fragments(refusal)
                .into_iter()
                .map(|piece| chunk(json!({"refusal": piece}), None)),
        );
    }
    for (index, call) in completion.tool_calls.iter().enumerate() {
        chunks.push(chunk(
            json!({"tool_calls": [{
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": ""},
            }]}),
            None,
        ));
        chunks.extend(
            fragments(&call.function.arguments)
                .into_iter()
                .map(|piece| {
                    chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                        None,
                    )
                }),
        );
    }
    chunks.push(chunk(json!({}), Some(completion.effective_finish_reason())));
    if include_usage {
        chunks.push(json!({
            "id": envelope.id,
            "object": "chat.completion.chunk",
            "created": envelope.created,
            "model": envelope.model,
            "choices": [],
            "usage": usage_json(usage),
        }));
    }
    chunks
}

/// One SSE event carrying `data`.
pub(crate) fn sse_event(data: &str) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// The terminating `data: [DONE]` event.
pub(crate) fn sse_done() -> Bytes {
    sse_event("[DONE]")
}

/// A streaming body that sends `pieces` one by one — yielding to the runtime before each, so
/// that the server flushes every piece separately — and, when `cut`, then aborts the connection
/// instead of ending the body cleanly.
pub(crate) fn paced_body(pieces: Vec<Bytes>, cut: bool) -> Body {
    let mut items: Vec<Result<Bytes, io::Error>> = pieces.into_iter().map(Ok).collect();
    if cut {
        items.push(Err(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "mock-openai: connection cut by a scripted fault",
        )));
    }
    let stream = futures::stream::iter(items).then(|item| async move {
        tokio::task::yield_now().await;
        item
    });
    Body::from_stream(stream)
}

/// A `text/event-stream` response around `body`.
pub(crate) fn sse_response(body: Body) -> Response {
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_split_on_char_boundaries_and_reassemble() {
        for text in [
            "",
            "a",
            "ab",
            "{\"command\":\"ls\"}",
            "héllo wörld ✓ ünïcode",
            &"x".repeat(100),
        ] {
            let pieces = fragments(text);
            assert_eq!(pieces.concat(), text);
            assert!(
                pieces
                    .iter()
                    .all(|p| p.chars().count() <= MAX_FRAGMENT_CHARS)
            );
            let chars = text.chars().count();
            assert!(
                pieces.len() >= chars.min(MIN_FRAGMENTS),
                "{text:?} -> {pieces:?}"
            );
        }
    }
}
