//! Whole-process cost of the release `openmanus` binary (`cargo xtask bench`): the SWE agent
//! against the test kit's mock model on 127.0.0.1, a 1-step run (`terminate` at once) and a
//! 20-step run (19 `str_replace_editor view` steps on a small file, then `terminate`).
//!
//! * instructions (callgrind, when `valgrind` is on the PATH): the 1-step run is start-up, the
//!   first request, one step and exit; per step is (20-step − 1-step) / 19; each the median of
//!   five runs, and per step again from the lowest of the five of each length (see
//!   `instructions_of`), and every run's count (a run that opens one more SQLite connection
//!   counts ~0.6 M more: see docs/design/one-record.md). Under callgrind the mock model
//!   answers each request after 150 ms, so that every step is committed to the store alone,
//!   as it is with a real model (before
//!   2026-12-07 it answered at once, and callgrind's slowness decided how many steps shared a
//!   commit: fewer commits, and ±2 M between runs; `PROCESS_COST_PACE_MS=0` measures that way);
//! * CPU time (user + system, from `getrusage(RUSAGE_CHILDREN)` around each child): the same two
//!   runs, the mean of the middle ones of several (the kernel counts CPU time in scheduler ticks,
//!   4 ms on the development VM: a median would keep that step, a mean of many runs averages it
//!   out); and the voluntary context switches per step (a thread that
//!   blocked: a trip to the blocking pool, a wake-up of a writer thread), which do not depend on
//!   the machine's load the way CPU time does;
//! * both with the session store (the default) and with `--no-store`, and with the store and
//!   OpenTelemetry export on (`OTEL_EXPORTER_OTLP_ENDPOINT` at an OTLP/HTTP sink on 127.0.0.1
//!   that answers 200 and counts the bytes): what export costs a step (issue 34: ≤ +5 %);
//! * the floor: the CPU a process that does nothing but the HTTP exchange spends per request,
//!   sending the same requests (the bodies the binary sent in its last 20-step run) to the same
//!   mock over one kept-alive connection and reading the same streamed replies: this benchmark
//!   itself, run again as a bare client on the HTTP stack of `openmanus` (reqwest with rustls on a
//!   current-thread tokio runtime, the body read and dropped; `reqwest::Client::new()` on ring, without
//!   the user agent and timeouts `openmanus` sets), and `curl` when it is on the PATH.
//!   The difference between a step and the floor is what `openmanus` costs beyond talking to
//!   the model.
//!
//! The steps use an in-process tool so that the figure is the client's own cost, not a shell's
//! start-up. `cargo xtask bench` builds the release binary and passes its path in
//! `OPENMANUS_BIN`; `OPENMANUS_BENCH_ARGS` adds arguments (`--sandbox full-access` to compare).
//! `PROCESS_COST_PROFILES=<dir>` keeps the callgrind profiles there. Figures only — nothing
//! here passes or fails.

#![allow(clippy::print_stdout, missing_docs)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use agent_core::ToolCall;
use agent_testkit::{Completion, MockOpenAi};
use nix::sys::resource::{UsageWho, getrusage};

/// Steps of the long run (SWE's default step limit).
const STEPS: usize = 20;
/// Native runs per figure.
const RUNS: usize = 15;
/// The lowest and the highest runs left out of each mean (a run the machine disturbed).
const TRIM: usize = 3;
/// Runs under callgrind per figure (the median and the lowest are taken).
const COUNTED_RUNS: usize = 5;

/// How long the mock model takes to answer under callgrind: more than the recorder's commit
/// interval (100 ms), so every step ends long enough after the previous commit to be committed
/// alone, as with a real model, in every run. Unpaced, how many steps shared a commit
/// depended on callgrind's timing, and moved a run's count by up to ~2 M.
const PACE: Duration = Duration::from_millis(150);

/// [`PACE`], or `PROCESS_COST_PACE_MS` (`0`: no pacing, to compare with figures taken before
/// 2026-12-07's pacing).
fn pace() -> Option<Duration> {
    let ms = std::env::var("PROCESS_COST_PACE_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(PACE, Duration::from_millis);
    (!ms.is_zero()).then_some(ms)
}

/// Instructions of several runs of one length.
#[derive(Clone, Copy)]
struct Counts {
    /// Every run's, lowest first: a run that opened one more SQLite connection than another
    /// (sqlx returns a released connection to its pool from a task) counts ~0.6 M more.
    runs: [u64; COUNTED_RUNS],
}

impl Counts {
    fn median(&self) -> u64 {
        self.runs[COUNTED_RUNS / 2]
    }

    fn lowest(&self) -> u64 {
        self.runs[0]
    }
}

struct Setup {
    server: MockOpenAi,
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// The OTLP/HTTP sink's base URL.
    collector: String,
}

/// How a run is measured: with the session store or `--no-store`, with telemetry export on.
#[derive(Clone, Copy)]
struct Mode {
    store: bool,
    export: bool,
}

impl Mode {
    fn name(self) -> &'static str {
        match (self.store, self.export) {
            (true, false) => "store",
            (false, false) => "--no-store",
            (true, true) => "store + OTLP export",
            (false, true) => "--no-store + OTLP export",
        }
    }
}

/// An OTLP/HTTP collector that takes every export (200, empty body) and counts what it got.
async fn otlp_sink() -> Option<(String, std::sync::Arc<std::sync::atomic::AtomicUsize>)> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let received = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&received);
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            counter.fetch_add(body.len(), Ordering::Relaxed);
            async {}
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.ok()?;
    let url = format!("http://{}", listener.local_addr().ok()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Some((url, received))
}

impl Setup {
    /// Scripts one run of `steps` steps; with `pace`, each reply's headers come only after it.
    fn script(&self, steps: usize, pace: Option<Duration>) {
        let push = |completion: Completion| match pace {
            Some(delay) => self.server.push_slow_first_byte(delay, completion),
            None => self.server.push(completion),
        };
        let file = self.dir.path().join("ws").join("notes.txt");
        let view = serde_json::json!({"command": "view", "path": file}).to_string();
        for step in 1..steps {
            push(Completion::tool_calls(
                None,
                [ToolCall::new(
                    format!("v{step}"),
                    "str_replace_editor",
                    view.clone(),
                )],
            ));
        }
        push(Completion::tool_calls(
            None,
            [ToolCall::new(
                "done",
                "terminate",
                r#"{"status":"success"}"#,
            )],
        ));
    }

    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }

    fn args(&self, store: bool) -> Vec<String> {
        let path = |p: PathBuf| p.to_string_lossy().into_owned();
        vec![
            "--config".into(),
            path(self.dir.path().join("config.toml")),
            "--workspace".into(),
            path(self.dir.path().join("ws")),
            "--agent".into(),
            "swe".into(),
            "-q".into(),
            "--prompt".into(),
            "process-cost benchmark".into(),
        ]
        .into_iter()
        .chain((!store).then(|| "--no-store".to_owned()))
        // More arguments for the binary, to compare modes (`--sandbox full-access`).
        .chain(
            std::env::var("OPENMANUS_BENCH_ARGS")
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        )
        .collect()
    }

    /// CPU seconds (user + system) and voluntary context switches of one native run of
    /// `steps` steps.
    fn cpu_run(&self, steps: usize, mode: Mode) -> Option<Usage> {
        let mut command = self.command(&self.bin);
        command.args(self.args(mode.store));
        if mode.export {
            command.env("OTEL_EXPORTER_OTLP_ENDPOINT", &self.collector);
        }
        self.measured(command, steps)
    }

    /// The usage of `command`, a child that makes `steps` requests to the mock (scripted here):
    /// `None` when it fails or makes another number of requests.
    fn measured(&self, mut command: Command, steps: usize) -> Option<Usage> {
        self.script(steps, None);
        let requests = self.server.request_count();
        let before = usage_of_children()?;
        let status = command.status().ok()?;
        let after = usage_of_children()?;
        let all_steps = self.server.request_count() == requests + steps;
        (status.success() && all_steps).then_some(Usage {
            cpu: after.cpu - before.cpu,
            switches: after.switches - before.switches,
        })
    }

    /// CPU seconds of a bare client sending the first `count` of `bodies` to the mock, one
    /// after the other over one connection, answered with the same scripted replies.
    fn client_run(&self, client: Client, bodies: &[PathBuf], count: usize) -> Option<f64> {
        let steps = bodies.len().min(count);
        let url = format!("{}/chat/completions", self.server.base_url());
        let bodies = bodies.iter().take(steps);
        let command = match client {
            Client::Curl => {
                let mut command = self.command(Path::new("curl"));
                for (i, body) in bodies.enumerate() {
                    if i > 0 {
                        command.arg("--next");
                    }
                    command
                        .args([
                            "-s",
                            "-o",
                            "/dev/null",
                            "-H",
                            "content-type: application/json",
                        ])
                        .arg("--data-binary")
                        .arg(format!("@{}", body.display()))
                        .arg(&url);
                }
                command
            }
            Client::Bare => {
                let mut command = self.command(&std::env::current_exe().ok()?);
                command.arg(BARE_CLIENT).arg(&url).args(bodies);
                command
            }
        };
        self.measured(command, steps).map(|usage| usage.cpu)
    }

    /// Writes the bodies of the last `steps` requests the mock received to files.
    fn last_bodies(&self, steps: usize) -> Option<Vec<PathBuf>> {
        let requests = self.server.requests();
        let last = requests.get(requests.len().checked_sub(steps)?..)?;
        last.iter()
            .enumerate()
            .map(|(i, request)| {
                let path = self.dir.path().join(format!("body-{i}.json"));
                std::fs::write(&path, &request.raw_body).ok()?;
                Some(path)
            })
            .collect()
    }

    /// The median and the lowest instructions of [`COUNTED_RUNS`] runs of `steps` steps under
    /// callgrind. Unpaced, a run's count varied by up to ~2 M, most of it how many batches the
    /// store committed (a step that ends within the commit interval shares its predecessor's
    /// transaction); the model is now paced ([`PACE`]) so that every step commits alone in
    /// every run, and the 20-step counts of five runs lie within ~1 %. The per-step figure
    /// from the lowest of each length is printed beside the median's.
    fn instructions_of(&self, steps: usize, export: bool) -> Option<Counts> {
        let mut counts = (0..COUNTED_RUNS)
            .map(|_| self.instructions(steps, export))
            .collect::<Option<Vec<u64>>>()?;
        counts.sort_unstable();
        Some(Counts {
            runs: counts.try_into().ok()?,
        })
    }

    /// Instructions of one run of `steps` steps under callgrind (with export on or off).
    fn instructions(&self, steps: usize, export: bool) -> Option<u64> {
        self.script(steps, pace());
        let requests = self.server.request_count();
        // `PROCESS_COST_PROFILES=<dir>` keeps the callgrind profiles there (for
        // `callgrind_annotate`); otherwise they go with the benchmark's temporary directory.
        let dir = std::env::var_os("PROCESS_COST_PROFILES")
            .map_or_else(|| self.dir.path().to_owned(), PathBuf::from);
        let out = dir.join(format!("callgrind.{steps}.{export}.out"));
        let mut command = self.command(Path::new("valgrind"));
        if export {
            command.env("OTEL_EXPORTER_OTLP_ENDPOINT", &self.collector);
        }
        let status = command
            .arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg(&self.bin)
            .args(self.args(true))
            .status()
            .ok()?;
        if !status.success() || self.server.request_count() != requests + steps {
            return None;
        }
        let text = std::fs::read_to_string(&out).ok()?;
        text.lines()
            .find_map(|l| {
                l.strip_prefix("summary:")
                    .or_else(|| l.strip_prefix("totals:"))
            })
            .and_then(|n| n.split_whitespace().next()?.parse().ok())
    }
}

/// The bare clients of the floor.
#[derive(Clone, Copy)]
enum Client {
    /// This benchmark, run again with [`BARE_CLIENT`].
    Bare,
    /// `curl`.
    Curl,
}

/// The argument that makes this benchmark the bare client: `BARE_CLIENT URL BODY_FILE...`.
const BARE_CLIENT: &str = "--bare-client";

/// The bare client: POSTs each body file to `url` in turn over one connection, on a
/// current-thread runtime as `openmanus` does, and reads each streamed reply to its end.
fn bare_client(args: &[String]) -> std::process::ExitCode {
    let failed = std::process::ExitCode::FAILURE;
    let Some((url, files)) = args.split_first() else {
        return failed;
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return failed;
    };
    // The same crypto provider as openmanus (reqwest is built without one of its own).
    agent_llm::http::install_crypto_provider();
    let client = reqwest::Client::new();
    let all_read = runtime.block_on(async {
        for file in files {
            let Ok(body) = std::fs::read(file) else {
                return false;
            };
            let sent = client
                .post(url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await;
            let Ok(mut response) = sent else { return false };
            if !response.status().is_success() {
                return false;
            }
            loop {
                match response.chunk().await {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(_) => return false,
                }
            }
        }
        true
    });
    if all_read {
        std::process::ExitCode::SUCCESS
    } else {
        failed
    }
}

/// CPU seconds and voluntary context switches.
#[derive(Clone, Copy)]
struct Usage {
    cpu: f64,
    switches: f64,
}

fn usage_of_children() -> Option<Usage> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).ok()?;
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Some(Usage {
        cpu: secs(usage.user_time()) + secs(usage.system_time()),
        switches: usage.voluntary_context_switches() as f64,
    })
}

fn has(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(BARE_CLIENT) {
        return bare_client(&args[2..]);
    }
    measure();
    std::process::ExitCode::SUCCESS
}

fn measure() {
    let Some(bin) = std::env::var_os("OPENMANUS_BIN") else {
        println!(
            "process_cost: set OPENMANUS_BIN to the openmanus binary (cargo xtask bench does)"
        );
        return;
    };
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    else {
        println!("could not start a tokio runtime");
        return;
    };
    let Ok(server) = runtime.block_on(MockOpenAi::start()) else {
        println!("could not start the mock server");
        return;
    };
    let Ok(dir) = tempfile::tempdir() else { return };
    let config = format!(
        "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\nmax_attempts = 1\n",
        server.base_url()
    );
    let ws = dir.path().join("ws");
    if std::fs::write(dir.path().join("config.toml"), config).is_err()
        || std::fs::create_dir_all(&ws).is_err()
        || std::fs::write(ws.join("notes.txt"), "one\ntwo\nthree\n").is_err()
    {
        println!("could not write the benchmark's files");
        return;
    }
    let Some((collector, exported)) = runtime.block_on(otlp_sink()) else {
        println!("could not start the OTLP sink");
        return;
    };
    let setup = Setup {
        server,
        dir,
        bin: PathBuf::from(bin),
        collector,
    };

    // Per mode: (1-step CPU, per-step CPU, per-step voluntary context switches).
    let mut modes = Vec::new();
    let all = [
        Mode {
            store: true,
            export: false,
        },
        Mode {
            store: true,
            export: true,
        },
        // Last: the floor replays this mode's bodies.
        Mode {
            store: false,
            export: false,
        },
    ];
    for mode in all {
        let mut one = Vec::new();
        let mut twenty = Vec::new();
        for _ in 0..RUNS {
            let (Some(a), Some(b)) = (setup.cpu_run(1, mode), setup.cpu_run(STEPS, mode)) else {
                println!("process_cost: a run of the binary failed");
                return;
            };
            one.push(a);
            twenty.push(b);
        }
        let mean_of = |runs: &[Usage], field: fn(&Usage) -> f64| {
            common::trimmed_mean(runs.iter().map(field).collect(), TRIM)
        };
        let steps = (STEPS - 1) as f64;
        let cpu_one = mean_of(&one, |u| u.cpu);
        let cpu_step = (mean_of(&twenty, |u| u.cpu) - cpu_one) / steps;
        let switches_step =
            (mean_of(&twenty, |u| u.switches) - mean_of(&one, |u| u.switches)) / steps;
        modes.push((mode, cpu_one, cpu_step, switches_step));
    }
    let exported = exported.load(std::sync::atomic::Ordering::Relaxed);

    // The floor: bare clients sending the bodies of the last 20-step run (of --no-store, the
    // last mode).
    let bodies = setup.last_bodies(STEPS);
    let floor = |client: Client| {
        let bodies = bodies.as_ref()?;
        let mut one = Vec::new();
        let mut all = Vec::new();
        for _ in 0..RUNS {
            one.push(setup.client_run(client, bodies, 1)?);
            all.push(setup.client_run(client, bodies, STEPS)?);
        }
        Some(
            (common::trimmed_mean(all, TRIM) - common::trimmed_mean(one, TRIM))
                / (STEPS - 1) as f64,
        )
    };
    let bare = floor(Client::Bare);
    let curl = if has("curl") {
        floor(Client::Curl)
    } else {
        None
    };

    let counted = |export| {
        if has("valgrind") {
            setup
                .instructions_of(1, export)
                .zip(setup.instructions_of(STEPS, export))
        } else {
            None
        }
    };
    let (counted, counted_export) = (counted(false), counted(true));
    if let Err(violations) = setup.server.verify() {
        println!("process_cost: the binary's requests broke the OpenAI rules: {violations}");
    }

    println!("process_cost: the release openmanus binary (SWE agent) against the mock model");
    println!("| figure | measured | target |");
    println!("|---|---|---|");
    for (counted, label) in [(counted, ""), (counted_export, ", OTLP export on")] {
        match counted {
            Some((first, long)) => {
                let per = |first: u64, long: u64| {
                    long.saturating_sub(first) as f64 / (STEPS as f64 - 1.0) / 1e6
                };
                println!(
                    "| instructions: start → first request + 1 step → exit{label} | {:.2} M | ≤ 12 M |",
                    first.median() as f64 / 1e6
                );
                println!(
                    "| instructions per step ({STEPS}-step run, {}){label} | {:.3} M | ≤ 1.0 M |",
                    if pace().is_some() {
                        "one commit a step"
                    } else {
                        "model unpaced"
                    },
                    per(first.median(), long.median())
                );
                println!(
                    "| instructions: the whole {STEPS}-step run{label} | {:.2} M | — |",
                    long.median() as f64 / 1e6
                );
                println!(
                    "| instructions per step ({STEPS}-step run, lowest of {COUNTED_RUNS} runs each){label} | {:.3} M | — |",
                    per(first.lowest(), long.lowest())
                );
                let runs = |counts: &Counts| {
                    let each: Vec<String> = counts
                        .runs
                        .iter()
                        .map(|n| format!("{:.2}", *n as f64 / 1e6))
                        .collect();
                    each.join(" ")
                };
                println!(
                    "| instructions of each run, 1-step / {STEPS}-step{label} | {} / {} M | — |",
                    runs(&first),
                    runs(&long)
                );
            }
            None => {
                println!("| instructions{label} | (valgrind not found or the run failed) | — |")
            }
        }
    }
    // What export costs a step, against the same run with export off (issue 34: ≤ 5 %).
    let per_step =
        |(first, long): (Counts, Counts)| long.median().saturating_sub(first.median()) as f64;
    if let (Some(off), Some(on)) = (counted, counted_export) {
        println!(
            "| instructions per step, OTLP export on vs off | {:+.1} % | ≤ +5 % |",
            (per_step(on) / per_step(off) - 1.0) * 100.0
        );
    }
    println!(
        "| OTLP bytes the sink received over the export runs ({} runs) | {exported} | — |",
        RUNS * 2
    );
    for (mode, cpu_one, cpu_step, switches_step) in modes {
        let mode = mode.name();
        println!(
            "| CPU: 1-step run, whole process, {mode} (mean of the middle {} of {RUNS}) | {:.1} ms | — |",
            RUNS - 2 * TRIM,
            cpu_one * 1e3
        );
        println!(
            "| CPU per step, {mode} ({STEPS}-step run − 1-step run) / {} | {:.3} ms | ≤ 0.3 ms |",
            STEPS - 1,
            cpu_step * 1e3
        );
        println!("| voluntary context switches per step, {mode} | {switches_step:.1} | — |");
    }
    for (name, floor) in [("a bare reqwest client", bare), ("curl", curl)] {
        match floor {
            Some(per) => println!(
                "| floor: CPU per request of {name}, the same requests and replies over one connection | {:.3} ms | — |",
                per * 1e3
            ),
            None => println!("| floor: {name} | (not found, or its run failed) | — |"),
        }
    }
}
