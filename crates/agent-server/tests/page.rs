//! The web page driven end to end in headless Chromium: a session made in the page, a Manus task
//! typed and sent, its steps appearing live, an `ask_human` question answered in the page (its
//! form hit-tested wherever the page is scrolled, then answered by mouse clicks at coordinates),
//! a reload while the run waits (every stored event shown once, in order), the created file
//! listed, and a second task cancelled; a call the sandbox refused approved with the page's
//! buttons. Screenshots go to `target/e2e/` for review.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_browser::{Browser, BrowserConfig};
use agent_testkit::{Completion, Fault, MockReply};
use chromiumoxide::Page;
use chromiumoxide::layout::Point;
use chromiumoxide::page::ScreenshotParams;
use common::{LocalService, PATIENCE, TestServer, call};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

/// Where the screenshots go: `target/e2e/` next to the test binary's profile directory.
fn artifacts() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test binary>
    let target = exe
        .ancestors()
        .nth(3)
        .map_or_else(std::env::temp_dir, PathBuf::from);
    let dir = target.join("e2e");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn eval<T: DeserializeOwned>(page: &Page, expression: &str) -> T {
    page.evaluate(expression)
        .await
        .unwrap_or_else(|e| panic!("evaluating {expression}: {e}"))
        .into_value()
        .unwrap_or_else(|e| panic!("reading {expression}: {e}"))
}

/// Waits until `expression` is true in the page (polled; the bound is generous).
async fn until(page: &Page, what: &str, expression: &str) {
    let started = Instant::now();
    loop {
        let value: bool = page
            .evaluate(format!("Boolean({expression})"))
            .await
            .ok()
            .and_then(|v| v.into_value().ok())
            .unwrap_or(false);
        if value {
            return;
        }
        if started.elapsed() > PATIENCE {
            let body: String = eval(page, "document.body.innerText").await;
            panic!("gave up waiting for {what}; the page shows:\n{body}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn click(page: &Page, selector: &str) {
    page.find_element(selector)
        .await
        .unwrap_or_else(|e| panic!("{selector}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("clicking {selector}: {e}"));
}

async fn type_into(page: &Page, selector: &str, text: &str) {
    page.find_element(selector)
        .await
        .unwrap_or_else(|e| panic!("{selector}: {e}"))
        .click()
        .await
        .unwrap()
        .type_str(text)
        .await
        .unwrap_or_else(|e| panic!("typing into {selector}: {e}"));
}

/// Where a reader may have scrolled while the agent waits: a name, and the script that scrolls
/// there (instantly).
const SCROLLS: [(&str, &str); 5] = [
    ("where the page left it", ""),
    ("at the top of the page", "window.scrollTo(0, 0)"),
    (
        "with the middle of the feed at the viewport's centre",
        "document.getElementById('feed').scrollIntoView({block: 'center'})",
    ),
    (
        "with the question's end brought to the viewport's bottom",
        "document.getElementById('question').scrollIntoView({block: 'end'})",
    ),
    (
        "at the bottom of the page",
        "window.scrollTo(0, document.documentElement.scrollHeight)",
    ),
];

/// What is under the centre of an element: what a mouse click there would land on.
#[derive(Debug, Deserialize)]
struct Hit {
    /// The element's id.
    id: String,
    /// The centre of its bounding rect, in viewport pixels.
    x: f64,
    y: f64,
    /// What `document.elementFromPoint` found there: `#id`, else `tag.class`; none when the
    /// point is outside the viewport.
    found: Option<String>,
    /// Whether that is the element or inside it.
    inside: bool,
}

impl Hit {
    fn point(&self) -> Point {
        Point {
            x: self.x,
            y: self.y,
        }
    }
}

/// Scrolls with `scroll`, then hit-tests the centre of each element of `ids`.
async fn hit_test(page: &Page, scroll: &str, ids: &[&str]) -> (Vec<Hit>, String) {
    let ids = serde_json::to_string(ids).unwrap();
    let script = format!(
        "(() => {{
            {scroll};
            const hits = {ids}.map((id) => {{
                const node = document.getElementById(id);
                const rect = node.getBoundingClientRect();
                const x = rect.left + rect.width / 2, y = rect.top + rect.height / 2;
                const found = document.elementFromPoint(x, y);
                const name = found && (found.id ? `#${{found.id}}` : `${{found.tagName.toLowerCase()}}.${{found.className}}`);
                return {{ id, x, y, found: name, inside: Boolean(found) && node.contains(found) }};
            }});
            const view = `viewport ${{innerWidth}}x${{innerHeight}}, scrolled to ${{scrollY}} of ${{document.documentElement.scrollHeight}}`;
            return [hits, view];
        }})()"
    );
    eval(page, &script).await
}

/// The answer input and the Answer button are each what a click at its centre lands on, wherever
/// the reader has scrolled (nothing covers a form the agent waits on, and it is on screen).
async fn answer_form_is_uncovered(page: &Page, when: &str) {
    form_is_uncovered(page, when, &["answer", "answer-button"]).await;
}

/// Each element of `ids` is what a click at its centre lands on, wherever the reader has
/// scrolled.
async fn form_is_uncovered(page: &Page, when: &str, ids: &[&str]) {
    for (position, scroll) in SCROLLS {
        let (hits, view) = hit_test(page, scroll, ids).await;
        for hit in hits {
            assert!(
                hit.inside,
                "{when}, {position}: a click at the centre of #{} ({:.0}, {:.0}) lands on {} ({view})",
                hit.id,
                hit.x,
                hit.y,
                hit.found.as_deref().unwrap_or("nothing: it is off screen"),
            );
        }
    }
}

/// Clicks the centre of the element `id` with the mouse, where it is now (no scrolling), after
/// checking that the click lands on it.
async fn click_at_centre(page: &Page, id: &str) {
    let (hits, view) = hit_test(page, "", &[id]).await;
    let hit = &hits[0];
    assert!(
        hit.inside,
        "a click at the centre of #{id} ({:.0}, {:.0}) would land on {:?} ({view})",
        hit.x, hit.y, hit.found
    );
    page.click(hit.point())
        .await
        .unwrap_or_else(|e| panic!("clicking at the centre of #{id}: {e}"));
}

/// Headless Chromium with a `width` x `height` viewport.
async fn chromium(width: u32, height: u32) -> Browser {
    Browser::launch(&BrowserConfig {
        viewport_width: width,
        viewport_height: height,
        launch_timeout: PATIENCE,
        action_timeout: PATIENCE,
        ..BrowserConfig::default()
    })
    .await
    .expect("headless Chromium (the chromium package) is needed for the page test")
}

/// A tab on the view of the session `id`, once the page's script shows it.
async fn session_page(browser: &mut Browser, server: &TestServer, id: &str) -> Page {
    let page = browser
        .open_tab(&format!("{}/#{id}", server.url))
        .await
        .unwrap()
        .clone();
    until(
        &page,
        "the session view",
        "window.openmanus && window.openmanus.current",
    )
    .await;
    page
}

/// Gives the session `id` the task `task` through the API.
async fn send_task(server: &TestServer, id: &str, task: &str) {
    let (status, body) = server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({ "task": task }),
        )
        .await;
    assert_eq!(status, 202, "{body}");
}

async fn screenshot(page: &Page, name: &str) {
    let path = artifacts().join(name);
    page.save_screenshot(ScreenshotParams::builder().full_page(true).build(), &path)
        .await
        .unwrap_or_else(|e| panic!("screenshot {name}: {e}"));
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 1000, "{name} is only {size} bytes");
}

/// The ids of the session's stored events, in order.
async fn stored_ids(server: &TestServer, id: &str) -> Vec<i64> {
    server
        .hub
        .store()
        .events_after(id, None, 100_000)
        .await
        .unwrap()
        .iter()
        .map(|e| e.id)
        .collect()
}

/// What the page has shown: the event ids in arrival order, and how many came twice.
async fn shown(page: &Page) -> (Vec<i64>, u64) {
    let order: Vec<i64> = eval(page, "window.openmanus.order").await;
    let repeats: u64 = eval(page, "window.openmanus.repeats").await;
    (order, repeats)
}

#[tokio::test]
async fn the_page_runs_a_task_answers_a_question_survives_a_reload_and_cancels() {
    let server = TestServer::start().await;
    let mut browser = chromium(1100, 900).await;
    let page = browser.open_tab(&server.url).await.unwrap().clone();
    until(&page, "the page script", "window.openmanus").await;

    // A new Manus session, made in the page.
    page.find_element("#new-agent")
        .await
        .unwrap()
        .call_js_fn("function() { this.value = 'manus'; }", false)
        .await
        .unwrap();
    click(&page, "#new-button").await;
    until(
        &page,
        "the session view",
        "!document.getElementById('session').hidden && window.openmanus.current",
    )
    .await;
    let id: String = eval(&page, "window.openmanus.current").await;
    let (_, session) = server.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(session["agent"], "manus", "{session}");
    let workspace = PathBuf::from(session["workspace"].as_str().unwrap());

    // The model asks whom to greet, writes the greeting to a file, and finishes. It thinks at
    // length first, as in a long run: the page scrolls, and the question comes at its end.
    let task = "Write a greeting for someone";
    let greeting = workspace.join("greeting.txt");
    let mut thinking = String::from("First I need a **name**. What I will do:\n\n");
    for n in 1..=40 {
        thinking.push_str(&format!("{n}. a step of the plan, on a line of its own\n"));
    }
    server
        .mock
        .push_for(
            task,
            Completion::tool_calls(
                Some(thinking),
                [call(
                    "q1",
                    "ask_human",
                    &json!({"inquire": "Whom should I greet?"}),
                )],
            )
            .with_usage(120, 12),
        )
        .push_for(
            task,
            Completion::tool_calls(
                Some("Writing the greeting.".into()),
                [call(
                    "w1",
                    "str_replace_editor",
                    &json!({"command": "create", "path": greeting, "file_text": "Hello, Ada!\n"}),
                )],
            )
            .with_usage(160, 20),
        )
        .push_for(
            task,
            Completion::tool_calls(
                Some("The greeting is in `greeting.txt`.".into()),
                [call("t1", "terminate", &json!({"status": "success"}))],
            )
            .with_usage(190, 8),
        );
    type_into(&page, "#task-text", task).await;
    click(&page, "#send").await;

    // The first step shows up live, with its thought rendered and the question asked.
    until(
        &page,
        "the first step",
        "document.querySelector('#feed article.step .thought strong')",
    )
    .await;
    until(
        &page,
        "the question",
        "!document.getElementById('question').hidden && document.getElementById('question-text').textContent === 'Whom should I greet?'",
    )
    .await;
    until(
        &page,
        "the long first step to make the page scroll",
        "document.documentElement.scrollHeight > innerHeight * 1.5",
    )
    .await;
    answer_form_is_uncovered(&page, "when the question comes").await;
    screenshot(&page, "serve-question.png").await;

    // Reload while the run waits: the page replays the session and shows each event once.
    // Asked of the page, the new document awaited: chromiumoxide's `reload` waits for a
    // navigation event it can miss, and then waits for ever (it held a CI run).
    let _: bool = eval(
        &page,
        "(window.beforeReload = true, setTimeout(() => location.reload(), 0), true)",
    )
    .await;
    until(
        &page,
        "the reloaded page",
        "!window.beforeReload && document.readyState === 'complete'",
    )
    .await;
    until(
        &page,
        "the session after the reload",
        "window.openmanus && window.openmanus.current",
    )
    .await;
    until(
        &page,
        "the question after the reload",
        "!document.getElementById('question').hidden",
    )
    .await;
    let stored = stored_ids(&server, &id).await;
    until(
        &page,
        "the replay",
        &format!("window.openmanus.order.length >= {}", stored.len()),
    )
    .await;
    let (order, repeats) = shown(&page).await;
    assert_eq!(
        order, stored,
        "after the reload the page shows the store's events"
    );
    assert_eq!(repeats, 0);

    // The answer, typed in the page, reaches the model as the tool's result. The form is hit-tested
    // again, then used with the mouse where it is, the page scrolled as when the question's end
    // is brought to the viewport's bottom (where a box over the page's bottom would cover it).
    answer_form_is_uncovered(&page, "after the reload").await;
    let _: bool = eval(
        &page,
        "(document.getElementById('question').scrollIntoView({block: 'end'}), document.activeElement.blur(), true)",
    )
    .await;
    click_at_centre(&page, "answer").await;
    let focused: String = eval(&page, "document.activeElement.id").await;
    assert_eq!(focused, "answer", "the click on the answer box focuses it");
    page.find_element("#answer")
        .await
        .unwrap()
        .type_str("Ada")
        .await
        .unwrap();
    let typed: (String, String) = eval(
        &page,
        "[document.getElementById('answer').value, document.getElementById('task-text').value]",
    )
    .await;
    assert_eq!(typed, ("Ada".to_owned(), String::new()));
    click_at_centre(&page, "answer-button").await;
    until(
        &page,
        "the final answer",
        "document.querySelector('#feed .answer .answer-text code')",
    )
    .await;
    until(
        &page,
        "the file in the workspace list",
        "document.querySelector('#files li[data-path=\"greeting.txt\"]')",
    )
    .await;
    assert_eq!(std::fs::read_to_string(&greeting).unwrap(), "Hello, Ada!\n");
    // The answered question is gone, and the head says what the run did.
    until(
        &page,
        "the question box to go",
        "getComputedStyle(document.getElementById('question')).display === 'none'",
    )
    .await;
    let head: (String, String) = eval(
        &page,
        "[document.getElementById('session-title').textContent, document.getElementById('session-state').textContent]",
    )
    .await;
    assert_eq!(head, (task.to_owned(), "manus · finished".to_owned()));
    let answered = &server.mock.requests()[1];
    assert!(
        answered
            .messages()
            .iter()
            .any(|m| m["role"] == "tool"
                && m["content"].as_str().unwrap_or_default().contains("Ada")),
        "{:?}",
        answered.messages()
    );
    let calls: u64 = eval(
        &page,
        "document.querySelectorAll('#feed .call[data-call=\"w1\"]').length",
    )
    .await;
    assert_eq!(calls, 1, "the editor call is shown once");
    // Tokens and cost (gpt-4o's shipped price) for the session, and the run's on its card.
    let usage: String = eval(&page, "document.getElementById('usage').textContent").await;
    let price = agent_llm::default_price("gpt-4o").expect("gpt-4o has a price");
    let cost = |prompt, completion| {
        price.cost(&agent_llm::TokenUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            ..agent_llm::TokenUsage::default()
        })
    };
    let dollars = |text: &str, prefix: &str| -> f64 {
        let rest = text
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{text:?} does not start with {prefix:?}"));
        rest.parse().unwrap_or_else(|e| panic!("{text:?}: {e}"))
    };
    let shown_cost = dollars(&usage, "470 in · 40 out · $");
    assert!((shown_cost - cost(470, 40)).abs() < 0.0001, "{usage}");
    let run_usage: String = eval(
        &page,
        "document.querySelector('#feed .answer .run-usage').textContent",
    )
    .await;
    let run_cost = dollars(&run_usage, "470 in · 40 out · $");
    assert!((run_cost - cost(470, 40)).abs() < 0.0001, "{run_usage}");
    let stored = stored_ids(&server, &id).await;
    let (order, repeats) = shown(&page).await;
    assert_eq!(
        order, stored,
        "live events continue the replay without a gap"
    );
    assert_eq!(repeats, 0);
    screenshot(&page, "serve-finished.png").await;

    // A second task whose model never answers, cancelled from the page. (The mock keys a
    // conversation by its first task, which the second task continues.)
    let second = "Think for ever";
    server.mock.push_for(task, MockReply::Fault(Fault::Hang));
    type_into(&page, "#task-text", second).await;
    click(&page, "#send").await;
    until(
        &page,
        "the cancel button",
        "!document.getElementById('cancel').hidden",
    )
    .await;
    server.mock.wait_for_requests(4).await;
    click(&page, "#cancel").await;
    until(
        &page,
        "the cancelled run",
        "document.querySelectorAll('#feed .answer').length === 2 && document.querySelector('#feed .answer:last-of-type').classList.contains('failed')",
    )
    .await;
    let last: String = eval(
        &page,
        "[...document.querySelectorAll('#feed .answer')].pop().textContent",
    )
    .await;
    assert!(last.to_lowercase().contains("cancel"), "{last}");
    let badge: String = eval(
        &page,
        "document.getElementById('session-state').textContent",
    )
    .await;
    assert_eq!(badge, "manus · cancelled");
    until(
        &page,
        "the send button again",
        "!document.getElementById('send').disabled",
    )
    .await;
    let (_, runs) = server.get(&format!("/api/sessions/{id}")).await;
    let states: Vec<String> = runs["run_list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(states, ["finished", "cancelled"], "{runs}");
    screenshot(&page, "serve-cancelled.png").await;

    browser.close().await;
    server.mock.verify().unwrap();
    server.stop().await;
}

#[tokio::test]
async fn a_browser_screenshot_the_model_sees_is_shown_in_the_page() {
    let server = TestServer::start().await;
    let id = server.create("manus").await;
    // Manus opens a page in its own Chromium; its next step carries the screenshot.
    let task = "Look at the health page";
    server
        .mock
        .push_for(
            task,
            Completion::tool_calls(
                Some("Opening it.".into()),
                [call(
                    "b1",
                    "browser_use",
                    &json!({"action": "go_to_url", "url": format!("{}/api/health", server.url)}),
                )],
            ),
        )
        .push_for(
            task,
            Completion::tool_calls(
                Some("Seen.".into()),
                [call("t1", "terminate", &json!({"status": "success"}))],
            ),
        );
    let mut browser = chromium(1280, 1100).await;
    let page = session_page(&mut browser, &server, &id).await;
    send_task(&server, &id, task).await;
    until(
        &page,
        "the final answer",
        "document.querySelector('#feed .answer')",
    )
    .await;
    // The model got an image, and the page shows the same picture, decoded.
    let sent_image = server.mock.requests()[1].messages().iter().any(|m| {
        m["content"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p["type"] == "image_url"))
    });
    assert!(sent_image, "the second request carries the screenshot");
    until(
        &page,
        "the screenshot in the feed",
        "[...document.querySelectorAll('#feed figure.shot img')].some((img) => img.complete && img.naturalWidth > 100)",
    )
    .await;
    let stored = stored_ids(&server, &id).await;
    let (order, repeats) = shown(&page).await;
    assert_eq!(order, stored);
    assert_eq!(repeats, 0);
    screenshot(&page, "serve-screenshot.png").await;
    browser.close().await;
    server.mock.verify().unwrap();
    server.stop().await;
}

#[tokio::test]
async fn a_call_the_sandbox_refused_is_approved_from_the_page() {
    // The tools run in the default sandbox (workspace-write, no network) with the default
    // policy (on-request): a call that needs the network is asked about in the page.
    let server = TestServer::start().await;
    let id = server.create("manus").await;
    let service = LocalService::start();
    let code = service.python_client("hello from the tool");
    let task = "Tell the local service hello";
    server
        .mock
        .push_for(
            task,
            Completion::tool_calls(
                Some("Connecting.".into()),
                [call("p1", "python_execute", &json!({ "code": code }))],
            ),
        )
        .push_for(
            task,
            Completion::tool_calls(
                Some("Done.".into()),
                [call("t1", "terminate", &json!({"status": "success"}))],
            ),
        );
    let mut browser = chromium(1100, 700).await;
    let page = session_page(&mut browser, &server, &id).await;
    send_task(&server, &id, task).await;

    // The question names the tool and shows the code; it is answered with buttons only.
    until(
        &page,
        "the approval question with its buttons",
        "!document.getElementById('question').hidden && document.getElementById('choice-once')",
    )
    .await;
    let question: (String, Vec<String>, bool) = eval(
        &page,
        "[document.getElementById('question-text').textContent, \
          [...document.querySelectorAll('#choices button')].map((b) => b.textContent), \
          document.getElementById('free-answer').hidden]",
    )
    .await;
    assert!(question.0.contains("`python_execute`"), "{question:?}");
    assert!(question.0.contains("create_connection"), "{question:?}");
    assert_eq!(
        question.1,
        [
            "Allow once",
            "Allow for this session",
            "Always allow (a rule)",
            "Deny"
        ],
    );
    assert!(question.2, "no free-text box for an approval");
    form_is_uncovered(
        &page,
        "when the approval is asked",
        &[
            "choice-once",
            "choice-session",
            "choice-always",
            "choice-deny",
        ],
    )
    .await;
    screenshot(&page, "serve-approval.png").await;
    click_at_centre(&page, "choice-once").await;

    // Allowed once: the call ran again with the network, and the local service heard it.
    assert_eq!(service.heard().await, "hello from the tool");
    until(
        &page,
        "the final answer",
        "document.querySelector('#feed .answer')",
    )
    .await;
    let audit: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('#feed .call[data-call=\"p1\"] .permission.allowed')].map((p) => p.textContent)",
    )
    .await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert!(audit[0].contains("allowed by person"), "{audit:?}");
    assert!(audit[0].contains("allowed once"), "{audit:?}");
    let observed = server.mock.requests()[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        observed.contains("without the sandbox (allowed)"),
        "{observed}"
    );
    assert!(observed.contains("sent"), "{observed}");
    let hidden: bool = eval(&page, "document.getElementById('question').hidden").await;
    assert!(hidden, "the answered question is gone");
    screenshot(&page, "serve-approved.png").await;
    browser.close().await;
    server.mock.verify().unwrap();
    server.stop().await;
}
