//! One streamed chat-completions chunk, read with [`Scan`](super::scan::Scan) in one pass over
//! its text: strings are borrowed, the fields we do not use are skipped, and the only `Value`s
//! are the rare subtrees (`error`, `usage`). A chunk the scan cannot read (a field of an
//! unexpected type, or text that is not JSON) is parsed by `serde_json` and read leniently from
//! the `Value` ([`Chunk::from_value`]): a field of the wrong type is left out, and text that is
//! not JSON is `serde_json`'s error.

use std::borrow::Cow;

use serde_json::Value;

use super::scan::Scan;

/// A chunk: `error`, `usage`, the model's name and the first choice (the only one used).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Chunk<'a> {
    pub error: Option<Value>,
    pub usage: Option<Value>,
    pub model: Option<Cow<'a, str>>,
    pub choice: Option<Choice<'a>>,
}

/// One choice of a chunk.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Choice<'a> {
    pub finish_reason: Option<Cow<'a, str>>,
    pub delta: Option<Delta<'a>>,
}

/// What a choice adds: text and tool-call fragments.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Delta<'a> {
    pub content: Option<Cow<'a, str>>,
    /// The model's reasoning: `reasoning_content` (DeepSeek, vLLM, SGLang) or `reasoning`
    /// (OpenRouter, Ollama).
    pub reasoning: Option<Cow<'a, str>>,
    /// The model's refusal (OpenAI's structured outputs), instead of content.
    pub refusal: Option<Cow<'a, str>>,
    pub tool_calls: Vec<Fragment<'a>>,
}

/// A fragment of one tool call.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Fragment<'a> {
    pub id: Option<Cow<'a, str>>,
    pub index: Option<u64>,
    pub function: Option<Function<'a>>,
}

/// The function part of a fragment.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Function<'a> {
    pub name: Option<Cow<'a, str>>,
    /// Argument text to append: a string verbatim; anything else but `null` (some servers send
    /// an object) serialised.
    pub arguments: Option<Cow<'a, str>>,
}

impl<'a> Chunk<'a> {
    /// Reads the usual chunk straight from its text; `None` when it holds anything unusual
    /// (then [`Chunk::from_value`] reads it).
    pub(super) fn scan(text: &'a str) -> Option<Self> {
        let mut scan = Scan::new(text);
        let chunk = scan.fields(|chunk: &mut Self, scan, key| {
            match key {
                "error" => chunk.error = subtree(scan)?,
                "usage" => chunk.usage = subtree(scan)?,
                "model" => chunk.model = scan.string_or_null()?,
                "choices" => {
                    chunk.choice = None;
                    if !scan.null() {
                        scan.array(|scan, at| {
                            if at == 0 {
                                chunk.choice = Some(Choice::scan(scan)?);
                                Some(())
                            } else {
                                scan.skip(1)
                            }
                        })?;
                    }
                }
                _ => scan.skip(1)?,
            }
            Some(())
        })?;
        scan.at_end().then_some(chunk)
    }

    /// Reads a chunk leniently from a `Value`: a field of an unexpected type is left out.
    pub(super) fn from_value(value: &'a Value) -> Self {
        let text = |v: &'a Value, key: &str| v.get(key).and_then(Value::as_str).map(Cow::Borrowed);
        let present = |v: &'a Value, key: &str| v.get(key).filter(|v| !v.is_null());
        let fragment = |f: &'a Value| Fragment {
            id: text(f, "id"),
            index: f.get("index").and_then(Value::as_u64),
            function: present(f, "function").map(|function| Function {
                name: text(function, "name"),
                arguments: present(function, "arguments").map(|arguments| match arguments {
                    Value::String(s) => Cow::Borrowed(s.as_str()),
                    other => Cow::Owned(other.to_string()),
                }),
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
                    .map(|calls| calls.iter().map(fragment).collect())
                    .unwrap_or_default(),
            }),
        };
        Self {
            error: present(value, "error").cloned(),
            usage: present(value, "usage").cloned(),
            model: text(value, "model"),
            choice: value
                .get("choices")
                .and_then(Value::as_array)
                .and_then(|choices| choices.first())
                .map(choice),
        }
    }
}

/// A subtree kept as a `Value` (`error`, `usage`): `null` is `Some(None)`.
fn subtree(scan: &mut Scan<'_>) -> Option<Option<Value>> {
    scan.or_null(|scan| serde_json::from_str(scan.raw(1)?).ok())
}

impl<'a> Choice<'a> {
    fn scan(scan: &mut Scan<'a>) -> Option<Self> {
        scan.fields(|choice: &mut Self, scan, key| {
            match key {
                "finish_reason" => choice.finish_reason = scan.string_or_null()?,
                "delta" => choice.delta = scan.or_null(Delta::scan)?,
                _ => scan.skip(2)?,
            }
            Some(())
        })
    }
}

impl<'a> Delta<'a> {
    fn scan(scan: &mut Scan<'a>) -> Option<Self> {
        let mut delta = Self::default();
        // `reasoning_content` wins over `reasoning`, wherever each comes.
        let mut reasoning_content = None;
        scan.object(|scan, key| {
            match key {
                "content" => delta.content = scan.string_or_null()?,
                "reasoning_content" => reasoning_content = scan.string_or_null()?,
                "reasoning" => delta.reasoning = scan.string_or_null()?,
                "refusal" => delta.refusal = scan.string_or_null()?,
                "tool_calls" => {
                    delta.tool_calls.clear();
                    if !scan.null() {
                        scan.array(|scan, _| {
                            delta.tool_calls.push(Fragment::scan(scan)?);
                            Some(())
                        })?;
                    }
                }
                _ => scan.skip(3)?,
            }
            Some(())
        })?;
        if reasoning_content.is_some() {
            delta.reasoning = reasoning_content;
        }
        Some(delta)
    }
}

impl<'a> Fragment<'a> {
    fn scan(scan: &mut Scan<'a>) -> Option<Self> {
        scan.fields(|fragment: &mut Self, scan, key| {
            match key {
                "id" => fragment.id = scan.string_or_null()?,
                "index" => fragment.index = scan.or_null(Scan::unsigned)?,
                "function" => fragment.function = scan.or_null(Function::scan)?,
                _ => scan.skip(4)?,
            }
            Some(())
        })
    }
}

impl<'a> Function<'a> {
    fn scan(scan: &mut Scan<'a>) -> Option<Self> {
        scan.fields(|function: &mut Self, scan, key| {
            match key {
                "name" => function.name = scan.string_or_null()?,
                "arguments" => function.arguments = scan.string_or_null()?,
                _ => scan.skip(5)?,
            }
            Some(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What `serde_json` and the lenient reading make of `text`, if it is JSON.
    fn slow(text: &str) -> Option<Value> {
        serde_json::from_str(text).ok()
    }

    #[test]
    fn usual_chunks_are_scanned_and_agree_with_the_lenient_reading() {
        for text in [
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a\"b","tool_calls":[{"index":2,"id":"c","type":"function","function":{"name":"n","arguments":"{\"x\":1}"}}]},"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"r","reasoning_content":"rc"},"logprobs":null}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"system_fingerprint":"fp"}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#,
            r#"{"error":{"message":"overloaded","code":529}}"#,
            " { \"choices\" : [ { \"delta\" : { \"refusal\" : \"no\" } } , {\"delta\":1} ] } \n",
        ] {
            let fast = Chunk::scan(text).unwrap_or_else(|| panic!("not scanned: {text}"));
            let value = slow(text).unwrap();
            assert_eq!(fast, Chunk::from_value(&value), "{text}");
        }
        let reasoning =
            Chunk::scan(r#"{"choices":[{"delta":{"reasoning":"r","reasoning_content":"rc"}}]}"#);
        let delta = reasoning
            .and_then(|c| c.choice)
            .and_then(|c| c.delta)
            .unwrap();
        assert_eq!(delta.reasoning.as_deref(), Some("rc"));
    }

    #[test]
    fn unusual_chunks_are_left_to_the_lenient_reading() {
        for (text, arguments) in [
            (
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{"a": 1}}}]}}]}"#,
                Some(r#"{"a":1}"#),
            ),
            (
                r#"{"choices":[{"delta":{"tool_calls":[{"index":-1,"function":{"arguments":"x"}}]}}]}"#,
                Some("x"),
            ),
            (
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":null}}]}}]}"#,
                None,
            ),
        ] {
            let value = slow(text).unwrap();
            let lenient = Chunk::from_value(&value);
            let fragment = &lenient
                .choice
                .as_ref()
                .and_then(|c| c.delta.as_ref())
                .unwrap()
                .tool_calls[0];
            assert_eq!(
                fragment.function.as_ref().unwrap().arguments.as_deref(),
                arguments
            );
            assert_eq!(fragment.index, None);
            if arguments == Some("x") || arguments.is_some_and(|a| a.starts_with('{')) {
                assert_eq!(Chunk::scan(text), None, "{text}");
            }
        }
        // Wrong types elsewhere: the scan declines and the lenient reading skips the field.
        let text = r#"{"model":7,"choices":[{"finish_reason":1,"delta":{"content":["x"]}}]}"#;
        assert_eq!(Chunk::scan(text), None);
        let value = slow(text).unwrap();
        let lenient = Chunk::from_value(&value);
        assert_eq!(lenient.model, None);
        assert_eq!(lenient.choice.unwrap().delta.unwrap().content, None);
        // Not JSON: declined, and `serde_json` says so.
        for text in [
            r#"{"choices":[}"#,
            r#"{"model":"m"} x"#,
            "{\"model\":\"a\tb\"}",
        ] {
            assert_eq!(Chunk::scan(text), None, "{text}");
            assert!(slow(text).is_none(), "{text}");
        }
    }

    /// A JSON text for a leaf of any type.
    fn leaf() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            any::<i64>().prop_map(|n| n.to_string()),
            Just("1.5e3".to_owned()),
            "[a-z\"\\\\\n\u{e9}\u{1F600}/]{0,6}".prop_map(|s| Value::String(s).to_string()),
            Just("[]".to_owned()),
            Just("{\"k\":[1,{}]}".to_owned()),
        ]
    }

    /// Mostly a string, sometimes anything.
    fn text_field() -> impl Strategy<Value = String> {
        prop_oneof![
            8 => "[a-z \"\\\\\u{e9}{}:]{0,8}".prop_map(|s| Value::String(s).to_string()),
            1 => leaf(),
        ]
    }

    /// An object of `members` (keys may repeat), each written with random spacing.
    fn object(members: Vec<(&'static str, String)>, spaced: bool) -> String {
        let gap = if spaced { " \n" } else { "" };
        let inner: Vec<String> = members
            .into_iter()
            .map(|(key, value)| format!("{gap}\"{key}\"{gap}:{gap}{value}"))
            .collect();
        format!("{{{}{gap}}}", inner.join(","))
    }

    /// Members with keys drawn from `keys`, the first one (the way to the next level down)
    /// mostly present.
    fn members(
        keys: &'static [&'static str],
        value: impl Fn(&'static str) -> BoxedStrategy<String> + Clone + 'static,
    ) -> impl Strategy<Value = Vec<(&'static str, String)>> {
        let first = keys[0];
        (
            prop::collection::vec(prop::sample::select(keys), 0..4),
            prop::bool::weighted(0.8),
        )
            .prop_flat_map(move |(mut keys, lead)| {
                if lead {
                    keys.insert(0, first);
                }
                let value = value.clone();
                keys.into_iter()
                    .map(|key| value(key).prop_map(move |v| (key, v)))
                    .collect::<Vec<_>>()
            })
    }

    fn function() -> BoxedStrategy<String> {
        (
            members(&["name", "arguments", "x"], |_| text_field().boxed()),
            any::<bool>(),
        )
            .prop_map(|(m, s)| object(m, s))
            .boxed()
    }

    fn fragment() -> BoxedStrategy<String> {
        let value = |key| match key {
            "index" => prop_oneof![3 => (0u64..5).prop_map(|n| n.to_string()), 1 => leaf()].boxed(),
            "function" => prop_oneof![3 => function(), 1 => leaf()].boxed(),
            _ => text_field().boxed(),
        };
        (
            members(&["function", "id", "index", "type"], value),
            any::<bool>(),
        )
            .prop_map(|(m, s)| object(m, s))
            .boxed()
    }

    fn delta() -> BoxedStrategy<String> {
        let value = |key| {
            match key {
            "tool_calls" => prop_oneof![
                3 => prop::collection::vec(fragment(), 0..3).prop_map(|f| format!("[{}]", f.join(","))),
                1 => leaf(),
            ]
            .boxed(),
            _ => text_field().boxed(),
        }
        };
        let keys = &[
            "tool_calls",
            "content",
            "reasoning",
            "reasoning_content",
            "refusal",
            "role",
        ];
        (members(keys, value), any::<bool>())
            .prop_map(|(m, s)| object(m, s))
            .boxed()
    }

    fn chunk() -> BoxedStrategy<String> {
        let choice = |_| {
            let value = |key| match key {
                "delta" => prop_oneof![3 => delta(), 1 => leaf()].boxed(),
                _ => text_field().boxed(),
            };
            (
                members(&["delta", "finish_reason", "index"], value),
                any::<bool>(),
            )
                .prop_map(|(m, s)| object(m, s))
                .boxed()
        };
        let value = move |key| {
            match key {
            "choices" => prop_oneof![
                3 => prop::collection::vec(choice(()), 0..3).prop_map(|c| format!("[{}]", c.join(","))),
                1 => leaf(),
            ]
            .boxed(),
            "error" | "usage" => leaf().boxed(),
            _ => text_field().boxed(),
        }
        };
        let keys = &["choices", "error", "usage", "model", "id", "created"];
        (members(keys, value), any::<bool>())
            .prop_map(|(m, s)| object(m, s))
            .boxed()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Whenever the scan reads a text, the text is JSON and the scan's reading is the
        /// lenient reading of its `Value`; texts of the usual shape are read by the scan.
        #[test]
        fn the_scan_reads_what_the_lenient_reading_reads(
            text in chunk(),
            edit in any::<Option<(prop::sample::Index, prop::sample::Index, bool)>>(),
        ) {
            // Sometimes one character is replaced or inserted, to make near-JSON.
            let mut text = text;
            if let Some((at, piece, replace)) = edit {
                const PIECES: [&str; 15] =
                    ["{", "}", "[", "]", ",", ":", "\"", "\\", " ", "0", "-", "e", ".", "n", "\t"];
                let count = text.chars().count().max(1);
                let at = text.char_indices().nth(at.index(count)).map_or(0, |(i, _)| i);
                let rest = &text[at..];
                let kept: String = rest.chars().skip(usize::from(replace)).collect();
                text = format!("{}{}{kept}", &text[..at], piece.get(&PIECES));
            }
            if let Some(fast) = Chunk::scan(&text) {
                let value = slow(&text);
                prop_assert!(value.is_some(), "scanned what is not JSON: {}", text);
                let value = value.unwrap();
                prop_assert_eq!(fast, Chunk::from_value(&value), "{}", text);
            }
        }
    }
}
