//! `web_search` against the fixture engines and pages of `agent_testkit::web_fixtures`, all on
//! loopback: each engine's parsing, the engine order, engines that fail or find nothing, the
//! whole-sweep retry and its cancellation, `fetch_content`, and the exact output layout.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use agent_core::CancellationToken;
use agent_testkit::web_fixtures::{
    BRAVE_API_KEY, CHINESE_TEXT, CYRILLIC_TEXT, EngineBehaviour, FixtureEngine, HUGE_PAGE_BYTES,
    WebFixtures, paths,
};
use agent_tools::{Tool, ToolCollection, ToolContext, ToolResult};
use agent_web::web_search::{
    ALL_FAILED, EngineError, EngineUrls, SearchEngine, SearchError, SearchItem, SearchQuery,
    SearchResponse, WebSearch, WebSearchArgs, WebSearchSettings,
};
use async_trait::async_trait;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

/// Settings pointing every engine at the fixtures, with millisecond backoffs and no sweep retry.
fn settings(web: &WebFixtures) -> WebSearchSettings {
    WebSearchSettings {
        base_urls: EngineUrls {
            google: web.engine_url(FixtureEngine::Google),
            baidu: web.engine_url(FixtureEngine::Baidu),
            duckduckgo: web.engine_url(FixtureEngine::DuckDuckGo),
            bing: web.engine_url(FixtureEngine::Bing),
            brave: web.engine_url(FixtureEngine::Brave),
        },
        brave_api_key: Some(BRAVE_API_KEY.into()),
        searxng_url: Some(web.engine_url(FixtureEngine::Searxng)),
        engine_backoff: 0.001,
        engine_backoff_max: 0.002,
        retry_delay: 0.0,
        max_retries: 0,
        timeout: 5.0,
        fetch_timeout: 5.0,
        ..WebSearchSettings::default()
    }
}

fn preferring(web: &WebFixtures, engine: &str) -> WebSearch {
    WebSearch::new(WebSearchSettings {
        engine: engine.into(),
        ..settings(web)
    })
    .unwrap()
}

async fn search(tool: &WebSearch, args: WebSearchArgs) -> Result<SearchResponse, SearchError> {
    tokio::time::timeout(LIMIT, tool.search(&args, &CancellationToken::new()))
        .await
        .expect("the search finished in time")
}

fn args(query: &str, num_results: usize) -> WebSearchArgs {
    WebSearchArgs {
        num_results,
        ..WebSearchArgs::new(query)
    }
}

/// The engines searched, in order (one entry per search request; Baidu's redirector is not a
/// search).
fn engines_asked(web: &WebFixtures) -> Vec<&'static str> {
    web.requests()
        .iter()
        .filter(|r| !r.path.ends_with("/link"))
        .filter_map(|r| r.engine())
        .map(FixtureEngine::name)
        .collect()
}

#[test]
fn schema_snapshot() {
    let tool = WebSearch::new(WebSearchSettings::default()).unwrap();
    assert_eq!(
        serde_json::to_value(tool.to_param()).unwrap(),
        json!({
            "type": "function",
            "function": {
                "name": "web_search",
                "description": "Search the web for up-to-date information. Returns the title, URL and snippet of each result, and with `fetch_content` also the beginning of each result page's text. If a search engine fails or finds nothing, the next engine is used automatically.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What to search for."},
                        "num_results": {
                            "type": "integer", "format": "uint", "minimum": 1, "maximum": 50, "default": 5,
                            "description": "How many results to return (1 to 50). Default 5."
                        },
                        "lang": {
                            "type": "string",
                            "description": "Language code for the results, such as `en` or `zh`. Default: the configured language (`en` unless configured otherwise)."
                        },
                        "country": {
                            "type": "string",
                            "description": "Country code for the results, such as `us` or `cn`. Default: the configured country (`us` unless configured otherwise)."
                        },
                        "fetch_content": {
                            "type": "boolean", "default": false,
                            "description": "Set to true to also download every result page and include the start of its text. Default false."
                        }
                    },
                    "required": ["query"]
                }
            }
        })
    );
}

#[tokio::test]
async fn each_engine_reads_its_own_result_page() {
    let web = WebFixtures::start().await.unwrap();
    let base = web.base_url();
    for engine in FixtureEngine::ALL {
        let tool = preferring(&web, engine.name());
        let before = web.requests().len();
        let response = search(&tool, args("rust async", 5)).await.unwrap();

        let label = engine.label();
        let titles: Vec<String> = (1..=5)
            .map(|i| format!("{label} result {i}: rust async"))
            .collect();
        let got_titles: Vec<&str> = response.results.iter().map(|r| r.title.as_str()).collect();
        assert_eq!(
            got_titles, titles,
            "{engine}: ads, boxes and internal links are skipped"
        );
        for (i, result) in response.results.iter().enumerate() {
            let n = i + 1;
            assert_eq!(result.position, n);
            assert_eq!(result.source, engine.name());
            assert_eq!(
                result.description,
                format!("Snippet {n} from {label} about rust async & more."),
                "{engine}: snippets are plain text, highlights and entities decoded"
            );
            let page = format!("{base}/pages/result/{}/{n}", engine.name());
            if engine == FixtureEngine::Baidu && n % 2 == 0 {
                // Without a `mu` attribute Baidu only gives its redirector link, as the real one.
                assert_eq!(
                    result.url,
                    format!("{base}/baidu/link?url={}", urlencode(&page))
                );
            } else {
                // Google's /url?q=, DuckDuckGo's /l/?uddg= and Bing's /ck/a?u=a1… are unwrapped.
                assert_eq!(result.url, page, "{engine} result {n}");
            }
        }
        assert_eq!(response.metadata.total_results, 5);
        let asked: Vec<_> = web.requests()[before..]
            .iter()
            .filter_map(|r| r.engine())
            .collect();
        let expected_requests = if engine == FixtureEngine::Bing { 2 } else { 1 };
        assert_eq!(
            asked,
            vec![engine; expected_requests],
            "only the preferred engine was asked"
        );
    }
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn bing_follows_next_page_links_until_it_has_enough() {
    let web = WebFixtures::start().await.unwrap();
    let tool = preferring(&web, "bing");
    let response = search(&tool, args("paging", 7)).await.unwrap();
    assert_eq!(response.results.len(), 7);
    let firsts: Vec<Option<String>> = web
        .engine_requests(FixtureEngine::Bing)
        .iter()
        .map(|r| r.param("first").map(str::to_owned))
        .collect();
    assert_eq!(firsts, [None, Some("4".into()), Some("7".into())]);

    // The fixture has 7 results in all: asking for 10 stops when there is no next page.
    let response = search(&tool, args("paging", 10)).await.unwrap();
    assert_eq!(response.results.len(), 7);
    assert_eq!(web.engine_requests(FixtureEngine::Bing).len(), 6);
}

#[tokio::test]
async fn the_query_lang_country_and_user_agent_reach_every_engine() {
    let web = WebFixtures::start().await.unwrap();
    for engine in FixtureEngine::ALL {
        if engine != FixtureEngine::Searxng {
            web.set_engine(engine, EngineBehaviour::Empty);
        }
    }
    let tool = preferring(&web, "google");
    let query = "c++ & rust: 100% \"async\"?";
    let response = search(
        &tool,
        WebSearchArgs {
            lang: Some("de".into()),
            country: Some("at".into()),
            ..args(query, 3)
        },
    )
    .await
    .unwrap();
    assert_eq!(response.results[0].source, "searxng");
    assert_eq!(response.metadata.language, "de");
    assert_eq!(response.metadata.country, "at");

    let one = |engine| {
        let requests = web.engine_requests(engine);
        assert_eq!(requests.len(), 1, "{engine}");
        requests.into_iter().next().unwrap()
    };
    let google = one(FixtureEngine::Google);
    assert_eq!(google.param("q"), Some(query), "the query is URL-encoded");
    assert_eq!(
        (google.param("hl"), google.param("gl")),
        (Some("de"), Some("at"))
    );
    let bing = one(FixtureEngine::Bing);
    assert_eq!(bing.param("q"), Some(query));
    assert_eq!(
        (bing.param("setlang"), bing.param("cc")),
        (Some("de"), Some("at"))
    );
    let duckduckgo = one(FixtureEngine::DuckDuckGo);
    assert_eq!(duckduckgo.param("q"), Some(query));
    assert_eq!(duckduckgo.param("kl"), Some("at-de"));
    let baidu = one(FixtureEngine::Baidu);
    assert_eq!(baidu.param("wd"), Some(query));
    let brave = one(FixtureEngine::Brave);
    assert_eq!(
        (brave.param("search_lang"), brave.param("country")),
        (Some("de"), Some("AT"))
    );
    assert_eq!(brave.header("x-subscription-token"), Some(BRAVE_API_KEY));
    let searxng = one(FixtureEngine::Searxng);
    assert_eq!(searxng.param("language"), Some("de-AT"));
    assert_eq!(searxng.param("format"), Some("json"));
    for request in web.requests() {
        assert_eq!(request.header("accept-language"), Some("de-AT,de;q=0.9"));
        assert!(
            request
                .header("user-agent")
                .is_some_and(|ua| ua.starts_with("Mozilla/5.0")),
            "{request:?}"
        );
    }

    // Without lang/country in the call, the configured ones apply.
    let configured = WebSearch::new(WebSearchSettings {
        lang: "fr".into(),
        country: "ca".into(),
        ..settings(&web)
    })
    .unwrap();
    let response = search(&configured, args("bonjour", 1)).await.unwrap();
    assert_eq!(
        (
            response.metadata.language.as_str(),
            response.metadata.country.as_str()
        ),
        ("fr", "ca")
    );
    assert_eq!(
        web.engine_requests(FixtureEngine::Google)[1].param("hl"),
        Some("fr")
    );
}

#[tokio::test]
async fn output_has_openmanus_layout() {
    let web = WebFixtures::start().await.unwrap();
    web.set_result_urls(Some(vec![
        web.url(paths::WINDOWS_1251),
        web.url(paths::MISSING),
    ]));
    let mut tools = ToolCollection::new();
    tools.add_tool(preferring(&web, "google"));
    let result = tools
        .execute(
            "web_search",
            json!({"query": "новости", "num_results": 2, "fetch_content": true}),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    let base = web.base_url();
    assert_eq!(
        result,
        ToolResult::success(format!(
            "Search results for 'новости':\n\
             \n\
             1. Google result 1: новости\n   \
             URL: {base}/pages/windows-1251\n   \
             Description: Snippet 1 from Google about новости & more.\n   \
             Content: Новости дня Новости дня {CYRILLIC_TEXT}\n\
             \n\
             2. Google result 2: новости\n   \
             URL: {base}/pages/missing\n   \
             Description: Snippet 2 from Google about новости & more.\n\
             \n\
             Metadata:\n\
             - Total results: 2\n\
             - Language: en\n\
             - Country: us"
        ))
    );
}

#[tokio::test]
async fn the_engine_order_is_preferred_then_fallbacks_then_the_rest() {
    let web = WebFixtures::start().await.unwrap();
    web.set_engine(FixtureEngine::Bing, EngineBehaviour::Status(503))
        .set_engine(FixtureEngine::Baidu, EngineBehaviour::Empty);
    let tool = WebSearch::new(WebSearchSettings {
        engine: "Bing".into(),
        fallback_engines: vec!["baidu".into(), "Yahoo".into(), "BING".into()],
        ..settings(&web)
    })
    .unwrap();
    assert_eq!(
        tool.engine_order(),
        ["bing", "baidu", "google", "duckduckgo", "brave", "searxng"]
    );
    let response = search(&tool, args("order", 3)).await.unwrap();
    assert!(response.results.iter().all(|r| r.source == "google"));
    assert_eq!(
        engines_asked(&web),
        ["bing", "bing", "bing", "baidu", "google"],
        "bing is retried (503 is transient), baidu found nothing, google answered"
    );

    // OpenManus's order when no fallbacks are configured.
    let plain = WebSearch::new(WebSearchSettings {
        fallback_engines: Vec::new(),
        brave_api_key: None,
        searxng_url: None,
        ..settings(&web)
    })
    .unwrap();
    assert_eq!(
        plain.engine_order(),
        ["google", "baidu", "duckduckgo", "bing"]
    );
    // The default fallbacks.
    let defaults = WebSearch::new(WebSearchSettings::default()).unwrap();
    assert_eq!(
        defaults.engine_order(),
        ["google", "duckduckgo", "baidu", "bing"]
    );
}

#[tokio::test]
async fn an_engine_that_keeps_failing_hands_over_to_the_next() {
    let web = WebFixtures::start().await.unwrap();
    web.set_engine(FixtureEngine::Google, EngineBehaviour::Status(500));
    let tool = preferring(&web, "google");
    let response = search(&tool, args("w30", 2)).await.unwrap();
    assert_eq!(response.results[0].source, "duckduckgo");
    assert_eq!(
        engines_asked(&web),
        ["google", "google", "google", "duckduckgo"],
        "three attempts on the failing engine, then the next one"
    );
}

#[tokio::test]
async fn permanent_failures_are_not_retried() {
    let web = WebFixtures::start().await.unwrap();
    web.set_engine(FixtureEngine::Google, EngineBehaviour::Captcha)
        .set_engine(FixtureEngine::DuckDuckGo, EngineBehaviour::Status(403));
    let tool = preferring(&web, "google");
    let response = search(&tool, args("blocked", 2)).await.unwrap();
    assert_eq!(response.results[0].source, "baidu");
    assert_eq!(engines_asked(&web), ["google", "duckduckgo", "baidu"]);
}

#[tokio::test]
async fn a_hanging_engine_times_out_and_hands_over() {
    let web = WebFixtures::start().await.unwrap();
    web.set_engine(
        FixtureEngine::Google,
        EngineBehaviour::Delay(Duration::from_secs(60)),
    );
    let tool = WebSearch::new(WebSearchSettings {
        // The fallback must answer within it on a loaded machine; the hanging engine waits 60 s.
        timeout: 3.0,
        engine_attempts: 2,
        max_retries: 0,
        fallback_engines: vec!["Bing".into()],
        ..settings(&web)
    })
    .unwrap();
    let response = search(&tool, args("hang", 1)).await.unwrap();
    assert_eq!(response.results[0].source, "bing");
    assert_eq!(engines_asked(&web), ["google", "google", "bing"]);

    web.set_engine(FixtureEngine::Bing, EngineBehaviour::Empty)
        .set_engine(FixtureEngine::DuckDuckGo, EngineBehaviour::Empty)
        .set_engine(FixtureEngine::Baidu, EngineBehaviour::Empty)
        .set_engine(FixtureEngine::Brave, EngineBehaviour::Empty)
        .set_engine(FixtureEngine::Searxng, EngineBehaviour::Empty);
    let error = search(&tool, args("hang", 1)).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("\n- google: timed out after 3 s (2 attempts)\n"),
        "{error}"
    );
}

#[tokio::test]
async fn a_transient_failure_recovers_on_retry() {
    let web = WebFixtures::start().await.unwrap();
    web.set_engine(
        FixtureEngine::Google,
        EngineBehaviour::FailFirst {
            times: 2,
            status: 429,
        },
    );
    let tool = preferring(&web, "google");
    let response = search(&tool, args("flaky", 2)).await.unwrap();
    assert_eq!(response.results[0].source, "google");
    assert_eq!(engines_asked(&web), ["google", "google", "google"]);
}

#[tokio::test]
async fn an_engine_with_no_results_hands_over_at_once() {
    let web = WebFixtures::start().await.unwrap();
    web.set_engine(FixtureEngine::Google, EngineBehaviour::Empty)
        .set_engine(FixtureEngine::DuckDuckGo, EngineBehaviour::Empty);
    let tool = preferring(&web, "google");
    let response = search(&tool, args("nothing", 2)).await.unwrap();
    assert_eq!(response.results[0].source, "baidu");
    assert_eq!(engines_asked(&web), ["google", "duckduckgo", "baidu"]);
}

#[tokio::test]
async fn when_every_engine_fails_the_error_says_how_each_one_failed() {
    let web = WebFixtures::start().await.unwrap();
    web.set_engine(FixtureEngine::Google, EngineBehaviour::Status(500))
        .set_engine(FixtureEngine::DuckDuckGo, EngineBehaviour::Empty)
        .set_engine(FixtureEngine::Baidu, EngineBehaviour::Status(404))
        .set_engine(FixtureEngine::Bing, EngineBehaviour::Captcha)
        .set_engine(FixtureEngine::Searxng, EngineBehaviour::Status(502));
    let mut tools = ToolCollection::new();
    tools.add_tool(
        WebSearch::new(WebSearchSettings {
            brave_api_key: Some("wrong-key".into()),
            max_retries: 1,
            ..settings(&web)
        })
        .unwrap(),
    );
    let result = tools
        .execute(
            "web_search",
            json!({"query": "doomed"}),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    let expected = format!(
        "{ALL_FAILED}\n\
         What each engine did in the last of 2 sweeps:\n\
         - google: HTTP 500 Internal Server Error (3 attempts)\n\
         - duckduckgo: no results\n\
         - baidu: HTTP 404 Not Found (1 attempt)\n\
         - bing: no results\n\
         - brave: HTTP 401 Unauthorized (1 attempt)\n\
         - searxng: HTTP 502 Bad Gateway (3 attempts)"
    );
    assert_eq!(result, ToolResult::failure(expected.clone()));
    assert_eq!(result.to_string(), format!("Error: {expected}"));
    assert_eq!(
        web.engine_requests(FixtureEngine::Google).len(),
        6,
        "two sweeps of three attempts"
    );
    assert_eq!(web.engine_requests(FixtureEngine::DuckDuckGo).len(), 2);
}

#[tokio::test]
async fn a_later_sweep_can_succeed() {
    let web = WebFixtures::start().await.unwrap();
    for engine in FixtureEngine::ALL {
        web.set_engine(engine, EngineBehaviour::Empty);
    }
    // Google fails its three attempts of the first sweep, then answers in the second.
    web.set_engine(
        FixtureEngine::Google,
        EngineBehaviour::FailFirst {
            times: 3,
            status: 503,
        },
    );
    let tool = WebSearch::new(WebSearchSettings {
        retry_delay: 0.01,
        max_retries: 2,
        ..settings(&web)
    })
    .unwrap();
    let response = search(&tool, args("eventually", 1)).await.unwrap();
    assert_eq!(response.results[0].source, "google");
    assert_eq!(web.engine_requests(FixtureEngine::Google).len(), 4);
    assert_eq!(
        web.engine_requests(FixtureEngine::Bing).len(),
        1,
        "one full sweep before"
    );
}

#[tokio::test]
async fn cancellation_ends_the_wait_between_sweeps() {
    let web = WebFixtures::start().await.unwrap();
    for engine in FixtureEngine::ALL {
        web.set_engine(engine, EngineBehaviour::Empty);
    }
    let tool = std::sync::Arc::new(
        WebSearch::new(WebSearchSettings {
            retry_delay: 3600.0,
            max_retries: 3,
            ..settings(&web)
        })
        .unwrap(),
    );
    let cancel = CancellationToken::new();
    let running = {
        let tool = tool.clone();
        let ctx = ToolContext::new(cancel.clone(), "call-1");
        tokio::spawn(async move { tool.execute(json!({"query": "wait"}), &ctx).await })
    };
    // The first sweep asks the six engines (Bing once: an empty page has no next link).
    tokio::time::timeout(LIMIT, web.wait_for_requests(6))
        .await
        .expect("the first sweep ran");
    cancel.cancel();
    let outcome = tokio::time::timeout(LIMIT, running)
        .await
        .expect("cancellation ended the hour-long wait")
        .unwrap();
    assert_eq!(
        outcome.unwrap_err().to_string(),
        "The search was cancelled before it finished."
    );
    assert_eq!(web.requests().len(), 6, "no second sweep");
}

#[tokio::test]
async fn fetch_content_reads_every_result_page() {
    let web = WebFixtures::start().await.unwrap();
    let pages = [
        paths::ARTICLE,
        paths::WINDOWS_1251,
        paths::GBK,
        paths::MISSING,
        paths::HUGE,
        paths::SLOW,
        "/pages/slow?copy=2",
        paths::TEXT,
        paths::REDIRECT_LOOP,
    ];
    web.set_result_urls(Some(pages.iter().map(|p| web.url(p)).collect()))
        .set_slow_delay(Duration::from_secs(60));
    let tool = WebSearch::new(WebSearchSettings {
        // The good pages must load within it on a loaded machine; the slow one waits 60 s.
        fetch_timeout: 5.0,
        max_page_bytes: 256 * 1024,
        ..settings(&web)
    })
    .unwrap();
    let response = search(
        &tool,
        WebSearchArgs {
            fetch_content: true,
            ..args("pages", pages.len())
        },
    )
    .await
    .unwrap();
    let content: Vec<Option<&str>> = response
        .results
        .iter()
        .map(|r| r.raw_content.as_deref())
        .collect();
    assert_eq!(content.len(), pages.len());

    let article = content[0].expect("the article was read");
    assert!(article.contains("Asynchronous Rust lets one thread juggle thousands of tasks: a future does nothing until an executor polls it"), "{article}");
    assert!(article.starts_with("Understanding Async Rust | The Example Journal"));
    for noise in [
        "TRACKING-SCRIPT",
        "INJECTED-BY-SCRIPT",
        "font-family",
        "All rights reserved",
        "Opinion",
    ] {
        assert!(!article.contains(noise), "{noise} in {article}");
    }
    assert!(
        !article.contains('\n') && !article.contains("  "),
        "whitespace is collapsed"
    );

    assert!(
        content[1].unwrap().contains(CYRILLIC_TEXT),
        "windows-1251 from the header"
    );
    assert!(
        content[2].unwrap().contains(CHINESE_TEXT),
        "GBK from the <meta> tag"
    );
    assert_eq!(content[3], None, "a 404 has no content");

    let huge = content[4].expect("the start of the huge page was read");
    assert!(huge.starts_with("A very large page A very large page This page is far larger"));
    assert_eq!(
        huge.chars().count(),
        10_000,
        "text is cut at 10000 characters"
    );
    assert!(
        web.huge_bytes_sent() < HUGE_PAGE_BYTES / 2,
        "the huge page was not downloaded whole ({} bytes sent)",
        web.huge_bytes_sent()
    );

    assert_eq!(
        (content[5], content[6]),
        (None, None),
        "slow pages time out"
    );
    assert_eq!(
        web.slow_in_flight_max(),
        2,
        "pages are fetched concurrently"
    );
    assert!(
        content[7]
            .unwrap()
            .starts_with("Plain text notes for the fixture server.")
    );
    assert_eq!(content[8], None, "a redirect loop has no content");

    for path in [paths::ARTICLE, paths::GBK] {
        let request = web.requests().into_iter().find(|r| r.path == path).unwrap();
        assert!(
            request
                .header("user-agent")
                .is_some_and(|ua| ua.contains("Mozilla/5.0") && ua.contains("Chrome/")),
            "{request:?}"
        );
    }

    // The rendered content is the first 1000 characters, with `...` when there is more.
    let text = response.to_string();
    let huge_line = text
        .lines()
        .find(|l| l.starts_with("   Content: A very large page"))
        .unwrap();
    let preview = huge_line.strip_prefix("   Content: ").unwrap();
    let first_1000: String = huge.chars().take(1000).collect();
    assert_eq!(preview, format!("{}...", first_1000.trim()));
}

#[tokio::test]
async fn num_results_is_clamped_and_an_empty_query_is_refused() {
    let web = WebFixtures::start().await.unwrap();
    let tool = preferring(&web, "google");
    assert_eq!(
        search(&tool, args("one", 0)).await.unwrap().results.len(),
        1
    );
    assert_eq!(
        search(&tool, args("many", 500))
            .await
            .unwrap()
            .results
            .len(),
        50
    );

    let mut tools = ToolCollection::new();
    tools.add_tool(tool);
    let result = tools
        .execute(
            "web_search",
            json!({"query": "  "}),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(result, ToolResult::failure("The search query is empty."));
    let invalid = tools
        .execute(
            "web_search",
            json!({"query": "x", "num_results": -3}),
            &ToolContext::default(),
        )
        .await
        .unwrap_err();
    assert!(
        invalid
            .to_string()
            .starts_with("Invalid arguments: invalid value: integer `-3`")
    );
}

/// An engine of our own, plugged in through the public trait.
struct Canned;

#[async_trait]
impl SearchEngine for Canned {
    fn name(&self) -> &str {
        "canned"
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchItem>, EngineError> {
        Ok(vec![
            SearchItem::new(
                "",
                "https://example.org/a",
                format!("about {}", query.query),
            ),
            SearchItem::new("Second", "https://example.org/b", ""),
        ])
    }
}

#[tokio::test]
async fn engines_can_be_added_and_untitled_results_are_numbered() {
    let web = WebFixtures::start().await.unwrap();
    let tool = WebSearch::new(WebSearchSettings {
        engine: "Canned".into(),
        ..settings(&web)
    })
    .unwrap()
    .with_engine(Canned);
    assert_eq!(tool.engine_order()[0], "canned");
    let response = search(&tool, args("custom", 5)).await.unwrap();
    assert_eq!(
        response.to_string(),
        "Search results for 'custom':\n\n1. Result 1\n   URL: https://example.org/a\n   \
         Description: about custom\n\n2. Second\n   URL: https://example.org/b\n\nMetadata:\n\
         - Total results: 2\n- Language: en\n- Country: us"
    );
    assert!(web.requests().is_empty(), "no fixture engine was asked");
}
