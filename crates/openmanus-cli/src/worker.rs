//! `openmanus worker` and `openmanus submit`: the command line over [`agent_worker`]. A worker
//! takes tasks from NATS JetStream until SIGTERM or Ctrl-C; `submit` publishes one task and
//! can follow its events and wait for its result.

use std::collections::HashMap;
use std::time::Duration;

use agent_config::{Config, NatsSettings};
use agent_core::AgentEvent;
use agent_session::store::EventKind;
use agent_worker::{Submitter, TaskEvent, TaskMessage, Worker, WorkerOptions};
use anyhow::Result;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::cli::{GlobalArgs, NatsArgs};
use crate::config;
use crate::nats::connect;
use crate::output::{EXIT_OK, ending_code, note, say};
use crate::render::{Follow, Mode};

/// `[nats]` with the command line's flags over it.
pub fn settings(config: &Config, args: &NatsArgs) -> NatsSettings {
    let mut settings = config.nats.clone();
    if let Some(url) = &args.nats_url {
        settings.url.clone_from(url);
    }
    if let Some(creds) = &args.creds {
        settings.creds_file = Some(creds.clone());
    }
    settings
}

/// `openmanus worker`: runs tasks until the first SIGTERM or Ctrl-C, then hands back the ones
/// it holds and exits; a second signal kills everything at once.
///
/// # Errors
///
/// A configuration error; NATS cannot be reached.
pub async fn worker(
    global: &GlobalArgs,
    args: &NatsArgs,
    concurrency: Option<usize>,
    name: Option<String>,
) -> Result<u8> {
    let config = config::load(global)?;
    let settings = settings(&config, args);
    let factory = config::factory(global, config);
    let mut options = WorkerOptions::new(settings.workspaces_path(factory.workspace()));
    options.concurrency = concurrency.unwrap_or(settings.concurrency).max(1);
    options.progress_interval = Duration::from_secs(settings.progress_secs.max(1));
    if let Some(name) = name {
        options.name = name;
    }
    let nats = connect(&settings, &format!("openmanus worker {}", options.name)).await?;
    if global.json {
        say(&json!({"type": "worker_started", "name": options.name,
                    "concurrency": options.concurrency, "nats_url": settings.url,
                    "workspaces": options.workspaces})
        .to_string());
    } else {
        note(&format!(
            "openmanus worker {}: {} task(s) at once from {} (workspaces in {}; Ctrl-C or SIGTERM stops)",
            options.name,
            options.concurrency,
            settings.url,
            options.workspaces.display()
        ));
    }
    let stop = CancellationToken::new();
    let worker = Worker::new(nats, factory, options);
    let trigger = stop.clone();
    tokio::spawn(async move {
        crate::signal::stop_signal().await;
        trigger.cancel();
    });
    let summary = worker.run(stop).await?;
    if global.json {
        say(
            &json!({"type": "worker_stopped", "completed": summary.completed,
                    "already_done": summary.already_done, "handed_back": summary.handed_back,
                    "rejected": summary.rejected})
            .to_string(),
        );
        return Ok(EXIT_OK);
    }
    note(&format!(
        "stopped: {} completed, {} already done, {} handed back, {} rejected",
        summary.completed, summary.already_done, summary.handed_back, summary.rejected
    ));
    Ok(EXIT_OK)
}

/// What `openmanus submit` was asked.
#[derive(Debug)]
pub struct Submission {
    /// The agent kind (or `flow`).
    pub agent: String,
    /// The task id (default: a new one).
    pub id: Option<String>,
    /// The session it continues.
    pub session: Option<String>,
    /// Print the events as they come.
    pub follow: bool,
    /// Wait for the result and print it.
    pub wait: bool,
    /// The task.
    pub task: String,
}

/// `openmanus submit`: publishes the task, prints its id, and with `--follow`/`--wait` its
/// events and result. The exit code is the run's, as for a local run, when it waits.
///
/// # Errors
///
/// A configuration error; NATS cannot be reached; the task is invalid.
pub async fn submit(global: &GlobalArgs, args: &NatsArgs, submission: Submission) -> Result<u8> {
    let config = config::load_for_store(global)?;
    let settings = settings(&config, args);
    let nats = connect(&settings, "openmanus submit").await?;
    let submitter = Submitter::new(nats);
    let mut task = TaskMessage::new(submission.agent, submission.task);
    if let Some(id) = submission.id {
        task = task.with_id(id);
    }
    if let Some(session) = submission.session {
        task = task.in_session(session);
    }
    let mut events = if submission.follow {
        Some(submitter.events(&task.id).await?)
    } else {
        None
    };
    let submitted = submitter.submit(&task).await?;
    if global.json {
        say(
            &json!({"type": "submitted", "task_id": task.id, "sequence": submitted.sequence,
                    "duplicate": submitted.duplicate})
            .to_string(),
        );
    } else {
        say(&task.id);
        if submitted.duplicate {
            note("this task id was submitted already; the copy was dropped");
        }
    }
    if !submission.follow && !submission.wait {
        return Ok(EXIT_OK);
    }
    let mut shown = Shown {
        view: Follow::new(Mode::Text),
        attempt: None,
        last: HashMap::new(),
    };
    let waiting = submitter.wait_result(&task.id);
    tokio::pin!(waiting);
    let result = loop {
        let Some(stream) = events.as_mut() else {
            break waiting.await?;
        };
        tokio::select! {
            result = &mut waiting => break result?,
            event = stream.next() => match event {
                Some(Ok(event)) => shown.show(&event, global)?,
                Some(Err(error)) => note(&format!("warning: {error}")),
                None => events = None,
            },
        }
    };
    // The result can overtake the run's last events on their way here: read on to the
    // attempt's last one (the result says how many it published), within a bound.
    if let Some(stream) = events.as_mut() {
        let deadline = tokio::time::Instant::now() + FOLLOW_DRAIN;
        while shown.last(result.attempt) < result.events {
            match tokio::time::timeout_at(deadline, stream.next()).await {
                Ok(Some(Ok(event))) => shown.show(&event, global)?,
                Ok(Some(Err(error))) => note(&format!("warning: {error}")),
                Ok(None) | Err(_) => break,
            }
        }
    }
    shown.view.finish();
    if global.json {
        say(&result_line(&result)?.to_string());
    } else {
        if !global.quiet {
            note(&format!(
                "{} on {} (attempt {}): {}; tokens {} in, {} out",
                task.id,
                result.worker,
                result.attempt,
                result.status,
                result.usage.prompt_tokens,
                result.usage.completion_tokens
            ));
        }
        say(result.answer.as_deref().unwrap_or(&result.text));
    }
    Ok(ending_code(result.ending))
}

/// How long `submit --follow` reads on, after the result, for the events the result overtook.
const FOLLOW_DRAIN: Duration = Duration::from_secs(10);

/// What `submit --follow` has shown.
struct Shown {
    view: Follow,
    attempt: Option<(String, u64)>,
    /// Per attempt, the highest event number shown.
    last: HashMap<u64, u64>,
}

impl Shown {
    /// Shows `event` (a JSON line with `--json`, the text view otherwise).
    fn show(&mut self, event: &TaskEvent, global: &GlobalArgs) -> Result<()> {
        let last = self.last.entry(event.attempt).or_default();
        *last = (*last).max(event.seq);
        if global.json {
            say(&typed("task_event", serde_json::to_value(event)?).to_string());
        } else if !global.quiet {
            follow_text(&mut self.view, &mut self.attempt, event);
        }
        Ok(())
    }

    /// The highest event number of `attempt` shown so far.
    fn last(&self, attempt: u64) -> u64 {
        self.last.get(&attempt).copied().unwrap_or(0)
    }
}

/// One event of a followed task in the text view: a line when a worker takes the task (again,
/// after a redelivery), then the agent's events as a local run shows them.
fn follow_text(view: &mut Follow, attempt: &mut Option<(String, u64)>, event: &TaskEvent) {
    let taker = (event.worker.clone(), event.attempt);
    if attempt.as_ref() != Some(&taker) {
        note(&format!(
            "worker {} took the task (attempt {})",
            event.worker, event.attempt
        ));
        *attempt = Some(taker);
    }
    if event.kind == EventKind::Agent {
        match serde_json::from_value::<AgentEvent>(event.data.clone()) {
            Ok(agent_event) => view.agent(&agent_event),
            Err(error) => tracing::debug!(%error, "an agent event this build does not know"),
        }
    }
}

/// `value` (an object) with a `"type": kind` field (its keys come out sorted, as every line
/// built through `serde_json::Value`; a field `type` of `value` itself is kept over `kind`).
fn typed(kind: &str, value: Value) -> Value {
    let mut fields = serde_json::Map::new();
    fields.insert("type".to_owned(), Value::from(kind));
    if let Value::Object(rest) = value {
        fields.extend(rest);
    }
    Value::Object(fields)
}

/// The `result` line of `submit --json`: the worker's [`TaskResult`](agent_worker::TaskResult) shaped like a local run's
/// (`status` the machine value `finished`, `max_steps`, ...; `status_text` the words).
///
/// # Errors
///
/// The result cannot be turned into JSON (it always can).
fn result_line(result: &agent_worker::TaskResult) -> Result<Value> {
    let mut line = typed("result", serde_json::to_value(result)?);
    if let Value::Object(fields) = &mut line {
        let words = fields.remove("status").unwrap_or_default();
        let ending = fields.remove("ending").unwrap_or_default();
        fields.insert("status".to_owned(), ending);
        fields.insert("status_text".to_owned(), words);
    }
    Ok(line)
}
