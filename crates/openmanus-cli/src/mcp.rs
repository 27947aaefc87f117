//! `openmanus mcp` (the MCP agent on one server) and `openmanus mcp-server` (our tools as an MCP
//! server).

use std::sync::Arc;

use agent_config::{McpServerConfig, McpTransport};
use anyhow::{Context, Result};

use crate::cli::{McpConnection, McpServe};
use crate::output::{EXIT_OK, note};

/// The server `openmanus mcp` (and `--agent mcp`) connects to: the given command or URL, else
/// this program's own `mcp-server` over stdio.
///
/// # Errors
///
/// An sse or http connection without a URL; this program's path cannot be found.
pub fn server_config(
    connection: McpConnection,
    server_url: Option<String>,
    command: Option<String>,
    args: Vec<String>,
) -> Result<McpServerConfig> {
    let transport = match connection {
        McpConnection::Stdio => match command {
            Some(command) => McpTransport::Stdio {
                command,
                args,
                env: Default::default(),
                cwd: None,
            },
            None => {
                let me = std::env::current_exe()
                    .context("cannot find this program to start its MCP server")?;
                McpTransport::Stdio {
                    command: me.display().to_string(),
                    args: vec!["mcp-server".to_owned()],
                    env: Default::default(),
                    cwd: None,
                }
            }
        },
        McpConnection::Sse | McpConnection::Http => {
            let url = server_url
                .context("Server URL is required for an sse or http connection (--server-url)")?;
            if connection == McpConnection::Sse {
                McpTransport::Sse {
                    url,
                    headers: Default::default(),
                }
            } else {
                McpTransport::StreamableHttp {
                    url,
                    headers: Default::default(),
                }
            }
        }
    };
    Ok(McpServerConfig {
        id: "server".to_owned(),
        transport,
    })
}

/// `mcp-server` takes no configuration and prints no events: the flags that would do nothing
/// are refused rather than ignored, and so are `--host`/`--port` with the stdio transport.
///
/// # Errors
///
/// Names the flags that do nothing here.
pub fn refuse_ignored_flags(
    global: &crate::cli::GlobalArgs,
    transport: McpServe,
    listens: bool,
) -> Result<()> {
    let mut ignored = Vec::new();
    for (given, flag) in [
        (global.config.is_some(), "--config"),
        (global.workspace.is_some(), "--workspace"),
        (global.json, "--json"),
        (global.model.is_some(), "--model"),
        (
            !global.set.is_empty() || !global.short_set.is_empty(),
            "--set",
        ),
        (global.no_store, "--no-store"),
        (
            global.output_last_message.is_some(),
            "--output-last-message",
        ),
        (
            transport == McpServe::Stdio && listens,
            "--host/--port (stdio)",
        ),
    ] {
        if given {
            ignored.push(flag);
        }
    }
    if !ignored.is_empty() {
        anyhow::bail!(
            "mcp-server does not use {}: it serves bash, str_replace_editor, browser_use and \
             terminate in the current directory, with no configuration (only --sandbox)",
            ignored.join(", ")
        );
    }
    Ok(())
}

/// `openmanus mcp-server`: `bash` confined as `sandbox` says (default `workspace-write` over
/// the current directory), `str_replace_editor` confined to that directory unless `full-access`.
///
/// # Errors
///
/// The tools cannot be confined here, the address cannot be bound, or the server fails.
pub async fn serve(
    transport: McpServe,
    host: &str,
    port: u16,
    sandbox: Option<agent_config::SandboxMode>,
) -> Result<u8> {
    let directory = std::env::current_dir().context("cannot read the current directory")?;
    let options = agent_sandbox::ConfinementOptions::new(sandbox.unwrap_or_default(), &directory);
    let confinement = agent_sandbox::Confinement::new(&options).await?;
    #[cfg(feature = "browser")]
    let extra: Vec<Arc<dyn agent_tools::Tool>> =
        vec![Arc::new(agent_browser::BrowserUseTool::new())];
    #[cfg(not(feature = "browser"))]
    let extra: Vec<Arc<dyn agent_tools::Tool>> = {
        note(
            "browser_use is not served: this openmanus was built without the `browser` cargo feature",
        );
        Vec::new()
    };
    let server = match &confinement {
        Some(confinement) => agent_mcp::McpToolServer::openmanus_confined(
            extra,
            &directory,
            confinement.launcher(),
            confinement.mode() == agent_config::SandboxMode::ReadOnly,
        ),
        None => agent_mcp::McpToolServer::openmanus_with(extra),
    };
    match transport {
        McpServe::Stdio => server
            .serve_stdio()
            .await
            .context("the MCP server failed")?,
        McpServe::Http | McpServe::Sse => {
            let listener = tokio::net::TcpListener::bind((host, port))
                .await
                .with_context(|| format!("cannot listen on {host}:{port}"))?;
            let address = listener
                .local_addr()
                .context("cannot read the listening address")?;
            let path = if transport == McpServe::Sse {
                agent_mcp::SSE_PATH
            } else {
                agent_mcp::HTTP_PATH
            };
            note(&format!(
                "MCP server `openmanus` listening on http://{address}{path}"
            ));
            let shutdown = tokio_util::sync::CancellationToken::new();
            let stop = shutdown.clone();
            tokio::spawn(async move {
                agent_process::stop_requested().await;
                stop.cancel();
            });
            let served = if transport == McpServe::Sse {
                server.serve_sse(listener, shutdown).await
            } else {
                server.serve_http(listener, shutdown).await
            };
            served.context("the MCP server failed")?;
        }
    }
    Ok(EXIT_OK)
}
