//! A2A (Agent2Agent) on `openmanus serve`: the Agent Card at `/.well-known/agent-card.json`
//! (and `/.well-known/agent.json` for older clients), JSON-RPC at `POST /a2a` (and `POST /`,
//! where OpenManus's own A2A server answered).
//!
//! A `contextId` is a session of the [`Hub`]: a message without one starts a session (Manus,
//! unless the message's `metadata.agent` names another kind), a message with one continues
//! that session's conversation (resumed from the store if the server restarted). A task is one
//! run of it, queued like any other; `ask_human` puts the task in `input-required`, and the
//! client's next message to the task is the answer. The task's artifact is the final answer.
//! Both wire dialects are served: protocol 1.0 and 0.2/0.3 (a2a-sdk 0.2.5, OpenManus's pin),
//! told apart by the method name. Tasks are kept in memory while they run and stored at every
//! change (the module `saved`): after a restart, `tasks/get` and `tasks/list` find them in the store (a
//! task its server left unfinished is `failed`).

mod push;
mod saved;
mod task;

use std::collections::HashMap;
use std::convert::Infallible;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use agent_a2a::codec::Method;
use agent_a2a::rpc::{self, A2aErrors, RpcError, code};
use agent_a2a::{
    CardInfo, Dialect, Message, PushConfig, PushOp, Skill, StreamEvent, Task, TaskState, agent_card,
};
use agent_session::Target;
use agents::AgentKind;
use axum::Json;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::error::ApiError;
use crate::hub::Hub;
use crate::live::{Live, TaskError};
use saved::TaskSaver;
pub use task::TaskEntry;

/// How many tasks are kept in memory before the ended ones are forgotten.
const MAX_KEPT_TASKS: usize = 10_000;

/// How long `tasks/cancel` waits for the run to stop before answering.
const CANCEL_PATIENCE: Duration = Duration::from_secs(60);

/// The A2A side of a server.
pub struct A2a {
    hub: Arc<Hub>,
    /// Whether requests need the server's token (the card says so).
    bearer: bool,
    tasks: Mutex<HashMap<String, Arc<TaskEntry>>>,
    /// The latest task of each context.
    latest: Mutex<HashMap<String, Arc<TaskEntry>>>,
    /// Stores the tasks (started at the first task, within the runtime).
    saver: OnceLock<TaskSaver>,
}

/// A task found by id: running here, or only in the store (ended, or left by a server that
/// stopped).
enum Found {
    Here(Arc<TaskEntry>),
    Stored(Arc<Task>),
}

impl Found {
    fn snapshot(&self) -> Task {
        match self {
            Self::Here(entry) => entry.snapshot(),
            Self::Stored(task) => (**task).clone(),
        }
    }
}

impl A2a {
    /// A2A over the sessions of `hub`.
    #[must_use]
    pub fn new(hub: Arc<Hub>, bearer: bool) -> Self {
        Self {
            hub,
            bearer,
            tasks: Mutex::default(),
            latest: Mutex::default(),
            saver: OnceLock::new(),
        }
    }

    /// The task `id`, if it runs here (or ran here since the start).
    #[must_use]
    pub fn task(&self, id: &str) -> Option<Arc<TaskEntry>> {
        lock(&self.tasks).get(id).cloned()
    }

    /// Waits until every task change so far is in the store.
    pub async fn flush(&self) {
        if let Some(saver) = self.saver.get() {
            saver.flush().await;
        }
    }

    /// At shutdown: every task still going here ends `failed` ("the server shut down"), and
    /// everything is stored before the process goes.
    pub async fn shutdown(&self) {
        let going: Vec<Arc<TaskEntry>> = lock(&self.tasks)
            .values()
            .filter(|entry| !entry.state().is_terminal())
            .cloned()
            .collect();
        for entry in going {
            entry.set_state(TaskState::Failed, Some(task::SHUT_DOWN.into()));
        }
        self.flush().await;
    }

    fn saver(&self) -> &TaskSaver {
        self.saver
            .get_or_init(|| TaskSaver::start(self.hub.store().clone()))
    }

    /// The task `id`: here, or in the store.
    async fn find(&self, id: &str) -> Result<Found, RpcError> {
        if let Some(entry) = self.task(id) {
            return Ok(Found::Here(entry));
        }
        let record = self
            .hub
            .store()
            .task(id)
            .await
            .map_err(|error| RpcError::internal(error.to_string()))?
            .filter(|record| record.protocol == saved::PROTOCOL)
            .ok_or_else(|| RpcError::task_not_found(id))?;
        saved::revive(&record, self.saver())
            .map(Found::Stored)
            .map_err(|error| RpcError::internal(format!("stored task {id}: {error}")))
    }

    /// The Agent Card, its URL built from the `Host` the client used.
    ///
    /// # Errors
    ///
    /// The agent cannot be built to learn its tools.
    pub async fn card(&self, host: &str) -> Result<Value, ApiError> {
        let tools = self.hub.tools_of(AgentKind::Manus).await?;
        let skills = tools
            .iter()
            .map(|tool| Skill {
                id: tool.function.name.clone(),
                name: tool.function.name.clone(),
                description: tool.function.description.clone(),
                tags: vec!["tool".into(), "manus".into()],
            })
            .collect();
        Ok(agent_card(&CardInfo {
            name: "OpenManus".into(),
            description: AgentKind::Manus.description().into(),
            version: env!("CARGO_PKG_VERSION").into(),
            url: format!("http://{host}/a2a"),
            streaming: true,
            skills,
            bearer: self.bearer,
            push_notifications: true,
        }))
    }

    /// Answers one JSON-RPC request body.
    pub async fn handle(self: &Arc<Self>, body: &[u8]) -> Response {
        let request = match rpc::Request::parse(body) {
            Ok(request) => request,
            Err((id, error)) => return Json(rpc::failure(&id, &error)).into_response(),
        };
        let id = request.reply_id();
        let Some((dialect, method)) = Dialect::of_method(&request.method) else {
            return Json(rpc::failure(
                &id,
                &RpcError::method_not_found(&request.method),
            ))
            .into_response();
        };
        let params = &request.params;
        let result = match method {
            Method::SendMessage => self.send(dialect, params).await,
            Method::StreamMessage => match self.stream_message(dialect, params).await {
                Ok(stream) => return sse(dialect, id, stream, Until::Pause).into_response(),
                Err(error) => Err(error),
            },
            Method::Resubscribe => match self.resubscribe(params).await {
                Ok(stream) => return sse(dialect, id, stream, Until::End).into_response(),
                Err(error) => Err(error),
            },
            Method::GetTask => self.get(dialect, params).await,
            Method::CancelTask => self.cancel(dialect, params).await,
            Method::ListTasks => self.list(dialect, params).await,
            Method::PushConfig => match PushOp::of_method(&request.method) {
                Some(op) => self.push(dialect, op, params).await,
                None => Err(RpcError::method_not_found(&request.method)),
            },
            Method::ExtendedCard => Err(RpcError::new(
                code::EXTENDED_CARD_NOT_CONFIGURED,
                "this agent has no extended card",
            )),
        };
        let body = match result {
            Ok(result) => rpc::success(&id, result),
            Err(error) => rpc::failure(&id, &error),
        };
        Json(body).into_response()
    }

    /// `message/send`: starts or continues a task; answers when it ends or needs input (or at
    /// once when the client does not block).
    async fn send(self: &Arc<Self>, dialect: Dialect, params: &Value) -> Result<Value, RpcError> {
        let send = dialect.decode_send_params(params)?;
        let push = dialect.decode_send_push(params)?;
        let entry = self.accept(send.message, push).await?;
        if send.blocking {
            let mut state = entry.watch_state();
            let _ = state
                .wait_for(|s| s.is_terminal() || s.is_interrupted())
                .await;
        }
        let task = trimmed(entry.snapshot(), send.history_length);
        Ok(dialect.encode_event(&StreamEvent::Task(task)))
    }

    /// `message/stream`: starts or continues a task and streams it.
    async fn stream_message(
        self: &Arc<Self>,
        dialect: Dialect,
        params: &Value,
    ) -> Result<broadcast::Receiver<StreamEvent>, RpcError> {
        let send = dialect.decode_send_params(params)?;
        let push = dialect.decode_send_push(params)?;
        let (entry, events) = self.accept_subscribed(send.message, push).await?;
        let _ = entry;
        Ok(events)
    }

    /// `tasks/resubscribe`: the events of a task that has not ended, from now on, until it
    /// ends (a task waiting for input stays followed through the answer).
    async fn resubscribe(
        &self,
        params: &Value,
    ) -> Result<broadcast::Receiver<StreamEvent>, RpcError> {
        let query = Dialect::decode_task_query(params)?;
        let found = self.find(&query.id).await?;
        let (events, task) = match &found {
            Found::Here(entry) => (Some(entry.subscribe()), entry.snapshot()),
            Found::Stored(task) => (None, (**task).clone()),
        };
        match events {
            Some(events) if !task.status.state.is_terminal() => {
                Ok(with_first(task, events, Until::End))
            }
            _ => Err(RpcError::unsupported(format!(
                "task {} has ended ({:?}); tasks/get returns it",
                query.id, task.status.state
            ))),
        }
    }

    /// `tasks/get`: the task running here, or the stored one.
    async fn get(&self, dialect: Dialect, params: &Value) -> Result<Value, RpcError> {
        let query = Dialect::decode_task_query(params)?;
        let task = self.find(&query.id).await?.snapshot();
        Ok(dialect.encode_task(&trimmed(task, query.history_length)))
    }

    /// `ListTasks` (1.0): the tasks of this server, stored ones included (oldest first, at most
    /// [`MAX_KEPT_TASKS`]), optionally of one context.
    async fn list(&self, dialect: Dialect, params: &Value) -> Result<Value, RpcError> {
        let context = params["contextId"].as_str();
        let stored = self
            .hub
            .store()
            .tasks(saved::PROTOCOL, context, MAX_KEPT_TASKS)
            .await
            .map_err(|error| RpcError::internal(error.to_string()))?;
        let mut tasks: Vec<Task> = Vec::with_capacity(stored.len());
        let mut seen = std::collections::HashSet::new();
        for record in &stored {
            let task = match self.task(&record.id) {
                Some(entry) => entry.snapshot(),
                None => match saved::revive(record, self.saver()) {
                    Ok(task) => (*task).clone(),
                    Err(error) => {
                        tracing::warn!(task = %record.id, %error, "unreadable stored A2A task");
                        continue;
                    }
                },
            };
            seen.insert(task.id.clone());
            tasks.push(task);
        }
        // Tasks whose first write has not reached the store yet.
        tasks.extend(
            lock(&self.tasks)
                .values()
                .map(|entry| entry.snapshot())
                .filter(|task| !seen.contains(&task.id))
                .filter(|task| context.is_none_or(|c| task.context_id == c)),
        );
        let tasks: Vec<Value> = tasks.iter().map(|task| dialect.encode_task(task)).collect();
        let count = tasks.len();
        Ok(json!({
            "tasks": tasks,
            "nextPageToken": "",
            "pageSize": count,
            "totalSize": count,
        }))
    }

    /// `tasks/cancel`: cancels the run (its processes are stopped) and answers with the task
    /// once it has stopped.
    async fn cancel(&self, dialect: Dialect, params: &Value) -> Result<Value, RpcError> {
        let query = Dialect::decode_task_query(params)?;
        let entry = match self.find(&query.id).await? {
            Found::Here(entry) => entry,
            Found::Stored(_) => {
                return Err(RpcError::new(
                    code::TASK_NOT_CANCELABLE,
                    format!("task {} has already ended", query.id),
                ));
            }
        };
        if entry.state().is_terminal() {
            return Err(RpcError::new(
                code::TASK_NOT_CANCELABLE,
                format!("task {} has already ended", query.id),
            ));
        }
        let live = self.hub.live(&entry.context_id());
        let cancelled = live.as_ref().is_some_and(|live| live.cancel());
        if !cancelled {
            entry.set_state(TaskState::Canceled, Some("cancelled".into()));
        }
        let mut state = entry.watch_state();
        let stopped =
            tokio::time::timeout(CANCEL_PATIENCE, state.wait_for(|s| s.is_terminal())).await;
        if stopped.is_err() {
            return Err(RpcError::internal(
                "the run did not stop in time; it was told to",
            ));
        }
        Ok(dialect.encode_task(&entry.snapshot()))
    }

    /// Takes a message: the answer to a task waiting for input, or a new task.
    async fn accept(
        self: &Arc<Self>,
        message: Message,
        push: Option<PushConfig>,
    ) -> Result<Arc<TaskEntry>, RpcError> {
        self.accept_subscribed(message, push)
            .await
            .map(|(entry, _)| entry)
    }

    /// As [`Self::accept`], with the task's events subscribed before anything happens (the
    /// first event is the task itself). A push notification setting applies to the task from
    /// then on.
    async fn accept_subscribed(
        self: &Arc<Self>,
        message: Message,
        push: Option<PushConfig>,
    ) -> Result<(Arc<TaskEntry>, broadcast::Receiver<StreamEvent>), RpcError> {
        let text = message.joined_text();
        if text.trim().is_empty() {
            return Err(RpcError::invalid_params("the message has no text"));
        }
        // An answer: to the task named, or to the context's task waiting for input.
        let waiting = match (&message.task_id, &message.context_id) {
            (Some(task_id), _) => match self.find(task_id).await? {
                Found::Here(entry) => Some(entry),
                Found::Stored(task) => {
                    return Err(RpcError::unsupported(format!(
                        "task {task_id} has ended ({:?}); send a message without taskId (with \
                         its contextId) to continue the conversation",
                        task.status.state
                    )));
                }
            },
            (None, Some(context)) => lock(&self.latest)
                .get(context)
                .filter(|entry| entry.state() == TaskState::InputRequired)
                .cloned(),
            (None, None) => None,
        };
        if let Some(entry) = waiting {
            if let Some(context) = &message.context_id
                && *context != entry.context_id()
            {
                return Err(RpcError::invalid_params(format!(
                    "task {} belongs to another context",
                    entry.id()
                )));
            }
            if let Some(push) = push {
                self.add_push(&entry, push);
            }
            return self.answer(entry, message, text);
        }
        self.start_task(message, text, push).await
    }

    /// The client's answer to the question of a task in `input-required`.
    fn answer(
        &self,
        entry: Arc<TaskEntry>,
        message: Message,
        text: String,
    ) -> Result<(Arc<TaskEntry>, broadcast::Receiver<StreamEvent>), RpcError> {
        let state = entry.state();
        if state != TaskState::InputRequired {
            return Err(RpcError::unsupported(format!(
                "task {} is {state:?}, not waiting for input; send a message without taskId \
                 (with its contextId) to continue the conversation",
                entry.id()
            )));
        }
        let events = entry.subscribe();
        let answered = self
            .hub
            .live(&entry.context_id())
            .is_some_and(|live| live.answer(text));
        if !answered {
            return Err(RpcError::unsupported(
                "the question is no longer waiting for an answer",
            ));
        }
        entry.add_message(message);
        entry.set_state(TaskState::Working, None);
        Ok((
            Arc::clone(&entry),
            with_first(entry.snapshot(), events, Until::Pause),
        ))
    }

    /// A new task: a run of the message's context (a new session without one).
    async fn start_task(
        self: &Arc<Self>,
        message: Message,
        text: String,
        push: Option<PushConfig>,
    ) -> Result<(Arc<TaskEntry>, broadcast::Receiver<StreamEvent>), RpcError> {
        let live = self.live_for(&message).await?;
        let context = live.id().to_owned();
        let entry = TaskEntry::new(
            uuid::Uuid::new_v4().to_string(),
            context.clone(),
            message,
            self.saver().clone(),
        );
        let events = entry.subscribe();
        // Subscribed before the run is queued: nothing of it is missed.
        let notices = self.hub.stream(&context).subscribe();
        let after = self
            .hub
            .store()
            .last_event_id(&context)
            .await
            .map_err(|error| RpcError::internal(error.to_string()))?
            .unwrap_or(0);
        // The trace of the request (its span continues the caller's) goes with the run.
        let trace = agent_telemetry::context::current_headers();
        live.run_traced(text, trace).map_err(|error| match error {
            TaskError::Busy => RpcError::unsupported(
                "this context is busy with another task; cancel it or wait for it to end",
            ),
            TaskError::Closed => RpcError::internal("the session is closed"),
        })?;
        // After the run is queued (a refused task has no sender to leak), before the task is
        // followed (its first change is still to come).
        if let Some(push) = push {
            self.add_push(&entry, push);
        }
        {
            let mut tasks = lock(&self.tasks);
            if tasks.len() >= MAX_KEPT_TASKS {
                // Ended tasks go first; their sessions stay in the store.
                tasks.retain(|_, task| !task.state().is_terminal());
            }
            tasks.insert(entry.id(), Arc::clone(&entry));
        }
        // Stored once known here and queued: a refused message leaves no task behind.
        entry.save();
        lock(&self.latest).insert(context, Arc::clone(&entry));
        tokio::spawn(task::follow(
            Arc::clone(&self.hub),
            Arc::clone(&entry),
            notices,
            after,
        ));
        Ok((
            Arc::clone(&entry),
            with_first(entry.snapshot(), events, Until::Pause),
        ))
    }

    /// The live session of the message's context, or a new one.
    async fn live_for(&self, message: &Message) -> Result<Arc<Live>, RpcError> {
        if let Some(context) = &message.context_id {
            return self
                .hub
                .ensure_live(context)
                .await
                .map_err(|error| match error {
                    ApiError::NotFound(_) => RpcError::invalid_params(format!(
                        "unknown contextId {context}: leave it out to start a new conversation"
                    )),
                    other => RpcError::internal(other.to_string()),
                });
        }
        let agent = message
            .metadata
            .as_ref()
            .and_then(|m| m["agent"].as_str())
            .unwrap_or("manus");
        let kind = AgentKind::from_str(agent)
            .map_err(|error| RpcError::invalid_params(format!("metadata.agent: {error}")))?;
        self.hub
            .create(Target::Agent(kind), json!({ "agent": agent, "via": "a2a" }))
            .await
            .map_err(|error| RpcError::internal(error.to_string()))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The task with at most `length` messages of history.
fn trimmed(mut task: Task, length: Option<usize>) -> Task {
    if let Some(length) = length {
        let skip = task.history.len().saturating_sub(length);
        task.history.drain(..skip);
    }
    task
}

/// Where a stream ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Until {
    /// When the task ends or waits for the client (`message/stream`).
    Pause,
    /// When the task ends (`tasks/resubscribe`).
    End,
}

/// A receiver whose first event is `task` as it stands, then the task's events.
fn with_first(
    task: Task,
    events: broadcast::Receiver<StreamEvent>,
    until: Until,
) -> broadcast::Receiver<StreamEvent> {
    // A fresh channel carries the snapshot, then forwards the rest.
    let (sender, receiver) = broadcast::channel(256);
    let _ = sender.send(StreamEvent::Task(task));
    tokio::spawn(forward(events, sender, until));
    receiver
}

async fn forward(
    mut events: broadcast::Receiver<StreamEvent>,
    sender: broadcast::Sender<StreamEvent>,
    until: Until,
) {
    loop {
        match events.recv().await {
            Ok(event) => {
                let end = is_final(&event, until);
                if sender.send(event).is_err() || end {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Whether a stream ends after `event`.
fn is_final(event: &StreamEvent, until: Until) -> bool {
    let ends =
        |state: TaskState| state.is_terminal() || (until == Until::Pause && state.is_interrupted());
    match event {
        StreamEvent::Status(update) => ends(update.status.state),
        StreamEvent::Task(task) => ends(task.status.state),
        StreamEvent::Message(_) => true,
        StreamEvent::Artifact(_) => false,
    }
}

/// The SSE response of a stream: each event a JSON-RPC response with the request's id.
fn sse(
    dialect: Dialect,
    id: Value,
    mut events: broadcast::Receiver<StreamEvent>,
    until: Until,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let (sender, receiver) = mpsc::channel::<Event>(64);
    tokio::spawn(async move {
        loop {
            let event = match events.recv().await {
                Ok(event) => event,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            };
            let end = is_final(&event, until);
            let body = rpc::success(&id, dialect.encode_event(&event));
            if sender
                .send(Event::default().data(body.to_string()))
                .await
                .is_err()
                || end
            {
                return;
            }
        }
    });
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (Ok(event), receiver))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
