//! Turning [`Message`]s into the JSON messages of a chat-completions request (spec §5.3), with
//! the normalisation strict providers need.

use agent_core::{Message, Role};
use serde_json::{Map, Value, json};
use tracing::warn;

/// The MIME type of a base64 image, sniffed from its first bytes (OpenManus always says jpeg).
#[must_use]
pub fn image_mime(base64_image: &str) -> &'static str {
    let head = base64_image.trim_start();
    if head.starts_with("iVBORw0KGgo") {
        "image/png"
    } else if head.starts_with("R0lGOD") {
        "image/gif"
    } else if head.starts_with("UklGR") {
        "image/webp"
    } else {
        "image/jpeg"
    }
}

/// A base64 image as an `image_url` content part with a data URL.
#[must_use]
pub fn image_part(base64_image: &str) -> Value {
    json!({
        "type": "image_url",
        "image_url": {"url": format!("data:{};base64,{}", image_mime(base64_image), base64_image.trim())}
    })
}

/// Formats messages for the wire:
///
/// * a message with neither text nor tool calls is dropped (an empty assistant turn, which
///   strict providers reject), as is an assistant message with empty text and no calls;
/// * an assistant message with tool calls and no text gets `"content": null`;
/// * a `base64_image` becomes content parts `[{"type":"text",...}, {"type":"image_url",...}]`
///   on a user message when `supports_images`; otherwise it is dropped with a warning (the
///   OpenAI API accepts image parts in user messages only; agents send tool images as a separate
///   user message);
/// * the framework key `base64_image` never reaches the wire.
#[must_use]
pub fn format_messages<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
    supports_images: bool,
) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        let text = message.content.as_deref();
        let has_calls = message.has_tool_calls();
        let empty_text = text.is_none_or(str::is_empty);
        if !has_calls
            && message.role == Role::Assistant
            && empty_text
            && message.base64_image.is_none()
        {
            continue;
        }
        if text.is_none() && !has_calls && message.base64_image.is_none() {
            continue;
        }
        let mut object = Map::new();
        object.insert(
            "role".into(),
            Value::String(message.role.as_str().to_owned()),
        );
        let image = message.base64_image.as_deref().filter(|i| !i.is_empty());
        let content = match image {
            Some(image) if supports_images && message.role == Role::User => {
                let mut parts = Vec::new();
                if let Some(text) = text.filter(|t| !t.is_empty()) {
                    parts.push(json!({"type": "text", "text": text}));
                }
                parts.push(image_part(image));
                Value::Array(parts)
            }
            _ => {
                if image.is_some() {
                    warn!(role = %message.role, "dropping an image the model cannot receive");
                }
                match text {
                    Some(t) if !(t.is_empty() && has_calls) => Value::String(t.to_owned()),
                    _ if has_calls => Value::Null,
                    _ => Value::String(String::new()),
                }
            }
        };
        object.insert("content".into(), content);
        if has_calls {
            object.insert(
                "tool_calls".into(),
                serde_json::to_value(message.calls()).unwrap_or(Value::Null),
            );
        }
        if let Some(name) = &message.name {
            object.insert("name".into(), Value::String(name.clone()));
        }
        if let Some(id) = &message.tool_call_id {
            object.insert("tool_call_id".into(), Value::String(id.clone()));
        }
        out.push(Value::Object(object));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::ToolCall;

    #[test]
    fn images_become_parts_for_vision_models_and_are_dropped_otherwise() {
        let png = "iVBORw0KGgoAAAANSUhEUg==";
        let messages = [
            Message::user_message_with_image("look", png),
            Message::user_message_with_image("", "/9j/4AAQ"),
        ];
        assert_eq!(
            format_messages(&messages, true),
            vec![
                json!({"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}}
                ]}),
                json!({"role": "user", "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}}
                ]}),
            ]
        );
        assert_eq!(
            format_messages(&messages, false),
            vec![
                json!({"role": "user", "content": "look"}),
                json!({"role": "user", "content": ""})
            ]
        );
    }

    #[test]
    fn strict_provider_normalisation() {
        let call = ToolCall::new("c1", "bash", "{}");
        let mut tool_with_image = Message::tool_message("out", "bash", "c1");
        tool_with_image.base64_image = Some("/9j/".into());
        let messages = [
            Message::system_message("sys"),
            Message::assistant_message(""),
            Message::from_tool_calls(vec![call], ""),
            tool_with_image,
            Message::assistant_message("done"),
        ];
        assert_eq!(
            format_messages(&messages, true),
            vec![
                json!({"role": "system", "content": "sys"}),
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
                ]}),
                json!({"role": "tool", "content": "out", "name": "bash", "tool_call_id": "c1"}),
                json!({"role": "assistant", "content": "done"}),
            ]
        );
    }

    #[test]
    fn mime_is_sniffed() {
        assert_eq!(image_mime("iVBORw0KGgo"), "image/png");
        assert_eq!(image_mime("R0lGODlh"), "image/gif");
        assert_eq!(image_mime("UklGRh4A"), "image/webp");
        assert_eq!(image_mime("/9j/4AAQ"), "image/jpeg");
    }
}
