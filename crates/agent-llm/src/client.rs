//! `LlmClient`: the HTTP client for OpenAI-compatible chat-completions endpoints.

use std::sync::{Mutex, OnceLock, PoisonError};

use agent_core::{EventBus, Message, Role};
use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::{Map, Value, json};
use tracing::{debug, info};

use crate::format::{format_messages, image_part};
use crate::models::{ModelProfile, model_profile};
use crate::retry::RetryPolicy;
use crate::settings::{ApiType, LlmSettings};
use crate::tokens::TokenCounter;
use crate::wire::{StreamAssembler, parse_completion};
use crate::{ChatModel, ChatRequest, ChatResponse, LlmError, Usage, classify};

/// Azure's `api-version` when the settings give none.
pub const DEFAULT_AZURE_API_VERSION: &str = "2024-10-21";
/// Largest error body read for classification.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Cumulative token counts of one client (input and completion, since it was built).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenTotals {
    /// Input tokens.
    pub input: u64,
    /// Completion tokens.
    pub completion: u64,
}

/// An image for [`LlmClient::ask_with_images`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageInput {
    /// A URL (`https://...` or a `data:` URL).
    Url(String),
    /// Base64 bytes (the MIME type is sniffed).
    Base64(String),
}

/// The client for one model at one endpoint. Cheap to share (`Arc<LlmClient>` as an
/// `Arc<dyn ChatModel>`); token totals are per client, never global.
pub struct LlmClient {
    settings: LlmSettings,
    profile: ModelProfile,
    url: String,
    http: reqwest::Client,
    retry: RetryPolicy,
    counter: OnceLock<TokenCounter>,
    totals: Mutex<TokenTotals>,
    events: Option<EventBus>,
}

impl std::fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmClient")
            .field("model", &self.settings.model)
            .field("url", &self.url)
            .field("profile", &self.profile)
            .finish_non_exhaustive()
    }
}

impl LlmClient {
    /// Builds a client from settings.
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidRequest`] for an empty model, a base URL that is not http(s), or an
    /// HTTP client that cannot be built.
    pub fn new(settings: LlmSettings) -> Result<Self, LlmError> {
        if settings.model.trim().is_empty() {
            return Err(LlmError::InvalidRequest("the model name is empty".into()));
        }
        let url = endpoint(&settings)?;
        let mut profile = model_profile(&settings.model);
        if let Some(vision) = settings.supports_images {
            profile.vision = vision;
        }
        if let Some(reasoning) = settings.reasoning {
            profile.reasoning = reasoning;
        }
        if settings.context_window.is_some() {
            profile.context_window = settings.context_window;
        }
        // No client-wide read timeout: it would also bound the wait for the response headers,
        // cutting off models that think before answering. Streams get an idle timeout instead.
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("openmanus-rs/", env!("CARGO_PKG_VERSION")));
        if let Some(timeout) = LlmSettings::secs(settings.connect_timeout_secs) {
            builder = builder.connect_timeout(timeout);
        }
        if let Some(timeout) = LlmSettings::secs(settings.request_timeout_secs) {
            builder = builder.timeout(timeout);
        }
        let http = builder
            .build()
            .map_err(|e| LlmError::InvalidRequest(format!("cannot build the HTTP client: {e}")))?;
        let retry = RetryPolicy {
            max_attempts: settings.max_attempts.max(1),
            min_delay: LlmSettings::secs(settings.backoff_min_secs).unwrap_or_default(),
            max_delay: LlmSettings::secs(settings.backoff_max_secs).unwrap_or_default(),
            max_retry_after: LlmSettings::secs(settings.max_retry_after_secs).unwrap_or_default(),
        };
        Ok(Self {
            settings,
            profile,
            url,
            http,
            retry,
            counter: OnceLock::new(),
            totals: Mutex::new(TokenTotals::default()),
            events: None,
        })
    }

    /// Emits [`agent_core::AgentEvent::Retry`] on `events` for every retry (pass the agent's
    /// event bus).
    #[must_use]
    pub fn with_events(mut self, events: EventBus) -> Self {
        self.events = Some(events);
        self
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &LlmSettings {
        &self.settings
    }

    /// The resolved model profile (table values with the settings' overrides).
    #[must_use]
    pub fn profile(&self) -> ModelProfile {
        self.profile
    }

    /// The chat-completions URL requests go to.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.url
    }

    /// Cumulative token counts.
    #[must_use]
    pub fn totals(&self) -> TokenTotals {
        *self.totals.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The token counter (tokenizer tables load on first use).
    pub fn counter(&self) -> TokenCounter {
        *self
            .counter
            .get_or_init(|| TokenCounter::for_model(&self.settings.model))
    }

    /// OpenManus's `ask_with_images`: a text completion where `images` are added to the last
    /// message, which must be from the user.
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidRequest`] when the model does not accept images or the last message is
    /// not a user message; otherwise as [`ChatModel::complete`].
    pub async fn ask_with_images(
        &self,
        messages: Vec<Message>,
        images: Vec<ImageInput>,
        system_msgs: Vec<Message>,
    ) -> Result<String, LlmError> {
        if !self.profile.vision {
            return Err(LlmError::InvalidRequest(format!(
                "model {} does not support images (set `supports_images = true` if it does)",
                self.settings.model
            )));
        }
        if messages.last().map(|m| m.role) != Some(Role::User) {
            return Err(LlmError::InvalidRequest(
                "the last message must be from the user to attach images".into(),
            ));
        }
        let mut formatted = format_messages(system_msgs.iter().chain(&messages), true);
        if let Some(Value::Object(last)) = formatted.last_mut() {
            let mut parts = match last.remove("content") {
                Some(Value::Array(parts)) => parts,
                Some(Value::String(text)) if !text.is_empty() => {
                    vec![json!({"type": "text", "text": text})]
                }
                _ => Vec::new(),
            };
            for image in images {
                parts.push(match image {
                    ImageInput::Url(url) => json!({"type": "image_url", "image_url": {"url": url}}),
                    ImageInput::Base64(data) => image_part(&data),
                });
            }
            last.insert("content".into(), Value::Array(parts));
        }
        let response = self.send(formatted, Vec::new(), None, None).await?;
        match response.content {
            Some(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
            _ => Err(LlmError::MalformedResponse(
                "empty response from the model".into(),
            )),
        }
    }

    /// Checks the budget and the context window, sends with retries, and counts the tokens.
    async fn send(
        &self,
        messages: Vec<Value>,
        tools: Vec<Value>,
        tool_choice: Option<&str>,
        temperature: Option<f64>,
    ) -> Result<ChatResponse, LlmError> {
        // Counting needs the tokenizer tables (~0.1 s to load the first time), so the request is
        // counted before it is sent only when a budget or a configured context window needs it;
        // otherwise the provider's `usage` is used, or an estimate made after the reply.
        let count_input = |messages: &[Value], tools: &[Value]| {
            let counter = self.counter();
            u64::try_from(counter.count_messages(messages) + counter.count_tools(tools))
                .unwrap_or(u64::MAX)
        };
        let mut input = None;
        if let Some(max) = self.settings.max_input_tokens {
            let needed = *input.get_or_insert_with(|| count_input(&messages, &tools));
            let total = self.totals().input;
            if total.saturating_add(needed) > max {
                return Err(LlmError::TokenLimitExceeded(format!(
                    "Request may exceed input token limit (Current: {total}, Needed: {needed}, Max: {max})"
                )));
            }
        }
        if let Some(window) = self.settings.context_window {
            let needed = *input.get_or_insert_with(|| count_input(&messages, &tools));
            if needed > window {
                return Err(LlmError::ContextLengthExceeded(format!(
                    "the request needs about {needed} input tokens but {}'s context window is {window}",
                    self.settings.model
                )));
            }
        }
        let body = self.body(messages, tools, tool_choice, temperature);
        let response = self
            .retry
            .run(self.events.as_ref(), |attempt| {
                debug!(attempt, url = %self.url, "sending chat completion");
                self.send_once(&body)
            })
            .await?;
        let usage = match response.usage {
            Some(usage) => usage,
            None => {
                let counter = self.counter();
                let input = input.unwrap_or_else(|| {
                    let messages = body["messages"]
                        .as_array()
                        .map(Vec::as_slice)
                        .unwrap_or_default();
                    let tools = body["tools"]
                        .as_array()
                        .map(Vec::as_slice)
                        .unwrap_or_default();
                    count_input(messages, tools)
                });
                let completion = counter
                    .count_text(response.content.as_deref().unwrap_or_default())
                    + response
                        .tool_calls
                        .iter()
                        .map(|c| {
                            counter.count_text(&c.function.name)
                                + counter.count_text(&c.function.arguments)
                        })
                        .sum::<usize>();
                let completion = u64::try_from(completion).unwrap_or(u64::MAX);
                Usage {
                    prompt_tokens: input,
                    completion_tokens: completion,
                    total_tokens: input.saturating_add(completion),
                }
            }
        };
        let totals = {
            let mut totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
            totals.input = totals.input.saturating_add(usage.prompt_tokens);
            totals.completion = totals.completion.saturating_add(usage.completion_tokens);
            *totals
        };
        info!(
            "Token usage: Input={}, Completion={}, Cumulative Input={}, Cumulative Completion={}, Total={}, Cumulative Total={}",
            usage.prompt_tokens,
            usage.completion_tokens,
            totals.input,
            totals.completion,
            usage.prompt_tokens.saturating_add(usage.completion_tokens),
            totals.input.saturating_add(totals.completion)
        );
        Ok(ChatResponse {
            usage: Some(usage),
            ..response
        })
    }

    /// The JSON body this client sends for `request` (messages formatted for the model, the
    /// per-model parameter rules applied), as it goes on the wire; the key is not part of it.
    #[must_use]
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let (messages, tools) = self.wire_parts(request);
        self.body(
            messages,
            tools,
            request.tool_choice.map(|c| c.as_str()),
            request.temperature,
        )
    }

    /// The request's messages formatted for this model, and its tools, as JSON.
    fn wire_parts(&self, request: &ChatRequest) -> (Vec<Value>, Vec<Value>) {
        let messages = format_messages(request.all_messages(), self.profile.vision);
        let tools = request
            .tools
            .iter()
            .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
            .collect();
        (messages, tools)
    }

    /// The request body: per-model parameter rules applied from the profile.
    fn body(
        &self,
        messages: Vec<Value>,
        tools: Vec<Value>,
        tool_choice: Option<&str>,
        temperature: Option<f64>,
    ) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.settings.model.clone()));
        body.insert("messages".into(), Value::Array(messages));
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
            if let Some(choice) = tool_choice {
                body.insert("tool_choice".into(), Value::String(choice.to_owned()));
            }
        }
        if self.profile.reasoning {
            body.insert(
                "max_completion_tokens".into(),
                json!(self.settings.max_tokens),
            );
        } else {
            body.insert("max_tokens".into(), json!(self.settings.max_tokens));
            let temperature = temperature.unwrap_or(self.settings.temperature);
            body.insert("temperature".into(), json!(temperature));
        }
        body.insert("stream".into(), Value::Bool(self.settings.stream));
        if self.settings.stream && self.settings.stream_usage {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }

    /// One HTTP attempt.
    async fn send_once(&self, body: &Value) -> Result<ChatResponse, LlmError> {
        let mut request = self.http.post(&self.url).json(body);
        let key = &self.settings.api_key;
        if !key.is_empty() {
            request = match self.settings.api_type {
                ApiType::Azure => request.header("api-key", key.expose()),
                ApiType::Openai | ApiType::Ollama => request.bearer_auth(key.expose()),
            };
        }
        let response = request
            .send()
            .await
            .map_err(|e| self.transport_error(&e, false))?;
        let status = response.status();
        if !status.is_success() {
            let headers = response.headers().clone();
            let body = read_limited(response, ERROR_BODY_LIMIT).await;
            let error = classify(
                status.as_u16(),
                |name| header(&headers, name),
                &key.redact(&body),
            );
            return Err(error);
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            // Also the answer of servers that ignore `stream: true`.
            let bytes = response
                .bytes()
                .await
                .map_err(|e| self.transport_error(&e, false))?;
            return parse_completion(&bytes);
        }
        let mut events = response.bytes_stream().eventsource();
        let mut assembler = StreamAssembler::default();
        let mut done = false;
        let idle = LlmSettings::secs(self.settings.read_timeout_secs);
        loop {
            let next = match idle {
                Some(idle) => match tokio::time::timeout(idle, events.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        return Err(LlmError::stream_interrupted(
                            format!("no data for {} s", idle.as_secs_f64()),
                            assembler.received_tokens(),
                        ));
                    }
                },
                None => events.next().await,
            };
            let Some(event) = next else { break };
            let event = match event {
                Ok(event) => event,
                Err(e) => {
                    return Err(LlmError::stream_interrupted(
                        key.redact(&e.to_string()),
                        assembler.received_tokens(),
                    ));
                }
            };
            let data = event.data.trim();
            if data == "[DONE]" {
                done = true;
                break;
            }
            if !data.is_empty() {
                assembler.push(data)?;
            }
        }
        if !done && !assembler.finished() {
            return Err(LlmError::stream_interrupted(
                "the stream ended before the reply was complete",
                assembler.received_tokens(),
            ));
        }
        Ok(assembler.finish())
    }

    fn transport_error(&self, error: &reqwest::Error, received_tokens: bool) -> LlmError {
        let text = self.settings.api_key.redact(&error_chain(error));
        if error.is_timeout() {
            LlmError::Timeout(
                LlmSettings::secs(self.settings.request_timeout_secs).unwrap_or_default(),
            )
        } else if error.is_body() || error.is_decode() {
            LlmError::stream_interrupted(text, received_tokens)
        } else if error.is_builder() {
            LlmError::InvalidRequest(text)
        } else {
            LlmError::Network(text)
        }
    }
}

/// The full chain of an error's sources, on one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn read_limited(response: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= limit {
            body.truncate(limit);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The chat-completions URL for the settings.
fn endpoint(settings: &LlmSettings) -> Result<String, LlmError> {
    let base = settings.base_url.trim().trim_end_matches('/');
    let parsed = url::Url::parse(base)
        .map_err(|e| LlmError::InvalidRequest(format!("invalid base_url {base:?}: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(LlmError::InvalidRequest(format!(
            "base_url must be http or https, got {base:?}"
        )));
    }
    Ok(match settings.api_type {
        ApiType::Openai => format!("{base}/chat/completions"),
        ApiType::Ollama if base.ends_with("/v1") => format!("{base}/chat/completions"),
        ApiType::Ollama => format!("{base}/v1/chat/completions"),
        ApiType::Azure => {
            let version = settings
                .api_version
                .as_deref()
                .filter(|v| !v.is_empty())
                .unwrap_or(DEFAULT_AZURE_API_VERSION);
            let deployment_base = if base.contains("/openai/deployments/") {
                base.to_owned()
            } else {
                let deployment = settings.deployment.as_deref().unwrap_or(&settings.model);
                format!("{base}/openai/deployments/{deployment}")
            };
            format!("{deployment_base}/chat/completions?api-version={version}")
        }
    })
}

#[async_trait]
impl ChatModel for LlmClient {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let (messages, tools) = self.wire_parts(&request);
        let choice = request.tool_choice.map(|c| c.as_str());
        self.send(messages, tools, choice, request.temperature)
            .await
    }

    fn model_name(&self) -> &str {
        &self.settings.model
    }

    fn supports_images(&self) -> bool {
        self.profile.vision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_per_api_type() {
        let url = |settings: LlmSettings| endpoint(&settings).unwrap();
        assert_eq!(
            url(LlmSettings::new("gpt-4o", "https://api.openai.com/v1/")),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            url(LlmSettings::new("llama3.2", "http://localhost:11434")
                .with_api_type(ApiType::Ollama)),
            "http://localhost:11434/v1/chat/completions"
        );
        assert_eq!(
            url(LlmSettings::new("llama3.2", "http://localhost:11434/v1")
                .with_api_type(ApiType::Ollama)),
            "http://localhost:11434/v1/chat/completions"
        );
        let mut azure = LlmSettings::new("gpt-4o", "https://res.openai.azure.com")
            .with_api_type(ApiType::Azure);
        azure.api_version = Some("2024-08-01-preview".into());
        assert_eq!(
            url(azure.clone()),
            "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-08-01-preview"
        );
        azure.deployment = Some("prod-4o".into());
        assert_eq!(
            url(azure),
            "https://res.openai.azure.com/openai/deployments/prod-4o/chat/completions?api-version=2024-08-01-preview"
        );
        let azure = LlmSettings::new(
            "gpt-4o",
            "https://res.openai.azure.com/openai/deployments/dep1",
        )
        .with_api_type(ApiType::Azure);
        assert_eq!(
            url(azure),
            "https://res.openai.azure.com/openai/deployments/dep1/chat/completions?api-version=2024-10-21"
        );
        assert!(endpoint(&LlmSettings::new("m", "ftp://x")).is_err());
        assert!(endpoint(&LlmSettings::new("m", "not a url")).is_err());
    }

    #[test]
    fn reasoning_models_get_max_completion_tokens_and_no_temperature() {
        let client = LlmClient::new(LlmSettings::new("o3-mini", "http://127.0.0.1:9/v1")).unwrap();
        let body = client.body(
            vec![json!({"role": "user", "content": "hi"})],
            vec![],
            Some("auto"),
            Some(0.2),
        );
        assert_eq!(body["max_completion_tokens"], json!(4096));
        assert!(body.get("max_tokens").is_none() && body.get("temperature").is_none());
        assert!(
            body.get("tool_choice").is_none(),
            "no tool_choice without tools"
        );

        let mut settings = LlmSettings::new("gpt-4o", "http://127.0.0.1:9/v1");
        settings.stream = false;
        let client = LlmClient::new(settings).unwrap();
        let body = client.body(
            vec![],
            vec![json!({"type": "function"})],
            Some("required"),
            None,
        );
        assert_eq!(body["max_tokens"], json!(4096));
        assert_eq!(body["temperature"], json!(1.0));
        assert_eq!(body["tool_choice"], json!("required"));
        assert_eq!(body["stream"], json!(false));
        assert!(body.get("stream_options").is_none());
    }

    #[test]
    fn settings_override_the_model_table() {
        let mut settings = LlmSettings::new("my-local-vision-model", "http://127.0.0.1:9/v1");
        assert!(!LlmClient::new(settings.clone()).unwrap().profile().vision);
        settings.supports_images = Some(true);
        settings.reasoning = Some(true);
        settings.context_window = Some(1000);
        let profile = LlmClient::new(settings).unwrap().profile();
        assert!(profile.vision && profile.reasoning);
        assert_eq!(profile.context_window, Some(1000));
        assert!(LlmClient::new(LlmSettings::new(" ", "http://x")).is_err());
    }
}
