//! Manus and the browser: `browser_use` is one of its tools, and while one of its last three
//! messages calls it, the step's prompt is the browser prompt with the live state (and, for a
//! model that reads images, the latest screenshot). Real headless Chromium on a `data:` page.

#![cfg(feature = "browser")]
// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_core::{Agent, Role};
use agent_llm::ChatRequest;
use agent_testkit::{ScriptedModel, tool_call};
use agents::prompts::MANUS_NEXT_STEP_PROMPT;
use agents::{AgentOptions, manus};
use serde_json::json;

const PAGE: &str = "data:text/html,<title>Shop</title><a href='%23top'>Top</a><input name=q>";

fn last_user_text(request: &ChatRequest) -> &str {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User && m.base64_image.is_none())
        .map(|m| m.text())
        .unwrap_or_default()
}

#[tokio::test]
async fn manus_switches_to_the_browser_prompt_while_it_browses() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new().with_images(true));
    model
        .push_tool_calls(
            "",
            [tool_call(
                "b1",
                "browser_use",
                &json!({"action": "go_to_url", "url": PAGE}).to_string(),
            )],
        )
        .push_tool_calls(
            "",
            [tool_call("p1", "python_execute", r#"{"code": "print(1)"}"#)],
        )
        .push_tool_calls(
            "",
            [tool_call("t1", "terminate", r#"{"status": "success"}"#)],
        );
    let mut agent = manus(model.clone(), &AgentOptions::new(dir.path()));
    let outcome = agent.run(Some("Look at the shop.".into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[0].tool_names(),
        [
            "python_execute",
            "browser_use",
            "str_replace_editor",
            "ask_human",
            "terminate"
        ]
    );
    // Before any browsing: Manus's own prompt.
    assert_eq!(last_user_text(&requests[0]), MANUS_NEXT_STEP_PROMPT);
    // Right after browsing: the browser prompt, filled from the live page.
    let browsing = last_user_text(&requests[1]);
    assert!(browsing.contains("URL: data:text/html"), "{browsing}");
    assert!(browsing.contains("Title: Shop"), "{browsing}");
    assert!(browsing.contains("1 tab(s) available"), "{browsing}");
    assert!(
        browsing.contains(r#"[1]<input name="q"></input>"#),
        "{browsing}"
    );
    let screenshot = requests[1]
        .messages
        .iter()
        .find(|m| m.base64_image.is_some())
        .expect("the screenshot goes to a model that reads images");
    assert_eq!(screenshot.text(), agent_browser::SCREENSHOT_MESSAGE);
    // Three messages after the browser call, Manus's prompt is back.
    assert_eq!(last_user_text(&requests[2]), MANUS_NEXT_STEP_PROMPT);
}

#[tokio::test]
async fn a_model_without_vision_gets_the_state_but_no_screenshot() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new());
    model
        .push_tool_calls(
            "",
            [tool_call(
                "b1",
                "browser_use",
                &json!({"action": "go_to_url", "url": PAGE}).to_string(),
            )],
        )
        .push_tool_calls(
            "",
            [tool_call("t1", "terminate", r#"{"status": "success"}"#)],
        );
    let mut agent = manus(model.clone(), &AgentOptions::new(dir.path()));
    assert!(agent.run(Some("Look.".into())).await.unwrap().is_finished());
    let requests = model.requests();
    assert!(last_user_text(&requests[1]).contains("Title: Shop"));
    assert!(
        requests
            .iter()
            .all(|r| r.messages.iter().all(|m| m.base64_image.is_none()))
    );
}
