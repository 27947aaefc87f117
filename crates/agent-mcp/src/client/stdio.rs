//! A stdio MCP server's process: started in a supervised process group of its own (registered
//! process-wide, so `agent_process::emergency_shutdown` kills it too), its stderr sent to
//! `tracing`, and stopped gracefully on disconnect.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use agent_process::{ProcessGroup, Spawned};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

use crate::error::McpError;

/// How long a disconnect waits for a stdio server to exit after its standard input closed, and
/// after SIGTERM.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// A started stdio server: its process group and the two pipes the MCP session runs over.
pub(super) struct StdioServer {
    pub(super) group: ProcessGroup,
    pub(super) stdin: ChildStdin,
    pub(super) stdout: ChildStdout,
}

/// Starts a stdio server in its own process group, with its stderr going to `tracing`.
pub(super) fn spawn_stdio(
    id: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
) -> Result<StdioServer, McpError> {
    if command.trim().is_empty() {
        return Err(McpError::Config {
            server: id.to_owned(),
            message: "`command` is empty (Server command is required.)".to_owned(),
        });
    }
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let spawn_error = |source| McpError::Spawn {
        server: id.to_owned(),
        command: command.to_owned(),
        source,
    };
    let Spawned {
        group,
        stdin,
        stdout,
        stderr,
    } = ProcessGroup::spawn(&format!("MCP server {id}"), &mut cmd).map_err(spawn_error)?;
    let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
        return Err(spawn_error(std::io::Error::other("no standard streams")));
    };
    if let Some(stderr) = stderr {
        let server = id.to_owned();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "agent_mcp::server_stderr", server = %server, "{line}");
            }
        });
    }
    Ok(StdioServer {
        group,
        stdin,
        stdout,
    })
}

/// Stops a stdio server whose standard input was just closed: up to [`SHUTDOWN_WAIT`] for it
/// to exit on its own, then SIGTERM, [`SHUTDOWN_WAIT`] more, and SIGKILL to the whole group
/// (grandchildren, `npx` → `node`, may outlive the leader).
pub(super) async fn stop(group: &ProcessGroup) {
    if group.wait_timeout(SHUTDOWN_WAIT).await.is_err() {
        tracing::debug!(
            pgid = group.pgid(),
            "MCP server still running after stdin closed"
        );
    }
    group.shutdown(SHUTDOWN_WAIT).await;
}
