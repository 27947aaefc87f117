//! Replay without the CLI: a Manus run recorded against the strict mock server (journal and
//! store), replayed with the server gone — the same observations; an input file changed, or
//! the recording's observation edited, and the replay names the step that diverged.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use agent_config::Config;
use agent_core::ToolCall;
use agent_llm::LlmSettings;
use agent_session::replay::{self, Difference, Recording, RecordingError, ReplayOptions};
use agent_session::store::Store;
use agent_session::{Session, Target};
use agent_testkit::{Completion, MockOpenAi};
use agents::{AgentFactory, AgentKind};
use serde_json::{Value, json};

fn call(id: &str, name: &str, args: &Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

fn factory(base_url: &str, workspace: &Path) -> AgentFactory {
    let mut llm = LlmSettings::new("gpt-4o", base_url).with_api_key("sk-replay");
    llm.max_attempts = 1;
    AgentFactory::new(Config::new(llm)).with_workspace(workspace)
}

const INPUT: &str = "alpha\nbeta\ngamma\n";

/// What the recorded run's first step runs: it prints the input and its line count.
const READ: &str = "text = open('input.txt').read()\nprint(text + str(len(text.splitlines())))";

/// Records a three-step Manus run in `workspace` (which holds `input.txt`): `python_execute` reads the
/// input, `str_replace_editor` writes `out.txt` by its absolute path, `terminate` ends it.
/// Returns the journal (none when a store is given: the store is the record), the session id
/// when a store is given, and the request bodies the model received.
async fn record(
    workspace: &Path,
    store: Option<&Store>,
) -> (Option<PathBuf>, Option<String>, Vec<Value>) {
    std::fs::create_dir_all(workspace).unwrap();
    std::fs::write(workspace.join("input.txt"), INPUT).unwrap();
    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key("sk-replay");
    let out = workspace.join("out.txt");
    server
        .push(
            Completion::tool_calls(
                Some("Reading the input.".into()),
                [call("c1", "python_execute", &json!({"code": READ}))],
            )
            .with_usage(100, 10),
        )
        .push(Completion::tool_calls(
            None,
            [call(
                "c2",
                "str_replace_editor",
                &json!({"command": "create", "path": out, "file_text": "3 lines\n"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("out.txt says 3 lines.".into()),
            [call("c3", "terminate", &json!({"status": "success"}))],
        ));
    let factory = factory(&server.base_url(), workspace);
    let target = Target::Agent(AgentKind::Manus);
    let mut session = match store {
        Some(store) => Session::start_recorded(&factory, target, store, json!({}))
            .await
            .unwrap(),
        None => Session::start(&factory, target).await.unwrap(),
    };
    let report = session.run("Count the lines of input.txt.").await.unwrap();
    assert_eq!(report.answer.as_deref(), Some("out.txt says 3 lines."));
    let id = session.session_id().map(str::to_owned);
    let journal = session.close().await.unwrap();
    server.verify().unwrap();
    let bodies = server
        .requests()
        .iter()
        .map(|r| serde_json::from_str(&r.raw_body).unwrap())
        .collect();
    // The model is gone: a replay that asked it anything would fail.
    drop(server);
    (journal, id, bodies)
}

/// A fresh workspace holding `input`.
fn fresh(dir: &Path, name: &str, input: &str) -> PathBuf {
    let workspace = dir.join(name);
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("input.txt"), input).unwrap();
    workspace.canonicalize().unwrap()
}

#[tokio::test]
async fn a_recorded_manus_run_replays_with_identical_observations_and_a_changed_input_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let journal = record(&dir.path().join("recorded"), None).await.0.unwrap();
    let recording = Recording::from_journal(&journal).unwrap();
    // Gone, so that a replay writing into the recorded workspace would show.
    std::fs::remove_file(dir.path().join("recorded/out.txt")).unwrap();
    assert_eq!(recording.target(), Some(Target::Agent(AgentKind::Manus)));
    assert_eq!(recording.replies(), 3);
    assert_eq!(recording.runs().len(), 1);
    let observation = recording.runs()[0].steps[0].calls[0].observation.clone();
    assert!(
        observation
            .as_deref()
            .unwrap()
            .contains("alpha\nbeta\ngamma"),
        "{observation:?}"
    );

    // The same input in another workspace: every step matches, the recorded absolute path
    // was moved to the new workspace, and the mock's address was never needed.
    let same = fresh(dir.path(), "same", INPUT);
    let dead = "http://127.0.0.1:9";
    let report = replay::replay(&factory(dead, &same), &recording, &ReplayOptions::new())
        .await
        .unwrap();
    assert!(report.matched(), "{}", report.verdict());
    assert_eq!(report.steps_matched, 3);
    assert_eq!(report.replies_used, Some(3));
    assert!(report.complete);
    assert_eq!(report.verdict(), "replay matched 3 steps");
    assert_eq!(
        std::fs::read_to_string(same.join("out.txt")).unwrap(),
        "3 lines\n"
    );
    assert!(!dir.path().join("recorded/out.txt").exists());
    let replay_journal = report.journal.clone().unwrap();
    assert!(replay_journal.starts_with(&same), "{replay_journal:?}");
    // The replay's journal is itself a recording that replays.
    let again = Recording::from_journal(&replay_journal).unwrap();
    assert_eq!(again.replies(), 3);
    assert_eq!(again.workspace(), Some(same.as_path()));

    // An input that changed: step 1's observation differs and the replay says so.
    let changed = fresh(dir.path(), "changed", "alpha\nBETA\ngamma\n");
    let report = replay::replay(&factory(dead, &changed), &recording, &ReplayOptions::new())
        .await
        .unwrap();
    let divergence = report.divergence.clone().expect("the replay diverged");
    assert_eq!((divergence.run, divergence.step), (1, 1));
    assert_eq!(report.steps_matched, 0);
    let Difference::Observation {
        call,
        name,
        expected,
        got,
        diff,
    } = &divergence.difference
    else {
        panic!("{divergence:?}")
    };
    assert_eq!((*call, name.as_str()), (1, "python_execute"));
    assert!(expected.as_deref().unwrap().contains("beta"));
    assert!(got.as_deref().unwrap().contains("BETA"));
    assert!(diff.contains("- beta") && diff.contains("+ BETA"), "{diff}");
    let verdict = report.verdict();
    assert!(
        verdict.starts_with(
            "replay diverged at step 1, call 1 (python_execute): the observation differs"
        ),
        "{verdict}"
    );
}

#[tokio::test]
async fn an_edited_observation_in_the_recording_names_its_step_and_a_normalizer_forgives_it() {
    let dir = tempfile::tempdir().unwrap();
    let journal = record(&dir.path().join("recorded"), None).await.0.unwrap();
    // The editor's observation of step 2, as the journal holds it, made to say otherwise.
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.contains("File created successfully"), "{text}");
    let edited = dir.path().join("edited.jsonl");
    std::fs::write(
        &edited,
        text.replace("File created successfully", "File made successfully"),
    )
    .unwrap();
    let recording = Recording::from_journal(&edited).unwrap();
    let workspace = fresh(dir.path(), "one", INPUT);
    let report = replay::replay(
        &factory("http://127.0.0.1:9", &workspace),
        &recording,
        &ReplayOptions::new(),
    )
    .await
    .unwrap();
    let divergence = report.divergence.clone().expect("the replay diverged");
    assert_eq!(divergence.step, 2, "{}", report.verdict());
    assert_eq!(report.steps_matched, 1);
    assert!(
        matches!(&divergence.difference, Difference::Observation { name, .. } if name == "str_replace_editor"),
        "{divergence:?}"
    );
    // The workspace paths in the observation were normalised on both sides.
    let Difference::Observation { expected, got, .. } = &divergence.difference else {
        unreachable!()
    };
    assert!(
        expected.as_deref().unwrap().contains("$WORKSPACE/out.txt"),
        "{expected:?}"
    );
    assert!(
        got.as_deref().unwrap().contains("$WORKSPACE/out.txt"),
        "{got:?}"
    );

    // A rule that makes the two texts equal makes the replay match.
    let workspace = fresh(dir.path(), "two", INPUT);
    let options = ReplayOptions::new().replace("File made", "File created");
    let report = replay::replay(
        &factory("http://127.0.0.1:9", &workspace),
        &recording,
        &options,
    )
    .await
    .unwrap();
    assert!(report.matched(), "{}", report.verdict());
}

#[tokio::test]
async fn a_stored_session_is_its_one_record_and_replays_from_its_model_exchanges() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("sessions.db")).await.unwrap();
    let (journal, id, sent) = record(&dir.path().join("recorded"), Some(&store)).await;
    let id = id.unwrap();
    assert_eq!(journal, None, "a recorded session writes no journal");
    assert!(!dir.path().join("recorded/.openmanus/runs").exists());
    // The export rebuilds every request body exactly as the model received it.
    let mut export = Vec::new();
    agent_session::journal::export_session(&store, &id, &mut export)
        .await
        .unwrap();
    let bodies: Vec<Value> = agent_session::journal::JournalReader::new(export.as_slice())
        .filter_map(|line| match line.unwrap() {
            agent_session::journal::JournalLine::Request { body, .. } => Some(body),
            agent_session::journal::JournalLine::Entry(_) => None,
        })
        .collect();
    assert_eq!(bodies, sent);
    let recording = Recording::from_store(&store, &id).await.unwrap();
    assert!(!recording.replies_from_thoughts());
    assert_eq!(recording.replies(), 3);
    assert_eq!(recording.target(), Some(Target::Agent(AgentKind::Manus)));
    let workspace = fresh(dir.path(), "from-store", INPUT);
    let report = replay::replay(
        &factory("http://127.0.0.1:9", &workspace),
        &recording,
        &ReplayOptions::new(),
    )
    .await
    .unwrap();
    assert!(report.matched(), "{}", report.verdict());
    assert_eq!(report.steps_matched, 3);
    assert!(matches!(
        Recording::from_store(&store, "no-such-session").await,
        Err(RecordingError::Store(_))
    ));
    store.close().await;
}

#[tokio::test]
async fn a_recording_cut_short_or_broken_is_reported_not_panicked_on() {
    let dir = tempfile::tempdir().unwrap();
    let journal = record(&dir.path().join("recorded"), None).await.0.unwrap();
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Every prefix of the journal either reads as a recording or is a typed error, and the
    // first prefix that holds a reply replays without a divergence (the run was cut there).
    let mut replayed_a_prefix = false;
    for end in 0..=lines.len() {
        let prefix = lines[..end].join("\n");
        match Recording::from_reader(prefix.as_bytes()) {
            Ok(recording) if !replayed_a_prefix && recording.runs()[0].status.is_none() => {
                replayed_a_prefix = true;
                let workspace = fresh(dir.path(), &format!("cut-{end}"), INPUT);
                let report = replay::replay(
                    &factory("http://127.0.0.1:9", &workspace),
                    &recording,
                    &ReplayOptions::new(),
                )
                .await
                .unwrap();
                assert!(report.matched(), "{}", report.verdict());
                assert!(!report.complete);
                assert!(
                    report.verdict().contains("the recording stops"),
                    "{}",
                    report.verdict()
                );
            }
            Ok(_) => {}
            Err(RecordingError::NoTask | RecordingError::NoReplies) => {}
            Err(other) => panic!("prefix of {end} lines: {other}"),
        }
    }
    assert!(replayed_a_prefix);
    // Lines cut in the middle, or bytes that are not a journal, are errors.
    for broken in [&text[..text.len() / 2], "\u{0}\u{1}garbage", "[1,2]\n"] {
        if let Ok(recording) = Recording::from_reader(broken.as_bytes()) {
            assert!(recording.replies() > 0);
        }
    }
    assert!(matches!(
        Recording::from_journal(&dir.path().join("missing.jsonl")),
        Err(RecordingError::Read(_))
    ));
}
