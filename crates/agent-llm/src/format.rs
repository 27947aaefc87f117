//! Turning [`Message`]s into the JSON messages of a chat-completions request (spec §5.3), with
//! the normalisation strict providers need.

use std::borrow::Cow;

use agent_core::{Message, Role, ToolCall};
use serde::Serialize;
use serde_json::Value;
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
    serde_json::to_value(WirePart::image(base64_image)).unwrap_or(Value::Null)
}

/// One message as it goes on the wire, borrowing from the [`Message`] (serialised by derive; the
/// fields are in the order a `serde_json::Value` object would print them, so the bytes are the
/// same as formatting through `Value`).
#[derive(Debug, Clone, Serialize)]
pub struct WireMessage<'a> {
    /// The text, `null` beside tool calls, or content parts.
    pub content: WireContent<'a>,
    /// The tool name of a `tool` message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    /// The role.
    pub role: &'a str,
    /// The call a `tool` message answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<&'a str>,
    /// The calls of an assistant message (absent when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WireCall<'a>>,
}

/// The `content` of a [`WireMessage`].
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum WireContent<'a> {
    /// Plain text.
    Text(&'a str),
    /// `null` (an assistant message with tool calls and no text).
    Null,
    /// Content parts (text and images).
    Parts(Vec<WirePart<'a>>),
}

/// A content part: `{"text": ..., "type": "text"}` or `{"image_url": {"url": ...}, "type":
/// "image_url"}`.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum WirePart<'a> {
    /// A text part.
    Text {
        /// The text.
        text: Cow<'a, str>,
        /// Always `"text"`.
        #[serde(rename = "type")]
        kind: &'static str,
    },
    /// An image part.
    Image {
        /// The image's URL (`https://...` or a `data:` URL).
        image_url: WireImageUrl<'a>,
        /// Always `"image_url"`.
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

impl<'a> WirePart<'a> {
    /// A text part.
    #[must_use]
    pub fn text(text: impl Into<Cow<'a, str>>) -> Self {
        Self::Text {
            text: text.into(),
            kind: "text",
        }
    }

    /// An image part for a URL.
    #[must_use]
    pub fn image_url(url: impl Into<Cow<'a, str>>) -> Self {
        Self::Image {
            image_url: WireImageUrl { url: url.into() },
            kind: "image_url",
        }
    }

    /// An image part for base64 bytes (a data URL; the MIME type is sniffed).
    #[must_use]
    pub fn image(base64_image: &str) -> Self {
        Self::image_url(format!(
            "data:{};base64,{}",
            image_mime(base64_image),
            base64_image.trim()
        ))
    }
}

/// The `image_url` object of an image part.
#[derive(Debug, Clone, Serialize)]
pub struct WireImageUrl<'a> {
    /// The URL.
    pub url: Cow<'a, str>,
}

/// A tool call on the wire (`{"function": {"arguments", "name"}, "id", "type"}`).
#[derive(Debug, Clone, Serialize)]
pub struct WireCall<'a> {
    /// The function and its arguments.
    pub function: WireFunction<'a>,
    /// The call id.
    pub id: &'a str,
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: &'a str,
}

/// The function of a [`WireCall`].
#[derive(Debug, Clone, Serialize)]
pub struct WireFunction<'a> {
    /// The arguments as JSON text.
    pub arguments: &'a str,
    /// The tool name.
    pub name: &'a str,
}

impl<'a> From<&'a ToolCall> for WireCall<'a> {
    fn from(call: &'a ToolCall) -> Self {
        Self {
            function: WireFunction {
                arguments: &call.function.arguments,
                name: &call.function.name,
            },
            id: &call.id,
            kind: &call.kind,
        }
    }
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
pub fn wire_messages<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
    supports_images: bool,
) -> Vec<WireMessage<'a>> {
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
        let image = message.base64_image.as_deref().filter(|i| !i.is_empty());
        let content = match image {
            Some(image) if supports_images && message.role == Role::User => {
                let mut parts = Vec::with_capacity(2);
                if let Some(text) = text.filter(|t| !t.is_empty()) {
                    parts.push(WirePart::text(text));
                }
                parts.push(WirePart::image(image));
                WireContent::Parts(parts)
            }
            _ => {
                if image.is_some() {
                    warn!(role = %message.role, "dropping an image the model cannot receive");
                }
                match text {
                    Some(t) if !(t.is_empty() && has_calls) => WireContent::Text(t),
                    _ if has_calls => WireContent::Null,
                    _ => WireContent::Text(""),
                }
            }
        };
        let tool_calls = if has_calls {
            message.calls().iter().map(WireCall::from).collect()
        } else {
            Vec::new()
        };
        out.push(WireMessage {
            content,
            name: message.name.as_deref(),
            role: message.role.as_str(),
            tool_call_id: message.tool_call_id.as_deref(),
            tool_calls,
        });
    }
    out
}

/// [`wire_messages`] as JSON values (for token counting and inspection).
#[must_use]
pub fn format_messages<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
    supports_images: bool,
) -> Vec<Value> {
    wire_messages(messages, supports_images)
        .iter()
        .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
