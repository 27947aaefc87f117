//! `python_execute`: run Python code in a persistent interpreter.
//!
//! OpenManus started a fresh process for every call, so nothing survived from one call to the
//! next, `if __name__ == "__main__":` blocks were skipped, stderr and the traceback were lost, and
//! the model read a Python dict repr. Here:
//!
//! * one interpreter serves every call of an agent run, in one namespace whose `__name__` is
//!   `"__main__"`: variables, functions and imports persist, like the cells of a notebook;
//! * stdout and stderr of the code and of everything it starts (`os.system`, subprocesses, C
//!   extensions) are captured, with the traceback of an uncaught exception; what was printed
//!   before an exception is kept;
//! * the result is plain text that says whether the call succeeded (layouts on
//!   [`Execution::to_tool_result`]).
//!
//! **When the state resets.** A call that passes its time limit (default 5 s, as in OpenManus) is
//! killed with its whole process group, and the next call runs in a new, empty interpreter; the
//! timeout result says so. The same happens when the interpreter dies (`os._exit`, a crash: that
//! call reports it), when a call is cancelled or its future dropped (the next result carries a
//! note), and at the end of every agent run: [`Tool::cleanup`](crate::Tool::cleanup), which
//! `ToolCallAgent` calls after each run, stops the interpreter. State therefore persists within a
//! run and never leaks into the next one. `exit()` and `sys.exit()` do not reset anything: the
//! call fails with a message saying the code called exit, and the interpreter keeps its state.
//!
//! [`PythonInterpreter`] is the engine on its own, for tools with another schema (the
//! DataAnalysis `python_execute` with `code_type`): hold one and call
//! [`PythonInterpreter::run`], or wrap a [`PythonExecute`] and call [`PythonExecute::run_code`].
//!
//! ```
//! use agent_tools::{PythonExecute, ToolCollection, ToolContext};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut tools = ToolCollection::new();
//! tools.add_tool(PythonExecute::new());
//! let ctx = ToolContext::default();
//! tools.execute("python_execute", json!({"code": "x = 6 * 7"}), &ctx).await.unwrap();
//! let result = tools.execute("python_execute", json!({"code": "print(x)"}), &ctx).await.unwrap();
//! assert_eq!(result.to_string(), "42");
//! tools.cleanup_all().await;
//! # });
//! ```

mod config;
mod error;
mod interpreter;
mod render;
mod session;

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

pub use error::PythonError;
pub use interpreter::{DEFAULT_OUTPUT_LIMIT, Execution, Outcome, PythonInterpreter, Restart};
pub use render::NO_OUTPUT;

use crate::{ToolContext, ToolError, ToolResult, TypedTool};

/// The tool's name.
pub const PYTHON_EXECUTE: &str = "python_execute";

/// The default time limit of one call: 5 seconds, as in OpenManus.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Arguments of `python_execute`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct PythonExecuteArgs {
    /// The Python code to run. Use print() to show any value you need to see.
    pub code: String,
}

/// `python_execute`: runs Python code in a persistent interpreter (see the [module
/// docs](self)).
#[derive(Debug)]
pub struct PythonExecute {
    interpreter: PythonInterpreter,
    timeout: Duration,
    description: String,
}

impl Default for PythonExecute {
    fn default() -> Self {
        Self::new()
    }
}

fn describe(timeout: Duration) -> String {
    format!(
        "Run Python 3 code in a persistent interpreter on this machine. Only what the code \
         prints comes back (standard output, standard error and the traceback of an uncaught \
         exception); the value of the last expression is not shown, so print() every result you \
         need. Variables, functions and imports stay defined for later calls, like cells of a \
         notebook. A call that runs longer than {} seconds is stopped, and the interpreter then \
         restarts with nothing defined.",
        render::seconds(timeout)
    )
}

impl PythonExecute {
    /// The tool with `python3` from `PATH`, the current directory, a 5-second limit per call
    /// ([`DEFAULT_TIMEOUT`]) and a 1 MiB output limit per stream ([`DEFAULT_OUTPUT_LIMIT`]).
    #[must_use]
    pub fn new() -> Self {
        Self {
            interpreter: PythonInterpreter::new(),
            timeout: DEFAULT_TIMEOUT,
            description: describe(DEFAULT_TIMEOUT),
        }
    }

    /// Sets the time limit of each call (the description given to the model states it).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.description = describe(timeout);
        self
    }

    /// Uses `program` as the interpreter (default `python3`).
    #[must_use]
    pub fn with_interpreter(mut self, program: impl Into<PathBuf>) -> Self {
        self.interpreter = self.interpreter.with_program(program);
        self
    }

    /// Runs the code with `dir` as its initial working directory.
    #[must_use]
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.interpreter = self.interpreter.with_cwd(dir);
        self
    }

    /// Keeps at most `bytes` of stdout and of stderr per call.
    #[must_use]
    pub fn with_output_limit(mut self, bytes: usize) -> Self {
        self.interpreter = self.interpreter.with_output_limit(bytes);
        self
    }

    /// Starts each interpreter through `launcher` (see [`PythonInterpreter::with_launcher`]),
    /// e.g. a sandbox's `bwrap ... --` command line.
    #[must_use]
    pub fn with_launcher(mut self, launcher: Vec<String>) -> Self {
        self.interpreter = self.interpreter.with_launcher(launcher);
        self
    }

    /// The time limit of each call.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The engine.
    #[must_use]
    pub fn interpreter(&self) -> &PythonInterpreter {
        &self.interpreter
    }

    /// Runs `code` and renders the result ([`Execution::to_tool_result`]); what
    /// [`TypedTool::call`] does, for variants of the tool with other arguments.
    ///
    /// # Errors
    ///
    /// [`ToolError::Execution`] wrapping a [`PythonError`] when no interpreter can run.
    pub async fn run_code(&self, code: &str, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        self.interpreter
            .run(code, self.timeout, &ctx.cancellation)
            .await
            .map(|execution| execution.to_tool_result())
            .map_err(ToolError::execution)
    }
}

#[async_trait]
impl TypedTool for PythonExecute {
    type Args = PythonExecuteArgs;

    fn name(&self) -> &str {
        PYTHON_EXECUTE
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn call(
        &self,
        args: PythonExecuteArgs,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolError> {
        self.run_code(&args.code, ctx).await
    }

    async fn cleanup(&self) -> Result<(), ToolError> {
        self.interpreter.shutdown().await;
        Ok(())
    }
}
