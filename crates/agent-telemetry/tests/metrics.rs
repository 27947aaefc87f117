#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The GenAI client metrics: nothing until installed; then a call's duration and its input and
//! output tokens, attributed by the semantic conventions.

use std::time::Duration;

use agent_telemetry::metrics::{self, Call, OPERATION_DURATION, TOKEN_USAGE};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, HistogramDataPoint, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

fn attribute<'a>(point: &'a HistogramDataPoint<impl Copy>, key: &str) -> Option<&'a Value> {
    point
        .attributes()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv: &KeyValue| &kv.value)
}

#[test]
fn a_call_is_recorded_as_its_duration_and_its_tokens_once_installed() {
    let call = Call {
        operation: "chat",
        provider: "openai",
        request_model: "gpt-4o",
        response_model: Some("gpt-4o-2024-08-06"),
        server_address: Some("127.0.0.1"),
        server_port: Some(4000),
        error_type: None,
    };
    // Not installed: nothing happens (and nothing could be read).
    assert!(!metrics::enabled());
    metrics::record(&call, Duration::from_millis(5), Some((1, 1)));

    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    metrics::install(&provider.meter("test"));
    assert!(metrics::enabled());
    metrics::record(&call, Duration::from_millis(1500), Some((1200, 34)));
    let failed = Call {
        response_model: None,
        error_type: Some("timeout"),
        ..call
    };
    metrics::record(&failed, Duration::from_secs(30), None);
    provider.force_flush().unwrap();

    let exported = exporter.get_finished_metrics().unwrap();
    let all: Vec<_> = exported
        .iter()
        .flat_map(|r| r.scope_metrics())
        .flat_map(|s| s.metrics())
        .collect();
    let named = |name: &str| {
        let found: Vec<_> = all.iter().filter(|m| m.name() == name).collect();
        assert_eq!(found.len(), 1, "{name}: {all:?}");
        found[0]
    };

    let tokens = named(TOKEN_USAGE);
    assert_eq!(tokens.unit(), "{token}");
    let AggregatedMetrics::U64(MetricData::Histogram(tokens)) = tokens.data() else {
        panic!("tokens: {:?}", tokens.data());
    };
    let mut points: Vec<_> = tokens.data_points().collect();
    points.sort_by_key(|p| p.sum());
    assert_eq!(points.len(), 2, "{points:?}");
    assert_eq!((points[0].count(), points[0].sum()), (1, 34));
    assert_eq!((points[1].count(), points[1].sum()), (1, 1200));
    assert_eq!(
        attribute(points[0], "gen_ai.token.type"),
        Some(&Value::from("output"))
    );
    assert_eq!(
        attribute(points[1], "gen_ai.token.type"),
        Some(&Value::from("input"))
    );
    for point in &points {
        assert_eq!(
            attribute(point, "gen_ai.operation.name"),
            Some(&Value::from("chat"))
        );
        assert_eq!(
            attribute(point, "gen_ai.provider.name"),
            Some(&Value::from("openai"))
        );
        assert_eq!(
            attribute(point, "gen_ai.request.model"),
            Some(&Value::from("gpt-4o"))
        );
        assert_eq!(
            attribute(point, "gen_ai.response.model"),
            Some(&Value::from("gpt-4o-2024-08-06"))
        );
        assert_eq!(attribute(point, "server.port"), Some(&Value::I64(4000)));
        // The conventions' boundaries: 1, 4, 16, … 67108864.
        let bounds: Vec<f64> = point.bounds().collect();
        assert_eq!(
            (bounds.len(), bounds[0], bounds[13]),
            (14, 1.0, 67_108_864.0)
        );
    }

    let duration = named(OPERATION_DURATION);
    assert_eq!(duration.unit(), "s");
    let AggregatedMetrics::F64(MetricData::Histogram(duration)) = duration.data() else {
        panic!("duration: {:?}", duration.data());
    };
    let mut points: Vec<_> = duration.data_points().collect();
    points.sort_by(|a, b| a.sum().total_cmp(&b.sum()));
    assert_eq!(points.len(), 2, "{points:?}");
    assert!((points[0].sum() - 1.5).abs() < 1e-9, "{:?}", points[0]);
    assert_eq!(attribute(points[0], "error.type"), None);
    assert!((points[1].sum() - 30.0).abs() < 1e-9, "{:?}", points[1]);
    assert_eq!(
        attribute(points[1], "error.type"),
        Some(&Value::from("timeout"))
    );
    assert_eq!(attribute(points[1], "gen_ai.response.model"), None);
}
