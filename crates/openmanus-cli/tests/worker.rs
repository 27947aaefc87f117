//! `openmanus worker` and `openmanus submit` as subprocesses against a real `nats-server -js`
//! child and the strict mock: a worker killed with SIGKILL in the middle of a task (the task
//! goes to another worker and has one result, and the processes its tool left, `setsid` ones
//! included, do not outlive it), SIGTERM (the tasks held are handed back at once
//! and their processes stopped), and `submit --wait`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use agent_session::Ending;
use agent_testkit::{Completion, MockOpenAi, NatsServer};
use agent_worker::{
    EventStream, Names, Nats, NatsOptions, QueueSettings, Submitter, TaskEvent, TaskMessage,
};
use futures::StreamExt;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::common::{alive, assert_all_gone, bash_leaving_children, call, recorded_pids};

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");
const PATIENCE: Duration = Duration::from_secs(120);

struct Setup {
    nats: NatsServer,
    mock: MockOpenAi,
    dir: tempfile::TempDir,
}

impl Setup {
    /// A NATS server, the mock, and a config whose queue has this `ack_wait`.
    async fn new(ack_wait_secs: u64) -> Self {
        let nats = NatsServer::start().unwrap();
        let mock = MockOpenAi::start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
        // Unconfined: the tools record their pids outside the workspace, as this machine numbers
        // them (the workers' keeper, not the confinement, is under test).
        std::fs::write(
            dir.path().join("config/config.toml"),
            format!(
                "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-worker-test\"\nmax_attempts = 1\n\n\
                 [nats]\nurl = \"{}\"\nack_wait_secs = {ack_wait_secs}\nprogress_secs = 1\n\n\
                 [permissions]\nsandbox = \"full-access\"\n",
                mock.base_url(),
                nats.url()
            ),
        )
        .unwrap();
        Self { nats, mock, dir }
    }

    /// Connects as the workers do (creating the queue with the configured `ack_wait`).
    async fn connect(&self, ack_wait_secs: u64) -> Nats {
        let settings = QueueSettings {
            ack_wait: Duration::from_secs(ack_wait_secs),
            ..QueueSettings::default()
        };
        Nats::connect(
            &NatsOptions::new(self.nats.url()),
            Names::default(),
            &settings,
        )
        .await
        .unwrap()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .current_dir(self.dir.path())
            .env_remove("OPENMANUS_CONFIG")
            .env("NO_COLOR", "1")
            .env("TMPDIR", self.dir.path().join("tmp"))
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// Starts `openmanus worker`; its standard error lines arrive on the receiver.
    async fn worker(
        &self,
        name: &str,
        concurrency: usize,
    ) -> (Child, mpsc::UnboundedReceiver<String>) {
        let mut child = self
            .command(&[
                "worker",
                "--name",
                name,
                "--concurrency",
                &concurrency.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let (sender, mut receiver) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = sender.send(line);
            }
        });
        tokio::time::timeout(PATIENCE, async {
            while let Some(line) = receiver.recv().await {
                if line.starts_with("openmanus worker ") {
                    return;
                }
            }
            panic!("the worker ended before it started");
        })
        .await
        .expect("the worker started");
        (child, receiver)
    }

    fn pid_file(&self, name: &str) -> PathBuf {
        self.dir.path().join("tmp").join(format!("{name}.pid"))
    }
}

/// A first reply that runs a long `sleep`, writing its pid to `pid_file` first.
fn long_tool(pid_file: &Path) -> Completion {
    Completion::tool_calls(
        Some("Working on it.".into()),
        [call(
            "c1",
            "bash",
            json!({"command": format!("echo $$ > {} && exec sleep 300", pid_file.display())}),
        )],
    )
}

fn finish(text: &str) -> Completion {
    Completion::tool_calls(
        Some(text.into()),
        [call("c2", "terminate", json!({"status": "success"}))],
    )
}

fn signal(child: &Child, signal: nix::sys::signal::Signal) {
    let pid = i32::try_from(child.id().unwrap()).unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).unwrap();
}

async fn next_event(events: &mut EventStream) -> TaskEvent {
    tokio::time::timeout(PATIENCE, events.next())
        .await
        .expect("an event in time")
        .expect("the stream is open")
        .unwrap()
}

async fn until(events: &mut EventStream, done: impl Fn(&TaskEvent) -> bool) -> Vec<TaskEvent> {
    let mut seen = Vec::new();
    loop {
        let event = next_event(events).await;
        let stop = done(&event);
        seen.push(event);
        if stop {
            return seen;
        }
    }
}

fn is_tool_start(event: &TaskEvent) -> bool {
    event.data["type"] == "tool_call_started"
}

async fn exit_line(receiver: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(PATIENCE, async {
        while let Some(line) = receiver.recv().await {
            if line.starts_with("stopped:") {
                return line;
            }
        }
        panic!("the worker ended without its summary");
    })
    .await
    .expect("the worker's summary")
}

/// Runs `openmanus submit` with `args` to its end.
async fn submit(setup: &Setup, args: &[&str]) -> std::process::Output {
    let mut command = setup.command(&["submit"]);
    tokio::time::timeout(
        PATIENCE,
        command
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output(),
    )
    .await
    .expect("submit returned")
    .unwrap()
}

/// Stops a worker with SIGTERM after its one task; it exits cleanly.
async fn stop_after_one(mut worker: Child, mut log: mpsc::UnboundedReceiver<String>) {
    signal(&worker, nix::sys::signal::Signal::SIGTERM);
    assert!(
        exit_line(&mut log)
            .await
            .starts_with("stopped: 1 completed")
    );
    assert!(worker.wait().await.unwrap().success());
}

#[tokio::test]
async fn a_worker_killed_mid_task_loses_it_to_another_worker_and_it_completes_once() {
    // A short deadline: the killed worker's task is redelivered three seconds after its last
    // in-progress acknowledgement.
    let setup = Setup::new(3).await;
    let nats = setup.connect(3).await;
    let task = TaskMessage::new("swe", "Survive a crash");
    let pid_file = setup.pid_file("crash");
    setup
        .mock
        .push_for(
            "Survive a crash",
            Completion::tool_calls(
                Some("Working on it.".into()),
                [call(
                    "c1",
                    "bash",
                    json!({"command": bash_leaving_children(&pid_file)}),
                )],
            ),
        )
        .push_for("Survive a crash", finish("Done after the crash."));
    let submitter = Submitter::new(nats.clone());
    let mut events = submitter.events(&task.id).await.unwrap();
    let (mut first, _first_log) = setup.worker("first", 1).await;
    submitter.submit(&task).await.unwrap();
    let before = until(&mut events, is_tool_start).await;
    assert!(before.iter().all(|e| e.attempt == 1 && e.worker == "first"));
    // The tool's bash and the two processes it left behind (one in a session of its own).
    let tools = recorded_pids(&pid_file).await;
    assert!(tools.iter().all(|(_, pid)| alive(*pid)), "{tools:?}");
    signal(&first, nix::sys::signal::Signal::SIGKILL);
    first.wait().await.unwrap();
    // The killed worker's keeper stops them all: nothing of the killed attempt lives on.
    assert_all_gone(&tools, "the worker's SIGKILL").await;

    let (mut second, mut second_log) = setup.worker("second", 1).await;
    let result = tokio::time::timeout(PATIENCE, submitter.wait_result(&task.id))
        .await
        .expect("the task completed on the second worker")
        .unwrap();
    assert_eq!(result.ending, Ending::Finished, "{result:?}");
    assert_eq!(result.worker, "second");
    assert_eq!(result.attempt, 2);
    // The second attempt's events follow, numbered from 1, ending with one run_finished.
    let after = until(&mut events, |e| e.kind.as_str() == "run_finished").await;
    let second_attempt: Vec<&TaskEvent> = after.iter().filter(|e| e.attempt == 2).collect();
    assert_eq!(second_attempt.first().map(|e| e.seq), Some(1), "{after:?}");
    assert!(second_attempt.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    assert_eq!(second_attempt.len() as u64, result.events);
    // Exactly one result: the bucket holds one revision of the key, and nothing is left queued.
    let entry = nats
        .results()
        .entry(task.id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(entry.delta, 0);
    let mut history = nats.results().history(task.id.as_str()).await.unwrap();
    let mut revisions = 0;
    while let Some(entry) = history.next().await {
        entry.unwrap();
        revisions += 1;
    }
    assert_eq!(revisions, 1);
    signal(&second, nix::sys::signal::Signal::SIGTERM);
    let summary = exit_line(&mut second_log).await;
    assert!(summary.starts_with("stopped: 1 completed"), "{summary}");
    assert!(second.wait().await.unwrap().success());
    setup.mock.verify().unwrap();
}

#[tokio::test]
async fn sigterm_hands_back_the_tasks_a_worker_holds_and_stops_their_processes() {
    // A deadline far beyond the test's patience: only tasks handed back come back in time.
    let setup = Setup::new(600).await;
    let nats = setup.connect(600).await;
    let submitter = Submitter::new(nats.clone());
    let (mut worker, mut log) = setup.worker("leaving", 2).await;
    let mut tasks = Vec::new();
    for n in 0..2 {
        let text = format!("Long task {n}");
        let pid_file = setup.pid_file(&format!("long-{n}"));
        setup
            .mock
            .push_for(text.as_str(), long_tool(&pid_file))
            .push_for(text.as_str(), finish(&format!("Task {n} done.")));
        let task = TaskMessage::new("swe", text);
        let mut events = submitter.events(&task.id).await.unwrap();
        submitter.submit(&task).await.unwrap();
        until(&mut events, is_tool_start).await;
        tasks.push((task, pid_file));
    }
    // Both run at once on the one worker; the tools have written their pids.
    let sleeps: Vec<i32> = tasks
        .iter()
        .map(|(_, pid_file)| {
            let mut text = String::new();
            for _ in 0..1200 {
                text = std::fs::read_to_string(pid_file).unwrap_or_default();
                if text.ends_with('\n') {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            text.trim().parse().unwrap()
        })
        .collect();
    signal(&worker, nix::sys::signal::Signal::SIGTERM);
    let summary = exit_line(&mut log).await;
    // Both handed back (a pull in flight while stopping may get one again: handed back again).
    let handed_back: u32 = summary
        .split(", ")
        .find_map(|part| part.strip_suffix(" handed back"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(handed_back >= 2, "{summary}");
    assert!(summary.starts_with("stopped: 0 completed"), "{summary}");
    assert!(worker.wait().await.unwrap().success());
    for sleep in &sleeps {
        assert!(!alive(*sleep), "the run's process {sleep} was stopped");
    }
    // Another worker gets both at once (their ack_wait has not run out).
    let (mut next, mut next_log) = setup.worker("next", 2).await;
    for (task, _) in &tasks {
        let result = tokio::time::timeout(PATIENCE, submitter.wait_result(&task.id))
            .await
            .expect("a handed-back task completes")
            .unwrap();
        assert_eq!(result.ending, Ending::Finished, "{result:?}");
        assert_eq!(result.worker, "next");
        assert!(result.attempt >= 2, "{result:?}");
    }
    signal(&next, nix::sys::signal::Signal::SIGTERM);
    assert!(
        exit_line(&mut next_log)
            .await
            .starts_with("stopped: 2 completed")
    );
    assert!(next.wait().await.unwrap().success());
    setup.mock.verify().unwrap();
}

#[tokio::test]
async fn submit_waits_for_the_result_and_exits_with_the_runs_code() {
    let setup = Setup::new(30).await;
    setup
        .mock
        .push_for("Say hello", finish("Hello from a worker."));
    let (worker, log) = setup.worker("greeter", 1).await;
    let output = submit(
        &setup,
        &["--agent", "swe", "--id", "hello-1", "--wait", "Say hello"],
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.first(), Some(&"hello-1"), "{stdout}");
    assert!(stdout.contains("Hello from a worker."), "{stdout}");
    assert!(stderr.contains("on greeter (attempt 1)"), "{stderr}");
    stop_after_one(worker, log).await;
    setup.mock.verify().unwrap();
}

#[tokio::test]
async fn submit_follow_shows_the_run_as_a_local_run_would() {
    let setup = Setup::new(30).await;
    setup.mock.push_for(
        "List the files",
        Completion::tool_calls(
            Some("Looking first.".into()),
            [call(
                "c1",
                "bash",
                json!({"command": "echo followed-output"}),
            )],
        ),
    );
    setup.mock.push_for("List the files", finish("Listed."));
    let (worker, log) = setup.worker("follower", 1).await;
    let output = submit(&setup, &["--agent", "swe", "--follow", "List the files"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // Who took the task, then the run as the local live view shows it: the thought, the
    // tool call and its observation.
    let taken = stderr
        .find("worker follower took the task (attempt 1)")
        .unwrap_or_else(|| panic!("{stderr}"));
    let thought = stderr
        .find("Looking first.")
        .unwrap_or_else(|| panic!("{stderr}"));
    let tool = stderr.find("bash(").unwrap_or_else(|| panic!("{stderr}"));
    let observed = stderr
        .find("followed-output")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        taken < thought && thought < tool && tool < observed,
        "{stderr}"
    );
    assert_eq!(stdout.lines().last(), Some("Listed."), "{stdout}");
    stop_after_one(worker, log).await;
    setup.mock.verify().unwrap();
}
