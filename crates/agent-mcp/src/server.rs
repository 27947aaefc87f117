//! Our tools served over MCP (spec §8.2): server name `openmanus`, over stdio or streamable HTTP.

use std::sync::Arc;

use agent_tools::{Bash, StrReplaceEditor, Terminate, Tool, ToolCollection, ToolContext};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::content::from_tool_result;
use crate::error::McpError;

/// The MCP server name OpenManus uses.
pub const SERVER_NAME: &str = "openmanus";

/// The path the streamable HTTP endpoint is mounted at.
pub const HTTP_PATH: &str = "/mcp";

/// A set of agent tools served over MCP, each under its own name, with its full JSON schema
/// (enums, defaults and item types kept: fixes §13 W24), results as MCP content (text, and
/// images as image content) and failures as `isError` results.
#[derive(Clone, Debug)]
pub struct McpToolServer {
    name: String,
    tools: ToolCollection,
}

impl McpToolServer {
    /// Serves `tools` under the server name `name`.
    #[must_use]
    pub fn new(name: impl Into<String>, tools: ToolCollection) -> Self {
        Self {
            name: name.into(),
            tools,
        }
    }

    /// OpenManus's server: `openmanus` with `bash` (one persistent session for the server's
    /// lifetime), `str_replace_editor` and `terminate`.
    #[must_use]
    pub fn openmanus() -> Self {
        Self::openmanus_with(Vec::new())
    }

    /// OpenManus's server with more tools after `bash`, in OpenManus's order: `bash`, `extra`
    /// (the `openmanus` binary passes `browser_use`), `str_replace_editor`, `terminate`.
    #[must_use]
    pub fn openmanus_with(extra: Vec<Arc<dyn Tool>>) -> Self {
        let mut tools = ToolCollection::new();
        tools.add_tool(Bash::new());
        tools.add_tools(extra);
        tools.add_tool(StrReplaceEditor::new());
        tools.add_tool(Terminate);
        Self::new(SERVER_NAME, tools)
    }

    /// [`McpToolServer::openmanus_with`], confined: `bash` started under `launcher` (a
    /// confinement's, `agent_sandbox::Confinement::launcher`) in `directory`, and
    /// `str_replace_editor` confined to `directory` (and writing nothing when `read_only`: the
    /// confinement's mode is `read-only`).
    #[must_use]
    pub fn openmanus_confined(
        extra: Vec<Arc<dyn Tool>>,
        directory: &std::path::Path,
        launcher: Vec<String>,
        read_only: bool,
    ) -> Self {
        let mut tools = ToolCollection::new();
        tools.add_tool(Bash::new().with_cwd(directory).with_launcher(launcher));
        tools.add_tools(extra);
        let editor = StrReplaceEditor::new().with_workspace_root(directory);
        tools.add_tool(if read_only {
            editor.read_only()
        } else {
            editor
        });
        tools.add_tool(Terminate);
        Self::new(SERVER_NAME, tools)
    }

    /// The names of the served tools.
    #[must_use]
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.names()
    }

    /// Serves one client on standard input and output until it disconnects.
    ///
    /// # Errors
    ///
    /// [`McpError::Serve`] when the handshake fails.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let service = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| McpError::Serve(e.to_string()))?;
        service
            .waiting()
            .await
            .map_err(|e| McpError::Serve(e.to_string()))?;
        Ok(())
    }

    /// An axum router with the streamable HTTP endpoint at [`HTTP_PATH`]; each session gets a
    /// clone of this server (the tools themselves are shared).
    pub fn http_router(self, shutdown: CancellationToken) -> axum::Router {
        let mut config = StreamableHttpServerConfig::default();
        config.cancellation_token = shutdown;
        let service = StreamableHttpService::new(
            move || Ok(self.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        axum::Router::new()
            .nest_service(HTTP_PATH, service)
            .layer(axum::middleware::from_fn(
                crate::sse_server::loopback_origin_only,
            ))
    }

    /// Serves streamable HTTP on `listener` until `shutdown` fires.
    ///
    /// # Errors
    ///
    /// [`McpError::Io`] when the server fails.
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        shutdown: CancellationToken,
    ) -> Result<(), McpError> {
        let router = self.http_router(shutdown.clone());
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await?;
        Ok(())
    }
}

impl ServerHandler for McpToolServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                self.name.clone(),
                env!("CARGO_PKG_VERSION"),
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .tools
            .iter()
            .map(|tool| {
                let schema = match tool.parameters() {
                    Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
                rmcp::model::Tool::new(
                    tool.name().to_owned(),
                    tool.description().to_owned(),
                    Arc::new(schema),
                )
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !self.tools.contains(&name) {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {name}"),
                None,
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        tracing::info!(tool = %name, %args, "Executing {name}");
        let ctx = ToolContext::new(context.ct.clone(), format!("{:?}", context.id));
        let result = match self.tools.execute(&name, args, &ctx).await {
            Ok(result) => from_tool_result(&result),
            Err(error) => CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
                "Error: ⚠️ Tool '{name}' encountered a problem: {error}"
            ))]),
        };
        Ok(CallToolResponse::Complete(result))
    }
}
