//! The script-file format of the `mock-openai` binary (also usable from tests through
//! [`MockOpenAi::load_script`](super::MockOpenAi::load_script)).
//!
//! A script is a JSON array; each entry is one reply, queued in order:
//!
//! ```json
//! [
//!   {"text": "Hello!"},
//!   {"text": "Let me look.", "tool_calls": [
//!       {"id": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}"},
//!       {"id": "call_2", "name": "bash", "arguments": {"command": "pwd"}}
//!   ], "usage": {"prompt_tokens": 120, "completion_tokens": 30}},
//!   {"conversation": "Fix the bug", "text": "Done.", "finish_reason": "stop"},
//!   {"fault": "rate_limited", "retry_after": 2},
//!   {"fault": "slow_first_byte", "delay_ms": 250, "text": "Sorry for the wait."},
//!   {"fault": "cut_stream", "after_chunks": 3, "text": "This reply breaks off"},
//!   {"fault": "http_error", "status": 408, "error_type": "timeout", "message": "Request timed out."}
//! ]
//! ```
//!
//! Keys of an entry:
//!
//! * `text` (string) and/or `tool_calls` (array of `{"id", "name", "arguments"}`; `arguments` is
//!   sent verbatim when it is a string, or serialised when it is any other JSON value), with
//!   optional `usage` (`{"prompt_tokens", "completion_tokens"}`) and `finish_reason`;
//! * `conversation` (string): queue the entry for the conversation whose first user message has
//!   this text instead of on the default queue;
//! * `fault` (string), one of `rate_limited` (optional `retry_after` seconds), `insufficient_quota`,
//!   `server_error` (500), `service_unavailable` (503), `invalid_api_key`,
//!   `context_length_exceeded`, `http_error` (`status`, optional `error_type`, `code`, `message`),
//!   `slow_first_byte` (`delay_ms`, then the entry's `text`/`tool_calls`), `cut_stream`
//!   (`after_chunks`, cutting the entry's `text`/`tool_calls`), `malformed_json`, `hang`.
//!
//! Unknown keys are errors, so that a typo does not silently change a benchmark.

use std::time::Duration;

use agent_core::ToolCall;
use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use super::reply::{Completion, Fault, MockReply};

/// One parsed script entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptEntry {
    /// The conversation key it is queued for (`None`: the default queue).
    pub conversation: Option<String>,
    /// The reply.
    pub reply: MockReply,
}

/// Why a script could not be loaded.
#[derive(Debug, Error)]
pub enum ScriptError {
    /// The file is not a JSON array of entry objects with known keys.
    #[error("the script is not valid: {0}")]
    Json(#[from] serde_json::Error),
    /// An entry's keys do not make a reply.
    #[error("script entry {index}: {message}")]
    Entry {
        /// The entry's position in the array (from 0).
        index: usize,
        /// What is wrong.
        message: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    conversation: Option<String>,
    text: Option<String>,
    tool_calls: Option<Vec<RawToolCall>>,
    usage: Option<RawUsage>,
    finish_reason: Option<String>,
    fault: Option<String>,
    retry_after: Option<u64>,
    delay_ms: Option<u64>,
    after_chunks: Option<usize>,
    status: Option<u16>,
    error_type: Option<String>,
    code: Option<String>,
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolCall {
    id: String,
    name: String,
    arguments: Value,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// Parses a script file (the format is described in this module's documentation).
///
/// # Errors
///
/// [`ScriptError`] naming the first problem.
pub fn parse_script(json: &str) -> Result<Vec<ScriptEntry>, ScriptError> {
    let raw: Vec<RawEntry> = serde_json::from_str(json)?;
    raw.into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let conversation = entry.conversation.clone();
            entry
                .into_reply()
                .map(|reply| ScriptEntry {
                    conversation,
                    reply,
                })
                .map_err(|message| ScriptError::Entry { index, message })
        })
        .collect()
}

impl RawEntry {
    /// The completion made of `text`, `tool_calls`, `usage` and `finish_reason`, if any of
    /// `text`/`tool_calls` is given.
    fn completion(&mut self) -> Option<Completion> {
        if self.text.is_none() && self.tool_calls.is_none() {
            return None;
        }
        let calls = self
            .tool_calls
            .take()
            .unwrap_or_default()
            .into_iter()
            .map(|call| {
                let arguments = match call.arguments {
                    Value::String(text) => text,
                    other => other.to_string(),
                };
                ToolCall::new(call.id, call.name, arguments)
            });
        let mut completion = Completion::tool_calls(self.text.take(), calls);
        if let Some(usage) = self.usage.take() {
            completion = completion.with_usage(usage.prompt_tokens, usage.completion_tokens);
        }
        if let Some(reason) = self.finish_reason.take() {
            completion = completion.with_finish_reason(reason);
        }
        Some(completion)
    }

    fn into_reply(mut self) -> Result<MockReply, String> {
        let completion = self.completion();
        let Some(fault) = self.fault.take() else {
            return completion
                .map(MockReply::Completion)
                .ok_or_else(|| "an entry needs 'text', 'tool_calls' or 'fault'".to_owned());
        };
        let needs_completion = |what: &str| {
            completion
                .clone()
                .ok_or_else(|| format!("the '{what}' fault needs 'text' or 'tool_calls'"))
        };
        let fault = match fault.as_str() {
            "rate_limited" => Fault::RateLimited {
                retry_after: self.retry_after,
            },
            "insufficient_quota" => Fault::InsufficientQuota,
            "server_error" => Fault::ServerError,
            "service_unavailable" => Fault::ServiceUnavailable,
            "invalid_api_key" => Fault::InvalidApiKey,
            "context_length_exceeded" => Fault::ContextLengthExceeded,
            "http_error" => Fault::HttpError {
                status: self
                    .status
                    .ok_or("the 'http_error' fault needs a 'status'")?,
                error_type: self.error_type.unwrap_or_else(|| "server_error".into()),
                code: self.code,
                message: self
                    .message
                    .unwrap_or_else(|| "Scripted error from the mock server.".into()),
            },
            "slow_first_byte" => Fault::SlowFirstByte {
                delay: Duration::from_millis(
                    self.delay_ms
                        .ok_or("the 'slow_first_byte' fault needs 'delay_ms'")?,
                ),
                then: needs_completion("slow_first_byte")?,
            },
            "cut_stream" => Fault::CutStream {
                after_chunks: self
                    .after_chunks
                    .ok_or("the 'cut_stream' fault needs 'after_chunks'")?,
                reply: needs_completion("cut_stream")?,
            },
            "stall_stream" => Fault::StallStream {
                after_chunks: self
                    .after_chunks
                    .ok_or("the 'stall_stream' fault needs 'after_chunks'")?,
                reply: needs_completion("stall_stream")?,
            },
            "malformed_json" => Fault::MalformedJson,
            "hang" => Fault::Hang,
            other => return Err(format!("unknown fault '{other}'")),
        };
        Ok(MockReply::Fault(fault))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let script = r#"[
          {"text": "Hello!"},
          {"text": "Let me look.", "tool_calls": [
              {"id": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}"},
              {"id": "call_2", "name": "bash", "arguments": {"command": "pwd"}}
          ], "usage": {"prompt_tokens": 120, "completion_tokens": 30}},
          {"conversation": "Fix the bug", "text": "Done.", "finish_reason": "stop"},
          {"fault": "rate_limited", "retry_after": 2},
          {"fault": "slow_first_byte", "delay_ms": 250, "text": "Sorry for the wait."},
          {"fault": "cut_stream", "after_chunks": 3, "text": "This reply breaks off"},
          {"fault": "http_error", "status": 408, "error_type": "timeout", "message": "Request timed out."}
        ]"#;
        let entries = parse_script(script).unwrap();
        assert_eq!(entries.len(), 7);
        assert_eq!(entries[0].reply, MockReply::text("Hello!"));
        let MockReply::Completion(calls) = &entries[1].reply else {
            panic!("{:?}", entries[1]);
        };
        assert_eq!(
            calls.tool_calls[1].function.arguments,
            r#"{"command":"pwd"}"#
        );
        assert_eq!(calls.usage.map(|u| u.total_tokens()), Some(150));
        assert_eq!(entries[2].conversation.as_deref(), Some("Fix the bug"));
        assert_eq!(entries[3].reply, MockReply::Fault(Fault::rate_limited(2)));
        assert_eq!(
            entries[4].reply,
            MockReply::Fault(Fault::slow_first_byte(
                Duration::from_millis(250),
                Completion::text("Sorry for the wait.")
            ))
        );
    }

    #[test]
    fn mistakes_are_reported() {
        let cases = [
            (r#"[{"txt": "typo"}]"#, "unknown field"),
            (r#"[{}]"#, "needs 'text', 'tool_calls' or 'fault'"),
            (r#"[{"fault": "explode"}]"#, "unknown fault 'explode'"),
            (
                r#"[{"fault": "cut_stream", "text": "x"}]"#,
                "needs 'after_chunks'",
            ),
            (
                r#"[{"fault": "slow_first_byte", "delay_ms": 5}]"#,
                "needs 'text' or 'tool_calls'",
            ),
            (r#"{"text": "not an array"}"#, "invalid type"),
        ];
        for (script, expected) in cases {
            let error = parse_script(script).unwrap_err().to_string();
            assert!(error.contains(expected), "{script}: {error}");
        }
    }
}
