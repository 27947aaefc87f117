//! A ToolCallAgent run end to end, offline: a scripted model asks for two tool calls and then
//! `terminate`; the example prints the agent's events as they happen and the run's outcome.
//!
//! ```text
//! cargo run -p openmanus-agent-toolcall --example quickstart
//! RUST_LOG=info cargo run -p openmanus-agent-toolcall --example quickstart   # with the agent's logs
//! ```

#![allow(clippy::print_stdout)]

use std::sync::Arc;

use agent_core::{Agent, AgentEvent};
use agent_testkit::{EchoTool, ScriptedModel, ToolProbe, tool_call};
use agent_toolcall::ToolCallAgent;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();

    // The model's side of the conversation, scripted: no network, no API key.
    let model = Arc::new(ScriptedModel::new());
    model
        .push_tool_calls(
            "I'll note the two facts first.",
            [
                tool_call(
                    "call_1",
                    "echo",
                    r#"{"text":"Rust has no garbage collector."}"#,
                ),
                tool_call(
                    "call_2",
                    "echo",
                    r#"{"text":"Cargo builds and tests the workspace."}"#,
                ),
            ],
        )
        .push_tool_calls(
            "Both facts are recorded.",
            [tool_call("call_3", "terminate", r#"{"status":"success"}"#)],
        );

    let probe = ToolProbe::new();
    let mut agent = ToolCallAgent::new(model.clone())
        .with_name("quickstart")
        .with_tool(EchoTool::new(&probe));

    let mut events = agent.base().events().subscribe();
    let printer = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            match event {
                AgentEvent::StepStarted { step, max_steps } => {
                    println!("── step {step}/{max_steps}")
                }
                AgentEvent::Thought {
                    content,
                    tool_calls,
                    ..
                } => {
                    println!("   thought: {content}");
                    for call in tool_calls {
                        println!(
                            "   wants:   {}({})",
                            call.function.name, call.function.arguments
                        );
                    }
                }
                AgentEvent::ToolCallFinished { observation, .. } => {
                    println!(
                        "   result:  {}",
                        observation.replace('\n', "\n            ")
                    );
                }
                AgentEvent::Finished { status, steps, .. } => {
                    println!("── {status} after {steps} step(s)");
                    break;
                }
                _ => {}
            }
        }
    });

    match agent
        .run(Some("Record two facts about Rust, then stop.".into()))
        .await
    {
        Ok(outcome) => {
            let _ = printer.await;
            println!("\n{}", outcome.text());
            println!(
                "\nmodel requests: {}, memory: {} messages",
                model.requests().len(),
                agent.messages().len()
            );
        }
        Err(error) => println!("the run could not start: {error}"),
    }
}
