//! From the configuration file to agents: model settings per agent, agent options, the
//! workspace; `config check`; and the planning flow.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_config::Config;
use agent_core::{Agent, CancellationToken};
use agent_llm::{ChatModel, LlmClient, LlmSettings};
use agent_toolcall::Policies;
use agents::AgentOptions;
use agents::flow::{Flow, FlowEvent, FlowOptions, PlanningFlow};
use anyhow::{Context, Result};
use serde_json::json;

use agent_session::Journal;
use crate::{AgentKind, GlobalArgs, note, say};

/// What a run needs from the configuration.
pub struct Resolved {
    /// The model settings for the agent (its `[llm.<name>]` section over `[llm]`).
    pub llm: LlmSettings,
    /// The agent's options.
    pub options: AgentOptions,
    /// The MCP servers of `mcp.json`.
    pub mcp_servers: Vec<agent_config::McpServerConfig>,
}

fn load(global: &GlobalArgs) -> Result<Config> {
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

/// The agent options of the configuration; `with_sandbox: false` leaves out the sandbox of
/// `use_sandbox` (SandboxManus has its own).
async fn options(global: &GlobalArgs, config: &Config, with_sandbox: bool) -> Result<AgentOptions> {
    let workspace = workspace_dir(global.workspace.as_deref(), Some(config.workspace_root()))?;
    let mut options = AgentOptions::new(&workspace);
    options.max_steps = config.agent.max_steps;
    options.max_observe = config.agent.max_observe;
    options.policies = Policies::from_settings(&config.agent);
    options.browser = agent_browser::BrowserConfig {
        // Downloads land in the workspace, where the run's file list names them.
        downloads_dir: Some(workspace.join("downloads")),
        ..agent_browser::BrowserConfig::from_settings(&config.browser)
    };
    options.web_search = Some(Arc::new(
        agent_web::WebSearch::from_settings(&config.search).context("invalid [search] settings")?,
    ));
    if with_sandbox && config.sandbox.use_sandbox {
        // The tools run in the sandbox with the workspace at its own path, so paths and
        // observations are the same as without the sandbox. No fallback: if the sandbox cannot
        // run, the run does not start.
        let sandbox = sandbox(config, &workspace, true)
            .await
            .context("[sandbox] use_sandbox = true, but the sandbox cannot run")?;
        options = AgentOptions {
            workspace: sandbox.workspace().to_path_buf(),
            ..options
        }
        .with_sandbox(sandbox);
    }
    Ok(options)
}

/// The sandbox of `[sandbox]` (bubblewrap, or a Docker container with `backend = "docker"`)
/// over `workspace` (created if missing); `mirrored` shows the workspace at its own path
/// inside, otherwise at `[sandbox] work_dir`.
async fn sandbox(
    config: &Config,
    workspace: &Path,
    mirrored: bool,
) -> Result<Arc<dyn agent_sandbox::Sandbox>> {
    Ok(agent_sandbox::from_settings(&config.sandbox, workspace, mirrored).await?)
}

/// SandboxManus's sandbox: `[sandbox]` over the workspace, shown at `[sandbox] work_dir`
/// inside. `[daytona]` is read but not used: the sandbox is the one `[sandbox]` describes.
///
/// # Errors
///
/// A configuration error, or a sandbox that cannot run here (the message says how to fix it).
pub async fn sandbox_for_manus(
    global: &GlobalArgs,
    workspace: &Path,
) -> Result<Arc<dyn agent_sandbox::Sandbox>> {
    let config = load(global)?;
    if config.daytona.is_some() {
        note(
            "warning: [daytona] is ignored: SandboxManus runs in the sandbox configured by \
             [sandbox]",
        );
    }
    sandbox(&config, workspace, false)
        .await
        .context("SandboxManus needs the sandbox, and it cannot run")
}

/// Loads the configuration and resolves what the agent `kind` needs.
///
/// # Errors
///
/// A configuration error (it names the file, line and key).
pub async fn resolve(global: &GlobalArgs, kind: AgentKind) -> Result<Resolved> {
    resolve_named(global, kind.name()).await
}

/// Loads the configuration and resolves what the agent called `name` needs.
///
/// # Errors
///
/// A configuration error (it names the file, line and key).
pub async fn resolve_named(global: &GlobalArgs, name: &str) -> Result<Resolved> {
    let config = load(global)?;
    Ok(Resolved {
        llm: config.llm_for(name).clone(),
        options: options(global, &config, name != agents::SANDBOX_MANUS).await?,
        mcp_servers: config.mcp.servers.clone(),
    })
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
    Ok(crate::EXIT_OK)
}

/// `openmanus flow`: Manus (and SWE) as executors of a planning flow.
///
/// # Errors
///
/// A configuration error, or a journal that cannot be written.
pub async fn run_flow(
    global: &GlobalArgs,
    prompt: Option<String>,
    interrupts: &crate::Interrupts,
) -> Result<u8> {
    let config = load(global)?;
    let options = options(global, &config, true).await?;
    // The sandbox of `use_sandbox` goes with the flow, whichever way it ends.
    let sandbox = options.sandbox.clone();
    let result = flow_session(global, prompt, interrupts, &config, options).await;
    if let Some(sandbox) = sandbox
        && let Err(e) = sandbox.cleanup().await
    {
        note(&format!("warning: cleaning up the sandbox: {e}"));
    }
    result
}

async fn flow_session(
    global: &GlobalArgs,
    prompt: Option<String>,
    interrupts: &crate::Interrupts,
    config: &Config,
    options: AgentOptions,
) -> Result<u8> {
    std::fs::create_dir_all(&options.workspace).with_context(|| {
        format!(
            "cannot create the workspace {}",
            options.workspace.display()
        )
    })?;
    let prompt = match prompt {
        Some(prompt) => Some(prompt),
        None => crate::read_task("Enter your prompt: ").await?,
    };
    let Some(prompt) = prompt.filter(|p| !p.trim().is_empty()) else {
        note("warning: Empty prompt provided.");
        return Ok(crate::EXIT_OK);
    };

    let journal =
        Journal::create(&options.workspace, "flow").context("cannot create the run journal")?;
    // One bus for every executor (and their models' retries): their events reach the renderer
    // in the order they happened, interleaved with the flow's own.
    let bus = agent_core::EventBus::new();
    let model = |name: &str, events: Option<&agent_core::EventBus>| -> Result<Arc<dyn ChatModel>> {
        journal
            .model(config.llm_for(name).clone(), events)
            .with_context(|| format!("invalid model settings for `{name}`"))
    };
    // Manus connects the MCP servers of mcp.json at its first step (run_flow.py builds Manus
    // without `create`); a server that fails is logged and the others still work.
    let mut manus = agents::manus_lazy_mcp(
        model(agents::MANUS, Some(&bus))?,
        &options,
        config.mcp.servers.clone(),
    );
    manus.base_mut().set_event_bus(bus.clone());
    let mut swe = agents::swe(model(agents::SWE, Some(&bus))?, &options);
    swe.base_mut().set_event_bus(bus.clone());
    // [runflow] use_data_analysis_agent adds DataAnalysis to the executors (run_flow.py).
    let data_analysis = if config.runflow.use_data_analysis_agent {
        let mut agent = agent_charts::data_analysis(
            model(agent_charts::DATA_ANALYSIS, Some(&bus))?,
            &options.workspace,
        );
        agent.base_mut().set_event_bus(bus.clone());
        Some(agent)
    } else {
        None
    };
    let (flow_events, flow_receiver) = tokio::sync::mpsc::unbounded_channel::<FlowEvent>();
    let renderer = crate::render::spawn_flow(
        bus.subscribe(),
        flow_receiver,
        crate::mode(global),
        journal.handle(),
    );
    drop(bus);
    let mut flow = PlanningFlow::new(model("planning", None)?)
        .with_agent("manus", manus)
        .with_agent("swe", swe);
    if let Some(agent) = data_analysis {
        flow = flow.with_agent("data_analysis", agent);
    }
    let mut flow = flow
        .with_options(FlowOptions {
            primary_agent: Some("manus".to_owned()),
            max_step_retries: config.runflow.max_step_retries,
            time_limit: (config.runflow.timeout_secs > 0)
                .then(|| Duration::from_secs(config.runflow.timeout_secs)),
            ..FlowOptions::default()
        })
        .with_event_handler(move |event: &FlowEvent| {
            let _ = flow_events.send(event.clone());
        });
    let token = CancellationToken::new();
    flow.set_cancellation_token(token.clone());
    interrupts.set(Some(token));
    let outcome = flow.execute(&prompt).await;
    interrupts.set(None);
    // Dropping the flow drops the executors, their buses and the flow's handler: the renderer
    // shows what is left and ends.
    drop(flow);
    let totals = renderer.await.unwrap_or_default();
    if !global.json && !global.quiet && totals.prompt_tokens + totals.completion_tokens > 0 {
        note(&format!(
            "tokens: {} in, {} out",
            totals.prompt_tokens, totals.completion_tokens
        ));
    }
    let path = journal.path().to_path_buf();
    let code = match outcome {
        Ok(outcome) => {
            journal.handle().write(
                "result",
                json!({"text": outcome.text(), "complete": outcome.is_complete()}),
            );
            say(&outcome.text());
            if outcome.cancelled {
                crate::EXIT_CANCELLED
            } else if outcome.is_complete() {
                crate::EXIT_OK
            } else {
                crate::EXIT_FAILED
            }
        }
        Err(error) => {
            note(&format!("error: the flow failed: {error}"));
            crate::EXIT_FAILED
        }
    };
    journal.close().await.context("writing the run journal")?;
    if !global.json {
        note(&format!("journal: {}", path.display()));
    }
    Ok(code)
}
