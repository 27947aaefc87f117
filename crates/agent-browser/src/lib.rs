//! # agent-browser
//!
//! The `browser_use` tool of openmanus-rs on the system Chromium over the DevTools protocol
//! (OpenManus spec §4.9), and the browser state the agents show the model (§2.5).
//!
//! * [`Browser`]: one Chromium process (headless, private temporary profile, its own process
//!   group) and the tabs opened in it; [`Browser::close`] or dropping it ends the process group.
//! * [`BrowserUseTool`]: the `browser_use` tool; it launches its browser lazily on the first
//!   action and closes it on `cleanup`. Every action has a timeout.
//! * [`BrowserState`] / [`BrowserUseTool::get_current_state`]: URL, title, tabs, the indexed
//!   interactive elements, scroll position and a JPEG screenshot.
//! * [`BrowserContextHelper`]: the browser next-step prompt filled with that state, and the
//!   latest screenshot in memory for models that read images (older ones become text).
//! * [`browser_agent`] / [`BrowserAgent`]: `browser_use` and `terminate` over ToolCallAgent with
//!   a prompt written for function calling.
//! * [`BrowserConfig::from_settings`]: `[browser]` of `config.toml` (attach over `cdp_url`,
//!   proxy with credentials, extra flags).
//!
//! Elements are numbered by this crate's own page script, in document order, including
//! same-origin iframes and open shadow roots; the actions use the numbering the last state
//! listed, so the indices the model reads are the indices it clicks.
//!
//! ```no_run
//! use agent_browser::BrowserUseTool;
//! use agent_tools::{Tool, ToolContext};
//! use serde_json::json;
//!
//! # async fn demo() -> Result<(), agent_tools::ToolError> {
//! let tool = BrowserUseTool::new();
//! let ctx = ToolContext::default();
//! let result = tool
//!     .execute(json!({"action": "go_to_url", "url": "http://127.0.0.1:8080/"}), &ctx)
//!     .await?;
//! assert_eq!(result.to_string(), "Navigated to http://127.0.0.1:8080/");
//! let state = tool.get_current_state().await;
//! println!("{}", state.output.unwrap_or_default());
//! tool.cleanup().await?;
//! # Ok(())
//! # }
//! ```

mod agent;
mod context;
mod error;
pub mod extract;
mod loading;
mod pyrepr;
mod session;
mod state;
mod tool;

pub use agent::{
    BROWSER_AGENT, BROWSER_AGENT_MAX_STEPS, BROWSER_SYSTEM_PROMPT, BrowserAgent, BrowserHooks,
    browser_agent,
};
pub use context::{
    BROWSER_NEXT_STEP_PROMPT, BrowserContextHelper, SCREENSHOT_MESSAGE, SCREENSHOT_REPLACED,
    fill_prompt, recently_browsed,
};
pub use error::BrowserError;
pub use session::{Browser, BrowserConfig, Download, QUIET_FLAGS, Tab, chromium_version};
pub use state::{BrowserState, InteractiveElement, STATE_HELP, ScrollInfo, TabInfo, current_state};
pub use tool::{BROWSER_USE, BrowserAction, BrowserUseArgs, BrowserUseTool};

use chromiumoxide::Page;
use serde::de::DeserializeOwned;

/// The page library (`__om`): indexing, element lookup, scroll info, text search.
const PAGE_LIBRARY: &str = include_str!("js/lib.js");

/// Runs `body` (a function body that may use `__om` and must `return` a JSON-serialisable
/// value) in `page`'s main frame and deserialises the result.
pub(crate) async fn page_script<T: DeserializeOwned>(
    page: &Page,
    body: &str,
) -> Result<T, BrowserError> {
    let expression = format!(
        "(() => {{ const __r = (() => {{ {PAGE_LIBRARY}\n{body}\n}})(); return JSON.stringify(__r === undefined ? null : __r); }})()"
    );
    let result = page.evaluate_expression(expression).await?;
    let text: String = result
        .into_value()
        .map_err(|e| BrowserError::Script(format!("page script returned no JSON: {e}")))?;
    serde_json::from_str(&text)
        .map_err(|e| BrowserError::Script(format!("unexpected page script result: {e}")))
}

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
