//! A recorded run as replay needs it: the model's replies in the order they were given, and
//! each run's steps with their tool calls and observations.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use agent_llm::{ChatResponse, TokenUsage};
use agent_store::{Store, StoreError};
use agents::AgentKind;
use serde::Serialize;
use serde_json::Value;
use thiserror::Error;

use crate::Target;
use crate::journal::{JournalLine, JournalReader, ReadError};

/// Why a recording cannot be replayed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RecordingError {
    /// The journal cannot be read or decoded.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The stored session cannot be read (or there is no such session).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored session cannot be written out as a journal.
    #[error("cannot export the stored session: {0}")]
    Export(String),
    /// A line the replay needs does not have the shape it should.
    #[error("journal entry {entry}: {what}")]
    Malformed {
        /// 1-based number of the entry (non-blank line).
        entry: usize,
        /// What is wrong.
        what: String,
    },
    /// The recording holds no task: nothing was run.
    #[error("the recording holds no task: there is nothing to replay")]
    NoTask,
    /// The recording holds no reply of the model (not even as `thought` events).
    #[error("the recording holds no reply of the model: there is nothing to answer the agent with")]
    NoReplies,
}

/// One tool call of a step and what came of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Call {
    /// The call's id (from the model's reply).
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments as the model wrote them (`None` for a call closed without having started:
    /// a cancelled or failed step).
    pub arguments: Option<String>,
    /// The observation the agent stored (`None`: the call never finished).
    pub observation: Option<String>,
    /// Whether the observation reported success.
    pub success: Option<bool>,
}

/// One step of a run: its number and the tool calls it made, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The agent's step number (1-based; it starts again for each executor of a flow).
    pub step: u32,
    /// Its tool calls.
    pub calls: Vec<Call>,
}

/// Builds steps from agent events (as JSON: journal lines and live events alike).
#[derive(Debug, Default)]
pub(crate) struct Steps {
    pub(crate) steps: Vec<Step>,
}

impl Steps {
    /// Takes one event (the JSON of an [`agent_core::AgentEvent`]); other events are ignored.
    pub(crate) fn push(&mut self, event: &Value) -> Result<(), String> {
        let text = |field: &str| {
            event
                .get(field)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("a {} event without `{field}`", kind(event)))
        };
        match kind(event) {
            "step_started" => {
                let step = event
                    .get("step")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or("a step_started event without its step")?;
                self.steps.push(Step {
                    step,
                    calls: Vec::new(),
                });
            }
            "tool_call_started" => {
                let call = event
                    .get("call")
                    .ok_or("a tool_call_started without its call")?;
                let field = |pointer: &str| {
                    call.pointer(pointer)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| format!("a tool_call_started call without {pointer}"))
                };
                let call = Call {
                    id: field("/id")?,
                    name: field("/function/name")?,
                    arguments: Some(field("/function/arguments")?),
                    observation: None,
                    success: None,
                };
                self.current()?.calls.push(call);
            }
            "tool_call_finished" => {
                let id = text("call_id")?;
                let name = text("name")?;
                let observation = text("observation")?;
                let success = event.get("success").and_then(Value::as_bool);
                let step = self.current()?;
                let open = step
                    .calls
                    .iter_mut()
                    .find(|c| c.id == id && c.observation.is_none());
                match open {
                    Some(call) => {
                        call.observation = Some(observation);
                        call.success = success;
                    }
                    // A call closed by a cancel or a failed step before it started.
                    None => step.calls.push(Call {
                        id,
                        name,
                        arguments: None,
                        observation: Some(observation),
                        success,
                    }),
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn current(&mut self) -> Result<&mut Step, String> {
        self.steps
            .last_mut()
            .ok_or_else(|| "a tool call outside any step".to_owned())
    }
}

fn kind(event: &Value) -> &str {
    event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// One task of the recording: what was asked, each step, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedRun {
    /// The task.
    pub task: String,
    /// Its steps, in order.
    pub steps: Vec<Step>,
    /// The run's status as its `result` line gave it (`None`: the recording stops before the
    /// run ended, e.g. the process was killed).
    pub status: Option<String>,
}

/// What the model answered one request with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// A reply.
    Response(ChatResponse),
    /// The request failed with this error text.
    Error(String),
}

/// A recorded run: read from a journal ([`Recording::from_journal`]), an exported session
/// (`openmanus sessions export`), or a stored session ([`Recording::from_store`]).
#[derive(Debug, Clone)]
pub struct Recording {
    target: Option<Target>,
    workspace: Option<PathBuf>,
    runs: Vec<RecordedRun>,
    replies: Vec<Reply>,
    from_thoughts: bool,
}

impl Recording {
    /// Reads the journal (or exported session) at `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be read, a line is not a journal line, or the recording has no task or
    /// no reply ([`RecordingError`]).
    pub fn from_journal(path: &Path) -> Result<Self, RecordingError> {
        let mut recording = Self::parse(JournalReader::open(path)?)?;
        if recording.workspace.is_none() {
            // A journal written before it named its workspace lies in
            // `<workspace>/.openmanus/runs/`.
            recording.workspace = path
                .parent()
                .filter(|dir| dir.ends_with(crate::JOURNAL_DIR))
                .and_then(Path::parent)
                .and_then(Path::parent)
                .map(Path::to_path_buf);
        }
        Ok(recording)
    }

    /// Reads a journal's text from `reader`.
    ///
    /// # Errors
    ///
    /// As [`Recording::from_journal`].
    pub fn from_reader(reader: impl BufRead) -> Result<Self, RecordingError> {
        Self::parse(JournalReader::new(reader))
    }

    /// Reads the stored session `id` (an id or the unique start of one). The store keeps no
    /// model requests: the replies are rebuilt from the `thought` events (the text and the
    /// tool calls of each reply; the token usage of the `token_usage` event before it). A
    /// model request that leaves no thought (a compaction summary, a tool's own request) is
    /// not in a stored session, so such a run cannot be replayed from the store.
    ///
    /// # Errors
    ///
    /// The store cannot be read, or as [`Recording::from_journal`].
    pub async fn from_store(store: &Store, id: &str) -> Result<Self, RecordingError> {
        let record = store.find_session(id).await?;
        let mut text = Vec::new();
        crate::journal::export_session(store, &record.id, &mut text)
            .await
            .map_err(|error| match error {
                crate::journal::ExportError::Store(error) => RecordingError::Store(error),
                other => RecordingError::Export(other.to_string()),
            })?;
        Self::from_reader(text.as_slice())
    }

    fn parse<R: BufRead>(reader: JournalReader<R>) -> Result<Self, RecordingError> {
        let mut target = None;
        let mut agent_name = None;
        let mut workspace = None;
        let mut runs: Vec<RecordedRun> = Vec::new();
        let mut steps = Steps::default();
        let mut replies: Vec<(u64, Reply)> = Vec::new();
        let mut thoughts = Vec::new();
        let mut usage = None;
        let mut flow = false;
        for (index, line) in reader.enumerate() {
            let entry = index + 1;
            let malformed = |what: String| RecordingError::Malformed { entry, what };
            let line = match line? {
                JournalLine::Request { .. } => continue,
                JournalLine::Entry(line) => line,
            };
            match line.get("kind").and_then(Value::as_str).unwrap_or_default() {
                "session" => {
                    let session = line.get("session");
                    let field = |name: &str| {
                        session
                            .and_then(|s| s.get(name))
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    };
                    target = field("agent").and_then(|agent| agent.parse().ok());
                    workspace = field("workspace").map(PathBuf::from);
                }
                "task" => {
                    finish(&mut runs, &mut steps);
                    let task = line
                        .get("task")
                        .and_then(Value::as_str)
                        .ok_or_else(|| malformed("a task line without its task".into()))?;
                    runs.push(RecordedRun {
                        task: task.to_owned(),
                        steps: Vec::new(),
                        status: None,
                    });
                }
                "event" => {
                    let event = line.get("event").unwrap_or(&Value::Null);
                    match kind(event) {
                        "run_started" if agent_name.is_none() => {
                            agent_name = event
                                .get("agent")
                                .and_then(Value::as_str)
                                .map(str::to_owned);
                        }
                        "token_usage" => {
                            usage = Some(TokenUsage {
                                prompt_tokens: number(event, "prompt_tokens"),
                                completion_tokens: number(event, "completion_tokens"),
                                cached_prompt_tokens: number(event, "cached_prompt_tokens"),
                                ..TokenUsage::default()
                            });
                        }
                        "thought" => {
                            let content = event
                                .get("content")
                                .and_then(Value::as_str)
                                .unwrap_or_default();
                            let calls = event
                                .get("tool_calls")
                                .cloned()
                                .map(serde_json::from_value)
                                .transpose()
                                .map_err(|e| malformed(format!("a thought's tool calls: {e}")))?
                                .unwrap_or_default();
                            let content = (!content.is_empty()).then(|| content.to_owned());
                            let mut response = ChatResponse::tool_calls(content, calls);
                            response.usage = usage.take();
                            thoughts.push(Reply::Response(response));
                        }
                        _ => {}
                    }
                    if !runs.is_empty() {
                        steps.push(event).map_err(malformed)?;
                    }
                }
                "flow_event" => flow = true,
                "result" => {
                    if let Some(run) = runs.last_mut() {
                        run.status = line
                            .get("status")
                            .and_then(Value::as_str)
                            .map(str::to_owned);
                    }
                }
                "error" => {
                    if let Some(run) = runs.last_mut() {
                        let error = line.get("error").and_then(Value::as_str);
                        run.status = Some(format!("error: {}", error.unwrap_or_default()));
                    }
                }
                "model_response" => {
                    let seq = line.get("seq").and_then(Value::as_u64);
                    let response = line
                        .get("response")
                        .cloned()
                        .map(serde_json::from_value::<ChatResponse>)
                        .transpose()
                        .map_err(|e| malformed(format!("a model_response: {e}")))?
                        .ok_or_else(|| malformed("a model_response without `response`".into()))?;
                    replies.push((seq.unwrap_or(u64::MAX), Reply::Response(response)));
                }
                "model_error" => {
                    let seq = line.get("seq").and_then(Value::as_u64);
                    let error = line
                        .get("error")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    replies.push((seq.unwrap_or(u64::MAX), Reply::Error(error.to_owned())));
                }
                _ => {}
            }
        }
        finish(&mut runs, &mut steps);
        if runs.is_empty() {
            return Err(RecordingError::NoTask);
        }
        // Replies are written when they arrive; requests of several models may overlap, so
        // they are put back in the order of the requests. A journal written before requests
        // were numbered keeps the order of the file (a stable sort).
        replies.sort_by_key(|(seq, _)| *seq);
        let from_thoughts = replies.is_empty();
        let replies: Vec<Reply> = if from_thoughts {
            thoughts
        } else {
            replies.into_iter().map(|(_, reply)| reply).collect()
        };
        if replies.is_empty() {
            return Err(RecordingError::NoReplies);
        }
        let target = target.or_else(|| {
            if flow {
                Some(Target::Flow)
            } else {
                agent_name
                    .and_then(|name| name.parse::<AgentKind>().ok())
                    .map(Target::Agent)
            }
        });
        Ok(Self {
            target,
            workspace,
            runs,
            replies,
            from_thoughts,
        })
    }

    /// What ran: from the journal's `session` line (or an exported session's), else the
    /// agent named by the first `run_started` event, or the flow when there are flow events.
    #[must_use]
    pub fn target(&self) -> Option<Target> {
        self.target
    }

    /// The workspace the recorded run worked in, when the recording says.
    #[must_use]
    pub fn workspace(&self) -> Option<&Path> {
        self.workspace.as_deref()
    }

    /// The recorded runs (tasks), in order.
    #[must_use]
    pub fn runs(&self) -> &[RecordedRun] {
        &self.runs
    }

    /// How many model replies the recording holds.
    #[must_use]
    pub fn replies(&self) -> usize {
        self.replies.len()
    }

    /// Whether the replies were rebuilt from `thought` events (a stored or exported session,
    /// which keeps no model requests) rather than read from `model_response` lines.
    #[must_use]
    pub fn replies_from_thoughts(&self) -> bool {
        self.from_thoughts
    }

    pub(crate) fn reply_list(&self) -> &[Reply] {
        &self.replies
    }
}

fn number(event: &Value, field: &str) -> u64 {
    event.get(field).and_then(Value::as_u64).unwrap_or_default()
}

/// Closes the current run: its steps are those collected since its task line.
fn finish(runs: &mut [RecordedRun], steps: &mut Steps) {
    if let Some(run) = runs.last_mut() {
        run.steps.append(&mut steps.steps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Recording, RecordingError> {
        Recording::from_reader(text.as_bytes())
    }

    #[test]
    fn empty_and_task_less_recordings_are_typed_errors() {
        assert!(matches!(read(""), Err(RecordingError::NoTask)));
        assert!(matches!(
            read(r#"{"kind":"model_response","seq":0,"response":{"content":"hi"}}"#),
            Err(RecordingError::NoTask)
        ));
        assert!(matches!(
            read(r#"{"kind":"task","task":"t"}"#),
            Err(RecordingError::NoReplies)
        ));
        assert!(matches!(read("{oops"), Err(RecordingError::Read(_))));
        let error = read(concat!(
            r#"{"kind":"task","task":"t"}"#,
            "\n",
            r#"{"kind":"model_response","seq":0,"response":{"tool_calls":7}}"#
        ))
        .unwrap_err();
        assert!(
            matches!(error, RecordingError::Malformed { entry: 2, .. }),
            "{error}"
        );
        let error = read(concat!(
            r#"{"kind":"task","task":"t"}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"tool_call_started","step":1}}"#
        ))
        .unwrap_err();
        assert!(
            matches!(error, RecordingError::Malformed { entry: 2, .. }),
            "{error}"
        );
    }

    #[test]
    fn steps_calls_and_replies_come_back_in_order() {
        let text = concat!(
            r#"{"kind":"session","session":{"agent":"swe","workspace":"/w"}}"#,
            "\n",
            r#"{"kind":"task","task":"do it"}"#,
            "\n",
            r#"{"kind":"model_response","seq":1,"response":{"content":"second"}}"#,
            "\n",
            r#"{"kind":"model_response","seq":0,"response":{"content":"first"}}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"step_started","step":1,"max_steps":5}}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"tool_call_started","step":1,"call":{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}}}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"tool_call_finished","step":1,"call_id":"c1","name":"bash","observation":"ok","success":true}}"#,
            "\n",
            r#"{"kind":"result","status":"finished"}"#,
            "\n",
        );
        let recording = read(text).unwrap();
        assert_eq!(recording.target(), Some(Target::Agent(AgentKind::Swe)));
        assert_eq!(recording.workspace(), Some(Path::new("/w")));
        assert_eq!(recording.replies(), 2);
        assert!(!recording.replies_from_thoughts());
        assert_eq!(
            recording.reply_list()[0],
            Reply::Response(ChatResponse {
                content: Some("first".into()),
                ..ChatResponse::default()
            })
        );
        let run = &recording.runs()[0];
        assert_eq!(run.status.as_deref(), Some("finished"));
        assert_eq!(run.steps.len(), 1);
        assert_eq!(run.steps[0].calls[0].observation.as_deref(), Some("ok"));
        assert_eq!(run.steps[0].calls[0].arguments.as_deref(), Some("{}"));
    }

    #[test]
    fn a_stored_session_gives_its_replies_through_its_thoughts() {
        let text = concat!(
            r#"{"kind":"task","task":"t"}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"run_started","agent":"swe","request":"t"}}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"token_usage","prompt_tokens":10,"cached_prompt_tokens":0,"completion_tokens":2,"cost_usd":null}}"#,
            "\n",
            r#"{"kind":"event","event":{"type":"thought","step":1,"content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"terminate","arguments":"{}"}}]}}"#,
            "\n",
        );
        let recording = read(text).unwrap();
        assert!(recording.replies_from_thoughts());
        assert_eq!(recording.target(), Some(Target::Agent(AgentKind::Swe)));
        let Reply::Response(reply) = &recording.reply_list()[0] else {
            panic!("not a response")
        };
        assert_eq!(reply.content, None);
        assert_eq!(reply.tool_calls[0].function.name, "terminate");
        assert_eq!(reply.usage.map(|u| u.prompt_tokens), Some(10));
        assert_eq!(recording.runs()[0].status, None);
    }
}
