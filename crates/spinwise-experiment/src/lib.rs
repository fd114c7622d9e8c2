//! spinwise-experiment: named reproductions of the papers' evaluations (issue 3, item 5; moved
//! out of the CLI by issue 32). Each experiment is a sweep of `spinwise_sim::simulate`
//! configurations run on the caller's thread pool (or, for `pelican-fig4`, the simulator
//! cross-validated against the real store), producing an [`Outcome`]: the rows of
//! `results.csv` (one per run, every input and every metric), figures, and `summary.md` (our
//! numbers beside the paper's, each row judged by `summary`'s verdict model). The `spinwise
//! experiment` command parses its flags into [`Options`], calls [`Experiment::run`] and
//! [`write_outcome`], and prints.
//!
//! Invariants:
//! - [`EXPERIMENTS`] is the one registry: `--list`, name lookup and the error for a bad name all
//!   read it. An experiment is a plain function from the run [`Context`] to an [`Outcome`];
//!   [`write_outcome`] does every file write, so experiments compute and never touch the disk
//!   (the cross-validation's store lives in a temporary directory of its own).
//! - Results do not depend on thread scheduling: every run's seed derives from (base seed,
//!   configuration index, seed index) (`sweep::run_seed`), and rows come back in configuration
//!   order. Wall-clock time is never written to `results.csv`.
//! - A [`Context`] is only built by [`Context::new`], which refuses settings out of range, so an
//!   experiment never sees a negative duration or zero seeds.
//! - Which policies a sweep runs is a `&[PolicyKind]` constant per experiment; adding a policy to
//!   a sweep is a one-line change (labels come from the policy's serialized name).

// An ExperimentError can carry a RackError by value; it is built at most once per run, so its
// size costs nothing worth boxing it for (the CLI and spinwise-model say the same).
#![allow(clippy::result_large_err)]

mod bulk;
mod crossval;
mod expedited;
mod flamingo;
mod gecko_chain;
mod gecko_gc;
mod gecko_tail_cache;
mod pelican;
mod plateau;
mod rebuild;
mod sp_gc;
mod summary;
mod sweep;

pub mod error;
pub mod replay;
pub mod requests_csv;
pub mod switch_latency;
pub mod virtual_time;

pub use error::{ExperimentError, ExperimentResult};
pub use sweep::Row;

use crate::error::io_error;
use crate::requests_csv::RequestRow;
use spinwise_model::{Layout, Rack};
use spinwise_report::{LineChart, render_lines_png, render_lines_svg, write_csv};
use spinwise_sim::BlobSizes;
use std::path::Path;

/// The clocks `pelican-fig4`'s store runs on (`--store-clock`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StoreClock {
    /// The wall clock, then virtual time.
    #[default]
    Both,
    /// The wall clock only.
    Real,
    /// Virtual time only.
    Virtual,
}

/// What an experiment is asked to do.
pub struct Context {
    /// Measured hours per run (the window after the warm-up).
    pub hours: f64,
    pub warmup_hours: f64,
    pub seeds: u32,
    pub base_seed: u64,
    pub quick: bool,
    pub blob_sizes: BlobSizes,
    /// Bytes per request when `blob_sizes` is fixed.
    pub blob_bytes: u64,
    /// The cross-validation store's time factor, when given (`--store-time-factor`).
    pub store_time_factor: Option<f64>,
    /// The cross-validation's network, when given (`--network-gbps`; `Some(None)`: unbounded).
    pub network_gbps: Option<Option<f64>>,
    /// The cross-validation's store replays per burst (`--store-runs`; at least 1).
    pub store_runs: u32,
    /// The cross-validation's staggered switches (`--stagger-switches`), checked against the
    /// layout by the experiment.
    pub stagger_switches: Option<u32>,
    /// The cross-validation store's clocks (`--store-clock`).
    pub store_clock: StoreClock,
    /// The cross-validation's burst sizes (`--bursts`), when given.
    pub bursts: Option<Vec<u64>>,
    pool: rayon::ThreadPool,
}

/// One figure, written as `STEM.png` and `STEM.svg`.
pub struct Figure {
    pub stem: &'static str,
    pub chart: LineChart,
}

/// The rows of `results.csv`: a sweep's simulations, or a cross-validation's replays with each
/// burst's per-request rows (`requests-b{b}.csv`).
pub enum Rows {
    Sim(Vec<Row>),
    CrossValidation {
        rows: Vec<crossval::Row>,
        requests: Vec<(u64, Vec<RequestRow>)>,
    },
    /// Garbage-collection runs on the flash model (`sp-gc`).
    Gc(Vec<sp_gc::GcRow>),
    /// Gecko's GC runs (`gecko-gc`), and each run's seconds (`seconds.csv`).
    GeckoGc {
        rows: Vec<gecko_gc::GeckoGcRow>,
        seconds: Vec<gecko_gc::GeckoGcSecond>,
    },
    /// Chain-length runs (`gecko-chain`).
    GeckoChain(Vec<gecko_chain::GeckoChainRow>),
    /// Tail-cache runs (`gecko-tail-cache`).
    GeckoTailCache(Vec<gecko_tail_cache::TailCacheRow>),
}

impl From<Vec<Row>> for Rows {
    fn from(rows: Vec<Row>) -> Rows {
        Rows::Sim(rows)
    }
}

impl Rows {
    pub fn len(&self) -> usize {
        match self {
            Rows::Sim(rows) => rows.len(),
            Rows::CrossValidation { rows, .. } => rows.len(),
            Rows::Gc(rows) => rows.len(),
            Rows::GeckoGc { rows, .. } => rows.len(),
            Rows::GeckoChain(rows) => rows.len(),
            Rows::GeckoTailCache(rows) => rows.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes results.csv into `out`, and any per-request tables; returns the file names.
    fn write_csv(&self, out: &Path) -> ExperimentResult<Vec<String>> {
        let mut files = vec!["results.csv".to_string()];
        let results = out.join("results.csv");
        match self {
            Rows::Sim(rows) => write_csv(rows, &results)?,
            Rows::Gc(rows) => write_csv(rows, &results)?,
            Rows::GeckoGc { rows, seconds } => {
                write_csv(rows, &results)?;
                write_csv(seconds, &out.join("seconds.csv"))?;
                files.push("seconds.csv".into());
            }
            Rows::GeckoChain(rows) => write_csv(rows, &results)?,
            Rows::GeckoTailCache(rows) => write_csv(rows, &results)?,
            Rows::CrossValidation { rows, requests } => {
                write_csv(rows, &results)?;
                for (burst, reads) in requests.iter().filter(|(_, reads)| !reads.is_empty()) {
                    let name = format!("requests-b{burst}.csv");
                    write_csv(reads, &out.join(&name))?;
                    files.push(name);
                }
            }
        }
        Ok(files)
    }
}

/// Everything an experiment produced; the driver writes it.
pub struct Outcome {
    pub rows: Rows,
    pub figures: Vec<Figure>,
    /// The body of summary.md (markdown).
    pub summary: String,
}

/// One registered experiment.
pub struct Experiment {
    pub name: &'static str,
    pub description: &'static str,
    run: fn(&Context) -> ExperimentResult<Outcome>,
}

/// The most seeds an experiment runs per configuration: every seed is a run of every
/// configuration (the 110 of `pelican-fig5` at 1,000 seeds is 110,000 runs), and its results
/// are held for the summary; `--seeds 4294967295` tried to allocate a terabyte and aborted
/// (found 2026-12-01).
pub const MAX_SEEDS: u32 = 1_000;
/// The most worker threads `--jobs` may ask for: the runs are CPU-bound, so threads beyond the
/// cores only add switching; `--jobs 100000` started thousands of threads and flooded the
/// machine (found 2026-12-01).
pub const MAX_JOBS: usize = 256;

/// The most store replays per burst `--store-runs` takes (each is minutes at the default scale).
pub const MAX_STORE_RUNS: u32 = 100;

/// Every experiment, in the order `--list` prints them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "pelican-fig4",
        description: "Pelican Fig. 4: the simulator cross-validated against the store, bursts of 15 to 960 reads of 1 GB replayed by both on the pelican-prototype rack through an 8.5 Gbps NIC (the store in scaled real time): throughput, completion, service time and time to first byte",
        run: crossval::fig4,
    },
    Experiment {
        name: "pelican-fig5",
        description: "Pelican Fig. 5(a-c): throughput, service time and time to first byte vs request rate, Pelican, FP and random at 40 Gbps and unbounded",
        run: pelican::fig5,
    },
    Experiment {
        name: "pelican-fig6",
        description: "Pelican Fig. 6: reject rate vs request rate (the same runs as pelican-fig5)",
        run: pelican::fig6,
    },
    Experiment {
        name: "pelican-fig7",
        description: "Pelican Fig. 7: rebuild time of a failed 4.28 TB disk and client time to first byte vs request rate, 40 Gbps",
        run: rebuild::fig7,
    },
    Experiment {
        name: "pelican-fig8",
        description: "Pelican Fig. 8: reordering bound u from 50 to 1,000 GB at 5 req/s, 40 Gbps: throughput, p99 time to first byte, reject rate",
        run: pelican::fig8,
    },
    Experiment {
        name: "pelican-fig9",
        description: "Pelican Fig. 9(a, b): spin-ups and TB transferred per disk per year, mean and peak power vs request rate",
        run: pelican::fig9,
    },
    Experiment {
        name: "pelican-plateau",
        description: "What Pelican's 40 Gbps plateau needs: throughput and rejects at 4, 5 and 8 req/s with the group-switch latencies scaled down, and without the high-load mount stragglers",
        run: plateau::plateau,
    },
    Experiment {
        name: "bulk-restores",
        description: "S3's Bulk restore tier on the pelican rack at 40 Gbps: spin-ups, power and time to first byte vs the share of reads that may wait for a spin-up, for waits of 1 and 4 h at 0.125, 0.5 and 2 req/s",
        run: bulk::bulk_restores,
    },
    Experiment {
        name: "expedited-restores",
        description: "S3's Expedited restore tier on the pelican rack at 40 Gbps: Expedited vs standard reads' time to first byte, spin-ups and throughput vs the share of reads submitted as Expedited, Pelican and Flamingo at 0.25, 1 and 2 req/s",
        run: expedited::expedited_restores,
    },
    Experiment {
        name: "flamingo-fig5a",
        description: "Flamingo Fig. 5(a): the synthesized layout of the pelican rack vs Pelican's hand-designed one, throughput and time to first byte vs rate",
        run: flamingo::fig5a,
    },
    Experiment {
        name: "flamingo-fig6ab",
        description: "Flamingo Fig. 6(a, b): time to first byte vs provisioning over explored configurations of pelican and ocp-cold-storage, at 4 and 0.0625 req/s",
        run: flamingo::fig6ab,
    },
    Experiment {
        name: "flamingo-fig6c",
        description: "Flamingo Fig. 6(c): conservative (Pelican) vs Flamingo scheduler on ocp-cold-storage, throughput and time to first byte vs rate",
        run: flamingo::fig6c,
    },
    Experiment {
        name: "sp-gc",
        description: "Semi-preemptive GC (Lee et al.): non-preemptive vs semi-preemptive garbage collection on a flash model under the slides' four trace shapes at 0.5, 1 and 2 times their rates: mean and variance of response time, with ablations at each trace's rate (the slides' merge and pipeline, bursty arrivals at two burst factors) shown beside the judged rows (each run measures 200,000 requests, 20,000 with --quick; --hours and --blob-size do not apply)",
        run: sp_gc::sp_gc,
    },
    Experiment {
        name: "gecko-gc",
        description: "Gecko (Shin et al.) slides 6, 19, 20: a write-only workload with GC running on 2 disks, log over RAID-0 vs Gecko's chain, application and aggregate throughput per second (120 simulated s, 30 with --quick), and move-to-tail vs compact-in-body on a 3-disk chain (--hours and --blob-size do not apply)",
        run: gecko_gc::gecko_gc,
    },
    Experiment {
        name: "gecko-chain",
        description: "Gecko (Shin et al.) slide 23: read and write throughput against chain length (1 to 5 disks, 1 to 3 with --quick), Gecko's chain with its tail cache vs a log over RAID-0, skewed readers and a writer (--hours and --blob-size do not apply)",
        run: gecko_chain::gecko_chain,
    },
    Experiment {
        name: "gecko-tail-cache",
        description: "Gecko (Shin et al.) slide 24: the tail cache's read hit rate (2 GB RAM + 32 GB flash, scaled) for 21 synthetic mixes of 4 to 8 streams against the amount of data on the tail disk and against the flash size (5 mixes with --quick; --hours and --blob-size do not apply)",
        run: gecko_tail_cache::gecko_tail_cache,
    },
];

impl Experiment {
    /// Runs the experiment: every simulation (and store replay) it needs, nothing written.
    pub fn run(&self, context: &Context) -> ExperimentResult<Outcome> {
        (self.run)(context)
    }
}

/// The experiment named `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Experiment> {
    EXPERIMENTS.iter().find(|e| e.name == name)
}

/// The paper's largest burst (Pelican §4.4: b from 15 to 1,920).
pub const MAX_BURST_REQUESTS: u64 = 1920;

/// What a caller asks of a run; [`Context::new`] checks it and fills in the defaults.
#[derive(Clone, Debug)]
pub struct Options {
    /// Measured simulated hours per run, after the warm-up (default 24, the paper's; 0.5 with
    /// `quick`).
    pub hours: Option<f64>,
    /// Leading simulated hours excluded from every metric (default 1; 0.1 with `quick`).
    pub warmup_hours: Option<f64>,
    /// Runs per configuration with different seeds (at least 1).
    pub seeds: u32,
    pub base_seed: u64,
    /// Fewer rates or configurations and short runs.
    pub quick: bool,
    /// Worker threads (`None`: one per core).
    pub jobs: Option<usize>,
    pub blob_sizes: BlobSizes,
    /// Bytes per request when `blob_sizes` is fixed.
    pub blob_bytes: u64,
    /// pelican-fig4: the store's time factor, in (0, 1].
    pub store_time_factor: Option<f64>,
    /// pelican-fig4: the network (`Some(None)`: unbounded).
    pub network_gbps: Option<Option<f64>>,
    /// pelican-fig4: the store's replays per burst, 1 to [`MAX_STORE_RUNS`] (default 1).
    pub store_runs: Option<u32>,
    /// pelican-fig4: staggered switches from this many queued reads.
    pub stagger_switches: Option<u32>,
    /// pelican-fig4: the clocks the store replays on.
    pub store_clock: StoreClock,
    /// pelican-fig4: burst sizes, each 1 to [`MAX_BURST_REQUESTS`].
    pub bursts: Option<Vec<u64>>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            hours: None,
            warmup_hours: None,
            seeds: 1,
            base_seed: 1,
            quick: false,
            jobs: None,
            blob_sizes: BlobSizes::Fixed,
            blob_bytes: spinwise_sim::DEFAULT_BLOB_BYTES,
            store_time_factor: None,
            network_gbps: None,
            store_runs: None,
            stagger_switches: None,
            store_clock: StoreClock::default(),
            bursts: None,
        }
    }
}

impl Context {
    /// Checks `options` (each refusal names the `spinwise experiment` flag that sets it) and
    /// starts the worker pool.
    pub fn new(options: Options) -> ExperimentResult<Context> {
        let invalid = |message: String| Err(ExperimentError::Invalid(message));
        let quick = options.quick;
        let hours = options.hours.unwrap_or(if quick { 0.5 } else { 24.0 });
        let warmup_hours = options
            .warmup_hours
            .unwrap_or(if quick { 0.1 } else { 1.0 });
        if !(hours.is_finite() && hours > 0.0) {
            return invalid(format!("--hours must be a positive number, got {hours}"));
        }
        if !(warmup_hours.is_finite() && warmup_hours >= 0.0) {
            return invalid(format!(
                "--warmup-hours must be zero or a positive number, got {warmup_hours}"
            ));
        }
        if !(1..=MAX_SEEDS).contains(&options.seeds) {
            return invalid(format!(
                "--seeds must be 1 to {MAX_SEEDS}, got {}",
                options.seeds
            ));
        }
        if let Some(jobs) = options.jobs
            && jobs > MAX_JOBS
        {
            return invalid(format!(
                "--jobs must be at most {MAX_JOBS} (0 or absent: one per core), got {jobs}"
            ));
        }
        if let Some(factor) = options.store_time_factor
            && !(factor.is_finite() && factor > 0.0 && factor <= 1.0)
        {
            return invalid(format!(
                "--store-time-factor must be a number in (0, 1], got {factor}"
            ));
        }
        let store_runs = options.store_runs.unwrap_or(1);
        if !(1..=MAX_STORE_RUNS).contains(&store_runs) {
            return invalid(format!(
                "--store-runs must be 1 to {MAX_STORE_RUNS}, got {store_runs}"
            ));
        }
        let bursts = options.bursts.map(bursts_in_order).transpose()?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(options.jobs.unwrap_or(0))
            .build()
            .map_err(|e| ExperimentError::Invalid(format!("--jobs: {e}")))?;
        Ok(Context {
            hours,
            warmup_hours,
            seeds: options.seeds,
            base_seed: options.base_seed,
            quick,
            blob_sizes: options.blob_sizes,
            blob_bytes: options.blob_bytes,
            store_time_factor: options.store_time_factor,
            network_gbps: options.network_gbps,
            store_runs,
            stagger_switches: options.stagger_switches,
            store_clock: options.store_clock,
            bursts,
            pool,
        })
    }
}

/// Burst sizes checked against [`MAX_BURST_REQUESTS`], sorted and each once: the figures and
/// the summary walk the bursts in order.
fn bursts_in_order(mut bursts: Vec<u64>) -> ExperimentResult<Vec<u64>> {
    if let Some(burst) = bursts
        .iter()
        .find(|b| !(1..=MAX_BURST_REQUESTS).contains(*b))
    {
        return Err(ExperimentError::Invalid(format!(
            "--bursts takes burst sizes 1 to {MAX_BURST_REQUESTS}, comma-separated; got `{burst}`"
        )));
    }
    if bursts.is_empty() {
        return Err(ExperimentError::Invalid(
            "--bursts needs at least one burst size".into(),
        ));
    }
    bursts.sort_unstable();
    bursts.dedup();
    Ok(bursts)
}

/// The planner's layout for `rack` (the planner verifies its own layouts).
pub fn plan_layout(rack: &Rack) -> ExperimentResult<Layout> {
    spinwise_plan::plan(rack)
        .map(|plan| plan.layout)
        .map_err(|source| ExperimentError::Plan {
            rack: rack.name.clone(),
            source,
        })
}

/// Staggers the switches of classes sharing a NIC from `depth` queued reads (not in Pelican;
/// docs/simulator.md, "Staggered switches"): 1 to the layout's queue depth.
pub fn stagger_switches(layout: &mut Layout, depth: u32) -> ExperimentResult<()> {
    let max_depth = layout.scheduler.max_queue_depth;
    if !(1..=max_depth).contains(&depth) {
        return Err(ExperimentError::Invalid(format!(
            "--stagger-switches: {depth} is not 1 to the queue depth ({max_depth} requests)"
        )));
    }
    layout.scheduler.stagger_switches_min_queue = Some(depth);
    Ok(())
}

/// Creates `out` and checks a file can be written there, before any simulation runs.
pub fn prepare_out(out: &Path) -> ExperimentResult<()> {
    std::fs::create_dir_all(out).map_err(io_error(out))?;
    let probe = out.join(".spinwise-write-probe");
    std::fs::write(&probe, b"").map_err(io_error(out))?;
    std::fs::remove_file(&probe).map_err(io_error(&probe))
}

/// Writes results.csv (and a cross-validation's per-request tables), every figure as PNG and
/// SVG, and summary.md; returns the file names.
pub fn write_outcome(outcome: &Outcome, out: &Path) -> ExperimentResult<Vec<String>> {
    let mut files = outcome.rows.write_csv(out)?;
    for figure in &outcome.figures {
        for (extension, render) in [
            ("png", render_lines_png as fn(&LineChart, &Path) -> _),
            ("svg", render_lines_svg),
        ] {
            let name = format!("{}.{extension}", figure.stem);
            render(&figure.chart, &out.join(&name))?;
            files.push(name);
        }
    }
    let summary_path = out.join("summary.md");
    std::fs::write(&summary_path, &outcome.summary).map_err(io_error(&summary_path))?;
    files.push("summary.md".into());
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(options: Options) -> String {
        match Context::new(options) {
            Ok(_) => panic!("the options were accepted"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn a_context_fills_in_the_papers_durations_and_the_quick_ones() {
        let context = Context::new(Options::default()).unwrap();
        assert_eq!((context.hours, context.warmup_hours), (24.0, 1.0));
        assert_eq!(context.store_runs, 1);
        let quick = Context::new(Options {
            quick: true,
            ..Options::default()
        })
        .unwrap();
        assert_eq!((quick.hours, quick.warmup_hours), (0.5, 0.1));
    }

    #[test]
    fn a_context_refuses_settings_out_of_range_naming_the_flag() {
        let cases = [
            (
                Options {
                    hours: Some(-1.0),
                    ..Options::default()
                },
                "--hours",
            ),
            (
                Options {
                    warmup_hours: Some(f64::NAN),
                    ..Options::default()
                },
                "--warmup-hours",
            ),
            (
                Options {
                    seeds: 0,
                    ..Options::default()
                },
                "--seeds",
            ),
            (
                Options {
                    store_time_factor: Some(1.5),
                    ..Options::default()
                },
                "--store-time-factor",
            ),
            (
                Options {
                    store_runs: Some(MAX_STORE_RUNS + 1),
                    ..Options::default()
                },
                "--store-runs",
            ),
            (
                Options {
                    bursts: Some(vec![15, MAX_BURST_REQUESTS + 1]),
                    ..Options::default()
                },
                "--bursts",
            ),
            (
                Options {
                    bursts: Some(Vec::new()),
                    ..Options::default()
                },
                "--bursts",
            ),
        ];
        for (options, flag) in cases {
            let message = refusal(options);
            assert!(message.starts_with(flag), "{flag}: {message}");
        }
    }

    #[test]
    fn bursts_are_walked_in_order_each_once() {
        let context = Context::new(Options {
            bursts: Some(vec![960, 15, 60, 15]),
            ..Options::default()
        })
        .unwrap();
        assert_eq!(context.bursts, Some(vec![15, 60, 960]));
    }

    #[test]
    fn every_registered_experiment_is_found_by_its_name_and_names_are_unique() {
        for experiment in EXPERIMENTS {
            let found = find(experiment.name).expect("registered");
            assert_eq!(found.description, experiment.description);
            let same_name = EXPERIMENTS.iter().filter(|e| e.name == experiment.name);
            assert_eq!(same_name.count(), 1, "{}", experiment.name);
        }
        assert!(find("no-such-experiment").is_none());
    }
}
