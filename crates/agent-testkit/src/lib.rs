//! # agent-testkit — test doubles for openmanus-rs
//!
//! * [`ScriptedModel`]: a [`ChatModel`](agent_llm::ChatModel) that answers from a queue of
//!   scripted replies (text, tool calls, errors such as `TokenLimitExceeded`, or a reply that never
//!   comes), records every request it receives, and — like a strict provider — rejects requests
//!   whose tool results are not paired with their calls, that contain empty messages, or that set
//!   `tool_choice` without tools.
//! * [`MockOpenAi`]: a strict mock OpenAI-compatible HTTP server on 127.0.0.1 (OpenAI and Azure
//!   routes, optional API key) that records every request, rejects the ones strict providers
//!   reject (400 + a recorded [`Violation`]), and answers from a script of [`MockReply`]s:
//!   completions, streamed as SSE when asked, or [`Fault`]s (429 with `Retry-After`, 5xx, slow
//!   first byte, cut streams, malformed JSON, `context_length_exceeded`, ...). The `mock-openai`
//!   binary serves it from the command line (`--help`).
//! * [`MockAnthropic`]: the same for Anthropic's Messages API (`/v1/messages`): strict about
//!   alternating roles, `tool_use`/`tool_result` pairing and empty text blocks, streamed or
//!   JSON replies, 529/429 faults, prompt caching modelled in the usage it reports.
//! * [`MockBedrock`]: Bedrock's Converse and ConverseStream APIs (`/model/{id}/converse`,
//!   `/model/{id}/converse-stream` with real event-stream frames; SigV4 required), strict about
//!   the Converse shapes, for the AWS SDK with its endpoint overridden; streams can be held at a
//!   [`StreamGate`], end in an exception frame, or be any bytes a test corrupts.
//! * [`NatsServer`]: a real `nats-server -js` child process on 127.0.0.1 for the workers' tests.
//! * [`snapshot`]: wire formats pinned byte for byte in committed files (`UPDATE_SNAPSHOTS=1`
//!   rewrites them when a change is meant).
//! * Small tools for driving agents: [`EchoTool`], [`ImageTool`], [`FailTool`], [`BlockingTool`].
//!
//! ```
//! use agent_core::Message;
//! use agent_llm::{ChatModel, ChatRequest, LlmError};
//! use agent_testkit::{ScriptedModel, tool_call};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let model = ScriptedModel::new();
//! model
//!     .push_tool_calls("", [tool_call("c1", "terminate", r#"{"status":"success"}"#)])
//!     .push_error(LlmError::TokenLimitExceeded("over budget".into()));
//!
//! let reply = model.complete(ChatRequest::new(vec![Message::user_message("hi")])).await.unwrap();
//! assert_eq!(reply.tool_calls[0].function.name, "terminate");
//!
//! // A tool result that answers no call is rejected, as a real provider would.
//! let orphan = ChatRequest::new(vec![Message::tool_message("out", "bash", "nope")]);
//! assert!(matches!(model.complete(orphan).await, Err(LlmError::InvalidRequest(_))));
//! assert_eq!(model.requests().len(), 2, "every request is recorded, even rejected ones");
//! # });
//! ```

mod gate;
pub mod mock_anthropic;
pub mod mock_bedrock;
pub mod mock_openai;
mod model;
mod nats;
mod phoenix;
mod postgres;
mod ready;
mod server;
pub mod snapshot;
mod sse;
mod tools;
mod violation;
pub mod web_fixtures;

pub use mock_openai::{
    Completion, Fault, MockOpenAi, MockReply, RecordedRequest, Violation, ViolationRule,
    ViolationsError,
};

pub use gate::StreamGate;
pub use mock_anthropic::{AnthropicReply, MockAnthropic, validate_messages_request};
pub use mock_bedrock::{
    BedrockReply, MockBedrock, converse_stream_body, converse_stream_frames,
    validate_converse_request,
};
pub use violation::{ProtocolViolation, ViolationList};

pub use model::{ScriptedModel, ScriptedReply, tool_call, validate_request};
pub use nats::NatsServer;
pub use phoenix::{PHOENIX_VERSION, Phoenix};
pub use postgres::{PG_USER, PgCluster};
pub use sse::{SSE_PATIENCE, SseClient, SseError, SseEvent};
pub use tools::{
    BlockingTool, EchoArgs, EchoTool, FailArgs, FailMode, FailTool, ImageArgs, ImageTool, NoArgs,
    ToolProbe,
};
pub use web_fixtures::{EngineBehaviour, FixtureEngine, FixtureRequest, WebFixtures};

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
