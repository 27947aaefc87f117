//! The provider selection layer: one [`Model`] built from an `[llm]` section, whatever its
//! `api_type` and `tool_call_mode`.
//!
//! `api_type` picks the client ([`LlmClient`] for OpenAI, Azure, Ollama and compatible servers;
//! [`AnthropicClient`] for `anthropic`; the Bedrock client for `aws`, with the `bedrock`
//! feature). `tool_call_mode` picks how tools travel: `native`, `text` (through
//! [`text_mode`](crate::text_mode)) or `auto` (native until the server refuses `tools`, then
//! text for the rest of this model's life). Front ends build every model through here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agent_core::{AgentEvent, EventBus, Role};
use async_trait::async_trait;
use serde_json::Value;
use tracing::warn;

use crate::spans;

use crate::anthropic::AnthropicClient;
use crate::settings::{ApiType, LlmSettings, ToolCallMode};
use crate::text_mode::{VisibleText, rejects_tools, text_request, text_response};
use crate::{ChatModel, ChatRequest, ChatResponse, LlmClient, LlmError};

/// The client behind a [`Model`].
#[derive(Debug)]
enum Backend {
    OpenAi(LlmClient),
    Anthropic(AnthropicClient),
    #[cfg(feature = "bedrock")]
    Bedrock(Box<crate::bedrock::BedrockClient>),
}

/// A chat model for one settings section: the client its `api_type` names, speaking tools the
/// way its `tool_call_mode` says.
#[derive(Debug)]
pub struct Model {
    backend: Backend,
    mode: ToolCallMode,
    /// Text mode is on (always in `text`; after the switch in `auto`).
    text: AtomicBool,
    settings: LlmSettings,
    /// Where the calls go, for their spans.
    server: spans::Server,
    /// The event bus given, and the markup filter of the text-mode reply streaming now.
    deltas: Option<Deltas>,
}

/// Between the client and the agent's bus: the client emits on a bus of its own, whose events
/// go on to the agent's, a text-mode reply's [`AgentEvent::TextDelta`]s through [`VisibleText`]
/// (so the live views, the JSON output and the server never see a call's markup).
#[derive(Debug, Clone)]
struct Deltas {
    /// The agent's bus.
    events: EventBus,
    /// Set while a text-mode request that offers tools is under way.
    filter: Arc<Mutex<Option<VisibleText>>>,
}

impl Deltas {
    /// A relay to `events`; returns it with the bus the client is to emit on.
    fn relay(events: EventBus) -> (Self, EventBus) {
        let filter: Arc<Mutex<Option<VisibleText>>> = Arc::default();
        let client_bus = EventBus::new();
        let (out, shared) = (events.clone(), filter.clone());
        client_bus.subscribe_with(Arc::new(move |event: &AgentEvent| {
            let forwarded = match event {
                AgentEvent::TextDelta { text } => match lock(&shared).as_mut() {
                    Some(visible) => Some(visible.push(text))
                        .filter(|shown| !shown.is_empty())
                        .map(|text| AgentEvent::TextDelta { text }),
                    None => Some(event.clone()),
                },
                // The deltas start again from the beginning of the reply.
                AgentEvent::Retry { .. } => {
                    if let Some(visible) = lock(&shared).as_mut() {
                        visible.restart();
                    }
                    Some(event.clone())
                }
                _ => Some(event.clone()),
            };
            if let Some(event) = forwarded {
                out.emit(event);
            }
            true
        }));
        (Self { events, filter }, client_bus)
    }

    /// Filters the deltas of one text-mode reply to a request offering `tools`, until the
    /// guard is finished or dropped.
    fn filter(&self, tools: &[&str]) -> Filtering<'_> {
        *lock(&self.filter) = Some(VisibleText::new(tools));
        Filtering(self)
    }
}

/// One text-mode reply's filtering; dropped (a cancelled request), the filter is removed.
struct Filtering<'a>(&'a Deltas);

impl Filtering<'_> {
    /// The reply is complete: what the filter held back and turned out to be text goes out.
    fn finish(self) {
        let rest = lock(&self.0.filter).take().map(|mut v| v.finish());
        if let Some(text) = rest.filter(|t| !t.is_empty()) {
            self.0.events.emit(AgentEvent::TextDelta { text });
        }
    }
}

impl Drop for Filtering<'_> {
    fn drop(&mut self) {
        *lock(&self.0.filter) = None;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Model {
    /// Builds the client `settings.api_type` names.
    ///
    /// # Errors
    ///
    /// The client's own errors ([`LlmClient::new`], [`AnthropicClient::new`]);
    /// [`LlmError::InvalidRequest`] for `aws` in a build without the `bedrock` feature.
    pub fn new(settings: LlmSettings) -> Result<Self, LlmError> {
        let backend = match settings.api_type {
            ApiType::Openai | ApiType::Azure | ApiType::Ollama => {
                Backend::OpenAi(LlmClient::new(settings.clone())?)
            }
            ApiType::Anthropic => Backend::Anthropic(AnthropicClient::new(settings.clone())?),
            #[cfg(feature = "bedrock")]
            ApiType::Aws => Backend::Bedrock(Box::new(crate::bedrock::BedrockClient::new(
                settings.clone(),
            )?)),
            #[cfg(not(feature = "bedrock"))]
            ApiType::Aws => {
                return Err(LlmError::InvalidRequest(
                    "api_type = \"aws\" (Amazon Bedrock) needs the `bedrock` cargo feature \
                     (agent-llm's; for the openmanus binary: cargo install --path \
                     crates/openmanus-cli --locked --features bedrock), which this build does \
                     not have"
                        .into(),
                ));
            }
        };
        let mode = settings.tool_call_mode;
        Ok(Self {
            backend,
            mode,
            text: AtomicBool::new(mode == ToolCallMode::Text),
            server: spans::Server::of(&settings.base_url),
            settings,
            deltas: None,
        })
    }

    /// Reports retries and streamed text on `events` (pass the agent's event bus). In text
    /// mode the [`AgentEvent::TextDelta`]s carry the prose only, never a call's markup
    /// ([`VisibleText`]).
    #[must_use]
    pub fn with_events(mut self, events: EventBus) -> Self {
        let (deltas, events) = Deltas::relay(events);
        self.deltas = Some(deltas);
        self.backend = match self.backend {
            Backend::OpenAi(client) => Backend::OpenAi(client.with_events(events)),
            Backend::Anthropic(client) => Backend::Anthropic(client.with_events(events)),
            #[cfg(feature = "bedrock")]
            Backend::Bedrock(client) => Backend::Bedrock(Box::new(client.with_events(events))),
        };
        self
    }

    /// The settings it was built from.
    #[must_use]
    pub fn settings(&self) -> &LlmSettings {
        &self.settings
    }

    /// The configured tool-call mode.
    #[must_use]
    pub fn tool_call_mode(&self) -> ToolCallMode {
        self.mode
    }

    /// Whether requests go out in text mode now (`text`, or `auto` after the switch).
    #[must_use]
    pub fn text_mode_active(&self) -> bool {
        self.text.load(Ordering::Relaxed)
    }

    /// The JSON body the client would send for `request` now (after the text-mode conversion
    /// when it is on); the key is never part of it.
    #[must_use]
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        if self.text_mode_active() || self.history_as_text(request) {
            self.backend_body(&text_request(request))
        } else {
            self.backend_body(request)
        }
    }

    fn backend_body(&self, request: &ChatRequest) -> Value {
        match &self.backend {
            Backend::OpenAi(client) => client.request_body(request),
            Backend::Anthropic(client) => client.request_body(request),
            #[cfg(feature = "bedrock")]
            Backend::Bedrock(client) => client.request_body(request),
        }
    }

    fn inner(&self) -> &dyn ChatModel {
        match &self.backend {
            Backend::OpenAi(client) => client,
            Backend::Anthropic(client) => client,
            #[cfg(feature = "bedrock")]
            Backend::Bedrock(client) => client.as_ref(),
        }
    }

    async fn complete_text(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        // Without tools the reply is not read for calls, and its deltas are left alone.
        let filtering = self
            .deltas
            .as_ref()
            .filter(|_| !request.tools.is_empty())
            .map(|deltas| deltas.filter(&request.tool_names()));
        let response = self.inner().complete(text_request(&request)).await?;
        if let Some(filtering) = filtering {
            filtering.finish();
        }
        Ok(text_response(response, &request))
    }

    /// Whether `request` offers no tools but its conversation holds tool calls or results,
    /// which Anthropic and Bedrock refuse without tool definitions (OpenAI-compatible servers
    /// take them): such a history is sent as text.
    /// The OpenAI-compatible client that sends `request` as it is (no text-mode conversion),
    /// or `None` for another provider or in text mode. A recorder that writes bodies as the
    /// change from the previous one ([`LlmClient::request_params`],
    /// [`LlmClient::wire_message`]) can use it; other bodies have to be taken whole
    /// ([`request_body`](Self::request_body)).
    #[must_use]
    pub fn native_openai(&self, request: &ChatRequest) -> Option<&LlmClient> {
        match &self.backend {
            Backend::OpenAi(client)
                if !self.text_mode_active() && !self.history_as_text(request) =>
            {
                Some(client)
            }
            _ => None,
        }
    }

    /// One call, without its span.
    async fn complete_now(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.text_mode_active() || self.history_as_text(&request) {
            return self.complete_text(request).await;
        }
        if self.mode != ToolCallMode::Auto || request.tools.is_empty() {
            return self.inner().complete(request).await;
        }
        match self.inner().complete(request.clone()).await {
            Err(error) if rejects_tools(&error) => {
                warn!(
                    model = %self.settings.model,
                    %error,
                    "the server does not take tools: switching to text-mode tool calls for the rest of the run"
                );
                self.text.store(true, Ordering::Relaxed);
                self.complete_text(request).await
            }
            other => other,
        }
    }

    fn history_as_text(&self, request: &ChatRequest) -> bool {
        !matches!(self.backend, Backend::OpenAi(_))
            && request.tools.is_empty()
            && request
                .messages
                .iter()
                .any(|m| m.has_tool_calls() || m.role == Role::Tool)
    }
}

#[async_trait]
impl ChatModel for Model {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        // Not entered while the call runs: the span has no children, and the call's future is
        // polled at every chunk that arrives (`agent_telemetry::scope`).
        let span = spans::chat(&self.settings, &self.server, &request);
        let started = std::time::Instant::now();
        let reply = self.complete_now(request).await;
        spans::record_reply(&span, &reply);
        spans::record_metrics(&self.settings, &self.server, started.elapsed(), &reply);
        reply
    }

    // The client's answers: its frame's (built from the same settings).
    fn model_name(&self) -> &str {
        self.inner().model_name()
    }

    fn provider_name(&self) -> &str {
        self.inner().provider_name()
    }

    fn price(&self) -> Option<crate::Price> {
        self.inner().price()
    }

    fn context_window(&self) -> Option<u64> {
        self.inner().context_window()
    }

    fn supports_images(&self) -> bool {
        self.inner().supports_images()
    }
}
