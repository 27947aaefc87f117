//! The Converse request as JSON (the body the SDK sends, for the journal and for building the
//! SDK's types from one source), and JSON ↔ `Document` for tool schemas and inputs.
//!
//! Like the Messages API, Converse wants alternating user/assistant turns, every `toolUse`
//! answered by a `toolResult` in the next user turn, no blank text blocks, and a `toolConfig`
//! whenever the conversation holds tool blocks.

use std::collections::HashMap;

use agent_core::{Message, Role, ToolChoice};
use aws_smithy_types::{Document, Number};
use serde_json::{Map, Value, json};
use tracing::warn;

use crate::ChatRequest;
use crate::blocks::{Image, tool_input, tool_use_id};

/// What the body needs beyond the request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyOptions {
    pub max_tokens: u32,
    pub temperature: f64,
    pub vision: bool,
}

/// What an empty tool-use id is sent as (ids must match `^[a-zA-Z0-9_-]+$`).
const EMPTY_TOOL_USE_ID: &str = "tooluse_empty";

fn image_block(base64_image: &str) -> Value {
    let image = Image::new(base64_image);
    json!({"image": {"format": image.format(), "source": {"bytes": image.data}}})
}

/// The Converse body for `request` (`modelId` travels in the URL, not here).
pub(crate) fn body(request: &ChatRequest, options: BodyOptions) -> Value {
    let mut body = Map::new();
    let system: Vec<Value> = request
        .all_messages()
        .filter(|m| m.role == Role::System)
        .filter_map(|m| m.content.as_deref())
        .filter(|t| !t.trim().is_empty())
        .map(|t| json!({"text": t}))
        .collect();
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let messages = messages(&request.messages, options.vision);
    let holds_tool_blocks = messages.iter().any(|m| {
        m["content"].as_array().is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| b.get("toolUse").is_some() || b.get("toolResult").is_some())
        })
    });
    body.insert("messages".into(), Value::Array(messages));
    let temperature = request
        .temperature
        .unwrap_or(options.temperature)
        .clamp(0.0, 1.0);
    body.insert(
        "inferenceConfig".into(),
        json!({"maxTokens": options.max_tokens, "temperature": temperature}),
    );
    // Converse has no "none" choice: tools stay declared (the conversation may hold tool blocks,
    // which need a toolConfig) and the model is left to answer.
    if !request.tools.is_empty() || holds_tool_blocks {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"toolSpec": {
                    "name": t.function.name,
                    "description": t.function.description,
                    "inputSchema": {"json": t.function.parameters},
                }})
            })
            .collect();
        if !tools.is_empty() {
            let mut config = json!({"tools": tools});
            config["toolChoice"] = match request.tool_choice {
                Some(ToolChoice::Required) => json!({"any": {}}),
                _ => json!({"auto": {}}),
            };
            body.insert("toolConfig".into(), config);
        }
    }
    Value::Object(body)
}

/// The conversation as alternating turns of Converse content blocks.
fn messages(conversation: &[Message], vision: bool) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in conversation {
        let text = message.content.as_deref().filter(|t| !t.trim().is_empty());
        let image = match message
            .base64_image
            .as_deref()
            .filter(|i| !i.trim().is_empty())
        {
            Some(_) if !vision => {
                warn!(role = %message.role, "dropping an image the model cannot receive");
                None
            }
            other => other,
        };
        let (role, blocks) = match message.role {
            Role::System => continue,
            Role::User => {
                let mut blocks = Vec::new();
                if let Some(text) = text {
                    blocks.push(json!({"text": text}));
                }
                if let Some(image) = image {
                    blocks.push(image_block(image));
                }
                ("user", blocks)
            }
            Role::Assistant => {
                let mut blocks = Vec::new();
                if let Some(text) = text {
                    blocks.push(json!({"text": text}));
                }
                for call in message.calls() {
                    blocks.push(json!({"toolUse": {
                        "toolUseId": tool_use_id(&call.id, EMPTY_TOOL_USE_ID),
                        "name": call.function.name,
                        "input": tool_input(&call.function.arguments),
                    }}));
                }
                ("assistant", blocks)
            }
            Role::Tool => {
                let mut content = vec![json!({"text": text.unwrap_or("(no output)")})];
                if let Some(image) = image {
                    content.push(image_block(image));
                }
                let mut result = json!({
                    "toolUseId": tool_use_id(
                        message.tool_call_id.as_deref().unwrap_or_default(),
                        EMPTY_TOOL_USE_ID,
                    ),
                    "content": content,
                });
                if text.is_some_and(|t| t.starts_with("Error:")) {
                    result["status"] = json!("error");
                }
                ("user", vec![json!({"toolResult": result})])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    if turns.first().is_some_and(|(role, _)| *role == "assistant") {
        turns.insert(0, ("user", vec![json!({"text": "(continue)"})]));
    }
    turns
        .into_iter()
        .map(|(role, mut blocks)| {
            if role == "user" {
                blocks.sort_by_key(|b| b.get("toolResult").is_none());
            }
            json!({"role": role, "content": blocks})
        })
        .collect()
}

/// A JSON value as a smithy `Document`.
pub(crate) fn to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(if let Some(u) = n.as_u64() {
            Number::PosInt(u)
        } else if let Some(i) = n.as_i64() {
            Number::NegInt(i)
        } else {
            Number::Float(n.as_f64().unwrap_or_default())
        }),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(items) => Document::Array(items.iter().map(to_document).collect()),
        Value::Object(map) => Document::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), to_document(v)))
                .collect::<HashMap<_, _>>(),
        ),
    }
}

/// A smithy `Document` as JSON.
pub(crate) fn from_document(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => json!(u),
        Document::Number(Number::NegInt(i)) => json!(i),
        Document::Number(Number::Float(f)) => json!(f),
        Document::String(s) => Value::String(s.clone()),
        Document::Array(items) => Value::Array(items.iter().map(from_document).collect()),
        Document::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), from_document(v)))
                .collect(),
        ),
    }
}

/// Our `finish_reason` for Converse's `stopReason`.
pub(crate) fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" | "model_context_window_exceeded" => "length",
        "content_filtered" | "guardrail_intervened" => crate::REFUSED,
        other => other,
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::{ToolCall, ToolDefinition};

    #[test]
    fn converse_shapes() {
        let request = ChatRequest::new(vec![
            Message::user_message("task"),
            Message::from_tool_calls(
                vec![ToolCall::new("c.1", "bash", r#"{"n": -3, "f": 1.5}"#)],
                "",
            ),
            Message::tool_message("", "bash", "c.1"),
            Message::user_message("next"),
        ])
        .with_system(vec![Message::system_message("sys")])
        .with_tools(
            vec![ToolDefinition::new(
                "bash",
                "run",
                json!({"type": "object"}),
            )],
            ToolChoice::Required,
        );
        let body = body(
            &request,
            BodyOptions {
                max_tokens: 100,
                temperature: 2.0,
                vision: true,
            },
        );
        assert_eq!(body["system"], json!([{"text": "sys"}]));
        assert_eq!(
            body["inferenceConfig"],
            json!({"maxTokens": 100, "temperature": 1.0})
        );
        assert_eq!(body["toolConfig"]["toolChoice"], json!({"any": {}}));
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"text": "task"}]},
                {"role": "assistant", "content": [{"toolUse": {"toolUseId": "c_1", "name": "bash", "input": {"n": -3, "f": 1.5}}}]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "c_1", "content": [{"text": "(no output)"}]}},
                    {"text": "next"}
                ]}
            ])
        );
        let input = &body["messages"][1]["content"][0]["toolUse"]["input"];
        assert_eq!(&from_document(&to_document(input)), input);
    }
}
