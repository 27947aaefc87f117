//! Manus's two start paths with a real MCP server: our own `openmanus` tool server, served in
//! process over streamable HTTP on loopback.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use agent_config::{McpServerConfig, McpTransport};
use agent_core::{Agent, CancellationToken, Role};
use agent_mcp::{HTTP_PATH, McpToolServer};
use agent_testkit::{ScriptedModel, tool_call};
use agents::{AgentOptions, Manus, disconnect_mcp, manus, manus_lazy_mcp, manus_with_mcp};
use serde_json::json;
use tokio::task::JoinHandle;

const BASH: &str = "mcp_tools_bash";

/// The `openmanus` MCP server on 127.0.0.1:0; cancelling the token stops it.
struct Server {
    config: McpServerConfig,
    shutdown: CancellationToken,
    task: JoinHandle<()>,
}

impl Server {
    async fn start() -> Self {
        Gated::bind("tools").await.open()
    }

    fn serve(listener: tokio::net::TcpListener, id: &str) -> Self {
        let address = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let serve = McpToolServer::openmanus().serve_http(listener, shutdown.clone());
        let task = tokio::spawn(async move { serve.await.unwrap() });
        Self {
            config: McpServerConfig {
                id: id.into(),
                transport: McpTransport::StreamableHttp {
                    url: format!("http://{address}{HTTP_PATH}"),
                    headers: Default::default(),
                },
            },
            shutdown,
            task,
        }
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap();
    }
}

/// A port on 127.0.0.1 that takes connections (the kernel accepts them) but answers nothing
/// until [`Gated::open`] serves MCP on it: a server that hangs until the test says.
struct Gated {
    listener: tokio::net::TcpListener,
    config: McpServerConfig,
}

impl Gated {
    async fn bind(id: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        Self {
            listener,
            config: McpServerConfig {
                id: id.into(),
                transport: McpTransport::StreamableHttp {
                    url: format!("http://{address}{HTTP_PATH}"),
                    headers: Default::default(),
                },
            },
        }
    }

    fn open(self) -> Server {
        Server::serve(self.listener, &self.config.id)
    }
}

/// A bash call through the MCP server, then `terminate`.
fn script(model: &ScriptedModel) {
    model
        .push_tool_calls(
            "Using the server's shell.",
            [tool_call(
                "b1",
                BASH,
                &json!({"command": "echo hello-from-mcp"}).to_string(),
            )],
        )
        .push_tool_calls(
            "Done.",
            [tool_call("t", "terminate", r#"{"status":"success"}"#)],
        );
}

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

/// Runs the scripted task and checks what the model was offered and what the call returned.
async fn run_and_check(agent: &mut Manus, model: &ScriptedModel) {
    let outcome = agent.run(Some("Say hello.".into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let names = request.tool_names();
        assert_eq!(names[..own_tools().len()], own_tools());
        for tool in [
            "mcp_tools_bash",
            "mcp_tools_str_replace_editor",
            "mcp_tools_terminate",
        ] {
            assert!(names.contains(&tool), "{tool} missing from {names:?}");
        }
    }
    let observation = agent
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some("b1"))
        .unwrap()
        .text()
        .to_owned();
    assert!(
        observation.starts_with(&format!("Observed output of cmd `{BASH}` executed:")),
        "{observation}"
    );
    assert!(observation.contains("hello-from-mcp"), "{observation}");
}

#[tokio::test]
async fn manus_with_mcp_connects_at_once() {
    let server = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new());
    script(&model);
    let (mut agent, warnings) = manus_with_mcp(
        model.clone(),
        &AgentOptions::new(dir.path()),
        std::slice::from_ref(&server.config),
    )
    .await;
    assert!(warnings.is_empty(), "{warnings:?}");
    // The tools are there before the agent runs.
    assert!(agent.core().tools.contains(BASH));
    assert_eq!(
        agent.hooks().mcp_tool_names(),
        [
            "mcp_tools_bash",
            "mcp_tools_str_replace_editor",
            "mcp_tools_terminate"
        ]
    );
    run_and_check(&mut agent, &model).await;

    // Per-run cleanup keeps the connection: a second run still reaches the server.
    agent.base_mut().reset_state().unwrap();
    model
        .push_tool_calls(
            "",
            [tool_call(
                "b2",
                BASH,
                &json!({"command": "echo again"}).to_string(),
            )],
        )
        .push_tool_calls(
            "",
            [tool_call("t2", "terminate", r#"{"status":"success"}"#)],
        );
    let outcome = agent.run(Some("Once more.".into())).await.unwrap();
    assert!(outcome.is_finished());
    let again = agent
        .messages()
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("b2"))
        .unwrap()
        .text()
        .to_owned();
    assert!(again.contains("again"), "{again}");
    assert!(agent.hooks().clients().is_alive());

    // The session end disconnects and takes the MCP tools away.
    disconnect_mcp(&mut agent).await;
    assert!(!agent.hooks().clients().is_alive());
    assert!(!agent.core().tools.contains(BASH));
    assert_eq!(agent.core().tools.names(), own_tools());
    server.stop().await;
}

#[tokio::test]
async fn manus_lazy_mcp_connects_at_the_first_think() {
    let server = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new());
    script(&model);
    let mut agent = manus_lazy_mcp(
        model.clone(),
        &AgentOptions::new(dir.path()),
        vec![server.config.clone()],
    );
    // Nothing is connected yet.
    assert!(agent.hooks().is_pending());
    assert!(agent.hooks().clients().server_ids().is_empty());
    assert!(!agent.core().tools.contains(BASH));

    // The first request already offers the MCP tools.
    run_and_check(&mut agent, &model).await;
    assert!(!agent.hooks().is_pending());
    assert!(agent.hooks_mut().take_warnings().is_empty());

    disconnect_mcp(&mut agent).await;
    assert!(!agent.core().tools.contains(BASH));
    server.stop().await;
}

#[tokio::test]
async fn an_unreachable_server_is_a_warning_on_both_paths() {
    // A port that was free a moment ago: nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let config = McpServerConfig {
        id: "gone".into(),
        transport: McpTransport::StreamableHttp {
            url: format!("http://{address}{HTTP_PATH}"),
            headers: Default::default(),
        },
    };
    let dir = tempfile::tempdir().unwrap();
    let options = AgentOptions::new(dir.path());

    let model = Arc::new(ScriptedModel::new());
    model.push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    let (mut agent, warnings) =
        manus_with_mcp(model.clone(), &options, std::slice::from_ref(&config)).await;
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].server, "gone");
    assert!(agent.run(Some("hi".into())).await.unwrap().is_finished());
    assert_eq!(model.requests()[0].tool_names(), own_tools());

    let model = Arc::new(ScriptedModel::new());
    model.push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    let mut agent = manus_lazy_mcp(model.clone(), &options, vec![config]);
    assert!(agent.run(Some("hi".into())).await.unwrap().is_finished());
    let warnings = agent.hooks_mut().take_warnings();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].server, "gone");
    assert_eq!(model.requests()[0].tool_names(), own_tools());
}

#[tokio::test]
async fn manus_without_servers_has_only_its_own_tools() {
    let dir = tempfile::tempdir().unwrap();
    let agent = manus(
        Arc::new(ScriptedModel::new()),
        &AgentOptions::new(dir.path()),
    );
    assert!(agent.hooks().mcp_tool_names().is_empty());
    assert!(!agent.hooks().is_pending());
}

/// Options whose first step waits `startup_wait` for the servers, which may take ten minutes
/// to connect.
fn patient(dir: &std::path::Path, startup_wait: Duration) -> AgentOptions {
    let mut options = AgentOptions::new(dir);
    options.mcp.connect_timeout = Duration::from_secs(600);
    options.mcp.startup_wait = startup_wait;
    options
}

#[tokio::test]
async fn a_hung_server_does_not_hold_the_run_past_the_startup_wait() {
    let server = Server::start().await;
    let hung = Gated::bind("hung").await;
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new());
    script(&model);
    let began = std::time::Instant::now();
    let mut agent = manus_lazy_mcp(
        model.clone(),
        &patient(dir.path(), Duration::from_secs(5)),
        vec![server.config.clone(), hung.config.clone()],
    );
    // Both are connecting from the moment the agent is built.
    assert_eq!(agent.hooks().connecting(), ["tools", "hung"]);

    // The run goes on with the server that answered, long before the hung one's 600 s.
    run_and_check(&mut agent, &model).await;
    assert!(
        began.elapsed() < Duration::from_secs(120),
        "{:?}",
        began.elapsed()
    );
    assert!(
        !model.requests()[0]
            .tool_names()
            .iter()
            .any(|t| t.starts_with("mcp_hung")),
        "the hung server has no tools to offer"
    );
    assert_eq!(agent.hooks().connecting(), ["hung"]);
    assert!(agent.hooks_mut().take_warnings().is_empty());

    // The end of the session stops the attempt still under way.
    disconnect_mcp(&mut agent).await;
    assert!(agent.hooks().connecting().is_empty());
    assert!(!agent.hooks().is_pending());
    drop(hung);
    server.stop().await;
}

#[tokio::test]
async fn a_server_ready_after_the_first_step_joins_the_next_run_and_is_announced() {
    let late = Gated::bind("late").await;
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new());
    model.push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    let mut agent = manus_lazy_mcp(
        model.clone(),
        &patient(dir.path(), Duration::from_secs(1)),
        vec![late.config.clone()],
    );
    // The server cannot answer yet: the first run has only Manus's own tools.
    assert!(agent.run(Some("hi".into())).await.unwrap().is_finished());
    assert_eq!(model.requests()[0].tool_names(), own_tools());
    assert_eq!(agent.hooks().connecting(), ["late"]);

    // It answers now; the connection begun at the start completes.
    let server = late.open();
    agent
        .hooks_mut()
        .wait_connecting(Duration::from_secs(600))
        .await;
    assert!(agent.hooks().connecting().is_empty());
    assert!(agent.hooks_mut().take_warnings().is_empty());

    agent.base_mut().reset_state().unwrap();
    model.push_tool_calls(
        "",
        [tool_call("t2", "terminate", r#"{"status":"success"}"#)],
    );
    assert!(agent.run(Some("again".into())).await.unwrap().is_finished());
    let second = &model.requests()[1];
    assert!(
        second.tool_names().contains(&"mcp_late_bash"),
        "{:?}",
        second.tool_names()
    );
    let told = agent.messages().iter().any(|m| {
        m.role == Role::System && m.text().starts_with("New tools available: mcp_late_bash")
    });
    assert!(
        told,
        "the model is told the new tools: {:?}",
        agent.messages()
    );

    disconnect_mcp(&mut agent).await;
    server.stop().await;
}
