//! The bytes of the HTTP API's bodies, pinned in `tests/snapshots/api.snap`: health, the session
//! list, one session with its run, the stored events, the file list, and the errors, after a
//! scripted run over real HTTP. Ids, times, ports and paths are scrubbed; everything else is
//! compared byte for byte (`UPDATE_SNAPSHOTS=1` rewrites the file when a change is meant).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_testkit::Completion;
use agent_testkit::snapshot::{Snapshot, scrub};
use common::{TestServer, call};
use serde_json::json;

/// The values that differ from run to run.
const SCRUBBED: &[&str] = &[
    "id",
    "session_id",
    "run_id",
    "created_at",
    "updated_at",
    "started_at",
    "finished_at",
    "time",
    "time_ms",
    "ts",
    "duration_ms",
    "elapsed_ms",
    "modified",
    "modified_ms",
    "workspace",
    "version",
    "uptime_secs",
];

/// The status and the body's bytes of `GET path`, or of `POST path` with `body`.
async fn raw(server: &TestServer, path: &str, body: Option<serde_json::Value>) -> (u16, String) {
    let url = format!("{}{path}", server.url);
    let request = match body {
        Some(body) => server.http.post(url).json(&body),
        None => server.http.get(url),
    };
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn api_bodies_after_a_run() {
    let server = TestServer::start().await;
    server
        .mock
        .push(
            Completion::tool_calls(
                Some("Writing notes.".into()),
                [call(
                    "c1",
                    "bash",
                    &json!({"command": "printf hello > notes.md"}),
                )],
            )
            .with_usage(40, 4),
        )
        .push(
            Completion::tool_calls(
                Some("Done: notes.md holds hello.".into()),
                [call("c2", "terminate", &json!({"status": "success"}))],
            )
            .with_usage(60, 6),
        );
    let mut snapshot = Snapshot::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/snapshots/api.snap"
    ));
    let (status, created) = raw(&server, "/api/sessions", Some(json!({"agent": "swe"}))).await;
    assert_eq!(status, 201, "{created}");
    let id = serde_json::from_str::<serde_json::Value>(&created).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut events = server.events(&id, None).await;
    let (status, queued) = raw(
        &server,
        &format!("/api/sessions/{id}/tasks"),
        Some(json!({"task": "Write notes.md"})),
    )
    .await;
    assert_eq!(status, 202, "{queued}");
    events.until(|e| e.event == "run_finished").await;
    for (name, status, body) in [("create", 201, &created), ("post_task", 202, &queued)] {
        let body = scrub(body, SCRUBBED).replace(&id, "<session>");
        snapshot.case(name, format!("{status} {body}"));
    }
    let (status, body) = raw(
        &server,
        "/api/sessions",
        Some(json!({"agent": "no-such-kind"})),
    )
    .await;
    snapshot.case("create_unknown_kind", format!("{status} {body}"));
    let paths = [
        ("health", "/api/health".to_owned()),
        ("sessions", "/api/sessions".to_owned()),
        ("session", format!("/api/sessions/{id}")),
        ("files", format!("/api/sessions/{id}/files")),
        (
            "unknown_session",
            "/api/sessions/no-such-session".to_owned(),
        ),
        (
            "file_outside",
            format!("/api/sessions/{id}/files/..%2F..%2Fetc%2Fpasswd"),
        ),
    ];
    for (name, path) in paths {
        let (status, body) = raw(&server, &path, None).await;
        let body = scrub(&body, SCRUBBED).replace(&id, "<session>");
        snapshot.case(name, format!("{status} {body}"));
    }
    snapshot.check();
    server.stop().await;
}
