//! Shared helpers of the integration tests: real MCP servers only.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use agent_config::{McpServerConfig, McpTransport};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The `mcp-server-everything` executable: `$MCP_EVERYTHING_BIN` (set by `cargo xtask ci`), else
/// the copy `cargo xtask ci` installs under `target/xtask-tools/npm`.
pub fn everything_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("MCP_EVERYTHING_BIN") {
        return PathBuf::from(bin);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = root.join("target/xtask-tools/npm/node_modules/.bin/mcp-server-everything");
    assert!(
        bin.exists(),
        "the MCP test peer @modelcontextprotocol/server-everything is missing: run `cargo xtask ci` \
         (it installs it with npm into target/xtask-tools/npm) or set MCP_EVERYTHING_BIN"
    );
    bin
}

pub fn stdio(id: &str, command: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        id: id.to_owned(),
        transport: McpTransport::Stdio {
            command: command.to_owned(),
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            env: BTreeMap::new(),
            cwd: None,
        },
    }
}

pub fn everything(id: &str) -> McpServerConfig {
    stdio(id, everything_bin().to_str().unwrap(), &["stdio"])
}

/// `bash -c` that writes its pid to `pidfile` and then execs `script`.
pub fn bash_with_pid(id: &str, pidfile: &std::path::Path, script: &str) -> McpServerConfig {
    let script = format!("echo $$ > '{}'; {script}", pidfile.display());
    stdio(id, "bash", &["-c", &script])
}

pub fn read_pid(pidfile: &std::path::Path) -> i32 {
    std::fs::read_to_string(pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Whether a process (or process group, for a negative pid) still exists.
pub fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server-everything in streamable HTTP mode, killed on drop.
pub struct HttpEverything {
    pub child: tokio::process::Child,
    pub url: String,
}

impl HttpEverything {
    pub async fn start() -> Self {
        let port = free_port();
        let child = start_everything("streamableHttp", port, "listening on port").await;
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

/// A server-everything in legacy HTTP+SSE mode (`mcp-server-everything sse`), killed on drop.
pub struct SseEverything {
    pub child: tokio::process::Child,
    pub url: String,
}

impl SseEverything {
    pub async fn start() -> Self {
        let port = free_port();
        let child = start_everything("sse", port, "Server is running on port").await;
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/sse"),
        }
    }

    /// Kills the server and waits until it has exited.
    pub async fn kill(&mut self) {
        self.child.kill().await.unwrap();
    }
}

/// Starts server-everything with `transport` on `port`; returns once it logs `ready`.
async fn start_everything(transport: &str, port: u16, ready: &str) -> tokio::process::Child {
    let mut child = tokio::process::Command::new(everything_bin())
        .arg(transport)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let line = lines.next_line().await.unwrap().expect("server exited");
            if line.contains(ready) {
                break;
            }
        }
    })
    .await
    .expect("server-everything did not start listening");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

pub fn sse(id: &str, url: &str) -> McpServerConfig {
    McpServerConfig {
        id: id.to_owned(),
        transport: McpTransport::Sse {
            url: url.to_owned(),
            headers: BTreeMap::new(),
        },
    }
}

pub fn streamable_http(id: &str, url: &str) -> McpServerConfig {
    McpServerConfig {
        id: id.to_owned(),
        transport: McpTransport::StreamableHttp {
            url: url.to_owned(),
            headers: BTreeMap::new(),
        },
    }
}

pub fn ctx() -> agent_tools::ToolContext {
    agent_tools::ToolContext::default()
}
