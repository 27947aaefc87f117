//! The configuration's sections turned into the runtime values the factory hands to agents.

use std::path::Path;
use std::sync::Arc;

use agent_browser::BrowserConfig;
use agent_config::Config;
use agent_sandbox::{Sandbox, SandboxError};
use agent_toolcall::{AutoTextReply, NextStepPromptMode, ObservationTruncation, Policies};
use agent_tools::WebSearch;

use crate::factory::FactoryError;

/// `[agent]`'s policies.
pub(crate) fn policies(config: &Config) -> Policies {
    let agent = &config.agent;
    Policies {
        next_step_prompt: match agent.next_step_prompt {
            agent_config::NextStepPromptMode::AppendToMemory => NextStepPromptMode::AppendToMemory,
            _ => NextStepPromptMode::Ephemeral,
        },
        observation_truncation: match agent.observation_truncation {
            agent_config::ObservationTruncation::Cut => ObservationTruncation::Cut,
            _ => ObservationTruncation::HeadAndTail,
        },
        auto_text_reply: match agent.auto_text_reply {
            agent_config::AutoTextReply::Finish => AutoTextReply::Finish,
            _ => AutoTextReply::KeepLooping,
        },
    }
}

/// `[browser]`, with downloads landing in the workspace (where the run's file list names them).
pub(crate) fn browser(config: &Config, workspace: &Path) -> BrowserConfig {
    BrowserConfig {
        downloads_dir: Some(workspace.join("downloads")),
        ..BrowserConfig::from_settings(&config.browser)
    }
}

/// `[search]`.
pub(crate) fn web_search(config: &Config) -> Result<Arc<WebSearch>, FactoryError> {
    WebSearch::new(config.search.web_search())
        .map(Arc::new)
        .map_err(|e| FactoryError::Settings {
            section: "search",
            message: e.to_string(),
        })
}

/// The sandbox of `[sandbox]` (bubblewrap, or a Docker container with `backend = "docker"`)
/// over `workspace`; `mirrored` shows the workspace at its own path inside, otherwise at
/// `[sandbox] work_dir`.
pub(crate) async fn sandbox(
    config: &Config,
    workspace: &Path,
    mirrored: bool,
) -> Result<Arc<dyn Sandbox>, SandboxError> {
    let settings = &config.sandbox;
    let workspace = workspace
        .canonicalize()
        .map_err(|source| SandboxError::Io {
            context: format!("cannot resolve the workspace {}", workspace.display()),
            source,
        })?;
    let local = agent_sandbox::LocalSandboxOptions::from_settings(
        &workspace,
        &settings.work_dir,
        &settings.memory_limit,
        settings.cpu_limit,
        settings.timeout,
        settings.network_enabled,
    )?;
    let local = if mirrored { local.mirrored() } else { local };
    match settings.backend {
        agent_config::SandboxBackend::Local => {
            Ok(Arc::new(agent_sandbox::LocalSandbox::new(local).await?))
        }
        agent_config::SandboxBackend::Docker => {
            let docker = agent_sandbox::DockerSandboxOptions {
                image: settings.image.clone(),
                work_dir: local.work_dir.clone(),
                memory_limit: local.memory_limit,
                cpu_limit: local.cpu_limit,
                timeout: local.timeout,
                network_enabled: settings.network_enabled,
                ..agent_sandbox::DockerSandboxOptions::new(&workspace)
            };
            Ok(Arc::new(agent_sandbox::DockerSandbox::new(docker).await?))
        }
    }
}
