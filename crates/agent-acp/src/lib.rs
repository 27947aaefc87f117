// Why one file past 700 lines: the agent's JSON-RPC methods (initialize, session/new, load,
// list, prompt, cancel) act on one shared state — its sessions, the outbox to the editor, the
// pending cancels, the sessions closed while idle — and read best together; the wire, the
// updates, permissions, modes and options, editor files, MCP servers and prompt blocks are
// modules of their own.

//! # agent-acp — openmanus in the editor
//!
//! The agent as an [Agent Client Protocol](https://agentclientprotocol.com) agent: an editor
//! (Zed, JetBrains IDEs, Neovim) starts `openmanus acp` and speaks JSON-RPC with it over
//! standard input and output (protocol v1, one JSON-RPC message per line: [`rpc`]).
//!
//! * `initialize` answers the capabilities this agent really has: text, images, resource links
//!   and embedded resources in prompts.
//! * `session/new` starts a session of the configured agent kind with the editor's `cwd` as its
//!   workspace (recorded in the session store when one is given).
//! * `session/prompt` runs the prompt and streams the run as updates ([`updates`]): the model's
//!   text as `agent_message_chunk`, each tool call as `tool_call` / `tool_call_update` with its
//!   kind, the file it names and, for an edit, the diff; it answers with a stop reason that
//!   tells `end_turn`, `max_turn_requests` (out of steps), `max_tokens` (a budget reached),
//!   `refusal` (the model declined) and `cancelled` apart. A run that fails is a JSON-RPC
//!   error.
//! * `session/request_permission` is how the approval policy asks ([`permission`]).
//! * `session/list` and `session/load` (the history replayed as updates) from the store; the
//!   editor's `mcpServers` ([`mcp`]); the file tool through the editor's `fs/*` ([`files`]);
//!   the approval policy as the session's modes (`session/set_mode`) and, as configuration
//!   options (`session/set_config_option`), the approval policy and the agent kind that
//!   continues the conversation (`modes`).
//! * `session/cancel` cancels the run: its tool calls are stopped with their processes, and the
//!   prompt answers `cancelled`.
//!
//! Standard output carries the protocol only; logs go to standard error. A malformed request
//! gets a JSON-RPC error and the connection stays usable. The agent never reads the terminal:
//! a question to the person (`ask_human`) is answered "nobody".
//!
//! The protocol is written here, on `serde_json`, not on the `agent-client-protocol` crate: that
//! crate turns on `serde_json`'s `preserve_order` feature, and cargo unifies features across the
//! build, so every JSON the `openmanus` binary writes (journals, `--json`, the HTTP API, A2A,
//! NATS) would change its key order. The official TypeScript SDK, which checks every message
//! against the protocol's schema, is the test peer.

pub mod files;
pub mod mcp;
mod modes;
pub mod permission;
mod prompt;
pub mod rpc;
pub mod updates;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use agent_config::ApprovalPolicy;
use agent_core::AgentEvent;
use agent_session::{Canceller, Session, Target};
use agent_store::Store;
use agents::AgentFactory;
use agents::permissions::ApprovalSwitch;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncWrite};
use tracing::{info, warn};

use crate::files::{EditorFiles, EditorFs};
use crate::permission::{Asking, EditorInput};
use crate::prompt::{prompt_images, prompt_text};
use crate::rpc::{Incoming, Outbox, RpcError, code};
use crate::updates::{PlanTracker, Translator, stop_reason};

/// The protocol version spoken.
pub const PROTOCOL_VERSION: u64 = 1;

/// How many sessions stay open at most. Editors open a session per thread and never say when
/// one is done: past this many, the least recently used idle session of the store is closed
/// (its agent, MCP servers, browser and processes go) and opened again from the store, its
/// memory restored, when the editor prompts it again.
pub const MAX_OPEN_SESSIONS: usize = 8;

/// Why the agent stopped serving.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// Standard input could not be read.
    #[error("reading the editor's messages: {0}")]
    Read(#[from] std::io::Error),
}

/// What the ACP agent serves: sessions of `target` (an agent kind, or the planning flow), built
/// by `factory` (its workspace replaced by each session's `cwd`), recorded in `store` when there
/// is one.
pub struct AcpAgent {
    factory: AgentFactory,
    target: Target,
    store: Option<Store>,
    sessions: Mutex<HashMap<String, Arc<Slot>>>,
    /// What the editor can do with files (said at `initialize`).
    fs: Mutex<EditorFs>,
    /// The ids of the sessions being loaded (not yet in `sessions`).
    loading: Mutex<std::collections::HashSet<String>>,
    /// The sessions closed for being idle (or whose agent could not be switched), with what
    /// the editor had given them: a prompt opens them again.
    closed: Mutex<HashMap<String, Closed>>,
    /// A clock of uses: each session's last prompt or opening takes the next tick.
    ticks: std::sync::atomic::AtomicU64,
}

/// One session of the editor.
struct Slot {
    session: tokio::sync::Mutex<Session>,
    cancel: Arc<PendingCancel>,
    /// Its mode: the approval policy.
    approval: ApprovalSwitch,
    /// The editor's MCP servers it was opened with.
    servers: Vec<agent_config::McpServerConfig>,
    /// Whether the store keeps it (only such a session is closed when idle: it can be opened
    /// again).
    recorded: bool,
    /// When it was last used (a tick of [`AcpAgent::ticks`]).
    used: std::sync::atomic::AtomicU64,
}

/// What a session closed while the editor still knows it keeps for its reopening.
#[derive(Clone)]
struct Closed {
    /// The editor's MCP servers it was opened with.
    servers: Vec<agent_config::McpServerConfig>,
    /// Its mode (approval policy) then.
    approval: ApprovalPolicy,
}

/// A session's cancellation, a cancel included that came while its prompt had started but its
/// run had not armed its token yet (the store's write, the workspace's snapshot): kept, and
/// carried out at the run's first event.
struct PendingCancel {
    canceller: Canceller,
    /// A prompt is under way (its answer still to come).
    prompting: std::sync::atomic::AtomicBool,
    /// A cancel came before the run could take it.
    pending: std::sync::atomic::AtomicBool,
}

impl PendingCancel {
    fn new(canceller: Canceller) -> Self {
        Self {
            canceller,
            prompting: std::sync::atomic::AtomicBool::new(false),
            pending: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Cancels the run, or keeps the cancel for the run about to start; whether the run (now
    /// or soon) is cancelled.
    fn cancel(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        if self.canceller.cancel() {
            return true;
        }
        if self.prompting.load(SeqCst) {
            self.pending.store(true, SeqCst);
            // The run may have armed its token in between.
            if self.canceller.cancel() {
                self.pending.store(false, SeqCst);
            }
            return true;
        }
        false
    }

    /// At each event of the run: a cancel kept for it is carried out.
    fn carry_out(&self) {
        if self
            .pending
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            self.canceller.cancel();
        }
    }

    /// A prompt is under way: a cancel from now on is kept until its run takes it.
    fn start(&self) {
        self.prompting
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The prompt has been answered: a cancel kept for it goes with it.
    fn finish(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.prompting.store(false, SeqCst);
        self.pending.store(false, SeqCst);
    }
}

/// `session/new`'s parameters.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NewSession {
    cwd: PathBuf,
    #[serde(default)]
    mcp_servers: Vec<Value>,
}

/// `session/prompt`'s parameters.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Prompt {
    session_id: String,
    prompt: Vec<Value>,
}

/// `session/load`'s parameters.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LoadSession {
    session_id: String,
    #[serde(default)]
    mcp_servers: Vec<Value>,
}

/// `session/list`'s parameters.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ListSessions {
    #[serde(default)]
    cwd: Option<PathBuf>,
}

/// `session/cancel`'s parameters.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Cancel {
    session_id: String,
}

fn params<T: for<'de> Deserialize<'de>>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|error| RpcError::invalid_params(error.to_string()))
}

impl AcpAgent {
    /// An agent serving sessions of `target` built by `factory`, recorded in `store`. A flow's
    /// plan goes to the editor as `plan` updates.
    #[must_use]
    pub fn new(factory: AgentFactory, target: Target, store: Option<Store>) -> Self {
        Self {
            factory,
            target,
            store,
            sessions: Mutex::default(),
            closed: Mutex::default(),
            ticks: std::sync::atomic::AtomicU64::new(0),
            fs: Mutex::default(),
            loading: Mutex::default(),
        }
    }

    /// Serves the editor on standard input and output until it closes standard input.
    ///
    /// # Errors
    ///
    /// Standard input could not be read.
    pub async fn serve_stdio(self) -> Result<(), AcpError> {
        let stdin = tokio::io::BufReader::new(tokio::io::stdin());
        self.serve(stdin, tokio::io::stdout()).await
    }

    /// Serves the editor whose messages come from `reader` and whose answers go to `writer`,
    /// until `reader` ends; then cancels what still runs and closes every session.
    ///
    /// # Errors
    ///
    /// `reader` could not be read.
    pub async fn serve(
        self,
        reader: impl AsyncBufRead + Unpin,
        writer: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Result<(), AcpError> {
        let agent = Arc::new(self);
        let (outbox, outgoing) = Outbox::new();
        let writer = tokio::spawn(rpc::write_all(writer, outgoing));
        let mut tasks = tokio::task::JoinSet::new();
        let mut reader = reader;
        let read = loop {
            let line = match rpc::read_line(&mut reader).await {
                Ok(rpc::Line::Text(line)) => line,
                Ok(rpc::Line::End) => break Ok(()),
                Ok(rpc::Line::Bad(error)) => {
                    outbox.fail(Value::Null, &error);
                    continue;
                }
                Err(error) => break Err(error),
            };
            if line.trim().is_empty() {
                continue;
            }
            match rpc::parse(&line) {
                Incoming::Request { id, method, params } => {
                    if method == "session/prompt" {
                        agent.expect_prompt(&params);
                    }
                    let (agent, outbox) = (Arc::clone(&agent), outbox.clone());
                    tasks.spawn(async move {
                        // A request that panics is still answered.
                        let answered =
                            std::panic::AssertUnwindSafe(agent.request(&method, params, &outbox));
                        match futures::FutureExt::catch_unwind(answered).await {
                            Ok(Ok(result)) => outbox.respond(id, result),
                            Ok(Err(error)) => outbox.fail(id, &error),
                            Err(_) => outbox.fail(
                                id,
                                &RpcError::internal(format!("{method} failed unexpectedly")),
                            ),
                        }
                    });
                }
                Incoming::Notification { method, params } => agent.notification(&method, params),
                Incoming::Response { id, result } => outbox.deliver(&id, result),
                Incoming::Invalid(id, error) => outbox.fail(id, &error),
            }
            // Forget the requests already answered.
            while tasks.try_join_next().is_some() {}
        };
        // The editor has gone: stop what runs, let the requests under way answer, close.
        agent.cancel_all();
        outbox.abandon_requests();
        while tasks.join_next().await.is_some() {}
        agent.close_all().await;
        drop(outbox);
        let _ = writer.await;
        read.map_err(AcpError::from)
    }

    /// Answers one request.
    async fn request(
        &self,
        method: &str,
        params: Value,
        outbox: &Outbox,
    ) -> Result<Value, RpcError> {
        match method {
            "initialize" => Ok(self.initialize(&params)),
            "session/new" => self.new_session(self::params(params)?, outbox).await,
            "session/load" => self.load_session(self::params(params)?, outbox).await,
            "session/list" if params.is_null() => self.list_sessions(ListSessions::default()).await,
            "session/list" => self.list_sessions(self::params(params)?).await,
            "session/set_mode" => self.set_mode(self::params(params)?, outbox).await,
            "session/set_config_option" => {
                self.set_config_option(self::params(params)?, outbox).await
            }
            "session/prompt" => self.prompt(self::params(params)?, outbox).await,
            other => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        }
    }

    /// The answer to `initialize`: protocol v1, what prompts may hold, who we are; loading and
    /// listing sessions when there is a store to take them from.
    fn initialize(&self, params: &Value) -> Value {
        let fs = &params["clientCapabilities"]["fs"];
        *lock(&self.fs) = EditorFs {
            read: fs["readTextFile"] == true,
            write: fs["writeTextFile"] == true,
        };
        let stored = self.store.is_some();
        let mut capabilities = json!({
            "loadSession": stored,
            "promptCapabilities": { "image": true, "audio": false, "embeddedContext": true },
            "mcpCapabilities": { "http": true, "sse": true },
        });
        if stored {
            capabilities["sessionCapabilities"] = json!({ "list": {} });
        }
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": capabilities,
            "agentInfo": { "name": "openmanus", "version": env!("CARGO_PKG_VERSION") },
            "authMethods": [],
        })
    }

    /// Takes one notification; the unknown ones are ignored, as the protocol says.
    fn notification(&self, method: &str, params: Value) {
        match method {
            "session/cancel" => match self::params::<Cancel>(params) {
                Ok(cancel) => self.cancel(&cancel.session_id),
                Err(error) => warn!(%error.message, "a session/cancel without a session"),
            },
            other => info!(method = other, "notification ignored"),
        }
    }

    /// Starts a session in the editor's directory: its questions go to the editor, its events
    /// become updates as they are emitted (so an update and a question about the same call
    /// reach the editor in order).
    async fn new_session(&self, request: NewSession, outbox: &Outbox) -> Result<Value, RpcError> {
        let cwd = request.cwd;
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(RpcError::invalid_params(format!(
                "cwd must be an absolute path to a directory: {}",
                cwd.display()
            )));
        }
        let servers = mcp::servers(&request.mcp_servers)?;
        let asking = Arc::new(Mutex::new(Asking::default()));
        let approval = ApprovalSwitch::new(self.factory.config().permissions.approval);
        let factory = self.session_factory(&cwd, servers.clone(), outbox, &asking, &approval);
        let target = self.target;
        let session = match &self.store {
            Some(store) => {
                Session::start_recorded(&factory, target, store, json!({"via": "acp"})).await
            }
            None => Session::start(&factory, target).await,
        }
        .map_err(|error| RpcError::internal(format!("cannot start the agent: {error}")))?;
        let id = session
            .session_id()
            .map_or_else(unrecorded_id, str::to_owned);
        info!(session = %id, cwd = %cwd.display(), "ACP session started");
        let mut answer = self.session_state(target, approval.get());
        answer["sessionId"] = json!(id);
        self.keep(session, &id, outbox, &asking, approval, servers)
            .await;
        Ok(answer)
    }

    /// The factory of a session in `workspace`: the editor's MCP servers added, its questions
    /// and (where the editor offers it) its files through the editor.
    fn session_factory(
        &self,
        workspace: &std::path::Path,
        servers: Vec<agent_config::McpServerConfig>,
        outbox: &Outbox,
        asking: &Arc<Mutex<Asking>>,
        approval: &ApprovalSwitch,
    ) -> AgentFactory {
        let input = EditorInput::new(outbox.clone(), Arc::clone(asking));
        let mut factory = self
            .factory
            .clone()
            .with_workspace(workspace)
            .with_more_mcp_servers(servers)
            .with_human_input(Arc::new(input))
            .with_approval_switch(approval.clone());
        let fs = *lock(&self.fs);
        if fs.any() {
            let files = EditorFiles::new(outbox.clone(), Arc::clone(asking), fs);
            factory = factory.with_file_operator(Arc::new(files));
        }
        factory
    }

    /// Keeps a started session: its questions know it, its events go out as updates. Past
    /// [`MAX_OPEN_SESSIONS`], the least recently used idle ones are closed.
    async fn keep(
        &self,
        session: Session,
        id: &str,
        outbox: &Outbox,
        asking: &Arc<Mutex<Asking>>,
        approval: ApprovalSwitch,
        servers: Vec<agent_config::McpServerConfig>,
    ) {
        lock(asking).session = Some(id.to_owned());
        let recorded = session.session_id().is_some();
        let cancel = Arc::new(PendingCancel::new(session.canceller()));
        session.events().subscribe_with(updates_sink(
            id.to_owned(),
            outbox.clone(),
            Arc::clone(asking),
            Arc::clone(&cancel),
        ));
        let slot = Slot {
            cancel,
            session: tokio::sync::Mutex::new(session),
            approval,
            servers,
            recorded,
            used: std::sync::atomic::AtomicU64::new(self.tick()),
        };
        lock(&self.sessions).insert(id.to_owned(), Arc::new(slot));
        lock(&self.closed).remove(id);
        self.close_over_limit(id).await;
    }

    /// The next tick of the clock of uses.
    fn tick(&self) -> u64 {
        self.ticks.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }

    /// Closes the least recently used idle recorded sessions while more than
    /// [`MAX_OPEN_SESSIONS`] are open. A session is idle when nothing but the map holds it (no
    /// prompt, no cancel, no question under way): chosen under the map's lock, which every
    /// other holder goes through, so it is closed whole. `kept`, the session just opened, stays.
    async fn close_over_limit(&self, kept: &str) {
        let closing: Vec<(String, Slot)> = {
            let mut sessions = lock(&self.sessions);
            let excess = sessions.len().saturating_sub(MAX_OPEN_SESSIONS);
            let mut idle: Vec<(u64, String)> = sessions
                .iter()
                .filter(|(id, slot)| {
                    slot.recorded && Arc::strong_count(slot) == 1 && id.as_str() != kept
                })
                .map(|(id, slot)| {
                    let used = slot.used.load(std::sync::atomic::Ordering::SeqCst);
                    (used, id.clone())
                })
                .collect();
            idle.sort_unstable();
            idle.into_iter()
                .take(excess)
                .filter_map(|(_, id)| {
                    let slot = sessions.remove(&id)?;
                    Arc::try_unwrap(slot).ok().map(|slot| (id, slot))
                })
                .collect()
        };
        for (id, slot) in closing {
            info!(session = %id, "closing an idle ACP session (it opens again when prompted)");
            let closed = Closed {
                servers: slot.servers,
                approval: slot.approval.get(),
            };
            lock(&self.closed).insert(id, closed);
            if let Err(error) = slot.session.into_inner().close().await {
                warn!(%error, "cannot close an idle ACP session");
            }
        }
    }

    /// The open session `id`, or the session closed for being idle opened again from the
    /// store (its memory restored, its history not replayed: the editor has it).
    async fn open_slot(&self, id: &str, outbox: &Outbox) -> Result<Arc<Slot>, RpcError> {
        if let Ok(slot) = self.slot(id) {
            return Ok(slot);
        }
        let (Some(store), Some(closed)) = (&self.store, lock(&self.closed).get(id).cloned()) else {
            return Err(no_session(id));
        };
        let reserved = lock(&self.loading).insert(id.to_owned());
        if !reserved {
            return Err(RpcError::invalid_params(format!(
                "session {id} is being opened"
            )));
        }
        let opened = self.resume(id, closed, store, outbox, false).await;
        lock(&self.loading).remove(id);
        opened?;
        info!(session = %id, "an idle ACP session opened again");
        self.slot(id)
    }

    /// `session/load`: continues a stored session (the agent gets its memory back) after
    /// replaying its history as updates: each prompt as `user_message_chunk`, the replies and
    /// tool calls as they went out live.
    async fn load_session(&self, request: LoadSession, outbox: &Outbox) -> Result<Value, RpcError> {
        let store = self.store.as_ref().ok_or_else(|| {
            RpcError::new(
                code::METHOD_NOT_FOUND,
                "session/load: the session store is off",
            )
        })?;
        let id = request.session_id;
        // Reserved until it is kept (or the load failed): a second load of it is refused.
        let reserved = {
            let open = lock(&self.sessions).contains_key(&id);
            !open && lock(&self.loading).insert(id.clone())
        };
        if !reserved {
            return Err(RpcError::invalid_params(format!(
                "session {id} is already open"
            )));
        }
        let loaded = self
            .load_reserved(&id, request.mcp_servers, store, outbox)
            .await;
        lock(&self.loading).remove(&id);
        loaded
    }

    /// [`Self::load_session`] of a reserved id: resumed first (so that a session that cannot be
    /// resumed replays nothing), then its history replayed, then kept.
    async fn load_reserved(
        &self,
        id: &str,
        mcp_servers: Vec<Value>,
        store: &Store,
        outbox: &Outbox,
    ) -> Result<Value, RpcError> {
        let closed = Closed {
            servers: mcp::servers(&mcp_servers)?,
            approval: self.factory.config().permissions.approval,
        };
        self.resume(id, closed, store, outbox, true).await
    }

    /// Resumes the stored session `id` with the editor's MCP servers and the mode of
    /// `given`, replaying its history as updates first when `replay`, and keeps it.
    async fn resume(
        &self,
        id: &str,
        given: Closed,
        store: &Store,
        outbox: &Outbox,
        replay: bool,
    ) -> Result<Value, RpcError> {
        let Closed { servers, approval } = given;
        let record = store.session(id).await.map_err(|_| no_session(id))?;
        let asking = Arc::new(Mutex::new(Asking::default()));
        let approval = ApprovalSwitch::new(approval);
        let factory = self.session_factory(
            &record.workspace,
            servers.clone(),
            outbox,
            &asking,
            &approval,
        );
        let session = Session::resume(&factory, store, id)
            .await
            .map_err(|error| RpcError::internal(format!("cannot resume the session: {error}")))?;
        // The history, as the protocol asks, before the answer; then the session is live.
        let mut translator = Translator::replaying();
        let mut after = None;
        // Pages of history while there is more (none when it is not replayed).
        let mut more = replay;
        while more {
            let page = store
                .events_after(id, after, 500)
                .await
                .map_err(|error| RpcError::internal(error.to_string()))?;
            let full = page.len() == 500;
            for stored in page {
                after = Some(stored.id);
                if stored.kind != agent_store::EventKind::Agent {
                    continue;
                }
                let Ok(event) = serde_json::from_value::<AgentEvent>(stored.data) else {
                    continue;
                };
                for update in translator.updates(&event) {
                    outbox.notify(
                        "session/update",
                        json!({ "sessionId": id, "update": update }),
                    );
                }
            }
            more = full;
        }
        info!(session = %id, "ACP session loaded");
        let answer = self.session_state(session.target(), approval.get());
        self.keep(session, id, outbox, &asking, approval, servers)
            .await;
        Ok(answer)
    }

    /// `session/list`: the stored sessions, newest first; those in `cwd` only when it is given.
    async fn list_sessions(&self, request: ListSessions) -> Result<Value, RpcError> {
        let store = self.store.as_ref().ok_or_else(|| {
            RpcError::new(
                code::METHOD_NOT_FOUND,
                "session/list: the session store is off",
            )
        })?;
        let records = store
            .list_sessions()
            .await
            .map_err(|error| RpcError::internal(error.to_string()))?;
        let sessions: Vec<Value> = records
            .iter()
            .filter(|r| request.cwd.as_ref().is_none_or(|cwd| *cwd == r.workspace))
            .map(|r| {
                let cwd = r.workspace.to_string_lossy();
                let mut info = json!({ "sessionId": r.id, "cwd": cwd });
                if !r.title.is_empty() {
                    info["title"] = json!(r.title);
                }
                if let Some(at) = chrono::DateTime::from_timestamp_millis(r.updated_at) {
                    info["updatedAt"] =
                        json!(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
                }
                info
            })
            .collect();
        Ok(json!({ "sessions": sessions }))
    }

    /// Runs a prompt (its events go out as `session/update` notifications as they happen);
    /// answers with how it ended.
    async fn prompt(&self, request: Prompt, outbox: &Outbox) -> Result<Value, RpcError> {
        let id = request.session_id;
        let slot = self.open_slot(&id, outbox).await?;
        slot.used
            .store(self.tick(), std::sync::atomic::Ordering::SeqCst);
        let Ok(mut session) = slot.session.try_lock() else {
            return Err(RpcError::new(
                code::INVALID_REQUEST,
                "this session is already running a prompt; cancel it first",
            ));
        };
        // Marked when the request was read ([`AcpAgent::expect_prompt`]): a cancel since then
        // is kept for the run.
        slot.cancel.start();
        let mut text = prompt_text(&request.prompt);
        let images = match prompt_images(&request.prompt) {
            Ok(images) if !text.trim().is_empty() => images,
            // Images alone (the agent advertises `image`): the task is to look at them.
            Ok(images) if !images.is_empty() => {
                IMAGES_ONLY.clone_into(&mut text);
                images
            }
            Ok(_) => {
                slot.cancel.finish();
                return Err(RpcError::invalid_params("the prompt has no text"));
            }
            Err(error) => {
                slot.cancel.finish();
                return Err(error);
            }
        };
        // A flow's plan, as its events come (the agents' events go out as they are emitted).
        let mut flow = session.flow_events();
        let mut plan = PlanTracker::new();
        let send_plan = |plan: &mut PlanTracker, event: &agents::flow::FlowEvent| {
            let event = serde_json::to_value(event).unwrap_or_default();
            if let Some(update) = plan.update(&event) {
                outbox.notify(
                    "session/update",
                    json!({ "sessionId": id, "update": update }),
                );
            }
        };
        let report = {
            let run = session.run_with_images(&text, images);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    biased;
                    Some(event) = flow.recv() => {
                        slot.cancel.carry_out();
                        send_plan(&mut plan, &event);
                    }
                    report = &mut run => break report,
                }
            }
        };
        slot.cancel.finish();
        while let Ok(event) = flow.try_recv() {
            send_plan(&mut plan, &event);
        }
        let report = report.map_err(|error| RpcError::internal(error.to_string()))?;
        match stop_reason(report.ending()) {
            Some(reason) => Ok(json!({ "stopReason": reason })),
            None => Err(RpcError::internal(format!(
                "the run failed: {}",
                report.answer.as_deref().unwrap_or(&report.text)
            ))),
        }
    }

    /// The open session `id`.
    fn slot(&self, id: &str) -> Result<Arc<Slot>, RpcError> {
        lock(&self.sessions)
            .get(id)
            .cloned()
            .ok_or_else(|| no_session(id))
    }

    /// A prompt for a session was read: from now on a cancel of the session is kept for its run,
    /// whenever the run gets to start (the prompt is answered in a task of its own).
    fn expect_prompt(&self, params: &Value) {
        if let Some(slot) = params["sessionId"]
            .as_str()
            .and_then(|id| lock(&self.sessions).get(id).cloned())
            && slot.session.try_lock().is_ok()
        {
            slot.cancel.start();
        }
    }

    /// Cancels the session's run, if one is running.
    fn cancel(&self, id: &str) {
        if let Some(slot) = lock(&self.sessions).get(id) {
            let cancelled = slot.cancel.cancel();
            info!(session = %id, cancelled, "ACP cancel");
        }
    }

    fn cancel_all(&self) {
        for slot in lock(&self.sessions).values() {
            slot.cancel.cancel();
        }
    }

    /// Closes every session (their journals and processes).
    async fn close_all(&self) {
        let slots: Vec<Arc<Slot>> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        for slot in slots {
            match Arc::try_unwrap(slot) {
                Ok(slot) => {
                    if let Err(error) = slot.session.into_inner().close().await {
                        warn!(%error, "cannot close an ACP session");
                    }
                }
                // A prompt's task still holds it: its session is dropped with the task (its
                // processes with it), not closed.
                Err(_) => warn!("an ACP session still in use at the end is not closed"),
            }
        }
    }
}

/// The session's events as `session/update` notifications, sent as each is emitted; the call
/// that runs is noted for the questions about it.
fn updates_sink(
    session: String,
    outbox: Outbox,
    asking: Arc<Mutex<Asking>>,
    cancel: Arc<PendingCancel>,
) -> agent_core::EventSink {
    let translator = Mutex::new(Translator::new());
    Arc::new(move |event: &AgentEvent| {
        cancel.carry_out();
        match event {
            AgentEvent::ToolCallStarted { call, .. } => {
                // Its title as the editor shows it: the question about it does not rename it.
                lock(&asking).call = Some((call.id.clone(), updates::call_title(call)));
            }
            AgentEvent::ToolCallFinished { .. } => lock(&asking).call = None,
            _ => {}
        }
        for update in lock(&translator).updates(event) {
            outbox.notify(
                "session/update",
                json!({ "sessionId": session, "update": update }),
            );
        }
        true
    })
}

/// ACP's "session not found": `-32002` with the id as data.
fn no_session(id: &str) -> RpcError {
    RpcError::new(code::RESOURCE_NOT_FOUND, format!("no session {id}"))
        .with_data(json!({ "sessionId": id }))
}

/// The id of a session the store does not keep: unique in this process.
fn unrecorded_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("acp-{}-{n}", std::process::id())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The task of a prompt that holds images and no text.
const IMAGES_ONLY: &str = "See the attached image.";

/// The examples of this crate's README (what crates.io shows), compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
