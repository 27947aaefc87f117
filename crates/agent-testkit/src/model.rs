//! The scripted chat model.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use agent_core::{Message, Role, ToolCall, check_tool_pairing};
use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError, TokenUsage};
use async_trait::async_trait;
use tokio::sync::watch;

/// A tool call with raw JSON `arguments`.
pub fn tool_call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum ScriptedReply {
    /// Answer with this response.
    Respond(ChatResponse),
    /// Fail with this error.
    Fail(LlmError),
    /// Never answer (until the caller gives up, e.g. on cancellation).
    Hang,
}

/// Checks a request the way a strict OpenAI-compatible provider does: every `tool` message
/// answers a call of the assistant message before it and every call is answered; no message is
/// empty (a user/system/tool message needs text or an image, an assistant message needs text or
/// tool calls); `tool_choice` only with tools; tool names unique.
///
/// # Errors
///
/// [`LlmError::InvalidRequest`] naming the first problem.
pub fn validate_request(request: &ChatRequest) -> Result<(), LlmError> {
    let messages: Vec<Message> = request.all_messages().cloned().collect();
    if request.messages.is_empty() {
        return Err(LlmError::InvalidRequest(
            "messages must not be empty".into(),
        ));
    }
    check_tool_pairing(&messages, false).map_err(|e| LlmError::InvalidRequest(e.to_string()))?;
    for (index, message) in messages.iter().enumerate() {
        let empty = match message.role {
            Role::Assistant => message.text().is_empty() && !message.has_tool_calls(),
            _ => message.text().is_empty() && message.base64_image.is_none(),
        };
        if empty {
            return Err(LlmError::InvalidRequest(format!(
                "message {index} ({}) is empty",
                message.role
            )));
        }
    }
    if request.tool_choice.is_some() && request.tools.is_empty() {
        return Err(LlmError::InvalidRequest(
            "tool_choice is set but no tools are given".into(),
        ));
    }
    let mut names = request.tool_names();
    names.sort_unstable();
    if let Some(pair) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(LlmError::InvalidRequest(format!(
            "duplicate tool name '{}'",
            pair[0]
        )));
    }
    Ok(())
}

/// A chat model that plays back scripted replies and records the requests it receives.
#[derive(Debug)]
pub struct ScriptedModel {
    replies: Mutex<VecDeque<ScriptedReply>>,
    requests: Mutex<Vec<ChatRequest>>,
    received: watch::Sender<usize>,
    strict: bool,
    images: bool,
}

impl Default for ScriptedModel {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedModel {
    /// An empty, strict script.
    #[must_use]
    pub fn new() -> Self {
        Self {
            replies: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            received: watch::Sender::new(0),
            strict: true,
            images: false,
        }
    }

    /// Makes the model report that it reads images ([`ChatModel::supports_images`]).
    #[must_use]
    pub fn with_images(mut self, images: bool) -> Self {
        self.images = images;
        self
    }

    /// A script that does not validate requests (to observe what a broken agent would send).
    #[must_use]
    pub fn lenient() -> Self {
        Self {
            strict: false,
            ..Self::new()
        }
    }

    /// Queues a reply.
    pub fn push(&self, reply: ScriptedReply) -> &Self {
        self.replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(reply);
        self
    }

    /// Queues a text-only reply.
    pub fn push_text(&self, text: &str) -> &Self {
        self.push(ScriptedReply::Respond(ChatResponse::text(text)))
    }

    /// Queues a reply with tool calls and optional text (`""`: no text).
    pub fn push_tool_calls(
        &self,
        content: &str,
        calls: impl IntoIterator<Item = ToolCall>,
    ) -> &Self {
        let content = (!content.is_empty()).then(|| content.to_owned());
        self.push(ScriptedReply::Respond(ChatResponse::tool_calls(
            content,
            calls.into_iter().collect(),
        )))
    }

    /// Queues any response (for example one with usage figures attached).
    pub fn push_response(&self, response: ChatResponse) -> &Self {
        self.push(ScriptedReply::Respond(response))
    }

    /// Queues an error.
    pub fn push_error(&self, error: LlmError) -> &Self {
        self.push(ScriptedReply::Fail(error))
    }

    /// Queues a reply that never comes.
    pub fn push_hang(&self) -> &Self {
        self.push(ScriptedReply::Hang)
    }

    /// Every request received so far, in order.
    #[must_use]
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replies not yet used.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Waits until at least `count` requests have arrived.
    pub async fn wait_for_requests(&self, count: usize) {
        let mut rx = self.received.subscribe();
        // The sender lives in `self`, so `wait_for` only ends when the count is reached.
        let _ = rx.wait_for(|n| *n >= count).await;
    }

    /// A usage figure for tests of token accounting.
    #[must_use]
    pub fn usage(prompt_tokens: u64, completion_tokens: u64) -> TokenUsage {
        TokenUsage {
            prompt_tokens,
            completion_tokens,
            ..TokenUsage::default()
        }
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let validation = if self.strict {
            validate_request(&request)
        } else {
            Ok(())
        };
        let number = {
            let mut requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
            requests.push(request);
            requests.len()
        };
        self.received.send_replace(number);
        validation?;
        let reply = self
            .replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        match reply {
            Some(ScriptedReply::Respond(response)) => Ok(response),
            Some(ScriptedReply::Fail(error)) => Err(error),
            Some(ScriptedReply::Hang) => std::future::pending().await,
            None => Err(LlmError::InvalidRequest(format!(
                "scripted model has no reply left for request #{number}"
            ))),
        }
    }

    fn model_name(&self) -> &str {
        "scripted"
    }

    fn supports_images(&self) -> bool {
        self.images
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest::new(messages)
    }

    #[tokio::test]
    async fn replies_come_in_order_and_requests_are_recorded() {
        let model = ScriptedModel::new();
        model
            .push_text("one")
            .push_error(LlmError::TokenLimitExceeded("budget".into()));
        let first = model
            .complete(request(vec![Message::user_message("a")]))
            .await
            .unwrap();
        assert_eq!(first.content.as_deref(), Some("one"));
        let second = model
            .complete(request(vec![Message::user_message("b")]))
            .await
            .unwrap_err();
        assert_eq!(second, LlmError::TokenLimitExceeded("budget".into()));
        let third = model
            .complete(request(vec![Message::user_message("c")]))
            .await
            .unwrap_err();
        assert!(
            third.to_string().contains("no reply left for request #3"),
            "{third}"
        );
        let seen: Vec<String> = model
            .requests()
            .iter()
            .map(|r| r.messages[0].text().to_owned())
            .collect();
        assert_eq!(seen, ["a", "b", "c"]);
    }

    #[tokio::test]
    async fn strict_validation_rejects_what_providers_reject() {
        let model = ScriptedModel::new();
        model.push_text("never used");
        let orphan = request(vec![
            Message::user_message("u"),
            Message::tool_message("x", "t", "id"),
        ]);
        let err = model.complete(orphan).await.unwrap_err();
        assert!(matches!(err, LlmError::InvalidRequest(_)), "{err}");

        let unanswered = request(vec![
            Message::user_message("u"),
            Message::from_tool_calls(vec![tool_call("a", "t", "{}")], ""),
        ]);
        assert!(model.complete(unanswered).await.is_err());

        let empty_assistant = request(vec![
            Message::user_message("u"),
            Message::assistant_message(""),
        ]);
        assert!(model.complete(empty_assistant).await.is_err());

        let mut choice_without_tools = request(vec![Message::user_message("u")]);
        choice_without_tools.tool_choice = Some(agent_core::ToolChoice::Auto);
        assert!(model.complete(choice_without_tools).await.is_err());

        assert_eq!(model.remaining(), 1, "rejected requests consume no reply");
        let lenient = ScriptedModel::lenient();
        lenient.push_text("ok");
        let orphan = request(vec![Message::tool_message("x", "t", "id")]);
        assert!(lenient.complete(orphan).await.is_ok());
    }
}
