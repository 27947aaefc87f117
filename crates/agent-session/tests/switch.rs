//! `Session::switch`: another agent kind continues the same session, its conversation kept —
//! in memory for a session kept nowhere else, through the store for a recorded one; a switch
//! to an agent that cannot be built leaves the session (and its stored record) as it was.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use agent_config::Config;
use agent_core::ToolCall;
use agent_llm::LlmSettings;
use agent_session::store::Store;
use agent_session::{Ending, Session, SessionError, Target};
use agent_testkit::{Completion, MockOpenAi};
use agents::{AgentFactory, AgentKind};
use serde_json::{Value, json};

fn factory(server: &MockOpenAi, workspace: &Path) -> AgentFactory {
    let mut llm = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-session");
    llm.max_attempts = 1;
    AgentFactory::new(Config::new(llm)).with_workspace(workspace)
}

fn finish(server: &MockOpenAi, id: &str) {
    server.push(Completion::tool_calls(
        Some(format!("Done {id}.")),
        [ToolCall::new(
            id,
            "terminate",
            json!({"status": "success"}).to_string(),
        )],
    ));
}

/// The tool names and the user messages of the mock's request `i`.
fn seen(server: &MockOpenAi, i: usize) -> (Vec<String>, Vec<String>) {
    let request = &server.requests()[i];
    let tools = request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    let users = request
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    (tools, users)
}

fn has(names: &[String], name: &str) -> bool {
    names.iter().any(|n| n == name)
}

#[tokio::test]
async fn an_unrecorded_session_hands_its_conversation_to_the_next_agent() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let factory = factory(&server, &dir.path().join("work"));
    finish(&server, "t1");
    finish(&server, "t2");
    let mut session = Session::start(&factory, Target::Agent(AgentKind::Swe))
        .await
        .unwrap();
    let workspace = session.workspace().to_path_buf();
    assert_eq!(
        session.run("First question.").await.unwrap().ending(),
        Ending::Finished
    );

    // The MCP agent has no server here: it cannot be built, and nothing changes.
    let failed = session
        .switch(&factory, Target::Agent(AgentKind::Mcp))
        .await
        .unwrap_err();
    assert!(matches!(failed, SessionError::Factory(_)), "{failed}");
    assert_eq!(session.target(), Target::Agent(AgentKind::Swe));

    session
        .switch(&factory, Target::Agent(AgentKind::Manus))
        .await
        .unwrap();
    assert_eq!(session.target(), Target::Agent(AgentKind::Manus));
    assert_eq!(session.workspace(), workspace);
    assert_eq!(
        session.run("Second question.").await.unwrap().ending(),
        Ending::Finished
    );
    let (swe_tools, _) = seen(&server, 0);
    let (tools, users) = seen(&server, 1);
    assert!(has(&swe_tools, "bash") && !has(&swe_tools, "python_execute"));
    assert!(has(&tools, "python_execute"), "{tools:?}");
    assert_eq!(users[..2], ["First question.", "Second question."]);
    session.close().await.unwrap();
    server.verify().unwrap();
}

#[tokio::test]
async fn a_recorded_session_switches_in_the_store_and_resumes_as_the_new_agent() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let factory = factory(&server, &dir.path().join("work"));
    let store = Store::open(dir.path().join("sessions.db")).await.unwrap();
    finish(&server, "t1");
    finish(&server, "t2");
    let mut session =
        Session::start_recorded(&factory, Target::Agent(AgentKind::Swe), &store, Value::Null)
            .await
            .unwrap();
    let id = session.session_id().unwrap().to_owned();
    session.run("First question.").await.unwrap();

    session
        .switch(&factory, Target::Agent(AgentKind::Mcp))
        .await
        .unwrap_err();
    assert_eq!(session.target(), Target::Agent(AgentKind::Swe));
    assert_eq!(store.session(&id).await.unwrap().agent, "swe", "named back");

    session
        .switch(&factory, Target::Agent(AgentKind::Manus))
        .await
        .unwrap();
    assert_eq!(session.session_id(), Some(id.as_str()), "the same session");
    assert_eq!(store.session(&id).await.unwrap().agent, "manus");
    session.close().await.unwrap();

    // A later process continues it as Manus, with the whole conversation.
    let mut resumed = Session::resume(&factory, &store, &id).await.unwrap();
    assert_eq!(resumed.target(), Target::Agent(AgentKind::Manus));
    resumed.run("Second question.").await.unwrap();
    let (tools, users) = seen(&server, 1);
    assert!(has(&tools, "python_execute"), "{tools:?}");
    assert_eq!(users[..2], ["First question.", "Second question."]);
    assert_eq!(store.runs(&id).await.unwrap().len(), 2);
    resumed.close().await.unwrap();
    server.verify().unwrap();
}
