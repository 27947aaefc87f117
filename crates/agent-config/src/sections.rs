//! The non-LLM sections of `config.toml`: `[browser]`, `[search]`, `[sandbox]`, `[daytona]`,
//! `[mcp]`, `[runflow]` (OpenManus's) and `[agent]` (ours). Every section may be missing and
//! every key in it may be missing: what is not written takes its default.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use crate::llm_settings::ApiKey;
use serde::{Deserialize, Deserializer};

use crate::empty::{empty_as_none, empty_path_as_none};
use crate::mcp::McpServerConfig;
use crate::policies::{
    AutoTextReply, CompactionStrategy, NextStepPromptMode, ObservationTruncation, RequestTrimming,
};
use crate::store::StoreSettings;

/// `[browser]`: how the `browser_use` tool starts or reaches a Chromium.
///
/// Two defaults differ from OpenManus on purpose (spec §13 W27, W31): `headless` is decided by
/// the machine — no window where there is no display to show one (OpenManus: always a window,
/// which fails on a server) — and `disable_security` is `false` (OpenManus: `true`). Write
/// `headless = false` / `disable_security = true` to get OpenManus's behaviour.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrowserSettings {
    /// Run without a window. Default (`None`): without a window when there is no display
    /// (`DISPLAY` and `WAYLAND_DISPLAY` unset), with one otherwise; see
    /// [`BrowserSettings::is_headless`].
    pub headless: Option<bool>,
    /// Turn off the browser's web security (CORS, ...). Default `false`.
    pub disable_security: bool,
    /// Extra command-line arguments for Chromium.
    pub extra_chromium_args: Vec<String>,
    /// The Chromium/Chrome executable to start instead of the system one (`""`: unset).
    #[serde(deserialize_with = "empty_path_as_none")]
    pub chrome_instance_path: Option<PathBuf>,
    /// Connect to a running browser over this WebSocket URL instead of starting one (`""`:
    /// unset).
    #[serde(deserialize_with = "empty_as_none")]
    pub wss_url: Option<String>,
    /// Connect to a running browser over this CDP URL instead of starting one (`""`: unset).
    #[serde(deserialize_with = "empty_as_none")]
    pub cdp_url: Option<String>,
    /// `[browser.proxy]`; `None` when the table is missing or has no `server` (as in OpenManus,
    /// a proxy without a server is not used).
    #[serde(deserialize_with = "proxy_if_server")]
    pub proxy: Option<ProxySettings>,
    /// How many characters of a page's text `extract_content` reads. Default 2000.
    pub max_content_length: usize,
}

impl Default for BrowserSettings {
    fn default() -> Self {
        Self {
            headless: None,
            disable_security: false,
            extra_chromium_args: Vec::new(),
            chrome_instance_path: None,
            wss_url: None,
            cdp_url: None,
            proxy: None,
            max_content_length: 2000,
        }
    }
}

impl BrowserSettings {
    /// Whether the browser runs without a window: `headless` when set, else whether this
    /// machine has no display.
    #[must_use]
    pub fn is_headless(&self) -> bool {
        self.headless.unwrap_or_else(|| {
            let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
            !set("DISPLAY") && !set("WAYLAND_DISPLAY")
        })
    }
}

/// `[browser.proxy]`. Its `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct ProxySettings {
    /// The proxy, e.g. `http://proxy.example:3128`.
    pub server: String,
    /// User name, if the proxy needs one.
    pub username: Option<String>,
    /// Password, if the proxy needs one.
    pub password: Option<String>,
}

impl fmt::Debug for ProxySettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxySettings")
            .field("server", &self.server)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProxy {
    #[serde(default, deserialize_with = "empty_as_none")]
    server: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none")]
    username: Option<String>,
    #[serde(default, deserialize_with = "empty_as_none")]
    password: Option<String>,
}

fn proxy_if_server<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ProxySettings>, D::Error> {
    let raw = RawProxy::deserialize(deserializer)?;
    match raw.server {
        Some(server) => Ok(Some(ProxySettings {
            server,
            username: raw.username,
            password: raw.password,
        })),
        None => {
            tracing::warn!("[browser.proxy] has no `server`; the proxy is not used");
            Ok(None)
        }
    }
}

/// `[search]`: the `web_search` tool's engines and retry policy. A missing section or key keeps
/// OpenManus's defaults (unlike OpenManus, where a missing section yields no settings at all).
/// The `agent-web` crate turns it into the tool's settings (`WebSearchSettings::from_settings`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchSettings {
    /// The primary engine, matched case-insensitively (`Google`, `Baidu`, `DuckDuckGo`, `Bing`).
    /// Default `"Google"`.
    pub engine: String,
    /// Engines tried, in order, after the primary one. Default `["DuckDuckGo", "Baidu", "Bing"]`.
    pub fallback_engines: Vec<String>,
    /// Seconds to wait before sweeping all engines again after they all failed. Default 60.
    pub retry_delay: u64,
    /// How many times all engines are swept again after they all failed. Default 3.
    pub max_retries: u32,
    /// Language of the results. Default `"en"`.
    pub lang: String,
    /// Country of the results. Default `"us"`.
    pub country: String,
    /// openmanus-rs: base URLs of the engines, for mirrors, proxies or local fixture servers
    /// (`[search.base_urls]` with `google`, `baidu`, `duckduckgo`, `bing`, `brave`; each optional).
    pub base_urls: EngineBaseUrls,
    /// openmanus-rs: an API key for the Brave Search API engine (tried after the HTML engines).
    pub brave_api_key: Option<String>,
    /// openmanus-rs: the base URL of a SearXNG instance whose JSON API is used as an engine.
    pub searxng_url: Option<String>,
}

/// `[search.base_urls]`: overrides of the engines' base URLs (absent: the public sites).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineBaseUrls {
    /// Google.
    pub google: Option<String>,
    /// Baidu.
    pub baidu: Option<String>,
    /// DuckDuckGo (its HTML endpoint).
    pub duckduckgo: Option<String>,
    /// Bing.
    pub bing: Option<String>,
    /// The Brave Search API.
    pub brave: Option<String>,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            engine: "Google".into(),
            fallback_engines: vec!["DuckDuckGo".into(), "Baidu".into(), "Bing".into()],
            retry_delay: 60,
            max_retries: 3,
            lang: "en".into(),
            country: "us".into(),
            base_urls: EngineBaseUrls::default(),
            brave_api_key: None,
            searxng_url: None,
        }
    }
}

/// Which sandbox `[sandbox]` sets up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxBackend {
    /// Bubblewrap namespaces on this machine (the default; `image` is not used).
    #[default]
    Local,
    /// A container of a Docker engine (`DOCKER_HOST` or the local socket) from `image`.
    Docker,
}

/// `[sandbox]`: where code-executing tools run confined. Defaults are OpenManus's, plus our
/// `backend` key (OpenManus only had Docker; here the default is the local bubblewrap backend,
/// which needs no daemon).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxSettings {
    /// Run code-executing tools in the sandbox. Default `false`.
    pub use_sandbox: bool,
    /// `"local"` (bubblewrap, default) or `"docker"`.
    pub backend: SandboxBackend,
    /// Container image. Default `"python:3.12-slim"`.
    pub image: String,
    /// Working directory inside the container. Default `"/workspace"`.
    pub work_dir: String,
    /// Docker memory limit. Default `"512m"`.
    pub memory_limit: String,
    /// CPUs. Default 1.0.
    pub cpu_limit: f64,
    /// Default command timeout, in seconds. Default 300.
    pub timeout: u64,
    /// Allow network access from the container. Default `false`.
    pub network_enabled: bool,
    /// The X server SandboxManus's virtual display runs in the sandbox (`computer_use`): a
    /// program on the sandbox's `PATH` (the host's for `local`, the image's for `docker`) or a
    /// path. Our key. Default `"Xvfb"`.
    pub xvfb: String,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            use_sandbox: false,
            backend: SandboxBackend::Local,
            image: "python:3.12-slim".into(),
            work_dir: "/workspace".into(),
            memory_limit: "512m".into(),
            cpu_limit: 1.0,
            timeout: 300,
            network_enabled: false,
            xvfb: "Xvfb".into(),
        }
    }
}

/// `[daytona]`: the Daytona cloud sandbox. The whole section is optional (its absence made
/// OpenManus crash at start-up, spec §6.1); so is every key in it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaytonaSettings {
    /// The Daytona API key (`Debug` shows `<redacted>`). Default empty.
    pub daytona_api_key: ApiKey,
    /// Default `"https://app.daytona.io/api"`.
    pub daytona_server_url: String,
    /// Region, `us` or `eu`. Default `"us"`.
    pub daytona_target: String,
    /// Default `"whitezxj/sandbox:0.1.0"`.
    pub sandbox_image_name: String,
    /// Default `"/usr/bin/supervisord -n -c /etc/supervisor/conf.d/supervisord.conf"`.
    pub sandbox_entrypoint: String,
    /// The sandbox's VNC password (`VNC_password`, as OpenManus spells it). No default: OpenManus
    /// falls back to `123456` (spec §13 W31); the sandbox should generate one when unset.
    #[serde(rename = "VNC_password", alias = "vnc_password")]
    pub vnc_password: Option<String>,
}

impl Default for DaytonaSettings {
    fn default() -> Self {
        Self {
            daytona_api_key: ApiKey::default(),
            daytona_server_url: "https://app.daytona.io/api".into(),
            daytona_target: "us".into(),
            sandbox_image_name: "whitezxj/sandbox:0.1.0".into(),
            sandbox_entrypoint:
                "/usr/bin/supervisord -n -c /etc/supervisor/conf.d/supervisord.conf".into(),
            vnc_password: None,
        }
    }
}

/// `[mcp]` plus the servers of `mcp.json` (which lives beside `config.toml`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    /// OpenManus's Python module for its own MCP server (`python -m app.mcp.server`). Accepted so
    /// that OpenManus configs load; openmanus-rs serves its tools with `openmanus mcp-server`
    /// and does not read it. Default `"app.mcp.server"`.
    pub server_reference: String,
    /// The longest a server may take to start and answer the MCP handshake, in seconds.
    /// Default 30.
    pub connect_timeout_secs: u64,
    /// How long Manus's first step waits for servers still connecting, in seconds, counted
    /// from the start (servers connect in the background while the agent starts). Servers not
    /// ready by then join at a later step, when they are. Default 10.
    pub startup_wait_secs: u64,
    /// The servers of `mcp.json`, in file order (never read from `config.toml`).
    #[serde(skip)]
    pub servers: Vec<McpServerConfig>,
}

/// `[mcp] connect_timeout_secs` when the file does not set it.
pub const DEFAULT_MCP_CONNECT_TIMEOUT_SECS: u64 = 30;
/// `[mcp] startup_wait_secs` when the file does not set it.
pub const DEFAULT_MCP_STARTUP_WAIT_SECS: u64 = 10;

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            server_reference: "app.mcp.server".into(),
            connect_timeout_secs: DEFAULT_MCP_CONNECT_TIMEOUT_SECS,
            startup_wait_secs: DEFAULT_MCP_STARTUP_WAIT_SECS,
            servers: Vec::new(),
        }
    }
}

impl McpSettings {
    /// The server with this id.
    #[must_use]
    pub fn server(&self, id: &str) -> Option<&McpServerConfig> {
        self.servers.iter().find(|s| s.id == id)
    }
}

/// `[runflow]`: the planning flow (`openmanus flow`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunflowSettings {
    /// Add the DataAnalysis agent to the flow's executors. Default `false`.
    pub use_data_analysis_agent: bool,
    /// How many times a plan step whose executor failed (or hit its step budget) is retried
    /// before it is marked blocked. Default 1 (ours; OpenManus retries forever, spec §13 W7).
    pub max_step_retries: u32,
    /// Time limit of a whole flow, in seconds (`run_flow.py`'s 3600). Default 3600.
    pub timeout_secs: u64,
}

impl Default for RunflowSettings {
    fn default() -> Self {
        Self {
            use_data_analysis_agent: false,
            max_step_retries: 1,
            timeout_secs: 3600,
        }
    }
}

/// The default byte cap of one tool observation (`[agent] max_observation_bytes`): 128 KiB,
/// some 30 000 tokens.
pub const DEFAULT_MAX_OBSERVATION_BYTES: usize = 128 * 1024;
/// The default of `[agent] compaction_threshold`: compact past 80 % of the context window.
pub const DEFAULT_COMPACTION_THRESHOLD: f64 = 0.8;
/// The default of `[agent] compaction_keep_turns`.
pub const DEFAULT_COMPACTION_KEEP_TURNS: usize = 4;

/// `[agent]` (openmanus-rs): overrides and policies for every agent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSettings {
    /// Step budget of every agent run; `None`: each agent's own default (Manus 20, SWE 20, ...).
    pub max_steps: Option<u32>,
    /// Longest observation in characters; `None`: each agent's own default (Manus 10000, SWE
    /// none); `0`: never truncate.
    pub max_observe: Option<usize>,
    /// Per-step prompt policy. Default `"ephemeral"`.
    pub next_step_prompt: NextStepPromptMode,
    /// Long-observation policy. Default `"head_and_tail"`.
    pub observation_truncation: ObservationTruncation,
    /// Largest single tool observation in bytes, for every agent, whatever `max_observe` says
    /// (a longer one keeps its head and tail with a note of what was cut). Default
    /// [`DEFAULT_MAX_OBSERVATION_BYTES`] (128 KiB); `0`: no cap.
    pub max_observation_bytes: usize,
    /// Text-only replies in `auto` mode. Default `"keep_looping"`.
    pub auto_text_reply: AutoTextReply,
    /// The directory agents work in: it confines the file tools and is the working directory of
    /// `bash` and `python_execute`. Default `workspace`. A relative path is relative to the
    /// process's current directory when it is used (not to the config file), so
    /// `openmanus` run in a project writes to that project's `./workspace`, as OpenManus's
    /// `<project>/workspace`.
    pub workspace_root: PathBuf,
    /// More environment variables to withhold from tool processes (bash, python, sandbox
    /// shells, MCP stdio servers), beyond the ones the configuration names or resolves.
    pub tool_env_deny: Vec<String>,
    /// Variables tool processes keep even though the configuration names them (for instance a
    /// token a tool needs on purpose).
    pub tool_env_allow: Vec<String>,
    /// Tokens (input plus output) one run may use; reaching it ends the run with a `budget`
    /// finish reason. For `openmanus flow`, all the steps of one execution together. `None`:
    /// no limit.
    pub max_run_tokens: Option<u64>,
    /// US dollars one run may spend, at the models' prices (`[llm] price` or the shipped
    /// table); calls of a model with no price count nothing. `None`: no limit.
    pub max_run_cost: Option<f64>,
    /// Seconds of wall time one run may take; the step in progress is interrupted when it runs
    /// out. `None`: no limit.
    pub max_run_seconds: Option<u64>,
    /// What happens when a request would pass `compaction_threshold` of the context window:
    /// `"summary"` (default), `"cut"` or `"off"` (OpenManus).
    pub compaction: CompactionStrategy,
    /// The fraction of the model's context window (from `[llm] context_window` or the model
    /// table) past which the conversation is compacted. Default `0.8`.
    pub compaction_threshold: f64,
    /// How many of the latest turns compaction keeps as they are. Default `4`.
    pub compaction_keep_turns: usize,
    /// The `[llm.<name>]` section of the model that writes summaries (a cheaper one, say);
    /// `None`: each agent's own model.
    pub summary_llm: Option<String>,
    /// Which policies shorten what each request resends: `"lean"` (all, the default),
    /// `"openmanus"` (none: requests carry memory as it is), or a list of
    /// `"superseded_file_views"`, `"old_images"`, `"repeated_outputs"`.
    pub request_trimming: RequestTrimming,
}

impl Default for AgentSettings {
    fn default() -> Self {
        Self {
            max_steps: None,
            max_observe: None,
            next_step_prompt: NextStepPromptMode::default(),
            observation_truncation: ObservationTruncation::default(),
            max_observation_bytes: DEFAULT_MAX_OBSERVATION_BYTES,
            auto_text_reply: AutoTextReply::default(),
            workspace_root: PathBuf::from("workspace"),
            tool_env_deny: Vec::new(),
            tool_env_allow: Vec::new(),
            max_run_tokens: None,
            max_run_cost: None,
            max_run_seconds: None,
            compaction: CompactionStrategy::default(),
            compaction_threshold: DEFAULT_COMPACTION_THRESHOLD,
            compaction_keep_turns: DEFAULT_COMPACTION_KEEP_TURNS,
            summary_llm: None,
            request_trimming: RequestTrimming::default(),
        }
    }
}

/// `[a2a]`: other agents Manus may hand a sub-task to over the Agent2Agent protocol (the
/// `a2a_call` tool, offered when at least one agent is listed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct A2aSettings {
    /// The agents, `[[a2a.agents]]`.
    pub agents: Vec<A2aAgentSettings>,
}

/// One agent of `[[a2a.agents]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aAgentSettings {
    /// The name the model calls it by.
    pub name: String,
    /// Its base URL (its Agent Card is under `/.well-known/`).
    pub url: String,
    /// What it is good at, shown to the model.
    #[serde(default)]
    pub description: String,
    /// The environment variable holding the bearer token it needs, if it needs one.
    #[serde(default)]
    pub token_env: Option<String>,
}

/// `[telemetry]`: OpenTelemetry export of every run (GenAI spans over OTLP). The standard
/// `OTEL_*` variables say the same and win over these keys; with neither an endpoint here nor
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `_TRACES_ENDPOINT`), nothing is exported.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// `false` turns export off whatever else is set (as `OTEL_SDK_DISABLED=true`).
    pub enabled: Option<bool>,
    /// The collector's base URL (`http://127.0.0.1:4318`; for HTTP, `/v1/traces` is added),
    /// as `OTEL_EXPORTER_OTLP_ENDPOINT`. Setting it turns export on.
    pub endpoint: Option<String>,
    /// `http/protobuf` (the default) or `grpc`, as `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub protocol: Option<String>,
    /// Headers sent with every export (`Authorization = "${LANGFUSE_AUTHORIZATION}"`, the
    /// variable holding `Basic <base64>`), as `OTEL_EXPORTER_OTLP_HEADERS`; the variable's
    /// headers are added to these.
    pub headers: BTreeMap<String, String>,
    /// The `service.name` of the spans (default `openmanus`), as `OTEL_SERVICE_NAME`.
    pub service_name: Option<String>,
    /// More resource attributes, as `OTEL_RESOURCE_ATTRIBUTES` (which adds to them).
    pub resource_attributes: BTreeMap<String, String>,
    /// Record message content, tool arguments and tool results in the spans (default `false`;
    /// they may hold personal data). The configuration's secrets are replaced and each value is
    /// cut at 32 KiB. `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` does the same.
    pub capture_content: bool,
    /// Export the GenAI client metrics too (`gen_ai.client.token.usage`,
    /// `gen_ai.client.operation.duration`; default `false`: Phoenix, Langfuse and Jaeger take
    /// traces only), as `OTEL_METRICS_EXPORTER=otlp`; `OTEL_METRICS_EXPORTER=none` wins.
    pub metrics: bool,
}

/// `[server]`: `openmanus serve`, the HTTP API and web page.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSettings {
    /// The address to listen on. Default `127.0.0.1:8765` (loopback only). Any other address
    /// requires a token.
    pub bind: String,
    /// The environment variable holding the token. Default `OPENMANUS_SERVER_TOKEN`.
    pub token_env: String,
    /// A file holding the token (its first line), read when the variable is not set.
    #[serde(deserialize_with = "empty_path_as_none")]
    pub token_file: Option<PathBuf>,
    /// Runs going at once; the rest wait in line. Default 4.
    pub max_concurrent_runs: usize,
    /// Seconds a session may sit idle before its agent (and its processes and browser) is
    /// closed; its next task resumes it from the store. `0`: never. Default 1800.
    pub idle_session_secs: u64,
    /// Host names accepted in `Host` besides the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) accepted besides the server's own.
    pub allowed_origins: Vec<String>,
    /// Run tools on the host even when listening beyond loopback (otherwise they run in the
    /// sandbox there). Default `false`.
    pub allow_host_tools: bool,
    /// Where each session's own workspace is made. Default: `sessions/` inside the workspace.
    #[serde(deserialize_with = "empty_path_as_none")]
    pub sessions_dir: Option<PathBuf>,
    /// Where runs go: `local` (this process runs them, the default) or `nats` (workers take
    /// them from NATS JetStream, `[nats]`; `openmanus worker`).
    pub dispatch: Dispatch,
}

/// Where `openmanus serve` runs its sessions' tasks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dispatch {
    /// In the server's own process.
    #[default]
    Local,
    /// On workers, through NATS JetStream.
    Nats,
}

/// `[nats]`: the NATS server with JetStream that `openmanus worker`, `openmanus submit` and a
/// dispatching server share, and how the workers use it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NatsSettings {
    /// The server URL(s), comma-separated. Default `nats://127.0.0.1:4222`.
    pub url: String,
    /// A `.creds` file (JWT and NKey seed), for servers that require one.
    #[serde(deserialize_with = "empty_path_as_none")]
    pub creds_file: Option<PathBuf>,
    /// The environment variable holding a token, for servers configured with one. Default
    /// `OPENMANUS_NATS_TOKEN` (unset: no token).
    pub token_env: String,
    /// The prefix of the subjects, streams and buckets. Default `openmanus`.
    pub prefix: String,
    /// Tasks one worker runs at once. Default 2.
    pub concurrency: usize,
    /// Seconds a task may go without an acknowledgement before it is redelivered. Default 30.
    pub ack_wait_secs: u64,
    /// Deliveries of one task at most. Default 5.
    pub max_deliver: i64,
    /// Seconds between a running task's in-progress acknowledgements. Default 10.
    pub progress_secs: u64,
    /// Where a worker makes each task's workspace. Default: `tasks/` inside the workspace.
    #[serde(deserialize_with = "empty_path_as_none")]
    pub workspaces_dir: Option<PathBuf>,
}

impl Default for NatsSettings {
    fn default() -> Self {
        Self {
            url: "nats://127.0.0.1:4222".into(),
            creds_file: None,
            token_env: "OPENMANUS_NATS_TOKEN".into(),
            prefix: "openmanus".into(),
            concurrency: 2,
            ack_wait_secs: 30,
            max_deliver: 5,
            progress_secs: 10,
            workspaces_dir: None,
        }
    }
}

impl NatsSettings {
    /// The directory of the tasks' workspaces for a workspace root.
    #[must_use]
    pub fn workspaces_path(&self, workspace: &std::path::Path) -> PathBuf {
        self.workspaces_dir
            .clone()
            .unwrap_or_else(|| workspace.join("tasks"))
    }
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8765".into(),
            token_env: "OPENMANUS_SERVER_TOKEN".into(),
            token_file: None,
            max_concurrent_runs: 4,
            idle_session_secs: 1800,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            allow_host_tools: false,
            sessions_dir: None,
            dispatch: Dispatch::Local,
        }
    }
}

impl ServerSettings {
    /// The directory of the sessions' workspaces for a workspace root.
    #[must_use]
    pub fn sessions_path(&self, workspace: &std::path::Path) -> PathBuf {
        self.sessions_dir
            .clone()
            .unwrap_or_else(|| workspace.join("sessions"))
    }
}

/// Everything in `config.toml` except `[llm]`, deserialized in one go so that an unknown
/// section is an error too.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Sections {
    pub(crate) browser: BrowserSettings,
    pub(crate) search: SearchSettings,
    pub(crate) sandbox: SandboxSettings,
    pub(crate) daytona: Option<DaytonaSettings>,
    pub(crate) mcp: McpSettings,
    pub(crate) runflow: RunflowSettings,
    pub(crate) agent: AgentSettings,
    pub(crate) store: StoreSettings,
    pub(crate) server: ServerSettings,
    pub(crate) nats: NatsSettings,
    pub(crate) a2a: A2aSettings,
    pub(crate) telemetry: TelemetrySettings,
    pub(crate) permissions: crate::permissions::PermissionsSettings,
}
