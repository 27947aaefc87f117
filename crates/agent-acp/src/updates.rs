//! A run's events as ACP session updates: the model's text as `agent_message_chunk` (as it
//! streams in, or whole when it did not stream), its reasoning (from models that send it) as
//! `agent_thought_chunk`, each tool call as `tool_call` with its
//! `kind`, the paths it names as `locations` and an editor edit as a diff, its end as
//! `tool_call_update` with the observation, and a running call's progress as more content.

use std::collections::HashMap;

use agent_core::AgentEvent;
use agent_session::Ending;
use serde_json::{Value, json};

/// What ACP calls the kind of a call to the tool `name` with `args` (`ToolKind`).
#[must_use]
pub fn tool_kind(name: &str, args: &Value) -> &'static str {
    match name {
        "bash" | "python_execute" | "sandbox_shell" => "execute",
        "str_replace_editor" if args["command"] == "view" => "read",
        "str_replace_editor" => "edit",
        "browser_use" | "web_search" | "a2a_call" | "crawl4ai" => "fetch",
        "planning" => "think",
        _ => "other",
    }
}

/// The title `call` has in the editor (as its `tool_call` update gave it).
pub(crate) fn call_title(call: &agent_core::ToolCall) -> String {
    let args: Value = serde_json::from_str(&call.function.arguments).unwrap_or(Value::Null);
    title(&call.function.name, &args)
}

/// A short title for the call: the tool and what it works on.
fn title(name: &str, args: &Value) -> String {
    let subject = ["command", "path", "action", "url", "query"]
        .iter()
        .find_map(|key| args[*key].as_str())
        .map(|s| s.lines().next().unwrap_or_default());
    match subject {
        Some(subject) if name == "str_replace_editor" => {
            let path = args["path"].as_str().unwrap_or_default();
            format!("{subject} {path}")
        }
        Some(subject) => {
            let mut subject: String = subject.chars().take(120).collect();
            if subject.len() < args.to_string().len() && subject.chars().count() == 120 {
                subject.push('…');
            }
            format!("{name}: {subject}")
        }
        None => name.to_owned(),
    }
}

/// The file an editor call names, as a location (`ToolCallLocation`).
fn locations(name: &str, args: &Value) -> Vec<Value> {
    if name != "str_replace_editor" {
        return Vec::new();
    }
    let Some(path) = args["path"].as_str() else {
        return Vec::new();
    };
    let mut location = json!({ "path": path });
    if let Some(line) = args["insert_line"].as_u64() {
        location["line"] = json!(line);
    }
    vec![location]
}

/// The change an editor call makes, as a diff content (the whole new file for `create`, the
/// replaced text for `str_replace`, the inserted text for `insert`); `None` for other calls.
fn diff(name: &str, args: &Value) -> Option<Value> {
    if name != "str_replace_editor" {
        return None;
    }
    let path = args["path"].as_str()?;
    let text = |key: &str| args[key].as_str().unwrap_or_default().to_owned();
    let (old, new) = match args["command"].as_str()? {
        "create" => (None, text("file_text")),
        "str_replace" => (Some(text("old_str")), text("new_str")),
        "insert" => (None, text("new_str")),
        _ => return None,
    };
    let mut diff = json!({ "type": "diff", "path": path, "newText": new });
    if let Some(old) = old {
        diff["oldText"] = json!(old);
    }
    Some(diff)
}

/// Text as a tool call's content (`ToolCallContent::Content`).
fn text_content(text: &str) -> Value {
    json!({ "type": "content", "content": { "type": "text", "text": text } })
}

/// How a run's ending answers `session/prompt` (`StopReason`); `None` for a run that failed
/// (answered with an error).
#[must_use]
pub fn stop_reason(ending: Ending) -> Option<&'static str> {
    match ending {
        Ending::Finished => Some("end_turn"),
        Ending::MaxSteps => Some("max_turn_requests"),
        Ending::Budget => Some("max_tokens"),
        Ending::Cancelled => Some("cancelled"),
        Ending::Refused => Some("refusal"),
        Ending::Failed => None,
    }
}

/// Turns one session's events into updates, remembering what it needs across them.
#[derive(Debug, Default)]
pub struct Translator {
    /// Replaying a stored session: the prompts are sent too (live, the editor has them).
    replaying: bool,
    /// Whether the current reply's text streamed in (then its thought is not sent again).
    streamed: bool,
    /// The calls started and not yet finished: their arguments, for the diff at the end.
    calls: HashMap<String, (String, Value)>,
}

impl Translator {
    /// A translator for a new turn.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A translator for the history of a stored session (`session/load`): the stored events
    /// have no text deltas, and each run's prompt is sent as `user_message_chunk`.
    #[must_use]
    pub fn replaying() -> Self {
        Self {
            replaying: true,
            ..Self::default()
        }
    }

    /// The updates `event` makes (`SessionUpdate`s; none for most events a person in an editor
    /// does not read).
    pub fn updates(&mut self, event: &AgentEvent) -> Vec<Value> {
        match event {
            AgentEvent::RunStarted {
                request: Some(request),
                ..
            } if self.replaying => vec![json!({
                "sessionUpdate": "user_message_chunk",
                "content": { "type": "text", "text": request },
            })],
            AgentEvent::StepStarted { .. } => {
                self.streamed = false;
                Vec::new()
            }
            AgentEvent::TextDelta { text } => {
                self.streamed = true;
                vec![chunk(text)]
            }
            AgentEvent::ReasoningDelta { text } => vec![json!({
                "sessionUpdate": "agent_thought_chunk",
                "content": { "type": "text", "text": text },
            })],
            AgentEvent::Retry { .. } => {
                // The reply starts again from the beginning: let the thought carry it.
                self.streamed = false;
                Vec::new()
            }
            AgentEvent::Thought { content, .. } => {
                let streamed = std::mem::take(&mut self.streamed);
                if streamed || content.trim().is_empty() {
                    Vec::new()
                } else {
                    vec![chunk(content)]
                }
            }
            AgentEvent::ToolCallStarted { call, .. } => {
                let name = call.function.name.clone();
                let args: Value =
                    serde_json::from_str(&call.function.arguments).unwrap_or(Value::Null);
                let started = json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": call.id,
                    "title": title(&name, &args),
                    "kind": tool_kind(&name, &args),
                    "status": "in_progress",
                    "locations": locations(&name, &args),
                    "rawInput": args,
                });
                self.calls.insert(call.id.clone(), (name, args));
                vec![started]
            }
            AgentEvent::ToolProgress {
                call_id, message, ..
            } => vec![json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "content": [text_content(message)],
            })],
            AgentEvent::ToolCallFinished {
                call_id,
                observation,
                success,
                ..
            } => {
                let mut content = Vec::new();
                if *success
                    && let Some((name, args)) = self.calls.get(call_id)
                    && let Some(diff) = diff(name, args)
                {
                    content.push(diff);
                }
                content.push(text_content(observation));
                self.calls.remove(call_id);
                vec![json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": if *success { "completed" } else { "failed" },
                    "content": content,
                })]
            }
            _ => Vec::new(),
        }
    }
}

/// The planning flow's plan, kept as its events tell it, for `plan` updates (each one the whole
/// plan: ACP replaces the editor's with it).
#[derive(Debug, Default)]
pub struct PlanTracker {
    /// Each step's text and status (`pending`, `in_progress`, `completed`).
    entries: Vec<(String, &'static str)>,
}

impl PlanTracker {
    /// An empty plan.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The `plan` update a flow event makes (`None` when it changes nothing), given the event
    /// as JSON (`FlowEvent` serialised: `plan_created`, `step_started`, `step_finished`).
    pub fn update(&mut self, event: &Value) -> Option<Value> {
        match event["type"].as_str()? {
            "plan_created" => {
                self.entries = event["plan"]["steps"]
                    .as_array()?
                    .iter()
                    .map(|step| (step.as_str().unwrap_or_default().to_owned(), "pending"))
                    .collect();
            }
            "step_started" => {
                let index = usize::try_from(event["index"].as_u64()?).ok()?;
                self.entries.get_mut(index)?.1 = "in_progress";
            }
            "step_finished" => {
                let index = usize::try_from(event["index"].as_u64()?).ok()?;
                // A blocked step is not done: it goes back to waiting (ACP has no "failed").
                let status = if event["status"] == "completed" {
                    "completed"
                } else {
                    "pending"
                };
                self.entries.get_mut(index)?.1 = status;
            }
            _ => return None,
        }
        let entries: Vec<Value> = self
            .entries
            .iter()
            .map(|(content, status)| {
                json!({ "content": content, "priority": "medium", "status": status })
            })
            .collect();
        Some(json!({ "sessionUpdate": "plan", "entries": entries }))
    }
}

/// A piece of the agent's message (`agent_message_chunk`).
fn chunk(text: &str) -> Value {
    json!({ "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": text } })
}

#[cfg(test)]
mod tests {
    use agent_core::ToolCall as Call;

    use super::*;

    fn started(id: &str, name: &str, args: &Value) -> AgentEvent {
        AgentEvent::ToolCallStarted {
            step: 1,
            call: Call::new(id, name, args.to_string()),
        }
    }

    #[test]
    fn a_calls_title_is_the_one_its_update_gave() {
        let args = json!({"command": "ls -la\necho more"});
        let call = Call::new("c9", "bash", args.to_string());
        let sent = Translator::new().updates(&started("c9", "bash", &args));
        assert_eq!(sent[0]["title"], call_title(&call));
        assert_eq!(call_title(&call), "bash: ls -la");
    }

    #[test]
    fn an_edit_is_a_located_tool_call_that_ends_with_its_diff() {
        let mut translator = Translator::new();
        let args = json!({"command": "create", "path": "/w/a.txt", "file_text": "hi\n"});
        let sent = translator.updates(&started("c1", "str_replace_editor", &args));
        assert_eq!(sent[0]["sessionUpdate"], "tool_call");
        assert_eq!(sent[0]["kind"], "edit");
        assert_eq!(sent[0]["status"], "in_progress");
        assert_eq!(sent[0]["locations"][0]["path"], "/w/a.txt");
        let sent = translator.updates(&AgentEvent::ToolCallFinished {
            step: 1,
            call_id: "c1".into(),
            name: "str_replace_editor".into(),
            observation: "File created".into(),
            success: true,
        });
        assert_eq!(sent[0]["sessionUpdate"], "tool_call_update");
        assert_eq!(sent[0]["status"], "completed");
        assert_eq!(sent[0]["content"][0]["type"], "diff");
        assert_eq!(sent[0]["content"][0]["newText"], "hi\n");
        assert_eq!(sent[0]["content"][1]["content"]["text"], "File created");
    }

    #[test]
    fn streamed_text_is_not_sent_twice() {
        let mut translator = Translator::new();
        let delta = AgentEvent::TextDelta { text: "Hel".into() };
        assert_eq!(translator.updates(&delta).len(), 1);
        let thought = AgentEvent::Thought {
            step: 1,
            content: "Hello".into(),
            tool_calls: vec![],
        };
        assert!(translator.updates(&thought).is_empty());
        // A reply that did not stream comes whole.
        let sent = translator.updates(&thought);
        assert_eq!(sent[0]["sessionUpdate"], "agent_message_chunk");
        assert_eq!(sent[0]["content"]["text"], "Hello");
    }

    #[test]
    fn the_flows_plan_is_sent_whole_at_each_change() {
        let mut plan = PlanTracker::new();
        let created = json!({"type": "plan_created", "plan": {"steps": ["one", "two"]}});
        let sent = plan.update(&created).unwrap();
        assert_eq!(sent["sessionUpdate"], "plan");
        assert_eq!(sent["entries"][1]["status"], "pending");
        let sent = plan
            .update(&json!({"type": "step_started", "index": 0}))
            .unwrap();
        assert_eq!(sent["entries"][0]["status"], "in_progress");
        let done = json!({"type": "step_finished", "index": 0, "status": "completed"});
        assert_eq!(
            plan.update(&done).unwrap()["entries"][0]["status"],
            "completed"
        );
        let blocked = json!({"type": "step_finished", "index": 1, "status": "blocked"});
        assert_eq!(
            plan.update(&blocked).unwrap()["entries"][1]["status"],
            "pending"
        );
        assert!(
            plan.update(&json!({"type": "step_started", "index": 9}))
                .is_none()
        );
        assert!(plan.update(&json!({"type": "finished"})).is_none());
    }

    #[test]
    fn kinds_and_stop_reasons() {
        assert_eq!(tool_kind("bash", &json!({})), "execute");
        assert_eq!(
            tool_kind("str_replace_editor", &json!({"command": "view"})),
            "read"
        );
        assert_eq!(tool_kind("browser_use", &json!({})), "fetch");
        assert_eq!(tool_kind("planning", &json!({})), "think");
        assert_eq!(stop_reason(Ending::Finished), Some("end_turn"));
        assert_eq!(stop_reason(Ending::MaxSteps), Some("max_turn_requests"));
        assert_eq!(stop_reason(Ending::Cancelled), Some("cancelled"));
        assert_eq!(stop_reason(Ending::Refused), Some("refusal"));
        assert_eq!(stop_reason(Ending::Failed), None);
    }
}
