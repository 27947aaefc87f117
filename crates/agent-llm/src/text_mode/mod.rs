//! Text-mode tool calls, for models without function calling.
//!
//! [`text_request`] turns a request that offers tools into one that does not: the tools and the
//! call format go into the system prompt ([`tools_prompt`]), past calls into the assistant's
//! text ([`render_tool_call`]), tool results into user messages ([`render_result`]).
//! [`text_response`] reads the calls back out of the reply ([`parse_reply`], with near-JSON
//! repaired by [`repair_json`]). The agent never sees the difference: its memory holds the same
//! messages, with the same tool calls and tool results, in both modes.
//!
//! A reply with a call attempt that cannot be read comes back as text and runs no tool; the next
//! request carries a note after it that says what was wrong ([`parse_error_note`]), so the model
//! can try again. The note is made from the stored reply each time, so text mode keeps no state.
//!
//! While a reply streams, [`VisibleText`] takes the markup out of its pieces, so the
//! [`TextDelta`](agent_core::AgentEvent::TextDelta) events a [`Model`](crate::Model) in text
//! mode emits carry only the prose, as its thought will.
//!
//! ```
//! use agent_core::{Message, ToolChoice, ToolDefinition};
//! use agent_llm::text_mode::{text_request, text_response};
//! use agent_llm::{ChatRequest, ChatResponse};
//!
//! let tool = ToolDefinition::new("bash", "Run a command", serde_json::json!({"type": "object"}));
//! let request = ChatRequest::new(vec![Message::user_message("list files")])
//!     .with_tools(vec![tool], ToolChoice::Auto);
//! let sent = text_request(&request);
//! assert!(sent.tools.is_empty() && sent.system_msgs[0].content.as_deref().unwrap().contains("bash"));
//!
//! let reply = ChatResponse::text("Sure.\n<tool_call>{\"name\": \"bash\", \"arguments\": {'command': 'ls',}}</tool_call>");
//! let reply = text_response(reply, &request);
//! assert_eq!(reply.content.as_deref(), Some("Sure."));
//! assert_eq!(reply.tool_calls[0].function.arguments, r#"{"command":"ls"}"#);
//! ```

mod parse;
mod prompt;
mod repair;
mod visible;

use std::sync::atomic::{AtomicU64, Ordering};

use agent_core::{Message, Role, ToolCall};
use serde_json::Value;
use tracing::warn;

pub use parse::{ParsedReply, TextCall, parse_reply};
pub use prompt::{
    TOOLS_HEADING, parse_error_note, render_call, render_result, render_tool_call, tools_prompt,
};
pub use repair::repair_json;
pub use visible::VisibleText;

use crate::{ChatRequest, ChatResponse, LlmError};

/// `request` for a model that reads tools from its prompt: no `tools` or `tool_choice`, the tool
/// section appended to the system prompt, calls and results as text. A request without tools
/// keeps its system prompt; its past calls and results still become text.
#[must_use]
pub fn text_request(request: &ChatRequest) -> ChatRequest {
    let mut system_msgs = request.system_msgs.clone();
    if !request.tools.is_empty() {
        let section = tools_prompt(&request.tools, request.tool_choice);
        match system_msgs.last_mut() {
            Some(last) => {
                let text = last.content.get_or_insert_with(String::new);
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&section);
            }
            None => system_msgs.push(Message::system_message(section)),
        }
    }
    let names = request.tool_names();
    let mut messages = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        match message.role {
            Role::Assistant => {
                let mut parts = Vec::new();
                let mut errors = Vec::new();
                if let Some(text) = message.content.as_deref().filter(|t| !t.trim().is_empty()) {
                    // A reply stored as text because its calls could not be read.
                    if !message.has_tool_calls() {
                        errors = parse_reply(text, &names).errors;
                    }
                    parts.push(text.to_owned());
                }
                parts.extend(message.calls().iter().map(render_tool_call));
                let mut assistant = Message::assistant_message(parts.join("\n\n"));
                assistant.base64_image.clone_from(&message.base64_image);
                messages.push(assistant);
                if !errors.is_empty() {
                    messages.push(Message::user_message(parse_error_note(&errors)));
                }
            }
            Role::Tool => {
                let content = render_result(
                    message.name.as_deref(),
                    message.content.as_deref().unwrap_or_default(),
                );
                let mut user = Message::user_message(content);
                user.base64_image.clone_from(&message.base64_image);
                messages.push(user);
            }
            _ => messages.push(message.clone()),
        }
    }
    ChatRequest {
        system_msgs,
        messages,
        tools: std::sync::Arc::default(),
        tool_choice: None,
        temperature: request.temperature,
    }
}

/// The reply to a [`text_request`] made from `request`, with its calls read out of the text.
/// Calls get fresh ids; their arguments are compact JSON text.
#[must_use]
pub fn text_response(response: ChatResponse, request: &ChatRequest) -> ChatResponse {
    if request.tools.is_empty() || !response.tool_calls.is_empty() {
        return response;
    }
    let Some(text) = response.content.as_deref() else {
        return response;
    };
    let parsed = parse_reply(text, &request.tool_names());
    if !parsed.errors.is_empty() {
        warn!(errors = ?parsed.errors, "a text-mode tool call could not be read");
    }
    if parsed.calls.is_empty() || !parsed.errors.is_empty() {
        // Nothing to run, or a reply with an unreadable attempt: none of its calls run (the
        // next request says what was wrong), the text is kept as the model wrote it.
        return response;
    }
    let calls = parsed
        .calls
        .into_iter()
        .map(|call| {
            let arguments = Value::Object(call.arguments).to_string();
            ToolCall::new(call_id(), call.name, arguments)
        })
        .collect();
    ChatResponse {
        content: Some(parsed.text).filter(|t| !t.is_empty()),
        tool_calls: calls,
        usage: response.usage,
        finish_reason: Some("tool_calls".to_owned()),
        model: response.model,
    }
}

/// Whether `error` is a server's refusal of the `tools` parameter (Ollama: 400 "registry...
/// does not support tools"; others say "tools are not supported" or "tool use is not
/// supported"), after which `auto` mode switches to text.
#[must_use]
pub fn rejects_tools(error: &LlmError) -> bool {
    let LlmError::InvalidRequest(message) = error else {
        return false;
    };
    let lower = message.to_lowercase();
    [
        "does not support tools",
        "does not support tool",
        "tools are not supported",
        "tool use is not supported",
        "tool calling is not supported",
        "function calling is not supported",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// A call id unique within the process.
fn call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("call_txt{:08}", NEXT.fetch_add(1, Ordering::Relaxed))
}
