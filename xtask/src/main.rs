//! Project automation: `cargo xtask <command>`.
//!
//! * `ci` — makes the machine ready (system packages, the Docker engine; [`machine`]), then
//!   format check, clippy with warnings denied (also of the lean build, without the `browser`,
//!   `charts` and `docker` features), `cargo package` of every library crate, docs with
//!   warnings denied, and every test of the workspace (and the lean build's, and the Docker
//!   backend's when an engine answers). A failure never stops the later steps; the end lists
//!   every failed check and test ([`outcome`]). This is the README's test command and what
//!   `.ci/run` executes.
//! * `setup` — only the machine step.
//! * `integration` — only the end-to-end suites (real programs against each other).
//! * `faults` — the fault cases, one by one, with a "cases held / tried" summary.
//! * `install-check` — `cargo install` of the binary into a temporary root, and its `demo`.
//! * `bench` — the benchmarks in release mode (figures, never pass/fail).
//! * `fmt` — format the workspace.
//! * `docker` — only the Docker sandbox backend's tests (`ci` runs them too, when an engine
//!   answers), building their images from host files first.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use docker::docker_tests;
use outcome::{Failure, Outcome, What};
use peers::{test_peers, with_test_peers};

mod docker;
mod faults;
mod install_check;
mod machine;
mod outcome;
mod peers;

const USAGE: &str = "usage: cargo xtask <command> [--no-install]

commands:
  ci      first the machine step of `setup`, then fmt check, clippy (-D warnings; of every
          feature, Bedrock's included, and of the lean build, --no-default-features), cargo
          package of every library crate, rustdoc (-D warnings), cargo test --workspace
          --all-features, the lean build's tests (agents,
          agent-sandbox, the lean binary) and the Docker backend's tests when an engine
          answers; every cargo test with --no-fail-fast, and a failed step never stops the
          later ones. It ends with every failed check and test (package, target, name) and
          the line `tests: N passed, N failed, N skipped`.
          The test peers are installed on first use into target/xtask-tools/: fakellm from
          PyPI (set FAKELLM_BIN to use another copy), the MCP test servers
          @modelcontextprotocol/server-everything and server-filesystem with npm into
          target/xtask-tools/npm (MCP_EVERYTHING_BIN / MCP_FILESYSTEM_BIN), the Python mcp
          SDK from PyPI into a virtualenv there (MCP_PYTHON: another interpreter that has
          it), pandas into another one for the DataAnalysis tests (ANALYSIS_PYTHON), and the
          A2A Python SDK, 0.2.5 and 1.3.0, each in its own (A2A_PYTHON_0_2 / A2A_PYTHON_1),
          and the ACP TypeScript SDK @agentclientprotocol/sdk with npm into
          target/xtask-tools/acp-sdk-2.4.0 (ACP_SDK: its dist/v1/stable/acp.js)
  setup   makes the machine ready for the tests, before anything is compiled: checks the
          system packages the tests need (bubblewrap, xvfb, python3-tk, pkg-config,
          libfontconfig1-dev, libfreetype-dev, fonts-dejavu-core, fonts-wqy-microhei,
          chromium, docker.io, busybox-static, tmux, bsdutils, nats-server; python3 with venv;
          Node.js 20+ and npm) and installs the missing ones with apt-get when it can (as
          root, or with passwordless sudo); otherwise it stops and prints the command that
          installs them. Then it starts a Docker engine (dockerd, as root) when none answers,
          or says the Docker tests will be skipped. ci, integration, faults and docker run it
          first
  integration
          the end-to-end suites only: the openmanus binary, the LLM client over HTTP (mock
          server and fakellm), MCP against real servers, the example agent crate; further
          arguments go to cargo test (e.g. `cargo xtask integration -- ctrl_c`)
  faults  the fault cases of issue 21 (LLM failures, escaped processes, Ctrl-C, secrets, huge
          output, broken MCP servers, a killed Chromium, a full disk, a killed run resumed),
          each test alone; prints cases held / tried (docs/faults.md lists them)
  install-check
          cargo install --path crates/openmanus-cli --locked into a temporary root, as users
          of Rust tools install it, then that binary's `openmanus demo` in a temporary
          directory (no API key needed); fails unless both succeed
  bench   agent-loop, request-bytes, LLM-client, local-tool, browser, start-up, whole-process, confinement, server and worker benchmarks
          (release; prints figures; instructions with valgrind when installed)
  fmt     cargo fmt --all
  docker  only the Docker backend's tests (their images built offline first; needs an engine)

--no-install (or OPENMANUS_XTASK_NO_INSTALL=1): never install system packages; anything
missing stops the command with the apt-get command that would install it.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let env = std::env::var(machine::NO_INSTALL_ENV).ok();
    let (install, rest) = install_allowed(args.get(1..).unwrap_or_default(), env.as_deref());
    let no_more = |rest: &[String]| match rest.first() {
        Some(extra) => Err(anyhow::anyhow!("unexpected argument `{extra}`\n\n{USAGE}")),
        None => Ok(()),
    };
    let result = match args.first().map(String::as_str) {
        Some("ci") => no_more(&rest).and_then(|()| ci(install)),
        Some("setup") => no_more(&rest).and_then(|()| machine::ready(install)),
        Some("bench") => bench(&args[1..]),
        Some("integration") => integration(install, &rest),
        Some("faults") => no_more(&rest)
            .and_then(|()| machine::ready(install))
            .and_then(|()| faults::faults()),
        Some("install-check") => no_more(&rest).and_then(|()| install_check::install_check()),
        Some("fmt") => run("format", cargo(&["fmt", "--all"])),
        Some("docker") => no_more(&rest)
            .and_then(|()| machine::ready(install))
            .and_then(|()| match docker_tests()? {
                Some(tests) => finish(&[], &tests),
                None => Err(anyhow::anyhow!(
                    "the Docker sandbox tests could not run here"
                )),
            }),
        Some("-h" | "--help" | "help") => {
            say(USAGE);
            Ok(())
        }
        Some(other) => Err(anyhow::anyhow!("unknown command `{other}`\n\n{USAGE}")),
        None => Err(anyhow::anyhow!("{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Already said, with the closing line last.
        Err(error) if error.is::<Reported>() => ExitCode::FAILURE,
        Err(error) => {
            eprintln_(&format!("xtask: {error:#}"));
            ExitCode::FAILURE
        }
    }
}

/// Whether system packages may be installed — not with `--no-install` among the arguments
/// (before any `--`, after which they are cargo test's), nor with `OPENMANUS_XTASK_NO_INSTALL`
/// set to anything but empty or `0` — and the other arguments.
fn install_allowed(args: &[String], env: Option<&str>) -> (bool, Vec<String>) {
    let mut install = env.is_none_or(|value| value.is_empty() || value == "0");
    let mut rest = Vec::new();
    let mut passed_on = false;
    for arg in args {
        if arg == "--" {
            passed_on = true;
        }
        if arg == "--no-install" && !passed_on {
            install = false;
        } else {
            rest.push(arg.clone());
        }
    }
    (install, rest)
}

/// A failure already printed in full (the run's listing and closing line), so `main` adds
/// nothing after it.
#[derive(Debug)]
struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failures listed above")
    }
}

impl std::error::Error for Reported {}

fn ci(install: bool) -> Result<()> {
    // Nothing of the workspace is compiled before the machine is ready and the test peers are
    // installed: a missing package stops here, not after an hour of building.
    machine::ready(install)?;
    let peers = test_peers()?;
    let mut checks_failed = Vec::new();
    check(
        &mut checks_failed,
        "format check",
        cargo(&["fmt", "--all", "--", "--check"]),
    );
    check(
        &mut checks_failed,
        "clippy",
        cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]),
    );
    // The lean build (no browser, charts or Docker client): the crates that have the features,
    // checked and linted without them; their tests run further down.
    check(
        &mut checks_failed,
        "clippy, lean build",
        cargo(&[
            "clippy",
            "-p",
            "openmanus-cli",
            "-p",
            "openmanus-agents",
            "-p",
            "openmanus-agent-sandbox",
            "--no-default-features",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]),
    );
    // Every library crate can be packaged for crates.io (together: they depend on each other).
    check(
        &mut checks_failed,
        "cargo package (library crates)",
        cargo(&[
            "package",
            "--workspace",
            "--no-verify",
            "--allow-dirty",
            "--exclude",
            "openmanus-cli",
            "--exclude",
            "openmanus-agent-testkit",
            "--exclude",
            "xtask",
            "--exclude",
            "openmanus-e2e",
            "--exclude",
            "word-stats-agent",
        ]),
    );
    let mut doc = cargo(&[
        "doc",
        "--workspace",
        "--all-features",
        "--no-deps",
        "--locked",
    ]);
    doc.env("RUSTDOCFLAGS", "-D warnings");
    check(&mut checks_failed, "rustdoc", doc);
    let mut tests = Outcome::default();
    // Every feature: the default build's and Bedrock's (`bedrock`, not in the default binary).
    let mut test = cargo(&[
        "test",
        "--workspace",
        "--all-features",
        "--locked",
        "--no-fail-fast",
    ]);
    with_test_peers(&mut test, &peers);
    tests.add(run_tests("tests", test)?);
    // The lean build's own tests: what it leaves out is refused by the feature's name.
    let mut lean = cargo(&[
        "test",
        "-p",
        "openmanus-agents",
        "-p",
        "openmanus-agent-sandbox",
        "--no-default-features",
        "--locked",
        "--no-fail-fast",
    ]);
    with_test_peers(&mut lean, &peers);
    tests.add(run_tests("tests, lean build", lean)?);
    // And the lean binary itself (tests/lean.rs; empty in the default build).
    let lean_cli = cargo(&[
        "test",
        "-p",
        "openmanus-cli",
        "--no-default-features",
        "--test",
        "lean",
        "--locked",
        "--no-fail-fast",
    ]);
    tests.add(run_tests("tests, lean binary", lean_cli)?);
    match docker_tests() {
        // The plain run counted them as skipped (they are #[ignore]d there).
        Ok(Some(docker)) => {
            tests.ignored = tests.ignored.saturating_sub(docker.passed + docker.failed);
            tests.add(docker);
        }
        Ok(None) => {}
        Err(error) => tests.fail(Failure {
            package: None,
            target: "Docker tests".to_owned(),
            what: What::Other(format!("could not run: {error:#}")),
        }),
    }
    finish(&checks_failed, &tests)
}

/// Runs one check of `ci`; a failure is noted in `failed` and the run goes on.
fn check(failed: &mut Vec<String>, what: &str, command: Command) {
    if let Err(error) = run(what, command) {
        say(&format!("==> {what}: FAILED ({error:#})"));
        failed.push(what.to_owned());
    }
}

/// The end of a run: the failed checks, every failed test, and the closing line
/// `tests: N passed, N failed, N skipped`, which is the last line printed; an error (already
/// reported) when anything failed or no test ran.
fn finish(checks_failed: &[String], tests: &Outcome) -> Result<()> {
    say("");
    if !checks_failed.is_empty() {
        say("failed checks:");
        for what in checks_failed {
            say(&format!("  {what}"));
        }
    }
    for line in tests.listing() {
        say(&line);
    }
    if tests.passed == 0 && tests.failed == 0 {
        say("no test ran");
    }
    say(&format!("tests: {}", tests.counts()));
    if checks_failed.is_empty() && tests.failed == 0 && tests.passed > 0 {
        Ok(())
    } else {
        Err(Reported.into())
    }
}

/// Runs one `cargo test` phase, echoing its output (standard output and standard error
/// through one pipe, so cargo's `Running …` lines stay in order with the tests' lines), and
/// reads what passed and failed from it. Only a `cargo` that cannot start is an error: failed
/// tests and build errors are in the outcome.
pub(crate) fn run_tests(phase: &str, mut command: Command) -> Result<Outcome> {
    say(&format!("==> {phase}: {command:?}"));
    let started = Instant::now();
    let (reader, writer) = std::io::pipe().context("create a pipe for cargo test")?;
    // No terminal on stdin: tools that would prompt a human (ask_human) must see there is none.
    command
        .stdin(Stdio::null())
        .stdout(
            writer
                .try_clone()
                .context("duplicate the pipe for cargo test")?,
        )
        .stderr(writer);
    let mut child = command.spawn().context("could not start cargo test")?;
    // The command holds the pipe's writing ends: drop it, or the reading never ends.
    drop(command);
    let mut lines = Vec::new();
    let mut reader = BufReader::new(reader);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let read = reader
            .read_until(b'\n', &mut buffer)
            .context("reading cargo test output")?;
        if read == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&buffer);
        let line = line.trim_end_matches(['\n', '\r']).to_owned();
        say(&line);
        lines.push(line);
    }
    let status = child.wait().context("waiting for cargo test")?;
    let mut outcome = outcome::read(lines.iter().map(String::as_str));
    if !status.success() && outcome.failures.is_empty() {
        outcome.fail(Failure {
            package: None,
            target: phase.to_owned(),
            what: What::Other(format!(
                "cargo test failed ({status}) without naming a failed test or target"
            )),
        });
    }
    say(&format!(
        "==> {phase}: {}, in {:.1} s",
        outcome.counts(),
        started.elapsed().as_secs_f64()
    ));
    Ok(outcome)
}

/// Where xtask installs the test peers (and logs the dockerd it starts): `target/xtask-tools/`.
pub(crate) fn tools_dir() -> PathBuf {
    workspace_root().join("target").join("xtask-tools")
}

/// Where cargo builds: `CARGO_TARGET_DIR` (relative to the workspace) or `target/`.
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || workspace_root().join("target"),
        |dir| workspace_root().join(dir),
    )
}

pub(crate) fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map_or(manifest.clone(), Path::to_path_buf)
}

/// `cargo xtask integration`: the suites that run real programs against each other — the
/// `openmanus` binary as a subprocess, the HTTP client against the mock server and fakellm,
/// MCP against real servers, the example agent crate.
fn integration(install: bool, extra: &[String]) -> Result<()> {
    machine::ready(install)?;
    let peers = test_peers()?;
    let mut test = cargo(&[
        "test",
        "--locked",
        "--all-features",
        "--no-fail-fast",
        "-p",
        "openmanus-e2e",
        "-p",
        "openmanus-cli",
        "-p",
        "openmanus-agent-mcp",
        "-p",
        "word-stats-agent",
        "-p",
        "openmanus-agent-llm",
        "-p",
        "openmanus-agent-charts",
        "-p",
        "openmanus-agent-server",
    ]);
    test.args(extra);
    with_test_peers(&mut test, &peers);
    let tests = run_tests("integration tests", test)?;
    finish(&[], &tests)
}

fn bench(extra: &[String]) -> Result<()> {
    run(
        "build the release openmanus binary",
        cargo(&["build", "--release", "--locked", "--bin", "openmanus"]),
    )?;
    let binary = target_dir().join("release").join("openmanus");
    for name in [
        "agent_loop",
        "request_bytes",
        "llm_client",
        "tools",
        "browser",
        "cli_startup",
        "process_cost",
        "record_bytes",
        "confinement",
        "server",
        "workers",
    ] {
        let mut command = cargo(&[
            "bench",
            "--locked",
            "-p",
            "openmanus-e2e",
            "--bench",
            name,
            "--",
        ]);
        command.args(extra).env("OPENMANUS_BIN", &binary);
        run(&format!("benchmark {name}"), command)?;
    }
    Ok(())
}

/// `cargo args`, without incremental compilation unless the caller asked for it: each target is
/// built once here, and the incremental caches were 8.3 GB of a cold run's 22 GB `target/`.
pub(crate) fn cargo(args: &[&str]) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    command.args(args);
    if std::env::var_os("CARGO_INCREMENTAL").is_none() {
        command.env("CARGO_INCREMENTAL", "0");
    }
    command
}

pub(crate) fn run(what: &str, mut command: Command) -> Result<()> {
    say(&format!("==> {what}: {command:?}"));
    let started = Instant::now();
    let status = command
        .status()
        .with_context(|| format!("could not start {what}"))?;
    say(&format!(
        "==> {what}: {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

#[allow(clippy::print_stdout)]
pub(crate) fn say(line: &str) {
    println!("{line}");
}

#[allow(clippy::print_stderr)]
fn eprintln_(line: &str) {
    eprintln!("{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn no_install_comes_from_the_flag_or_the_environment() {
        assert_eq!(install_allowed(&[], None), (true, Vec::new()));
        assert_eq!(
            install_allowed(&strings(&["--no-install"]), None),
            (false, Vec::new())
        );
        assert_eq!(install_allowed(&[], Some("1")), (false, Vec::new()));
        assert_eq!(install_allowed(&[], Some("0")), (true, Vec::new()));
        assert_eq!(install_allowed(&[], Some("")), (true, Vec::new()));
    }

    #[test]
    fn no_install_after_a_double_dash_belongs_to_cargo_test() {
        let (install, rest) = install_allowed(
            &strings(&["--no-install", "--", "ctrl_c", "--no-install"]),
            None,
        );
        assert!(!install);
        assert_eq!(rest, strings(&["--", "ctrl_c", "--no-install"]));
        let (install, rest) = install_allowed(&strings(&["--", "--no-install"]), None);
        assert!(install);
        assert_eq!(rest, strings(&["--", "--no-install"]));
    }
}
