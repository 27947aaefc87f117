//! `BedrockClient` (the AWS SDK's Converse) against the test kit's strict Converse mock on
//! 127.0.0.1: tool use, tool results with images, usage, stop reasons, and throttling and 503
//! retried through the crate's policy while a validation error is not.

#![cfg(feature = "bedrock")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agent_core::{Message, ToolCall, ToolChoice, ToolDefinition};
use agent_llm::bedrock::BedrockClient;
use agent_llm::{ApiType, ChatModel, ChatRequest, LlmError, LlmSettings, Usage};
use agent_testkit::{BedrockReply, Completion, MockBedrock};
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_bedrockruntime::config::{Credentials, SharedCredentialsProvider};
use serde_json::json;

fn client(server: &MockBedrock) -> BedrockClient {
    let mut settings = LlmSettings::new(
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        server.endpoint(),
    )
    .with_api_type(ApiType::Aws);
    settings.backoff_min_secs = 0.001;
    settings.backoff_max_secs = 0.02;
    settings.temperature = 0.0;
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
async fn converse_with_tools_images_and_retries() {
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
        Some(Usage {
            prompt_tokens: 30,
            completion_tokens: 7,
            total_tokens: 37,
            cached_prompt_tokens: 0,
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
        "/model/anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse"
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
