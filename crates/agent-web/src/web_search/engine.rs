//! What a search engine is to `web_search`, and the helpers the engines share.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::RequestBuilder;
use scraper::{ElementRef, Html, Selector};
use thiserror::Error;
use url::Url;

use super::page::{FetchError, Page, PageFetcher};

/// One search as an engine receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// The query text.
    pub query: String,
    /// How many results are wanted.
    pub num_results: usize,
    /// Language code (`en`, `zh`), passed to engines that support one.
    pub lang: String,
    /// Country code (`us`, `cn`), passed to engines that support one.
    pub country: String,
}

/// One result as an engine found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchItem {
    /// The result's title (may be empty).
    pub title: String,
    /// The result's URL.
    pub url: String,
    /// The snippet shown under the title (may be empty).
    pub description: String,
}

impl SearchItem {
    /// A result.
    pub fn new(
        title: impl Into<String>,
        url: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            title: title.into(),
            url: url.into(),
            description: description.into(),
        }
    }
}

/// Why an engine produced no answer. The `Display` text is written for the model.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The request failed (time limit, connection, HTTP status, ...).
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The engine answered with a page that is not a result page (a captcha, a consent wall).
    #[error("blocked: {0}")]
    Blocked(String),
    /// The answer could not be understood (malformed JSON, an unexpected shape).
    #[error("unreadable answer: {0}")]
    Parse(String),
}

impl EngineError {
    /// Whether retrying the same engine may help (timeouts, connection failures, 429, 5xx).
    #[must_use]
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Fetch(error) => error.is_transient(),
            Self::Blocked(_) | Self::Parse(_) => false,
        }
    }
}

/// A search engine `web_search` can use. Implement it to add an engine
/// ([`WebSearch::with_engine`](super::WebSearch::with_engine)).
#[async_trait]
pub trait SearchEngine: Send + Sync {
    /// The engine's name in lower case, as written in `engine` / `fallback_engines`.
    fn name(&self) -> &str;

    /// Runs one search. An empty list means "nothing found" (the next engine is tried); an error
    /// is retried when it [is transient](EngineError::is_transient).
    ///
    /// # Errors
    ///
    /// [`EngineError`].
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, EngineError>;
}

/// What every built-in engine holds: where it lives and how it fetches.
#[derive(Debug, Clone)]
pub(crate) struct EngineHttp {
    pub(crate) base_url: String,
    pub(crate) fetcher: PageFetcher,
    pub(crate) timeout: Duration,
}

impl EngineHttp {
    /// `base_url` joined with `path` (the base may carry a path prefix of its own).
    pub(crate) fn url(&self, path: &str) -> Result<Url, EngineError> {
        let joined = format!(
            "{}/{}",
            self.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        );
        Url::parse(&joined)
            .map_err(|e| EngineError::Parse(format!("bad engine URL {joined:?}: {e}")))
    }

    /// A GET of `url` with an `Accept-Language` header for `query`'s language.
    pub(crate) fn get(&self, url: Url, query: &SearchQuery) -> RequestBuilder {
        self.fetcher
            .client()
            .get(url)
            .header(reqwest::header::ACCEPT_LANGUAGE, accept_language(query))
    }

    pub(crate) async fn send(&self, request: RequestBuilder) -> Result<Page, EngineError> {
        Ok(self.fetcher.send(request, self.timeout).await?)
    }
}

/// `en-US,en;q=0.9` for `en`/`us`.
pub(crate) fn accept_language(query: &SearchQuery) -> String {
    let lang = query.lang.trim().to_ascii_lowercase();
    let country = query.country.trim().to_ascii_uppercase();
    if lang.is_empty() {
        "en;q=0.9".to_owned()
    } else if country.is_empty() {
        lang
    } else {
        format!("{lang}-{country},{lang};q=0.9")
    }
}

/// Parses a CSS selector written in this crate (they are all valid; an error would be a bug,
/// reported as an unreadable answer instead of a panic).
pub(crate) fn selector(css: &str) -> Result<Selector, EngineError> {
    Selector::parse(css).map_err(|e| EngineError::Parse(format!("selector {css:?}: {e}")))
}

/// The text of an element with whitespace collapsed.
pub(crate) fn text_of(element: ElementRef<'_>) -> String {
    element
        .text()
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text of the first element matching any of `selectors` (tried in order) inside `scope`.
pub(crate) fn first_text(scope: ElementRef<'_>, selectors: &[&Selector]) -> String {
    selectors
        .iter()
        .find_map(|s| scope.select(s).map(text_of).find(|text| !text.is_empty()))
        .unwrap_or_default()
}

/// The text of an HTML fragment (API engines put `<strong>` and entities in snippets).
pub(crate) fn strip_tags(fragment: &str) -> String {
    if !fragment.contains(['<', '&']) {
        return fragment.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    text_of(Html::parse_fragment(fragment).root_element())
}

/// `href` resolved against `base`, kept only when it is an http(s) URL.
pub(crate) fn absolute(base: &Url, href: &str) -> Option<Url> {
    let url = base.join(href.trim()).ok()?;
    matches!(url.scheme(), "http" | "https").then_some(url)
}

/// The value of query parameter `name` of `url`.
pub(crate) fn query_param(url: &Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// Keeps the first `limit` items with distinct URLs.
pub(crate) fn dedup(items: Vec<SearchItem>, limit: usize) -> Vec<SearchItem> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(item.url.clone()))
        .take(limit)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_combines_lang_and_country() {
        let mut query = SearchQuery {
            query: "q".into(),
            num_results: 5,
            lang: "zh".into(),
            country: "cn".into(),
        };
        assert_eq!(accept_language(&query), "zh-CN,zh;q=0.9");
        query.country.clear();
        assert_eq!(accept_language(&query), "zh");
    }

    #[test]
    fn helpers_resolve_and_clean() {
        let base = Url::parse("https://example.com/search?q=x").unwrap();
        assert_eq!(
            absolute(&base, "/a b").unwrap().as_str(),
            "https://example.com/a%20b"
        );
        assert!(absolute(&base, "javascript:void(0)").is_none());
        assert_eq!(
            strip_tags("<strong>Rust</strong> &amp; more"),
            "Rust & more"
        );
        assert_eq!(strip_tags(" plain\n text "), "plain text");
        let items = vec![
            SearchItem::new("a", "u1", ""),
            SearchItem::new("b", "u1", ""),
            SearchItem::new("c", "u2", ""),
        ];
        assert_eq!(dedup(items, 5).len(), 2);
    }
}
