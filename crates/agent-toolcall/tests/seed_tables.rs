//! The seed's tables, row by row, on a real ToolCallAgent driven by the scripted model: the three
//! `tool_choice` modes, every `execute_tool` outcome, and the special-tool hooks. Each test
//! asserts the exact messages stored in memory and the exact request the model received.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use agent_core::{
    Agent, AgentError, AgentState, FinishReason, Message, RunStatus, ToolChoice, check_tool_pairing,
};
use agent_llm::ChatRequest;
use agent_testkit::{EchoTool, FailTool, ImageTool, ScriptedModel, ToolProbe, tool_call};
use agent_toolcall::{ToolCallAgent, ToolCallCore, ToolCallHooks};
use agent_tools::{Terminate, ToolCollection, ToolResult};
use async_trait::async_trait;
use serde_json::{Value, json};

const SYSTEM: &str = "You are a test agent.";
const NEXT: &str = "Decide the next action.";
const TASK: &str = "Do the task.";

struct Fixture {
    model: Arc<ScriptedModel>,
    probe: Arc<ToolProbe>,
}

impl Fixture {
    fn new() -> Self {
        Self {
            model: Arc::new(ScriptedModel::new()),
            probe: ToolProbe::new(),
        }
    }

    fn tools(&self) -> ToolCollection {
        let mut tools = ToolCollection::new();
        tools.add_tool(EchoTool::new(&self.probe));
        tools.add_tool(FailTool::new(&self.probe));
        tools.add_tool(ImageTool::new(&self.probe));
        tools.add_tool(Terminate);
        tools
    }

    fn agent(&self, choice: ToolChoice, max_steps: u32) -> ToolCallAgent {
        ToolCallAgent::new(self.model.clone())
            .with_tools(self.tools())
            .with_system_prompt(SYSTEM)
            .with_next_step_prompt(NEXT)
            .with_tool_choice(choice)
            .with_max_steps(max_steps)
    }

    fn request(&self, index: usize) -> ChatRequest {
        self.model.requests()[index].clone()
    }
}

fn to_json(messages: &[Message]) -> Value {
    serde_json::to_value(messages).unwrap()
}

fn call_json(id: &str, name: &str, args: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
}

/// The request every think sends: system prompt first (not from memory), the conversation, the
/// next-step prompt last (ephemeral by default), every tool schema, and the tool_choice.
fn assert_request(
    request: &ChatRequest,
    agent: &ToolCallAgent<impl ToolCallHooks>,
    conversation: Value,
    choice: ToolChoice,
) {
    assert_eq!(
        to_json(&request.system_msgs),
        json!([{"role": "system", "content": SYSTEM}])
    );
    let mut expected = conversation.as_array().unwrap().clone();
    expected.push(json!({"role": "user", "content": NEXT}));
    assert_eq!(to_json(&request.messages), Value::Array(expected));
    assert_eq!(*request.tools, *agent.core().tools.to_params());
    assert_eq!(
        request.tool_names(),
        vec!["echo", "fail", "screenshot", "terminate"]
    );
    assert_eq!(request.tool_choice, Some(choice));
}

// ---- tool_choice modes -------------------------------------------------------------------

#[tokio::test]
async fn none_mode_text_reply_is_kept_and_the_step_returns_it() {
    let f = Fixture::new();
    f.model.push_text("Here is my answer.");
    let mut agent = f.agent(ToolChoice::None, 1);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();

    assert_eq!(
        outcome.text(),
        "Step 1: Here is my answer.\nTerminated: Reached max steps (1)"
    );
    assert_eq!(
        to_json(agent.messages()),
        json!([
            {"role": "user", "content": TASK},
            {"role": "assistant", "content": "Here is my answer."}
        ])
    );
    assert_request(
        &f.request(0),
        &agent,
        json!([{"role": "user", "content": TASK}]),
        ToolChoice::None,
    );
}

#[tokio::test]
async fn none_mode_drops_stray_tool_calls_instead_of_running_them() {
    let f = Fixture::new();
    f.model.push_tool_calls(
        "Answer without tools.",
        [tool_call("c1", "echo", r#"{"text":"x"}"#)],
    );
    let mut agent = f.agent(ToolChoice::None, 1);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();

    assert_eq!(outcome.steps[0].result, "Answer without tools.");
    assert!(
        f.probe.calls().is_empty(),
        "spec W19: the call must not run"
    );
    assert_eq!(
        to_json(agent.messages()),
        json!([
            {"role": "user", "content": TASK},
            {"role": "assistant", "content": "Answer without tools."}
        ])
    );
    check_tool_pairing(agent.messages(), false).unwrap();
}

#[tokio::test]
async fn none_mode_without_text_thinks_there_is_nothing_to_do() {
    let f = Fixture::new();
    f.model
        .push_tool_calls("", [tool_call("c1", "echo", r#"{"text":"x"}"#)]);
    let mut agent = f.agent(ToolChoice::None, 1);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();

    assert_eq!(
        outcome.steps[0].result,
        "Thinking complete - no action needed"
    );
    assert_eq!(
        to_json(agent.messages()),
        json!([{"role": "user", "content": TASK}])
    );
    assert!(f.probe.calls().is_empty());
}

#[tokio::test]
async fn auto_mode_runs_the_calls_and_stores_each_observation() {
    let f = Fixture::new();
    f.model.push_tool_calls(
        "Echo twice.",
        [
            tool_call("c1", "echo", r#"{"text":"one"}"#),
            tool_call("c2", "echo", r#"{"text":"two"}"#),
        ],
    );
    let mut agent = f.agent(ToolChoice::Auto, 1);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();

    assert_eq!(
        outcome.steps[0].result,
        "Observed output of cmd `echo` executed:\none\n\nObserved output of cmd `echo` executed:\ntwo"
    );
    assert_eq!(f.probe.calls(), ["c1", "c2"], "calls run in order");
    assert_eq!(
        to_json(agent.messages()),
        json!([
            {"role": "user", "content": TASK},
            {"role": "assistant", "content": "Echo twice.", "tool_calls": [
                call_json("c1", "echo", r#"{"text":"one"}"#),
                call_json("c2", "echo", r#"{"text":"two"}"#)
            ]},
            {"role": "tool", "content": "Observed output of cmd `echo` executed:\none", "name": "echo", "tool_call_id": "c1"},
            {"role": "tool", "content": "Observed output of cmd `echo` executed:\ntwo", "name": "echo", "tool_call_id": "c2"}
        ])
    );
    assert_request(
        &f.request(0),
        &agent,
        json!([{"role": "user", "content": TASK}]),
        ToolChoice::Auto,
    );
}

#[tokio::test]
async fn auto_mode_text_reply_keeps_looping_and_the_next_request_carries_it() {
    let f = Fixture::new();
    f.model
        .push_text("Thinking aloud.")
        .push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
    let mut agent = f.agent(ToolChoice::Auto, 5);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();

    assert_eq!(outcome.steps.len(), 2);
    assert_eq!(outcome.steps[0].result, "Thinking aloud.");
    assert!(
        matches!(outcome.status, RunStatus::Finished(FinishReason::SpecialTool { ref name }) if name == "terminate")
    );
    assert_request(
        &f.request(1),
        &agent,
        json!([
            {"role": "user", "content": TASK},
            {"role": "assistant", "content": "Thinking aloud."}
        ]),
        ToolChoice::Auto,
    );
}

#[tokio::test]
async fn auto_mode_empty_reply_thinks_there_is_nothing_to_do_and_stores_nothing() {
    let f = Fixture::new();
    f.model.push_text("");
    let mut agent = f.agent(ToolChoice::Auto, 1);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();

    assert_eq!(
        outcome.steps[0].result,
        "Thinking complete - no action needed"
    );
    assert_eq!(
        to_json(agent.messages()),
        json!([{"role": "user", "content": TASK}])
    );
}

#[tokio::test]
async fn required_mode_with_calls_runs_them() {
    let f = Fixture::new();
    f.model
        .push_tool_calls("", [tool_call("c1", "echo", r#"{"text":"hi"}"#)]);
    let mut agent = f.agent(ToolChoice::Required, 1);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();

    assert_eq!(
        outcome.steps[0].result,
        "Observed output of cmd `echo` executed:\nhi"
    );
    assert_eq!(
        to_json(agent.messages()),
        json!([
            {"role": "user", "content": TASK},
            {"role": "assistant", "content": "", "tool_calls": [call_json("c1", "echo", r#"{"text":"hi"}"#)]},
            {"role": "tool", "content": "Observed output of cmd `echo` executed:\nhi", "name": "echo", "tool_call_id": "c1"}
        ])
    );
    assert_request(
        &f.request(0),
        &agent,
        json!([{"role": "user", "content": TASK}]),
        ToolChoice::Required,
    );
}

#[tokio::test]
async fn required_mode_without_calls_fails_the_run_with_a_typed_error() {
    let f = Fixture::new();
    f.model.push_text("I refuse to use tools.");
    let mut agent = f.agent(ToolChoice::Required, 3);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();

    let RunStatus::Failed(error) = &outcome.status else {
        panic!("expected a failed run, got {}", outcome.status)
    };
    assert!(matches!(**error, AgentError::ToolCallsRequired));
    assert_eq!(error.to_string(), "Tool calls required but none provided");
    assert_eq!(
        outcome.text(),
        "Error: Tool calls required but none provided"
    );
    assert_eq!(agent.base().state(), AgentState::Error);
    assert_eq!(outcome.final_state, AgentState::Error);
    assert_eq!(
        to_json(agent.messages()),
        json!([
            {"role": "user", "content": TASK},
            {"role": "assistant", "content": "I refuse to use tools."}
        ])
    );
    assert_eq!(
        f.model.requests().len(),
        1,
        "the run stops at the failing step"
    );
}

// ---- execute_tool outcomes ---------------------------------------------------------------

#[tokio::test]
async fn every_execute_tool_outcome_is_an_observation_in_openmanus_words() {
    let f = Fixture::new();
    let rows = [
        // (call, expected observation)
        (tool_call("c1", "nope", "{}"), "Error: Unknown tool 'nope'"),
        (
            tool_call("c2", "echo", "{not json"),
            "Error: Error parsing arguments for echo: Invalid JSON format",
        ),
        (
            tool_call("c3", "fail", r#"{"mode":"crash","message":"boom"}"#),
            "Error: ⚠️ Tool 'fail' encountered a problem: boom",
        ),
        (
            tool_call("c4", "fail", r#"{"mode":"failure","message":"disk full"}"#),
            "Observed output of cmd `fail` executed:\nError: disk full",
        ),
        (
            tool_call("c5", "echo", r#"{"text":"hello"}"#),
            "Observed output of cmd `echo` executed:\nhello",
        ),
        (
            tool_call("c6", "echo", r#"{"text":""}"#),
            "Cmd `echo` completed with no output",
        ),
        (tool_call("c7", "", "{}"), "Error: Invalid command format"),
        (
            tool_call("c8", "echo", r#"{"txt":"typo"}"#),
            "Error: ⚠️ Tool 'echo' encountered a problem: Invalid arguments: missing field `text`",
        ),
        (
            tool_call("c9", "echo", ""),
            "Error: ⚠️ Tool 'echo' encountered a problem: Invalid arguments: missing field `text`",
        ),
        (
            tool_call("c10", "echo", "[1, 2]"),
            "Error: ⚠️ Tool 'echo' encountered a problem: Invalid arguments: expected a JSON object, got an array",
        ),
    ];
    f.model
        .push_tool_calls("", rows.iter().map(|(call, _)| call.clone()));
    let mut agent = f.agent(ToolChoice::Auto, 1);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();

    let mut expected = vec![
        json!({"role": "user", "content": TASK}),
        json!({"role": "assistant", "content": "", "tool_calls":
            rows.iter().map(|(c, _)| call_json(&c.id, &c.function.name, &c.function.arguments)).collect::<Vec<_>>()}),
    ];
    for (call, observation) in &rows {
        expected.push(json!({"role": "tool", "content": observation, "name": call.function.name, "tool_call_id": call.id}));
    }
    assert_eq!(to_json(agent.messages()), Value::Array(expected));
    let joined: Vec<&str> = rows.iter().map(|(_, o)| *o).collect();
    assert_eq!(outcome.steps[0].result, joined.join("\n\n"));
    // Only the calls that reached a tool ran; unknown, unparsable and invalid ones did not.
    assert_eq!(f.probe.calls(), ["c3", "c4", "c5", "c6"]);
    check_tool_pairing(agent.messages(), false).unwrap();
    assert_request(
        &f.request(0),
        &agent,
        json!([{"role": "user", "content": TASK}]),
        ToolChoice::Auto,
    );
}

#[tokio::test]
async fn images_become_one_user_message_each_after_the_batch() {
    let f = Fixture::new();
    f.model.push_tool_calls(
        "",
        [
            tool_call("c1", "screenshot", r#"{"caption":"first"}"#),
            tool_call("c2", "echo", r#"{"text":"between"}"#),
            tool_call("c3", "screenshot", r#"{"caption":"second"}"#),
        ],
    );
    let mut agent = f.agent(ToolChoice::Auto, 1);
    agent.run(Some(TASK.into())).await.unwrap();

    assert_request(
        &f.request(0),
        &agent,
        json!([{"role": "user", "content": TASK}]),
        ToolChoice::Auto,
    );
    let image = ImageTool::IMAGE;
    assert_eq!(
        to_json(&agent.messages()[2..]),
        json!([
            {"role": "tool", "content": "Observed output of cmd `screenshot` executed:\nfirst", "name": "screenshot", "tool_call_id": "c1"},
            {"role": "tool", "content": "Observed output of cmd `echo` executed:\nbetween", "name": "echo", "tool_call_id": "c2"},
            {"role": "tool", "content": "Observed output of cmd `screenshot` executed:\nsecond", "name": "screenshot", "tool_call_id": "c3"},
            {"role": "user", "content": "Image returned by screenshot:", "base64_image": image},
            {"role": "user", "content": "Image returned by screenshot:", "base64_image": image}
        ])
    );
}

// ---- special tools -------------------------------------------------------------------------

#[tokio::test]
async fn terminate_finishes_the_run_after_the_rest_of_the_batch() {
    let f = Fixture::new();
    f.model.push_tool_calls(
        "Done.",
        [
            tool_call("t1", "terminate", r#"{"status":"success"}"#),
            tool_call("c2", "echo", r#"{"text":"after"}"#),
        ],
    );
    let mut agent = f.agent(ToolChoice::Auto, 10);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();

    assert_eq!(agent.base().state(), AgentState::Finished);
    assert_eq!(outcome.final_state, AgentState::Finished);
    assert!(
        matches!(outcome.status, RunStatus::Finished(FinishReason::SpecialTool { ref name }) if name == "terminate")
    );
    assert_eq!(outcome.steps.len(), 1);
    assert_eq!(
        f.probe.calls(),
        ["c2"],
        "the call after terminate still runs"
    );
    assert_eq!(
        to_json(&agent.messages()[2..]),
        json!([
            {"role": "tool", "content": "Observed output of cmd `terminate` executed:\nThe interaction has been completed with status: success", "name": "terminate", "tool_call_id": "t1"},
            {"role": "tool", "content": "Observed output of cmd `echo` executed:\nafter", "name": "echo", "tool_call_id": "c2"}
        ])
    );
    assert_eq!(
        outcome.text(),
        "Step 1: Observed output of cmd `terminate` executed:\nThe interaction has been completed with status: success\n\nObserved output of cmd `echo` executed:\nafter",
        "no 'Terminated' line for a run that finished"
    );
    assert_eq!(f.model.requests().len(), 1);
    assert_request(
        &f.request(0),
        &agent,
        json!([{"role": "user", "content": TASK}]),
        ToolChoice::Auto,
    );
}

#[tokio::test]
async fn special_tool_names_are_compared_ignoring_case() {
    let f = Fixture::new();
    f.model
        .push_tool_calls("", [tool_call("c1", "Echo_Stop", r#"{"text":"bye"}"#)]);
    let mut tools = f.tools();
    tools.add_tool(EchoTool::named("Echo_Stop", &f.probe));
    let mut agent = f
        .agent(ToolChoice::Auto, 5)
        .with_tools(tools)
        .with_special_tool_names(["echo_STOP"]);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert!(
        matches!(outcome.status, RunStatus::Finished(FinishReason::SpecialTool { ref name }) if name == "Echo_Stop")
    );
}

#[tokio::test]
async fn a_special_tool_finishes_even_with_a_failed_result_but_not_when_it_raised() {
    // ToolError::Failure becomes a failed ToolResult: the special-tool hook still runs.
    let f = Fixture::new();
    f.model.push_tool_calls(
        "",
        [tool_call(
            "c1",
            "fail",
            r#"{"mode":"failure","message":"no"}"#,
        )],
    );
    let mut agent = f
        .agent(ToolChoice::Auto, 3)
        .with_special_tool_names(["fail"]);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert!(outcome.is_finished());
    assert_eq!(outcome.steps.len(), 1);

    // A tool that raised skips the hook, as does a terminate whose arguments are invalid.
    let f = Fixture::new();
    f.model
        .push_tool_calls(
            "",
            [tool_call(
                "c1",
                "fail",
                r#"{"mode":"crash","message":"no"}"#,
            )],
        )
        .push_tool_calls("", [tool_call("c2", "terminate", r#"{"status":"maybe"}"#)]);
    let mut agent = f
        .agent(ToolChoice::Auto, 2)
        .with_special_tool_names(["fail", "terminate"]);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert!(matches!(outcome.status, RunStatus::MaxSteps(2)));
    assert!(agent.messages().last().unwrap().text().starts_with(
        "Error: ⚠️ Tool 'terminate' encountered a problem: Invalid arguments: unknown variant `maybe`"
    ));
}

/// MCPAgent's rule: only a tool literally named `terminate` finishes.
struct OnlyExactTerminate;

#[async_trait]
impl ToolCallHooks for OnlyExactTerminate {
    fn should_finish_execution(
        &self,
        _core: &ToolCallCore,
        name: &str,
        _result: &ToolResult,
    ) -> bool {
        name == "terminate"
    }
}

#[tokio::test]
async fn should_finish_execution_can_be_overridden() {
    let f = Fixture::new();
    f.model
        .push_tool_calls("", [tool_call("c1", "echo", r#"{"text":"not yet"}"#)])
        .push_tool_calls(
            "",
            [tool_call("c2", "terminate", r#"{"status":"success"}"#)],
        );
    let mut agent = f
        .agent(ToolChoice::Auto, 5)
        .with_special_tool_names(["echo", "terminate"])
        .with_hooks(OnlyExactTerminate);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert_eq!(
        outcome.steps.len(),
        2,
        "echo is special but the hook refused to finish on it"
    );
    assert!(
        matches!(outcome.status, RunStatus::Finished(FinishReason::SpecialTool { ref name }) if name == "terminate")
    );
}

#[tokio::test]
async fn a_special_name_that_is_not_a_tool_is_just_unknown() {
    let f = Fixture::new();
    f.model
        .push_tool_calls("", [tool_call("c1", "finish", "{}")]);
    let mut agent = f
        .agent(ToolChoice::Auto, 1)
        .with_special_tool_names(["finish"]);
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert!(matches!(outcome.status, RunStatus::MaxSteps(1)));
    assert_eq!(
        agent.messages().last().unwrap().text(),
        "Error: Unknown tool 'finish'"
    );
}
