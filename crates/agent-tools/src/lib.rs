//! # agent-tools — what the agent can do
//!
//! The [`Tool`] trait (name, description, JSON-schema parameters, async execution), the typed
//! helper [`TypedTool`] whose argument struct derives `serde::Deserialize` +
//! `schemars::JsonSchema`, [`ToolResult`] with OpenManus's rendering rules, the [`ToolCollection`]
//! an agent holds, the built-in [`Terminate`] and [`CreateChatCompletion`] tools, and the local
//! tools ([`Bash`], [`PythonExecute`], [`StrReplaceEditor`], [`PlanningTool`], [`AskHuman`]).
//! The web tools (`web_search`, `crawl4ai`) live in the `agent-web` crate, so that a crate that
//! needs only the [`Tool`] trait does not build an HTML parser and an HTTP client.
//!
//! ```
//! use agent_tools::{Terminate, ToolCollection, ToolContext};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let mut tools = ToolCollection::new();
//! tools.add_tool(Terminate);
//! let result = tools
//!     .execute("terminate", json!({"status": "success"}), &ToolContext::default())
//!     .await
//!     .unwrap();
//! assert_eq!(result.to_string(), "The interaction has been completed with status: success");
//! let unknown = tools.execute("nope", json!({}), &ToolContext::default()).await.unwrap();
//! assert_eq!(unknown.to_string(), "Error: Tool nope is invalid");
//! # });
//! ```

mod ask_human;
pub mod bash;
mod collection;
mod create_chat_completion;
pub mod editor;
pub mod planning;
pub mod python;
mod result;
mod terminate;
mod tool;

pub use ask_human::{
    ASK_HUMAN, AskHuman, AskHumanArgs, ChannelInput, Choice, HumanInput, NO_HUMAN, Question,
    TerminalInput,
};
pub use bash::{BASH, Bash, BashArgs};
pub use collection::ToolCollection;
pub use create_chat_completion::{CREATE_CHAT_COMPLETION, CreateChatCompletion, TextResponse};
pub use editor::{FileOperator, LocalFileOperator, STR_REPLACE_EDITOR, StrReplaceEditor};
pub use planning::{PLANNING, Plan, PlanningArgs, PlanningTool, StepStatus};
pub use python::{PYTHON_EXECUTE, PythonExecute, PythonExecuteArgs};
pub use result::ToolResult;
pub use terminate::{TERMINATE, Terminate, TerminateArgs, TerminateStatus};
pub use tool::{Progress, Tool, ToolContext, ToolError, TypedTool, parameters_schema, parse_args};

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
