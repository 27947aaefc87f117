//! The strict mock OpenAI server over real HTTP on 127.0.0.1: reply shapes, streaming, the
//! conversation queues, every validation rule, every fault, Azure and auth, and the binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use agent_testkit::{Completion, Fault, MockOpenAi, MockReply, ViolationRule, tool_call};
use futures::StreamExt;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

/// Generous bound for waiting on events; reaching it means the test failed.
const PATIENCE: Duration = Duration::from_secs(30);

fn client() -> reqwest::Client {
    agent_llm::http::client_builder()
        .no_proxy()
        .build()
        .unwrap()
}

fn chat(user: &str) -> Value {
    json!({"model": "gpt-4o", "messages": [{"role": "user", "content": user}]})
}

fn url(server: &MockOpenAi) -> String {
    format!("{}/chat/completions", server.base_url())
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

async fn post(server: &MockOpenAi, body: &Value) -> Reply {
    let response = client().post(url(server)).json(body).send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    Reply {
        status,
        headers,
        body,
    }
}

/// The `data:` payloads of an SSE body, in order.
fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|event| !event.is_empty())
        .map(|event| {
            event
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not an SSE data event: {event:?}"))
                .to_owned()
        })
        .collect()
}

async fn post_stream(server: &MockOpenAi, body: &Value) -> (HeaderMap, Vec<String>) {
    let response = client().post(url(server)).json(body).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    (headers, sse_data(&response.text().await.unwrap()))
}

/// Reads a body until it ends or breaks; returns what arrived and whether it broke.
async fn read_until_cut(response: reqwest::Response) -> (String, bool) {
    let mut stream = response.bytes_stream();
    let mut received = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(bytes) => received.extend_from_slice(&bytes),
            Err(_) => return (String::from_utf8(received).unwrap(), true),
        }
    }
    (String::from_utf8(received).unwrap(), false)
}

fn without_id_and_created(mut body: Value) -> Value {
    let id = body["id"].as_str().unwrap();
    assert!(id.starts_with("chatcmpl-"), "{id}");
    assert!(body["created"].as_u64().unwrap() > 1_600_000_000);
    let object = body.as_object_mut().unwrap();
    object.remove("id");
    object.remove("created");
    body
}

fn assert_error_shape(body: &Value, error_type: &str, code: Option<&str>) {
    let error = body["error"]
        .as_object()
        .unwrap_or_else(|| panic!("{body}"));
    let mut keys: Vec<&str> = error.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "message", "param", "type"], "{body}");
    assert!(!error["message"].as_str().unwrap().is_empty());
    assert_eq!(error["type"], error_type, "{body}");
    assert_eq!(error["code"].as_str(), code, "{body}");
}

#[tokio::test]
async fn text_reply_has_the_exact_openai_shape_and_the_request_is_recorded() {
    let server = MockOpenAi::start().await.unwrap();
    server.push(Completion::text("Hello there").with_usage(12, 3));
    let sent = json!({"model": "gpt-4o-mini", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"}
    ], "temperature": 0.5});

    let reply = post(&server, &sent).await;

    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers["content-type"], "application/json");
    assert_eq!(
        without_id_and_created(reply.body),
        json!({
            "object": "chat.completion",
            "model": "gpt-4o-mini",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "Hello there"},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
        })
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.query, None);
    assert_eq!(request.header("Content-Type"), Some("application/json"));
    assert!(
        request
            .headers
            .iter()
            .all(|(name, _)| *name == name.to_lowercase())
    );
    assert_eq!(request.body, sent);
    assert_eq!(request.conversation_key().as_deref(), Some("hi"));
    assert_eq!(server.remaining(), 0);
    server.verify().unwrap();
}

#[tokio::test]
async fn tool_call_replies_have_the_exact_openai_shape() {
    let server = MockOpenAi::start().await.unwrap();
    server
        .push_tool_calls(
            "",
            [
                tool_call("call_1", "bash", r#"{"command":"ls"}"#),
                tool_call("call_2", "python_execute", "{not json"),
            ],
        )
        .push_tool_calls("Let me check.", [tool_call("call_3", "bash", "{}")]);

    let first = post(&server, &chat("list files")).await;
    assert_eq!(first.status, StatusCode::OK);
    let usage = first.body["usage"].clone();
    assert_eq!(
        without_id_and_created(first.body),
        json!({
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
                        {"id": "call_2", "type": "function",
                         "function": {"name": "python_execute", "arguments": "{not json"}}
                    ]
                },
                "finish_reason": "tool_calls"
            }],
            "usage": usage
        })
    );
    // Without scripted usage the mock estimates one: positive and consistent.
    let (prompt, completion) = (
        usage["prompt_tokens"].as_u64().unwrap(),
        usage["completion_tokens"].as_u64().unwrap(),
    );
    assert!(prompt > 0 && completion > 0);
    assert_eq!(usage["total_tokens"].as_u64(), Some(prompt + completion));

    let second = post(&server, &chat("again")).await;
    let message = &second.body["choices"][0]["message"];
    assert_eq!(message["content"], "Let me check.");
    assert_eq!(message["tool_calls"][0]["id"], "call_3");
    server.verify().unwrap();
}

/// The chunk objects of a streamed reply (every payload but `[DONE]`), checked for the common
/// envelope.
fn chunk_objects(data: &[String], model: &str) -> Vec<Value> {
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{data:?}");
    assert_eq!(data.iter().filter(|d| *d == "[DONE]").count(), 1);
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let id = chunks[0]["id"].clone();
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], model);
        assert_eq!(chunk["id"], id);
    }
    chunks
}

#[tokio::test]
async fn streamed_text_arrives_in_fragments_without_usage_unless_asked() {
    let server = MockOpenAi::start().await.unwrap();
    let text = "The quick brown fox jumps over the lazy dog.";
    server.push_text(text).push_text("short");
    let mut body = chat("tell me");
    body["stream"] = json!(true);

    let (headers, data) = post_stream(&server, &body).await;

    assert_eq!(headers["content-type"], "text/event-stream");
    let chunks = chunk_objects(&data, "gpt-4o");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let pieces: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .filter(|p| !p.is_empty())
        .collect();
    assert!(pieces.len() >= 3, "{pieces:?}");
    assert_eq!(pieces.concat(), text);
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["choices"][0]["delta"], json!({}));
    assert!(
        chunks.iter().all(|c| c.get("usage").is_none()),
        "no usage without stream_options.include_usage"
    );

    body["stream_options"] = json!({"include_usage": false});
    let (_, data) = post_stream(&server, &body).await;
    assert!(
        chunk_objects(&data, "gpt-4o")
            .iter()
            .all(|c| c.get("usage").is_none())
    );
    server.verify().unwrap();
}

#[tokio::test]
async fn streamed_tool_call_arguments_come_in_fragments_that_reassemble() {
    let server = MockOpenAi::start().await.unwrap();
    let calls = [
        tool_call(
            "call_a",
            "bash",
            r#"{"command":"ls -la /tmp && echo done"}"#,
        ),
        tool_call(
            "call_b",
            "str_replace_editor",
            r#"{"command":"view","path":"/x"}"#,
        ),
    ];
    server.push(Completion::tool_calls(Some("On it.".into()), calls.clone()).with_usage(40, 9));
    let mut body = chat("do it");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});

    let (_, data) = post_stream(&server, &body).await;
    let chunks = chunk_objects(&data, "gpt-4o");

    // The final chunk carries the usage and no choices; every other one has `"usage": null`.
    let (usage_chunk, rest) = chunks.split_last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(
        usage_chunk["usage"],
        json!({"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49})
    );
    assert!(rest.iter().all(|c| c["usage"].is_null()));
    assert_eq!(
        rest.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );

    let content: String = rest
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "On it.");
    for (index, call) in calls.iter().enumerate() {
        let deltas: Vec<&Value> = rest
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].as_array())
            .flatten()
            .filter(|d| d["index"] == index)
            .collect();
        let opening = deltas[0];
        assert_eq!(opening["id"], call.id.as_str());
        assert_eq!(opening["type"], "function");
        assert_eq!(opening["function"]["name"], call.function.name.as_str());
        assert!(
            deltas[1..]
                .iter()
                .all(|d| d.get("id").is_none() && d["function"].get("name").is_none()),
            "only the first delta of a call names it"
        );
        let fragments: Vec<&str> = deltas
            .iter()
            .map(|d| d["function"]["arguments"].as_str().unwrap())
            .filter(|f| !f.is_empty())
            .collect();
        assert!(fragments.len() >= 3, "{fragments:?}");
        assert_eq!(fragments.concat(), call.function.arguments);
    }
    server.verify().unwrap();
}

#[tokio::test]
async fn conversations_with_their_own_queue_use_it_and_others_use_the_default() {
    let server = MockOpenAi::start().await.unwrap();
    server
        .push_for("task A", MockReply::text("A1"))
        .push_for("task A", MockReply::text("A2"))
        .push_text("default 1")
        .push_text("default 2");
    assert_eq!(server.remaining(), 4);
    let content = |reply: &Reply| reply.body["choices"][0]["message"]["content"].clone();

    assert_eq!(content(&post(&server, &chat("task B")).await), "default 1");
    assert_eq!(content(&post(&server, &chat("task A")).await), "A1");
    // The key is the first user message, wherever it is and whatever follows it; content parts
    // count by their text.
    let later_turn = json!({"model": "m", "messages": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "task "}, {"type": "text", "text": "A"}]},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "go on"}
    ]});
    assert_eq!(content(&post(&server, &later_turn).await), "A2");
    assert_eq!(content(&post(&server, &chat("task C")).await), "default 2");

    // Conversation A's queue is empty now: it does not borrow from the default queue.
    server.push_text("default 3");
    let exhausted = post(&server, &chat("task A")).await;
    assert_eq!(exhausted.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_error_shape(&exhausted.body, "server_error", Some("script_exhausted"));
    assert!(
        exhausted.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ran out"),
        "{}",
        exhausted.body
    );
    let violations = server.violations();
    assert_eq!(violations.len(), 1);
    assert_eq!(violations[0].rule, ViolationRule::ScriptExhausted);
    assert_eq!(violations[0].request_index, 4);
    assert_eq!(server.remaining(), 1);
    let error = server.verify().unwrap_err().to_string();
    assert!(error.contains("script_exhausted"), "{error}");
}

/// A valid base conversation that the rule cases break one way each.
fn valid_tool_conversation() -> Value {
    json!({
        "model": "gpt-4o",
        "messages": [
            {"role": "developer", "content": "be careful"},
            {"role": "user", "content": [
                {"type": "text", "text": "look at this"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk=", "detail": "low"}}
            ]},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "terminate", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "c2", "name": "terminate", "content": "done"},
            {"role": "tool", "tool_call_id": "c1", "content": ""},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c3", "type": "function", "function": {"name": "bash", "arguments": "{"}}
            ]},
            {"role": "tool", "tool_call_id": "c3", "content": "error"},
            {"role": "user", "content": "continue"}
        ],
        "tools": [
            {"type": "function", "function": {"name": "bash", "description": "run a command",
             "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "terminate"}}
        ],
        "tool_choice": "auto",
        "temperature": 0,
        "max_tokens": 512,
        "stream": false
    })
}

/// One broken request per rule: (what, body or None for a raw body, expected rule).
fn rule_cases() -> Vec<(&'static str, Value, ViolationRule)> {
    use ViolationRule as R;
    let base = valid_tool_conversation;
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut body = base();
        edit(&mut body);
        body
    };
    vec![
        ("body is an array", json!([1, 2]), R::InvalidBody),
        (
            "unknown top-level key",
            with(&|b| b["max_input_tokens"] = json!(5)),
            R::UnknownParameter,
        ),
        (
            "model missing",
            with(&|b| {
                b.as_object_mut().unwrap().remove("model");
            }),
            R::InvalidModel,
        ),
        (
            "model empty",
            with(&|b| b["model"] = json!("")),
            R::InvalidModel,
        ),
        (
            "messages missing",
            with(&|b| {
                b.as_object_mut().unwrap().remove("messages");
            }),
            R::InvalidMessages,
        ),
        (
            "messages empty",
            with(&|b| b["messages"] = json!([])),
            R::InvalidMessages,
        ),
        (
            "unknown role",
            with(&|b| b["messages"][0]["role"] = json!("robot")),
            R::InvalidRole,
        ),
        (
            "message not an object",
            with(&|b| b["messages"][0] = json!("hi")),
            R::InvalidRole,
        ),
        (
            "base64_image on a message",
            with(&|b| b["messages"][7]["base64_image"] = json!("aGk=")),
            R::UnknownMessageKey,
        ),
        (
            "tool_calls on a user message",
            with(&|b| b["messages"][7]["tool_calls"] = b["messages"][2]["tool_calls"].clone()),
            R::UnknownMessageKey,
        ),
        (
            "content of a wrong type",
            with(&|b| b["messages"][7]["content"] = json!(42)),
            R::InvalidContent,
        ),
        (
            "null user content",
            with(&|b| b["messages"][7]["content"] = Value::Null),
            R::InvalidContent,
        ),
        (
            "tool content missing",
            with(&|b| {
                b["messages"][3].as_object_mut().unwrap().remove("content");
            }),
            R::InvalidContent,
        ),
        (
            "unknown part type",
            with(&|b| b["messages"][1]["content"][0] = json!({"type": "audio", "data": "x"})),
            R::InvalidContentPart,
        ),
        (
            "image on a system message",
            with(&|b| b["messages"][0]["content"] = b["messages"][1]["content"].clone()),
            R::InvalidContentPart,
        ),
        (
            "image without a valid url",
            with(&|b| b["messages"][1]["content"][1]["image_url"]["url"] = json!("aGk=")),
            R::InvalidContentPart,
        ),
        (
            "empty user message",
            with(&|b| b["messages"][7]["content"] = json!("")),
            R::EmptyContent,
        ),
        (
            "empty system message",
            with(&|b| b["messages"][0] = json!({"role": "system", "content": []})),
            R::EmptyContent,
        ),
        (
            "empty assistant turn",
            with(&|b| b["messages"][7] = json!({"role": "assistant", "content": ""})),
            R::EmptyAssistantMessage,
        ),
        (
            "null assistant without calls",
            with(&|b| b["messages"][7] = json!({"role": "assistant", "content": null})),
            R::EmptyAssistantMessage,
        ),
        (
            "empty tool_calls array",
            with(&|b| b["messages"][5]["tool_calls"] = json!([])),
            R::InvalidToolCall,
        ),
        (
            "arguments as an object",
            with(&|b| b["messages"][5]["tool_calls"][0]["function"]["arguments"] = json!({})),
            R::InvalidToolCall,
        ),
        (
            "tool call without id",
            with(&|b| {
                b["messages"][5]["tool_calls"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("id");
            }),
            R::InvalidToolCall,
        ),
        (
            "duplicate call ids",
            with(&|b| b["messages"][2]["tool_calls"][1]["id"] = json!("c1")),
            R::DuplicateToolCallId,
        ),
        (
            "tool result after a user message",
            with(&|b| {
                b["messages"][7] = json!({"role": "tool", "tool_call_id": "c3", "content": "x"})
            }),
            R::OrphanToolResult,
        ),
        (
            "tool result for an unknown id",
            with(&|b| b["messages"][6]["tool_call_id"] = json!("zzz")),
            R::OrphanToolResult,
        ),
        (
            "tool result answered twice",
            with(&|b| b["messages"][4]["tool_call_id"] = json!("c2")),
            R::OrphanToolResult,
        ),
        (
            "tool message without tool_call_id",
            with(&|b| {
                b["messages"][6]
                    .as_object_mut()
                    .unwrap()
                    .remove("tool_call_id");
            }),
            R::OrphanToolResult,
        ),
        (
            "call left unanswered before a user turn",
            with(&|b| {
                b["messages"].as_array_mut().unwrap().remove(6);
            }),
            R::MissingToolResult,
        ),
        (
            "trailing assistant with unanswered calls",
            with(&|b| {
                b["messages"].as_array_mut().unwrap().truncate(6);
            }),
            R::MissingToolResult,
        ),
        (
            "empty tools array",
            with(&|b| {
                b["tools"] = json!([]);
                b.as_object_mut().unwrap().remove("tool_choice");
            }),
            R::InvalidTools,
        ),
        (
            "tool of another type",
            with(&|b| b["tools"][1]["type"] = json!("retrieval")),
            R::InvalidTools,
        ),
        (
            "tool name with a space",
            with(&|b| b["tools"][1]["function"]["name"] = json!("bad name")),
            R::InvalidToolName,
        ),
        (
            "tool name too long",
            with(&|b| b["tools"][1]["function"]["name"] = json!("x".repeat(65))),
            R::InvalidToolName,
        ),
        (
            "duplicate tool names",
            with(&|b| b["tools"][1]["function"]["name"] = json!("bash")),
            R::DuplicateToolName,
        ),
        (
            "parameters not an object schema",
            with(&|b| b["tools"][0]["function"]["parameters"] = json!({"type": "string"})),
            R::InvalidToolParameters,
        ),
        (
            "tool_choice without tools",
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "tool_choice": "none"}),
            R::ToolChoiceWithoutTools,
        ),
        (
            "unknown tool_choice mode",
            with(&|b| b["tool_choice"] = json!("sometimes")),
            R::InvalidToolChoice,
        ),
        (
            "tool_choice naming an unadvertised tool",
            with(&|b| {
                b["tool_choice"] = json!({"type": "function", "function": {"name": "python"}})
            }),
            R::InvalidToolChoice,
        ),
        (
            "max_tokens and max_completion_tokens",
            with(&|b| b["max_completion_tokens"] = json!(10)),
            R::ConflictingMaxTokens,
        ),
        (
            "max_tokens on a reasoning model",
            with(&|b| b["model"] = json!("o3-mini")),
            R::UnsupportedParameter,
        ),
        (
            "temperature on a reasoning model",
            with(&|b| {
                b["model"] = json!("gpt-5");
                b.as_object_mut().unwrap().remove("max_tokens");
            }),
            R::UnsupportedParameter,
        ),
        (
            "temperature above 2",
            with(&|b| b["temperature"] = json!(2.5)),
            R::InvalidTemperature,
        ),
        (
            "temperature as a string",
            with(&|b| b["temperature"] = json!("hot")),
            R::InvalidTemperature,
        ),
        (
            "stream_options without stream",
            with(&|b| b["stream_options"] = json!({"include_usage": true})),
            R::InvalidParameter,
        ),
        (
            "stream not a boolean",
            with(&|b| b["stream"] = json!("yes")),
            R::InvalidParameter,
        ),
        (
            "max_tokens zero",
            with(&|b| b["max_tokens"] = json!(0)),
            R::InvalidParameter,
        ),
    ]
}

#[tokio::test]
async fn every_strict_rule_rejects_its_request_with_400_and_a_recorded_violation() {
    let server = MockOpenAi::start().await.unwrap();
    server.push_text("spare");
    let cases = rule_cases();
    for (number, (what, body, rule)) in cases.iter().enumerate() {
        let reply = post(&server, body).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{what}: {}",
            reply.body
        );
        assert_error_shape(&reply.body, "invalid_request_error", Some(rule.as_str()));
        let violations = server.violations();
        assert_eq!(violations.len(), number + 1, "{what}");
        let violation = violations.last().unwrap();
        assert_eq!(violation.rule, *rule, "{what}: {violation}");
        assert_eq!(violation.request_index, number, "{what}");
        assert_eq!(reply.body["error"]["message"], violation.message.as_str());
        assert_eq!(
            reply.body["error"]["param"].as_str(),
            violation.param.as_deref()
        );
    }
    assert_eq!(server.remaining(), 1, "rejected requests consume no reply");

    // The base conversation itself is valid, streamed or not.
    let valid = post(&server, &valid_tool_conversation()).await;
    assert_eq!(valid.status, StatusCode::OK, "{}", valid.body);
    assert_eq!(server.violations().len(), cases.len());
}

#[tokio::test]
async fn transport_rules_reject_bad_bodies_content_types_and_routes() {
    let server = MockOpenAi::start().await.unwrap();
    let expect = |rule: ViolationRule| {
        let violations = server.violations();
        assert_eq!(
            violations.last().map(|v| v.rule),
            Some(rule),
            "{violations:?}"
        );
    };

    let not_json = client()
        .post(url(&server))
        .header("content-type", "application/json")
        .body("{\"model\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(not_json.status(), StatusCode::BAD_REQUEST);
    assert_error_shape(
        &not_json.json().await.unwrap(),
        "invalid_request_error",
        Some("invalid_body"),
    );
    expect(ViolationRule::InvalidBody);

    let wrong_type = client()
        .post(url(&server))
        .header("content-type", "text/plain")
        .body(chat("hi").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_type.status(), StatusCode::BAD_REQUEST);
    expect(ViolationRule::ContentType);

    let models = client()
        .get(format!("{}/models", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), StatusCode::NOT_FOUND);
    assert_error_shape(
        &models.json().await.unwrap(),
        "invalid_request_error",
        Some("unknown_route"),
    );
    expect(ViolationRule::UnknownRoute);

    let doubled = client()
        .post(format!("{}/v1/chat/completions", server.base_url()))
        .json(&chat("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        doubled.status(),
        StatusCode::NOT_FOUND,
        "/v1/v1/... is a client bug"
    );

    let azure_without_version = client()
        .post(format!(
            "{}/openai/deployments/d/chat/completions",
            server.azure_endpoint()
        ))
        .json(&chat("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(azure_without_version.status(), StatusCode::BAD_REQUEST);
    expect(ViolationRule::MissingApiVersion);
    assert_eq!(server.violations().len(), 5);
    assert_eq!(server.request_count(), 5);
}

#[tokio::test]
async fn the_route_without_v1_is_served_too() {
    let server = MockOpenAi::start().await.unwrap();
    server.push_text("ok");
    let response = client()
        .post(format!("{}/chat/completions", server.azure_endpoint()))
        .json(&chat("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(server.requests()[0].path, "/chat/completions");
    server.verify().unwrap();
}

#[tokio::test]
async fn error_faults_have_provider_statuses_headers_and_bodies_and_are_not_violations() {
    let server = MockOpenAi::start().await.unwrap();
    server
        .push_rate_limited(Some(2))
        .push_rate_limited(None)
        .push_insufficient_quota()
        .push_server_error(500)
        .push_server_error(503)
        .push_invalid_api_key()
        .push_context_length_exceeded()
        .push(Fault::HttpError {
            status: 408,
            error_type: "timeout".into(),
            code: Some("request_timeout".into()),
            message: "Request timed out.".into(),
        })
        .push_text("recovered");

    let rate = post(&server, &chat("x")).await;
    assert_eq!(rate.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(rate.headers["retry-after"], "2");
    assert_error_shape(&rate.body, "requests", Some("rate_limit_exceeded"));

    let rate = post(&server, &chat("x")).await;
    assert_eq!(rate.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(rate.headers.get("retry-after").is_none());

    let quota = post(&server, &chat("x")).await;
    assert_eq!(quota.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(quota.headers.get("retry-after").is_none());
    assert_error_shape(
        &quota.body,
        "insufficient_quota",
        Some("insufficient_quota"),
    );

    let internal = post(&server, &chat("x")).await;
    assert_eq!(internal.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_error_shape(&internal.body, "server_error", None);

    let unavailable = post(&server, &chat("x")).await;
    assert_eq!(unavailable.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_error_shape(&unavailable.body, "server_error", None);

    let key = post(&server, &chat("x")).await;
    assert_eq!(key.status, StatusCode::UNAUTHORIZED);
    assert_error_shape(&key.body, "invalid_request_error", Some("invalid_api_key"));

    let context = post(&server, &chat("x")).await;
    assert_eq!(context.status, StatusCode::BAD_REQUEST);
    assert_error_shape(
        &context.body,
        "invalid_request_error",
        Some("context_length_exceeded"),
    );
    let message = context.body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("This model's maximum context length is "),
        "{message}"
    );

    let timeout = post(&server, &chat("x")).await;
    assert_eq!(timeout.status, StatusCode::REQUEST_TIMEOUT);
    assert_error_shape(&timeout.body, "timeout", Some("request_timeout"));

    let recovered = post(&server, &chat("x")).await;
    assert_eq!(recovered.status, StatusCode::OK);
    assert_eq!(
        recovered.body["choices"][0]["message"]["content"],
        "recovered"
    );
    assert_eq!(server.remaining(), 0, "each fault consumed one entry");
    server.verify().unwrap();
}

#[tokio::test]
async fn a_slow_first_byte_holds_the_headers_back_then_answers_normally() {
    let server = MockOpenAi::start().await.unwrap();
    let delay = Duration::from_millis(300);
    server.push_slow_first_byte(delay, Completion::text("late but fine"));

    let url = url(&server);
    let request = tokio::spawn(async move {
        let response = client().post(url).json(&chat("x")).send().await.unwrap();
        let headers_at = Instant::now();
        (response.json::<Value>().await.unwrap(), headers_at)
    });
    tokio::time::timeout(PATIENCE, server.wait_for_requests(1))
        .await
        .unwrap();
    let (body, headers_at) = tokio::time::timeout(PATIENCE, request)
        .await
        .unwrap()
        .unwrap();

    assert_eq!(body["choices"][0]["message"]["content"], "late but fine");
    let received_at = server.requests()[0].received_at;
    // `sleep` never wakes early, so the headers can only arrive after the recorded receipt plus
    // the delay: an ordering of events, not a measurement of speed.
    assert!(headers_at >= received_at + delay);
    server.verify().unwrap();
}

#[tokio::test]
async fn a_cut_stream_ends_without_done_after_the_scripted_chunks() {
    let server = MockOpenAi::start().await.unwrap();
    let reply = Completion::tool_calls(
        Some("Working on it".into()),
        [tool_call("c1", "bash", r#"{"command":"make test"}"#)],
    );
    server
        .push_cut_stream(3, reply.clone())
        .push_cut_stream(0, reply.clone())
        .push(reply);
    let mut body = chat("x");
    body["stream"] = json!(true);

    let response = client()
        .post(url(&server))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let (received, broke) = read_until_cut(response).await;
    assert!(
        broke,
        "the connection must break, not end cleanly: {received:?}"
    );
    let data = sse_data(&received);
    assert_eq!(data.len(), 3, "{data:?}");
    assert!(!received.contains("[DONE]"));
    let first: Value = serde_json::from_str(&data[0]).unwrap();
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");

    // Cut before the first chunk: headers, then nothing.
    let response = client()
        .post(url(&server))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let (received, broke) = read_until_cut(response).await;
    assert!(broke);
    assert_eq!(received, "");

    // The same reply uncut ends with [DONE] and no error: the cut is the fault, not the reply.
    let response = client()
        .post(url(&server))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (received, broke) = read_until_cut(response).await;
    assert!(!broke);
    assert_eq!(
        sse_data(&received).last().map(String::as_str),
        Some("[DONE]")
    );
    server.verify().unwrap();
}

#[tokio::test]
async fn a_cut_non_streamed_reply_sends_half_a_json_body_then_breaks() {
    let server = MockOpenAi::start().await.unwrap();
    server.push_cut_stream(
        5,
        Completion::text("a complete sentence that will not arrive whole"),
    );
    let response = client()
        .post(url(&server))
        .json(&chat("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let (received, broke) = read_until_cut(response).await;
    assert!(broke, "{received:?}");
    assert!(received.starts_with("{\""), "{received:?}");
    assert!(serde_json::from_str::<Value>(&received).is_err());
    server.verify().unwrap();
}

#[tokio::test]
async fn malformed_json_is_a_200_that_does_not_parse_streamed_or_not() {
    let server = MockOpenAi::start().await.unwrap();
    server.push_malformed_json().push_malformed_json();

    let response = client()
        .post(url(&server))
        .json(&chat("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/json");
    let text = response.text().await.unwrap();
    assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");

    let mut body = chat("x");
    body["stream"] = json!(true);
    let (_, data) = post_stream(&server, &body).await;
    assert_eq!(data.len(), 2, "{data:?}");
    assert!(serde_json::from_str::<Value>(&data[0]).is_err(), "{data:?}");
    assert_eq!(data[1], "[DONE]");
    server.verify().unwrap();
}

#[tokio::test]
async fn invalid_tool_arguments_are_sent_verbatim_streamed_or_not() {
    let server = MockOpenAi::start().await.unwrap();
    let bad = r#"{"command": "ls", oops"#;
    server
        .push_tool_calls("", [tool_call("c1", "bash", bad)])
        .push_tool_calls("", [tool_call("c1", "bash", bad)]);

    let reply = post(&server, &chat("x")).await;
    let arguments = &reply.body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"];
    assert_eq!(arguments, bad);

    let mut body = chat("x");
    body["stream"] = json!(true);
    let (_, data) = post_stream(&server, &body).await;
    let reassembled: String = chunk_objects(&data, "gpt-4o")
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(reassembled, bad);
    server.verify().unwrap();
}

#[tokio::test]
async fn a_hanging_request_can_be_abandoned_and_the_server_keeps_serving() {
    let server = MockOpenAi::start().await.unwrap();
    server.push_hang().push_text("next");
    let url = url(&server);
    let hanging = tokio::spawn(async move { client().post(url).json(&chat("x")).send().await });
    tokio::time::timeout(PATIENCE, server.wait_for_requests(1))
        .await
        .unwrap();
    assert!(!hanging.is_finished(), "a hang never answers");
    hanging.abort();
    assert!(hanging.await.unwrap_err().is_cancelled());

    let reply = post(&server, &chat("x")).await;
    assert_eq!(reply.body["choices"][0]["message"]["content"], "next");
    server.verify().unwrap();
}

#[tokio::test]
async fn shutting_down_releases_hanging_requests_and_closes_the_port() {
    let server = MockOpenAi::start().await.unwrap();
    server.push_hang();
    let url = url(&server);
    let request_url = url.clone();
    let hanging = tokio::spawn(async move {
        let response = client()
            .post(request_url)
            .json(&chat("x"))
            .send()
            .await
            .unwrap();
        response.status()
    });
    tokio::time::timeout(PATIENCE, server.wait_for_requests(1))
        .await
        .unwrap();
    tokio::time::timeout(PATIENCE, server.shutdown())
        .await
        .unwrap();
    let status = tokio::time::timeout(PATIENCE, hanging)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let refused = client().post(&url).json(&chat("x")).send().await;
    assert!(refused.unwrap_err().is_connect(), "the port is closed");
}

#[tokio::test]
async fn the_azure_route_uses_the_deployment_and_the_api_key_header() {
    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key("azure-secret");
    server.push_text("from azure").push_text("with model");
    let endpoint = format!(
        "{}/openai/deployments/my-gpt4/chat/completions?api-version=2024-06-01",
        server.azure_endpoint()
    );
    let no_model = json!({"messages": [{"role": "user", "content": "hi"}]});

    let bearer = client()
        .post(&endpoint)
        .bearer_auth("azure-secret")
        .json(&no_model)
        .send()
        .await
        .unwrap();
    assert_eq!(
        bearer.status(),
        StatusCode::UNAUTHORIZED,
        "Azure wants api-key, not Bearer"
    );
    assert_error_shape(
        &bearer.json().await.unwrap(),
        "invalid_request_error",
        Some("invalid_api_key"),
    );

    let wrong = client()
        .post(&endpoint)
        .header("api-key", "nope")
        .json(&no_model)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);

    let right = client()
        .post(&endpoint)
        .header("api-key", "azure-secret")
        .json(&no_model)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), StatusCode::OK);
    let body: Value = right.json().await.unwrap();
    assert_eq!(
        body["model"], "my-gpt4",
        "without a model the deployment names it"
    );
    assert_eq!(body["choices"][0]["message"]["content"], "from azure");

    let with_model = client()
        .post(&endpoint)
        .header("api-key", "azure-secret")
        .json(&chat("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(with_model.json::<Value>().await.unwrap()["model"], "gpt-4o");

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let request = &requests[2];
    assert_eq!(request.path, "/openai/deployments/my-gpt4/chat/completions");
    assert_eq!(request.query_param("api-version"), Some("2024-06-01"));
    assert_eq!(request.header("api-key"), Some("azure-secret"));
    assert_eq!(server.remaining(), 0);
    server.verify().unwrap();
}

#[tokio::test]
async fn bearer_auth_is_enforced_on_the_openai_routes() {
    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key("sk-test").push_text("authorised");

    for attempt in [None, Some("sk-wrong")] {
        let mut request = client().post(url(&server)).json(&chat("x"));
        if let Some(key) = attempt {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{attempt:?}");
        let body: Value = response.json().await.unwrap();
        assert_error_shape(&body, "invalid_request_error", Some("invalid_api_key"));
        assert!(
            !body.to_string().contains("sk-wrong"),
            "keys are never echoed"
        );
    }
    let api_key_header = client()
        .post(url(&server))
        .header("api-key", "sk-test")
        .json(&chat("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        api_key_header.status(),
        StatusCode::UNAUTHORIZED,
        "OpenAI wants Bearer"
    );
    assert_eq!(server.remaining(), 1, "rejected requests consume no reply");

    let ok = client()
        .post(url(&server))
        .bearer_auth("sk-test")
        .json(&chat("x"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(
        server.requests()[3].header("authorization"),
        Some("Bearer sk-test")
    );
    server.verify().unwrap();
}

#[tokio::test]
async fn a_multi_step_tool_conversation_passes_strict_validation() {
    let server = MockOpenAi::start().await.unwrap();
    server
        .push_tool_calls("", [tool_call("call_1", "bash", r#"{"command":"ls"}"#)])
        .push_text("There are two files.");
    let tools = json!([{"type": "function", "function": {"name": "bash",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]);
    let mut body = json!({"model": "gpt-4o", "tools": tools, "tool_choice": "auto",
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "list"}]});

    let first = post(&server, &body).await;
    let assistant = first.body["choices"][0]["message"].clone();
    assert!(assistant["content"].is_null());
    // Echo the assistant message back as a client would, then answer its call.
    let messages = body["messages"].as_array_mut().unwrap();
    messages.push(assistant);
    messages
        .push(json!({"role": "tool", "tool_call_id": "call_1", "name": "bash", "content": "a b"}));
    let second = post(&server, &body).await;
    assert_eq!(second.status, StatusCode::OK, "{}", second.body);
    assert_eq!(
        second.body["choices"][0]["message"]["content"],
        "There are two files."
    );
    server.verify().unwrap();
}

#[tokio::test]
async fn null_optional_parameters_and_calls_to_tools_no_longer_offered_are_accepted() {
    let server = MockOpenAi::start().await.unwrap();
    server.push_text("fine");
    // OpenAI treats `null` like an absent optional parameter, and does not check the tool
    // names of earlier turns against `tools` (the tool may have gone away since).
    let body = json!({
        "model": "gpt-4o", "max_tokens": null, "temperature": null, "stream": null,
        "tools": [{"type": "function", "function": {"name": "bash",
            "parameters": {"type": "object", "properties": {}}}}],
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "gone_tool", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Error: Unknown tool 'gone_tool'"}
        ]
    });
    let reply = post(&server, &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    server.verify().unwrap();
}

#[tokio::test]
async fn load_script_queues_entries_in_order() {
    let server = MockOpenAi::start().await.unwrap();
    let count = server
        .load_script(
            r#"[{"text": "one"},
                {"conversation": "special", "text": "for special"},
                {"fault": "rate_limited", "retry_after": 7}]"#,
        )
        .unwrap();
    assert_eq!(count, 3);
    assert_eq!(
        post(&server, &chat("x")).await.body["choices"][0]["message"]["content"],
        "one"
    );
    assert_eq!(
        post(&server, &chat("special")).await.body["choices"][0]["message"]["content"],
        "for special"
    );
    let limited = post(&server, &chat("x")).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(limited.headers["retry-after"], "7");
    assert!(server.load_script("[{\"nonsense\": 1}]").is_err());
    assert_eq!(server.remaining(), 0, "a bad script queues nothing");
    server.verify().unwrap();
}

#[tokio::test]
async fn the_fallback_reply_answers_when_the_queue_is_empty() {
    let server = MockOpenAi::start().await.unwrap();
    server.set_fallback(Some(MockReply::text("again")));
    server.push_text("first");
    for expected in ["first", "again", "again"] {
        assert_eq!(
            post(&server, &chat("x")).await.body["choices"][0]["message"]["content"],
            expected
        );
    }
    server.set_fallback(None);
    assert_eq!(
        post(&server, &chat("x")).await.status,
        StatusCode::INTERNAL_SERVER_ERROR
    );
    assert_eq!(server.violations()[0].request_index, 3);
}

#[tokio::test]
async fn without_recording_requests_are_counted_and_validated_but_not_kept() {
    let server = MockOpenAi::start().await.unwrap();
    server.push_text("recorded").push_text("not recorded");
    post(&server, &chat("x")).await;
    server.set_recording(false);
    post(&server, &chat("x")).await;
    let rejected = post(&server, &json!({"model": "m", "messages": []})).await;
    assert_eq!(rejected.status, StatusCode::BAD_REQUEST);
    tokio::time::timeout(PATIENCE, server.wait_for_requests(3))
        .await
        .unwrap();
    assert_eq!(server.request_count(), 3);
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.violations()[0].request_index, 2);
}

mod binary {
    use super::*;
    use tokio::io::{AsyncBufReadExt, BufReader};
    use tokio::process::{Child, Command};

    async fn spawn(args: &[&str]) -> (Child, String) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mock-openai"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(PATIENCE, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        (child, first)
    }

    async fn ask(base_url: &str) -> reqwest::Response {
        client()
            .post(format!("{base_url}/chat/completions"))
            .json(&chat("ping"))
            .send()
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn repeat_mode_prints_the_url_first_and_answers_every_request() {
        let (mut child, base_url) = spawn(&["--port", "0", "--repeat-text", "pong"]).await;
        assert!(base_url.starts_with("http://127.0.0.1:"), "{base_url}");
        assert!(base_url.ends_with("/v1"), "{base_url}");
        for _ in 0..3 {
            let body: Value = ask(&base_url).await.json().await.unwrap();
            assert_eq!(body["choices"][0]["message"]["content"], "pong");
        }
        child.kill().await.unwrap();
    }

    #[tokio::test]
    async fn script_mode_plays_the_file_then_reports_exhaustion() {
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("mock-openai-script-{}.json", std::process::id()));
        std::fs::write(
            &path,
            r#"[{"text": "one"}, {"fault": "rate_limited", "retry_after": 3}]"#,
        )
        .unwrap();
        let (mut child, base_url) =
            spawn(&["--script", path.to_str().unwrap(), "--api-key", "k"]).await;

        let unauthorised = ask(&base_url).await;
        assert_eq!(unauthorised.status(), StatusCode::UNAUTHORIZED);
        let ask_with_key = || async {
            client()
                .post(format!("{base_url}/chat/completions"))
                .bearer_auth("k")
                .json(&chat("ping"))
                .send()
                .await
                .unwrap()
        };
        let one: Value = ask_with_key().await.json().await.unwrap();
        assert_eq!(one["choices"][0]["message"]["content"], "one");
        let limited = ask_with_key().await;
        assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(limited.headers()["retry-after"], "3");
        assert_eq!(
            ask_with_key().await.status(),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        child.kill().await.unwrap();
        std::fs::remove_file(path).unwrap();
    }

    #[tokio::test]
    async fn help_and_bad_arguments() {
        let help = Command::new(env!("CARGO_BIN_EXE_mock-openai"))
            .arg("--help")
            .output()
            .await
            .unwrap();
        assert!(help.status.success());
        let text = String::from_utf8(help.stdout).unwrap();
        assert!(
            text.contains("--repeat-text") && text.contains("--script"),
            "{text}"
        );

        let bad = Command::new(env!("CARGO_BIN_EXE_mock-openai"))
            .arg("--bogus")
            .output()
            .await
            .unwrap();
        assert_eq!(bad.status.code(), Some(2));
        assert!(
            String::from_utf8(bad.stderr)
                .unwrap()
                .contains("unknown argument")
        );
    }
}
