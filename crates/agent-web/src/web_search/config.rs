//! `[search]` of `config.toml` (agent-config's [`SearchSettings`]) to the tool's
//! [`WebSearchSettings`]: the one place that conversion happens.

use agent_config::SearchSettings;

use super::WebSearch;
use super::settings::{EngineUrls, WebSearchSettings};

impl WebSearchSettings {
    /// The tool's settings for the `[search]` section: OpenManus's keys (`engine`,
    /// `fallback_engines`, `retry_delay`, `max_retries`, `lang`, `country`) and ours
    /// (`[search.base_urls]`, `brave_api_key`, `searxng_url`) carried over; every other setting
    /// (timeouts, backoffs, limits) and every engine URL the section does not set at the tool's
    /// defaults.
    #[must_use]
    pub fn from_settings(section: &SearchSettings) -> Self {
        let defaults = Self::default();
        let url =
            |set: &Option<String>, default: &String| set.clone().unwrap_or_else(|| default.clone());
        let urls = &section.base_urls;
        let base_urls = EngineUrls {
            google: url(&urls.google, &defaults.base_urls.google),
            baidu: url(&urls.baidu, &defaults.base_urls.baidu),
            duckduckgo: url(&urls.duckduckgo, &defaults.base_urls.duckduckgo),
            bing: url(&urls.bing, &defaults.base_urls.bing),
            brave: url(&urls.brave, &defaults.base_urls.brave),
        };
        Self {
            base_urls,
            brave_api_key: section.brave_api_key.clone(),
            searxng_url: section.searxng_url.clone(),
            engine: section.engine.clone(),
            fallback_engines: section.fallback_engines.clone(),
            // Whole seconds; exact up to 2^53 s, far beyond any delay a file means.
            #[allow(clippy::cast_precision_loss)]
            retry_delay: section.retry_delay as f64,
            max_retries: section.max_retries,
            lang: section.lang.clone(),
            country: section.country.clone(),
            ..defaults
        }
    }
}

impl WebSearch {
    /// The tool for the `[search]` section ([`WebSearchSettings::from_settings`]) on a new HTTP
    /// client.
    ///
    /// # Errors
    ///
    /// The HTTP client could not be built (its TLS backend failed to initialise).
    pub fn from_settings(section: &SearchSettings) -> Result<Self, reqwest::Error> {
        Self::new(WebSearchSettings::from_settings(section))
    }
}
