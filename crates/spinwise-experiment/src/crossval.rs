//! `pelican-fig4`: the simulator cross-validated against the store (Pelican §4.4, Fig. 4). A
//! burst of b reads of 1 GB blobs, uniform over 60 s, is replayed twice: by the simulator, and
//! by the store — the real-clock driver running the same scheduler over emulated disks that
//! sleep their spin-up, mount and unmount latencies and are throttled to their bandwidth — after
//! both were pre-loaded with the blobs the burst reads. Like the paper we compare mean
//! throughput, completion time, service time and time to first byte for each b.
//!
//! Scaling. A store run in the rack's own time would take the simulator's drain time (hours for
//! the larger bursts) and 1 GB per blob, so the store runs in scaled time: every latency × f
//! ([`DEFAULT_TIME_FACTOR`], or `--store-time-factor`), every disk's and NIC's bandwidth × β
//! ([`BANDWIDTH_SCALE`], what two cores can move), and every blob, the reordering bound u and the
//! read path's IO size × f·β. A blob's transfer then takes f × its rack time, as every latency
//! does, so the store run is the rack run with its clock sped up by 1/f; its times are divided by
//! f and its bytes by f·β before they are compared. Nothing else is scaled: the scheduler, its
//! queue depth, and the layout are the rack's.
//!
//! What both systems are given: the `pelican-prototype` rack (Pelican §4.4: the rack the paper
//! cross-validated against) with its planned layout, Pelican's scheduler, the paper's 8.5 Gbps
//! NIC (`--network-gbps`, split over the rack's servers as the simulator splits it; the
//! prototype has one), and the rack's mount latency at every load: the emulated disks do not
//! model the simulator's assumed high-load mount stragglers (docs/simulator.md), so neither side
//! uses them. The store has no NIC of its own (its reads end in this process), so the replay
//! sends every read's bytes through an emulated one ([`crate::replay::Nic`]) at the NIC's rate
//! × β, behind the server the simulator sends that group's reads from
//! ([`spinwise_model::Layout::group_read_servers`]).
//! Each blob is its own blob in the group its key hashes to (the trace rule, FNV-1a of the key
//! modulo the groups, which `Store::flush_placed` follows), and each is read once.
//!
//! The simulator replays each trace with [`SIMULATOR_SEEDS`] seeds (other latency draws) and the
//! store `--store-runs` times (default once; run i's emulated disks draw under
//! `StoreConfig::latency_seed` i, its row's seed is the base seed + i). The summary and the
//! figures set the store's run, or its runs' median and min–max, against the simulator's median
//! and min–max, and `requests-b{b}.csv` keeps every read of the base seed and of the store's
//! first run.
//!
//! Each store run is made twice: on the wall clock (`store`), and on discrete-event virtual time
//! (`store-virtual`, [`crate::virtual_time`]): the same preloaded store, driver, read path and
//! emulated disks, but every latency, throttle, NIC and clock wait is on a virtual clock that
//! moves only when the whole process is idle, so the host's own time (thread wake-ups, catalog
//! lookups, the 1/f that scales them) counts for nothing, and the run takes far less wall time.
//!
//! Invariants: the trace is a pure function of (seed, b), and every system replays that very
//! trace; the simulator's rows are deterministic, the `store` rows are wall-clock measurements
//! (they vary from run to run and with the host's load, which is the point of measuring them),
//! the `store-virtual` rows are the same for the same seed (tested by two runs).
//! Store data lives in a temporary directory removed after each run.

use super::summary::{rate, relative};
use super::{Context, Figure, Outcome, Rows, StoreClock};
use crate::error::{ExperimentError, ExperimentResult};
use crate::replay::{Nic, ReplayRead, ReplayReport, replay};
use crate::requests_csv::RequestRow;
use crate::virtual_time::VirtualTime;
use indicatif::{ProgressBar, ProgressStyle};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use spinwise_catalog::SqliteCatalog;
use spinwise_disk::{Disk, EmulatedDisk};
use spinwise_model::{Layout, Rack, parse_rack};
use spinwise_report::{LineChart, LinePoint, Series, SeriesStyle, YScale};
use spinwise_sim::workload::{burst_times_us, group_of_key};
use spinwise_sim::{
    Arrivals, Operation, PolicyKind, ReadTier, SimConfig, Summary, TraceRecord, simulate_recording,
};
use spinwise_store::CATALOG_FILE;
use spinwise_store::clock::{Clock, SystemClock};
use spinwise_store::config::COLUMN_BATCH_BYTES;
use spinwise_store::durable::HostFiles;
use spinwise_store::emulated_config;
use spinwise_store::{Environment, RackSource, SqliteStore, Store, StoreConfig, StoreError};
use std::path::Path;
use std::sync::Arc;

/// The rack Pelican's simulator was cross-validated against.
const PRESET: &str = "pelican-prototype";
/// The store's clock runs 1/f times faster than the rack's: latencies × f.
pub const DEFAULT_TIME_FACTOR: f64 = 0.05;
/// The store's disks stream at this fraction of the rack's bandwidth.
pub const BANDWIDTH_SCALE: f64 = 0.1;
/// Pelican §4.4: "For the cross-validation we configure the simulator to use an 8.5Gbps NIC"
/// (the most the prototype's 10 Gbps NIC ever carried).
pub const DEFAULT_NETWORK_GBPS: f64 = 8.5;
/// The store's fragment size. Sizes of single IOs do not scale with the run: the store's first
/// byte waits for its first fragment IO, which at 128 KiB (the default) would stand for 25 MB of
/// a rack disk's transfer (0.25 s) in the scaled run, against 1.2 ms on the rack; 32 KiB stands
/// for 0.06 s.
const FRAGMENT_BYTES: u32 = 32 << 10;
/// The preload's time factor (its spin-ups are not measured).
const PRELOAD_TIME_FACTOR: f64 = 0.0005;
/// Seeds the simulator replays each burst with. One trace, but every spin-up, mount and unmount
/// latency is a draw, and with three classes sharing one NIC a few seconds' difference decides
/// whether their batches stream together (each at a third of the NIC) or staggered (each alone):
/// on b = 240, 40 seeds spread the simulator's mean service time over 1.35–2.10 s and its
/// throughput over 4.28–5.14 Gbps (docs/experiments.md). Each store run is a draw too, so it
/// is compared with the simulator's spread, not with one seed. A replay takes milliseconds.
pub const SIMULATOR_SEEDS: u64 = 40;
/// The paper's b went from 15 to 1,920.
const BURSTS: &[u64] = &[15, 60, 240, 960];
const QUICK_BURSTS: &[u64] = &[15, 60];
/// Pelican §4.4: "a burst of b read requests for 1GB blobs".
const BLOB_BYTES: u64 = 1_000_000_000;

/// How the store's run stands for the rack's.
#[derive(Clone, Copy, Debug)]
struct Scale {
    /// f: every latency and transfer time × f.
    time_factor: f64,
    /// The rack's network in Gbps, split over its servers; `None`: unbounded.
    network_gbps: Option<f64>,
}

impl Scale {
    /// Blobs and the reordering bound: × f·β, so a transfer at β × the rack's bandwidth takes
    /// f × its rack time.
    fn bytes_factor(self) -> f64 {
        self.time_factor * BANDWIDTH_SCALE
    }

    fn to_store_us(self, rack_us: u64) -> u64 {
        (rack_us as f64 * self.time_factor).round() as u64
    }

    fn to_rack_us(self, store_us: u64) -> u64 {
        (store_us as f64 / self.time_factor).round() as u64
    }
}

/// The store's run on the wall clock (scaled real time).
pub const STORE: &str = "store";
/// The store's run on discrete-event virtual time ([`crate::virtual_time`]).
pub const STORE_VIRTUAL: &str = "store-virtual";
/// The store's two runs of each burst, in the order they run and are reported.
const STORE_SYSTEMS: [&str; 2] = [STORE, STORE_VIRTUAL];

/// The clock a store run is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StoreTime {
    /// The wall clock: emulated disks sleep, the host's overheads count.
    Real,
    /// Virtual time: the same store, its waits on [`VirtualTime`], the host's speed uncounted.
    Virtual,
}

impl StoreTime {
    fn system(self) -> &'static str {
        match self {
            StoreTime::Real => STORE,
            StoreTime::Virtual => STORE_VIRTUAL,
        }
    }
}

/// One system's replay of one burst; every time in the rack's seconds and every byte count in
/// the rack's bytes (store runs already converted).
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// `simulator`, `store` (real time) or `store-virtual` (virtual time).
    pub system: &'static str,
    pub burst_requests: u64,
    pub seed: u64,
    pub time_factor: f64,
    pub bandwidth_scale: f64,
    /// The rack's network both systems sent through (Gbps over all servers; empty: unbounded).
    pub network_gbps: Option<f64>,
    /// Staggered switches from this many queued reads, in both systems (empty: Pelican's
    /// independent switches).
    pub stagger_switches_min_queue: Option<u32>,
    pub requests: u64,
    pub completed: u64,
    pub rejected: u64,
    /// Reads that failed for another reason than a full queue (store only; must be 0).
    pub errors: u64,
    /// Bytes delivered × 8 / the time of the last byte (the burst's start is 0).
    pub throughput_gbps: f64,
    pub drained_s: f64,
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
    pub spin_ups: u64,
}

/// The rack both systems run: the preset without high-load mount latencies, as TOML (the store
/// keeps its rack verbatim) and parsed.
fn rack_text() -> ExperimentResult<(String, Rack)> {
    let text = spinwise_model::presets::text(PRESET)
        .ok_or_else(|| ExperimentError::Invalid(format!("preset {PRESET} is not built in")))?;
    let text: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("mount_latency_high_load_s"))
        .map(|line| format!("{line}\n"))
        .collect();
    let rack = parse_rack(&format!("preset {PRESET} without high-load mounts"), &text)?;
    assert!(
        rack.disk_model.mount_latency_high_load_s.is_none(),
        "the filter removed the high-load mount line"
    );
    Ok((text, rack))
}

/// The burst's trace: b distinct keys, each read once at a uniform time in [0, 60 s).
fn burst_trace(requests: u64, seed: u64) -> Vec<TraceRecord> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ requests.rotate_left(32));
    burst_times_us(requests, &mut rng)
        .into_iter()
        .enumerate()
        .map(|(index, time_us)| TraceRecord {
            time_us,
            operation: Operation::Read,
            key: format!("burst-{requests}/blob-{index:05}"),
            size_bytes: BLOB_BYTES,
        })
        .collect()
}

pub fn fig4(context: &Context) -> ExperimentResult<Outcome> {
    let (rack_toml, rack) = rack_text()?;
    let mut layout = crate::plan_layout(&rack)?;
    if let Some(depth) = context.stagger_switches {
        crate::stagger_switches(&mut layout, depth)?;
    }
    let defaults = if context.quick { QUICK_BURSTS } else { BURSTS };
    let bursts: &[u64] = context.bursts.as_deref().unwrap_or(defaults);
    let scale = Scale {
        time_factor: context.store_time_factor.unwrap_or(DEFAULT_TIME_FACTOR),
        network_gbps: context.network_gbps.unwrap_or(Some(DEFAULT_NETWORK_GBPS)),
    };
    let store_runs = u64::from(context.store_runs);
    let times: &[StoreTime] = match context.store_clock {
        StoreClock::Both => &[StoreTime::Real, StoreTime::Virtual],
        StoreClock::Real => &[StoreTime::Real],
        StoreClock::Virtual => &[StoreTime::Virtual],
    };
    let store_replays = times.len() as u64 * store_runs;
    let progress = ProgressBar::new(bursts.len() as u64 * (1 + store_replays));
    progress.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg} {pos}/{len} runs [{bar:40}] {elapsed_precise}",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    let mut rows = Vec::new();
    let mut requests_by_burst = Vec::new();
    for &requests in bursts {
        let trace = burst_trace(requests, context.base_seed);
        progress.set_message(format!(
            "pelican-fig4: simulator, b = {requests} ({SIMULATOR_SEEDS} seeds)"
        ));
        let mut reads = Vec::new();
        for index in 0..SIMULATOR_SEEDS {
            let seed = context.base_seed.wrapping_add(index);
            // The per-request table holds the base seed's reads, the run the store's is beside.
            let record = index == 0;
            let (row, seed_reads) = simulated_row(&rack, &layout, &trace, seed, scale, record)?;
            rows.push(row);
            reads.extend(seed_reads);
        }
        progress.inc(1);
        for &time in times {
            for run in 0..store_runs {
                progress.set_message(format!(
                    "pelican-fig4: store, b = {requests}, run {} of {store_runs} ({})",
                    run + 1,
                    match time {
                        StoreTime::Real => "real time",
                        StoreTime::Virtual => "virtual time",
                    }
                ));
                let rack = (rack_toml.as_str(), &rack);
                let seed = context.base_seed.wrapping_add(run);
                let (row, stored_reads) =
                    stored_row(rack, &layout, &trace, (seed, run), (scale, time))?;
                rows.push(row);
                if run == 0 {
                    // The first run of each clock.
                    reads.extend(stored_reads);
                }
                progress.inc(1);
            }
        }
        requests_by_burst.push((requests, reads));
    }
    progress.finish_and_clear();
    let summary = summary(&rows, bursts, scale);
    Ok(Outcome {
        figures: figures(&rows),
        rows: Rows::CrossValidation {
            rows,
            requests: requests_by_burst,
        },
        summary,
    })
}

fn simulated_row(
    rack: &Rack,
    layout: &Layout,
    trace: &[TraceRecord],
    seed: u64,
    scale: Scale,
    record: bool,
) -> ExperimentResult<(Row, Vec<RequestRow>)> {
    let config = SimConfig {
        // The trace's rate (records / hours) is informational; one hour holds the 60 s burst.
        rate_per_s: trace.len() as f64 / 3600.0,
        hours: 1.0,
        warmup_hours: 0.0,
        seed,
        blob_bytes: BLOB_BYTES,
        network_gbps: scale.network_gbps,
        policy: PolicyKind::Pelican,
        arrivals: Arrivals::Trace(trace.to_vec()),
        ..SimConfig::default()
    };
    let mut reads = Vec::new();
    let report = simulate_recording(rack, layout, &config, &mut |read| {
        if record {
            reads.push(RequestRow::simulated(read));
        }
    })
    .map_err(|source| ExperimentError::Sim {
        rack: rack.name.clone(),
        source,
    })?;
    let delivered_bytes = report.completed as f64 * BLOB_BYTES as f64;
    let row = Row {
        system: "simulator",
        burst_requests: trace.len() as u64,
        seed,
        time_factor: 1.0,
        bandwidth_scale: 1.0,
        network_gbps: scale.network_gbps,
        stagger_switches_min_queue: layout.scheduler.stagger_switches_min_queue,
        requests: report.requests,
        completed: report.completed,
        rejected: report.rejected,
        errors: 0,
        throughput_gbps: gbps(delivered_bytes, report.last_byte_s),
        drained_s: report.last_byte_s,
        ttfb_mean_s: report.time_to_first_byte_s.mean,
        ttfb_p50_s: report.time_to_first_byte_s.p50,
        ttfb_p99_s: report.time_to_first_byte_s.p99,
        ttfb_max_s: report.time_to_first_byte_s.max,
        completion_mean_s: report.completion_time_s.mean,
        completion_p50_s: report.completion_time_s.p50,
        completion_p99_s: report.completion_time_s.p99,
        completion_max_s: report.completion_time_s.max,
        service_mean_s: report.service_time_s.mean,
        service_p50_s: report.service_time_s.p50,
        service_p99_s: report.service_time_s.p99,
        service_max_s: report.service_time_s.max,
        spin_ups: report.spin_ups,
    };
    Ok((row, reads))
}

fn gbps(bytes: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes * 8.0 / seconds / 1e9
    } else {
        0.0
    }
}

/// The store's layout: the rack's, with the reordering bound in scaled bytes.
fn scaled_layout(layout: &Layout, scale: Scale) -> Layout {
    let mut scaled = layout.clone();
    scaled.scheduler.reordering_bound_gb *= scale.bytes_factor();
    scaled
}

/// The store's replay of `trace`; `rack` is the rack's TOML and the rack it parses to; the row
/// is labelled `seed`, and the emulated disks draw their latencies under `latency_seed`.
fn stored_row(
    rack: (&str, &Rack),
    layout: &Layout,
    trace: &[TraceRecord],
    (seed, latency_seed): (u64, u64),
    (scale, time): (Scale, StoreTime),
) -> ExperimentResult<(Row, Vec<RequestRow>)> {
    let directory = tempfile::tempdir().map_err(crate::error::io_error(&std::env::temp_dir()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(crate::error::io_error(directory.path()))?;
    let report = runtime.block_on(store_replay(
        directory.path(),
        rack,
        layout,
        trace,
        latency_seed,
        (scale, time),
    ))?;
    let mut row = store_row(&report, trace.len() as u64, seed, scale);
    row.system = time.system();
    row.stagger_switches_min_queue = layout.scheduler.stagger_switches_min_queue;
    let mut requests = store_requests(&report, trace, layout, scale);
    for request in &mut requests {
        request.system = time.system();
    }
    Ok((row, requests))
}

/// The store's completed reads as per-request rows in the rack's units, beside the simulator's:
/// the trace gives each read's arrival and key (so its group and class), the replay its first
/// and last byte and its service time (dispatch = last byte − service).
fn store_requests(
    report: &ReplayReport,
    trace: &[TraceRecord],
    layout: &Layout,
    scale: Scale,
) -> Vec<RequestRow> {
    let groups = layout.groups.len() as u32;
    let seconds = |store_us: u64| scale.to_rack_us(store_us) as f64 / 1e6;
    trace
        .iter()
        .zip(&report.reads)
        .enumerate()
        .filter_map(|(index, (record, read))| {
            let first_byte_s = seconds(read.first_byte_us?);
            let completion_s = seconds(read.completion_us?);
            let service_s = seconds(read.service_us?);
            let submitted_s = seconds(read.submitted_us?);
            let target = group_of_key(&record.key, groups);
            let arrival_s = record.time_us as f64 / 1e6;
            Some(RequestRow {
                system: "store",
                id: index as u64,
                tier: ReadTier::Standard.name(),
                target,
                class: layout.classes.as_ref().map(|c| c[target as usize]),
                bytes: record.size_bytes,
                arrival_s,
                submitted_s: arrival_s + submitted_s,
                serve_s: arrival_s + completion_s - service_s,
                first_byte_s: arrival_s + first_byte_s,
                last_byte_s: arrival_s + completion_s,
            })
        })
        .collect()
}

async fn store_replay(
    data: &Path,
    (rack_toml, rack): (&str, &Rack),
    layout: &Layout,
    trace: &[TraceRecord],
    latency_seed: u64,
    (scale, time): (Scale, StoreTime),
) -> ExperimentResult<ReplayReport> {
    let scaled_bytes = (BLOB_BYTES as f64 * scale.bytes_factor()).round() as usize;
    let mut config = StoreConfig::new(
        RackSource::Preset(format!("{PRESET} without high-load mounts")),
        rack_toml.to_string(),
        scaled_layout(layout, scale),
    );
    config.fragment_bytes = FRAGMENT_BYTES;
    config.latency_seed = latency_seed;
    // The preload is not measured: it runs at time factor PRELOAD_TIME_FACTOR and the host's
    // speed, then the store is reopened at the replay's scale.
    config.time_factor = PRELOAD_TIME_FACTOR;
    let store = Store::init_sqlite(data, config.clone()).await?;
    preload(&store, trace, scaled_bytes, layout).await?;
    store.close().await;
    config.time_factor = scale.time_factor;
    config.disk_bandwidth_scale = Some(BANDWIDTH_SCALE);
    // The read path's IOs scaled as the blobs are (to one fragment here): at the rack's 512 KiB a
    // scaled blob would leave each disk in two IOs and reach the NIC in one burst, where the
    // rack streams it through.
    let batch_bytes = COLUMN_BATCH_BYTES as f64 * scale.bytes_factor();
    config.read_batch_bytes = (batch_bytes as u64).max(1);
    spinwise_store::config::write(data, &config)?;
    // Reopened, so the replay starts as the simulator does: every group resting, queues empty.
    let virtual_time = match time {
        StoreTime::Real => None,
        StoreTime::Virtual => Some(VirtualTime::start().map_err(crate::error::io_error(data))?),
    };
    let result = replay_reopened(data, rack, layout, trace, scale, virtual_time.clone()).await;
    if let Some(virtual_time) = virtual_time {
        virtual_time.stop();
    }
    result
}

/// Reopens the preloaded store in `data` — on the wall clock, or on `virtual_time` with its
/// emulated disks waiting on it too — and replays `trace`.
async fn replay_reopened(
    data: &Path,
    rack: &Rack,
    layout: &Layout,
    trace: &[TraceRecord],
    scale: Scale,
    virtual_time: Option<VirtualTime>,
) -> ExperimentResult<ReplayReport> {
    let (store, clock): (SqliteStore, Arc<dyn Clock>) = match virtual_time {
        None => (
            Store::open_sqlite(data).await?,
            Arc::new(SystemClock::new()),
        ),
        Some(virtual_time) => {
            let config = spinwise_store::config::read(data)?;
            let disks = (0..rack.disk_count())
                .map(|index| {
                    let mut disk = emulated_config(data, rack, &config, index);
                    disk.timeline = Some(virtual_time.timeline());
                    EmulatedDisk::open(disk).map(|disk| Arc::new(disk) as Arc<dyn Disk>)
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(StoreError::from)?;
            let catalog = SqliteCatalog::open_existing(&data.join(CATALOG_FILE))
                .await
                .map_err(StoreError::from)?;
            let clock: Arc<dyn Clock> = Arc::new(virtual_time);
            let environment = Environment::Given {
                disks,
                clock: clock.clone(),
                // Real files on the host: their fsyncs are only performed.
                host_files: HostFiles::default(),
            };
            let store = Store::open_in(data, catalog, environment).await?;
            (store, clock)
        }
    };
    let store = Arc::new(store);
    let (nics, nic_of_group) = store_nics(rack, layout, scale)?;
    let groups = layout.groups.len() as u32;
    let reads: Vec<ReplayRead> = trace
        .iter()
        .map(|record| ReplayRead {
            key: record.key.clone(),
            arrival_us: scale.to_store_us(record.time_us),
            nic: nic_of_group
                .as_ref()
                .map(|nics| nics[group_of_key(&record.key, groups) as usize]),
        })
        .collect();
    let report = replay(store.clone(), &reads, nics, clock)
        .await
        .map_err(|error| ExperimentError::Invalid(error.to_string()))?;
    if let Ok(store) = Arc::try_unwrap(store) {
        store.close().await;
    }
    Ok(report)
}

/// The store's NICs, one per server of the rack at its share of the network × β, and the one
/// each group's reads leave by (the simulator's choice); none for an unbounded network.
fn store_nics(
    rack: &Rack,
    layout: &Layout,
    scale: Scale,
) -> ExperimentResult<(Vec<Nic>, Option<Vec<usize>>)> {
    let Some(gbps) = scale.network_gbps else {
        return Ok((Vec::new(), None));
    };
    let servers = rack.servers().count;
    let nic_of_group = layout
        .group_read_servers(rack)
        .map_err(|bind| ExperimentError::Sim {
            rack: rack.name.clone(),
            source: bind.into(),
        })?;
    let bytes_per_s = gbps * 1e9 / 8.0 / servers as f64 * BANDWIDTH_SCALE;
    let nics = (0..servers).map(|_| Nic::new(bytes_per_s)).collect();
    Ok((nics, Some(nic_of_group)))
}

/// Stores every key of the trace with `bytes` pseudo-random bytes and migrates each alone into
/// the group its key hashes to.
async fn preload(
    store: &SqliteStore,
    trace: &[TraceRecord],
    bytes: usize,
    layout: &Layout,
) -> ExperimentResult<()> {
    // The content is never compared, only read; one stream for every run.
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut content = vec![0u8; bytes];
    let groups = layout.groups.len() as u32;
    // Staged in group order, so the flush (which migrates placed objects in log order) spins
    // each group up once instead of hopping between groups.
    let mut records: Vec<&TraceRecord> = trace.iter().collect();
    records.sort_by_key(|record| (group_of_key(&record.key, groups), record.time_us));
    for record in records {
        rng.fill_bytes(&mut content);
        store.put(&record.key, content.as_slice()).await?;
    }
    store
        .flush_placed(|object| Some(group_of_key(&object.key, groups)), |_| {})
        .await?;
    Ok(())
}

/// The store's replay in the rack's units: times ÷ f, bytes ÷ f·β.
fn store_row(report: &ReplayReport, requests: u64, seed: u64, scale: Scale) -> Row {
    let to_rack_us = |us: u64| scale.to_rack_us(us);
    let mut ttfb = Vec::new();
    let mut completion = Vec::new();
    let mut service = Vec::new();
    let mut last_byte_us = 0;
    let mut delivered_bytes = 0.0;
    for read in &report.reads {
        if let (Some(first), Some(done)) = (read.first_byte_us, read.completion_us) {
            ttfb.push(to_rack_us(first));
            completion.push(to_rack_us(done));
            delivered_bytes += read.bytes as f64 / scale.bytes_factor();
        }
        if let Some(service_us) = read.service_us {
            service.push(to_rack_us(service_us));
        }
        if let Some(at) = read.last_byte_at_us {
            last_byte_us = last_byte_us.max(to_rack_us(at));
        }
    }
    let completed = completion.len() as u64;
    let ttfb = Summary::of_us(&mut ttfb);
    let completion = Summary::of_us(&mut completion);
    let service = Summary::of_us(&mut service);
    let drained_s = last_byte_us as f64 / 1e6;
    Row {
        system: "store",
        burst_requests: requests,
        seed,
        time_factor: scale.time_factor,
        bandwidth_scale: BANDWIDTH_SCALE,
        network_gbps: scale.network_gbps,
        stagger_switches_min_queue: None,
        requests,
        completed,
        rejected: report.reads.iter().filter(|r| r.rejected).count() as u64,
        errors: report.reads.iter().filter(|r| r.error.is_some()).count() as u64,
        throughput_gbps: gbps(delivered_bytes, drained_s),
        drained_s,
        ttfb_mean_s: ttfb.mean,
        ttfb_p50_s: ttfb.p50,
        ttfb_p99_s: ttfb.p99,
        ttfb_max_s: ttfb.max,
        completion_mean_s: completion.mean,
        completion_p50_s: completion.p50,
        completion_p99_s: completion.p99,
        completion_max_s: completion.max,
        service_mean_s: service.mean,
        service_p50_s: service.p50,
        service_p99_s: service.p99,
        service_max_s: service.max,
        spin_ups: report.spin_ups,
    }
}

/// A system's median over its runs per b, with min–max whiskers when it ran more than once.
fn series(rows: &[Row], system: &'static str, y: fn(&Row) -> f64) -> Series {
    let mut bursts: Vec<u64> = rows.iter().map(|r| r.burst_requests).collect();
    bursts.dedup();
    let points = bursts
        .into_iter()
        .filter_map(|requests| {
            let spread = Spread::of(rows, system, requests, y)?;
            let mut point = LinePoint::new(requests as f64, spread.median);
            if spread.runs > 1 {
                point.error = Some((spread.min, spread.max));
            }
            Some(point)
        })
        .collect();
    // The median, whiskers at min and max (the summary says so).
    let name = match runs_per_burst(rows, system) {
        1 => system.to_string(),
        runs if system == "simulator" => format!("simulator, {runs} seeds"),
        runs => format!("{system}, {runs} runs"),
    };
    Series {
        name,
        style: SeriesStyle::LineWithMarkers,
        points,
    }
}

/// One metric of one system's runs of one burst: median, min and max over its seeds.
#[derive(Clone, Copy, Debug)]
struct Spread {
    runs: usize,
    median: f64,
    min: f64,
    max: f64,
}

impl Spread {
    fn of(rows: &[Row], system: &str, requests: u64, y: fn(&Row) -> f64) -> Option<Spread> {
        let mut values: Vec<f64> = rows
            .iter()
            .filter(|r| r.system == system && r.burst_requests == requests)
            .map(y)
            .collect();
        values.sort_by(f64::total_cmp);
        let runs = values.len();
        let middle = runs.checked_sub(1)? / 2;
        let median = if runs % 2 == 1 {
            values[middle]
        } else {
            (values[middle] + values[middle + 1]) / 2.0
        };
        Some(Spread {
            runs,
            median,
            min: values[0],
            max: values[runs - 1],
        })
    }

    fn contains(self, value: f64) -> bool {
        (self.min..=self.max).contains(&value)
    }
}

fn figures(rows: &[Row]) -> Vec<Figure> {
    let chart = |title: &str, y_label: &str, y_scale: YScale, y: fn(&Row) -> f64| LineChart {
        title: title.into(),
        x_label: "requests in the 60 s burst (b)".into(),
        y_label: y_label.into(),
        y_scale,
        series: ["simulator", STORE, STORE_VIRTUAL]
            .into_iter()
            .filter(|system| rows.iter().any(|r| r.system == *system))
            .map(|system| series(rows, system, y))
            .collect(),
    };
    vec![
        Figure {
            stem: "throughput",
            chart: chart(
                "Fig. 4(a): mean throughput, simulator vs store",
                "throughput (Gbps)",
                YScale::Linear,
                |r| r.throughput_gbps,
            ),
        },
        Figure {
            stem: "completion_time",
            chart: chart(
                "Fig. 4(b): mean completion time, simulator vs store",
                "completion time (s)",
                YScale::Log,
                |r| r.completion_mean_s,
            ),
        },
        Figure {
            stem: "time_to_first_byte",
            chart: chart(
                "Fig. 4(c): mean time to first byte, simulator vs store",
                "time to first byte (s)",
                YScale::Log,
                |r| r.ttfb_mean_s,
            ),
        },
        Figure {
            stem: "service_time",
            chart: chart(
                "Fig. 4(d): mean service time, simulator vs store",
                "service time (s)",
                YScale::Linear,
                |r| r.service_mean_s,
            ),
        },
    ]
}

/// How many runs of each burst `system` made (the first burst's count; every burst has as many).
fn runs_per_burst(rows: &[Row], system: &str) -> usize {
    let Some(first) = rows.iter().find(|r| r.system == system) else {
        return 0;
    };
    rows.iter()
        .filter(|r| r.system == system && r.burst_requests == first.burst_requests)
        .count()
}

/// Counts of store values inside the simulator's range: (inside, compared).
#[derive(Default)]
struct Inside {
    medians: (usize, usize),
    runs: (usize, usize),
}

impl Inside {
    fn count(tally: &mut (usize, usize), inside: bool) {
        tally.0 += usize::from(inside);
        tally.1 += 1;
    }
}

/// One summary cell: the simulator's median [min–max] / the store's (`system`'s) run, or its
/// median [min–max] over several, with the store's difference from the simulator's median; †
/// when the store's median lies outside the simulator's range.
fn cell(
    rows: &[Row],
    (requests, system): (u64, &str),
    y: fn(&Row) -> f64,
    inside: &mut Inside,
) -> String {
    let (Some(sim), Some(store)) = (
        Spread::of(rows, "simulator", requests, y),
        Spread::of(rows, system, requests, y),
    ) else {
        return "—".to_string();
    };
    let median_inside = sim.contains(store.median);
    Inside::count(&mut inside.medians, median_inside);
    for run in rows
        .iter()
        .filter(|r| r.system == system && r.burst_requests == requests)
    {
        Inside::count(&mut inside.runs, sim.contains(y(run)));
    }
    let store_text = if store.runs == 1 {
        format!("{:.2}", store.median)
    } else {
        format!("{:.2} [{:.2}–{:.2}]", store.median, store.min, store.max)
    };
    format!(
        "{:.2} [{:.2}–{:.2}] / {store_text} ({:+.0}%){}",
        sim.median,
        sim.min,
        sim.max,
        relative(store.median, sim.median) * 100.0,
        if median_inside { "" } else { " \u{2020}" }
    )
}

fn summary(rows: &[Row], bursts: &[u64], scale: Scale) -> String {
    let mut text = format!(
        "# Pelican Fig. 4: the simulator cross-validated against the store\n\n\
         Rack `{PRESET}` (without the simulator's assumed high-load mount stragglers), its planned \
         layout, Pelican's scheduler{}, {}. Each burst of b reads of 1 GB blobs, uniform \
         over 60 s, replayed by the simulator and by the store (the real-clock driver over \
         emulated disks), the store in scaled time (latencies × {}, disk and NIC bandwidth × \
         {BANDWIDTH_SCALE}, blobs and u × {}) and converted back to the rack's seconds and bytes. \
         Every number below is computed from `results.csv`; the `store` rows are wall-clock \
         measurements on this host, the `store-virtual` rows the same store on virtual time. Paper (Pelican §4.4, Fig. 4): \"the simulator accurately \
         captures the performance of the real hardware for all the considered metrics\".\n\n",
        rows.first()
            .and_then(|row| row.stagger_switches_min_queue)
            .map_or(String::new(), |depth| format!(
                " with staggered switches from {depth} queued reads (not in Pelican: a class \
                 waits for a class sharing its NIC to finish switching; both systems)"
            )),
        scale
            .network_gbps
            .map_or("no NIC limit".to_string(), |gbps| format!(
                "a {} Gbps network (split over the rack's servers as the simulator splits it)",
                rate(gbps)
            )),
        rate(scale.time_factor),
        rate(scale.bytes_factor())
    );
    // Both clocks make as many runs; one may be left out (`--store-clock`).
    let store_runs = STORE_SYSTEMS
        .iter()
        .map(|system| runs_per_burst(rows, system))
        .max()
        .unwrap_or(0);
    text.push_str(&if store_runs == 1 {
        format!(
            "Each cell: the simulator's median over {SIMULATOR_SEEDS} seeds [its min–max] / the \
             store's run (its difference from the simulator's median). The seeds replay the same \
             trace with other latency draws; **\u{2020}** marks a store value outside the \
             simulator's range.\n\n"
        )
    } else {
        format!(
            "Each cell: the simulator's median over {SIMULATOR_SEEDS} seeds [its min–max] / the \
             store's median over {store_runs} runs [their min–max] (its difference from the \
             simulator's median). The simulator's seeds replay the same trace with other latency \
             draws, and so do the store's runs (each with its emulated disks on another latency \
             seed); **\u{2020}** marks a store median outside the simulator's range.\n\n"
        )
    });
    text.push_str(
        "The store runs on the wall clock (`store`, its emulated disks sleeping their scaled \
         latencies), and on discrete-event virtual time (`store-virtual`: the same store, \
         driver, read path and disks, every wait on a virtual clock that moves only when nothing \
         in the process can run, so the host's speed does not count and the run is the same \
         every time); `--store-clock` picks one.\n\n",
    );
    for system in STORE_SYSTEMS
        .into_iter()
        .filter(|system| rows.iter().any(|r| r.system == *system))
    {
        let (table, medians_inside) = store_table(rows, bursts, system);
        text.push_str(&format!("**{system}**\n\n{table}\n"));
        let (inside, means) = medians_inside.medians;
        let (who, whose_median) = match system {
            STORE => ("The store", "The store's median"),
            _ => (
                "The store on virtual time",
                "The median of the store on virtual time",
            ),
        };
        if store_runs == 1 {
            text.push_str(&format!(
                "{who} falls inside the simulator's range on {inside} of {means} means.\n\n"
            ));
        } else {
            let (runs_inside, runs) = medians_inside.runs;
            text.push_str(&format!(
                "{whose_median} falls inside the simulator's range on {inside} of {means} \
                 means, and its single runs on {runs_inside} of {runs}.\n\n"
            ));
        }
    }
    let both = STORE_SYSTEMS
        .iter()
        .all(|system| rows.iter().any(|r| r.system == *system));
    if both {
        text.push_str(&virtual_against_real(rows, bursts));
    }
    text
}

/// The summary's table of one store system against the simulator, and its count of values
/// inside the simulator's range.
fn store_table(rows: &[Row], bursts: &[u64], system: &str) -> (String, Inside) {
    let mut text = String::from(
        "| b | throughput (Gbps) | completion mean (s) | ttfb mean (s) | service mean (s) | spin-ups | store rejected, errors |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let mut inside = Inside::default();
    for &requests in bursts {
        let stored: Vec<&Row> = rows
            .iter()
            .filter(|r| r.system == system && r.burst_requests == requests)
            .collect();
        if stored.is_empty() {
            continue;
        }
        let at = (requests, system);
        let throughput = cell(rows, at, |r| r.throughput_gbps, &mut inside);
        let completion = cell(rows, at, |r| r.completion_mean_s, &mut inside);
        let ttfb = cell(rows, at, |r| r.ttfb_mean_s, &mut inside);
        let service = cell(rows, at, |r| r.service_mean_s, &mut inside);
        let spin_ups = |system| Spread::of(rows, system, requests, |r| r.spin_ups as f64);
        let spin_ups = match (spin_ups("simulator"), spin_ups(system)) {
            (Some(sim), Some(store)) if store.runs == 1 => {
                format!("{:.0}–{:.0} / {:.0}", sim.min, sim.max, store.median)
            }
            (Some(sim), Some(store)) => format!(
                "{:.0}–{:.0} / {:.0}–{:.0}",
                sim.min, sim.max, store.min, store.max
            ),
            _ => "—".to_string(),
        };
        let rejected: u64 = stored.iter().map(|r| r.rejected).sum();
        let errors: u64 = stored.iter().map(|r| r.errors).sum();
        text.push_str(&format!(
            "| {requests} | {throughput} | {completion} | {ttfb} | {service} | {spin_ups} | {rejected}, {errors} |\n",
        ));
    }
    (text, inside)
}

/// The store on virtual time against the store on the wall clock: the difference of their
/// medians on each compared mean, per burst.
fn virtual_against_real(rows: &[Row], bursts: &[u64]) -> String {
    let mut text = String::from(
        "The store on virtual time against the store in real time (median ÷ median − 1):\n\n\
         | b | throughput | completion mean | ttfb mean | service mean |\n\
         |---|---|---|---|---|\n",
    );
    let metrics: [fn(&Row) -> f64; 4] = [
        |r| r.throughput_gbps,
        |r| r.completion_mean_s,
        |r| r.ttfb_mean_s,
        |r| r.service_mean_s,
    ];
    for &requests in bursts {
        let cells: Option<Vec<String>> = metrics
            .iter()
            .map(|y| {
                let real = Spread::of(rows, STORE, requests, *y)?;
                let virtual_ = Spread::of(rows, STORE_VIRTUAL, requests, *y)?;
                Some(format!(
                    "{:+.1}%",
                    relative(virtual_.median, real.median) * 100.0
                ))
            })
            .collect();
        if let Some(cells) = cells {
            text.push_str(&format!("| {requests} | {} |\n", cells.join(" | ")));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of `system` for burst 60 whose four compared means are all `value`.
    fn row_of(system: &'static str, seed: u64, value: f64) -> Row {
        Row {
            system,
            burst_requests: 60,
            seed,
            time_factor: 1.0,
            bandwidth_scale: 1.0,
            network_gbps: Some(8.5),
            stagger_switches_min_queue: None,
            requests: 60,
            completed: 60,
            rejected: 0,
            errors: 0,
            throughput_gbps: value,
            drained_s: 100.0,
            ttfb_mean_s: value,
            ttfb_p50_s: value,
            ttfb_p99_s: value,
            ttfb_max_s: value,
            completion_mean_s: value,
            completion_p50_s: value,
            completion_p99_s: value,
            completion_max_s: value,
            service_mean_s: value,
            service_p50_s: value,
            service_p99_s: value,
            service_max_s: value,
            spin_ups: 36,
        }
    }

    fn summary_of(store_values: &[f64]) -> String {
        let mut rows: Vec<Row> = (0..5)
            .map(|seed| row_of("simulator", seed, 1.0 + seed as f64 * 0.1))
            .collect();
        for (run, value) in store_values.iter().enumerate() {
            rows.push(row_of("store", run as u64, *value));
        }
        let scale = Scale {
            time_factor: 0.05,
            network_gbps: Some(8.5),
        };
        summary(&rows, &[60], scale)
    }

    #[test]
    fn one_store_run_is_set_against_the_simulators_median_and_marked_when_outside_its_range() {
        let inside = summary_of(&[1.3]);
        assert!(
            inside.contains("1.20 [1.00–1.40] / 1.30 (+8%) |"),
            "{inside}"
        );
        assert!(inside.contains("inside the simulator's range on 4 of 4 means."));
        let outside = summary_of(&[1.5]);
        assert!(outside.contains("/ 1.50 (+25%) \u{2020}"), "{outside}");
        assert!(outside.contains("on 0 of 4 means."), "{outside}");
    }

    #[test]
    fn several_store_runs_give_their_median_and_range_and_count_runs_inside_apart() {
        let text = summary_of(&[1.1, 1.3, 1.6]);
        assert!(text.contains("the store's median over 3 runs"), "{text}");
        assert!(
            text.contains("1.20 [1.00–1.40] / 1.30 [1.10–1.60] (+8%) |"),
            "{text}"
        );
        assert!(
            text.contains("on 4 of 4 means, and its single runs on 8 of 12."),
            "{text}"
        );
        assert!(text.contains("| 36–36 / 36–36 |"), "{text}");
    }
}
