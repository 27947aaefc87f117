//! The sessions a server knows: every stored session, and the live ones (an agent built, ready
//! for the next task). A stored session becomes live when it is given a task; the server's
//! store is the truth for everything else.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent_protocol::TaskQueue;
use agent_session::{Session, SessionError, Target};
use agent_store::{EventId, NewSession, SessionRecord, Store, StoreError, StoreNotice};
use agent_tools::ChannelInput;
use agents::{AgentFactory, AgentKind};
use serde_json::Value;
use tokio::sync::broadcast;
use tracing::debug;

use crate::error::ApiError;
use crate::live::Live;
use crate::notice::Notice;
use crate::queue::RunQueue;
use crate::remote::Remote;

/// How many notices a session's stream holds for a slow client before it must replay from
/// the store.
const STREAM_CAPACITY: usize = 1024;

/// The sessions of a server.
pub struct Hub {
    store: Store,
    factory: AgentFactory,
    sessions_root: PathBuf,
    queue: RunQueue,
    live: Mutex<HashMap<String, Arc<Live>>>,
    streams: Mutex<HashMap<String, broadcast::Sender<Notice>>>,
    /// Serialises making sessions live, so that one session never gets two agents.
    starting: tokio::sync::Mutex<()>,
    /// Becomes true when the server shuts down: event streams end.
    closing: tokio::sync::watch::Sender<bool>,
    /// Where tasks go when they run on workers (`None`: in this process).
    workers: Option<Arc<dyn TaskQueue>>,
    /// The tools of each agent kind, learnt once (the A2A card lists them).
    catalogue: Mutex<HashMap<AgentKind, Vec<agent_core::ToolDefinition>>>,
}

impl Hub {
    /// A hub over `store`, building agents with `factory`, each session in its own directory
    /// under `sessions_root`, at most `max_concurrent_runs` runs at once.
    #[must_use]
    pub fn new(
        store: Store,
        factory: AgentFactory,
        sessions_root: impl Into<PathBuf>,
        max_concurrent_runs: usize,
    ) -> Self {
        Self {
            store,
            factory,
            sessions_root: sessions_root.into(),
            queue: RunQueue::new(max_concurrent_runs),
            live: Mutex::default(),
            streams: Mutex::default(),
            starting: tokio::sync::Mutex::new(()),
            closing: tokio::sync::watch::channel(false).0,
            workers: None,
            catalogue: Mutex::default(),
        }
    }

    /// The same hub, running every task on the workers behind `queue` (`agent_worker::Submitter`:
    /// NATS JetStream) instead of in this process: sessions are recorded here, their events
    /// relayed from the workers and stored here, their conversations kept by the workers
    /// between tasks.
    #[must_use]
    pub fn with_workers(mut self, queue: impl TaskQueue + 'static) -> Self {
        self.workers = Some(Arc::new(queue));
        self
    }

    /// Whether tasks run on workers.
    #[must_use]
    pub fn dispatches(&self) -> bool {
        self.workers.is_some()
    }

    /// Tells every event stream to end (the server is shutting down).
    pub fn begin_shutdown(&self) {
        self.closing.send_replace(true);
    }

    /// A receiver that turns true when the server shuts down.
    #[must_use]
    pub fn closing(&self) -> tokio::sync::watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The run queue.
    #[must_use]
    pub fn queue(&self) -> &RunQueue {
        &self.queue
    }

    /// The live session `id`, if it is live.
    #[must_use]
    pub fn live(&self, id: &str) -> Option<Arc<Live>> {
        self.lock_live().get(id).cloned()
    }

    /// How many sessions are live.
    #[must_use]
    pub fn live_count(&self) -> usize {
        self.lock_live().len()
    }

    /// The stream of session `id` (created on first use).
    pub fn stream(&self, id: &str) -> broadcast::Sender<Notice> {
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(id.to_owned())
            .or_insert_with(|| broadcast::channel(STREAM_CAPACITY).0)
            .clone()
    }

    /// Creates a session of `target` with its own workspace and makes it live.
    ///
    /// # Errors
    ///
    /// The workspace cannot be created, the agent cannot be built, the store cannot be written.
    pub async fn create(&self, target: Target, settings: Value) -> Result<Arc<Live>, ApiError> {
        // No lock: a new session has a new id, so it cannot be made live twice.
        let workspace = self.new_workspace()?;
        if let Some(workers) = &self.workers {
            let new = NewSession::new(target.as_str(), &workspace).with_settings(settings);
            let record = self.store.create_session(new).await.map_err(store_error)?;
            return Ok(self.make_remote(Arc::clone(workers), record));
        }
        let (input, questions) = ChannelInput::new();
        let factory = self
            .factory
            .clone()
            .with_workspace(&workspace)
            .with_human_input(Arc::new(input));
        let session = match Session::start_recorded(&factory, target, &self.store, settings).await {
            Ok(session) => session,
            Err(error) => {
                let _ = std::fs::remove_dir_all(&workspace);
                return Err(session_error(error));
            }
        };
        Ok(self.make_live(session, questions))
    }

    /// The live session `id`, resumed from the store if it is not live yet.
    ///
    /// # Errors
    ///
    /// No such session; its agent cannot be built.
    pub async fn ensure_live(&self, id: &str) -> Result<Arc<Live>, ApiError> {
        let shared = self.store.is_shared();
        if let Some(live) = self.live(id)
            && !shared
        {
            return Ok(live);
        }
        let _starting = self.starting.lock().await;
        if let Some(live) = self.live(id) {
            if !self.is_stale(&live).await? {
                return Ok(live);
            }
            // Another process sharing the store ran the session since: this agent's memory
            // is behind the store's. It goes, and the session is resumed from the store.
            debug!(
                session = id,
                "a live session was continued elsewhere: resuming it"
            );
            self.lock_live().remove(id);
            live.close().await;
        }
        if let Some(workers) = &self.workers {
            let record = self.store.find_session(id).await.map_err(store_error)?;
            return Ok(self.make_remote(Arc::clone(workers), record));
        }
        let (input, questions) = ChannelInput::new();
        let factory = self.factory.clone().with_human_input(Arc::new(input));
        // Read before the memory is: an event stored meanwhile makes the session stale at
        // once (resumed again), never the other way round.
        let known = self.store.last_event_id(id).await.map_err(store_error)?;
        let session = Session::resume(&factory, &self.store, id)
            .await
            .map_err(session_error)?;
        let live = self.make_live(session, questions);
        live.saw_event(known.unwrap_or_default());
        Ok(live)
    }

    /// Whether the live session `live`, at rest in this process, was continued by another
    /// process sharing the store (the store holds events it did not record). Never for a store
    /// of one process, a session running here, or one whose tasks run on workers.
    async fn is_stale(&self, live: &Live) -> Result<bool, ApiError> {
        if !self.store.is_shared() || live.is_remote() || live.status().busy {
            return Ok(false);
        }
        let last: Option<EventId> = self
            .store
            .last_event_id(live.id())
            .await
            .map_err(store_error)?;
        Ok(last.is_some_and(|last| last > live.last_event()))
    }

    /// Cancels the run of the session `record` going in another process sharing the store, if
    /// the store says one is going (the session is `running`): asks it through the store.
    /// Whether it was asked.
    ///
    /// # Errors
    ///
    /// The store cannot be written.
    pub async fn cancel_elsewhere(&self, record: &SessionRecord) -> Result<bool, ApiError> {
        if !self.store.is_shared() || record.state != agent_store::SessionState::Running {
            return Ok(false);
        }
        self.store.ask_cancel(&record.id).await.map_err(store_error)
    }

    /// Passes on a notice of events stored by a process sharing the store (another server's
    /// run of a session, or this one's) to the stream of that session, if anyone follows it;
    /// notices that may have been missed make every stream read the store again; a cancel
    /// another server was asked for cancels the run here, if it is here.
    pub fn on_store_notice(&self, notice: StoreNotice) {
        let streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        match notice {
            StoreNotice::Events { session, last } => {
                if let Some(stream) = streams.get(&session)
                    && stream.receiver_count() > 0
                {
                    let _ = stream.send(Notice::Poke(last));
                }
            }
            StoreNotice::Cancel { session } => {
                drop(streams);
                if let Some(live) = self.live(&session) {
                    let cancelled = live.cancel();
                    debug!(session, cancelled, "cancel asked by another server");
                }
            }
            _ => {
                for stream in streams.values() {
                    let _ = stream.send(Notice::Resync);
                }
            }
        }
    }

    /// Closes session `id` if it is live, deletes it from the store and removes its workspace
    /// (when it lies under the sessions directory). False when there was no such session.
    ///
    /// # Errors
    ///
    /// The store cannot be written.
    pub async fn delete(&self, id: &str) -> Result<bool, ApiError> {
        let record = match self.store.session(id).await {
            Ok(record) => record,
            Err(StoreError::NoSession(_)) => return Ok(false),
            Err(error) => return Err(ApiError::internal(error)),
        };
        let live = self.lock_live().remove(id);
        if let Some(live) = live {
            live.close().await;
        }
        let deleted = self
            .store
            .delete_session(id)
            .await
            .map_err(ApiError::internal)?;
        if is_inside(&record.workspace, &self.sessions_root) {
            let _ = tokio::fs::remove_dir_all(&record.workspace).await;
        }
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        Ok(deleted)
    }

    /// The stored session `id`.
    ///
    /// # Errors
    ///
    /// No such session (404), or the store cannot be read.
    pub async fn record(&self, id: &str) -> Result<SessionRecord, ApiError> {
        self.store.session(id).await.map_err(store_error)
    }

    /// Closes the live sessions that have had nothing to do for `max_idle` (their agents,
    /// processes and browsers go; the store keeps them, and their next task resumes them).
    /// Returns how many were closed.
    pub async fn evict_idle(&self, max_idle: std::time::Duration) -> usize {
        // Held while they close, so that a task for one of them resumes it only once it is
        // closed.
        let _starting = self.starting.lock().await;
        let retired: Vec<Arc<Live>> = {
            let mut live = self.lock_live();
            let ids: Vec<String> = live
                .iter()
                .filter(|(_, session)| session.retire_if_idle(max_idle))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| live.remove(id)).collect()
        };
        for session in &retired {
            debug!(session = session.id(), "closing an idle session");
            session.close().await;
        }
        retired.len()
    }

    /// The tools an agent of `kind` offers its model: learnt once by building one in a scratch
    /// workspace (nothing recorded) and shutting it down.
    ///
    /// # Errors
    ///
    /// The agent cannot be built.
    pub async fn tools_of(
        &self,
        kind: AgentKind,
    ) -> Result<Vec<agent_core::ToolDefinition>, ApiError> {
        if let Some(tools) = self.lock_catalogue().get(&kind) {
            return Ok(tools.clone());
        }
        let workspace = self.new_workspace()?;
        let factory = self.factory.clone().with_workspace(&workspace);
        let result = Session::start(&factory, Target::Agent(kind)).await;
        let tools = match result {
            Ok(session) => {
                let tools = session
                    .agent()
                    .map(agent_core::Agent::tool_definitions)
                    .unwrap_or_default();
                if let Err(error) = session.close().await {
                    tracing::warn!(%error, "closing the scratch agent");
                }
                Ok(tools)
            }
            Err(error) => Err(session_error(error)),
        };
        let _ = tokio::fs::remove_dir_all(&workspace).await;
        let tools = tools?;
        self.lock_catalogue().insert(kind, tools.clone());
        Ok(tools)
    }

    fn lock_catalogue(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<AgentKind, Vec<agent_core::ToolDefinition>>> {
        self.catalogue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes every live session (at shutdown).
    pub async fn close_all(&self) {
        let live: Vec<Arc<Live>> = self.lock_live().drain().map(|(_, live)| live).collect();
        for session in live {
            session.close().await;
        }
    }

    fn make_live(
        &self,
        session: Session,
        questions: tokio::sync::mpsc::Receiver<agent_tools::Question>,
    ) -> Arc<Live> {
        let id = session.session_id().unwrap_or_default().to_owned();
        let live = Live::start(
            id.clone(),
            session,
            self.queue.clone(),
            self.stream(&id),
            questions,
        );
        self.lock_live().insert(id, Arc::clone(&live));
        live
    }

    fn make_remote(&self, workers: Arc<dyn TaskQueue>, record: SessionRecord) -> Arc<Live> {
        let id = record.id.clone();
        let remote = Remote::new(workers, self.store.clone(), record.id, record.agent);
        let live = Live::start_remote(id.clone(), remote, self.queue.clone(), self.stream(&id));
        self.lock_live().insert(id, Arc::clone(&live));
        live
    }

    /// A new, empty directory under the sessions root.
    fn new_workspace(&self) -> Result<PathBuf, ApiError> {
        std::fs::create_dir_all(&self.sessions_root).map_err(ApiError::internal)?;
        for _ in 0..4 {
            let name = uuid::Uuid::new_v4().to_string();
            let path = self.sessions_root.join(name);
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(path),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(ApiError::internal(error)),
            }
        }
        Err(ApiError::internal("no free workspace name"))
    }

    fn lock_live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Live>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `path` lies strictly inside `root`.
fn is_inside(path: &Path, root: &Path) -> bool {
    match (path.canonicalize(), root.canonicalize()) {
        (Ok(path), Ok(root)) => path != root && path.starts_with(root),
        _ => false,
    }
}

/// A store error as the API answers it.
pub(crate) fn store_error(error: StoreError) -> ApiError {
    match &error {
        StoreError::NoSession(_) | StoreError::NoRun(_) => ApiError::NotFound(error.to_string()),
        StoreError::Ambiguous { .. } => ApiError::BadRequest(error.to_string()),
        StoreError::Running { .. } => ApiError::Conflict(error.to_string()),
        _ => ApiError::internal(error),
    }
}

/// A session error as the API answers it.
fn session_error(error: SessionError) -> ApiError {
    match error {
        SessionError::Store(error) => store_error(error),
        SessionError::Running(id) => {
            ApiError::Conflict(format!("session {id} has a run going in another process"))
        }
        SessionError::Factory(error) => ApiError::BadRequest(error.to_string()),
        other => ApiError::internal(other),
    }
}
