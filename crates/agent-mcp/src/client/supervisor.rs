//! One configured server across its successive connections, and the supervisor task that
//! reconnects it with backoff when its connection goes away.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};

use agent_config::McpServerConfig;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::connection::{Connection, connect};
use super::handler::Shared;
use super::options::McpClientOptions;
use crate::error::McpError;

/// Where one server stands.
#[derive(Clone)]
pub(super) enum State {
    /// This connection is (or was until a moment ago) live.
    Connected(Arc<Connection>),
    /// The connection went away; a reconnection is under way.
    Reconnecting,
    /// Gone for good: disconnected, or reconnection gave up (or is disabled).
    Gone,
}

/// One configured server across its successive connections.
pub(super) struct Server {
    pub(super) id: String,
    config: McpServerConfig,
    options: McpClientOptions,
    pub(super) shared: Arc<Shared>,
    pub(super) state: watch::Sender<State>,
    /// Fires on disconnect: stops the supervisor.
    pub(super) shutdown: CancellationToken,
    /// Reconnection attempts made so far, over the server's lifetime.
    pub(super) attempts: AtomicU32,
}

impl Server {
    /// Connects, and starts the supervisor that reconnects the server when it goes away.
    pub(super) async fn start(
        config: &McpServerConfig,
        options: &McpClientOptions,
    ) -> Result<Arc<Self>, McpError> {
        let shared = Arc::new(Shared::default());
        let connection = Arc::new(connect(config, options, shared.clone()).await?);
        let (state, _) = watch::channel(State::Connected(connection.clone()));
        let server = Arc::new(Self {
            id: config.id.clone(),
            config: config.clone(),
            options: options.clone(),
            shared,
            state,
            shutdown: CancellationToken::new(),
            attempts: AtomicU32::new(0),
        });
        tokio::spawn(supervise(
            Arc::downgrade(&server),
            server.shutdown.clone(),
            connection,
        ));
        Ok(server)
    }

    /// The connection, if it is live right now.
    pub(super) fn current(&self) -> Option<Arc<Connection>> {
        match &*self.state.borrow() {
            State::Connected(c) if !c.is_closed() => Some(c.clone()),
            _ => None,
        }
    }

    /// Connected, or being reconnected.
    pub(super) fn is_alive(&self) -> bool {
        !matches!(&*self.state.borrow(), State::Gone)
    }

    /// The live connection, waiting for a reconnection under way; `None` once the server is
    /// gone for good.
    pub(super) async fn live(&self) -> Option<Arc<Connection>> {
        let mut state = self.state.subscribe();
        loop {
            match &*state.borrow_and_update() {
                State::Connected(c) if !c.is_closed() => return Some(c.clone()),
                State::Gone => return None,
                State::Connected(_) | State::Reconnecting => {}
            }
            if state.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Waits until the server is live (`true`) or gone for good (`false`).
    pub(super) async fn ready(&self) -> bool {
        self.live().await.is_some()
    }

    /// Waits until the server is gone for good.
    pub(super) async fn gone(&self) {
        let mut state = self.state.subscribe();
        let _ = state.wait_for(|s| matches!(s, State::Gone)).await;
    }

    /// Stops the supervisor and closes the connection gracefully.
    pub(super) async fn stop(&self) {
        self.shutdown.cancel();
        if let State::Connected(connection) = self.state.send_replace(State::Gone) {
            connection.shutdown().await;
        }
    }
}

/// Watches a server's connection; when it goes away (and the server was not disconnected),
/// reconnects with exponential backoff up to the policy's attempt cap.
async fn supervise(server: Weak<Server>, shutdown: CancellationToken, first: Arc<Connection>) {
    let mut connection = first;
    loop {
        tokio::select! {
            () = connection.closed.cancelled() => {}
            () = shutdown.cancelled() => return,
        }
        let Some(server) = server.upgrade() else {
            return;
        };
        if shutdown.is_cancelled() {
            return;
        }
        // Reap what is left of the dead connection (a stdio server's process group).
        connection.shutdown().await;
        let policy = server.options.reconnect.clone();
        if policy.max_attempts == 0 {
            tracing::warn!(server = %server.id, "MCP server went away; reconnection is disabled");
            server.state.send_replace(State::Gone);
            return;
        }
        server.state.send_replace(State::Reconnecting);
        tracing::warn!(server = %server.id, "MCP server went away; reconnecting");
        let mut attempt = 0;
        connection = loop {
            attempt += 1;
            server.attempts.fetch_add(1, Ordering::SeqCst);
            let wait = policy.backoff(attempt);
            let reconnect = async {
                tokio::time::sleep(wait).await;
                connect(&server.config, &server.options, server.shared.clone()).await
            };
            let result = tokio::select! {
                result = reconnect => result,
                () = shutdown.cancelled() => return,
            };
            match result {
                Ok(fresh) => {
                    tracing::info!(server = %server.id, attempt, "MCP server reconnected");
                    break Arc::new(fresh);
                }
                Err(error) if attempt >= policy.max_attempts => {
                    tracing::warn!(
                        server = %server.id, attempt, %error,
                        "MCP server reconnection failed; giving up"
                    );
                    server.state.send_replace(State::Gone);
                    return;
                }
                Err(error) => {
                    tracing::warn!(server = %server.id, attempt, %error, "MCP server reconnection failed");
                }
            }
        };
        // Publish unless a disconnect came first (it cancels `shutdown` before marking Gone).
        let published = server.state.send_if_modified(|state| {
            if shutdown.is_cancelled() {
                false
            } else {
                *state = State::Connected(connection.clone());
                true
            }
        });
        if !published {
            connection.shutdown().await;
            return;
        }
    }
}
