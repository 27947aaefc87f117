//! `extract_content`: the page as markdown, cut to a length, and the model's forced
//! `extract_content` call that answers the goal.

use agent_core::{Message, ToolChoice, ToolDefinition};
use agent_llm::ChatModel;
use agent_tools::ToolResult;
use htmd::HtmlToMarkdown;
use serde_json::{Value, json};

use crate::BrowserError;
pub use crate::pyrepr::py_repr;

/// The function the model is forced to call.
pub const EXTRACT_FUNCTION: &str = "extract_content";

/// Tags whose content is never page text.
const SKIPPED: [&str; 8] = [
    "script", "style", "noscript", "template", "svg", "canvas", "head", "iframe",
];

/// `html` as markdown, whitespace-tidied and cut to `max_chars` characters (0: no cut).
#[must_use]
pub fn page_markdown(html: &str, max_chars: usize) -> String {
    let converter = HtmlToMarkdown::builder()
        .skip_tags(SKIPPED.to_vec())
        .build();
    let markdown = converter.convert(html).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "HTML to markdown conversion failed; using the raw text");
        html.to_owned()
    });
    let mut tidy = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines().map(str::trim_end) {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        tidy.push_str(line);
        tidy.push('\n');
    }
    let tidy = tidy.trim();
    if max_chars == 0 {
        return tidy.to_owned();
    }
    tidy.chars().take(max_chars).collect()
}

/// The forced function's definition: `extracted_content {text, metadata {source}}`.
#[must_use]
pub fn extract_function() -> ToolDefinition {
    ToolDefinition::new(
        EXTRACT_FUNCTION,
        "Return what the page says about the goal.",
        json!({
            "type": "object",
            "properties": {
                "extracted_content": {
                    "type": "object",
                    "description": "The content extracted from the page for the goal",
                    "properties": {
                        "text": {
                            "type": "string",
                            "description": "The extracted text"
                        },
                        "metadata": {
                            "type": "object",
                            "description": "Where the text comes from",
                            "properties": {
                                "source": {
                                    "type": "string",
                                    "description": "The part of the page the text was found in"
                                }
                            }
                        }
                    },
                    "required": ["text", "metadata"]
                }
            },
            "required": ["extracted_content"]
        }),
    )
}

/// Asks `llm` to extract what `goal` asks for from `markdown`, through a forced call of
/// [`EXTRACT_FUNCTION`]. The result is OpenManus's `Extracted from page:\n{dict}\n` (the
/// `extracted_content` argument written as a Python dict), or `No content was extracted from
/// the page.` when the model did not call the function.
///
/// # Errors
///
/// [`BrowserError::Script`] when the model request fails or its arguments are not JSON.
pub async fn extract(
    llm: &dyn ChatModel,
    goal: &str,
    markdown: &str,
) -> Result<ToolResult, BrowserError> {
    let system = Message::system_message(format!(
        "You read web pages for an agent. Extract everything on the page that serves the goal \
         below; when the goal is vague, summarise the page. Answer by calling \
         `{EXTRACT_FUNCTION}`.\nExtraction goal: {goal}"
    ));
    let page = Message::user_message(format!("Page content (markdown):\n{markdown}"));
    let response = llm
        .ask_tool(
            vec![page],
            vec![system],
            vec![extract_function()],
            ToolChoice::Required,
        )
        .await
        .map_err(|e| BrowserError::Script(format!("the extraction request failed: {e}")))?;
    let Some(call) = response
        .tool_calls
        .iter()
        .find(|c| c.function.name == EXTRACT_FUNCTION)
    else {
        return Ok(ToolResult::success(
            "No content was extracted from the page.",
        ));
    };
    let arguments: Value = serde_json::from_str(&call.function.arguments).map_err(|e| {
        BrowserError::Script(format!(
            "the model's extraction arguments are not JSON: {e}"
        ))
    })?;
    let content = arguments
        .get("extracted_content")
        .cloned()
        .unwrap_or_else(|| json!({}));
    Ok(ToolResult::success(format!(
        "Extracted from page:\n{}\n",
        py_repr(&content)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_drops_scripts_and_is_cut_by_characters() {
        let html = "<html><head><title>T</title><script>var x = 1;</script></head><body>\
                    <h1>Prices</h1><p>Tea costs <b>3 €</b>.</p>\n\n\n<ul><li>one</li></ul></body></html>";
        let markdown = page_markdown(html, 0);
        assert!(markdown.starts_with("# Prices"), "{markdown}");
        assert!(markdown.contains("Tea costs **3 €**."), "{markdown}");
        assert!(!markdown.contains("var x"), "{markdown}");
        assert!(!markdown.contains("\n\n\n"), "{markdown}");
        let cut = page_markdown(html, 12);
        assert_eq!(cut.chars().count(), 12);
        assert!(markdown.starts_with(&cut));
    }
}
