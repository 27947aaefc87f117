//! A strict mock of Anthropic's Messages API over real HTTP on 127.0.0.1.
//!
//! [`MockAnthropic::start`] serves `POST /v1/messages` (base URL [`MockAnthropic::base_url`]).
//! Every request is recorded and checked by [`validate_messages_request`] — alternating roles,
//! every `tool_use` answered by a `tool_result` at the start of the next user turn, no empty
//! text blocks, no system role inside `messages`, valid tools, `tool_choice` only with tools,
//! at most four `cache_control` breakpoints — and the `anthropic-version` header. A request that
//! breaks a rule gets Anthropic's 400 `invalid_request_error` and is kept as a
//! [`ProtocolViolation`] ([`MockAnthropic::verify`]).
//!
//! Valid requests are answered from a script of [`AnthropicReply`]s: messages (text and
//! `tool_use` blocks, as one JSON message or as the Messages streaming events), 529
//! `overloaded_error`, 429 `rate_limit_error` with `retry-after`, or an `error` event inside a
//! stream. The usage it reports models prompt caching: the prefix up to the last `cache_control`
//! breakpoint (tools, then system) is written to the cache on first sight
//! (`cache_creation_input_tokens`) and read from it afterwards (`cache_read_input_tokens`).

mod validate;

use std::collections::{HashSet, VecDeque};
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub use validate::validate_messages_request;

use crate::StreamGate;
use crate::mock_openai::{Completion, RecordedRequest};
use crate::server::{LocalServer, Shutdown};
use crate::violation::{ProtocolViolation, ViolationList};

/// What the mock answers next.
#[derive(Debug, Clone, PartialEq)]
pub enum AnthropicReply {
    /// A message: text and tool calls (`tool_use` blocks; arguments must be JSON objects).
    Message(Completion),
    /// 529 `overloaded_error`.
    Overloaded,
    /// 429 `rate_limit_error`, with `retry-after: <seconds>` when given.
    RateLimited {
        /// The `retry-after` header, in seconds.
        retry_after: Option<u64>,
    },
    /// For a streamed request: `message_start`, then an `error` event (`overloaded_error`).
    /// For a plain request: as [`AnthropicReply::Overloaded`].
    OverloadedInStream,
    /// For a streamed request: the message's first `after_events` events, then nothing until
    /// `gate` is released, then the rest. For a plain request: the message once released.
    HeldStream {
        /// The message.
        reply: Completion,
        /// How many events are sent before the gate.
        after_events: usize,
        /// Released by the test.
        gate: StreamGate,
    },
}

impl From<Completion> for AnthropicReply {
    fn from(completion: Completion) -> Self {
        Self::Message(completion)
    }
}

#[derive(Debug, Default)]
struct Inner {
    script: VecDeque<AnthropicReply>,
    requests: Vec<RecordedRequest>,
    violations: Vec<ProtocolViolation>,
    api_key: Option<String>,
    /// Cached prefixes (their JSON text).
    cache: HashSet<String>,
    /// (cache writes, cache reads) so far.
    cache_use: (usize, usize),
}

#[derive(Debug, Default)]
struct Shared {
    inner: Mutex<Inner>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The strict mock Messages API. Serves on a background task until dropped.
#[derive(Debug)]
pub struct MockAnthropic {
    shared: Arc<Shared>,
    server: LocalServer,
}

impl MockAnthropic {
    /// Starts a server on a free loopback port. Must be called inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// The socket could not be bound.
    pub async fn start() -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = LocalServer::bind(0).await?;
        let server =
            LocalServer::start(listener, app, Shutdown::default(), true, "mock Anthropic")?;
        Ok(Self { shared, server })
    }

    /// The API root, `http://127.0.0.1:PORT` (requests go to `/v1/messages`).
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// Requires `x-api-key: key` (401 `authentication_error` otherwise).
    pub fn require_api_key(&self, key: impl Into<String>) -> &Self {
        self.shared.lock().api_key = Some(key.into());
        self
    }

    /// Queues a reply.
    pub fn push(&self, reply: impl Into<AnthropicReply>) -> &Self {
        self.shared.lock().script.push_back(reply.into());
        self
    }

    /// Every request received, in order.
    #[must_use]
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// The requests that broke a rule.
    #[must_use]
    pub fn violations(&self) -> Vec<ProtocolViolation> {
        self.shared.lock().violations.clone()
    }

    /// How many requests wrote their cached prefix to the cache, and how many read it from
    /// there.
    #[must_use]
    pub fn cache_use(&self) -> (usize, usize) {
        self.shared.lock().cache_use
    }

    /// Replies still queued.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.shared.lock().script.len()
    }

    /// `Ok` when no request broke a rule.
    ///
    /// # Errors
    ///
    /// Every violation.
    pub fn verify(&self) -> Result<(), ViolationList> {
        let violations = self.violations();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(ViolationList(violations))
        }
    }
}

fn error_response(status: u16, kind: &str, message: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({"type": "error", "error": {"type": kind, "message": message}});
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

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let raw = axum::body::to_bytes(body, 64 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let recorded = RecordedRequest::new(&parts, &raw);
    let index = {
        let mut inner = shared.lock();
        inner.requests.push(recorded.clone());
        inner.requests.len() - 1
    };
    let violation = |message: String| {
        tracing::warn!(index, %message, "mock Anthropic request violation");
        shared.lock().violations.push(ProtocolViolation {
            request_index: index,
            message: message.clone(),
        });
        message
    };
    if recorded.method != "POST" || recorded.path != "/v1/messages" {
        let message = violation(format!(
            "Unknown route {} {}",
            recorded.method, recorded.path
        ));
        return error_response(404, "not_found_error", &message);
    }
    let api_key = shared.lock().api_key.clone();
    if let Some(key) = api_key
        && recorded.header("x-api-key") != Some(key.as_str())
    {
        return error_response(401, "authentication_error", "invalid x-api-key");
    }
    if recorded
        .header("anthropic-version")
        .is_none_or(str::is_empty)
    {
        let message = violation("anthropic-version: header is required".into());
        return error_response(400, "invalid_request_error", &message);
    }
    if let Err(message) = validate_messages_request(&recorded.body) {
        let message = violation(message);
        return error_response(400, "invalid_request_error", &message);
    }
    let Some(reply) = shared.lock().script.pop_front() else {
        let message = violation(format!(
            "the mock Anthropic script ran out at request #{index}"
        ));
        return error_response(500, "api_error", &message);
    };
    let stream = recorded.is_stream();
    match reply {
        AnthropicReply::Overloaded => error_response(529, "overloaded_error", "Overloaded"),
        AnthropicReply::OverloadedInStream if !stream => {
            error_response(529, "overloaded_error", "Overloaded")
        }
        AnthropicReply::RateLimited { retry_after } => {
            let mut response = error_response(
                429,
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            );
            if let Some(secs) = retry_after
                && let Ok(value) = HeaderValue::from_str(&secs.to_string())
            {
                response.headers_mut().insert("retry-after", value);
            }
            response
        }
        AnthropicReply::OverloadedInStream => {
            let usage = usage(&shared, &recorded.body, None);
            sse(&[
                (
                    "message_start",
                    json!({"type": "message_start", "message": message_shell(index, &recorded.body, &usage)}),
                ),
                (
                    "error",
                    json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
                ),
            ])
        }
        AnthropicReply::HeldStream {
            reply,
            after_events,
            gate,
        } => {
            if stream {
                let usage = usage(&shared, &recorded.body, Some(&reply));
                held_sse(
                    &stream_events(index, &recorded.body, &reply, &usage),
                    after_events,
                    gate,
                )
            } else {
                gate.wait().await;
                let usage = usage(&shared, &recorded.body, Some(&reply));
                let mut message = message_shell(index, &recorded.body, &usage);
                message["content"] = Value::Array(content_blocks(&reply));
                message["stop_reason"] = json!(stop_reason(&reply));
                (
                    StatusCode::OK,
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    )],
                    message.to_string(),
                )
                    .into_response()
            }
        }
        AnthropicReply::Message(completion) => {
            let usage = usage(&shared, &recorded.body, Some(&completion));
            if stream {
                sse(&stream_events(index, &recorded.body, &completion, &usage))
            } else {
                let mut message = message_shell(index, &recorded.body, &usage);
                message["content"] = Value::Array(content_blocks(&completion));
                message["stop_reason"] = json!(stop_reason(&completion));
                (
                    StatusCode::OK,
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    )],
                    message.to_string(),
                )
                    .into_response()
            }
        }
    }
}

/// The usage of a reply, prompt caching modelled (about four bytes a token).
fn usage(shared: &Shared, body: &Value, completion: Option<&Completion>) -> Value {
    let tokens = |text: &str| (text.len() as u64).div_ceil(4);
    let mut prefix = String::new();
    let mut cached = String::new();
    for tool in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        prefix.push_str(&tool.to_string());
        if tool.get("cache_control").is_some() {
            cached.clone_from(&prefix);
        }
    }
    if let Some(Value::Array(system)) = body.get("system") {
        for block in system {
            prefix.push_str(&block.to_string());
            if block.get("cache_control").is_some() {
                cached.clone_from(&prefix);
            }
        }
    }
    let (mut creation, mut read) = (0, 0);
    if !cached.is_empty() {
        let hit = {
            let mut inner = shared.lock();
            let hit = !inner.cache.insert(cached.clone());
            if hit {
                inner.cache_use.1 += 1;
            } else {
                inner.cache_use.0 += 1;
            }
            hit
        };
        if hit {
            read = tokens(&cached);
        } else {
            creation = tokens(&cached);
        }
    }
    let whole = tokens(
        &body
            .get("messages")
            .map(Value::to_string)
            .unwrap_or_default(),
    ) + tokens(&prefix);
    let explicit = completion.and_then(|c| c.usage);
    let input = explicit.map_or_else(
        || whole.saturating_sub(creation + read),
        |u| u.prompt_tokens,
    );
    let output = explicit.map_or_else(
        || {
            completion.map_or(1, |c| {
                tokens(
                    &content_blocks(c)
                        .iter()
                        .map(Value::to_string)
                        .collect::<String>(),
                )
            })
        },
        |u| u.completion_tokens,
    );
    json!({
        "input_tokens": input,
        "output_tokens": output,
        "cache_creation_input_tokens": creation,
        "cache_read_input_tokens": read,
    })
}

fn message_shell(index: usize, body: &Value, usage: &Value) -> Value {
    json!({
        "id": format!("msg_mock{index:04}"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model").cloned().unwrap_or(Value::Null),
        "content": [],
        "stop_reason": null,
        "stop_sequence": null,
        "usage": usage,
    })
}

fn tool_input(arguments: &str) -> Value {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

fn content_blocks(completion: &Completion) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(text) = completion.content.as_deref().filter(|t| !t.is_empty()) {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in &completion.tool_calls {
        blocks.push(
            json!({"type": "tool_use", "id": call.id, "name": call.function.name,
                           "input": tool_input(&call.function.arguments)}),
        );
    }
    blocks
}

fn stop_reason(completion: &Completion) -> &'static str {
    match completion.finish_reason.as_deref() {
        Some("length") => "max_tokens",
        _ if !completion.tool_calls.is_empty() => "tool_use",
        _ => "end_turn",
    }
}

/// Small pieces, so clients must reassemble.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(7).map(|c| c.iter().collect()).collect()
}

fn stream_events(
    index: usize,
    body: &Value,
    completion: &Completion,
    usage: &Value,
) -> Vec<(&'static str, Value)> {
    let mut shell_usage = usage.clone();
    shell_usage["output_tokens"] = json!(1);
    let mut events = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": message_shell(index, body, &shell_usage)}),
        ),
        ("ping", json!({"type": "ping"})),
    ];
    let mut block = 0;
    if let Some(text) = completion.content.as_deref().filter(|t| !t.is_empty()) {
        events.push(("content_block_start", json!({"type": "content_block_start", "index": block, "content_block": {"type": "text", "text": ""}})));
        for piece in pieces(text) {
            events.push(("content_block_delta", json!({"type": "content_block_delta", "index": block, "delta": {"type": "text_delta", "text": piece}})));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": block}),
        ));
        block += 1;
    }
    for call in &completion.tool_calls {
        events.push(("content_block_start", json!({"type": "content_block_start", "index": block,
            "content_block": {"type": "tool_use", "id": call.id, "name": call.function.name, "input": {}}})));
        let input = tool_input(&call.function.arguments).to_string();
        for piece in pieces(&input) {
            events.push(("content_block_delta", json!({"type": "content_block_delta", "index": block, "delta": {"type": "input_json_delta", "partial_json": piece}})));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": block}),
        ));
        block += 1;
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason(completion), "stop_sequence": null},
        "usage": {"output_tokens": usage["output_tokens"]}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events
}

/// The events as a stream that stops after `after` of them until `gate` is released.
fn held_sse(events: &[(&str, Value)], after: usize, gate: StreamGate) -> Response {
    use futures::StreamExt;
    let mut frames: Vec<bytes::Bytes> = events
        .iter()
        .map(|(name, data)| bytes::Bytes::from(format!("event: {name}\ndata: {data}\n\n")))
        .collect();
    let split = after.min(frames.len());
    let rest = bytes::Bytes::from(frames.split_off(split).concat());
    let head = futures::stream::iter(frames.into_iter().map(Ok::<_, io::Error>));
    let tail = futures::stream::once(async move {
        gate.wait().await;
        Ok::<_, io::Error>(rest)
    });
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        )],
        Body::from_stream(head.chain(tail)),
    )
        .into_response()
}

fn sse(events: &[(&str, Value)]) -> Response {
    let text: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        )],
        Body::from(text),
    )
        .into_response()
}
