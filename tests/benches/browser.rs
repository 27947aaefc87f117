//! Browser benchmark (`cargo xtask bench`): `go_to_url` + `get_current_state` (indexing,
//! scroll info and a full-page JPEG screenshot) on a page served from 127.0.0.1, through the
//! `browser_use` tool on the system Chromium, headless. The first call includes launching
//! Chromium. Needs `chromium` on PATH (`cargo xtask setup` installs it); without it the benchmark says so
//! and reports nothing.

#![allow(clippy::print_stdout, missing_docs)]

use std::time::{Duration, Instant};

use agent_browser::{BrowserConfig, BrowserUseTool};
use agent_tools::{Tool, ToolContext};
use axum::Router;
use axum::response::Html;
use axum::routing::get;
use serde_json::json;

const RUNS: usize = 50;

const PAGE: &str = r#"<!doctype html><html><head><title>Bench</title></head><body>
<h1>Products</h1><form><input name="q" placeholder="Search"><select name="sort">
<option>Price</option><option>Name</option></select><button>Go</button></form>
<ul>
<li><a href="/p/1">One</a></li><li><a href="/p/2">Two</a></li><li><a href="/p/3">Three</a></li>
<li><a href="/p/4">Four</a></li><li><a href="/p/5">Five</a></li><li><a href="/p/6">Six</a></li>
</ul><div style="height:3000px">long content</div></body></html>"#;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(at).copied().unwrap_or_default()
}

fn report(label: &str, times: &mut [Duration]) {
    times.sort();
    println!(
        "  {label:36} median {:7.2} ms   p90 {:7.2} ms   max {:7.2} ms",
        percentile(times, 0.5).as_secs_f64() * 1e3,
        percentile(times, 0.9).as_secs_f64() * 1e3,
        times.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

#[tokio::main]
async fn main() {
    if BrowserConfig::default().resolve_executable().is_err() {
        println!("browser: no Chromium on PATH; skipped (apt-get install chromium)");
        return;
    }
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(e) => {
            println!("browser: cannot listen on loopback: {e}");
            return;
        }
    };
    let Ok(addr) = listener.local_addr() else {
        return;
    };
    let app = Router::new().route("/page", get(|| async { Html(PAGE) }));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let url = format!("http://{addr}/page");
    let tool = BrowserUseTool::new();
    let ctx = ToolContext::default();
    let navigate = json!({"action": "go_to_url", "url": url});

    println!("browser_use on headless Chromium, local page, {RUNS} runs:");
    let started = Instant::now();
    let first = tool.execute(navigate.clone(), &ctx).await;
    let state = tool.get_current_state().await;
    if first.is_err() || state.error.is_some() {
        println!("  the first navigation failed: {first:?} {:?}", state.error);
        return;
    }
    println!(
        "  {:36} {:7.2} ms",
        "first go_to_url + state (launch)",
        started.elapsed().as_secs_f64() * 1e3
    );
    let (mut both, mut go, mut states) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let started = Instant::now();
        let result = tool.execute(navigate.clone(), &ctx).await;
        let navigated = started.elapsed();
        let state = tool.get_current_state().await;
        let total = started.elapsed();
        if result.is_err() || state.error.is_some() {
            println!("  a run failed: {result:?} {:?}", state.error);
            return;
        }
        go.push(navigated);
        states.push(total - navigated);
        both.push(total);
    }
    report("go_to_url + get_current_state", &mut both);
    report("  go_to_url", &mut go);
    report("  get_current_state", &mut states);
    if let Err(e) = tool.cleanup().await {
        println!("  cleanup failed: {e}");
    }
}
