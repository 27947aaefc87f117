//! Search engines with a JSON API: Brave Search (with an API key) and SearXNG (a self-hosted
//! metasearch instance).

use async_trait::async_trait;
use serde::Deserialize;

use super::engine::{
    EngineError, EngineHttp, SearchEngine, SearchItem, SearchQuery, dedup, strip_tags,
};
use super::page::Page;

/// The Brave Search API, `{base}/res/v1/web/search?q=…&count=…&search_lang={lang}&country={COUNTRY}`
/// with the key in `X-Subscription-Token`. Available only when a key is configured.
#[derive(Clone)]
pub struct Brave {
    http: EngineHttp,
    api_key: String,
}

impl std::fmt::Debug for Brave {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Brave")
            .field("http", &self.http)
            .field("api_key", &"<redacted>")
            .finish()
    }
}

impl Brave {
    /// The engine's name.
    pub const NAME: &'static str = "brave";

    /// Brave accepts at most this many results per request.
    const MAX_COUNT: usize = 20;

    pub(crate) fn new(http: EngineHttp, api_key: String) -> Self {
        Self { http, api_key }
    }
}

#[derive(Deserialize)]
struct BraveResponse {
    #[serde(default)]
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<ApiResult>,
}

/// A result of either API: Brave calls the snippet `description`, SearXNG `content`.
#[derive(Deserialize)]
struct ApiResult {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default, alias = "content")]
    description: Option<String>,
}

fn items(results: Vec<ApiResult>, limit: usize) -> Vec<SearchItem> {
    let items = results
        .into_iter()
        .filter(|r| r.url.starts_with("http://") || r.url.starts_with("https://"))
        .map(|r| {
            SearchItem::new(
                strip_tags(&r.title),
                r.url,
                strip_tags(r.description.as_deref().unwrap_or_default()),
            )
        })
        .collect();
    dedup(items, limit)
}

fn json<T: for<'de> Deserialize<'de>>(page: &Page) -> Result<T, EngineError> {
    serde_json::from_str(&page.text)
        .map_err(|e| EngineError::Parse(format!("not the expected JSON: {e}")))
}

#[async_trait]
impl SearchEngine for Brave {
    fn name(&self) -> &str {
        Self::NAME
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, EngineError> {
        let mut url = self.http.url("res/v1/web/search")?;
        {
            let mut pairs = url.query_pairs_mut();
            pairs.append_pair("q", &query.query).append_pair(
                "count",
                &query.num_results.clamp(1, Self::MAX_COUNT).to_string(),
            );
            if !query.lang.trim().is_empty() {
                pairs.append_pair("search_lang", &query.lang.trim().to_ascii_lowercase());
            }
            if !query.country.trim().is_empty() {
                pairs.append_pair("country", &query.country.trim().to_ascii_uppercase());
            }
        }
        let request = self
            .http
            .get(url, query)
            .header(reqwest::header::ACCEPT, "application/json")
            .header("X-Subscription-Token", &self.api_key);
        let page = self.http.send(request).await?;
        let response: BraveResponse = json(&page)?;
        Ok(items(
            response.web.map(|w| w.results).unwrap_or_default(),
            query.num_results,
        ))
    }
}

/// A SearXNG instance's JSON API, `{base}/search?q=…&format=json&language={lang}-{COUNTRY}`.
/// Available only when its URL is configured (the instance must allow the `json` format).
#[derive(Debug, Clone)]
pub struct Searxng {
    http: EngineHttp,
}

impl Searxng {
    /// The engine's name.
    pub const NAME: &'static str = "searxng";

    pub(crate) fn new(http: EngineHttp) -> Self {
        Self { http }
    }
}

#[derive(Deserialize)]
struct SearxngResponse {
    #[serde(default)]
    results: Vec<ApiResult>,
}

#[async_trait]
impl SearchEngine for Searxng {
    fn name(&self) -> &str {
        Self::NAME
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, EngineError> {
        let mut url = self.http.url("search")?;
        {
            let mut pairs = url.query_pairs_mut();
            pairs
                .append_pair("q", &query.query)
                .append_pair("format", "json")
                .append_pair("pageno", "1");
            let (lang, country) = (query.lang.trim(), query.country.trim());
            if !lang.is_empty() {
                let language = if country.is_empty() {
                    lang.to_ascii_lowercase()
                } else {
                    format!(
                        "{}-{}",
                        lang.to_ascii_lowercase(),
                        country.to_ascii_uppercase()
                    )
                };
                pairs.append_pair("language", &language);
            }
        }
        let request = self
            .http
            .get(url, query)
            .header(reqwest::header::ACCEPT, "application/json");
        let page = self.http.send(request).await?;
        let response: SearxngResponse = json(&page)?;
        Ok(items(response.results, query.num_results))
    }
}
