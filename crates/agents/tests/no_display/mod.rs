//! Shared by the bubblewrap and the Docker tests: SandboxManus built where its display cannot
//! start says so plainly (a build warning naming the cause), does not offer `computer_use`, and
//! otherwise works — the scripted model runs a command in the sandbox and finishes.

use std::sync::Arc;
use std::time::Duration;

use agent_config::Config;
use agent_core::{FinishReason, Role, RunStatus, ToolCall};
use agent_llm::{ChatModel, LlmClient, LlmError};
use agent_testkit::{Completion, MockOpenAi};
use agents::{AgentFactory, AgentKind};
use serde_json::json;

/// Builds SandboxManus with `[sandbox]` set to `sandbox_section` (whose display must fail to
/// start), runs it, checks it, and returns its build warnings.
pub async fn sandbox_manus_without_its_display(sandbox_section: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let server = MockOpenAi::start().await.unwrap();
    server
        .push(Completion::tool_calls(
            None,
            [ToolCall::new(
                "s1",
                "sandbox_shell",
                json!({"action": "execute_command", "session_name": "main", "blocking": true,
                       "command": "echo $((6 * 7)) > n.txt; cat n.txt; echo display=${DISPLAY:-none}"})
                .to_string(),
            )],
        ))
        .push(Completion::tool_calls(
            None,
            [ToolCall::new(
                "c1",
                "computer_use",
                json!({"action": "screenshot"}).to_string(),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Done without a screen.".into()),
            [ToolCall::new("t1", "terminate", r#"{"status":"success"}"#)],
        ));
    let config = Config::from_toml_str(&format!(
        "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-nodisplay\"\nmax_attempts = 1\n\n[sandbox]\n{sandbox_section}\n",
        server.base_url()
    ))
    .unwrap();
    let factory = AgentFactory::new(config.clone()).with_workspace(&workspace);
    let llm = config.llm_for("sandbox");
    let models = move |_: &str| -> Result<Arc<dyn ChatModel>, LlmError> {
        Ok(Arc::new(LlmClient::new(llm.clone())?) as Arc<dyn ChatModel>)
    };
    let mut built = factory
        .build(AgentKind::Sandbox, &models)
        .await
        .expect("SandboxManus is built without its display");
    let warnings = built.warnings().to_vec();
    let outcome = tokio::time::timeout(
        Duration::from_secs(300),
        built.agent_mut().run(Some("Compute 6 * 7.".into())),
    )
    .await
    .expect("the agent hung")
    .unwrap();
    assert!(
        matches!(&outcome.status, RunStatus::Finished(FinishReason::SpecialTool { name }) if name == "terminate"),
        "{outcome:?}"
    );
    server.verify().unwrap();
    let requests = server.requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(!offered.contains(&"computer_use"), "{offered:?}");
    assert!(offered.contains(&"sandbox_shell"), "{offered:?}");
    let seen: Vec<String> = built
        .agent()
        .base()
        .memory
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text().to_owned())
        .collect();
    assert!(
        seen[0].contains(r#""output": "42\ndisplay=none""#),
        "{}",
        seen[0]
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("n.txt")).unwrap(),
        "42\n"
    );
    assert!(
        seen[1].contains("Error: Unknown tool 'computer_use'"),
        "{}",
        seen[1]
    );
    built.shutdown().await;
    warnings
}
