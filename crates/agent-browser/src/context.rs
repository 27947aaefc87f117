//! [`BrowserContextHelper`]: the browser state in the agent's next-step prompt, and the latest
//! screenshot in its memory for models that read images (spec §2.5, with W27 fixed).

use std::sync::Arc;

use agent_core::{Message, Role};
use agent_toolcall::ToolCallCore;
use tracing::debug;

use crate::{BrowserState, BrowserUseTool};

/// The next-step prompt of an agent that browses. Placeholders: `{tool_placeholder}` (the
/// browser tool's name), `{url_placeholder}`, `{tabs_placeholder}`,
/// `{content_above_placeholder}`, `{content_below_placeholder}`, `{elements_placeholder}`,
/// `{results_placeholder}`.
pub const BROWSER_NEXT_STEP_PROMPT: &str = "What should happen next to reach the goal?

Browser state:{url_placeholder}{tabs_placeholder}
   Content above the viewport:{content_above_placeholder}
   Content below the viewport:{content_below_placeholder}
{elements_placeholder}{results_placeholder}
Act with `{tool_placeholder}`: `go_to_url` opens a page, `click_element` and `input_text` take an \
element's [index] from the list above, `extract_content` pulls out what a goal asks for, \
`scroll_down`/`scroll_up` show more of the page, `open_tab`/`switch_tab` manage tabs. Indices \
change when the page changes, so use the latest list. When the goal is reached, or cannot be \
reached, call `terminate`.";

/// The text of the user message that carries the latest screenshot (defined with the request
/// trimming policies, which recognise screenshots by it).
pub use agent_toolcall::trimming::SCREENSHOT_MESSAGE;

/// What an older screenshot message becomes when a newer one arrives.
pub const SCREENSHOT_REPLACED: &str =
    "[An earlier browser screenshot was here; it was replaced by a newer one.]";

/// At most this many characters of the element list go into the prompt.
const MAX_ELEMENTS_CHARS: usize = 6000;

/// Fills the browser next-step prompt from the state of a `browser_use` tool, and keeps the
/// latest screenshot in the agent's memory for models that read images.
#[derive(Debug, Clone)]
pub struct BrowserContextHelper {
    tool: Arc<BrowserUseTool>,
}

impl BrowserContextHelper {
    /// A helper over `tool` (the same instance the agent calls).
    #[must_use]
    pub fn new(tool: Arc<BrowserUseTool>) -> Self {
        Self { tool }
    }

    /// The tool.
    #[must_use]
    pub fn tool(&self) -> &Arc<BrowserUseTool> {
        &self.tool
    }

    /// The browser state, or `None` when no browser runs or the state cannot be read (logged).
    pub async fn browser_state(&self) -> Option<BrowserState> {
        match self.tool.state().await {
            Ok(state) => state,
            Err(e) => {
                debug!(error = %e, "no browser state");
                None
            }
        }
    }

    /// The browser next-step prompt filled from the current state (`N/A` fields without a
    /// browser). When the state has a screenshot and `core`'s model reads images, the
    /// screenshot is added to memory as a user message and older screenshots there are replaced
    /// by a short text, so only the latest image is kept.
    pub async fn format_next_step_prompt(&self, core: &mut ToolCallCore) -> String {
        let state = self.browser_state().await;
        let prompt = fill_prompt(state.as_ref(), agent_tools::Tool::name(self.tool.as_ref()));
        if let Some(image) = state.and_then(|s| s.screenshot)
            && core.llm.supports_images()
        {
            core.base.memory.edit(drop_old_screenshot);
            core.base
                .update_memory(Message::user_message(SCREENSHOT_MESSAGE).with_image(image));
        }
        prompt
    }

    /// Closes the browser (OpenManus's `cleanup_browser`).
    pub async fn cleanup_browser(&self) {
        self.tool.close().await;
    }
}

/// Whether one of the last `n` messages calls the browser tool `tool` (`browser_use`, or
/// SandboxManus's `sandbox_browser`); Manus switches to the browser prompt then.
#[must_use]
pub fn recently_browsed(messages: &[Message], n: usize, tool: &str) -> bool {
    messages
        .iter()
        .rev()
        .take(n)
        .any(|m| m.calls().iter().any(|c| c.function.name == tool))
}

/// [`BROWSER_NEXT_STEP_PROMPT`] with its placeholders filled from `state`, naming the browser
/// tool `tool` (`browser_use`, or SandboxManus's `sandbox_browser`).
#[must_use]
pub fn fill_prompt(state: Option<&BrowserState>, tool: &str) -> String {
    let na = || "N/A".to_owned();
    let (url, title) = state.map_or_else(
        || (na(), na()),
        |s| {
            (
                non_empty(&s.url).unwrap_or_else(na),
                non_empty(&s.title).unwrap_or_else(na),
            )
        },
    );
    let tabs = match state.map(|s| s.tabs.len()) {
        Some(n) if n > 0 => format!("\n   {n} tab(s) available"),
        _ => String::new(),
    };
    let pixels = |px: Option<u64>| match px {
        Some(px) if px > 0 => format!(" ({px} pixels)"),
        Some(_) => " none".to_owned(),
        None => " N/A".to_owned(),
    };
    let above = pixels(state.map(|s| s.scroll_info.pixels_above));
    let below = pixels(state.map(|s| s.scroll_info.pixels_below));
    let elements = match state {
        Some(s) if !s.interactive_elements.is_empty() => {
            let mut list: String = s
                .interactive_elements
                .chars()
                .take(MAX_ELEMENTS_CHARS)
                .collect();
            if list.len() < s.interactive_elements.len() {
                list.push_str("\n... (more elements below; scroll to see them)");
            }
            format!("Interactive elements:\n{list}\n")
        }
        Some(_) => "Interactive elements: none on this page.\n".to_owned(),
        None => String::new(),
    };
    BROWSER_NEXT_STEP_PROMPT
        .replace(
            "{url_placeholder}",
            &format!("\n   URL: {url}\n   Title: {title}"),
        )
        .replace("{tabs_placeholder}", &tabs)
        .replace("{content_above_placeholder}", &above)
        .replace("{content_below_placeholder}", &below)
        .replace("{elements_placeholder}", &elements)
        .replace("{results_placeholder}", "")
        .replace("{tool_placeholder}", tool)
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// Replaces the image of an earlier screenshot message by [`SCREENSHOT_REPLACED`]; whether it
/// did.
fn drop_old_screenshot(message: &mut Message) -> bool {
    if message.role == Role::User
        && message.base64_image.is_some()
        && message.text() == SCREENSHOT_MESSAGE
    {
        message.base64_image = None;
        message.content = Some(SCREENSHOT_REPLACED.to_owned());
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BROWSER_USE;
    use crate::{ScrollInfo, TabInfo};

    fn state(above: u64, below: u64) -> BrowserState {
        BrowserState {
            url: "http://127.0.0.1/a".into(),
            title: "A page".into(),
            tabs: vec![TabInfo {
                page_id: 0,
                url: "http://127.0.0.1/a".into(),
                title: "A page".into(),
            }],
            help: String::new(),
            interactive_elements: "[0]<a href=\"/b\">B</a>".into(),
            scroll_info: ScrollInfo {
                pixels_above: above,
                pixels_below: below,
                total_height: above + below + 100,
            },
            viewport_height: 100,
            elements: Vec::new(),
            screenshot: None,
        }
    }

    #[test]
    fn the_prompt_shows_the_pixels_above_and_below() {
        let prompt = fill_prompt(Some(&state(0, 4200)), BROWSER_USE);
        assert!(prompt.contains("URL: http://127.0.0.1/a\n   Title: A page"));
        assert!(prompt.contains("\n   1 tab(s) available"));
        assert!(prompt.contains("Content above the viewport: none"));
        assert!(prompt.contains("Content below the viewport: (4200 pixels)"));
        assert!(prompt.contains("Interactive elements:\n[0]<a href=\"/b\">B</a>\n"));
        assert!(!prompt.contains("_placeholder}"));
        let scrolled = fill_prompt(Some(&state(1000, 0)), BROWSER_USE);
        assert!(scrolled.contains("Content above the viewport: (1000 pixels)"));
        assert!(scrolled.contains("Content below the viewport: none"));
    }

    #[test]
    fn without_a_browser_the_fields_are_not_available() {
        let prompt = fill_prompt(None, BROWSER_USE);
        assert!(prompt.contains("Act with `browser_use`:"));
        assert!(fill_prompt(None, "sandbox_browser").contains("Act with `sandbox_browser`:"));
        assert!(prompt.contains("URL: N/A\n   Title: N/A"));
        assert!(prompt.contains("Content above the viewport: N/A"));
        assert!(!prompt.contains("tab(s)"));
        assert!(!prompt.contains("Interactive elements"));
    }

    #[test]
    fn only_the_latest_screenshot_keeps_its_image() {
        let mut memory = agent_core::Memory::default();
        memory.add_messages([
            Message::user_message("task"),
            Message::user_message(SCREENSHOT_MESSAGE).with_image("AAAA"),
            Message::user_message("a photo I sent").with_image("BBBB"),
        ]);
        assert_eq!(memory.edit(drop_old_screenshot), 1);
        let messages = memory.messages();
        assert_eq!(messages[1].base64_image, None);
        assert_eq!(messages[1].text(), SCREENSHOT_REPLACED);
        assert_eq!(messages[2].base64_image.as_deref(), Some("BBBB"));
    }

    #[test]
    fn browsing_is_recent_when_one_of_the_last_messages_calls_the_tool() {
        let call = agent_core::ToolCall::new("c1", BROWSER_USE, "{}");
        let messages = vec![
            Message::from_tool_calls(vec![call], ""),
            Message::tool_message("ok", BROWSER_USE, "c1"),
            Message::user_message("next"),
            Message::assistant_message("thinking"),
        ];
        assert!(!recently_browsed(&messages, 3, BROWSER_USE));
        assert!(recently_browsed(&messages, 4, BROWSER_USE));
        assert!(!recently_browsed(&messages, 4, "sandbox_browser"));
    }
}
