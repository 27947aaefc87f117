//! Request trimming over the real client, the strict mock server and real tools (the file
//! editor on a temporary directory): each policy sends fewer bytes, and the model still gets
//! what the task needs — the latest view of a file intact, the first copy of a repeated output,
//! the latest image, the task — with every tool result still answering its call. OpenManus mode
//! sends memory as it is.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use agent_core::{Agent, Message, Role, ToolCall, check_tool_pairing};
use agent_llm::{LlmSettings, Model};
use agent_testkit::mock_openai::RecordedRequest;
use agent_testkit::{Completion, EchoTool, MockOpenAi, ScriptedModel, ToolProbe};
use agent_toolcall::{Policies, RequestTrimming, ToolCallAgent, TrimPolicy};
use agent_tools::{StrReplaceEditor, ToolContext, ToolError, ToolResult, TypedTool};
use async_trait::async_trait;
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

const TASK: &str = "Fix the failing test in app.py, check the page, then stop.";

/// A 2.4 KB test log, the same on both runs.
fn test_log() -> String {
    (1..=40)
        .map(|i| format!("tests/test_app.py::test_case_{i:02} PASSED                [{i:>3}%]\n"))
        .collect::<String>()
        + "FAILED tests/test_app.py::test_total - assert 41 == 42"
}

/// `camera`: returns its caption and an image whose bytes are the caption (so each image can
/// be told apart).
struct Camera;

#[derive(Deserialize, schemars::JsonSchema)]
struct CameraArgs {
    caption: String,
}

#[async_trait]
impl TypedTool for Camera {
    type Args = CameraArgs;
    fn name(&self) -> &str {
        "camera"
    }
    fn description(&self) -> &str {
        "Takes a picture of the page."
    }
    async fn call(&self, args: CameraArgs, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let image = base64::engine::general_purpose::STANDARD.encode(args.caption.as_bytes());
        Ok(ToolResult::success(args.caption).with_image(image))
    }
}

fn image_of(caption: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(caption.as_bytes())
}

/// The scripted trajectory: view, test, edit, test again (same log), view again, two pictures,
/// terminate.
fn calls(file: &str) -> Vec<ToolCall> {
    let log = test_log();
    vec![
        ToolCall::new("view_1", "str_replace_editor", json!({"command": "view", "path": file}).to_string()),
        ToolCall::new("test_1", "echo", json!({"text": log}).to_string()),
        ToolCall::new(
            "edit_1",
            "str_replace_editor",
            json!({"command": "str_replace", "path": file, "old_str": "return 41", "new_str": "return 42"})
                .to_string(),
        ),
        ToolCall::new("test_2", "echo", json!({"text": log}).to_string()),
        ToolCall::new("view_2", "str_replace_editor", json!({"command": "view", "path": file}).to_string()),
        ToolCall::new("shot_1", "camera", json!({"caption": "page before"}).to_string()),
        ToolCall::new("shot_2", "camera", json!({"caption": "page after"}).to_string()),
        ToolCall::new("end", "terminate", json!({"status": "success"}).to_string()),
    ]
}

fn write_app(dir: &Path) -> String {
    let mut body: String = (1..=80)
        .map(|i| format!("def helper_{i}(value):\n    return value + {i}\n"))
        .collect();
    body.push_str("def total():\n    return 41\n");
    let path = dir.join("app.py");
    std::fs::write(&path, body).unwrap();
    path.to_string_lossy().into_owned()
}

fn agent(
    model: Arc<dyn agent_llm::ChatModel>,
    dir: &Path,
    trimming: RequestTrimming,
) -> ToolCallAgent {
    let probe = ToolProbe::new();
    ToolCallAgent::new(model)
        .with_tool(StrReplaceEditor::new().with_workspace_root(dir))
        .with_tool(EchoTool::new(&probe))
        .with_tool(Camera)
        .with_max_steps(20)
        .with_policies(Policies {
            request_trimming: trimming,
            ..Policies::default()
        })
}

/// Runs the trajectory against a strict mock server; returns the requests and the agent.
async fn run_over_http(
    trimming: RequestTrimming,
) -> (Vec<RecordedRequest>, ToolCallAgent, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = write_app(dir.path());
    let server = MockOpenAi::start().await.unwrap();
    for call in calls(&file) {
        server.push(Completion::tool_calls(None, [call]));
    }
    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-trim");
    settings.max_attempts = 1;
    let mut agent = agent(
        Arc::new(Model::new(settings).unwrap()),
        dir.path(),
        trimming,
    );
    let outcome = agent.run(Some(TASK.into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.status);
    server.verify().unwrap();
    check_tool_pairing(agent.messages(), false).unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 8);
    server.shutdown().await;
    (requests, agent, dir)
}

fn total_bytes(requests: &[RecordedRequest]) -> usize {
    requests.iter().map(|r| r.raw_body.len()).sum()
}

/// The tool message answering `id` in a request body.
fn tool_result<'a>(request: &'a RecordedRequest, id: &str) -> &'a Value {
    request
        .messages()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// The `image_url` URLs of a request body, in order.
fn images(request: &RecordedRequest) -> Vec<String> {
    request
        .messages()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter_map(|part| part["image_url"]["url"].as_str().map(str::to_owned))
        .collect()
}

fn only(policy: TrimPolicy) -> RequestTrimming {
    RequestTrimming::of([policy])
}

#[tokio::test]
async fn a_superseded_file_view_is_a_note_and_the_latest_view_is_intact() {
    let (lean, agent, _dir) = run_over_http(only(TrimPolicy::SupersededFileViews)).await;
    let (full, _, _dir2) = run_over_http(RequestTrimming::OPENMANUS).await;
    let last = lean.last().unwrap();
    let old = tool_result(last, "view_1")["content"].as_str().unwrap();
    assert!(old.starts_with("[Output of this view of "), "{old}");
    assert!(
        old.contains("the later call `view_2` showed the whole file again"),
        "{old}"
    );
    let latest = tool_result(last, "view_2")["content"].as_str().unwrap();
    assert!(latest.starts_with("Observed output of cmd `str_replace_editor` executed:\nHere's the result of running `cat -n`"));
    assert!(
        latest.contains("return 42") && !latest.contains("return 41"),
        "{latest}"
    );
    // Before the second view existed, the first was sent whole.
    let before = tool_result(&lean[4], "view_1")["content"].as_str().unwrap();
    assert!(before.contains("return 41"));
    // Memory keeps the first view as it was.
    let stored = agent
        .messages()
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("view_1"))
        .unwrap();
    assert!(stored.text().contains("def helper_80"));
    assert_eq!(last.messages()[1]["content"], TASK);
    assert!(
        total_bytes(&lean) < total_bytes(&full),
        "{} vs {}",
        total_bytes(&lean),
        total_bytes(&full)
    );
    assert!(last.raw_body.len() + 3_000 < full.last().unwrap().raw_body.len());
}

#[tokio::test]
async fn a_repeated_output_points_at_the_first_copy_which_is_sent_whole() {
    let (lean, agent, _dir) = run_over_http(only(TrimPolicy::RepeatedOutputs)).await;
    let (full, _, _dir2) = run_over_http(RequestTrimming::OPENMANUS).await;
    let last = lean.last().unwrap();
    let log = test_log();
    let first = tool_result(last, "test_1")["content"].as_str().unwrap();
    assert_eq!(
        first,
        format!("Observed output of cmd `echo` executed:\n{log}")
    );
    let second = tool_result(last, "test_2")["content"].as_str().unwrap();
    assert!(
        second.starts_with("[Same output as the earlier call `test_1` (`echo`)"),
        "{second}"
    );
    // What was sent never changes afterwards: every request carries the same text for test_2.
    for request in &lean[4..] {
        assert_eq!(
            tool_result(request, "test_2")["content"].as_str().unwrap(),
            second
        );
    }
    let stored = agent
        .messages()
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("test_2"))
        .unwrap();
    assert!(stored.text().ends_with("assert 41 == 42"));
    assert!(total_bytes(&lean) < total_bytes(&full));
}

#[tokio::test]
async fn only_the_latest_image_of_a_tool_is_resent() {
    let (lean, agent, _dir) = run_over_http(only(TrimPolicy::OldImages)).await;
    let (full, _, _dir2) = run_over_http(RequestTrimming::OPENMANUS).await;
    let last = lean.last().unwrap();
    let sent = images(last);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].ends_with(&image_of("page after")), "{}", sent[0]);
    assert_eq!(images(full.last().unwrap()).len(), 2);
    // The older picture's caption stays, with a note.
    let captions: Vec<&str> = last
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        captions.contains(
            &"Image returned by camera: [image not resent: a later image from `camera` replaces it]"
        ),
        "{captions:?}"
    );
    // Memory keeps both images.
    let stored = agent
        .messages()
        .iter()
        .filter(|m| m.base64_image.is_some())
        .count();
    assert_eq!(stored, 2);
    assert!(total_bytes(&lean) < total_bytes(&full));
}

#[tokio::test]
async fn an_image_the_user_gave_is_always_sent() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::new().with_images(true));
    for caption in ["one", "two"] {
        model.push_tool_calls(
            "",
            [agent_testkit::tool_call(
                caption,
                "camera",
                &json!({"caption": caption}).to_string(),
            )],
        );
    }
    model.push_tool_calls(
        "",
        [agent_testkit::tool_call(
            "end",
            "terminate",
            r#"{"status":"success"}"#,
        )],
    );
    let mut agent = agent(model.clone(), dir.path(), RequestTrimming::LEAN);
    agent
        .base_mut()
        .memory
        .add_message(Message::user_message("Here is a sketch of the page.").with_image("c2tldGNo"));
    agent.run(Some(TASK.into())).await.unwrap();
    let last = model.requests().pop().unwrap();
    let sent: Vec<&str> = last
        .messages
        .iter()
        .filter_map(|m| m.base64_image.as_deref())
        .collect();
    assert_eq!(sent, ["c2tldGNo", image_of("two").as_str()]);
}

/// OpenManus mode: every request's conversation is memory as it was at that step, message for
/// message (so byte for byte), while the same run in lean mode differs.
#[tokio::test]
async fn openmanus_mode_sends_memory_as_it_is() {
    for (trimming, same) in [
        (RequestTrimming::OPENMANUS, true),
        (RequestTrimming::LEAN, false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = write_app(dir.path());
        let model = Arc::new(ScriptedModel::new().with_images(true));
        for call in calls(&file) {
            model.push_tool_calls("", [call]);
        }
        let mut agent = agent(model.clone(), dir.path(), trimming);
        agent.run(Some(TASK.into())).await.unwrap();
        let memory = agent.messages();
        let mut identical = true;
        for request in model.requests() {
            // The ephemeral next-step prompt is last and never stored.
            let (prompt, conversation) = request.messages.split_last().unwrap();
            assert_eq!(prompt.role, Role::User);
            let expected = &memory[..conversation.len()];
            identical &= conversation == expected;
            if same {
                assert_eq!(
                    serde_json::to_string(conversation).unwrap(),
                    serde_json::to_string(expected).unwrap()
                );
            }
        }
        assert_eq!(identical, same, "{trimming:?}");
    }
}
