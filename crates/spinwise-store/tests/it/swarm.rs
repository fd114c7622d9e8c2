//! The store under deterministic simulation (issue 31 item 4, first cut): the real store code —
//! staging, migration, reads, deletes, scrub, failed disks and rebuild, through the rack engine —
//! on faulty model disks (spinwise-disk's `FaultyDisk`) and a virtual clock, driven by a seeded
//! swarm of random operations with crashes and restarts between them. Forced compactions (one
//! step in fifty) copy blobs with dead bytes in semi-preemptive units of 16 KiB.
//!
//! After every step the swarm checks its invariants:
//! - every acknowledged object reads back byte-exact (a sample each step; all of them after
//!   every crash and restart, and at the end), and a deleted key reads as not found;
//! - no hard budget is ever exceeded: an independent watcher between the store and each disk
//!   recomputes every hard domain's draw from the disks' power states at every spin-up and
//!   spin-down (it reads the rack, never the engine's books);
//! - the catalog and the disks agree: a scrub finds no stripe it cannot verify or repair;
//! - an object written warm (one put in four, in the worlds of seeds 0, 1, 4, 5, 8, 9, …) stays warm
//!   and staged through flushes, crashes and lost catalogs until a flush demotes it (the warm
//!   objects of even-numbered keys are demoted before each `flush` step, as a lifecycle
//!   transition of a prefix would). Seeds 0, 1, 8, 9, … also lose their catalog, and so do
//!   2, 3, 6, 7, …: see `a_lost_catalog_with_warm_records_never_brings_back_an_overwritten_version`.
//!
//! Faults besides crashes: writes fail (one in five) and spin-ups are slow during a flush, one
//! disk of an object's blob fails a read during a read of it (which must still return the
//! bytes), a fifth of the disks are full during a flush; flushes that fail are allowed, what
//! they leave must pass every check.
//!
//! A crash drops the store and its runtime abruptly (no close) and crashes every disk together,
//! dropping whatever they had not synced, and cuts the host files (staging log, blob indexes,
//! configuration) back to what their fsyncs made durable, through the crash model the store's
//! `HostFiles` reported to (spinwise_store::durable, docs/faults.md "Host files"): unsynced
//! tails lost or torn at a sector, creations and renames no directory fsync covered undone,
//! unknown files in the staging and index directories deleted. The store then opens again.
//! After each restart, besides every object, every committed blob must have its index.
//!
//! Determinism: the operations, keys, sizes, crash points and disk failures come from one
//! ChaCha8 stream per seed, and every operation completes before the next starts, so a failing
//! seed replays the same sequence (the store's own threads may interleave differently inside a
//! step; what a step leaves behind does not depend on it). Each failure names its seed and step.
//!
//! Proof that it bites (docs/BENCHMARKS.md, "Store swarm: fsyncs it catches"):
//! scripts/swarm-mutations.sh removes each fsync of the staging and migration path in turn
//! (`SPINWISE_SWARM_REMOVE_FSYNC=SITE`, or with sed in a scratch worktree) and runs this swarm;
//! `a_disk_that_acknowledges_unsynced_writes_…` turns the disks' sync off in the test command.
//! A crash also loses the catalog now and then (one step in a hundred): `recover_in`, the code
//! of `spinwise store recover`, rebuilds it from the staging log, the blob indexes and the
//! stacks (read through the rack engine, under the watcher), and the store opens on it; every
//! acknowledged object must read back, and a deleted key may come back only as one of its own
//! acknowledged versions (recovery cannot see deletes).
//!
//! What this does not reach: the SQLite catalog's own fsyncs (the catalog keeps a killed
//! process's semantics: every write survives a crash), and recovery's own file moves (the lost
//! catalog's files are deleted here, not torn).

use crate::common;

use common::{jbod_config, pattern};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spinwise_catalog::{BlobState, Catalog, ObjectLocation, SqliteCatalog, Tier};
use spinwise_disk::{
    CrashMode, Disk, DiskError, DiskIndex, Fault, FaultyConfig, FaultyDisk, Operation, Overwrite,
    PowerState, Space, Trigger, VirtualClock, WriteSync, crash_together,
};
use spinwise_model::{Rack, parse_rack};
use spinwise_store::CATALOG_FILE;
use spinwise_store::clock::{Clock, Sleep};
use spinwise_store::config::{PolicyChoice, STAGING_DIR};
use spinwise_store::durable::{HostCrashModel, HostFiles};
use spinwise_store::{Environment, SqliteStore, Store, StoreConfig, StoreError, recover_in};
use spinwise_store::{INDEX_DIR, index_path, read_index};
use spinwise_store::{ScrubLedger, ScrubMode};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::sync::{Arc, Mutex};

/// The store's clock is the disks' virtual clock: disk operations move it by their latencies,
/// the swarm's idle steps move it on and wake the store's timers (its calendar starts on
/// 2026-01-01).
#[derive(Debug)]
struct Virtual {
    clock: VirtualClock,
    moved: tokio::sync::Notify,
}

const SWARM_EPOCH_UNIX_MS: i64 = 1_767_225_600_000;

impl Virtual {
    fn advance_us(&self, duration_us: u64) {
        self.clock.advance_us(duration_us);
        self.moved.notify_waiters();
    }
}

impl Clock for Virtual {
    fn now_us(&self) -> u64 {
        self.clock.now_us()
    }

    fn unix_ms(&self) -> i64 {
        SWARM_EPOCH_UNIX_MS + (self.clock.now_us() / 1000) as i64
    }

    fn unix_us(&self) -> u64 {
        SWARM_EPOCH_UNIX_MS as u64 * 1000 + self.clock.now_us()
    }

    fn sleep_until_us(&self, at_us: u64) -> Sleep<'_> {
        Box::pin(async move {
            loop {
                // Registered before the check, so an advance between the two is not missed.
                let moved = self.moved.notified();
                tokio::pin!(moved);
                moved.as_mut().enable();
                if self.clock.now_us() >= at_us {
                    return;
                }
                moved.await;
            }
        })
    }
}

/// The independent budget checker: every disk's power state as the disks themselves went
/// through it, and every hard domain's draw recomputed from them at each change.
#[derive(Debug)]
struct Watcher {
    rack: Rack,
    state_of: Mutex<Vec<usize>>,
    violations: Mutex<Vec<String>>,
}

impl Watcher {
    fn new(rack: Rack) -> Arc<Watcher> {
        let resting = rack.resting_state();
        let disks = rack.disk_count();
        Arc::new(Watcher {
            rack,
            state_of: Mutex::new(vec![resting; disks]),
            violations: Mutex::new(Vec::new()),
        })
    }

    /// Disk `disk` is now in `state` (a rack state index): check every hard domain holding it.
    fn set(&self, disk: DiskIndex, state: usize) {
        let mut states = self.state_of.lock().unwrap();
        states[disk as usize] = state;
        for (_, resource) in self.rack.hard_resources() {
            let domain = resource.domain_of[disk as usize] as usize;
            let draw: i64 = resource.domains[domain]
                .iter()
                .map(|member| resource.cost[states[*member as usize]].micros())
                .sum();
            if draw > resource.budget.micros() {
                self.violations.lock().unwrap().push(format!(
                    "`{}` domain {domain}: {draw} > {} µ-units",
                    resource.name,
                    resource.budget.micros()
                ));
            }
        }
    }

    fn violations(&self) -> Vec<String> {
        self.violations.lock().unwrap().clone()
    }
}

/// A faulty disk seen by the watcher: its spin-up path is recorded before the command (the
/// draw rises when the command is sent), its return to rest after the disk answered.
#[derive(Debug)]
struct Watched {
    disk: Arc<FaultyDisk>,
    watcher: Arc<Watcher>,
}

impl Disk for Watched {
    fn index(&self) -> DiskIndex {
        self.disk.index()
    }
    fn power_state(&self) -> PowerState {
        self.disk.power_state()
    }
    fn spin_up(&self) -> Result<(), DiskError> {
        let path = self.watcher.rack.spin_up_path();
        let spinning = path[path.len().saturating_sub(2).max(1)];
        self.watcher.set(self.index(), spinning);
        let result = self.disk.spin_up();
        let state = match result {
            Ok(()) => self.watcher.rack.active_state(),
            // A failed spin-up leaves the disk drawing as it was told: keep charging it.
            Err(_) => spinning,
        };
        self.watcher.set(self.index(), state);
        result
    }
    fn spin_down(&self) -> Result<(), DiskError> {
        let result = self.disk.spin_down();
        if result.is_ok() {
            self.watcher
                .set(self.index(), self.watcher.rack.resting_state());
        }
        result
    }
    fn mark_failed(&self) {
        self.disk.mark_failed()
    }
    fn write_file(
        &self,
        name: &str,
        len_bytes: u64,
        data: &mut dyn Read,
        overwrite: Overwrite,
    ) -> Result<(), DiskError> {
        self.disk.write_file(name, len_bytes, data, overwrite)
    }
    fn read_at(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<usize, DiskError> {
        self.disk.read_at(name, offset, buffer)
    }
    fn file_len(&self, name: &str) -> Result<u64, DiskError> {
        self.disk.file_len(name)
    }
    fn remove_file(&self, name: &str) -> Result<(), DiskError> {
        self.disk.remove_file(name)
    }
    fn list_files(&self) -> Result<Vec<String>, DiskError> {
        self.disk.list_files()
    }
    fn space(&self) -> Result<Space, DiskError> {
        self.disk.space()
    }
}

/// A PUT body that yields `bytes` and then fails, as a client that hangs up mid-upload.
struct BrokenBody {
    bytes: Vec<u8>,
    at: usize,
}

impl tokio::io::AsyncRead for BrokenBody {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buffer: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.at == self.bytes.len() {
            let hung_up = std::io::Error::other("the client hung up");
            return std::task::Poll::Ready(Err(hung_up));
        }
        let length = buffer.remaining().min(self.bytes.len() - self.at);
        let at = self.at;
        buffer.put_slice(&self.bytes[at..at + length]);
        self.at += length;
        std::task::Poll::Ready(Ok(()))
    }
}

/// How the disks under the swarm keep their promise of durability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Disks {
    /// As the contract says: synced before acknowledged.
    Honest,
    /// Acknowledged before synced (a missing fsync in the disk's write path).
    SkipSync,
}

/// One seeded world: a data directory, the disks, the clock, the watcher, the store (while it
/// runs) and what the clients were told.
struct World {
    seed: u64,
    step: u64,
    rng: ChaCha8Rng,
    directory: tempfile::TempDir,
    config: StoreConfig,
    clock: Arc<Virtual>,
    disks: Vec<Arc<FaultyDisk>>,
    watcher: Arc<Watcher>,
    /// What a crash keeps of the host files (staging log, blob indexes, configuration).
    host: Arc<HostCrashModel>,
    runtime: Option<tokio::runtime::Runtime>,
    store: Option<SqliteStore>,
    /// Acknowledged objects and their bytes (deleted keys removed).
    acknowledged: BTreeMap<String, Vec<u8>>,
    /// Every version ever acknowledged per key (BLAKE3): what a recovery may bring back.
    versions: BTreeMap<String, Vec<[u8; 32]>>,
    /// Keys whose acknowledged version was written warm and never demoted: they must stay
    /// warm and staged through flushes, crashes and catalog recoveries.
    warm: BTreeSet<String>,
    /// Whether this world writes warm objects (one put in four) and whether it loses its
    /// catalog (`lose_the_catalog_and_recover`; a plain crash and restart takes its place
    /// when not). Both since blob indexes carry origins (2026-11-30): see
    /// `a_lost_catalog_with_warm_records_never_brings_back_an_overwritten_version`.
    warm_puts: bool,
    catalog_loss: bool,
    failed_disk: Option<DiskIndex>,
    crashes: u64,
    recoveries: u64,
    /// Blobs compacted, and of them those copied in more than one unit.
    compacted: u64,
    compacted_in_units: u64,
    /// Warm records the collector moved, and collections a crash cut short.
    warm_moved: u64,
    warm_collections_crashed: u64,
}

const KEYS: u64 = 24;
/// Mixed into a crash's seed for the host files' draws.
const HOST_CRASH_STREAM: u64 = 0x686f_7374;
const MAX_OBJECT_BYTES: usize = 48 * 1024;

impl World {
    fn new(seed: u64, mode: Disks, policy: PolicyChoice) -> World {
        let mut config = jbod_config();
        config.policy = policy;
        // Units of 16 KiB against objects of up to 48 KiB: compaction copies most blobs in
        // several semi-preemptive units, each its own blob and commit.
        config.upkeep.compact_unit_bytes = 16 * 1024;
        let rack = parse_rack("dense-jbod-60", &config.rack_toml).unwrap();
        let clock = Arc::new(Virtual {
            clock: VirtualClock::new(),
            moved: tokio::sync::Notify::new(),
        });
        let disks: Vec<Arc<FaultyDisk>> = (0..rack.disk_count())
            .map(|index| {
                let mut disk = FaultyConfig::new(index as DiskIndex, 1 << 40);
                disk.seed = seed;
                disk.write_sync = match mode {
                    Disks::Honest => WriteSync::BeforeReturning,
                    Disks::SkipSync => WriteSync::Skipped,
                };
                Arc::new(FaultyDisk::new(disk, clock.clock.clone()).unwrap())
            })
            .collect();
        let mut world = World {
            seed,
            step: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            directory: scratch_directory(),
            config,
            clock,
            disks,
            watcher: Watcher::new(rack),
            host: match removed_fsync_site() {
                Some(site) => HostCrashModel::without_site(&site),
                None => HostCrashModel::new(),
            },
            runtime: None,
            store: None,
            acknowledged: BTreeMap::new(),
            versions: BTreeMap::new(),
            warm: BTreeSet::new(),
            // Independent of the policy, which alternates with the seed's parity: warm objects
            // with lost catalogs (seeds 0, 1, 8, 9, …), lost catalogs alone (2, 3, 6, 7, …),
            // warm objects alone (4, 5, 12, 13, …).
            warm_puts: (seed / 2).is_multiple_of(2),
            catalog_loss: !(seed / 2).is_multiple_of(2) || (seed / 4).is_multiple_of(2),
            failed_disk: None,
            crashes: 0,
            recoveries: 0,
            compacted: 0,
            compacted_in_units: 0,
            warm_moved: 0,
            warm_collections_crashed: 0,
        };
        world.start(true);
        world
    }

    fn environment(&self) -> Environment {
        Environment::Given {
            disks: self
                .disks
                .iter()
                .map(|disk| {
                    Arc::new(Watched {
                        disk: disk.clone(),
                        watcher: self.watcher.clone(),
                    }) as Arc<dyn Disk>
                })
                .collect(),
            clock: self.clock.clone(),
            host_files: HostFiles::simulated(self.host.clone()),
        }
    }

    /// Starts a runtime and opens (or first creates) the store in it.
    fn start(&mut self, create: bool) {
        // One thread runs the store's tasks (its blocking work still goes to tokio's pool): fewer
        // hand-offs between threads, and fewer orders for them to happen in.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let data = self.directory.path().to_path_buf();
        let environment = self.environment();
        let config = self.config.clone();
        let store = runtime.block_on(async move {
            let catalog = SqliteCatalog::open(&data.join(CATALOG_FILE)).await?;
            if create {
                Store::init_in(&data, config, catalog, environment).await
            } else {
                Store::open_in(&data, catalog, environment).await
            }
        });
        self.store = Some(store.unwrap_or_else(|error| self.fail(&format!("open: {error}"))));
        self.runtime = Some(runtime);
    }

    fn fail(&self, what: &str) -> ! {
        panic!(
            "seed {} step {} (after {} crashes): {what}",
            self.seed, self.step, self.crashes
        )
    }

    fn block_on<T>(&self, future: impl std::future::Future<Output = T>) -> T {
        self.runtime.as_ref().unwrap().block_on(future)
    }

    fn store(&self) -> &SqliteStore {
        self.store.as_ref().unwrap()
    }

    fn random_key(&mut self) -> String {
        format!("object-{:02}", self.rng.random_range(0..KEYS))
    }

    /// One random operation, then the step's checks.
    fn step(&mut self) {
        self.step += 1;
        match self.rng.random_range(0..100u32) {
            0..40 => self.put(),
            40..55 => self.get(),
            55..65 => self.delete(),
            65..78 => self.flush(),
            78..80 => {
                self.compact();
                self.collect_warm();
            }
            80..85 => self.crash_and_restart(),
            85..86 if self.catalog_loss => self.lose_the_catalog_and_recover(),
            85..86 => self.crash_and_restart(),
            86..90 => self.fail_and_rebuild(),
            90..93 => self.scrub(),
            93..95 => self.flush_through_write_faults(),
            95..97 => self.read_through_a_read_fault(),
            97..98 => self.flush_onto_full_disks(),
            _ => self.advance_time(),
        }
        self.check_budgets();
        for _ in 0..2 {
            self.check_one();
        }
    }

    fn put(&mut self) {
        let key = self.random_key();
        let size = self.rng.random_range(0..MAX_OBJECT_BYTES);
        let body_seed: u64 = self.rng.random();
        let bytes = pattern(size, body_seed);
        // One put in eight is first tried with a body that breaks halfway (a client hanging up):
        // the store must refuse it and cut the partial record, leaving the key as it was.
        // Decided by the body's seed, so the stream of draws stays as it was.
        if body_seed.is_multiple_of(8) {
            let broken = BrokenBody {
                bytes: bytes[..size / 2].to_vec(),
                at: 0,
            };
            if self.block_on(self.store().put(&key, broken)).is_ok() {
                self.fail(&format!("put `{key}` with a broken body was acknowledged"));
            }
            self.check_key(&key);
        }
        // One put in four is warm: it must stay staged until `flush` demotes it. Decided by the
        // body's seed too, so the stream of draws stays as it was before tiers.
        let tier = match self.warm_puts && (body_seed >> 8).is_multiple_of(4) {
            true => Tier::Warm,
            false => Tier::Cold,
        };
        let stored = self.block_on(
            self.store()
                .put_with(&key, tier, &bytes[..], |_| std::future::ready(Ok(()))),
        );
        match stored {
            Ok(_) => {
                let hash = *blake3::hash(&bytes).as_bytes();
                self.versions.entry(key.clone()).or_default().push(hash);
                match tier {
                    Tier::Warm => self.warm.insert(key.clone()),
                    Tier::Cold => self.warm.remove(&key),
                };
                self.acknowledged.insert(key, bytes);
            }
            Err(error) => self.fail(&format!("put `{key}`: {error}")),
        }
    }

    fn get(&mut self) {
        let key = self.random_key();
        self.check_key(&key);
    }

    fn delete(&mut self) {
        let key = self.random_key();
        match self.block_on(self.store().delete(&key)) {
            Ok(_) => {
                self.acknowledged.remove(&key);
                self.warm.remove(&key);
            }
            Err(StoreError::NoSuchKey { .. }) if !self.acknowledged.contains_key(&key) => {}
            Err(error) => self.fail(&format!("delete `{key}`: {error}")),
        }
    }

    /// Demotes the warm objects of even-numbered keys (a lifecycle transition of a prefix),
    /// then migrates: the demoted ones may go, the other warm ones must stay.
    fn flush(&mut self) {
        let even: Vec<String> = self
            .warm
            .iter()
            .filter(|key| key.ends_with(['0', '2', '4', '6', '8']))
            .cloned()
            .collect();
        for key in even {
            match self.block_on(self.store().demote(&key)) {
                Ok(true) => {
                    self.warm.remove(&key);
                }
                Ok(false) => self.fail(&format!("demoting warm `{key}` changed nothing")),
                Err(error) => self.fail(&format!("demote `{key}`: {error}")),
            }
        }
        if let Err(error) = self.block_on(self.store().flush(|_| {})) {
            self.fail(&format!("flush: {error}"));
        }
    }

    /// A forced compaction of every blob with any dead bytes, in units: every acknowledged
    /// object must still read back (the step's checks), and it must not fail.
    fn compact(&mut self) {
        match self.block_on(self.store().compact(Some(0.01), |_| {})) {
            Ok(report) => {
                self.compacted += report.blobs_compacted;
                if report.units > report.blobs_compacted {
                    self.compacted_in_units += 1;
                }
            }
            Err(error) => self.fail(&format!("compact: {error}")),
        }
    }

    /// The warm tier's collector over every warm segment with any dead bytes. On even steps
    /// the store crashes part-way: once the first record has moved, the collection is dropped
    /// at its next await (in the next record's copy, restage or wait) and every disk and host
    /// file crashes. Every acknowledged object must read back after the restart (the step's
    /// and the restart's checks).
    fn collect_warm(&mut self) {
        let crash_midway = self.step.is_multiple_of(2);
        let first_moved = Arc::new(tokio::sync::Notify::new());
        let signal = first_moved.clone();
        let collected = self.block_on(async {
            let progress = |so_far: &spinwise_store::WarmCollectReport| {
                if so_far.records_moved > 0 {
                    signal.notify_one();
                }
            };
            tokio::select! {
                report = self.store().collect_warm(Some(0.01), progress) => Some(report),
                _ = first_moved.notified(), if crash_midway => None,
            }
        });
        match collected {
            Some(Ok(report)) => self.warm_moved += report.records_moved,
            Some(Err(error)) => self.fail(&format!("collect_warm: {error}")),
            None => {
                self.warm_collections_crashed += 1;
                self.crash_and_restart();
            }
        }
    }

    fn scrub(&mut self) {
        let ledger = ScrubLedger::default();
        let report = self.block_on(self.store().scrub(ScrubMode::Forced, &ledger, |_| {}));
        match report {
            Ok(report) if report.unrepairable.is_empty() => {}
            Ok(report) => self.fail(&format!(
                "scrub found stripes it cannot repair: {:?}",
                report.unrepairable
            )),
            Err(error) => self.fail(&format!("scrub: {error}")),
        }
    }

    /// Fails one disk (at most one at a time: the code survives two) and rebuilds it at once.
    fn fail_and_rebuild(&mut self) {
        if self.failed_disk.is_some() {
            return;
        }
        let disk = self.rng.random_range(0..self.disks.len() as DiskIndex);
        self.failed_disk = Some(disk);
        if let Err(error) = self.block_on(self.store().fail_disk(u64::from(disk))) {
            self.fail(&format!("fail disk {disk}: {error}"));
        }
        if let Err(error) = self.block_on(self.store().rebuild(|_| {})) {
            self.fail(&format!("rebuild after disk {disk}: {error}"));
        }
    }

    /// While a flush runs, each write fails with probability 1/5 (from each disk's seeded fault
    /// stream) and each spin-up takes up to 30 s more: the flush may fail, but what it leaves
    /// must pass every later check.
    fn flush_through_write_faults(&mut self) {
        let extra_us = self.rng.random_range(1..30_000_000);
        for disk in &self.disks {
            disk.inject(Operation::Write, Fault::IoError, Trigger::Probability(0.2))
                .unwrap();
            disk.inject(
                Operation::SpinUp,
                Fault::LatencySpike { extra_us },
                Trigger::Probability(0.5),
            )
            .unwrap();
        }
        let _ = self.block_on(self.store().flush(|_| {}));
        self.clear_faults();
    }

    /// One disk holding a migrated object fails its next read: the read must still return the
    /// object's bytes (from the other columns, or after a repair).
    fn read_through_a_read_fault(&mut self) {
        let key = self.random_key();
        let blob_disks = self.block_on(async {
            let record = self.store().stat(&key).await.ok()?;
            let ObjectLocation::Migrated { blob, .. } = record.location else {
                return None;
            };
            Some(self.store().catalog().blob(blob).await.ok()??.disks)
        });
        if let Some(disks) = blob_disks {
            let healthy: Vec<u32> = disks
                .into_iter()
                .filter(|d| self.failed_disk != Some(*d))
                .collect();
            let disk = healthy[self.rng.random_range(0..healthy.len())];
            self.disks[disk as usize]
                .inject(Operation::Read, Fault::IoError, Trigger::NextCalls(1))
                .unwrap();
        }
        self.check_key(&key);
        self.clear_faults();
    }

    /// A fifth of the disks are full while a flush runs: the flush may fail or place around
    /// them, and nothing half-written may stay visible.
    fn flush_onto_full_disks(&mut self) {
        for disk in &self.disks {
            if self.rng.random_range(0..5) == 0 {
                disk.fill_leaving(0);
            }
        }
        let _ = self.block_on(self.store().flush(|_| {}));
        for disk in &self.disks {
            disk.clear_filler();
        }
    }

    fn clear_faults(&self) {
        for disk in &self.disks {
            disk.clear_faults();
        }
    }

    fn advance_time(&mut self) {
        let seconds = self.rng.random_range(1..600u64);
        self.clock.advance_us(seconds * 1_000_000);
    }

    /// The process dies between two operations: the store and its runtime are dropped without
    /// closing, every disk loses what it had not synced, and the store opens again.
    fn crash_and_restart(&mut self) {
        self.crash();
        self.start(false);
        self.check_all();
        self.check_blob_indexes();
    }

    /// After a crash the catalog is gone too (its files deleted): `spinwise store recover`'s
    /// code rebuilds it from the staging log, the blob indexes and the stacks (read group by
    /// group through the rack engine, under the watcher), and the store opens on it. Every
    /// acknowledged object must read back as it was; a deleted key may come back only as one of
    /// its own acknowledged versions (recovery cannot see deletes, docs/store.md "A lost
    /// catalog"), and is then expected from there on.
    fn lose_the_catalog_and_recover(&mut self) {
        self.crash();
        for suffix in ["", "-wal", "-shm"] {
            let path = self
                .directory
                .path()
                .join(format!("{CATALOG_FILE}{suffix}"));
            if let Err(error) = std::fs::remove_file(&path)
                && error.kind() != std::io::ErrorKind::NotFound
            {
                self.fail(&format!("deleting {}: {error}", path.display()));
            }
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let data = self.directory.path().to_path_buf();
        let recovered = runtime.block_on(recover_in(&data, self.environment()));
        runtime.shutdown_timeout(std::time::Duration::from_secs(10));
        if let Err(error) = recovered {
            self.fail(&format!("recover: {error}"));
        }
        self.recoveries += 1;
        self.start(false);
        self.adopt_resurrected_versions();
        self.check_all();
        self.check_blob_indexes();
    }

    /// Keys deleted before a recovery that read back as one of their own acknowledged versions
    /// are expected again; any other bytes fail.
    fn adopt_resurrected_versions(&mut self) {
        for k in 0..KEYS {
            let key = format!("object-{k:02}");
            if self.acknowledged.contains_key(&key) {
                continue;
            }
            let read = self.block_on(common::read_to_end(self.store(), &key, None));
            let Ok((bytes, _)) = read else { continue };
            let hash = *blake3::hash(&bytes).as_bytes();
            if !self
                .versions
                .get(&key)
                .is_some_and(|all| all.contains(&hash))
            {
                self.fail(&format!(
                    "`{key}` came back from recovery as {} bytes it never held",
                    bytes.len()
                ));
            }
            // Its tier is whatever its record says; the model claims nothing of it.
            self.warm.remove(&key);
            self.acknowledged.insert(key, bytes);
        }
    }

    /// Drops the store and its runtime without closing, and cuts the power of every disk and
    /// host file (see the module docs).
    fn crash(&mut self) {
        self.crashes += 1;
        drop(self.store.take());
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(std::time::Duration::from_secs(10));
        }
        let disks: Vec<&FaultyDisk> = self.disks.iter().map(|d| d.as_ref()).collect();
        let crash_seed = self.rng.random();
        crash_together(&disks, crash_seed, CrashMode::DropUnsynced);
        // The host's page cache goes down with the power too: the staging log and the blob
        // indexes keep only what was fsynced (a stream of its own, so the disks' draws stay).
        let data = self.directory.path();
        let swept = [data.join(STAGING_DIR), data.join(INDEX_DIR)];
        let swept: Vec<&std::path::Path> = swept.iter().map(|path| path.as_path()).collect();
        if let Err(error) = self.host.crash(crash_seed ^ HOST_CRASH_STREAM, &swept) {
            self.fail(&format!("cutting the host files' power: {error}"));
        }
        // The watcher saw the disks stop: a crash leaves them in standby.
        for disk in &self.disks {
            let resting = self.watcher.rack.resting_state();
            self.watcher.set(disk.index(), resting);
        }
    }

    /// Every committed blob has its object index (blob_index.rs: written whole and durably
    /// before the commit), naming the blob's id, size and hash: what `spinwise store recover`
    /// needs to rebuild a lost catalog's migrated objects.
    fn check_blob_indexes(&self) {
        let blobs = self.block_on(
            self.store()
                .catalog()
                .blobs_in_state(BlobState::Committed, u32::MAX),
        );
        let blobs = blobs.unwrap_or_else(|error| self.fail(&format!("listing blobs: {error}")));
        for blob in blobs {
            let path = index_path(self.directory.path(), blob.id);
            match read_index(&path) {
                Ok(index)
                    if index.blob == blob.id
                        && index.blob_bytes == blob.size_bytes
                        && index.blob_hash == blob.content_hash => {}
                Ok(index) => self.fail(&format!(
                    "blob {}'s index describes blob {} of {} bytes, not {} bytes",
                    blob.id, index.blob, index.blob_bytes, blob.size_bytes
                )),
                Err(error) => self.fail(&format!("committed blob {}'s index: {error}", blob.id)),
            }
        }
    }

    fn check_budgets(&self) {
        let violations = self.watcher.violations();
        if !violations.is_empty() {
            self.fail(&format!("hard budgets exceeded: {violations:?}"));
        }
    }

    fn check_one(&mut self) {
        let key = self.random_key();
        self.check_key(&key);
    }

    fn check_all(&mut self) {
        let keys: Vec<String> = (0..KEYS).map(|k| format!("object-{k:02}")).collect();
        for key in keys {
            self.check_key(&key);
        }
    }

    /// `key` reads back exactly as acknowledged, or as not found if it was never stored or was
    /// deleted.
    fn check_key(&self, key: &str) {
        if self.warm.contains(key) {
            match self.block_on(self.store().stat(key)) {
                Ok(record)
                    if record.tier == Tier::Warm
                        && matches!(record.location, ObjectLocation::Staged { .. }) => {}
                Ok(record) => self.fail(&format!(
                    "warm `{key}` is {:?} at {:?}: it left the warm tier undemoted",
                    record.tier, record.location
                )),
                Err(error) => self.fail(&format!("warm `{key}`: {error}")),
            }
        }
        let read = self.block_on(common::read_to_end(self.store(), key, None));
        match (read, self.acknowledged.get(key)) {
            (Ok((bytes, _)), Some(expected)) if bytes == *expected => {}
            (Ok((bytes, _)), Some(expected)) => self.fail(&format!(
                "`{key}` read {} bytes that differ from the {} acknowledged",
                bytes.len(),
                expected.len()
            )),
            (Ok((bytes, _)), None) => self.fail(&format!(
                "`{key}` was deleted or never stored, yet read {} bytes",
                bytes.len()
            )),
            (Err(StoreError::NoSuchKey { .. }), None) => {}
            (Err(error), Some(_)) => self.fail(&format!("acknowledged `{key}` is lost: {error}")),
            (Err(error), None) => self.fail(&format!("`{key}`: {error}")),
        }
    }

    /// Closes the store without judging what it holds.
    fn finish_without_checks(mut self) {
        if let (Some(store), Some(runtime)) = (self.store.take(), self.runtime.take()) {
            runtime.block_on(store.close());
        }
    }

    /// Faults that fired on every disk: (write and read IO errors, full-disk refusals, spikes).
    fn faults_fired(&self) -> [u64; 4] {
        self.disks.iter().fold([0; 4], |sum, disk| {
            let counts = disk.counts();
            [
                sum[0] + counts.write_io_errors,
                sum[1] + counts.read_io_errors,
                sum[2] + counts.no_space_refusals,
                sum[3] + counts.latency_spikes,
            ]
        })
    }

    fn finish(mut self) -> Totals {
        self.check_all();
        self.check_blob_indexes();
        self.scrub();
        self.check_budgets();
        let totals = Totals {
            steps: self.step,
            crashes: self.crashes,
            recoveries: self.recoveries,
            compacted: self.compacted,
            compacted_in_units: self.compacted_in_units,
            warm_moved: self.warm_moved,
            warm_collections_crashed: self.warm_collections_crashed,
            faults: self.faults_fired(),
            removed_site_calls: self.host.removed_site_calls(),
        };
        if let (Some(store), Some(runtime)) = (self.store.take(), self.runtime.take()) {
            runtime.block_on(store.close());
        }
        totals
    }
}

/// The data directory: in memory (/dev/shm) where the host has it. The staging log and the
/// catalog keep every write across the swarm's crashes either way (module docs), so a real
/// disk's fsyncs would only slow the swarm down, by 10x on this VM.
fn scratch_directory() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(directory) = tempfile::tempdir_in(shm)
    {
        return directory;
    }
    tempfile::tempdir().unwrap()
}

/// What a swarm did in all: steps, crashes, and the faults that fired (write and read IO
/// errors, full-disk refusals, latency spikes).
#[derive(Debug, Default)]
struct Totals {
    steps: u64,
    crashes: u64,
    /// Crashes that also lost the catalog, rebuilt by `recover_in`.
    recoveries: u64,
    /// Blobs compacted, and compactions that copied some blob in more than one unit.
    compacted: u64,
    compacted_in_units: u64,
    /// Warm records moved by collections that ended, and collections a crash cut short.
    warm_moved: u64,
    warm_collections_crashed: u64,
    faults: [u64; 4],
    /// Calls that reached the fsync site removed for the mutation test.
    removed_site_calls: u64,
}

/// The fsync site scripts/swarm-mutations.sh asks the swarm to run without
/// (`SPINWISE_SWARM_REMOVE_FSYNC`): a host-file site of crate::durable, or [`DISK_SYNC_SITE`].
fn removed_fsync_site() -> Option<String> {
    std::env::var("SPINWISE_SWARM_REMOVE_FSYNC")
        .ok()
        .filter(|site| !site.is_empty())
}

/// The model disks' sync before acknowledging (`WriteSync::Skipped`) as a removable site.
const DISK_SYNC_SITE: &str = "disk-sync";

/// Runs `seeds` worlds of `steps` steps each, spread over [`threads`] threads. Every world is
/// its own store, disks, clock and random stream, so a seed's run does not depend on which
/// thread ran it or what ran beside it; a failure is reported for the lowest failing seed.
fn swarm(seeds: std::ops::Range<u64>, steps: u64, mode: Disks) -> Totals {
    let seeds: Vec<u64> = seeds.collect();
    let workers = threads().min(seeds.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let outcomes: Vec<Vec<(u64, std::thread::Result<Totals>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut outcomes = Vec::new();
                    loop {
                        let taken = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&seed) = seeds.get(taken) else { break };
                        let run = std::panic::catch_unwind(|| run_world(seed, steps, mode));
                        let failed = run.is_err();
                        outcomes.push((seed, run));
                        if failed {
                            // The other threads finish their seeds; this one stops here.
                            break;
                        }
                    }
                    outcomes
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut outcomes: Vec<_> = outcomes.into_iter().flatten().collect();
    outcomes.sort_by_key(|(seed, _)| *seed);
    let mut total = Totals::default();
    for (_, outcome) in outcomes {
        let world = outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        total.removed_site_calls += world.removed_site_calls;
        total.steps += world.steps;
        total.crashes += world.crashes;
        total.recoveries += world.recoveries;
        total.compacted += world.compacted;
        total.compacted_in_units += world.compacted_in_units;
        total.warm_moved += world.warm_moved;
        total.warm_collections_crashed += world.warm_collections_crashed;
        for (sum, fired) in total.faults.iter_mut().zip(world.faults) {
            *sum += fired;
        }
    }
    total
}

/// One seed's world, run to the end and checked.
fn run_world(seed: u64, steps: u64, mode: Disks) -> Totals {
    // Pelican's class scheduler and Flamingo's group scheduler, seed by seed.
    let policy = [PolicyChoice::Pelican, PolicyChoice::Flamingo][seed as usize % 2];
    let mut world = World::new(seed, mode, policy);
    for _ in 0..steps {
        world.step();
    }
    world.finish()
}

/// Threads the swarm runs worlds on: `SPINWISE_SWARM_THREADS`, or the host's cores.
fn threads() -> usize {
    match std::env::var("SPINWISE_SWARM_THREADS") {
        Ok(value) => value.parse().unwrap_or_else(|_| {
            panic!("SPINWISE_SWARM_THREADS must be a whole number, got `{value}`")
        }),
        Err(_) => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// Steps per seed and seeds in the test command; `SPINWISE_SWARM_SEEDS` and
/// `SPINWISE_SWARM_STEPS` run more (docs/BENCHMARKS.md, "Store swarm").
fn scale() -> (u64, u64) {
    let read = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .map(|value| {
                value
                    .parse()
                    .unwrap_or_else(|_| panic!("{name} must be a whole number, got `{value}`"))
            })
            .unwrap_or(default)
    };
    (
        read("SPINWISE_SWARM_SEEDS", 250),
        read("SPINWISE_SWARM_STEPS", 400),
    )
}

#[test]
fn the_store_keeps_every_acknowledged_object_and_every_budget_through_a_seeded_swarm_of_crashes() {
    let (seeds, steps) = scale();
    let first = std::env::var("SPINWISE_SWARM_FIRST_SEED")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1);
    let disks = match removed_fsync_site().as_deref() {
        Some(DISK_SYNC_SITE) => Disks::SkipSync,
        _ => Disks::Honest,
    };
    let total = swarm(first..first + seeds, steps, disks);
    let [writes, reads, full, spikes] = total.faults;
    eprintln!(
        "swarm: {seeds} seeds × {steps} steps = {} steps, {} crashes ({} with the catalog lost \
         and recovered); faults fired: {writes} write errors, {reads} read errors, {full} \
         full-disk refusals, {spikes} latency spikes; {} blobs compacted, {} compactions in \
         several units; {} warm records moved, {} warm collections cut short by a crash",
        total.steps,
        total.crashes,
        total.recoveries,
        total.compacted,
        total.compacted_in_units,
        total.warm_moved,
        total.warm_collections_crashed
    );
    assert!(
        total.compacted_in_units > 0,
        "no compaction copied a blob in several units"
    );
    assert!(total.crashes > 0, "the swarm never crashed the store");
    assert!(
        total.warm_moved > 0 && total.warm_collections_crashed > 0,
        "the warm collector never moved a record, or never crashed part-way ({} moved, {} cut \
         short)",
        total.warm_moved,
        total.warm_collections_crashed
    );
    assert!(
        total.recoveries > 0,
        "the swarm never recovered a lost catalog"
    );
    if let Some(site) = removed_fsync_site()
        && site != DISK_SYNC_SITE
    {
        assert!(
            total.removed_site_calls > 0,
            "the removed fsync site `{site}` was never reached"
        );
    }
    assert!(
        writes > 0 && reads > 0 && full > 0 && spikes > 0,
        "an injected fault never fired: {:?}",
        total.faults
    );
}

/// Warm objects and lost catalogs in one world: seed 0 (outside the test command's seeds 1–250),
/// whose warm puts and catalog loss are both on, 400 steps. A dead warm record outlives its
/// segment's other records' deaths as long as one neighbour lives, so a key overwritten after
/// it, whose newer version then migrated, came back from a lost catalog's recovery as the older
/// staged version while recovery ranked every staged record above every migrated copy (seed 2
/// failed at step 67 then, and once in CI after a fix that only made it rarer, e4e409e). Since
/// 2026-11-30 each blob index entry carries the place its object was first written and recovery
/// ranks every version by that (docs/store.md "Recovering a lost catalog"); with migration
/// writing its entries without origins, this world fails at step 357. `warm_gc.rs` has the
/// deterministic cases.
#[test]
fn a_lost_catalog_with_warm_records_never_brings_back_an_overwritten_version() {
    let mut world = World::new(0, Disks::Honest, PolicyChoice::Pelican);
    assert!(world.warm_puts && world.catalog_loss);
    for _ in 0..400 {
        world.step();
    }
    world.finish();
}

#[test]
fn a_disk_that_acknowledges_unsynced_writes_loses_acknowledged_objects_and_the_swarm_sees_it() {
    // The disks acknowledge stripe stacks before syncing them: the swarm must find an
    // acknowledged object lost after some crash, within these seeds.
    let caught = (1..=6).find(|seed| {
        std::panic::catch_unwind(|| swarm(*seed..*seed + 1, 150, Disks::SkipSync)).is_err()
    });
    assert!(
        caught.is_some(),
        "no seed of 1..=6 caught disks that skip their sync"
    );
}

#[test]
fn a_policy_asking_for_every_disk_at_once_is_held_to_the_budgets_by_the_engine_s_audit() {
    // FP spins every group up at once; the JBOD has power for 12 spin-ups of its 60 disks. The
    // engine's audit must withhold the rest: the watcher, which reads only the rack and the
    // disks, must never see a hard budget exceeded. (Reads and flushes may fail for want of k
    // disks; only the budgets are judged here.)
    let world = World::new(1, Disks::Honest, PolicyChoice::FullyProvisioned);
    for round in 0..3u8 {
        let bytes = pattern(4096, u64::from(round));
        let key = format!("fp-{round}");
        let _ = world.block_on(world.store().put(&key, &bytes[..]));
        let _ = world.block_on(world.store().flush(|_| {}));
        let _ = world.block_on(common::read_to_end(world.store(), &key, None));
        world.check_budgets();
    }
    let refusals = world.store().rack_io().driver.audit_counters().refusals;
    assert!(refusals > 0, "FP on the JBOD never met the audit");
    world.finish_without_checks();
}

/// Seeds worth replaying on every run (swarm_regressions.txt, one `seed steps why` per line):
/// seeds that once failed, and the seed that caught each fsync's removal
/// (scripts/swarm-mutations.sh), so the paths those fsyncs guard stay exercised.
fn regression_seeds() -> Vec<(u64, u64, String)> {
    include_str!("swarm_regressions.txt")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let mut fields = line.splitn(3, ' ');
            let mut number = |what: &str| -> u64 {
                let field = fields.next().unwrap_or_default();
                field.parse().unwrap_or_else(|_| {
                    panic!("swarm_regressions.txt: `{line}`: {what} `{field}` is not a number")
                })
            };
            let (seed, steps) = (number("seed"), number("steps"));
            (seed, steps, fields.next().unwrap_or_default().to_string())
        })
        .collect()
}

#[test]
fn every_seed_in_the_regression_list_keeps_every_acknowledged_object() {
    let seeds = regression_seeds();
    assert!(!seeds.is_empty(), "swarm_regressions.txt lists no seed");
    for (seed, steps, why) in seeds {
        eprintln!("swarm regression: seed {seed}, {steps} steps ({why})");
        swarm(seed..seed + 1, steps, Disks::Honest);
    }
}
