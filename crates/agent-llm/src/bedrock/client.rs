//! `BedrockClient`: ConverseStream (or Converse with `stream = false`) through the official AWS
//! SDK, which signs the request (SigV4) and decodes the event stream, with the crate's retry
//! policy (the SDK's own retries are off) and error classifier.

use agent_core::{AgentEvent, EventBus, ToolCall};
use async_trait::async_trait;
use aws_config::BehaviorVersion;
use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::config::http::HttpResponse;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::converse::ConverseOutput as SdkOutput;
use aws_sdk_bedrockruntime::primitives::Blob;
use aws_sdk_bedrockruntime::types::{
    AnyToolChoice, AutoToolChoice, ContentBlock, ConversationRole, ConverseOutput, ImageBlock,
    ImageFormat, ImageSource, InferenceConfiguration, Message, SystemContentBlock, Tool,
    ToolChoice, ToolConfiguration, ToolInputSchema, ToolResultBlock, ToolResultContentBlock,
    ToolResultStatus, ToolSpecification, ToolUseBlock,
};
use aws_smithy_types::retry::RetryConfig;
use aws_smithy_types::timeout::TimeoutConfig;
use serde_json::{Value, json};
use tokio::sync::OnceCell;
use tracing::debug;

use super::stream::{StreamAssembler, stream_error, usage as stream_usage};
use super::wire::{BodyOptions, body, finish_reason, from_document, to_document};
use crate::error::error_chain;
use crate::frame::{ClientFrame, TokenTotals};
use crate::settings::LlmSettings;
use crate::{ChatModel, ChatRequest, ChatResponse, LlmError, TokenUsage, classify};

/// The client for one model on Amazon Bedrock (`api_type = "aws"`). Region and credentials come
/// from the AWS environment as the SDK resolves them (`AWS_REGION`, `AWS_PROFILE`, the
/// credential files, SSO, web identity, instance roles); a non-empty `base_url` overrides the
/// endpoint (a VPC endpoint, or a local server in tests).
pub struct BedrockClient {
    frame: ClientFrame,
    sdk: OnceCell<Client>,
    aws: Option<aws_config::SdkConfig>,
}

impl std::fmt::Debug for BedrockClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BedrockClient")
            .field("model", &self.frame.model_name())
            .field("endpoint", &self.frame.settings().base_url)
            .finish_non_exhaustive()
    }
}

/// The SDK's HTTPS client (hyper 1 and rustls) on ring, the workspace's one crypto provider;
/// the SDK's default client would bring aws-lc-rs (see the workspace manifest). Also used by
/// the AWS credential providers (SSO, STS) that `aws_config` builds.
fn https_client() -> aws_sdk_bedrockruntime::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

fn invalid(what: impl std::fmt::Display) -> LlmError {
    LlmError::InvalidRequest(what.to_string())
}

impl BedrockClient {
    /// Builds a client; the AWS configuration is resolved on the first call.
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidRequest`] for an empty model or a `base_url` that is not http(s).
    pub fn new(settings: LlmSettings) -> Result<Self, LlmError> {
        // The table's vision models, and Claude on Bedrock, read images.
        let frame = ClientFrame::new(settings, |model, table| {
            table.vision || model.contains("claude")
        })?;
        let base = frame.settings().base_url.trim();
        if !base.is_empty() {
            let parsed = url::Url::parse(base)
                .map_err(|e| invalid(format!("invalid base_url {base:?}: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(invalid(format!(
                    "base_url must be http or https, got {base:?}"
                )));
            }
        }
        Ok(Self {
            frame,
            sdk: OnceCell::new(),
            aws: None,
        })
    }

    /// Emits [`agent_core::AgentEvent::Retry`] on `events` for every retry and, for streamed
    /// replies (`stream = true`), [`agent_core::AgentEvent::TextDelta`] for each piece of text
    /// as it arrives (pass the agent's event bus).
    #[must_use]
    pub fn with_events(mut self, events: EventBus) -> Self {
        self.frame.set_events(events);
        self
    }

    /// Uses `config` (region, credentials, ...) instead of resolving the AWS environment.
    #[must_use]
    pub fn with_aws_config(mut self, config: aws_config::SdkConfig) -> Self {
        self.aws = Some(config);
        self
    }

    /// Cumulative token counts.
    #[must_use]
    pub fn totals(&self) -> TokenTotals {
        self.frame.totals()
    }

    /// The Converse body for `request` as JSON (what the SDK sends; `modelId` goes in the URL).
    #[must_use]
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let settings = self.frame.settings();
        let mut body = body(
            request,
            BodyOptions {
                max_tokens: settings.max_tokens,
                temperature: settings.temperature,
                vision: self.frame.supports_images(),
            },
        );
        body["modelId"] = json!(settings.model);
        body
    }

    /// The SDK client, made on first use from the AWS environment.
    async fn sdk(&self) -> Result<&Client, LlmError> {
        let settings = self.frame.settings();
        self.sdk
            .get_or_try_init(|| async {
                let shared = match &self.aws {
                    Some(config) => config.clone(),
                    None => {
                        aws_config::defaults(BehaviorVersion::latest())
                            .http_client(https_client())
                            .load()
                            .await
                    }
                };
                if shared.region().is_none() {
                    return Err(invalid(
                        "no AWS region for Bedrock: set AWS_REGION (or a region in the AWS profile)",
                    ));
                }
                let mut timeouts = TimeoutConfig::builder();
                if let Some(connect) = crate::settings::secs(settings.connect_timeout_secs) {
                    timeouts = timeouts.connect_timeout(connect);
                }
                if let Some(total) = crate::settings::secs(settings.request_timeout_secs) {
                    timeouts = timeouts.operation_attempt_timeout(total);
                }
                let mut config = aws_sdk_bedrockruntime::config::Builder::from(&shared)
                    .retry_config(RetryConfig::disabled())
                    .timeout_config(timeouts.build());
                if shared.http_client().is_none() {
                    config = config.http_client(https_client());
                }
                let base = settings.base_url.trim().trim_end_matches('/');
                if !base.is_empty() {
                    config = config.endpoint_url(base);
                }
                Ok(Client::from_conf(config.build()))
            })
            .await
    }

    /// The SDK's request parts from the JSON body.
    fn sdk_input(&self, body: &Value) -> Result<SdkInput, LlmError> {
        let system = body.get("system").and_then(Value::as_array).map(|system| {
            system
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .map(|t| SystemContentBlock::Text(t.to_owned()))
                .collect()
        });
        let max_tokens = i32::try_from(self.frame.settings().max_tokens).unwrap_or(i32::MAX);
        #[allow(clippy::cast_possible_truncation)]
        let temperature = body
            .pointer("/inferenceConfig/temperature")
            .and_then(Value::as_f64)
            .unwrap_or(1.0) as f32;
        Ok(SdkInput {
            messages: sdk_messages(body)?,
            system,
            inference: InferenceConfiguration::builder()
                .max_tokens(max_tokens)
                .temperature(temperature)
                .build(),
            tools: body.get("toolConfig").map(sdk_tools).transpose()?,
        })
    }

    /// One Converse call (the whole reply at once).
    async fn send_once(&self, input: SdkInput) -> Result<ChatResponse, LlmError> {
        let client = self.sdk().await?;
        let output = client
            .converse()
            .model_id(self.frame.model_name())
            .set_messages(Some(input.messages))
            .set_system(input.system)
            .inference_config(input.inference)
            .set_tool_config(input.tools)
            .send()
            .await
            .map_err(|e| self.sdk_error(&e))?;
        Ok(response(&output))
    }

    /// One ConverseStream call: text handed to the event bus piece by piece as it arrives.
    async fn stream_once(&self, input: SdkInput) -> Result<ChatResponse, LlmError> {
        let client = self.sdk().await?;
        let started = tokio::time::Instant::now();
        let sending = client
            .converse_stream()
            .model_id(self.frame.model_name())
            .set_messages(Some(input.messages))
            .set_system(input.system)
            .inference_config(input.inference)
            .set_tool_config(input.tools)
            .send();
        let output = self
            .frame
            .first_byte(true, sending)
            .await?
            .map_err(|e| self.sdk_error(&e))?;
        let mut stream = output.stream;
        let mut assembler = StreamAssembler::default();
        let settings = self.frame.settings();
        let idle = crate::settings::secs(settings.read_timeout_secs);
        let total = crate::settings::secs(settings.request_timeout_secs);
        let redact = |text: &str| settings.api_key.redact(text);
        // The SDK decodes the event stream (a frame is at most 16 MiB); what is kept of the
        // reply stops at the limit, as the other clients' streams do.
        let limit = crate::settings::reply_limit(settings);
        loop {
            let left = total.map(|total| total.saturating_sub(started.elapsed()));
            let wait = match (idle, left) {
                (Some(idle), Some(left)) => Some(idle.min(left)),
                (idle, left) => idle.or(left),
            };
            let next = match wait {
                Some(wait) => match tokio::time::timeout(wait, stream.recv()).await {
                    Ok(next) => next,
                    Err(_) => {
                        // A silent stream is a hang, not a cut: it counts against the attempts
                        // given to timeouts.
                        debug!(
                            wait_secs = wait.as_secs_f64(),
                            received_tokens = assembler.received_tokens(),
                            "the Bedrock stream went silent"
                        );
                        return Err(LlmError::Timeout(match (left, total) {
                            (Some(left), Some(total)) if left <= wait => total,
                            _ => wait,
                        }));
                    }
                },
                None => stream.recv().await,
            };
            let event = match next {
                Ok(Some(event)) => event,
                Ok(None) => break,
                Err(error) => {
                    return Err(stream_error(&error, assembler.received_tokens(), redact));
                }
            };
            if let Some(text) = assembler.push(event)?
                && let Some(events) = self.frame.events()
            {
                events.emit(AgentEvent::TextDelta { text });
            }
            if assembler.received_bytes() > limit {
                // Dropping the stream closes the connection: the rest is not read.
                tracing::warn!(
                    limit,
                    max_tokens = settings.max_tokens,
                    "the streamed reply was cut: it was longer than max_tokens allows"
                );
                return Ok(assembler.cut(limit));
            }
        }
        if !assembler.stopped() {
            return Err(LlmError::stream_interrupted(
                "the stream ended before messageStop",
                assembler.received_tokens(),
            ));
        }
        Ok(assembler.finish())
    }

    fn sdk_error<E>(&self, error: &SdkError<E, HttpResponse>) -> LlmError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let settings = self.frame.settings();
        let redact = |text: String| settings.api_key.redact(&text);
        match error {
            SdkError::ServiceError(context) => {
                let raw = context.raw();
                let code = context.err().code().unwrap_or_default().to_owned();
                let message = context.err().message().unwrap_or_default().to_owned();
                let body = json!({"error": {"type": code, "code": code, "message": message}});
                classify(
                    raw.status().as_u16(),
                    |name| raw.headers().get(name).map(str::to_owned),
                    &redact(body.to_string()),
                )
            }
            SdkError::TimeoutError(_) => LlmError::Timeout(
                crate::settings::secs(settings.request_timeout_secs).unwrap_or_default(),
            ),
            SdkError::DispatchFailure(failure) if failure.is_timeout() => LlmError::Timeout(
                crate::settings::secs(settings.connect_timeout_secs).unwrap_or_default(),
            ),
            SdkError::ConstructionFailure(_) => {
                LlmError::InvalidRequest(redact(error_chain(error)))
            }
            SdkError::ResponseError(_) => LlmError::MalformedResponse(redact(error_chain(error))),
            _ => LlmError::Network(redact(error_chain(error))),
        }
    }
}

/// What a Converse or ConverseStream call sends, in the SDK's types.
#[derive(Debug, Clone)]
struct SdkInput {
    messages: Vec<Message>,
    system: Option<Vec<SystemContentBlock>>,
    inference: InferenceConfiguration,
    tools: Option<ToolConfiguration>,
}

/// The SDK's messages from the JSON body.
fn sdk_messages(body: &Value) -> Result<Vec<Message>, LlmError> {
    let mut out = Vec::new();
    for message in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = match message.get("role").and_then(Value::as_str) {
            Some("assistant") => ConversationRole::Assistant,
            _ => ConversationRole::User,
        };
        let mut blocks = Vec::new();
        for block in message
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            blocks.push(content_block(block)?);
        }
        out.push(
            Message::builder()
                .role(role)
                .set_content(Some(blocks))
                .build()
                .map_err(invalid)?,
        );
    }
    Ok(out)
}

fn image(block: &Value) -> Result<ImageBlock, LlmError> {
    let format = block
        .get("format")
        .and_then(Value::as_str)
        .unwrap_or("jpeg");
    let data = block
        .pointer("/source/bytes")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let bytes = aws_smithy_types::base64::decode(data)
        .map_err(|e| invalid(format!("an image is not valid base64: {e}")))?;
    ImageBlock::builder()
        .format(ImageFormat::from(format))
        .source(ImageSource::Bytes(Blob::new(bytes)))
        .build()
        .map_err(invalid)
}

fn content_block(block: &Value) -> Result<ContentBlock, LlmError> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    if let Some(t) = block.get("text") {
        return Ok(ContentBlock::Text(text(t)));
    }
    if let Some(i) = block.get("image") {
        return Ok(ContentBlock::Image(image(i)?));
    }
    if let Some(call) = block.get("toolUse") {
        return Ok(ContentBlock::ToolUse(
            ToolUseBlock::builder()
                .tool_use_id(text(&call["toolUseId"]))
                .name(text(&call["name"]))
                .input(to_document(&call["input"]))
                .build()
                .map_err(invalid)?,
        ));
    }
    if let Some(result) = block.get("toolResult") {
        let mut content = Vec::new();
        for part in result
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(t) = part.get("text") {
                content.push(ToolResultContentBlock::Text(text(t)));
            } else if let Some(i) = part.get("image") {
                content.push(ToolResultContentBlock::Image(image(i)?));
            }
        }
        let mut builder = ToolResultBlock::builder()
            .tool_use_id(text(&result["toolUseId"]))
            .set_content(Some(content));
        if result.get("status").and_then(Value::as_str) == Some("error") {
            builder = builder.status(ToolResultStatus::Error);
        }
        return Ok(ContentBlock::ToolResult(builder.build().map_err(invalid)?));
    }
    Err(invalid(format!("an unknown content block: {block}")))
}

fn sdk_tools(config: &Value) -> Result<ToolConfiguration, LlmError> {
    let mut tools = Vec::new();
    for tool in config
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let spec = &tool["toolSpec"];
        tools.push(Tool::ToolSpec(
            ToolSpecification::builder()
                .name(spec["name"].as_str().unwrap_or_default())
                .description(spec["description"].as_str().unwrap_or_default())
                .input_schema(ToolInputSchema::Json(to_document(
                    &spec["inputSchema"]["json"],
                )))
                .build()
                .map_err(invalid)?,
        ));
    }
    let choice = if config.pointer("/toolChoice/any").is_some() {
        ToolChoice::Any(AnyToolChoice::builder().build())
    } else {
        ToolChoice::Auto(AutoToolChoice::builder().build())
    };
    ToolConfiguration::builder()
        .set_tools(Some(tools))
        .tool_choice(choice)
        .build()
        .map_err(invalid)
}

/// Our reply from the SDK's output.
fn response(output: &SdkOutput) -> ChatResponse {
    let mut text = String::new();
    let mut calls = Vec::new();
    if let Some(ConverseOutput::Message(message)) = &output.output {
        for block in message.content() {
            match block {
                ContentBlock::Text(t) => text.push_str(t),
                ContentBlock::ToolUse(call) => calls.push(ToolCall::new(
                    call.tool_use_id(),
                    call.name(),
                    from_document(call.input()).to_string(),
                )),
                _ => {}
            }
        }
    }
    let usage = output.usage.as_ref().map(stream_usage);
    ChatResponse {
        content: (!text.is_empty()).then_some(text),
        tool_calls: calls,
        usage,
        finish_reason: Some(finish_reason(output.stop_reason.as_str())),
        // Converse does not say which model answered.
        model: None,
    }
}

#[async_trait]
impl ChatModel for BedrockClient {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = self.request_body(&request);
        let text = body.to_string();
        let counted = self.frame.check_body_budget(text.as_bytes())?;
        let input = self.sdk_input(&body)?;
        let model = self.frame.model_name();
        let response = self
            .frame
            .retry(|attempt| {
                let input = input.clone();
                async move {
                    if self.frame.settings().stream {
                        debug!(attempt, model = %model, "sending a ConverseStream request");
                        self.stream_once(input).await
                    } else {
                        debug!(attempt, model = %model, "sending a Converse request");
                        self.send_once(input).await
                    }
                }
            })
            .await?;
        let usage = match response.usage {
            Some(usage) => usage,
            // No `metadata` event: a reply cut at the byte limit (or a stream that left it
            // out). Counted here, the output at most what `max_tokens` allows, so that the
            // budget and the telemetry see it.
            None => {
                let counter = self.frame.counter();
                let input = counted.unwrap_or_else(|| {
                    u64::try_from(counter.count_text(&text)).unwrap_or(u64::MAX)
                });
                let output = counter
                    .count_text(response.content.as_deref().unwrap_or_default())
                    .saturating_add(
                        response
                            .tool_calls
                            .iter()
                            .map(|c| counter.count_text(&c.function.arguments))
                            .sum::<usize>(),
                    );
                TokenUsage {
                    prompt_tokens: input,
                    completion_tokens: u64::try_from(output)
                        .unwrap_or(u64::MAX)
                        .min(u64::from(self.frame.settings().max_tokens)),
                    ..TokenUsage::default()
                }
            }
        };
        self.frame.record_usage(&usage);
        Ok(ChatResponse {
            usage: Some(usage),
            ..response
        })
    }

    fn model_name(&self) -> &str {
        self.frame.model_name()
    }

    fn provider_name(&self) -> &str {
        self.frame.provider_name()
    }

    fn price(&self) -> Option<crate::Price> {
        self.frame.price()
    }

    fn context_window(&self) -> Option<u64> {
        self.frame.context_window()
    }

    fn supports_images(&self) -> bool {
        self.frame.supports_images()
    }
}
