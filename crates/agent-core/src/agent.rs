//! BaseAgent: the run loop, the state machine, stuck detection and the structured run outcome.

use std::sync::{Arc, PoisonError};

use agent_protocol::TokenUsage;
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info, info_span, warn};

use crate::budget::{Budget, BudgetExceeded, BudgetMeter};
use crate::error::AgentError;
use crate::event::{AgentEvent, EventBus};
use crate::memory::Memory;
use crate::observations::{cancelled_observation, failed_observation, out_of_time_observation};
use crate::outcome::{AnswerTracker, FinishReason, RunOutcome, RunStatus, StepRecord};
use crate::schema::{AgentState, Message, Role, ToolCall};
use crate::spans::{self, ModelLabels};

/// OpenManus's default step budget for a BaseAgent (10): the generic fallback of an agent that
/// sets none. Each agent kind declares its own budget beside the kind (ToolCallAgent's
/// `agent_toolcall::DEFAULT_MAX_STEPS`, Manus's `agents::MANUS_MAX_STEPS`, ...).
pub const DEFAULT_MAX_STEPS: u32 = 10;
/// OpenManus's default stuck threshold: the number of earlier identical replies that make the
/// agent "stuck".
pub const DEFAULT_DUPLICATE_THRESHOLD: usize = 2;

/// The sentence put in front of the next-step prompt while the agent is stuck.
pub const STUCK_PROMPT: &str = "You have given the same response several times in a row. \
Stop repeating it: step back, reconsider the task, and try a different approach than the ones \
you have already tried.";

/// What stuck detection compares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StuckDetection {
    /// OpenManus: the last message's text against earlier assistant texts. It never fires on
    /// repeated tool calls, because after a tool step the last message is a `tool` message.
    ContentOnly,
    /// The OpenManus rule, plus: the newest assistant messages requesting the same tool calls
    /// (names and arguments) `duplicate_threshold + 1` times in a row (spec §13 W3).
    #[default]
    ContentAndToolCalls,
}

/// The state every agent carries: identity, prompts, memory, the state machine, step counters,
/// stuck detection, the event bus and the cancellation token.
#[derive(Debug)]
pub struct BaseAgent {
    /// The agent's name.
    pub name: String,
    /// What the agent is for (used by flows to pick executors).
    pub description: Option<String>,
    /// Sent as the system message of every model request (empty: none). Never stored in memory.
    pub system_prompt: String,
    /// Per-step guidance for the model (empty: none).
    pub next_step_prompt: String,
    /// The conversation.
    pub memory: Memory,
    /// The step budget of one run.
    pub max_steps: u32,
    /// How many earlier identical replies make the agent stuck.
    pub duplicate_threshold: usize,
    /// What stuck detection compares.
    pub stuck_detection: StuckDetection,
    /// Limits on tokens, cost and wall time; reaching one finishes the run with
    /// [`FinishReason::Budget`]. Checked before every step, and the time limit also during one.
    pub budget: Budget,
    meter: BudgetMeter,
    /// The meter is a flow's: runs do not restart it.
    shared_meter: bool,
    usage: std::sync::Mutex<TokenUsage>,
    state: AgentState,
    current_step: u32,
    stuck_hint: bool,
    finish_reason: Option<FinishReason>,
    ending: Option<RunStatus>,
    session: Option<String>,
    answer: std::sync::Mutex<AnswerTracker>,
    events: EventBus,
    cancel: CancellationToken,
}

impl BaseAgent {
    /// An idle agent with OpenManus's defaults (10 steps, threshold 2, 100 messages).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
            system_prompt: String::new(),
            next_step_prompt: String::new(),
            memory: Memory::default(),
            max_steps: DEFAULT_MAX_STEPS,
            duplicate_threshold: DEFAULT_DUPLICATE_THRESHOLD,
            stuck_detection: StuckDetection::default(),
            budget: Budget::default(),
            meter: BudgetMeter::new(),
            shared_meter: false,
            usage: std::sync::Mutex::default(),
            state: AgentState::Idle,
            current_step: 0,
            stuck_hint: false,
            finish_reason: None,
            ending: None,
            session: None,
            answer: std::sync::Mutex::default(),
            events: EventBus::new(),
            cancel: CancellationToken::new(),
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// Sets the next-step prompt.
    #[must_use]
    pub fn with_next_step_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.next_step_prompt = prompt.into();
        self
    }

    /// Sets the step budget.
    #[must_use]
    pub fn with_max_steps(mut self, max_steps: u32) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// Sets the memory cap.
    #[must_use]
    pub fn with_max_messages(mut self, max_messages: usize) -> Self {
        self.memory.set_max_messages(max_messages);
        self
    }

    /// Sets the budget of every run.
    #[must_use]
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// Measures this agent's budget on `meter`, which its runs do not restart: a flow gives
    /// every executor the same meter (restarted when the flow starts), so the limits hold over
    /// all its steps together.
    pub fn share_budget_meter(&mut self, meter: BudgetMeter) {
        self.meter = meter;
        self.shared_meter = true;
    }

    /// The meter of this agent's budget.
    #[must_use]
    pub fn budget_meter(&self) -> &BudgetMeter {
        &self.meter
    }

    /// Tokens and cost of the current (or last) run's model calls so far.
    #[must_use]
    pub fn run_usage(&self) -> TokenUsage {
        *self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The budget limit reached so far, if any.
    #[must_use]
    pub fn budget_exceeded(&self) -> Option<BudgetExceeded> {
        self.meter.check(&self.budget)
    }

    /// Sets the stuck threshold.
    #[must_use]
    pub fn with_duplicate_threshold(mut self, threshold: usize) -> Self {
        self.duplicate_threshold = threshold;
        self
    }

    /// The current state.
    #[must_use]
    pub fn state(&self) -> AgentState {
        self.state
    }

    /// Moves the state machine to `to`, emitting [`AgentEvent::StateChanged`].
    ///
    /// # Errors
    ///
    /// [`AgentError::InvalidTransition`] when the state machine forbids it.
    pub fn set_state(&mut self, to: AgentState) -> Result<(), AgentError> {
        let from = self.state;
        if !from.can_transition_to(to) {
            return Err(AgentError::InvalidTransition { from, to });
        }
        if from != to {
            self.state = to;
            self.emit(AgentEvent::StateChanged { from, to });
        }
        Ok(())
    }

    /// Marks the running agent `FINISHED` for `reason`; the loop stops after the current step.
    ///
    /// # Errors
    ///
    /// [`AgentError::InvalidTransition`] when the agent is not running.
    pub fn finish(&mut self, reason: FinishReason) -> Result<(), AgentError> {
        self.set_state(AgentState::Finished)?;
        self.finish_reason = Some(reason);
        Ok(())
    }

    /// Why the last (or current) run finished, if it did.
    #[must_use]
    pub fn finish_reason(&self) -> Option<&FinishReason> {
        self.finish_reason.as_ref()
    }

    /// The session this agent's runs belong to (set by whoever keeps the session, such as
    /// `agent-session`); tools and hooks are told it.
    #[must_use]
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Sets [`BaseAgent::session`].
    pub fn set_session(&mut self, session: Option<String>) {
        self.session = session;
    }

    /// How the last run ended: set after its last step, before [`Agent::cleanup`] (which may
    /// read it); `None` before the first run ends and while a run is going.
    #[must_use]
    pub fn ending(&self) -> Option<&RunStatus> {
        self.ending.as_ref()
    }

    /// Returns a `FINISHED` or `ERROR` agent to `IDLE` so it can run again; memory is kept.
    ///
    /// # Errors
    ///
    /// [`AgentError::InvalidTransition`] while the agent is running.
    pub fn reset_state(&mut self) -> Result<(), AgentError> {
        self.set_state(AgentState::Idle)
    }

    /// The 1-based number of the step in progress (0 before the first step of a run).
    #[must_use]
    pub fn current_step(&self) -> u32 {
        self.current_step
    }

    /// The event bus; clone it (to hand it to an LLM client for retry events) or call
    /// [`EventBus::subscribe`].
    #[must_use]
    pub fn events(&self) -> &EventBus {
        &self.events
    }

    /// Emits an event to every subscriber. A [`AgentEvent::Thought`] is also what the run's
    /// [answer](RunOutcome::answer) is taken from.
    pub fn emit(&self, event: AgentEvent) {
        if let AgentEvent::Thought {
            content,
            tool_calls,
            ..
        } = &event
        {
            self.answers().record(content, tool_calls);
        }
        if let Some(call) = event.token_usage() {
            self.usage
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add_call(&call);
            self.meter.record(&event);
        }
        self.events.emit(event);
    }

    /// A handle on the cancellation token: cancelling it stops the current run between or
    /// inside steps. After a cancelled run, install a new token with
    /// [`BaseAgent::set_cancellation_token`] before running again.
    #[must_use]
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Replaces the cancellation token (for example with a child of an application-wide token).
    pub fn set_cancellation_token(&mut self, token: CancellationToken) {
        self.cancel = token;
    }

    /// Appends a message to memory (OpenManus's `update_memory`, for every role).
    pub fn update_memory(&mut self, message: Message) {
        if let Some(image) = &message.base64_image {
            self.emit(AgentEvent::Image {
                step: self.current_step,
                caption: message.text().to_owned(),
                image: image.clone(),
            });
        }
        self.memory.add_message(message);
    }

    /// The next-step prompt to use this step: the configured prompt, with [`STUCK_PROMPT`] and a
    /// newline in front of it while the agent is stuck. The sentence is never stacked.
    #[must_use]
    pub fn effective_next_step_prompt(&self) -> String {
        self.with_stuck_hint(&self.next_step_prompt)
    }

    /// `prompt`, with [`STUCK_PROMPT`] and a newline in front of it while the agent is stuck (for
    /// agents that replace the next-step prompt for a step, such as a browser-state prompt).
    #[must_use]
    pub fn with_stuck_hint(&self, prompt: &str) -> String {
        if self.stuck_hint {
            format!("{STUCK_PROMPT}\n{prompt}")
        } else {
            prompt.to_owned()
        }
    }

    /// Whether the stuck hint is active.
    #[must_use]
    pub fn is_stuck_hint_active(&self) -> bool {
        self.stuck_hint
    }

    /// Stuck detection (see [`StuckDetection`]).
    #[must_use]
    pub fn is_stuck(&self) -> bool {
        let messages = self.memory.messages();
        let Some((last, earlier)) = messages.split_last() else {
            return false;
        };
        if earlier.is_empty() {
            return false;
        }
        let threshold = self.duplicate_threshold.max(1);
        if !last.text().is_empty() {
            let repeats = earlier
                .iter()
                .filter(|m| m.role == Role::Assistant && m.content == last.content)
                .count();
            if repeats >= threshold {
                return true;
            }
        }
        if self.stuck_detection == StuckDetection::ContentAndToolCalls {
            let mut assistants = messages.iter().rev().filter(|m| m.role == Role::Assistant);
            if let Some(newest) = assistants.next()
                && newest.has_tool_calls()
            {
                let signature = call_signature(newest);
                let repeats = assistants
                    .take_while(|m| m.has_tool_calls() && call_signature(m) == signature)
                    .count();
                return repeats >= threshold;
            }
        }
        false
    }

    /// Turns the stuck hint on (see [`BaseAgent::effective_next_step_prompt`]).
    pub fn handle_stuck_state(&mut self) {
        if !self.stuck_hint {
            // Info, not a warning: a stuck loop is part of a run, reported to every front end
            // by the `Stuck` event; a warning would print it twice in the live view.
            info!(agent = %self.name, "agent detected stuck state; adding a change-of-strategy hint");
        }
        self.stuck_hint = true;
        self.emit(AgentEvent::Stuck {
            step: self.current_step,
        });
    }

    /// Reports calls closed by [`Memory::close_open_tool_calls`] as finished, unsuccessfully.
    fn emit_closed_calls(
        &self,
        step: u32,
        closed: &[ToolCall],
        observation: fn(&ToolCall) -> String,
    ) {
        for call in closed {
            self.emit(AgentEvent::ToolCallFinished {
                step,
                call_id: call.id.clone(),
                name: call.function.name.clone(),
                observation: observation(call),
                success: false,
            });
        }
    }

    /// Replaces the event bus (for example with one shared by an application, or the bus an
    /// [`LlmClient`](https://docs.rs/agent-llm) reports retries on). Existing subscribers of the
    /// old bus stop receiving events.
    pub fn set_event_bus(&mut self, events: EventBus) {
        self.events = events;
    }

    fn transition_or_log(&mut self, to: AgentState) {
        if let Err(error) = self.set_state(to) {
            warn!(%error, "state transition refused");
        }
    }

    fn begin_run(&mut self) {
        self.current_step = 0;
        self.finish_reason = None;
        self.ending = None;
        self.stuck_hint = false;
        *self.answers() = AnswerTracker::default();
        *self.usage.lock().unwrap_or_else(PoisonError::into_inner) = TokenUsage::default();
        if !self.shared_meter {
            self.meter.restart();
        }
    }

    fn answers(&self) -> std::sync::MutexGuard<'_, AnswerTracker> {
        self.answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn call_signature(message: &Message) -> (&str, Vec<(&str, &str)>) {
    (
        message.text(),
        message
            .calls()
            .iter()
            .map(|c| (c.function.name.as_str(), c.function.arguments.as_str()))
            .collect(),
    )
}

/// An agent: something with a [`BaseAgent`] and a `step()`. [`Agent::run`] is the loop and is
/// provided; implementors write `step` (or, one layer up, `think` and `act`).
#[async_trait]
pub trait Agent: Send {
    /// The shared agent state.
    fn base(&self) -> &BaseAgent;

    /// The shared agent state, mutably.
    fn base_mut(&mut self) -> &mut BaseAgent;

    /// Runs one step and returns its result line. An `Err` fails the run (`ERROR`).
    async fn step(&mut self) -> Result<String, AgentError>;

    /// Releases resources at the end of every run (success, error or cancellation). Errors are
    /// the implementor's to log; they never fail the run.
    async fn cleanup(&mut self) {}

    /// Ends the agent's life, not just a run: disconnects MCP servers, closes the browser, stops
    /// the tools' processes. Front ends call it once, on every exit path (finish, error, cancel,
    /// the end of a session); the agent should not run again afterwards. Errors are the
    /// implementor's to log. The default does nothing.
    async fn shutdown(&mut self) {}

    /// The tools the model may call, as it is offered them (empty for an agent without tools).
    /// Front ends describe the agent with them (the A2A Agent Card's skills).
    fn tool_definitions(&self) -> Vec<crate::ToolDefinition> {
        Vec::new()
    }

    /// The provider and model the agent asks, for its telemetry span (`gen_ai.provider.name`,
    /// `gen_ai.request.model`); `None` (the default) for an agent without a model.
    fn model_labels(&self) -> Option<ModelLabels<'_>> {
        None
    }

    /// Whether the agent is repeating itself; checked after every step.
    fn is_stuck(&self) -> bool {
        self.base().is_stuck()
    }

    /// Called when [`Agent::is_stuck`] is true.
    fn handle_stuck_state(&mut self) {
        self.base_mut().handle_stuck_state();
    }

    /// Runs the agent on `request` until it finishes, runs out of steps, fails or is cancelled.
    ///
    /// Cancel a run with the agent's [cancellation token](BaseAgent::cancellation_token): the
    /// loop then closes open tool calls and cleans up. If the future is dropped instead (a
    /// `timeout`, an aborted task), cleanup does not run and the agent stays `RUNNING`: call
    /// [`BaseAgent::reset_state`] before the next run, which answers any calls left open.
    ///
    /// # Errors
    ///
    /// [`AgentError::InvalidState`] when the agent is not `IDLE`. Failures *during* the run are
    /// reported in the outcome ([`RunStatus::Failed`]), together with the steps already done.
    async fn run(&mut self, request: Option<String>) -> Result<RunOutcome, AgentError> {
        run_loop(self, request).await
    }
}

/// The run loop behind [`Agent::run`], usable by agents that override `run` and still want the
/// standard loop around their own set-up or tear-down.
///
/// # Errors
///
/// [`AgentError::InvalidState`] when the agent is not `IDLE`.
pub async fn run_loop<A: Agent + ?Sized>(
    agent: &mut A,
    request: Option<String>,
) -> Result<RunOutcome, AgentError> {
    let state = agent.base().state();
    if state != AgentState::Idle {
        return Err(AgentError::InvalidState(state));
    }
    let invoke = spans::invoke_agent(&spans::RunLabels {
        name: &agent.base().name,
        description: agent.base().description.as_deref(),
        session: agent.base().session(),
        model: agent.model_labels(),
    });
    let span = info_span!("run", agent = %agent.base().name);
    // The run's GenAI span is the parent of its model calls and tool calls, without being
    // entered at every poll of the run (`agent_telemetry::scope`).
    let outcome =
        agent_telemetry::scope::within(invoke.clone(), run_steps(agent, request).instrument(span))
            .await;
    spans::record_outcome(&invoke, &outcome);
    outcome
}

/// The loop of [`run_loop`], inside its spans.
async fn run_steps<A: Agent + ?Sized>(
    agent: &mut A,
    request: Option<String>,
) -> Result<RunOutcome, AgentError> {
    let base = agent.base_mut();
    base.begin_run();
    let token = base.cancellation_token();
    if token.is_cancelled() {
        // A token that is already cancelled runs nothing and leaves memory as it is.
        base.emit(AgentEvent::Finished {
            status: RunStatus::Cancelled.to_string(),
            steps: 0,
            usage: TokenUsage::default(),
        });
        return Ok(RunOutcome {
            status: RunStatus::Cancelled,
            steps: Vec::new(),
            final_state: base.state(),
            answer: None,
            usage: TokenUsage::default(),
        });
    }
    // A run whose future was dropped mid-step left calls unanswered: answer them first.
    base.memory.close_open_tool_calls(cancelled_observation);
    let request = request.filter(|r| !r.is_empty());
    base.emit(AgentEvent::RunStarted {
        agent: base.name.clone(),
        request: request.clone(),
    });
    if let Some(request) = request {
        base.memory.add_task(Message::user_message(request));
    }
    base.set_state(AgentState::Running)?;
    let deadline = base
        .budget
        .max_duration
        .and_then(|max| base.meter.started().checked_add(max));

    let mut steps = Vec::new();
    let mut status = None;
    while agent.base().current_step < agent.base().max_steps
        && agent.base().state() == AgentState::Running
    {
        if token.is_cancelled() {
            status = Some(RunStatus::Cancelled);
            break;
        }
        let base = agent.base_mut();
        if let Some(exceeded) = base.budget_exceeded() {
            info!(%exceeded, "budget reached; finishing");
            base.finish(FinishReason::Budget(exceeded))?;
            break;
        }
        base.current_step += 1;
        let step = base.current_step;
        let max_steps = base.max_steps;
        info!("Executing step {step}/{max_steps}");
        base.emit(AgentEvent::StepStarted { step, max_steps });

        let out_of_time = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
                None => std::future::pending().await,
            }
        };
        let result = tokio::select! {
            biased;
            () = token.cancelled() => None,
            () = out_of_time => Some(None),
            result = agent.step().instrument(info_span!("step", step)) => Some(Some(result)),
        };
        match result {
            Some(None) => {
                let base = agent.base_mut();
                let closed = base.memory.close_open_tool_calls(out_of_time_observation);
                base.emit_closed_calls(step, &closed, out_of_time_observation);
                let elapsed = base.meter.started().elapsed();
                let exceeded = base.budget.time_exceeded(elapsed);
                info!(
                    step,
                    closed = closed.len(),
                    "time budget ran out inside a step"
                );
                if let Some(exceeded) = exceeded
                    && base.state() == AgentState::Running
                {
                    base.finish(FinishReason::Budget(exceeded))?;
                }
                break;
            }
            None => {
                let base = agent.base_mut();
                let closed = base.memory.close_open_tool_calls(cancelled_observation);
                base.emit_closed_calls(step, &closed, cancelled_observation);
                info!(step, closed = closed.len(), "run cancelled inside a step");
                status = Some(RunStatus::Cancelled);
                break;
            }
            Some(Some(Err(error))) => {
                warn!(step, %error, "step failed");
                // Only a running agent moves to ERROR; a step that already finished the
                // agent and then failed still reports the failure.
                let base = agent.base_mut();
                // Calls the failed step started but never answered get a result, so the
                // conversation stays valid for a later run.
                let closed = base.memory.close_open_tool_calls(failed_observation);
                base.emit_closed_calls(step, &closed, failed_observation);
                if base.state() == AgentState::Running {
                    base.transition_or_log(AgentState::Error);
                }
                status = Some(RunStatus::Failed(Arc::new(error)));
                break;
            }
            Some(Some(Ok(result))) => {
                if agent.is_stuck() {
                    agent.handle_stuck_state();
                } else {
                    agent.base_mut().stuck_hint = false;
                }
                agent.base().emit(AgentEvent::StepFinished {
                    step,
                    result: result.clone(),
                });
                steps.push(StepRecord { step, result });
            }
        }
    }

    let base = agent.base_mut();
    let status = match status {
        Some(status) => status,
        None if base.state() == AgentState::Finished => RunStatus::Finished(
            base.finish_reason
                .clone()
                .unwrap_or_else(|| FinishReason::Other("finished".to_owned())),
        ),
        None if base.state() == AgentState::Running => RunStatus::MaxSteps(base.max_steps),
        // A step moved the state machine itself (to ERROR or IDLE) without failing.
        None => RunStatus::Failed(Arc::new(AgentError::step(format!(
            "a step left the agent in state {} without finishing it",
            base.state()
        )))),
    };
    if matches!(status, RunStatus::MaxSteps(_) | RunStatus::Cancelled) {
        base.transition_or_log(AgentState::Idle);
    }
    base.ending = Some(status.clone());
    agent.cleanup().await;
    let base = agent.base();
    let usage = base.run_usage();
    base.emit(AgentEvent::Finished {
        status: status.to_string(),
        steps: u32::try_from(steps.len()).unwrap_or(u32::MAX),
        usage,
    });
    let answer = base.answers().answer(&status);
    Ok(RunOutcome {
        status,
        steps,
        final_state: base.state(),
        answer,
        usage,
    })
}
