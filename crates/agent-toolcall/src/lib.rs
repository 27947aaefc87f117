//! # agent-toolcall — ToolCallAgent
//!
//! The third layer of the chain. [`ToolCallAgent`] is a ReAct agent whose `think()` asks the
//! model which tools to call — every tool's schema and the `tool_choice` go with each request,
//! the system prompt is prepended but never stored — and whose `act()` runs the calls in order,
//! stores each observation as a `tool` message, and stops the run when a special tool (by
//! default `terminate`) is called. Every tool failure is an observation for the model, in
//! OpenManus's exact wording.
//!
//! Agents built on it (Manus, SWE, MCP, ...) are a tool set, two prompts and, where needed,
//! [`ToolCallHooks`]. Where openmanus-rs deliberately differs from OpenManus in what the model
//! sees, the choice is a named [`Policies`] entry; [`Policies::openmanus`] restores the original.
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_core::{Agent, Role, RunStatus};
//! use agent_testkit::{ScriptedModel, tool_call};
//! use agent_toolcall::ToolCallAgent;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = Arc::new(ScriptedModel::new());
//! model.push_tool_calls("All done.", [tool_call("call_1", "terminate", r#"{"status":"success"}"#)]);
//!
//! let mut agent = ToolCallAgent::new(model.clone());
//! let outcome = agent.run(Some("Say hi, then stop.".into())).await.unwrap();
//!
//! assert!(matches!(outcome.status, RunStatus::Finished(_)));
//! let last = agent.messages().last().unwrap();
//! assert_eq!(last.role, Role::Tool);
//! assert_eq!(
//!     last.text(),
//!     "Observed output of cmd `terminate` executed:\nThe interaction has been completed with status: success"
//! );
//! assert_eq!(model.requests()[0].tool_names(), vec!["create_chat_completion", "terminate"]);
//! # });
//! ```

mod agent;
pub mod compaction;
mod estimate;
pub mod gate;
mod hooks;
mod policy;
mod spans;
pub mod trimming;
mod usage;

pub use agent::{
    DEFAULT_DESCRIPTION, DEFAULT_MAX_STEPS, DEFAULT_NAME, DEFAULT_NEXT_STEP_PROMPT,
    DEFAULT_SYSTEM_PROMPT, NO_CONTENT, TOOL_CALL_REQUIRED, ToolCallAgent, ToolCallCore,
};
pub use compaction::{Compaction, CompactionStrategy};
pub use gate::{Gated, PermissionRecord, RunEnd, ToolGate, Verdict};
pub use hooks::{BeforeThink, ToolCallHooks};
pub use policy::{
    AutoTextReply, DEFAULT_MAX_OBSERVATION_BYTES, NextStepPromptMode, ObservationTruncation,
    Policies, RequestTrimming, budget_from_settings, cap_observation_bytes, truncate_observation,
};
pub use trimming::TrimPolicy;

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
