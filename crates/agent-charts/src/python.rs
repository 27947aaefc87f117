//! The DataAnalysis Python tools: `python_execute` with `code_type`, and
//! `visualization_preparation`.

use std::path::PathBuf;
use std::time::Duration;

use agent_tools::{PythonExecute, ToolContext, ToolError, ToolResult, TypedTool};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

/// The preparation tool's name.
pub const VISUALIZATION_PREPARATION: &str = "visualization_preparation";

/// What analysis code is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AnalysisCodeType {
    /// Cleaning and transforming data.
    #[default]
    Process,
    /// Writing a report.
    Report,
    /// Anything else.
    Others,
}

/// Arguments of the analysis `python_execute`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AnalysisPythonArgs {
    /// What the code is for: `process` (clean or transform data), `report` (write a report) or
    /// `others` (default `process`).
    #[serde(default)]
    pub code_type: AnalysisCodeType,
    /// The Python code to run. print() every result you need to see; save processed files and
    /// reports in the workspace.
    pub code: String,
}

/// What preparation code makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PreparationCodeType {
    /// A JSON list of `{"csvFilePath", "chartTitle"}` for new charts.
    #[default]
    Visualization,
    /// A JSON list of `{"chartPath", "insights_id"}` to mark insights on charts.
    Insight,
}

/// Arguments of `visualization_preparation`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct PreparationArgs {
    /// `visualization` to prepare new charts, `insight` to choose insights to mark on charts.
    pub code_type: PreparationCodeType,
    /// Python code that writes the JSON file and prints its path.
    pub code: String,
}

fn engine(workspace: &std::path::Path, timeout: Option<Duration>) -> PythonExecute {
    let python = PythonExecute::new().with_cwd(workspace);
    match timeout {
        Some(t) => python.with_timeout(t),
        None => python,
    }
}

/// `python_execute` for data analysis: the persistent interpreter of
/// [`agent_tools::PythonExecute`], run in the workspace, with a `code_type` argument.
#[derive(Debug)]
pub struct AnalysisPythonExecute {
    python: PythonExecute,
    description: String,
}

impl AnalysisPythonExecute {
    /// The tool running in `workspace` with the default 5-second limit per call.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self::with_timeout(workspace, None)
    }

    /// The tool running in `workspace`, with `timeout` per call when given.
    pub fn with_timeout(workspace: impl Into<PathBuf>, timeout: Option<Duration>) -> Self {
        let workspace = workspace.into();
        let python = engine(&workspace, timeout);
        let description = format!(
            "Run Python 3 code for data analysis in a persistent interpreter whose working \
             directory is the workspace {ws}. Variables and imports persist between calls. \
             Only printed output comes back, so print() every result you need. Save processed \
             data and reports as files in {ws}, and build reports step by step. A call running \
             longer than {secs} seconds is stopped and the interpreter restarts empty.",
            ws = workspace.display(),
            secs = python.timeout().as_secs_f64()
        );
        Self {
            python,
            description,
        }
    }

    /// Runs the code with `program` instead of `python3` from `PATH`.
    #[must_use]
    pub fn with_interpreter(self, program: impl Into<PathBuf>) -> Self {
        Self {
            python: self.python.with_interpreter(program),
            ..self
        }
    }

    /// Starts the interpreter through `launcher` (a confinement's or a sandbox's; see
    /// `agent_tools::PythonExecute::with_launcher`).
    #[must_use]
    pub fn with_launcher(self, launcher: Vec<String>) -> Self {
        Self {
            python: self.python.with_launcher(launcher),
            ..self
        }
    }
}

#[async_trait]
impl TypedTool for AnalysisPythonExecute {
    type Args = AnalysisPythonArgs;

    fn name(&self) -> &str {
        agent_tools::PYTHON_EXECUTE
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn call(
        &self,
        args: AnalysisPythonArgs,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolError> {
        tracing::debug!(code_type = ?args.code_type, "analysis python");
        self.python.run_code(&args.code, ctx).await
    }

    async fn cleanup(&self) -> Result<(), ToolError> {
        self.python.interpreter().shutdown().await;
        Ok(())
    }
}

/// `visualization_preparation`: Python code that writes the JSON file `data_visualization`
/// reads, and prints its path.
#[derive(Debug)]
pub struct VisualizationPrepare {
    python: PythonExecute,
    description: String,
}

impl VisualizationPrepare {
    /// The tool running in `workspace` with the default 5-second limit per call.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self::with_timeout(workspace, None)
    }

    /// The tool running in `workspace`, with `timeout` per call when given.
    pub fn with_timeout(workspace: impl Into<PathBuf>, timeout: Option<Duration>) -> Self {
        let workspace = workspace.into();
        let python = engine(&workspace, timeout);
        let description = format!(
            "Prepare charts with Python code run in the workspace {ws}. The code must write a \
             JSON file in {ws} and print its path. For code_type `visualization` the file is a \
             list of {{\"csvFilePath\": str, \"chartTitle\": str}}, one per chart (clean the data \
             and save it as CSV first if needed; each CSV should hold just the columns to plot). \
             For code_type `insight` it is a list of {{\"chartPath\": str, \"insights_id\": \
             [numbers]}} choosing which numbered insights to mark on charts already made. Then \
             call data_visualization with that path.",
            ws = workspace.display()
        );
        Self {
            python,
            description,
        }
    }

    /// Runs the code with `program` instead of `python3` from `PATH`.
    #[must_use]
    pub fn with_interpreter(self, program: impl Into<PathBuf>) -> Self {
        Self {
            python: self.python.with_interpreter(program),
            ..self
        }
    }

    /// Starts the interpreter through `launcher` (a confinement's or a sandbox's; see
    /// `agent_tools::PythonExecute::with_launcher`).
    #[must_use]
    pub fn with_launcher(self, launcher: Vec<String>) -> Self {
        Self {
            python: self.python.with_launcher(launcher),
            ..self
        }
    }
}

#[async_trait]
impl TypedTool for VisualizationPrepare {
    type Args = PreparationArgs;

    fn name(&self) -> &str {
        VISUALIZATION_PREPARATION
    }

    fn description(&self) -> &str {
        &self.description
    }

    async fn call(
        &self,
        args: PreparationArgs,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolError> {
        tracing::debug!(code_type = ?args.code_type, "visualization preparation");
        self.python.run_code(&args.code, ctx).await
    }

    async fn cleanup(&self) -> Result<(), ToolError> {
        self.python.interpreter().shutdown().await;
        Ok(())
    }
}
