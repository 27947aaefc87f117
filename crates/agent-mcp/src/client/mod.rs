//! The MCP client: connections to MCP servers by id, and their tools as agent tools.
//!
//! One concern a file: `options` (timeouts, reconnection, warnings), `handler` (our side of a
//! session), `transport` (the transport wrapper, headers), `stdio` (a stdio server's supervised
//! process group), `connection` (one live connection), `supervisor` (one server across
//! reconnections), `registry` ([`McpClients`]), `startup` ([`McpStartup`], servers connected in the background),
//! `tool` ([`McpTool`]).

mod connection;
mod handler;
mod options;
mod registry;
mod startup;
mod stdio;
mod supervisor;
mod tool;
mod traced_http;
mod transport;

pub use connection::NOT_CONNECTED;
pub use options::{McpClientOptions, McpWarning, ReconnectPolicy};
pub use registry::McpClients;
pub use startup::McpStartup;
pub use tool::McpTool;
