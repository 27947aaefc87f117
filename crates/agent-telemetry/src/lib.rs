//! OpenTelemetry for openmanus-rs: what a run looks like to an observability tool (Arize
//! Phoenix, Langfuse, Jaeger, Honeycomb, …), one trace across agents and machines.
//!
//! The spans are written with `tracing` where the work happens, all with the target
//! [`TARGET`] (`gen_ai`), named and attributed by the OpenTelemetry GenAI semantic conventions:
//!
//! | span (`otel.name`) | where | attributes |
//! |---|---|---|
//! | `invoke_agent {agent}` | `agent-core`'s run loop, one per run | `gen_ai.operation.name`, `gen_ai.agent.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.conversation.id` (the session), the run's `gen_ai.usage.*`, `error.type` |
//! | `chat {model}` | `agent-llm`'s `Model`, one per model call (the compaction's summaries and the flow's planner too) | request and response model, `gen_ai.response.finish_reasons`, input/output/cached tokens, `server.address`/`server.port`, `error.type` |
//! | `execute_tool {tool}` | `agent-toolcall`, one per tool call | `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type`, `error.type`; approvals as `permission` events |
//! | `plan {agent}`, `invoke_workflow planning` | the planning flow | |
//!
//! With no subscriber layer for the target (telemetry off), the spans cost a callsite check:
//! nothing is built. Content (messages, tool arguments and results) is recorded only when
//! [`capture`] says so (`[telemetry] capture_content`), with the configuration's secrets
//! replaced.
//!
//! The GenAI client metrics ([`metrics`]: token usage and call duration) are recorded by the
//! model client and exported only when asked.
//!
//! The spans are made with [`genai_span!`] under the innermost [`scope::within`] of the task
//! (the run, the tool call), so the run's span is never entered at each poll of its future.
//!
//! Across processes, [`context`] carries W3C trace context (`traceparent`): out with a request
//! or task ([`context::headers`]), in at the other end ([`context::continue_from`]).
//!
//! The feature `export` installs the exporter (`export::Telemetry`): OTLP over HTTP/protobuf,
//! and with `grpc` over gRPC, configured by the standard `OTEL_*` variables or `[telemetry]`.

pub mod attributes;
pub mod capture;
pub mod context;
#[cfg(feature = "export")]
pub mod export;
pub mod metrics;
pub mod scope;

/// The `tracing` target of every GenAI span: the exporter's layer records these and only
/// these; the log output leaves them out.
pub const TARGET: &str = "gen_ai";

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
