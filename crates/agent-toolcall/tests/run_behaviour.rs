//! ToolCallAgent over whole runs: next-step prompt policies, token limits, model failures and the
//! state machine, observation truncation, cleanup, hooks, stuck detection, events and
//! cancellation.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    Agent, AgentError, AgentEvent, AgentState, FinishReason, Message, Role, RunStatus,
    STUCK_PROMPT, ToolChoice, check_tool_pairing,
};
use agent_llm::{ChatResponse, LlmError};
use agent_testkit::{BlockingTool, EchoTool, ScriptedModel, ToolProbe, tool_call};
use agent_toolcall::{
    BeforeThink, DEFAULT_MAX_OBSERVATION_BYTES, NextStepPromptMode, ObservationTruncation,
    Policies, ToolCallAgent, ToolCallCore, ToolCallHooks,
};
use agent_tools::{Terminate, ToolCollection};
use async_trait::async_trait;
use serde_json::json;
use tokio::time::timeout;

const NEXT: &str = "Decide the next action.";

fn echo(id: &str, text: &str) -> agent_core::ToolCall {
    tool_call(id, "echo", &json!({ "text": text }).to_string())
}

fn new_agent(model: &Arc<ScriptedModel>, probe: &Arc<ToolProbe>, max_steps: u32) -> ToolCallAgent {
    let mut tools = ToolCollection::new();
    tools.add_tool(EchoTool::new(probe));
    tools.add_tool(BlockingTool::new(probe));
    tools.add_tool(Terminate);
    ToolCallAgent::new(model.clone())
        .with_tools(tools)
        .with_next_step_prompt(NEXT)
        .with_max_steps(max_steps)
}

fn count_prompts(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|m| m.role == Role::User && m.text() == NEXT)
        .count()
}

// ---- next-step prompt policies ---------------------------------------------------------------

#[tokio::test]
async fn openmanus_mode_piles_up_one_prompt_per_step() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    for i in 0..4 {
        model.push_tool_calls("", [echo(&format!("c{i}"), &format!("x{i}"))]);
    }
    let mut agent = new_agent(&model, &probe, 4).with_policies(Policies::openmanus());
    agent.run(Some("task".into())).await.unwrap();

    assert_eq!(count_prompts(agent.messages()), 4, "N steps leave N copies");
    for (i, request) in model.requests().iter().enumerate() {
        assert_eq!(
            count_prompts(&request.messages),
            i + 1,
            "request {i} carries every copy so far"
        );
        assert_eq!(request.messages.last().unwrap().text(), NEXT);
    }
}

#[tokio::test]
async fn improved_mode_sends_the_prompt_every_request_and_stores_none() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    for i in 0..4 {
        model.push_tool_calls("", [echo(&format!("c{i}"), &format!("x{i}"))]);
    }
    let mut agent = new_agent(&model, &probe, 4);
    assert_eq!(
        agent.core().policies.next_step_prompt,
        NextStepPromptMode::Ephemeral,
        "the default"
    );
    agent.run(Some("task".into())).await.unwrap();

    assert_eq!(count_prompts(agent.messages()), 0);
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_eq!(count_prompts(&request.messages), 1);
        assert_eq!(
            request.messages.last().unwrap().text(),
            NEXT,
            "sent as the last message"
        );
    }
    // The conversation part of the request is exactly memory at that time.
    assert_eq!(
        requests[3].messages[..requests[3].messages.len() - 1],
        agent.messages()[..7]
    );
}

#[tokio::test]
async fn an_empty_next_step_prompt_sends_no_user_message() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model.push_text("ok");
    let mut agent = new_agent(&model, &probe, 1)
        .with_next_step_prompt("")
        .with_system_prompt("");
    agent.run(Some("task".into())).await.unwrap();
    let request = &model.requests()[0];
    assert!(
        request.system_msgs.is_empty(),
        "an empty system prompt is not sent"
    );
    assert_eq!(request.messages, vec![Message::user_message("task")]);
}

// ---- token limit, model errors, the state machine ----------------------------------------------

#[tokio::test]
async fn a_declined_reply_ends_the_run_as_refused_and_runs_none_of_its_calls() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    let mut refused = ChatResponse::refusal("I can't help with that.");
    // A filtered reply's calls may be cut off: none of them runs.
    refused.tool_calls = vec![echo("c2", "half")];
    model
        .push_tool_calls("", [echo("c1", "x")])
        .push_response(refused);
    let mut agent = new_agent(&model, &probe, 10);
    let outcome = agent.run(Some("task".into())).await.unwrap();

    assert_eq!(agent.base().state(), AgentState::Finished);
    let RunStatus::Finished(FinishReason::Refused { message }) = &outcome.status else {
        panic!("not refused: {:?}", outcome.status);
    };
    assert_eq!(message, "I can't help with that.");
    assert_eq!(outcome.status.ending(), agent_protocol::Ending::Refused);
    assert_eq!(
        outcome.status.to_string(),
        "refused: I can't help with that."
    );
    assert_eq!(
        probe.calls(),
        vec!["c1".to_owned()],
        "only the first reply's call ran"
    );
    assert_eq!(outcome.steps.len(), 2, "the run ends at the declined reply");
    assert_eq!(outcome.answer(), Some("I can't help with that."));
    assert_eq!(
        agent.messages().last().unwrap(),
        &Message::assistant_message("I can't help with that.")
    );
    check_tool_pairing(agent.messages(), false).unwrap();
    assert_eq!(model.remaining(), 0);

    // A content filter's stop with no text at all says why the reply stopped; memory gains no
    // empty assistant turn.
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model.push_response(ChatResponse::refusal(""));
    let mut agent = new_agent(&model, &probe, 10);
    let outcome = agent.run(Some("task".into())).await.unwrap();
    assert!(matches!(
        &outcome.status,
        RunStatus::Finished(FinishReason::Refused { message })
            if message == "the provider's content filter stopped the reply"
    ));
    assert_eq!(agent.messages().last().unwrap().role, Role::User);
}

#[tokio::test]
async fn token_limit_finishes_gracefully_with_the_openmanus_message() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model
        .push_tool_calls("", [echo("c1", "x")])
        .push_error(LlmError::TokenLimitExceeded(
            "Request may exceed input token limit (1000 > 900)".into(),
        ));
    let mut agent = new_agent(&model, &probe, 10);
    let outcome = agent.run(Some("task".into())).await.unwrap();

    assert_eq!(agent.base().state(), AgentState::Finished);
    assert!(matches!(
        outcome.status,
        RunStatus::Finished(FinishReason::TokenLimit { .. })
    ));
    assert_eq!(
        outcome.steps[1].result,
        "Thinking complete - no action needed"
    );
    assert_eq!(
        agent.messages().last().unwrap(),
        &Message::assistant_message(
            "Maximum token limit reached, cannot continue execution: Request may exceed input token limit (1000 > 900)"
        )
    );
}

#[tokio::test]
async fn a_model_failure_is_a_failed_outcome_and_the_error_state_stays_visible() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model
        .push_tool_calls("", [echo("c1", "x")])
        .push_error(LlmError::Authentication("invalid api key".into()));
    let mut agent = new_agent(&model, &probe, 10);
    let mut events = agent.base().events().subscribe();
    let outcome = agent.run(Some("task".into())).await.unwrap();

    let RunStatus::Failed(error) = &outcome.status else {
        panic!("{}", outcome.status)
    };
    assert!(matches!(**error, AgentError::Model(_)));
    assert_eq!(
        error.to_string(),
        "model call failed: authentication failed: invalid api key"
    );
    assert_eq!(
        outcome.steps.len(),
        1,
        "the step done before the failure is kept"
    );
    assert_eq!(agent.base().state(), AgentState::Error);
    assert_eq!(
        probe.cleanups(),
        2,
        "both probed tools are cleaned up after a failed run too"
    );

    let refused = agent.run(Some("again".into())).await.unwrap_err();
    assert_eq!(refused.to_string(), "Cannot run agent from state: ERROR");

    let mut states = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::StateChanged { from, to } = event {
            states.push((from, to));
        }
    }
    assert_eq!(
        states,
        [
            (AgentState::Idle, AgentState::Running),
            (AgentState::Running, AgentState::Error)
        ]
    );

    agent.base_mut().reset_state().unwrap();
    model.push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    let outcome = agent.run(Some("again".into())).await.unwrap();
    assert!(outcome.is_finished());
    assert_eq!(
        outcome.steps[0].step, 1,
        "current_step restarts at every run (spec W5)"
    );
}

#[tokio::test]
async fn a_finished_agent_must_be_reset_before_it_runs_again_and_counts_from_one() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    let finish = || tool_call("t", "terminate", r#"{"status":"success"}"#);
    model
        .push_tool_calls("", [echo("c1", "x")])
        .push_tool_calls("", [finish()]);
    let mut agent = new_agent(&model, &probe, 10);
    let first = agent.run(Some("one".into())).await.unwrap();
    assert_eq!(first.steps.len(), 2);
    assert_eq!(agent.base().state(), AgentState::Finished);
    assert!(matches!(
        agent.run(None).await,
        Err(AgentError::InvalidState(AgentState::Finished))
    ));

    agent.base_mut().reset_state().unwrap();
    model.push_tool_calls("", [finish()]);
    let second = agent.run(Some("two".into())).await.unwrap();
    assert_eq!(second.text(), format!("Step 1: {}", second.steps[0].result));
    assert_eq!(agent.base().current_step(), 1);
    assert_eq!(
        probe.cleanups(),
        4,
        "both probed tools, at the end of each of the two runs"
    );
}

#[tokio::test]
async fn max_steps_reports_the_openmanus_line_and_returns_to_idle() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model
        .push_tool_calls("", [echo("c1", "a")])
        .push_tool_calls("", [echo("c2", "b")]);
    let mut agent = new_agent(&model, &probe, 2);
    let outcome = agent.run(Some("task".into())).await.unwrap();
    assert!(matches!(outcome.status, RunStatus::MaxSteps(2)));
    assert_eq!(
        outcome.text(),
        "Step 1: Observed output of cmd `echo` executed:\na\nStep 2: Observed output of cmd `echo` executed:\nb\nTerminated: Reached max steps (2)"
    );
    assert_eq!(agent.base().state(), AgentState::Idle);
}

// ---- observation truncation ------------------------------------------------------------------

#[tokio::test]
async fn max_observe_cuts_or_keeps_head_and_tail_by_policy() {
    let long = "0123456789".repeat(10);
    let full = format!("Observed output of cmd `echo` executed:\n{long}");

    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model.push_tool_calls("", [echo("c1", &long)]);
    let mut cut = new_agent(&model, &probe, 1)
        .with_max_observe(50)
        .with_policies(Policies::openmanus());
    cut.run(Some("task".into())).await.unwrap();
    assert_eq!(
        cut.messages().last().unwrap().text(),
        &full[..50],
        "the prefix counts toward the cut"
    );

    model.push_tool_calls("", [echo("c1", &long)]);
    let mut head_tail = new_agent(&model, &probe, 1).with_max_observe(50);
    assert_eq!(
        head_tail.core().policies.observation_truncation,
        ObservationTruncation::HeadAndTail
    );
    head_tail.run(Some("task".into())).await.unwrap();
    let omitted = full.chars().count() - 50;
    assert_eq!(
        head_tail.messages().last().unwrap().text(),
        format!(
            "{}\n[... {omitted} characters omitted ...]\n{}",
            &full[..25],
            &full[full.len() - 25..]
        )
    );
}

#[tokio::test]
async fn every_observation_is_capped_in_bytes_even_without_max_observe() {
    // A command that printed far too much; no max_observe (SWE's default).
    let huge = format!("{}é{}", "h".repeat(400_000), "t".repeat(400_000));
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model.push_tool_calls("", [echo("c1", &huge)]);
    let mut agent = new_agent(&model, &probe, 1);
    assert_eq!(agent.core().max_observe, None);
    agent.run(Some("task".into())).await.unwrap();
    let observation = agent.messages().last().unwrap().text().to_owned();
    let cap = DEFAULT_MAX_OBSERVATION_BYTES;
    assert!(
        observation.len() <= cap + 200,
        "{} bytes kept",
        observation.len()
    );
    assert!(observation.starts_with("Observed output of cmd `echo` executed:\nhhh"));
    assert!(observation.ends_with(&"t".repeat(1000)), "the tail is kept");
    let full = huge.len() + "Observed output of cmd `echo` executed:\n".len();
    // The cap is on bytes as sent: the head's line end is sent as two (`\n`).
    let sent = full + 1;
    let omitted = full - (cap - 1);
    assert!(
        observation.contains(&format!(
            "[... {omitted} bytes omitted: the observation was {full} bytes ({sent} in the request), over the cap of {cap} ...]"
        )),
        "the note says what was cut: {}",
        &observation[cap / 2 - 50..cap / 2 + 150]
    );

    // 0: no cap.
    model.push_tool_calls("", [echo("c1", &huge)]);
    let policies = Policies {
        max_observation_bytes: 0,
        ..Policies::default()
    };
    let mut uncapped = new_agent(&model, &probe, 1).with_policies(policies);
    uncapped.run(Some("task".into())).await.unwrap();
    assert_eq!(uncapped.messages().last().unwrap().text().len(), full);
}

// ---- cleanup ------------------------------------------------------------------------------------

#[tokio::test]
async fn failing_cleanup_is_logged_not_raised() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model.push_text("hi");
    let mut tools = ToolCollection::new();
    tools.add_tool(EchoTool::new(&probe).failing_cleanup());
    let mut agent = ToolCallAgent::new(model.clone())
        .with_tools(tools)
        .with_max_steps(1);
    let outcome = agent.run(Some("task".into())).await.unwrap();
    assert!(matches!(outcome.status, RunStatus::MaxSteps(1)));
    assert_eq!(probe.cleanups(), 1);
}

// ---- hooks ----------------------------------------------------------------------------------

/// Step 1: a per-step prompt. Step 2: adds a tool. Step 3: skips thinking and finishes.
#[derive(Default)]
struct ScriptedHooks {
    probe: Option<Arc<ToolProbe>>,
    cleaned: bool,
}

#[async_trait]
impl ToolCallHooks for ScriptedHooks {
    async fn before_think(&mut self, core: &mut ToolCallCore) -> Result<BeforeThink, AgentError> {
        match core.base.current_step() {
            1 => Ok(BeforeThink::ProceedWithPrompt(
                "Browser state: about:blank".into(),
            )),
            2 => {
                let probe = self.probe.clone().unwrap_or_default();
                core.tools.add_tool(EchoTool::named("late_tool", &probe));
                core.tools.remove_tool("block");
                Ok(BeforeThink::Proceed)
            }
            _ => {
                core.base
                    .finish(FinishReason::Other("service gone".into()))?;
                Ok(BeforeThink::Skip)
            }
        }
    }

    async fn cleanup(&mut self, _core: &mut ToolCallCore) {
        self.cleaned = true;
    }
}

#[tokio::test]
async fn hooks_replace_the_prompt_change_the_tool_set_and_stop_thinking() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model
        .push_tool_calls("", [echo("c1", "x")])
        .push_tool_calls("", [tool_call("c2", "late_tool", r#"{"text":"new"}"#)]);
    let mut agent = new_agent(&model, &probe, 10).with_hooks(ScriptedHooks {
        probe: Some(probe.clone()),
        cleaned: false,
    });
    let outcome = agent.run(Some("task".into())).await.unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 2, "step 3 skipped the model");
    assert_eq!(
        requests[0].messages.last().unwrap().text(),
        "Browser state: about:blank"
    );
    assert_eq!(
        requests[1].messages.last().unwrap().text(),
        NEXT,
        "the replacement lasted one step"
    );
    assert_eq!(requests[0].tool_names(), ["echo", "block", "terminate"]);
    assert_eq!(requests[1].tool_names(), ["echo", "terminate", "late_tool"]);
    assert_eq!(
        agent.messages().last().unwrap().text(),
        "Observed output of cmd `late_tool` executed:\nnew"
    );
    assert_eq!(
        outcome.steps[2].result,
        "Thinking complete - no action needed"
    );
    assert!(
        matches!(outcome.status, RunStatus::Finished(FinishReason::Other(ref r)) if r == "service gone")
    );
    assert!(agent.hooks().cleaned);
}

// ---- stuck detection ------------------------------------------------------------------------

#[tokio::test]
async fn repeated_text_turns_on_one_change_of_strategy_hint_that_never_stacks() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    for _ in 0..5 {
        model.push_text("I am not sure.");
    }
    model.push_text("A new idea.").push_text("Another idea.");
    let mut agent = new_agent(&model, &probe, 7);
    let mut events = agent.base().events().subscribe();
    agent.run(Some("task".into())).await.unwrap();

    let hinted = format!("{STUCK_PROMPT}\n{NEXT}");
    let prompts: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r.messages.last().unwrap().text().to_owned())
        .collect();
    // Stuck after the 3rd identical reply (2 earlier duplicates = threshold 2).
    assert_eq!(prompts[..3], [NEXT, NEXT, NEXT]);
    assert_eq!(
        prompts[3..6],
        [hinted.clone(), hinted.clone(), hinted],
        "hinted while stuck, never stacked"
    );
    assert_eq!(
        prompts[6], NEXT,
        "the hint goes away once the agent stops repeating"
    );

    let mut stuck_steps = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::Stuck { step } = event {
            stuck_steps.push(step);
        }
    }
    assert_eq!(stuck_steps, [3, 4, 5]);
}

#[tokio::test]
async fn repeated_identical_tool_calls_are_detected_too() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    for i in 0..3 {
        model.push_tool_calls(
            "",
            [tool_call(&format!("c{i}"), "echo", r#"{"text":"same"}"#)],
        );
    }
    model.push_tool_calls("", [tool_call("c9", "echo", r#"{"text":"different"}"#)]);
    let mut agent = new_agent(&model, &probe, 4);
    agent.run(Some("task".into())).await.unwrap();
    let last_prompts: Vec<bool> = model
        .requests()
        .iter()
        .map(|r| r.messages.last().unwrap().text().starts_with(STUCK_PROMPT))
        .collect();
    assert_eq!(last_prompts, [false, false, false, true]);

    // OpenManus's rule alone never fires on tool calls.
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    for i in 0..4 {
        model.push_tool_calls(
            "",
            [tool_call(&format!("c{i}"), "echo", r#"{"text":"same"}"#)],
        );
    }
    let mut agent = new_agent(&model, &probe, 4);
    agent.base_mut().stuck_detection = agent_core::StuckDetection::ContentOnly;
    agent.run(Some("task".into())).await.unwrap();
    assert!(
        model.requests().iter().all(|r| !r
            .messages
            .last()
            .unwrap()
            .text()
            .starts_with(STUCK_PROMPT))
    );
}

// ---- events ---------------------------------------------------------------------------------

#[tokio::test]
async fn events_describe_the_run_in_order() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model
        .push_response(
            ChatResponse::tool_calls(Some("Echoing.".into()), vec![echo("c1", "x")])
                .with_usage(ScriptedModel::usage(120, 8)),
        )
        .push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    let mut agent = new_agent(&model, &probe, 5);
    let mut events = agent.base().events().subscribe();
    agent.run(Some("task".into())).await.unwrap();

    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    let kinds: Vec<String> = seen
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "run_started",
            "state_changed",
            "step_started",
            "token_usage",
            "thought",
            "tool_call_started",
            "tool_call_finished",
            "step_finished",
            "step_started",
            "thought",
            "tool_call_started",
            "tool_call_finished",
            "state_changed",
            "step_finished",
            "finished"
        ]
    );
    assert!(seen.contains(&AgentEvent::TokenUsage {
        prompt_tokens: 120,
        cached_prompt_tokens: 0,
        completion_tokens: 8,
        cost_usd: None,
    }));
    assert!(seen.contains(&AgentEvent::ToolCallFinished {
        step: 1,
        call_id: "c1".into(),
        name: "echo".into(),
        observation: "Observed output of cmd `echo` executed:\nx".into(),
        success: true,
    }));
    assert!(
        matches!(seen.last(), Some(AgentEvent::Finished { steps: 2, status, .. }) if status.starts_with("finished"))
    );
}

// ---- cancellation ---------------------------------------------------------------------------

#[tokio::test]
async fn cancelling_during_the_model_call_stops_the_run_and_stores_nothing_half_done() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model.push_tool_calls("", [echo("c1", "x")]).push_hang();
    let mut agent = new_agent(&model, &probe, 10);
    let token = agent.base().cancellation_token();
    let waiter = model.clone();
    let canceller = tokio::spawn(async move {
        waiter.wait_for_requests(2).await;
        token.cancel();
    });
    let outcome = timeout(Duration::from_secs(10), agent.run(Some("task".into())))
        .await
        .unwrap()
        .unwrap();
    canceller.await.unwrap();

    assert!(matches!(outcome.status, RunStatus::Cancelled));
    assert_eq!(outcome.steps.len(), 1);
    assert_eq!(
        outcome.text(),
        format!(
            "Step 1: {}\nCancelled after step 1",
            outcome.steps[0].result
        )
    );
    assert_eq!(agent.base().state(), AgentState::Idle);
    assert_eq!(
        agent.messages().len(),
        3,
        "task, call, result: nothing from the cancelled step"
    );
    check_tool_pairing(agent.messages(), false).unwrap();
    assert_eq!(
        probe.cleanups(),
        2,
        "echo and block were cleaned up after the cancel"
    );
}

#[tokio::test]
async fn cancelling_inside_a_tool_call_answers_every_started_and_unstarted_call() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model.push_tool_calls(
        "",
        [
            echo("c1", "before"),
            tool_call("c2", "block", "{}"),
            echo("c3", "after"),
        ],
    );
    let mut agent = new_agent(&model, &probe, 10);
    let token = agent.base().cancellation_token();
    let watcher = probe.clone();
    let canceller = tokio::spawn(async move {
        watcher.wait_for_calls(2).await;
        token.cancel();
    });
    let outcome = timeout(Duration::from_secs(10), agent.run(Some("task".into())))
        .await
        .unwrap()
        .unwrap();
    canceller.await.unwrap();

    assert!(matches!(outcome.status, RunStatus::Cancelled));
    assert_eq!(
        outcome.text(),
        "No steps executed",
        "the only step did not complete"
    );
    assert_eq!(
        probe.calls(),
        ["c1", "c2"],
        "no tool call starts after the cancel"
    );
    let tail: Vec<(&str, &str)> = agent.messages()[2..]
        .iter()
        .map(|m| (m.tool_call_id.as_deref().unwrap(), m.text()))
        .collect();
    assert_eq!(
        tail,
        [
            ("c1", "Observed output of cmd `echo` executed:\nbefore"),
            (
                "c2",
                "Error: Tool 'block' did not complete: the run was cancelled"
            ),
            (
                "c3",
                "Error: Tool 'echo' did not complete: the run was cancelled"
            ),
        ]
    );
    check_tool_pairing(agent.messages(), false).unwrap();

    // The memory left behind is valid for the strict model: the agent can go on.
    agent.base_mut().set_cancellation_token(Default::default());
    model.push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    let outcome = agent.run(Some("continue".into())).await.unwrap();
    assert!(outcome.is_finished());
}

#[tokio::test]
async fn a_run_cancelled_before_it_starts_executes_nothing() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    let mut agent = new_agent(&model, &probe, 10);
    agent.base().cancellation_token().cancel();
    let outcome = agent.run(Some("task".into())).await.unwrap();
    assert!(matches!(outcome.status, RunStatus::Cancelled));
    assert_eq!(outcome.text(), "No steps executed");
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn tool_choice_none_requests_still_list_the_tools() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model.push_text("plain");
    let mut agent = new_agent(&model, &probe, 1).with_tool_choice(ToolChoice::None);
    agent.run(Some("task".into())).await.unwrap();
    let request = &model.requests()[0];
    assert_eq!(request.tool_choice, Some(ToolChoice::None));
    assert_eq!(request.tool_names(), ["echo", "block", "terminate"]);
}

/// A hook that fails after the second tool call of a batch.
struct FailingAfterTool;

#[async_trait]
impl ToolCallHooks for FailingAfterTool {
    async fn after_tool(
        &mut self,
        _core: &mut ToolCallCore,
        call: &agent_core::ToolCall,
        _result: &agent_tools::ToolResult,
    ) -> Result<(), AgentError> {
        if call.id == "c2" {
            return Err(AgentError::step(std::io::Error::other("hook broke")));
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_step_that_fails_mid_batch_still_leaves_every_call_answered() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model.push_tool_calls("", [echo("c1", "a"), echo("c2", "b"), echo("c3", "c")]);
    let mut agent = new_agent(&model, &probe, 5).with_hooks(FailingAfterTool);
    let outcome = agent.run(Some("task".into())).await.unwrap();

    assert!(matches!(outcome.status, RunStatus::Failed(ref e) if e.to_string() == "hook broke"));
    assert_eq!(agent.base().state(), AgentState::Error);
    let tail: Vec<&str> = agent.messages()[2..].iter().map(Message::text).collect();
    assert_eq!(
        tail,
        [
            "Observed output of cmd `echo` executed:\na",
            "Observed output of cmd `echo` executed:\nb",
            "Error: Tool 'echo' did not complete: the step failed",
        ],
        "c2 ran: its result is kept although the hook after it failed; c3 never started"
    );
    check_tool_pairing(agent.messages(), false).unwrap();
    assert_eq!(probe.calls(), ["c1", "c2"], "c3 never started");

    // After a reset the strict model accepts the conversation.
    agent.base_mut().reset_state().unwrap();
    model.push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    assert!(agent.run(None).await.unwrap().is_finished());
}

#[tokio::test]
async fn every_started_call_gets_a_finished_event_even_when_cancelled() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model.push_tool_calls("", [tool_call("c1", "block", "{}"), echo("c2", "never")]);
    let mut agent = new_agent(&model, &probe, 10);
    let mut events = agent.base().events().subscribe();
    let token = agent.base().cancellation_token();
    let watcher = probe.clone();
    tokio::spawn(async move {
        watcher.wait_for_calls(1).await;
        token.cancel();
    });
    timeout(Duration::from_secs(10), agent.run(Some("task".into())))
        .await
        .unwrap()
        .unwrap();
    let finished: Vec<(String, bool)> = std::iter::from_fn(|| events.try_recv().ok())
        .filter_map(|e| match e {
            AgentEvent::ToolCallFinished {
                call_id, success, ..
            } => Some((call_id, success)),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished,
        [("c1".to_owned(), false), ("c2".to_owned(), false)]
    );
}

#[tokio::test]
async fn a_dropped_run_is_repaired_by_reset_and_the_next_run() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    model.push_tool_calls("", [tool_call("c1", "block", "{}")]);
    let mut agent = new_agent(&model, &probe, 10);
    // Dropping the future (instead of cancelling the token) interrupts the run mid-tool.
    let dropped = timeout(Duration::from_millis(200), agent.run(Some("task".into()))).await;
    assert!(dropped.is_err());
    assert_eq!(agent.base().state(), AgentState::Running);
    assert!(matches!(
        agent.run(None).await,
        Err(AgentError::InvalidState(AgentState::Running))
    ));

    agent.base_mut().reset_state().unwrap();
    model.push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    let outcome = agent.run(Some("go on".into())).await.unwrap();
    assert!(
        outcome.is_finished(),
        "the strict model accepted the repaired conversation"
    );
    assert_eq!(
        agent.messages()[2].text(),
        "Error: Tool 'block' did not complete: the run was cancelled"
    );
}

#[tokio::test]
async fn a_cancelled_token_runs_nothing_and_leaves_memory_alone() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    let mut agent = new_agent(&model, &probe, 10);
    agent.base().cancellation_token().cancel();
    for _ in 0..3 {
        let outcome = agent.run(Some("task".into())).await.unwrap();
        assert!(matches!(outcome.status, RunStatus::Cancelled));
    }
    assert!(agent.messages().is_empty());
    assert_eq!(agent.base().state(), AgentState::Idle);
}

#[tokio::test]
async fn the_current_request_survives_truncation_across_runs() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    let mut agent = new_agent(&model, &probe, 10).with_max_messages(4);
    model.push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    agent.run(Some("first task".into())).await.unwrap();
    agent.base_mut().reset_state().unwrap();
    for i in 0..3 {
        model.push_tool_calls("", [echo(&format!("c{i}"), &format!("n{i}"))]);
    }
    model.push_tool_calls(
        "",
        [tool_call("t2", "terminate", r#"{"status":"success"}"#)],
    );
    agent.run(Some("second task".into())).await.unwrap();
    let last_request = model.requests().last().unwrap().clone();
    let users: Vec<&str> = last_request
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(Message::text)
        .collect();
    assert_eq!(
        users,
        ["first task", "second task", NEXT],
        "both requests stay in view"
    );
}

#[tokio::test]
async fn an_agent_without_tools_sends_no_tool_choice() {
    let model = Arc::new(ScriptedModel::new());
    model.push_text("just text");
    let mut agent = ToolCallAgent::new(model.clone())
        .with_tools(ToolCollection::new())
        .with_max_steps(1);
    let outcome = agent.run(Some("task".into())).await.unwrap();
    assert!(
        matches!(outcome.status, RunStatus::MaxSteps(1)),
        "{}",
        outcome.text()
    );
    let request = &model.requests()[0];
    assert!(request.tools.is_empty());
    assert_eq!(request.tool_choice, None);
}

#[tokio::test]
async fn tools_can_be_kept_alive_across_the_runs_of_a_session() {
    let (model, probe) = (Arc::new(ScriptedModel::new()), ToolProbe::new());
    let mut agent = new_agent(&model, &probe, 5).with_tools_kept_between_runs();
    for round in 0..2 {
        model.push_tool_calls(
            "",
            [tool_call(
                &format!("t{round}"),
                "terminate",
                r#"{"status":"success"}"#,
            )],
        );
        assert!(
            agent
                .run(Some(format!("round {round}")))
                .await
                .unwrap()
                .is_finished()
        );
        agent.base_mut().reset_state().unwrap();
    }
    assert_eq!(
        probe.cleanups(),
        0,
        "no cleanup between the runs of a session"
    );
    agent.cleanup_tools().await;
    assert_eq!(
        probe.cleanups(),
        2,
        "echo and block cleaned once, at the end"
    );
}
