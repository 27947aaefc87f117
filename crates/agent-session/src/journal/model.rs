//! A [`ChatModel`] that journals every request and reply before passing them on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agent_core::{Message, ToolChoice, ToolDefinition};
use agent_llm::{ChatModel, ChatRequest, ChatResponse, LlmClient, LlmError, Model};
use async_trait::async_trait;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::format::{KIND_ERROR, SEQ};
use super::handle::{JournalHandle, RequestDelta, ToolsDelta};

/// A model that records every request and reply in the journal, then passes them on.
///
/// Requests become linear `model_request` lines (see [`journal`](crate::journal)); replies
/// become `model_response` lines (content, tool calls, usage, finish reason) or `model_error`
/// lines, with the `seq` of their request.
///
/// Each request is compared with the previous one of this model, and only the messages after
/// their common beginning are formatted for the journal: a run's requests repeat the whole
/// conversation, and formatting it all again at every step made journaling cost grow with the
/// square of the run's length.
pub struct JournaledModel {
    inner: Arc<dyn ChatModel>,
    journal: JournalHandle,
    wire: Option<Arc<Model>>,
    stream: u64,
    sent: Mutex<Sent>,
}

/// The previous request of a [`JournaledModel`], as needed to find what changed.
#[derive(Default)]
struct Sent {
    /// Its messages (system messages first), when journaled in the shapes of `agent-core`.
    messages: Vec<Message>,
    /// For each of them, whether it went into the body (an empty assistant turn does not).
    in_body: Vec<bool>,
    /// Its messages as an OpenAI-compatible client wrote them (`None`: not sent), when
    /// journaled as the wire body: compared by their JSON, most often the very same `Arc`.
    written: Vec<Option<Arc<RawValue>>>,
    /// Its tools, when it had some.
    tools: Option<Arc<[ToolDefinition]>>,
    /// Its params as written, with what they were written from (the same step after step).
    params: Option<(ParamsOf, Arc<RawValue>)>,
}

/// What a request's params are written from: the client (its settings; by address), the
/// tool choice, the temperature (its bits) and whether tools are offered.
type ParamsOf = (Option<usize>, Option<ToolChoice>, Option<u64>, bool);

/// Numbers the journaled models of the process, so that each keeps its own previous request
/// in the journal's encoder.
static STREAMS: AtomicU64 = AtomicU64::new(0);

impl JournaledModel {
    /// Wraps `inner`. Without [`with_wire_body`](Self::with_wire_body), a request is journaled
    /// as `{"messages": [system messages, then the conversation], "tools", "tool_choice",
    /// "temperature"}` in the shapes of `agent-core` and `agent-llm`, not as wire JSON.
    pub fn new(inner: Arc<dyn ChatModel>, journal: JournalHandle) -> Self {
        Self {
            inner,
            journal,
            wire: None,
            stream: STREAMS.fetch_add(1, Ordering::Relaxed),
            sent: Mutex::default(),
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

    /// Writes the `model_request` line of `request` and returns its number.
    fn journal_request(&self, request: &ChatRequest) -> u64 {
        if !self.journal.is_open() {
            return self.journal.request(Value::Null);
        }
        // The lock is held until the entry is queued, so that two requests of this model
        // reach the writer in the order their deltas were computed.
        let mut sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        let openai = match &self.wire {
            Some(model) => match model.native_openai(request) {
                Some(client) => Some(client),
                None => {
                    // Another provider's body, or text mode: formatted whole, and the next
                    // delta starts from nothing.
                    *sent = Sent::default();
                    return self.journal.request(model.request_body(request));
                }
            },
            None => None,
        };
        let (keep_in_body, new_messages) = match openai {
            Some(client) => match client.written_messages(request) {
                Ok(written) => written_delta(&mut sent, written),
                Err(_) => {
                    // A message that cannot be serialised fails the request itself; the line
                    // says what there is of it, and the next delta starts from nothing.
                    *sent = Sent::default();
                    return self.journal.request(client.request_body(request));
                }
            },
            None => message_delta(&mut sent, request),
        };
        let tools = if request.tools.is_empty() {
            sent.tools = None;
            ToolsDelta::Absent
        } else if sent.tools.as_ref().is_some_and(|sent| {
            // An agent shares one list step after step: the same list is not compared schema
            // by schema.
            Arc::ptr_eq(sent, &request.tools) || *sent == request.tools
        }) {
            ToolsDelta::Same
        } else {
            sent.tools = Some(request.tools.clone());
            ToolsDelta::New(
                request
                    .tools
                    .iter()
                    .map(|t| tool_value(openai, t))
                    .collect(),
            )
        };
        let of = (
            openai.map(|client| std::ptr::from_ref(client) as usize),
            request.tool_choice,
            request.temperature.map(f64::to_bits),
            request.tools.is_empty(),
        );
        let params = match &sent.params {
            Some((before, params)) if *before == of => Arc::clone(params),
            _ => {
                let params = match params_value(openai, request) {
                    params @ Value::Object(_) => params,
                    _ => Value::Object(Map::new()),
                };
                let params = match super::encode::written(&params) {
                    Some(params) => params,
                    // A `Value`'s text is always JSON; were it not, the line says nothing
                    // of this request, and the next delta starts from nothing.
                    None => {
                        *sent = Sent::default();
                        return self.journal.request(Value::Null);
                    }
                };
                sent.params = Some((of, Arc::clone(&params)));
                params
            }
        };
        self.journal.request_delta(RequestDelta {
            stream: self.stream,
            params,
            keep: keep_in_body,
            new_messages,
            tools,
        })
    }
}

/// The delta of a request whose messages the client wrote (`written`, one per message): how
/// many of the body's messages are the previous request's (the leading ones whose JSON is the
/// same), and the JSON of the others.
fn written_delta(
    sent: &mut Sent,
    written: Vec<Option<Arc<RawValue>>>,
) -> (usize, Vec<Arc<RawValue>>) {
    sent.messages.clear();
    sent.in_body.clear();
    let same = |before: &Option<Arc<RawValue>>, now: &Option<Arc<RawValue>>| match (before, now) {
        (None, None) => true,
        (Some(before), Some(now)) => Arc::ptr_eq(before, now) || before.get() == now.get(),
        _ => false,
    };
    let keep = sent
        .written
        .iter()
        .zip(&written)
        .take_while(|(before, now)| same(before, now))
        .count();
    let (kept, new) = written.split_at(keep);
    let keep_in_body = kept.iter().flatten().count();
    let new_messages = new.iter().flatten().cloned().collect();
    sent.written = written;
    (keep_in_body, new_messages)
}

/// The delta of a request journaled in the shapes of `agent-core`: the messages compared with
/// the previous request's, each new one printed as a `Value` prints it (its keys sorted, as
/// journals hold them).
fn message_delta(sent: &mut Sent, request: &ChatRequest) -> (usize, Vec<Arc<RawValue>>) {
    sent.written.clear();
    let keep = sent
        .messages
        .iter()
        .zip(request.all_messages())
        .take_while(|(before, now)| before == now)
        .count();
    sent.messages.truncate(keep);
    sent.in_body.truncate(keep);
    let keep_in_body = sent.in_body.iter().filter(|sent| **sent).count();
    let mut new_messages = Vec::new();
    for message in request.all_messages().skip(keep) {
        let json = serde_json::to_value(message)
            .and_then(|value| serde_json::value::to_raw_value(&value))
            .ok();
        sent.in_body.push(json.is_some());
        sent.messages.push(message.clone());
        new_messages.extend(json.map(Arc::from));
    }
    (keep_in_body, new_messages)
}

/// How `tool` is in the journaled body.
fn tool_value(openai: Option<&LlmClient>, tool: &ToolDefinition) -> Value {
    match openai {
        Some(_) => LlmClient::wire_tool(tool),
        None => serde_json::to_value(tool).unwrap_or(Value::Null),
    }
}

/// Every field of the journaled body but `messages` and `tools`.
fn params_value(openai: Option<&LlmClient>, request: &ChatRequest) -> Value {
    if let Some(client) = openai {
        return client.request_params(request);
    }
    let mut body = Map::new();
    if let Some(choice) = request.tool_choice {
        body.insert("tool_choice".into(), json!(choice));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    Value::Object(body)
}

#[async_trait]
impl ChatModel for JournaledModel {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let seq = self.journal_request(&request);
        let result = self.inner.complete(request).await;
        match &result {
            Ok(response) => self.journal.reply(seq, response),
            Err(error) => self
                .journal
                .write(KIND_ERROR, json!({ SEQ: seq, "error": error.to_string() })),
        }
        result
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }

    fn price(&self) -> Option<agent_llm::Price> {
        self.inner.price()
    }

    fn context_window(&self) -> Option<u64> {
        self.inner.context_window()
    }

    fn supports_images(&self) -> bool {
        self.inner.supports_images()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn json(text: &str) -> Option<Arc<RawValue>> {
        Some(Arc::from(RawValue::from_string(text.to_owned()).unwrap()))
    }

    fn texts(messages: &[Arc<RawValue>]) -> Vec<&str> {
        messages.iter().map(|m| m.get()).collect()
    }

    #[test]
    fn the_written_delta_keeps_the_leading_messages_with_the_same_json() {
        let mut sent = Sent::default();
        let system = json(r#"{"role":"system"}"#);
        let task = json(r#"{"role":"user","content":"task"}"#);
        // The first request: everything is new; a message not sent is not in it.
        let (keep, new) = written_delta(&mut sent, vec![system.clone(), task.clone(), None]);
        assert_eq!(keep, 0);
        assert_eq!(
            texts(&new),
            [
                system.as_deref().unwrap().get(),
                task.as_deref().unwrap().get()
            ]
        );
        // The same messages (one the very same Arc, one an equal copy, as another request's
        // write would give), one more: only that one is new; the unsent one counts for nothing.
        let reply = json(r#"{"role":"assistant","content":"ok"}"#);
        let copy = json(task.as_deref().unwrap().get());
        let (keep, new) = written_delta(&mut sent, vec![system.clone(), copy, None, reply.clone()]);
        assert_eq!(keep, 2);
        assert_eq!(texts(&new), [reply.as_deref().unwrap().get()]);
        // A message changed in the middle (a trimmed output): it and all after it are new.
        let trimmed = json(r#"{"role":"user","content":"[not resent]"}"#);
        let (keep, new) = written_delta(
            &mut sent,
            vec![system, trimmed.clone(), None, reply.clone()],
        );
        assert_eq!(keep, 1);
        assert_eq!(
            texts(&new),
            [
                trimmed.as_deref().unwrap().get(),
                reply.as_deref().unwrap().get()
            ]
        );
    }
}
