//! JSON-RPC 2.0 as A2A uses it: requests, responses, and the error codes of the standard and of
//! A2A.

use serde_json::{Value, json};

pub use agent_protocol::jsonrpc::RpcError;

/// The error codes: JSON-RPC's and A2A's own.
pub mod code {
    pub use agent_protocol::jsonrpc::code::*;

    /// No such task.
    pub const TASK_NOT_FOUND: i64 = -32001;
    /// The task cannot be cancelled (it has ended).
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    /// Push notifications are not supported.
    pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i64 = -32003;
    /// The operation is not supported.
    pub const UNSUPPORTED_OPERATION: i64 = -32004;
    /// A content type the agent does not take.
    pub const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
    /// The agent's answer is not valid.
    pub const INVALID_AGENT_RESPONSE: i64 = -32006;
    /// There is no extended agent card.
    pub const EXTENDED_CARD_NOT_CONFIGURED: i64 = -32007;
}

/// A2A's errors, as constructors of [`RpcError`] (bring the trait into scope:
/// `RpcError::task_not_found(id)`).
pub trait A2aErrors {
    /// `-32001` for `id`.
    #[must_use]
    fn task_not_found(id: &str) -> Self;
    /// `-32004`.
    fn unsupported(message: impl Into<String>) -> Self;
}

impl A2aErrors for RpcError {
    fn task_not_found(id: &str) -> Self {
        Self::new(code::TASK_NOT_FOUND, format!("task not found: {id}"))
    }

    fn unsupported(message: impl Into<String>) -> Self {
        Self::new(code::UNSUPPORTED_OPERATION, message)
    }
}

/// A JSON-RPC request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Its id (a string, a number or null); `None` for a notification.
    pub id: Option<Value>,
    /// The method.
    pub method: String,
    /// The parameters (`null` when absent).
    pub params: Value,
}

impl Request {
    /// Reads a request from a body. On error, the id (if one could be read) and the error.
    ///
    /// # Errors
    ///
    /// `-32700` for a body that is not JSON, `-32600` for JSON that is not a request.
    pub fn parse(body: &[u8]) -> Result<Self, (Value, RpcError)> {
        let value: Value = serde_json::from_slice(body).map_err(|error| {
            (
                Value::Null,
                RpcError::new(code::PARSE_ERROR, format!("the body is not JSON: {error}")),
            )
        })?;
        Self::from_value(value)
    }

    /// Reads a request from a JSON value.
    ///
    /// # Errors
    ///
    /// `-32600` for a value that is not a request.
    pub fn from_value(value: Value) -> Result<Self, (Value, RpcError)> {
        let Value::Object(mut object) = value else {
            return Err((
                Value::Null,
                RpcError::new(code::INVALID_REQUEST, "a request is a JSON object"),
            ));
        };
        let id = object.remove("id");
        let reply_id = id.clone().unwrap_or(Value::Null);
        let id_ok = matches!(
            id,
            None | Some(Value::String(_) | Value::Number(_) | Value::Null)
        );
        if !id_ok {
            return Err((
                Value::Null,
                RpcError::new(code::INVALID_REQUEST, "the id must be a string or a number"),
            ));
        }
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err((
                reply_id,
                RpcError::new(code::INVALID_REQUEST, "\"jsonrpc\" must be \"2.0\""),
            ));
        }
        let Some(Value::String(method)) = object.remove("method") else {
            return Err((
                reply_id,
                RpcError::new(code::INVALID_REQUEST, "\"method\" must be a string"),
            ));
        };
        let params = object.remove("params").unwrap_or(Value::Null);
        if !matches!(params, Value::Object(_) | Value::Null) {
            return Err((
                reply_id,
                RpcError::invalid_params("\"params\" must be an object"),
            ));
        }
        Ok(Self { id, method, params })
    }

    /// The id to answer with (`null` for a notification).
    #[must_use]
    pub fn reply_id(&self) -> Value {
        self.id.clone().unwrap_or(Value::Null)
    }

    /// The request as JSON.
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": self.reply_id(),
            "method": self.method,
            "params": self.params,
        })
    }
}

/// A success response.
#[must_use]
pub fn success(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// An error response.
#[must_use]
pub fn failure(id: &Value, error: &RpcError) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": error.to_json() })
}

/// The result of a response, or its error.
///
/// # Errors
///
/// The response's error, or `-32603` when it has neither a result nor an error.
pub fn result_of(response: Value) -> Result<Value, RpcError> {
    let Value::Object(mut object) = response else {
        return Err(RpcError::internal("the response is not a JSON object"));
    };
    if let Some(error) = object.get("error").filter(|e| !e.is_null()) {
        return Err(RpcError::from_json(error));
    }
    object
        .remove("result")
        .ok_or_else(|| RpcError::internal("the response has neither a result nor an error"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked() {
        assert_eq!(Request::parse(b"{").unwrap_err().1.code, code::PARSE_ERROR);
        assert_eq!(
            Request::parse(b"[]").unwrap_err().1.code,
            code::INVALID_REQUEST
        );
        let (id, error) = Request::parse(br#"{"jsonrpc":"2.0","id":7}"#).unwrap_err();
        assert_eq!((id, error.code), (json!(7), code::INVALID_REQUEST));
        let (_, error) =
            Request::parse(br#"{"jsonrpc":"2.0","id":"a","method":"m","params":3}"#).unwrap_err();
        assert_eq!(error.code, code::INVALID_PARAMS);
        let request =
            Request::parse(br#"{"jsonrpc":"2.0","id":"a","method":"tasks/get","params":{}}"#)
                .unwrap();
        assert_eq!(request.method, "tasks/get");
        assert_eq!(request.reply_id(), json!("a"));
    }

    #[test]
    fn results_and_errors_are_told_apart() {
        assert_eq!(
            result_of(success(&json!(1), json!({"a": 1}))).unwrap(),
            json!({"a": 1})
        );
        let error = result_of(failure(&json!(1), &RpcError::task_not_found("t"))).unwrap_err();
        assert_eq!(error.code, code::TASK_NOT_FOUND);
        assert!(result_of(json!({"jsonrpc": "2.0", "id": 1})).is_err());
    }
}
