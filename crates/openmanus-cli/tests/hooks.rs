//! `[[permissions.hooks]]` (issue 32): the user's commands before and after each tool call and
//! at the end of a run, with the real program, a scripted model and real hook processes.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use agent_testkit::{Completion, MockOpenAi};
use serde_json::{Value, json};

use crate::common::{Setup, call};

/// Writes an executable script.
fn script(path: &std::path::Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The text of every tool message of request `index` the model was sent.
fn tool_messages(server: &MockOpenAi, index: usize) -> Vec<String> {
    server.requests()[index].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_hook_that_denies_rm_rf_stops_it_and_the_model_sees_why() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let workspace = setup.workspace();
    std::fs::create_dir_all(workspace.join("important")).unwrap();
    std::fs::write(workspace.join("important/data.txt"), "keep me\n").unwrap();

    // The guard: reads the call on standard input, keeps a copy, refuses `rm -rf` with exit 2.
    let hooks = setup.dir.path().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let seen = hooks.join("seen.jsonl");
    let guard = hooks.join("guard.sh");
    script(
        &guard,
        &format!(
            "#!/bin/sh\ninput=$(cat)\nprintf '%s\\n' \"$input\" >> '{seen}'\n\
             case \"$input\" in\n  *'rm -rf'*) echo 'rm -rf is not allowed in this project; \
             move files to trash/ instead' >&2; exit 2 ;;\nesac\nexit 0\n",
            seen = seen.display()
        ),
    );
    let ended = hooks.join("ended.json");
    let hooks_setting = format!(
        "permissions.hooks=[\
         {{on = \"before-tool\", command = [\"{guard}\"], tools = [\"bash\"]}}, \
         {{on = \"after-tool\", command = [\"sh\", \"-c\", \"echo '{{\\\"message\\\": \\\"lint: clean\\\"}}'\"], tools = [\"bash\"]}}, \
         {{on = \"run-end\", command = [\"sh\", \"-c\", \"cat > '{ended}'\"]}}]",
        guard = guard.display(),
        ended = ended.display(),
    );

    server
        .push(Completion::tool_calls(
            Some("Clean up first.".into()),
            [call("c1", "bash", json!({"command": "rm -rf important"}))],
        ))
        .push(Completion::tool_calls(
            Some("Then I will only write my notes.".into()),
            [call(
                "c2",
                "bash",
                json!({"command": "echo noted > notes.txt"}),
            )],
        ))
        .push(Completion::tool_calls(
            Some("Done.".into()),
            [call("c3", "terminate", json!({"status": "success"}))],
        ));
    let output = tokio::time::timeout(
        Duration::from_secs(240),
        setup
            .command()
            .args([
                "--json",
                "--agent",
                "swe",
                "--set",
                &hooks_setting,
                "-p",
                "Tidy the workspace.",
            ])
            .output(),
    )
    .await
    .expect("openmanus did not finish")
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");

    // Stopped: the directory is there; the next call, which the hook let through, ran.
    assert_eq!(
        std::fs::read_to_string(workspace.join("important/data.txt")).unwrap(),
        "keep me\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        "noted\n"
    );

    // The model saw why, and the after-tool hook's message on the call that ran.
    let refused = tool_messages(&server, 1);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].contains("rm -rf is not allowed in this project")
            && refused[0].contains("guard.sh")
            && refused[0].contains("did not run"),
        "{refused:?}"
    );
    let ran = tool_messages(&server, 2);
    assert!(
        ran[1].contains("The hook `sh` says: lint: clean"),
        "{ran:?}"
    );

    // The hook was given the call as documented.
    let given: Vec<Value> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(given.len(), 2, "only bash calls: {given:?}");
    assert_eq!(given[0]["hook"], "before-tool");
    assert_eq!(given[0]["tool"], "bash");
    assert_eq!(given[0]["call_id"], "c1");
    assert_eq!(
        given[0]["arguments"],
        json!({"command": "rm -rf important"})
    );
    assert_eq!(given[0]["workspace"], json!(workspace));

    // The decision is an event, by the hook.
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .filter(|event: &Value| event["type"] == "permission")
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["name"], "bash");
    assert_eq!(events[0]["decision"], "denied");
    assert_eq!(events[0]["by"], "hook");
    assert!(
        events[0]["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("rm -rf is not allowed"),
        "{events:?}"
    );

    // The hooks are told the session, the stored one.
    let listed = setup.run(&["sessions", "list", "--json"]).await;
    let session: Value = serde_json::from_str(
        String::from_utf8_lossy(&listed.stdout)
            .lines()
            .next()
            .expect("one session"),
    )
    .unwrap();
    assert!(session["id"].is_string(), "{session}");
    assert_eq!(given[0]["session"], session["id"]);

    // The run-end hook was told how the run ended.
    let end: Value = serde_json::from_str(&std::fs::read_to_string(&ended).unwrap()).unwrap();
    assert_eq!(end["session"], session["id"]);
    assert_eq!(end["hook"], "run-end");
    assert_eq!(end["steps"], 3);
    assert!(
        end["status"]
            .as_str()
            .unwrap_or_default()
            .starts_with("finished"),
        "{end}"
    );
}

#[tokio::test]
async fn a_hook_that_cannot_start_fails_closed() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let workspace = setup.workspace();
    server
        .push(Completion::tool_calls(
            None,
            [call("c1", "bash", json!({"command": "echo hi > hi.txt"}))],
        ))
        .push(Completion::tool_calls(
            Some("Done.".into()),
            [call("c2", "terminate", json!({"status": "success"}))],
        ));
    let output = setup
        .run(&[
            "--json",
            "--agent",
            "swe",
            "--set",
            "permissions.hooks=[{on = \"before-tool\", command = [\"/nonexistent/guard\"]}]",
            "-p",
            "Say hi.",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(!workspace.join("hi.txt").exists(), "the call ran unchecked");
    let refused = tool_messages(&server, 1);
    assert!(
        refused[0].contains("/nonexistent/guard") && refused[0].contains("could not start"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_hook_without_a_program_is_a_configuration_error() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let output = setup
        .run(&[
            "--set",
            "permissions.hooks=[{on = \"before-tool\", command = []}]",
            "-p",
            "x",
        ])
        .await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("permissions.hooks") && stderr.contains("names its program first"),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "the model was not asked");
}
