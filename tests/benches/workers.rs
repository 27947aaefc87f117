//! The NATS workers as their users pay for them (`cargo xtask bench`): release `openmanus
//! worker` processes against a real `nats-server -js` child on 127.0.0.1 and the test kit's
//! strict mock model (answering at once).
//!
//! * **Throughput**: [`TASKS`] one-step SWE tasks (the model answers `terminate` at once) are
//!   submitted together; tasks/s from the first submission to the last result stored, through
//!   1, 2 and 4 workers (each `--concurrency 1`, so the worker count is the tasks run at once).
//!   Each task is a session of its own on the worker: a workspace, a SQLite store, the agent,
//!   the model request, its events published, its result stored, its message acknowledged.
//! * **Event latency**: one [`STEPS`]-step task through one worker, followed by a core NATS
//!   subscriber on the task's event subject and by the JetStream ordered consumer that
//!   `Submitter::events` (and `openmanus submit --follow`) reads: for every event, its stamp
//!   (`at`, set by the worker when the event is recorded, 1 ms clock) to the subscriber's
//!   receipt. Median and p99.
//! * **NATS hop**: the same server, one event-sized message (the median event's size) published
//!   by one connection and received by another, one at a time: the transport alone, in µs.
//!
//! Figures only — nothing here passes or fails. `cargo xtask bench` builds the release binary
//! and passes its path in `OPENMANUS_BIN`; `nats-server` comes from `PATH` or `NATS_SERVER`.

#![allow(clippy::print_stdout, missing_docs)]

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_core::ToolCall;
use agent_testkit::{Completion, MockOpenAi, NatsServer};
use agent_worker::{Names, Nats, NatsOptions, QueueSettings, Submitter, TaskEvent, TaskMessage};
use futures::StreamExt;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Tasks per throughput figure.
const TASKS: usize = 60;
/// Worker counts measured.
const WORKERS: [usize; 3] = [1, 2, 4];
/// Steps of the latency run.
const STEPS: usize = 200;
/// Messages of the NATS hop figure.
const HOPS: usize = 2000;

type Error = Box<dyn std::error::Error>;

struct Setup {
    nats: NatsServer,
    mock: MockOpenAi,
    dir: tempfile::TempDir,
}

impl Setup {
    async fn new() -> Result<Self, Error> {
        let nats = NatsServer::start()?;
        let mock = MockOpenAi::start().await?;
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join("config"))?;
        std::fs::write(
            dir.path().join("config/config.toml"),
            format!(
                "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-bench\"\nmax_attempts = 1\n\n\
                 [agent]\nmax_steps = {}\n\n[nats]\nurl = \"{}\"\nworkspaces_dir = \"{}\"\n",
                mock.base_url(),
                STEPS + 10,
                nats.url(),
                dir.path().join("tasks").display()
            ),
        )?;
        Ok(Self { nats, mock, dir })
    }

    async fn connect(&self) -> Result<Nats, Error> {
        Ok(Nats::connect(
            &NatsOptions::new(self.nats.url()),
            Names::default(),
            &QueueSettings::default(),
        )
        .await?)
    }

    /// Starts one `openmanus worker --concurrency 1` and waits until it says it is ready.
    async fn worker(&self, bin: &Path, name: &str) -> Result<Child, Error> {
        let mut child = Command::new(bin)
            .current_dir(self.dir.path())
            .env_remove("OPENMANUS_CONFIG")
            .env("HOME", self.dir.path())
            .env("NO_COLOR", "1")
            .args(["worker", "--name", name, "--concurrency", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let started = tokio::time::timeout(Duration::from_secs(120), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.starts_with("openmanus worker ") {
                    return true;
                }
            }
            false
        })
        .await?;
        if !started {
            return Err("a worker ended before it started".into());
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(child)
    }
}

fn terminate() -> Completion {
    Completion::tool_calls(
        Some("Done.".into()),
        [ToolCall::new(
            "done",
            "terminate",
            r#"{"status":"success"}"#,
        )],
    )
}

/// Stops the workers with SIGTERM and waits for them.
async fn stop(workers: Vec<Child>) {
    for worker in &workers {
        if let Some(pid) = worker.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
    for mut worker in workers {
        let _ = tokio::time::timeout(Duration::from_secs(60), worker.wait()).await;
    }
}

/// Seconds from the first submission to the last result, through `count` workers.
async fn throughput(bin: &Path, count: usize) -> Result<Duration, Error> {
    let setup = Setup::new().await?;
    let nats = setup.connect().await?;
    let tasks: Vec<TaskMessage> = (0..TASKS)
        .map(|n| TaskMessage::new("swe", format!("throughput task {n} of {count}")))
        .collect();
    for task in &tasks {
        setup.mock.push_for(task.task.clone(), terminate());
    }
    let mut workers = Vec::new();
    for n in 0..count {
        workers.push(setup.worker(bin, &format!("bench-{n}")).await?);
    }
    let submitter = Submitter::new(nats);
    let started = Instant::now();
    for task in &tasks {
        submitter.submit(task).await?;
    }
    let results = futures::future::join_all(tasks.iter().map(|t| submitter.wait_result(&t.id)));
    let results = tokio::time::timeout(Duration::from_secs(600), results).await?;
    let spent = started.elapsed();
    stop(workers).await;
    for result in results {
        let result = result?;
        if result.ending != agent_session::Ending::Finished {
            return Err(format!("a task ended {:?}", result.ending).into());
        }
    }
    if let Err(violations) = setup.mock.verify() {
        return Err(format!("the workers' requests broke the OpenAI rules: {violations}").into());
    }
    Ok(spent)
}

/// Milliseconds since the Unix epoch, with a fraction.
fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

struct Latency {
    /// Stamp → core subscriber, ms.
    core: Vec<f64>,
    /// Stamp → JetStream ordered consumer, ms.
    stream: Vec<f64>,
    /// Event sizes, bytes.
    sizes: Vec<usize>,
}

async fn latency(bin: &Path) -> Result<Latency, Error> {
    let setup = Setup::new().await?;
    let nats = setup.connect().await?;
    let task = TaskMessage::new("swe", "event latency benchmark");
    // The task's workspace (`<workspaces_dir>/<task id>`, which the worker makes): a directory
    // listing each step.
    let workspace = setup.dir.path().join("tasks").join(&task.id);
    let view = json!({"command": "view", "path": workspace}).to_string();
    for step in 1..STEPS {
        setup.mock.push_for(
            task.task.clone(),
            Completion::tool_calls(
                Some(format!("Step {step}.")),
                [ToolCall::new(
                    format!("v{step}"),
                    "str_replace_editor",
                    view.clone(),
                )],
            ),
        );
    }
    setup.mock.push_for(task.task.clone(), terminate());
    let worker = setup.worker(bin, "latency").await?;
    let submitter = Submitter::new(nats.clone());
    let mut core_subscription = nats
        .client()
        .subscribe(nats.names().event_subject(&task.id))
        .await?;
    let mut ordered = submitter.events(&task.id).await?;
    let core = async {
        let mut samples = Vec::new();
        let mut sizes = Vec::new();
        while let Some(message) = core_subscription.next().await {
            let received = now_ms();
            let event: TaskEvent = serde_json::from_slice(&message.payload)?;
            samples.push(received - event.at as f64);
            sizes.push(message.payload.len());
            if event.kind.as_str() == "run_finished" {
                return Ok::<_, Error>((samples, sizes));
            }
        }
        Err("the subscription ended".into())
    };
    let stream = async {
        let mut samples = Vec::new();
        while let Some(event) = ordered.next().await {
            let received = now_ms();
            let event = event?;
            samples.push(received - event.at as f64);
            if event.kind.as_str() == "run_finished" {
                return Ok::<_, Error>(samples);
            }
        }
        Err("the event stream ended".into())
    };
    let submit = async {
        submitter.submit(&task).await?;
        Ok::<_, Error>(())
    };
    let followed = tokio::time::timeout(Duration::from_secs(600), async {
        tokio::join!(core, stream, submit)
    })
    .await?;
    stop(vec![worker]).await;
    let ((core, sizes), stream, ()) = (followed.0?, followed.1?, followed.2?);
    Ok(Latency {
        core,
        stream,
        sizes,
    })
}

/// One message of `size` bytes at a time from one connection to another: µs per hop.
async fn hop(size: usize) -> Result<Vec<f64>, Error> {
    let server = NatsServer::start()?;
    let publisher = async_nats::connect(server.url()).await?;
    let subscriber = async_nats::connect(server.url()).await?;
    let mut subscription = subscriber.subscribe("bench.hop").await?;
    subscriber.flush().await?;
    let payload = bytes::Bytes::from(vec![b'x'; size]);
    let mut samples = Vec::with_capacity(HOPS);
    for _ in 0..HOPS {
        let started = Instant::now();
        publisher.publish("bench.hop", payload.clone()).await?;
        publisher.flush().await?;
        subscription.next().await.ok_or("the subscription ended")?;
        samples.push(started.elapsed().as_secs_f64() * 1e6);
    }
    Ok(samples)
}

async fn bench(bin: &Path) -> Result<(), Error> {
    let mut rows = Vec::new();
    for count in WORKERS {
        let spent = throughput(bin, count).await?;
        rows.push((count, spent));
    }
    let mut latency = latency(bin).await?;
    let by = |a: &f64, b: &f64| a.total_cmp(b);
    latency.core.sort_by(by);
    latency.stream.sort_by(by);
    latency.sizes.sort_unstable();
    let size = common::percentile(&latency.sizes, 0.5);
    let mut hops = hop(size).await?;
    hops.sort_by(by);

    println!(
        "workers: release `openmanus worker` processes (--concurrency 1), nats-server -js, mock model"
    );
    println!("| figure | measured |");
    println!("|---|---|");
    for (count, spent) in rows {
        println!(
            "| throughput, {TASKS} one-step tasks through {count} worker{} | {:.1} tasks/s ({:.2} s) |",
            if count == 1 { "" } else { "s" },
            TASKS as f64 / spent.as_secs_f64(),
            spent.as_secs_f64()
        );
    }
    println!(
        "| event stamped by the worker → core NATS subscriber, {} events of a {STEPS}-step task, median / p99 (1 ms stamps) | {:.2} ms / {:.2} ms |",
        latency.core.len(),
        common::percentile(&latency.core, 0.5),
        common::percentile(&latency.core, 0.99)
    );
    println!(
        "| event stamped by the worker → JetStream ordered consumer (`Submitter::events`), median / p99 | {:.2} ms / {:.2} ms |",
        common::percentile(&latency.stream, 0.5),
        common::percentile(&latency.stream, 0.99)
    );
    println!(
        "| NATS hop alone, one {size}-byte message publish → receive, {HOPS} one at a time, median / p99 | {:.0} µs / {:.0} µs |",
        common::percentile(&hops, 0.5),
        common::percentile(&hops, 0.99)
    );
    Ok(())
}

fn main() {
    common::run("workers", |bin| async move { bench(&bin).await });
}
