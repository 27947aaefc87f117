//! Assembling a ConverseStream reply from its events (`messageStart`, `contentBlockStart` for
//! tool use, `contentBlockDelta` with text or a piece of a tool's input JSON,
//! `contentBlockStop`, `messageStop` with the stop reason, then `metadata` with the usage), and
//! the stream's exceptions as the crate's errors.
//!
//! The SDK decodes the `application/vnd.amazon.eventstream` framing (prelude, headers, both
//! CRC32s); this module sees typed events.

use aws_sdk_bedrockruntime::error::SdkError;
use aws_sdk_bedrockruntime::types::error::ConverseStreamOutputError;
use aws_sdk_bedrockruntime::types::{
    ContentBlockDelta, ContentBlockStart, ConverseStreamOutput, TokenUsage as BedrockUsage,
};
use aws_smithy_types::event_stream::RawMessage;

use super::wire::finish_reason;
use crate::blocks::{Block, assemble};
use crate::error::error_chain;
use crate::{ChatResponse, LlmError, TokenUsage, classify};

/// The reply so far.
#[derive(Debug, Default)]
pub(crate) struct StreamAssembler {
    blocks: Vec<(i32, Block)>,
    usage: Option<TokenUsage>,
    stop_reason: Option<String>,
    stopped: bool,
    received_tokens: bool,
    /// Bytes of text and tool input so far (what a reply's limit counts).
    received_bytes: usize,
}

/// Our usage from Bedrock's (cache reads and writes are input, as in the Converse reply).
pub(crate) fn usage(u: &BedrockUsage) -> TokenUsage {
    let count = |n: i32| u64::try_from(n).unwrap_or(0);
    let cached = count(u.cache_read_input_tokens.unwrap_or(0));
    let input = count(u.input_tokens)
        .saturating_add(cached)
        .saturating_add(count(u.cache_write_input_tokens.unwrap_or(0)));
    let output = count(u.output_tokens);
    TokenUsage {
        prompt_tokens: input,
        completion_tokens: output,
        cached_prompt_tokens: cached,
        ..TokenUsage::default()
    }
}

impl StreamAssembler {
    /// Whether any text or tool input has arrived.
    pub(crate) fn received_tokens(&self) -> bool {
        self.received_tokens
    }

    /// Bytes of text and tool input received so far.
    pub(crate) fn received_bytes(&self) -> usize {
        self.received_bytes
    }

    /// The reply as far as it came before it was cut at `limit` bytes, marked as cut
    /// (`finish_reason` `length`, a note in its text).
    pub(crate) fn cut(self, limit: usize) -> ChatResponse {
        crate::capped::marked_cut(self.finish(), limit)
    }

    /// Whether `messageStop` has arrived (`metadata` follows it).
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    fn block(&mut self, index: i32) -> Option<&mut Block> {
        self.blocks
            .iter_mut()
            .rev()
            .find(|(i, _)| *i == index)
            .map(|(_, block)| block)
    }

    /// Takes one event; returns the text it adds to the reply, if any (for
    /// [`agent_core::AgentEvent::TextDelta`]).
    ///
    /// # Errors
    ///
    /// [`LlmError::MalformedResponse`] for a tool-input delta to a block that is not a tool
    /// call, or text for a tool call.
    pub(crate) fn push(&mut self, event: ConverseStreamOutput) -> Result<Option<String>, LlmError> {
        match event {
            ConverseStreamOutput::ContentBlockStart(start) => {
                let block = match start.start {
                    Some(ContentBlockStart::ToolUse(tool)) => {
                        self.received_tokens = true;
                        Block::ToolUse {
                            id: tool.tool_use_id,
                            name: tool.name,
                            json: String::new(),
                        }
                    }
                    _ => Block::Other,
                };
                self.blocks.push((start.content_block_index, block));
            }
            ConverseStreamOutput::ContentBlockDelta(delta) => {
                let index = delta.content_block_index;
                match delta.delta {
                    Some(ContentBlockDelta::Text(piece)) => {
                        // Text blocks have no start event: the first delta opens them.
                        match self.block(index) {
                            Some(Block::Text(text)) => text.push_str(&piece),
                            Some(Block::ToolUse { .. }) => {
                                return Err(LlmError::MalformedResponse(format!(
                                    "text for content block {index}, a tool call"
                                )));
                            }
                            Some(Block::Other) => return Ok(None),
                            None => self.blocks.push((index, Block::Text(piece.clone()))),
                        }
                        self.received_bytes = self.received_bytes.saturating_add(piece.len());
                        if piece.is_empty() {
                            return Ok(None);
                        }
                        self.received_tokens = true;
                        return Ok(Some(piece));
                    }
                    Some(ContentBlockDelta::ToolUse(tool)) => match self.block(index) {
                        Some(Block::ToolUse { json, .. }) => {
                            json.push_str(&tool.input);
                            self.received_tokens = true;
                            self.received_bytes =
                                self.received_bytes.saturating_add(tool.input.len());
                        }
                        _ => {
                            return Err(LlmError::MalformedResponse(format!(
                                "tool input for content block {index}, which is not a tool call"
                            )));
                        }
                    },
                    // Reasoning, citations and deltas added later carry nothing we use.
                    _ => {}
                }
            }
            ConverseStreamOutput::MessageStop(stop) => {
                self.stopped = true;
                self.stop_reason = Some(finish_reason(stop.stop_reason.as_str()));
            }
            ConverseStreamOutput::Metadata(metadata) => {
                if let Some(u) = &metadata.usage {
                    self.usage = Some(usage(u));
                }
            }
            // `messageStart`, `contentBlockStop` and events added later carry nothing we need.
            _ => {}
        }
        Ok(None)
    }

    /// The assembled reply.
    pub(crate) fn finish(self) -> ChatResponse {
        let (content, tool_calls) = assemble(self.blocks);
        ChatResponse {
            content,
            tool_calls,
            usage: self.usage,
            finish_reason: self.stop_reason,
            // ConverseStream does not say which model answered.
            model: None,
        }
    }
}

/// A failure while reading the stream as the crate's error. Exceptions the stream carries are
/// classified like the HTTP errors they stand for (throttling as 429, unavailable as 503, an
/// internal error as 500: retried; a validation error as 400: not retried); a model stream
/// error, a connection cut and a stream that ends part-way through a frame are
/// [`LlmError::StreamInterrupted`] (retried as a new request); a frame that fails its checksum
/// or cannot be decoded is [`LlmError::MalformedResponse`].
pub(crate) fn stream_error(
    error: &SdkError<ConverseStreamOutputError, RawMessage>,
    received_tokens: bool,
    redact: impl Fn(&str) -> String,
) -> LlmError {
    match error {
        SdkError::ServiceError(context) => {
            let (status, message) = match context.err() {
                ConverseStreamOutputError::ThrottlingException(e) => (429, e.message.clone()),
                ConverseStreamOutputError::ServiceUnavailableException(e) => {
                    (503, e.message.clone())
                }
                ConverseStreamOutputError::InternalServerException(e) => (500, e.message.clone()),
                ConverseStreamOutputError::ValidationException(e) => (400, e.message.clone()),
                ConverseStreamOutputError::ModelStreamErrorException(e) => {
                    let mut message = e.message.clone().unwrap_or_default();
                    if let Some(original) = &e.original_message {
                        message = format!("{message} ({original})");
                    }
                    return LlmError::stream_interrupted(
                        redact(&format!("the model's stream failed: {message}")),
                        received_tokens,
                    );
                }
                // An exception this SDK does not know: the service failed.
                other => (500, Some(error_chain(other))),
            };
            let message = message.unwrap_or_default();
            let body = serde_json::json!({"error": {"message": redact(&message)}});
            classify(status, |_| None, &body.to_string())
        }
        // The stream ended part-way through a frame.
        SdkError::ResponseError(context)
            if matches!(context.raw(), RawMessage::Invalid(Some(_))) =>
        {
            LlmError::stream_interrupted(redact(&error_chain(error)), received_tokens)
        }
        SdkError::ResponseError(_) => LlmError::MalformedResponse(redact(&format!(
            "an undecodable event-stream frame: {}",
            error_chain(error)
        ))),
        _ => LlmError::stream_interrupted(redact(&error_chain(error)), received_tokens),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::ToolCall;
    use aws_sdk_bedrockruntime::types::{
        ContentBlockDeltaEvent, ContentBlockStartEvent, ConverseStreamMetadataEvent,
        ConverseStreamMetrics, MessageStartEvent, MessageStopEvent, StopReason, ToolUseBlockDelta,
        ToolUseBlockStart,
    };

    fn text(index: i32, piece: &str) -> ConverseStreamOutput {
        ConverseStreamOutput::ContentBlockDelta(
            ContentBlockDeltaEvent::builder()
                .content_block_index(index)
                .delta(ContentBlockDelta::Text(piece.into()))
                .build()
                .unwrap(),
        )
    }

    fn input(index: i32, piece: &str) -> ConverseStreamOutput {
        ConverseStreamOutput::ContentBlockDelta(
            ContentBlockDeltaEvent::builder()
                .content_block_index(index)
                .delta(ContentBlockDelta::ToolUse(
                    ToolUseBlockDelta::builder().input(piece).build().unwrap(),
                ))
                .build()
                .unwrap(),
        )
    }

    #[test]
    fn text_and_a_tool_call_in_pieces() {
        let events = [
            ConverseStreamOutput::MessageStart(
                MessageStartEvent::builder()
                    .role(aws_sdk_bedrockruntime::types::ConversationRole::Assistant)
                    .build()
                    .unwrap(),
            ),
            text(0, "Let me "),
            text(0, "check."),
            ConverseStreamOutput::ContentBlockStart(
                ContentBlockStartEvent::builder()
                    .content_block_index(1)
                    .start(ContentBlockStart::ToolUse(
                        ToolUseBlockStart::builder()
                            .tool_use_id("tooluse_1")
                            .name("bash")
                            .build()
                            .unwrap(),
                    ))
                    .build()
                    .unwrap(),
            ),
            input(1, "{\"comm"),
            input(1, "and\": \"ls\"}"),
            ConverseStreamOutput::MessageStop(
                MessageStopEvent::builder()
                    .stop_reason(StopReason::ToolUse)
                    .build()
                    .unwrap(),
            ),
            ConverseStreamOutput::Metadata(
                ConverseStreamMetadataEvent::builder()
                    .usage(
                        BedrockUsage::builder()
                            .input_tokens(12)
                            .output_tokens(30)
                            .total_tokens(42)
                            .cache_read_input_tokens(100)
                            .build()
                            .unwrap(),
                    )
                    .metrics(
                        ConverseStreamMetrics::builder()
                            .latency_ms(1)
                            .build()
                            .unwrap(),
                    )
                    .build(),
            ),
        ];
        let mut assembler = StreamAssembler::default();
        let mut deltas = Vec::new();
        for event in events {
            deltas.extend(assembler.push(event).unwrap());
        }
        assert_eq!(deltas, ["Let me ", "check."]);
        assert!(assembler.stopped() && assembler.received_tokens());
        let reply = assembler.finish();
        assert_eq!(reply.content.as_deref(), Some("Let me check."));
        assert_eq!(
            reply.tool_calls,
            vec![ToolCall::new("tooluse_1", "bash", r#"{"command": "ls"}"#)]
        );
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            reply.usage,
            Some(TokenUsage {
                prompt_tokens: 112,
                completion_tokens: 30,
                cached_prompt_tokens: 100,
                ..TokenUsage::default()
            })
        );
    }

    #[test]
    fn tool_input_for_a_text_block_is_refused() {
        let mut assembler = StreamAssembler::default();
        assembler.push(text(0, "hi")).unwrap();
        let error = assembler.push(input(0, "{}")).unwrap_err();
        assert!(matches!(error, LlmError::MalformedResponse(_)), "{error:?}");
        let error = StreamAssembler::default().push(input(3, "{}")).unwrap_err();
        assert!(matches!(error, LlmError::MalformedResponse(_)), "{error:?}");
    }
}
