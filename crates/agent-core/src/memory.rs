//! The agent's conversation memory, bounded by message count, truncated only at turn boundaries.
//!
//! OpenManus keeps the last `max_messages` messages by plain slicing, which can cut between an
//! assistant `tool_calls` message and its `tool` results (providers then reject every request) and
//! drops the original task (spec §13 W1). [`Memory`] instead removes whole *turns* (an assistant
//! message together with the `tool` results answering it) from the oldest end, and never removes
//! the first user message (the original task) or the request of the current run (see
//! [`Memory::add_task`]).
//!
//! Why one file past 700 lines (a quarter of it its tests): the turn-pairing rules, the bounded
//! store and the task index are one invariant (no request ever holds a call without its result),
//! which only holds if one type checks every change.

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde_json::Value;
use thiserror::Error;

use crate::schema::{Message, Role, ToolCall};

/// The default message cap, as in OpenManus.
pub const DEFAULT_MAX_MESSAGES: usize = 100;

/// A conversation in which a `tool` message and its assistant `tool_calls` message are not paired.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PairingError {
    /// A `tool` message that does not answer a call of the assistant message before it.
    #[error(
        "message {index}: tool result '{tool_call_id}' does not answer a preceding assistant tool call"
    )]
    OrphanToolResult {
        /// Position of the `tool` message.
        index: usize,
        /// Its `tool_call_id` (empty when missing).
        tool_call_id: String,
    },
    /// An assistant tool call that has no `tool` message answering it.
    #[error("message {index}: tool call '{tool_call_id}' has no tool result")]
    MissingToolResult {
        /// Position of the assistant message.
        index: usize,
        /// The unanswered call's id.
        tool_call_id: String,
    },
}

/// What tool-call pairing needs to know of one message, in whatever form the conversation is
/// kept ([`Message`]s here, raw JSON in a test server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairingItem<'a> {
    /// A `tool` message answering this call id (`None` when it has none).
    ToolResult(Option<&'a str>),
    /// An assistant message with these tool-call ids.
    Calls(Vec<&'a str>),
    /// Any other message.
    Other,
}

/// A pairing violation of [`check_pairing`]: the error, and for a missing result every id the
/// assistant message still waited for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairingViolation {
    /// The first violation.
    pub error: PairingError,
    /// For [`PairingError::MissingToolResult`]: all the unanswered ids, in call order.
    pub unanswered: Vec<String>,
}

/// [`check_tool_pairing`] over any conversation described as [`PairingItem`]s.
///
/// # Errors
///
/// The first pairing violation found, scanning from the start.
pub fn check_pairing<'a>(
    items: impl IntoIterator<Item = PairingItem<'a>>,
    allow_open_tail: bool,
) -> Result<(), PairingViolation> {
    let missing = |index: usize, pending: Vec<&str>| PairingViolation {
        error: PairingError::MissingToolResult {
            index,
            tool_call_id: pending.first().copied().unwrap_or_default().to_owned(),
        },
        unanswered: pending.into_iter().map(str::to_owned).collect(),
    };
    // (index of the assistant message, ids it still waits for)
    let mut open: Option<(usize, Vec<&str>)> = None;
    for (index, item) in items.into_iter().enumerate() {
        match item {
            PairingItem::ToolResult(id) => {
                let answered = id.is_some_and(|id| {
                    open.as_mut()
                        .and_then(|(_, pending)| {
                            pending
                                .iter()
                                .position(|p| *p == id)
                                .map(|at| pending.remove(at))
                        })
                        .is_some()
                });
                if !answered {
                    return Err(PairingViolation {
                        error: PairingError::OrphanToolResult {
                            index,
                            tool_call_id: id.unwrap_or_default().to_owned(),
                        },
                        unanswered: Vec::new(),
                    });
                }
            }
            other => {
                if let Some((at, pending)) = open.take()
                    && !pending.is_empty()
                {
                    return Err(missing(at, pending));
                }
                if let PairingItem::Calls(ids) = other
                    && !ids.is_empty()
                {
                    open = Some((index, ids));
                }
            }
        }
    }
    match open {
        Some((at, pending)) if !allow_open_tail && !pending.is_empty() => Err(missing(at, pending)),
        _ => Ok(()),
    }
}

/// Checks that every `tool` message directly follows (possibly after other `tool` messages) the
/// assistant message whose call it answers, and that every call is answered before the next
/// non-`tool` message. With `allow_open_tail`, calls of the last assistant message may still be
/// unanswered (a step in progress); without it, the list must be complete, as a provider demands.
///
/// # Errors
///
/// The first pairing violation found, scanning from the start.
pub fn check_tool_pairing(messages: &[Message], allow_open_tail: bool) -> Result<(), PairingError> {
    let items = messages.iter().map(|message| {
        if message.role == Role::Tool {
            PairingItem::ToolResult(Some(message.tool_call_id.as_deref().unwrap_or_default()))
        } else if message.has_tool_calls() {
            PairingItem::Calls(message.calls().iter().map(|c| c.id.as_str()).collect())
        } else {
            PairingItem::Other
        }
    });
    check_pairing(items, allow_open_tail).map_err(|violation| violation.error)
}

/// Splits a conversation into turns: each non-`tool` message starts a turn, and `tool` messages
/// belong to the turn of the assistant `tool_calls` message they follow. A `tool` message with no
/// such assistant message before it forms a turn of its own.
#[must_use]
pub fn turns(messages: &[Message]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut open_calls = false;
    for (index, message) in messages.iter().enumerate() {
        match (message.role, out.last_mut()) {
            (Role::Tool, Some(last)) if open_calls && last.end == index => last.end = index + 1,
            _ => {
                open_calls = message.has_tool_calls();
                out.push(index..index + 1);
            }
        }
    }
    out
}

/// A change of a [`Memory`], as its [`MemoryObserver`] is told of it, right after it happened.
///
/// Every message a memory holds has an id, unique within that memory and increasing in the
/// order messages were added (messages are only ever added at the end), so the ids of the
/// messages held are always in ascending order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemoryChange<'a> {
    /// A message was added at the end.
    Added {
        /// Its id.
        id: u64,
        /// The message.
        message: &'a Message,
    },
    /// A message held was changed in place ([`Memory::edit`]).
    Edited {
        /// Its id.
        id: u64,
        /// The message as it is now.
        message: &'a Message,
    },
    /// Messages were removed (truncation, [`Memory::clear`]).
    Removed {
        /// Their ids.
        ids: &'a [u64],
    },
}

/// Told of every change of the memory it observes ([`Memory::set_observer`]), synchronously,
/// while the memory is borrowed: keep it cheap (a session store serialises the message and
/// queues it for its writer task).
pub trait MemoryObserver: Send + Sync {
    /// One change.
    fn changed(&self, change: MemoryChange<'_>);
}

/// The conversation memory of one agent.
pub struct Memory {
    messages: Vec<Message>,
    /// The id of each message, parallel to `messages`.
    ids: Vec<u64>,
    /// The id the next message added takes.
    next_id: u64,
    max_messages: usize,
    /// Index of the current run's request, pinned like the first user message.
    task: Option<usize>,
    /// Told of every change.
    observer: Option<Arc<dyn MemoryObserver>>,
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memory")
            .field("messages", &self.messages)
            .field("max_messages", &self.max_messages)
            .field("task", &self.task)
            .field("observed", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

/// A clone holds the same messages (with the same ids) but no observer: it is a copy, not the
/// observed memory.
impl Clone for Memory {
    fn clone(&self) -> Self {
        Self {
            messages: self.messages.clone(),
            ids: self.ids.clone(),
            next_id: self.next_id,
            max_messages: self.max_messages,
            task: self.task,
            observer: None,
        }
    }
}

/// Memories are equal when they hold the same messages, cap and pinned task (ids and observers
/// are not compared).
impl PartialEq for Memory {
    fn eq(&self, other: &Self) -> bool {
        self.messages == other.messages
            && self.max_messages == other.max_messages
            && self.task == other.task
    }
}

impl Eq for Memory {}

impl Default for Memory {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_MESSAGES)
    }
}

impl Memory {
    /// An empty memory holding at most `max_messages` messages (see [`Memory::truncate`] for the
    /// two cases where it holds more).
    #[must_use]
    pub fn new(max_messages: usize) -> Self {
        Self {
            messages: Vec::new(),
            ids: Vec::new(),
            next_id: 0,
            max_messages,
            task: None,
            observer: None,
        }
    }

    /// Tells `observer` of every later change (`None`: nobody). The messages already held are
    /// not reported: read them, with their ids, from [`Memory::messages`] and [`Memory::ids`].
    pub fn set_observer(&mut self, observer: Option<Arc<dyn MemoryObserver>>) {
        self.observer = observer;
    }

    /// Whether an observer is set.
    #[must_use]
    pub fn is_observed(&self) -> bool {
        self.observer.is_some()
    }

    /// The id of each message held, parallel to [`Memory::messages`] (ascending).
    #[must_use]
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// Pushes one message at the end, with the next id, and reports it.
    fn push(&mut self, message: Message) {
        let id = self.next_id;
        self.next_id += 1;
        self.messages.push(message);
        self.ids.push(id);
        if let (Some(observer), Some(message)) = (&self.observer, self.messages.last()) {
            observer.changed(MemoryChange::Added { id, message });
        }
    }

    /// Changes messages in place: `edit` is called on each message, oldest first, and returns
    /// whether it changed it (those are reported as [`MemoryChange::Edited`]). Keep roles and
    /// tool-call ids as they are, or the tool calls and their answers no longer pair. Returns
    /// how many messages were changed.
    pub fn edit(&mut self, mut edit: impl FnMut(&mut Message) -> bool) -> usize {
        let mut changed = 0;
        for (message, id) in self.messages.iter_mut().zip(&self.ids) {
            if edit(message) {
                changed += 1;
                if let Some(observer) = &self.observer {
                    observer.changed(MemoryChange::Edited { id: *id, message });
                }
            }
        }
        changed
    }

    /// Replaces the whole turns in `range` with one message (a summary of them), keeping the
    /// order of everything else. The replacement takes the place, and the id, of the first
    /// message replaced (reported as [`MemoryChange::Edited`]); the others are reported
    /// [`MemoryChange::Removed`]. Returns `false`, changing nothing, when `range` is empty, out
    /// of bounds, does not start and end at turn boundaries (see [`turns`]) or holds the pinned
    /// task of the current run.
    pub fn replace_turns(&mut self, range: Range<usize>, replacement: Message) -> bool {
        let starts: Vec<usize> = turns(&self.messages).iter().map(|t| t.start).collect();
        let boundary = |at: usize| at == self.messages.len() || starts.contains(&at);
        if range.is_empty()
            || range.end > self.messages.len()
            || !boundary(range.start)
            || !boundary(range.end)
            || self.task.is_some_and(|task| range.contains(&task))
        {
            return false;
        }
        let removed = range.len() - 1;
        self.messages[range.start] = replacement;
        let gone: Vec<u64> = self.ids.drain(range.start + 1..range.end).collect();
        self.messages.drain(range.start + 1..range.end);
        if let Some(task) = self.task
            && task >= range.end
        {
            self.task = Some(task - removed);
        }
        if let Some(observer) = &self.observer {
            observer.changed(MemoryChange::Edited {
                id: self.ids[range.start],
                message: &self.messages[range.start],
            });
            if !gone.is_empty() {
                observer.changed(MemoryChange::Removed { ids: &gone });
            }
        }
        true
    }

    /// The message cap.
    #[must_use]
    pub fn max_messages(&self) -> usize {
        self.max_messages
    }

    /// Changes the message cap and truncates to it.
    pub fn set_max_messages(&mut self, max_messages: usize) {
        self.max_messages = max_messages;
        self.truncate();
    }

    /// Appends a message, then truncates.
    pub fn add_message(&mut self, message: Message) {
        self.push(message);
        self.truncate();
    }

    /// Appends messages, then truncates once.
    pub fn add_messages(&mut self, messages: impl IntoIterator<Item = Message>) {
        for message in messages {
            self.push(message);
        }
        self.truncate();
    }

    /// Appends the request of a new run and pins it: truncation keeps it (with the first user
    /// message) until the next `add_task` or `clear`.
    pub fn add_task(&mut self, message: Message) {
        self.push(message);
        self.task = Some(self.messages.len() - 1);
        self.truncate();
    }

    /// The pinned request of the current run, if one was added with [`Memory::add_task`].
    #[must_use]
    pub fn current_task(&self) -> Option<&Message> {
        self.task.and_then(|at| self.messages.get(at))
    }

    /// Where the pinned request of the current run is (see [`Memory::current_task`]).
    #[must_use]
    pub fn task_index(&self) -> Option<usize> {
        self.task
    }

    /// Removes every message.
    pub fn clear(&mut self) {
        self.messages.clear();
        let ids = std::mem::take(&mut self.ids);
        self.task = None;
        if let Some(observer) = &self.observer
            && !ids.is_empty()
        {
            observer.changed(MemoryChange::Removed { ids: &ids });
        }
    }

    /// All messages, oldest first.
    #[must_use]
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The last `n` messages (`n = 0` gives none; OpenManus's `[-0:]` slice quirk, which returned
    /// the whole list, is not kept).
    #[must_use]
    pub fn get_recent_messages(&self, n: usize) -> &[Message] {
        let start = self.messages.len().saturating_sub(n);
        &self.messages[start..]
    }

    /// The newest message.
    #[must_use]
    pub fn last(&self) -> Option<&Message> {
        self.messages.last()
    }

    /// Number of messages held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// True when no message is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The messages as OpenAI chat-format JSON objects.
    #[must_use]
    pub fn to_dict_list(&self) -> Vec<Value> {
        self.messages.iter().map(Message::to_dict).collect()
    }

    /// The first user message: the task, which truncation never removes.
    #[must_use]
    pub fn first_user_message(&self) -> Option<&Message> {
        self.messages.iter().find(|m| m.role == Role::User)
    }

    /// Removes the oldest turns until at most `max_messages` remain. The turns holding the first
    /// user message and the current task, and the newest turn, are never removed, so memory may
    /// exceed the cap when those alone are longer than it. A turn is removed whole, so an assistant `tool_calls`
    /// message and its `tool` results are kept or dropped together.
    pub fn truncate(&mut self) {
        if self.messages.len() <= self.max_messages {
            return;
        }
        let turns = turns(&self.messages);
        let turn_of = |at: usize| turns.iter().position(|t| t.contains(&at));
        let first_user = self
            .messages
            .iter()
            .position(|m| m.role == Role::User)
            .and_then(turn_of);
        let task = self.task.and_then(turn_of);
        let newest = turns.len().saturating_sub(1);
        let mut len = self.messages.len();
        let mut dropped = vec![false; turns.len()];
        for (i, turn) in turns.iter().enumerate() {
            if len <= self.max_messages || i == newest {
                break;
            }
            if Some(i) == first_user || Some(i) == task {
                continue;
            }
            dropped[i] = true;
            len -= turn.len();
        }
        let mut keep = vec![true; self.messages.len()];
        for (turn, gone) in turns.iter().zip(dropped) {
            if gone {
                keep[turn.clone()].fill(false);
            }
        }
        if let Some(at) = self.task {
            let removed_before = keep[..at].iter().filter(|k| !**k).count();
            self.task = Some(at - removed_before);
        }
        let removed: Vec<u64> = self
            .ids
            .iter()
            .zip(&keep)
            .filter(|(_, kept)| !**kept)
            .map(|(id, _)| *id)
            .collect();
        let mut flags = keep.iter();
        self.messages
            .retain(|_| flags.next().copied().unwrap_or(true));
        let mut flags = keep.iter();
        self.ids.retain(|_| flags.next().copied().unwrap_or(true));
        if let Some(observer) = &self.observer
            && !removed.is_empty()
        {
            observer.changed(MemoryChange::Removed { ids: &removed });
        }
    }

    /// Tool calls of the newest assistant message that have no `tool` result yet (a step that
    /// was interrupted).
    #[must_use]
    pub fn open_tool_calls(&self) -> Vec<ToolCall> {
        let Some(start) = self.messages.iter().rposition(|m| m.role != Role::Tool) else {
            return Vec::new();
        };
        let assistant = &self.messages[start];
        if !assistant.has_tool_calls() {
            return Vec::new();
        }
        let answered: HashSet<&str> = self.messages[start + 1..]
            .iter()
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        assistant
            .calls()
            .iter()
            .filter(|c| !answered.contains(c.id.as_str()))
            .cloned()
            .collect()
    }

    /// Answers every open tool call (see [`Memory::open_tool_calls`]) with a `tool` message built
    /// by `observation`, so the conversation stays valid for the next request. Returns the calls
    /// it closed.
    pub fn close_open_tool_calls(
        &mut self,
        observation: impl Fn(&ToolCall) -> String,
    ) -> Vec<ToolCall> {
        let open = self.open_tool_calls();
        self.add_messages(
            open.iter().map(|call| {
                Message::tool_message(observation(call), &call.function.name, &call.id)
            }),
        );
        open
    }

    /// Checks the pairing invariant (see [`check_tool_pairing`]); the newest assistant message may
    /// still wait for results.
    ///
    /// # Errors
    ///
    /// The first pairing violation.
    pub fn check(&self) -> Result<(), PairingError> {
        check_tool_pairing(&self.messages, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(ids: &[&str]) -> Message {
        Message::from_tool_calls(
            ids.iter().map(|id| ToolCall::new(*id, "t", "{}")).collect(),
            "",
        )
    }

    fn result(id: &str) -> Message {
        Message::tool_message("ok", "t", id)
    }

    #[test]
    fn pairing_check_finds_orphans_and_missing_results() {
        let ok = [
            Message::user_message("u"),
            calls(&["a", "b"]),
            result("a"),
            result("b"),
        ];
        assert_eq!(check_tool_pairing(&ok, false), Ok(()));

        let orphan = [Message::user_message("u"), result("a")];
        assert_eq!(
            check_tool_pairing(&orphan, true),
            Err(PairingError::OrphanToolResult {
                index: 1,
                tool_call_id: "a".into()
            })
        );

        let missing = [
            Message::user_message("u"),
            calls(&["a", "b"]),
            result("a"),
            Message::user_message("x"),
        ];
        assert_eq!(
            check_tool_pairing(&missing, true),
            Err(PairingError::MissingToolResult {
                index: 1,
                tool_call_id: "b".into()
            })
        );

        let open_tail = [Message::user_message("u"), calls(&["a"])];
        assert_eq!(check_tool_pairing(&open_tail, true), Ok(()));
        assert!(check_tool_pairing(&open_tail, false).is_err());

        let wrong_id = [calls(&["a"]), result("z")];
        assert!(matches!(
            check_tool_pairing(&wrong_id, true),
            Err(PairingError::OrphanToolResult { .. })
        ));
    }

    #[test]
    fn turns_group_tool_results_with_their_call() {
        let msgs = [
            Message::user_message("u"),
            calls(&["a", "b"]),
            result("a"),
            result("b"),
            Message::assistant_message("text"),
            result("stray"),
        ];
        assert_eq!(turns(&msgs), vec![0..1, 1..4, 4..5, 5..6]);
    }

    #[test]
    fn truncation_drops_whole_turns_and_keeps_the_task() {
        let mut memory = Memory::new(4);
        memory.add_message(Message::user_message("task"));
        memory.add_message(Message::assistant_message("one"));
        memory.add_messages([calls(&["a", "b"]), result("a"), result("b")]);
        // 5 messages > 4: "one" goes first; the task is pinned, the newest turn is kept.
        let texts: Vec<_> = memory
            .messages()
            .iter()
            .map(|m| (m.role, m.text().to_owned()))
            .collect();
        assert_eq!(texts[0], (Role::User, "task".to_owned()));
        assert_eq!(memory.len(), 4);
        assert_eq!(memory.check(), Ok(()));

        memory.add_message(Message::assistant_message("two"));
        // The 3-message tool turn must go whole: plain slicing would leave orphans.
        assert_eq!(memory.len(), 2);
        assert_eq!(memory.messages()[1].text(), "two");
        assert_eq!(memory.check(), Ok(()));
    }

    #[test]
    fn an_oversized_newest_turn_is_kept_whole() {
        let mut memory = Memory::new(2);
        memory.add_message(Message::user_message("task"));
        memory.add_messages([
            calls(&["a", "b", "c"]),
            result("a"),
            result("b"),
            result("c"),
        ]);
        assert_eq!(memory.len(), 5);
        assert_eq!(memory.check(), Ok(()));
    }

    #[test]
    fn the_current_task_is_pinned_too() {
        let mut memory = Memory::new(3);
        memory.add_task(Message::user_message("first task"));
        memory.add_message(Message::assistant_message("a1"));
        memory.add_task(Message::user_message("second task"));
        for i in 0..5 {
            memory.add_message(Message::assistant_message(format!("b{i}")));
        }
        let texts: Vec<&str> = memory.messages().iter().map(Message::text).collect();
        assert_eq!(texts, ["first task", "second task", "b4"]);
        assert_eq!(
            memory.current_task().map(Message::text),
            Some("second task")
        );
        memory.clear();
        assert!(memory.current_task().is_none());
    }

    #[test]
    fn recent_messages_and_open_calls() {
        let mut memory = Memory::default();
        assert_eq!(memory.max_messages(), 100);
        memory.add_messages([Message::user_message("u"), calls(&["a", "b"]), result("a")]);
        assert_eq!(memory.get_recent_messages(0).len(), 0);
        assert_eq!(memory.get_recent_messages(2).len(), 2);
        assert_eq!(memory.get_recent_messages(10).len(), 3);
        let open: Vec<_> = memory.open_tool_calls().into_iter().map(|c| c.id).collect();
        assert_eq!(open, vec!["b".to_owned()]);
        assert_eq!(
            memory
                .close_open_tool_calls(|c| format!("cancelled {}", c.id))
                .len(),
            1
        );
        assert_eq!(memory.last().map(Message::text), Some("cancelled b"));
        assert!(memory.open_tool_calls().is_empty());
        assert_eq!(check_tool_pairing(memory.messages(), false), Ok(()));
    }

    /// Records every change as text.
    #[derive(Default)]
    struct Log(std::sync::Mutex<Vec<String>>);

    impl MemoryObserver for Log {
        fn changed(&self, change: MemoryChange<'_>) {
            let line = match change {
                MemoryChange::Added { id, message } => format!("+{id} {}", message.text()),
                MemoryChange::Edited { id, message } => format!("~{id} {}", message.text()),
                MemoryChange::Removed { ids } => format!("-{ids:?}"),
            };
            self.0.lock().unwrap().push(line);
        }
    }

    #[test]
    fn the_observer_hears_every_addition_edit_truncation_and_clear_with_stable_ids() {
        let log = Arc::new(Log::default());
        let mut memory = Memory::new(3);
        memory.add_message(Message::user_message("before"));
        memory.set_observer(Some(log.clone()));
        memory.add_task(Message::user_message("task"));
        memory.add_messages([
            Message::assistant_message("a"),
            Message::assistant_message("b"),
        ]);
        assert_eq!(memory.ids(), [0, 1, 3]);
        assert_eq!(
            memory.edit(|m| {
                let hit = m.text() == "b";
                if hit {
                    m.content = Some("B".into());
                }
                hit
            }),
            1
        );
        let copy = memory.clone();
        assert!(!copy.is_observed() && memory.is_observed());
        memory.clear();
        assert_eq!(
            *log.0.lock().unwrap(),
            ["+1 task", "+2 a", "+3 b", "-[2]", "~3 B", "-[0, 1, 3]"]
        );
        assert_eq!(copy.ids(), [0, 1, 3]);
        memory.add_message(Message::user_message("after"));
        assert_eq!(memory.ids(), [4], "ids are never reused");
    }

    #[test]
    fn replacing_turns_keeps_ids_ascending_pairing_valid_and_the_task_pinned() {
        let log = Arc::new(Log::default());
        let mut memory = Memory::new(100);
        memory.add_task(Message::user_message("task"));
        memory.add_messages([calls(&["a"]), result("a"), calls(&["b", "c"])]);
        memory.add_messages([result("b"), result("c"), Message::assistant_message("last")]);
        memory.set_observer(Some(log.clone()));
        // Not at turn boundaries (inside the second call's turn), or holding the task: refused.
        assert!(!memory.replace_turns(1..4, Message::user_message("x")));
        assert!(!memory.replace_turns(0..3, Message::user_message("x")));
        assert!(!memory.replace_turns(3..3, Message::user_message("x")));
        assert!(!memory.replace_turns(6..8, Message::user_message("x")));
        assert_eq!(memory.len(), 7);
        assert!(memory.replace_turns(1..6, Message::user_message("summary")));
        let texts: Vec<&str> = memory.messages().iter().map(Message::text).collect();
        assert_eq!(texts, ["task", "summary", "last"]);
        assert_eq!(memory.ids(), [0, 1, 6]);
        assert_eq!(memory.current_task().map(Message::text), Some("task"));
        assert_eq!(check_tool_pairing(memory.messages(), false), Ok(()));
        assert_eq!(*log.0.lock().unwrap(), ["~1 summary", "-[2, 3, 4, 5]"]);
    }
}
