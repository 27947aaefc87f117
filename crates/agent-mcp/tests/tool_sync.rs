//! [`McpToolSync`] over a real stdio server (our `openmanus-mcp-server`): what one sync adds,
//! that an unchanged listing changes nothing, that the agent's own tools are never replaced,
//! what a gone server removes, and the system messages the model reads.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use agent_core::{BaseAgent, Role};
use agent_mcp::{McpClientOptions, McpClients, McpToolSync, ToolChanges};
use agent_tools::{Tool, ToolCollection, ToolContext, ToolError, ToolResult};
use common::*;
use serde_json::{Value, json};

/// One of the agent's own tools, with the name an MCP tool would get.
struct Own;

#[async_trait::async_trait]
impl Tool for Own {
    fn name(&self) -> &str {
        "mcp_om_bash"
    }
    fn description(&self) -> &str {
        "the agent's own tool"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn execute(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::success("own"))
    }
}

#[tokio::test]
async fn sync_installs_keeps_own_tools_and_removes_what_a_gone_server_had() {
    let config = stdio(
        "om",
        env!("CARGO_BIN_EXE_openmanus-mcp-server"),
        &["--transport", "stdio"],
    );
    let (mut clients, warnings) =
        McpClients::connect_all(&[config], McpClientOptions::default()).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut tools = ToolCollection::new();
    tools.add_tool(Own);
    let mut sync = McpToolSync::new();
    let mut base = BaseAgent::new("test");

    let first = sync.refresh(&clients, &mut tools).await;
    assert_eq!(
        first,
        ToolChanges {
            added: vec![
                "mcp_om_str_replace_editor".to_owned(),
                "mcp_om_terminate".to_owned()
            ],
            removed: vec![],
            changed: vec![],
        },
        "the listed bash is skipped: the agent has its own tool of that name"
    );
    assert_eq!(
        tools.get_tool("mcp_om_bash").unwrap().description(),
        "the agent's own tool"
    );
    assert_eq!(sync.original_name("mcp_om_terminate"), Some("terminate"));
    assert_eq!(sync.original_name("mcp_om_bash"), None);
    first.announce(&mut base);

    assert!(!sync.needs_refresh(&clients));
    assert!(sync.refresh(&clients, &mut tools).await.is_empty());

    clients.disconnect("om").await.unwrap();
    let gone = sync.sync(&clients, &mut tools);
    assert_eq!(
        gone.removed,
        ["mcp_om_str_replace_editor", "mcp_om_terminate"]
    );
    assert!(gone.added.is_empty());
    assert_eq!(tools.names(), ["mcp_om_bash"]);
    gone.announce(&mut base);

    let notes: Vec<&str> = base
        .memory
        .messages()
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.text())
        .collect();
    assert_eq!(
        notes,
        [
            "New tools available: mcp_om_str_replace_editor, mcp_om_terminate",
            "Tools no longer available: mcp_om_str_replace_editor, mcp_om_terminate"
        ]
    );
}
