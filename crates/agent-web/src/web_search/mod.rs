//! `web_search`: search the web with engine fallback (spec §4.8), optionally reading each
//! result page.
//!
//! The engines are `google`, `baidu`, `duckduckgo` and `bing` (their HTML result pages, read
//! with a real HTML parser), plus the JSON APIs `brave` (with an API key) and `searxng` (a
//! SearXNG instance) when configured. Every engine's address is a setting
//! ([`EngineUrls`], [`WebSearchSettings::searxng_url`]), so tests serve them from loopback.
//!
//! How a call runs:
//!
//! 1. The engine order is [`WebSearchSettings::engine_order`]: the preferred engine, the
//!    configured fallbacks, then the other engines in the fixed order `google, baidu,
//!    duckduckgo, bing` (then `brave`, `searxng` when configured).
//! 2. Each engine is asked in turn. One that fails with a transient error (time limit,
//!    connection, 429, 5xx) is tried again after a backoff, up to
//!    [`WebSearchSettings::engine_attempts`] times; one that still fails, fails permanently
//!    (another 4xx, a captcha page, unreadable JSON) or finds nothing hands over to the next
//!    engine. (OpenManus aborted the whole search when an engine raised, spec §13 W30.) The first
//!    engine with results answers.
//! 3. When no engine found anything, the sweep is repeated after
//!    [`WebSearchSettings::retry_delay`] seconds, up to [`WebSearchSettings::max_retries`] more
//!    times; the wait ends early when the call is cancelled.
//! 4. With `fetch_content`, every result page is fetched concurrently (browser `User-Agent`,
//!    [`WebSearchSettings::fetch_timeout`], [`WebSearchSettings::max_page_bytes`]), decoded from
//!    its charset, stripped of script/style/header/footer/nav, and its text kept up to
//!    [`WebSearchSettings::max_content_chars`] characters.
//!
//! The output is [`SearchResponse`]'s layout. When every engine failed, the result is the error
//! `All search engines failed to return results after multiple retries.` followed by what each
//! engine did in the last sweep.
//!
//! `lang` and `country` reach every engine that has such a parameter (Google `hl`/`gl`, Bing
//! `setlang`/`cc`, DuckDuckGo `kl`, Brave `search_lang`/`country`, SearXNG `language`) and all
//! of them as `Accept-Language`.

mod api;
mod baidu;
mod bing;
mod config;
mod duckduckgo;
mod engine;
mod google;
pub mod page;
mod response;
mod settings;

use std::fmt;
use std::sync::Arc;

use agent_core::CancellationToken;
use async_trait::async_trait;
use futures::StreamExt as _;
use schemars::JsonSchema;
use serde::Deserialize;
use tracing::{Instrument as _, debug, info, info_span, warn};
use url::Url;

pub use api::{Brave, Searxng};
pub use baidu::Baidu;
pub use bing::Bing;
pub use duckduckgo::DuckDuckGo;
pub use engine::{EngineError, SearchEngine, SearchItem, SearchQuery};
pub use google::Google;
pub use response::{CONTENT_PREVIEW_CHARS, SearchMetadata, SearchResponse, SearchResult};
pub use settings::{EngineUrls, HTML_ENGINES, WebSearchSettings};

use self::engine::EngineHttp;
use self::page::{PageFetcher, http_client, visible_text};
use self::settings::secs;
use agent_tools::{ToolContext, ToolError, ToolResult, TypedTool};

/// The tool name.
pub const WEB_SEARCH: &str = "web_search";

/// The first line of the error when no engine returned results (OpenManus's message).
pub const ALL_FAILED: &str = "All search engines failed to return results after multiple retries.";

/// The most results one call returns.
pub const MAX_NUM_RESULTS: usize = 50;

/// How many result pages `fetch_content` fetches at the same time.
const FETCH_CONCURRENCY: usize = 8;

const DESCRIPTION: &str = "Search the web for up-to-date information. Returns the title, URL and \
snippet of each result, and with `fetch_content` also the beginning of each result page's text. \
If a search engine fails or finds nothing, the next engine is used automatically.";

fn default_num_results() -> usize {
    5
}

/// Arguments of `web_search`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct WebSearchArgs {
    /// What to search for.
    pub query: String,
    /// How many results to return (1 to 50). Default 5.
    #[serde(default = "default_num_results")]
    #[schemars(range(min = 1, max = 50))]
    pub num_results: usize,
    /// Language code for the results, such as `en` or `zh`. Default: the configured language
    /// (`en` unless configured otherwise).
    #[serde(default)]
    pub lang: Option<String>,
    /// Country code for the results, such as `us` or `cn`. Default: the configured country (`us`
    /// unless configured otherwise).
    #[serde(default)]
    pub country: Option<String>,
    /// Set to true to also download every result page and include the start of its text.
    /// Default false.
    #[serde(default)]
    pub fetch_content: bool,
}

impl WebSearchArgs {
    /// Arguments for `query` with every default.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            num_results: default_num_results(),
            lang: None,
            country: None,
            fetch_content: false,
        }
    }
}

/// What one engine did in a sweep that found nothing.
#[derive(Debug)]
#[non_exhaustive]
pub enum EngineOutcome {
    /// It answered with no results.
    NoResults,
    /// It failed, after `attempts` attempts.
    Failed {
        /// The last error.
        error: EngineError,
        /// How many times it was asked.
        attempts: u32,
    },
}

/// An engine that produced no results, and why.
#[derive(Debug)]
pub struct EngineFailure {
    /// The engine's name.
    pub engine: String,
    /// What it did.
    pub outcome: EngineOutcome,
}

impl fmt::Display for EngineFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            EngineOutcome::NoResults => write!(f, "{}: no results", self.engine),
            EngineOutcome::Failed { error, attempts } => {
                let plural = if *attempts == 1 { "" } else { "s" };
                write!(f, "{}: {error} ({attempts} attempt{plural})", self.engine)
            }
        }
    }
}

/// Why a search returned nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// No engine returned results in any sweep. `Display` is [`ALL_FAILED`], then one line per
    /// engine of the last sweep.
    #[error("{}", all_failed(.failures, *.sweeps))]
    AllFailed {
        /// What each engine did in the last sweep, in the order they were tried.
        failures: Vec<EngineFailure>,
        /// How many sweeps ran.
        sweeps: u32,
    },
    /// The cancellation token fired.
    #[error("the search was cancelled")]
    Cancelled,
}

fn all_failed(failures: &[EngineFailure], sweeps: u32) -> String {
    let mut text = ALL_FAILED.to_owned();
    if sweeps > 1 {
        text.push_str(&format!(
            "\nWhat each engine did in the last of {sweeps} sweeps:"
        ));
    } else {
        text.push_str("\nWhat each engine did:");
    }
    for failure in failures {
        text.push_str(&format!("\n- {failure}"));
    }
    text
}

/// `web_search`: web search with engine fallback. See the [module documentation](self).
///
/// ```no_run
/// use agent_web::web_search::{WebSearch, WebSearchArgs, WebSearchSettings};
/// use agent_core::CancellationToken;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let search = WebSearch::new(WebSearchSettings::default())?;
/// let response = search
///     .search(&WebSearchArgs::new("rust async book"), &CancellationToken::new())
///     .await?;
/// println!("{response}");
/// # Ok(()) }
/// ```
pub struct WebSearch {
    settings: WebSearchSettings,
    engines: Vec<Arc<dyn SearchEngine>>,
    fetcher: PageFetcher,
}

impl fmt::Debug for WebSearch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSearch")
            .field("settings", &self.settings)
            .field(
                "engines",
                &self.engines.iter().map(|e| e.name()).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl WebSearch {
    /// The tool with `settings`, on a new HTTP client ([`page::http_client`]).
    ///
    /// # Errors
    ///
    /// The HTTP client could not be built (its TLS backend failed to initialise).
    pub fn new(settings: WebSearchSettings) -> Result<Self, reqwest::Error> {
        let client = http_client(&settings.user_agent)?;
        Ok(Self::with_client(settings, client))
    }

    /// The tool with `settings` on `client` (for a custom proxy or TLS setup). The client should
    /// follow redirects; the `User-Agent` is the client's.
    #[must_use]
    pub fn with_client(settings: WebSearchSettings, client: reqwest::Client) -> Self {
        let fetcher = PageFetcher::new(client, settings.max_page_bytes);
        let http = |base_url: &str| EngineHttp {
            base_url: base_url.to_owned(),
            fetcher: fetcher.clone(),
            timeout: secs(settings.timeout),
        };
        let urls = &settings.base_urls;
        let mut engines: Vec<Arc<dyn SearchEngine>> = vec![
            Arc::new(Google::new(http(&urls.google))),
            Arc::new(Baidu::new(http(&urls.baidu))),
            Arc::new(DuckDuckGo::new(http(&urls.duckduckgo))),
            Arc::new(Bing::new(http(&urls.bing))),
        ];
        if let Some(key) = settings
            .brave_api_key
            .as_deref()
            .filter(|k| !k.trim().is_empty())
        {
            engines.push(Arc::new(Brave::new(
                http(&urls.brave),
                key.trim().to_owned(),
            )));
        }
        if let Some(url) = settings
            .searxng_url
            .as_deref()
            .filter(|u| !u.trim().is_empty())
        {
            engines.push(Arc::new(Searxng::new(http(url.trim()))));
        }
        Self {
            settings,
            engines,
            fetcher,
        }
    }

    /// Adds `engine`, or replaces the engine of the same name. A new engine comes after the
    /// others in the fixed order; name it in `engine` or `fallback_engines` to move it up.
    #[must_use]
    pub fn with_engine(mut self, engine: impl SearchEngine + 'static) -> Self {
        let engine: Arc<dyn SearchEngine> = Arc::new(engine);
        match self.engines.iter_mut().find(|e| e.name() == engine.name()) {
            Some(slot) => *slot = engine,
            None => self.engines.push(engine),
        }
        self
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &WebSearchSettings {
        &self.settings
    }

    /// The names of the engines, in the order a search tries them.
    #[must_use]
    pub fn engine_order(&self) -> Vec<String> {
        let names: Vec<&str> = self.engines.iter().map(|e| e.name()).collect();
        self.settings.engine_order(&names)
    }

    /// Searches (see the [module documentation](self)); `cancellation` ends the search early.
    ///
    /// # Errors
    ///
    /// [`SearchError::AllFailed`] when no engine returned results, [`SearchError::Cancelled`].
    pub async fn search(
        &self,
        args: &WebSearchArgs,
        cancellation: &CancellationToken,
    ) -> Result<SearchResponse, SearchError> {
        let span = info_span!("web_search", query = %args.query);
        tokio::select! {
            biased;
            () = cancellation.cancelled() => Err(SearchError::Cancelled),
            result = self.search_uncancelled(args).instrument(span) => result,
        }
    }

    async fn search_uncancelled(
        &self,
        args: &WebSearchArgs,
    ) -> Result<SearchResponse, SearchError> {
        let pick = |given: &Option<String>, configured: &str| {
            given
                .as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .unwrap_or(configured)
                .to_owned()
        };
        let query = SearchQuery {
            query: args.query.clone(),
            num_results: args.num_results.clamp(1, MAX_NUM_RESULTS),
            lang: pick(&args.lang, &self.settings.lang),
            country: pick(&args.country, &self.settings.country),
        };
        let order: Vec<Arc<dyn SearchEngine>> = self
            .engine_order()
            .iter()
            .filter_map(|name| self.engines.iter().find(|e| e.name() == name).cloned())
            .collect();
        let mut sweeps = 1;
        let (source, items) = loop {
            match self.sweep(&order, &query).await {
                Ok(found) => break found,
                Err(failures) if sweeps > self.settings.max_retries => {
                    return Err(SearchError::AllFailed { failures, sweeps });
                }
                Err(_) => {
                    let delay = secs(self.settings.retry_delay);
                    warn!(
                        delay_secs = delay.as_secs_f64(),
                        retry = sweeps,
                        max_retries = self.settings.max_retries,
                        "no search engine returned results; sweeping again after a delay"
                    );
                    tokio::time::sleep(delay).await;
                    sweeps += 1;
                }
            }
        };
        let mut results: Vec<SearchResult> = items
            .into_iter()
            .take(query.num_results)
            .enumerate()
            .map(|(i, item)| SearchResult {
                position: i + 1,
                title: if item.title.is_empty() {
                    format!("Result {}", i + 1)
                } else {
                    item.title
                },
                url: item.url,
                description: item.description,
                source: source.clone(),
                raw_content: None,
            })
            .collect();
        if args.fetch_content {
            let urls: Vec<String> = results.iter().map(|r| r.url.clone()).collect();
            let contents: Vec<Option<String>> = futures::stream::iter(urls)
                .map(|url| async move { self.fetch_text(&url).await })
                .buffered(FETCH_CONCURRENCY)
                .collect()
                .await;
            for (result, content) in results.iter_mut().zip(contents) {
                result.raw_content = content;
            }
        }
        Ok(SearchResponse {
            query: args.query.clone(),
            metadata: SearchMetadata {
                total_results: results.len(),
                language: query.lang,
                country: query.country,
            },
            results,
        })
    }

    /// One pass over the engines: the first engine with results, or what each one did.
    async fn sweep(
        &self,
        order: &[Arc<dyn SearchEngine>],
        query: &SearchQuery,
    ) -> Result<(String, Vec<SearchItem>), Vec<EngineFailure>> {
        let mut failures = Vec::new();
        for engine in order {
            let name = engine.name().to_owned();
            info!(engine = %name, "searching");
            let outcome = match self.ask(engine.as_ref(), query).await {
                Ok(items) if !items.is_empty() => {
                    if !failures.is_empty() {
                        info!(engine = %name, "search succeeded after other engines did not");
                    }
                    return Ok((name, items));
                }
                Ok(_) => EngineOutcome::NoResults,
                Err((error, attempts)) => EngineOutcome::Failed { error, attempts },
            };
            warn!(engine = %name, outcome = ?outcome, "search engine gave no results");
            failures.push(EngineFailure {
                engine: name,
                outcome,
            });
        }
        Err(failures)
    }

    /// Asks one engine, retrying transient errors with backoff.
    async fn ask(
        &self,
        engine: &dyn SearchEngine,
        query: &SearchQuery,
    ) -> Result<Vec<SearchItem>, (EngineError, u32)> {
        let attempts = self.settings.engine_attempts.max(1);
        let mut attempt = 1;
        loop {
            match engine.search(query).await {
                Ok(items) => return Ok(items),
                Err(error) if error.is_transient() && attempt < attempts => {
                    attempt += 1;
                    let wait = self.settings.engine_backoff_before(attempt);
                    debug!(engine = engine.name(), %error, attempt, wait_secs = wait.as_secs_f64(), "retrying search engine");
                    tokio::time::sleep(wait).await;
                }
                Err(error) => return Err((error, attempt)),
            }
        }
    }

    /// The text of the page at `url`, or `None` when it cannot be had.
    async fn fetch_text(&self, url: &str) -> Option<String> {
        let parsed = Url::parse(url).ok()?;
        let page = match self
            .fetcher
            .fetch(&parsed, secs(self.settings.fetch_timeout))
            .await
        {
            Ok(page) => page,
            Err(error) => {
                warn!(%url, %error, "could not fetch result page");
                return None;
            }
        };
        let max_chars = self.settings.max_content_chars;
        let text = if page.is_html() {
            let html = page.text;
            tokio::task::spawn_blocking(move || visible_text(&html, max_chars))
                .await
                .ok()?
        } else {
            let text = page.text.split_whitespace().collect::<Vec<_>>().join(" ");
            page::truncate_chars(&text, max_chars).to_owned()
        };
        (!text.is_empty()).then_some(text)
    }
}

#[async_trait]
impl TypedTool for WebSearch {
    type Args = WebSearchArgs;

    fn name(&self) -> &str {
        WEB_SEARCH
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    async fn call(&self, args: WebSearchArgs, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        if args.query.trim().is_empty() {
            return Err(ToolError::failure("The search query is empty."));
        }
        match self.search(&args, &ctx.cancellation).await {
            Ok(response) => Ok(ToolResult::success(response.to_string())),
            Err(error @ SearchError::AllFailed { .. }) => {
                Ok(ToolResult::failure(error.to_string()))
            }
            Err(SearchError::Cancelled) => Err(ToolError::failure(
                "The search was cancelled before it finished.",
            )),
        }
    }
}
