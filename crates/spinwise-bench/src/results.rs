//! What a run measured: one row per step (results.csv), the run's report (JSON), and figures of
//! throughput and latency against capacity utilisation.
//!
//! Invariants:
//! - Latency percentiles are nearest-rank over every request of the step (no interpolation, no
//!   sampling); throughput is bytes over the step's wall time (see [`crate::run`]).
//! - MB are 10^6 bytes.
//! - trace.csv is the simulator's trace format (header, then records in time order), so the
//!   run a target measured can be replayed by the simulator on the same times.
//! - Files are written under a temporary name and renamed into place, so a failed write never
//!   leaves a partial results file under the final name.

use crate::plan::{BenchPlan, ReadSkew, Step};
use crate::{BenchError, BenchResult};
use serde::Serialize;
use spinwise_report::{LineChart, LinePoint, Series, SeriesStyle, YScale};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Count, bytes, throughput and latency of one kind of request in one step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct OperationStats {
    pub requests: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub mb_per_s: f64,
    pub files_per_s: f64,
    pub latency_mean_ms: f64,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    pub latency_max_ms: f64,
}

impl OperationStats {
    /// The stats of `latencies`, which moved `bytes` in `wall`.
    pub fn of(latencies: &[Duration], bytes: u64, wall: Duration) -> OperationStats {
        let mut ms: Vec<f64> = latencies.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let seconds = wall.as_secs_f64();
        let per_s = |amount: f64| if seconds > 0.0 { amount / seconds } else { 0.0 };
        OperationStats {
            requests: ms.len() as u64,
            bytes,
            seconds,
            mb_per_s: per_s(bytes as f64 / 1e6),
            files_per_s: per_s(ms.len() as f64),
            latency_mean_ms: if ms.is_empty() {
                0.0
            } else {
                ms.iter().sum::<f64>() / ms.len() as f64
            },
            latency_p50_ms: nearest_rank(&ms, 0.50),
            latency_p99_ms: nearest_rank(&ms, 0.99),
            latency_max_ms: ms.last().copied().unwrap_or(0.0),
        }
    }
}

/// The nearest-rank `quantile` of sorted values (0 for none).
fn nearest_rank(sorted: &[f64], quantile: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One step of the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepRow {
    pub step: u32,
    pub files_written: u64,
    /// Bytes written by this step and the ones before, over the plan's capacity, in percent.
    pub utilisation_percent: f64,
    pub write: OperationStats,
    /// Bytes a store target migrated after the batch, and the seconds it took.
    pub migrated_bytes: Option<u64>,
    pub migrate_seconds: Option<f64>,
    pub read: OperationStats,
    /// Reads that found their object offline and restored it first.
    pub restores: u64,
    pub restore_wait_mean_s: Option<f64>,
    pub restore_wait_max_s: Option<f64>,
}

impl StepRow {
    pub fn new(
        step: &Step,
        plan: &BenchPlan,
        write: OperationStats,
        migrate: Option<(u64, Duration)>,
        read: OperationStats,
        restore_waits: &[Duration],
    ) -> StepRow {
        let waits: Vec<f64> = restore_waits.iter().map(Duration::as_secs_f64).collect();
        StepRow {
            step: step.number,
            files_written: step.writes.len() as u64,
            utilisation_percent: 100.0 * step.written_bytes as f64 / plan.capacity_bytes as f64,
            write,
            migrated_bytes: migrate.map(|(bytes, _)| bytes),
            migrate_seconds: migrate.map(|(_, took)| took.as_secs_f64()),
            read,
            restores: waits.len() as u64,
            restore_wait_mean_s: (!waits.is_empty())
                .then(|| waits.iter().sum::<f64>() / waits.len() as f64),
            restore_wait_max_s: waits.iter().copied().reduce(f64::max),
        }
    }
}

/// A whole run: what ran, against what, and every step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchReport {
    pub target: String,
    pub files: u64,
    pub total_bytes: u64,
    pub capacity_bytes: u64,
    pub steps: u32,
    pub reads_per_step: u32,
    pub read_skew: ReadSkew,
    pub concurrency: u32,
    pub seed: u64,
    pub rows: Vec<StepRow>,
    /// The last step's write throughput over the first's (below 1: writes slow as the target
    /// fills, as the paper reports for the systems it measured).
    pub write_throughput_last_over_first: f64,
    /// Every write and read, in the order issued: requests.csv, and trace.csv (its first
    /// columns), which `spinwise sim --trace` replays (the run's own clean-up is in neither).
    #[serde(skip)]
    pub requests: Vec<RequestRecord>,
}

/// One request: when it was issued (the simulator's trace format's first four fields,
/// docs/simulator.md "Trace files") and what it took.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestRecord {
    pub step: u32,
    /// Seconds from the run's start to the request's issue.
    pub time_s: f64,
    /// `write` or `read`.
    pub operation: &'static str,
    pub key: String,
    pub size_bytes: u64,
    /// Issue to last byte checked (a restore's wait included).
    pub latency_s: f64,
    /// The restore's wait, for a read that found its object offline.
    pub restore_wait_s: Option<f64>,
}

impl BenchReport {
    pub fn new(
        target: String,
        plan: &BenchPlan,
        rows: Vec<StepRow>,
        requests: Vec<RequestRecord>,
    ) -> BenchReport {
        let first = rows.first().map_or(0.0, |r| r.write.mb_per_s);
        let last = rows.last().map_or(0.0, |r| r.write.mb_per_s);
        BenchReport {
            target,
            files: plan.files.len() as u64,
            total_bytes: plan.total_bytes(),
            capacity_bytes: plan.capacity_bytes,
            steps: plan.steps,
            reads_per_step: plan.reads_per_step,
            read_skew: plan.read_skew,
            concurrency: plan.concurrency,
            seed: plan.seed,
            rows,
            write_throughput_last_over_first: if first > 0.0 { last / first } else { 0.0 },
            requests,
        }
    }
}

/// One flat row of results.csv.
#[derive(Serialize)]
struct CsvRow<'a> {
    target: &'a str,
    step: u32,
    files_written: u64,
    utilisation_percent: f64,
    write_requests: u64,
    write_bytes: u64,
    write_seconds: f64,
    write_mb_per_s: f64,
    write_files_per_s: f64,
    write_latency_mean_ms: f64,
    write_latency_p50_ms: f64,
    write_latency_p99_ms: f64,
    write_latency_max_ms: f64,
    migrated_bytes: Option<u64>,
    migrate_seconds: Option<f64>,
    read_requests: u64,
    read_bytes: u64,
    read_seconds: f64,
    read_mb_per_s: f64,
    read_files_per_s: f64,
    read_latency_mean_ms: f64,
    read_latency_p50_ms: f64,
    read_latency_p99_ms: f64,
    read_latency_max_ms: f64,
    restores: u64,
    restore_wait_mean_s: Option<f64>,
    restore_wait_max_s: Option<f64>,
}

fn csv_row<'a>(target: &'a str, row: &StepRow) -> CsvRow<'a> {
    let (w, r) = (&row.write, &row.read);
    CsvRow {
        target,
        step: row.step,
        files_written: row.files_written,
        utilisation_percent: row.utilisation_percent,
        write_requests: w.requests,
        write_bytes: w.bytes,
        write_seconds: w.seconds,
        write_mb_per_s: w.mb_per_s,
        write_files_per_s: w.files_per_s,
        write_latency_mean_ms: w.latency_mean_ms,
        write_latency_p50_ms: w.latency_p50_ms,
        write_latency_p99_ms: w.latency_p99_ms,
        write_latency_max_ms: w.latency_max_ms,
        migrated_bytes: row.migrated_bytes,
        migrate_seconds: row.migrate_seconds,
        read_requests: r.requests,
        read_bytes: r.bytes,
        read_seconds: r.seconds,
        read_mb_per_s: r.mb_per_s,
        read_files_per_s: r.files_per_s,
        read_latency_mean_ms: r.latency_mean_ms,
        read_latency_p50_ms: r.latency_p50_ms,
        read_latency_p99_ms: r.latency_p99_ms,
        read_latency_max_ms: r.latency_max_ms,
        restores: row.restores,
        restore_wait_mean_s: row.restore_wait_mean_s,
        restore_wait_max_s: row.restore_wait_max_s,
    }
}

/// Writes results.csv, report.json and the figures (PNG and SVG) into `out`; the paths written.
pub fn write_outputs(report: &BenchReport, out: &Path) -> BenchResult<Vec<PathBuf>> {
    std::fs::create_dir_all(out).map_err(|e| output_error(out, e))?;
    let mut written = Vec::new();
    let csv_path = out.join("results.csv");
    let rows: Vec<CsvRow> = report
        .rows
        .iter()
        .map(|row| csv_row(&report.target, row))
        .collect();
    atomically(&csv_path, |path| {
        spinwise_report::write_csv(&rows, path).map_err(|e| e.to_string())
    })?;
    written.push(csv_path);
    let json_path = out.join("report.json");
    atomically(&json_path, |path| {
        let text = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| e.to_string())
    })?;
    written.push(json_path);
    let trace_path = out.join("trace.csv");
    atomically(&trace_path, |path| write_trace(&report.requests, path))?;
    written.push(trace_path);
    let requests_path = out.join("requests.csv");
    atomically(&requests_path, |path| {
        spinwise_report::write_csv(&report.requests, path).map_err(|e| e.to_string())
    })?;
    written.push(requests_path);
    for (stem, chart) in figures(report) {
        for (extension, render) in [
            ("png", spinwise_report::render_lines_png as fn(&_, &_) -> _),
            ("svg", spinwise_report::render_lines_svg),
        ] {
            let path = out.join(format!("{stem}.{extension}"));
            atomically(&path, |at| render(&chart, at).map_err(|e| e.to_string()))?;
            written.push(path);
        }
    }
    Ok(written)
}

/// The trace in the simulator's format; times with µs resolution (the simulator's).
fn write_trace(trace: &[RequestRecord], path: &Path) -> Result<(), String> {
    use std::io::Write;
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut out = std::io::BufWriter::new(file);
    let lines = std::iter::once("time_s,operation,key,size_bytes".to_string()).chain(
        trace
            .iter()
            .map(|r| format!("{:.6},{},{},{}", r.time_s, r.operation, r.key, r.size_bytes)),
    );
    for line in lines {
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())
}

/// Writes through a temporary name beside `path` (`name.partial.ext`: the image encoders pick
/// the format by the extension), then renames.
fn atomically(path: &Path, write: impl FnOnce(&Path) -> Result<(), String>) -> BenchResult<()> {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let partial = match path.extension() {
        Some(extension) => {
            path.with_file_name(format!("{stem}.partial.{}", extension.to_string_lossy()))
        }
        None => path.with_file_name(format!("{stem}.partial")),
    };
    write(&partial).map_err(|reason| BenchError::Output {
        path: path.display().to_string(),
        reason,
    })?;
    std::fs::rename(&partial, path).map_err(|e| output_error(path, e))
}

fn output_error(path: &Path, error: std::io::Error) -> BenchError {
    BenchError::Output {
        path: path.display().to_string(),
        reason: error.to_string(),
    }
}

/// Throughput and latency against utilisation.
fn figures(report: &BenchReport) -> Vec<(&'static str, LineChart)> {
    let series = |name: &str, y: fn(&StepRow) -> f64| Series {
        name: name.into(),
        style: SeriesStyle::LineWithMarkers,
        points: report
            .rows
            .iter()
            .map(|row| LinePoint::new(row.utilisation_percent, y(row)))
            .collect(),
    };
    let x_label = "capacity utilisation (%)".to_string();
    let throughput = LineChart {
        title: format!("Archival benchmark: throughput, {}", report.target),
        x_label: x_label.clone(),
        y_label: "throughput (MB/s)".into(),
        y_scale: YScale::Linear,
        series: vec![
            series("sequential write", |r| r.write.mb_per_s),
            series("random read", |r| r.read.mb_per_s),
        ],
    };
    // A log axis needs positive values; a request under a microsecond is drawn at one.
    let latency = LineChart {
        title: format!("Archival benchmark: latency per request, {}", report.target),
        x_label,
        y_label: "latency (ms)".into(),
        y_scale: YScale::Log,
        series: vec![
            series("write p50", |r| r.write.latency_p50_ms.max(1e-3)),
            series("write p99", |r| r.write.latency_p99_ms.max(1e-3)),
            series("read p50", |r| r.read.latency_p50_ms.max(1e-3)),
            series("read p99", |r| r.read.latency_p99_ms.max(1e-3)),
        ],
    };
    vec![("throughput", throughput), ("latency", latency)]
}
