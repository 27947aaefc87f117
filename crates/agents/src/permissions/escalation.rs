//! The model asking for more in the call: a confined `bash` or `python_execute` gains two
//! optional arguments, `escalate` and `justification`. A call with `escalate: true` is asked
//! about *before* it runs (the [`SandboxGate`](super::SandboxGate) does the asking and runs the
//! unconfined twin when allowed); the tool itself never sees the two arguments.

use std::sync::Arc;

use agent_tools::{Tool, ToolContext, ToolError, ToolResult};
use async_trait::async_trait;
use serde_json::{Value, json};

/// The argument by which the model asks to run a call without the sandbox.
pub const ESCALATE: &str = "escalate";
/// The argument that says why.
pub const JUSTIFICATION: &str = "justification";

/// What the description gains.
const HOW: &str = "\n* This tool runs in a sandbox: it writes only in the workspace, has no \
network, and cannot see the user's secrets. When a call truly needs more (the network, writing \
outside the workspace), set `escalate` to true and say why in `justification`: the user is asked \
first, and the call runs without the sandbox only if they allow it. Otherwise leave both out.";

/// A confined tool whose schema offers `escalate` and `justification`.
pub struct Escalatable {
    inner: Arc<dyn Tool>,
    description: String,
}

impl std::fmt::Debug for Escalatable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Escalatable")
            .field("tool", &self.inner.name())
            .finish_non_exhaustive()
    }
}

impl Escalatable {
    /// `inner`, offering the model to ask for more.
    #[must_use]
    pub fn new(inner: Arc<dyn Tool>) -> Self {
        let description = format!("{}{HOW}", inner.description());
        Self { inner, description }
    }
}

/// Whether `args` ask to run without the sandbox, and why.
#[must_use]
pub fn requested(args: &Value) -> Option<String> {
    (args.get(ESCALATE).and_then(Value::as_bool) == Some(true)).then(|| {
        args.get(JUSTIFICATION)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|why| !why.is_empty())
            .unwrap_or("no justification given")
            .to_owned()
    })
}

/// `args` without the two arguments.
#[must_use]
pub fn stripped(args: &Value) -> Value {
    let mut args = args.clone();
    if let Some(object) = args.as_object_mut() {
        object.remove(ESCALATE);
        object.remove(JUSTIFICATION);
    }
    args
}

#[async_trait]
impl Tool for Escalatable {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        let mut schema = self.inner.parameters();
        if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            properties.insert(
                ESCALATE.to_owned(),
                json!({
                    "type": "boolean",
                    "description": "True to ask the user to run this call without the sandbox \
                                    (network, writes outside the workspace). Leave out otherwise.",
                }),
            );
            properties.insert(
                JUSTIFICATION.to_owned(),
                json!({
                    "type": "string",
                    "description": "With `escalate`: why this call needs more than the sandbox \
                                    gives, in one sentence the user will read.",
                }),
            );
        }
        schema
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        self.inner.execute(stripped(&args), ctx).await
    }

    async fn cleanup(&self) -> Result<(), ToolError> {
        self.inner.cleanup().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_from_the_arguments_and_is_stripped_from_them() {
        let args = json!({"command": "curl x", "escalate": true, "justification": " fetch it "});
        assert_eq!(requested(&args).as_deref(), Some("fetch it"));
        assert_eq!(stripped(&args), json!({"command": "curl x"}));
        assert_eq!(
            requested(&json!({"command": "x", "escalate": true})).as_deref(),
            Some("no justification given")
        );
        assert_eq!(requested(&json!({"command": "x", "escalate": false})), None);
        assert_eq!(requested(&json!({"command": "x", "escalate": "yes"})), None);
    }
}
