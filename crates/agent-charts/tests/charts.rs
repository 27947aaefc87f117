//! Charts, insights, the forced chart-spec call and the DataAnalysis agent.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use agent_charts::{
    CHART_SPEC_TOOL, ChartSpec, ChartType, DataVisualization, HEIGHT, InsightKind, OutputType,
    SavedChart, Table, WIDTH, compute_insights, data_analysis,
};
use agent_core::{Agent, Role, ToolChoice};
use agent_llm::LlmError;
use agent_testkit::{ScriptedModel, tool_call};
use agent_tools::{Tool, ToolContext};
use serde_json::json;

fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    (w, h)
}

/// How many distinct colours the PNG at `path` holds, and the share of its pixels that are not
/// its most common colour (the background): a chart that drew nothing has one colour and 0.
fn drawn(path: &Path) -> (usize, f64) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buffer).unwrap();
    let channels = info.color_type.samples();
    let mut counts = std::collections::HashMap::new();
    for pixel in buffer[..info.buffer_size()].chunks(channels) {
        *counts.entry(pixel.to_vec()).or_insert(0usize) += 1;
    }
    let total: usize = counts.values().sum();
    let background = counts.values().max().copied().unwrap_or(0);
    #[allow(clippy::cast_precision_loss)]
    let share = (total - background) as f64 / total as f64;
    (counts.len(), share)
}

const SALES: &str = "month,sales,profit\nJan,120,12\nFeb,135,15\nMar,150,16\nApr,170,19\nMay,400,22\nJun,205,25\nJul,220,27\n";

fn fixture(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn spec(chart_type: ChartType, x: Option<&str>, ys: &[&str]) -> ChartSpec {
    ChartSpec {
        chart_type,
        x_field: x.map(str::to_owned),
        y_fields: ys.iter().map(|s| (*s).to_owned()).collect(),
        title: format!("{} chart", chart_type.as_str()),
    }
}

/// A model that answers the forced call with `spec`.
fn model_answering(spec: &ChartSpec) -> Arc<ScriptedModel> {
    let model = Arc::new(ScriptedModel::new());
    model.push_tool_calls(
        "",
        [tool_call(
            "s1",
            CHART_SPEC_TOOL,
            &serde_json::to_string(spec).unwrap(),
        )],
    );
    model
}

#[tokio::test]
async fn every_chart_type_renders_to_png_and_html_and_its_spec_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let sales = fixture(dir.path(), "sales.csv", SALES);
    let points = fixture(
        dir.path(),
        "points.csv",
        "height,weight\n150,50\n160,56\n170,65\n180,72\n190,80\n",
    );
    let shares = fixture(
        dir.path(),
        "shares.csv",
        "browser,share\nChrome,65\nSafari,19\nEdge,5\nFirefox,3\n",
    );
    let cases = [
        (
            spec(ChartType::Bar, Some("month"), &["sales", "profit"]),
            &sales,
        ),
        (
            spec(ChartType::Line, Some("month"), &["sales", "profit"]),
            &sales,
        ),
        (spec(ChartType::Area, Some("month"), &["sales"]), &sales),
        (
            spec(ChartType::Scatter, Some("height"), &["weight"]),
            &points,
        ),
        (spec(ChartType::Pie, Some("browser"), &["share"]), &shares),
        (
            spec(ChartType::DualAxis, Some("month"), &["sales", "profit"]),
            &sales,
        ),
    ];
    for (chart_spec, csv) in cases {
        for output in [OutputType::Png, OutputType::Html] {
            let tool = DataVisualization::new(dir.path()).with_llm(model_answering(&chart_spec));
            let out = tool.make_chart(csv, "ignored", output, "en").await.unwrap();
            let name = chart_spec.chart_type.as_str();
            match output {
                OutputType::Png => {
                    assert_eq!(png_size(&out.chart_path), (WIDTH, HEIGHT), "{name}");
                    // Something was drawn: axes, text and the series in several colours.
                    let (colours, ink) = drawn(&out.chart_path);
                    assert!(colours >= 4, "{name}: only {colours} colours");
                    assert!(
                        ink > 0.01,
                        "{name}: only {ink:.4} of the pixels are not background"
                    );
                }
                OutputType::Html => {
                    let html = std::fs::read_to_string(&out.chart_path).unwrap();
                    assert!(html.contains("<svg"), "{name}");
                    assert!(!html.contains("<script"), "{name}");
                    let saved: SavedChart =
                        serde_json::from_str(&std::fs::read_to_string(&out.spec_path).unwrap())
                            .unwrap();
                    for insight in &saved.insights {
                        assert!(html.contains(&insight.text.replace('&', "&amp;")), "{name}");
                    }
                }
            }
            let saved: SavedChart =
                serde_json::from_str(&std::fs::read_to_string(&out.spec_path).unwrap()).unwrap();
            assert_eq!(saved.spec, chart_spec, "{name}");
            let again: SavedChart =
                serde_json::from_str(&serde_json::to_string(&saved).unwrap()).unwrap();
            assert_eq!(again, saved);
            if chart_spec.chart_type == ChartType::Pie {
                assert!(out.insight_path.is_none());
            } else {
                let md = std::fs::read_to_string(out.insight_path.as_ref().unwrap()).unwrap();
                assert!(
                    md.starts_with(&format!("## {} Insights\n1. ", chart_spec.title)),
                    "{md}"
                );
            }
        }
    }
    // Nothing was overwritten: the second sales chart got the `_new` suffix, and so on.
    let vis = dir.path().join("visualization");
    assert!(vis.join("sales.png").exists());
    assert!(vis.join("sales_new.html").exists());
    assert!(vis.join("sales_new_new.png").exists());
}

#[test]
fn insights_find_the_maximum_the_outlier_and_the_trend() {
    let labels: Vec<String> = (1..=8).map(|i| format!("d{i}")).collect();
    let rising: Vec<Option<f64>> = [10.0, 12.0, 14.0, 16.0, 18.0, 20.0, 22.0, 24.0]
        .into_iter()
        .map(Some)
        .collect();
    let spiky: Vec<Option<f64>> = [5.0, 6.0, 5.0, 90.0, 6.0, 5.0, 6.0, 5.0]
        .into_iter()
        .map(Some)
        .collect();
    let found = compute_insights(&labels, &[("rising", &rising)], "en");
    let trend = found.iter().find(|i| i.kind == InsightKind::Trend).unwrap();
    assert!((trend.value - 2.0).abs() < 1e-9, "{trend:?}");
    assert!(trend.text.contains("increasing trend of about 2 per step"));
    let max = found
        .iter()
        .find(|i| i.kind == InsightKind::Maximum)
        .unwrap();
    assert_eq!((max.index, max.value), (Some(7), 24.0));
    assert_eq!(max.text, "The maximum of rising is 24 at d8");

    let found = compute_insights(&labels, &[("spiky", &spiky)], "en");
    let outliers: Vec<_> = found
        .iter()
        .filter(|i| i.kind == InsightKind::Outlier)
        .collect();
    assert_eq!(outliers.len(), 1, "{found:?}");
    assert_eq!((outliers[0].index, outliers[0].value), (Some(3), 90.0));
    assert_eq!(found[0].kind, InsightKind::Outlier, "outliers come first");
    assert!(found.iter().all(|i| i.kind != InsightKind::Trend));

    let peak: Vec<Option<f64>> = [1.0, 3.0, 5.0, 7.0, 5.0, 3.0, 1.0]
        .into_iter()
        .map(Some)
        .collect();
    let found = compute_insights(&labels, &[("peak", &peak)], "en");
    let turn = found
        .iter()
        .find(|i| i.kind == InsightKind::TurningPoint)
        .unwrap();
    assert_eq!(turn.index, Some(3));

    let both = compute_insights(&labels, &[("rising", &rising), ("double", &rising)], "en");
    assert!(
        both.iter()
            .any(|i| i.kind == InsightKind::Correlation && (i.value - 1.0).abs() < 1e-9)
    );
    assert!(both.len() <= 6);
}

#[tokio::test]
async fn the_model_is_forced_to_call_the_chart_spec_tool() {
    let dir = tempfile::tempdir().unwrap();
    let csv = fixture(dir.path(), "sales.csv", SALES);
    let wanted = spec(ChartType::Area, Some("month"), &["profit"]);
    let model = model_answering(&wanted);
    let tool = DataVisualization::new(dir.path()).with_llm(model.clone());
    let out = tool
        .make_chart(&csv, "Profit", OutputType::Png, "en")
        .await
        .unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].tool_choice, Some(ToolChoice::Required));
    assert_eq!(requests[0].tool_names(), vec![CHART_SPEC_TOOL]);
    assert!(requests[0].messages[0].text().contains("sales (number)"));
    let saved: SavedChart =
        serde_json::from_str(&std::fs::read_to_string(out.spec_path).unwrap()).unwrap();
    assert_eq!(saved.spec, wanted);
}

#[tokio::test]
async fn a_failed_or_unfit_answer_falls_back_to_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let csv = fixture(dir.path(), "sales.csv", SALES);
    let table = Table::from_csv_path(&csv).unwrap();
    let expected = ChartSpec::fallback(&table, "Sales");
    assert_eq!(
        expected.chart_type,
        ChartType::DualAxis,
        "sales peak at 400, profit at 27"
    );
    assert_eq!(expected.x_field.as_deref(), Some("month"));
    assert_eq!(expected.y_fields, ["sales", "profit"]);

    let model = Arc::new(ScriptedModel::new());
    model.push_error(LlmError::InvalidRequest("boom".into()));
    model.push_tool_calls(
        "",
        [tool_call(
            "s1",
            CHART_SPEC_TOOL,
            &serde_json::to_string(&spec(ChartType::Line, Some("nope"), &["sales"])).unwrap(),
        )],
    );
    let tool = DataVisualization::new(dir.path()).with_llm(model.clone());
    for _ in 0..2 {
        let out = tool
            .make_chart(&csv, "Sales", OutputType::Png, "en")
            .await
            .unwrap();
        let saved: SavedChart =
            serde_json::from_str(&std::fs::read_to_string(out.spec_path).unwrap()).unwrap();
        assert_eq!(saved.spec, expected);
    }
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn the_tool_reports_successes_errors_and_marks_insights() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), "sales.csv", SALES);
    fixture(
        dir.path(),
        "charts.json",
        &json!([{"csvFilePath": "sales.csv", "chartTitle": "Sales"}, {"csvFilePath": "missing.csv", "chartTitle": "X"}]).to_string(),
    );
    let tool = DataVisualization::new(dir.path());
    let ctx = ToolContext::default();
    let result = tool
        .execute(
            json!({"json_path": "charts.json", "output_type": "png"}),
            &ctx,
        )
        .await
        .unwrap();
    let text = result.to_string();
    assert!(
        text.starts_with(
            "Error: # Error chart generated\nError in missing.csv: No such file or directory"
        ),
        "{text}"
    );
    assert!(
        text.contains("Chart Generated Successful!\n## Sales\nChart saved in: "),
        "{text}"
    );
    assert!(text.contains("## Sales Insights\n1. "), "{text}");

    fixture(
        dir.path(),
        "insights.json",
        &json!([{"chartPath": "sales.png", "insights_id": [1, 2]}]).to_string(),
    );
    let result = tool
        .execute(
            json!({"json_path": "insights.json", "output_type": "png", "tool_type": "insight"}),
            &ctx,
        )
        .await
        .unwrap();
    let text = result.to_string();
    assert!(
        text.starts_with("# Charts Update with Insights\n"),
        "{text}"
    );
    assert_eq!(
        png_size(&dir.path().join("visualization/sales.png")),
        (WIDTH, HEIGHT)
    );

    let schema = tool.to_param().function.parameters;
    assert_eq!(schema["required"], json!(["json_path"]));
    assert_eq!(
        schema["properties"]["output_type"]["enum"],
        json!(["png", "html"])
    );
    assert_eq!(
        schema["properties"]["language"]["enum"],
        json!(["zh", "en"])
    );
}

fn call(id: &str, name: &str, args: serde_json::Value) -> agent_core::ToolCall {
    tool_call(id, name, &args.to_string())
}

#[tokio::test]
async fn data_analysis_cleans_prepares_charts_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    fixture(
        &workspace,
        "raw.csv",
        "month,sales\nJan,120\nFeb,\nMar,150\nApr,170\nMay,190\nJun,205\n",
    );
    let clean = "import csv\nrows = [r for r in csv.DictReader(open('raw.csv')) if r['sales']]\nwith open('clean.csv', 'w', newline='') as f:\n    w = csv.writer(f)\n    w.writerow(['month', 'sales'])\n    w.writerows([[r['month'], r['sales']] for r in rows])\nprint(len(rows), 'rows kept')";
    let prepare = "import json\nwith open('charts.json', 'w') as f:\n    json.dump([{'csvFilePath': 'clean.csv', 'chartTitle': 'Sales by month'}], f)\nprint('charts.json')";
    let report = "md = open('visualization/clean.md').read()\nwith open('report.md', 'w') as f:\n    f.write('# Report\\n' + md)\nprint('report written')";
    let model = Arc::new(ScriptedModel::new());
    model
        .push_tool_calls("Cleaning.", [call("c1", "python_execute", json!({"code_type": "process", "code": clean}))])
        .push_tool_calls("Preparing.", [call("c2", "visualization_preparation", json!({"code_type": "visualization", "code": prepare}))])
        .push_tool_calls("Drawing.", [call("c3", "data_visualization", json!({"json_path": "charts.json", "output_type": "png"}))])
        // The tool's forced chart-spec call.
        .push_tool_calls("", [call("s1", CHART_SPEC_TOOL, json!({"chart_type": "line", "x_field": "month", "y_fields": ["sales"], "title": "Sales by month"}))])
        .push_tool_calls("Reporting.", [call("c4", "python_execute", json!({"code_type": "report", "code": report}))])
        .push_tool_calls("Done.", [call("c5", "terminate", json!({"status": "success"}))]);

    let mut agent = data_analysis(model.clone(), &workspace);
    let outcome = agent.run(Some("Analyse raw.csv.".into())).await.unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    let seen: Vec<String> = agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text().to_owned())
        .collect();
    assert_eq!(
        seen[0],
        "Observed output of cmd `python_execute` executed:\n5 rows kept"
    );
    assert!(
        seen[2].contains("Chart Generated Successful!\n## Sales by month"),
        "{}",
        seen[2]
    );
    assert_eq!(
        png_size(&workspace.join("visualization/clean.png")),
        (WIDTH, HEIGHT)
    );
    let report = std::fs::read_to_string(workspace.join("report.md")).unwrap();
    assert!(
        report.starts_with("# Report\n## Sales by month Insights\n1. "),
        "{report}"
    );
    assert!(workspace.join("visualization/clean.json").exists());
    let chart_request = &model.requests()[3];
    assert_eq!(chart_request.tool_choice, Some(ToolChoice::Required));
    let first = &model.requests()[0];
    assert_eq!(
        first.tool_names(),
        vec![
            "python_execute",
            "visualization_preparation",
            "data_visualization",
            "terminate"
        ]
    );
    assert!(
        first.system_msgs[0]
            .text()
            .contains(&workspace.display().to_string())
    );
}
