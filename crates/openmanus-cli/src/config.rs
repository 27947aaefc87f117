//! From the command line's options to the configuration and the agent factory; `config check`.

use std::path::{Path, PathBuf};

use agent_config::{Config, McpTransport};
use agent_llm::{ApiType, Model, ToolCallMode};
use agents::AgentFactory;
use anyhow::{Context, Result};

use serde_json::json;

use crate::cli::GlobalArgs;
use crate::output::{EXIT_OK, note, say};

/// Loads the configuration `--config` names, else the one found from the current directory.
///
/// # Errors
///
/// A configuration error (it names the file, line and key).
pub fn load(global: &GlobalArgs) -> Result<Config> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    Ok(agent_config::ConfigLoader::new(cwd)
        .explicit_path(global.config.clone())
        .with_overrides(global.overrides())
        .load()?)
}

/// The configuration for the `sessions` commands, which need only the workspace and `[store]`:
/// as [`load`], but an environment variable that is not set (the API key's, typically) does
/// not stop it.
///
/// # Errors
///
/// A configuration error other than an unset variable.
pub fn load_for_store(global: &GlobalArgs) -> Result<Config> {
    Ok(store_loader(global)?.load()?)
}

/// The loader of [`load_for_store`].
fn store_loader(global: &GlobalArgs) -> Result<agent_config::ConfigLoader> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    Ok(agent_config::ConfigLoader::new(cwd)
        .explicit_path(global.config.clone())
        .with_overrides(global.overrides())
        .with_env(|name| {
            std::env::var(name)
                .ok()
                .or_else(|| (name != agent_config::CONFIG_ENV).then(|| "unset".to_owned()))
        }))
}

/// The settings a command that sends no model request starts from when there is no
/// configuration file: a model is named, never called.
const NO_FILE_DEFAULTS: &str = "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"http://127.0.0.1:9/v1\"\n";

/// As [`load_for_store`], for the commands that send no model request (`sessions` other than
/// `resume`, `replay`): without any configuration file, the default settings with the `-c`
/// overrides (a note says so), so `openmanus demo` and then `openmanus sessions list` work on a
/// machine with no configuration.
///
/// # Errors
///
/// A configuration error other than an unset variable or a missing file (an explicit
/// `--config` that does not exist is still an error).
pub fn load_for_store_or_defaults(global: &GlobalArgs) -> Result<Config> {
    let loader = store_loader(global)?;
    match loader.load() {
        Err(agent_config::ConfigError::NotFound { .. }) => {
            note("note: no configuration file found: using the default settings");
            Ok(loader.parse_str(NO_FILE_DEFAULTS)?)
        }
        loaded => Ok(loaded?),
    }
}

/// Why the run commands cannot load the configuration, as `openmanus doctor` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadProblem {
    /// There is no configuration file; the text lists the paths looked at.
    NoFile(String),
    /// The configuration reads these environment variables, which are not set.
    Unset(Vec<String>),
    /// The configuration does not load for another reason (the error, with file, line and key).
    Invalid(String),
}

/// The configuration as `openmanus doctor` sees it.
#[derive(Debug)]
pub struct Inspected {
    /// The configuration as the run commands load it (`--config`, the lookup order, the `-c`
    /// overrides); when they cannot load it, the same with the unset variables empty, or the
    /// default settings.
    pub config: Config,
    /// Why the run commands cannot load it; `None`: they can.
    pub problem: Option<LoadProblem>,
    /// The configuration file, loaded or not (`None`: there is none).
    pub file: Option<PathBuf>,
}

/// Loads the configuration as [`load`] does, but finds out what stops it rather than failing:
/// with variables unset it is loaded again with them empty (to see the rest), and they are
/// listed; without any file (a note says so), or when it does not load at all, the default
/// settings stand in for it.
///
/// # Errors
///
/// When the current directory cannot be read.
pub fn inspect(global: &GlobalArgs) -> Result<Inspected> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let loader = agent_config::ConfigLoader::new(&cwd)
        .explicit_path(global.config.clone())
        .with_overrides(global.overrides());
    let defaults = |loader: &agent_config::ConfigLoader| {
        loader
            .parse_str(NO_FILE_DEFAULTS)
            .or_else(|_| agent_config::ConfigLoader::new(&cwd).parse_str(NO_FILE_DEFAULTS))
    };
    let invalid = |error: &agent_config::ConfigError| Some(LoadProblem::Invalid(error.to_string()));
    // The file that failed: the error's, or for an override's error the file found.
    let failed = |error: &agent_config::ConfigError| {
        error
            .path()
            .map(Path::to_path_buf)
            .or_else(|| loader.locate().ok().map(|source| source.path))
    };
    match loader.load() {
        Ok(config) => Ok(Inspected {
            file: Some(config.source().path.clone()),
            config,
            problem: None,
        }),
        Err(agent_config::ConfigError::NotFound { searched }) => {
            note("note: no configuration file found: using the default settings");
            let searched: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
            Ok(Inspected {
                config: defaults(&loader)?,
                problem: Some(LoadProblem::NoFile(searched.join(", "))),
                file: None,
            })
        }
        Err(agent_config::ConfigError::EnvVar { var, .. }) => {
            let unset =
                std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
            let record = std::sync::Arc::clone(&unset);
            let lenient = loader.clone().with_env(move |name| {
                std::env::var(name).ok().or_else(|| {
                    if let Ok(mut unset) = record.lock() {
                        unset.insert(name.to_owned());
                    }
                    Some(String::new())
                })
            });
            match lenient.load() {
                Ok(config) => {
                    let recorded = unset.lock().map(|set| set.clone()).unwrap_or_default();
                    // Only the variables the file reads (not the lookup's own, such as HOME),
                    // and the one the strict load stopped at (mcp.json's count too).
                    let mut vars: Vec<String> = config
                        .env_references()
                        .map(|(_, var)| var.to_owned())
                        .filter(|var| recorded.contains(var))
                        .chain(std::iter::once(var))
                        .collect();
                    vars.sort();
                    vars.dedup();
                    Ok(Inspected {
                        file: Some(config.source().path.clone()),
                        config,
                        problem: Some(LoadProblem::Unset(vars)),
                    })
                }
                Err(error) => Ok(Inspected {
                    config: defaults(&loader)?,
                    problem: invalid(&error),
                    file: failed(&error),
                }),
            }
        }
        Err(error) => Ok(Inspected {
            config: defaults(&loader)?,
            problem: invalid(&error),
            file: failed(&error),
        }),
    }
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

/// `openmanus rules`: the permission rules, in the order they are checked.
///
/// # Errors
///
/// The configuration or the rules file cannot be read.
pub fn rules(global: &GlobalArgs) -> Result<u8> {
    let factory = factory(global, load(global)?);
    let config = factory.config();
    let project_path = agents::permissions::project_rules_path(factory.workspace());
    let project = agents::permissions::project_denials(factory.workspace())?;
    let path = agent_config::RulesFile::default_path();
    let file = match &path {
        Some(path) => agent_config::RulesFile::load(path)?,
        None => agent_config::RulesFile::default(),
    };
    let listed: Vec<(&str, &agent_config::PermissionRule)> = project
        .iter()
        .map(|rule| ("project", rule))
        .chain(config.permissions.rules.iter().map(|rule| ("config", rule)))
        .chain(file.rules.iter().map(|rule| ("rules file", rule)))
        .collect();
    let hooks = &config.permissions.hooks;
    if global.json {
        say(&json!({
            "approval": config.permissions.approval.as_str(),
            "sandbox": config.permissions.sandbox.as_str(),
            "rules_file": path,
            "project_rules": project_path,
            "rules": listed.iter().map(|(from, rule)| {
                json!({"from": from, "tool": rule.tool, "prefix": rule.prefix,
                       "path": rule.path, "workspace": rule.workspace,
                       "decision": rule.decision})
            }).collect::<Vec<_>>(),
            "hooks": hooks.iter().map(|hook| {
                json!({"on": hook.on, "command": hook.command, "tools": hook.tools,
                       "timeout_secs": hook.timeout.as_secs_f64()})
            }).collect::<Vec<_>>(),
        })
        .to_string());
        return Ok(EXIT_OK);
    }
    say(&format!(
        "sandbox: {}; approval: {}",
        config.permissions.sandbox, config.permissions.approval
    ));
    say(&format!(
        "project rules (deny only): {}",
        project_path.display()
    ));
    match &path {
        Some(path) => say(&format!("rules file: {}", path.display())),
        None => say("rules file: none (no HOME or XDG_CONFIG_HOME)"),
    }
    for hook in hooks {
        say(&format!(
            "hook {}: {}{}",
            hook.on,
            hook.command.join(" "),
            if hook.tools.is_empty() {
                String::new()
            } else {
                format!(" (for {})", hook.tools.join(", "))
            }
        ));
    }
    if listed.is_empty() {
        say("no rules: every refused call is asked about (or refused with nobody to ask)");
    }
    for (n, (from, rule)) in listed.iter().enumerate() {
        let decision = match rule.decision {
            agent_config::RuleDecision::Allow => "allow",
            agent_config::RuleDecision::Deny => "deny",
        };
        say(&format!(
            "{}. {decision} {} {}{}{} ({from})",
            n + 1,
            rule.tool.as_deref().unwrap_or("any tool"),
            rule.prefix
                .as_deref()
                .map_or_else(|| "anything".to_owned(), |prefix| format!("{prefix:?}…")),
            rule.path
                .as_deref()
                .map_or_else(String::new, |path| format!(" naming paths under {path}")),
            rule.workspace
                .as_deref()
                .map_or_else(String::new, |ws| format!(" in {ws}")),
        ));
    }
    Ok(EXIT_OK)
}

/// `openmanus config check`: the file, the overrides, the workspace, each model setting (the
/// key redacted), the MCP servers of `mcp.json`, and warnings about keys that do nothing; with
/// `--json`, one JSON object with the same facts.
///
/// # Errors
///
/// A configuration error.
pub fn check(global: &GlobalArgs) -> Result<u8> {
    let factory = factory(global, load(global)?);
    let config = factory.config();
    let mut agents = serde_json::Map::new();
    let mut agent_lines = Vec::new();
    for name in [agents::MANUS, agents::SWE] {
        let settings = config.llm_for(name);
        Model::new(settings.clone())
            .with_context(|| format!("the model settings for `{name}` are not usable"))?;
        agent_lines.push(format!(
            "{name}: {} through {}; tool calls: {}",
            settings.model,
            api_name(settings.api_type),
            mode_name(settings.tool_call_mode)
        ));
        agents.insert(
            name.to_lowercase(),
            json!({"model": settings.model, "api_type": settings.api_type,
                   "tool_call_mode": settings.tool_call_mode, "base_url": settings.base_url}),
        );
    }
    let servers: Vec<(String, &str, String)> = config
        .mcp
        .servers
        .iter()
        .map(|server| {
            (
                server.id.clone(),
                server.transport.kind(),
                target(&server.transport),
            )
        })
        .collect();
    let warnings: Vec<String> = config
        .inert_keys()
        .map(|(key, why)| format!("`{key}` does nothing: {why}"))
        .collect();
    if global.json {
        let mut llms = serde_json::Map::new();
        for name in std::iter::once("default").chain(config.llm_profile_names()) {
            llms.insert(name.to_owned(), serde_json::to_value(config.llm_for(name))?);
        }
        let overrides: Vec<String> = global.overrides().iter().map(ToString::to_string).collect();
        say(&json!({
            "ok": true,
            "source": config.source().path,
            "origin": config.source().origin.to_string(),
            "overrides": overrides,
            "workspace": factory.workspace(),
            "llm": llms,
            "agents": agents,
            "mcp_json": config.mcp_path(),
            "mcp_servers": servers.iter().map(|(id, kind, target)| {
                json!({"id": id, "transport": kind, "target": target})
            }).collect::<Vec<_>>(),
            "warnings": warnings,
        })
        .to_string());
        return Ok(EXIT_OK);
    }
    say(&format!("configuration: {}", config.source()));
    for over in global.overrides() {
        say(&format!("override: {over}"));
    }
    say(&format!("workspace: {}", factory.workspace().display()));
    say("");
    say(&config.describe_llms());
    say("");
    for line in agent_lines {
        say(&line);
    }
    say("");
    match (config.mcp_path(), servers.is_empty()) {
        (Some(path), true) => say(&format!(
            "MCP servers: none ({} does not list any)",
            path.display()
        )),
        (None, true) => say("MCP servers: none"),
        (path, false) => {
            let from = path
                .map(|p| format!(" (from {})", p.display()))
                .unwrap_or_default();
            say(&format!("MCP servers{from}:"));
            for (id, kind, target) in &servers {
                say(&format!("  {id}: {kind} {target}"));
            }
        }
    }
    for warning in &warnings {
        note(&format!("warning: {warning}"));
    }
    say("\nok: the configuration loads and every model setting is usable");
    Ok(EXIT_OK)
}

/// Where an MCP server is: its command line or its URL (never headers or environment values,
/// which may hold tokens).
fn target(transport: &McpTransport) -> String {
    match transport {
        McpTransport::Stdio { command, args, .. } => std::iter::once(command.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        McpTransport::Sse { url, .. } | McpTransport::StreamableHttp { url, .. } => url.clone(),
    }
}

/// The API a setting talks to, for `config check`.
pub fn api_name(api_type: ApiType) -> &'static str {
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
