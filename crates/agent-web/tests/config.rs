//! `[search]` of `config.toml` to the `web_search` tool's settings
//! (`WebSearchSettings::from_settings`), and the tool built from it answering from loopback.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_config::Config;
use agent_core::CancellationToken;
use agent_testkit::web_fixtures::{FixtureEngine, WebFixtures};
use agent_web::web_search::{WebSearch, WebSearchArgs, WebSearchSettings};

const LLM: &str = "[llm]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n";

#[test]
fn the_search_section_configures_the_web_search_tool() {
    let config = Config::from_toml_str(&format!(
        "{LLM}[search]\nengine = \"Bing\"\nlang = \"zh\"\nretry_delay = 5\nmax_retries = 1\n\
         fallback_engines = [\"Baidu\"]\nbrave_api_key = \"k\"\nsearxng_url = \"http://127.0.0.1:7\"\n"
    ))
    .unwrap();
    let web = WebSearchSettings::from_settings(&config.search);
    assert_eq!(web.engine, "Bing");
    assert_eq!(web.lang, "zh");
    assert_eq!(web.country, "us", "a missing key keeps its default");
    assert!((web.retry_delay - 5.0).abs() < f64::EPSILON);
    assert_eq!(web.max_retries, 1);
    assert_eq!(web.fallback_engines, ["Baidu"]);
    assert_eq!(web.brave_api_key.as_deref(), Some("k"));
    assert_eq!(web.searxng_url.as_deref(), Some("http://127.0.0.1:7"));
    let defaults = Config::from_toml_str(LLM).unwrap();
    let web = WebSearchSettings::from_settings(&defaults.search);
    assert_eq!(
        web,
        WebSearchSettings::default(),
        "no [search] section: every default of the tool applies"
    );
}

#[test]
fn engine_base_urls_override_only_the_engines_they_name() {
    let config = Config::from_toml_str(&format!(
        "{LLM}[search.base_urls]\nduckduckgo = \"http://127.0.0.1:8/html\"\n"
    ))
    .unwrap();
    let web = WebSearchSettings::from_settings(&config.search);
    let defaults = WebSearchSettings::default();
    assert_eq!(web.base_urls.duckduckgo, "http://127.0.0.1:8/html");
    assert_eq!(web.base_urls.google, defaults.base_urls.google);
    assert_eq!(web.base_urls.bing, defaults.base_urls.bing);
    assert_eq!(web.base_urls.baidu, defaults.base_urls.baidu);
    assert_eq!(web.base_urls.brave, defaults.base_urls.brave);
}

#[tokio::test]
async fn a_tool_built_from_the_section_searches_the_configured_engine() {
    let web = WebFixtures::start().await.unwrap();
    let config = Config::from_toml_str(&format!(
        "{LLM}[search]\nengine = \"DuckDuckGo\"\nfallback_engines = []\nmax_retries = 0\n\
         lang = \"fr\"\n[search.base_urls]\nduckduckgo = \"{}\"\n",
        web.engine_url(FixtureEngine::DuckDuckGo)
    ))
    .unwrap();
    let search = WebSearch::from_settings(&config.search).unwrap();
    let response = search
        .search(&WebSearchArgs::new("async rust"), &CancellationToken::new())
        .await
        .unwrap();
    assert!(!response.results.is_empty(), "{response}");
    assert_eq!(
        response.metadata.language, "fr",
        "[search] lang reaches the search"
    );
    let asked = web.engine_requests(FixtureEngine::DuckDuckGo);
    assert_eq!(asked.len(), 1, "the configured engine answers first");
    assert!(
        web.requests()
            .iter()
            .all(|r| r.engine() == Some(FixtureEngine::DuckDuckGo)),
        "no other engine is asked"
    );
    assert!(
        response
            .to_string()
            .contains("Search results for 'async rust'"),
        "{response}"
    );
}
