//! Recorded runs as regression tests: a run of the agent is recorded once (here against the
//! strict mock server; in real life against a real model), checked in under
//! `tests/recordings/`, and replayed by every test run — the model's replies from the
//! recording, the agent's own tool for real. A change to the tool (or the prompts' effect on
//! what the model is given) that alters an observation fails the test and names the step.
//!
//! To record the fixture again: `cargo test -p word-stats-agent --test replay -- --ignored`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::ToolCall;
use agent_llm::{ChatModel, LlmClient, LlmSettings};
use agent_session::JournaledModel;
use agent_session::journal::Journal;
use agent_session::replay::{Difference, Recording, ReplayOptions, check_agent, record_agent};
use agent_testkit::{Completion, MockOpenAi};
use word_stats_agent::word_stats_agent;

const TASK: &str = "Count: the cat and the hat";

/// The checked-in recording.
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/recordings/count.jsonl")
}

/// Records one run of the agent against the mock into a journal under `dir`; returns the
/// journal's path. The mock is gone when this returns.
async fn record(dir: &Path) -> PathBuf {
    let server = MockOpenAi::start().await.unwrap();
    server
        .push(Completion::tool_calls(
            None,
            [ToolCall::new(
                "c1",
                "word_stats",
                r#"{"text":"the cat and the hat","top":1}"#,
            )],
        ))
        .push(Completion::tool_calls(
            Some("There are 5 words; \"the\" is the most frequent.".into()),
            [ToolCall::new("c2", "terminate", r#"{"status":"success"}"#)],
        ));
    let journal = Journal::create(dir, "word-stats").unwrap();
    let client = Arc::new(LlmClient::new(LlmSettings::new("gpt-4o", server.base_url())).unwrap());
    let model: Arc<dyn ChatModel> = Arc::new(JournaledModel::new(client, journal.handle()));
    let mut agent = word_stats_agent(model);
    let outcome = record_agent(&mut agent, TASK, &journal.handle())
        .await
        .unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    server.verify().unwrap();
    let path = journal.path().to_path_buf();
    journal.close().await.unwrap();
    path
}

/// Replays `recording` into a new agent built on its replies.
async fn check(recording: &Recording) -> agent_session::replay::ReplayReport {
    let dir = tempfile::tempdir().unwrap();
    let mut agent = word_stats_agent(recording.model(None));
    check_agent(&mut agent, recording, dir.path(), &ReplayOptions::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_run_recorded_against_the_mock_replays_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let journal = record(dir.path()).await;
    let recording = Recording::from_journal(&journal).unwrap();
    assert_eq!(recording.replies(), 2);
    let report = check(&recording).await;
    report.assert_matched();
    assert_eq!(report.steps_matched, 2);
    assert_eq!(report.verdict(), "replay matched 2 steps");
}

#[tokio::test]
async fn the_checked_in_recording_still_replays() {
    let recording = Recording::from_journal(&fixture()).unwrap();
    check(&recording).await.assert_matched();
}

#[tokio::test]
async fn an_observation_that_changed_is_named_with_its_step() {
    // What the tool said when recorded, made to say something else: as if the tool now
    // counted differently.
    let text = std::fs::read_to_string(fixture()).unwrap();
    assert!(text.contains("words: 5"), "{text}");
    let recording =
        Recording::from_reader(text.replace("words: 5", "words: 6").as_bytes()).unwrap();
    let report = check(&recording).await;
    let divergence = report.divergence.clone().expect("the replay diverged");
    assert_eq!(divergence.step, 1);
    let Difference::Observation { name, diff, .. } = &divergence.difference else {
        panic!("{divergence:?}")
    };
    assert_eq!(name, "word_stats");
    assert!(
        diff.contains("- words: 6") && diff.contains("+ words: 5"),
        "{diff}"
    );
    let failure = std::panic::catch_unwind(|| report.assert_matched()).unwrap_err();
    let message = failure.downcast_ref::<String>().unwrap();
    assert!(
        message.starts_with("replay diverged at step 1, call 1 (word_stats)"),
        "{message}"
    );
}

/// Writes the fixture again (run with `--ignored` after a deliberate change).
#[tokio::test]
#[ignore = "writes tests/recordings/count.jsonl"]
async fn record_the_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let journal = record(dir.path()).await;
    std::fs::copy(journal, fixture()).unwrap();
}
