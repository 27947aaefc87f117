//! # agent-mcp — MCP for openmanus-rs
//!
//! * [`McpClients`]: connections to MCP servers by id (stdio child processes in their own
//!   process group, supervised by `agent-process` so its emergency shutdown kills them too, the legacy HTTP+SSE transport, or streamable HTTP), reconnected with
//!   backoff when they go away mid-run ([`ReconnectPolicy`]), each server tool offered as an
//!   agent tool named `mcp_{server_id}_{tool}` ([`McpTool`]); text joined as OpenManus does, images as
//!   `base64_image`, `isError` as an error result; per-server connect and per-call timeouts;
//!   cancelled calls send `notifications/cancelled`.
//! * [`McpToolServer`]: our tools served over MCP (stdio or streamable HTTP) as `openmanus`; the
//!   binary `openmanus-mcp-server` runs it.
//! * [`mcp_agent`] / [`McpAgentHooks`]: MCPAgent as hooks over `ToolCallAgent`.
//! * [`McpToolSync`]: an agent's tool set kept in line with its servers' tool listings (added,
//!   removed, changed tools) and the model told in a system message; MCPAgent and Manus share it.
//!
//! The official SDK (`rmcp`) stays inside this crate: no `rmcp` type is part of its API.
//!
//! ```
//! use agent_mcp::{McpClientOptions, McpClients, mcp_tool_name};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! // A server that cannot start is a warning; the others keep working.
//! let config = agent_config::McpServerConfig {
//!     id: "missing".into(),
//!     transport: agent_config::McpTransport::Stdio {
//!         command: "/nonexistent/mcp-server".into(),
//!         args: vec![],
//!         env: Default::default(),
//!         cwd: None,
//!     },
//! };
//! let (clients, warnings) = McpClients::connect_all(&[config], McpClientOptions::default()).await;
//! assert_eq!(warnings.len(), 1);
//! assert!(clients.tools().is_empty());
//! assert_eq!(mcp_tool_name("everything", "get-sum"), "mcp_everything_get-sum");
//! # });
//! ```

mod agent;
mod client;
mod content;
mod error;
mod naming;
mod server;
mod sse;
mod sse_server;
mod sync;
mod trace_headers;

pub use agent::{
    MCP_AGENT_MAX_STEPS, MCP_AGENT_NAME, MCP_NEXT_STEP_PROMPT, MCP_SYSTEM_PROMPT,
    MULTIMEDIA_RESPONSE_PROMPT, McpAgentHooks, REFRESH_INTERVAL, SERVICE_GONE, mcp_agent,
};
pub use client::{
    McpClientOptions, McpClients, McpStartup, McpTool, McpWarning, NOT_CONNECTED, ReconnectPolicy,
};
pub use content::NO_OUTPUT;
pub use error::McpError;
pub use naming::{MAX_TOOL_NAME_LEN, mcp_tool_name, sanitize_tool_name, unique_name};
pub use server::{HTTP_PATH, McpToolServer, SERVER_NAME};
pub use sse_server::{MESSAGES_PATH, SSE_PATH};
pub use sync::{McpToolSync, ToolChanges};

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
