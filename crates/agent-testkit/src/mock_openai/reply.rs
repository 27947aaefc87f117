//! What the mock answers: scripted completions and injected faults (plain data).

use std::time::Duration;

use agent_core::ToolCall;
use agent_llm::TokenUsage;

/// A successful assistant reply: text, tool calls, or both.
///
/// Rendered as a `chat.completion` object, or as a stream of `chat.completion.chunk` events
/// when the request asked for `"stream": true`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    /// The text; `None` is sent as `"content": null`.
    pub content: Option<String>,
    /// Tool calls; their `arguments` strings are sent verbatim, valid JSON or not.
    pub tool_calls: Vec<ToolCall>,
    /// Token usage to report; `None` reports a rough estimate (about four bytes a token of the
    /// request body and of the reply).
    pub usage: Option<TokenUsage>,
    /// `finish_reason`; `None` sends `"tool_calls"` when there are tool calls, else `"stop"`.
    pub finish_reason: Option<String>,
    /// The model's reasoning, sent before the text as `reasoning_content` (DeepSeek's field,
    /// also vLLM's and SGLang's for reasoning models); `None`: no reasoning.
    pub reasoning: Option<String>,
    /// A refusal, sent as OpenAI's structured-outputs models send one: `"refusal"` beside
    /// `"content": null` (streamed: `refusal` deltas), `finish_reason` `stop`.
    pub refusal: Option<String>,
}

impl Completion {
    /// A text-only reply.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: Some(content.into()),
            ..Self::default()
        }
    }

    /// A reply that calls tools; `content` is the accompanying text (`None`: `"content": null`).
    pub fn tool_calls(content: Option<String>, calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self {
            content,
            tool_calls: calls.into_iter().collect(),
            ..Self::default()
        }
    }

    /// A refusal: `refusal` instead of content (see [`Completion::refusal`](Self::refusal)'s
    /// field).
    pub fn refusal(text: impl Into<String>) -> Self {
        Self {
            refusal: Some(text.into()),
            ..Self::default()
        }
    }

    /// Reports these token counts (`total_tokens` is their sum).
    #[must_use]
    pub fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.usage = Some(TokenUsage {
            prompt_tokens,
            completion_tokens,
            ..TokenUsage::default()
        });
        self
    }

    /// Reports these token counts, `cached` of the prompt tokens read from the prompt cache
    /// (sent as `prompt_tokens_details.cached_tokens`, as OpenAI does).
    #[must_use]
    pub fn with_cached_usage(
        mut self,
        prompt_tokens: u64,
        cached: u64,
        completion_tokens: u64,
    ) -> Self {
        self.usage = Some(TokenUsage {
            prompt_tokens,
            completion_tokens,
            cached_prompt_tokens: cached,
            ..TokenUsage::default()
        });
        self
    }

    /// Reasons first: `reasoning` is sent as `reasoning_content` before the text.
    #[must_use]
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// Overrides the `finish_reason` (e.g. `"length"`).
    #[must_use]
    pub fn with_finish_reason(mut self, finish_reason: impl Into<String>) -> Self {
        self.finish_reason = Some(finish_reason.into());
        self
    }

    /// The `finish_reason` that is sent.
    #[must_use]
    pub fn effective_finish_reason(&self) -> &str {
        match &self.finish_reason {
            Some(reason) => reason,
            None if self.tool_calls.is_empty() => "stop",
            None => "tool_calls",
        }
    }
}

/// A scripted failure. Each one consumes one queue entry when it fires and is never counted as a
/// violation.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// 429, code `rate_limit_exceeded`, with a `Retry-After: <seconds>` header when given.
    RateLimited {
        /// The `Retry-After` header value in seconds; `None` sends no header.
        retry_after: Option<u64>,
    },
    /// 429, type and code `insufficient_quota` (must not be retried).
    InsufficientQuota,
    /// 500, type `server_error`.
    ServerError,
    /// 503, type `server_error` ("overloaded").
    ServiceUnavailable,
    /// 401, code `invalid_api_key` (whatever key was sent).
    InvalidApiKey,
    /// 400, code `context_length_exceeded`, with OpenAI's "This model's maximum context length
    /// is ..." message.
    ContextLengthExceeded,
    /// Any other error status with an OpenAI-shaped body (e.g. 408, 404, 422).
    HttpError {
        /// The HTTP status (an invalid one is sent as 500).
        status: u16,
        /// The body's `error.type`.
        error_type: String,
        /// The body's `error.code` (`null` when `None`).
        code: Option<String>,
        /// The body's `error.message`.
        message: String,
    },
    /// Waits `delay` before sending the response headers, then answers with `then` (streamed or
    /// not, as the request asked).
    SlowFirstByte {
        /// How long to hold the response back.
        delay: Duration,
        /// The reply sent after the delay.
        then: Completion,
    },
    /// A connection that breaks off mid-reply. For a streaming request: the first
    /// `after_chunks` SSE events of `reply` are sent (after the 200 headers), then the connection
    /// is closed without `data: [DONE]`. For a non-streaming request: the first half of `reply`'s
    /// JSON body is sent, then the connection is closed.
    CutStream {
        /// How many `data:` events to send before cutting (0: cut right after the headers).
        after_chunks: usize,
        /// The reply being cut.
        reply: Completion,
    },
    /// A stream that goes silent mid-reply: the 200 headers and the first `after_chunks` SSE
    /// events of `reply` are sent, then nothing more while the connection stays open (until the
    /// client gives up or the server stops). For a non-streaming request: like [`Fault::Hang`]
    /// after the headers. Tests the client's idle timeout between chunks.
    StallStream {
        /// How many `data:` events to send before going silent.
        after_chunks: usize,
        /// The reply that stalls.
        reply: Completion,
    },
    /// 200 with a body that is not valid JSON (for a streaming request: one `data:` event whose
    /// payload is not JSON, then `data: [DONE]`).
    MalformedJson,
    /// Never answers: the request stays open until the client gives up or the server stops
    /// (for tests that cancel mid-request; pair with [`MockOpenAi::wait_for_requests`]).
    ///
    /// [`MockOpenAi::wait_for_requests`]: super::MockOpenAi::wait_for_requests
    Hang,
}

impl Fault {
    /// [`Fault::RateLimited`] with a `Retry-After` of `seconds`.
    #[must_use]
    pub fn rate_limited(seconds: u64) -> Self {
        Self::RateLimited {
            retry_after: Some(seconds),
        }
    }

    /// [`Fault::SlowFirstByte`] answering with `then` after `delay`.
    #[must_use]
    pub fn slow_first_byte(delay: Duration, then: Completion) -> Self {
        Self::SlowFirstByte { delay, then }
    }

    /// [`Fault::StallStream`] of `reply` after `after_chunks` events.
    #[must_use]
    pub fn stall_stream(after_chunks: usize, reply: Completion) -> Self {
        Self::StallStream {
            after_chunks,
            reply,
        }
    }

    /// [`Fault::CutStream`] of `reply` after `after_chunks` events.
    #[must_use]
    pub fn cut_stream(after_chunks: usize, reply: Completion) -> Self {
        Self::CutStream {
            after_chunks,
            reply,
        }
    }
}

/// One entry of the mock's script.
#[derive(Debug, Clone, PartialEq)]
pub enum MockReply {
    /// Answer normally.
    Completion(Completion),
    /// Fail in a scripted way.
    Fault(Fault),
}

impl MockReply {
    /// A text-only reply.
    pub fn text(content: impl Into<String>) -> Self {
        Self::Completion(Completion::text(content))
    }

    /// A tool-call reply with optional text.
    pub fn tool_calls(content: Option<String>, calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self::Completion(Completion::tool_calls(content, calls))
    }
}

impl From<Completion> for MockReply {
    fn from(completion: Completion) -> Self {
        Self::Completion(completion)
    }
}

impl From<Fault> for MockReply {
    fn from(fault: Fault) -> Self {
        Self::Fault(fault)
    }
}
