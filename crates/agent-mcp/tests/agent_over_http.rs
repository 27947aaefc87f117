//! MCPAgent end to end: the real HTTP LLM client against the strict mock OpenAI server, with the
//! third-party server-everything (stdio) for work and our server for `terminate`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_core::{Agent, FinishReason, Role, RunStatus, ToolCall};
use agent_llm::{LlmClient, LlmSettings};
use agent_mcp::{McpClientOptions, McpClients, mcp_agent};
use agent_testkit::{Completion, MockOpenAi};
use common::*;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(120);

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

#[tokio::test]
async fn mcp_agent_over_http_uses_server_everything_then_terminates() {
    let pids = tempfile::tempdir().unwrap();
    let ev_pidfile = pids.path().join("ev");
    let om_pidfile = pids.path().join("om");
    let configs = [
        bash_with_pid(
            "ev",
            &ev_pidfile,
            &format!("exec '{}' stdio", everything_bin().display()),
        ),
        bash_with_pid(
            "om",
            &om_pidfile,
            &format!(
                "exec '{}' --transport stdio",
                env!("CARGO_BIN_EXE_openmanus-mcp-server")
            ),
        ),
    ];
    let (clients, warnings) = McpClients::connect_all(&configs, McpClientOptions::default()).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    let ev_pid = read_pid(&ev_pidfile);
    let om_pid = read_pid(&om_pidfile);

    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key("sk-mcp");
    server
        .push(Completion::tool_calls(
            Some("Echo first.".into()),
            [call("c1", "mcp_ev_echo", json!({"message": "over-http"}))],
        ))
        .push(Completion::tool_calls(
            None,
            [call("c2", "mcp_ev_get-sum", json!({"a": 20, "b": 22}))],
        ))
        .push(Completion::tool_calls(
            None,
            [call("c3", "mcp_ev_get-tiny-image", json!({}))],
        ))
        .push(Completion::tool_calls(
            Some("All done.".into()),
            [call("c4", "mcp_om_terminate", json!({"status": "success"}))],
        ));
    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-mcp");
    settings.max_attempts = 1;
    let llm = Arc::new(LlmClient::new(settings).unwrap());
    let mut agent = mcp_agent(llm, clients).with_max_steps(10);

    let outcome = tokio::time::timeout(LIMIT, agent.run(Some("Use the tools.".into())))
        .await
        .expect("the agent hung")
        .unwrap();
    assert!(
        matches!(&outcome.status, RunStatus::Finished(FinishReason::SpecialTool { name }) if name == "mcp_om_terminate"),
        "terminate must end the run before max_steps: {outcome:?}"
    );
    assert_eq!(outcome.steps.len(), 4);
    server.verify().unwrap();
    assert_eq!(server.request_count(), 4);

    // The tools the model was offered: both servers', prefixed.
    let first = &server.requests()[0].body;
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for name in [
        "mcp_ev_echo",
        "mcp_ev_get-sum",
        "mcp_ev_get-tiny-image",
        "mcp_om_bash",
        "mcp_om_terminate",
    ] {
        assert!(offered.contains(&name), "{offered:?}");
    }
    let echo_schema = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp_ev_echo")
        .unwrap()["function"]["parameters"]
        .clone();
    assert_eq!(echo_schema["properties"]["message"]["type"], "string");

    // The tool results reached the model.
    let last = server.requests()[3].body.to_string();
    assert!(last.contains("Echo: over-http"), "{last}");
    assert!(last.contains("42"), "{last}");
    assert!(last.contains("data:image/png;base64,"), "{last}");
    let messages = agent.messages();
    assert!(
        messages
            .iter()
            .any(|m| m.role == Role::Tool && m.text().contains("Echo: over-http"))
    );
    assert!(messages.iter().any(|m| {
        m.role == Role::System
            && m.text()
                .contains("`mcp_ev_get-tiny-image` returned an image")
    }));

    agent.hooks_mut().disconnect().await;
    assert_gone(ev_pid, "server-everything").await;
    assert_gone(om_pid, "openmanus-mcp-server").await;
}
