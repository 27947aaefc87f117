//! `openmanus replay` as a subprocess: a Manus run recorded against the strict mock server,
//! replayed with the server gone (identical observations, exit 0), then with the file the run
//! reads changed (the step that diverged named, exit 5), in text and JSON; recordings that
//! cannot be replayed are errors (exit 1), never a panic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use agent_testkit::{Completion, MockOpenAi};
use serde_json::{Value, json};
use tokio::process::Command;

use crate::common::call;

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

const INPUT: &str = "alpha\nbeta\ngamma\n";

/// What the recorded run's first step runs: it prints the input and its line count.
const READ: &str = "text = open('input.txt').read()\nprint(text + str(len(text.splitlines())))";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `openmanus` in `dir` (where `config/config.toml` is).
async fn openmanus(dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    command
        .current_dir(dir)
        .env_remove("OPENMANUS_CONFIG")
        .env_remove("OPENAI_API_KEY")
        .env("NO_COLOR", "1")
        .env("TMPDIR", dir.join("tmp"))
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .args(args);
    tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("openmanus did not finish")
        .unwrap()
}

/// Records a Manus run in `dir/workspace` against a mock that is gone when this returns:
/// `python_execute` reads `input.txt`, `str_replace_editor` writes `out.txt` by its absolute path,
/// `terminate`. The run is recorded in the store (its one record); returns the path of its
/// journal as `openmanus sessions export` writes it.
async fn record(dir: &Path) -> PathBuf {
    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key("sk-replay");
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    std::fs::write(
        dir.join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-replay\"\nmax_attempts = 1\n",
            server.base_url()
        ),
    )
    .unwrap();
    let workspace = dir.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    std::fs::write(workspace.join("input.txt"), INPUT).unwrap();
    server
        .push(Completion::tool_calls(
            Some("Reading the input.".into()),
            [call("c1", "python_execute", json!({"code": READ}))],
        ))
        .push(Completion::tool_calls(
            None,
            [call(
                "c2",
                "str_replace_editor",
                json!({"command": "create", "path": workspace.join("out.txt"), "file_text": "3 lines\n"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Done: 3 lines.".into()),
            [call("c3", "terminate", json!({"status": "success"}))],
        ));
    let output = openmanus(dir, &["--prompt", "Count the lines of input.txt."]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    server.verify().unwrap();
    drop(server);
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .unwrap_or_else(|| panic!("no session line in:\n{stderr}"));
    let export = openmanus(dir, &["sessions", "export", id]).await;
    assert_eq!(export.status.code(), Some(0), "{}", text(&export.stderr));
    let journal = dir.join("recorded.jsonl");
    std::fs::write(&journal, &export.stdout).unwrap();
    journal
}

/// A new workspace holding `input` as `input.txt`.
fn workspace(dir: &Path, name: &str, input: &str) -> PathBuf {
    let workspace = dir.join(name);
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("input.txt"), input).unwrap();
    workspace
}

#[tokio::test]
async fn a_recorded_run_replays_with_the_mock_gone_and_a_changed_input_names_the_step() {
    let dir = tempfile::tempdir().unwrap();
    let journal = record(dir.path()).await;
    let journal_arg = journal.to_str().unwrap();

    // The same input: matched, exit 0; the tools worked in the replay's workspace.
    let same = workspace(dir.path(), "same", INPUT);
    let output = openmanus(
        dir.path(),
        &["replay", journal_arg, "--workspace", same.to_str().unwrap()],
    )
    .await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "replay matched 3 steps", "{stderr}");
    assert!(
        stderr.contains("replaying 1 run of manus with 3 recorded replies"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(same.join("out.txt")).unwrap(),
        "3 lines\n"
    );

    // The file the run reads changed: step 1 diverges, exit 5, with a diff.
    let changed = workspace(dir.path(), "changed", "alpha\nBETA\ngamma\n");
    let output = openmanus(
        dir.path(),
        &[
            "replay",
            journal_arg,
            "--workspace",
            changed.to_str().unwrap(),
        ],
    )
    .await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(5), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with(
            "replay diverged at step 1, call 1 (python_execute): the observation differs"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("- beta") && stdout.contains("+ BETA"),
        "{stdout}"
    );

    // The same in JSON, in a fresh workspace of the program's making (no input.txt at all),
    // which is kept for inspection since the replay diverged.
    let output = openmanus(dir.path(), &["replay", journal_arg, "--json"]).await;
    assert_eq!(output.status.code(), Some(5), "{}", text(&output.stderr));
    let report: Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    assert_eq!(report["type"], "replay");
    assert_eq!(report["status"], "diverged");
    assert_eq!(report["steps_matched"], 0);
    assert_eq!(report["divergence"]["step"], 1);
    assert_eq!(report["divergence"]["difference"]["kind"], "observation");
    assert_eq!(report["divergence"]["difference"]["name"], "python_execute");
    let kept = PathBuf::from(report["workspace"].as_str().unwrap());
    assert!(kept.starts_with(dir.path().join("tmp")), "{kept:?}");
    assert!(kept.is_dir(), "a diverged replay keeps its workspace");

    // A matching replay in JSON.
    let same_again = workspace(dir.path(), "same-again", INPUT);
    let output = openmanus(
        dir.path(),
        &[
            "replay",
            journal_arg,
            "--json",
            "--workspace",
            same_again.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let report: Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    assert_eq!(report["status"], "matched");
    assert_eq!(report["steps_matched"], 3);
    assert_eq!(report["replies_used"], 3);
    assert_eq!(report["divergence"], Value::Null);
}

#[tokio::test]
async fn a_stored_session_replays_by_id_and_bad_recordings_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let journal = record(dir.path()).await;
    // The run was recorded in the store of the configured workspace too.
    let output = openmanus(dir.path(), &["sessions", "list", "--json"]).await;
    let listed = text(&output.stdout);
    let session: Value = serde_json::from_str(listed.lines().next().unwrap()).unwrap();
    let id = session["id"].as_str().unwrap();
    let same = workspace(dir.path(), "from-store", INPUT);
    let output = openmanus(
        dir.path(),
        &[
            "replay",
            "--session",
            &id[..8],
            "--workspace",
            same.to_str().unwrap(),
        ],
    )
    .await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "replay matched 3 steps");
    assert!(
        !stderr.contains("rebuilt from the stored thoughts"),
        "the store keeps the model's replies: {stderr}"
    );

    // Not a file, not a journal, a journal with no task, a journal cut in its middle line:
    // exit 1 with a message, nothing replayed, no panic.
    let garbage = dir.path().join("garbage.jsonl");
    std::fs::write(&garbage, "this is not json\n").unwrap();
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let text_of_journal = std::fs::read_to_string(&journal).unwrap();
    let cut = dir.path().join("cut.jsonl");
    // Cut inside a line, never just after one.
    let mut end = text_of_journal.len() * 2 / 3;
    while !text_of_journal.is_char_boundary(end) || text_of_journal[..end].ends_with('\n') {
        end -= 1;
    }
    std::fs::write(&cut, &text_of_journal[..end]).unwrap();
    for (file, says) in [
        (dir.path().join("missing.jsonl"), "cannot read the journal"),
        (garbage, "not a JSON object"),
        (empty, "holds no task"),
        (cut, "not a JSON object"),
    ] {
        let output = openmanus(dir.path(), &["replay", file.to_str().unwrap()]).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{file:?}: {stderr}");
        assert!(stderr.contains(says), "{file:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }

    // A recording of an agent `openmanus` does not know (an agent crate's own): it must be
    // named, and nothing is left behind.
    let unknown = dir.path().join("unknown.jsonl");
    std::fs::write(
        &unknown,
        text_of_journal
            .replace(r#""agent":"manus""#, r#""agent":"word_stats""#)
            .replace(r#""agent":"Manus""#, r#""agent":"word_stats""#),
    )
    .unwrap();
    let before = std::fs::read_dir(dir.path().join("tmp")).unwrap().count();
    let output = openmanus(dir.path(), &["replay", unknown.to_str().unwrap()]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("name it with --agent"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(dir.path().join("tmp")).unwrap().count(),
        before
    );
    let output = openmanus(
        dir.path(),
        &[
            "replay",
            unknown.to_str().unwrap(),
            "--agent",
            "manus",
            "--workspace",
            workspace(dir.path(), "named", INPUT).to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));

    let help = openmanus(dir.path(), &["replay", "--help"]).await;
    let help = text(&help.stdout);
    assert!(help.contains("Exit codes: 0 matched, 5 diverged"), "{help}");
    assert!(help.contains("--workspace"), "{help}");
}

/// A journal written by the release of 2026-12 (`openmanus demo`: python_execute, the editor's
/// create and str_replace, terminate), committed as it was written, its workspace path replaced
/// by a neutral one. Journals already on users' disks must keep replaying whatever the record
/// of a run becomes: this one is the witness.
const OLD_JOURNAL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/demo-journal-2026-12.jsonl"
);

#[tokio::test]
async fn a_journal_of_the_2026_12_format_still_replays() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    let output = openmanus(dir.path(), &["replay", OLD_JOURNAL, "--json"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let report: Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    assert_eq!(report["type"], "replay");
    assert_eq!(report["status"], "matched", "{report}");
    assert_eq!(report["steps_matched"], 4, "{report}");
    // The tools ran for real in a fresh workspace: `matched` means the four observations
    // (the script written, run, edited, run again) were the recorded ones.
    let output = openmanus(dir.path(), &["replay", OLD_JOURNAL]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("replay matched 4 steps"),
        "{}",
        text(&output.stdout)
    );
}
