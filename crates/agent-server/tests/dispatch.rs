//! `[server] dispatch = "nats"`: the server hands its sessions' tasks to a worker through a
//! real `nats-server -js` child; the page's event stream shows the worker's events, stored
//! with this server's ids, and the run ends with the worker's result. A second task of the
//! session continues the conversation (kept in NATS) and a cancel reaches the worker.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_testkit::{Completion, NatsServer};
use agent_worker::{Names, Nats, NatsOptions, QueueSettings, Submitter, Worker, WorkerOptions};
use common::{PATIENCE, TestServer, call, factory};
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn connect(server: &NatsServer) -> Nats {
    Nats::connect(
        &NatsOptions::new(server.url()),
        Names::default(),
        &QueueSettings::default(),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_dispatched_session_streams_the_workers_events_and_continues_its_conversation() {
    let nats_server = NatsServer::start().unwrap();
    let nats = connect(&nats_server).await;
    let submitter = Submitter::new(nats.clone());
    let server = TestServer::start_with_hub(|_| {}, |hub| hub.with_workers(submitter)).await;
    // The worker runs against the server's mock, in workspaces of its own.
    let stop = CancellationToken::new();
    let work = server.dir.path().join("worker");
    let worker = Worker::new(
        nats.clone(),
        factory(&server.mock, &work.join("default")),
        WorkerOptions::new(work.join("tasks")),
    );
    let token = stop.clone();
    let running = tokio::spawn(async move { worker.run(token).await.unwrap() });

    server
        .mock
        .push(
            Completion::tool_calls(
                Some("Writing **notes**.".into()),
                [call(
                    "c1",
                    "bash",
                    &json!({"command": "printf hello > notes.md"}),
                )],
            )
            .with_usage(40, 4),
        )
        .push(Completion::tool_calls(
            Some("Done: notes.md holds *hello*.".into()),
            [call("c2", "terminate", &json!({"status": "success"}))],
        ));
    let id = server.create("swe").await;
    let mut events = server.events(&id, None).await;
    let (status, body) = server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({"task": "Write notes.md"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let seen = events.until(|e| e.event == "run_finished").await;
    let names: Vec<String> = seen
        .iter()
        .filter(|e| e.id.is_some())
        .map(|e| e.name())
        .collect();
    assert_eq!(
        names.first().map(String::as_str),
        Some("run_started"),
        "{names:?}"
    );
    for expected in [
        "step_started",
        "thought",
        "tool_call_started",
        "tool_call_finished",
        "token_usage",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    let ids: Vec<i64> = seen.iter().filter_map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    // Rendered as a local run's.
    let thought = seen.iter().find(|e| e.name() == "thought").unwrap();
    assert!(
        thought.data["html"]
            .as_str()
            .unwrap()
            .contains("<strong>notes</strong>")
    );
    let finished = seen.last().unwrap();
    assert_eq!(finished.data["data"]["state"], "finished", "{finished:?}");
    assert!(
        finished.data["data"]["answer"]
            .as_str()
            .unwrap()
            .contains("notes.md holds")
    );
    // The run and its events are in the server's store: a reconnecting client replays them.
    let (_, session) = server.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(session["run_list"].as_array().unwrap().len(), 1);
    // The worker's usage: the first reply's 40 tokens, and the mock's count of the second.
    assert!(
        session["run_list"][0]["usage"]["prompt_tokens"]
            .as_u64()
            .unwrap()
            > 40,
        "{session}"
    );
    assert_eq!(session["run_list"][0]["state"], "finished", "{session}");
    let mut replay = server.events(&id, Some(ids[2])).await;
    let again = replay.until(|e| e.event == "run_finished").await;
    let replayed: Vec<i64> = again.iter().filter_map(|e| e.id).collect();
    assert_eq!(replayed, ids[3..].to_vec());
    // The file was written in the worker's workspace, not the server's.
    assert!(work.join("tasks").join(&id).join("notes.md").exists());

    // The next task continues the conversation on the worker: the model sees the first.
    server.mock.push(Completion::tool_calls(
        Some("It holds hello.".into()),
        [call("c3", "terminate", &json!({"status": "success"}))],
    ));
    let (status, _) = server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({"task": "What does notes.md hold?"}),
        )
        .await;
    assert_eq!(status, 202);
    events.until(|e| e.event == "run_finished").await;
    let last = server.mock.requests().last().unwrap().body["messages"].clone();
    let text = last.to_string();
    assert!(
        text.contains("Write notes.md") && text.contains("What does notes.md hold?"),
        "{text}"
    );
    server.mock.verify().unwrap();

    // A cancel reaches the worker: a run inside a long tool ends cancelled.
    server.mock.push(Completion::tool_calls(
        Some("Sleeping.".into()),
        [call("c4", "bash", &json!({"command": "sleep 600"}))],
    ));
    server
        .post(
            &format!("/api/sessions/{id}/tasks"),
            json!({"task": "Sleep"}),
        )
        .await;
    events.until(|e| e.name() == "tool_call_started").await;
    let (_, cancelled) = server
        .post(&format!("/api/sessions/{id}/cancel"), json!({}))
        .await;
    assert_eq!(cancelled["cancelled"], true);
    let end = events.until(|e| e.event == "run_finished").await;
    assert_eq!(
        end.last().unwrap().data["data"]["state"],
        "cancelled",
        "{end:?}"
    );

    stop.cancel();
    let summary = tokio::time::timeout(PATIENCE, running)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(summary.completed, 3, "{summary:?}");
    server.stop().await;
}
