//! Manus's MCP servers: [`ManusHooks`] and its start paths (seen in OpenManus, seed point 8).
//!
//! * [`manus_with_mcp`] connects the servers at once (OpenManus's `await Manus.create()`, used
//!   by main.py): the tools are in the agent before it runs, and a server that hangs holds the
//!   start for its connect timeout.
//! * [`manus_lazy_mcp`] (what the factory builds, for every front end) starts connecting them in
//!   the background as it is built ([`McpStartup`]) — or at the first `think()` when built
//!   outside a Tokio runtime. The first step waits for them at most
//!   [`McpClientOptions::startup_wait`], counted from the start, and its request offers the
//!   tools of the servers that are ready; a server still connecting joins at a later step when
//!   it is ready, and the model is told its tools are new. OpenManus's lazy `Manus()` waited
//!   for every server at the first step instead.
//!
//! Either way a server that cannot be reached is a warning ([`McpWarning`]) and the others keep
//! working. Each server tool is offered as `mcp_{server_id}_{tool}`. The hooks own the
//! connections (the tools hold them weakly), list the tools again when a server announces a
//! change (`notifications/tools/list_changed`) or goes away, and keep the connections across runs:
//! per-run cleanup does not disconnect, so an interactive session keeps its servers. The tool
//! set is kept in line with the listings by [`agent_mcp::McpToolSync`], the same code MCPAgent
//! uses. End the session with the `shutdown` hook ([`ToolCallHooks::shutdown`]), which
//! [`disconnect_mcp`] calls.

use std::sync::Arc;

#[cfg(feature = "browser")]
use agent_browser::{BrowserContextHelper, recently_browsed};
use agent_config::McpServerConfig;
use agent_core::AgentError;
use agent_llm::ChatModel;
use agent_mcp::{McpClientOptions, McpClients, McpStartup, McpToolSync, McpWarning, ToolChanges};
use agent_toolcall::{BeforeThink, ToolCallAgent, ToolCallCore, ToolCallHooks};
#[cfg(feature = "browser")]
use agent_tools::Tool;
use agent_tools::ToolCollection;
use async_trait::async_trait;
use tracing::{info, warn};

#[cfg(feature = "browser")]
use agent_browser::BrowserUseTool;
use agent_tools::Terminate;

use crate::options::AgentOptions;
use crate::prompts::{MANUS, MANUS_NEXT_STEP_PROMPT, MANUS_SYSTEM_PROMPT, with_directory};

/// Manus's step budget when `[agent] max_steps` does not set one (OpenManus's 20). The one place
/// it is declared: [`manus`] and the agent factory read it.
pub const MANUS_MAX_STEPS: u32 = 20;

/// Manus: a ToolCallAgent with [`ManusHooks`].
pub type Manus = ToolCallAgent<ManusHooks>;

/// Manus's hooks: its MCP servers, connected at once or at the first `think()` (see the
/// [module docs](self)).
#[derive(Debug, Default)]
pub struct ManusHooks {
    clients: McpClients,
    /// Servers still to start connecting, at the next `think()` (the lazy path, built outside a
    /// runtime).
    pending: Vec<McpServerConfig>,
    /// Servers connecting in the background.
    startup: Option<McpStartup>,
    /// Whether a step has already waited for the servers connecting at the start.
    waited: bool,
    options: McpClientOptions,
    /// The MCP tools installed in the agent's tool set.
    tools: McpToolSync,
    warnings: Vec<McpWarning>,
    #[cfg(feature = "browser")]
    browser: Option<BrowserContextHelper>,
}

impl ManusHooks {
    /// Hooks with no MCP server.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Hooks over servers that are already connected.
    #[must_use]
    pub fn connected(clients: McpClients) -> Self {
        Self {
            clients,
            ..Self::default()
        }
    }

    /// Hooks that start connecting `servers` in the background now (within a Tokio runtime;
    /// outside one, at the first `think()`), with these timeouts; the first step waits for them
    /// at most [`McpClientOptions::startup_wait`].
    #[must_use]
    pub fn lazy(servers: Vec<McpServerConfig>, options: McpClientOptions) -> Self {
        let mut hooks = Self {
            clients: McpClients::new(options.clone()),
            pending: servers,
            options,
            ..Self::default()
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            hooks.begin_pending();
        }
        hooks
    }

    /// Uses `helper` for the browser prompt while Manus browses (the `browser` feature).
    #[cfg(feature = "browser")]
    pub fn set_browser(&mut self, helper: BrowserContextHelper) {
        self.browser = Some(helper);
    }

    /// The browser context, if set (the `browser` feature).
    #[cfg(feature = "browser")]
    #[must_use]
    pub fn browser(&self) -> Option<&BrowserContextHelper> {
        self.browser.as_ref()
    }

    /// The connections.
    #[must_use]
    pub fn clients(&self) -> &McpClients {
        &self.clients
    }

    /// Whether servers are still to be connected or still connecting.
    #[must_use]
    pub fn is_pending(&self) -> bool {
        !self.pending.is_empty() || self.startup.as_ref().is_some_and(|s| !s.is_done())
    }

    /// The ids of the servers still to be connected or still connecting.
    #[must_use]
    pub fn connecting(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.pending.iter().map(|s| s.id.as_str()).collect();
        if let Some(startup) = &self.startup {
            ids.extend(startup.connecting());
        }
        ids
    }

    /// Waits until every server connecting has connected or failed, or `limit` has passed
    /// since they began; the ones that connected join at the next `think()`. For a front end
    /// that wants every server before it starts (the first step waits by itself).
    pub async fn wait_connecting(&mut self, limit: std::time::Duration) {
        self.begin_pending();
        if let Some(startup) = &mut self.startup {
            let warnings = startup.settle(&mut self.clients, limit).await;
            self.warnings.extend(warnings);
        }
    }

    /// The agent-facing names of the MCP tools in the agent's tool set, sorted.
    #[must_use]
    pub fn mcp_tool_names(&self) -> Vec<&str> {
        self.tools.tool_names()
    }

    /// The servers the lazy path could not connect (the eager path returns its warnings from
    /// [`manus_with_mcp`]); taking them empties the list.
    pub fn take_warnings(&mut self) -> Vec<McpWarning> {
        std::mem::take(&mut self.warnings)
    }

    /// Starts connecting the servers not yet started, in the background.
    fn begin_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let servers: Vec<McpServerConfig> = std::mem::take(&mut self.pending)
            .into_iter()
            .filter(|s| !self.clients.contains(&s.id))
            .collect();
        info!(servers = servers.len(), "connecting Manus's MCP servers");
        // Only the lazy constructor or a think starts them, once: there is never a second set.
        self.startup = Some(McpStartup::begin(&servers, &self.options));
    }

    /// Takes in the servers connecting in the background: the first time, waiting for them at
    /// most the startup wait and installing their tools silently (the first request offers
    /// them); later, without waiting, announcing the tools of servers that joined. Cancel-safe:
    /// a step cancelled while waiting waits again, for what is left of the startup wait.
    async fn take_in_connected(&mut self, core: &mut ToolCallCore) {
        self.begin_pending();
        let Some(startup) = &mut self.startup else {
            self.refresh(core).await;
            return;
        };
        if self.waited {
            let warnings = startup.collect_ready(&mut self.clients);
            self.warnings.extend(warnings);
            if startup.is_done() {
                self.startup = None;
            }
            self.refresh(core).await;
            return;
        }
        let warnings = startup
            .settle(&mut self.clients, self.options.startup_wait)
            .await;
        self.waited = true;
        self.warnings.extend(warnings);
        let still = startup.connecting();
        if !still.is_empty() {
            warn!(
                servers = ?still,
                waited_secs = startup.elapsed().as_secs(),
                "MCP servers still connecting; the run goes on without them and their tools \
                 are added when they are ready"
            );
        }
        if startup.is_done() {
            self.startup = None;
        }
        let installed = self.sync(&mut core.tools);
        info!(tools = ?installed.added, "MCP tools installed");
    }

    /// Brings `tools` in line with the servers' last listings (see [`McpToolSync::sync`]).
    /// Returns what changed.
    pub(crate) fn sync(&mut self, tools: &mut ToolCollection) -> ToolChanges {
        self.tools.sync(&self.clients, tools)
    }

    /// Lists the tools again when a server announced a change or went away, and syncs `core`'s
    /// tools; changes after the first install are told to the model in a system message.
    async fn refresh(&mut self, core: &mut ToolCallCore) {
        if !self.tools.needs_refresh(&self.clients) {
            return;
        }
        self.tools
            .refresh(&self.clients, &mut core.tools)
            .await
            .announce(&mut core.base);
    }

    /// Uninstalls every MCP tool from `tools` and disconnects every server (the end of the
    /// session). Servers not yet connected are forgotten.
    async fn disconnect(&mut self, tools: &mut ToolCollection) {
        self.tools.uninstall_all(tools);
        self.pending.clear();
        if let Some(startup) = self.startup.take() {
            startup.cancel().await;
        }
        self.clients.disconnect_all().await;
    }
}

#[async_trait]
impl ToolCallHooks for ManusHooks {
    async fn before_think(&mut self, core: &mut ToolCallCore) -> Result<BeforeThink, AgentError> {
        self.take_in_connected(core).await;
        #[cfg(feature = "browser")]
        if let Some(helper) = &self.browser
            && recently_browsed(core.base.memory.messages(), 3, helper.tool().name())
        {
            let prompt = helper.format_next_step_prompt(core).await;
            // Plain: think() adds the stuck hint once while Manus is stuck.
            return Ok(BeforeThink::ProceedWithPrompt(prompt));
        }
        Ok(BeforeThink::Proceed)
    }

    /// The end of Manus's life: the MCP tools leave its tool set and every server is
    /// disconnected (stdio servers' processes are stopped).
    async fn shutdown(&mut self, core: &mut ToolCallCore) {
        self.disconnect(&mut core.tools).await;
    }
}

/// Manus with the MCP servers `servers` connected at once (OpenManus's `Manus.create()`): their
/// tools are in the tool set before the first run. Servers that could not be connected are
/// returned as warnings; the agent works with the others.
pub async fn manus_with_mcp(
    llm: Arc<dyn ChatModel>,
    options: &AgentOptions,
    servers: &[McpServerConfig],
) -> (Manus, Vec<McpWarning>) {
    let (clients, warnings) = McpClients::connect_all(servers, options.mcp.clone()).await;
    let hooks = ManusHooks::connected(clients);
    (build_manus(llm, options, hooks), warnings)
}

/// Manus that connects the MCP servers `servers` in the background from now (at its first
/// `think()` when built outside a Tokio runtime); its first step waits for them at most
/// `options.mcp.startup_wait`, and servers ready later join at a later step (see the
/// [module docs](self)). Servers that cannot be connected are logged and kept in
/// [`ManusHooks::take_warnings`].
#[must_use]
pub fn manus_lazy_mcp(
    llm: Arc<dyn ChatModel>,
    options: &AgentOptions,
    servers: Vec<McpServerConfig>,
) -> Manus {
    let hooks = ManusHooks::lazy(servers, options.mcp.clone());
    build_manus(llm, options, hooks)
}

/// Ends Manus's MCP session: removes the MCP tools from its tool set and disconnects every
/// server (stdio servers' processes are stopped). The agent keeps working with its own tools.
/// Call it when the session is over, not between the runs of an interactive session.
pub async fn disconnect_mcp(agent: &mut Manus) {
    let (core, hooks) = agent.parts_mut();
    hooks.shutdown(core).await;
}

/// Manus's own tools, in OpenManus's order: `python_execute`, `browser_use` (with the `browser`
/// feature), `str_replace_editor`, `ask_human` and `terminate`; and the browser tool itself,
/// for the browser context.
#[cfg(feature = "browser")]
fn manus_tools(
    options: &AgentOptions,
    llm: &Arc<dyn ChatModel>,
) -> (ToolCollection, Arc<BrowserUseTool>) {
    let browser = options.browser(llm);
    let mut tools = ToolCollection::new();
    tools.add_shared(options.python_tool());
    tools.add_shared(browser.clone());
    tools.add_tool(options.editor());
    tools.add_tool(options.ask_human());
    tools.add_tool(Terminate);
    (tools, browser)
}

/// Manus's own tools in a build without the `browser` feature: `python_execute`,
/// `str_replace_editor`, `ask_human` and `terminate`.
#[cfg(not(feature = "browser"))]
fn manus_tools(options: &AgentOptions) -> ToolCollection {
    let mut tools = ToolCollection::new();
    tools.add_shared(options.python_tool());
    tools.add_tool(options.editor());
    tools.add_tool(options.ask_human());
    tools.add_tool(Terminate);
    tools
}

/// Manus with its own tools, the tools `hooks` already has from MCP servers, and the browser
/// context.
pub(crate) fn build_manus(
    llm: Arc<dyn ChatModel>,
    options: &AgentOptions,
    mut hooks: ManusHooks,
) -> Manus {
    #[cfg(feature = "browser")]
    let mut tools = {
        let (tools, browser) = manus_tools(options, &llm);
        hooks.set_browser(BrowserContextHelper::new(browser));
        tools
    };
    #[cfg(not(feature = "browser"))]
    let mut tools = manus_tools(options);
    hooks.sync(&mut tools);
    let agent = ToolCallAgent::new(llm)
        .with_name(MANUS)
        .with_description(
            "A versatile agent that solves many kinds of tasks with tools: code, files, the \
             web, and questions to the user.",
        )
        .with_system_prompt(with_directory(MANUS_SYSTEM_PROMPT, &options.workspace))
        .with_next_step_prompt(MANUS_NEXT_STEP_PROMPT)
        .with_tools(tools)
        .with_max_steps(MANUS_MAX_STEPS)
        .with_max_observe(10_000);
    options.apply(agent).with_hooks(hooks)
}

/// Manus, the general-purpose agent, without MCP servers: `python_execute`, `browser_use` (with
/// the `browser` feature), `str_replace_editor`, `ask_human` and `terminate`,
/// [`MANUS_MAX_STEPS`] steps, observations cut at 10,000 characters, the workspace in its system prompt. While one of its last three messages calls
/// `browser_use`, each step's prompt is the browser prompt with the current browser state.
/// [`manus_with_mcp`] and [`manus_lazy_mcp`] add
/// the tools of MCP servers.
pub fn manus(llm: Arc<dyn ChatModel>, options: &AgentOptions) -> Manus {
    build_manus(llm, options, ManusHooks::new())
}
