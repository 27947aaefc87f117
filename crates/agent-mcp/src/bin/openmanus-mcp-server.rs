//! `openmanus-mcp-server [--transport stdio|http] [--host 127.0.0.1] [--port 8000]`: our tools
//! (`bash`, `str_replace_editor`, `terminate`) served over MCP as the server `openmanus`.
//!
//! In HTTP mode the endpoint is `http://{host}:{port}/mcp`; `--port 0` picks a free port. The
//! line `listening on http://…/mcp` goes to standard error once the port is bound.

use std::process::ExitCode;

use agent_mcp::{HTTP_PATH, McpToolServer, SSE_PATH};
use tokio_util::sync::CancellationToken;

const USAGE: &str =
    "usage: openmanus-mcp-server [--transport stdio|http|sse] [--host HOST] [--port PORT]";

#[allow(clippy::print_stderr)]
fn fail(message: &str) -> ExitCode {
    eprintln!("openmanus-mcp-server: {message}\n{USAGE}");
    ExitCode::from(2)
}

#[tokio::main]
#[allow(clippy::print_stderr)]
async fn main() -> ExitCode {
    let mut transport = "stdio".to_owned();
    let mut host = "127.0.0.1".to_owned();
    let mut port = "8000".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let slot = match arg.as_str() {
            "--transport" => &mut transport,
            "--host" => &mut host,
            "--port" => &mut port,
            "-h" | "--help" => {
                eprintln!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return fail(&format!("unknown argument `{other}`")),
        };
        match args.next() {
            Some(value) => *slot = value,
            None => return fail(&format!("`{arg}` needs a value")),
        }
    }
    let server = McpToolServer::openmanus();
    let result = match transport.as_str() {
        "stdio" => server.serve_stdio().await,
        "http" | "streamable-http" | "streamable_http" | "sse" => {
            let sse = transport == "sse";
            let listener = match tokio::net::TcpListener::bind(format!("{host}:{port}")).await {
                Ok(listener) => listener,
                Err(e) => return fail(&format!("cannot listen on {host}:{port}: {e}")),
            };
            let path = if sse { SSE_PATH } else { HTTP_PATH };
            match listener.local_addr() {
                Ok(addr) => eprintln!("listening on http://{addr}{path}"),
                Err(e) => return fail(&e.to_string()),
            }
            let shutdown = CancellationToken::new();
            let on_signal = shutdown.clone();
            tokio::spawn(async move {
                agent_process::stop_requested().await;
                on_signal.cancel();
            });
            if sse {
                server.serve_sse(listener, shutdown).await
            } else {
                server.serve_http(listener, shutdown).await
            }
        }
        other => return fail(&format!("unsupported transport `{other}`")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("openmanus-mcp-server: {e}");
            ExitCode::FAILURE
        }
    }
}
