//! MCPAgent's `shutdown` hook ends the agent's life: the end of a run leaves the stdio server
//! running (a second run may use it), the shutdown hook stops its process and takes the MCP
//! tools out of the tool set. Our own `openmanus-mcp-server` over stdio: no npm peer needed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use agent_core::Agent;
use agent_mcp::{McpClientOptions, McpClients, mcp_agent};
use agent_testkit::{ScriptedModel, tool_call};
use agent_toolcall::ToolCallHooks;
use common::*;

#[tokio::test]
async fn shutdown_disconnects_the_servers_that_runs_keep() {
    let pids = tempfile::tempdir().unwrap();
    let pidfile = pids.path().join("om");
    let config = bash_with_pid(
        "om",
        &pidfile,
        &format!(
            "exec '{}' --transport stdio",
            env!("CARGO_BIN_EXE_openmanus-mcp-server")
        ),
    );
    let (clients, warnings) = McpClients::connect_all(&[config], McpClientOptions::default()).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    let pid = read_pid(&pidfile);

    let model = Arc::new(ScriptedModel::new());
    model.push_tool_calls(
        "Done.",
        [tool_call(
            "t",
            "mcp_om_terminate",
            r#"{"status":"success"}"#,
        )],
    );
    let mut agent = mcp_agent(model.clone(), clients);
    let outcome = agent.run(Some("Stop at once.".into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    assert!(model.requests()[0].tool_names().contains(&"mcp_om_bash"));

    // The end of a run is not the end of the agent: the server lives on.
    assert!(alive(pid), "a run's cleanup must not stop the MCP server");
    assert!(agent.core().tools.contains("mcp_om_bash"));

    let (core, hooks) = agent.parts_mut();
    hooks.shutdown(core).await;
    assert_gone(pid, "openmanus-mcp-server").await;
    assert!(agent.hooks().clients().server_ids().is_empty());
    assert!(
        agent.core().tools.is_empty(),
        "{:?}",
        agent.core().tools.names()
    );
}
