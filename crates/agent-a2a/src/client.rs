//! A client of A2A agents: reads the Agent Card, then speaks the dialect the card offers
//! (1.0 preferred), streaming when the agent streams.

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::Value;

use crate::codec::{Dialect, Method};
use crate::rpc::{self, Request, RpcError};
use crate::types::{Message, SendParams, StreamEvent, Task, TaskQuery};

/// Why a call to an agent failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The agent cannot be reached, or answered with an HTTP error.
    #[error("HTTP: {0}")]
    Http(#[from] reqwest::Error),
    /// The agent answered with a JSON-RPC error.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The agent's card or answer is not A2A.
    #[error("the agent's answer is not A2A: {0}")]
    Invalid(String),
}

/// A client of one agent.
#[derive(Debug, Clone)]
pub struct A2aClient {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

/// The agent's card, as far as a client needs it.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The JSON-RPC URL.
    pub url: String,
    /// The dialect spoken there.
    pub dialect: Dialect,
    /// Whether the agent streams.
    pub streaming: bool,
    /// The whole card.
    pub card: Value,
}

impl A2aClient {
    /// A client of the agent at `base` (its card is under `base/.well-known/`), sending `token`
    /// as a bearer token when given.
    #[must_use]
    pub fn new(http: reqwest::Client, base: impl Into<String>, token: Option<String>) -> Self {
        Self {
            http,
            base: base.into().trim_end_matches('/').to_owned(),
            token,
        }
    }

    /// `request` with the bearer token, and the trace context of the span this work belongs
    /// to (`agent_telemetry::scope::current`: the `execute_tool` span of an `a2a_call`; W3C
    /// `traceparent`) so that the other agent's run joins this trace (nothing when telemetry
    /// is off).
    fn authorised(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let request = agent_telemetry::context::current_headers()
            .into_iter()
            .fold(request, |request, (name, value)| {
                request.header(name, value)
            });
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Reads the agent's card (`agent-card.json`, else the older `agent.json`).
    ///
    /// # Errors
    ///
    /// Neither can be read, or the card names no JSON-RPC endpoint.
    pub async fn endpoint(&self) -> Result<Endpoint, ClientError> {
        let mut last = None;
        for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
            let response = self
                .authorised(self.http.get(format!("{}{path}", self.base)))
                .send()
                .await?;
            if !response.status().is_success() {
                last = Some(response.error_for_status().err());
                continue;
            }
            let card: Value = response.json().await?;
            let (url, dialect) = crate::card::endpoint_of(&card)
                .ok_or_else(|| ClientError::Invalid("the card names no JSON-RPC URL".into()))?;
            return Ok(Endpoint {
                url,
                dialect,
                streaming: card["capabilities"]["streaming"].as_bool() == Some(true),
                card,
            });
        }
        match last.flatten() {
            Some(error) => Err(error.into()),
            None => Err(ClientError::Invalid("no agent card".into())),
        }
    }

    /// Sends `message` and follows the task until it ends or needs input, telling
    /// `on_event` of every event (the stream's, when the agent streams). Returns the task.
    ///
    /// # Errors
    ///
    /// HTTP, JSON-RPC, or an answer that is not A2A.
    pub async fn send(
        &self,
        endpoint: &Endpoint,
        message: Message,
        mut on_event: impl FnMut(&StreamEvent) + Send,
    ) -> Result<Task, ClientError> {
        let dialect = endpoint.dialect;
        let params = dialect.encode_send_params(&SendParams {
            message,
            blocking: true,
            history_length: None,
        });
        if !endpoint.streaming {
            let result = self
                .call(endpoint, dialect.method_name(Method::SendMessage), params)
                .await?;
            let event = dialect.decode_event(&result)?;
            on_event(&event);
            return match event {
                StreamEvent::Task(task) => Ok(task),
                other => Err(ClientError::Invalid(format!(
                    "message/send answered {other:?} rather than a task"
                ))),
            };
        }
        let request = Request {
            id: Some(Value::String(uuid::Uuid::new_v4().to_string())),
            method: dialect.method_name(Method::StreamMessage).to_owned(),
            params,
        };
        let response = self
            .authorised(self.http.post(&endpoint.url))
            .header("accept", "text/event-stream")
            .header("A2A-Version", version_header(dialect))
            .json(&request.to_json())
            .send()
            .await?
            .error_for_status()?;
        let mut events = response.bytes_stream().eventsource();
        let mut task: Option<Task> = None;
        while let Some(event) = events.next().await {
            let event = event.map_err(|error| ClientError::Invalid(error.to_string()))?;
            let value: Value = serde_json::from_str(&event.data)
                .map_err(|error| ClientError::Invalid(error.to_string()))?;
            let event = dialect.decode_event(&rpc::result_of(value)?)?;
            on_event(&event);
            apply(&mut task, event);
            if task
                .as_ref()
                .is_some_and(|t| t.status.state.is_terminal() || t.status.state.is_interrupted())
            {
                break;
            }
        }
        task.ok_or_else(|| ClientError::Invalid("the stream ended without a task".into()))
    }

    /// `tasks/get`.
    ///
    /// # Errors
    ///
    /// HTTP, JSON-RPC, or an answer that is not A2A.
    pub async fn get(&self, endpoint: &Endpoint, query: &TaskQuery) -> Result<Task, ClientError> {
        self.task_call(endpoint, Method::GetTask, query).await
    }

    /// `tasks/cancel`.
    ///
    /// # Errors
    ///
    /// HTTP, JSON-RPC, or an answer that is not A2A.
    pub async fn cancel(&self, endpoint: &Endpoint, id: &str) -> Result<Task, ClientError> {
        let query = TaskQuery {
            id: id.to_owned(),
            history_length: None,
        };
        self.task_call(endpoint, Method::CancelTask, &query).await
    }

    async fn task_call(
        &self,
        endpoint: &Endpoint,
        method: Method,
        query: &TaskQuery,
    ) -> Result<Task, ClientError> {
        let mut params = serde_json::json!({ "id": query.id });
        if let Some(length) = query.history_length {
            params["historyLength"] = length.into();
        }
        let result = self
            .call(endpoint, endpoint.dialect.method_name(method), params)
            .await?;
        Ok(Dialect::decode_task(&result)?)
    }

    async fn call(
        &self,
        endpoint: &Endpoint,
        method: &str,
        params: Value,
    ) -> Result<Value, ClientError> {
        let request = Request {
            id: Some(Value::String(uuid::Uuid::new_v4().to_string())),
            method: method.to_owned(),
            params,
        };
        let response: Value = self
            .authorised(self.http.post(&endpoint.url))
            .header("A2A-Version", version_header(endpoint.dialect))
            .json(&request.to_json())
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        Ok(rpc::result_of(response)?)
    }
}

fn version_header(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::V1 => crate::PROTOCOL_V1,
        Dialect::Legacy => "0.3",
    }
}

/// Folds a stream event into the task it describes.
pub fn apply(task: &mut Option<Task>, event: StreamEvent) {
    match event {
        StreamEvent::Task(new) => *task = Some(new),
        StreamEvent::Status(update) => {
            if let Some(task) = task.as_mut() {
                task.status = update.status;
            } else {
                *task = Some(Task {
                    id: update.task_id,
                    context_id: update.context_id,
                    status: update.status,
                    artifacts: Vec::new(),
                    history: Vec::new(),
                });
            }
        }
        StreamEvent::Artifact(update) => {
            if let Some(task) = task.as_mut() {
                match task
                    .artifacts
                    .iter_mut()
                    .find(|a| a.artifact_id == update.artifact.artifact_id)
                {
                    Some(artifact) if update.append => {
                        artifact.parts.extend(update.artifact.parts);
                    }
                    Some(artifact) => *artifact = update.artifact,
                    None => task.artifacts.push(update.artifact),
                }
            }
        }
        StreamEvent::Message(_) => {}
    }
}
