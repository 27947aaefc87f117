//! OpenTelemetry export for every command: the `OTEL_*` variables or `[telemetry]` turn it on
//! (see `docs/observability.md`); nothing set, nothing is installed.

use agent_telemetry::export::{ExportPlan, Telemetry};

use crate::cli::GlobalArgs;

/// The exporter the environment and the configuration ask for, or why there is none although
/// one was asked for (a message for a warning: the command runs anyway).
pub fn start(global: &GlobalArgs) -> (Option<Telemetry>, Option<String>) {
    // Leniently: a configuration that does not load is the command's to report, not ours.
    let config = crate::config::load_for_store(global).ok();
    let settings = config
        .as_ref()
        .map(|c| c.telemetry.clone())
        .unwrap_or_default();
    let plan = match ExportPlan::resolve(&settings, |name| std::env::var(name).ok()) {
        Ok(Some(plan)) => plan,
        Ok(None) => return (None, None),
        Err(error) => return (None, Some(error.to_string())),
    };
    let tls = match agent_llm::http::tls_config() {
        Ok(tls) => tls,
        Err(error) => return (None, Some(format!("no TLS configuration: {error}"))),
    };
    let secrets = config.map(|c| c.secret_values()).unwrap_or_default();
    match Telemetry::start(&plan, tls, secrets) {
        Ok(telemetry) => (Some(telemetry), None),
        Err(error) => (None, Some(error.to_string())),
    }
}
