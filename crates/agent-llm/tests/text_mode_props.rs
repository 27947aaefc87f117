//! Property tests of the text-mode parser: every call rendered in every supported format parses
//! back to the same call; near-JSON repairs as documented; no text makes it panic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_llm::text_mode::{TextCall, parse_reply, render_call, repair_json};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Argument values: strings (any character but a backtick or `<`, which would end a fence or
/// open a tag inside the call itself), integers, booleans, null, and one level of nesting.
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[^`<]{0,24}".prop_map(Value::String),
        any::<i64>().prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn call() -> impl Strategy<Value = TextCall> {
    (
        "[a-z][a-z_]{0,15}",
        prop::collection::btree_map("[a-z_]{1,10}", value(), 0..5),
    )
        .prop_map(|(name, args)| TextCall {
            name,
            arguments: args.into_iter().collect::<Map<_, _>>(),
        })
}

/// Prose around a call: no braces, backticks or angle brackets.
fn prose() -> impl Strategy<Value = String> {
    "[A-Za-z0-9 .,:;!?'\n-]{0,40}"
}

#[derive(Debug, Clone, Copy)]
enum Format {
    Tag,
    TagUnclosed,
    TagFenced,
    FencedJson,
    FencedPlain,
    FencedToolCall,
    Bare,
    BareOpenAi,
    ArgumentsAsString,
}

fn format() -> impl Strategy<Value = Format> {
    prop_oneof![
        Just(Format::Tag),
        Just(Format::TagUnclosed),
        Just(Format::TagFenced),
        Just(Format::FencedJson),
        Just(Format::FencedPlain),
        Just(Format::FencedToolCall),
        Just(Format::Bare),
        Just(Format::BareOpenAi),
        Just(Format::ArgumentsAsString),
    ]
}

fn render(call: &TextCall, format: Format, before: &str, after: &str) -> String {
    let object = json!({"name": call.name, "arguments": Value::Object(call.arguments.clone())});
    let pretty = serde_json::to_string_pretty(&object).unwrap();
    match format {
        Format::Tag => format!("{before}{}{after}", render_call(call)),
        Format::TagUnclosed => format!("{before}<tool_call>\n{object}"),
        Format::TagFenced => {
            format!("{before}<tool_call>\n```json\n{pretty}\n```\n</tool_call>{after}")
        }
        Format::FencedJson => format!("{before}\n```json\n{pretty}\n```\n{after}"),
        Format::FencedPlain => format!("{before}\n```\n{object}\n```\n{after}"),
        Format::FencedToolCall => format!("{before}\n```tool_call\n{object}\n```\n{after}"),
        Format::Bare => format!("{before} {object} {after}"),
        Format::BareOpenAi => {
            let openai = json!({"type": "function", "function": {
                "name": call.name,
                "arguments": Value::Object(call.arguments.clone()).to_string(),
            }});
            format!("{before} {openai} {after}")
        }
        Format::ArgumentsAsString => {
            let object = json!({"name": call.name,
                "parameters": Value::Object(call.arguments.clone()).to_string()});
            format!("{before}<tool_call>{object}</tool_call>{after}")
        }
    }
}

/// A value written the way models get JSON slightly wrong: single-quoted strings with raw
/// newlines and tabs, Python's `True`/`False`/`None`, a trailing comma in every object and
/// array, unquoted keys when `bare_keys`.
fn near_json(value: &Value, bare_keys: bool) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let mut out = String::from("'");
            for c in s.chars() {
                match c {
                    '\'' => out.push_str("\\'"),
                    '\\' => out.push_str("\\\\"),
                    c => out.push(c),
                }
            }
            out.push('\'');
            out
        }
        Value::Array(items) => {
            let mut out = String::from("[");
            for item in items {
                out.push_str(&near_json(item, bare_keys));
                out.push_str(", ");
            }
            out.push(']');
            out
        }
        Value::Object(map) => {
            let mut out = String::from("{");
            for (key, item) in map {
                if bare_keys {
                    out.push_str(key);
                } else {
                    out.push_str(&format!("'{key}'"));
                }
                out.push_str(": ");
                out.push_str(&near_json(item, bare_keys));
                out.push_str(",\n");
            }
            out.push('}');
            out
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn every_format_parses_back_to_the_same_call(
        call in call(),
        format in format(),
        before in prose(),
        after in prose(),
    ) {
        let text = render(&call, format, &before, &after);
        let reply = parse_reply(&text, &[call.name.as_str(), "other_tool"]);
        prop_assert!(reply.errors.is_empty(), "{:?} in {text}", reply.errors);
        prop_assert_eq!(reply.calls, vec![call], "{}", text);
    }

    #[test]
    fn several_tagged_calls_keep_their_order(calls in prop::collection::vec(call(), 1..4), sep in prose()) {
        let text: Vec<String> = calls.iter().map(render_call).collect();
        let reply = parse_reply(&text.join(&sep), &[]);
        prop_assert!(reply.errors.is_empty());
        prop_assert_eq!(reply.calls, calls);
    }

    #[test]
    fn near_json_repairs_as_documented(value in value(), bare_keys in any::<bool>()) {
        let text = near_json(&value, bare_keys);
        prop_assert_eq!(repair_json(&text), Ok(value), "{}", text);
    }

    #[test]
    fn near_json_calls_parse(call in call(), bare_keys in any::<bool>()) {
        let object = json!({"name": call.name, "arguments": Value::Object(call.arguments.clone())});
        let text = format!("<tool_call>\n{}\n</tool_call>", near_json(&object, bare_keys));
        let reply = parse_reply(&text, &[]);
        prop_assert!(reply.errors.is_empty(), "{:?} in {text}", reply.errors);
        prop_assert_eq!(reply.calls, vec![call]);
    }

    #[test]
    fn random_text_never_panics(text in "(?s).{0,300}", tools in prop::collection::vec("[a-z]{1,6}", 0..3)) {
        let names: Vec<&str> = tools.iter().map(String::as_str).collect();
        let reply = parse_reply(&text, &names);
        prop_assert!(reply.text.len() <= text.len());
        let _ = repair_json(&text);
    }

    #[test]
    fn json_shaped_noise_never_panics(
        parts in prop::collection::vec(prop_oneof![
            Just("{"), Just("}"), Just("["), Just("]"), Just("\""), Just("'"), Just("\\"),
            Just(":"), Just(","), Just("<tool_call>"), Just("</tool_call>"), Just("```"),
            Just("```json\n"), Just("\n"), Just("name"), Just("\"name\""), Just("arguments"),
            Just("bash"), Just("\"bash\""), Just("True"), Just("None"), Just(" "), Just("é"),
            Just("1"), Just("\\u12"),
        ], 0..60),
    ) {
        let text: String = parts.concat();
        let reply = parse_reply(&text, &["bash"]);
        for call in &reply.calls {
            prop_assert!(!call.name.is_empty());
        }
        let _ = repair_json(&text);
    }
}
