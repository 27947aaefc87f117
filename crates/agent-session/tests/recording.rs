//! A `Session` recorded in a real SQLite store: the events stored equal the events broadcast
//! (same ids, in order), the stored memory equals the agent's, the runs are summarised; a
//! cancelled run and a resumed session continue the conversation the store kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use agent_config::Config;
use agent_core::{ToolCall, check_tool_pairing};
use agent_llm::LlmSettings;
use agent_session::store::{EventKind, RunState, SessionState, Store, StoredEvent};
use agent_session::{Ending, Session, Target};
use agent_testkit::{Completion, MockOpenAi};
use agents::{AgentFactory, AgentKind};
use serde_json::{Value, json};
use tokio::sync::broadcast::Receiver;

fn call(id: &str, name: &str, args: &Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

fn factory(server: &MockOpenAi, workspace: &Path) -> AgentFactory {
    let mut llm = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-session");
    llm.max_attempts = 1;
    AgentFactory::new(Config::new(llm)).with_workspace(workspace)
}

/// Every event the receiver holds now.
fn drain(events: &mut Receiver<StoredEvent>) -> Vec<StoredEvent> {
    let mut out = Vec::new();
    while let Ok(event) = events.try_recv() {
        out.push(event);
    }
    out
}

/// The `type` of each agent event, the kind of the others.
fn names(events: &[StoredEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e.kind {
            EventKind::Agent => e.data["type"].as_str().unwrap().to_owned(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test]
async fn a_recorded_run_stores_what_it_broadcasts_and_the_agents_memory() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    let store = Store::open(dir.path().join("db/sessions.db"))
        .await
        .unwrap();
    server
        .push(
            Completion::tool_calls(
                Some("Listing.".into()),
                [call(
                    "c1",
                    "bash",
                    &json!({"command": "echo hi > a.txt && ls"}),
                )],
            )
            .with_usage(50, 5),
        )
        .push(
            Completion::tool_calls(
                Some("There is a.txt.".into()),
                [call("c2", "terminate", &json!({"status": "success"}))],
            )
            .with_usage(60, 6),
        );
    let mut session = Session::start_recorded(
        &factory(&server, &workspace),
        Target::Agent(AgentKind::Swe),
        &store,
        json!({"note": "test"}),
    )
    .await
    .unwrap();
    let id = session.session_id().unwrap().to_owned();
    let mut live = session.recorded_events().unwrap();
    let feed = session.event_feed().unwrap();
    assert_eq!(feed.session_id(), id);
    let record = store.session(&id).await.unwrap();
    assert_eq!(record.agent, "swe");
    assert_eq!(record.settings, json!({"note": "test"}));
    assert_eq!(record.workspace, session.workspace());
    assert_eq!(record.state, SessionState::Idle);

    let report = session.run("List the files.").await.unwrap();
    assert_eq!(report.ending(), Ending::Finished);
    let run_id = report.run_id.unwrap();

    // Everything is stored and published before run() returns.
    let broadcast = drain(&mut live);
    let stored = store.events_after(&id, None, 10_000).await.unwrap();
    assert_eq!(
        broadcast, stored,
        "live events are the stored ones, ids and all"
    );
    assert!(stored.windows(2).all(|w| w[0].id < w[1].id));
    assert!(stored.iter().all(|e| e.run_id == Some(run_id)));
    // A client reconnecting after the fourth event gets the rest from the store, nothing twice.
    let (replayed, mut later) = feed.since(Some(stored[3].id), 10_000).await.unwrap();
    assert_eq!(replayed, stored[4..]);
    assert!(later.try_recv().is_err(), "nothing new since");
    let names = names(&stored);
    assert_eq!(names.first().map(String::as_str), Some("run_started"));
    assert_eq!(names.last().map(String::as_str), Some("run_finished"));
    for expected in [
        "run_started",
        "step_started",
        "thought",
        "tool_call_started",
        "tool_call_finished",
        "token_usage",
        "finished",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing: {names:?}"
        );
    }
    // In the order the agent emitted them.
    let position = |name: &str| names.iter().position(|n| n == name).unwrap();
    assert!(position("tool_call_started") < position("tool_call_finished"));
    assert!(position("finished") < position("run_finished"));

    let agent = session.agent().unwrap();
    let memory = agent.base().memory.messages().to_vec();
    assert_eq!(store.messages(&id).await.unwrap(), memory);
    assert_eq!(
        memory.len(),
        5,
        "task, call, result, call, result: {memory:#?}"
    );

    let run = store.run(run_id).await.unwrap();
    assert_eq!(run.state, RunState::Finished);
    assert_eq!(run.answer.as_deref(), Some("There is a.txt."));
    assert_eq!(run.usage.prompt_tokens, 110);
    assert_eq!(run.changes["created"], json!(["a.txt"]));
    let record = store.session(&id).await.unwrap();
    assert_eq!(record.state, SessionState::Finished);
    assert_eq!(record.title, "List the files.");
    session.close().await.unwrap();
    server.verify().unwrap();
}

#[tokio::test]
async fn a_resumed_session_continues_the_stored_conversation() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    let path = dir.path().join("sessions.db");
    let marker = workspace.join("started");
    server
        .push(Completion::tool_calls(
            Some("Waiting.".into()),
            [call(
                "c1",
                "bash",
                &json!({"command": format!("touch {} && sleep 300", marker.display())}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Still here: you asked me to wait.".into()),
            [call("c2", "terminate", &json!({"status": "success"}))],
        ));

    let store = Store::open(&path).await.unwrap();
    let mut session = Session::start_recorded(
        &factory(&server, &workspace),
        Target::Agent(AgentKind::Swe),
        &store,
        Value::Null,
    )
    .await
    .unwrap();
    let id = session.session_id().unwrap().to_owned();
    let canceller = session.canceller();
    let watcher = tokio::spawn(async move {
        for _ in 0..1200 {
            if marker.exists() {
                return canceller.cancel();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    });
    let report = session.run("Wait for me.").await.unwrap();
    assert!(watcher.await.unwrap(), "the command never started");
    assert_eq!(report.ending(), Ending::Cancelled);
    let kept = session.agent().unwrap().base().memory.messages().to_vec();
    session.close().await.unwrap();
    store.close().await;
    assert_eq!(
        store_messages(&path, &id).await,
        kept,
        "the cancelled observation is stored too"
    );

    // Another store handle, as a new process would open it.
    let store = Store::open(&path).await.unwrap();
    assert_eq!(
        store.session(&id).await.unwrap().state,
        SessionState::Interrupted
    );
    // Any other workspace in the factory: the session's own is used.
    let elsewhere = dir.path().join("elsewhere");
    let mut resumed = Session::resume(&factory(&server, &elsewhere), &store, &id[..8])
        .await
        .unwrap();
    assert_eq!(resumed.session_id(), Some(id.as_str()));
    assert_eq!(resumed.workspace(), workspace.as_path());
    assert_eq!(resumed.target(), Target::Agent(AgentKind::Swe));
    assert_eq!(resumed.agent().unwrap().base().memory.messages(), kept);

    let report = resumed.run("Are you still there?").await.unwrap();
    assert_eq!(
        report.answer.as_deref(),
        Some("Still here: you asked me to wait.")
    );
    // The request carried the whole earlier conversation (the strict mock checked pairing).
    let requests = server.requests();
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(last.contains("Wait for me."), "{last}");
    assert!(
        last.contains("did not complete: the run was cancelled"),
        "{last}"
    );
    assert!(last.contains("Are you still there?"), "{last}");

    let memory = resumed.agent().unwrap().base().memory.messages().to_vec();
    check_tool_pairing(&memory, false).unwrap();
    assert_eq!(store.messages(&id).await.unwrap(), memory);
    let runs = store.runs(&id).await.unwrap();
    assert_eq!(
        runs.iter().map(|r| r.state).collect::<Vec<_>>(),
        [RunState::Cancelled, RunState::Finished]
    );
    // Event ids keep growing across the two processes' runs.
    let events = store.events_after(&id, None, 10_000).await.unwrap();
    assert!(events.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(
        events
            .iter()
            .filter(|e| e.kind == EventKind::RunStarted)
            .count(),
        2
    );
    resumed.close().await.unwrap();
    server.verify().unwrap();
}

/// The messages stored for `id`, read through a store of its own.
async fn store_messages(path: &Path, id: &str) -> Vec<agent_core::Message> {
    let store = Store::open(path).await.unwrap();
    let messages = store.messages(id).await.unwrap();
    store.close().await;
    messages
}

#[tokio::test]
async fn a_session_running_in_a_live_process_is_not_resumed_beside_it() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("sessions.db")).await.unwrap();
    let record = store
        .create_session(agent_session::store::NewSession::new(
            "swe",
            dir.path().join("w"),
        ))
        .await
        .unwrap();
    // A run begun by this process, which is alive: it is running, not interrupted.
    let (run, _) = store.begin_run(&record.id, "busy").await.unwrap();
    let error = Session::resume(&factory(&server, dir.path()), &store, &record.id)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, agent_session::SessionError::Running(id) if *id == record.id),
        "{error}"
    );
    assert_eq!(store.run(run).await.unwrap().state, RunState::Running);
    let error = Session::resume(&factory(&server, dir.path()), &store, "nobody")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no session nobody"), "{error}");
}
