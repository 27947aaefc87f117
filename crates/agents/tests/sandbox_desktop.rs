//! SandboxManus at the desktop, end to end: the agent factory builds it with a sandbox that has
//! a virtual display; over the real HTTP client and the strict mock OpenAI server, the scripted
//! model starts a small Tk application from the sandboxed shell, clicks into its entry, types,
//! clicks its button, and the screenshots that reach the mock as images show the change —
//! checked by their pixels. When the agent is shut down no X process is left.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_config::Config;
use agent_core::{FinishReason, Role, RunStatus, ToolCall};
use agent_llm::{ChatModel, LlmClient, LlmError};
use agent_testkit::{Completion, MockOpenAi};
use agents::{AgentFactory, AgentKind};
use serde_json::json;

mod clicker;

use clicker::{alive, call, last_image, region_is, script_clicker_session};

/// Host processes below this test process whose command line contains `needle`.
fn our_processes(needle: &str) -> Vec<u32> {
    let me = i32::try_from(std::process::id()).unwrap();
    agent_process::descendants_of(me)
        .into_iter()
        .filter(|&pid| agent_process::command_line(pid).is_some_and(|line| line.contains(needle)))
        .filter_map(|pid| u32::try_from(pid).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_manus_opens_an_app_on_its_display_types_clicks_and_sees_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let server = MockOpenAi::start().await.unwrap();
    script_clicker_session(&server)
        .push(call(
            "c7",
            "computer_use",
            json!({"action": "press", "key": "hyper"}),
        ))
        .push(call("c8", "computer_use", json!({"action": "typing"})))
        .push(Completion::tool_calls(
            Some("The button turned the panel green.".into()),
            [ToolCall::new("t1", "terminate", r#"{"status":"success"}"#)],
        ));
    let config = Config::from_toml_str(&format!(
        "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-desktop\"\nmax_attempts = 1\n",
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
        .expect("bubblewrap and Xvfb run here (cargo xtask setup installs them)");
    let outcome = tokio::time::timeout(
        Duration::from_secs(300),
        built
            .agent_mut()
            .run(Some("Open the clicker, type hello and press Go.".into())),
    )
    .await
    .expect("the agent hung")
    .unwrap();
    assert!(
        matches!(&outcome.status, RunStatus::Finished(FinishReason::SpecialTool { name }) if name == "terminate"),
        "{outcome:?}"
    );
    server.verify().unwrap();
    assert_eq!(server.remaining(), 0);

    // computer_use is offered with OpenManus's schema.
    let requests = server.requests();
    let tools = requests[0].body["tools"].as_array().unwrap();
    let offered: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"computer_use"), "{offered:?}");
    let schema = &tools
        .iter()
        .find(|t| t["function"]["name"] == "computer_use")
        .unwrap()["function"]["parameters"];
    assert_eq!(schema["required"], json!(["action"]));
    assert_eq!(schema["dependencies"]["typing"], json!(["text"]));
    assert_eq!(schema["properties"]["num_clicks"]["enum"], json!([1, 2, 3]));
    assert_eq!(schema["properties"]["key"]["enum"][0], "a");
    assert_eq!(
        schema["properties"]["action"]["enum"]
            .as_array()
            .unwrap()
            .len(),
        11
    );

    let seen: Vec<String> = built
        .agent()
        .base()
        .memory
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text().to_owned())
        .collect();
    let observed = |i: usize, text: &str| {
        assert_eq!(
            seen[i],
            format!("Observed output of cmd `computer_use` executed:\n{text}"),
        );
    };
    assert!(seen[2].contains("ready"), "{}", seen[2]);
    assert!(
        seen[3].starts_with(
            "Observed output of cmd `computer_use` executed:\nScreenshot saved as screenshots/screenshot_"
        ),
        "{}",
        seen[3]
    );
    observed(4, "1 left click(s) performed at (120, 35)");
    observed(5, "Typed: hello");
    observed(6, "1 left click(s) performed at (80, 90)");
    assert!(seen[7].contains("hello"), "{}", seen[7]);
    assert!(workspace.join("latest_screenshot.png").is_file());
    // Bad arguments are errors the model can act on.
    assert!(
        seen[9].ends_with("Error: Failed to click: (5000, 90) is off the screen, which is 1024x768 (x from 0 to 1023, y from 0 to 767)"),
        "{}",
        seen[9]
    );
    assert!(
        seen[10].contains("Error: Failed to press key: unknown key \"hyper\" (known keys: a, b,"),
        "{}",
        seen[10]
    );
    assert!(
        seen[11].ends_with("Error: Text is required for typing"),
        "{}",
        seen[11]
    );

    // The screenshots reached the model as images; their pixels show the change.
    let before = last_image(&requests[4].body);
    assert_eq!(before.dimensions(), (1024, 768));
    assert!(region_is(&before, [0, 0, 255]), "the panel was blue before");
    let after = last_image(&requests[9].body);
    assert!(
        region_is(&after, [0, 255, 0]),
        "the panel is green after typing `hello` and clicking Go"
    );

    // The display and the app end with the agent's sandbox.
    let x_processes: Vec<u32> = our_processes("Xvfb")
        .into_iter()
        .chain(our_processes("clicker.py"))
        .collect();
    assert!(x_processes.len() >= 2, "{x_processes:?}");
    built.shutdown().await;
    let start = Instant::now();
    while x_processes.iter().any(|&pid| alive(pid)) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "X processes outlived the session"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

mod no_display;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_its_x_server_sandbox_manus_says_why_and_works_without_computer_use() {
    let warnings =
        no_display::sandbox_manus_without_its_display("xvfb = \"/nonexistent/bin/Xvfb\"").await;
    assert_eq!(
        warnings,
        [
            "computer_use is not offered because the sandbox has no display: the X server `/nonexistent/bin/Xvfb` is not installed on this machine (Debian/Ubuntu: `apt-get install xvfb`; `openmanus doctor` shows what this machine has)"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_x_server_missing_from_the_sandbox_path_is_named() {
    let warnings =
        no_display::sandbox_manus_without_its_display("xvfb = \"openmanus-no-such-xvfb\"").await;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .contains("the X server `openmanus-no-such-xvfb` is not installed on this machine"),
        "{warnings:?}"
    );
}
