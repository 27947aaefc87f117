//! Compaction over the real client and the strict mock server: a 200-step run with large
//! observations stays within the model's context window, keeps its task, and sends a summary
//! request whose answer replaces the older turns; with compaction off the same run cannot go on.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_core::{Agent, AgentEvent, RunStatus, ToolCall, check_tool_pairing};
use agent_llm::{LlmSettings, Model};
use agent_testkit::{Completion, MockOpenAi};
use agent_toolcall::compaction::{CUT_NOTE, SUMMARY_PREFIX};
use agent_toolcall::{Compaction, CompactionStrategy, ToolCallAgent};
use agent_tools::{Tool, ToolContext, ToolError, ToolResult};
use async_trait::async_trait;
use serde_json::{Value, json};

const TASK: &str = "Read every module of the project and report what each one computes.";
const STEPS: u32 = 200;
/// The context window given to the model, in tokens.
const WINDOW: u64 = 16_000;
const SUMMARY: &str =
    "You were asked to read every module. Modules read so far: many. Left: the rest.";

/// `view`: a 60-line file view (about 3 KB) for any path, as a file viewer would answer.
struct View;

#[async_trait]
impl Tool for View {
    fn name(&self) -> &str {
        "view"
    }
    fn description(&self) -> &str {
        "Shows a file."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }
    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let path = args["path"].as_str().unwrap_or_default().to_owned();
        let body: String = (1..=60)
            .map(|i| {
                format!("{i:>4}\tdef function_{i}(value): return value * {i} + len('{path}')\n")
            })
            .collect();
        Ok(ToolResult::success(body))
    }
}

fn script(server: &MockOpenAi) {
    for step in 1..=STEPS {
        server.push_for(
            TASK,
            Completion::tool_calls(
                Some(format!("Reading module {step}.")),
                [ToolCall::new(
                    format!("call_{step}"),
                    "view",
                    json!({"path": format!("src/module_{step}.py")}).to_string(),
                )],
            ),
        );
    }
    server.push_for(
        TASK,
        Completion::tool_calls(
            Some("All modules read.".into()),
            [ToolCall::new("end", "terminate", r#"{"status":"success"}"#)],
        ),
    );
    // Summary requests have their own first user message, so they take the default queue.
    server.set_fallback(Some(Completion::text(SUMMARY).with_usage(3_000, 40).into()));
}

fn agent(server: &MockOpenAi, compaction: Compaction) -> ToolCallAgent {
    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-compact");
    settings.max_attempts = 1;
    settings.context_window = Some(WINDOW);
    ToolCallAgent::new(Arc::new(Model::new(settings).unwrap()))
        .with_tool(View)
        .with_max_steps(STEPS + 5)
        .with_max_messages(10_000)
        .with_compaction(compaction)
}

fn first_user_text(body: &Value) -> String {
    agent_testkit::mock_openai::conversation_key(body).unwrap_or_default()
}

#[tokio::test]
async fn a_long_run_stays_within_the_window_and_keeps_its_task() {
    let server = MockOpenAi::start().await.unwrap();
    script(&server);
    let compaction = Compaction {
        threshold: 0.5,
        keep_turns: 4,
        ..Compaction::default()
    };
    let mut agent = agent(&server, compaction);
    let mut events = agent.base().events().subscribe();
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.status);
    assert_eq!(outcome.steps.len(), STEPS as usize + 1);

    let mut compactions = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::Compacted {
            strategy,
            removed_messages,
            tokens_before,
            tokens_after,
            ..
        } = event
        {
            assert_eq!(strategy, "summary");
            assert!(removed_messages > 0);
            assert!(tokens_after < tokens_before);
            compactions.push(tokens_before - tokens_after);
        }
    }
    assert!(compactions.len() >= 5, "{compactions:?}");

    let requests = server.requests();
    let (summaries, steps): (Vec<_>, Vec<_>) = requests
        .iter()
        .partition(|r| first_user_text(&r.body) != TASK);
    assert_eq!(summaries.len(), compactions.len());
    assert_eq!(steps.len(), STEPS as usize + 1);
    for request in &requests {
        let tokens = request.raw_body.len() as u64 / 4;
        assert!(tokens < WINDOW, "a request of ~{tokens} tokens");
    }
    // The summary request: no tools, the task, and the turns it replaces as a transcript.
    let summary = &summaries[0].body;
    assert!(summary.get("tools").is_none());
    let prompt = summary["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains(TASK));
    assert!(
        prompt.contains(r#"→ calls view({"path":"src/module_1.py"})"#),
        "{prompt}"
    );
    assert!(prompt.contains("## tool result (view)"));
    // The request after it: the task first, then the summary, then the latest turns, whole.
    let at = requests
        .iter()
        .position(|r| std::ptr::eq(r, summaries[0]))
        .unwrap();
    let next = &requests[at + 1].body["messages"];
    assert_eq!(next[1]["content"], TASK);
    assert_eq!(
        next[2]["content"].as_str().unwrap(),
        format!("{SUMMARY_PREFIX}\n{SUMMARY}")
    );
    assert_eq!(next[3]["role"], "assistant");
    // The last request still holds the task.
    let last = steps.last().unwrap();
    assert_eq!(last.body["messages"][1]["content"], TASK);
    check_tool_pairing(agent.messages(), false).unwrap();
    server.verify().unwrap();
}

#[tokio::test]
async fn the_cut_strategy_drops_older_turns_without_a_summary_request() {
    let server = MockOpenAi::start().await.unwrap();
    script(&server);
    let compaction = Compaction {
        strategy: CompactionStrategy::Cut,
        threshold: 0.5,
        ..Compaction::default()
    };
    let mut agent = agent(&server, compaction);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.status);
    let requests = server.requests();
    assert!(requests.iter().all(|r| first_user_text(&r.body) == TASK));
    let last = &requests.last().unwrap().body["messages"];
    assert_eq!(last[1]["content"], TASK);
    assert!(last[2]["content"].as_str().unwrap().starts_with(CUT_NOTE));
    check_tool_pairing(agent.messages(), false).unwrap();
}

#[tokio::test]
async fn with_compaction_off_the_same_run_outgrows_the_window() {
    let server = MockOpenAi::start().await.unwrap();
    script(&server);
    let mut agent = agent(&server, Compaction::off());
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    let RunStatus::Failed(error) = &outcome.status else {
        panic!("{}", outcome.status);
    };
    assert!(error.to_string().contains("context window"), "{error}");
    assert!(outcome.steps.len() < STEPS as usize);
}

/// `dump`: one observation larger than the whole window (about 25k tokens).
struct Dump;

#[async_trait]
impl Tool for Dump {
    fn name(&self) -> &str {
        "dump"
    }
    fn description(&self) -> &str {
        "Prints a large file."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::success("word ".repeat(20_000)))
    }
}

#[tokio::test]
async fn a_request_compaction_cannot_bring_under_the_window_is_never_sent() {
    let server = MockOpenAi::start().await.unwrap();
    server.push(Completion::tool_calls(
        None,
        [ToolCall::new("c1", "dump", "{}")],
    ));
    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-compact");
    settings.max_attempts = 1;
    settings.context_window = Some(WINDOW);
    let mut agent = ToolCallAgent::new(Arc::new(Model::new(settings).unwrap()))
        .with_tool(Dump)
        .with_max_steps(5)
        .with_compaction(Compaction::default());
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    let RunStatus::Finished(reason) = &outcome.status else {
        panic!("{}", outcome.status);
    };
    let reason = reason.to_string();
    assert!(
        reason.contains("past the model's context window of 16000")
            && reason.contains("compaction cannot make room"),
        "{reason}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "the request past the window was not sent"
    );
}
