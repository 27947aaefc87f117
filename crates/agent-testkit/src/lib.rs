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

mod model;
mod tools;

pub use model::{ScriptedModel, ScriptedReply, tool_call, validate_request};
pub use tools::{BlockingTool, EchoTool, FailTool, ImageTool, ToolProbe};
