//! Interop with the official Python `mcp` SDK (1.x): our client against a FastMCP server over the
//! legacy HTTP+SSE transport and streamable HTTP (text, image and error results, a tool list
//! change), and the SDK's client driving our `openmanus-mcp-server` over stdio and streamable
//! HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_config::McpServerConfig;
use agent_core::{Agent, Role, RunStatus};
use agent_mcp::{McpAgentHooks, McpClientOptions, McpClients, ReconnectPolicy, mcp_agent};
use agent_testkit::{ScriptedModel, tool_call};
use agent_tools::Tool;
use common::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const LIMIT: Duration = Duration::from_secs(60);

/// The fixture's PNG (fixtures/fastmcp_server.py).
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

async fn connect(config: McpServerConfig) -> McpClients {
    let options = McpClientOptions {
        reconnect: ReconnectPolicy::never(),
        ..McpClientOptions::default()
    };
    let (clients, warnings) = McpClients::connect_all(&[config], options).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    clients
}

fn tool(clients: &McpClients, name: &str) -> Arc<dyn Tool> {
    clients
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

fn names(clients: &McpClients) -> Vec<String> {
    let mut names: Vec<String> = clients
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    names.sort();
    names
}

async fn exercise_fastmcp(clients: &McpClients) {
    assert_eq!(
        names(clients),
        [
            "mcp_py_add_tool",
            "mcp_py_fail",
            "mcp_py_greet",
            "mcp_py_tiny_image",
            "mcp_py_trace_context",
            "mcp_py_wait_for_cancel"
        ]
    );
    let greet = tool(clients, "mcp_py_greet");
    assert_eq!(greet.description(), "Greets someone by name.");
    let schema = greet.parameters();
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["properties"]["name"]["type"], "string", "{schema}");
    assert_eq!(
        schema["properties"]["punctuation"]["default"], "!",
        "{schema}"
    );
    assert_eq!(schema["required"], json!(["name"]), "{schema}");

    let r = greet.execute(json!({"name": "Ada"}), &ctx()).await.unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.output.as_deref(), Some("Hello, Ada!"));
    assert!(r.base64_image.is_none());

    let r = tool(clients, "mcp_py_tiny_image")
        .execute(json!({}), &ctx())
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.output.as_deref(), Some("A tiny image:"));
    assert_eq!(r.base64_image.as_deref(), Some(PNG));

    let r = tool(clients, "mcp_py_fail")
        .execute(json!({"message": "boom"}), &ctx())
        .await
        .unwrap();
    assert!(r.is_error(), "{r:?}");
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("fixture failure: boom"),
        "{r:?}"
    );
    // Arguments the server's validation rejects: an error result too.
    let r = greet.execute(json!({}), &ctx()).await.unwrap();
    assert!(r.is_error(), "{r:?}");

    trace_context_goes_in_meta(clients).await;
}

/// With telemetry on, a call carries the trace context of the span it runs in as
/// `_meta.traceparent` (SEP-414) and, over HTTP, as the `traceparent` header; with it off,
/// nothing.
async fn trace_context_goes_in_meta(clients: &McpClients) {
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
    use tracing_subscriber::layer::SubscriberExt as _;

    let traced = tool(clients, "mcp_py_trace_context");
    let r = traced.execute(json!({}), &ctx()).await.unwrap();
    assert_eq!(
        r.output.as_deref(),
        Some("meta=none header=none"),
        "telemetry off: {r:?}"
    );

    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(InMemorySpanExporter::default())
        .build();
    let subscriber =
        tracing_subscriber::registry().with(agent_telemetry::export::layer_with(&provider));
    // This thread's: the test runs on one.
    let _recording = tracing::subscriber::set_default(subscriber);
    let span = tracing::info_span!(target: "gen_ai", "execute_tool");
    let expected = agent_telemetry::context::headers(&span)
        .into_iter()
        .find(|(key, _)| *key == "traceparent")
        .map(|(_, value)| value)
        .expect("a recorded span has a traceparent");
    // As the tool-call agent runs a tool: inside `within` its span, which is not entered.
    let r = agent_telemetry::scope::within(span, traced.execute(json!({}), &ctx()))
        .await
        .unwrap();
    // In `_meta` and, both transports being HTTP, as the request's header.
    assert_eq!(
        r.output.as_deref(),
        Some(format!("meta={expected} header={expected}").as_str()),
        "{r:?}"
    );
}

#[tokio::test]
async fn fastmcp_over_legacy_sse() {
    let server = FastMcp::start("sse").await;
    let mut clients = connect(sse("py", &server.sse_url())).await;
    exercise_fastmcp(&clients).await;
    clients.disconnect_all().await;
    server.stop().await;
}

#[tokio::test]
async fn fastmcp_over_streamable_http() {
    let server = FastMcp::start("streamable-http").await;
    let mut clients = connect(streamable_http("py", &server.http_url())).await;
    exercise_fastmcp(&clients).await;
    clients.disconnect_all().await;
    server.stop().await;
}

/// The fixture's `add_tool` adds `late_tool` and sends `notifications/tools/list_changed`:
/// McpClients sees the notification and MCPAgent installs and can call the new tool.
async fn tool_list_change(config: McpServerConfig) {
    let clients = connect(config).await;
    assert!(!clients.tools_changed());
    let model = Arc::new(ScriptedModel::new());
    model.push_tool_calls("", [tool_call("c1", "mcp_py_add_tool", "{}")]);
    // MCPAgent, refreshing its tools only on change notifications.
    let mut agent = mcp_agent(model.clone(), McpClients::new(McpClientOptions::default()))
        .with_max_steps(1)
        .with_hooks(McpAgentHooks::new(clients).with_refresh_interval(0));
    let outcome = tokio::time::timeout(LIMIT, agent.run(Some("add a tool".into())))
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome.status, RunStatus::MaxSteps(1)),
        "{outcome:?}"
    );
    assert!(
        agent
            .messages()
            .iter()
            .any(|m| m.role == Role::Tool && m.text().contains("added late_tool"))
    );
    tokio::time::timeout(LIMIT, agent.hooks().clients().wait_tools_changed())
        .await
        .expect("no notifications/tools/list_changed arrived");

    agent.core_mut().base.reset_state().unwrap();
    model.push_tool_calls("", [tool_call("c2", "mcp_py_late_tool", r#"{"x": 21}"#)]);
    let outcome = tokio::time::timeout(LIMIT, agent.run(Some("use it".into())))
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(outcome.status, RunStatus::MaxSteps(1)),
        "{outcome:?}"
    );
    let requests = model.requests();
    assert!(
        requests[1].tool_names().contains(&"mcp_py_late_tool"),
        "{:?}",
        requests[1].tool_names()
    );
    let messages = agent.messages();
    assert!(
        messages
            .iter()
            .any(|m| m.role == Role::System && m.text() == "New tools available: mcp_py_late_tool"),
        "the new tool was not announced"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.role == Role::Tool && m.text().contains("late 42")),
        "the new tool was not callable"
    );
    assert!(!agent.hooks().clients().tools_changed());
    let late = tool(agent.hooks().clients(), "mcp_py_late_tool");
    assert_eq!(late.parameters()["properties"]["x"]["type"], "integer");
    agent.hooks_mut().disconnect().await;
}

#[tokio::test]
async fn a_tool_list_change_over_sse_installs_the_new_tool() {
    let server = FastMcp::start("sse").await;
    tool_list_change(sse("py", &server.sse_url())).await;
    server.stop().await;
}

#[tokio::test]
async fn a_tool_list_change_over_streamable_http_installs_the_new_tool() {
    let server = FastMcp::start("streamable-http").await;
    tool_list_change(streamable_http("py", &server.http_url())).await;
    server.stop().await;
}

/// Runs fixtures/python_client.py (the Python SDK client) with `args`; returns its JSON output.
async fn python_client(args: &[&str], work: &std::path::Path) -> Value {
    let output = tokio::time::timeout(
        LIMIT,
        tokio::process::Command::new(mcp_python())
            .arg(fixture("python_client.py"))
            .args(args)
            .env("WORK_DIR", work)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Python SDK client hung")
    .unwrap();
    assert!(
        output.status.success(),
        "the Python SDK client failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "bad JSON from the Python client ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// Checks what the Python SDK saw of our server; returns the server's pid (from `bash`).
fn check_python_view(out: &Value, work: &std::path::Path) -> i32 {
    assert_eq!(out["server"], "openmanus");
    let tools = out["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bash", "str_replace_editor", "terminate"]);
    // Full schemas, exactly as our tools declare them.
    let expected: [Arc<dyn Tool>; 3] = [
        Arc::new(agent_tools::Bash::new()),
        Arc::new(agent_tools::StrReplaceEditor::new()),
        Arc::new(agent_tools::Terminate),
    ];
    for (tool, ours) in tools.iter().zip(expected) {
        assert_eq!(tool["inputSchema"], ours.parameters(), "{}", tool["name"]);
        assert_eq!(tool["description"], ours.description(), "{}", tool["name"]);
    }
    assert!(
        tools[1]["inputSchema"]["properties"]["command"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("undo_edit"))
    );

    assert_eq!(out["bash"]["isError"], false, "{}", out["bash"]);
    let bash = out["bash"]["text"][0].as_str().unwrap();
    assert!(bash.contains("hi-from-python"), "{bash}");
    let pid: i32 = bash
        .lines()
        .find_map(|l| l.strip_prefix("server-pid="))
        .unwrap()
        .trim()
        .parse()
        .unwrap();

    assert_eq!(out["create"]["isError"], false, "{}", out["create"]);
    assert_eq!(
        std::fs::read_to_string(work.join("from_python.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert_eq!(out["view"]["isError"], false, "{}", out["view"]);
    let view = out["view"]["text"][0].as_str().unwrap();
    assert!(view.contains("one") && view.contains("two"), "{view}");

    assert_eq!(out["error"]["isError"], true, "{}", out["error"]);
    let error = out["error"]["text"][0].as_str().unwrap();
    assert!(error.contains("missing.txt"), "{error}");
    pid
}

#[tokio::test]
async fn the_python_sdk_client_drives_our_server_over_stdio() {
    let work = tempfile::tempdir().unwrap();
    let out = python_client(
        &[
            "stdio",
            env!("CARGO_BIN_EXE_openmanus-mcp-server"),
            "--transport",
            "stdio",
        ],
        work.path(),
    )
    .await;
    let pid = check_python_view(&out, work.path());
    // The SDK client closed our server when it was done.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "openmanus-mcp-server (pid {pid}) survived its client"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts `openmanus-mcp-server --transport <transport>` on a free port; returns it and its URL.
async fn listening_server(transport: &str) -> (tokio::process::Child, String) {
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_openmanus-mcp-server"))
        .args(["--transport", transport, "--port", "0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(LIMIT, async {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("openmanus-mcp-server exited before listening");
            if let Some(url) = line.strip_prefix("listening on ") {
                break url.to_owned();
            }
        }
    })
    .await
    .expect("openmanus-mcp-server did not start listening");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (server, url)
}

#[tokio::test]
async fn the_python_sdk_client_drives_our_server_over_streamable_http() {
    let (mut server, url) = listening_server("http").await;
    let work = tempfile::tempdir().unwrap();
    let out = python_client(&["http", &url], work.path()).await;
    let pid = check_python_view(&out, work.path());
    assert_eq!(Some(pid as u32), server.id());
    server.kill().await.unwrap();
    assert!(!alive(pid));
}

#[tokio::test]
async fn the_python_sdk_client_drives_our_server_over_legacy_sse() {
    let (mut server, url) = listening_server("sse").await;
    assert!(url.ends_with("/sse"), "{url}");
    let work = tempfile::tempdir().unwrap();
    let out = python_client(&["sse", &url], work.path()).await;
    let pid = check_python_view(&out, work.path());
    assert_eq!(Some(pid as u32), server.id());
    // Our own client speaks the same transport to the same server.
    let clients = connect(sse("om", &url)).await;
    let echo = tool(&clients, "mcp_om_bash")
        .execute(
            json!({"command": "echo over-our-sse"}),
            &agent_tools::ToolContext::default(),
        )
        .await
        .unwrap();
    assert!(echo.to_string().contains("over-our-sse"), "{echo}");
    server.kill().await.unwrap();
    assert!(!alive(pid));
}

/// Cancelling a call sends `notifications/cancelled`: the Python server's handler is stopped
/// (it records that in a file), over both HTTP transports.
async fn a_cancelled_call_is_cancelled_on_the_server(transport: &str) {
    let server = FastMcp::start(transport).await;
    let config = if transport == "sse" {
        sse("py", &server.sse_url())
    } else {
        streamable_http("py", &server.http_url())
    };
    let clients = connect(config).await;
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let ctx = agent_tools::ToolContext::default();
    let token = ctx.cancellation.clone();
    let watch = marker.clone();
    tokio::spawn(async move {
        while std::fs::read_to_string(&watch).unwrap_or_default() != "started" {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        token.cancel();
    });
    let result = tokio::time::timeout(
        LIMIT,
        tool(&clients, "mcp_py_wait_for_cancel")
            .execute(json!({"marker": marker.to_str().unwrap()}), &ctx),
    )
    .await
    .expect("the cancelled call returned")
    .unwrap();
    assert_eq!(
        result.error.as_deref(),
        Some("Error executing tool: the call was cancelled")
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if std::fs::read_to_string(&marker).unwrap_or_default() == "cancelled" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server never saw notifications/cancelled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_cancelled_call_sends_notifications_cancelled_over_streamable_http() {
    a_cancelled_call_is_cancelled_on_the_server("streamable-http").await;
}

#[tokio::test]
async fn a_cancelled_call_sends_notifications_cancelled_over_sse() {
    a_cancelled_call_is_cancelled_on_the_server("sse").await;
}

#[tokio::test]
async fn web_pages_of_other_origins_are_refused_on_both_http_transports() {
    for transport in ["sse", "http"] {
        let (mut server, url) = listening_server(transport).await;
        let client = agent_llm::http::shared_client().unwrap();
        let request = |origin: Option<&str>| {
            let mut request = if transport == "sse" {
                client.get(&url)
            } else {
                client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            };
            if let Some(origin) = origin {
                request = request.header("origin", origin);
            }
            request.send()
        };
        let refused = request(Some("http://evil.example")).await.unwrap();
        assert_eq!(refused.status(), 403, "{transport}");
        let local = request(Some("http://localhost:1234")).await.unwrap();
        assert_ne!(local.status(), 403, "{transport}");
        let no_origin = request(None).await.unwrap();
        assert_ne!(no_origin.status(), 403, "{transport}");
        server.kill().await.unwrap();
    }
}
