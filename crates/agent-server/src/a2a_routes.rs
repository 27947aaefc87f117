//! The two HTTP routes of A2A: the Agent Card and the JSON-RPC endpoint, over the server's
//! shared state; the protocol itself is [`crate::a2a`].

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::api::AppState;
use crate::error::ApiError;

/// `GET /.well-known/agent-card.json` (and `agent.json`): public, like any agent card; it
/// says when requests need the token.
pub async fn card(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    state.a2a.card(host).await.map(Json)
}

/// `POST /a2a` (and `POST /`): one JSON-RPC request, behind the token like the API.
pub async fn rpc(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(error) = state.access.check_token(&headers) {
        let mut response = error.into_response();
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        return response;
    }
    // The caller's trace (W3C `traceparent`, as `a2a_call` sends it) goes on into the task's
    // run: one trace across both agents.
    let span =
        agent_telemetry::genai_span!("a2a", otel.name = "a2a request", otel.kind = "server",);
    agent_telemetry::context::continue_from(&span, |name| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    });
    // Never entered: its runs hang under it, and requests made while handling it carry it
    // (`agent_telemetry::scope`).
    agent_telemetry::scope::within(span, state.a2a.handle(&body)).await
}
