//! [`Session`]: one agent (or planning flow) with its workspace, journal, event bus and
//! cancellation, run on one task after another and shut down the same way on every exit path.
//!
//! Why one file past 700 lines: starting, running, cancelling and shutting a session down act on
//! one state (the runner, the journal, the event bus, the recorder, the cancellation) that every
//! exit path must leave the same way; the journal, the recorder and the report are already apart.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent_core::{AgentError, AgentEvent, CancellationToken, EventBus, TokenUsage};
use agent_llm::{ChatModel, LlmError};
use agent_store::{NewSession, RunState, RunSummary, Store, StoreError, StoredEvent};
use agents::flow::{Flow, FlowError, FlowEvent};
use agents::{AgentFactory, AgentKind, BuiltAgent, BuiltFlow, FactoryError, Snapshot};
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::{broadcast, oneshot};
use tracing::warn;

use crate::journal::{Journal, JournalHandle};
use crate::recorder::{EventFeed, Pending, Recorder};
use crate::report::{RunReport, RunResult};

mod switch;

/// What a session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// One agent of this kind.
    Agent(AgentKind),
    /// The planning flow ([`AgentFactory::build_flow`]).
    Flow,
}

impl Target {
    /// The name the journal file carries.
    fn journal_name(self) -> &'static str {
        match self {
            Self::Agent(kind) => kind.agent_name(),
            Self::Flow => "flow",
        }
    }

    /// The name the session store keeps: the agent kind ([`AgentKind::as_str`]: `manus`,
    /// `swe`, `data_analysis`, ...) or `flow`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent(kind) => kind.as_str(),
            Self::Flow => "flow",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Target {
    type Err = agents::UnknownAgentKind;

    /// `flow`, or an agent kind as [`AgentKind`] parses it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().eq_ignore_ascii_case("flow") {
            return Ok(Self::Flow);
        }
        s.parse().map(Self::Agent)
    }
}

/// Why a session could not start or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The agent could not be built.
    #[error(transparent)]
    Factory(#[from] FactoryError),
    /// The journal could not be created or written.
    #[error("the run journal: {0}")]
    Journal(#[source] std::io::Error),
    /// The agent refused to start the run (it is not idle).
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The planning flow failed before it could report an outcome.
    #[error("the flow failed: {0}")]
    Flow(#[from] FlowError),
    /// The task was empty.
    #[error("the task is empty")]
    EmptyTask,
    /// The session store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored session has a run in progress in a live process: it cannot be resumed
    /// beside it.
    #[error("session {0} is running in another process")]
    Running(String),
    /// A stored session names an agent kind this program does not know.
    #[error("the stored session {id} runs `{agent}`, which this program does not know")]
    UnknownTarget {
        /// The session's id.
        id: String,
        /// The agent kind it names.
        agent: String,
    },
}

/// Where a session's record goes.
#[derive(Clone, Copy)]
enum Medium {
    /// A JSONL journal in the workspace (a session kept nowhere else).
    Jsonl,
    /// The session store (the recorder takes the model exchanges too).
    Store,
}

/// Cancels the run in progress of a [`Session`]; cheap to clone, usable from a signal handler
/// or another task while the session runs.
#[derive(Debug, Clone, Default)]
pub struct Canceller {
    current: Arc<Mutex<Option<CancellationToken>>>,
}

impl Canceller {
    /// Cancels the run in progress: the model call or tool in flight is abandoned, every
    /// started tool call gets a result, the run's report says `cancelled`. Returns `false`
    /// when no run was in progress (or it was already cancelled).
    pub fn cancel(&self) -> bool {
        match self.lock().as_ref() {
            Some(token) if !token.is_cancelled() => {
                token.cancel();
                true
            }
            _ => false,
        }
    }

    /// Whether a run is in progress.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.lock().is_some()
    }

    fn set(&self, token: Option<CancellationToken>) {
        *self.lock() = token;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<CancellationToken>> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The subscribers of a flow session's [`FlowEvent`]s.
type FlowSubscribers = Arc<Mutex<Vec<UnboundedSender<FlowEvent>>>>;

enum Runner {
    Agent(BuiltAgent),
    Flow(BuiltFlow),
}

impl Runner {
    async fn shutdown(&mut self) {
        match self {
            Self::Agent(agent) => agent.shutdown().await,
            Self::Flow(flow) => flow.shutdown().await,
        }
    }
}

/// One agent (or the planning flow) and everything around it: the workspace, the journal, the
/// event bus and the cancellation of the run in progress. Several tasks run one after another
/// keep the conversation (and the tools' state, such as the shell's directory). End it with
/// [`Session::close`]; a session dropped without it still stops its agent's processes, in the
/// background.
///
/// ```no_run
/// # async fn demo(config: agent_config::Config) -> Result<(), agent_session::SessionError> {
/// use agent_session::{Session, Target};
/// use agents::{AgentFactory, AgentKind};
///
/// let factory = AgentFactory::new(config).with_workspace("/tmp/work");
/// let mut session = Session::start(&factory, Target::Agent(AgentKind::Swe)).await?;
/// let report = session.run("Write hello.txt").await?;
/// println!("{}", report.answer.unwrap_or_else(|| report.text.clone()));
/// session.close().await?;
/// # Ok(()) }
/// ```
pub struct Session {
    target: Target,
    runner: Option<Runner>,
    workspace: PathBuf,
    /// The JSONL journal of a session kept nowhere else (`None` for a session recorded in the
    /// store, which keeps its model exchanges with everything else).
    journal: Option<Journal>,
    /// Where the models write their requests and replies: the journal, or the recorder.
    entries: JournalHandle,
    /// The recorder's queue, from the build until the recording starts.
    pending: Option<Pending>,
    bus: EventBus,
    flow_subscribers: FlowSubscribers,
    canceller: Canceller,
    warnings: Vec<String>,
    recorder: Option<Recorder>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("target", &self.target)
            .field("workspace", &self.workspace)
            .field("journal", &self.journal.as_ref().map(Journal::path))
            .field("recorded_as", &self.recorder.as_ref().map(Recorder::id))
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Builds the agent (or flow) of `target` with `factory`, opens a journal in the workspace
    /// (`.openmanus/runs/`) and puts the agent on the session's event bus. Every model request
    /// and reply is journaled; retries are reported on the bus.
    ///
    /// # Errors
    ///
    /// The agent cannot be built ([`SessionError::Factory`]) or the journal cannot be created.
    pub async fn start(factory: &AgentFactory, target: Target) -> Result<Self, SessionError> {
        Self::build_with(factory, target, None, Medium::Jsonl).await
    }

    /// [`Session::start`], recorded in `store` as a new session (with `settings`, the
    /// overrides it was created with, kept as JSON): every event, every message of the agent's
    /// memory and every run is written there as it happens ([`Session::recorded_events`]
    /// publishes each event once stored), so the session can be listed, replayed and resumed
    /// after this process ends.
    ///
    /// # Errors
    ///
    /// As [`Session::start`]; the store cannot be written ([`SessionError::Store`]).
    pub async fn start_recorded(
        factory: &AgentFactory,
        target: Target,
        store: &Store,
        settings: Value,
    ) -> Result<Self, SessionError> {
        let mut session = Self::build_with(factory, target, None, Medium::Store).await?;
        let new =
            NewSession::new(target.as_str(), session.workspace.clone()).with_settings(settings);
        let record = store.create_session(new).await?;
        session.record(store.clone(), record.id).await?;
        Ok(session)
    }

    /// Continues the stored session `id` (an id, or the unique start of one): the same agent
    /// kind (or flow), in the same workspace, recorded in the same session. An agent gets its
    /// memory back, made turn-safe ([`Store::restore_memory`]: a tool call the old process
    /// never answered gets the cancelled observation), so the next task continues the
    /// conversation. A flow starts a new plan (its executors keep no memory across tasks).
    ///
    /// `factory` gives the configuration and everything else; its workspace is replaced by the
    /// session's. Apply the session's stored settings ([`agent_store::SessionRecord::settings`], from
    /// [`Store::find_session`]) to it first if they change how agents are built.
    ///
    /// # Errors
    ///
    /// No such session, a session whose run is still in progress in a live process
    /// ([`SessionError::Running`]; a run whose process died is interrupted, not running), an
    /// agent kind this program does not know, or as [`Session::start_recorded`].
    pub async fn resume(
        factory: &AgentFactory,
        store: &Store,
        id: &str,
    ) -> Result<Self, SessionError> {
        let record = store.find_session(id).await?;
        // A run whose process died since the store was opened is interrupted, not running.
        store.mark_interrupted_runs().await?;
        if store
            .runs(&record.id)
            .await?
            .last()
            .is_some_and(|run| run.state == RunState::Running)
        {
            return Err(SessionError::Running(record.id));
        }
        let target: Target = record
            .agent
            .parse()
            .map_err(|_| SessionError::UnknownTarget {
                id: record.id.clone(),
                agent: record.agent.clone(),
            })?;
        let factory = factory.clone().with_workspace(&record.workspace);
        let mut session = Self::build_with(&factory, target, None, Medium::Store).await?;
        if let Some(Runner::Agent(built)) = &mut session.runner {
            let restored = store.restore_memory(&record.id).await?;
            let memory = &mut built.agent_mut().base_mut().memory;
            memory.clear();
            memory.add_messages(restored);
        }
        session.record(store.clone(), record.id).await?;
        Ok(session)
    }

    /// Starts recording into the stored session `id`: the stored memory becomes the agent's
    /// (with the memory's message ids as positions), then every change is recorded.
    async fn record(&mut self, store: Store, id: String) -> Result<(), SessionError> {
        let pending = self.pending.take().unwrap_or_else(Pending::new);
        let recorder = Recorder::start(store.clone(), id.clone(), &self.bus, pending).await?;
        match &mut self.runner {
            Some(Runner::Agent(built)) => {
                let base = built.agent_mut().base_mut();
                base.set_session(Some(id.clone()));
                let memory = &mut base.memory;
                store
                    .replace_messages(&id, memory.ids().iter().copied().zip(memory.messages()))
                    .await?;
                memory.set_observer(Some(recorder.memory_observer()));
            }
            Some(Runner::Flow(built)) => {
                let sink = recorder.flow_sink();
                let subscribers = Arc::clone(&self.flow_subscribers);
                built.flow_mut().set_event_handler(flow_handler(
                    None,
                    subscribers,
                    Some(Box::new(sink)),
                ));
            }
            None => {}
        }
        self.recorder = Some(recorder);
        Ok(())
    }

    /// [`Session::start`] with the models given by `models` instead of the configured clients
    /// (each still journaled, in the shapes of `agent-llm` rather than as wire bodies): how a
    /// [replay](crate::replay) answers every request from a recording.
    pub(crate) async fn start_with_models(
        factory: &AgentFactory,
        target: Target,
        models: &dyn agents::ModelSource,
    ) -> Result<Self, SessionError> {
        Self::build_with(factory, target, Some(models), Medium::Jsonl).await
    }

    async fn build_with(
        factory: &AgentFactory,
        target: Target,
        given: Option<&dyn agents::ModelSource>,
        medium: Medium,
    ) -> Result<Self, SessionError> {
        let workspace = factory.workspace().to_path_buf();
        std::fs::create_dir_all(&workspace).map_err(SessionError::Journal)?;
        let (journal, pending) = match medium {
            Medium::Jsonl => {
                let journal = Journal::create(&workspace, target.journal_name())
                    .map_err(SessionError::Journal)?;
                (Some(journal), None)
            }
            Medium::Store => (None, Some(Pending::new())),
        };
        let entries = match (&journal, &pending) {
            (Some(journal), _) => journal.handle(),
            (None, Some(pending)) => pending.journal(),
            (None, None) => JournalHandle::default(),
        };
        let bus = EventBus::new();
        let models = SessionModels {
            config: factory.config().clone(),
            journal: entries.clone(),
            bus: bus.clone(),
            given,
        };
        let built = match target {
            Target::Agent(kind) => factory.build(kind, &models).await.map(Runner::Agent),
            Target::Flow => factory.build_flow(&models).await.map(Runner::Flow),
        };
        let mut runner = match built {
            Ok(runner) => runner,
            Err(error) => {
                // Nothing ran: the empty journal would only confuse.
                if let Some(journal) = journal {
                    let path = journal.path().to_path_buf();
                    let _ = journal.close().await;
                    let _ = std::fs::remove_file(path);
                }
                return Err(error.into());
            }
        };
        let flow_subscribers = FlowSubscribers::default();
        let (workspace, warnings) = match &mut runner {
            Runner::Agent(built) => {
                built.agent_mut().base_mut().set_event_bus(bus.clone());
                (built.workspace().to_path_buf(), built.warnings().to_vec())
            }
            Runner::Flow(built) => {
                let flow = built.flow_mut();
                for key in flow
                    .agent_keys()
                    .into_iter()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
                {
                    if let Some(agent) = flow.agent_mut(&key) {
                        agent.base_mut().set_event_bus(bus.clone());
                    }
                }
                flow.set_event_handler(flow_handler(
                    journal.as_ref().map(Journal::handle),
                    Arc::clone(&flow_subscribers),
                    None,
                ));
                (built.workspace().to_path_buf(), Vec::new())
            }
        };
        for warning in &warnings {
            warn!(%warning, "while building the agent");
        }
        // The journal's first line says what ran where, as an exported session's does: a
        // replay rebuilds the same agent and moves the recorded workspace to its own.
        if let Some(journal) = &journal {
            journal.handle().write(
                "session",
                json!({"session": {"agent": target.as_str(), "workspace": workspace}}),
            );
        }
        Ok(Self {
            target,
            runner: Some(runner),
            workspace,
            journal,
            entries,
            pending,
            bus,
            flow_subscribers,
            canceller: Canceller::default(),
            warnings,
            recorder: None,
        })
    }

    /// What the session runs.
    #[must_use]
    pub fn target(&self) -> Target {
        self.target
    }

    /// The workspace, as the agent's tools see it.
    #[must_use]
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The journal's path: `None` for a session recorded in the store (which writes no
    /// journal: `sessions export` writes one) and once the session is closed.
    #[must_use]
    pub fn journal_path(&self) -> Option<&Path> {
        self.journal.as_ref().map(Journal::path)
    }

    /// Writes extra entries to the session's journal. A session recorded in the store keeps
    /// only what its models write (requests, replies and errors); other lines are dropped.
    #[must_use]
    pub fn journal(&self) -> JournalHandle {
        self.entries.clone()
    }

    /// The session's event bus: [`EventBus::subscribe`] gets every later event of the agent
    /// (of every executor, for a flow), and of its model client's retries.
    #[must_use]
    pub fn events(&self) -> &EventBus {
        &self.bus
    }

    /// A receiver of the planning flow's own events (plan created, step started and finished);
    /// it never receives anything in an agent session.
    #[must_use]
    pub fn flow_events(&self) -> UnboundedReceiver<FlowEvent> {
        let (sender, receiver) = unbounded_channel();
        if self.target == Target::Flow {
            self.flow_subscribers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(sender);
        }
        receiver
    }

    /// A handle that cancels the run in progress.
    #[must_use]
    pub fn canceller(&self) -> Canceller {
        self.canceller.clone()
    }

    /// What went wrong while building without stopping it (an MCP server that could not be
    /// reached).
    #[must_use]
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The session's id in the store (`None` when it is not recorded).
    #[must_use]
    pub fn session_id(&self) -> Option<&str> {
        self.recorder.as_ref().map(Recorder::id)
    }

    /// The store the session is recorded in (`None` when it is not recorded).
    #[must_use]
    pub fn store(&self) -> Option<&Store> {
        self.recorder.as_ref().map(Recorder::store)
    }

    /// A receiver of every event of the session once it is stored, with its store id, in
    /// order: agent events, flow events, run boundaries (`None` when the session is not
    /// recorded). The ids are the store's, so a client that reconnects replays what it missed
    /// with [`Store::events_after`]. A receiver that falls far behind gets
    /// [`broadcast::error::RecvError::Lagged`] and should replay from the store.
    #[must_use]
    pub fn recorded_events(&self) -> Option<broadcast::Receiver<StoredEvent>> {
        self.recorder.as_ref().map(Recorder::subscribe)
    }

    /// A cloneable handle on the session's stored and live events, for use while the session
    /// runs elsewhere (`None` when the session is not recorded); see [`EventFeed::since`].
    #[must_use]
    pub fn event_feed(&self) -> Option<EventFeed> {
        self.recorder.as_ref().map(Recorder::feed)
    }

    /// The agent of an agent session (`None` for a flow).
    #[must_use]
    pub fn agent(&self) -> Option<&dyn agent_core::Agent> {
        match &self.runner {
            Some(Runner::Agent(built)) => Some(built.agent()),
            _ => None,
        }
    }

    /// [`Session::run`] with images attached to the task: each message (a user message with a
    /// `base64_image`, e.g. [`agent_core::Message::user_message_with_image`]) goes into the
    /// agent's memory just before the task, so the model sees the images with it (a model
    /// without image support gets their captions only, as the LLM client decides).
    ///
    /// # Errors
    ///
    /// As [`Session::run`]; images for a flow are refused ([`SessionError::Agent`]).
    pub async fn run_with_images(
        &mut self,
        task: &str,
        images: Vec<agent_core::Message>,
    ) -> Result<RunReport, SessionError> {
        if task.trim().is_empty() {
            return Err(SessionError::EmptyTask);
        }
        if !images.is_empty() {
            match &mut self.runner {
                Some(Runner::Agent(built)) => {
                    built.agent_mut().base_mut().memory.add_messages(images);
                }
                _ => {
                    return Err(SessionError::Agent(AgentError::step(
                        "images can be attached to an agent's task, not to a flow's",
                    )));
                }
            }
        }
        self.run(task).await
    }

    /// Runs `task` to its end and reports how it went: the outcome, the final answer, the files
    /// created, changed or deleted in the workspace, and the tokens used. The conversation of
    /// earlier tasks is kept.
    ///
    /// # Errors
    ///
    /// An empty task; an agent that cannot start; a flow that fails before it has an outcome.
    /// A run that fails *during* its steps is reported, not returned as an error.
    pub async fn run(&mut self, task: &str) -> Result<RunReport, SessionError> {
        if task.trim().is_empty() {
            return Err(SessionError::EmptyTask);
        }
        // Only a JSONL journal keeps the run's lines: the store records them itself.
        let journal = self.journal.as_ref().map(Journal::handle);
        if let Some(journal) = &journal {
            journal.write("task", json!({ "task": task }));
        }
        let run_id = match &self.recorder {
            Some(recorder) => Some(recorder.begin_run(task).await?),
            None => None,
        };
        let before = snapshot(&self.workspace).await;
        // A recorded session's recorder adds the tokens up as the events are emitted; a journal
        // has a task of its own that writes the events and adds them up.
        let forwarder = match &self.recorder {
            Some(recorder) => {
                recorder.take_usage();
                None
            }
            None => Some(Forwarder::start(&self.bus, journal.clone())),
        };
        let token = CancellationToken::new();
        self.canceller.set(Some(token.clone()));
        let result = match &mut self.runner {
            Some(Runner::Agent(built)) => {
                let agent = built.agent_mut();
                // A finished or failed earlier run leaves the agent ready for the next task.
                if matches!(
                    agent.base().state(),
                    agent_core::AgentState::Finished | agent_core::AgentState::Error
                ) {
                    let _ = agent.base_mut().reset_state();
                }
                agent.base_mut().set_cancellation_token(token);
                agent
                    .run(Some(task.to_owned()))
                    .await
                    .map(RunResult::Agent)
                    .map_err(SessionError::from)
            }
            Some(Runner::Flow(built)) => {
                let flow = built.flow_mut();
                flow.set_cancellation_token(token);
                flow.execute(task)
                    .await
                    .map(RunResult::Flow)
                    .map_err(SessionError::from)
            }
            None => Err(SessionError::Agent(AgentError::step(
                "the session is closed",
            ))),
        };
        self.canceller.set(None);
        let usage = match (forwarder, &self.recorder) {
            (Some(forwarder), _) => forwarder.finish().await,
            (None, Some(recorder)) => recorder.take_usage(),
            (None, None) => TokenUsage::default(),
        };
        let result = match result {
            Ok(result) => result,
            Err(error) => {
                if let Some(journal) = &journal {
                    journal.write("error", json!({ "error": error.to_string() }));
                }
                if let Some(recorder) = &self.recorder {
                    let summary = RunSummary {
                        state: RunState::Failed,
                        status: format!("error: {error}"),
                        answer: None,
                        text: String::new(),
                        text_parts: None,
                        changes: Value::Null,
                        usage,
                    };
                    if let Err(error) = recorder.finish_run(summary).await {
                        warn!(%error, "the run's end could not be recorded");
                    }
                }
                return Err(error);
            }
        };
        let changes = before.changes(&snapshot(&self.workspace).await);
        let mut report = RunReport::new(result, changes, usage);
        report.run_id = run_id;
        if let Some(recorder) = &self.recorder
            && let Err(error) = recorder.finish_run(summary_of(&report)).await
        {
            // The run happened: its report is worth more than the store's copy of its end.
            warn!(%error, "the run's end could not be recorded");
        }
        if let Some(journal) = &journal {
            journal.write(
                "result",
                json!({
                    "status": report.status_text(),
                    "answer": report.answer,
                    "changes": report.changes,
                    "usage": report.usage.as_tally(),
                    "text": report.text,
                }),
            );
        }
        Ok(report)
    }

    /// Ends the session: the agent (every executor of a flow) is shut down — MCP servers
    /// disconnected, browsers closed, processes stopped, the sandbox removed — and the journal
    /// is flushed and closed. Returns the journal's path.
    ///
    /// # Errors
    ///
    /// The journal could not be written.
    pub async fn close(mut self) -> Result<Option<PathBuf>, SessionError> {
        if let Some(mut runner) = self.runner.take() {
            runner.shutdown().await;
        }
        if let Some(recorder) = self.recorder.take() {
            recorder.close().await;
        }
        match self.journal.take() {
            Some(journal) => {
                let path = journal.path().to_path_buf();
                journal.close().await.map_err(SessionError::Journal)?;
                Ok(Some(path))
            }
            None => Ok(None),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Closed sessions have nothing left. Otherwise the agent is shut down in the background
        // (its processes are also killed when their handles drop, whatever happens here).
        if let Some(mut runner) = self.runner.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move { runner.shutdown().await });
        }
    }
}

/// The factory's models: the configured client for each agent, journaled and reporting its
/// retries on the session's bus.
struct SessionModels<'a> {
    config: agent_config::Config,
    journal: JournalHandle,
    bus: EventBus,
    /// Models to use instead of the configured clients (journaled all the same).
    given: Option<&'a dyn agents::ModelSource>,
}

impl agents::ModelSource for SessionModels<'_> {
    fn model(&self, agent: &str) -> Result<Arc<dyn ChatModel>, LlmError> {
        match self.given {
            Some(given) => Ok(Arc::new(crate::JournaledModel::new(
                given.model(agent)?,
                self.journal.clone(),
            ))),
            None => crate::journal::journaled_model(
                self.config.llm_for(agent).clone(),
                Some(&self.bus),
                self.journal.clone(),
            ),
        }
    }
}

/// Writes a run's events to the journal as they happen and adds up its token usage; on
/// [`Forwarder::finish`] it writes what is still queued, so the journal holds every event of
/// the run before its result.
struct Forwarder {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<TokenUsage>,
}

impl Forwarder {
    fn start(bus: &EventBus, journal: Option<JournalHandle>) -> Self {
        let mut events = bus.subscribe();
        let (stop, mut stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut usage = TokenUsage::default();
            let mut record = |event: &AgentEvent| {
                // Streamed text is for live views: the thought that follows carries it whole.
                if event.is_live_only() {
                    return;
                }
                if let Some(call) = event.token_usage() {
                    usage.add_call(&call);
                }
                // An image is in the journal already, in the request that carries it.
                if let Some(journal) = &journal
                    && !matches!(event, AgentEvent::Image { .. })
                {
                    journal.event(event);
                }
            };
            loop {
                tokio::select! {
                    biased;
                    event = events.recv() => match event {
                        Some(event) => record(&event),
                        None => break,
                    },
                    _ = &mut stopped => {
                        while let Ok(event) = events.try_recv() {
                            record(&event);
                        }
                        break;
                    }
                }
            }
            usage
        });
        Self { stop, task }
    }

    async fn finish(self) -> TokenUsage {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}

/// A flow's event handler: each event to the journal, the session's subscribers and, when the
/// session is recorded, the store.
fn flow_handler(
    journal: Option<JournalHandle>,
    subscribers: FlowSubscribers,
    store: Option<Box<dyn Fn(Value) + Send + Sync>>,
) -> Arc<dyn Fn(&FlowEvent) + Send + Sync> {
    Arc::new(move |event: &FlowEvent| {
        if let Some(journal) = &journal {
            journal.write("flow_event", json!({ "event": event }));
        }
        if let Some(store) = &store
            && let Ok(data) = serde_json::to_value(event)
        {
            store(data);
        }
        subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|s| s.send(event.clone()).is_ok());
    })
}

/// What the store keeps of a run's report.
fn summary_of(report: &RunReport) -> RunSummary {
    RunSummary {
        state: report.ending().run_state(),
        status: report.status_text(),
        answer: report.answer.clone(),
        text: report.text.clone(),
        text_parts: text_parts(report),
        changes: serde_json::to_value(&report.changes).unwrap_or(Value::Null),
        usage: report.usage,
    }
}

/// An agent run's result text as `"Step 1: "`, the first step's result, `"\nStep 2: "`, ...
/// and what follows the steps, so that the store keeps each step's result once (its events
/// hold it already); `None` when the text is not made that way (a flow).
fn text_parts(report: &RunReport) -> Option<Vec<String>> {
    let outcome = report.outcome()?;
    let mut parts = Vec::with_capacity(outcome.steps.len() * 2 + 1);
    for (i, step) in outcome.steps.iter().enumerate() {
        let newline = if i == 0 { "" } else { "\n" };
        parts.push(format!("{newline}Step {}: ", step.step));
        parts.push(step.result.clone());
    }
    let steps: usize = parts.iter().map(String::len).sum();
    let tail = report.text.get(steps..)?;
    if !tail.is_empty() {
        parts.push(tail.to_owned());
    }
    (parts.concat() == report.text).then_some(parts)
}

/// Lists the workspace off the async workers (it walks the file tree).
async fn snapshot(workspace: &Path) -> Snapshot {
    let workspace = workspace.to_path_buf();
    tokio::task::spawn_blocking(move || Snapshot::take(&workspace))
        .await
        .unwrap_or_default()
}
