//! JSON-RPC 2.0's error object and its standard codes, as A2A (over HTTP) and ACP (over
//! standard input and output) answer with them; each protocol adds its own codes beside these.

use serde_json::{Value, json};

/// The standard error codes.
pub mod code {
    /// The message is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// JSON, but not a JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Parameters that do not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed.
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// A JSON-RPC error: a code, a message, maybe data.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (JSON-RPC error {code})")]
pub struct RpcError {
    /// The code ([`code`], or one of the protocol's own).
    pub code: i64,
    /// What went wrong, in words.
    pub message: String,
    /// More about it, for the client.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error of `code` saying `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32602`: parameters that do not fit.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }

    /// `-32601` for `method`.
    #[must_use]
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            code::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }

    /// `-32603`: the server failed.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(code::INTERNAL_ERROR, message)
    }

    /// The same error with `data`.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The error object: `code`, `message` and, when there is some, `data`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }

    /// Reads an error object (a missing code is `-32603`; a missing message, the object).
    #[must_use]
    pub fn from_json(error: &Value) -> Self {
        Self {
            code: error["code"].as_i64().unwrap_or(code::INTERNAL_ERROR),
            message: error["message"]
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned),
            data: error.get("data").cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_object_is_written_and_read_back() {
        let error = RpcError::invalid_params("no cwd").with_data(json!({"field": "cwd"}));
        let written = error.to_json();
        assert_eq!(
            written,
            json!({"code": -32602, "message": "no cwd", "data": {"field": "cwd"}})
        );
        assert_eq!(RpcError::from_json(&written), error);
        assert_eq!(
            RpcError::method_not_found("x/y").to_json(),
            json!({"code": -32601, "message": "method not found: x/y"})
        );
        let odd = RpcError::from_json(&json!({"detail": 1}));
        assert_eq!(
            (odd.code, odd.message.as_str()),
            (-32603, r#"{"detail":1}"#)
        );
        assert_eq!(
            RpcError::internal("boom").to_string(),
            "boom (JSON-RPC error -32603)"
        );
    }
}
