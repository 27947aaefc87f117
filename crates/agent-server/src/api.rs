//! The HTTP API: sessions, tasks, events, cancellation, `ask_human` answers, workspace files.
//! Every route is under `/api`; docs/server.md describes each with a curl example.

use std::str::FromStr;
use std::sync::Arc;

use agent_session::Target;
use agent_store::{EventId, SessionRecord};
use agents::AgentKind;
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::a2a::A2a;
use crate::error::ApiError;
use crate::files::{self, PathError};
use crate::guard::{Access, TOKEN_COOKIE};
use crate::hub::{Hub, store_error};
use crate::live::TaskError;
use crate::notice::Status;
use crate::sse;

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// The sessions.
    pub hub: Arc<Hub>,
    /// The access rules (for the login route).
    pub access: Arc<Access>,
    /// The A2A side.
    pub a2a: Arc<A2a>,
}

/// `GET /api/health`.
pub async fn health(State(state): State<AppState>) -> Json<Value> {
    let queue = state.hub.queue();
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "live_sessions": state.hub.live_count(),
        "running": queue.running(),
        "queued": queue.waiting(),
        "max_concurrent_runs": queue.limit(),
    }))
}

/// The body of `POST /api/login`.
#[derive(Deserialize)]
pub struct Login {
    token: String,
}

/// `POST /api/login`: checks the token and sets the cookie the page's requests carry.
pub async fn login(
    State(state): State<AppState>,
    Json(login): Json<Login>,
) -> Result<Response, ApiError> {
    if state.access.token.is_none() {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    if !state.access.accepts(login.token.trim()) {
        return Err(ApiError::Unauthorized("the token is wrong".into()));
    }
    let cookie = format!(
        "{TOKEN_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
        login.token.trim()
    );
    let mut response = StatusCode::NO_CONTENT.into_response();
    let value = HeaderValue::from_str(&cookie).map_err(|_| {
        ApiError::BadRequest("the token has characters a cookie cannot hold".into())
    })?;
    response.headers_mut().insert(header::SET_COOKIE, value);
    Ok(response)
}

/// A session as the API shows it: the stored record and the live status.
fn session_json(record: &SessionRecord, status: &Status) -> Value {
    json!({
        "id": record.id,
        "agent": record.agent,
        "title": record.title,
        "state": record.state,
        "workspace": record.workspace,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "runs": record.runs,
        "settings": record.settings,
        "status": status,
    })
}

/// `GET /api/sessions`: every session, newest first.
pub async fn list_sessions(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let records = state
        .hub
        .store()
        .list_sessions()
        .await
        .map_err(store_error)?;
    let sessions: Vec<Value> = records
        .iter()
        .map(|record| {
            let status = state
                .hub
                .live(&record.id)
                .map_or_else(Status::at_rest, |live| live.status());
            session_json(record, &status)
        })
        .collect();
    Ok(Json(json!({ "sessions": sessions })))
}

/// The body of `POST /api/sessions`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSessionBody {
    /// `manus` (default), `swe`, `browser`, `sandbox`, `mcp`, `data_analysis`, or `flow`.
    #[serde(default)]
    agent: Option<String>,
    /// A first task, queued at once.
    #[serde(default)]
    task: Option<String>,
}

/// `POST /api/sessions`: creates a session (and queues its first task when given one).
pub async fn create_session(
    State(state): State<AppState>,
    body: Option<Json<NewSessionBody>>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let (agent, task) = match body {
        Some(Json(body)) => (body.agent, body.task),
        None => (None, None),
    };
    let agent = agent.unwrap_or_else(|| "manus".to_owned());
    let target = parse_target(&agent)?;
    let task = task.filter(|t| !t.trim().is_empty());
    let live = state.hub.create(target, json!({ "agent": agent })).await?;
    if let Some(task) = task {
        live.run(task).map_err(task_error)?;
    }
    let record = state.hub.record(live.id()).await?;
    Ok((
        StatusCode::CREATED,
        Json(session_json(&record, &live.status())),
    ))
}

/// `flow` or an agent kind.
fn parse_target(agent: &str) -> Result<Target, ApiError> {
    if agent == "flow" {
        return Ok(Target::Flow);
    }
    AgentKind::from_str(agent)
        .map(Target::Agent)
        .map_err(|error| ApiError::BadRequest(error.to_string()))
}

/// `GET /api/sessions/{id}`: the session, its runs and its live status.
pub async fn get_session(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let record = state.hub.record(&id).await?;
    let runs = state.hub.store().runs(&id).await.map_err(store_error)?;
    let status = state
        .hub
        .live(&id)
        .map_or_else(Status::at_rest, |live| live.status());
    let mut body = session_json(&record, &status);
    body["run_list"] = serde_json::to_value(runs).unwrap_or(Value::Null);
    Ok(Json(body))
}

/// `DELETE /api/sessions/{id}`: cancels, closes and forgets the session and its workspace.
pub async fn delete_session(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.hub.delete(&id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("no session {id}")))
    }
}

/// The body of `POST /api/sessions/{id}/tasks`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskBody {
    /// The task.
    task: String,
}

/// `POST /api/sessions/{id}/tasks`: queues a task (the session is resumed if it is not live).
pub async fn post_task(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Json(body): Json<TaskBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if body.task.trim().is_empty() {
        return Err(ApiError::BadRequest("the task is empty".into()));
    }
    let mut live = state.hub.ensure_live(&id).await?;
    match live.run(body.task.clone()) {
        Ok(()) => {}
        Err(TaskError::Closed) => {
            // Closed for being idle between the lookup and the task: resumed again.
            live = state.hub.ensure_live(&id).await?;
            live.run(body.task).map_err(task_error)?;
        }
        Err(error) => return Err(task_error(error)),
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "status": live.status() })),
    ))
}

fn task_error(error: TaskError) -> ApiError {
    ApiError::Conflict(error.to_string())
}

/// `POST /api/sessions/{id}/cancel`: cancels the run going or waiting.
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let record = state.hub.record(&id).await?;
    let cancelled = match state.hub.live(&id) {
        Some(live) if live.cancel() => true,
        // Running on another server sharing the store: that one is asked.
        _ => state.hub.cancel_elsewhere(&record).await?,
    };
    Ok(Json(json!({ "cancelled": cancelled })))
}

/// The body of `POST /api/sessions/{id}/answer`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerBody {
    /// The answer to the question `ask_human` asked.
    answer: String,
}

/// `POST /api/sessions/{id}/answer`: answers the waiting `ask_human` question.
pub async fn answer(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Json(body): Json<AnswerBody>,
) -> Result<Json<Value>, ApiError> {
    state.hub.record(&id).await?;
    let answered = state
        .hub
        .live(&id)
        .is_some_and(|live| live.answer(body.answer));
    if answered {
        Ok(Json(json!({ "answered": true })))
    } else {
        Err(ApiError::Conflict(
            "no question is waiting for an answer".into(),
        ))
    }
}

/// The query of `GET /api/sessions/{id}/events`.
#[derive(Deserialize)]
pub struct EventsQuery {
    /// Start after this event id (the `Last-Event-ID` header wins).
    after: Option<EventId>,
}

/// `GET /api/sessions/{id}/events`: the session's events as SSE.
pub async fn events(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.hub.record(&id).await?;
    let last_event_id = match headers.get("last-event-id") {
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<EventId>().ok())
                .ok_or_else(|| ApiError::BadRequest("Last-Event-ID is not an event id".into()))?,
        ),
        None => None,
    };
    Ok(sse::stream(Arc::clone(&state.hub), id, last_event_id.or(query.after)).into_response())
}

/// `GET /api/sessions/{id}/files`: the workspace's files.
pub async fn list_files(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<files::Listing>, ApiError> {
    let record = state.hub.record(&id).await?;
    let listing = tokio::task::spawn_blocking(move || files::list(&record.workspace))
        .await
        .map_err(ApiError::internal)?
        .map_err(|error| ApiError::NotFound(format!("the workspace cannot be read: {error}")))?;
    Ok(Json(listing))
}

/// `GET /api/sessions/{id}/files/{*path}`: one file of the workspace; images and text inline,
/// everything else as a download; never anything outside the workspace.
pub async fn get_file(
    State(state): State<AppState>,
    Path((id, path)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let record = state.hub.record(&id).await?;
    let resolved = files::resolve(&record.workspace, &path).map_err(|error| match error {
        PathError::Invalid => ApiError::BadRequest(error.to_string()),
        PathError::Outside => ApiError::Forbidden(error.to_string()),
        PathError::NotFound => ApiError::NotFound(error.to_string()),
    })?;
    let bytes = tokio::fs::read(&resolved)
        .await
        .map_err(|_| ApiError::NotFound("no such file".into()))?;
    let content_type = files::content_type(&path);
    let name = resolved
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file")
        .replace(['"', '\\', '\r', '\n'], "_");
    let disposition = if files::is_inline(content_type) {
        format!("inline; filename=\"{name}\"")
    } else {
        format!("attachment; filename=\"{name}\"")
    };
    let mut response = Response::new(Body::from(bytes));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // A file the agent wrote is shown, never run as part of the page.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox; default-src 'none'; img-src 'self'"),
    );
    Ok(response)
}
