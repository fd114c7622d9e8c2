//! `sp-gc`: non-preemptive against semi-preemptive garbage collection (Lee et al.; the slides'
//! "Performance Improvement for Realistic Workloads") on spinwise-gc's flash model
//! (docs/gc.md): the slides' four trace shapes, each at half, once and twice its rate, both
//! modes, the same seeded request stream for both. The summary judges the slides' four numbers
//! (mean and variance of response time, Financial and Cello) on the traces' own rates; the other
//! rates are the measured second configuration a "differs" row cites.
//!
//! Invariant: both modes of one (trace, rate, seed) see the same requests (the stream's seed
//! does not depend on the mode), so a difference between them is the collector's alone.

use crate::summary::{Basis, Comparison, Tolerance, Verdict, judge, table};
use crate::sweep::run_seed;
use crate::{Context, ExperimentError, ExperimentResult, Figure, Outcome, Rows};
use rayon::prelude::*;
use serde::Serialize;
use spinwise_gc::{GcMode, GcReport, SimConfig, TRACES, Workload, simulate};
use spinwise_report::{LineChart, LinePoint, Series, SeriesStyle, YScale};

const NAME: &str = "sp-gc";
const MODES: [GcMode; 2] = [GcMode::NonPreemptive, GcMode::SemiPreemptive];
/// Multiples of each trace's arrival rate; 1 is the slides' configuration.
const RATE_SCALES: &[f64] = &[0.5, 1.0, 2.0];
const QUICK_RATE_SCALES: &[f64] = &[0.5, 1.0];
const REQUESTS: u64 = 200_000;
const QUICK_REQUESTS: u64 = 20_000;

/// The slides' claims: (trace, mean response time improvement %, variance improvement %).
const CLAIMS: &[(&str, f64, f64)] = &[("financial", 6.5, 49.8), ("cello", 66.6, 83.3)];

/// In points of the improvement (judged as fractions: 0.10 = 10 points).
const TOLERANCE: Tolerance = Tolerance::points(
    0.10,
    "the slides give each trace's mean request size, read share and rate only; our requests are \
     synthetic with those means (Poisson arrivals, exponential sizes, uniform offsets) on a \
     one-chip device whose GC thresholds the slides do not state",
);

/// One run: a trace at a rate under one collector.
#[derive(Clone, Debug, Serialize)]
pub struct GcRow {
    pub experiment: &'static str,
    pub configuration: usize,
    pub seed: u64,
    pub trace: &'static str,
    pub mode: &'static str,
    pub rate_scale: f64,
    pub rate_per_s: f64,
    pub mean_request_bytes: f64,
    pub read_fraction: f64,
    pub requests: u64,
    pub mean_response_us: f64,
    pub response_variance_us2: f64,
    pub p50_response_us: f64,
    pub p99_response_us: f64,
    pub max_response_us: f64,
    pub blocks_collected: u64,
    pub pages_moved: u64,
    pub preemptions: u64,
    pub arrived_during_collection: u64,
    pub forced_units: u64,
    pub busy_fraction: f64,
}

struct Job {
    configuration: usize,
    workload: Workload,
    rate_scale: f64,
    mode: GcMode,
}

fn jobs(context: &Context) -> Vec<Job> {
    let scales = if context.quick {
        QUICK_RATE_SCALES
    } else {
        RATE_SCALES
    };
    let mut jobs = Vec::new();
    for trace in TRACES {
        for &rate_scale in scales {
            for mode in MODES {
                jobs.push(Job {
                    configuration: jobs.len(),
                    workload: *trace,
                    rate_scale,
                    mode,
                });
            }
        }
    }
    jobs
}

fn run(job: &Job, context: &Context, seed_index: u32) -> ExperimentResult<GcRow> {
    // The stream's seed is the configuration's without the mode: both collectors see the
    // same requests (NP and SP are adjacent configurations, NP first).
    let seed = run_seed(context.base_seed, job.configuration / 2, seed_index);
    let workload = Workload {
        arrivals_per_s: job.workload.arrivals_per_s * job.rate_scale,
        ..job.workload
    };
    let requests = if context.quick {
        QUICK_REQUESTS
    } else {
        REQUESTS
    };
    let config = SimConfig {
        seed,
        requests,
        warmup_requests: requests / 10,
        ..SimConfig::new(workload, job.mode)
    };
    let report = simulate(&config).map_err(|error| {
        ExperimentError::Invalid(format!("{NAME}: {}: {error}", job.workload.name))
    })?;
    Ok(row(job, seed, &workload, &report))
}

fn row(job: &Job, seed: u64, workload: &Workload, report: &GcReport) -> GcRow {
    GcRow {
        experiment: NAME,
        configuration: job.configuration,
        seed,
        trace: workload.name,
        mode: job.mode.name(),
        rate_scale: job.rate_scale,
        rate_per_s: workload.arrivals_per_s,
        mean_request_bytes: workload.mean_request_bytes,
        read_fraction: workload.read_fraction,
        requests: report.requests,
        mean_response_us: report.mean_response_us,
        response_variance_us2: report.response_variance_us2,
        p50_response_us: report.p50_response_us,
        p99_response_us: report.p99_response_us,
        max_response_us: report.max_response_us,
        blocks_collected: report.blocks_collected,
        pages_moved: report.pages_moved,
        preemptions: report.preemptions,
        arrived_during_collection: report.arrived_during_collection,
        forced_units: report.forced_units,
        busy_fraction: report.busy_fraction,
    }
}

pub fn sp_gc(context: &Context) -> ExperimentResult<Outcome> {
    let jobs = jobs(context);
    let runs: Vec<(usize, u32)> = (0..jobs.len())
        .flat_map(|job| (0..context.seeds).map(move |seed| (job, seed)))
        .collect();
    let rows: Vec<GcRow> = context.pool.install(|| {
        runs.par_iter()
            .map(|&(job, seed_index)| run(&jobs[job], context, seed_index))
            .collect::<ExperimentResult<_>>()
    })?;
    let summary = summary(context, &rows);
    Ok(Outcome {
        figures: vec![
            figure(&rows, "response_mean", "mean response time (ms)", |r| {
                r.mean_response_us / 1e3
            }),
            figure(
                &rows,
                "response_variance",
                "variance of response time (ms²)",
                |r| r.response_variance_us2 / 1e6,
            ),
        ],
        rows: Rows::Gc(rows),
        summary,
    })
}

/// Mean of `metric` over the seeds of (trace, mode, scale).
fn mean(rows: &[GcRow], trace: &str, mode: GcMode, scale: f64, metric: fn(&GcRow) -> f64) -> f64 {
    let values: Vec<f64> = rows
        .iter()
        .filter(|r| r.trace == trace && r.mode == mode.name() && r.rate_scale == scale)
        .map(metric)
        .collect();
    assert!(
        !values.is_empty(),
        "{trace} {} at ×{scale} ran",
        mode.name()
    );
    values.iter().sum::<f64>() / values.len() as f64
}

/// How much semi-preemption lowers `metric`, in percent of the non-preemptive value.
fn improvement(rows: &[GcRow], trace: &str, scale: f64, metric: fn(&GcRow) -> f64) -> f64 {
    let np = mean(rows, trace, GcMode::NonPreemptive, scale, metric);
    let sp = mean(rows, trace, GcMode::SemiPreemptive, scale, metric);
    100.0 * (np - sp) / np
}

fn mean_metric(r: &GcRow) -> f64 {
    r.mean_response_us
}

fn variance_metric(r: &GcRow) -> f64 {
    r.response_variance_us2
}

fn summary(context: &Context, rows: &[GcRow]) -> String {
    let scales: Vec<f64> = {
        let mut scales: Vec<f64> = rows.iter().map(|r| r.rate_scale).collect();
        scales.sort_by(f64::total_cmp);
        scales.dedup();
        scales
    };
    let mut comparisons = Vec::new();
    for &(trace, paper_mean, paper_variance) in CLAIMS {
        for (quantity, paper, metric) in [
            (
                "mean response time",
                paper_mean,
                mean_metric as fn(&GcRow) -> f64,
            ),
            ("variance of response time", paper_variance, variance_metric),
        ] {
            let ours = improvement(rows, trace, 1.0, metric);
            let basis = Basis::Test(TOLERANCE);
            let (verdict, tolerance) = judge(ours / 100.0, paper / 100.0, basis, |_| {
                diagnostic(rows, trace, &scales, metric)
            });
            comparisons.push(Comparison {
                quantity: format!("{trace}: {quantity}, lowered by SP (%)"),
                paper: format!("{paper} % (Lee et al., slides: realistic workloads)"),
                as_described: format!("{ours:.1} %"),
                with_additions: None,
                verdict,
                tolerance,
            });
        }
    }
    for trace in ["tpc-h", "openmail"] {
        let ours = improvement(rows, trace, 1.0, mean_metric);
        let busy = mean(rows, trace, GcMode::NonPreemptive, 1.0, |r| r.busy_fraction);
        comparisons.push(Comparison {
            quantity: format!("{trace}: mean response time, lowered by SP (%)"),
            paper: "not given in the slides".into(),
            as_described: format!("{ours:.1} % (device busy {:.0}% under NP)", busy * 100.0),
            with_additions: None,
            verdict: Verdict::NotJudged("the slides give no number for this trace"),
            tolerance: "none".into(),
        });
    }
    format!(
        "# sp-gc: semi-preemptive garbage collection (Lee et al.)\n\n{} runs of {} measured \
         requests each after {} of warm-up, {} seed(s) per configuration from base seed {}{}, on \
         spinwise-gc's one-chip flash model (1,024 blocks of 64 4-KiB pages, 15% reserved, GC \
         from 5% free blocks, non-preemptible below 1%; docs/gc.md). Every number below is \
         computed from `results.csv`; each improvement is (NP − SP) / NP of the seeds' means at \
         the trace's own rate.\n\n{}",
        rows.len(),
        rows.first().map_or(0, |r| r.requests),
        rows.first().map_or(0, |r| r.requests / 10),
        context.seeds,
        context.base_seed,
        if context.quick {
            " (--quick: fewer requests and rates, so numbers are noisy)"
        } else {
            ""
        },
        table(&comparisons)
    )
}

/// What a "differs" row cites: how many requests arrived during a collection under NP (the
/// requests preemption can help), and the improvement at the other rates run.
fn diagnostic(rows: &[GcRow], trace: &str, scales: &[f64], metric: fn(&GcRow) -> f64) -> String {
    let during = mean(rows, trace, GcMode::NonPreemptive, 1.0, |r| {
        r.arrived_during_collection as f64 / r.requests as f64
    });
    let busy = mean(rows, trace, GcMode::NonPreemptive, 1.0, |r| r.busy_fraction);
    let others: Vec<String> = scales
        .iter()
        .filter(|&&scale| scale != 1.0)
        .map(|&scale| {
            format!(
                "{:.1}% at ×{scale} the rate",
                improvement(rows, trace, scale, metric)
            )
        })
        .collect();
    format!(
        "under NP {:.1}% of requests arrived during a block's collection (device busy {:.1}%); {}",
        during * 100.0,
        busy * 100.0,
        others.join(", ")
    )
}

fn figure(rows: &[GcRow], stem: &'static str, y_label: &str, metric: fn(&GcRow) -> f64) -> Figure {
    let mut series = Vec::new();
    for trace in TRACES {
        for mode in MODES {
            let mut scales: Vec<f64> = rows
                .iter()
                .filter(|r| r.trace == trace.name)
                .map(|r| r.rate_scale)
                .collect();
            scales.sort_by(f64::total_cmp);
            scales.dedup();
            let points = scales
                .iter()
                .map(|&scale| LinePoint::new(scale, mean(rows, trace.name, mode, scale, metric)))
                .collect();
            series.push(Series {
                name: format!("{} {}", trace.name, mode.name()),
                style: match mode {
                    GcMode::NonPreemptive => SeriesStyle::LineWithMarkers,
                    GcMode::SemiPreemptive => SeriesStyle::Dashed,
                },
                points,
            });
        }
    }
    Figure {
        stem,
        chart: LineChart {
            title: format!("sp-gc: {y_label}, non-preemptive and semi-preemptive"),
            x_label: "arrival rate (× the trace's)".into(),
            y_label: y_label.into(),
            y_scale: YScale::Log,
            series,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    #[test]
    fn quick_sp_gc_runs_both_modes_on_the_same_requests_and_judges_the_slides_numbers() {
        let context = Context::new(Options {
            quick: true,
            ..Options::default()
        })
        .unwrap();
        let outcome = sp_gc(&context).unwrap();
        let Rows::Gc(rows) = &outcome.rows else {
            panic!("sp-gc writes GC rows")
        };
        assert_eq!(rows.len(), TRACES.len() * QUICK_RATE_SCALES.len() * 2);
        for pair in rows.chunks(2) {
            assert_eq!(pair[0].seed, pair[1].seed, "NP and SP share the stream");
            assert_eq!(
                (pair[0].mode, pair[1].mode),
                ("non-preemptive", "semi-preemptive")
            );
            assert_eq!(pair[0].preemptions, 0);
        }
        for claim in [
            "financial: mean response time",
            "cello: variance of response time",
        ] {
            let line = outcome
                .summary
                .lines()
                .find(|line| line.contains(claim))
                .unwrap_or_else(|| panic!("no row for {claim}:\n{}", outcome.summary));
            let diagnosed = line.contains("differs: ") && line.contains("points; under NP");
            assert!(line.contains("agrees") || diagnosed, "{line}");
            assert!(line.contains("±10 points"), "{line}");
        }
        assert_eq!(outcome.figures.len(), 2);
        assert_eq!(outcome.figures[0].chart.series.len(), 8);
        let out = tempfile::tempdir().unwrap();
        let files = crate::write_outcome(&outcome, out.path()).unwrap();
        for file in [
            "results.csv",
            "response_mean.png",
            "response_variance.svg",
            "summary.md",
        ] {
            assert!(files.iter().any(|f| f == file), "{file} not in {files:?}");
        }
        let csv = std::fs::read_to_string(out.path().join("results.csv")).unwrap();
        assert_eq!(
            csv.lines().count(),
            rows.len() + 1,
            "a header and a line per run"
        );
        assert!(csv.starts_with("experiment,configuration,seed,trace,mode,rate_scale"));
    }
}
