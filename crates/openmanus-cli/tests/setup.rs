//! Setting up as a new user does: the per-user configuration, `config init`, `--model` and
//! `-c KEY=VALUE` overrides, and a task piped on standard input. The binary runs as a
//! subprocess with its own HOME, against the strict mock OpenAI server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use agent_testkit::{Completion, MockOpenAi};
use serde_json::json;
use tokio::process::Command;

use crate::common::call;

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

/// A home directory and an empty working directory (no `./config/`).
struct User {
    home: tempfile::TempDir,
    cwd: tempfile::TempDir,
}

impl User {
    fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            cwd: tempfile::tempdir().unwrap(),
        }
    }

    fn user_config(&self) -> PathBuf {
        self.home.path().join(".config/openmanus/config.toml")
    }

    fn command(&self) -> Command {
        let mut command = Command::new(BIN);
        command
            .current_dir(self.cwd.path())
            .env_remove("OPENMANUS_CONFIG")
            .env_remove("XDG_CONFIG_HOME")
            .env("HOME", self.home.path())
            .env("NO_COLOR", "1")
            .env("TMPDIR", self.cwd.path())
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    async fn run(&self, args: &[&str]) -> Output {
        output(self.command().args(args)).await
    }
}

async fn output(command: &mut Command) -> Output {
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("openmanus did not finish")
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn all(output: &Output) -> String {
    format!("{}{}", text(&output.stdout), text(&output.stderr))
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn config_for(server: &MockOpenAi) -> String {
    format!(
        "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-setup\"\nmax_attempts = 1\n",
        server.base_url()
    )
}

#[tokio::test]
async fn without_any_configuration_the_error_names_config_init() {
    let user = User::new();
    let output = user.run(&["-p", "hello"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("openmanus config init"), "{stderr}");
    assert!(
        stderr.contains(&user.user_config().display().to_string()),
        "the per-user path is among those searched:\n{stderr}"
    );
}

#[tokio::test]
async fn config_init_writes_a_per_user_file_that_the_next_run_finds() {
    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key("sk-from-env");
    let user = User::new();
    let output = user
        .run(&[
            "config",
            "init",
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--base-url",
            &server.base_url(),
            "--api-key-env",
            "SETUP_TEST_KEY",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", all(&output));
    let written = std::fs::read_to_string(user.user_config()).unwrap();
    assert!(
        written.contains("api_key = \"${SETUP_TEST_KEY}\""),
        "{written}"
    );
    assert!(written.contains("model = \"gpt-4o-mini\""), "{written}");
    assert!(
        written.lines().filter(|l| l.starts_with('#')).count() > 10,
        "commented"
    );
    assert!(
        text(&output.stdout).contains("export SETUP_TEST_KEY="),
        "it says what to do next:\n{}",
        text(&output.stdout)
    );

    // Written once: a second init refuses to replace it, --force does.
    let again = user.run(&["config", "init", "--yes"]).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again.stderr).contains("--force"), "{}", all(&again));
    assert_eq!(
        std::fs::read_to_string(user.user_config()).unwrap(),
        written
    );

    // `config check` from a directory without ./config/ finds the per-user file.
    let check = output_of(
        user.command()
            .env("SETUP_TEST_KEY", "sk-from-env")
            .args(["config", "check"]),
    )
    .await;
    let shown = all(&check);
    assert_eq!(check.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains(&format!(
            "configuration: {} (from the per-user configuration directory)",
            user.user_config().display()
        )),
        "{shown}"
    );
    assert!(shown.contains("gpt-4o-mini"), "{shown}");
    assert!(!shown.contains("sk-from-env"), "the key is redacted");

    // And a run uses it, with the key from the environment.
    server.push(Completion::tool_calls(
        Some("Hello from the per-user config.".into()),
        [call("t", "terminate", json!({"status": "success"}))],
    ));
    let run = output_of(user.command().env("SETUP_TEST_KEY", "sk-from-env").args([
        "--no-store",
        "-q",
        "-p",
        "Say hello.",
    ]))
    .await;
    assert_eq!(run.status.code(), Some(0), "{}", all(&run));
    assert_eq!(text(&run.stdout).trim(), "Hello from the per-user config.");
    assert_eq!(server.requests()[0].body["model"], "gpt-4o-mini");
    server.verify().unwrap();
}

async fn output_of(command: &mut Command) -> Output {
    output(command).await
}

#[tokio::test]
async fn xdg_config_home_replaces_dot_config() {
    let server = MockOpenAi::start().await.unwrap();
    let user = User::new();
    let xdg = tempfile::tempdir().unwrap();
    write(
        &xdg.path().join("openmanus/config.toml"),
        &config_for(&server),
    );
    let check = output_of(
        user.command()
            .env("XDG_CONFIG_HOME", xdg.path())
            .args(["config", "check"]),
    )
    .await;
    assert_eq!(check.status.code(), Some(0), "{}", all(&check));
    assert!(
        all(&check).contains(
            &xdg.path()
                .join("openmanus/config.toml")
                .display()
                .to_string()
        ),
        "{}",
        all(&check)
    );
}

#[tokio::test]
async fn model_and_c_overrides_show_in_config_check_and_bad_ones_are_refused() {
    let server = MockOpenAi::start().await.unwrap();
    let user = User::new();
    write(&user.user_config(), &config_for(&server));

    let check = user
        .run(&[
            "--model",
            "small-model",
            "-c",
            "llm.temperature=0.25",
            "config",
            "check",
            "-c",
            "llm.max_tokens=777",
        ])
        .await;
    let shown = all(&check);
    assert_eq!(check.status.code(), Some(0), "{shown}");
    assert!(shown.contains("model = \"small-model\""), "{shown}");
    assert!(shown.contains("temperature = 0.25"), "{shown}");
    assert!(shown.contains("max_tokens = 777"), "{shown}");
    assert!(
        shown.contains("override: -c llm.temperature=0.25")
            || shown.contains("override: llm.temperature=0.25"),
        "{shown}"
    );
    assert!(shown.contains("Manus: small-model"), "{shown}");

    // `--set` is the long form, and works after `mcp` too (where -c is --connection).
    let check = user
        .run(&["config", "check", "--set", "agent.max_steps=3"])
        .await;
    assert_eq!(check.status.code(), Some(0), "{}", all(&check));

    // An unknown key is refused, naming the override and the keys there are.
    let bad = user
        .run(&["-c", "llm.temprature=0.2", "config", "check"])
        .await;
    let stderr = text(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("llm.temprature=0.2"), "{stderr}");
    assert!(stderr.contains("unknown field `temprature`"), "{stderr}");
    assert!(
        stderr.contains("temperature"),
        "the valid keys are listed:\n{stderr}"
    );

    // A value of the wrong type too.
    let bad = user
        .run(&["config", "check", "-c", "agent.max_steps=lots"])
        .await;
    let stderr = text(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("agent.max_steps=lots") && stderr.contains("expected u32"),
        "{stderr}"
    );

    // Not KEY=VALUE at all: clap refuses it before anything loads.
    let bad = user.run(&["config", "check", "-c", "temperature"]).await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("KEY=VALUE"),
        "{}",
        text(&bad.stderr)
    );
}

#[tokio::test]
async fn the_model_override_reaches_the_model() {
    let server = MockOpenAi::start().await.unwrap();
    let user = User::new();
    write(&user.user_config(), &config_for(&server));
    server.push(Completion::tool_calls(
        Some("Done.".into()),
        [call("t", "terminate", json!({"status": "success"}))],
    ));
    let run = user
        .run(&[
            "--no-store",
            "-m",
            "other-model",
            "-c",
            "llm.temperature=0.5",
            "-p",
            "Go.",
        ])
        .await;
    assert_eq!(run.status.code(), Some(0), "{}", all(&run));
    let body = server.requests()[0].body.clone();
    assert_eq!(body["model"], "other-model");
    assert_eq!(body["temperature"], 0.5);
    server.verify().unwrap();
}

#[tokio::test]
async fn a_multi_line_prompt_on_standard_input_arrives_whole() {
    let server = MockOpenAi::start().await.unwrap();
    let user = User::new();
    write(&user.user_config(), &config_for(&server));
    server.push(Completion::tool_calls(
        Some("Read all three lines.".into()),
        [call("t", "terminate", json!({"status": "success"}))],
    ));
    let task = "line one\nline two\n\nline four, after a blank line\n";
    let mut child = user
        .command()
        .args(["--no-store", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(task.as_bytes()).await.unwrap();
        // Dropped: end of input.
    }
    let run = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", all(&run));
    assert_eq!(text(&run.stdout).trim(), "Read all three lines.");
    let requests = server.requests();
    let users: Vec<String> = requests[0]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        users
            .iter()
            .any(|c| c.contains("line one\\nline two\\n\\nline four, after a blank line")),
        "the whole input is the task: {users:?}"
    );
    server.verify().unwrap();
}
