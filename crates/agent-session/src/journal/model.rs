//! A [`ChatModel`] that journals every request and reply before passing them on.

use std::sync::Arc;

use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmError, Model};
use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::format::{KIND_ERROR, KIND_RESPONSE, SEQ};
use super::handle::JournalHandle;

/// A model that records every request and reply in the journal, then passes them on.
///
/// Requests become linear `model_request` lines (see [`journal`](crate::journal)); replies
/// become `model_response` lines (content, tool calls, usage, finish reason) or `model_error`
/// lines, with the `seq` of their request.
pub struct JournaledModel {
    inner: Arc<dyn ChatModel>,
    journal: JournalHandle,
    wire: Option<Arc<Model>>,
}

impl JournaledModel {
    /// Wraps `inner`. Without [`with_wire_body`](Self::with_wire_body), a request is journaled
    /// as `{"messages": [system messages, then the conversation], "tools", "tool_choice",
    /// "temperature"}` in the shapes of `agent-core` and `agent-llm`, not as wire JSON.
    pub fn new(inner: Arc<dyn ChatModel>, journal: JournalHandle) -> Self {
        Self {
            inner,
            journal,
            wire: None,
        }
    }

    /// Journals each request as the JSON body `client` sends (model, max_tokens, the formatted
    /// messages, ...; in text mode, the request as converted to text), so that [`JournalReader`](super::JournalReader) rebuilds exactly what
    /// went over the wire.
    #[must_use]
    pub fn with_wire_body(mut self, client: Arc<Model>) -> Self {
        self.wire = Some(client);
        self
    }

    /// The body journaled for `request`.
    fn body(&self, request: &ChatRequest) -> Value {
        if let Some(client) = &self.wire {
            return client.request_body(request);
        }
        let mut body = Map::new();
        let messages = request
            .all_messages()
            .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
            .collect();
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(choice) = request.tool_choice {
            body.insert("tool_choice".into(), json!(choice));
        }
        if let Some(temperature) = request.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        Value::Object(body)
    }
}

#[async_trait]
impl ChatModel for JournaledModel {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let seq = self.journal.request(self.body(&request));
        let result = self.inner.complete(request).await;
        match &result {
            Ok(response) => self
                .journal
                .write(KIND_RESPONSE, json!({ SEQ: seq, "response": response })),
            Err(error) => self
                .journal
                .write(KIND_ERROR, json!({ SEQ: seq, "error": error.to_string() })),
        }
        result
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    fn supports_images(&self) -> bool {
        self.inner.supports_images()
    }
}
