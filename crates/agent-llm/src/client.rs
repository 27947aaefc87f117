//! `LlmClient`: the HTTP client for OpenAI-compatible chat-completions endpoints.

use std::sync::Arc;

use agent_core::{AgentEvent, EventBus, Message, Role, ToolDefinition};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use serde_json::value::RawValue;
use tracing::{debug, warn};

use crate::endpoint::endpoint;
use crate::format::{WireContent, WirePart, wire_messages};
use crate::frame::{ClientFrame, TokenTotals};
use crate::http::{is_event_stream, status_error};
use crate::models::ModelProfile;
use crate::request::{Body, BodyMessages, StreamOptions, WireTool};
use crate::settings::{ApiType, LlmSettings};
use crate::tokens::TokenCounter;
use crate::wire::{StreamAssembler, parse_completion_reasoned};
use crate::written::{WrittenMessages, WrittenTools};
use crate::{ChatModel, ChatRequest, ChatResponse, LlmError, TokenUsage};

/// An image for [`LlmClient::ask_with_images`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageInput {
    /// A URL (`https://...` or a `data:` URL).
    Url(String),
    /// Base64 bytes (the MIME type is sniffed).
    Base64(String),
}

/// The client for one model at one endpoint. Cheap to share (`Arc<LlmClient>` as an
/// `Arc<dyn ChatModel>`); token totals are per client, never global.
pub struct LlmClient {
    frame: ClientFrame,
    url: String,
    /// `url` parsed once (reqwest would parse the text again for every request).
    target: reqwest::Url,
    http: reqwest::Client,
    /// The last tool definitions sent, as written in the body.
    tools: WrittenTools,
    /// The last body's messages, as written: the next request repeats most of them.
    messages: WrittenMessages,
}

impl std::fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmClient")
            .field("model", &self.frame.model_name())
            .field("url", &self.url)
            .field("profile", &self.frame.profile())
            .finish_non_exhaustive()
    }
}

impl LlmClient {
    /// Builds a client from settings.
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidRequest`] for an empty model, a base URL that is not http(s), or an
    /// HTTP client that cannot be built.
    pub fn new(settings: LlmSettings) -> Result<Self, LlmError> {
        let frame = ClientFrame::new(settings, |_, table| table.vision)?;
        let url = endpoint(frame.settings())?;
        let target = crate::endpoint::parsed(&url)?;
        let http = frame.http_client()?;
        Ok(Self {
            frame,
            url,
            target,
            http,
            tools: WrittenTools::default(),
            messages: WrittenMessages::default(),
        })
    }

    /// Emits [`agent_core::AgentEvent::Retry`] on `events` for every retry and, for streamed
    /// replies, [`agent_core::AgentEvent::TextDelta`] for each piece of text as it arrives
    /// (pass the agent's event bus).
    #[must_use]
    pub fn with_events(mut self, events: EventBus) -> Self {
        self.frame.set_events(events);
        self
    }

    /// The settings.
    #[must_use]
    pub fn settings(&self) -> &LlmSettings {
        self.frame.settings()
    }

    /// The resolved model profile (table values with the settings' overrides).
    #[must_use]
    pub fn profile(&self) -> ModelProfile {
        self.frame.profile()
    }

    /// The chat-completions URL requests go to.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.url
    }

    /// Cumulative token counts.
    #[must_use]
    pub fn totals(&self) -> TokenTotals {
        self.frame.totals()
    }

    /// The token counter (tokenizer tables load on first use).
    pub fn counter(&self) -> TokenCounter {
        self.frame.counter()
    }

    /// OpenManus's `ask_with_images`: a text completion where `images` are added to the last
    /// message, which must be from the user.
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidRequest`] when the model does not accept images or the last message is
    /// not a user message; otherwise as [`ChatModel::complete`].
    pub async fn ask_with_images(
        &self,
        messages: Vec<Message>,
        images: Vec<ImageInput>,
        system_msgs: Vec<Message>,
    ) -> Result<String, LlmError> {
        if !self.frame.supports_images() {
            return Err(LlmError::InvalidRequest(format!(
                "model {} does not support images (set `supports_images = true` if it does)",
                self.frame.model_name()
            )));
        }
        if messages.last().map(|m| m.role) != Some(Role::User) {
            return Err(LlmError::InvalidRequest(
                "the last message must be from the user to attach images".into(),
            ));
        }
        let mut formatted = wire_messages(system_msgs.iter().chain(&messages), true);
        if let Some(last) = formatted.last_mut() {
            let mut parts = match std::mem::replace(&mut last.content, WireContent::Null) {
                WireContent::Parts(parts) => parts,
                WireContent::Text(text) if !text.is_empty() => vec![WirePart::text(text)],
                _ => Vec::new(),
            };
            for image in &images {
                parts.push(match image {
                    ImageInput::Url(url) => WirePart::image_url(url.as_str()),
                    ImageInput::Base64(data) => WirePart::image(data),
                });
            }
            last.content = WireContent::Parts(parts);
        }
        let response = self
            .send(self.body(BodyMessages::Typed(formatted), None, None, None))
            .await?;
        match response.content {
            Some(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
            _ => Err(LlmError::MalformedResponse(
                "empty response from the model".into(),
            )),
        }
    }

    /// Checks the budget and the context window, sends with retries, and counts the tokens.
    async fn send(&self, body: Body<'_>) -> Result<ChatResponse, LlmError> {
        // Counting needs the tokenizer tables (~0.1 s to load the first time), so the request is
        // counted before it is sent only when a budget or a configured context window needs it;
        // otherwise the provider's `usage` is used, or an estimate made after the reply.
        let count_input = || {
            let counter = self.counter();
            let (messages, tools) = body.counted_parts();
            u64::try_from(counter.count_messages(&messages) + counter.count_tools(&tools))
                .unwrap_or(u64::MAX)
        };
        let input = self.frame.check_budget(count_input)?;
        // Serialised once; every attempt sends the same bytes.
        let bytes =
            Bytes::from(body.to_bytes().map_err(|e| {
                LlmError::InvalidRequest(format!("cannot serialise the request: {e}"))
            })?);
        let response = self
            .frame
            .retry(|attempt| {
                debug!(attempt, url = %self.url, "sending chat completion");
                self.send_once(bytes.clone())
            })
            .await?;
        let usage = match response.usage {
            Some(usage) => usage,
            None => {
                let counter = self.counter();
                let input = input.unwrap_or_else(count_input);
                let completion = counter
                    .count_text(response.content.as_deref().unwrap_or_default())
                    + response
                        .tool_calls
                        .iter()
                        .map(|c| {
                            counter.count_text(&c.function.name)
                                + counter.count_text(&c.function.arguments)
                        })
                        .sum::<usize>();
                // A reply cannot have been longer than it was allowed to be.
                let completion = u64::try_from(completion)
                    .unwrap_or(u64::MAX)
                    .min(u64::from(self.frame.settings().max_tokens));
                TokenUsage {
                    prompt_tokens: input,
                    completion_tokens: completion,
                    ..TokenUsage::default()
                }
            }
        };
        self.frame.record_usage(&usage);
        Ok(ChatResponse {
            usage: Some(usage),
            ..response
        })
    }

    /// The JSON body this client sends for `request` (messages formatted for the model, the
    /// per-model parameter rules applied), as it goes on the wire; the key is not part of it.
    #[must_use]
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        serde_json::to_value(self.request(request)).unwrap_or(Value::Null)
    }

    /// Every field of the body this client sends for `request` but `messages` and `tools`
    /// (`model`, the token limit, `temperature`, `tool_choice`, `stream`, ...), as an object.
    /// With [`wire_message`](Self::wire_message) and [`wire_tool`](Self::wire_tool) it lets a
    /// recorder write only what changed since the previous request instead of formatting the
    /// whole conversation again.
    #[must_use]
    pub fn request_params(&self, request: &ChatRequest) -> Value {
        let mut body = self.body(
            BodyMessages::Typed(Vec::new()),
            None,
            None,
            request.temperature,
        );
        body.tool_choice = request
            .tool_choice
            .map(|c| c.as_str())
            .filter(|_| !request.tools.is_empty());
        let mut value = serde_json::to_value(body).unwrap_or(Value::Null);
        if let Value::Object(fields) = &mut value {
            fields.remove("messages");
        }
        value
    }

    /// How this client sends `message` (`None`: it is not sent, e.g. an empty assistant turn);
    /// the body's `messages` are these, in order.
    #[must_use]
    pub fn wire_message(&self, message: &Message) -> Option<Value> {
        wire_messages([message], self.frame.supports_images())
            .first()
            .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
    }

    /// Each message of `request` (system messages first) as this client writes it in the body
    /// (`None`: it is not sent), from the same record of the last body that sending uses: a
    /// message written here is not written again when `request` is sent (one with an image is
    /// held until then), and a message the last body had at its place comes back as the same
    /// `Arc`. For a journal of the bodies.
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidRequest`]: a message cannot be serialised.
    pub fn written_messages(
        &self,
        request: &ChatRequest,
    ) -> Result<Vec<Option<Arc<RawValue>>>, LlmError> {
        self.messages
            .write_each(request.all_messages(), self.frame.supports_images(), true)
            .map_err(unserialisable)
    }

    /// How a tool goes into the body's `tools`.
    #[must_use]
    pub fn wire_tool(tool: &ToolDefinition) -> Value {
        serde_json::to_value(WireTool::from(tool)).unwrap_or(Value::Null)
    }

    /// The typed body for `request`, borrowing from it.
    fn request<'a>(&'a self, request: &'a ChatRequest) -> Body<'a> {
        self.body(
            BodyMessages::Typed(wire_messages(
                request.all_messages(),
                self.frame.supports_images(),
            )),
            self.tools.write(&request.tools),
            request.tool_choice.map(|c| c.as_str()),
            request.temperature,
        )
    }

    /// The body sent for `request`: [`request`](Self::request)'s bytes, with the messages
    /// that were in the previous body at the same place not written again.
    fn sent_body<'a>(&'a self, request: &'a ChatRequest) -> Result<Body<'a>, LlmError> {
        let messages = self
            .messages
            .write(request.all_messages(), self.frame.supports_images())
            .map_err(unserialisable)?;
        Ok(self.body(
            BodyMessages::Written(messages),
            self.tools.write(&request.tools),
            request.tool_choice.map(|c| c.as_str()),
            request.temperature,
        ))
    }

    /// The request body: per-model parameter rules applied from the profile.
    fn body<'a>(
        &'a self,
        messages: BodyMessages<'a>,
        tools: Option<Box<RawValue>>,
        tool_choice: Option<&'a str>,
        temperature: Option<f64>,
    ) -> Body<'a> {
        let settings = self.frame.settings();
        let reasoning = self.frame.profile().reasoning;
        let stream = settings.stream;
        Body {
            max_completion_tokens: reasoning.then_some(settings.max_tokens),
            max_tokens: (!reasoning).then_some(settings.max_tokens),
            messages,
            model: &settings.model,
            stream,
            stream_options: (stream && settings.stream_usage).then_some(StreamOptions {
                include_usage: true,
            }),
            temperature: (!reasoning).then(|| temperature.unwrap_or(settings.temperature)),
            tool_choice: tool_choice.filter(|_| tools.is_some()),
            tools,
        }
    }

    /// One HTTP attempt.
    async fn send_once(&self, body: Bytes) -> Result<ChatResponse, LlmError> {
        let settings = self.frame.settings();
        let mut request = self
            .http
            .post(self.target.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body);
        if let Some(timeout) = crate::settings::secs(settings.request_timeout_secs) {
            request = request.timeout(timeout);
        }
        let key = &settings.api_key;
        if !key.is_empty() {
            request = match settings.api_type {
                ApiType::Azure => request.header("api-key", key.expose()),
                _ => request.bearer_auth(key.expose()),
            };
        }
        let response = self
            .frame
            .first_byte(settings.stream, request.send())
            .await?
            .map_err(|e| self.frame.transport_error(&e, false))?;
        if !response.status().is_success() {
            return Err(status_error(response, key).await);
        }
        let limit = crate::settings::reply_limit(settings);
        if !is_event_stream(&response) {
            // Also the answer of servers that ignore `stream: true`.
            let bytes = crate::capped::read_capped(response, limit)
                .await
                .map_err(|e| self.frame.transport_error(&e, false))?
                .ok_or_else(|| {
                    LlmError::MalformedResponse(format!(
                        "the reply is larger than {limit} bytes, more than max_tokens = {} \
                         allows; it was not read",
                        settings.max_tokens
                    ))
                })?;
            let (response, reasoning) = parse_completion_reasoned(&bytes)?;
            if let (Some(events), Some(text)) = (self.frame.events(), reasoning) {
                events.emit(AgentEvent::ReasoningDelta { text });
            }
            return Ok(response);
        }
        let (body, cut) = crate::capped::capped(response.bytes_stream(), limit);
        let mut events = std::pin::pin!(crate::sse::data_events(body));
        let mut assembler = StreamAssembler::default();
        let mut done = false;
        let idle = crate::settings::secs(settings.read_timeout_secs);
        loop {
            let next = match idle {
                Some(idle) => match tokio::time::timeout(idle, events.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        // A silent stream is a hang, not a cut: it counts against the attempts
                        // given to timeouts.
                        debug!(
                            idle_secs = idle.as_secs_f64(),
                            received_tokens = assembler.received_tokens(),
                            "the stream went silent"
                        );
                        return Err(LlmError::Timeout(idle));
                    }
                },
                None => events.next().await,
            };
            let Some(event) = next else { break };
            let event = match event {
                Ok(event) => event,
                Err(e) => {
                    return Err(LlmError::stream_interrupted(
                        key.redact(&e.to_string()),
                        assembler.received_tokens(),
                    ));
                }
            };
            let data = event.trim();
            if data == "[DONE]" {
                done = true;
                break;
            }
            if !data.is_empty() {
                let before = assembler.content().len();
                let reasoned = assembler.reasoning().len();
                assembler.push(data)?;
                if let Some(events) = self.frame.events() {
                    if let Some(text) = assembler.reasoning().get(reasoned..)
                        && !text.is_empty()
                    {
                        events.emit(AgentEvent::ReasoningDelta {
                            text: text.to_owned(),
                        });
                    }
                    if let Some(text) = assembler.content().get(before..)
                        && !text.is_empty()
                    {
                        events.emit(AgentEvent::TextDelta {
                            text: text.to_owned(),
                        });
                    }
                }
            }
        }
        if cut.get() {
            warn!(
                limit,
                max_tokens = settings.max_tokens,
                "the streamed reply was cut: it was longer than max_tokens allows"
            );
            return Ok(assembler.cut(limit));
        }
        if !done && !assembler.finished() {
            return Err(LlmError::stream_interrupted(
                "the stream ended before the reply was complete",
                assembler.received_tokens(),
            ));
        }
        Ok(assembler.finish())
    }
}

/// A message that cannot be serialised, as a request error.
fn unserialisable(error: serde_json::Error) -> LlmError {
    LlmError::InvalidRequest(format!("cannot serialise a message: {error}"))
}

#[async_trait]
impl ChatModel for LlmClient {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        self.send(self.sent_body(&request)?).await
    }

    fn model_name(&self) -> &str {
        self.frame.model_name()
    }

    fn provider_name(&self) -> &str {
        self.frame.provider_name()
    }

    fn price(&self) -> Option<crate::Price> {
        self.frame.price()
    }

    fn context_window(&self) -> Option<u64> {
        self.frame.context_window()
    }

    fn supports_images(&self) -> bool {
        self.frame.supports_images()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_models_get_max_completion_tokens_and_no_temperature() {
        use agent_core::ToolChoice;
        use serde_json::json;
        let client = LlmClient::new(LlmSettings::new("o3-mini", "http://127.0.0.1:9/v1")).unwrap();
        let request = ChatRequest {
            tool_choice: Some(ToolChoice::Auto),
            temperature: Some(0.2),
            ..ChatRequest::new(vec![Message::user_message("hi")])
        };
        let body = client.request_body(&request);
        assert_eq!(body["max_completion_tokens"], json!(4096));
        assert!(body.get("max_tokens").is_none() && body.get("temperature").is_none());
        assert!(
            body.get("tool_choice").is_none(),
            "no tool_choice without tools"
        );

        let mut settings = LlmSettings::new("gpt-4o", "http://127.0.0.1:9/v1");
        settings.stream = false;
        let client = LlmClient::new(settings).unwrap();
        let tool = ToolDefinition::new("t", "a tool", json!({"type": "object"}));
        let request = ChatRequest::new(vec![]).with_tools(vec![tool], ToolChoice::Required);
        let body = client.request_body(&request);
        assert_eq!(body["max_tokens"], json!(4096));
        assert_eq!(body["temperature"], json!(1.0));
        assert_eq!(body["tool_choice"], json!("required"));
        assert_eq!(body["stream"], json!(false));
        assert!(body.get("stream_options").is_none());
    }

    #[test]
    fn the_typed_body_prints_the_bytes_of_a_value_body() {
        use agent_core::{ToolCall, ToolChoice};
        use serde_json::json;
        let client = LlmClient::new(LlmSettings::new("gpt-4o", "http://127.0.0.1:9/v1")).unwrap();
        let mut tool_reply = Message::tool_message("out", "bash", "c1");
        tool_reply.base64_image = Some("/9j/".into());
        let request = ChatRequest::new(vec![
            Message::user_message("hi \"there\"\n"),
            Message::from_tool_calls(vec![ToolCall::new("c1", "bash", r#"{"a":1}"#)], ""),
            tool_reply,
            Message::assistant_message("done"),
        ])
        .with_system(vec![Message::system_message("sys")])
        .with_tools(
            vec![ToolDefinition::new(
                "bash",
                "run",
                json!({"type": "object", "required": ["command"], "properties": {}}),
            )],
            ToolChoice::Auto,
        )
        .with_temperature(0.25);
        let typed = serde_json::to_string(&client.request(&request)).unwrap();
        let value = client.request_body(&request);
        // A Value object prints its keys sorted: the typed body must print the same bytes.
        assert_eq!(typed, value.to_string());
        assert!(
            typed
                .starts_with(r#"{"max_tokens":4096,"messages":[{"content":"sys","role":"system"}"#)
        );
        assert!(typed.contains(r#"{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"a\":1}","name":"bash"},"id":"c1","type":"function"}]}"#));
        assert!(typed.ends_with(r#""tool_choice":"auto","tools":[{"function":{"description":"run","name":"bash","parameters":{"properties":{},"required":["command"],"type":"object"}},"type":"function"}]}"#));
    }

    #[test]
    fn the_body_in_parts_reassembles_to_the_whole_body() {
        use agent_core::{ToolCall, ToolChoice};
        use serde_json::json;
        let client = LlmClient::new(LlmSettings::new("gpt-4o", "http://127.0.0.1:9/v1")).unwrap();
        let tools = vec![ToolDefinition::new(
            "bash",
            "run",
            json!({"type": "object"}),
        )];
        let request = ChatRequest::new(vec![
            Message::user_message("hi"),
            Message::assistant_message(""),
            Message::from_tool_calls(vec![ToolCall::new("c1", "bash", "{}")], ""),
            Message::tool_message("out", "bash", "c1"),
        ])
        .with_system(vec![Message::system_message("sys")])
        .with_tools(tools.clone(), ToolChoice::Auto);
        for request in [
            request.clone(),
            ChatRequest {
                tools: Vec::new().into(),
                ..request
            },
        ] {
            let mut parts = client.request_params(&request);
            let messages: Vec<Value> = request
                .all_messages()
                .filter_map(|m| client.wire_message(m))
                .collect();
            // The empty assistant turn is not sent.
            assert_eq!(messages.len(), 4);
            parts["messages"] = Value::Array(messages);
            if !request.tools.is_empty() {
                parts["tools"] = request.tools.iter().map(LlmClient::wire_tool).collect();
            }
            assert_eq!(parts, client.request_body(&request));
        }
    }

    #[test]
    fn settings_override_the_model_table() {
        let mut settings = LlmSettings::new("my-local-vision-model", "http://127.0.0.1:9/v1");
        assert!(!LlmClient::new(settings.clone()).unwrap().profile().vision);
        settings.supports_images = Some(true);
        settings.reasoning = Some(true);
        settings.context_window = Some(1000);
        let profile = LlmClient::new(settings).unwrap().profile();
        assert!(profile.vision && profile.reasoning);
        assert_eq!(profile.context_window, Some(1000));
        assert!(LlmClient::new(LlmSettings::new(" ", "http://x")).is_err());
    }
}
