//! [`McpClients`]: the set of MCP server connections, by id, and their tools.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use agent_config::McpServerConfig;
use agent_tools::Tool;
use serde_json::Value;

use super::options::{McpClientOptions, McpWarning, warning};
use super::supervisor::{Server, State};
use super::tool::McpTool;
use crate::error::McpError;
use crate::naming::{mcp_tool_name, unique_name};

/// A set of MCP server connections, each by id, owned by this instance alone (fixes §13 W21).
///
/// Each server tool is offered as an [`McpTool`] named `mcp_{server_id}_{tool}` (sanitised, at
/// most 64 characters, unique). A server that goes away mid-run is reconnected as its
/// [`ReconnectPolicy`](crate::ReconnectPolicy) says, and its tools listed again; the [`McpTool`]s find the live
/// connection by server. Dropping the set kills every stdio server's process group;
/// [`McpClients::disconnect_all`] does it gracefully.
#[derive(Default)]
pub struct McpClients {
    servers: Vec<Arc<Server>>,
    options: McpClientOptions,
}

impl std::fmt::Debug for McpClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClients")
            .field("servers", &self.server_ids())
            .field("options", &self.options)
            .finish()
    }
}

impl Drop for McpClients {
    fn drop(&mut self) {
        for server in &self.servers {
            server.shutdown.cancel();
            if let State::Connected(connection) = server.state.send_replace(State::Gone) {
                connection.kill_now();
            }
        }
    }
}

impl McpClients {
    /// An empty set with these timeouts.
    #[must_use]
    pub fn new(options: McpClientOptions) -> Self {
        Self {
            servers: Vec::new(),
            options,
        }
    }

    /// Connects to every server of `configs` concurrently; a server that fails is logged and
    /// returned as a warning, and the others are kept.
    pub async fn connect_all(
        configs: &[McpServerConfig],
        options: McpClientOptions,
    ) -> (Self, Vec<McpWarning>) {
        let mut clients = Self::new(options);
        let attempts = configs.iter().map(|c| Server::start(c, &clients.options));
        let results = futures::future::join_all(attempts).await;
        let mut warnings = Vec::new();
        for (config, result) in configs.iter().zip(results) {
            match result {
                Ok(server) if !clients.contains(&config.id) => {
                    clients.servers.push(server);
                }
                Ok(server) => {
                    server.stop().await;
                    warnings.push(warning(McpError::Duplicate(config.id.clone()), &config.id));
                }
                Err(error) => warnings.push(warning(error, &config.id)),
            }
        }
        (clients, warnings)
    }

    /// Connects to one more server.
    ///
    /// # Errors
    ///
    /// [`McpError::Duplicate`] when the id is taken; otherwise why the server could not be
    /// started or initialised.
    pub async fn connect(&mut self, config: &McpServerConfig) -> Result<(), McpError> {
        if self.contains(&config.id) {
            return Err(McpError::Duplicate(config.id.clone()));
        }
        let server = Server::start(config, &self.options).await?;
        self.servers.push(server);
        Ok(())
    }

    /// Takes a server connected elsewhere (by [`McpStartup`](super::McpStartup)) into the set. A
    /// server whose id is taken is stopped and returned as a warning.
    pub(super) fn adopt(&mut self, server: Arc<Server>) -> Result<(), McpWarning> {
        if self.contains(&server.id) {
            let id = server.id.clone();
            tokio::spawn(async move { server.stop().await });
            return Err(warning(McpError::Duplicate(id.clone()), &id));
        }
        self.servers.push(server);
        Ok(())
    }

    /// Whether a server with this id is in the set (connected or gone).
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        self.servers.iter().any(|s| s.id == id)
    }

    /// The ids of the servers, in connection order.
    #[must_use]
    pub fn server_ids(&self) -> Vec<&str> {
        self.servers.iter().map(|s| s.id.as_str()).collect()
    }

    /// Whether at least one server is still connected or being reconnected.
    #[must_use]
    pub fn is_alive(&self) -> bool {
        self.servers.iter().any(|s| s.is_alive())
    }

    /// Whether the server `id` is connected or being reconnected.
    #[must_use]
    pub fn is_server_alive(&self, id: &str) -> bool {
        self.servers.iter().any(|s| s.id == id && s.is_alive())
    }

    /// How many reconnection attempts the server `id` has made so far (`None` for an unknown
    /// id).
    #[must_use]
    pub fn reconnect_attempts(&self, id: &str) -> Option<u32> {
        self.server(id).map(|s| s.attempts.load(Ordering::SeqCst))
    }

    fn server(&self, id: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|s| s.id == id)
    }

    /// The tools of every server that is connected or being reconnected, from its last
    /// listing, with unique names.
    #[must_use]
    pub fn mcp_tools(&self) -> Vec<Arc<McpTool>> {
        let mut taken = HashSet::new();
        let mut out = Vec::new();
        for server in &self.servers {
            if !server.is_alive() {
                continue;
            }
            let tools = server
                .shared
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            for def in tools {
                let name = unique_name(mcp_tool_name(&server.id, &def.name), &mut taken);
                out.push(Arc::new(McpTool {
                    name,
                    original_name: def.name.to_string(),
                    server_id: server.id.clone(),
                    description: def.description.as_deref().unwrap_or_default().to_owned(),
                    parameters: Value::Object((*def.input_schema).clone()),
                    server: Arc::downgrade(server),
                }));
            }
        }
        out
    }

    /// [`McpClients::mcp_tools`] as agent tools, ready for `ToolCollection::add_shared`.
    #[must_use]
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.mcp_tools()
            .into_iter()
            .map(|t| t as Arc<dyn Tool>)
            .collect()
    }

    /// Lists the tools of every connected server again. Servers that fail are returned as
    /// warnings (and keep their previous listing if they are still connected).
    pub async fn refresh_tools(&self) -> Vec<McpWarning> {
        let listings = self
            .servers
            .iter()
            .filter_map(|s| s.current())
            .map(|c| async move { (c.id.clone(), c.list_tools().await) });
        futures::future::join_all(listings)
            .await
            .into_iter()
            .filter_map(|(id, r)| r.err().map(|e| warning(e, &id)))
            .collect()
    }

    /// Whether a server sent `notifications/tools/list_changed` since its tools were last
    /// listed.
    #[must_use]
    pub fn tools_changed(&self) -> bool {
        self.servers
            .iter()
            .any(|s| s.shared.list_changed.load(Ordering::SeqCst))
    }

    /// Waits until a server sends `notifications/tools/list_changed` (returns at once if one
    /// already did since the last listing).
    pub async fn wait_tools_changed(&self) {
        loop {
            let waits: Vec<_> = self
                .servers
                .iter()
                .map(|s| s.shared.notify.notified())
                .collect();
            let mut waits: Vec<_> = waits.into_iter().map(Box::pin).collect();
            for w in &mut waits {
                w.as_mut().enable();
            }
            if self.tools_changed() || self.servers.is_empty() {
                return;
            }
            futures::future::select_all(waits).await;
        }
    }

    /// Waits until the server `id` is gone for good: disconnected, or its connection went away
    /// and reconnection gave up (or is disabled). Returns at once for an unknown id.
    pub async fn wait_server_closed(&self, id: &str) {
        if let Some(server) = self.server(id) {
            server.gone().await;
        }
    }

    /// Waits until the current connection of the server `id` is lost (its process exited, its
    /// stream closed, or it was disconnected); returns at once when it is not connected right
    /// now, or for an unknown id. A reconnection, if the policy allows one, follows.
    pub async fn wait_connection_lost(&self, id: &str) {
        let connection = match self.server(id) {
            Some(server) => match &*server.state.borrow() {
                State::Connected(c) => c.clone(),
                State::Reconnecting | State::Gone => return,
            },
            None => return,
        };
        connection.closed.cancelled().await;
    }

    /// Waits until the server `id` is connected (`true`; after a reconnection, its tools are
    /// listed again) or gone for good (`false`, also for an unknown id).
    pub async fn wait_server_ready(&self, id: &str) -> bool {
        match self.server(id) {
            Some(server) => server.ready().await,
            None => false,
        }
    }

    /// Disconnects the server `id`: stops reconnecting it, closes the session, then stops its
    /// process group (the process gets its standard input closed, then SIGTERM, then SIGKILL).
    ///
    /// # Errors
    ///
    /// [`McpError::UnknownServer`].
    pub async fn disconnect(&mut self, id: &str) -> Result<(), McpError> {
        let Some(index) = self.servers.iter().position(|s| s.id == id) else {
            return Err(McpError::UnknownServer(id.to_owned()));
        };
        let server = self.servers.remove(index);
        server.stop().await;
        Ok(())
    }

    /// Disconnects every server, in connection order.
    pub async fn disconnect_all(&mut self) {
        for server in std::mem::take(&mut self.servers) {
            server.stop().await;
        }
    }
}
