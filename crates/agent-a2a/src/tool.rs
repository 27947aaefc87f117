//! `a2a_call`: hands a sub-task to another A2A agent named in the configuration and returns
//! its artifacts as the observation. A question the other agent asks (`input-required`) comes
//! back as the observation too, with the task to answer it in; cancelling our run cancels the
//! other agent's task.

use std::sync::Arc;

use agent_tools::{Tool, ToolContext, ToolError, ToolResult};
use async_trait::async_trait;
use serde_json::{Value, json};
use tracing::info;

use crate::client::{A2aClient, Endpoint};
use crate::codec::Dialect;
use crate::types::{Message, Role, StreamEvent, Task, TaskState, joined_text};

/// The tool's name.
pub const A2A_CALL: &str = "a2a_call";

/// Another agent the tool may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A2aPeer {
    /// The name the model uses.
    pub name: String,
    /// Its base URL (the card is under `/.well-known/`).
    pub url: String,
    /// What it is good at, for the model.
    pub description: String,
    /// The bearer token it needs, if any.
    pub token: Option<String>,
}

/// The `a2a_call` tool.
pub struct A2aCall {
    peers: Vec<(A2aPeer, A2aClient)>,
    description: String,
}

impl A2aCall {
    /// The tool over `peers`, speaking HTTP with `http`.
    #[must_use]
    pub fn new(http: &reqwest::Client, peers: Vec<A2aPeer>) -> Self {
        let mut description = String::from(
            "Hand a sub-task to another agent over the Agent2Agent (A2A) protocol and get its \
             result. Give the agent's name and the task in plain words. If the agent asks a \
             question, call again with your answer and the task_id and context_id it gave; \
             pass context_id alone to continue a conversation with it. Agents:",
        );
        for peer in &peers {
            description.push_str(&format!("\n- {}: {}", peer.name, peer.description));
        }
        let peers = peers
            .into_iter()
            .map(|peer| {
                let client = A2aClient::new(http.clone(), peer.url.clone(), peer.token.clone());
                (peer, client)
            })
            .collect();
        Self { peers, description }
    }

    /// The tool, shared.
    #[must_use]
    pub fn shared(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }

    fn peer(&self, name: &str) -> Option<&(A2aPeer, A2aClient)> {
        self.peers.iter().find(|(peer, _)| peer.name == name)
    }
}

#[async_trait]
impl Tool for A2aCall {
    fn name(&self) -> &str {
        A2A_CALL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        let names: Vec<&str> = self.peers.iter().map(|(p, _)| p.name.as_str()).collect();
        json!({
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": names, "description": "The agent to call."},
                "message": {"type": "string", "description": "The task, or the answer to its question."},
                "context_id": {"type": "string", "description": "Continue this conversation with the agent."},
                "task_id": {"type": "string", "description": "Answer the question of this task."}
            },
            "required": ["agent", "message"]
        })
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let name = args["agent"]
            .as_str()
            .ok_or_else(|| ToolError::InvalidArguments("`agent` is required".into()))?;
        let text = args["message"]
            .as_str()
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| ToolError::InvalidArguments("`message` is required".into()))?;
        let Some((peer, client)) = self.peer(name) else {
            return Err(ToolError::InvalidArguments(format!(
                "no agent named {name:?}; the agents are: {}",
                self.peers
                    .iter()
                    .map(|(p, _)| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        let endpoint = client.endpoint().await.map_err(|error| {
            ToolError::failure(format!(
                "agent {name} at {} cannot be reached: {error}",
                peer.url
            ))
        })?;
        let message = Message::text(Role::User, text).within(
            args["context_id"].as_str().map(str::to_owned),
            args["task_id"].as_str().map(str::to_owned),
        );
        let task_id: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
        let call = client.send(&endpoint, message, |event: &StreamEvent| {
            if let Ok(mut id) = task_id.lock()
                && id.is_none()
            {
                *id = event.task_id().map(str::to_owned);
            }
            if let StreamEvent::Status(update) = event {
                let said = update
                    .status
                    .message
                    .as_ref()
                    .map(Message::joined_text)
                    .unwrap_or_default();
                info!(agent = name, state = ?update.status.state, said, "a2a_call");
                // The other agent's status, relayed as our run's progress.
                let state = Dialect::Legacy.state(update.status.state);
                if said.is_empty() {
                    ctx.report(&format!("{name}: {state}"));
                } else {
                    ctx.report(&format!("{name}: {state}: {said}"));
                }
            }
        });
        tokio::pin!(call);
        let task = tokio::select! {
            task = &mut call => task,
            () = ctx.cancellation.cancelled() => {
                let id = task_id.lock().ok().and_then(|id| id.clone());
                return Err(cancel(client, &endpoint, id.as_deref(), name).await);
            }
        };
        let task = task.map_err(|error| ToolError::failure(format!("agent {name}: {error}")))?;
        Ok(observation(name, &task))
    }
}

/// Cancels the other agent's task (when it has one) after our run was cancelled.
async fn cancel(
    client: &A2aClient,
    endpoint: &Endpoint,
    task: Option<&str>,
    name: &str,
) -> ToolError {
    if let Some(task) = task
        && let Err(error) = client.cancel(endpoint, task).await
    {
        tracing::warn!(agent = name, %error, "cancelling the other agent's task");
    }
    ToolError::failure(format!("the call to agent {name} was cancelled"))
}

/// What the model sees of the other agent's task.
fn observation(name: &str, task: &Task) -> ToolResult {
    let said = task
        .status
        .message
        .as_ref()
        .map(Message::joined_text)
        .unwrap_or_default();
    let artifacts: Vec<String> = task
        .artifacts
        .iter()
        .map(|a| joined_text(&a.parts))
        .filter(|t| !t.trim().is_empty())
        .collect();
    let ids = format!("(task_id {}, context_id {})", task.id, task.context_id);
    match task.status.state {
        TaskState::Completed => ToolResult::success(format!(
            "Agent {name} completed the task {ids}. Its result:\n{}",
            if artifacts.is_empty() {
                said
            } else {
                artifacts.join("\n\n")
            }
        )),
        TaskState::InputRequired | TaskState::AuthRequired => ToolResult::success(format!(
            "Agent {name} asks: {said}\nAnswer with a2a_call, passing task_id {} and \
             context_id {}.",
            task.id, task.context_id
        )),
        state => ToolResult::failure(format!("Agent {name}'s task ended {state:?} {ids}: {said}")),
    }
}
