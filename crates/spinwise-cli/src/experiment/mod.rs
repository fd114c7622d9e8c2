//! `spinwise experiment`: named reproductions of the papers' evaluations (issue 3, item 5). Each
//! experiment is a sweep of `spinwise_sim::simulate` configurations run on both cores, written
//! into one folder as `results.csv` (one row per run, every input and every metric), one PNG and
//! one SVG per figure and `summary.md` (our numbers beside the paper's, computed from the rows).
//!
//! Invariants:
//! - [`EXPERIMENTS`] is the one registry: `--list`, name lookup and the error for a bad name all
//!   read it. An experiment is a plain function from the run [`Context`] to an [`Outcome`]; the
//!   driver here does every file write, so experiments compute and never touch the disk.
//! - Results do not depend on thread scheduling: every run's seed derives from (base seed,
//!   configuration index, seed index) (`sweep::run_seed`), and rows come back in configuration
//!   order. Wall-clock time is printed, never written to `results.csv`.
//! - The output folder is created and probed for writing before any simulation starts, so an
//!   unwritable `--out` fails in milliseconds, not after the sweep.
//! - Which policies a sweep runs is a `&[PolicyKind]` constant per experiment; adding a policy to
//!   a sweep is a one-line change (labels come from the policy's serialized name).

mod bulk;
mod crossval;
mod expedited;
mod flamingo;
mod pelican;
mod plateau;
mod rebuild;
mod summary;
mod sweep;

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use crate::requests_csv::RequestRow;
use clap::Args;
use serde_json::json;
use spinwise_report::{LineChart, render_lines_png, render_lines_svg, write_csv};
use spinwise_sim::BlobSizes;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use sweep::Row;

#[derive(Args)]
pub struct ExperimentArgs {
    /// The experiment to run (see `--list`).
    #[arg(value_name = "NAME", required_unless_present = "list")]
    pub name: Option<String>,
    /// List the experiments (name and one-line description) and exit.
    #[arg(long, conflicts_with = "name")]
    pub list: bool,
    /// Folder for results.csv, the figures (PNG and SVG) and summary.md; created if missing.
    #[arg(long, value_name = "DIR", required_unless_present = "list")]
    pub out: Option<PathBuf>,
    /// Measured simulated hours per run, after the warm-up (default 24, the paper's; 0.5 with
    /// --quick).
    #[arg(long, value_name = "H")]
    pub hours: Option<f64>,
    /// Leading simulated hours excluded from every metric (default 1; 0.1 with --quick).
    #[arg(long, value_name = "H")]
    pub warmup_hours: Option<f64>,
    /// Runs per configuration with different seeds; figures show the mean with min–max bars.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub seeds: u32,
    /// Base seed; each run's seed derives from it and the configuration index.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A small version: fewer rates or configurations and short runs (for CI and a first look).
    #[arg(long)]
    pub quick: bool,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Bytes per request (one blob), or `vhd` for VHD-like sizes (200 MB–9 GB, mean 3.3 GB,
    /// Pelican §4.1). The summaries' paper values are for 1 GB blobs.
    #[arg(long, value_name = "BYTES|vhd", default_value = "1000000000")]
    pub blob_size: String,
    /// pelican-fig4 only: the store replays in real time sped up by 1/F (every latency and
    /// blob transfer × F; default 0.05). A larger F runs longer but shrinks the host's fixed
    /// per-request overheads (thread wake-ups, catalog lookups), which count 1/F times in the
    /// rack's seconds.
    #[arg(long, value_name = "F")]
    pub store_time_factor: Option<f64>,
    /// pelican-fig4 only: the network both systems send every read through, in Gbps split
    /// evenly over the rack's servers as `spinwise sim` does (default 8.5, the NIC of the
    /// paper's cross-validation harness), or `unbounded` (no NIC: the disks and the scheduler
    /// alone).
    #[arg(long, value_name = "G|unbounded")]
    pub network_gbps: Option<String>,
    /// pelican-fig4 only: the store's replays of each burst (default 1, at most 100), run i with
    /// its emulated disks drawing their latencies under seed i, as the simulator replays each
    /// burst under 40 seeds. With more than one, the summary and the figures give the store's
    /// median and range beside the simulator's. Each run takes as long as the first.
    #[arg(long, value_name = "N")]
    pub store_runs: Option<u32>,
    /// pelican-fig4 only: both systems stagger the switches of classes sharing the NIC from N
    /// queued reads (not in Pelican; `spinwise sim --stagger-switches`, docs/simulator.md
    /// "Staggered switches"): the simulator's rule against the store's driver.
    #[arg(long, value_name = "N")]
    pub stagger_switches: Option<u32>,
    /// pelican-fig4 only: the clocks the store replays each burst on: `both` (default), `real`
    /// (the wall clock, scaled real time) or `virtual` (discrete-event virtual time: the same
    /// store, deterministic, and not slowed by the host's load; today it takes longer than the
    /// real-time replay, about 3x on --quick: docs/experiments.md).
    #[arg(long, value_enum, value_name = "CLOCK")]
    pub store_clock: Option<StoreClock>,
    /// pelican-fig4 only: the burst sizes b to replay, comma-separated (default 15,60,240,960;
    /// with --quick 15,60; each 1 to 1920, the paper's range).
    #[arg(long, value_name = "B,B,..")]
    pub bursts: Option<String>,
    /// Print JSON: the list with --list, else a summary of the run.
    #[arg(long)]
    pub json: bool,
}

/// The clocks `pelican-fig4`'s store runs on (`--store-clock`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
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
        }
    }

    /// Writes results.csv into `out`, and any per-request tables; returns the file names.
    fn write_csv(&self, out: &Path) -> CliResult<Vec<String>> {
        let mut files = vec!["results.csv".to_string()];
        let results = out.join("results.csv");
        match self {
            Rows::Sim(rows) => write_csv(rows, &results)?,
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
    run: fn(&Context) -> CliResult<Outcome>,
}

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
];

pub fn run(args: &ExperimentArgs) -> CliResult<()> {
    if args.list {
        return list(args.json);
    }
    let (Some(name), Some(out)) = (&args.name, &args.out) else {
        return Err(CliError::Usage(
            "give an experiment NAME and --out DIR, or --list".into(),
        ));
    };
    let experiment = find(name)?;
    let cross_validation_only = [
        ("--store-time-factor", args.store_time_factor.is_some()),
        ("--network-gbps", args.network_gbps.is_some()),
        ("--store-runs", args.store_runs.is_some()),
        ("--stagger-switches", args.stagger_switches.is_some()),
        ("--store-clock", args.store_clock.is_some()),
        ("--bursts", args.bursts.is_some()),
    ];
    if let Some((flag, _)) = cross_validation_only.iter().find(|(_, given)| *given)
        && experiment.name != "pelican-fig4"
    {
        return Err(CliError::Usage(format!(
            "{flag} is for pelican-fig4 only; {} does not take it",
            experiment.name
        )));
    }
    let context = context(args)?;
    prepare_out(out)?;
    let started = Instant::now();
    let outcome = (experiment.run)(&context)?;
    let files = write_outcome(&outcome, out)?;
    let elapsed_s = started.elapsed().as_secs_f64();
    if args.json {
        let value = json!({
            "experiment": experiment.name,
            "out": out.display().to_string(),
            "runs": outcome.rows.len(),
            "files": files,
            "elapsed_s": elapsed_s,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&value).expect("json values serialize")
        );
    } else {
        outln!(
            "{}: {} runs in {elapsed_s:.1} s",
            experiment.name,
            outcome.rows.len()
        );
        outln!(
            "wrote {}/{{{}}}",
            out.display().to_string().trim_end_matches('/'),
            files.join(", ")
        );
    }
    Ok(())
}

fn list(json: bool) -> CliResult<()> {
    if json {
        let rows: Vec<_> = EXPERIMENTS
            .iter()
            .map(|e| json!({ "name": e.name, "description": e.description }))
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).expect("json values serialize")
        );
    } else {
        for experiment in EXPERIMENTS {
            outln!("{:<18} {}", experiment.name, experiment.description);
        }
    }
    Ok(())
}

fn find(name: &str) -> CliResult<&'static Experiment> {
    EXPERIMENTS.iter().find(|e| e.name == name).ok_or_else(|| {
        let known: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
        CliError::Usage(format!(
            "unknown experiment `{name}`; experiments: {} (see `spinwise experiment --list`)",
            known.join(", ")
        ))
    })
}

fn context(args: &ExperimentArgs) -> CliResult<Context> {
    let hours = args.hours.unwrap_or(if args.quick { 0.5 } else { 24.0 });
    let warmup_hours = args
        .warmup_hours
        .unwrap_or(if args.quick { 0.1 } else { 1.0 });
    if !(hours.is_finite() && hours > 0.0) {
        return Err(CliError::Usage(format!(
            "--hours must be a positive number, got {hours}"
        )));
    }
    if !(warmup_hours.is_finite() && warmup_hours >= 0.0) {
        return Err(CliError::Usage(format!(
            "--warmup-hours must be zero or a positive number, got {warmup_hours}"
        )));
    }
    if args.seeds == 0 {
        return Err(CliError::Usage("--seeds must be at least 1".into()));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .map_err(|e| CliError::Usage(format!("--jobs: {e}")))?;
    let (blob_sizes, blob_bytes) = crate::sim::blob_size(&args.blob_size)?;
    if let Some(factor) = args.store_time_factor
        && !(factor.is_finite() && factor > 0.0 && factor <= 1.0)
    {
        return Err(CliError::Usage(format!(
            "--store-time-factor must be a number in (0, 1], got {factor}"
        )));
    }
    let store_runs = args.store_runs.unwrap_or(1);
    if !(1..=MAX_STORE_RUNS).contains(&store_runs) {
        return Err(CliError::Usage(format!(
            "--store-runs must be 1 to {MAX_STORE_RUNS}, got {store_runs}"
        )));
    }
    let network_gbps = args
        .network_gbps
        .as_deref()
        .map(crate::sim::network_gbps)
        .transpose()?;
    Ok(Context {
        store_time_factor: args.store_time_factor,
        network_gbps,
        store_runs,
        stagger_switches: args.stagger_switches,
        store_clock: args.store_clock.unwrap_or_default(),
        bursts: args.bursts.as_deref().map(parse_bursts).transpose()?,
        blob_sizes,
        blob_bytes,
        hours,
        warmup_hours,
        seeds: args.seeds,
        base_seed: args.seed,
        quick: args.quick,
        pool,
    })
}

/// Creates `out` and checks a file can be written there, before any simulation runs.
fn prepare_out(out: &Path) -> CliResult<()> {
    std::fs::create_dir_all(out).map_err(io_error(out))?;
    let probe = out.join(".spinwise-write-probe");
    std::fs::write(&probe, b"").map_err(io_error(out))?;
    std::fs::remove_file(&probe).map_err(io_error(&probe))
}

/// Writes results.csv (and a cross-validation's per-request tables), every figure as PNG and
/// SVG, and summary.md; returns the file names.
fn write_outcome(outcome: &Outcome, out: &Path) -> CliResult<Vec<String>> {
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

/// The paper's largest burst (Pelican §4.4: b from 15 to 1,920).
const MAX_BURST_REQUESTS: u64 = 1920;

/// `--bursts`: burst sizes, comma-separated, each 1 to [`MAX_BURST_REQUESTS`].
fn parse_bursts(text: &str) -> CliResult<Vec<u64>> {
    let mut bursts: Vec<u64> = text
        .split(',')
        .map(|part| match part.trim().parse::<u64>() {
            Ok(b) if (1..=MAX_BURST_REQUESTS).contains(&b) => Ok(b),
            _ => Err(CliError::Usage(format!(
                "--bursts takes burst sizes 1 to {MAX_BURST_REQUESTS}, comma-separated; got `{part}`"
            ))),
        })
        .collect::<CliResult<_>>()?;
    // The figures and the summary walk the bursts in order, each once.
    bursts.sort_unstable();
    bursts.dedup();
    Ok(bursts)
}
