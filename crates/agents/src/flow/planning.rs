//! `PlanningFlow`: plan with the `planning` tool, run each step with an executor agent, summarize.
//!
//! Why one file past 700 lines: plan creation, step selection, executor runs with retries, the
//! time limit and the summary all act on the one flow's state and share its helpers; the flow's
//! types and events are in `mod.rs`, its prompt text in `prompt.rs`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent_core::{
    Agent, AgentError, AgentEvent, AgentState, BudgetMeter, CancellationToken, EventBus,
    FinishReason, Message, Role, RunOutcome, RunStatus, ToolChoice,
};
use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError};
use agent_tools::{PLANNING, Plan, PlanningArgs, PlanningTool, StepStatus, TerminateStatus, Tool};
use async_trait::async_trait;
use serde_json::Value;
use tokio::time::Instant;
use tracing::{Instrument, info, info_span, warn};

use super::prompt::{
    DEFAULT_PLAN_STEPS, PLAN_COMPLETED, PLANNER_REQUEST, SUMMARY_ERROR, SUMMARY_SYSTEM_PROMPT,
    default_plan_title, planner_system_prompt, step_prompt, step_tag, summary_request,
};
use super::{
    ExecutorMemory, Flow, FlowError, FlowEvent, FlowEventHandler, FlowOptions, FlowOutcome,
    PlanSource, StepResult,
};

/// How long an interrupted executor run may take to wind down (close its tool calls, clean up
/// its tools) after its token was cancelled, before the flow drops it.
pub const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// Why the flow stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interrupt {
    Cancelled,
    TimedOut,
    Budget,
}

impl Interrupt {
    fn note(self) -> &'static str {
        match self {
            Self::Cancelled => "the flow was cancelled",
            Self::TimedOut => "the flow's time limit ran out",
            Self::Budget => "the flow's budget was reached",
        }
    }
}

/// Waits until `deadline` (forever without one).
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Runs `future` unless the flow is cancelled or out of time first (then `future` is dropped).
async fn guard<T>(
    future: impl Future<Output = T>,
    cancel: &CancellationToken,
    deadline: Option<Instant>,
) -> Result<T, Interrupt> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Interrupt::Cancelled),
        () = until(deadline) => Err(Interrupt::TimedOut),
        value = future => Ok(value),
    }
}

/// One call of the flow's own model (the plan, the summary): its tokens and cost are added to
/// the flow's meter, so that the flow's budget counts them with its executors' calls, and
/// reported as a [`AgentEvent::TokenUsage`] on `bus` (the primary executor's: in a session,
/// the session's), so that a run's usage and cost include them. The event goes on the bus
/// itself, not through the agent, whose own usage and meter it is not.
async fn metered_call(
    llm: &dyn ChatModel,
    meter: &BudgetMeter,
    bus: Option<EventBus>,
    request: ChatRequest,
) -> Result<ChatResponse, LlmError> {
    let response = llm.complete(request).await?;
    if let Some(usage) = &response.usage {
        let event = AgentEvent::TokenUsage {
            prompt_tokens: usage.prompt_tokens,
            cached_prompt_tokens: usage.cached_prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cost_usd: llm.price().map(|price| price.cost(usage)),
        };
        meter.record(&event);
        if let Some(bus) = bus {
            bus.emit(event);
        }
    }
    Ok(response)
}

/// The result of one executor run.
struct ExecutorRun {
    result: Result<RunOutcome, AgentError>,
    interrupt: Option<Interrupt>,
}

/// Runs `agent` on `prompt` from a clean state: back to `IDLE`, a fresh child token of `cancel`,
/// memory per `memory`. On cancellation or the deadline the run's token is cancelled and the run
/// gets [`CANCEL_GRACE`] to wind down.
async fn run_executor(
    agent: &mut dyn Agent,
    prompt: String,
    cancel: &CancellationToken,
    deadline: Option<Instant>,
    memory: ExecutorMemory,
) -> ExecutorRun {
    let base = agent.base_mut();
    if base.state() != AgentState::Idle
        && let Err(error) = base.reset_state()
    {
        warn!(%error, "could not reset the executor");
    }
    if memory == ExecutorMemory::Fresh {
        base.memory.clear();
    }
    let token = cancel.child_token();
    base.set_cancellation_token(token.clone());

    let mut run = agent.run(Some(prompt));
    let first = tokio::select! {
        biased;
        result = &mut run => Ok(result),
        () = cancel.cancelled() => Err(Interrupt::Cancelled),
        () = until(deadline) => Err(Interrupt::TimedOut),
    };
    match first {
        Ok(result) => {
            let interrupt = (cancel.is_cancelled()
                && matches!(&result, Ok(o) if matches!(o.status, RunStatus::Cancelled)))
            .then_some(Interrupt::Cancelled);
            ExecutorRun { result, interrupt }
        }
        Err(interrupt) => {
            token.cancel();
            let waited = tokio::time::timeout(CANCEL_GRACE, &mut run).await;
            let result = if let Ok(result) = waited {
                result
            } else {
                drop(run);
                warn!("the executor did not stop within the grace period; dropped its run");
                if let Err(error) = agent.base_mut().reset_state() {
                    warn!(%error, "could not reset the executor");
                }
                Err(AgentError::Cancelled)
            };
            ExecutorRun {
                result,
                interrupt: Some(interrupt),
            }
        }
    }
}

/// The `status` argument of the special-tool call that finished `agent`'s last run, when the
/// run finished by a special tool (`FinishReason::SpecialTool`): the newest call of that name in
/// the agent's memory. `None` when the run ended otherwise, the call is not in memory, or its
/// arguments carry no string `status`.
fn special_tool_status(agent: &dyn Agent, run: &ExecutorRun) -> Option<String> {
    let Ok(RunOutcome {
        status: RunStatus::Finished(FinishReason::SpecialTool { name }),
        ..
    }) = &run.result
    else {
        return None;
    };
    let call = agent
        .base()
        .memory
        .messages()
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.calls().iter().rev())
        .find(|c| c.function.name.eq_ignore_ascii_case(name))?;
    let args: Value = serde_json::from_str(&call.function.arguments).ok()?;
    args.get("status")
        .and_then(Value::as_str)
        .map(|s| s.trim().to_ascii_lowercase())
}

/// What became of one attempt: the status, the note for a blocked step, the flow text.
/// `terminate_status` is the `status` the executor's finishing special-tool call was given (see
/// [`special_tool_status`]); `failure` blocks the step.
fn judge(
    run: &ExecutorRun,
    terminate_status: Option<&str>,
    index: usize,
    executor: &str,
    attempt: u32,
    attempts: u32,
) -> (StepStatus, Option<String>, String) {
    let outcome = match &run.result {
        Ok(outcome) => outcome,
        Err(error) => {
            let why = match run.interrupt {
                Some(interrupt) => format!("was interrupted: {}", interrupt.note()),
                None => format!("could not run: {error}"),
            };
            return (
                StepStatus::Blocked,
                Some(format!(
                    "Attempt {attempt} of {attempts}: `{executor}` {why}."
                )),
                format!("Error executing step {index}: {error}"),
            );
        }
    };
    let why = match &outcome.status {
        RunStatus::Finished(FinishReason::TokenLimit { message }) => {
            format!("ran out of tokens: {message}")
        }
        RunStatus::Finished(FinishReason::SpecialTool { name })
            if terminate_status == Some(TerminateStatus::Failure.as_str()) =>
        {
            format!("gave up: it called `{name}` with status `failure`")
        }
        RunStatus::Finished(FinishReason::Refused { message }) => {
            format!("was refused by the model: {message}")
        }
        RunStatus::Finished(_) => return (StepStatus::Completed, None, outcome.text()),
        RunStatus::MaxSteps(n) => format!("used its {n} steps without finishing the step"),
        RunStatus::Failed(error) => format!("failed: {error}"),
        RunStatus::Cancelled => format!(
            "was interrupted: {}",
            run.interrupt.unwrap_or(Interrupt::Cancelled).note()
        ),
        other => format!("ended with status {other}"),
    };
    (
        StepStatus::Blocked,
        Some(format!(
            "Attempt {attempt} of {attempts}: `{executor}` {why}."
        )),
        outcome.text(),
    )
}

/// The planning flow (spec §7.3, with §13 W7 fixed); see the [module docs](super).
///
/// ```
/// use std::sync::Arc;
///
/// use agent_testkit::{ScriptedModel, tool_call};
/// use agent_toolcall::ToolCallAgent;
/// use agents::flow::{Flow, PlanningFlow};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let planner = Arc::new(ScriptedModel::new());
/// planner.push_tool_calls("", [tool_call(
///     "p",
///     "planning",
///     r#"{"command": "create", "title": "Greet", "steps": ["Say hello"]}"#,
/// )]);
/// planner.push_text("The greeting was delivered.");
///
/// let worker = Arc::new(ScriptedModel::new());
/// worker.push_tool_calls("Hello!", [tool_call("t", "terminate", r#"{"status": "success"}"#)]);
///
/// let mut flow = PlanningFlow::new(planner).with_agent("manus", ToolCallAgent::new(worker));
/// let outcome = flow.execute("Greet the user.").await.unwrap();
/// assert!(outcome.is_complete());
/// assert_eq!(
///     outcome.summary.as_deref(),
///     Some("Plan completed:\n\nThe greeting was delivered.")
/// );
/// # });
/// ```
pub struct PlanningFlow {
    llm: Arc<dyn ChatModel>,
    planning_tool: PlanningTool,
    agents: Vec<(String, Box<dyn Agent>)>,
    options: FlowOptions,
    cancel: CancellationToken,
    on_event: Option<FlowEventHandler>,
    plan_id: Option<String>,
    meter: BudgetMeter,
}

impl std::fmt::Debug for PlanningFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanningFlow")
            .field("model", &self.llm.model_name())
            .field("agents", &self.agent_keys())
            .field("options", &self.options)
            .field("plan_id", &self.plan_id)
            .finish_non_exhaustive()
    }
}

impl PlanningFlow {
    /// A flow that plans and summarizes with `llm`, with no agents yet and default options.
    pub fn new(llm: Arc<dyn ChatModel>) -> Self {
        Self {
            llm,
            planning_tool: PlanningTool::new(),
            agents: Vec::new(),
            options: FlowOptions::default(),
            cancel: CancellationToken::new(),
            on_event: None,
            plan_id: None,
            meter: BudgetMeter::new(),
        }
    }

    /// Adds an executor under `key` (see [`PlanningFlow::add_agent`]).
    #[must_use]
    pub fn with_agent(mut self, key: impl Into<String>, agent: impl Agent + 'static) -> Self {
        self.add_agent(key, Box::new(agent));
        self
    }

    /// Sets the options.
    #[must_use]
    pub fn with_options(mut self, options: FlowOptions) -> Self {
        self.options = options;
        self
    }

    /// Uses `tool` (and the plans it holds) as the flow's planning tool.
    #[must_use]
    pub fn with_planning_tool(mut self, tool: PlanningTool) -> Self {
        self.planning_tool = tool;
        self
    }

    /// Sets the progress handler.
    #[must_use]
    pub fn with_event_handler(
        mut self,
        handler: impl Fn(&FlowEvent) + Send + Sync + 'static,
    ) -> Self {
        self.on_event = Some(Arc::new(handler));
        self
    }

    /// Adds an executor under `key`, or replaces the one with that key (compared ignoring case).
    /// Steps select it with the tag `[KEY]`, so keys should be letters and underscores
    /// (`manus`, `data_analysis`).
    pub fn add_agent(&mut self, key: impl Into<String>, agent: Box<dyn Agent>) {
        let key = key.into();
        if !key.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') {
            warn!(%key, "a step tag cannot name this agent key; only letters and `_` can be tagged");
        }
        match self.position(&key) {
            Some(at) => self.agents[at] = (key, agent),
            None => self.agents.push((key, agent)),
        }
    }

    /// The options.
    #[must_use]
    pub fn options(&self) -> &FlowOptions {
        &self.options
    }

    /// The options, mutably.
    pub fn options_mut(&mut self) -> &mut FlowOptions {
        &mut self.options
    }

    /// The flow's planning tool; clones share its plans.
    #[must_use]
    pub fn planning_tool(&self) -> &PlanningTool {
        &self.planning_tool
    }

    /// The id of the plan of the last (or current) execution.
    #[must_use]
    pub fn plan_id(&self) -> Option<&str> {
        self.plan_id.as_deref()
    }

    /// The agent keys, in the order added.
    #[must_use]
    pub fn agent_keys(&self) -> Vec<&str> {
        self.agents.iter().map(|(key, _)| key.as_str()).collect()
    }

    /// Ends every executor ([`Agent::shutdown`]: MCP servers disconnected, browsers closed, the
    /// tools' processes stopped). The flow should not execute again afterwards.
    pub async fn shutdown_agents(&mut self) {
        for (_, agent) in &mut self.agents {
            agent.shutdown().await;
        }
    }

    /// The agent with `key` (ignoring case).
    #[must_use]
    pub fn agent(&self, key: &str) -> Option<&dyn Agent> {
        self.position(key).map(|at| self.agents[at].1.as_ref())
    }

    /// The agent with `key` (ignoring case), mutably.
    pub fn agent_mut(&mut self, key: &str) -> Option<&mut (dyn Agent + 'static)> {
        self.position(key).map(|at| self.agents[at].1.as_mut())
    }

    /// Where the planner's own token usage is reported: the primary executor's event bus.
    fn planner_bus(&self) -> Option<EventBus> {
        let primary = self.primary_index().ok()?;
        self.agents
            .get(primary)
            .map(|(_, agent)| agent.base().events().clone())
    }

    /// The key of the primary agent.
    #[must_use]
    pub fn primary_agent_key(&self) -> Option<&str> {
        self.primary_index()
            .ok()
            .map(|at| self.agents[at].0.as_str())
    }

    /// A handle on the cancellation token: cancelling it stops the execution in progress.
    #[must_use]
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Replaces the cancellation token (after a cancellation, or with a child of an
    /// application-wide token).
    pub fn set_cancellation_token(&mut self, token: CancellationToken) {
        self.cancel = token;
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.agents
            .iter()
            .position(|(k, _)| k.eq_ignore_ascii_case(key))
    }

    pub(super) fn primary_index(&self) -> Result<usize, FlowError> {
        match &self.options.primary_agent {
            Some(key) => self
                .position(key)
                .ok_or_else(|| FlowError::UnknownAgent(key.clone())),
            None if self.agents.is_empty() => Err(FlowError::NoPrimaryAgent),
            None => Ok(0),
        }
    }

    /// The executor keys that exist, in preference order.
    fn executor_indices(&self) -> Vec<usize> {
        if self.options.executors.is_empty() {
            return (0..self.agents.len()).collect();
        }
        self.options
            .executors
            .iter()
            .filter_map(|key| self.position(key))
            .collect()
    }

    /// OpenManus's `get_executor`: the agent named by the step's tag, else the first executor,
    /// else the primary agent.
    fn executor_for(&self, step_text: &str, primary: usize) -> usize {
        step_tag(step_text)
            .and_then(|tag| self.position(&tag))
            .or_else(|| self.executor_indices().first().copied())
            .unwrap_or(primary)
    }

    fn emit(&self, event: FlowEvent) {
        if let Some(handler) = &self.on_event {
            handler(&event);
        }
    }

    /// `plan_{unix_seconds}`, or the configured id; the default gets a suffix when taken.
    fn new_plan_id(&self) -> String {
        if let Some(id) = &self.options.plan_id {
            return id.clone();
        }
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let base = format!("plan_{secs}");
        let mut id = base.clone();
        let mut n = 2;
        while self.planning_tool.plan(&id).is_some() {
            id = format!("{base}_{n}");
            n += 1;
        }
        id
    }

    /// Asks the planner for a plan and creates it under `plan_id`; falls back to the default plan
    /// when the planner answered without a usable `planning` call or failed transiently (after
    /// its own retries). A permanent model error is [`FlowError::Planner`].
    async fn create_plan(
        &mut self,
        request: &str,
        plan_id: &str,
        deadline: Option<Instant>,
    ) -> Result<Result<PlanSource, FlowError>, Interrupt> {
        info!(plan_id, "creating the initial plan");
        let executors: Vec<(String, Option<String>)> = self
            .executor_indices()
            .into_iter()
            .map(|at| {
                let (key, agent) = &self.agents[at];
                (key.clone(), agent.base().description.clone())
            })
            .collect();
        let system = Message::system_message(planner_system_prompt(&executors));
        let user = Message::user_message(format!("{PLANNER_REQUEST}{request}"));
        let plan_request = ChatRequest::new(vec![user])
            .with_system(vec![system])
            .with_tools(vec![self.planning_tool.to_param()], ToolChoice::Auto);
        let bus = self.planner_bus();
        let ask = metered_call(self.llm.as_ref(), &self.meter, bus, plan_request);
        let reason = match guard(ask, &self.cancel, deadline).await? {
            Err(error) if !error.is_retryable() => {
                warn!(%error, "the planner call failed permanently; aborting the flow");
                return Ok(Err(FlowError::Planner {
                    request: request.to_owned(),
                    error,
                }));
            }
            Err(error) => {
                warn!(%error, "the planner call failed");
                format!("the planner call failed: {error}")
            }
            Ok(response) => {
                let mut reason = "the planner did not call the `planning` tool".to_owned();
                for call in response
                    .tool_calls
                    .iter()
                    .filter(|c| c.function.name == PLANNING)
                {
                    match self.create_from_call(&call.function.arguments, request, plan_id) {
                        Ok(text) => {
                            info!("plan created: {text}");
                            return Ok(Ok(PlanSource::Model));
                        }
                        Err(why) => {
                            warn!(arguments = %call.function.arguments, "unusable planning call: {why}");
                            reason = format!("unusable `planning` call: {why}");
                        }
                    }
                }
                reason
            }
        };
        warn!("creating the default plan: {reason}");
        let args = PlanningArgs {
            command: "create".to_owned(),
            plan_id: Some(plan_id.to_owned()),
            title: Some(default_plan_title(request)),
            steps: Some(Value::from(DEFAULT_PLAN_STEPS.to_vec())),
            step_index: None,
            step_status: None,
            step_notes: None,
        };
        Ok(match self.planning_tool.run(&args) {
            Ok(_) => Ok(PlanSource::Default { reason }),
            Err(error) => Err(FlowError::PlanCreation {
                request: request.to_owned(),
                reason: error.to_string(),
            }),
        })
    }

    /// Creates the plan from a `planning` call's raw arguments: the command must be `create`,
    /// the id is the flow's, a missing title is the default title, and blank steps are dropped.
    fn create_from_call(&self, raw: &str, request: &str, plan_id: &str) -> Result<String, String> {
        let value: Value =
            serde_json::from_str(raw).map_err(|e| format!("invalid JSON arguments: {e}"))?;
        let Value::Object(map) = value else {
            return Err("the arguments are not a JSON object".to_owned());
        };
        match map.get("command").and_then(Value::as_str) {
            Some("create") => {}
            Some(other) => return Err(format!("command `{other}` instead of `create`")),
            None => return Err("no command".to_owned()),
        }
        let title = map
            .get("title")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map_or_else(|| default_plan_title(request), str::to_owned);
        let steps = map.get("steps").map(|steps| match steps {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .filter(|s| s.as_str().is_none_or(|s| !s.trim().is_empty()))
                    .cloned()
                    .collect(),
            ),
            other => other.clone(),
        });
        let args = PlanningArgs {
            command: "create".to_owned(),
            plan_id: Some(plan_id.to_owned()),
            title: Some(title),
            steps,
            step_index: None,
            step_status: None,
            step_notes: None,
        };
        self.planning_tool.run(&args).map_err(|e| e.to_string())
    }

    /// The summary: the model, else the primary agent, else [`SUMMARY_ERROR`].
    async fn summarize(
        &mut self,
        plan_text: &str,
        primary: usize,
        deadline: Option<Instant>,
    ) -> Result<String, Interrupt> {
        let request = summary_request(plan_text);
        let ask = metered_call(
            self.llm.as_ref(),
            &self.meter,
            self.planner_bus(),
            ChatRequest::new(vec![Message::user_message(request.clone())])
                .with_system(vec![Message::system_message(SUMMARY_SYSTEM_PROMPT)]),
        );
        // As `ChatModel::ask`: the trimmed text, and an empty reply is a failure.
        match guard(ask, &self.cancel, deadline).await? {
            Ok(response) => match response.content.as_deref().map(str::trim) {
                Some(summary) if !summary.is_empty() => {
                    return Ok(format!("{PLAN_COMPLETED}{summary}"));
                }
                _ => warn!("the summary call returned no text; asking the primary agent"),
            },
            Err(error) => warn!(%error, "the summary call failed; asking the primary agent"),
        }
        let memory = self.options.executor_memory;
        let agent = self.agents[primary].1.as_mut();
        let run = run_executor(agent, request, &self.cancel, deadline, memory).await;
        if let Some(interrupt) = run.interrupt {
            return Err(interrupt);
        }
        Ok(match run.result {
            Ok(outcome)
                if !matches!(outcome.status, RunStatus::Failed(_) | RunStatus::Cancelled) =>
            {
                format!("{PLAN_COMPLETED}{}", outcome.text())
            }
            Ok(outcome) => {
                warn!(status = %outcome.status, "the primary agent could not summarize either");
                SUMMARY_ERROR.to_owned()
            }
            Err(error) => {
                warn!(%error, "the primary agent could not summarize either");
                SUMMARY_ERROR.to_owned()
            }
        })
    }

    async fn execute_inner(&mut self, input_text: &str) -> Result<FlowOutcome, FlowError> {
        let started = Instant::now();
        let deadline = self.options.time_limit.map(|limit| started + limit);
        let primary = self.primary_index()?;
        self.meter.restart();
        if !self.options.budget.is_unlimited() {
            for (_, agent) in &mut self.agents {
                let base = agent.base_mut();
                base.budget = self.options.budget;
                base.share_budget_meter(self.meter.clone());
            }
        }
        let mut outcome = FlowOutcome {
            time_limit: self.options.time_limit,
            ..FlowOutcome::default()
        };
        let previous = self.plan_id.take();
        let interrupt = self
            .run_plan(input_text, previous, primary, deadline, &mut outcome)
            .await?;
        match interrupt {
            Some(Interrupt::Cancelled) => outcome.cancelled = true,
            Some(Interrupt::TimedOut) => outcome.timed_out = true,
            Some(Interrupt::Budget) | None => {}
        }
        outcome.plan = self
            .plan_id
            .as_deref()
            .and_then(|id| self.planning_tool.plan(id));
        outcome.elapsed = started.elapsed();
        let (completed, blocked) = outcome.plan.as_ref().map_or((0, 0), |p| {
            (p.count(StepStatus::Completed), p.count(StepStatus::Blocked))
        });
        info!(
            completed,
            blocked,
            timed_out = outcome.timed_out,
            cancelled = outcome.cancelled,
            "flow finished"
        );
        self.emit(FlowEvent::Finished {
            completed,
            blocked,
            timed_out: outcome.timed_out,
            cancelled: outcome.cancelled,
        });
        Ok(outcome)
    }

    /// Plan, steps, summary; returns the interruption, if any.
    async fn run_plan(
        &mut self,
        input_text: &str,
        previous: Option<String>,
        primary: usize,
        deadline: Option<Instant>,
        outcome: &mut FlowOutcome,
    ) -> Result<Option<Interrupt>, FlowError> {
        if self.cancel.is_cancelled() {
            return Ok(Some(Interrupt::Cancelled));
        }
        let (plan_id, source) = if input_text.trim().is_empty() {
            let id = self
                .options
                .plan_id
                .clone()
                .or(previous)
                .filter(|id| self.planning_tool.plan(id).is_some())
                .ok_or_else(|| FlowError::PlanCreation {
                    request: input_text.to_owned(),
                    reason: "the request is empty and there is no plan to resume".to_owned(),
                })?;
            (id, PlanSource::Existing)
        } else {
            let id = self.new_plan_id();
            self.plan_id = Some(id.clone());
            let plan_span = agent_telemetry::genai_span!(
                "plan",
                otel.name = "plan planning",
                otel.kind = "internal",
                gen_ai.operation.name = "plan",
                gen_ai.agent.name = "planning",
                openinference.span.kind = "CHAIN",
            );
            let created = agent_telemetry::scope::within(
                plan_span,
                self.create_plan(input_text, &id, deadline),
            )
            .await;
            match created {
                Err(interrupt) => return Ok(Some(interrupt)),
                Ok(source) => (id, source?),
            }
        };
        self.plan_id = Some(plan_id.clone());
        let Some(plan) = self.planning_tool.plan(&plan_id) else {
            return Err(FlowError::PlanCreation {
                request: input_text.to_owned(),
                reason: format!("No plan found with ID: {plan_id}"),
            });
        };
        outcome.plan_source = Some(source.clone());
        self.emit(FlowEvent::PlanCreated { plan, source });

        let max_attempts = self.options.max_step_retries.saturating_add(1);
        let mut attempts: HashMap<usize, u32> = HashMap::new();
        loop {
            if self.cancel.is_cancelled() {
                return Ok(Some(Interrupt::Cancelled));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(Some(Interrupt::TimedOut));
            }
            if let Some(exceeded) = self.meter.check(&self.options.budget) {
                info!(%exceeded, "the flow's budget was reached");
                outcome.budget = Some(exceeded);
                return Ok(Some(Interrupt::Budget));
            }
            let Some(plan) = self.planning_tool.plan(&plan_id) else {
                warn!(%plan_id, "the plan disappeared");
                break;
            };
            let next = (0..plan.steps.len()).find(|i| {
                plan.status(*i) != Some(StepStatus::Completed)
                    && attempts.get(i).copied().unwrap_or(0) < max_attempts
            });
            let Some(index) = next else { break };
            let attempt = {
                let n = attempts.entry(index).or_insert(0);
                *n += 1;
                *n
            };
            let interrupt = self
                .run_step(
                    &plan_id,
                    &plan,
                    index,
                    attempt,
                    max_attempts,
                    primary,
                    deadline,
                    outcome,
                )
                .await;
            if interrupt.is_some() {
                return Ok(interrupt);
            }
        }

        let plan_text = self.planning_tool.plan(&plan_id).map_or_else(
            || format!("Error: Plan with ID {plan_id} not found"),
            |p| p.format(),
        );
        match self.summarize(&plan_text, primary, deadline).await {
            Ok(summary) => {
                outcome.summary = Some(summary);
                Ok(None)
            }
            Err(interrupt) => Ok(Some(interrupt)),
        }
    }

    /// One attempt at step `index`.
    #[allow(clippy::too_many_arguments)]
    async fn run_step(
        &mut self,
        plan_id: &str,
        plan: &Plan,
        index: usize,
        attempt: u32,
        max_attempts: u32,
        primary: usize,
        deadline: Option<Instant>,
        outcome: &mut FlowOutcome,
    ) -> Option<Interrupt> {
        let text = plan.steps[index].clone();
        let executor = self.executor_for(&text, primary);
        let key = self.agents[executor].0.clone();
        if let Err(error) =
            self.planning_tool
                .set_step_status(plan_id, index, StepStatus::InProgress, None)
        {
            warn!(%error, "could not mark the step in progress");
        }
        info!(index, executor = %key, attempt, "executing step: {text}");
        self.emit(FlowEvent::StepStarted {
            index,
            text: text.clone(),
            executor: key.clone(),
            attempt,
        });
        let plan_text = self
            .planning_tool
            .plan(plan_id)
            .map_or_else(|| plan.format(), |p| p.format());
        let prompt = step_prompt(&plan_text, index, &text);
        let memory = self.options.executor_memory;
        let agent = self.agents[executor].1.as_mut();
        let run = run_executor(agent, prompt, &self.cancel, deadline, memory)
            .instrument(info_span!("flow_step", index, executor = %key, attempt))
            .await;
        let terminate_status = special_tool_status(self.agents[executor].1.as_ref(), &run);
        let (status, note, output) = judge(
            &run,
            terminate_status.as_deref(),
            index,
            &key,
            attempt,
            max_attempts,
        );
        if let Err(error) =
            self.planning_tool
                .set_step_status(plan_id, index, status, note.as_deref())
        {
            warn!(%error, "could not record the step's status");
        }
        let run_status = match &run.result {
            Ok(o) => o.status.to_string(),
            Err(e) => format!("error: {e}"),
        };
        info!(index, status = status.as_str(), %run_status, "step finished");
        self.emit(FlowEvent::StepFinished {
            index,
            executor: key.clone(),
            attempt,
            status,
            run_status,
            note: note.clone(),
        });
        outcome.steps.push(StepResult {
            index,
            text,
            executor: key,
            attempt,
            status,
            run_status: run.result.as_ref().ok().map(|o| o.status.clone()),
            output,
            note,
        });
        run.interrupt
    }
}

#[async_trait]
impl Flow for PlanningFlow {
    async fn execute(&mut self, input_text: &str) -> Result<FlowOutcome, FlowError> {
        let span = info_span!("flow", kind = "planning");
        // The flow is a workflow of agents: its plan, then each step's executor run, one trace.
        let workflow = agent_telemetry::genai_span!(
            "invoke_workflow",
            otel.name = "invoke_workflow planning",
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_workflow",
            gen_ai.workflow.name = "planning",
            openinference.span.kind = "CHAIN",
        );
        agent_telemetry::scope::within(workflow, self.execute_inner(input_text).instrument(span))
            .await
    }

    fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    fn set_event_handler(&mut self, handler: FlowEventHandler) {
        self.on_event = Some(handler);
    }
}
