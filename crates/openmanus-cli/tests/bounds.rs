//! A hostile model server (issue 35): one 20 MB streamed line. The whole `openmanus` process
//! stays under 100 MB of memory, the reply is cut and marked, and the run ends on its own
//! (here on its one-step limit).
//! (One test in this binary: the memory figure is the peak of its children.)

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use agent_testkit::MockOpenAi;
use nix::sys::resource::{UsageWho, getrusage};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::Setup;

/// A server that answers every request with one SSE event whose content is 20 MB on one line.
async fn hostile() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                // Read the request head and body (enough to reply; the client sent it whole).
                let mut buffer = vec![0_u8; 1 << 16];
                let _ = stream.read(&mut buffer).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            connection: close\r\n\r\n";
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let prefix = r#"data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""#;
                let _ = stream.write_all(prefix.as_bytes()).await;
                let block = vec![b'x'; 1 << 20];
                for _ in 0..20 {
                    if stream.write_all(&block).await.is_err() {
                        return;
                    }
                }
                let _ = stream
                    .write_all(b"\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
                    .await;
            });
        }
    });
    format!("http://{address}/v1")
}

#[tokio::test]
async fn a_20_mb_streamed_reply_keeps_the_process_under_100_mb_and_is_cut() {
    // The setup's own config points at a mock; this run points at the hostile server instead.
    let mock = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&mock);
    let base_url = hostile().await;
    std::fs::write(
        setup.dir.path().join("config/config.toml"),
        format!(
            "[llm]\nmodel = \"gpt-4o\"\nbase_url = \"{base_url}\"\napi_key = \"sk-cli-test\"\n\
             max_tokens = 1000\nmax_attempts = 1\n"
        ),
    )
    .unwrap();
    let output = tokio::time::timeout(
        Duration::from_secs(240),
        setup
            .command()
            .args([
                "--json",
                "--agent",
                "swe",
                "--set",
                "agent.max_steps=1",
                "-p",
                "Say something.",
            ])
            .output(),
    )
    .await
    .expect("openmanus did not finish")
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let peak_kib = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss();
    assert!(
        peak_kib < 100 * 1024,
        "the process peaked at {} MiB",
        peak_kib / 1024
    );
    // The one step it was given was the cut reply: the run ends on its step limit.
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("it was longer than max_tokens allows"),
        "{}",
        &stderr[stderr.len().saturating_sub(2000)..]
    );
    assert!(stdout.len() < 4 << 20, "{} bytes printed", stdout.len());
}
