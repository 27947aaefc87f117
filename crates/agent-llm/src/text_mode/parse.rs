//! Reading tool calls out of a model's text.
//!
//! The formats models actually produce, tried in this order:
//!
//! 1. `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, as Hermes and Qwen emit (the
//!    closing tag may be missing at the end of the reply; one block may hold a JSON array of
//!    calls). Every such block is a call attempt: one that cannot be read is reported.
//! 2. A fenced code block (```` ```json ````, ```` ```tool_call ````, or no language) holding a
//!    call object, or an array of them, that names an offered tool.
//! 3. When neither is present: bare JSON call objects in the text that name an offered tool.
//!
//! A call object is `{"name": ..., "arguments": {...}}`; `parameters`, `input` or `args` may
//! stand for `arguments`, the arguments may be a JSON string, and `{"function": {...}}` (the
//! OpenAI shape) is unwrapped. JSON goes through [`repair_json`](super::repair_json) first.

use serde_json::{Map, Value};

use super::repair::repair_json;

/// One call read from text.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    /// The tool name.
    pub name: String,
    /// The arguments (always a JSON object).
    pub arguments: Map<String, Value>,
}

/// What [`parse_reply`] found in a reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedReply {
    /// The reply with the calls taken out, trimmed.
    pub text: String,
    /// The calls, in the order they appear.
    pub calls: Vec<TextCall>,
    /// One message per call attempt that could not be read.
    pub errors: Vec<String>,
}

pub(super) const OPEN: &str = "<tool_call>";
pub(super) const CLOSE: &str = "</tool_call>";

/// Reads the tool calls in `text`. `tools` are the names of the offered tools (fenced and bare
/// JSON count as calls only when they name one of them). Never panics, whatever the text.
#[must_use]
pub fn parse_reply(text: &str, tools: &[&str]) -> ParsedReply {
    let mut reply = ParsedReply::default();
    let mut rest = String::with_capacity(text.len());
    if text.contains(OPEN) {
        tagged(text, &mut reply, &mut rest);
    } else if let Some(found) = fenced(text, tools, &mut reply) {
        rest = found;
    } else {
        rest = bare(text, tools, &mut reply);
    }
    reply.text = rest.trim().to_owned();
    reply
}

/// Format 1: `<tool_call>` blocks.
fn tagged(text: &str, reply: &mut ParsedReply, rest: &mut String) {
    let mut remaining = text;
    while let Some(start) = remaining.find(OPEN) {
        rest.push_str(&remaining[..start]);
        let after = &remaining[start + OPEN.len()..];
        let (body, next) = match (after.find(CLOSE), after.find(OPEN)) {
            (Some(close), Some(open)) if open < close => (&after[..open], &after[open..]),
            (Some(close), _) => (&after[..close], &after[close + CLOSE.len()..]),
            (None, Some(open)) => (&after[..open], &after[open..]),
            (None, None) => (after, ""),
        };
        match calls_in(strip_fence(body), None) {
            Ok(calls) if !calls.is_empty() => reply.calls.extend(calls),
            Ok(_) => reply
                .errors
                .push("a <tool_call> block holds no call object".to_owned()),
            Err(error) => reply
                .errors
                .push(format!("in a <tool_call> block: {error}")),
        }
        remaining = next;
    }
    rest.push_str(remaining);
}

/// The inside of a code fence, when `body` is one (models sometimes fence inside the tags).
fn strip_fence(body: &str) -> &str {
    let trimmed = body.trim();
    if let Some(inner) = trimmed.strip_prefix("```")
        && let Some(inner) = inner.strip_suffix("```")
    {
        let first_line_end = inner.find('\n').unwrap_or(0);
        let language = &inner[..first_line_end];
        if language
            .trim()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return &inner[first_line_end..];
        }
        return inner;
    }
    trimmed
}

/// Format 2: fenced blocks. `None` when no block holds a call (the text is left as it is).
fn fenced(text: &str, tools: &[&str], reply: &mut ParsedReply) -> Option<String> {
    let mut rest = String::with_capacity(text.len());
    let mut remaining = text;
    let mut found = false;
    while let Some(start) = remaining.find("```") {
        let Some(block) = fence_at(&remaining[start..]) else {
            break;
        };
        match fenced_calls(&block, tools) {
            Some(Ok(calls)) => {
                rest.push_str(&remaining[..start]);
                reply.calls.extend(calls);
                found = true;
            }
            Some(Err(error)) => {
                rest.push_str(&remaining[..start]);
                reply.errors.push(format!("in a fenced block: {error}"));
                found = true;
            }
            None => rest.push_str(&remaining[..start + block.len]),
        }
        remaining = &remaining[start + block.len..];
    }
    rest.push_str(remaining);
    found.then_some(rest)
}

/// A fenced block that has closed.
pub(super) struct Fence<'a> {
    /// Its length, both fences included.
    pub len: usize,
    /// The language after the opening fence, in lower case.
    language: String,
    /// What is between the fences.
    body: &'a str,
}

/// The fenced block at the start of `text` (which begins with three backticks), once it has
/// closed: `None` while its language line or its closing fence has not come.
pub(super) fn fence_at(text: &str) -> Option<Fence<'_>> {
    let after = text.strip_prefix("```")?;
    let line_end = after.find('\n')?;
    let body_and_more = &after[line_end + 1..];
    let end = body_and_more.find("```")?;
    Some(Fence {
        len: 3 + line_end + 1 + end + 3,
        language: after[..line_end].trim().to_ascii_lowercase(),
        body: &body_and_more[..end],
    })
}

/// What a fenced block is to [`parse_reply`]: calls (`Some(Ok)`), an attempt at one that
/// cannot be read (`Some(Err)`) — both taken out of the text — or text (`None`).
pub(super) fn fenced_calls(
    fence: &Fence<'_>,
    tools: &[&str],
) -> Option<Result<Vec<TextCall>, String>> {
    let callish = matches!(
        fence.language.as_str(),
        "" | "json" | "tool_call" | "tool" | "jsonc"
    );
    let explicit = matches!(fence.language.as_str(), "tool_call" | "tool");
    let names = if explicit { None } else { Some(tools) };
    match callish.then(|| calls_in(fence.body, names)) {
        Some(Ok(calls)) if !calls.is_empty() => Some(Ok(calls)),
        Some(Err(error)) if explicit || mentions_tool(fence.body, tools) => Some(Err(error)),
        _ => None,
    }
}

/// Whether `candidate`, a balanced `{...}`, is a bare call of one of `tools` (format 3).
pub(super) fn is_bare_call(candidate: &str, tools: &[&str]) -> bool {
    matches!(calls_in(candidate, Some(tools)), Ok(calls) if !calls.is_empty())
}

/// Whether broken JSON looks like a call of one of `tools` (`"name"` and a tool's name).
fn mentions_tool(body: &str, tools: &[&str]) -> bool {
    body.contains("name")
        && tools
            .iter()
            .any(|t| body.contains(&format!("\"{t}\"")) || body.contains(&format!("'{t}'")))
}

/// Format 3: bare JSON objects naming an offered tool.
fn bare(text: &str, tools: &[&str], reply: &mut ParsedReply) -> String {
    if !text.contains("name") {
        return text.to_owned();
    }
    let mut rest = String::with_capacity(text.len());
    let mut index = 0;
    while let Some(offset) = text[index..].find('{') {
        let start = index + offset;
        let Some(end) = balanced_end(&text[start..]) else {
            break;
        };
        let candidate = &text[start..start + end];
        match calls_in(candidate, Some(tools)) {
            Ok(calls) if !calls.is_empty() => {
                rest.push_str(&text[index..start]);
                reply.calls.extend(calls);
                index = start + end;
            }
            _ => {
                rest.push_str(&text[index..=start]);
                index = start + 1;
            }
        }
    }
    rest.push_str(&text[index..]);
    rest
}

/// The length of the balanced `{...}` at the start of `text` (quotes respected), if it closes.
pub(super) fn balanced_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + c.len_utf8());
                }
            }
            _ => {}
        }
    }
    None
}

/// The calls in one JSON text (an object or an array of objects). With `tools`, only calls of
/// those tools count (others make the text "not a call": `Ok(vec![])`).
fn calls_in(body: &str, tools: Option<&[&str]>) -> Result<Vec<TextCall>, String> {
    let value = repair_json(body).map_err(|e| format!("not JSON ({e})"))?;
    let objects = match value {
        Value::Array(items) => items,
        other => vec![other],
    };
    let mut calls = Vec::with_capacity(objects.len());
    for object in objects {
        let Some(call) = call_object(object)? else {
            return Ok(Vec::new());
        };
        if tools.is_some_and(|tools| !tools.contains(&call.name.as_str())) {
            return Ok(Vec::new());
        }
        calls.push(call);
    }
    Ok(calls)
}

/// One call object; `Ok(None)` when the value is not shaped like a call at all.
fn call_object(value: Value) -> Result<Option<TextCall>, String> {
    let Value::Object(mut object) = value else {
        return Ok(None);
    };
    if let Some(Value::Object(function)) = object.remove("function") {
        return call_object(Value::Object(function));
    }
    let Some(Value::String(name)) = object.remove("name") else {
        return Ok(None);
    };
    let name = name.trim().to_owned();
    if name.is_empty() {
        return Err("the call has an empty name".to_owned());
    }
    let arguments = ["arguments", "parameters", "input", "args"]
        .iter()
        .find_map(|key| object.remove(*key));
    let arguments = match arguments {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(Value::String(text)) if text.trim().is_empty() => Map::new(),
        Some(Value::String(text)) => match repair_json(&text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(format!("the arguments of `{name}` are not a JSON object")),
            Err(e) => return Err(format!("the arguments of `{name}` are not JSON ({e})")),
        },
        Some(_) => return Err(format!("the arguments of `{name}` are not a JSON object")),
    };
    Ok(Some(TextCall { name, arguments }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn hermes_tags_with_text_around_and_a_missing_close() {
        let reply = parse_reply(
            "Let me look.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\n<tool_call>{'name': 'terminate', 'arguments': {'status': 'success',}}",
            &[],
        );
        assert_eq!(reply.text, "Let me look.");
        assert!(reply.errors.is_empty(), "{:?}", reply.errors);
        assert_eq!(
            reply.calls,
            vec![
                TextCall {
                    name: "bash".into(),
                    arguments: args(json!({"command": "ls"}))
                },
                TextCall {
                    name: "terminate".into(),
                    arguments: args(json!({"status": "success"}))
                },
            ]
        );
    }

    #[test]
    fn fenced_json_names_an_offered_tool_and_other_json_stays_text() {
        let text = "Here is data:\n```json\n{\"name\": \"Ann\", \"age\": 3}\n```\nNow:\n```json\n{\"name\": \"bash\", \"parameters\": \"{\\\"command\\\": \\\"pwd\\\"}\"}\n```";
        let reply = parse_reply(text, &["bash"]);
        assert_eq!(reply.calls.len(), 1);
        assert_eq!(reply.calls[0].arguments, args(json!({"command": "pwd"})));
        assert!(reply.text.contains("\"Ann\""), "{}", reply.text);
        assert!(!reply.text.contains("pwd"), "{}", reply.text);
    }

    #[test]
    fn bare_json_and_the_openai_shape() {
        let reply = parse_reply(
            r#"I will run {"function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}} now"#,
            &["bash"],
        );
        assert_eq!(reply.calls.len(), 1, "{reply:?}");
        assert_eq!(reply.text, "I will run  now");
        let plain = parse_reply(
            r#"The answer is {"name": "x", "arguments": {}}."#,
            &["bash"],
        );
        assert!(plain.calls.is_empty() && plain.errors.is_empty());
    }

    #[test]
    fn unreadable_attempts_are_reported() {
        let reply = parse_reply(
            "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"</tool_call>",
            &["bash"],
        );
        assert!(reply.calls.is_empty());
        assert_eq!(reply.errors.len(), 1);
        assert!(reply.errors[0].contains("not JSON"), "{:?}", reply.errors);
        let reply = parse_reply(
            "```json\n{\"name\": \"bash\", \"arguments\": [1]}\n```",
            &["bash"],
        );
        assert_eq!(reply.errors.len(), 1, "{reply:?}");
        let reply = parse_reply(
            "<tool_call>{\"name\": \"bash\", \"arguments\": 3}</tool_call>",
            &[],
        );
        assert_eq!(
            reply.errors,
            vec!["in a <tool_call> block: the arguments of `bash` are not a JSON object"]
        );
    }
}
