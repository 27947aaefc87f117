//! `openmanus` with `[sandbox] backend = "docker"` against a real Docker engine: SWE's bash
//! with `use_sandbox = true`, SandboxManus, Ctrl-C while SandboxManus's display is up in the
//! container, and the container of a run killed with SIGKILL, reaped by the next start.
//! Ignored in a plain `cargo test`; `cargo xtask ci` runs them (`--ignored`) when an engine
//! answers, with the images it imports (`OPENMANUS_DOCKER_IMAGE`: busybox and bash;
//! `OPENMANUS_DOCKER_DESKTOP_IMAGE`: the same with Xvfb and python3-tk).

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

/// The ids of the containers `filter` (`docker ps --filter`) selects, running or not.
async fn containers_where(filter: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args(["ps", "-aq", "--filter", filter])
        .output()
        .await
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Containers made from the test image, running or not.
async fn containers() -> Vec<String> {
    containers_where(&format!("ancestor={}", image())).await
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

/// The containers labelled as owned by process `pid`, running or not.
async fn owned_by(pid: u32) -> Vec<String> {
    containers_where(&format!("label=org.openmanus.owner.pid={pid}")).await
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn a_sigkilled_runs_container_is_gone_after_the_next_start() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let server = MockOpenAi::start().await.unwrap();
    config(dir.path(), &server, true);
    // The run's bash, in its container, says it started, then waits.
    server.push(call(
        "c1",
        "bash",
        json!({"command": "echo up > started.txt; sleep 600"}),
    ));
    let mut killed = Command::new(BIN)
        .args(["--agent", "swe", "--prompt", "wait"])
        .current_dir(dir.path())
        .env_remove("OPENMANUS_CONFIG")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = killed.id().unwrap();
    let started = dir.path().join("workspace/started.txt");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the bash call never ran"
        );
        assert!(
            killed.try_wait().unwrap().is_none(),
            "openmanus ended early"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let orphan = owned_by(pid).await;
    assert_eq!(orphan.len(), 1, "the run's one container: {orphan:?}");
    // SIGKILL: no clean-up runs, and the container stays behind.
    killed.start_kill().unwrap();
    killed.wait().await.unwrap();
    assert_eq!(
        owned_by(pid).await,
        orphan,
        "the container outlives its owner"
    );

    // The next start of a Docker sandbox removes it.
    let server = MockOpenAi::start().await.unwrap();
    config(dir.path(), &server, true);
    server.push(Completion::tool_calls(
        Some("Done.".into()),
        [ToolCall::new("t", "terminate", r#"{"status":"success"}"#)],
    ));
    let output = run(dir.path(), &["--agent", "swe", "--prompt", "finish"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        owned_by(pid).await.is_empty(),
        "the orphan was reaped:\n{stderr}"
    );
    server.verify().unwrap();
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
    // The image has no Xvfb: the user is told why computer_use is missing.
    assert!(
        stderr.contains("computer_use is not offered because the sandbox has no display: the X server `Xvfb` is not installed in the Docker image"),
        "{stderr}"
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

fn desktop_image() -> String {
    std::env::var("OPENMANUS_DOCKER_DESKTOP_IMAGE").expect(
        "OPENMANUS_DOCKER_DESKTOP_IMAGE names the display test image (cargo xtask ci sets it)",
    )
}

/// Whether a host process is alive (not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// The host pids of the processes whose command line contains `needle` (`docker top`) in the
/// running containers of the display image that mount `workspace`.
async fn in_desktop_containers(workspace: &std::path::Path, needle: &str) -> Vec<u32> {
    let out = Command::new("docker")
        .args([
            "ps",
            "-q",
            "--filter",
            &format!("ancestor={}", desktop_image()),
        ])
        .output()
        .await
        .unwrap();
    let mut pids = Vec::new();
    for id in String::from_utf8_lossy(&out.stdout).lines() {
        let mounts = Command::new("docker")
            .args(["inspect", "-f", "{{range .Mounts}}{{.Source}}\n{{end}}", id])
            .output()
            .await
            .unwrap();
        if !String::from_utf8_lossy(&mounts.stdout)
            .lines()
            .any(|source| std::path::Path::new(source) == workspace)
        {
            continue;
        }
        let top = Command::new("docker")
            .args(["top", id, "-eo", "pid,args"])
            .output()
            .await
            .unwrap();
        pids.extend(
            String::from_utf8_lossy(&top.stdout)
                .lines()
                .skip(1)
                .filter(|line| line.contains(needle))
                .filter_map(|line| line.split_whitespace().next()?.parse::<u32>().ok()),
        );
    }
    pids
}

const APP: &str = include_str!("../../agent-desktop/tests/fixtures/clicker.py");

/// Ctrl-C (once or twice) while SandboxManus's Tk application is on the container's display:
/// `openmanus` exits, and the X server, the application and the container are gone.
async fn interrupt_with_the_docker_desktop_up(presses: usize) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    use std::time::Instant;

    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let server = MockOpenAi::start().await.unwrap();
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::create_dir_all(root.join("workspace")).unwrap();
    let workspace = root.join("workspace").canonicalize().unwrap();
    std::fs::write(
        root.join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\nmax_attempts = 1\n\n[sandbox]\nbackend = \"docker\"\nimage = \"{}\"\ntimeout = 600\n",
            server.base_url(),
            desktop_image()
        ),
    )
    .unwrap();
    server
        .push(call(
            "f1",
            "sandbox_files",
            json!({"action": "create_file", "file_path": "clicker.py", "file_contents": APP}),
        ))
        .push(call(
            "s1",
            "sandbox_shell",
            json!({"action": "execute_command", "session_name": "app",
                   "command": "/usr/bin/python3 clicker.py ready.txt"}),
        ))
        // The run then sits in a long blocking command while the app is on the display.
        .push(call(
            "s2",
            "sandbox_shell",
            json!({"action": "execute_command", "session_name": "wait", "blocking": true,
                   "timeout": 600, "command": "sleep 600"}),
        ));
    let log = root.join("stderr.log");
    let mut child = Command::new(BIN)
        .current_dir(root)
        .env_remove("OPENMANUS_CONFIG")
        .env("NO_COLOR", "1")
        .args(["--agent", "sandbox", "--prompt", "open the clicker"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let openmanus_pid = child.id().unwrap();
    let openmanus = Pid::from_raw(i32::try_from(openmanus_pid).unwrap());
    let said = || std::fs::read_to_string(&log).unwrap_or_default();

    let deadline = Instant::now() + Duration::from_secs(120);
    let pids = loop {
        let x_server = in_desktop_containers(&workspace, "Xvfb :0").await;
        let app = in_desktop_containers(&workspace, "clicker.py").await;
        let sleeping = in_desktop_containers(&workspace, "sleep 600").await;
        if workspace.join("ready.txt").exists()
            && x_server.len() == 1
            && app.len() == 1
            && !sleeping.is_empty()
        {
            break [x_server[0], app[0]];
        }
        assert!(
            Instant::now() < deadline,
            "the desktop and the app never came up (Xvfb {x_server:?}, app {app:?}); openmanus said:\n{}",
            said()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(pids.iter().all(|&pid| alive(pid)));
    let socket_dirs = display_dirs(openmanus_pid);
    assert_eq!(socket_dirs.len(), 1, "{socket_dirs:?}");

    kill(openmanus, Signal::SIGINT).unwrap();
    if presses == 2 {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !said().contains("interrupted") {
            assert!(
                Instant::now() < deadline,
                "the first Ctrl-C was not reported:\n{}",
                said()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        kill(openmanus, Signal::SIGINT).unwrap();
    }
    let status = tokio::time::timeout(Duration::from_secs(90), child.wait())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "openmanus did not exit after {presses} Ctrl-C(s):\n{}",
                said()
            )
        })
        .unwrap();
    assert!(!status.success(), "{status:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while pids.iter().any(|&pid| alive(pid)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left: Vec<u32> = pids.iter().copied().filter(|&pid| alive(pid)).collect();
    assert!(
        left.is_empty(),
        "X processes survived {presses} Ctrl-C(s): {left:?}; openmanus said:\n{}",
        said()
    );
    assert!(
        in_desktop_containers(&workspace, "").await.is_empty(),
        "a container of the display image is still running"
    );
    assert!(
        socket_dirs.iter().all(|dir| !dir.exists()),
        "{socket_dirs:?} survived {presses} Ctrl-C(s)"
    );
}

/// The display socket directories (`$TMPDIR/openmanus-display-<pid>-…`) of the process `pid`.
fn display_dirs(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("openmanus-display-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn one_ctrl_c_removes_the_docker_display_and_its_app() {
    interrupt_with_the_docker_desktop_up(1).await;
}

#[tokio::test]
#[ignore = "needs a Docker engine; cargo xtask ci runs it when one answers"]
async fn two_ctrl_cs_remove_the_docker_display_and_its_app() {
    interrupt_with_the_docker_desktop_up(2).await;
}
