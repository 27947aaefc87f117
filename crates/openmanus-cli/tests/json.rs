//! `--json` on every command that accepts it, the binary as a subprocess against the strict
//! mock (and a real `nats-server -js` for `worker` and `submit`): standard output is JSON and
//! nothing else, and what it says is machine-readable (`status` is `finished`, not words).
//!
//! `--json` is a global flag, so every command takes it: each one either prints JSON or refuses
//! the flag with an error (a shell script or an MCP stream cannot be JSON). The test
//! `every_command_that_takes_json_is_tested_here` walks `openmanus help` and fails when a
//! command has no test below.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::process::{Output, Stdio};
use std::time::Duration;

use agent_testkit::{Completion, MockOpenAi, NatsServer};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::common::{BIN, Setup, call};

const PATIENCE: Duration = Duration::from_secs(120);

/// One test per command; the list of commands they cover is [`TESTED`].
macro_rules! json_tests {
    ($($test:ident: $command:literal),* $(,)?) => {
        /// The commands tested here, as `openmanus help` spells them (`""`: no subcommand).
        const TESTED: &[&str] = &[$($command),*];
        $(
            #[tokio::test]
            async fn $test() {
                cases::$test().await;
            }
        )*
    };
}

json_tests! {
    json_run: "",
    json_demo: "demo",
    json_flow: "flow",
    json_mcp: "mcp",
    json_mcp_server_is_refused: "mcp-server",
    json_acp_is_refused: "acp",
    json_serve: "serve",
    json_worker: "worker",
    json_submit: "submit",
    json_config_check: "config check",
    json_rules: "rules",
    json_config_init: "config init",
    json_doctor: "doctor",
    json_completions_is_refused: "completions",
    json_replay: "replay",
    json_sessions_list: "sessions list",
    json_sessions_show: "sessions show",
    json_sessions_resume: "sessions resume",
    json_sessions_export: "sessions export",
    json_sessions_delete: "sessions delete",
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every line of standard output as JSON (a line that is not fails the test, naming it).
fn json_lines(output: &Output) -> Vec<Value> {
    text(&output.stdout)
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| {
                panic!(
                    "not JSON ({e}): {line:?}\nstdout:\n{}\nstderr:\n{}",
                    text(&output.stdout),
                    text(&output.stderr)
                )
            })
        })
        .collect()
}

/// Runs `args`; asserts the exit code is `code` and standard output only JSON lines; returns them.
async fn run_json(setup: &Setup, args: &[&str], code: i32) -> Vec<Value> {
    let output = setup.run(args).await;
    assert_eq!(
        output.status.code(),
        Some(code),
        "openmanus {args:?}\nstdout:\n{}\nstderr:\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    json_lines(&output)
}

/// The `type` of every line.
fn types(lines: &[Value]) -> Vec<&str> {
    lines
        .iter()
        .map(|l| {
            l["type"]
                .as_str()
                .unwrap_or_else(|| panic!("a line without a type: {l}"))
        })
        .collect()
}

fn finish(server: &MockOpenAi, answer: &str) {
    server.push(Completion::tool_calls(
        Some(answer.into()),
        [call("t", "terminate", json!({"status": "success"}))],
    ));
}

/// Asserts the lines of a run: its events, then one `result` line with machine values.
fn assert_run(lines: &[Value], status: &str, answer: &str) {
    let types = types(lines);
    assert_eq!(types.first(), Some(&"run_started"), "{types:?}");
    assert_eq!(types.last(), Some(&"result"), "{types:?}");
    assert_eq!(types.iter().filter(|t| **t == "result").count(), 1);
    let result = lines.last().unwrap();
    assert_eq!(result["status"], status, "{result}");
    assert!(result["status_text"].is_string(), "{result}");
    assert_eq!(result["answer"], answer, "{result}");
    assert!(result["usage"]["prompt_tokens"].is_u64(), "{result}");
}

/// A recorded one-step run; returns its session id.
async fn recorded_session(setup: &Setup, server: &MockOpenAi) -> String {
    finish(server, "Recorded.");
    let lines = run_json(setup, &["--json", "-p", "Record this."], 0).await;
    assert_run(&lines, "finished", "Recorded.");
    let sessions = run_json(setup, &["sessions", "list", "--json"], 0).await;
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    sessions[0]["id"].as_str().unwrap().to_owned()
}

/// Starts `args` with standard output piped; its lines.
fn spawn(setup: &Setup, args: &[&str]) -> (Child, Lines<BufReader<ChildStdout>>) {
    let mut child = setup
        .command()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

/// The next line of a child's standard output, as JSON.
async fn next_json(lines: &mut Lines<BufReader<ChildStdout>>) -> Value {
    let line = tokio::time::timeout(PATIENCE, lines.next_line())
        .await
        .expect("a line in time")
        .unwrap()
        .expect("the program ended first");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
}

/// The rest of a child's standard output, each line as JSON.
async fn rest_json(lines: &mut Lines<BufReader<ChildStdout>>) -> Vec<Value> {
    let mut rest = Vec::new();
    while let Some(line) = tokio::time::timeout(PATIENCE, lines.next_line())
        .await
        .expect("the output ended in time")
        .unwrap()
    {
        rest.push(
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}")),
        );
    }
    rest
}

fn sigterm(child: &Child) {
    let pid = i32::try_from(child.id().unwrap()).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
}

/// A NATS server, and the setup's configuration pointing at it too.
fn with_nats(setup: &Setup, server: &MockOpenAi) -> NatsServer {
    let nats = NatsServer::start().unwrap();
    std::fs::write(
        setup.dir.path().join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-cli-test\"\nmax_attempts = 1\n\n\
             [nats]\nurl = \"{}\"\nack_wait_secs = 60\nprogress_secs = 1\n",
            server.base_url(),
            nats.url()
        ),
    )
    .unwrap();
    nats
}

/// The subcommands of `openmanus <path> --help` (clap's `help` left out).
async fn subcommands(path: &[&str]) -> Vec<String> {
    let output = Command::new(BIN)
        .args(path)
        .arg("--help")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{path:?}");
    let help = text(&output.stdout);
    let Some(section) = help.split("\nCommands:\n").nth(1) else {
        return Vec::new();
    };
    section
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| {
            let name = line.strip_prefix("  ")?.split_whitespace().next()?;
            (!line.starts_with("   ") && name != "help").then(|| name.to_owned())
        })
        .collect()
}

#[tokio::test]
async fn every_command_that_takes_json_is_tested_here() {
    // Every command, down to the leaves of `config` and `sessions`.
    let mut leaves = Vec::new();
    let mut queue = vec![Vec::<String>::new()];
    while let Some(path) = queue.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let children = subcommands(&args).await;
        // The program itself runs an agent; a group such as `sessions` only holds commands.
        if children.is_empty() || path.is_empty() {
            leaves.push(path.clone());
        }
        for child in children {
            let mut next = path.clone();
            next.push(child);
            queue.push(next);
        }
    }
    let mut takes_json = BTreeSet::new();
    for path in &leaves {
        let output = Command::new(BIN)
            .args(path)
            .arg("--help")
            .output()
            .await
            .unwrap();
        if text(&output.stdout).contains("--json") {
            takes_json.insert(path.join(" "));
        }
    }
    assert!(takes_json.len() >= 15, "{takes_json:?}");
    let tested: BTreeSet<String> = TESTED.iter().map(|c| (*c).to_owned()).collect();
    assert_eq!(
        takes_json, tested,
        "every command that takes --json has its test in tests/json.rs"
    );
}

mod cases {
    use super::*;

    pub async fn json_run() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        finish(&server, "All done.");
        let lines = run_json(&setup, &["--no-store", "--json", "-p", "Go."], 0).await;
        assert_run(&lines, "finished", "All done.");
        assert!(types(&lines).contains(&"tool_call_finished"));
        server.verify().unwrap();
    }

    pub async fn json_demo() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let workspace = setup.dir.path().join("demo");
        let lines = run_json(
            &setup,
            &[
                "demo",
                "--no-store",
                "--json",
                "--workspace",
                workspace.to_str().unwrap(),
            ],
            0,
        )
        .await;
        let result = lines.last().unwrap();
        assert_eq!(result["type"], "result");
        assert_eq!(result["status"], "finished");
        assert!(
            result["answer"]
                .as_str()
                .unwrap()
                .contains("Hello from openmanus-rs!"),
            "{result}"
        );
        assert_eq!(
            result["changes"]["created"],
            json!(["hello.py"]),
            "{result}"
        );
        assert_eq!(
            result["workspace"],
            json!(workspace.canonicalize().unwrap())
        );
        // Four steps, each with its tool call.
        let finished = lines
            .iter()
            .filter(|l| l["type"] == "tool_call_finished")
            .count();
        assert_eq!(finished, 4, "{lines:?}");
        assert_eq!(server.request_count(), 0, "the demo has its own model");
    }

    pub async fn json_flow() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        server
            .push(Completion::tool_calls(
                None,
                [call(
                    "p1",
                    "planning",
                    json!({"command": "create", "plan_id": "plan_j", "title": "One step",
                           "steps": ["write b.txt"]}),
                )],
            ))
            .push(Completion::tool_calls(
                None,
                [call(
                    "m1",
                    "python_execute",
                    json!({"code": "open('b.txt','w').write('flowed\\n')"}),
                )],
            ))
            .push(Completion::tool_calls(
                Some("b.txt is written.".into()),
                [call("m2", "terminate", json!({"status": "success"}))],
            ))
            .push_text("Summary: b.txt was written.");
        let lines = run_json(
            &setup,
            &["flow", "--no-store", "--json", "--prompt", "Write b.txt."],
            0,
        )
        .await;
        let types = types(&lines);
        // The flow's events say so (their agents have a `step_finished` and a `finished` too).
        let flow: Vec<&str> = lines
            .iter()
            .filter(|l| l["scope"] == "flow")
            .map(|l| l["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            flow,
            ["plan_created", "step_started", "step_finished", "finished"]
        );
        // The agent's events are there too.
        assert!(types.contains(&"tool_call_finished"), "{types:?}");
        let step = lines
            .iter()
            .find(|l| l["type"] == "step_finished" && l["scope"] == "flow")
            .unwrap();
        assert_eq!(step["status"], "completed", "{step}");
        let result = lines.last().unwrap();
        assert_eq!(result["type"], "result", "{types:?}");
        assert_eq!(result["status"], "finished", "{result}");
        assert_eq!(result["status_text"], "completed", "{result}");
        assert_eq!(
            result["answer"],
            "Plan completed:\n\nSummary: b.txt was written."
        );
        assert!(
            result["text"]
                .as_str()
                .unwrap()
                .contains("Step 1: Observed output of cmd `python_execute`"),
            "{result}"
        );
        assert_eq!(result["changes"]["created"], json!(["b.txt"]), "{result}");
        server.verify().unwrap();
    }

    pub async fn json_mcp() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        server
            .push(Completion::tool_calls(
                None,
                [call(
                    "c1",
                    "mcp_server_bash",
                    json!({"command": "echo over-mcp-json"}),
                )],
            ))
            .push(Completion::tool_calls(
                Some("Answered over MCP.".into()),
                [call(
                    "c2",
                    "mcp_server_terminate",
                    json!({"status": "success"}),
                )],
            ));
        let lines = run_json(
            &setup,
            &[
                "mcp",
                "--no-store",
                "--json",
                "-p",
                "Use the server's bash.",
            ],
            0,
        )
        .await;
        assert_run(&lines, "finished", "Answered over MCP.");
        let observed = lines
            .iter()
            .find(|l| l["type"] == "tool_call_finished")
            .unwrap();
        assert!(
            observed["observation"]
                .as_str()
                .unwrap()
                .contains("over-mcp-json"),
            "{observed}"
        );
        server.verify().unwrap();
    }

    /// A command whose output cannot be JSON refuses `--json`: exit 1, nothing on stdout.
    async fn refused(args: &[&str], says: &str) {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let output = setup.run(args).await;
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&output.stdout), "", "{args:?}");
        assert!(
            text(&output.stderr).contains(says),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }

    pub async fn json_mcp_server_is_refused() {
        refused(&["mcp-server", "--json"], "mcp-server does not use --json").await;
    }

    pub async fn json_acp_is_refused() {
        refused(&["acp", "--json"], "acp does not use --json").await;
    }

    pub async fn json_completions_is_refused() {
        refused(
            &["completions", "bash", "--json"],
            "completions prints a shell script, not JSON",
        )
        .await;
    }

    pub async fn json_serve() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let (mut child, mut lines) = spawn(&setup, &["serve", "--json", "--bind", "127.0.0.1:0"]);
        let listening = next_json(&mut lines).await;
        assert_eq!(listening["type"], "listening", "{listening}");
        let url = listening["url"].as_str().unwrap();
        assert_eq!(
            url,
            format!("http://{}/", listening["address"].as_str().unwrap())
        );
        // It is the server's address.
        let sessions: Value = agent_llm::http::shared_client()
            .unwrap()
            .get(format!("{url}api/sessions"))
            .send()
            .await
            .unwrap()
            .error_for_status()
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(
            sessions.is_array() || sessions["sessions"].is_array(),
            "{sessions}"
        );
        sigterm(&child);
        let rest = rest_json(&mut lines).await;
        assert_eq!(types(&rest), ["stopped"]);
        assert!(child.wait().await.unwrap().success());
    }

    pub async fn json_worker() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let _nats = with_nats(&setup, &server);
        server.push_for("Count to one", {
            Completion::tool_calls(
                Some("One.".into()),
                [call("t", "terminate", json!({"status": "success"}))],
            )
        });
        let (mut worker, mut lines) = spawn(
            &setup,
            &[
                "worker",
                "--json",
                "--name",
                "json-worker",
                "--concurrency",
                "1",
            ],
        );
        let started = next_json(&mut lines).await;
        assert_eq!(started["type"], "worker_started", "{started}");
        assert_eq!(started["name"], "json-worker");
        assert_eq!(started["concurrency"], 1);
        assert!(started["nats_url"].as_str().unwrap().starts_with("nats://"));
        let submitted = setup
            .run(&["submit", "--agent", "swe", "--wait", "Count to one"])
            .await;
        assert!(submitted.status.success(), "{}", text(&submitted.stderr));
        assert!(text(&submitted.stdout).contains("One."));
        sigterm(&worker);
        let rest = rest_json(&mut lines).await;
        assert_eq!(types(&rest), ["worker_stopped"], "{rest:?}");
        assert_eq!(rest[0]["completed"], 1, "{rest:?}");
        assert_eq!(rest[0]["handed_back"], 0, "{rest:?}");
        assert!(worker.wait().await.unwrap().success());
        server.verify().unwrap();
    }

    pub async fn json_submit() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let _nats = with_nats(&setup, &server);
        server.push_for("Say hello", {
            Completion::tool_calls(
                Some("Hello from a worker.".into()),
                [call("t", "terminate", json!({"status": "success"}))],
            )
        });
        let (mut worker, mut worker_lines) = spawn(
            &setup,
            &[
                "worker",
                "--json",
                "--name",
                "greeter",
                "--concurrency",
                "1",
            ],
        );
        assert_eq!(next_json(&mut worker_lines).await["type"], "worker_started");
        let output = tokio::time::timeout(
            PATIENCE,
            setup
                .command()
                .args([
                    "submit",
                    "--json",
                    "--agent",
                    "swe",
                    "--id",
                    "json-1",
                    "--follow",
                    "Say hello",
                ])
                .output(),
        )
        .await
        .expect("submit returned")
        .unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        let lines = json_lines(&output);
        let types = types(&lines);
        assert_eq!(types.first(), Some(&"submitted"), "{types:?}");
        assert_eq!(lines[0]["task_id"], "json-1");
        assert_eq!(lines[0]["duplicate"], false);
        assert!(lines[0]["sequence"].is_u64());
        assert_eq!(types.last(), Some(&"result"), "{types:?}");
        let events: Vec<&Value> = lines.iter().filter(|l| l["type"] == "task_event").collect();
        assert!(!events.is_empty(), "{types:?}");
        assert!(
            events
                .iter()
                .all(|e| e["task_id"] == "json-1" && e["worker"] == "greeter")
        );
        assert!(
            events
                .iter()
                .any(|e| e["data"]["type"] == "tool_call_finished"),
            "{events:?}"
        );
        let result = lines.last().unwrap();
        assert_eq!(result["task_id"], "json-1");
        assert_eq!(result["status"], "finished", "{result}");
        assert_eq!(
            result["status_text"], "finished (special tool `terminate`)",
            "{result}"
        );
        assert!(result.get("ending").is_none(), "{result}");
        assert_eq!(result["answer"], "Hello from a worker.");
        assert_eq!(result["worker"], "greeter");
        sigterm(&worker);
        let rest = rest_json(&mut worker_lines).await;
        assert_eq!(rest.last().unwrap()["type"], "worker_stopped");
        assert!(worker.wait().await.unwrap().success());
        server.verify().unwrap();
    }

    pub async fn json_config_check() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let lines = run_json(&setup, &["config", "check", "--json"], 0).await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["ok"], true);
        assert_eq!(lines[0]["llm"]["default"]["model"], "gpt-4o");
    }

    pub async fn json_rules() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let file = setup.dir.path().join("xdg/openmanus/rules.toml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            "[[rules]]\ntool = \"bash\"\nprefix = \"curl\"\ndecision = \"deny\"\n",
        )
        .unwrap();
        let lines = run_json(
            &setup,
            &[
                "rules",
                "--json",
                "--ask-for-approval",
                "never",
                "--set",
                "permissions.rules=[{prefix = \"git status\", decision = \"allow\"}]",
            ],
            0,
        )
        .await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        let listed = &lines[0];
        assert_eq!(listed["approval"], "never", "{listed}");
        assert_eq!(listed["sandbox"], "workspace-write", "{listed}");
        assert_eq!(listed["rules_file"], json!(file), "{listed}");
        let rules = listed["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 2, "{listed}");
        assert_eq!(rules[0]["from"], "config");
        assert_eq!(rules[0]["prefix"], "git status");
        assert_eq!(rules[0]["decision"], "allow");
        assert_eq!(rules[1]["from"], "rules file");
        assert_eq!(rules[1]["tool"], "bash");
        assert_eq!(rules[1]["decision"], "deny");
    }

    pub async fn json_doctor() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        // One object: the model (usable: a literal key, the mock answers) and every capability.
        let lines = run_json(&setup, &["doctor", "--json"], 0).await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        let report = &lines[0];
        assert_eq!(report["type"], "doctor", "{report}");
        assert_eq!(report["ok"], true, "{report}");
        let checks = report["checks"].as_array().unwrap();
        assert_eq!(checks[0]["id"], "model");
        assert_eq!(checks[0]["status"], "ok", "{report}");
        assert!(checks.iter().all(|c| c["status"].is_string()), "{report}");
    }

    pub async fn json_config_init() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let lines = run_json(
            &setup,
            &[
                "config",
                "init",
                "--json",
                "--provider",
                "ollama",
                "--path",
                "written/config.toml",
            ],
            0,
        )
        .await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        let written = &lines[0];
        assert_eq!(written["type"], "config_written", "{written}");
        assert_eq!(written["provider"], "ollama");
        assert_eq!(written["api_key_env"], Value::Null);
        let path = std::path::PathBuf::from(written["path"].as_str().unwrap());
        assert!(path.ends_with("written/config.toml"), "{written}");
        let toml = std::fs::read_to_string(&path).unwrap();
        assert!(
            toml.contains(&format!("model = {}", written["model"])),
            "{toml}"
        );
    }

    pub async fn json_replay() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let id = recorded_session(&setup, &server).await;
        let lines = run_json(&setup, &["replay", "--session", &id, "--json"], 0).await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["type"], "replay");
        assert_eq!(lines[0]["status"], "matched", "{}", lines[0]);
        assert_eq!(lines[0]["steps_matched"], 1);
    }

    pub async fn json_sessions_list() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        assert!(
            run_json(&setup, &["sessions", "list", "--json"], 0)
                .await
                .is_empty()
        );
        let id = recorded_session(&setup, &server).await;
        let sessions = run_json(&setup, &["sessions", "list", "--json"], 0).await;
        assert_eq!(sessions[0]["id"], id.as_str());
        assert_eq!(sessions[0]["state"], "finished");
        assert_eq!(sessions[0]["agent"], "manus");
        assert_eq!(sessions[0]["runs"], 1);
    }

    pub async fn json_sessions_show() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let id = recorded_session(&setup, &server).await;
        let lines = run_json(&setup, &["sessions", "show", &id[..6], "--json"], 0).await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        let shown = &lines[0];
        assert_eq!(shown["session"]["id"], id.as_str());
        assert_eq!(shown["runs"][0]["state"], "finished", "{shown}");
        assert_eq!(shown["runs"][0]["answer"], "Recorded.");
        assert!(shown["events"].as_u64().unwrap() > 0, "{shown}");
    }

    pub async fn json_sessions_resume() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let id = recorded_session(&setup, &server).await;
        finish(&server, "Resumed.");
        let lines = run_json(
            &setup,
            &["sessions", "resume", &id, "And again.", "--json"],
            0,
        )
        .await;
        assert_run(&lines, "finished", "Resumed.");
        let sessions = run_json(&setup, &["sessions", "list", "--json"], 0).await;
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0]["runs"], 2);
    }

    pub async fn json_sessions_export() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let id = recorded_session(&setup, &server).await;
        // On standard output: the journal, one JSON entry a line.
        let lines = run_json(&setup, &["sessions", "export", &id, "--json"], 0).await;
        let kinds: Vec<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds[..2], ["session", "task"], "{kinds:?}");
        assert_eq!(kinds[kinds.len() - 2..], ["result", "memory"], "{kinds:?}");
        assert_eq!(lines[kinds.len() - 2]["answer"], "Recorded.");
        // To a file: one line saying where and how much.
        let file = setup.dir.path().join("export.jsonl");
        let lines = run_json(
            &setup,
            &[
                "sessions",
                "export",
                &id,
                "--json",
                "-o",
                file.to_str().unwrap(),
            ],
            0,
        )
        .await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["type"], "exported");
        assert_eq!(lines[0]["session_id"], id.as_str());
        assert_eq!(lines[0]["path"], json!(file));
        let written = std::fs::read_to_string(&file).unwrap().lines().count();
        assert_eq!(lines[0]["lines"], written, "{}", lines[0]);
        assert_eq!(written, kinds.len());
    }

    pub async fn json_sessions_delete() {
        let server = MockOpenAi::start().await.unwrap();
        let setup = Setup::new(&server);
        let id = recorded_session(&setup, &server).await;
        let lines = run_json(&setup, &["sessions", "delete", &id[..8], "--json"], 0).await;
        assert_eq!(lines, [json!({"type": "deleted", "session_id": id})]);
        assert!(
            run_json(&setup, &["sessions", "list", "--json"], 0)
                .await
                .is_empty()
        );
    }
}

#[tokio::test]
async fn a_task_the_model_declines_ends_refused_with_exit_code_1() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    server.push(Completion::refusal("I can't help with that."));
    let lines = run_json(&setup, &["--json", "-p", "Do something bad."], 1).await;
    assert_run(&lines, "refused", "I can't help with that.");
    assert_eq!(
        lines.last().unwrap()["status_text"],
        "refused: I can't help with that."
    );
    // The store records the run as refused, the session as failed.
    let sessions = run_json(&setup, &["sessions", "list", "--json"], 0).await;
    assert_eq!(sessions[0]["state"], "failed", "{sessions:?}");
    let id = sessions[0]["id"].as_str().unwrap();
    let shown = run_json(&setup, &["sessions", "show", id, "--json"], 0).await;
    assert_eq!(shown[0]["runs"][0]["state"], "refused", "{shown:?}");
    server.verify().unwrap();
}
