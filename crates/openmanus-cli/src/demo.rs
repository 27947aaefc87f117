//! `openmanus demo`: the real Manus agent, real tools and real files, with the model's replies
//! scripted and served by a tiny OpenAI-compatible responder on 127.0.0.1 (in this binary, see
//! [`responder`]) — a first run that needs no API key and no network.

mod responder;

use std::path::Path;

use serde_json::{Value, json};

pub use responder::DemoModel;

/// The task the demo gives Manus.
pub const DEMO_TASK: &str = "Create a small Python script in the workspace that greets the \
world, run it, then change the greeting and show me the result.";

/// One scripted reply: the assistant's text, one tool call, and the usage reported for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The assistant's text.
    pub content: String,
    /// The call id.
    pub call_id: &'static str,
    /// The tool name.
    pub tool: &'static str,
    /// The call's arguments as JSON text.
    pub arguments: String,
    /// Prompt tokens reported.
    pub prompt_tokens: u64,
    /// Completion tokens reported.
    pub completion_tokens: u64,
}

fn reply(
    content: impl Into<String>,
    call_id: &'static str,
    tool: &'static str,
    arguments: &Value,
    usage: (u64, u64),
) -> Reply {
    Reply {
        content: content.into(),
        call_id,
        tool,
        arguments: arguments.to_string(),
        prompt_tokens: usage.0,
        completion_tokens: usage.1,
    }
}

/// The demo's four replies for a workspace at `workspace`, in order.
#[must_use]
pub fn script(workspace: &Path) -> Vec<Reply> {
    let script = workspace.join("hello.py");
    let code = "from pathlib import Path\n\
                Path('hello.py').write_text('print(\"Hello, world!\")\\n')\n\
                exec(Path('hello.py').read_text())";
    vec![
        reply(
            "I'll write hello.py with Python and run it to check that it works.",
            "call_1",
            "python_execute",
            &json!({ "code": code }),
            (412, 61),
        ),
        reply(
            "It prints the greeting. Now I'll change the greeting in the file.",
            "call_2",
            "str_replace_editor",
            &json!({"command": "str_replace", "path": script, "old_str": "Hello, world!",
                    "new_str": "Hello from openmanus-rs!"}),
            (598, 74),
        ),
        reply(
            "Let me run the edited script.",
            "call_3",
            "python_execute",
            &json!({"code": "exec(open('hello.py').read())"}),
            (771, 35),
        ),
        reply(
            format!(
                "Done. I created {} and changed its greeting; running it now prints \
                 \"Hello from openmanus-rs!\".",
                script.display()
            ),
            "call_4",
            "terminate",
            &json!({"status": "success"}),
            (842, 48),
        ),
    ]
}

/// Starts the demo's model with its scripted replies for a workspace at `workspace`.
///
/// # Errors
///
/// When the responder cannot bind a loopback port.
pub async fn start(workspace: &Path) -> std::io::Result<DemoModel> {
    DemoModel::start(script(workspace)).await
}
