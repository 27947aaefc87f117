//! `openmanus acp` driven as an editor drives it: the official ACP TypeScript SDK
//! (@agentclientprotocol/sdk, installed by `cargo xtask ci` / `cargo xtask integration` under
//! `target/xtask-tools/`; `ACP_SDK` names another copy of its `dist/v1/stable/acp.js`) starts
//! the real binary, whose agent talks to the strict mock model. And the raw protocol by hand:
//! what stdout carries, a line that is not JSON.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use agent_testkit::{Completion, Fault, MockOpenAi};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::common::{BIN, Setup, alive, call};

/// How long a scenario may take on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(120);

fn sdk() -> PathBuf {
    if let Some(path) = std::env::var_os("ACP_SDK") {
        return PathBuf::from(path);
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../../target/xtask-tools/acp-sdk-2.4.0/node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js",
    );
    assert!(
        path.exists(),
        "the ACP test peer (@agentclientprotocol/sdk) is missing: run `cargo xtask integration` \
         (it installs it with npm into target/xtask-tools) or set ACP_SDK"
    );
    path
}

/// Runs the SDK client's `scenario` against `openmanus acp` in `setup`; the lines it printed.
async fn editor(setup: &Setup, scenario: &str) -> Vec<Value> {
    editor_with(setup, scenario, &[]).await
}

/// [`editor`] with more environment for the script.
async fn editor_with(setup: &Setup, scenario: &str, env: &[(&str, &str)]) -> Vec<Value> {
    editor_logged(setup, scenario, env).await.0
}

/// [`editor_with`], also returning what the agent and the script wrote on standard error.
async fn editor_logged(
    setup: &Setup,
    scenario: &str,
    env: &[(&str, &str)],
) -> (Vec<Value>, String) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp_client.mjs");
    let child = Command::new("node")
        .arg(script)
        .arg(scenario)
        .arg(setup.workspace())
        .current_dir(setup.dir.path())
        .env("OPENMANUS_BIN", BIN)
        .env("ACP_SDK", sdk())
        .env_remove("OPENMANUS_CONFIG")
        .env("NO_COLOR", "1")
        .env("TMPDIR", setup.tmp())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // What it printed is read as it comes, so that a scenario that hangs still shows how far
    // it got.
    let collect = |pipe: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>>| {
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = text.clone();
        let task = tokio::spawn(async move {
            let mut lines = BufReader::new(pipe.unwrap()).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        (text, task)
    };
    let mut child = child;
    let (stdout, out_task) = collect(child.stdout.take().map(|p| Box::new(p) as _));
    let (stderr, err_task) = collect(child.stderr.take().map(|p| Box::new(p) as _));
    let Ok(status) = tokio::time::timeout(PATIENCE, child.wait()).await else {
        let _ = child.kill().await;
        panic!(
            "the editor did not finish in time:\n{}\n{}",
            stdout.lock().unwrap(),
            stderr.lock().unwrap()
        );
    };
    let status = status.unwrap();
    let _ = tokio::join!(out_task, err_task);
    let stdout = stdout.lock().unwrap().clone();
    let stderr = stderr.lock().unwrap().clone();
    assert!(
        status.success(),
        "the editor failed ({status}):\n{stdout}\n{stderr}"
    );
    let lines = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("{line}\n{stderr}")))
        .collect();
    (lines, stderr)
}

fn step<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    lines
        .iter()
        .find(|line| line["step"] == name)
        .unwrap_or_else(|| panic!("no {name} step in {lines:?}"))
}

fn updates(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|l| l["step"] == "update").collect()
}

#[tokio::test]
async fn a_prompt_that_edits_a_file_streams_its_message_and_the_edit_as_a_diff() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let file = setup.workspace().join("hello.txt");
    server
        .push(
            Completion::tool_calls(
                Some("Writing the file.".into()),
                [call(
                    "e1",
                    "str_replace_editor",
                    json!({"command": "create", "path": file, "file_text": "hello from acp\n"}),
                )],
            )
            .with_reasoning("The user wants hello.txt; the editor tool creates it."),
        )
        .push(Completion::tool_calls(
            Some("Done: hello.txt is written.".into()),
            [call("t", "terminate", json!({"status": "success"}))],
        ));
    let lines = editor(&setup, "edit").await;

    let init = step(&lines, "initialized");
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agent"], "openmanus");
    assert_eq!(init["embeddedContext"], true);
    assert_eq!(step(&lines, "done")["stopReason"], "end_turn", "{lines:?}");
    assert_eq!(step(&lines, "exit")["code"], 0);

    let updates = updates(&lines);
    let texts: Vec<&str> = updates
        .iter()
        .filter(|u| u["kind"] == "agent_message_chunk")
        .filter_map(|u| u["text"].as_str())
        .collect();
    assert!(texts.concat().contains("Writing the file."), "{updates:?}");
    // The model's reasoning is the agent's thought, apart from its message.
    let thoughts: Vec<&str> = updates
        .iter()
        .filter(|u| u["kind"] == "agent_thought_chunk")
        .filter_map(|u| u["text"].as_str())
        .collect();
    assert_eq!(
        thoughts.concat(),
        "The user wants hello.txt; the editor tool creates it.",
        "{updates:?}"
    );
    assert!(!texts.concat().contains("editor tool"), "{updates:?}");
    assert!(
        texts.concat().contains("Done: hello.txt is written."),
        "{updates:?}"
    );
    let started = updates
        .iter()
        .find(|u| u["kind"] == "tool_call" && u["id"] == "e1")
        .unwrap_or_else(|| panic!("{updates:?}"));
    assert_eq!(started["toolKind"], "edit");
    assert_eq!(started["status"], "in_progress");
    assert_eq!(started["locations"], json!([file]));
    let finished = updates
        .iter()
        .find(|u| u["kind"] == "tool_call_update" && u["id"] == "e1" && u["status"] == "completed")
        .unwrap_or_else(|| panic!("{updates:?}"));
    assert_eq!(finished["diff"]["newText"], "hello from acp\n");
    assert_eq!(finished["diff"]["path"], json!(file));
    // The file is there, in the session's directory: the editor's cwd.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello from acp\n");
    server.verify().unwrap();
}

#[tokio::test]
async fn cancel_in_the_middle_of_a_shell_command_stops_it_and_answers_cancelled() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    // Unconfined, so that the sleep's pid is this machine's number.
    setup.append_config("[permissions]\nsandbox = \"full-access\"\n");
    let pid_file = setup.dir.path().join("sleep.pid");
    let command = format!("sh -c 'echo $$ > {}; exec sleep 600'", pid_file.display());
    server.push(Completion::tool_calls(
        None,
        [call("s1", "bash", json!({ "command": command }))],
    ));
    let wait_for = pid_file.display().to_string();
    let env = [
        ("ACP_WAIT_FOR", wait_for.as_str()),
        ("ACP_ARGS", "--agent swe acp"),
    ];
    let lines = editor_with(&setup, "cancel", &env).await;
    assert_eq!(step(&lines, "done")["stopReason"], "cancelled", "{lines:?}");
    assert_eq!(step(&lines, "exit")["code"], 0);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while alive(pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancelled run's sleep (pid {pid}) still runs"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A run whose code asks first (`approval = "untrusted"`), answered `answer` in the editor; the
/// editor's lines, whether the code ran, and what the model was told.
async fn asked(answer: &str) -> (Vec<Value>, bool, String) {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    setup.append_config("[permissions]\napproval = \"untrusted\"\n");
    let ran = setup.workspace().join("ran.txt");
    let code = format!("open({:?}, 'w').write('yes')", ran.display().to_string());
    server
        .push(Completion::tool_calls(
            None,
            [call("p1", "python_execute", json!({ "code": code }))],
        ))
        .push(Completion::tool_calls(
            Some("Done.".into()),
            [call("t", "terminate", json!({"status": "success"}))],
        ));
    let lines = editor_with(&setup, "permission", &[("ACP_ANSWER", answer)]).await;
    let told = server.requests()[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    server.verify().unwrap();
    (lines, ran.exists(), told)
}

#[tokio::test]
async fn a_permission_asked_in_the_editor_and_allowed_lets_the_code_run() {
    let (lines, ran, _) = asked("once").await;
    let asked = step(&lines, "permission");
    assert_eq!(
        asked["toolCallId"], "p1",
        "the question is about the call: {lines:?}"
    );
    let options = asked["options"].as_array().unwrap();
    assert!(
        options.contains(&json!(["once", "allow_once"])),
        "{options:?}"
    );
    assert!(
        options.contains(&json!(["deny", "reject_once"])),
        "{options:?}"
    );
    assert!(!asked["question"].as_str().unwrap_or_default().is_empty());
    // The call's update came before the question about it.
    let started = lines
        .iter()
        .position(|l| l["kind"] == "tool_call" && l["id"] == "p1")
        .unwrap();
    let question = lines
        .iter()
        .position(|l| l["step"] == "permission")
        .unwrap();
    assert!(started < question, "{lines:?}");
    // The question keeps the call's title as the editor has it from the call's update.
    assert!(asked["title"].is_string(), "{asked}");
    assert_eq!(asked["title"], lines[started]["title"], "{lines:?}");
    assert!(ran, "allowed, the code ran");
    assert_eq!(step(&lines, "done")["stopReason"], "end_turn");
}

#[tokio::test]
async fn a_permission_rejected_in_the_editor_keeps_the_code_from_running_and_the_model_is_told() {
    let (lines, ran, told) = asked("deny").await;
    assert!(step(&lines, "permission").is_object());
    assert!(!ran, "rejected, the code did not run");
    assert!(
        told.contains("declined"),
        "the model sees the refusal: {told}"
    );
    assert_eq!(step(&lines, "done")["stopReason"], "end_turn");
}

#[tokio::test]
async fn an_earlier_session_is_listed_loaded_with_its_history_and_continued() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let file = setup.workspace().join("hello.txt");
    server
        .push(Completion::tool_calls(
            Some("Writing the file.".into()),
            [call(
                "e1",
                "str_replace_editor",
                json!({"command": "create", "path": file, "file_text": "hi\n"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Written.".into()),
            [call("t1", "terminate", json!({"status": "success"}))],
        ))
        .push(Completion::tool_calls(
            Some("Nothing more to do.".into()),
            [call("t2", "terminate", json!({"status": "success"}))],
        ));
    let first = editor(&setup, "edit").await;
    let init = step(&first, "initialized");
    assert_eq!(init["loadSession"], true);
    assert_eq!(init["list"], true);
    let id = step(&first, "session")["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();

    // Another editor process: the session is listed, loaded, continued.
    let lines = editor_with(&setup, "load", &[("ACP_SESSION", &id)]).await;
    let listed = step(&lines, "listed")["sessions"]
        .as_array()
        .unwrap()
        .clone();
    let workspace = setup.workspace().display().to_string();
    assert!(
        listed
            .iter()
            .any(|s| s[0] == id.as_str() && s[1] == workspace.as_str()),
        "{listed:?}"
    );
    let loaded = lines.iter().position(|l| l["step"] == "loaded").unwrap();
    let history = &lines[..loaded];
    let said = |kind: &str, text: &str| {
        history
            .iter()
            .any(|l| l["kind"] == kind && l["text"].as_str().is_some_and(|t| t.contains(text)))
    };
    assert!(
        said("user_message_chunk", "Write hello.txt."),
        "{history:?}"
    );
    assert!(
        said("agent_message_chunk", "Writing the file."),
        "{history:?}"
    );
    assert!(
        history
            .iter()
            .any(|l| l["kind"] == "tool_call" && l["id"] == "e1" && l["toolKind"] == "edit"),
        "{history:?}"
    );
    assert_eq!(step(&lines, "done")["stopReason"], "end_turn");
    // The agent had its memory back: the new request carries the earlier task.
    let third = server.requests()[2].body["messages"].to_string();
    assert!(third.contains("Write hello.txt."), "{third}");
    assert!(third.contains("And now?"), "{third}");
    server.verify().unwrap();
}

#[tokio::test]
async fn the_editors_mcp_servers_give_the_agent_their_tools() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "m1",
                "mcp_ed_bash",
                json!({"command": "echo via-the-editors-server"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Done.".into()),
            [call("t", "terminate", json!({"status": "success"}))],
        ));
    // The first step waits for the editor's server however loaded the machine is.
    setup.append_config("[mcp]\nstartup_wait_secs = 120\n");
    // The editor's server: our own tools over stdio.
    let servers = json!([{"name": "ed", "command": BIN, "args": ["mcp-server"], "env": []}]);
    let lines = editor_with(&setup, "edit", &[("ACP_MCP", &servers.to_string())]).await;
    assert_eq!(step(&lines, "done")["stopReason"], "end_turn", "{lines:?}");
    let requests = server.requests();
    let tools = requests[0].body["tools"].to_string();
    assert!(tools.contains("\"mcp_ed_bash\""), "{tools}");
    let told = requests[1].body["messages"].to_string();
    assert!(told.contains("via-the-editors-server"), "{told}");
    server.verify().unwrap();
}

#[tokio::test]
async fn the_file_tool_reads_and_writes_through_the_editor_when_it_offers_to() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let notes = setup.workspace().join("notes.txt");
    std::fs::write(&notes, "on disk\n").unwrap();
    let out = setup.workspace().join("out.txt");
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "v1",
                "str_replace_editor",
                json!({"command": "view", "path": notes}),
            )],
        ))
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "str_replace_editor",
                json!({"command": "create", "path": out, "file_text": "written via the editor\n"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Done.".into()),
            [call("t", "terminate", json!({"status": "success"}))],
        ));
    let lines = editor_with(&setup, "edit", &[("ACP_FS", "1")]).await;
    assert_eq!(step(&lines, "done")["stopReason"], "end_turn", "{lines:?}");
    // The view saw the editor's buffer, not the disk.
    assert_eq!(step(&lines, "fs-read")["path"], json!(notes));
    let viewed = server.requests()[1].body["messages"].to_string();
    assert!(viewed.contains("the unsaved buffer"), "{viewed}");
    assert!(!viewed.contains("on disk"), "{viewed}");
    // The new file went to the editor.
    let wrote = step(&lines, "fs-write");
    assert_eq!(wrote["path"], json!(out));
    assert_eq!(wrote["content"], "written via the editor\n");
    server.verify().unwrap();
}

#[tokio::test]
async fn an_image_in_the_prompt_reaches_the_model() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server
        .push(Completion::tool_calls(
            Some("A single pixel.".into()),
            [call("t", "terminate", json!({"status": "success"}))],
        ))
        .push(Completion::tool_calls(
            Some("Still one pixel.".into()),
            [call("t2", "terminate", json!({"status": "success"}))],
        ));
    let lines = editor(&setup, "image").await;
    assert_eq!(step(&lines, "initialized")["image"], true);
    assert_eq!(step(&lines, "done")["stopReason"], "end_turn", "{lines:?}");
    let sent = server.requests()[0].body["messages"].to_string();
    assert!(
        sent.contains("data:image/png;base64,iVBORw0KGgo"),
        "the model got the image: {sent}"
    );
    assert!(sent.contains("What is in the picture?"), "{sent}");
    // An image of a type the model does not take is refused, before anything runs.
    assert_eq!(step(&lines, "tiff")["code"], -32602);
    // An image alone is a prompt too (the agent advertises images): the task is to look.
    assert_eq!(
        step(&lines, "image-only")["stopReason"],
        "end_turn",
        "{lines:?}"
    );
    let sent = server.requests()[1].body["messages"].to_string();
    assert!(sent.contains("See the attached image."), "{sent}");
    assert!(sent.contains("data:image/png;base64,iVBORw0KGgo"), "{sent}");
    server.verify().unwrap();
}

#[tokio::test]
async fn the_mode_menu_switches_the_approval_policy_of_a_live_session() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let ran = setup.workspace().join("ran.txt");
    let code = format!("open({:?}, 'w').write('yes')", ran.display().to_string());
    server
        .push(Completion::tool_calls(
            None,
            [call("p1", "python_execute", json!({ "code": code }))],
        ))
        .push(Completion::tool_calls(
            Some("Done.".into()),
            [call("t", "terminate", json!({"status": "success"}))],
        ));
    // The configured policy asks only when the sandbox refuses; the editor switches to
    // `untrusted`, which asks before any code.
    let env = [("ACP_MODE", "untrusted"), ("ACP_ANSWER", "once")];
    let lines = editor_with(&setup, "mode", &env).await;
    let created = step(&lines, "session");
    assert_eq!(created["mode"], "on-request");
    assert_eq!(
        created["modes"],
        json!(["untrusted", "on-request", "never"])
    );
    assert_eq!(step(&lines, "bad-mode")["code"], -32602);
    assert_eq!(step(&lines, "permission")["toolCallId"], "p1", "{lines:?}");
    assert!(ran.exists());
    assert_eq!(step(&lines, "done")["stopReason"], "end_turn");
    server.verify().unwrap();
}

#[tokio::test]
async fn the_planning_flows_plan_goes_to_the_editor_as_plan_updates() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "p1",
                "planning",
                json!({"command": "create", "plan_id": "plan_e", "title": "Editor",
                       "steps": ["[MANUS] write the notes", "[MANUS] read them back"]}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Step one done.".into()),
            [call("t1", "terminate", json!({"status": "success"}))],
        ))
        .push(Completion::tool_calls(
            Some("Step two done.".into()),
            [call("t2", "terminate", json!({"status": "success"}))],
        ))
        .push_text("Summary: both steps done.");
    let lines = editor_with(&setup, "edit", &[("ACP_ARGS", "acp --flow")]).await;
    assert_eq!(step(&lines, "done")["stopReason"], "end_turn", "{lines:?}");
    let plans: Vec<&Value> = updates(&lines)
        .into_iter()
        .filter(|u| u["kind"] == "plan")
        .map(|u| &u["plan"])
        .collect();
    let first = plans
        .first()
        .unwrap_or_else(|| panic!("no plan in {lines:?}"));
    assert_eq!(
        **first,
        json!([
            ["[MANUS] write the notes", "pending"],
            ["[MANUS] read them back", "pending"]
        ])
    );
    assert!(
        plans.contains(&&json!([
            ["[MANUS] write the notes", "in_progress"],
            ["[MANUS] read them back", "pending"]
        ])),
        "{plans:?}"
    );
    let last = plans.last().unwrap();
    assert_eq!(
        **last,
        json!([
            ["[MANUS] write the notes", "completed"],
            ["[MANUS] read them back", "completed"]
        ])
    );
    server.verify().unwrap();
}

#[tokio::test]
async fn a_cancel_right_behind_the_prompt_is_not_lost() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    // The model would take ten minutes: only the cancel can end the turn soon.
    server.push(Fault::slow_first_byte(
        Duration::from_secs(600),
        Completion::text("Too late."),
    ));
    let lines = editor(&setup, "cancel-at-once").await;
    assert_eq!(step(&lines, "done")["stopReason"], "cancelled", "{lines:?}");
    assert_eq!(step(&lines, "exit")["code"], 0);
}

#[tokio::test]
async fn bad_requests_get_their_json_rpc_errors_and_the_connection_stays_usable() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let lines = editor(&setup, "errors").await;
    let code = |name: &str| {
        lines
            .iter()
            .find(|l| l["step"] == "error" && l["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {lines:?}"))["code"]
            .clone()
    };
    assert_eq!(code("unknown-method"), -32601);
    assert_eq!(code("unknown-session"), -32002);
    assert_eq!(code("relative-cwd"), -32602);
    assert_eq!(code("empty-prompt"), -32602);
    assert_eq!(step(&lines, "usable")["fresh"], true);
    assert_eq!(step(&lines, "exit")["code"], 0);
}

#[tokio::test]
async fn a_line_that_is_not_json_is_a_parse_error_and_stdout_carries_only_the_protocol() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let mut child = Command::new(BIN)
        .arg("acp")
        .current_dir(setup.dir.path())
        .env_remove("OPENMANUS_CONFIG")
        .env("NO_COLOR", "1")
        .env("TMPDIR", setup.tmp())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(b"{not json\n").await.unwrap();
    stdin
        .write_all(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": 1, "clientCapabilities": {}}})
            .to_string()
            .as_bytes(),
        )
        .await
        .unwrap();
    stdin.write_all(b"\n").await.unwrap();
    let mut replies = Vec::new();
    while replies.len() < 2 {
        let line = tokio::time::timeout(PATIENCE, stdout.next_line())
            .await
            .expect("no reply in time")
            .unwrap()
            .expect("stdout closed");
        // Every line on stdout is a JSON-RPC message.
        let message: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("{line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        replies.push(message);
    }
    let parse = replies.iter().find(|r| r["error"].is_object()).unwrap();
    assert_eq!(parse["error"]["code"], -32700, "{replies:?}");
    let init = replies.iter().find(|r| r["id"] == 1).unwrap();
    assert_eq!(init["result"]["protocolVersion"], 1, "{replies:?}");
    drop(stdin);
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn an_idle_session_past_the_limit_is_closed_and_opens_again_when_prompted() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server
        .push(Completion::tool_calls(
            Some("First answer.".into()),
            [call("t1", "terminate", json!({"status": "success"}))],
        ))
        .push(Completion::tool_calls(
            Some("Second answer.".into()),
            [call("t2", "terminate", json!({"status": "success"}))],
        ));
    let more = agent_acp::MAX_OPEN_SESSIONS.to_string();
    let (lines, stderr) = editor_logged(
        &setup,
        "many",
        &[
            ("ACP_ARGS", "--agent swe acp"),
            ("ACP_MORE", &more),
            ("OPENMANUS_LOG", "agent_acp=info"),
        ],
    )
    .await;
    assert_eq!(step(&lines, "first")["stopReason"], "end_turn", "{lines:?}");
    assert_eq!(
        step(&lines, "opened")["count"],
        json!(more.parse::<u64>().unwrap())
    );
    assert_eq!(step(&lines, "again")["stopReason"], "end_turn", "{lines:?}");
    // The first session, the least recently used, was closed when the limit was passed, and
    // opened again from the store for its second prompt, its conversation kept.
    let first = step(&lines, "session")["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let closed = stderr
        .lines()
        .find(|line| line.contains("closing an idle ACP session"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(closed.contains(&first), "{closed}");
    assert!(
        stderr.contains("an idle ACP session opened again"),
        "{stderr}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let users: Vec<&str> = requests[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(users, ["First question.", "Second question."], "{users:?}");
}

#[tokio::test]
async fn a_reply_the_model_declines_answers_refusal_with_its_words() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server.push(Completion::refusal("I can't help with that request."));
    let lines = editor(&setup, "refusal").await;
    assert_eq!(step(&lines, "done")["stopReason"], "refusal", "{lines:?}");
    let texts: String = updates(&lines)
        .iter()
        .filter(|u| u["kind"] == "agent_message_chunk")
        .filter_map(|u| u["text"].as_str())
        .collect();
    assert!(
        texts.contains("I can't help with that request."),
        "{lines:?}"
    );
    assert!(!setup.workspace().join("hello.txt").exists());
    server.verify().unwrap();
}

#[tokio::test]
async fn the_agent_option_switches_the_agent_and_the_conversation_goes_on() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    for (id, answer) in [("t1", "First."), ("t2", "Second."), ("t3", "Third.")] {
        server.push(Completion::tool_calls(
            Some(answer.into()),
            [call(id, "terminate", json!({"status": "success"}))],
        ));
    }
    let lines = editor(&setup, "agent").await;
    let options = &step(&lines, "options")["options"];
    assert_eq!(options[0][0], "agent");
    assert_eq!(options[0][1], "select");
    assert_eq!(options[0][2], "manus");
    let offered: Vec<&str> = options[0][4]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        offered.contains(&"swe") && offered.contains(&"flow"),
        "{offered:?}"
    );
    assert!(
        !offered.contains(&"mcp"),
        "the MCP agent has no server here: {offered:?}"
    );
    assert_eq!(
        options[1],
        json!([
            "mode",
            "select",
            "on-request",
            "mode",
            ["untrusted", "on-request", "never"]
        ])
    );
    assert_eq!(step(&lines, "first")["stopReason"], "end_turn", "{lines:?}");
    assert_eq!(step(&lines, "bad-agent")["code"], -32602);
    assert_eq!(step(&lines, "bad-option")["code"], -32602);
    let switched = step(&lines, "switched");
    assert_eq!(
        switched["options"],
        json!([["agent", "swe"], ["mode", "on-request"]])
    );
    assert_eq!(
        switched["after"],
        json!([["agent", "swe"], ["mode", "never"]])
    );
    assert_eq!(
        step(&lines, "second")["stopReason"],
        "end_turn",
        "{lines:?}"
    );
    assert_eq!(step(&lines, "third")["stopReason"], "end_turn", "{lines:?}");

    // Each prompt went to the agent chosen then, with the conversation so far.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let tools = |i: usize| -> Vec<String> {
        requests[i].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    let users = |i: usize| -> Vec<String> {
        requests[i]
            .messages()
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(
        tools(0).contains(&"python_execute".to_owned()),
        "{:?}",
        tools(0)
    );
    assert!(tools(1).contains(&"bash".to_owned()), "{:?}", tools(1));
    assert!(
        !tools(1).contains(&"python_execute".to_owned()),
        "{:?}",
        tools(1)
    );
    assert!(
        tools(2).contains(&"python_execute".to_owned()),
        "{:?}",
        tools(2)
    );
    // (Manus's next-step prompt follows the task in its requests; SWE has none.)
    assert_eq!(users(1)[..2], ["First question.", "Second question."]);
    assert_eq!(
        users(2)[..3],
        ["First question.", "Second question.", "Third question."]
    );
    // The store names the session's agent as it now is: a later resume builds Manus.
    let sessions = setup.run(&["sessions", "list", "--json"]).await;
    let listed = String::from_utf8_lossy(&sessions.stdout);
    assert!(listed.contains("\"agent\":\"manus\""), "{listed}");
    server.verify().unwrap();
}
