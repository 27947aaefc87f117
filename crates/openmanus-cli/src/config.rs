//! From the command line's options to the configuration and the agent factory; `config check`.

use std::path::{Path, PathBuf};

use agent_config::Config;
use agent_llm::LlmClient;
use agents::AgentFactory;
use anyhow::{Context, Result};

use crate::cli::GlobalArgs;
use crate::output::{EXIT_OK, say};

/// Loads the configuration `--config` names, else the one found from the current directory.
///
/// # Errors
///
/// A configuration error (it names the file, line and key).
pub fn load(global: &GlobalArgs) -> Result<Config> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    Ok(Config::load(cwd, global.config.as_deref())?)
}

/// The workspace: `--workspace`, else the configured root, else `./workspace`; made absolute.
///
/// # Errors
///
/// When the current directory cannot be read.
pub fn workspace_dir(explicit: Option<&Path>, configured: Option<&Path>) -> Result<PathBuf> {
    let dir = explicit.or(configured).map_or_else(
        || PathBuf::from(agents::DEFAULT_WORKSPACE),
        Path::to_path_buf,
    );
    if dir.is_absolute() {
        return Ok(dir);
    }
    Ok(std::env::current_dir()
        .context("cannot read the current directory")?
        .join(dir))
}

/// The agent factory for `config`, with `--workspace` applied.
///
/// # Errors
///
/// When the current directory cannot be read.
pub fn factory(global: &GlobalArgs, config: Config) -> Result<AgentFactory> {
    let workspace = workspace_dir(global.workspace.as_deref(), Some(config.workspace_root()))?;
    Ok(AgentFactory::new(config).with_workspace(workspace))
}

/// `openmanus config check`.
///
/// # Errors
///
/// A configuration error.
pub fn check(global: &GlobalArgs) -> Result<u8> {
    let config = load(global)?;
    say(&format!("configuration: {}", config.source()));
    say(&format!(
        "workspace: {}",
        workspace_dir(global.workspace.as_deref(), Some(config.workspace_root()))?.display()
    ));
    say("");
    say(&config.describe_llms());
    for name in [agents::MANUS, agents::SWE] {
        LlmClient::new(config.llm_for(name).clone())
            .with_context(|| format!("the model settings for `{name}` are not usable"))?;
    }
    say("\nok: the configuration loads and every model setting is usable");
    Ok(EXIT_OK)
}
