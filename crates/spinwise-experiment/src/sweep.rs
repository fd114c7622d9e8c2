//! Running a sweep: rack + layout setups, the jobs (one simulated configuration each), the
//! parallel runner with its progress bar, the flat result [`Row`] and the per-configuration
//! averages the figures and summaries read.
//!
//! Invariants: a job's configuration index is its position in the job list; run `i` of a sweep
//! (job `i / seeds`, seed `i % seeds`) gets [`run_seed`]`(base, job, seed index)`, so a run's
//! result depends only on its inputs, never on which thread ran it or when. Rows are returned in
//! run order (rayon's indexed `collect` keeps it). A job's overrides (measured hours, a disk
//! failure) are visible in its row (`hours`, the `rebuild_*` columns), never hidden in a summary.

use super::Context;
use crate::error::{ExperimentError, ExperimentResult};
pub use crate::switch_latency::SwitchLatency;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use spinwise_model::presets::load as load_preset;
use spinwise_model::{Layout, Rack};
use spinwise_report::LinePoint;
use spinwise_sim::{
    BlobSizes, Deferral, DiskFailure, FpQueues, PolicyKind, Report, SimConfig, simulate,
};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A rack and the layout runs use on it.
pub struct Setup {
    /// The preset the rack came from.
    pub preset: String,
    /// `synthesized` (spinwise plan), `pelican-manual` (Pelican §2.2's hand-designed layout).
    pub layout_name: &'static str,
    /// The exploration configuration this rack is, when it is one (Flamingo Fig. 6).
    pub exploration_configuration: Option<usize>,
    /// M / N of this rack: disks that may be in their costliest state at once over all disks.
    pub provisioning: f64,
    pub rack: Rack,
    pub layout: Layout,
}

impl Setup {
    /// A shipped preset with the planner's layout.
    pub fn synthesized(preset: &str) -> ExperimentResult<Setup> {
        let rack = load_preset(preset)?;
        let layout = plan(&rack, spinwise_plan::plan(&rack))?;
        Ok(Setup::new(preset, "synthesized", None, rack, layout))
    }

    /// The pelican preset with Pelican's hand-designed layout.
    pub fn pelican_manual() -> ExperimentResult<Setup> {
        let rack = load_preset("pelican")?;
        let layout = plan(&rack, spinwise_plan::pelican_layout(&rack))?;
        Ok(Setup::new("pelican", "pelican-manual", None, rack, layout))
    }

    pub fn new(
        preset: &str,
        layout_name: &'static str,
        exploration_configuration: Option<usize>,
        rack: Rack,
        layout: Layout,
    ) -> Setup {
        let provisioning = layout.max_disks_at_highest as f64 / rack.disk_count() as f64;
        Setup {
            preset: preset.to_string(),
            layout_name,
            exploration_configuration,
            provisioning,
            rack,
            layout,
        }
    }
}

fn plan(
    rack: &Rack,
    planned: Result<spinwise_plan::Plan, spinwise_plan::PlanError>,
) -> ExperimentResult<Layout> {
    planned
        .map(|p| p.layout)
        .map_err(|source| ExperimentError::Plan {
            rack: rack.name.clone(),
            source,
        })
}

/// Which configuration a run is on: the scheduler as the papers describe it, or the preset as
/// Spinwise ships it. Verdicts against a paper are reached on [`Setting::AsDescribed`] runs only;
/// the others get their own column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Setting {
    /// Classes switch independently (no staggered switches: Spinwise's), one read per class at
    /// a time (Pelican §4.2: "in FP 48 requests are serviced concurrently versus only 4 in
    /// Pelican", one per class), and FP's queue depth per scheduler (Pelican §4.1: "The maximum
    /// queue depth per scheduler is set to 1000 requests"). A job's explicit override wins.
    #[default]
    AsDescribed,
    /// The preset's scheduler settings as shipped: staggered switches, several reads per class,
    /// and FP's depth per group.
    WithAdditions,
}

impl Setting {
    /// The name in results.csv.
    pub fn name(self) -> &'static str {
        match self {
            Setting::AsDescribed => "as_described",
            Setting::WithAdditions => "with_additions",
        }
    }
}

/// One simulated configuration of a sweep. `Job { setup, policy, rate_per_s, ..Job::default() }`
/// leaves the optional overrides off and runs the configuration the papers describe.
#[derive(Clone, Debug, Default)]
pub struct Job {
    /// The paper's configuration or Spinwise's (the overrides below apply on top of either).
    pub setting: Setting,
    /// Index into the sweep's setups.
    pub setup: usize,
    pub policy: PolicyKind,
    /// `None`: unbounded.
    pub network_gbps: Option<f64>,
    pub rate_per_s: f64,
    /// Overrides the layout's `scheduler.reordering_bound_gb` (Pelican Fig. 8).
    pub reordering_bound_gb: Option<f64>,
    /// Overrides the layout's `scheduler.concurrent_requests_per_class` (`pelican-plateau`).
    pub concurrent_requests: Option<u32>,
    /// Overrides the layout's `scheduler.stagger_switches_min_queue` (`pelican-plateau`):
    /// `Some(None)` runs Pelican's independent switches on a preset that staggers.
    pub stagger_switches: Option<Option<u32>>,
    /// Overrides the context's measured hours for this job (a slow policy run shorter; the
    /// summary says so).
    pub measured_hours: Option<f64>,
    /// A disk failure at the end of the warm-up (Pelican Fig. 7).
    pub failure: Option<DiskFailure>,
    /// A change to the rack's group-switch latencies (the `pelican-plateau` sensitivity sweep);
    /// the default is the rack as described.
    pub switch_latency: SwitchLatency,
    /// Reads that may wait for a spin-up that happens anyway (the `bulk-restores` sweep).
    pub deferral: Option<Deferral>,
    /// Overrides the context's warm-up (a deferral's wait needs a warm-up at least as long to
    /// measure a steady state).
    pub warmup_hours: Option<f64>,
    /// The share of client reads submitted as Expedited, served ahead of the standard ones (the
    /// `expedited-restores` sweep); 0 (the default) draws no tier, as before Expedited existed.
    pub expedited_fraction: f64,
}

/// One run: every input and every metric, flat for CSV. Durations in seconds, power in W.
/// (`Default` only for tests that build rows by hand: [`row`] names every field.)
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(test, derive(Default))]
pub struct Row {
    pub experiment: &'static str,
    pub configuration: usize,
    pub seed_index: u32,
    pub seed: u64,
    pub preset: String,
    pub layout: &'static str,
    pub exploration_configuration: Option<usize>,
    pub provisioning: f64,
    pub disks: usize,
    pub group_size: u32,
    pub groups: usize,
    pub max_active_groups: u32,
    pub policy: String,
    /// [`Setting::name`]: `as_described` (the papers' scheduler) or `with_additions`.
    pub setting: &'static str,
    /// How FP bounds its queues: `per_scheduler` (Pelican §4.1) or `per_group`.
    pub fp_queues: &'static str,
    pub network_gbps: String,
    pub rate_per_s: f64,
    pub hours: f64,
    pub warmup_hours: f64,
    pub blob_bytes: u64,
    /// `fixed` (every read `blob_bytes`) or `vhd_like` (Pelican's VHD-like size distribution).
    pub blob_sizes: String,
    pub reordering_bound_gb: f64,
    pub max_queue_depth: u32,
    pub concurrent_requests_per_class: u32,
    /// Staggered switches in effect: the queue length from which a class waits for its NIC
    /// partner's switch (empty: classes switch independently, as Pelican's).
    pub stagger_switches_min_queue: Option<u32>,
    /// The job's [`SwitchLatency`]: 1 and `true` for the rack as described.
    pub switch_latency_scale: f64,
    pub high_load_mounts: bool,
    /// The job's [`Deferral`]: the share of reads that may wait, and the longest wait (0 and 0
    /// without one); how many such reads arrived in the window, how many completed, and their
    /// time to first byte (wait included).
    pub bulk_fraction: f64,
    pub bulk_wait_hours: f64,
    pub bulk_requests: u64,
    pub bulk_completed: u64,
    pub bulk_ttfb_mean_s: f64,
    pub bulk_ttfb_p99_s: f64,
    /// The job's Expedited share (0 without); how many Expedited reads arrived in the window,
    /// how many completed, and their time to first byte; then the first byte of the standard
    /// reads, those neither Expedited nor Bulk (all reads when neither tier is drawn).
    pub expedited_fraction: f64,
    pub expedited_requests: u64,
    pub expedited_completed: u64,
    pub expedited_ttfb_mean_s: f64,
    pub expedited_ttfb_p99_s: f64,
    pub standard_completed: u64,
    pub standard_ttfb_mean_s: f64,
    pub standard_ttfb_p99_s: f64,
    pub requests: u64,
    pub completed: u64,
    pub rejected: u64,
    pub reject_rate: f64,
    pub throughput_gbps: f64,
    pub ttfb_mean_s: f64,
    pub ttfb_p50_s: f64,
    pub ttfb_p99_s: f64,
    pub ttfb_max_s: f64,
    pub completion_mean_s: f64,
    pub completion_p50_s: f64,
    pub completion_p99_s: f64,
    pub completion_max_s: f64,
    pub service_mean_s: f64,
    pub service_p50_s: f64,
    pub service_p99_s: f64,
    pub service_max_s: f64,
    /// Pelican §4.1's service time: dequeue → last byte, the spin-up included for the reads a
    /// group switch was made for (the columns above start at the `Serve` action, after it).
    pub service_from_dequeue_mean_s: f64,
    pub service_from_dequeue_p99_s: f64,
    pub spin_up_mean_s: f64,
    pub spin_up_max_s: f64,
    pub spin_ups: u64,
    pub spin_ups_per_disk_year: f64,
    pub tb_per_disk_year: f64,
    pub power_mean_w: f64,
    pub power_peak_w: f64,
    /// Rebuild after the job's disk failure; empty without one. Failure → last stack rebuilt.
    pub rebuild_s: Option<f64>,
    pub rebuild_group: Option<u32>,
    pub rebuild_stacks: Option<u64>,
    pub rebuild_bytes: Option<u64>,
    /// The class of the failed disk's group (an index into the `ttfb_class_*` lists).
    pub rebuild_class: Option<u32>,
    /// Time to first byte per scheduler class, one value per class joined by `;` in class order
    /// (empty without classes): reads counted, mean and p99 (Pelican Fig. 7's per-class effect).
    #[serde(serialize_with = "joined")]
    pub ttfb_class_count: Vec<u64>,
    #[serde(serialize_with = "joined")]
    pub ttfb_class_mean_s: Vec<f64>,
    #[serde(serialize_with = "joined")]
    pub ttfb_class_p99_s: Vec<f64>,
    pub max_active_disks: u32,
    pub budget_violations: u64,
    pub events: u64,
    pub stale_events: u64,
    pub trace_hash: String,
}

/// A list as one CSV cell: its values joined by `;` (a flat row cannot hold a sequence).
fn joined<T: std::fmt::Display, S: serde::Serializer>(
    values: &[T],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let cells: Vec<String> = values.iter().map(ToString::to_string).collect();
    serializer.serialize_str(&cells.join(";"))
}

/// The policy's serialized name (`pelican`, `fully_provisioned`, …): new policies need no code
/// here.
pub fn policy_name(policy: PolicyKind) -> String {
    serde_json::to_value(policy)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{policy:?}"))
}

/// How figures and summaries name a policy.
pub fn policy_label(name: &str) -> String {
    match name {
        "fully_provisioned" => "FP".into(),
        "pelican" => "Pelican".into(),
        other => {
            let mut chars = other.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().collect::<String>() + chars.as_str())
                .unwrap_or_default()
        }
    }
}

/// The serialized name of a blob size model (`fixed`, `vhd_like`).
pub fn blob_sizes_name(sizes: BlobSizes) -> String {
    serde_json::to_value(sizes)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{sizes:?}"))
}

pub fn network_label(network_gbps: Option<f64>) -> String {
    network_gbps.map_or("unbounded".into(), |g| format!("{g}"))
}

/// SplitMix64's finaliser: a bijective mix, so distinct inputs give well-spread distinct seeds.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of one run, from the base seed, its configuration and which of its seeds it is.
pub fn run_seed(base_seed: u64, configuration: usize, seed_index: u32) -> u64 {
    mix(mix(mix(base_seed) ^ configuration as u64) ^ u64::from(seed_index))
}

/// Runs every job `context.seeds` times on the context's thread pool, with a progress bar on a
/// terminal (indicatif draws nothing when stderr is not one). Rows in configuration order.
///
/// The runs are handed out longest first (by [`estimated_work`]), one at a time to whichever
/// thread is free: run in configuration order, a sweep's long runs (its highest rates) came
/// last and one core finished them alone. Each run depends only on its own seed, so the order
/// changes no row.
pub fn run_sweep(
    experiment: &'static str,
    context: &Context,
    setups: &[Setup],
    jobs: &[Job],
) -> ExperimentResult<Vec<Row>> {
    let seeds = context.seeds as usize;
    let progress = ProgressBar::new((jobs.len() * seeds) as u64);
    progress.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg} {pos}/{len} runs [{bar:40}] {elapsed_precise} (eta {eta})",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    progress.set_message(experiment);
    let mut order: Vec<usize> = (0..jobs.len() * seeds).collect();
    // Stable: equal estimates keep configuration order.
    order.sort_by(|a, b| {
        let work = |run: &usize| estimated_work(context, &jobs[run / seeds]);
        work(b).total_cmp(&work(a))
    });
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, ExperimentResult<Row>)>> = Mutex::new(Vec::new());
    context.pool.broadcast(|_| {
        while let Some(&run) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            let (index, seed_index) = (run / seeds, (run % seeds) as u32);
            let row = run_one(experiment, context, setups, index, &jobs[index], seed_index);
            progress.inc(1);
            done.lock()
                .expect("a run panicked holding the results")
                .push((run, row));
        }
    });
    progress.finish_and_clear();
    let mut done = done
        .into_inner()
        .expect("a run panicked holding the results");
    done.sort_by_key(|(run, _)| *run);
    assert_eq!(done.len(), order.len(), "every run was made once");
    done.into_iter().map(|(_, row)| row).collect()
}

/// How long a run takes, roughly: its client reads (rate × simulated hours) and a share for
/// the group switches a quiet rack still makes, doubled for the fully provisioned rack, whose
/// every read re-rates the ~24 others on its NIC. Only the order of runs uses it.
fn estimated_work(context: &Context, job: &Job) -> f64 {
    let hours = job.warmup_hours.unwrap_or(context.warmup_hours)
        + job.measured_hours.unwrap_or(context.hours);
    let policy_factor = if job.policy == PolicyKind::FullyProvisioned {
        2.0
    } else {
        1.0
    };
    hours * (job.rate_per_s + 0.5) * policy_factor
}

fn run_one(
    experiment: &'static str,
    context: &Context,
    setups: &[Setup],
    index: usize,
    job: &Job,
    seed_index: u32,
) -> ExperimentResult<Row> {
    let setup = &setups[job.setup];
    let mut layout_override = None;
    let mut rack_override = None;
    let changes_rack = !job.switch_latency.is_as_described();
    let as_described = job.setting == Setting::AsDescribed;
    let concurrent_requests = job.concurrent_requests.or(as_described.then_some(1));
    let stagger_switches = job.stagger_switches.or(as_described.then_some(None));
    let changes_layout = job.reordering_bound_gb.is_some()
        || concurrent_requests.is_some()
        || stagger_switches.is_some();
    if changes_layout || changes_rack {
        let mut layout = setup.layout.clone();
        if let Some(bound) = job.reordering_bound_gb {
            layout.scheduler.reordering_bound_gb = bound;
        }
        if let Some(concurrent) = concurrent_requests {
            layout.scheduler.concurrent_requests_per_class = concurrent;
        }
        if let Some(stagger) = stagger_switches {
            layout.scheduler.stagger_switches_min_queue = stagger;
        }
        if changes_rack {
            rack_override = Some(
                job.switch_latency
                    .apply_with_layout(&setup.rack, &mut layout),
            );
        }
        layout_override = Some(layout);
    }
    let rack = rack_override.as_ref().unwrap_or(&setup.rack);
    let layout = layout_override.as_ref().unwrap_or(&setup.layout);
    let warmup_hours = job.warmup_hours.unwrap_or(context.warmup_hours);
    let config = SimConfig {
        rate_per_s: job.rate_per_s,
        hours: warmup_hours + job.measured_hours.unwrap_or(context.hours),
        warmup_hours,
        seed: run_seed(context.base_seed, index, seed_index),
        blob_bytes: context.blob_bytes,
        network_gbps: job.network_gbps,
        policy: job.policy,
        blob_sizes: context.blob_sizes,
        failure: job.failure,
        deferral: job.deferral,
        expedited_fraction: job.expedited_fraction,
        fp_queues: if as_described {
            FpQueues::PerScheduler
        } else {
            FpQueues::PerGroup
        },
        ..SimConfig::default()
    };
    let report = simulate(rack, layout, &config).map_err(|source| ExperimentError::Sim {
        rack: rack.name.clone(),
        source,
    })?;
    Ok(row(
        experiment, index, seed_index, setup, layout, job, &config, &report,
    ))
}

/// One run's row: what ran (the job on its setup and the simulator's settings) and what the
/// report measured. One struct literal on purpose: a column added to [`Row`] and forgotten here
/// is a compile error, not a silent default in results.csv.
#[allow(clippy::too_many_arguments)]
fn row(
    experiment: &'static str,
    configuration: usize,
    seed_index: u32,
    setup: &Setup,
    layout: &Layout,
    job: &Job,
    config: &SimConfig,
    report: &Report,
) -> Row {
    let disks = setup.rack.disk_count();
    let switch_latency = job.switch_latency;
    let (t, c, s) = (
        &report.time_to_first_byte_s,
        &report.completion_time_s,
        &report.service_time_s,
    );
    Row {
        experiment,
        configuration,
        seed_index,
        seed: config.seed,
        preset: setup.preset.clone(),
        layout: setup.layout_name,
        exploration_configuration: setup.exploration_configuration,
        provisioning: setup.provisioning,
        disks,
        group_size: layout.group_size,
        groups: layout.groups.len(),
        max_active_groups: layout.max_active_groups,
        policy: policy_name(job.policy),
        setting: job.setting.name(),
        fp_queues: match config.fp_queues {
            FpQueues::PerGroup => "per_group",
            FpQueues::PerScheduler => "per_scheduler",
        },
        network_gbps: network_label(job.network_gbps),
        rate_per_s: job.rate_per_s,
        hours: config.hours,
        warmup_hours: config.warmup_hours,
        blob_bytes: config.blob_bytes,
        blob_sizes: blob_sizes_name(config.blob_sizes),
        reordering_bound_gb: layout.scheduler.reordering_bound_gb,
        max_queue_depth: layout.scheduler.max_queue_depth,
        concurrent_requests_per_class: layout.scheduler.concurrent_requests_per_class,
        stagger_switches_min_queue: report.stagger_switches_min_queue,
        switch_latency_scale: switch_latency.scale,
        high_load_mounts: switch_latency.high_load_mounts,
        bulk_fraction: job.deferral.map_or(0.0, |d| d.fraction),
        bulk_wait_hours: job.deferral.map_or(0.0, |d| d.wait_hours),
        bulk_requests: report.deferred,
        bulk_completed: report.deferred_ttfb_s.count,
        bulk_ttfb_mean_s: report.deferred_ttfb_s.mean,
        bulk_ttfb_p99_s: report.deferred_ttfb_s.p99,
        expedited_fraction: config.expedited_fraction,
        expedited_requests: report.expedited,
        expedited_completed: report.expedited_ttfb_s.count,
        expedited_ttfb_mean_s: report.expedited_ttfb_s.mean,
        expedited_ttfb_p99_s: report.expedited_ttfb_s.p99,
        standard_completed: report.standard_ttfb_s.count,
        standard_ttfb_mean_s: report.standard_ttfb_s.mean,
        standard_ttfb_p99_s: report.standard_ttfb_s.p99,
        requests: report.requests,
        completed: report.completed,
        rejected: report.rejected,
        reject_rate: report.reject_rate,
        throughput_gbps: report.throughput_gbps,
        ttfb_mean_s: t.mean,
        ttfb_p50_s: t.p50,
        ttfb_p99_s: t.p99,
        ttfb_max_s: t.max,
        completion_mean_s: c.mean,
        completion_p50_s: c.p50,
        completion_p99_s: c.p99,
        completion_max_s: c.max,
        service_mean_s: s.mean,
        service_p50_s: s.p50,
        service_p99_s: s.p99,
        service_max_s: s.max,
        service_from_dequeue_mean_s: report.service_from_dequeue_s.mean,
        service_from_dequeue_p99_s: report.service_from_dequeue_s.p99,
        spin_up_mean_s: report.spin_up_s.mean,
        spin_up_max_s: report.spin_up_s.max,
        spin_ups: report.spin_ups,
        spin_ups_per_disk_year: report.spin_ups_per_disk_per_year,
        tb_per_disk_year: report.tb_per_disk_per_year,
        power_mean_w: report.power_w.mean,
        power_peak_w: report.power_w.peak,
        rebuild_s: report.rebuild.map(|r| r.time_s),
        rebuild_group: report.rebuild.map(|r| r.group),
        rebuild_stacks: report.rebuild.map(|r| r.stacks),
        rebuild_bytes: report.rebuild.map(|r| r.bytes),
        rebuild_class: report.rebuild_class,
        ttfb_class_count: report.ttfb_by_class_s.iter().map(|s| s.count).collect(),
        ttfb_class_mean_s: report.ttfb_by_class_s.iter().map(|s| s.mean).collect(),
        ttfb_class_p99_s: report.ttfb_by_class_s.iter().map(|s| s.p99).collect(),
        max_active_disks: report.max_active_disks,
        budget_violations: report.budget_violations,
        events: report.events,
        stale_events: report.stale_events,
        trace_hash: format!("{:016x}", report.trace_hash),
    }
}

/// The distinct rates among `rows`, ascending.
pub fn rates_in(rows: &[Row]) -> Vec<f64> {
    let mut rates: Vec<f64> = rows.iter().map(|r| r.rate_per_s).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    rates
}

/// One point per configuration among `rows` matching `keep`: x of the configuration, the mean of
/// `y` over its seeds, and (with more than one seed) a min–max error bar. Sorted by x.
pub fn points(
    rows: &[Row],
    keep: impl Fn(&Row) -> bool,
    x: impl Fn(&Row) -> f64,
    y: impl Fn(&Row) -> f64,
) -> Vec<LinePoint> {
    let mut by_configuration: BTreeMap<usize, Vec<&Row>> = BTreeMap::new();
    for row in rows.iter().filter(|r| keep(r)) {
        by_configuration
            .entry(row.configuration)
            .or_default()
            .push(row);
    }
    let mut points: Vec<LinePoint> = by_configuration
        .values()
        .map(|runs| {
            let values: Vec<f64> = runs.iter().map(|r| y(r)).collect();
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let low = values.iter().copied().fold(f64::INFINITY, f64::min);
            let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            LinePoint {
                x: x(runs[0]),
                y: mean,
                error: (runs.len() > 1).then_some((low.min(mean), high.max(mean))),
            }
        })
        .collect();
    points.sort_by(|a, b| a.x.total_cmp(&b.x));
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    fn context(jobs: usize) -> Context {
        Context::new(Options {
            hours: Some(0.2),
            warmup_hours: Some(0.05),
            seeds: 2,
            jobs: Some(jobs),
            ..Options::default()
        })
        .expect("valid options")
    }

    /// Rates rising with the configuration, so longest-first hands them out in reverse.
    fn jobs() -> Vec<Job> {
        [0.25, 1.0, 2.0, 4.0]
            .into_iter()
            .zip([
                PolicyKind::Pelican,
                PolicyKind::Pelican,
                PolicyKind::FullyProvisioned,
                PolicyKind::FullyProvisioned,
            ])
            .map(|(rate_per_s, policy)| Job {
                policy,
                rate_per_s,
                network_gbps: Some(40.0),
                ..Job::default()
            })
            .collect()
    }

    #[test]
    fn runs_are_handed_out_longest_first_and_come_back_in_configuration_order_with_the_same_rows() {
        let (one_thread, two_threads) = (context(1), context(2));
        let jobs = jobs();
        let work: Vec<f64> = (jobs.iter())
            .map(|job| estimated_work(&one_thread, job))
            .collect();
        assert!(
            work.windows(2).all(|w| w[0] < w[1]),
            "the later, faster-arriving configurations are estimated longer: {work:?}"
        );
        let setups = [Setup::synthesized("pelican").expect("the preset plans")];
        let rows = |context: &Context| {
            run_sweep("test", context, &setups, &jobs).expect("every run completes")
        };
        let (serial, parallel) = (rows(&one_thread), rows(&two_threads));
        let order: Vec<(usize, u32)> = (serial.iter())
            .map(|row| (row.configuration, row.seed_index))
            .collect();
        let expected: Vec<(usize, u32)> = (0..jobs.len())
            .flat_map(|configuration| (0..2).map(move |seed| (configuration, seed)))
            .collect();
        assert_eq!(order, expected, "rows in configuration order, seeds within");
        for (a, b) in serial.iter().zip(&parallel) {
            assert_eq!(
                (a.configuration, a.seed, a.events, a.trace_hash.clone()),
                (b.configuration, b.seed, b.events, b.trace_hash.clone()),
                "one thread or two, each run is the same"
            );
        }
    }
}
