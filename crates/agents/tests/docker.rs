//! SandboxManus at the desktop on the Docker backend, end to end: the agent factory builds it
//! with `[sandbox] backend = "docker"`; the container's display is the image's Xvfb. Over the
//! real HTTP client and the strict mock OpenAI server, the scripted model starts the small Tk
//! application inside the container, clicks into its entry, types, clicks its button, and the
//! screenshots that reach the mock as images show the change (checked by their pixels); when the
//! agent is shut down the container, the X server and the application are gone. An image without
//! Xvfb gives SandboxManus without `computer_use`, saying why.
//!
//! Ignored in a plain `cargo test`; `cargo xtask ci` (or `cargo xtask docker`) runs them with
//! `--ignored` when a Docker engine answers, with the images it builds from host files
//! (`OPENMANUS_DOCKER_IMAGE`, `OPENMANUS_DOCKER_DESKTOP_IMAGE`).

#![cfg(feature = "docker")]
// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_config::Config;
use agent_core::{FinishReason, Role, RunStatus, ToolCall};
use agent_llm::{ChatModel, LlmClient, LlmError};
use agent_testkit::{Completion, MockOpenAi};
use agents::{AgentFactory, AgentKind};

mod clicker;
mod no_display;

use clicker::{alive, last_image, region_is, script_clicker_session};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} names a Docker test image (cargo xtask ci builds and sets it)")
    })
}

/// The container whose workspace bind is `workspace` (each test has its own directory).
async fn container_of(docker: &bollard::Docker, workspace: &Path) -> String {
    let all = docker
        .list_containers(Some(bollard::query_parameters::ListContainersOptions {
            all: true,
            ..Default::default()
        }))
        .await
        .unwrap();
    let found: Vec<String> = all
        .into_iter()
        .filter(|c| {
            c.mounts
                .iter()
                .flatten()
                .any(|m| m.source.as_deref().map(Path::new) == Some(workspace))
        })
        .filter_map(|c| c.id)
        .collect();
    assert_eq!(found.len(), 1, "one container for {}", workspace.display());
    found[0].clone()
}

/// The container's processes: host pid and command line.
async fn processes(docker: &bollard::Docker, container: &str) -> Vec<(u32, String)> {
    let top = docker
        .top_processes(container, None::<bollard::query_parameters::TopOptions>)
        .await
        .unwrap();
    let titles = top.titles.unwrap_or_default();
    let pid = titles.iter().position(|t| t == "PID").unwrap();
    let cmd = titles.iter().position(|t| t == "CMD").unwrap();
    top.processes
        .unwrap_or_default()
        .into_iter()
        .map(|row| (row[pid].parse().unwrap(), row[cmd].clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn sandbox_manus_in_docker_opens_an_app_on_its_display_types_clicks_and_sees_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let server = MockOpenAi::start().await.unwrap();
    script_clicker_session(&server).push(Completion::tool_calls(
        Some("The button turned the panel green.".into()),
        [ToolCall::new("t1", "terminate", r#"{"status":"success"}"#)],
    ));
    let config = Config::from_toml_str(&format!(
        "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-desktop\"\nmax_attempts = 1\n\n[sandbox]\nbackend = \"docker\"\nimage = \"{}\"\ntimeout = 120\n",
        server.base_url(),
        env("OPENMANUS_DOCKER_DESKTOP_IMAGE")
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
        .expect("the Docker sandbox starts with its display");
    assert!(built.warnings().is_empty(), "{:?}", built.warnings());
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

    let requests = server.requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"computer_use"), "{offered:?}");

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
    assert_eq!(
        std::fs::read_to_string(workspace.join("pressed.txt")).unwrap(),
        "hello",
        "the application in the container wrote to the workspace"
    );
    assert!(workspace.join("latest_screenshot.png").is_file());
    assert!(
        seen[9].ends_with("Error: Failed to click: (5000, 90) is off the screen, which is 1024x768 (x from 0 to 1023, y from 0 to 767)"),
        "{}",
        seen[9]
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

    // The X server and the application run in the container, and end with it.
    let docker = agent_sandbox::connect_docker(None).await.unwrap();
    let container = container_of(&docker, &workspace).await;
    let running = processes(&docker, &container).await;
    let x_processes: Vec<u32> = running
        .iter()
        .filter(|(_, cmd)| cmd.starts_with("Xvfb :0") || cmd.contains("clicker.py ready.txt"))
        .map(|(pid, _)| *pid)
        .collect();
    assert_eq!(x_processes.len(), 2, "{running:?}");
    built.shutdown().await;
    let start = Instant::now();
    while x_processes.iter().any(|&pid| alive(pid)) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "X processes outlived the session"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        docker
            .inspect_container(
                &container,
                None::<bollard::query_parameters::InspectContainerOptions>
            )
            .await
            .is_err(),
        "the container is removed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn an_image_without_xvfb_gives_sandbox_manus_without_computer_use_saying_why() {
    let image = env("OPENMANUS_DOCKER_IMAGE");
    let warnings = no_display::sandbox_manus_without_its_display(&format!(
        "backend = \"docker\"\nimage = \"{image}\"\ntimeout = 120\n"
    ))
    .await;
    assert_eq!(
        warnings,
        [format!(
            "computer_use is not offered because the sandbox has no display: the X server `Xvfb` is not installed in the Docker image {image:?} (add it to the image, e.g. `RUN apt-get install -y xvfb` in its Dockerfile, or use backend = \"local\")"
        )]
    );
}
