//! Request trimming: fewer bytes for the same information. Every step resends the whole
//! conversation; some of it the model no longer needs in full. Each saving is a named
//! [`TrimPolicy`], chosen by [`RequestTrimming`] (`[agent] request_trimming`):
//!
//! * [`TrimPolicy::SupersededFileViews`] — an earlier view of a file whose whole content a later
//!   call showed again (a full view) or wrote (`create`, `create_file`, `full_file_rewrite`)
//!   becomes a note naming that later call (a view shorter than its note is sent as it is);
//! * [`TrimPolicy::OldImages`] — a tool's image (or a browser screenshot) older than that tool's
//!   latest one is sent as its caption and a note, without the image;
//! * [`TrimPolicy::RepeatedOutputs`] — a long tool output identical to an earlier one still in
//!   the request becomes a note naming the earlier call.
//!
//! The policies shape the request only: memory, the session store and the journal keep every
//! message as it was, and a later step (after compaction removed the earlier copy, say) sends
//! a message in full again. A stand-in keeps its message's role, tool name and call id, so
//! every tool result still answers its call, and the task message is never changed.
//! [`RequestTrimming::OPENMANUS`] sends memory as it is.
//!
//! Cost: one pass over the messages per step, parsing the (short) arguments of file-tool calls
//! only — each call's once per agent, which keeps what it read — and comparing outputs only
//! when their lengths are equal; no serialisation.

use foldhash::{HashMap, HashMapExt as _, HashSet, HashSetExt as _};
use std::sync::{Mutex, PoisonError};

pub use agent_config::{RequestTrimming, TrimPolicy};
use agent_core::{Message, Role, ToolCall};
use serde::Deserialize;
use serde_json::Value;

/// The first words of the user message that carries an image a tool returned (then the tool's
/// name and a colon: `Image returned by browser_use:`).
pub const TOOL_IMAGE_PREFIX: &str = "Image returned by ";

/// The text of the user message that carries the browser's latest screenshot (added by the
/// browser context of agents that browse).
pub const SCREENSHOT_MESSAGE: &str = "Current browser screenshot:";

/// Shortest tool output that [`TrimPolicy::RepeatedOutputs`] replaces, in bytes: a shorter one
/// costs little more than the note would.
pub const REPEATED_OUTPUT_MIN_BYTES: usize = 1024;

/// What the agent puts in front of a tool's output that ran (an error starts otherwise).
const OBSERVED: &str = "Observed output of cmd `";

/// What a file-tool call did to a file, as far as trimming cares.
#[derive(Debug, Clone)]
enum FileOp {
    /// Showed the file (or directory); `whole`: all of it.
    View { path: String, whole: bool },
    /// Wrote all of the file (its content is in the call's arguments).
    Write { path: String },
}

#[derive(Deserialize)]
struct EditorArgs {
    #[serde(default)]
    command: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    view_range: Option<Value>,
}

#[derive(Deserialize)]
struct SandboxFilesArgs {
    #[serde(default)]
    action: String,
    #[serde(default)]
    file_path: String,
}

/// Whether a `view_range` asks for the whole file (absent, null, empty, or `[1, -1]`).
fn whole_range(range: Option<&Value>) -> bool {
    match range {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => {
            items.is_empty()
                || (items.len() == 2
                    && items[0].as_i64() == Some(1)
                    && items[1].as_i64() == Some(-1))
        }
        Some(_) => false,
    }
}

/// The file operation of `call`, for the file tools trimming knows.
fn file_op(call: &ToolCall) -> Option<FileOp> {
    let raw = call.function.arguments.as_str();
    match call.function.name.as_str() {
        agent_tools::STR_REPLACE_EDITOR => {
            let args: EditorArgs = serde_json::from_str(raw).ok()?;
            if args.path.is_empty() {
                return None;
            }
            match args.command.as_str() {
                "view" => Some(FileOp::View {
                    whole: whole_range(args.view_range.as_ref()),
                    path: args.path,
                }),
                "create" => Some(FileOp::Write { path: args.path }),
                _ => None,
            }
        }
        "sandbox_files" => {
            let args: SandboxFilesArgs = serde_json::from_str(raw).ok()?;
            if args.file_path.is_empty() {
                return None;
            }
            match args.action.as_str() {
                "read_file" => Some(FileOp::View {
                    path: args.file_path,
                    whole: true,
                }),
                "create_file" | "full_file_rewrite" => Some(FileOp::Write {
                    path: args.file_path,
                }),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The file operations of the calls an agent's requests held, by call id, with the arguments
/// they were read from: every step's request holds every earlier call, and reading their
/// arguments again at each step made trimming's cost grow with the square of the run. The
/// notes written for superseded views are kept too: a note never changes once written, and
/// writing each again at every step cost as much as the rest of trimming.
#[derive(Debug, Default)]
pub(crate) struct FileOps {
    known: Mutex<Known>,
}

/// What [`FileOps`] keeps.
#[derive(Debug, Default)]
struct Known {
    /// Call id → the arguments read and the operation they name.
    ops: HashMap<String, (String, Option<FileOp>)>,
    /// The notes written for superseded views.
    notes: Notes,
}

/// A superseded view's call id → its note.
#[derive(Debug, Default)]
struct Notes(HashMap<String, Note>);

/// The note that stands in for a superseded view, with what it was written from.
#[derive(Debug)]
struct Note {
    path: String,
    later: String,
    wrote: bool,
    bytes: usize,
    text: String,
}

impl FileOps {
    /// Keeps at most this many calls more than a request holds (calls compaction removed).
    const SLACK: usize = 64;
}

impl Known {
    /// Reads the file operation of `call` unless it was read from the same arguments.
    fn read(&mut self, call: &ToolCall) {
        if let Some((arguments, _)) = self.ops.get(&call.id)
            && *arguments == call.function.arguments
        {
            return;
        }
        self.ops.insert(
            call.id.clone(),
            (call.function.arguments.clone(), file_op(call)),
        );
    }

    /// Forgets the calls a request no longer holds, once there are many.
    fn forget_beyond(&mut self, calls: &HashMap<&str, &ToolCall>) {
        if self.ops.len() > calls.len() + FileOps::SLACK {
            self.ops.retain(|id, _| calls.contains_key(id.as_str()));
        }
        if self.notes.0.len() > calls.len() + FileOps::SLACK {
            self.notes.0.retain(|id, _| calls.contains_key(id.as_str()));
        }
    }
}

impl Notes {
    /// The note for the view `id` of `path` (`bytes` long) superseded by `later`: the one
    /// written before when it was written from the same facts.
    fn note(&mut self, id: &str, path: &str, bytes: usize, later: &str, wrote: bool) -> String {
        if let Some(note) = self.0.get(id)
            && (
                note.path.as_str(),
                note.later.as_str(),
                note.wrote,
                note.bytes,
            ) == (path, later, wrote, bytes)
        {
            return note.text.clone();
        }
        let what = if wrote {
            "wrote the whole file"
        } else {
            "showed the whole file again"
        };
        let text = format!(
            "[Output of this view of {path} ({bytes} bytes) not resent: the later call \
             `{later}` {what}, so its output is the current one.]"
        );
        let note = Note {
            path: path.to_owned(),
            later: later.to_owned(),
            wrote,
            bytes,
            text: text.clone(),
        };
        self.0.insert(id.to_owned(), note);
        text
    }
}

/// Whether a tool message's text is the output of a call that ran and succeeded.
fn succeeded(observation: &str) -> bool {
    const EXECUTED: &str = "` executed:\n";
    observation.strip_prefix(OBSERVED).is_some_and(|rest| {
        // The first "` executed:\n", found from backtick to backtick (a byte search, where a
        // string search would set up its searcher for every message at every step).
        rest.match_indices('`')
            .find_map(|(at, _)| rest.get(at..)?.strip_prefix(EXECUTED))
            .is_none_or(|body| !body.starts_with("Error: "))
    })
}

/// The source of an image the agent put in memory: the tool's name, or `browser` for a
/// screenshot message. `None` for any other message (an image the user gave).
fn image_source(message: &Message) -> Option<&str> {
    if message.role != Role::User || message.base64_image.is_none() {
        return None;
    }
    let text = message.text();
    if text == SCREENSHOT_MESSAGE {
        return Some("browser");
    }
    text.strip_prefix(TOOL_IMAGE_PREFIX)
        .and_then(|rest| rest.strip_suffix(':'))
}

/// `message` with its text replaced by `note` (role, tool name and call id kept, no image).
fn stand_in(message: &Message, note: String) -> Message {
    Message {
        role: message.role,
        content: Some(note),
        tool_calls: message.tool_calls.clone(),
        name: message.name.clone(),
        tool_call_id: message.tool_call_id.clone(),
        base64_image: None,
    }
}

/// The messages of the request for memory `messages` (oldest first) under `trimming`: the same
/// messages in the same order, each either the memory message or a shorter stand-in. `task` is
/// the index of the current run's task, never changed. With no policy on this is
/// `messages.to_vec()`.
#[must_use]
pub fn request_messages(
    messages: &[Message],
    task: Option<usize>,
    trimming: RequestTrimming,
) -> Vec<Message> {
    request_messages_with(messages, task, trimming, &FileOps::default())
}

/// [`request_messages`], reading each call's file operation once across the steps of `ops`.
pub(crate) fn request_messages_with(
    messages: &[Message],
    task: Option<usize>,
    trimming: RequestTrimming,
    ops: &FileOps,
) -> Vec<Message> {
    if trimming.is_off() {
        return messages.to_vec();
    }
    let mut stand_ins: Vec<Option<Message>> = std::iter::repeat_with(|| None)
        .take(messages.len())
        .collect();
    let calls: HashMap<&str, &ToolCall> = messages
        .iter()
        .flat_map(Message::calls)
        .map(|call| (call.id.as_str(), call))
        .collect();
    let call_of = |message: &Message| {
        message
            .tool_call_id
            .as_deref()
            .and_then(|id| calls.get(id).copied())
    };

    if trimming.contains(TrimPolicy::SupersededFileViews) {
        // Latest first: for each file, the nearest later call that showed or wrote all of it.
        // A note names that call, not the latest one, so it never changes once written (the
        // request's prefix, a prompt cache and the journal's deltas stay stable).
        let mut guard = ops.known.lock().unwrap_or_else(PoisonError::into_inner);
        let known = &mut *guard;
        known.forget_beyond(&calls);
        // The outputs of calls that ran and succeeded, latest first.
        let views: Vec<(usize, &Message, &ToolCall)> = messages
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, message)| message.role == Role::Tool && succeeded(message.text()))
            .filter_map(|(at, message)| call_of(message).map(|call| (at, message, call)))
            .collect();
        for &(_, _, call) in &views {
            known.read(call);
        }
        let Known { ops: read, notes } = known;
        let mut current: HashMap<&str, (&str, bool)> = HashMap::new();
        for (at, message, call) in views {
            match read.get(&call.id).and_then(|(_, op)| op.as_ref()) {
                Some(FileOp::View { path, whole }) => {
                    if let Some(&(later, wrote)) = current.get(path.as_str()) {
                        let bytes = message.text().len();
                        let note = notes.note(&call.id, path, bytes, later, wrote);
                        // A short view costs less than the note: it is sent as it is.
                        if note.len() < bytes {
                            stand_ins[at] = Some(stand_in(message, note));
                        }
                    }
                    if *whole {
                        current.insert(path, (call.id.as_str(), false));
                    }
                }
                Some(FileOp::Write { path }) => {
                    current.insert(path, (call.id.as_str(), true));
                }
                None => {}
            }
        }
    }

    if trimming.contains(TrimPolicy::OldImages) {
        let mut newer: HashSet<&str> = HashSet::new();
        for (at, message) in messages.iter().enumerate().rev() {
            if Some(at) == task {
                continue;
            }
            let Some(source) = image_source(message) else {
                continue;
            };
            if !newer.insert(source) {
                stand_ins[at] = Some(stand_in(
                    message,
                    format!(
                        "{} [image not resent: a later image from `{source}` replaces it]",
                        message.text()
                    ),
                ));
            }
        }
    }

    if trimming.contains(TrimPolicy::RepeatedOutputs) {
        // Earliest first: the first copy is kept, later ones point at it.
        let mut by_length: HashMap<usize, Vec<usize>> = HashMap::new();
        for (at, message) in messages.iter().enumerate() {
            let text = message.text();
            if message.role != Role::Tool
                || text.len() < REPEATED_OUTPUT_MIN_BYTES
                || stand_ins[at].is_some()
            {
                continue;
            }
            let same = by_length.entry(text.len()).or_default();
            match same
                .iter()
                .find(|&&earlier| messages[earlier].text() == text)
            {
                Some(&earlier) => {
                    let earlier = &messages[earlier];
                    let id = earlier.tool_call_id.as_deref().unwrap_or("?");
                    let tool = earlier.name.as_deref().unwrap_or("tool");
                    stand_ins[at] = Some(stand_in(
                        message,
                        format!(
                            "[Same output as the earlier call `{id}` (`{tool}`), {} bytes, \
                             identical; not repeated here.]",
                            text.len()
                        ),
                    ));
                }
                None => same.push(at),
            }
        }
    }

    messages
        .iter()
        .zip(stand_ins)
        .map(|(message, replaced)| replaced.unwrap_or_else(|| message.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, tool: &str, args: Value) -> Message {
        Message::from_tool_calls(vec![ToolCall::new(id, tool, args.to_string())], "")
    }

    fn output(id: &str, tool: &str, body: &str) -> Message {
        Message::tool_message(
            format!("Observed output of cmd `{tool}` executed:\n{body}"),
            tool,
            id,
        )
    }

    fn view(id: &str, path: &str) -> [Message; 2] {
        [
            call(
                id,
                "str_replace_editor",
                serde_json::json!({"command": "view", "path": path}),
            ),
            output(
                id,
                "str_replace_editor",
                &format!("contents of {path} at {id}\n").repeat(12),
            ),
        ]
    }

    #[test]
    fn only_views_with_a_later_whole_view_or_write_are_replaced() {
        let mut messages = vec![Message::user_message("task")];
        messages.extend(view("a", "/w/x.py"));
        messages.extend(view("b", "/w/y.py"));
        // A partial view does not supersede; a failed whole view does not either.
        messages.push(call(
            "c",
            "str_replace_editor",
            serde_json::json!({"command": "view", "path": "/w/y.py", "view_range": [2, 3]}),
        ));
        messages.push(output("c", "str_replace_editor", "lines 2-3"));
        messages.push(call(
            "d",
            "str_replace_editor",
            serde_json::json!({"command": "view", "path": "/w/y.py"}),
        ));
        messages.push(Message::tool_message(
            "Error: ⚠️ Tool 'str_replace_editor' encountered a problem: gone",
            "str_replace_editor",
            "d",
        ));
        messages.extend(view("e", "/w/x.py"));
        let sent = request_messages(
            &messages,
            Some(0),
            RequestTrimming::of([TrimPolicy::SupersededFileViews]),
        );
        assert_eq!(sent.len(), messages.len());
        assert!(
            sent[2]
                .text()
                .starts_with("[Output of this view of /w/x.py"),
            "{}",
            sent[2].text()
        );
        assert!(sent[2].text().contains("`e` showed the whole file again"));
        assert_eq!(sent[2].tool_call_id.as_deref(), Some("a"));
        assert_eq!(sent[4], messages[4]);
        assert_eq!(sent[6], messages[6]);
        assert_eq!(sent[10], messages[10]);
    }

    #[test]
    fn operations_read_once_give_what_reading_them_each_time_gives() {
        let trimming = RequestTrimming::of([TrimPolicy::SupersededFileViews]);
        let ops = FileOps::default();
        let mut messages = vec![Message::user_message("task")];
        messages.extend(view("a", "/w/x.py"));
        messages.extend(view("b", "/w/y.py"));
        let check = |messages: &[Message]| {
            let cached = request_messages_with(messages, Some(0), trimming, &ops);
            assert_eq!(cached, request_messages(messages, Some(0), trimming));
            cached
        };
        // Nothing superseded yet.
        assert_eq!(check(&messages), messages);
        // A later whole view of x.py: `a`'s output becomes a note.
        messages.extend(view("c", "/w/x.py"));
        assert!(check(&messages)[2].text().contains("`c` showed"));
        // The id `c` again (another run, say), now viewing y.py: read again, not taken from
        // what `c` did before — `b` is superseded, `a` is not.
        let mut again = vec![Message::user_message("task")];
        again.extend(view("a", "/w/x.py"));
        again.extend(view("b", "/w/y.py"));
        again.extend(view("c", "/w/y.py"));
        let sent = check(&again);
        assert_eq!(sent[2], again[2]);
        assert!(sent[4].text().contains("`c` showed"));
        // `b` and `c` again viewing another file (a path of the same length): `b`'s note has
        // the same later call and length, and is written again for the new path, not taken
        // from before; then `b` with a longer output, the same.
        let mut renamed = again[..3].to_vec();
        renamed.extend(view("b", "/w/Y.py"));
        renamed.extend(view("c", "/w/Y.py"));
        let sent = check(&renamed);
        assert!(sent[4].text().contains("of /w/Y.py"), "{}", sent[4].text());
        again[4] = output("b", "str_replace_editor", &"longer y.py\n".repeat(40));
        let sent = check(&again);
        assert!(
            sent[4]
                .text()
                .contains(&format!("({} bytes)", again[4].text().len()))
        );
        // Calls no request holds any more are forgotten once there are enough of them.
        let many: Vec<Message> = (0..2 * FileOps::SLACK)
            .flat_map(|n| view(&format!("old{n}"), "/w/z.py"))
            .collect();
        check(&many);
        check(&again);
        let known = ops.known.lock().unwrap();
        assert!(known.ops.len() <= 3 + FileOps::SLACK);
        assert!(known.notes.0.len() <= 3 + FileOps::SLACK);
    }

    #[test]
    fn a_note_names_the_next_whole_view_so_it_never_changes() {
        let mut messages = vec![Message::user_message("task")];
        let trimming = RequestTrimming::of([TrimPolicy::SupersededFileViews]);
        messages.extend(view("a", "/w/x.py"));
        messages.extend(view("b", "/w/x.py"));
        let first = request_messages(&messages, Some(0), trimming);
        messages.extend(view("c", "/w/x.py"));
        let second = request_messages(&messages, Some(0), trimming);
        assert!(second[2].text().contains("`b`"), "{}", second[2].text());
        assert_eq!(first[..3], second[..3]);
        assert!(second[4].text().contains("`c`"), "{}", second[4].text());
        assert_eq!(second[6], messages[6]);
    }

    #[test]
    fn a_view_shorter_than_its_note_is_sent_as_it_is() {
        let mut messages = vec![Message::user_message("task")];
        for id in ["a", "b"] {
            messages.push(call(
                id,
                "str_replace_editor",
                serde_json::json!({"command": "view", "path": "/w/x.py"}),
            ));
            messages.push(output(id, "str_replace_editor", "x = 1"));
        }
        let sent = request_messages(
            &messages,
            Some(0),
            RequestTrimming::of([TrimPolicy::SupersededFileViews]),
        );
        assert_eq!(sent, messages);
    }

    #[test]
    fn whole_ranges() {
        assert!(whole_range(None));
        assert!(whole_range(Some(&serde_json::json!([]))));
        assert!(whole_range(Some(&serde_json::json!([1, -1]))));
        assert!(!whole_range(Some(&serde_json::json!([1, 20]))));
    }

    #[test]
    fn success_is_read_from_the_observation() {
        assert!(succeeded("Observed output of cmd `bash` executed:\nok"));
        assert!(!succeeded(
            "Observed output of cmd `bash` executed:\nError: no"
        ));
        assert!(!succeeded("Error: Unknown tool 'x'"));
    }
}
