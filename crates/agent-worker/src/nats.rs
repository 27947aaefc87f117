//! The connection to NATS and the JetStream layout the workers share: the task stream (a work
//! queue) and its durable consumer, the event stream, and the result and session buckets.

use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, kv, stream};
use tracing::{info, warn};

use crate::error::WorkerError;

/// How to reach the NATS server.
#[derive(Debug, Clone)]
pub struct NatsOptions {
    /// The server URL(s), comma-separated: `nats://127.0.0.1:4222`.
    pub url: String,
    /// A `.creds` file (JWT and NKey seed) for servers that require one.
    pub creds_file: Option<PathBuf>,
    /// A token for servers configured with `authorization { token }`.
    pub token: Option<String>,
    /// The connection's name, as the server's monitoring shows it.
    pub name: String,
}

impl NatsOptions {
    /// Options for `url`, no credentials.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            creds_file: None,
            token: None,
            name: "openmanus".into(),
        }
    }
}

/// The names of everything the workers use, from one prefix (default `openmanus`): tasks on
/// `<prefix>.tasks` in the stream `<PREFIX>_TASKS` (work-queue retention) read by the durable
/// consumer `<prefix>-workers`; events on `<prefix>.events.<task id>` kept in `<PREFIX>_EVENTS`;
/// results in the bucket `<prefix>_results`, conversations in `<prefix>_sessions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    prefix: String,
}

impl Default for Names {
    fn default() -> Self {
        Self::new("openmanus")
    }
}

impl Names {
    /// The names under `prefix` (letters, digits, `-`, `_`; anything else becomes `_`).
    #[must_use]
    pub fn new(prefix: &str) -> Self {
        let prefix: String = prefix
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Self {
            prefix: if prefix.is_empty() {
                "openmanus".into()
            } else {
                prefix
            },
        }
    }

    /// The stream of tasks.
    #[must_use]
    pub fn task_stream(&self) -> String {
        format!("{}_TASKS", self.prefix.to_ascii_uppercase())
    }

    /// The subject tasks are published on.
    #[must_use]
    pub fn task_subject(&self) -> String {
        format!("{}.tasks", self.prefix)
    }

    /// The workers' durable consumer.
    #[must_use]
    pub fn consumer(&self) -> String {
        format!("{}-workers", self.prefix)
    }

    /// The stream of events.
    #[must_use]
    pub fn event_stream(&self) -> String {
        format!("{}_EVENTS", self.prefix.to_ascii_uppercase())
    }

    /// The subject of one task's events.
    #[must_use]
    pub fn event_subject(&self, task_id: &str) -> String {
        format!("{}.events.{task_id}", self.prefix)
    }

    /// The subject that cancels a task's run in progress (core NATS, not stored).
    #[must_use]
    pub fn cancel_subject(&self, task_id: &str) -> String {
        format!("{}.cancel.{task_id}", self.prefix)
    }

    /// The bucket of results, keyed by task id.
    #[must_use]
    pub fn results_bucket(&self) -> String {
        format!("{}_results", self.prefix)
    }

    /// The bucket of conversations, keyed by session id.
    #[must_use]
    pub fn sessions_bucket(&self) -> String {
        format!("{}_sessions", self.prefix)
    }
}

/// How the shared queue behaves; the first process to create it fixes these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSettings {
    /// How long a delivered task may go without an acknowledgement (or an in-progress one)
    /// before it is given to another worker. Default 30 s.
    pub ack_wait: Duration,
    /// How many times a task is delivered at most. Default 5.
    pub max_deliver: i64,
    /// How long events are kept. Default one day.
    pub events_max_age: Duration,
    /// How long a repeated task id is recognised as a duplicate when submitted. Default 2 min.
    pub duplicate_window: Duration,
}

impl Default for QueueSettings {
    fn default() -> Self {
        Self {
            ack_wait: Duration::from_secs(30),
            max_deliver: 5,
            events_max_age: Duration::from_secs(24 * 3600),
            duplicate_window: Duration::from_secs(120),
        }
    }
}

/// A connection to NATS with the workers' JetStream layout in place; cheap to clone.
#[derive(Debug, Clone)]
pub struct Nats {
    inner: std::sync::Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: async_nats::Client,
    jetstream: jetstream::Context,
    names: Names,
    results: kv::Store,
    sessions: kv::Store,
}

impl Nats {
    /// Connects and creates (or opens) the streams, the consumer and the buckets. The client
    /// reconnects by itself when the server goes away, for as long as the process lives.
    ///
    /// # Errors
    ///
    /// The server cannot be reached, the credentials cannot be read, JetStream is not enabled.
    pub async fn connect(
        options: &NatsOptions,
        names: Names,
        settings: &QueueSettings,
    ) -> Result<Self, WorkerError> {
        let connect_error = |message: String| WorkerError::Connect {
            url: options.url.clone(),
            message,
        };
        let mut connect = match &options.creds_file {
            Some(path) => async_nats::ConnectOptions::with_credentials_file(path)
                .await
                .map_err(|error| connect_error(format!("{}: {error}", path.display())))?,
            None => async_nats::ConnectOptions::new(),
        };
        if let Some(token) = &options.token {
            connect = connect.token(token.clone());
        }
        let client = connect
            .name(&options.name)
            .max_reconnects(None)
            .event_callback(|event| async move {
                info!(%event, "NATS connection");
            })
            .connect(options.url.as_str())
            .await
            .map_err(|error| connect_error(error.to_string()))?;
        let jetstream = jetstream::new(client.clone());
        let (results, sessions) = ensure_layout(&jetstream, &names, settings).await?;
        Ok(Self {
            inner: std::sync::Arc::new(Inner {
                client,
                jetstream,
                names,
                results,
                sessions,
            }),
        })
    }

    /// The core client.
    #[must_use]
    pub fn client(&self) -> &async_nats::Client {
        &self.inner.client
    }

    /// The JetStream context.
    #[must_use]
    pub fn jetstream(&self) -> &jetstream::Context {
        &self.inner.jetstream
    }

    /// The names.
    #[must_use]
    pub fn names(&self) -> &Names {
        &self.inner.names
    }

    /// The results bucket.
    #[must_use]
    pub fn results(&self) -> &kv::Store {
        &self.inner.results
    }

    /// The sessions bucket.
    #[must_use]
    pub fn sessions(&self) -> &kv::Store {
        &self.inner.sessions
    }

    /// The workers' consumer on the task stream.
    ///
    /// # Errors
    ///
    /// JetStream does not answer.
    pub async fn task_consumer(&self) -> Result<consumer::PullConsumer, WorkerError> {
        let names = &self.inner.names;
        let stream = self
            .inner
            .jetstream
            .get_stream(names.task_stream())
            .await
            .map_err(|error| WorkerError::setup(names.task_stream(), error))?;
        stream
            .get_consumer(&names.consumer())
            .await
            .map_err(|error| WorkerError::setup(names.consumer(), error))
    }
}

/// Creates what is missing: the task stream and its consumer, the event stream, the buckets.
async fn ensure_layout(
    jetstream: &jetstream::Context,
    names: &Names,
    settings: &QueueSettings,
) -> Result<(kv::Store, kv::Store), WorkerError> {
    let tasks = jetstream
        .get_or_create_stream(stream::Config {
            name: names.task_stream(),
            subjects: vec![names.task_subject()],
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            duplicate_window: settings.duplicate_window,
            ..Default::default()
        })
        .await
        .map_err(|error| WorkerError::setup(names.task_stream(), error))?;
    let wanted = consumer::pull::Config {
        durable_name: Some(names.consumer()),
        ack_policy: consumer::AckPolicy::Explicit,
        ack_wait: settings.ack_wait,
        max_deliver: settings.max_deliver,
        max_ack_pending: 10_000,
        ..Default::default()
    };
    if let Err(error) = tasks.create_consumer(wanted).await {
        // A consumer made earlier with other settings is kept (the first process fixes them).
        tasks
            .get_consumer::<consumer::pull::Config>(&names.consumer())
            .await
            .map_err(|_| WorkerError::setup(names.consumer(), &error))?;
        warn!(%error, consumer = %names.consumer(), "the existing consumer keeps its settings");
    }
    jetstream
        .get_or_create_stream(stream::Config {
            name: names.event_stream(),
            subjects: vec![format!("{}.events.>", names_prefix(names))],
            retention: stream::RetentionPolicy::Limits,
            storage: stream::StorageType::File,
            max_age: settings.events_max_age,
            ..Default::default()
        })
        .await
        .map_err(|error| WorkerError::setup(names.event_stream(), error))?;
    let results = bucket(jetstream, names.results_bucket()).await?;
    let sessions = bucket(jetstream, names.sessions_bucket()).await?;
    Ok((results, sessions))
}

fn names_prefix(names: &Names) -> &str {
    &names.prefix
}

/// Opens the bucket `name`, creating its stream first if needed. The stream is made here with
/// the key-value conventions (`KV_<bucket>`, subjects `$KV.<bucket>.>`, one message per key,
/// rollups, direct gets) rather than with `create_key_value`, whose account query the 2.9
/// servers of Debian answer in a shape this client does not parse.
async fn bucket(jetstream: &jetstream::Context, name: String) -> Result<kv::Store, WorkerError> {
    jetstream
        .get_or_create_stream(stream::Config {
            name: format!("KV_{name}"),
            subjects: vec![format!("$KV.{name}.>")],
            max_messages_per_subject: 1,
            storage: stream::StorageType::File,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: true,
            discard: stream::DiscardPolicy::New,
            num_replicas: 1,
            ..Default::default()
        })
        .await
        .map_err(|error| WorkerError::setup(&name, error))?;
    jetstream
        .get_key_value(&name)
        .await
        .map_err(|error| WorkerError::setup(name, error))
}
