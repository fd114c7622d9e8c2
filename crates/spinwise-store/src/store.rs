//! [`Store`]: the state every operation of the store shares (configuration, rack, catalog,
//! staging log, the disks and their driver, the migrator's and heal's state, the upkeep lock,
//! the clock) and the object API's writes and lookups: PUT, DELETE, LIST, stat, status, and
//! freeing staging segments. An object is visible exactly when the catalog has it; PUT makes its
//! bytes durable in the staging log (fsync) before the catalog commit, and acknowledges after
//! the commit (docs/staging-format.md, "PUT durability sequence"). Opening and closing are
//! crate::open's, GET crate::get's; the operations on the disks (flush, read, repair, scrub,
//! compaction, upkeep) are `impl Store` blocks in their own modules, above this one
//! (docs/ARCHITECTURE.md, "spinwise-store inside").
//!
//! Invariants:
//! - a staging segment is freed only when it is sealed, unpinned, claimed (its `flock` taken:
//!   no live process, this one or another, may still append to it or commit into it; see
//!   [`crate::staging`]) and the catalog, asked *after* the claim, references nothing in it —
//!   so an append whose commit lands meanwhile is never freed, nor is a segment a migration
//!   has pinned (checked just before freeing; see [`crate::migrate`]);
//! - a PUT's bytes go into the tail cache ([`crate::tail_cache`]) after its catalog commit and
//!   before its segment is unpinned, so the entry cannot outlive a freeing of that segment;
//! - this module depends on no operation module: the fields' types come from below it.

use crate::clock::Clock;
use crate::config::{StoreConfig, WarmWhenFull};
use crate::driver::GroupPhase;
use crate::error::{StoreError, StoreResult};
use crate::rack::StoreRack;
use crate::staging::{Claim, MAX_KEY_BYTES, RecoveryReport, StagingLog};
use crate::tail_cache::{TailCache, TailCacheStats};
use serde::Serialize;
use spinwise_catalog::{Catalog, ObjectLocation, ObjectRecord, SqliteCatalog, Tier};
use spinwise_model::{GroupIndex, Layout, Rack};
use spinwise_sched::scheduler::Kind;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncRead;

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
    /// Of the staged objects, those in the warm tier (they stay staged; the rest wait for
    /// migration).
    pub warm_objects: u64,
    pub warm_bytes: u64,
    /// The warm tier's capacity ([`StoreConfig::warm_capacity_bytes`]).
    pub warm_capacity_bytes: u64,
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
    /// The tail cache's hits, misses and size since this process opened the store (see
    /// [`crate::tail_cache`]).
    pub tail_cache: TailCacheStats,
    /// The staging log's devices (one, or Gecko's chain): the tail's index and each device's
    /// bytes (see [`crate::staging::ChainState`]).
    pub staging_tail_device: u64,
    pub staging_device_used_bytes: Vec<u64>,
    /// What the warm collector did since this process opened the store (see
    /// [`crate::warm_gc`]).
    pub warm_collection: crate::staging::WarmCollectReport,
}

/// What recovery found and did when the store was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreRecovery {
    pub staging: RecoveryReport,
    /// Catalog rows that disagree with the staging log (a broken invariant), one line each.
    pub problems: Vec<String>,
}

pub struct Store<C: Catalog> {
    pub(crate) data_dir: PathBuf,
    pub(crate) config: StoreConfig,
    pub(crate) rack: Rack,
    pub(crate) catalog: C,
    pub(crate) staging: StagingLog,
    pub(crate) recovery: StoreRecovery,
    /// The disks, their driver, the placer and the code (see [`crate::rack`]).
    pub(crate) rack_io: StoreRack,
    /// The migrator's disk space, flush lock and pinned segments (see [`crate::migrate`]).
    pub(crate) migration: crate::space::MigrationState,
    /// Repairs queued by reads and failed disks found (see [`crate::heal`]).
    pub(crate) heal: std::sync::Arc<crate::heal::HealState>,
    /// `DATA/upkeep.lock` (see [`crate::lock`]).
    pub(crate) upkeep_lock: crate::lock::UpkeepLock,
    /// The time source of everything but the driver: dates written into rows, the upkeep
    /// task's timers and the S3 layer's ([`crate::clock`]). Real unless a test set its own.
    pub(crate) clock: Arc<dyn Clock>,
    /// Recently written objects' bytes (see [`crate::tail_cache`]); the staging log tells it
    /// of every segment it frees.
    pub(crate) tail_cache: Arc<TailCache>,
    /// PUTs and staged GETs in flight: the foreground work the warm collector's policy lets
    /// go first (crate::warm_gc).
    pub(crate) staging_requests: StagingRequests,
    /// Everything the warm collector did in this process, merged (manual collections and
    /// upkeep's alike), for `status` and the server's metrics.
    pub(crate) warm_collected: std::sync::Mutex<crate::staging::WarmCollectReport>,
}

/// Counts the requests using the staging devices (PUTs appending, GETs reading a staged
/// record): how many are in flight and how many have ended. Each holds a [`StagingRequest`];
/// dropping it (done, failed or abandoned) counts it out, so the count can never leak upward.
#[derive(Clone, Debug, Default)]
pub(crate) struct StagingRequests(Arc<RequestCounts>);

#[derive(Debug, Default)]
pub(crate) struct RequestCounts {
    in_flight: std::sync::atomic::AtomicU64,
    ended: std::sync::atomic::AtomicU64,
}

impl StagingRequests {
    pub(crate) fn start(&self) -> StagingRequest {
        self.0
            .in_flight
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        StagingRequest(Arc::clone(&self.0))
    }

    /// (in flight, ended so far).
    pub(crate) fn counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.0.in_flight.load(Relaxed), self.0.ended.load(Relaxed))
    }
}

/// One request counted in [`StagingRequests`] while it lives.
#[derive(Debug)]
pub(crate) struct StagingRequest(Arc<RequestCounts>);

impl Drop for StagingRequest {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering::Relaxed;
        self.0.ended.fetch_add(1, Relaxed);
        self.0.in_flight.fetch_sub(1, Relaxed);
    }
}

pub(crate) fn check_key(key: &str) -> StoreResult<()> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Err(StoreError::KeyLength {
            length_bytes: key.len(),
        });
    }
    Ok(())
}

impl<C: Catalog> Store<C> {
    /// Stores `reader`'s bytes under `key` as a cold object (migrated to the groups by
    /// upkeep), replacing any older object of that key. Durable (staging fsync, then catalog
    /// commit) when it returns.
    pub async fn put(
        &self,
        key: &str,
        reader: impl AsyncRead + Unpin,
    ) -> StoreResult<ObjectRecord> {
        self.put_with(key, Tier::Cold, reader, |_| std::future::ready(Ok(())))
            .await
    }

    /// [`Store::put`] into `tier` (a `Warm` object stays staged; see [`Tier`]) with
    /// `before_commit` run between the staging fsync and the catalog commit, given the record about to be committed (its size and BLAKE3 are known only
    /// then). A layer above that keeps its own rows about objects (the S3 layer's metadata)
    /// writes them here, so a committed object always has its row and the content hash is
    /// computed once. An `Err(reason)` abandons the PUT: nothing becomes visible (the staged
    /// record is reclaimed like one a crash left before its commit) and the PUT fails with
    /// [`StoreError::CommitRefused`].
    pub async fn put_with<Fut>(
        &self,
        key: &str,
        tier: Tier,
        reader: impl AsyncRead + Unpin,
        before_commit: impl FnOnce(&ObjectRecord) -> Fut,
    ) -> StoreResult<ObjectRecord>
    where
        Fut: std::future::Future<Output = Result<(), String>>,
    {
        check_key(key)?;
        let _request = self.staging_requests.start();
        self.check_warm_room(tier).await?;
        // The body is copied as it streams (while it stays small enough to cache), so the
        // object just written can be read back without a seek on the staging device.
        let mut body = self.tail_cache.capture(reader);
        // The PUT's stamp, read before its record is written: a PUT that begins after this one
        // is acknowledged reads a later time, so a lost catalog's recovery ranks the two
        // versions in that order (docs/store.md). It is also the object's creation time.
        let written_unix_us = self.clock.unix_us();
        let staged = (self.staging)
            .append_stamped(key, tier, written_unix_us, &mut body)
            .await?;
        let body = body.into_bytes();
        let record = ObjectRecord {
            key: key.to_string(),
            size_bytes: staged.size_bytes,
            content_hash: staged.content_hash,
            created_unix_ms: (written_unix_us / 1000) as i64,
            location: ObjectLocation::Staged {
                segment: staged.segment,
                offset: staged.offset,
            },
            tier,
        };
        if let Err(reason) = before_commit(&record).await {
            return Err(StoreError::CommitRefused {
                key: key.to_string(),
                reason,
            });
        }
        let replaced = self.catalog.put_object(record.clone()).await?;
        // Cached while `staged` still pins the segment: a freeing of it comes after, and drops
        // the entry.
        if let Some(body) = body.filter(|body| body.len() as u64 == staged.size_bytes) {
            self.tail_cache
                .insert((staged.segment, staged.offset), staged.content_hash, body)
                .await;
        }
        // The record is committed: its segment may be unpinned now.
        drop(staged);
        if replaced.is_some() {
            self.reclaim_staging().await?;
        }
        Ok(record)
    }

    /// Under `warm.when_full = "refuse"`, refuses a warm PUT while the warm tier holds its
    /// capacity or more (before anything is written). Costs one catalog query per warm PUT in
    /// that mode only.
    async fn check_warm_room(&self, tier: Tier) -> StoreResult<()> {
        if tier != Tier::Warm || self.config.warm.when_full != WarmWhenFull::Refuse {
            return Ok(());
        }
        let warm_bytes = self.catalog.stats().await?.warm_bytes;
        let capacity_bytes = self.config.warm_capacity_bytes();
        if warm_bytes >= capacity_bytes {
            return Err(StoreError::WarmFull {
                warm_bytes,
                capacity_bytes,
            });
        }
        Ok(())
    }

    /// Moves `key` from the warm tier to the cold one (a lifecycle transition, or the warm
    /// tier over its capacity): the migrator takes it from then on. Returns whether it was
    /// warm; a cold or migrated object is left as it is. Durable when it returns.
    pub async fn demote(&self, key: &str) -> StoreResult<bool> {
        let record = self.stat(key).await?;
        self.demote_listed(&record).await
    }

    /// [`Store::demote`] of exactly the version `listed` (from a listing): a newer PUT of the
    /// key since is left in its own tier, so a decision made on the listed version's age never
    /// applies to a younger one.
    pub async fn demote_listed(&self, listed: &ObjectRecord) -> StoreResult<bool> {
        if listed.tier != Tier::Warm {
            return Ok(false);
        }
        check_key(&listed.key)?;
        Ok(self.catalog.demote(&listed.key, &listed.location).await?)
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
        let chain = self.staging.chain_state();
        Ok(StoreStatus {
            objects: stats.objects,
            bytes: stats.bytes,
            staged_objects: stats.staged_objects,
            staged_bytes: stats.staged_bytes,
            warm_objects: stats.warm_objects,
            warm_bytes: stats.warm_bytes,
            warm_capacity_bytes: self.config.warm_capacity_bytes(),
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
            tail_cache: self.tail_cache.stats(),
            staging_tail_device: chain.tail as u64,
            staging_device_used_bytes: chain.used_bytes,
            warm_collection: self.warm_collection_totals(),
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

    /// What the warm collector did since this process opened the store (no catalog query:
    /// cheap enough for every metrics scrape); problems are not kept here, only counted in
    /// the reports of the collections that met them.
    pub fn warm_collection_totals(&self) -> crate::staging::WarmCollectReport {
        self.warm_collected
            .lock()
            .expect("warm totals lock")
            .clone()
    }

    /// The tail cache's counters now (no catalog query: cheap enough for every metrics
    /// scrape).
    pub fn tail_cache_stats(&self) -> TailCacheStats {
        self.tail_cache.stats()
    }

    /// The tail cache (see [`crate::tail_cache`]).
    pub fn tail_cache(&self) -> &TailCache {
        &self.tail_cache
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
    pub(crate) fn migration(&self) -> &crate::space::MigrationState {
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
