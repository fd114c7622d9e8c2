//! spinwise-catalog: the store's durable metadata behind the [`Catalog`] trait. The catalog is
//! the source of truth for what exists: an object is visible exactly when the catalog has it,
//! so a crash between writing bytes and committing their record leaves only garbage, never a
//! half-visible object. It lives on the always-on disk, never on a spun-down one.
//!
//! Records: objects (key → staged location or bundle/blob + offset), blobs (group, the disk of
//! each fragment column, code, sizes, content hash, state), disks (health) and rebuild
//! work, and each blob's last scrub verification (`record_scrub`, `scrub_due`). Compaction
//! reuses `commit_blob` with moves `from` a `Migrated` location (an object moves between blobs
//! only if it still points at the old blob and offset) and lists a blob's objects with
//! `objects_in_blob`. The warm tier's garbage collector picks staging segments by
//! `segment_usage`, lists a segment's staged objects with `staged_in_segment`, and after copying
//! a record repoints it with `restage` (which, like `demote`, applies only if the object is still
//! where the decision saw it). Every method that changes more than one record does so in one
//! transaction.
//!
//! Backends:
//! - [`SqliteCatalog`] (`sqlite.rs`): SQLite through sqlx in WAL mode with `synchronous = FULL`
//!   (a method that returned `Ok` is durable), foreign keys on, a bounded pool, schema version 4
//!   (versions 1 to 3 migrated in place) created from an empty database and newer versions
//!   refused; the embedded default.
//! - [`MemoryCatalog`] (`memory.rs`): BTreeMaps behind a mutex; the reference model the SQLite
//!   backend is tested against (tests/it/differential.rs), and a catalog for store unit tests.
//!
//! Both validate requests with the same rules (`rules.rs`) before changing anything, so they
//! refuse the same requests with the same errors and a refused request changes nothing. Numbers
//! are stored as i64: a `u64` above `i64::MAX` is refused with [`CatalogError::Limit`]. The
//! rules per method, the schema and the durability settings are in docs/catalog.md.
//!
//! Invariants the integrity check verifies (see [`Catalog::integrity_check`]):
//! - every migrated object points into a committed blob: `offset + size <= blob.size_bytes`;
//! - a committed blob's `live_bytes` is the sum of the sizes of the objects pointing into it;
//! - a blob has `k + r` distinct disks (that they are all in its group needs the layout, which
//!   the catalog does not hold: the store checks placement);
//! - a rebuild task names a committed blob and a column whose disk is the task's failed disk,
//!   marked failed;
//! - the blob id counter is above every blob id;
//! - every warm object is staged (schema version 3 also holds this as a CHECK constraint);
//! - (SQLite) the per-disk usage it keeps for [`Catalog::disk_usage`] equals a recount from the
//!   blobs, and the totals it keeps for [`Catalog::stats`] a recount from the objects and blobs.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;

pub mod memory;
mod rules;
pub mod sqlite;
pub use memory::MemoryCatalog;
pub use spinwise_model::{DiskIndex, GroupIndex};
pub use sqlite::SqliteCatalog;

pub type BlobId = u64;
/// A staging-log segment number (see spinwise-store's staging log).
pub type SegmentId = u64;
/// BLAKE3 of an object's or blob's bytes.
pub type ContentHash = [u8; 32];

/// Where an object's bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectLocation {
    /// In the staging log: `segment`, record starting at `offset`.
    Staged { segment: SegmentId, offset: u64 },
    /// Migrated into `blob`, its bytes at `offset` within the blob's data.
    Migrated { blob: BlobId, offset: u64 },
}

/// Which tier an object belongs in. A `Warm` object stays in the staging log on the always-on
/// devices (S3's online classes, `STANDARD` and its kin); a `Cold` one is bundled and migrated
/// into a group's disks by the migrator. Invariant: a `Warm` object is `Staged` (nothing moves
/// an object into a blob while it is warm; [`Catalog::demote`] makes it cold first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Stays staged on the always-on devices until demoted.
    Warm,
    /// Migrated to the sleeping disks by the migrator (the store's behaviour before tiers).
    #[default]
    Cold,
}

impl Tier {
    /// The name the SQLite catalog stores and reports show.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Warm => "warm",
            Tier::Cold => "cold",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRecord {
    pub key: String,
    pub size_bytes: u64,
    pub content_hash: ContentHash,
    /// Set by the store from its clock; informational.
    pub created_unix_ms: i64,
    pub location: ObjectLocation,
    /// Warm objects stay staged; cold ones migrate (see [`Tier`]).
    pub tier: Tier,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BlobState {
    /// Stripe stacks are being written; not readable; removed on recovery.
    Writing,
    /// Durable on its disks and referenced by objects.
    Committed,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobRecord {
    pub id: BlobId,
    pub group: GroupIndex,
    /// `disks[c]` holds fragment column `c` (0..k data, k..k+r parity).
    pub disks: Vec<DiskIndex>,
    pub k: u32,
    pub r: u32,
    pub fragment_bytes: u32,
    /// The blob's data bytes (before coding and padding).
    pub size_bytes: u64,
    pub content_hash: ContentHash,
    pub state: BlobState,
    /// Bytes of live objects in the blob (dead ones are reclaimed by compaction).
    pub live_bytes: u64,
}

impl BlobRecord {
    /// Stripes in each of the blob's stacks: `ceil(size_bytes / (k × fragment_bytes))`, 0 for
    /// an empty blob (and for a fragment size of 0, which holds nothing).
    pub fn stripes(&self) -> u64 {
        let stripe_bytes = u64::from(self.k) * u64::from(self.fragment_bytes);
        if stripe_bytes == 0 {
            return 0;
        }
        self.size_bytes.div_ceil(stripe_bytes)
    }
}

/// What the blobs of the catalog (`Writing` and `Committed`) keep on one disk: how many have a
/// column there and the sum of their [`BlobRecord::stripes`]. A stack file's bytes are a header
/// plus its stripes' framed fragments, so a store turns this into used bytes without reading a
/// blob ([`Catalog::disk_usage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskUsage {
    pub disk: DiskIndex,
    pub blobs: u64,
    pub stripes: u64,
}

impl DiskUsage {
    /// What `blobs` keep on each disk, counted from the blobs themselves (ascending by disk):
    /// the reference for the totals a backend keeps.
    pub fn of<'a>(blobs: impl IntoIterator<Item = &'a BlobRecord>) -> Vec<DiskUsage> {
        let mut usage: BTreeMap<DiskIndex, DiskUsage> = BTreeMap::new();
        for blob in blobs {
            for &disk in &blob.disks {
                let entry = usage.entry(disk).or_insert(DiskUsage {
                    disk,
                    blobs: 0,
                    stripes: 0,
                });
                entry.blobs += 1;
                entry.stripes = entry.stripes.saturating_add(blob.stripes());
            }
        }
        usage.into_values().collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DiskHealth {
    Healthy,
    Failed,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskRecord {
    pub disk: DiskIndex,
    pub health: DiskHealth,
}

/// One stripe stack to regenerate: `blob`'s column `column`, lost with a failed disk.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RebuildTask {
    pub blob: BlobId,
    pub column: u32,
    pub failed_disk: DiskIndex,
}

/// One object moved from staging into a blob by a migration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    pub key: String,
    /// Where the migrator read it; the move applies only if the object is still there (it may
    /// have been deleted or overwritten meanwhile, then its bytes in the blob are dead).
    pub from: ObjectLocation,
    pub blob_offset: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatalogStats {
    pub objects: u64,
    pub bytes: u64,
    pub staged_objects: u64,
    pub staged_bytes: u64,
    /// Staged objects in the warm tier (they stay staged; the rest of the staged ones are
    /// waiting for migration).
    pub warm_objects: u64,
    pub warm_bytes: u64,
    pub blobs: u64,
    pub rebuild_pending: u64,
    /// Bytes of committed blobs no object points at any more (`size_bytes - live_bytes`,
    /// summed): what compaction can reclaim.
    pub dead_bytes: u64,
}

/// The staged objects of one staging-log segment, from [`Catalog::segment_usage`]: what the
/// warm tier's garbage collector weighs to pick the segments worth copying out of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentUsage {
    pub segment: SegmentId,
    /// Staged objects whose record is in the segment (both tiers).
    pub objects: u64,
    /// The sum of their `size_bytes`: the bytes a copy would have to move.
    pub live_bytes: u64,
    /// How many of them are warm (the rest are cold, waiting for migration).
    pub warm_objects: u64,
}

/// A committed blob and when scrub last verified every fragment of it (`None`: never; the
/// store records a blob it has just written as verified at its commit), from
/// [`Catalog::scrub_due`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScrubEntry {
    pub blob: BlobRecord,
    pub verified_unix_ms: Option<i64>,
}

/// Problems found by [`Catalog::integrity_check`], one line each; empty means consistent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntegrityReport {
    pub problems: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("catalog database {path}: {message}")]
    Open { path: String, message: String },
    #[error("catalog query failed ({operation}): {message}")]
    Query {
        operation: &'static str,
        message: String,
    },
    #[error("blob {blob} is not in the catalog")]
    UnknownBlob { blob: BlobId },
    #[error("blob {blob} is {state:?}, the operation needs it {expected:?}")]
    BlobState {
        blob: BlobId,
        state: BlobState,
        expected: BlobState,
    },
    #[error("catalog limit: {0}")]
    Limit(String),
    /// [`SqliteCatalog::open_existing`] found no catalog to open (and created none).
    #[error("catalog database {path} is {absence}")]
    Absent { path: String, absence: Absence },
    /// The request breaks a rule of the trait (e.g. a `Migrated` record given to `put_object`,
    /// a blob id never handed out, a rebuild task for a healthy disk); nothing was changed.
    #[error("invalid catalog request ({operation}): {message}")]
    Invalid {
        operation: &'static str,
        message: String,
    },
}

/// Why there is no catalog where one was expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Absence {
    /// No file at the path.
    Missing,
    /// A file of no bytes (`truncate -s 0`), or a database holding no tables at all.
    Empty,
}

impl std::fmt::Display for Absence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Absence::Missing => "missing",
            Absence::Empty => "empty",
        })
    }
}

/// Durable metadata. Async so a networked backend (PostgreSQL) fits the same trait; futures are
/// `Send` so the store can run them on any tokio worker. Listing methods take a `limit` and return
/// at most that many records (a limit on everything).
pub trait Catalog: Send + Sync + 'static {
    /// Inserts or replaces the object `record.key` (must be `Staged`). Replacing a migrated
    /// object lowers its old blob's `live_bytes`. Durable when it returns.
    fn put_object(
        &self,
        record: ObjectRecord,
    ) -> impl Future<Output = Result<Option<ObjectRecord>, CatalogError>> + Send;
    fn object(
        &self,
        key: &str,
    ) -> impl Future<Output = Result<Option<ObjectRecord>, CatalogError>> + Send;
    /// Removes `key`; returns the removed record. Lowers its blob's `live_bytes`.
    fn delete_object(
        &self,
        key: &str,
    ) -> impl Future<Output = Result<Option<ObjectRecord>, CatalogError>> + Send;
    /// Objects with keys starting with `prefix` and greater than `after`, in key order.
    fn list_objects(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ObjectRecord>, CatalogError>> + Send;
    /// Objects migrated into `blob`, in (offset, key) order, after the position `after`
    /// (exclusive; offsets repeat only for empty objects, so the key breaks ties). What
    /// compaction moves.
    fn objects_in_blob(
        &self,
        blob: BlobId,
        after: Option<(u64, &str)>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ObjectRecord>, CatalogError>> + Send;
    /// Staged objects in log order (segment, offset, then key), all of them or only those of
    /// `tier`.
    fn staged_objects(
        &self,
        tier: Option<Tier>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ObjectRecord>, CatalogError>> + Send;
    /// Warm objects, oldest first (`created_unix_ms`, then key): the order the store demotes
    /// them in when the warm tier is over its capacity.
    fn warm_objects(
        &self,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ObjectRecord>, CatalogError>> + Send;
    /// Makes `key` cold if it is warm and still at `at` (so a demotion decided on one version
    /// of an object never applies to a newer one); returns whether it changed. Durable. A place
    /// above `i64::MAX` holds no object: `false`, not an error.
    fn demote(
        &self,
        key: &str,
        at: &ObjectLocation,
    ) -> impl Future<Output = Result<bool, CatalogError>> + Send;
    /// Points `key` at a copy of its record, `to` (segment, offset), if it is still staged at
    /// `from`; size, hash, tier and creation time are kept. Returns whether it moved. Durable.
    /// A move decided on one version never applies to a newer one (the same rule as `demote`).
    /// Both `to` numbers must be storable (≤ `i64::MAX`, else [`CatalogError::Limit`], checked
    /// before anything changes); a `from` above `i64::MAX` names no record, so nothing moves.
    fn restage(
        &self,
        key: &str,
        from: (SegmentId, u64),
        to: (SegmentId, u64),
    ) -> impl Future<Output = Result<bool, CatalogError>> + Send;
    /// Staged objects (both tiers) whose record is in `segment`, in (offset, key) order, after
    /// the position `after` (exclusive), as `objects_in_blob` pages a blob. What the warm
    /// tier's garbage collector copies out of a segment. A segment or offset above `i64::MAX`
    /// holds nothing.
    fn staged_in_segment(
        &self,
        segment: SegmentId,
        after: Option<(u64, &str)>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ObjectRecord>, CatalogError>> + Send;
    /// One row per segment some staged object lives in, in segment order, at most `limit`,
    /// only segments after `after` when given (the last segment of the previous page): how
    /// many staged objects, their bytes and how many are warm. A segment's bytes above
    /// `i64::MAX` are [`CatalogError::Limit`] (as `stats` totals are); an `after` above it
    /// leaves no segment to list.
    fn segment_usage(
        &self,
        after: Option<SegmentId>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<SegmentUsage>, CatalogError>> + Send;
    /// Segments some staged object still lives in (the rest may be freed).
    fn segments_in_use(
        &self,
    ) -> impl Future<Output = Result<BTreeSet<SegmentId>, CatalogError>> + Send;
    /// A fresh blob id, never handed out before (durable).
    fn next_blob_id(&self) -> impl Future<Output = Result<BlobId, CatalogError>> + Send;
    /// Raises the blob id counter, if it is not already above, so every id handed out from now
    /// on is above `highest_used`: an id the store found in use outside the catalog (a stripe
    /// stack on a disk, left by blobs a lost or older catalog no longer knows). Never lowers
    /// it. Returns the counter's old value if it was raised, `None` if it already was above.
    /// Durable. A `highest_used` whose successor is not storable (≥ `i64::MAX`) is
    /// [`CatalogError::Limit`] and changes nothing.
    fn reserve_blob_ids_through(
        &self,
        highest_used: BlobId,
    ) -> impl Future<Output = Result<Option<BlobId>, CatalogError>> + Send;
    /// Records a blob in state `Writing` before its stripe stacks are written (intent).
    fn begin_blob(
        &self,
        record: BlobRecord,
    ) -> impl Future<Output = Result<(), CatalogError>> + Send;
    /// In one transaction: the blob becomes `Committed`, and each migration whose object is still
    /// at `from` (and cold: a warm object never migrates) points into the blob; returns how
    /// many moved. `live_bytes` is set accordingly.
    fn commit_blob(
        &self,
        blob: BlobId,
        moves: Vec<Migration>,
    ) -> impl Future<Output = Result<u64, CatalogError>> + Send;
    /// Forgets a `Writing` blob (its stripe stacks are garbage).
    fn abort_blob(&self, blob: BlobId) -> impl Future<Output = Result<(), CatalogError>> + Send;
    fn blob(
        &self,
        blob: BlobId,
    ) -> impl Future<Output = Result<Option<BlobRecord>, CatalogError>> + Send;
    fn blobs_in_state(
        &self,
        state: BlobState,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<BlobRecord>, CatalogError>> + Send;
    fn blobs_in_group(
        &self,
        group: GroupIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<BlobRecord>, CatalogError>> + Send;
    fn blobs_on_disk(
        &self,
        disk: DiskIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<BlobRecord>, CatalogError>> + Send;
    /// The committed blobs of `group` with dead bytes (`live_bytes < size_bytes`) or nothing
    /// live, by id after `after`, at most `limit`: compaction's candidates, found without
    /// reading the group's other blobs (an archive's blobs are mostly all live).
    fn blobs_with_dead_bytes(
        &self,
        group: GroupIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<BlobRecord>, CatalogError>> + Send;
    /// Removes a committed blob with no live bytes (after compaction or deletes).
    fn remove_blob(&self, blob: BlobId) -> impl Future<Output = Result<(), CatalogError>> + Send;
    /// Every disk some blob has a column on, ascending, with what the blobs keep there
    /// ([`DiskUsage`]), columns moved by a rebuild on their new disk. Kept as the blobs change,
    /// so it costs O(disks), not O(blobs): a store counts its disks' used space from it.
    fn disk_usage(&self) -> impl Future<Output = Result<Vec<DiskUsage>, CatalogError>> + Send;
    fn set_disk_health(
        &self,
        disk: DiskIndex,
        health: DiskHealth,
    ) -> impl Future<Output = Result<(), CatalogError>> + Send;
    /// Every disk not `Healthy` (disks absent from the catalog are healthy).
    fn unhealthy_disks(&self)
    -> impl Future<Output = Result<Vec<DiskRecord>, CatalogError>> + Send;
    /// Adds rebuild tasks (idempotent per (blob, column)).
    fn add_rebuild_tasks(
        &self,
        tasks: Vec<RebuildTask>,
    ) -> impl Future<Output = Result<(), CatalogError>> + Send;
    fn rebuild_tasks(
        &self,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RebuildTask>, CatalogError>> + Send;
    /// In one transaction: the blob's column `task.column` now lives on `new_disk`, and the task
    /// is done.
    fn complete_rebuild(
        &self,
        task: RebuildTask,
        new_disk: DiskIndex,
    ) -> impl Future<Output = Result<(), CatalogError>> + Send;
    fn stats(&self) -> impl Future<Output = Result<CatalogStats, CatalogError>> + Send;
    /// Records that scrub read and verified every fragment of the committed `blob` at
    /// `verified_unix_ms` (must be positive; 0 means "never" in storage).
    fn record_scrub(
        &self,
        blob: BlobId,
        verified_unix_ms: i64,
    ) -> impl Future<Output = Result<(), CatalogError>> + Send;
    /// Committed blobs of `group` never verified or last verified before `before_unix_ms`, most
    /// overdue first: never verified, then oldest verification, then by id; at most `limit`.
    fn scrub_due(
        &self,
        group: GroupIndex,
        before_unix_ms: i64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ScrubEntry>, CatalogError>> + Send;
    /// The latest scrub verification of any blob of `group` (`None` if none was ever verified).
    fn last_scrub_in_group(
        &self,
        group: GroupIndex,
    ) -> impl Future<Output = Result<Option<i64>, CatalogError>> + Send;
    /// Checks the invariants in the crate documentation (and the database's own integrity).
    fn integrity_check(&self)
    -> impl Future<Output = Result<IntegrityReport, CatalogError>> + Send;
}
