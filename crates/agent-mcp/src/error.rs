//! The errors of this crate.

use std::time::Duration;

use thiserror::Error;

/// Why connecting to, or talking to, an MCP server failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server's configuration cannot be used (names the server and the field).
    #[error("MCP server `{server}`: {message}")]
    Config {
        /// The server id.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// The server's process could not be started.
    #[error("MCP server `{server}` failed to start `{command}`: {source}")]
    Spawn {
        /// The server id.
        server: String,
        /// The program.
        command: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The server did not complete the MCP handshake in time.
    #[error("MCP server `{server}` did not finish initialising within {timeout:?}")]
    ConnectTimeout {
        /// The server id.
        server: String,
        /// The connect timeout.
        timeout: Duration,
    },
    /// The MCP handshake failed.
    #[error("MCP server `{server}`: initialisation failed: {message}")]
    Initialize {
        /// The server id.
        server: String,
        /// The SDK's error text.
        message: String,
    },
    /// A request to a connected server failed.
    #[error("MCP server `{server}`: {message}")]
    Request {
        /// The server id.
        server: String,
        /// The SDK's error text.
        message: String,
    },
    /// The transport is not implemented (kept for configurations a build cannot serve; every
    /// transport of `agent_config::McpTransport` is implemented today).
    #[error("MCP server `{server}`: the `{transport}` transport is not supported yet")]
    Unsupported {
        /// The server id.
        server: String,
        /// The transport kind.
        transport: &'static str,
    },
    /// A server id is used twice in one [`crate::McpClients`].
    #[error("MCP server `{0}` is already connected")]
    Duplicate(String),
    /// No connected server has this id.
    #[error("no MCP server `{0}` is connected")]
    UnknownServer(String),
    /// Serving our tools over MCP failed.
    #[error("MCP server: {0}")]
    Serve(String),
    /// An I/O error (binding a port, reading standard input).
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl McpError {
    /// The server id this error is about, when it is about one.
    #[must_use]
    pub fn server(&self) -> Option<&str> {
        match self {
            Self::Config { server, .. }
            | Self::Spawn { server, .. }
            | Self::ConnectTimeout { server, .. }
            | Self::Initialize { server, .. }
            | Self::Request { server, .. }
            | Self::Unsupported { server, .. } => Some(server),
            Self::Duplicate(server) | Self::UnknownServer(server) => Some(server),
            Self::Serve(_) | Self::Io(_) => None,
        }
    }
}
