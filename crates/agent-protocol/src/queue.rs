//! [`TaskQueue`]: where tasks go to be run elsewhere, and where their events and results come
//! back from. `agent-worker`'s `Submitter` is one, on NATS JetStream; the web server dispatches
//! sessions to any.

use async_trait::async_trait;
use futures::stream::BoxStream;

use crate::task::{TaskEvent, TaskMessage, TaskResult};

/// Why the queue could not do what it was asked (its own error, in words).
pub type QueueError = Box<dyn std::error::Error + Send + Sync>;

/// A task's events, in the order they were published, from its first (of every attempt: see
/// [`TaskEvent::attempt`]); the stream does not end by itself while the queue is reachable.
pub type TaskEvents = BoxStream<'static, Result<TaskEvent, QueueError>>;

/// A queue of tasks run by workers.
#[async_trait]
pub trait TaskQueue: Send + Sync {
    /// Publishes `task` (its id is the de-duplication key) once it is stored by the queue.
    async fn submit(&self, task: &TaskMessage) -> Result<(), QueueError>;

    /// Asks the worker running the task to cancel it (it then stores a `cancelled` result);
    /// nothing happens when none runs it.
    async fn cancel(&self, task_id: &str) -> Result<(), QueueError>;

    /// Every event of the task, from its first, then live.
    async fn events(&self, task_id: &str) -> Result<TaskEvents, QueueError>;

    /// Waits until the task's result is stored and returns it (at once when it is already).
    async fn wait_result(&self, task_id: &str) -> Result<TaskResult, QueueError>;
}
