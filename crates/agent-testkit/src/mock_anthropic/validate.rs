//! What the Messages API rejects, checked the way it checks (the messages name the offending
//! path, `messages.3.content.0`, as Anthropic's do).

use std::collections::HashSet;

use serde_json::{Map, Value};

const TOP_LEVEL: &[&str] = &[
    "model",
    "max_tokens",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "temperature",
    "top_p",
    "top_k",
    "stream",
    "stop_sequences",
    "metadata",
    "thinking",
];
const IMAGE_TYPES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];
/// Most `cache_control` breakpoints a request may set.
const MAX_BREAKPOINTS: usize = 4;

fn id_like(text: &str, max: usize) -> bool {
    !text.is_empty()
        && text.len() <= max
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Checks a Messages request body; the error says what the real API would say.
///
/// # Errors
///
/// The first rule the body breaks.
pub fn validate_messages_request(body: &Value) -> Result<(), String> {
    let Some(body) = body.as_object() else {
        return Err("the request body is not a JSON object".into());
    };
    for key in body.keys() {
        if !TOP_LEVEL.contains(&key.as_str()) {
            return Err(format!("{key}: Extra inputs are not permitted"));
        }
    }
    match body.get("model").and_then(Value::as_str) {
        Some(m) if !m.trim().is_empty() => {}
        _ => return Err("model: Field required (a non-empty string)".into()),
    }
    match body.get("max_tokens").and_then(Value::as_u64) {
        Some(n) if n > 0 => {}
        _ => return Err("max_tokens: Field required (a positive integer)".into()),
    }
    if let Some(t) = body.get("temperature") {
        match t.as_f64() {
            Some(t) if (0.0..=1.0).contains(&t) => {}
            _ => return Err("temperature: Input should be a number from 0 to 1".into()),
        }
    }
    if let Some(stream) = body.get("stream")
        && !stream.is_boolean()
    {
        return Err("stream: Input should be a valid boolean".into());
    }
    let mut breakpoints = 0;
    match body.get("system") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for (i, block) in blocks.iter().enumerate() {
                let path = format!("system.{i}");
                if block.get("type").and_then(Value::as_str) != Some("text") {
                    return Err(format!("{path}.type: system blocks must be text blocks"));
                }
                text_block(block, &path, &mut breakpoints)?;
            }
        }
        Some(_) => return Err("system: Input should be a string or a list of text blocks".into()),
    }
    let tool_names = tools(body, &mut breakpoints)?;
    messages(body, &mut breakpoints)?;
    if let Some(choice) = body.get("tool_choice") {
        if tool_names.is_empty() {
            return Err("tool_choice: may only be specified while providing tools".into());
        }
        match choice.get("type").and_then(Value::as_str) {
            Some("auto" | "any" | "none") => {}
            Some("tool") => {
                let name = choice
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !tool_names.contains(name) {
                    return Err(format!("tool_choice.name: no tool named {name:?}"));
                }
            }
            _ => {
                return Err(
                    "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'".into(),
                );
            }
        }
    }
    if breakpoints > MAX_BREAKPOINTS {
        return Err(format!(
            "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        ));
    }
    Ok(())
}

fn cache_control(block: &Value, path: &str, breakpoints: &mut usize) -> Result<(), String> {
    if let Some(control) = block.get("cache_control") {
        if control.get("type").and_then(Value::as_str) != Some("ephemeral") {
            return Err(format!(
                "{path}.cache_control.type: Input should be 'ephemeral'"
            ));
        }
        *breakpoints += 1;
    }
    Ok(())
}

fn text_block(block: &Value, path: &str, breakpoints: &mut usize) -> Result<(), String> {
    match block.get("text").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => {}
        Some(_) => return Err(format!("{path}: text content blocks must be non-empty")),
        None => return Err(format!("{path}.text: Field required")),
    }
    cache_control(block, path, breakpoints)
}

fn image_block(block: &Value, path: &str) -> Result<(), String> {
    let source = block.get("source").unwrap_or(&Value::Null);
    match source.get("type").and_then(Value::as_str) {
        Some("base64") => {
            let media = source
                .get("media_type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !IMAGE_TYPES.contains(&media) {
                return Err(format!(
                    "{path}.source.media_type: Input should be one of {IMAGE_TYPES:?}"
                ));
            }
            if source
                .get("data")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(format!("{path}.source.data: Field required"));
            }
            Ok(())
        }
        Some("url") => Ok(()),
        _ => Err(format!(
            "{path}.source.type: Input should be 'base64' or 'url'"
        )),
    }
}

fn tools(body: &Map<String, Value>, breakpoints: &mut usize) -> Result<HashSet<String>, String> {
    let mut names = HashSet::new();
    let Some(tools) = body.get("tools") else {
        return Ok(names);
    };
    let Some(tools) = tools.as_array() else {
        return Err("tools: Input should be a valid list".into());
    };
    for (i, tool) in tools.iter().enumerate() {
        let path = format!("tools.{i}");
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        if !id_like(name, 64) {
            return Err(format!(
                "{path}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            ));
        }
        if !names.insert(name.to_owned()) {
            return Err(format!("{path}: Tool names must be unique"));
        }
        let schema = tool.get("input_schema");
        if schema.and_then(|s| s.get("type")).and_then(Value::as_str) != Some("object") {
            return Err(format!(
                "{path}.input_schema.type: Input should be 'object'"
            ));
        }
        if let Some(d) = tool.get("description")
            && !d.is_string()
        {
            return Err(format!(
                "{path}.description: Input should be a valid string"
            ));
        }
        cache_control(tool, &path, breakpoints)?;
    }
    Ok(names)
}

/// The blocks of one message (a string is one text block).
fn blocks(message: &Value, path: &str) -> Result<Vec<Value>, String> {
    match message.get("content") {
        Some(Value::String(text)) if !text.is_empty() => {
            Ok(vec![serde_json::json!({"type": "text", "text": text})])
        }
        Some(Value::String(_)) => Err(format!("{path}: text content blocks must be non-empty")),
        Some(Value::Array(blocks)) if !blocks.is_empty() => Ok(blocks.clone()),
        Some(Value::Array(_)) => Err(format!(
            "{path}.content: all messages must have non-empty content"
        )),
        _ => Err(format!("{path}.content: Field required")),
    }
}

fn messages(body: &Map<String, Value>, breakpoints: &mut usize) -> Result<(), String> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err("messages: Field required (a list)".into());
    };
    if messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    let mut seen_ids = HashSet::new();
    // The tool_use ids of the previous assistant turn, still to be answered.
    let mut open: Vec<String> = Vec::new();
    let mut previous_role = "";
    let mut holds_tool_blocks = false;
    for (i, message) in messages.iter().enumerate() {
        let path = format!("messages.{i}");
        if let Some(object) = message.as_object() {
            for key in object.keys() {
                if key != "role" && key != "content" {
                    return Err(format!("{path}.{key}: Extra inputs are not permitted"));
                }
            }
        }
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match role {
            "user" | "assistant" => {}
            "system" => {
                return Err(format!(
                    "{path}.role: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role."
                ));
            }
            other => {
                return Err(format!(
                    "{path}.role: Input should be 'user' or 'assistant', got {other:?}"
                ));
            }
        }
        if i == 0 && role != "user" {
            return Err("messages.0.role: the first message must use the \"user\" role".into());
        }
        if role == previous_role {
            return Err(format!(
                "{path}: roles must alternate between \"user\" and \"assistant\", but found multiple \"{role}\" roles in a row"
            ));
        }
        previous_role = if role == "user" { "user" } else { "assistant" };
        let blocks = blocks(message, &path)?;
        let mut answered = Vec::new();
        let mut after_results = false;
        let mut uses = Vec::new();
        for (j, block) in blocks.iter().enumerate() {
            let path = format!("{path}.content.{j}");
            let kind = block
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match (role, kind) {
                (_, "text") => {
                    text_block(block, &path, breakpoints)?;
                    after_results = true;
                }
                ("user", "image") => {
                    image_block(block, &path)?;
                    cache_control(block, &path, breakpoints)?;
                    after_results = true;
                }
                ("assistant", "tool_use") => {
                    holds_tool_blocks = true;
                    let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                    if !id_like(id, 256) {
                        return Err(format!(
                            "{path}.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                        ));
                    }
                    if !seen_ids.insert(id.to_owned()) {
                        return Err(format!(
                            "{path}.id: `tool_use` ids must be unique, {id:?} is repeated"
                        ));
                    }
                    if block
                        .get("name")
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        return Err(format!("{path}.name: Field required"));
                    }
                    if !block.get("input").is_some_and(Value::is_object) {
                        return Err(format!("{path}.input: Input should be a valid dictionary"));
                    }
                    cache_control(block, &path, breakpoints)?;
                    uses.push(id.to_owned());
                }
                ("user", "tool_result") => {
                    holds_tool_blocks = true;
                    if after_results {
                        return Err(format!(
                            "{path}: tool_result blocks must come before any other content in a user message"
                        ));
                    }
                    let id = block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if !open.iter().any(|o| o == id) {
                        return Err(format!(
                            "{path}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ));
                    }
                    match block.get("content") {
                        None | Some(Value::String(_)) => {}
                        Some(Value::Array(inner)) => {
                            for (k, part) in inner.iter().enumerate() {
                                let path = format!("{path}.content.{k}");
                                match part.get("type").and_then(Value::as_str) {
                                    Some("text") => text_block(part, &path, breakpoints)?,
                                    Some("image") => image_block(part, &path)?,
                                    _ => {
                                        return Err(format!(
                                            "{path}.type: Input should be 'text' or 'image'"
                                        ));
                                    }
                                }
                            }
                        }
                        Some(_) => {
                            return Err(format!(
                                "{path}.content: Input should be a string or a list"
                            ));
                        }
                    }
                    if let Some(e) = block.get("is_error")
                        && !e.is_boolean()
                    {
                        return Err(format!("{path}.is_error: Input should be a valid boolean"));
                    }
                    cache_control(block, &path, breakpoints)?;
                    answered.push(id.to_owned());
                }
                (role, kind) => {
                    return Err(format!(
                        "{path}.type: a {role} message cannot hold a {kind:?} block"
                    ));
                }
            }
        }
        if role == "user" {
            let missing: Vec<&String> = open.iter().filter(|id| !answered.contains(id)).collect();
            if !missing.is_empty() {
                return Err(format!(
                    "{path}: `tool_use` ids were found without `tool_result` blocks immediately after: {missing:?}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
                ));
            }
            open.clear();
        } else {
            open = uses;
        }
    }
    if holds_tool_blocks && body.get("tools").is_none() {
        return Err(
            "Requests which include `tool_use` or `tool_result` blocks must define tools.".into(),
        );
    }
    if !open.is_empty() && body.get("tools").is_some() {
        return Err(format!(
            "messages: the last assistant message has `tool_use` ids without `tool_result` blocks: {open:?}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(messages: Value) -> Value {
        json!({"model": "claude", "max_tokens": 10, "messages": messages,
               "tools": [{"name": "bash", "input_schema": {"type": "object"}}]})
    }

    #[test]
    fn what_the_api_rejects() {
        let use_block = json!({"type": "tool_use", "id": "t1", "name": "bash", "input": {}});
        let result = json!({"type": "tool_result", "tool_use_id": "t1", "content": "ok"});
        let ok = request(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [use_block]},
            {"role": "user", "content": [result, {"type": "text", "text": "go on"}]},
        ]));
        assert_eq!(validate_messages_request(&ok), Ok(()));
        let bad = [
            (
                json!([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]),
                "alternate",
            ),
            (
                json!([{"role": "assistant", "content": "a"}]),
                "first message",
            ),
            (
                json!([{"role": "user", "content": [{"type": "text", "text": ""}]}]),
                "non-empty",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": [use_block]},
                    {"role": "user", "content": "no result"}]),
                "without `tool_result`",
            ),
            (
                json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": [use_block]},
                    {"role": "user", "content": [{"type": "text", "text": "x"}, result]}]),
                "must come before",
            ),
            (
                json!([{"role": "user", "content": [result]}]),
                "unexpected `tool_use_id`",
            ),
            (
                json!([{"role": "system", "content": "s"}]),
                "top-level `system`",
            ),
        ];
        for (messages, needle) in bad {
            let error = validate_messages_request(&request(messages.clone())).unwrap_err();
            assert!(error.contains(needle), "{messages}: {error}");
        }
        let no_tools = json!({"model": "m", "max_tokens": 5, "tool_choice": {"type": "auto"},
                              "messages": [{"role": "user", "content": "x"}]});
        assert!(
            validate_messages_request(&no_tools)
                .unwrap_err()
                .contains("tool_choice")
        );
    }
}
