//! A2A over real HTTP: the official Python SDK's clients (a2a-sdk 0.2.5, OpenManus's pin, and
//! the current 1.x) against `openmanus serve`, its agents talking to the strict mock model; and
//! the JSON-RPC errors, the card and the token checked by hand.
//!
//! The SDKs are installed by `cargo xtask ci` / `cargo xtask integration` into virtualenvs
//! under `target/xtask-tools/` (`A2A_PYTHON_0_2` / `A2A_PYTHON_1` name other interpreters). A
//! missing SDK fails these tests: CI always has it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::Stdio;

use agent_testkit::Completion;
use common::{LocalService, PATIENCE, TestServer, call};
use serde_json::{Value, json};

/// The two SDKs.
#[derive(Clone, Copy, Debug)]
enum Sdk {
    /// a2a-sdk 0.2.5 (protocol 0.2, `message/send`).
    V0_2,
    /// a2a-sdk 1.x (protocol 1.0, `SendMessage`).
    V1,
}

impl Sdk {
    fn python(self) -> PathBuf {
        let (env_var, installed) = match self {
            Self::V0_2 => (
                "A2A_PYTHON_0_2",
                "target/xtask-tools/a2a-python-0.2.5/bin/python",
            ),
            Self::V1 => (
                "A2A_PYTHON_1",
                "target/xtask-tools/a2a-python-1.3.0/bin/python",
            ),
        };
        if let Some(path) = std::env::var_os(env_var) {
            return PathBuf::from(path);
        }
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(installed);
        assert!(
            path.exists(),
            "the A2A test peer (the Python a2a-sdk) is missing: run `cargo xtask integration` \
             (it installs it into target/xtask-tools) or set {env_var}"
        );
        path
    }

    fn script(self) -> PathBuf {
        let name = match self {
            Self::V0_2 => "a2a_client_0_2.py",
            Self::V1 => "a2a_client_1.py",
        };
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    /// Runs the SDK client's `scenario` against `server`; the lines it printed.
    async fn run(self, server: &TestServer, scenario: &str, extra: &[&str]) -> Vec<Value> {
        let child = tokio::process::Command::new(self.python())
            .arg(self.script())
            .arg(&server.url)
            .arg(scenario)
            .args(extra)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let output = tokio::time::timeout(PATIENCE, child.wait_with_output())
            .await
            .expect("the SDK client did not finish in time")
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the {self:?} client failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

fn step<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    lines
        .iter()
        .find(|line| line["step"] == name)
        .unwrap_or_else(|| panic!("no {name} step in {lines:?}"))
}

fn state_is(value: &Value, legacy: &str) -> bool {
    let v1 = format!("TASK_STATE_{}", legacy.replace('-', "_").to_uppercase());
    value == legacy || *value == Value::String(v1)
}

fn finish(text: &str) -> Completion {
    Completion::tool_calls(
        Some(text.into()),
        [call("t", "terminate", &json!({"status": "success"}))],
    )
}

async fn send_and_get(sdk: Sdk) {
    let server = TestServer::start().await;
    server.mock.push(finish("Hello from OpenManus."));
    let lines = sdk.run(&server, "send", &[]).await;
    let sent = step(&lines, "sent");
    assert!(state_is(&sent["state"], "completed"), "{lines:?}");
    // The artifact is the final answer, not a step transcript.
    assert_eq!(sent["answer"], "Hello from OpenManus.");
    let got = step(&lines, "got");
    assert!(state_is(&got["state"], "completed"), "{lines:?}");
    assert_eq!(got["answer"], "Hello from OpenManus.");
    assert_eq!(got["history"], 1, "historyLength is honoured");
    // The context is a session of the server, recorded in the store.
    let context = sent["context"].as_str().unwrap();
    let record = server.hub.record(context).await.unwrap();
    assert_eq!(record.runs, 1);
    server.mock.verify().unwrap();
    server.stop().await;
}

#[tokio::test]
async fn sdk_0_2_discovers_the_card_sends_and_gets() {
    send_and_get(Sdk::V0_2).await;
}

#[tokio::test]
async fn sdk_1_discovers_the_card_sends_and_gets() {
    send_and_get(Sdk::V1).await;
}

async fn stream(sdk: Sdk) {
    let server = TestServer::start().await;
    server.mock.push(finish("One, two."));
    let lines = sdk.run(&server, "stream", &[]).await;
    let events: Vec<&Value> = lines.iter().filter(|l| l["step"] == "event").collect();
    let artifact = events
        .iter()
        .position(|e| e["kind"] == "artifact-update")
        .unwrap_or_else(|| panic!("no artifact in {events:?}"));
    assert_eq!(events[artifact]["text"], "One, two.");
    // Status updates arrive while the agent works, before the artifact.
    let working: Vec<&&Value> = events[..artifact]
        .iter()
        .filter(|e| e["kind"] == "status-update" && state_is(&e["state"], "working"))
        .collect();
    assert!(
        working.iter().any(|e| e["text"] == "One, two."),
        "the model's thought streams as a working status: {events:?}"
    );
    let last = events.last().unwrap();
    assert!(
        last["kind"] == "status-update" && state_is(&last["state"], "completed"),
        "{events:?}"
    );
    server.mock.verify().unwrap();
    server.stop().await;
}

#[tokio::test]
async fn sdk_0_2_streams_status_updates_before_the_artifact() {
    stream(Sdk::V0_2).await;
}

#[tokio::test]
async fn sdk_1_streams_status_updates_before_the_artifact() {
    stream(Sdk::V1).await;
}

async fn context(sdk: Sdk) {
    let server = TestServer::start().await;
    server
        .mock
        .push(finish("Noted: 42."))
        .push(finish("The number is 42."));
    let lines = sdk.run(&server, "context", &[]).await;
    let first = step(&lines, "first");
    let second = step(&lines, "second");
    assert_eq!(first["context"], second["context"], "{lines:?}");
    assert_eq!(second["answer"], "The number is 42.");
    // The second task's model request holds the first conversation: the same memory.
    let requests = server.mock.requests();
    assert_eq!(requests.len(), 2);
    let seen: Vec<String> = requests[1]
        .messages()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    assert!(
        seen.iter().any(|c| c.contains("Remember the number 42")),
        "{seen:?}"
    );
    assert!(seen.iter().any(|c| c.contains("Which number?")), "{seen:?}");
    let record = server
        .hub
        .record(first["context"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(record.runs, 2);
    server.stop().await;
}

#[tokio::test]
async fn sdk_0_2_second_message_in_a_context_continues_the_conversation() {
    context(Sdk::V0_2).await;
}

#[tokio::test]
async fn sdk_1_second_message_in_a_context_continues_the_conversation() {
    context(Sdk::V1).await;
}

async fn input_required(sdk: Sdk) {
    let server = TestServer::start().await;
    server
        .mock
        .push(Completion::tool_calls(
            None,
            [call("a", "ask_human", &json!({"inquire": "Which colour?"}))],
        ))
        .push(finish("Blue it is."));
    let lines = sdk.run(&server, "input", &[]).await;
    let asked = step(&lines, "asked");
    assert!(state_is(&asked["state"], "input-required"), "{lines:?}");
    assert_eq!(asked["question"], "Which colour?");
    let answered = step(&lines, "answered");
    assert_eq!(
        answered["task"], asked["task"],
        "the answer continues the same task"
    );
    assert!(state_is(&answered["state"], "completed"), "{lines:?}");
    assert_eq!(answered["answer"], "Blue it is.");
    // The model got the answer as ask_human's result.
    let second = &server.mock.requests()[1];
    assert!(
        second
            .messages()
            .iter()
            .any(|m| m["role"] == "tool"
                && m["content"].as_str().unwrap_or_default().contains("blue")),
        "{:?}",
        second.messages()
    );
    server.mock.verify().unwrap();
    server.stop().await;
}

#[tokio::test]
async fn sdk_0_2_input_required_round_trip() {
    input_required(Sdk::V0_2).await;
}

#[tokio::test]
async fn sdk_1_input_required_round_trip() {
    input_required(Sdk::V1).await;
}

/// A call the sandbox refused (it needs the network) is asked about through `input-required`;
/// the SDK client answers "once", and the call runs again with the network.
async fn approval(sdk: Sdk) {
    let server = TestServer::start().await;
    let service = LocalService::start();
    let code = service.python_client("hello over A2A");
    server
        .mock
        .push(Completion::tool_calls(
            None,
            [call("p", "python_execute", &json!({ "code": code }))],
        ))
        .push(finish("Said hello."));
    let lines = sdk.run(&server, "approve", &[]).await;
    let asked = step(&lines, "asked");
    assert!(state_is(&asked["state"], "input-required"), "{lines:?}");
    let question = asked["question"].as_str().unwrap_or_default();
    assert!(question.contains("`python_execute`"), "{question}");
    assert!(question.contains("[o]nce"), "{question}");
    let answered = step(&lines, "answered");
    assert_eq!(answered["task"], asked["task"]);
    assert!(state_is(&answered["state"], "completed"), "{lines:?}");
    assert_eq!(service.heard().await, "hello over A2A");
    // The model saw the call run again, allowed; the decision is in the session's record.
    let second = &server.mock.requests()[1];
    assert!(
        second.messages().iter().any(|m| m["role"] == "tool"
            && m["content"]
                .as_str()
                .unwrap_or_default()
                .contains("without the sandbox (allowed)")),
        "{:?}",
        second.messages()
    );
    let context = asked_context(&server).await;
    let events = server
        .hub
        .store()
        .events_after(&context, None, 10_000)
        .await
        .unwrap();
    let decisions: Vec<(&Value, &Value)> = events
        .iter()
        .filter(|e| e.data["type"] == "permission")
        .map(|e| (&e.data["decision"], &e.data["by"]))
        .collect();
    assert_eq!(
        decisions,
        [(&json!("allowed"), &json!("person"))],
        "{events:?}"
    );
    server.mock.verify().unwrap();
    server.stop().await;
}

/// The one session of `server` (the A2A context).
async fn asked_context(server: &TestServer) -> String {
    let sessions = server.hub.store().list_sessions().await.unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    sessions[0].id.clone()
}

#[tokio::test]
async fn sdk_0_2_approves_a_refused_call_through_input_required() {
    approval(Sdk::V0_2).await;
}

#[tokio::test]
async fn sdk_1_approves_a_refused_call_through_input_required() {
    approval(Sdk::V1).await;
}

async fn cancel(sdk: Sdk) {
    // Unconfined: the sleep's pid is read after the run, so it must be this machine's number
    // (cancelling a confined run is covered by the CLI's Ctrl-C tests).
    let server = TestServer::start_configured(
        |_| {},
        |config| config.permissions.sandbox = agent_config::SandboxMode::FullAccess,
    )
    .await;
    let pid_file = server.dir.path().join("sleep.pid");
    let command = format!("sh -c 'echo $$ > {}; exec sleep 300'", pid_file.display());
    server.mock.push(Completion::tool_calls(
        None,
        [call("s", "bash", &json!({ "command": command }))],
    ));
    let lines = sdk.run(&server, "cancel", &["swe"]).await;
    let cancelled = step(&lines, "cancelled");
    assert!(state_is(&cancelled["state"], "canceled"), "{lines:?}");
    // The run's process is gone.
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while agent_process::is_running(pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancelled run's sleep (pid {pid}) still runs"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    server.stop().await;
}

#[tokio::test]
async fn sdk_0_2_cancel_stops_the_run_and_its_processes() {
    cancel(Sdk::V0_2).await;
}

#[tokio::test]
async fn sdk_1_cancel_stops_the_run_and_its_processes() {
    cancel(Sdk::V1).await;
}

async fn restart(sdk: Sdk) {
    let server = TestServer::start().await;
    server.mock.push(finish("Hello from OpenManus."));
    let lines = sdk.run(&server, "send", &[]).await;
    let sent = step(&lines, "sent");
    assert!(state_is(&sent["state"], "completed"), "{lines:?}");
    let task = sent["task"].as_str().unwrap().to_owned();
    let context = sent["context"].as_str().unwrap().to_owned();

    // Another process on the same store: the task is found there, as it ended.
    let server = server.restart().await;
    let lines = sdk.run(&server, "get", &[&task]).await;
    let got = step(&lines, "got");
    assert!(state_is(&got["state"], "completed"), "{lines:?}");
    assert_eq!(got["answer"], "Hello from OpenManus.");
    assert_eq!(got["context"], context.as_str());
    server.stop().await;
}

#[tokio::test]
async fn sdk_0_2_gets_a_task_after_the_server_restarted() {
    restart(Sdk::V0_2).await;
}

#[tokio::test]
async fn sdk_1_gets_a_task_after_the_server_restarted() {
    restart(Sdk::V1).await;
}

#[tokio::test]
async fn a_task_running_when_the_server_stops_is_failed_and_listed_after_the_restart() {
    let server = TestServer::start_configured(
        |_| {},
        |config| config.permissions.sandbox = agent_config::SandboxMode::FullAccess,
    )
    .await;
    let started = server.dir.path().join("started");
    let command = format!("touch {}; exec sleep 300", started.display());
    server.mock.push(Completion::tool_calls(
        None,
        [call("s", "bash", &json!({ "command": command }))],
    ));
    let (_, sent) = rpc(
        &server,
        r#"{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "Wait."}], "metadata": {"agent": "swe"}}, "configuration": {"blocking": false}}}"#,
    )
    .await;
    let task = sent["result"]["id"].as_str().unwrap().to_owned();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !started.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run never started: {sent}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    let server = server.restart().await;
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task}});
    let (_, got) = rpc(&server, &get.to_string()).await;
    assert_eq!(got["result"]["status"]["state"], "failed", "{got}");
    let said = got["result"]["status"]["message"]["parts"][0]["text"].clone();
    assert_eq!(said, "the server shut down", "{got}");
    // Ended: it cannot be cancelled or followed.
    let cancel =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"id": task}});
    let (_, cancelled) = rpc(&server, &cancel.to_string()).await;
    assert_eq!(cancelled["error"]["code"], -32002, "{cancelled}");
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "ListTasks", "params": {}});
    let (_, listed) = rpc(&server, &list.to_string()).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [task.as_str()], "{listed}");
    server.stop().await;
}

/// What a receiver got: each notification's token header and body.
type Received = Vec<(Option<String>, Value)>;

/// A client's push notification receiver on 127.0.0.1: every POST to `/hook`, its token
/// header and its JSON body, in arrival order.
struct Receiver {
    url: String,
    got: std::sync::Arc<std::sync::Mutex<Received>>,
    arrived: std::sync::Arc<tokio::sync::Notify>,
}

impl Receiver {
    async fn start() -> Self {
        use axum::routing::post;
        let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let arrived = std::sync::Arc::new(tokio::sync::Notify::new());
        let (record, notify) = (got.clone(), arrived.clone());
        let app = axum::Router::new().route(
            "/hook",
            post(
                move |headers: axum::http::HeaderMap, body: axum::Json<Value>| {
                    let token = headers
                        .get("x-a2a-notification-token")
                        .map(|v| v.to_str().unwrap().to_owned());
                    record.lock().unwrap().push((token, body.0));
                    notify.notify_waiters();
                    async { axum::http::StatusCode::OK }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { url, got, arrived }
    }

    /// Waits until a notification satisfies `done`; everything received until then.
    async fn until(&self, done: impl Fn(&Value) -> bool) -> Received {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let arrived = self.arrived.notified();
            {
                let got = self.got.lock().unwrap();
                if got.iter().any(|(_, body)| done(body)) {
                    return got.clone();
                }
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!("no such notification: {:?}", self.got.lock().unwrap());
            }
        }
    }
}

#[tokio::test]
async fn sdk_1_push_notifications_reach_the_clients_receiver() {
    let server = TestServer::start().await;
    let receiver = Receiver::start().await;
    server.mock.push(finish("Hello from OpenManus."));
    let lines = Sdk::V1.run(&server, "push", &[&receiver.url]).await;
    let sent = step(&lines, "sent");
    assert!(state_is(&sent["state"], "completed"), "{lines:?}");
    // The four setting methods, through the SDK.
    assert_eq!(step(&lines, "created")["id"], "second", "{lines:?}");
    assert_eq!(step(&lines, "created")["token"], "tok-2");
    let mut listed: Vec<Value> = step(&lines, "listed")["ids"].as_array().unwrap().clone();
    listed.sort_by_key(|id| id != "second");
    assert_eq!(listed, [json!("second"), sent["task"].clone()]);
    assert_eq!(step(&lines, "got")["token"], "tok-2");
    assert_eq!(step(&lines, "deleted")["ids"], json!([sent["task"]]));

    // The task's changes reached the receiver, as 1.0 stream responses, with the token.
    let completed =
        |body: &Value| body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED";
    let got = receiver.until(completed).await;
    assert!(
        got.iter()
            .all(|(token, _)| token.as_deref() == Some("tok-1")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .all(|(_, body)| body["statusUpdate"]["taskId"] == sent["task"]
                || body["artifactUpdate"]["taskId"] == sent["task"]),
        "{got:?}"
    );
    let answer = got
        .iter()
        .position(|(_, body)| {
            body["artifactUpdate"]["artifact"]["parts"][0]["text"] == "Hello from OpenManus."
        })
        .unwrap_or_else(|| panic!("no answer in {got:?}"));
    let end = got.iter().position(|(_, body)| completed(body)).unwrap();
    assert!(answer < end, "the answer comes before the end: {got:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_0_3_push_setting_in_the_message_gets_the_task_as_it_stands() {
    let server = TestServer::start().await;
    let receiver = Receiver::start().await;
    server.mock.push(finish("Done here."));
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "Go."}]},
        "configuration": {"pushNotificationConfig": {"url": receiver.url, "token": "legacy",
            "authentication": {"schemes": ["Bearer"], "credentials": "xyz"}}}}});
    let (_, sent) = rpc(&server, &send.to_string()).await;
    let task = sent["result"]["id"].as_str().unwrap().to_owned();
    let got = receiver
        .until(|body| body["status"]["state"] == "completed")
        .await;
    let (token, last) = got.last().unwrap();
    assert_eq!(token.as_deref(), Some("legacy"));
    assert_eq!(last["kind"], "task", "{last}");
    assert_eq!(last["id"], task.as_str());
    assert_eq!(last["artifacts"][0]["parts"][0]["text"], "Done here.");

    // The setting is the task's, under the task's id; after a restart it is still there.
    let server = server.restart().await;
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/pushNotificationConfig/get",
        "params": {"id": task}});
    let (_, config) = rpc(&server, &get.to_string()).await;
    let setting = &config["result"]["pushNotificationConfig"];
    assert_eq!(setting["id"], task.as_str(), "{config}");
    assert_eq!(setting["url"], receiver.url.as_str());
    assert_eq!(setting["authentication"]["schemes"], json!(["Bearer"]));
    server.stop().await;
}

/// Posts a raw JSON-RPC body to `/a2a`.
async fn rpc(server: &TestServer, body: &str) -> (u16, Value) {
    let response = server
        .http
        .post(format!("{}/a2a", server.url))
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn bad_requests_get_json_rpc_errors_never_a_500() {
    let server = TestServer::start().await;
    let cases = [
        ("{not json", -32700),
        ("[1, 2]", -32600),
        (r#"{"jsonrpc": "2.0", "id": 1}"#, -32600),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tasks/explode", "params": {}}"#,
            -32601,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "  "}]}}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "hi"}], "contextId": "no-such-context"}}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}], "metadata": {"agent": "robot"}}}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "nope"}}"#,
            -32001,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}"#,
            -32001,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"id": "nope"}}"#,
            -32001,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tasks/resubscribe", "params": {"id": "nope"}}"#,
            -32001,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "hi"}], "taskId": "nope"}}}"#,
            -32001,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tasks/pushNotificationConfig/set", "params": {}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tasks/pushNotificationConfig/set", "params": {"taskId": "nope", "pushNotificationConfig": {"url": "http://127.0.0.1:9/"}}}"#,
            -32001,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig", "params": {"taskId": "nope", "url": "file:///etc/passwd"}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tasks/pushNotificationConfig/explode", "params": {}}"#,
            -32601,
        ),
    ];
    for (body, code) in cases {
        let (status, reply) = rpc(&server, body).await;
        assert_eq!(status, 200, "{body}: {reply}");
        assert_eq!(reply["jsonrpc"], "2.0", "{body}: {reply}");
        assert_eq!(reply["error"]["code"], code, "{body}: {reply}");
        assert!(reply["error"]["message"].is_string(), "{reply}");
    }
    // A finished task cannot be cancelled, and cannot be resubscribed to.
    server.mock.push(finish("Done."));
    let (_, sent) = rpc(
        &server,
        r#"{"jsonrpc": "2.0", "id": "s", "method": "message/send", "params": {"message": {"kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}}"#,
    )
    .await;
    assert_eq!(sent["id"], "s");
    assert_eq!(sent["result"]["status"]["state"], "completed", "{sent}");
    let task = sent["result"]["id"].as_str().unwrap();
    let (_, reply) = rpc(
        &server,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/cancel", "params": {"id": task}})
            .to_string(),
    )
    .await;
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
    let (_, reply) = rpc(
        &server,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/resubscribe", "params": {"id": task}})
            .to_string(),
    )
    .await;
    assert_eq!(reply["error"]["code"], -32004, "{reply}");
    // Sending to the ended task is refused; the context continues with a new task instead.
    let (_, reply) = rpc(
        &server,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "message/send", "params": {"message": {
            "kind": "message", "messageId": "m2", "role": "user",
            "parts": [{"kind": "text", "text": "more"}], "taskId": task}}})
        .to_string(),
    )
    .await;
    assert_eq!(reply["error"]["code"], -32004, "{reply}");
    server.mock.verify().unwrap();
    server.stop().await;
}

#[tokio::test]
async fn the_card_lists_the_real_tools_and_the_token_guards_json_rpc() {
    let token = "a-long-test-token-0123456789";
    let server = TestServer::start_with(|options| options.token = Some(token.into())).await;
    for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
        let (status, card) = server.get(path).await;
        assert_eq!(status, 200, "the card is public: {card}");
        assert_eq!(card["capabilities"]["streaming"], true);
        assert_eq!(card["protocolVersion"], "0.3.0");
        assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
        assert_eq!(card["url"], format!("{}/a2a", server.url));
        assert_eq!(card["securitySchemes"]["bearer"]["scheme"], "bearer");
        let skills: Vec<&str> = card["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        for tool in [
            "python_execute",
            "str_replace_editor",
            "ask_human",
            "terminate",
        ] {
            assert!(skills.contains(&tool), "{skills:?}");
        }
    }
    let body = r#"{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}}"#;
    for path in ["/a2a", "/"] {
        let refused = server
            .http
            .post(format!("{}{path}", server.url))
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401, "{path}");
        let allowed = server
            .http
            .post(format!("{}{path}", server.url))
            .bearer_auth(token)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(allowed.status(), 200, "{path}");
        let reply: Value = allowed.json().await.unwrap();
        assert_eq!(reply["error"]["code"], -32001);
    }
    server.stop().await;
}

#[tokio::test]
async fn resubscribing_follows_a_waiting_task_through_its_answer_to_its_end() {
    let server = TestServer::start().await;
    server
        .mock
        .push(Completion::tool_calls(
            None,
            [call("a", "ask_human", &json!({"inquire": "Which colour?"}))],
        ))
        .push(finish("Green."));
    let (_, sent) = rpc(
        &server,
        r#"{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "Pick"}]}}}"#,
    )
    .await;
    let task = &sent["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{sent}"
    );
    let id = task["id"].as_str().unwrap().to_owned();
    let context = task["contextId"].as_str().unwrap().to_owned();
    // Subscribed (the response has begun) before the answer goes in.
    let subscription = server
        .http
        .post(format!("{}/a2a", server.url))
        .body(
            json!({"jsonrpc": "2.0", "id": 3, "method": "SubscribeToTask", "params": {"id": id}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(subscription.status(), 200);
    let (_, answered) = rpc(
        &server,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {
            "message": {"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "green"}],
                        "taskId": id, "contextId": context},
            "configuration": {"returnImmediately": true}}})
        .to_string(),
    )
    .await;
    assert_eq!(answered["result"]["task"]["id"], id.as_str(), "{answered}");
    let text = tokio::time::timeout(PATIENCE, subscription.text())
        .await
        .unwrap()
        .unwrap();
    let results: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str::<Value>(data.trim()).unwrap()["result"].clone())
        .collect();
    assert_eq!(
        results[0]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "the stream opens with the task as it stands: {text}"
    );
    assert!(
        results
            .iter()
            .any(|r| r["artifactUpdate"]["artifact"]["parts"][0]["text"] == "Green."),
        "{text}"
    );
    assert_eq!(
        results.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{text}"
    );
    server.mock.verify().unwrap();
    server.stop().await;
}
