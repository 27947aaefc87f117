//! # agent-worker — openmanus past one machine, on NATS JetStream
//!
//! Agents run on as many machines as there are workers. A task ([`TaskMessage`]: an id, an
//! agent kind, the task text, options) is published on a JetStream work-queue stream; every
//! [`Worker`] pulls from one durable consumer, runs each task in an
//! [`agent_session::Session`] with its own workspace, publishes the session's events on the
//! task's subject ([`TaskEvent`], kept in a stream so a late reader replays them), stores the
//! [`TaskResult`] in a key-value bucket under the task id — only if none is there yet, so a
//! redelivered task never has two results — and acknowledges the task only then. While a task
//! runs its worker sends in-progress acknowledgements, so a long task is not redelivered while
//! its worker lives; a worker that dies stops sending them and the task goes to another one.
//! [`Submitter`] publishes tasks, follows their events and waits for their results.
//!
//! ```no_run
//! # async fn demo(factory: agents::AgentFactory) -> Result<(), agent_worker::WorkerError> {
//! use agent_worker::{Names, Nats, NatsOptions, QueueSettings, Submitter, TaskMessage, Worker, WorkerOptions};
//! use tokio_util::sync::CancellationToken;
//!
//! let nats = Nats::connect(&NatsOptions::new("nats://127.0.0.1:4222"), Names::default(), &QueueSettings::default()).await?;
//! let stop = CancellationToken::new();
//! let worker = Worker::new(nats.clone(), factory, WorkerOptions::new("/srv/openmanus/tasks"));
//! tokio::spawn({ let stop = stop.clone(); async move { worker.run(stop).await } });
//!
//! let submitter = Submitter::new(nats);
//! let task = TaskMessage::new("swe", "Write hello.txt");
//! submitter.submit(&task).await?;
//! let result = submitter.wait_result(&task.id).await?;
//! println!("{:?}: {:?}", result.ending, result.answer);
//! # Ok(()) }
//! ```

mod error;
mod nats;
mod submit;
mod task;
mod worker;

pub use error::WorkerError;
pub use nats::{Names, Nats, NatsOptions, QueueSettings};
pub use submit::{EventStream, Submitted, Submitter};
// The messages are agent-protocol's (the web server speaks them without the workers); they
// are re-exported here, where they always were.
pub use agent_protocol::{TaskEvent, TaskMessage, TaskOptions, TaskResult, TokenUsage};
pub use task::target_of;
pub use worker::{Worker, WorkerOptions, WorkerSummary};

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
