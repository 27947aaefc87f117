//! End-to-end: agents built the way downstream crates build them — configuration and hooks over
//! ToolCallAgent — driven through whole runs by the strict scripted model.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::{Agent, AgentEvent, Message, Role, RunStatus, ToolCall};
use agent_testkit::{EchoTool, ImageTool, ScriptedModel, ToolProbe};
use agent_toolcall::{BeforeThink, ToolCallAgent, ToolCallCore, ToolCallHooks};
use agent_tools::{Terminate, ToolCollection};
use async_trait::async_trait;
use serde_json::json;

/// A "downstream" agent: a tool set, two prompts, a step budget and one hook — the shape of
/// Manus, SWEAgent and friends.
fn research_agent(model: Arc<ScriptedModel>, probe: &Arc<ToolProbe>) -> ToolCallAgent<Announcer> {
    let mut tools = ToolCollection::new();
    tools.add_tool(EchoTool::new(probe));
    tools.add_tool(ImageTool::new(probe));
    tools.add_tool(Terminate);
    ToolCallAgent::new(model)
        .with_name("researcher")
        .with_system_prompt("You research things with tools.")
        .with_next_step_prompt("Choose the next tool; call terminate when finished.")
        .with_tools(tools)
        .with_max_steps(40)
        .with_max_observe(200)
        .with_hooks(Announcer::default())
}

/// Counts thinks and, every fifth step, tells the model the step number in place of the prompt.
#[derive(Default)]
struct Announcer {
    thinks: u32,
}

#[async_trait]
impl ToolCallHooks for Announcer {
    async fn before_think(
        &mut self,
        core: &mut ToolCallCore,
    ) -> Result<BeforeThink, agent_core::AgentError> {
        self.thinks += 1;
        let step = core.base.current_step();
        Ok(if step.is_multiple_of(5) {
            BeforeThink::ProceedWithPrompt(format!("Step {step} reached; keep going or terminate."))
        } else {
            BeforeThink::Proceed
        })
    }
}

fn echo_call(i: usize) -> ToolCall {
    ToolCall::new(
        format!("call_{i}"),
        "echo",
        json!({ "text": format!("finding {i}") }).to_string(),
    )
}

#[tokio::test]
async fn a_long_run_under_a_small_memory_cap_keeps_every_request_valid_and_the_task_in_view() {
    let model = Arc::new(ScriptedModel::new());
    let probe = ToolProbe::new();
    for i in 0..29 {
        if i % 7 == 3 {
            model.push_tool_calls(
                "",
                [ToolCall::new(
                    format!("shot_{i}"),
                    "screenshot",
                    r#"{"caption":"page"}"#,
                )],
            );
        } else {
            model.push_tool_calls(
                &format!("Looking at item {i}."),
                [echo_call(i), echo_call(100 + i)],
            );
        }
    }
    model.push_tool_calls(
        "Done.",
        [ToolCall::new("end", "terminate", r#"{"status":"success"}"#)],
    );

    let mut agent = research_agent(model.clone(), &probe);
    agent.core_mut().base.memory.set_max_messages(9);
    let mut events = agent.base().events().subscribe();
    let collector = tokio::spawn(async move {
        let mut steps_finished = 0;
        let mut tool_calls = 0;
        while let Some(event) = events.recv().await {
            match event {
                AgentEvent::StepFinished { .. } => steps_finished += 1,
                AgentEvent::ToolCallFinished { .. } => tool_calls += 1,
                AgentEvent::Finished { .. } => break,
                _ => {}
            }
        }
        (steps_finished, tool_calls)
    });

    let outcome = agent
        .run(Some("Survey the items and report.".into()))
        .await
        .unwrap();
    let (steps_finished, tool_calls) = tokio::time::timeout(Duration::from_secs(5), collector)
        .await
        .unwrap()
        .unwrap();

    assert!(
        matches!(outcome.status, RunStatus::Finished(_)),
        "{}",
        outcome.status
    );
    assert_eq!(outcome.steps.len(), 30);
    assert_eq!(steps_finished, 30);
    assert_eq!(tool_calls, 25 * 2 + 4 + 1);
    assert_eq!(agent.hooks().thinks, 30);

    let requests = model.requests();
    assert_eq!(
        requests.len(),
        30,
        "the strict model accepted every request"
    );
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(
            request
                .messages
                .iter()
                .find(|m| m.role == Role::User)
                .map(Message::text),
            Some("Survey the items and report."),
            "request {i} lost the task"
        );
        assert!(
            request.messages.len() <= 9 + 2,
            "request {i} is bounded by the memory cap"
        );
    }
    assert_eq!(
        requests[4].messages.last().unwrap().text(),
        "Step 5 reached; keep going or terminate."
    );
    assert!(agent.messages().len() <= 9);
    assert_eq!(probe.calls().len(), 25 * 2 + 4);
    assert_eq!(
        probe.cleanups(),
        1,
        "echo (the probed tool with a cleanup) cleaned once, at the end"
    );
}

#[tokio::test]
async fn two_agents_share_a_model_but_nothing_else() {
    let model = Arc::new(ScriptedModel::new());
    let probe_a = ToolProbe::new();
    let probe_b = ToolProbe::new();
    model.push_tool_calls("", [echo_call(1)]).push_tool_calls(
        "",
        [ToolCall::new("end", "terminate", r#"{"status":"success"}"#)],
    );
    let mut a = research_agent(model.clone(), &probe_a);
    let b = research_agent(model.clone(), &probe_b);
    a.run(Some("only a runs".into())).await.unwrap();

    assert_eq!(probe_a.calls(), ["call_1"]);
    assert!(probe_b.calls().is_empty());
    assert!(b.messages().is_empty(), "memories are per agent");
    assert_eq!(b.core().tools.names(), a.core().tools.names());
}
