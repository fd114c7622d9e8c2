//! `spinwise sim`: one simulated run of a rack (issue 3's interface), with the layout planned on
//! the spot or read from a file.

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use crate::source::RackSource;
use clap::{Args, ValueEnum};
use serde_json::json;
use spinwise_model::Layout;
use spinwise_sim::{PolicyKind, SimConfig, simulate};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct SimArgs {
    #[command(flatten)]
    pub source: RackSource,
    /// A layout written by `spinwise plan --out` (default: plan the rack now).
    #[arg(long, value_name = "LAYOUT.json")]
    pub layout: Option<PathBuf>,
    /// Scheduling policy: Pelican's class scheduler; `flamingo` — per-group queues, as many
    /// groups spinning as the hard budgets allow (Flamingo §3.2); `fp` — the same disks fully
    /// provisioned, every group always spinning with its own FIFO queue (Pelican §4.1); `random`
    /// — the random straw-man layout (Pelican §2.2), each blob on k + r random disks that can
    /// all spin at once, served FIFO.
    #[arg(long, value_enum, default_value_t = Policy::Pelican)]
    pub policy: Policy,
    /// Mean client reads per second (Poisson arrivals, uniform over groups).
    #[arg(long)]
    pub rate: f64,
    /// Simulated hours, warm-up included.
    #[arg(long, default_value_t = 24.0)]
    pub hours: f64,
    /// Leading hours excluded from every metric.
    #[arg(long, default_value_t = 1.0)]
    pub warmup_hours: f64,
    /// Seed of every random choice: the same seed gives the same run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Network link shared by all reads, in Gbps, or `unbounded`.
    #[arg(long, default_value = "40")]
    pub network_gbps: String,
    /// Bytes per request (one blob).
    #[arg(long, default_value_t = 1_000_000_000)]
    pub blob_bytes: u64,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Policy {
    Pelican,
    Flamingo,
    Fp,
    Random,
}

pub fn run(args: &SimArgs) -> CliResult<()> {
    let policy = match args.policy {
        Policy::Pelican => PolicyKind::Pelican,
        Policy::Flamingo => PolicyKind::Flamingo,
        Policy::Fp => PolicyKind::FullyProvisioned,
        Policy::Random => PolicyKind::Random,
    };
    let network_gbps = match args.network_gbps.as_str() {
        "unbounded" => None,
        text => Some(text.parse::<f64>().map_err(|_| {
            CliError::Usage(format!(
                "--network-gbps: `{text}` is neither a number nor `unbounded`"
            ))
        })?),
    };
    let rack = args.source.load()?;
    let layout = match &args.layout {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(io_error(path))?;
            Layout::from_json(&path.display().to_string(), &text)?
        }
        None => {
            spinwise_plan::plan(&rack)
                .map_err(|source| CliError::Plan {
                    rack: rack.name.clone(),
                    source,
                })?
                .layout
        }
    };
    let config = SimConfig {
        rate_per_s: args.rate,
        hours: args.hours,
        warmup_hours: args.warmup_hours,
        seed: args.seed,
        blob_bytes: args.blob_bytes,
        network_gbps,
        policy,
    };
    let started = Instant::now();
    let report = simulate(&rack, &layout, &config).map_err(|source| CliError::Sim {
        rack: rack.name.clone(),
        source,
    })?;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    if args.json {
        let value = json!({
            "rack": report.rack,
            "policy": policy,
            "seed": report.seed,
            "rate_per_s": report.rate_per_s,
            "window_s": report.window_s,
            "requests": report.requests,
            "completed": report.completed,
            "rejected": report.rejected,
            "throughput_gbps": report.throughput_gbps,
            "ttfb_s": report.time_to_first_byte_s,
            "completion_s": report.completion_time_s,
            "service_s": report.service_time_s,
            "spin_up_s": report.spin_up_s,
            "spin_ups": report.spin_ups,
            "power_w": report.power_w,
            "max_active_disks": report.max_active_disks,
            "budget_violations": report.budget_violations,
            "events": report.events,
            "trace_hash": format!("{:016x}", report.trace_hash),
            "elapsed_ms": elapsed_ms,
        });
        outln!(
            "{}",
            serde_json::to_string_pretty(&value).expect("json values serialize")
        );
        return Ok(());
    }
    let network = network_gbps.map_or("unbounded".to_string(), |g| format!("{g} Gbps"));
    outln!(
        "rack          {} at {} req/s, {} h ({} h warm-up), network {network}, seed {}",
        report.rack,
        report.rate_per_s,
        args.hours,
        args.warmup_hours,
        report.seed
    );
    outln!(
        "requests      {} in the window: {} completed, {} rejected",
        report.requests,
        report.completed,
        report.rejected
    );
    outln!("throughput    {:.2} Gbps", report.throughput_gbps);
    for (name, summary) in [
        ("first byte", &report.time_to_first_byte_s),
        ("completion", &report.completion_time_s),
        ("service", &report.service_time_s),
    ] {
        outln!(
            "{name:<13} mean {:.2} s, p50 {:.2} s, p99 {:.2} s, max {:.2} s",
            summary.mean,
            summary.p50,
            summary.p99,
            summary.max
        );
    }
    outln!(
        "spin-ups      {} (mean {:.1} s each incl. mount)",
        report.spin_ups,
        report.spin_up_s.mean
    );
    outln!(
        "power         mean {:.0} W, peak {:.0} W; at most {} disks spinning",
        report.power_w.mean,
        report.power_w.peak,
        report.max_active_disks
    );
    outln!(
        "budgets       {} violations found by the independent checker",
        report.budget_violations
    );
    outln!(
        "simulated     {} events in {elapsed_ms:.0} ms (trace {:016x})",
        report.events,
        report.trace_hash
    );
    Ok(())
}
