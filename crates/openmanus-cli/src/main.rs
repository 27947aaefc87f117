//! `openmanus`: run the OpenManus agents from the terminal.
//!
//! `openmanus --prompt "..."` runs Manus (OpenManus's `python main.py --prompt`), `openmanus
//! demo` runs it against a scripted local model with no API key, `openmanus flow` runs the
//! planning flow, and `openmanus config check` shows the effective settings. Every run renders
//! its steps live, prints the final answer and the files it changed, and writes a journal.

mod demo;

mod render;
mod settings;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agent_core::{Agent, CancellationToken, Role, RunOutcome, RunStatus};
use agent_llm::LlmSettings;
use agent_toolcall::{ToolCallAgent, ToolCallHooks};
use agents::{AgentOptions, Snapshot, WorkspaceChanges};
use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;

use agent_session::Journal;
use crate::render::Mode;

/// Exit code of a run that finished.
const EXIT_OK: u8 = 0;
/// Exit code of a run that failed (or could not start).
const EXIT_FAILED: u8 = 1;
/// Exit code of a run that used up its steps without finishing.
const EXIT_MAX_STEPS: u8 = 3;
/// Exit code of a cancelled run (as a shell reports SIGINT).
const EXIT_CANCELLED: u8 = 130;

#[derive(Debug, Parser)]
#[command(
    name = "openmanus",
    version,
    about = "Run OpenManus agents: a model that thinks, then acts with tools, step by step.",
    long_about = "Run OpenManus agents from the terminal.\n\n\
        Without a subcommand, runs an agent (Manus by default) on --prompt, or asks for a task.\n\
        Configuration comes from --config, $OPENMANUS_CONFIG, ./config/config.toml or\n\
        ./config/config.example.toml. Try `openmanus demo` first: it needs no API key.",
    after_help = "Examples:\n  openmanus demo\n  openmanus --prompt \"Summarise the files in the workspace\"\n  \
        openmanus --agent swe -i\n  openmanus config check"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// The task. Without it (and without -i) you are asked for one.
    #[arg(short, long)]
    prompt: Option<String>,
    /// Keep going: ask for another task after each run, keeping the conversation.
    #[arg(short, long)]
    interactive: bool,
    /// The agent to run.
    #[arg(long, value_enum, default_value_t = AgentKind::Manus)]
    agent: AgentKind,
    #[command(flatten)]
    global: GlobalArgs,
}

#[derive(Debug, Clone, clap::Args)]
struct GlobalArgs {
    /// The configuration file (default: $OPENMANUS_CONFIG, ./config/config.toml, then
    /// ./config/config.example.toml).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The workspace directory (default: from the config, else ./workspace).
    #[arg(long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Print every event as a JSON line on standard output instead of the live view.
    #[arg(long, global = true)]
    json: bool,
    /// More logging (-v: info, -vv: debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Print only the final answer.
    #[arg(short, long, global = true, conflicts_with = "json")]
    quiet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AgentKind {
    /// The general-purpose agent (python, file editor, ask the user).
    Manus,
    /// The programmer (bash and the file editor).
    Swe,
    /// The browser agent (a headless Chromium driven by `browser_use`).
    Browser,
    /// SandboxManus: shell, files, browser and image viewer inside a bubblewrap sandbox.
    Sandbox,
    /// The MCP agent on this program's own MCP server over stdio (`openmanus mcp` connects to
    /// other servers).
    Mcp,
}

impl AgentKind {
    /// The agent's name (also its `[llm.<name>]` section).
    fn name(self) -> &'static str {
        match self {
            Self::Manus => agents::MANUS,
            Self::Swe => agents::SWE,
            Self::Browser => agent_browser::BROWSER_AGENT,
            Self::Sandbox => agents::SANDBOX_MANUS,
            Self::Mcp => agent_mcp::MCP_AGENT_NAME,
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run Manus against a scripted local model: real tools, real files, no API key needed.
    Demo,
    /// Run the planning flow: a plan of steps, each done by an agent (OpenManus's run_flow.py).
    Flow {
        /// The task. Without it you are asked for one.
        #[arg(short, long)]
        prompt: Option<String>,
    },
    /// Run the MCP agent on the tools of one MCP server (OpenManus's run_mcp.py).
    Mcp {
        /// How to reach the server.
        #[arg(short = 'c', long = "connection", value_enum, default_value_t = McpConnection::Stdio)]
        connection: McpConnection,
        /// The server's URL (sse, http).
        #[arg(long)]
        server_url: Option<String>,
        /// The command that starts the server (stdio; default: this program's `mcp-server`).
        #[arg(long)]
        command: Option<String>,
        /// Arguments of the command (repeat for several).
        #[arg(long = "arg", allow_hyphen_values = true)]
        args: Vec<String>,
        /// The task. Without it (and without -i) you are asked for one.
        #[arg(short, long)]
        prompt: Option<String>,
        /// Keep going: ask for another task after each run.
        #[arg(short, long)]
        interactive: bool,
    },
    /// Serve our tools (bash, str_replace_editor, terminate) as the MCP server `openmanus`.
    McpServer {
        /// The transport.
        #[arg(long, value_enum, default_value_t = McpServe::Stdio)]
        transport: McpServe,
        /// The address to listen on (http).
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// The port to listen on (http; 0 picks a free one).
        #[arg(long, default_value_t = 8000)]
        port: u16,
    },
    /// Inspect the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum McpConnection {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio,
    /// The legacy HTTP+SSE transport.
    Sse,
    /// Streamable HTTP.
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum McpServe {
    /// Standard input and output.
    Stdio,
    /// Streamable HTTP at /mcp.
    Http,
    /// The legacy HTTP+SSE transport: the stream at /sse, messages POSTed to /messages.
    Sse,
}

#[derive(Debug, Subcommand)]
enum ConfigAction {
    /// Load and validate the configuration, and show the effective model settings (the API key
    /// is redacted).
    Check,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.global);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
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
    ExitCode::from(code)
}

#[allow(clippy::print_stderr)]
fn report_error(error: &anyhow::Error) {
    eprintln!("error: {error:#}");
}

/// A line on standard error; a closed pipe is ignored.
fn note(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A line on standard output; a closed pipe (`openmanus ... | head`) is ignored, not a panic.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// Ctrl-C for the whole session: while a run is in progress the first press cancels it (tools
/// stop, the journal is closed); at a prompt, or on a second press, the process group of every
/// tool is killed and the program exits at once with 130.
#[derive(Clone, Default)]
struct Interrupts {
    current: Arc<std::sync::Mutex<Option<CancellationToken>>>,
}

impl Interrupts {
    fn install() -> Self {
        let interrupts = Self::default();
        let current = interrupts.current.clone();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                let token = current
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone();
                match token {
                    Some(token) if !token.is_cancelled() => {
                        note(
                            "\ninterrupted: stopping the run (press Ctrl-C again to exit at once)",
                        );
                        token.cancel();
                    }
                    _ => {
                        agent_process::emergency_shutdown();
                        note("\ninterrupted");
                        std::process::exit(i32::from(EXIT_CANCELLED));
                    }
                }
            }
        });
        interrupts
    }

    /// The token Ctrl-C cancels (`None`: at a prompt, Ctrl-C exits).
    fn set(&self, token: Option<CancellationToken>) {
        *self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = token;
    }
}

fn init_logging(global: &GlobalArgs) {
    let level = match (global.quiet, global.verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("OPENMANUS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

async fn dispatch(cli: Cli) -> Result<u8> {
    let interrupts = Interrupts::install();
    match cli.command {
        Some(Command::Demo) => demo(&cli.global, &interrupts).await,
        Some(Command::Flow { prompt }) => {
            settings::run_flow(&cli.global, prompt, &interrupts).await
        }
        Some(Command::Config {
            action: ConfigAction::Check,
        }) => settings::check(&cli.global),
        Some(Command::Mcp {
            connection,
            server_url,
            command,
            args,
            prompt,
            interactive,
        }) => {
            let server = mcp_server_config(connection, server_url, command, args)?;
            run_mcp(&cli.global, &interrupts, &server, prompt, interactive).await
        }
        Some(Command::McpServer {
            transport,
            host,
            port,
        }) => serve_mcp(transport, &host, port).await,
        None if cli.agent == AgentKind::Mcp => {
            let server = mcp_server_config(McpConnection::Stdio, None, None, Vec::new())?;
            run_mcp(
                &cli.global,
                &interrupts,
                &server,
                cli.prompt,
                cli.interactive,
            )
            .await
        }
        None => {
            let resolved = settings::resolve(&cli.global, cli.agent).await?;
            run_agent(
                &cli.global,
                &interrupts,
                cli.agent,
                resolved,
                cli.prompt,
                cli.interactive,
            )
            .await
        }
    }
}

/// Reads one task from standard input (the terminal, or a pipe).
async fn read_task(question: &str) -> Result<Option<String>> {
    let question = question.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::{BufRead, Write};
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "{question}");
        let _ = stderr.flush();
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line)?;
        Ok::<_, std::io::Error>((read > 0).then(|| line.trim().to_owned()))
    })
    .await
    .context("reading the task")?
    .context("reading the task")
}

fn mode(global: &GlobalArgs) -> Mode {
    if global.json {
        Mode::Json
    } else if global.quiet {
        Mode::Quiet
    } else {
        Mode::Text
    }
}

/// Builds the agent and runs one task or, with `interactive`, one task after another (keeping
/// the conversation and the tools' state, such as the shell's directory, between tasks).
async fn run_agent(
    global: &GlobalArgs,
    interrupts: &Interrupts,
    kind: AgentKind,
    resolved: settings::Resolved,
    prompt: Option<String>,
    interactive: bool,
) -> Result<u8> {
    // The sandbox of `use_sandbox` goes with the session, whichever way it ends (a Docker
    // container is removed).
    let sandbox = resolved.options.sandbox.clone();
    let result = run_agent_session(global, interrupts, kind, resolved, prompt, interactive).await;
    if let Some(sandbox) = sandbox
        && let Err(e) = sandbox.cleanup().await
    {
        note(&format!("warning: cleaning up the sandbox: {e}"));
    }
    result
}

async fn run_agent_session(
    global: &GlobalArgs,
    interrupts: &Interrupts,
    kind: AgentKind,
    resolved: settings::Resolved,
    prompt: Option<String>,
    interactive: bool,
) -> Result<u8> {
    let settings::Resolved {
        llm,
        options,
        mcp_servers,
    } = resolved;
    let mcp_servers = mcp_servers.as_slice();
    // A single run asks for its task before anything is created, so an empty prompt leaves no
    // journal behind (main.py: a warning, and nothing runs).
    let prompt = if interactive {
        prompt
    } else {
        let task = match prompt {
            Some(task) => Some(task),
            None => read_task("Enter your prompt: ").await?,
        };
        match task.filter(|t| !t.trim().is_empty()) {
            Some(task) => Some(task),
            None => {
                note("warning: Empty prompt provided.");
                return Ok(EXIT_OK);
            }
        }
    };
    std::fs::create_dir_all(&options.workspace).with_context(|| {
        format!(
            "cannot create the workspace {}",
            options.workspace.display()
        )
    })?;
    let name = kind.name();
    let journal =
        Journal::create(&options.workspace, name).context("cannot create the run journal")?;
    let bus = agent_core::EventBus::new();
    let model = journal
        .model(llm, Some(&bus))
        .context("invalid model settings")?;
    let run = Run {
        global,
        interrupts,
        workspace: &options.workspace,
        journal: &journal,
        interactive,
        bus,
        prompt,
    };
    let code = match kind {
        AgentKind::Manus => {
            // Manus connects the MCP servers of mcp.json at once (OpenManus's Manus.create); a
            // server that fails is a warning and the others still work.
            let (agent, warnings) = agents::manus_with_mcp(model, &options, mcp_servers).await;
            for warning in &warnings {
                note(&format!(
                    "warning: MCP server `{}`: {warning}",
                    warning.server
                ));
            }
            let (mut agent, code) = run.drive(agent).await;
            // The end of the session (not of each run): the servers are disconnected here.
            agents::disconnect_mcp(&mut agent).await;
            agent.cleanup_tools().await;
            code
        }
        AgentKind::Browser => {
            let mut tool = agent_browser::BrowserUseTool::with_config(options.browser.clone());
            if let Some(search) = &options.web_search {
                tool = tool.with_web_search(Arc::clone(search));
            }
            let agent = options.apply(agent_browser::browser_agent(model, tool));
            let (mut agent, code) = run.drive(agent).await;
            agent.cleanup_tools().await;
            code
        }
        AgentKind::Sandbox => {
            // `resolve` built no `use_sandbox` sandbox for SandboxManus: this is its only one.
            let sandbox = settings::sandbox_for_manus(global, &options.workspace).await?;
            let agent = agents::sandbox_manus(model, &options, Arc::clone(&sandbox));
            let (mut agent, code) = run.drive(agent).await;
            agent.cleanup_tools().await;
            if let Err(e) = agent_sandbox::Sandbox::cleanup(sandbox.as_ref()).await {
                note(&format!("warning: cleaning up the sandbox: {e}"));
            }
            code
        }
        AgentKind::Mcp => {
            anyhow::bail!("the MCP agent runs through `openmanus mcp`");
        }
        AgentKind::Swe => {
            let (mut agent, code) = run.drive(agents::swe(model, &options)).await;
            agent.cleanup_tools().await;
            code
        }
    };
    let path = journal.path().to_path_buf();
    journal.close().await.context("writing the run journal")?;
    if !global.json {
        note(&format!("journal: {}", path.display()));
    }
    code
}

/// What a session of one agent needs besides the agent.
struct Run<'a> {
    global: &'a GlobalArgs,
    interrupts: &'a Interrupts,
    workspace: &'a Path,
    journal: &'a Journal,
    interactive: bool,
    bus: agent_core::EventBus,
    prompt: Option<String>,
}

impl Run<'_> {
    /// Puts `agent` on the bus and runs the session (one task, or several with `-i`); gives the
    /// agent back for its clean-up.
    async fn drive<H: ToolCallHooks>(
        self,
        agent: ToolCallAgent<H>,
    ) -> (ToolCallAgent<H>, Result<u8>) {
        let mut agent = prepare(agent, self.bus, self.interactive);
        let code = session(
            self.global,
            self.interrupts,
            &mut agent,
            self.workspace,
            self.journal,
            self.prompt,
            self.interactive,
        )
        .await;
        (agent, code)
    }
}

/// Puts the agent on `bus` and, for an interactive session, keeps its tools between runs.
fn prepare<H: ToolCallHooks>(
    mut agent: ToolCallAgent<H>,
    bus: agent_core::EventBus,
    interactive: bool,
) -> ToolCallAgent<H> {
    agent.base_mut().set_event_bus(bus);
    if interactive {
        agent = agent.with_tools_kept_between_runs();
    }
    agent
}

/// Runs one task, or with `interactive` one task after another, on `agent`.
async fn session<A: Agent + ?Sized>(
    global: &GlobalArgs,
    interrupts: &Interrupts,
    agent: &mut A,
    workspace: &Path,
    journal: &Journal,
    prompt: Option<String>,
    interactive: bool,
) -> Result<u8> {
    let mut code = EXIT_OK;
    let mut next = prompt;
    loop {
        let task = match next.take() {
            Some(task) => Some(task),
            None if interactive || code == EXIT_OK => {
                read_task(if interactive {
                    "\nTask (empty line to quit): "
                } else {
                    "Enter your prompt: "
                })
                .await?
            }
            None => None,
        };
        let Some(task) = task.filter(|t| !t.trim().is_empty()) else {
            if !interactive {
                note("warning: Empty prompt provided.");
            }
            break;
        };
        let result = run_once(global, interrupts, agent, workspace, journal, task).await;
        code = match result {
            Ok(code) => code,
            Err(error) => {
                report_error(&error);
                EXIT_FAILED
            }
        };
        if !interactive {
            break;
        }
        let _ = agent.base_mut().reset_state();
    }
    Ok(code)
}

/// Runs one task with live rendering, Ctrl-C handling, the final answer and the changed files.
async fn run_once<A: Agent + ?Sized>(
    global: &GlobalArgs,
    interrupts: &Interrupts,
    agent: &mut A,
    workspace: &Path,
    journal: &Journal,
    task: String,
) -> Result<u8> {
    let token = CancellationToken::new();
    agent.base_mut().set_cancellation_token(token.clone());
    let renderer = render::spawn(
        agent.base().events().subscribe(),
        mode(global),
        journal.handle(),
    );
    interrupts.set(Some(token));
    let before = snapshot(workspace).await;
    journal.handle().write("task", json!({ "task": task }));

    let outcome = agent.run(Some(task)).await;
    interrupts.set(None);
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            // The run never started, so no `Finished` event will end the renderer.
            renderer.abort();
            return Err(error.into());
        }
    };
    let totals = renderer.await.unwrap_or_default();
    let changes = before.changes(&snapshot(workspace).await);
    let answer = final_answer(agent.base().memory.messages());
    journal.handle().write(
        "result",
        json!({"status": outcome.status.to_string(), "answer": answer, "changes": changes, "text": outcome.text()}),
    );
    report(
        global,
        &outcome,
        answer.as_deref(),
        &changes,
        workspace,
        totals,
    );
    Ok(exit_code(&outcome))
}

/// Lists the workspace off the async workers (it walks the file tree).
async fn snapshot(workspace: &Path) -> Snapshot {
    let workspace = workspace.to_path_buf();
    tokio::task::spawn_blocking(move || Snapshot::take(&workspace))
        .await
        .unwrap_or_default()
}

/// The answer of the run: the text that came with the call to `terminate`, else the text of the
/// run's last assistant message that had any.
fn final_answer(messages: &[agent_core::Message]) -> Option<String> {
    let run: Vec<&agent_core::Message> = messages
        .iter()
        .rev()
        .take_while(|m| m.role != Role::User || m.text().starts_with("Image returned by"))
        .collect();
    let text = |m: &&agent_core::Message| {
        (m.role == Role::Assistant && !m.text().trim().is_empty())
            .then(|| m.text().trim().to_owned())
    };
    run.iter()
        .filter(|m| {
            m.calls()
                .iter()
                .any(|c| c.function.name == agent_tools::TERMINATE)
        })
        .find_map(text)
        .or_else(|| run.iter().find_map(text))
}

fn exit_code(outcome: &RunOutcome) -> u8 {
    match outcome.status {
        RunStatus::Finished(_) => EXIT_OK,
        RunStatus::MaxSteps(_) => EXIT_MAX_STEPS,
        RunStatus::Cancelled => EXIT_CANCELLED,
        _ => EXIT_FAILED,
    }
}

fn report(
    global: &GlobalArgs,
    outcome: &RunOutcome,
    answer: Option<&str>,
    changes: &WorkspaceChanges,
    workspace: &Path,
    totals: render::Totals,
) {
    if global.json {
        say(
            &json!({"type": "result", "status": outcome.status.to_string(), "answer": answer,
                    "changes": changes, "workspace": workspace})
            .to_string(),
        );
        return;
    }
    if let RunStatus::Failed(error) = &outcome.status {
        note(&format!("error: the run failed: {error}"));
    }
    if let RunStatus::MaxSteps(n) = outcome.status {
        note(&format!("Terminated: Reached max steps ({n})"));
    }
    if !global.quiet {
        note("");
        if !changes.is_empty() {
            note(&format!("files in {}:", workspace.display()));
            for (mark, paths) in [
                ("+", &changes.created),
                ("~", &changes.modified),
                ("-", &changes.deleted),
            ] {
                for path in paths {
                    note(&format!("  {mark} {}", path.display()));
                }
            }
        }
        if changes.partial {
            note(&format!(
                "(the workspace holds more than {} files: only part of it was compared, and deletions are not listed)",
                agents::SNAPSHOT_LIMIT
            ));
        }
        if totals.prompt_tokens + totals.completion_tokens > 0 {
            note(&format!(
                "tokens: {} in, {} out",
                totals.prompt_tokens, totals.completion_tokens
            ));
        }
    }
    match answer {
        Some(answer) => say(answer),
        None => say(&outcome.text()),
    }
}

/// The server `openmanus mcp` connects to.
fn mcp_server_config(
    connection: McpConnection,
    server_url: Option<String>,
    command: Option<String>,
    args: Vec<String>,
) -> Result<agent_config::McpServerConfig> {
    use agent_config::McpTransport;
    let transport = match connection {
        McpConnection::Stdio => match command {
            Some(command) => McpTransport::Stdio {
                command,
                args,
                env: Default::default(),
                cwd: None,
            },
            None => {
                let me = std::env::current_exe()
                    .context("cannot find this program to start its MCP server")?;
                McpTransport::Stdio {
                    command: me.display().to_string(),
                    args: vec!["mcp-server".to_owned()],
                    env: Default::default(),
                    cwd: None,
                }
            }
        },
        McpConnection::Sse | McpConnection::Http => {
            let url = server_url
                .context("Server URL is required for an sse or http connection (--server-url)")?;
            if connection == McpConnection::Sse {
                McpTransport::Sse {
                    url,
                    headers: Default::default(),
                }
            } else {
                McpTransport::StreamableHttp {
                    url,
                    headers: Default::default(),
                }
            }
        }
    };
    Ok(agent_config::McpServerConfig {
        id: "server".to_owned(),
        transport,
    })
}

/// `openmanus mcp`: the MCP agent on one server's tools.
async fn run_mcp(
    global: &GlobalArgs,
    interrupts: &Interrupts,
    server: &agent_config::McpServerConfig,
    prompt: Option<String>,
    interactive: bool,
) -> Result<u8> {
    let resolved = settings::resolve_named(global, agent_mcp::MCP_AGENT_NAME).await?;
    let workspace = resolved.options.workspace.clone();
    std::fs::create_dir_all(&workspace)
        .with_context(|| format!("cannot create the workspace {}", workspace.display()))?;
    let mut clients = agent_mcp::McpClients::new(agent_mcp::McpClientOptions::default());
    clients.connect(server).await.with_context(|| {
        format!(
            "cannot connect to the MCP server ({})",
            server.transport.kind()
        )
    })?;
    let journal = Journal::create(&workspace, agent_mcp::MCP_AGENT_NAME)
        .context("cannot create the run journal")?;
    let bus = agent_core::EventBus::new();
    let model = journal
        .model(resolved.llm, Some(&bus))
        .context("invalid model settings")?;
    let mut agent = agent_mcp::mcp_agent(model, clients);
    agent.base_mut().set_event_bus(bus);
    let code = session(
        global,
        interrupts,
        &mut agent,
        &workspace,
        &journal,
        prompt,
        interactive,
    )
    .await;
    agent.hooks_mut().disconnect().await;
    let path = journal.path().to_path_buf();
    journal.close().await.context("writing the run journal")?;
    if !global.json {
        note(&format!("journal: {}", path.display()));
    }
    code
}

/// `openmanus mcp-server`.
async fn serve_mcp(transport: McpServe, host: &str, port: u16) -> Result<u8> {
    let browser: Arc<dyn agent_tools::Tool> = Arc::new(agent_browser::BrowserUseTool::new());
    let server = agent_mcp::McpToolServer::openmanus_with(vec![browser]);
    match transport {
        McpServe::Stdio => server
            .serve_stdio()
            .await
            .context("the MCP server failed")?,
        McpServe::Http | McpServe::Sse => {
            let listener = tokio::net::TcpListener::bind((host, port))
                .await
                .with_context(|| format!("cannot listen on {host}:{port}"))?;
            let address = listener
                .local_addr()
                .context("cannot read the listening address")?;
            let path = if transport == McpServe::Sse {
                agent_mcp::SSE_PATH
            } else {
                agent_mcp::HTTP_PATH
            };
            note(&format!(
                "MCP server `openmanus` listening on http://{address}{path}"
            ));
            let shutdown = tokio_util::sync::CancellationToken::new();
            let stop = shutdown.clone();
            tokio::spawn(async move {
                let _ = tokio::signal::ctrl_c().await;
                stop.cancel();
            });
            let served = if transport == McpServe::Sse {
                server.serve_sse(listener, shutdown).await
            } else {
                server.serve_http(listener, shutdown).await
            };
            served.context("the MCP server failed")?;
        }
    }
    Ok(EXIT_OK)
}

/// `openmanus demo`.
async fn demo(global: &GlobalArgs, interrupts: &Interrupts) -> Result<u8> {
    let workspace = settings::workspace_dir(global.workspace.as_deref(), None)?;
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
    let options = AgentOptions::new(&workspace);
    let code = run_agent(
        global,
        interrupts,
        AgentKind::Manus,
        settings::Resolved {
            llm,
            options,
            mcp_servers: Vec::new(),
        },
        Some(demo::DEMO_TASK.to_owned()),
        false,
    )
    .await?;
    if let Err(violations) = server.verify() {
        anyhow::bail!("the demo's requests broke the OpenAI rules: {violations}");
    }
    Ok(code)
}
