//! The errors of the agent loop.

use std::error::Error as StdError;

use thiserror::Error;

use crate::schema::AgentState;

/// A boxed error from a lower layer (the model, a hook, a custom step).
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// OpenManus's `TOOL_CALL_REQUIRED`: the error text when `tool_choice = required` and the model
/// called no tool.
pub const TOOL_CALL_REQUIRED: &str = "Tool calls required but none provided";

/// Why an agent could not start or finish a run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AgentError {
    /// `run()` was called on an agent that is not `IDLE`.
    #[error("Cannot run agent from state: {0}")]
    InvalidState(AgentState),
    /// A state change the state machine does not allow.
    #[error("invalid agent state transition: {from} -> {to}")]
    InvalidTransition {
        /// The current state.
        from: AgentState,
        /// The requested state.
        to: AgentState,
    },
    /// `tool_choice = required` and the model called no tool (OpenManus's `TOOL_CALL_REQUIRED`).
    #[error("{}", TOOL_CALL_REQUIRED)]
    ToolCallsRequired,
    /// The model call failed with an error that is not an observation for the model.
    #[error("model call failed: {0}")]
    Model(#[source] BoxError),
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// Any other failure of a step or hook.
    #[error("{0}")]
    Step(#[source] BoxError),
}

impl AgentError {
    /// Wraps any error as a step failure.
    pub fn step(error: impl Into<BoxError>) -> Self {
        Self::Step(error.into())
    }
}
