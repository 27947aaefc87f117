//! What the whole-process benchmarks share: the release binary named by
//! `OPENMANUS_BIN` (`cargo xtask bench` sets it), a one-worker runtime to drive it, percentiles.

use std::fmt::Display;
use std::future::Future;
use std::path::PathBuf;

/// Runs `bench` on the binary `OPENMANUS_BIN` names, printing (not failing) what went wrong:
/// these benchmarks give figures and pass or fail nothing.
#[allow(dead_code)] // Not every benchmark that includes this module is driven by it.
pub fn run<E: Display, F: Future<Output = Result<(), E>>>(
    name: &str,
    bench: impl FnOnce(PathBuf) -> F,
) {
    let Some(bin) = std::env::var_os("OPENMANUS_BIN") else {
        println!("{name}: set OPENMANUS_BIN to the openmanus binary (cargo xtask bench does)");
        return;
    };
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    else {
        println!("could not start a tokio runtime");
        return;
    };
    if let Err(error) = runtime.block_on(bench(PathBuf::from(bin))) {
        println!("{name}: the benchmark failed: {error}");
    }
}

/// The mean of `values` without the `trim` lowest and highest (runs the machine disturbed);
/// NaN when nothing is left.
#[allow(dead_code)] // Not every benchmark that includes this module averages runs.
pub fn trimmed_mean(mut values: Vec<f64>, trim: usize) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values
        .get(trim..values.len().saturating_sub(trim))
        .unwrap_or_default();
    if middle.is_empty() {
        return f64::NAN;
    }
    middle.iter().sum::<f64>() / middle.len() as f64
}

/// The `p` quantile (0 to 1) of sorted values, nearest rank.
#[allow(dead_code)] // Not every benchmark that includes this module takes percentiles.
pub fn percentile<T: Copy + Default>(sorted: &[T], p: f64) -> T {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}
