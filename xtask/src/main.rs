//! Project automation: `cargo xtask <command>`.
//!
//! * `ci` — format check, clippy with warnings denied, docs with warnings denied, and every test
//!   of the workspace. This is the README's test command and what `.ci/run` executes.
//! * `bench` — the agent-loop benchmarks in release mode (figures, never pass/fail).
//! * `fmt` — format the workspace.

use std::io::{BufRead, BufReader};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci      fmt check, clippy (-D warnings), rustdoc (-D warnings), cargo test --workspace
  bench   agent-loop benchmarks (release build; prints figures)
  fmt     cargo fmt --all";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench(&args[1..]),
        Some("fmt") => run("format", cargo(&["fmt", "--all"])),
        Some("-h" | "--help" | "help") => {
            say(USAGE);
            Ok(())
        }
        Some(other) => Err(anyhow::anyhow!("unknown command `{other}`\n\n{USAGE}")),
        None => Err(anyhow::anyhow!("{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln_(&format!("xtask: {error:#}"));
            ExitCode::FAILURE
        }
    }
}

fn ci() -> Result<()> {
    run("format check", cargo(&["fmt", "--all", "--", "--check"]))?;
    run(
        "clippy",
        cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    let mut doc = cargo(&["doc", "--workspace", "--no-deps", "--locked"]);
    doc.env("RUSTDOCFLAGS", "-D warnings");
    run("rustdoc", doc)?;
    let (passed, failed, ignored) = run_tests(cargo(&["test", "--workspace", "--locked"]))?;
    // One plain closing line for whoever reads the end of the log.
    say(&format!(
        "tests: {passed} passed, {failed} failed, {ignored} skipped"
    ));
    if passed == 0 {
        bail!("no test ran");
    }
    Ok(())
}

/// Runs `cargo test`, echoing its output, and adds up the `test result:` lines.
fn run_tests(mut command: Command) -> Result<(u64, u64, u64)> {
    say(&format!("==> tests: {command:?}"));
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .context("could not start cargo test")?;
    let mut totals = (0, 0, 0);
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.context("reading cargo test output")?;
            say(&line);
            if let Some(counts) = line.strip_prefix("test result: ") {
                totals.0 += count(counts, "passed");
                totals.1 += count(counts, "failed");
                totals.2 += count(counts, "ignored");
            }
        }
    }
    let status = child.wait().context("waiting for cargo test")?;
    say(&format!(
        "==> tests: {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    if !status.success() {
        say(&format!(
            "tests: {} passed, {} failed, {} skipped",
            totals.0,
            totals.1.max(1),
            totals.2
        ));
        bail!("tests failed ({status})");
    }
    Ok(totals)
}

/// The number before `word` in a `test result:` line (`ok. 3 passed; 0 failed; ...`).
fn count(line: &str, word: &str) -> u64 {
    line.split([';', '.'])
        .filter_map(|part| part.trim().strip_suffix(word))
        .find_map(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

fn bench(extra: &[String]) -> Result<()> {
    let mut command = cargo(&[
        "bench",
        "--locked",
        "-p",
        "openmanus-e2e",
        "--bench",
        "agent_loop",
        "--",
    ]);
    command.args(extra);
    run("benchmarks", command)
}

fn cargo(args: &[&str]) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    command.args(args);
    command
}

fn run(what: &str, mut command: Command) -> Result<()> {
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
fn say(line: &str) {
    println!("{line}");
}

#[allow(clippy::print_stderr)]
fn eprintln_(line: &str) {
    eprintln!("{line}");
}
