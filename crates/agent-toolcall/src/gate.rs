//! The gate around tool calls: where the approval policy (issue 32) decides what a call may do
//! beyond its confinement. The loop asks the gate before a call runs and shows it the result
//! after; the gate may answer the call itself (a refusal, or the call run again with more) and
//! says what it decided, which the loop emits as [`AgentEvent::Permission`] events.
//!
//! [`AgentEvent::Permission`]: agent_core::AgentEvent::Permission

use agent_core::ToolCall;
use agent_protocol::{Decider, PermissionDecision};
use agent_tools::{ToolContext, ToolResult};
use async_trait::async_trait;
use serde_json::Value;

/// One decision of a gate, for the audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionRecord {
    /// What the call needed, in words.
    pub request: String,
    /// What was decided.
    pub decision: PermissionDecision,
    /// Who decided.
    pub by: Decider,
    /// Why, and how to allow it when denied.
    pub detail: String,
}

/// What a gate made of a call: its result and the decisions taken on the way.
#[derive(Debug, Clone)]
pub struct Gated {
    /// The result the model sees.
    pub result: ToolResult,
    /// The decisions, in order.
    pub records: Vec<PermissionRecord>,
}

impl Gated {
    /// `result`, nothing decided.
    #[must_use]
    pub fn untouched(result: ToolResult) -> Self {
        Self {
            result,
            records: Vec::new(),
        }
    }
}

/// What a gate says before a call runs.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Run it as usual; these decisions were taken (none, or a question answered "yes").
    Run(Vec<PermissionRecord>),
    /// Do not run it as usual: this is its outcome (refused, or run with more elsewhere).
    Answered(Gated),
    /// Run it with these arguments instead of the model's (a hook changed them); these
    /// decisions were taken.
    RunWith(Value, Vec<PermissionRecord>),
}

/// How a run ended, for [`ToolGate::run_ended`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnd {
    /// The outcome in one line, as [`RunStatus`](agent_core::RunStatus)'s `Display`
    /// (`finished (…)`, `max_steps (N)`, `cancelled`, `error: …`).
    pub status: String,
    /// The steps the run took.
    pub steps: u32,
    /// The session of the run, when it is one's.
    pub session: Option<String>,
}

/// Decides what a tool call may do beyond its confinement.
#[async_trait]
pub trait ToolGate: Send + Sync {
    /// Before `call` (its arguments parsed as `args`) runs.
    async fn before(&self, call: &ToolCall, args: &Value, ctx: &ToolContext) -> Verdict;

    /// After `call` ran and gave `result`: the result to keep, or another one (the call run
    /// again with more, or the result with a note on what was refused and how to allow it).
    async fn after(
        &self,
        call: &ToolCall,
        args: &Value,
        result: ToolResult,
        ctx: &ToolContext,
    ) -> Gated;

    /// The run ended (after its last step, before its tools are cleaned up). Nothing by
    /// default.
    async fn run_ended(&self, _end: &RunEnd) {}
}
