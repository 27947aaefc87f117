//! [`Worker`]: pulls tasks from the work queue, runs each in a [`Session`] with its own
//! workspace, publishes its events, stores its result once, and only then acknowledges it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_core::Message;
use agent_session::{Session, Target};
use agent_store::{NewSession, Store, StoredEvent};
use agent_tools::ChannelInput;
use agents::AgentFactory;
use async_nats::jetstream::AckKind;
use async_nats::jetstream::kv::CreateErrorKind;
use futures::StreamExt;
use tokio::sync::{Semaphore, broadcast};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::error::WorkerError;
use crate::nats::Nats;
use agent_protocol::{TaskMessage, TaskResult};

/// How many stored events a forwarder replays at once after it fell behind.
const REPLAY_PAGE: usize = 1000;

/// How a worker behaves.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The worker's name, in its events and results. Default: `<host>-<pid>`.
    pub name: String,
    /// Tasks run at once. Default 2.
    pub concurrency: usize,
    /// Each task runs in its own directory here, named after its session.
    pub workspaces: PathBuf,
    /// How often a running task tells the server it is alive (an in-progress
    /// acknowledgement). Keep it well under the queue's `ack_wait`. Default 10 s.
    pub progress_interval: Duration,
    /// How long one pull request waits for a task. Default 2 s (also the longest a stopping
    /// worker waits for a pull it has sent to come back).
    pub pull_expiry: Duration,
}

impl WorkerOptions {
    /// Defaults with task workspaces under `workspaces`.
    #[must_use]
    pub fn new(workspaces: impl Into<PathBuf>) -> Self {
        let host = std::fs::read_to_string("/etc/hostname")
            .ok()
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "worker".into());
        Self {
            name: format!("{host}-{}", std::process::id()),
            concurrency: 2,
            workspaces: workspaces.into(),
            progress_interval: Duration::from_secs(10),
            pull_expiry: Duration::from_secs(2),
        }
    }
}

/// What a worker did before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerSummary {
    /// Tasks run to their end, their result stored and acknowledged.
    pub completed: u64,
    /// Tasks whose result was already stored (a redelivery after a worker died between the
    /// result and the acknowledgement): acknowledged without running again.
    pub already_done: u64,
    /// Tasks handed back (negatively acknowledged) because the worker was stopping.
    pub handed_back: u64,
    /// Messages that were not valid tasks, terminated (never delivered again).
    pub rejected: u64,
}

/// What became of one delivered message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Completed,
    AlreadyDone,
    HandedBack,
    Rejected,
    /// The result could not be stored; the task is left to be redelivered.
    Retry,
}

/// A worker: `run` it until its stop token is cancelled.
pub struct Worker {
    nats: Nats,
    factory: AgentFactory,
    options: WorkerOptions,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker taking tasks from `nats`, building agents with `factory` (its workspace is
    /// replaced by each task's).
    #[must_use]
    pub fn new(nats: Nats, factory: AgentFactory, options: WorkerOptions) -> Self {
        Self {
            nats,
            factory,
            options,
        }
    }

    /// Takes tasks until `stop` is cancelled, at most `concurrency` at once. Then it takes no
    /// more, hands back (naks) the tasks it holds — their runs are cancelled and their agents
    /// shut down — and returns.
    ///
    /// # Errors
    ///
    /// The task stream's consumer cannot be found at the start.
    pub async fn run(&self, stop: CancellationToken) -> Result<WorkerSummary, WorkerError> {
        let consumer = self.nats.task_consumer().await?;
        let slots = Arc::new(Semaphore::new(self.options.concurrency.max(1)));
        let mut running: JoinSet<Fate> = JoinSet::new();
        let mut summary = WorkerSummary::default();
        info!(worker = %self.options.name, concurrency = self.options.concurrency, "worker started");
        'pull: loop {
            while let Some(done) = running.try_join_next() {
                count(&mut summary, done);
            }
            let permit = tokio::select! {
                permit = Arc::clone(&slots).acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
                () = stop.cancelled() => break,
            };
            let batch = tokio::select! {
                batch = consumer
                    .batch()
                    .max_messages(1)
                    .expires(self.options.pull_expiry)
                    .messages() => batch,
                () = stop.cancelled() => break,
            };
            let mut batch = match batch {
                Ok(batch) => batch,
                Err(error) => {
                    warn!(%error, "pulling a task failed; trying again");
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                        () = stop.cancelled() => break,
                    }
                }
            };
            let mut permit = Some(permit);
            // Read the pull to its end, even when stopping: a task delivered now is handed back
            // at once instead of waiting out its ack_wait.
            while let Some(message) = batch.next().await {
                let message = match message {
                    Ok(message) => message,
                    Err(error) => {
                        debug!(%error, "pull ended");
                        break;
                    }
                };
                match permit.take() {
                    Some(permit) if !stop.is_cancelled() => {
                        let context = TaskContext {
                            nats: self.nats.clone(),
                            factory: self.factory.clone(),
                            options: self.options.clone(),
                        };
                        let stop = stop.clone();
                        running.spawn(async move {
                            let fate = context.handle(message, stop).await;
                            drop(permit);
                            fate
                        });
                    }
                    _ => {
                        let _ = message.ack_with(AckKind::Nak(None)).await;
                        summary.handed_back += 1;
                    }
                }
            }
            if stop.is_cancelled() {
                break 'pull;
            }
        }
        while let Some(done) = running.join_next().await {
            count(&mut summary, done);
        }
        if let Err(error) = self.nats.client().flush().await {
            warn!(%error, "flushing the NATS connection");
        }
        info!(worker = %self.options.name, ?summary, "worker stopped");
        Ok(summary)
    }
}

fn count(summary: &mut WorkerSummary, done: Result<Fate, tokio::task::JoinError>) {
    match done {
        Ok(Fate::Completed) => summary.completed += 1,
        Ok(Fate::AlreadyDone) => summary.already_done += 1,
        Ok(Fate::HandedBack) => summary.handed_back += 1,
        Ok(Fate::Rejected) => summary.rejected += 1,
        Ok(Fate::Retry) => {}
        Err(error) => warn!(%error, "a task's handler panicked"),
    }
}

/// What one task's handler needs.
struct TaskContext {
    nats: Nats,
    factory: AgentFactory,
    options: WorkerOptions,
}

impl TaskContext {
    async fn handle(
        self,
        message: async_nats::jetstream::Message,
        stop: CancellationToken,
    ) -> Fate {
        let attempt = message
            .info()
            .ok()
            .and_then(|info| u64::try_from(info.delivered).ok())
            .unwrap_or(1);
        let parsed = TaskMessage::from_bytes(&message.payload)
            .map_err(WorkerError::from)
            .and_then(|task| crate::task::target_of(&task).map(|target| (task, target)));
        let (task, target) = match parsed {
            Ok(parsed) => parsed,
            Err(error) => {
                warn!(%error, "not a valid task; it will not be delivered again");
                let _ = message.ack_with(AckKind::Term).await;
                return Fate::Rejected;
            }
        };
        match self.nats.results().get(task.id.as_str()).await {
            Ok(Some(_)) => {
                info!(task = %task.id, attempt, "the task's result is already stored");
                let _ = message.double_ack().await;
                return Fate::AlreadyDone;
            }
            Ok(None) => {}
            Err(error) => {
                warn!(task = %task.id, %error, "the results bucket cannot be read; handing the task back");
                let _ = message.ack_with(AckKind::Nak(None)).await;
                return Fate::Retry;
            }
        }
        info!(task = %task.id, attempt, agent = %task.agent, "running a task");
        let message = Arc::new(message);
        let keepalive = tokio::spawn(keep_alive(
            Arc::clone(&message),
            self.options.progress_interval,
        ));
        let span = task_span(&task, attempt, &message);
        // Never entered: the run hangs under it (`agent_telemetry::scope`).
        let outcome = agent_telemetry::scope::within(
            span,
            self.execute(&task, target, attempt, &stop, &message),
        )
        .await;
        keepalive.abort();
        let result = match outcome {
            Executed::Done(result) => result,
            Executed::HandedBack => return Fate::HandedBack,
        };
        self.store_result(&task, &result, &message).await
    }

    /// Runs the task in a session; publishes its events; keeps its conversation when it
    /// continues a session.
    async fn execute(
        &self,
        task: &TaskMessage,
        target: Target,
        attempt: u64,
        stop: &CancellationToken,
        message: &async_nats::jetstream::Message,
    ) -> Executed {
        let started_at = agent_store::now_ms();
        let session_id = task.session_id().to_owned();
        let failed = |status: String| {
            let mut result = crate::task::failed_result(task, status, &self.options.name, attempt);
            result.started_at = started_at;
            Executed::Done(Box::new(result))
        };
        let store = match Store::open_memory().await {
            Ok(store) => store,
            Err(error) => return failed(format!("error: {error}")),
        };
        let workspace = match self.workspace(task).await {
            Ok(workspace) => workspace,
            Err(error) => return failed(format!("error: the workspace: {error}")),
        };
        if let Err(error) = self.prepare(&store, task, target, &workspace).await {
            return failed(format!("error: {error}"));
        }
        let (input, questions) = ChannelInput::new();
        // No one answers `ask_human` on a worker: the tool gets no answer.
        drop(questions);
        let factory = self
            .factory
            .clone()
            .with_workspace(&workspace)
            .with_human_input(Arc::new(input));
        let mut session = match Session::resume(&factory, &store, &session_id).await {
            Ok(session) => session,
            Err(error) => return failed(format!("error: {error}")),
        };
        let forwarder = session.recorded_events().map(|events| {
            tokio::spawn(forward(
                events,
                store.clone(),
                self.nats.clone(),
                task.clone(),
                attempt,
                self.options.name.clone(),
            ))
        });
        let canceller = session.canceller();
        let cancel_watch = match self
            .nats
            .client()
            .subscribe(self.nats.names().cancel_subject(&task.id))
            .await
        {
            Ok(mut requests) => {
                let canceller = canceller.clone();
                Some(tokio::spawn(async move {
                    while requests.next().await.is_some() {
                        info!("the task's run was cancelled on request");
                        canceller.cancel();
                    }
                }))
            }
            Err(error) => {
                warn!(task = %task.id, %error, "cancel requests cannot be received");
                None
            }
        };
        let report = {
            let run = session.run(&task.task);
            tokio::pin!(run);
            tokio::select! {
                report = &mut run => Some(report),
                () = stop.cancelled() => {
                    // Hand the task back first, so another worker can start it at once.
                    let _ = message.ack_with(AckKind::Nak(None)).await;
                    canceller.cancel();
                    let _ = run.await;
                    None
                }
            }
        };
        if let Some(cancel_watch) = cancel_watch {
            cancel_watch.abort();
        }
        if let Err(error) = session.close().await {
            warn!(task = %task.id, %error, "closing the session");
        }
        let events = match forwarder {
            Some(forwarder) => forwarder.await.unwrap_or_default(),
            None => 0,
        };
        let Some(report) = report else {
            info!(task = %task.id, "handed back");
            return Executed::HandedBack;
        };
        if task.options.session_id.is_some()
            && let Err(error) = self.keep_conversation(&store, &session_id).await
        {
            warn!(task = %task.id, %error, "the conversation could not be kept");
        }
        store.close().await;
        let mut result = match report {
            Ok(report) => crate::task::result_of(task, &report, &self.options.name, attempt),
            Err(error) => crate::task::failed_result(
                task,
                format!("error: {error}"),
                &self.options.name,
                attempt,
            ),
        };
        result.started_at = started_at;
        result.events = events;
        Executed::Done(Box::new(result))
    }

    /// Stores the result under the task id unless one is there already, then acknowledges.
    async fn store_result(
        &self,
        task: &TaskMessage,
        result: &TaskResult,
        message: &async_nats::jetstream::Message,
    ) -> Fate {
        // Events first: the result never overtakes them.
        if let Err(error) = self.nats.client().flush().await {
            warn!(task = %task.id, %error, "flushing the events");
        }
        let bytes = match result.to_bytes() {
            Ok(bytes) => bytes,
            Err(error) => {
                warn!(task = %task.id, %error, "the result cannot be serialised");
                let _ = message.ack_with(AckKind::Term).await;
                return Fate::Rejected;
            }
        };
        match self.nats.results().create(task.id.as_str(), bytes).await {
            Ok(_) => {}
            Err(error) if error.kind() == CreateErrorKind::AlreadyExists => {
                info!(task = %task.id, "another attempt stored the result first; it is kept");
            }
            Err(error) => {
                warn!(task = %task.id, %error, "the result cannot be stored; the task will be redelivered");
                let _ = message.ack_with(AckKind::Nak(None)).await;
                return Fate::Retry;
            }
        }
        if let Err(error) = message.double_ack().await {
            // The result is stored: a redelivery finds it and is acknowledged without a run.
            warn!(task = %task.id, %error, "the acknowledgement was not confirmed");
        }
        info!(task = %task.id, ending = ?result.ending, "task done");
        Fate::Completed
    }

    /// The task's workspace: `<workspaces>/<session id>`. A task of its own starts from an
    /// empty one (a redelivered attempt does not see the files of the one before).
    async fn workspace(&self, task: &TaskMessage) -> std::io::Result<PathBuf> {
        let path = self.options.workspaces.join(task.session_id());
        if task.options.session_id.is_none() && tokio::fs::try_exists(&path).await? {
            tokio::fs::remove_dir_all(&path).await?;
        }
        tokio::fs::create_dir_all(&path).await?;
        Ok(path)
    }

    /// Records the session in the attempt's own store, with the conversation kept in the
    /// sessions bucket when the task continues one.
    async fn prepare(
        &self,
        store: &Store,
        task: &TaskMessage,
        target: Target,
        workspace: &std::path::Path,
    ) -> Result<(), WorkerError> {
        let session_id = task.session_id();
        let new = NewSession::new(target.as_str(), workspace)
            .with_id(session_id)
            .with_settings(task.options.settings.clone());
        store
            .create_session(new)
            .await
            .map_err(|error| WorkerError::nats("session record", error))?;
        if task.options.session_id.is_none() {
            return Ok(());
        }
        let kept = self
            .nats
            .sessions()
            .get(session_id)
            .await
            .map_err(|error| WorkerError::nats("sessions bucket", error))?;
        if let Some(bytes) = kept {
            let messages: Vec<Message> =
                serde_json::from_slice(&bytes).map_err(|source| WorkerError::Json {
                    what: "conversation",
                    source,
                })?;
            store
                .replace_messages(session_id, (1u64..).zip(messages.iter()))
                .await
                .map_err(|error| WorkerError::nats("session record", error))?;
        }
        Ok(())
    }

    /// Writes the session's conversation to the sessions bucket.
    async fn keep_conversation(&self, store: &Store, session_id: &str) -> Result<(), WorkerError> {
        let messages = store
            .messages(session_id)
            .await
            .map_err(|error| WorkerError::nats("session record", error))?;
        let bytes = serde_json::to_vec(&messages).map_err(|source| WorkerError::Json {
            what: "conversation",
            source,
        })?;
        self.nats
            .sessions()
            .put(session_id, bytes.into())
            .await
            .map_err(|error| WorkerError::nats("sessions bucket", error))?;
        Ok(())
    }
}

enum Executed {
    Done(Box<TaskResult>),
    HandedBack,
}

/// Tells the server the task is alive every `interval`, so it is not redelivered while it runs.
async fn keep_alive(message: Arc<async_nats::jetstream::Message>, interval: Duration) {
    let mut tick = tokio::time::interval(interval);
    tick.tick().await;
    loop {
        tick.tick().await;
        if let Err(error) = message.ack_with(AckKind::Progress).await {
            warn!(%error, "an in-progress acknowledgement failed");
        }
    }
}

/// Publishes each stored event of the attempt on the task's subject, in order; replays from
/// the attempt's store what it fell behind on. Returns how many it published.
async fn forward(
    mut events: broadcast::Receiver<StoredEvent>,
    store: Store,
    nats: Nats,
    task: TaskMessage,
    attempt: u64,
    worker: String,
) -> u64 {
    let subject = nats.names().event_subject(&task.id);
    let mut last = None;
    let mut published = 0;
    let publish = |event: StoredEvent| {
        let subject = subject.clone();
        let client = nats.client().clone();
        let event = crate::task::event_of(&task, attempt, &worker, event);
        async move {
            match serde_json::to_vec(&event) {
                Ok(bytes) => {
                    if let Err(error) = client.publish(subject, bytes.into()).await {
                        warn!(%error, "an event could not be published");
                    }
                }
                Err(error) => warn!(%error, "an event could not be serialised"),
            }
        }
    };
    loop {
        match events.recv().await {
            Ok(event) => {
                if last.is_some_and(|last| event.id <= last) {
                    continue;
                }
                last = Some(event.id);
                publish(event).await;
                published += 1;
            }
            Err(broadcast::error::RecvError::Lagged(_)) => loop {
                let page = match store
                    .events_after(task.session_id(), last, REPLAY_PAGE)
                    .await
                {
                    Ok(page) => page,
                    Err(error) => {
                        warn!(%error, "replaying events from the attempt's store");
                        break;
                    }
                };
                if page.is_empty() {
                    break;
                }
                for event in page {
                    last = Some(event.id);
                    publish(event).await;
                    published += 1;
                }
            },
            Err(broadcast::error::RecvError::Closed) => break,
        }
    }
    published
}

/// The span of one attempt at `task`, continuing the trace its message's headers name (the
/// submitter's, W3C trace context): one trace from `openmanus submit` to the run.
fn task_span(
    task: &TaskMessage,
    attempt: u64,
    message: &async_nats::jetstream::Message,
) -> tracing::Span {
    let span = agent_telemetry::genai_span!(
        "task",
        otel.name = %format_args!("task {}", task.agent),
        otel.kind = "consumer",
        openmanus.task.id = %task.id,
        openmanus.task.attempt = i64::try_from(attempt).unwrap_or(i64::MAX),
        gen_ai.conversation.id = task.session_id(),
    );
    agent_telemetry::context::continue_from(&span, |name| {
        message
            .headers
            .as_ref()
            .and_then(|headers| headers.get(name))
            .map(|value| value.as_str().to_owned())
    });
    span
}
