//! A session being served: one task owns its [`Session`] and runs the tasks sent to it, one at
//! a time, each after the run queue admits it; its events go to the session's stream.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent_session::{Canceller, Session};
use agent_store::StoredEvent;
use agent_tools::Question;
use tokio::sync::{Notify, broadcast, mpsc, oneshot};
use tracing::{debug, warn};

use crate::notice::{Notice, Status};
use crate::queue::RunQueue;
use crate::remote::{Remote, RemoteCanceller};

/// What runs a live session's tasks.
enum Runner {
    /// A session in this process.
    Local(Box<Session>),
    /// Workers, through NATS.
    Remote(Remote),
}

/// Cancels the run of a live session.
enum Cancel {
    Local(Canceller),
    Remote(RemoteCanceller),
}

impl Cancel {
    fn cancel(&self) -> bool {
        match self {
            Self::Local(canceller) => canceller.cancel(),
            Self::Remote(canceller) => canceller.cancel(),
        }
    }
}

/// What the owner task is asked to do.
enum Command {
    /// Run this task, in the trace these W3C trace-context headers name (if any).
    Run(String, Vec<(&'static str, String)>),
    /// Close the session and stop.
    Close(oneshot::Sender<()>),
}

/// A live session: the handle the API holds.
pub struct Live {
    id: String,
    commands: mpsc::UnboundedSender<Command>,
    canceller: Cancel,
    status: Arc<Mutex<Status>>,
    question: Arc<Mutex<Option<oneshot::Sender<Option<String>>>>>,
    leave_queue: Arc<Notify>,
    stream: broadcast::Sender<Notice>,
    /// When its last run ended (or it went live).
    idle_since: Mutex<Instant>,
    /// Set (under the status lock) when the hub lets it go for being idle: no task is taken
    /// after that.
    retired: AtomicBool,
    tools: Vec<agent_core::ToolDefinition>,
    /// The id of the newest event this process recorded or read for the session (a store
    /// shared by several processes holds a newer one when another continued the session).
    last_event: Arc<AtomicI64>,
}

/// Why a task was not accepted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TaskError {
    /// A run is queued or going.
    #[error("the session is busy with another task; cancel it or wait for it to end")]
    Busy,
    /// The session was closed.
    #[error("the session is closed")]
    Closed,
}

impl Live {
    /// A live session at rest, with nothing asked and nothing queued.
    fn new(
        id: String,
        commands: mpsc::UnboundedSender<Command>,
        canceller: Cancel,
        stream: broadcast::Sender<Notice>,
        tools: Vec<agent_core::ToolDefinition>,
    ) -> Self {
        Self {
            id,
            commands,
            canceller,
            status: Arc::new(Mutex::new(Status::at_rest())),
            question: Arc::default(),
            leave_queue: Arc::new(Notify::new()),
            stream,
            idle_since: Mutex::new(Instant::now()),
            retired: AtomicBool::new(false),
            tools,
            last_event: Arc::default(),
        }
    }

    /// Notes that the session's events up to `id` are known here.
    pub(crate) fn saw_event(&self, id: agent_store::EventId) {
        self.last_event.fetch_max(id, Ordering::SeqCst);
    }

    /// The id of the newest event known here.
    pub(crate) fn last_event(&self) -> agent_store::EventId {
        self.last_event.load(Ordering::SeqCst)
    }

    /// Whether its tasks run on workers.
    pub(crate) fn is_remote(&self) -> bool {
        matches!(self.canceller, Cancel::Remote(_))
    }

    /// Starts the owner task of `session`, whose events and notices go to `stream`, whose runs
    /// wait in `queue`, and whose `ask_human` questions arrive on `questions`.
    pub fn start(
        id: String,
        session: Session,
        queue: RunQueue,
        stream: broadcast::Sender<Notice>,
        questions: mpsc::Receiver<Question>,
    ) -> Arc<Self> {
        let (commands, receiver) = mpsc::unbounded_channel();
        let tools = session
            .agent()
            .map(agent_core::Agent::tool_definitions)
            .unwrap_or_default();
        let live = Arc::new(Self::new(
            id,
            commands,
            Cancel::Local(session.canceller()),
            stream,
            tools,
        ));
        if let Some(events) = session.recorded_events() {
            tokio::spawn(forward(
                events,
                live.stream.clone(),
                Arc::clone(&live.last_event),
            ));
        }
        tokio::spawn(Arc::clone(&live).watch_questions(questions));
        tokio::spawn(Arc::clone(&live).own(Runner::Local(Box::new(session)), queue, receiver));
        live
    }

    /// Starts the owner task of a session whose tasks run on workers ([`Remote`]): its
    /// relayed events go to `stream`, its runs (submissions) wait in `queue`.
    pub fn start_remote(
        id: String,
        remote: Remote,
        queue: RunQueue,
        stream: broadcast::Sender<Notice>,
    ) -> Arc<Self> {
        let (commands, receiver) = mpsc::unbounded_channel();
        // A worker's agent is not here to ask; the card lists the local kind's tools.
        let live = Arc::new(Self::new(
            id,
            commands,
            Cancel::Remote(remote.canceller()),
            stream,
            Vec::new(),
        ));
        tokio::spawn(Arc::clone(&live).own(Runner::Remote(remote), queue, receiver));
        live
    }

    /// The session's id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tools the session's agent offers its model (empty for a flow).
    #[must_use]
    pub fn tools(&self) -> &[agent_core::ToolDefinition] {
        &self.tools
    }

    /// The session's live state.
    #[must_use]
    pub fn status(&self) -> Status {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Queues `task`.
    ///
    /// # Errors
    ///
    /// A run is already queued or going, or the session is closed.
    pub fn run(&self, task: String) -> Result<(), TaskError> {
        self.run_traced(task, Vec::new())
    }

    /// Queues `task`, its run continuing the trace `trace` names (W3C trace-context headers,
    /// as [`agent_telemetry::context::headers`] gives them; empty: a trace of its own).
    ///
    /// # Errors
    ///
    /// As [`Live::run`].
    pub fn run_traced(
        &self,
        task: String,
        trace: Vec<(&'static str, String)>,
    ) -> Result<(), TaskError> {
        self.update(|status| {
            if self.retired.load(Ordering::Acquire) {
                return Err(TaskError::Closed);
            }
            if status.busy {
                return Err(TaskError::Busy);
            }
            status.busy = true;
            status.error = None;
            Ok(())
        })?;
        self.commands.send(Command::Run(task, trace)).map_err(|_| {
            self.update(|status| status.busy = false);
            TaskError::Closed
        })
    }

    /// Marks the session retired when it has had nothing to do for `max_idle`; true when it did
    /// (the caller then closes it). Checked under the status lock, so a task arriving at the
    /// same moment either runs or is refused as [`TaskError::Closed`], never lost.
    pub fn retire_if_idle(&self, max_idle: Duration) -> bool {
        let status = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = *self
            .idle_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if status.busy || idle.elapsed() < max_idle {
            return false;
        }
        self.retired.store(true, Ordering::Release);
        true
    }

    /// Cancels the run going or waiting; false when there is none.
    pub fn cancel(&self) -> bool {
        if !self.status().busy {
            return false;
        }
        // Wakes a run waiting in line now; unlike `notify_one`, leaves no permit behind that
        // would make the next task look cancelled as soon as it queued.
        self.leave_queue.notify_waiters();
        self.canceller.cancel();
        true
    }

    /// Answers the question `ask_human` is waiting on; false when none is.
    pub fn answer(&self, answer: String) -> bool {
        let reply = self
            .question
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(reply) = reply else { return false };
        let answered = reply.send(Some(answer)).is_ok();
        self.update(|status| {
            status.question = None;
            status.choices.clear();
        });
        answered
    }

    /// Cancels what runs, shuts the agent down and waits for it.
    pub async fn close(&self) {
        self.cancel();
        let (done, closed) = oneshot::channel();
        if self.commands.send(Command::Close(done)).is_ok() {
            let _ = closed.await;
        }
    }

    /// Changes the status and tells the stream.
    fn update<T>(&self, change: impl FnOnce(&mut Status) -> T) -> T {
        let (result, status) = {
            let mut status = self.status.lock().unwrap_or_else(PoisonError::into_inner);
            let result = change(&mut status);
            status.bump();
            (result, status.clone())
        };
        let _ = self.stream.send(Notice::Status(status));
        result
    }

    /// The owner task: runs each task after the queue admits it; closes the session at the end.
    async fn own(
        self: Arc<Self>,
        mut runner: Runner,
        queue: RunQueue,
        mut commands: mpsc::UnboundedReceiver<Command>,
    ) {
        let mut closed = None;
        while let Some(command) = commands.recv().await {
            let (task, trace) = match command {
                Command::Run(task, trace) => (task, trace),
                Command::Close(done) => {
                    closed = Some(done);
                    break;
                }
            };
            let Some(slot) = self.wait_for_slot(&queue).await else {
                *self
                    .idle_since
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Instant::now();
                self.update(|status| {
                    status.busy = false;
                    status.queue_position = None;
                });
                continue;
            };
            self.update(|status| status.queue_position = None);
            let span = run_span(&self.id, &trace);
            let outcome = match &mut runner {
                Runner::Local(session) => agent_telemetry::scope::within(span, session.run(&task))
                    .await
                    .map(|report| report.status_text())
                    .map_err(|error| error.to_string()),
                Runner::Remote(remote) => {
                    agent_telemetry::scope::within(span, remote.run(&task, &self.stream)).await
                }
            };
            let error = match outcome {
                Ok(status) => {
                    debug!(session = %self.id, %status, "run ended");
                    None
                }
                Err(error) => {
                    warn!(session = %self.id, %error, "the task could not run");
                    Some(error)
                }
            };
            drop(slot);
            *self
                .idle_since
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Instant::now();
            self.update(|status| {
                status.busy = false;
                status.question = None;
                status.choices.clear();
                status.error = error;
            });
        }
        if let Runner::Local(session) = runner
            && let Err(error) = session.close().await
        {
            warn!(session = %self.id, %error, "closing the session");
        }
        if let Some(done) = closed {
            let _ = done.send(());
        }
    }

    /// Waits for the queue to admit a run, telling the stream the run's place in the line;
    /// `None` when the run was cancelled while it waited.
    async fn wait_for_slot(&self, queue: &RunQueue) -> Option<crate::queue::Slot> {
        let mut changes = queue.changes();
        let admit = queue.admit(&self.id);
        tokio::pin!(admit);
        loop {
            tokio::select! {
                slot = &mut admit => return slot,
                () = self.leave_queue.notified() => return None,
                changed = changes.changed() => {
                    if changed.is_err() {
                        return (&mut admit).await;
                    }
                    let position = queue.position(&self.id);
                    if self.status().queue_position != position {
                        self.update(|status| status.queue_position = position);
                    }
                }
            }
        }
    }

    /// Keeps the question `ask_human` asks until the API answers it.
    async fn watch_questions(self: Arc<Self>, mut questions: mpsc::Receiver<Question>) {
        while let Some(question) = questions.recv().await {
            *self.question.lock().unwrap_or_else(PoisonError::into_inner) = Some(question.reply);
            self.update(|status| {
                status.question = Some(question.inquire);
                status.choices = question.choices;
            });
        }
    }
}

/// Forwards the session's stored events to its stream, noting the newest in `last`.
async fn forward(
    mut events: broadcast::Receiver<StoredEvent>,
    stream: broadcast::Sender<Notice>,
    last: Arc<AtomicI64>,
) {
    loop {
        match events.recv().await {
            Ok(event) => {
                last.fetch_max(event.id, Ordering::SeqCst);
                let _ = stream.send(Notice::Stored(event));
            }
            // Clients replay what was skipped from the store, by id.
            Err(broadcast::error::RecvError::Lagged(_)) => {
                let _ = stream.send(Notice::Resync);
            }
            Err(broadcast::error::RecvError::Closed) => break,
        }
    }
}

/// The span a run continuing a remote trace goes in (`Span::none()` without one: the run's
/// own `invoke_agent` span is then a root).
fn run_span(session: &str, trace: &[(&'static str, String)]) -> tracing::Span {
    if trace.is_empty() {
        return tracing::Span::none();
    }
    let span = agent_telemetry::genai_span!(
        "task",
        otel.name = "task",
        otel.kind = "internal",
        gen_ai.conversation.id = session,
    );
    agent_telemetry::context::continue_from(&span, |name| {
        trace
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.clone())
    });
    span
}
