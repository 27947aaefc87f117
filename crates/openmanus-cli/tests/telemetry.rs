//! OpenTelemetry export, against a real collector: Arize Phoenix (`arize-phoenix` from PyPI,
//! installed by `cargo xtask integration` under `target/xtask-tools/`; `PHOENIX_BIN` names
//! another), started by the test and read back through its REST API. The programs are the real
//! binary with the standard `OTEL_*` variables; their models are the strict mock.
//!
//! Phoenix takes a while to start (a Python server with its database), so one test starts it
//! once and runs the scenarios in turn, each in a project of its own: a Manus run over
//! HTTP/protobuf and over gRPC, an `a2a_call` between two `openmanus serve`, a task from
//! `openmanus submit` run by `openmanus worker`.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use agent_testkit::{Completion, MockOpenAi, NatsServer, Phoenix};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::{BIN, Delegation, Setup, call, finish};

/// How long spans may take to appear (Phoenix ingests in the background; a loaded machine).
const PATIENCE: Duration = Duration::from_secs(120);

/// The spans named `name`.
fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn span_id(span: &Value) -> &str {
    span["context"]["span_id"].as_str().unwrap()
}

fn trace_ids(spans: &[Value]) -> BTreeSet<&str> {
    spans
        .iter()
        .map(|s| s["context"]["trace_id"].as_str().unwrap())
        .collect()
}

/// The spans of `project` once each name of `counts` has its count (Phoenix ingests in the
/// background), checked to be one trace.
async fn one_trace(phoenix: &Phoenix, project: &str, counts: &[(&str, usize)]) -> Vec<Value> {
    let spans = phoenix
        .wait_for_spans(project, PATIENCE, |spans| {
            counts
                .iter()
                .all(|(name, count)| named(spans, name).len() == *count)
        })
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", phoenix.log()));
    assert_eq!(trace_ids(&spans).len(), 1, "one trace: {spans:#?}");
    spans
}

/// Whether `span` descends from the span `ancestor` (by parent ids, within `spans`).
fn descends_from(spans: &[Value], span: &Value, ancestor: &str) -> bool {
    let mut parent = span["parent_id"].as_str();
    while let Some(id) = parent {
        if id == ancestor {
            return true;
        }
        parent = spans
            .iter()
            .find(|s| span_id(s) == id)
            .and_then(|s| s["parent_id"].as_str());
    }
    false
}

fn attribute<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_is_one_trace_in_phoenix_across_agents_and_machines() {
    let mut phoenix = Phoenix::start().await.unwrap();
    a_manus_run_is_an_agent_span_with_its_model_calls_and_tools(&phoenix, false).await;
    a_manus_run_is_an_agent_span_with_its_model_calls_and_tools(&phoenix, true).await;
    an_a2a_call_between_two_servers_is_one_trace(&phoenix).await;
    a_task_from_submit_run_by_a_worker_is_one_trace(&phoenix).await;
    phoenix.stop().await;
    with_the_collector_stopped_the_same_run_succeeds_with_one_warning(&phoenix).await;
}

/// A Manus run that writes `notes.txt` in its workspace, then finishes, with `env`: the
/// program's output, the file's path and the mock (to verify).
async fn notes_run(
    env: Vec<(String, String)>,
) -> (std::process::Output, std::path::PathBuf, MockOpenAi, Setup) {
    let mock = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&mock);
    let notes = setup.workspace().join("notes.txt");
    mock.push(Completion::tool_calls(
        Some("Writing the file.".into()),
        [call(
            "w",
            "str_replace_editor",
            json!({"command": "create", "path": notes, "file_text": "traced\n"}),
        )],
    ))
    .push(finish("Written."));
    let output = setup
        .command()
        .args(["--prompt", "Write notes.txt"])
        .envs(env)
        .output()
        .await
        .unwrap();
    (output, notes, mock, setup)
}

/// How many times `stderr` says spans could not be sent.
fn export_warnings(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|l| l.contains("spans could not be sent"))
        .count()
}

async fn with_the_collector_stopped_the_same_run_succeeds_with_one_warning(phoenix: &Phoenix) {
    for grpc in [false, true] {
        let (output, notes, mock, _setup) = notes_run(phoenix.otel_env("stopped", grpc)).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "grpc {grpc}: {stderr}");
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("Written."),
            "{stderr}"
        );
        assert_eq!(export_warnings(&stderr), 1, "grpc {grpc}: {stderr}");
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "traced\n");
        mock.verify().unwrap();
    }
}

async fn a_manus_run_is_an_agent_span_with_its_model_calls_and_tools(
    phoenix: &Phoenix,
    grpc: bool,
) {
    let project = if grpc { "manus-grpc" } else { "manus-http" };
    let mut env = phoenix.otel_env(project, grpc);
    if grpc {
        // With the log at debug, the run's `run` and `step` spans (and the tools' own) exist
        // too, for the log only: the exported spans must skip them to find their parent.
        env.push(("OPENMANUS_LOG".to_owned(), "debug".to_owned()));
    }
    let (output, notes, mock, _setup) = notes_run(env).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        !stderr.contains("spans could not be sent") && !stderr.contains("telemetry is off"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "traced\n");

    let spans = one_trace(
        phoenix,
        project,
        &[
            ("invoke_agent Manus", 1),
            ("chat gpt-4o", 2),
            ("execute_tool str_replace_editor", 1),
            ("execute_tool terminate", 1),
        ],
    )
    .await;
    let agent = named(&spans, "invoke_agent Manus")[0];
    assert_eq!(agent["span_kind"], "AGENT");
    assert_eq!(agent["parent_id"], Value::Null, "the run is the root");
    assert_eq!(attribute(agent, "gen_ai.agent.name"), "Manus");
    assert_eq!(attribute(agent, "gen_ai.provider.name"), "openai");
    assert_eq!(attribute(agent, "gen_ai.request.model"), "gpt-4o");
    assert!(attribute(agent, "gen_ai.conversation.id").is_string());
    let chats = named(&spans, "chat gpt-4o");
    let mut input_total = 0;
    for chat in &chats {
        assert_eq!(chat["span_kind"], "LLM");
        assert_eq!(chat["parent_id"].as_str(), Some(span_id(agent)));
        assert_eq!(attribute(chat, "gen_ai.request.model"), "gpt-4o");
        assert_eq!(attribute(chat, "server.address"), "127.0.0.1");
        let input = attribute(chat, "gen_ai.usage.input_tokens")
            .as_i64()
            .unwrap();
        assert!(input > 0, "{chat:#}");
        assert!(
            attribute(chat, "gen_ai.usage.output_tokens")
                .as_i64()
                .unwrap()
                > 0
        );
        assert_eq!(
            attribute(chat, "llm.token_count.prompt").as_i64(),
            Some(input)
        );
        assert!(
            attribute(chat, "gen_ai.response.finish_reasons").is_array(),
            "{chat:#}"
        );
        // Content is not captured unless asked for.
        assert!(
            attribute(chat, "gen_ai.input.messages").is_null(),
            "{chat:#}"
        );
        input_total += input;
    }
    assert_eq!(
        attribute(agent, "gen_ai.usage.input_tokens").as_i64(),
        Some(input_total),
        "the run's total is its calls' sum"
    );
    let tools: BTreeSet<&str> = spans
        .iter()
        .filter(|s| s["span_kind"] == "TOOL")
        .map(|s| {
            assert_eq!(s["parent_id"].as_str(), Some(span_id(agent)));
            attribute(s, "gen_ai.tool.name").as_str().unwrap()
        })
        .collect();
    assert_eq!(tools, BTreeSet::from(["str_replace_editor", "terminate"]));
    let editor = named(&spans, "execute_tool str_replace_editor")[0];
    assert_eq!(attribute(editor, "gen_ai.tool.call.id"), "w");
    assert!(attribute(editor, "error.type").is_null(), "{editor:#}");
    assert_eq!(editor["status_code"], "UNSET", "{editor:#}");
    mock.verify().unwrap();
}

async fn an_a2a_call_between_two_servers_is_one_trace(phoenix: &Phoenix) {
    let project = "a2a";
    let Delegation {
        helper_mock,
        lead_mock,
        mut helper,
        mut lead,
        // Kept to the end: the servers run in them.
        helper_dir: _helper_dir,
        lead_dir: _lead_dir,
        reply,
    } = Delegation::run(|_| String::new(), phoenix.otel_env(project, false)).await;
    assert_eq!(
        reply["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{reply}"
    );
    // Spans leave each server in batches: a clean stop sends what is left.
    for server in [&mut lead, &mut helper] {
        stop(server).await;
    }

    let spans = one_trace(
        phoenix,
        project,
        &[
            ("invoke_agent Manus", 2),
            ("chat gpt-4o", 3),
            ("execute_tool a2a_call", 1),
            ("a2a request", 2),
            ("task", 2),
        ],
    )
    .await;
    let call = named(&spans, "execute_tool a2a_call");
    assert_eq!(call.len(), 1, "{spans:#?}");
    let call_id = span_id(call[0]);
    let agents = named(&spans, "invoke_agent Manus");
    // The helper's run continues the lead's: it descends from the lead's a2a_call.
    let helper_run: Vec<_> = agents
        .iter()
        .filter(|a| descends_from(&spans, a, call_id))
        .collect();
    assert_eq!(helper_run.len(), 1, "{spans:#?}");
    let lead_run = agents
        .iter()
        .find(|a| !descends_from(&spans, a, call_id))
        .expect("the lead's run");
    assert!(descends_from(&spans, call[0], span_id(lead_run)));
    // The root is the lead's A2A request (the test's message had no trace of its own).
    let roots: Vec<&str> = spans
        .iter()
        .filter(|s| s["parent_id"].is_null())
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(roots, ["a2a request"], "{spans:#?}");
    assert!(descends_from(
        &spans,
        lead_run,
        span_id(
            named(&spans, "a2a request")
                .iter()
                .find(|s| s["parent_id"].is_null())
                .unwrap()
        )
    ));
    let helper_chat = named(&spans, "chat gpt-4o")
        .into_iter()
        .filter(|c| descends_from(&spans, c, span_id(helper_run[0])))
        .count();
    assert_eq!(helper_chat, 1, "the helper's model call is in its run");
    helper_mock.verify().unwrap();
    lead_mock.verify().unwrap();
}

/// Stops a server with SIGTERM and waits for it (it flushes its spans on the way out).
async fn stop(server: &mut Child) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(PATIENCE, server.wait())
        .await
        .expect("the server stopped")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

async fn a_task_from_submit_run_by_a_worker_is_one_trace(phoenix: &Phoenix) {
    let project = "worker";
    let nats = NatsServer::start().unwrap();
    let mock = MockOpenAi::start().await.unwrap();
    mock.push_for("Say hello", finish("Hello from a worker."));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    std::fs::write(
        dir.path().join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-otel-test\"\nmax_attempts = 1\n\n[nats]\nurl = \"{}\"\n",
            mock.base_url(),
            nats.url()
        ),
    )
    .unwrap();
    let command = |args: &[&str]| {
        let mut command = Command::new(BIN);
        command
            .current_dir(dir.path())
            .env_remove("OPENMANUS_CONFIG")
            .env("NO_COLOR", "1")
            .env("TMPDIR", dir.path().join("tmp"))
            .envs(phoenix.otel_env(project, false))
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    };
    let mut worker = command(&["worker", "--name", "traced"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(worker.stderr.take().unwrap()).lines();
    tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.starts_with("openmanus worker ") {
                return;
            }
        }
        panic!("the worker ended before it started");
    })
    .await
    .expect("the worker started");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let output = tokio::time::timeout(
        PATIENCE,
        command(&[
            "submit",
            "--agent",
            "swe",
            "--id",
            "traced-1",
            "--wait",
            "Say hello",
        ])
        .output(),
    )
    .await
    .expect("submit returned")
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stop(&mut worker).await;

    let spans = one_trace(
        phoenix,
        project,
        &[
            ("submit swe", 1),
            ("task swe", 1),
            ("invoke_agent swe", 1),
            ("chat gpt-4o", 1),
        ],
    )
    .await;
    let submit = named(&spans, "submit swe")[0];
    assert_eq!(
        submit["parent_id"],
        Value::Null,
        "the submission is the root"
    );
    let run = named(&spans, "invoke_agent swe")[0];
    assert!(
        descends_from(&spans, run, span_id(submit)),
        "the worker's run continues the submission: {spans:#?}"
    );
    let task = named(&spans, "task swe");
    assert_eq!(task.len(), 1, "{spans:#?}");
    assert_eq!(attribute(task[0], "openmanus.task.id"), "traced-1");
    mock.verify().unwrap();
}

/// A collector that is down costs one warning; the run succeeds all the same.
#[tokio::test]
async fn a_collector_that_is_down_costs_one_warning_and_the_run_goes_on() {
    let mock = MockOpenAi::start().await.unwrap();
    mock.push(Completion::tool_calls(
        None,
        [call("b", "bash", json!({"command": "echo one"}))],
    ))
    .push(Completion::tool_calls(
        None,
        [call("c", "bash", json!({"command": "echo two"}))],
    ))
    .push(finish("Done."));
    let setup = Setup::new(&mock);
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let output = setup
        .command()
        .args(["--prompt", "Echo twice"])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        )
        // Each span its own export: every one of them fails.
        .env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
        .env("OTEL_BSP_SCHEDULE_DELAY", "1")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("Done."),
        "{stderr}"
    );
    assert_eq!(export_warnings(&stderr), 1, "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    mock.verify().unwrap();
}

/// A protocol this build does not speak: a warning that names it, and the run goes on without
/// export.
#[tokio::test]
async fn an_unknown_protocol_is_a_warning_not_a_failure() {
    let mock = MockOpenAi::start().await.unwrap();
    mock.push(finish("Done."));
    let setup = Setup::new(&mock);
    let output = setup
        .command()
        .args(["--prompt", "Finish"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("telemetry is off: OTLP protocol `http/json` is not supported"),
        "{stderr}"
    );
    mock.verify().unwrap();
}
