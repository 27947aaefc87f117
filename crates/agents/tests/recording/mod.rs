//! Spans recorded in memory through the exporter's own layer, and looking them up.

#![allow(dead_code)] // each test binary uses its part

use std::sync::Arc;

use agent_llm::{LlmSettings, Model};
use agent_testkit::MockOpenAi;
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt as _;

/// Spans recorded while the guard lives (on this thread: the tests run on one).
pub struct Recording {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Recording {
    pub fn start() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber =
            tracing_subscriber::registry().with(agent_telemetry::export::layer_with(&provider));
        Self {
            _guard: tracing::subscriber::set_default(subscriber),
            exporter,
            provider,
        }
    }

    pub fn spans(&self) -> Vec<SpanData> {
        self.provider.force_flush().unwrap();
        self.exporter.get_finished_spans().unwrap()
    }
}

pub fn one<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found: Vec<_> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "{name}: {:?}", names(spans));
    found[0]
}

pub fn names(spans: &[SpanData]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_ref()).collect()
}

pub fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

pub fn model(mock: &MockOpenAi) -> Arc<Model> {
    let mut settings = LlmSettings::new("gpt-4o", mock.base_url());
    settings.max_attempts = 1;
    Arc::new(Model::new(settings).unwrap())
}
