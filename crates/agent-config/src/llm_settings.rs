//! The `[llm]` (and `[llm.<name>]`) section: the settings of one LLM client, as data. The client
//! that reads them is `agent-llm`'s (`agent_llm::LlmClient::new`), which re-exports these types
//! where they were (`agent_llm::{LlmSettings, ApiType, ToolCallMode, ApiKey, Price}`); what needs
//! its model table (the effective price and context window) is there too.

use std::fmt;

use agent_protocol::{TokenUsage, round_usd};
use serde::{Deserialize, Serialize};

/// The name of the profile for image work (`[llm.vision]`).
pub const VISION: &str = "vision";

/// Which wire flavour of the chat-completions API the endpoint speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApiType {
    /// OpenAI and every OpenAI-compatible server (`{base_url}/chat/completions`, bearer token).
    /// Labels such as `ppio` or `jiekou` in OpenManus configs mean this too.
    #[default]
    #[serde(
        alias = "ppio",
        alias = "jiekou",
        alias = "openrouter",
        alias = "deepseek",
        alias = ""
    )]
    Openai,
    /// Azure OpenAI (`/openai/deployments/{deployment}/chat/completions?api-version=...`, an
    /// `api-key` header).
    Azure,
    /// Ollama's OpenAI-compatible `/v1` endpoint (no key needed).
    Ollama,
    /// Anthropic's Messages API, native (`{base_url}/v1/messages`, an `x-api-key` header,
    /// `tool_use`/`tool_result` blocks, prompt caching).
    Anthropic,
    /// Amazon Bedrock's Converse API through the AWS SDK (OpenManus's `api_type = "aws"`): region
    /// and credentials from the AWS environment; `base_url`, when set, overrides the endpoint.
    /// Needs the `bedrock` cargo feature.
    Aws,
}

impl ApiType {
    /// The name as written in the configuration.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::Azure => "azure",
            Self::Ollama => "ollama",
            Self::Anthropic => "anthropic",
            Self::Aws => "aws",
        }
    }
}

/// How tool calls travel between the client and the model (`tool_call_mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallMode {
    /// The provider's own function calling (`tools` in the request, structured calls back).
    #[default]
    Native,
    /// Tool schemas and a call format in the system prompt; calls parsed from the reply's text
    /// (`<tool_call>` tags, fenced JSON, a bare JSON object); results sent back as text. For
    /// models without function calling.
    Text,
    /// Native until the server rejects `tools` (Ollama's 400 "does not support tools" and the
    /// like), then text mode for the rest of the client's life.
    Auto,
}

impl ToolCallMode {
    /// The name as written in the configuration.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Text => "text",
            Self::Auto => "auto",
        }
    }
}

/// An API key. Its `Debug`, `Display` and `Serialize` never show it (serialising writes
/// `<redacted>`, so settings can be dumped or logged safely).
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct ApiKey(String);

impl Serialize for ApiKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(if self.is_empty() { "" } else { "<redacted>" })
    }
}

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the request header only.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when no key is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.trim().is_empty()
    }

    /// `text` with every occurrence of the key replaced by `[redacted]`.
    #[must_use]
    pub fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_owned();
        }
        text.replace(&self.0, "[redacted]")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_empty() {
            "ApiKey(<empty>)"
        } else {
            "ApiKey(<redacted>)"
        })
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

fn default_max_tokens() -> u32 {
    4096
}
fn default_temperature() -> f64 {
    1.0
}
fn default_true() -> bool {
    true
}
fn default_max_attempts() -> u32 {
    6
}
fn default_connect_timeout() -> f64 {
    10.0
}
fn default_read_timeout() -> f64 {
    60.0
}
fn default_first_byte_timeout() -> f64 {
    60.0
}
fn default_call_timeout() -> f64 {
    600.0
}
fn default_max_connect_attempts() -> u32 {
    3
}
fn default_max_timeout_attempts() -> u32 {
    2
}
fn default_request_timeout() -> f64 {
    300.0
}
fn default_max_retry_after() -> f64 {
    300.0
}
fn default_backoff_min() -> f64 {
    1.0
}
fn default_backoff_max() -> f64 {
    60.0
}

/// Settings of one client. Field names follow OpenManus's `[llm]` keys (`model`, `base_url`,
/// `api_key`, `api_type`, `api_version`, `max_tokens`, `temperature`, `max_input_tokens`); the
/// rest are openmanus-rs additions with OpenManus-like defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    /// The model name sent in every request (for Azure, the deployment name unless
    /// `deployment` is set).
    pub model: String,
    /// The endpoint, e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1`, or the Azure
    /// resource endpoint (`https://NAME.openai.azure.com`, optionally with
    /// `/openai/deployments/DEPLOYMENT`).
    pub base_url: String,
    /// The API key (may be empty for local servers).
    #[serde(default)]
    pub api_key: ApiKey,
    /// The API flavour.
    #[serde(default)]
    pub api_type: ApiType,
    /// How tool calls travel: the provider's function calling, text in the prompt and reply, or
    /// native with a switch to text when the server refuses tools.
    #[serde(default)]
    pub tool_call_mode: ToolCallMode,
    /// Azure's `api-version` query parameter.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Azure deployment name, when it differs from `model`.
    #[serde(default)]
    pub deployment: Option<String>,
    /// Completion token limit per request (`max_tokens`, or `max_completion_tokens` for
    /// reasoning models).
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// Sampling temperature (not sent to reasoning models).
    #[serde(default = "default_temperature")]
    pub temperature: f64,
    /// Cumulative input-token budget of this client (OpenManus's `max_input_tokens`): a request
    /// that would take the running total past it fails with `TokenLimitExceeded` before it is
    /// sent. `None`: no budget.
    #[serde(default)]
    pub max_input_tokens: Option<u64>,
    /// The model's context window in tokens; a request estimated larger fails with
    /// `ContextLengthExceeded` before it is sent. `None`: not checked (the provider's own limit
    /// applies).
    #[serde(default)]
    pub context_window: Option<u64>,
    /// What this model costs, in US dollars per million tokens (`{ input, cached_input,
    /// output }`). `None`: the shipped table's price for `model` (`agent_llm::default_price`);
    /// calls of a model with neither have no cost.
    #[serde(default)]
    pub price: Option<Price>,
    /// Whether the model accepts images. `None`: from the model table. (Not called `vision`: in
    /// OpenManus configs `[llm.vision]` is a whole model section.)
    #[serde(default)]
    pub supports_images: Option<bool>,
    /// Whether the model is a reasoning model (`max_completion_tokens`, no temperature).
    /// `None`: from the model table.
    #[serde(default)]
    pub reasoning: Option<bool>,
    /// Use server-sent events (set `false` for servers without SSE).
    #[serde(default = "default_true")]
    pub stream: bool,
    /// Ask for a usage chunk at the end of a stream (`stream_options.include_usage`).
    #[serde(default = "default_true")]
    pub stream_usage: bool,
    /// Attempts per call, the first included (OpenManus: 6).
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Shortest backoff between attempts, in seconds.
    #[serde(default = "default_backoff_min")]
    pub backoff_min_secs: f64,
    /// Longest backoff between attempts, in seconds.
    #[serde(default = "default_backoff_max")]
    pub backoff_max_secs: f64,
    /// TCP/TLS connect timeout, in seconds.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_secs: f64,
    /// Longest silence between two chunks of a streamed reply, in seconds (0: no limit).
    #[serde(default = "default_read_timeout")]
    pub read_timeout_secs: f64,
    /// Longest wait for the response to a streamed request to begin (its headers), in seconds
    /// (0: no limit). A streaming server answers at once and then sends the model's reply as
    /// it comes, so a slow model is not cut off by it; a server that accepted the connection
    /// and never answers is, in this time rather than `request_timeout_secs`. Requests that
    /// are not streamed wait for the whole reply, and are bounded by `request_timeout_secs`
    /// only.
    #[serde(default = "default_first_byte_timeout")]
    pub first_byte_timeout_secs: f64,
    /// Longest a whole request may take, in seconds (OpenManus's `ask_tool` timeout: 300;
    /// 0: no limit).
    #[serde(default = "default_request_timeout")]
    pub request_timeout_secs: f64,
    /// Longest `Retry-After` the client waits for, in seconds; a longer one fails the call at
    /// once with the provider's error.
    #[serde(default = "default_max_retry_after")]
    pub max_retry_after_secs: f64,
    /// Longest one call may take, every attempt and backoff included, in seconds (0: no
    /// limit).
    #[serde(default = "default_call_timeout")]
    pub call_timeout_secs: f64,
    /// Attempts in all when the server cannot be reached (connection refused, no route, DNS);
    /// at most `max_attempts`.
    #[serde(default = "default_max_connect_attempts")]
    pub max_connect_attempts: u32,
    /// Attempts in all when an attempt timed out (no answer within `request_timeout_secs` or
    /// `first_byte_timeout_secs`, or a stream silent for `read_timeout_secs`); at most
    /// `max_attempts`.
    #[serde(default = "default_max_timeout_attempts")]
    pub max_timeout_attempts: u32,
}

impl LlmSettings {
    /// Settings for `model` at `base_url` with every other value at its default.
    pub fn new(model: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: base_url.into(),
            api_key: ApiKey::default(),
            api_type: ApiType::default(),
            tool_call_mode: ToolCallMode::default(),
            api_version: None,
            deployment: None,
            max_tokens: default_max_tokens(),
            temperature: default_temperature(),
            max_input_tokens: None,
            context_window: None,
            price: None,
            supports_images: None,
            reasoning: None,
            stream: true,
            stream_usage: true,
            max_attempts: default_max_attempts(),
            backoff_min_secs: default_backoff_min(),
            backoff_max_secs: default_backoff_max(),
            connect_timeout_secs: default_connect_timeout(),
            read_timeout_secs: default_read_timeout(),
            first_byte_timeout_secs: default_first_byte_timeout(),
            request_timeout_secs: default_request_timeout(),
            max_retry_after_secs: default_max_retry_after(),
            call_timeout_secs: default_call_timeout(),
            max_connect_attempts: default_max_connect_attempts(),
            max_timeout_attempts: default_max_timeout_attempts(),
        }
    }

    /// Sets the API key.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = ApiKey::new(key);
        self
    }

    /// Sets the API type.
    #[must_use]
    pub fn with_api_type(mut self, api_type: ApiType) -> Self {
        self.api_type = api_type;
        self
    }

    /// Sets the tool-call mode.
    #[must_use]
    pub fn with_tool_call_mode(mut self, mode: ToolCallMode) -> Self {
        self.tool_call_mode = mode;
        self
    }
}

/// The price of a model in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens not read from the provider's prompt cache.
    pub input: f64,
    /// Input tokens read from the prompt cache; `None`: the same as `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Output tokens.
    pub output: f64,
}

impl Price {
    /// A price with no cache discount.
    #[must_use]
    pub const fn new(input: f64, output: f64) -> Self {
        Self {
            input,
            cached_input: None,
            output,
        }
    }

    /// A price whose cached input costs `cached_input` per million.
    #[must_use]
    pub const fn with_cached(input: f64, cached_input: f64, output: f64) -> Self {
        Self {
            input,
            cached_input: Some(cached_input),
            output,
        }
    }

    /// A model that costs nothing (a local server).
    pub const FREE: Self = Self::new(0.0, 0.0);

    /// The cost of `usage` (one call's tokens) in US dollars, to a billionth ([`round_usd`]):
    /// uncached input at `input`, cached input at `cached_input`, output at `output`.
    #[must_use]
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        let prompt = usage.prompt_tokens;
        let cached = usage.cached_prompt_tokens.min(prompt);
        let uncached = prompt - cached;
        let per_token = |price: f64| price / 1_000_000.0;
        let usd = uncached as f64 * per_token(self.input)
            + cached as f64 * per_token(self.cached_input.unwrap_or(self.input))
            + usage.completion_tokens as f64 * per_token(self.output);
        round_usd(usd)
    }

    /// Whether every figure is finite and not negative (what a configured price must be).
    #[must_use]
    pub fn is_valid(&self) -> bool {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        ok(self.input) && ok(self.output) && self.cached_input.is_none_or(ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_show_in_debug_or_display() {
        let settings =
            LlmSettings::new("gpt-4o", "https://api.openai.com/v1").with_api_key("sk-secret-123");
        let debug = format!("{settings:?}");
        assert!(!debug.contains("sk-secret-123"), "{debug}");
        assert!(debug.contains("ApiKey(<redacted>)"));
        assert_eq!(settings.api_key.to_string(), "<redacted>");
        assert_eq!(
            settings.api_key.redact("bad key sk-secret-123!"),
            "bad key [redacted]!"
        );
    }

    #[test]
    fn openmanus_keys_deserialize_with_defaults() {
        let settings: LlmSettings = serde_json::from_value(serde_json::json!({
            "model": "claude-3-7-sonnet-20250219",
            "base_url": "https://api.anthropic.com/v1/",
            "api_key": "k",
            "api_type": "jiekou",
            "max_tokens": 8192,
            "temperature": 0.0
        }))
        .unwrap();
        assert_eq!(settings.api_type, ApiType::Openai);
        assert_eq!(settings.max_tokens, 8192);
        assert_eq!(settings.max_attempts, 6);
        assert!(settings.stream);
        let unknown = serde_json::from_value::<LlmSettings>(serde_json::json!({
            "model": "m", "base_url": "u", "max_token": 5
        }));
        assert!(
            unknown
                .unwrap_err()
                .to_string()
                .contains("unknown field `max_token`")
        );
    }
}
