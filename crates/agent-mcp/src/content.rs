//! MCP tool results ⇄ our [`ToolResult`]s.

use agent_tools::ToolResult;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// What OpenManus returns when a server tool produced no text.
pub const NO_OUTPUT: &str = "No output returned.";

/// Renders an MCP `tools/call` result for the model.
///
/// Text parts are joined with `", "` as OpenManus does; embedded text resources count as text
/// parts, binary resources, audio and resource links become a short bracketed note; the first
/// image becomes `base64_image` (later ones are noted in the text); a result flagged `isError`
/// becomes an error result with the same text. An empty text gives [`NO_OUTPUT`]. Structured
/// content is used as the text when the result has no content blocks at all.
pub(crate) fn to_tool_result(result: CallToolResult) -> ToolResult {
    let mut parts: Vec<String> = Vec::new();
    let mut image: Option<String> = None;
    for block in result.content {
        match block {
            ContentBlock::Text(text) => parts.push(text.text),
            ContentBlock::Image(img) => {
                if image.is_none() {
                    image = Some(img.data);
                } else {
                    parts.push(format!("[image: {}]", img.mime_type));
                }
            }
            ContentBlock::Audio(audio) => parts.push(format!("[audio: {}]", audio.mime_type)),
            ContentBlock::Resource(res) => match res.resource {
                ResourceContents::TextResourceContents { text, .. } => parts.push(text),
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    parts.push(format!(
                        "[resource {uri} ({}), {} base64 characters]",
                        mime_type.as_deref().unwrap_or("application/octet-stream"),
                        blob.len()
                    ));
                }
                _ => parts.push("[unsupported resource]".to_owned()),
            },
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[resource link: {}]", link.uri))
            }
            _ => parts.push("[unsupported content]".to_owned()),
        }
    }
    if parts.is_empty()
        && let Some(structured) = result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join(", ");
    let mut out = if result.is_error == Some(true) {
        ToolResult::failure(if text.is_empty() {
            "The MCP tool reported an error".to_owned()
        } else {
            text
        })
    } else if text.is_empty() {
        ToolResult::success(NO_OUTPUT)
    } else {
        ToolResult::success(text)
    };
    if let Some(image) = image {
        out = out.with_image(image);
    }
    out
}

/// Turns one of our results into MCP content: text (the output, or the error with `isError`),
/// and the image, if any, as PNG image content.
pub(crate) fn from_tool_result(result: &ToolResult) -> CallToolResult {
    let mut content = Vec::new();
    let is_error = result.is_error();
    let text = if is_error {
        result.error.clone().unwrap_or_default()
    } else {
        result.output.clone().unwrap_or_default()
    };
    if !text.is_empty() || result.base64_image.is_none() {
        content.push(ContentBlock::text(text));
    }
    if let Some(image) = result.image() {
        content.push(ContentBlock::image(image.to_owned(), "image/png"));
    }
    if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: serde_json::Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn joins_text_keeps_image_and_resources() {
        let r = to_tool_result(parse(serde_json::json!({"content": [
            {"type": "text", "text": "a"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "x://1", "text": "res"}},
            {"type": "text", "text": "b"}
        ]})));
        assert_eq!(r.output.as_deref(), Some("a, res, b"));
        assert_eq!(r.base64_image.as_deref(), Some("AAAA"));
    }

    #[test]
    fn is_error_and_empty() {
        let r = to_tool_result(parse(
            serde_json::json!({"content": [{"type": "text", "text": "bad"}], "isError": true}),
        ));
        assert_eq!(r.error.as_deref(), Some("bad"));
        let r = to_tool_result(parse(serde_json::json!({"content": []})));
        assert_eq!(r.output.as_deref(), Some(NO_OUTPUT));
    }

    #[test]
    fn ours_to_mcp() {
        let r = from_tool_result(&ToolResult::failure("nope"));
        assert_eq!(r.is_error, Some(true));
        let r = from_tool_result(&ToolResult::success("ok").with_image("QQ=="));
        assert_eq!(r.content.len(), 2);
    }
}
