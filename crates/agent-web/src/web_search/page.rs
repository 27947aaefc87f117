//! Fetching web pages for the web tools: one GET with a time limit and a size cap, the body
//! decoded from its declared charset, and the visible text of an HTML page.
//!
//! Both `web_search` (its engines and `fetch_content`) and `crawl4ai` fetch through a
//! [`PageFetcher`].
//!
//! ```
//! use agent_web::web_search::page::{decode_body, visible_text};
//!
//! // windows-1251 declared in a <meta> tag: "Привет" is decoded, not mangled.
//! let mut html = b"<html><head><meta charset=\"windows-1251\"></head><body><p>".to_vec();
//! html.extend_from_slice(&[0xCF, 0xF0, 0xE8, 0xE2, 0xE5, 0xF2]);
//! html.extend_from_slice(b"</p><script>var x = 1;</script></body></html>");
//! let text = decode_body(&html, Some("text/html"));
//! assert_eq!(visible_text(&text, usize::MAX), "Привет");
//! ```

use std::error::Error as StdError;
use std::fmt::Write as _;
use std::time::Duration;

use encoding_rs::{Encoding, UTF_8};
use reqwest::{Client, RequestBuilder, StatusCode, redirect};
use scraper::{Html, Node};
use thiserror::Error;
use url::Url;

/// The `User-Agent` sent with every request unless the settings say otherwise: a current desktop
/// browser, because many sites and every search engine answer bare HTTP clients with an error
/// page.
pub const DEFAULT_USER_AGENT: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 \
(KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/// How many redirects a fetch follows before it gives up (a loop ends there too).
pub const MAX_REDIRECTS: usize = 10;

/// The elements whose text is never part of a page's text: code, styling and page furniture
/// (the spec's script/style/header/footer/nav, plus `noscript` and `template`).
pub const NOISE_ELEMENTS: [&str; 7] = [
    "script", "style", "header", "footer", "nav", "noscript", "template",
];

/// Why a page could not be fetched. The `Display` text is written for the model.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FetchError {
    /// No response (or not the whole body) within the time limit.
    #[error("timed out after {}", seconds(*.0))]
    Timeout(Duration),
    /// The server kept redirecting (more than [`MAX_REDIRECTS`] hops, or in a loop).
    #[error("too many redirects (more than {MAX_REDIRECTS}; probably a redirect loop)")]
    TooManyRedirects,
    /// The server answered with a status other than 2xx.
    #[error("{}", status_line(*.0))]
    Status(u16),
    /// No connection could be made (DNS, refused, TLS).
    #[error("connection failed: {0}")]
    Connect(String),
    /// Any other transport failure (the body was cut, a protocol error).
    #[error("request failed: {0}")]
    Request(String),
    /// The response is neither HTML nor text (a PDF, an image, ...).
    #[error("unsupported content type {0} (only HTML and text can be read)")]
    UnsupportedContent(String),
}

impl FetchError {
    /// Whether trying again later may help: timeouts, connection and transport failures, 429 and
    /// 5xx.
    #[must_use]
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Timeout(_) | Self::Connect(_) | Self::Request(_) => true,
            Self::Status(status) => *status == 429 || *status >= 500,
            Self::TooManyRedirects | Self::UnsupportedContent(_) => false,
        }
    }

    fn from_reqwest(error: &reqwest::Error, timeout: Duration) -> Self {
        if error.is_timeout() {
            Self::Timeout(timeout)
        } else if error.is_redirect() {
            Self::TooManyRedirects
        } else if error.is_connect() {
            Self::Connect(error_chain(error))
        } else {
            Self::Request(error_chain(error))
        }
    }
}

/// `3 s`, `0.25 s`.
fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{secs:.2} s")
    }
}

/// `HTTP 404 Not Found`.
#[must_use]
pub fn status_line(status: u16) -> String {
    match StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
    {
        Some(reason) => format!("HTTP {status} {reason}"),
        None => format!("HTTP {status}"),
    }
}

/// An error and its sources, joined with `: ` (reqwest hides the cause in its sources).
fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            let _ = write!(text, ": {cause_text}");
        }
        source = cause.source();
    }
    text
}

/// A fetched page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The URL the page came from, after redirects.
    pub url: Url,
    /// The HTTP status (always 2xx: other statuses are [`FetchError::Status`]).
    pub status: u16,
    /// The media type of the body, lower-cased, without parameters (`text/html`), when declared.
    pub content_type: Option<String>,
    /// The body decoded to text (see [`decode_body`]).
    pub text: String,
    /// Whether the body was cut at the size cap.
    pub truncated: bool,
}

impl Page {
    /// Whether the body is HTML (declared so, or undeclared).
    #[must_use]
    pub fn is_html(&self) -> bool {
        self.content_type
            .as_deref()
            .is_none_or(|t| t == "text/html" || t == "application/xhtml+xml")
    }
}

/// Whether a media type is text this crate can read (HTML, `text/*`, JSON, XML).
fn is_readable(media_type: &str) -> bool {
    media_type.starts_with("text/")
        || media_type == "application/xhtml+xml"
        || media_type == "application/json"
        || media_type.ends_with("+json")
        || media_type == "application/xml"
        || media_type.ends_with("+xml")
}

/// Builds the HTTP client the web tools use: `user_agent`, at most [`MAX_REDIRECTS`] redirects,
/// and the system's proxy settings (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`). It is built on the
/// process's one TLS set-up ([`agent_llm::http::client_builder`]): the root certificates are read
/// on the first https request, not here.
///
/// # Errors
///
/// The TLS backend could not be initialised.
pub fn http_client(user_agent: &str) -> Result<Client, reqwest::Error> {
    agent_llm::http::client_builder()
        .user_agent(user_agent)
        .redirect(redirect::Policy::limited(MAX_REDIRECTS))
        .build()
}

/// Fetches pages with a time limit and a size cap. Cheap to clone (the client is shared).
#[derive(Debug, Clone)]
pub struct PageFetcher {
    client: Client,
    max_bytes: usize,
}

impl PageFetcher {
    /// A fetcher on `client` that keeps at most `max_bytes` of each body.
    #[must_use]
    pub fn new(client: Client, max_bytes: usize) -> Self {
        Self { client, max_bytes }
    }

    /// The HTTP client, to build requests for [`PageFetcher::send`].
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The size cap in bytes.
    #[must_use]
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// GETs `url` (see [`PageFetcher::send`]).
    ///
    /// # Errors
    ///
    /// See [`PageFetcher::send`].
    pub async fn fetch(&self, url: &Url, timeout: Duration) -> Result<Page, FetchError> {
        self.send(self.client.get(url.clone()), timeout).await
    }

    /// Sends `request` and reads the body, all within `timeout`. Only the first `max_bytes` of
    /// the body are read (the rest is never downloaded); the body is decoded with
    /// [`decode_body`].
    ///
    /// # Errors
    ///
    /// [`FetchError`]: the time limit, redirects, a status other than 2xx, transport failures,
    /// or a body that is not text.
    pub async fn send(
        &self,
        request: RequestBuilder,
        timeout: Duration,
    ) -> Result<Page, FetchError> {
        match tokio::time::timeout(timeout, self.send_inner(request, timeout)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout(timeout)),
        }
    }

    async fn send_inner(
        &self,
        request: RequestBuilder,
        timeout: Duration,
    ) -> Result<Page, FetchError> {
        let mut response = request
            .send()
            .await
            .map_err(|e| FetchError::from_reqwest(&e, timeout))?;
        let status = response.status();
        if !status.is_success() {
            return Err(FetchError::Status(status.as_u16()));
        }
        let url = response.url().clone();
        let content_type_header = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let content_type = content_type_header.as_deref().map(media_type);
        if let Some(media_type) = content_type.as_deref().filter(|t| !is_readable(t)) {
            return Err(FetchError::UnsupportedContent(media_type.to_owned()));
        }
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| FetchError::from_reqwest(&e, timeout))?
        {
            let room = self.max_bytes.saturating_sub(body.len());
            if chunk.len() > room {
                body.extend_from_slice(chunk.get(..room).unwrap_or_default());
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        if truncated {
            tracing::debug!(%url, max_bytes = self.max_bytes, "page cut at the size cap");
        }
        Ok(Page {
            url,
            status: status.as_u16(),
            content_type,
            text: decode_body(&body, content_type_header.as_deref()),
            truncated,
        })
    }
}

/// `text/html; charset=UTF-8` → `text/html`.
fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// The `charset` parameter of a `Content-Type` value.
fn charset_param(content_type: &str) -> Option<&'static Encoding> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| Encoding::for_label(value.trim().trim_matches(['"', '\'']).as_bytes()))
            .flatten()
    })
}

/// How far into an HTML body a `<meta>` charset declaration is looked for.
const META_SNIFF_BYTES: usize = 4096;

/// The charset declared by a `<meta charset=...>` or `<meta http-equiv="Content-Type"
/// content="...; charset=...">` near the start of an HTML body.
fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = body.get(..body.len().min(META_SNIFF_BYTES)).unwrap_or(body);
    let head = head.to_ascii_lowercase();
    let mut rest = head.as_slice();
    while let Some(start) = find(rest, b"<meta") {
        let tag = rest.get(start..).unwrap_or_default();
        let end = tag.iter().position(|b| *b == b'>').unwrap_or(tag.len());
        let attrs = tag.get(..end).unwrap_or_default();
        if let Some(at) = find(attrs, b"charset") {
            let value = attrs.get(at + b"charset".len()..).unwrap_or_default();
            let value = trim_start(value);
            if let Some(value) = value.strip_prefix(b"=") {
                let value = trim_start(value);
                let value = value
                    .strip_prefix(b"\"")
                    .or_else(|| value.strip_prefix(b"'"))
                    .unwrap_or(value);
                let label: Vec<u8> = value
                    .iter()
                    .copied()
                    .take_while(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(b))
                    .collect();
                if let Some(encoding) = Encoding::for_label(&label) {
                    // A page cannot declare UTF-16 in ASCII; HTML treats that as UTF-8.
                    return Some(encoding.output_encoding());
                }
            }
        }
        rest = tag.get(end..).unwrap_or_default();
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
    bytes.get(skip..).unwrap_or_default()
}

/// Decodes a response body to text: a byte-order mark wins, then the `charset` of the
/// `Content-Type` header, then (for HTML) a `<meta>` declaration in the first 4 KiB, else UTF-8.
/// Bytes that are invalid in the chosen encoding become U+FFFD.
#[must_use]
pub fn decode_body(body: &[u8], content_type: Option<&str>) -> String {
    if let Some((encoding, bom_length)) = Encoding::for_bom(body) {
        let rest = body.get(bom_length..).unwrap_or_default();
        return encoding.decode_without_bom_handling(rest).0.into_owned();
    }
    let html = content_type.is_none_or(|t| media_type(t).contains("html"));
    let encoding = content_type
        .and_then(charset_param)
        .or_else(|| html.then(|| meta_charset(body)).flatten())
        .unwrap_or(UTF_8);
    encoding.decode_without_bom_handling(body).0.into_owned()
}

/// The visible text of an HTML document: every text node outside [`NOISE_ELEMENTS`], with
/// whitespace collapsed to single spaces, cut to `max_chars` characters.
#[must_use]
pub fn visible_text(html: &str, max_chars: usize) -> String {
    let document = Html::parse_document(html);
    let mut words: Vec<&str> = Vec::new();
    let mut stack = vec![document.tree.root()];
    while let Some(node) = stack.pop() {
        match node.value() {
            Node::Text(text) => words.extend(text.split_whitespace()),
            Node::Element(element) if NOISE_ELEMENTS.contains(&element.name()) => continue,
            Node::Comment(_) | Node::ProcessingInstruction(_) | Node::Doctype(_) => continue,
            _ => {}
        }
        stack.extend(node.children().rev());
    }
    truncate_chars(&words.join(" "), max_chars).to_owned()
}

/// The first `max_chars` characters of `text`.
#[must_use]
pub fn truncate_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => text.get(..end).unwrap_or(text),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charsets_come_from_the_bom_then_the_header_then_meta() {
        let (cp1251, _, _) = encoding_rs::WINDOWS_1251.encode("Привет мир");
        assert_eq!(
            decode_body(&cp1251, Some("text/html; charset=windows-1251")),
            "Привет мир"
        );
        assert_eq!(
            decode_body(&cp1251, Some("text/plain; charset=\"CP1251\"")),
            "Привет мир"
        );
        let mut meta = b"<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=gbk\"><title>".to_vec();
        let (gbk, _, _) = encoding_rs::GBK.encode("中文页面");
        meta.extend_from_slice(&gbk);
        assert!(decode_body(&meta, Some("text/html")).ends_with("<title>中文页面"));
        assert!(decode_body(&meta, None).ends_with("<title>中文页面"));
        // The header beats the meta tag; a BOM beats both.
        assert!(!decode_body(&meta, Some("text/html; charset=utf-8")).contains("中文"));
        let mut bom = vec![0xEF, 0xBB, 0xBF];
        bom.extend_from_slice("ünïcode".as_bytes());
        assert_eq!(
            decode_body(&bom, Some("text/html; charset=windows-1251")),
            "ünïcode"
        );
        // Text bodies are not sniffed for <meta>, and unknown labels fall back to UTF-8.
        assert!(decode_body(&meta, Some("text/plain")).contains('\u{FFFD}'));
        assert_eq!(
            decode_body("é".as_bytes(), Some("text/html; charset=nope")),
            "é"
        );
    }

    #[test]
    fn visible_text_drops_page_furniture() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\
            <header>Top</header><nav>Menu</nav><p>One\n  two</p><script>x()</script>\
            <noscript>Enable JS</noscript><footer>Bottom</footer><p>three &amp; four</p></body></html>";
        assert_eq!(visible_text(html, 100), "T One two three & four");
        assert_eq!(visible_text(html, 5), "T One");
    }

    #[test]
    fn errors_read_well_and_know_what_is_transient() {
        assert_eq!(FetchError::Status(404).to_string(), "HTTP 404 Not Found");
        assert_eq!(FetchError::Status(599).to_string(), "HTTP 599");
        assert_eq!(
            FetchError::Timeout(Duration::from_millis(250)).to_string(),
            "timed out after 0.25 s"
        );
        assert_eq!(
            FetchError::Timeout(Duration::from_secs(5)).to_string(),
            "timed out after 5 s"
        );
        assert!(FetchError::Status(503).is_transient());
        assert!(FetchError::Status(429).is_transient());
        assert!(!FetchError::Status(404).is_transient());
        assert!(!FetchError::TooManyRedirects.is_transient());
    }

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("hé", 5), "hé");
    }
}
