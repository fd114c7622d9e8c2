//! [`Store`]: the object API over a catalog and the staging log. An object is visible exactly
//! when the catalog has it; PUT makes its bytes durable in the staging log (fsync) before the
//! catalog commit, and acknowledges after the commit (docs/staging-format.md, "PUT durability
//! sequence"). Opening a store reconciles the staging log with the catalog (recovery).
//!
//! Invariants:
//! - a staging segment is freed only when it is sealed, unpinned, claimed (its `flock` taken:
//!   no live process, this one or another, may still append to it or commit into it; see
//!   [`crate::staging`]) and the catalog, asked *after* the claim, references nothing in it —
//!   so an append whose commit lands meanwhile is never freed, nor is a segment a migration
//!   has pinned (checked just before freeing; see [`crate::migrate`]);
//! - recovery at open touches only segments it claimed; the catalog is read after the claims,
//!   and catalog rows in segments another live process holds are not checked (their writer may
//!   be committing them right now).
//! - GET memory is one staging chunk at a time;
//! - objects in blobs are read through the scheduler (crate::read): one job on the blob's
//!   group, only while the group is up; a GET whose blob compaction removed after the lookup
//!   looks the object up again (crate::compact).

use crate::clock::{Clock, SystemClock};
use crate::config::{self, STAGING_DIR, STORE_FILE, StoreConfig};
use crate::driver::GroupPhase;
use crate::error::{StoreError, StoreResult, io_error};
use crate::rack::{Environment, StoreRack, create_disks, open_rack};
use crate::read::{MigratedReader, ReadTiming};
use crate::staging::{
    Claim, ContentCheck, MAX_KEY_BYTES, RecoveryReport, ScannedRecord, SegmentId, StagedReader,
    StagingError, StagingLog,
};
use bytes::Bytes;
use serde::Serialize;
use spinwise_catalog::{Catalog, ObjectLocation, ObjectRecord, SqliteCatalog};
use spinwise_ec::RepairReport;
use spinwise_model::{GroupIndex, Layout, Rack};
use spinwise_sched::scheduler::Kind;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncRead;

/// How often GET looks an object up again when its staging segment vanished between the catalog
/// lookup and opening the file (the object was deleted, overwritten or migrated meanwhile).
const GET_ATTEMPTS: u32 = 3;

/// How urgently a read of a migrated object is wanted: RestoreObject's tier as the scheduler
/// sees it (a Bulk restore waits before it reads, then reads at Standard).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadPriority {
    /// In the scheduler's order: batched with the other reads of its group.
    #[default]
    Standard,
    /// Ahead of every standard read ([`Kind::Expedited`]): its group is brought up next.
    Expedited,
}

impl ReadPriority {
    /// The scheduler request kind a read at this priority is submitted as.
    pub fn kind(self) -> Kind {
        match self {
            ReadPriority::Standard => Kind::Client,
            ReadPriority::Expedited => Kind::Expedited,
        }
    }
}

/// What the store holds and how its disks are, for `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreStatus {
    pub objects: u64,
    pub bytes: u64,
    pub staged_objects: u64,
    pub staged_bytes: u64,
    /// Disks spun up and active now (the driver's budget audit).
    pub disks_active: u64,
    pub disks_failed: u64,
    pub rebuild_pending: u64,
    pub staging_used_bytes: u64,
    pub staging_limit_bytes: u64,
    /// Stacks this process rewrote after a read found them damaged (see [`crate::heal`]).
    pub read_repairs: u64,
    /// Read repairs that could not be done (reported; scrub tries again).
    pub read_repairs_failed: u64,
    /// Reads of migrated objects this process started.
    pub migrated_reads: u64,
    /// Of those, reads that took a parity column in place of a busier or missing data disk
    /// (see [`crate::columns`]).
    pub migrated_reads_with_parity: u64,
    /// Bytes of committed blobs no object points at (deleted or overwritten): what compaction
    /// reclaims (see [`crate::compact`]).
    pub dead_bytes: u64,
}

/// What recovery found and did when the store was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreRecovery {
    pub staging: RecoveryReport,
    /// Catalog rows that disagree with the staging log (a broken invariant), one line each.
    pub problems: Vec<String>,
}

pub struct Store<C: Catalog> {
    data_dir: PathBuf,
    config: StoreConfig,
    rack: Rack,
    catalog: C,
    staging: StagingLog,
    recovery: StoreRecovery,
    /// The disks, their driver, the placer and the code (see [`crate::rack`]).
    rack_io: StoreRack,
    /// The migrator's disk space, flush lock and pinned segments (see [`crate::migrate`]).
    migration: crate::migrate::MigrationState,
    /// Repairs queued by reads and failed disks found (see [`crate::heal`]).
    heal: std::sync::Arc<crate::heal::HealState>,
    /// `DATA/upkeep.lock` (see [`crate::lock`]).
    upkeep_lock: crate::lock::UpkeepLock,
    /// The time source of everything but the driver: dates written into rows, the upkeep
    /// task's timers and the S3 layer's ([`crate::clock`]). Real unless a test set its own.
    clock: Arc<dyn Clock>,
}

/// Raises `catalog`'s blob id counter above the highest blob id `found` on the disks; returns
/// a line for [`StoreRecovery::problems`] when it had to (the catalog is older than the disks:
/// lost and recreated, or restored from a copy), `None` when the counter was already above.
async fn reserve_blob_ids<C: Catalog>(
    catalog: &C,
    found: &crate::survey::DataSurvey,
) -> StoreResult<Option<String>> {
    for disk in &found.unlisted_disks {
        tracing::warn!(
            disk,
            "a disk directory could not be listed for its blob ids"
        );
    }
    let Some(highest) = found.highest_blob_id else {
        return Ok(None);
    };
    let Some(counter) = catalog.reserve_blob_ids_through(highest).await? else {
        return Ok(None);
    };
    let problem = format!(
        "stripe stacks on the disks carry blob ids up to {highest}, but the catalog's next blob id was {counter}: \
         the catalog is older than the disks (lost and recreated, or restored from a copy), and blobs it does not \
         know may hold objects it does not list; blob ids now continue from {}, and no stack was removed",
        highest + 1
    );
    tracing::warn!(
        highest,
        counter,
        "raised the catalog's blob id counter above the disks'"
    );
    Ok(Some(problem))
}

fn check_key(key: &str) -> StoreResult<()> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Err(StoreError::KeyLength {
            length_bytes: key.len(),
        });
    }
    Ok(())
}

impl<C: Catalog> Store<C> {
    /// Creates the store in `data_dir` (created if missing; refused if it holds a store):
    /// writes `layout.json` and `store.toml`, then opens it.
    pub async fn init(data_dir: &Path, config: StoreConfig, catalog: C) -> StoreResult<Store<C>> {
        Store::init_in(data_dir, config, catalog, Environment::Emulated).await
    }

    /// [`Store::init`] on `environment`'s disks and clock (no emulated disks are created when
    /// it gives its own).
    pub async fn init_in(
        data_dir: &Path,
        config: StoreConfig,
        catalog: C,
        environment: Environment,
    ) -> StoreResult<Store<C>> {
        config::validate(&config, &data_dir.join(STORE_FILE))?;
        std::fs::create_dir_all(data_dir).map_err(io_error(data_dir))?;
        if data_dir.join(STORE_FILE).exists() {
            return Err(StoreError::AlreadyInitialized {
                path: data_dir.display().to_string(),
            });
        }
        let rack = config::validate(&config, &data_dir.join(STORE_FILE))?;
        if matches!(environment, Environment::Emulated) {
            create_disks(data_dir, &rack, &config)?;
        }
        config::write_in(data_dir, &config, &environment.host_files())?;
        Store::open_in(data_dir, catalog, environment).await
    }

    /// Opens the store in `data_dir` with `catalog` and runs staging recovery against it. The
    /// catalog's blob id counter is first raised above every blob id on the disks
    /// ([`crate::survey`]), so no id is handed out twice even if `catalog` is older than the
    /// disks; when it had to be raised, a line in [`StoreRecovery::problems`] says so.
    pub async fn open(data_dir: &Path, catalog: C) -> StoreResult<Store<C>> {
        Store::open_in(data_dir, catalog, Environment::Emulated).await
    }

    /// [`Store::open`] on `environment`'s disks and clock.
    pub async fn open_in(
        data_dir: &Path,
        catalog: C,
        environment: Environment,
    ) -> StoreResult<Store<C>> {
        let config = config::read(data_dir)?;
        let rack = config::validate(&config, &data_dir.join(STORE_FILE))?;
        // Listed before the counter is read (inside the reservation), so a stack another
        // process is writing now carries an id the counter has already passed.
        let found = crate::survey::survey(data_dir)?;
        let blob_ids_raised = reserve_blob_ids(&catalog, &found).await?;
        let staging = StagingLog::open_in(
            &data_dir.join(STAGING_DIR),
            config.staging,
            environment.host_files(),
        )
        .await?;
        // A given environment's clock is the whole store's (dates, upkeep, the driver); the
        // emulated one runs on the real clock.
        let clock: Arc<dyn Clock> = match &environment {
            Environment::Emulated => Arc::new(SystemClock::new()),
            Environment::Given { clock, .. } => clock.clone(),
        };
        let rack_io = open_rack(data_dir, &rack, &config, &catalog, environment).await?;
        let groups = config.layout.groups.len();
        let migration =
            crate::migrate::MigrationState::open(&catalog, &rack, groups, &rack_io.code).await?;
        let mut store = Store {
            data_dir: data_dir.to_path_buf(),
            config,
            rack,
            catalog,
            staging,
            recovery: StoreRecovery::default(),
            rack_io,
            migration,
            heal: Default::default(),
            upkeep_lock: crate::lock::UpkeepLock::new(data_dir),
            clock,
        };
        store.recovery = store.recover().await?;
        store.recovery.problems.extend(blob_ids_raised);
        // A crash mid-migration left `Writing` blobs: remove their stacks now (docs/store.md,
        // "Migration"); on failure they stay counted as used space and flush retries.
        // Only under the upkeep lock: a `Writing` blob may be another process's flush at work.
        // Taken only when there is one, so opens for PUT/GET never make a flush elsewhere busy.
        let writing = store
            .catalog
            .blobs_in_state(spinwise_catalog::BlobState::Writing, 1)
            .await?;
        if !writing.is_empty() {
            match store.upkeep_lock() {
                Ok(_guard) => {
                    if let Err(error) = store.abandon_writing_blobs().await {
                        tracing::warn!(%error, "abandoning blobs a crash left half-written");
                    }
                }
                Err(error) => tracing::info!(%error, "leaving writing blobs to the lock holder"),
            }
        }
        // Disks that open failed (removed, or marked) are recorded and their rebuild queued.
        if let Err(error) = store.record_disks_failed_at_open().await {
            tracing::warn!(%error, "recording disks that opened failed");
        }
        Ok(store)
    }

    /// Reconciles the scanned staging log with the catalog's staged objects.
    async fn recover(&self) -> StoreResult<StoreRecovery> {
        // Read after the staging log claimed its segments (in `StagingLog::open`).
        let staged = self.catalog.staged_objects(u32::MAX).await?;
        let in_use = self.staging.segments_in_use_at_open();
        let mut wanted = Vec::new();
        let mut referenced = BTreeSet::new();
        for object in &staged {
            if let ObjectLocation::Staged { segment, offset } = object.location {
                referenced.insert((segment, offset));
                wanted.push((segment, offset, object.size_bytes));
            }
        }
        // Only the records the catalog references are looked for (a few reads each), not
        // every chunk of every segment; segments in use by a live process are skipped.
        let found: BTreeMap<(SegmentId, u64), ScannedRecord> = self
            .staging
            .find_records(wanted)
            .await?
            .into_iter()
            .map(|record| ((record.segment, record.offset), record))
            .collect();
        let mut problems = Vec::new();
        for object in &staged {
            let ObjectLocation::Staged { segment, offset } = object.location else {
                continue;
            };
            if in_use.contains(&segment) {
                continue; // another live process's segment: not scanned, not ours to judge
            }
            match found.get(&(segment, offset)) {
                Some(record)
                    if record.key == object.key
                        && record.size_bytes == object.size_bytes
                        && record.content_hash == object.content_hash => {}
                Some(record) => problems.push(format!(
                    "`{}`: staging record {segment:016x}@{offset} holds `{}` ({} bytes), not this object",
                    object.key, record.key, record.size_bytes
                )),
                None => problems.push(format!(
                    "`{}`: no valid staging record at {segment:016x}@{offset}",
                    object.key
                )),
            }
        }
        let report = self.staging.recover(&referenced).await?;
        Ok(StoreRecovery {
            staging: report,
            problems,
        })
    }

    /// Stores `reader`'s bytes under `key`, replacing any older object of that key. Durable
    /// (staging fsync, then catalog commit) when it returns.
    pub async fn put(
        &self,
        key: &str,
        reader: impl AsyncRead + Unpin,
    ) -> StoreResult<ObjectRecord> {
        self.put_with(key, reader, |_| std::future::ready(Ok(())))
            .await
    }

    /// [`Store::put`] with `before_commit` run between the staging fsync and the catalog
    /// commit, given the record about to be committed (its size and BLAKE3 are known only
    /// then). A layer above that keeps its own rows about objects (the S3 layer's metadata)
    /// writes them here, so a committed object always has its row and the content hash is
    /// computed once. An `Err(reason)` abandons the PUT: nothing becomes visible (the staged
    /// record is reclaimed like one a crash left before its commit) and the PUT fails with
    /// [`StoreError::CommitRefused`].
    pub async fn put_with<Fut>(
        &self,
        key: &str,
        reader: impl AsyncRead + Unpin,
        before_commit: impl FnOnce(&ObjectRecord) -> Fut,
    ) -> StoreResult<ObjectRecord>
    where
        Fut: std::future::Future<Output = Result<(), String>>,
    {
        check_key(key)?;
        let staged = self.staging.append(key, reader).await?;
        let record = ObjectRecord {
            key: key.to_string(),
            size_bytes: staged.size_bytes,
            content_hash: staged.content_hash,
            created_unix_ms: self.now_unix_ms(),
            location: ObjectLocation::Staged {
                segment: staged.segment,
                offset: staged.offset,
            },
        };
        if let Err(reason) = before_commit(&record).await {
            return Err(StoreError::CommitRefused {
                key: key.to_string(),
                reason,
            });
        }
        let replaced = self.catalog.put_object(record.clone()).await?;
        // The record is committed: its segment may be unpinned now.
        drop(staged);
        if replaced.is_some() {
            self.reclaim_staging().await?;
        }
        Ok(record)
    }

    /// The object's metadata.
    pub async fn stat(&self, key: &str) -> StoreResult<ObjectRecord> {
        check_key(key)?;
        self.catalog
            .object(key)
            .await?
            .ok_or_else(|| StoreError::NoSuchKey { key: key.into() })
    }

    /// The group holding a migrated object's blob; `None` while the object is staged.
    pub async fn migrated_group(&self, key: &str) -> StoreResult<Option<GroupIndex>> {
        let ObjectLocation::Migrated { blob, .. } = self.stat(key).await?.location else {
            return Ok(None);
        };
        let record = self.catalog.blob(blob).await?;
        Ok(record.map(|blob| blob.group))
    }

    /// `group`'s power phase now, from the driver; `None` if the driver cannot answer (it has
    /// stopped) or has no such group.
    pub async fn group_phase(&self, group: GroupIndex) -> Option<GroupPhase> {
        let state = self.rack_io.driver.state().await.ok()?;
        state
            .groups
            .iter()
            .find(|g| g.group == group)
            .map(|g| g.phase)
    }

    /// A reader of the object's bytes (all, or `range`), in chunks of bounded size, each
    /// checked against its crc32c ([`ContentCheck::ChunksOnly`]).
    pub async fn get(&self, key: &str, range: Option<Range<u64>>) -> StoreResult<ObjectReader> {
        self.get_with(key, range, ContentCheck::ChunksOnly).await
    }

    /// [`Store::get`], choosing what is verified: [`ContentCheck::WholeObject`] also checks a
    /// whole-object read's BLAKE3 against the one recorded at PUT, before the end of the
    /// stream is reported (a mismatch is [`StoreError::ContentHashMismatch`] instead).
    pub async fn get_with(
        &self,
        key: &str,
        range: Option<Range<u64>>,
        check: ContentCheck,
    ) -> StoreResult<ObjectReader> {
        self.get_prioritized(key, range, check, ReadPriority::Standard)
            .await
    }

    /// [`Store::get_with`] at `priority`: an [`ReadPriority::Expedited`] read of a migrated
    /// object goes ahead of the scheduler's standard reads ([`Kind::Expedited`]). A staged
    /// object is read at once either way.
    pub async fn get_prioritized(
        &self,
        key: &str,
        range: Option<Range<u64>>,
        check: ContentCheck,
        priority: ReadPriority,
    ) -> StoreResult<ObjectReader> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let may_retry = attempt < GET_ATTEMPTS;
            let opened = self
                .open_reader(key, &range, check, priority, may_retry)
                .await?;
            if let Some(reader) = opened {
                return Ok(reader);
            }
        }
    }

    /// One try at opening `key`'s reader. `None` (only when `may_retry`) if the object left the
    /// place its record named between the lookup and the open: compaction moved it and removed
    /// its old blob, or a migration reclaimed its staging segment.
    async fn open_reader(
        &self,
        key: &str,
        range: &Option<Range<u64>>,
        check: ContentCheck,
        priority: ReadPriority,
        may_retry: bool,
    ) -> StoreResult<Option<ObjectReader>> {
        let record = self.stat(key).await?;
        let range = range.clone().unwrap_or(0..record.size_bytes);
        if range.start > range.end || range.end > record.size_bytes {
            return Err(StoreError::Range {
                key: key.into(),
                start: range.start,
                end: range.end,
                size_bytes: record.size_bytes,
            });
        }
        let (segment, offset) = match record.location {
            ObjectLocation::Staged { segment, offset } => (segment, offset),
            ObjectLocation::Migrated { blob, offset } => {
                let opened = self
                    .read_migrated(&record, blob, offset, range.clone(), priority.kind())
                    .await;
                let reader = match opened {
                    Err(_) if may_retry && self.moved(&record).await? => return Ok(None),
                    other => other?,
                };
                let whole = check == ContentCheck::WholeObject
                    && range.start == 0
                    && range.end == record.size_bytes;
                return Ok(Some(ObjectReader {
                    record,
                    range,
                    source: Source::Migrated(reader),
                    whole_hash: whole.then(blake3::Hasher::new),
                }));
            }
        };
        let opened = self
            .staging
            .read(
                segment,
                offset,
                key,
                record.size_bytes,
                range.clone(),
                check,
            )
            .await;
        match opened {
            Ok(reader) => Ok(Some(ObjectReader {
                record,
                range,
                source: Source::Staged(Box::new(reader)),
                whole_hash: None, // the staging log checks its own trailer
            })),
            Err(StagingError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && may_retry =>
            {
                Ok(None)
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Whether `record`'s object is no longer where `record` says (moved, replaced or gone).
    async fn moved(&self, record: &ObjectRecord) -> StoreResult<bool> {
        let now = self.catalog.object(&record.key).await?;
        Ok(now.is_none_or(|now| now.location != record.location))
    }

    /// Removes `key` at once; returns what was removed. Staging space is freed when no object
    /// uses its segment any more.
    pub async fn delete(&self, key: &str) -> StoreResult<ObjectRecord> {
        check_key(key)?;
        let removed = self
            .catalog
            .delete_object(key)
            .await?
            .ok_or_else(|| StoreError::NoSuchKey { key: key.into() })?;
        if matches!(removed.location, ObjectLocation::Staged { .. }) {
            self.reclaim_staging().await?;
        }
        Ok(removed)
    }

    /// Objects whose keys start with `prefix` and sort after `after`, in key order, at most
    /// `limit`.
    pub async fn list(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<ObjectRecord>> {
        Ok(self.catalog.list_objects(prefix, after, limit).await?)
    }

    pub async fn status(&self) -> StoreResult<StoreStatus> {
        let stats = self.catalog.stats().await?;
        let unhealthy = self.catalog.unhealthy_disks().await?;
        Ok(StoreStatus {
            objects: stats.objects,
            bytes: stats.bytes,
            staged_objects: stats.staged_objects,
            staged_bytes: stats.staged_bytes,
            disks_active: u64::from(self.rack_io.driver.audit_counters().active_now),
            disks_failed: unhealthy.len() as u64,
            rebuild_pending: stats.rebuild_pending,
            staging_used_bytes: self.staging.used_bytes(),
            staging_limit_bytes: self.config.staging.limit_bytes,
            read_repairs: self.heal.counters().stacks_repaired,
            read_repairs_failed: self.heal.counters().repairs_failed,
            migrated_reads: self.rack_io.disk_reads.totals().reads,
            migrated_reads_with_parity: self.rack_io.disk_reads.totals().reads_with_parity,
            dead_bytes: stats.dead_bytes,
        })
    }

    /// Frees sealed staging segments no staged object references any more; returns how many.
    /// Segments another live process still holds (appending, or committing into them) are left
    /// for a later pass.
    pub async fn reclaim_staging(&self) -> StoreResult<usize> {
        // One pass at a time (concurrent PUTs that replace keys each reclaim).
        let _reclaiming = self.staging.reclaim_guard().await;
        let candidates = self.staging.freeable_segments();
        if candidates.is_empty() {
            return Ok(0);
        }
        // A first look at the catalog only narrows what to claim; the decision is the second.
        let referenced = self.catalog.segments_in_use().await?;
        let mut claimed = Vec::new();
        for segment in candidates.into_iter().filter(|s| !referenced.contains(s)) {
            if let Claim::Claimed(claim) = self.staging.claim_segment(segment).await? {
                claimed.push(claim);
            }
        }
        if claimed.is_empty() {
            return Ok(0);
        }
        // Claims first, the catalog second: see the module invariants.
        let referenced = self.catalog.segments_in_use().await?;
        let mut freed = 0;
        for claim in claimed {
            // Checked at free time: a migration pins a segment before reading it.
            let segment = claim.segment();
            if referenced.contains(&segment) || self.migration.is_pinned(segment) {
                continue; // dropping the claim releases it
            }
            self.staging.free_claimed(claim).await?;
            freed += 1;
        }
        Ok(freed)
    }

    /// Where the store's host-file fsyncs go (crate::durable).
    pub(crate) fn host_files(&self) -> &crate::durable::HostFiles {
        self.staging.host_files()
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }
    /// Takes `DATA/upkeep.lock` (shared within this process; [`StoreError::UpkeepBusy`] when
    /// another process holds it). Flush, rebuild, scrub and upkeep take it themselves.
    pub fn upkeep_lock(&self) -> StoreResult<crate::lock::UpkeepGuard> {
        self.upkeep_lock.acquire()
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }
    pub fn rack(&self) -> &Rack {
        &self.rack
    }
    pub fn layout(&self) -> &Layout {
        &self.config.layout
    }
    pub fn catalog(&self) -> &C {
        &self.catalog
    }
    pub fn staging(&self) -> &StagingLog {
        &self.staging
    }
    /// What recovery found and did when this store was opened.
    pub fn recovery(&self) -> &StoreRecovery {
        &self.recovery
    }
    /// The disks, the driver, the placer and the erasure code.
    pub fn rack_io(&self) -> &StoreRack {
        &self.rack_io
    }

    /// The store's time source (see the field): the S3 layer reads and waits on it too.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The store with `clock` as its time source instead of the real one, for tests that move
    /// time by hand ([`crate::clock::ManualClock`]). The driver keeps its real clock: the
    /// disks under it take real time.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Store<C> {
        self.clock = clock;
        self
    }

    /// Calendar time on the store's clock, in milliseconds since 1970.
    pub fn now_unix_ms(&self) -> i64 {
        self.clock.unix_ms()
    }
    pub(crate) fn migration(&self) -> &crate::migrate::MigrationState {
        &self.migration
    }
    pub(crate) fn heal_state(&self) -> &std::sync::Arc<crate::heal::HealState> {
        &self.heal
    }
}

/// The catalog's file in the data directory (SQLite, WAL mode; `-wal` and `-shm` beside it).
pub const CATALOG_FILE: &str = "catalog.sqlite";

/// The default store: the SQLite catalog at `DATA/catalog.sqlite`.
pub type SqliteStore = Store<SqliteCatalog>;

impl Store<SqliteCatalog> {
    /// [`Store::init`] with a new SQLite catalog at `DATA/catalog.sqlite`.
    pub async fn init_sqlite(data_dir: &Path, config: StoreConfig) -> StoreResult<SqliteStore> {
        config::validate(&config, &data_dir.join(STORE_FILE))?;
        if data_dir.join(STORE_FILE).exists() {
            return Err(StoreError::AlreadyInitialized {
                path: data_dir.display().to_string(),
            });
        }
        std::fs::create_dir_all(data_dir).map_err(io_error(data_dir))?;
        let catalog = SqliteCatalog::open(&data_dir.join(CATALOG_FILE)).await?;
        Store::init(data_dir, config, catalog).await
    }

    /// [`Store::open`] with the SQLite catalog at `DATA/catalog.sqlite`. A catalog that is
    /// missing, empty or unreadable while the directory holds staging segments or stripe stacks
    /// is [`StoreError::CatalogLost`], and nothing is changed (docs/store.md, "A lost
    /// catalog"); one that is missing or empty where there is nothing to lose is created anew.
    pub async fn open_sqlite(data_dir: &Path) -> StoreResult<SqliteStore> {
        if !data_dir.join(STORE_FILE).exists() {
            return Err(StoreError::NotInitialized {
                path: data_dir.display().to_string(),
            });
        }
        let path = data_dir.join(CATALOG_FILE);
        let catalog = match SqliteCatalog::open_existing(&path).await {
            Ok(catalog) => catalog,
            Err(error) => replace_lost_catalog(data_dir, &path, error).await?,
        };
        Store::open(data_dir, catalog).await
    }

    /// Waits for the repairs reads queued (and records disks they found failed), then closes
    /// the catalog's connections (checkpointing its WAL); acknowledged work is durable without
    /// this.
    pub async fn close(self) {
        if let Err(error) = self.settle_repairs().await {
            tracing::warn!(%error, "settling read repairs at close");
        }
        let _ = self.rack_io.driver.shutdown().await;
        self.catalog.close().await;
    }
}

/// The catalog at `path` did not open as an existing one (`error`). Refuses with
/// [`StoreError::CatalogLost`] while `data_dir` holds data only a catalog names; otherwise a
/// missing or empty catalog is created anew (a store whose catalog went before any PUT loses
/// nothing) and an unreadable one stays the error it was.
async fn replace_lost_catalog(
    data_dir: &Path,
    path: &Path,
    error: spinwise_catalog::CatalogError,
) -> StoreResult<SqliteCatalog> {
    use spinwise_catalog::CatalogError;
    let condition = match &error {
        CatalogError::Absent { absence, .. } => absence.to_string(),
        CatalogError::Open { message, .. } => format!("unreadable ({message})"),
        _ => return Err(error.into()),
    };
    let found = crate::survey::survey(data_dir)?;
    if found.holds_data() {
        return Err(StoreError::CatalogLost {
            data_dir: data_dir.display().to_string(),
            catalog: path.display().to_string(),
            condition,
            staging_segments: found.staging_segments,
            stripe_stacks: found.stripe_stacks,
        });
    }
    match error {
        CatalogError::Absent { .. } => {
            tracing::warn!(catalog = %path.display(), %condition, "creating a new catalog: the data directory holds no data");
            Ok(SqliteCatalog::open(path).await?)
        }
        other => Err(other.into()),
    }
}

/// Where a GET's bytes come from.
enum Source {
    /// Boxed: a staged reader holds its chunk buffer inline, the migrated one a channel.
    Staged(Box<StagedReader>),
    Migrated(MigratedReader),
}

/// A GET in progress: the object's record and its bytes in the requested range.
pub struct ObjectReader {
    record: ObjectRecord,
    range: Range<u64>,
    source: Source,
    /// BLAKE3 of what a migrated whole-object read with [`ContentCheck::WholeObject`] has
    /// returned so far, checked against the record at the end.
    whole_hash: Option<blake3::Hasher>,
}

impl ObjectReader {
    pub fn record(&self) -> &ObjectRecord {
        &self.record
    }
    /// The byte range being read.
    pub fn range(&self) -> Range<u64> {
        self.range.clone()
    }
    /// The next verified piece of the range (at most one staging chunk, or the part of one
    /// stripe of a migrated object), or `None` at the end.
    pub async fn next_chunk(&mut self) -> StoreResult<Option<Bytes>> {
        let chunk = match &mut self.source {
            Source::Staged(reader) => reader.next_chunk().await?,
            Source::Migrated(reader) => reader.next_chunk().await?,
        };
        match (&chunk, &mut self.whole_hash) {
            (Some(bytes), Some(hasher)) => {
                hasher.update(bytes);
            }
            (None, Some(_)) => self.check_whole_hash()?,
            _ => {}
        }
        Ok(chunk)
    }

    fn check_whole_hash(&mut self) -> StoreResult<()> {
        let hasher = self.whole_hash.take().expect("called with a hasher");
        if *hasher.finalize().as_bytes() != self.record.content_hash {
            return Err(StoreError::ContentHashMismatch {
                key: self.record.key.clone(),
            });
        }
        Ok(())
    }
    /// For a migrated object, once read to the end: where its time went (`None` for staged
    /// objects, which wait for nothing).
    pub fn timing(&self) -> Option<ReadTiming> {
        match &self.source {
            Source::Staged(_) => None,
            Source::Migrated(reader) => reader.timing(),
        }
    }
    /// The fragments a migrated read found bad and read around (empty for staged objects).
    pub fn repairs(&self) -> RepairReport {
        match &self.source {
            Source::Staged(_) => RepairReport::default(),
            Source::Migrated(reader) => reader.repairs().clone(),
        }
    }
    /// For a migrated object, once read to the end: the blob's columns the read took (a column
    /// ≥ k is a parity column standing in for a busy or missing data disk); empty for staged
    /// objects.
    pub fn columns_read(&self) -> Vec<usize> {
        match &self.source {
            Source::Staged(_) => Vec::new(),
            Source::Migrated(reader) => reader.columns_read().to_vec(),
        }
    }
}
