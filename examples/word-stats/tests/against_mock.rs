//! The example agent over real HTTP against the strict mock OpenAI server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_core::{Agent, Role, ToolCall};
use agent_llm::{LlmClient, LlmSettings};
use agent_testkit::{Completion, MockOpenAi};
use agent_tools::Tool;
use word_stats_agent::{WordStats, word_stats_agent};

#[test]
fn the_tool_schema_comes_from_the_derive() {
    let schema = WordStats.parameters();
    assert_eq!(schema["required"], serde_json::json!(["text"]));
    assert_eq!(schema["properties"]["top"]["type"], "integer");
}

#[tokio::test]
async fn the_agent_counts_words_through_its_own_tool() {
    let server = MockOpenAi::start().await.unwrap();
    server
        .push(Completion::tool_calls(
            None,
            [ToolCall::new(
                "c1",
                "word_stats",
                r#"{"text":"the cat and the hat","top":1}"#,
            )],
        ))
        .push(Completion::tool_calls(
            Some("There are 5 words; \"the\" is the most frequent.".into()),
            [ToolCall::new("c2", "terminate", r#"{"status":"success"}"#)],
        ));
    let settings = LlmSettings::new("gpt-4o", server.base_url());
    let mut agent = word_stats_agent(Arc::new(LlmClient::new(settings).unwrap()));
    let outcome = agent
        .run(Some("Count: the cat and the hat".into()))
        .await
        .unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    // The answer is the text that came with `terminate`, not the step transcript.
    assert_eq!(
        outcome.answer(),
        Some("There are 5 words; \"the\" is the most frequent.")
    );
    let observation = agent
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap()
        .text()
        .to_owned();
    assert_eq!(
        observation,
        "Observed output of cmd `word_stats` executed:\nwords: 5, lines: 1, characters: 19\nmost frequent: the (2)"
    );
    server.verify().unwrap();
    assert_eq!(
        server.requests()[0].body["tools"][0]["function"]["name"],
        "word_stats"
    );
}

#[tokio::test]
async fn the_binary_prints_the_answer() {
    let server = MockOpenAi::start().await.unwrap();
    server.push(Completion::tool_calls(
        Some("Four words.".into()),
        [ToolCall::new("c1", "terminate", r#"{"status":"success"}"#)],
    ));
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_word-stats-agent"))
        .args([server.base_url().as_str(), "gpt-4o", "one two three four"])
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Four words.\n");
}
