//! Small tools for driving agents in tests. Each records what happened to it in a shared
//! [`ToolProbe`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agent_tools::{ToolContext, ToolError, ToolResult, TypedTool};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::watch;

/// What a test tool saw: the call ids it ran for, and how often it was cleaned up.
#[derive(Debug)]
pub struct ToolProbe {
    calls: Mutex<Vec<String>>,
    cleanups: AtomicUsize,
    started: watch::Sender<usize>,
}

impl Default for ToolProbe {
    fn default() -> Self {
        Self {
            calls: Mutex::new(Vec::new()),
            cleanups: AtomicUsize::new(0),
            started: watch::Sender::new(0),
        }
    }
}

impl ToolProbe {
    /// A new shared probe.
    #[must_use]
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn record(&self, ctx: &ToolContext) {
        let count = {
            let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            calls.push(ctx.call_id.clone());
            calls.len()
        };
        self.started.send_replace(count);
    }

    /// The call ids executed, in order.
    #[must_use]
    pub fn calls(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many times `cleanup` ran.
    #[must_use]
    pub fn cleanups(&self) -> usize {
        self.cleanups.load(Ordering::SeqCst)
    }

    /// Waits until at least `count` calls have started.
    pub async fn wait_for_calls(&self, count: usize) {
        let mut rx = self.started.subscribe();
        let _ = rx.wait_for(|n| *n >= count).await;
    }

    fn cleaned(&self) {
        self.cleanups.fetch_add(1, Ordering::SeqCst);
    }
}

/// Arguments of [`EchoTool`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// Text to return.
    pub text: String,
}

/// `echo`: returns its `text` (an empty text gives an empty result).
#[derive(Debug, Clone)]
pub struct EchoTool {
    name: String,
    probe: Arc<ToolProbe>,
    fail_cleanup: bool,
}

impl EchoTool {
    /// An `echo` tool reporting to `probe`.
    #[must_use]
    pub fn new(probe: &Arc<ToolProbe>) -> Self {
        Self::named("echo", probe)
    }

    /// The same tool under another name.
    #[must_use]
    pub fn named(name: &str, probe: &Arc<ToolProbe>) -> Self {
        Self {
            name: name.to_owned(),
            probe: probe.clone(),
            fail_cleanup: false,
        }
    }

    /// Makes `cleanup` fail (after counting).
    #[must_use]
    pub fn failing_cleanup(mut self) -> Self {
        self.fail_cleanup = true;
        self
    }
}

#[async_trait]
impl TypedTool for EchoTool {
    type Args = EchoArgs;
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "Returns the given text unchanged."
    }
    async fn call(&self, args: EchoArgs, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        self.probe.record(ctx);
        if args.text.is_empty() {
            return Ok(ToolResult::default());
        }
        Ok(ToolResult::success(args.text))
    }
    async fn cleanup(&self) -> Result<(), ToolError> {
        self.probe.cleaned();
        if self.fail_cleanup {
            return Err(ToolError::failure("echo cleanup failed"));
        }
        Ok(())
    }
}

/// Arguments of [`ImageTool`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ImageArgs {
    /// Caption returned as the output.
    pub caption: String,
}

/// `screenshot`: returns its caption and the base64 image [`ImageTool::IMAGE`].
#[derive(Debug, Clone)]
pub struct ImageTool {
    probe: Arc<ToolProbe>,
}

impl ImageTool {
    /// The base64 payload every call returns.
    pub const IMAGE: &'static str = "aW1hZ2UtYnl0ZXM=";

    /// A `screenshot` tool reporting to `probe`.
    #[must_use]
    pub fn new(probe: &Arc<ToolProbe>) -> Self {
        Self {
            probe: probe.clone(),
        }
    }
}

#[async_trait]
impl TypedTool for ImageTool {
    type Args = ImageArgs;
    fn name(&self) -> &str {
        "screenshot"
    }
    fn description(&self) -> &str {
        "Returns a caption and an image."
    }
    async fn call(&self, args: ImageArgs, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        self.probe.record(ctx);
        Ok(ToolResult::success(args.caption).with_image(Self::IMAGE))
    }
}

/// How [`FailTool`] fails.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FailMode {
    /// Return an error result (`ToolError::Failure`).
    Failure,
    /// Break (`ToolError::Execution`).
    Crash,
}

/// Arguments of [`FailTool`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FailArgs {
    /// How to fail.
    pub mode: FailMode,
    /// The message.
    pub message: String,
}

/// `fail`: fails as asked.
#[derive(Debug, Clone)]
pub struct FailTool {
    probe: Arc<ToolProbe>,
}

impl FailTool {
    /// A `fail` tool reporting to `probe`.
    #[must_use]
    pub fn new(probe: &Arc<ToolProbe>) -> Self {
        Self {
            probe: probe.clone(),
        }
    }
}

#[async_trait]
impl TypedTool for FailTool {
    type Args = FailArgs;
    fn name(&self) -> &str {
        "fail"
    }
    fn description(&self) -> &str {
        "Fails with the given message."
    }
    async fn call(&self, args: FailArgs, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        self.probe.record(ctx);
        Err(match args.mode {
            FailMode::Failure => ToolError::failure(args.message),
            FailMode::Crash => ToolError::execution(std::io::Error::other(args.message)),
        })
    }
}

/// Arguments of [`BlockingTool`]: none.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoArgs {}

/// `block`: records its start, then waits until the run is cancelled and returns what it saw.
/// A test cancels the run once [`ToolProbe::wait_for_calls`] says the call started.
#[derive(Debug, Clone)]
pub struct BlockingTool {
    probe: Arc<ToolProbe>,
}

impl BlockingTool {
    /// A `block` tool reporting to `probe`.
    #[must_use]
    pub fn new(probe: &Arc<ToolProbe>) -> Self {
        Self {
            probe: probe.clone(),
        }
    }
}

#[async_trait]
impl TypedTool for BlockingTool {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "block"
    }
    fn description(&self) -> &str {
        "Blocks until the run is cancelled."
    }
    async fn call(&self, _args: NoArgs, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        self.probe.record(ctx);
        ctx.cancellation.cancelled().await;
        Ok(ToolResult::success(Value::Null.to_string()))
    }
    async fn cleanup(&self) -> Result<(), ToolError> {
        self.probe.cleaned();
        Ok(())
    }
}
