//! The Docker backend against a real Docker engine. These tests are ignored in a plain
//! `cargo test`; `cargo xtask ci` runs them (`--ignored`) when an engine answers, with the image
//! it imports from the host's static busybox (`OPENMANUS_DOCKER_IMAGE`), and says plainly that
//! they were skipped otherwise. The unreachable-engine test always runs.

#![cfg(feature = "docker")]
// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_sandbox::tools::SandboxShell;
use agent_sandbox::{DockerSandbox, DockerSandboxOptions, Sandbox, SandboxError};
use agent_tools::{Tool, ToolContext};
use serde_json::{Value, json};

fn image() -> String {
    std::env::var("OPENMANUS_DOCKER_IMAGE")
        .expect("OPENMANUS_DOCKER_IMAGE names the test image (cargo xtask ci sets it)")
}

async fn sandbox(dir: &std::path::Path, network: bool) -> DockerSandbox {
    DockerSandbox::new(DockerSandboxOptions {
        image: image(),
        shell: "sh".to_owned(),
        network_enabled: network,
        timeout: Duration::from_secs(30),
        ..DockerSandboxOptions::new(dir)
    })
    .await
    .expect("the Docker sandbox starts")
}

#[tokio::test]
async fn an_unreachable_engine_is_a_plain_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = DockerSandbox::new(DockerSandboxOptions {
        docker_host: Some("unix:///nonexistent/docker.sock".to_owned()),
        ..DockerSandboxOptions::new(dir.path())
    })
    .await
    .unwrap_err();
    assert!(matches!(error, SandboxError::Unavailable(_)), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("unix:///nonexistent/docker.sock"), "{text}");
    assert!(text.contains("backend = \"local\""), "{text}");
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn commands_files_limits_and_cleanup_in_a_container() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = sandbox(dir.path(), false).await;
    let container = sandbox.container_id().to_owned();

    // Output, numeric lines, stderr and the exit code.
    let out = sandbox
        .run("echo 1; echo 2; echo oops >&2; exit 3", None)
        .await
        .unwrap();
    assert_eq!(out.stdout, "1\n2\n");
    assert_eq!(out.stderr, "oops\n");
    assert_eq!(out.exit_code, Some(3));
    assert!(!out.timed_out);

    // The workspace is the host directory, at /workspace inside.
    sandbox
        .write_file("in/a.txt", b"from host\n")
        .await
        .unwrap();
    let out = sandbox
        .run("pwd; cat in/a.txt; echo made > /workspace/b.txt", None)
        .await
        .unwrap();
    assert_eq!(out.stdout, "/workspace\nfrom host\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "made\n"
    );
    assert!(sandbox.read_file("../outside").await.is_err());

    // Writes outside the workspace stay in the container.
    let marker = format!("/etc/openmanus-docker-{}", std::process::id());
    sandbox
        .run(&format!("echo x > {marker}"), None)
        .await
        .unwrap();
    assert!(!std::path::Path::new(&marker).exists());

    // No network: only the loopback interface exists.
    let out = sandbox.run("ls /sys/class/net", None).await.unwrap();
    assert_eq!(out.stdout.trim(), "lo");

    // The timeout kills the command.
    let started = Instant::now();
    let out = sandbox
        .run(
            "echo start; sleep 30; echo never",
            Some(Duration::from_secs(2)),
        )
        .await
        .unwrap();
    assert!(out.timed_out, "{out:?}");
    assert_eq!(out.exit_code, None);
    assert_eq!(out.stdout, "start\n");
    assert!(started.elapsed() < Duration::from_secs(20));

    // Sessions keep their state between inputs.
    sandbox.start_session("s").await.unwrap();
    sandbox.send_to_session("s", "cd in; X=42\n").await.unwrap();
    sandbox
        .send_to_session("s", "echo \"$X in $(pwd)\"; echo END\n")
        .await
        .unwrap();
    let read = sandbox
        .read_session("s", Some("END"), Duration::from_secs(10))
        .await
        .unwrap();
    assert!(read.matched);
    assert_eq!(read.stdout, "42 in /workspace/in\nEND\n");
    assert_eq!(sandbox.list_sessions().await, ["s"]);
    sandbox.kill_session("s").await.unwrap();
    assert!(sandbox.list_sessions().await.is_empty());

    // Cleanup removes the container.
    sandbox.cleanup().await.unwrap();
    let docker = agent_sandbox::connect_docker(None).await.unwrap();
    assert!(
        docker
            .inspect_container(
                &container,
                None::<bollard::query_parameters::InspectContainerOptions>
            )
            .await
            .is_err()
    );
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn sandbox_shell_runs_on_the_docker_backend() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox: Arc<dyn Sandbox> = Arc::new(sandbox(dir.path(), false).await);
    let shell = SandboxShell::new(Arc::clone(&sandbox), "/workspace");
    let ctx = ToolContext::default();
    let result = shell
        .execute(
            json!({"action": "execute_command", "blocking": true, "session_name": "main",
                   "command": "mkdir -p sub && cd sub && echo $((6*7)) > n.txt && cat n.txt"}),
            &ctx,
        )
        .await
        .unwrap();
    let value: Value = serde_json::from_str(result.output.as_deref().unwrap()).unwrap();
    assert_eq!(value["output"], "42");
    assert_eq!(value["exit_code"], 0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sub/n.txt")).unwrap(),
        "42\n"
    );
    shell.cleanup().await.unwrap();
    sandbox.cleanup().await.unwrap();
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn the_container_runs_as_the_workspace_owner() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    // Give the workspace to an ordinary user when we can (CI runs as root).
    let owner = if std::fs::metadata("/").unwrap().uid() == 0 && nix_chown(dir.path(), 1000, 1000) {
        1000
    } else {
        std::fs::metadata(dir.path()).unwrap().uid()
    };
    let sandbox = sandbox(dir.path(), false).await;
    let out = sandbox
        .run("id -u; echo made > mine.txt && echo written", None)
        .await
        .unwrap();
    assert_eq!(out.stdout, format!("{owner}\nwritten\n"), "{out:?}");
    assert_eq!(
        std::fs::metadata(dir.path().join("mine.txt"))
            .unwrap()
            .uid(),
        owner
    );
    sandbox.cleanup().await.unwrap();
}

/// `chown` through the command (the tests have no libc binding); false when it fails.
fn nix_chown(path: &std::path::Path, uid: u32, gid: u32) -> bool {
    std::process::Command::new("chown")
        .arg(format!("{uid}:{gid}"))
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}
