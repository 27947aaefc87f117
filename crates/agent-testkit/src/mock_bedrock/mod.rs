//! A strict mock of Amazon Bedrock's Converse API over real HTTP on 127.0.0.1, for the AWS SDK
//! with its endpoint pointed here ([`MockBedrock::endpoint`]).
//!
//! It serves `POST /model/{modelId}/converse` and `POST /model/{modelId}/converse-stream` (the
//! reply as `application/vnd.amazon.eventstream` frames, see [`converse_stream_frames`]),
//! requires a SigV4 `Authorization` header (any credentials), records every request and checks
//! its body with
//! [`validate_converse_request`] (alternating roles starting with the user, every `toolUse`
//! answered by a `toolResult` in the next user turn, no blank text, a `toolConfig` whenever
//! tool blocks are present, valid tool specs and images). A request that breaks a rule gets
//! Bedrock's 400 `ValidationException` and is kept as a [`ProtocolViolation`]. Valid requests
//! are answered from a script of [`BedrockReply`]s.

mod eventstream;
mod validate;

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

pub use eventstream::{
    converse_stream_body, converse_stream_frames, encode_frame, event_frame, exception_frame,
};
pub use validate::validate_converse_request;

use eventstream::{stop_reason, tool_input};

use crate::StreamGate;
use crate::mock_openai::{Completion, RecordedRequest};
use crate::server::{LocalServer, Shutdown};
use crate::violation::{ProtocolViolation, ViolationList};

/// What the mock answers next.
#[derive(Debug, Clone, PartialEq)]
pub enum BedrockReply {
    /// A Converse reply: text and `toolUse` blocks (arguments must be JSON objects).
    Message(Completion),
    /// 429 `ThrottlingException`.
    Throttled,
    /// 503 `ServiceUnavailableException`.
    ServiceUnavailable,
    /// For ConverseStream: the reply's first `after_events` frames, then nothing until `gate` is
    /// released, then the rest. For Converse: the reply once released.
    HeldStream {
        /// The reply.
        reply: Completion,
        /// How many frames are sent before the gate.
        after_events: usize,
        /// Released by the test.
        gate: StreamGate,
    },
    /// For ConverseStream: `messageStart`, a first piece of text (`"Partial"`), then an
    /// `exception` frame of this `:exception-type` (`throttlingException`,
    /// `modelStreamErrorException`, `validationException`, ...). For Converse: the HTTP error
    /// the exception stands for.
    ExceptionInStream(String),
    /// For ConverseStream: these bytes as the body, whatever they are (a test's corrupted or cut
    /// frames). For Converse: 500 `InternalServerException`.
    RawStream(Vec<u8>),
}

impl From<Completion> for BedrockReply {
    fn from(completion: Completion) -> Self {
        Self::Message(completion)
    }
}

#[derive(Debug, Default)]
struct Inner {
    script: VecDeque<BedrockReply>,
    requests: Vec<RecordedRequest>,
    violations: Vec<ProtocolViolation>,
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

/// The strict mock Converse endpoint. Serves on a background task until dropped.
#[derive(Debug)]
pub struct MockBedrock {
    shared: Arc<Shared>,
    server: LocalServer,
}

impl MockBedrock {
    /// Starts a server on a free loopback port. Must be called inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// The socket could not be bound.
    pub async fn start() -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = LocalServer::bind(0).await?;
        let server = LocalServer::start(listener, app, Shutdown::default(), true, "mock Bedrock")?;
        Ok(Self { shared, server })
    }

    /// The endpoint URL for the SDK, `http://127.0.0.1:PORT`.
    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// Queues a reply.
    pub fn push(&self, reply: impl Into<BedrockReply>) -> &Self {
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
    let mut response = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        json!({"message": message}).to_string(),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(kind) {
        response.headers_mut().insert("x-amzn-errortype", value);
    }
    response
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
        tracing::warn!(index, %message, "mock Bedrock request violation");
        shared.lock().violations.push(ProtocolViolation {
            request_index: index,
            message: message.clone(),
        });
        message
    };
    let rest = recorded.path.strip_prefix("/model/");
    let (model, stream) = match rest.and_then(|rest| rest.strip_suffix("/converse-stream")) {
        Some(model) => (Some(model), true),
        None => (rest.and_then(|rest| rest.strip_suffix("/converse")), false),
    };
    if recorded.method != "POST" || model.is_none_or(str::is_empty) {
        let message = violation(format!(
            "Unknown operation {} {}",
            recorded.method, recorded.path
        ));
        return error_response(404, "UnknownOperationException", &message);
    }
    if !recorded
        .header("authorization")
        .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 Credential="))
    {
        return error_response(403, "AccessDeniedException", "Missing Authentication Token");
    }
    if let Err(message) = validate_converse_request(&recorded.body) {
        let message = violation(message);
        return error_response(400, "ValidationException", &message);
    }
    let Some(reply) = shared.lock().script.pop_front() else {
        let message = violation(format!(
            "the mock Bedrock script ran out at request #{index}"
        ));
        return error_response(500, "InternalServerException", &message);
    };
    match reply {
        BedrockReply::Throttled => error_response(
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
        ),
        BedrockReply::ServiceUnavailable => error_response(
            503,
            "ServiceUnavailableException",
            "Bedrock is unable to process your request.",
        ),
        BedrockReply::ExceptionInStream(exception) if !stream => {
            let (status, kind) = exception_status(&exception);
            error_response(status, &kind, "the mock's exception, as an HTTP error")
        }
        BedrockReply::ExceptionInStream(exception) => event_stream(
            vec![
                event_frame("messageStart", json!({"role": "assistant"})),
                event_frame(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": 0, "delta": {"text": "Partial"}}),
                ),
                exception_frame(&exception, "The mock's stream failed."),
            ],
            0,
            None,
        ),
        BedrockReply::RawStream(_) if !stream => error_response(
            500,
            "InternalServerException",
            "a raw stream was scripted for a Converse request",
        ),
        BedrockReply::RawStream(bytes) => event_stream(vec![bytes], 0, None),
        BedrockReply::HeldStream {
            reply,
            after_events,
            gate,
        } => {
            let (input, output) = usage(&recorded, &reply);
            if stream {
                event_stream(
                    converse_stream_frames(&reply, input, output),
                    after_events,
                    Some(gate),
                )
            } else {
                gate.wait().await;
                converse_reply(&reply, input, output)
            }
        }
        BedrockReply::Message(completion) => {
            let (input, output) = usage(&recorded, &completion);
            if stream {
                event_stream(converse_stream_frames(&completion, input, output), 0, None)
            } else {
                converse_reply(&completion, input, output)
            }
        }
    }
}

/// The HTTP status and error type a stream exception stands for.
fn exception_status(exception: &str) -> (u16, String) {
    let status = match exception {
        "throttlingException" => 429,
        "validationException" => 400,
        "serviceUnavailableException" => 503,
        _ => 500,
    };
    let mut kind: Vec<char> = exception.chars().collect();
    if let Some(first) = kind.first_mut() {
        *first = first.to_ascii_uppercase();
    }
    (status, kind.into_iter().collect())
}

/// (input, output) tokens: the completion's, or the body's length / 4 and 20.
fn usage(recorded: &RecordedRequest, completion: &Completion) -> (u64, u64) {
    let input = (recorded.raw_body.len() as u64).div_ceil(4);
    completion
        .usage
        .map_or((input, 20), |u| (u.prompt_tokens, u.completion_tokens))
}

/// A Converse reply as one JSON body.
fn converse_reply(completion: &Completion, input: u64, output: u64) -> Response {
    let mut content = Vec::new();
    if let Some(text) = completion.content.as_deref().filter(|t| !t.is_empty()) {
        content.push(json!({"text": text}));
    }
    for call in &completion.tool_calls {
        content.push(
            json!({"toolUse": {"toolUseId": call.id, "name": call.function.name,
            "input": tool_input(&call.function.arguments)}}),
        );
    }
    let body = json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason(completion),
        "usage": {"inputTokens": input, "outputTokens": output, "totalTokens": input + output},
        "metrics": {"latencyMs": 1},
    });
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

/// The frames as an event-stream body, one chunk each, that stops after `after` of them until
/// `gate` (if any) is released.
fn event_stream(mut frames: Vec<Vec<u8>>, after: usize, gate: Option<StreamGate>) -> Response {
    use futures::StreamExt;
    let rest = match gate {
        Some(_) => frames.split_off(after.min(frames.len())).concat(),
        None => Vec::new(),
    };
    let head = futures::stream::iter(
        frames
            .into_iter()
            .map(|f| Ok::<_, io::Error>(bytes::Bytes::from(f))),
    );
    let tail = futures::stream::once(async move {
        if let Some(gate) = gate {
            gate.wait().await;
        }
        Ok::<_, io::Error>(bytes::Bytes::from(rest))
    });
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/vnd.amazon.eventstream"),
        )],
        Body::from_stream(head.chain(tail)),
    )
        .into_response()
}
