//! The command line's arguments.

use std::path::PathBuf;

use agent_config::ConfigOverride;
use agents::AgentKind;
use clap::{Parser, Subcommand, ValueEnum};

use crate::color::ColorChoice;
use crate::init::InitArgs;

#[derive(Debug, Parser)]
#[command(
    name = "openmanus",
    version,
    about = "Run OpenManus agents: a model that thinks, then acts with tools, step by step.",
    long_about = "Run OpenManus agents from the terminal.\n\n\
        Without a subcommand, runs an agent (Manus by default) on --prompt, or asks for a task.\n\
        Configuration comes from --config, $OPENMANUS_CONFIG, ./config/config.toml, the\n\
        per-user ~/.config/openmanus/config.toml ($XDG_CONFIG_HOME), or\n\
        ./config/config.example.toml; `openmanus config init` writes the per-user one.\n\
        -c KEY=VALUE and --model override any key for one run.\n\
        Try `openmanus demo` first: it needs no API key.",
    after_help = "Examples:\n  openmanus demo\n  openmanus --prompt \"Summarise the files in the workspace\"\n  \
        openmanus --agent swe -i\n  openmanus -i --resume\n  openmanus sessions list\n  \
        openmanus config init --provider anthropic\n  \
        openmanus --model gpt-4o-mini -c llm.temperature=0.2 -p \"...\"\n  \
        git diff | openmanus -p \"Review this diff:\"\n  openmanus config check\n  \
        openmanus doctor\n\n\
        Exit codes of a run: 0 finished; 1 failed, declined by the model, or could not start;\n\
        3 out of steps; 4 a budget of [agent] reached; 130 cancelled."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The task (`-` reads it from standard input). Without it (and without -i), the task is
    /// asked for on a terminal, and is all of standard input when that is a pipe or a file.
    #[arg(short, long)]
    pub prompt: Option<String>,
    /// Keep going: ask for another task after each run, keeping the conversation.
    #[arg(short, long)]
    pub interactive: bool,
    /// Attach an image (PNG, JPEG, GIF, WebP) to the first task, for vision models; repeat for
    /// several.
    #[arg(long, value_name = "PATH")]
    pub image: Vec<PathBuf>,
    #[command(flatten)]
    pub overrides: ShortOverrides,
    /// Continue a recorded session instead of starting one: the one given (an id, or its first
    /// characters), or without ID the most recent one. Its agent, workspace and conversation
    /// come back; --agent is ignored.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// The agent to run.
    #[arg(long, value_parser = agent_kinds(), default_value = "manus")]
    pub agent: AgentKind,
    #[command(flatten)]
    pub global: GlobalArgs,
}

#[derive(Debug, Clone, clap::Args)]
pub struct GlobalArgs {
    /// The configuration file (default: $OPENMANUS_CONFIG, ./config/config.toml, the per-user
    /// ~/.config/openmanus/config.toml, then ./config/config.example.toml).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The model, for this run: replaces `model` in `[llm]` and in every `[llm.NAME]` section
    /// that names one, except `[llm.vision]`.
    #[arg(short, long, global = true, value_name = "NAME")]
    pub model: Option<String>,
    /// Replace one configuration key for this run: `-c llm.temperature=0.2`,
    /// `-c agent.max_steps=40`. VALUE is TOML (else a string); unknown keys are errors.
    /// (`-c` is the short form, except after `mcp`, where -c is --connection.)
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    pub set: Vec<ConfigOverride>,
    /// The `-c` overrides of the command line (collected from wherever `-c` was accepted).
    #[arg(skip)]
    pub short_set: Vec<ConfigOverride>,
    /// The workspace directory (default: from the config, else ./workspace).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// What bash, python_execute and the DataAnalysis Python may do (`[permissions] sandbox`):
    /// read-only; workspace-write (the default: write only in the workspace and a private /tmp,
    /// secrets such as ~/.ssh hidden, no network); full-access (unconfined, the user's full
    /// authority).
    #[arg(long, global = true, value_name = "MODE")]
    pub sandbox: Option<agent_config::SandboxMode>,
    /// When a call that needs more than the sandbox allows is asked about (`[permissions]
    /// approval`): untrusted (ask before code not known to be harmless), on-request (the
    /// default: ask when the sandbox refused a call), never. With nobody at a terminal
    /// (`--json` without one, `-p` with standard input not a terminal), it is never.
    #[arg(long = "ask-for-approval", global = true, value_name = "POLICY")]
    pub approval: Option<agent_config::ApprovalPolicy>,
    /// JSON only on standard output, one object a line: a run's events instead of the live
    /// view, then its `result`; the other commands' answers as objects. (`completions` and
    /// `mcp-server` refuse it.)
    #[arg(long, global = true)]
    pub json: bool,
    /// More logging (-v: info, -vv: debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Colour on the terminal: auto (unless NO_COLOR is set or TERM=dumb), always, never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Print only the final answer.
    #[arg(short, long, global = true, conflicts_with = "json")]
    pub quiet: bool,
    /// Also write the final answer of the (last) run to FILE, replaced at each run.
    #[arg(long, global = true, value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,
    /// Do not record this run in the session store (default: recorded in
    /// WORKSPACE/.openmanus/sessions.db, or where `[store] path` says; `[store] enabled =
    /// false` turns recording off for good).
    #[arg(long, global = true)]
    pub no_store: bool,
}

impl Cli {
    /// Moves the `-c` overrides, wherever given, into [`GlobalArgs::short_set`].
    pub fn gather_overrides(&mut self) {
        let mut short = std::mem::take(&mut self.overrides.set);
        if let Some(
            Command::Flow { overrides, .. }
            | Command::Serve { overrides, .. }
            | Command::Replay { overrides, .. }
            | Command::Doctor { overrides, .. }
            | Command::Config {
                action: ConfigAction::Check { overrides },
            }
            | Command::Sessions {
                action: SessionsAction::Resume { overrides, .. },
            },
        ) = &mut self.command
        {
            short.append(&mut overrides.set);
        }
        self.global.short_set = short;
    }
}

impl GlobalArgs {
    /// Every override of the command line, in order: `-c`, then `--set`, then `--model`, then
    /// `--sandbox`, then `--ask-for-approval`.
    pub fn overrides(&self) -> Vec<ConfigOverride> {
        let mut all = self.short_set.clone();
        all.extend(self.set.iter().cloned());
        all.extend(self.model.as_deref().map(ConfigOverride::model));
        all.extend(self.sandbox.map(ConfigOverride::sandbox));
        all.extend(self.approval.map(ConfigOverride::approval));
        all
    }
}

/// How long each check of `openmanus doctor` may take unless `--timeout` says otherwise, in
/// seconds.
pub const DOCTOR_TIMEOUT_SECS: u64 = 15;

/// `-c KEY=VALUE`, accepted by the commands that load a configuration (not by `mcp`, whose
/// `-c` is `--connection` as in OpenManus's run_mcp.py; `--set` works everywhere).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ShortOverrides {
    /// Replace one configuration key for this run (as --set): `-c llm.temperature=0.2`.
    #[arg(id = "short_set", short = 'c', value_name = "KEY=VALUE")]
    pub set: Vec<ConfigOverride>,
}

/// An agent kind as the command line spells it (`data-analysis` for `data_analysis`).
fn spelled(kind: AgentKind) -> &'static str {
    match kind {
        AgentKind::DataAnalysis => "data-analysis",
        other => other.as_str(),
    }
}

/// `--agent`'s values: every [`AgentKind`], spelled as on the command line (`data-analysis`),
/// each with its description in `--help`.
fn agent_kinds() -> impl clap::builder::TypedValueParser<Value = AgentKind> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        AgentKind::ALL.map(|kind| PossibleValue::new(spelled(kind)).help(kind.description())),
    )
    .try_map(|name| name.parse::<AgentKind>())
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run Manus against a scripted local model: real tools, real files, no API key needed.
    Demo,
    /// Run the planning flow: a plan of steps, each done by an agent (OpenManus's run_flow.py).
    Flow {
        /// The task. Without it you are asked for one.
        #[arg(short, long)]
        prompt: Option<String>,
        #[command(flatten)]
        overrides: ShortOverrides,
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
    /// Be the agent of an editor (Zed, JetBrains, Neovim): the Agent Client Protocol over
    /// standard input and output. Each editor session works in the editor's directory; --agent
    /// picks the agent kind, --flow the planning flow.
    #[command(
        after_help = "Zed (settings.json):\n  \"agent_servers\": {\"OpenManus\": {\"type\": \
        \"custom\", \"command\": \"openmanus\", \"args\": [\"acp\"]}}\n\n\
        Standard output carries the protocol only; logs go to standard error. More set-ups \
        (JetBrains, Neovim) in docs/editors.md."
    )]
    Acp {
        /// Run the planning flow in each session instead of an agent: its plan shows in the
        /// editor's plan view.
        #[arg(long)]
        flow: bool,
    },
    /// Serve our tools (bash, str_replace_editor, terminate) as the MCP server `openmanus`.
    McpServer {
        /// The transport.
        #[arg(long, value_enum, default_value_t = McpServe::Stdio)]
        transport: McpServe,
        /// The address to listen on (http and sse; default 127.0.0.1).
        #[arg(long)]
        host: Option<String>,
        /// The port to listen on (http and sse; 0 picks a free one; default 8000).
        #[arg(long)]
        port: Option<u16>,
    },
    /// Serve agents over HTTP: the web page, the API (sessions, tasks, live events) and the
    /// same sessions as an A2A agent (`openmanus a2a` is another name for it). Binds 127.0.0.1
    /// unless told otherwise; any other address needs a token.
    #[command(
        visible_alias = "a2a",
        after_help = "Examples:\n  openmanus serve\n  openmanus serve --bind 127.0.0.1:9000\n  \
        OPENMANUS_SERVER_TOKEN=$(openssl rand -hex 24) openmanus serve --bind 0.0.0.0:8765\n\n\
        The page is at http://<address>/; the API is described in docs/server.md. A2A clients \
        find the Agent Card at http://<address>/.well-known/agent-card.json (docs/a2a.md)."
    )]
    Serve {
        /// The address to listen on (default: `bind` of `[server]`, 127.0.0.1:8765).
        #[arg(long, value_name = "ADDR")]
        bind: Option<std::net::SocketAddr>,
        /// Runs going at once; the rest wait in line (default: `max_concurrent_runs` of `[server]`).
        #[arg(long, value_name = "N")]
        max_concurrent_runs: Option<usize>,
        #[command(flatten)]
        overrides: ShortOverrides,
    },
    /// Run tasks for others: take them from NATS JetStream (`[nats]`), each in its own session
    /// and workspace, publish their events and store their results. SIGTERM or Ctrl-C stops
    /// taking tasks, hands back the ones held and exits.
    #[command(
        after_help = "Examples:\n  nats-server -js &\n  openmanus worker --concurrency 4\n  \
        openmanus worker --nats-url nats://queue.internal:4222 --creds worker.creds\n\n\
        How to run a NATS server, workers and a server: docs/scale-out.md."
    )]
    Worker {
        #[command(flatten)]
        nats: NatsArgs,
        /// Tasks run at once (default: `concurrency` of `[nats]`, 2).
        #[arg(long, value_name = "N")]
        concurrency: Option<usize>,
        /// The worker's name in events and results (default: host name and process id).
        #[arg(long)]
        name: Option<String>,
    },
    /// Give a task to the workers through NATS JetStream; prints its id, and with --follow its
    /// events, with --wait (or --follow) its result.
    Submit {
        #[command(flatten)]
        nats: NatsArgs,
        /// The agent (`manus`, `swe`, `browser`, `sandbox`, `mcp`, `data_analysis`) or `flow`.
        #[arg(long, default_value = "manus")]
        agent: String,
        /// The task's id (letters, digits, `-`, `_`; default: a new one). Submitting the same
        /// id again within two minutes is dropped as a duplicate.
        #[arg(long)]
        id: Option<String>,
        /// Continue this session's conversation (kept in NATS between its tasks).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Print the task's events as they come, then its result.
        #[arg(long)]
        follow: bool,
        /// Wait for the result and print it; the exit code is the run's.
        #[arg(long)]
        wait: bool,
        /// The task.
        task: String,
    },
    /// What this machine can run: for the model, Chromium, the sandbox (bubblewrap), Xvfb,
    /// Docker, python3 and pandas, and nats-server, whether it is here, and the command that
    /// adds what is missing. Exit code 0 when the configured model is usable, 1 when not.
    #[command(
        long_about = "What this machine can run.\n\n\
            Checks, at once and each within --timeout: the configured model (the [llm] settings \
            loaded as the run commands load them: its endpoint answers, the variable holding its \
            key is set), Chromium (the browser agent), bubblewrap and its namespaces (the \
            sandbox), Xvfb (computer_use), the Docker engine ([sandbox] backend = \"docker\"), \
            python3 and pandas (python_execute, DataAnalysis) and nats-server (workers). Each \
            line says what it serves, what was found and, for what is missing, the command that \
            installs it (apt-get on Debian and Ubuntu, dnf on Fedora).\n\n\
            Exit codes: 0 the model is usable (its key set, its endpoint answering); 1 it is not. \
            Optional capabilities that are missing do not change the exit code.",
        after_help = "Examples:\n  openmanus doctor\n  openmanus doctor --json\n  \
            openmanus doctor --config config/other.toml -c llm.model=gpt-4o-mini\n  \
            openmanus doctor --timeout 60"
    )]
    Doctor {
        /// How long each check may take, in seconds: a program or an endpoint that does not
        /// answer in time is reported as a problem.
        #[arg(long, value_name = "SECS", default_value_t = DOCTOR_TIMEOUT_SECS,
              value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
        #[command(flatten)]
        overrides: ShortOverrides,
    },
    /// List the permission rules: the configuration's `[[permissions.rules]]`, then the rules
    /// file's (where an "always" answer writes), first match wins.
    Rules,
    /// Inspect the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Print the completion script for a shell: `openmanus completions bash >
    /// ~/.local/share/bash-completion/completions/openmanus`, `openmanus completions zsh >
    /// ~/.zfunc/_openmanus`, `openmanus completions fish >
    /// ~/.config/fish/completions/openmanus.fish`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Run a recorded run again: every model request is answered from the recording, the
    /// tools are real; prints `replay matched N steps` or the first step where a tool call or
    /// an observation differs. Exit code 0 when it matched, 5 when it diverged, 1 when it
    /// could not replay.
    #[command(
        long_about = "Run a recorded run again as a deterministic one.\n\n\
            Every model request is answered with the recording's next reply; the tools are the \
            real ones, working in a fresh temporary workspace (or --workspace DIR, which should \
            hold the files the recorded run read). Each step's tool calls and observations are \
            compared with the recording's, after the workspace paths are replaced by \
            $WORKSPACE on both sides; times, token usage and call ids are not compared. The \
            first difference is printed with the step, the call, and a short diff.\n\n\
            The agent is built from the configuration as usual (no request is sent, so no key \
            is needed): use the settings of the recording, or the replay differs where they \
            show (max_observe, max_steps, policies).\n\n\
            Exit codes: 0 matched, 5 diverged, 1 the recording or the agent cannot be used.",
        after_help = "Examples:\n  openmanus replay workspace/.openmanus/runs/1733100000000-4242-manus.jsonl\n  \
            openmanus replay run.jsonl --workspace /tmp/inputs-copy --json\n  \
            openmanus sessions export 3f2a -o run.jsonl && openmanus replay run.jsonl\n  \
            openmanus replay --session 3f2a"
    )]
    Replay {
        /// The recording: a run journal (WORKSPACE/.openmanus/runs/*.jsonl) or a session
        /// written by `openmanus sessions export`.
        #[arg(value_name = "FILE", required_unless_present = "session")]
        file: Option<PathBuf>,
        /// Replay a session of the store instead (its id, or its first characters); the store
        /// keeps no model requests, so the replies are rebuilt from its thoughts.
        #[arg(long, value_name = "ID", conflicts_with = "file")]
        session: Option<String>,
        /// The agent (`manus`, `swe`, `data_analysis`, ...) or `flow`, when the recording does
        /// not say which ran.
        #[arg(long, value_name = "KIND")]
        agent: Option<String>,
        #[command(flatten)]
        overrides: ShortOverrides,
    },
    /// The recorded sessions: list them, show one, resume one with a new task, export one as a
    /// journal. Every run is recorded in the session store (see --no-store).
    Sessions {
        #[command(subcommand)]
        action: SessionsAction,
    },
}

/// Where the NATS server is (over `[nats]`).
#[derive(Debug, Clone, clap::Args)]
pub struct NatsArgs {
    /// The NATS server URL (default: `url` of `[nats]`, nats://127.0.0.1:4222).
    #[arg(long, value_name = "URL")]
    pub nats_url: Option<String>,
    /// A NATS credentials file (default: `creds_file` of `[nats]`).
    #[arg(long, value_name = "FILE")]
    pub creds: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// List the sessions, the most recent first.
    List,
    /// Show a session: its agent, workspace, state and every run with its outcome and answer.
    Show {
        /// The session's id, or its first characters.
        id: String,
    },
    /// Continue a session: the same agent and workspace, its conversation restored; PROMPT is
    /// the next task (asked for when missing).
    Resume {
        /// The session's id, or its first characters.
        id: String,
        /// The next task.
        prompt: Option<String>,
        /// Keep going: ask for another task after each run.
        #[arg(short, long)]
        interactive: bool,
        #[command(flatten)]
        overrides: ShortOverrides,
    },
    /// Write a session as a JSONL journal (the format of .openmanus/runs/): its tasks, every
    /// event, each run's result and the stored memory.
    Export {
        /// The session's id, or its first characters.
        id: String,
        /// The file to write (default: standard output).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Delete a session with its runs, events and messages (its workspace files stay).
    Delete {
        /// The session's id, or its first characters.
        id: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum McpConnection {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio,
    /// The legacy HTTP+SSE transport.
    Sse,
    /// Streamable HTTP.
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum McpServe {
    /// Standard input and output.
    Stdio,
    /// Streamable HTTP at /mcp.
    Http,
    /// The legacy HTTP+SSE transport: the stream at /sse, messages POSTed to /messages.
    Sse,
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Load and validate the configuration, and show the effective model settings (the API key
    /// is redacted).
    Check {
        #[command(flatten)]
        overrides: ShortOverrides,
    },
    /// Write a commented starting configuration, by default the per-user one
    /// (~/.config/openmanus/config.toml). Asks the provider, model and key variable when
    /// standard input is a terminal; otherwise (or with --yes) takes the flags and defaults.
    #[command(after_help = "Examples:\n  openmanus config init\n  \
        openmanus config init --provider anthropic --model claude-sonnet-4-5-20250929\n  \
        openmanus config init --provider ollama --model qwen2.5 --path config/config.toml")]
    Init(InitArgs),
}
