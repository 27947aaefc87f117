//! The GenAI metrics' exporter: the instruments of [`crate::metrics`] read every
//! `OTEL_METRIC_EXPORT_INTERVAL` (60 s by default) and at the end of the process, and sent
//! over the spans' transport (its client, its headers, its timeout and retries).

use std::time::Duration;

use super::{ExportPlan, Reported, TelemetryError};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};

pub(super) fn http_exporter(
    plan: &ExportPlan,
    endpoint: &str,
    client: reqwest::blocking::Client,
) -> Result<opentelemetry_otlp::MetricExporter, TelemetryError> {
    let builder = opentelemetry_otlp::MetricExporter::builder().with_http();
    super::over_http(builder, plan, endpoint, client)
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))
}

#[cfg(feature = "grpc")]
pub(super) fn grpc_exporter(
    plan: &ExportPlan,
    endpoint: &str,
    runtime: &tokio::runtime::Runtime,
) -> Result<opentelemetry_otlp::MetricExporter, TelemetryError> {
    let _entered = runtime.enter();
    let builder = opentelemetry_otlp::MetricExporter::builder().with_tonic();
    super::over_grpc(builder, plan, endpoint)?
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))
}

/// The meter provider reading into `exporter`, with the GenAI instruments installed on it.
pub(super) fn provider(
    exporter: Reported<opentelemetry_otlp::MetricExporter>,
    resource: Resource,
) -> SdkMeterProvider {
    let reader = PeriodicReader::builder(exporter).build();
    let provider = SdkMeterProvider::builder()
        .with_resource(resource)
        .with_reader(reader)
        .build();
    crate::metrics::install(&provider.meter("openmanus"));
    provider
}

impl<E: PushMetricExporter> PushMetricExporter for Reported<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        self.noted(self.inner.export(metrics).await, "metrics")
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}
