//! `LlmClient` over real HTTP on 127.0.0.1 against the test kit's strict mock OpenAI server:
//! replies, streaming, every error class, retries, the token budget, images, Azure, reasoning
//! models, and a ToolCallAgent conversation.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::{AgentEvent, EventBus, Message, ToolCall, ToolChoice, ToolDefinition};
use agent_llm::{ApiType, ChatModel, ChatRequest, ImageInput, LlmClient, LlmError, LlmSettings};
use agent_testkit::{Completion, MockOpenAi};
use serde_json::{Value, json};

const KEY: &str = "sk-test-0123456789";

fn settings(server: &MockOpenAi, model: &str, stream: bool) -> LlmSettings {
    let mut settings = LlmSettings::new(model, server.base_url()).with_api_key(KEY);
    settings.stream = stream;
    settings.backoff_min_secs = 0.001;
    settings.backoff_max_secs = 0.02;
    settings
}

fn client(server: &MockOpenAi, stream: bool) -> LlmClient {
    LlmClient::new(settings(server, "gpt-4o", stream)).unwrap()
}

async fn server() -> MockOpenAi {
    let server = MockOpenAi::start().await.unwrap();
    server.require_api_key(KEY);
    server
}

fn echo_tool() -> ToolDefinition {
    ToolDefinition::new(
        "echo",
        "Echo text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    )
}

fn tool_request() -> ChatRequest {
    ChatRequest::new(vec![Message::user_message("say hi with the tool")])
        .with_system(vec![Message::system_message("You are terse.")])
        .with_tools(vec![echo_tool()], ToolChoice::Auto)
}

fn retry_events(bus: &EventBus) -> tokio::sync::mpsc::UnboundedReceiver<AgentEvent> {
    bus.subscribe()
}

fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<AgentEvent>) -> Vec<(u32, u64)> {
    std::iter::from_fn(|| rx.try_recv().ok())
        .filter_map(|e| match e {
            AgentEvent::Retry {
                attempt, delay_ms, ..
            } => Some((attempt, delay_ms)),
            _ => None,
        })
        .collect()
}

// ---- replies -------------------------------------------------------------------------------

#[tokio::test]
async fn text_replies_streamed_and_not_with_the_exact_request_shape() {
    for stream in [false, true] {
        let server = server().await;
        server.push(Completion::text("Hello there.").with_usage(21, 3));
        let client = client(&server, stream);
        let answer = client
            .ask(
                vec![Message::user_message("hi")],
                vec![Message::system_message("Be kind.")],
            )
            .await
            .unwrap();
        assert_eq!(answer, "Hello there.");
        server.verify().unwrap();

        let request = &server.requests()[0];
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let mut expected = json!({
            "model": "gpt-4o",
            "messages": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "hi"}],
            "max_tokens": 4096,
            "temperature": 1.0,
            "stream": stream
        });
        if stream {
            expected["stream_options"] = json!({"include_usage": true});
        }
        assert_eq!(request.body, expected, "stream={stream}");
        assert_eq!(
            client.totals().input,
            21,
            "usage from the API when present (stream={stream})"
        );
        assert_eq!(client.totals().completion, 3);
    }
}

#[tokio::test]
async fn streamed_tool_call_fragments_are_reassembled() {
    let server = server().await;
    let arguments =
        r#"{"text":"a fairly long argument string that the mock splits into fragments"}"#;
    server.push_tool_calls(
        "Calling the tool.",
        [
            ToolCall::new("call_a", "echo", arguments),
            ToolCall::new("call_b", "echo", r#"{"text":"second"}"#),
        ],
    );
    let response = client(&server, true)
        .complete(tool_request())
        .await
        .unwrap();
    assert_eq!(response.content.as_deref(), Some("Calling the tool."));
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall::new("call_a", "echo", arguments),
            ToolCall::new("call_b", "echo", r#"{"text":"second"}"#)
        ]
    );
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    server.verify().unwrap();
    let body = &server.requests()[0].body;
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["tools"][0]["function"]["name"], "echo");
}

#[tokio::test]
async fn invalid_tool_call_arguments_are_passed_through_for_the_agent_to_report() {
    let server = server().await;
    server.push_tool_calls("", [ToolCall::new("c", "echo", "{not json")]);
    let response = client(&server, false)
        .complete(tool_request())
        .await
        .unwrap();
    assert_eq!(response.tool_calls[0].function.arguments, "{not json");
}

// ---- errors and retries ---------------------------------------------------------------------

#[tokio::test]
async fn permanent_errors_fail_at_once_with_their_variant() {
    for stream in [false, true] {
        let server = server().await;
        server
            .push_invalid_api_key()
            .push_insufficient_quota()
            .push_context_length_exceeded()
            .push_malformed_json();
        let client = client(&server, stream);
        let ask = || client.complete(ChatRequest::new(vec![Message::user_message("hi")]));
        let auth = ask().await.unwrap_err();
        assert!(matches!(auth, LlmError::Authentication(_)), "{auth}");
        assert!(
            !auth.to_string().contains(KEY),
            "the key never appears in errors"
        );
        assert!(matches!(
            ask().await.unwrap_err(),
            LlmError::QuotaExhausted(_)
        ));
        assert!(matches!(
            ask().await.unwrap_err(),
            LlmError::ContextLengthExceeded(_)
        ));
        assert!(matches!(
            ask().await.unwrap_err(),
            LlmError::MalformedResponse(_)
        ));
        assert_eq!(
            server.request_count(),
            4,
            "one request each: nothing retried (stream={stream})"
        );
        server.verify().unwrap();
    }
}

#[tokio::test]
async fn transient_errors_are_retried_until_the_fault_clears() {
    let server = server().await;
    server
        .push_server_error(500)
        .push_server_error(503)
        .push_rate_limited(None)
        .push(Completion::text("finally"));
    let bus = EventBus::new();
    let mut events = retry_events(&bus);
    let client = client(&server, false).with_events(bus);
    let answer = client
        .ask(vec![Message::user_message("hi")], vec![])
        .await
        .unwrap();
    assert_eq!(answer, "finally");
    assert_eq!(server.request_count(), 4);
    let retries = drain(&mut events);
    assert_eq!(retries.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(
        retries.iter().all(|(_, delay)| *delay <= 20),
        "backoff within the configured bounds: {retries:?}"
    );
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let server = server().await;
    server
        .push_rate_limited(Some(1))
        .push(Completion::text("ok"));
    let bus = EventBus::new();
    let mut events = retry_events(&bus);
    let mut settings = settings(&server, "gpt-4o", false);
    settings.backoff_max_secs = 5.0;
    let client = LlmClient::new(settings).unwrap().with_events(bus);
    assert_eq!(
        client
            .ask(vec![Message::user_message("hi")], vec![])
            .await
            .unwrap(),
        "ok"
    );
    assert_eq!(
        drain(&mut events),
        [(1, 1000)],
        "the wait is the server's Retry-After"
    );
}

#[tokio::test]
async fn attempts_are_bounded() {
    let server = server().await;
    for _ in 0..10 {
        server.push_server_error(502);
    }
    let mut settings = settings(&server, "gpt-4o", false);
    settings.max_attempts = 3;
    let error = LlmClient::new(settings)
        .unwrap()
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    assert!(
        matches!(error, LlmError::Server { status: 502, .. }),
        "{error}"
    );
    assert_eq!(server.request_count(), 3);
}

fn retry_reasons(rx: &mut tokio::sync::mpsc::UnboundedReceiver<AgentEvent>) -> Vec<String> {
    std::iter::from_fn(|| rx.try_recv().ok())
        .filter_map(|e| match e {
            AgentEvent::Retry { reason, .. } => Some(reason),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_stream_cut_before_or_after_the_first_token_is_asked_again() {
    let server = server().await;
    // Cut after the role chunk only (no token yet), then in the middle of the words.
    server
        .push_cut_stream(1, Completion::text("never seen"))
        .push_cut_stream(
            3,
            Completion::text("this reply is cut in the middle of its words"),
        )
        .push(Completion::text("whole reply"));
    let bus = EventBus::new();
    let mut events = retry_events(&bus);
    let client = LlmClient::new(settings(&server, "gpt-4o", true))
        .unwrap()
        .with_events(bus);
    let answer = client
        .ask(vec![Message::user_message("hi")], vec![])
        .await
        .unwrap();
    assert_eq!(answer, "whole reply", "the partial reply was not discarded");
    assert_eq!(server.request_count(), 3);
    let reasons = retry_reasons(&mut events);
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons[0].starts_with("stream interrupted:"), "{reasons:?}");
    assert!(
        reasons[1].starts_with("stream interrupted after the first token")
            && reasons[1].contains("the partial reply is discarded"),
        "{reasons:?}"
    );
    // The same request went out again.
    let requests = server.requests();
    assert_eq!(requests[1].body, requests[2].body);
    server.verify().unwrap();
}

#[tokio::test]
async fn cut_streams_are_retried_a_bounded_number_of_times() {
    let server = server().await;
    for _ in 0..5 {
        server.push_cut_stream(3, Completion::text("cut again and again and again"));
    }
    let mut settings = settings(&server, "gpt-4o", true);
    settings.max_attempts = 3;
    let error = LlmClient::new(settings)
        .unwrap()
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            LlmError::StreamInterrupted {
                received_tokens: true,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn a_server_that_never_answers_is_given_two_attempts() {
    let server = server().await;
    server.push_hang().push_hang().push_hang();
    let mut settings = settings(&server, "gpt-4o", false);
    // Generous for a loaded machine; the point is the count, not the time.
    settings.request_timeout_secs = 2.0;
    let bus = EventBus::new();
    let mut events = retry_events(&bus);
    let error = LlmClient::new(settings)
        .unwrap()
        .with_events(bus)
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    assert_eq!(error, LlmError::Timeout(Duration::from_secs(2)));
    assert_eq!(
        server.request_count(),
        2,
        "max_timeout_attempts is 2 by default"
    );
    let reasons = retry_reasons(&mut events);
    assert_eq!(reasons.len(), 1);
    assert!(reasons[0].starts_with("request timed out"), "{reasons:?}");
}

#[tokio::test]
async fn a_server_that_never_begins_a_streamed_answer_fails_in_the_first_byte_time() {
    let server = server().await;
    server.push_hang().push_hang().push_hang();
    let mut settings = settings(&server, "gpt-4o", true);
    settings.first_byte_timeout_secs = 1.0;
    // The whole-request limit would hold each attempt for 5 minutes.
    settings.request_timeout_secs = 300.0;
    let client = LlmClient::new(settings).unwrap();
    let call = client.complete(ChatRequest::new(vec![Message::user_message("hi")]));
    let error = tokio::time::timeout(Duration::from_secs(200), call)
        .await
        .expect("the call ended before the request limit")
        .unwrap_err();
    assert_eq!(error, LlmError::Timeout(Duration::from_secs(1)));
    assert_eq!(server.request_count(), 2, "two attempts for timeouts");
}

#[tokio::test]
async fn a_request_that_is_not_streamed_waits_for_its_whole_reply_past_the_first_byte_limit() {
    let server = server().await;
    // Not streamed, the headers come with the whole reply: the first-byte limit does not apply.
    server.push_slow_first_byte(Duration::from_secs(3), Completion::text("all at once"));
    let mut settings = settings(&server, "gpt-4o", false);
    settings.first_byte_timeout_secs = 1.0;
    settings.max_attempts = 1;
    let answer = LlmClient::new(settings)
        .unwrap()
        .ask(vec![Message::user_message("hi")], vec![])
        .await
        .unwrap();
    assert_eq!(answer, "all at once");
}

#[tokio::test]
async fn a_streamed_reply_past_what_max_tokens_allows_is_cut_marked_and_counted_within_it() {
    let server = server().await;
    // One 4 MiB line (a hostile server sent 20 MB); max_tokens 1000 allows 1 MiB of stream.
    server.push(Completion::text("x".repeat(4 << 20)));
    let mut settings = settings(&server, "gpt-4o", true);
    settings.max_tokens = 1000;
    settings.max_attempts = 1;
    let reply = LlmClient::new(settings)
        .unwrap()
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap();
    let content = reply.content.unwrap_or_default();
    assert!(content.len() < 2 << 20, "{} bytes kept", content.len());
    assert!(
        content.ends_with("it was longer than max_tokens allows]"),
        "{}",
        &content[content.len().saturating_sub(200)..]
    );
    assert_eq!(reply.finish_reason.as_deref(), Some("length"));
    let usage = reply.usage.unwrap();
    assert!(usage.completion_tokens <= 1000, "{usage:?}");
}

#[tokio::test]
async fn a_whole_reply_past_what_max_tokens_allows_is_refused_unread() {
    let server = server().await;
    server.push(Completion::text("x".repeat(4 << 20)));
    let mut settings = settings(&server, "gpt-4o", false);
    settings.max_tokens = 1000;
    settings.max_attempts = 1;
    let error = LlmClient::new(settings)
        .unwrap()
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("larger than 1048576 bytes"),
        "{error}"
    );
}

#[tokio::test]
async fn a_stream_that_goes_silent_is_cut_by_the_idle_timeout_and_asked_again() {
    let server = server().await;
    server
        .push_stall_stream(3, Completion::text("words then silence forever"))
        .push(Completion::text("in time"));
    let mut settings = settings(&server, "gpt-4o", true);
    settings.read_timeout_secs = 2.0;
    let bus = EventBus::new();
    let mut events = retry_events(&bus);
    let client = LlmClient::new(settings).unwrap().with_events(bus);
    assert_eq!(
        client
            .ask(vec![Message::user_message("hi")], vec![])
            .await
            .unwrap(),
        "in time"
    );
    let reasons = retry_reasons(&mut events);
    assert_eq!(reasons.len(), 1);
    assert!(
        reasons[0].starts_with("request timed out after 2s"),
        "{reasons:?}"
    );
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn the_call_limit_bounds_every_attempt_together() {
    let server = server().await;
    server.push_hang().push_hang().push_hang();
    let mut settings = settings(&server, "gpt-4o", false);
    settings.request_timeout_secs = 0.0;
    settings.max_timeout_attempts = 6;
    settings.call_timeout_secs = 2.0;
    let error = LlmClient::new(settings)
        .unwrap()
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    assert_eq!(error, LlmError::Timeout(Duration::from_secs(2)));
    assert_eq!(
        server.request_count(),
        1,
        "no time was left for a second attempt"
    );
}

#[tokio::test]
async fn a_refused_connection_fails_after_a_few_quick_attempts() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut settings = LlmSettings::new("gpt-4o", format!("http://127.0.0.1:{port}/v1"));
    settings.backoff_min_secs = 0.001;
    settings.backoff_max_secs = 0.01;
    let bus = EventBus::new();
    let mut events = retry_events(&bus);
    let error = LlmClient::new(settings)
        .unwrap()
        .with_events(bus)
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Connect(_)), "{error}");
    // Three attempts by default (max_connect_attempts), not six: two retries.
    assert_eq!(drain(&mut events).len(), 2);
}

// ---- budget, context, images, Azure, reasoning --------------------------------------------

#[tokio::test]
async fn the_token_budget_raises_before_the_request_is_sent() {
    let server = server().await;
    server
        .push(Completion::text("first").with_usage(40, 2))
        .push(Completion::text("never"));
    let mut settings = settings(&server, "gpt-4o", false);
    settings.max_input_tokens = Some(60);
    let client = LlmClient::new(settings).unwrap();
    client
        .ask(vec![Message::user_message("hello")], vec![])
        .await
        .unwrap();
    let long = "word ".repeat(30);
    let error = client
        .ask(vec![Message::user_message(long)], vec![])
        .await
        .unwrap_err();
    let LlmError::TokenLimitExceeded(message) = &error else {
        panic!("{error}")
    };
    assert!(
        message.starts_with("Request may exceed input token limit (Current: 40, Needed: "),
        "{message}"
    );
    assert!(message.ends_with(", Max: 60)"), "{message}");
    assert_eq!(
        server.request_count(),
        1,
        "the second request never left the client"
    );
}

#[tokio::test]
async fn a_request_larger_than_the_context_window_is_refused_locally() {
    let server = server().await;
    let mut settings = settings(&server, "gpt-4o", false);
    settings.context_window = Some(20);
    let error = LlmClient::new(settings)
        .unwrap()
        .ask(vec![Message::user_message("word ".repeat(50))], vec![])
        .await
        .unwrap_err();
    assert!(
        matches!(error, LlmError::ContextLengthExceeded(_)),
        "{error}"
    );
    assert_eq!(server.request_count(), 0);
}

#[tokio::test]
async fn images_are_sent_to_vision_models_and_dropped_for_others() {
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    let messages = vec![Message::user_message("Image returned by browser_use:").with_image(png)];

    let server = server().await;
    server.push_text("a pixel").push_text("no image seen");
    client(&server, false)
        .ask(messages.clone(), vec![])
        .await
        .unwrap();
    LlmClient::new(settings(&server, "deepseek-chat", false))
        .unwrap()
        .ask(messages, vec![])
        .await
        .unwrap();
    server.verify().unwrap();
    let requests = server.requests();
    assert_eq!(
        requests[0].body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "Image returned by browser_use:"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}}
        ])
    );
    assert_eq!(
        requests[1].body["messages"][0]["content"],
        json!("Image returned by browser_use:")
    );
}

#[tokio::test]
async fn ask_with_images_attaches_to_the_last_user_message() {
    let server = server().await;
    server.push_text("two images");
    let client = client(&server, false);
    let answer = client
        .ask_with_images(
            vec![Message::user_message("compare these")],
            vec![
                ImageInput::Url("https://example.invalid/a.png".into()),
                ImageInput::Base64("/9j/4AAQ".into()),
            ],
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(answer, "two images");
    let content = &server.requests()[0].body["messages"][0]["content"];
    assert_eq!(content[0], json!({"type": "text", "text": "compare these"}));
    assert_eq!(
        content[1]["image_url"]["url"],
        "https://example.invalid/a.png"
    );
    assert_eq!(
        content[2]["image_url"]["url"],
        "data:image/jpeg;base64,/9j/4AAQ"
    );

    let text_only = LlmClient::new(settings(&server, "deepseek-chat", false)).unwrap();
    let error = text_only
        .ask_with_images(vec![Message::user_message("x")], vec![], vec![])
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("does not support images"),
        "{error}"
    );
    let error = client
        .ask_with_images(vec![Message::assistant_message("x")], vec![], vec![])
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("last message must be from the user"),
        "{error}"
    );
}

#[tokio::test]
async fn azure_uses_the_deployment_url_api_version_and_api_key_header() {
    let server = server().await;
    server.push_text("from azure");
    let mut settings = LlmSettings::new("gpt-4o", server.azure_endpoint())
        .with_api_key(KEY)
        .with_api_type(ApiType::Azure);
    settings.api_version = Some("2024-08-01-preview".into());
    settings.deployment = Some("prod-4o".into());
    settings.stream = false;
    let client = LlmClient::new(settings).unwrap();
    assert_eq!(
        client
            .ask(vec![Message::user_message("hi")], vec![])
            .await
            .unwrap(),
        "from azure"
    );
    let request = &server.requests()[0];
    assert_eq!(request.path, "/openai/deployments/prod-4o/chat/completions");
    assert_eq!(
        request.query_param("api-version"),
        Some("2024-08-01-preview")
    );
    assert_eq!(request.header("api-key"), Some(KEY));
    assert_eq!(request.header("authorization"), None);
    server.verify().unwrap();
}

#[tokio::test]
async fn reasoning_models_get_max_completion_tokens_and_no_temperature() {
    let server = server().await;
    server.push_text("thought hard");
    let client = LlmClient::new(settings(&server, "o3-mini", false)).unwrap();
    let request = ChatRequest::new(vec![Message::user_message("hi")]).with_temperature(0.2);
    client.complete(request).await.unwrap();
    server.verify().unwrap();
    let body = &server.requests()[0].body;
    assert_eq!(body["max_completion_tokens"], json!(4096));
    assert_eq!(body.get("max_tokens"), None);
    assert_eq!(body.get("temperature"), None);
}

#[tokio::test]
async fn requests_without_tools_carry_no_tool_choice() {
    let server = server().await;
    server.push_text("plain");
    let request = ChatRequest::new(vec![Message::user_message("hi")])
        .with_tools(vec![], ToolChoice::Required);
    client(&server, false).complete(request).await.unwrap();
    server.verify().unwrap();
    let body: &Value = &server.requests()[0].body;
    assert_eq!(body.get("tool_choice"), None);
    assert_eq!(body.get("tools"), None);
}

#[tokio::test]
async fn a_call_dropped_mid_request_leaves_the_client_usable() {
    let server = server().await;
    server.push_hang().push_text("after the hang");
    let client = Arc::new(client(&server, true));
    let task = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .ask(vec![Message::user_message("hang")], vec![])
                .await
        })
    };
    server.wait_for_requests(1).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let answer = client
        .ask(vec![Message::user_message("again")], vec![])
        .await
        .unwrap();
    assert_eq!(answer, "after the hang");
    assert!(
        client.totals().completion > 0,
        "the finished call was counted"
    );
}

#[tokio::test]
async fn the_read_timeout_does_not_cut_off_a_slow_first_byte() {
    let server = server().await;
    // The first byte comes well after the idle timeout; the chunks then come at once.
    server.push_slow_first_byte(Duration::from_secs(6), Completion::text("worth the wait"));
    let mut settings = settings(&server, "gpt-4o", true);
    settings.read_timeout_secs = 2.0;
    settings.request_timeout_secs = 60.0;
    settings.max_attempts = 1;
    let answer = LlmClient::new(settings)
        .unwrap()
        .ask(vec![Message::user_message("hi")], vec![])
        .await
        .unwrap();
    assert_eq!(answer, "worth the wait");
}
