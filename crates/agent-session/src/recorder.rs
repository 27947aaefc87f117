//! Recording a session in the [`Store`]: one writer task takes, through one queue and in the
//! order they happen, the agent's events (a synchronous [`EventBus`] sink), the flow's events
//! and every change of the agent's memory (a [`MemoryObserver`]); it commits them in small
//! batches, one transaction each, and only then publishes each [`StoredEvent`] with its id on a
//! broadcast channel. So the ids a live subscriber sees are the ids in the store, and a
//! subscriber that reconnects replays from the store what it missed.
//!
//! Memory costs one serialisation per message added or edited (never the whole memory per
//! step). While someone subscribes to the live events, a batch is committed whenever the agent
//! awaits (a model call, a tool), so a subscriber sees each event as soon as possible. While
//! nobody does (the command line), a batch is committed at the end of each step, at run
//! boundaries, or [`IDLE_COMMIT`] after its first item, whichever comes first: one transaction
//! per step instead of one per await. Steps that end less than [`COMMIT_INTERVAL`] after the
//! previous commit (a fast local model, a replay) wait for it to pass and share a transaction:
//! step ends are committed at most ten times a second, since a commit costs SQLite more than
//! the step's rows. A process
//! killed in the middle of a run loses at most the step in progress, or the steps of the last
//! [`COMMIT_INTERVAL`] (and the stored memory then ends at a step boundary).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_core::{AgentEvent, EventBus, MemoryChange, MemoryObserver, TokenUsage};
use agent_store::{
    Batch, EventKind, JsonText, MemoryWrite, NewEvent, RunId, RunSummary, SessionWriter, Store,
    StoreError, StoredEvent,
};
use serde_json::Value;

use crate::journal::{Encoder, Entry, EntrySink, JournalHandle};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;
use tracing::warn;

mod exchanges;
use exchanges::Exchanges;

/// The least time between two commits of ended steps while nobody subscribes.
const COMMIT_INTERVAL: Duration = Duration::from_millis(100);

/// How many queued items one transaction takes at most.
const MAX_BATCH: usize = 512;

/// How long queued items may wait for the end of their step when nobody subscribes.
const IDLE_COMMIT: Duration = Duration::from_millis(500);

/// How many stored events a slow subscriber may fall behind before it is told it lagged (it
/// then replays from the store).
const BROADCAST_CAPACITY: usize = 4096;

/// What the writer task receives, in the order things happened.
enum Item {
    /// An agent or flow event, serialised when it happened (no copy of the event waits in
    /// the queue).
    Event {
        kind: EventKind,
        at: i64,
        data: JsonText,
        /// Whether it is the end of a step (`step_finished`).
        step_ended: bool,
    },
    /// A change of the agent's memory.
    Memory(MemoryWrite),
    /// What a [`JournaledModel`](crate::JournaledModel) writes: a model request, its reply
    /// or error (kept as exchanges); other lines are not kept (the store records events and
    /// runs itself).
    Journal(Entry),
    /// Begin a run (after writing everything before it).
    BeginRun {
        task: String,
        reply: oneshot::Sender<Result<RunId, StoreError>>,
    },
    /// End the current run (after writing everything before it).
    FinishRun {
        summary: Box<RunSummary>,
        reply: oneshot::Sender<Result<(), StoreError>>,
    },
    /// Write everything before it and stop.
    Close,
}

/// The queue into the writer task; cheap to clone.
#[derive(Clone)]
struct Queue(UnboundedSender<Item>);

impl Queue {
    fn send(&self, item: Item) -> bool {
        self.0.send(item).is_ok()
    }
}

impl EntrySink for Queue {
    fn send(&self, entry: Entry) -> bool {
        Queue::send(self, Item::Journal(entry))
    }

    fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

impl MemoryObserver for Queue {
    fn changed(&self, change: MemoryChange<'_>) {
        let write = match change {
            MemoryChange::Added { id, message } | MemoryChange::Edited { id, message } => {
                match serde_json::to_string(message) {
                    Ok(message) => MemoryWrite::Put { seq: id, message },
                    Err(error) => {
                        warn!(%error, "a memory message cannot be recorded");
                        return;
                    }
                }
            }
            MemoryChange::Removed { ids } => MemoryWrite::Remove { seqs: ids.to_vec() },
        };
        self.send(Item::Memory(write));
    }
}

/// The queue of a session that is to be recorded, made before its agent is built: the agent's
/// models send their requests and replies to it through [`Pending::journal`]; the
/// [`Recorder`] started with it takes them in order with everything else.
pub(crate) struct Pending {
    queue: Queue,
    receiver: UnboundedReceiver<Item>,
    journal: JournalHandle,
}

impl Pending {
    pub(crate) fn new() -> Self {
        let (sender, receiver) = unbounded_channel();
        let queue = Queue(sender);
        let journal = JournalHandle::new(Arc::new(queue.clone()));
        Self {
            queue,
            receiver,
            journal,
        }
    }

    /// The handle the session's models write their exchanges to.
    pub(crate) fn journal(&self) -> JournalHandle {
        self.journal.clone()
    }
}

/// The events of a recorded session, stored and live; cheap to clone, usable while the session
/// runs (an HTTP handler subscribes through it while another task drives
/// [`Session::run`](crate::Session::run)).
#[derive(Clone)]
pub struct EventFeed {
    store: Store,
    session: String,
    events: broadcast::Sender<StoredEvent>,
}

impl std::fmt::Debug for EventFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventFeed")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl EventFeed {
    /// The session's id in the store.
    #[must_use]
    pub fn session_id(&self) -> &str {
        &self.session
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A receiver of every event stored from now on, with its store id.
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<StoredEvent> {
        self.events.subscribe()
    }

    /// Everything after event `after` (all for `None`) without a gap or a repeat: the stored
    /// events (up to `limit`), and a receiver of the live ones. The receiver is subscribed
    /// before the store is read, so it may also deliver events the returned list holds: skip
    /// live events whose id is not above the last one returned (ids only grow). A client that
    /// reconnects with `Last-Event-ID: n` calls `since(Some(n), ..)`.
    ///
    /// # Errors
    ///
    /// The store cannot be read.
    pub async fn since(
        &self,
        after: Option<agent_store::EventId>,
        limit: usize,
    ) -> Result<(Vec<StoredEvent>, broadcast::Receiver<StoredEvent>), StoreError> {
        let live = self.events.subscribe();
        let stored = self.store.events_after(&self.session, after, limit).await?;
        Ok((stored, live))
    }
}

/// A session being recorded: its id in the store and the writer task.
pub(crate) struct Recorder {
    store: Store,
    id: String,
    queue: Queue,
    /// The tokens of the events seen since [`Recorder::take_usage`], added up as they are
    /// emitted (no task of its own follows the bus for it).
    usage: Arc<Mutex<TokenUsage>>,
    events: broadcast::Sender<StoredEvent>,
    writer: Option<JoinHandle<()>>,
}

impl Recorder {
    /// Starts the writer task for the stored session `id`, taking what `pending` queued and
    /// will queue, and subscribes it to `bus`. The session's model requests are numbered on
    /// from those the session already holds.
    pub(crate) async fn start(
        store: Store,
        id: String,
        bus: &EventBus,
        pending: Pending,
    ) -> Result<Self, StoreError> {
        let pace = Pace {
            idle: IDLE_COMMIT,
            interval: COMMIT_INTERVAL,
        };
        Self::start_with(store, id, bus, pending, pace).await
    }

    /// [`Recorder::start`], committing what nobody watches at `pace`.
    async fn start_with(
        store: Store,
        id: String,
        bus: &EventBus,
        pending: Pending,
        pace: Pace,
    ) -> Result<Self, StoreError> {
        let first = store.next_exchange_seq(&id).await?;
        pending
            .journal
            .number_requests_from(u64::try_from(first).unwrap_or_default());
        let Pending {
            queue, receiver, ..
        } = pending;
        let (events, _) = broadcast::channel(BROADCAST_CAPACITY);
        let sink = queue.clone();
        let usage = Arc::new(Mutex::new(TokenUsage::default()));
        let tally = Arc::clone(&usage);
        bus.subscribe_with(Arc::new(move |event: &AgentEvent| {
            if let Some(call) = event.token_usage() {
                tally
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .add_call(&call);
            }
            // Streamed text is not stored: the thought that follows carries it whole.
            if event.is_live_only() {
                return true;
            }
            match JsonText::of(event) {
                Ok(data) => sink.send(Item::Event {
                    kind: EventKind::Agent,
                    at: agent_store::now_ms(),
                    data,
                    step_ended: matches!(event, AgentEvent::StepFinished { .. }),
                }),
                Err(error) => {
                    warn!(%error, "an agent event cannot be recorded");
                    true
                }
            }
        }));
        let writer = tokio::spawn(write(
            store.session_writer(&id),
            receiver,
            events.clone(),
            pace,
            Exchanges {
                encoder: Encoder::default(),
                stream: first,
            },
        ));
        Ok(Self {
            store,
            id,
            queue,
            usage,
            events,
            writer: Some(writer),
        })
    }

    /// The tokens used since the last call (a run's, when called at its start and end).
    pub(crate) fn take_usage(&self) -> TokenUsage {
        std::mem::take(&mut *self.usage.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The session's id in the store.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The store.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// A new receiver of every event stored from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<StoredEvent> {
        self.events.subscribe()
    }

    /// A handle that subscribes from anywhere.
    pub(crate) fn feed(&self) -> EventFeed {
        EventFeed {
            store: self.store.clone(),
            session: self.id.clone(),
            events: self.events.clone(),
        }
    }

    /// The observer that records a memory's changes.
    pub(crate) fn memory_observer(&self) -> Arc<dyn MemoryObserver> {
        Arc::new(self.queue.clone())
    }

    /// A handle that records flow events from a synchronous handler.
    pub(crate) fn flow_sink(&self) -> impl Fn(Value) + Send + Sync + 'static {
        let queue = self.queue.clone();
        move |event: Value| {
            queue.send(Item::Event {
                kind: EventKind::Flow,
                at: agent_store::now_ms(),
                data: event.into(),
                step_ended: false,
            });
        }
    }

    /// Begins a run of `task` once everything queued before is written.
    pub(crate) async fn begin_run(&self, task: &str) -> Result<RunId, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.queue.send(Item::BeginRun {
            task: task.to_owned(),
            reply,
        });
        answer.await.unwrap_or_else(|_| Err(closed()))
    }

    /// Ends the current run once everything queued before is written.
    pub(crate) async fn finish_run(&self, summary: RunSummary) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        self.queue.send(Item::FinishRun {
            summary: Box::new(summary),
            reply,
        });
        answer.await.unwrap_or_else(|_| Err(closed()))
    }

    /// Writes what is queued and stops the writer task.
    pub(crate) async fn close(mut self) {
        self.queue.send(Item::Close);
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
    }
}

fn closed() -> StoreError {
    StoreError::Closed
}

/// When the writer commits what nobody watches.
#[derive(Clone, Copy)]
struct Pace {
    /// A batch waits for its step's end at most this long after its first item.
    idle: Duration,
    /// A step's end is committed at once only this long after the previous commit.
    interval: Duration,
}

/// The writer task: takes what is queued (up to [`MAX_BATCH`] items at a time), writes it in
/// one transaction, publishes the stored events; runs and ends runs in between, in order.
async fn write(
    writer: SessionWriter,
    mut queue: UnboundedReceiver<Item>,
    events: broadcast::Sender<StoredEvent>,
    pace: Pace,
    mut exchanges: Exchanges,
) {
    let mut sink = Sink {
        writer,
        events,
        committed: None,
    };
    let mut run: Option<RunId> = None;
    let mut items = Vec::with_capacity(MAX_BATCH);
    let mut batch = Batch::default();
    // When the oldest item of a held-back batch must be committed at the latest.
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let received = match deadline {
            Some(at) => {
                match tokio::time::timeout_at(at, queue.recv_many(&mut items, MAX_BATCH)).await {
                    Ok(received) => received,
                    Err(_) => {
                        sink.commit(std::mem::take(&mut batch)).await;
                        deadline = None;
                        continue;
                    }
                }
            }
            None => queue.recv_many(&mut items, MAX_BATCH).await,
        };
        if received == 0 {
            sink.commit(batch).await;
            return;
        }
        let mut step_ended = false;
        for item in items.drain(..) {
            match item {
                Item::Event {
                    kind,
                    at,
                    data,
                    step_ended: ended,
                } => {
                    step_ended |= ended;
                    batch.events.push(NewEvent {
                        run_id: run,
                        at,
                        kind,
                        data,
                    });
                }
                Item::Memory(write) => batch.memory.push(write),
                Item::Journal(entry) => batch.exchanges.extend(exchanges.exchange(entry, run)),
                Item::BeginRun { task, reply } => {
                    sink.commit(std::mem::take(&mut batch)).await;
                    let begun = sink
                        .writer
                        .store()
                        .begin_run(sink.writer.session(), &task)
                        .await
                        .map(|(id, event)| {
                            let _ = sink.events.send(event);
                            id
                        });
                    run = begun.as_ref().ok().copied();
                    let _ = reply.send(begun);
                }
                Item::FinishRun { summary, reply } => {
                    sink.commit(std::mem::take(&mut batch)).await;
                    let finished = match run.take() {
                        Some(id) => {
                            sink.writer
                                .store()
                                .finish_run(id, &summary)
                                .await
                                .map(|event| {
                                    let _ = sink.events.send(event);
                                })
                        }
                        None => Ok(()),
                    };
                    let _ = reply.send(finished);
                }
                Item::Close => {
                    sink.commit(batch).await;
                    return;
                }
            }
        }
        let watched = sink.events.receiver_count() > 0;
        let large = batch.events.len() + batch.memory.len() + batch.exchanges.len() >= MAX_BATCH;
        let now = tokio::time::Instant::now();
        // A step's end is due once the interval since the last commit has passed.
        let due = sink.committed.map_or(now, |at| at + pace.interval);
        // A deadline that passed while items kept coming (the queue is read before the timer).
        let overdue = deadline.is_some_and(|at| at <= now);
        if watched || large || overdue || (step_ended && due <= now) {
            sink.commit(std::mem::take(&mut batch)).await;
            deadline = None;
        } else if batch.is_empty() {
            deadline = None;
        } else if step_ended {
            deadline = Some(deadline.map_or(due, |at| at.min(due)));
        } else if deadline.is_none() {
            deadline = Some(now + pace.idle);
        }
    }
}

/// Where the writer commits, and when it last did.
struct Sink {
    writer: SessionWriter,
    events: broadcast::Sender<StoredEvent>,
    /// When the last commit ended (`None` before the first). A run's beginning and end count:
    /// they write transactions of their own right after committing what came before.
    committed: Option<tokio::time::Instant>,
}

impl Sink {
    /// Writes `batch` and publishes its events; a failure is logged (the run goes on
    /// unrecorded rather than stopping). The events are read back as values only when someone
    /// listens: a subscriber counted after the write (it subscribed before it read the store,
    /// see [`EventFeed::since`]) gets them live; one that came later reads them stored.
    async fn commit(&mut self, batch: Batch) {
        if !batch.is_empty() {
            match self.writer.write(batch).await {
                Ok(written) if self.events.receiver_count() > 0 => match written.into_stored() {
                    Ok(stored) => {
                        for event in stored {
                            let _ = self.events.send(event);
                        }
                    }
                    Err(error) => warn!(%error, "stored events cannot be published"),
                },
                Ok(_) => {}
                Err(error) => warn!(
                    %error,
                    session = self.writer.session(),
                    "the session store lost a batch of events"
                ),
            }
        }
        self.committed = Some(tokio::time::Instant::now());
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use agent_store::NewSession;

    use super::*;

    /// Waits (30 s at most) until the session holds `count` events.
    async fn stored(store: &Store, id: &str, count: u64) -> u64 {
        let mut now = 0;
        for _ in 0..600 {
            now = store.event_count(id).await.unwrap();
            if now >= count {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        now
    }

    /// An in-memory store with one session, and the session's id.
    async fn session() -> (Store, String) {
        let store = Store::open_memory().await.unwrap();
        let id = store
            .create_session(NewSession::new("swe", std::env::temp_dir()))
            .await
            .unwrap()
            .id;
        (store, id)
    }

    #[tokio::test]
    async fn a_step_nobody_watches_is_committed_when_it_ends_and_a_watched_one_at_once() {
        let (store, id) = session().await;
        let bus = EventBus::new();
        // No deadline within the test: only the step's end or a subscriber commits.
        let pace = Pace {
            idle: Duration::from_secs(3600),
            interval: Duration::ZERO,
        };
        let recorder = Recorder::start_with(store.clone(), id.clone(), &bus, Pending::new(), pace)
            .await
            .unwrap();
        bus.emit(AgentEvent::StepStarted {
            step: 1,
            max_steps: 5,
        });
        // The writer gets every chance to run; nothing may be committed yet.
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(store.event_count(&id).await.unwrap(), 0);
        bus.emit(AgentEvent::StepFinished {
            step: 1,
            result: "done".into(),
        });
        assert_eq!(stored(&store, &id, 2).await, 2);

        // With a subscriber, the next event is committed and published without a step end.
        let mut live = recorder.subscribe();
        bus.emit(AgentEvent::StepStarted {
            step: 2,
            max_steps: 5,
        });
        let event = tokio::time::timeout(Duration::from_secs(30), live.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(event.data["type"], "step_started");
        assert_eq!(event.data["step"], 2);
        assert_eq!(store.event_count(&id).await.unwrap(), 3);

        // What is held back when the session closes is written.
        drop(live);
        bus.emit(AgentEvent::StepStarted {
            step: 3,
            max_steps: 5,
        });
        recorder.close().await;
        assert_eq!(store.event_count(&id).await.unwrap(), 4);
    }

    #[tokio::test]
    async fn steps_that_end_within_the_interval_share_a_commit() {
        let (store, id) = session().await;
        let bus = EventBus::new();
        let pace = Pace {
            idle: Duration::from_secs(3600),
            interval: Duration::from_secs(3600),
        };
        let recorder = Recorder::start_with(store.clone(), id.clone(), &bus, Pending::new(), pace)
            .await
            .unwrap();
        let step = |n: u32| {
            bus.emit(AgentEvent::StepStarted {
                step: n,
                max_steps: 5,
            });
            bus.emit(AgentEvent::StepFinished {
                step: n,
                result: "done".into(),
            });
        };
        // The first step's end is committed (no commit before it).
        step(1);
        assert_eq!(stored(&store, &id, 2).await, 2);
        // The second ends within the interval: it waits (for the interval, or the close).
        step(2);
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(store.event_count(&id).await.unwrap(), 2);
        recorder.close().await;
        assert_eq!(store.event_count(&id).await.unwrap(), 4);
    }
}
