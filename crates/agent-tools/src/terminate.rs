//! `terminate`: the tool the model calls to end the run.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ToolContext, ToolError, ToolResult, TypedTool};

/// The tool name.
pub const TERMINATE: &str = "terminate";

const DESCRIPTION: &str = "End the interaction. Call this once the request has been fully handled, \
or when you cannot make any further progress on it; after this call no more actions are taken.";

/// How the interaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TerminateStatus {
    /// The request was fulfilled.
    Success,
    /// The request could not be fulfilled.
    Failure,
}

impl TerminateStatus {
    /// The wire value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
        }
    }
}

/// Arguments of `terminate`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TerminateArgs {
    /// Whether the interaction succeeded or failed.
    pub status: TerminateStatus,
}

/// The `terminate` tool. It only reports the status; ending the run is the agent's job, through
/// its special-tool handling.
#[derive(Debug, Clone, Copy, Default)]
pub struct Terminate;

#[async_trait]
impl TypedTool for Terminate {
    type Args = TerminateArgs;

    fn name(&self) -> &str {
        TERMINATE
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    async fn call(&self, args: TerminateArgs, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        Ok(ToolResult::success(format!(
            "The interaction has been completed with status: {}",
            args.status.as_str()
        )))
    }
}
