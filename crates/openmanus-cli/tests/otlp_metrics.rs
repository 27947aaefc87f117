//! The GenAI client metrics, as the real binary sends them: to an OTLP/HTTP collector on
//! 127.0.0.1 that takes them as a collector does (`POST /v1/metrics`, protobuf, 200) and
//! decodes them with the protocol's own message types.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};

use agent_testkit::MockOpenAi;
use axum::http::{HeaderMap, StatusCode};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::{HistogramDataPoint, Metric};
use prost::Message as _;
use serde_json::json;

use crate::common::{Setup, call, finish};

/// What the collector got: every export decoded, and anything it refused.
#[derive(Default)]
struct Received {
    exports: Vec<ExportMetricsServiceRequest>,
    refused: Vec<String>,
    traces: usize,
}

/// A collector on 127.0.0.1: metrics must be protobuf on `/v1/metrics`; traces are counted.
async fn collector() -> (String, Arc<Mutex<Received>>) {
    let received = Arc::new(Mutex::new(Received::default()));
    let metrics = Arc::clone(&received);
    let traces = Arc::clone(&received);
    let app = axum::Router::new()
        .route(
            "/v1/metrics",
            axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
                let mut received = metrics.lock().unwrap();
                let protobuf = headers
                    .get("content-type")
                    .is_some_and(|v| v.as_bytes() == b"application/x-protobuf");
                match ExportMetricsServiceRequest::decode(body) {
                    Ok(export) if protobuf => received.exports.push(export),
                    Ok(_) => received.refused.push(format!("content-type {headers:?}")),
                    Err(error) => received.refused.push(error.to_string()),
                }
                async { StatusCode::OK }
            }),
        )
        .route(
            "/v1/traces",
            axum::routing::post(move || {
                traces.lock().unwrap().traces += 1;
                async { StatusCode::OK }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

fn metrics<'a>(exports: &'a [ExportMetricsServiceRequest], name: &str) -> Vec<&'a Metric> {
    exports
        .iter()
        .flat_map(|e| &e.resource_metrics)
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .filter(|m| m.name == name)
        .collect()
}

fn points(metric: &Metric) -> &[HistogramDataPoint] {
    match &metric.data {
        Some(Data::Histogram(histogram)) => &histogram.data_points,
        other => panic!("{}: not a histogram: {other:?}", metric.name),
    }
}

fn attribute<'a>(point: &'a HistogramDataPoint, key: &str) -> Option<&'a Any> {
    point
        .attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn text(value: &str) -> Any {
    Any::StringValue(value.to_owned())
}

#[tokio::test]
async fn a_run_sends_the_token_usage_and_duration_of_its_model_calls() {
    let mock = MockOpenAi::start().await.unwrap();
    mock.push(agent_testkit::Completion::tool_calls(
        None,
        [call("b", "bash", json!({"command": "echo one"}))],
    ))
    .push(finish("Done."));
    let setup = Setup::new(&mock);
    let (url, received) = collector().await;
    let output = setup
        .command()
        .args(["--prompt", "Echo once"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
        .env("OTEL_METRICS_EXPORTER", "otlp")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    mock.verify().unwrap();

    // Sent as the process ended (the reader's last collection), before it exited.
    let received = received.lock().unwrap();
    assert!(received.refused.is_empty(), "{:?}", received.refused);
    assert!(received.traces > 0, "the spans went too");
    let exports = &received.exports;
    let usage = metrics(exports, "gen_ai.client.token.usage");
    assert_eq!(usage.len(), 1, "{exports:#?}");
    assert_eq!(usage[0].unit, "{token}");
    let mut by_type: Vec<(String, u64, f64)> = points(usage[0])
        .iter()
        .map(|p| {
            let Some(Any::StringValue(kind)) = attribute(p, "gen_ai.token.type") else {
                panic!("{p:?}")
            };
            assert_eq!(attribute(p, "gen_ai.operation.name"), Some(&text("chat")));
            assert_eq!(attribute(p, "gen_ai.provider.name"), Some(&text("openai")));
            assert_eq!(attribute(p, "gen_ai.request.model"), Some(&text("gpt-4o")));
            assert_eq!(attribute(p, "gen_ai.response.model"), Some(&text("gpt-4o")));
            assert_eq!(attribute(p, "server.address"), Some(&text("127.0.0.1")));
            (kind.clone(), p.count, p.sum.unwrap_or_default())
        })
        .collect();
    by_type.sort_by(|a, b| a.0.cmp(&b.0));
    // Two model calls: one point per token type, each counting both calls.
    assert_eq!(by_type.len(), 2, "{by_type:?}");
    assert_eq!((by_type[0].0.as_str(), by_type[0].1), ("input", 2));
    assert_eq!((by_type[1].0.as_str(), by_type[1].1), ("output", 2));
    assert!(
        by_type[0].2 > by_type[1].2,
        "input outweighs output: {by_type:?}"
    );

    let duration = metrics(exports, "gen_ai.client.operation.duration");
    assert_eq!(duration.len(), 1, "{exports:#?}");
    assert_eq!(duration[0].unit, "s");
    let calls = points(duration[0]);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].count, 2);
    assert!(calls[0].sum.unwrap_or_default() > 0.0, "{calls:?}");
    assert_eq!(attribute(&calls[0], "error.type"), None);
}

#[tokio::test]
async fn without_being_asked_no_metrics_are_sent() {
    let mock = MockOpenAi::start().await.unwrap();
    mock.push(finish("Done."));
    let setup = Setup::new(&mock);
    let (url, received) = collector().await;
    let output = setup
        .command()
        .args(["--prompt", "Finish"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &url)
        .env_remove("OTEL_METRICS_EXPORTER")
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let received = received.lock().unwrap();
    assert!(received.traces > 0, "the spans went");
    assert!(received.exports.is_empty() && received.refused.is_empty());
}
