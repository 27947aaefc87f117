//! `create_chat_completion`: lets the model hand back its answer as structured arguments.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Tool, ToolContext, ToolError, ToolResult, parameters_schema, parse_args};

/// The tool name.
pub const CREATE_CHAT_COMPLETION: &str = "create_chat_completion";

const DESCRIPTION: &str =
    "Produce the final answer in the output format described by this tool's parameters.";

/// The default response shape: one `response` string.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TextResponse {
    /// The answer text to return to the user.
    pub response: String,
}

type Render = fn(Value) -> Result<String, ToolError>;

/// The `create_chat_completion` tool. [`CreateChatCompletion::new`] asks for a `response` string
/// and returns it; [`CreateChatCompletion::structured`] asks for the fields of any type with a
/// `JsonSchema`, validates them by deserialising, and returns the object as pretty JSON.
#[derive(Debug, Clone)]
pub struct CreateChatCompletion {
    parameters: Value,
    render: Render,
}

impl Default for CreateChatCompletion {
    fn default() -> Self {
        Self::new()
    }
}

impl CreateChatCompletion {
    /// The default tool: `{response: string}` (required), returning the response text.
    #[must_use]
    pub fn new() -> Self {
        Self {
            parameters: parameters_schema::<TextResponse>(),
            render: |args| Ok(parse_args::<TextResponse>(args)?.response),
        }
    }

    /// A tool whose arguments are the fields of `T`.
    #[must_use]
    pub fn structured<T: DeserializeOwned + Serialize + JsonSchema>() -> Self {
        fn render<T: DeserializeOwned + Serialize>(args: Value) -> Result<String, ToolError> {
            let value: T = parse_args(args)?;
            serde_json::to_string_pretty(&value).map_err(ToolError::execution)
        }
        Self {
            parameters: parameters_schema::<T>(),
            render: render::<T>,
        }
    }
}

#[async_trait]
impl Tool for CreateChatCompletion {
    fn name(&self) -> &str {
        CREATE_CHAT_COMPLETION
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        (self.render)(args).map(ToolResult::success)
    }
}
