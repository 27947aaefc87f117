//! `AnthropicClient`: the Messages API over HTTP, streamed or not, with the crate's retry
//! policy and error classifier.

use agent_core::{AgentEvent, EventBus};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use tracing::debug;

use super::stream::MessageAssembler;
use super::wire::{ANTHROPIC_VERSION, BodyOptions, body, parse_message};
use crate::frame::{ClientFrame, TokenTotals};
use crate::http::{is_event_stream, status_error};
use crate::settings::LlmSettings;
use crate::{ChatModel, ChatRequest, ChatResponse, LlmError};

/// The endpoint when the settings' `base_url` is empty.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The client for one Claude model through Anthropic's Messages API (`api_type =
/// "anthropic"`). Token totals are per client.
pub struct AnthropicClient {
    frame: ClientFrame,
    url: String,
    /// `url` parsed once.
    target: reqwest::Url,
    http: reqwest::Client,
}

impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicClient")
            .field("model", &self.frame.model_name())
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
        // Every Claude model since Claude 3 reads images.
        let frame = ClientFrame::new(settings, |_, _| true)?;
        let url = endpoint(&frame.settings().base_url)?;
        let target = crate::endpoint::parsed(&url)?;
        let http = frame.http_client()?;
        Ok(Self {
            frame,
            url,
            target,
            http,
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

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &LlmSettings {
        self.frame.settings()
    }

    /// The messages URL requests go to.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.url
    }

    /// Cumulative token counts (cached input included).
    #[must_use]
    pub fn totals(&self) -> TokenTotals {
        self.frame.totals()
    }

    /// The JSON body this client sends for `request`; the key is not part of it.
    #[must_use]
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let settings = self.frame.settings();
        body(
            request,
            BodyOptions {
                model: &settings.model,
                max_tokens: settings.max_tokens,
                temperature: settings.temperature,
                stream: settings.stream,
                vision: self.frame.supports_images(),
            },
        )
    }

    /// One HTTP attempt.
    async fn send_once(&self, body: Bytes) -> Result<ChatResponse, LlmError> {
        let settings = self.frame.settings();
        let key = &settings.api_key;
        let mut request = self
            .http
            .post(self.target.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header("anthropic-version", ANTHROPIC_VERSION)
            .body(body);
        if !key.is_empty() {
            request = request.header("x-api-key", key.expose());
        }
        if let Some(timeout) = crate::settings::secs(settings.request_timeout_secs) {
            request = request.timeout(timeout);
        }
        let response = self
            .frame
            .first_byte(settings.stream, request.send())
            .await?
            .map_err(|e| self.frame.transport_error(&e, false))?;
        if !response.status().is_success() {
            return Err(status_error(response, key).await);
        }
        let limit = crate::settings::reply_limit(settings);
        if !is_event_stream(&response) {
            let bytes = crate::capped::read_capped(response, limit)
                .await
                .map_err(|e| self.frame.transport_error(&e, false))?
                .ok_or_else(|| {
                    LlmError::MalformedResponse(format!(
                        "the reply is larger than {limit} bytes, more than max_tokens = {} \
                         allows; it was not read",
                        settings.max_tokens
                    ))
                })?;
            return parse_message(&bytes);
        }
        let (body, cut) = crate::capped::capped(response.bytes_stream(), limit);
        let mut events = std::pin::pin!(crate::sse::data_events(body));
        let mut assembler = MessageAssembler::default();
        let idle = crate::settings::secs(settings.read_timeout_secs);
        loop {
            let next = match idle {
                // A silent stream is a hang, not a cut: it counts against the attempts given
                // to timeouts, as with the other clients.
                Some(idle) => tokio::time::timeout(idle, events.next())
                    .await
                    .map_err(|_| LlmError::Timeout(idle))?,
                None => events.next().await,
            };
            let Some(event) = next else { break };
            let event = event.map_err(|e| {
                LlmError::stream_interrupted(
                    key.redact(&e.to_string()),
                    assembler.received_tokens(),
                )
            })?;
            let data = event.trim();
            if !data.is_empty()
                && let Some(text) = assembler.push(data)?
                && let Some(events) = self.frame.events()
            {
                events.emit(AgentEvent::TextDelta { text });
            }
            if assembler.finished() {
                break;
            }
        }
        if cut.get() {
            tracing::warn!(
                limit,
                max_tokens = settings.max_tokens,
                "the streamed reply was cut: it was longer than max_tokens allows"
            );
            return Ok(assembler.cut(limit));
        }
        if !assembler.finished() {
            return Err(LlmError::stream_interrupted(
                "the stream ended before message_stop",
                assembler.received_tokens(),
            ));
        }
        Ok(assembler.finish())
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
        self.frame.check_body_budget(&bytes)?;
        let response = self
            .frame
            .retry(|attempt| {
                debug!(attempt, url = %self.url, "sending a Messages request");
                self.send_once(bytes.clone())
            })
            .await?;
        self.frame.record_usage(&response.usage.unwrap_or_default());
        Ok(response)
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
