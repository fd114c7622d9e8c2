//! Per-disk space for the placer, and the migrator's state that holds it ([`MigrationState`]: the
//! space, the flush lock, the staging segments a migration is reading, the staged records found
//! damaged): how many bytes of stripe
//! stacks each disk holds, counted from the per-disk totals the catalog keeps
//! ([`Catalog::disk_usage`], O(disks)) the first time a flush, a compaction or a caller asks
//! (`ls` or a GET need none of it), kept up to date as the migrator begins and aborts blobs, and
//! turned into the [`DiskRoom`] map [`crate::placement::Placement`] decides from.
//!
//! Invariants:
//! - the books ([`Books`]) are one async lock held across the count and across every catalog
//!   change a booking records (a blob begun, aborted or removed), so the count never sees a
//!   change its booking then adds again, nor misses one whose booking it skipped: before the
//!   count a booking is skipped (the count reads the catalog after it), after it applied;
//! - a disk's used bytes are the sum of `code.stack_file_bytes(blob.size_bytes)` over every blob
//!   (committed *and* writing) with a stack on it: a `Writing` blob's stacks may be on the disk
//!   (a crash or a failed cleanup left them), so they count until the blob is aborted;
//! - capacity is what the emulated disks are created with (the rack model's mean capacity, as
//!   `rack.rs` does), so the accounting needs no disk spun up (`Disk::space` needs Active);
//! - room never underflows: a disk over its capacity has 0 bytes free, and removing a blob never
//!   takes a disk below 0 used bytes.

use crate::config::disk_capacity_bytes;
use crate::damaged::DamagedRecords;
use crate::error::StoreResult;
use crate::placement::DiskRoom;
use spinwise_catalog::{BlobRecord, Catalog, DiskIndex, SegmentId};
use spinwise_ec::{Code, HEADER_BYTES};
use spinwise_model::Rack;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

/// Bytes of stripe stacks on every disk of the rack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskSpace {
    capacity_bytes: u64,
    /// Indexed by disk.
    used_bytes: Vec<u64>,
}

impl DiskSpace {
    /// An empty rack of `disks` disks of `capacity_bytes` each.
    pub fn new(disks: usize, capacity_bytes: u64) -> DiskSpace {
        DiskSpace {
            capacity_bytes,
            used_bytes: vec![0; disks],
        }
    }

    /// Counts what the catalog's blobs keep on every disk ([`Catalog::disk_usage`]: O(disks),
    /// whatever the number of blobs).
    pub async fn from_catalog<C: Catalog>(
        catalog: &C,
        rack: &Rack,
        code: &Code,
    ) -> StoreResult<DiskSpace> {
        let empty = DiskSpace::new(rack.disk_count(), disk_capacity_bytes(rack));
        empty.count(catalog, code).await
    }

    /// This space with what the catalog's blobs keep on each disk added: per blob with a column
    /// on the disk, a stack header plus its stripes' framed fragments. That is
    /// `code.stack_file_bytes(blob.size_bytes)` summed, as [`DiskSpace::add_blob`] books it,
    /// because every blob is written with the store's code (its k and fragment size).
    async fn count<C: Catalog>(mut self, catalog: &C, code: &Code) -> StoreResult<DiskSpace> {
        let framed_fragment_bytes = code.framed_fragment_bytes() as u64;
        for usage in catalog.disk_usage().await? {
            if let Some(used) = self.used_bytes.get_mut(usage.disk as usize) {
                let headers = usage.blobs.saturating_mul(HEADER_BYTES as u64);
                let fragments = usage.stripes.saturating_mul(framed_fragment_bytes);
                *used = used.saturating_add(headers.saturating_add(fragments));
            }
        }
        Ok(self)
    }

    /// A blob was begun: its stacks take room on its disks.
    pub fn add_blob(&mut self, blob: &BlobRecord, code: &Code) {
        let stack_bytes = code.stack_file_bytes(blob.size_bytes);
        for &disk in &blob.disks {
            if let Some(used) = self.used_bytes.get_mut(disk as usize) {
                *used += stack_bytes;
            }
        }
    }

    /// A blob was aborted or removed: its stacks no longer take room.
    pub fn remove_blob(&mut self, blob: &BlobRecord, code: &Code) {
        let stack_bytes = code.stack_file_bytes(blob.size_bytes);
        for &disk in &blob.disks {
            if let Some(used) = self.used_bytes.get_mut(disk as usize) {
                // Saturating: a blob begun by another process after this one counted is not in
                // these books (one process per data directory is the rule; this keeps a broken
                // rule from wrapping the count).
                *used = used.saturating_sub(stack_bytes);
            }
        }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// Stack bytes on `disk` (0 for a disk outside the rack).
    pub fn used_bytes(&self, disk: DiskIndex) -> u64 {
        self.used_bytes.get(disk as usize).copied().unwrap_or(0)
    }

    /// The placer's view: every disk's free bytes, and whether it is healthy (not in
    /// `unhealthy`).
    pub fn room(&self, unhealthy: &BTreeSet<DiskIndex>) -> BTreeMap<DiskIndex, DiskRoom> {
        self.used_bytes
            .iter()
            .enumerate()
            .map(|(disk, &used)| {
                let disk = disk as DiskIndex;
                let room = DiskRoom {
                    free_bytes: self.capacity_bytes.saturating_sub(used),
                    healthy: !unhealthy.contains(&disk),
                };
                (disk, room)
            })
            .collect()
    }
}

/// The migrator's state inside a [`Store`](crate::Store): disk space, the flush lock and pinned
/// segments.
pub struct MigrationState {
    /// `None` until counted ([`MigrationState::space`]).
    space: tokio::sync::Mutex<Option<DiskSpace>>,
    /// What counting needs: the rack's disks and their capacity, and the code.
    disks: usize,
    capacity_bytes: u64,
    code: Arc<Code>,
    flush_lock: tokio::sync::Mutex<()>,
    pinned: Mutex<BTreeMap<SegmentId, usize>>,
    /// Staged records a flush found damaged (skipped by every later flush of this process).
    damaged: DamagedRecords,
}

impl std::fmt::Debug for MigrationState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MigrationState").finish_non_exhaustive()
    }
}

/// The space books, held: a booking made while they are held records a catalog change made
/// while they are held (module invariants). Unloaded books skip bookings.
pub(crate) struct Books<'a> {
    space: tokio::sync::MutexGuard<'a, Option<DiskSpace>>,
    code: &'a Code,
}

impl Books<'_> {
    /// Counts a blob begun (its stacks may be on its disks from now on).
    pub(crate) fn add_blob(&mut self, blob: &BlobRecord) {
        if let Some(space) = self.space.as_mut() {
            space.add_blob(blob, self.code);
        }
    }

    /// A blob's stacks no longer take room on its disks.
    pub(crate) fn remove_blob(&mut self, blob: &BlobRecord) {
        if let Some(space) = self.space.as_mut() {
            space.remove_blob(blob, self.code);
        }
    }
}

impl MigrationState {
    /// The migrator's state of a store opening on `rack` with `code`; the disks' space is
    /// counted when first asked for.
    pub fn new(rack: &Rack, code: Arc<Code>) -> MigrationState {
        MigrationState {
            space: tokio::sync::Mutex::new(None),
            disks: rack.disk_count(),
            capacity_bytes: disk_capacity_bytes(rack),
            code,
            flush_lock: tokio::sync::Mutex::new(()),
            pinned: Mutex::new(BTreeMap::new()),
            damaged: DamagedRecords::default(),
        }
    }

    /// The staged records found damaged so far.
    pub(crate) fn damaged(&self) -> &DamagedRecords {
        &self.damaged
    }

    /// The books, to hold across a catalog change and its booking.
    pub(crate) async fn books(&self) -> Books<'_> {
        Books {
            space: self.space.lock().await,
            code: &self.code,
        }
    }

    /// A snapshot of the disks' used space, counted from `catalog` the first time.
    pub async fn space<C: Catalog>(&self, catalog: &C) -> StoreResult<DiskSpace> {
        let mut space = self.space.lock().await;
        if space.is_none() {
            let empty = DiskSpace::new(self.disks, self.capacity_bytes);
            let counted = empty.count(catalog, &self.code).await?;
            *space = Some(counted);
        }
        Ok(space.clone().expect("counted above"))
    }

    /// Whether a migration is reading `segment` (then it must not be freed).
    pub fn is_pinned(&self, segment: SegmentId) -> bool {
        self.pinned.lock().expect("pin lock").contains_key(&segment)
    }

    /// The lock that keeps one flush (or one compaction's `Writing` blob) at a time, so
    /// abandoning `Writing` blobs never removes one being written by this process.
    pub(crate) fn flush_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.flush_lock
    }

    pub(crate) fn pin(&self, segments: &BTreeSet<SegmentId>) -> Pins<'_> {
        let mut pinned = self.pinned.lock().expect("pin lock");
        for &segment in segments {
            *pinned.entry(segment).or_default() += 1;
        }
        Pins {
            state: self,
            segments: segments.clone(),
        }
    }
}

/// Segments pinned for one bundle; unpinned on drop.
pub(crate) struct Pins<'a> {
    state: &'a MigrationState,
    segments: BTreeSet<SegmentId>,
}

impl Drop for Pins<'_> {
    fn drop(&mut self) {
        let mut pinned = self.state.pinned.lock().expect("pin lock");
        for segment in &self.segments {
            let count = pinned
                .get_mut(segment)
                .expect("a pinned segment is counted");
            *count -= 1;
            if *count == 0 {
                pinned.remove(segment);
            }
        }
    }
}
