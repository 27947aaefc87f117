//! `WebSearchSettings`: OpenManus's `[search]` keys and ours, each with a default.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::page::DEFAULT_USER_AGENT;

/// The built-in HTML engines in their fixed fallback order (spec §4.8).
pub const HTML_ENGINES: [&str; 4] = ["google", "baidu", "duckduckgo", "bing"];

/// Settings of `web_search`: OpenManus's `[search]` section plus where each engine lives, API
/// keys and limits.
///
/// Every field has a default and `#[serde(default)]` applies to the whole struct, so a missing
/// key keeps its default and an empty or missing section gives [`WebSearchSettings::default`]
/// (OpenManus instead dropped every value when the section was missing). Durations are seconds
/// and may be fractional (`retry_delay = 0.5`).
///
/// ```
/// use agent_web::web_search::WebSearchSettings;
///
/// let settings: WebSearchSettings =
///     serde_json::from_value(serde_json::json!({"engine": "Bing", "retry_delay": 5})).unwrap();
/// assert_eq!(settings.engine, "Bing");
/// assert_eq!(settings.max_retries, 3, "a missing key keeps its default");
/// assert_eq!(settings.fallback_engines, ["DuckDuckGo", "Baidu", "Bing"]);
/// ```
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebSearchSettings {
    /// The preferred engine, case-insensitive: `google`, `baidu`, `duckduckgo`, `bing`, or
    /// `brave` / `searxng` when configured. Default `Google`.
    pub engine: String,
    /// Engines to try next, in order (unknown names are skipped). Default
    /// `["DuckDuckGo", "Baidu", "Bing"]`.
    pub fallback_engines: Vec<String>,
    /// Seconds to wait before sweeping all engines again after none returned results. Default 60.
    pub retry_delay: f64,
    /// How many extra sweeps after the first one. Default 3.
    pub max_retries: u32,
    /// Language code used when a call gives none. Default `en`.
    pub lang: String,
    /// Country code used when a call gives none. Default `us`.
    pub country: String,

    /// Where each engine lives.
    pub base_urls: EngineUrls,
    /// A Brave Search API key; the `brave` engine is available only when it is set.
    pub brave_api_key: Option<String>,
    /// The URL of a SearXNG instance (with the JSON format enabled); the `searxng` engine is
    /// available only when it is set.
    pub searxng_url: Option<String>,

    /// Attempts per engine in one sweep when it fails with a transient error (timeouts,
    /// connection failures, 429, 5xx). Default 3.
    pub engine_attempts: u32,
    /// Seconds before the second attempt on an engine; the wait doubles for every further
    /// attempt. Default 1.
    pub engine_backoff: f64,
    /// The longest wait between two attempts on an engine, in seconds. Default 10.
    pub engine_backoff_max: f64,
    /// Time limit of one request to an engine, in seconds. Default 10.
    pub timeout: f64,
    /// Time limit of fetching one result page for `fetch_content`, in seconds. Default 10.
    pub fetch_timeout: f64,
    /// The most bytes read from any response (the rest is not downloaded). Default 2 MiB.
    pub max_page_bytes: usize,
    /// Characters of page text kept per result by `fetch_content`. Default 10000.
    pub max_content_chars: usize,
    /// The `User-Agent` header of every request. Default: a desktop Chrome.
    pub user_agent: String,
}

impl Default for WebSearchSettings {
    fn default() -> Self {
        Self {
            engine: "Google".to_owned(),
            fallback_engines: vec![
                "DuckDuckGo".to_owned(),
                "Baidu".to_owned(),
                "Bing".to_owned(),
            ],
            retry_delay: 60.0,
            max_retries: 3,
            lang: "en".to_owned(),
            country: "us".to_owned(),
            base_urls: EngineUrls::default(),
            brave_api_key: None,
            searxng_url: None,
            engine_attempts: 3,
            engine_backoff: 1.0,
            engine_backoff_max: 10.0,
            timeout: 10.0,
            fetch_timeout: 10.0,
            max_page_bytes: 2 * 1024 * 1024,
            max_content_chars: 10_000,
            user_agent: DEFAULT_USER_AGENT.to_owned(),
        }
    }
}

impl fmt::Debug for WebSearchSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSearchSettings")
            .field("engine", &self.engine)
            .field("fallback_engines", &self.fallback_engines)
            .field("retry_delay", &self.retry_delay)
            .field("max_retries", &self.max_retries)
            .field("lang", &self.lang)
            .field("country", &self.country)
            .field("base_urls", &self.base_urls)
            .field(
                "brave_api_key",
                &self.brave_api_key.as_ref().map(|_| "<redacted>"),
            )
            .field("searxng_url", &self.searxng_url)
            .field("engine_attempts", &self.engine_attempts)
            .field("engine_backoff", &self.engine_backoff)
            .field("engine_backoff_max", &self.engine_backoff_max)
            .field("timeout", &self.timeout)
            .field("fetch_timeout", &self.fetch_timeout)
            .field("max_page_bytes", &self.max_page_bytes)
            .field("max_content_chars", &self.max_content_chars)
            .field("user_agent", &self.user_agent)
            .finish()
    }
}

/// A duration from a number of seconds; negative, NaN or absurd values give zero.
#[must_use]
pub fn secs(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO)
}

impl WebSearchSettings {
    /// The engine order (spec §4.8) over the engines in `available`, given in their fixed
    /// order: the preferred engine (when available), then the configured fallbacks that are
    /// available (no duplicates), then every other available engine in the order of
    /// `available`. Names are compared in lower case.
    ///
    /// ```
    /// use agent_web::web_search::WebSearchSettings;
    ///
    /// let settings = WebSearchSettings {
    ///     engine: "Bing".into(),
    ///     fallback_engines: vec!["nope".into(), "Baidu".into(), "bing".into()],
    ///     ..Default::default()
    /// };
    /// assert_eq!(
    ///     settings.engine_order(&["google", "baidu", "duckduckgo", "bing"]),
    ///     ["bing", "baidu", "google", "duckduckgo"]
    /// );
    /// ```
    #[must_use]
    pub fn engine_order(&self, available: &[&str]) -> Vec<String> {
        let known = |name: &str| available.iter().any(|a| a.eq_ignore_ascii_case(name));
        let mut order: Vec<String> = Vec::new();
        let wanted = std::iter::once(&self.engine)
            .chain(&self.fallback_engines)
            .map(|name| name.trim().to_ascii_lowercase())
            .chain(available.iter().map(|a| a.to_ascii_lowercase()));
        for name in wanted {
            if known(&name) && !order.contains(&name) {
                order.push(name);
            }
        }
        order
    }

    /// The wait before attempt `attempt` (2, 3, ...) on one engine: `engine_backoff` doubled for
    /// each attempt after the second, capped at `engine_backoff_max`.
    #[must_use]
    pub fn engine_backoff_before(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(2).min(30);
        let wait = self.engine_backoff * f64::from(1_u32 << doublings);
        secs(wait.min(self.engine_backoff_max))
    }
}

/// Where each engine lives: a scheme, host and optional path prefix, without a trailing slash.
/// Point them at a mirror, a proxy, or a local fixture server in tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EngineUrls {
    /// Default `https://www.google.com` (requests go to `/search`).
    pub google: String,
    /// Default `https://www.baidu.com` (requests go to `/s`).
    pub baidu: String,
    /// Default `https://html.duckduckgo.com` (requests go to `/html/`).
    pub duckduckgo: String,
    /// Default `https://www.bing.com` (requests go to `/search`).
    pub bing: String,
    /// Default `https://api.search.brave.com` (requests go to `/res/v1/web/search`).
    pub brave: String,
}

impl Default for EngineUrls {
    fn default() -> Self {
        Self {
            google: "https://www.google.com".to_owned(),
            baidu: "https://www.baidu.com".to_owned(),
            duckduckgo: "https://html.duckduckgo.com".to_owned(),
            bing: "https://www.bing.com".to_owned(),
            brave: "https://api.search.brave.com".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_order_follows_the_default_fallbacks() {
        let settings = WebSearchSettings::default();
        assert_eq!(
            settings.engine_order(&HTML_ENGINES),
            ["google", "duckduckgo", "baidu", "bing"]
        );
        let none = WebSearchSettings {
            fallback_engines: Vec::new(),
            ..WebSearchSettings::default()
        };
        assert_eq!(none.engine_order(&HTML_ENGINES), HTML_ENGINES);
        let unknown_preferred = WebSearchSettings {
            engine: "Yahoo".into(),
            fallback_engines: vec!["BING".into(), "searxng".into()],
            ..WebSearchSettings::default()
        };
        assert_eq!(
            unknown_preferred.engine_order(&["google", "baidu", "duckduckgo", "bing", "searxng"]),
            ["bing", "searxng", "google", "baidu", "duckduckgo"]
        );
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let settings = WebSearchSettings::default();
        assert_eq!(settings.engine_backoff_before(2), Duration::from_secs(1));
        assert_eq!(settings.engine_backoff_before(3), Duration::from_secs(2));
        assert_eq!(settings.engine_backoff_before(5), Duration::from_secs(8));
        assert_eq!(settings.engine_backoff_before(6), Duration::from_secs(10));
        assert_eq!(settings.engine_backoff_before(60), Duration::from_secs(10));
        assert_eq!(secs(-1.0), Duration::ZERO);
        assert_eq!(secs(f64::NAN), Duration::ZERO);
    }

    #[test]
    fn a_missing_section_or_key_keeps_the_defaults() {
        let empty: WebSearchSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, WebSearchSettings::default());
        let partial: WebSearchSettings =
            serde_json::from_str(r#"{"lang": "zh", "base_urls": {"bing": "http://127.0.0.1:1"}}"#)
                .unwrap();
        assert_eq!(partial.lang, "zh");
        assert_eq!(partial.country, "us");
        assert_eq!(partial.base_urls.bing, "http://127.0.0.1:1");
        assert_eq!(partial.base_urls.google, "https://www.google.com");
        let debug = format!(
            "{:?}",
            WebSearchSettings {
                brave_api_key: Some("secret".into()),
                ..WebSearchSettings::default()
            }
        );
        assert!(!debug.contains("secret"), "{debug}");
    }
}
