// Why one file past 700 lines (its tests included, a quarter of it): resolving `[telemetry]`
// against the `OTEL_*` variables is one table of precedence rules, tested beside it; the
// metrics, the transports' clients and the span layer are modules of their own.

//! The exporter: the GenAI spans of this process sent to an OpenTelemetry collector over OTLP,
//! configured as every OpenTelemetry SDK is (the `OTEL_*` variables), or by `[telemetry]`.
//!
//! [`ExportPlan::resolve`] reads the settings and the environment (the variables win); with
//! no endpoint, or `OTEL_SDK_DISABLED=true`, there is no plan and nothing is installed: the
//! spans stay callsite checks. [`Telemetry::start`] builds the exporter: spans are queued and
//! sent by the batch processor's own thread (a blocking HTTP client there, or gRPC on a small
//! runtime of its own), so a collector that is slow or down never holds a run; its first
//! failure is a warning, and the later ones are not repeated.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agent_config::TelemetrySettings;
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, RetryPolicy, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::resource::EnvResourceDetector;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tracing::warn;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use crate::TARGET;
use crate::capture::{self, Scrubber};

mod metrics;

/// The service name when neither `OTEL_SERVICE_NAME` nor `[telemetry] service_name` says one.
pub const DEFAULT_SERVICE_NAME: &str = "openmanus";

/// How long one export may take when `OTEL_EXPORTER_OTLP_TIMEOUT` does not say.
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the last spans may take to leave at the end of the process.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(3);

/// Why telemetry could not be set up. The program goes on without it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// A protocol this build does not speak.
    #[error(
        "OTLP protocol `{0}` is not supported: use `http/protobuf`{grpc}",
        grpc = if cfg!(feature = "grpc") { " or `grpc`" } else { " (this build has no gRPC)" }
    )]
    Protocol(String),
    /// The HTTP client of the exporter could not be built.
    #[error("cannot build the telemetry HTTP client: {0}")]
    Client(String),
    /// The exporter could not be built (a malformed endpoint, header or timeout).
    #[error("cannot build the OTLP exporter: {0}")]
    Exporter(String),
    /// A `[telemetry] headers` entry no HTTP request can carry (both transports refuse it,
    /// rather than one sending without it).
    #[error("[telemetry] headers: `{name}` {reason}")]
    Header {
        /// The header's name as written.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// `headers` as HTTP (and gRPC metadata) can carry them: names lowercase.
///
/// # Errors
///
/// [`TelemetryError::Header`] for a name that is not a header name or a value with a byte a
/// header cannot hold (a line break, a control character).
fn checked_headers(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<HashMap<String, String>, TelemetryError> {
    use reqwest::header::{HeaderName, HeaderValue};
    let mut checked = HashMap::with_capacity(headers.len());
    for (name, value) in headers {
        let invalid = |reason: &str| TelemetryError::Header {
            name: name.clone(),
            reason: reason.to_owned(),
        };
        let lower = name.trim().to_ascii_lowercase();
        HeaderName::from_bytes(lower.as_bytes())
            .map_err(|_| invalid("is not a valid header name"))?;
        HeaderValue::from_str(value).map_err(|_| {
            invalid("has a value a header cannot carry (a line break or a control character)")
        })?;
        if checked.insert(lower, value.clone()).is_some() {
            return Err(invalid(
                "is there twice (names differ only in case or spaces)",
            ));
        }
    }
    Ok(checked)
}

/// How spans travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// OTLP over HTTP, protobuf bodies (`http/protobuf`).
    HttpProtobuf,
    /// OTLP over gRPC (`grpc`).
    Grpc,
}

/// What to export, where: the settings and the environment resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportPlan {
    /// The URL spans are sent to (for HTTP, with `/v1/traces`).
    pub endpoint: String,
    /// The transport.
    pub transport: Transport,
    /// How long one export may take (`OTEL_EXPORTER_OTLP_TIMEOUT`, default 10 s).
    pub timeout: Duration,
    /// Headers from `[telemetry] headers` (the exporter adds `OTEL_EXPORTER_OTLP_HEADERS`).
    pub headers: HashMap<String, String>,
    /// `service.name`.
    pub service_name: String,
    /// More resource attributes from `[telemetry]` (`OTEL_RESOURCE_ATTRIBUTES` adds to them).
    pub resource_attributes: Vec<(String, String)>,
    /// Whether content is captured.
    pub capture_content: bool,
    /// Where the GenAI metrics go, when they are exported (`[telemetry] metrics`,
    /// `OTEL_METRICS_EXPORTER=otlp`): `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` as it is, or the
    /// base endpoint (with `/v1/metrics` for HTTP). `None`: no metrics.
    pub metrics_endpoint: Option<String>,
}

impl ExportPlan {
    /// The plan `settings` and the environment (`env(name)`) make, or `None` when nothing is
    /// to be exported: `OTEL_SDK_DISABLED=true`, `[telemetry] enabled = false`, or no endpoint
    /// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, used as it is; `OTEL_EXPORTER_OTLP_ENDPOINT` or
    /// `[telemetry] endpoint`, with `/v1/traces` added for HTTP).
    ///
    /// # Errors
    ///
    /// [`TelemetryError::Protocol`] for a protocol other than `http/protobuf` (or `grpc`
    /// with the `grpc` feature); [`TelemetryError::Header`] for a `[telemetry] headers` entry
    /// no request can carry.
    pub fn resolve(
        settings: &TelemetrySettings,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, TelemetryError> {
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let is_true = |name: &str| var(name).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if is_true("OTEL_SDK_DISABLED") || settings.enabled == Some(false) {
            return Ok(None);
        }
        // No endpoint, nothing to do: a protocol set for other programs is not ours to judge.
        let exact = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let base = var("OTEL_EXPORTER_OTLP_ENDPOINT")
            .or_else(|| settings.endpoint.clone().filter(|e| !e.trim().is_empty()));
        if exact.is_none() && base.is_none() {
            return Ok(None);
        }
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .or_else(|| settings.protocol.clone())
            .unwrap_or_else(|| "http/protobuf".to_owned());
        let transport = match protocol.to_ascii_lowercase().as_str() {
            "http/protobuf" => Transport::HttpProtobuf,
            "grpc" if cfg!(feature = "grpc") => Transport::Grpc,
            _ => return Err(TelemetryError::Protocol(protocol)),
        };
        let signal = |path: &str| {
            base.as_ref().map(|base| match transport {
                Transport::HttpProtobuf => format!("{}{path}", base.trim_end_matches('/')),
                Transport::Grpc => base.clone(),
            })
        };
        let Some(endpoint) = exact.or_else(|| signal("/v1/traces")) else {
            return Ok(None);
        };
        // Asked for, not the standard's default: the usual LLM-observability back ends take
        // traces only and would answer every metrics export with an error.
        let metrics = match var("OTEL_METRICS_EXPORTER").map(|v| v.to_ascii_lowercase()) {
            Some(exporter) if exporter == "none" => false,
            Some(exporter) => exporter.split(',').any(|e| e.trim() == "otlp"),
            None => settings.metrics,
        };
        let metrics_endpoint = metrics
            .then(|| var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT").or_else(|| signal("/v1/metrics")))
            .flatten();
        // Milliseconds, as every SDK reads them; a value that is not a number is left out.
        let timeout = var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT"))
            .and_then(|ms| ms.parse::<u64>().ok())
            .map_or(DEFAULT_EXPORT_TIMEOUT, Duration::from_millis);
        let capture_content = settings.capture_content
            || is_true("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT");
        Ok(Some(Self {
            endpoint,
            transport,
            timeout,
            headers: checked_headers(&settings.headers)?,
            service_name: var("OTEL_SERVICE_NAME")
                .or_else(|| settings.service_name.clone())
                .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned()),
            resource_attributes: settings
                .resource_attributes
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            capture_content,
            metrics_endpoint,
        }))
    }
}

/// The installed exporter. Keep it for the life of the process and call
/// [`shutdown`](Self::shutdown) at the end: the spans still queued leave then.
#[derive(Debug)]
pub struct Telemetry {
    provider: SdkTracerProvider,
    /// The GenAI metrics' provider, when they are exported.
    meters: Option<opentelemetry_sdk::metrics::SdkMeterProvider>,
    /// What was asked for and could not be set up (the metrics' exporter).
    warnings: Vec<String>,
    endpoint: String,
    /// The runtime the gRPC channel lives on.
    #[cfg(feature = "grpc")]
    runtime: Option<tokio::runtime::Runtime>,
}

impl Telemetry {
    /// Builds the exporter of `plan`; HTTPS connections use `tls` (the process's one TLS
    /// configuration). Content capture is turned on when the plan says so, with `secrets`
    /// replaced. The GenAI metrics' instruments are installed once per process
    /// ([`crate::metrics::install`]): start one exporter per process. A metrics exporter that
    /// cannot be built leaves the spans' export on, with a warning ([`Self::warnings`]).
    ///
    /// # Errors
    ///
    /// [`TelemetryError::Client`] or [`TelemetryError::Exporter`] when the exporter cannot be
    /// built.
    pub fn start(
        plan: &ExportPlan,
        tls: rustls::ClientConfig,
        secrets: impl IntoIterator<Item = String>,
    ) -> Result<Self, TelemetryError> {
        #[cfg(feature = "grpc")]
        let mut runtime = None;
        let client = match plan.transport {
            Transport::HttpProtobuf => Some(http_client(plan, tls)?),
            Transport::Grpc => None,
        };
        // One report for both exporters: a collector that is down costs one warning.
        let warned = Arc::new(AtomicBool::new(false));
        let exporter = match (plan.transport, &client) {
            (Transport::HttpProtobuf, Some(http)) => Reported::new(
                http_exporter(plan, http.clone())?,
                &plan.endpoint,
                Arc::clone(&warned),
            ),
            (Transport::HttpProtobuf, None) => {
                return Err(TelemetryError::Client("no HTTP client".to_owned()));
            }
            #[cfg(feature = "grpc")]
            (Transport::Grpc, _) => {
                let rt = grpc_runtime()?;
                let exporter = grpc_exporter(plan, &rt)?;
                runtime = Some(rt);
                Reported::new(exporter, &plan.endpoint, Arc::clone(&warned))
            }
            #[cfg(not(feature = "grpc"))]
            (Transport::Grpc, _) => return Err(TelemetryError::Protocol("grpc".to_owned())),
        };
        let mut resource = Resource::builder_empty()
            .with_service_name(plan.service_name.clone())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .with_attributes(
                plan.resource_attributes
                    .iter()
                    .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
            )
            .with_detector(Box::new(EnvResourceDetector::new()));
        if let Some(name) = std::env::var("OTEL_SERVICE_NAME")
            .ok()
            .filter(|v| !v.trim().is_empty())
        {
            resource = resource.with_service_name(name);
        }
        let resource = resource.build();
        let mut warnings = Vec::new();
        let meters = plan.metrics_endpoint.as_ref().and_then(|endpoint| {
            let exporter = match (plan.transport, client) {
                (Transport::HttpProtobuf, Some(client)) => {
                    metrics::http_exporter(plan, endpoint, client)
                }
                #[cfg(feature = "grpc")]
                (Transport::Grpc, _) => match &runtime {
                    Some(runtime) => metrics::grpc_exporter(plan, endpoint, runtime),
                    None => Err(TelemetryError::Client("no gRPC runtime".to_owned())),
                },
                _ => Err(TelemetryError::Protocol("grpc".to_owned())),
            };
            match exporter {
                Ok(exporter) => Some(metrics::provider(
                    Reported::new(exporter, endpoint, Arc::clone(&warned)),
                    resource.clone(),
                )),
                Err(error) => {
                    warnings.push(format!("metrics are not exported ({endpoint}): {error}"));
                    None
                }
            }
        });
        let provider = SdkTracerProvider::builder()
            .with_resource(resource)
            .with_batch_exporter(exporter)
            .build();
        if plan.capture_content {
            capture::enable(Scrubber::new(secrets));
        }
        Ok(Self {
            provider,
            meters,
            warnings,
            endpoint: plan.endpoint.clone(),
            #[cfg(feature = "grpc")]
            runtime,
        })
    }

    /// The `tracing` layer that turns the GenAI spans ([`TARGET`]) into OpenTelemetry spans;
    /// it sees nothing else.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        layer_with(&self.provider)
    }

    /// Where spans go.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// What was asked for and could not be set up (a metrics exporter that could not be
    /// built): for the program to report once its logging is on.
    #[must_use]
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Sends the spans (and metrics) still queued now (the SDK waits at most 5 s for each);
    /// for tests and for programs about to be stopped. Blocking, as
    /// [`shutdown`](Self::shutdown).
    pub fn flush(&self) {
        if let Err(error) = self.provider.force_flush() {
            warn!(%error, "telemetry: the last spans could not be sent");
        }
        if let Some(meters) = &self.meters
            && let Err(error) = meters.force_flush()
        {
            warn!(%error, "telemetry: the last metrics could not be sent");
        }
    }

    /// Sends the spans still queued and stops the exporter (at most [`SHUTDOWN_TIMEOUT`]).
    /// Blocking: call it outside the async runtime, or through `spawn_blocking`.
    pub fn shutdown(self) {
        // The metrics' last values (the reader exports once more as it stops) leave beside
        // the spans, within the same bound.
        let meters = self.meters.map(|meters| {
            std::thread::spawn(move || meters.shutdown_with_timeout(SHUTDOWN_TIMEOUT))
        });
        if let Err(error) = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
            tracing::debug!(%error, "telemetry shut down with an error");
        }
        if let Some(Ok(Err(error))) = meters.map(std::thread::JoinHandle::join) {
            tracing::debug!(%error, "telemetry's metrics shut down with an error");
        }
        #[cfg(feature = "grpc")]
        if let Some(runtime) = self.runtime {
            runtime.shutdown_timeout(Duration::from_millis(100));
        }
    }
}

/// The `tracing` layer that turns the GenAI spans ([`TARGET`]) into spans of `provider` (and
/// sees nothing else): [`Telemetry::layer`]'s, for a provider of the caller's making (a test's
/// in-memory exporter).
pub fn layer_with<S>(provider: &SdkTracerProvider) -> impl Layer<S> + use<S>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("openmanus"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        // The OpenTelemetry context is not made current on every poll of an instrumented
        // future: the trace context we send comes from the span itself (`context::headers`),
        // not from `Context::current()`.
        .with_context_activation(false)
        .with_target(false)
        .with_level(false)
        .with_filter(Targets::new().with_target(TARGET, tracing::Level::TRACE))
}

/// Retries after a failed export: one, soon (a connection the collector closed as it was
/// reused, a restart under way), so that the exit of a process whose collector is down is held
/// ~0.1 s, not more (a refused connection is retried too: two retries up to 400 ms held it
/// ~0.45 s).
fn retry_policy() -> RetryPolicy {
    RetryPolicy::recommended()
        .with_max_retries(1)
        .with_initial_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_millis(100))
        .with_max_jitter(Duration::from_millis(20))
}

/// The blocking HTTP client of the exporters. A blocking client must be neither built nor
/// dropped inside an async runtime: built on a thread of its own; it lives on the exporters'
/// threads (the batch processor's, the metric reader's). Bounded, so a collector that takes the
/// connection and never answers holds only an exporter's thread, and only for the timeout.
fn http_client(
    plan: &ExportPlan,
    tls: rustls::ClientConfig,
) -> Result<reqwest::blocking::Client, TelemetryError> {
    let timeout = plan.timeout;
    std::thread::spawn(move || {
        reqwest::blocking::Client::builder()
            .tls_backend_preconfigured(tls)
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .build()
    })
    .join()
    .map_err(|_| TelemetryError::Client("the client thread panicked".to_owned()))?
    .map_err(|e| TelemetryError::Client(e.to_string()))
}

/// An HTTP exporter's builder (spans' or metrics') set as the plan says, sending to `endpoint`
/// with `client`.
fn over_http<B: WithExportConfig + WithHttpConfig>(
    builder: B,
    plan: &ExportPlan,
    endpoint: &str,
    client: reqwest::blocking::Client,
) -> B {
    builder
        .with_protocol(Protocol::HttpBinary)
        .with_http_client(client)
        .with_endpoint(endpoint.to_owned())
        .with_timeout(plan.timeout)
        .with_headers(plan.headers.clone())
        .with_retry_policy(retry_policy())
}

/// A gRPC exporter's builder (spans' or metrics') set as the plan says, sending to `endpoint`.
#[cfg(feature = "grpc")]
fn over_grpc<B: WithExportConfig + opentelemetry_otlp::WithTonicConfig>(
    builder: B,
    plan: &ExportPlan,
    endpoint: &str,
) -> Result<B, TelemetryError> {
    Ok(builder
        .with_endpoint(endpoint.to_owned())
        .with_timeout(plan.timeout)
        .with_metadata(grpc_metadata(plan)?)
        .with_retry_policy(retry_policy()))
}

fn http_exporter(
    plan: &ExportPlan,
    client: reqwest::blocking::Client,
) -> Result<opentelemetry_otlp::SpanExporter, TelemetryError> {
    let builder = opentelemetry_otlp::SpanExporter::builder().with_http();
    over_http(builder, plan, &plan.endpoint, client)
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))
}

/// The runtime the gRPC channels' tasks run on, whatever runtime (if any) the program has.
#[cfg(feature = "grpc")]
fn grpc_runtime() -> Result<tokio::runtime::Runtime, TelemetryError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("otlp-grpc")
        .enable_all()
        .build()
        .map_err(|e| TelemetryError::Client(e.to_string()))
}

/// The plan's headers as gRPC metadata.
#[cfg(feature = "grpc")]
fn grpc_metadata(
    plan: &ExportPlan,
) -> Result<opentelemetry_otlp::tonic_types::metadata::MetadataMap, TelemetryError> {
    use opentelemetry_otlp::tonic_types::metadata::MetadataMap;
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

    let mut headers = HeaderMap::new();
    for (key, value) in &plan.headers {
        let name = HeaderName::from_bytes(key.to_ascii_lowercase().as_bytes())
            .map_err(|e| TelemetryError::Exporter(format!("header `{key}`: {e}")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| TelemetryError::Exporter(format!("the value of header `{key}`: {e}")))?;
        headers.insert(name, value);
    }
    Ok(MetadataMap::from_headers(headers))
}

#[cfg(feature = "grpc")]
fn grpc_exporter(
    plan: &ExportPlan,
    runtime: &tokio::runtime::Runtime,
) -> Result<opentelemetry_otlp::SpanExporter, TelemetryError> {
    let _entered = runtime.enter();
    let builder = opentelemetry_otlp::SpanExporter::builder().with_tonic();
    over_grpc(builder, plan, &plan.endpoint)?
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))
}

/// An exporter whose first failure is a warning (with where it was sending), and the later
/// ones only debug lines: a collector that is down costs one line, not one per batch.
#[derive(Debug)]
struct Reported<E> {
    inner: E,
    endpoint: String,
    warned: Arc<AtomicBool>,
}

impl<E> Reported<E> {
    fn new(inner: E, endpoint: &str, warned: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            endpoint: endpoint.to_owned(),
            warned,
        }
    }

    /// `result` of an export of `what` (`spans`, `metrics`), its failure reported.
    fn noted(&self, result: OTelSdkResult, what: &str) -> OTelSdkResult {
        if let Err(error) = &result {
            if self.warned.swap(true, Ordering::Relaxed) {
                tracing::debug!(%error, endpoint = %self.endpoint, "telemetry export failed again");
            } else {
                warn!(
                    %error,
                    endpoint = %self.endpoint,
                    "telemetry: {what} could not be sent to the collector (runs go on; later \
                     failures are not reported)"
                );
            }
        }
        result
    }
}

impl<E: SpanExporter> SpanExporter for Reported<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.noted(self.inner.export(batch).await, "spans")
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn shutdown(&self) -> OTelSdkResult {
        self.inner.shutdown()
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn configured_headers_are_checked_once_for_both_transports() {
        let with = |name: &str, value: &str| TelemetrySettings {
            endpoint: Some("http://127.0.0.1:4318".to_owned()),
            headers: [(name.to_owned(), value.to_owned())].into(),
            ..TelemetrySettings::default()
        };
        let plan = ExportPlan::resolve(&with(" X-Api-Key", "k1"), env(&[]))
            .unwrap()
            .unwrap();
        assert_eq!(
            plan.headers.get("x-api-key").map(String::as_str),
            Some("k1")
        );
        for (name, value, says) in [
            ("bad name", "v", "is not a valid header name"),
            ("x-ok", "line\nbreak", "a header cannot carry"),
        ] {
            let error = ExportPlan::resolve(&with(name, value), env(&[])).unwrap_err();
            let text = error.to_string();
            assert!(matches!(error, TelemetryError::Header { .. }), "{text}");
            assert!(text.contains(name) && text.contains(says), "{text}");
        }
        let twice = TelemetrySettings {
            endpoint: Some("http://127.0.0.1:4318".to_owned()),
            headers: [
                ("X-Key".to_owned(), "a".to_owned()),
                ("x-key ".to_owned(), "b".to_owned()),
            ]
            .into(),
            ..TelemetrySettings::default()
        };
        let error = ExportPlan::resolve(&twice, env(&[]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("is there twice"), "{error}");
    }

    #[test]
    fn metrics_are_exported_only_when_asked_and_go_to_their_own_path() {
        let base = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")];
        let metrics = |settings: &TelemetrySettings, vars: &[(&str, &str)]| {
            let mut all = base.to_vec();
            all.extend_from_slice(vars);
            ExportPlan::resolve(settings, env(&all))
                .unwrap()
                .unwrap()
                .metrics_endpoint
        };
        let off = TelemetrySettings::default();
        let on = TelemetrySettings {
            metrics: true,
            ..TelemetrySettings::default()
        };
        let path = Some("http://127.0.0.1:4318/v1/metrics".to_owned());
        assert_eq!(metrics(&off, &[]), None, "not the standard's default");
        assert_eq!(metrics(&on, &[]), path);
        assert_eq!(metrics(&off, &[("OTEL_METRICS_EXPORTER", "OTLP")]), path);
        assert_eq!(
            metrics(&off, &[("OTEL_METRICS_EXPORTER", "console,otlp")]),
            path
        );
        assert_eq!(metrics(&on, &[("OTEL_METRICS_EXPORTER", "none")]), None);
        assert_eq!(
            metrics(&on, &[("OTEL_METRICS_EXPORTER", "prometheus")]),
            None
        );
        assert_eq!(
            metrics(
                &on,
                &[("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:9/custom")]
            ),
            Some("http://m:9/custom".to_owned())
        );
        // Only a traces endpoint: no base to send metrics to.
        let traces_only = ExportPlan::resolve(
            &on,
            env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/v1/traces")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(traces_only.metrics_endpoint, None);
    }

    #[test]
    fn nothing_set_means_no_export() {
        let plan = ExportPlan::resolve(&TelemetrySettings::default(), env(&[])).unwrap();
        assert_eq!(plan, None);
    }

    #[test]
    fn the_endpoint_variable_turns_export_on_and_gets_the_traces_path() {
        let plan = ExportPlan::resolve(
            &TelemetrySettings::default(),
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(plan.endpoint, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(plan.transport, Transport::HttpProtobuf);
        assert_eq!(plan.service_name, DEFAULT_SERVICE_NAME);
        assert!(!plan.capture_content);
    }

    #[test]
    fn variables_win_over_the_settings_and_the_signal_endpoint_is_taken_as_it_is() {
        let settings = TelemetrySettings {
            endpoint: Some("http://collector:4318".to_owned()),
            service_name: Some("from-config".to_owned()),
            ..TelemetrySettings::default()
        };
        let plan = ExportPlan::resolve(
            &settings,
            env(&[
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://other:9999/custom",
                ),
                ("OTEL_SERVICE_NAME", "from-env"),
                ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "TRUE"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(plan.endpoint, "http://other:9999/custom");
        assert_eq!(plan.service_name, "from-env");
        assert!(plan.capture_content);
        let from_settings = ExportPlan::resolve(&settings, env(&[])).unwrap().unwrap();
        assert_eq!(from_settings.endpoint, "http://collector:4318/v1/traces");
        assert_eq!(from_settings.service_name, "from-config");
    }

    #[test]
    fn disabled_wins_over_an_endpoint() {
        let settings = TelemetrySettings {
            endpoint: Some("http://collector:4318".to_owned()),
            ..TelemetrySettings::default()
        };
        for vars in [
            [("OTEL_SDK_DISABLED", "true")],
            [("OTEL_SDK_DISABLED", " TRUE ")],
        ] {
            assert_eq!(ExportPlan::resolve(&settings, env(&vars)).unwrap(), None);
        }
        let off = TelemetrySettings {
            enabled: Some(false),
            ..settings
        };
        assert_eq!(ExportPlan::resolve(&off, env(&[])).unwrap(), None);
    }

    #[test]
    fn a_protocol_without_an_endpoint_is_not_ours_to_judge() {
        let plan = ExportPlan::resolve(
            &TelemetrySettings::default(),
            env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]),
        )
        .unwrap();
        assert_eq!(plan, None);
    }

    #[test]
    fn the_export_timeout_is_read_in_milliseconds() {
        let plan = |vars: &[(&str, &str)]| {
            let mut all = vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")];
            all.extend_from_slice(vars);
            ExportPlan::resolve(&TelemetrySettings::default(), env(&all))
                .unwrap()
                .unwrap()
                .timeout
        };
        assert_eq!(plan(&[]), DEFAULT_EXPORT_TIMEOUT);
        assert_eq!(
            plan(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "2500")]),
            Duration::from_millis(2500)
        );
        assert_eq!(
            plan(&[
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "700")
            ]),
            Duration::from_millis(700)
        );
        assert_eq!(
            plan(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")]),
            DEFAULT_EXPORT_TIMEOUT
        );
    }

    #[test]
    fn an_unknown_protocol_is_an_error_that_names_it() {
        let error = ExportPlan::resolve(
            &TelemetrySettings::default(),
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ]),
        )
        .unwrap_err();
        assert!(error.to_string().contains("`http/json`"), "{error}");
    }

    #[cfg(feature = "grpc")]
    #[test]
    fn grpc_keeps_the_endpoint_as_it_is() {
        let plan = ExportPlan::resolve(
            &TelemetrySettings::default(),
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(plan.endpoint, "http://127.0.0.1:4317");
        assert_eq!(plan.transport, Transport::Grpc);
    }
}
