//! The legacy HTTP+SSE transport against the real server-everything (`mcp-server-everything
//! sse`), and reconnection of servers that go away mid-run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agent_config::McpServerConfig;
use agent_mcp::{McpClientOptions, McpClients, McpError, NOT_CONNECTED, ReconnectPolicy};
use agent_tools::Tool;
use common::*;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(60);

async fn connect_one(config: McpServerConfig, options: McpClientOptions) -> McpClients {
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

fn no_reconnect() -> McpClientOptions {
    McpClientOptions {
        reconnect: ReconnectPolicy::never(),
        ..McpClientOptions::default()
    }
}

fn quick_reconnect(max_attempts: u32) -> McpClientOptions {
    McpClientOptions {
        connect_timeout: Duration::from_secs(20),
        reconnect: ReconnectPolicy {
            max_attempts,
            initial_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(200),
        },
        ..McpClientOptions::default()
    }
}

#[tokio::test]
async fn sse_lists_and_calls_tools() {
    let server = SseEverything::start().await;
    let mut clients = connect_one(sse("ev", &server.url), no_reconnect()).await;
    let names: Vec<String> = clients
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    for expected in ["mcp_ev_echo", "mcp_ev_get-sum", "mcp_ev_get-tiny-image"] {
        assert!(names.iter().any(|n| n == expected), "{names:?}");
    }
    let echo = tool(&clients, "mcp_ev_echo");
    assert_eq!(echo.parameters()["properties"]["message"]["type"], "string");
    let r = echo
        .execute(json!({"message": "over sse"}), &ctx())
        .await
        .unwrap();
    assert_eq!(r.output.as_deref(), Some("Echo: over sse"), "{r:?}");
    let r = tool(&clients, "mcp_ev_get-sum")
        .execute(json!({"a": 2, "b": 40}), &ctx())
        .await
        .unwrap();
    assert!(r.output.as_deref().unwrap().contains("42"), "{r:?}");
    let r = tool(&clients, "mcp_ev_get-tiny-image")
        .execute(json!({}), &ctx())
        .await
        .unwrap();
    assert!(r.base64_image.is_some(), "{r:?}");
    // Concurrent calls are matched to their replies over the one SSE stream.
    let calls = (0..8).map(|i| {
        let echo = echo.clone();
        async move {
            echo.execute(json!({"message": format!("m{i}")}), &ctx())
                .await
                .unwrap()
        }
    });
    let results = futures::future::join_all(calls).await;
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.output.as_deref(), Some(format!("Echo: m{i}").as_str()));
    }
    assert!(clients.refresh_tools().await.is_empty());
    clients.disconnect_all().await;
    let r = echo.execute(json!({"message": "x"}), &ctx()).await.unwrap();
    assert_eq!(r.error.as_deref(), Some(NOT_CONNECTED));
}

#[tokio::test]
async fn an_sse_stream_closed_mid_call_gives_an_error_result() {
    let mut server = SseEverything::start().await;
    let mut clients = connect_one(sse("ev", &server.url), no_reconnect()).await;
    let long = tool(&clients, "mcp_ev_trigger-long-running-operation");
    let call_ctx = ctx();
    // Short enough that, if the kill lands before the request left the client (it is then sent
    // once more, to the restarted server), the call simply completes there.
    let call = long.execute(json!({"duration": 3, "steps": 3}), &call_ctx);
    let (r, ()) = tokio::time::timeout(LIMIT, futures::future::join(call, server.kill()))
        .await
        .expect("the call hung after the SSE stream closed");
    let r = r.unwrap();
    assert!(r.is_error(), "{r:?}");
    tokio::time::timeout(LIMIT, clients.wait_server_closed("ev"))
        .await
        .unwrap();
    assert!(!clients.is_alive());
    let r = long
        .execute(json!({"duration": 1, "steps": 1}), &ctx())
        .await
        .unwrap();
    assert_eq!(r.error.as_deref(), Some(NOT_CONNECTED));
    clients.disconnect_all().await;
}

#[tokio::test]
async fn an_sse_server_that_never_sends_its_endpoint_times_out() {
    // A real socket that accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepting = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let options = McpClientOptions {
        connect_timeout: Duration::from_millis(500),
        ..McpClientOptions::default()
    };
    let url = format!("http://127.0.0.1:{port}/sse");
    let (clients, warnings) = tokio::time::timeout(
        LIMIT,
        McpClients::connect_all(&[sse("mute", &url)], options),
    )
    .await
    .unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(
        matches!(warnings[0].error, McpError::ConnectTimeout { .. }),
        "{:?}",
        warnings[0]
    );
    assert!(clients.tools().is_empty());
    accepting.abort();

    // Nobody listening at all: a clean error, not a timeout.
    let refused = format!("http://127.0.0.1:{}/sse", free_port());
    let (_, warnings) =
        McpClients::connect_all(&[sse("gone", &refused)], McpClientOptions::default()).await;
    assert!(
        matches!(warnings[0].error, McpError::Initialize { .. }),
        "{:?}",
        warnings[0]
    );
}

#[tokio::test]
async fn a_killed_stdio_server_is_restarted_and_its_tools_keep_working() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let bin = everything_bin();
    let config = bash_with_pid(
        "phoenix",
        &pidfile,
        &format!("exec '{}' stdio", bin.display()),
    );
    let mut clients = connect_one(config, quick_reconnect(5)).await;
    let first_pid = read_pid(&pidfile);
    let long = tool(&clients, "mcp_phoenix_trigger-long-running-operation");
    let echo = tool(&clients, "mcp_phoenix_echo");
    let call_ctx = ctx();
    // Long enough for the kill to land while it runs, short enough that a call re-sent whole
    // to the restarted server (the kill landed before it left) completes well within LIMIT: a
    // 60 s call re-sent took the whole LIMIT on a loaded machine.
    let call = long.execute(json!({"duration": 10, "steps": 10}), &call_ctx);
    let kill = async {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(first_pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
    };
    let (r, ()) = tokio::time::timeout(LIMIT, futures::future::join(call, kill))
        .await
        .unwrap();
    let r = r.unwrap();
    // A call the dead server had received fails (never hangs); one that had not left the client
    // was re-sent and completed. Which one happened depends on when the kill landed.
    assert!(
        r.is_error() || r.output.as_deref().is_some_and(|o| o.contains("completed")),
        "the call in flight must fail or be re-sent whole: {r:?}"
    );
    // The tool taken before the crash waits for the reconnection and then works.
    let r = tokio::time::timeout(LIMIT, echo.execute(json!({"message": "back"}), &ctx()))
        .await
        .expect("a call during reconnection hung")
        .unwrap();
    assert_eq!(r.output.as_deref(), Some("Echo: back"), "{r:?}");
    assert!(clients.is_server_alive("phoenix"));
    assert_eq!(clients.reconnect_attempts("phoenix"), Some(1));
    let second_pid = read_pid(&pidfile);
    assert_ne!(first_pid, second_pid, "the server was not restarted");
    assert!(!alive(-first_pid), "the dead server's group survived");
    // Its tools were listed again.
    assert!(clients.wait_server_ready("phoenix").await);
    let names: Vec<String> = clients
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert!(
        names.iter().any(|n| n == "mcp_phoenix_get-sum"),
        "{names:?}"
    );
    let r = tool(&clients, "mcp_phoenix_get-sum")
        .execute(json!({"a": 1, "b": 2}), &ctx())
        .await
        .unwrap();
    assert!(r.output.as_deref().unwrap().contains('3'), "{r:?}");
    clients.disconnect_all().await;
    assert!(!alive(-second_pid), "the restarted server's group survived");
}

#[tokio::test]
async fn our_own_server_is_restarted_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let config = bash_with_pid(
        "ours",
        &pidfile,
        &format!(
            "exec '{}' --transport stdio",
            env!("CARGO_BIN_EXE_openmanus-mcp-server")
        ),
    );
    let mut clients = connect_one(config, quick_reconnect(3)).await;
    let first_pid = read_pid(&pidfile);
    let bash = tool(&clients, "mcp_ours_bash");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first_pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    tokio::time::timeout(LIMIT, clients.wait_connection_lost("ours"))
        .await
        .unwrap();
    // A call made after the loss waits for the restart, then runs on the new process.
    let r = tokio::time::timeout(
        LIMIT,
        bash.execute(json!({"command": "echo again"}), &ctx()),
    )
    .await
    .expect("a call during reconnection hung")
    .unwrap();
    assert!(
        r.output.as_deref().unwrap_or_default().contains("again"),
        "{r:?}"
    );
    assert_ne!(read_pid(&pidfile), first_pid);
    clients.disconnect_all().await;
}

#[tokio::test]
async fn an_sse_server_that_stays_down_gives_clean_errors_and_retrying_stops_at_the_cap() {
    let mut server = SseEverything::start().await;
    let mut clients = connect_one(sse("down", &server.url), quick_reconnect(3)).await;
    let echo = tool(&clients, "mcp_down_echo");
    server.kill().await;
    tokio::time::timeout(LIMIT, clients.wait_connection_lost("down"))
        .await
        .unwrap();
    // A call made while the client retries waits for the outcome, then fails cleanly.
    let r = tokio::time::timeout(LIMIT, echo.execute(json!({"message": "x"}), &ctx()))
        .await
        .expect("a call to a server that stays down hung")
        .unwrap();
    assert_eq!(r.error.as_deref(), Some(NOT_CONNECTED), "{r:?}");
    tokio::time::timeout(LIMIT, clients.wait_server_closed("down"))
        .await
        .unwrap();
    assert_eq!(clients.reconnect_attempts("down"), Some(3));
    assert!(!clients.is_alive());
    assert!(!clients.wait_server_ready("down").await);
    assert!(clients.tools().is_empty());
    let r = echo.execute(json!({"message": "y"}), &ctx()).await.unwrap();
    assert_eq!(r.error.as_deref(), Some(NOT_CONNECTED));
    assert_eq!(clients.reconnect_attempts("down"), Some(3));
    clients.disconnect_all().await;
}

#[tokio::test]
async fn a_restarted_sse_server_is_reconnected() {
    let mut server = SseEverything::start().await;
    let mut clients = connect_one(sse("back", &server.url), quick_reconnect(50)).await;
    let echo = tool(&clients, "mcp_back_echo");
    let port: u16 = server
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/sse")
        .parse()
        .unwrap();
    server.kill().await;
    tokio::time::timeout(LIMIT, clients.wait_connection_lost("back"))
        .await
        .unwrap();
    // Restart it on the same port; the client's retries find it.
    let restarted = tokio::process::Command::new(everything_bin())
        .arg("sse")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let r = tokio::time::timeout(LIMIT, echo.execute(json!({"message": "again"}), &ctx()))
        .await
        .expect("a call during reconnection hung")
        .unwrap();
    assert_eq!(r.output.as_deref(), Some("Echo: again"), "{r:?}");
    assert!(clients.reconnect_attempts("back").unwrap() >= 1);
    clients.disconnect_all().await;
    drop(restarted);
}

/// `openmanus-mcp-server --transport http` on `port` (0: any); returns it and its URL.
async fn our_http_server(port: u16) -> (tokio::process::Child, String) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_openmanus-mcp-server"))
        .args(["--transport", "http", "--port", &port.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(LIMIT, async {
        loop {
            let line = lines.next_line().await.unwrap().expect("the server exited");
            if let Some(url) = line.strip_prefix("listening on ") {
                break url.to_owned();
            }
        }
    })
    .await
    .expect("the server did not start listening");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (server, url)
}

#[tokio::test]
async fn a_streamable_http_server_that_dies_mid_call_gives_an_error_and_is_reconnected() {
    let (mut server, url) = our_http_server(0).await;
    let port: u16 = url
        .trim_end_matches(agent_mcp::HTTP_PATH)
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mut clients = connect_one(streamable_http("om", &url), quick_reconnect(100)).await;
    let bash = tool(&clients, "mcp_om_bash");

    // A call in flight when the server dies ends with an error result, not a hang.
    let in_flight = {
        let bash = Arc::clone(&bash);
        tokio::spawn(async move { bash.execute(json!({"command": "sleep 30"}), &ctx()).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.kill().await.unwrap();
    let r = tokio::time::timeout(LIMIT, in_flight)
        .await
        .expect("a call to a dead streamable HTTP server hung")
        .unwrap()
        .unwrap();
    assert!(r.error.is_some(), "{r:?}");

    // The server comes back on the same port; the client reconnects and the tool works again.
    let (restarted, _) = our_http_server(port).await;
    let r = tokio::time::timeout(LIMIT, async {
        loop {
            let r = bash
                .execute(json!({"command": "echo back-over-http"}), &ctx())
                .await
                .unwrap();
            if r.error.is_none() {
                break r;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the restarted server was never reached");
    assert!(r.to_string().contains("back-over-http"), "{r:?}");
    clients.disconnect_all().await;
    drop(restarted);
}
