//! Rendering with plotters: PNG files, SVG text, and self-contained HTML pages.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::ChartError;
use crate::data::Table;
use crate::insights::{Insight, InsightKind, fmt_number, linear_regression};
use crate::spec::{ChartSpec, ChartType};

/// Width of rendered charts, in pixels.
pub const WIDTH: u32 = 1000;
/// Height of rendered charts, in pixels.
pub const HEIGHT: u32 = 600;

/// The font family for text in Latin, Cyrillic, Greek... scripts.
const FONT: &str = "sans-serif";

/// Families tried, in order, for charts whose text has Chinese, Japanese or Korean characters
/// (the default sans-serif font usually has none of them: `apt-get install fonts-wqy-microhei`
/// or `fonts-noto-cjk`).
const CJK_FONTS: [&str; 5] = [
    "Noto Sans CJK SC",
    "WenQuanYi Micro Hei",
    "Source Han Sans SC",
    "Droid Sans Fallback",
    "AR PL UMing CN",
];

/// Whether `text` has a character of the CJK scripts.
fn has_cjk(text: &str) -> bool {
    text.chars().any(|c| {
        matches!(u32::from(c),
            0x3000..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF
            | 0xF900..=0xFAFF | 0xFF00..=0xFFEF | 0x20000..=0x2FA1F)
    })
}

/// The first installed CJK font family, looked up once.
#[must_use]
pub fn cjk_font() -> Option<&'static str> {
    static FOUND: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    // Plotters falls back to the default font for a family it cannot find, so ask the
    // system font source (fontconfig) which families really exist.
    *FOUND.get_or_init(|| {
        let source = font_kit::source::SystemSource::new();
        CJK_FONTS.into_iter().find(|family| {
            source
                .select_family_by_name(family)
                .is_ok_and(|handle| !handle.is_empty())
        })
    })
}

/// The font family for a chart: a CJK font when its title, labels, series names or insights
/// have CJK characters and one is installed (otherwise they would be drawn as empty boxes; a
/// warning says so), else sans-serif.
fn font_for(spec: &ChartSpec, data: &ChartData, marks: &[(usize, Insight)]) -> &'static str {
    let cjk = has_cjk(&spec.title)
        || spec.x_field.as_deref().is_some_and(has_cjk)
        || data.labels.iter().any(|l| has_cjk(l))
        || data.series.iter().any(|(name, _)| has_cjk(name))
        || marks.iter().any(|(_, insight)| has_cjk(&insight.text));
    if !cjk {
        return FONT;
    }
    cjk_font().unwrap_or_else(|| {
        tracing::warn!(
            "the chart has CJK text but no CJK font is installed (e.g. apt-get install fonts-wqy-microhei); it will show as boxes"
        );
        FONT
    })
}
const MARK: RGBColor = RGBColor(214, 39, 40);

/// The values a chart draws, taken from a [`Table`] by a [`ChartSpec`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChartData {
    /// One label per row (the x field's cells, or row numbers).
    pub labels: Vec<String>,
    /// The x position of each row: the x field's numbers for a line, area or scatter chart over
    /// a numeric column without gaps, otherwise the row index.
    pub xs: Vec<f64>,
    /// Whether `xs` are row indices (categories) rather than numbers.
    pub categorical: bool,
    /// The y series: name and values by row.
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

impl ChartData {
    /// Extracts the data of `spec` from `table`.
    ///
    /// # Errors
    ///
    /// [`ChartError::InvalidSpec`] when the spec does not fit the table.
    pub fn new(spec: &ChartSpec, table: &Table) -> Result<Self, ChartError> {
        spec.validate(table).map_err(ChartError::InvalidSpec)?;
        let rows = table.rows();
        let x_column = spec.x_field.as_deref().and_then(|x| table.column(x));
        let labels: Vec<String> = (0..rows)
            .map(|row| x_column.map_or_else(|| (row + 1).to_string(), |c| c.label(row).to_owned()))
            .collect();
        let numeric_x = matches!(
            spec.chart_type,
            ChartType::Line | ChartType::Area | ChartType::Scatter
        )
        .then(|| x_column.and_then(crate::data::Column::numbers))
        .flatten()
        .and_then(|v| v.into_iter().collect::<Option<Vec<f64>>>());
        let categorical = numeric_x.is_none();
        #[allow(clippy::cast_precision_loss)]
        let xs = numeric_x.unwrap_or_else(|| (0..rows).map(|i| i as f64).collect());
        let series = spec
            .y_fields
            .iter()
            .filter_map(|y| {
                let values = table.column(y)?.numbers()?;
                Some((y.clone(), values))
            })
            .collect();
        Ok(Self {
            labels,
            xs,
            categorical,
            series,
        })
    }

    /// The series as `(name, values)` borrowed pairs, for [`crate::compute_insights`].
    #[must_use]
    pub fn series_refs(&self) -> Vec<(&str, &[Option<f64>])> {
        self.series
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect()
    }
}

/// Renders the chart to a PNG file of [`WIDTH`] × [`HEIGHT`], with `marks` drawn on it.
///
/// # Errors
///
/// [`ChartError::Render`] when drawing or encoding fails.
pub fn render_png(
    spec: &ChartSpec,
    data: &ChartData,
    marks: &[(usize, Insight)],
    path: &Path,
) -> Result<(), ChartError> {
    let root = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    draw(&root, spec, data, marks).map_err(ChartError::Render)?;
    root.present()
        .map_err(|e| ChartError::Render(e.to_string()))
}

/// Renders the chart to SVG text of [`WIDTH`] × [`HEIGHT`], with `marks` drawn on it.
///
/// # Errors
///
/// [`ChartError::Render`] when drawing fails.
pub fn render_svg(
    spec: &ChartSpec,
    data: &ChartData,
    marks: &[(usize, Insight)],
) -> Result<String, ChartError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, spec, data, marks).map_err(ChartError::Render)?;
        root.present()
            .map_err(|e| ChartError::Render(e.to_string()))?;
    }
    Ok(svg)
}

/// A self-contained HTML page: the title, the SVG inline and the insights; no script, no CDN.
#[must_use]
pub fn html_page(title: &str, svg: &str, insights: &[Insight]) -> String {
    let mut items = String::new();
    for insight in insights {
        items.push_str(&format!("    <li>{}</li>\n", escape(&insight.text)));
    }
    let insights_html = if items.is_empty() {
        String::new()
    } else {
        format!("  <h2>Insights</h2>\n  <ol>\n{items}  </ol>\n")
    };
    format!(
        "<!DOCTYPE html>\n<html>\n<head>\n  <meta charset=\"utf-8\">\n  <title>{t}</title>\n  \
         <style>body{{font-family:sans-serif;margin:2em;}} svg{{max-width:100%;height:auto;}}</style>\n\
         </head>\n<body>\n  <h1>{t}</h1>\n  <div class=\"chart\">\n{svg}\n  </div>\n{insights_html}</body>\n</html>\n",
        t = escape(title)
    )
}

/// Where an insight's label sits relative to its marked point, in pixels: clear of the circle.
const LABEL_OFFSET: (i32, i32) = (14, -24);
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

type DrawResult = Result<(), String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &ChartSpec,
    data: &ChartData,
    marks: &[(usize, Insight)],
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let font = font_for(spec, data, marks);
    match spec.chart_type {
        ChartType::Pie => draw_pie(root, spec, data, font),
        ChartType::DualAxis => draw_dual(root, spec, data, marks, font),
        _ => draw_xy(root, spec, data, marks, font),
    }
}

fn y_range(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    let pad = if hi > lo { (hi - lo) * 0.08 } else { 1.0 };
    let lo = if from_zero && lo >= 0.0 {
        0.0
    } else {
        lo - pad
    };
    hi += pad;
    (lo, hi)
}

fn x_range(data: &ChartData) -> (f64, f64) {
    if data.categorical {
        #[allow(clippy::cast_precision_loss)]
        let n = data.xs.len() as f64;
        (-0.5, n - 0.5)
    } else {
        let (lo, hi) = y_range(data.xs.iter().copied(), false);
        (lo, hi)
    }
}

fn x_label(data: &ChartData, x: f64) -> String {
    if !data.categorical {
        return fmt_number(x);
    }
    let rounded = x.round();
    if (x - rounded).abs() > 1e-6 || rounded < 0.0 {
        return String::new();
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let index = rounded as usize;
    data.labels.get(index).cloned().unwrap_or_default()
}

fn color(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

fn points(data: &ChartData, values: &[Option<f64>]) -> Vec<(f64, f64)> {
    data.xs
        .iter()
        .zip(values)
        .filter_map(|(x, v)| v.map(|v| (*x, v)))
        .collect()
}

fn draw_xy<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &ChartSpec,
    data: &ChartData,
    marks: &[(usize, Insight)],
    font: &str,
) -> DrawResult {
    let from_zero = matches!(spec.chart_type, ChartType::Bar | ChartType::Area);
    let (ylo, yhi) = y_range(
        data.series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten().copied()),
        from_zero,
    );
    let (xlo, xhi) = x_range(data);
    let mut chart = ChartBuilder::on(root)
        .caption(&spec.title, (font, 28))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(xlo..xhi, ylo..yhi)
        .map_err(err)?;
    let labels = data.labels.len();
    let x_fmt = |x: &f64| x_label(data, *x);
    let y_fmt = |y: &f64| fmt_number(*y);
    let mut mesh = chart.configure_mesh();
    mesh.x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .x_desc(spec.x_field.clone().unwrap_or_default())
        .label_style((font, 14));
    if data.categorical {
        mesh.x_labels(labels.clamp(1, 20) + 1).disable_x_mesh();
    }
    mesh.draw().map_err(err)?;
    let count = data.series.len().max(1);
    for (k, (name, values)) in data.series.iter().enumerate() {
        let c = color(k);
        let pts = points(data, values);
        let legend_color = c;
        let anno = match spec.chart_type {
            ChartType::Bar => {
                #[allow(clippy::cast_precision_loss)]
                let width = 0.8 / count as f64;
                #[allow(clippy::cast_precision_loss)]
                let offset = -0.4 + width * k as f64;
                chart
                    .draw_series(pts.iter().map(|(x, y)| {
                        Rectangle::new(
                            [(x + offset, 0.0), (x + offset + width * 0.95, *y)],
                            c.filled(),
                        )
                    }))
                    .map_err(err)?
            }
            ChartType::Area => chart
                .draw_series(
                    AreaSeries::new(pts.iter().copied(), 0.0, c.mix(0.3))
                        .border_style(c.stroke_width(2)),
                )
                .map_err(err)?,
            ChartType::Scatter => chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 5, c.filled())))
                .map_err(err)?,
            _ => {
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))
                    .map_err(err)?;
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                    .map_err(err)?
            }
        };
        anno.label(name.clone()).legend(move |(x, y)| {
            Rectangle::new([(x, y - 5), (x + 12, y + 5)], legend_color.filled())
        });
    }
    // Marks: numbered circles on the points the chosen insights are about, trend lines dashed.
    for (number, insight) in marks {
        let Some(values) = data
            .series
            .iter()
            .find(|(n, _)| *n == insight.series)
            .map(|(_, v)| v)
        else {
            continue;
        };
        if insight.kind == InsightKind::Trend || insight.kind == InsightKind::Correlation {
            let pts = points(data, values);
            if let Some((slope, intercept, _)) = linear_regression(&pts)
                && let (Some(first), Some(last)) = (pts.first(), pts.last())
            {
                let line = [
                    (first.0, slope * first.0 + intercept),
                    (last.0, slope * last.0 + intercept),
                ];
                chart
                    .draw_series(DashedLineSeries::new(line, 8, 5, MARK.stroke_width(2)))
                    .map_err(err)?;
                chart
                    .draw_series([Text::new(
                        format!("[{number}]"),
                        line[1],
                        (font, 16).into_font().color(&MARK),
                    )])
                    .map_err(err)?;
            }
            continue;
        }
        let Some(index) = insight.index else {
            continue;
        };
        let (Some(x), Some(Some(y))) = (data.xs.get(index), values.get(index)) else {
            continue;
        };
        chart
            .draw_series([Circle::new((*x, *y), 10, MARK.stroke_width(3))])
            .map_err(err)?;
        chart
            .draw_series([EmptyElement::at((*x, *y))
                + Text::new(
                    format!("[{number}] {}", fmt_number(*y)),
                    LABEL_OFFSET,
                    (font, 16).into_font().color(&MARK),
                )])
            .map_err(err)?;
    }
    if data.series.len() > 1 || !marks.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((font, 14))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

fn draw_dual<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &ChartSpec,
    data: &ChartData,
    marks: &[(usize, Insight)],
    font: &str,
) -> DrawResult {
    let (Some((name1, v1)), Some((name2, v2))) = (data.series.first(), data.series.get(1)) else {
        return Err("dual-axis needs two series".to_owned());
    };
    let (xlo, xhi) = x_range(data);
    let (alo, ahi) = y_range(v1.iter().flatten().copied(), true);
    let (blo, bhi) = y_range(v2.iter().flatten().copied(), false);
    let mut chart = ChartBuilder::on(root)
        .caption(&spec.title, (font, 28))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .right_y_label_area_size(70)
        .build_cartesian_2d(xlo..xhi, alo..ahi)
        .map_err(err)?
        .set_secondary_coord(xlo..xhi, blo..bhi);
    let labels = data.labels.len();
    chart
        .configure_mesh()
        .x_label_formatter(&|x| x_label(data, *x))
        .y_label_formatter(&|y| fmt_number(*y))
        .x_labels(labels.clamp(1, 20) + 1)
        .disable_x_mesh()
        .y_desc(name1.clone())
        .label_style((font, 14))
        .draw()
        .map_err(err)?;
    chart
        .configure_secondary_axes()
        .y_label_formatter(&|y| fmt_number(*y))
        .y_desc(name2.clone())
        .label_style((font, 14))
        .draw()
        .map_err(err)?;
    let (c1, c2) = (color(0), color(1));
    chart
        .draw_series(
            points(data, v1)
                .into_iter()
                .map(|(x, y)| Rectangle::new([(x - 0.35, 0.0), (x + 0.35, y)], c1.filled())),
        )
        .map_err(err)?
        .label(name1.clone())
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c1.filled()));
    chart
        .draw_secondary_series(LineSeries::new(points(data, v2), c2.stroke_width(3)))
        .map_err(err)?
        .label(name2.clone())
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 12, y)], c2.stroke_width(3)));
    for (number, insight) in marks {
        let Some(index) = insight.index else {
            continue;
        };
        let (Some(x), first) = (data.xs.get(index), insight.series == *name1) else {
            continue;
        };
        let values = if first { v1 } else { v2 };
        let Some(Some(y)) = values.get(index) else {
            continue;
        };
        let label = format!("[{number}] {}", fmt_number(*y));
        let style = (font, 16).into_font().color(&MARK);
        if first {
            chart
                .draw_series([Circle::new((*x, *y), 10, MARK.stroke_width(3))])
                .map_err(err)?;
            chart
                .draw_series([EmptyElement::at((*x, *y)) + Text::new(label, LABEL_OFFSET, style)])
                .map_err(err)?;
        } else {
            chart
                .draw_secondary_series([Circle::new((*x, *y), 10, MARK.stroke_width(3))])
                .map_err(err)?;
            chart
                .draw_secondary_series([
                    EmptyElement::at((*x, *y)) + Text::new(label, LABEL_OFFSET, style)
                ])
                .map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((font, 14))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(err)?;
    Ok(())
}

fn draw_pie<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    spec: &ChartSpec,
    data: &ChartData,
    font: &str,
) -> DrawResult {
    let Some((_, values)) = data.series.first() else {
        return Err("pie needs a series".to_owned());
    };
    let slices: Vec<(String, f64)> = data
        .labels
        .iter()
        .zip(values)
        .filter_map(|(l, v)| v.filter(|v| *v > 0.0).map(|v| (l.clone(), v)))
        .collect();
    let total: f64 = slices.iter().map(|s| s.1).sum();
    if total <= 0.0 {
        return Err("pie needs positive values".to_owned());
    }
    let titled = root.titled(&spec.title, (font, 28)).map_err(err)?;
    let (w, h) = titled.dim_in_pixel();
    let (w, h) = (
        i32::try_from(w).unwrap_or(i32::MAX),
        i32::try_from(h).unwrap_or(i32::MAX),
    );
    let radius = f64::from(w.min(h)) * 0.4;
    let center = (w * 2 / 5, h / 2);
    let mut start = -std::f64::consts::FRAC_PI_2;
    for (k, (label, value)) in slices.iter().enumerate() {
        let sweep = value / total * std::f64::consts::TAU;
        let steps = ((sweep / 0.02).ceil().max(2.0)) as usize;
        let mut poly = vec![center];
        for s in 0..=steps {
            #[allow(clippy::cast_precision_loss)]
            let a = start + sweep * s as f64 / steps as f64;
            poly.push(polar(center, radius, a));
        }
        titled
            .draw(&Polygon::new(poly, color(k).filled()))
            .map_err(err)?;
        let mid = start + sweep / 2.0;
        let text_at = polar(center, radius * 0.65, mid);
        titled
            .draw(&Text::new(
                format!("{:.1}%", value / total * 100.0),
                text_at,
                (font, 15).into_font().color(&WHITE),
            ))
            .map_err(err)?;
        let legend_y = 30 + i32::try_from(k).unwrap_or(0) * 24;
        let legend_x = w * 4 / 5 - 40;
        titled
            .draw(&Rectangle::new(
                [(legend_x, legend_y), (legend_x + 14, legend_y + 14)],
                color(k).filled(),
            ))
            .map_err(err)?;
        titled
            .draw(&Text::new(
                format!("{label} ({})", fmt_number(*value)),
                (legend_x + 20, legend_y),
                (font, 15),
            ))
            .map_err(err)?;
        start += sweep;
    }
    Ok(())
}

#[allow(clippy::cast_possible_truncation)]
fn polar(center: (i32, i32), radius: f64, angle: f64) -> (i32, i32) {
    (
        center.0 + (radius * angle.cos()).round() as i32,
        center.1 + (radius * angle.sin()).round() as i32,
    )
}

#[cfg(test)]
mod cjk_tests {
    use super::*;

    /// `text` drawn black on white in `family`, as RGB bytes.
    fn glyphs(family: &str, text: &str) -> Vec<u8> {
        let mut buffer = vec![0_u8; 64 * 64 * 3];
        {
            let root = BitMapBackend::with_buffer(&mut buffer, (64, 64)).into_drawing_area();
            root.fill(&WHITE).unwrap();
            root.draw_text(text, &(family, 40).into_font().color(&BLACK), (4, 4))
                .unwrap();
            root.present().unwrap();
        }
        buffer
    }

    #[test]
    fn cjk_text_is_detected() {
        assert!(has_cjk("月度销售"));
        assert!(has_cjk("Sales 売上"));
        assert!(has_cjk("매출"));
        assert!(!has_cjk("Monthly sales, Ünïcode, Продажи"));
    }

    #[test]
    fn chinese_titles_get_a_font_with_real_glyphs() {
        // `cargo xtask setup` installs fonts-wqy-microhei.
        let family =
            cjk_font().expect("a CJK font is installed (apt-get install fonts-wqy-microhei)");
        let sales = glyphs(family, "销");
        let month = glyphs(family, "月");
        let ink = |b: &[u8]| b.iter().filter(|v| **v < 128).count();
        assert!(ink(&sales) > 50, "the glyph is drawn");
        assert!(
            sales != month,
            "{family}: two characters drew the same picture (empty boxes, not glyphs)"
        );
    }

    #[test]
    fn the_chart_font_follows_its_text() {
        let data = ChartData {
            labels: vec!["一月".into(), "二月".into()],
            xs: vec![0.0, 1.0],
            categorical: true,
            series: vec![("sales".into(), vec![Some(1.0), Some(2.0)])],
        };
        let spec = ChartSpec {
            chart_type: ChartType::Bar,
            x_field: Some("month".into()),
            y_fields: vec!["sales".into()],
            title: "Sales".into(),
        };
        assert_eq!(font_for(&spec, &data, &[]), cjk_font().unwrap_or(FONT));
        let latin = ChartData {
            labels: vec!["Jan".into(), "Feb".into()],
            ..data
        };
        assert_eq!(font_for(&spec, &latin, &[]), FONT);
    }
}
