// Why one file past 700 lines: think and act (the ReAct steps) and the `Agent` impl work on
// the private state of `ToolCallCore` — memory, tools, the special tools, the events — which a
// split would have to open to the whole crate; the policies (compaction, trimming, truncation,
// hooks) are modules of their own.

//! ToolCallAgent: think asks the model which tools to call, act runs them.

use std::sync::Arc;

use agent_core::{
    Agent, AgentError, AgentEvent, BaseAgent, EventBus, FinishReason, Message, ModelLabels,
    STUCK_PROMPT, ToolCall, ToolChoice,
};
use agent_llm::{ChatModel, ChatRequest, LlmError};
use agent_react::ReActAgent;
use agent_tools::{
    CreateChatCompletion, Progress, Terminate, Tool, ToolCollection, ToolContext, ToolResult,
};
use async_trait::async_trait;
use serde_json::Value;
use tracing::{debug, info, warn};

use crate::compaction::{Compaction, compact_if_needed, estimate_tokens, window_of};
use crate::estimate::tokens_within;
use crate::gate::{Gated, PermissionRecord, RunEnd, ToolGate, Verdict};
use crate::hooks::{BeforeThink, ToolCallHooks};
use crate::policy::{
    AutoTextReply, NextStepPromptMode, Policies, cap_observation_bytes, truncate_observation,
};
use crate::spans;
use crate::trimming::TOOL_IMAGE_PREFIX;
use crate::usage::usage_event;

/// Default name of a plain ToolCallAgent.
pub const DEFAULT_NAME: &str = "toolcall";
/// Default description of a plain ToolCallAgent.
pub const DEFAULT_DESCRIPTION: &str = "an agent that can execute tool calls.";
/// Default system prompt of a plain ToolCallAgent.
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are an agent that completes tasks by calling the tools available to you.";
/// Default next-step prompt of a plain ToolCallAgent.
pub const DEFAULT_NEXT_STEP_PROMPT: &str =
    "When the task is done, or cannot be taken any further, call the `terminate` tool.";
/// Default step budget of a plain ToolCallAgent (OpenManus's 30): the generic fallback of an
/// agent built on [`ToolCallAgent::new`] that sets none. Each agent kind built on it declares
/// its own budget beside the kind (`agents::MANUS_MAX_STEPS`, `agents::SWE_MAX_STEPS`,
/// `agent_mcp::MCP_AGENT_MAX_STEPS`, ...) and the agent factory reads it from there.
pub const DEFAULT_MAX_STEPS: u32 = 30;
pub use agent_core::TOOL_CALL_REQUIRED;
/// Result of `act()` when there is no tool call and no text.
pub const NO_CONTENT: &str = "No content or commands to execute";

/// Everything a ToolCallAgent holds except its hooks; hooks receive it mutably.
pub struct ToolCallCore {
    /// The BaseAgent layer.
    pub base: BaseAgent,
    /// The model.
    pub llm: Arc<dyn ChatModel>,
    /// The tools offered to the model; may change at run time.
    pub tools: ToolCollection,
    /// `tool_choice` sent with every request.
    pub tool_choice: ToolChoice,
    /// Names of the tools that end the run (compared ignoring case).
    pub special_tool_names: Vec<String>,
    /// Observations longer than this many characters are truncated (`None` or 0: never).
    pub max_observe: Option<usize>,
    /// Behaviour policies.
    pub policies: Policies,
    /// How requests are kept within the model's context window.
    pub compaction: Compaction,
    /// Clean the tools up at the end of every run (OpenManus). `false` keeps them (a shell's
    /// directory and variables, a Python interpreter's state) across the runs of a multi-turn
    /// session; [`Agent::shutdown`] cleans them up when the session ends.
    pub cleanup_tools_each_run: bool,
    /// Decides what a call may do beyond its confinement (the approval policy); `None` (the
    /// default) runs every call as its tool is.
    pub gate: Option<Arc<dyn ToolGate>>,
    tool_calls: Vec<ToolCall>,
    /// The file operations of the calls in memory, read once each (request trimming).
    file_ops: crate::trimming::FileOps,
    /// The size bound of the tool list the agent sends (the compaction check).
    tools_bound: crate::estimate::ToolsBound,
}

impl std::fmt::Debug for ToolCallCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCallCore")
            .field("base", &self.base)
            .field("model", &self.llm.model_name())
            .field("tools", &self.tools)
            .field("tool_choice", &self.tool_choice)
            .field("special_tool_names", &self.special_tool_names)
            .field("max_observe", &self.max_observe)
            .field("policies", &self.policies)
            .field("compaction", &self.compaction)
            .field("gated", &self.gate.is_some())
            .finish_non_exhaustive()
    }
}

impl ToolCallCore {
    /// Whether `name` is in `special_tool_names`, ignoring case.
    #[must_use]
    pub fn is_special_tool(&self, name: &str) -> bool {
        let name = name.to_lowercase();
        self.special_tool_names
            .iter()
            .any(|special| special.to_lowercase() == name)
    }

    /// The tool calls chosen by the last `think()` and not yet executed.
    #[must_use]
    pub fn pending_tool_calls(&self) -> &[ToolCall] {
        &self.tool_calls
    }
}

/// The outcome of one tool call, before it is stored.
struct Execution {
    observation: String,
    /// The tool's result, when the tool ran and returned one.
    result: Option<ToolResult>,
    /// What the gate decided on the way.
    records: Vec<PermissionRecord>,
}

impl Execution {
    fn error(observation: String) -> Self {
        Self {
            observation,
            result: None,
            records: Vec::new(),
        }
    }

    fn success(&self) -> bool {
        self.result.as_ref().is_some_and(|r| !r.is_error())
    }
}

/// The ToolCallAgent of OpenManus: a ReAct agent whose `think()` asks the model which tools to
/// call (with every tool's schema and the `tool_choice`) and whose `act()` runs them and stores
/// the observations. `H` supplies the hooks a specialised agent needs; `()` is none.
#[derive(Debug)]
pub struct ToolCallAgent<H = ()> {
    core: ToolCallCore,
    hooks: H,
}

impl ToolCallAgent<()> {
    /// A ToolCallAgent with OpenManus's defaults: name `toolcall`, tools
    /// `create_chat_completion` and `terminate` (a fresh set per agent), `tool_choice` auto,
    /// special tool `terminate`, 30 steps, no observation limit, and the default [`Policies`].
    pub fn new(llm: Arc<dyn ChatModel>) -> Self {
        let mut tools = ToolCollection::new();
        tools.add_tool(CreateChatCompletion::new());
        tools.add_tool(Terminate);
        Self {
            core: ToolCallCore {
                base: BaseAgent::new(DEFAULT_NAME)
                    .with_description(DEFAULT_DESCRIPTION)
                    .with_system_prompt(DEFAULT_SYSTEM_PROMPT)
                    .with_next_step_prompt(DEFAULT_NEXT_STEP_PROMPT)
                    .with_max_steps(DEFAULT_MAX_STEPS),
                llm,
                tools,
                tool_choice: ToolChoice::Auto,
                special_tool_names: vec![agent_tools::TERMINATE.to_owned()],
                max_observe: None,
                policies: Policies::default(),
                compaction: Compaction::default(),
                cleanup_tools_each_run: true,
                gate: None,
                tool_calls: Vec::new(),
                file_ops: crate::trimming::FileOps::default(),
                tools_bound: crate::estimate::ToolsBound::default(),
            },
            hooks: (),
        }
    }
}

impl<H: ToolCallHooks> ToolCallAgent<H> {
    /// The same agent with other hooks.
    pub fn with_hooks<H2: ToolCallHooks>(self, hooks: H2) -> ToolCallAgent<H2> {
        ToolCallAgent {
            core: self.core,
            hooks,
        }
    }

    /// Sets the name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.core.base.name = name.into();
        self
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.core.base.description = Some(description.into());
        self
    }

    /// Sets the system prompt (empty: none).
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.core.base.system_prompt = prompt.into();
        self
    }

    /// Sets the next-step prompt (empty: none).
    #[must_use]
    pub fn with_next_step_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.core.base.next_step_prompt = prompt.into();
        self
    }

    /// Replaces the whole tool set.
    #[must_use]
    pub fn with_tools(mut self, tools: ToolCollection) -> Self {
        self.core.tools = tools;
        self
    }

    /// Adds one tool (skipped with a warning if the name exists).
    #[must_use]
    pub fn with_tool(mut self, tool: impl Tool + 'static) -> Self {
        self.core.tools.add_tool(tool);
        self
    }

    /// Sets `tool_choice`.
    #[must_use]
    pub fn with_tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.core.tool_choice = tool_choice;
        self
    }

    /// Sets the special tool names.
    #[must_use]
    pub fn with_special_tool_names(
        mut self,
        names: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.core.special_tool_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the step budget.
    #[must_use]
    pub fn with_max_steps(mut self, max_steps: u32) -> Self {
        self.core.base.max_steps = max_steps;
        self
    }

    /// Sets the observation limit in characters.
    #[must_use]
    pub fn with_max_observe(mut self, max_observe: usize) -> Self {
        self.core.max_observe = Some(max_observe);
        self
    }

    /// Sets the memory cap.
    #[must_use]
    pub fn with_max_messages(mut self, max_messages: usize) -> Self {
        self.core.base.memory.set_max_messages(max_messages);
        self
    }

    /// Sets the behaviour policies.
    #[must_use]
    pub fn with_policies(mut self, policies: Policies) -> Self {
        self.core.policies = policies;
        self
    }

    /// Sets how requests are kept within the context window.
    #[must_use]
    pub fn with_compaction(mut self, compaction: Compaction) -> Self {
        self.core.compaction = compaction;
        self
    }

    /// Puts `gate` around every tool call (see [`ToolGate`]).
    #[must_use]
    pub fn with_gate(mut self, gate: Arc<dyn ToolGate>) -> Self {
        self.core.gate = Some(gate);
        self
    }

    /// Sets the limits of every run (tokens, cost, wall time).
    #[must_use]
    pub fn with_budget(mut self, budget: agent_core::Budget) -> Self {
        self.core.base.budget = budget;
        self
    }

    /// Everything but the hooks.
    #[must_use]
    pub fn core(&self) -> &ToolCallCore {
        &self.core
    }

    /// Everything but the hooks, mutably.
    pub fn core_mut(&mut self) -> &mut ToolCallCore {
        &mut self.core
    }

    /// The hooks.
    #[must_use]
    pub fn hooks(&self) -> &H {
        &self.hooks
    }

    /// The hooks, mutably.
    pub fn hooks_mut(&mut self) -> &mut H {
        &mut self.hooks
    }

    /// The core and the hooks, mutably at once: to call a hook method that takes the core,
    /// such as `agent.parts_mut()` then `hooks.shutdown(core)`.
    pub fn parts_mut(&mut self) -> (&mut ToolCallCore, &mut H) {
        (&mut self.core, &mut self.hooks)
    }

    /// Keeps the tools alive between runs (see [`ToolCallCore::cleanup_tools_each_run`]).
    #[must_use]
    pub fn with_tools_kept_between_runs(mut self) -> Self {
        self.core.cleanup_tools_each_run = false;
        self
    }

    /// Cleans every tool up now (at the end of a session whose tools were kept between runs).
    pub async fn cleanup_tools(&mut self) {
        self.core.tools.cleanup_all().await;
    }

    /// The conversation so far.
    #[must_use]
    pub fn messages(&self) -> &[Message] {
        self.core.base.memory.messages()
    }

    /// Runs one tool call and returns its observation. Every failure becomes an observation for
    /// the model ("errors are observations").
    async fn execute_tool(&mut self, call: &ToolCall) -> Execution {
        let name = call.function.name.as_str();
        if name.is_empty() {
            return Execution::error("Error: Invalid command format".to_owned());
        }
        if !self.core.tools.contains(name) {
            return Execution::error(format!("Error: Unknown tool '{name}'"));
        }
        let raw = if call.function.arguments.is_empty() {
            "{}"
        } else {
            call.function.arguments.as_str()
        };
        let Ok(args) = serde_json::from_str::<Value>(raw) else {
            return Execution::error(format!(
                "Error: Error parsing arguments for {name}: Invalid JSON format"
            ));
        };
        info!(tool = name, "activating tool");
        let progress = progress_events(
            self.core.base.events().clone(),
            self.core.base.current_step(),
            call,
        );
        // However this returns, the call's reports end with it: none follows its end event.
        let _closed_at_the_end = ClosedOnDrop(progress.clone());
        let ctx = ToolContext::new(self.core.base.cancellation_token(), call.id.clone())
            .with_session(self.core.base.session())
            .with_progress(progress);
        let gate = self.core.gate.clone();
        let verdict = match &gate {
            Some(gate) => gate.before(call, &args, &ctx).await,
            None => Verdict::Run(Vec::new()),
        };
        let (args, mut records) = match verdict {
            Verdict::Answered(gated) => return observed(name, gated),
            Verdict::Run(records) => (args, records),
            Verdict::RunWith(changed, records) => (changed, records),
        };
        let result = match self.core.tools.execute(name, args.clone(), &ctx).await {
            Ok(result) => result,
            Err(error) => {
                warn!(tool = name, %error, "tool raised an error");
                let mut execution = Execution::error(format!(
                    "Error: ⚠️ Tool '{name}' encountered a problem: {error}"
                ));
                execution.records = records;
                return execution;
            }
        };
        let mut gated = match &gate {
            Some(gate) => gate.after(call, &args, result, &ctx).await,
            None => Gated::untouched(result),
        };
        records.append(&mut gated.records);
        gated.records = records;
        observed(name, gated)
    }

    fn handle_special_tool(&mut self, name: &str, result: &ToolResult) -> Result<(), AgentError> {
        if !self.hooks.is_special_tool(&self.core, name) {
            return Ok(());
        }
        if self.hooks.should_finish_execution(&self.core, name, result) {
            info!(tool = name, "special tool has completed the task");
            self.core.base.finish(FinishReason::SpecialTool {
                name: name.to_owned(),
            })?;
        }
        Ok(())
    }

    /// The observation as the model will see it: `max_observe` characters (when set), then at
    /// most `max_observation_bytes` bytes whatever `max_observe` is.
    fn observe(&self, observation: String) -> String {
        let observation = match self.core.max_observe {
            Some(max) if max > 0 => {
                truncate_observation(observation, max, self.core.policies.observation_truncation)
            }
            _ => observation,
        };
        cap_observation_bytes(observation, self.core.policies.max_observation_bytes)
    }
}

/// A call's reports as [`AgentEvent::ToolProgress`] events on `events`.
/// Closes a call's [`Progress`] when dropped.
struct ClosedOnDrop(Progress);

impl Drop for ClosedOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

fn progress_events(events: EventBus, step: u32, call: &ToolCall) -> Progress {
    let (call_id, name) = (call.id.clone(), call.function.name.clone());
    Progress::new(move |message| {
        events.emit(AgentEvent::ToolProgress {
            step,
            call_id: call_id.clone(),
            name: name.clone(),
            message: message.to_owned(),
        });
    })
}

/// The observation of a call's gated result.
fn observed(name: &str, Gated { result, records }: Gated) -> Execution {
    let observation = if result.is_empty() {
        format!("Cmd `{name}` completed with no output")
    } else {
        format!("Observed output of cmd `{name}` executed:\n{result}")
    };
    Execution {
        observation,
        result: Some(result),
        records,
    }
}

/// The request of one step: the system prompt, memory (as the trimming policies send it), the
/// ephemeral next-step prompt, the tools.
fn build_request(core: &ToolCallCore, ephemeral: Option<&Message>) -> ChatRequest {
    let memory = &core.base.memory;
    let mut messages = crate::trimming::request_messages_with(
        memory.messages(),
        memory.task_index(),
        core.policies.request_trimming,
        &core.file_ops,
    );
    messages.extend(ephemeral.cloned());
    let system = if core.base.system_prompt.is_empty() {
        Vec::new()
    } else {
        vec![Message::system_message(&core.base.system_prompt)]
    };
    ChatRequest::new(messages)
        .with_system(system)
        .with_tools(core.tools.shared_params(), core.tool_choice)
}

/// Ends the run on a reply the model declined (a refusal, a content filter's stop): its text,
/// if any, is remembered and shown, its tool calls (cut off or not) are not run, and the run
/// finishes [`FinishReason::Refused`] saying what the model said.
fn refuse(
    core: &mut ToolCallCore,
    step: u32,
    content: String,
    dropped_calls: usize,
) -> Result<bool, AgentError> {
    if dropped_calls > 0 {
        warn!(
            calls = dropped_calls,
            "the declined reply's tool calls are not run"
        );
    }
    text_reply(core, step, &content);
    let message = if content.trim().is_empty() {
        "the provider's content filter stopped the reply".to_owned()
    } else {
        let message = content.trim().to_owned();
        core.base.update_memory(Message::assistant_message(content));
        message
    };
    warn!(%message, "the model declined the task; ending the run");
    core.base.finish(FinishReason::Refused { message })?;
    Ok(false)
}

/// A reply taken as text only (its calls, if any, not run): no calls pending, and its thought
/// emitted without calls. What of it is remembered is the caller's choice.
fn text_reply(core: &mut ToolCallCore, step: u32, content: &str) {
    core.tool_calls.clear();
    core.base.emit(AgentEvent::Thought {
        step,
        content: content.to_owned(),
        tool_calls: Vec::new(),
    });
}

/// A hook's prompt with the stuck hint in front exactly when the agent is stuck: a hint the hook
/// put there itself is taken off first, so the model never reads it twice.
fn hinted(base: &BaseAgent, prompt: &str) -> String {
    let plain = prompt
        .strip_prefix(STUCK_PROMPT)
        .and_then(|rest| rest.strip_prefix('\n'))
        .unwrap_or(prompt);
    base.with_stuck_hint(plain)
}

#[async_trait]
impl<H: ToolCallHooks> ReActAgent for ToolCallAgent<H> {
    async fn think(&mut self) -> Result<bool, AgentError> {
        let prompt = match self.hooks.before_think(&mut self.core).await? {
            BeforeThink::Skip => return Ok(false),
            BeforeThink::ProceedWithPrompt(prompt) => hinted(&self.core.base, &prompt),
            BeforeThink::Proceed => self.core.base.effective_next_step_prompt(),
        };
        let core = &mut self.core;
        let mut ephemeral = None;
        if !prompt.is_empty() {
            match core.policies.next_step_prompt {
                NextStepPromptMode::AppendToMemory => {
                    core.base.update_memory(Message::user_message(prompt));
                }
                NextStepPromptMode::Ephemeral => ephemeral = Some(Message::user_message(prompt)),
            }
        }
        let mut request = build_request(core, ephemeral.as_ref());
        let checked = compact_if_needed(
            &core.compaction,
            &core.llm,
            &mut core.base,
            &request,
            &core.tools_bound,
        )
        .await;
        let mut estimate = checked.estimate;
        if let Some(compacted) = checked.compacted {
            request = build_request(core, ephemeral.as_ref());
            let after = estimate_tokens(&request);
            compacted.report(&core.base, after);
            estimate = Some(after);
        }
        // Never sent past the window: a request compaction could not bring under it ends the
        // run here, saying why, rather than fail at the provider (or be cut there silently).
        if let Some(window) = window_of(&core.compaction, &core.llm) {
            let tokens = match estimate {
                Some(tokens) if tokens <= window => tokens,
                _ => tokens_within(&request, window, &core.tools_bound),
            };
            if tokens > window {
                let message = format!(
                    "the next request would be about {tokens} tokens, past the model's context \
                     window of {window}, and compaction cannot make room"
                );
                warn!(
                    tokens,
                    window, "the request does not fit the context window; ending"
                );
                core.base.update_memory(Message::assistant_message(format!(
                    "Maximum token limit reached, cannot continue execution: {message}"
                )));
                core.base.finish(FinishReason::TokenLimit { message })?;
                return Ok(false);
            }
        }

        let response = match core.llm.complete(request).await {
            Ok(response) => response,
            Err(error @ LlmError::TokenLimitExceeded(_)) => {
                info!(%error, "token limit reached; finishing");
                core.base.update_memory(Message::assistant_message(format!(
                    "Maximum token limit reached, cannot continue execution: {error}"
                )));
                core.base.finish(FinishReason::TokenLimit {
                    message: error.to_string(),
                })?;
                return Ok(false);
            }
            Err(error) => return Err(AgentError::Model(Box::new(error))),
        };
        let step = core.base.current_step();
        if let Some(usage) = response.usage {
            core.base.emit(usage_event(&usage, core.llm.price()));
        }
        let refused = response.refused();
        let content = response.content.unwrap_or_default();
        let calls = response.tool_calls;
        let name = core.base.name.clone();
        info!("✨ {name}'s thoughts: {content}");
        info!("🛠️ {name} selected {} tools to use", calls.len());
        for call in &calls {
            debug!(tool = %call.function.name, arguments = %call.function.arguments, "tool call requested");
        }

        if refused {
            return refuse(core, step, content, calls.len());
        }
        if core.tool_choice == ToolChoice::None {
            if !calls.is_empty() {
                // OpenManus executes these anyway and stores tool results with no matching
                // assistant call (spec §13 W19); they are dropped instead.
                warn!(
                    "🤔 {name} tried to use tools when they weren't available; ignoring {} call(s)",
                    calls.len()
                );
            }
            text_reply(core, step, &content);
            if content.is_empty() {
                return Ok(false);
            }
            core.base.update_memory(Message::assistant_message(content));
            return Ok(true);
        }

        core.base.emit(AgentEvent::Thought {
            step,
            content: content.clone(),
            tool_calls: calls.clone(),
        });
        let has_text = !content.is_empty();
        if !calls.is_empty() {
            core.base
                .update_memory(Message::from_tool_calls(calls.clone(), content));
        } else if has_text {
            core.base.update_memory(Message::assistant_message(content));
        }
        // An empty reply adds nothing to memory: strict providers reject empty assistant turns.
        let has_calls = !calls.is_empty();
        core.tool_calls = calls;
        Ok(match core.tool_choice {
            ToolChoice::Required if !has_calls => true,
            ToolChoice::Auto if !has_calls => {
                if has_text && core.policies.auto_text_reply == AutoTextReply::Finish {
                    core.base
                        .finish(FinishReason::Other("text reply".to_owned()))?;
                }
                has_text
            }
            _ => has_calls,
        })
    }

    async fn act(&mut self) -> Result<String, AgentError> {
        let calls = std::mem::take(&mut self.core.tool_calls);
        if calls.is_empty() {
            if self.core.tool_choice == ToolChoice::Required {
                return Err(AgentError::ToolCallsRequired);
            }
            return Ok(self
                .core
                .base
                .memory
                .last()
                .map(Message::text)
                .filter(|text| !text.is_empty())
                .unwrap_or(NO_CONTENT)
                .to_owned());
        }
        let step = self.core.base.current_step();
        let mut results = Vec::with_capacity(calls.len());
        let mut images = Vec::new();
        for call in calls {
            self.core.base.emit(AgentEvent::ToolCallStarted {
                step,
                call: call.clone(),
            });
            let span = spans::execute_tool(&call);
            // The parent of the spans made in the tool (a sub-agent's run), and the trace a
            // tool carries on to another process (`agent_telemetry::scope`).
            let execution =
                agent_telemetry::scope::within(span.clone(), self.execute_tool(&call)).await;
            spans::record_execution(
                &span,
                &execution.records,
                &execution.observation,
                execution.success(),
            );
            drop(span);
            for record in &execution.records {
                self.core.base.emit(AgentEvent::Permission {
                    step,
                    call_id: call.id.clone(),
                    name: call.function.name.clone(),
                    request: record.request.clone(),
                    decision: record.decision,
                    by: record.by,
                    detail: record.detail.clone(),
                });
            }
            let success = execution.success();
            let observation = self.observe(execution.observation);
            info!(tool = %call.function.name, "🎯 tool completed; result: {observation}");
            self.core.base.emit(AgentEvent::ToolCallFinished {
                step,
                call_id: call.id.clone(),
                name: call.function.name.clone(),
                observation: observation.clone(),
                success,
            });
            // The observation is stored before any hook runs, so a failing hook cannot lose
            // the result of a call that did run.
            self.core.base.update_memory(Message::tool_message(
                observation.clone(),
                &call.function.name,
                &call.id,
            ));
            results.push(observation);
            if let Some(result) = execution.result {
                self.handle_special_tool(&call.function.name, &result)?;
                self.hooks
                    .after_tool(&mut self.core, &call, &result)
                    .await?;
                if let Some(image) = result.image() {
                    images.push(Message::user_message_with_image(
                        format!("{TOOL_IMAGE_PREFIX}{}:", call.function.name),
                        image,
                    ));
                }
            }
        }
        self.core.base.memory.add_messages(images);
        Ok(results.join("\n\n"))
    }
}

#[async_trait]
impl<H: ToolCallHooks> Agent for ToolCallAgent<H> {
    fn base(&self) -> &BaseAgent {
        &self.core.base
    }

    fn base_mut(&mut self) -> &mut BaseAgent {
        &mut self.core.base
    }

    async fn step(&mut self) -> Result<String, AgentError> {
        agent_react::step(self).await
    }

    fn model_labels(&self) -> Option<ModelLabels<'_>> {
        Some(ModelLabels {
            provider: self.core.llm.provider_name(),
            model: self.core.llm.model_name(),
        })
    }

    async fn cleanup(&mut self) {
        self.core.tool_calls.clear();
        if let (Some(gate), Some(ending)) = (&self.core.gate, self.core.base.ending()) {
            let end = RunEnd {
                status: ending.to_string(),
                steps: self.core.base.current_step(),
                session: self.core.base.session().map(str::to_owned),
            };
            gate.run_ended(&end).await;
        }
        self.hooks.cleanup(&mut self.core).await;
        if self.core.cleanup_tools_each_run {
            self.core.tools.cleanup_all().await;
        }
    }

    /// The hooks' end ([`ToolCallHooks::shutdown`]: MCP servers disconnected), then every
    /// tool's clean-up (the shell and the interpreter stop, the browser closes), whether or not
    /// tools were kept between runs.
    async fn shutdown(&mut self) {
        self.core.tool_calls.clear();
        self.hooks.shutdown(&mut self.core).await;
        self.core.tools.cleanup_all().await;
    }

    fn tool_definitions(&self) -> Vec<agent_core::ToolDefinition> {
        self.core.tools.to_params().to_vec()
    }
}
