//! Assembling a streamed Messages reply from its server-sent events (`message_start`,
//! `content_block_start`/`_delta`/`_stop`, `message_delta`, `message_stop`, `ping`, `error`).

use serde_json::Value;

use super::wire::{embedded_error, finish_reason, usage};
use crate::blocks::{Block, assemble};
use crate::{ChatResponse, LlmError, TokenUsage};

/// The reply so far.
#[derive(Debug, Default)]
pub(crate) struct MessageAssembler {
    blocks: Vec<(u64, Block)>,
    input: Option<TokenUsage>,
    output_tokens: u64,
    stop_reason: Option<String>,
    model: Option<String>,
    stopped: bool,
    received_tokens: bool,
}

impl MessageAssembler {
    /// Whether any text or tool input has arrived.
    pub(crate) fn received_tokens(&self) -> bool {
        self.received_tokens
    }

    /// Whether `message_stop` has arrived.
    pub(crate) fn finished(&self) -> bool {
        self.stopped
    }

    /// Takes one event's `data`; returns the text it adds to the reply, if any (for
    /// [`agent_core::AgentEvent::TextDelta`]).
    ///
    /// # Errors
    ///
    /// [`LlmError::MalformedResponse`] for data that is not JSON; an `error` event is classified
    /// like the HTTP error it stands for (`overloaded_error`: 529, retryable).
    pub(crate) fn push(&mut self, data: &str) -> Result<Option<String>, LlmError> {
        let event: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::MalformedResponse(format!("invalid JSON in a stream event: {e}"))
        })?;
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        let mut added_text = None;
        match event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "error" => return Err(embedded_error(event.get("error").unwrap_or(&Value::Null))),
            "message_start" => {
                if let Some(u) = event.pointer("/message/usage") {
                    self.input = Some(usage(u));
                }
                self.model = event
                    .pointer("/message/model")
                    .and_then(Value::as_str)
                    .filter(|m| !m.is_empty())
                    .map(str::to_owned);
            }
            "content_block_start" => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                let text = |key: &str| {
                    block
                        .get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let block = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let initial = text("text");
                        self.received_tokens |= !initial.is_empty();
                        if !initial.is_empty() {
                            added_text = Some(initial.clone());
                        }
                        Block::Text(initial)
                    }
                    Some("tool_use") => {
                        self.received_tokens = true;
                        Block::ToolUse {
                            id: text("id"),
                            name: text("name"),
                            json: String::new(),
                        }
                    }
                    _ => Block::Other,
                };
                self.blocks.push((index, block));
            }
            "content_block_delta" => {
                let delta = event.get("delta").unwrap_or(&Value::Null);
                let piece = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
                match self.blocks.iter_mut().rev().find(|(i, _)| *i == index) {
                    Some((_, Block::Text(text))) => {
                        let added = piece("text");
                        self.received_tokens |= !added.is_empty();
                        text.push_str(added);
                        if !added.is_empty() {
                            added_text = Some(added.to_owned());
                        }
                    }
                    Some((_, Block::ToolUse { json, .. })) => {
                        self.received_tokens = true;
                        json.push_str(piece("partial_json"));
                    }
                    Some((_, Block::Other)) => {}
                    None => {
                        return Err(LlmError::MalformedResponse(format!(
                            "a delta for content block {index}, which never started"
                        )));
                    }
                }
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(tokens) = event
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                {
                    self.output_tokens = tokens;
                }
            }
            "message_stop" => self.stopped = true,
            // `ping`, `content_block_stop` and events added later carry nothing we need.
            _ => {}
        }
        Ok(added_text)
    }

    /// The reply as far as it came before it was cut at `limit` bytes of the stream, marked
    /// as cut (`finish_reason` `length`, a note in its text).
    pub(crate) fn cut(self, limit: usize) -> ChatResponse {
        crate::capped::marked_cut(self.finish(), limit)
    }

    /// The assembled reply.
    pub(crate) fn finish(self) -> ChatResponse {
        let (content, tool_calls) = assemble(self.blocks);
        let usage = self.input.map(|input| TokenUsage {
            completion_tokens: self.output_tokens,
            ..input
        });
        ChatResponse {
            content,
            tool_calls,
            usage,
            finish_reason: self.stop_reason.as_deref().map(finish_reason),
            model: self.model,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::ToolCall;

    #[test]
    fn text_and_a_tool_call_in_pieces() {
        let events = [
            r#"{"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":12,"cache_creation_input_tokens":100,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"check."}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"bash","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"comm"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"and\": \"ls\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let mut assembler = MessageAssembler::default();
        let mut deltas = Vec::new();
        for event in events {
            deltas.extend(assembler.push(event).unwrap());
        }
        // Only the text, piece by piece: not the tool's input.
        assert_eq!(deltas, ["Let me ", "check."]);
        assert!(assembler.finished() && assembler.received_tokens());
        let reply = assembler.finish();
        assert_eq!(reply.content.as_deref(), Some("Let me check."));
        assert_eq!(
            reply.tool_calls,
            vec![ToolCall::new("toolu_1", "bash", r#"{"command": "ls"}"#)]
        );
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(reply.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
        assert_eq!(
            reply.usage,
            Some(TokenUsage {
                prompt_tokens: 112,
                completion_tokens: 30,
                ..TokenUsage::default()
            })
        );
    }

    #[test]
    fn an_error_event_is_classified() {
        let mut assembler = MessageAssembler::default();
        let error = assembler
            .push(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
            .unwrap_err();
        assert!(error.is_retryable(), "{error:?}");
        let error = assembler
            .push(r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#)
            .unwrap_err();
        assert!(matches!(error, LlmError::InvalidRequest(_)), "{error:?}");
    }
}
