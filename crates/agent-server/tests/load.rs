//! Fifty sessions at once over real HTTP, each running ten steps against the strict mock: every
//! session's client receives exactly the events its store holds (same ids, same order), none
//! lost, none twice, and no session sees another's.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashSet;

use agent_testkit::Completion;
use common::{SseClient, TestServer, call};
use serde_json::json;

const SESSIONS: usize = 50;
const STEPS: usize = 10;

/// Creates a session, scripts its ten steps, sends its task and collects its stream until the
/// run finishes. Returns the session id and the ids of the stored events the client received.
async fn one_session(server: &TestServer, n: usize) -> (String, Vec<i64>) {
    let id = server.create("swe").await;
    let (_, session) = server.get(&format!("/api/sessions/{id}")).await;
    let workspace = std::path::PathBuf::from(session["workspace"].as_str().unwrap());
    let notes = workspace.join("notes.txt");
    std::fs::write(&notes, format!("session {n}\n")).unwrap();
    let task = format!("load test session {n}");
    for step in 1..STEPS {
        server.mock.push_for(
            task.clone(),
            Completion::tool_calls(
                Some(format!("Session {n}, step {step}.")),
                [call(
                    &format!("s{n}v{step}"),
                    "str_replace_editor",
                    &json!({"command": "view", "path": notes}),
                )],
            )
            .with_usage(100, 10),
        );
    }
    server.mock.push_for(
        task.clone(),
        Completion::tool_calls(
            Some(format!("Session {n} is done.")),
            [call(
                &format!("s{n}done"),
                "terminate",
                &json!({"status": "success"}),
            )],
        ),
    );
    let mut events: SseClient = server.events(&id, None).await;
    let (status, body) = server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({ "task": task }),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let seen = events.until(|e| e.event == "run_finished").await;
    // Every tool call this client saw is one of this session's own.
    for event in &seen {
        if event.name() == "tool_call_started" {
            let call_id = event.data["data"]["call"]["id"].as_str().unwrap();
            assert!(
                call_id.starts_with(&format!("s{n}")),
                "session {n} saw {call_id}"
            );
        }
    }
    let finished = seen.last().unwrap();
    assert_eq!(finished.data["data"]["state"], "finished", "{finished:?}");
    (id, seen.iter().filter_map(|e| e.id).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_sessions_at_once_each_stream_exactly_their_stored_events() {
    let server = TestServer::start_with(|options| options.max_concurrent_runs = SESSIONS).await;
    let results = futures::future::join_all((0..SESSIONS).map(|n| one_session(&server, n))).await;
    let mut all_ids = HashSet::new();
    for (id, received) in &results {
        let events = server
            .hub
            .store()
            .events_after(id, None, 100_000)
            .await
            .unwrap();
        let stored: Vec<i64> = events.iter().map(|e| e.id).collect();
        assert_eq!(received, &stored, "session {id}: streamed vs stored");
        let steps = events
            .iter()
            .filter(|e| e.data["type"] == "step_started")
            .count();
        assert_eq!(steps, STEPS, "session {id}");
        for event_id in received {
            assert!(
                all_ids.insert(*event_id),
                "event {event_id} in two sessions"
            );
        }
    }
    assert_eq!(server.mock.request_count(), SESSIONS * STEPS);
    server.mock.verify().unwrap();
    server.stop().await;
}
