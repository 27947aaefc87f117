//! The tool call's OpenTelemetry span: `execute_tool {tool}` by the GenAI semantic
//! conventions, written with `tracing` (target `gen_ai`, see `agent-telemetry`); the approval
//! policy's decisions are events on it. With no layer recording the target it costs a callsite
//! check.

use agent_core::ToolCall;
use agent_telemetry::{attributes, capture};
use tracing::field::Empty;

use crate::gate::PermissionRecord;

/// The span of `call`.
pub(crate) fn execute_tool(call: &ToolCall) -> tracing::Span {
    let name = call.function.name.as_str();
    let span = agent_telemetry::genai_span!(
    "execute_tool",
        otel.name = %format_args!("execute_tool {name}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.type = "function",
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    if !span.is_disabled()
        && let Some(arguments) = capture::captured(&call.function.arguments)
    {
        span.record("gen_ai.tool.call.arguments", arguments);
    }
    span
}

/// Records the call's end on its span: the approvals decided on the way (events), the result
/// when content is captured, and a failure as `error.type` = `tool_error`.
pub(crate) fn record_execution(
    span: &tracing::Span,
    records: &[PermissionRecord],
    observation: &str,
    success: bool,
) {
    if span.is_disabled() {
        return;
    }
    for record in records {
        attributes::add_event(
            span,
            "permission",
            vec![
                ("openmanus.permission.request", record.request.clone()),
                ("openmanus.permission.decision", record.decision.to_string()),
                ("openmanus.permission.by", record.by.to_string()),
                ("openmanus.permission.detail", record.detail.clone()),
            ],
        );
    }
    if let Some(result) = capture::captured(observation) {
        span.record("gen_ai.tool.call.result", result);
    }
    if !success {
        span.record("error.type", "tool_error");
        span.record("otel.status_code", "ERROR");
    }
}
