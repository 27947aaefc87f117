//! `ask_human` through the real agent path: a pluggable answer source, the terminal default that
//! never hangs without a terminal, and the schema.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::{Agent, Role};
use agent_testkit::{ScriptedModel, tool_call};
use agent_toolcall::ToolCallAgent;
use agent_tools::{AskHuman, ChannelInput, NO_HUMAN, TerminalInput, Tool};
use serde_json::json;

async fn ask(tool: AskHuman, question: &str) -> String {
    let model = Arc::new(ScriptedModel::new());
    model
        .push_tool_calls(
            "",
            [tool_call(
                "q",
                "ask_human",
                &json!({ "inquire": question }).to_string(),
            )],
        )
        .push_tool_calls(
            "",
            [tool_call("end", "terminate", r#"{"status":"success"}"#)],
        );
    let mut agent = ToolCallAgent::new(model).with_tool(tool);
    agent.run(Some("task".into())).await.unwrap();
    agent
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap()
        .text()
        .to_owned()
}

#[test]
fn schema_snapshot() {
    assert_eq!(
        serde_json::to_value(AskHuman::new().to_param()).unwrap(),
        json!({
            "type": "function",
            "function": {
                "name": "ask_human",
                "description": "Ask the human user a question and wait for the answer. Use it only when you cannot continue without information or a decision that only the user can give.",
                "parameters": {
                    "type": "object",
                    "properties": {"inquire": {"type": "string", "description": "The question for the human."}},
                    "required": ["inquire"]
                }
            }
        })
    );
}

#[tokio::test]
async fn answers_come_from_a_pluggable_source() {
    let (input, mut questions) = ChannelInput::new();
    let answerer = tokio::spawn(async move {
        let question = questions.recv().await.unwrap();
        let asked = question.inquire.clone();
        question
            .reply
            .send(Some("  Use the blue one.  ".trim().to_owned()))
            .unwrap();
        asked
    });
    let observation = ask(AskHuman::with_input(input), "Which colour?").await;
    assert_eq!(answerer.await.unwrap(), "Which colour?");
    assert_eq!(
        observation,
        "Observed output of cmd `ask_human` executed:\nUse the blue one."
    );
}

#[tokio::test]
async fn without_a_terminal_the_default_answers_at_once_that_nobody_is_there() {
    // Test processes have no terminal on stdin; a hang here would hit the timeout.
    assert!(
        !std::io::IsTerminal::is_terminal(&std::io::stdin()),
        "stdin is a terminal: run the tests without one (`cargo xtask ci` does; or `cargo test < /dev/null`)"
    );
    let observation = tokio::time::timeout(
        Duration::from_secs(5),
        ask(AskHuman::with_input(TerminalInput), "Anyone?"),
    )
    .await
    .expect("ask_human must not hang without a terminal");
    assert_eq!(
        observation,
        format!("Observed output of cmd `ask_human` executed:\n{NO_HUMAN}")
    );
}

#[tokio::test]
async fn a_source_that_goes_away_means_nobody_can_answer() {
    let (input, questions) = ChannelInput::new();
    drop(questions);
    let observation = ask(AskHuman::with_input(input), "Hello?").await;
    assert_eq!(
        observation,
        format!("Observed output of cmd `ask_human` executed:\n{NO_HUMAN}")
    );

    let (input, mut questions) = ChannelInput::new();
    tokio::spawn(async move {
        let question = questions.recv().await.unwrap();
        drop(question.reply);
    });
    let observation = ask(AskHuman::with_input(input), "Hello?").await;
    assert_eq!(
        observation,
        format!("Observed output of cmd `ask_human` executed:\n{NO_HUMAN}")
    );
}
