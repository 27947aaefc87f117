//! The agent factory: one place that turns the loaded configuration into a ready agent of any
//! kind, applying `[agent]` options, policies, the workspace and the sandbox the same way for
//! every kind. Front ends (the command line, servers, workers) build agents only through it.
//!
//! Why one file past 700 lines (its tests included): each agent kind's construction is a few
//! lines, but every kind goes through the same steps (options, policies, workspace, sandbox, MCP)
//! in the same order, which one file shows side by side.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "browser")]
use agent_browser::BrowserConfig;
use agent_config::RulesFile;
use agent_config::{Config, McpServerConfig};
use agent_core::Agent;
use agent_llm::{ChatModel, LlmError};
use agent_mcp::{McpClientOptions, McpClients};
use agent_sandbox::{Confinement, ConfinementOptions, Sandbox};
use agent_toolcall::Policies;
use agent_tools::HumanInput;
use agent_web::WebSearch;
use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::flow::{FlowOptions, PlanningFlow};
use crate::options::AgentOptions;
use crate::permissions::project_denials;

/// BrowserAgent's name (`agent_browser::BROWSER_AGENT`, spelled here so that a build without
/// the `browser` feature still knows it).
const BROWSER_AGENT: &str = "browser";
/// DataAnalysis's name (`agent_charts::DATA_ANALYSIS`, spelled here so that a build without
/// the `charts` feature still knows it).
const DATA_ANALYSIS: &str = "Data_Analysis";

/// What Manus's builder warns in a build without the `browser` feature when `[browser]` is set.
#[cfg(not(feature = "browser"))]
const NO_BROWSER_WARNING: &str = "[browser] is set, but this build was made without the \
     `browser` cargo feature: Manus runs without browser_use";

/// The agents the factory builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// Manus, the general-purpose agent (python, browser, file editor, ask the user, and the
    /// tools of the MCP servers in `mcp.json`).
    Manus,
    /// SWEAgent, the programmer (bash and the file editor).
    Swe,
    /// BrowserAgent (a headless Chromium driven by `browser_use`).
    Browser,
    /// SandboxManus: shell, files, browser, image viewer and a desktop inside a sandbox.
    Sandbox,
    /// MCPAgent, on the tools of one MCP server ([`AgentFactory::with_mcp_server`]).
    Mcp,
    /// DataAnalysis: Python with pandas, charts and insights.
    DataAnalysis,
}

impl AgentKind {
    /// Every kind, in the order `--help` lists them.
    pub const ALL: [Self; 6] = [
        Self::Manus,
        Self::Swe,
        Self::Browser,
        Self::Sandbox,
        Self::Mcp,
        Self::DataAnalysis,
    ];

    /// The kind's short name, as command lines and APIs spell it (`manus`, `data_analysis`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manus => "manus",
            Self::Swe => "swe",
            Self::Browser => "browser",
            Self::Sandbox => "sandbox",
            Self::Mcp => "mcp",
            Self::DataAnalysis => "data_analysis",
        }
    }

    /// The agent's own name, as OpenManus spells it; also the `[llm.<name>]` section that
    /// configures its model.
    #[must_use]
    pub fn agent_name(self) -> &'static str {
        match self {
            Self::Manus => crate::MANUS,
            Self::Swe => crate::SWE,
            Self::Browser => BROWSER_AGENT,
            Self::Sandbox => crate::SANDBOX_MANUS,
            Self::Mcp => agent_mcp::MCP_AGENT_NAME,
            Self::DataAnalysis => DATA_ANALYSIS,
        }
    }

    /// One line on what the agent is for.
    #[must_use]
    pub fn description(self) -> &'static str {
        match self {
            Self::Manus => "The general-purpose agent (python, browser, file editor, ask the user)",
            Self::Swe => "The programmer (bash and the file editor)",
            Self::Browser => "The browser agent (a headless Chromium driven by browser_use)",
            Self::Sandbox => {
                "SandboxManus: shell, files, browser, image viewer and desktop in a sandbox"
            }
            Self::Mcp => "The MCP agent, on the tools of one MCP server",
            Self::DataAnalysis => "DataAnalysis: Python with pandas, charts and insights",
        }
    }

    /// The kind's step budget when `[agent] max_steps` does not set one: the constant declared
    /// once beside the kind's constructor ([`crate::MANUS_MAX_STEPS`], [`crate::SWE_MAX_STEPS`],
    /// `agent_browser::BROWSER_AGENT_MAX_STEPS`, [`crate::SANDBOX_MANUS_MAX_STEPS`],
    /// [`agent_mcp::MCP_AGENT_MAX_STEPS`], `agent_charts::DATA_ANALYSIS_MAX_STEPS`). `None` for a
    /// kind this build cannot make (BrowserAgent without the `browser` feature, DataAnalysis
    /// without `charts`).
    ///
    /// The generic layers' budgets, `agent_core::DEFAULT_MAX_STEPS` (BaseAgent, 10) and
    /// `agent_toolcall::DEFAULT_MAX_STEPS` (ToolCallAgent, 30), are only the fallback of an
    /// agent built in code that sets none; every kind here sets its own.
    #[must_use]
    pub fn default_max_steps(self) -> Option<u32> {
        match self {
            Self::Manus => Some(crate::MANUS_MAX_STEPS),
            Self::Swe => Some(crate::SWE_MAX_STEPS),
            #[cfg(feature = "browser")]
            Self::Browser => Some(agent_browser::BROWSER_AGENT_MAX_STEPS),
            #[cfg(not(feature = "browser"))]
            Self::Browser => None,
            Self::Sandbox => Some(crate::SANDBOX_MANUS_MAX_STEPS),
            Self::Mcp => Some(agent_mcp::MCP_AGENT_MAX_STEPS),
            #[cfg(feature = "charts")]
            Self::DataAnalysis => Some(agent_charts::DATA_ANALYSIS_MAX_STEPS),
            #[cfg(not(feature = "charts"))]
            Self::DataAnalysis => None,
        }
    }
}

impl fmt::Display for AgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not an [`AgentKind`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent kind `{0}` (known: manus, swe, browser, sandbox, mcp, data_analysis)")]
pub struct UnknownAgentKind(pub String);

impl FromStr for AgentKind {
    type Err = UnknownAgentKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == wanted || kind.agent_name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownAgentKind(s.to_owned()))
    }
}

/// Where the factory gets a model for an agent: called with the agent's name (its
/// `[llm.<name>]` section), or `"planning"` for a flow's planner. A session wraps the client
/// here (journal, retry events).
pub trait ModelSource: Send + Sync {
    /// The model for the agent called `agent`.
    ///
    /// # Errors
    ///
    /// Settings the client cannot use.
    fn model(&self, agent: &str) -> Result<Arc<dyn ChatModel>, LlmError>;
}

impl<F> ModelSource for F
where
    F: Fn(&str) -> Result<Arc<dyn ChatModel>, LlmError> + Send + Sync,
{
    fn model(&self, agent: &str) -> Result<Arc<dyn ChatModel>, LlmError> {
        self(agent)
    }
}

/// Why an agent could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FactoryError {
    /// The model settings of an agent are not usable.
    #[error("the model settings for `{agent}` are not usable: {source}")]
    Model {
        /// The agent (its `[llm.<name>]` section).
        agent: String,
        /// Why.
        #[source]
        source: LlmError,
    },
    /// The sandbox cannot run here (`[sandbox] use_sandbox = true`, or SandboxManus).
    #[error("{context}: {source}")]
    Sandbox {
        /// What needed the sandbox.
        context: &'static str,
        /// Why it cannot run.
        #[source]
        source: agent_sandbox::SandboxError,
    },
    /// The code-running tools cannot be confined here (`[permissions] sandbox`), and the
    /// configuration did not say to run them unconfined.
    #[error(transparent)]
    Confinement(#[from] agent_sandbox::ConfineError),
    /// A section of the configuration cannot be turned into settings.
    #[error("invalid [{section}] settings: {message}")]
    Settings {
        /// The section.
        section: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The MCP agent's server could not be reached.
    #[error("cannot connect to the MCP server ({transport}): {source}")]
    Mcp {
        /// The transport's name.
        transport: &'static str,
        /// Why.
        #[source]
        source: agent_mcp::McpError,
    },
    /// The MCP agent was asked for without a server.
    #[error("the MCP agent needs a server: set one with AgentFactory::with_mcp_server")]
    NoMcpServer,
    /// The agent needs a cargo feature this build was made without (`browser` for
    /// BrowserAgent, `charts` for DataAnalysis).
    #[error(
        "{what} needs the `{feature}` cargo feature, and this build was made without it \
         (rebuild with the default features, or `--features {feature}`)"
    )]
    FeatureDisabled {
        /// What needed it.
        what: &'static str,
        /// The feature.
        feature: &'static str,
    },
    /// The workspace cannot be created or resolved.
    #[error("cannot use the workspace {path}: {source}")]
    Workspace {
        /// The workspace.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Builds agents of every [`AgentKind`] from one configuration.
///
/// ```no_run
/// # async fn demo(config: agent_config::Config, model: std::sync::Arc<dyn agent_llm::ChatModel>)
/// # -> Result<(), agents::FactoryError> {
/// use agents::{AgentFactory, AgentKind};
///
/// let factory = AgentFactory::new(config).with_workspace("/tmp/work");
/// let models = move |_: &str| Ok(model.clone());
/// let mut built = factory.build(AgentKind::Swe, &models).await?;
/// let outcome = built.agent_mut().run(Some("List the files".into())).await;
/// built.shutdown().await;
/// # let _ = outcome;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct AgentFactory {
    config: Arc<Config>,
    workspace: PathBuf,
    human: Option<Arc<dyn HumanInput>>,
    mcp_server: Option<McpServerConfig>,
    python: Option<PathBuf>,
    files: Option<Arc<dyn agent_tools::FileOperator>>,
    approval_switch: Option<crate::permissions::ApprovalSwitch>,
}

impl fmt::Debug for AgentFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentFactory")
            .field("config", &self.config.source())
            .field("workspace", &self.workspace)
            .field("mcp_server", &self.mcp_server)
            .finish_non_exhaustive()
    }
}

impl AgentFactory {
    /// A factory for `config`, with the workspace it configures (`workspace.root`, else
    /// `./workspace`, relative to the current directory).
    #[must_use]
    pub fn new(config: Config) -> Self {
        let workspace = absolute(config.workspace_root());
        Self {
            config: Arc::new(config),
            workspace,
            human: None,
            mcp_server: None,
            python: None,
            files: None,
            approval_switch: None,
        }
    }

    /// Uses `workspace` (made absolute against the current directory) instead of the
    /// configured one.
    #[must_use]
    pub fn with_workspace(mut self, workspace: impl AsRef<Path>) -> Self {
        self.workspace = absolute(workspace.as_ref());
        self
    }

    /// Has `str_replace_editor` reach files through `files` instead of this machine's file
    /// system (not when the tools run in a sandbox: its files are in there). For a front end
    /// that holds the files itself, such as an editor over ACP (its unsaved buffers, its undo).
    #[must_use]
    pub fn with_file_operator(mut self, files: Arc<dyn agent_tools::FileOperator>) -> Self {
        self.files = Some(files);
        self
    }

    /// Has the agents' approval policy follow `switch` (set it to the configured policy first):
    /// a front end can change it while they live, as an editor's mode menu does.
    #[must_use]
    pub fn with_approval_switch(mut self, switch: crate::permissions::ApprovalSwitch) -> Self {
        self.approval_switch = Some(switch);
        self
    }

    /// Sends `ask_human` questions to `input` instead of the terminal.
    #[must_use]
    pub fn with_human_input(mut self, input: Arc<dyn HumanInput>) -> Self {
        self.human = Some(input);
        self
    }

    /// Adds `servers` after those of `mcp.json`: Manus connects them too (a server whose id is
    /// taken is skipped with a warning). For a front end whose client brings servers of its
    /// own, such as an editor over ACP.
    #[must_use]
    pub fn with_more_mcp_servers(
        mut self,
        servers: impl IntoIterator<Item = McpServerConfig>,
    ) -> Self {
        let config = Arc::make_mut(&mut self.config);
        for server in servers {
            // Never started: the configured server keeps its id.
            if config.mcp.server(&server.id).is_some() {
                tracing::warn!(server = %server.id, "an MCP server of this id is configured already; skipped");
                continue;
            }
            config.mcp.servers.push(server);
        }
        self
    }

    /// The server the MCP agent ([`AgentKind::Mcp`]) works on.
    #[must_use]
    pub fn with_mcp_server(mut self, server: McpServerConfig) -> Self {
        self.mcp_server = Some(server);
        self
    }

    /// Runs `python_execute` (and DataAnalysis's Python) with this interpreter instead of
    /// `python3` from `PATH`.
    #[must_use]
    pub fn with_python(mut self, python: impl Into<PathBuf>) -> Self {
        self.python = Some(python.into());
        self
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The workspace agents work in (absolute; created when an agent is built).
    #[must_use]
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Whether this factory can make `kind` at all: compiled into this build and, for the MCP
    /// agent, given its server ([`AgentFactory::with_mcp_server`]). What only building tells
    /// (a sandbox's container engine, an MCP server that answers) is not checked.
    #[must_use]
    pub fn builds(&self, kind: AgentKind) -> bool {
        kind.default_max_steps().is_some() && (kind != AgentKind::Mcp || self.mcp_server.is_some())
    }

    /// The model of `[agent] summary_llm`, when set.
    fn summary_model(
        &self,
        models: &dyn ModelSource,
    ) -> Result<Option<Arc<dyn ChatModel>>, FactoryError> {
        self.config
            .agent
            .summary_llm
            .as_deref()
            .map(|name| model_for(models, name))
            .transpose()
    }

    /// The options every agent gets: `[agent]` (steps, observation limit, policies),
    /// `[browser]`, `[search]`, the workspace and, with `with_sandbox`, what confines the
    /// code-running tools: the sandbox with `[sandbox] use_sandbox = true`, else the host
    /// confinement of `[permissions] sandbox` (none for `full-access`).
    ///
    /// # Errors
    ///
    /// A section that cannot be turned into settings, a workspace that cannot be created, a
    /// sandbox that cannot run, or a confinement that cannot be made here.
    pub async fn options(&self, with_sandbox: bool) -> Result<AgentOptions, FactoryError> {
        let workspace = self.create_workspace()?;
        let config = &self.config;
        let mut options = AgentOptions::new(&workspace);
        options.max_steps = config.agent.max_steps;
        options.max_observe = config.agent.max_observe;
        options.policies = Policies::from_settings(&config.agent);
        options.budget = agent_toolcall::budget_from_settings(&config.agent);
        options.compaction = agent_toolcall::Compaction::from_settings(&config.agent);
        // Secrets stay with the client: the provider keys never reach a tool process, and the
        // files holding them are out of the file tools' reach.
        agent_process::withhold_env(config.secret_env_names(std::env::vars()));
        options.secret_files = config.secret_files();
        options.human.clone_from(&self.human);
        options.files.clone_from(&self.files);
        options.approval_switch.clone_from(&self.approval_switch);
        options.python.clone_from(&self.python);
        #[cfg(feature = "browser")]
        {
            options.browser = BrowserConfig {
                // Downloads land in the workspace, where the run's file list names them.
                downloads_dir: Some(workspace.join("downloads")),
                ..BrowserConfig::from_settings(&config.browser)
            };
        }
        options.web_search = Some(Arc::new(WebSearch::from_settings(&config.search).map_err(
            |e| FactoryError::Settings {
                section: "search",
                message: e.to_string(),
            },
        )?));
        options.hooks.clone_from(&config.permissions.hooks);
        options.mcp = McpClientOptions::from_settings(&config.mcp);
        if with_sandbox && config.sandbox.use_sandbox {
            // The tools run in the sandbox with the workspace at its own path, so paths and
            // observations are the same as without it. No fallback: if the sandbox cannot run,
            // the agent is not built.
            let sandbox = agent_sandbox::from_settings(
                &config.sandbox,
                &workspace,
                agent_sandbox::SandboxFeatures::MIRRORED,
            )
            .await
            .map_err(|source| FactoryError::Sandbox {
                context: "[sandbox] use_sandbox = true, but the sandbox cannot run",
                source,
            })?;
            options = AgentOptions {
                workspace: sandbox.workspace().to_path_buf(),
                ..options
            }
            .with_sandbox(sandbox);
        } else if with_sandbox {
            // Confined on the host unless told otherwise: no fallback to full access either.
            // The rules file is hidden too: a tool must not write itself a permission.
            let wanted = ConfinementOptions::from_settings(&config.permissions, &workspace)
                .hiding(config.secret_files())
                .hiding(RulesFile::default_path());
            options.confinement = Confinement::new(&wanted).await?.map(Arc::new);
        }
        options.approval = config.permissions.approval;
        options.rules = project_denials(&workspace).map_err(|source| FactoryError::Settings {
            section: "permissions",
            message: format!("the project's rules: {source}"),
        })?;
        options
            .rules
            .extend(config.permissions.rules.iter().cloned());
        options.rules_file = RulesFile::default_path();
        if let Some(path) = &options.rules_file {
            match RulesFile::load(path) {
                Ok(file) => options.rules.extend(file.rules),
                Err(source) => {
                    return Err(FactoryError::Settings {
                        section: "permissions",
                        message: format!("the rules file: {source}"),
                    });
                }
            }
        }
        Ok(options)
    }

    /// Builds a ready agent of `kind`, its model taken from `models`.
    ///
    /// # Errors
    ///
    /// See [`FactoryError`]. Nothing the factory started is left running on error.
    pub async fn build(
        &self,
        kind: AgentKind,
        models: &dyn ModelSource,
    ) -> Result<BuiltAgent, FactoryError> {
        let model = |name: &str| model_for(models, name);
        let summary_model = self.summary_model(models)?;
        // SandboxManus has a sandbox of its own; every other kind gets `use_sandbox`'s.
        let mut options = self.options(kind != AgentKind::Sandbox).await?;
        options.compaction.summary_model = summary_model;
        let mut sandbox = options.sandbox.clone();
        let mut warnings = Vec::new();
        let built: Result<Box<dyn Agent>, FactoryError> = async {
            let agent: Box<dyn Agent> = match kind {
                AgentKind::Manus => {
                    let llm = model(kind.agent_name())?;
                    // The servers connect in the background while the rest starts; the first
                    // step waits for them a bounded time, and their failures are logged then.
                    let agent =
                        crate::manus_lazy_mcp(llm, &options, self.config.mcp.servers.clone());
                    #[cfg(not(feature = "browser"))]
                    if self.config.browser != agent_config::BrowserSettings::default() {
                        warnings.push(NO_BROWSER_WARNING.to_owned());
                    }
                    let agent = agent.with_tools_kept_between_runs();
                    match self.a2a_call() {
                        Some(tool) => Box::new(agent.with_tool(tool)),
                        None => Box::new(agent),
                    }
                }
                AgentKind::Swe => Box::new(
                    crate::swe(model(kind.agent_name())?, &options).with_tools_kept_between_runs(),
                ),
                #[cfg(feature = "browser")]
                AgentKind::Browser => {
                    let llm = model(kind.agent_name())?;
                    let mut tool =
                        agent_browser::BrowserUseTool::with_config(options.browser.clone());
                    if let Some(search) = &options.web_search {
                        tool = tool.with_web_search(Arc::clone(search));
                    }
                    Box::new(
                        options
                            .apply(agent_browser::browser_agent(llm, tool))
                            .with_tools_kept_between_runs(),
                    )
                }
                #[cfg(not(feature = "browser"))]
                AgentKind::Browser => {
                    return Err(FactoryError::FeatureDisabled {
                        what: "BrowserAgent",
                        feature: "browser",
                    });
                }
                AgentKind::Sandbox => {
                    let llm = model(kind.agent_name())?;
                    let own = match agent_sandbox::from_settings(
                        &self.config.sandbox,
                        &options.workspace,
                        agent_sandbox::SandboxFeatures::DESKTOP,
                    )
                    .await
                    {
                        // Without a display SandboxManus still works, without computer_use.
                        Err(agent_sandbox::SandboxError::DisplayUnavailable(reason)) => {
                            warn!(%reason, "SandboxManus's sandbox has no display; computer_use is not offered");
                            warnings.push(format!(
                                "computer_use is not offered because the sandbox has no display: {reason}"
                            ));
                            agent_sandbox::from_settings(
                                &self.config.sandbox,
                                &options.workspace,
                                agent_sandbox::SandboxFeatures::default(),
                            )
                            .await
                        }
                        built => built,
                    }
                    .map_err(|source| FactoryError::Sandbox {
                        context: "SandboxManus needs the sandbox, and it cannot run",
                        source,
                    })?;
                    sandbox = Some(Arc::clone(&own));
                    Box::new(
                        crate::sandbox_manus(llm, &options, own).with_tools_kept_between_runs(),
                    )
                }
                AgentKind::Mcp => {
                    let server = self.mcp_server.as_ref().ok_or(FactoryError::NoMcpServer)?;
                    let llm = model(kind.agent_name())?;
                    let mut clients = McpClients::new(McpClientOptions::default());
                    clients
                        .connect(server)
                        .await
                        .map_err(|source| FactoryError::Mcp {
                            transport: server.transport.kind(),
                            source,
                        })?;
                    Box::new(
                        options
                            .apply(agent_mcp::mcp_agent(llm, clients))
                            .with_tools_kept_between_runs(),
                    )
                }
                AgentKind::DataAnalysis => Box::new(
                    self.data_analysis(&options, model(kind.agent_name())?)?
                        .with_tools_kept_between_runs(),
                ),
            };
            Ok(agent)
        }
        .await;
        match built {
            Ok(agent) => Ok(BuiltAgent {
                kind,
                agent,
                sandbox,
                _confinement: options.confinement.clone(),
                warnings,
                workspace: options.workspace,
            }),
            Err(error) => {
                if let Some(sandbox) = sandbox {
                    cleanup_sandbox(sandbox.as_ref()).await;
                }
                Err(error)
            }
        }
    }

    /// `a2a_call` over the agents of `[a2a]`, when any are listed.
    fn a2a_call(&self) -> Option<agent_a2a::A2aCall> {
        if self.config.a2a.agents.is_empty() {
            return None;
        }
        let http = match agent_llm::http::shared_client() {
            Ok(http) => http,
            Err(error) => {
                warn!(%error, "no HTTP client for a2a_call; the tool is not offered");
                return None;
            }
        };
        let peers = self
            .config
            .a2a
            .agents
            .iter()
            .map(|agent| agent_a2a::A2aPeer {
                name: agent.name.clone(),
                url: agent.url.clone(),
                description: agent.description.clone(),
                token: agent
                    .token_env
                    .as_deref()
                    .and_then(|name| std::env::var(name).ok()),
            })
            .collect();
        Some(agent_a2a::A2aCall::new(&http, peers))
    }

    #[cfg(feature = "charts")]
    #[allow(clippy::unnecessary_wraps)] // Fallible without the `charts` feature.
    fn data_analysis(
        &self,
        options: &AgentOptions,
        llm: Arc<dyn ChatModel>,
    ) -> Result<agent_toolcall::ToolCallAgent, FactoryError> {
        let runner = agent_charts::PythonRunner {
            interpreter: self.python.clone(),
            launcher: options.launcher().unwrap_or_default(),
        };
        let agent = agent_charts::data_analysis_with_runner(llm, &options.workspace, &runner);
        Ok(options.apply(agent))
    }

    /// DataAnalysis in a build without the `charts` feature: refused by name.
    #[cfg(not(feature = "charts"))]
    #[allow(clippy::unused_self)]
    fn data_analysis(
        &self,
        _options: &AgentOptions,
        _llm: Arc<dyn ChatModel>,
    ) -> Result<agent_toolcall::ToolCallAgent, FactoryError> {
        Err(FactoryError::FeatureDisabled {
            what: "DataAnalysis",
            feature: "charts",
        })
    }

    /// The planning flow of `openmanus flow` (OpenManus's `run_flow.py`): Manus (its MCP
    /// servers connected at its first step), SWE and, with `[runflow] use_data_analysis_agent`,
    /// DataAnalysis as executors, each with the same options as when built alone; `[runflow]`
    /// sets the retries and the time limit. The planner's model is `models.model("planning")`.
    ///
    /// # Errors
    ///
    /// As [`AgentFactory::build`].
    pub async fn build_flow(&self, models: &dyn ModelSource) -> Result<BuiltFlow, FactoryError> {
        let model = |name: &str| model_for(models, name);
        let summary_model = self.summary_model(models)?;
        let mut options = self.options(true).await?;
        options.compaction.summary_model = summary_model;
        let sandbox = options.sandbox.clone();
        let built = (|| {
            let config = &self.config;
            let manus =
                crate::manus_lazy_mcp(model(crate::MANUS)?, &options, config.mcp.servers.clone());
            let swe = crate::swe(model(crate::SWE)?, &options);
            let mut flow = PlanningFlow::new(model("planning")?)
                .with_agent("manus", manus)
                .with_agent("swe", swe);
            if config.runflow.use_data_analysis_agent {
                let agent = self.data_analysis(&options, model(DATA_ANALYSIS)?)?;
                flow = flow.with_agent("data_analysis", agent);
            }
            Ok(flow.with_options(FlowOptions {
                primary_agent: Some("manus".to_owned()),
                max_step_retries: config.runflow.max_step_retries,
                time_limit: (config.runflow.timeout_secs > 0)
                    .then(|| Duration::from_secs(config.runflow.timeout_secs)),
                budget: options.budget,
                ..FlowOptions::default()
            }))
        })();
        match built {
            Ok(flow) => Ok(BuiltFlow {
                flow,
                sandbox,
                _confinement: options.confinement.clone(),
                workspace: options.workspace,
            }),
            Err(error) => {
                if let Some(sandbox) = sandbox {
                    cleanup_sandbox(sandbox.as_ref()).await;
                }
                Err(error)
            }
        }
    }

    fn create_workspace(&self) -> Result<PathBuf, FactoryError> {
        std::fs::create_dir_all(&self.workspace).map_err(|source| FactoryError::Workspace {
            path: self.workspace.clone(),
            source,
        })?;
        Ok(self.workspace.clone())
    }
}

/// The model for the agent called `name`, its failure named after the agent.
fn model_for(models: &dyn ModelSource, name: &str) -> Result<Arc<dyn ChatModel>, FactoryError> {
    models.model(name).map_err(|source| FactoryError::Model {
        agent: name.to_owned(),
        source,
    })
}

/// `path` made absolute against the current directory (left as it is if that cannot be read).
fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir().map_or_else(|_| path.to_path_buf(), |cwd| cwd.join(path))
}

async fn cleanup_sandbox(sandbox: &dyn Sandbox) {
    if let Err(error) = sandbox.cleanup().await {
        warn!(%error, "cleaning up the sandbox");
    }
}

/// An agent the factory built, with what it owns besides its tools (the sandbox).
pub struct BuiltAgent {
    kind: AgentKind,
    agent: Box<dyn Agent>,
    sandbox: Option<Arc<dyn Sandbox>>,
    /// Kept for the tools it launches (its private temporary directory).
    _confinement: Option<Arc<Confinement>>,
    warnings: Vec<String>,
    workspace: PathBuf,
}

impl fmt::Debug for BuiltAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltAgent")
            .field("kind", &self.kind)
            .field("agent", &self.agent.base().name)
            .field("workspace", &self.workspace)
            .field("warnings", &self.warnings)
            .finish_non_exhaustive()
    }
}

impl BuiltAgent {
    /// The agent's kind.
    #[must_use]
    pub fn kind(&self) -> AgentKind {
        self.kind
    }

    /// The agent.
    #[must_use]
    pub fn agent(&self) -> &dyn Agent {
        self.agent.as_ref()
    }

    /// The agent, mutably (to run it).
    pub fn agent_mut(&mut self) -> &mut dyn Agent {
        self.agent.as_mut()
    }

    /// The workspace as the agent's tools see it.
    #[must_use]
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// What went wrong without stopping the build (an MCP server that could not be reached;
    /// SandboxManus's display that could not start, so `computer_use` is not offered).
    #[must_use]
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Ends the agent: [`Agent::shutdown`] (MCP servers disconnected, browser closed, the
    /// tools' processes stopped), then the sandbox is removed. Safe to call twice.
    pub async fn shutdown(&mut self) {
        self.agent.shutdown().await;
        if let Some(sandbox) = self.sandbox.take() {
            cleanup_sandbox(sandbox.as_ref()).await;
        }
    }
}

/// A planning flow the factory built, with what it owns besides its agents (the sandbox).
pub struct BuiltFlow {
    flow: PlanningFlow,
    sandbox: Option<Arc<dyn Sandbox>>,
    /// Kept for the tools it launches (its private temporary directory).
    _confinement: Option<Arc<Confinement>>,
    workspace: PathBuf,
}

impl fmt::Debug for BuiltFlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltFlow")
            .field("agents", &self.flow.agent_keys())
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl BuiltFlow {
    /// The flow.
    #[must_use]
    pub fn flow(&self) -> &PlanningFlow {
        &self.flow
    }

    /// The flow, mutably (to execute it, or add an event handler).
    pub fn flow_mut(&mut self) -> &mut PlanningFlow {
        &mut self.flow
    }

    /// The workspace as the executors' tools see it.
    #[must_use]
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Ends every executor ([`Agent::shutdown`]), then removes the sandbox. Safe to call twice.
    pub async fn shutdown(&mut self) {
        self.flow.shutdown_agents().await;
        if let Some(sandbox) = self.sandbox.take() {
            cleanup_sandbox(sandbox.as_ref()).await;
        }
    }
}
