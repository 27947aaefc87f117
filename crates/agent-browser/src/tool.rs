//! The `browser_use` tool.
//!
//! Why one file past 700 lines: the 16 actions of `browser_use` are one dispatch over one
//! browser, each with OpenManus's exact observation text (a compatibility fact); keeping them
//! together keeps the action table and its strings in one view. The state, extraction and the
//! Chromium session are in their own files.

use std::sync::Arc;
use std::time::Duration;

use agent_llm::ChatModel;
use agent_tools::{Tool, ToolContext, ToolError, ToolResult};
use agent_web::{WebSearch, WebSearchArgs};
use async_trait::async_trait;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, InsertTextParams,
};
use chromiumoxide::cdp::browser_protocol::page::{
    GetNavigationHistoryParams, NavigateToHistoryEntryParams,
};
use chromiumoxide::layout::Point;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tracing::{Instrument, debug, info_span};

use crate::loading::{navigate, settle, wait_until};
use crate::pyrepr::py_str;
use crate::{Browser, BrowserConfig, BrowserError, current_state, page_script};

/// The tool's name.
pub const BROWSER_USE: &str = "browser_use";

const DESCRIPTION: &str = "Drive a web browser whose state persists between calls: open and \
navigate pages, click and type into elements, scroll, pick dropdown options, manage tabs, search \
the web and extract content. Elements are referred to by the [index] shown for them in the \
current browser state.";

/// What `browser_use` should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BrowserAction {
    /// Navigate the current tab to `url`.
    GoToUrl,
    /// Click the element `index`.
    ClickElement,
    /// Type `text` into the element `index`.
    InputText,
    /// Scroll down by `scroll_amount` pixels.
    ScrollDown,
    /// Scroll up by `scroll_amount` pixels.
    ScrollUp,
    /// Scroll to the first element containing `text`.
    ScrollToText,
    /// Press `keys` (e.g. `Enter`, `Control+a`).
    SendKeys,
    /// List the options of the `<select>` element `index`.
    GetDropdownOptions,
    /// Select the option labelled `text` of the `<select>` element `index`.
    SelectDropdownOption,
    /// Go back in history.
    GoBack,
    /// Search the web for `query` and open the first result.
    WebSearch,
    /// Wait `seconds`.
    Wait,
    /// Extract content for `goal` from the page.
    ExtractContent,
    /// Switch to tab `tab_id`.
    SwitchTab,
    /// Open `url` in a new tab.
    OpenTab,
    /// Close the current tab.
    CloseTab,
}

const ACTIONS: [BrowserAction; 16] = [
    BrowserAction::GoToUrl,
    BrowserAction::ClickElement,
    BrowserAction::InputText,
    BrowserAction::ScrollDown,
    BrowserAction::ScrollUp,
    BrowserAction::ScrollToText,
    BrowserAction::SendKeys,
    BrowserAction::GetDropdownOptions,
    BrowserAction::SelectDropdownOption,
    BrowserAction::GoBack,
    BrowserAction::WebSearch,
    BrowserAction::Wait,
    BrowserAction::ExtractContent,
    BrowserAction::SwitchTab,
    BrowserAction::OpenTab,
    BrowserAction::CloseTab,
];

impl BrowserAction {
    /// The action's name in the schema.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::GoToUrl => "go_to_url",
            Self::ClickElement => "click_element",
            Self::InputText => "input_text",
            Self::ScrollDown => "scroll_down",
            Self::ScrollUp => "scroll_up",
            Self::ScrollToText => "scroll_to_text",
            Self::SendKeys => "send_keys",
            Self::GetDropdownOptions => "get_dropdown_options",
            Self::SelectDropdownOption => "select_dropdown_option",
            Self::GoBack => "go_back",
            Self::WebSearch => "web_search",
            Self::Wait => "wait",
            Self::ExtractContent => "extract_content",
            Self::SwitchTab => "switch_tab",
            Self::OpenTab => "open_tab",
            Self::CloseTab => "close_tab",
        }
    }

    /// Every action, in schema order.
    #[must_use]
    pub fn all() -> &'static [BrowserAction] {
        &ACTIONS
    }

    /// The parameters the action needs (the schema's `dependencies` map).
    #[must_use]
    pub fn dependencies(self) -> &'static [&'static str] {
        match self {
            Self::GoToUrl | Self::OpenTab => &["url"],
            Self::ClickElement | Self::GetDropdownOptions => &["index"],
            Self::InputText | Self::SelectDropdownOption => &["index", "text"],
            Self::SwitchTab => &["tab_id"],
            Self::ScrollDown | Self::ScrollUp => &["scroll_amount"],
            Self::ScrollToText => &["text"],
            Self::SendKeys => &["keys"],
            Self::GoBack | Self::CloseTab => &[],
            Self::WebSearch => &["query"],
            Self::Wait => &["seconds"],
            Self::ExtractContent => &["goal"],
        }
    }
}

/// Arguments of `browser_use`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct BrowserUseArgs {
    /// The browser action to perform.
    pub action: BrowserAction,
    /// URL for 'go_to_url' or 'open_tab'.
    pub url: Option<String>,
    /// Element index for 'click_element', 'input_text', 'get_dropdown_options' or 'select_dropdown_option'.
    pub index: Option<usize>,
    /// Text for 'input_text', 'scroll_to_text' or 'select_dropdown_option'.
    pub text: Option<String>,
    /// Pixels to scroll (positive or negative) for 'scroll_down' or 'scroll_up'.
    pub scroll_amount: Option<i64>,
    /// Tab id for 'switch_tab'.
    pub tab_id: Option<usize>,
    /// Search query for 'web_search'.
    pub query: Option<String>,
    /// What to extract for 'extract_content'.
    pub goal: Option<String>,
    /// Keys to send for 'send_keys'.
    pub keys: Option<String>,
    /// Seconds to wait for 'wait'.
    pub seconds: Option<u64>,
}

/// `browser_use`: one lazily launched Chromium per tool instance, closed by `cleanup` (and on
/// drop). Calls are serialised by a lock, as in OpenManus.
pub struct BrowserUseTool {
    config: BrowserConfig,
    session: Mutex<Option<Browser>>,
    web_search: Option<Arc<WebSearch>>,
    llm: Option<Arc<dyn ChatModel>>,
    name: String,
}

impl std::fmt::Debug for BrowserUseTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserUseTool")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Default for BrowserUseTool {
    fn default() -> Self {
        Self::new()
    }
}

impl BrowserUseTool {
    /// A tool with the default [`BrowserConfig`] (headless) and no web search.
    #[must_use]
    pub fn new() -> Self {
        Self::with_config(BrowserConfig::default())
    }

    /// A tool that launches its browser per `config`.
    #[must_use]
    pub fn with_config(config: BrowserConfig) -> Self {
        Self {
            config,
            session: Mutex::new(None),
            web_search: None,
            llm: None,
            name: BROWSER_USE.to_owned(),
        }
    }

    /// Offers the tool under `name` instead of `browser_use` (SandboxManus's
    /// `sandbox_browser`).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Uses `llm` for the `extract_content` action (OpenManus gives the tool its own `LLM()`;
    /// the agents here pass their own model).
    #[must_use]
    pub fn with_llm(mut self, llm: Arc<dyn ChatModel>) -> Self {
        self.llm = Some(llm);
        self
    }

    /// Uses `search` for the `web_search` action.
    #[must_use]
    pub fn with_web_search(mut self, search: Arc<WebSearch>) -> Self {
        self.web_search = Some(search);
        self
    }

    /// Whether a model for `extract_content` is set.
    #[must_use]
    pub fn has_llm(&self) -> bool {
        self.llm.is_some()
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &BrowserConfig {
        &self.config
    }

    /// The process id of the running Chromium, if one runs.
    pub async fn browser_pid(&self) -> Option<i32> {
        self.session.lock().await.as_ref().and_then(Browser::pid)
    }

    /// The current browser state as OpenManus's `get_current_state` result: the state JSON
    /// (four-space indent) as output and the screenshot as `base64_image`; without a browser,
    /// the error `Browser context not initialized`.
    pub async fn get_current_state(&self) -> ToolResult {
        match self.state().await {
            Ok(Some(state)) => match state.to_json() {
                Ok(json) => {
                    let result = ToolResult::success(json);
                    match state.screenshot {
                        Some(image) => result.with_image(image),
                        None => result,
                    }
                }
                Err(e) => ToolResult::failure(format!("Failed to get browser state: {e}")),
            },
            Ok(None) => ToolResult::failure("Browser context not initialized"),
            Err(e) => ToolResult::failure(format!("Failed to get browser state: {e}")),
        }
    }

    /// The current [`crate::BrowserState`], or `None` when no browser runs.
    ///
    /// # Errors
    ///
    /// [`BrowserError`], including [`BrowserError::Timeout`] after the action timeout.
    pub async fn state(&self) -> Result<Option<crate::BrowserState>, BrowserError> {
        let mut guard = self.session.lock().await;
        if let Some(browser) = guard.as_mut()
            && !browser.is_alive()
        {
            // A browser that died (killed, crashed) has no state; the next action starts a
            // new one.
            browser.close().await;
            *guard = None;
        }
        let Some(browser) = guard.as_ref() else {
            return Ok(None);
        };
        let timeout = self.config.action_timeout;
        match tokio::time::timeout(timeout, current_state(browser)).await {
            Ok(state) => state.map(Some),
            Err(_) => Err(BrowserError::Timeout(timeout)),
        }
    }

    /// Closes the browser, if one runs; idempotent.
    pub async fn close(&self) {
        if let Some(mut browser) = self.session.lock().await.take() {
            browser.close().await;
        }
    }

    async fn run(&self, args: BrowserUseArgs, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let action = args.action;
        if let Some(message) = missing_parameters(&args) {
            return Ok(ToolResult::failure(message));
        }
        let failed = |e: &dyn std::fmt::Display| {
            ToolResult::failure(format!("Browser action '{}' failed: {e}", action.name()))
        };
        let mut guard = self.session.lock().await;
        if let Some(browser) = guard.as_mut()
            && !browser.is_alive()
        {
            debug!("the browser is gone; relaunching");
            browser.close().await;
            *guard = None;
        }
        if guard.is_none() {
            match Browser::launch(&self.config).await {
                Ok(browser) => *guard = Some(browser),
                Err(e) => return Ok(failed(&e)),
            }
        }
        let Some(browser) = guard.as_mut() else {
            return Ok(failed(&BrowserError::Closed));
        };
        // Waiting, searching and asking the model are not page work: they get their own time
        // on top of the action timeout, and running over it does not mean the page hangs.
        let page_work = !matches!(
            action,
            BrowserAction::Wait | BrowserAction::WebSearch | BrowserAction::ExtractContent
        );
        let timeout = match action {
            BrowserAction::Wait => {
                self.config.action_timeout
                    + Duration::from_secs(args.seconds.unwrap_or(3).min(MAX_WAIT_SECS))
            }
            BrowserAction::WebSearch | BrowserAction::ExtractContent => {
                self.config.action_timeout + NON_PAGE_BUDGET
            }
            _ => self.config.action_timeout,
        };
        let extras = Extras {
            web_search: self.web_search.as_deref(),
            llm: self.llm.as_deref(),
            max_content_length: self.config.max_content_length,
        };
        // Chromium killed or crashed mid-action: said at once, not at the timeout (its
        // DevTools requests would wait for their own timeout).
        let exited = browser.exit_watch();
        let died = async move {
            match exited {
                Some(mut watch) => watch.wait().await,
                None => std::future::pending().await,
            }
        };
        let work = perform(browser, &args, &extras, ctx);
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(timeout, work) => outcome,
            status = died => {
                let status = status.map_or_else(|| "status unknown".to_owned(), |s| s.to_string());
                debug!(%status, "Chromium exited during a browser action");
                if let Some(mut browser) = guard.take() {
                    browser.close().await;
                }
                return Ok(failed(&BrowserError::Exited(status)));
            }
        };
        Ok(match outcome {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => failed(&e),
            Err(_) if !page_work => failed(&BrowserError::Timeout(timeout)),
            Err(_) => {
                // A page that did not answer in time (a navigation that never finishes, a
                // script that never returns) would hold every later command sent to it, so
                // the tab is replaced by a blank one under the same id.
                let reset = match browser.reset_current_tab().await {
                    Ok(()) => "; the tab was reset to a blank page",
                    Err(e) => {
                        debug!(error = %e, "could not reset the tab");
                        ""
                    }
                };
                ToolResult::failure(format!(
                    "Browser action '{}' failed: {}{reset}",
                    action.name(),
                    BrowserError::Timeout(timeout)
                ))
            }
        })
    }
}

fn missing_parameters(args: &BrowserUseArgs) -> Option<&'static str> {
    let text = args.text.as_deref().is_some_and(|t| !t.is_empty());
    let given = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
    match args.action {
        BrowserAction::GoToUrl if !given(&args.url) => {
            Some("URL is required for 'go_to_url' action")
        }
        BrowserAction::ClickElement if args.index.is_none() => {
            Some("Index is required for 'click_element' action")
        }
        BrowserAction::InputText if args.index.is_none() || !text => {
            Some("Index and text are required for 'input_text' action")
        }
        BrowserAction::ScrollToText if !text => {
            Some("Text is required for 'scroll_to_text' action")
        }
        BrowserAction::SendKeys if !given(&args.keys) => {
            Some("Keys are required for 'send_keys' action")
        }
        BrowserAction::GetDropdownOptions if args.index.is_none() => {
            Some("Index is required for 'get_dropdown_options' action")
        }
        BrowserAction::SelectDropdownOption if args.index.is_none() || !text => {
            Some("Index and text are required for 'select_dropdown_option' action")
        }
        BrowserAction::WebSearch if !given(&args.query) => {
            Some("Query is required for 'web_search' action")
        }
        BrowserAction::ExtractContent if !given(&args.goal) => {
            Some("Goal is required for 'extract_content' action")
        }
        BrowserAction::SwitchTab if args.tab_id.is_none() => {
            Some("Tab ID is required for 'switch_tab' action")
        }
        BrowserAction::OpenTab if !given(&args.url) => {
            Some("URL is required for 'open_tab' action")
        }
        _ => None,
    }
}

#[derive(Deserialize)]
struct Center {
    x: f64,
    y: f64,
}

#[derive(Deserialize)]
struct DropdownOption {
    text: String,
    value: String,
    index: usize,
}

/// What some actions need besides the browser.
struct Extras<'a> {
    web_search: Option<&'a WebSearch>,
    llm: Option<&'a dyn ChatModel>,
    max_content_length: usize,
}

/// The longest `wait` honoured, in seconds.
const MAX_WAIT_SECS: u64 = 600;

/// The time `web_search` and `extract_content` get beyond the action timeout (a search engine
/// or the model may be slow).
const NON_PAGE_BUDGET: Duration = Duration::from_secs(300);

/// How long a click waits for a download to begin before it counts as a plain click.
const DOWNLOAD_GRACE: Duration = Duration::from_millis(400);

/// Runs one action whose parameters were checked.
async fn perform(
    browser: &mut Browser,
    args: &BrowserUseArgs,
    extras: &Extras<'_>,
    ctx: &ToolContext,
) -> Result<ToolResult, BrowserError> {
    let text = args.text.clone().unwrap_or_default();
    let index = args.index.unwrap_or_default();
    match args.action {
        BrowserAction::GoToUrl => {
            let url = args.url.clone().unwrap_or_default();
            navigate(browser.current_page()?, &url).await?;
            Ok(ToolResult::success(format!("Navigated to {url}")))
        }
        BrowserAction::GoBack => {
            let page = browser.current_page()?;
            let history = page.execute(GetNavigationHistoryParams::default()).await?;
            let back = usize::try_from(history.result.current_index)
                .ok()
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| history.result.entries.get(i));
            if let Some(entry) = back {
                page.execute(NavigateToHistoryEntryParams::new(entry.id))
                    .await?;
                let expected = serde_json::to_string(&entry.url).unwrap_or_default();
                wait_until(
                    page,
                    &format!(
                        "return location.href === {expected} && document.readyState === 'complete';"
                    ),
                )
                .await?;
            }
            Ok(ToolResult::success("Navigated back"))
        }
        BrowserAction::ClickElement => {
            let page = browser.current_page()?;
            let center: Option<Center> = page_script(
                page,
                &format!("const el = __om.element({index}); return el ? __om.center(el) : null;"),
            )
            .await?;
            let Some(center) = center else {
                return Ok(ToolResult::failure(format!(
                    "Element with index {index} not found"
                )));
            };
            let mark = browser.download_mark();
            page.click(Point::new(center.x, center.y)).await?;
            settle(page).await;
            let mut output = format!("Clicked element at index {index}");
            for download in browser.wait_for_downloads(mark, DOWNLOAD_GRACE).await {
                output.push_str(&format!(
                    " - Downloaded file to {}",
                    download.path.display()
                ));
            }
            for id in browser.adopt_new_pages().await? {
                if let Ok(page) = browser.current_page() {
                    settle(page).await;
                }
                output.push_str(&format!(" - Opened new tab {id}"));
            }
            Ok(ToolResult::success(output))
        }
        BrowserAction::InputText => {
            let page = browser.current_page()?;
            let status: String = page_script(
                page,
                &format!(
                    "const el = __om.element({index}); if (!el) return 'missing';
                     const field = el.tagName === 'INPUT' || el.tagName === 'TEXTAREA';
                     if (!field && !el.isContentEditable) return 'not editable';
                     el.scrollIntoView({{block: 'center'}}); el.focus();
                     if (field) {{ el.value = ''; el.dispatchEvent(new Event('input', {{bubbles: true}})); }}
                     else {{ el.textContent = ''; }}
                     return 'ok';"
                ),
            )
            .await?;
            match status.as_str() {
                "ok" => {}
                "missing" => {
                    return Ok(ToolResult::failure(format!(
                        "Element with index {index} not found"
                    )));
                }
                other => {
                    return Err(BrowserError::Script(format!(
                        "element {index} is {other}: not an <input>, <textarea> or [contenteditable] element"
                    )));
                }
            }
            page.execute(InsertTextParams::new(text.clone())).await?;
            Ok(ToolResult::success(format!(
                "Input '{text}' into element at index {index}"
            )))
        }
        BrowserAction::ScrollDown | BrowserAction::ScrollUp => {
            let page = browser.current_page()?;
            let amount = match args.scroll_amount {
                Some(amount) => amount,
                None => page_script(page, "return window.innerHeight;").await?,
            };
            let (direction, sign) = if args.action == BrowserAction::ScrollDown {
                ("down", 1)
            } else {
                ("up", -1)
            };
            let _: Value = page_script(
                page,
                &format!("window.scrollBy(0, {}); return null;", sign * amount),
            )
            .await?;
            Ok(ToolResult::success(format!(
                "Scrolled {direction} by {amount} pixels"
            )))
        }
        BrowserAction::ScrollToText => {
            let page = browser.current_page()?;
            let needle = serde_json::to_string(&text).unwrap_or_default();
            let found: bool = page_script(
                page,
                &format!(
                    "const el = __om.findText({needle}); if (!el) return false; el.scrollIntoView({{block: 'center'}}); return true;"
                ),
            )
            .await?;
            Ok(if found {
                ToolResult::success(format!("Scrolled to text: '{text}'"))
            } else {
                ToolResult::failure(format!(
                    "Failed to scroll to text: no visible element contains '{text}'"
                ))
            })
        }
        BrowserAction::SendKeys => {
            let keys = args.keys.clone().unwrap_or_default();
            press_keys(browser.current_page()?, &keys).await?;
            settle(browser.current_page()?).await;
            Ok(ToolResult::success(format!("Sent keys: {keys}")))
        }
        BrowserAction::GetDropdownOptions => {
            let options: Option<Vec<DropdownOption>> = page_script(
                browser.current_page()?,
                &format!(
                    "const el = __om.element({index}); if (!el) return null;
                     if (el.tagName !== 'SELECT') throw new Error('element {index} is not a <select>');
                     return Array.from(el.options).map((o, i) => ({{text: o.text, value: o.value, index: i}}));"
                ),
            )
            .await?;
            let Some(options) = options else {
                return Ok(ToolResult::failure(format!(
                    "Element with index {index} not found"
                )));
            };
            let listed: Vec<String> = options
                .iter()
                .map(|o| {
                    format!(
                        "{{'text': {}, 'value': {}, 'index': {}}}",
                        py_str(&o.text),
                        py_str(&o.value),
                        o.index
                    )
                })
                .collect();
            Ok(ToolResult::success(format!(
                "Dropdown options: [{}]",
                listed.join(", ")
            )))
        }
        BrowserAction::SelectDropdownOption => {
            let label = serde_json::to_string(&text).unwrap_or_default();
            let status: String = page_script(
                browser.current_page()?,
                &format!(
                    "const el = __om.element({index}); if (!el) return 'missing';
                     if (el.tagName !== 'SELECT') return 'not a select';
                     const i = Array.from(el.options).findIndex(o => o.label.trim() === {label}.trim() || o.text.trim() === {label}.trim());
                     if (i < 0) return 'no option';
                     el.selectedIndex = i;
                     el.dispatchEvent(new Event('input', {{bubbles: true}}));
                     el.dispatchEvent(new Event('change', {{bubbles: true}}));
                     return 'ok';"
                ),
            )
            .await?;
            match status.as_str() {
                "ok" => Ok(ToolResult::success(format!(
                    "Selected option '{text}' from dropdown at index {index}"
                ))),
                "missing" => Ok(ToolResult::failure(format!(
                    "Element with index {index} not found"
                ))),
                "no option" => Err(BrowserError::Script(format!(
                    "no option labelled '{text}' in the dropdown at index {index}"
                ))),
                _ => Err(BrowserError::Script(format!(
                    "element {index} is not a <select>"
                ))),
            }
        }
        BrowserAction::WebSearch => {
            let Some(search) = extras.web_search else {
                return Err(BrowserError::Script(
                    "no web search is configured for browser_use".to_owned(),
                ));
            };
            let query = args.query.clone().unwrap_or_default();
            let mut search_args = WebSearchArgs::new(query.clone());
            search_args.num_results = 1;
            search_args.fetch_content = true;
            let response = search
                .search(&search_args, &ctx.cancellation)
                .await
                .map_err(|e| BrowserError::Script(e.to_string()))?;
            let Some(first) = response.results.first() else {
                return Err(BrowserError::Script(format!(
                    "the search for '{query}' found no results"
                )));
            };
            navigate(browser.current_page()?, &first.url).await?;
            Ok(ToolResult::success(response.to_string()))
        }
        BrowserAction::Wait => {
            let seconds = args.seconds.unwrap_or(3).min(MAX_WAIT_SECS);
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            Ok(ToolResult::success(format!("Waited for {seconds} seconds")))
        }
        BrowserAction::ExtractContent => {
            let Some(llm) = extras.llm else {
                return Err(BrowserError::Script(
                    "no model is configured for extract_content".to_owned(),
                ));
            };
            let goal = args.goal.clone().unwrap_or_default();
            let page = browser.current_page()?;
            let html = page.content().await?;
            let markdown = crate::extract::page_markdown(&html, extras.max_content_length);
            crate::extract::extract(llm, &goal, &markdown).await
        }
        BrowserAction::SwitchTab => {
            let id = args.tab_id.unwrap_or_default();
            browser.switch_tab(id).await?;
            settle(browser.current_page()?).await;
            Ok(ToolResult::success(format!("Switched to tab {id}")))
        }
        BrowserAction::OpenTab => {
            let url = args.url.clone().unwrap_or_default();
            browser.open_tab("about:blank").await?;
            navigate(browser.current_page()?, &url).await?;
            Ok(ToolResult::success(format!("Opened new tab with {url}")))
        }
        BrowserAction::CloseTab => {
            browser.close_tab().await?;
            Ok(ToolResult::success("Closed current tab"))
        }
    }
}

/// Presses a key or a `+`-joined combination such as `Control+a`.
async fn press_keys(page: &Page, keys: &str) -> Result<(), BrowserError> {
    let parts: Vec<&str> = keys.split('+').filter(|p| !p.is_empty()).collect();
    let Some((key, modifiers)) = parts.split_last() else {
        return Err(BrowserError::Script(format!("no key in '{keys}'")));
    };
    let key = if keys.ends_with("++") || keys == "+" {
        "+"
    } else {
        key
    };
    let mut mask = 0_i64;
    for modifier in modifiers {
        let bit = match *modifier {
            "Alt" => 1,
            "Control" | "Ctrl" => 2,
            "Meta" | "Command" => 4,
            "Shift" => 8,
            other => return Err(BrowserError::Script(format!("unknown modifier '{other}'"))),
        };
        mask |= bit;
        dispatch_key(
            page,
            modifier_name(modifier),
            DispatchKeyEventType::RawKeyDown,
            mask,
            false,
        )
        .await?;
    }
    let definition = chromiumoxide::keys::get_key_definition(key)
        .ok_or_else(|| BrowserError::Script(format!("unknown key '{key}'")))?;
    let text = mask & 0b0110 == 0;
    let down = if text && (definition.text.is_some() || definition.key.len() == 1) {
        DispatchKeyEventType::KeyDown
    } else {
        DispatchKeyEventType::RawKeyDown
    };
    dispatch_key(page, key, down, mask, text).await?;
    dispatch_key(page, key, DispatchKeyEventType::KeyUp, mask, false).await?;
    for modifier in modifiers.iter().rev() {
        dispatch_key(
            page,
            modifier_name(modifier),
            DispatchKeyEventType::KeyUp,
            0,
            false,
        )
        .await?;
    }
    Ok(())
}

fn modifier_name(modifier: &str) -> &str {
    match modifier {
        "Ctrl" => "Control",
        "Command" => "Meta",
        other => other,
    }
}

async fn dispatch_key(
    page: &Page,
    key: &str,
    kind: DispatchKeyEventType,
    modifiers: i64,
    with_text: bool,
) -> Result<(), BrowserError> {
    let definition = chromiumoxide::keys::get_key_definition(key)
        .ok_or_else(|| BrowserError::Script(format!("unknown key '{key}'")))?;
    let mut builder = DispatchKeyEventParams::builder()
        .r#type(kind)
        .key(definition.key)
        .code(definition.code)
        .windows_virtual_key_code(definition.key_code)
        .native_virtual_key_code(definition.key_code)
        .modifiers(modifiers);
    if with_text {
        if let Some(text) = definition.text {
            builder = builder.text(text);
        } else if definition.key.len() == 1 {
            builder = builder.text(definition.key);
        }
    }
    let params = builder.build().map_err(BrowserError::Script)?;
    page.execute(params).await?;
    Ok(())
}

#[async_trait]
impl Tool for BrowserUseTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        let mut schema = agent_tools::parameters_schema::<BrowserUseArgs>();
        let dependencies: serde_json::Map<String, Value> = BrowserAction::all()
            .iter()
            .map(|a| (a.name().to_owned(), json!(a.dependencies())))
            .collect();
        if let Value::Object(root) = &mut schema {
            root.insert("dependencies".to_owned(), Value::Object(dependencies));
        }
        schema
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        if let Some(name) = args.get("action").and_then(Value::as_str)
            && !BrowserAction::all().iter().any(|a| a.name() == name)
        {
            return Ok(ToolResult::failure(format!("Unknown action: {name}")));
        }
        let args: BrowserUseArgs = agent_tools::parse_args(args)?;
        let span = info_span!("browser", tool = %self.name, action = args.action.name());
        self.run(args, ctx).instrument(span).await
    }

    async fn cleanup(&self) -> Result<(), ToolError> {
        self.close().await;
        Ok(())
    }
}
