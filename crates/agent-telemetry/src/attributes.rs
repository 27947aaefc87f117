//! Attributes `tracing` fields cannot carry: lists (`gen_ai.response.finish_reasons` is a
//! `string[]`) and keys known only at run time.

use opentelemetry::{Array, KeyValue, StringValue, Value};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Sets `key` on `span` to the list `values` (a no-op when telemetry is off).
pub fn set_strings<I, S>(span: &tracing::Span, key: &'static str, values: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    if span.is_disabled() {
        return;
    }
    let list: Vec<StringValue> = values.into_iter().map(|v| v.into().into()).collect();
    span.set_attribute(key, Value::Array(Array::String(list)));
}

/// Sets the string `key` on `span` (a no-op when telemetry is off).
pub fn set_string(span: &tracing::Span, key: &'static str, value: impl Into<String>) {
    if span.is_disabled() {
        return;
    }
    span.set_attribute(key, value.into());
}

/// Adds the event `name` with `attributes` to `span` (a no-op when telemetry is off).
pub fn add_event(
    span: &tracing::Span,
    name: &'static str,
    attributes: Vec<(&'static str, String)>,
) {
    if span.is_disabled() {
        return;
    }
    span.add_event(
        name,
        attributes
            .into_iter()
            .map(|(key, value)| KeyValue::new(key, value))
            .collect(),
    );
}

/// Marks `span` failed: `error.type` (a short, low-cardinality kind such as `timeout` or
/// `500`) and the status ERROR, with `description` only when content is captured (scrubbed:
/// an error's text can quote what it failed on).
pub fn set_error(span: &tracing::Span, kind: &str, description: &str) {
    if span.is_disabled() {
        return;
    }
    span.set_attribute("error.type", kind.to_owned());
    let description = crate::capture::captured(description).unwrap_or_default();
    span.set_status(opentelemetry::trace::Status::error(description));
}
