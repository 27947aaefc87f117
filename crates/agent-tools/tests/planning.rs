//! `planning` through the real agent path: every command, every message of spec §4.6, and the
//! plans as typed data.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_core::{Agent, Role};
use agent_testkit::{ScriptedModel, tool_call};
use agent_toolcall::ToolCallAgent;
use agent_tools::{PlanningTool, StepStatus, Tool};
use serde_json::{Value, json};

/// Runs one agent step per call (then `terminate`) and returns each call's observation.
async fn observe(tool: &PlanningTool, calls: &[Value]) -> Vec<String> {
    let model = Arc::new(ScriptedModel::new());
    for (i, args) in calls.iter().enumerate() {
        model.push_tool_calls(
            "",
            [tool_call(&format!("c{i}"), "planning", &args.to_string())],
        );
    }
    model.push_tool_calls(
        "",
        [tool_call("end", "terminate", r#"{"status":"success"}"#)],
    );
    let mut agent = ToolCallAgent::new(model)
        .with_tool(tool.clone())
        .with_max_steps(50);
    let outcome = agent.run(Some("plan".into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    let mut observations: Vec<String> = agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text().to_owned())
        .collect();
    observations.pop(); // terminate
    observations
}

fn ok(text: &str) -> String {
    format!("Observed output of cmd `planning` executed:\n{text}")
}

fn err(text: &str) -> String {
    ok(&format!("Error: {text}"))
}

#[test]
fn schema_snapshot() {
    assert_eq!(
        serde_json::to_value(PlanningTool::new().to_param()).unwrap(),
        json!({
            "type": "function",
            "function": {
                "name": "planning",
                "description": "Create and manage a plan for a complex task: create a plan of steps, update it, list or fetch plans, choose the active plan, mark the progress of each step, and delete plans.",
                "parameters": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "command": {"type": "string", "description": "The command to run.",
                            "enum": ["create", "update", "list", "get", "set_active", "mark_step", "delete"]},
                        "plan_id": {"type": "string", "description": "The plan's id. Required for create, update, set_active and delete; get and mark_step use the active plan when it is omitted."},
                        "title": {"type": "string", "description": "The plan's title. Required for create; optional for update."},
                        "steps": {"type": "array", "items": {"type": "string"}, "description": "The step texts. Required for create; optional for update (replaces the steps)."},
                        "step_index": {"type": "integer", "format": "int64", "description": "The 0-based index of the step to mark. Required for mark_step."},
                        "step_status": {"type": "string", "description": "The new status of the step, for mark_step.",
                            "enum": ["not_started", "in_progress", "completed", "blocked"]},
                        "step_notes": {"type": "string", "description": "Notes for the step, for mark_step."}
                    },
                    "required": ["command"]
                }
            }
        })
    );
}

#[tokio::test]
async fn the_happy_path_with_exact_texts() {
    let tool = PlanningTool::new();
    let observations = observe(
        &tool,
        &[
            json!({"command": "list"}),
            json!({"command": "create", "plan_id": "p1", "title": "Trip", "steps": ["book", "pack", "go"]}),
            json!({"command": "mark_step", "step_index": 0, "step_status": "completed", "step_notes": "booked"}),
            json!({"command": "mark_step", "plan_id": "p1", "step_index": 1, "step_status": "in_progress"}),
            json!({"command": "create", "plan_id": "p2", "title": "Other", "steps": ["x"]}),
            json!({"command": "list"}),
            json!({"command": "set_active", "plan_id": "p1"}),
            json!({"command": "update", "plan_id": "p1", "steps": ["book", "repack", "go"]}),
            json!({"command": "get"}),
            json!({"command": "delete", "plan_id": "p1"}),
            json!({"command": "list"}),
        ],
    )
    .await;
    let trip = |body: &str| format!("Plan: Trip (ID: p1)\n====================\n\n{body}");
    let expected = [
        ok("No plans available. Create a plan with the 'create' command."),
        ok(&format!(
            "Plan created successfully with ID: p1\n\n{}",
            trip(
                "Progress: 0/3 steps completed (0.0%)\nStatus: 0 completed, 0 in progress, 0 blocked, 3 not started\n\nSteps:\n0. [ ] book\n1. [ ] pack\n2. [ ] go\n"
            )
        )),
        ok(&format!(
            "Step 0 updated in plan 'p1'.\n\n{}",
            trip(
                "Progress: 1/3 steps completed (33.3%)\nStatus: 1 completed, 0 in progress, 0 blocked, 2 not started\n\nSteps:\n0. [✓] book\n   Notes: booked\n1. [ ] pack\n2. [ ] go\n"
            )
        )),
        ok(&format!(
            "Step 1 updated in plan 'p1'.\n\n{}",
            trip(
                "Progress: 1/3 steps completed (33.3%)\nStatus: 1 completed, 1 in progress, 0 blocked, 1 not started\n\nSteps:\n0. [✓] book\n   Notes: booked\n1. [→] pack\n2. [ ] go\n"
            )
        )),
        ok(
            "Plan created successfully with ID: p2\n\nPlan: Other (ID: p2)\n=====================\n\nProgress: 0/1 steps completed (0.0%)\nStatus: 0 completed, 0 in progress, 0 blocked, 1 not started\n\nSteps:\n0. [ ] x\n",
        ),
        ok(
            "Available plans:\n• p1: Trip - 1/3 steps completed\n• p2 (active): Other - 0/1 steps completed\n",
        ),
        ok(&format!(
            "Plan 'p1' is now the active plan.\n\n{}",
            trip(
                "Progress: 1/3 steps completed (33.3%)\nStatus: 1 completed, 1 in progress, 0 blocked, 1 not started\n\nSteps:\n0. [✓] book\n   Notes: booked\n1. [→] pack\n2. [ ] go\n"
            )
        )),
        // A step keeps its status only when the same text is at the same index.
        ok(&format!(
            "Plan updated successfully: p1\n\n{}",
            trip(
                "Progress: 1/3 steps completed (33.3%)\nStatus: 1 completed, 0 in progress, 0 blocked, 2 not started\n\nSteps:\n0. [✓] book\n   Notes: booked\n1. [ ] repack\n2. [ ] go\n"
            )
        )),
        ok(&trip(
            "Progress: 1/3 steps completed (33.3%)\nStatus: 1 completed, 0 in progress, 0 blocked, 2 not started\n\nSteps:\n0. [✓] book\n   Notes: booked\n1. [ ] repack\n2. [ ] go\n",
        )),
        ok("Plan 'p1' has been deleted."),
        ok("Available plans:\n• p2: Other - 0/1 steps completed\n"),
    ];
    assert_eq!(observations, expected);

    // The same plans, as typed data.
    assert_eq!(
        tool.active_plan_id(),
        None,
        "deleting the active plan clears it"
    );
    let plans = tool.plans();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].steps, ["x"]);
    tool.set_step_status("p2", 0, StepStatus::Blocked, Some("stuck"))
        .unwrap();
    assert_eq!(
        tool.plan("p2").unwrap().step_statuses,
        [StepStatus::Blocked]
    );
    assert_eq!(tool.plan("p2").unwrap().step_notes, ["stuck"]);
    assert!(
        tool.set_step_status("p2", 5, StepStatus::Completed, None)
            .is_err()
    );
}

#[tokio::test]
async fn every_error_message() {
    let tool = PlanningTool::new();
    let observations = observe(
        &tool,
        &[
            json!({"command": "get"}),
            json!({"command": "mark_step", "step_index": 0}),
            json!({"command": "create"}),
            json!({"command": "create", "plan_id": ""}),
            json!({"command": "create", "plan_id": "p"}),
            json!({"command": "create", "plan_id": "p", "title": "T"}),
            json!({"command": "create", "plan_id": "p", "title": "T", "steps": []}),
            json!({"command": "create", "plan_id": "p", "title": "T", "steps": ["a", 3]}),
            json!({"command": "create", "plan_id": "p", "title": "T", "steps": ["a", "b"]}),
            json!({"command": "create", "plan_id": "p", "title": "T2", "steps": ["c"]}),
            json!({"command": "update"}),
            json!({"command": "update", "plan_id": "nope"}),
            json!({"command": "update", "plan_id": "p", "steps": ["a", 1]}),
            json!({"command": "update", "plan_id": "p", "steps": "not a list"}),
            json!({"command": "get", "plan_id": "nope"}),
            json!({"command": "set_active"}),
            json!({"command": "set_active", "plan_id": "nope"}),
            json!({"command": "mark_step", "plan_id": "nope", "step_index": 0}),
            json!({"command": "mark_step", "plan_id": "p"}),
            json!({"command": "mark_step", "plan_id": "p", "step_index": 2}),
            json!({"command": "mark_step", "plan_id": "p", "step_index": -1}),
            json!({"command": "mark_step", "plan_id": "p", "step_index": 0, "step_status": "done"}),
            json!({"command": "delete"}),
            json!({"command": "delete", "plan_id": "nope"}),
            json!({"command": "rename"}),
            json!({"command": "list", "colour": "red"}),
        ],
    )
    .await;
    let expected = [
        err("No active plan. Please specify a plan_id or set an active plan."),
        err("No active plan. Please specify a plan_id or set an active plan."),
        err("Parameter `plan_id` is required for command: create"),
        err("Parameter `plan_id` is required for command: create"),
        err("Parameter `title` is required for command: create"),
        err("Parameter `steps` must be a non-empty list of strings for command: create"),
        err("Parameter `steps` must be a non-empty list of strings for command: create"),
        err("Parameter `steps` must be a non-empty list of strings for command: create"),
        ok("Plan created successfully with ID: p\n\nPlan: T (ID: p)\n================\n\nProgress: 0/2 steps completed (0.0%)\nStatus: 0 completed, 0 in progress, 0 blocked, 2 not started\n\nSteps:\n0. [ ] a\n1. [ ] b\n"),
        err("A plan with ID 'p' already exists. Use 'update' to modify existing plans."),
        err("Parameter `plan_id` is required for command: update"),
        err("No plan found with ID: nope"),
        err("Parameter `steps` must be a list of strings for command: update"),
        err("Parameter `steps` must be a list of strings for command: update"),
        err("No plan found with ID: nope"),
        err("Parameter `plan_id` is required for command: set_active"),
        err("No plan found with ID: nope"),
        err("No plan found with ID: nope"),
        err("Parameter `step_index` is required for command: mark_step"),
        err("Invalid step_index: 2. Valid indices range from 0 to 1."),
        err("Invalid step_index: -1. Valid indices range from 0 to 1."),
        err("Invalid step_status: done. Valid statuses are: not_started, in_progress, completed, blocked"),
        err("Parameter `plan_id` is required for command: delete"),
        err("No plan found with ID: nope"),
        err("Unrecognized command: rename. Allowed commands are: create, update, list, get, set_active, mark_step, delete"),
        "Error: ⚠️ Tool 'planning' encountered a problem: Invalid arguments: unknown field `colour`, expected one of `command`, `plan_id`, `title`, `steps`, `step_index`, `step_status`, `step_notes`".to_owned(),
    ];
    for (i, (got, want)) in observations.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "call {i}");
    }
    assert_eq!(observations.len(), expected.len());
    assert_eq!(
        tool.plan("p").unwrap().title,
        "T",
        "failed commands change nothing"
    );
}
