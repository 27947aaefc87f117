//! Delegation over A2A: one `openmanus serve` whose Manus has `[a2a]` agents hands a sub-task
//! through `a2a_call` to a second `openmanus serve` (each with its own strict mock model, both
//! over real HTTP) and uses the artifact it gets back.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_config::A2aAgentSettings;
use agent_testkit::Completion;
use common::{TestServer, call};
use serde_json::{Value, json};

fn finish(text: &str) -> Completion {
    Completion::tool_calls(
        Some(text.into()),
        [call("t", "terminate", &json!({"status": "success"}))],
    )
}

async fn send(server: &TestServer, text: &str) -> Value {
    let (status, reply) = server
        .post(
            "/a2a",
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
                "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]}}}),
        )
        .await;
    assert_eq!(status, 200, "{reply}");
    reply
}

#[tokio::test]
async fn one_server_delegates_a_sub_task_to_another_through_a2a_call() {
    let helper = TestServer::start().await;
    helper.mock.push(finish("The sum is 7."));
    let helper_url = helper.url.clone();
    let lead = TestServer::start_configured(
        |_| {},
        |config| {
            config.a2a.agents.push(A2aAgentSettings {
                name: "adder".into(),
                url: helper_url,
                description: "adds numbers".into(),
                token_env: None,
            });
        },
    )
    .await;
    lead.mock
        .push(Completion::tool_calls(
            None,
            [call(
                "d",
                "a2a_call",
                &json!({"agent": "adder", "message": "Add 3 and 4"}),
            )],
        ))
        .push(finish("The adder says 7."));

    let reply = send(&lead, "What is 3 + 4? Ask the adder.").await;
    let task = &reply["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{reply}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "The adder says 7."
    );

    // The lead's model was offered a2a_call with the configured agent, and got the helper's
    // artifact as the observation.
    let requests = lead.mock.requests();
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"a2a_call"), "{tools:?}");
    let observation = requests[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_owned();
    assert!(observation.contains("The sum is 7."), "{observation}");
    assert!(observation.contains("completed"), "{observation}");
    // The helper got the sub-task as its own task.
    let helper_requests = helper.mock.requests();
    assert!(
        helper_requests[0].messages().iter().any(|m| m["content"]
            .as_str()
            .is_some_and(|c| c.contains("Add 3 and 4"))),
        "{:?}",
        helper_requests[0].messages()
    );
    lead.mock.verify().unwrap();
    helper.mock.verify().unwrap();
    lead.stop().await;
    helper.stop().await;
}
