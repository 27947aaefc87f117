//! The provider layer (`Model`) over real HTTP on 127.0.0.1: native Anthropic against the test
//! kit's strict Messages mock (streamed and not, images, caching, 529/429/stream errors through
//! the retry policy), and text-mode and `auto` tool calls against the strict OpenAI mock.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use agent_core::{AgentEvent, EventBus, Message, ToolCall, ToolChoice, ToolDefinition};
use agent_llm::{ApiType, ChatModel, ChatRequest, LlmError, LlmSettings, Model, ToolCallMode};
use agent_testkit::{AnthropicReply, Completion, MockAnthropic, MockOpenAi, StreamGate};
use serde_json::{Value, json};

const KEY: &str = "sk-ant-test-0123456789";

fn bash_tool() -> ToolDefinition {
    ToolDefinition::new(
        "bash",
        "Run a command.",
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    )
}

fn anthropic(server: &MockAnthropic, stream: bool) -> Model {
    let mut settings = LlmSettings::new("claude-sonnet-4-5", server.base_url())
        .with_api_key(KEY)
        .with_api_type(ApiType::Anthropic);
    settings.stream = stream;
    settings.temperature = 0.0;
    settings.backoff_min_secs = 0.001;
    settings.backoff_max_secs = 0.02;
    Model::new(settings).unwrap()
}

/// A two-step conversation: a call, its result (with an image), the next step.
async fn converse(model: &Model) -> (agent_llm::ChatResponse, agent_llm::ChatResponse) {
    let system = vec![Message::system_message("You are terse.")];
    let mut messages = vec![Message::user_message("list the files")];
    let first = model
        .complete(
            ChatRequest::new(messages.clone())
                .with_system(system.clone())
                .with_tools(vec![bash_tool()], ToolChoice::Auto),
        )
        .await
        .unwrap();
    messages.push(Message::from_tool_calls(
        first.tool_calls.clone(),
        first.content.clone().unwrap_or_default(),
    ));
    let mut result = Message::tool_message("a.txt\nb.txt", "bash", &first.tool_calls[0].id);
    result.base64_image = Some("iVBORw0KGgoAAAANSUhEUg==".into());
    messages.push(result);
    messages.push(Message::user_message("What next?"));
    let second = model
        .complete(
            ChatRequest::new(messages)
                .with_system(system)
                .with_tools(vec![bash_tool()], ToolChoice::Auto),
        )
        .await
        .unwrap();
    (first, second)
}

#[tokio::test]
async fn anthropic_streamed_and_not_with_tool_use_images_usage_and_caching() {
    for stream in [false, true] {
        let server = MockAnthropic::start().await.unwrap();
        server.require_api_key(KEY);
        server
            .push(Completion::tool_calls(
                Some("Listing.".into()),
                [ToolCall::new("toolu_01", "bash", r#"{"command": "ls"}"#)],
            ))
            .push(Completion::text("Two files."));
        let model = anthropic(&server, stream);
        let (first, second) = converse(&model).await;
        assert_eq!(first.content.as_deref(), Some("Listing."));
        assert_eq!(first.tool_calls[0].id, "toolu_01");
        assert_eq!(
            serde_json::from_str::<Value>(&first.tool_calls[0].function.arguments).unwrap(),
            json!({"command": "ls"})
        );
        assert_eq!(first.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(second.content.as_deref(), Some("Two files."));
        assert_eq!(second.finish_reason.as_deref(), Some("stop"));
        server.verify().unwrap();

        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        let body = &requests[1].body;
        assert_eq!(requests[1].header("x-api-key"), Some(KEY));
        assert_eq!(requests[1].header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(body["stream"].as_bool().unwrap_or(false), stream);
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            body["tools"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        let result_turn = &body["messages"][2]["content"];
        assert_eq!(result_turn[0]["type"], "tool_result");
        assert_eq!(
            result_turn[0]["content"][1]["source"]["media_type"],
            "image/png"
        );
        assert_eq!(
            result_turn[1],
            json!({"type": "text", "text": "What next?"})
        );
        // The second request read the system prompt and tools from the cache; its usage counts
        // cached input as input.
        assert_eq!(server.cache_use(), (1, 1));
        let usage = second.usage.unwrap();
        assert!(
            usage.prompt_tokens > 0 && usage.completion_tokens > 0,
            "{usage:?}"
        );
    }
}

#[tokio::test]
async fn anthropic_overload_rate_limit_and_stream_errors_are_retried() {
    let server = MockAnthropic::start().await.unwrap();
    server
        .push(AnthropicReply::Overloaded)
        .push(AnthropicReply::RateLimited {
            retry_after: Some(1),
        })
        .push(AnthropicReply::OverloadedInStream)
        .push(Completion::text("finally"));
    let model = anthropic(&server, true);
    let started = Instant::now();
    let reply = model
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap();
    assert_eq!(reply.content.as_deref(), Some("finally"));
    assert_eq!(server.requests().len(), 4);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retry-after was honoured"
    );
    server.verify().unwrap();

    // Permanent errors are not retried; a bad key is an authentication error.
    let server = MockAnthropic::start().await.unwrap();
    server.require_api_key("another-key");
    let error = anthropic(&server, false)
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Authentication(_)), "{error:?}");
    assert_eq!(server.requests().len(), 1);
}

fn openai(server: &MockOpenAi, mode: ToolCallMode) -> Model {
    let mut settings = LlmSettings::new("qwen2.5:7b", server.base_url())
        .with_api_type(ApiType::Ollama)
        .with_tool_call_mode(mode);
    settings.max_attempts = 1;
    Model::new(settings).unwrap()
}

#[tokio::test]
async fn text_mode_sends_no_tools_and_reads_calls_from_text() {
    let server = MockOpenAi::start().await.unwrap();
    server
        .push_text("I'll look.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {'command': 'ls',}}\n</tool_call>")
        .push_text("```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"pwd\"}}\n```")
        .push_text("<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": </tool_call>")
        .push_text("Done.");
    let model = openai(&server, ToolCallMode::Text);
    let system = vec![Message::system_message("You are terse.")];
    let mut messages = vec![Message::user_message("where am I?")];
    let request = |messages: &Vec<Message>| {
        ChatRequest::new(messages.clone())
            .with_system(system.clone())
            .with_tools(vec![bash_tool()], ToolChoice::Auto)
    };
    for step in 0..2 {
        let reply = model.complete(request(&messages)).await.unwrap();
        assert_eq!(reply.tool_calls.len(), 1, "step {step}: {reply:?}");
        assert_eq!(reply.tool_calls[0].function.name, "bash");
        let id = reply.tool_calls[0].id.clone();
        messages.push(Message::from_tool_calls(
            reply.tool_calls,
            reply.content.unwrap_or_default(),
        ));
        messages.push(Message::tool_message(format!("output {step}"), "bash", &id));
    }
    // An unreadable call comes back as text, and the next request says what was wrong.
    let broken = model.complete(request(&messages)).await.unwrap();
    assert!(broken.tool_calls.is_empty());
    messages.push(Message::assistant_message(broken.content.unwrap()));
    let done = model.complete(request(&messages)).await.unwrap();
    assert_eq!(done.content.as_deref(), Some("Done."));
    server.verify().unwrap();

    let requests = server.requests();
    for r in &requests {
        assert!(r.body.get("tools").is_none() && r.body.get("tool_choice").is_none());
    }
    let last = requests[3].messages();
    let system_text = last[0]["content"].as_str().unwrap();
    assert!(
        system_text.starts_with("You are terse.\n\n# Tools"),
        "{system_text}"
    );
    assert!(system_text.contains("\"name\":\"bash\""));
    assert_eq!(last[2]["role"], "assistant");
    assert!(last[2]["content"].as_str().unwrap().contains(
        "<tool_call>\n{\"arguments\":{\"command\":\"ls\"},\"name\":\"bash\"}\n</tool_call>"
    ));
    assert_eq!(last[3]["role"], "user");
    assert_eq!(
        last[3]["content"],
        "<tool_response name=\"bash\">\noutput 0\n</tool_response>"
    );
    let note = last.last().unwrap()["content"].as_str().unwrap();
    assert!(
        note.contains("could not be read") && note.contains("not JSON"),
        "{note}"
    );
}

#[tokio::test]
async fn auto_switches_to_text_after_ollamas_400_and_stays_there() {
    let server = MockOpenAi::start().await.unwrap();
    server.reject_tools("gemma3");
    server
        .push_text(
            "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>",
        )
        .push_text(
            "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"pwd\"}}</tool_call>",
        );
    let model = openai(&server, ToolCallMode::Auto);
    assert!(!model.text_mode_active());
    let request = ChatRequest::new(vec![Message::user_message("go")])
        .with_tools(vec![bash_tool()], ToolChoice::Auto);
    let reply = model.complete(request.clone()).await.unwrap();
    assert_eq!(
        reply.tool_calls[0].function.arguments,
        r#"{"command":"ls"}"#
    );
    assert!(model.text_mode_active());
    model.complete(request).await.unwrap();
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        3,
        "one refused native request, then text only"
    );
    assert!(requests[0].body.get("tools").is_some());
    assert!(requests[1..].iter().all(|r| r.body.get("tools").is_none()));
    server.verify().unwrap();

    // `native` does not switch: the refusal is the caller's error.
    let server = MockOpenAi::start().await.unwrap();
    server.reject_tools("gemma3");
    let error = openai(&server, ToolCallMode::Native)
        .complete(
            ChatRequest::new(vec![Message::user_message("go")])
                .with_tools(vec![bash_tool()], ToolChoice::Auto),
        )
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("does not support tools"),
        "{error}"
    );
}

#[tokio::test]
async fn a_history_with_tool_blocks_but_no_tools_reaches_anthropic_as_text() {
    let server = MockAnthropic::start().await.unwrap();
    server
        .push(Completion::text("The plan is done."))
        .push(Completion::text("Nothing to call."));
    let model = anthropic(&server, false);
    let history = vec![
        Message::user_message("task"),
        Message::from_tool_calls(
            vec![ToolCall::new("toolu_9", "bash", r#"{"command": "ls"}"#)],
            "",
        ),
        Message::tool_message("a.txt", "bash", "toolu_9"),
        Message::user_message("Summarise."),
    ];
    // `ask` sends no tools (a flow's final summary does this).
    let summary = model.ask(history.clone(), vec![]).await.unwrap();
    assert_eq!(summary, "The plan is done.");
    // tool_choice none keeps the tools declared and says "none".
    let reply = model
        .complete(ChatRequest::new(history).with_tools(vec![bash_tool()], ToolChoice::None))
        .await
        .unwrap();
    assert_eq!(reply.content.as_deref(), Some("Nothing to call."));
    server.verify().unwrap();
    let requests = server.requests();
    let first = &requests[0].body;
    assert!(first.get("tools").is_none());
    assert!(
        first["messages"][1]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("<tool_call>")
    );
    assert!(
        first["messages"][2]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("<tool_response name=\"bash\">")
    );
    assert_eq!(requests[1].body["tool_choice"], json!({"type": "none"}));
}

/// A streamed Messages reply is handed over piece by piece: the first `TextDelta` reaches the
/// event bus while the mock still holds the rest of the stream, and the deltas add up to the
/// reply's text (the tool call's input is not text).
#[tokio::test]
async fn anthropic_streams_text_deltas_before_the_reply_ends() {
    let server = MockAnthropic::start().await.unwrap();
    let gate = StreamGate::new();
    let text = "Streaming this reply slowly, in pieces.";
    server.push(AnthropicReply::HeldStream {
        reply: Completion::tool_calls(
            Some(text.into()),
            [ToolCall::new("t1", "bash", r#"{"command":"ls"}"#)],
        ),
        // message_start, ping, content_block_start and the first text_delta.
        after_events: 4,
        gate: gate.clone(),
    });
    let bus = EventBus::new();
    let mut events = bus.subscribe();
    let model = anthropic(&server, true).with_events(bus);
    let reply = tokio::spawn(async move {
        model
            .complete(
                ChatRequest::new(vec![Message::user_message("hi")])
                    .with_tools(vec![bash_tool()], ToolChoice::Auto),
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
    assert_eq!(reply.tool_calls.len(), 1);
    let mut streamed = first;
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::TextDelta { text } = event {
            streamed.push_str(&text);
        }
    }
    assert_eq!(streamed, text);
    server.verify().unwrap();
}

/// In text mode the streamed deltas carry the prose only: a `<tool_call>` block cut across
/// chunks never shows, a stream cut inside the block and retried starts the prose again after
/// the `Retry`, and the deltas after it add up to the reply's text.
#[tokio::test]
async fn text_mode_deltas_leave_the_markup_out_across_a_retry() {
    let server = MockOpenAi::start().await.unwrap();
    let reply = "I'll look.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\nThen I'll report.";
    // The role chunk and the first pieces (cut inside the tag), then the whole reply.
    server
        .push_cut_stream(4, Completion::text(reply))
        .push_text(reply);
    let mut settings = LlmSettings::new("qwen2.5:7b", server.base_url())
        .with_api_type(ApiType::Ollama)
        .with_tool_call_mode(ToolCallMode::Text);
    settings.max_attempts = 2;
    settings.backoff_min_secs = 0.001;
    settings.backoff_max_secs = 0.02;
    let bus = EventBus::new();
    let mut events = bus.subscribe();
    let model = Model::new(settings).unwrap().with_events(bus);
    let answer = model
        .complete(
            ChatRequest::new(vec![Message::user_message("where am I?")])
                .with_tools(vec![bash_tool()], ToolChoice::Auto),
        )
        .await
        .unwrap();
    assert_eq!(
        answer.content.as_deref(),
        Some("I'll look.\n\nThen I'll report.")
    );
    assert_eq!(answer.tool_calls.len(), 1);
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut retried = false;
    while let Ok(event) = events.try_recv() {
        match event {
            AgentEvent::Retry { .. } => retried = true,
            AgentEvent::TextDelta { text } if retried => after.push(text),
            AgentEvent::TextDelta { text } => before.push(text),
            _ => {}
        }
    }
    assert!(retried);
    for delta in before.iter().chain(&after) {
        assert!(
            !delta.contains('<') && !delta.contains("name") && !delta.contains('{'),
            "{delta:?}"
        );
    }
    assert!(after.len() > 2, "{after:?}");
    assert_eq!(after.concat(), "I'll look.\n\nThen I'll report.");
    server.verify().unwrap();
}

#[tokio::test]
async fn an_anthropic_stream_that_goes_silent_is_a_timeout_given_the_timeout_attempts() {
    let server = MockAnthropic::start().await.unwrap();
    let gate = StreamGate::new();
    for _ in 0..3 {
        server.push(AnthropicReply::HeldStream {
            reply: Completion::text("never finished"),
            after_events: 2,
            gate: gate.clone(),
        });
    }
    let mut settings = LlmSettings::new("claude-sonnet-4-5", server.base_url())
        .with_api_key(KEY)
        .with_api_type(ApiType::Anthropic);
    settings.read_timeout_secs = 1.0;
    settings.backoff_min_secs = 0.001;
    settings.backoff_max_secs = 0.02;
    let error = Model::new(settings)
        .unwrap()
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    gate.release();
    assert_eq!(error, LlmError::Timeout(Duration::from_secs(1)));
    assert_eq!(server.requests().len(), 2, "max_timeout_attempts is 2");
}

#[tokio::test]
async fn an_unreachable_anthropic_server_gets_the_connect_attempts() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut settings = LlmSettings::new("claude-sonnet-4-5", format!("http://127.0.0.1:{port}"))
        .with_api_key(KEY)
        .with_api_type(ApiType::Anthropic);
    settings.backoff_min_secs = 0.001;
    settings.backoff_max_secs = 0.01;
    let bus = EventBus::new();
    let mut events = bus.subscribe();
    let error = Model::new(settings)
        .unwrap()
        .with_events(bus)
        .complete(ChatRequest::new(vec![Message::user_message("hi")]))
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Connect(_)), "{error}");
    let mut retries = 0;
    while let Ok(event) = events.try_recv() {
        if matches!(event, AgentEvent::Retry { .. }) {
            retries += 1;
        }
    }
    assert_eq!(retries, 2, "three attempts (max_connect_attempts), not six");
}
