//! A2A tasks kept in the session store, so that a task outlives the process that ran it:
//! `tasks/get` and `tasks/list` after a restart.
//!
//! Every change of a task is sent, as the task then stands, to one writer per server, in the
//! order of the changes; the writer stores the latest state of each task it has been sent
//! (several changes waiting are one write). Storing never holds a run back: a write that fails
//! is logged. A task found in the store and not in memory was run by a process that is gone;
//! one it left unfinished is failed with [`STOPPED`].

use std::sync::Arc;

use agent_a2a::{Dialect, Message, Role, Task, TaskState, TaskStatus};
use agent_store::{Store, TaskRecord};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

/// The protocol's name in the store's `tasks`.
pub const PROTOCOL: &str = "a2a";

/// The status message of a stored task whose server stopped before it ended.
pub const STOPPED: &str = "the server stopped before the task ended";

enum Write {
    Put { task: Box<Task> },
    Push { id: String, settings: Vec<Value> },
    Flush(oneshot::Sender<()>),
}

/// Sends tasks to the store's writer. Cheap to clone; [`TaskSaver::none`] stores nothing.
#[derive(Clone)]
pub struct TaskSaver {
    sender: Option<mpsc::UnboundedSender<Write>>,
}

impl TaskSaver {
    /// A saver writing to `store`, with its writer task (within a Tokio runtime).
    pub fn start(store: Store) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        tokio::spawn(write_all(store, receiver));
        Self {
            sender: Some(sender),
        }
    }

    /// A saver that stores nothing (tests of a task alone).
    #[cfg(test)]
    pub fn none() -> Self {
        Self { sender: None }
    }

    /// Stores `task` as it stands (later, in order with the other changes).
    pub fn save(&self, task: &Task) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(Write::Put {
                task: Box::new(task.clone()),
            });
        }
    }

    /// Stores the push notification settings of the task `id` (after the task).
    pub fn save_push(&self, id: &str, settings: Vec<Value>) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(Write::Push {
                id: id.to_owned(),
                settings,
            });
        }
    }

    /// Waits until everything sent so far is stored (or failed to be).
    pub async fn flush(&self) {
        if let Some(sender) = &self.sender {
            let (done, stored) = oneshot::channel();
            if sender.send(Write::Flush(done)).is_ok() {
                let _ = stored.await;
            }
        }
    }
}

/// The writer: takes what is waiting, keeps the last state of each task, stores it.
async fn write_all(store: Store, mut receiver: mpsc::UnboundedReceiver<Write>) {
    while let Some(first) = receiver.recv().await {
        let mut waiting = vec![first];
        while let Ok(more) = receiver.try_recv() {
            waiting.push(more);
        }
        let mut latest: Vec<Box<Task>> = Vec::new();
        let mut pushes: Vec<(String, Vec<Value>)> = Vec::new();
        let mut flushed = Vec::new();
        for write in waiting {
            match write {
                Write::Put { task } => match latest.iter_mut().find(|t| t.id == task.id) {
                    Some(slot) => *slot = task,
                    None => latest.push(task),
                },
                Write::Push { id, settings } => match pushes.iter_mut().find(|p| p.0 == id) {
                    Some(slot) => slot.1 = settings,
                    None => pushes.push((id, settings)),
                },
                Write::Flush(done) => flushed.push(done),
            }
        }
        for task in latest {
            let state = Dialect::Legacy.state(task.status.state);
            let body = Dialect::V1.encode_task(&task);
            if let Err(error) = store
                .put_task(&task.id, &task.context_id, PROTOCOL, state, &body)
                .await
            {
                warn!(task = %task.id, %error, "cannot store the A2A task");
            }
        }
        // After the tasks: a setting is stored on its task's row.
        for (id, settings) in pushes {
            if let Err(error) = store.set_task_push(&id, &settings).await {
                warn!(task = %id, %error, "cannot store the A2A task's push settings");
            }
        }
        for done in flushed {
            let _ = done.send(());
        }
    }
}

/// The task a stored record holds, as a process that does not run it sees it: one left
/// unfinished is failed (its run went with the process that stopped) and stored so.
///
/// # Errors
///
/// The stored body is not a task.
pub fn revive(record: &TaskRecord, saver: &TaskSaver) -> Result<Arc<Task>, String> {
    let mut task = Dialect::decode_task(&record.body).map_err(|e| e.to_string())?;
    if !task.status.state.is_terminal() {
        let message = Message::text(Role::Agent, STOPPED)
            .within(Some(task.context_id.clone()), Some(task.id.clone()));
        task.history.push(message.clone());
        task.status = TaskStatus::now(TaskState::Failed, Some(message));
        saver.save(&task);
    }
    Ok(Arc::new(task))
}

#[cfg(test)]
mod tests {
    use agent_a2a::{Artifact, Part};

    use super::*;

    fn task(state: TaskState) -> Task {
        let ask = Message::text(Role::User, "Say hi.").within(Some("c".into()), Some("t".into()));
        Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus::now(state, None),
            artifacts: vec![Artifact {
                artifact_id: "t-answer".into(),
                name: Some("answer".into()),
                description: None,
                parts: vec![Part::Text("hi".into())],
            }],
            history: vec![ask],
        }
    }

    fn record(task: &Task) -> TaskRecord {
        TaskRecord {
            id: task.id.clone(),
            session_id: task.context_id.clone(),
            protocol: PROTOCOL.into(),
            state: Dialect::Legacy.state(task.status.state).into(),
            body: Dialect::V1.encode_task(task),
            push: Vec::new(),
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn an_ended_task_comes_back_as_it_was_stored() {
        let done = task(TaskState::Completed);
        let revived = revive(&record(&done), &TaskSaver::none()).unwrap();
        assert_eq!(*revived, done);
    }

    #[test]
    fn an_unfinished_task_comes_back_failed_because_its_server_stopped() {
        let working = task(TaskState::Working);
        let revived = revive(&record(&working), &TaskSaver::none()).unwrap();
        assert_eq!(revived.status.state, TaskState::Failed);
        let said = revived.status.message.as_ref().unwrap().joined_text();
        assert_eq!(said, STOPPED);
        assert_eq!(revived.history.len(), 2);
        assert_eq!(revived.artifacts, working.artifacts);
    }

    #[test]
    fn a_body_that_is_no_task_is_an_error() {
        let mut bad = record(&task(TaskState::Completed));
        bad.body = serde_json::json!({"no": "id"});
        assert!(revive(&bad, &TaskSaver::none()).is_err());
    }
}
