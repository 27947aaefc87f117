//! The DataAnalysis agent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_llm::ChatModel;
use agent_toolcall::ToolCallAgent;
use agent_tools::{Terminate, ToolCollection};

use crate::python::{AnalysisPythonExecute, VisualizationPrepare};
use crate::tool::DataVisualization;

/// The agent's name, as OpenManus spells it.
pub const DATA_ANALYSIS: &str = "Data_Analysis";

/// DataAnalysis's step budget when `[agent] max_steps` does not set one (OpenManus's 20). The
/// one place it is declared: [`data_analysis`] and the agent factory read it.
pub const DATA_ANALYSIS_MAX_STEPS: u32 = 20;

/// The system prompt; `{directory}` is replaced by the workspace.
pub const DATA_ANALYSIS_SYSTEM_PROMPT: &str = "You are a data analyst who works with Python and \
charts. Your workspace is {directory}: read every input file from it and write every output \
file (cleaned data, charts, reports) into it. Explore and clean the data, compute what the \
task asks, prepare charts and draw them, and finish with a written report of your analysis and \
its conclusions.";

/// The prompt added at each step.
pub const DATA_ANALYSIS_NEXT_STEP_PROMPT: &str = "Decide the next step toward the goal and take \
it with exactly one tool. Typical order: python_execute to inspect and clean the data, \
visualization_preparation to list the CSV files to chart, data_visualization to draw them, \
python_execute to write the report, then terminate. Say what the last result showed and what \
you do next. If a tool returned an error, find the cause and fix it before moving on.";

/// DataAnalysis over `llm` in `workspace`: `python_execute` (analysis variant),
/// `visualization_preparation`, `data_visualization` (asking `llm` for chart specs) and
/// `terminate`; [`DATA_ANALYSIS_MAX_STEPS`] steps, observations cut at 15,000 characters.
pub fn data_analysis(llm: Arc<dyn ChatModel>, workspace: &Path) -> ToolCallAgent {
    data_analysis_with_runner(llm, workspace, &PythonRunner::default())
}

/// [`data_analysis`] with the Python code run by `python` (an interpreter that has the
/// libraries the analysis needs, such as pandas) instead of `python3` from `PATH`.
pub fn data_analysis_with_python(
    llm: Arc<dyn ChatModel>,
    workspace: &Path,
    python: &Path,
) -> ToolCallAgent {
    let runner = PythonRunner {
        interpreter: Some(python.to_path_buf()),
        ..PythonRunner::default()
    };
    data_analysis_with_runner(llm, workspace, &runner)
}

/// How DataAnalysis starts its Python.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PythonRunner {
    /// The interpreter (default: `python3` from `PATH`).
    pub interpreter: Option<PathBuf>,
    /// The launcher it starts under: a confinement's or a sandbox's (default: none).
    pub launcher: Vec<String>,
}

/// [`data_analysis`] with its Python started as `runner` says.
pub fn data_analysis_with_runner(
    llm: Arc<dyn ChatModel>,
    workspace: &Path,
    runner: &PythonRunner,
) -> ToolCallAgent {
    let mut analysis = AnalysisPythonExecute::new(workspace);
    let mut preparation = VisualizationPrepare::new(workspace);
    if let Some(python) = &runner.interpreter {
        analysis = analysis.with_interpreter(python);
        preparation = preparation.with_interpreter(python);
    }
    if !runner.launcher.is_empty() {
        analysis = analysis.with_launcher(runner.launcher.clone());
        preparation = preparation.with_launcher(runner.launcher.clone());
    }
    let mut tools = ToolCollection::new();
    tools.add_tool(analysis);
    tools.add_tool(preparation);
    tools.add_tool(DataVisualization::new(workspace).with_llm(llm.clone()));
    tools.add_tool(Terminate);
    ToolCallAgent::new(llm)
        .with_name(DATA_ANALYSIS)
        .with_description(
            "An analytical agent that cleans data with Python, draws charts with insights and \
             writes reports.",
        )
        .with_system_prompt(
            DATA_ANALYSIS_SYSTEM_PROMPT.replace("{directory}", &workspace.display().to_string()),
        )
        .with_next_step_prompt(DATA_ANALYSIS_NEXT_STEP_PROMPT)
        .with_tools(tools)
        .with_max_steps(DATA_ANALYSIS_MAX_STEPS)
        .with_max_observe(15_000)
}
