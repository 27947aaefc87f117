//! [`McpTool`]: one tool of one MCP server, as an agent tool.

use std::sync::Weak;

use agent_tools::{Tool, ToolContext, ToolError, ToolResult};
use async_trait::async_trait;
use serde_json::Value;

use super::connection::{EXIT_GRACE, NOT_CONNECTED};
use super::supervisor::Server;

/// One tool of one MCP server, as an agent [`Tool`]. It finds its server's live connection at
/// each call (so it keeps working across reconnections, waiting for one under way); once its
/// [`McpClients`](crate::McpClients) is dropped or disconnected, or the server is gone for good, a call answers
/// `Not connected to MCP server`.
pub struct McpTool {
    pub(super) name: String,
    pub(super) original_name: String,
    pub(super) server_id: String,
    pub(super) description: String,
    pub(super) parameters: Value,
    pub(super) server: Weak<Server>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.name)
            .field("original_name", &self.original_name)
            .field("server_id", &self.server_id)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// The tool's name on its server.
    #[must_use]
    pub fn original_name(&self) -> &str {
        &self.original_name
    }

    /// The id of its server.
    #[must_use]
    pub fn server_id(&self) -> &str {
        &self.server_id
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let Some(server) = self.server.upgrade() else {
            return Ok(ToolResult::failure(NOT_CONNECTED));
        };
        // A request the transport failed to send never reached the server: once that connection
        // is seen to be gone, it is sent again on the next one (once).
        let mut retried = false;
        loop {
            let connection = tokio::select! {
                connection = server.live() => connection,
                () = ctx.cancellation.cancelled() => {
                    return Ok(ToolResult::failure("Error executing tool: the call was cancelled"));
                }
            };
            let Some(connection) = connection else {
                return Ok(ToolResult::failure(NOT_CONNECTED));
            };
            tracing::debug!(server = %self.server_id, tool = %self.original_name, "calling MCP tool");
            match connection
                .call(&self.original_name, args.clone(), ctx)
                .await?
            {
                Ok(result) => return Ok(result),
                Err(message) if retried => return Ok(ToolResult::failure(message)),
                Err(message) => {
                    retried = true;
                    let gone =
                        tokio::time::timeout(EXIT_GRACE, connection.closed.cancelled()).await;
                    if gone.is_err() {
                        return Ok(ToolResult::failure(message));
                    }
                    tracing::debug!(server = %self.server_id, "connection lost before sending; retrying");
                }
            }
        }
    }
}
