//! `BedrockClient` (the AWS SDK's ConverseStream, and Converse with `stream = false`) against
//! the test kit's strict mock on 127.0.0.1, which sends real event-stream frames: text deltas
//! on the event bus before the reply ends, tool calls assembled from input deltas, usage from
//! the metadata event, tool results with images, stop reasons; throttling and 503 retried
//! through the crate's policy while a validation error is not; exception frames classified
//! like the HTTP errors they stand for; a cut stream retried as a new request; corrupted or
//! random bytes a typed error, never a panic.

#![cfg(feature = "bedrock")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use agent_core::{AgentEvent, EventBus, Message, ToolCall, ToolChoice, ToolDefinition};
use agent_llm::bedrock::BedrockClient;
use agent_llm::{ApiType, ChatModel, ChatRequest, LlmError, LlmSettings, TokenUsage};
use agent_testkit::{
    BedrockReply, Completion, MockBedrock, StreamGate, converse_stream_body, converse_stream_frames,
};
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_bedrockruntime::config::{Credentials, SharedCredentialsProvider};
use serde_json::json;

fn client(server: &MockBedrock) -> BedrockClient {
    client_with(server, |_| {})
}

fn client_with(server: &MockBedrock, adjust: impl FnOnce(&mut LlmSettings)) -> BedrockClient {
    let mut settings = LlmSettings::new(
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        server.endpoint(),
    )
    .with_api_type(ApiType::Aws);
    settings.backoff_min_secs = 0.001;
    settings.backoff_max_secs = 0.02;
    settings.temperature = 0.0;
    adjust(&mut settings);
    let aws = SdkConfig::builder()
        .region(Region::new("us-east-1"))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "AKIDTEST", "secret", None, None, "test",
        )))
        .behavior_version(BehaviorVersion::latest())
        .build();
    BedrockClient::new(settings).unwrap().with_aws_config(aws)
}

fn bash() -> ToolDefinition {
    ToolDefinition::new(
        "bash",
        "Run a command.",
        json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    )
}

#[tokio::test]
async fn converse_stream_with_tools_images_usage_and_retries() {
    let server = MockBedrock::start().await.unwrap();
    server
        .push(BedrockReply::Throttled)
        .push(BedrockReply::ServiceUnavailable)
        .push(
            Completion::tool_calls(
                Some("Listing.".into()),
                [ToolCall::new("tooluse_1", "bash", r#"{"command": "ls"}"#)],
            )
            .with_usage(30, 7),
        )
        .push(Completion::text("Two files."));
    let client = client(&server);
    let mut messages = vec![Message::user_message("list files")];
    let request = |messages: &Vec<Message>| {
        ChatRequest::new(messages.clone())
            .with_system(vec![Message::system_message("terse")])
            .with_tools(vec![bash()], ToolChoice::Auto)
    };
    let first = client.complete(request(&messages)).await.unwrap();
    assert_eq!(first.content.as_deref(), Some("Listing."));
    assert_eq!(first.tool_calls[0].id, "tooluse_1");
    assert_eq!(
        first.tool_calls[0].function.arguments,
        r#"{"command":"ls"}"#
    );
    assert_eq!(first.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        first.usage,
        Some(TokenUsage {
            prompt_tokens: 30,
            completion_tokens: 7,
            ..TokenUsage::default()
        })
    );
    messages.push(Message::from_tool_calls(
        first.tool_calls.clone(),
        "Listing.",
    ));
    let mut result = Message::tool_message("a.txt b.txt", "bash", "tooluse_1");
    result.base64_image = Some("iVBORw0KGgoAAAANSUhEUg==".into());
    messages.push(result);
    let second = client.complete(request(&messages)).await.unwrap();
    assert_eq!(second.content.as_deref(), Some("Two files."));
    assert_eq!(second.finish_reason.as_deref(), Some("stop"));
    server.verify().unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 4, "two failures retried, then two calls");
    let last = &requests[3];
    assert_eq!(
        last.path,
        "/model/anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream"
    );
    assert!(
        last.header("authorization")
            .unwrap()
            .contains("us-east-1/bedrock/aws4_request")
    );
    assert_eq!(last.body["system"], json!([{"text": "terse"}]));
    let result = &last.body["messages"][2]["content"][0]["toolResult"];
    assert_eq!(result["toolUseId"], "tooluse_1");
    assert_eq!(result["content"][1]["image"]["format"], "png");
    assert_eq!(
        client.totals().input,
        30 + second.usage.unwrap().prompt_tokens
    );
}

#[tokio::test]
async fn a_rejected_request_is_not_retried() {
    let server = MockBedrock::start().await.unwrap();
    // A conversation that starts with the assistant is fixed up; one with only a blank message is
    // not sendable at all: the mock's validation error comes back as InvalidRequest, once.
    let error = client(&server)
        .complete(ChatRequest::new(vec![]))
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::InvalidRequest(_)), "{error:?}");
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.violations().len(), 1);
}

/// `max_input_tokens` and `context_window` are checked before the request is sent, as with the
/// other clients.
#[tokio::test]
async fn the_input_budget_and_the_window_refuse_a_request_before_it_is_sent() {
    let server = MockBedrock::start().await.unwrap();
    let long = ChatRequest::new(vec![Message::user_message("word ".repeat(400))]);
    let error = client_with(&server, |s| s.max_input_tokens = Some(100))
        .complete(long.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(error, LlmError::TokenLimitExceeded(_)),
        "{error:?}"
    );
    let error = client_with(&server, |s| s.context_window = Some(100))
        .complete(long)
        .await
        .unwrap_err();
    assert!(
        matches!(error, LlmError::ContextLengthExceeded(_)),
        "{error:?}"
    );
    assert!(server.requests().is_empty(), "nothing was sent");
}

/// With `stream = false` the whole reply comes from Converse, and no delta is emitted.
#[tokio::test]
async fn converse_without_streaming() {
    let server = MockBedrock::start().await.unwrap();
    server.push(
        Completion::tool_calls(
            Some("Listing.".into()),
            [ToolCall::new("tooluse_1", "bash", r#"{"command": "ls"}"#)],
        )
        .with_usage(30, 7),
    );
    let bus = EventBus::new();
    let mut events = bus.subscribe();
    let client = client_with(&server, |s| s.stream = false).with_events(bus);
    let reply = client
        .complete(
            ChatRequest::new(vec![Message::user_message("list files")])
                .with_tools(vec![bash()], ToolChoice::Auto),
        )
        .await
        .unwrap();
    assert_eq!(reply.content.as_deref(), Some("Listing."));
    assert_eq!(
        reply.tool_calls[0].function.arguments,
        r#"{"command":"ls"}"#
    );
    assert_eq!(reply.usage.unwrap().completion_tokens, 7);
    let requests = server.requests();
    assert!(
        requests[0].path.ends_with("/converse"),
        "{}",
        requests[0].path
    );
    while let Ok(event) = events.try_recv() {
        assert!(!matches!(event, AgentEvent::TextDelta { .. }), "{event:?}");
    }
    server.verify().unwrap();
}

/// A streamed reply is handed over piece by piece: the first `TextDelta` reaches the event bus
/// while the mock still holds the rest of the stream, and the deltas add up to the reply's text
/// (the tool call's input is not text).
#[tokio::test]
async fn bedrock_streams_text_deltas_before_the_reply_ends() {
    let server = MockBedrock::start().await.unwrap();
    let gate = StreamGate::new();
    let text = "Streaming this reply slowly, in pieces.";
    server.push(BedrockReply::HeldStream {
        reply: Completion::tool_calls(
            Some(text.into()),
            [ToolCall::new("tooluse_1", "bash", r#"{"command":"ls"}"#)],
        ),
        // messageStart and the first text delta.
        after_events: 2,
        gate: gate.clone(),
    });
    let bus = EventBus::new();
    let mut events = bus.subscribe();
    let model = client(&server).with_events(bus);
    let reply = tokio::spawn(async move {
        model
            .complete(
                ChatRequest::new(vec![Message::user_message("hi")])
                    .with_tools(vec![bash()], ToolChoice::Auto),
            )
            .await
    });
    let first = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            if let Some(AgentEvent::TextDelta { text }) = events.recv().await {
                return text;
            }
        }
    })
    .await
    .expect("no text delta within 60 s while the stream is held");
    assert!(
        text.starts_with(&first) && first.len() < text.len(),
        "{first:?}"
    );
    assert!(
        !reply.is_finished(),
        "the reply ended before the gate opened"
    );
    gate.release();
    let reply = reply.await.unwrap().unwrap();
    assert_eq!(reply.content.as_deref(), Some(text));
    assert_eq!(
        reply.tool_calls,
        vec![ToolCall::new("tooluse_1", "bash", r#"{"command":"ls"}"#)]
    );
    let mut streamed = first;
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::TextDelta { text } = event {
            streamed.push_str(&text);
        }
    }
    assert_eq!(streamed, text);
    server.verify().unwrap();
}

fn retries(events: &mut tokio::sync::mpsc::UnboundedReceiver<AgentEvent>) -> Vec<String> {
    let mut reasons = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::Retry { reason, .. } = event {
            reasons.push(reason);
        }
    }
    reasons
}

/// Exception frames are the errors the HTTP statuses they stand for are: throttling and a
/// model stream error (after the first text) are retried as new requests, a validation error
/// is not.
#[tokio::test]
async fn exceptions_in_the_stream_are_classified_and_retried() {
    let server = MockBedrock::start().await.unwrap();
    server
        .push(BedrockReply::ExceptionInStream(
            "throttlingException".into(),
        ))
        .push(BedrockReply::ExceptionInStream(
            "modelStreamErrorException".into(),
        ))
        .push(BedrockReply::ExceptionInStream(
            "serviceUnavailableException".into(),
        ))
        .push(Completion::text("Whole."));
    let bus = EventBus::new();
    let mut events = bus.subscribe();
    let client = client(&server).with_events(bus);
    let reply = client
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap();
    assert_eq!(reply.content.as_deref(), Some("Whole."));
    assert_eq!(server.requests().len(), 4);
    let reasons = retries(&mut events);
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons[0].starts_with("rate limited"), "{reasons:?}");
    assert!(
        reasons[1].contains("stream interrupted after the first token")
            && reasons[1].contains("the partial reply is discarded"),
        "{reasons:?}"
    );
    assert!(reasons[2].starts_with("server error 503"), "{reasons:?}");

    server.push(BedrockReply::ExceptionInStream(
        "validationException".into(),
    ));
    let error = client
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::InvalidRequest(_)), "{error:?}");
    assert_eq!(
        server.requests().len(),
        5,
        "a validation error is not retried"
    );
    server.verify().unwrap();
}

/// A stream cut part-way through a frame is retried as a new request; a frame whose checksum
/// fails is a malformed response, not retried.
#[tokio::test]
async fn cut_and_corrupted_streams() {
    let server = MockBedrock::start().await.unwrap();
    let body = converse_stream_body(&Completion::text("A reply long enough to cut."));
    server
        .push(BedrockReply::RawStream(body[..body.len() / 2].to_vec()))
        .push(Completion::text("Whole."));
    let client = client(&server);
    let reply = client
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap();
    assert_eq!(reply.content.as_deref(), Some("Whole."));
    assert_eq!(server.requests().len(), 2);

    // A stream that ends cleanly between frames but before messageStop is a cut too.
    let frames = agent_testkit::converse_stream_frames(&Completion::text("Partial."), 1, 1);
    server
        .push(BedrockReply::RawStream(frames[..2].concat()))
        .push(Completion::text("Whole."));
    let reply = client
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap();
    assert_eq!(reply.content.as_deref(), Some("Whole."));
    assert_eq!(server.requests().len(), 4);

    // A flipped byte in a frame's payload: its message CRC fails. (A flipped length in a
    // prelude makes the decoder wait for bytes that never come: a cut, as above.)
    let mut frames =
        agent_testkit::converse_stream_frames(&Completion::text("A reply to corrupt."), 1, 1);
    let second = frames[1].len() - 6;
    frames[1][second] ^= 0x20;
    let corrupted = frames.concat();
    server.push(BedrockReply::RawStream(corrupted));
    let error = client_with(&server, |s| s.max_attempts = 1)
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::MalformedResponse(_)), "{error:?}");
    assert_eq!(
        server.requests().len(),
        5,
        "a corrupted frame is not retried"
    );
    server.verify().unwrap();
}

#[derive(Debug, Clone)]
enum Damage {
    Random(Vec<u8>),
    Flip(usize, u8),
    Cut(usize),
}

/// Whatever bytes come as the stream (random ones, or a valid stream with one byte changed or
/// cut short), the client answers with a typed error, never a panic; only a stream cut after
/// its `messageStop` (the metadata missing) may still give the whole reply.
#[test]
fn random_and_damaged_streams_are_typed_errors() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockBedrock::start()).unwrap();
    let client = client_with(&server, |s| s.max_attempts = 1);
    let reply = Completion::tool_calls(
        Some("Text first.".into()),
        [ToolCall::new("tooluse_1", "bash", r#"{"command":"ls"}"#)],
    );
    let valid = converse_stream_body(&reply);
    let strategy = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300).prop_map(Damage::Random),
        (0..valid.len(), 1..=255u8).prop_map(|(at, xor)| Damage::Flip(at, xor)),
        (0..valid.len()).prop_map(Damage::Cut),
    ];
    let mut runner = TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    });
    let request = ChatRequest::new(vec![Message::user_message("hi")])
        .with_tools(vec![bash()], ToolChoice::Auto);
    runner
        .run(&strategy, |damage| {
            let (bytes, cut) = match &damage {
                Damage::Random(bytes) => (bytes.clone(), false),
                Damage::Flip(at, xor) => {
                    let mut bytes = valid.clone();
                    bytes[*at] ^= xor;
                    (bytes, false)
                }
                Damage::Cut(at) => (valid[..*at].to_vec(), true),
            };
            server.push(BedrockReply::RawStream(bytes));
            match runtime.block_on(client.complete(request.clone())) {
                Err(LlmError::StreamInterrupted { .. } | LlmError::MalformedResponse(_)) => {}
                Ok(got) if cut => {
                    prop_assert_eq!(got.content.as_deref(), Some("Text first."));
                    prop_assert_eq!(&got.tool_calls, &reply.tool_calls);
                    prop_assert!(counted(got.usage.as_ref()), "{:?}", got.usage);
                }
                other => prop_assert!(false, "{:?} gave {:?}", damage, other),
            }
            Ok(())
        })
        .unwrap();
    // The one cut that gives the reply, always tried (the random cuts rarely hit it): right
    // after `messageStop`, the `metadata` event (the last) missing.
    let metadata = converse_stream_frames(&reply, 10, 20)
        .last()
        .map(Vec::len)
        .unwrap();
    server.push(BedrockReply::RawStream(
        valid[..valid.len() - metadata].to_vec(),
    ));
    let got = runtime.block_on(client.complete(request)).unwrap();
    assert_eq!(got.tool_calls, reply.tool_calls);
    assert!(counted(got.usage.as_ref()), "{:?}", got.usage);
    server.verify().unwrap();
}

/// Whether `usage` is the client's own count of a reply whose `metadata` never came (not the
/// stream's 10 input and 20 output tokens).
fn counted(usage: Option<&TokenUsage>) -> bool {
    usage.is_some_and(|u| {
        u.prompt_tokens > 0
            && u.completion_tokens > 0
            && (u.prompt_tokens, u.completion_tokens) != (10, 20)
    })
}

/// A stream that goes silent for `read_timeout_secs` is a timeout (what the retry policy gives
/// `max_timeout_attempts` for), not a wait without end.
#[tokio::test]
async fn a_silent_stream_times_out() {
    let server = MockBedrock::start().await.unwrap();
    let gate = StreamGate::new();
    server.push(BedrockReply::HeldStream {
        reply: Completion::text("Never finished."),
        after_events: 2,
        gate: gate.clone(),
    });
    let client = client_with(&server, |s| {
        s.read_timeout_secs = 1.0;
        s.max_attempts = 1;
    });
    let error = client
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    assert_eq!(error, LlmError::Timeout(Duration::from_secs(1)));
    assert_eq!(server.requests().len(), 1);
    gate.release();
}

/// A streamed reply longer than `max_tokens` allows is cut at the client's byte limit (1 MiB
/// for a small `max_tokens`) and marked, not held whole; the rest of the stream is not read.
#[tokio::test]
async fn a_reply_past_the_limit_is_cut_and_marked() {
    use agent_testkit::mock_bedrock::event_frame;

    let server = MockBedrock::start().await.unwrap();
    let piece = "x".repeat(64 * 1024);
    let mut frames = vec![event_frame("messageStart", json!({"role": "assistant"}))];
    // 3 MiB of text in 48 deltas.
    for _ in 0..48 {
        frames.push(event_frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": piece}}),
        ));
    }
    frames.push(event_frame(
        "contentBlockStop",
        json!({"contentBlockIndex": 0}),
    ));
    frames.push(event_frame(
        "messageStop",
        json!({"stopReason": "end_turn"}),
    ));
    server.push(BedrockReply::RawStream(frames.concat()));
    let client = client_with(&server, |s| s.max_tokens = 100);
    let reply = client
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap();
    assert_eq!(reply.finish_reason.as_deref(), Some("length"));
    let text = reply.content.unwrap();
    assert!(
        text.ends_with("bytes of the stream: it was longer than max_tokens allows]"),
        "{}",
        &text[text.len().saturating_sub(200)..]
    );
    let kept = text.bytes().take_while(|b| *b == b'x').count();
    // Past 1 MiB by at most the delta that crossed it; far from the 3 MiB sent.
    assert!(kept > 1 << 20 && kept <= (1 << 20) + piece.len(), "{kept}");
    assert_eq!(server.requests().len(), 1, "a cut reply is not asked again");
    // No `metadata` came: the tokens are counted, the output at most what max_tokens allows.
    let usage = reply.usage.expect("counted");
    assert_eq!(usage.completion_tokens, 100);
    assert!(usage.prompt_tokens > 0, "{usage:?}");
}
