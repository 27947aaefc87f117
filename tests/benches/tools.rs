//! Local-tool benchmarks (`cargo xtask bench`): the round trip of a trivial `bash` command and
//! of a trivial `python_execute` call through `ToolCollection::execute` (the agent's path),
//! median of many runs, and a whole agent step that runs `bash echo hi`. OpenManus needs at
//! least 200 ms per bash call (it polls the shell every 0.2 s).

#![allow(clippy::print_stdout, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{Agent, Role, ToolCall};
use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError};
use agent_toolcall::ToolCallAgent;
use agent_tools::{Bash, PythonExecute, ToolCollection, ToolContext};
use async_trait::async_trait;
use serde_json::{Value, json};

const RUNS: usize = 2_000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(at).copied().unwrap_or_default()
}

async fn round_trips(
    tools: &ToolCollection,
    name: &str,
    args: &Value,
    expect: &str,
) -> Option<Vec<Duration>> {
    let ctx = ToolContext::default();
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let result = tools.execute(name, args.clone(), &ctx).await.ok()?;
        times.push(started.elapsed());
        if !result.to_string().contains(expect) {
            println!("unexpected {name} result: {result}");
            return None;
        }
    }
    times.sort();
    Some(times)
}

fn report(label: &str, first: Duration, times: &[Duration]) {
    println!(
        "  {label:32} first call {:7.2} ms   median {:6.3} ms   p90 {:6.3} ms   p99 {:6.3} ms",
        first.as_secs_f64() * 1e3,
        percentile(times, 0.5).as_secs_f64() * 1e3,
        percentile(times, 0.9).as_secs_f64() * 1e3,
        percentile(times, 0.99).as_secs_f64() * 1e3,
    );
}

/// A zero-latency model that asks for `bash echo hi` every step.
struct EchoHiModel;

#[async_trait]
impl ChatModel for EchoHiModel {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let n = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        Ok(ChatResponse::tool_calls(
            None,
            vec![ToolCall::new(
                format!("c{n}"),
                "bash",
                r#"{"command":"echo hi"}"#,
            )],
        ))
    }
}

fn main() {
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    else {
        println!("could not start a tokio runtime");
        return;
    };
    runtime.block_on(async {
        println!("tools benchmarks: {RUNS} calls each through ToolCollection::execute (release)\n");
        let ctx = ToolContext::default();

        let mut tools = ToolCollection::new();
        tools.add_tool(Bash::new());
        tools.add_tool(PythonExecute::new());

        let bash_args = json!({"command": "echo hi"});
        let started = Instant::now();
        let _ = tools.execute("bash", bash_args.clone(), &ctx).await;
        let bash_first = started.elapsed();
        if let Some(times) = round_trips(&tools, "bash", &bash_args, "hi").await {
            report("bash `echo hi`", bash_first, &times);
        }

        let python_args = json!({"code": "print(1)"});
        let started = Instant::now();
        let _ = tools.execute("python_execute", python_args.clone(), &ctx).await;
        let python_first = started.elapsed();
        if let Some(times) = round_trips(&tools, "python_execute", &python_args, "1").await {
            report("python_execute `print(1)`", python_first, &times);
        }
        tools.cleanup_all().await;

        // A whole agent step: think (zero-latency model) + act (bash echo hi) + memory.
        let steps = 200u32;
        let mut agent = ToolCallAgent::new(Arc::new(EchoHiModel))
            .with_tools(ToolCollection::new())
            .with_tool(Bash::new())
            .with_max_steps(steps);
        let started = Instant::now();
        let outcome = agent.run(Some("Say hi many times.".into())).await;
        let elapsed = started.elapsed();
        if outcome.is_ok_and(|o| o.steps.len() == steps as usize) {
            println!(
                "\n  agent step running `bash echo hi`: {:.3} ms per step over {steps} steps (first includes starting bash)",
                elapsed.as_secs_f64() * 1e3 / f64::from(steps)
            );
        } else {
            println!("\n  the agent run did not complete");
        }
    });
}
