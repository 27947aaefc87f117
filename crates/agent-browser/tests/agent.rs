//! BrowserAgent end to end: the real HTTP LLM client against the strict mock OpenAI server,
//! headless Chromium, and pages served on 127.0.0.1 that record what the browser did to them.
//! Every one of the 16 actions is driven by the model's tool calls. The tests run one at a time
//! (they count Chromium processes).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use agent_browser::{BrowserConfig, BrowserUseTool, SCREENSHOT_MESSAGE, browser_agent};
use agent_core::{Agent, FinishReason, Role, RunStatus, ToolCall};
use agent_llm::{LlmClient, LlmSettings};
use agent_testkit::web_fixtures::{FixtureEngine, WebFixtures};
use agent_testkit::{Completion, MockOpenAi};
use agent_web::web_search::{EngineUrls, WebSearch, WebSearchSettings};
use axum::Router;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::response::{Html, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tokio::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::const_new(());

const LIMIT: Duration = Duration::from_secs(180);

const FORM: &str = r#"<!doctype html><html><head><title>Order form</title></head><body>
<form action="/submit" method="post">
<input name="name" placeholder="Your name">
<select name="color"><option value="r">Red</option><option value="g">Green</option><option value="b">Blue</option></select>
<button type="submit">Send</button>
</form>
<a href="/tabs">Tabs page</a>
</body></html>"#;

const TABS: &str = r#"<!doctype html><html><head><title>Tabs</title></head><body>
<a href="/long" target="_blank">Open the long page</a>
<iframe src="/frame" width="300" height="80"></iframe>
</body></html>"#;

const FRAME: &str = r#"<!doctype html><html><body>
<button onclick="fetch('/clicked?from=frame')">Frame button</button></body></html>"#;

const LONG: &str = r#"<!doctype html><html><head><title>Long</title></head><body style="margin:0">
<div style="height:5000px">top</div><p>The end marker</p></body></html>"#;

const DOWNLOAD: &str = r#"<!doctype html><html><head><title>Downloads</title></head><body>
<a href="/files/report.csv">Get the report</a></body></html>"#;

const ARTICLE: &str = r#"<!doctype html><html><head><title>Opening hours</title>
<script>function secret() { return 'do not read'; }</script></head><body>
<h1>Opening hours</h1><p>Monday to Friday: 9 to 17.</p><p>Closed on Sundays.</p></body></html>"#;

const REPORT: &str = "a,b\n1,2\n";

/// What the pages saw: form submissions and clicks that called home.
#[derive(Default)]
struct Seen {
    submissions: Vec<String>,
    clicks: Vec<String>,
}

type Shared = Arc<StdMutex<Seen>>;

async fn serve(seen: Shared) -> String {
    let app = Router::new()
        .route("/form", get(|| async { Html(FORM) }))
        .route(
            "/submit",
            axum::routing::post(|State(seen): State<Shared>, body: String| async move {
                seen.lock().unwrap().submissions.push(body.clone());
                Html(format!(
                    "<!doctype html><title>Thanks</title><p>Received {body}</p>"
                ))
            }),
        )
        .route("/tabs", get(|| async { Html(TABS) }))
        .route("/frame", get(|| async { Html(FRAME) }))
        .route(
            "/clicked",
            get(
                |State(seen): State<Shared>, RawQuery(query): RawQuery| async move {
                    seen.lock().unwrap().clicks.push(query.unwrap_or_default());
                    "ok"
                },
            ),
        )
        .route("/long", get(|| async { Html(LONG) }))
        .route("/download", get(|| async { Html(DOWNLOAD) }))
        .route(
            "/files/report.csv",
            get(|| async {
                Response::builder()
                    .header("content-type", "text/csv")
                    .header("content-disposition", "attachment; filename=\"report.csv\"")
                    .body(Body::from(REPORT))
                    .unwrap()
            }),
        )
        .route("/article", get(|| async { Html(ARTICLE) }))
        .route(
            "/never",
            get(|| async {
                let head = futures::stream::once(async {
                    Ok::<_, std::io::Error>(axum::body::Bytes::from_static(
                        b"<!doctype html><html><body><p>loading",
                    ))
                });
                let body = futures::StreamExt::chain(head, futures::stream::pending());
                Response::builder()
                    .header("content-type", "text/html")
                    .body(Body::from_stream(body))
                    .unwrap()
            }),
        )
        .with_state(seen);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn browse(id: &str, args: Value) -> Completion {
    Completion::tool_calls(None, [ToolCall::new(id, "browser_use", args.to_string())])
}

fn terminate(id: &str) -> Completion {
    Completion::tool_calls(
        Some("Done.".into()),
        [ToolCall::new(id, "terminate", r#"{"status":"success"}"#)],
    )
}

fn llm(server: &MockOpenAi) -> Arc<LlmClient> {
    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-browser");
    settings.max_attempts = 1;
    Arc::new(LlmClient::new(settings).unwrap())
}

fn search(web: &WebFixtures) -> Arc<WebSearch> {
    let settings = WebSearchSettings {
        engine: "google".into(),
        base_urls: EngineUrls {
            google: web.engine_url(FixtureEngine::Google),
            baidu: web.engine_url(FixtureEngine::Baidu),
            duckduckgo: web.engine_url(FixtureEngine::DuckDuckGo),
            bing: web.engine_url(FixtureEngine::Bing),
            brave: web.engine_url(FixtureEngine::Brave),
        },
        max_retries: 0,
        retry_delay: 0.0,
        timeout: 5.0,
        fetch_timeout: 5.0,
        ..WebSearchSettings::default()
    };
    Arc::new(WebSearch::new(settings).unwrap())
}

/// The text of the last user message of a recorded request body (the step's prompt).
fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user" && m["content"].is_string())
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

fn image_parts(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|part| part["type"] == "image_url")
        .count()
}

#[tokio::test]
async fn browser_agent_drives_every_action_over_http() {
    let _serial = SERIAL.lock().await;
    let seen = Shared::default();
    let base = serve(seen.clone()).await;
    let web = WebFixtures::start().await.unwrap();
    web.set_result_urls(Some(vec![format!("{base}/article")]));
    let downloads = tempfile::tempdir().unwrap();
    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key("sk-browser");

    let form = format!("{base}/form");
    let steps: Vec<Completion> = vec![
        browse("c01", json!({"action": "go_to_url", "url": form})),
        browse(
            "c02",
            json!({"action": "input_text", "index": 0, "text": "Ada"}),
        ),
        browse("c03", json!({"action": "get_dropdown_options", "index": 1})),
        browse(
            "c04",
            json!({"action": "select_dropdown_option", "index": 1, "text": "Green"}),
        ),
        browse("c05", json!({"action": "click_element", "index": 2})),
        browse("c06", json!({"action": "go_back"})),
        browse("c07", json!({"action": "click_element", "index": 3})),
        browse("c08", json!({"action": "click_element", "index": 1})),
        browse("c09", json!({"action": "click_element", "index": 0})),
        browse(
            "c10",
            json!({"action": "scroll_down", "scroll_amount": 1000}),
        ),
        browse("c11", json!({"action": "scroll_up", "scroll_amount": 400})),
        browse(
            "c12",
            json!({"action": "scroll_to_text", "text": "end marker"}),
        ),
        browse("c13", json!({"action": "switch_tab", "tab_id": 0})),
        browse(
            "c14",
            json!({"action": "open_tab", "url": format!("{base}/download")}),
        ),
        browse("c15", json!({"action": "click_element", "index": 0})),
        browse("c16", json!({"action": "go_to_url", "url": form})),
        browse(
            "c17",
            json!({"action": "input_text", "index": 0, "text": "Bob"}),
        ),
        browse("c18", json!({"action": "send_keys", "keys": "Enter"})),
        browse("c19", json!({"action": "close_tab"})),
        browse(
            "c20",
            json!({"action": "web_search", "query": "opening hours"}),
        ),
        browse(
            "c21",
            json!({"action": "extract_content", "goal": "the opening hours"}),
        ),
        // The forced call the tool asks for while running c21.
        Completion::tool_calls(
            None,
            [ToolCall::new(
                "x1",
                "extract_content",
                json!({"extracted_content": {
                    "text": "Monday to Friday, 9 to 17",
                    "metadata": {"source": "main"}
                }})
                .to_string(),
            )],
        ),
        browse("c22", json!({"action": "wait", "seconds": 0})),
        browse(
            "c23",
            json!({"action": "go_to_url", "url": format!("{base}/never")}),
        ),
        browse("c24", json!({"action": "go_to_url", "url": form})),
        terminate("c25"),
    ];
    for step in steps {
        server.push(step);
    }

    let tool = BrowserUseTool::with_config(BrowserConfig {
        action_timeout: Duration::from_secs(5),
        downloads_dir: Some(downloads.path().to_path_buf()),
        ..BrowserConfig::default()
    })
    .with_web_search(search(&web));
    let mut agent = browser_agent(llm(&server), tool).with_max_steps(30);
    let outcome = tokio::time::timeout(LIMIT, agent.run(Some("Try every action.".into())))
        .await
        .expect("the agent hung")
        .unwrap();
    assert!(
        matches!(&outcome.status, RunStatus::Finished(FinishReason::SpecialTool { name }) if name == "terminate"),
        "{outcome:?}"
    );
    server.verify().unwrap();
    assert_eq!(server.remaining(), 0);

    // The observations, in order.
    let observations: Vec<String> = agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool && m.name.as_deref() == Some("browser_use"))
        .map(|m| {
            m.text()
                .trim_start_matches("Observed output of cmd `browser_use` executed:\n")
                .trim_start_matches("Error: ")
                .to_owned()
        })
        .collect();
    let report = downloads.path().join("report.csv");
    let expected_prefixes = [
        format!("Navigated to {form}"),
        "Input 'Ada' into element at index 0".to_owned(),
        "Dropdown options: [{'text': 'Red', 'value': 'r', 'index': 0}, {'text': 'Green', 'value': 'g', 'index': 1}, {'text': 'Blue', 'value': 'b', 'index': 2}]".to_owned(),
        "Selected option 'Green' from dropdown at index 1".to_owned(),
        "Clicked element at index 2".to_owned(),
        "Navigated back".to_owned(),
        "Clicked element at index 3".to_owned(),
        "Clicked element at index 1".to_owned(),
        "Clicked element at index 0 - Opened new tab 1".to_owned(),
        "Scrolled down by 1000 pixels".to_owned(),
        "Scrolled up by 400 pixels".to_owned(),
        "Scrolled to text: 'end marker'".to_owned(),
        "Switched to tab 0".to_owned(),
        format!("Opened new tab with {base}/download"),
        format!(
            "Clicked element at index 0 - Downloaded file to {}",
            report.display()
        ),
        format!("Navigated to {form}"),
        "Input 'Bob' into element at index 0".to_owned(),
        "Sent keys: Enter".to_owned(),
        "Closed current tab".to_owned(),
        "Search results for 'opening hours'".to_owned(),
        "Extracted from page:\n{'metadata': {'source': 'main'}, 'text': 'Monday to Friday, 9 to 17'}\n".to_owned(),
        "Waited for 0 seconds".to_owned(),
        "Browser action 'go_to_url' failed: timed out after 5 s; the tab was reset to a blank page".to_owned(),
        format!("Navigated to {form}"),
    ];
    assert_eq!(
        observations.len(),
        expected_prefixes.len(),
        "{observations:#?}"
    );
    for (seen, expected) in observations.iter().zip(&expected_prefixes) {
        assert!(
            seen.starts_with(expected.as_str()),
            "expected {expected:?}, got {seen:?}"
        );
    }
    // The search opened its first result, the article.
    assert!(
        observations[19].contains(&format!("{base}/article")),
        "{}",
        observations[19]
    );

    // Page effects: both submissions arrived with the typed name and the chosen option; the
    // button inside the iframe really ran its handler; the download is on disk.
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.submissions, ["name=Ada&color=g", "name=Bob&color=r"]);
        assert_eq!(seen.clicks, ["from=frame"]);
    }
    assert_eq!(std::fs::read_to_string(&report).unwrap(), REPORT);

    // What the model was shown: the state in the prompt, with the indices the actions used.
    let requests = server.requests();
    let after_first = last_user_text(&requests[1].body);
    assert!(
        after_first.contains(&format!("URL: {form}")),
        "{after_first}"
    );
    assert!(after_first.contains("Title: Order form"), "{after_first}");
    assert!(
        after_first.contains(r#"[0]<input name="name" placeholder="Your name"></input>"#),
        "{after_first}"
    );
    assert!(after_first.contains(r#"[1]<select name="color">Red</select>"#));
    assert!(after_first.contains("[2]<button type=\"submit\">Send</button>"));
    let after_typing = last_user_text(&requests[2].body);
    assert!(after_typing.contains(r#"value="Ada""#), "{after_typing}");
    let after_scroll = last_user_text(&requests[10].body);
    assert!(
        after_scroll.contains("Content above the viewport: (1000 pixels)"),
        "{after_scroll}"
    );
    assert!(
        after_scroll.contains("2 tab(s) available"),
        "{after_scroll}"
    );

    // extract_content: the model got the page as markdown, under a forced function call.
    let extraction = requests
        .iter()
        .find(|r| r.body["tool_choice"] == "required")
        .expect("an extraction request");
    assert_eq!(
        extraction.body["tools"][0]["function"]["name"],
        "extract_content"
    );
    assert_eq!(extraction.body["tools"].as_array().unwrap().len(), 1);
    let text = extraction.body["messages"].to_string();
    assert!(text.contains("# Opening hours"), "{text}");
    assert!(text.contains("Monday to Friday: 9 to 17."), "{text}");
    assert!(text.contains("the opening hours"), "{text}");
    assert!(!text.contains("do not read"), "{text}");

    // A vision model gets the screenshot, and only the latest one stays an image.
    let last = &requests.last().unwrap().body;
    assert_eq!(image_parts(last), 1, "one screenshot in the last request");
    let screenshots = agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::User && m.base64_image.is_some())
        .count();
    assert_eq!(screenshots, 1);
    assert!(
        agent
            .messages()
            .iter()
            .any(|m| m.text() == agent_browser::SCREENSHOT_REPLACED)
    );
    assert!(last.to_string().contains(SCREENSHOT_MESSAGE));

    // The run's end closed the browser.
    common::assert_no_chromium_left(None).await;
}

#[tokio::test]
async fn a_killed_chromium_is_relaunched_by_the_next_action() {
    let _serial = SERIAL.lock().await;
    let base = serve(Shared::default()).await;
    let server = Arc::new(MockOpenAi::start().await.unwrap());
    let form = format!("{base}/form");
    server.push(browse("k1", json!({"action": "go_to_url", "url": form})));
    // The model "thinks" for a second while the test kills Chromium.
    server.push_slow_first_byte(
        Duration::from_secs(1),
        Completion::tool_calls(
            None,
            [ToolCall::new(
                "k2",
                "browser_use",
                json!({"action": "go_to_url", "url": format!("{base}/long")}).to_string(),
            )],
        ),
    );
    server.push(terminate("k3"));

    let agent_tool = BrowserUseTool::with_config(BrowserConfig {
        action_timeout: Duration::from_secs(10),
        ..BrowserConfig::default()
    });
    let mut agent = browser_agent(llm(&server), agent_tool).with_max_steps(5);
    let tool = agent.hooks().helper().tool().clone();
    let killer = {
        let server_requests = Arc::clone(&server);
        let tool = tool.clone();
        tokio::spawn(async move {
            tokio::time::timeout(LIMIT, server_requests.wait_for_requests(2))
                .await
                .expect("the second request");
            let pid = tool.browser_pid().await.expect("a browser after step 1");
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            )
            .unwrap();
            pid
        })
    };
    let outcome = tokio::time::timeout(LIMIT, agent.run(Some("Open two pages.".into())))
        .await
        .expect("the agent hung")
        .unwrap();
    let killed = killer.await.unwrap();
    assert!(outcome.is_finished(), "{outcome:?}");
    let observations: Vec<&str> = agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    assert_eq!(
        observations[1],
        format!("Observed output of cmd `browser_use` executed:\nNavigated to {base}/long"),
        "{observations:#?}"
    );
    assert!(!common::is_running(killed));
    common::assert_no_chromium_left(Some(killed)).await;
}
