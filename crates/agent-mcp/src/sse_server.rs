//! The legacy HTTP+SSE MCP transport (protocol 2024-11-05), server side: `GET /sse` opens a
//! session whose first event, `endpoint`, names the URL to POST JSON-RPC messages to
//! (`/messages?sessionId=…`); the server's messages go out as `message` events. `rmcp` dropped
//! this transport; OpenManus's `run_mcp_server.py` offers it, and older clients only speak it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::McpToolServer;

/// Where the SSE stream is served.
pub const SSE_PATH: &str = "/sse";
/// Where clients POST their messages.
pub const MESSAGES_PATH: &str = "/messages";

/// How many messages may wait in either direction of one session.
const CHANNEL_CAPACITY: usize = 64;

type Sessions = Arc<Mutex<HashMap<String, mpsc::Sender<ClientJsonRpcMessage>>>>;

#[derive(Clone)]
struct SseState {
    server: McpToolServer,
    sessions: Sessions,
    shutdown: CancellationToken,
}

/// One session's side of the transport as `rmcp` sees it.
struct SessionTransport {
    outgoing: mpsc::Sender<ServerJsonRpcMessage>,
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
}

/// The SSE stream of the session is gone.
#[derive(Debug, thiserror::Error)]
#[error("the SSE client disconnected")]
struct Disconnected;

impl Transport<RoleServer> for SessionTransport {
    type Error = Disconnected;

    fn name() -> Cow<'static, str> {
        Cow::Borrowed("sse-server")
    }

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        async move { outgoing.send(item).await.map_err(|_| Disconnected) }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}

/// A session id: 128 random bits (from the standard library's randomly keyed hasher) and a
/// counter, so ids never repeat in this process and cannot be guessed from the outside.
fn session_id() -> String {
    use std::hash::BuildHasher;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let a = std::collections::hash_map::RandomState::new().hash_one(n);
    let b = std::collections::hash_map::RandomState::new().hash_one(a);
    format!("{a:016x}{b:016x}{n:x}")
}

/// Refuses requests that a web page sent from another site (an `Origin` header that is not
/// loopback): with DNS rebinding, a page could otherwise reach a server on 127.0.0.1 and call
/// its `bash`. Clients that are not browsers send no `Origin`.
pub(crate) async fn loopback_origin_only(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let origin = request
        .headers()
        .get(axum::http::header::ORIGIN)
        .map(|o| o.to_str().unwrap_or_default().to_owned());
    if let Some(origin) = origin {
        let host = origin
            .split("://")
            .nth(1)
            .unwrap_or_default()
            .split('/')
            .next()
            .unwrap_or_default();
        let hostname = if host.starts_with('[') {
            host.split(']')
                .next()
                .map(|h| format!("{h}]"))
                .unwrap_or_default()
        } else {
            host.split(':').next().unwrap_or_default().to_owned()
        };
        if !matches!(hostname.as_str(), "localhost" | "127.0.0.1" | "[::1]") {
            return (
                StatusCode::FORBIDDEN,
                "requests from web pages of other origins are refused",
            )
                .into_response();
        }
    }
    next.run(request).await
}

/// Removes a session from the table when its SSE stream is dropped.
struct Unregister {
    sessions: Sessions,
    id: String,
}

impl Drop for Unregister {
    fn drop(&mut self) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
        debug!(session = %self.id, "SSE session closed");
    }
}

async fn open(State(state): State<SseState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let id = session_id();
    let (to_server, incoming) = mpsc::channel(CHANNEL_CAPACITY);
    let (outgoing, from_server) = mpsc::channel::<ServerJsonRpcMessage>(CHANNEL_CAPACITY);
    state
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id.clone(), to_server);
    let transport = SessionTransport { outgoing, incoming };
    let server = state.server.clone();
    let shutdown = state.shutdown.clone();
    let session = id.clone();
    tokio::spawn(async move {
        match server.serve(transport).await {
            Ok(service) => {
                tokio::select! {
                    result = service.waiting() => {
                        if let Err(e) = result {
                            debug!(%session, error = %e, "SSE session ended");
                        }
                    }
                    () = shutdown.cancelled() => {}
                }
            }
            Err(e) => warn!(%session, error = %e, "SSE session handshake failed"),
        }
    });
    let guard = Unregister {
        sessions: Arc::clone(&state.sessions),
        id: id.clone(),
    };
    let stream = events(id, from_server, guard, state.shutdown.clone());
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// The session's events: `endpoint` first, then one `message` per server message, until the
/// server side ends or shutdown. Dropping the stream (the client went away) unregisters the
/// session, which ends the server side.
fn events(
    id: String,
    from_server: mpsc::Receiver<ServerJsonRpcMessage>,
    guard: Unregister,
    shutdown: CancellationToken,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("{MESSAGES_PATH}?sessionId={id}"));
    let first = futures::stream::once(async move { Ok(endpoint) });
    let rest = futures::stream::unfold(
        (from_server, guard, shutdown),
        |(mut from_server, guard, shutdown)| async move {
            let message = tokio::select! {
                message = from_server.recv() => message?,
                () = shutdown.cancelled() => return None,
            };
            let data = serde_json::to_string(&message).ok()?;
            Some((
                Ok(Event::default().event("message").data(data)),
                (from_server, guard, shutdown),
            ))
        },
    );
    futures::StreamExt::chain(first, rest)
}

#[derive(Deserialize)]
struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: String,
}

async fn receive(
    State(state): State<SseState>,
    Query(query): Query<SessionQuery>,
    body: axum::body::Bytes,
) -> Response {
    let sender = state
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&query.session_id)
        .cloned();
    let Some(sender) = sender else {
        return (StatusCode::NOT_FOUND, "no such session").into_response();
    };
    let message: ClientJsonRpcMessage = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("not a JSON-RPC message: {e}"),
            )
                .into_response();
        }
    };
    match sender.send(message).await {
        Ok(()) => StatusCode::ACCEPTED.into_response(),
        Err(_) => (StatusCode::GONE, "the session has ended").into_response(),
    }
}

impl McpToolServer {
    /// An axum router with the legacy SSE transport: the stream at [`SSE_PATH`], messages at
    /// [`MESSAGES_PATH`]; each session gets a clone of this server.
    pub fn sse_router(self, shutdown: CancellationToken) -> axum::Router {
        let state = SseState {
            server: self,
            sessions: Sessions::default(),
            shutdown,
        };
        axum::Router::new()
            .route(SSE_PATH, get(open))
            .route(MESSAGES_PATH, post(receive))
            .with_state(state)
            .layer(axum::middleware::from_fn(loopback_origin_only))
    }

    /// Serves the legacy SSE transport on `listener` until `shutdown` fires.
    ///
    /// # Errors
    ///
    /// [`crate::McpError::Io`] when the server fails.
    pub async fn serve_sse(
        self,
        listener: tokio::net::TcpListener,
        shutdown: CancellationToken,
    ) -> Result<(), crate::McpError> {
        let router = self.sse_router(shutdown.clone());
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await?;
        Ok(())
    }
}
