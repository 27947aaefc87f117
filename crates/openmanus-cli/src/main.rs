//! `openmanus`: run the OpenManus agents from the terminal.
//!
//! `openmanus --prompt "..."` runs Manus (OpenManus's `python main.py --prompt`), `openmanus
//! demo` runs it against a scripted local model with no API key, `openmanus flow` runs the
//! planning flow, `openmanus replay` runs a recorded run again against its recording, and
//! `openmanus config check` shows the effective settings, `openmanus doctor` what this machine
//! can run. Every run renders
//! its steps live, prints the final answer and the files it changed, writes a journal and is
//! recorded in the session store, where `openmanus sessions` lists, shows, resumes and exports
//! it.
//!
//! This file only parses arguments and dispatches: agents are built and run through
//! [`agent_session::Session`] (see `run.rs`); events are rendered by `render.rs`.

mod acp;
mod cli;
mod color;
mod completions;
mod config;
mod demo;
mod doctor;
mod init;
mod line_editor;
mod mcp;
mod nats;
mod output;
mod render;
mod replay;
mod run;
mod serve;
mod sessions;
mod signal;
mod telemetry;
mod worker;

use std::process::ExitCode;

use agent_config::Config;
use agent_llm::LlmSettings;
use agent_session::Target;
use agents::{AgentFactory, AgentKind};
use anyhow::{Context, Result};
use clap::Parser;

use crate::cli::{Cli, Command, ConfigAction, GlobalArgs, McpConnection, SessionsAction};
use crate::output::{EXIT_FAILED, note, report_error};
use crate::run::{Interrupts, Job};

fn main() -> ExitCode {
    // Started as the Landlock shim of a confined tool: confine, then become the tool.
    if let Some(code) = agent_sandbox::shim_main() {
        return code;
    }
    let mut cli = Cli::parse();
    cli.gather_overrides();
    // ring as rustls's process-wide provider before any library builds an HTTP client.
    agent_llm::http::install_crypto_provider();
    let (telemetry, telemetry_problem) = telemetry::start(&cli.global);
    init_logging(&cli.global, telemetry.as_ref());
    if let Some(problem) = telemetry_problem {
        tracing::warn!("telemetry is off: {problem}");
    }
    for warning in telemetry.iter().flat_map(|t| t.warnings()) {
        tracing::warn!("telemetry: {warning}");
    }
    // One thread: a run is one conversation at a time, and tools that block run on tokio's
    // blocking pool. It halves the CPU a step costs (`cargo xtask bench`, process_cost: 0.8 ms
    // against 1.4 ms per step with the multi-threaded runtime): fewer threads woken per step.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            report_error(&anyhow::Error::new(error).context("cannot start the async runtime"));
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let code = runtime.block_on(async {
        match dispatch(cli).await {
            Ok(code) => code,
            Err(error) => {
                report_error(&error);
                EXIT_FAILED
            }
        }
    });
    // The runtime's tasks end first (their spans close), then the spans still queued leave (a
    // collector that is down costs at most a few seconds here, never during the run).
    drop(runtime);
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    ExitCode::from(code)
}

fn init_logging(global: &GlobalArgs, telemetry: Option<&agent_telemetry::export::Telemetry>) {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    // Without -v, libraries' chatter stays out of the live view: chromiumoxide warns about
    // every CDP message it does not know (`WS Invalid message: ...`), which says nothing
    // about the run. OPENMANUS_LOG replaces all of this.
    let level = match (global.quiet, global.verbose) {
        (true, _) => "error",
        (false, 0) => "warn,chromiumoxide=error",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    // The OpenTelemetry SDK's own reports of failed exports are left out unless asked for:
    // the exporter warns once itself. The GenAI spans (target `gen_ai`) are the exporter's.
    let default = format!("{level},opentelemetry=off");
    let spec = match std::env::var("OPENMANUS_LOG") {
        // The SDK's reports stay out unless the setting names them.
        Ok(spec) if spec.contains("opentelemetry") => spec,
        Ok(spec) => format!("{spec},opentelemetry=off"),
        Err(_) => default.clone(),
    };
    let filter = tracing_subscriber::EnvFilter::try_new(format!("{spec},gen_ai=off"))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("{default},gen_ai=off")));
    let colour = color::init(global.color).colour;
    let Some(telemetry) = telemetry else {
        // Without export, one global filter, as before telemetry existed: the cheapest set-up
        // (a per-layer filter is consulted on every span enter and exit).
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(colour)
            .try_init();
        return;
    };
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(telemetry.layer())
        .try_init();
}

async fn dispatch(cli: Cli) -> Result<u8> {
    if let Some(Command::Serve {
        bind,
        max_concurrent_runs,
        ..
    }) = cli.command
    {
        // The server handles its own signals: the first stops it cleanly.
        return serve::serve(&cli.global, bind, max_concurrent_runs).await;
    }
    if let Some(Command::Acp { flow }) = cli.command {
        // The editor owns standard input and output, and stops the agent by closing them.
        let target = if flow {
            Target::Flow
        } else {
            Target::Agent(cli.agent)
        };
        return acp::acp(&cli.global, target).await;
    }
    if let Some(Command::Doctor { timeout, .. }) = cli.command {
        // Before Ctrl-C is given its meaning for runs: it stops doctor at once.
        return doctor::doctor(&cli.global, std::time::Duration::from_secs(timeout)).await;
    }
    match &cli.command {
        // The worker handles its own signals: the first stops it cleanly.
        Some(Command::Worker {
            nats,
            concurrency,
            name,
        }) => return worker::worker(&cli.global, nats, *concurrency, name.clone()).await,
        Some(Command::Submit {
            nats,
            agent,
            id,
            session,
            follow,
            wait,
            task,
        }) => {
            let submission = worker::Submission {
                agent: agent.clone(),
                id: id.clone(),
                session: session.clone(),
                follow: *follow,
                wait: *wait,
                task: task.clone(),
            };
            return worker::submit(&cli.global, nats, submission).await;
        }
        _ => {}
    }
    let interrupts = Interrupts::install();
    let global = &cli.global;
    let job = |target, prompt, interactive| Job {
        global,
        interrupts: &interrupts,
        target,
        prompt,
        interactive,
        resume: None,
        images: Vec::new(),
    };
    match cli.command {
        Some(Command::Completions { shell }) => completions::generate(global, shell),
        Some(Command::Demo) => demo(global, &interrupts).await,
        Some(Command::Flow { prompt, .. }) => {
            let factory = config::factory(global, config::load(global)?);
            run::run(job(Target::Flow, prompt, false), &factory).await
        }
        Some(Command::Config {
            action: ConfigAction::Check { .. },
        }) => config::check(global),
        Some(Command::Rules) => config::rules(global),
        Some(Command::Config {
            action: ConfigAction::Init(args),
        }) => init::init(&args, global.model.as_deref(), global.json),
        Some(Command::Replay {
            file,
            session,
            agent,
            ..
        }) => {
            let args = replay::ReplayArgs {
                file,
                session,
                agent,
            };
            replay::replay(global, args).await
        }
        Some(Command::Sessions { action }) => {
            let config = match &action {
                SessionsAction::Resume { .. } => config::load(global)?,
                _ => config::load_for_store_or_defaults(global)?,
            };
            let factory = config::factory(global, config);
            let store = sessions::open(global, &factory).await?;
            let code = match action {
                SessionsAction::List => sessions::list(global, &store).await,
                SessionsAction::Show { id } => sessions::show(global, &store, &id).await,
                SessionsAction::Export { id, output } => {
                    sessions::export(global, &store, &id, output).await
                }
                SessionsAction::Delete { id } => sessions::delete(global, &store, &id).await,
                SessionsAction::Resume {
                    id,
                    prompt,
                    interactive,
                    ..
                } => {
                    store.close().await;
                    let job = Job {
                        resume: Some(id),
                        ..job(Target::Agent(AgentKind::Manus), prompt, interactive)
                    };
                    return run::run(job, &factory).await;
                }
            };
            store.close().await;
            code.with_context(|| format!("in the session store {}", sessions::store_name(&factory)))
        }
        Some(Command::Mcp {
            connection,
            server_url,
            command,
            args,
            prompt,
            interactive,
        }) => {
            let server = mcp::server_config(connection, server_url, command, args)?;
            let factory = config::factory(global, config::load(global)?).with_mcp_server(server);
            run::run(
                job(Target::Agent(AgentKind::Mcp), prompt, interactive),
                &factory,
            )
            .await
        }
        // Served above, before Ctrl-C is given its meaning for runs.
        Some(
            Command::Acp { .. }
            | Command::Serve { .. }
            | Command::Worker { .. }
            | Command::Submit { .. }
            | Command::Doctor { .. },
        ) => Ok(EXIT_FAILED),
        Some(Command::McpServer {
            transport,
            host,
            port,
        }) => {
            mcp::refuse_ignored_flags(global, transport, host.is_some() || port.is_some())?;
            let host = host.as_deref().unwrap_or("127.0.0.1");
            mcp::serve(transport, host, port.unwrap_or(8000), global.sandbox).await
        }
        None => {
            let kind = cli.agent;
            let config = config::load(global)?;
            if kind == AgentKind::Sandbox && config.daytona.is_some() {
                note(
                    "warning: [daytona] is ignored: SandboxManus runs in the sandbox configured \
                     by [sandbox]",
                );
            }
            let mut factory = config::factory(global, config);
            if kind == AgentKind::Mcp {
                factory = factory.with_mcp_server(mcp::server_config(
                    McpConnection::Stdio,
                    None,
                    None,
                    Vec::new(),
                )?);
            }
            let job = Job {
                resume: cli.resume,
                images: cli.image,
                ..job(Target::Agent(kind), cli.prompt, cli.interactive)
            };
            run::run(job, &factory).await
        }
    }
}

/// `openmanus demo`: Manus against the scripted local model.
async fn demo(global: &GlobalArgs, interrupts: &Interrupts) -> Result<u8> {
    let workspace = config::demo_workspace(global.workspace.as_deref())?;
    std::fs::create_dir_all(&workspace)
        .with_context(|| format!("cannot create the workspace {}", workspace.display()))?;
    let server = demo::start(&workspace)
        .await
        .context("cannot start the local demo model")?;
    if !global.json {
        note(&format!(
            "demo: the model's replies are scripted and served by a local mock at {}; the agent, \
             its tools and the files it writes in {} are real.\n",
            server.base_url(),
            workspace.display()
        ));
    }
    let mut llm = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("demo-key");
    llm.max_attempts = 1;
    server.require_api_key("demo-key");
    let factory = AgentFactory::new(Config::new(llm)).with_workspace(&workspace);
    let job = Job {
        global,
        interrupts,
        target: Target::Agent(AgentKind::Manus),
        prompt: Some(demo::DEMO_TASK.to_owned()),
        interactive: false,
        resume: None,
        images: Vec::new(),
    };
    let code = run::run(job, &factory).await?;
    if let Err(violations) = server.verify() {
        anyhow::bail!("the demo's requests broke the OpenAI rules: {violations}");
    }
    Ok(code)
}
