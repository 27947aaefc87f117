//! Manus's MCP servers: [`ManusHooks`] and the two start paths of OpenManus (seed point 8).
//!
//! * [`manus_with_mcp`] connects the servers at once (OpenManus's `await Manus.create()`, used
//!   by main.py): the tools are in the agent before it runs.
//! * [`manus_lazy_mcp`] connects them at the first `think()` (OpenManus's `Manus()` with its
//!   lazy `initialize_mcp_servers`, used by run_flow.py): building is instant and synchronous,
//!   the first step waits for the connections, and the first request to the model already
//!   offers their tools.
//!
//! Either way a server that cannot be reached is a warning ([`McpWarning`]) and the others keep
//! working. Each server tool is offered as `mcp_{server_id}_{tool}`. The hooks own the
//! connections (the tools hold them weakly), list the tools again when a server announces a
//! change (`notifications/tools/list_changed`) or goes away, and keep the connections across runs:
//! per-run cleanup does not disconnect, so an interactive session keeps its servers. End the
//! session with [`disconnect_mcp`].

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_browser::{BrowserContextHelper, recently_browsed};
use agent_config::McpServerConfig;
use agent_core::{AgentError, Message};
use agent_llm::ChatModel;
use agent_mcp::{McpClientOptions, McpClients, McpTool, McpWarning};
use agent_toolcall::{BeforeThink, ToolCallAgent, ToolCallCore, ToolCallHooks};
use agent_tools::{Tool, ToolCollection};
use async_trait::async_trait;
use serde_json::Value;
use tracing::{info, warn};

use crate::agents::AgentOptions;

/// Manus: a ToolCallAgent with [`ManusHooks`].
pub type Manus = ToolCallAgent<ManusHooks>;

/// What an installed MCP tool looked like: original name, schema, description.
type Installed = (String, Value, String);

/// Manus's hooks: its MCP servers, connected at once or at the first `think()` (see the
/// [module docs](self)).
#[derive(Debug, Default)]
pub struct ManusHooks {
    clients: McpClients,
    /// Servers still to connect at the next `think()` (the lazy path).
    pending: Vec<McpServerConfig>,
    options: McpClientOptions,
    /// Agent-facing name → what was installed under it.
    installed: BTreeMap<String, Installed>,
    /// The servers that were alive at the last sync.
    alive: Vec<String>,
    warnings: Vec<McpWarning>,
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

    /// Hooks that connect `servers` at the first `think()`, with these timeouts.
    #[must_use]
    pub fn lazy(servers: Vec<McpServerConfig>, options: McpClientOptions) -> Self {
        Self {
            clients: McpClients::new(options.clone()),
            pending: servers,
            options,
            ..Self::default()
        }
    }

    /// Uses `helper` for the browser prompt while Manus browses.
    pub fn set_browser(&mut self, helper: BrowserContextHelper) {
        self.browser = Some(helper);
    }

    /// The browser context, if set.
    #[must_use]
    pub fn browser(&self) -> Option<&BrowserContextHelper> {
        self.browser.as_ref()
    }

    /// The connections.
    #[must_use]
    pub fn clients(&self) -> &McpClients {
        &self.clients
    }

    /// Whether servers are still waiting for the first `think()` to be connected.
    #[must_use]
    pub fn is_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The agent-facing names of the MCP tools in the agent's tool set, sorted.
    #[must_use]
    pub fn mcp_tool_names(&self) -> Vec<&str> {
        self.installed.keys().map(String::as_str).collect()
    }

    /// The servers the lazy path could not connect (the eager path returns its warnings from
    /// [`manus_with_mcp`]); taking them empties the list.
    pub fn take_warnings(&mut self) -> Vec<McpWarning> {
        std::mem::take(&mut self.warnings)
    }

    /// Connects the pending servers (the lazy path). The list is only emptied once the
    /// connections are made, so a step cancelled while connecting connects again next time.
    async fn connect_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let servers: Vec<McpServerConfig> = self
            .pending
            .iter()
            .filter(|s| !self.clients.contains(&s.id))
            .cloned()
            .collect();
        info!(servers = servers.len(), "connecting Manus's MCP servers");
        let (clients, warnings) = McpClients::connect_all(&servers, self.options.clone()).await;
        let previous = std::mem::replace(&mut self.clients, clients);
        self.pending.clear();
        if !previous.server_ids().is_empty() {
            warn!("replacing existing MCP connections; they are dropped");
        }
        self.warnings.extend(warnings);
    }

    fn alive_servers(&self) -> Vec<String> {
        self.clients
            .server_ids()
            .into_iter()
            .filter(|id| self.clients.is_server_alive(id))
            .map(str::to_owned)
            .collect()
    }

    /// Brings `tools` in line with the servers' last listings: added tools are installed,
    /// removed ones (or those of a server that went away) uninstalled, changed ones replaced.
    /// Returns the added and removed names.
    pub(crate) fn sync(&mut self, tools: &mut ToolCollection) -> (Vec<String>, Vec<String>) {
        self.alive = self.alive_servers();
        let current: BTreeMap<String, Arc<McpTool>> = self
            .clients
            .mcp_tools()
            .into_iter()
            .map(|t| (t.name().to_owned(), t))
            .collect();
        let removed: Vec<String> = self
            .installed
            .keys()
            .filter(|name| !current.contains_key(*name))
            .cloned()
            .collect();
        for name in &removed {
            tools.remove_tool(name);
            self.installed.remove(name);
        }
        let mut added = Vec::new();
        for (name, tool) in current {
            let entry = (
                tool.original_name().to_owned(),
                tool.parameters(),
                tool.description().to_owned(),
            );
            match self.installed.get(&name) {
                Some(old) if *old == entry => continue,
                Some(_) => {
                    info!(tool = %name, "MCP tool changed");
                    tools.remove_tool(&name);
                }
                None => {}
            }
            if tools.add_shared(tool) {
                if !self.installed.contains_key(&name) {
                    added.push(name.clone());
                }
                self.installed.insert(name, entry);
            } else {
                warn!(tool = %name, "an MCP tool has the name of a built-in tool; skipped");
            }
        }
        (added, removed)
    }

    /// Lists the tools again when a server announced a change or went away, and syncs `core`'s
    /// tools; changes after the first install are told to the model in a system message.
    async fn refresh(&mut self, core: &mut ToolCallCore) {
        if !self.clients.tools_changed() && self.alive_servers() == self.alive {
            return;
        }
        for warning in self.clients.refresh_tools().await {
            warn!(server = %warning.server, error = %warning.error, "MCP tool refresh failed");
        }
        let (added, removed) = self.sync(&mut core.tools);
        if !added.is_empty() {
            info!(tools = ?added, "new MCP tools");
            core.base.update_memory(Message::system_message(format!(
                "New tools available: {}",
                added.join(", ")
            )));
        }
        if !removed.is_empty() {
            info!(tools = ?removed, "MCP tools removed");
            core.base.update_memory(Message::system_message(format!(
                "Tools no longer available: {}",
                removed.join(", ")
            )));
        }
    }

    /// Uninstalls every MCP tool from `tools` and disconnects every server (the end of the
    /// session). Servers not yet connected are forgotten.
    async fn disconnect(&mut self, tools: &mut ToolCollection) {
        for name in std::mem::take(&mut self.installed).keys() {
            tools.remove_tool(name);
        }
        self.pending.clear();
        self.alive.clear();
        self.clients.disconnect_all().await;
    }
}

#[async_trait]
impl ToolCallHooks for ManusHooks {
    async fn before_think(&mut self, core: &mut ToolCallCore) -> Result<BeforeThink, AgentError> {
        if self.is_pending() {
            self.connect_pending().await;
            let (added, _) = self.sync(&mut core.tools);
            info!(tools = ?added, "MCP tools installed");
        } else {
            self.refresh(core).await;
        }
        if let Some(helper) = &self.browser
            && recently_browsed(core.base.memory.messages(), 3, helper.tool().name())
        {
            let prompt = helper.format_next_step_prompt(core).await;
            // Plain: think() adds the stuck hint once while Manus is stuck.
            return Ok(BeforeThink::ProceedWithPrompt(prompt));
        }
        Ok(BeforeThink::Proceed)
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
    let (clients, warnings) = McpClients::connect_all(servers, McpClientOptions::default()).await;
    let hooks = ManusHooks::connected(clients);
    (crate::agents::build_manus(llm, options, hooks), warnings)
}

/// Manus that connects the MCP servers `servers` at its first `think()` (OpenManus's `Manus()`
/// with lazy initialisation). Servers that cannot be connected are logged and kept in
/// [`ManusHooks::take_warnings`].
#[must_use]
pub fn manus_lazy_mcp(
    llm: Arc<dyn ChatModel>,
    options: &AgentOptions,
    servers: Vec<McpServerConfig>,
) -> Manus {
    let hooks = ManusHooks::lazy(servers, McpClientOptions::default());
    crate::agents::build_manus(llm, options, hooks)
}

/// Ends Manus's MCP session: removes the MCP tools from its tool set and disconnects every
/// server (stdio servers' processes are stopped). The agent keeps working with its own tools.
/// Call it when the session is over, not between the runs of an interactive session.
pub async fn disconnect_mcp(agent: &mut Manus) {
    let mut tools = std::mem::take(&mut agent.core_mut().tools);
    agent.hooks_mut().disconnect(&mut tools).await;
    agent.core_mut().tools = tools;
}
