//! The command line's arguments.

use std::path::PathBuf;

use agents::AgentKind;
use clap::{Parser, Subcommand, ValueEnum};

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
        openmanus --agent swe -i\n  openmanus -i --resume\n  openmanus sessions list\n  \
        openmanus config check"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The task. Without it (and without -i) you are asked for one.
    #[arg(short, long)]
    pub prompt: Option<String>,
    /// Keep going: ask for another task after each run, keeping the conversation.
    #[arg(short, long)]
    pub interactive: bool,
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
    /// The configuration file (default: $OPENMANUS_CONFIG, ./config/config.toml, then
    /// ./config/config.example.toml).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The workspace directory (default: from the config, else ./workspace).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print every event as a JSON line on standard output instead of the live view.
    #[arg(long, global = true)]
    pub json: bool,
    /// More logging (-v: info, -vv: debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Print only the final answer.
    #[arg(short, long, global = true, conflicts_with = "json")]
    pub quiet: bool,
    /// Do not record this run in the session store (default: recorded in
    /// WORKSPACE/.openmanus/sessions.db, or where `[store] path` says; `[store] enabled =
    /// false` turns recording off for good).
    #[arg(long, global = true)]
    pub no_store: bool,
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
    },
    /// Inspect the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// The recorded sessions: list them, show one, resume one with a new task, export one as a
    /// journal. Every run is recorded in the session store (see --no-store).
    Sessions {
        #[command(subcommand)]
        action: SessionsAction,
    },
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
    Check,
}
