//! The bytes of every wire format this workspace writes, pinned in `tests/snapshots/*.snap`:
//! agent and flow events (as the CLI's `--json` writes them, and as the store, the journal, SSE
//! and NATS carry them: through `serde_json::Value`, keys sorted), the usage records, how runs
//! end, the NATS task/event/result messages, the session store's events and run records, and
//! the page's SSE frames.
//!
//! The values are built through the public API of the crates a front end uses, so that moving
//! a type to another crate changes only the `use` lines here, never a snapshot. A failure names
//! each case whose bytes changed; `UPDATE_SNAPSHOTS=1` rewrites a file when a change is meant
//! (see agent_testkit::snapshot).

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_core::{AgentEvent, AgentState, ToolCall};
use agent_protocol::usage::reply;
use agent_session::Ending;
use agent_store::{
    EventKind, JsonText, NewEvent, NewSession, RunState, RunSummary, Store, StoredEvent, TokenUsage,
};
use agent_testkit::snapshot::{Snapshot, scrub};
use agent_tools::{Plan, StepStatus};
use agent_worker::{TaskEvent, TaskMessage, TaskResult};
use agents::FlowEvent;
use agents::flow::PlanSource;
use serde::Serialize;
use serde_json::{Value, json};

fn snapshot(name: &str) -> Snapshot {
    Snapshot::new(format!(
        "{}/tests/snapshots/{name}.snap",
        env!("CARGO_MANIFEST_DIR")
    ))
}

/// Serialised directly: declaration order (the CLI's `--json` event lines, NATS messages).
fn direct(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap()
}

/// Through `serde_json::Value`: keys sorted (the store, the journal, SSE, A2A).
fn sorted(value: &impl Serialize) -> String {
    serde_json::to_value(value).unwrap().to_string()
}

fn call(id: &str) -> ToolCall {
    ToolCall::new(id, "bash", r#"{"command":"echo hi"}"#)
}

fn priced_usage() -> AgentEvent {
    AgentEvent::TokenUsage {
        prompt_tokens: 1200,
        cached_prompt_tokens: 200,
        completion_tokens: 35,
        cost_usd: Some(0.000_175),
    }
}

fn unpriced_usage() -> AgentEvent {
    AgentEvent::TokenUsage {
        prompt_tokens: 40,
        cached_prompt_tokens: 0,
        completion_tokens: 4,
        cost_usd: None,
    }
}

/// A run's tally after `events`, as the agent, the session and the recorder add it up.
fn tally(events: &[AgentEvent]) -> TokenUsage {
    let mut usage = TokenUsage::default();
    for call in events.iter().filter_map(AgentEvent::token_usage) {
        usage.add_call(&call);
    }
    usage
}

fn run_usage() -> TokenUsage {
    tally(&[priced_usage(), unpriced_usage()])
}

/// One of every agent event, each with the fields a real run gives it.
fn agent_events() -> Vec<(&'static str, AgentEvent)> {
    vec![
        (
            "run_started",
            AgentEvent::RunStarted {
                agent: "SWE".into(),
                request: Some("Fix the bug".into()),
            },
        ),
        (
            "run_started_without_request",
            AgentEvent::RunStarted {
                agent: "Manus".into(),
                request: None,
            },
        ),
        (
            "step_started",
            AgentEvent::StepStarted {
                step: 1,
                max_steps: 20,
            },
        ),
        (
            "thought",
            AgentEvent::Thought {
                step: 1,
                content: "I will **look** first.\nThen \"act\".".into(),
                tool_calls: vec![call("call_1")],
            },
        ),
        (
            "tool_call_started",
            AgentEvent::ToolCallStarted {
                step: 1,
                call: call("call_1"),
            },
        ),
        (
            "tool_call_finished",
            AgentEvent::ToolCallFinished {
                step: 1,
                call_id: "call_1".into(),
                name: "bash".into(),
                observation: "Observed output of cmd `bash` executed:\nhi\n".into(),
                success: true,
            },
        ),
        (
            "step_finished",
            AgentEvent::StepFinished {
                step: 1,
                result: "Observed output of cmd `bash` executed:\nhi\n".into(),
            },
        ),
        (
            "state_changed",
            AgentEvent::StateChanged {
                from: AgentState::Idle,
                to: AgentState::Running,
            },
        ),
        (
            "state_changed_to_error",
            AgentEvent::StateChanged {
                from: AgentState::Running,
                to: AgentState::Error,
            },
        ),
        ("text_delta", AgentEvent::TextDelta { text: "Hel".into() }),
        ("token_usage_priced", priced_usage()),
        ("token_usage_unpriced", unpriced_usage()),
        (
            "compacted",
            AgentEvent::Compacted {
                step: 7,
                strategy: "summarize".into(),
                removed_messages: 12,
                tokens_before: 90_000,
                tokens_after: 21_000,
            },
        ),
        (
            "retry",
            AgentEvent::Retry {
                attempt: 2,
                delay_ms: 1500,
                reason: "HTTP 429".into(),
            },
        ),
        (
            "image",
            AgentEvent::Image {
                step: 3,
                caption: "screenshot".into(),
                image: "iVBORw0KGgo=".into(),
            },
        ),
        ("stuck", AgentEvent::Stuck { step: 9 }),
        (
            "finished",
            AgentEvent::Finished {
                status: "finished (special tool `terminate`)".into(),
                steps: 3,
                usage: run_usage(),
            },
        ),
        (
            "finished_max_steps",
            AgentEvent::Finished {
                status: "max_steps (20)".into(),
                steps: 20,
                usage: TokenUsage::default(),
            },
        ),
    ]
}

/// Events for live views only: never journaled or stored (`AgentEvent::is_live_only`), so
/// they have no stored form to pin; their own JSON is pinned with the others'.
fn live_only_events() -> Vec<(&'static str, AgentEvent)> {
    vec![(
        "reasoning_delta",
        AgentEvent::ReasoningDelta {
            text: "First, ".into(),
        },
    )]
}

fn flow_events() -> Vec<(&'static str, FlowEvent)> {
    let mut plan = Plan::new(
        "plan_1",
        "Chart the sales",
        vec!["Read the CSV".into(), "Draw the chart".into()],
    );
    plan.step_statuses[0] = StepStatus::Completed;
    plan.step_notes[0] = "12 rows".into();
    vec![
        (
            "plan_created_by_model",
            FlowEvent::PlanCreated {
                plan: plan.clone(),
                source: PlanSource::Model,
            },
        ),
        (
            "plan_created_default",
            FlowEvent::PlanCreated {
                plan: plan.clone(),
                source: PlanSource::Default {
                    reason: "the planner made no plan".into(),
                },
            },
        ),
        (
            "plan_existing",
            FlowEvent::PlanCreated {
                plan,
                source: PlanSource::Existing,
            },
        ),
        (
            "step_started",
            FlowEvent::StepStarted {
                index: 0,
                text: "Read the CSV".into(),
                executor: "manus".into(),
                attempt: 1,
            },
        ),
        (
            "step_finished",
            FlowEvent::StepFinished {
                index: 0,
                executor: "manus".into(),
                attempt: 1,
                status: StepStatus::Completed,
                run_status: "finished (special tool `terminate`)".into(),
                note: Some("12 rows".into()),
            },
        ),
        (
            "step_blocked",
            FlowEvent::StepFinished {
                index: 1,
                executor: "data_analysis".into(),
                attempt: 2,
                status: StepStatus::Blocked,
                run_status: "error: the model failed".into(),
                note: None,
            },
        ),
        (
            "finished",
            FlowEvent::Finished {
                completed: 1,
                blocked: 1,
                timed_out: false,
                cancelled: false,
            },
        ),
    ]
}

#[test]
fn agent_events_direct_and_sorted() {
    let mut snap = snapshot("agent_events");
    for (name, event) in agent_events().into_iter().chain(live_only_events()) {
        snap.case(format!("{name}.direct"), direct(&event));
        snap.case(format!("{name}.sorted"), sorted(&event));
        // What is written is read back as the same event (journals, stores, NATS).
        let back: AgentEvent = serde_json::from_str(&sorted(&event)).unwrap();
        assert_eq!(back, event, "{name}");
    }
    snap.check();
}

#[test]
fn flow_events_sorted() {
    let mut snap = snapshot("flow_events");
    for (name, event) in flow_events() {
        snap.case(name, sorted(&event));
    }
    snap.check();
}

const STORED_USAGE: [(&str, &str); 4] = [
    (
        "priced",
        r#"{"prompt_tokens":1240,"cached_prompt_tokens":200,"completion_tokens":39,"cost_usd":0.000175}"#,
    ),
    (
        "unpriced",
        r#"{"prompt_tokens":40,"cached_prompt_tokens":0,"completion_tokens":4,"cost_usd":null}"#,
    ),
    (
        "older_without_cache_or_cost",
        r#"{"prompt_tokens":40,"completion_tokens":4}"#,
    ),
    ("zero", r#"{"prompt_tokens":0,"completion_tokens":0}"#),
];

#[test]
fn usage_records_and_endings() {
    let mut snap = snapshot("usage");
    // What a run used, added up from its token_usage events (AgentEvent::Finished, RunOutcome).
    // (One type, TokenUsage, written as a tally there.)
    snap.case("run_usage.direct", direct(&run_usage().as_tally()));
    snap.case("run_usage.sorted", sorted(&run_usage().as_tally()));
    snap.case(
        "run_usage.default",
        direct(&TokenUsage::default().as_tally()),
    );
    // The report's usage (the CLI's result line, the journal's result line): the same tally.
    let report = tally(&[priced_usage()]);
    snap.case("report_usage.priced", sorted(&report.as_tally()));
    let report = tally(&[priced_usage(), unpriced_usage()]);
    snap.case("report_usage.partly_priced", sorted(&report.as_tally()));
    snap.case(
        "report_usage.default",
        sorted(&TokenUsage::default().as_tally()),
    );
    // The store's and the workers' usage (run_finished, run records, task results); the
    // older lines (before cached tokens and cost were recorded) still read.
    for (name, line) in STORED_USAGE {
        let token: TokenUsage = match serde_json::from_str(line) {
            Ok(usage) => usage,
            Err(error) => panic!("{name}: {error}"),
        };
        snap.case(format!("token_usage.{name}"), direct(&token));
        // A task result's usage is the same type as the store's.
        let task: TokenUsage = serde_json::from_str(line).unwrap();
        snap.case(format!("task_usage.{name}"), direct(&task));
    }
    // A provider's per-call usage (the journal's model_response lines, the stored exchanges):
    // TokenUsage written as a reply's.
    for (name, line) in [
        (
            "cached",
            r#"{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"cached_prompt_tokens":4}"#,
        ),
        (
            "uncached",
            r#"{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}"#,
        ),
    ] {
        let usage = reply::deserialize(&mut serde_json::Deserializer::from_str(line)).unwrap();
        snap.case(format!("llm_usage.{name}"), direct(&usage.as_reply()));
    }
    for ending in Ending::ALL {
        snap.case(format!("ending.{ending:?}"), direct(&ending));
    }
    for state in RunState::ALL {
        snap.case(format!("run_state.{state:?}"), direct(&state));
    }
    snap.check();
}

fn task_result(ending: Ending, cost: Option<f64>) -> TaskResult {
    TaskResult {
        task_id: "task-1".into(),
        session_id: "session-1".into(),
        agent: "swe".into(),
        ending,
        status: "finished (special tool `terminate`)".into(),
        answer: Some("Done.".into()),
        text: "Step 1: Observed output of cmd `bash` executed:\nhi\n".into(),
        changes: json!({"created": ["a.txt"], "modified": [], "deleted": []}),
        usage: TokenUsage {
            prompt_tokens: 1240,
            cached_prompt_tokens: 200,
            completion_tokens: 39,
            cost_usd: cost,
            ..TokenUsage::default()
        },
        worker: "worker-a".into(),
        attempt: 1,
        events: 14,
        started_at: 1_700_000_000_000,
        finished_at: 1_700_000_004_000,
    }
}

#[test]
fn nats_messages() {
    let mut snap = snapshot("nats");
    let plain = TaskMessage::new("swe", "Fix the bug").with_id("task-1");
    let in_session = plain.clone().in_session("session-1");
    let mut with_settings = in_session.clone();
    with_settings.options.settings = json!({"max_steps": 5});
    for (name, task) in [
        ("task", plain),
        ("task_in_session", in_session),
        ("task_with_settings", with_settings),
    ] {
        let bytes = task.to_bytes().unwrap();
        snap.case(name, String::from_utf8(bytes.to_vec()).unwrap());
        assert_eq!(TaskMessage::from_bytes(&bytes).unwrap(), task, "{name}");
    }
    for (name, event) in agent_events() {
        let task_event = TaskEvent {
            task_id: "task-1".into(),
            session_id: "session-1".into(),
            attempt: 1,
            worker: "worker-a".into(),
            seq: 3,
            run_id: Some(2),
            at: 1_700_000_000_000,
            kind: EventKind::Agent,
            data: serde_json::to_value(&event).unwrap(),
        };
        snap.case(format!("task_event.{name}"), direct(&task_event));
    }
    for ending in Ending::ALL {
        for (priced, cost) in [("priced", Some(0.000_175)), ("unpriced", None)] {
            let result = task_result(ending, cost);
            let bytes = result.to_bytes().unwrap();
            snap.case(
                format!("result.{ending:?}.{priced}"),
                String::from_utf8(bytes.to_vec()).unwrap(),
            );
            assert_eq!(TaskResult::from_bytes(&bytes).unwrap(), result);
        }
    }
    snap.check();
}

/// A run's life in a fresh store: every agent and flow event stored, then one finished run for
/// every way a run ends, priced and not.
async fn recorded_store() -> (Store, Vec<StoredEvent>) {
    let store = Store::open_memory().await.unwrap();
    store
        .create_session(NewSession::new("swe", "/work/space").with_id("session-1"))
        .await
        .unwrap();
    let mut stored = Vec::new();
    let (run, started) = store.begin_run("session-1", "Fix the bug").await.unwrap();
    stored.push(started);
    for (_, event) in agent_events() {
        let new = NewEvent {
            run_id: Some(run),
            at: 1_700_000_000_000,
            kind: EventKind::Agent,
            data: JsonText::of(&event).unwrap(),
        };
        stored.push(store.append_event("session-1", new).await.unwrap());
    }
    for (_, event) in flow_events() {
        let new = NewEvent {
            run_id: Some(run),
            at: 1_700_000_000_000,
            kind: EventKind::Flow,
            data: JsonText::of(&event).unwrap(),
        };
        stored.push(store.append_event("session-1", new).await.unwrap());
    }
    let mut first = Some(run);
    for &state in RunState::ALL.iter().skip(1) {
        for cost in [Some(0.000_175), None] {
            let run = match first.take() {
                Some(run) => run,
                None => {
                    let (run, started) = store.begin_run("session-1", "Again").await.unwrap();
                    stored.push(started);
                    run
                }
            };
            let summary = RunSummary {
                state,
                status: format!("{state:?} in words"),
                answer: (state == RunState::Finished).then(|| "Done.".to_owned()),
                text: "Step 1: hi".into(),
                text_parts: None,
                changes: json!({"created": ["a.txt"]}),
                usage: TokenUsage {
                    prompt_tokens: 1240,
                    cached_prompt_tokens: 200,
                    completion_tokens: 39,
                    cost_usd: cost,
                    ..TokenUsage::default()
                },
            };
            stored.push(store.finish_run(run, &summary).await.unwrap());
        }
    }
    (store, stored)
}

const TIMES: [&str; 5] = [
    "at",
    "started_at",
    "finished_at",
    "created_at",
    "updated_at",
];

#[tokio::test]
async fn store_events_and_run_records() {
    let (store, stored) = recorded_store().await;
    let mut snap = snapshot("store");
    let read = store.events_after("session-1", None, 1000).await.unwrap();
    assert_eq!(read.len(), stored.len(), "every event reads back");
    for event in &read {
        let data: Value = event.data.clone();
        snap.case(
            format!("event.{}.{}", event.id, event.kind.as_str()),
            scrub(&data.to_string(), &TIMES),
        );
    }
    for event in &read {
        snap.case(
            format!("stored_event.{}", event.id),
            scrub(&direct(event), &TIMES),
        );
    }
    for run in 1..=10 {
        let record = store.run(run).await.unwrap();
        snap.case(format!("run_record.{run}"), scrub(&sorted(&record), &TIMES));
    }
    let session = store.session("session-1").await.unwrap();
    snap.case("session_record", scrub(&direct(&session), &TIMES));
    snap.check();
}

#[tokio::test]
async fn sse_frames_of_stored_events() {
    use axum::response::IntoResponse;
    use futures::StreamExt;

    let (store, _) = recorded_store().await;
    let read = store.events_after("session-1", None, 1000).await.unwrap();
    let mut snap = snapshot("sse");
    for event in read {
        let frame = agent_server::sse::stored_event(&event);
        let stream = futures::stream::iter([Ok::<_, std::convert::Infallible>(frame)]);
        let body = axum::response::Sse::new(stream).into_response().into_body();
        let mut chunks = body.into_data_stream();
        let mut text = String::new();
        while let Some(chunk) = chunks.next().await {
            text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
        // One frame per line of the snapshot: its lines joined with a visible separator.
        let one_line = scrub(&text.trim_end().replace('\n', " ⏎ "), &TIMES);
        snap.case(format!("frame.{}", event.id), one_line);
    }
    snap.check();
}
