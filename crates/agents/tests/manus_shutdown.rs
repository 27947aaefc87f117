//! Manus's `shutdown` hook ends its life: every MCP server is disconnected, the MCP tools leave
//! its tool set, and servers still waiting for the lazy first `think()` are forgotten. Our own
//! `openmanus` MCP server, served in process over streamable HTTP on loopback.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_config::{McpServerConfig, McpTransport};
use agent_core::{Agent, CancellationToken};
use agent_mcp::{HTTP_PATH, McpToolServer};
use agent_testkit::{ScriptedModel, tool_call};
use agent_toolcall::ToolCallHooks;
use agents::{AgentOptions, manus_lazy_mcp, manus_with_mcp};

const BASH: &str = "mcp_tools_bash";
/// Manus's own tools, in order (`browser_use` only with the `browser` feature).
fn own_tools() -> Vec<&'static str> {
    let mut tools = vec![
        "python_execute",
        "browser_use",
        "str_replace_editor",
        "ask_human",
        "terminate",
    ];
    if !cfg!(feature = "browser") {
        tools.retain(|tool| *tool != "browser_use");
    }
    tools
}

/// Serves the `openmanus` MCP server on 127.0.0.1:0 until `shutdown` is cancelled.
async fn serve(shutdown: &CancellationToken) -> (McpServerConfig, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let serve = McpToolServer::openmanus().serve_http(listener, shutdown.clone());
    let task = tokio::spawn(async move { serve.await.unwrap() });
    let config = McpServerConfig {
        id: "tools".into(),
        transport: McpTransport::StreamableHttp {
            url: format!("http://{address}{HTTP_PATH}"),
            headers: Default::default(),
        },
    };
    (config, task)
}

#[tokio::test]
async fn shutdown_disconnects_manus_from_its_mcp_servers() {
    let stop = CancellationToken::new();
    let (config, task) = serve(&stop).await;
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new());
    model.push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    let (mut agent, warnings) =
        manus_with_mcp(model.clone(), &AgentOptions::new(dir.path()), &[config]).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    let outcome = agent.run(Some("Stop.".into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    // The end of a run keeps the servers.
    assert!(agent.hooks().clients().is_alive());
    assert!(agent.core().tools.contains(BASH));

    let (core, hooks) = agent.parts_mut();
    hooks.shutdown(core).await;
    assert!(agent.hooks().clients().server_ids().is_empty());
    assert!(agent.hooks().mcp_tool_names().is_empty());
    assert_eq!(agent.core().tools.names(), own_tools());

    stop.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn shutdown_before_the_first_think_forgets_the_lazy_servers() {
    let stop = CancellationToken::new();
    let (config, task) = serve(&stop).await;
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new());
    let mut agent = manus_lazy_mcp(model.clone(), &AgentOptions::new(dir.path()), vec![config]);
    assert!(agent.hooks().is_pending());

    let (core, hooks) = agent.parts_mut();
    hooks.shutdown(core).await;
    assert!(!agent.hooks().is_pending());

    // A later run would not connect them.
    model.push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    agent.run(Some("Stop.".into())).await.unwrap();
    assert!(agent.hooks().clients().server_ids().is_empty());
    assert_eq!(model.requests()[0].tool_names(), own_tools());

    stop.cancel();
    task.await.unwrap();
}
