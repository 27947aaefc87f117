//! Strict validation of chat-completion request bodies, on the raw JSON, the way strict
//! providers reject requests.
//!
//! Why one file past 700 lines (its tests included): it is one table of the rules strict providers
//! apply to a request body, read top to bottom like the providers' error list.

use agent_core::{PairingError, PairingItem};
use std::collections::HashSet;
use std::fmt;

use serde_json::{Map, Value};

/// Which rule a request broke. Its [`as_str`](ViolationRule::as_str) name is sent as the error
/// body's `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ViolationRule {
    /// The method and path are not a chat-completions endpoint (404).
    UnknownRoute,
    /// `Content-Type` is not `application/json`.
    ContentType,
    /// The Azure route was called without an `api-version` query parameter.
    MissingApiVersion,
    /// The body is not a JSON object.
    InvalidBody,
    /// A top-level key the chat-completions API does not know.
    UnknownParameter,
    /// `model` is missing, not a string or empty (it may be omitted on the Azure route).
    InvalidModel,
    /// `messages` is missing, not an array, or empty.
    InvalidMessages,
    /// A message that is not an object, or whose `role` is not
    /// `system`/`developer`/`user`/`assistant`/`tool`.
    InvalidRole,
    /// A key the message's role does not allow, such as the framework's `base64_image` (the
    /// client must turn it into an `image_url` part).
    UnknownMessageKey,
    /// `content` of a wrong type, or `null`/missing where only an assistant message with tool
    /// calls may omit it.
    InvalidContent,
    /// A content part that is not `{"type":"text","text"}` or
    /// `{"type":"image_url","image_url":{"url"}}` (images only on user messages).
    InvalidContentPart,
    /// A user, system or developer message without text or image.
    EmptyContent,
    /// An assistant message with neither content nor tool calls.
    EmptyAssistantMessage,
    /// A malformed `tool_calls` entry, or an empty `tool_calls` array.
    InvalidToolCall,
    /// Two tool calls of one assistant message share an id.
    DuplicateToolCallId,

    /// A `tool` message that answers no open call of the assistant message before it.
    OrphanToolResult,
    /// An assistant tool call left without a `tool` answer before the next non-tool message (or
    /// at the end of the conversation).
    MissingToolResult,
    /// `tools` is not a non-empty array of `{"type":"function","function":{...}}` objects.
    InvalidTools,
    /// A tool name outside `^[a-zA-Z0-9_-]{1,64}$`.
    InvalidToolName,
    /// Two tools share a name.
    DuplicateToolName,
    /// A tool's `parameters` is not a JSON schema object whose `type` is `"object"`.
    InvalidToolParameters,
    /// `tool_choice` is set but no tools are offered.
    ToolChoiceWithoutTools,
    /// `tool_choice` is not `none`/`auto`/`required` or a function choice naming an advertised
    /// tool.
    InvalidToolChoice,
    /// Both `max_tokens` and `max_completion_tokens` are set.
    ConflictingMaxTokens,
    /// A parameter the model family rejects: `max_tokens`, or a `temperature` other than 1, on a
    /// reasoning model (`o1`, `o3`, `o4`, `gpt-5` families).
    UnsupportedParameter,
    /// `temperature` is not a number within `0..=2`.
    InvalidTemperature,
    /// Another parameter of the wrong type or value (`stream` not a boolean, `stream_options`
    /// without `"stream": true`, a token limit that is not a positive integer, ...).
    InvalidParameter,
    /// The request was valid but the script had no reply left for it (500).
    ScriptExhausted,
}

impl ViolationRule {
    /// The rule's snake-case name (the error body's `code`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownRoute => "unknown_route",
            Self::ContentType => "invalid_content_type",
            Self::MissingApiVersion => "missing_api_version",
            Self::InvalidBody => "invalid_body",
            Self::UnknownParameter => "unknown_parameter",
            Self::InvalidModel => "invalid_model",
            Self::InvalidMessages => "invalid_messages",
            Self::InvalidRole => "invalid_role",
            Self::UnknownMessageKey => "unknown_message_key",
            Self::InvalidContent => "invalid_content",
            Self::InvalidContentPart => "invalid_content_part",
            Self::EmptyContent => "empty_content",
            Self::EmptyAssistantMessage => "empty_assistant_message",
            Self::InvalidToolCall => "invalid_tool_call",
            Self::DuplicateToolCallId => "duplicate_tool_call_id",

            Self::OrphanToolResult => "orphan_tool_result",
            Self::MissingToolResult => "missing_tool_result",
            Self::InvalidTools => "invalid_tools",
            Self::InvalidToolName => "invalid_tool_name",
            Self::DuplicateToolName => "duplicate_tool_name",
            Self::InvalidToolParameters => "invalid_tool_parameters",
            Self::ToolChoiceWithoutTools => "tool_choice_without_tools",
            Self::InvalidToolChoice => "invalid_tool_choice",
            Self::ConflictingMaxTokens => "conflicting_max_tokens",
            Self::UnsupportedParameter => "unsupported_parameter",
            Self::InvalidTemperature => "invalid_temperature",
            Self::InvalidParameter => "invalid_parameter",
            Self::ScriptExhausted => "script_exhausted",
        }
    }
}

impl fmt::Display for ViolationRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A broken rule, before it is tied to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) rule: ViolationRule,
    pub(crate) param: Option<String>,
    pub(crate) message: String,
}

impl Problem {
    pub(crate) fn new(rule: ViolationRule, param: Option<String>, message: String) -> Self {
        Self {
            rule,
            param,
            message,
        }
    }
}

type Check = Result<(), Problem>;

fn fail(rule: ViolationRule, param: impl Into<String>, message: impl Into<String>) -> Check {
    Err(Problem::new(rule, Some(param.into()), message.into()))
}

/// Top-level keys of the chat-completions API.
const KNOWN_PARAMETERS: &[&str] = &[
    "model",
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "n",
    "stream",
    "stream_options",
    "stop",
    "max_tokens",
    "max_completion_tokens",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "user",
    "response_format",
    "seed",
    "reasoning_effort",
    "metadata",
    "store",
    "service_tier",
    "modalities",
    "audio",
    "prediction",
    "web_search_options",
    "verbosity",
    "prompt_cache_key",
    "safety_identifier",
];

const ROLES: &[&str] = &["system", "developer", "user", "assistant", "tool"];

fn allowed_message_keys(role: &str) -> &'static [&'static str] {
    match role {
        "assistant" => &["role", "content", "name", "tool_calls", "refusal", "audio"],
        "tool" => &["role", "content", "tool_call_id", "name"],
        _ => &["role", "content", "name"],
    }
}

/// True for model names of the reasoning families (`o1`, `o3`, `o4`, `gpt-5`), after any
/// `provider/` prefix.
fn is_reasoning_model(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let o_series = ["o1", "o3", "o4"].iter().any(|family| {
        name.strip_prefix(family)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    });
    o_series || name.starts_with("gpt-5")
}

fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Validates a chat-completions request body. `azure`: the request came through the Azure
/// deployment route, where `model` may be omitted.
pub(crate) fn validate_body(body: &Value, azure: bool) -> Check {
    let Value::Object(body) = body else {
        return Err(Problem::new(
            ViolationRule::InvalidBody,
            None,
            format!(
                "The request body must be a JSON object, got {}.",
                type_name(body)
            ),
        ));
    };
    if let Some(key) = body
        .keys()
        .find(|key| !KNOWN_PARAMETERS.contains(&key.as_str()))
    {
        return fail(
            ViolationRule::UnknownParameter,
            key.clone(),
            format!("Unrecognized request argument supplied: {key}"),
        );
    }
    // OpenAI treats an optional parameter sent as `null` like an absent one.
    let body: Map<String, Value> = body
        .iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let body = &body;
    let model = check_model(body, azure)?;
    check_parameters(body, model)?;
    let tools = check_tools(body)?;
    check_tool_choice(body, tools.as_ref())?;
    let messages = match body.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => messages,
        Some(Value::Array(_)) => {
            return fail(
                ViolationRule::InvalidMessages,
                "messages",
                "Invalid 'messages': empty array. Expected an array with minimum length 1.",
            );
        }
        Some(other) => {
            return fail(
                ViolationRule::InvalidMessages,
                "messages",
                format!(
                    "Invalid 'messages': expected an array, got {}.",
                    type_name(other)
                ),
            );
        }
        None => {
            return fail(
                ViolationRule::InvalidMessages,
                "messages",
                "Missing required parameter: 'messages'.",
            );
        }
    };
    for (index, message) in messages.iter().enumerate() {
        check_message(index, message)?;
    }
    check_pairing(messages)
}

fn check_model(body: &Map<String, Value>, azure: bool) -> Result<Option<&str>, Problem> {
    match body.get("model") {
        Some(Value::String(model)) if !model.is_empty() => Ok(Some(model)),
        None if azure => Ok(None),
        None => Err(Problem::new(
            ViolationRule::InvalidModel,
            Some("model".into()),
            "Missing required parameter: 'model'.".into(),
        )),
        Some(other) => Err(Problem::new(
            ViolationRule::InvalidModel,
            Some("model".into()),
            format!(
                "Invalid 'model': expected a non-empty string, got {}.",
                if other.is_string() {
                    "an empty string"
                } else {
                    type_name(other)
                }
            ),
        )),
    }
}

fn positive_integer(body: &Map<String, Value>, key: &str) -> Check {
    match body.get(key) {
        None => Ok(()),
        Some(value) if value.as_u64().is_some_and(|n| n > 0) => Ok(()),
        Some(value) => fail(
            ViolationRule::InvalidParameter,
            key,
            format!("Invalid '{key}': expected a positive integer, got {value}."),
        ),
    }
}

fn check_parameters(body: &Map<String, Value>, model: Option<&str>) -> Check {
    let stream = match body.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(stream)) => *stream,
        Some(other) => {
            return fail(
                ViolationRule::InvalidParameter,
                "stream",
                format!(
                    "Invalid 'stream': expected a boolean, got {}.",
                    type_name(other)
                ),
            );
        }
    };
    match body.get("stream_options") {
        None | Some(Value::Null) => {}
        Some(_) if !stream => {
            return fail(
                ViolationRule::InvalidParameter,
                "stream_options",
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            );
        }
        Some(Value::Object(options)) => {
            if let Some(usage) = options.get("include_usage")
                && !usage.is_boolean()
            {
                return fail(
                    ViolationRule::InvalidParameter,
                    "stream_options.include_usage",
                    "Invalid 'stream_options.include_usage': expected a boolean.",
                );
            }
        }
        Some(other) => {
            return fail(
                ViolationRule::InvalidParameter,
                "stream_options",
                format!(
                    "Invalid 'stream_options': expected an object, got {}.",
                    type_name(other)
                ),
            );
        }
    }
    positive_integer(body, "max_tokens")?;
    positive_integer(body, "max_completion_tokens")?;
    if body.contains_key("max_tokens") && body.contains_key("max_completion_tokens") {
        return fail(
            ViolationRule::ConflictingMaxTokens,
            "max_tokens",
            "Only one of 'max_tokens' and 'max_completion_tokens' may be set.",
        );
    }
    if let Some(temperature) = body.get("temperature") {
        match temperature.as_f64() {
            Some(t) if (0.0..=2.0).contains(&t) => {}
            _ => {
                return fail(
                    ViolationRule::InvalidTemperature,
                    "temperature",
                    format!(
                        "Invalid 'temperature': {temperature}. Expected a number between 0 and 2."
                    ),
                );
            }
        }
    }
    if let Some(model) = model.filter(|m| is_reasoning_model(m)) {
        if body.contains_key("max_tokens") {
            return fail(
                ViolationRule::UnsupportedParameter,
                "max_tokens",
                format!(
                    "Unsupported parameter: 'max_tokens' is not supported with this model \
                     ({model}). Use 'max_completion_tokens' instead."
                ),
            );
        }
        if let Some(temperature) = body.get("temperature")
            && temperature.as_f64() != Some(1.0)
        {
            return fail(
                ViolationRule::UnsupportedParameter,
                "temperature",
                format!(
                    "Unsupported value: 'temperature' does not support {temperature} with this \
                     model ({model}). Only the default (1) value is supported."
                ),
            );
        }
    }
    Ok(())
}

/// Checks `tools`; returns the advertised names (`None` when `tools` is absent).
fn check_tools(body: &Map<String, Value>) -> Result<Option<HashSet<String>>, Problem> {
    let tools = match body.get("tools") {
        None => return Ok(None),
        Some(Value::Array(tools)) if !tools.is_empty() => tools,
        Some(Value::Array(_)) => {
            return Err(Problem::new(
                ViolationRule::InvalidTools,
                Some("tools".into()),
                "Invalid 'tools': empty array. Expected an array with minimum length 1; omit \
                 'tools' when no tools are offered."
                    .into(),
            ));
        }
        Some(other) => {
            return Err(Problem::new(
                ViolationRule::InvalidTools,
                Some("tools".into()),
                format!(
                    "Invalid 'tools': expected an array, got {}.",
                    type_name(other)
                ),
            ));
        }
    };
    let mut names = HashSet::new();
    for (index, tool) in tools.iter().enumerate() {
        let param = format!("tools[{index}]");
        let invalid = |message: &str| {
            Problem::new(
                ViolationRule::InvalidTools,
                Some(param.clone()),
                format!("Invalid '{param}': {message}"),
            )
        };
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            return Err(invalid("'type' must be \"function\"."));
        }
        let Some(function) = tool.get("function").and_then(Value::as_object) else {
            return Err(invalid("'function' must be an object."));
        };
        let Some(name) = function.get("name").and_then(Value::as_str) else {
            return Err(invalid("'function.name' must be a string."));
        };
        if !valid_tool_name(name) {
            return Err(Problem::new(
                ViolationRule::InvalidToolName,
                Some(format!("{param}.function.name")),
                format!(
                    "Invalid '{param}.function.name': string does not match pattern. Expected a \
                     string that matches the pattern '^[a-zA-Z0-9_-]{{1,64}}$', got '{name}'."
                ),
            ));
        }
        if let Some(description) = function.get("description")
            && !description.is_string()
        {
            return Err(invalid("'function.description' must be a string."));
        }
        if let Some(parameters) = function.get("parameters") {
            let is_object_schema = parameters
                .as_object()
                .is_some_and(|schema| schema.get("type").and_then(Value::as_str) == Some("object"));
            if !is_object_schema {
                return Err(Problem::new(
                    ViolationRule::InvalidToolParameters,
                    Some(format!("{param}.function.parameters")),
                    format!(
                        "Invalid schema for function '{name}': schema must be a JSON Schema of \
                         'type: \"object\"', got {parameters}."
                    ),
                ));
            }
        }
        if !names.insert(name.to_owned()) {
            return Err(Problem::new(
                ViolationRule::DuplicateToolName,
                Some(format!("{param}.function.name")),
                format!("Duplicate tool name '{name}' in 'tools'."),
            ));
        }
    }
    Ok(Some(names))
}

fn check_tool_choice(body: &Map<String, Value>, tools: Option<&HashSet<String>>) -> Check {
    let Some(choice) = body.get("tool_choice") else {
        return Ok(());
    };
    let Some(tools) = tools else {
        return fail(
            ViolationRule::ToolChoiceWithoutTools,
            "tool_choice",
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are \
             specified.",
        );
    };
    let valid = match choice {
        Value::String(mode) => ["none", "auto", "required"].contains(&mode.as_str()),
        Value::Object(object) => {
            let name = object
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str);
            object.get("type").and_then(Value::as_str) == Some("function")
                && name.is_some_and(|name| tools.contains(name))
        }
        _ => false,
    };
    if valid {
        Ok(())
    } else {
        fail(
            ViolationRule::InvalidToolChoice,
            "tool_choice",
            format!(
                "Invalid value for 'tool_choice': {choice}. Expected 'none', 'auto', 'required' \
                 or {{\"type\": \"function\", \"function\": {{\"name\": <an advertised tool>}}}}."
            ),
        )
    }
}

/// Whether a content value carries something (non-empty text or an image).
fn has_substance(content: &Value) -> bool {
    match content {
        Value::String(text) => !text.is_empty(),
        Value::Array(parts) => parts.iter().any(|part| {
            part.get("type").and_then(Value::as_str) == Some("image_url")
                || part
                    .get("text")
                    .and_then(Value::as_str)
                    .is_some_and(|t| !t.is_empty())
        }),
        _ => false,
    }
}

fn check_message(index: usize, message: &Value) -> Check {
    let param = format!("messages.[{index}]");
    let Value::Object(message) = message else {
        return fail(
            ViolationRule::InvalidRole,
            param.clone(),
            format!(
                "Invalid '{param}': expected an object, got {}.",
                type_name(message)
            ),
        );
    };
    let role = match message.get("role").and_then(Value::as_str) {
        Some(role) if ROLES.contains(&role) => role,
        other => {
            return fail(
                ViolationRule::InvalidRole,
                format!("{param}.role"),
                format!(
                    "Invalid value for '{param}.role': {}. Supported values are: 'system', \
                     'developer', 'user', 'assistant' and 'tool'.",
                    other.map_or_else(
                        || message
                            .get("role")
                            .map_or("missing".into(), Value::to_string),
                        |r| format!("'{r}'")
                    )
                ),
            );
        }
    };
    let allowed = allowed_message_keys(role);
    if let Some(key) = message.keys().find(|key| !allowed.contains(&key.as_str())) {
        return fail(
            ViolationRule::UnknownMessageKey,
            format!("{param}.{key}"),
            format!(
                "Invalid '{param}': unrecognized key '{key}' on a '{role}' message{}.",
                if key == "base64_image" {
                    " (images must be sent as 'image_url' content parts)"
                } else {
                    ""
                }
            ),
        );
    }
    if let Some(name) = message.get("name")
        && !name.is_string()
    {
        return fail(
            ViolationRule::InvalidContent,
            format!("{param}.name"),
            format!("Invalid '{param}.name': expected a string."),
        );
    }
    let calls = check_tool_calls(&param, role, message)?;
    check_content(&param, role, message.get("content"), calls)
}

/// Checks `tool_calls` of a message; returns how many calls it has.
/// Tool names in earlier turns are not checked against `tools`: OpenAI does not, and an agent
/// legitimately keeps calls to tools that no longer exist (an unknown-tool observation, an MCP
/// server that went away) in its history.
fn check_tool_calls(
    param: &str,
    role: &str,
    message: &Map<String, Value>,
) -> Result<usize, Problem> {
    let Some(calls) = message.get("tool_calls") else {
        return Ok(0);
    };
    let param = format!("{param}.tool_calls");
    if role != "assistant" {
        return Err(Problem::new(
            ViolationRule::UnknownMessageKey,
            Some(param),
            format!("'tool_calls' is only allowed on assistant messages, not on '{role}'."),
        ));
    }
    let calls = match calls {
        Value::Array(calls) if !calls.is_empty() => calls,
        other => {
            return Err(Problem::new(
                ViolationRule::InvalidToolCall,
                Some(param.clone()),
                format!(
                    "Invalid '{param}': expected a non-empty array, got {}; omit 'tool_calls' \
                     when there are none.",
                    if other.is_array() {
                        "an empty array"
                    } else {
                        type_name(other)
                    }
                ),
            ));
        }
    };
    let mut ids = HashSet::new();
    for (index, call) in calls.iter().enumerate() {
        let param = format!("{param}[{index}]");
        let invalid = |message: &str| {
            Problem::new(
                ViolationRule::InvalidToolCall,
                Some(param.clone()),
                format!("Invalid '{param}': {message}"),
            )
        };
        let Some(id) = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
        else {
            return Err(invalid("'id' must be a non-empty string."));
        };
        if call.get("type").and_then(Value::as_str) != Some("function") {
            return Err(invalid("'type' must be \"function\"."));
        }
        let Some(function) = call.get("function").and_then(Value::as_object) else {
            return Err(invalid("'function' must be an object."));
        };
        if !function.get("name").is_some_and(Value::is_string) {
            return Err(invalid("'function.name' must be a string."));
        }
        if !function.get("arguments").is_some_and(Value::is_string) {
            return Err(invalid(
                "'function.arguments' must be a string (JSON text, not an object).",
            ));
        }
        if !ids.insert(id) {
            return Err(Problem::new(
                ViolationRule::DuplicateToolCallId,
                Some(format!("{param}.id")),
                format!("Duplicate tool call id '{id}' in one assistant message."),
            ));
        }
    }
    Ok(calls.len())
}

fn check_content(param: &str, role: &str, content: Option<&Value>, calls: usize) -> Check {
    let content_param = format!("{param}.content");
    let content = match content {
        None | Some(Value::Null) => {
            return match role {
                "assistant" if calls > 0 => Ok(()),
                "assistant" => fail(
                    ViolationRule::EmptyAssistantMessage,
                    param,
                    format!(
                        "Invalid '{param}': an assistant message needs 'content' or 'tool_calls'."
                    ),
                ),
                _ => fail(
                    ViolationRule::InvalidContent,
                    content_param,
                    format!(
                        "Invalid '{param}': 'content' is required on a '{role}' message and may \
                         not be null."
                    ),
                ),
            };
        }
        Some(content) => content,
    };
    match content {
        Value::String(_) => {}
        Value::Array(parts) => {
            for (index, part) in parts.iter().enumerate() {
                check_part(&format!("{content_param}[{index}]"), role, part)?;
            }
        }
        other => {
            return fail(
                ViolationRule::InvalidContent,
                content_param,
                format!(
                    "Invalid '{param}.content': expected a string or an array of content parts, \
                     got {}.",
                    type_name(other)
                ),
            );
        }
    }
    if has_substance(content) {
        return Ok(());
    }
    match role {
        "assistant" if calls > 0 => Ok(()),
        "assistant" => fail(
            ViolationRule::EmptyAssistantMessage,
            content_param,
            format!(
                "Invalid '{param}': an assistant message with empty content and no tool calls."
            ),
        ),
        "tool" => Ok(()),
        _ => fail(
            ViolationRule::EmptyContent,
            content_param,
            format!("Invalid '{param}.content': a '{role}' message must not be empty."),
        ),
    }
}

fn check_part(param: &str, role: &str, part: &Value) -> Check {
    let invalid = |message: String| fail(ViolationRule::InvalidContentPart, param, message);
    match part.get("type").and_then(Value::as_str) {
        Some("text") => {
            if part.get("text").is_some_and(Value::is_string) {
                Ok(())
            } else {
                invalid(format!(
                    "Invalid '{param}': a text part needs a string 'text'."
                ))
            }
        }
        Some("image_url") => {
            if role != "user" {
                return invalid(format!(
                    "Invalid '{param}': image parts are only allowed on user messages, not on \
                     '{role}'."
                ));
            }
            let image = part.get("image_url");
            let url = image.and_then(|i| i.get("url")).and_then(Value::as_str);
            let url_ok = url.is_some_and(|url| {
                url.starts_with("http://")
                    || url.starts_with("https://")
                    || (url.starts_with("data:image/") && url.contains(";base64,"))
            });
            if !url_ok {
                return invalid(format!(
                    "Invalid '{param}.image_url.url': expected an http(s) URL or a \
                     'data:image/...;base64,...' URL."
                ));
            }
            match image.and_then(|i| i.get("detail")) {
                None => Ok(()),
                Some(Value::String(detail))
                    if ["auto", "low", "high"].contains(&detail.as_str()) =>
                {
                    Ok(())
                }
                Some(detail) => invalid(format!(
                    "Invalid '{param}.image_url.detail': {detail}. Expected 'auto', 'low' or 'high'."
                )),
            }
        }
        _ => invalid(format!(
            "Invalid '{param}': expected a content part of type 'text' or 'image_url', got {part}."
        )),
    }
}

/// Every `tool` message answers an open call of the assistant message before it (only other
/// `tool` messages between), and every call is answered before the next non-tool message: the
/// agent's own [`agent_core::check_pairing`], with OpenAI's error texts.
fn check_pairing(messages: &[Value]) -> Check {
    let items = messages.iter().map(
        |message| match message.get("role").and_then(Value::as_str) {
            Some("tool") => {
                PairingItem::ToolResult(message.get("tool_call_id").and_then(Value::as_str))
            }
            Some("assistant") => match message.get("tool_calls") {
                Some(Value::Array(calls)) => PairingItem::Calls(
                    calls
                        .iter()
                        .filter_map(|c| c.get("id").and_then(Value::as_str))
                        .collect(),
                ),
                _ => PairingItem::Other,
            },
            _ => PairingItem::Other,
        },
    );
    let Err(violation) = agent_core::check_pairing(items, false) else {
        return Ok(());
    };
    match violation.error {
        PairingError::OrphanToolResult {
            index,
            tool_call_id,
        } => {
            let param = format!("messages.[{index}].tool_call_id");
            let has_id = messages
                .get(index)
                .and_then(|m| m.get("tool_call_id"))
                .is_some_and(Value::is_string);
            if has_id {
                fail(
                    ViolationRule::OrphanToolResult,
                    param,
                    format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a \
                         preceding message with 'tool_calls'; 'messages.[{index}]' answers \
                         '{tool_call_id}', which the assistant message before it did not call (or \
                         which was already answered)."
                    ),
                )
            } else {
                fail(
                    ViolationRule::OrphanToolResult,
                    param,
                    format!(
                        "Invalid 'messages.[{index}]': a 'tool' message needs a string 'tool_call_id'."
                    ),
                )
            }
        }
        PairingError::MissingToolResult { index, .. } => {
            let pending: Vec<&str> = violation.unanswered.iter().map(String::as_str).collect();
            missing(index, &pending)
        }
    }
}

fn missing(at: usize, pending: &[&str]) -> Check {
    fail(
        ViolationRule::MissingToolResult,
        format!("messages.[{at}].tool_calls"),
        format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding \
             to each 'tool_call_id'. The following tool_call_ids did not have response messages: \
             {}",
            pending.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reasoning_families_are_recognised() {
        for model in [
            "o1",
            "o1-mini",
            "o3-mini",
            "o4-mini",
            "gpt-5",
            "gpt-5-mini",
            "openai/o3",
        ] {
            assert!(is_reasoning_model(model), "{model}");
        }
        for model in ["gpt-4o", "o10", "gpt-4.1", "llama3", "omni"] {
            assert!(!is_reasoning_model(model), "{model}");
        }
    }

    #[test]
    fn tool_names_follow_the_pattern() {
        assert!(valid_tool_name("str_replace-editor9"));
        assert!(valid_tool_name(&"a".repeat(64)));
        assert!(!valid_tool_name(&"a".repeat(65)));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name("has space"));
        assert!(!valid_tool_name("dot.name"));
    }

    #[test]
    fn a_full_tool_conversation_passes() {
        let body = json!({
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk=", "detail": "high"}}
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "bash", "arguments": "{"}}
                ]},
                {"role": "tool", "tool_call_id": "b", "name": "bash", "content": ""},
                {"role": "tool", "tool_call_id": "a", "content": "ok"},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "again"}
            ],
            "tools": [{"type": "function", "function": {"name": "bash", "description": "run",
                       "parameters": {"type": "object", "properties": {}}}}],
            "tool_choice": {"type": "function", "function": {"name": "bash"}},
            "temperature": 0,
            "max_tokens": 100,
            "stream": true,
            "stream_options": {"include_usage": true}
        });
        assert_eq!(validate_body(&body, false), Ok(()));
    }

    #[test]
    fn azure_bodies_may_omit_the_model() {
        let body = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(validate_body(&body, true), Ok(()));
        let rule = validate_body(&body, false).unwrap_err().rule;
        assert_eq!(rule, ViolationRule::InvalidModel);
    }
}
