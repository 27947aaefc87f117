//! # agent-testkit — test doubles for openmanus-rs
//!
//! * [`ScriptedModel`]: a [`ChatModel`](agent_llm::ChatModel) that answers from a queue of
//!   scripted replies (text, tool calls, errors such as `TokenLimitExceeded`, or a reply that never
//!   comes), records every request it receives, and — like a strict provider — rejects requests
//!   whose tool results are not paired with their calls, that contain empty messages, or that set
//!   `tool_choice` without tools.
//! * Small tools for driving agents: [`EchoTool`], [`ImageTool`], [`FailTool`], [`BlockingTool`].
//!
//! Later layers reuse these; the strict mock OpenAI HTTP server joins them with the LLM client.
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

mod model;
mod tools;

pub use model::{ScriptedModel, ScriptedReply, tool_call, validate_request};
pub use tools::{BlockingTool, EchoTool, FailTool, ImageTool, ToolProbe};
