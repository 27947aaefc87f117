//! Our MCP server driven by a real MCP client (ours, on rmcp), and MCPAgent end to end against
//! our server and the third-party server-everything.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_config::{McpServerConfig, McpTransport};
use agent_core::{Agent, FinishReason, Role, RunStatus};
use agent_mcp::{
    McpClientOptions, McpClients, McpToolServer, ReconnectPolicy, SERVICE_GONE, mcp_agent,
};
use agent_testkit::{ScriptedModel, tool_call};
use agent_tools::Tool;
use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(60);

fn our_server(id: &str) -> McpServerConfig {
    stdio(
        id,
        env!("CARGO_BIN_EXE_openmanus-mcp-server"),
        &["--transport", "stdio"],
    )
}

/// Connects without reconnection: these tests check what happens when a server goes away.
async fn connect(configs: &[McpServerConfig]) -> McpClients {
    let options = McpClientOptions {
        reconnect: ReconnectPolicy::never(),
        ..McpClientOptions::default()
    };
    let (clients, warnings) = McpClients::connect_all(configs, options).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    clients
}

fn find(clients: &McpClients, name: &str) -> Arc<dyn Tool> {
    clients
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap()
}

async fn exercise_our_server(clients: &McpClients, id: &str) {
    let names: Vec<String> = clients
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            format!("mcp_{id}_bash"),
            format!("mcp_{id}_str_replace_editor"),
            format!("mcp_{id}_terminate")
        ]
    );
    // Full schemas: the editor's enum and the terminate status enum survive.
    let editor = find(clients, &format!("mcp_{id}_str_replace_editor"));
    assert_eq!(
        editor.parameters(),
        agent_tools::StrReplaceEditor::new().parameters(),
        "schema changed on the way through MCP"
    );
    let schema = editor.parameters();
    assert!(
        schema["properties"]["command"]["enum"]
            .as_array()
            .unwrap()
            .len()
            >= 5,
        "{schema}"
    );

    let bash = find(clients, &format!("mcp_{id}_bash"));
    let r = bash
        .execute(json!({"command": "echo hello-from-mcp"}), &ctx())
        .await
        .unwrap();
    assert!(
        r.output.as_deref().unwrap().contains("hello-from-mcp"),
        "{r:?}"
    );
    // One persistent bash session.
    bash.execute(json!({"command": "export OM_X=persisted"}), &ctx())
        .await
        .unwrap();
    let r = bash
        .execute(json!({"command": "echo $OM_X"}), &ctx())
        .await
        .unwrap();
    assert!(r.output.as_deref().unwrap().contains("persisted"), "{r:?}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("note.txt");
    let path = file.to_str().unwrap();
    let r = editor
        .execute(
            json!({"command": "create", "path": path, "file_text": "alpha\nbeta\n"}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "alpha\nbeta\n");
    let r = editor
        .execute(
            json!({"command": "str_replace", "path": path, "old_str": "beta", "new_str": "gamma"}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "alpha\ngamma\n");

    // Tool failures come back as MCP tool errors.
    let missing = dir.path().join("missing.txt");
    let r = editor
        .execute(
            json!({"command": "view", "path": missing.to_str().unwrap()}),
            &ctx(),
        )
        .await
        .unwrap();
    assert!(r.is_error(), "{r:?}");
    let r = editor
        .execute(json!({"command": "explode", "path": path}), &ctx())
        .await
        .unwrap();
    assert!(
        r.is_error() && r.error.as_deref().unwrap().contains("Invalid arguments"),
        "{r:?}"
    );
}

#[tokio::test]
async fn our_server_over_stdio() {
    let pids = tempfile::tempdir().unwrap();
    let pidfile = pids.path().join("pid");
    let mut clients = connect(&[tracked(our_server("openmanus"), &pidfile)]).await;
    let pid = read_pid(&pidfile);
    exercise_our_server(&clients, "openmanus").await;
    clients.disconnect_all().await;
    assert_gone(pid, "openmanus-mcp-server").await;
}

#[tokio::test]
async fn our_server_over_streamable_http() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(McpToolServer::openmanus().serve_http(listener, shutdown.clone()));
    let config = McpServerConfig {
        id: "om".into(),
        transport: McpTransport::StreamableHttp {
            url: format!("http://{addr}/mcp"),
            headers: Default::default(),
        },
    };
    let mut clients = connect(&[config]).await;
    exercise_our_server(&clients, "om").await;
    clients.disconnect_all().await;
    shutdown.cancel();
    tokio::time::timeout(LIMIT, server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn mcp_agent_uses_tools_then_terminates_through_the_servers_terminate() {
    let pids = tempfile::tempdir().unwrap();
    let pidfile = pids.path().join("pid");
    let clients = connect(&[tracked(our_server("openmanus"), &pidfile)]).await;
    let pid = read_pid(&pidfile);
    let model = Arc::new(ScriptedModel::new());
    model.push_tool_calls(
        "",
        [tool_call(
            "c1",
            "mcp_openmanus_bash",
            r#"{"command":"echo agent-was-here"}"#,
        )],
    );
    model.push_tool_calls(
        "Done.",
        [tool_call(
            "c2",
            "mcp_openmanus_terminate",
            r#"{"status":"success"}"#,
        )],
    );
    let mut agent = mcp_agent(model.clone(), clients);
    let outcome = tokio::time::timeout(LIMIT, agent.run(Some("Say hi".into())))
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(&outcome.status, RunStatus::Finished(FinishReason::SpecialTool { name }) if name == "mcp_openmanus_terminate"),
        "W22: the prefixed terminate must finish the run: {outcome:?}"
    );
    assert_eq!(outcome.steps.len(), 2);
    let requests = model.requests();
    assert_eq!(
        requests[0].tool_names(),
        vec![
            "mcp_openmanus_bash",
            "mcp_openmanus_str_replace_editor",
            "mcp_openmanus_terminate"
        ]
    );
    let messages = agent.messages();
    assert!(messages.iter().any(|m| m.role == Role::System
        && m.text()
            == "New tools available: mcp_openmanus_bash, mcp_openmanus_str_replace_editor, mcp_openmanus_terminate"));
    assert!(
        messages
            .iter()
            .any(|m| m.role == Role::Tool && m.text().contains("agent-was-here"))
    );

    // A second run works: cleanup did not disconnect.
    agent.core_mut().base.reset_state().unwrap();
    model.push_tool_calls(
        "",
        [tool_call(
            "c3",
            "mcp_openmanus_terminate",
            r#"{"status":"success"}"#,
        )],
    );
    let outcome = tokio::time::timeout(LIMIT, agent.run(Some("Again".into())))
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(
            outcome.status,
            RunStatus::Finished(FinishReason::SpecialTool { .. })
        ),
        "{outcome:?}"
    );
    agent.hooks_mut().disconnect().await;
    assert_gone(pid, "openmanus-mcp-server").await;
}

#[tokio::test]
async fn mcp_agent_with_server_everything_notes_images_and_stops_when_the_server_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let config = bash_with_pid(
        "ev",
        &pidfile,
        &format!("exec '{}' stdio", everything_bin().display()),
    );
    let clients = connect(&[config]).await;
    let model = Arc::new(ScriptedModel::new());
    model.push_tool_calls(
        "",
        [tool_call("c1", "mcp_ev_echo", r#"{"message":"ping"}"#)],
    );
    model.push_tool_calls("", [tool_call("c2", "mcp_ev_get-tiny-image", "{}")]);
    let mut agent = mcp_agent(model.clone(), clients).with_max_steps(2);
    let outcome = tokio::time::timeout(LIMIT, agent.run(Some("Use the tools".into())))
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome.status, RunStatus::MaxSteps(2)),
        "{outcome:?}"
    );
    let messages = agent.messages();
    assert!(
        messages
            .iter()
            .any(|m| m.role == Role::Tool && m.text().contains("Echo: ping"))
    );
    assert!(messages.iter().any(|m| {
        m.role == Role::System
            && m.text()
                .contains("`mcp_ev_get-tiny-image` returned an image")
    }));

    // The server goes away: the next run finishes at once without asking the model.
    let pid = read_pid(&pidfile);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    tokio::time::timeout(LIMIT, agent.hooks().clients().wait_server_closed("ev"))
        .await
        .unwrap();
    agent.core_mut().base.reset_state().unwrap();
    let before = model.requests().len();
    let outcome = tokio::time::timeout(LIMIT, agent.run(Some("More".into())))
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(&outcome.status, RunStatus::Finished(FinishReason::Other(r)) if r == SERVICE_GONE),
        "{outcome:?}"
    );
    assert_eq!(model.requests().len(), before);
    assert!(agent.messages().iter().any(|m| {
        m.role == Role::System
            && m.text()
                .starts_with("Tools no longer available: mcp_ev_echo")
    }));
    agent.hooks_mut().disconnect().await;
    assert_gone(pid, "server-everything").await;
}

#[tokio::test]
async fn refresh_installs_new_tools_and_removes_gone_ones() {
    let clients = connect(&[our_server("a"), our_server("b")]).await;
    let model = Arc::new(ScriptedModel::new());
    // Step 1 kills server b from inside its own bash tool (its parent is the server process).
    model.push_tool_calls(
        "",
        [tool_call(
            "c1",
            "mcp_b_bash",
            r#"{"command":"kill -9 $PPID"}"#,
        )],
    );
    model.push_text("thinking");
    let mut agent = agent_toolcall::ToolCallAgent::new(model.clone())
        .with_tools(agent_tools::ToolCollection::new())
        .with_max_steps(1)
        .with_hooks(agent_mcp::McpAgentHooks::new(clients).with_refresh_interval(1));
    let first = tokio::time::timeout(LIMIT, agent.run(Some("go".into())))
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(first.status, RunStatus::MaxSteps(1)), "{first:?}");
    // Wait until the client has seen server b go, so the next refresh cannot race its death.
    tokio::time::timeout(LIMIT, agent.hooks().clients().wait_server_closed("b"))
        .await
        .unwrap();
    let outcome = tokio::time::timeout(LIMIT, agent.run(Some("go on".into())))
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome.status, RunStatus::MaxSteps(1)),
        "{outcome:?}"
    );
    let requests = model.requests();
    assert_eq!(requests[0].tool_names().len(), 6);
    assert_eq!(
        requests[1].tool_names(),
        vec!["mcp_a_bash", "mcp_a_str_replace_editor", "mcp_a_terminate"]
    );
    assert!(agent.messages().iter().any(|m| m.role == Role::System
        && m.text()
            == "Tools no longer available: mcp_b_bash, mcp_b_str_replace_editor, mcp_b_terminate"));
    assert!(
        agent
            .messages()
            .iter()
            .any(|m| m.role == Role::Tool && m.text().contains("Error"))
    );

    // A server connected later: its tools are announced and callable (W23).
    agent
        .hooks_mut()
        .clients_mut()
        .connect(&our_server("c"))
        .await
        .unwrap();
    agent.core_mut().base.reset_state().unwrap();
    agent.core_mut().base.max_steps = 2;
    model.push_tool_calls(
        "",
        [tool_call(
            "c2",
            "mcp_c_bash",
            r#"{"command":"echo from-c"}"#,
        )],
    );
    model.push_text("ok");
    let outcome = tokio::time::timeout(LIMIT, agent.run(Some("again".into())))
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome.status, RunStatus::MaxSteps(2)),
        "{outcome:?}"
    );
    assert!(agent.messages().iter().any(|m| m.role == Role::System
        && m.text()
            == "New tools available: mcp_c_bash, mcp_c_str_replace_editor, mcp_c_terminate"));
    assert!(
        agent
            .messages()
            .iter()
            .any(|m| m.role == Role::Tool && m.text().contains("from-c"))
    );
    agent.hooks_mut().disconnect().await;
}
