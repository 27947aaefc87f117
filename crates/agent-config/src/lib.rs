//! # agent-config — `config/config.toml` and `config/mcp.json`
//!
//! Loads OpenManus's configuration format (spec §6) with its weaknesses fixed (spec §13 W25):
//! `[llm]` is the default model and every `[llm.<name>]` section is a named profile, the default
//! overlaid key by key, that is **really used** — [`Config::llm_for`] picks it by agent name,
//! [`Config::vision_llm`] picks `[llm.vision]`. `[browser]`, `[search]`, `[sandbox]`, `[mcp]`,
//! `[runflow]` and `[daytona]` are all optional, and so is every key in them. `[agent]` holds
//! openmanus-rs's own settings (step and observation overrides, policies, the workspace);
//! `[store]` says where sessions are recorded ([`StoreSettings`]).
//! `mcp.json` beside the file lists MCP servers ([`McpServerConfig`]).
//!
//! These are plain settings types: this crate depends on no crate of ours but `agent-protocol`,
//! whose `TokenUsage` is what a [`Price`] applies to. The `[llm]` section is
//! [`LlmSettings`] (with [`ApiType`], [`ToolCallMode`], [`ApiKey`] and [`Price`]), which
//! `agent-llm` reads and re-exports. Each crate that uses a section converts it itself, so
//! configuration flows one way: `agent_llm::LlmClient::new(config.default_llm().clone())`,
//! `agent_toolcall::Policies::from_settings(&config.agent)`,
//! `agent_browser::BrowserConfig::from_settings(&config.browser)`,
//! `agent_web::WebSearch::from_settings(&config.search)`,
//! `agent_sandbox::from_settings(&config.sandbox, ..)`. The policy enums of `[agent]`
//! ([`NextStepPromptMode`], [`ObservationTruncation`], [`AutoTextReply`]) are defined here, once.
//!
//! Errors name the file, the line, the column and the key; unknown keys are errors, so a typo
//! never falls back to a default silently. A value written as `"${NAME}"` is read from the
//! environment. See `docs/configuration.md` for the full reference.
//!
//! ```
//! use agent_config::{Config, NextStepPromptMode};
//!
//! let config = Config::from_toml_str(r#"
//!     [llm]
//!     model = "gpt-4o"
//!     base_url = "https://api.openai.com/v1"
//!     api_key = "sk-..."
//!     temperature = 0.0
//!
//!     [llm.vision]
//!     model = "gpt-4o-mini"
//!
//!     [llm.swe]
//!     model = "o3"
//!
//!     [search]
//!     engine = "DuckDuckGo"
//!
//!     [agent]
//!     max_steps = 30
//! "#)?;
//!
//! // Named sections inherit every key they do not set.
//! let swe = config.llm_for("SWE");
//! assert_eq!((swe.model.as_str(), swe.temperature), ("o3", 0.0));
//! assert_eq!(config.llm_for("manus").model, "gpt-4o"); // no [llm.manus]: the default
//! assert_eq!(config.vision_llm().model, "gpt-4o-mini");
//! assert_eq!(config.vision_llm().supports_images, Some(true));
//!
//! // Missing keys keep their defaults.
//! assert_eq!(config.search.engine, "DuckDuckGo");
//! assert_eq!(config.search.retry_delay, 60);
//! assert_eq!(config.agent.max_steps, Some(30));
//! assert_eq!(config.agent.next_step_prompt, NextStepPromptMode::Ephemeral);
//! assert!(config.daytona.is_none());
//!
//! // The key never shows.
//! assert!(config.describe_llm("swe").contains("api_key = \"<redacted>\""));
//!
//! // Errors point at the file, line, column and key.
//! let err = Config::from_toml_str("[llm]\nmodel = \"m\"\nbase_url = \"u\"\nmax_tokens = \"lots\"\n")
//!     .unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "<string>:4:14: `llm.max_tokens`: invalid type: a string, expected u32"
//! );
//! # Ok::<(), agent_config::ConfigError>(())
//! ```

mod config;
mod document;
mod empty;
mod env;
mod error;
mod hooks;
mod llm;
mod llm_settings;
mod loader;
mod mcp;
mod overrides;
mod permissions;
mod policies;
mod secrets;
mod sections;
mod source;
mod store;

pub use config::Config;
pub use error::ConfigError;
pub use hooks::{DEFAULT_HOOK_TIMEOUT, HookEvent, HookSettings};
pub use llm_settings::VISION;
pub use llm_settings::{ApiKey, ApiType, LlmSettings, Price, ToolCallMode};
pub use loader::ConfigLoader;
pub use mcp::{McpServerConfig, McpTransport, load_mcp_servers, parse_mcp_servers};
pub use overrides::{ConfigOverride, OverrideSyntaxError};
pub use permissions::{
    ApprovalPolicy, DEFAULT_HIDDEN, PermissionRule, PermissionsSettings, RuleDecision, RuleSubject,
    RulesFile, RulesFileError, SandboxMode, UnknownApprovalPolicy, UnknownSandboxMode,
};
pub use policies::{
    AutoTextReply, CompactionStrategy, NextStepPromptMode, ObservationTruncation, RequestTrimming,
    TrimPolicy,
};
pub use secrets::DEFAULT_SECRET_ENV;
pub use sections::{
    A2aAgentSettings, A2aSettings, AgentSettings, BrowserSettings, DEFAULT_COMPACTION_KEEP_TURNS,
    DEFAULT_COMPACTION_THRESHOLD, DEFAULT_MAX_OBSERVATION_BYTES, DEFAULT_MCP_CONNECT_TIMEOUT_SECS,
    DEFAULT_MCP_STARTUP_WAIT_SECS, DaytonaSettings, Dispatch, EngineBaseUrls, McpSettings,
    NatsSettings, ProxySettings, RunflowSettings, SandboxBackend, SandboxSettings, SearchSettings,
    ServerSettings, TelemetrySettings,
};
pub use source::{CONFIG_ENV, ConfigOrigin, ConfigSource};
pub use store::StoreSettings;

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
