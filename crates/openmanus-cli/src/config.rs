//! From the command line's options to the configuration and the agent factory; `config check`.

use std::path::{Path, PathBuf};

use agent_config::Config;
use agent_llm::{ApiType, Model, ToolCallMode};
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

/// The configuration for the `sessions` commands, which need only the workspace and `[store]`:
/// as [`load`], but an environment variable that is not set (the API key's, typically) does
/// not stop it.
///
/// # Errors
///
/// A configuration error other than an unset variable.
pub fn load_for_store(global: &GlobalArgs) -> Result<Config> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let loader = agent_config::ConfigLoader::new(cwd)
        .explicit_path(global.config.clone())
        .with_env(|name| {
            std::env::var(name)
                .ok()
                .or_else(|| (name != agent_config::CONFIG_ENV).then(|| "unset".to_owned()))
        });
    Ok(loader.load()?)
}

/// The demo's workspace: `--workspace`, else `./workspace`; made absolute.
///
/// # Errors
///
/// When the current directory cannot be read.
pub fn demo_workspace(explicit: Option<&Path>) -> Result<PathBuf> {
    let dir = explicit.map_or_else(
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

/// The agent factory for `config`, with `--workspace` applied (the factory resolves the
/// configured workspace itself).
pub fn factory(global: &GlobalArgs, config: Config) -> AgentFactory {
    let factory = AgentFactory::new(config);
    match &global.workspace {
        Some(workspace) => factory.with_workspace(workspace),
        None => factory,
    }
}

/// `openmanus config check`.
///
/// # Errors
///
/// A configuration error.
pub fn check(global: &GlobalArgs) -> Result<u8> {
    let factory = factory(global, load(global)?);
    let config = factory.config();
    say(&format!("configuration: {}", config.source()));
    say(&format!("workspace: {}", factory.workspace().display()));
    say("");
    say(&config.describe_llms());
    say("");
    for name in [agents::MANUS, agents::SWE] {
        let settings = config.llm_for(name);
        Model::new(settings.clone())
            .with_context(|| format!("the model settings for `{name}` are not usable"))?;
        say(&format!(
            "{name}: {} through {}; tool calls: {}",
            settings.model,
            api_name(settings.api_type),
            mode_name(settings.tool_call_mode)
        ));
    }
    say("\nok: the configuration loads and every model setting is usable");
    Ok(EXIT_OK)
}

/// The API a setting talks to, for `config check`.
fn api_name(api_type: ApiType) -> &'static str {
    match api_type {
        ApiType::Openai => "an OpenAI-compatible API",
        ApiType::Azure => "Azure OpenAI",
        ApiType::Ollama => "Ollama (OpenAI-compatible)",
        ApiType::Anthropic => "Anthropic's Messages API",
        ApiType::Aws => "Amazon Bedrock (Converse)",
    }
}

/// The tool-call mode, as `config check` reports it.
fn mode_name(mode: ToolCallMode) -> &'static str {
    match mode {
        ToolCallMode::Native => "native (the API's function calling)",
        ToolCallMode::Text => "text (schemas in the prompt, calls read from the reply)",
        ToolCallMode::Auto => {
            "auto (native; text for the rest of the run if the server refuses tools)"
        }
    }
}
