//! `spinwise experiment`: the flags, the output, and nothing else. The experiments themselves
//! (sweeps, the cross-validation, verdicts, figures) are the `spinwise-experiment` library;
//! this module parses the flags into its `Options`, runs the named experiment, has the library
//! write the folder, and prints what was written.
//!
//! Invariant: the output folder is created and probed for writing before any simulation starts,
//! so an unwritable `--out` fails in milliseconds, not after the sweep.

use crate::error::{CliError, CliResult};
use crate::output::outln;
use clap::Args;
use serde_json::json;
use spinwise_experiment::{
    Context, EXPERIMENTS, Experiment, MAX_BURST_REQUESTS, Options, StoreClock, prepare_out,
    write_outcome,
};
use std::path::PathBuf;
use std::time::Instant;

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
    /// --quick). Refused by sp-gc and the gecko-* experiments, which set their own lengths.
    #[arg(long, value_name = "H")]
    pub hours: Option<f64>,
    /// Leading simulated hours excluded from every metric (default 1; 0.1 with --quick).
    /// Refused where --hours is.
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
    pub store_clock: Option<StoreClockArg>,
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
pub enum StoreClockArg {
    /// The wall clock, then virtual time.
    #[default]
    Both,
    /// The wall clock only.
    Real,
    /// Virtual time only.
    Virtual,
}

impl From<StoreClockArg> for StoreClock {
    fn from(clock: StoreClockArg) -> StoreClock {
        match clock {
            StoreClockArg::Both => StoreClock::Both,
            StoreClockArg::Real => StoreClock::Real,
            StoreClockArg::Virtual => StoreClock::Virtual,
        }
    }
}

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
    let by_time = [
        ("--hours", args.hours.is_some()),
        ("--warmup-hours", args.warmup_hours.is_some()),
    ];
    if let Some((flag, _)) = by_time.iter().find(|(_, given)| *given)
        && let Some(length) = fixed_length(experiment.name)
    {
        return Err(CliError::Usage(format!(
            "{flag} does not apply to {}: {length} (--quick for shorter)",
            experiment.name
        )));
    }
    let context = Context::new(options(args)?)?;
    prepare_out(out)?;
    let started = Instant::now();
    let outcome = experiment.run(&context)?;
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
    spinwise_experiment::find(name).ok_or_else(|| {
        let known: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
        CliError::Usage(format!(
            "unknown experiment `{name}`; experiments: {} (see `spinwise experiment --list`)",
            known.join(", ")
        ))
    })
}

/// The flags as the library's [`Options`]; ranges are checked by [`Context::new`].
/// How an experiment that is not measured in simulated hours sets its length, if it is one.
fn fixed_length(name: &str) -> Option<&'static str> {
    match name {
        "sp-gc" => Some("each run measures a number of requests"),
        "gecko-gc" | "gecko-chain" => Some("each run covers a fixed number of simulated seconds"),
        "gecko-tail-cache" => Some("each run measures a number of cache operations"),
        _ => None,
    }
}

fn options(args: &ExperimentArgs) -> CliResult<Options> {
    let (blob_sizes, blob_bytes) = crate::sim::blob_size(&args.blob_size)?;
    let network_gbps = args
        .network_gbps
        .as_deref()
        .map(crate::sim::network_gbps)
        .transpose()?;
    Ok(Options {
        hours: args.hours,
        warmup_hours: args.warmup_hours,
        seeds: args.seeds,
        base_seed: args.seed,
        quick: args.quick,
        jobs: args.jobs,
        blob_sizes,
        blob_bytes,
        store_time_factor: args.store_time_factor,
        network_gbps,
        store_runs: args.store_runs,
        stagger_switches: args.stagger_switches,
        store_clock: args.store_clock.unwrap_or_default().into(),
        bursts: args.bursts.as_deref().map(parse_bursts).transpose()?,
    })
}

/// `--bursts`: burst sizes, comma-separated, each 1 to [`MAX_BURST_REQUESTS`].
fn parse_bursts(text: &str) -> CliResult<Vec<u64>> {
    text.split(',')
        .map(|part| match part.trim().parse::<u64>() {
            Ok(b) if (1..=MAX_BURST_REQUESTS).contains(&b) => Ok(b),
            _ => Err(CliError::Usage(format!(
                "--bursts takes burst sizes 1 to {MAX_BURST_REQUESTS}, comma-separated; got `{part}`"
            ))),
        })
        .collect()
}
