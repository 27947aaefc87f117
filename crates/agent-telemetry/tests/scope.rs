#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! GenAI spans hang under the run they are made in although the run's span is never entered,
//! and a request made in a tool call carries the tool call's trace context.

use agent_telemetry::{context, genai_span, scope};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt as _;

/// The exporter's layer for `gen_ai` only, beside a log layer that records everything else:
/// the spans of each are invisible to the other, as in the binary.
struct Recording {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Recording {
    fn start() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let otel = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("test"))
            .with_filter(
                Targets::new().with_target(agent_telemetry::TARGET, tracing::Level::TRACE),
            );
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::sink)
            .with_filter(
                Targets::new()
                    .with_default(tracing::Level::TRACE)
                    .with_target(
                        agent_telemetry::TARGET,
                        tracing::level_filters::LevelFilter::OFF,
                    ),
            );
        let subscriber = tracing_subscriber::registry().with(otel).with(logs);
        Self {
            _guard: tracing::subscriber::set_default(subscriber),
            exporter,
            provider,
        }
    }

    fn spans(&self) -> Vec<SpanData> {
        self.provider.force_flush().unwrap();
        self.exporter.get_finished_spans().unwrap()
    }
}

fn one<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found: Vec<_> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "{name} in {spans:?}");
    found[0]
}

fn is_child(child: &SpanData, parent: &SpanData) -> bool {
    child.parent_span_id == parent.span_context.span_id()
        && child.span_context.trace_id() == parent.span_context.trace_id()
}

#[tokio::test(flavor = "current_thread")]
async fn spans_made_within_a_run_hang_under_it_though_it_is_never_entered() {
    let recording = Recording::start();
    let run = genai_span!("invoke_agent");
    scope::within(run.clone(), async {
        // A log span entered in between (the run loop's `step`), invisible to the exporter.
        let step = tracing::info_span!("step");
        let _step = step.enter();
        assert_ne!(
            tracing::Span::current().id(),
            run.id(),
            "the run is not entered"
        );
        let chat = genai_span!("chat");
        drop(chat);
        let tool = genai_span!("execute_tool");
        scope::within(tool.clone(), async {
            drop(genai_span!("invoke_agent", otel.name = "sub-agent"));
        })
        .await;
        drop(tool);
    })
    .await;
    drop(run);
    let spans = recording.spans();
    let run = spans
        .iter()
        .find(|s| s.name == "invoke_agent")
        .expect("the run's span");
    assert_eq!(run.parent_span_id, opentelemetry::trace::SpanId::INVALID);
    assert!(is_child(one(&spans, "chat"), run));
    let tool = one(&spans, "execute_tool");
    assert!(is_child(tool, run));
    assert!(is_child(one(&spans, "sub-agent"), tool));
}

#[tokio::test(flavor = "current_thread")]
async fn outside_any_within_a_span_hangs_under_the_current_one() {
    let recording = Recording::start();
    let request = genai_span!("a2a");
    {
        let _entered = request.enter();
        assert!(scope::parent().is_none());
        drop(genai_span!("invoke_agent"));
    }
    drop(request);
    let spans = recording.spans();
    assert!(is_child(one(&spans, "invoke_agent"), one(&spans, "a2a")));
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_made_in_a_tool_call_carries_the_tool_calls_trace_context() {
    let _recording = Recording::start();
    let run = genai_span!("invoke_agent");
    let tool = genai_span!("execute_tool");
    let expected = context::headers(&tool);
    assert_eq!(expected.len(), 1, "{expected:?}");
    let carried = scope::within(
        run.clone(),
        scope::within(tool.clone(), async { context::current_headers() }),
    )
    .await;
    assert_eq!(carried, expected);
    assert_ne!(carried, context::headers(&run));
    // Outside: the current span's (none here).
    assert!(context::current_headers().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn with_telemetry_off_within_runs_the_future_as_it_is() {
    // No subscriber: every span is disabled, and nothing is set for the future.
    let output = scope::within(genai_span!("invoke_agent"), async {
        (scope::parent(), genai_span!("chat").is_disabled())
    })
    .await;
    assert_eq!(output, (None, true));
}
