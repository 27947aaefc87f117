//! A `session/prompt`'s content blocks as the run takes them: the task's text, and its images.

use serde_json::Value;
use tracing::warn;

use crate::rpc::RpcError;

/// The prompt's blocks as the task's text: text as it is, a linked resource by its URI, an
/// embedded one with its text.
pub(crate) fn prompt_text(blocks: &[Value]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block["type"].as_str() {
            Some("text") => parts.push(block["text"].as_str().unwrap_or_default().to_owned()),
            Some("resource_link") => parts.push(format!(
                "[{}]({})",
                block["name"].as_str().unwrap_or_default(),
                block["uri"].as_str().unwrap_or_default()
            )),
            Some("resource") => {
                let resource = &block["resource"];
                if let Some(text) = resource["text"].as_str() {
                    parts.push(format!(
                        "<resource uri=\"{}\">\n{text}\n</resource>",
                        resource["uri"].as_str().unwrap_or_default()
                    ));
                }
            }
            // Images go with the task as images ([`prompt_images`]).
            Some("image") => {}
            other => warn!(kind = ?other, "a prompt block this agent does not take; skipped"),
        }
    }
    parts.join("\n\n")
}

/// The prompt's images (PNG, JPEG, GIF, WebP), as messages the model sees with the task.
pub(crate) fn prompt_images(blocks: &[Value]) -> Result<Vec<agent_core::Message>, RpcError> {
    blocks
        .iter()
        .filter(|block| block["type"] == "image")
        .map(|block| {
            let mime = block["mimeType"].as_str().unwrap_or_default();
            if !matches!(
                mime,
                "image/png" | "image/jpeg" | "image/gif" | "image/webp"
            ) {
                return Err(RpcError::invalid_params(format!(
                    "an image of type {mime:?}: PNG, JPEG, GIF and WebP are taken"
                )));
            }
            let data = block["data"]
                .as_str()
                .filter(|d| !d.is_empty())
                .ok_or_else(|| RpcError::invalid_params("an image without data"))?;
            let caption = match block["uri"].as_str() {
                Some(uri) => format!("Image attached to the prompt: {uri}"),
                None => "Image attached to the prompt".to_owned(),
            };
            Ok(agent_core::Message::user_message_with_image(caption, data))
        })
        .collect()
}
