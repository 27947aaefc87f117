//! Content blocks, the unit of Anthropic's Messages API and Bedrock's Converse. Going out, both
//! take a tool call's id and input, and an image, the same way ([`tool_use_id`],
//! [`tool_input`], [`Image`]); each wire module shapes the blocks. Coming back, both streams
//! deliver a reply as numbered blocks of text or of a tool's input JSON, arriving in pieces;
//! [`assemble`] turns the finished blocks into the reply's text and calls.

use agent_core::ToolCall;
use serde_json::{Value, json};

use crate::format::image_mime;

/// A tool-use id as both APIs accept it (`^[a-zA-Z0-9_-]+$`): any other character becomes `_`,
/// and an empty id becomes `empty` (each API's own placeholder).
pub(crate) fn tool_use_id(id: &str, empty: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        empty.to_owned()
    } else {
        clean
    }
}

/// A tool call's `arguments` as the block's `input`, which must be an object: `{}` for none,
/// and arguments that were never a JSON object still reach the model as sent, under
/// `arguments`.
pub(crate) fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ if arguments.trim().is_empty() => json!({}),
        _ => json!({"arguments": arguments}),
    }
}

/// A base64 image as an image block carries it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Image<'a> {
    /// The MIME type, sniffed from the bytes (`image/png`; JPEG when unknown).
    pub media_type: &'static str,
    /// The base64 data, without surrounding whitespace.
    pub data: &'a str,
}

impl<'a> Image<'a> {
    /// The image of `base64_image`.
    pub(crate) fn new(base64_image: &'a str) -> Self {
        Self {
            media_type: image_mime(base64_image),
            data: base64_image.trim(),
        }
    }

    /// The format name: the MIME type's subtype (`png`).
    #[cfg_attr(not(feature = "bedrock"), allow(dead_code))]
    pub(crate) fn format(&self) -> &'static str {
        self.media_type.trim_start_matches("image/")
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_inputs_and_images_as_blocks_take_them() {
        assert_eq!(tool_use_id("call.1:x", "toolu_empty"), "call_1_x");
        assert_eq!(tool_use_id("", "tooluse_empty"), "tooluse_empty");
        assert_eq!(tool_input(r#"{"a": 1}"#), json!({"a": 1}));
        assert_eq!(tool_input(" "), json!({}));
        assert_eq!(tool_input("[1]"), json!({"arguments": "[1]"}));
        let image = Image::new(" iVBORw0KGgo\n");
        assert_eq!(
            (image.media_type, image.format(), image.data),
            ("image/png", "png", "iVBORw0KGgo")
        );
    }
}
