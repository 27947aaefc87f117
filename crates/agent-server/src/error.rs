//! The API's errors: each maps to a status code and a JSON body `{"error": "..."}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered to an API client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed or asks for something impossible (400).
    #[error("{0}")]
    BadRequest(String),
    /// No token, or the wrong one (401).
    #[error("{0}")]
    Unauthorized(String),
    /// A foreign host or origin (403).
    #[error("{0}")]
    Forbidden(String),
    /// No such session, run or file (404).
    #[error("{0}")]
    NotFound(String),
    /// The session is busy or in a state that forbids the request (409).
    #[error("{0}")]
    Conflict(String),
    /// Something failed on the server's side (500); the detail is logged, not sent.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The status code of the error.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// An internal error: `detail` goes to the log, the client gets a generic message.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(%detail, "request failed");
        Self::Internal("the server failed to answer; see its log".into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status(), Json(json!({ "error": self.to_string() }))).into_response()
    }
}
