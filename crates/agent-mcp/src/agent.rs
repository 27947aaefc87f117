//! MCPAgent (spec §2.7): a ToolCallAgent whose tools are exactly its MCP servers' tools.

use std::sync::Arc;

use agent_core::{AgentError, FinishReason, Message, ToolCall};
use agent_llm::ChatModel;
use agent_toolcall::{BeforeThink, ToolCallAgent, ToolCallCore, ToolCallHooks};
use agent_tools::{ToolCollection, ToolResult};
use async_trait::async_trait;

use crate::McpClients;
use crate::sync::McpToolSync;

/// MCPAgent's name.
pub const MCP_AGENT_NAME: &str = "mcp_agent";
/// MCPAgent's step budget when `[agent] max_steps` does not set one (OpenManus's 20). The one
/// place it is declared: [`mcp_agent`] and the agent factory read it.
pub const MCP_AGENT_MAX_STEPS: u32 = 20;
/// Tools are listed again every this many steps (and whenever a server announces a change).
pub const REFRESH_INTERVAL: u32 = 5;
/// Why the agent stops when its servers are gone.
pub const SERVICE_GONE: &str = "MCP service is no longer available";

/// MCPAgent's system prompt (our own text).
pub const MCP_SYSTEM_PROMPT: &str = "You are an AI assistant connected to a Model Context Protocol \
(MCP) server whose tools you may use. Pick the tool that fits each part of the task, give it \
arguments that follow its schema, and read its result before deciding what to do next. The set of \
tools can change while you work: new ones may appear and others may go away. When a tool reports \
an error, work out what was wrong and call it again with corrected arguments. When a tool returns \
an image or other media, you will be given a description of it. Make one tool call at a time and \
say briefly why you make it. Call `terminate` when the task is done.";

/// MCPAgent's next-step prompt (our own text).
pub const MCP_NEXT_STEP_PROMPT: &str = "Consider what is still left to do and which of the available MCP tools moves the task forward; then use it.";

/// The note added after a tool returns media; `{tool_name}` is replaced.
pub const MULTIMEDIA_RESPONSE_PROMPT: &str = "The tool `{tool_name}` returned an image or other \
media, which is attached to the conversation. Take what it shows into account in your next step.";

/// The hooks that make a ToolCallAgent an MCPAgent: tool refresh every [`REFRESH_INTERVAL`]
/// steps and on `notifications/tools/list_changed` (added tools become callable, removed ones
/// go: fixes §13 W23; the tool set is kept by [`McpToolSync`]), `terminate` matched on the
/// server tool's original name (fixes W22), finishing when the servers are gone, and the media
/// note. Cleanup does not disconnect, so the agent survives a second `run()`; the
/// [`shutdown`](ToolCallHooks::shutdown) hook (or [`McpAgentHooks::disconnect`]) ends the
/// connections when the agent is done.
#[derive(Debug)]
pub struct McpAgentHooks {
    clients: McpClients,
    refresh_interval: u32,
    tools: McpToolSync,
    started: bool,
}

impl McpAgentHooks {
    /// Hooks over these connections.
    #[must_use]
    pub fn new(clients: McpClients) -> Self {
        Self {
            clients,
            refresh_interval: REFRESH_INTERVAL,
            tools: McpToolSync::new(),
            started: false,
        }
    }

    /// Lists tools every `steps` steps instead of [`REFRESH_INTERVAL`] (0: only on change
    /// notifications).
    #[must_use]
    pub fn with_refresh_interval(mut self, steps: u32) -> Self {
        self.refresh_interval = steps;
        self
    }

    /// The connections.
    #[must_use]
    pub fn clients(&self) -> &McpClients {
        &self.clients
    }

    /// The connections, to connect or disconnect servers.
    pub fn clients_mut(&mut self) -> &mut McpClients {
        &mut self.clients
    }

    /// Disconnects every server (the end of the session). Prefer the
    /// [`shutdown`](ToolCallHooks::shutdown) hook, which also takes the MCP tools out of the
    /// agent's tool set.
    pub async fn disconnect(&mut self) {
        self.clients.disconnect_all().await;
    }

    /// Lists the tools again and brings `core.tools` in line: added tools are installed (and
    /// announced with `New tools available: …`), removed ones uninstalled (`Tools no longer
    /// available: …`), changed ones replaced quietly. Names are the agent-facing names, sorted.
    pub async fn sync_tools(&mut self, core: &mut ToolCallCore) {
        self.tools
            .refresh(&self.clients, &mut core.tools)
            .await
            .announce(&mut core.base);
    }
}

#[async_trait]
impl ToolCallHooks for McpAgentHooks {
    async fn before_think(&mut self, core: &mut ToolCallCore) -> Result<BeforeThink, AgentError> {
        let step = core.base.current_step();
        let due =
            self.refresh_interval > 0 && step > 0 && step.is_multiple_of(self.refresh_interval);
        if !self.started || due || self.clients.tools_changed() || !self.clients.is_alive() {
            self.started = true;
            self.sync_tools(core).await;
        }
        if !self.clients.is_alive() || core.tools.is_empty() {
            tracing::info!("{SERVICE_GONE}, ending interaction");
            core.base
                .finish(FinishReason::Other(SERVICE_GONE.to_owned()))?;
            return Ok(BeforeThink::Skip);
        }
        Ok(BeforeThink::Proceed)
    }

    fn is_special_tool(&self, core: &ToolCallCore, name: &str) -> bool {
        core.is_special_tool(name)
            || self.tools.original_name(name).is_some_and(|original| {
                core.special_tool_names
                    .iter()
                    .any(|s| s.eq_ignore_ascii_case(original))
            })
    }

    async fn after_tool(
        &mut self,
        core: &mut ToolCallCore,
        call: &ToolCall,
        result: &ToolResult,
    ) -> Result<(), AgentError> {
        if result.image().is_some() {
            core.base.update_memory(Message::system_message(
                MULTIMEDIA_RESPONSE_PROMPT.replace("{tool_name}", &call.function.name),
            ));
        }
        Ok(())
    }

    /// Takes the MCP tools out of the agent's tool set and disconnects every server (stdio
    /// servers' processes are stopped).
    async fn shutdown(&mut self, core: &mut ToolCallCore) {
        self.tools.uninstall_all(&mut core.tools);
        self.clients.disconnect_all().await;
    }
}

/// MCPAgent: a ToolCallAgent named `mcp_agent` with [`MCP_AGENT_MAX_STEPS`] steps, MCPAgent's
/// prompts, `terminate` as its special tool, and exactly the tools of `clients`' servers
/// (installed at the first step).
#[must_use]
pub fn mcp_agent(llm: Arc<dyn ChatModel>, clients: McpClients) -> ToolCallAgent<McpAgentHooks> {
    ToolCallAgent::new(llm)
        .with_name(MCP_AGENT_NAME)
        .with_description("An agent that uses the tools of MCP servers.")
        .with_system_prompt(MCP_SYSTEM_PROMPT)
        .with_next_step_prompt(MCP_NEXT_STEP_PROMPT)
        .with_tools(ToolCollection::new())
        .with_special_tool_names(["terminate"])
        .with_max_steps(MCP_AGENT_MAX_STEPS)
        .with_hooks(McpAgentHooks::new(clients))
}
