//! `openmanus acp`: the agent of an editor, over the Agent Client Protocol on standard input and
//! output ([`agent_acp`]).

use agent_acp::AcpAgent;
use agent_session::Target;
use anyhow::Result;

use crate::cli::GlobalArgs;
use crate::output::EXIT_OK;
use crate::{config, sessions};

/// Serves the editor until it closes standard input; sessions are recorded in the store unless
/// it is turned off.
///
/// # Errors
///
/// A configuration error, a store that cannot be opened, a connection that failed.
pub async fn acp(global: &GlobalArgs, target: Target) -> Result<u8> {
    for (given, flag) in [
        (global.json, "--json"),
        (
            global.output_last_message.is_some(),
            "--output-last-message",
        ),
    ] {
        if given {
            anyhow::bail!(
                "acp does not use {flag}: standard output carries the Agent Client Protocol,                  which the editor reads"
            );
        }
    }
    let factory = config::factory(global, config::load(global)?);
    let store = if global.no_store || !factory.config().store.enabled {
        None
    } else {
        Some(sessions::open(global, &factory).await?)
    };
    AcpAgent::new(factory, target, store.clone())
        .serve_stdio()
        .await?;
    if let Some(store) = store {
        store.close().await;
    }
    Ok(EXIT_OK)
}
