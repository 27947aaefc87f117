//! `openmanus` with `[sandbox] backend = "docker"` against a real Docker engine: SWE's bash
//! with `use_sandbox = true`, and SandboxManus. Ignored in a plain `cargo test`; `cargo xtask ci`
//! runs them (`--ignored`) when an engine answers, with the image it imports
//! (`OPENMANUS_DOCKER_IMAGE`: busybox and bash).

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use agent_core::ToolCall;
use agent_testkit::{Completion, MockOpenAi};
use serde_json::{Value, json};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

/// The tests count the engine's containers, so they run one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn image() -> String {
    std::env::var("OPENMANUS_DOCKER_IMAGE")
        .expect("OPENMANUS_DOCKER_IMAGE names the test image (cargo xtask ci sets it)")
}

fn call(id: &str, name: &str, args: Value) -> Completion {
    Completion::tool_calls(None, [ToolCall::new(id, name, args.to_string())])
}

/// Containers made from the test image, running or not.
async fn containers() -> Vec<String> {
    let out = Command::new("docker")
        .args(["ps", "-aq", "--filter", &format!("ancestor={}", image())])
        .output()
        .await
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

async fn run(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    tokio::time::timeout(
        Duration::from_secs(120),
        Command::new(BIN)
            .args(args)
            .current_dir(dir)
            .env_remove("OPENMANUS_CONFIG")
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("openmanus finished")
    .unwrap()
}

fn config(dir: &std::path::Path, server: &MockOpenAi, use_sandbox: bool) {
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(
        dir.join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\nmax_attempts = 1\n\n[sandbox]\nuse_sandbox = {use_sandbox}\nbackend = \"docker\"\nimage = \"{}\"\ntimeout = 60\n",
            server.base_url(),
            image()
        ),
    )
    .unwrap();
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn swe_bash_runs_in_a_docker_container_with_use_sandbox() {
    let _serial = SERIAL.lock().await;
    let before = containers().await;
    let dir = tempfile::tempdir().unwrap();
    let server = MockOpenAi::start().await.unwrap();
    config(dir.path(), &server, true);
    let planted = format!("/etc/openmanus-docker-cli-{}", std::process::id());
    server
        .push(call(
            "c1",
            "bash",
            json!({"command": format!("echo in > inside.txt; echo out > {planted}; ls /sys/class/net")}),
        ))
        .push(Completion::tool_calls(
            Some("Done.".into()),
            [ToolCall::new("c2", "terminate", r#"{"status":"success"}"#)],
        ));
    let output = run(dir.path(), &["--agent", "swe", "--prompt", "write files"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let workspace = dir.path().join("workspace");
    assert_eq!(
        std::fs::read_to_string(workspace.join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(!std::path::Path::new(&planted).exists());
    let observed = server.requests()[1].body["messages"].to_string();
    assert!(observed.contains("lo"), "{observed}");
    server.verify().unwrap();
    // The container went with the session.
    assert_eq!(containers().await, before);
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn sandbox_manus_runs_on_the_docker_backend_without_a_browser() {
    let _serial = SERIAL.lock().await;
    let before = containers().await;
    let dir = tempfile::tempdir().unwrap();
    let server = MockOpenAi::start().await.unwrap();
    config(dir.path(), &server, false);
    server
        .push(call(
            "c1",
            "sandbox_shell",
            json!({"action": "execute_command", "blocking": true, "command": "pwd; echo made > made.txt"}),
        ))
        .push(Completion::tool_calls(
            Some("Done in Docker.".into()),
            [ToolCall::new("c2", "terminate", r#"{"status":"success"}"#)],
        ));
    let output = run(dir.path(), &["--agent", "sandbox", "--prompt", "work"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "Done in Docker."
    );
    let offered: Vec<String> = server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        offered,
        [
            "sandbox_shell",
            "sandbox_files",
            "sandbox_vision",
            "ask_human",
            "terminate"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("workspace/made.txt")).unwrap(),
        "made\n"
    );
    let observed = server.requests()[1].body["messages"].to_string();
    assert!(
        observed.contains(r#"\"output\": \"/workspace\""#),
        "{observed}"
    );
    server.verify().unwrap();
    assert_eq!(containers().await, before);
}
