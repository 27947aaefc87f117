//! Ctrl-C while SandboxManus has its desktop up: the sandbox's X server (Xvfb) and the X
//! application the agent started on it are gone once `openmanus` exits, after one Ctrl-C (the
//! clean cancel and session close) and after two (the emergency shutdown). The processes are
//! found by pid below the `openmanus` this test started, never by machine-wide counts.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_testkit::{Completion, MockOpenAi};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use tokio::process::Command;

use crate::common::{alive, call, display_dirs};

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");
const APP: &str = include_str!("../../agent-desktop/tests/fixtures/clicker.py");

/// Processes below `ancestor` whose command line contains `needle`.
fn below(ancestor: i32, needle: &str) -> Vec<i32> {
    let parent_of = |pid: i32| -> Option<i32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(needle)
            })
        })
        .filter(|&pid| {
            let mut at = pid;
            for _ in 0..64 {
                match parent_of(at) {
                    Some(p) if p == ancestor => return true,
                    Some(p) if p > 1 => at = p,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

async fn interrupt_with_the_desktop_up(presses: usize) {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::create_dir_all(root.join("workspace")).unwrap();
    let workspace = root.join("workspace").canonicalize().unwrap();
    std::fs::write(
        root.join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-cli-test\"\nmax_attempts = 1\n",
            server.base_url()
        ),
    )
    .unwrap();
    server
        .push(Completion::tool_calls(
            None,
            [call(
                "f1",
                "sandbox_files",
                json!({"action": "create_file", "file_path": "clicker.py", "file_contents": APP}),
            )],
        ))
        .push(Completion::tool_calls(
            None,
            [call(
                "s1",
                "sandbox_shell",
                json!({"action": "execute_command", "session_name": "app",
                       "command": "/usr/bin/python3 clicker.py ready.txt"}),
            )],
        ))
        // The run then sits in a long blocking command while the app is on the display.
        .push(Completion::tool_calls(
            None,
            [call(
                "s2",
                "sandbox_shell",
                json!({"action": "execute_command", "session_name": "wait", "blocking": true,
                       "timeout": 600, "command": "sleep 600"}),
            )],
        ));
    let log = root.join("stderr.log");
    let mut child = Command::new(BIN)
        .current_dir(root)
        .env_remove("OPENMANUS_CONFIG")
        .env("NO_COLOR", "1")
        .args(["--agent", "sandbox", "--prompt", "open the clicker"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let openmanus = i32::try_from(child.id().unwrap()).unwrap();
    let said = |log: &Path| std::fs::read_to_string(log).unwrap_or_default();

    // Wait (generously) for the app to be on the display and the run to sit in `sleep`.
    let deadline = Instant::now() + Duration::from_secs(120);
    let (x_server, app) = loop {
        let x_server = below(openmanus, "Xvfb");
        let app = below(openmanus, "clicker.py");
        if workspace.join("ready.txt").exists()
            && !x_server.is_empty()
            && !app.is_empty()
            && !below(openmanus, "sleep 600").is_empty()
        {
            break (x_server, app);
        }
        assert!(
            Instant::now() < deadline,
            "the desktop and the app never came up (ready.txt: {}, Xvfb: {x_server:?}, app: {app:?}, sleep: {:?}); openmanus said:\n{}",
            workspace.join("ready.txt").exists(),
            below(openmanus, "sleep 600"),
            said(&log)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let pids: Vec<i32> = x_server.iter().chain(&app).copied().collect();
    assert!(pids.iter().all(|&pid| alive(pid)));
    let socket_dirs = display_dirs(child.id().unwrap());
    assert_eq!(socket_dirs.len(), 1, "{socket_dirs:?}");

    let pid = Pid::from_raw(openmanus);
    kill(pid, Signal::SIGINT).unwrap();
    if presses == 2 {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !said(&log).contains("interrupted") {
            assert!(
                Instant::now() < deadline,
                "the first Ctrl-C was not reported:\n{}",
                said(&log)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        kill(pid, Signal::SIGINT).unwrap();
    }
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "openmanus did not exit after {presses} Ctrl-C(s):\n{}",
                said(&log)
            )
        })
        .unwrap();
    assert!(!status.success(), "{status:?}");

    let deadline = Instant::now() + Duration::from_secs(30);
    while pids.iter().any(|&pid| alive(pid)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left: Vec<i32> = pids.iter().copied().filter(|&pid| alive(pid)).collect();
    if !left.is_empty() {
        for &pid in &left {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    assert!(
        left.is_empty(),
        "X processes survived {presses} Ctrl-C(s): {left:?} (Xvfb {x_server:?}, app {app:?})"
    );
    // The display's socket directory goes too, also on the emergency path.
    assert!(
        socket_dirs.iter().all(|dir| !dir.exists()),
        "{socket_dirs:?} survived {presses} Ctrl-C(s)"
    );
}

#[tokio::test]
async fn one_ctrl_c_stops_the_display_and_its_app() {
    interrupt_with_the_desktop_up(1).await;
}

#[tokio::test]
async fn two_ctrl_cs_stop_the_display_and_its_app() {
    interrupt_with_the_desktop_up(2).await;
}
