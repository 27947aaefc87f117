//! An A2A task served: one run of a session (the task's `contextId`), followed from the
//! session's stream. Its state moves with the run — `submitted` while it waits in line,
//! `working` once it started, `input-required` while `ask_human` waits, then `completed` (the
//! final answer as its artifact), `canceled` or `failed` — and every change goes to the task's
//! own broadcast, which `message/stream` and `tasks/resubscribe` forward, and to the store
//! ([`TaskSaver`]).

use std::sync::{Arc, Mutex, PoisonError};

use agent_a2a::{
    Artifact, ArtifactUpdate, Message, Part, PushConfig, Role, StatusUpdate, StreamEvent, Task,
    TaskState, TaskStatus,
};
use agent_store::{EventId, EventKind, RunId, RunState, StoredEvent};
use serde_json::Value;
use tokio::sync::{broadcast, watch};
use tracing::debug;

use super::saved::TaskSaver;
use crate::hub::Hub;
use crate::notice::{Notice, Status};

/// The status message of a task its server stopped, cleanly, before it ended.
pub const SHUT_DOWN: &str = "the server shut down";

/// How many events a slow stream client may fall behind before it misses some.
const EVENTS_CAPACITY: usize = 256;

/// A task and the channels that tell of its changes.
pub struct TaskEntry {
    task: Mutex<Task>,
    run_id: Mutex<Option<RunId>>,
    events: broadcast::Sender<StreamEvent>,
    /// The state, for those waiting on it.
    state: watch::Sender<TaskState>,
    /// Where every change is stored.
    saver: TaskSaver,
    /// Where the client wants to be told of the changes (push notifications).
    push: Mutex<Vec<PushConfig>>,
    /// A sender of push notifications was started.
    pushing: std::sync::atomic::AtomicBool,
}

impl TaskEntry {
    /// A new task in `context_id`, started by `message`, stored by `saver` at every change.
    pub fn new(id: String, context_id: String, message: Message, saver: TaskSaver) -> Arc<Self> {
        let message = message.within(Some(context_id.clone()), Some(id.clone()));
        let task = Task {
            id,
            context_id,
            status: TaskStatus::now(TaskState::Submitted, None),
            artifacts: Vec::new(),
            history: vec![message],
        };
        Arc::new(Self {
            task: Mutex::new(task),
            run_id: Mutex::new(None),
            events: broadcast::channel(EVENTS_CAPACITY).0,
            state: watch::channel(TaskState::Submitted).0,
            saver,
            push: Mutex::default(),
            pushing: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Stores the task as it stands (once it is known to the server; every change after that
    /// is stored by itself).
    pub fn save(&self) {
        let task = self.lock();
        self.saver.save(&task);
    }

    /// Whether a sender of push notifications should start now: the first time only, and not
    /// for a task that has ended (nothing more will be told).
    pub fn start_pushing(&self) -> bool {
        !self.state().is_terminal() && !self.pushing.swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    /// The task as it stands.
    pub fn snapshot(&self) -> Task {
        self.lock().clone()
    }

    /// Its id.
    pub fn id(&self) -> String {
        self.lock().id.clone()
    }

    /// Its context (the session).
    pub fn context_id(&self) -> String {
        self.lock().context_id.clone()
    }

    /// Its state.
    pub fn state(&self) -> TaskState {
        *self.state.borrow()
    }

    /// Its events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<StreamEvent> {
        self.events.subscribe()
    }

    /// Its state, to wait on.
    pub fn watch_state(&self) -> watch::Receiver<TaskState> {
        self.state.subscribe()
    }

    /// Adds the client's `message` (an answer) to the history.
    pub fn add_message(&self, message: Message) {
        let mut task = self.lock();
        let message = message.within(Some(task.context_id.clone()), Some(task.id.clone()));
        task.history.push(message);
        self.saver.save(&task);
    }

    /// Moves to `state` (with the agent's `text` as the status message) and tells the streams;
    /// nothing happens when the task is already in `state` with no new text, or has ended.
    pub fn set_state(&self, state: TaskState, text: Option<String>) {
        let update = {
            let mut task = self.lock();
            if task.status.state.is_terminal() {
                return;
            }
            if task.status.state == state && text.is_none() {
                return;
            }
            let message = text.map(|text| {
                Message::text(Role::Agent, text)
                    .within(Some(task.context_id.clone()), Some(task.id.clone()))
            });
            if let Some(message) = &message
                && (state.is_interrupted() || state.is_terminal())
            {
                task.history.push(message.clone());
            }
            task.status = TaskStatus::now(state, message);
            // Under the lock: the writer gets the changes in their order.
            self.saver.save(&task);
            StatusUpdate {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                status: task.status.clone(),
                is_final: state.is_terminal() || state.is_interrupted(),
            }
        };
        self.state.send_replace(state);
        let _ = self.events.send(StreamEvent::Status(update));
    }

    /// Adds the final answer as the task's artifact and tells the streams.
    fn add_answer(&self, answer: String) {
        let update = {
            let mut task = self.lock();
            let artifact = Artifact {
                artifact_id: format!("{}-answer", task.id),
                name: Some("answer".into()),
                description: Some("the agent's final answer".into()),
                parts: vec![Part::Text(answer)],
            };
            task.artifacts.push(artifact.clone());
            self.saver.save(&task);
            ArtifactUpdate {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                artifact,
                append: false,
                last_chunk: true,
            }
        };
        let _ = self.events.send(StreamEvent::Artifact(update));
    }

    /// The push notification settings.
    pub fn push_configs(&self) -> Vec<PushConfig> {
        self.push
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Adds a push notification setting, or replaces the one with its id.
    pub fn set_push(&self, config: PushConfig) {
        let mut push = self.push.lock().unwrap_or_else(PoisonError::into_inner);
        match push.iter_mut().find(|c| c.id == config.id) {
            Some(slot) => *slot = config,
            None => push.push(config),
        }
    }

    /// Removes the push notification setting `id`; whether there was one.
    pub fn remove_push(&self, id: &str) -> bool {
        let mut push = self.push.lock().unwrap_or_else(PoisonError::into_inner);
        let before = push.len();
        push.retain(|c| c.id != id);
        push.len() != before
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Task> {
        self.task.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the follower has seen of the run.
#[derive(Default)]
struct Seen {
    last: EventId,
    started: bool,
    finished: bool,
}

/// Follows the session's stream until the task's run ends, moving the task along. `notices`
/// must have been subscribed before the run was queued, and `after` is the session's last
/// stored event before it.
pub async fn follow(
    hub: Arc<Hub>,
    entry: Arc<TaskEntry>,
    mut notices: broadcast::Receiver<Notice>,
    after: EventId,
) {
    let session = entry.context_id();
    let mut seen = Seen {
        last: after,
        ..Seen::default()
    };
    let mut closing = hub.closing();
    loop {
        let notice = tokio::select! {
            notice = notices.recv() => notice,
            _ = closing.wait_for(|closing| *closing) => {
                entry.set_state(TaskState::Failed, Some(SHUT_DOWN.into()));
                return;
            }
        };
        match notice {
            Ok(Notice::Stored(event)) => {
                if event.id > seen.last {
                    seen.last = event.id;
                    on_event(&entry, &event, &mut seen);
                }
            }
            Ok(Notice::Status(status)) => {
                on_status(&hub, &entry, &session, &status, &mut seen).await
            }
            Ok(Notice::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => {
                replay(&hub, &entry, &session, &mut seen).await;
            }
            Ok(Notice::Poke(stored)) => {
                if stored > seen.last {
                    replay(&hub, &entry, &session, &mut seen).await;
                }
            }
            Err(broadcast::error::RecvError::Closed) => {
                if !seen.finished {
                    entry.set_state(TaskState::Failed, Some("the session was closed".into()));
                }
                return;
            }
        }
        if seen.finished {
            debug!(task = %entry.id(), "the task's run ended");
            return;
        }
    }
}

/// Reads what the store holds after the last event seen.
async fn replay(hub: &Hub, entry: &TaskEntry, session: &str, seen: &mut Seen) {
    loop {
        let Ok(page) = hub
            .store()
            .events_after(session, Some(seen.last), 500)
            .await
        else {
            return;
        };
        let full = page.len() == 500;
        for event in page {
            seen.last = event.id;
            on_event(entry, &event, seen);
        }
        if !full {
            return;
        }
    }
}

/// A status of the session: a question asked (`input-required`), answered (`working`), or the
/// run over.
async fn on_status(hub: &Hub, entry: &TaskEntry, session: &str, status: &Status, seen: &mut Seen) {
    if let Some(question) = &status.question {
        if entry.state() != TaskState::InputRequired {
            entry.set_state(TaskState::InputRequired, Some(question.clone()));
        }
        return;
    }
    if entry.state() == TaskState::InputRequired && status.busy {
        entry.set_state(TaskState::Working, None);
    }
    if status.busy {
        return;
    }
    // The run is over; its last events may still be on their way to the stream.
    replay(hub, entry, session, seen).await;
    if seen.finished {
        return;
    }
    if let Some(error) = &status.error {
        entry.set_state(TaskState::Failed, Some(error.clone()));
        seen.finished = true;
    } else if !seen.started {
        // Cancelled while it waited in line.
        entry.set_state(
            TaskState::Canceled,
            Some("cancelled before it started".into()),
        );
        seen.finished = true;
    }
}

/// A stored event of the session.
fn on_event(entry: &TaskEntry, event: &StoredEvent, seen: &mut Seen) {
    match event.kind {
        EventKind::RunStarted => {
            seen.started = true;
            *entry.run_id.lock().unwrap_or_else(PoisonError::into_inner) = event.run_id;
            entry.set_state(TaskState::Working, None);
        }
        EventKind::Agent => {
            // A question waiting stays the task's state until it is answered, whatever the
            // events that caught up with it (ask_human's own call, for one).
            if entry.state() == TaskState::InputRequired {
                return;
            }
            if let Some(text) = progress_text(&event.data) {
                entry.set_state(TaskState::Working, Some(text));
            }
        }
        EventKind::Flow => {}
        EventKind::RunFinished => {
            seen.finished = true;
            let data = &event.data;
            let answer = data["answer"].as_str().filter(|a| !a.trim().is_empty());
            let status = data["status"].as_str().unwrap_or_default().to_owned();
            // The store wrote the state; one it does not know (a newer store's) is a failure.
            let state = data["state"]
                .as_str()
                .and_then(|s| s.parse::<RunState>().ok());
            match (state, answer) {
                (Some(RunState::Finished | RunState::MaxSteps), Some(answer)) => {
                    entry.add_answer(answer.to_owned());
                    entry.set_state(TaskState::Completed, None);
                }
                (Some(RunState::Finished), None) => {
                    entry.add_answer(status);
                    entry.set_state(TaskState::Completed, None);
                }
                (Some(RunState::Cancelled), _) => {
                    entry.set_state(TaskState::Canceled, Some(status));
                }
                // The model declined the task: the agent did not take it on.
                (Some(RunState::Refused), _) => {
                    entry.set_state(TaskState::Rejected, Some(status));
                }
                (
                    Some(
                        RunState::MaxSteps
                        | RunState::Failed
                        | RunState::Interrupted
                        | RunState::Running,
                    )
                    | None,
                    _,
                ) => entry.set_state(TaskState::Failed, Some(status)),
            }
        }
    }
}

/// What a working status says about an agent event: the model's thought, or the tool it calls.
fn progress_text(data: &Value) -> Option<String> {
    match data["type"].as_str()? {
        "thought" => data["content"]
            .as_str()
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned),
        "tool_call_started" => data["call"]["function"]["name"]
            .as_str()
            .map(|name| format!("calling the tool {name}")),
        // A tool's own progress (another agent's status over a2a_call): passed on.
        "tool_progress" => data["message"].as_str().map(str::to_owned),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use agent_a2a::{Part, Role};
    use serde_json::json;

    use super::*;

    /// The task a `run_finished` event of this state, answer and status leaves behind: its
    /// state, the text of its status message and the texts of its artifacts.
    fn finish(state: &str, answer: Option<&str>) -> (TaskState, Option<String>, Vec<String>) {
        let entry = TaskEntry::new(
            "t".into(),
            "c".into(),
            Message::text(Role::User, "x"),
            TaskSaver::none(),
        );
        let event = StoredEvent {
            id: 9,
            session_id: "s".into(),
            run_id: Some(1),
            at: 0,
            kind: EventKind::RunFinished,
            data: json!({"state": state, "status": format!("{state} in words"), "answer": answer}),
        };
        let mut seen = Seen::default();
        on_event(&entry, &event, &mut seen);
        assert!(seen.finished);
        let task = entry.snapshot();
        let texts = |parts: &[Part]| -> Vec<String> {
            parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t.clone()),
                    _ => None,
                })
                .collect()
        };
        let message = task.status.message.map(|m| texts(&m.parts).join(""));
        let artifacts = task
            .artifacts
            .iter()
            .flat_map(|a| texts(&a.parts))
            .collect();
        (task.status.state, message, artifacts)
    }

    #[test]
    fn every_run_state_ends_its_task_so() {
        let completed = |answer: &str| (TaskState::Completed, None, vec![answer.to_owned()]);
        assert_eq!(finish("finished", Some("42")), completed("42"));
        // Without an answer, the status in words is the answer of a finished run.
        assert_eq!(finish("finished", None), completed("finished in words"));
        assert_eq!(
            finish("finished", Some("  ")),
            completed("finished in words")
        );
        // Out of steps with an answer on the way: the answer is what the caller gets.
        assert_eq!(
            finish("max_steps", Some("most of it")),
            completed("most of it")
        );
        let failed = |state: &str| (TaskState::Failed, Some(format!("{state} in words")), vec![]);
        for state in [
            "max_steps",
            "failed",
            "interrupted",
            "running",
            "a-newer-state",
            "",
        ] {
            assert_eq!(finish(state, None), failed(state), "{state}");
        }
        assert_eq!(
            finish("cancelled", Some("partial")),
            (
                TaskState::Canceled,
                Some("cancelled in words".to_owned()),
                vec![]
            )
        );
        // A refusal rejects the task, saying what the model said.
        assert_eq!(
            finish("refused", Some("I can't help with that.")),
            (
                TaskState::Rejected,
                Some("refused in words".to_owned()),
                vec![]
            )
        );
    }
}
