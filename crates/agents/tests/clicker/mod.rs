//! Shared by the bubblewrap and the Docker desktop tests: the small Tk application, the
//! scripted session that drives it (open it, screenshot, click into its entry, type, click its
//! button, screenshot, click off screen) and the checks of what reached the mock.

use agent_core::ToolCall;
use agent_testkit::{Completion, MockOpenAi};
use base64::Engine as _;
use serde_json::{Value, json};

/// The application: a blue panel that turns green when its button is pressed with "hello" in
/// its entry (red with other text).
pub const APP: &str = include_str!("../../../agent-desktop/tests/fixtures/clicker.py");

/// A reply that calls one tool.
pub fn call(id: &str, name: &str, args: Value) -> Completion {
    Completion::tool_calls(None, [ToolCall::new(id, name, args.to_string())])
}

/// Polls a file of the workspace from the sandbox's shell, with a generous deadline.
pub fn wait_for(file: &str) -> Value {
    json!({"action": "execute_command", "session_name": "wait", "blocking": true, "timeout": 120,
           "command": format!("timeout 110 sh -c 'until [ -e {file} ]; do sleep 0.2; done'; cat {file}")})
}

/// Scripts the session both tests start with: `clicker.py` written and started, its window
/// waited for, a screenshot (`c1`), a click into the entry (`c2`), "hello" typed (`c3`), the
/// button clicked (`c4`), the press waited for, a screenshot (`c5`) and a click off screen
/// (`c6`). Each test scripts what follows.
pub fn script_clicker_session(server: &MockOpenAi) -> &MockOpenAi {
    server
        .push(call(
            "f1",
            "sandbox_files",
            json!({"action": "create_file", "file_path": "clicker.py", "file_contents": APP}),
        ))
        .push(call(
            "s1",
            "sandbox_shell",
            json!({"action": "execute_command", "session_name": "app",
                   "command": "/usr/bin/python3 clicker.py ready.txt"}),
        ))
        .push(call("s2", "sandbox_shell", wait_for("ready.txt")))
        .push(call("c1", "computer_use", json!({"action": "screenshot"})))
        .push(call(
            "c2",
            "computer_use",
            json!({"action": "click", "x": 120, "y": 35}),
        ))
        .push(call(
            "c3",
            "computer_use",
            json!({"action": "typing", "text": "hello"}),
        ))
        .push(call(
            "c4",
            "computer_use",
            json!({"action": "click", "x": 80, "y": 90}),
        ))
        .push(call("s3", "sandbox_shell", wait_for("pressed.txt")))
        .push(call("c5", "computer_use", json!({"action": "screenshot"})))
        .push(call(
            "c6",
            "computer_use",
            json!({"action": "click", "x": 5000, "y": 90}),
        ));
    server
}

/// The last image of a request, decoded.
pub fn last_image(body: &Value) -> image::RgbImage {
    let text = body["messages"].to_string();
    let start = text
        .rfind("data:image/png;base64,")
        .expect("an image in the request")
        + "data:image/png;base64,".len();
    let end = start + text[start..].find('"').unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&text[start..end])
        .unwrap();
    image::load_from_memory(&bytes).unwrap().to_rgb8()
}

/// Whether the panel's region is all `rgb`.
pub fn region_is(image: &image::RgbImage, rgb: [u8; 3]) -> bool {
    (170..230).all(|y| (40..200).all(|x| image.get_pixel(x, y).0 == rgb))
}

/// Whether `pid` runs (a zombie does not).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}
