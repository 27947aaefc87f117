//! Turns each request body into a linear `model_request` line: every distinct message is
//! written once and referred to by number afterwards, every distinct tool once by schema hash.

use foldhash::HashMap;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::format::{LEGACY_BODY, MESSAGES, NEW_MESSAGES, NEW_TOOLS, PARAMS, TOOLS};
use super::handle::{RequestDelta, ToolsDelta};

/// Hex digits of SHA-256 kept in a schema hash.
const HASH_HEX_DIGITS: usize = 16;

/// What the journal has written so far: the messages by their JSON text, the tools by hash,
/// and the previous request of each model that sends deltas.
#[derive(Debug, Default)]
pub(crate) struct Encoder {
    /// Message JSON text → its number.
    messages: HashMap<String, u64>,
    /// Tool schema hash → the tool's JSON text.
    tools: HashMap<String, String>,
    /// The previous request of each delta stream.
    streams: HashMap<u64, Previous>,
}

/// A stream's previous request, as written.
#[derive(Debug, Default)]
struct Previous {
    /// The message numbers, in order.
    numbers: Vec<u64>,
    /// The `[name, hash]` pairs of its tools, as written (kept as text: an agent sends the
    /// same tools step after step).
    tools: Option<Arc<RawValue>>,
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
            let mut new = Vec::new();
            let numbers: Vec<u64> = messages
                .into_iter()
                .map(|message| self.number(message, &mut new))
                .collect();
            line.insert(NEW_MESSAGES.into(), Value::Array(new));
            line.insert(MESSAGES.into(), ranges(&numbers));
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

    /// The same fields as [`encode`](Self::encode) gives for the whole body, from what changed
    /// since the stream's previous request: only the new messages are looked at, as the JSON
    /// text they were given in (no `Value` of them is made).
    pub(crate) fn encode_delta(&mut self, delta: RequestDelta) -> RequestLine {
        let mut previous = self.streams.remove(&delta.stream).unwrap_or_default();
        previous.numbers.truncate(delta.keep);
        let mut new = Vec::new();
        for message in delta.new_messages {
            let (number, first) = self.number_of(Cow::Borrowed(message.get()));
            if first {
                new.push(message);
            }
            previous.numbers.push(number);
        }
        let (tools, new_tools) = match delta.tools {
            ToolsDelta::Absent => {
                previous.tools = None;
                (None, None)
            }
            ToolsDelta::Same => {
                let tools = previous
                    .tools
                    .clone()
                    .or_else(|| written(&Value::Array(Vec::new())));
                (tools, None)
            }
            ToolsDelta::New(tools) => {
                let (refs, new) = self.tools(tools);
                previous.tools = written(&Value::Array(refs));
                (previous.tools.clone(), (!new.is_empty()).then_some(new))
            }
        };
        let line = RequestLine {
            messages: ranges(&previous.numbers),
            new_messages: new,
            new_tools,
            params: delta.params,
            tools,
        };
        self.streams.insert(delta.stream, previous);
        line
    }

    /// The number of `message`: its earlier number, or the next one (and it joins `new`).
    fn number(&mut self, message: Value, new: &mut Vec<Value>) -> u64 {
        let (number, first) = self.number_of(Cow::Owned(message.to_string()));
        if first {
            new.push(message);
        }
        number
    }

    /// The number of the message whose JSON is `text`, and whether this is its first time
    /// (it then takes the next number).
    fn number_of(&mut self, text: Cow<'_, str>) -> (u64, bool) {
        if let Some(&number) = self.messages.get(text.as_ref()) {
            return (number, false);
        }
        let next = u64::try_from(self.messages.len()).unwrap_or(u64::MAX);
        self.messages.insert(text.into_owned(), next);
        (next, true)
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

/// The fields of a `model_request` line [`Encoder::encode_delta`] gives, declared in the order
/// a `Value` object prints its keys (sorted), so that it serialises to the bytes the same line
/// built as a `Value` does (the store keeps it so).
#[derive(Debug, Serialize)]
pub(crate) struct RequestLine {
    /// [`MESSAGES`].
    messages: Value,
    /// [`NEW_MESSAGES`], as given.
    new_messages: Vec<Arc<RawValue>>,
    /// [`NEW_TOOLS`].
    #[serde(skip_serializing_if = "Option::is_none")]
    new_tools: Option<Map<String, Value>>,
    /// [`PARAMS`].
    params: Arc<RawValue>,
    /// [`TOOLS`].
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Arc<RawValue>>,
}

impl RequestLine {
    /// The line's fields as values (for a line that is written with others): what it
    /// serialises to, read back.
    pub(crate) fn into_map(self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(line)) => line,
            _ => Map::new(),
        }
    }
}

/// `value` as JSON text (`None` only if it could not be written, which a `Value` always can).
pub(crate) fn written(value: &Value) -> Option<Arc<RawValue>> {
    RawValue::from_string(value.to_string()).ok().map(Arc::from)
}

/// Message numbers as half-open ranges `[start, end)` of consecutive numbers.
fn ranges(numbers: &[u64]) -> Value {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for &number in numbers {
        match ranges.last_mut() {
            Some((_, end)) if *end == number => *end += 1,
            _ => ranges.push((number, number + 1)),
        }
    }
    Value::Array(
        ranges
            .into_iter()
            .map(|(start, end)| json!([start, end]))
            .collect(),
    )
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
    fn a_delta_writes_the_line_the_whole_body_writes() {
        let tool = json!({"type": "function", "function": {"name": "bash", "parameters": {}}});
        let bodies = [
            json!({"model": "m", "messages": [{"a": 1}, {"b": 2}], "tools": [tool]}),
            json!({"model": "m", "messages": [{"a": 1}, {"b": 2}, {"c": 3}], "tools": [tool]}),
            // A cut: the second message is gone; the next-step prompt {"a": 1} comes back.
            json!({"model": "m", "messages": [{"a": 1}, {"c": 3}, {"a": 1}]}),
            json!({"model": "m", "messages": [{"a": 1}, {"c": 3}, {"a": 1}], "tools": [tool]}),
        ];
        let keeps = [0, 2, 1, 3];
        let mut whole = Encoder::default();
        let mut deltas = Encoder::default();
        let mut previous_tools: Option<Value> = None;
        for (body, keep) in bodies.into_iter().zip(keeps) {
            let expected = whole.encode(body.clone());
            let mut params = body.as_object().unwrap().clone();
            let messages = params.remove("messages").unwrap();
            let tools = params.remove("tools");
            let params = Arc::from(serde_json::value::to_raw_value(&params).unwrap());
            let tools_delta = match (&tools, &previous_tools) {
                (None, _) => ToolsDelta::Absent,
                (Some(now), Some(before)) if now == before => ToolsDelta::Same,
                (Some(now), _) => ToolsDelta::New(now.as_array().unwrap().clone()),
            };
            previous_tools = tools;
            let delta = RequestDelta {
                stream: 7,
                params,
                keep,
                new_messages: messages.as_array().unwrap()[keep..]
                    .iter()
                    .map(|m| Arc::from(serde_json::value::to_raw_value(m).unwrap()))
                    .collect(),
                tools: tools_delta,
            };
            let line = deltas.encode_delta(delta);
            // Written straight, it is the bytes of the same line made as a `Value`.
            assert_eq!(
                serde_json::to_string(&line).unwrap(),
                Value::Object(expected.clone()).to_string()
            );
            assert_eq!(line.into_map(), expected);
        }
    }

    #[test]
    fn a_hash_taken_by_another_schema_gets_a_suffix() {
        let mut encoder = Encoder::default();
        let taken = encoder.hash("one");
        encoder.tools.insert(taken.clone(), "another".into());
        assert_eq!(encoder.hash("one"), format!("{taken}-2"));
    }
}
