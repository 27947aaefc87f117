//! The workers' side of the messages of [`agent_protocol`]: a task's target, its events from the
//! session store's and its result from the session's report.

use agent_protocol::{Ending, TaskEvent, TaskMessage, TaskResult, TokenUsage};
use agent_session::{RunReport, Target};
use agent_store::StoredEvent;
use serde_json::Value;

use crate::error::WorkerError;

/// Checks the task ([`TaskMessage::check`]) and its agent kind: what a worker runs it as.
///
/// # Errors
///
/// [`WorkerError::InvalidTask`] naming what is wrong.
pub fn target_of(task: &TaskMessage) -> Result<Target, WorkerError> {
    task.check()?;
    task.agent
        .parse::<Target>()
        .map_err(|error| WorkerError::InvalidTask(error.to_string()))
}

/// A stored event of the task's session, as the task's event of this attempt (`seq` is the
/// store's id in the attempt's own store: 1, 2, 3, ...).
pub(crate) fn event_of(
    task: &TaskMessage,
    attempt: u64,
    worker: &str,
    event: StoredEvent,
) -> TaskEvent {
    TaskEvent {
        task_id: task.id.clone(),
        session_id: task.session_id().to_owned(),
        attempt,
        worker: worker.to_owned(),
        seq: u64::try_from(event.id).unwrap_or_default(),
        run_id: event.run_id,
        at: event.at,
        kind: event.kind,
        data: event.data,
    }
}

/// What the session's report of the task comes to.
pub(crate) fn result_of(
    task: &TaskMessage,
    report: &RunReport,
    worker: &str,
    attempt: u64,
) -> TaskResult {
    TaskResult {
        answer: report.answer.clone(),
        text: report.text.clone(),
        changes: serde_json::to_value(&report.changes).unwrap_or(Value::Null),
        usage: report.usage,
        ..result(task, report.ending(), report.status_text(), worker, attempt)
    }
}

/// The result of a task that could not run (`status` says why).
pub(crate) fn failed_result(
    task: &TaskMessage,
    status: String,
    worker: &str,
    attempt: u64,
) -> TaskResult {
    result(task, Ending::Failed, status, worker, attempt)
}

/// A result of the task ending so, with no answer, text, changes or usage yet.
fn result(
    task: &TaskMessage,
    ending: Ending,
    status: String,
    worker: &str,
    attempt: u64,
) -> TaskResult {
    TaskResult {
        task_id: task.id.clone(),
        session_id: task.session_id().to_owned(),
        agent: task.agent.clone(),
        ending,
        status,
        answer: None,
        text: String::new(),
        changes: Value::Null,
        usage: TokenUsage::default(),
        worker: worker.to_owned(),
        attempt,
        events: 0,
        started_at: 0,
        finished_at: agent_store::now_ms(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_runs_as_its_agent_kind_and_an_unknown_one_is_named() {
        let task = TaskMessage::new("swe", "Write a haiku").in_session("s-1");
        assert!(target_of(&task).is_ok());
        let unknown = TaskMessage::new("nobody", "x");
        let error = target_of(&unknown).unwrap_err();
        assert!(matches!(error, WorkerError::InvalidTask(_)), "{error}");
        let bad = task.with_id("a.b");
        assert!(matches!(target_of(&bad), Err(WorkerError::InvalidTask(_))));
    }
}
