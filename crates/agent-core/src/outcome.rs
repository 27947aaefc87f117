//! How a run ended: [`RunOutcome`] with its [`RunStatus`], the steps and the final answer.

use std::fmt;
use std::sync::Arc;

use agent_protocol::{Ending, TokenUsage};

use crate::budget::BudgetExceeded;
use crate::error::AgentError;
use crate::schema::{AgentState, ToolCall};

/// Why an agent reached `FINISHED`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FinishReason {
    /// A special tool (by default `terminate`) ended the run.
    SpecialTool {
        /// The tool's name as the model called it.
        name: String,
    },
    /// The model's input budget was exhausted.
    TokenLimit {
        /// The limit error's text.
        message: String,
    },
    /// A limit of the run's [`Budget`](crate::Budget) was reached.
    Budget(BudgetExceeded),
    /// The model declined the task: it refused, or its provider's content filter stopped the
    /// reply.
    Refused {
        /// What the model said (or, when it said nothing, why the reply stopped).
        message: String,
    },
    /// The agent decided it was done for another reason (a hook, a custom rule).
    Other(String),
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SpecialTool { name } => write!(f, "special tool `{name}`"),
            Self::TokenLimit { message } => write!(f, "token limit: {message}"),
            Self::Budget(exceeded) => exceeded.fmt(f),
            Self::Refused { message } => write!(f, "refused: {message}"),
            Self::Other(reason) => f.write_str(reason),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RunStatus {
    /// The agent reached `FINISHED`.
    Finished(FinishReason),
    /// The step budget ran out first.
    MaxSteps(u32),
    /// The cancellation token fired.
    Cancelled,
    /// A step failed; the agent is in `ERROR`.
    Failed(Arc<AgentError>),
}

impl RunStatus {
    /// How the run ended, in the words front ends tell apart.
    #[must_use]
    pub fn ending(&self) -> Ending {
        match self {
            Self::Finished(FinishReason::Budget(_)) => Ending::Budget,
            Self::Finished(FinishReason::Refused { .. }) => Ending::Refused,
            Self::Finished(_) => Ending::Finished,
            Self::MaxSteps(_) => Ending::MaxSteps,
            Self::Cancelled => Ending::Cancelled,
            Self::Failed(_) => Ending::Failed,
        }
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Finished(reason @ FinishReason::Refused { .. }) => reason.fmt(f),
            Self::Finished(reason) => write!(f, "finished ({reason})"),
            Self::MaxSteps(n) => write!(f, "max_steps ({n})"),
            Self::Cancelled => f.write_str("cancelled"),
            Self::Failed(error) => write!(f, "error: {error}"),
        }
    }
}

/// One executed step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    /// 1-based step number.
    pub step: u32,
    /// What `step()` returned.
    pub result: String,
}

/// The structured result of [`Agent::run`](crate::Agent::run): how the run ended and what each
/// step returned. [`RunOutcome::text`] gives OpenManus's joined result string.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// How the run ended.
    pub status: RunStatus,
    /// The executed steps, in order.
    pub steps: Vec<StepRecord>,
    /// The agent's state when the run returned (`FINISHED`, `ERROR` or `IDLE`).
    pub final_state: AgentState,
    /// The run's answer (see [`RunOutcome::answer`]).
    pub answer: Option<String>,
    /// Tokens and cost of the run's model calls.
    pub usage: TokenUsage,
}

impl RunOutcome {
    /// OpenManus's result text: `Step {i}: {result}` lines, then
    /// `Terminated: Reached max steps ({n})` when the budget ran out, `Terminated: {budget}`
    /// when a [`Budget`](crate::Budget) limit was reached, or `No steps executed`.
    /// A cancelled run that completed steps ends with `Cancelled after step {i}`; a failed one
    /// with `Error: {error}`.
    #[must_use]
    pub fn text(&self) -> String {
        let mut lines: Vec<String> = self
            .steps
            .iter()
            .map(|s| format!("Step {}: {}", s.step, s.result))
            .collect();
        match &self.status {
            RunStatus::MaxSteps(n) => lines.push(format!("Terminated: Reached max steps ({n})")),
            RunStatus::Cancelled => {
                if let Some(last) = self.steps.last() {
                    lines.push(format!("Cancelled after step {}", last.step));
                }
            }
            RunStatus::Failed(error) => lines.push(format!("Error: {error}")),
            RunStatus::Finished(FinishReason::Budget(exceeded)) => {
                lines.push(format!("Terminated: {exceeded}"));
            }
            RunStatus::Finished(_) => {}
        }
        if lines.is_empty() {
            "No steps executed".to_owned()
        } else {
            lines.join("\n")
        }
    }

    /// The run's final answer: the text the model gave with the call that finished the run (a
    /// special tool such as `terminate`), else the text of the run's last reply that had any.
    /// `None` when no reply of this run carried text. It comes from the run's
    /// [`AgentEvent::Thought`](crate::AgentEvent::Thought)s, so it never picks up an earlier
    /// run's reply or a tool's output.
    #[must_use]
    pub fn answer(&self) -> Option<&str> {
        self.answer.as_deref()
    }

    /// True when the agent reached `FINISHED`.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        matches!(self.status, RunStatus::Finished(_))
    }

    /// The outcome, or the step error for a failed run.
    ///
    /// # Errors
    ///
    /// The error that failed the run.
    pub fn into_result(self) -> Result<Self, Arc<AgentError>> {
        match self.status {
            RunStatus::Failed(error) => Err(error),
            _ => Ok(self),
        }
    }
}

impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// What the replies of the current run said, for [`RunOutcome::answer`].
#[derive(Debug, Default)]
pub(crate) struct AnswerTracker {
    /// The newest non-empty reply text.
    last_text: Option<String>,
    /// Per tool name, the newest non-empty text of a reply that called it.
    with_call: Vec<(String, String)>,
}

impl AnswerTracker {
    pub(crate) fn record(&mut self, content: &str, calls: &[ToolCall]) {
        let text = content.trim();
        if text.is_empty() {
            return;
        }
        for call in calls {
            let name = &call.function.name;
            match self.with_call.iter_mut().find(|(n, _)| n == name) {
                Some(entry) => text.clone_into(&mut entry.1),
                None => self.with_call.push((name.clone(), text.to_owned())),
            }
        }
        self.last_text = Some(text.to_owned());
    }

    pub(crate) fn answer(&self, status: &RunStatus) -> Option<String> {
        if let RunStatus::Finished(FinishReason::SpecialTool { name }) = status
            && let Some((_, text)) = self
                .with_call
                .iter()
                .rev()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            return Some(text.clone());
        }
        self.last_text.clone()
    }
}
