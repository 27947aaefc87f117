//! # agent-react — ReActAgent
//!
//! The second layer of the chain: a step is split into `think()` ("is there anything to do?")
//! and `act()` ("do it"). [`step`] is that split, written once; an agent implements
//! [`ReActAgent`] and makes its [`Agent::step`] call [`step`]. (A blanket
//! `impl<T: ReActAgent> Agent for T` is impossible here: `Agent` lives in `agent-core`.)
//!
//! ```
//! use agent_core::{Agent, AgentError, BaseAgent, FinishReason, Message};
//! use agent_react::ReActAgent;
//!
//! /// Thinks there is work on odd steps only, and finishes at step 4.
//! struct OddWorker(BaseAgent);
//!
//! #[async_trait::async_trait]
//! impl ReActAgent for OddWorker {
//!     async fn think(&mut self) -> Result<bool, AgentError> {
//!         Ok(self.0.current_step() % 2 == 1)
//!     }
//!     async fn act(&mut self) -> Result<String, AgentError> {
//!         self.0.update_memory(Message::assistant_message("worked"));
//!         if self.0.current_step() == 3 {
//!             self.0.finish(FinishReason::Other("done".into()))?;
//!         }
//!         Ok("worked".into())
//!     }
//! }
//!
//! #[async_trait::async_trait]
//! impl Agent for OddWorker {
//!     fn base(&self) -> &BaseAgent { &self.0 }
//!     fn base_mut(&mut self) -> &mut BaseAgent { &mut self.0 }
//!     async fn step(&mut self) -> Result<String, AgentError> { agent_react::step(self).await }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let outcome = OddWorker(BaseAgent::new("odd")).run(Some("go".into())).await?;
//! assert_eq!(
//!     outcome.text(),
//!     "Step 1: worked\nStep 2: Thinking complete - no action needed\nStep 3: worked"
//! );
//! # Ok::<(), AgentError>(())
//! # }).unwrap();
//! ```

use agent_core::{Agent, AgentError};
use async_trait::async_trait;

/// The result of a step whose `think()` found nothing to do. The loop still goes on.
pub const THINKING_COMPLETE: &str = "Thinking complete - no action needed";

/// An agent whose step is `think()` then, if it said so, `act()`.
#[async_trait]
pub trait ReActAgent: Agent {
    /// Decides what to do this step; `false` means nothing to act on.
    ///
    /// # Errors
    ///
    /// Fails the run.
    async fn think(&mut self) -> Result<bool, AgentError>;

    /// Acts on what `think()` decided and returns the step's result.
    ///
    /// # Errors
    ///
    /// Fails the run.
    async fn act(&mut self) -> Result<String, AgentError>;
}

/// The ReAct step: `think()`; if it returns false, [`THINKING_COMPLETE`]; otherwise `act()`.
///
/// # Errors
///
/// Whatever `think()` or `act()` returns.
pub async fn step<A: ReActAgent + ?Sized>(agent: &mut A) -> Result<String, AgentError> {
    if !agent.think().await? {
        return Ok(THINKING_COMPLETE.to_owned());
    }
    agent.act().await
}

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
