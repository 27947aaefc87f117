//! Hooks through which agents built on ToolCallAgent change its behaviour without re-writing it.

use agent_core::{AgentError, ToolCall};
use agent_tools::ToolResult;
use async_trait::async_trait;

use crate::ToolCallCore;

/// What `think()` should do after [`ToolCallHooks::before_think`].
///
/// The stuck hint ([`agent_core::STUCK_PROMPT`]) is `think()`'s business, never a hook's: while
/// the agent is stuck, `think()` puts it in front of whichever prompt is used, the configured one
/// or a hook's [`BeforeThink::ProceedWithPrompt`], exactly once. A hook returns its plain prompt;
/// one that adds the hint itself anyway (with `BaseAgent::with_stuck_hint`) gets it taken off and
/// put back once, so no hook can make the model read it twice.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BeforeThink {
    /// Ask the model with the configured next-step prompt.
    #[default]
    Proceed,
    /// Ask the model with this next-step prompt instead, for this step only (for example a
    /// prompt filled with the current browser state). Give the plain prompt: `think()` adds
    /// the stuck hint while the agent is stuck.
    ProceedWithPrompt(String),
    /// Do not ask the model; `think()` returns false. A hook that skips usually also finishes
    /// the agent (for example when its MCP server is gone).
    Skip,
}

/// Extension points of a ToolCallAgent. Every method has the ToolCallAgent default, so an agent
/// overrides only what it changes; `()` is the no-op set.
#[async_trait]
pub trait ToolCallHooks: Send {
    /// Runs at the start of every `think()`: refresh tools, connect lazily, prepare a prompt.
    ///
    /// # Errors
    ///
    /// Fails the run.
    async fn before_think(&mut self, core: &mut ToolCallCore) -> Result<BeforeThink, AgentError> {
        let _ = core;
        Ok(BeforeThink::Proceed)
    }

    /// Whether `name` is a special tool (default: in `special_tool_names`, ignoring case).
    fn is_special_tool(&self, core: &ToolCallCore, name: &str) -> bool {
        core.is_special_tool(name)
    }

    /// Whether a special tool that returned `result` finishes the agent (default: always, even
    /// for a failed result).
    fn should_finish_execution(
        &self,
        core: &ToolCallCore,
        name: &str,
        result: &ToolResult,
    ) -> bool {
        let _ = (core, name, result);
        true
    }

    /// Runs after every tool call that returned a result, after special-tool handling.
    ///
    /// # Errors
    ///
    /// Fails the run.
    async fn after_tool(
        &mut self,
        core: &mut ToolCallCore,
        call: &ToolCall,
        result: &ToolResult,
    ) -> Result<(), AgentError> {
        let _ = (core, call, result);
        Ok(())
    }

    /// Runs at the end of every run, before the tools are cleaned up. Log failures; never raise.
    async fn cleanup(&mut self, core: &mut ToolCallCore) {
        let _ = core;
    }

    /// Runs once at the end of the agent's life (not of a run): release what outlives the runs
    /// of a session, such as MCP server connections and their child processes. The agent is
    /// not run again afterwards. Log failures; never raise. Default: nothing.
    async fn shutdown(&mut self, core: &mut ToolCallCore) {
        let _ = core;
    }
}

#[async_trait]
impl ToolCallHooks for () {}
