//! The LLM error taxonomy and the one classifier from an HTTP error response to it.

use std::time::Duration;

use serde_json::Value;
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
    /// The account has no quota or credit left (429 `insufficient_quota`, 402).
    #[error("quota exhausted: {0}")]
    QuotaExhausted(String),
    /// The request is longer than the model's context window.
    #[error("context length exceeded: {0}")]
    ContextLengthExceeded(String),
    /// Our own input-token budget would be exceeded by this request.
    #[error("{0}")]
    TokenLimitExceeded(String),
    /// The provider rejected the request as malformed (400, 404, 422, ...), or the client could
    /// not build it.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The provider failed (5xx, 408).
    #[error("server error {status}: {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// The provider's `Retry-After`, when given.
        retry_after: Option<Duration>,
    },
    /// The connection failed.
    #[error("network error: {0}")]
    Network(String),
    /// The server could not be reached at all (connection refused, no route, name not
    /// resolved): retried fewer times than a failure of a server that answered.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// No answer in time.
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// A streamed response broke off.
    #[error("stream interrupted{}: {message}", if *received_tokens { " after the first token" } else { "" })]
    StreamInterrupted {
        /// What happened.
        message: String,
        /// Whether any content or tool-call token had arrived before the cut.
        received_tokens: bool,
    },
    /// The response could not be understood.
    #[error("malformed response: {0}")]
    MalformedResponse(String),
}

impl LlmError {
    /// True for failures another attempt may cure: rate limits, 5xx and 408, network errors,
    /// timeouts, and streams cut before their first token. Authentication, quota, bad requests,
    /// context length and our own token budget are never retried.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. }
            | Self::Server { .. }
            | Self::Network(_)
            | Self::Timeout(_) => true,
            // A model request has no side effect: a stream cut even after its first token is
            // asked again (the partial reply is discarded).
            Self::StreamInterrupted { .. } | Self::Connect(_) => true,
            _ => false,
        }
    }

    /// The delay the provider asked for, if any.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after } | Self::Server { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A server error without `Retry-After`.
    pub fn server(status: u16, message: impl Into<String>) -> Self {
        Self::Server {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// A stream cut.
    pub fn stream_interrupted(message: impl Into<String>, received_tokens: bool) -> Self {
        Self::StreamInterrupted {
            message: message.into(),
            received_tokens,
        }
    }
}

/// Parses a `Retry-After` header value given in seconds (integer or decimal). HTTP dates are not
/// honoured (providers send seconds); `retry-after-ms` is read by [`classify`].
#[must_use]
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(3600.0)))
}

/// Classifies an HTTP error response. `header` looks up a response header by lower-case name;
/// `body` is the raw response body (an OpenAI-shaped `{"error": {...}}` where the provider
/// follows the format, anything otherwise).
#[must_use]
pub fn classify(status: u16, header: impl Fn(&str) -> Option<String>, body: &str) -> LlmError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().map(|v| v.get("error").unwrap_or(v));
    let field = |name: &str| {
        error
            .and_then(|e| e.get(name))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let code = field("code");
    let kind = field("type");
    let mut message = field("message");
    if message.is_empty() {
        message = match error.and_then(Value::as_str) {
            Some(text) => text.to_owned(),
            None => body.chars().take(500).collect(),
        };
    }
    if message.is_empty() {
        message = format!("HTTP {status}");
    }
    let lower = message.to_lowercase();
    let mentions_context = code == "context_length_exceeded"
        || lower.contains("maximum context length")
        || lower.contains("context_length_exceeded")
        || lower.contains("context window")
        || lower.contains("prompt is too long");
    let quota = code == "insufficient_quota" || kind == "insufficient_quota";
    let retry_after = || {
        header("retry-after-ms")
            .and_then(|ms| ms.trim().parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| Duration::from_secs_f64((ms / 1000.0).min(3600.0)))
            .or_else(|| header("retry-after").as_deref().and_then(parse_retry_after))
    };

    match status {
        401 | 403 => LlmError::Authentication(message),
        402 => LlmError::QuotaExhausted(message),
        429 if quota => LlmError::QuotaExhausted(message),
        429 => LlmError::RateLimited {
            retry_after: retry_after(),
        },
        408 | 500..=599 => LlmError::Server {
            status,
            message,
            retry_after: retry_after(),
        },
        400 | 413 if mentions_context => LlmError::ContextLengthExceeded(message),
        _ => LlmError::InvalidRequest(format!("HTTP {status}: {message}")),
    }
}

/// The full chain of an error's sources, on one line.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transient_errors_are_retryable() {
        let retryable = [
            LlmError::RateLimited { retry_after: None },
            LlmError::server(503, "busy"),
            LlmError::Network("reset".into()),
            LlmError::Timeout(Duration::from_secs(1)),
            LlmError::stream_interrupted("eof", false),
            LlmError::stream_interrupted("eof", true),
            LlmError::Connect("refused".into()),
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
    fn messages_name_the_failure() {
        let e = LlmError::RateLimited {
            retry_after: Some(Duration::from_millis(1500)),
        };
        assert_eq!(e.to_string(), "rate limited (retry after 1.5 s)");
        assert_eq!(
            LlmError::RateLimited { retry_after: None }.to_string(),
            "rate limited"
        );
        assert_eq!(
            LlmError::stream_interrupted("connection closed", true).to_string(),
            "stream interrupted after the first token: connection closed"
        );
    }

    fn openai_body(message: &str, kind: &str, code: &str) -> String {
        serde_json::json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
    }

    #[test]
    #[allow(clippy::type_complexity)]
    fn classifier_table() {
        let none = |_: &str| None::<String>;
        let rows: Vec<(u16, Box<dyn Fn(&str) -> Option<String>>, String, LlmError)> = vec![
            (
                401,
                Box::new(none),
                openai_body(
                    "Incorrect API key provided",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
                LlmError::Authentication("Incorrect API key provided".into()),
            ),
            (
                403,
                Box::new(none),
                "forbidden".into(),
                LlmError::Authentication("forbidden".into()),
            ),
            (
                429,
                Box::new(|h: &str| (h == "retry-after").then(|| "7".to_owned())),
                openai_body("Rate limit reached", "requests", "rate_limit_exceeded"),
                LlmError::RateLimited {
                    retry_after: Some(Duration::from_secs(7)),
                },
            ),
            (
                429,
                Box::new(|h: &str| (h == "retry-after-ms").then(|| "250".to_owned())),
                openai_body("slow down", "requests", "rate_limit_exceeded"),
                LlmError::RateLimited {
                    retry_after: Some(Duration::from_millis(250)),
                },
            ),
            (
                429,
                Box::new(none),
                openai_body(
                    "You exceeded your current quota",
                    "insufficient_quota",
                    "insufficient_quota",
                ),
                LlmError::QuotaExhausted("You exceeded your current quota".into()),
            ),
            (
                402,
                Box::new(none),
                openai_body("Insufficient credits", "", ""),
                LlmError::QuotaExhausted("Insufficient credits".into()),
            ),
            (
                400,
                Box::new(none),
                openai_body(
                    "This model's maximum context length is 8192 tokens.",
                    "invalid_request_error",
                    "context_length_exceeded",
                ),
                LlmError::ContextLengthExceeded(
                    "This model's maximum context length is 8192 tokens.".into(),
                ),
            ),
            (
                400,
                Box::new(none),
                openai_body(
                    "prompt is too long: 210000 tokens > 200000 maximum",
                    "invalid_request_error",
                    "",
                ),
                LlmError::ContextLengthExceeded(
                    "prompt is too long: 210000 tokens > 200000 maximum".into(),
                ),
            ),
            (
                400,
                Box::new(none),
                openai_body("Invalid 'messages[2]'", "invalid_request_error", ""),
                LlmError::InvalidRequest("HTTP 400: Invalid 'messages[2]'".into()),
            ),
            (
                404,
                Box::new(none),
                openai_body(
                    "The model `gpt-9` does not exist",
                    "invalid_request_error",
                    "model_not_found",
                ),
                LlmError::InvalidRequest("HTTP 404: The model `gpt-9` does not exist".into()),
            ),
            (
                422,
                Box::new(none),
                r#"{"detail":"bad"}"#.into(),
                LlmError::InvalidRequest(r#"HTTP 422: {"detail":"bad"}"#.into()),
            ),
            (
                408,
                Box::new(none),
                "".into(),
                LlmError::server(408, "HTTP 408"),
            ),
            (
                500,
                Box::new(none),
                openai_body("The server had an error", "server_error", ""),
                LlmError::server(500, "The server had an error"),
            ),
            (
                503,
                Box::new(|h: &str| (h == "retry-after").then(|| "30".to_owned())),
                "upstream unavailable".into(),
                LlmError::Server {
                    status: 503,
                    message: "upstream unavailable".into(),
                    retry_after: Some(Duration::from_secs(30)),
                },
            ),
            (
                529,
                Box::new(none),
                r#"{"error":"overloaded"}"#.into(),
                LlmError::server(529, "overloaded"),
            ),
        ];
        for (status, header, body, expected) in rows {
            assert_eq!(
                classify(status, header, &body),
                expected,
                "status {status}, body {body}"
            );
        }
    }

    #[test]
    fn retry_after_accepts_seconds_only() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
