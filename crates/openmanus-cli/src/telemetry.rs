//! OpenTelemetry export for every command: the `OTEL_*` variables or `[telemetry]` turn it on
//! (see `docs/observability.md`); nothing set, nothing is installed.

use agent_telemetry::export::{ExportPlan, Telemetry};

use crate::cli::GlobalArgs;

/// The exporter the environment and the configuration ask for, or why there is none although
/// one was asked for (a message for a warning: the command runs anyway).
pub fn start(global: &GlobalArgs) -> (Option<Telemetry>, Option<String>) {
    // A configuration that does not load is the command's to report, not ours: the variables
    // alone then decide (never a `${VAR}` left unset standing in for a header).
    let config = crate::config::load(global).ok();
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
    let secrets = config.map(|c| secrets(&c)).unwrap_or_default();
    match Telemetry::start(&plan, tls, secrets) {
        Ok(telemetry) => (Some(telemetry), None),
        Err(error) => (None, Some(error.to_string())),
    }
}

/// What captured content must never hold: the configuration's secret values, and the values of
/// the variables that hold keys and tokens (the usual provider keys, the OTLP headers, the A2A
/// agents', the server's and NATS's tokens, `[agent] tool_env_deny`).
fn secrets(config: &agent_config::Config) -> Vec<String> {
    let names = agent_config::DEFAULT_SECRET_ENV
        .iter()
        .map(|n| (*n).to_owned())
        .chain(config.a2a.agents.iter().filter_map(|a| a.token_env.clone()))
        .chain([
            config.server.token_env.clone(),
            config.nats.token_env.clone(),
        ])
        .chain(config.agent.tool_env_deny.iter().cloned());
    config
        .secret_values()
        .into_iter()
        .chain(names.filter_map(|name| std::env::var(name).ok()))
        .collect()
}
