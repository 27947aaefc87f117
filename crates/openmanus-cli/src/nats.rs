//! The connection to NATS of `serve`, `worker` and `submit`, as `[nats]` says.

use std::time::Duration;

use agent_config::NatsSettings;
use agent_worker::{Names, Nats, NatsOptions, QueueSettings};
use anyhow::{Context, Result};

/// Connects as `[nats]` says (creating the streams and buckets that are missing).
///
/// # Errors
///
/// The server cannot be reached or JetStream is not enabled on it.
pub async fn connect(settings: &NatsSettings, name: &str) -> Result<Nats> {
    let mut options = NatsOptions::new(settings.url.clone());
    options.creds_file.clone_from(&settings.creds_file);
    options.token = std::env::var(&settings.token_env)
        .ok()
        .filter(|t| !t.trim().is_empty());
    options.name = name.to_owned();
    let queue = QueueSettings {
        ack_wait: Duration::from_secs(settings.ack_wait_secs.max(1)),
        max_deliver: settings.max_deliver,
        ..QueueSettings::default()
    };
    Nats::connect(&options, Names::new(&settings.prefix), &queue)
        .await
        .with_context(|| format!("cannot use NATS at {}", settings.url))
}
