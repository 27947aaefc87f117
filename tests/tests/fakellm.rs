//! Our HTTP client against a server we did not write: `fakellm` (PyPI), a scriptable
//! OpenAI-compatible mock. A ToolCallAgent runs a three-step tool conversation through it,
//! streamed and not. `cargo xtask ci` installs fakellm and sets `FAKELLM_BIN`.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{Agent, Role, RunStatus};
use agent_llm::{LlmClient, LlmSettings};
use agent_testkit::{EchoTool, ToolProbe};
use agent_toolcall::ToolCallAgent;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running fakellm server, killed on drop.
struct FakeLlm {
    child: Child,
    base_url: String,
}

impl FakeLlm {
    async fn start() -> Self {
        let bin = std::env::var("FAKELLM_BIN").unwrap_or_else(|_| "fakellm".to_owned());
        let config = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/fakellm.yaml");
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let mut child = Command::new(&bin)
            .args(["serve", "--host", "127.0.0.1", "--port", &port.to_string(), "--config"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start fakellm ({bin}): {e}. `cargo xtask ci` installs it; or `pip install fakellm==0.3.5` and set FAKELLM_BIN")
            });
        // uvicorn announces readiness on stderr.
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let ready = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("Uvicorn running on") {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(ready, Ok(true), "fakellm did not start");
        // Keep draining stderr so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            child,
            base_url: format!("http://127.0.0.1:{port}/v1"),
        }
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn run_conversation(server: &FakeLlm, stream: bool) {
    let mut settings = LlmSettings::new("gpt-4o-mini", &server.base_url).with_api_key("sk-test");
    settings.stream = stream;
    settings.max_attempts = 1;
    let client = Arc::new(LlmClient::new(settings).unwrap());
    let probe = ToolProbe::new();
    let mut agent = ToolCallAgent::new(client.clone())
        .with_tool(EchoTool::new(&probe))
        .with_max_steps(6);
    // fakellm keys conversation state by the first message: a distinct task per run.
    let task = format!("Please record the notes (stream={stream}), then stop.");
    let outcome = agent.run(Some(task)).await.unwrap();

    assert!(
        matches!(outcome.status, RunStatus::Finished(_)),
        "stream={stream}: {}",
        outcome.text()
    );
    assert_eq!(
        outcome.steps.len(),
        3,
        "stream={stream}: {}",
        outcome.text()
    );
    let observations: Vec<&str> = agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    assert_eq!(
        observations,
        [
            "Observed output of cmd `echo` executed:\nfirst-note-saved",
            "Observed output of cmd `echo` executed:\nsecond-note-saved",
            "Observed output of cmd `terminate` executed:\nThe interaction has been completed with status: success",
        ],
        "stream={stream}"
    );
    assert_eq!(probe.calls().len(), 2);
    // Streamed or not, the reassembled arguments were valid JSON: the tools ran.
    let totals = client.totals();
    assert!(
        totals.input > 0 && totals.completion > 0,
        "token totals counted: {totals:?}"
    );
}

#[tokio::test]
async fn a_tool_conversation_runs_against_fakellm_streamed_and_not() {
    let server = FakeLlm::start().await;
    run_conversation(&server, false).await;
    run_conversation(&server, true).await;
}
