//! How many tokens a request takes, estimated before it is sent: [`estimate_tokens`] (a token
//! for every four bytes of its JSON), and a bound of it read from the lengths of the request's
//! texts, without serialising it — what a step pays for the check when the request is far
//! below the limit, as most are.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use agent_core::{Message, ToolDefinition};
use agent_llm::ChatRequest;
use serde_json::Value;

/// A writer that only counts what it is given.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What one image counts for: providers bill an image by its size in tiles, not by its base64
/// bytes (OpenAI: 765 tokens for a high-detail 1024×1024 image; Anthropic about 1,600 at most).
pub const IMAGE_TOKENS: u64 = 1_600;

/// An estimate of the tokens of `request` as sent: a token for every four bytes of its JSON
/// (system prompt, messages and tool schemas), an over-estimate for English text and code, and
/// [`IMAGE_TOKENS`] for each image instead of its base64 bytes.
#[must_use]
pub fn estimate_tokens(request: &ChatRequest) -> u64 {
    // Counted as written: the request is not kept in memory a second time.
    let mut counter = ByteCount(0);
    let bytes = serde_json::to_writer(&mut counter, request).map_or(0, |()| counter.0);
    let (images, image_bytes) = request
        .all_messages()
        .filter_map(|m| m.base64_image.as_ref())
        .fold((0_u64, 0_usize), |(n, total), image| {
            (n + 1, total.saturating_add(image.len()))
        });
    let text = u64::try_from(bytes.saturating_sub(image_bytes).div_ceil(4)).unwrap_or(u64::MAX);
    text.saturating_add(images.saturating_mul(IMAGE_TOKENS))
}

/// Room for what JSON puts around a message's texts: its keys, quotes and punctuation.
const MESSAGE_ROOM: usize = 160;
/// Room for what JSON puts around a tool call's or a tool's texts.
const ITEM_ROOM: usize = 96;
/// Room for the request's own keys and punctuation.
const REQUEST_ROOM: usize = 160;
/// The most bytes one byte of a text takes in JSON (`\u001f`).
const ESCAPED: usize = 6;

/// A bound of [`estimate_tokens`] (never below it), from the lengths of the request's texts:
/// each byte counted as the six a JSON escape may take, each message, call and tool with room
/// for its keys, each image as [`IMAGE_TOKENS`].
#[must_use]
pub(crate) fn tokens_at_most(request: &ChatRequest, tools: &ToolsBound) -> u64 {
    let mut bytes = REQUEST_ROOM;
    let mut images = 0_u64;
    for message in request.all_messages() {
        bytes = bytes.saturating_add(message_bound(message));
        if message.base64_image.is_some() {
            images += 1;
        }
    }
    bytes = bytes.saturating_add(tools.of(&request.tools));
    let text = u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX);
    text.saturating_add(images.saturating_mul(IMAGE_TOKENS))
}

/// The size bound of the last tool list an agent sent, kept while that list lives: an agent
/// sends one list step after step, and its schemas are not walked again at every step. Each
/// agent keeps its own (agents with other lists do not take each other's turn).
#[derive(Debug, Default)]
pub(crate) struct ToolsBound(Mutex<Option<(Weak<[ToolDefinition]>, usize)>>);

impl ToolsBound {
    /// The most bytes `tools` take in JSON.
    fn of(&self, tools: &Arc<[ToolDefinition]>) -> usize {
        let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((list, bound)) = last.as_ref()
            && list.upgrade().is_some_and(|list| Arc::ptr_eq(&list, tools))
        {
            return *bound;
        }
        let bound = tools.iter().fold(0_usize, |bytes, tool| {
            let function = &tool.function;
            let texts = tool.kind.len() + function.name.len() + function.description.len();
            bytes
                .saturating_add(ITEM_ROOM)
                .saturating_add(texts.saturating_mul(ESCAPED))
                .saturating_add(value_bound(&function.parameters))
        });
        *last = Some((Arc::downgrade(tools), bound));
        bound
    }
}

/// [`tokens_at_most`] when it is at most `limit` (the request is below it, whatever its exact
/// size), else [`estimate_tokens`].
#[must_use]
pub(crate) fn tokens_within(request: &ChatRequest, limit: u64, tools: &ToolsBound) -> u64 {
    let bound = tokens_at_most(request, tools);
    if bound <= limit {
        bound
    } else {
        estimate_tokens(request)
    }
}

/// The most bytes `message` takes in JSON, its image (counted apart) left out.
fn message_bound(message: &Message) -> usize {
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let mut texts = text(&message.content) + text(&message.name) + text(&message.tool_call_id);
    let mut bytes = MESSAGE_ROOM;
    for call in message.tool_calls.iter().flatten() {
        texts += call.id.len() + call.kind.len() + call.function.name.len();
        texts += call.function.arguments.len();
        bytes = bytes.saturating_add(ITEM_ROOM);
    }
    bytes.saturating_add(texts.saturating_mul(ESCAPED))
}

/// The most bytes `value` takes in JSON.
fn value_bound(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 5,
        // An f64 or i64 written out: at most 24 characters.
        Value::Number(_) => 24,
        Value::String(s) => 2 + s.len() * ESCAPED,
        Value::Array(items) => items
            .iter()
            .fold(2, |n, item| n.saturating_add(value_bound(item) + 1)),
        Value::Object(fields) => fields.iter().fold(2, |n, (key, item)| {
            n.saturating_add(key.len() * ESCAPED + 4 + value_bound(item))
        }),
    }
}

#[cfg(test)]
mod tests {
    use agent_core::{ToolCall, ToolChoice, ToolDefinition};
    use serde_json::json;

    use super::*;

    #[test]
    fn an_image_counts_as_a_fixed_number_of_tokens_not_as_its_base64_bytes() {
        let text = Message::user_message("Current browser screenshot:");
        let plain = estimate_tokens(&ChatRequest::new(vec![text.clone()]));
        let with_image = estimate_tokens(&ChatRequest::new(vec![
            text.with_image("A".repeat(400_000)),
        ]));
        // The image's own field name and quotes may add a few tokens; its 400 kB do not.
        let extra = with_image - plain;
        assert!(
            (IMAGE_TOKENS..IMAGE_TOKENS + 16).contains(&extra),
            "an image added {extra} tokens"
        );
    }

    #[test]
    fn the_bound_is_never_below_the_estimate_and_not_far_above_it_for_plain_text() {
        let escapes = "quotes \" and \\ slashes, tabs\t, new\nlines and \u{1} controls ";
        let tool = ToolDefinition::new(
            "str_replace_editor",
            "View and edit files",
            json!({"type": "object", "properties": {"path": {"type": "string", "maxLength": 4096}},
                   "required": ["path"], "additionalProperties": false}),
        );
        let messages = vec![
            Message::user_message("Read the file."),
            Message::from_tool_calls(
                vec![ToolCall::new(
                    "c1",
                    "str_replace_editor",
                    r#"{"path":"a.rs"}"#,
                )],
                "Viewing.",
            ),
            Message::tool_message(escapes.repeat(40), "str_replace_editor", "c1"),
            Message::user_message("And this?").with_image("A".repeat(10_000)),
        ];
        let request = ChatRequest::new(messages)
            .with_system(vec![Message::system_message("You are an agent.")])
            .with_tools(vec![tool], ToolChoice::Auto);
        let exact = estimate_tokens(&request);
        let tools = ToolsBound::default();
        let bound = tokens_at_most(&request, &tools);
        assert!(bound >= exact, "{bound} < {exact}");
        assert!(bound <= exact * 8, "{bound} is far above {exact}");
        // Every control character escaped as \u00XX: the bound still holds.
        let controls = ChatRequest::new(vec![Message::user_message("\u{1}".repeat(1_000))]);
        assert!(tokens_at_most(&controls, &tools) >= estimate_tokens(&controls));
        // Below a limit the bound is taken; above it, the exact estimate.
        assert_eq!(tokens_within(&request, bound, &tools), bound);
        assert_eq!(tokens_within(&request, bound - 1, &tools), exact);
    }

    #[test]
    fn each_tool_list_has_its_own_bound_when_lists_take_turns() {
        let tool = |name: &str, properties: usize| {
            let properties: serde_json::Map<String, Value> = (0..properties)
                .map(|i| (format!("p{i}"), json!({"type": "string"})))
                .collect();
            ToolDefinition::new(
                name,
                "a tool",
                json!({"type": "object", "properties": properties}),
            )
        };
        let small = ChatRequest::new(vec![Message::user_message("go")])
            .with_tools(vec![tool("a", 1)], ToolChoice::Auto);
        let large = ChatRequest::new(vec![Message::user_message("go")])
            .with_tools(vec![tool("a", 1), tool("b", 40)], ToolChoice::Auto);
        // One agent's bound, asked about two lists in turn.
        let tools = ToolsBound::default();
        let (first_small, first_large) = (
            tokens_at_most(&small, &tools),
            tokens_at_most(&large, &tools),
        );
        assert!(first_large > first_small);
        for _ in 0..3 {
            assert_eq!(tokens_at_most(&small, &tools), first_small);
            assert_eq!(tokens_at_most(&large, &tools), first_large);
        }
        // A new list equal to the first is bounded alike; one gone leaves nothing wrong behind.
        let again = ChatRequest::new(vec![Message::user_message("go")])
            .with_tools(vec![tool("a", 1)], ToolChoice::Auto);
        drop(small);
        assert_eq!(tokens_at_most(&again, &tools), first_small);
        assert!(tokens_at_most(&again, &tools) >= estimate_tokens(&again));
    }
}
