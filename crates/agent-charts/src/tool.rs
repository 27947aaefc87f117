//! `data_visualization`: charts with insights from CSV files, rendered in-process.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_llm::ChatModel;
use agent_tools::{ToolContext, ToolError, ToolResult, TypedTool};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ChartError;
use crate::data::Table;
use crate::insights::{Insight, compute_insights, to_markdown};
use crate::render::{ChartData, html_page, render_png, render_svg};
use crate::spec::{ChartSpec, ChartType};

/// The tool's name.
pub const DATA_VISUALIZATION: &str = "data_visualization";

/// The folder under the workspace where charts, specs and insights go.
pub const VISUALIZATION_DIR: &str = "visualization";

/// The chart file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputType {
    /// A PNG image.
    Png,
    /// A self-contained HTML page with the chart as inline SVG and the insights.
    #[default]
    Html,
}

impl OutputType {
    /// The file extension.
    #[must_use]
    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Html => "html",
        }
    }
}

/// What the call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolType {
    /// Make charts from CSV files.
    #[default]
    Visualization,
    /// Mark chosen insights on saved charts.
    Insight,
}

/// The language of titles and insights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// Chinese.
    Zh,
    /// English.
    #[default]
    En,
}

impl Language {
    fn code(self) -> &'static str {
        match self {
            Self::Zh => "zh",
            Self::En => "en",
        }
    }
}

/// Arguments of `data_visualization`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DataVisualizationArgs {
    /// Path of the JSON file written by visualization_preparation (absolute or relative to the
    /// workspace).
    pub json_path: String,
    /// Chart file format: `png` or `html` (default `html`).
    #[serde(default)]
    pub output_type: OutputType,
    /// `visualization` makes charts from the CSV files listed in the JSON file; `insight` marks
    /// the chosen insights on saved charts (default `visualization`).
    #[serde(default)]
    pub tool_type: ToolType,
    /// Language of the titles and insights: `zh` or `en` (default `en`).
    #[serde(default)]
    pub language: Language,
}

/// What is saved as `{name}.json` next to each chart: the spec, the data and the insights, so
/// that insight mode can re-render the chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedChart {
    /// The chart spec.
    pub spec: ChartSpec,
    /// The CSV file the data came from.
    pub source: PathBuf,
    /// The chart's file format.
    pub output_type: OutputType,
    /// The insights, numbered from 1 in this order.
    pub insights: Vec<Insight>,
    /// The data.
    pub data: Table,
}

#[derive(Debug, Deserialize)]
struct ChartEntry {
    #[serde(rename = "csvFilePath")]
    csv_file_path: String,
    #[serde(rename = "chartTitle", default)]
    chart_title: String,
}

#[derive(Debug, Deserialize)]
struct InsightEntry {
    #[serde(rename = "chartPath")]
    chart_path: String,
    #[serde(default)]
    insights_id: Vec<usize>,
}

/// One chart made by [`DataVisualization::make_chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChartOutput {
    /// The chart's title.
    pub title: String,
    /// The chart file.
    pub chart_path: PathBuf,
    /// The spec file (`{name}.json`).
    pub spec_path: PathBuf,
    /// The insights file (`{name}.md`), when there are insights.
    pub insight_path: Option<PathBuf>,
    /// The insights as Markdown.
    pub insight_md: String,
}

/// `data_visualization`: reads each CSV listed in a JSON file, chooses a chart (asking the
/// model through a forced function call when one is configured, by rules otherwise), renders
/// it to PNG or self-contained HTML in `<workspace>/visualization/`, and writes the spec
/// (`{name}.json`) and up to six statistical insights (`{name}.md`). Existing files are never
/// overwritten: `_new` is appended to the name until it is free.
pub struct DataVisualization {
    workspace: PathBuf,
    llm: Option<Arc<dyn ChatModel>>,
}

impl std::fmt::Debug for DataVisualization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataVisualization")
            .field("workspace", &self.workspace)
            .field("llm", &self.llm.as_ref().map(|m| m.model_name().to_owned()))
            .finish()
    }
}

impl DataVisualization {
    /// The tool over `workspace`, choosing charts by rules only.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            llm: None,
        }
    }

    /// Asks `llm` for each chart spec (with the rules as fallback).
    #[must_use]
    pub fn with_llm(mut self, llm: Arc<dyn ChatModel>) -> Self {
        self.llm = Some(llm);
        self
    }

    /// The folder where charts go.
    #[must_use]
    pub fn output_dir(&self) -> PathBuf {
        self.workspace.join(VISUALIZATION_DIR)
    }

    fn resolve(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() || p.exists() {
            p.to_path_buf()
        } else {
            self.workspace.join(p)
        }
    }

    /// Makes one chart from `csv` titled `title`.
    ///
    /// # Errors
    ///
    /// A [`ChartError`] when the CSV cannot be read, the chart cannot be drawn or a file cannot
    /// be written.
    pub async fn make_chart(
        &self,
        csv: &Path,
        title: &str,
        output_type: OutputType,
        language: &str,
    ) -> Result<ChartOutput, ChartError> {
        let table = Table::from_csv_path(csv)?;
        let (spec, fallback) =
            ChartSpec::choose(self.llm.as_deref(), &table, title, language).await;
        if let Some(reason) = fallback {
            tracing::debug!(%reason, chart = %spec.chart_type.as_str(), "rule-based chart spec");
        }
        let dir = self.output_dir();
        let stem = csv
            .file_stem()
            .map(|s| sanitize(&s.to_string_lossy()))
            .unwrap_or_else(|| "chart".to_owned());
        let language = language.to_owned();
        let source = csv.to_path_buf();
        tokio::task::spawn_blocking(move || {
            build_chart(&dir, &stem, spec, table, source, output_type, &language)
        })
        .await
        .map_err(|e| ChartError::Render(e.to_string()))?
    }

    /// Re-renders the saved chart named by `chart_path` (relative to the visualization folder;
    /// only its file stem matters) with the insights numbered `insights_id` (from 1) marked on
    /// it, as `output_type`. Returns the chart file.
    ///
    /// # Errors
    ///
    /// A [`ChartError`] when the saved spec is missing or the chart cannot be drawn.
    pub async fn mark_insights(
        &self,
        chart_path: &str,
        insights_id: &[usize],
        output_type: OutputType,
    ) -> Result<PathBuf, ChartError> {
        let dir = self.output_dir();
        let stem = Path::new(chart_path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .ok_or_else(|| ChartError::InvalidSpec(format!("no chart name in '{chart_path}'")))?;
        let ids = insights_id.to_vec();
        tokio::task::spawn_blocking(move || mark_saved(&dir, &stem, &ids, output_type))
            .await
            .map_err(|e| ChartError::Render(e.to_string()))?
    }

    async fn visualize(&self, text: &str, args: &DataVisualizationArgs) -> ToolResult {
        let entries: Vec<ChartEntry> = match parse_entries(text) {
            Ok(e) => e,
            Err(e) => return ToolResult::failure(format!("Error: {e}")),
        };
        let mut successes = Vec::new();
        let mut errors = Vec::new();
        for entry in entries {
            let csv = self.resolve(&entry.csv_file_path);
            if !csv.exists() {
                errors.push(format!(
                    "Error in {}: No such file or directory: {}",
                    entry.csv_file_path,
                    csv.display()
                ));
                continue;
            }
            let title = if entry.chart_title.trim().is_empty() {
                entry.csv_file_path.clone()
            } else {
                entry.chart_title.clone()
            };
            match self
                .make_chart(&csv, &title, args.output_type, args.language.code())
                .await
            {
                Ok(output) => successes.push(output),
                Err(e) => errors.push(format!("Error in {}: {e}", entry.csv_file_path)),
            }
        }
        let success_text = success_template(&successes);
        if errors.is_empty() {
            ToolResult::success(success_text)
        } else {
            ToolResult::failure(format!(
                "# Error chart generated\n{}\n{success_text}",
                errors.join("\n")
            ))
        }
    }

    async fn insight(&self, text: &str, args: &DataVisualizationArgs) -> ToolResult {
        let entries: Vec<InsightEntry> = match parse_entries(text) {
            Ok(e) => e,
            Err(e) => return ToolResult::failure(format!("Error: {e}")),
        };
        let mut paths = Vec::new();
        let mut errors = Vec::new();
        for entry in entries {
            match self
                .mark_insights(&entry.chart_path, &entry.insights_id, args.output_type)
                .await
            {
                Ok(path) => paths.push(path.display().to_string()),
                Err(e) => errors.push(format!("Error in {}: {e}", entry.chart_path)),
            }
        }
        if errors.is_empty() {
            ToolResult::success(format!(
                "# Charts Update with Insights\n{}",
                paths.join(",")
            ))
        } else {
            ToolResult::failure(format!("# Error in chart insights:\n{}", errors.join("\n")))
        }
    }
}

fn parse_entries<T: for<'de> Deserialize<'de>>(text: &str) -> Result<Vec<T>, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("invalid JSON file: {e}"))?;
    let value = match value {
        serde_json::Value::Array(_) => value,
        other => serde_json::Value::Array(vec![other]),
    };
    serde_json::from_value(value).map_err(|e| format!("unexpected JSON content: {e}"))
}

/// `Chart Generated Successful!` and, per chart, its title, its path and its insights.
fn success_template(outputs: &[ChartOutput]) -> String {
    if outputs.is_empty() {
        return "No chart was generated.".to_owned();
    }
    let mut content = String::from("Chart Generated Successful!\n");
    for output in outputs {
        content.push_str(&format!(
            "## {}\nChart saved in: {}\n",
            output.title,
            output.chart_path.display()
        ));
        if output.insight_path.is_some() {
            content.push_str(&output.insight_md);
        }
    }
    content.trim_end().to_owned()
}

/// Keeps letters, digits, `-` and `_` (any script); everything else becomes `_`.
fn sanitize(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "chart".to_owned()
    } else {
        cleaned
    }
}

/// The first of `stem`, `stem_new`, `stem_new_new`, ... for which no chart, spec or insight
/// file exists.
fn free_name(dir: &Path, stem: &str) -> String {
    let mut name = stem.to_owned();
    while ["json", "md", "png", "html"]
        .iter()
        .any(|ext| dir.join(format!("{name}.{ext}")).exists())
    {
        name.push_str("_new");
    }
    name
}

fn write(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), ChartError> {
    std::fs::write(path, contents).map_err(|e| ChartError::Io(path.to_path_buf(), e))
}

fn render_to(
    path: &Path,
    spec: &ChartSpec,
    data: &ChartData,
    insights: &[Insight],
    marks: &[(usize, Insight)],
    output_type: OutputType,
) -> Result<(), ChartError> {
    match output_type {
        OutputType::Png => render_png(spec, data, marks, path),
        OutputType::Html => {
            let svg = render_svg(spec, data, marks)?;
            write(path, html_page(&spec.title, &svg, insights))
        }
    }
}

fn build_chart(
    dir: &Path,
    stem: &str,
    spec: ChartSpec,
    table: Table,
    source: PathBuf,
    output_type: OutputType,
    language: &str,
) -> Result<ChartOutput, ChartError> {
    std::fs::create_dir_all(dir).map_err(|e| ChartError::Io(dir.to_path_buf(), e))?;
    let data = ChartData::new(&spec, &table)?;
    let insights = if spec.chart_type == ChartType::Pie {
        Vec::new()
    } else {
        compute_insights(&data.labels, &data.series_refs(), language)
    };
    let name = free_name(dir, stem);
    let chart_path = dir.join(format!("{name}.{}", output_type.extension()));
    render_to(&chart_path, &spec, &data, &insights, &[], output_type)?;
    let spec_path = dir.join(format!("{name}.json"));
    let title = spec.title.clone();
    let saved = SavedChart {
        spec,
        source,
        output_type,
        insights,
        data: table,
    };
    let json =
        serde_json::to_string_pretty(&saved).map_err(|e| ChartError::InvalidSpec(e.to_string()))?;
    write(&spec_path, json)?;
    let insight_md = to_markdown(&title, &saved.insights);
    let insight_path = if saved.insights.is_empty() {
        None
    } else {
        let path = dir.join(format!("{name}.md"));
        write(&path, &insight_md)?;
        Some(path)
    };
    Ok(ChartOutput {
        title,
        chart_path,
        spec_path,
        insight_path,
        insight_md,
    })
}

fn mark_saved(
    dir: &Path,
    stem: &str,
    ids: &[usize],
    output_type: OutputType,
) -> Result<PathBuf, ChartError> {
    let spec_path = dir.join(format!("{stem}.json"));
    let text =
        std::fs::read_to_string(&spec_path).map_err(|e| ChartError::Io(spec_path.clone(), e))?;
    let saved: SavedChart =
        serde_json::from_str(&text).map_err(|e| ChartError::InvalidSpec(e.to_string()))?;
    let marks: Vec<(usize, Insight)> = ids
        .iter()
        .filter_map(|id| {
            let insight = saved.insights.get(id.checked_sub(1)?)?;
            Some((*id, insight.clone()))
        })
        .collect();
    if marks.is_empty() {
        return Err(ChartError::InvalidSpec(format!(
            "none of the insights {ids:?} exists (the chart has {})",
            saved.insights.len()
        )));
    }
    let data = ChartData::new(&saved.spec, &saved.data)?;
    let chosen: Vec<Insight> = marks.iter().map(|(_, i)| i.clone()).collect();
    let chart_path = dir.join(format!("{stem}.{}", output_type.extension()));
    render_to(
        &chart_path,
        &saved.spec,
        &data,
        &chosen,
        &marks,
        output_type,
    )?;
    Ok(chart_path)
}

#[async_trait]
impl TypedTool for DataVisualization {
    type Args = DataVisualizationArgs;

    fn name(&self) -> &str {
        DATA_VISUALIZATION
    }

    fn description(&self) -> &str {
        "Make charts with insights from data, or mark chosen insights on charts already made. \
         With tool_type `visualization`, json_path names a JSON file listing \
         {\"csvFilePath\", \"chartTitle\"} entries (written by visualization_preparation): each \
         CSV becomes a chart (bar, line, area, scatter, pie or dual-axis, chosen to fit the \
         data) with up to six numbered insights. With tool_type `insight`, the JSON file lists \
         {\"chartPath\", \"insights_id\"} entries and the insights with those numbers are marked \
         on the saved charts. Charts, specs and insights are saved in the workspace's \
         visualization folder; existing files are never overwritten."
    }

    async fn call(
        &self,
        args: DataVisualizationArgs,
        _ctx: &ToolContext,
    ) -> Result<ToolResult, ToolError> {
        let path = self.resolve(&args.json_path);
        let text = match tokio::fs::read_to_string(&path).await {
            Ok(text) => text,
            Err(e) => {
                return Ok(ToolResult::failure(format!(
                    "Error: {e}: {}",
                    path.display()
                )));
            }
        };
        Ok(match args.tool_type {
            ToolType::Visualization => self.visualize(&text, &args).await,
            ToolType::Insight => self.insight(&text, &args).await,
        })
    }
}
