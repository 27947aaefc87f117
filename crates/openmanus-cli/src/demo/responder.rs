//! The demo's model: a tiny HTTP/1.1 responder on 127.0.0.1 that answers chat completions from a
//! script, as one JSON body or as an SSE stream (whichever the request asks for), checks the API
//! key, and notes requests a strict provider would reject. Keep-alive connections are served
//! request after request; nothing here is meant for anything but the demo's own client.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::Reply;

/// Longest request head (request line and headers) accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Largest request body accepted.
const MAX_BODY: usize = 32 * 1024 * 1024;

/// What the responder knows: the script, the key it requires, and what went wrong.
#[derive(Debug, Default)]
struct State {
    replies: Vec<Reply>,
    next: usize,
    api_key: Option<String>,
    violations: Vec<String>,
}

/// One HTTP response.
struct Response {
    status: u16,
    content_type: &'static str,
    body: String,
}

impl Response {
    fn json(status: u16, body: &Value) -> Self {
        Self {
            status,
            content_type: "application/json",
            body: body.to_string(),
        }
    }

    fn error(status: u16, message: &str, error_type: &str, code: Option<&str>) -> Self {
        Self::json(
            status,
            &json!({"error": {"message": message, "type": error_type, "param": null, "code": code}}),
        )
    }
}

/// The demo's model server. Stops serving when dropped.
#[derive(Debug)]
pub struct DemoModel {
    port: u16,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

impl Drop for DemoModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl DemoModel {
    /// Binds a free loopback port and serves `replies` in order.
    ///
    /// # Errors
    ///
    /// The port cannot be bound.
    pub async fn start(replies: Vec<Reply>) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(Mutex::new(State {
            replies,
            ..State::default()
        }));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&shared)));
            }
        });
        Ok(Self { port, state, task })
    }

    /// The base URL (`http://127.0.0.1:PORT/v1`).
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Requires `Authorization: Bearer KEY` on every request (a 401 otherwise).
    pub fn require_api_key(&self, key: &str) {
        self.lock().api_key = Some(key.to_owned());
    }

    /// Every request was one a strict provider accepts (and the script covered it).
    ///
    /// # Errors
    ///
    /// The violations seen, one per line.
    pub fn verify(&self) -> Result<(), String> {
        let state = self.lock();
        if state.violations.is_empty() {
            Ok(())
        } else {
            Err(state.violations.join("\n"))
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Serves one connection, request after request, until the client closes it.
async fn serve(stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut stream = BufReader::new(stream);
    loop {
        let request = match read_request(&mut stream).await {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(message) => {
                let response = Response::error(400, &message, "invalid_request_error", None);
                let _ = write_response(stream.get_mut(), &response, true).await;
                return;
            }
        };
        let response = {
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            answer(&mut state, &request)
        };
        if write_response(stream.get_mut(), &response, request.close)
            .await
            .is_err()
            || request.close
        {
            return;
        }
    }
}

/// The parts of a request the responder looks at.
#[derive(Debug, Default)]
struct Request {
    method: String,
    path: String,
    authorization: Option<String>,
    close: bool,
    body: Vec<u8>,
}

/// Reads one request; `None` when the client closed the connection between requests.
async fn read_request(stream: &mut BufReader<TcpStream>) -> Result<Option<Request>, String> {
    let mut line = String::new();
    let mut head = 0;
    let mut request = Request::default();
    let mut length = 0usize;
    loop {
        line.clear();
        let read = stream
            .read_line(&mut line)
            .await
            .map_err(|e| format!("cannot read the request: {e}"))?;
        if read == 0 {
            return if head == 0 {
                Ok(None)
            } else {
                Err("the connection closed inside the request head".into())
            };
        }
        head += read;
        if head > MAX_HEAD {
            return Err("the request head is too large".into());
        }
        let text = line.trim_end();
        if request.method.is_empty() {
            let mut words = text.split_whitespace();
            request.method = words.next().unwrap_or_default().to_owned();
            request.path = words.next().unwrap_or_default().to_owned();
            if request.path.is_empty() {
                return Err(format!("not an HTTP request line: {text:?}"));
            }
            continue;
        }
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(format!("not a header: {text:?}"));
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => {
                length = value
                    .parse()
                    .map_err(|_| format!("bad content-length {value:?}"))?;
            }
            "authorization" => request.authorization = Some(value.to_owned()),
            "connection" => request.close = value.eq_ignore_ascii_case("close"),
            "transfer-encoding" => {
                return Err("chunked request bodies are not supported".into());
            }
            _ => {}
        }
    }
    if length > MAX_BODY {
        return Err("the request body is too large".into());
    }
    request.body = vec![0; length];
    stream
        .read_exact(&mut request.body)
        .await
        .map_err(|e| format!("cannot read the request body: {e}"))?;
    Ok(Some(request))
}

async fn write_response(
    stream: &mut TcpStream,
    response: &Response,
    close: bool,
) -> std::io::Result<()> {
    let reason = match response.status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "Internal Server Error",
    };
    let head = format!(
        "HTTP/1.1 {} {reason}\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: {}\r\n\r\n",
        response.status,
        response.content_type,
        response.body.len(),
        if close { "close" } else { "keep-alive" },
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(response.body.as_bytes()).await?;
    stream.flush().await
}

/// The response to one request: the next scripted reply, or an OpenAI-shaped error.
fn answer(state: &mut State, request: &Request) -> Response {
    let path = request.path.split('?').next().unwrap_or_default();
    if request.method != "POST" || !path.ends_with("/chat/completions") {
        return Response::error(
            404,
            &format!("no route {} {}", request.method, request.path),
            "invalid_request_error",
            None,
        );
    }
    if let Some(key) = &state.api_key {
        let given = request
            .authorization
            .as_deref()
            .and_then(|v| v.strip_prefix("Bearer "));
        if given != Some(key.as_str()) {
            return Response::error(
                401,
                "Incorrect API key provided.",
                "invalid_request_error",
                Some("invalid_api_key"),
            );
        }
    }
    let body: Value = match serde_json::from_slice(&request.body) {
        Ok(body) => body,
        Err(e) => return violation(state, format!("the body is not JSON: {e}")),
    };
    if let Err(problem) = check(&body) {
        return violation(state, problem);
    }
    let Some(reply) = state.replies.get(state.next).cloned() else {
        state
            .violations
            .push("a request came after the demo's last scripted reply".into());
        return Response::error(
            500,
            "the demo's script has no more replies",
            "server_error",
            None,
        );
    };
    state.next += 1;
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let id = format!("chatcmpl-demo-{}", state.next);
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true);
        Response {
            status: 200,
            content_type: "text/event-stream",
            body: stream_body(&reply, &id, model, include_usage),
        }
    } else {
        Response::json(200, &completion(&reply, &id, model))
    }
}

fn violation(state: &mut State, problem: String) -> Response {
    let response = Response::error(400, &problem, "invalid_request_error", None);
    state.violations.push(problem);
    response
}

/// The checks of a strict provider the demo's requests must pass: a model, known roles, and
/// every `tool` message answering a call of an earlier assistant message.
fn check(body: &Value) -> Result<(), String> {
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err("the request names no model".into());
    }
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or("the request has no messages")?;
    let mut calls = Vec::new();
    for (at, message) in messages.iter().enumerate() {
        match message.get("role").and_then(Value::as_str) {
            Some("system" | "user") => {}
            Some("assistant") => {
                let ids = message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.get("id").and_then(Value::as_str));
                calls.extend(ids);
            }
            Some("tool") => {
                let id = message.get("tool_call_id").and_then(Value::as_str);
                if !id.is_some_and(|id| calls.contains(&id)) {
                    return Err(format!(
                        "messages[{at}]: a tool message answers no earlier tool call"
                    ));
                }
            }
            other => return Err(format!("messages[{at}]: invalid role {other:?}")),
        }
    }
    Ok(())
}

fn usage(reply: &Reply) -> Value {
    json!({
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    })
}

fn call(reply: &Reply) -> Value {
    json!({
        "id": reply.call_id,
        "type": "function",
        "function": {"name": reply.tool, "arguments": reply.arguments},
    })
}

/// The `chat.completion` object for a non-streaming request.
fn completion(reply: &Reply, id: &str, model: &str) -> Value {
    json!({
        "id": id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": reply.content, "tool_calls": [call(reply)]},
            "finish_reason": "tool_calls",
        }],
        "usage": usage(reply),
    })
}

/// The SSE body for a streaming request: the text, the call, the finish reason, the usage when
/// asked for, then `[DONE]`.
fn stream_body(reply: &Reply, id: &str, model: &str, include_usage: bool) -> String {
    let chunk = |choices: Value, usage: Value| {
        let mut chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": choices,
        });
        if include_usage {
            chunk["usage"] = usage;
        }
        chunk
    };
    let delta = |delta: Value, finish: Option<&str>| {
        chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": finish}]),
            Value::Null,
        )
    };
    let mut call = call(reply);
    call["index"] = json!(0);
    let mut chunks = vec![
        delta(json!({"role": "assistant", "content": reply.content}), None),
        delta(json!({"tool_calls": [call]}), None),
        delta(json!({}), Some("tool_calls")),
    ];
    if include_usage {
        chunks.push(chunk(json!([]), usage(reply)));
    }
    let mut body = String::new();
    for chunk in chunks {
        body.push_str("data: ");
        body.push_str(&chunk.to_string());
        body.push_str("\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply() -> Reply {
        Reply {
            content: "hi".into(),
            call_id: "call_1",
            tool: "terminate",
            arguments: r#"{"status":"success"}"#.into(),
            prompt_tokens: 3,
            completion_tokens: 4,
        }
    }

    fn post(body: &Value, key: Option<&str>) -> Request {
        Request {
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            authorization: key.map(|k| format!("Bearer {k}")),
            close: false,
            body: body.to_string().into_bytes(),
        }
    }

    #[test]
    fn answers_json_or_sse_checks_the_key_and_notes_violations() {
        let mut state = State {
            replies: vec![reply(), reply()],
            api_key: Some("k".into()),
            ..State::default()
        };
        let ok = json!({"model": "m", "messages": [{"role": "user", "content": "x"}]});
        assert_eq!(answer(&mut state, &post(&ok, Some("wrong"))).status, 401);
        let response = answer(&mut state, &post(&ok, Some("k")));
        assert_eq!(
            (response.status, response.content_type),
            (200, "application/json")
        );
        let parsed = agent_llm::parse_completion(response.body.as_bytes()).unwrap();
        assert_eq!(parsed.content.as_deref(), Some("hi"));
        assert_eq!(parsed.tool_calls[0].function.name, "terminate");

        let mut streamed = ok.clone();
        streamed["stream"] = json!(true);
        streamed["stream_options"] = json!({"include_usage": true});
        let response = answer(&mut state, &post(&streamed, Some("k")));
        assert_eq!(response.content_type, "text/event-stream");
        let mut assembler = agent_llm::StreamAssembler::default();
        for data in response
            .body
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
        {
            if data != "[DONE]" {
                assembler.push(data).unwrap();
            }
        }
        let parsed = assembler.finish();
        assert_eq!(
            parsed.tool_calls[0].function.arguments,
            r#"{"status":"success"}"#
        );
        assert_eq!(parsed.usage.map(|u| u.total_tokens()), Some(7));
        assert!(state.violations.is_empty());

        // The script is over, and an unpaired tool message is a violation.
        assert_eq!(answer(&mut state, &post(&ok, Some("k"))).status, 500);
        let unpaired = json!({"model": "m", "messages": [
            {"role": "user", "content": "x"},
            {"role": "tool", "content": "out", "tool_call_id": "nope"}]});
        assert_eq!(answer(&mut state, &post(&unpaired, Some("k"))).status, 400);
        assert_eq!(state.violations.len(), 2, "{:?}", state.violations);
    }
}
