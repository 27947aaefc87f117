//! Replay: a recorded run run again as a deterministic one. Every model request is answered
//! with the recording's next reply ([`ReplayModel`]), the tools are the real ones, and each
//! step's tool calls and observations are compared with the recording's; the first step that
//! differs is reported ([`Divergence`]).
//!
//! A recording is a run journal (`<workspace>/.openmanus/runs/*.jsonl`), an exported session
//! (`openmanus sessions export`), or a session of the store ([`Recording::from_store`]).
//!
//! * [`replay`] rebuilds the recorded agent (or flow) with an [`agents::AgentFactory`], as a
//!   [`Session`] does, in the factory's workspace — what `openmanus replay FILE` runs;
//! * [`check_agent`] replays into an agent of your own (built on [`Recording::model`]): how an
//!   agent crate turns a recorded run into a regression test; [`record_agent`] writes such a
//!   recording.
//!
//! # What is compared, and what is normalised
//!
//! For each step, in order: the tool calls (tool name and argument text) and, for each call,
//! the observation the agent stored and whether it reported success; at the end of each run,
//! whether it ended the same way (finished, max steps, cancelled, or failed — an error's text is
//! not compared). Before comparing, every text has the recorded workspace (on the recorded
//! side) and the replay's workspace (on the replayed side) replaced by `$WORKSPACE`, then the
//! rules of [`ReplayOptions::normalize`] applied to both sides. The replies themselves have the
//! recorded workspace moved to the replay's, so a call that named a file of the recorded
//! workspace acts on the replay's.
//!
//! `ask_human` is answered with what the human answered when recorded (read from the recorded
//! observations, in order), never from a terminal.
//!
//! Never compared: times (`time_ms`, durations), token usage and cost (they come from the
//! recorded replies), call ids (the replies give them). What a tool prints that changes from
//! run to run by nature — process ids, temporary names, dates, timings — needs a rule of
//! [`ReplayOptions::normalize`].
//!
//! The replay builds the agent from the configuration it is given: settings that change what
//! the agent observes or asks (`[agent] max_observe`, `max_steps`, the policies, the prompts
//! of a custom agent) must be those of the recording, or the replay will say where that shows.
//! Files the recorded run read but did not write must be in the replay's workspace before it
//! starts.

mod compare;
mod human;
mod model;
mod recording;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::{Agent, AgentError, AgentEvent, RunOutcome};
use agent_llm::{ChatModel, LlmError, Model};
use agents::AgentFactory;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

pub use compare::{CallView, Difference, Divergence, Normalizer, WORKSPACE_MARK};
pub use model::ReplayModel;
pub use recording::{Call, RecordedRun, Recording, RecordingError, Step};

use crate::journal::JournalHandle;
use crate::{Session, SessionError, Target};
use compare::{Normalization, compare_run};
use model::ReplayQueue;
use recording::Steps;

/// Why a replay could not be carried out (a replay that runs and differs is not an error: it
/// is a [`ReplayReport`] with a [`Divergence`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The recording cannot be read or holds nothing to replay.
    #[error(transparent)]
    Recording(#[from] RecordingError),
    /// The recording does not say which agent ran, and none was given.
    #[error(
        "the recording does not say which agent ran: name it (ReplayOptions::target, `openmanus replay --agent`)"
    )]
    UnknownTarget,
    /// The agent could not be built or started.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The agent refused to run.
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// How to replay.
#[derive(Clone, Default)]
pub struct ReplayOptions {
    target: Option<Target>,
    rules: Vec<Normalizer>,
}

impl std::fmt::Debug for ReplayOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayOptions")
            .field("target", &self.target)
            .field("rules", &self.rules.len())
            .finish()
    }
}

impl ReplayOptions {
    /// The defaults: the recording's agent, workspaces normalised, nothing else.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Replays with this agent (or the flow) whatever the recording says.
    #[must_use]
    pub fn target(mut self, target: Target) -> Self {
        self.target = Some(target);
        self
    }

    /// Adds a rule applied to both sides of every compared text (after the workspaces are
    /// replaced by [`WORKSPACE_MARK`]), for what legitimately changes between runs: process
    /// ids, temporary names, dates, timings.
    #[must_use]
    pub fn normalize(mut self, rule: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        self.rules.push(Arc::new(rule));
        self
    }

    /// Adds a rule that replaces every `from` with `to` on both sides.
    #[must_use]
    pub fn replace(self, from: impl Into<String>, to: impl Into<String>) -> Self {
        let (from, to) = (from.into(), to.into());
        self.normalize(move |text| {
            if from.is_empty() {
                text.to_owned()
            } else {
                text.replace(&from, &to)
            }
        })
    }
}

/// What a replay came to.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    /// The steps that matched the recording, over every run replayed.
    pub steps_matched: usize,
    /// The runs (tasks) replayed; a replay stops after the first run that diverges.
    pub runs: usize,
    /// How many of the recording's replies were given to the agent (`None` for
    /// [`check_agent`], whose model is the caller's: see [`ReplayModel::served`]).
    pub replies_used: Option<usize>,
    /// How many replies the recording holds.
    pub replies: usize,
    /// Whether every run of the recording ended (a recording cut short is compared up to
    /// where it stops).
    pub complete: bool,
    /// The first difference; `None` when the replay matched.
    pub divergence: Option<Divergence>,
    /// The replay's own journal (`None` for [`check_agent`]).
    pub journal: Option<PathBuf>,
    /// The workspace the replay ran in.
    pub workspace: PathBuf,
}

impl ReplayReport {
    /// Whether the replay matched the recording.
    #[must_use]
    pub fn matched(&self) -> bool {
        self.divergence.is_none()
    }

    /// One line (two or more when it diverged): `replay matched N steps`, or where it
    /// diverged and how.
    #[must_use]
    pub fn verdict(&self) -> String {
        match &self.divergence {
            None => {
                let steps = if self.steps_matched == 1 {
                    "step"
                } else {
                    "steps"
                };
                let cut = if self.complete {
                    ""
                } else {
                    " (the recording stops before its run ended)"
                };
                format!("replay matched {} {steps}{cut}", self.steps_matched)
            }
            Some(divergence) => format!("replay diverged at {divergence}"),
        }
    }

    /// Panics with the verdict when the replay diverged: for regression tests.
    ///
    /// # Panics
    ///
    /// When [`ReplayReport::matched`] is false.
    #[allow(clippy::panic)] // a test's assertion
    pub fn assert_matched(&self) {
        if let Some(divergence) = &self.divergence {
            panic!("replay diverged at {divergence}");
        }
    }
}

/// Replays `recording` with an agent (or the flow) built by `factory`, in the factory's
/// workspace (use a fresh one, holding the files the recorded run read but did not write):
/// each recorded task is run in one [`Session`], every model request answered from the
/// recording, the tools real. The session writes a journal of its own in that workspace.
///
/// # Errors
///
/// An unknown agent, an agent that cannot be built, or one that refuses to run. Differences
/// are not errors: they are in the report.
pub async fn replay(
    factory: &AgentFactory,
    recording: &Recording,
    options: &ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    let target = options
        .target
        .or(recording.target())
        .ok_or(ReplayError::UnknownTarget)?;
    let queue = ReplayQueue::new(recording);
    // `ask_human` gets what the human answered then, never a terminal prompt.
    let factory = factory
        .clone()
        .with_human_input(Arc::new(human::RecordedAnswers::new(recording)));
    let config = factory.config().clone();
    let source = {
        let queue = Arc::clone(&queue);
        move |agent: &str| -> Result<Arc<dyn ChatModel>, LlmError> {
            // The configured client, never asked anything: the model's name, window and price.
            let profile = Model::new(config.llm_for(agent).clone())
                .ok()
                .map(|model| Arc::new(model) as Arc<dyn ChatModel>);
            Ok(Arc::new(ReplayModel::new(Arc::clone(&queue), profile)))
        }
    };
    let mut session = Session::start_with_models(&factory, target, &source).await?;
    // The workspace as the agent's tools see it (inside a sandbox, the sandbox's).
    queue.move_to(session.workspace());
    let norm = Normalization::new(
        recording.workspace(),
        session.workspace(),
        options.rules.clone(),
    );
    let mut tally = Tally::new(recording, &norm);
    for recorded in recording.runs() {
        let events = session.events().subscribe();
        let status = match session.run(&recorded.task).await {
            Ok(report) => report.status_text(),
            Err(SessionError::Agent(error)) => {
                let _ = session.close().await;
                return Err(error.into());
            }
            Err(error) => format!("error: {error}"),
        };
        if !tally.run(recorded, events, &status) {
            break;
        }
    }
    let workspace = session.workspace().to_path_buf();
    let journal = session.close().await?;
    Ok(tally.report(&queue, journal, workspace))
}

/// Replays `recording` into `agent`, which must have been built on `recording.model(...)`
/// (a [`ReplayModel`]) and with the tools and prompts under test; `workspace` is where its
/// tools work (only for normalising paths). Each recorded task is run with [`Agent::run`].
///
/// ```no_run
/// # async fn demo(build: impl Fn(std::sync::Arc<agent_session::replay::ReplayModel>) -> Box<dyn agent_core::Agent>)
/// # -> Result<(), Box<dyn std::error::Error>> {
/// use agent_session::replay::{ReplayOptions, Recording, check_agent};
///
/// let recording = Recording::from_journal("tests/recordings/count.jsonl".as_ref())?;
/// let workspace = tempfile::tempdir()?;
/// let mut agent = build(recording.model(Some(workspace.path())));
/// let report = check_agent(agent.as_mut(), &recording, workspace.path(), &ReplayOptions::new()).await?;
/// report.assert_matched();
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// The agent refuses to run (it is not idle).
pub async fn check_agent(
    agent: &mut dyn Agent,
    recording: &Recording,
    workspace: &Path,
    options: &ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    let norm = Normalization::new(recording.workspace(), workspace, options.rules.clone());
    let mut tally = Tally::new(recording, &norm);
    for recorded in recording.runs() {
        let events = agent.base().events().subscribe();
        if matches!(
            agent.base().state(),
            agent_core::AgentState::Finished | agent_core::AgentState::Error
        ) {
            let _ = agent.base_mut().reset_state();
        }
        let outcome = agent.run(Some(recorded.task.clone())).await?;
        if !tally.run(recorded, events, &outcome.status.to_string()) {
            break;
        }
    }
    let mut report = tally.finish();
    report.workspace = workspace.to_path_buf();
    Ok(report)
}

/// Runs `task` on `agent` and writes it to a journal as a [`Session`] would (the task, every
/// event, the result), so that [`Recording::from_journal`] reads it back. Build the agent on a
/// [`JournaledModel`](crate::JournaledModel) writing to the same journal, so its replies are
/// recorded too.
///
/// # Errors
///
/// The agent refuses to run (it is not idle).
pub async fn record_agent(
    agent: &mut dyn Agent,
    task: &str,
    journal: &JournalHandle,
) -> Result<RunOutcome, AgentError> {
    journal.write("task", json!({ "task": task }));
    let mut events = agent.base().events().subscribe();
    let outcome = agent.run(Some(task.to_owned())).await;
    while let Ok(event) = events.try_recv() {
        if !event.is_live_only() && !matches!(event, AgentEvent::Image { .. }) {
            journal.event(&event);
        }
    }
    if let Ok(outcome) = &outcome {
        journal.write(
            "result",
            json!({ "status": outcome.status.to_string(), "answer": outcome.answer() }),
        );
    }
    outcome
}

/// The comparison of a replay, run by run.
struct Tally<'a> {
    recording: &'a Recording,
    norm: &'a Normalization,
    steps_matched: usize,
    runs: usize,
    divergence: Option<Divergence>,
}

impl<'a> Tally<'a> {
    fn new(recording: &'a Recording, norm: &'a Normalization) -> Self {
        Self {
            recording,
            norm,
            steps_matched: 0,
            runs: 0,
            divergence: None,
        }
    }

    /// Compares one replayed run (its events, its status) with `recorded`; whether to go on.
    fn run(
        &mut self,
        recorded: &RecordedRun,
        mut events: UnboundedReceiver<AgentEvent>,
        status: &str,
    ) -> bool {
        self.runs += 1;
        let mut steps = Steps::default();
        while let Ok(event) = events.try_recv() {
            if let Ok(event) = serde_json::to_value(&event) {
                // Our own events always have the shape the parser knows.
                let _ = steps.push(&event);
            }
        }
        let complete = recorded.status.is_some();
        match compare_run(
            self.runs,
            self.steps_matched,
            &recorded.steps,
            &steps.steps,
            complete,
            self.norm,
        ) {
            Ok(matched) => self.steps_matched += matched,
            Err(divergence) => {
                self.steps_matched = divergence.ordinal - 1;
                self.divergence = Some(*divergence);
                return false;
            }
        }
        if let Some(expected) = &recorded.status
            && ending(expected) != ending(status)
        {
            self.divergence = Some(Divergence {
                run: self.runs,
                step: 0,
                ordinal: self.steps_matched,
                difference: Difference::Outcome {
                    expected: expected.clone(),
                    got: status.to_owned(),
                },
            });
            return false;
        }
        complete
    }

    fn report(
        self,
        queue: &ReplayQueue,
        journal: Option<PathBuf>,
        workspace: PathBuf,
    ) -> ReplayReport {
        let mut report = self.finish();
        report.replies_used = Some(queue.served());
        report.journal = journal;
        report.workspace = workspace;
        report
    }

    fn finish(self) -> ReplayReport {
        let complete = self.recording.runs().iter().all(|r| r.status.is_some());
        ReplayReport {
            steps_matched: self.steps_matched,
            runs: self.runs,
            replies_used: None,
            replies: self.recording.replies(),
            complete,
            divergence: self.divergence,
            journal: None,
            workspace: PathBuf::new(),
        }
    }
}

/// How a run ended, as compared: an error's text is left out (`error: ...` → `error`).
fn ending(status: &str) -> &str {
    if status.starts_with("error") {
        "error"
    } else {
        status
    }
}

impl ReplayReport {
    /// The report as one JSON object: `status` is `matched` or `diverged`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(fields) = &mut value {
            fields.insert(
                "status".into(),
                json!(if self.matched() {
                    "matched"
                } else {
                    "diverged"
                }),
            );
            fields.insert("verdict".into(), json!(self.verdict()));
        }
        value
    }
}
