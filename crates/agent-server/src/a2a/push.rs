//! Push notifications of A2A tasks: the settings a client gives (the four
//! `pushNotificationConfig` methods, or a setting in `message/send`'s configuration), kept with
//! the task and in the store, and a sender per task that posts each change to every setting's
//! URL, in order, until the task ends.
//!
//! Posting never holds the run back: each notification has [`NOTIFY_TIMEOUT`], and one that
//! fails is logged and not sent again. The URL is the client's: the server posts to whatever
//! http(s) URL an allowed client names (with a token, only a client holding it).

use std::sync::Arc;
use std::time::Duration;

use agent_a2a::push::notify;
use agent_a2a::rpc::{A2aErrors, RpcError};
use agent_a2a::{Dialect, PushConfig, PushOp, StreamEvent};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tracing::{debug, warn};

use super::{A2a, Found, TaskEntry, Until, is_final};

/// The longest one notification may take.
pub const NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);

impl A2a {
    /// Answers a push notification request.
    pub(super) async fn push(
        &self,
        dialect: Dialect,
        op: PushOp,
        params: &Value,
    ) -> Result<Value, RpcError> {
        if op == PushOp::Set {
            let (task_id, config) = dialect.decode_push_set(params)?;
            match self.find(&task_id).await? {
                Found::Here(entry) => self.add_push(&entry, config.clone()),
                // Ended: kept, though there is nothing more to tell.
                Found::Stored(_) => {
                    let mut configs = self.configs_of(&task_id).await?;
                    match configs.iter_mut().find(|c| c.id == config.id) {
                        Some(slot) => *slot = config.clone(),
                        None => configs.push(config.clone()),
                    }
                    self.store_push(&task_id, &configs);
                }
            }
            return Ok(dialect.encode_push(&task_id, &config));
        }
        let query = dialect.decode_push_query(params)?;
        let mut configs = self.configs_of(&query.task_id).await?;
        match op {
            PushOp::List => Ok(dialect.encode_push_list(&query.task_id, &configs)),
            PushOp::Get => {
                let found = match &query.config_id {
                    Some(id) => configs.iter().find(|c| c.id == *id),
                    None => configs
                        .iter()
                        .find(|c| c.id == query.task_id)
                        .or(configs.first()),
                };
                let config = found.ok_or_else(|| not_set(&query.task_id, &query.config_id))?;
                Ok(dialect.encode_push(&query.task_id, config))
            }
            PushOp::Delete | PushOp::Set => {
                let id = query.config_id.clone().unwrap_or(query.task_id.clone());
                let before = configs.len();
                configs.retain(|c| c.id != id);
                if configs.len() == before {
                    return Err(not_set(&query.task_id, &Some(id)));
                }
                if let Some(entry) = self.task(&query.task_id) {
                    entry.remove_push(&id);
                }
                self.store_push(&query.task_id, &configs);
                Ok(match dialect {
                    Dialect::Legacy => Value::Null,
                    Dialect::V1 => json!({}),
                })
            }
        }
    }

    /// Adds `config` to a task running here; its first setting starts its sender.
    pub(super) fn add_push(&self, entry: &Arc<TaskEntry>, mut config: PushConfig) {
        if config.id.is_empty() {
            config.id = entry.id();
        }
        entry.set_push(config);
        let stored = entry
            .push_configs()
            .iter()
            .map(PushConfig::to_stored)
            .collect();
        self.saver().save_push(&entry.id(), stored);
        if entry.start_pushing() {
            tokio::spawn(deliver(Arc::clone(entry), entry.subscribe()));
        }
    }

    /// The settings of the task `id`: here, or in the store.
    async fn configs_of(&self, id: &str) -> Result<Vec<PushConfig>, RpcError> {
        if let Some(entry) = self.task(id) {
            return Ok(entry.push_configs());
        }
        let record = self
            .hub
            .store()
            .task(id)
            .await
            .map_err(|error| RpcError::internal(error.to_string()))?
            .ok_or_else(|| RpcError::task_not_found(id))?;
        Ok(record
            .push
            .iter()
            .filter_map(PushConfig::from_stored)
            .collect())
    }

    /// Stores the settings of the task `id` (after the task itself).
    fn store_push(&self, id: &str, configs: &[PushConfig]) {
        let stored = configs.iter().map(PushConfig::to_stored).collect();
        self.saver().save_push(id, stored);
    }
}

fn not_set(task: &str, config: &Option<String>) -> RpcError {
    let which = config
        .as_deref()
        .map(|id| format!(" {id}"))
        .unwrap_or_default();
    RpcError::invalid_params(format!(
        "task {task} has no push notification setting{which}"
    ))
}

/// Posts every change of `entry` to its settings' URLs, in order, until it ends.
async fn deliver(entry: Arc<TaskEntry>, mut events: broadcast::Receiver<StreamEvent>) {
    let http = match agent_llm::http::shared_client() {
        Ok(http) => http,
        Err(error) => {
            warn!(%error, "no HTTP client: push notifications are not sent");
            return;
        }
    };
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                warn!(task = %entry.id(), missed, "push notifications fell behind");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let task = entry.snapshot();
        let id = task.id.as_str();
        let http = &http;
        let sends = entry.push_configs().into_iter().map(|config| {
            let body = config.body(&event, &task);
            async move {
                match notify(http, &config, &body, NOTIFY_TIMEOUT).await {
                    Ok(()) => debug!(task = %id, url = %config.url, "push notification sent"),
                    Err(error) => {
                        warn!(task = %id, url = %config.url, %error, "push notification failed");
                    }
                }
            }
        });
        futures::future::join_all(sends).await;
        if is_final(&event, Until::End) {
            return;
        }
    }
}
