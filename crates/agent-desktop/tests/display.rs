//! `computer_use` on the real virtual display of a real bubblewrap sandbox: a Tk application
//! started by a sandboxed shell is clicked and typed into through XTest, the screenshots are
//! read back by their pixels, bad arguments get clear errors, and no X process outlives the
//! sandbox.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_desktop::{COMPUTER_USE, ComputerUse};
use agent_sandbox::{LocalSandbox, LocalSandboxOptions, Sandbox};
use agent_tools::{Tool, ToolContext, ToolResult};
use base64::Engine as _;
use serde_json::{Value, json};

const APP: &str = include_str!("fixtures/clicker.py");
/// Generous: a loaded 2-core machine.
const DEADLINE: Duration = Duration::from_secs(90);

async fn wait_for_file(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < DEADLINE,
            "{} did not appear within {DEADLINE:?}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn call(tool: &ComputerUse, args: Value) -> ToolResult {
    tool.execute(args, &ToolContext::default()).await.unwrap()
}

fn decode(result: &ToolResult) -> image::RgbImage {
    let b64 = result.base64_image.as_deref().expect("an image");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    image::load_from_memory(&bytes).unwrap().to_rgb8()
}

/// Every pixel of the rectangle has this colour.
fn region_is(
    image: &image::RgbImage,
    (x0, y0, x1, y1): (u32, u32, u32, u32),
    rgb: [u8; 3],
) -> bool {
    (y0..y1).all(|y| (x0..x1).all(|x| image.get_pixel(x, y).0 == rgb))
}

/// Host processes below this test process whose command line contains `needle`.
fn our_processes(needle: &str) -> Vec<u32> {
    let me = i32::try_from(std::process::id()).unwrap();
    agent_process::processes_with(needle)
        .into_iter()
        .filter(|&pid| {
            let mut at = pid;
            for _ in 0..64 {
                match agent_process::parent_of(at) {
                    Some(p) if p == me => return true,
                    Some(p) if p > 1 => at = p,
                    _ => return false,
                }
            }
            false
        })
        .filter_map(|pid| u32::try_from(pid).ok())
        .collect()
}

/// Whether `pid` is still a live (not zombie) process.
fn alive(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(agent_process::is_running)
}

async fn wait_gone(pids: &[u32]) {
    let start = Instant::now();
    while pids.iter().any(|&pid| alive(pid)) {
        assert!(
            start.elapsed() < DEADLINE,
            "still alive: {:?}",
            pids.iter().filter(|&&p| alive(p)).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tk_app_in_the_sandbox_is_clicked_typed_into_and_seen_changing() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let sandbox: Arc<dyn Sandbox> = Arc::new(
        LocalSandbox::new(LocalSandboxOptions::new(&workspace).with_display())
            .await
            .expect("bubblewrap and Xvfb run here (cargo xtask setup installs them)"),
    );
    let display = sandbox.display().expect("the sandbox has a display");
    assert_eq!(display.name, ":0");
    assert_eq!(display.size, (1024, 768));
    assert!(alive(display.server_pid));
    let tool = ComputerUse::for_sandbox(Arc::clone(&sandbox)).unwrap();
    assert_eq!(tool.name(), COMPUTER_USE);

    // The application is started by a sandboxed shell, on the display (DISPLAY is set there).
    sandbox
        .write_file("clicker.py", APP.as_bytes())
        .await
        .unwrap();
    sandbox.start_session("app").await.unwrap();
    sandbox
        .send_to_session(
            "app",
            "echo $DISPLAY > display.txt; exec /usr/bin/python3 clicker.py ready.txt 2> app.err\n",
        )
        .await
        .unwrap();
    wait_for_file(&workspace.join("ready.txt")).await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("display.txt")).unwrap(),
        ":0\n"
    );
    let app = our_processes("clicker.py");
    assert!(!app.is_empty(), "the app runs below this process");

    let before = call(&tool, json!({"action": "screenshot"})).await;
    assert!(before.error.is_none(), "{before:?}");
    let output = before.output.clone().unwrap();
    assert!(
        output.starts_with("Screenshot saved as screenshots/screenshot_")
            && output.ends_with(".png"),
        "{output}"
    );
    let saved = output.trim_start_matches("Screenshot saved as ");
    assert!(workspace.join(saved).is_file());
    assert!(workspace.join("latest_screenshot.png").is_file());
    let image = decode(&before);
    assert_eq!(image.dimensions(), (1024, 768));
    assert!(
        region_is(&image, (40, 170, 200, 230), [0, 0, 255]),
        "the panel starts blue"
    );

    let r = call(&tool, json!({"action": "click", "x": 120, "y": 35})).await;
    assert_eq!(
        r.output.as_deref(),
        Some("1 left click(s) performed at (120, 35)"),
        "{r:?}"
    );
    let r = call(&tool, json!({"action": "typing", "text": "hello"})).await;
    assert_eq!(r.output.as_deref(), Some("Typed: hello"), "{r:?}");
    let r = call(&tool, json!({"action": "move_to", "x": 80.4, "y": 90})).await;
    assert_eq!(r.output.as_deref(), Some("Moved to (80, 90)"), "{r:?}");
    // A click without coordinates acts where the pointer was left.
    let r = call(&tool, json!({"action": "click"})).await;
    assert_eq!(
        r.output.as_deref(),
        Some("1 left click(s) performed at (80, 90)"),
        "{r:?}"
    );
    wait_for_file(&workspace.join("pressed.txt")).await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("pressed.txt")).unwrap(),
        "hello"
    );

    let after = decode(&call(&tool, json!({"action": "screenshot"})).await);
    assert!(
        region_is(&after, (40, 170, 200, 230), [0, 255, 0]),
        "the panel turned green: the typed text was exactly `hello` when the button was clicked"
    );

    // Characters missing from the keyboard map are typed too (bound to spare keycodes).
    std::fs::remove_file(workspace.join("pressed.txt")).unwrap();
    call(&tool, json!({"action": "click", "x": 120, "y": 35})).await;
    let r = call(&tool, json!({"action": "press", "key": "end"})).await;
    assert_eq!(r.output.as_deref(), Some("Pressed key: end"));
    let r = call(&tool, json!({"action": "typing", "text": "é€"})).await;
    assert_eq!(r.output.as_deref(), Some("Typed: é€"), "{r:?}");
    call(&tool, json!({"action": "click", "x": 80, "y": 90})).await;
    wait_for_file(&workspace.join("pressed.txt")).await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("pressed.txt")).unwrap(),
        "helloé€"
    );
    let red = decode(&call(&tool, json!({"action": "screenshot"})).await);
    assert!(
        region_is(&red, (40, 170, 200, 230), [255, 0, 0]),
        "any other text turns it red"
    );

    // The other actions, with OpenManus's texts.
    let r = call(&tool, json!({"action": "scroll", "amount": -3})).await;
    assert_eq!(
        r.output.as_deref(),
        Some("Scrolled down 3 step(s) at position (80, 90)")
    );
    let r = call(&tool, json!({"action": "scroll", "amount": 25})).await;
    assert_eq!(
        r.output.as_deref(),
        Some("Scrolled up 10 step(s) at position (80, 90)")
    );
    let r = call(&tool, json!({"action": "press", "key": "Tab"})).await;
    assert_eq!(r.output.as_deref(), Some("Pressed key: tab"));
    let r = call(&tool, json!({"action": "hotkey", "keys": " ctrl+a "})).await;
    assert_eq!(r.output.as_deref(), Some("Pressed key combination: ctrl+a"));
    let r = call(&tool, json!({"action": "mouse_down", "x": 300, "y": 200})).await;
    assert_eq!(
        r.output.as_deref(),
        Some("left button pressed at (300, 200)")
    );
    let r = call(&tool, json!({"action": "mouse_up", "button": "left"})).await;
    assert_eq!(
        r.output.as_deref(),
        Some("left button released at (300, 200)")
    );
    let r = call(&tool, json!({"action": "drag_to", "x": 350, "y": 250})).await;
    assert_eq!(
        r.output.as_deref(),
        Some("Dragged from (300, 200) to (350, 250)")
    );
    let r = call(&tool, json!({"action": "wait", "duration": 0})).await;
    assert_eq!(r.output.as_deref(), Some("Waited 0 seconds"));

    // Bad arguments: clear errors, nothing sent.
    let errors = [
        (
            json!({"action": "click", "x": 2000, "y": 10}),
            "Failed to click: (2000, 10) is off the screen, which is 1024x768 (x from 0 to 1023, y from 0 to 767)",
        ),
        (
            json!({"action": "move_to", "x": -1, "y": 10}),
            "Failed to move: (-1, 10) is off the screen, which is 1024x768 (x from 0 to 1023, y from 0 to 767)",
        ),
        (
            json!({"action": "move_to", "x": 5}),
            "x and y coordinates are required",
        ),
        (json!({"action": "typing"}), "Text is required for typing"),
        (
            json!({"action": "press"}),
            "Key is required for press action",
        ),
        (
            json!({"action": "hotkey"}),
            "Keys are required for hotkey action",
        ),
        (json!({"action": "scroll"}), "Scroll amount is required"),
        (json!({"action": "fly"}), "Unknown action: fly"),
        (
            json!({"action": "click", "button": "thumb"}),
            "Failed to click: unknown mouse button \"thumb\" (one of left, right, middle)",
        ),
        (
            json!({"action": "click", "num_clicks": 5}),
            "Failed to click: num_clicks must be 1, 2 or 3, not 5",
        ),
        (
            json!({"action": "click", "x": "far"}),
            "Computer action failed: x must be a number, not \"far\"",
        ),
    ];
    for (args, expected) in errors {
        let r = call(&tool, args.clone()).await;
        assert_eq!(r.error.as_deref(), Some(expected), "{args}");
    }
    let r = call(&tool, json!({"action": "press", "key": "banana"})).await;
    let error = r.error.unwrap();
    assert!(
        error.starts_with("Failed to press key: unknown key \"banana\" (known keys: a, b, c"),
        "{error}"
    );
    let r = call(&tool, json!({"action": "hotkey", "keys": "ctrl+hyper"})).await;
    assert!(
        r.error
            .unwrap()
            .starts_with("Failed to press keys: unknown key \"hyper\"")
    );

    // The display and everything on it end with the sandbox.
    let mut pids = app.clone();
    pids.push(display.server_pid);
    tool.cleanup().await.unwrap();
    sandbox.cleanup().await.unwrap();
    wait_gone(&pids).await;
    assert!(sandbox.display().is_some(), "the endpoint stays known");
    let r = call(&tool, json!({"action": "screenshot"})).await;
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .starts_with("Failed to capture screenshot: cannot connect to the display"),
        "{r:?}"
    );
}

#[tokio::test]
async fn a_sandbox_without_a_display_offers_no_computer_use() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox: Arc<dyn Sandbox> = Arc::new(
        LocalSandbox::new(LocalSandboxOptions::new(dir.path()))
            .await
            .unwrap(),
    );
    assert!(sandbox.display().is_none());
    assert!(ComputerUse::for_sandbox(Arc::clone(&sandbox)).is_none());
    let out = sandbox
        .run("echo \"[$DISPLAY]\"; ls -A /tmp", None)
        .await
        .unwrap();
    assert_eq!(out.stdout, "[]\n", "no DISPLAY and no X socket directory");
}

#[tokio::test]
async fn dropping_the_sandbox_kills_its_x_server() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = LocalSandbox::new(LocalSandboxOptions::new(dir.path()).with_display())
        .await
        .unwrap();
    let display = sandbox.display().unwrap().clone();
    assert!(display.socket.exists());
    assert!(alive(display.server_pid));
    drop(sandbox);
    wait_gone(&[display.server_pid]).await;
    assert!(!display.socket.exists(), "the socket directory is removed");
}
