//! The settings of an [`McpClients`](super::McpClients) (timeouts, reconnection) and the warning
//! a skipped server becomes.

use std::time::Duration;

use agent_config::McpSettings;
use agent_config::{DEFAULT_MCP_CONNECT_TIMEOUT_SECS, DEFAULT_MCP_STARTUP_WAIT_SECS};

use crate::error::McpError;

/// Timeouts of an [`McpClients`](crate::McpClients).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpClientOptions {
    /// The longest a server may take to start and complete the MCP handshake (default 30 s).
    pub connect_timeout: Duration,
    /// The longest one tool call may take; `None`: no limit (default 300 s). A call that times
    /// out is cancelled on the server with `notifications/cancelled`.
    pub call_timeout: Option<Duration>,
    /// How a server whose connection goes away mid-run is reconnected.
    pub reconnect: ReconnectPolicy,
    /// How long an agent's first step waits for servers still connecting in the background
    /// ([`McpStartup`](crate::McpStartup)), counted from the start (default 10 s). The ones not
    /// ready by then join at a later step, within `connect_timeout`.
    pub startup_wait: Duration,
}

impl Default for McpClientOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(DEFAULT_MCP_CONNECT_TIMEOUT_SECS),
            call_timeout: Some(Duration::from_secs(300)),
            reconnect: ReconnectPolicy::default(),
            startup_wait: Duration::from_secs(DEFAULT_MCP_STARTUP_WAIT_SECS),
        }
    }
}

impl McpClientOptions {
    /// The options `[mcp]` sets (`connect_timeout_secs`, `startup_wait_secs`); the rest default.
    #[must_use]
    pub fn from_settings(settings: &McpSettings) -> Self {
        Self {
            connect_timeout: Duration::from_secs(settings.connect_timeout_secs),
            startup_wait: Duration::from_secs(settings.startup_wait_secs),
            ..Self::default()
        }
    }
}

/// How a server that dies mid-run is reconnected: a stdio server's process is started again, an
/// HTTP or SSE server is connected to again, and its tools are listed again.
///
/// Attempt `n` (from 1) starts after `initial_backoff * 2^(n-1)`, at most `max_backoff`; after
/// `max_attempts` failed attempts in a row the server is gone for good and its tools answer
/// [`NOT_CONNECTED`](crate::NOT_CONNECTED).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// Attempts per outage; `0` disables reconnection (default 5).
    pub max_attempts: u32,
    /// The wait before the first attempt (default 200 ms).
    pub initial_backoff: Duration,
    /// The longest wait between two attempts (default 5 s).
    pub max_backoff: Duration,
}

impl ReconnectPolicy {
    /// No reconnection: a server that goes away stays gone.
    #[must_use]
    pub const fn never() -> Self {
        Self {
            max_attempts: 0,
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        }
    }

    /// The wait before attempt `attempt` (from 1).
    #[must_use]
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// A server that could not be connected: logged, reported, and skipped; the others keep working.
#[derive(Debug)]
pub struct McpWarning {
    /// The server id.
    pub server: String,
    /// Why it was skipped.
    pub error: McpError,
}

impl std::fmt::Display for McpWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.error)
    }
}

/// Logs a skipped server and makes it a warning.
pub(crate) fn warning(error: McpError, id: &str) -> McpWarning {
    tracing::warn!(server = %id, %error, "MCP server skipped");
    McpWarning {
        server: id.to_owned(),
        error,
    }
}
