//! [`RunReport`]: what one task of a session came to.

use agent_core::RunOutcome;
use agent_protocol::TokenUsage;
use agents::WorkspaceChanges;
use agents::flow::FlowOutcome;

/// What ran: an agent's outcome or a flow's.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RunResult {
    /// An agent's run.
    Agent(RunOutcome),
    /// The planning flow's execution.
    Flow(FlowOutcome),
}

pub use agent_protocol::Ending;

/// What one task of a session came to.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The agent's (or the flow's) own outcome.
    pub result: RunResult,
    /// The final answer: for an agent, [`RunOutcome::answer`]; for a flow, its summary.
    pub answer: Option<String>,
    /// OpenManus's result text (`Step 1: …` lines; the flow's step outputs and summary).
    pub text: String,
    /// Files the run created, changed or deleted in the workspace.
    pub changes: WorkspaceChanges,
    /// Tokens used, added up from the run's `token_usage` events: stored and sent as it is (the
    /// store's run records, `run_finished`, the workers' results), written as a tally
    /// ([`TokenUsage::as_tally`]) in the journal's and `--json`'s result lines.
    pub usage: TokenUsage,
    /// The run's id in the session store (`None` when the session is not recorded).
    pub run_id: Option<agent_store::RunId>,
}

impl RunReport {
    pub(crate) fn new(result: RunResult, changes: WorkspaceChanges, usage: TokenUsage) -> Self {
        let (answer, text) = match &result {
            RunResult::Agent(outcome) => (outcome.answer().map(str::to_owned), outcome.text()),
            RunResult::Flow(outcome) => (outcome.summary.clone(), outcome.text()),
        };
        Self {
            result,
            answer,
            text,
            changes,
            usage,
            run_id: None,
        }
    }

    /// How the run ended.
    #[must_use]
    pub fn ending(&self) -> Ending {
        match &self.result {
            RunResult::Agent(outcome) => outcome.status.ending(),
            RunResult::Flow(outcome) if outcome.cancelled => Ending::Cancelled,
            RunResult::Flow(outcome) if outcome.budget.is_some() => Ending::Budget,
            RunResult::Flow(outcome) if outcome.is_complete() => Ending::Finished,
            RunResult::Flow(_) => Ending::Failed,
        }
    }

    /// The outcome in words: the agent's [`agent_core::RunStatus`] (``finished (special tool
    /// `terminate`)``, `max_steps (20)`, `cancelled`, `error: …`), or the flow's ending.
    #[must_use]
    pub fn status_text(&self) -> String {
        match &self.result {
            RunResult::Agent(outcome) => outcome.status.to_string(),
            RunResult::Flow(outcome) if outcome.cancelled => "cancelled".to_owned(),
            RunResult::Flow(outcome) if outcome.budget.is_some() => outcome
                .budget
                .map(|exceeded| exceeded.to_string())
                .unwrap_or_default(),
            RunResult::Flow(outcome) if outcome.timed_out => "timed out".to_owned(),
            RunResult::Flow(outcome) if outcome.is_complete() => "completed".to_owned(),
            RunResult::Flow(_) => "incomplete".to_owned(),
        }
    }

    /// The agent's outcome (`None` for a flow).
    #[must_use]
    pub fn outcome(&self) -> Option<&RunOutcome> {
        match &self.result {
            RunResult::Agent(outcome) => Some(outcome),
            RunResult::Flow(_) => None,
        }
    }

    /// The answer, else the result text: what a front end shows as the run's result.
    #[must_use]
    pub fn answer_or_text(&self) -> &str {
        self.answer.as_deref().unwrap_or(&self.text)
    }
}
