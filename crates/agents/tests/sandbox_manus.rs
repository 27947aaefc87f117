//! SandboxManus end to end: the real HTTP LLM client against the strict mock OpenAI server, and
//! all four sandbox tools working inside a real bubblewrap sandbox whose workspace appears at
//! `/workspace` — the shell in named sessions, the files, a Chromium started inside the sandbox
//! opening a page of the sandbox workspace, and an image seen through `sandbox_vision`.

#![cfg(feature = "browser")]
// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::{Agent, FinishReason, Role, RunStatus, ToolCall};
use agent_llm::{LlmClient, LlmSettings};
use agent_sandbox::{LocalSandbox, LocalSandboxOptions};
use agent_testkit::{Completion, MockOpenAi};
use agents::{AgentOptions, SANDBOX_MANUS, sandbox_manus};
use serde_json::{Value, json};

/// A 1x1 PNG.
const DOT_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

const PAGE: &str = "<!doctype html><html><head><title>Draft page</title></head><body><h1>Hello</h1><input name=q></body></html>";

fn call(id: &str, name: &str, args: Value) -> Completion {
    Completion::tool_calls(None, [ToolCall::new(id, name, args.to_string())])
}

/// The parent of `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The Chromium processes this test program started (its descendants: the program is a child
/// subreaper, so they stay in its tree), not those of other test programs running beside it.
fn chromium_processes() -> Vec<u32> {
    let me = std::process::id();
    let ours = |mut pid: u32| {
        for _ in 0..64 {
            match parent_of(pid) {
                Some(parent) if parent == me => return true,
                Some(parent) if parent > 1 => pid = parent,
                _ => return false,
            }
        }
        false
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            (String::from_utf8_lossy(&cmdline).contains("openmanus-chromium-") && ours(pid))
                .then_some(pid)
        })
        .collect()
}

#[tokio::test]
async fn sandbox_manus_uses_all_four_sandbox_tools_inside_bubblewrap() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let sandbox = Arc::new(
        LocalSandbox::new(LocalSandboxOptions::new(&workspace))
            .await
            .expect("bubblewrap sandboxes run here (cargo xtask setup installs bubblewrap)"),
    );
    let server = MockOpenAi::start().await.unwrap();
    server
        .push(call(
            "f1",
            "sandbox_files",
            json!({"action": "create_file", "file_path": "site/index.html", "file_contents": PAGE}),
        ))
        .push(call(
            "f2",
            "sandbox_files",
            json!({"action": "str_replace", "file_path": "site/index.html", "old_str": "Draft page", "new_str": "Sandboxed page"}),
        ))
        .push(call(
            "s1",
            "sandbox_shell",
            json!({"action": "execute_command", "session_name": "main", "folder": "site", "blocking": true,
                   "command": format!("echo {DOT_PNG} | base64 -d > dot.png && pwd && ls")}),
        ))
        .push(call(
            "s2",
            "sandbox_shell",
            json!({"action": "execute_command", "session_name": "bg", "command": "sleep 0.2; echo $((6*7))"}),
        ))
        .push(call("s3", "sandbox_shell", json!({"action": "list_commands"})))
        .push(call(
            "s4",
            "sandbox_shell",
            json!({"action": "check_command_output", "session_name": "bg", "blocking": true, "timeout": 30}),
        ))
        .push(call(
            "s5",
            "sandbox_shell",
            json!({"action": "execute_command", "session_name": "main", "blocking": true,
                   "command": "touch /etc/escaped; echo status=$?"}),
        ))
        .push(call("s6", "sandbox_shell", json!({"action": "terminate_command", "session_name": "bg"})))
        .push(call(
            "v1",
            "sandbox_vision",
            json!({"action": "see_image", "file_path": "site/dot.png"}),
        ))
        .push(call(
            "b1",
            "sandbox_browser",
            json!({"action": "go_to_url", "url": "file:///workspace/site/index.html"}),
        ))
        .push(call(
            "b2",
            "sandbox_browser",
            json!({"action": "input_text", "index": 0, "text": "inside"}),
        ))
        .push(call("f3", "sandbox_files", json!({"action": "read_file", "file_path": "site/index.html"})))
        .push(Completion::tool_calls(
            Some("All done in the sandbox.".into()),
            [ToolCall::new("t1", "terminate", r#"{"status":"success"}"#)],
        ));
    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-sandbox");
    settings.max_attempts = 1;
    let llm = Arc::new(LlmClient::new(settings).unwrap());
    let mut agent = sandbox_manus(llm, &AgentOptions::new(&workspace), sandbox.clone());
    assert_eq!(agent.base().name, SANDBOX_MANUS);
    let outcome = tokio::time::timeout(
        Duration::from_secs(180),
        agent.run(Some("Build a page in the sandbox and look at it.".into())),
    )
    .await
    .expect("the agent hung")
    .unwrap();
    assert!(
        matches!(&outcome.status, RunStatus::Finished(FinishReason::SpecialTool { name }) if name == "terminate"),
        "{outcome:?}"
    );
    server.verify().unwrap();
    assert_eq!(server.remaining(), 0);

    let requests = server.requests();
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        [
            "sandbox_shell",
            "sandbox_files",
            "sandbox_browser",
            "sandbox_vision",
            "ask_human",
            "terminate"
        ]
    );
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("/workspace"), "{system}");

    let seen: Vec<String> = agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text().to_owned())
        .collect();
    let json_of = |i: usize| -> Value {
        let text = seen[i].split_once("executed:\n").unwrap().1;
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    assert!(
        seen[0].ends_with("File 'site/index.html' created successfully."),
        "{}",
        seen[0]
    );
    assert!(seen[1].ends_with("Replacement successful."), "{}", seen[1]);
    // The blocking command ran in /workspace/site, inside the sandbox, and finished with 0.
    let s1 = json_of(2);
    assert_eq!(s1["completed"], true);
    assert_eq!(s1["exit_code"], 0);
    assert_eq!(s1["cwd"], "/workspace/site");
    assert_eq!(s1["output"], "/workspace/site\ndot.png\nindex.html");
    // The non-blocking one returned at once; the blocking check got its result.
    let s2 = json_of(3);
    assert_eq!(s2["completed"], false);
    assert_eq!(s2["session_name"], "bg");
    let s3 = json_of(4);
    assert_eq!(s3["message"], "Found 2 active sessions.");
    assert_eq!(s3["sessions"], json!(["bg", "main"]));
    let s4 = json_of(5);
    assert_eq!(s4["output"], "42");
    assert_eq!(s4["status"], "Command finished (exit code 0).");
    // The host's /etc is read-only in the sandbox.
    let s5 = json_of(6);
    assert!(s5["output"].as_str().unwrap().ends_with("status=1"), "{s5}");
    assert!(!std::path::Path::new("/etc/escaped").exists());
    assert_eq!(
        json_of(7)["message"],
        "Session 'bg' terminated successfully."
    );
    // The image was attached to the observation and reached the model as an image.
    assert!(
        seen[8].contains("Loaded the image 'site/dot.png' (1x1"),
        "{}",
        seen[8]
    );
    let after_vision = requests[9].body["messages"].to_string();
    assert!(
        after_vision.contains("data:image/png;base64,"),
        "the image reached the model"
    );
    // Chromium inside the sandbox opened the workspace page (/workspace exists only there).
    assert!(
        seen[9].ends_with("Navigated to file:///workspace/site/index.html"),
        "{}",
        seen[9]
    );
    assert!(
        seen[10].ends_with("Input 'inside' into element at index 0"),
        "{}",
        seen[10]
    );
    let browsing = requests[10].body["messages"].to_string();
    assert!(browsing.contains("Title: Sandboxed page"), "{browsing}");
    // The browser prompt names the tool SandboxManus has.
    assert!(
        browsing.contains("Act with `sandbox_browser`"),
        "{browsing}"
    );
    assert!(!browsing.contains("`browser_use`"), "{browsing}");
    assert!(
        seen[11].contains("<title>Sandboxed page</title>"),
        "{}",
        seen[11]
    );

    // The files are in the host workspace.
    assert!(workspace.join("site/dot.png").is_file());
    assert!(
        std::fs::read_to_string(workspace.join("site/index.html"))
            .unwrap()
            .contains("Sandboxed page")
    );
    // The run's end closed the sandboxed browser and the sessions.
    for _ in 0..100 {
        if chromium_processes().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        chromium_processes().is_empty(),
        "{:?}",
        chromium_processes()
    );
    assert!(
        agent_sandbox::Sandbox::list_sessions(sandbox.as_ref())
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn the_sandboxed_browser_reaches_no_network_unless_enabled() {
    use agent_browser::{BrowserConfig, BrowserUseTool};
    use agent_tools::{Tool, ToolContext};

    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    // A page on the host's loopback.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        while let Ok((mut stream, _)) = listener.accept().await {
            let body = "<title>host page</title>";
            let _ = stream
                .write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                )
                .await;
        }
    });
    let sandbox = Arc::new(
        LocalSandbox::new(LocalSandboxOptions::new(&workspace))
            .await
            .unwrap(),
    );
    let llm = Arc::new(agent_testkit::ScriptedModel::new());
    // A configured browser to attach to is not used by the sandboxed tool.
    let mut options = AgentOptions::new(&workspace);
    options.browser.connect_url = Some(format!("http://{addr}"));
    let agent = sandbox_manus(llm, &options, sandbox);
    let browser = agent.hooks().browser().unwrap().tool().clone();
    let result = browser
        .execute(
            json!({"action": "go_to_url", "url": format!("http://{addr}/")}),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    let error = result.error.unwrap_or_default();
    assert!(
        error.starts_with("Browser action 'go_to_url' failed: navigation to"),
        "{error}"
    );
    browser.cleanup().await.unwrap();
    // The same page opens for a browser outside the sandbox: the failure is the sandbox's.
    let outside = BrowserUseTool::with_config(BrowserConfig::default());
    let result = outside
        .execute(
            json!({"action": "go_to_url", "url": format!("http://{addr}/")}),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    assert!(result.error.is_none(), "{result:?}");
    outside.cleanup().await.unwrap();
}
