//! The flow layer (spec §7): [`PlanningFlow`] makes a plan for a request and has executor agents
//! carry it out step by step; [`FlowFactory`] builds a flow by [`FlowType`].
//!
//! # What a planning flow does
//!
//! 1. **Plan.** The flow's model is asked for a plan with the `planning` tool offered
//!    (`tool_choice` auto, as OpenManus). When there is more than one executor, the planner's
//!    system prompt lists them (`{"name": "MANUS", "description": ...}`) and asks for each step to
//!    start with its executor's tag, such as `[MANUS]`. The first `planning` call with the
//!    `create` command and a non-empty list of steps is executed on the flow's own
//!    [`PlanningTool`](agent_tools::PlanningTool) under the flow's plan id (`plan_{unix_seconds}` unless
//!    [`FlowOptions::plan_id`] says otherwise); a missing title becomes the default title. When
//!    no call qualifies — the model answered in text, called another command, sent arguments that
//!    are not JSON, or the model call failed with a transient error its retries did not cure —
//!    the flow uses OpenManus's default plan: `Plan for: {first 50 characters}` with the steps
//!    `Analyze request`, `Execute task`, `Verify results` ([`PlanSource`] says which happened).
//!    A permanent model error (authentication, invalid request, quota, context length; see
//!    [`LlmError::is_retryable`](agent_llm::LlmError::is_retryable)) aborts the execution with
//!    [`FlowError::Planner`]: the executors would meet the same error.
//! 2. **Steps.** The flow takes the first step that is not completed and still has attempts
//!    left, marks it `in_progress`, and picks its executor: the agent whose key matches the step's
//!    tag (`\[([A-Z_]+)\]`, compared ignoring case), else the first of
//!    [`FlowOptions::executors`] (all agents by default), else the primary agent. The executor
//!    runs on the [step prompt](step_prompt): `CURRENT PLAN STATUS:` with the formatted plan,
//!    then `YOUR CURRENT TASK:` naming `step {i}: "{text}"` (0-based, as in the plan text).
//! 3. **Outcome of a step.** A run that finished (`RunStatus::Finished`, other than by the token
//!    limit, and other than by a `terminate` call with `"status": "failure"`) marks the step
//!    `completed`. Any other ending — the executor giving up through `terminate` with status
//!    `failure` (read from the finishing call's arguments in the executor's memory), a failed
//!    run, the step budget spent
//!    (`MaxSteps`), the token limit, a cancelled run, or `run()` refusing to start — marks it
//!    `blocked` with a note such as ``Attempt 1 of 2: `manus` used its 5 steps without finishing
//!    the step.`` (the note shows in the plan text every later prompt sees). A blocked step is
//!    retried at once, up to [`FlowOptions::max_step_retries`] more times (default 1). After its
//!    last attempt it stays blocked and **the flow goes on with the next step**: later steps see
//!    the `[!]` mark and the note in the plan status and can work around it, and the final
//!    summary reports it. Every step gets at most `1 + max_step_retries` attempts in one
//!    execution, so the loop always ends.
//! 4. **Summary.** When no step is left, the flow's model is asked for a summary of the final plan:
//!    `Plan completed:\n\n{summary}`. If that call fails, the primary agent is asked instead
//!    (`Plan completed:\n\n{its run's text}`); if that fails too, the summary is
//!    `Plan completed. Error generating summary.`
//!
//! The result is a [`FlowOutcome`]: the final plan, every step attempt with its status, the
//! summary, and whether the flow timed out or was cancelled. [`FlowOutcome::text`] is OpenManus's
//! joined string (each step's result, a newline, then the summary).
//!
//! # Executor state between steps
//!
//! Executors are the same instances for the whole flow, and **their memory is carried over**
//! from step to step (the default, [`ExecutorMemory::Keep`]). Before each step the flow returns
//! the executor to `IDLE` (`BaseAgent::reset_state`, since `terminate` left it `FINISHED`) and
//! installs a fresh child of the flow's cancellation token. Why keep the memory: a step usually
//! needs what the earlier steps of the same executor learned (file names, findings, the approach
//! that failed), and the plan text only carries statuses and notes. It is safe here because
//! each run pins its request (`Memory::add_task`), so truncation never drops the current step's
//! prompt; truncation is turn-safe; every run counts its steps from 1 (each step gets the whole
//! `max_steps` budget, unlike OpenManus where the counter carried over); and a failed or
//! cancelled run leaves no unanswered tool call behind. [`ExecutorMemory::Fresh`] clears the
//! executor's memory before every step instead, for independent steps or long plans.
//!
//! # Time limit and cancellation
//!
//! The whole execution has a time limit ([`FlowOptions::time_limit`], default 3600 s as
//! run_flow.py; `None` for none) and a cancellation token
//! ([`PlanningFlow::cancellation_token`]). Either stops the flow at once: a model call in
//! progress is dropped, an executor run in progress is cancelled through its token (it closes its
//! open tool calls and cleans up; a run that ignores its token is dropped after
//! [`CANCEL_GRACE`]), the interrupted step is marked `blocked` with a note, and no summary is
//! asked for. The outcome then has `timed_out` or `cancelled` set, and its text ends with
//! run_flow.py's `Request processing timed out after 1 hour` / `Operation terminated due to
//! timeout. Please try a simpler request.`, or with `Operation cancelled by user.` A cancelled
//! token stays cancelled: install a new one with [`PlanningFlow::set_cancellation_token`] before
//! executing again.
//!
//! # Progress
//!
//! The flow reports [`FlowEvent`]s (plan created, step started, step finished with its status,
//! flow finished) to an optional handler ([`PlanningFlow::with_event_handler`]); the handler is
//! called synchronously and should only forward the event (into a channel, a log). What an
//! executor does inside a step is on that agent's own event bus: subscribe to
//! `agent.base().events()` before handing the agent to the flow, or give every executor one shared
//! bus with `BaseAgent::set_event_bus`.
//!
//! # Differences from OpenManus
//!
//! * Steps that did not finish are `blocked` (with a note), retried a bounded number of times,
//!   then skipped; OpenManus marked every returned run `completed` and retried a step whose run
//!   raised forever (spec §13 W7).
//! * A transiently failed planner call or an unusable `planning` call (another command, invalid
//!   arguments, no steps) falls back to the default plan, where OpenManus returned
//!   `Execution failed: ...` (W7); a permanent model error aborts with [`FlowError::Planner`].
//! * A step whose executor called `terminate` with status `failure` is `blocked`, not
//!   `completed`.
//! * The executor list is given to the planner once (OpenManus also pasted it where an agent
//!   count was meant), and every prompt is our own wording; the step prompt is not indented.
//! * OpenManus's `executor.state == FINISHED` stop check was dead code and is not reproduced.
//! * The default plan id gets a `_2`, `_3`, ... suffix when the flow's planning tool already holds
//!   that id, so one flow can execute several requests.
//! * An empty request runs the existing plan with the flow's plan id, if there is one (resume).

mod planning;
mod prompt;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{Agent, Budget, BudgetExceeded, CancellationToken, RunStatus};
use agent_llm::{ChatModel, LlmError};
use agent_tools::{Plan, StepStatus};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use planning::{CANCEL_GRACE, PlanningFlow};
pub use prompt::{
    DEFAULT_PLAN_STEPS, DEFAULT_TITLE_CHARS, FLOW_CANCELLED, PLAN_COMPLETED, PLANNER_REQUEST,
    PLANNER_SYSTEM_PROMPT, SUMMARY_ERROR, SUMMARY_SYSTEM_PROMPT, TIMEOUT_ADVICE,
    default_plan_title, planner_system_prompt, step_prompt, step_tag, summary_request,
    timeout_message,
};

/// run_flow.py's time limit for a whole flow.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(3600);

/// How many times a blocked step is tried again by default.
pub const DEFAULT_MAX_STEP_RETRIES: u32 = 1;

/// The kinds of flow (OpenManus's `FlowType`, which has one value).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FlowType {
    /// [`PlanningFlow`].
    #[default]
    Planning,
}

impl FlowType {
    /// The wire name (`planning`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Planning => "planning",
        }
    }
}

impl fmt::Display for FlowType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FlowType {
    type Err = FlowError;

    fn from_str(name: &str) -> Result<Self, FlowError> {
        match name {
            "planning" => Ok(Self::Planning),
            other => Err(FlowError::UnknownFlowType(other.to_owned())),
        }
    }
}

/// Why a flow could not be built or could not run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FlowError {
    /// [`FlowType::from_str`] got a name it does not know.
    #[error("Unknown flow type: {0}")]
    UnknownFlowType(String),
    /// The flow has no agent.
    #[error("No primary agent available")]
    NoPrimaryAgent,
    /// [`FlowOptions::primary_agent`] names no registered agent.
    #[error("No agent registered with key: {0}")]
    UnknownAgent(String),
    /// No plan could be created (even the default plan failed, for example because the
    /// configured plan id already exists), or the request was empty and no plan exists.
    #[error("Failed to create plan for: {request}")]
    PlanCreation {
        /// The request.
        request: String,
        /// What went wrong.
        reason: String,
    },
    /// The planner's model call failed with a permanent error (authentication, an invalid
    /// request, exhausted quota, context length: anything [`LlmError::is_retryable`] refuses),
    /// so no step was run: the executors would meet the same error.
    #[error("the planner's model failed for: {request}: {error}")]
    Planner {
        /// The request.
        request: String,
        /// The model's error.
        #[source]
        error: LlmError,
    },
}

/// What a step's executor memory starts from (see the [module docs](self)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorMemory {
    /// The executor keeps its conversation from earlier steps (OpenManus, and the default).
    #[default]
    Keep,
    /// The executor's memory is cleared before every step; the step prompt's plan status is all
    /// it knows of earlier steps.
    Fresh,
}

/// The settings of a flow. `FlowOptions { max_step_retries: 2, ..FlowOptions::default() }`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowOptions {
    /// The key of the primary agent (default: the first agent added).
    pub primary_agent: Option<String>,
    /// The executor keys, in order of preference for untagged steps (empty: every agent, in the
    /// order added). OpenManus's `executors` keyword.
    pub executors: Vec<String>,
    /// The plan id (default: `plan_{unix_seconds}`, made unique in the flow's planning tool).
    pub plan_id: Option<String>,
    /// How many more times a blocked step is tried (default 1: two attempts in all).
    pub max_step_retries: u32,
    /// The time limit of one execution (default 3600 s; `None`: no limit).
    pub time_limit: Option<Duration>,
    /// What an executor's memory starts from at each step.
    pub executor_memory: ExecutorMemory,
    /// Limits on the tokens, cost and time of one execution: all the executors' runs and the
    /// planner's own calls (the plan, the summary) together (`[agent]`'s budget keys);
    /// unlimited by default. Reaching one stops the flow
    /// before its next step ([`FlowOutcome::budget`]).
    pub budget: Budget,
}

impl Default for FlowOptions {
    fn default() -> Self {
        Self {
            primary_agent: None,
            executors: Vec::new(),
            plan_id: None,
            max_step_retries: DEFAULT_MAX_STEP_RETRIES,
            time_limit: Some(DEFAULT_TIME_LIMIT),
            executor_memory: ExecutorMemory::Keep,
            budget: Budget::default(),
        }
    }
}

/// Where the executed plan came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PlanSource {
    /// The planner created it with the `planning` tool.
    Model,
    /// OpenManus's default 3-step plan, because the planner did not create one.
    Default {
        /// Why the planner's answer was not used.
        reason: String,
    },
    /// The plan already existed in the flow's planning tool (an empty request resumes it).
    Existing,
}

/// One attempt at one plan step.
#[derive(Debug, Clone)]
pub struct StepResult {
    /// The step's 0-based index in the plan.
    pub index: usize,
    /// The step's text.
    pub text: String,
    /// The key of the executor that ran it.
    pub executor: String,
    /// 1-based attempt number.
    pub attempt: u32,
    /// The status the step got: `Completed` or `Blocked`.
    pub status: StepStatus,
    /// How the executor's run ended (`None` when `run()` refused to start).
    pub run_status: Option<RunStatus>,
    /// What the attempt contributed to the flow's text: the run's `RunOutcome::text`, or
    /// `Error executing step {i}: {error}`.
    pub output: String,
    /// The note written on the step when it was blocked.
    pub note: Option<String>,
}

/// The structured result of a flow execution. [`FlowOutcome::text`] is OpenManus's string.
#[derive(Debug, Clone, Default)]
pub struct FlowOutcome {
    /// The plan as it ended (`None` when the flow stopped before a plan existed).
    pub plan: Option<Plan>,
    /// Where the plan came from.
    pub plan_source: Option<PlanSource>,
    /// Every step attempt, in order.
    pub steps: Vec<StepResult>,
    /// `Plan completed:\n\n{summary}` or [`SUMMARY_ERROR`]; `None` when the flow was interrupted.
    pub summary: Option<String>,
    /// The time limit ran out.
    pub timed_out: bool,
    /// The cancellation token fired.
    pub cancelled: bool,
    /// The time limit that applied.
    pub time_limit: Option<Duration>,
    /// How long the execution took.
    pub elapsed: Duration,
    /// The budget that stopped the flow, if one did.
    pub budget: Option<BudgetExceeded>,
}

impl FlowOutcome {
    /// OpenManus's result: every step attempt's output followed by a newline, then the summary.
    /// A timed-out flow ends with `Request processing timed out after {limit}` and
    /// [`TIMEOUT_ADVICE`] on two lines; a cancelled one with [`FLOW_CANCELLED`].
    #[must_use]
    pub fn text(&self) -> String {
        let mut out = String::new();
        for step in &self.steps {
            out.push_str(&step.output);
            out.push('\n');
        }
        if let Some(summary) = &self.summary {
            out.push_str(summary);
        }
        if self.timed_out {
            let limit = self.time_limit.unwrap_or(DEFAULT_TIME_LIMIT);
            out.push_str(&timeout_message(limit));
            out.push('\n');
            out.push_str(TIMEOUT_ADVICE);
        } else if self.cancelled {
            out.push_str(FLOW_CANCELLED);
        } else if let Some(exceeded) = &self.budget {
            out.push_str(&format!("Terminated: {exceeded}"));
        }
        out
    }

    /// Indices of the plan steps that ended `blocked`.
    #[must_use]
    pub fn blocked_steps(&self) -> Vec<usize> {
        self.steps_with(StepStatus::Blocked)
    }

    /// True when the flow ran to its summary and every plan step is completed.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        !self.timed_out
            && !self.cancelled
            && self
                .plan
                .as_ref()
                .is_some_and(|p| p.count(StepStatus::Completed) == p.steps.len())
    }

    fn steps_with(&self, status: StepStatus) -> Vec<usize> {
        self.plan.as_ref().map_or_else(Vec::new, |plan| {
            (0..plan.steps.len())
                .filter(|i| plan.status(*i) == Some(status))
                .collect()
        })
    }
}

impl fmt::Display for FlowOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// Progress of a flow, for a renderer or a journal. Serialises with a `"type"` tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FlowEvent {
    /// The plan exists and the steps are about to run.
    PlanCreated {
        /// The plan.
        plan: Plan,
        /// Where it came from.
        source: PlanSource,
    },
    /// A step attempt begins.
    StepStarted {
        /// 0-based step index.
        index: usize,
        /// The step text.
        text: String,
        /// The executor's key.
        executor: String,
        /// 1-based attempt number.
        attempt: u32,
    },
    /// A step attempt ended.
    StepFinished {
        /// 0-based step index.
        index: usize,
        /// The executor's key.
        executor: String,
        /// 1-based attempt number.
        attempt: u32,
        /// `completed` or `blocked`.
        status: StepStatus,
        /// How the executor's run ended (`RunStatus`'s `Display`, or the `run()` error).
        run_status: String,
        /// The note written on a blocked step.
        note: Option<String>,
    },
    /// The execution ended.
    Finished {
        /// Completed plan steps.
        completed: usize,
        /// Blocked plan steps.
        blocked: usize,
        /// The time limit ran out.
        timed_out: bool,
        /// The flow was cancelled.
        cancelled: bool,
    },
}

/// Receives [`FlowEvent`]s; called synchronously by the flow, so it should be quick.
pub type FlowEventHandler = Arc<dyn Fn(&FlowEvent) + Send + Sync>;

/// A flow: something that executes a request with agents (OpenManus's `BaseFlow`).
#[async_trait]
pub trait Flow: Send {
    /// Executes `input_text`.
    ///
    /// # Errors
    ///
    /// [`FlowError`] when the flow has no agent or no plan could be made; everything that goes
    /// wrong after that (failed steps, time limit, cancellation) is in the [`FlowOutcome`].
    async fn execute(&mut self, input_text: &str) -> Result<FlowOutcome, FlowError>;

    /// OpenManus's `execute`: the outcome's [text](FlowOutcome::text), `Failed to create plan
    /// for: {input}`, or `Execution failed: {error}`.
    async fn execute_text(&mut self, input_text: &str) -> String {
        match self.execute(input_text).await {
            Ok(outcome) => outcome.text(),
            Err(error @ FlowError::PlanCreation { .. }) => error.to_string(),
            Err(error) => format!("Execution failed: {error}"),
        }
    }

    /// A handle on the flow's cancellation token.
    fn cancellation_token(&self) -> CancellationToken;

    /// Sets the progress handler.
    fn set_event_handler(&mut self, handler: FlowEventHandler);
}

/// Builds flows by type (OpenManus's `FlowFactory`).
#[derive(Debug, Clone, Copy, Default)]
pub struct FlowFactory;

impl FlowFactory {
    /// A flow of `flow_type` with the model `llm` (planning and summary) and the executor
    /// `agents`, keyed as the `[KEY]` step tags name them (`"manus"`, `"data_analysis"`). The
    /// first agent is the primary one unless `options` says otherwise.
    ///
    /// # Errors
    ///
    /// [`FlowError::NoPrimaryAgent`] with no agents; [`FlowError::UnknownAgent`] when
    /// [`FlowOptions::primary_agent`] names none of them.
    pub fn create_flow(
        flow_type: FlowType,
        llm: Arc<dyn ChatModel>,
        agents: Vec<(String, Box<dyn Agent>)>,
        options: FlowOptions,
    ) -> Result<Box<dyn Flow>, FlowError> {
        match flow_type {
            FlowType::Planning => {
                let mut flow = PlanningFlow::new(llm).with_options(options);
                for (key, agent) in agents {
                    flow.add_agent(key, agent);
                }
                flow.primary_index()?;
                Ok(Box::new(flow))
            }
        }
    }
}
