//! `openmanus demo`: the real Manus agent, real tools and real files, with the model's replies
//! scripted and served by the test kit's mock OpenAI server on 127.0.0.1 — a first run that needs
//! no API key and no network.

use std::path::Path;

use agent_core::ToolCall;
use agent_testkit::{Completion, MockOpenAi};
use serde_json::json;

/// The task the demo gives Manus.
pub const DEMO_TASK: &str = "Create a small Python script in the workspace that greets the \
world, run it, then change the greeting and show me the result.";

fn call(id: &str, name: &str, args: &serde_json::Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

/// Starts the mock server with the demo's scripted replies for a workspace at `workspace`.
///
/// # Errors
///
/// When the server cannot bind a loopback port.
pub async fn start(workspace: &Path) -> std::io::Result<MockOpenAi> {
    let server = MockOpenAi::start().await?;
    let script = workspace.join("hello.py");
    let code = "from pathlib import Path\n\
                Path('hello.py').write_text('print(\"Hello, world!\")\\n')\n\
                exec(Path('hello.py').read_text())";
    server
        .push(
            Completion::tool_calls(
                Some("I'll write hello.py with Python and run it to check that it works.".into()),
                [call("call_1", "python_execute", &json!({ "code": code }))],
            )
            .with_usage(412, 61),
        )
        .push(
            Completion::tool_calls(
                Some("It prints the greeting. Now I'll change the greeting in the file.".into()),
                [call(
                    "call_2",
                    "str_replace_editor",
                    &json!({"command": "str_replace", "path": script, "old_str": "Hello, world!",
                            "new_str": "Hello from openmanus-rs!"}),
                )],
            )
            .with_usage(598, 74),
        )
        .push(
            Completion::tool_calls(
                Some("Let me run the edited script.".into()),
                [call(
                    "call_3",
                    "python_execute",
                    &json!({"code": "exec(open('hello.py').read())"}),
                )],
            )
            .with_usage(771, 35),
        )
        .push(
            Completion::tool_calls(
                Some(format!(
                    "Done. I created {} and changed its greeting; running it now prints \
                     \"Hello from openmanus-rs!\".",
                    script.display()
                )),
                [call("call_4", "terminate", &json!({"status": "success"}))],
            )
            .with_usage(842, 48),
        );
    Ok(server)
}
