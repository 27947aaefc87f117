//! Manus completes the demo task (write hello.py, run it, change the greeting, run it again)
//! through every way of reaching a model: native OpenAI function calling, text-mode tool calls
//! (`<tool_call>` tags and fenced JSON), `auto` against a server that refuses `tools` with
//! Ollama's 400, and Anthropic's Messages API natively, streamed and not. Each run checks the
//! file, the printed answer and that every request passed the strict mock's validator.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use agent_core::ToolCall;
use agent_testkit::{Completion, MockAnthropic, MockOpenAi};
use serde_json::{Value, json};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_openmanus");
const TASK: &str = "Create a small Python script in the workspace that greets the world, run it, \
                    then change the greeting and show me the result.";

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(llm_section: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
        std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
        std::fs::write(
            dir.path().join("config/config.toml"),
            format!("[llm]\n{llm_section}max_tokens = 1024\ntemperature = 0.0\nmax_attempts = 1\n"),
        )
        .unwrap();
        Self { dir }
    }

    fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace").canonicalize().unwrap()
    }

    async fn run(&self, args: &[&str]) -> Output {
        self.run_with_env(args, &[]).await
    }

    async fn run_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(BIN);
        command.envs(env.iter().copied());
        command
            .current_dir(self.dir.path())
            .env_remove("OPENMANUS_CONFIG")
            .env("NO_COLOR", "1")
            .env("TMPDIR", self.dir.path().join("tmp"))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .args(args);
        tokio::time::timeout(Duration::from_secs(120), command.output())
            .await
            .expect("openmanus did not finish")
            .unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The demo's four steps for `workspace`: (text, tool, arguments).
fn demo_steps(workspace: &Path) -> Vec<(String, &'static str, Value)> {
    let script = workspace.join("hello.py");
    let code = "from pathlib import Path\n\
                Path('hello.py').write_text('print(\"Hello, world!\")\\n')\n\
                exec(Path('hello.py').read_text())";
    vec![
        (
            "I'll write hello.py with Python and run it.".to_owned(),
            "python_execute",
            json!({"code": code}),
        ),
        (
            "It prints the greeting. Now I'll change it.".to_owned(),
            "str_replace_editor",
            json!({"command": "str_replace", "path": script, "old_str": "Hello, world!",
                   "new_str": "Hello from openmanus-rs!"}),
        ),
        (
            "Let me run the edited script.".to_owned(),
            "python_execute",
            json!({"code": "exec(open('hello.py').read())"}),
        ),
        (
            format!(
                "Done. I created {} and changed its greeting; it now prints \"Hello from openmanus-rs!\".",
                script.display()
            ),
            "terminate",
            json!({"status": "success"}),
        ),
    ]
}

fn native_replies(workspace: &Path) -> Vec<Completion> {
    demo_steps(workspace)
        .into_iter()
        .enumerate()
        .map(|(i, (text, tool, args))| {
            Completion::tool_calls(
                Some(text),
                [ToolCall::new(format!("toolu_{i}"), tool, args.to_string())],
            )
        })
        .collect()
}

/// Checks the files and the answer of a finished demo run.
fn assert_demo_done(setup: &Setup, output: &Output) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(setup.workspace().join("hello.py")).unwrap(),
        "print(\"Hello from openmanus-rs!\")\n"
    );
    assert!(
        stderr.contains("Hello, world!"),
        "the first run printed:\n{stderr}"
    );
    assert!(
        stderr.contains("Hello from openmanus-rs!"),
        "the edited script ran:\n{stderr}"
    );
    let stdout = text(&output.stdout);
    assert!(stdout.starts_with("Done. I created"), "{stdout}");
}

#[tokio::test]
async fn native_openai() {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&format!(
        "model = \"gpt-4o\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    for reply in native_replies(&setup.workspace()) {
        server.push(reply);
    }
    let output = setup.run(&["--prompt", TASK]).await;
    assert_demo_done(&setup, &output);
    server.verify().unwrap();
    assert_eq!(server.request_count(), 4);
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.body.get("tools").is_some())
    );
}

/// Text-mode replies: each step's text followed by its call in `render`'s format.
async fn text_mode_run(mode: &str, render: fn(&str, &Value) -> String, refuse_tools: bool) {
    let server = MockOpenAi::start().await.unwrap();
    if refuse_tools {
        server.reject_tools("gemma3");
    }
    let setup = Setup::new(&format!(
        "api_type = \"ollama\"\nmodel = \"gemma3\"\nbase_url = \"{}\"\ntool_call_mode = \"{mode}\"\n",
        server.base_url()
    ));
    for (text, tool, args) in demo_steps(&setup.workspace()) {
        server.push_text(format!("{text}\n{}", render(tool, &args)));
    }
    let output = setup.run(&["--prompt", TASK]).await;
    assert_demo_done(&setup, &output);
    server.verify().unwrap();
    let requests = server.requests();
    let refused = usize::from(refuse_tools);
    assert_eq!(requests.len(), 4 + refused);
    if refuse_tools {
        assert!(
            requests[0].body.get("tools").is_some(),
            "auto tries native first"
        );
    }
    for request in &requests[refused..] {
        assert!(
            request.body.get("tools").is_none(),
            "text mode sends no tools"
        );
        let system = request.messages()[0]["content"].as_str().unwrap();
        assert!(system.contains("<tool_call>") && system.contains("str_replace_editor"));
    }
    // The results went back as text the model reads.
    let last = requests.last().unwrap().messages();
    assert!(
        last.iter().any(|m| m["role"] == "user"
            && m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("<tool_response name=\"python_execute\">")
                    && c.contains("Hello from openmanus-rs!"))),
        "{last:#?}"
    );
}

fn tagged(tool: &str, args: &Value) -> String {
    format!(
        "<tool_call>\n{}\n</tool_call>",
        json!({"name": tool, "arguments": args})
    )
}

fn fenced(tool: &str, args: &Value) -> String {
    format!(
        "```json\n{}\n```",
        serde_json::to_string_pretty(&json!({"name": tool, "arguments": args})).unwrap()
    )
}

#[tokio::test]
async fn text_mode_with_tool_call_tags() {
    text_mode_run("text", tagged, false).await;
}

#[tokio::test]
async fn text_mode_with_fenced_json() {
    text_mode_run("text", fenced, false).await;
}

#[tokio::test]
async fn auto_switches_to_text_after_ollamas_400() {
    text_mode_run("auto", tagged, true).await;
}

async fn anthropic_run(stream: bool) {
    let server = MockAnthropic::start().await.unwrap();
    server.require_api_key("sk-ant-cli");
    let setup = Setup::new(&format!(
        "api_type = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{}\"\napi_key = \"sk-ant-cli\"\nstream = {stream}\n",
        server.base_url()
    ));
    for reply in native_replies(&setup.workspace()) {
        server.push(reply);
    }
    let output = setup.run(&["--prompt", TASK]).await;
    assert_demo_done(&setup, &output);
    server.verify().unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|r| r.is_stream() == stream));
    // The system prompt and tools were written to the cache once and read from it afterwards.
    assert_eq!(server.cache_use(), (1, 3));
}

#[tokio::test]
async fn native_anthropic_streamed() {
    anthropic_run(true).await;
}

#[tokio::test]
async fn native_anthropic_not_streamed() {
    anthropic_run(false).await;
}

// Bedrock is in the binary with the `bedrock` feature (`cargo xtask ci` tests every feature).
#[cfg(feature = "bedrock")]
#[tokio::test]
async fn bedrock_through_the_aws_sdk_against_a_local_endpoint() {
    let server = agent_testkit::MockBedrock::start().await.unwrap();
    let setup = Setup::new(&format!(
        "api_type = \"aws\"\nmodel = \"anthropic.claude-3-7-sonnet-20250219-v1:0\"\nbase_url = \"{}\"\n",
        server.endpoint()
    ));
    for reply in native_replies(&setup.workspace()) {
        server.push(reply);
    }
    // Region and credentials from the AWS environment, as the SDK resolves them; nothing else
    // of this machine's AWS set-up is read.
    let missing = setup.dir.path().join("no-such-aws-file");
    let missing = missing.to_str().unwrap();
    let env = [
        ("AWS_REGION", "eu-west-3"),
        ("AWS_ACCESS_KEY_ID", "AKIDOPENMANUSTEST"),
        ("AWS_SECRET_ACCESS_KEY", "not-a-secret"),
        ("AWS_CONFIG_FILE", missing),
        ("AWS_SHARED_CREDENTIALS_FILE", missing),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("AWS_PROFILE", "default"),
    ];
    let output = setup.run_with_env(&["--prompt", TASK], &env).await;
    assert_demo_done(&setup, &output);
    server.verify().unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        requests[0]
            .header("authorization")
            .unwrap()
            .contains("AKIDOPENMANUSTEST/")
            && requests[0]
                .header("authorization")
                .unwrap()
                .contains("/eu-west-3/bedrock/"),
        "{:?}",
        requests[0].header("authorization")
    );
}

/// Bedrock's streamed text reaches `--json` as `text_delta` lines while the mock still holds the
/// rest of the ConverseStream reply; once released, the run finishes.
// Bedrock is in the binary with the `bedrock` feature (`cargo xtask ci` tests every feature).
#[cfg(feature = "bedrock")]
#[tokio::test]
async fn bedrock_streams_text_to_the_json_output_before_the_reply_ends() {
    use tokio::io::{AsyncBufReadExt, BufReader};

    let server = agent_testkit::MockBedrock::start().await.unwrap();
    let setup = Setup::new(&format!(
        "api_type = \"aws\"\nmodel = \"anthropic.claude-3-7-sonnet-20250219-v1:0\"\nbase_url = \"{}\"\n",
        server.endpoint()
    ));
    let gate = agent_testkit::StreamGate::new();
    let text = "Streaming this reply slowly.";
    server.push(agent_testkit::BedrockReply::HeldStream {
        reply: Completion::tool_calls(
            Some(text.into()),
            [ToolCall::new(
                "tooluse_1",
                "terminate",
                json!({"status": "success"}).to_string(),
            )],
        ),
        // messageStart and the first text delta.
        after_events: 2,
        gate: gate.clone(),
    });
    let missing = setup.dir.path().join("no-such-aws-file");
    let mut child = Command::new(BIN)
        .current_dir(setup.dir.path())
        .env_remove("OPENMANUS_CONFIG")
        .env("NO_COLOR", "1")
        .env("TMPDIR", setup.dir.path().join("tmp"))
        .env("AWS_REGION", "eu-west-3")
        .env("AWS_ACCESS_KEY_ID", "AKIDOPENMANUSTEST")
        .env("AWS_SECRET_ACCESS_KEY", "not-a-secret")
        .env("AWS_CONFIG_FILE", &missing)
        .env("AWS_SHARED_CREDENTIALS_FILE", &missing)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_PROFILE", "default")
        .args(["--no-store", "--json", "-p", "Stream."])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let delta = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let event: Value = serde_json::from_str(&line).unwrap();
            if event["type"] == "text_delta" {
                return event;
            }
        }
        panic!("no text_delta line before the output ended");
    })
    .await
    .expect("no text_delta within 60 s");
    let first = delta["text"].as_str().unwrap();
    assert!(
        text.starts_with(first) && first.len() < text.len(),
        "{delta}"
    );
    assert!(child.try_wait().unwrap().is_none(), "the run ended already");
    gate.release();
    let mut streamed = first.to_owned();
    while let Some(line) = lines.next_line().await.unwrap() {
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "text_delta" {
            streamed.push_str(event["text"].as_str().unwrap());
        }
    }
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("openmanus did not finish")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(streamed, text);
    server.verify().unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].path.ends_with("/converse-stream"),
        "{}",
        requests[0].path
    );
}

#[tokio::test]
async fn config_check_reports_the_api_and_the_tool_call_mode() {
    let setup = Setup::new(
        "api_type = \"ollama\"\nmodel = \"gemma3\"\nbase_url = \"http://127.0.0.1:9/v1\"\ntool_call_mode = \"auto\"\n\n[llm.swe]\napi_type = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"http://127.0.0.1:9\"\ntool_call_mode = \"native\"\n",
    );
    let output = setup.run(&["config", "check"]).await;
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{all}");
    assert!(
        all.contains("Manus: gemma3 through Ollama (OpenAI-compatible); tool calls: auto"),
        "{all}"
    );
    assert!(
        all.contains("swe: claude-sonnet-4-5 through Anthropic's Messages API; tool calls: native"),
        "{all}"
    );
}

/// A text-mode run with `--json`: the model's markup, streamed in pieces of a few characters
/// (tags and fences cut across them), never reaches the `text_delta` lines, and each step's
/// deltas add up to its thought, which is the step's prose.
async fn text_mode_deltas(render: fn(&str, &Value) -> String) {
    let server = MockOpenAi::start().await.unwrap();
    let setup = Setup::new(&format!(
        "api_type = \"ollama\"\nmodel = \"gemma3\"\nbase_url = \"{}\"\ntool_call_mode = \"text\"\n",
        server.base_url()
    ));
    let steps = demo_steps(&setup.workspace());
    for (text, tool, args) in &steps {
        server.push_text(format!("{text}\n{}\n", render(tool, args)));
    }
    let output = setup.run(&["--no-store", "--json", "--prompt", TASK]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    server.verify().unwrap();
    assert!(server.requests().iter().all(|r| r.is_stream()));
    let lines: Vec<Value> = text(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Each step's deltas, and its thought.
    let mut per_step: Vec<(Vec<String>, String)> = Vec::new();
    for line in &lines {
        match line["type"].as_str().unwrap() {
            "step_started" => per_step.push((Vec::new(), String::new())),
            "text_delta" => per_step
                .last_mut()
                .unwrap()
                .0
                .push(line["text"].as_str().unwrap().to_owned()),
            "thought" => line["content"]
                .as_str()
                .unwrap()
                .clone_into(&mut per_step.last_mut().unwrap().1),
            _ => {}
        }
    }
    assert_eq!(per_step.len(), steps.len(), "{per_step:?}");
    for ((deltas, thought), (prose, tool, _)) in per_step.iter().zip(&steps) {
        for delta in deltas {
            for markup in [
                "<tool",
                "tool_call>",
                "```",
                "\"name\"",
                "\"arguments\"",
                tool,
            ] {
                assert!(!delta.contains(markup), "{markup:?} in the delta {delta:?}");
            }
        }
        assert!(deltas.len() > 3, "streamed in pieces: {deltas:?}");
        assert_eq!(&deltas.concat(), prose, "{deltas:?}");
        assert_eq!(thought, prose);
    }
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["status"], "finished");
    assert_eq!(
        std::fs::read_to_string(setup.workspace().join("hello.py")).unwrap(),
        "print(\"Hello from openmanus-rs!\")\n"
    );
}

#[tokio::test]
async fn text_mode_deltas_carry_no_tool_call_tags() {
    text_mode_deltas(tagged).await;
}

#[tokio::test]
async fn text_mode_deltas_carry_no_fenced_calls() {
    text_mode_deltas(fenced).await;
}
