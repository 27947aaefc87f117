//! JSON-RPC 2.0 as ACP frames it: one JSON message per line. Reading a line into what it is,
//! and the outbox every answer and notification goes through, in order, to one writer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

pub use agent_protocol::jsonrpc::RpcError;

/// JSON-RPC's and ACP's error codes.
pub mod code {
    pub use agent_protocol::jsonrpc::code::*;

    /// ACP: what the request names does not exist (a session).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// The longest message line taken (a longer one is refused, and skipped to its end).
pub const MAX_LINE: u64 = 64 * 1024 * 1024;

/// One line of the editor's.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A line of text (without its newline).
    Text(String),
    /// A line that cannot be a message (not UTF-8, longer than [`MAX_LINE`]): answered with
    /// this error, and the connection goes on.
    Bad(RpcError),
    /// The editor closed its end.
    End,
}

/// Reads the next line, at most [`MAX_LINE`] bytes of it held at once.
///
/// # Errors
///
/// Reading failed.
pub async fn read_line(reader: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<Line> {
    let mut bytes = Vec::new();
    let read = (&mut *reader)
        .take(MAX_LINE)
        .read_until(b'\n', &mut bytes)
        .await?;
    if read == 0 {
        return Ok(Line::End);
    }
    if bytes.last() != Some(&b'\n') && read as u64 == MAX_LINE {
        // Skip the rest of the line without holding it.
        loop {
            let buffer = reader.fill_buf().await?;
            if buffer.is_empty() {
                break;
            }
            if let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                reader.consume(end + 1);
                break;
            }
            let all = buffer.len();
            reader.consume(all);
        }
        return Ok(Line::Bad(RpcError::new(
            code::INVALID_REQUEST,
            format!("a message longer than {MAX_LINE} bytes"),
        )));
    }
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Line::Text(text)),
        Err(_) => Ok(Line::Bad(RpcError::new(code::PARSE_ERROR, "not UTF-8"))),
    }
}

/// What one line is.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// A request, to answer.
    Request {
        /// Its id.
        id: Value,
        /// The method.
        method: String,
        /// Its parameters (`null` when it has none).
        params: Value,
    },
    /// A notification: no answer.
    Notification {
        /// The method.
        method: String,
        /// Its parameters.
        params: Value,
    },
    /// An answer to a request of ours.
    Response {
        /// The id of our request.
        id: Value,
        /// Its result, or the error the client answered.
        result: Result<Value, RpcError>,
    },
    /// Not a message: answered with this error (and the id, when one could be read).
    Invalid(Value, RpcError),
}

/// Reads one line.
#[must_use]
pub fn parse(line: &str) -> Incoming {
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return Incoming::Invalid(Value::Null, RpcError::new(code::PARSE_ERROR, "not JSON"));
    };
    let id = value.get("id").cloned();
    let invalid = |message: &str| {
        Incoming::Invalid(
            id.clone().unwrap_or(Value::Null),
            RpcError::new(code::INVALID_REQUEST, message),
        )
    };
    if !value.is_object() {
        return invalid("a message is a JSON object");
    }
    if value["jsonrpc"] != "2.0" {
        return invalid("\"jsonrpc\" must be \"2.0\"");
    }
    let params = value.get("params").cloned().unwrap_or(Value::Null);
    match (value["method"].as_str(), id.clone()) {
        // JSON-RPC 2.0 allows a null id (it discourages it): answered with the null id.
        (Some(method), Some(id)) if id.is_string() || id.is_number() || id.is_null() => {
            Incoming::Request {
                id,
                method: method.to_owned(),
                params,
            }
        }
        (Some(_), Some(_)) => invalid("an id is a string, a number or null"),
        (Some(method), None) => Incoming::Notification {
            method: method.to_owned(),
            params,
        },
        (None, Some(id)) if value.get("result").is_some() => Incoming::Response {
            id,
            result: Ok(value["result"].clone()),
        },
        (None, Some(id)) if value.get("error").is_some() => Incoming::Response {
            id,
            result: Err(RpcError {
                code: value["error"]["code"]
                    .as_i64()
                    .unwrap_or(code::INTERNAL_ERROR),
                message: value["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                data: value["error"].get("data").cloned(),
            }),
        },
        (None, _) => invalid("no method"),
    }
}

/// Our requests waiting for the client's answer, by id.
type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>>;

/// The client's answer to one request of ours ([`Outbox::request`]): a future of it, which
/// takes the request off the waiting list when dropped unanswered.
#[derive(Debug)]
pub struct Answer {
    id: Option<i64>,
    pending: Pending,
    answered: oneshot::Receiver<Result<Value, RpcError>>,
}

impl std::future::Future for Answer {
    type Output = Result<Result<Value, RpcError>, oneshot::error::RecvError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.answered).poll(cx)
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
        }
    }
}

/// Where answers, notifications and our own requests go: one writer, in the order they were
/// sent. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Outbox {
    sender: mpsc::UnboundedSender<Value>,
    pending: Pending,
    next_id: Arc<AtomicI64>,
    /// The editor has gone: no request of ours can be answered any more.
    closed: Arc<std::sync::atomic::AtomicBool>,
}

impl Outbox {
    /// An outbox and the writer task's end of it ([`write_all`]).
    #[must_use]
    pub fn new() -> (Self, mpsc::UnboundedReceiver<Value>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let outbox = Self {
            sender,
            pending: Pending::default(),
            next_id: Arc::new(AtomicI64::new(1)),
            closed: Arc::default(),
        };
        (outbox, receiver)
    }

    /// Sends the request `method` to the client; the [`Answer`] resolves to its answer (or to
    /// an error when the connection ends first). Dropping it (the asker was cancelled) forgets
    /// the request: a late answer is then one "to no request of ours".
    pub fn request(&self, method: &str, params: Value) -> Answer {
        let (answer, answered) = oneshot::channel();
        if self.closed.load(Ordering::SeqCst) {
            // Dropped: the asker sees the editor gone at once.
            return Answer {
                id: None,
                pending: Arc::clone(&self.pending),
                answered,
            };
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, answer);
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        Answer {
            id: Some(id),
            pending: Arc::clone(&self.pending),
            answered,
        }
    }

    /// Hands the client's answer to the request `id` to whoever waits for it.
    pub fn deliver(&self, id: &Value, result: Result<Value, RpcError>) {
        let waiting = id.as_i64().and_then(|id| {
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id)
        });
        match waiting {
            Some(answer) => {
                let _ = answer.send(result);
            }
            None => tracing::warn!(%id, "an answer to no request of ours"),
        }
    }

    /// Forgets every request still waiting, and refuses new ones (their receivers see the
    /// connection gone).
    pub fn abandon_requests(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Answers request `id` with `result`.
    pub fn respond(&self, id: Value, result: Value) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "result": result }));
    }

    /// Answers request `id` with `error`.
    pub fn fail(&self, id: Value, error: &RpcError) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "error": error.to_json() }));
    }

    /// Sends the notification `method`.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    fn send(&self, message: Value) {
        // The writer has stopped only when the editor is gone; nothing is left to tell.
        let _ = self.sender.send(message);
    }
}

/// Writes every message of `receiver` to `writer`, one line each, until every outbox is
/// dropped (or the editor stops reading).
pub async fn write_all(
    mut writer: impl AsyncWrite + Unpin,
    mut receiver: mpsc::UnboundedReceiver<Value>,
) {
    while let Some(message) = receiver.recv().await {
        let mut line = message.to_string();
        line.push('\n');
        if let Err(error) = writer.write_all(line.as_bytes()).await {
            tracing::warn!(%error, "the editor stopped reading");
            return;
        }
        if receiver.is_empty() && writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_that_are_not_text_are_refused_and_reading_goes_on() {
        let input: &[u8] = b"{\"a\":1}\n\xff\xfe\nlast";
        let mut reader = tokio::io::BufReader::new(input);
        assert_eq!(
            read_line(&mut reader).await.unwrap(),
            Line::Text("{\"a\":1}".into())
        );
        assert!(matches!(
            read_line(&mut reader).await.unwrap(),
            Line::Bad(RpcError {
                code: code::PARSE_ERROR,
                ..
            })
        ));
        assert_eq!(
            read_line(&mut reader).await.unwrap(),
            Line::Text("last".into())
        );
        assert_eq!(read_line(&mut reader).await.unwrap(), Line::End);
    }

    #[tokio::test]
    async fn a_request_dropped_unanswered_is_forgotten_and_an_answered_one_delivered() {
        let (outbox, mut sent) = Outbox::new();
        let waiting = |outbox: &Outbox| outbox.pending.lock().map(|p| p.len()).unwrap_or(99);
        // Asked, then the asker cancelled: the entry goes with it.
        let dropped = outbox.request("fs/read_text_file", json!({}));
        assert_eq!(waiting(&outbox), 1);
        drop(dropped);
        assert_eq!(waiting(&outbox), 0);
        // Asked and answered: the answer reaches the asker, and nothing is left waiting.
        let answer = outbox.request("fs/read_text_file", json!({}));
        let _first = sent.recv().await.unwrap();
        let request = sent.recv().await.unwrap();
        outbox.deliver(&request["id"], Ok(json!({"content": "x"})));
        assert_eq!(answer.await.unwrap(), Ok(json!({"content": "x"})));
        assert_eq!(waiting(&outbox), 0);
        // Once the editor is gone, a request is refused at once.
        outbox.abandon_requests();
        assert!(
            outbox
                .request("fs/read_text_file", json!({}))
                .await
                .is_err()
        );
    }

    #[test]
    fn lines_are_told_apart() {
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
            Incoming::Request { .. }
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#),
            Incoming::Notification { .. }
        ));
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Incoming::Response {
                id: json!(3),
                result: Ok(json!({}))
            }
        );
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"no"}}"#),
            Incoming::Response {
                result: Err(RpcError {
                    code: code::INTERNAL_ERROR,
                    ..
                }),
                ..
            }
        ));
        assert!(matches!(
            parse("{not json"),
            Incoming::Invalid(
                Value::Null,
                RpcError {
                    code: code::PARSE_ERROR,
                    ..
                }
            )
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"1.0","id":7,"method":"x"}"#),
            Incoming::Invalid(id, RpcError { code: code::INVALID_REQUEST, .. }) if id == json!(7)
        ));
        // A null id is an id (JSON-RPC 2.0); an object is not.
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":null,"method":"initialize"}"#),
            Incoming::Request {
                id: Value::Null,
                method: "initialize".to_owned(),
                params: Value::Null
            }
        );
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#),
            Incoming::Invalid(
                _,
                RpcError {
                    code: code::INVALID_REQUEST,
                    ..
                }
            )
        ));
        assert!(matches!(
            parse("[1,2]"),
            Incoming::Invalid(
                _,
                RpcError {
                    code: code::INVALID_REQUEST,
                    ..
                }
            )
        ));
    }
}
