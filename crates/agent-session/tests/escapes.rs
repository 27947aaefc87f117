//! No escapes (issue 21): a process a tool started in a session of its own (`setsid` in bash,
//! `start_new_session=True` in python_execute) dies with the tool that started it: at the
//! session's close (a session keeps its tools between tasks). Each test checks the pids it recorded, never machine-wide counts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

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

/// The pid written to `path` by the tool.
/// The pid a tool wrote in `path`, as this process sees it: the confined tools run in a PID
/// namespace of their own, where `$$` and `$!` are that namespace's numbers.
fn pid_in(path: &Path) -> i32 {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    let inner = text.trim().parse().unwrap();
    let me = i32::try_from(std::process::id()).unwrap();
    agent_process::host_pid(inner, me)
        .unwrap_or_else(|| panic!("no process {inner} under this test runs"))
}

/// The session id of `pid` (field 6 of `/proc/<pid>/stat`), while it lives.
fn session_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()
}

/// Whether `pid` is gone for good: no process, not even a zombie.
async fn wait_reaped(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn a_setsid_process_started_by_bash_dies_when_the_session_closes() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "c1",
                "bash",
                &json!({"command": "setsid sleep 300 >/dev/null 2>&1 & echo $! > escaped.pid"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Started.".into()),
            [call("c2", "terminate", &json!({"status": "success"}))],
        ));
    let mut session = Session::start(&factory(&server, &workspace), Target::Agent(AgentKind::Swe))
        .await
        .unwrap();
    let report = session.run("Start a server.").await.unwrap();
    assert_eq!(report.ending(), Ending::Finished);
    let escaped = pid_in(&workspace.join("escaped.pid"));
    // The session keeps its shell between tasks, and what the shell started with it; the
    // escapee is in a session of its own, out of reach of the shell's process group. `$!` is
    // written as soon as the shell forks: setsid may not have run in the child yet, so wait
    // for it to have its own session.
    assert_ne!(session_of(escaped), None, "the escapee did not start");
    let ours = session_of(i32::try_from(std::process::id()).unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    while session_of(escaped) == ours && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_ne!(
        session_of(escaped),
        ours,
        "the escapee never left our session"
    );
    session.close().await.unwrap();
    assert!(
        wait_reaped(escaped).await,
        "the setsid process outlived the session (session {:?})",
        session_of(escaped)
    );
    server.verify().unwrap();
}

#[tokio::test]
async fn a_new_session_popen_in_python_dies_when_the_session_closes() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let code = "import os, subprocess\n\
                child = subprocess.Popen(['sleep', '300'], start_new_session=True)\n\
                open('escaped.pid', 'w').write(f'{child.pid}\\n')\n\
                print(os.getsid(child.pid) == child.pid)";
    server
        .push(Completion::tool_calls(
            None,
            [call("c1", "python_execute", &json!({"code": code}))],
        ))
        .push(Completion::tool_calls(
            Some("Started.".into()),
            [call("c2", "terminate", &json!({"status": "success"}))],
        ));
    let mut session = Session::start(
        &factory(&server, &workspace),
        Target::Agent(AgentKind::DataAnalysis),
    )
    .await
    .unwrap();
    let report = session.run("Start a server.").await.unwrap();
    assert_eq!(report.ending(), Ending::Finished);
    // The child was in a session of its own: out of reach of the interpreter's group.
    let observation = server.requests()[1].body["messages"].to_string();
    assert!(observation.contains("True"), "{observation}");
    let escaped = pid_in(&workspace.join("escaped.pid"));
    session.close().await.unwrap();
    assert!(
        wait_reaped(escaped).await,
        "the new-session child outlived the session (session {:?})",
        session_of(escaped)
    );
    server.verify().unwrap();
}
