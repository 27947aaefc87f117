//! BrowserAgent stuck: the change-of-strategy hint is in the request once, in front of the
//! browser prompt (issue 14 item 9). No page is opened, so no browser starts: the prompt's
//! fields read `N/A`.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_browser::{BrowserUseTool, browser_agent};
use agent_core::{Agent, STUCK_PROMPT};
use agent_testkit::ScriptedModel;

#[tokio::test]
async fn a_stuck_browser_agent_sends_the_stuck_hint_once() {
    let model = Arc::new(ScriptedModel::new());
    for _ in 0..4 {
        model.push_text("Still thinking about the page.");
    }
    let mut agent = browser_agent(model.clone(), BrowserUseTool::new()).with_max_steps(4);
    agent
        .run(Some("Find the opening hours.".into()))
        .await
        .unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let last_texts: Vec<&str> = requests
        .iter()
        .map(|r| r.messages.last().unwrap().text())
        .collect();
    for text in &last_texts[..3] {
        assert!(text.contains("Browser state:"), "{text}");
        assert!(!text.contains(STUCK_PROMPT), "not stuck yet: {text}");
    }
    let stuck = last_texts[3];
    assert!(stuck.starts_with(STUCK_PROMPT), "{stuck}");
    assert_eq!(stuck.matches(STUCK_PROMPT).count(), 1, "{stuck}");
    assert!(stuck.contains("Browser state:"), "{stuck}");
}
