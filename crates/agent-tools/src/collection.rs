//! `ToolCollection`: the agent's tool table.

use std::collections::HashMap;
use std::sync::Arc;

use agent_core::ToolDefinition;
use serde_json::Value;
use tracing::{error, warn};

use crate::{Tool, ToolContext, ToolError, ToolResult};

/// An ordered set of tools with unique names. The definitions sent to the model are computed once
/// when a tool is added, not on every request.
#[derive(Clone, Default)]
pub struct ToolCollection {
    tools: Vec<Arc<dyn Tool>>,
    /// Shared with every request that offers them; rebuilt when the set changes.
    definitions: Arc<[ToolDefinition]>,
    index: HashMap<String, usize>,
}

impl std::fmt::Debug for ToolCollection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCollection")
            .field("tools", &self.names())
            .finish()
    }
}

impl ToolCollection {
    /// An empty collection.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A collection of `tools`, skipping duplicate names.
    #[must_use]
    pub fn from_tools(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        let mut collection = Self::new();
        collection.add_tools(tools);
        collection
    }

    /// Adds `tool`. A tool whose name is already present is skipped with the warning
    /// `Tool {name} already exists in collection, skipping`; returns whether it was added.
    pub fn add_tool(&mut self, tool: impl Tool + 'static) -> bool {
        self.add_shared(Arc::new(tool))
    }

    /// Adds a shared tool (see [`ToolCollection::add_tool`]).
    pub fn add_shared(&mut self, tool: Arc<dyn Tool>) -> bool {
        let name = tool.name().to_owned();
        if self.index.contains_key(&name) {
            warn!("Tool {name} already exists in collection, skipping");
            return false;
        }
        self.index.insert(name, self.tools.len());
        self.definitions = self
            .definitions
            .iter()
            .cloned()
            .chain([tool.to_param()])
            .collect();
        self.tools.push(tool);
        true
    }

    /// Adds several shared tools; returns how many were added.
    pub fn add_tools(&mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> usize {
        tools
            .into_iter()
            .map(|t| self.add_shared(t))
            .filter(|added| *added)
            .count()
    }

    /// Removes the tool `name` (for tool sets that change at run time, such as MCP servers).
    pub fn remove_tool(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        let at = self.index.remove(name)?;
        let mut definitions = self.definitions.to_vec();
        definitions.remove(at);
        self.definitions = definitions.into();
        let tool = self.tools.remove(at);
        for position in self.index.values_mut() {
            if *position > at {
                *position -= 1;
            }
        }
        Some(tool)
    }

    /// Recomputes the definition of `name` after its schema or description changed.
    pub fn refresh_definition(&mut self, name: &str) -> bool {
        match self.index.get(name) {
            Some(&at) => {
                let mut definitions = self.definitions.to_vec();
                definitions[at] = self.tools[at].to_param();
                self.definitions = definitions.into();
                true
            }
            None => false,
        }
    }

    /// The tool called `name`.
    #[must_use]
    pub fn get_tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.index.get(name).map(|&at| &self.tools[at])
    }

    /// Whether a tool called `name` exists.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// Tool names in insertion order.
    #[must_use]
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// The tools in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    /// Number of tools.
    #[must_use]
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when there is no tool.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The definitions sent to the model, in insertion order (OpenManus's `to_params`).
    #[must_use]
    pub fn to_params(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// The definitions, shared: what a request offers step after step without copying them
    /// (a `ChatRequest` of agent-llm takes it as it is).
    #[must_use]
    pub fn shared_params(&self) -> Arc<[ToolDefinition]> {
        Arc::clone(&self.definitions)
    }

    /// Runs the tool `name`. An unknown name gives the failed result `Tool {name} is invalid`; a
    /// [`ToolError::Failure`] becomes a failed result.
    ///
    /// # Errors
    ///
    /// The tool's other errors, which the agent reports as a problem of that tool.
    pub async fn execute(
        &self,
        name: &str,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let Some(tool) = self.get_tool(name) else {
            return Ok(ToolResult::failure(format!("Tool {name} is invalid")));
        };
        match tool.execute(args, ctx).await {
            Err(ToolError::Failure(message)) => Ok(ToolResult::failure(message)),
            other => other,
        }
    }

    /// Cleans up every tool; failures are logged and returned, never raised.
    pub async fn cleanup_all(&self) -> Vec<(String, ToolError)> {
        let mut failures = Vec::new();
        for tool in &self.tools {
            if let Err(e) = tool.cleanup().await {
                error!(tool = tool.name(), error = %e, "tool cleanup failed");
                failures.push((tool.name().to_owned(), e));
            }
        }
        failures
    }
}
