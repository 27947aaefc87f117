//! The run's OpenTelemetry span: `invoke_agent {agent}` by the GenAI semantic conventions,
//! written with `tracing` (target `gen_ai`, see `agent-telemetry`). With no layer recording the
//! target, building it is a callsite check and recording into it does nothing.

use tracing::field::Empty;

use crate::error::AgentError;
use crate::outcome::{RunOutcome, RunStatus};

/// The provider and model an agent asks, as telemetry names them
/// ([`Agent::model_labels`](crate::Agent::model_labels)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLabels<'a> {
    /// `gen_ai.provider.name`: `openai`, `anthropic`, `aws.bedrock`, `azure.ai.openai`,
    /// `ollama`, …
    pub provider: &'a str,
    /// `gen_ai.request.model`.
    pub model: &'a str,
}

/// Who a run is, as its span names it.
pub(crate) struct RunLabels<'a> {
    /// The agent's name.
    pub name: &'a str,
    /// Its description.
    pub description: Option<&'a str>,
    /// The session it runs in.
    pub session: Option<&'a str>,
    /// The provider and model it asks.
    pub model: Option<ModelLabels<'a>>,
}

/// The span of one run of the agent `run` names.
pub(crate) fn invoke_agent(run: &RunLabels<'_>) -> tracing::Span {
    agent_telemetry::genai_span!(
        "invoke_agent",
        otel.name = %format_args!("invoke_agent {}", run.name),
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = %run.name,
        gen_ai.agent.description = run.description,
        gen_ai.provider.name = run.model.map(|l| l.provider),
        gen_ai.request.model = run.model.map(|l| l.model),
        gen_ai.conversation.id = run.session,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        openmanus.run.status = Empty,
        openmanus.run.steps = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Records how the run ended on its span: the token totals, the ending, and for a failure
/// `error.type` and the status ERROR. The error's text is not recorded: it can quote a
/// provider's reply or a URL (`openmanus.run.status` says how the run ended: `finished`,
/// `max_steps`, `cancelled`, `failed`, `budget`, `refused`; the journal has the rest).
pub(crate) fn record_outcome(span: &tracing::Span, outcome: &Result<RunOutcome, AgentError>) {
    if span.is_disabled() {
        return;
    }
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            span.record("error.type", error_type(error));
            span.record("otel.status_code", "ERROR");
            return;
        }
    };
    let usage = &outcome.usage;
    span.record("gen_ai.usage.input_tokens", int(usage.prompt_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.completion_tokens));
    span.record(
        "gen_ai.usage.cache_read.input_tokens",
        int(usage.cached_prompt_tokens),
    );
    span.record("openmanus.run.steps", int(outcome.steps.len()));
    span.record("openmanus.run.status", outcome.status.ending().as_str());
    if let RunStatus::Failed(error) = &outcome.status {
        span.record("error.type", error_type(error));
        span.record("otel.status_code", "ERROR");
    }
}

/// A short, low-cardinality name of what failed.
fn error_type(error: &AgentError) -> &'static str {
    match error {
        AgentError::InvalidState(_) => "invalid_state",
        AgentError::InvalidTransition { .. } => "invalid_transition",
        AgentError::ToolCallsRequired => "tool_calls_required",
        AgentError::Model(_) => "model",
        AgentError::Cancelled => "cancelled",
        AgentError::Step(_) => "step",
    }
}

/// `n` as the signed integer OpenTelemetry attributes hold (the `tracing` bridge would write an
/// unsigned one as text).
fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}
