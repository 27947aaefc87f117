//! How a server is set up: where it listens, who may use it, how many runs go at once.

use std::net::SocketAddr;
use std::path::PathBuf;

/// The default address: loopback only.
pub const DEFAULT_BIND: &str = "127.0.0.1:8765";

/// The default limit on runs going at once.
pub const DEFAULT_MAX_CONCURRENT_RUNS: usize = 4;

/// How long a live session may be idle before its agent is closed, by default (30 minutes).
pub const DEFAULT_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Where and how a server runs.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The address to listen on.
    pub bind: SocketAddr,
    /// The token API requests must carry; required when `bind` is not a loopback address.
    pub token: Option<String>,
    /// Runs beyond this many wait in line.
    pub max_concurrent_runs: usize,
    /// How long a live session may sit with nothing to do before its agent is closed (it is
    /// resumed from the store by its next task); `None`: never.
    pub idle_timeout: Option<std::time::Duration>,
    /// Host names accepted in `Host` besides the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Origins accepted besides the server's own.
    pub allowed_origins: Vec<String>,
    /// The directory under which each session gets its own workspace.
    pub sessions_root: PathBuf,
    /// Let tools run on the host even when the server listens beyond loopback (otherwise they
    /// run in the sandbox there).
    pub allow_host_tools: bool,
}

/// Why a server cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A non-loopback address without a token.
    #[error(
        "refusing to listen on {0} without a token: anyone who can reach it could run commands \
         on this machine. Set OPENMANUS_SERVER_TOKEN (or [server] token_file), or bind 127.0.0.1"
    )]
    TokenRequired(SocketAddr),
    /// The token is too short to be a secret.
    #[error("the server token must be at least 16 characters")]
    WeakToken,
    /// The address cannot be listened on.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Serving failed.
    #[error("the server stopped: {0}")]
    Serve(#[source] std::io::Error),
    /// The sessions directory cannot be created.
    #[error("cannot create the sessions directory {path}: {source}")]
    SessionsRoot {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl ServerOptions {
    /// Options for a loopback server keeping its sessions' workspaces under `sessions_root`.
    #[must_use]
    pub fn new(sessions_root: impl Into<PathBuf>) -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8765)),
            token: None,
            max_concurrent_runs: DEFAULT_MAX_CONCURRENT_RUNS,
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            sessions_root: sessions_root.into(),
            allow_host_tools: false,
        }
    }

    /// Whether the server listens on loopback only.
    #[must_use]
    pub fn is_loopback(&self) -> bool {
        self.bind.ip().is_loopback()
    }

    /// Whether the agents' tools must run in the sandbox.
    #[must_use]
    pub fn sandboxed(&self) -> bool {
        !self.is_loopback() && !self.allow_host_tools
    }

    /// Checks the rules a server must keep before it listens.
    ///
    /// # Errors
    ///
    /// [`ServerError::TokenRequired`] beyond loopback without a token; a token too short.
    pub fn validate(&self) -> Result<(), ServerError> {
        match &self.token {
            None if !self.is_loopback() => Err(ServerError::TokenRequired(self.bind)),
            Some(token) if token.trim().chars().count() < 16 => Err(ServerError::WeakToken),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_bind_needs_a_token() {
        let mut options = ServerOptions::new("/tmp/s");
        assert!(options.validate().is_ok());
        options.bind = "0.0.0.0:8765".parse().unwrap();
        assert!(matches!(
            options.validate(),
            Err(ServerError::TokenRequired(_))
        ));
        assert!(options.sandboxed());
        options.token = Some("short".into());
        assert!(matches!(options.validate(), Err(ServerError::WeakToken)));
        options.token = Some("a-long-enough-secret".into());
        assert!(options.validate().is_ok());
    }
}
