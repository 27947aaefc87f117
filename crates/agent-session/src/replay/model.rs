//! [`ReplayModel`]: a [`ChatModel`] that answers each request with the recording's next reply.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError, Price};
use async_trait::async_trait;

use super::recording::{Recording, Reply};

/// The recording's replies, shared by every model of one replay (a flow's planner and
/// executors take them in the order they ask, as they did when recorded).
#[derive(Debug)]
pub(crate) struct ReplayQueue {
    replies: Mutex<VecDeque<Reply>>,
    total: usize,
    /// The recorded workspace.
    from: Option<String>,
    /// The recorded workspace and the replay's, as written in JSON text and as plain text.
    moves: OnceLock<Vec<(String, String)>>,
}

impl ReplayQueue {
    /// The replies of `recording`; the recorded workspace is moved once [`move_to`] names
    /// the replay's.
    ///
    /// [`move_to`]: ReplayQueue::move_to
    pub(crate) fn new(recording: &Recording) -> Arc<Self> {
        let replies: VecDeque<Reply> = recording.reply_list().iter().cloned().collect();
        Arc::new(Self {
            total: replies.len(),
            replies: Mutex::new(replies),
            from: recording
                .workspace()
                .map(|p| p.to_string_lossy().into_owned()),
            moves: OnceLock::new(),
        })
    }

    /// Moves the recorded workspace to `workspace` in every reply given from now on (only
    /// the first call counts).
    pub(crate) fn move_to(&self, workspace: &Path) {
        let mut moves = Vec::new();
        let to = workspace.to_string_lossy();
        if let Some(from) = &self.from
            && *from != to
        {
            moves.push((json_text(from), json_text(&to)));
            if json_text(from) != *from {
                moves.push((from.clone(), to.into_owned()));
            }
        }
        let _ = self.moves.set(moves);
    }

    /// The next reply, or the error that says the recording has none left.
    fn next(&self) -> Result<ChatResponse, LlmError> {
        let reply = self
            .replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        match reply {
            Some(Reply::Response(response)) => Ok(self.moved(response)),
            Some(Reply::Error(error)) => Err(LlmError::InvalidRequest(format!(
                "(replayed from the recording) {error}"
            ))),
            None => {
                let request = self.total + 1;
                Err(LlmError::InvalidRequest(format!(
                    "the recording has no reply for model request {request}: it holds {}",
                    self.total
                )))
            }
        }
    }

    /// `response` with the recorded workspace replaced by the replay's in its text and in
    /// every call's arguments, so the tools act in the replay's workspace.
    fn moved(&self, mut response: ChatResponse) -> ChatResponse {
        if self.moves.get().is_none_or(Vec::is_empty) {
            return response;
        }
        if let Some(content) = &mut response.content {
            *content = self.apply(content);
        }
        for call in &mut response.tool_calls {
            call.function.arguments = self.apply(&call.function.arguments);
        }
        response
    }

    fn apply(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (from, to) in self.moves.get().into_iter().flatten() {
            if text.contains(from.as_str()) {
                text = text.replace(from.as_str(), to);
            }
        }
        text
    }

    /// How many replies were given out.
    pub(crate) fn served(&self) -> usize {
        self.total
            - self
                .replies
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len()
    }
}

/// `text` as it is inside a JSON string (a path with a quote or a backslash is escaped in a
/// tool call's arguments).
fn json_text(text: &str) -> String {
    let quoted = serde_json::Value::String(text.to_owned()).to_string();
    quoted
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(&quoted)
        .to_owned()
}

impl Recording {
    /// A model that answers every request with the recording's next reply, the recorded
    /// workspace in them moved to `workspace` (when both are known). Give it to an agent of
    /// your own, then [`check_agent`](super::check_agent).
    #[must_use]
    pub fn model(&self, workspace: Option<&Path>) -> Arc<ReplayModel> {
        let queue = ReplayQueue::new(self);
        if let Some(workspace) = workspace {
            queue.move_to(workspace);
        }
        Arc::new(ReplayModel::new(queue, None))
    }
}

/// A model that answers each request with the next reply of a [`Recording`] (in the order
/// the recording's requests were made), the recorded workspace in the replies moved to the
/// replay's. A reply the recording holds as a failed request is that failure again (as
/// [`LlmError::InvalidRequest`], which is not retried); a request past the end of the
/// recording fails the same way, saying so. It sends nothing anywhere.
///
/// Its name, price, context window and image support are those of the profile model given
/// (the client the configuration would build, which is never asked anything), so an agent
/// compacts and formats as it did when recorded.
pub struct ReplayModel {
    queue: Arc<ReplayQueue>,
    profile: Option<Arc<dyn ChatModel>>,
}

impl std::fmt::Debug for ReplayModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayModel")
            .field("served", &self.queue.served())
            .field("total", &self.queue.total)
            .finish_non_exhaustive()
    }
}

impl ReplayModel {
    pub(crate) fn new(queue: Arc<ReplayQueue>, profile: Option<Arc<dyn ChatModel>>) -> Self {
        Self { queue, profile }
    }

    /// How many of the recording's replies were given so far.
    #[must_use]
    pub fn served(&self) -> usize {
        self.queue.served()
    }

    /// How many replies the recording holds.
    #[must_use]
    pub fn total(&self) -> usize {
        self.queue.total
    }
}

#[async_trait]
impl ChatModel for ReplayModel {
    async fn complete(&self, _request: ChatRequest) -> Result<ChatResponse, LlmError> {
        self.queue.next()
    }

    fn model_name(&self) -> &str {
        self.profile
            .as_deref()
            .map_or("replay", ChatModel::model_name)
    }

    fn provider_name(&self) -> &str {
        self.profile
            .as_deref()
            .map_or("replay", ChatModel::provider_name)
    }

    fn supports_images(&self) -> bool {
        self.profile
            .as_deref()
            .is_some_and(ChatModel::supports_images)
    }

    fn price(&self) -> Option<Price> {
        self.profile.as_deref().and_then(ChatModel::price)
    }

    fn context_window(&self) -> Option<u64> {
        self.profile.as_deref().and_then(ChatModel::context_window)
    }
}

#[cfg(test)]
mod tests {
    use agent_core::ToolCall;

    use super::*;

    #[tokio::test]
    async fn replies_come_in_order_moved_to_the_new_workspace_then_an_error() {
        let text = concat!(
            r#"{"kind":"session","session":{"agent":"swe","workspace":"/old/ws"}}"#,
            "\n",
            r#"{"kind":"task","task":"t"}"#,
            "\n",
            r#"{"kind":"model_response","seq":0,"response":{"content":"see /old/ws/a","tool_calls":[{"id":"c1","type":"function","function":{"name":"x","arguments":"{\"path\":\"/old/ws/a\"}"}}]}}"#,
            "\n",
            r#"{"kind":"model_error","seq":1,"error":"server error 500: boom"}"#,
            "\n",
        );
        let recording = Recording::from_reader(text.as_bytes()).unwrap();
        let model = recording.model(Some(Path::new("/new")));
        assert_eq!(model.total(), 2);
        let first = model.complete(ChatRequest::default()).await.unwrap();
        assert_eq!(first.content.as_deref(), Some("see /new/a"));
        assert_eq!(
            first.tool_calls,
            [ToolCall::new("c1", "x", r#"{"path":"/new/a"}"#)]
        );
        let second = model.complete(ChatRequest::default()).await.unwrap_err();
        assert!(second.to_string().contains("boom"), "{second}");
        assert!(!second.is_retryable());
        let third = model.complete(ChatRequest::default()).await.unwrap_err();
        assert!(
            third.to_string().contains("no reply for model request 3"),
            "{third}"
        );
        assert_eq!(model.served(), 2);
    }
}
