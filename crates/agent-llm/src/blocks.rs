//! The content blocks of a streamed reply. Anthropic's Messages stream and Bedrock's
//! ConverseStream both deliver a reply as numbered blocks of text or of a tool's input JSON,
//! arriving in pieces; [`assemble`] turns the finished blocks into the reply's text and calls.

use agent_core::ToolCall;

/// One content block being received.
#[derive(Debug)]
pub(crate) enum Block {
    /// Text, as received so far.
    Text(String),
    /// A tool call: its input JSON as received so far.
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    /// Thinking, reasoning and other blocks the agent does not use.
    Other,
}

/// The text (`None` when there is none) and the tool calls of `blocks`, in the order of their
/// numbers. A tool call with no input has the arguments `{}`.
pub(crate) fn assemble<I: Ord>(mut blocks: Vec<(I, Block)>) -> (Option<String>, Vec<ToolCall>) {
    blocks.sort_by(|(a, _), (b, _)| a.cmp(b));
    let mut text = String::new();
    let mut calls = Vec::new();
    for (_, block) in blocks {
        match block {
            Block::Text(t) => text.push_str(&t),
            Block::ToolUse { id, name, json } => {
                let arguments = if json.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    json
                };
                calls.push(ToolCall::new(id, name, arguments));
            }
            Block::Other => {}
        }
    }
    ((!text.is_empty()).then_some(text), calls)
}
