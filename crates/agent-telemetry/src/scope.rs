//! Which GenAI span a new one hangs under, without entering the long-lived ones.
//!
//! A `tracing` span made the parent by `Future::instrument` is entered and left on every poll
//! of the future: for a run (`invoke_agent`), whose future is polled at every chunk a model
//! sends, that is a registry look-up per layer and a clock read per poll, a few percent of a
//! step with export on. Instead the GenAI spans are never entered: [`within`] names the span
//! the GenAI spans made inside a future hang under (a task-local), [`genai_span!`] makes a span
//! under it, and [`current`] is what a request leaving the process carries
//! ([`crate::context::current_headers`]).
//!
//! [`genai_span!`]: crate::genai_span

use std::future::Future;

tokio::task_local! {
    static PARENT: tracing::Span;
}

/// Runs `future` with `span` the parent of the GenAI spans made in it ([`genai_span!`]) and
/// the span a request made in it carries ([`current`]). With `span` disabled (telemetry off)
/// the future runs as it is.
///
/// [`genai_span!`]: crate::genai_span
pub async fn within<F: Future>(span: tracing::Span, future: F) -> F::Output {
    if span.is_disabled() {
        return future.await;
    }
    // A span of another target is not seen by the exporter's layer: the spans made under it
    // would be roots.
    debug_assert!(
        span.metadata()
            .is_none_or(|metadata| metadata.target() == crate::TARGET),
        "scope::within takes a GenAI span (target `gen_ai`)"
    );
    PARENT.scope(span, future).await
}

/// The span of the innermost [`within`] of this task, if any (the explicit parent
/// [`genai_span!`] gives a span).
///
/// [`genai_span!`]: crate::genai_span
#[must_use]
pub fn parent() -> Option<tracing::Id> {
    PARENT.try_with(tracing::Span::id).ok().flatten()
}

/// The span work done now belongs to: the innermost [`within`] of this task, else the current
/// span.
#[must_use]
pub fn current() -> tracing::Span {
    PARENT
        .try_with(Clone::clone)
        .unwrap_or_else(|_| tracing::Span::current())
}

/// An INFO span with the target [`TARGET`](crate::TARGET) (`gen_ai`), under the span of the
/// innermost [`within`](crate::scope::within) of this task, else under the current span as
/// usual. Takes what `tracing::info_span!` takes after the target: the name, then the fields.
#[macro_export]
macro_rules! genai_span {
    ($($arguments:tt)*) => {
        match $crate::scope::parent() {
            ::core::option::Option::Some(parent) => ::tracing::info_span!(
                target: "gen_ai",
                parent: parent,
                $($arguments)*
            ),
            ::core::option::Option::None => ::tracing::info_span!(
                target: "gen_ai",
                $($arguments)*
            ),
        }
    };
}
