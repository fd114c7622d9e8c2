//! Per-disk space for the placer, and the migrator's state that holds it ([`MigrationState`]: the
//! space, the flush lock, the staging segments a migration is reading): how many bytes of stripe stacks each disk holds, from the
//! catalog when the store opens, kept up to date as the migrator begins and aborts blobs, and
//! turned into the [`DiskRoom`] map [`crate::placement::Placement`] decides from.
//!
//! Invariants:
//! - a disk's used bytes are the sum of `code.stack_file_bytes(blob.size_bytes)` over every blob
//!   (committed *and* writing) with a stack on it: a `Writing` blob's stacks may be on the disk
//!   (a crash or a failed cleanup left them), so they count until the blob is aborted;
//! - capacity is what the emulated disks are created with (the rack model's mean capacity, as
//!   `rack.rs` does), so the accounting needs no disk spun up (`Disk::space` needs Active);
//! - room never underflows: a disk over its capacity has 0 bytes free, and removing a blob never
//!   takes a disk below 0 used bytes.

use crate::error::StoreResult;
use crate::placement::DiskRoom;
use spinwise_catalog::{BlobId, BlobRecord, Catalog, DiskIndex, GroupIndex, SegmentId};
use spinwise_ec::Code;
use spinwise_model::Rack;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// Blobs asked of the catalog per page while counting.
const BLOB_PAGE: u32 = 1024;

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

    /// Counts every blob of every group in the catalog (paged).
    pub async fn from_catalog<C: Catalog>(
        catalog: &C,
        rack: &Rack,
        groups: usize,
        code: &Code,
    ) -> StoreResult<DiskSpace> {
        let capacity_bytes = (rack.disk_model.capacity_tb.mean() * 1e12) as u64;
        let mut space = DiskSpace::new(rack.disk_count(), capacity_bytes);
        for group in 0..groups as GroupIndex {
            let mut after: Option<BlobId> = None;
            loop {
                let page = catalog.blobs_in_group(group, after, BLOB_PAGE).await?;
                for blob in &page {
                    space.add_blob(blob, code);
                }
                match page.last() {
                    Some(last) if page.len() == BLOB_PAGE as usize => after = Some(last.id),
                    _ => break,
                }
            }
        }
        Ok(space)
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

/// The migrator's state inside a [`Store`](crate::Store): disk space, the flush lock and pinned segments.
pub struct MigrationState {
    space: Mutex<DiskSpace>,
    flush_lock: tokio::sync::Mutex<()>,
    pinned: Mutex<BTreeMap<SegmentId, usize>>,
}

impl std::fmt::Debug for MigrationState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MigrationState").finish_non_exhaustive()
    }
}

impl MigrationState {
    /// Counts the disks' used space from the catalog (called by `Store::open`).
    pub async fn open<C: Catalog>(
        catalog: &C,
        rack: &Rack,
        groups: usize,
        code: &Code,
    ) -> StoreResult<MigrationState> {
        Ok(MigrationState {
            space: Mutex::new(DiskSpace::from_catalog(catalog, rack, groups, code).await?),
            flush_lock: tokio::sync::Mutex::new(()),
            pinned: Mutex::new(BTreeMap::new()),
        })
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

    /// Counts a blob begun (its stacks may be on its disks from now on).
    pub(crate) fn add_blob(&self, blob: &BlobRecord, code: &Code) {
        self.space.lock().expect("space lock").add_blob(blob, code);
    }

    /// A blob's stacks no longer take room on its disks.
    pub(crate) fn remove_blob(&self, blob: &BlobRecord, code: &Code) {
        self.space
            .lock()
            .expect("space lock")
            .remove_blob(blob, code);
    }

    /// A snapshot of the disks' used space.
    pub fn space(&self) -> DiskSpace {
        self.space.lock().expect("space lock").clone()
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
