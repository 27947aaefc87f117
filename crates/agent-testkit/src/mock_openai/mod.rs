//! A strict mock of the OpenAI chat-completions API over real HTTP on 127.0.0.1.
//!
//! [`MockOpenAi::start`] binds a free loopback port and serves, on a background task:
//!
//! * `POST /v1/chat/completions` and `POST /chat/completions` (OpenAI shape; base URL
//!   [`MockOpenAi::base_url`]);
//! * `POST /openai/deployments/{deployment}/chat/completions?api-version=...` (Azure shape;
//!   endpoint [`MockOpenAi::azure_endpoint`]).
//!
//! Every request is recorded ([`MockOpenAi::requests`]) and validated the way strict providers
//! validate: a request that breaks a rule gets a 400 with an OpenAI-shaped error body and is
//! recorded in [`MockOpenAi::violations`], so a test can assert that its client never sent one
//! ([`MockOpenAi::verify`]). Valid requests are answered from a script of [`MockReply`]s —
//! completions (text, tool calls, usage), streamed as SSE when the request asks for it, or
//! [`Fault`]s (429, 5xx, slow first byte, cut streams, malformed JSON, ...).
//!
//! ```
//! use agent_testkit::MockOpenAi;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let server = MockOpenAi::start().await.unwrap();
//! server.push_text("Hello!");
//! assert!(server.base_url().starts_with("http://127.0.0.1:"));
//! assert_eq!(server.remaining(), 1);
//! // ... point a client at server.base_url() and make one request ...
//! server.verify().unwrap(); // no request broke a rule
//! # });
//! ```
//!
//! Why one file past 700 lines (a test double, not library code users link): the server's routes,
//! its script and fault API and its recorded requests share one state; the wire format, replies,
//! scripts and validation are already in their own files.

mod reply;
mod script;
mod validate;
mod wire;

use crate::server::{LocalServer, Shutdown};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_core::ToolCall;
use agent_llm::TokenUsage;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use serde_json::Value;
use thiserror::Error;
use tokio::sync::watch;

pub use reply::{Completion, Fault, MockReply};
pub use script::{ScriptEntry, ScriptError, parse_script};
pub use validate::ViolationRule;

use validate::Problem;
use wire::Envelope;

/// Largest request body accepted (images travel base64-encoded).
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// One HTTP request as the mock received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The HTTP method (`POST`, ...).
    pub method: String,
    /// The URL path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The raw query string (without `?`), if any.
    pub query: Option<String>,
    /// Every header as (lower-cased name, value), in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when it is not JSON).
    pub body: Value,
    /// The body as received (lossily decoded as UTF-8).
    pub raw_body: String,
    /// When the mock received the request (before any scripted delay).
    pub received_at: Instant,
}

impl RecordedRequest {
    /// The request of `parts` with the body `raw`, received now.
    pub(crate) fn new(parts: &axum::http::request::Parts, raw: &[u8]) -> Self {
        Self {
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().map(str::to_owned),
            headers: header_list(&parts.headers),
            body: serde_json::from_slice(raw).unwrap_or(Value::Null),
            raw_body: String::from_utf8_lossy(raw).into_owned(),
            received_at: Instant::now(),
        }
    }

    /// The first value of header `name` (case-insensitive).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The raw (not percent-decoded) value of query parameter `name`.
    #[must_use]
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query.as_deref()?.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then_some(value)
        })
    }

    /// The `messages` array of the body (empty when absent).
    #[must_use]
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// Whether the body asked for a streamed reply.
    #[must_use]
    pub fn is_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// The conversation key: the text of the first user message (see [`conversation_key`]).
    #[must_use]
    pub fn conversation_key(&self) -> Option<String> {
        conversation_key(&self.body)
    }
}

/// The text of the first `user` message of a request body: its string content, or the
/// concatenated `text` parts of its content array. [`MockOpenAi::push_for`] keys conversations
/// by it.
#[must_use]
pub fn conversation_key(body: &Value) -> Option<String> {
    let messages = body.get("messages")?.as_array()?;
    let first_user = messages
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    match first_user.get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        ),
        _ => None,
    }
}

/// A request that broke a strict-provider rule (or found the script empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The offending request's number (from 0, in order of arrival): its index in
    /// [`MockOpenAi::requests`] while recording is on.
    pub request_index: usize,
    /// The rule broken.
    pub rule: ViolationRule,
    /// The offending parameter, OpenAI style (`messages.[3].tool_call_id`), when there is one.
    pub param: Option<String>,
    /// The message sent in the error body.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request #{} broke {}", self.request_index, self.rule)?;
        if let Some(param) = &self.param {
            write!(f, " at {param}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// [`MockOpenAi::verify`] found violations.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("the mock OpenAI server recorded {} violation(s):\n{}", .0.len(), list(.0))]
pub struct ViolationsError(pub Vec<Violation>);

fn list(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| format!("  - {v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Debug, Default)]
struct Script {
    default: VecDeque<MockReply>,
    conversations: HashMap<String, VecDeque<MockReply>>,
    fallback: Option<MockReply>,
}

#[derive(Debug)]
struct Inner {
    script: Script,
    requests: Vec<RecordedRequest>,
    /// Requests received, recorded or not.
    received: usize,
    /// Whether requests are kept in `requests`.
    recording: bool,
    violations: Vec<Violation>,
    api_key: Option<String>,
    /// When set, every request offering `tools` gets this model's Ollama-style 400.
    rejects_tools: Option<String>,
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            script: Script::default(),
            requests: Vec::new(),
            received: 0,
            recording: true,
            violations: Vec::new(),
            api_key: None,
            rejects_tools: None,
        }
    }
}

#[derive(Debug)]
struct Shared {
    inner: Mutex<Inner>,
    received: watch::Sender<usize>,
    shutdown: Shutdown,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, request: RecordedRequest) -> usize {
        let count = {
            let mut inner = self.lock();
            if inner.recording {
                inner.requests.push(request);
            }
            inner.received += 1;
            inner.received
        };
        self.received.send_replace(count);
        count - 1
    }

    fn violation(&self, request_index: usize, problem: Problem) -> Violation {
        let violation = Violation {
            request_index,
            rule: problem.rule,
            param: problem.param,
            message: problem.message,
        };
        tracing::warn!(%violation, "mock OpenAI request violation");
        self.lock().violations.push(violation.clone());
        violation
    }

    /// Resolves when the server is shutting down.
    async fn stopping(&self) {
        self.shutdown.stopping().await;
    }
}

/// The strict mock OpenAI-compatible server. Serves on a background task until dropped.
#[derive(Debug)]
pub struct MockOpenAi {
    shared: Arc<Shared>,
    server: LocalServer,
}

impl MockOpenAi {
    /// Starts a server on 127.0.0.1 on a free port. Must be called inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// The listening socket could not be bound.
    pub async fn start() -> io::Result<Self> {
        Self::start_on_port(0).await
    }

    /// Starts a server on 127.0.0.1:`port` (0: a free port).
    ///
    /// # Errors
    ///
    /// The listening socket could not be bound.
    pub async fn start_on_port(port: u16) -> io::Result<Self> {
        let shutdown = Shutdown::default();
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner::default()),
            received: watch::Sender::new(0),
            shutdown: shutdown.clone(),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = LocalServer::bind(port).await?;
        let server = LocalServer::start(listener, app, shutdown, true, "mock OpenAI")?;
        Ok(Self { shared, server })
    }

    /// Stops the server and waits until it has stopped: the port is closed, hanging and delayed
    /// replies are released (with a 503) and open connections are closed. Dropping the server
    /// does the same without waiting.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }

    /// The socket address served.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// The OpenAI base URL, `http://127.0.0.1:PORT/v1`.
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.server.addr())
    }

    /// The Azure endpoint, `http://127.0.0.1:PORT` (deployments live under
    /// `/openai/deployments/{deployment}/chat/completions`).
    #[must_use]
    pub fn azure_endpoint(&self) -> String {
        format!("http://{}", self.server.addr())
    }

    /// Requires `key`: `Authorization: Bearer <key>` on the OpenAI routes, `api-key: <key>` on
    /// the Azure route. Other requests get a 401 (`invalid_api_key`), which is not a violation.
    pub fn require_api_key(&self, key: impl Into<String>) -> &Self {
        self.shared.lock().api_key = Some(key.into());
        self
    }

    /// Answers every request that offers `tools` as Ollama does for a model without function
    /// calling: 400, `{"error": {"message": "registry.ollama.ai/library/<model>:latest does not
    /// support tools", "type": "api_error", ...}}`. Such a request takes no script entry and is
    /// not a violation; [`MockOpenAi::requests`] still records it.
    pub fn reject_tools(&self, model: impl Into<String>) -> &Self {
        self.shared.lock().rejects_tools = Some(model.into());
        self
    }

    /// Queues `reply` on the default queue (used by every conversation without its own queue).
    pub fn push(&self, reply: impl Into<MockReply>) -> &Self {
        self.shared.lock().script.default.push_back(reply.into());
        self
    }

    /// Queues `reply` for the conversation whose first user message is `conversation` (see
    /// [`conversation_key`]). Once a conversation has a queue, it answers only from it.
    pub fn push_for(&self, conversation: impl Into<String>, reply: impl Into<MockReply>) -> &Self {
        self.shared
            .lock()
            .script
            .conversations
            .entry(conversation.into())
            .or_default()
            .push_back(reply.into());
        self
    }

    /// Answers with `reply` whenever a request finds its queue empty, instead of failing with
    /// [`ViolationRule::ScriptExhausted`] (`None` restores the failure). For benchmarks and the
    /// binary's repeat mode.
    pub fn set_fallback(&self, reply: Option<MockReply>) -> &Self {
        self.shared.lock().script.fallback = reply;
        self
    }

    /// Queues a text-only reply.
    pub fn push_text(&self, text: impl Into<String>) -> &Self {
        self.push(Completion::text(text))
    }

    /// Queues a tool-call reply with optional text (`""`: `"content": null`).
    pub fn push_tool_calls(
        &self,
        content: &str,
        calls: impl IntoIterator<Item = ToolCall>,
    ) -> &Self {
        let content = (!content.is_empty()).then(|| content.to_owned());
        self.push(Completion::tool_calls(content, calls))
    }

    /// Queues a 429 `rate_limit_exceeded` with `Retry-After: <seconds>` (`None`: no header).
    pub fn push_rate_limited(&self, retry_after_secs: Option<u64>) -> &Self {
        self.push(Fault::RateLimited {
            retry_after: retry_after_secs,
        })
    }

    /// Queues a 429 `insufficient_quota`.
    pub fn push_insufficient_quota(&self) -> &Self {
        self.push(Fault::InsufficientQuota)
    }

    /// Queues a 500 (`status` 500) or 503 (any other `status` given is sent as a generic
    /// `server_error` with that status).
    pub fn push_server_error(&self, status: u16) -> &Self {
        self.push(match status {
            500 => Fault::ServerError,
            503 => Fault::ServiceUnavailable,
            status => Fault::HttpError {
                status,
                error_type: "server_error".into(),
                code: None,
                message: format!("The server had an error ({status})."),
            },
        })
    }

    /// Queues a 401 `invalid_api_key`.
    pub fn push_invalid_api_key(&self) -> &Self {
        self.push(Fault::InvalidApiKey)
    }

    /// Queues a 400 `context_length_exceeded`.
    pub fn push_context_length_exceeded(&self) -> &Self {
        self.push(Fault::ContextLengthExceeded)
    }

    /// Queues a reply whose headers come only after `delay`.
    pub fn push_slow_first_byte(&self, delay: Duration, then: Completion) -> &Self {
        self.push(Fault::slow_first_byte(delay, then))
    }

    /// Queues a reply cut after `after_chunks` SSE events (or half its JSON body when not
    /// streamed); see [`Fault::CutStream`].
    pub fn push_cut_stream(&self, after_chunks: usize, reply: Completion) -> &Self {
        self.push(Fault::cut_stream(after_chunks, reply))
    }

    /// Queues a 200 whose body is not valid JSON.
    pub fn push_malformed_json(&self) -> &Self {
        self.push(Fault::MalformedJson)
    }

    /// Queues a stream that goes silent after `after_chunks` events; see [`Fault::StallStream`].
    pub fn push_stall_stream(&self, after_chunks: usize, reply: Completion) -> &Self {
        self.push(Fault::stall_stream(after_chunks, reply))
    }

    /// Queues a reply that never comes.
    pub fn push_hang(&self) -> &Self {
        self.push(Fault::Hang)
    }

    /// Queues the entries of a script file (see [`parse_script`]).
    ///
    /// # Errors
    ///
    /// The script does not parse; nothing is queued then.
    pub fn load_script(&self, json: &str) -> Result<usize, ScriptError> {
        let entries = parse_script(json)?;
        let count = entries.len();
        for entry in entries {
            match entry.conversation {
                Some(key) => self.push_for(key, entry.reply),
                None => self.push(entry.reply),
            };
        }
        Ok(count)
    }

    /// Whether to keep every request for [`requests`](Self::requests) (on by default). Turn it
    /// off for long benchmarks: request counts, [`wait_for_requests`](Self::wait_for_requests)
    /// and violations keep working, but request bodies are no longer stored.
    pub fn set_recording(&self, on: bool) -> &Self {
        self.shared.lock().recording = on;
        self
    }

    /// Every request recorded so far, in order (rejected ones included). A request's position
    /// here is its [`Violation::request_index`] as long as recording was never turned off.
    #[must_use]
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Removes and returns every request recorded so far, in order: for a long benchmark that
    /// measures each request and then lets it go (later requests are recorded as before, but
    /// [`Violation::request_index`] no longer indexes [`requests`](Self::requests)).
    pub fn take_requests(&self) -> Vec<RecordedRequest> {
        std::mem::take(&mut self.shared.lock().requests)
    }

    /// How many requests have been received (recorded or not).
    #[must_use]
    pub fn request_count(&self) -> usize {
        self.shared.lock().received
    }

    /// Every violation recorded so far, in order.
    #[must_use]
    pub fn violations(&self) -> Vec<Violation> {
        self.shared.lock().violations.clone()
    }

    /// `Ok` when no request broke a rule or found the script empty.
    ///
    /// # Errors
    ///
    /// [`ViolationsError`] listing every violation.
    pub fn verify(&self) -> Result<(), ViolationsError> {
        let violations = self.violations();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(ViolationsError(violations))
        }
    }

    /// Scripted replies not yet used, over all queues.
    #[must_use]
    pub fn remaining(&self) -> usize {
        let inner = self.shared.lock();
        inner.script.default.len()
            + inner
                .script
                .conversations
                .values()
                .map(VecDeque::len)
                .sum::<usize>()
    }

    /// Waits until at least `count` requests have been received (recorded before any scripted
    /// delay, so this also fires for requests that are still being answered). Wrap it in a
    /// timeout.
    pub async fn wait_for_requests(&self, count: usize) {
        let mut rx = self.shared.received.subscribe();
        // The sender lives in `self.shared`, so `wait_for` only ends when the count is reached.
        let _ = rx.wait_for(|n| *n >= count).await;
    }
}

/// Which endpoint a request addressed.
enum Route {
    OpenAi,
    Azure { deployment: String },
}

fn route(method: &Method, path: &str) -> Option<Route> {
    if method != Method::POST {
        return None;
    }
    if path == "/v1/chat/completions" || path == "/chat/completions" {
        return Some(Route::OpenAi);
    }
    let deployment = path
        .strip_prefix("/openai/deployments/")?
        .strip_suffix("/chat/completions")?;
    (!deployment.is_empty() && !deployment.contains('/')).then(|| Route::Azure {
        deployment: deployment.to_owned(),
    })
}

fn header_list(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn authorized(request: &RecordedRequest, route: &Route, key: &str) -> bool {
    match route {
        Route::OpenAi => request
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|given| given == key),
        Route::Azure { .. } => request.header("api-key") == Some(key),
    }
}

fn violation_response(status: StatusCode, violation: &Violation) -> Response {
    wire::error_response(
        status,
        &violation.message,
        "invalid_request_error",
        violation.param.as_deref(),
        Some(violation.rule.as_str()),
    )
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let (raw, body_error) = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => (bytes, None),
        Err(error) => (Bytes::new(), Some(error.to_string())),
    };
    let recorded = RecordedRequest::new(&parts, &raw);
    let index = shared.record(recorded.clone());
    tracing::debug!(index, method = %recorded.method, path = %recorded.path, "mock OpenAI request");

    let Some(route) = route(&parts.method, &recorded.path) else {
        let violation = shared.violation(
            index,
            Problem::new(
                ViolationRule::UnknownRoute,
                None,
                format!(
                    "Unknown request URL: {} {}. Expected POST /v1/chat/completions, POST \
                     /chat/completions or POST /openai/deployments/{{deployment}}/chat/completions.",
                    recorded.method, recorded.path
                ),
            ),
        );
        return violation_response(StatusCode::NOT_FOUND, &violation);
    };

    let api_key = shared.lock().api_key.clone();
    if let Some(key) = api_key
        && !authorized(&recorded, &route, &key)
    {
        let header = match route {
            Route::OpenAi => "an 'Authorization: Bearer <key>' header",
            Route::Azure { .. } => "an 'api-key' header",
        };
        return wire::error_response(
            StatusCode::UNAUTHORIZED,
            &format!("Incorrect or missing API key: this endpoint expects the key in {header}."),
            "invalid_request_error",
            None,
            Some("invalid_api_key"),
        );
    }

    if let Some(problem) = request_problem(&recorded, &route, body_error) {
        let violation = shared.violation(index, problem);
        return violation_response(StatusCode::BAD_REQUEST, &violation);
    }

    let rejects_tools = shared.lock().rejects_tools.clone();
    if let Some(model) = rejects_tools
        && recorded.body.get("tools").is_some()
    {
        return wire::error_response(
            StatusCode::BAD_REQUEST,
            &format!("registry.ollama.ai/library/{model}:latest does not support tools"),
            "api_error",
            None,
            None,
        );
    }

    let key = recorded.conversation_key();
    let reply = {
        let mut inner = shared.lock();
        let script = &mut inner.script;
        let queue = match key.as_ref().and_then(|k| script.conversations.get_mut(k)) {
            Some(queue) => queue,
            None => &mut script.default,
        };
        queue.pop_front().or_else(|| script.fallback.clone())
    };
    let Some(reply) = reply else {
        let violation = shared.violation(
            index,
            Problem::new(
                ViolationRule::ScriptExhausted,
                None,
                format!(
                    "The mock OpenAI script ran out: no reply left for request #{index}{}.",
                    key.map(|k| format!(" (conversation {k:?})"))
                        .unwrap_or_default()
                ),
            ),
        );
        return wire::error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &violation.message,
            "server_error",
            None,
            Some(ViolationRule::ScriptExhausted.as_str()),
        );
    };

    let model = match (&route, recorded.body.get("model").and_then(Value::as_str)) {
        (_, Some(model)) => model.to_owned(),
        (Route::Azure { deployment }, None) => deployment.clone(),
        (Route::OpenAi, None) => String::new(),
    };
    let envelope = Envelope {
        id: format!("chatcmpl-mock{index}"),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        model,
    };
    answer(&shared, &recorded, &envelope, reply).await
}

/// Checks the request's transport details and body.
fn request_problem(
    recorded: &RecordedRequest,
    route: &Route,
    body_error: Option<String>,
) -> Option<Problem> {
    if let Some(error) = body_error {
        return Some(Problem::new(
            ViolationRule::InvalidBody,
            None,
            format!("The request body could not be read: {error}"),
        ));
    }
    let json_type = recorded
        .header("content-type")
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json_type {
        return Some(Problem::new(
            ViolationRule::ContentType,
            None,
            format!(
                "Invalid Content-Type header ({}); expected 'application/json'.",
                recorded.header("content-type").unwrap_or("missing")
            ),
        ));
    }
    if matches!(route, Route::Azure { .. })
        && recorded
            .query_param("api-version")
            .is_none_or(str::is_empty)
    {
        return Some(Problem::new(
            ViolationRule::MissingApiVersion,
            Some("api-version".into()),
            "Missing required query parameter 'api-version'.".into(),
        ));
    }
    if recorded.body.is_null() {
        return Some(Problem::new(
            ViolationRule::InvalidBody,
            None,
            "We could not parse the JSON body of your request. The body must be a JSON object."
                .into(),
        ));
    }
    validate::validate_body(&recorded.body, matches!(route, Route::Azure { .. })).err()
}

/// A rough token count: about four bytes a token, at least one.
fn estimate_tokens(bytes: usize) -> u64 {
    u64::try_from(bytes.div_ceil(4).max(1)).unwrap_or(u64::MAX)
}

fn usage_for(completion: &Completion, recorded: &RecordedRequest) -> TokenUsage {
    completion.usage.unwrap_or_else(|| {
        let reply_bytes = completion.content.as_deref().map_or(0, str::len)
            + completion
                .tool_calls
                .iter()
                .map(|c| c.function.name.len() + c.function.arguments.len())
                .sum::<usize>();
        let prompt_tokens = estimate_tokens(recorded.raw_body.len());
        let completion_tokens = estimate_tokens(reply_bytes);
        TokenUsage {
            prompt_tokens,
            completion_tokens,
            ..TokenUsage::default()
        }
    })
}

fn include_usage(recorded: &RecordedRequest) -> bool {
    recorded
        .body
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// Renders a completion, streamed or not; `cut`: break off after that many events (streamed) or
/// half the body (not streamed).
fn render(
    completion: &Completion,
    recorded: &RecordedRequest,
    envelope: &Envelope,
    cut: Option<usize>,
) -> Response {
    let usage = usage_for(completion, recorded);
    if recorded.is_stream() {
        let chunks = wire::stream_chunks(completion, envelope, usage, include_usage(recorded));
        let mut events: Vec<Bytes> = chunks
            .iter()
            .map(|chunk| wire::sse_event(&chunk.to_string()))
            .collect();
        match cut {
            Some(after) => events.truncate(after),
            None => events.push(wire::sse_done()),
        }
        return wire::sse_response(wire::paced_body(events, cut.is_some()));
    }
    let body = wire::completion_json(completion, envelope, usage);
    let Some(_) = cut else {
        return wire::json_response(StatusCode::OK, &body);
    };
    let mut text = body.to_string().into_bytes();
    text.truncate(text.len() / 2);
    let mut response = Response::new(wire::paced_body(vec![Bytes::from(text)], true));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn answer(
    shared: &Shared,
    recorded: &RecordedRequest,
    envelope: &Envelope,
    reply: MockReply,
) -> Response {
    let fault = match reply {
        MockReply::Completion(completion) => return render(&completion, recorded, envelope, None),
        MockReply::Fault(fault) => fault,
    };
    tracing::debug!(?fault, "mock OpenAI fault");
    match fault {
        Fault::RateLimited { retry_after } => {
            let message = format!(
                "Rate limit reached for requests on model {}. Please try again in {}s.",
                envelope.model,
                retry_after.unwrap_or(1)
            );
            let mut response = wire::error_response(
                StatusCode::TOO_MANY_REQUESTS,
                &message,
                "requests",
                None,
                Some("rate_limit_exceeded"),
            );
            if let Some(seconds) = retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            response
        }
        Fault::InsufficientQuota => wire::error_response(
            StatusCode::TOO_MANY_REQUESTS,
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            None,
            Some("insufficient_quota"),
        ),
        Fault::ServerError => wire::error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
            None,
        ),
        Fault::ServiceUnavailable => wire::error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "The engine is currently overloaded, please try again later.",
            "server_error",
            None,
            None,
        ),
        Fault::InvalidApiKey => wire::error_response(
            StatusCode::UNAUTHORIZED,
            "Incorrect API key provided. You can find your API key in your account settings.",
            "invalid_request_error",
            None,
            Some("invalid_api_key"),
        ),
        Fault::ContextLengthExceeded => {
            let prompt_tokens = estimate_tokens(recorded.raw_body.len());
            wire::error_response(
                StatusCode::BAD_REQUEST,
                &format!(
                    "This model's maximum context length is 128000 tokens. However, your \
                     messages resulted in {} tokens. Please reduce the length of the messages.",
                    prompt_tokens.max(128_001)
                ),
                "invalid_request_error",
                Some("messages"),
                Some("context_length_exceeded"),
            )
        }
        Fault::HttpError {
            status,
            error_type,
            code,
            message,
        } => wire::error_response(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &message,
            &error_type,
            None,
            code.as_deref(),
        ),
        Fault::SlowFirstByte { delay, then } => {
            tokio::select! {
                () = tokio::time::sleep(delay) => render(&then, recorded, envelope, None),
                () = shared.stopping() => stopping_response(),
            }
        }
        Fault::CutStream {
            after_chunks,
            reply,
        } => render(&reply, recorded, envelope, Some(after_chunks)),
        Fault::StallStream {
            after_chunks,
            reply,
        } => {
            let usage = usage_for(&reply, recorded);
            let mut events: Vec<Bytes> = if recorded.is_stream() {
                wire::stream_chunks(&reply, envelope, usage, include_usage(recorded))
                    .iter()
                    .map(|chunk| wire::sse_event(&chunk.to_string()))
                    .collect()
            } else {
                Vec::new()
            };
            events.truncate(after_chunks);
            let shutdown = shared.shutdown.clone();
            let silence = futures::stream::once(async move {
                shutdown.stopping().await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "mock-openai: shutting down",
                ))
            });
            let sent = events.into_iter().map(Ok::<Bytes, std::io::Error>);
            let body = futures::StreamExt::chain(futures::stream::iter(sent), silence);
            wire::sse_response(Body::from_stream(body))
        }
        Fault::MalformedJson => {
            let garbage = r#"{"id": "chatcmpl-mock", "object": "chat.completion", "choices": [{"#;
            if recorded.is_stream() {
                wire::sse_response(Body::from(
                    [wire::sse_event(garbage), wire::sse_done()].concat(),
                ))
            } else {
                let mut response = Response::new(Body::from(garbage));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                response
            }
        }
        Fault::Hang => {
            shared.stopping().await;
            stopping_response()
        }
    }
}

fn stopping_response() -> Response {
    wire::error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        "The mock OpenAI server is shutting down.",
        "server_error",
        None,
        None,
    )
}
