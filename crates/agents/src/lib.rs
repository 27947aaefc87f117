//! # agents — the OpenManus agents on openmanus-rs
//!
//! Each agent is a few lines of configuration over [`agent_toolcall::ToolCallAgent`]: a tool
//! set, two prompts and its limits. [`manus()`] is the general-purpose agent, [`swe`] the
//! programmer; [`flow`] holds the planning flow that drives several of them. [`workspace`]
//! tells what a run changed in the workspace.
//!
//! Manus also takes the tools of MCP servers: [`manus_with_mcp`] connects them before it returns
//! (OpenManus's `Manus.create()`), [`manus_lazy_mcp`] in the background while the agent starts,
//! its first step waiting for them a bounded time; [`disconnect_mcp`] ends the session. See
//! [`manus`](mod@manus).
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_core::Agent;
//! use agent_testkit::{ScriptedModel, tool_call};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let model = Arc::new(ScriptedModel::new());
//! model.push_tool_calls("", [tool_call("t", "terminate", r#"{"status":"success"}"#)]);
//! let mut agent = agents::manus(model.clone(), &agents::AgentOptions::new(dir.path()));
//! assert!(agent.run(Some("Nothing to do.".into())).await.unwrap().is_finished());
//! # #[cfg(feature = "browser")]
//! assert_eq!(
//!     model.requests()[0].tool_names(),
//!     ["python_execute", "browser_use", "str_replace_editor", "ask_human", "terminate"]
//! );
//! # });
//! ```
//!
//! ## Cargo features
//!
//! All on by default; `default-features = false` leaves out heavy dependencies:
//!
//! | Feature | What it brings | Without it |
//! |---|---|---|
//! | `browser` | Manus's `browser_use`, BrowserAgent, SandboxManus's `sandbox_browser` (agent-browser: Chromium over CDP, chromiumoxide) | Manus has no browser tool (a warning when `[browser]` is set); [`AgentKind::Browser`] is refused with [`FactoryError::FeatureDisabled`] |
//! | `charts` | DataAnalysis and its chart tools (agent-charts: plotters, font-kit) | [`AgentKind::DataAnalysis`] and a flow with `use_data_analysis_agent` are refused with [`FactoryError::FeatureDisabled`] |
//! | `docker` | the Docker sandbox backend (agent-sandbox's `docker`: bollard) | `[sandbox] backend = "docker"` is refused with an error naming the feature |

mod agents;
mod factory;
pub mod flow;
pub mod manus;
mod options;
pub mod permissions;
pub mod prompts;
pub mod workspace;

pub use agents::{SANDBOX_BROWSER, SANDBOX_MANUS_MAX_STEPS, SWE_MAX_STEPS, sandbox_manus, swe};
pub use factory::{
    AgentFactory, AgentKind, BuiltAgent, BuiltFlow, FactoryError, ModelSource, UnknownAgentKind,
};
pub use flow::{
    ExecutorMemory, Flow, FlowError, FlowEvent, FlowFactory, FlowOptions, FlowOutcome, FlowType,
    PlanningFlow,
};
pub use manus::{
    MANUS_MAX_STEPS, Manus, ManusHooks, disconnect_mcp, manus, manus_lazy_mcp, manus_with_mcp,
};
pub use options::AgentOptions;
pub use prompts::{MANUS, SANDBOX_MANUS, SWE};
pub use workspace::{DEFAULT_WORKSPACE, SNAPSHOT_LIMIT, Snapshot, WorkspaceChanges};

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
