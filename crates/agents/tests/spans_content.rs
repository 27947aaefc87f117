//! Content capture on (`[telemetry] capture_content`): what the spans record, with the
//! configuration's secrets replaced. Alone in its test binary: capture is process-wide.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod recording;

use agent_core::Agent;
use agent_telemetry::capture::{self, Scrubber};
use agent_testkit::{Completion, EchoTool, MockOpenAi, ToolProbe, tool_call};
use agent_toolcall::ToolCallAgent;
use opentelemetry::Value;
use serde_json::json;

use crate::recording::{Recording, attribute, model, one};

const SECRET: &str = "sk-live-0123456789abcdef";

fn text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.as_str().to_owned(),
        other => panic!("not a string: {other:?}"),
    }
}

#[tokio::test]
async fn captured_content_follows_the_conventions_and_never_holds_a_secret() {
    assert!(capture::enable(Scrubber::new([SECRET.to_owned()])));
    let recording = Recording::start();
    let mock = MockOpenAi::start().await.unwrap();
    mock.push(Completion::tool_calls(
        Some(format!("Echoing {SECRET}.")),
        [tool_call(
            "e",
            "echo",
            &json!({"text": format!("key {SECRET}")}).to_string(),
        )],
    ))
    .push(Completion::tool_calls(
        Some("Done.".into()),
        [tool_call("t", "terminate", r#"{"status":"success"}"#)],
    ));
    let mut agent = ToolCallAgent::new(model(&mock))
        .with_name("probe")
        .with_system_prompt("You echo.")
        .with_tool(EchoTool::new(&ToolProbe::new()));
    agent.run(Some("echo my key".into())).await.unwrap();

    let spans = recording.spans();
    for span in &spans {
        let texts = span
            .attributes
            .iter()
            .map(|kv| kv.value.as_str().into_owned())
            .chain(
                span.events
                    .iter()
                    .flat_map(|e| e.attributes.iter().map(|kv| kv.value.as_str().into_owned())),
            )
            .chain(match &span.status {
                opentelemetry::trace::Status::Error { description } => {
                    Some(description.to_string())
                }
                _ => None,
            });
        for text in texts {
            assert!(
                !text.contains(SECRET),
                "{} holds the secret: {text}",
                span.name
            );
        }
    }
    let echo = one(&spans, "execute_tool echo");
    let arguments: serde_json::Value =
        serde_json::from_str(&text(attribute(echo, "gen_ai.tool.call.arguments"))).unwrap();
    assert_eq!(arguments, json!({"text": "key [redacted]"}));
    assert!(text(attribute(echo, "gen_ai.tool.call.result")).contains("key [redacted]"));

    let chats: Vec<_> = spans.iter().filter(|s| s.name == "chat gpt-4o").collect();
    assert_eq!(chats.len(), 2);
    assert_eq!(
        text(attribute(chats[0], "gen_ai.system_instructions")),
        json!([{"role": "system", "parts": [{"type": "text", "content": "You echo."}]}])
            .to_string()
    );
    let input: serde_json::Value =
        serde_json::from_str(&text(attribute(chats[1], "gen_ai.input.messages"))).unwrap();
    let roles: Vec<&str> = input
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // (Then what the agent adds before a step, as the model is sent it.)
    assert_eq!(roles[..3], ["user", "assistant", "tool"], "{input:#}");
    assert_eq!(input[1]["parts"][1]["type"], "tool_call");
    assert_eq!(input[1]["parts"][1]["name"], "echo");
    assert_eq!(input[2]["parts"][0]["type"], "tool_call_response");
    assert_eq!(input[2]["parts"][0]["id"], "e");
    let output: serde_json::Value =
        serde_json::from_str(&text(attribute(chats[0], "gen_ai.output.messages"))).unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["finish_reason"], "tool_calls");
    assert_eq!(output[0]["parts"][0]["content"], "Echoing [redacted].");
    mock.verify().unwrap();
}
