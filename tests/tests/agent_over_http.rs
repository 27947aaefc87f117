//! A ToolCallAgent runs a multi-step tool conversation through the real HTTP client against the
//! strict mock OpenAI server; every request the agent sends must pass the mock's validation.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_core::{Agent, AgentEvent, Role, RunStatus, ToolCall};
use agent_llm::{LlmClient, LlmSettings};
use agent_testkit::{Completion, EchoTool, ImageTool, MockOpenAi, ToolProbe};
use agent_toolcall::{Policies, ToolCallAgent};
use serde_json::json;

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

async fn conversation(stream: bool, policies: Policies) {
    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key("sk-agent");
    server
        .push(
            Completion::tool_calls(
                Some("First, two notes.".into()),
                [
                    call("c1", "echo", json!({"text": "alpha"})),
                    call("c2", "echo", json!({"text": "beta"})),
                ],
            )
            .with_usage(120, 20),
        )
        .push(Completion::tool_calls(
            None,
            [call("c3", "screenshot", json!({"caption": "page"}))],
        ))
        .push(Completion::text("Looking at the screenshot, all is fine."))
        // A tool that does not exist: the agent records `Error: Unknown tool`, and the provider
        // must still accept the history that holds the call.
        .push(Completion::tool_calls(
            None,
            [call("c9", "no_such_tool", json!({}))],
        ))
        .push(Completion::tool_calls(
            None,
            [call("c4", "echo", json!({"text": ""}))],
        ))
        .push(Completion::tool_calls(
            Some("Done.".into()),
            [call("c5", "terminate", json!({"status": "success"}))],
        ));

    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-agent");
    settings.stream = stream;
    settings.max_attempts = 1;
    let probe = ToolProbe::new();
    let mut agent = ToolCallAgent::new(Arc::new(LlmClient::new(settings.clone()).unwrap()))
        .with_tool(EchoTool::new(&probe))
        .with_tool(ImageTool::new(&probe))
        .with_max_steps(10)
        .with_max_observe(2000)
        .with_policies(policies);
    let client = LlmClient::new(settings)
        .unwrap()
        .with_events(agent.base().events().clone());
    agent.core_mut().llm = Arc::new(client);
    let mut events = agent.base().events().subscribe();

    let outcome = agent
        .run(Some("Take notes and check the page.".into()))
        .await
        .unwrap();
    assert!(
        matches!(outcome.status, RunStatus::Finished(_)),
        "{}",
        outcome.text()
    );
    assert_eq!(outcome.steps.len(), 6);
    server
        .verify()
        .unwrap_or_else(|e| panic!("stream={stream} {policies:?}: {e}"));
    assert_eq!(server.request_count(), 6);
    assert_eq!(probe.calls(), ["c1", "c2", "c3", "c4"]);

    // The screenshot travelled to the vision model as an image part of a user message.
    let fourth = &server.requests()[3].body;
    let image_message = fourth["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"].is_array())
        .expect("an image message");
    assert_eq!(image_message["role"], "user");
    assert_eq!(
        image_message["content"][0]["text"],
        "Image returned by screenshot:"
    );
    assert!(
        image_message["content"][1]["image_url"]["url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/jpeg;base64,")
    );

    let tool_messages = agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .count();
    assert_eq!(tool_messages, 6);
    assert!(
        agent
            .messages()
            .iter()
            .any(|m| m.text() == "Error: Unknown tool 'no_such_tool'")
    );
    let usage: Vec<(u64, u64)> = std::iter::from_fn(|| events.try_recv().ok())
        .filter_map(|e| match e {
            AgentEvent::TokenUsage {
                prompt_tokens,
                completion_tokens,
                ..
            } => Some((prompt_tokens, completion_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(
        usage.len(),
        6,
        "every reply reports usage (scripted or estimated)"
    );
    assert_eq!(usage[0], (120, 20));
}

#[tokio::test]
async fn a_tool_conversation_over_http_passes_strict_validation() {
    for stream in [false, true] {
        conversation(stream, Policies::default()).await;
        conversation(stream, Policies::openmanus()).await;
    }
}
