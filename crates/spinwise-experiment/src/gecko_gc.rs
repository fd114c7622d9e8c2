//! `gecko-gc`: how garbage collection costs a log over RAID-0 and Gecko's chain (Shin et al.,
//! FAST 2013, slides 6, 19 and 20) on spinwise-gecko's seek-cost disk model (docs/gecko.md):
//! two disks, one writer of random 4-KiB pages as fast as the log takes them, the logical
//! space written once before the run so the log fills and the collector starts a few seconds
//! in. Throughput per simulated second, application and aggregate (application + collector).
//! Move-to-tail against compact-in-body runs on a three-disk chain (on two, the chain's body is
//! the disk being emptied, so compact-in-body has nowhere to write; docs/gecko.md), with half a
//! disk of data and with a whole disk, since the slides do not give their utilisation.
//! Two ablations of the RAID-0 run (no positioning cost; 512-KiB requests) are measured so a
//! "differs" row can say what the gap depends on.
//!
//! Invariant: every configuration of one seed index sees the same seed, so layouts and
//! collectors are compared on the same client stream. results.csv has a row per run;
//! seconds.csv a row per (run, simulated second), which the figures plot.

use crate::summary::{Basis, Comparison, Tolerance, judge, judge_claim, table};
use crate::sweep::run_seed;
use crate::{Context, ExperimentError, ExperimentResult, Figure, Outcome, Rows};
use rayon::prelude::*;
use serde::Serialize;
use spinwise_gecko::{
    ClientLoad, Collector, DiskParams, Interval, Layout, LogConfig, SimConfig, SimReport, simulate,
};
use spinwise_report::{LineChart, LinePoint, Series, SeriesStyle, YScale};

const NAME: &str = "gecko-gc";
/// 1 GiB per disk at 4 KiB pages: capacity only sets when the log fills (positioning is not a
/// function of distance in the model), so a small disk shortens the run to the same steady state.
const PAGES_PER_DISK: u64 = 262_144;
/// Half a disk of logical data (a quarter of the two-disk array): our choice, the slides do not
/// give the synthetic workload's address space; a two-disk chain must fit it on one disk.
const LOGICAL_PAGES: u64 = PAGES_PER_DISK / 2;
/// The collectors are also compared with a whole disk of data on the three-disk chain, where
/// the head segments hold more live pages (the slides do not give their utilisation).
const DENSE_LOGICAL_PAGES: u64 = PAGES_PER_DISK;
const DURATION_S: f64 = 120.0;
const QUICK_DURATION_S: f64 = 30.0;

const TOLERANCE: Tolerance = Tolerance::relative(
    0.25,
    "a factor rounded to a whole number on the slides (\"3X\", \"4X\", \"10X\"), read off \
     curves we do not have the data of, on a model whose disk parameters are our assumptions",
);

/// What one configuration runs.
#[derive(Clone, Copy)]
struct Job {
    layout: Layout,
    collector: Collector,
    disks: u32,
    logical_pages: u64,
    variant: Variant,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    AsDescribed,
    /// The disk without positioning cost: interleaving is free.
    NoPositioning,
    /// 512-KiB requests (RAID-0 stripe unit and request): fewer positionings per byte.
    LargeRequests,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::AsDescribed => "as described",
            Variant::NoPositioning => "ablation: no positioning cost",
            Variant::LargeRequests => "ablation: 512-KiB requests",
        }
    }
}

const JOBS: [Job; 8] = [
    job(
        Layout::Raid0,
        Collector::MoveToTail,
        2,
        LOGICAL_PAGES,
        Variant::AsDescribed,
    ),
    job(
        Layout::Chain,
        Collector::MoveToTail,
        2,
        LOGICAL_PAGES,
        Variant::AsDescribed,
    ),
    job(
        Layout::Chain,
        Collector::MoveToTail,
        3,
        LOGICAL_PAGES,
        Variant::AsDescribed,
    ),
    job(
        Layout::Chain,
        Collector::CompactInBody,
        3,
        LOGICAL_PAGES,
        Variant::AsDescribed,
    ),
    job(
        Layout::Raid0,
        Collector::MoveToTail,
        2,
        LOGICAL_PAGES,
        Variant::NoPositioning,
    ),
    job(
        Layout::Raid0,
        Collector::MoveToTail,
        2,
        LOGICAL_PAGES,
        Variant::LargeRequests,
    ),
    job(
        Layout::Chain,
        Collector::MoveToTail,
        3,
        DENSE_LOGICAL_PAGES,
        Variant::AsDescribed,
    ),
    job(
        Layout::Chain,
        Collector::CompactInBody,
        3,
        DENSE_LOGICAL_PAGES,
        Variant::AsDescribed,
    ),
];

const fn job(
    layout: Layout,
    collector: Collector,
    disks: u32,
    logical_pages: u64,
    variant: Variant,
) -> Job {
    Job {
        layout,
        collector,
        disks,
        logical_pages,
        variant,
    }
}

/// One run: its inputs, its means before and during GC, and its counters.
#[derive(Clone, Debug, Serialize)]
pub struct GeckoGcRow {
    pub experiment: &'static str,
    pub configuration: usize,
    pub seed: u64,
    pub layout: &'static str,
    pub collector: &'static str,
    pub disks: u32,
    pub variant: &'static str,
    pub request_kib: u64,
    pub logical_gib: f64,
    pub seconds: usize,
    /// The first second in which the collector moved bytes (empty: it never did).
    pub first_gc_second: Option<usize>,
    pub app_before_gc_mb_per_s: Option<f64>,
    pub app_during_gc_mb_per_s: Option<f64>,
    pub aggregate_during_gc_mb_per_s: Option<f64>,
    pub gc_during_gc_mb_per_s: Option<f64>,
    pub segments_cleaned: u64,
    pub pages_moved: u64,
    pub body_fallback_pages: u64,
    pub positionings: u64,
    pub gc_reads_on_tail_disk: u64,
    pub tail_disk_positionings: u64,
    pub tail_disk_changes: u64,
    pub writer_idle_s: f64,
}

/// One simulated second of one run (`seconds.csv`): what the figures plot.
#[derive(Clone, Debug, Serialize)]
pub struct GeckoGcSecond {
    pub configuration: usize,
    pub seed: u64,
    pub layout: &'static str,
    pub collector: &'static str,
    pub disks: u32,
    pub variant: &'static str,
    pub second: usize,
    pub app_mb_per_s: f64,
    pub gc_mb_per_s: f64,
    pub aggregate_mb_per_s: f64,
    pub collecting: bool,
}

fn config(job: &Job, seed: u64, duration_s: f64) -> SimConfig {
    let log = LogConfig::new(
        job.layout,
        job.collector,
        job.disks,
        PAGES_PER_DISK,
        job.logical_pages,
    );
    let mut config = SimConfig::new(log, ClientLoad::WriteOnly, duration_s, seed);
    match job.variant {
        Variant::AsDescribed => {}
        Variant::NoPositioning => {
            config.disk = DiskParams {
                seek_ms: 0.0,
                half_rotation_ms: 0.0,
                ..config.disk
            };
        }
        Variant::LargeRequests => {
            config.request_pages = 128;
            config.log.stripe_pages = 128;
        }
    }
    config
}

/// A finished run: which job, its seed, what it measured.
struct Run {
    configuration: usize,
    seed: u64,
    report: SimReport,
}

pub fn gecko_gc(context: &Context) -> ExperimentResult<Outcome> {
    let duration_s = if context.quick {
        QUICK_DURATION_S
    } else {
        DURATION_S
    };
    let plan: Vec<(usize, u32)> = (0..JOBS.len())
        .flat_map(|job| (0..context.seeds).map(move |seed| (job, seed)))
        .collect();
    let runs: Vec<Run> = context.pool.install(|| {
        plan.par_iter()
            .map(|&(configuration, seed_index)| {
                // The seed does not depend on the configuration: same client stream for all.
                let seed = run_seed(context.base_seed, 0, seed_index);
                let job = &JOBS[configuration];
                simulate(&config(job, seed, duration_s))
                    .map(|report| Run {
                        configuration,
                        seed,
                        report,
                    })
                    .map_err(|e| ExperimentError::Invalid(format!("{NAME}: {e}")))
            })
            .collect::<ExperimentResult<_>>()
    })?;
    let rows: Vec<GeckoGcRow> = runs.iter().map(row_of).collect();
    let seconds: Vec<GeckoGcSecond> = runs.iter().flat_map(seconds_of).collect();
    let summary = summary(context, &runs, duration_s);
    Ok(Outcome {
        figures: vec![
            timeline(&runs, 0, "gc_raid0", "log + RAID-0, 2 disks"),
            timeline(&runs, 1, "gc_gecko", "Gecko chain, 2 disks, move-to-tail"),
            collectors(&runs, 2, "gc_collectors"),
            collectors(&runs, 6, "gc_collectors_dense"),
        ],
        rows: Rows::GeckoGc { rows, seconds },
        summary,
    })
}

fn row_of(run: &Run) -> GeckoGcRow {
    let job = &JOBS[run.configuration];
    let config = config(job, run.seed, 1.0);
    let report = &run.report;
    GeckoGcRow {
        experiment: NAME,
        configuration: run.configuration,
        seed: run.seed,
        layout: job.layout.name(),
        collector: job.collector.name(),
        disks: job.disks,
        variant: job.variant.name(),
        request_kib: config.request_pages * 4,
        logical_gib: gib(job.logical_pages),
        seconds: report.intervals.len(),
        first_gc_second: report.intervals.iter().position(Interval::collecting),
        app_before_gc_mb_per_s: report.mean_before_collecting(app),
        app_during_gc_mb_per_s: report.mean_while_collecting(app),
        aggregate_during_gc_mb_per_s: report.mean_while_collecting(aggregate),
        gc_during_gc_mb_per_s: report.mean_while_collecting(Interval::gc_mb_per_s),
        segments_cleaned: report.segments_cleaned,
        pages_moved: report.pages_moved,
        body_fallback_pages: report.body_fallback_pages,
        positionings: report.positionings,
        gc_reads_on_tail_disk: report.gc_reads_on_tail_disk,
        tail_disk_positionings: report.tail_disk_positionings,
        tail_disk_changes: report.tail_disk_changes,
        writer_idle_s: report.writer_idle_s,
    }
}

fn seconds_of(run: &Run) -> Vec<GeckoGcSecond> {
    let job = &JOBS[run.configuration];
    run.report
        .intervals
        .iter()
        .enumerate()
        .map(|(second, interval)| GeckoGcSecond {
            configuration: run.configuration,
            seed: run.seed,
            layout: job.layout.name(),
            collector: job.collector.name(),
            disks: job.disks,
            variant: job.variant.name(),
            second,
            app_mb_per_s: interval.app_mb_per_s(),
            gc_mb_per_s: interval.gc_mb_per_s(),
            aggregate_mb_per_s: interval.aggregate_mb_per_s(),
            collecting: interval.collecting(),
        })
        .collect()
}

fn gib(pages: u64) -> f64 {
    (pages * 4096) as f64 / f64::from(1u32 << 30)
}

fn runs_of(runs: &[Run], configuration: usize) -> impl Iterator<Item = &Run> {
    runs.iter()
        .filter(move |r| r.configuration == configuration)
}

/// Mean over the seeds of a configuration of a per-run number.
fn mean_runs(runs: &[Run], configuration: usize, metric: impl Fn(&SimReport) -> f64) -> f64 {
    let values: Vec<f64> = runs_of(runs, configuration)
        .map(|r| metric(&r.report))
        .collect();
    assert!(!values.is_empty(), "configuration {configuration} ran");
    values.iter().sum::<f64>() / values.len() as f64
}

/// Mean of `metric` over the seconds the collector worked in, over seeds (0 if it never did).
fn during(runs: &[Run], configuration: usize, metric: fn(&Interval) -> f64) -> f64 {
    mean_runs(runs, configuration, |r| {
        r.mean_while_collecting(metric).unwrap_or(0.0)
    })
}

fn before(runs: &[Run], configuration: usize, metric: fn(&Interval) -> f64) -> f64 {
    mean_runs(runs, configuration, |r| {
        r.mean_before_collecting(metric).unwrap_or(0.0)
    })
}

fn app(i: &Interval) -> f64 {
    i.app_mb_per_s()
}

fn aggregate(i: &Interval) -> f64 {
    i.aggregate_mb_per_s()
}

fn summary(context: &Context, runs: &[Run], duration_s: f64) -> String {
    let mut comparisons = Vec::new();
    let (raid, gecko, moving, compacting) = (0, 1, 2, 3);
    for (quantity, paper, metric) in [
        ("aggregate", 3.0, aggregate as fn(&Interval) -> f64),
        ("application", 4.0, app),
    ] {
        let ours = during(runs, gecko, metric) / during(runs, raid, metric);
        let (verdict, tolerance) = judge(ours, paper, Basis::Test(TOLERANCE), |_| {
            ratio_diagnostic(runs, metric)
        });
        comparisons.push(Comparison {
            quantity: format!(
                "{quantity} throughput during GC, Gecko ÷ log+RAID-0 (2 disks, write-only)"
            ),
            paper: format!("{paper:.0}× (slide 19)"),
            as_described: format!(
                "{ours:.1}× ({:.0} vs {:.0} MB/s)",
                during(runs, gecko, metric),
                during(runs, raid, metric)
            ),
            with_additions: None,
            verdict,
            tolerance,
        });
    }
    let fall = before(runs, raid, app) / during(runs, raid, app);
    let (verdict, tolerance) = judge(fall, 10.0, Basis::Test(TOLERANCE), |_| {
        format!(
            "{:.0}% of the RAID-0 run's requests paid a positioning; without positioning cost \
             the application's throughput falls {:.1}×, with 512-KiB requests {:.1}×",
            positioned_share(runs, raid),
            before(runs, 4, app) / during(runs, 4, app),
            before(runs, 5, app) / during(runs, 5, app)
        )
    });
    comparisons.push(Comparison {
        quantity: "application throughput before ÷ during GC, log+RAID-0".into(),
        paper: "\"throughput falls by 10X during GC\" (slide 6)".into(),
        as_described: format!(
            "{fall:.1}× ({:.0} → {:.0} MB/s)",
            before(runs, raid, app),
            during(runs, raid, app)
        ),
        with_additions: None,
        verdict,
        tolerance,
    });
    comparisons.push(always_high(runs, gecko));
    comparisons.push(tail_untouched(runs, gecko));
    comparisons.push(collectors_row(runs, moving, compacting));
    comparisons.push(collectors_row(runs, 6, 7));
    format!(
        "# gecko-gc: garbage collection on a log over RAID-0 and on Gecko's chain (Shin et al., \
         FAST 2013)\n\n{} runs of {duration_s:.0} simulated seconds, {} seed(s) per \
         configuration from base seed {}{}, on spinwise-gecko's disk model (120 MB/s \
         sequential, 4.2 ms seek + 3 ms half rotation whenever a request does not continue the \
         last; our assumptions for the slides' WD 10K RPM drive, docs/gecko.md). One writer of \
         random 4-KiB pages, appended 128 KiB at a time, over {:.1} GiB of logical space \
         written once before the run; 1 GiB disks (capacity only sets when the log fills). \
         \"During GC\" is every second in which the collector moved bytes. The workload is our \
         synthetic one; the slides' numbers are read off their figures. Every number below is \
         computed from `results.csv`.\n\n{}",
        runs.len(),
        context.seeds,
        context.base_seed,
        if context.quick {
            " (--quick: 30 s runs, so fewer seconds of GC)"
        } else {
            ""
        },
        gib(LOGICAL_PAGES),
        table(&comparisons)
    )
}

/// What a ratio row cites: RAID-0's positioned share and the ratio under each ablation.
fn ratio_diagnostic(runs: &[Run], metric: fn(&Interval) -> f64) -> String {
    let gecko = during(runs, 1, metric);
    format!(
        "{:.0}% of the RAID-0 run's requests paid a positioning; Gecko ÷ RAID-0 is {:.1}× \
         against RAID-0 without positioning cost and {:.1}× against RAID-0 with 512-KiB requests",
        positioned_share(runs, 0),
        gecko / during(runs, 4, metric),
        gecko / during(runs, 5, metric)
    )
}

/// Share of a configuration's requests that paid a positioning, in percent.
fn positioned_share(runs: &[Run], configuration: usize) -> f64 {
    let request_pages = config(&JOBS[configuration], 0, 1.0).request_pages as f64;
    100.0
        * mean_runs(runs, configuration, |r| {
            let bytes: u64 = r
                .intervals
                .iter()
                .map(|i| i.app_write_bytes + i.app_read_bytes + i.gc_read_bytes + i.gc_write_bytes)
                .sum();
            let requests = bytes as f64 / (request_pages * 4096.0);
            r.positionings as f64 / requests.max(1.0)
        })
}

/// Slide 19: "Gecko's aggregate throughput always remains high": every second after the
/// collector starts at or above one disk's sequential bandwidth.
fn always_high(runs: &[Run], gecko: usize) -> Comparison {
    let one_disk_mb_per_s = DiskParams::WD_10K.bandwidth_bytes_per_s / 1e6;
    let lowest = runs_of(runs, gecko)
        .flat_map(|r| {
            r.report
                .intervals
                .iter()
                .skip_while(|i| !i.collecting())
                .map(Interval::aggregate_mb_per_s)
        })
        .fold(f64::INFINITY, f64::min);
    let (verdict, tolerance) = judge_claim(
        lowest >= one_disk_mb_per_s,
        "a bound: every second at or above one disk's sequential bandwidth (120 MB/s), the \
         slides' \"max sequential throughput of 1 disk\" line",
        || format!("the lowest second carried {lowest:.0} MB/s"),
    );
    Comparison {
        quantity: "Gecko's aggregate throughput, lowest second once GC runs".into(),
        paper: "\"always remains high\" (slide 19)".into(),
        as_described: format!("{lowest:.0} MB/s"),
        with_additions: None,
        verdict,
        tolerance,
    }
}

/// Slide 12: "GC reads do not interrupt the sequential write".
fn tail_untouched(runs: &[Run], gecko: usize) -> Comparison {
    let reads = mean_runs(runs, gecko, |r| r.gc_reads_on_tail_disk as f64);
    let positioned = mean_runs(runs, gecko, |r| r.tail_disk_positionings as f64);
    let changes = mean_runs(runs, gecko, |r| r.tail_disk_changes as f64);
    let (verdict, tolerance) = judge_claim(
        reads == 0.0 && positioned <= changes + 1.0,
        "none: no collector read on the tail disk, and no positioning there but at a move of \
         the tail to the next disk",
        || format!("{reads:.0} collector reads and {positioned:.0} positionings on the tail disk"),
    );
    Comparison {
        quantity: "collector reads served by the tail disk, Gecko (2 disks)".into(),
        paper: "\"GC reads do not interrupt the sequential write\" (slide 12)".into(),
        as_described: format!(
            "{reads:.0} reads; {positioned:.0} positionings over {changes:.0} moves of the tail"
        ),
        with_additions: None,
        verdict,
        tolerance,
    }
}

/// Slide 20: "App throughput can be preserved using smarter GC".
fn collectors_row(runs: &[Run], moving: usize, compacting: usize) -> Comparison {
    let (move_app, compact_app) = (during(runs, moving, app), during(runs, compacting, app));
    let before_app = before(runs, compacting, app);
    let data_gib = gib(JOBS[compacting].logical_pages);
    let (verdict, tolerance) = judge_claim(
        compact_app > move_app && compact_app >= 0.95 * before_app,
        "a direction: compact-in-body above move-to-tail, and within 5% of the application's \
         throughput before GC (\"preserved\")",
        || {
            let cleaned = |c: usize| mean_runs(runs, c, |r| r.segments_cleaned as f64);
            format!(
                "compact-in-body cleaned {:.0} segments to move-to-tail's {:.0}, and the \
                 writer stood idle {:.1} s of {:.0} (move-to-tail: {:.1} s): its {:.0} pages \
                 written into body holes cost {:.0} positionings and a sweep of each target \
                 segment on the body disk; {:.0} pages fell back to the tail, {:.0} collector \
                 reads hit it",
                cleaned(compacting),
                cleaned(moving),
                mean_runs(runs, compacting, |r| r.writer_idle_s),
                mean_runs(runs, compacting, |r| r.intervals.len() as f64),
                mean_runs(runs, moving, |r| r.writer_idle_s),
                mean_runs(runs, compacting, |r| r.pages_moved as f64),
                mean_runs(runs, compacting, |r| r.positionings as f64),
                mean_runs(runs, compacting, |r| r.body_fallback_pages as f64),
                mean_runs(runs, compacting, |r| r.gc_reads_on_tail_disk as f64)
            )
        },
    );
    Comparison {
        quantity: format!(
            "application throughput during GC, compact-in-body vs move-to-tail (Gecko, 3 disks, \
             {data_gib:.1} GiB of data)"
        ),
        paper: "\"app throughput can be preserved using smarter GC\" (slide 20)".into(),
        as_described: format!(
            "{compact_app:.0} vs {move_app:.0} MB/s (before GC: {before_app:.0} MB/s)"
        ),
        with_additions: None,
        verdict,
        tolerance,
    }
}

/// The seeds' mean of `metric` per second of a configuration.
fn per_second(runs: &[Run], configuration: usize, metric: fn(&Interval) -> f64) -> Vec<LinePoint> {
    let chosen: Vec<&Run> = runs_of(runs, configuration).collect();
    let seconds = chosen[0].report.intervals.len();
    (0..seconds)
        .map(|second| {
            let sum: f64 = chosen
                .iter()
                .map(|r| metric(&r.report.intervals[second]))
                .sum();
            LinePoint::new(second as f64, sum / chosen.len() as f64)
        })
        .collect()
}

fn reference(name: &str, mb_per_s: f64, seconds: usize) -> Series {
    Series {
        name: name.into(),
        style: SeriesStyle::Dashed,
        points: vec![
            LinePoint::new(0.0, mb_per_s),
            LinePoint::new(seconds as f64, mb_per_s),
        ],
    }
}

/// Slides 6 and 19: aggregate, application and collector throughput over time.
fn timeline(runs: &[Run], configuration: usize, stem: &'static str, title: &str) -> Figure {
    let seconds = runs_of(runs, configuration)
        .next()
        .map_or(0, |r| r.report.intervals.len());
    let one_disk = DiskParams::WD_10K.bandwidth_bytes_per_s / 1e6;
    let mut series: Vec<Series> = [
        ("aggregate", aggregate as fn(&Interval) -> f64),
        ("application", app),
        ("GC", Interval::gc_mb_per_s),
    ]
    .into_iter()
    .map(|(name, metric)| Series {
        name: name.into(),
        style: SeriesStyle::Line,
        points: per_second(runs, configuration, metric),
    })
    .collect();
    series.push(reference("max sequential, 1 disk", one_disk, seconds));
    series.push(reference(
        "max sequential, 2 disks",
        2.0 * one_disk,
        seconds,
    ));
    Figure {
        stem,
        chart: LineChart {
            title: format!("gecko-gc: {title}, write-only, throughput per second"),
            x_label: "time (s)".into(),
            y_label: "throughput (MB/s)".into(),
            y_scale: YScale::Linear,
            series,
        },
    }
}

/// Slide 20: application and aggregate throughput under each collector (`moving` and the
/// configuration after it, compact-in-body on the same data).
fn collectors(runs: &[Run], moving: usize, stem: &'static str) -> Figure {
    let mut series = Vec::new();
    for (configuration, collector) in [(moving, "move-to-tail"), (moving + 1, "compact-in-body")] {
        for (name, metric) in [
            ("aggregate", aggregate as fn(&Interval) -> f64),
            ("application", app),
        ] {
            series.push(Series {
                name: format!("{collector}: {name}"),
                style: SeriesStyle::Line,
                points: per_second(runs, configuration, metric),
            });
        }
    }
    Figure {
        stem,
        chart: LineChart {
            title: format!(
                "gecko-gc: Gecko chain of 3 disks, {:.1} GiB of data, move-to-tail vs \
                 compact-in-body",
                gib(JOBS[moving].logical_pages)
            ),
            x_label: "time (s)".into(),
            y_label: "throughput (MB/s)".into(),
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
    fn quick_gecko_gc_writes_a_row_per_run_its_seconds_four_figures_and_judges_the_slides() {
        let context = Context::new(Options {
            quick: true,
            ..Options::default()
        })
        .unwrap();
        let outcome = gecko_gc(&context).unwrap();
        let Rows::GeckoGc { rows, seconds } = &outcome.rows else {
            panic!("gecko-gc writes its own rows")
        };
        assert_eq!(rows.len(), JOBS.len());
        assert_eq!(seconds.len(), JOBS.len() * QUICK_DURATION_S as usize);
        assert!(
            seconds
                .iter()
                .any(|s| s.collecting && s.layout == "log+raid0")
        );
        assert!(
            rows.iter().all(|r| r.first_gc_second.is_some()),
            "GC ran in every run"
        );
        for claim in [
            "aggregate throughput during GC",
            "falls by 10X",
            "compact-in-body",
        ] {
            let line = outcome
                .summary
                .lines()
                .find(|line| line.contains(claim))
                .unwrap_or_else(|| panic!("no row for {claim}:\n{}", outcome.summary));
            assert!(
                line.contains("agrees") || line.contains("differs: "),
                "{line}"
            );
        }
        assert_eq!(outcome.figures.len(), 4);
        let out = tempfile::tempdir().unwrap();
        let files = crate::write_outcome(&outcome, out.path()).unwrap();
        for file in [
            "results.csv",
            "gc_raid0.png",
            "gc_gecko.svg",
            "gc_collectors.png",
        ] {
            assert!(files.iter().any(|f| f == file), "{file} not in {files:?}");
        }
    }
}
