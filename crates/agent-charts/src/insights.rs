//! Statistical insights: extremes, outliers, trends, turning points and correlations.

use serde::{Deserialize, Serialize};

/// At most this many insights per chart.
pub const MAX_INSIGHTS: usize = 6;

/// What an insight is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InsightKind {
    /// A value outside the interquartile fences.
    Outlier,
    /// A point where a rise turns into a fall or the reverse.
    TurningPoint,
    /// Two series that move together or against each other.
    Correlation,
    /// A steady rise or fall (linear regression).
    Trend,
    /// The largest value of a series.
    Maximum,
    /// The smallest value of a series.
    Minimum,
}

/// One insight: a sentence and the point(s) it is about, for marking it on the chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Insight {
    /// The kind.
    pub kind: InsightKind,
    /// The series it is about (for a correlation, the first of the two).
    pub series: String,
    /// The row it points at, if any (for a trend: none, the whole series).
    pub index: Option<usize>,
    /// The value at `index`, or the slope of a trend, or the correlation coefficient.
    pub value: f64,
    /// The sentence shown to people.
    pub text: String,
}

/// Least-squares line through `(i, values[i])`: `(slope, intercept, r²)`. `None` for fewer
/// than two points or a constant index.
#[must_use]
pub fn linear_regression(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = points.len();
    if n < 2 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let nf = n as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / nf;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - mean_y).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = mean_y - slope * mean_x;
    let r2 = if syy == 0.0 {
        0.0
    } else {
        (sxy * sxy) / (sxx * syy)
    };
    Some((slope, intercept, r2))
}

/// Pearson correlation of two equally long samples; `None` when either is constant or shorter
/// than three.
#[must_use]
pub fn pearson(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 3 {
        return None;
    }
    let points: Vec<(f64, f64)> = a.iter().copied().zip(b.iter().copied()).collect();
    let (slope, _, r2) = linear_regression(&points)?;
    let constant_b = b.iter().all(|v| (*v - b[0]).abs() < f64::EPSILON);
    if constant_b {
        return None;
    }
    Some(r2.sqrt().copysign(slope))
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let pos = q * (sorted.len() - 1) as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    #[allow(clippy::cast_precision_loss)]
    let frac = pos - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

/// Positions in `values` outside the Tukey fences `[Q1 - 1.5·IQR, Q3 + 1.5·IQR]`; none for
/// fewer than four values.
#[must_use]
pub fn iqr_outliers(values: &[f64]) -> Vec<usize> {
    if values.len() < 4 {
        return Vec::new();
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (q1, q3) = (quantile(&sorted, 0.25), quantile(&sorted, 0.75));
    let iqr = q3 - q1;
    let (low, high) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
    values
        .iter()
        .enumerate()
        .filter(|(_, v)| **v < low || **v > high)
        .map(|(i, _)| i)
        .collect()
}

/// A number for people: integers without decimals, others with up to two.
#[must_use]
pub fn fmt_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        let text = format!("{value:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// One series: its name and its values by row (`None` for a missing value).
pub type Series<'a> = (&'a str, &'a [Option<f64>]);

/// Computes up to [`MAX_INSIGHTS`] insights on `series` over the row labels `x_labels`, in
/// order of interest: outliers, turning points, correlation of the first two series, trends,
/// then maxima and minima. `language` `zh` writes them in Chinese, anything else in English.
#[must_use]
pub fn compute_insights(
    x_labels: &[String],
    series: &[Series<'_>],
    language: &str,
) -> Vec<Insight> {
    let zh = language == "zh";
    let label = |i: usize| {
        x_labels
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("#{}", i + 1))
    };
    let present = |values: &[Option<f64>]| -> Vec<(usize, f64)> {
        values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i, v)))
            .collect()
    };
    let mut outliers = Vec::new();
    let mut turning = Vec::new();
    let mut trends = Vec::new();
    let mut extremes = Vec::new();
    for (name, values) in series {
        let points = present(values);
        if points.is_empty() {
            continue;
        }
        let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
        for pos in iqr_outliers(&ys) {
            let (i, v) = points[pos];
            let text = if zh {
                format!("{name} 在 {} 处的值 {} 是异常值", label(i), fmt_number(v))
            } else {
                format!(
                    "{name} has an outlier at {}: {} lies outside the interquartile fences",
                    label(i),
                    fmt_number(v)
                )
            };
            outliers.push(insight(InsightKind::Outlier, name, Some(i), v, text));
        }
        if let Some((i, v, rising_before)) = turning_point(&points) {
            let text = match (zh, rising_before) {
                (true, true) => format!("{name} 在 {} 处由升转降（{}）", label(i), fmt_number(v)),
                (true, false) => format!("{name} 在 {} 处由降转升（{}）", label(i), fmt_number(v)),
                (false, true) => format!(
                    "{name} turns from rising to falling at {} ({})",
                    label(i),
                    fmt_number(v)
                ),
                (false, false) => format!(
                    "{name} turns from falling to rising at {} ({})",
                    label(i),
                    fmt_number(v)
                ),
            };
            turning.push(insight(InsightKind::TurningPoint, name, Some(i), v, text));
        }
        #[allow(clippy::cast_precision_loss)]
        let xy: Vec<(f64, f64)> = points.iter().map(|(i, v)| (*i as f64, *v)).collect();
        if points.len() >= 3
            && let Some((slope, _, r2)) = linear_regression(&xy)
            && r2 >= 0.6
            && slope != 0.0
        {
            let text = match (zh, slope > 0.0) {
                (true, true) => {
                    format!("{name} 整体呈上升趋势，平均每项增加 {}", fmt_number(slope))
                }
                (true, false) => {
                    format!("{name} 整体呈下降趋势，平均每项减少 {}", fmt_number(-slope))
                }
                (false, true) => format!(
                    "{name} shows an increasing trend of about {} per step (R² = {})",
                    fmt_number(slope),
                    fmt_number(r2)
                ),
                (false, false) => format!(
                    "{name} shows a decreasing trend of about {} per step (R² = {})",
                    fmt_number(-slope),
                    fmt_number(r2)
                ),
            };
            trends.push(insight(InsightKind::Trend, name, None, slope, text));
        }
        if points.len() >= 2 {
            let max = points.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
            let min = points.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
            if let (Some((imax, vmax)), Some((imin, vmin))) = (max, min)
                && vmax > vmin
            {
                let (tmax, tmin) = if zh {
                    (
                        format!(
                            "{name} 的最大值为 {}，出现在 {}",
                            fmt_number(vmax),
                            label(imax)
                        ),
                        format!(
                            "{name} 的最小值为 {}，出现在 {}",
                            fmt_number(vmin),
                            label(imin)
                        ),
                    )
                } else {
                    (
                        format!(
                            "The maximum of {name} is {} at {}",
                            fmt_number(vmax),
                            label(imax)
                        ),
                        format!(
                            "The minimum of {name} is {} at {}",
                            fmt_number(vmin),
                            label(imin)
                        ),
                    )
                };
                extremes.push(insight(InsightKind::Maximum, name, Some(imax), vmax, tmax));
                extremes.push(insight(InsightKind::Minimum, name, Some(imin), vmin, tmin));
            }
        }
    }
    let mut correlation = Vec::new();
    if let [(a, va), (b, vb), ..] = series {
        let pairs: Vec<(f64, f64)> = va
            .iter()
            .zip(vb.iter())
            .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
            .collect();
        let xs: Vec<f64> = pairs.iter().map(|p| p.0).collect();
        let ys: Vec<f64> = pairs.iter().map(|p| p.1).collect();
        if let Some(r) = pearson(&xs, &ys)
            && r.abs() >= 0.7
        {
            let text = match (zh, r > 0.0) {
                (true, true) => format!("{a} 与 {b} 正相关（r = {}）", fmt_number(r)),
                (true, false) => format!("{a} 与 {b} 负相关（r = {}）", fmt_number(r)),
                (false, true) => format!(
                    "{a} and {b} are positively correlated (r = {})",
                    fmt_number(r)
                ),
                (false, false) => format!(
                    "{a} and {b} are negatively correlated (r = {})",
                    fmt_number(r)
                ),
            };
            correlation.push(insight(InsightKind::Correlation, a, None, r, text));
        }
    }
    outliers
        .into_iter()
        .chain(turning)
        .chain(correlation)
        .chain(trends)
        .chain(extremes)
        .take(MAX_INSIGHTS)
        .collect()
}

fn insight(
    kind: InsightKind,
    series: &str,
    index: Option<usize>,
    value: f64,
    text: String,
) -> Insight {
    Insight {
        kind,
        series: series.to_owned(),
        index,
        value,
        text,
    }
}

/// The interior global extreme where the series rises (falls) for at least two steps before and
/// falls (rises) for at least two steps after, judged by regression slopes on each side.
fn turning_point(points: &[(usize, f64)]) -> Option<(usize, f64, bool)> {
    if points.len() < 5 {
        return None;
    }
    let side_slope = |part: &[(usize, f64)]| {
        #[allow(clippy::cast_precision_loss)]
        let xy: Vec<(f64, f64)> = part.iter().map(|(i, v)| (*i as f64, *v)).collect();
        linear_regression(&xy).map(|(slope, _, _)| slope)
    };
    let max = points
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.1.total_cmp(&b.1.1))?;
    let min = points
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.1.total_cmp(&b.1.1))?;
    for (pos, (i, v), peak) in [(max.0, *max.1, true), (min.0, *min.1, false)] {
        if pos < 2 || pos + 2 >= points.len() {
            continue;
        }
        let before = side_slope(&points[..=pos])?;
        let after = side_slope(&points[pos..])?;
        let turns = if peak {
            before > 0.0 && after < 0.0
        } else {
            before < 0.0 && after > 0.0
        };
        if turns {
            return Some((i, v, peak));
        }
    }
    None
}

/// The insights as Markdown: `## {title} Insights` and a numbered list.
#[must_use]
pub fn to_markdown(title: &str, insights: &[Insight]) -> String {
    let mut out = format!("## {title} Insights\n");
    for (i, insight) in insights.iter().enumerate() {
        out.push_str(&format!("{}. {}\n", i + 1, insight.text));
    }
    out
}
