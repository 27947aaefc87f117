//! What Bedrock's Converse API rejects, checked the way it checks.

use std::collections::HashSet;

use serde_json::Value;

const TOP_LEVEL: &[&str] = &[
    "messages",
    "system",
    "inferenceConfig",
    "toolConfig",
    "guardrailConfig",
    "additionalModelRequestFields",
    "additionalModelResponseFieldPaths",
    "promptVariables",
    "requestMetadata",
    "performanceConfig",
];
const IMAGE_FORMATS: &[&str] = &["png", "jpeg", "gif", "webp"];

fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The one key of a union block (`{"text": ...}`, `{"toolUse": {...}}`, ...).
fn union_key<'a>(block: &'a Value, path: &str) -> Result<(&'a str, &'a Value), String> {
    let Some(object) = block.as_object() else {
        return Err(format!("{path}: a content block must be an object"));
    };
    let mut entries = object.iter();
    match (entries.next(), entries.next()) {
        (Some((key, value)), None) => Ok((key.as_str(), value)),
        _ => Err(format!(
            "{path}: a content block must set exactly one member"
        )),
    }
}

fn image(value: &Value, path: &str) -> Result<(), String> {
    let format = value
        .get("format")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !IMAGE_FORMATS.contains(&format) {
        return Err(format!("{path}.format: must be one of {IMAGE_FORMATS:?}"));
    }
    match value.pointer("/source/bytes").and_then(Value::as_str) {
        Some(b) if !b.is_empty() => Ok(()),
        _ => Err(format!("{path}.source.bytes: the image has no bytes")),
    }
}

/// Checks a Converse request body (`modelId` is in the path).
///
/// # Errors
///
/// What Bedrock's `ValidationException` would say.
pub fn validate_converse_request(body: &Value) -> Result<(), String> {
    let Some(object) = body.as_object() else {
        return Err("the request body is not a JSON object".into());
    };
    for key in object.keys() {
        if !TOP_LEVEL.contains(&key.as_str()) {
            return Err(format!("Unknown field: {key}"));
        }
    }
    if let Some(system) = body.get("system") {
        for (i, block) in system.as_array().into_iter().flatten().enumerate() {
            let (key, value) = union_key(block, &format!("system.{i}"))?;
            if key == "text" && value.as_str().is_none_or(|t| t.trim().is_empty()) {
                return Err(format!(
                    "The text field in the SystemContentBlock at system.{i} is blank. Add text to the text field, and try again."
                ));
            }
        }
    }
    if let Some(config) = body.get("inferenceConfig") {
        if let Some(max) = config.get("maxTokens")
            && max.as_u64().is_none_or(|m| m == 0)
        {
            return Err("inferenceConfig.maxTokens: must be at least 1".into());
        }
        if let Some(t) = config.get("temperature")
            && t.as_f64().is_none_or(|t| !(0.0..=1.0).contains(&t))
        {
            return Err("inferenceConfig.temperature: must be between 0 and 1".into());
        }
    }
    let mut tool_names = HashSet::new();
    if let Some(config) = body.get("toolConfig") {
        let tools = config.get("tools").and_then(Value::as_array);
        if tools.is_none_or(Vec::is_empty) {
            return Err("toolConfig.tools: must hold at least one tool".into());
        }
        for (i, tool) in tools.into_iter().flatten().enumerate() {
            let spec = tool.get("toolSpec").unwrap_or(&Value::Null);
            let name = spec.get("name").and_then(Value::as_str).unwrap_or_default();
            if !name_ok(name) {
                return Err(format!(
                    "toolConfig.tools.{i}.toolSpec.name: must match [a-zA-Z0-9_-]{{1,64}}"
                ));
            }
            if !tool_names.insert(name.to_owned()) {
                return Err(format!(
                    "toolConfig.tools.{i}: the tool name {name} is repeated"
                ));
            }
            if spec
                .pointer("/inputSchema/json/type")
                .and_then(Value::as_str)
                != Some("object")
            {
                return Err(format!(
                    "toolConfig.tools.{i}.toolSpec.inputSchema.json: must be a JSON schema of type object"
                ));
            }
        }
        if let Some(choice) = config.get("toolChoice") {
            let (key, _) = union_key(choice, "toolConfig.toolChoice")?;
            if !["auto", "any", "tool"].contains(&key) {
                return Err(format!("toolConfig.toolChoice: unknown member {key}"));
            }
        }
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err("messages: required".into());
    };
    if messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    let mut open: Vec<String> = Vec::new();
    let mut previous = "";
    for (i, message) in messages.iter().enumerate() {
        let path = format!("messages.{i}");
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if role != "user" && role != "assistant" {
            return Err(format!("{path}.role: must be user or assistant"));
        }
        if i == 0 && role != "user" {
            return Err("A conversation must start with a user message. Try again with a conversation that starts with a user message.".into());
        }
        if role == previous {
            return Err("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.".into());
        }
        previous = if role == "user" { "user" } else { "assistant" };
        let blocks = message.get("content").and_then(Value::as_array);
        if blocks.is_none_or(Vec::is_empty) {
            return Err(format!(
                "{path}.content: must hold at least one content block"
            ));
        }
        let mut uses = Vec::new();
        let mut answered = Vec::new();
        for (j, block) in blocks.into_iter().flatten().enumerate() {
            let path = format!("{path}.content.{j}");
            let (key, value) = union_key(block, &path)?;
            match (role, key) {
                (_, "text") => {
                    if value.as_str().is_none_or(|t| t.trim().is_empty()) {
                        return Err(format!(
                            "The text field in the ContentBlock object at {path} is blank. Add text to the text field, and try again."
                        ));
                    }
                }
                ("user", "image") => image(value, &path)?,
                ("assistant", "toolUse") => {
                    if tool_names.is_empty() {
                        return Err("The toolConfig field must be defined when using toolUse and toolResult content blocks.".into());
                    }
                    let id = value
                        .get("toolUseId")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if id.is_empty()
                        || !id
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        return Err(format!(
                            "{path}.toolUse.toolUseId: must match [a-zA-Z0-9_-]+"
                        ));
                    }
                    if !value.get("input").is_some_and(Value::is_object) {
                        return Err(format!("{path}.toolUse.input: must be a JSON object"));
                    }
                    uses.push(id.to_owned());
                }
                ("user", "toolResult") => {
                    if tool_names.is_empty() {
                        return Err("The toolConfig field must be defined when using toolUse and toolResult content blocks.".into());
                    }
                    let id = value
                        .get("toolUseId")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if !open.iter().any(|o| o == id) {
                        return Err(format!(
                            "{path}: the toolResult's toolUseId {id} does not match a toolUse of the previous turn"
                        ));
                    }
                    let content = value.get("content").and_then(Value::as_array);
                    if content.is_none_or(Vec::is_empty) {
                        return Err(format!(
                            "{path}.toolResult.content: must hold at least one block"
                        ));
                    }
                    for (k, part) in content.into_iter().flatten().enumerate() {
                        let path = format!("{path}.toolResult.content.{k}");
                        match union_key(part, &path)? {
                            ("text", t) if t.as_str().is_some_and(|t| !t.trim().is_empty()) => {}
                            ("text", _) => {
                                return Err(format!("The text field at {path} is blank."));
                            }
                            ("image", image_value) => image(image_value, &path)?,
                            ("json", _) => {}
                            (other, _) => {
                                return Err(format!("{path}: unsupported member {other}"));
                            }
                        }
                    }
                    if let Some(status) = value.get("status")
                        && !matches!(status.as_str(), Some("success" | "error"))
                    {
                        return Err(format!(
                            "{path}.toolResult.status: must be success or error"
                        ));
                    }
                    answered.push(id.to_owned());
                }
                (role, key) => {
                    return Err(format!(
                        "{path}: a {role} message cannot hold a {key} block"
                    ));
                }
            }
        }
        if role == "user" {
            if answered.len() != open.len() || open.iter().any(|id| !answered.contains(id)) {
                return Err(format!(
                    "{path}: The number of toolResult blocks at {path}.content exceeds or falls short of the number of toolUse blocks of previous turn."
                ));
            }
            open.clear();
        } else {
            open = uses;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_converse_rejects() {
        let tools = json!({"tools": [{"toolSpec": {"name": "bash", "inputSchema": {"json": {"type": "object"}}}}]});
        let good = json!({"toolConfig": tools, "messages": [
            {"role": "user", "content": [{"text": "hi"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "bash", "input": {}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "ok"}]}}]},
        ]});
        assert_eq!(validate_converse_request(&good), Ok(()));
        let mut no_config = good.clone();
        no_config.as_object_mut().unwrap().remove("toolConfig");
        assert!(
            validate_converse_request(&no_config)
                .unwrap_err()
                .contains("toolConfig")
        );
        let blank = json!({"messages": [{"role": "user", "content": [{"text": " "}]}]});
        assert!(
            validate_converse_request(&blank)
                .unwrap_err()
                .contains("blank")
        );
        let unanswered = json!({"toolConfig": tools, "messages": [
            {"role": "user", "content": [{"text": "hi"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "bash", "input": {}}}]},
            {"role": "user", "content": [{"text": "??"}]},
        ]});
        assert!(
            validate_converse_request(&unanswered)
                .unwrap_err()
                .contains("toolResult")
        );
        let twice = json!({"messages": [
            {"role": "user", "content": [{"text": "a"}]}, {"role": "user", "content": [{"text": "b"}]}]});
        assert!(
            validate_converse_request(&twice)
                .unwrap_err()
                .contains("alternate")
        );
    }
}
