//! The GenAI client metrics, by the OpenTelemetry semantic conventions:
//! `gen_ai.client.token.usage` (tokens per call, by `gen_ai.token.type`) and
//! `gen_ai.client.operation.duration` (seconds per call), both histograms with the conventions'
//! bucket boundaries.
//!
//! The model client calls [`record`] after each call. Until an exporter [`install`]s the
//! instruments (`[telemetry] metrics`, `OTEL_METRICS_EXPORTER=otlp`), that is one atomic load.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};

/// The token histogram's name.
pub const TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// The duration histogram's name.
pub const OPERATION_DURATION: &str = "gen_ai.client.operation.duration";

/// The conventions' advised boundaries of `gen_ai.client.token.usage`.
const TOKEN_BOUNDARIES: [f64; 14] = [
    1.0,
    4.0,
    16.0,
    64.0,
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
];
/// The conventions' advised boundaries of `gen_ai.client.operation.duration` (seconds).
const DURATION_BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

struct Instruments {
    tokens: Histogram<u64>,
    duration: Histogram<f64>,
}

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

/// Creates the instruments on `meter`; from then on [`record`] records. The first call wins
/// (one exporter per process).
pub fn install(meter: &Meter) {
    let _ = INSTRUMENTS.get_or_init(|| Instruments {
        tokens: meter
            .u64_histogram(TOKEN_USAGE)
            .with_unit("{token}")
            .with_description("Number of input and output tokens used per model call")
            .with_boundaries(TOKEN_BOUNDARIES.to_vec())
            .build(),
        duration: meter
            .f64_histogram(OPERATION_DURATION)
            .with_unit("s")
            .with_description("Duration of a model call")
            .with_boundaries(DURATION_BOUNDARIES.to_vec())
            .build(),
    });
}

/// Whether the instruments are installed (metrics are exported).
#[must_use]
pub fn enabled() -> bool {
    INSTRUMENTS.get().is_some()
}

/// One model call, as its metrics are attributed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Call<'a> {
    /// `gen_ai.operation.name` (`chat`).
    pub operation: &'a str,
    /// `gen_ai.provider.name`.
    pub provider: &'a str,
    /// `gen_ai.request.model`.
    pub request_model: &'a str,
    /// `gen_ai.response.model`, when the reply said.
    pub response_model: Option<&'a str>,
    /// `server.address`.
    pub server_address: Option<&'a str>,
    /// `server.port`.
    pub server_port: Option<i64>,
    /// `error.type` of a failed call (its duration is recorded; it has no tokens).
    pub error_type: Option<&'a str>,
}

impl Call<'_> {
    fn attributes(&self) -> Vec<KeyValue> {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", self.operation.to_owned()),
            KeyValue::new("gen_ai.provider.name", self.provider.to_owned()),
            KeyValue::new("gen_ai.request.model", self.request_model.to_owned()),
        ];
        if let Some(model) = self.response_model {
            attributes.push(KeyValue::new("gen_ai.response.model", model.to_owned()));
        }
        if let Some(address) = self.server_address {
            attributes.push(KeyValue::new("server.address", address.to_owned()));
        }
        if let Some(port) = self.server_port {
            attributes.push(KeyValue::new("server.port", port));
        }
        if let Some(error) = self.error_type {
            attributes.push(KeyValue::new("error.type", error.to_owned()));
        }
        attributes
    }
}

/// Records one call: its duration, and the input and output tokens when the provider counted
/// them. Does nothing until [`install`].
pub fn record(call: &Call<'_>, duration: Duration, tokens: Option<(u64, u64)>) {
    let Some(instruments) = INSTRUMENTS.get() else {
        return;
    };
    let mut attributes = call.attributes();
    instruments
        .duration
        .record(duration.as_secs_f64(), &attributes);
    if let Some((input, output)) = tokens {
        attributes.push(KeyValue::new("gen_ai.token.type", "input"));
        instruments.tokens.record(input, &attributes);
        if let Some(last) = attributes.last_mut() {
            *last = KeyValue::new("gen_ai.token.type", "output");
        }
        instruments.tokens.record(output, &attributes);
    }
}
