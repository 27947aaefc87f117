//! # agent-charts — the DataAnalysis agent and its tools
//!
//! OpenManus drew charts by piping data to a Node/VMind script that loaded its page from a CDN.
//! Here everything runs in-process and offline:
//!
//! * [`DataVisualization`] (`data_visualization`) reads CSV files, chooses a chart (the model
//!   answers a forced `generate_chart_spec` call; rules decide when there is no model or its
//!   answer does not fit), renders it with plotters to PNG or to a self-contained HTML page
//!   (inline SVG, no script), computes up to six statistical [`Insight`]s, and marks chosen
//!   insights on saved charts;
//! * [`AnalysisPythonExecute`] (`python_execute` with `code_type`) and
//!   [`VisualizationPrepare`] (`visualization_preparation`) run Python in the workspace;
//! * [`data_analysis`] builds the `Data_Analysis` agent over them.
//!
//! ```
//! use agent_charts::{DataVisualization, OutputType};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let csv = dir.path().join("sales.csv");
//! std::fs::write(&csv, "month,sales\nJan,10\nFeb,14\nMar,19\nApr,25\n").unwrap();
//! let tool = DataVisualization::new(dir.path());
//! let chart = tool.make_chart(&csv, "Monthly sales", OutputType::Png, "en").await.unwrap();
//! assert!(chart.chart_path.ends_with("visualization/sales.png"));
//! assert!(chart.insight_md.starts_with("## Monthly sales Insights\n1. "));
//! # });
//! ```

mod agent;
pub mod data;
pub mod insights;
pub mod python;
pub mod render;
pub mod spec;
pub mod tool;

use std::path::PathBuf;

pub use agent::{
    DATA_ANALYSIS, DATA_ANALYSIS_MAX_STEPS, DATA_ANALYSIS_NEXT_STEP_PROMPT,
    DATA_ANALYSIS_SYSTEM_PROMPT, PythonRunner, data_analysis, data_analysis_with_python,
    data_analysis_with_runner,
};
pub use data::{Column, Table};
pub use insights::{Insight, InsightKind, MAX_INSIGHTS, compute_insights, to_markdown};
pub use python::{
    AnalysisPythonExecute, PreparationCodeType, VISUALIZATION_PREPARATION, VisualizationPrepare,
};
pub use render::{ChartData, HEIGHT, WIDTH, html_page, render_png, render_svg};
pub use spec::{CHART_SPEC_TOOL, ChartSpec, ChartType};
pub use tool::{
    ChartOutput, DATA_VISUALIZATION, DataVisualization, DataVisualizationArgs, OutputType,
    SavedChart, VISUALIZATION_DIR,
};

/// What can go wrong while making a chart.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// A file could not be read or written.
    #[error("{}: {}", .0.display(), .1)]
    Io(PathBuf, #[source] std::io::Error),
    /// The CSV could not be parsed.
    #[error("invalid CSV: {0}")]
    Csv(#[from] csv::Error),
    /// The CSV has no header or no row.
    #[error("the data set is empty")]
    EmptyData,
    /// The chart spec does not fit the data (or a saved spec is unreadable).
    #[error("invalid chart spec: {0}")]
    InvalidSpec(String),
    /// Drawing or encoding failed.
    #[error("rendering failed: {0}")]
    Render(String),
}

/// The examples of this crate's README (what crates.io shows), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
