//! `openmanus serve` as its users pay for it (`cargo xtask bench`): the release binary started
//! as a server against the test kit's mock model on 127.0.0.1, a client reading its SSE stream.
//!
//! * **Event latency**: for every step of a long SWE run, the time from the mock model handing
//!   its reply to the server until the client has the step's `thought` event. That covers the
//!   agent reading the reply, emitting the event, the store committing it, the broadcast and the
//!   SSE write: an upper bound of "agent emits → client receives". Median and p99.
//! * **Memory per idle session**: the server's resident set (`VmRSS`) before and after 50
//!   sessions are created and each has run a one-step task, divided by 50.
//!
//! Figures only — nothing here passes or fails. `cargo xtask bench` builds the release binary
//! and passes its path in `OPENMANUS_BIN`.

#![allow(clippy::print_stdout, missing_docs)]

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_core::ToolCall;
use agent_testkit::{Completion, MockOpenAi};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Steps of the latency run (each gives one sample).
const STEPS: usize = 200;
/// Idle sessions for the memory figure.
const SESSIONS: usize = 50;

type Error = Box<dyn std::error::Error>;

struct Server {
    child: Child,
    url: String,
    http: reqwest::Client,
}

impl Server {
    async fn start(bin: &Path, dir: &Path) -> Result<Self, Error> {
        let mut child = Command::new(bin)
            .current_dir(dir)
            .env_remove("OPENMANUS_CONFIG")
            .env("HOME", dir)
            .env("NO_COLOR", "1")
            .args([
                "serve",
                "--bind",
                "127.0.0.1:0",
                "--max-concurrent-runs",
                "8",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let url = tokio::time::timeout(Duration::from_secs(60), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rest) = line.strip_prefix("openmanus serve: ") {
                    return Some(rest.split('/').take(3).collect::<Vec<_>>().join("/"));
                }
            }
            None
        })
        .await?
        .ok_or("the server ended before it listened")?;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self {
            child,
            url,
            http: agent_llm::http::shared_client()?,
        })
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, Error> {
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await?;
        let status = response.status();
        let body: Value = response.json().await?;
        if !status.is_success() {
            return Err(format!("{path}: {status} {body}").into());
        }
        Ok(body)
    }

    async fn create(&self) -> Result<(String, String), Error> {
        let body = self.post("/api/sessions", json!({"agent": "swe"})).await?;
        let id = body["id"].as_str().ok_or("no id")?.to_owned();
        let workspace = body["workspace"].as_str().unwrap_or_default().to_owned();
        Ok((id, workspace))
    }

    fn rss_kib(&self) -> Option<u64> {
        let pid = self.child.id()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    }
}

/// Milliseconds since the Unix epoch, as the store stamps events (`at`).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Reads the SSE stream of a session, handing each `agent` event's type, the time it arrived
/// and how many milliseconds after its store stamp (`at`) it arrived to `seen`, until a
/// `run_finished` event.
async fn follow(
    server: &Server,
    id: &str,
    mut seen: impl FnMut(&str, Instant, i64),
) -> Result<(), Error> {
    use futures::StreamExt;
    let response = server
        .http
        .get(format!("{}/api/sessions/{id}/events", server.url))
        .header("accept", "text/event-stream")
        .send()
        .await?;
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    while let Some(chunk) = stream.next().await {
        let at = Instant::now();
        let wall = now_ms();
        buffer.push_str(&String::from_utf8_lossy(&chunk?));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut kind = "";
            let mut data = "";
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    kind = v.trim();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data = v.trim();
                }
            }
            match kind {
                "run_finished" => return Ok(()),
                "agent" => {
                    let event: Value = serde_json::from_str(data)?;
                    let stamped = event["at"].as_i64().unwrap_or(wall);
                    seen(
                        event["data"]["type"].as_str().unwrap_or_default(),
                        at,
                        wall - stamped,
                    );
                }
                _ => {}
            }
        }
    }
    Err("the event stream ended before the run finished".into())
}

async fn latency(server: &Server, mock: &MockOpenAi) -> Result<(Vec<Duration>, Vec<i64>), Error> {
    let (id, workspace) = server.create().await?;
    let notes = Path::new(&workspace).join("notes.txt");
    std::fs::write(&notes, "one\ntwo\nthree\n")?;
    let task = "latency benchmark";
    let view = json!({"command": "view", "path": notes}).to_string();
    for step in 1..STEPS {
        mock.push_for(
            task,
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
    mock.push_for(
        task,
        Completion::tool_calls(
            Some("Done.".into()),
            [ToolCall::new(
                "done",
                "terminate",
                r#"{"status":"success"}"#,
            )],
        ),
    );
    let before = mock.request_count();
    let mut thoughts = Vec::new();
    let mut stamped = Vec::new();
    let follower = follow(server, &id, |kind, at, since_stamp| {
        stamped.push(since_stamp);
        if kind == "thought" {
            thoughts.push(at);
        }
    });
    let sender = async {
        server
            .post(&format!("/api/sessions/{id}/tasks"), json!({"task": task}))
            .await
    };
    let (followed, sent) = tokio::join!(follower, sender);
    sent?;
    followed?;
    let requests = mock.requests();
    let replies = requests.get(before..).unwrap_or_default();
    if replies.len() != STEPS || thoughts.len() != STEPS {
        return Err(format!(
            "expected {STEPS} requests and thoughts, got {} and {}",
            replies.len(),
            thoughts.len()
        )
        .into());
    }
    let samples = replies
        .iter()
        .zip(&thoughts)
        .map(|(request, at)| at.saturating_duration_since(request.received_at))
        .collect();
    Ok((samples, stamped))
}

async fn memory(server: &Server, mock: &MockOpenAi) -> Result<(u64, u64), Error> {
    let before = server.rss_kib().ok_or("no VmRSS")?;
    for n in 0..SESSIONS {
        let (id, _) = server.create().await?;
        let task = format!("idle session {n}");
        mock.push_for(
            task.clone(),
            Completion::tool_calls(
                Some("Nothing to do.".into()),
                [ToolCall::new(
                    "done",
                    "terminate",
                    r#"{"status":"success"}"#,
                )],
            ),
        );
        let follower = follow(server, &id, |_, _, _| {});
        let path = format!("/api/sessions/{id}/tasks");
        let sender = server.post(&path, json!({"task": task}));
        let (followed, sent) = tokio::join!(follower, sender);
        sent?;
        followed?;
    }
    // Let the writers flush and the allocator settle.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = server.rss_kib().ok_or("no VmRSS")?;
    Ok((before, after))
}

async fn bench(bin: &Path) -> Result<(), Error> {
    let mock = MockOpenAi::start().await?;
    let dir = tempfile::tempdir()?;
    std::fs::create_dir_all(dir.path().join("config"))?;
    std::fs::write(
        dir.path().join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-bench\"\nmax_attempts = 1\n\n[agent]\nmax_steps = {}\n",
            mock.base_url(),
            STEPS + 10
        ),
    )?;
    let mut server = Server::start(bin, dir.path()).await?;
    let (mut samples, mut stamped) = latency(&server, &mock).await?;
    samples.sort();
    stamped.sort_unstable();
    let (before, after) = memory(&server, &mock).await?;
    if let Err(violations) = mock.verify() {
        println!("server: the binary's requests broke the OpenAI rules: {violations}");
    }
    let _ = server.child.kill().await;

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("server: the release openmanus binary as `openmanus serve`, SWE sessions, mock model");
    println!("| figure | measured |");
    println!("|---|---|");
    println!(
        "| event latency, model reply → SSE client has the step's event, median of {STEPS} | {:.2} ms |",
        ms(common::percentile(&samples, 0.5))
    );
    println!(
        "| event latency, p99 | {:.2} ms |",
        ms(common::percentile(&samples, 0.99))
    );
    let stamp = |p: f64| {
        let index = ((stamped.len() as f64 - 1.0) * p).round() as usize;
        stamped.get(index).copied().unwrap_or_default()
    };
    println!(
        "| event stamped by the store → SSE client, every event ({} events; 1 ms clock), median / p99 | {} ms / {} ms |",
        stamped.len(),
        stamp(0.5),
        stamp(0.99)
    );
    println!(
        "| resident memory after one {STEPS}-step session | {:.1} MiB |",
        before as f64 / 1024.0
    );
    println!(
        "| memory per idle session ({SESSIONS} sessions, one task each) | {:.0} KiB |",
        after.saturating_sub(before) as f64 / SESSIONS as f64
    );
    Ok(())
}

fn main() {
    common::run("server", |bin| async move { bench(&bin).await });
}
