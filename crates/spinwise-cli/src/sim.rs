//! `spinwise sim`: one simulated run of a rack (issue 3's interface), with the layout planned on
//! the spot or read from a file.

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use crate::source::{RackSource, layout_or_plan};
use clap::{Args, ValueEnum};
use serde_json::json;
use spinwise_experiment::requests_csv::{RequestRow, RowWriter};
use spinwise_experiment::switch_latency::SwitchLatency;
use spinwise_model::limits::MAX_CONCURRENT_REQUESTS_PER_CLASS;
use spinwise_sim::DEFAULT_IDLE_SPIN_DOWN_S;
use spinwise_sim::{
    Arrivals, BlobSizes, DEFAULT_FAILED_BYTES, DEFAULT_FAILED_STACKS, Deferral, DiskFailure,
    PolicyKind, Report, SimConfig, read_trace, simulate_with_baseline,
};
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
    /// Mean client reads per second (Poisson arrivals, uniform over groups). Required unless
    /// `--burst` or `--trace` gives the arrivals.
    #[arg(long, required_unless_present_any = ["burst", "trace"], conflicts_with_all = ["burst", "trace"])]
    pub rate: Option<f64>,
    /// A burst of B reads at uniform times over 60 s instead of Poisson arrivals (Pelican §4.4);
    /// the run drains and every metric covers it whole.
    #[arg(long, value_name = "B", conflicts_with = "trace")]
    pub burst: Option<u64>,
    /// Replay a trace (CSV `time_s,operation,key,size_bytes`, docs/simulator.md) instead of
    /// Poisson arrivals; records at or after --hours are not replayed.
    #[arg(long, value_name = "FILE.csv")]
    pub trace: Option<PathBuf>,
    /// Simulated hours, warm-up included.
    #[arg(long, default_value_t = 24.0)]
    pub hours: f64,
    /// Leading hours excluded from every metric.
    #[arg(long, default_value_t = 1.0)]
    pub warmup_hours: f64,
    /// Seed of every random choice: the same seed gives the same run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Total NIC bandwidth in Gbps, split evenly over the rack's servers (Pelican: 2 × 20 at 40),
    /// or `unbounded` (no NIC; disks and PCIe roots still bind).
    #[arg(long, default_value = "40")]
    pub network_gbps: String,
    /// Bytes per request (one blob), or `vhd` for VHD-like sizes (200 MB–9 GB, mean 3.3 GB).
    /// Trace records carry their own sizes.
    #[arg(
        long,
        alias = "blob-bytes",
        value_name = "BYTES|vhd",
        default_value = "1000000000",
        conflicts_with = "trace"
    )]
    pub blob_size: String,
    /// Fail one disk (of a random group) and rebuild its stripe stacks inside the group.
    #[arg(long)]
    pub fail_disk: bool,
    /// When the disk fails, in hours from the start (default: the end of the warm-up).
    #[arg(long, value_name = "H", requires = "fail_disk")]
    pub fail_at_hours: Option<f64>,
    /// Bytes the failed disk held (default 4.28 TB, Pelican §4.3).
    #[arg(long, value_name = "BYTES", requires = "fail_disk")]
    pub failed_bytes: Option<u64>,
    /// Stripe stacks those bytes form, one rebuild request each (default 64,329, Pelican §4.3).
    #[arg(long, value_name = "N", requires = "fail_disk")]
    pub failed_stacks: Option<u64>,
    /// What if a group switch were faster or slower: scale every disk's spin-up, mount and
    /// unmount latency distribution by F (0 < F ≤ 100; the layout is unchanged). `experiment
    /// pelican-plateau` sweeps it.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub switch_latency_scale: f64,
    /// What if a Pelican class (a Flamingo group) served N requests of its spinning group at once
    /// (1 to 64): overrides the rack's `concurrent_requests_per_class` (pelican: 4;
    /// docs/simulator.md "Concurrent requests"). FP and the random layout serve one at a time.
    #[arg(long, value_name = "N")]
    pub concurrent_requests: Option<u32>,
    /// Staggered group switches from N queued reads (not in the paper; the pelican preset sets
    /// 100): a class holding at least N queued client reads does not switch while another class
    /// sending through the same server's NIC is switching and none streams, so one streams
    /// while the other switches (1 to the queue depth; needs a NIC; docs/simulator.md
    /// "Staggered switches"). Overrides the layout's `stagger_switches_min_queue`.
    #[arg(long, value_name = "N", conflicts_with = "no_stagger_switches")]
    pub stagger_switches: Option<u32>,
    /// Pelican's scheduler as §2.3 describes it: every class switches groups independently,
    /// whatever the layout's `stagger_switches_min_queue` says.
    #[arg(long)]
    pub no_stagger_switches: bool,
    /// Mount with the rack's low-load distribution at every load, dropping its
    /// `mount_latency_high_load_s` (the stragglers under load, Pelican §4.1).
    #[arg(long)]
    pub no_high_load_mounts: bool,
    /// The share of client reads (0 to 1) that may wait for their group to spin up for other
    /// work, as S3 RestoreObject's Bulk tier does (docs/s3.md "Restore tiers"): such a read
    /// arriving while its group rests is queued only at the group's next spin-up, or after
    /// --bulk-wait-hours.
    #[arg(long, value_name = "F")]
    pub bulk_fraction: Option<f64>,
    /// The longest a Bulk read waits before it is queued anyway, in hours.
    #[arg(
        long,
        value_name = "H",
        default_value_t = 12.0,
        requires = "bulk_fraction"
    )]
    pub bulk_wait_hours: f64,
    /// The share of client reads (0 to 1) submitted as Expedited, as S3 RestoreObject's
    /// Expedited tier does (docs/s3.md "Restore tiers"): the scheduler serves them ahead of the
    /// standard reads and brings their group up first. With --bulk-fraction, the two shares add
    /// up to at most 1.
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub expedited_fraction: f64,
    /// Also write one CSV row per client read the summaries count (arrived in the window and
    /// completed): its group, class, and arrival, dispatch, first- and last-byte times, for
    /// analyses the summaries cannot answer (docs/simulator.md, "Per-request records"). Written
    /// as FILE.partial and renamed once the run is done.
    #[arg(long, value_name = "FILE.csv")]
    pub requests_out: Option<PathBuf>,
    /// Spin a group down once it has had no work for S seconds (Pelican's and Flamingo's
    /// schedulers; FP and the random layout never do), or `never` (0 too). The run is then
    /// repeated with the same seed and idle spin-down off, and the energy saved is reported
    /// (docs/simulator.md, "Idle spin-down").
    #[arg(long, value_name = "S|never", default_value_t = DEFAULT_IDLE_SPIN_DOWN_S.to_string())]
    pub idle_spin_down_s: String,
    /// With `--policy fp`: the groups of one class share the queue depth, as Pelican §4.1 states
    /// it ("The maximum queue depth per scheduler is set to 1000 requests"), instead of each
    /// group's queue holding the whole depth (the default).
    #[arg(long)]
    pub fp_queue_per_scheduler: bool,
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
    let switch_latency = SwitchLatency::new(args.switch_latency_scale, !args.no_high_load_mounts)?;
    let described = args.source.load()?;
    let mut layout = layout_or_plan(&described, args.layout.as_deref())?;
    if let Some(concurrent) = args.concurrent_requests {
        if !(1..=MAX_CONCURRENT_REQUESTS_PER_CLASS).contains(&concurrent) {
            return Err(CliError::Usage(format!(
                "--concurrent-requests: {concurrent} is not 1 to \
                 {MAX_CONCURRENT_REQUESTS_PER_CLASS} requests"
            )));
        }
        layout.scheduler.concurrent_requests_per_class = concurrent;
    }
    if let Some(depth) = args.stagger_switches {
        spinwise_experiment::stagger_switches(&mut layout, depth)?;
    }
    if args.no_stagger_switches {
        layout.scheduler.stagger_switches_min_queue = None;
    }
    let rack = if switch_latency.is_as_described() {
        described
    } else {
        switch_latency.apply_with_layout(&described, &mut layout)
    };
    let config = sim_config(args)?;
    let mut rows = args
        .requests_out
        .as_deref()
        .map(RowWriter::create)
        .transpose()?;
    let started = Instant::now();
    let report = simulate_with_baseline(&rack, &layout, &config, &mut |record| {
        if let Some(rows) = rows.as_mut() {
            rows.write(&RequestRow::simulated(record));
        }
    })
    .map_err(|source| CliError::Sim {
        rack: rack.name.clone(),
        source,
    })?;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    if let Some(rows) = rows {
        rows.finish()?;
    }
    if args.json {
        print_json(&report, &config, switch_latency, elapsed_ms);
    } else {
        print_summary(&report, &config, switch_latency, elapsed_ms);
    }
    Ok(())
}

/// `--network-gbps`: a positive number of Gbps, or `unbounded` (`None`: no NIC).
pub fn network_gbps(text: &str) -> CliResult<Option<f64>> {
    if text == "unbounded" {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(gbps) if gbps.is_finite() && gbps > 0.0 => Ok(Some(gbps)),
        _ => Err(CliError::Usage(format!(
            "--network-gbps: `{text}` is neither a positive number nor `unbounded`"
        ))),
    }
}

/// `--idle-spin-down-s`: seconds (0: never), or `never`; `None` is never. The upper bound is
/// the simulator's or the store's to check.
pub fn idle_spin_down_s(text: &str) -> CliResult<Option<f64>> {
    if text == "never" {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => {
            Ok((seconds > 0.0).then_some(seconds))
        }
        _ => Err(CliError::Usage(format!(
            "--idle-spin-down-s: `{text}` is neither a number of seconds ≥ 0 nor `never`"
        ))),
    }
}

/// The run the flags describe (ranges are the simulator's to check).
fn sim_config(args: &SimArgs) -> CliResult<SimConfig> {
    let policy = match args.policy {
        Policy::Pelican => PolicyKind::Pelican,
        Policy::Flamingo => PolicyKind::Flamingo,
        Policy::Fp => PolicyKind::FullyProvisioned,
        Policy::Random => PolicyKind::Random,
    };
    if args.fp_queue_per_scheduler && policy != PolicyKind::FullyProvisioned {
        return Err(CliError::Usage(
            "--fp-queue-per-scheduler: only the fully provisioned baseline (--policy fp) has it"
                .into(),
        ));
    }
    let network_gbps = network_gbps(&args.network_gbps)?;
    if args.stagger_switches.is_some() {
        // Asked for by name, so refused rather than dropped without a word (until 2026-12-01
        // the run went ahead unstaggered and the report said `null`).
        if policy != PolicyKind::Pelican {
            return Err(CliError::Usage(
                "--stagger-switches: only Pelican's class scheduler (--policy pelican) staggers switches"
                    .into(),
            ));
        }
        if network_gbps.is_none() {
            return Err(CliError::Usage(
                "--stagger-switches needs a NIC: with --network-gbps unbounded no two classes share a link, so there is nothing to stagger"
                    .into(),
            ));
        }
    }
    let (blob_sizes, blob_bytes) = blob_size(&args.blob_size)?;
    Ok(SimConfig {
        rate_per_s: args.rate.unwrap_or(0.0),
        hours: args.hours,
        warmup_hours: args.warmup_hours,
        seed: args.seed,
        blob_bytes,
        network_gbps,
        policy,
        arrivals: arrivals(args)?,
        blob_sizes,
        failure: args.fail_disk.then(|| DiskFailure {
            at_hours: args.fail_at_hours,
            lost_bytes: args.failed_bytes.unwrap_or(DEFAULT_FAILED_BYTES),
            lost_stacks: args.failed_stacks.unwrap_or(DEFAULT_FAILED_STACKS),
        }),
        deferral: args.bulk_fraction.map(|fraction| Deferral {
            fraction,
            wait_hours: args.bulk_wait_hours,
        }),
        expedited_fraction: args.expedited_fraction,
        idle_spin_down_s: idle_spin_down_s(&args.idle_spin_down_s)?,
        fp_queues: if args.fp_queue_per_scheduler {
            spinwise_sim::FpQueues::PerScheduler
        } else {
            spinwise_sim::FpQueues::PerGroup
        },
    })
}

/// `--json`: one object with issue 3's fields and the rest of the report.
fn print_json(report: &Report, config: &SimConfig, switch_latency: SwitchLatency, elapsed_ms: f64) {
    let value = json!({
        "rack": report.rack,
        "policy": config.policy,
        "seed": report.seed,
        "rate_per_s": report.rate_per_s,
        "window_s": report.window_s,
        "last_byte_s": report.last_byte_s,
        "requests": report.requests,
        "completed": report.completed,
        "rejected": report.rejected,
        "reject_rate": report.reject_rate,
        "throughput_gbps": report.throughput_gbps,
        "ttfb_s": report.time_to_first_byte_s,
        "ttfb_by_class_s": report.ttfb_by_class_s,
        "bulk": config.deferral,
        "bulk_requests": report.deferred,
        "bulk_ttfb_s": report.deferred_ttfb_s,
        "expedited_fraction": config.expedited_fraction,
        "expedited_requests": report.expedited,
        "expedited_ttfb_s": report.expedited_ttfb_s,
        "standard_ttfb_s": report.standard_ttfb_s,
        "completion_s": report.completion_time_s,
        "service_s": report.service_time_s,
        "spin_up_s": report.spin_up_s,
        "spin_ups": report.spin_ups,
        "spin_ups_per_disk_per_year": report.spin_ups_per_disk_per_year,
        "tb_per_disk_per_year": report.tb_per_disk_per_year,
        "high_load_spin_ups": report.high_load_spin_ups,
        "rebuild_s": report.rebuild.map(|r| r.time_s),
        "rebuild": report.rebuild,
        "rebuild_class": report.rebuild_class,
        "power_w": report.power_w,
        "max_active_disks": report.max_active_disks,
        "budget_violations": report.budget_violations,
        "audit_refusals": report.audit_refusals,
        "events": report.events,
        "trace_hash": format!("{:016x}", report.trace_hash),
        "switch_latency_scale": switch_latency.scale,
        "high_load_mounts": switch_latency.high_load_mounts,
        "concurrent_requests_per_class": report.concurrent_requests,
        "stagger_switches_min_queue": report.stagger_switches_min_queue,
        "elapsed_ms": elapsed_ms,
    });
    // Added one by one: the macro's recursion limit stops one literal this long.
    let mut value = value;
    value["service_from_dequeue_s"] = json!(report.service_from_dequeue_s);
    value["fp_queues"] = json!(config.fp_queues);
    value["idle_spin_down_s"] = json!(report.idle_spin_down_s);
    value["idle_spin_downs"] = json!(report.idle_spin_downs);
    value["energy_kwh"] = json!(report.energy_kwh);
    value["idle_savings"] = json!(report.idle_savings);
    outln!(
        "{}",
        serde_json::to_string_pretty(&value).expect("json values serialize")
    );
}

/// The summary for people: the run, its latencies, then the disks, power and budgets.
fn print_summary(
    report: &Report,
    config: &SimConfig,
    switch_latency: SwitchLatency,
    elapsed_ms: f64,
) {
    let network = config
        .network_gbps
        .map_or("unbounded".to_string(), |g| format!("{g} Gbps"));
    outln!(
        "rack          {} at {} req/s, {} h ({} h warm-up), network {network}, seed {}",
        report.rack,
        report.rate_per_s,
        config.hours,
        config.warmup_hours,
        report.seed
    );
    if report.concurrent_requests > 1 {
        outln!(
            "serving       up to {} requests per class at once",
            report.concurrent_requests
        );
    }
    if let Some(depth) = report.stagger_switches_min_queue {
        outln!(
            "staggering    a class with ≥ {depth} queued reads waits for a NIC partner's switch"
        );
    }
    if !switch_latency.is_as_described() {
        outln!(
            "latencies     spin-up, mount and unmount × {}{}",
            switch_latency.scale,
            if switch_latency.high_load_mounts {
                ""
            } else {
                "; no high-load mount stragglers"
            }
        );
    }
    outln!(
        "requests      {} in the window: {} completed, {} rejected",
        report.requests,
        report.completed,
        report.rejected
    );
    outln!(
        "reject rate   {:.4}; throughput {:.2} Gbps",
        report.reject_rate,
        report.throughput_gbps
    );
    print_latencies(report);
    if let Some(deferral) = config.deferral {
        let bulk = &report.deferred_ttfb_s;
        outln!(
            "bulk reads    {} ({} of reads, waiting ≤ {} h for a spin-up): first byte mean {:.2} s, p99 {:.2} s, max {:.2} s",
            report.deferred,
            deferral.fraction,
            deferral.wait_hours,
            bulk.mean,
            bulk.p99,
            bulk.max
        );
    }
    if config.expedited_fraction > 0.0 {
        let (expedited, standard) = (&report.expedited_ttfb_s, &report.standard_ttfb_s);
        outln!(
            "expedited     {} ({} of reads): first byte mean {:.2} s, p99 {:.2} s; standard reads mean {:.2} s, p99 {:.2} s",
            report.expedited,
            config.expedited_fraction,
            expedited.mean,
            expedited.p99,
            standard.mean,
            standard.p99
        );
    }
    print_disks_and_power(report);
    outln!(
        "simulated     {} events in {elapsed_ms:.0} ms (trace {:016x})",
        report.events,
        report.trace_hash
    );
}

/// First byte, completion and service time, then first byte per class.
fn print_latencies(report: &Report) {
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
    for (class, summary) in report.ttfb_by_class_s.iter().enumerate() {
        let failed = if report.rebuild_class == Some(class as u32) {
            " (rebuilding)"
        } else {
            ""
        };
        outln!(
            "  class {class:<5} first byte mean {:.2} s, p50 {:.2} s, p99 {:.2} s, max {:.2} s over {} reads{failed}",
            summary.mean,
            summary.p50,
            summary.p99,
            summary.max,
            summary.count
        );
    }
}

/// Spin-ups and wear per disk, the rebuild if any, power, and the checker's verdict.
fn print_disks_and_power(report: &Report) {
    outln!(
        "spin-ups      {} (mean {:.1} s each incl. mount)",
        report.spin_ups,
        report.spin_up_s.mean
    );
    outln!(
        "per disk      {:.1} spin-ups and {:.3} TB a year ({} spin-ups mounted under high load)",
        report.spin_ups_per_disk_per_year,
        report.tb_per_disk_per_year,
        report.high_load_spin_ups
    );
    if let Some(rebuild) = &report.rebuild {
        outln!(
            "rebuild       disk {} of group {} failed at {:.2} h: {} stacks ({:.2} TB) rebuilt in {:.2} h",
            rebuild.failed_disk,
            rebuild.group,
            rebuild.failed_at_s / 3600.0,
            rebuild.stacks,
            rebuild.bytes as f64 / 1e12,
            rebuild.time_s / 3600.0
        );
    }
    outln!(
        "power         mean {:.0} W, peak {:.0} W; at most {} disks spinning",
        report.power_w.mean,
        report.power_w.peak,
        report.max_active_disks
    );
    print_idle_spin_down(report);
    outln!(
        "budgets       {} violations found by the independent checker; {} changes the engine's audit refused",
        report.budget_violations,
        report.audit_refusals
    );
}

/// Energy, and with idle spin-down what it saved against the same seeded run without.
fn print_idle_spin_down(report: &Report) {
    let Some(idle_s) = report.idle_spin_down_s else {
        outln!(
            "energy        {:.1} kWh in the window; idle groups are never spun down",
            report.energy_kwh
        );
        return;
    };
    outln!(
        "energy        {:.1} kWh in the window; {} groups spun down after {idle_s} s idle",
        report.energy_kwh,
        report.idle_spin_downs
    );
    if let Some(savings) = &report.idle_savings {
        outln!(
            "idle savings  {:.1} kWh ({:.1}%) against the same seeded run never spinning idle groups down ({:.1} kWh, mean {:.0} W, {} spin-ups, first byte mean {:.2} s)",
            savings.saved_kwh,
            savings.saved_fraction * 100.0,
            savings.baseline_energy_kwh,
            savings.baseline_power_mean_w,
            savings.baseline_spin_ups,
            savings.baseline_time_to_first_byte_s.mean
        );
    }
}

/// `--blob-size`: `vhd`, or a whole number of bytes (range checked by the simulator).
pub(crate) fn blob_size(text: &str) -> CliResult<(BlobSizes, u64)> {
    if text == "vhd" {
        return Ok((BlobSizes::VhdLike, spinwise_sim::DEFAULT_BLOB_BYTES));
    }
    let bytes = text.parse::<u64>().map_err(|_| {
        CliError::Usage(format!(
            "--blob-size: `{text}` is neither a whole number of bytes nor `vhd`"
        ))
    })?;
    Ok((BlobSizes::Fixed, bytes))
}

/// Poisson unless `--burst` or `--trace` says otherwise; a trace file is read and parsed here.
fn arrivals(args: &SimArgs) -> CliResult<Arrivals> {
    if let Some(requests) = args.burst {
        return Ok(Arrivals::Burst { requests });
    }
    let Some(path) = &args.trace else {
        return Ok(Arrivals::Poisson);
    };
    // Read a line at a time (bounded lines): a file without newlines or `/dev/zero` is refused
    // after a few kilobytes, and a pipe (`--trace <(…)`) works as a file does.
    let file = std::fs::File::open(path).map_err(io_error(path))?;
    let records = read_trace(std::io::BufReader::new(file)).map_err(|source| CliError::Trace {
        path: path.display().to_string(),
        source,
    })?;
    Ok(Arrivals::Trace(records))
}
