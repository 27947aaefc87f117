//! `crawl4ai`: read web pages as clean markdown (spec §4.10).
//!
//! Each http(s) URL is fetched over HTTP (no JavaScript runs: pages that build their content in
//! the browser belong to the browser tool), decoded from its charset, reduced to its main
//! content (`<main>`, a lone `<article>`, else `<body>` without header and footer), cleaned of
//! scripts, styles, navigation, side panels, forms and overlays (cookie banners, modals, hidden
//! elements), and converted to markdown with `htmd`, links and image sources made absolute.
//! Paragraphs shorter than `word_count_threshold` words are left out (headings, lists, tables,
//! code and images are kept). Pages are fetched concurrently and reported in the order given.
//!
//! The output keeps OpenManus's layout:
//!
//! ```text
//! 🕷️ Crawl4AI Results Summary:
//! 📊 Total URLs: 2
//! ✅ Successful: 1
//! ❌ Failed: 1
//!
//! 1. https://example.com/
//!    ✅ Status: Success (HTTP 200)
//!    📄 Title: Example
//!    📝 Content: # Example ...the markdown...
//!    📊 Stats: 230 words, 12 links, 2 images
//!    ⏱️ Time: 0.12s
//!
//! 2. https://example.com/missing
//!    ❌ Status: Failed
//!    🚫 Error: HTTP 404 Not Found
//!
//! ```
//!
//! Differences from OpenManus: the content is the page's markdown up to
//! [`CrawlSettings::max_content_chars`], with `...` only when it was cut (OpenManus appended
//! `...` to the full markdown whenever it was longer than 300 characters, spec §13 W35); HTTP
//! errors (4xx, 5xx) count as failures; a line `⚠️ Invalid URLs skipped: …` follows the counts
//! when some URLs were rejected; and successful pages are cached per tool instance for
//! [`CrawlSettings::cache_ttl`] seconds unless `bypass_cache` is set.

mod markdown;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt as _;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use tracing::{info, warn};
use url::Url;

pub use markdown::{Extracted, count_words, extract, filter_short_blocks};

use crate::web_search::page::{
    DEFAULT_USER_AGENT, FetchError, PageFetcher, http_client, truncate_chars,
};
use agent_tools::{ToolContext, ToolError, ToolResult, TypedTool};

/// The tool name.
pub const CRAWL4AI: &str = "crawl4ai";

/// The error when no URL of a call is an http(s) URL with a host (OpenManus's message).
pub const NO_VALID_URLS: &str = "No valid URLs provided";

/// The shortest per-URL time limit, in seconds.
pub const MIN_TIMEOUT: u64 = 5;
/// The longest per-URL time limit, in seconds.
pub const MAX_TIMEOUT: u64 = 120;

const DESCRIPTION: &str = "Read one or more web pages and get each one back as clean markdown, \
ready to read: scripts, styles, navigation, headers, footers, side panels and pop-ups are \
removed, while headings, paragraphs, lists, tables, code and links are kept. For each URL it \
reports the HTTP status, the title, the markdown, word, link and image counts, and the time \
taken. Only http and https URLs are accepted. Pages are fetched without running JavaScript, so \
a page that builds its content with JavaScript, or that needs clicking, scrolling or logging \
in, should be opened with the browser tool instead.";

fn default_timeout() -> u64 {
    30
}

fn default_word_count_threshold() -> usize {
    10
}

/// Accepts `"url"` as well as `["url", ...]`.
fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(url) => vec![url],
        OneOrMany::Many(urls) => urls,
    })
}

/// Arguments of `crawl4ai`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct Crawl4aiArgs {
    /// The http or https URLs of the pages to read; one URL or several.
    #[serde(deserialize_with = "one_or_many")]
    #[schemars(length(min = 1))]
    pub urls: Vec<String>,
    /// Time limit for each page, in seconds (5 to 120). Default 30.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 5, max = 120))]
    pub timeout: u64,
    /// Set to true to fetch fresh copies instead of reusing pages read recently. Default false.
    #[serde(default)]
    pub bypass_cache: bool,
    /// Paragraphs with fewer words than this are left out of the markdown (headings, lists,
    /// tables and code are always kept). Default 10.
    #[serde(default = "default_word_count_threshold")]
    #[schemars(range(min = 1))]
    pub word_count_threshold: usize,
}

impl Crawl4aiArgs {
    /// Arguments for `urls` with every default.
    pub fn new(urls: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            urls: urls.into_iter().map(Into::into).collect(),
            timeout: default_timeout(),
            bypass_cache: false,
            word_count_threshold: default_word_count_threshold(),
        }
    }
}

/// Settings of `crawl4ai`. Every field has a default; a missing key keeps it. Durations are
/// seconds and may be fractional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CrawlSettings {
    /// The `User-Agent` header. Default: a desktop Chrome.
    pub user_agent: String,
    /// The most bytes read of a page (the rest is not downloaded). Default 5 MiB.
    pub max_page_bytes: usize,
    /// The most markdown characters shown per page; longer content is cut and ends with `...`.
    /// Default 30000.
    pub max_content_chars: usize,
    /// An upper bound on every page's time limit, in seconds, whatever the call asks. Default 120.
    pub timeout_cap: f64,
    /// How many pages are fetched at the same time. Default 4.
    pub concurrency: usize,
    /// How long a page read stays in the cache, in seconds (0: no cache). Default 900.
    pub cache_ttl: f64,
    /// How many pages the cache holds at most. Default 64.
    pub cache_capacity: usize,
}

impl Default for CrawlSettings {
    fn default() -> Self {
        Self {
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            max_page_bytes: 5 * 1024 * 1024,
            max_content_chars: 30_000,
            timeout_cap: 120.0,
            concurrency: 4,
            cache_ttl: 900.0,
            cache_capacity: 64,
        }
    }
}

/// A page that was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrawledPage {
    /// The URL it came from after redirects.
    pub url: String,
    /// Its HTTP status.
    pub status: u16,
    /// Its title.
    pub title: Option<String>,
    /// Its content as markdown (before the word-count filter).
    pub markdown: String,
    /// Distinct links in the content.
    pub links: usize,
    /// Images in the content.
    pub images: usize,
    /// Whether it is an HTML page (the word-count filter applies only to HTML).
    pub html: bool,
}

#[derive(Debug, Default)]
struct Cache {
    pages: HashMap<String, (Instant, Arc<CrawledPage>)>,
}

/// `crawl4ai`: reads web pages as markdown. See the [module documentation](self).
#[derive(Debug)]
pub struct Crawl4ai {
    settings: CrawlSettings,
    fetcher: PageFetcher,
    cache: Mutex<Cache>,
}

/// The outcome of one URL.
enum Outcome {
    Read(Arc<CrawledPage>),
    Failed(String),
}

impl Crawl4ai {
    /// The tool with `settings`, on a new HTTP client.
    ///
    /// # Errors
    ///
    /// The HTTP client could not be built (its TLS backend failed to initialise).
    pub fn new(settings: CrawlSettings) -> Result<Self, reqwest::Error> {
        let client = http_client(&settings.user_agent)?;
        Ok(Self::with_client(settings, client))
    }

    /// The tool with `settings` on `client` (for a custom proxy or TLS setup).
    #[must_use]
    pub fn with_client(settings: CrawlSettings, client: reqwest::Client) -> Self {
        Self {
            fetcher: PageFetcher::new(client, settings.max_page_bytes),
            settings,
            cache: Mutex::new(Cache::default()),
        }
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &CrawlSettings {
        &self.settings
    }

    /// Forgets every cached page.
    pub fn clear_cache(&self) {
        self.cache_lock().pages.clear();
    }

    fn cache_lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn cache_ttl(&self) -> Duration {
        Duration::try_from_secs_f64(self.settings.cache_ttl).unwrap_or(Duration::ZERO)
    }

    fn cached(&self, key: &str) -> Option<Arc<CrawledPage>> {
        let ttl = self.cache_ttl();
        let mut cache = self.cache_lock();
        match cache.pages.get(key) {
            Some((at, page)) if at.elapsed() < ttl => Some(page.clone()),
            Some(_) => {
                cache.pages.remove(key);
                None
            }
            None => None,
        }
    }

    fn remember(&self, key: String, page: Arc<CrawledPage>) {
        let ttl = self.cache_ttl();
        let capacity = self.settings.cache_capacity;
        if ttl.is_zero() || capacity == 0 {
            return;
        }
        let mut cache = self.cache_lock();
        cache.pages.retain(|_, (at, _)| at.elapsed() < ttl);
        while cache.pages.len() >= capacity {
            let oldest = cache
                .pages
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(key, _)| key.clone());
            match oldest {
                Some(oldest) => cache.pages.remove(&oldest),
                None => break,
            };
        }
        cache.pages.insert(key, (Instant::now(), page));
    }

    /// The per-URL time limit for a call that asks for `timeout` seconds: clamped to 5–120 s,
    /// then to [`CrawlSettings::timeout_cap`].
    #[must_use]
    pub fn effective_timeout(&self, timeout: u64) -> Duration {
        let asked = Duration::from_secs(timeout.clamp(MIN_TIMEOUT, MAX_TIMEOUT));
        match Duration::try_from_secs_f64(self.settings.timeout_cap) {
            Ok(cap) if !cap.is_zero() => asked.min(cap),
            _ => asked,
        }
    }

    /// Reads one page (from the cache unless `bypass_cache`).
    ///
    /// # Errors
    ///
    /// [`FetchError`] when the page could not be fetched.
    pub async fn crawl_url(
        &self,
        url: &Url,
        timeout: Duration,
        bypass_cache: bool,
    ) -> Result<Arc<CrawledPage>, FetchError> {
        let key = url.to_string();
        if !bypass_cache && let Some(page) = self.cached(&key) {
            info!(%url, "crawl4ai: served from the cache");
            return Ok(page);
        }
        let page = self.fetcher.fetch(url, timeout).await?;
        let final_url = page.url.clone();
        let status = page.status;
        let html = page.is_html();
        let extracted = if html {
            let html = page.text;
            let base = final_url.clone();
            tokio::task::spawn_blocking(move || extract(&html, &base))
                .await
                .map_err(|e| FetchError::Request(format!("the page could not be converted: {e}")))?
        } else {
            Extracted {
                title: None,
                markdown: page.text.trim().to_owned(),
                links: 0,
                images: 0,
            }
        };
        let crawled = Arc::new(CrawledPage {
            url: final_url.into(),
            status,
            title: extracted.title,
            markdown: extracted.markdown,
            links: extracted.links,
            images: extracted.images,
            html,
        });
        self.remember(key, crawled.clone());
        Ok(crawled)
    }

    async fn crawl_all(&self, urls: &[Url], args: &Crawl4aiArgs) -> Vec<(Outcome, Duration)> {
        let timeout = self.effective_timeout(args.timeout);
        let bypass_cache = args.bypass_cache;
        futures::stream::iter(urls.to_vec())
            .map(|url| async move {
                info!(%url, "crawl4ai: crawling");
                let started = Instant::now();
                let outcome = match self.crawl_url(&url, timeout, bypass_cache).await {
                    Ok(page) => Outcome::Read(page),
                    Err(error) => {
                        warn!(%url, %error, "crawl4ai: failed");
                        Outcome::Failed(error.to_string())
                    }
                };
                (outcome, started.elapsed())
            })
            .buffered(self.settings.concurrency.max(1))
            .collect()
            .await
    }

    fn render(
        &self,
        urls: &[Url],
        skipped: &[String],
        outcomes: &[(Outcome, Duration)],
        threshold: usize,
    ) -> String {
        let successful = outcomes
            .iter()
            .filter(|(o, _)| matches!(o, Outcome::Read(_)))
            .count();
        let mut lines = vec![
            "🕷️ Crawl4AI Results Summary:".to_owned(),
            format!("📊 Total URLs: {}", urls.len()),
            format!("✅ Successful: {successful}"),
            format!("❌ Failed: {}", outcomes.len() - successful),
        ];
        if !skipped.is_empty() {
            lines.push(format!("⚠️ Invalid URLs skipped: {}", skipped.join(", ")));
        }
        lines.push(String::new());
        for (i, (url, (outcome, elapsed))) in urls.iter().zip(outcomes).enumerate() {
            lines.push(format!("{}. {url}", i + 1));
            match outcome {
                Outcome::Read(page) => {
                    lines.push(format!("   ✅ Status: Success (HTTP {})", page.status));
                    if let Some(title) = &page.title {
                        lines.push(format!("   📄 Title: {title}"));
                    }
                    let markdown = if page.html {
                        filter_short_blocks(&page.markdown, threshold.max(1))
                    } else {
                        page.markdown.clone()
                    };
                    if !markdown.is_empty() {
                        let mut content =
                            truncate_chars(&markdown, self.settings.max_content_chars).to_owned();
                        if content.len() < markdown.len() {
                            content.push_str("...");
                        }
                        lines.push(format!("   📝 Content: {content}"));
                    }
                    lines.push(format!(
                        "   📊 Stats: {} words, {} links, {} images",
                        count_words(&markdown),
                        page.links,
                        page.images
                    ));
                    let mut time = String::new();
                    let _ = write!(time, "   ⏱️ Time: {:.2}s", elapsed.as_secs_f64());
                    lines.push(time);
                }
                Outcome::Failed(error) => {
                    lines.push("   ❌ Status: Failed".to_owned());
                    lines.push(format!("   🚫 Error: {error}"));
                }
            }
            lines.push(String::new());
        }
        lines.join("\n")
    }
}

/// `Some(url)` when `raw` is an http(s) URL with a host.
fn valid_url(raw: &str) -> Option<Url> {
    let url = Url::parse(raw.trim()).ok()?;
    let has_host = url.host_str().is_some_and(|h| !h.is_empty());
    (matches!(url.scheme(), "http" | "https") && has_host).then_some(url)
}

#[async_trait]
impl TypedTool for Crawl4ai {
    type Args = Crawl4aiArgs;

    fn name(&self) -> &str {
        CRAWL4AI
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    async fn call(&self, args: Crawl4aiArgs, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let mut urls = Vec::new();
        let mut skipped = Vec::new();
        for raw in &args.urls {
            match valid_url(raw) {
                Some(url) => urls.push(url),
                None => {
                    warn!(url = %raw, "crawl4ai: invalid URL skipped");
                    skipped.push(raw.clone());
                }
            }
        }
        if urls.is_empty() {
            return Ok(ToolResult::failure(NO_VALID_URLS));
        }
        let outcomes = tokio::select! {
            biased;
            () = ctx.cancellation.cancelled() => {
                return Err(ToolError::failure("The crawl was cancelled before it finished."));
            }
            outcomes = self.crawl_all(&urls, &args) => outcomes,
        };
        Ok(ToolResult::success(self.render(
            &urls,
            &skipped,
            &outcomes,
            args.word_count_threshold,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_with_a_host_are_valid() {
        assert!(valid_url("https://example.com/a").is_some());
        assert!(valid_url(" http://127.0.0.1:8080/ ").is_some());
        for bad in [
            "example.com",
            "ftp://example.com/f",
            "file:///etc/passwd",
            "https://",
            "",
            "mailto:a@b.c",
        ] {
            assert!(valid_url(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn timeouts_are_clamped_then_capped() {
        let tool = Crawl4ai::new(CrawlSettings::default()).unwrap();
        assert_eq!(tool.effective_timeout(1), Duration::from_secs(5));
        assert_eq!(tool.effective_timeout(30), Duration::from_secs(30));
        assert_eq!(tool.effective_timeout(999), Duration::from_secs(120));
        let capped = Crawl4ai::new(CrawlSettings {
            timeout_cap: 0.5,
            ..CrawlSettings::default()
        })
        .unwrap();
        assert_eq!(capped.effective_timeout(30), Duration::from_millis(500));
    }

    #[test]
    fn a_single_url_string_is_accepted() {
        let args: Crawl4aiArgs =
            serde_json::from_value(serde_json::json!({"urls": "https://example.com"})).unwrap();
        assert_eq!(args, Crawl4aiArgs::new(["https://example.com"]));
    }

    #[test]
    fn short_paragraphs_are_filtered_but_structure_stays() {
        let markdown = "# Title\n\nToo short.\n\nThis paragraph has comfortably more than ten words in it, so it stays.\n\n* a\n* b\n\n```\ncode\n\nmore code\n```\n\n| a | b |\n| - | - |\n\n1. one";
        assert_eq!(
            filter_short_blocks(markdown, 10),
            "# Title\n\nThis paragraph has comfortably more than ten words in it, so it stays.\n\n* a\n* b\n\n```\ncode\n\nmore code\n```\n\n| a | b |\n| - | - |\n\n1. one"
        );
        assert_eq!(
            filter_short_blocks(markdown, 1)
                .matches("Too short.")
                .count(),
            1
        );
    }
}
