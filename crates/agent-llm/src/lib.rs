//! # agent-llm — the model side
//!
//! The [`ChatModel`] trait every agent talks to, the request/response types of an
//! OpenAI-compatible chat completion ([`ChatRequest`], [`ChatResponse`], [`TokenUsage`]: the
//! workspace's one usage type, re-exported from `agent-protocol`) and the error
//! taxonomy ([`LlmError`]) that separates retryable failures from permanent ones. The clients
//! for real endpoints implement this trait: [`LlmClient`] (OpenAI-compatible), [`AnthropicClient`]
//! (Anthropic's Messages API) and, with the `bedrock` feature, `bedrock::BedrockClient` (Amazon
//! Bedrock's Converse, streamed with ConverseStream). [`Model`] builds the one a settings
//! section's `api_type` names and adds text-mode tool calls ([`text_mode`]) for models without
//! function calling (`tool_call_mode`). Tests use the scripted model and the strict mock
//! servers of `agent-testkit`.
//!
//! [`http`] is the process's one TLS set-up: the system root certificates are read once, on the
//! first https handshake, and [`LlmClient`]s with the same connect timeout share one `reqwest`
//! client (and its connection pool). The request body is serialised once per request, straight
//! from borrowing structs.
//!
//! ```
//! use agent_core::Message;
//! use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError};
//!
//! /// A model that always answers "pong".
//! struct Pong;
//!
//! #[async_trait::async_trait]
//! impl ChatModel for Pong {
//!     async fn complete(&self, _request: ChatRequest) -> Result<ChatResponse, LlmError> {
//!         Ok(ChatResponse::text("  pong \n"))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let answer = Pong.ask(vec![Message::user_message("ping")], vec![]).await?;
//! assert_eq!(answer, "pong");
//! # Ok::<(), LlmError>(())
//! # }).unwrap();
//! ```

pub mod anthropic;
#[cfg(feature = "bedrock")]
pub mod bedrock;
mod blocks;
mod capped;
mod client;
mod endpoint;
mod error;
pub mod format;
mod frame;
pub mod http;
mod models;
pub mod pricing;
mod provider;
mod request;
mod retry;
mod settings;
pub mod spans;
mod sse;
pub mod text_mode;
pub mod tokens;
mod types;
mod wire;
mod written;

use async_trait::async_trait;

pub use agent_protocol::TokenUsage;
pub use anthropic::AnthropicClient;
pub use client::{ImageInput, LlmClient};
pub use endpoint::DEFAULT_AZURE_API_VERSION;
pub use error::{LlmError, classify, parse_retry_after};
pub use frame::TokenTotals;
pub use models::{ModelProfile, model_profile};
pub use pricing::{Price, default_price};
pub use provider::Model;
pub use retry::RetryPolicy;
pub use settings::{
    ApiKey, ApiType, LlmSettings, ToolCallMode, effective_context_window, effective_price,
};
pub use tokens::TokenCounter;
pub use types::{ChatRequest, ChatResponse, REFUSED};
pub use wire::{StreamAssembler, parse_completion, parse_usage};

use agent_core::{Message, ToolChoice, ToolDefinition};

/// A chat model reachable by the agents: an OpenAI-compatible endpoint, a local server, or a test
/// double. Object-safe: agents hold an `Arc<dyn ChatModel>`.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Sends one chat-completion request and returns the assistant's reply.
    ///
    /// # Errors
    ///
    /// Any [`LlmError`]; implementations retry the retryable ones before giving up.
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError>;

    /// The model name, for logs and events.
    fn model_name(&self) -> &str {
        "unknown"
    }

    /// `gen_ai.provider.name` of the model's provider, for telemetry (`openai`, `anthropic`,
    /// `aws.bedrock`, …; default `unknown`).
    fn provider_name(&self) -> &str {
        "unknown"
    }

    /// Whether the model reads images on user messages (default: no). Agents use it to decide
    /// whether a screenshot is worth sending.
    fn supports_images(&self) -> bool {
        false
    }

    /// What the model's tokens cost, for the cost of each call (default: the shipped table's
    /// price of [`ChatModel::model_name`], [`default_price`]). `None`: unknown, so calls have
    /// no cost.
    fn price(&self) -> Option<Price> {
        default_price(self.model_name())
    }

    /// The model's context window in tokens, when known (default: the model table's,
    /// [`model_profile`]). Agents compact their conversation against it.
    fn context_window(&self) -> Option<u64> {
        model_profile(self.model_name()).context_window
    }

    /// OpenManus's `ask`: a text-only completion, returned trimmed.
    ///
    /// # Errors
    ///
    /// As [`ChatModel::complete`]; an empty reply is [`LlmError::MalformedResponse`].
    async fn ask(
        &self,
        messages: Vec<Message>,
        system_msgs: Vec<Message>,
    ) -> Result<String, LlmError> {
        let response = self
            .complete(ChatRequest::new(messages).with_system(system_msgs))
            .await?;
        match response.content {
            Some(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
            _ => Err(LlmError::MalformedResponse(
                "empty or invalid response from the model".to_owned(),
            )),
        }
    }

    /// OpenManus's `ask_tool`: a completion that offers `tools` under `tool_choice`.
    ///
    /// # Errors
    ///
    /// As [`ChatModel::complete`].
    async fn ask_tool(
        &self,
        messages: Vec<Message>,
        system_msgs: Vec<Message>,
        tools: Vec<ToolDefinition>,
        tool_choice: ToolChoice,
    ) -> Result<ChatResponse, LlmError> {
        self.complete(
            ChatRequest::new(messages)
                .with_system(system_msgs)
                .with_tools(tools, tool_choice),
        )
        .await
    }
}

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
