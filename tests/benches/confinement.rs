//! What the confinement of the code-running tools costs (issue 32), whole process, with the
//! release `openmanus` binary (`cargo xtask bench`): the SWE agent against the test kit's mock
//! model on 127.0.0.1, in each sandbox mode the machine can give —
//!
//! * `full-access` (no confinement: today's OpenManus behaviour, the baseline);
//! * `workspace-write` by bubblewrap (the default where `bwrap` runs);
//! * `workspace-write` by Landlock + seccomp (the fallback: `PATH` without `bwrap`);
//!
//! and for each, the wall time and the CPU time (user + system of the whole process tree, from
//! `getrusage(RUSAGE_CHILDREN)`) of:
//!
//! * a step whose call is `bash` (`echo`, SWE): the shell is one long-lived process per run, started
//!   under the confinement once; the per-step figure is (an N-step run − a 1-step run) / (N − 1);
//! * a step whose call is `python_execute` (`print`, Manus): every call starts an interpreter, under
//!   the confinement each time, so this is the per-call price of confinement;
//! * the 1-step run itself (start-up, the confinement's probe, one request, exit).
//!
//! Each figure is the mean of the middle runs of several. Figures only — nothing here passes or
//! fails.

#![allow(clippy::print_stdout, missing_docs)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use agent_core::ToolCall;
use agent_testkit::{Completion, MockOpenAi};
use nix::sys::resource::{UsageWho, getrusage};

/// Steps of the long run.
const STEPS: usize = 11;
/// Runs per figure.
const RUNS: usize = 9;
/// The lowest and highest runs left out of each mean.
const TRIM: usize = 2;

/// A sandbox mode, as the run is started.
struct Mode {
    name: &'static str,
    args: &'static [&'static str],
    /// `PATH`: a directory of links to the same programs in every mode, with or without
    /// `bwrap`.
    path: Option<PathBuf>,
}

/// The tool of each step.
#[derive(Clone, Copy)]
enum Call {
    Bash,
    Python,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Self::Bash => "bash",
            Self::Python => "python_execute",
        }
    }

    /// The agent that has the tool.
    fn agent(self) -> &'static str {
        match self {
            Self::Bash => "swe",
            Self::Python => "manus",
        }
    }

    fn args(self) -> String {
        match self {
            Self::Bash => r#"{"command":"echo step"}"#.to_owned(),
            Self::Python => r#"{"code":"print('step')"}"#.to_owned(),
        }
    }
}

struct Setup {
    server: MockOpenAi,
    dir: tempfile::TempDir,
    bin: PathBuf,
}

/// Wall seconds and CPU seconds of one run.
#[derive(Clone, Copy)]
struct Cost {
    wall: f64,
    cpu: f64,
}

impl Setup {
    fn script(&self, call: Call, steps: usize) {
        for step in 1..steps {
            self.server.push(Completion::tool_calls(
                None,
                [ToolCall::new(format!("c{step}"), call.name(), call.args())],
            ));
        }
        self.server.push(Completion::tool_calls(
            None,
            [ToolCall::new(
                "done",
                "terminate",
                r#"{"status":"success"}"#,
            )],
        ));
    }

    /// One run of `steps` steps in `mode`: `None` when it failed or asked another number of
    /// times.
    fn run(&self, mode: &Mode, call: Call, steps: usize) -> Option<Cost> {
        self.script(call, steps);
        let requests = self.server.request_count();
        let mut command = Command::new(&self.bin);
        command
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .arg("--config")
            .arg(self.dir.path().join("config.toml"))
            .arg("--workspace")
            .arg(self.dir.path().join("ws"))
            .args(mode.args)
            .args(["--agent", call.agent(), "-q", "--no-store"])
            .args(["-p", "confinement benchmark"]);
        if let Some(path) = &mode.path {
            command.env("PATH", path);
        }
        let before = cpu_of_children()?;
        let start = Instant::now();
        let output = command.output().ok()?;
        let wall = start.elapsed().as_secs_f64();
        let cpu = cpu_of_children()? - before;
        let ran = output.status.success()
            && self.server.request_count() == requests + steps
            && (steps == 1 || self.last_call_ran());
        if !ran {
            let stderr = String::from_utf8_lossy(&output.stderr);
            println!(
                "confinement: a run in {} failed ({}): {}",
                mode.name,
                output.status,
                stderr.trim().lines().last().unwrap_or_default()
            );
            if let Some(text) = self.last_tool_message() {
                println!("confinement: its last observation: {text}");
            }
        }
        ran.then_some(Cost { wall, cpu })
    }

    /// Whether the last tool message the model was sent is the call's output (it ran, and was
    /// neither refused nor an error).
    fn last_call_ran(&self) -> bool {
        self.last_tool_message()
            .is_some_and(|text| text.contains("step") && !text.contains("Error"))
    }

    fn last_tool_message(&self) -> Option<String> {
        let requests = self.server.requests();
        requests.last()?.body["messages"]
            .as_array()?
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")?["content"]
            .as_str()
            .map(str::to_owned)
    }

    /// (1-step run, per step) of `call` in `mode`.
    fn figures(&self, mode: &Mode, call: Call) -> Option<(Cost, Cost)> {
        let mut one = Vec::new();
        let mut long = Vec::new();
        for _ in 0..RUNS {
            one.push(self.run(mode, call, 1)?);
            long.push(self.run(mode, call, STEPS)?);
        }
        let mean = |runs: &[Cost], field: fn(&Cost) -> f64| {
            common::trimmed_mean(runs.iter().map(field).collect(), TRIM)
        };
        let first = Cost {
            wall: mean(&one, |c| c.wall),
            cpu: mean(&one, |c| c.cpu),
        };
        let per = (STEPS - 1) as f64;
        let step = Cost {
            wall: (mean(&long, |c| c.wall) - first.wall) / per,
            cpu: (mean(&long, |c| c.cpu) - first.cpu) / per,
        };
        Some((first, step))
    }
}

fn cpu_of_children() -> Option<f64> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).ok()?;
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Some(secs(usage.user_time()) + secs(usage.system_time()))
}

/// Where `program` is on `PATH`.
fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// A directory of links to what the tools need — the interpreter itself, not a launcher script
/// such as pyenv's shim, so every mode runs the same programs — with `bwrap` or without it (the
/// Landlock fallback).
fn tools_path(dir: &Path, with_bwrap: bool) -> Option<PathBuf> {
    let bin = dir.join(if with_bwrap {
        "bin"
    } else {
        "bin-without-bwrap"
    });
    std::fs::create_dir_all(&bin).ok()?;
    let python = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let python = PathBuf::from(String::from_utf8_lossy(&python.stdout).trim());
    let mut programs = vec![
        ("python3", python),
        ("bash", which("bash")?),
        ("true", which("true")?),
        ("env", which("env")?),
        ("sh", which("sh")?),
    ];
    if with_bwrap {
        programs.push(("bwrap", which("bwrap")?));
    }
    for (name, found) in programs {
        let link = bin.join(name);
        if !link.exists() {
            std::os::unix::fs::symlink(found, link).ok()?;
        }
    }
    Some(bin)
}

fn main() {
    let Some(bin) = std::env::var_os("OPENMANUS_BIN") else {
        println!("confinement: set OPENMANUS_BIN to the openmanus binary (cargo xtask bench does)");
        return;
    };
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    else {
        println!("could not start a tokio runtime");
        return;
    };
    let Ok(server) = runtime.block_on(MockOpenAi::start()) else {
        println!("could not start the mock server");
        return;
    };
    let Ok(dir) = tempfile::tempdir() else { return };
    let config = format!(
        "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\nmax_attempts = 1\n",
        server.base_url()
    );
    if std::fs::write(dir.path().join("config.toml"), config).is_err()
        || std::fs::create_dir_all(dir.path().join("ws")).is_err()
    {
        println!("could not write the benchmark's files");
        return;
    }
    let with_bwrap = tools_path(dir.path(), true);
    let without_bwrap = tools_path(dir.path(), false);
    let setup = Setup {
        server,
        dir,
        bin: PathBuf::from(bin),
    };
    let mut modes = vec![Mode {
        name: "full-access (unconfined)",
        args: &["--sandbox", "full-access"],
        path: without_bwrap.clone(),
    }];
    if with_bwrap.is_some() {
        modes.push(Mode {
            name: "workspace-write, bubblewrap (default)",
            args: &[],
            path: with_bwrap,
        });
    }
    if without_bwrap.is_some() {
        modes.push(Mode {
            name: "workspace-write, Landlock (no bwrap on PATH)",
            args: &[],
            path: without_bwrap,
        });
    }

    println!(
        "confinement: the release openmanus binary (SWE for bash, Manus for python_execute; --no-store) against the mock model; \
         means of the middle {} of {RUNS} runs",
        RUNS - 2 * TRIM
    );
    println!("| mode | call | 1-step run: wall / CPU | per step: wall / CPU |");
    println!("|---|---|---|---|");
    for mode in &modes {
        for call in [Call::Bash, Call::Python] {
            match setup.figures(mode, call) {
                Some((first, step)) => println!(
                    "| {} | {} | {:.1} ms / {:.1} ms | {:.2} ms / {:.2} ms |",
                    mode.name,
                    call.name(),
                    first.wall * 1e3,
                    first.cpu * 1e3,
                    step.wall * 1e3,
                    step.cpu * 1e3
                ),
                None => println!(
                    "| {} | {} | (a run failed: is this mode available here?) | — |",
                    mode.name,
                    call.name()
                ),
            }
        }
    }
    if let Err(violations) = setup.server.verify() {
        println!("confinement: the binary's requests broke the OpenAI rules: {violations}");
    }
}
