//! Start-up of the `openmanus` binary (`cargo xtask bench`): from spawning the process to the
//! mock model receiving its first request, median of 20 runs. `cargo xtask bench` builds the
//! release binary and passes its path in `OPENMANUS_BIN`. OpenManus needs ~3.2 s for the same.

#![allow(clippy::print_stdout, missing_docs)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_core::ToolCall;
use agent_testkit::{Completion, MockOpenAi};

const RUNS: usize = 20;

fn main() {
    let Some(bin) = std::env::var_os("OPENMANUS_BIN") else {
        println!("cli_startup: set OPENMANUS_BIN to the openmanus binary (cargo xtask bench does)");
        return;
    };
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    else {
        println!("could not start a tokio runtime");
        return;
    };
    runtime.block_on(async move {
        let Ok(server) = MockOpenAi::start().await else {
            println!("could not start the mock server");
            return;
        };
        let Ok(dir) = tempfile::tempdir() else { return };
        let config = dir.path().join("config.toml");
        let text = format!("[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\nmax_attempts = 1\n", server.base_url());
        if std::fs::write(&config, text).is_err() {
            return;
        }
        let mut times = Vec::with_capacity(RUNS);
        for run in 0..RUNS {
            server.push(Completion::tool_calls(None, [ToolCall::new(format!("t{run}"), "terminate", r#"{"status":"success"}"#)]));
            let before = server.request_count();
            let started = Instant::now();
            let child = tokio::process::Command::new(&bin)
                .arg("--config")
                .arg(&config)
                .arg("--workspace")
                .arg(dir.path().join("ws"))
                .args(["-q", "--prompt", "start-up benchmark"])
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn();
            let Ok(mut child) = child else {
                println!("could not start {}", bin.to_string_lossy());
                return;
            };
            if tokio::time::timeout(Duration::from_secs(30), server.wait_for_requests(before + 1)).await.is_err() {
                println!("openmanus sent no request within 30 s");
                return;
            }
            times.push(started.elapsed());
            let _ = child.wait().await;
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "cli_startup: process start -> first model request: median {:.1} ms, min {:.1} ms, max {:.1} ms over {RUNS} runs",
            ms(times[RUNS / 2]),
            ms(times[0]),
            ms(times[RUNS - 1])
        );
    });
}
