//! `web_search` and `crawl4ai` driven by a ToolCallAgent whose model is the real HTTP client
//! talking to the strict mock OpenAI server; the engines and pages are the loopback fixtures.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::{Agent, Role, ToolCall};
use agent_llm::{LlmClient, LlmSettings};
use agent_testkit::MockOpenAi;
use agent_testkit::web_fixtures::{EngineBehaviour, FixtureEngine, WebFixtures, paths};
use agent_toolcall::ToolCallAgent;
use agent_web::web_search::{EngineUrls, WebSearch, WebSearchSettings};
use agent_web::{Crawl4ai, CrawlSettings};
use serde_json::{Value, json};

fn call(id: &str, name: &str, args: &Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

#[tokio::test]
async fn an_agent_searches_and_crawls_over_http() {
    let web = WebFixtures::start().await.unwrap();
    let server = MockOpenAi::start().await.unwrap();
    let article = web.url(paths::ARTICLE);
    let missing = web.url(paths::MISSING);
    server
        .push_tool_calls(
            "Let me search first.",
            [call(
                "s1",
                "web_search",
                &json!({"query": "async rust", "num_results": 2, "fetch_content": true}),
            )],
        )
        .push_tool_calls(
            "",
            [call(
                "c1",
                "crawl4ai",
                &json!({"urls": [&article, &missing]}),
            )],
        )
        .push_tool_calls(
            "Done.",
            [call("t1", "terminate", &json!({"status": "success"}))],
        );

    // Google is down: the search falls back to DuckDuckGo (spec §13 W30).
    web.set_engine(FixtureEngine::Google, EngineBehaviour::Status(503));
    let search = WebSearch::new(WebSearchSettings {
        base_urls: EngineUrls {
            google: web.engine_url(FixtureEngine::Google),
            baidu: web.engine_url(FixtureEngine::Baidu),
            duckduckgo: web.engine_url(FixtureEngine::DuckDuckGo),
            bing: web.engine_url(FixtureEngine::Bing),
            brave: web.engine_url(FixtureEngine::Brave),
        },
        engine_backoff: 0.001,
        engine_backoff_max: 0.001,
        max_retries: 0,
        ..WebSearchSettings::default()
    })
    .unwrap();
    let mut settings = LlmSettings::new("gpt-4o", server.base_url());
    settings.max_attempts = 1;
    let mut agent = ToolCallAgent::new(Arc::new(LlmClient::new(settings).unwrap()))
        .with_tool(search)
        .with_tool(Crawl4ai::new(CrawlSettings::default()).unwrap())
        .with_max_steps(5);

    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        agent.run(Some("Find out how async Rust works.".into())),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    server.verify().unwrap();
    assert_eq!(server.request_count(), 3);

    // Both tools were offered to the model with their schemas.
    let first = &server.requests()[0].body;
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        offered.contains(&"web_search") && offered.contains(&"crawl4ai"),
        "{offered:?}"
    );

    let observations: Vec<&str> = agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    let base = web.base_url();
    let searched = observations[0];
    assert!(
        searched.starts_with(&format!(
            "Observed output of cmd `web_search` executed:\nSearch results for 'async rust':\n\n\
             1. DuckDuckGo result 1: async rust\n   URL: {base}/pages/result/duckduckgo/1\n   \
             Description: Snippet 1 from DuckDuckGo about async rust & more.\n   \
             Content: DuckDuckGo result page 1 DuckDuckGo result page 1 Result page 1 of DuckDuckGo"
        )),
        "{searched}"
    );
    assert!(searched.ends_with("\n\nMetadata:\n- Total results: 2\n- Language: en\n- Country: us"));

    let crawled = observations[1];
    assert!(
        crawled.starts_with(&format!(
            "Observed output of cmd `crawl4ai` executed:\n🕷️ Crawl4AI Results Summary:\n\
             📊 Total URLs: 2\n✅ Successful: 1\n❌ Failed: 1\n\n1. {article}\n   \
             ✅ Status: Success (HTTP 200)\n   📄 Title: Understanding Async Rust | The Example \
             Journal\n   📝 Content: # Understanding Async Rust\n"
        )),
        "{crawled}"
    );
    assert!(crawled.contains(&format!(
        "2. {missing}\n   ❌ Status: Failed\n   🚫 Error: HTTP 404 Not Found\n"
    )));

    // The observations reached the model in the next requests, paired with their calls.
    let last = &server.requests()[2].body;
    let tool_messages: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(tool_messages, ["s1", "c1"]);
    assert_eq!(web.engine_requests(FixtureEngine::Google).len(), 3);
}
