//! The client against the real third-party server `@modelcontextprotocol/server-everything`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use agent_config::{McpServerConfig, McpTransport};
use agent_mcp::{McpClientOptions, McpClients, McpError, ReconnectPolicy};
use agent_tools::{Tool, ToolContext};
use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(60);

async fn connect_one(config: McpServerConfig, options: McpClientOptions) -> McpClients {
    let (clients, warnings) = McpClients::connect_all(&[config], options).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    clients
}

fn tool(clients: &McpClients, name: &str) -> std::sync::Arc<dyn Tool> {
    clients
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test]
async fn stdio_lists_and_calls_tools() {
    let pids = tempfile::tempdir().unwrap();
    let pidfile = pids.path().join("pid");
    let config = tracked(everything("everything"), &pidfile);
    let mut clients = connect_one(config, McpClientOptions::default()).await;
    let pid = read_pid(&pidfile);
    let names: Vec<String> = clients
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    for expected in [
        "mcp_everything_echo",
        "mcp_everything_get-sum",
        "mcp_everything_get-tiny-image",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    let echo = tool(&clients, "mcp_everything_echo");
    assert_eq!(echo.description(), "Echoes back the input string");
    assert_eq!(echo.parameters()["properties"]["message"]["type"], "string");
    assert_eq!(echo.parameters()["required"], json!(["message"]));
    let mcp = clients.mcp_tools();
    let sum = mcp.iter().find(|t| t.original_name() == "get-sum").unwrap();
    assert_eq!(sum.server_id(), "everything");

    let r = echo
        .execute(json!({"message": "hi"}), &ctx())
        .await
        .unwrap();
    assert_eq!(r.output.as_deref(), Some("Echo: hi"));
    assert!(!r.is_error());

    let r = tool(&clients, "mcp_everything_get-sum")
        .execute(json!({"a": 2, "b": 3}), &ctx())
        .await
        .unwrap();
    assert!(r.output.as_deref().unwrap().contains('5'), "{r:?}");

    // Text parts joined with ", ", the image passed on as base64_image.
    let r = tool(&clients, "mcp_everything_get-tiny-image")
        .execute(json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(
        r.output.as_deref(),
        Some("Here's the image you requested:, The image above is the MCP logo.")
    );
    assert!(r.base64_image.as_deref().is_some_and(|i| i.len() > 100));

    // A server-side error is an error result.
    let r = tool(&clients, "mcp_everything_get-sum")
        .execute(json!({"a": "x"}), &ctx())
        .await
        .unwrap();
    assert!(r.is_error(), "{r:?}");

    clients.disconnect_all().await;
    assert_gone(pid, "server-everything").await;
    let r = echo
        .execute(json!({"message": "hi"}), &ctx())
        .await
        .unwrap();
    assert_eq!(r.error.as_deref(), Some(agent_mcp::NOT_CONNECTED));
}

#[tokio::test]
async fn env_and_cwd_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let pwd_file = out_dir.path().join("pwd");
    let script = format!(
        "pwd > '{}'; exec '{}' stdio",
        pwd_file.display(),
        everything_bin().display()
    );
    let mut config = stdio("env", "bash", &["-c", &script]);
    if let McpTransport::Stdio { env, cwd, .. } = &mut config.transport {
        env.insert("OPENMANUS_MCP_TEST".into(), "forty-two".into());
        *cwd = Some(dir.path().to_owned());
    }
    let mut clients = connect_one(config, McpClientOptions::default()).await;
    let r = tool(&clients, "mcp_env_get-env")
        .execute(json!({}), &ctx())
        .await
        .unwrap();
    let out = r.output.unwrap();
    assert!(
        out.contains("\"OPENMANUS_MCP_TEST\": \"forty-two\""),
        "{out}"
    );
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        std::fs::read_to_string(&pwd_file).unwrap().trim(),
        cwd.to_str().unwrap()
    );
    clients.disconnect_all().await;
}

#[tokio::test]
async fn a_failing_server_is_a_warning_and_the_others_work() {
    let configs = [
        stdio("missing", "/nonexistent/mcp-server", &[]),
        everything("ok"),
        McpServerConfig {
            id: "legacy".into(),
            transport: McpTransport::Sse {
                url: "http://127.0.0.1:9/sse".into(),
                headers: Default::default(),
            },
        },
    ];
    let (mut clients, warnings) =
        McpClients::connect_all(&configs, McpClientOptions::default()).await;
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(warnings[0].server, "missing");
    assert!(matches!(warnings[0].error, McpError::Spawn { .. }));
    assert!(warnings[0].to_string().contains("missing"));
    assert_eq!(clients.server_ids(), vec!["ok"]);
    let r = tool(&clients, "mcp_ok_echo")
        .execute(json!({"message": "x"}), &ctx())
        .await
        .unwrap();
    assert_eq!(r.output.as_deref(), Some("Echo: x"));
    assert!(matches!(
        clients.connect(&everything("ok")).await,
        Err(McpError::Duplicate(_))
    ));
    clients.disconnect_all().await;
}

#[tokio::test]
async fn cancellation_and_call_timeout_end_a_long_call() {
    let options = McpClientOptions {
        // Long enough for the echo calls on a loaded machine; the long operation takes 60 s.
        call_timeout: Some(Duration::from_secs(5)),
        ..McpClientOptions::default()
    };
    let mut clients = connect_one(everything("slow"), options).await;
    let long = tool(&clients, "mcp_slow_trigger-long-running-operation");
    let args = json!({"duration": 60, "steps": 60});

    let r = tokio::time::timeout(LIMIT, long.execute(args.clone(), &ctx()))
        .await
        .unwrap()
        .unwrap();
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .contains("did not answer within"),
        "{r:?}"
    );

    let token = CancellationToken::new();
    let call_ctx = ToolContext::new(token.clone(), "call_1");
    let call = long.execute(args, &call_ctx);
    token.cancel();
    let r = tokio::time::timeout(LIMIT, call).await.unwrap().unwrap();
    assert_eq!(
        r.error.as_deref(),
        Some("Error executing tool: the call was cancelled")
    );

    // The connection still works after both.
    let r = tool(&clients, "mcp_slow_echo")
        .execute(json!({"message": "after"}), &ctx())
        .await
        .unwrap();
    assert_eq!(r.output.as_deref(), Some("Echo: after"));
    clients.disconnect_all().await;
}

#[tokio::test]
async fn a_server_killed_mid_call_gives_an_error_result_and_no_process_survives() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let bin = everything_bin();
    let config = bash_with_pid(
        "dying",
        &pidfile,
        &format!("exec '{}' stdio", bin.display()),
    );
    let options = McpClientOptions {
        reconnect: ReconnectPolicy::never(),
        ..McpClientOptions::default()
    };
    let mut clients = connect_one(config, options).await;
    let pid = read_pid(&pidfile);
    let long = tool(&clients, "mcp_dying_trigger-long-running-operation");
    let call_ctx = ctx();
    let call = long.execute(json!({"duration": 60, "steps": 60}), &call_ctx);
    let kill = async {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
    };
    let (r, ()) = tokio::time::timeout(LIMIT, futures::future::join(call, kill))
        .await
        .unwrap();
    let r = r.unwrap();
    assert!(r.is_error(), "{r:?}");
    tokio::time::timeout(LIMIT, clients.wait_server_closed("dying"))
        .await
        .unwrap();
    assert!(!clients.is_alive());
    assert!(clients.tools().is_empty());
    let r = long
        .execute(json!({"duration": 1, "steps": 1}), &ctx())
        .await
        .unwrap();
    assert!(r.is_error());
    clients.disconnect_all().await;
    assert!(!alive(pid));
    assert!(!alive(-pid), "the server's process group survived");
}

#[tokio::test]
async fn disconnect_reaps_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let bin = everything_bin();
    // A wrapper shell that keeps a child of its own: the whole group must go.
    let config = bash_with_pid(
        "group",
        &pidfile,
        &format!("'{}' stdio; wait", bin.display()),
    );
    let mut clients = connect_one(config, McpClientOptions::default()).await;
    let pid = read_pid(&pidfile);
    assert!(alive(-pid));
    clients.disconnect("group").await.unwrap();
    assert!(!alive(-pid), "the server's process group survived");
    assert!(matches!(
        clients.disconnect("group").await,
        Err(McpError::UnknownServer(_))
    ));
}

#[tokio::test]
async fn a_server_that_never_initialises_times_out_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let config = bash_with_pid("mute", &pidfile, "exec sleep 600");
    let options = McpClientOptions {
        connect_timeout: Duration::from_millis(500),
        ..McpClientOptions::default()
    };
    let (clients, warnings) = McpClients::connect_all(&[config], options).await;
    assert_eq!(warnings.len(), 1);
    assert!(
        matches!(warnings[0].error, McpError::ConnectTimeout { .. }),
        "{:?}",
        warnings[0]
    );
    assert!(clients.tools().is_empty());
    let pid = read_pid(&pidfile);
    // Killed when the failed connection was dropped; wait for the kill to land.
    tokio::time::timeout(LIMIT, async {
        while alive(-pid) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the mute server's group survived");
}

#[tokio::test]
async fn malformed_lines_before_the_handshake_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let bin = everything_bin();
    let config = bash_with_pid(
        "noisy",
        &pidfile,
        &format!(
            "echo 'this is not json-rpc'; echo '{{\"jsonrpc\":\"2.0\",\"bogus\":1}}'; exec '{}' stdio",
            bin.display()
        ),
    );
    let options = McpClientOptions {
        connect_timeout: Duration::from_secs(20),
        ..McpClientOptions::default()
    };
    let (mut clients, warnings) =
        tokio::time::timeout(LIMIT, McpClients::connect_all(&[config], options))
            .await
            .unwrap();
    // Lines that are not JSON-RPC messages are skipped (logged); the handshake that follows
    // succeeds and the server works.
    assert!(warnings.is_empty(), "{warnings:?}");
    let r = tool(&clients, "mcp_noisy_echo")
        .execute(json!({"message": "ok"}), &ctx())
        .await
        .unwrap();
    assert_eq!(r.output.as_deref(), Some("Echo: ok"));
    clients.disconnect_all().await;
    let pid = read_pid(&pidfile);
    tokio::time::timeout(LIMIT, async {
        while alive(-pid) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the noisy server's group survived");
}

#[tokio::test]
async fn streamable_http_lists_and_calls_tools() {
    let server = HttpEverything::start().await;
    let config = McpServerConfig {
        id: "web".into(),
        transport: McpTransport::StreamableHttp {
            url: server.url.clone(),
            headers: [("X-Test".to_owned(), "1".to_owned())].into(),
        },
    };
    let mut clients = connect_one(config, McpClientOptions::default()).await;
    let r = tool(&clients, "mcp_web_echo")
        .execute(json!({"message": "over http"}), &ctx())
        .await
        .unwrap();
    assert_eq!(r.output.as_deref(), Some("Echo: over http"));
    let r = tool(&clients, "mcp_web_get-tiny-image")
        .execute(json!({}), &ctx())
        .await
        .unwrap();
    assert!(r.base64_image.is_some());
    assert!(clients.refresh_tools().await.is_empty());
    clients.disconnect_all().await;
    drop(server);
}
