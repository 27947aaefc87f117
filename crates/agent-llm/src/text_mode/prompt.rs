//! What text mode writes for the model: the tool section of the system prompt, past calls in
//! the assistant's turns, and tool results in user turns.

use std::fmt::Write as _;

use agent_core::{ToolCall, ToolChoice, ToolDefinition};
use serde_json::{Map, Value, json};

use super::parse::TextCall;

/// The opening of the tool section, so a request that already has it is not given it twice.
pub const TOOLS_HEADING: &str = "# Tools";

/// The system-prompt section that describes `tools` and the call format, under `choice`.
#[must_use]
pub fn tools_prompt(tools: &[ToolDefinition], choice: Option<ToolChoice>) -> String {
    let mut out = String::new();
    out.push_str(TOOLS_HEADING);
    out.push_str(
        "\n\nYou can call the tools listed below. To call a tool, write a <tool_call> block \
         holding one JSON object with the tool's name and its arguments:\n\n\
         <tool_call>\n{\"name\": \"TOOL_NAME\", \"arguments\": {\"ARGUMENT\": \"VALUE\"}}\n</tool_call>\n\n\
         Write one block per call; a reply may hold several. The JSON must be valid: double \
         quotes, newlines in strings written as \\n. The results come back in the next message \
         inside <tool_response> blocks; never write <tool_response> yourself.\n",
    );
    match choice {
        Some(ToolChoice::Required) => {
            out.push_str("\nEvery reply must call at least one tool.\n");
        }
        Some(ToolChoice::None) => {
            out.push_str("\nDo not call any tool in this reply; answer in plain text.\n");
        }
        Some(ToolChoice::Auto) | None => {}
    }
    out.push_str("\nThe tools, with the JSON schema of their arguments:\n");
    for tool in tools {
        let line = json!({
            "name": tool.function.name,
            "description": tool.function.description,
            "parameters": tool.function.parameters,
        });
        let _ = write!(out, "\n{line}\n");
    }
    out
}

/// A call as text mode writes it: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.
#[must_use]
pub fn render_call(call: &TextCall) -> String {
    let object = json!({"name": call.name, "arguments": Value::Object(call.arguments.clone())});
    format!("<tool_call>\n{object}\n</tool_call>")
}

/// A stored [`ToolCall`] in the text form (its JSON arguments parsed; text that is not a JSON
/// object is kept under `"arguments"` as a string, as it was sent).
#[must_use]
pub fn render_tool_call(call: &ToolCall) -> String {
    let arguments = match serde_json::from_str::<Value>(&call.function.arguments) {
        Ok(Value::Object(map)) => map,
        _ if call.function.arguments.trim().is_empty() => Map::new(),
        _ => {
            let object = json!({"name": call.function.name, "arguments": call.function.arguments});
            return format!("<tool_call>\n{object}\n</tool_call>");
        }
    };
    render_call(&TextCall {
        name: call.function.name.clone(),
        arguments,
    })
}

/// A tool's result as the model reads it: `<tool_response name="...">...</tool_response>`.
#[must_use]
pub fn render_result(name: Option<&str>, content: &str) -> String {
    match name {
        Some(name) => format!("<tool_response name=\"{name}\">\n{content}\n</tool_response>"),
        None => format!("<tool_response>\n{content}\n</tool_response>"),
    }
}

/// The note that follows a reply whose call attempts could not be read.
#[must_use]
pub fn parse_error_note(errors: &[String]) -> String {
    let mut note =
        String::from("Your previous reply tried to call a tool, but the call could not be read:\n");
    for error in errors {
        let _ = writeln!(note, "- {error}");
    }
    note.push_str(
        "No tool was run. Write each call as <tool_call>{\"name\": \"TOOL_NAME\", \"arguments\": \
         {...}}</tool_call> with valid JSON.",
    );
    note
}
