//! PlanningFlow and FlowFactory: a scripted planner model and real ToolCallAgent executors.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{Agent, AgentState, Role, RunStatus, ToolCall, ToolChoice};
use agent_llm::LlmError;
use agent_testkit::{EchoTool, ScriptedModel, ToolProbe, tool_call};
use agent_toolcall::ToolCallAgent;
use agent_tools::{Plan, PlanningTool, StepStatus};
use agents::flow::{
    DEFAULT_PLAN_STEPS, ExecutorMemory, FLOW_CANCELLED, Flow, FlowError, FlowEvent, FlowFactory,
    FlowOptions, FlowType, PLANNER_REQUEST, PLANNER_SYSTEM_PROMPT, PlanSource, PlanningFlow,
    SUMMARY_ERROR, SUMMARY_SYSTEM_PROMPT, TIMEOUT_ADVICE, step_prompt, summary_request,
};
use serde_json::json;

const TERMINATED: &str = "Step 1: Observed output of cmd `terminate` executed:\nThe interaction has been completed with status: success";

fn model() -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new())
}

fn worker(name: &str, description: &str, model: &Arc<ScriptedModel>) -> ToolCallAgent {
    ToolCallAgent::new(model.clone())
        .with_name(name)
        .with_description(description)
        .with_tool(EchoTool::new(&ToolProbe::new()))
        .with_max_steps(2)
}

fn plan_call(steps: &[&str]) -> ToolCall {
    let args =
        json!({"command": "create", "plan_id": "chosen_by_model", "title": "T", "steps": steps});
    tool_call("plan_1", "planning", &args.to_string())
}

fn push_plan(planner: &ScriptedModel, steps: &[&str]) {
    planner.push_tool_calls("", [plan_call(steps)]);
}

/// One executor step that ends the run with `terminate`.
fn push_finish(model: &ScriptedModel) {
    model.push_tool_calls(
        "Done.",
        [tool_call("t", "terminate", r#"{"status":"success"}"#)],
    );
}

fn push_echo(model: &ScriptedModel, text: &str) {
    model.push_tool_calls(
        "",
        [tool_call("e", "echo", &json!({"text": text}).to_string())],
    );
}

fn options() -> FlowOptions {
    FlowOptions {
        plan_id: Some("plan_test".into()),
        ..FlowOptions::default()
    }
}

fn recorder(flow: PlanningFlow) -> (PlanningFlow, Arc<Mutex<Vec<FlowEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let flow = flow.with_event_handler(move |e| sink.lock().unwrap().push(e.clone()));
    (flow, events)
}

/// A plan with these statuses (and notes), for expected step prompts.
fn plan_with(steps: &[&str], statuses: &[StepStatus], notes: &[&str]) -> Plan {
    let mut plan = Plan::new(
        "plan_test",
        "T",
        steps.iter().map(|s| (*s).to_owned()).collect(),
    );
    plan.step_statuses = statuses.to_vec();
    for (i, note) in notes.iter().enumerate() {
        plan.step_notes[i] = (*note).to_owned();
    }
    plan
}

fn user_texts(request: &agent_llm::ChatRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.text().to_owned())
        .collect()
}

#[tokio::test]
async fn plans_with_the_planning_tool_and_routes_tagged_steps() {
    use StepStatus::{Completed, InProgress, NotStarted};
    let steps = [
        "[MANUS] Find the flights",
        "[DATA_ANALYSIS] Compare the prices",
        "Book the cheapest",
    ];
    let planner = model();
    push_plan(&planner, &steps);
    planner.push_text("Booked the cheapest flight.");
    let manus = model();
    push_finish(&manus);
    push_finish(&manus);
    let analyst = model();
    push_echo(&analyst, "prices");
    push_finish(&analyst);

    let (mut flow, events) = recorder(
        PlanningFlow::new(planner.clone())
            .with_agent("manus", worker("Manus", "A versatile agent", &manus))
            .with_agent(
                "data_analysis",
                worker("DataAnalysis", "An analyst of data", &analyst),
            )
            .with_options(options()),
    );
    let outcome = flow.execute("Book a trip to Rome").await.unwrap();

    // The planner request: the planning tool, tool_choice auto, the executors in the prompt.
    let requests = planner.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].tool_names(), ["planning"]);
    assert_eq!(requests[0].tool_choice, Some(ToolChoice::Auto));
    let system = requests[0].system_msgs[0].text();
    assert!(system.starts_with(PLANNER_SYSTEM_PROMPT), "{system}");
    assert!(
        system.contains(r#"{"name":"MANUS","description":"A versatile agent"}"#),
        "{system}"
    );
    assert!(
        system.contains(r#"{"name":"DATA_ANALYSIS","description":"An analyst of data"}"#),
        "{system}"
    );
    assert_eq!(
        user_texts(&requests[0]),
        [format!("{PLANNER_REQUEST}Book a trip to Rome")]
    );

    // The plan: the flow's id (not the model's), every step completed.
    assert_eq!(outcome.plan_source, Some(PlanSource::Model));
    let plan = outcome.plan.clone().unwrap();
    assert_eq!(
        plan.format(),
        "Plan: T (ID: plan_test)\n========================\n\nProgress: 3/3 steps completed (100.0%)\nStatus: 3 completed, 0 in progress, 0 blocked, 0 not started\n\nSteps:\n0. [✓] [MANUS] Find the flights\n1. [✓] [DATA_ANALYSIS] Compare the prices\n2. [✓] Book the cheapest\n"
    );
    assert!(outcome.is_complete());
    assert_eq!(flow.plan_id(), Some("plan_test"));
    assert_eq!(flow.planning_tool().plans().len(), 1);

    // Routing: [MANUS] and the untagged step to manus, [DATA_ANALYSIS] to the analyst.
    let executors: Vec<_> = outcome.steps.iter().map(|s| s.executor.as_str()).collect();
    assert_eq!(executors, ["manus", "data_analysis", "manus"]);
    assert_eq!(manus.requests().len(), 2);
    assert_eq!(analyst.requests().len(), 2);

    // The step prompts carry the plan status with the current step in progress.
    let analyst_first = &analyst.requests()[0];
    assert_eq!(
        analyst_first.messages[0].text(),
        step_prompt(
            &plan_with(&steps, &[Completed, InProgress, NotStarted], &[]).format(),
            1,
            "[DATA_ANALYSIS] Compare the prices"
        )
    );
    assert!(
        analyst_first.messages[0]
            .text()
            .contains("CURRENT PLAN STATUS:\nPlan: T (ID: plan_test)\n")
    );
    assert!(analyst_first.messages[0].text().contains(
        "\nYOUR CURRENT TASK:\nYou are working on step 1: \"[DATA_ANALYSIS] Compare the prices\"\n"
    ));
    // Memory carries over: manus's second step still sees its first step.
    let manus_second = &manus.requests()[1];
    let texts = user_texts(manus_second);
    assert_eq!(
        texts[0],
        step_prompt(
            &plan_with(&steps, &[InProgress, NotStarted, NotStarted], &[]).format(),
            0,
            steps[0]
        )
    );
    assert!(texts.contains(&step_prompt(
        &plan_with(&steps, &[Completed, Completed, InProgress], &[]).format(),
        2,
        steps[2]
    )));

    // Step results, summary and the joined text.
    assert!(
        outcome
            .steps
            .iter()
            .all(|s| s.status == Completed && s.attempt == 1 && s.note.is_none())
    );
    assert!(matches!(
        outcome.steps[1].run_status,
        Some(RunStatus::Finished(_))
    ));
    assert_eq!(
        outcome.summary.as_deref(),
        Some("Plan completed:\n\nBooked the cheapest flight.")
    );
    assert_eq!(requests[1].tools.len(), 0);
    assert_eq!(requests[1].system_msgs[0].text(), SUMMARY_SYSTEM_PROMPT);
    assert_eq!(user_texts(&requests[1]), [summary_request(&plan.format())]);
    let analyst_text = "Step 1: Observed output of cmd `echo` executed:\nprices\nStep 2: Observed output of cmd `terminate` executed:\nThe interaction has been completed with status: success";
    assert_eq!(outcome.steps[1].output, analyst_text);
    assert_eq!(
        outcome.text(),
        format!(
            "{TERMINATED}\n{analyst_text}\n{TERMINATED}\nPlan completed:\n\nBooked the cheapest flight."
        )
    );

    // Progress events, in order.
    let events = events.lock().unwrap().clone();
    assert!(matches!(
        &events[0],
        FlowEvent::PlanCreated { plan, source: PlanSource::Model } if plan.steps.len() == 3
    ));
    let summary: Vec<String> = events[1..]
        .iter()
        .map(|e| match e {
            FlowEvent::StepStarted {
                index,
                executor,
                attempt,
                ..
            } => format!("start {index} {executor} {attempt}"),
            FlowEvent::StepFinished {
                index,
                status,
                note,
                ..
            } => format!("end {index} {} {note:?}", status.as_str()),
            FlowEvent::Finished {
                completed,
                blocked,
                timed_out,
                cancelled,
            } => format!("finished {completed} {blocked} {timed_out} {cancelled}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        summary,
        [
            "start 0 manus 1",
            "end 0 completed None",
            "start 1 data_analysis 1",
            "end 1 completed None",
            "start 2 manus 1",
            "end 2 completed None",
            "finished 3 0 false false",
        ]
    );
    let json = serde_json::to_value(&events[2]).unwrap();
    assert_eq!(json["type"], "step_finished");
    assert_eq!(json["status"], "completed");
}

#[tokio::test]
async fn untagged_and_unknown_tags_go_to_the_first_configured_executor() {
    let planner = model();
    push_plan(&planner, &["[SEARCH] Look around", "Write it down"]);
    planner.push_text("ok");
    let manus = model();
    let analyst = model();
    push_finish(&analyst);
    push_finish(&analyst);
    let mut flow = PlanningFlow::new(planner)
        .with_agent("manus", worker("Manus", "general", &manus))
        .with_agent("data_analysis", worker("DataAnalysis", "data", &analyst))
        .with_options(FlowOptions {
            executors: vec!["DATA_ANALYSIS".into()],
            ..options()
        });
    assert_eq!(flow.primary_agent_key(), Some("manus"));
    let outcome = flow.execute("Take notes").await.unwrap();
    let executors: Vec<_> = outcome.steps.iter().map(|s| s.executor.as_str()).collect();
    assert_eq!(executors, ["data_analysis", "data_analysis"]);
    assert!(manus.requests().is_empty());
    assert!(outcome.is_complete());
}

#[tokio::test]
async fn falls_back_to_the_default_plan() {
    let request = "Plan a weekend in the mountains with friends, including transport and food";
    assert!(request.chars().count() > 50);
    type Push = Box<dyn Fn(&ScriptedModel)>;
    let replies: [(&str, Push); 5] = [
        (
            "did not call",
            Box::new(|m: &ScriptedModel| {
                m.push_text("Sure, here is a plan in prose.");
            }),
        ),
        (
            "planner call failed",
            Box::new(|m: &ScriptedModel| {
                m.push_error(LlmError::server(500, "boom"));
            }),
        ),
        (
            "command `list`",
            Box::new(|m: &ScriptedModel| {
                m.push_tool_calls("", [tool_call("p", "planning", r#"{"command":"list"}"#)]);
            }),
        ),
        (
            "invalid JSON",
            Box::new(|m: &ScriptedModel| {
                m.push_tool_calls("", [tool_call("p", "planning", "{not json")]);
            }),
        ),
        (
            "non-empty list of strings",
            Box::new(|m: &ScriptedModel| {
                m.push_tool_calls(
                    "",
                    [tool_call(
                        "p",
                        "planning",
                        r#"{"command":"create","title":"x","steps":["  "]}"#,
                    )],
                );
            }),
        ),
    ];
    for (why, push) in replies {
        let planner = model();
        push(&planner);
        planner.push_text("All three steps done.");
        let manus = model();
        for _ in 0..3 {
            push_finish(&manus);
        }
        let mut flow = PlanningFlow::new(planner.clone())
            .with_agent("manus", worker("Manus", "general", &manus))
            .with_options(options());
        let outcome = flow.execute(request).await.unwrap();

        // One executor: the planner prompt lists none.
        assert_eq!(
            planner.requests()[0].system_msgs[0].text(),
            PLANNER_SYSTEM_PROMPT
        );
        let Some(PlanSource::Default { reason }) = &outcome.plan_source else {
            panic!("{why}: {:?}", outcome.plan_source);
        };
        assert!(reason.contains(why), "{why}: {reason}");
        let plan = outcome.plan.clone().unwrap();
        assert_eq!(
            plan.title,
            format!(
                "Plan for: {}...",
                request.chars().take(50).collect::<String>()
            )
        );
        assert_eq!(
            plan.title,
            "Plan for: Plan a weekend in the mountains with friends, incl..."
        );
        assert_eq!(plan.steps, DEFAULT_PLAN_STEPS);
        assert!(outcome.is_complete(), "{why}");
        assert_eq!(outcome.steps.len(), 3);
        assert_eq!(
            outcome.summary.as_deref(),
            Some("Plan completed:\n\nAll three steps done.")
        );
    }
}

#[tokio::test]
async fn a_missing_title_gets_the_default_title() {
    let planner = model();
    planner.push_tool_calls(
        "",
        [tool_call(
            "p",
            "planning",
            r#"{"command":"create","steps":["Only step", ""]}"#,
        )],
    );
    planner.push_text("fine");
    let manus = model();
    push_finish(&manus);
    let mut flow = PlanningFlow::new(planner)
        .with_agent("manus", worker("Manus", "general", &manus))
        .with_options(options());
    let outcome = flow.execute("Short task").await.unwrap();
    assert_eq!(outcome.plan_source, Some(PlanSource::Model));
    let plan = outcome.plan.unwrap();
    assert_eq!(plan.title, "Plan for: Short task");
    assert_eq!(plan.steps, ["Only step"]);
}

#[tokio::test]
async fn a_step_that_hits_max_steps_is_blocked_retried_and_skipped() {
    use StepStatus::{Blocked, Completed, InProgress};
    let steps = ["Collect data", "Write report"];
    let planner = model();
    push_plan(&planner, &steps);
    planner.push_text("Report written; data collection is blocked.");
    let manus = model();
    for _ in 0..4 {
        push_echo(&manus, "still collecting");
    }
    push_finish(&manus);

    let (mut flow, events) = recorder(
        PlanningFlow::new(planner.clone())
            .with_agent("manus", worker("Manus", "general", &manus))
            .with_options(options()),
    );
    let outcome = flow.execute("Write a report").await.unwrap();

    let first_note = "Attempt 1 of 2: `manus` used its 2 steps without finishing the step.";
    let second_note = "Attempt 2 of 2: `manus` used its 2 steps without finishing the step.";
    let attempts: Vec<_> = outcome
        .steps
        .iter()
        .map(|s| (s.index, s.attempt, s.status, s.note.as_deref()))
        .collect();
    assert_eq!(
        attempts,
        [
            (0, 1, Blocked, Some(first_note)),
            (0, 2, Blocked, Some(second_note)),
            (1, 1, Completed, None),
        ]
    );
    assert!(matches!(
        outcome.steps[0].run_status,
        Some(RunStatus::MaxSteps(2))
    ));
    assert!(
        outcome.steps[0]
            .output
            .ends_with("Terminated: Reached max steps (2)")
    );

    // The retry's prompt shows the step in progress with the first attempt's note.
    let retry_prompt = &user_texts(&manus.requests()[2]);
    assert!(retry_prompt.contains(&step_prompt(
        &plan_with(&steps, &[InProgress, StepStatus::NotStarted], &[first_note]).format(),
        0,
        steps[0]
    )));

    let plan = outcome.plan.clone().unwrap();
    assert_eq!(
        plan.format(),
        format!(
            "Plan: T (ID: plan_test)\n========================\n\nProgress: 1/2 steps completed (50.0%)\nStatus: 1 completed, 0 in progress, 1 blocked, 0 not started\n\nSteps:\n0. [!] Collect data\n   Notes: {second_note}\n1. [✓] Write report\n"
        )
    );
    assert_eq!(outcome.blocked_steps(), [0]);
    assert!(!outcome.is_complete());
    assert_eq!(
        outcome.summary.as_deref(),
        Some("Plan completed:\n\nReport written; data collection is blocked.")
    );
    assert!(
        user_texts(&planner.requests()[1])[0].contains("0. [!] Collect data\n   Notes: Attempt 2")
    );
    assert!(matches!(
        events.lock().unwrap().last(),
        Some(FlowEvent::Finished {
            completed: 1,
            blocked: 1,
            timed_out: false,
            cancelled: false
        })
    ));
}

#[tokio::test]
async fn the_number_of_retries_is_configurable() {
    for retries in [0_u32, 2] {
        let planner = model();
        push_plan(&planner, &["Impossible"]);
        planner.push_text("It could not be done.");
        let manus = model();
        for _ in 0..(retries + 1) * 2 {
            push_echo(&manus, "trying");
        }
        let mut flow = PlanningFlow::new(planner)
            .with_agent("manus", worker("Manus", "general", &manus))
            .with_options(FlowOptions {
                max_step_retries: retries,
                ..options()
            });
        let outcome = flow.execute("Do the impossible").await.unwrap();
        let attempts: Vec<u32> = outcome.steps.iter().map(|s| s.attempt).collect();
        assert_eq!(attempts, (1..=retries + 1).collect::<Vec<_>>());
        assert_eq!(outcome.blocked_steps(), [0]);
        let attempts_total = retries + 1;
        assert_eq!(
            outcome.plan.unwrap().step_notes[0],
            format!(
                "Attempt {attempts_total} of {attempts_total}: `manus` used its 2 steps without finishing the step."
            )
        );
        assert_eq!(manus.remaining(), 0);
    }
}

#[tokio::test]
async fn a_failed_model_call_blocks_the_step_and_the_retry_can_complete_it() {
    let planner = model();
    push_plan(&planner, &["Fetch the page"]);
    planner.push_text("Fetched on the second try.");
    let manus = model();
    manus.push_error(LlmError::Authentication("bad key".into()));
    push_finish(&manus);
    let mut flow = PlanningFlow::new(planner)
        .with_agent("manus", worker("Manus", "general", &manus))
        .with_options(options());
    let outcome = flow.execute("Fetch it").await.unwrap();

    let first = &outcome.steps[0];
    assert_eq!(first.status, StepStatus::Blocked);
    assert!(matches!(first.run_status, Some(RunStatus::Failed(_))));
    let note = "Attempt 1 of 2: `manus` failed: model call failed: authentication failed: bad key.";
    assert_eq!(first.note.as_deref(), Some(note));
    assert!(
        first
            .output
            .ends_with("Error: model call failed: authentication failed: bad key")
    );
    // The executor was in ERROR; the flow reset it and the retry ran.
    assert_eq!(outcome.steps[1].status, StepStatus::Completed);
    assert_eq!(outcome.steps[1].output, TERMINATED);
    let plan = outcome.plan.unwrap();
    assert_eq!(plan.step_statuses, [StepStatus::Completed]);
    assert_eq!(
        plan.step_notes,
        [note],
        "the note of the failed attempt stays"
    );
}

#[tokio::test]
async fn the_loop_ends_when_every_step_keeps_failing() {
    let planner = model();
    push_plan(&planner, &["a", "b", "c"]);
    planner.push_text("Nothing worked.");
    let manus = model(); // no replies: every model call fails
    let mut flow = PlanningFlow::new(planner)
        .with_agent("manus", worker("Manus", "general", &manus))
        .with_options(options());
    let outcome = flow.execute("Try everything").await.unwrap();
    assert_eq!(outcome.steps.len(), 6);
    assert!(
        outcome
            .steps
            .iter()
            .all(|s| s.status == StepStatus::Blocked)
    );
    assert_eq!(outcome.blocked_steps(), [0, 1, 2]);
    assert_eq!(manus.requests().len(), 6);
    assert_eq!(
        outcome.summary.as_deref(),
        Some("Plan completed:\n\nNothing worked.")
    );
    assert!(outcome.text().starts_with("Error: model call failed"));
}

#[tokio::test]
async fn the_summary_falls_back_to_the_primary_agent_then_to_a_fixed_text() {
    // The model fails; the primary agent summarizes.
    let planner = model();
    push_plan(&planner, &["Only step"]);
    planner.push_error(LlmError::server(503, "overloaded"));
    let manus = model();
    push_finish(&manus);
    push_finish(&manus);
    let mut flow = PlanningFlow::new(planner)
        .with_agent("manus", worker("Manus", "general", &manus))
        .with_options(options());
    let outcome = flow.execute("Do one thing").await.unwrap();
    assert_eq!(
        outcome.summary.as_deref(),
        Some(format!("Plan completed:\n\n{TERMINATED}").as_str())
    );
    let final_plan = outcome.plan.unwrap().format();
    assert!(user_texts(&manus.requests()[1]).contains(&summary_request(&final_plan)));

    // Both fail: the fixed text.
    let planner = model();
    push_plan(&planner, &["Only step"]);
    planner.push_error(LlmError::server(503, "overloaded"));
    let manus = model();
    push_finish(&manus);
    manus.push_error(LlmError::Network("down".into()));
    let mut flow = PlanningFlow::new(planner)
        .with_agent("manus", worker("Manus", "general", &manus))
        .with_options(options());
    let outcome = flow.execute("Do one thing").await.unwrap();
    assert_eq!(outcome.summary.as_deref(), Some(SUMMARY_ERROR));
    assert_eq!(outcome.text(), format!("{TERMINATED}\n{SUMMARY_ERROR}"));
}

#[tokio::test]
async fn the_time_limit_stops_a_hanging_step() {
    let planner = model();
    push_plan(&planner, &["Hang", "Never reached"]);
    let manus = model();
    manus.push_hang();
    let limit = Duration::from_millis(200);
    let (mut flow, events) = recorder(
        PlanningFlow::new(planner.clone())
            .with_agent("manus", worker("Manus", "general", &manus))
            .with_options(FlowOptions {
                time_limit: Some(limit),
                ..options()
            }),
    );
    let outcome = flow.execute("Wait forever").await.unwrap();

    assert!(outcome.timed_out && !outcome.cancelled);
    assert!(outcome.elapsed >= limit && outcome.elapsed < Duration::from_secs(5));
    assert_eq!(outcome.steps.len(), 1, "an interrupted step is not retried");
    let step = &outcome.steps[0];
    assert_eq!(step.status, StepStatus::Blocked);
    assert!(matches!(step.run_status, Some(RunStatus::Cancelled)));
    assert_eq!(
        step.note.as_deref(),
        Some("Attempt 1 of 2: `manus` was interrupted: the flow's time limit ran out.")
    );
    assert_eq!(outcome.summary, None);
    assert_eq!(planner.requests().len(), 1, "no summary is asked for");
    let plan = outcome.plan.clone().unwrap();
    assert_eq!(
        plan.step_statuses,
        [StepStatus::Blocked, StepStatus::NotStarted]
    );
    assert_eq!(
        outcome.text(),
        format!(
            "No steps executed\nRequest processing timed out after 0.2 seconds\n{TIMEOUT_ADVICE}"
        )
    );
    // The executor was wound down cleanly and can run again.
    assert_eq!(
        flow.agent("manus").unwrap().base().state(),
        AgentState::Idle
    );
    assert!(matches!(
        events.lock().unwrap().last(),
        Some(FlowEvent::Finished {
            timed_out: true,
            ..
        })
    ));
}

#[tokio::test]
async fn the_time_limit_also_covers_the_planner() {
    let planner = model();
    planner.push_hang();
    let manus = model();
    let mut flow = PlanningFlow::new(planner)
        .with_agent("manus", worker("Manus", "general", &manus))
        .with_options(FlowOptions {
            time_limit: Some(Duration::from_millis(100)),
            ..options()
        });
    let outcome = flow.execute("Plan slowly").await.unwrap();
    assert!(outcome.timed_out);
    assert!(outcome.plan.is_none() && outcome.steps.is_empty());
    assert_eq!(
        outcome.text(),
        format!("Request processing timed out after 0.1 seconds\n{TIMEOUT_ADVICE}")
    );
}

#[tokio::test]
async fn cancellation_stops_the_flow_inside_a_step() {
    let planner = model();
    push_plan(&planner, &["Hang", "Never reached"]);
    let manus = model();
    manus.push_hang();
    let mut flow = PlanningFlow::new(planner.clone())
        .with_agent("manus", worker("Manus", "general", &manus))
        .with_options(options());
    let token = flow.cancellation_token();
    let watcher = manus.clone();
    tokio::spawn(async move {
        watcher.wait_for_requests(1).await;
        token.cancel();
    });
    let outcome = flow.execute("Wait").await.unwrap();

    assert!(outcome.cancelled && !outcome.timed_out);
    assert_eq!(outcome.steps.len(), 1);
    assert_eq!(
        outcome.steps[0].note.as_deref(),
        Some("Attempt 1 of 2: `manus` was interrupted: the flow was cancelled.")
    );
    assert_eq!(outcome.summary, None);
    assert_eq!(planner.requests().len(), 1);
    assert!(outcome.text().ends_with(FLOW_CANCELLED));
    assert_eq!(
        flow.agent("manus").unwrap().base().state(),
        AgentState::Idle
    );

    // A cancelled token stays cancelled: nothing runs until a new one is installed.
    let again = flow.execute("Again").await.unwrap();
    assert!(again.cancelled && again.plan.is_none());
    assert_eq!(planner.requests().len(), 1);
    flow.set_cancellation_token(agent_core::CancellationToken::new());
    flow.options_mut().plan_id = None; // `plan_test` exists now
    push_plan(&planner, &["Quick"]);
    planner.push_text("quick");
    push_finish(&manus);
    let third = flow.execute("Quick one").await.unwrap();
    assert!(third.is_complete());
}

#[tokio::test]
async fn executor_memory_is_kept_or_fresh() {
    for memory in [ExecutorMemory::Keep, ExecutorMemory::Fresh] {
        let planner = model();
        push_plan(&planner, &["one", "two"]);
        planner.push_text("done");
        let manus = model();
        push_finish(&manus);
        push_finish(&manus);
        let mut flow = PlanningFlow::new(planner)
            .with_agent("manus", worker("Manus", "general", &manus))
            .with_options(FlowOptions {
                executor_memory: memory,
                ..options()
            });
        flow.execute("Two steps").await.unwrap();
        let second = user_texts(&manus.requests()[1]);
        let prompts: Vec<_> = second
            .iter()
            .filter(|t| t.starts_with("CURRENT PLAN STATUS:"))
            .collect();
        match memory {
            ExecutorMemory::Keep => assert_eq!(prompts.len(), 2),
            ExecutorMemory::Fresh => assert_eq!(prompts.len(), 1),
        }
        assert!(prompts.last().unwrap().contains("step 1: \"two\""));
    }
}

#[tokio::test]
async fn an_empty_request_resumes_an_existing_plan() {
    let tool = PlanningTool::new();
    let planner = model();
    planner.push_text("resumed");
    let manus = model();
    push_finish(&manus);
    let mut flow = PlanningFlow::new(planner.clone())
        .with_agent("manus", worker("Manus", "general", &manus))
        .with_planning_tool(tool.clone())
        .with_options(options());
    // No plan yet: nothing to resume.
    assert!(matches!(
        flow.execute("").await,
        Err(FlowError::PlanCreation { .. })
    ));
    tool.run(&serde_json::from_value(json!({"command": "create", "plan_id": "plan_test", "title": "Resume", "steps": ["done", "todo"]})).unwrap())
        .unwrap();
    tool.set_step_status("plan_test", 0, StepStatus::Completed, None)
        .unwrap();
    let outcome = flow.execute("").await.unwrap();
    assert_eq!(outcome.plan_source, Some(PlanSource::Existing));
    assert_eq!(outcome.steps.len(), 1);
    assert_eq!(outcome.steps[0].index, 1);
    assert!(outcome.is_complete());
    assert_eq!(planner.requests().len(), 1, "only the summary");

    // An explicit plan id that is taken cannot be created again (the planner answers without a
    // `planning` call, so the default plan is tried under the taken id).
    planner.push_text("No plan from me.");
    let text = flow.execute_text("New request").await;
    assert_eq!(text, "Failed to create plan for: New request");
}

#[tokio::test]
async fn the_default_plan_id_is_unique_per_execution() {
    let planner = model();
    let manus = model();
    let mut flow =
        PlanningFlow::new(planner.clone()).with_agent("manus", worker("Manus", "general", &manus));
    for _ in 0..2 {
        push_plan(&planner, &["step"]);
        planner.push_text("ok");
        push_finish(&manus);
        let outcome = flow.execute("Again and again").await.unwrap();
        assert!(outcome.is_complete());
    }
    let ids: Vec<String> = flow
        .planning_tool()
        .plans()
        .into_iter()
        .map(|p| p.plan_id)
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(|id| id.starts_with("plan_")));
    assert_ne!(ids[0], ids[1]);
}

#[tokio::test]
async fn the_factory_builds_a_planning_flow() {
    assert_eq!(FlowType::from_str("planning").unwrap(), FlowType::Planning);
    assert_eq!(FlowType::Planning.to_string(), "planning");
    assert_eq!(
        FlowType::from_str("swarm").unwrap_err().to_string(),
        "Unknown flow type: swarm"
    );

    let planner = model();
    let err = FlowFactory::create_flow(
        FlowType::Planning,
        planner.clone(),
        Vec::new(),
        FlowOptions::default(),
    )
    .err()
    .unwrap();
    assert_eq!(err.to_string(), "No primary agent available");

    let manus = model();
    let agents = || -> Vec<(String, Box<dyn Agent>)> {
        vec![(
            "manus".into(),
            Box::new(worker("Manus", "general", &manus)) as Box<dyn Agent>,
        )]
    };
    let err = FlowFactory::create_flow(
        FlowType::Planning,
        planner.clone(),
        agents(),
        FlowOptions {
            primary_agent: Some("nobody".into()),
            ..FlowOptions::default()
        },
    )
    .err()
    .unwrap();
    assert!(matches!(err, FlowError::UnknownAgent(ref key) if key == "nobody"));

    let mut flow =
        FlowFactory::create_flow(FlowType::Planning, planner.clone(), agents(), options()).unwrap();
    push_plan(&planner, &["Only step"]);
    planner.push_text("Finished.");
    push_finish(&manus);
    let events = Arc::new(Mutex::new(0_usize));
    let count = events.clone();
    flow.set_event_handler(Arc::new(move |_| *count.lock().unwrap() += 1));
    let text = flow.execute_text("Go").await;
    assert_eq!(text, format!("{TERMINATED}\nPlan completed:\n\nFinished."));
    assert_eq!(*events.lock().unwrap(), 4);
}

#[tokio::test]
async fn a_flow_without_agents_reports_it() {
    let mut flow = PlanningFlow::new(model());
    assert_eq!(
        flow.execute_text("anything").await,
        "Execution failed: No primary agent available"
    );
}

#[tokio::test]
async fn a_step_that_ends_on_the_token_limit_is_blocked() {
    let planner = model();
    push_plan(&planner, &["Read everything"]);
    planner.push_text("Too much to read.");
    let manus = model();
    manus.push_error(LlmError::TokenLimitExceeded("over budget".into()));
    manus.push_error(LlmError::TokenLimitExceeded("over budget".into()));
    let mut flow = PlanningFlow::new(planner)
        .with_agent("manus", worker("Manus", "general", &manus))
        .with_options(options());
    let outcome = flow.execute("Read the library").await.unwrap();
    assert_eq!(outcome.steps.len(), 2);
    assert!(matches!(
        outcome.steps[1].run_status,
        Some(RunStatus::Finished(
            agent_core::FinishReason::TokenLimit { .. }
        ))
    ));
    assert_eq!(
        outcome.plan.as_ref().unwrap().step_notes[0],
        "Attempt 2 of 2: `manus` ran out of tokens: over budget."
    );
    assert_eq!(outcome.blocked_steps(), [0]);
}

#[tokio::test]
async fn a_step_whose_executor_terminates_with_failure_is_blocked() {
    let planner = model();
    push_plan(&planner, &["Find the missing file", "Report"]);
    planner.push_text("The file could not be found.");
    let manus = model();
    // Both attempts at step 0 give up; step 1 succeeds.
    for _ in 0..2 {
        manus.push_tool_calls(
            "I cannot find it.",
            [tool_call("t", "terminate", r#"{"status": "failure"}"#)],
        );
    }
    push_finish(&manus);
    let (flow, events) = recorder(
        PlanningFlow::new(planner)
            .with_agent("manus", worker("Manus", "general", &manus))
            .with_options(options()),
    );
    let mut flow = flow;
    let outcome = flow.execute("Find notes.txt").await.unwrap();

    assert_eq!(outcome.steps.len(), 3);
    for (step, attempt) in outcome.steps[..2].iter().zip(1..) {
        assert_eq!(step.index, 0);
        assert_eq!(step.attempt, attempt);
        assert_eq!(step.status, StepStatus::Blocked);
        assert!(matches!(
            step.run_status,
            Some(RunStatus::Finished(
                agent_core::FinishReason::SpecialTool { .. }
            ))
        ));
    }
    assert_eq!(outcome.steps[2].status, StepStatus::Completed);
    let plan = outcome.plan.clone().unwrap();
    assert_eq!(plan.status(0), Some(StepStatus::Blocked));
    assert_eq!(plan.status(1), Some(StepStatus::Completed));
    assert_eq!(
        plan.step_notes[0],
        "Attempt 2 of 2: `manus` gave up: it called `terminate` with status `failure`."
    );
    assert_eq!(outcome.blocked_steps(), [0]);
    assert!(!outcome.is_complete());
    let finished: Vec<_> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            FlowEvent::StepFinished { status, note, .. } => Some((*status, note.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(finished[0].0, StepStatus::Blocked);
    assert_eq!(
        finished[0].1.as_deref(),
        Some("Attempt 1 of 2: `manus` gave up: it called `terminate` with status `failure`.")
    );
    assert_eq!(finished[2], (StepStatus::Completed, None));
}

#[tokio::test]
async fn a_success_after_an_earlier_failure_in_memory_completes_the_step() {
    // Memory is kept between steps: the judge must read the call that finished *this* run.
    let planner = model();
    push_plan(&planner, &["Try", "Try again"]);
    planner.push_text("done");
    let manus = model();
    manus.push_tool_calls(
        "",
        [tool_call("t1", "terminate", r#"{"status":"failure"}"#)],
    );
    push_finish(&manus);
    let mut flow = PlanningFlow::new(planner)
        .with_agent("manus", worker("Manus", "general", &manus))
        .with_options(FlowOptions {
            max_step_retries: 0,
            ..options()
        });
    let outcome = flow.execute("Try twice").await.unwrap();
    let statuses: Vec<_> = outcome.steps.iter().map(|s| (s.index, s.status)).collect();
    assert_eq!(
        statuses,
        [(0, StepStatus::Blocked), (1, StepStatus::Completed)]
    );
}

#[tokio::test]
async fn a_permanent_planner_error_aborts_the_flow() {
    let permanent = [
        LlmError::Authentication("invalid api key".into()),
        LlmError::InvalidRequest("unknown model".into()),
    ];
    for error in permanent {
        let planner = model();
        planner.push_error(error.clone());
        let manus = model();
        let (flow, events) = recorder(
            PlanningFlow::new(planner.clone())
                .with_agent("manus", worker("Manus", "general", &manus))
                .with_options(options()),
        );
        let mut flow = flow;
        let result = flow.execute("Do something").await;
        let Err(FlowError::Planner {
            request,
            error: got,
        }) = result
        else {
            panic!("expected a planner error, got {result:?}");
        };
        assert_eq!(request, "Do something");
        assert_eq!(got, error);
        // Nothing ran: no executor request, no summary request, no plan.
        assert!(manus.requests().is_empty());
        assert_eq!(planner.requests().len(), 1);
        assert!(flow.planning_tool().plan("plan_test").is_none());
        assert!(events.lock().unwrap().iter().all(|e| !matches!(
            e,
            FlowEvent::PlanCreated { .. } | FlowEvent::StepStarted { .. }
        )));
        // OpenManus's string form.
        planner.push_error(error.clone());
        let text = flow.execute_text("Do something").await;
        assert!(text.starts_with("Execution failed: "), "{text}");
        assert!(text.contains(&error.to_string()), "{text}");
    }
}

#[tokio::test]
async fn a_token_budget_holds_over_all_the_steps_of_the_flow() {
    use agent_core::{Budget, BudgetKind, FinishReason};
    let steps = ["First", "Second", "Third"];
    let planner = model();
    push_plan(&planner, &steps);
    let manus = model();
    // Step one: an echo and a finish, 600 tokens each: 1200 of the flow's 1500.
    for call in [
        tool_call("e", "echo", r#"{"text":"one"}"#),
        tool_call("t", "terminate", r#"{"status":"success"}"#),
    ] {
        manus.push_response(agent_llm::ChatResponse {
            content: None,
            tool_calls: vec![call],
            usage: Some(ScriptedModel::usage(500, 100)),
            finish_reason: None,
            model: None,
        });
    }
    // Step two: one echo reaches the budget (1800); the executor stops before its next step.
    manus.push_response(agent_llm::ChatResponse {
        content: None,
        tool_calls: vec![tool_call("e2", "echo", r#"{"text":"two"}"#)],
        usage: Some(ScriptedModel::usage(500, 100)),
        finish_reason: None,
        model: None,
    });
    let mut flow = PlanningFlow::new(planner.clone())
        .with_agent(
            "manus",
            worker("Manus", "A versatile agent", &manus).with_max_steps(5),
        )
        .with_options(FlowOptions {
            budget: Budget {
                max_tokens: Some(1_500),
                ..Budget::default()
            },
            ..options()
        });
    let outcome = flow.execute("Do three things.").await.unwrap();
    let exceeded = outcome.budget.expect("the flow's budget stopped it");
    assert_eq!(exceeded.kind, BudgetKind::Tokens);
    assert_eq!(exceeded.used, 1800.0);
    // Step two's run ended on the shared budget; step three never ran, and no summary was asked.
    assert_eq!(outcome.steps.len(), 2);
    assert!(matches!(
        outcome.steps[1].run_status,
        Some(RunStatus::Finished(FinishReason::Budget(_)))
    ));
    assert!(
        outcome
            .text()
            .ends_with("Terminated: token budget reached: 1800 of 1500 tokens used"),
        "{}",
        outcome.text()
    );
    assert_eq!(manus.remaining(), 0);
    assert_eq!(planner.remaining(), 0);
    assert!(outcome.summary.is_none());
}

#[tokio::test]
async fn the_flow_budget_counts_the_planners_own_calls() {
    use agent_core::{Budget, BudgetKind};
    let planner = model();
    // The plan costs 1,000 tokens of the flow's 1,500.
    planner.push_response(agent_llm::ChatResponse {
        content: None,
        tool_calls: vec![plan_call(&["First", "Second"])],
        usage: Some(ScriptedModel::usage(900, 100)),
        finish_reason: None,
        model: None,
    });
    let manus = model();
    // Step one: a finish of 600 tokens. With the plan's 1,000 that is 1,600: the flow stops
    // before step two (counting the executors alone, 600 would let it go on).
    manus.push_response(agent_llm::ChatResponse {
        content: None,
        tool_calls: vec![tool_call("t", "terminate", r#"{"status":"success"}"#)],
        usage: Some(ScriptedModel::usage(500, 100)),
        finish_reason: None,
        model: None,
    });
    let mut flow = PlanningFlow::new(planner.clone())
        .with_agent(
            "manus",
            worker("Manus", "A versatile agent", &manus).with_max_steps(5),
        )
        .with_options(FlowOptions {
            budget: Budget {
                max_tokens: Some(1_500),
                ..Budget::default()
            },
            ..options()
        });
    let mut events = flow.agent_mut("manus").unwrap().base().events().subscribe();
    let outcome = flow.execute("Do two things.").await.unwrap();
    let exceeded = outcome.budget.expect("the flow's budget stopped it");
    assert_eq!(exceeded.kind, BudgetKind::Tokens);
    assert_eq!(exceeded.used, 1600.0);
    // The plan's tokens are reported where the executors' are, so a run's usage (a session
    // adds up its bus) matches what the budget counted.
    let mut reported = 0;
    while let Ok(event) = events.try_recv() {
        if let agent_core::AgentEvent::TokenUsage {
            prompt_tokens,
            completion_tokens,
            ..
        } = event
        {
            reported += prompt_tokens + completion_tokens;
        }
    }
    assert_eq!(reported, 1600);
    assert_eq!(outcome.steps.len(), 1);
    assert_eq!(manus.remaining(), 0);
    assert_eq!(planner.remaining(), 0);

    // A plan that alone uses the whole budget stops the flow before its first step.
    planner.push_response(agent_llm::ChatResponse {
        content: None,
        tool_calls: vec![plan_call(&["First"])],
        usage: Some(ScriptedModel::usage(1_400, 100)),
        finish_reason: None,
        model: None,
    });
    let mut flow = PlanningFlow::new(planner.clone())
        .with_agent("manus", worker("Manus", "A versatile agent", &manus))
        .with_options(FlowOptions {
            budget: Budget {
                max_tokens: Some(1_500),
                ..Budget::default()
            },
            ..options()
        });
    let outcome = flow.execute("Do one thing.").await.unwrap();
    let exceeded = outcome.budget.expect("the plan alone reached the budget");
    assert_eq!(exceeded.used, 1500.0);
    assert!(outcome.steps.is_empty());
}
