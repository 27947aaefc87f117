//! The LLM error taxonomy.

use std::time::Duration;

use thiserror::Error;

/// Why a model call failed. [`LlmError::is_retryable`] separates transient failures (worth
/// another attempt) from permanent ones (retrying only wastes time and money).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The API key was missing or rejected (401/403).
    #[error("authentication failed: {0}")]
    Authentication(String),
    /// The provider asked us to slow down (429).
    #[error("rate limited{}", retry_after.map(|d| format!(" (retry after {} s)", d.as_secs_f64())).unwrap_or_default())]
    RateLimited {
        /// The provider's `Retry-After`, when given.
        retry_after: Option<Duration>,
    },
    /// The account has no quota or credit left.
    #[error("quota exhausted: {0}")]
    QuotaExhausted(String),
    /// The request is longer than the model's context window.
    #[error("context length exceeded: {0}")]
    ContextLengthExceeded(String),
    /// Our own input-token budget would be exceeded by this request.
    #[error("{0}")]
    TokenLimitExceeded(String),
    /// The provider rejected the request as malformed (400, 404, 422).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The provider failed (5xx).
    #[error("server error {status}: {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The connection failed.
    #[error("network error: {0}")]
    Network(String),
    /// No answer in time.
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// A streamed response broke off.
    #[error("stream interrupted: {0}")]
    StreamInterrupted(String),
    /// The response could not be understood.
    #[error("malformed response: {0}")]
    MalformedResponse(String),
}

impl LlmError {
    /// True for failures another attempt may cure: rate limits, 5xx, network errors, timeouts
    /// and interrupted streams.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. }
                | Self::Server { .. }
                | Self::Network(_)
                | Self::Timeout(_)
                | Self::StreamInterrupted(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transient_errors_are_retryable() {
        let retryable = [
            LlmError::RateLimited { retry_after: None },
            LlmError::Server {
                status: 503,
                message: "busy".into(),
            },
            LlmError::Network("reset".into()),
            LlmError::Timeout(Duration::from_secs(1)),
            LlmError::StreamInterrupted("eof".into()),
        ];
        let permanent = [
            LlmError::Authentication("bad key".into()),
            LlmError::QuotaExhausted("none".into()),
            LlmError::ContextLengthExceeded("too long".into()),
            LlmError::TokenLimitExceeded("budget".into()),
            LlmError::InvalidRequest("400".into()),
            LlmError::MalformedResponse("?".into()),
        ];
        assert!(retryable.iter().all(LlmError::is_retryable));
        assert!(!permanent.iter().any(LlmError::is_retryable));
    }

    #[test]
    fn rate_limit_message_names_the_delay() {
        let e = LlmError::RateLimited {
            retry_after: Some(Duration::from_millis(1500)),
        };
        assert_eq!(e.to_string(), "rate limited (retry after 1.5 s)");
        assert_eq!(
            LlmError::RateLimited { retry_after: None }.to_string(),
            "rate limited"
        );
    }
}
