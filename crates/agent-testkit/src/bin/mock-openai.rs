//! `mock-openai`: the test kit's strict mock OpenAI-compatible server, from the command line.
//!
//! Prints its base URL (`http://127.0.0.1:PORT/v1`) as the first line on stdout, then serves
//! until killed. On Ctrl-C or SIGTERM it prints a summary of the violations it saw to stderr and
//! exits with status 1 if there were any. Run with `--help` for the options.

use std::io::Write;
use std::process::ExitCode;

use agent_testkit::{MockOpenAi, MockReply};

const USAGE: &str = "\
mock-openai — a strict mock OpenAI-compatible chat-completions server on 127.0.0.1

USAGE:
    mock-openai [--port N] [--script FILE.json] [--repeat-text TEXT] [--api-key KEY]

OPTIONS:
    --port N             port to listen on (default 0: a free port)
    --script FILE        JSON array of scripted replies, answered in order, e.g.
                           [{\"text\": \"Hello\"},
                            {\"tool_calls\": [{\"id\": \"call_1\", \"name\": \"bash\",
                                             \"arguments\": \"{\\\"command\\\":\\\"ls\\\"}\"}]},
                            {\"fault\": \"rate_limited\", \"retry_after\": 1},
                            {\"conversation\": \"first user text\", \"text\": \"...\"}]
                         (full format: the agent_testkit::mock_openai::script docs)
    --repeat-text TEXT   answer every request the script does not cover with this text
                         (with no --script: every request; for benchmarks)
    --api-key KEY        require KEY (Authorization: Bearer KEY; Azure: api-key: KEY)
    -h, --help           print this help

At least one of --script and --repeat-text is required. The first line on stdout is the base
URL (http://127.0.0.1:PORT/v1); the Azure endpoint is the same URL without /v1. Every request is
validated like a strict provider would; violations get a 400 and are logged on stderr
(RUST_LOG=agent_testkit=debug shows every request).";

#[derive(Debug, Default)]
struct Options {
    port: u16,
    script: Option<String>,
    repeat_text: Option<String>,
    api_key: Option<String>,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Option<Options>, String> {
    let mut options = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--port" => {
                let port = value()?;
                options.port = port
                    .parse()
                    .map_err(|_| format!("--port: '{port}' is not a port number"))?;
            }
            "--script" => options.script = Some(value()?),
            "--repeat-text" => options.repeat_text = Some(value()?),
            "--api-key" => options.api_key = Some(value()?),
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    if options.script.is_none() && options.repeat_text.is_none() {
        return Err("give --script FILE, --repeat-text TEXT, or both".into());
    }
    Ok(Some(options))
}

#[allow(clippy::print_stderr)]
fn complain(message: &str) {
    eprintln!("mock-openai: {message}");
}

#[allow(clippy::print_stdout)]
fn announce(line: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")?;
    stdout.flush()
}

async fn serve(options: Options) -> Result<bool, String> {
    let server = MockOpenAi::start_on_port(options.port)
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1:{}: {e}", options.port))?;
    if let Some(path) = &options.script {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        server
            .load_script(&text)
            .map_err(|e| format!("{path}: {e}"))?;
    }
    if let Some(text) = options.repeat_text {
        server.set_fallback(Some(MockReply::text(text)));
    }
    if let Some(key) = options.api_key {
        server.require_api_key(key);
    }
    // Nobody reads the recorded requests of a standalone server; keep memory flat under load.
    server.set_recording(false);
    announce(&server.base_url()).map_err(|e| format!("cannot write to stdout: {e}"))?;
    agent_process::stop_requested().await;
    let violations = server.violations();
    complain(&format!(
        "stopping after {} request(s), {} violation(s)",
        server.request_count(),
        violations.len()
    ));
    for violation in &violations {
        complain(&format!("  - {violation}"));
    }
    Ok(violations.is_empty())
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            return match announce(USAGE) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            };
        }
        Err(message) => {
            complain(&format!("{message}\n\n{USAGE}"));
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            complain(&format!("cannot start the runtime: {error}"));
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(options)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            complain(&message);
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn arguments_parse() {
        let options = parse_args(args(&[
            "--port",
            "8080",
            "--script=s.json",
            "--api-key",
            "k",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(options.port, 8080);
        assert_eq!(options.script.as_deref(), Some("s.json"));
        assert_eq!(options.api_key.as_deref(), Some("k"));
        assert!(parse_args(args(&["--help"])).unwrap().is_none());
        assert!(parse_args(args(&["--port", "x", "--repeat-text", "hi"])).is_err());
        assert!(
            parse_args(args(&["--port", "0"])).is_err(),
            "needs a reply source"
        );
        assert!(parse_args(args(&["--bogus"])).is_err());
        assert!(parse_args(args(&["--script"])).is_err());
    }
}
