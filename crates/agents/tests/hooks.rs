//! [`HookGate`] with real hook processes: changed arguments, a hook past its time limit, "ask"
//! with nobody there, and the sandbox gate behind it.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_config::{HookEvent, HookSettings};
use agent_core::ToolCall;
use agent_protocol::{Decider, PermissionDecision};
use agent_toolcall::{RunEnd, ToolGate, Verdict};
use agent_tools::{HumanInput, ToolContext, ToolError, ToolResult};
use agents::permissions::HookGate;
use async_trait::async_trait;
use serde_json::{Value, json};

/// Nobody at the terminal: every question is unanswered.
struct Nobody;

#[async_trait]
impl HumanInput for Nobody {
    async fn ask(&self, _inquire: &str) -> Result<Option<String>, ToolError> {
        Ok(None)
    }
}

fn hook(on: HookEvent, script: &str, timeout: Duration) -> HookSettings {
    HookSettings {
        on,
        command: vec!["sh".into(), "-c".into(), script.into()],
        tools: Vec::new(),
        timeout,
    }
}

fn gate(dir: &Path, hooks: Vec<HookSettings>) -> HookGate {
    HookGate::new(hooks, dir.to_path_buf(), Arc::new(Nobody), None)
}

fn bash(command: &str) -> (ToolCall, Value) {
    let args = json!({ "command": command });
    (ToolCall::new("c1", "bash", args.to_string()), args)
}

#[tokio::test]
async fn a_hook_changes_the_arguments_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let gate = gate(
        dir.path(),
        vec![hook(
            HookEvent::BeforeTool,
            r#"cat >/dev/null; echo '{"arguments": {"command": "ls -la"}, "reason": "safer"}'"#,
            Duration::from_secs(60),
        )],
    );
    let (call, args) = bash("ls");
    let Verdict::RunWith(changed, records) =
        gate.before(&call, &args, &ToolContext::default()).await
    else {
        panic!("the call runs with the hook's arguments");
    };
    assert_eq!(changed, json!({"command": "ls -la"}));
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].by, Decider::Hook);
    assert!(records[0].detail.contains("ls -la"), "{records:?}");
}

#[tokio::test]
async fn a_hook_past_its_time_limit_denies_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("hook.pid");
    let child_file = dir.path().join("child.pid");
    let gate = gate(
        dir.path(),
        vec![hook(
            HookEvent::BeforeTool,
            &format!(
                "sleep 600 & echo $! > '{}'; echo $$ > '{}'; exec sleep 600",
                child_file.display(),
                pid_file.display()
            ),
            Duration::from_secs(1),
        )],
    );
    let (call, args) = bash("echo hi");
    let Verdict::Answered(gated) = gate.before(&call, &args, &ToolContext::default()).await else {
        panic!("a hook that does not answer denies");
    };
    let error = gated.result.error.unwrap_or_default();
    assert!(error.contains("did not answer within"), "{error}");
    assert_eq!(gated.records[0].decision, PermissionDecision::Denied);
    assert_eq!(gated.records[0].by, Decider::Hook);
    // The hook (exec'd into sleep) and what it started are gone: its group was killed.
    wait_gone(&pid_file).await;
    wait_gone(&child_file).await;
}

/// Waits (bounded) until the process whose id `file` holds is gone (or a zombie).
async fn wait_gone(file: &Path) {
    let pid: i32 = std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let start = std::time::Instant::now();
    while agent_process::is_running(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "process {pid} outlived its hook"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn what_a_hook_leaves_running_goes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let child_file = dir.path().join("left.pid");
    let gate = gate(
        dir.path(),
        vec![hook(
            HookEvent::BeforeTool,
            &format!(
                "cat >/dev/null; sleep 600 >/dev/null 2>&1 & echo $! > '{}'",
                child_file.display()
            ),
            Duration::from_secs(60),
        )],
    );
    let (call, args) = bash("echo hi");
    assert!(matches!(
        gate.before(&call, &args, &ToolContext::default()).await,
        Verdict::Run(_)
    ));
    wait_gone(&child_file).await;
}

#[tokio::test]
async fn a_hook_that_asks_with_nobody_there_denies_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let gate = gate(
        dir.path(),
        vec![hook(
            HookEvent::BeforeTool,
            r#"cat >/dev/null; echo '{"decision": "ask", "reason": "it deletes files"}'"#,
            Duration::from_secs(60),
        )],
    );
    let (call, args) = bash("rm notes.txt");
    let Verdict::Answered(gated) = gate.before(&call, &args, &ToolContext::default()).await else {
        panic!("nobody answered: denied");
    };
    assert_eq!(gated.records[0].decision, PermissionDecision::Denied);
    assert_eq!(gated.records[0].by, Decider::Policy);
    let error = gated.result.error.unwrap_or_default();
    assert!(error.contains("it deletes files"), "{error}");
}

#[tokio::test]
async fn after_and_run_end_hooks_are_told_and_only_add_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let told = dir.path().join("told.jsonl");
    let gate = gate(
        dir.path(),
        vec![
            hook(
                HookEvent::AfterTool,
                &format!(
                    r#"cat >> '{}'; echo >> '{}'; echo '{{"message": "3 files changed"}}'"#,
                    told.display(),
                    told.display()
                ),
                Duration::from_secs(60),
            ),
            // A failing after-tool hook changes nothing.
            hook(HookEvent::AfterTool, "exit 7", Duration::from_secs(60)),
            hook(
                HookEvent::RunEnd,
                &format!("cat >> '{}'; echo >> '{}'", told.display(), told.display()),
                Duration::from_secs(60),
            ),
        ],
    );
    let (call, args) = bash("git add -A");
    let gated = gate
        .after(
            &call,
            &args,
            ToolResult::success("added"),
            &ToolContext::default(),
        )
        .await;
    assert_eq!(
        gated.result.output.as_deref(),
        Some("added\n[openmanus] The hook `sh` says: 3 files changed")
    );
    assert!(gated.records.is_empty());
    gate.run_ended(&RunEnd {
        status: "finished (special tool `terminate`)".into(),
        steps: 4,
        session: Some("s-1".into()),
    })
    .await;
    let lines: Vec<Value> = std::fs::read_to_string(&told)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines[0]["hook"], "after-tool");
    assert_eq!(lines[0]["result"]["output"], "added");
    assert_eq!(lines[1]["hook"], "run-end");
    assert_eq!(lines[1]["steps"], 4);
    assert_eq!(lines[1]["session"], "s-1");
}
