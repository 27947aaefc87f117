//! Runs on workers: with `[server] dispatch = "nats"` a session's tasks are published to the
//! NATS work queue (any [`TaskQueue`]: `agent_worker::Submitter` is the NATS one) instead of
//! being run here. The worker's events come back on the task's subject; each is stored in this
//! server's store (so it gets this store's id, replays with `Last-Event-ID` and shows in the
//! page exactly as a local run's) and sent to the session's stream. The run's boundaries are
//! this server's: `run_started` when the task is submitted, `run_finished` from the worker's
//! stored result.

use std::sync::{Arc, Mutex, PoisonError};

use agent_protocol::{TaskEvent, TaskMessage, TaskQueue, TaskResult};
use agent_session::Target;
use agent_store::{
    EventKind, NewEvent, RunId, RunState, RunSummary, Store, StoreError, TokenUsage,
};
use futures::StreamExt;
use tokio::sync::broadcast;
use tracing::warn;

use crate::notice::Notice;

/// A session whose tasks run on workers.
pub struct Remote {
    submitter: Arc<dyn TaskQueue>,
    store: Store,
    session_id: String,
    agent: String,
    /// The task going, if one is.
    current: Arc<Mutex<Option<String>>>,
}

/// Cancels a remote session's task in progress.
#[derive(Clone)]
pub struct RemoteCanceller {
    submitter: Arc<dyn TaskQueue>,
    current: Arc<Mutex<Option<String>>>,
}

impl RemoteCanceller {
    /// Asks the worker running the task to cancel it; false when no task is going.
    pub fn cancel(&self) -> bool {
        let task = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(task) = task else { return false };
        let submitter = Arc::clone(&self.submitter);
        tokio::spawn(async move {
            if let Err(error) = submitter.cancel(&task).await {
                warn!(%task, %error, "the cancel request could not be sent");
            }
        });
        true
    }
}

impl Remote {
    /// Session `session_id` of `agent`, recorded in `store`, run through `submitter`.
    #[must_use]
    pub fn new(
        submitter: Arc<dyn TaskQueue>,
        store: Store,
        session_id: String,
        agent: String,
    ) -> Self {
        Self {
            submitter,
            store,
            session_id,
            agent,
            current: Arc::default(),
        }
    }

    /// A handle that cancels the task going.
    #[must_use]
    pub fn canceller(&self) -> RemoteCanceller {
        RemoteCanceller {
            submitter: Arc::clone(&self.submitter),
            current: Arc::clone(&self.current),
        }
    }

    /// Submits `task`, stores and forwards its events as they come back, and ends the run
    /// with the worker's result. Returns the outcome in words.
    ///
    /// # Errors
    ///
    /// The store or NATS failed; the text says which.
    pub async fn run(
        &self,
        task: &str,
        stream: &broadcast::Sender<Notice>,
    ) -> Result<String, String> {
        let message = TaskMessage::new(self.agent.clone(), task).in_session(&self.session_id);
        message.check().map_err(|error| error.to_string())?;
        self.agent
            .parse::<Target>()
            .map_err(|error| format!("invalid task: {error}"))?;
        let (run_id, started) = self
            .store
            .begin_run(&self.session_id, task)
            .await
            .map_err(|error| error.to_string())?;
        let _ = stream.send(Notice::Stored(started));
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(message.id.clone());
        let outcome = self.follow(&message, run_id, stream).await;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let summary = match &outcome {
            Ok(result) => summary_of(result),
            Err(error) => RunSummary {
                state: RunState::Failed,
                status: format!("error: {error}"),
                answer: None,
                text: String::new(),
                text_parts: None,
                changes: serde_json::Value::Null,
                usage: TokenUsage::default(),
            },
        };
        let finished = self
            .store
            .finish_run(run_id, &summary)
            .await
            .map_err(|error| error.to_string())?;
        let _ = stream.send(Notice::Stored(finished));
        outcome.map(|result| result.status)
    }

    /// Publishes the task and relays its events until its result is stored and the attempt
    /// that produced it has sent its last event.
    async fn follow(
        &self,
        message: &TaskMessage,
        run_id: RunId,
        stream: &broadcast::Sender<Notice>,
    ) -> Result<TaskResult, String> {
        let mut events = self
            .submitter
            .events(&message.id)
            .await
            .map_err(|error| error.to_string())?;
        self.submitter
            .submit(message)
            .await
            .map_err(|error| error.to_string())?;
        let waiting = self.submitter.wait_result(&message.id);
        tokio::pin!(waiting);
        let mut result: Option<TaskResult> = None;
        // Events relayed per attempt, to know when the result's attempt has sent them all.
        let mut relayed: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
        loop {
            if let Some(result) = &result
                && relayed.get(&result.attempt).copied().unwrap_or(0) >= result.events
            {
                break;
            }
            tokio::select! {
                done = &mut waiting, if result.is_none() => {
                    result = Some(done.map_err(|error| error.to_string())?);
                }
                event = events.next() => match event {
                    Some(Ok(event)) => {
                        *relayed.entry(event.attempt).or_default() += 1;
                        self.relay(event, run_id, stream).await.map_err(|error| error.to_string())?;
                    }
                    Some(Err(error)) => warn!(%error, "an event could not be read"),
                    None => break,
                },
            }
        }
        result.ok_or_else(|| "the event stream ended before the result".to_owned())
    }

    /// Stores one worker event as this server's and sends it to the stream. The worker's own
    /// run boundaries are left out: the server records its run's.
    async fn relay(
        &self,
        event: TaskEvent,
        run_id: RunId,
        stream: &broadcast::Sender<Notice>,
    ) -> Result<(), StoreError> {
        if matches!(event.kind, EventKind::RunStarted | EventKind::RunFinished) {
            return Ok(());
        }
        let stored = self
            .store
            .append_event(
                &self.session_id,
                NewEvent {
                    run_id: Some(run_id),
                    at: event.at,
                    kind: event.kind,
                    data: event.data.into(),
                },
            )
            .await?;
        let _ = stream.send(Notice::Stored(stored));
        Ok(())
    }
}

fn summary_of(result: &TaskResult) -> RunSummary {
    RunSummary {
        state: result.ending.run_state(),
        status: result.status.clone(),
        answer: result.answer.clone(),
        text: result.text.clone(),
        text_parts: None,
        changes: result.changes.clone(),
        usage: result.usage,
    }
}
