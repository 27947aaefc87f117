//! `openmanus`: run the OpenManus agents from the terminal.
//!
//! `openmanus --prompt "..."` runs Manus (OpenManus's `python main.py --prompt`), `openmanus
//! demo` runs it against a scripted local model with no API key, `openmanus flow` runs the
//! planning flow, and `openmanus config check` shows the effective settings. Every run renders
//! its steps live, prints the final answer and the files it changed, and writes a journal.

mod demo;
mod journal;
mod render;
mod settings;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agent_core::{Agent, CancellationToken, Role, RunOutcome, RunStatus};
use agent_llm::{ChatModel, LlmClient, LlmSettings};
use agents::{AgentOptions, Snapshot, WorkspaceChanges};
use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;

use crate::journal::{Journal, JournaledModel};
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
    /// Inspect the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
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
                        agent_tools::process::kill_all_process_groups();
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
        None => {
            let resolved = settings::resolve(&cli.global, cli.agent)?;
            run_agent(
                &cli.global,
                &interrupts,
                cli.agent,
                resolved.llm,
                resolved.options,
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
    llm: LlmSettings,
    options: AgentOptions,
    prompt: Option<String>,
    interactive: bool,
) -> Result<u8> {
    std::fs::create_dir_all(&options.workspace).with_context(|| {
        format!(
            "cannot create the workspace {}",
            options.workspace.display()
        )
    })?;
    let name = match kind {
        AgentKind::Manus => agents::MANUS,
        AgentKind::Swe => agents::SWE,
    };
    let journal =
        Journal::create(&options.workspace, name).context("cannot create the run journal")?;
    let client = LlmClient::new(llm).context("invalid model settings")?;
    let bus = agent_core::EventBus::new();
    let model: Arc<dyn ChatModel> = Arc::new(JournaledModel::new(
        Arc::new(client.with_events(bus.clone())),
        journal.handle(),
    ));
    let mut agent = match kind {
        AgentKind::Manus => agents::manus(model, &options),
        AgentKind::Swe => agents::swe(model, &options),
    };
    agent.base_mut().set_event_bus(bus);
    if interactive {
        agent = agent.with_tools_kept_between_runs();
    }

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
        let result = run_once(
            global,
            interrupts,
            &mut agent,
            &options.workspace,
            &journal,
            task,
        )
        .await;
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
    agent.cleanup_tools().await;
    let path = journal.path().to_path_buf();
    journal.close().await.context("writing the run journal")?;
    if !global.json {
        note(&format!("journal: {}", path.display()));
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
        llm,
        options,
        Some(demo::DEMO_TASK.to_owned()),
        false,
    )
    .await?;
    if let Err(violations) = server.verify() {
        anyhow::bail!("the demo's requests broke the OpenAI rules: {violations}");
    }
    Ok(code)
}
