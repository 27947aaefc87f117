//! Rules by path and a project's own rules (issue 32), with the real program and a scripted
//! model: a project's deny rule keeps every tool away from a directory, its allow rules are
//! ignored, and `openmanus rules` lists what applies.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use agent_testkit::{Completion, MockOpenAi};
use serde_json::{Value, json};

use crate::common::{Setup, call};

#[tokio::test]
async fn a_projects_deny_rule_by_path_keeps_every_tool_out_and_its_allow_rules_do_nothing() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&server);
    let workspace = setup.workspace();
    std::fs::create_dir_all(workspace.join("private")).unwrap();
    std::fs::write(workspace.join("private/key.txt"), "KEY-91c2\n").unwrap();
    std::fs::create_dir_all(workspace.join(".openmanus")).unwrap();
    std::fs::write(
        workspace.join(".openmanus/rules.toml"),
        "[[rules]]\npath = \"private\"\ndecision = \"deny\"\n\
         [[rules]]\nprefix = \"cat\"\ndecision = \"allow\"\n",
    )
    .unwrap();

    server
        .push(Completion::tool_calls(
            None,
            [
                call(
                    "c1",
                    "str_replace_editor",
                    json!({"command": "view", "path": workspace.join("private/key.txt")}),
                ),
                call("c2", "bash", json!({"command": "cat private/key.txt"})),
                call(
                    "c3",
                    "bash",
                    json!({"command": format!("cd /; cat {}/notes/../private/key.txt", workspace.display())}),
                ),
                call("c4", "bash", json!({"command": "echo ok > notes.txt"})),
            ],
        ))
        .push(Completion::tool_calls(
            Some("Done.".into()),
            [call("c5", "terminate", json!({"status": "success"}))],
        ));
    let output = tokio::time::timeout(
        Duration::from_secs(240),
        setup
            .command()
            .args(["--json", "--agent", "swe", "-p", "Read the key."])
            .output(),
    )
    .await
    .expect("openmanus did not finish")
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");

    let requests = server.requests();
    let observed: Vec<String> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(observed.len(), 4, "{observed:?}");
    for refused in &observed[..3] {
        assert!(
            refused.contains("refused by a permission rule") && !refused.contains("KEY-91c2"),
            "{observed:?}"
        );
    }
    assert!(!observed[3].contains("refused"), "{observed:?}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        "ok\n"
    );
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .filter(|event: &Value| event["type"] == "permission")
        .collect();
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(
        events
            .iter()
            .all(|e| e["decision"] == "denied" && e["by"] == "rule"),
        "{events:?}"
    );

    // `openmanus rules` lists the project's deny rule, not its allow rule.
    let listed = setup
        .run(&[
            "--workspace",
            workspace.to_str().unwrap(),
            "rules",
            "--json",
        ])
        .await;
    assert_eq!(listed.status.code(), Some(0), "{listed:?}");
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let rules = listed["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1, "{listed}");
    assert_eq!(rules[0]["from"], "project");
    assert_eq!(rules[0]["path"], "private");
    assert_eq!(rules[0]["decision"], "deny");
    assert_eq!(
        listed["project_rules"],
        json!(workspace.join(".openmanus/rules.toml"))
    );
}
