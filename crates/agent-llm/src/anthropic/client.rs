//! `AnthropicClient`: the Messages API over HTTP, streamed or not, with the crate's retry
//! policy and error classifier.

use std::sync::{Mutex, PoisonError};

use agent_core::{AgentEvent, EventBus};
use async_trait::async_trait;
use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use tracing::{debug, info};

use super::stream::MessageAssembler;
use super::wire::{ANTHROPIC_VERSION, BodyOptions, body, parse_message};
use crate::client::{TokenTotals, error_chain, header, read_limited};
use crate::models::{ModelProfile, model_profile};
use crate::retry::RetryPolicy;
use crate::settings::LlmSettings;
use crate::tokens::TokenCounter;
use crate::{ChatModel, ChatRequest, ChatResponse, LlmError, classify};

/// Largest error body read for classification.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// The endpoint when the settings' `base_url` is empty.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The client for one Claude model through Anthropic's Messages API (`api_type =
/// "anthropic"`). Token totals are per client.
pub struct AnthropicClient {
    settings: LlmSettings,
    profile: ModelProfile,
    url: String,
    http: reqwest::Client,
    retry: RetryPolicy,
    totals: Mutex<TokenTotals>,
    events: Option<EventBus>,
}

impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicClient")
            .field("model", &self.settings.model)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl AnthropicClient {
    /// Builds a client from settings (`base_url` is the API root, e.g.
    /// `https://api.anthropic.com`; a trailing `/v1` is accepted).
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidRequest`] for an empty model, a base URL that is not http(s), or an
    /// HTTP client that cannot be built.
    pub fn new(settings: LlmSettings) -> Result<Self, LlmError> {
        if settings.model.trim().is_empty() {
            return Err(LlmError::InvalidRequest("the model name is empty".into()));
        }
        let url = endpoint(&settings.base_url)?;
        let mut profile = model_profile(&settings.model);
        // Every Claude model since Claude 3 reads images.
        profile.vision = settings.supports_images.unwrap_or(true);
        let http = crate::http::client_with_connect_timeout(LlmSettings::secs(
            settings.connect_timeout_secs,
        ))
        .map_err(|e| LlmError::InvalidRequest(format!("cannot build the HTTP client: {e}")))?;
        let retry = RetryPolicy::from_settings(&settings);
        Ok(Self {
            settings,
            profile,
            url,
            http,
            retry,
            totals: Mutex::new(TokenTotals::default()),
            events: None,
        })
    }

    /// Emits [`agent_core::AgentEvent::Retry`] on `events` for every retry and, for streamed
    /// replies (`stream = true`), [`agent_core::AgentEvent::TextDelta`] for each piece of text
    /// as it arrives (pass the agent's event bus).
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

    /// The messages URL requests go to.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.url
    }

    /// Cumulative token counts (cached input included).
    #[must_use]
    pub fn totals(&self) -> TokenTotals {
        *self.totals.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The JSON body this client sends for `request`; the key is not part of it.
    #[must_use]
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        body(
            request,
            BodyOptions {
                model: &self.settings.model,
                max_tokens: self.settings.max_tokens,
                temperature: self.settings.temperature,
                stream: self.settings.stream,
                vision: self.profile.vision,
            },
        )
    }

    /// Checks the budget and the context window (estimated with the tokenizer) when the
    /// settings ask for them.
    fn check_budget(&self, bytes: &[u8]) -> Result<(), LlmError> {
        if self.settings.max_input_tokens.is_none() && self.settings.context_window.is_none() {
            return Ok(());
        }
        let counter = TokenCounter::for_model(&self.settings.model);
        let needed =
            u64::try_from(counter.count_text(&String::from_utf8_lossy(bytes))).unwrap_or(u64::MAX);
        if let Some(max) = self.settings.max_input_tokens {
            let total = self.totals().input;
            if total.saturating_add(needed) > max {
                return Err(LlmError::TokenLimitExceeded(format!(
                    "Request may exceed input token limit (Current: {total}, Needed: {needed}, Max: {max})"
                )));
            }
        }
        if let Some(window) = self.settings.context_window
            && needed > window
        {
            return Err(LlmError::ContextLengthExceeded(format!(
                "the request needs about {needed} input tokens but {}'s context window is {window}",
                self.settings.model
            )));
        }
        Ok(())
    }

    /// One HTTP attempt.
    async fn send_once(&self, body: Bytes) -> Result<ChatResponse, LlmError> {
        let key = &self.settings.api_key;
        let mut request = self
            .http
            .post(&self.url)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header("anthropic-version", ANTHROPIC_VERSION)
            .body(body);
        if !key.is_empty() {
            request = request.header("x-api-key", key.expose());
        }
        if let Some(timeout) = LlmSettings::secs(self.settings.request_timeout_secs) {
            request = request.timeout(timeout);
        }
        let response = request
            .send()
            .await
            .map_err(|e| self.transport_error(&e, false))?;
        let status = response.status();
        if !status.is_success() {
            let headers = response.headers().clone();
            let body = read_limited(response, ERROR_BODY_LIMIT).await;
            return Err(classify(
                status.as_u16(),
                |name| header(&headers, name),
                &key.redact(&body),
            ));
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            let bytes = response
                .bytes()
                .await
                .map_err(|e| self.transport_error(&e, false))?;
            return parse_message(&bytes);
        }
        let mut events = response.bytes_stream().eventsource();
        let mut assembler = MessageAssembler::default();
        let idle = LlmSettings::secs(self.settings.read_timeout_secs);
        loop {
            let next = match idle {
                Some(idle) => tokio::time::timeout(idle, events.next())
                    .await
                    .map_err(|_| {
                        LlmError::stream_interrupted(
                            format!("no data for {} s", idle.as_secs_f64()),
                            assembler.received_tokens(),
                        )
                    })?,
                None => events.next().await,
            };
            let Some(event) = next else { break };
            let event = event.map_err(|e| {
                LlmError::stream_interrupted(
                    key.redact(&e.to_string()),
                    assembler.received_tokens(),
                )
            })?;
            let data = event.data.trim();
            if !data.is_empty()
                && let Some(text) = assembler.push(data)?
                && let Some(events) = &self.events
            {
                events.emit(AgentEvent::TextDelta { text });
            }
            if assembler.finished() {
                break;
            }
        }
        if !assembler.finished() {
            return Err(LlmError::stream_interrupted(
                "the stream ended before message_stop",
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

/// The messages URL for a base URL.
fn endpoint(base_url: &str) -> Result<String, LlmError> {
    let base = base_url.trim().trim_end_matches('/');
    let base = if base.is_empty() {
        DEFAULT_ANTHROPIC_BASE_URL
    } else {
        base
    };
    let parsed = url::Url::parse(base)
        .map_err(|e| LlmError::InvalidRequest(format!("invalid base_url {base:?}: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(LlmError::InvalidRequest(format!(
            "base_url must be http or https, got {base:?}"
        )));
    }
    Ok(if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    })
}

#[async_trait]
impl ChatModel for AnthropicClient {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = self.request_body(&request);
        let bytes =
            Bytes::from(serde_json::to_vec(&body).map_err(|e| {
                LlmError::InvalidRequest(format!("cannot serialise the request: {e}"))
            })?);
        self.check_budget(&bytes)?;
        let response = self
            .retry
            .run(self.events.as_ref(), |attempt| {
                debug!(attempt, url = %self.url, "sending a Messages request");
                self.send_once(bytes.clone())
            })
            .await?;
        let usage = response.usage.unwrap_or_default();
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
        Ok(response)
    }

    fn model_name(&self) -> &str {
        &self.settings.model
    }

    fn price(&self) -> Option<crate::Price> {
        self.settings.effective_price()
    }

    fn context_window(&self) -> Option<u64> {
        self.settings.effective_context_window()
    }

    fn supports_images(&self) -> bool {
        self.profile.vision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(
            endpoint("").unwrap(),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:9/").unwrap(),
            "http://127.0.0.1:9/v1/messages"
        );
        assert_eq!(endpoint("https://x/v1/").unwrap(), "https://x/v1/messages");
        assert!(endpoint("ftp://x").is_err());
    }
}
