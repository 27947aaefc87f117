//! Chart specifications: what to draw, chosen by the model or by rules.

use agent_core::{Message, ToolChoice, ToolDefinition};
use agent_llm::ChatModel;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::data::Table;

/// The chart types the renderer draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ChartType {
    /// Vertical bars, one group per x value, one bar per series.
    Bar,
    /// Lines, one per series.
    Line,
    /// Filled areas, one per series.
    Area,
    /// Points of a numeric x against numeric y series.
    Scatter,
    /// Shares of a whole, from the first y field.
    Pie,
    /// Bars of the first y field on the left axis, a line of the second on the right axis.
    DualAxis,
}

impl ChartType {
    /// The wire name (`bar`, `line`, `area`, `scatter`, `pie`, `dual-axis`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bar => "bar",
            Self::Line => "line",
            Self::Area => "area",
            Self::Scatter => "scatter",
            Self::Pie => "pie",
            Self::DualAxis => "dual-axis",
        }
    }

    /// Every chart type.
    pub const ALL: [Self; 6] = [
        Self::Bar,
        Self::Line,
        Self::Area,
        Self::Scatter,
        Self::Pie,
        Self::DualAxis,
    ];
}

/// What to draw: the chart type, the x field, the y fields (series) and the title.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChartSpec {
    /// The chart type: bar, line, area, scatter, pie or dual-axis.
    pub chart_type: ChartType,
    /// The column on the x axis (category, date or number; for pie, the slice labels). Omit it to
    /// use the row number.
    #[serde(default)]
    pub x_field: Option<String>,
    /// The numeric columns to plot, one series each (pie uses the first; dual-axis the first two).
    pub y_fields: Vec<String>,
    /// The chart title.
    pub title: String,
}

/// The name of the function the model is forced to call.
pub const CHART_SPEC_TOOL: &str = "generate_chart_spec";

impl ChartSpec {
    /// Checks the spec against `table`: the fields exist, y fields are numeric, and the chart
    /// type gets what it needs. Returns a reason when it does not fit.
    ///
    /// # Errors
    ///
    /// A human-readable reason.
    pub fn validate(&self, table: &Table) -> Result<(), String> {
        if let Some(x) = &self.x_field {
            let column = table
                .column(x)
                .ok_or_else(|| format!("unknown x field '{x}'"))?;
            if self.chart_type == ChartType::Scatter && !column.is_numeric() {
                return Err(format!("scatter needs a numeric x field, '{x}' is not"));
            }
        }
        if self.y_fields.is_empty() {
            return Err("no y field".to_owned());
        }
        for y in &self.y_fields {
            let column = table
                .column(y)
                .ok_or_else(|| format!("unknown y field '{y}'"))?;
            if !column.is_numeric() {
                return Err(format!("y field '{y}' is not numeric"));
            }
        }
        if self.chart_type == ChartType::DualAxis && self.y_fields.len() < 2 {
            return Err("dual-axis needs two y fields".to_owned());
        }
        Ok(())
    }

    /// The rule-based choice used without a model or when its answer does not fit:
    ///
    /// * a text x column and one numeric column with at most 8 positive values whose header
    ///   speaks of shares (`share`, `percent`, `ratio`, `proportion`, `%`, `占比`) → pie;
    /// * a text x column and exactly two numeric columns whose scales differ more than tenfold →
    ///   dual-axis;
    /// * a text x column that looks like dates or years, or more than 12 rows → line;
    /// * any other text x column → bar;
    /// * no text column and two or more numeric columns → scatter of the second against the
    ///   first; one numeric column → line over the row number.
    #[must_use]
    pub fn fallback(table: &Table, title: &str) -> Self {
        let numeric: Vec<&str> = table
            .columns
            .iter()
            .filter(|c| c.is_numeric())
            .map(|c| c.name.as_str())
            .collect();
        let text = table.columns.iter().find(|c| !c.is_numeric());
        let title = title.to_owned();
        let Some(x) = text else {
            let (chart_type, x_field, y_fields) = match numeric.as_slice() {
                [x, rest @ ..] if !rest.is_empty() => (
                    if looks_temporal(x) {
                        ChartType::Line
                    } else {
                        ChartType::Scatter
                    },
                    Some((*x).to_owned()),
                    rest.iter().map(|s| (*s).to_owned()).collect(),
                ),
                _ => (
                    ChartType::Line,
                    None,
                    numeric.iter().map(|s| (*s).to_owned()).collect(),
                ),
            };
            return Self {
                chart_type,
                x_field,
                y_fields,
                title,
            };
        };
        let y_fields: Vec<String> = numeric.iter().map(|s| (*s).to_owned()).collect();
        let rows = table.rows();
        let chart_type = if numeric.len() == 1 && rows <= 8 && is_share(numeric[0], table) {
            ChartType::Pie
        } else if numeric.len() == 2 && scales_differ(table, numeric[0], numeric[1]) {
            ChartType::DualAxis
        } else if looks_temporal(&x.name)
            || x.values.iter().flatten().all(|v| looks_like_date(v))
            || rows > 12
        {
            ChartType::Line
        } else {
            ChartType::Bar
        };
        Self {
            chart_type,
            x_field: Some(x.name.clone()),
            y_fields,
            title,
        }
    }

    /// The forced function the model calls to answer, with this struct's schema.
    #[must_use]
    pub fn tool_definition() -> ToolDefinition {
        ToolDefinition::new(
            CHART_SPEC_TOOL,
            "Choose how to chart the data set: the chart type, the x field, the numeric y fields \
             (one series each) and a title.",
            agent_tools::parameters_schema::<Self>(),
        )
    }

    /// Asks `llm` for a spec through a forced call of [`CHART_SPEC_TOOL`]; falls back to
    /// [`ChartSpec::fallback`] when the call fails or the answer does not fit the table. The
    /// second value says why the fallback was used (`None` when the model's spec was kept).
    pub async fn choose(
        llm: Option<&dyn ChatModel>,
        table: &Table,
        title: &str,
        language: &str,
    ) -> (Self, Option<String>) {
        let Some(llm) = llm else {
            return (Self::fallback(table, title), Some("no model".to_owned()));
        };
        match ask_model(llm, table, title, language).await {
            Ok(spec) => match spec.validate(table) {
                Ok(()) => (spec, None),
                Err(reason) => {
                    tracing::warn!(%reason, "chart spec from the model does not fit; using rules");
                    (Self::fallback(table, title), Some(reason))
                }
            },
            Err(reason) => {
                tracing::warn!(%reason, "chart spec request failed; using rules");
                (Self::fallback(table, title), Some(reason))
            }
        }
    }
}

async fn ask_model(
    llm: &dyn ChatModel,
    table: &Table,
    title: &str,
    language: &str,
) -> Result<ChartSpec, String> {
    let types: Vec<&str> = ChartType::ALL.iter().map(|t| t.as_str()).collect();
    let system = Message::system_message(format!(
        "You choose charts for data sets. Pick one of: {}. Use only column names that exist; y \
         fields must be numeric columns. Write the title in {}.",
        types.join(", "),
        if language == "zh" {
            "Chinese"
        } else {
            "English"
        }
    ));
    let user = Message::user_message(format!("Chart request: {title}\n\n{}", table.describe(10)));
    let response = llm
        .ask_tool(
            vec![user],
            vec![system],
            vec![ChartSpec::tool_definition()],
            ToolChoice::Required,
        )
        .await
        .map_err(|e| e.to_string())?;
    let call = response
        .tool_calls
        .iter()
        .find(|c| c.function.name == CHART_SPEC_TOOL)
        .ok_or_else(|| "the model did not call generate_chart_spec".to_owned())?;
    let mut spec: ChartSpec = serde_json::from_str(&call.function.arguments)
        .map_err(|e| format!("invalid chart spec arguments: {e}"))?;
    if spec.title.trim().is_empty() {
        title.clone_into(&mut spec.title);
    }
    Ok(spec)
}

fn looks_temporal(name: &str) -> bool {
    let name = name.to_lowercase();
    [
        "date", "time", "year", "month", "day", "week", "quarter", "日期", "年", "月",
    ]
    .iter()
    .any(|k| name.contains(k))
}

fn looks_like_date(value: &str) -> bool {
    let digits = value.chars().filter(char::is_ascii_digit).count();
    let separators = value
        .chars()
        .filter(|c| matches!(c, '-' | '/' | ':'))
        .count();
    digits >= 4 && separators >= 1 && digits + separators + 1 >= value.len()
}

fn is_share(name: &str, table: &Table) -> bool {
    let lower = name.to_lowercase();
    let named = [
        "share",
        "percent",
        "ratio",
        "proportion",
        "%",
        "占比",
        "比例",
    ]
    .iter()
    .any(|k| lower.contains(k));
    let positive = table
        .column(name)
        .and_then(crate::data::Column::numbers)
        .is_some_and(|v| v.iter().flatten().all(|x| *x > 0.0));
    named && positive
}

fn scales_differ(table: &Table, a: &str, b: &str) -> bool {
    let peak = |name: &str| {
        table
            .column(name)
            .and_then(crate::data::Column::numbers)
            .map_or(0.0, |v| {
                v.iter().flatten().fold(0.0_f64, |m, x| m.max(x.abs()))
            })
    };
    let (pa, pb) = (peak(a), peak(b));
    pa > 0.0 && pb > 0.0 && (pa / pb >= 10.0 || pb / pa >= 10.0)
}
