//! DataAnalysis end to end over HTTP: the real LLM client against the strict mock OpenAI server,
//! pandas cleaning the CSV in the persistent interpreter, the preparation JSON, the charts and
//! insights rendered in process, a report, terminate.
//!
//! The Python snippets import pandas: `cargo xtask ci` installs it into a virtualenv and points
//! `ANALYSIS_PYTHON` at its interpreter; without that variable `python3` from `PATH` is used and
//! must have pandas.

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_charts::{CHART_SPEC_TOOL, data_analysis_with_python};
use agent_core::{Agent, Role, ToolCall};
use agent_llm::{LlmClient, LlmSettings};
use agent_testkit::{Completion, MockOpenAi};
use serde_json::json;

fn python() -> PathBuf {
    let python =
        std::env::var_os("ANALYSIS_PYTHON").map_or_else(|| "python3".into(), PathBuf::from);
    let check = std::process::Command::new(&python)
        .args(["-c", "import pandas"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        check.status.success(),
        "{} has no pandas: run `cargo xtask ci` (it installs pandas into target/xtask-tools) or \
         set ANALYSIS_PYTHON to an interpreter that has it",
        python.display()
    );
    python
}

fn call(id: &str, name: &str, args: serde_json::Value) -> Completion {
    Completion::tool_calls(None, [ToolCall::new(id, name, args.to_string())])
}

#[tokio::test]
async fn data_analysis_over_http_with_pandas_writes_charts_insights_and_a_report() {
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    std::fs::write(
        workspace.join("raw.csv"),
        "month,region,sales\nJan,north,120\nFeb,north,\nMar,north,150\nApr,north,170\nMay,north,400\nJun,north,205\nJul,north,215\n",
    )
    .unwrap();
    let clean = "import pandas as pd\ndf = pd.read_csv('raw.csv').dropna()\ndf['sales'] = df['sales'].astype(int)\ndf[['month', 'sales']].to_csv('clean.csv', index=False)\nprint(len(df), 'rows kept, max', df['sales'].max())";
    let prepare = "import json\njson.dump([{'csvFilePath': 'clean.csv', 'chartTitle': 'Sales by month'}], open('charts.json', 'w'))\nprint('charts.json')";
    let report = "import pandas as pd\nmd = open('visualization/clean.md').read()\ntotal = pd.read_csv('clean.csv')['sales'].sum()\nopen('report.md', 'w').write(f'# Report\\nTotal sales: {total}\\n\\n' + md)\nprint('report written')";

    let server = MockOpenAi::start().await.unwrap();
    server
        .push(call("c1", "python_execute", json!({"code_type": "process", "code": clean})))
        .push(call("c2", "visualization_preparation", json!({"code_type": "visualization", "code": prepare})))
        .push(call("c3", "data_visualization", json!({"json_path": "charts.json", "output_type": "html", "language": "en"})))
        // The tool's forced chart-spec call.
        .push(call("s1", CHART_SPEC_TOOL, json!({"chart_type": "line", "x_field": "month", "y_fields": ["sales"], "title": "Sales by month"})))
        .push(call("c4", "python_execute", json!({"code_type": "report", "code": report})))
        .push(Completion::tool_calls(
            Some("The report is in report.md.".into()),
            [ToolCall::new("c5", "terminate", r#"{"status":"success"}"#)],
        ));
    let mut settings = LlmSettings::new("gpt-4o", server.base_url()).with_api_key("sk-analysis");
    settings.max_attempts = 1;
    let llm = Arc::new(LlmClient::new(settings).unwrap());

    let mut agent = data_analysis_with_python(llm, &workspace, &python);
    let outcome = tokio::time::timeout(
        Duration::from_secs(120),
        agent.run(Some("Analyse raw.csv and write a report.".into())),
    )
    .await
    .expect("the agent hung")
    .unwrap();
    assert!(outcome.is_finished(), "{}", outcome.text());
    server.verify().unwrap();
    assert_eq!(server.remaining(), 0);

    let seen: Vec<String> = agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text().to_owned())
        .collect();
    assert_eq!(
        seen[0],
        "Observed output of cmd `python_execute` executed:\n6 rows kept, max 400"
    );
    assert!(
        seen[2].contains("Chart Generated Successful!"),
        "{}",
        seen[2]
    );

    // The chart request went over HTTP as a forced function call with the table's columns.
    let chart_request = server
        .requests()
        .into_iter()
        .find(|r| r.body["tool_choice"] == "required")
        .expect("a forced chart-spec request");
    assert_eq!(
        chart_request.body["tools"][0]["function"]["name"],
        CHART_SPEC_TOOL
    );
    assert!(chart_request.body["messages"].to_string().contains("sales"));

    // The files: the self-contained HTML chart with its SVG and insights, the insights file
    // naming the May outlier, the saved spec, the report.
    let html = std::fs::read_to_string(workspace.join("visualization/clean.html")).unwrap();
    assert!(html.contains("<svg"), "the chart is inline SVG");
    assert!(!html.contains("<script src="), "no CDN");
    let insights = std::fs::read_to_string(workspace.join("visualization/clean.md")).unwrap();
    assert!(
        insights.starts_with("## Sales by month Insights\n1. "),
        "{insights}"
    );
    assert!(insights.contains("May"), "{insights}");
    let spec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(workspace.join("visualization/clean.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(spec["spec"]["chart_type"], "line");
    assert_eq!(spec["spec"]["x_field"], "month");
    let report = std::fs::read_to_string(workspace.join("report.md")).unwrap();
    assert!(
        report.starts_with("# Report\nTotal sales: 1260\n\n## Sales by month Insights"),
        "{report}"
    );
}
