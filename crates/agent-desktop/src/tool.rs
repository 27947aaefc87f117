//! `computer_use`: OpenManus's desktop automation tool (its schema and result texts are
//! compatibility facts) on a sandbox's virtual display.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_sandbox::{DisplayEndpoint, Sandbox};
use agent_tools::{Tool, ToolContext, ToolError, ToolResult};
use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{Value, json};
use tracing::debug;

use crate::DesktopError;
use crate::args::{Args, round, seconds_text, x_button};
use crate::keys::{KEYBOARD_KEYS, MOUSE_BUTTONS, keysyms_of_combination, known_keys};
use crate::screenshot::{encode, timestamp};
use crate::x11::XClient;

/// The tool's name.
pub const COMPUTER_USE: &str = "computer_use";

const DESCRIPTION: &str = "\
A comprehensive computer automation tool that allows interaction with the desktop environment.
* This tool provides commands for controlling mouse, keyboard, and taking screenshots
* It maintains state including current mouse position
* Use this when you need to automate desktop applications, fill forms, or perform GUI interactions
Key capabilities include:
* Mouse Control: Move, click, drag, scroll
* Keyboard Input: Type text, press keys or key combinations
* Screenshots: Capture and save screen images
* Waiting: Pause execution for specified duration
";

const ACTIONS: &[&str] = &[
    "move_to",
    "click",
    "scroll",
    "typing",
    "press",
    "wait",
    "mouse_down",
    "mouse_up",
    "drag_to",
    "hotkey",
    "screenshot",
];

/// The pause between typed characters (OpenManus's `interval`).
const TYPING_INTERVAL: Duration = Duration::from_millis(10);
/// How long a drag takes (OpenManus's `duration`), in this many pointer moves.
const DRAG_TIME: Duration = Duration::from_millis(300);
const DRAG_STEPS: u32 = 10;

/// What the tool keeps between calls: the X connection (opened on first use) and the pointer
/// position it tracks (OpenManus tracks it locally, starting at (0, 0)).
#[derive(Debug, Default)]
struct State {
    client: Option<XClient>,
    mouse: (u32, u32),
}

/// `computer_use` on a sandbox's display: pointer, buttons, wheel, keyboard and screenshots
/// through [`XClient`], screenshots saved in the sandbox workspace as OpenManus does
/// (`screenshots/screenshot_{timestamp}.png` and `latest_screenshot.png`) and attached to the
/// result.
pub struct ComputerUse {
    display: DisplayEndpoint,
    sandbox: Arc<dyn Sandbox>,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for ComputerUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComputerUse")
            .field("display", &self.display)
            .finish_non_exhaustive()
    }
}

impl ComputerUse {
    /// The tool on `sandbox`'s display, or `None` when the sandbox has none.
    #[must_use]
    pub fn for_sandbox(sandbox: Arc<dyn Sandbox>) -> Option<Self> {
        let display = sandbox.display()?;
        Some(Self {
            display,
            sandbox,
            state: Arc::default(),
        })
    }

    /// The display the tool drives.
    #[must_use]
    pub fn display(&self) -> &DisplayEndpoint {
        &self.display
    }

    /// Runs `work` with the connection (opened first if needed) and the tracked pointer, on the
    /// blocking pool. A failed action drops the connection, so the next call reconnects.
    async fn with_client<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut XClient, &mut (u32, u32)) -> Result<T, DesktopError> + Send + 'static,
    ) -> Result<T, DesktopError> {
        let state = Arc::clone(&self.state);
        let socket = self.display.socket.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            let State { client, mouse } = &mut *state;
            let client = match client {
                Some(client) => client,
                None => client.insert(XClient::connect(&socket)?),
            };
            let result = work(client, mouse);
            if matches!(
                result,
                Err(DesktopError::X11(_) | DesktopError::Connect { .. })
            ) {
                state.client = None;
            }
            result
        })
        .await;
        joined.map_err(|e| DesktopError::X11(format!("the X11 task failed: {e}")))?
    }

    /// `Some(error text)` when `(x, y)` is off the screen.
    fn off_screen(&self, x: i64, y: i64) -> Option<String> {
        let (w, h) = self.display.size;
        let inside = (0..i64::from(w)).contains(&x) && (0..i64::from(h)).contains(&y);
        (!inside).then(|| {
            format!(
                "({x}, {y}) is off the screen, which is {w}x{h} (x from 0 to {}, y from 0 to {})",
                w.saturating_sub(1),
                h.saturating_sub(1)
            )
        })
    }

    /// The point to act on: the given coordinates, else the tracked pointer; checked against
    /// the screen.
    fn point(
        &self,
        x: Option<f64>,
        y: Option<f64>,
        mouse: (u32, u32),
    ) -> Result<(u32, u32), String> {
        let x = x.map_or(i64::from(mouse.0), round);
        let y = y.map_or(i64::from(mouse.1), round);
        if let Some(error) = self.off_screen(x, y) {
            return Err(error);
        }
        Ok((
            u32::try_from(x).unwrap_or_default(),
            u32::try_from(y).unwrap_or_default(),
        ))
    }

    fn mouse(&self) -> (u32, u32) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .mouse
    }

    async fn screenshot(&self) -> Result<ToolResult, String> {
        let image = self
            .with_client(|client, _| client.screenshot())
            .await
            .map_err(|e| e.to_string())?;
        let compressed = tokio::task::spawn_blocking(move || encode(image))
            .await
            .map_err(|e| e.to_string())??;
        let name = format!("screenshots/screenshot_{}.png", timestamp());
        self.sandbox
            .write_file(&name, &compressed.bytes)
            .await
            .map_err(|e| e.to_string())?;
        self.sandbox
            .write_file("latest_screenshot.png", &compressed.bytes)
            .await
            .map_err(|e| e.to_string())?;
        let encoded = base64::engine::general_purpose::STANDARD.encode(&compressed.bytes);
        debug!(file = %name, size = ?compressed.size, "screenshot taken");
        Ok(ToolResult::success(format!("Screenshot saved as {name}")).with_image(encoded))
    }
}

#[async_trait]
impl Tool for ComputerUse {
    fn name(&self) -> &str {
        COMPUTER_USE
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {
                    "type": "string",
                    "enum": ACTIONS,
                    "description": "The computer action to perform",
                },
                "x": {"type": "number", "description": "X coordinate for mouse actions"},
                "y": {"type": "number", "description": "Y coordinate for mouse actions"},
                "button": {
                    "type": "string",
                    "enum": MOUSE_BUTTONS,
                    "description": "Mouse button for click/drag actions",
                    "default": "left",
                },
                "num_clicks": {
                    "type": "integer",
                    "description": "Number of clicks",
                    "enum": [1, 2, 3],
                    "default": 1,
                },
                "amount": {
                    "type": "integer",
                    "description": "Scroll amount (positive for up, negative for down)",
                    "minimum": -10,
                    "maximum": 10,
                },
                "text": {"type": "string", "description": "Text to type"},
                "key": {"type": "string", "enum": KEYBOARD_KEYS, "description": "Key to press"},
                "keys": {
                    "type": "string",
                    "enum": KEYBOARD_KEYS,
                    "description": "Key combination to press",
                },
                "duration": {
                    "type": "number",
                    "description": "Duration in seconds to wait",
                    "default": 0.5,
                },
            },
            "required": ["action"],
            "dependencies": {
                "move_to": ["x", "y"],
                "click": [],
                "scroll": ["amount"],
                "typing": ["text"],
                "press": ["key"],
                "wait": [],
                "mouse_down": [],
                "mouse_up": [],
                "drag_to": ["x", "y"],
                "hotkey": ["keys"],
                "screenshot": [],
            },
        })
    }

    async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let action = match args.get("action") {
            Some(Value::String(action)) => action.clone(),
            _ => return Ok(ToolResult::failure("action is required")),
        };
        let args = match Args::parse(&args) {
            Ok(args) => args,
            Err(error) => {
                return Ok(ToolResult::failure(format!(
                    "Computer action failed: {error}"
                )));
            }
        };
        Ok(self.act(&action, args).await)
    }

    async fn cleanup(&self) -> Result<(), ToolError> {
        // The connection closes; the display itself is the sandbox's.
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .client = None;
        Ok(())
    }
}

impl ComputerUse {
    /// One action, as OpenManus words its results and errors.
    async fn act(&self, action: &str, args: Args) -> ToolResult {
        let fail =
            |verb: &str, error: String| ToolResult::failure(format!("Failed to {verb}: {error}"));
        match action {
            "move_to" => {
                let (Some(x), Some(y)) = (args.x, args.y) else {
                    return ToolResult::failure("x and y coordinates are required");
                };
                let (x, y) = match self.point(Some(x), Some(y), (0, 0)) {
                    Ok(point) => point,
                    Err(error) => return fail("move", error),
                };
                let done = self
                    .with_client(move |client, mouse| {
                        client.move_to(x, y)?;
                        *mouse = (x, y);
                        Ok(())
                    })
                    .await;
                match done {
                    Ok(()) => ToolResult::success(format!("Moved to ({x}, {y})")),
                    Err(error) => fail("move", error.to_string()),
                }
            }
            "click" => {
                let (x, y) = match self.point(args.x, args.y, self.mouse()) {
                    Ok(point) => point,
                    Err(error) => return fail("click", error),
                };
                let button = match x_button(&args.button) {
                    Ok(button) => button,
                    Err(error) => return fail("click", error),
                };
                let clicks = args.num_clicks.map_or(1, round);
                let Ok(count @ 1..=3) = u8::try_from(clicks) else {
                    return fail(
                        "click",
                        format!("num_clicks must be 1, 2 or 3, not {clicks}"),
                    );
                };
                let done = self
                    .with_client(move |client, mouse| {
                        client.move_to(x, y)?;
                        client.click(button, count)?;
                        *mouse = (x, y);
                        Ok(())
                    })
                    .await;
                match done {
                    Ok(()) => ToolResult::success(format!(
                        "{count} {} click(s) performed at ({x}, {y})",
                        args.button
                    )),
                    Err(error) => fail("click", error.to_string()),
                }
            }
            "scroll" => {
                let Some(amount) = args.amount else {
                    return ToolResult::failure("Scroll amount is required");
                };
                #[allow(clippy::cast_possible_truncation)]
                let amount = amount.trunc().clamp(-10.0, 10.0) as i64;
                let done = self
                    .with_client(move |client, mouse| {
                        let (x, y) = *mouse;
                        client.move_to(x, y)?;
                        let wheel = if amount > 0 { 4 } else { 5 };
                        for _ in 0..amount.unsigned_abs() {
                            client.click(wheel, 1)?;
                        }
                        Ok((x, y))
                    })
                    .await;
                match done {
                    Ok((x, y)) => ToolResult::success(format!(
                        "Scrolled {} {} step(s) at position ({x}, {y})",
                        if amount > 0 { "up" } else { "down" },
                        amount.unsigned_abs()
                    )),
                    Err(error) => fail("scroll", error.to_string()),
                }
            }
            "typing" => {
                let Some(text) = args.text else {
                    return ToolResult::failure("Text is required for typing");
                };
                let typed = text.clone();
                let done = self
                    .with_client(move |client, _| client.type_text(&typed, TYPING_INTERVAL))
                    .await;
                match done {
                    Ok(()) => ToolResult::success(format!("Typed: {text}")),
                    Err(error) => fail("type", error.to_string()),
                }
            }
            "press" => {
                let Some(key) = args.key else {
                    return ToolResult::failure("Key is required for press action");
                };
                let key = key.to_lowercase();
                let keysyms = match keysyms_of_combination(&key) {
                    Ok(keysyms) => keysyms,
                    Err(part) => {
                        return fail(
                            "press key",
                            format!("unknown key {part:?} (known keys: {})", known_keys()),
                        );
                    }
                };
                let done = self
                    .with_client(move |client, _| client.press_keysyms(&keysyms))
                    .await;
                match done {
                    Ok(()) => ToolResult::success(format!("Pressed key: {key}")),
                    Err(error) => fail("press key", error.to_string()),
                }
            }
            "wait" => {
                let duration = args.duration.unwrap_or(0.5).clamp(0.0, 10.0);
                tokio::time::sleep(Duration::from_secs_f64(duration)).await;
                ToolResult::success(format!("Waited {} seconds", seconds_text(duration)))
            }
            "mouse_down" | "mouse_up" => {
                let down = action == "mouse_down";
                let verb = if down {
                    "press button"
                } else {
                    "release button"
                };
                let (x, y) = match self.point(args.x, args.y, self.mouse()) {
                    Ok(point) => point,
                    Err(error) => return fail(verb, error),
                };
                let button = match x_button(&args.button) {
                    Ok(button) => button,
                    Err(error) => return fail(verb, error),
                };
                let done = self
                    .with_client(move |client, mouse| {
                        client.move_to(x, y)?;
                        client.button(button, down)?;
                        *mouse = (x, y);
                        Ok(())
                    })
                    .await;
                match done {
                    Ok(()) => ToolResult::success(format!(
                        "{} button {} at ({x}, {y})",
                        args.button,
                        if down { "pressed" } else { "released" }
                    )),
                    Err(error) => fail(verb, error.to_string()),
                }
            }
            "drag_to" => {
                let (Some(x), Some(y)) = (args.x, args.y) else {
                    return ToolResult::failure("x and y coordinates are required");
                };
                let (x, y) = match self.point(Some(x), Some(y), (0, 0)) {
                    Ok(point) => point,
                    Err(error) => return fail("drag", error),
                };
                let done = self
                    .with_client(move |client, mouse| {
                        let start = *mouse;
                        client.move_to(start.0, start.1)?;
                        client.button(1, true)?;
                        for step in 1..=DRAG_STEPS {
                            let at = |from: u32, to: u32| {
                                let (from, to) = (i64::from(from), i64::from(to));
                                let at =
                                    from + (to - from) * i64::from(step) / i64::from(DRAG_STEPS);
                                u32::try_from(at).unwrap_or_default()
                            };
                            client.move_to(at(start.0, x), at(start.1, y))?;
                            std::thread::sleep(DRAG_TIME / DRAG_STEPS);
                        }
                        client.button(1, false)?;
                        *mouse = (x, y);
                        Ok(start)
                    })
                    .await;
                match done {
                    Ok((sx, sy)) => {
                        ToolResult::success(format!("Dragged from ({sx}, {sy}) to ({x}, {y})"))
                    }
                    Err(error) => fail("drag", error.to_string()),
                }
            }
            "hotkey" => {
                let Some(keys) = args.keys else {
                    return ToolResult::failure("Keys are required for hotkey action");
                };
                let keys = keys.to_lowercase().trim().to_owned();
                let keysyms = match keysyms_of_combination(&keys) {
                    Ok(keysyms) => keysyms,
                    Err(part) => {
                        return fail(
                            "press keys",
                            format!("unknown key {part:?} (known keys: {})", known_keys()),
                        );
                    }
                };
                let done = self
                    .with_client(move |client, _| client.press_keysyms(&keysyms))
                    .await;
                match done {
                    Ok(()) => ToolResult::success(format!("Pressed key combination: {keys}")),
                    Err(error) => fail("press keys", error.to_string()),
                }
            }
            "screenshot" => match self.screenshot().await {
                Ok(result) => result,
                Err(error) => {
                    debug!(%error, "screenshot failed");
                    ToolResult::failure(format!("Failed to capture screenshot: {error}"))
                }
            },
            other => ToolResult::failure(format!("Unknown action: {other}")),
        }
    }
}
