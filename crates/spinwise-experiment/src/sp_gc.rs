//! `sp-gc`: non-preemptive against semi-preemptive garbage collection (Lee et al.; the slides'
//! "Performance Improvement for Realistic Workloads") on spinwise-gc's flash model
//! (docs/gc.md): the slides' four trace shapes, each at half, once and twice its rate, both
//! modes, the same seeded request stream for both. The summary judges the slides' four numbers
//! (mean and variance of response time, Financial and Cello) on the traces' own rates, Poisson
//! arrivals and preemption alone (the "as described" variant); the other rates and the
//! ablations are the measured configurations a "differs" row cites.
//!
//! Ablations, each at the traces' own rates, each its own labelled rows, never judged: semi-
//! preemptive collection with the slides' merge, pipeline, or both (the non-preemptive side
//! stays plain: the slides present both as techniques of their preemptive collector); and
//! on/off bursty arrivals at two burst factors (the slides give no burst statistics), plain
//! and with merge and pipeline.
//!
//! Invariants: both modes of one (trace, rate, arrivals, seed) see the same requests (the
//! stream's seed does not depend on the mode or on merge and pipeline), so a difference between
//! them is the collector's alone; the "as described" rows are the configurations and seeds the
//! experiment ran before the ablations existed.

use crate::summary::{Basis, Comparison, Tolerance, Verdict, judge, table};
use crate::sweep::run_seed;
use crate::{Context, ExperimentError, ExperimentResult, Figure, Outcome, Rows};
use rayon::prelude::*;
use serde::Serialize;
use spinwise_gc::{Arrivals, GcMode, GcReport, SimConfig, TRACES, Workload, simulate};
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

/// Mean requests per burst of every bursty variant (the slides give none; docs/gc.md).
const MEAN_BURST_REQUESTS: f64 = 32.0;
/// Burst factors run (rate in a burst over the mean rate; the slides give none).
const BURST_FACTORS: [f64; 2] = [4.0, 16.0];

/// A set of device and arrival options both collectors run under.
#[derive(Clone, Copy, Debug)]
struct Variant {
    label: &'static str,
    /// Burst factor; 1 is Poisson.
    burst_factor: f64,
    /// Merge and pipeline, on the semi-preemptive side only.
    merge: bool,
    pipeline: bool,
}

/// The variant the slides' numbers are judged on.
const AS_DESCRIBED: &str = "as described";

/// Every variant, the judged one first. Only the first runs at every rate.
const VARIANTS: [Variant; 8] = [
    Variant {
        label: AS_DESCRIBED,
        burst_factor: 1.0,
        merge: false,
        pipeline: false,
    },
    Variant {
        label: "SP merge",
        burst_factor: 1.0,
        merge: true,
        pipeline: false,
    },
    Variant {
        label: "SP pipeline",
        burst_factor: 1.0,
        merge: false,
        pipeline: true,
    },
    Variant {
        label: "SP merge+pipeline",
        burst_factor: 1.0,
        merge: true,
        pipeline: true,
    },
    Variant {
        label: "bursty x4",
        burst_factor: BURST_FACTORS[0],
        merge: false,
        pipeline: false,
    },
    Variant {
        label: "bursty x4, SP merge+pipeline",
        burst_factor: BURST_FACTORS[0],
        merge: true,
        pipeline: true,
    },
    Variant {
        label: "bursty x16",
        burst_factor: BURST_FACTORS[1],
        merge: false,
        pipeline: false,
    },
    Variant {
        label: "bursty x16, SP merge+pipeline",
        burst_factor: BURST_FACTORS[1],
        merge: true,
        pipeline: true,
    },
];

impl Variant {
    fn arrivals(&self) -> Arrivals {
        if self.burst_factor == 1.0 {
            Arrivals::Poisson
        } else {
            Arrivals::Bursty {
                burst_factor: self.burst_factor,
                mean_burst_requests: MEAN_BURST_REQUESTS,
            }
        }
    }
}

/// One run: a trace at a rate under one collector, in one variant.
#[derive(Clone, Debug, Serialize)]
pub struct GcRow {
    pub experiment: &'static str,
    pub configuration: usize,
    pub seed: u64,
    pub trace: &'static str,
    pub mode: &'static str,
    pub variant: &'static str,
    /// "poisson" or "bursty".
    pub arrivals: &'static str,
    /// Rate in a burst over the mean rate (1 for Poisson).
    pub burst_factor: f64,
    /// Mean requests per burst (0 for Poisson).
    pub mean_burst_requests: f64,
    pub merge: bool,
    pub pipeline: bool,
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
    pub merged_pages: u64,
    pub reads_completed_by_merge: u64,
    pub overlapped_us: f64,
}

struct Job {
    configuration: usize,
    /// Which request stream: jobs with the same stream see the same requests.
    stream: usize,
    workload: Workload,
    rate_scale: f64,
    mode: GcMode,
    variant: Variant,
}

fn jobs(context: &Context) -> Vec<Job> {
    let scales = if context.quick {
        QUICK_RATE_SCALES
    } else {
        RATE_SCALES
    };
    let mut jobs: Vec<Job> = Vec::new();
    // The judged variant first, in the order (and so with the seeds) it had before ablations.
    for trace in TRACES {
        for &rate_scale in scales {
            for mode in MODES {
                jobs.push(Job {
                    configuration: jobs.len(),
                    stream: jobs.len() / 2,
                    workload: *trace,
                    rate_scale,
                    mode,
                    variant: VARIANTS[0],
                });
            }
        }
    }
    // Ablations at the traces' rates: a Poisson one reuses the judged run's stream, a bursty
    // one has a stream per (trace, burst factor).
    let poisson_streams = jobs.len() / 2;
    for variant in &VARIANTS[1..] {
        for (trace_index, trace) in TRACES.iter().enumerate() {
            let stream = if variant.burst_factor == 1.0 {
                let own_rate = scales.iter().position(|&s| s == 1.0).expect("×1 is run");
                trace_index * scales.len() + own_rate
            } else {
                let factor = BURST_FACTORS
                    .iter()
                    .position(|&b| b == variant.burst_factor)
                    .expect("a listed burst factor");
                poisson_streams + factor * TRACES.len() + trace_index
            };
            for mode in MODES {
                jobs.push(Job {
                    configuration: jobs.len(),
                    stream,
                    workload: *trace,
                    rate_scale: 1.0,
                    mode,
                    variant: *variant,
                });
            }
        }
    }
    jobs
}

fn run(job: &Job, context: &Context, seed_index: u32) -> ExperimentResult<GcRow> {
    // The stream's seed does not depend on the mode: both collectors see the same requests.
    let seed = run_seed(context.base_seed, job.stream, seed_index);
    let workload = Workload {
        arrivals_per_s: job.workload.arrivals_per_s * job.rate_scale,
        arrivals: job.variant.arrivals(),
        ..job.workload
    };
    let semi = job.mode == GcMode::SemiPreemptive;
    let requests = if context.quick {
        QUICK_REQUESTS
    } else {
        REQUESTS
    };
    let config = SimConfig {
        seed,
        requests,
        warmup_requests: requests / 10,
        merge: semi && job.variant.merge,
        pipeline: semi && job.variant.pipeline,
        ..SimConfig::new(workload, job.mode)
    };
    let report = simulate(&config).map_err(|error| {
        ExperimentError::Invalid(format!("{NAME}: {}: {error}", job.workload.name))
    })?;
    Ok(row(job, seed, &workload, &config, &report))
}

fn row(job: &Job, seed: u64, workload: &Workload, config: &SimConfig, report: &GcReport) -> GcRow {
    let (arrivals, burst_factor, mean_burst_requests) = match workload.arrivals {
        Arrivals::Poisson => ("poisson", 1.0, 0.0),
        Arrivals::Bursty {
            burst_factor,
            mean_burst_requests,
        } => ("bursty", burst_factor, mean_burst_requests),
    };
    GcRow {
        experiment: NAME,
        configuration: job.configuration,
        seed,
        trace: workload.name,
        mode: job.mode.name(),
        variant: job.variant.label,
        arrivals,
        burst_factor,
        mean_burst_requests,
        merge: config.merge,
        pipeline: config.pipeline,
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
        merged_pages: report.merged_pages,
        reads_completed_by_merge: report.reads_completed_by_merge,
        overlapped_us: report.overlapped_us,
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
            ablation_figure(&rows),
        ],
        rows: Rows::Gc(rows),
        summary,
    })
}

/// Mean of `metric` over the seeds of (variant, trace, mode, scale).
fn mean(
    rows: &[GcRow],
    variant: &str,
    trace: &str,
    mode: GcMode,
    scale: f64,
    metric: fn(&GcRow) -> f64,
) -> f64 {
    let values: Vec<f64> = rows
        .iter()
        .filter(|r| {
            r.variant == variant
                && r.trace == trace
                && r.mode == mode.name()
                && r.rate_scale == scale
        })
        .map(metric)
        .collect();
    assert!(
        !values.is_empty(),
        "{variant}: {trace} {} at ×{scale} ran",
        mode.name()
    );
    values.iter().sum::<f64>() / values.len() as f64
}

/// How much semi-preemption lowers `metric` in `variant`, in percent of the non-preemptive
/// value.
fn improvement(
    rows: &[GcRow],
    variant: &str,
    trace: &str,
    scale: f64,
    metric: fn(&GcRow) -> f64,
) -> f64 {
    let np = mean(rows, variant, trace, GcMode::NonPreemptive, scale, metric);
    let sp = mean(rows, variant, trace, GcMode::SemiPreemptive, scale, metric);
    100.0 * (np - sp) / np
}

fn mean_metric(r: &GcRow) -> f64 {
    r.mean_response_us
}

fn variance_metric(r: &GcRow) -> f64 {
    r.response_variance_us2
}

/// Why an ablation row is not judged.
const ABLATION: &str = "an ablation beside the judged row, not the configuration it judges";

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
            let ours = improvement(rows, AS_DESCRIBED, trace, 1.0, metric);
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
        for variant in &VARIANTS[1..] {
            let label = variant.label;
            let np_busy = mean(rows, label, trace, GcMode::NonPreemptive, 1.0, |r| {
                r.busy_fraction
            });
            let sp = |metric: fn(&GcRow) -> f64| {
                mean(rows, label, trace, GcMode::SemiPreemptive, 1.0, metric)
            };
            let merged = sp(|r| r.merged_pages as f64);
            let overlapped_ms = sp(|r| r.overlapped_us / 1e3);
            comparisons.push(Comparison {
                quantity: format!(
                    "{trace}, ablation \"{label}\": mean; variance lowered by SP (%)"
                ),
                paper: format!("{paper_mean} %; {paper_variance} %"),
                as_described: "—".into(),
                with_additions: Some(format!(
                    "{:.1} %; {:.1} % (NP busy {:.1}%; SP merged {:.0} pages, overlapped {:.0} ms)",
                    improvement(rows, label, trace, 1.0, mean_metric),
                    improvement(rows, label, trace, 1.0, variance_metric),
                    np_busy * 100.0,
                    merged,
                    overlapped_ms
                )),
                verdict: Verdict::NotJudged(ABLATION),
                tolerance: "none".into(),
            });
        }
    }
    for trace in ["tpc-h", "openmail"] {
        let ours = improvement(rows, AS_DESCRIBED, trace, 1.0, mean_metric);
        let busy = mean(rows, AS_DESCRIBED, trace, GcMode::NonPreemptive, 1.0, |r| {
            r.busy_fraction
        });
        let with_both = improvement(rows, "SP merge+pipeline", trace, 1.0, mean_metric);
        comparisons.push(Comparison {
            quantity: format!("{trace}: mean response time, lowered by SP (%)"),
            paper: "not given in the slides".into(),
            as_described: format!("{ours:.1} % (device busy {:.0}% under NP)", busy * 100.0),
            with_additions: Some(format!("{with_both:.1} % with SP merge+pipeline")),
            verdict: Verdict::NotJudged("the slides give no number for this trace"),
            tolerance: "none".into(),
        });
    }
    let ablation_runs = rows.iter().filter(|r| r.variant != AS_DESCRIBED).count();
    format!(
        "# sp-gc: semi-preemptive garbage collection (Lee et al.)\n\n{} runs of {} measured \
         requests each after {} of warm-up, {} seed(s) per configuration from base seed {}{}, on \
         spinwise-gc's one-chip flash model (1,024 blocks of 64 4-KiB pages, 15% reserved, GC \
         from 5% free blocks, non-preemptible below 1%; docs/gc.md). Every number below is \
         computed from `results.csv`; each improvement is (NP − SP) / NP of the seeds' means at \
         the trace's own rate. The slides' numbers are judged on the \"{AS_DESCRIBED}\" variant \
         (Poisson arrivals, preemption alone). {ablation_runs} of the runs are ablations at the \
         traces' own rates, shown and not judged: SP with the slides' merge and/or pipeline \
         (NP plain), and on/off bursty arrivals with {MEAN_BURST_REQUESTS} requests a burst on \
         average at {} times the mean rate in a burst (the slides give no burst statistics).\n\n{}",
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
        BURST_FACTORS.map(|b| b.to_string()).join(" and "),
        table(&comparisons)
    )
}

/// What a "differs" row cites: how many requests arrived during a collection under NP (the
/// requests preemption can help), the improvement at the other rates run, and in every
/// ablation.
fn diagnostic(rows: &[GcRow], trace: &str, scales: &[f64], metric: fn(&GcRow) -> f64) -> String {
    let during = mean(rows, AS_DESCRIBED, trace, GcMode::NonPreemptive, 1.0, |r| {
        r.arrived_during_collection as f64 / r.requests as f64
    });
    let busy = mean(rows, AS_DESCRIBED, trace, GcMode::NonPreemptive, 1.0, |r| {
        r.busy_fraction
    });
    let others: Vec<String> = scales
        .iter()
        .filter(|&&scale| scale != 1.0)
        .map(|&scale| {
            format!(
                "{:.1}% at ×{scale} the rate",
                improvement(rows, AS_DESCRIBED, trace, scale, metric)
            )
        })
        .collect();
    let ablations: Vec<String> = VARIANTS[1..]
        .iter()
        .map(|variant| {
            format!(
                "{:.1}% {}",
                improvement(rows, variant.label, trace, 1.0, metric),
                variant.label
            )
        })
        .collect();
    format!(
        "under NP {:.1}% of requests arrived during a block's collection (device busy {:.1}%); {}; \
         ablations at the trace's rate: {}",
        during * 100.0,
        busy * 100.0,
        others.join(", "),
        ablations.join(", ")
    )
}

fn figure(rows: &[GcRow], stem: &'static str, y_label: &str, metric: fn(&GcRow) -> f64) -> Figure {
    let mut series = Vec::new();
    for trace in TRACES {
        for mode in MODES {
            let mut scales: Vec<f64> = rows
                .iter()
                .filter(|r| r.trace == trace.name && r.variant == AS_DESCRIBED)
                .map(|r| r.rate_scale)
                .collect();
            scales.sort_by(f64::total_cmp);
            scales.dedup();
            let points = scales
                .iter()
                .map(|&scale| {
                    LinePoint::new(
                        scale,
                        mean(rows, AS_DESCRIBED, trace.name, mode, scale, metric),
                    )
                })
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
            title: format!("sp-gc: {y_label}, non-preemptive and semi-preemptive ({AS_DESCRIBED})"),
            x_label: "arrival rate (× the trace's)".into(),
            y_label: y_label.into(),
            y_scale: YScale::Log,
            series,
        },
    }
}

/// The mean's improvement at each trace's rate against the burst factor (1 = Poisson), SP
/// plain and SP with merge and pipeline: one series each per trace.
fn ablation_figure(rows: &[GcRow]) -> Figure {
    let mut series = Vec::new();
    for trace in TRACES {
        for (with_both, suffix) in [(false, "SP"), (true, "SP merge+pipeline")] {
            let points = VARIANTS
                .iter()
                .filter(|v| v.merge == with_both && v.pipeline == with_both)
                .map(|v| {
                    LinePoint::new(
                        v.burst_factor,
                        improvement(rows, v.label, trace.name, 1.0, mean_metric),
                    )
                })
                .collect();
            series.push(Series {
                name: format!("{} {suffix}", trace.name),
                style: if with_both {
                    SeriesStyle::Dashed
                } else {
                    SeriesStyle::LineWithMarkers
                },
                points,
            });
        }
    }
    Figure {
        stem: "ablation_mean",
        chart: LineChart {
            title: "sp-gc: mean response time lowered by SP at each trace's rate (ablations)"
                .into(),
            x_label: "burst factor (1 = Poisson)".into(),
            y_label: "mean response time lowered by SP (%)".into(),
            y_scale: YScale::Linear,
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
        let judged = TRACES.len() * QUICK_RATE_SCALES.len() * 2;
        let ablations = (VARIANTS.len() - 1) * TRACES.len() * 2;
        assert_eq!(rows.len(), judged + ablations);
        for pair in rows.chunks(2) {
            assert_eq!(pair[0].seed, pair[1].seed, "NP and SP share the stream");
            assert_eq!(
                (pair[0].mode, pair[1].mode),
                ("non-preemptive", "semi-preemptive")
            );
            assert_eq!(pair[0].variant, pair[1].variant);
            assert_eq!(pair[0].preemptions, 0);
            assert!(!pair[0].merge && !pair[0].pipeline, "NP stays plain");
            assert_eq!(pair[0].overlapped_us, 0.0);
        }
        assert!(rows[..judged].iter().all(|r| r.variant == AS_DESCRIBED
            && r.arrivals == "poisson"
            && !r.merge
            && !r.pipeline));
        // A Poisson ablation runs on the judged run's requests: its NP side is the same run.
        let own_rate = |variant: &str, trace: &str| {
            rows.iter()
                .find(|r| r.variant == variant && r.trace == trace && r.rate_scale == 1.0)
                .unwrap()
        };
        for trace in TRACES {
            let judged_np = own_rate(AS_DESCRIBED, trace.name);
            let merged_np = own_rate("SP merge", trace.name);
            assert_eq!(judged_np.seed, merged_np.seed);
            assert_eq!(judged_np.mean_response_us, merged_np.mean_response_us);
        }
        let merged = rows
            .iter()
            .filter(|r| r.merge)
            .map(|r| r.merged_pages)
            .sum::<u64>();
        assert!(merged > 0, "merges happen in the ablations");
        assert!(
            rows.iter()
                .filter(|r| r.pipeline)
                .all(|r| r.overlapped_us > 0.0)
        );
        assert!(
            rows.iter()
                .any(|r| r.arrivals == "bursty" && r.burst_factor == 16.0)
        );
        for claim in [
            "financial: mean response time",
            "cello: variance of response time",
        ] {
            let line = outcome
                .summary
                .lines()
                .find(|line| line.contains(claim))
                .unwrap_or_else(|| panic!("no row for {claim}:\n{}", outcome.summary));
            let diagnosed = line.contains("differs: ")
                && line.contains("points; under NP")
                && line.contains("% SP merge+pipeline")
                && line.contains("% bursty x16");
            assert!(line.contains("agrees") || diagnosed, "{line}");
            assert!(line.contains("±10 points"), "{line}");
        }
        assert!(
            outcome
                .summary
                .contains("financial, ablation \"bursty x4\": mean; variance lowered by SP")
        );
        assert_eq!(outcome.figures.len(), 3);
        for figure in &outcome.figures {
            assert_eq!(figure.chart.series.len(), 8, "{}", figure.stem);
            assert!(figure.chart.series.len() <= spinwise_report::MAX_SERIES);
        }
        let out = tempfile::tempdir().unwrap();
        let files = crate::write_outcome(&outcome, out.path()).unwrap();
        for file in [
            "results.csv",
            "response_mean.png",
            "response_variance.svg",
            "ablation_mean.png",
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
        assert!(csv.starts_with(
            "experiment,configuration,seed,trace,mode,variant,arrivals,burst_factor,\
             mean_burst_requests,merge,pipeline,rate_scale"
        ));
        let header = csv.lines().next().unwrap();
        assert!(header.ends_with("merged_pages,reads_completed_by_merge,overlapped_us"));
    }
}
