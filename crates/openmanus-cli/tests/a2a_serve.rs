//! Delegation between two `openmanus serve` processes: the lead's config lists the helper under
//! `[[a2a.agents]]`, the lead's Manus hands a sub-task to it through `a2a_call`, and uses the
//! artifact it gets back in its own answer. Each server has its own strict mock model.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use crate::common::Delegation;

#[tokio::test]
async fn one_openmanus_serve_delegates_a_sub_task_to_another_over_a2a() {
    let Delegation {
        helper_mock,
        lead_mock,
        mut helper,
        mut lead,
        // Kept to the end: the servers run in them.
        helper_dir: _helper_dir,
        lead_dir,
        reply,
    } = Delegation::run(
        |dir| format!("\n[store]\npath = \"{}\"\n", dir.join("lead.db").display()),
        Vec::new(),
    )
    .await;
    let task = &reply["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{reply}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], "The adder says 7.",
        "{reply}"
    );
    // The lead's model got the helper's artifact as the tool's result.
    let observation = lead_mock.requests()[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_owned();
    assert!(observation.contains("The sum is 7."), "{observation}");
    // The helper ran the sub-task as its own task.
    assert!(
        helper_mock.requests()[0]
            .messages()
            .iter()
            .any(|m| m["content"]
                .as_str()
                .is_some_and(|c| c.contains("Add 3 and 4"))),
        "{:?}",
        helper_mock.requests()[0].messages()
    );
    // The helper's statuses reached the lead's run as the call's progress, in order.
    let store = agent_store::Store::open(lead_dir.path().join("lead.db"))
        .await
        .unwrap();
    let session = task["contextId"].as_str().unwrap();
    let progress: Vec<String> = store
        .events_after(session, None, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.data["type"] == "tool_progress")
        .map(|e| {
            assert_eq!(e.data["call_id"], "d");
            assert_eq!(e.data["name"], "a2a_call");
            e.data["message"].as_str().unwrap().to_owned()
        })
        .collect();
    let working = progress
        .iter()
        .position(|m| m == "adder: working: The sum is 7.")
        .unwrap_or_else(|| panic!("{progress:?}"));
    let completed = progress
        .iter()
        .position(|m| m == "adder: completed")
        .unwrap_or_else(|| panic!("{progress:?}"));
    assert!(working < completed, "{progress:?}");
    helper_mock.verify().unwrap();
    lead_mock.verify().unwrap();
    lead.kill().await.unwrap();
    helper.kill().await.unwrap();
}
