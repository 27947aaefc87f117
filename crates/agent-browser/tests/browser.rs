//! browser_use against headless Chromium and pages served on 127.0.0.1. The tests share the
//! machine's Chromium and run one at a time through a lock.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_browser::{BrowserConfig, BrowserUseTool};
use agent_tools::{Tool, ToolContext, ToolResult};
use axum::Router;
use axum::body::Body;
use axum::response::{Html, Response};
use axum::routing::get;
use base64::Engine as _;
use common::{PROFILE_MARK, processes_with};
use serde_json::{Value, json};
use tokio::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::const_new(());

const FORM: &str = r#"<!doctype html><html><head><title>Form page</title></head><body>
<h1>Test form</h1>
<a href="/long">Long page</a>
<input type="hidden" name="secret" value="x">
<button id="hidden-button" style="display:none">Invisible</button>
<input id="name" name="name" placeholder="Your name">
<button id="go" onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value; const b = document.createElement('button'); b.textContent = 'Added later'; document.body.appendChild(b);">Greet</button>
<select id="color" name="color"><option value="r">Red</option><option value="g">Green</option></select>
<p id="out">nobody</p>
<iframe src="/frame" width="300" height="100"></iframe>
<div id="host"></div>
<script>
  const root = document.getElementById('host').attachShadow({mode: 'open'});
  root.innerHTML = '<button>Shadow button</button>';
</script>
</body></html>"#;

const FRAME: &str = r#"<!doctype html><html><body><button>Frame button</button></body></html>"#;

const LONG: &str = r#"<!doctype html><html><head><title>Long</title></head><body style="margin:0">
<div style="height:5000px">top</div><p id="end">The end marker</p></body></html>"#;

/// Requests for `/slow`, which answers after [`SLOW`].
static SLOW_REQUESTS: AtomicUsize = AtomicUsize::new(0);

/// An answer Chromium refuses (`ERR_RESPONSE_HEADERS_MULTIPLE_CONTENT_LENGTH`).
const TWO_LENGTHS: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx";

/// Longer than the 30 s chromiumoxide gives a command (a `Page.navigate` is answered once the
/// server has answered).
const SLOW: Duration = Duration::from_secs(35);

async fn serve() -> String {
    let app = Router::new()
        .route("/form", get(|| async { Html(FORM) }))
        .route(
            "/slow",
            get(|| async {
                SLOW_REQUESTS.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(SLOW).await;
                Html("<!doctype html><html><head><title>Slow page</title></head></html>")
            }),
        )
        .route("/frame", get(|| async { Html(FRAME) }))
        .route("/long", get(|| async { Html(LONG) }))
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
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn tool() -> BrowserUseTool {
    BrowserUseTool::with_config(BrowserConfig {
        action_timeout: Duration::from_secs(20),
        ..BrowserConfig::default()
    })
}

async fn call(tool: &BrowserUseTool, args: Value) -> ToolResult {
    tool.execute(args, &ToolContext::default()).await.unwrap()
}

/// `go_to_url` to `url`, which must succeed.
async fn go_to(tool: &BrowserUseTool, url: &str) {
    let result = call(tool, json!({"action": "go_to_url", "url": url})).await;
    assert_eq!(
        result.output.as_deref(),
        Some(format!("Navigated to {url}").as_str()),
        "{result:?}"
    );
}

async fn state_json(tool: &BrowserUseTool) -> (Value, ToolResult) {
    let state = tool.get_current_state().await;
    assert!(state.error.is_none(), "{state:?}");
    let json: Value = serde_json::from_str(state.output.as_deref().unwrap()).unwrap();
    (json, state)
}

#[tokio::test]
async fn schema_snapshot() {
    let param = serde_json::to_string_pretty(&tool().to_param()).unwrap();
    let expected = include_str!("snapshots/browser_use_param.json");
    assert_eq!(param.trim(), expected.trim(), "\n{param}");
}

#[tokio::test]
async fn missing_parameters_and_unknown_actions_are_error_results() {
    let tool = tool();
    let cases = [
        (
            json!({"action": "go_to_url"}),
            "URL is required for 'go_to_url' action",
        ),
        (
            json!({"action": "click_element"}),
            "Index is required for 'click_element' action",
        ),
        (
            json!({"action": "input_text", "index": 1}),
            "Index and text are required for 'input_text' action",
        ),
        (
            json!({"action": "switch_tab"}),
            "Tab ID is required for 'switch_tab' action",
        ),
        (
            json!({"action": "web_search"}),
            "Query is required for 'web_search' action",
        ),
        (json!({"action": "fly"}), "Unknown action: fly"),
    ];
    for (args, error) in cases {
        assert_eq!(call(&tool, args).await.error.as_deref(), Some(error));
    }
    assert_eq!(
        tool.get_current_state().await.error.as_deref(),
        Some("Browser context not initialized")
    );
    assert!(
        tool.browser_pid().await.is_none(),
        "no browser launched for argument errors"
    );
}

#[tokio::test]
async fn navigate_index_click_input_select_and_state() {
    let _serial = SERIAL.lock().await;
    let base = serve().await;
    let tool = tool();
    let url = format!("{base}/form");
    go_to(&tool, &url).await;
    let pid = tool.browser_pid().await.unwrap();

    let (state, raw) = state_json(&tool).await;
    assert_eq!(state["url"], url);
    assert_eq!(state["title"], "Form page");
    assert_eq!(state["tabs"].as_array().unwrap().len(), 1);
    let elements = state["interactive_elements"].as_str().unwrap();
    let lines: Vec<&str> = elements.lines().collect();
    assert_eq!(
        lines,
        [
            r#"[0]<a href="/long">Long page</a>"#,
            r#"[1]<input name="name" placeholder="Your name"></input>"#,
            r#"[2]<button>Greet</button>"#,
            r#"[3]<select name="color">Red</select>"#,
            r#"[4]<button>Frame button</button>"#,
            r#"[5]<button>Shadow button</button>"#,
        ],
        "{elements}"
    );
    // The screenshot is a JPEG.
    let image = base64::engine::general_purpose::STANDARD
        .decode(raw.base64_image.as_deref().unwrap())
        .unwrap();
    assert_eq!(&image[..3], &[0xFF, 0xD8, 0xFF]);

    let typed = call(
        &tool,
        json!({"action": "input_text", "index": 1, "text": "Ada"}),
    )
    .await;
    assert_eq!(
        typed.output.as_deref(),
        Some("Input 'Ada' into element at index 1")
    );
    let clicked = call(&tool, json!({"action": "click_element", "index": 2})).await;
    assert_eq!(
        clicked.output.as_deref(),
        Some("Clicked element at index 2")
    );
    let (state, _) = state_json(&tool).await;
    let elements = state["interactive_elements"].as_str().unwrap();
    assert!(
        elements.contains(r#"[1]<input name="name" placeholder="Your name" value="Ada"></input>"#),
        "{elements}"
    );
    assert!(
        elements.contains("[6]<button>Added later</button>"),
        "{elements}"
    );

    let missing = call(&tool, json!({"action": "click_element", "index": 42})).await;
    assert_eq!(
        missing.error.as_deref(),
        Some("Element with index 42 not found")
    );

    let options = call(&tool, json!({"action": "get_dropdown_options", "index": 3})).await;
    assert_eq!(
        options.output.as_deref(),
        Some(
            "Dropdown options: [{'text': 'Red', 'value': 'r', 'index': 0}, {'text': 'Green', 'value': 'g', 'index': 1}]"
        )
    );
    let selected = call(
        &tool,
        json!({"action": "select_dropdown_option", "index": 3, "text": "Green"}),
    )
    .await;
    assert_eq!(
        selected.output.as_deref(),
        Some("Selected option 'Green' from dropdown at index 3")
    );
    let (state, _) = state_json(&tool).await;
    assert!(
        state["interactive_elements"]
            .as_str()
            .unwrap()
            .contains(r#"[3]<select name="color">Green</select>"#)
    );

    // The click in the iframe lands on the frame's button (index 4) without error.
    let frame_click = call(&tool, json!({"action": "click_element", "index": 4})).await;
    assert_eq!(
        frame_click.output.as_deref(),
        Some("Clicked element at index 4")
    );

    tool.cleanup().await.unwrap();
    tool.cleanup().await.unwrap();
    assert!(tool.browser_pid().await.is_none());
    common::assert_no_chromium_left(Some(pid)).await;
}

#[tokio::test]
async fn scrolling_reports_pixels_above_and_below() {
    let _serial = SERIAL.lock().await;
    let base = serve().await;
    let tool = tool();
    call(
        &tool,
        json!({"action": "go_to_url", "url": format!("{base}/long")}),
    )
    .await;
    let pid = tool.browser_pid().await.unwrap();
    let (state, _) = state_json(&tool).await;
    let viewport = state["viewport_height"].as_u64().unwrap();
    let total = state["scroll_info"]["total_height"].as_u64().unwrap();
    assert!(total > 5000, "{state}");
    assert_eq!(state["scroll_info"]["pixels_above"], 0);
    assert_eq!(
        state["scroll_info"]["pixels_below"].as_u64().unwrap(),
        total - viewport
    );

    let scrolled = call(
        &tool,
        json!({"action": "scroll_down", "scroll_amount": 1000}),
    )
    .await;
    assert_eq!(
        scrolled.output.as_deref(),
        Some("Scrolled down by 1000 pixels")
    );
    let (state, _) = state_json(&tool).await;
    assert_eq!(state["scroll_info"]["pixels_above"], 1000);
    assert_eq!(
        state["scroll_info"]["pixels_below"].as_u64().unwrap(),
        total - viewport - 1000
    );

    let up = call(&tool, json!({"action": "scroll_up", "scroll_amount": 400})).await;
    assert_eq!(up.output.as_deref(), Some("Scrolled up by 400 pixels"));
    let (state, _) = state_json(&tool).await;
    assert_eq!(state["scroll_info"]["pixels_above"], 600);

    let to_text = call(
        &tool,
        json!({"action": "scroll_to_text", "text": "end MARKER"}),
    )
    .await;
    assert_eq!(
        to_text.output.as_deref(),
        Some("Scrolled to text: 'end MARKER'")
    );
    let (state, _) = state_json(&tool).await;
    assert!(
        state["scroll_info"]["pixels_above"].as_u64().unwrap() > 3000,
        "{state}"
    );
    let absent = call(
        &tool,
        json!({"action": "scroll_to_text", "text": "nowhere to be seen"}),
    )
    .await;
    assert!(
        absent
            .error
            .unwrap()
            .starts_with("Failed to scroll to text: ")
    );

    tool.cleanup().await.unwrap();
    common::assert_no_chromium_left(Some(pid)).await;
}

#[tokio::test]
async fn tabs_keys_back_and_wait() {
    let _serial = SERIAL.lock().await;
    let base = serve().await;
    let tool = tool();
    call(
        &tool,
        json!({"action": "go_to_url", "url": format!("{base}/form")}),
    )
    .await;
    call(
        &tool,
        json!({"action": "go_to_url", "url": format!("{base}/long")}),
    )
    .await;
    let back = call(&tool, json!({"action": "go_back"})).await;
    assert_eq!(back.output.as_deref(), Some("Navigated back"));
    let (state, _) = state_json(&tool).await;
    assert_eq!(state["title"], "Form page");

    call(
        &tool,
        json!({"action": "input_text", "index": 1, "text": "ab"}),
    )
    .await;
    let keys = call(&tool, json!({"action": "send_keys", "keys": "Backspace"})).await;
    assert_eq!(keys.output.as_deref(), Some("Sent keys: Backspace"));
    let (state, _) = state_json(&tool).await;
    assert!(
        state["interactive_elements"]
            .as_str()
            .unwrap()
            .contains(r#"value="a""#),
        "{state}"
    );

    let opened = call(
        &tool,
        json!({"action": "open_tab", "url": format!("{base}/long")}),
    )
    .await;
    assert_eq!(
        opened.output.as_deref(),
        Some(format!("Opened new tab with {base}/long").as_str())
    );
    let (state, _) = state_json(&tool).await;
    assert_eq!(state["tabs"].as_array().unwrap().len(), 2);
    assert_eq!(state["title"], "Long");
    let switched = call(&tool, json!({"action": "switch_tab", "tab_id": 0})).await;
    assert_eq!(switched.output.as_deref(), Some("Switched to tab 0"));
    let (state, _) = state_json(&tool).await;
    assert_eq!(state["title"], "Form page");
    let no_tab = call(&tool, json!({"action": "switch_tab", "tab_id": 9})).await;
    assert_eq!(
        no_tab.error.as_deref(),
        Some("Browser action 'switch_tab' failed: No tab found with page_id: 9")
    );
    let closed = call(&tool, json!({"action": "close_tab"})).await;
    assert_eq!(closed.output.as_deref(), Some("Closed current tab"));
    let (state, _) = state_json(&tool).await;
    assert_eq!(state["tabs"].as_array().unwrap().len(), 1);
    assert_eq!(state["title"], "Long");

    let waited = call(&tool, json!({"action": "wait", "seconds": 0})).await;
    assert_eq!(waited.output.as_deref(), Some("Waited for 0 seconds"));
    let extract = call(
        &tool,
        json!({"action": "extract_content", "goal": "everything"}),
    )
    .await;
    assert!(
        extract
            .error
            .unwrap()
            .starts_with("Browser action 'extract_content' failed: ")
    );
    let search = call(&tool, json!({"action": "web_search", "query": "rust"})).await;
    assert!(
        search
            .error
            .unwrap()
            .starts_with("Browser action 'web_search' failed: ")
    );
    tool.cleanup().await.unwrap();
}

#[tokio::test]
async fn a_page_slower_than_chromiumoxide_s_30_s_is_waited_for_not_asked_again_and_may_fail() {
    let _serial = SERIAL.lock().await;
    let base = serve().await;
    let tool = BrowserUseTool::with_config(BrowserConfig {
        action_timeout: SLOW * 4,
        ..BrowserConfig::default()
    });
    let url = format!("{base}/slow");
    go_to(&tool, &url).await;
    let (state, _) = state_json(&tool).await;
    assert_eq!(state["title"], "Slow page");
    // Asked again, the navigation would have started over at every 30 s and never ended.
    assert_eq!(SLOW_REQUESTS.load(Ordering::SeqCst), 1);

    // A server that answers as late, with headers Chromium refuses (two lengths): its error
    // page is a failure.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let not_http = format!("http://{}/garbled", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0; 1024];
                let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut request).await;
                tokio::time::sleep(SLOW).await;
                let _ = tokio::io::AsyncWriteExt::write_all(&mut socket, TWO_LENGTHS).await;
            });
        }
    });
    let result = call(&tool, json!({"action": "go_to_url", "url": not_http})).await;
    let error = result.error.clone().unwrap_or_default();
    assert!(
        error.starts_with("Browser action 'go_to_url' failed: ")
            && error.contains("Chromium shows its error page"),
        "{result:?}"
    );
    tool.cleanup().await.unwrap();
}

#[tokio::test]
async fn a_page_that_never_loads_times_out_as_an_error_result() {
    let _serial = SERIAL.lock().await;
    let base = serve().await;
    let tool = BrowserUseTool::with_config(BrowserConfig {
        action_timeout: Duration::from_secs(2),
        ..BrowserConfig::default()
    });
    let result = call(
        &tool,
        json!({"action": "go_to_url", "url": format!("{base}/never")}),
    )
    .await;
    let error = result.error.unwrap();
    assert!(
        error.starts_with("Browser action 'go_to_url' failed: "),
        "{error}"
    );
    let pid = tool.browser_pid().await.unwrap();
    tool.cleanup().await.unwrap();
    common::assert_no_chromium_left(Some(pid)).await;
}

#[tokio::test]
async fn dropping_the_tool_kills_chromium() {
    let _serial = SERIAL.lock().await;
    let base = serve().await;
    let tool = tool();
    call(
        &tool,
        json!({"action": "go_to_url", "url": format!("{base}/long")}),
    )
    .await;
    let pid = tool.browser_pid().await.unwrap();
    drop(tool);
    common::assert_no_chromium_left(Some(pid)).await;
}

#[tokio::test]
async fn a_tool_call_agent_drives_the_browser() {
    use agent_core::Agent;
    use agent_testkit::{ScriptedModel, tool_call};
    use agent_toolcall::ToolCallAgent;

    let _serial = SERIAL.lock().await;
    let base = serve().await;
    let url = format!("{base}/form");
    let model = Arc::new(ScriptedModel::new());
    model.push_tool_calls(
        "",
        [tool_call(
            "c1",
            "browser_use",
            &json!({"action": "go_to_url", "url": url}).to_string(),
        )],
    );
    model.push_tool_calls(
        "",
        [tool_call("c2", "terminate", r#"{"status":"success"}"#)],
    );
    let mut agent = ToolCallAgent::new(model)
        .with_tool(tool())
        .with_max_steps(5);
    agent.run(Some("Open the form.".into())).await.unwrap();
    let observations: Vec<&str> = agent.messages().iter().map(|m| m.text()).collect();
    assert!(
        observations.contains(
            &format!("Observed output of cmd `browser_use` executed:\nNavigated to {url}").as_str()
        ),
        "{observations:#?}"
    );
    // The run's end cleaned the tool up: no Chromium is left.
    common::assert_no_chromium_left(None).await;
    assert!(processes_with(PROFILE_MARK).is_empty());
}

#[tokio::test]
async fn attaching_over_cdp_url_uses_the_running_browser_and_leaves_it_running() {
    let _serial = SERIAL.lock().await;
    let base = serve().await;
    let profile = tempfile::Builder::new()
        .prefix("external-chromium-")
        .tempdir()
        .unwrap();
    let executable = BrowserConfig::default().resolve_executable().unwrap();
    let mut external = std::process::Command::new(executable)
        .args(agent_browser::QUIET_FLAGS)
        .arg("--headless")
        .arg("--remote-debugging-port=0")
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let port_file = profile.path().join("DevToolsActivePort");
    let mut port = String::new();
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(&port_file)
            && let Some(line) = text.lines().next()
        {
            port = line.to_owned();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!port.is_empty(), "the external Chromium wrote its port");

    let tool = BrowserUseTool::with_config(BrowserConfig {
        connect_url: Some(format!("http://127.0.0.1:{port}")),
        action_timeout: Duration::from_secs(20),
        ..BrowserConfig::default()
    });
    let url = format!("{base}/form");
    go_to(&tool, &url).await;
    assert_eq!(tool.browser_pid().await, None, "nothing was launched");
    assert!(processes_with(PROFILE_MARK).is_empty());
    let (state, _) = state_json(&tool).await;
    assert_eq!(state["title"], "Form page");

    // Cleanup closes our tab and leaves the browser running.
    tool.cleanup().await.unwrap();
    // The browser drops a closed target from its list shortly after the close.
    let mut urls = Vec::new();
    for _ in 0..100 {
        let targets: Value = reqwest_free_get(&format!("127.0.0.1:{port}"), "/json/list").await;
        urls = targets
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["url"].as_str().map(str::to_owned))
            .collect();
        if !urls.contains(&url) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!urls.contains(&url), "{urls:?}");
    assert!(
        external.try_wait().unwrap().is_none(),
        "the browser still runs"
    );
    external.kill().unwrap();
    external.wait().unwrap();
}

/// A GET over a plain TCP connection (no HTTP client crate in this crate's tests); reads the
/// body by its Content-Length.
async fn reqwest_free_get(host: &str, path: &str) -> Value {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let work = async {
        let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut reader = BufReader::new(stream);
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).await.unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await.unwrap();
        serde_json::from_slice(&body).unwrap()
    };
    tokio::time::timeout(Duration::from_secs(10), work)
        .await
        .expect("the DevTools HTTP endpoint answered")
}

/// A forward proxy on loopback that asks for Basic credentials (`user:secret`) and answers
/// every proxied GET itself with a page naming the URL it was asked for. Returns its address
/// and the request lines it served.
async fn auth_proxy() -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let served = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = served.clone();
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("user:secret")
    );
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            let expected = expected.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut lines = BufReader::new(read).lines();
                loop {
                    let Ok(Some(request_line)) = lines.next_line().await else {
                        return;
                    };
                    let mut authorized = false;
                    while let Ok(Some(line)) = lines.next_line().await {
                        if line.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("proxy-authorization")
                        {
                            authorized = value.trim() == expected;
                        }
                    }
                    let response = if authorized {
                        log.lock().unwrap().push(request_line.clone());
                        let body =
                            format!("<!doctype html><title>via proxy</title><p>{request_line}</p>");
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        )
                    } else {
                        "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n".to_owned()
                    };
                    if write.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, served)
}

#[tokio::test]
async fn browser_proxy_settings_route_pages_through_an_authenticating_proxy() {
    let _serial = SERIAL.lock().await;
    let (proxy, served) = auth_proxy().await;
    let settings: agent_config::BrowserSettings = toml_browser(&format!(
        "headless = true\nextra_chromium_args = [\"--proxy-bypass-list=<-loopback>\"]\n\
         [proxy]\nserver = \"http://{proxy}\"\nusername = \"user\"\npassword = \"secret\"\n"
    ));
    let tool = BrowserUseTool::with_config(BrowserConfig {
        action_timeout: Duration::from_secs(20),
        ..BrowserConfig::from_settings(&settings)
    });
    let url = "http://shop.example.test/prices";
    go_to(&tool, url).await;
    let (state, _) = state_json(&tool).await;
    assert_eq!(state["title"], "via proxy");
    assert_eq!(
        served.lock().unwrap().first().map(String::as_str),
        Some(format!("GET {url} HTTP/1.1").as_str())
    );
    let pid = tool.browser_pid().await.unwrap();
    tool.cleanup().await.unwrap();
    common::assert_no_chromium_left(Some(pid)).await;
}

/// `[browser]` settings from the TOML of a `[browser]` section's body.
fn toml_browser(body: &str) -> agent_config::BrowserSettings {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let indented: String = body
        .lines()
        .map(|line| {
            if let Some(table) = line.strip_prefix('[') {
                format!("[browser.{table}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    std::fs::write(
        &path,
        format!("[llm]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:1/v1\"\napi_key = \"k\"\n[browser]\n{indented}"),
    )
    .unwrap();
    agent_config::Config::from_file(&path).unwrap().browser
}
