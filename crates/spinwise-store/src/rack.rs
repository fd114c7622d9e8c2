//! The store's rack: one emulated disk per rack disk under `DATA/disks/` (its latencies the
//! rack's times `time_factor`, its bandwidth throttled when `disk_bandwidth_scale` is set), the
//! real-clock driver that runs the scheduler over them, the placer, and the erasure code from the
//! layout. Built when a store opens; every disk IO of the store goes through a job this driver
//! runs, so no disk is touched unless the scheduler made its group active (the disks refuse
//! otherwise).
//!
//! Invariants: `disks[i].index() == i` (the driver's order); disks the catalog lists as failed
//! are marked failed in the driver before any job runs, so they are never spun up again.

use crate::clock::{Clock, SystemClock};
use crate::columns::DiskReads;
use crate::config::{StoreConfig, disk_capacity_bytes};
use crate::driver::{Driver, DriverConfig, DriverError};
use crate::durable::HostFiles;
use crate::error::{StoreError, StoreResult, io_error};
use crate::placement::Placement;
use spinwise_catalog::{BlobId, Catalog, DiskHealth, DiskIndex};
use spinwise_disk::{Disk, DiskError, DiskTiming, EmulatedConfig, EmulatedDisk};
use spinwise_ec::Code;
use spinwise_model::Rack;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the emulated disks live in the data directory.
pub const DISKS_DIR: &str = "disks";

/// The directory of disk `index`.
pub fn disk_directory(data_dir: &Path, index: usize) -> PathBuf {
    data_dir.join(DISKS_DIR).join(format!("disk-{index:05}"))
}

/// What a store runs on besides its data directory: the emulated disks under `DATA/disks/` on
/// the wall clock (what `spinwise store` and `serve` use), or disks and a clock the caller gives
/// (model or faulty disks on a virtual clock: the store's deterministic simulation).
#[derive(Clone, Default)]
pub enum Environment {
    #[default]
    Emulated,
    Given {
        /// One per rack disk, in index order.
        disks: Vec<Arc<dyn Disk>>,
        clock: Arc<dyn Clock>,
        /// The host files' fsyncs (a simulation's crash model, crate::durable).
        host_files: HostFiles,
    },
}

impl Environment {
    /// Where the store's host-file fsyncs go: only performed, unless a simulation gave a model.
    pub fn host_files(&self) -> HostFiles {
        match self {
            Environment::Emulated => HostFiles::default(),
            Environment::Given { host_files, .. } => host_files.clone(),
        }
    }
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Environment::Emulated => f.write_str("Emulated"),
            Environment::Given { disks, .. } => write!(f, "Given({} disks)", disks.len()),
        }
    }
}

/// What the store drives.
pub struct StoreRack {
    /// The emulated disks (empty when the environment gave its own).
    pub emulated: Vec<Arc<EmulatedDisk>>,
    pub disks: Vec<Arc<dyn Disk>>,
    pub driver: Driver,
    pub placement: Placement,
    pub code: Arc<Code>,
    /// The store's reads in progress per disk, which decide the columns a read takes
    /// ([`crate::columns`]).
    pub disk_reads: Arc<DiskReads>,
    /// The highest blob id any stack file's name carried when the emulated disks opened,
    /// temporary files included ([`crate::stacks::stack_blob_id`]): what the store's blob id
    /// counter must pass, seen by the disks' own opening listings (one listing per disk).
    /// `None` for given disks too: they have no host directory to list.
    pub highest_blob_id_listed: Option<BlobId>,
}

impl std::fmt::Debug for StoreRack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreRack")
            .field("disks", &self.disks.len())
            .field("code", &self.code)
            .finish_non_exhaustive()
    }
}

/// How the store builds emulated disk `index` of `data_dir` under `config`: its directory,
/// capacity, timing, time factor, throttle and latency seed (a caller giving its own disks,
/// as the cross-validation's virtual-time run does, builds them the same way).
pub fn emulated_config(
    data_dir: &Path,
    rack: &Rack,
    config: &StoreConfig,
    index: usize,
) -> EmulatedConfig {
    let mut emulated = EmulatedConfig::new(
        disk_directory(data_dir, index),
        index as u32,
        disk_capacity_bytes(rack),
    );
    emulated.timing = DiskTiming::from_model(&rack.disk_model);
    emulated.time_factor = config.time_factor;
    // `validate` has checked the rate is finite and positive, as the disk requires.
    emulated.throttle_bytes_per_s = config.disk_throttle_bytes_per_s(rack);
    emulated.seed = disk_latency_seed(config.latency_seed, index);
    emulated
}

/// Disk `index`'s latency stream under the store's `latency_seed` ([`StoreConfig::latency_seed`]):
/// the index itself under seed 0, as every store had before the key existed.
fn disk_latency_seed(latency_seed: u64, index: usize) -> u64 {
    latency_seed.rotate_left(32) ^ index as u64
}

fn disk_error(error: DiskError) -> StoreError {
    StoreError::Disk(error)
}

/// Creates the disk directories of a new store.
pub fn create_disks(data_dir: &Path, rack: &Rack, config: &StoreConfig) -> StoreResult<()> {
    let root = data_dir.join(DISKS_DIR);
    std::fs::create_dir_all(&root).map_err(io_error(&root))?;
    for index in 0..rack.disk_count() {
        EmulatedDisk::create(emulated_config(data_dir, rack, config, index)).map_err(disk_error)?;
    }
    Ok(())
}

/// Disks one opening thread opens at least (each open lists the disk's directory: a wait for
/// the host's disk when cold, which threads overlap; for a small rack a thread would cost more
/// than it saves), and the most threads.
const DISKS_PER_OPENING_THREAD: usize = 128;
const MAX_OPENING_THREADS: usize = 4;

/// Opens every emulated disk of `rack` in `data_dir`, in index order, on a few threads when
/// the rack is large; with the highest blob id their listings named
/// ([`StoreRack::highest_blob_id_listed`]).
fn open_emulated_disks(
    data_dir: &Path,
    rack: &Rack,
    config: &StoreConfig,
) -> StoreResult<(Vec<Arc<EmulatedDisk>>, Option<BlobId>)> {
    let count = rack.disk_count();
    let indices: Vec<usize> = (0..count).collect();
    let runs = crate::runs::in_runs(
        &indices,
        DISKS_PER_OPENING_THREAD,
        MAX_OPENING_THREADS,
        |run: &[usize]| -> StoreResult<(Vec<Arc<EmulatedDisk>>, Option<BlobId>)> {
            let mut highest = None;
            let mut see = |name: &str| {
                if let Some((blob, _)) = crate::stacks::stack_blob_id(name) {
                    highest = highest.max(Some(blob));
                }
            };
            let disks = run
                .iter()
                .map(|&index| {
                    let config = emulated_config(data_dir, rack, config, index);
                    EmulatedDisk::open_seeing(config, &mut see)
                        .map(Arc::new)
                        .map_err(disk_error)
                })
                .collect::<StoreResult<_>>()?;
            Ok((disks, highest))
        },
    );
    let mut disks = Vec::with_capacity(count);
    let mut highest = None;
    for opened in runs {
        let (run, run_highest) = opened?;
        disks.extend(run);
        highest = highest.max(run_highest);
    }
    Ok((disks, highest))
}

/// Opens the disks (a missing or failed emulated one opens as failed; given ones are used as
/// they are), starts the driver on the current tokio runtime and tells it which disks are known
/// failed (the catalog's; none when recovering a lost catalog, where a failed disk answers so).
pub async fn open_rack(
    data_dir: &Path,
    rack: &Rack,
    config: &StoreConfig,
    failed: &[DiskIndex],
    environment: Environment,
) -> StoreResult<StoreRack> {
    let (emulated, disks, clock, highest_blob_id_listed) = match environment {
        Environment::Emulated => {
            let (emulated, highest) = open_emulated_disks(data_dir, rack, config)?;
            let disks: Vec<Arc<dyn Disk>> = emulated
                .iter()
                .map(|d| d.clone() as Arc<dyn Disk>)
                .collect();
            let clock = Arc::new(SystemClock::new()) as Arc<dyn Clock>;
            (emulated, disks, clock, highest)
        }
        Environment::Given { disks, clock, .. } => (Vec::new(), disks, clock, None),
    };
    let layout = &config.layout;
    let driver = Driver::start(
        rack,
        layout,
        disks.clone(),
        clock,
        DriverConfig {
            policy: config.policy,
            idle_spin_down_us: config.idle_spin_down_us(),
            ..DriverConfig::default()
        },
    )
    .map_err(|error: DriverError| StoreError::Driver(error.to_string()))?;
    for &disk in failed {
        let _ = driver.mark_failed(disk).await;
    }
    let code = Code::new(
        layout.erasure.k as usize,
        layout.erasure.r as usize,
        config.fragment_bytes as usize,
    )
    .map_err(|error| StoreError::Driver(format!("the layout's code: {error}")))?;
    Ok(StoreRack {
        emulated,
        disks,
        driver,
        placement: Placement::new(rack, layout),
        code: Arc::new(code),
        disk_reads: DiskReads::new(rack.disk_count()),
        highest_blob_id_listed,
    })
}

/// The disks the catalog records as failed.
pub(crate) async fn failed_disks<C: Catalog>(catalog: &C) -> StoreResult<BTreeSet<DiskIndex>> {
    Ok(catalog
        .unhealthy_disks()
        .await?
        .into_iter()
        .filter(|record| record.health == DiskHealth::Failed)
        .map(|record| record.disk)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::disk_latency_seed;
    use std::collections::BTreeSet;

    #[test]
    fn seed_zero_keeps_each_disk_on_its_index_and_other_seeds_give_every_disk_another_stream() {
        let disks = 1152;
        assert!((0..disks).all(|index| disk_latency_seed(0, index) == index as u64));
        let mut streams = BTreeSet::new();
        for latency_seed in [0, 1, 2, 40, u64::MAX] {
            for index in 0..disks {
                assert!(
                    streams.insert(disk_latency_seed(latency_seed, index)),
                    "seed {latency_seed} disk {index} repeats a stream"
                );
            }
        }
    }
}
