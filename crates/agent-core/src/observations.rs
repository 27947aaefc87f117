//! The observations a tool call gets when it has no result of its own: the run was cancelled,
//! the step failed, or the run's time ran out. Memory and resumed sessions close open calls
//! with them, so every request stays valid for a strict provider.

use crate::schema::ToolCall;

/// The observation given to a tool call that a cancelled run interrupted or never started.
#[must_use]
pub fn cancelled_observation(call: &ToolCall) -> String {
    format!(
        "Error: Tool '{}' did not complete: the run was cancelled",
        call.function.name
    )
}

/// The observation given to a tool call that a failed step left unanswered.
#[must_use]
pub fn failed_observation(call: &ToolCall) -> String {
    format!(
        "Error: Tool '{}' did not complete: the step failed",
        call.function.name
    )
}

/// The observation given to a tool call that the run's time budget interrupted or never started.
#[must_use]
pub fn out_of_time_observation(call: &ToolCall) -> String {
    format!(
        "Error: Tool '{}' did not complete: the run's time budget ran out",
        call.function.name
    )
}
