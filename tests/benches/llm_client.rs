//! LLM client benchmarks (`cargo xtask bench`): requests per second and per-request client
//! overhead against the in-process mock OpenAI server answering at once. The baseline is a bare
//! `reqwest` POST of a pre-built body to the same server, in the same invocation; the difference
//! is what `LlmClient` adds (formatting, token counting, body building, parsing, bookkeeping).

#![allow(clippy::print_stdout, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{Message, ToolChoice, ToolDefinition};
use agent_llm::{ChatModel, ChatRequest, LlmClient, LlmSettings};
use agent_testkit::{Completion, MockOpenAi, MockReply};
use serde_json::json;

const REQUESTS: usize = 2_000;

fn request() -> ChatRequest {
    let mut messages = vec![Message::user_message(
        "Summarise the files in the workspace.",
    )];
    for i in 0..10 {
        messages.push(Message::assistant_message(format!(
            "Step {i}: I looked at file_{i}.txt and it holds notes."
        )));
        messages.push(Message::user_message("Continue with the next file."));
    }
    let tool = ToolDefinition::new(
        "str_replace_editor",
        "View and edit files.",
        json!({"type": "object", "properties": {"command": {"type": "string"}, "path": {"type": "string"}}, "required": ["command", "path"]}),
    );
    ChatRequest::new(messages)
        .with_system(vec![Message::system_message(
            "You are a careful assistant.",
        )])
        .with_tools(vec![tool], ToolChoice::Auto)
}

async fn timed<F, Fut>(n: usize, mut f: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    for _ in 0..n {
        assert!(f().await, "benchmark request failed");
    }
    started.elapsed()
}

fn main() {
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    else {
        println!("could not start a tokio runtime");
        return;
    };
    runtime.block_on(async {
        let Ok(server) = MockOpenAi::start().await else {
            println!("could not start the mock server");
            return;
        };
        server.set_recording(false);
        server.set_fallback(Some(MockReply::from(Completion::text("Noted: the next file holds more notes.").with_usage(300, 9))));

        let client_for = |stream: bool| {
            let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-bench");
            settings.stream = stream;
            settings.max_attempts = 1;
            LlmClient::new(settings)
        };
        let (Ok(plain), Ok(streamed)) = (client_for(false), client_for(true)) else {
            println!("could not build the clients");
            return;
        };
        agent_llm::http::install_crypto_provider();
        let raw = reqwest::Client::new();
        let url = format!("{}/chat/completions", server.base_url());
        let body = {
            let r = request();
            let messages: Vec<_> = r.all_messages().map(Message::to_dict).collect();
            json!({"model": "gpt-4o", "messages": messages, "tools": r.tools, "tool_choice": "auto",
                   "max_tokens": 4096, "temperature": 1.0, "stream": false})
            .to_string()
        };

        // Warm up (and load the tokenizer tables once).
        for _ in 0..200 {
            let _ = plain.complete(request()).await;
            let _ = streamed.complete(request()).await;
        }

        let raw_time = timed(REQUESTS, || async {
            raw.post(&url)
                .bearer_auth("sk-bench")
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .map(|r| r.status().is_success())
                .unwrap_or(false)
        })
        .await;
        let plain_time = timed(REQUESTS, || async { plain.complete(request()).await.is_ok() }).await;
        let stream_time = timed(REQUESTS, || async { streamed.complete(request()).await.is_ok() }).await;

        let per = |d: Duration| d.as_secs_f64() * 1e6 / REQUESTS as f64;
        let rps = |d: Duration| REQUESTS as f64 / d.as_secs_f64();
        println!("llm_client benchmarks: {REQUESTS} sequential requests, 21-message request with one tool, mock answers at once\n");
        println!("  baseline (bare reqwest POST, pre-built body): {:7.1} µs/request  {:8.0} req/s", per(raw_time), rps(raw_time));
        println!(
            "  LlmClient, JSON response:                    {:7.1} µs/request  {:8.0} req/s  (client overhead {:.1} µs/request)",
            per(plain_time),
            rps(plain_time),
            per(plain_time) - per(raw_time)
        );
        println!(
            "  LlmClient, SSE stream:                       {:7.1} µs/request  {:8.0} req/s  (overhead {:.1} µs/request)",
            per(stream_time),
            rps(stream_time),
            per(stream_time) - per(raw_time)
        );

        let client = Arc::new(plain);
        let started = Instant::now();
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move {
                    let mut ok = 0usize;
                    for _ in 0..(REQUESTS / 64) {
                        ok += usize::from(client.complete(request()).await.is_ok());
                    }
                    ok
                })
            })
            .collect();
        let mut ok = 0;
        for task in tasks {
            ok += task.await.unwrap_or(0);
        }
        let elapsed = started.elapsed();
        println!("  64 concurrent callers, JSON response:        {ok} requests in {:.0} ms = {:.0} req/s", elapsed.as_secs_f64() * 1e3, ok as f64 / elapsed.as_secs_f64());
        if let Err(e) = server.verify() {
            println!("\nthe mock rejected requests: {e}");
        }
    });
}
