//! Manus and SWEAgent with `use_sandbox`: the same scenario gives the same observations with and
//! without the sandbox (bubblewrap), and only the sandbox stops writes outside the workspace.
//! Where bubblewrap cannot run, the tests fail with the probe's message (CI installs it).

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use agent_core::{Agent, Role};
use agent_sandbox::{LocalSandbox, LocalSandboxOptions};
use agent_testkit::{ScriptedModel, tool_call};
use agents::{AgentOptions, manus, swe};
use serde_json::json;

fn call(id: &str, name: &str, args: serde_json::Value) -> agent_core::ToolCall {
    tool_call(id, name, &args.to_string())
}

fn observations(messages: &[agent_core::Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text().to_owned())
        .collect()
}

async fn sandbox(workspace: &Path) -> Arc<LocalSandbox> {
    match LocalSandbox::new(LocalSandboxOptions::new(workspace).mirrored()).await {
        Ok(sandbox) => Arc::new(sandbox),
        Err(error) => panic!("the sandbox cannot run here: {error}"),
    }
}

fn options(workspace: &Path, sandbox: Option<Arc<LocalSandbox>>) -> AgentOptions {
    let mut options = AgentOptions::new(workspace);
    options.sandbox = sandbox.map(|s| s as Arc<dyn agent_sandbox::Sandbox>);
    options.python_timeout = Some(std::time::Duration::from_secs(30));
    options
}

/// Manus: python writes and reads, the editor creates, views and edits, python sees the edit.
async fn manus_scenario(sandboxed: bool) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let sandbox = if sandboxed {
        Some(sandbox(&workspace).await)
    } else {
        None
    };
    let notes = workspace.join("notes.txt");
    let made = workspace.join("sub/made.txt");
    let model = Arc::new(ScriptedModel::new());
    model
        .push_tool_calls(
            "",
            [call(
                "c1",
                "python_execute",
                json!({"code": "import os\nopen('notes.txt', 'w').write('hello world\\n')\nprint(os.getcwd() == WS, sorted(os.listdir('.')))\nx = 41"
                    .replace("WS", &format!("{:?}", workspace.display().to_string()))}),
            )],
        )
        .push_tool_calls(
            "",
            [call(
                "c2",
                "str_replace_editor",
                json!({"command": "str_replace", "path": notes, "old_str": "world", "new_str": "Rust"}),
            )],
        )
        .push_tool_calls(
            "",
            [call(
                "c3",
                "str_replace_editor",
                json!({"command": "create", "path": made, "file_text": "one\ntwo\n"}),
            )],
        )
        .push_tool_calls(
            "",
            [call(
                "c4",
                "str_replace_editor",
                json!({"command": "view", "path": workspace}),
            )],
        )
        .push_tool_calls(
            "",
            [call(
                "c5",
                "python_execute",
                json!({"code": "print(x + 1, open('notes.txt').read().strip(), open('sub/made.txt').read().split())"}),
            )],
        )
        .push_tool_calls(
            "",
            [call(
                "c6",
                "str_replace_editor",
                json!({"command": "view", "path": "/etc/hostname"}),
            )],
        )
        .push_tool_calls("Done.", [call("c7", "terminate", json!({"status": "success"}))]);
    let mut agent = manus(model, &options(&workspace, sandbox));
    let outcome = agent.run(Some("Work.".into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    let notes_text = std::fs::read_to_string(&notes).unwrap();
    // The workspace's path varies between runs; the observations are compared without it.
    let seen = observations(agent.messages())
        .into_iter()
        .map(|o| o.replace(&workspace.display().to_string(), "<ws>"))
        .collect();
    (seen, notes_text)
}

#[tokio::test]
async fn manus_sees_the_same_with_and_without_the_sandbox() {
    let (plain, plain_notes) = manus_scenario(false).await;
    let (boxed, boxed_notes) = manus_scenario(true).await;
    assert_eq!(plain, boxed);
    assert_eq!(plain_notes, "hello Rust\n");
    assert_eq!(boxed_notes, "hello Rust\n");
    assert!(plain[0].ends_with("True ['notes.txt']"), "{}", plain[0]);
    assert!(
        plain[4].ends_with("42 hello Rust ['one', 'two']"),
        "{}",
        plain[4]
    );
    // Outside the workspace, the editor refuses in both.
    assert!(plain[5].contains("Error"), "{}", plain[5]);
}

/// SWE: bash runs commands in the workspace, with the same observations.
async fn swe_scenario(sandboxed: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let sandbox = if sandboxed {
        Some(sandbox(&workspace).await)
    } else {
        None
    };
    let model = Arc::new(ScriptedModel::new());
    model
        .push_tool_calls(
            "",
            [call(
                "c1",
                "bash",
                json!({"command": "printf 'a\\nb\\n' > f.txt && wc -l < f.txt && [ \"$PWD\" = \"$WS\" ] && echo same-dir"
                    .replace("$WS", &workspace.display().to_string())}),
            )],
        )
        .push_tool_calls(
            "",
            [call(
                "c2",
                "str_replace_editor",
                json!({"command": "insert", "path": workspace.join("f.txt"), "insert_line": 2, "new_str": "c"}),
            )],
        )
        .push_tool_calls(
            "",
            [call("c3", "bash", json!({"command": "cd sub 2>/dev/null || echo no-sub; cat f.txt; exit_code=7; echo $exit_code"}))],
        )
        .push_tool_calls("Done.", [call("c4", "terminate", json!({"status": "success"}))]);
    let mut agent = swe(model, &options(&workspace, sandbox));
    let outcome = agent.run(Some("Work.".into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    observations(agent.messages())
        .into_iter()
        .map(|o| o.replace(&workspace.display().to_string(), "<ws>"))
        .collect()
}

#[tokio::test]
async fn swe_sees_the_same_with_and_without_the_sandbox() {
    let plain = swe_scenario(false).await;
    let boxed = swe_scenario(true).await;
    assert_eq!(plain, boxed);
    assert!(plain[0].contains("2\nsame-dir"), "{}", plain[0]);
    assert!(plain[2].contains("no-sub\na\nb\nc\n7"), "{}", plain[2]);
}

/// Writes a file outside the workspace with python (Manus) and bash (SWE); returns the two
/// observations.
async fn write_outside(sandboxed: bool, outside: &Path) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let sandbox = if sandboxed {
        Some(sandbox(&workspace).await)
    } else {
        None
    };
    let by_python = outside.join("by_python");
    let by_bash = outside.join("by_bash");
    let code = format!(
        "try:\n    open({:?}, 'w').write('x')\n    print('wrote')\nexcept OSError as e:\n    print('refused', type(e).__name__)",
        by_python.display().to_string()
    );
    let model = Arc::new(ScriptedModel::new());
    model
        .push_tool_calls("", [call("c1", "python_execute", json!({ "code": code }))])
        .push_tool_calls(
            "Done.",
            [call("c2", "terminate", json!({"status": "success"}))],
        );
    let mut agent = manus(model, &options(&workspace, sandbox.clone()));
    agent.run(Some("Write.".into())).await.unwrap();
    let mut seen = observations(agent.messages());

    let model = Arc::new(ScriptedModel::new());
    model
        .push_tool_calls(
            "",
            [call(
                "c1",
                "bash",
                json!({"command": format!("echo x > {} && echo wrote || echo refused", by_bash.display())}),
            )],
        )
        .push_tool_calls("Done.", [call("c2", "terminate", json!({"status": "success"}))]);
    let mut agent = swe(model, &options(&workspace, sandbox));
    agent.run(Some("Write.".into())).await.unwrap();
    seen.extend(observations(agent.messages()));
    seen
}

#[tokio::test]
async fn only_the_sandbox_stops_writes_outside_the_workspace() {
    // Outside the workspace under a host directory (bound read-only in the sandbox), and the
    // host's /tmp (the sandbox has its own).
    let beside = tempfile::tempdir_in("/var/tmp").unwrap();
    let in_tmp = tempfile::tempdir().unwrap();
    for outside in [beside.path(), in_tmp.path()] {
        let plain = write_outside(false, outside).await;
        assert!(plain[0].ends_with("wrote"), "{}", plain[0]);
        assert!(plain[2].contains("wrote"), "{}", plain[2]);
        for name in ["by_python", "by_bash"] {
            let file = outside.join(name);
            assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), "x");
            std::fs::remove_file(&file).unwrap();
        }

        let boxed = write_outside(true, outside).await;
        assert!(boxed[0].contains("refused"), "{}", boxed[0]);
        assert!(boxed[2].contains("refused"), "{}", boxed[2]);
        assert!(!outside.join("by_python").exists());
        assert!(!outside.join("by_bash").exists());
    }
}

#[tokio::test]
async fn the_sandboxed_tools_cannot_write_to_etc() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let sb = sandbox(&workspace).await;
    let model = Arc::new(ScriptedModel::new());
    model
        .push_tool_calls(
            "",
            [call(
                "c1",
                "python_execute",
                json!({"code": "try:\n    open('/etc/planted_by_test', 'w')\n    print('wrote')\nexcept OSError as e:\n    print('refused', e.errno)"}),
            )],
        )
        .push_tool_calls("Done.", [call("c2", "terminate", json!({"status": "success"}))]);
    let mut agent = manus(model, &options(&workspace, Some(sb)));
    agent.run(Some("Write.".into())).await.unwrap();
    let seen = observations(agent.messages());
    // EROFS (30): the host filesystem is read-only inside.
    assert!(seen[0].ends_with("refused 30"), "{}", seen[0]);
    assert!(!Path::new("/etc/planted_by_test").exists());
}
