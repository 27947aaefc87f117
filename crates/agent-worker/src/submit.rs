//! [`Submitter`]: publishes tasks, follows their events and waits for their results.

use async_nats::jetstream::consumer::{self, DeliverPolicy};
use async_nats::jetstream::kv::Operation;
use async_nats::jetstream::message::PublishMessage;
use futures::StreamExt;

use crate::error::WorkerError;
use crate::nats::Nats;
use agent_protocol::{TaskEvent, TaskMessage, TaskResult};

/// What publishing a task came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Submitted {
    /// The task's sequence number in the task stream.
    pub sequence: u64,
    /// The id was submitted already within the duplicate window: this copy was dropped.
    pub duplicate: bool,
}

/// Submits tasks to the workers and reads what they report.
#[derive(Debug, Clone)]
pub struct Submitter {
    nats: Nats,
}

impl Submitter {
    /// A submitter on `nats`.
    #[must_use]
    pub fn new(nats: Nats) -> Self {
        Self { nats }
    }

    /// The connection.
    #[must_use]
    pub fn nats(&self) -> &Nats {
        &self.nats
    }

    /// Publishes `task` on the work queue (its id is the de-duplication key) and waits for
    /// JetStream to store it.
    ///
    /// # Errors
    ///
    /// The task is invalid, or JetStream did not store it.
    pub async fn submit(&self, task: &TaskMessage) -> Result<Submitted, WorkerError> {
        crate::task::target_of(task)?;
        // The task's trace: this span (a child of the caller's, if any) goes in the message's
        // headers (W3C trace context), and the worker's run continues it.
        let span = agent_telemetry::genai_span!(
            "submit",
            otel.name = %format_args!("submit {}", task.agent),
            otel.kind = "producer",
            openmanus.task.id = %task.id,
        );
        let message = agent_telemetry::context::headers(&span)
            .into_iter()
            .fold(PublishMessage::build(), |message, (name, value)| {
                message.header(name, value.as_str())
            })
            .message_id(&task.id)
            .payload(task.to_bytes()?);
        let ack = self
            .nats
            .jetstream()
            .send_publish(self.nats.names().task_subject(), message)
            .await
            .map_err(|error| WorkerError::nats("publish", error))?
            .await
            .map_err(|error| WorkerError::nats("publish acknowledgement", error))?;
        Ok(Submitted {
            sequence: ack.sequence,
            duplicate: ack.duplicate,
        })
    }

    /// Asks the worker running the task to cancel its run (it then stores a `cancelled`
    /// result). Nothing happens when no worker runs it at the moment.
    ///
    /// # Errors
    ///
    /// The request could not be published.
    pub async fn cancel(&self, task_id: &str) -> Result<(), WorkerError> {
        let client = self.nats.client();
        client
            .publish(
                self.nats.names().cancel_subject(task_id),
                bytes::Bytes::new(),
            )
            .await
            .map_err(|error| WorkerError::nats("cancel", error))?;
        client
            .flush()
            .await
            .map_err(|error| WorkerError::nats("cancel", error))
    }

    /// The task's result, if one is stored.
    ///
    /// # Errors
    ///
    /// The bucket cannot be read, or holds something that is not a result.
    pub async fn result(&self, task_id: &str) -> Result<Option<TaskResult>, WorkerError> {
        let value = self
            .nats
            .results()
            .get(task_id)
            .await
            .map_err(|error| WorkerError::nats("results bucket", error))?;
        value
            .map(|bytes| TaskResult::from_bytes(&bytes))
            .transpose()
            .map_err(WorkerError::from)
    }

    /// Waits until the task's result is stored and returns it (at once when it is already).
    ///
    /// # Errors
    ///
    /// The bucket cannot be watched, or the watch ended.
    pub async fn wait_result(&self, task_id: &str) -> Result<TaskResult, WorkerError> {
        let mut watch = self
            .nats
            .results()
            .watch_with_history(task_id)
            .await
            .map_err(|error| WorkerError::nats("results watch", error))?;
        while let Some(entry) = watch.next().await {
            let entry = entry.map_err(|error| WorkerError::nats("results watch", error))?;
            if entry.operation == Operation::Put {
                return Ok(TaskResult::from_bytes(&entry.value)?);
            }
        }
        Err(WorkerError::nats("results watch", "the watch ended"))
    }

    /// Every event of the task, from its first, then live as the workers publish them (of
    /// every attempt: see [`TaskEvent::attempt`]). The stream never ends by itself.
    ///
    /// # Errors
    ///
    /// The event stream cannot be read.
    pub async fn events(&self, task_id: &str) -> Result<EventStream, WorkerError> {
        let names = self.nats.names();
        let stream = self
            .nats
            .jetstream()
            .get_stream(names.event_stream())
            .await
            .map_err(|error| WorkerError::setup(names.event_stream(), error))?;
        let consumer = stream
            .create_consumer(consumer::pull::OrderedConfig {
                filter_subject: names.event_subject(task_id),
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .map_err(|error| WorkerError::setup("event consumer", error))?;
        let messages = consumer
            .messages()
            .await
            .map_err(|error| WorkerError::nats("events", error))?;
        Ok(EventStream { messages })
    }
}

/// A task's events, in the order they were published.
pub struct EventStream {
    messages: consumer::pull::Ordered,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

impl EventStream {
    /// The next event; `None` when the connection is gone for good.
    pub async fn next(&mut self) -> Option<Result<TaskEvent, WorkerError>> {
        let message = self.messages.next().await?;
        Some(
            message
                .map_err(|error| WorkerError::nats("events", error))
                .and_then(|message| {
                    serde_json::from_slice(&message.payload).map_err(|source| WorkerError::Json {
                        what: "event",
                        source,
                    })
                }),
        )
    }
}

/// The submitter is the web server's queue of tasks (`[server] dispatch = "nats"`).
#[async_trait::async_trait]
impl agent_protocol::TaskQueue for Submitter {
    async fn submit(&self, task: &TaskMessage) -> Result<(), agent_protocol::QueueError> {
        Submitter::submit(self, task).await?;
        Ok(())
    }

    async fn cancel(&self, task_id: &str) -> Result<(), agent_protocol::QueueError> {
        Ok(Submitter::cancel(self, task_id).await?)
    }

    async fn events(
        &self,
        task_id: &str,
    ) -> Result<agent_protocol::TaskEvents, agent_protocol::QueueError> {
        let stream = Submitter::events(self, task_id).await?;
        let events = futures::stream::unfold(stream, |mut stream| async move {
            let next = stream.next().await?;
            Some((next.map_err(agent_protocol::QueueError::from), stream))
        });
        Ok(Box::pin(events))
    }

    async fn wait_result(&self, task_id: &str) -> Result<TaskResult, agent_protocol::QueueError> {
        Ok(Submitter::wait_result(self, task_id).await?)
    }
}
