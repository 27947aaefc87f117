//! `crawl4ai` against the fixture pages of `agent_testkit::web_fixtures` on loopback: several
//! URLs per call, invalid URLs, time limits, redirects and 404s, charsets, huge pages, the cache,
//! cancellation, and what the markdown of a noisy page keeps and drops.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::CancellationToken;
use agent_testkit::web_fixtures::{
    CHINESE_TEXT, CYRILLIC_TEXT, HUGE_PAGE_BYTES, WebFixtures, paths,
};
use agent_tools::{Tool, ToolCollection, ToolContext, ToolResult};
use agent_web::crawl4ai::NO_VALID_URLS;
use agent_web::{Crawl4ai, CrawlSettings};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(20);

async fn crawl(tool: Crawl4ai, args: Value) -> ToolResult {
    let mut tools = ToolCollection::new();
    tools.add_tool(tool);
    crawl_with(&tools, args).await
}

async fn crawl_with(tools: &ToolCollection, args: Value) -> ToolResult {
    tokio::time::timeout(
        LIMIT,
        tools.execute("crawl4ai", args, &ToolContext::default()),
    )
    .await
    .expect("the crawl finished in time")
    .unwrap()
}

fn tool() -> Crawl4ai {
    Crawl4ai::new(CrawlSettings::default()).unwrap()
}

/// The output with every `⏱️ Time: …s` replaced by `⏱️ Time: T`.
fn without_times(result: &ToolResult) -> String {
    let output = result.output.as_deref().expect("a successful result");
    output
        .split('\n')
        .map(|line| match line.strip_prefix("   ⏱️ Time: ") {
            Some(time) => {
                let seconds = time.strip_suffix('s').unwrap();
                assert!(seconds.parse::<f64>().is_ok(), "{line}");
                "   ⏱️ Time: T"
            }
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The markdown of result `n` (1-based): the text after `📝 Content: ` up to the stats line.
fn content_of(output: &str, n: usize) -> String {
    let start = output
        .find(&format!("\n{n}. "))
        .unwrap_or_else(|| panic!("no result {n} in {output}"));
    let rest = &output[start..];
    let content = rest.find("   📝 Content: ").expect("content") + "   📝 Content: ".len();
    let end = rest.find("\n   📊 Stats: ").expect("stats");
    rest[content..end].to_owned()
}

#[test]
fn schema_snapshot() {
    assert_eq!(
        serde_json::to_value(tool().to_param()).unwrap(),
        json!({
            "type": "function",
            "function": {
                "name": "crawl4ai",
                "description": "Read one or more web pages and get each one back as clean markdown, ready to read: scripts, styles, navigation, headers, footers, side panels and pop-ups are removed, while headings, paragraphs, lists, tables, code and links are kept. For each URL it reports the HTTP status, the title, the markdown, word, link and image counts, and the time taken. Only http and https URLs are accepted. Pages are fetched without running JavaScript, so a page that builds its content with JavaScript, or that needs clicking, scrolling or logging in, should be opened with the browser tool instead.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "urls": {
                            "type": "array", "items": {"type": "string"}, "minItems": 1,
                            "description": "The http or https URLs of the pages to read; one URL or several."
                        },
                        "timeout": {
                            "type": "integer", "format": "uint64", "minimum": 5, "maximum": 120, "default": 30,
                            "description": "Time limit for each page, in seconds (5 to 120). Default 30."
                        },
                        "bypass_cache": {
                            "type": "boolean", "default": false,
                            "description": "Set to true to fetch fresh copies instead of reusing pages read recently. Default false."
                        },
                        "word_count_threshold": {
                            "type": "integer", "format": "uint", "minimum": 1, "default": 10,
                            "description": "Paragraphs with fewer words than this are left out of the markdown (headings, lists, tables and code are always kept). Default 10."
                        }
                    },
                    "required": ["urls"]
                }
            }
        })
    );
}

#[tokio::test]
async fn several_urls_in_one_call_keep_the_openmanus_layout() {
    let web = WebFixtures::start().await.unwrap();
    let base = web.base_url();
    let result = crawl(
        tool(),
        json!({"urls": [
            web.url(paths::WINDOWS_1251),
            "ftp://example.com/file",
            web.url(paths::MISSING),
            web.url(paths::GBK),
            "not a url",
            web.url(paths::REDIRECT_LOOP),
            web.url(paths::TEXT),
            web.url(paths::PDF),
        ]}),
    )
    .await;
    assert_eq!(
        without_times(&result),
        format!(
            "🕷️ Crawl4AI Results Summary:\n\
             📊 Total URLs: 6\n\
             ✅ Successful: 3\n\
             ❌ Failed: 3\n\
             ⚠️ Invalid URLs skipped: ftp://example.com/file, not a url\n\
             \n\
             1. {base}/pages/windows-1251\n   \
             ✅ Status: Success (HTTP 200)\n   \
             📄 Title: Новости дня\n   \
             📝 Content: # Новости дня\n\
             \n\
             {CYRILLIC_TEXT}\n   \
             📊 Stats: 17 words, 0 links, 0 images\n   \
             ⏱️ Time: T\n\
             \n\
             2. {base}/pages/missing\n   \
             ❌ Status: Failed\n   \
             🚫 Error: HTTP 404 Not Found\n\
             \n\
             3. {base}/pages/gbk\n   \
             ✅ Status: Success (HTTP 200)\n   \
             📄 Title: 中文测试页面\n   \
             📝 Content: # 中文测试页面\n\
             \n\
             {CHINESE_TEXT}\n   \
             📊 Stats: 37 words, 0 links, 0 images\n   \
             ⏱️ Time: T\n\
             \n\
             4. {base}/pages/loop\n   \
             ❌ Status: Failed\n   \
             🚫 Error: too many redirects (more than 10; probably a redirect loop)\n\
             \n\
             5. {base}/pages/notes.txt\n   \
             ✅ Status: Success (HTTP 200)\n   \
             📝 Content: Plain text notes for the fixture server.\n\
             \n\
             The second paragraph of the notes file is long enough to be kept by any reasonable word-count threshold.\n   \
             📊 Stats: 25 words, 0 links, 0 images\n   \
             ⏱️ Time: T\n\
             \n\
             6. {base}/pages/report.pdf\n   \
             ❌ Status: Failed\n   \
             🚫 Error: unsupported content type application/pdf (only HTML and text can be read)\n"
        )
    );
}

#[tokio::test]
async fn markdown_of_a_noisy_page_keeps_the_content_and_drops_the_rest() {
    let web = WebFixtures::start().await.unwrap();
    let base = web.base_url();
    let result = crawl(tool(), json!({"urls": [web.url(paths::ARTICLE)]})).await;
    let output = result.output.unwrap();
    assert!(output.contains("\n   📄 Title: Understanding Async Rust | The Example Journal\n"));
    assert!(
        output.contains("\n   📊 Stats: 124 words, 2 links, 1 images\n"),
        "{output}"
    );
    let markdown = content_of(&output, 1);
    for kept in [
        "# Understanding Async Rust\n\nBy Ada Example, a writer who covers systems programming",
        "## Futures are lazy",
        "## Choosing a runtime",
        // Relative links and image sources are made absolute; absolute ones stay.
        &format!("a [future]({base}/docs/futures) does nothing until an executor polls it"),
        "such as [Tokio](https://tokio.rs/), which then drives it",
        &format!("![A future as a state machine]({base}/images/state-machine.png)"),
        "- Tokio for servers and network clients\n- smol for small binaries",
        "```rust\nasync fn answer() -> u32 {\n    42\n}\n```",
        "| Runtime | Threads |",
        "every `.await` is a point",
    ] {
        assert!(markdown.contains(kept), "missing {kept:?} in:\n{markdown}");
    }
    for dropped in [
        "TRACKING-SCRIPT",
        "INJECTED-BY-SCRIPT",
        "font-family",
        "cookies",
        "The Example Journal",
        "News",
        "Trending now",
        "Ten gadgets",
        "newsletter",
        "Sign up",
        "Subscribe now to keep reading",
        "All rights reserved",
        "privacy policy",
        "Short note.",
    ] {
        assert!(
            !markdown.contains(dropped),
            "{dropped:?} kept in:\n{markdown}"
        );
    }
    assert!(markdown.starts_with("# Understanding Async Rust"));

    // With a threshold of 1 the two-word paragraph is kept.
    let low = crawl(
        tool(),
        json!({"urls": [web.url(paths::ARTICLE)], "word_count_threshold": 1}),
    )
    .await;
    assert!(content_of(low.output.as_deref().unwrap(), 1).contains("\n\nShort note.\n\n"));
}

#[tokio::test]
async fn invalid_urls_are_rejected_with_the_openmanus_message() {
    let web = WebFixtures::start().await.unwrap();
    let result = crawl(
        tool(),
        json!({"urls": ["example.com", "file:///etc/passwd", "https://", "javascript:alert(1)"]}),
    )
    .await;
    assert_eq!(result, ToolResult::failure(NO_VALID_URLS));
    assert_eq!(result.to_string(), "Error: No valid URLs provided");
    let empty = crawl(tool(), json!({"urls": []})).await;
    assert_eq!(empty, ToolResult::failure(NO_VALID_URLS));
    assert!(web.requests().is_empty());

    // One URL may be given as a plain string.
    let single = crawl(tool(), json!({"urls": web.url(paths::TEXT)})).await;
    assert!(single.output.unwrap().contains("✅ Successful: 1\n"));
}

#[tokio::test]
async fn a_slow_page_times_out_without_holding_up_the_others() {
    let web = WebFixtures::start().await.unwrap();
    web.set_slow_delay(Duration::from_secs(60));
    let capped = Crawl4ai::new(CrawlSettings {
        // The article must load within it on a loaded machine; the slow page waits 60 s.
        timeout_cap: 3.0,
        ..CrawlSettings::default()
    })
    .unwrap();
    let result = crawl(
        capped,
        json!({"urls": [web.url(paths::SLOW), web.url(paths::ARTICLE)], "timeout": 5}),
    )
    .await;
    let output = without_times(&result);
    assert!(output.starts_with(
        "🕷️ Crawl4AI Results Summary:\n📊 Total URLs: 2\n✅ Successful: 1\n❌ Failed: 1\n\n"
    ));
    assert!(
        output.contains(&format!(
            "1. {}\n   ❌ Status: Failed\n   🚫 Error: timed out after 3 s\n\n2. {}\n   ✅ Status: Success (HTTP 200)\n",
            web.url(paths::SLOW),
            web.url(paths::ARTICLE)
        )),
        "{output}"
    );
}

#[tokio::test]
async fn redirects_are_followed() {
    let web = WebFixtures::start().await.unwrap();
    let result = crawl(tool(), json!({"urls": [web.url(paths::REDIRECT)]})).await;
    let output = result.output.unwrap();
    assert!(output.contains(&format!(
        "1. {}\n   ✅ Status: Success (HTTP 200)\n",
        web.url(paths::REDIRECT)
    )));
    assert!(content_of(&output, 1).starts_with("# Understanding Async Rust"));
    assert_eq!(web.hits(paths::ARTICLE), 1);
}

#[tokio::test]
async fn pages_are_cached_per_tool_unless_bypassed() {
    let web = WebFixtures::start().await.unwrap();
    let mut tools = ToolCollection::new();
    tools.add_tool(tool());
    let article = web.url(paths::ARTICLE);
    let first = crawl_with(&tools, json!({"urls": [&article]})).await;
    let second = crawl_with(&tools, json!({"urls": [&article]})).await;
    assert_eq!(
        web.hits(paths::ARTICLE),
        1,
        "the second call used the cache"
    );
    assert_eq!(without_times(&first), without_times(&second));
    crawl_with(&tools, json!({"urls": [&article], "bypass_cache": true})).await;
    assert_eq!(web.hits(paths::ARTICLE), 2, "bypass_cache fetched it again");

    // Failures are not cached, and another tool instance has its own cache.
    let missing = web.url(paths::MISSING);
    crawl_with(&tools, json!({"urls": [&missing]})).await;
    crawl_with(&tools, json!({"urls": [&missing]})).await;
    assert_eq!(web.hits(paths::MISSING), 2);
    crawl(tool(), json!({"urls": [&article]})).await;
    assert_eq!(web.hits(paths::ARTICLE), 3);

    // A zero TTL turns the cache off.
    let uncached = Crawl4ai::new(CrawlSettings {
        cache_ttl: 0.0,
        ..CrawlSettings::default()
    })
    .unwrap();
    let mut tools = ToolCollection::new();
    tools.add_tool(uncached);
    crawl_with(&tools, json!({"urls": [&article]})).await;
    crawl_with(&tools, json!({"urls": [&article]})).await;
    assert_eq!(web.hits(paths::ARTICLE), 5);
}

#[tokio::test]
async fn a_huge_page_is_read_only_up_to_the_caps() {
    let web = WebFixtures::start().await.unwrap();
    let small = Crawl4ai::new(CrawlSettings {
        max_page_bytes: 512 * 1024,
        max_content_chars: 2000,
        ..CrawlSettings::default()
    })
    .unwrap();
    let result = crawl(small, json!({"urls": [web.url(paths::HUGE)]})).await;
    let output = result.output.unwrap();
    assert!(output.contains("✅ Status: Success (HTTP 200)"));
    let markdown = content_of(&output, 1);
    assert!(markdown.starts_with("# A very large page\n\nThis page is far larger"));
    assert!(markdown.ends_with("..."), "cut content ends with ...");
    assert_eq!(markdown.chars().count(), 2003);
    assert!(
        web.huge_bytes_sent() < HUGE_PAGE_BYTES / 2,
        "the page was not downloaded whole ({} bytes sent)",
        web.huge_bytes_sent()
    );
}

#[tokio::test]
async fn cancellation_stops_a_crawl_in_progress() {
    let web = WebFixtures::start().await.unwrap();
    web.set_slow_delay(Duration::from_secs(60));
    let tool = Arc::new(tool());
    let cancel = CancellationToken::new();
    let running = {
        let tool = tool.clone();
        let ctx = ToolContext::new(cancel.clone(), "call-1");
        let url = web.url(paths::SLOW);
        tokio::spawn(async move { tool.execute(json!({"urls": [url]}), &ctx).await })
    };
    tokio::time::timeout(LIMIT, web.wait_for_requests(1))
        .await
        .expect("the slow page was requested");
    cancel.cancel();
    let outcome = tokio::time::timeout(LIMIT, running)
        .await
        .expect("the crawl stopped")
        .unwrap();
    assert_eq!(
        outcome.unwrap_err().to_string(),
        "The crawl was cancelled before it finished."
    );
}
