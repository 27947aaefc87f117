//! # agent-core — BaseAgent
//!
//! The bottom layer of openmanus-rs: the OpenAI-format message schema ([`Message`],
//! [`ToolCall`], [`ToolChoice`], [`AgentState`]), the turn-safe [`Memory`], and [`BaseAgent`]
//! with the [`Agent`] trait whose provided [`Agent::run`] drives the loop: state machine, step
//! budget, stuck detection, typed [`AgentEvent`]s and cancellation. It knows nothing of HTTP,
//! MCP or processes.
//!
//! ```
//! use agent_core::{Agent, AgentError, AgentState, BaseAgent, FinishReason, Message, RunStatus};
//!
//! /// An agent that finishes on its third step.
//! struct Counter(BaseAgent);
//!
//! #[async_trait::async_trait]
//! impl Agent for Counter {
//!     fn base(&self) -> &BaseAgent { &self.0 }
//!     fn base_mut(&mut self) -> &mut BaseAgent { &mut self.0 }
//!     async fn step(&mut self) -> Result<String, AgentError> {
//!         let step = self.0.current_step();
//!         self.0.update_memory(Message::assistant_message(format!("counted {step}")));
//!         if step == 3 {
//!             self.0.finish(FinishReason::Other("counted to three".into()))?;
//!         }
//!         Ok(format!("counted {step}"))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut agent = Counter(BaseAgent::new("counter"));
//! let outcome = agent.run(Some("count to three".into())).await?;
//! assert!(matches!(outcome.status, RunStatus::Finished(_)));
//! assert_eq!(outcome.text(), "Step 1: counted 1\nStep 2: counted 2\nStep 3: counted 3");
//! assert_eq!(agent.base().state(), AgentState::Finished);
//! # Ok::<(), AgentError>(())
//! # }).unwrap();
//! ```

mod agent;
mod budget;
mod error;
mod event;
mod memory;
mod observations;
mod outcome;
mod schema;
mod spans;

pub use agent::{
    Agent, BaseAgent, DEFAULT_DUPLICATE_THRESHOLD, DEFAULT_MAX_STEPS, STUCK_PROMPT, StuckDetection,
    run_loop,
};
pub use agent_protocol::{TokenUsage, round_usd};
pub use budget::{Budget, BudgetExceeded, BudgetKind, BudgetMeter};
pub use error::{AgentError, BoxError, TOOL_CALL_REQUIRED};
pub use event::{AgentEvent, EventBus, EventSink};
pub use memory::{
    DEFAULT_MAX_MESSAGES, Memory, MemoryChange, MemoryObserver, PairingError, PairingItem,
    PairingViolation, check_pairing, check_tool_pairing, turns,
};
pub use observations::{cancelled_observation, failed_observation, out_of_time_observation};
pub use outcome::{FinishReason, RunOutcome, RunStatus, StepRecord};
pub use schema::{
    AgentState, Function, FunctionDefinition, Message, Role, ToolCall, ToolChoice, ToolDefinition,
};
pub use spans::ModelLabels;
pub use tokio_util::sync::CancellationToken;

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
