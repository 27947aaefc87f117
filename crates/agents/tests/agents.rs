//! Manus and SWEAgent on real tools in a temporary workspace, driven by the scripted model.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use agent_core::{Agent, Role};
use agent_testkit::{ScriptedModel, tool_call};
use agents::{AgentOptions, Snapshot, manus, swe};
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

#[tokio::test]
async fn manus_writes_a_file_with_python_edits_it_and_reports_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let model = Arc::new(ScriptedModel::new());
    let file = workspace.join("notes.txt");
    model
        .push_tool_calls(
            "Writing the file.",
            [call("c1", "python_execute", json!({"code": "open('notes.txt', 'w').write('hello world\\n')\nprint('written')"}))],
        )
        .push_tool_calls(
            "",
            [call("c2", "str_replace_editor", json!({"command": "str_replace", "path": file, "old_str": "world", "new_str": "Rust"}))],
        )
        .push_tool_calls("Done.", [call("c3", "terminate", json!({"status": "success"}))]);

    let before = Snapshot::take(&workspace);
    let mut agent = manus(model.clone(), &AgentOptions::new(&workspace));
    let outcome = agent
        .run(Some("Write notes.txt and fix it.".into()))
        .await
        .unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello Rust\n");

    let seen = observations(agent.messages());
    assert_eq!(
        seen[0],
        "Observed output of cmd `python_execute` executed:\nwritten"
    );
    assert!(
        seen[1].starts_with(&format!(
            "Observed output of cmd `str_replace_editor` executed:\nThe file {} has been edited.",
            file.display()
        )),
        "{}",
        seen[1]
    );

    let changes = before.changes(&Snapshot::take(&workspace));
    assert_eq!(changes.created, [PathBuf::from("notes.txt")]);

    // The workspace is named in the system prompt and Manus's limits are OpenManus's.
    let request = &model.requests()[0];
    assert!(
        request.system_msgs[0]
            .text()
            .contains(&workspace.display().to_string())
    );
    assert_eq!(agent.base().name, "Manus");
    assert_eq!(agent.base().max_steps, 20);
    assert_eq!(agent.core().max_observe, Some(10_000));
}

#[tokio::test]
async fn manus_file_tools_are_confined_to_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let model = Arc::new(ScriptedModel::new());
    model
        .push_tool_calls("", [call("c1", "str_replace_editor", json!({"command": "create", "path": dir.path().join("outside.txt"), "file_text": "x"}))])
        .push_tool_calls("", [call("c2", "terminate", json!({"status": "failure"}))]);
    let mut agent = manus(model, &AgentOptions::new(&workspace));
    agent.run(Some("escape".into())).await.unwrap();
    assert!(!dir.path().join("outside.txt").exists());
    assert!(
        observations(agent.messages())[0].contains("outside the workspace root"),
        "{:?}",
        observations(agent.messages())
    );
}

#[tokio::test]
async fn swe_runs_bash_in_the_workspace_without_a_next_step_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let model = Arc::new(ScriptedModel::new());
    model
        .push_tool_calls(
            "List first.",
            [call(
                "c1",
                "bash",
                json!({"command": "pwd && echo data > out.txt && ls"}),
            )],
        )
        .push_tool_calls("", [call("c2", "terminate", json!({"status": "success"}))]);
    let mut agent = swe(model.clone(), &AgentOptions::new(&workspace));
    let outcome = agent.run(Some("Make out.txt".into())).await.unwrap();
    assert!(outcome.is_finished());
    assert_eq!(
        observations(agent.messages())[0],
        format!(
            "Observed output of cmd `bash` executed:\n{}\nout.txt\n[exit code: 0]",
            workspace.display()
        )
    );
    let requests = model.requests();
    assert_eq!(
        requests[0].tool_names(),
        ["bash", "str_replace_editor", "terminate"]
    );
    assert_eq!(requests[0].messages.len(), 1, "no next-step prompt is sent");
    assert_eq!(agent.base().name, "swe");
    assert_eq!(agent.core().max_observe, None);
}
