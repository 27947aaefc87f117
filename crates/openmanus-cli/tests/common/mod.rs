//! Helpers shared by the command line's integration tests.

use agent_core::ToolCall;
use serde_json::Value;

/// A tool call the scripted model makes.
pub fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

/// Whether process `pid` exists and is not a zombie (a zombie is as good as gone: it runs
/// nothing).
#[allow(dead_code)] // not every test binary checks processes
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or_default()
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}
