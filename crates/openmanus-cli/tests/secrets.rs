//! Secrets stay with the client (issue 21): the key the configuration reads from the
//! environment still reaches the model server, but neither it nor a copy of it reaches the
//! tools' processes, and the file tools refuse the configuration file even inside the
//! workspace.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Stdio;
use std::time::Duration;

use agent_testkit::{Completion, MockOpenAi};
use serde_json::json;
use tokio::process::Command;

use crate::common::call;

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");
const KEY: &str = "sk-secret-cli-0123456789";

#[tokio::test]
async fn tools_see_neither_the_key_nor_the_config_file() {
    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key(KEY);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("config")).unwrap();
    let config = root.join("config/config.toml");
    // The workspace is the project itself: the configuration file lies inside it.
    std::fs::write(
        &config,
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"${{OPENAI_API_KEY}}\"\nmax_attempts = 1\n\n[agent]\nworkspace_root = \".\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    server
        .push(Completion::tool_calls(
            None,
            [
                call(
                    "c1",
                    "bash",
                    json!({"command": "echo \"found=$(env | grep -c sk-secret) openai=${OPENAI_API_KEY:-none} copy=${COPY_OF_KEY:-none} harmless=${HARMLESS:-none}\""}),
                ),
                call(
                    "c2",
                    "str_replace_editor",
                    json!({"command": "view", "path": config}),
                ),
            ],
        ))
        .push(Completion::tool_calls(
            Some("Done.".into()),
            [call("c3", "terminate", json!({"status": "success"}))],
        ));
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        Command::new(BIN)
            .current_dir(&root)
            .env_remove("OPENMANUS_CONFIG")
            .env("NO_COLOR", "1")
            .env("OPENAI_API_KEY", KEY)
            .env("COPY_OF_KEY", KEY)
            .env("HARMLESS", "visible")
            .args(["--agent", "swe", "--prompt", "look around"])
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("openmanus did not finish")
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    // The model server got the key on every request (require_api_key), the tools did not.
    let observations = server.requests()[1].body["messages"].to_string();
    assert!(
        observations.contains("found=0 openai=none copy=none harmless=visible"),
        "{observations}"
    );
    assert!(
        observations.contains("is the agent's configuration, which holds its API keys"),
        "{observations}"
    );
    assert!(
        !observations.contains(KEY),
        "the key reached the model as an observation"
    );
    server.verify().unwrap();
}
