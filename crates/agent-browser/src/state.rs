//! The browser state the agents show the model: [`BrowserState`] and [`current_state`].

use base64::Engine as _;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
use chromiumoxide::page::ScreenshotParams;
use serde::{Deserialize, Serialize};

use crate::{Browser, BrowserError, page_script};

/// The sentence that explains the `[i]` indices to the model.
pub const STATE_HELP: &str = "Each [i] is the index of an interactive element on the page; pass it as `index` to click_element, input_text, get_dropdown_options or select_dropdown_option.";

/// One open tab as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TabInfo {
    /// The id `switch_tab` takes.
    pub page_id: usize,
    /// The tab's URL.
    pub url: String,
    /// The tab's title.
    pub title: String,
}

/// How far the page is scrolled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScrollInfo {
    /// Pixels above the viewport.
    pub pixels_above: u64,
    /// Pixels below the viewport.
    pub pixels_below: u64,
    /// The page's total height.
    pub total_height: u64,
}

/// One indexed interactive element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InteractiveElement {
    /// Its index (document order, from 0).
    pub index: usize,
    /// Its tag name, lower case.
    pub tag: String,
    /// Selected attributes (`type`, `name`, `placeholder`, `href`, the current `value`, ...).
    pub attributes: std::collections::BTreeMap<String, String>,
    /// Its visible text, whitespace collapsed, at most 100 characters.
    pub text: String,
}

impl std::fmt::Display for InteractiveElement {
    /// `[{index}]<{tag} {name}="{value}"...>{text}</{tag}>`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}]<{}", self.index, self.tag)?;
        for (name, value) in &self.attributes {
            write!(f, " {name}=\"{}\"", value.replace('"', "'"))?;
        }
        write!(f, ">{}</{}>", self.text, self.tag)
    }
}

/// What `get_current_state` reports. Serialises (field order included) to the JSON of
/// OpenManus's state output; the element list and the screenshot travel beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrowserState {
    /// The current URL.
    pub url: String,
    /// The current title.
    pub title: String,
    /// The open tabs.
    pub tabs: Vec<TabInfo>,
    /// [`STATE_HELP`].
    pub help: String,
    /// The indexed interactive elements, one per line.
    pub interactive_elements: String,
    /// The scroll position.
    pub scroll_info: ScrollInfo,
    /// The viewport height.
    pub viewport_height: u64,
    /// The elements behind `interactive_elements`.
    #[serde(skip)]
    pub elements: Vec<InteractiveElement>,
    /// A full-page JPEG screenshot, base64.
    #[serde(skip)]
    pub screenshot: Option<String>,
}

impl BrowserState {
    /// The state as JSON indented by four spaces (OpenManus's `json.dumps(indent=4)`).
    ///
    /// # Errors
    ///
    /// Serialisation errors (none in practice).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
        self.serialize(&mut serializer)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

#[derive(Deserialize)]
struct PageScroll {
    pixels_above: u64,
    pixels_below: u64,
    total_height: u64,
    viewport_height: u64,
}

/// Reads the state of `browser`'s current tab: URL, title, tabs, the indexed elements (this
/// numbering is the one the actions use until the page changes), scroll position and a
/// full-page JPEG screenshot (quality 100).
///
/// # Errors
///
/// [`BrowserError`] when a CDP call or the page script fails.
pub async fn current_state(browser: &Browser) -> Result<BrowserState, BrowserError> {
    let page = browser.current_page()?;
    page.bring_to_front().await?;
    let mut tabs = Vec::new();
    for tab in browser.tabs() {
        tabs.push(TabInfo {
            page_id: tab.id,
            url: tab.page.url().await?.unwrap_or_default(),
            title: title(&tab.page).await?,
        });
    }
    let elements: Vec<InteractiveElement> = page_script(page, "return __om.index();").await?;
    let scroll: PageScroll = page_script(page, "return __om.scroll();").await?;
    let screenshot = page
        .screenshot(
            ScreenshotParams::builder()
                .format(CaptureScreenshotFormat::Jpeg)
                .quality(100)
                .full_page(true)
                .build(),
        )
        .await?;
    // A full-page capture clears the device metrics afterwards, which would leave the page at
    // the window's size; put the configured viewport back.
    let (width, height) = browser.viewport();
    page.execute(SetDeviceMetricsOverrideParams::new(
        width, height, 1.0, false,
    ))
    .await?;
    let _: serde_json::Value = page_script(
        page,
        &format!("window.scrollTo(0, {}); return null;", scroll.pixels_above),
    )
    .await?;
    Ok(BrowserState {
        url: page.url().await?.unwrap_or_default(),
        title: title(page).await?,
        tabs,
        help: STATE_HELP.to_owned(),
        interactive_elements: elements
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        scroll_info: ScrollInfo {
            pixels_above: scroll.pixels_above,
            pixels_below: scroll.pixels_below,
            total_height: scroll.total_height,
        },
        viewport_height: scroll.viewport_height,
        elements,
        screenshot: Some(base64::engine::general_purpose::STANDARD.encode(screenshot)),
    })
}

async fn title(page: &Page) -> Result<String, BrowserError> {
    Ok(page.get_title().await?.unwrap_or_default())
}
