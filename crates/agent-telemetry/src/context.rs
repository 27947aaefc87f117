//! W3C trace context across processes: the `traceparent` (and `tracestate`) of a span out with
//! a request or a task, and a span continuing the trace it names at the other end.
//!
//! With telemetry off, [`headers`] is empty and [`continue_from`] does nothing: nothing goes on
//! the wire that was not there before.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The W3C header naming the trace and the parent span.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C header carrying vendors' trace state.
pub const TRACESTATE: &str = "tracestate";

struct Pairs(Vec<(&'static str, String)>);

impl Injector for Pairs {
    fn set(&mut self, key: &str, value: String) {
        // An empty `tracestate` (no vendor's state) is not sent.
        if value.is_empty() {
            return;
        }
        let key = match key {
            TRACEPARENT => TRACEPARENT,
            TRACESTATE => TRACESTATE,
            _ => return,
        };
        self.0.push((key, value));
    }
}

/// The trace context of `span` as headers (`traceparent`, and `tracestate` when there is
/// one); empty when `span` is not recorded (telemetry off).
#[must_use]
pub fn headers(span: &tracing::Span) -> Vec<(&'static str, String)> {
    if span.is_disabled() {
        return Vec::new();
    }
    let context = span.context();
    let mut pairs = Pairs(Vec::new());
    TraceContextPropagator::new().inject_context(&context, &mut pairs);
    pairs.0
}

/// The trace context of the span work done now belongs to ([`crate::scope::current`]) as
/// headers (see [`headers`]).
#[must_use]
pub fn current_headers() -> Vec<(&'static str, String)> {
    headers(&crate::scope::current())
}

/// The `traceparent` of the span work done now belongs to, if it is recorded.
#[must_use]
pub fn current_traceparent() -> Option<String> {
    current_headers()
        .into_iter()
        .find(|(key, _)| *key == TRACEPARENT)
        .map(|(_, value)| value)
}

/// Makes `span` continue the trace `get` finds (`get(TRACEPARENT)`, `get(TRACESTATE)`): its
/// parent becomes the remote span. Call it before the span is first entered. An absent or
/// malformed `traceparent` leaves the span a root; with telemetry off it does nothing.
pub fn continue_from(span: &tracing::Span, get: impl Fn(&str) -> Option<String>) {
    if span.is_disabled() {
        return;
    }
    let Some(parent) = get(TRACEPARENT) else {
        return;
    };
    let state = get(TRACESTATE);
    let carrier = Carrier { parent, state };
    let context = TraceContextPropagator::new().extract(&carrier);
    if let Err(error) = span.set_parent(context) {
        tracing::debug!(%error, "the span cannot continue the remote trace");
    }
}

/// The two values a remote trace context is read from.
struct Carrier {
    parent: String,
    state: Option<String>,
}

impl Extractor for Carrier {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            TRACEPARENT => Some(&self.parent),
            TRACESTATE => self.state.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        let mut keys = vec![TRACEPARENT];
        if self.state.is_some() {
            keys.push(TRACESTATE);
        }
        keys
    }
}
