//! Agent-loop benchmarks (`cargo xtask bench`): what the framework costs beside a zero-latency
//! model. Figures only — nothing here passes or fails. Each figure is reported next to a
//! baseline measured in the same invocation.

#![allow(clippy::print_stdout, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{Agent, Role, ToolCall};
use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError};
use agent_testkit::{EchoTool, ToolProbe};
use agent_toolcall::{Policies, ToolCallAgent};
use agent_tools::{Terminate, ToolCollection, ToolContext};
use async_trait::async_trait;
use serde_json::json;

/// A zero-latency model: an `echo` call per step until `steps - 1` assistant turns exist, then
/// `terminate`. It records nothing, so its own cost stays flat.
struct LoopModel {
    steps: usize,
}

#[async_trait]
impl ChatModel for LoopModel {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let done = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        let call = if done + 1 >= self.steps {
            ToolCall::new(format!("c{done}"), "terminate", r#"{"status":"success"}"#)
        } else {
            ToolCall::new(
                format!("c{done}"),
                "echo",
                format!(r#"{{"text":"step {done}"}}"#),
            )
        };
        Ok(ChatResponse::tool_calls(
            Some(format!("Step {done}: calling a tool.")),
            vec![call],
        ))
    }
}

fn new_agent(steps: usize, policies: Policies) -> ToolCallAgent {
    let probe = ToolProbe::new();
    let mut tools = ToolCollection::new();
    tools.add_tool(EchoTool::new(&probe));
    tools.add_tool(Terminate);
    ToolCallAgent::new(Arc::new(LoopModel { steps }))
        .with_tools(tools)
        .with_system_prompt("You are a benchmark agent.")
        .with_next_step_prompt("Pick the next tool.")
        .with_max_steps(u32::try_from(steps).unwrap_or(u32::MAX))
        .with_policies(policies)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Baseline: the unavoidable work of a step without the agent — one model call on a request of
/// the same shape and one tool execution — repeated for the same number of steps.
async fn baseline_run(steps: usize) -> Duration {
    let model = LoopModel { steps };
    let probe = ToolProbe::new();
    let mut tools = ToolCollection::new();
    tools.add_tool(EchoTool::new(&probe));
    tools.add_tool(Terminate);
    let ctx = ToolContext::default();
    let started = Instant::now();
    let request = ChatRequest::new(vec![agent_core::Message::user_message("task")])
        .with_tools(tools.to_params().to_vec(), agent_core::ToolChoice::Auto);
    for i in 0..steps {
        let response = model.complete(request.clone()).await.unwrap_or_default();
        let _ = response;
        let _ = tools
            .execute("echo", json!({"text": format!("step {i}")}), &ctx)
            .await;
    }
    started.elapsed()
}

async fn agent_run(steps: usize, policies: Policies) -> Duration {
    let mut agent = new_agent(steps, policies);
    let started = Instant::now();
    let outcome = agent.run(Some("Run the benchmark task.".into())).await;
    let elapsed = started.elapsed();
    assert!(
        outcome.is_ok_and(|o| o.steps.len() == steps),
        "benchmark run did not complete"
    );
    elapsed
}

async fn request_bytes(steps: usize, policies: Policies) -> (usize, usize, usize) {
    /// Wraps LoopModel and measures the JSON size of every request.
    struct Sizing {
        inner: LoopModel,
        sizes: std::sync::Mutex<Vec<usize>>,
    }
    #[async_trait]
    impl ChatModel for Sizing {
        async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
            let size = serde_json::to_vec(&request).map(|v| v.len()).unwrap_or(0);
            if let Ok(mut sizes) = self.sizes.lock() {
                sizes.push(size);
            }
            self.inner.complete(request).await
        }
    }
    let model = Arc::new(Sizing {
        inner: LoopModel { steps },
        sizes: Default::default(),
    });
    let mut agent = new_agent(steps, policies);
    agent.core_mut().llm = model.clone();
    let _ = agent.run(Some("Run the benchmark task.".into())).await;
    let sizes = model.sizes.lock().map(|s| s.clone()).unwrap_or_default();
    (
        sizes.first().copied().unwrap_or(0),
        sizes.last().copied().unwrap_or(0),
        sizes.iter().sum(),
    )
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build();
    let Ok(runtime) = runtime else {
        println!("could not start a tokio runtime");
        return;
    };
    runtime.block_on(async {
        const STEPS: usize = 20;
        println!("agent_loop benchmarks (release; per-step figures are the best of 30 runs)\n");

        // Warm up.
        for _ in 0..20 {
            agent_run(STEPS, Policies::default()).await;
            baseline_run(STEPS).await;
        }
        let mut baseline = Duration::MAX;
        let mut improved = Duration::MAX;
        let mut openmanus = Duration::MAX;
        for _ in 0..30 {
            baseline = baseline.min(baseline_run(STEPS).await);
            improved = improved.min(agent_run(STEPS, Policies::default()).await);
            openmanus = openmanus.min(agent_run(STEPS, Policies::openmanus()).await);
        }
        let per = |d: Duration| d.as_secs_f64() * 1e6 / STEPS as f64;
        println!("per-step cost, {STEPS}-step run, trivial tool, zero-latency model:");
        println!("  baseline (model call + tool call, no agent): {:8.2} µs/step", per(baseline));
        println!(
            "  ToolCallAgent, default policies:             {:8.2} µs/step  ({:.1}x baseline, overhead {:.2} µs/step)",
            per(improved),
            per(improved) / per(baseline),
            per(improved) - per(baseline)
        );
        println!(
            "  ToolCallAgent, OpenManus policies:           {:8.2} µs/step  ({:.1}x baseline, overhead {:.2} µs/step)",
            per(openmanus),
            per(openmanus) / per(baseline),
            per(openmanus) - per(baseline)
        );

        println!("\nrequest body (JSON bytes), step 1 -> step {STEPS}, and all requests together:");
        for (label, policies) in [("default", Policies::default()), ("OpenManus", Policies::openmanus())] {
            let (first, last, total) = request_bytes(STEPS, policies).await;
            println!("  {label:9}: {first} -> {last} bytes; {total} bytes in all");
        }

        for agents in [1_000usize, 10_000] {
            let rss_before = rss_kib();
            let started = Instant::now();
            let mut handles = Vec::with_capacity(agents);
            for _ in 0..agents {
                handles.push(tokio::spawn(async move {
                    let mut agent = new_agent(STEPS, Policies::default());
                    let outcome = agent.run(Some("Run the benchmark task.".into())).await;
                    (agent, outcome.map(|o| o.steps.len()).unwrap_or(0))
                }));
            }
            let mut kept = Vec::with_capacity(agents);
            let mut steps = 0;
            for handle in handles {
                if let Ok((agent, n)) = handle.await {
                    steps += n;
                    kept.push(agent);
                }
            }
            let elapsed = started.elapsed();
            let rss_after = rss_kib();
            println!(
                "\n{agents} agents x {STEPS} steps concurrently: {steps} steps in {:.1} ms = {:.0} steps/s; \
                 resident memory with all {agents} finished agents (and their memories) alive: +{:.1} MiB ({:.1} KiB/agent)",
                elapsed.as_secs_f64() * 1e3,
                steps as f64 / elapsed.as_secs_f64(),
                rss_after.saturating_sub(rss_before) as f64 / 1024.0,
                rss_after.saturating_sub(rss_before) as f64 / agents as f64,
            );
            drop(kept);
        }
    });
}
