//! One live connection to one MCP server (stdio, streamable HTTP or legacy SSE): connecting,
//! listing tools, calling one, closing.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use agent_config::{McpServerConfig, McpTransport};
use agent_process::ProcessGroup;
use agent_tools::{ToolContext, ToolError, ToolResult};
use rmcp::model::{CallToolRequestParams, RequestParamsMeta as _, Tool as McpToolDefinition};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::handler::{Handler, Shared};
use super::options::McpClientOptions;
use super::stdio::{StdioServer, spawn_stdio, stop};
use super::transport::{header_map, watched};
use crate::content::to_tool_result;
use crate::error::McpError;
use crate::sse::SseClientTransport;

/// The observation of a call to a tool whose server is not connected (OpenManus's wording).
pub const NOT_CONNECTED: &str = "Not connected to MCP server";

/// How long a call waits for its reply after the server's process exited.
pub(super) const EXIT_GRACE: Duration = Duration::from_secs(2);

/// One live connection to one MCP server.
pub(super) struct Connection {
    pub(super) id: String,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// Fires when the connection is gone (process exited, stream closed, or disconnected).
    pub(super) closed: CancellationToken,
    shared: Arc<Shared>,
    /// A stdio server's process group (killed when dropped).
    child: Option<ProcessGroup>,
    call_timeout: Option<Duration>,
}

impl Connection {
    pub(super) fn is_closed(&self) -> bool {
        self.closed.is_cancelled() || self.peer.is_transport_closed()
    }

    /// Kills a stdio server's process group at once (for synchronous drops).
    pub(super) fn kill_now(&self) {
        self.closed.cancel();
        if let Some(child) = &self.child {
            child.kill();
        }
    }

    pub(super) async fn list_tools(&self) -> Result<Vec<McpToolDefinition>, McpError> {
        if self.is_closed() {
            return Err(self.request_error(NOT_CONNECTED));
        }
        self.shared.list_changed.store(false, Ordering::SeqCst);
        let listing = self.peer.list_all_tools();
        let tools = tokio::select! {
            biased;
            tools = listing => tools.map_err(|e| self.request_error(e))?,
            () = self.closed.cancelled() => return Err(self.request_error(NOT_CONNECTED)),
        };
        *self
            .shared
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = tools.clone();
        Ok(tools)
    }

    fn request_error(&self, message: impl std::fmt::Display) -> McpError {
        McpError::Request {
            server: self.id.clone(),
            message: message.to_string(),
        }
    }

    pub(super) async fn shutdown(&self) {
        let service = self.service.lock().await.take();
        self.closed.cancel();
        if let Some(service) = service
            && let Err(error) = service.cancel().await
        {
            tracing::debug!(server = %self.id, %error, "MCP service task failed on close");
        }
        if let Some(child) = &self.child {
            stop(child).await;
        }
        tracing::info!(server = %self.id, "Disconnected from MCP server");
    }

    /// Calls a tool. `Ok(Err(message))`: the request never reached the server (the transport
    /// failed to send it), so it may be retried on a new connection.
    pub(super) async fn call(
        &self,
        name: &str,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<Result<ToolResult, String>, ToolError> {
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "expected a JSON object, got {other}"
                )));
            }
        };
        if self.is_closed() {
            return Ok(Err(NOT_CONNECTED.to_owned()));
        }
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = arguments;
        // The call's trace context (the `execute_tool` span's) for the server, the MCP way:
        // `_meta.traceparent` (SEP-414), on every transport; over HTTP also as headers
        // (`crate::trace_headers`). Nothing with telemetry off.
        for (key, value) in agent_telemetry::context::current_headers() {
            match key {
                agent_telemetry::context::TRACEPARENT => params.set_traceparent(&value),
                agent_telemetry::context::TRACESTATE => params.set_tracestate(&value),
                _ => {}
            }
        }
        // Dropping this future before its reply sends `notifications/cancelled`.
        let call = self.peer.call_tool(params);
        tokio::pin!(call);
        let timeout = async {
            match self.call_timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let reply = tokio::select! {
            biased;
            reply = &mut call => reply,
            () = ctx.cancellation.cancelled() => {
                return Ok(Ok(ToolResult::failure("Error executing tool: the call was cancelled")));
            }
            () = timeout => {
                return Ok(Ok(ToolResult::failure(format!(
                    "Error executing tool: MCP server `{}` did not answer within {:?}",
                    self.id,
                    self.call_timeout.unwrap_or_default()
                ))));
            }
            () = self.closed.cancelled() => {
                match tokio::time::timeout(EXIT_GRACE, &mut call).await {
                    Ok(reply) => reply,
                    Err(_) => {
                        return Ok(Ok(ToolResult::failure(format!(
                            "Error executing tool: MCP server `{}` closed the connection",
                            self.id
                        ))));
                    }
                }
            }
        };
        Ok(match reply {
            Ok(result) => Ok(to_tool_result(result)),
            Err(error @ rmcp::ServiceError::TransportSend(_)) => {
                Err(format!("Error executing tool: {error}"))
            }
            Err(error) => Ok(ToolResult::failure(format!(
                "Error executing tool: {error}"
            ))),
        })
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// Connects to one server; its tool listings go to `shared`.
pub(super) async fn connect(
    config: &McpServerConfig,
    options: &McpClientOptions,
    shared: Arc<Shared>,
) -> Result<Connection, McpError> {
    let id = config.id.clone();
    let handler = Handler {
        list_changed: shared.list_changed.clone(),
        notify: shared.notify.clone(),
    };
    let closed = CancellationToken::new();
    let init_error = |e: rmcp::service::ClientInitializeError| McpError::Initialize {
        server: id.clone(),
        message: e.to_string(),
    };
    let timeout_error = || McpError::ConnectTimeout {
        server: id.clone(),
        timeout: options.connect_timeout,
    };
    let (service, child) = match &config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let StdioServer {
                group,
                stdin,
                stdout,
            } = spawn_stdio(&id, command, args, env, cwd.as_deref())?;
            let mut exit = group.exit_watch();
            let closed_on_exit = closed.clone();
            let server = id.clone();
            tokio::spawn(async move {
                match exit.wait().await {
                    Some(status) => tracing::info!(server = %server, %status, "MCP server exited"),
                    None => tracing::warn!(server = %server, "MCP server gone, status unknown"),
                }
                closed_on_exit.cancel();
            });
            let serving = handler.serve(watched((stdout, stdin), closed.clone()));
            let service = match tokio::time::timeout(options.connect_timeout, serving).await {
                Ok(Ok(service)) => service,
                Ok(Err(e)) => return Err(init_error(e)),
                Err(_) => return Err(timeout_error()),
            };
            (service, Some(group))
        }
        McpTransport::StreamableHttp { url, headers } => {
            let custom = header_map(&id, headers)?
                .into_iter()
                .filter_map(|(n, v)| Some((n?, v)));
            // rmcp's default resumes a broken response stream forever, with ever longer waits,
            // so a call in flight to a server that died would hang until its timeout. A few
            // quick resumptions ride out a hiccup; then the call fails, the connection counts
            // as lost, and this client's own reconnection takes over.
            let mut retry = rmcp::transport::common::client_side_sse::ExponentialBackoff::default();
            retry.max_times = Some(3);
            retry.base_duration = Duration::from_millis(200);
            retry.max_delay = Some(Duration::from_secs(2));
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                .custom_headers(custom.collect());
            config.retry_config = Arc::new(retry);
            // The process's shared client (one TLS set-up, roots read only for https), not a
            // client of rmcp's own.
            let client = agent_llm::http::shared_client().map_err(|e| McpError::Initialize {
                server: id.clone(),
                message: e.to_string(),
            })?;
            let client = super::traced_http::TracedClient(client);
            let transport = StreamableHttpClientTransport::with_client(client, config);
            let serving = handler.serve(watched(transport, closed.clone()));
            let service = match tokio::time::timeout(options.connect_timeout, serving).await {
                Ok(Ok(service)) => service,
                Ok(Err(e)) => return Err(init_error(e)),
                Err(_) => return Err(timeout_error()),
            };
            (service, None)
        }
        McpTransport::Sse { url, headers } => {
            let headers = header_map(&id, headers)?;
            let opening = async {
                // The process's shared client: the root certificates are read once, and only
                // for an https server.
                let client =
                    agent_llm::http::shared_client().map_err(|e| McpError::Initialize {
                        server: id.clone(),
                        message: e.to_string(),
                    })?;
                let transport = SseClientTransport::connect(client, url, headers)
                    .await
                    .map_err(|e| McpError::Initialize {
                        server: id.clone(),
                        message: e.to_string(),
                    })?;
                handler
                    .serve(watched(transport, closed.clone()))
                    .await
                    .map_err(init_error)
            };
            let service = match tokio::time::timeout(options.connect_timeout, opening).await {
                Ok(Ok(service)) => service,
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(timeout_error()),
            };
            (service, None)
        }
    };
    let peer = service.peer().clone();
    let connection = Connection {
        id: id.clone(),
        peer,
        service: tokio::sync::Mutex::new(Some(service)),
        closed,
        shared,
        child,
        call_timeout: options.call_timeout,
    };
    let listing = connection.list_tools();
    match tokio::time::timeout(options.connect_timeout, listing).await {
        Ok(Ok(tools)) => {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
            tracing::info!(server = %id, ?names, "Connected to server {id} with tools: {names:?}");
        }
        Ok(Err(e)) => {
            connection.shutdown().await;
            return Err(e);
        }
        Err(_) => {
            connection.shutdown().await;
            return Err(timeout_error());
        }
    }
    Ok(connection)
}
