//! Cost and budgets over the real client (`agent_llm::Model`) and the strict mock server: the
//! cost of each call at the configured price, and each budget (tokens, cost, wall time) ending a
//! run with its own finish reason, a valid memory and no child process left.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    Agent, AgentEvent, Budget, BudgetKind, FinishReason, RunStatus, ToolCall, check_tool_pairing,
};
use agent_llm::{LlmSettings, Model, Price};
use agent_testkit::{Completion, MockOpenAi};
use agent_toolcall::ToolCallAgent;
use agent_tools::Bash;

const TASK: &str = "Look around, then stop.";

fn model(server: &MockOpenAi, price: Option<Price>) -> Arc<Model> {
    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-budget");
    settings.max_attempts = 1;
    settings.price = price;
    Arc::new(Model::new(settings).unwrap())
}

fn bash_call(id: &str, command: &str) -> Completion {
    Completion::tool_calls(
        Some(format!("Running {id}.")),
        [ToolCall::new(
            id,
            "bash",
            serde_json::json!({ "command": command }).to_string(),
        )],
    )
}

/// Whether process `pid` is gone (or a zombie about to be reaped).
fn gone(pid: &str) -> bool {
    !pid.parse().is_ok_and(agent_process::is_running)
}

/// Waits (up to a minute) until the process whose id is in `file` is gone.
async fn wait_gone(file: &Path) {
    let pid = std::fs::read_to_string(file).unwrap().trim().to_owned();
    assert!(!pid.is_empty());
    for _ in 0..600 {
        if gone(&pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("process {pid} survived the run");
}

#[tokio::test]
async fn each_call_costs_its_tokens_at_the_configured_price() {
    let server = MockOpenAi::start().await.unwrap();
    server.push(
        Completion::tool_calls(
            Some("Done.".into()),
            [ToolCall::new("t1", "terminate", r#"{"status":"success"}"#)],
        )
        .with_cached_usage(1_000_000, 400_000, 100_000),
    );
    let price = Price::with_cached(2.0, 0.5, 8.0);
    let mut agent = ToolCallAgent::new(model(&server, Some(price)));
    let mut events = agent.base().events().subscribe();
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.status);
    // 600k uncached at $2, 400k cached at $0.5, 100k out at $8 per million.
    let expected = 1.2 + 0.2 + 0.8;
    let mut seen_cost = None;
    let mut finished_usage = None;
    while let Ok(event) = events.try_recv() {
        match event {
            AgentEvent::TokenUsage {
                cached_prompt_tokens,
                cost_usd,
                ..
            } => {
                assert_eq!(cached_prompt_tokens, 400_000);
                seen_cost = cost_usd;
            }
            AgentEvent::Finished { usage, .. } => finished_usage = Some(usage),
            _ => {}
        }
    }
    assert!(
        (seen_cost.unwrap() - expected).abs() < 1e-9,
        "{seen_cost:?}"
    );
    let usage = finished_usage.unwrap();
    assert_eq!(usage, outcome.usage);
    assert!((usage.cost_usd.unwrap() - expected).abs() < 1e-9);
    assert_eq!(usage.unpriced_calls, 0);
    server.verify().unwrap();
}

#[tokio::test]
async fn the_shipped_table_prices_a_known_model_and_an_unknown_one_has_no_cost() {
    let server = MockOpenAi::start().await.unwrap();
    let done = || {
        Completion::tool_calls(
            None,
            [ToolCall::new("t1", "terminate", r#"{"status":"success"}"#)],
        )
        .with_usage(1_000_000, 0)
    };
    server.push(done()).push(done());
    // gpt-4o from the table: $2.50 per million input tokens.
    let mut agent = ToolCallAgent::new(model(&server, None));
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert!((outcome.usage.cost_usd.unwrap() - 2.5).abs() < 1e-9);

    let mut settings = LlmSettings::new("my-local-model", server.base_url()).with_api_key("k");
    settings.max_attempts = 1;
    let mut agent = ToolCallAgent::new(Arc::new(Model::new(settings).unwrap()));
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert_eq!(outcome.usage.cost_usd, None);
    assert_eq!(outcome.usage.unpriced_calls, 1);
}

/// Runs an agent with `bash` (in `dir`) and `budget` over `server`'s script.
async fn run_with_budget(
    server: &MockOpenAi,
    price: Option<Price>,
    budget: Budget,
    dir: &Path,
) -> (ToolCallAgent, agent_core::RunOutcome) {
    let mut agent = ToolCallAgent::new(model(server, price))
        .with_tool(Bash::new().with_cwd(dir))
        .with_budget(budget);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    (agent, outcome)
}

#[tokio::test]
async fn a_token_budget_ends_the_run_after_the_step_that_reached_it() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The first step leaves a background process in the shell's group.
    server.push(bash_call("c1", "sleep 600 & echo $! > sleep.pid").with_usage(500, 100));
    server.push(bash_call("c2", "echo two").with_usage(500, 100));
    let budget = Budget {
        max_tokens: Some(1_000),
        ..Budget::default()
    };
    let (agent, outcome) = run_with_budget(&server, None, budget, dir.path()).await;
    let RunStatus::Finished(FinishReason::Budget(exceeded)) = &outcome.status else {
        panic!("{}", outcome.status);
    };
    assert_eq!(exceeded.kind, BudgetKind::Tokens);
    assert_eq!(outcome.steps.len(), 2);
    assert!(
        outcome
            .text()
            .ends_with("Terminated: token budget reached: 1200 of 1000 tokens used"),
        "{}",
        outcome.text()
    );
    assert_eq!(outcome.usage.total_tokens(), 1200);
    check_tool_pairing(agent.messages(), false).unwrap();
    // No third request: the strict mock would have reported an exhausted script.
    assert_eq!(server.request_count(), 2);
    server.verify().unwrap();
    wait_gone(&dir.path().join("sleep.pid")).await;
}

#[tokio::test]
async fn a_cost_budget_ends_the_run_with_what_was_spent() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    server.push(bash_call("c1", "echo one").with_usage(500_000, 100_000));
    server.push(bash_call("c2", "echo two").with_usage(500_000, 100_000));
    let budget = Budget {
        max_cost_usd: Some(1.0),
        ..Budget::default()
    };
    // $1 per million tokens in and out: $0.60 a step.
    let (agent, outcome) =
        run_with_budget(&server, Some(Price::new(1.0, 1.0)), budget, dir.path()).await;
    let RunStatus::Finished(FinishReason::Budget(exceeded)) = &outcome.status else {
        panic!("{}", outcome.status);
    };
    assert_eq!(exceeded.kind, BudgetKind::Cost);
    assert!(
        outcome
            .text()
            .ends_with("Terminated: cost budget reached: $1.2000 of $1.0000 spent"),
        "{}",
        outcome.text()
    );
    check_tool_pairing(agent.messages(), false).unwrap();
    assert_eq!(server.request_count(), 2);
    server.verify().unwrap();
}

#[tokio::test]
async fn a_time_budget_interrupts_the_step_in_progress_and_stops_its_process() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    server.push(bash_call(
        "c1",
        "sh -c 'echo $$ > sleep.pid; exec sleep 600'",
    ));
    let budget = Budget {
        max_duration: Some(Duration::from_secs(5)),
        ..Budget::default()
    };
    let (agent, outcome) = run_with_budget(&server, None, budget, dir.path()).await;
    let RunStatus::Finished(FinishReason::Budget(exceeded)) = &outcome.status else {
        panic!("{}", outcome.status);
    };
    assert_eq!(exceeded.kind, BudgetKind::Time);
    assert!(exceeded.used >= 5.0);
    assert!(
        outcome
            .text()
            .starts_with("Terminated: time budget reached: "),
        "{}",
        outcome.text()
    );
    // The interrupted call was answered, so the conversation can go on.
    check_tool_pairing(agent.messages(), false).unwrap();
    assert_eq!(
        agent.messages().last().unwrap().text(),
        "Error: Tool 'bash' did not complete: the run's time budget ran out"
    );
    server.verify().unwrap();
    wait_gone(&dir.path().join("sleep.pid")).await;
}
