//! Renders a sample CSV with every chart type into a folder: `cargo run -p openmanus-agent-charts
//! --example render -- OUT_DIR`.

use agent_charts::{ChartData, ChartSpec, ChartType, Table, compute_insights, render_png};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".into()));
    std::fs::create_dir_all(&out)?;
    let table = Table::from_csv_bytes(
        b"month,sales,profit\nJan,120,12\nFeb,135,15\nMar,150,16\nApr,170,19\nMay,400,22\nJun,205,25\nJul,220,27\n",
    )?;
    for chart_type in ChartType::ALL {
        let (x, ys) = match chart_type {
            ChartType::Scatter => ("sales", vec!["profit".to_owned()]),
            ChartType::Pie | ChartType::Area => ("month", vec!["sales".to_owned()]),
            _ => ("month", vec!["sales".to_owned(), "profit".to_owned()]),
        };
        let spec = ChartSpec {
            chart_type,
            x_field: Some(x.to_owned()),
            y_fields: ys,
            title: format!("Monthly sales ({})", chart_type.as_str()),
        };
        let data = ChartData::new(&spec, &table)?;
        let insights = compute_insights(&data.labels, &data.series_refs(), "en");
        let marks: Vec<_> = insights
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, x)| (i + 1, x))
            .take(2)
            .collect();
        render_png(
            &spec,
            &data,
            &marks,
            &out.join(format!("{}.png", chart_type.as_str())),
        )?;
    }
    Ok(())
}
