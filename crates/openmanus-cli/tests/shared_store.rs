//! Two `openmanus serve` processes on one PostgreSQL database (`[store] url`, the test kit's
//! cluster on 127.0.0.1), as replicas behind a load balancer would run: a session created and
//! run on one is replayed on the other from any `Last-Event-ID`, continued there (its memory
//! restored from the store), followed live from the first while the other runs it, and the
//! first, asked again, knows what the other did; a run on one is cancelled from the other.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use agent_testkit::{MockOpenAi, PgCluster, SseClient, SseEvent};
use serde_json::{Value, json};

use crate::common::{call, finish, serve_in};

async fn post(http: &reqwest::Client, url: &str, body: Value) -> (u16, Value) {
    let response = http.post(url).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get(http: &reqwest::Client, url: &str) -> Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

/// Waits until the session's state, read on `server`, is `state`.
async fn wait_state(http: &reqwest::Client, server: &str, id: &str, state: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let session = get(http, &format!("{server}/api/sessions/{id}")).await;
        if session["state"] == state {
            return;
        }
        assert!(Instant::now() < deadline, "never {state}: {session}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn events(http: &reqwest::Client, server: &str, id: &str, after: Option<i64>) -> SseClient {
    SseClient::connect(http, &format!("{server}/api/sessions/{id}/events"), after)
        .await
        .unwrap()
}

/// The stored events of a stream up to the next `run_finished` (status notices dropped).
async fn until_finished(stream: &mut SseClient) -> Vec<SseEvent> {
    stream
        .until(|e| e.event == "run_finished")
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.id.is_some())
        .collect()
}

fn ids(events: &[SseEvent]) -> Vec<i64> {
    events.iter().filter_map(|e| e.id).collect()
}

/// The texts of the user messages of a model request.
fn user_texts(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_postgres_serve_the_same_sessions() {
    let cluster = PgCluster::start().expect("PostgreSQL (`cargo xtask setup` installs it)");
    let url = cluster.create_database("replicas").unwrap();
    let mock = MockOpenAi::start().await.unwrap();
    // One directory: the servers share the sessions' workspaces, as replicas share a volume.
    let dir = tempfile::tempdir().unwrap();
    let store = format!("[store]\nurl = \"{url}\"\n");
    let (_a, a) = serve_in(dir.path(), &mock, &store, Vec::new()).await;
    let (_b, b) = serve_in(dir.path(), &mock, &store, Vec::new()).await;
    let http = agent_llm::http::shared_client().unwrap();

    // Created and run on A.
    mock.push(finish("First answer."));
    let (status, created) = post(
        &http,
        &format!("{a}/api/sessions"),
        json!({"agent": "swe", "task": "First question."}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    wait_state(&http, &a, &id, "finished").await;

    // B lists it and replays it: whole, and from any Last-Event-ID exactly the rest.
    let listed = get(&http, &format!("{b}/api/sessions")).await;
    assert_eq!(listed["sessions"][0]["id"], id.as_str(), "{listed}");
    let first_run = until_finished(&mut events(&http, &b, &id, None).await).await;
    let first_ids = ids(&first_run);
    assert!(first_ids.len() > 3, "{first_ids:?}");
    assert_eq!(first_run[0].event, "run_started");
    let rest = until_finished(&mut events(&http, &b, &id, Some(first_ids[1])).await).await;
    assert_eq!(ids(&rest), first_ids[2..]);

    // A follows the session live from its last event while B continues it.
    let mut on_a = events(&http, &a, &id, first_ids.last().copied()).await;
    mock.push(finish("Second answer."));
    let (status, body) = post(
        &http,
        &format!("{b}/api/sessions/{id}/tasks"),
        json!({"task": "Second question."}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let second_run = until_finished(&mut on_a).await;
    assert_eq!(second_run[0].event, "run_started", "{second_run:?}");
    assert_eq!(second_run[0].data["data"]["task"], "Second question.");
    assert_eq!(
        second_run.last().unwrap().data["data"]["answer"],
        "Second answer."
    );
    assert!(ids(&second_run)[0] > *first_ids.last().unwrap());
    wait_state(&http, &b, &id, "finished").await;
    // B's run was sent the first turn: the memory came from the store.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        user_texts(requests[1].messages()),
        ["First question.", "Second question."]
    );

    // Asked again, A (which still had the session live from the first run) knows B's turn.
    mock.push(finish("Third answer."));
    let (status, body) = post(
        &http,
        &format!("{a}/api/sessions/{id}/tasks"),
        json!({"task": "Third question."}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let third_run = until_finished(&mut on_a).await;
    assert_eq!(
        third_run.last().unwrap().data["data"]["answer"],
        "Third answer."
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        user_texts(requests[2].messages()),
        ["First question.", "Second question.", "Third question."]
    );
    // Every event of the three runs replays on B, in order, once.
    let mut all = events(&http, &b, &id, None).await;
    let mut replayed = Vec::new();
    for _ in 0..3 {
        replayed.extend(ids(&until_finished(&mut all).await));
    }
    let expected: Vec<i64> = [first_ids, ids(&second_run), ids(&third_run)].concat();
    assert_eq!(replayed, expected);

    // A run going on B is cancelled from A: A asks B through the store.
    mock.push(agent_testkit::Completion::tool_calls(
        None,
        [call("s1", "bash", json!({"command": "sleep 300"}))],
    ));
    let mut on_b = events(&http, &b, &id, expected.last().copied()).await;
    let (status, body) = post(
        &http,
        &format!("{b}/api/sessions/{id}/tasks"),
        json!({"task": "Wait a long time."}),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    on_b.until(|e| e.name() == "tool_call_started")
        .await
        .unwrap();
    let (status, body) = post(&http, &format!("{a}/api/sessions/{id}/cancel"), json!({})).await;
    assert_eq!(
        (status, body["cancelled"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    let fourth = until_finished(&mut on_b).await;
    assert_eq!(fourth.last().unwrap().data["data"]["state"], "cancelled");
    // A cancelled run leaves its session interrupted, as A reads it from the store.
    wait_state(&http, &a, &id, "interrupted").await;

    // The command line reads the same store.
    let listed = tokio::process::Command::new(common::BIN)
        .current_dir(dir.path())
        .env_remove("OPENMANUS_CONFIG")
        .env("HOME", dir.path())
        .args(["sessions", "list", "--json"])
        .output()
        .await
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let line: Value =
        serde_json::from_slice(listed.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(line["id"], id.as_str(), "{line}");
    assert_eq!(line["runs"], 4, "{line}");
}
