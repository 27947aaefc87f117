//! `ClientFrame`: what the clients of every provider share, written once. A frame holds the
//! settings, the resolved model profile, the retry policy, the event bus, the token counter and
//! the cumulative token totals, and does the bookkeeping around a call: the input-budget and
//! context-window check before it ([`ClientFrame::check_budget`]), the retries
//! ([`ClientFrame::retry`]), the totals and the `Token usage` log line after it
//! ([`ClientFrame::record_usage`]), and the answers of [`ChatModel`]'s accessors. HTTP
//! providers also get their `reqwest` client ([`ClientFrame::http_client`]) and the reading of
//! its errors ([`ClientFrame::transport_error`]) from it.
//!
//! A provider's client is a frame plus what is the provider's own: its endpoint, the wire format
//! (the body for a [`ChatRequest`](crate::ChatRequest), the reply back into a
//! [`ChatResponse`](crate::ChatResponse)) and its transport and streaming. Its `ChatModel`
//! implementation sends through the frame and hands the four accessors to it.
//! `docs/guides/writing-a-provider.md` walks through one.
//!
//! [`ChatModel`]: crate::ChatModel

use std::future::Future;
use std::sync::{Mutex, OnceLock, PoisonError};

use agent_core::EventBus;
use tracing::{debug, info};

use crate::error::error_chain;
use crate::models::{ModelProfile, model_profile};
use crate::retry::RetryPolicy;
use crate::settings::LlmSettings;
use crate::tokens::TokenCounter;
use crate::{LlmError, Price, TokenUsage};

/// Cumulative token counts of one client (input and completion, since it was built).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenTotals {
    /// Input tokens.
    pub input: u64,
    /// Completion tokens.
    pub completion: u64,
}

/// The part every provider's client shares: settings, model profile, retry policy, event bus,
/// token counter and token totals (per client, never global).
#[derive(Debug)]
pub(crate) struct ClientFrame {
    settings: LlmSettings,
    profile: ModelProfile,
    retry: RetryPolicy,
    events: Option<EventBus>,
    counter: OnceLock<TokenCounter>,
    totals: Mutex<TokenTotals>,
}

impl ClientFrame {
    /// The frame for `settings`: the model name checked, the model table's profile with the
    /// settings' overrides (`supports_images`, `reasoning`, `context_window`) and the retry
    /// policy the settings configure. `images` says whether the provider's models read images
    /// when the settings do not (`supports_images` unset); it gets the model name and the
    /// table's profile.
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidRequest`] for an empty model name.
    pub(crate) fn new(
        settings: LlmSettings,
        images: impl FnOnce(&str, &ModelProfile) -> bool,
    ) -> Result<Self, LlmError> {
        if settings.model.trim().is_empty() {
            return Err(LlmError::InvalidRequest("the model name is empty".into()));
        }
        let mut profile = model_profile(&settings.model);
        profile.vision = match settings.supports_images {
            Some(vision) => vision,
            None => images(&settings.model, &profile),
        };
        if let Some(reasoning) = settings.reasoning {
            profile.reasoning = reasoning;
        }
        if settings.context_window.is_some() {
            profile.context_window = settings.context_window;
        }
        let retry = RetryPolicy::from_settings(&settings);
        Ok(Self {
            settings,
            profile,
            retry,
            events: None,
            counter: OnceLock::new(),
            totals: Mutex::new(TokenTotals::default()),
        })
    }

    /// Reports retries and streamed text on `events` from now on.
    pub(crate) fn set_events(&mut self, events: EventBus) {
        self.events = Some(events);
    }

    /// The settings.
    pub(crate) fn settings(&self) -> &LlmSettings {
        &self.settings
    }

    /// The resolved model profile (the table's values with the settings' overrides).
    pub(crate) fn profile(&self) -> ModelProfile {
        self.profile
    }

    /// The event bus given to the client, if any (for [`agent_core::AgentEvent::TextDelta`]).
    pub(crate) fn events(&self) -> Option<&EventBus> {
        self.events.as_ref()
    }

    /// The token counter (the tokenizer tables load on first use).
    pub(crate) fn counter(&self) -> TokenCounter {
        *self
            .counter
            .get_or_init(|| TokenCounter::for_model(&self.settings.model))
    }

    /// Cumulative token counts.
    pub(crate) fn totals(&self) -> TokenTotals {
        *self.totals.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The process's shared HTTP client for the settings' connect timeout (one TLS set-up, one
    /// connection pool per endpoint). No read timeout: it would also bound the wait for the
    /// response headers, cutting off models that think before answering; streams get an idle
    /// timeout instead, and the total request timeout is set per request.
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidRequest`] when the client cannot be built.
    pub(crate) fn http_client(&self) -> Result<reqwest::Client, LlmError> {
        crate::http::client_with_connect_timeout(crate::settings::secs(
            self.settings.connect_timeout_secs,
        ))
        .map_err(|e| LlmError::InvalidRequest(format!("cannot build the HTTP client: {e}")))
    }

    /// Waits for `sending` (a request's send: it ends when the response begins) at most
    /// `first_byte_timeout_secs` when the request is `streamed`: a server that accepted the
    /// connection and never answers fails the attempt as a timeout in that time, instead of
    /// holding it for the whole `request_timeout_secs`.
    ///
    /// # Errors
    ///
    /// [`LlmError::Timeout`] with the first-byte limit.
    pub(crate) async fn first_byte<T>(
        &self,
        streamed: bool,
        sending: impl Future<Output = T>,
    ) -> Result<T, LlmError> {
        let limit = crate::settings::secs(self.settings.first_byte_timeout_secs);
        match limit.filter(|_| streamed) {
            Some(limit) => tokio::time::timeout(limit, sending).await.map_err(|_| {
                debug!(
                    first_byte_secs = limit.as_secs_f64(),
                    "the server did not begin its response"
                );
                LlmError::Timeout(limit)
            }),
            None => Ok(sending.await),
        }
    }

    /// The error a failed HTTP attempt stands for, the key redacted from its text: the request
    /// timeout, a body cut off (`received_tokens`: part of the reply had arrived), a request
    /// that could not be built, a server that could not be reached, or another network error.
    pub(crate) fn transport_error(
        &self,
        error: &reqwest::Error,
        received_tokens: bool,
    ) -> LlmError {
        let text = self.settings.api_key.redact(&error_chain(error));
        if error.is_timeout() {
            LlmError::Timeout(
                crate::settings::secs(self.settings.request_timeout_secs).unwrap_or_default(),
            )
        } else if error.is_body() || error.is_decode() {
            LlmError::stream_interrupted(text, received_tokens)
        } else if error.is_builder() {
            LlmError::InvalidRequest(text)
        } else if error.is_connect() {
            LlmError::Connect(text)
        } else {
            LlmError::Network(text)
        }
    }

    /// Runs `attempt` (given the attempt's number, from 1) under the settings' retry policy,
    /// reporting each retry on the event bus.
    ///
    /// # Errors
    ///
    /// As [`RetryPolicy::run`]: the last error ([`LlmError::Timeout`] when the call's time
    /// limit passed mid-attempt).
    pub(crate) async fn retry<T, F, Fut>(&self, attempt: F) -> Result<T, LlmError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, LlmError>>,
    {
        self.retry.run(self.events.as_ref(), attempt).await
    }

    /// Checks a request against the settings' `max_input_tokens` (with the input counted so
    /// far) and `context_window`. `count` estimates the request's input tokens; it is called
    /// only when one of the two is set (counting loads the tokenizer tables), and its count is
    /// returned.
    ///
    /// # Errors
    ///
    /// [`LlmError::TokenLimitExceeded`] when the request would take the input past
    /// `max_input_tokens`; [`LlmError::ContextLengthExceeded`] when it does not fit the
    /// configured context window.
    pub(crate) fn check_budget(
        &self,
        count: impl FnOnce() -> u64,
    ) -> Result<Option<u64>, LlmError> {
        let settings = &self.settings;
        if settings.max_input_tokens.is_none() && settings.context_window.is_none() {
            return Ok(None);
        }
        let needed = count();
        if let Some(max) = settings.max_input_tokens {
            let total = self.totals().input;
            if total.saturating_add(needed) > max {
                return Err(LlmError::TokenLimitExceeded(format!(
                    "Request may exceed input token limit (Current: {total}, Needed: {needed}, Max: {max})"
                )));
            }
        }
        if let Some(window) = settings.context_window
            && needed > window
        {
            return Err(LlmError::ContextLengthExceeded(format!(
                "the request needs about {needed} input tokens but {}'s context window is {window}",
                settings.model
            )));
        }
        Ok(Some(needed))
    }

    /// [`ClientFrame::check_budget`] for a request whose wire body is `body`: its input
    /// estimated with the tokenizer over the body's text.
    ///
    /// # Errors
    ///
    /// As [`ClientFrame::check_budget`].
    pub(crate) fn check_body_budget(&self, body: &[u8]) -> Result<Option<u64>, LlmError> {
        self.check_budget(|| {
            let text = String::from_utf8_lossy(body);
            u64::try_from(self.counter().count_text(&text)).unwrap_or(u64::MAX)
        })
    }

    /// Adds a call's `usage` to the totals and logs the `Token usage` line; returns the new
    /// totals.
    pub(crate) fn record_usage(&self, usage: &TokenUsage) -> TokenTotals {
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
        totals
    }

    /// [`ChatModel::model_name`](crate::ChatModel::model_name): the configured model.
    pub(crate) fn model_name(&self) -> &str {
        &self.settings.model
    }

    /// `gen_ai.provider.name` of the settings' `api_type`.
    pub(crate) fn provider_name(&self) -> &'static str {
        crate::spans::provider_name(self.settings.api_type)
    }

    /// [`ChatModel::price`](crate::ChatModel::price): the settings' price, else free for
    /// Ollama, else the shipped table's.
    pub(crate) fn price(&self) -> Option<Price> {
        crate::settings::effective_price(&self.settings)
    }

    /// [`ChatModel::context_window`](crate::ChatModel::context_window): the settings' window,
    /// else the model table's.
    pub(crate) fn context_window(&self) -> Option<u64> {
        crate::settings::effective_context_window(&self.settings)
    }

    /// [`ChatModel::supports_images`](crate::ChatModel::supports_images): the profile's.
    pub(crate) fn supports_images(&self) -> bool {
        self.profile.vision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(adjust: impl FnOnce(&mut LlmSettings)) -> ClientFrame {
        let mut settings = LlmSettings::new("gpt-4o", "http://127.0.0.1:9/v1");
        adjust(&mut settings);
        ClientFrame::new(settings, |_, table| table.vision).unwrap()
    }

    #[test]
    fn the_provider_default_for_images_yields_to_the_settings() {
        let settings = LlmSettings::new("some-local-model", "http://127.0.0.1:9");
        let always = ClientFrame::new(settings.clone(), |_, _| true).unwrap();
        assert!(always.supports_images());
        let table = ClientFrame::new(settings.clone(), |_, table| table.vision).unwrap();
        assert!(!table.supports_images());
        let mut off = settings;
        off.supports_images = Some(false);
        assert!(
            !ClientFrame::new(off, |_, _| true)
                .unwrap()
                .supports_images()
        );
        assert!(ClientFrame::new(LlmSettings::new(" ", "http://x"), |_, _| true).is_err());
    }

    #[test]
    fn the_budget_is_counted_only_when_asked_for_and_usage_adds_up() {
        let free = frame(|_| {});
        assert_eq!(
            free.check_budget(|| unreachable!("no budget, no count")),
            Ok(None)
        );
        let capped = frame(|s| s.max_input_tokens = Some(100));
        assert_eq!(capped.check_budget(|| 60), Ok(Some(60)));
        let totals = capped.record_usage(&TokenUsage {
            prompt_tokens: 60,
            completion_tokens: 5,
            ..TokenUsage::default()
        });
        assert_eq!(
            totals,
            TokenTotals {
                input: 60,
                completion: 5
            }
        );
        assert_eq!(capped.totals(), totals);
        assert!(matches!(
            capped.check_budget(|| 41),
            Err(LlmError::TokenLimitExceeded(_))
        ));
        let window = frame(|s| s.context_window = Some(10));
        assert!(matches!(
            window.check_budget(|| 11),
            Err(LlmError::ContextLengthExceeded(_))
        ));
        assert_eq!(window.context_window(), Some(10));
        assert_eq!(window.model_name(), "gpt-4o");
    }
}
