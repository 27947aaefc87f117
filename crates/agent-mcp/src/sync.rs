//! [`McpToolSync`]: an agent's tool set kept in line with its MCP servers' tool listings. The one
//! implementation behind MCPAgent ([`crate::McpAgentHooks`]) and Manus's MCP servers.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_core::{BaseAgent, Message};
use agent_tools::{Tool, ToolCollection};
use serde_json::Value;
use tracing::{info, warn};

use crate::{McpClients, McpTool};

/// What an installed MCP tool looked like: original name, schema, description. A listing that
/// changes any of them replaces the tool.
#[derive(Debug, Clone, PartialEq)]
struct Installed {
    original: String,
    schema: Value,
    description: String,
}

impl Installed {
    fn of(tool: &McpTool) -> Self {
        Self {
            original: tool.original_name().to_owned(),
            schema: tool.parameters(),
            description: tool.description().to_owned(),
        }
    }
}

/// What one sync did to the tool set, by agent-facing name (`mcp_{server}_{tool}`), each list
/// sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolChanges {
    /// Tools installed that were not there before.
    pub added: Vec<String>,
    /// Tools uninstalled: no longer listed, or their server went away.
    pub removed: Vec<String>,
    /// Tools replaced because their schema, description or original name changed.
    pub changed: Vec<String>,
}

impl ToolChanges {
    /// Whether the sync changed nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// Tells the model what changed, in `base`'s memory: the system message
    /// `New tools available: a, b` for added tools and `Tools no longer available: c` for
    /// removed ones (OpenManus's MCPAgent wording, spec §2.7). Changed tools are only logged.
    pub fn announce(&self, base: &mut BaseAgent) {
        if !self.added.is_empty() {
            info!(tools = ?self.added, "new MCP tools");
            base.update_memory(Message::system_message(format!(
                "New tools available: {}",
                self.added.join(", ")
            )));
        }
        if !self.removed.is_empty() {
            info!(tools = ?self.removed, "MCP tools removed");
            base.update_memory(Message::system_message(format!(
                "Tools no longer available: {}",
                self.removed.join(", ")
            )));
        }
    }
}

/// The MCP tools installed in an agent's [`ToolCollection`], kept in line with the servers'
/// listings: a listed tool that is new is installed, one no longer listed (or whose server went
/// away) is uninstalled, one whose schema or description changed is replaced. A listed tool
/// whose name is taken by one of the agent's own tools is skipped with a warning; the agent's
/// own tools are never touched.
#[derive(Debug, Default)]
pub struct McpToolSync {
    /// Agent-facing name → what was installed under it.
    installed: BTreeMap<String, Installed>,
    /// The servers that were alive at the last sync.
    alive: Vec<String>,
}

impl McpToolSync {
    /// Nothing installed yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The agent-facing names of the installed MCP tools, sorted.
    #[must_use]
    pub fn tool_names(&self) -> Vec<&str> {
        self.installed.keys().map(String::as_str).collect()
    }

    /// The server's own name of the installed tool `name`, if it is one.
    #[must_use]
    pub fn original_name(&self, name: &str) -> Option<&str> {
        self.installed.get(name).map(|i| i.original.as_str())
    }

    /// Whether the tools should be listed again: a server announced a change
    /// (`notifications/tools/list_changed`), or the set of live servers is not the one of the
    /// last sync (one went away or came back).
    #[must_use]
    pub fn needs_refresh(&self, clients: &McpClients) -> bool {
        clients.tools_changed() || alive_servers(clients) != self.alive
    }

    /// Brings `tools` in line with `clients`' last listings, without listing again.
    pub fn sync(&mut self, clients: &McpClients, tools: &mut ToolCollection) -> ToolChanges {
        self.alive = alive_servers(clients);
        let current: BTreeMap<String, Arc<McpTool>> = clients
            .mcp_tools()
            .into_iter()
            .map(|t| (t.name().to_owned(), t))
            .collect();
        let mut changes = ToolChanges::default();
        let gone: Vec<String> = self
            .installed
            .keys()
            .filter(|name| !current.contains_key(*name))
            .cloned()
            .collect();
        for name in gone {
            tools.remove_tool(&name);
            self.installed.remove(&name);
            changes.removed.push(name);
        }
        for (name, tool) in current {
            let entry = Installed::of(&tool);
            let replaced = match self.installed.get(&name) {
                Some(old) if *old == entry => continue,
                Some(_) => {
                    info!(tool = %name, "MCP tool changed");
                    tools.remove_tool(&name);
                    self.installed.remove(&name);
                    true
                }
                None => false,
            };
            if tools.add_shared(tool) {
                self.installed.insert(name.clone(), entry);
                if replaced {
                    changes.changed.push(name);
                } else {
                    changes.added.push(name);
                }
            } else {
                warn!(tool = %name, "an MCP tool has the name of one of the agent's own tools; skipped");
                if replaced {
                    changes.removed.push(name);
                }
            }
        }
        changes.removed.sort();
        changes
    }

    /// Lists every server's tools again (failures are logged; the last good listing of that
    /// server stays), then [`sync`](Self::sync)s.
    pub async fn refresh(
        &mut self,
        clients: &McpClients,
        tools: &mut ToolCollection,
    ) -> ToolChanges {
        for warning in clients.refresh_tools().await {
            warn!(server = %warning.server, error = %warning.error, "MCP tool refresh failed");
        }
        self.sync(clients, tools)
    }

    /// Uninstalls every MCP tool from `tools` and forgets them (before the servers are
    /// disconnected at the end of the agent's life).
    pub fn uninstall_all(&mut self, tools: &mut ToolCollection) {
        for name in std::mem::take(&mut self.installed).keys() {
            tools.remove_tool(name);
        }
        self.alive.clear();
    }
}

fn alive_servers(clients: &McpClients) -> Vec<String> {
    clients
        .server_ids()
        .into_iter()
        .filter(|id| clients.is_server_alive(id))
        .map(str::to_owned)
        .collect()
}
