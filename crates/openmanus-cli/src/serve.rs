//! `openmanus serve`: the configuration to a running [`agent_server::Server`], until Ctrl-C or
//! SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;

use agent_server::{Hub, Server, ServerOptions};
use anyhow::{Context, Result};

use crate::cli::GlobalArgs;
use crate::output::{note, say};
use crate::{config, sessions};

/// Runs the server; returns the exit code once it has stopped.
///
/// # Errors
///
/// A configuration error, a store that cannot be opened, an address that cannot be used.
pub async fn serve(
    global: &GlobalArgs,
    bind: Option<SocketAddr>,
    max_concurrent_runs: Option<usize>,
) -> Result<u8> {
    let mut config = config::load(global)?;
    let settings = config.server.clone();
    let bind = match bind {
        Some(bind) => bind,
        None => settings.bind.parse().with_context(|| {
            format!(
                "[server] bind = {:?} is not an address such as 127.0.0.1:8765",
                settings.bind
            )
        })?,
    };
    let token = token(&settings)?;
    let mut probe = config::factory(global, config.clone());
    let mut options = ServerOptions::new(settings.sessions_path(probe.workspace()));
    options.bind = bind;
    options.token = token;
    options.max_concurrent_runs = max_concurrent_runs.unwrap_or(settings.max_concurrent_runs);
    options.idle_timeout = (settings.idle_session_secs > 0)
        .then(|| std::time::Duration::from_secs(settings.idle_session_secs));
    options.allowed_hosts = settings.allowed_hosts.clone();
    options.allowed_origins = settings.allowed_origins.clone();
    options.allow_host_tools = settings.allow_host_tools;
    options.validate()?;
    if options.sandboxed() && !config.sandbox.use_sandbox {
        note(
            "serving beyond loopback: tools run in the sandbox ([server] allow_host_tools = true runs them on the host)",
        );
        config.sandbox.use_sandbox = true;
        probe = config::factory(global, config);
    }
    let store = sessions::open(global, &probe).await?;
    let nats_settings = probe.config().nats.clone();
    let mut hub = Hub::new(
        store.clone(),
        probe,
        &options.sessions_root,
        options.max_concurrent_runs,
    );
    if settings.dispatch == agent_config::Dispatch::Nats {
        let nats = crate::nats::connect(&nats_settings, "openmanus serve").await?;
        note(&format!(
            "runs go to the workers at {} ([server] dispatch = \"nats\")",
            nats_settings.url
        ));
        hub = hub.with_workers(agent_worker::Submitter::new(nats));
    }
    let hub = Arc::new(hub);
    let server = Server::bind(&options, hub).await?;
    let address = server.local_addr().context("the server's address")?;
    if global.json {
        say(&serde_json::json!({"type": "listening", "address": address,
                                "url": format!("http://{address}/"),
                                "sessions": options.sessions_root})
        .to_string());
    } else {
        note(&format!(
            "openmanus serve: http://{address}/ (sessions in {}; Ctrl-C stops)",
            options.sessions_root.display()
        ));
    }
    server.serve(crate::signal::stop_signal()).await?;
    store.close().await;
    if global.json {
        say(&serde_json::json!({"type": "stopped"}).to_string());
    } else {
        note("stopped");
    }
    Ok(0)
}

/// The token: from the environment variable `[server] token_env`, else the first line of
/// `[server] token_file`.
fn token(settings: &agent_config::ServerSettings) -> Result<Option<String>> {
    if let Ok(token) = std::env::var(&settings.token_env)
        && !token.trim().is_empty()
    {
        return Ok(Some(token.trim().to_owned()));
    }
    let Some(file) = &settings.token_file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the token file {}", file.display()))?;
    Ok(text
        .lines()
        .next()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned))
}
