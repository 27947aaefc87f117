//! The lean binary (`--no-default-features`: no `browser`, `charts` or `docker`) as a
//! subprocess: what it lacks is refused with the feature's name, and Manus runs without
//! `browser_use`. Run with `cargo test -p openmanus-cli --no-default-features --test lean`; in
//! the default build this file is empty.

#![cfg(not(any(
    feature = "browser",
    feature = "charts",
    feature = "docker",
    feature = "bedrock"
)))]
// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Output, Stdio};
use std::time::Duration;

use agent_testkit::{Completion, MockOpenAi};
use serde_json::json;
use tokio::process::Command;

use crate::common::call;

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

async fn run(dir: &std::path::Path, config: &str, args: &[&str]) -> Output {
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(dir.join("config/config.toml"), config).unwrap();
    let child = Command::new(BIN)
        .current_dir(dir)
        .env_remove("OPENMANUS_CONFIG")
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .args(["--no-store"])
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(60), child)
        .await
        .expect("openmanus did not finish")
        .unwrap()
}

fn llm(server: &MockOpenAi) -> String {
    format!(
        "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-lean\"\nmax_attempts = 1\n",
        server.base_url()
    )
}

#[tokio::test]
async fn the_lean_binary_refuses_what_it_lacks_by_the_features_name() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (agent, feature) in [("browser", "browser"), ("data-analysis", "charts")] {
        let output = run(dir.path(), &llm(&server), &["--agent", agent, "-p", "Go."]).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{agent}: {stderr}");
        assert!(
            stderr.contains(&format!("`{feature}` cargo feature")),
            "{agent}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let docker = format!(
        "{}\n[sandbox]\nuse_sandbox = true\nbackend = \"docker\"\n",
        llm(&server)
    );
    let output = run(dir.path(), &docker, &["--agent", "swe", "-p", "Go."]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("`docker` cargo feature"), "{stderr}");
    // Nothing reached the model.
    assert_eq!(server.request_count(), 0);
}

#[tokio::test]
async fn lean_manus_runs_without_browser_use_and_says_why_when_browser_is_set() {
    let server = MockOpenAi::start().await.unwrap();
    server.push(Completion::tool_calls(
        Some("Done.".into()),
        [call("t", "terminate", json!({"status": "success"}))],
    ));
    let dir = tempfile::tempdir().unwrap();
    let config = format!("{}\n[browser]\nheadless = true\n", llm(&server));
    let output = run(dir.path(), &config, &["-p", "Nothing to do."]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("`browser` cargo feature"), "{stderr}");
    let requests = server.requests();
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"python_execute"), "{tools:?}");
    assert!(!tools.contains(&"browser_use"), "{tools:?}");
    server.verify().unwrap();
}

/// Bedrock is not in the default binary either (nor in this one): `api_type = "aws"` is refused
/// by the feature's name, with the command that builds it in.
#[tokio::test]
async fn bedrock_is_refused_by_the_features_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = "[llm]\nmodel = \"anthropic.claude-3-5-sonnet\"\napi_type = \"aws\"\n\
                  base_url = \"http://127.0.0.1:9\"\napi_key = \"\"\n";
    let output = run(dir.path(), config, &["-p", "Go."]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("`bedrock` cargo feature"), "{stderr}");
    assert!(stderr.contains("--features bedrock"), "{stderr}");
}

#[tokio::test]
async fn doctor_says_what_is_not_in_this_build() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &llm(&server), &["doctor", "--json"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The model is usable: what the build lacks is optional.
    assert!(output.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for (id, feature) in [
        ("chromium", "browser"),
        ("docker", "docker"),
        ("pandas", "charts"),
    ] {
        let check = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap();
        assert_eq!(check["status"], "not_in_build", "{check}");
        assert!(
            check["detail"]
                .as_str()
                .unwrap()
                .contains(&format!("`{feature}` cargo feature")),
            "{check}"
        );
    }
    let human = run(dir.path(), &llm(&server), &["doctor"]).await;
    assert!(String::from_utf8_lossy(&human.stdout).contains("not in this build"));
}
