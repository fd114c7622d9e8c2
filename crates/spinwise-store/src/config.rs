//! The data directory's configuration: `DATA/store.toml` (rack source and its TOML copied in,
//! time factor, optional disk bandwidth scale, bundle and fragment sizes, staging limits) and
//! `DATA/layout.json` (the layout the CLI planned or was given; the store never plans). Written
//! once by `init`, atomically (temporary file, fsync, rename, fsync of the directory),
//! `store.toml` last, so a directory with `store.toml` always has its layout. The `[upkeep]`
//! section (scrub policy) and the `disk_bandwidth_scale`, `read_batch_bytes`, `read_columns` and
//! `latency_seed` keys are optional: stores written before they existed load with the upkeep
//! defaults, unthrottled disks, the default read IO size, least-busy column choice and latency
//! seed 0. So is the `[tail_cache]` section ([`TailCacheConfig`]): absent, a store gets the
//! default cache (64 MiB of RAM, no flash directory).

use crate::durable::HostFiles;
use crate::error::{StoreError, StoreResult, io_error};
use crate::staging::StagingConfig;
pub use crate::tail_cache::TailCacheConfig;
use serde::{Deserialize, Serialize};
pub use spinwise_engine::PolicyChoice;
use spinwise_model::{Layout, Rack, parse_rack};
pub use spinwise_sched::idle::{DEFAULT_IDLE_SPIN_DOWN_S, idle_spin_down_us};
use std::path::{Path, PathBuf};

const STORE_FORMAT: &str = "spinwise-store";
const STORE_VERSION: u32 = 1;
pub const STORE_FILE: &str = "store.toml";
pub const LAYOUT_FILE: &str = "layout.json";
pub const STAGING_DIR: &str = "staging";
/// Each emulated disk's capacity: the rack model's mean (the emulation accounts bytes; the host
/// filesystem only needs room for what is really stored). The disks are created with it and
/// the placer's space books count against it.
pub fn disk_capacity_bytes(rack: &Rack) -> u64 {
    (rack.disk_model.capacity_tb.mean() * 1e12) as u64
}

/// The longest interval any setting in seconds takes (100 years): a longer one means "never"
/// in practice, and turning it into a `Duration` or into milliseconds overflowed (an upkeep
/// task panicked on `scrub_min_spin_up_interval_s = 1e300` and `store upkeep` still exited 0,
/// found 2026-12-01).
pub const MAX_SETTING_S: f64 = 100.0 * 365.25 * 86_400.0;

/// The largest `time_factor` (the emulated disks' limit).
pub use spinwise_disk::timing::MAX_TIME_FACTOR;

/// Whether `seconds` is a number of seconds from 0 to [`MAX_SETTING_S`] (`positive`: above 0).
pub fn seconds_in_range(seconds: f64, positive: bool) -> bool {
    seconds.is_finite()
        && seconds <= MAX_SETTING_S
        && (seconds > 0.0 || !positive && seconds == 0.0)
}

/// The smallest `disk_bandwidth_scale`: a 250 MB/s disk then moves 25 KB/s. Below it an
/// emulation does not finish in any useful time (at 1e-9 a flush of a few KiB never ended,
/// found 2026-12-01).
pub const MIN_DISK_BANDWIDTH_SCALE: f64 = 1e-4;

/// The smallest `fragment_bytes` (a page): every fragment carries its own crc32c and is its
/// own write, so 1-byte fragments made a small flush crawl (found 2026-12-01).
pub const MIN_FRAGMENT_BYTES: u32 = 4096;

/// The largest `read_batch_bytes`: a migrated read holds up to three batches per data column,
/// so a 15+3 GET could hold ~360 MiB at this size (~27 MiB at the default).
pub const MAX_READ_BATCH_BYTES: u64 = 8 << 20;

/// Where the rack description came from (recorded for people; the TOML itself is copied in).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RackSource {
    Preset(String),
    File(PathBuf),
}

/// Which k columns of a blob a migrated read takes (`read_columns` in store.toml).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadColumns {
    /// The k whose disks have the fewest reads of this store in progress (disks not spun up
    /// never, while k others can serve), data columns first on a tie; a parity column standing
    /// in costs a decode of the stripe (docs/store.md, "Read path").
    #[default]
    LeastBusy,
    /// The data columns, always.
    Data,
}

impl ReadColumns {
    fn is_default(&self) -> bool {
        *self == ReadColumns::default()
    }
}

/// Everything `init` fixes for a data directory.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreConfig {
    pub rack_source: RackSource,
    /// The rack TOML, verbatim.
    pub rack_toml: String,
    pub layout: Layout,
    /// Multiplies the rack's spin-up and mount latencies on emulated disks (1.0 = real time).
    pub time_factor: f64,
    /// `None` (the default): emulated disks read and write at the host's speed. `Some(s)`: each
    /// emulated disk's reads and writes together are throttled to the rack's
    /// `disk.bandwidth_mb_per_s` × 10⁶ × `s` bytes/s (not scaled by `time_factor`).
    ///
    /// Why: at host speed a transfer takes however long the host's filesystem takes, so the
    /// ratio of transfer time to spin-up time is arbitrary. Throttled, each disk moves bytes at
    /// the rack's rate times `s`, so with blob sizes multiplied by `time_factor` × `s` an
    /// emulation keeps the rack's transfer:switch ratios while its switches are scaled by
    /// `time_factor`; `s` < 1 brings the rack's aggregate bandwidth down to what one host can
    /// sustain. That is what cross-validation needs (the simulator and the store replaying the
    /// same trace, Pelican §4.4). docs/store.md has the rule and how reads differ.
    pub disk_bandwidth_scale: Option<f64>,
    /// Bytes a migrated read's column thread reads from its disk per IO (at least one fragment;
    /// default [`COLUMN_BATCH_BYTES`], at most [`MAX_READ_BATCH_BYTES`]).
    ///
    /// Why a setting: an emulation that scales blobs down (`disk_bandwidth_scale`) should scale
    /// its IOs too, or a scaled blob is read in one or two IOs per disk and its bytes reach a
    /// slower consumer in one burst instead of streaming through it (`experiment pelican-fig4`
    /// sets one fragment per IO).
    pub read_batch_bytes: u64,
    /// Which k of a blob's k + r columns a migrated read of at least
    /// [`crate::columns::MIN_SPREAD_STRIPES`] stripes takes (default: the least busy).
    ///
    /// Why a setting: `data` is the read path as it was (data columns only, never a decode
    /// unless a fragment is bad), kept so the two can be measured side by side
    /// (docs/BENCHMARKS.md, "Least-busy columns") and as the choice of an operator whose CPU,
    /// not disks, is short.
    pub read_columns: ReadColumns,
    /// Seeds the emulated disks' spin-up, mount and unmount latency draws (default 0): disk i
    /// draws from the stream `latency_seed.rotate_left(32) ^ i`, so 0 keeps every store written
    /// before the key existed on its draws, and another seed gives every disk other ones.
    ///
    /// Why a setting: one emulated run is one draw of those latencies, and a few seconds'
    /// difference decides whether classes sharing a NIC stream together or apart
    /// (`experiment pelican-fig4 --store-runs N` replays each burst under N seeds, as the
    /// simulator does under its own).
    pub latency_seed: u64,
    /// Staged objects are packed into bundles of this size (default 1 GiB).
    pub bundle_bytes: u64,
    /// Erasure-coding fragment size (default 128 KiB).
    pub fragment_bytes: u32,
    pub staging: StagingConfig,
    /// More staging devices after `DATA/staging`: Gecko's chained log (`[staging] chain` in
    /// store.toml, absent when empty; relative paths are in the data directory). PUTs append
    /// on one device (the tail), which moves on to the next once its share of
    /// `staging.limit_bytes` is full; the warm collector empties the device after the tail
    /// first (docs/store.md, "A chain of staging devices"). Fixed at `init`: a segment's device
    /// is its id modulo the chain's length.
    pub staging_chain: Vec<PathBuf>,
    /// Scrub policy for the upkeep task (`[upkeep]` in store.toml; defaults when absent).
    pub upkeep: UpkeepConfig,
    /// The warm tier's capacity and what happens when it fills (`[warm]` in store.toml;
    /// defaults when absent).
    pub warm: WarmConfig,
    /// Idle spin-down: a group with no work for this many seconds of the driver's (real) clock
    /// spins down (`None`: never; `idle_spin_down_s` in store.toml, 0 there for never, absent
    /// for the default, spinwise-sched's `DEFAULT_IDLE_SPIN_DOWN_S`). Not scaled by
    /// `time_factor`: an operator's idle time is wall time, and the test suites' fast stores
    /// (time factor 0.001) would otherwise spin groups down 120 ms after each job. To keep the
    /// rack's ratio of idle time to spin-up time in a scaled emulation (as the simulator at rack
    /// time has it), give the rack's idle time × `time_factor`. `spinwise serve
    /// --idle-spin-down-s` overrides it for one run.
    pub idle_spin_down_s: Option<f64>,
    /// The scheduling policy the rack engine runs (`policy` in store.toml: `pelican`, the
    /// default, `flamingo` or `fp`), as the simulator's `--policy` runs it: the store runs every
    /// group-based policy the simulator does. FP belongs on a rack whose budgets allow every
    /// disk up at once; elsewhere the budget audit withholds the disks that would break them.
    pub policy: PolicyChoice,
    /// The tail cache: recently written objects served from RAM and an optional flash
    /// directory (`[tail_cache]` in store.toml; defaults when absent; docs/store.md, "Tail
    /// cache").
    pub tail_cache: TailCacheConfig,
}

impl StoreConfig {
    /// A configuration with the default sizes and limits.
    pub fn new(rack_source: RackSource, rack_toml: String, layout: Layout) -> StoreConfig {
        StoreConfig {
            rack_source,
            rack_toml,
            layout,
            time_factor: 1.0,
            disk_bandwidth_scale: None,
            read_batch_bytes: COLUMN_BATCH_BYTES,
            read_columns: ReadColumns::default(),
            latency_seed: 0,
            bundle_bytes: 1 << 30,
            fragment_bytes: 128 << 10,
            staging: StagingConfig::default(),
            staging_chain: Vec::new(),
            upkeep: UpkeepConfig::default(),
            warm: WarmConfig::default(),
            idle_spin_down_s: Some(DEFAULT_IDLE_SPIN_DOWN_S),
            policy: PolicyChoice::Pelican,
            tail_cache: TailCacheConfig::default(),
        }
    }

    /// The staging log's devices: `DATA/staging`, then `staging_chain` (relative paths in
    /// `data_dir`).
    pub fn staging_devices(&self, data_dir: &Path) -> Vec<PathBuf> {
        std::iter::once(data_dir.join(STAGING_DIR))
            .chain(
                self.staging_chain
                    .iter()
                    .map(|device| data_dir.join(device)),
            )
            .collect()
    }

    /// The warm tier's capacity in bytes: [`WarmConfig::capacity_bytes`], or half the staging
    /// limit when unset (the other half stays for cold objects waiting to migrate).
    pub fn warm_capacity_bytes(&self) -> u64 {
        self.warm
            .capacity_bytes
            .unwrap_or(self.staging.limit_bytes / 2)
    }

    /// The idle spin-down time the driver is given, µs (`None`: never).
    pub fn idle_spin_down_us(&self) -> Option<u64> {
        idle_spin_down_us(self.idle_spin_down_s)
    }

    /// The rate each emulated disk is throttled to, bytes/s: `rack.disk_model.bandwidth_mb_per_s`
    /// × 10⁶ × [`StoreConfig::disk_bandwidth_scale`]; `None` when unthrottled.
    pub fn disk_throttle_bytes_per_s(&self, rack: &Rack) -> Option<f64> {
        self.disk_bandwidth_scale
            .map(|scale| rack.disk_model.bandwidth_mb_per_s * 1e6 * scale)
    }
}

/// `store.toml` as written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    format: String,
    version: u32,
    time_factor: f64,
    /// Absent when `None`, and in stores written before it existed (unthrottled disks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    disk_bandwidth_scale: Option<f64>,
    /// Absent when the default, and in stores written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    read_batch_bytes: Option<u64>,
    /// Absent when the default, and in stores written before it existed.
    #[serde(default, skip_serializing_if = "ReadColumns::is_default")]
    read_columns: ReadColumns,
    /// Absent when 0, and in stores written before it existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    latency_seed: u64,
    bundle_bytes: u64,
    fragment_bytes: u32,
    staging: StagingSection,
    /// Absent in stores written before upkeep existed: the defaults apply.
    #[serde(default)]
    upkeep: UpkeepConfig,
    /// Absent in stores written before the warm tier existed, and when the default.
    #[serde(default, skip_serializing_if = "WarmConfig::is_default")]
    warm: WarmConfig,
    /// Seconds, 0 for never; absent when the default, and in stores written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idle_spin_down_s: Option<f64>,
    /// `pelican`, `flamingo` or `fp`; absent for Pelican's, and in stores written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    policy: Option<String>,
    /// Absent when the default, and in stores written before the cache existed.
    #[serde(default, skip_serializing_if = "TailCacheConfig::is_default")]
    tail_cache: TailCacheConfig,
    rack: RackSection,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StagingSection {
    segment_bytes: u64,
    chunk_bytes: u32,
    limit_bytes: u64,
    /// Absent when empty, and in stores written before chains existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    chain: Vec<PathBuf>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RackSection {
    source: RackSource,
    toml: String,
}

fn config_error(path: &Path, message: impl Into<String>) -> StoreError {
    StoreError::Config {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// Checks sizes and that the rack parses and the layout belongs to it; returns the rack.
pub fn validate(config: &StoreConfig, path: &Path) -> StoreResult<Rack> {
    if !(config.time_factor.is_finite()
        && config.time_factor > 0.0
        && config.time_factor <= MAX_TIME_FACTOR)
    {
        return Err(config_error(
            path,
            format!(
                "time_factor must be a positive number up to {MAX_TIME_FACTOR}, got {}",
                config.time_factor
            ),
        ));
    }
    if let Some(scale) = config.disk_bandwidth_scale
        && !(scale.is_finite() && scale >= MIN_DISK_BANDWIDTH_SCALE)
    {
        return Err(config_error(
            path,
            format!(
                "disk_bandwidth_scale must be a number of at least {MIN_DISK_BANDWIDTH_SCALE} (or absent for unthrottled disks), got {scale}"
            ),
        ));
    }
    if !(1..=MAX_READ_BATCH_BYTES).contains(&config.read_batch_bytes) {
        return Err(config_error(
            path,
            format!(
                "read_batch_bytes must be from 1 to {MAX_READ_BATCH_BYTES}, got {}",
                config.read_batch_bytes
            ),
        ));
    }
    if config.bundle_bytes == 0 {
        return Err(config_error(path, "bundle_bytes must be positive"));
    }
    if config.fragment_bytes < MIN_FRAGMENT_BYTES {
        return Err(config_error(
            path,
            format!(
                "fragment_bytes must be at least {MIN_FRAGMENT_BYTES}, got {}",
                config.fragment_bytes
            ),
        ));
    }
    validate_upkeep(&config.upkeep).map_err(|message| config_error(path, message))?;
    config
        .warm
        .check()
        .map_err(|message| config_error(path, message))?;
    check_chain(&config.staging_chain).map_err(|message| config_error(path, message))?;
    config
        .tail_cache
        .check()
        .map_err(|message| config_error(path, message))?;
    if config.warm_capacity_bytes() > config.staging.limit_bytes {
        return Err(config_error(
            path,
            format!(
                "warm.capacity_bytes {} is above staging.limit_bytes {}: the warm tier lives in \
                 the staging log",
                config.warm_capacity_bytes(),
                config.staging.limit_bytes
            ),
        ));
    }
    if let Some(seconds) = config.idle_spin_down_s
        && !seconds_in_range(seconds, true)
    {
        return Err(config_error(
            path,
            format!(
                "idle_spin_down_s must be a positive number of seconds up to {MAX_SETTING_S} (0: never), got {seconds}"
            ),
        ));
    }
    let rack = parse_rack(&format!("{} (rack)", path.display()), &config.rack_toml)
        .map_err(|e| config_error(path, e.to_string()))?;
    config
        .layout
        .check_rack(&rack)
        .map_err(|e| config_error(path, e.to_string()))?;
    // A finite positive scale can still overflow or underflow the rate; the disks would refuse
    // it at open, so refuse it here with the key's name.
    if let Some(rate) = config.disk_throttle_bytes_per_s(&rack)
        && !(rate.is_finite() && rate > 0.0)
    {
        return Err(config_error(
            path,
            format!(
                "disk_bandwidth_scale {} gives a disk rate of {rate} bytes/s, not a positive number",
                config.disk_bandwidth_scale.unwrap_or_default()
            ),
        ));
    }
    Ok(rack)
}

/// Writes `bytes` to `dir/name` atomically and durably.
fn write_atomic(dir: &Path, name: &str, bytes: &[u8], host: &HostFiles) -> StoreResult<()> {
    use std::io::Write;
    let path = dir.join(name);
    let temporary = dir.join(format!(".{name}.tmp"));
    let mut file = std::fs::File::create(&temporary).map_err(io_error(&temporary))?;
    host.created(&temporary);
    file.write_all(bytes).map_err(io_error(&temporary))?;
    // fsync-site: config-file
    host.sync_file("config-file", &file, &temporary)
        .map_err(io_error(&temporary))?;
    host.rename(&temporary, &path).map_err(io_error(&path))?;
    // fsync-site: config-renamed
    host.sync_directory("config-renamed", dir)
        .map_err(io_error(dir))?;
    Ok(())
}

/// Writes `layout.json` then `store.toml` into `data_dir` (which must exist).
pub fn write(data_dir: &Path, config: &StoreConfig) -> StoreResult<()> {
    write_in(data_dir, config, &HostFiles::default())
}

/// [`write`] with its fsyncs through `host` (a simulation's crash model).
pub fn write_in(data_dir: &Path, config: &StoreConfig, host: &HostFiles) -> StoreResult<()> {
    let file = StoreFile {
        format: STORE_FORMAT.into(),
        version: STORE_VERSION,
        time_factor: config.time_factor,
        disk_bandwidth_scale: config.disk_bandwidth_scale,
        read_batch_bytes: (config.read_batch_bytes != COLUMN_BATCH_BYTES)
            .then_some(config.read_batch_bytes),
        read_columns: config.read_columns,
        latency_seed: config.latency_seed,
        bundle_bytes: config.bundle_bytes,
        fragment_bytes: config.fragment_bytes,
        staging: StagingSection {
            segment_bytes: config.staging.segment_bytes,
            chunk_bytes: config.staging.chunk_bytes,
            limit_bytes: config.staging.limit_bytes,
            chain: config.staging_chain.clone(),
        },
        upkeep: config.upkeep.clone(),
        warm: config.warm.clone(),
        idle_spin_down_s: match config.idle_spin_down_s {
            Some(seconds) if seconds == DEFAULT_IDLE_SPIN_DOWN_S => None,
            Some(seconds) => Some(seconds),
            None => Some(0.0),
        },
        policy: (config.policy != PolicyChoice::Pelican).then(|| config.policy.name().into()),
        tail_cache: config.tail_cache.clone(),
        rack: RackSection {
            source: config.rack_source.clone(),
            toml: config.rack_toml.clone(),
        },
    };
    let text = toml::to_string(&file).map_err(|e| config_error(data_dir, e.to_string()))?;
    write_atomic(
        data_dir,
        LAYOUT_FILE,
        config.layout.to_json().as_bytes(),
        host,
    )?;
    write_atomic(data_dir, STORE_FILE, text.as_bytes(), host)
}

/// Reads `store.toml` and `layout.json` from `data_dir`.
pub fn read(data_dir: &Path) -> StoreResult<StoreConfig> {
    let store_path = data_dir.join(STORE_FILE);
    let text = match std::fs::read_to_string(&store_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(StoreError::NotInitialized {
                path: data_dir.display().to_string(),
            });
        }
        other => other.map_err(io_error(&store_path))?,
    };
    let file: StoreFile =
        toml::from_str(&text).map_err(|e| config_error(&store_path, e.to_string()))?;
    if file.format != STORE_FORMAT || file.version != STORE_VERSION {
        return Err(config_error(
            &store_path,
            format!(
                "format {} version {} is not {STORE_FORMAT} version {STORE_VERSION}",
                file.format, file.version
            ),
        ));
    }
    let policy = match file.policy.as_deref() {
        None => PolicyChoice::Pelican,
        Some(name) => PolicyChoice::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = PolicyChoice::ALL.iter().map(|c| c.name()).collect();
            config_error(
                &store_path,
                format!("policy `{name}` is not one of {}", names.join(", ")),
            )
        })?,
    };
    let layout_path = data_dir.join(LAYOUT_FILE);
    let layout_text = std::fs::read_to_string(&layout_path).map_err(io_error(&layout_path))?;
    let layout = Layout::from_json(&layout_path.display().to_string(), &layout_text)
        .map_err(|e| config_error(&layout_path, e.to_string()))?;
    Ok(StoreConfig {
        rack_source: file.rack.source,
        rack_toml: file.rack.toml,
        layout,
        time_factor: file.time_factor,
        disk_bandwidth_scale: file.disk_bandwidth_scale,
        read_batch_bytes: file.read_batch_bytes.unwrap_or(COLUMN_BATCH_BYTES),
        read_columns: file.read_columns,
        latency_seed: file.latency_seed,
        bundle_bytes: file.bundle_bytes,
        fragment_bytes: file.fragment_bytes,
        staging: StagingConfig {
            segment_bytes: file.staging.segment_bytes,
            chunk_bytes: file.staging.chunk_bytes,
            limit_bytes: file.staging.limit_bytes,
        },
        staging_chain: file.staging.chain,
        upkeep: file.upkeep,
        warm: file.warm,
        idle_spin_down_s: match file.idle_spin_down_s {
            None => Some(DEFAULT_IDLE_SPIN_DOWN_S),
            Some(seconds) => (seconds != 0.0).then_some(seconds),
        },
        policy,
        tail_cache: file.tail_cache,
    })
}

/// A column thread reads about this many bytes of consecutive fragments from its disk in one
/// IO (at least one fragment): large enough that a hard disk streams rather than seeks between
/// the columns' requests, small enough that k columns' read-ahead stays a few MiB per read.
/// The default of [`crate::StoreConfig::read_batch_bytes`].
pub const COLUMN_BATCH_BYTES: u64 = 512 << 10;

/// What a warm PUT meets when the warm tier holds its capacity (`warm.when_full`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmWhenFull {
    /// The PUT is accepted; upkeep then demotes the oldest warm objects (by write time: the
    /// store does not track reads) to cold until the tier is back under its capacity, and
    /// the migrator moves them to the groups. The tier may run over its capacity between a
    /// PUT and upkeep's next tick.
    #[default]
    DemoteOldest,
    /// The PUT is refused ([`crate::StoreError::WarmFull`]; S3 answers 503 SlowDown) while
    /// the tier holds its capacity or more; cold PUTs still go through. One PUT may take the
    /// tier past its capacity (its size is known only once written).
    Refuse,
}

/// The warm tier: objects written `Warm` stay in the staging log (docs/store.md, "Tiers"),
/// and its collector reclaims the dead records deletes and overwrites leave there
/// (crate::warm_gc; docs/store.md, "The warm tier's collector").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WarmConfig {
    /// Bytes of warm objects the tier keeps (`None`: half of `staging.limit_bytes`); at most
    /// the staging limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    /// What happens when it is reached.
    pub when_full: WarmWhenFull,
    /// How the collector shares the staging devices with PUTs and GETs: `semi-preemptive`
    /// (default) lets staging requests in flight go before each record it moves while free
    /// space is at or above `collect_hard_free_fraction`; `non-preemptive` moves a segment's
    /// records back to back.
    pub collection: CompactionMode,
    /// Where moved records go: `move-to-tail` (default) or `compact-in-body` (docs/store.md).
    pub collector: WarmCollector,
    /// A sealed warm segment is collected once its dead bytes reach this fraction of its
    /// length (default 0.5; in (0, 1]).
    pub collect_dead_fraction: f64,
    /// Below this free fraction of the staging limit the collector stops yielding (the
    /// slides' hard threshold; default 0.05, in [0, 1)).
    pub collect_hard_free_fraction: f64,
    /// The longest one record's move waits for staging requests, seconds (default 10): a
    /// steady stream of requests delays a collection, never starves it.
    pub collect_max_yield_s: f64,
}

impl Default for WarmConfig {
    fn default() -> WarmConfig {
        WarmConfig {
            capacity_bytes: None,
            when_full: WarmWhenFull::default(),
            collection: CompactionMode::SemiPreemptive,
            collector: WarmCollector::MoveToTail,
            collect_dead_fraction: 0.5,
            collect_hard_free_fraction: 0.05,
            collect_max_yield_s: 10.0,
        }
    }
}

impl WarmConfig {
    fn is_default(&self) -> bool {
        *self == WarmConfig::default()
    }

    /// Checks the collector's settings (the capacity is checked against the staging limit by
    /// the caller).
    pub fn check(&self) -> Result<(), String> {
        check_dead_fraction(self.collect_dead_fraction)
            .map_err(|message| format!("warm.collect_dead_fraction: {message}"))?;
        let fraction = self.collect_hard_free_fraction;
        if !(fraction.is_finite() && (0.0..1.0).contains(&fraction)) {
            return Err(format!(
                "warm.collect_hard_free_fraction must be a number in [0, 1), not {fraction}"
            ));
        }
        if !seconds_in_range(self.collect_max_yield_s, false) {
            return Err(format!(
                "warm.collect_max_yield_s must be a number of seconds from 0 to {MAX_SETTING_S}"
            ));
        }
        Ok(())
    }
}

/// [`WarmConfig::collector`]: where the warm collector writes the records it moves (Gecko's two
/// collectors). With one staging directory both append at the log's tail; with a chain of
/// devices (`staging.chain`), compact-in-body writes into a body device, neither the tail's
/// nor the head's, so the tail's sequential PUT stream never shares its device with the
/// collector's writes (on a chain of two there is no such device and it moves to the tail).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WarmCollector {
    #[default]
    MoveToTail,
    CompactInBody,
}

/// The scrub policy of the upkeep task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpkeepConfig {
    /// Every committed blob is verified at least this often (seconds; default 30 days). A group
    /// that is up anyway scrubs its blobs once half of this has passed.
    pub scrub_interval_s: f64,
    /// A group is spun up for scrub alone at most this often (seconds; default 1 day).
    pub scrub_min_spin_up_interval_s: f64,
    /// Stripe-stack bytes scrubbed per spin-up (default 4 GiB; at least one blob).
    pub scrub_bytes_per_spin_up: u64,
    /// Staged objects are migrated once the oldest has waited this long (seconds; default
    /// 1 hour), or as soon as staging holds a full bundle ([`crate::duties`]).
    pub migrate_after_s: f64,
    /// A blob is compacted when its dead bytes are at least this fraction of its size
    /// (default 0.5; in (0, 1]); a blob with nothing live is always removed.
    pub compact_dead_fraction: f64,
    /// Live bytes compaction copies per spin-up of a group up anyway (default 4 GiB; at least
    /// one blob).
    pub compact_bytes_per_spin_up: u64,
    /// How a blob's collection shares its group with reads (docs/store.md, "Compaction
    /// between reads"): `semi-preemptive` (default) copies the live objects in units of at most
    /// [`UpkeepConfig::compact_unit_bytes`] and lets reads waiting on the group's class go
    /// between units; `non-preemptive` copies a blob in one job, as Pelican's rebuild does.
    pub compaction: CompactionMode,
    /// Live bytes one unit of a semi-preemptive compaction copies (default 64 MiB; at least
    /// one object, so a larger object is a unit of its own). Each unit is a new blob.
    pub compact_unit_bytes: u64,
    /// Below this free fraction of its group (the fullest disk's), a compaction stops letting
    /// reads go between units (the slides' hard threshold; default 0.05, in [0, 1)).
    pub compact_hard_free_fraction: f64,
    /// The longest a unit waits for reads before it runs anyway, seconds (default 10): a
    /// steady stream of reads delays a collection, never starves it.
    pub compact_max_yield_s: f64,
}

/// [`UpkeepConfig::compaction`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompactionMode {
    NonPreemptive,
    #[default]
    SemiPreemptive,
}

impl CompactionMode {
    /// The GC policy's mode (spinwise-gc): the store asks the same policy the simulator does.
    pub fn gc_mode(self) -> spinwise_gc::GcMode {
        match self {
            CompactionMode::NonPreemptive => spinwise_gc::GcMode::NonPreemptive,
            CompactionMode::SemiPreemptive => spinwise_gc::GcMode::SemiPreemptive,
        }
    }
}

impl Default for UpkeepConfig {
    fn default() -> UpkeepConfig {
        UpkeepConfig {
            scrub_interval_s: 30.0 * 86_400.0,
            scrub_min_spin_up_interval_s: 86_400.0,
            scrub_bytes_per_spin_up: 4 << 30,
            migrate_after_s: 3600.0,
            compact_dead_fraction: 0.5,
            compact_bytes_per_spin_up: 4 << 30,
            compaction: CompactionMode::SemiPreemptive,
            compact_unit_bytes: 64 << 20,
            compact_hard_free_fraction: 0.05,
            compact_max_yield_s: 10.0,
        }
    }
}

/// Checks the policy: positive, finite intervals and a positive budget.
pub fn validate_upkeep(config: &UpkeepConfig) -> Result<(), String> {
    if !seconds_in_range(config.scrub_interval_s, true)
        || !seconds_in_range(config.scrub_min_spin_up_interval_s, true)
    {
        return Err(format!(
            "upkeep.scrub_interval_s and upkeep.scrub_min_spin_up_interval_s must be positive numbers of seconds up to {MAX_SETTING_S}"
        ));
    }
    if config.scrub_bytes_per_spin_up == 0 || config.compact_bytes_per_spin_up == 0 {
        return Err(
            "upkeep.scrub_bytes_per_spin_up and upkeep.compact_bytes_per_spin_up must be positive"
                .into(),
        );
    }
    if !seconds_in_range(config.migrate_after_s, false) {
        return Err(format!(
            "upkeep.migrate_after_s must be a number of seconds from 0 to {MAX_SETTING_S}"
        ));
    }
    check_dead_fraction(config.compact_dead_fraction)
        .map_err(|message| format!("upkeep.compact_dead_fraction: {message}"))?;
    if config.compact_unit_bytes == 0 {
        return Err("upkeep.compact_unit_bytes must be positive".into());
    }
    let fraction = config.compact_hard_free_fraction;
    if !(fraction.is_finite() && (0.0..1.0).contains(&fraction)) {
        return Err(format!(
            "upkeep.compact_hard_free_fraction must be a number in [0, 1), not {fraction}"
        ));
    }
    if !seconds_in_range(config.compact_max_yield_s, false) {
        return Err(format!(
            "upkeep.compact_max_yield_s must be a number of seconds from 0 to {MAX_SETTING_S}"
        ));
    }
    Ok(())
}

/// Chain devices: at most [`MAX_CHAIN_DEVICES`] more, none empty, none naming `staging`
/// itself, no two alike (as written: two spellings of one directory are the operator's to
/// avoid, and are refused at open when a segment turns up on a device its id does not name).
fn check_chain(chain: &[PathBuf]) -> Result<(), String> {
    if chain.len() > MAX_CHAIN_DEVICES {
        return Err(format!(
            "staging.chain names {} devices; at most {MAX_CHAIN_DEVICES}",
            chain.len()
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for device in chain {
        if device.as_os_str().is_empty() || device == Path::new(STAGING_DIR) {
            return Err(format!(
                "staging.chain: `{}` is not a device of its own (DATA/staging is the first)",
                device.display()
            ));
        }
        if !seen.insert(device) {
            return Err(format!("staging.chain names `{}` twice", device.display()));
        }
    }
    Ok(())
}

/// Devices a staging chain may add after `DATA/staging`.
pub const MAX_CHAIN_DEVICES: usize = 63;

/// A `min_dead_fraction` must be a number in (0, 1].
pub fn check_dead_fraction(fraction: f64) -> Result<(), String> {
    if fraction.is_finite() && fraction > 0.0 && fraction <= 1.0 {
        Ok(())
    } else {
        Err(format!(
            "a dead fraction is a number above 0 and at most 1, not {fraction}"
        ))
    }
}
