//! The run journal over a real SWE agent, the real HTTP client and the strict mock server: it
//! stays small and linear, and rebuilds every request body the server received.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_core::{Agent, ToolCall};
use agent_llm::LlmSettings;
use agent_session::journal::{self, Journal, JournalLine};
use agent_testkit::{Completion, MockOpenAi};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(60);

/// A 40-line Python file, the kind of file a SWE run looks at; `seed` makes it differ.
fn forty_lines(seed: u32) -> String {
    (1..=20)
        .map(|i| {
            format!(
                "def function_{i:02}(value):\n    return value * {} + {}\n",
                i + seed,
                i * 7
            )
        })
        .collect()
}

/// How the scripted SWE run goes.
struct Run {
    /// Steps that each view a 40-line file (a `terminate` step follows).
    views: u32,
    /// Each step views another file (else the same file every step).
    distinct_files: bool,
    /// The agent's memory cap.
    max_messages: Option<usize>,
    /// The model's context window, with compaction at half of it (else no compaction).
    window: Option<u64>,
}

const TASK: &str = "Read the modules.";

/// Runs SWE as `run` says, every event journaled the way the CLI does. Returns the journal's
/// path and the bodies the server received.
async fn swe_run(run: &Run) -> (tempfile::TempDir, PathBuf, Vec<Value>) {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    for step in 1..=run.views {
        let file = if run.distinct_files {
            format!("module_{step:02}.py")
        } else {
            "module.py".to_owned()
        };
        std::fs::write(workspace.join(&file), forty_lines(step)).unwrap();
        let path = workspace.join(&file).display().to_string();
        let arguments = json!({"command": "view", "path": path}).to_string();
        server.push_for(
            TASK,
            Completion::tool_calls(
                Some(format!("Step {step}: reading {file}.")),
                [ToolCall::new(
                    format!("call_{step}"),
                    "str_replace_editor",
                    arguments,
                )],
            )
            .with_usage(1000 + u64::from(step) * 100, 20),
        );
    }
    server.push_for(
        TASK,
        Completion::tool_calls(
            Some("Done.".into()),
            [ToolCall::new(
                "call_end",
                "terminate",
                r#"{"status":"success"}"#,
            )],
        ),
    );

    // Summary requests have a first user message of their own: they take the default queue.
    server.set_fallback(Some(
        Completion::text("You read some modules; the rest are left.").into(),
    ));
    let journal = Journal::create(&workspace, agents::SWE).unwrap();
    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-journal");
    settings.max_attempts = 1;
    settings.context_window = run.window;
    let model = journal.model(settings, None).unwrap();
    let mut options = agents::AgentOptions::new(&workspace);
    options.max_steps = Some(run.views + 1);
    let mut agent = agents::swe(model, &options);
    if let Some(max_messages) = run.max_messages {
        agent = agent.with_max_messages(max_messages);
    }
    agent = agent.with_compaction(if run.window.is_some() {
        agent_toolcall::Compaction {
            threshold: 0.5,
            ..agent_toolcall::Compaction::default()
        }
    } else {
        agent_toolcall::Compaction::off()
    });
    let mut events = agent.base().events().subscribe();
    let handle = journal.handle();
    let forward = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            handle.event(&event);
        }
    });
    let task = TASK;
    journal.handle().write("task", json!({ "task": task }));
    let outcome = tokio::time::timeout(TIMEOUT, agent.run(Some(task.into())))
        .await
        .unwrap()
        .unwrap();
    assert!(outcome.is_finished(), "{outcome:?}");
    drop(agent);
    tokio::time::timeout(TIMEOUT, forward)
        .await
        .unwrap()
        .unwrap();
    journal
        .handle()
        .write("result", json!({"status": outcome.status.to_string()}));
    let path = journal.path().to_path_buf();
    journal.close().await.unwrap();
    server.verify().unwrap();
    let received = server.requests().into_iter().map(|r| r.body).collect();
    (dir, path, received)
}

/// Asserts that the journal rebuilds `sent`, request by request.
fn assert_rebuilds(path: &Path, sent: &[Value]) {
    let rebuilt = journal::request_bodies(path).unwrap();
    assert_eq!(rebuilt.len(), sent.len());
    for (i, (rebuilt, sent)) in rebuilt.iter().zip(sent).enumerate() {
        assert_eq!(rebuilt, sent, "request {i}");
    }
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_twenty_step_swe_run_writes_a_small_journal_that_rebuilds_every_body() {
    let run = Run {
        views: 20,
        distinct_files: false,
        max_messages: None,
        window: None,
    };
    let (_dir, path, sent) = swe_run(&run).await;
    assert_eq!(sent.len(), 21);
    let bytes = size(&path);
    let sent_bytes: usize = sent.iter().map(|b| b.to_string().len()).sum();
    println!("journal: {bytes} bytes; request bodies sent: {sent_bytes} bytes");
    assert!(bytes < 60 * 1024, "the journal holds {bytes} bytes");
    assert_rebuilds(&path, &sent);

    // Every reply is paired with its request and carries the usage the server reported.
    let lines = journal::read(&path).unwrap();
    let replies: Vec<&Value> = lines
        .iter()
        .filter_map(|line| match line {
            JournalLine::Entry(entry) if entry["kind"] == "model_response" => Some(entry),
            _ => None,
        })
        .collect();
    assert_eq!(replies.len(), 21);
    assert_eq!(replies[0]["seq"], 0);
    assert_eq!(replies[0]["response"]["usage"]["prompt_tokens"], 1100);
    assert_eq!(replies[20]["seq"], 20);
    // The system prompt and the tool schemas are written once.
    let text = std::fs::read_to_string(&path).unwrap();
    let system = sent[0]["messages"][0]["content"].as_str().unwrap();
    assert_eq!(text.matches(&system[..60]).count(), 1);
    assert_eq!(text.matches("\"parameters\"").count(), 3);
    // Events stay one object per line, and read back whole.
    let observation = sent[1]["messages"][3]["content"].as_str().unwrap();
    assert!(
        observation.contains("def function_20(value):"),
        "{observation}"
    );
    assert!(lines.iter().any(|line| matches!(
        line,
        JournalLine::Entry(entry) if entry["kind"] == "event"
            && entry["event"]["type"] == "tool_call_finished"
            && entry["event"]["observation"] == observation
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_grows_linearly_when_every_step_sees_a_new_file() {
    let mut sizes = Vec::new();
    for views in [10, 20] {
        let run = Run {
            views,
            distinct_files: true,
            max_messages: None,
            window: None,
        };
        let (_dir, path, sent) = swe_run(&run).await;
        assert_rebuilds(&path, &sent);
        sizes.push(size(&path));
    }
    let (ten, twenty) = (sizes[0], sizes[1]);
    println!("journal: {ten} bytes after 10 steps, {twenty} bytes after 20 steps");
    // Quadratic growth would make the last ten steps cost three times the first ten (and the
    // fixed part: the system prompt, the tools).
    assert!(twenty - ten < ten * 3 / 2, "{ten} then {twenty}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reader_rebuilds_requests_after_memory_truncation_dropped_turns() {
    let run = Run {
        views: 8,
        distinct_files: true,
        max_messages: Some(5),
        window: None,
    };
    let (_dir, path, sent) = swe_run(&run).await;
    assert_eq!(sent.len(), 9);
    // Truncation did drop turns: a request's messages stop being an extension of the previous
    // request's.
    let messages = |body: &Value| body["messages"].as_array().unwrap().clone();
    let dropped = sent.windows(2).any(|pair| {
        let (before, after) = (messages(&pair[0]), messages(&pair[1]));
        after.len() < before.len() || after[..before.len()] != before[..]
    });
    assert!(dropped, "memory was never truncated");
    assert!(messages(&sent[8]).len() <= 6, "{:?}", messages(&sent[8]));
    assert_rebuilds(&path, &sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compactions_are_journaled_and_every_body_is_still_rebuilt() {
    let run = Run {
        views: 40,
        distinct_files: true,
        max_messages: None,
        window: Some(6_000),
    };
    let (_dir, path, sent) = swe_run(&run).await;
    let text = std::fs::read_to_string(&path).unwrap();
    let compacted = text
        .lines()
        .filter(|line| line.contains(r#""type":"compacted""#))
        .count();
    assert!(compacted >= 2, "{compacted} compactions journaled");
    let summaries = sent
        .iter()
        .filter(|b| b["messages"][1]["content"] != TASK)
        .count();
    assert_eq!(summaries, compacted);
    assert_rebuilds(&path, &sent);
    let last = sent.last().unwrap();
    assert_eq!(last["messages"][1]["content"], TASK);
    for body in &sent {
        assert!(body.to_string().len() / 4 < 6_000);
    }
}

/// A fast step puts several rows in one millisecond: the export still writes a reply before
/// the events that came of it (up to the run's end), and a request after the events before it.
#[tokio::test]
async fn a_reply_in_the_same_millisecond_as_the_events_after_it_is_exported_before_them() {
    use agent_store::{
        Batch, EventKind, ExchangePart, JsonText, NewEvent, NewExchange, NewSession, Store,
    };
    let store = Store::open_memory().await.unwrap();
    let session = store
        .create_session(NewSession::new("swe", "/w"))
        .await
        .unwrap();
    let (run, _) = store.begin_run(&session.id, "t").await.unwrap();
    // Times after the run's start (its `task` line).
    let base = agent_store::now_ms() + 1_000;
    let event = |at, kind: &str| NewEvent {
        run_id: Some(run),
        at: base + at,
        kind: EventKind::Agent,
        data: JsonText::from(json!({"type": kind})),
    };
    let exchange = |at, part, data: Value| NewExchange {
        run_id: Some(run),
        stream: 0,
        seq: 0,
        part,
        at: base + at,
        data: data.into(),
    };
    let batch = Batch {
        memory: Vec::new(),
        events: vec![
            event(4, "step_started"),
            event(5, "thought"),
            event(5, "finished"),
        ],
        exchanges: vec![
            exchange(
                4,
                ExchangePart::Request,
                json!({"messages": [], "new_messages": [], "params": {"model": "m"}}),
            ),
            exchange(
                5,
                ExchangePart::Reply,
                json!({"response": {"content": "done"}}),
            ),
        ],
    };
    store
        .session_writer(&session.id)
        .write(batch)
        .await
        .unwrap();
    let mut export = Vec::new();
    journal::export_session(&store, &session.id, &mut export)
        .await
        .unwrap();
    let order: Vec<String> = journal::JournalReader::new(export.as_slice())
        .map(|line| match line.unwrap() {
            JournalLine::Entry(entry) if entry["kind"] == "event" => {
                entry["event"]["type"].as_str().unwrap_or("?").to_owned()
            }
            JournalLine::Entry(entry) => entry["kind"].as_str().unwrap_or("?").to_owned(),
            JournalLine::Request { .. } => "model_request".to_owned(),
        })
        .collect();
    assert_eq!(
        order,
        [
            "session",
            "task",
            "step_started",
            "model_request",
            "model_response",
            "thought",
            "finished",
            "memory"
        ],
        "{}",
        String::from_utf8_lossy(&export)
    );
}
