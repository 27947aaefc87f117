//! A `Session` without the CLI: the factory's SWE agent over the real HTTP client against the
//! strict mock server, two tasks in one conversation, the report of each, cancellation, close.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use agent_config::Config;
use agent_core::ToolCall;
use agent_llm::LlmSettings;
use agent_session::{Ending, Session, Target};
use agent_testkit::{Completion, MockOpenAi};
use agents::{AgentFactory, AgentKind};
use serde_json::{Value, json};

fn call(id: &str, name: &str, args: &Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

fn factory(server: &MockOpenAi, workspace: &Path) -> AgentFactory {
    let mut llm = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-session");
    llm.max_attempts = 1;
    AgentFactory::new(Config::new(llm)).with_workspace(workspace)
}

fn journal_kinds(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["kind"].to_string())
        .collect()
}

#[tokio::test]
async fn two_tasks_keep_the_conversation_and_report_answers_and_changed_files() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let notes = workspace.join("notes.txt");
    server
        .push(
            Completion::tool_calls(
                Some("I'll write the note.".into()),
                [call(
                    "c1",
                    "str_replace_editor",
                    &json!({"command": "create", "path": notes, "file_text": "hello\n"}),
                )],
            )
            .with_usage(100, 10),
        )
        .push(
            Completion::tool_calls(
                Some("Wrote notes.txt.".into()),
                [call("c2", "terminate", &json!({"status": "success"}))],
            )
            .with_usage(120, 5),
        )
        .push(Completion::tool_calls(
            None,
            [call("c3", "bash", &json!({"command": "cat notes.txt"}))],
        ))
        .push(Completion::tool_calls(
            Some("It says hello.".into()),
            [call("c4", "terminate", &json!({"status": "success"}))],
        ));

    let mut session = Session::start(&factory(&server, &workspace), Target::Agent(AgentKind::Swe))
        .await
        .unwrap();
    assert_eq!(session.workspace(), workspace);

    let first = session.run("Write a note saying hello.").await.unwrap();
    assert_eq!(first.ending(), Ending::Finished);
    assert_eq!(first.answer.as_deref(), Some("Wrote notes.txt."));
    assert_eq!(first.changes.created, [Path::new("notes.txt")]);
    assert_eq!(first.usage.prompt_tokens, 220);
    assert_eq!(first.usage.completion_tokens, 15);

    let second = session.run("What does the note say?").await.unwrap();
    assert_eq!(second.ending(), Ending::Finished);
    assert_eq!(second.answer.as_deref(), Some("It says hello."));
    assert!(second.changes.is_empty(), "{:?}", second.changes);

    // The second task was asked inside the first one's conversation.
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let third = requests[2].body["messages"].to_string();
    assert!(third.contains("Write a note saying hello."), "{third}");
    assert!(third.contains("What does the note say?"), "{third}");
    let observation = requests[3].body["messages"].to_string();
    assert!(observation.contains("hello"), "{observation}");

    let journal = session.close().await.unwrap().unwrap();
    let kinds = journal_kinds(&journal);
    assert_eq!(kinds.iter().filter(|k| *k == "\"task\"").count(), 2);
    assert_eq!(kinds.iter().filter(|k| *k == "\"result\"").count(), 2);
    // Each result line comes after every event of its run.
    let last_result = kinds.iter().rposition(|k| k == "\"result\"").unwrap();
    assert_eq!(last_result, kinds.len() - 1, "{kinds:?}");
    server.verify().unwrap();
}

#[tokio::test]
async fn the_canceller_stops_a_run_inside_a_tool_and_the_session_goes_on() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "bash",
                &json!({"command": format!("touch {} && sleep 300", marker.display())}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Back again.".into()),
            [call("c2", "terminate", &json!({"status": "success"}))],
        ));
    let mut session = Session::start(&factory(&server, dir.path()), Target::Agent(AgentKind::Swe))
        .await
        .unwrap();
    let canceller = session.canceller();
    assert!(!canceller.cancel(), "no run is in progress yet");
    let watcher = tokio::spawn(async move {
        for _ in 0..600 {
            if marker.exists() {
                return canceller.cancel();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    });
    let report = session.run("Wait.").await.unwrap();
    assert!(watcher.await.unwrap(), "the command never started");
    assert_eq!(report.ending(), Ending::Cancelled);

    // The conversation stays valid: the next task runs on it.
    let next = session.run("Are you there?").await.unwrap();
    assert_eq!(next.answer.as_deref(), Some("Back again."));
    session.close().await.unwrap();
    server.verify().unwrap();
}

#[tokio::test]
async fn an_empty_task_is_refused_and_a_failed_build_leaves_no_journal() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::start(&factory(&server, dir.path()), Target::Agent(AgentKind::Swe))
        .await
        .unwrap();
    assert!(matches!(
        session.run("   ").await,
        Err(agent_session::SessionError::EmptyTask)
    ));
    session.close().await.unwrap();

    // The MCP agent without a server cannot be built: nothing is left behind.
    let other = tempfile::tempdir().unwrap();
    let error = Session::start(
        &factory(&server, other.path()),
        Target::Agent(AgentKind::Mcp),
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("needs a server"), "{error}");
    let runs = other.path().join(agent_session::JOURNAL_DIR);
    let left: Vec<_> = std::fs::read_dir(&runs)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
