//! One streamed chat-completions chunk, read without building a `serde_json::Value` tree: the
//! only `Value`s are the rare subtrees (`error`, `usage`) and the tool arguments (usually one
//! string). A chunk whose
//! fields have unexpected types is read leniently from a `Value` instead
//! ([`Chunk::from_value`]), with the same result as before: a field of the wrong type is
//! skipped.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

/// Appends tool-call arguments: a string verbatim, `null` as nothing, anything else (some
/// servers send an object) serialised.
pub(super) fn push_arguments(arguments: &Value, out: &mut String) {
    match arguments {
        Value::String(s) => out.push_str(s),
        Value::Null => {}
        other => out.push_str(&other.to_string()),
    }
}

/// A chunk: `error`, `usage` and the choices (only the first one is used).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Chunk<'a> {
    #[serde(default)]
    pub error: Option<Value>,
    #[serde(default)]
    pub usage: Option<Value>,
    #[serde(default, borrow)]
    pub model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub choices: Option<Vec<Choice<'a>>>,
}

/// One choice of a chunk.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub delta: Option<Delta<'a>>,
}

/// What a choice adds: text and tool-call fragments.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(default, borrow)]
    pub content: Option<Cow<'a, str>>,
    /// The model's reasoning: `reasoning_content` (DeepSeek, vLLM, SGLang) or `reasoning`
    /// (OpenRouter, Ollama).
    #[serde(default, borrow, alias = "reasoning_content")]
    pub reasoning: Option<Cow<'a, str>>,
    /// The model's refusal (OpenAI's structured outputs), instead of content.
    #[serde(default, borrow)]
    pub refusal: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<Fragment<'a>>>,
}

/// A fragment of one tool call.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Fragment<'a> {
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub index: Option<u64>,
    #[serde(default, borrow)]
    pub function: Option<Function<'a>>,
}

/// The function part of a fragment.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Function<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default)]
    pub arguments: Option<Value>,
}

impl<'a> Chunk<'a> {
    /// Reads a chunk leniently from a `Value`: a field of an unexpected type is left out.
    pub(super) fn from_value(value: &'a Value) -> Self {
        let text = |v: &'a Value, key: &str| v.get(key).and_then(Value::as_str).map(Cow::Borrowed);
        let present = |v: &'a Value, key: &str| v.get(key).filter(|v| !v.is_null());
        let fragment = |f: &'a Value| Fragment {
            id: text(f, "id"),
            index: f.get("index").and_then(Value::as_u64),
            function: present(f, "function").map(|function| Function {
                name: text(function, "name"),
                arguments: present(function, "arguments").cloned(),
            }),
        };
        let choice = |c: &'a Value| Choice {
            finish_reason: text(c, "finish_reason"),
            delta: present(c, "delta").map(|d| Delta {
                content: text(d, "content"),
                reasoning: text(d, "reasoning_content").or_else(|| text(d, "reasoning")),
                refusal: text(d, "refusal"),
                tool_calls: d
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .map(|calls| calls.iter().map(fragment).collect()),
            }),
        };
        Self {
            error: present(value, "error").cloned(),
            usage: present(value, "usage").cloned(),
            model: text(value, "model"),
            choices: value
                .get("choices")
                .and_then(Value::as_array)
                .map(|choices| choices.iter().take(1).map(choice).collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_append_verbatim_or_serialised() {
        for (raw, expected) in [
            (r#""{\"a\":1}""#, r#"{"a":1}"#),
            ("null", ""),
            (r#"{"a": 1}"#, r#"{"a":1}"#),
        ] {
            let mut out = String::new();
            push_arguments(&serde_json::from_str(raw).unwrap(), &mut out);
            assert_eq!(out, expected, "{raw}");
        }
    }

    #[test]
    fn the_two_readings_agree_on_a_usual_chunk() {
        let text = r#"{"choices":[{"index":0,"delta":{"content":"a\"b","tool_calls":[{"index":2,"id":"c","function":{"name":"n","arguments":"{}"}}]},"finish_reason":null}]}"#;
        let fast: Chunk<'_> = serde_json::from_str(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        let slow = Chunk::from_value(&value);
        for chunk in [fast, slow] {
            let choice = chunk.choices.unwrap().into_iter().next().unwrap();
            assert_eq!(choice.finish_reason, None);
            let delta = choice.delta.unwrap();
            assert_eq!(delta.content.as_deref(), Some("a\"b"));
            let fragment = delta.tool_calls.unwrap().into_iter().next().unwrap();
            assert_eq!(fragment.index, Some(2));
            assert_eq!(fragment.id.as_deref(), Some("c"));
            assert_eq!(fragment.function.unwrap().name.as_deref(), Some("n"));
        }
    }
}
