//! The prose of a text-mode reply while it streams: what a reader is shown of it, without the
//! tool-call markup the model writes (`<tool_call>{…}</tool_call>`, a fenced call, a bare call
//! object), even when a tag or a fence is split across chunks.
//!
//! [`VisibleText`] takes the reply's pieces as they arrive and gives back the text that can be
//! shown now. Markup is decided as [`parse_reply`](super::parse_reply) decides it: a
//! `<tool_call>` block is always markup; a fenced block is held until it closes, then dropped
//! when it holds a call of an offered tool (or an attempt at one), else let through; a `{` is
//! held until its object closes, then dropped when it is a call of an offered tool. Leading and
//! trailing whitespace is dropped as `parse_reply` trims it, so the pieces of a reply add up to
//! the text of its thought. (One difference: `parse_reply` looks at the whole reply, and when it
//! holds a `<tool_call>` tag anywhere, fenced and bare calls count as text; a stream cannot
//! know that ahead, so they are dropped here whatever comes after them.)

use super::parse::{CLOSE, OPEN, balanced_end, fence_at, fenced_calls, is_bare_call};

const FENCE: &str = "```";

/// A text-mode reply's visible text, piece by piece (see the [`text_mode`](crate::text_mode) module).
#[derive(Debug, Clone, Default)]
pub struct VisibleText {
    /// The offered tools' names.
    tools: Vec<String>,
    /// Received and not decided yet: the start of a tag, a fence or an object.
    held: String,
    /// Inside a `<tool_call>` block, which is dropped up to its `</tool_call>`.
    in_tag: bool,
    /// The whitespace at the ends of the reply.
    trim: Trim,
}

/// Trims a reply that comes in pieces.
#[derive(Debug, Clone, Default)]
struct Trim {
    /// Some text was let through (whitespace before it is dropped).
    started: bool,
    /// Whitespace after the last text let through: it goes out when more text follows.
    spaces: String,
}

impl VisibleText {
    /// For a reply to a request that offered `tools`.
    #[must_use]
    pub fn new(tools: &[&str]) -> Self {
        Self {
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            ..Self::default()
        }
    }

    /// Takes the next piece of the reply; returns the text that can be shown now (often
    /// empty while markup streams).
    pub fn push(&mut self, piece: &str) -> String {
        self.held.push_str(piece);
        let mut shown = String::new();
        self.scan(false, &mut shown);
        shown
    }

    /// The reply has ended: returns what was held back and turned out to be text (a fence or
    /// an object that never closed).
    pub fn finish(&mut self) -> String {
        let mut shown = String::new();
        self.scan(true, &mut shown);
        self.trim.spaces.clear();
        shown
    }

    /// The reply starts again from its beginning (after a retry).
    pub fn restart(&mut self) {
        *self = Self::new(&self.tools.iter().map(String::as_str).collect::<Vec<_>>());
    }

    /// Lets through what can be decided in `held`; at the `end`, everything.
    fn scan(&mut self, end: bool, shown: &mut String) {
        loop {
            if self.in_tag {
                if let Some(at) = self.held.find(CLOSE) {
                    self.held.drain(..at + CLOSE.len());
                    self.in_tag = false;
                    continue;
                }
                // Only the end that may be the start of `</tool_call>` is kept.
                let keep = if end {
                    0
                } else {
                    partial_start(&self.held, CLOSE)
                };
                self.held.drain(..self.held.len() - keep);
                return;
            }
            let tools: Vec<&str> = self.tools.iter().map(String::as_str).collect();
            let next = [
                self.held.find(OPEN).map(|at| (at, Markup::Tag)),
                self.held.find(FENCE).map(|at| (at, Markup::Fence)),
                self.held
                    .find('{')
                    .filter(|_| !tools.is_empty())
                    .map(|at| (at, Markup::Object)),
            ]
            .into_iter()
            .flatten()
            .min_by_key(|(at, _)| *at);
            let Some((at, markup)) = next else {
                let keep = if end {
                    0
                } else {
                    partial_start(&self.held, OPEN).max(partial_start(&self.held, FENCE))
                };
                let text: String = self.held.drain(..self.held.len() - keep).collect();
                self.trim.show(&text, shown);
                return;
            };
            let before: String = self.held.drain(..at).collect();
            self.trim.show(&before, shown);
            match markup {
                Markup::Tag => {
                    self.held.drain(..OPEN.len());
                    self.in_tag = true;
                }
                Markup::Fence => match fence_at(&self.held) {
                    Some(fence) => {
                        let len = fence.len;
                        let call = fenced_calls(&fence, &tools).is_some();
                        let block: String = self.held.drain(..len).collect();
                        if !call {
                            self.trim.show(&block, shown);
                        }
                    }
                    // Not closed: the rest is text at the end (as parse_reply reads it).
                    None if end => {
                        let text = std::mem::take(&mut self.held);
                        self.trim.show(&text, shown);
                        return;
                    }
                    None => return,
                },
                Markup::Object => match balanced_end(&self.held) {
                    Some(len) if is_bare_call(&self.held[..len], &tools) => {
                        self.held.drain(..len);
                    }
                    // Not a call: the brace is text, and what follows it is looked at again.
                    Some(_) => {
                        self.held.drain(..1);
                        self.trim.show("{", shown);
                    }
                    None if end => {
                        let text = std::mem::take(&mut self.held);
                        self.trim.show(&text, shown);
                        return;
                    }
                    None => return,
                },
            }
        }
    }
}

impl Trim {
    /// Lets `text` through, less the whitespace at the start of the reply, and holding back
    /// the whitespace at its end until more text follows.
    fn show(&mut self, text: &str, shown: &mut String) {
        let text = if self.started {
            text
        } else {
            text.trim_start()
        };
        let body = text.trim_end();
        if body.is_empty() {
            self.spaces.push_str(text);
            return;
        }
        self.started = true;
        shown.push_str(&self.spaces);
        self.spaces.clear();
        shown.push_str(body);
        self.spaces.push_str(&text[body.len()..]);
    }
}

/// What starts at a position of the held text.
#[derive(Debug, Clone, Copy)]
enum Markup {
    Tag,
    Fence,
    Object,
}

/// The length of the longest end of `text` that is a proper beginning of `marker`.
fn partial_start(text: &str, marker: &str) -> usize {
    (1..marker.len())
        .rev()
        .find(|n| text.ends_with(&marker[..*n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text_mode::parse_reply;
    use proptest::prelude::*;

    const TOOLS: &[&str] = &["bash", "terminate"];

    /// The reply streamed in pieces cut at `cuts` (byte offsets, on character boundaries).
    fn streamed(reply: &str, cuts: &[usize]) -> (Vec<String>, String) {
        let mut visible = VisibleText::new(TOOLS);
        let mut pieces = Vec::new();
        let mut from = 0;
        for &cut in cuts.iter().chain(std::iter::once(&reply.len())) {
            if cut < from || !reply.is_char_boundary(cut) {
                continue;
            }
            pieces.push(visible.push(&reply[from..cut]));
            from = cut;
        }
        pieces.push(visible.finish());
        let whole = pieces.concat();
        (pieces, whole)
    }

    const REPLIES: &[&str] = &[
        "Let me look.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>",
        "Let me look.\n<tool_call>{\"name\": \"bash\", \"arguments\": {}}</tool_call>\nThen more <b>bold</b>.\n<tool_call>{'name': 'terminate', 'arguments': {'status': 'success',}}",
        "Running it:\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"pwd\"}}\n```\nDone.",
        "Here is data:\n```json\n{\"name\": \"Ann\", \"age\": 3}\n```\nNow:\n```json\n{\"name\": \"bash\", \"parameters\": {\"command\": \"pwd\"}}\n```",
        "Code:\n```python\nprint({'a': 1})\n```\nand `x` < y.",
        r#"I will run {"function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}} now"#,
        r#"The answer is {"name": "x", "arguments": {}} and {a}."#,
        "  Plain prose, ünïcode ✓, nothing else.  \n",
        "An unclosed fence:\n```json\n{\"name\": \"bash\"",
        "A brace that never closes { and more",
        "<tool_call>{\"name\": \"terminate\", \"arguments\": {\"status\": \"success\"}}</tool_call>",
    ];

    #[test]
    fn the_pieces_add_up_to_the_thought_however_the_reply_is_cut() {
        for reply in REPLIES {
            let expected = parse_reply(reply, TOOLS).text;
            for size in 1..=reply.len() {
                let cuts: Vec<usize> = (size..reply.len()).step_by(size).collect();
                let (_, whole) = streamed(reply, &cuts);
                assert_eq!(whole, expected, "{reply:?} cut every {size} bytes");
            }
        }
    }

    #[test]
    fn markup_never_shows_and_prose_is_not_held_back() {
        let reply = REPLIES[1];
        let cuts: Vec<usize> = (1..reply.len()).collect();
        let (pieces, _) = streamed(reply, &cuts);
        for piece in &pieces {
            assert!(
                !piece.contains("tool") && !piece.contains("name") && !piece.contains('{'),
                "{piece:?}"
            );
        }
        // Prose goes out as it comes: the first words before the reply has ended.
        let mut visible = VisibleText::new(TOOLS);
        assert_eq!(visible.push("Let me "), "Let me");
        assert_eq!(visible.push("look.\n<tool_"), " look.");
        assert_eq!(visible.push("call>{\"name\": \"ba"), "");
        assert_eq!(visible.push("sh\"}</tool_ca"), "");
        assert_eq!(visible.push("ll>\nDone."), "\n\nDone.");
        assert_eq!(visible.finish(), "");
    }

    #[test]
    fn without_offered_tools_only_tags_are_markup() {
        let mut visible = VisibleText::new(&[]);
        let shown = visible.push("a {\"name\": \"bash\"} b <tool_call>x</tool_call> c");
        assert_eq!(shown + &visible.finish(), "a {\"name\": \"bash\"} b  c");
    }

    #[test]
    fn a_restart_forgets_the_first_attempt() {
        let mut visible = VisibleText::new(TOOLS);
        assert_eq!(visible.push("First <tool_call>{"), "First");
        visible.restart();
        assert_eq!(visible.push("Second."), "Second.");
    }

    proptest! {
        #[test]
        fn any_cut_of_any_reply_adds_up(
            reply in prop::sample::select(REPLIES),
            cuts in prop::collection::vec(0usize..200, 0..12),
        ) {
            let mut cuts = cuts;
            cuts.sort_unstable();
            let (_, whole) = streamed(reply, &cuts);
            prop_assert_eq!(whole, parse_reply(reply, TOOLS).text);
        }
    }
}
