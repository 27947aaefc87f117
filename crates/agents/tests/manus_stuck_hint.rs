//! Manus stuck while it browses: the change-of-strategy hint reaches the model once, in front of
//! the browser prompt (issue 14 item 9). The repeated `browser_use` call lacks its index, so it
//! fails before any browser starts and the prompt's fields read `N/A`.

#![cfg(feature = "browser")]
// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_core::{Agent, STUCK_PROMPT};
use agent_testkit::{ScriptedModel, tool_call};
use agents::{AgentOptions, manus};

#[tokio::test]
async fn manus_stuck_while_browsing_sends_the_stuck_hint_once() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new());
    for i in 0..3 {
        model.push_tool_calls(
            "Clicking the button.",
            [tool_call(
                &format!("b{i}"),
                "browser_use",
                r#"{"action": "click_element"}"#,
            )],
        );
    }
    model.push_tool_calls(
        "Done.",
        [tool_call("t", "terminate", r#"{"status": "success"}"#)],
    );
    let mut agent = manus(model.clone(), &AgentOptions::new(dir.path()));
    let outcome = agent.run(Some("Press the button.".into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());

    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let hints: Vec<usize> = requests
        .iter()
        .map(|r| {
            r.messages
                .iter()
                .map(|m| m.text().matches(STUCK_PROMPT).count())
                .sum()
        })
        .collect();
    assert_eq!(hints, [0, 0, 0, 1], "stuck after the third identical call");
    let stuck = requests[3].messages.last().unwrap().text();
    assert!(stuck.starts_with(STUCK_PROMPT), "{stuck}");
    assert!(
        stuck.contains("Browser state:"),
        "the browser prompt: {stuck}"
    );
}
