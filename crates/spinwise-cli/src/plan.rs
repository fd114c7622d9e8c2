//! `spinwise plan` and `spinwise verify`.

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use crate::source::{RackSource, read_layout};
use clap::{Args, ValueEnum};
use serde_json::json;
use spinwise_model::Rack;
use spinwise_plan::{Plan, Violation, pelican_layout, plan, verify};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub source: RackSource,
    /// Write the layout (disk → group, erasure parameters, group constraints) to this file.
    #[arg(long, value_name = "LAYOUT.json")]
    pub out: Option<PathBuf>,
    /// Print one JSON object instead of a summary.
    #[arg(long)]
    pub json: bool,
    /// Which layout: synthesized by the planner, or Pelican's hand-designed one (Pelican geometry only).
    #[arg(long, value_enum, default_value_t = LayoutKind::Synthesized)]
    pub layout: LayoutKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LayoutKind {
    Synthesized,
    PelicanManual,
}

pub fn run(args: &PlanArgs) -> CliResult<()> {
    let rack = args.source.load()?;
    let started = Instant::now();
    let planned = match args.layout {
        LayoutKind::Synthesized => plan(&rack),
        LayoutKind::PelicanManual => pelican_layout(&rack),
    }
    .map_err(|source| CliError::Plan {
        rack: rack.name.clone(),
        source,
    })?;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    if let Some(path) = &args.out {
        std::fs::write(path, planned.layout.to_json() + "\n").map_err(io_error(path))?;
    }
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&summary_json(&rack, &planned, elapsed_ms))
                .expect("json values serialize")
        );
    } else {
        print_summary(&rack, &planned, elapsed_ms, args.out.as_ref());
    }
    Ok(())
}

fn summary_json(rack: &Rack, planned: &Plan, elapsed_ms: f64) -> serde_json::Value {
    let layout = &planned.layout;
    json!({
        "rack": rack.name,
        "disks": layout.disks,
        "group_size": layout.group_size,
        "groups": layout.groups.len(),
        "k": layout.erasure.k,
        "r": layout.erasure.r,
        "f": layout.erasure.f,
        "max_active_groups": layout.max_active_groups,
        "max_active_groups_bound": layout.max_active_groups_bound,
        "max_spinning_groups": layout.max_spinning_groups,
        "high_load_bound": layout.high_load_bound,
        "high_load_search": {
            "method": planned.high_load.method,
            "nodes": planned.high_load.nodes,
            "exact": planned.high_load.exact,
            "limit_hit": planned.high_load.limit_hit,
        },
        "max_disks_at_highest": layout.max_disks_at_highest,
        "bottleneck": layout.bottleneck,
        "resources": planned.analysis.resources,
        "capacity_overhead": layout.erasure.capacity_overhead(),
        "lifetime_loss_probability": planned.erasure.lifetime_loss_probability,
        "efficient": layout.efficient,
        "symmetric": layout.symmetric,
        "verified": layout.verified,
        "solver": layout.solver,
        "group_constraints": layout.group_constraints.len(),
        "scheduler": {
            "reordering_bound_gb": layout.scheduler.reordering_bound_gb,
            "rebuild_share": layout.scheduler.rebuild_share,
            "max_queue_depth": layout.scheduler.max_queue_depth,
            "concurrent_requests_per_class": layout.scheduler.concurrent_requests_per_class,
            "stagger_switches_min_queue": layout.scheduler.stagger_switches_min_queue,
        },
        "elapsed_ms": elapsed_ms,
    })
}

fn print_summary(rack: &Rack, planned: &Plan, elapsed_ms: f64, out: Option<&PathBuf>) {
    let layout = &planned.layout;
    let per_resource: Vec<String> = planned
        .analysis
        .resources
        .iter()
        .map(|r| format!("{} {}", r.name, r.disks_at_highest))
        .collect();
    let verdict = |flag: bool, yes: &str, no: &str| {
        if flag {
            yes.to_string()
        } else {
            no.to_string()
        }
    };
    outln!("rack         {} ({} disks)", rack.name, layout.disks);
    outln!(
        "bottleneck   {}: M = {} disks may be in their costliest state ({})",
        layout.bottleneck.join(" + "),
        layout.max_disks_at_highest,
        per_resource.join(", ")
    );
    // The high-load figure is exact unless the search's node limit stopped it; then it is only a
    // lower bound, and the line says so (issue 29).
    let search = &planned.high_load;
    let spinning = if search.exact {
        format!(
            "{} spinning with one spinning up (high-load bound {}, exact: {}, {} nodes)",
            layout.max_spinning_groups,
            layout.high_load_bound,
            search.method.name(),
            search.nodes
        )
    } else {
        format!(
            "at least {} spinning with one spinning up (high-load bound {}: {} stopped at its limit of {} nodes)",
            layout.max_spinning_groups,
            layout.high_load_bound,
            search.method.name(),
            search.nodes
        )
    };
    outln!(
        "groups       {} groups of {} disks; {} can spin up together (bound {}); {spinning}",
        layout.groups.len(),
        layout.group_size,
        layout.max_active_groups,
        layout.max_active_groups_bound,
    );
    outln!(
        "erasure      k = {}, r = {}, f = {}: capacity overhead {:.1}%, blob loss over {} years {:.1e}",
        layout.erasure.k,
        layout.erasure.r,
        layout.erasure.f,
        layout.erasure.capacity_overhead() * 100.0,
        rack.targets.deployment_lifetime_years,
        planned.erasure.lifetime_loss_probability
    );
    outln!(
        "layout       {}, {}, {}; sampled quality {:.3} / {:.3}",
        verdict(layout.efficient, "efficient", "INEFFICIENT"),
        verdict(layout.symmetric, "symmetric", "asymmetric"),
        verdict(layout.verified, "verified", "UNVERIFIED"),
        layout.solver.low_load_sampled,
        layout.solver.high_load_sampled
    );
    outln!(
        "solver       {} ({} attempt(s))",
        layout.solver.method,
        layout.solver.attempts
    );
    outln!(
        "constraints  {} group constraints for the scheduler",
        layout.group_constraints.len()
    );
    let scheduler = &layout.scheduler;
    outln!(
        "scheduler    reordering bound {} GB, rebuild share {}, queue depth {} per class, {} request(s) per class at once",
        scheduler.reordering_bound_gb,
        scheduler.rebuild_share,
        scheduler.max_queue_depth,
        scheduler.concurrent_requests_per_class
    );
    if let Some(depth) = scheduler.stagger_switches_min_queue {
        outln!(
            "             staggered switches: a class queueing ≥ {depth} reads waits for a NIC partner's switch"
        );
    }
    outln!("time         {elapsed_ms:.0} ms");
    match out {
        Some(path) => outln!("wrote        {}", path.display()),
        None => outln!("(add --out layout.json to save the layout)"),
    }
}

#[derive(Args)]
pub struct VerifyArgs {
    /// The layout file to check.
    #[arg(value_name = "LAYOUT.json")]
    pub layout: PathBuf,
    #[command(flatten)]
    pub source: RackSource,
    /// Print one JSON object instead of a sentence.
    #[arg(long)]
    pub json: bool,
}

pub fn run_verify(args: &VerifyArgs) -> CliResult<()> {
    let rack = args.source.load()?;
    let layout = read_layout(&args.layout)?;
    match verify(&rack, &layout) {
        Ok(domains) => {
            if args.json {
                outln!(
                    "{}",
                    json!({ "verified": true, "rack": rack.name, "groups": layout.groups.len(), "domain_checks": domains })
                );
            } else {
                outln!(
                    "verified: {} groups against {} ({domains} domain checks)",
                    layout.groups.len(),
                    rack.name
                );
            }
            Ok(())
        }
        Err(violations) => {
            if args.json {
                outln!(
                    "{}",
                    json!({ "verified": false, "rack": rack.name, "violations": violations })
                );
            }
            Err(unverified(&rack, &args.layout, &violations))
        }
    }
}

/// The refusal of a layout that fails verification: how many violations and in which file, then
/// every violation on its own line (each names the number found and the number required).
pub fn unverified(rack: &Rack, layout: &Path, violations: &[Violation]) -> CliError {
    let details = violations
        .iter()
        .map(|v| format!("  {v}"))
        .collect::<Vec<_>>()
        .join("\n");
    CliError::Unverified {
        rack: format!(
            "{} ({} violation(s) in {})",
            rack.name,
            violations.len(),
            layout.display()
        ),
        details,
    }
}
