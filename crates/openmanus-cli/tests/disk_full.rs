//! Fault case of issue 21: the workspace's disk is full. The workspace is a 1 MiB tmpfs
//! mounted for the test (root can mount; where mounting is refused the case says it was
//! skipped, with the reason, and `cargo xtask faults` counts it as skipped, not held). A run
//! whose `bash` fills the disk then tries to write a file: the write gets a clean error
//! observation, the journal's failure is reported, nothing panics, and the run's shell is gone.
//! The run keeps no store (`--no-store`): its JSONL journal, on the full disk, is its record.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_testkit::{Completion, MockOpenAi};
use serde_json::json;
use tokio::process::Command;

use crate::common::{alive, call};

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

/// What `cargo xtask faults` looks for in a case's output to count it as skipped.
const SKIPPED: &str = "FAULT-CASE-SKIPPED:";

/// A tmpfs mounted at a directory, unmounted on drop (lazily, so a process still inside it
/// cannot keep it).
struct Tmpfs {
    at: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` at `at`; `Err` with the reason when this machine refuses.
    fn mount(at: &Path, size: &str) -> Result<Self, String> {
        let output = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(at)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if output.status.success() {
            Ok(Self { at: at.to_owned() })
        } else {
            Err(format!(
                "mount -t tmpfs refused ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.at)
            .status();
    }
}

#[tokio::test]
async fn a_full_disk_gives_error_observations_and_a_reported_journal_failure() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let _tmpfs = match Tmpfs::mount(&workspace, "1m") {
        Ok(tmpfs) => tmpfs,
        Err(reason) => {
            println!("{SKIPPED} {reason}");
            return;
        }
    };
    let workspace = workspace.canonicalize().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let shell_pid = outside.join("shell.pid");

    let server = MockOpenAi::start().await.unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(
        dir.path().join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-cli-test\"\n\
             max_attempts = 1\n",
            server.base_url(),
        ),
    )
    .unwrap();
    let notes = workspace.join("notes.txt");
    // A long final answer: the journal must write more than the page the full disk leaves it.
    let answer = format!("The disk is full. {}", "Nothing more fits. ".repeat(600));
    server
        .push(Completion::tool_calls(
            Some("Filling the disk.".into()),
            [call(
                "c1",
                "bash",
                json!({"command": format!(
                    "echo $$ > {}; head -c 4M /dev/zero > fill.bin; echo exit=$?",
                    shell_pid.display()
                )}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Writing the notes.".into()),
            [call(
                "c2",
                "str_replace_editor",
                json!({"command": "create", "path": notes, "file_text": "remember this\n".repeat(400)}),
            )],
        ))
        .push(Completion::tool_calls(
            Some(answer.clone()),
            [call("c3", "terminate", json!({"status": "success"}))],
        ));

    let output = tokio::time::timeout(
        Duration::from_secs(120),
        Command::new(BIN)
            .current_dir(dir.path())
            .env_remove("OPENMANUS_CONFIG")
            .env("NO_COLOR", "1")
            .env("TMPDIR", &outside)
            // The JSONL journal is the record under test (a session kept in the store writes
            // none).
            // Unconfined: the shell writes its pid outside the workspace, and the number must
            // be this machine's (the full disk, not the confinement, is under test here).
            .args([
                "--sandbox",
                "full-access",
                "--agent",
                "swe",
                "--no-store",
                "--prompt",
                "Write some notes.",
            ])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("openmanus did not finish")
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let shown = format!(
        "status {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );

    // No panic, no signal: the process ended on its own and said why.
    assert!(output.status.code().is_some(), "{shown}");
    assert!(!stderr.contains("panicked"), "{shown}");
    // The answer was given; the journal's failure is reported, naming the cause.
    assert!(stdout.contains("The disk is full."), "{shown}");
    assert!(
        stderr.contains("journal") && stderr.contains("No space left on device"),
        "the journal failure is not reported: {shown}"
    );
    assert_ne!(output.status.code(), Some(0), "{shown}");

    // Both tools got a clean error observation (the model saw them).
    server.verify().unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{shown}");
    let observation = |id: &str| {
        requests[2].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_else(|| panic!("{id} was not answered"))
    };
    let filled = observation("c1");
    assert!(
        filled.contains("No space left on device") && filled.contains("exit=1"),
        "{filled}"
    );
    let written = observation("c2");
    assert!(
        written.contains(&format!(
            "Error: Failed to write to {}: No space left on device",
            notes.display()
        )),
        "{written}"
    );
    assert!(!notes.exists() || std::fs::metadata(&notes).unwrap().len() < 5600);

    // The run's shell died with the run.
    let pid: i32 = std::fs::read_to_string(&shell_pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(pid), "the run's shell {pid} survived");
}
