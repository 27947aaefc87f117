//! [`McpStartup`]: servers connected in the background while the agent starts and runs.
//!
//! OpenManus connects every server before the agent does anything, so one server that hangs
//! holds the whole start for its connect timeout. Here each server is connected by a task of its
//! own from the moment the agent is built; the first step waits for them at most
//! [`McpClientOptions::startup_wait`], counted from the start, and goes on with the servers that
//! are ready. A server still connecting then joins at a later step, when it is ready (within
//! its connect timeout), and the model is told its tools are new.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_config::McpServerConfig;
use tokio::task::{Id, JoinError, JoinSet};

use super::options::{McpClientOptions, McpWarning, warning};
use super::registry::McpClients;
use super::supervisor::Server;
use crate::error::McpError;

/// What one connection task ends with: the server, or why it failed.
type Attempt = Result<Arc<Server>, McpError>;

/// Servers being connected in the background. Dropping it stops the attempts still under way
/// (a stdio server's process group is killed with them).
pub struct McpStartup {
    tasks: JoinSet<Attempt>,
    /// The servers still connecting, by task, in configuration order.
    connecting: Vec<(Id, String)>,
    began: Instant,
}

impl std::fmt::Debug for McpStartup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpStartup")
            .field("connecting", &self.connecting)
            .field("began", &self.began)
            .finish()
    }
}

impl McpStartup {
    /// Starts connecting every server of `configs`, each in a task of its own, with `options`'
    /// timeouts. Must be called within a Tokio runtime.
    #[must_use]
    pub fn begin(configs: &[McpServerConfig], options: &McpClientOptions) -> Self {
        let mut tasks = JoinSet::new();
        let mut connecting = Vec::with_capacity(configs.len());
        for config in configs {
            let config = config.clone();
            let options = options.clone();
            let id = config.id.clone();
            let task = tasks.spawn(async move { Server::start(&config, &options).await });
            connecting.push((task.id(), id));
        }
        Self {
            tasks,
            connecting,
            began: Instant::now(),
        }
    }

    /// The ids of the servers still connecting, in configuration order.
    #[must_use]
    pub fn connecting(&self) -> Vec<&str> {
        self.connecting.iter().map(|(_, id)| id.as_str()).collect()
    }

    /// Whether every attempt has ended.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.tasks.is_empty()
    }

    /// How long ago the attempts began.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.began.elapsed()
    }

    /// Waits until every attempt has ended or `limit` has passed since they began, whichever
    /// comes first, and moves the servers that connected into `clients`. Returns the servers
    /// that failed. Cancel-safe: nothing is lost when the wait is dropped.
    pub async fn settle(&mut self, clients: &mut McpClients, limit: Duration) -> Vec<McpWarning> {
        let deadline = tokio::time::Instant::from_std(self.began) + limit;
        let mut warnings = Vec::new();
        while let Ok(Some(joined)) =
            tokio::time::timeout_at(deadline, self.tasks.join_next_with_id()).await
        {
            warnings.extend(self.adopt(clients, joined));
        }
        warnings
    }

    /// Moves the servers that have connected since the last look into `clients`, without
    /// waiting. Returns the servers that failed.
    pub fn collect_ready(&mut self, clients: &mut McpClients) -> Vec<McpWarning> {
        let mut warnings = Vec::new();
        while let Some(joined) = self.tasks.try_join_next_with_id() {
            warnings.extend(self.adopt(clients, joined));
        }
        warnings
    }

    /// Stops the attempts still under way and waits until they are gone (their processes
    /// killed).
    pub async fn cancel(mut self) {
        self.tasks.shutdown().await;
        self.connecting.clear();
    }

    fn adopt(
        &mut self,
        clients: &mut McpClients,
        joined: Result<(Id, Attempt), JoinError>,
    ) -> Option<McpWarning> {
        let task = match &joined {
            Ok((task, _)) => *task,
            Err(error) => error.id(),
        };
        let position = self.connecting.iter().position(|(t, _)| *t == task)?;
        let (_, id) = self.connecting.remove(position);
        match joined {
            Ok((_, Ok(server))) => clients.adopt(server).err(),
            Ok((_, Err(error))) => Some(warning(error, &id)),
            Err(error) => Some(warning(
                McpError::Initialize {
                    server: id.clone(),
                    message: format!("the connection task failed: {error}"),
                },
                &id,
            )),
        }
    }
}
