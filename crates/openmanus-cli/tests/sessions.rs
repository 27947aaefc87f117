//! The session store from the command line, the binary as a subprocess against the strict mock:
//! a run is recorded, listed, shown, exported as a journal and resumed with a new task; `-i
//! --resume` continues the latest session; `--no-store` records nothing; and a run killed with
//! SIGKILL in the middle of a tool is resumed with every tool call answered.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use agent_core::{Role, check_tool_pairing};
use agent_session::journal::{JournalLine, JournalReader};
use agent_store::{RunState, SessionState, Store};
use agent_testkit::{Completion, MockOpenAi};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::common::{assert_all_gone, call};

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

/// A temp dir with `config/config.toml` pointing at the mock, and a workspace.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(server: &MockOpenAi) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::write(
            dir.path().join("config/config.toml"),
            format!(
                "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-cli-test\"\nmax_tokens = 1024\ntemperature = 0.0\nmax_attempts = 1\n",
                server.base_url()
            ),
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
        std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
        Self { dir }
    }

    /// No configuration file anywhere: none in `./config/`, an empty home.
    fn without_config() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Self { dir }
    }

    fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace").canonicalize().unwrap()
    }

    fn database(&self) -> PathBuf {
        self.workspace().join(".openmanus/sessions.db")
    }

    fn command(&self) -> Command {
        let mut command = Command::new(BIN);
        command
            .current_dir(self.dir.path())
            .env_remove("OPENMANUS_CONFIG")
            .env("NO_COLOR", "1")
            .env("TMPDIR", self.dir.path().join("tmp"))
            .env("HOME", self.dir.path().join("home"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("home/.config"))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    async fn run(&self, args: &[&str]) -> Output {
        tokio::time::timeout(Duration::from_secs(120), self.command().args(args).output())
            .await
            .expect("openmanus did not finish")
            .unwrap()
    }

    /// Runs and asserts exit code 0; returns stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        assert_eq!(
            output.status.code(),
            Some(0),
            "openmanus {args:?}\nstdout:\n{}\nstderr:\n{}",
            text(&output.stdout),
            text(&output.stderr)
        );
        text(&output.stdout)
    }

    /// `sessions list --json`, parsed.
    async fn sessions(&self) -> Vec<Value> {
        self.ok(&["sessions", "list", "--json"])
            .await
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The id the run named on stderr (`session: <id>`).
fn session_line(output: &Output) -> String {
    let stderr = text(&output.stderr);
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .unwrap_or_else(|| panic!("no session line in:\n{stderr}"))
        .to_owned()
}

/// A newcomer with no configuration runs the demo, then looks at what it recorded and replays
/// it: the commands that send no model request work on the default settings, and a session
/// that is not there is reported with the store that was searched.
#[tokio::test]
async fn after_the_demo_the_sessions_and_replay_need_no_configuration() {
    let setup = Setup::without_config();
    let demo = setup.run(&["demo"]).await;
    assert_eq!(demo.status.code(), Some(0), "{}", text(&demo.stderr));
    let id = session_line(&demo);

    let sessions = setup.sessions().await;
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["id"], json!(id));

    let missing = setup.run(&["sessions", "show", "nope"]).await;
    assert_ne!(missing.status.code(), Some(0));
    let stderr = text(&missing.stderr);
    assert!(stderr.contains("no session nope"), "{stderr}");
    assert!(
        stderr.contains("sessions.db"),
        "the store searched is named:\n{stderr}"
    );

    let replay = setup.run(&["replay", "--session", &id[..8]]).await;
    assert_eq!(replay.status.code(), Some(0), "{}", text(&replay.stderr));
    assert!(
        text(&replay.stdout).contains("replay matched 4 steps"),
        "{}\n{}",
        text(&replay.stdout),
        text(&replay.stderr)
    );
}

#[tokio::test]
async fn a_run_is_recorded_listed_shown_exported_and_resumed_with_a_new_task() {
    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key("sk-cli-test");
    let setup = Setup::new(&server);
    server
        .push(
            Completion::tool_calls(
                Some("Counting.".into()),
                [call(
                    "c1",
                    "python_execute",
                    json!({"code": "print(6 * 7)"}),
                )],
            )
            .with_usage(100, 10),
        )
        .push(
            Completion::tool_calls(
                Some("The answer is 42.".into()),
                [call("c2", "terminate", json!({"status": "success"}))],
            )
            .with_usage(20, 5),
        );
    let output = setup.run(&["--prompt", "What is six times seven?"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let id = session_line(&output);

    let sessions = setup.sessions().await;
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["id"], id.as_str());
    assert_eq!(sessions[0]["agent"], "manus");
    assert_eq!(sessions[0]["state"], "finished");
    assert_eq!(sessions[0]["runs"], 1);
    assert_eq!(sessions[0]["title"], "What is six times seven?");
    assert_eq!(sessions[0]["workspace"], json!(setup.workspace()));
    let listed = setup.ok(&["sessions", "list"]).await;
    assert!(
        listed.contains(&id[..8]) && listed.contains("finished"),
        "{listed}"
    );

    let shown = setup.ok(&["sessions", "show", &id[..6]]).await;
    assert!(shown.contains(&format!("session:   {id}")), "{shown}");
    assert!(
        shown.contains("run 1 (finished): What is six times seven?"),
        "{shown}"
    );
    assert!(shown.contains("answer:  The answer is 42."), "{shown}");
    assert!(shown.contains("tokens:  120 in, 15 out"), "{shown}");
    let shown: Value =
        serde_json::from_str(&setup.ok(&["sessions", "show", &id, "--json"]).await).unwrap();
    assert_eq!(shown["messages"], 5);
    assert_eq!(shown["runs"][0]["answer"], "The answer is 42.");

    // The export is a journal JournalReader reads: the task, every event, every model request
    // (its body rebuilt exactly as the model received it) and reply, the result, memory.
    let exported = setup.dir.path().join("export.jsonl");
    setup
        .ok(&[
            "sessions",
            "export",
            &id,
            "--output",
            exported.to_str().unwrap(),
        ])
        .await;
    let mut bodies = Vec::new();
    let lines: Vec<Value> = JournalReader::open(&exported)
        .unwrap()
        .map(|line| match line.unwrap() {
            JournalLine::Entry(entry) => entry,
            JournalLine::Request { body, .. } => {
                bodies.push(body);
                json!({"kind": "model_request"})
            }
        })
        .collect();
    let received: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies, received, "the export rebuilds every request body");
    let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds[..2], ["session", "task"], "{kinds:?}");
    assert_eq!(kinds[kinds.len() - 2..], ["result", "memory"], "{kinds:?}");
    assert_eq!(lines[1]["task"], "What is six times seven?");
    let observed = lines
        .iter()
        .find(|l| l["kind"] == "event" && l["event"]["type"] == "tool_call_finished");
    assert!(
        observed.unwrap()["event"]["observation"]
            .as_str()
            .unwrap()
            .contains("42")
    );
    assert_eq!(lines[kinds.len() - 2]["answer"], "The answer is 42.");
    assert_eq!(
        lines.last().unwrap()["messages"].as_array().unwrap().len(),
        5
    );
    // To standard output too, the same lines.
    let stdout = setup.ok(&["sessions", "export", &id]).await;
    assert_eq!(stdout, std::fs::read_to_string(&exported).unwrap());

    // Resumed with a new task: the request carries the whole earlier conversation.
    server.push(Completion::tool_calls(
        Some("Doubled: 84.".into()),
        [call("c3", "terminate", json!({"status": "success"}))],
    ));
    let output = setup
        .run(&["sessions", "resume", &id[..8], "And twice that?"])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&output.stdout).trim(), "Doubled: 84.");
    assert!(
        stderr.contains(&format!("resuming session {id} (manus, 5 messages)")),
        "{stderr}"
    );
    assert_eq!(session_line(&output), id);
    let requests = server.requests();
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(last.contains("What is six times seven?"), "{last}");
    assert!(last.contains("print(6 * 7)"), "{last}");
    assert!(last.contains("And twice that?"), "{last}");
    server.verify().unwrap();
    let sessions = setup.sessions().await;
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["runs"], 2);
}

#[tokio::test]
async fn interactive_resume_continues_the_latest_session_and_no_store_records_nothing() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server.push(Completion::tool_calls(
        Some("First.".into()),
        [call("c1", "terminate", json!({"status": "success"}))],
    ));
    setup
        .ok(&["--agent", "swe", "--prompt", "Remember the word teapot."])
        .await;
    server.push(Completion::tool_calls(
        Some("Unrecorded.".into()),
        [call("c2", "terminate", json!({"status": "success"}))],
    ));
    setup
        .ok(&["--no-store", "--agent", "swe", "--prompt", "Not recorded."])
        .await;
    let sessions = setup.sessions().await;
    assert_eq!(
        sessions.len(),
        1,
        "--no-store records nothing: {sessions:?}"
    );
    let id = sessions[0]["id"].as_str().unwrap().to_owned();

    server.push(Completion::tool_calls(
        Some("The word was teapot.".into()),
        [call("c3", "terminate", json!({"status": "success"}))],
    ));
    // --agent is ignored: the session's own agent (swe) comes back.
    let mut child = setup
        .command()
        .args(["-i", "--resume", "--agent", "manus"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"Which word?\n").await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("resuming session {id} (swe,")),
        "{stderr}"
    );
    assert!(text(&output.stdout).contains("The word was teapot."));
    let last = server.requests().last().unwrap().body["messages"].to_string();
    assert!(
        last.contains("Remember the word teapot.") && last.contains("Which word?"),
        "{last}"
    );
    assert!(!last.contains("Not recorded."), "{last}");
    server.verify().unwrap();

    let output = setup.run(&["--no-store", "-i", "--resume"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("session store is turned off"));
    let output = setup.run(&["sessions", "show", "nope"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("no session nope"),
        "{}",
        text(&output.stderr)
    );
}

/// Waits for `check` to hold (polling every 50 ms, up to two minutes); `what` names it.
async fn wait_for<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The stored messages of the only session in the database at `path` (none when there is no
/// session yet).
async fn stored_messages(path: &Path) -> Vec<agent_core::Message> {
    if !path.exists() {
        return Vec::new();
    }
    let store = Store::open(path).await.unwrap();
    let messages = match store.latest_session().await.unwrap() {
        Some(session) => store.messages(&session.id).await.unwrap(),
        None => Vec::new(),
    };
    store.close().await;
    messages
}

#[tokio::test]
async fn a_run_killed_mid_tool_is_resumed_with_every_tool_call_answered() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let pid_file = setup.workspace().join("py.pid");
    server.push(Completion::tool_calls(
        Some("Working on it.".into()),
        [call(
            "c1",
            "python_execute",
            json!({"code": format!(
                "import os, time\nopen({:?}, 'w').write(f'{{os.getpid()}}\\n')\ntime.sleep(300)",
                pid_file.display().to_string()
            )}),
        )],
    ));
    let log = setup.dir.path().join("killed.log");
    let mut child = setup
        .command()
        .args(["--prompt", "Take your time."])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let database = setup.database();
    // The step is in the store (the assistant's call, not yet answered) and the tool runs.
    wait_for("the tool call in the store", || {
        let database = database.clone();
        async move {
            stored_messages(&database)
                .await
                .iter()
                .any(|m| m.calls().iter().any(|c| c.id == "c1"))
        }
    })
    .await;
    wait_for("the python process", || {
        let pid_file = pid_file.clone();
        async move { std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n')) }
    })
    .await;
    let python: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let openmanus = i32::try_from(child.id().unwrap()).unwrap();
    // The confined interpreter wrote its PID namespace's number.
    let python = agent_process::host_pid(python, openmanus).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(openmanus),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    // The killed run's keeper stops its python.
    assert_all_gone(&[("python".to_owned(), python)], "the run's SIGKILL").await;
    let stored = stored_messages(&database).await;
    assert!(
        check_tool_pairing(&stored, false).is_err(),
        "the store holds the unanswered call: {stored:#?}"
    );

    // Listing (a new process opening the store) shows the run interrupted.
    let sessions = setup.sessions().await;
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["state"], SessionState::Interrupted.as_str());
    let id = sessions[0]["id"].as_str().unwrap().to_owned();

    server.push(Completion::tool_calls(
        Some("Recovered.".into()),
        [call("c2", "terminate", json!({"status": "success"}))],
    ));
    let output = setup
        .run(&["sessions", "resume", &id, "Try something quicker."])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stderr}\n{}",
        std::fs::read_to_string(&log).unwrap()
    );
    assert_eq!(text(&output.stdout).trim(), "Recovered.");
    // The strict mock checked the request: every call answered, in order.
    server.verify().unwrap();
    let request = server.requests().last().unwrap().body["messages"].clone();
    let messages = request.as_array().unwrap();
    let answer = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "c1")
        .unwrap();
    assert_eq!(
        answer["content"],
        "Error: Tool 'python_execute' did not complete: the run was cancelled"
    );

    let store = Store::open(&database).await.unwrap();
    let memory = store.messages(&id).await.unwrap();
    check_tool_pairing(&memory, false).unwrap();
    assert_eq!(memory.iter().filter(|m| m.role == Role::Tool).count(), 2);
    let runs = store.runs(&id).await.unwrap();
    assert_eq!(
        runs.iter().map(|r| r.state).collect::<Vec<_>>(),
        [RunState::Interrupted, RunState::Finished]
    );
    assert_eq!(
        store.session(&id).await.unwrap().state,
        SessionState::Finished
    );

    // One record, the store: the killed run's model exchanges were kept up to the kill, the
    // requests of the resumed run are numbered on from them, and the export holds both runs.
    assert!(!setup.workspace().join(".openmanus/runs").exists());
    let exported = setup.ok(&["sessions", "export", &id]).await;
    let lines: Vec<JournalLine> = JournalReader::new(exported.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap();
    let mut kinds = Vec::new();
    let mut seqs = Vec::new();
    for line in &lines {
        match line {
            JournalLine::Request { seq, .. } => {
                kinds.push("model_request".to_owned());
                seqs.push(seq.unwrap());
            }
            JournalLine::Entry(entry) => kinds.push(entry["kind"].as_str().unwrap().to_owned()),
        }
    }
    assert_eq!(kinds[..2], ["session", "task"], "{kinds:?}");
    let second = kinds.iter().rposition(|k| k == "task").unwrap();
    assert!(second > 1, "two runs: {kinds:?}");
    let killed = &kinds[..second];
    assert!(killed.iter().any(|k| k == "model_response"), "{kinds:?}");
    let ended: Vec<&JournalLine> = lines
        .iter()
        .filter(|l| matches!(l, JournalLine::Entry(e) if e["kind"] == "result"))
        .collect();
    let states: Vec<Value> = ended
        .iter()
        .map(|l| match l {
            JournalLine::Entry(e) => e["state"].clone(),
            JournalLine::Request { .. } => Value::Null,
        })
        .collect();
    assert_eq!(
        states,
        [json!("interrupted"), json!("finished")],
        "{kinds:?}"
    );
    assert_eq!(kinds[kinds.len() - 2..], ["result", "memory"], "{kinds:?}");
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "request numbers go on across the resume: {seqs:?}"
    );
}
