//! Two Ctrl-Cs while a bash child, a Python child and MCP stdio servers are alive: no process of
//! the run survives, checked by pid and by process group (issue 14: one process supervisor, one
//! emergency shutdown), not even those in sessions of their own (issue 21). One Ctrl-C: the run
//! is cancelled, the session closed, and a Python child in a session of its own dies too.
//!
//! Manus has `python_execute` but no `bash`; its bash here is the one of our own MCP server
//! (`openmanus mcp-server` over stdio), in a process group of that server's making: the
//! emergency shutdown must reach it although it is no group of the run's own.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_testkit::{Completion, MockOpenAi};
use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::json;
use tokio::process::Command;

use crate::common::{alive, call};

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");

/// A minimal MCP stdio server that will not go away by itself: it ignores SIGTERM, keeps running
/// when its standard input closes, and starts a grandchild in its process group.
const STUBBORN_MCP_SERVER: &str = r#"
import json, os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
here = os.path.dirname(os.path.abspath(__file__))
def note(name, pid):
    with open(os.path.join(here, name), "w") as f:
        f.write(f"{pid}\n")
grandchild = subprocess.Popen(["sleep", "300"])
note("mcp.pid", os.getpid())
note("mcp-child.pid", grandchild.pid)
def reply(id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if id is None:
        continue
    if method == "initialize":
        reply(id, {"protocolVersion": message["params"]["protocolVersion"],
                   "capabilities": {"tools": {}},
                   "serverInfo": {"name": "stubborn", "version": "1"}})
    elif method == "tools/list":
        reply(id, {"tools": [{"name": "noop", "description": "Does nothing.",
                              "inputSchema": {"type": "object"}}]})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id,
                                     "error": {"code": -32601, "message": "no"}}) + "\n")
        sys.stdout.flush()
while True:
    time.sleep(1)
"#;

/// Whether some process not yet a zombie is in the process group `pgid`.
fn group_alive(pgid: i32) -> bool {
    if killpg(Pid::from_raw(pgid), None) == Err(Errno::ESRCH) {
        return false;
    }
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                let fields: Vec<&str> = stat
                    .rsplit(')')
                    .next()
                    .unwrap_or_default()
                    .split_whitespace()
                    .collect();
                // After the command: state, ppid, pgrp.
                fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str())
            })
        })
}

/// The process group of `pid` (field 5 of `/proc/<pid>/stat`).
fn group_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    fields[2].parse().unwrap()
}

/// The pid written to `path` (waited for) by a process under `openmanus`, as this process sees
/// it (a confined tool writes its PID namespace's number); `log` is openmanus's stderr, shown on
/// failure.
async fn pid_in(path: &Path, log: &Path, openmanus: &tokio::process::Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    let ancestor = i32::try_from(openmanus.id().unwrap()).unwrap();
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            let inner = text.trim().parse().unwrap();
            return agent_process::host_pid(inner, ancestor)
                .unwrap_or_else(|| panic!("no process {inner} runs under openmanus"));
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared; openmanus said:\n{}",
            path.display(),
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn two_ctrl_cs_leave_no_bash_python_or_mcp_process_alive() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::create_dir_all(root.join("workspace")).unwrap();
    let workspace = root.join("workspace").canonicalize().unwrap();
    std::fs::write(
        root.join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-cli-test\"\nmax_tokens = 1024\ntemperature = 0.0\nmax_attempts = 1\n",
            server.base_url()
        ),
    )
    .unwrap();
    let script = root.join("stubborn_mcp.py");
    std::fs::write(&script, STUBBORN_MCP_SERVER).unwrap();
    std::fs::write(
        root.join("config/mcp.json"),
        json!({"mcpServers": {
            "stubborn": {"type": "stdio", "command": "python3", "args": [script]},
            "local": {"type": "stdio", "command": BIN, "args": ["mcp-server"]}
        }})
        .to_string(),
    )
    .unwrap();
    // The Python interpreter starts a child and returns; then the MCP server's bash blocks, deaf
    // to INT and TERM, so the clean cancel of the first Ctrl-C has to wait and the second one
    // cuts it short.
    server.push(Completion::tool_calls(
        None,
        [
            call(
                "c1",
                "python_execute",
                json!({"code": "import os, subprocess\nopen('py.pid', 'w').write(f'{os.getpid()}\\n')\nchild = subprocess.Popen(['sleep', '300'])\nopen('py-child.pid', 'w').write(f'{child.pid}\\n')\nescaped = subprocess.Popen(['sleep', '300'], start_new_session=True)\nopen('py-escaped.pid', 'w').write(f'{escaped.pid}\\n')\nprint('started')"}),
            ),
            call(
                "c2",
                "mcp_local_bash",
                json!({"command": format!("cd {}; trap '' TERM INT; echo $$ > bash.pid; sleep 300 & echo $! > bash-child.pid; setsid sleep 300 & echo $! > bash-escaped.pid; sleep 300", workspace.display())}),
            ),
        ],
    ));
    let log = root.join("stderr.log");
    let mut child = Command::new(BIN)
        .current_dir(root)
        .env_remove("OPENMANUS_CONFIG")
        .env("NO_COLOR", "1")
        .args(["--prompt", "start everything and wait"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();

    let leaders = [
        (
            "the MCP server",
            pid_in(&root.join("mcp.pid"), &log, &child).await,
        ),
        (
            "the Python interpreter",
            pid_in(&workspace.join("py.pid"), &log, &child).await,
        ),
        (
            "bash",
            pid_in(&workspace.join("bash.pid"), &log, &child).await,
        ),
    ];
    let children = [
        (
            "the MCP server's child",
            pid_in(&root.join("mcp-child.pid"), &log, &child).await,
        ),
        (
            "the Python child",
            pid_in(&workspace.join("py-child.pid"), &log, &child).await,
        ),
        (
            "bash's background job",
            pid_in(&workspace.join("bash-child.pid"), &log, &child).await,
        ),
        (
            "the Python child in a session of its own",
            pid_in(&workspace.join("py-escaped.pid"), &log, &child).await,
        ),
        (
            "bash's setsid job",
            pid_in(&workspace.join("bash-escaped.pid"), &log, &child).await,
        ),
    ];
    for (what, pid) in leaders.iter().chain(&children) {
        assert!(
            alive(*pid),
            "{what} ({pid}) is not running before the interrupt"
        );
    }
    // Each tool runs in a process group of its own: led by the tool itself, or, when confined,
    // by the init of its sandbox.
    let groups: Vec<(&str, i32)> = leaders
        .iter()
        .map(|(what, pid)| (*what, group_of(*pid)))
        .collect();
    for (what, pgid) in &groups {
        assert!(group_alive(*pgid), "{what}'s process group is gone");
        assert_ne!(
            *pgid,
            group_of(i32::try_from(child.id().unwrap()).unwrap()),
            "{what} is in openmanus's own process group"
        );
    }

    let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    kill(pid, Signal::SIGINT).unwrap();
    // Wait for the first press to be seen before the second one.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = String::new();
    while !seen.contains("interrupted") {
        assert!(
            Instant::now() < deadline,
            "the first Ctrl-C was not reported:\n{seen}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        seen = std::fs::read_to_string(&log).unwrap_or_default();
    }
    kill(pid, Signal::SIGINT).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("openmanus exited after the second Ctrl-C")
        .unwrap();
    assert_eq!(status.code(), Some(130), "stderr:\n{seen}");

    let deadline = Instant::now() + Duration::from_secs(20);
    let survivors = || {
        leaders
            .iter()
            .chain(&children)
            .filter(|(_, pid)| alive(*pid))
            .map(|(what, _)| *what)
            .chain(
                groups
                    .iter()
                    .filter(|(_, pgid)| group_alive(*pgid))
                    .map(|(what, _)| *what),
            )
            .collect::<Vec<_>>()
    };
    while !survivors().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = survivors();
    if !left.is_empty() {
        // Do not leave them behind when the test fails.
        for (_, pgid) in &leaders {
            let _ = killpg(Pid::from_raw(*pgid), Signal::SIGKILL);
        }
    }
    assert!(left.is_empty(), "survived two Ctrl-Cs: {left:?}");
}

#[tokio::test]
async fn one_ctrl_c_leaves_no_process_that_left_its_group() {
    let server = MockOpenAi::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::create_dir_all(root.join("workspace")).unwrap();
    let workspace = root.join("workspace").canonicalize().unwrap();
    std::fs::write(
        root.join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\napi_key = \"sk-cli-test\"\nmax_tokens = 1024\ntemperature = 0.0\nmax_attempts = 1\n",
            server.base_url()
        ),
    )
    .unwrap();
    // The interpreter starts a child in a session of its own, orphans it (the intermediate
    // process exits), then blocks until the Ctrl-C.
    server.push(Completion::tool_calls(
        None,
        [call(
            "c1",
            "python_execute",
            json!({"code": "import os, subprocess, time\nmiddle = subprocess.Popen(['sh', '-c', 'setsid sleep 300 >/dev/null 2>&1 & echo $! > escaped.pid'])\nmiddle.wait()\nopen('py.pid', 'w').write(f'{os.getpid()}\\n')\ntime.sleep(300)"}),
        )],
    ));
    let log = root.join("stderr.log");
    let mut child = Command::new(BIN)
        .current_dir(root)
        .env_remove("OPENMANUS_CONFIG")
        .env("NO_COLOR", "1")
        .args(["--prompt", "start a server and wait"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let interpreter = pid_in(&workspace.join("py.pid"), &log, &child).await;
    let escaped = pid_in(&workspace.join("escaped.pid"), &log, &child).await;
    assert!(alive(escaped), "the escapee is not running");
    let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    kill(pid, Signal::SIGINT).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("openmanus exited after one Ctrl-C")
        .unwrap();
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(status.code(), Some(130), "stderr:\n{seen}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while (alive(escaped) || alive(interpreter)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = [("the escapee", escaped), ("the interpreter", interpreter)]
        .into_iter()
        .filter(|(_, pid)| alive(*pid))
        .collect::<Vec<_>>();
    for (_, pid) in &left {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    assert!(left.is_empty(), "survived one Ctrl-C: {left:?}\n{seen}");
}
