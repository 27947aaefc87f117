//! The run journal over a real SWE agent, the real HTTP client and the strict mock server.

use std::path::Path;
use std::time::Duration;

use agent_core::{Agent, ToolCall};
use agent_llm::LlmSettings;
use agent_session::journal::{self, Journal, JournalLine};
use agent_testkit::{Completion, MockOpenAi};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(60);

/// A 40-line Python file, the kind of file a SWE run looks at.
fn forty_lines() -> String {
    (1..=40)
        .map(|i| format!("def function_{i:02}(value):\n"))
        .collect::<String>()
        .lines()
        .enumerate()
        .map(|(i, line)| {
            if i % 2 == 0 {
                format!("{line}\n")
            } else {
                format!("    return value * {i} + {}\n", i * 7)
            }
        })
        .collect()
}

/// Runs SWE for `views` steps that each view `module.py`, then a `terminate` step, with every
/// event journaled the way the CLI does. Returns the journal path.
async fn swe_run(server: &MockOpenAi, workspace: &Path, views: u32) -> std::path::PathBuf {
    std::fs::write(workspace.join("module.py"), forty_lines()).unwrap();
    let path = workspace.join("module.py").display().to_string();
    for step in 1..=views {
        let arguments = serde_json::json!({"command": "view", "path": path}).to_string();
        server.push(
            Completion::tool_calls(
                Some(format!("Step {step}: reading the module again.")),
                [ToolCall::new(
                    format!("call_{step}"),
                    "str_replace_editor",
                    arguments,
                )],
            )
            .with_usage(1000 + u64::from(step) * 100, 20),
        );
    }
    server.push(Completion::tool_calls(
        Some("Done.".into()),
        [ToolCall::new(
            "call_end",
            "terminate",
            r#"{"status":"success"}"#,
        )],
    ));

    let journal = Journal::create(workspace, agents::SWE).unwrap();
    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-journal");
    settings.max_attempts = 1;
    let model = journal.model(settings, None).unwrap();
    let mut options = agents::AgentOptions::new(workspace);
    options.max_steps = Some(views + 1);
    let mut agent = agents::swe(model, &options);
    let mut events = agent.base().events().subscribe();
    let handle = journal.handle();
    let forward = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            handle.event(&event);
        }
    });
    journal
        .handle()
        .write("task", serde_json::json!({"task": "Read module.py."}));
    let outcome = tokio::time::timeout(TIMEOUT, agent.run(Some("Read module.py.".into())))
        .await
        .unwrap()
        .unwrap();
    assert!(outcome.is_finished(), "{outcome:?}");
    drop(agent);
    tokio::time::timeout(TIMEOUT, forward)
        .await
        .unwrap()
        .unwrap();
    let path = journal.path().to_path_buf();
    journal.close().await.unwrap();
    path
}

/// The bodies the mock received, in order.
fn received(server: &MockOpenAi) -> Vec<Value> {
    server.requests().into_iter().map(|r| r.body).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_twenty_step_swe_run_writes_a_linear_journal_that_rebuilds_every_body() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = swe_run(&server, &dir.path().canonicalize().unwrap(), 20).await;
    server.verify().unwrap();
    let sent = received(&server);
    assert_eq!(sent.len(), 21);

    let size = std::fs::metadata(&path).unwrap().len();
    let sent_bytes: usize = sent.iter().map(|b| b.to_string().len()).sum();
    println!("journal: {size} bytes; request bodies sent: {sent_bytes} bytes");
    std::fs::copy(&path, "/tmp/journal-probe.jsonl").unwrap();
    assert!(size < 60 * 1024, "the journal holds {size} bytes");

    let rebuilt = journal::request_bodies(&path).unwrap();
    assert_eq!(rebuilt.len(), sent.len());
    for (i, (rebuilt, sent)) in rebuilt.iter().zip(&sent).enumerate() {
        assert_eq!(rebuilt, sent, "request {i}");
    }

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
    // Events stay one object per line.
    assert!(lines.iter().any(|line| matches!(
        line,
        JournalLine::Entry(entry) if entry["kind"] == "event"
            && entry["event"]["type"] == "tool_call_finished"
    )));
}
