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

fn peer_path(env_var: &str, installed: &str, what: &str) -> PathBuf {
    if let Some(bin) = std::env::var_os(env_var) {
        let bin = PathBuf::from(bin);
        assert!(
            bin.exists(),
            "{env_var}={} does not exist ({what})",
            bin.display()
        );
        return bin;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = root.join(installed);
    assert!(
        bin.exists(),
        "the MCP test peer {what} is missing: run `cargo xtask integration` (it installs it into \
         target/xtask-tools) or set {env_var}"
    );
    bin
}

/// The `mcp-server-filesystem` executable: `$MCP_FILESYSTEM_BIN` (set by `cargo xtask`), else
/// the copy `cargo xtask` installs under `target/xtask-tools/npm`.
pub fn filesystem_bin() -> PathBuf {
    peer_path(
        "MCP_FILESYSTEM_BIN",
        "target/xtask-tools/npm/node_modules/.bin/mcp-server-filesystem",
        "@modelcontextprotocol/server-filesystem (npm)",
    )
}

/// A Python interpreter with the `mcp` SDK (1.x): `$MCP_PYTHON` (set by `cargo xtask`), else the
/// virtualenv `cargo xtask` creates under `target/xtask-tools`.
pub fn mcp_python() -> PathBuf {
    peer_path(
        "MCP_PYTHON",
        "target/xtask-tools/mcp-python-1.30.0/bin/python",
        "the Python `mcp` SDK (PyPI)",
    )
}

/// A committed fixture under `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Waits (bounded) until neither the process `pid` nor its process group exists any more.
pub async fn assert_gone(pid: i32, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while alive(pid) || alive(-pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} (pid {pid}) survived its disconnect"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The FastMCP fixture server (Python `mcp` SDK) on a free loopback port, killed on drop.
pub struct FastMcp {
    pub child: tokio::process::Child,
    pub port: u16,
}

impl FastMcp {
    /// `transport`: `sse` or `streamable-http`. Returns once uvicorn reports it is listening.
    pub async fn start(transport: &str) -> Self {
        let port = free_port();
        let mut child = tokio::process::Command::new(mcp_python())
            .arg(fixture("fastmcp_server.py"))
            .arg(transport)
            .arg(port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let line = lines
                    .next_line()
                    .await
                    .unwrap()
                    .expect("the FastMCP fixture exited before listening");
                if line.contains("Uvicorn running on") {
                    break;
                }
            }
        })
        .await
        .expect("the FastMCP fixture did not start listening");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self { child, port }
    }

    pub fn sse_url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }

    pub fn http_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Kills the server and asserts it is gone.
    pub async fn stop(mut self) {
        let pid = self.child.id().unwrap() as i32;
        self.child.kill().await.unwrap();
        assert!(!alive(pid), "the FastMCP fixture survived");
    }
}

/// Wraps a stdio `config` so its server writes its pid to `pidfile` before it starts (bash
/// `exec`s it, so the pid is the server's and the leader of its process group).
pub fn tracked(config: McpServerConfig, pidfile: &std::path::Path) -> McpServerConfig {
    let McpTransport::Stdio {
        command,
        args,
        env,
        cwd,
    } = config.transport
    else {
        panic!("only stdio servers can be tracked");
    };
    let mut bash_args = vec![
        "-c".to_owned(),
        format!("echo $$ > '{}'; exec \"$0\" \"$@\"", pidfile.display()),
        command,
    ];
    bash_args.extend(args);
    McpServerConfig {
        id: config.id,
        transport: McpTransport::Stdio {
            command: "bash".to_owned(),
            args: bash_args,
            env,
            cwd,
        },
    }
}
