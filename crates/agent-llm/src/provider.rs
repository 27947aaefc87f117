//! The provider selection layer: one [`Model`] built from an `[llm]` section, whatever its
//! `api_type` and `tool_call_mode`.
//!
//! `api_type` picks the client ([`LlmClient`] for OpenAI, Azure, Ollama and compatible servers;
//! [`AnthropicClient`] for `anthropic`; the Bedrock client for `aws`, with the `bedrock`
//! feature). `tool_call_mode` picks how tools travel: `native`, `text` (through
//! [`text_mode`](crate::text_mode)) or `auto` (native until the server refuses `tools`, then
//! text for the rest of this model's life). Front ends build every model through here.

use std::sync::atomic::{AtomicBool, Ordering};

use agent_core::{EventBus, Role};
use async_trait::async_trait;
use serde_json::Value;
use tracing::warn;

use crate::anthropic::AnthropicClient;
use crate::settings::{ApiType, LlmSettings, ToolCallMode};
use crate::text_mode::{rejects_tools, text_request, text_response};
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
                    "api_type = \"aws\" (Amazon Bedrock) needs agent-llm's `bedrock` cargo \
                     feature, which this build does not have"
                        .into(),
                ));
            }
        };
        let mode = settings.tool_call_mode;
        Ok(Self {
            backend,
            mode,
            text: AtomicBool::new(mode == ToolCallMode::Text),
            settings,
        })
    }

    /// Reports retries on `events` (pass the agent's event bus).
    #[must_use]
    pub fn with_events(mut self, events: EventBus) -> Self {
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
        let response = self.inner().complete(text_request(&request)).await?;
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

    fn model_name(&self) -> &str {
        &self.settings.model
    }

    fn price(&self) -> Option<crate::Price> {
        self.settings.effective_price()
    }

    fn context_window(&self) -> Option<u64> {
        self.settings.effective_context_window()
    }

    fn supports_images(&self) -> bool {
        self.inner().supports_images()
    }
}
