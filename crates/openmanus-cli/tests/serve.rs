//! `openmanus serve` as a subprocess against the strict mock: a run is started over the API, the
//! server is killed with SIGKILL in the middle of a tool (whose processes, `setsid` ones
//! included, die with it), started again on the same store, lists
//! the session as interrupted, and resumes it with a new task — the restored memory answers
//! every tool call.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use agent_core::check_tool_pairing;
use agent_store::Store;
use agent_testkit::{Completion, MockOpenAi};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::common::{
    alive, assert_all_gone, bash_leaving_children, call, recorded_pids, start_serve,
};

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

/// Starts `openmanus serve` on a free port in `dir`; returns the child and the base URL.
async fn serve(dir: &Path) -> (Child, String) {
    let mut command = Command::new(BIN);
    command
        .current_dir(dir)
        .env_remove("OPENMANUS_CONFIG")
        .env("NO_COLOR", "1")
        .env("TMPDIR", dir.join("tmp"))
        .args(["serve", "--bind", "127.0.0.1:0"]);
    start_serve(command).await
}

async fn wait_for<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn get(http: &reqwest::Client, url: &str) -> Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn a_server_killed_mid_run_resumes_the_session_after_a_restart() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    std::fs::write(
        dir.path().join("config/config.toml"),
        format!(
            // Unconfined: the tools record their pids outside the workspace, as this machine
            // numbers them (the keeper, not the confinement, is under test).
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-serve-test\"\nmax_attempts = 1\n\n[permissions]\nsandbox = \"full-access\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let pid_file = dir.path().join("tmp/sleep.pid");
    server.push(Completion::tool_calls(
        Some("Working on it.".into()),
        [call(
            "c1",
            "bash",
            json!({"command": bash_leaving_children(&pid_file)}),
        )],
    ));
    let http = agent_llm::http::shared_client().unwrap();
    let (mut first, url) = serve(dir.path()).await;
    let created: Value = http
        .post(format!("{url}/api/sessions"))
        .json(&json!({"agent": "swe", "task": "Take your time."}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    // The tool's bash and the two processes it left behind (one in a session of its own).
    let tools = recorded_pids(&pid_file).await;
    assert!(tools.iter().all(|(_, pid)| alive(*pid)), "{tools:?}");
    let pid = i32::try_from(first.id().unwrap()).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    first.wait().await.unwrap();
    // The killed server's keeper stops them all.
    assert_all_gone(&tools, "the server's SIGKILL").await;

    // A new server on the same store lists the session, its run interrupted.
    let (_second, url) = serve(dir.path()).await;
    let listed = get(&http, &format!("{url}/api/sessions")).await;
    let session = &listed["sessions"][0];
    assert_eq!(session["id"], id.as_str());
    assert_eq!(session["state"], "interrupted", "{listed}");

    server.push(Completion::tool_calls(
        Some("Recovered.".into()),
        [call("c2", "terminate", json!({"status": "success"}))],
    ));
    let response = http
        .post(format!("{url}/api/sessions/{id}/tasks"))
        .json(&json!({"task": "Try something quicker."}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    wait_for("the resumed run to finish", || {
        let http = http.clone();
        let url = format!("{url}/api/sessions/{id}");
        async move { get(&http, &url).await["state"] == "finished" }
    })
    .await;
    // The strict mock accepted the resumed request: the killed call is answered.
    server.verify().unwrap();
    let last = server.requests().last().unwrap().body["messages"].clone();
    assert!(
        last.as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "tool" && m["tool_call_id"] == "c1"),
        "{last:#}"
    );
    let session = get(&http, &format!("{url}/api/sessions/{id}")).await;
    let runs: Vec<&str> = session["run_list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["interrupted", "finished"]);
    let database = Path::new(session["workspace"].as_str().unwrap())
        .ancestors()
        .nth(2)
        .unwrap()
        .join(".openmanus/sessions.db");
    let store = Store::open(&database).await.unwrap();
    check_tool_pairing(&store.messages(&id).await.unwrap(), false).unwrap();
}
