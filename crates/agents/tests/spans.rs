//! The GenAI spans as the exporter's layer makes them, recorded in memory: what Phoenix does not
//! keep (the span kinds, the status, list attributes, events) and the planning flow's spans.
//! A real `Model` against the strict mock, so the model calls are the production path.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod recording;

use std::sync::Arc;

use agent_core::Agent;
use agent_testkit::{
    Completion, EchoTool, FailTool, MockOpenAi, ScriptedModel, ToolProbe, tool_call,
};
use agent_toolcall::ToolCallAgent;
use agents::flow::{Flow, FlowOptions, PlanningFlow};
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, Value};
use serde_json::json;

use crate::recording::{Recording, attribute, model, names, one};

#[tokio::test]
async fn a_run_is_an_internal_agent_span_over_client_chat_spans_and_tool_spans() {
    let recording = Recording::start();
    let mock = MockOpenAi::start().await.unwrap();
    mock.push(Completion::tool_calls(
        None,
        [
            tool_call("e", "echo", &json!({"text": "hi"}).to_string()),
            tool_call(
                "f",
                "fail",
                &json!({"mode": "failure", "message": "no"}).to_string(),
            ),
        ],
    ))
    .push(Completion::tool_calls(
        Some("Done.".into()),
        [tool_call("t", "terminate", r#"{"status":"success"}"#)],
    ));
    let probe = ToolProbe::new();
    let mut agent = ToolCallAgent::new(model(&mock))
        .with_name("probe")
        .with_tool(EchoTool::new(&probe))
        .with_tool(FailTool::new(&probe));
    agent.base_mut().set_session(Some("s-1".into()));
    let outcome = agent.run(Some("go".into())).await.unwrap();
    assert!(
        matches!(outcome.status, agent_core::RunStatus::Finished(_)),
        "{:?}",
        outcome.status
    );

    let spans = recording.spans();
    assert_eq!(spans.len(), 6, "{:?}", names(&spans));
    let run = one(&spans, "invoke_agent probe");
    assert_eq!(run.span_kind, SpanKind::Internal);
    assert_eq!(run.parent_span_id, opentelemetry::trace::SpanId::INVALID);
    assert_eq!(
        attribute(run, "gen_ai.conversation.id"),
        Some(&Value::from("s-1"))
    );
    assert_eq!(
        attribute(run, "gen_ai.provider.name"),
        Some(&Value::from("openai"))
    );
    assert_eq!(run.status, Status::Unset);
    let trace = run.span_context.trace_id();
    for span in &spans {
        assert_eq!(span.span_context.trace_id(), trace, "{}", span.name);
        if span.name != run.name {
            assert_eq!(
                span.parent_span_id,
                run.span_context.span_id(),
                "{}",
                span.name
            );
        }
    }
    let chats: Vec<_> = spans.iter().filter(|s| s.name == "chat gpt-4o").collect();
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        assert_eq!(chat.span_kind, SpanKind::Client);
        assert!(matches!(
            attribute(chat, "gen_ai.usage.input_tokens"),
            Some(Value::I64(n)) if *n > 0
        ));
        assert_eq!(attribute(chat, "gen_ai.input.messages"), None, "no content");
        // The mock answers as the model asked; a provider names the snapshot that answered.
        assert_eq!(
            attribute(chat, "gen_ai.response.model"),
            Some(&Value::from("gpt-4o"))
        );
        assert_eq!(
            attribute(chat, "server.address"),
            Some(&Value::from("127.0.0.1"))
        );
        assert!(matches!(
            attribute(chat, "server.port"),
            Some(Value::I64(n)) if *n > 0
        ));
        // Nothing came from a cache: no count rather than 0.
        assert_eq!(
            attribute(chat, "gen_ai.usage.cache_read.input_tokens"),
            None
        );
    }
    assert_eq!(
        attribute(chats[0], "gen_ai.response.finish_reasons"),
        Some(&Value::Array(Array::String(vec!["tool_calls".into()])))
    );
    let echo = one(&spans, "execute_tool echo");
    assert_eq!(echo.span_kind, SpanKind::Internal);
    assert_eq!(
        attribute(echo, "gen_ai.tool.call.id"),
        Some(&Value::from("e"))
    );
    assert_eq!(echo.status, Status::Unset);
    assert_eq!(
        attribute(echo, "gen_ai.tool.call.arguments"),
        None,
        "no content"
    );
    let fail = one(&spans, "execute_tool fail");
    assert_eq!(
        attribute(fail, "error.type"),
        Some(&Value::from("tool_error"))
    );
    assert!(
        matches!(fail.status, Status::Error { .. }),
        "{:?}",
        fail.status
    );
    mock.verify().unwrap();
}

#[tokio::test]
async fn the_planning_flow_is_a_workflow_with_its_plan_and_each_steps_run() {
    let recording = Recording::start();
    let planner = Arc::new(ScriptedModel::new());
    let plan = json!({"command": "create", "plan_id": "p", "title": "T", "steps": ["Say it"]});
    planner.push_tool_calls("", [tool_call("plan_1", "planning", &plan.to_string())]);
    planner.push_text("Said.");
    let worker = Arc::new(ScriptedModel::new());
    worker.push_tool_calls(
        "Done.",
        [tool_call("t", "terminate", r#"{"status":"success"}"#)],
    );
    let mut flow = PlanningFlow::new(planner)
        .with_agent("manus", ToolCallAgent::new(worker).with_name("Manus"))
        .with_options(FlowOptions {
            plan_id: Some("p".into()),
            ..FlowOptions::default()
        });
    let outcome = flow.execute("Say it").await.unwrap();
    assert!(outcome.is_complete());

    let spans = recording.spans();
    let workflow = one(&spans, "invoke_workflow planning");
    assert_eq!(
        workflow.parent_span_id,
        opentelemetry::trace::SpanId::INVALID
    );
    let id = workflow.span_context.span_id();
    let plan = one(&spans, "plan planning");
    assert_eq!(plan.parent_span_id, id);
    assert_eq!(
        attribute(plan, "gen_ai.operation.name"),
        Some(&Value::from("plan"))
    );
    let run = one(&spans, "invoke_agent Manus");
    assert_eq!(run.parent_span_id, id, "a step's run is the workflow's");
    let terminate = one(&spans, "execute_tool terminate");
    assert_eq!(terminate.parent_span_id, run.span_context.span_id());
}
