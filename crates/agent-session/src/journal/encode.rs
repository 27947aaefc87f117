//! Turns each request body into a linear `model_request` line: every distinct message is
//! written once and referred to by number afterwards, every distinct tool once by schema hash.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::format::{LEGACY_BODY, MESSAGES, NEW_MESSAGES, NEW_TOOLS, PARAMS, TOOLS};

/// Hex digits of SHA-256 kept in a schema hash.
const HASH_HEX_DIGITS: usize = 16;

/// What the journal has written so far: the messages by their JSON text, the tools by hash.
#[derive(Debug, Default)]
pub(crate) struct Encoder {
    /// Message JSON text → its number.
    messages: HashMap<String, u64>,
    /// Tool schema hash → the tool's JSON text.
    tools: HashMap<String, String>,
}

impl Encoder {
    /// The fields of the `model_request` line for `body` (see the module docs of
    /// [`journal`](crate::journal) for their meaning). `messages` and `tools` are encoded when
    /// they are arrays; every other field of the body goes into `params` unchanged. A body that
    /// is not an object is written whole, as `body`.
    pub(crate) fn encode(&mut self, body: Value) -> Map<String, Value> {
        let mut line = Map::new();
        let mut params = match body {
            Value::Object(fields) => fields,
            other => {
                line.insert(LEGACY_BODY.into(), other);
                return line;
            }
        };
        if let Some(Value::Array(messages)) = params.remove("messages") {
            let (new, ranges) = self.messages(messages);
            line.insert(NEW_MESSAGES.into(), Value::Array(new));
            line.insert(MESSAGES.into(), ranges);
        }
        if let Some(Value::Array(tools)) = params.remove("tools") {
            let (refs, new) = self.tools(tools);
            line.insert(TOOLS.into(), Value::Array(refs));
            if !new.is_empty() {
                line.insert(NEW_TOOLS.into(), Value::Object(new));
            }
        }
        line.insert(PARAMS.into(), Value::Object(params));
        line
    }

    /// The messages not written before, and the whole list as ranges of message numbers.
    fn messages(&mut self, messages: Vec<Value>) -> (Vec<Value>, Value) {
        let mut new = Vec::new();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for message in messages {
            let text = message.to_string();
            let next = u64::try_from(self.messages.len()).unwrap_or(u64::MAX);
            let number = *self.messages.entry(text).or_insert_with(|| {
                new.push(message);
                next
            });
            match ranges.last_mut() {
                Some((_, end)) if *end == number => *end += 1,
                _ => ranges.push((number, number + 1)),
            }
        }
        let ranges = ranges
            .into_iter()
            .map(|(start, end)| json!([start, end]))
            .collect();
        (new, Value::Array(ranges))
    }

    /// `[name, hash]` for every tool, and the tools whose hash is new.
    fn tools(&mut self, tools: Vec<Value>) -> (Vec<Value>, Map<String, Value>) {
        let mut refs = Vec::with_capacity(tools.len());
        let mut new = Map::new();
        for tool in tools {
            let text = tool.to_string();
            let hash = self.hash(&text);
            if !self.tools.contains_key(&hash) {
                self.tools.insert(hash.clone(), text);
                new.insert(hash.clone(), tool.clone());
            }
            refs.push(json!([tool_name(&tool), hash]));
        }
        (refs, new)
    }

    /// The schema hash of a tool's JSON text: the first hex digits of its SHA-256, with a
    /// `-2`, `-3`, ... suffix in the (astronomically unlikely) case that another schema of this
    /// journal already has them, so that a hash always names one schema.
    fn hash(&self, text: &str) -> String {
        let digest = Sha256::digest(text.as_bytes());
        let mut base = String::with_capacity(HASH_HEX_DIGITS);
        for byte in digest.iter().take(HASH_HEX_DIGITS / 2) {
            let _ = write!(base, "{byte:02x}");
        }
        let mut hash = base.clone();
        let mut suffix = 1;
        while self.tools.get(&hash).is_some_and(|known| known != text) {
            suffix += 1;
            hash = format!("{base}-{suffix}");
        }
        hash
    }
}

/// A tool's name: `function.name` (OpenAI shape) or `name`; empty when it has neither.
fn tool_name(tool: &Value) -> &str {
    tool.pointer("/function/name")
        .or_else(|| tool.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_seen_before_is_a_range_not_a_copy() {
        let mut encoder = Encoder::default();
        let first = encoder.encode(json!({"model": "m", "messages": [{"a": 1}, {"b": 2}]}));
        assert_eq!(first[NEW_MESSAGES], json!([{"a": 1}, {"b": 2}]));
        assert_eq!(first[MESSAGES], json!([[0, 2]]));
        assert_eq!(first[PARAMS], json!({"model": "m"}));
        // {"b": 2} moved to the end, {"c": 3} is new: only it is written.
        let second = encoder.encode(json!({"messages": [{"a": 1}, {"c": 3}, {"b": 2}]}));
        assert_eq!(second[NEW_MESSAGES], json!([{"c": 3}]));
        assert_eq!(second[MESSAGES], json!([[0, 1], [2, 3], [1, 2]]));
    }

    #[test]
    fn a_tool_schema_is_written_the_first_time_its_hash_appears() {
        let mut encoder = Encoder::default();
        let tool = json!({"type": "function", "function": {"name": "bash", "parameters": {}}});
        let first = encoder.encode(json!({"messages": [], "tools": [tool]}));
        let hash = first[TOOLS][0][1].as_str().unwrap().to_owned();
        assert_eq!(hash.len(), HASH_HEX_DIGITS);
        assert_eq!(first[TOOLS], json!([["bash", hash]]));
        assert_eq!(first[NEW_TOOLS][&hash], tool);
        let second = encoder.encode(json!({"messages": [], "tools": [tool]}));
        assert_eq!(second[TOOLS], json!([["bash", hash]]));
        assert!(second.get(NEW_TOOLS).is_none());
    }

    #[test]
    fn a_hash_taken_by_another_schema_gets_a_suffix() {
        let mut encoder = Encoder::default();
        let taken = encoder.hash("one");
        encoder.tools.insert(taken.clone(), "another".into());
        assert_eq!(encoder.hash("one"), format!("{taken}-2"));
    }
}
