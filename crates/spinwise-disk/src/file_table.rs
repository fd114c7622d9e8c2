//! The model disks' files with their durability: for each name, the content on stable storage
//! (`durable`) and the change not yet synced (`pending`: new bytes, or a removal), which is
//! what a crash drops or tears (docs/faults.md says byte by byte how). The model disk syncs
//! every change before acknowledging it, so nothing of its is ever pending; the faulty disk can
//! be told to skip that sync.
//!
//! Invariants: what a caller sees (`visible`) is the pending change applied to the durable
//! content; an entry with neither durable content nor a pending change is not kept; the map is
//! ordered, so every walk (listing, syncing, crashing) goes in name order and a seeded crash
//! draws its random numbers in the same order every time. `generation` counts crashes, so a
//! write that began before one cannot land after it.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The unit a torn write is cut at: a crash keeps whole sectors of an unsynced write.
pub const SECTOR_BYTES: u64 = 4096;

/// Whether a write or removal is on stable storage when the disk acknowledges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteSync {
    /// The contract: `write_file` and `remove_file` sync before they return `Ok`.
    BeforeReturning,
    /// A broken implementation: they return `Ok` with the change pending until the next
    /// barrier (`FaultyDisk::sync` or a spin-down), so a crash can drop or tear it.
    Skipped,
}

/// How a crash treats each unsynced change (see docs/faults.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// Every unsynced write and removal is lost: each file is its durable content.
    DropUnsynced,
    /// Every unsynced write keeps a prefix of whole sectors, strictly fewer than it had (a
    /// write of 0 bytes has none to keep and is lost); every unsynced removal is lost.
    TearUnsynced,
    /// Each unsynced change draws its fate: a write is lost, torn or landed whole, a removal
    /// lost or landed (the kernel may have flushed any of it before the power went).
    Arbitrary,
}

/// What a crash did to one unsynced change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnsyncedFate {
    /// Dropped: the name holds its durable content (or no file) again.
    Lost,
    /// The name holds the first `kept_bytes` of the write, a multiple of [`SECTOR_BYTES`].
    Torn { kept_bytes: u64 },
    /// The whole change reached the platter.
    Landed,
}

/// Every unsynced change a crash met, in name order, with its fate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    pub fates: Vec<(String, UnsyncedFate)>,
}

impl CrashReport {
    /// How many changes met `fate`'s kind (any `kept_bytes` for `Torn`).
    pub fn count(&self, fate: UnsyncedFate) -> u64 {
        let kind = std::mem::discriminant(&fate);
        let matching = self
            .fates
            .iter()
            .filter(|(_, f)| std::mem::discriminant(f) == kind);
        matching.count() as u64
    }
}

#[derive(Clone, Debug)]
enum Pending {
    Write(Arc<Vec<u8>>),
    Removal,
}

#[derive(Clone, Debug, Default)]
struct Entry {
    durable: Option<Arc<Vec<u8>>>,
    pending: Option<Pending>,
}

impl Entry {
    fn visible(&self) -> Option<&Arc<Vec<u8>>> {
        match &self.pending {
            Some(Pending::Write(bytes)) => Some(bytes),
            Some(Pending::Removal) => None,
            None => self.durable.as_ref(),
        }
    }

    fn sync(&mut self) {
        match self.pending.take() {
            Some(Pending::Write(bytes)) => self.durable = Some(bytes),
            Some(Pending::Removal) => self.durable = None,
            None => {}
        }
    }

    fn is_empty(&self) -> bool {
        self.durable.is_none() && self.pending.is_none()
    }
}

#[derive(Debug, Default)]
pub(crate) struct FileTable {
    entries: BTreeMap<String, Entry>,
    generation: u64,
}

impl FileTable {
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    pub(crate) fn visible(&self, name: &str) -> Option<Arc<Vec<u8>>> {
        self.entries.get(name).and_then(Entry::visible).cloned()
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.visible(name).is_some()
    }

    /// The names a caller sees, sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        let visible = self.entries.iter().filter(|(_, e)| e.visible().is_some());
        visible.map(|(name, _)| name.clone()).collect()
    }

    /// The bytes a caller sees in all files (what the space ledger books for them).
    pub(crate) fn visible_bytes(&self) -> u64 {
        let lengths = self.entries.values().filter_map(Entry::visible);
        lengths.map(|bytes| bytes.len() as u64).sum()
    }

    /// The names whose last change is not yet synced, sorted.
    pub(crate) fn unsynced_names(&self) -> Vec<String> {
        let unsynced = self.entries.iter().filter(|(_, e)| e.pending.is_some());
        unsynced.map(|(name, _)| name.clone()).collect()
    }

    /// Stores `bytes` under `name`; returns the length of the file it replaced, if any.
    pub(crate) fn put(&mut self, name: &str, bytes: Vec<u8>, sync: WriteSync) -> Option<u64> {
        let entry = self.entries.entry(name.to_string()).or_default();
        let replaced = entry.visible().map(|old| old.len() as u64);
        entry.pending = Some(Pending::Write(Arc::new(bytes)));
        if sync == WriteSync::BeforeReturning {
            entry.sync();
        }
        replaced
    }

    /// Removes `name`; returns the removed file's length, `None` if there was no file.
    pub(crate) fn remove(&mut self, name: &str, sync: WriteSync) -> Option<u64> {
        let entry = self.entries.get_mut(name)?;
        let removed = entry.visible()?.len() as u64;
        entry.pending = Some(Pending::Removal);
        if sync == WriteSync::BeforeReturning {
            entry.sync();
        }
        self.entries.retain(|_, e| !e.is_empty());
        Some(removed)
    }

    /// The barrier: every pending change becomes durable.
    pub(crate) fn sync_all(&mut self) {
        self.entries.values_mut().for_each(Entry::sync);
        self.entries.retain(|_, e| !e.is_empty());
    }

    /// Power is lost: each pending change, in name order, meets the fate `mode` draws for it
    /// from `rng`; then everything left is durable and the generation moves on.
    pub(crate) fn crash(&mut self, mode: CrashMode, rng: &mut ChaCha8Rng) -> CrashReport {
        let mut report = CrashReport::default();
        for (name, entry) in &mut self.entries {
            let Some(pending) = entry.pending.take() else {
                continue;
            };
            let fate = match pending {
                Pending::Write(bytes) => {
                    let fate = write_fate(mode, bytes.len() as u64, rng);
                    land_write(entry, &bytes, fate);
                    fate
                }
                Pending::Removal => {
                    let fate = removal_fate(mode, rng);
                    if fate == UnsyncedFate::Landed {
                        entry.durable = None;
                    }
                    fate
                }
            };
            report.fates.push((name.clone(), fate));
        }
        self.entries.retain(|_, e| !e.is_empty());
        self.generation += 1;
        report
    }
}

/// Whole sectors in `len_bytes` (the last may be partial).
fn sectors(len_bytes: u64) -> u64 {
    len_bytes.div_ceil(SECTOR_BYTES)
}

/// A torn write of `len_bytes`: a uniform number of whole sectors, fewer than it has.
fn torn(len_bytes: u64, rng: &mut ChaCha8Rng) -> UnsyncedFate {
    match sectors(len_bytes) {
        0 => UnsyncedFate::Lost,
        count => UnsyncedFate::Torn {
            kept_bytes: rng.random_range(0..count) * SECTOR_BYTES,
        },
    }
}

fn write_fate(mode: CrashMode, len_bytes: u64, rng: &mut ChaCha8Rng) -> UnsyncedFate {
    match mode {
        CrashMode::DropUnsynced => UnsyncedFate::Lost,
        CrashMode::TearUnsynced => torn(len_bytes, rng),
        CrashMode::Arbitrary => match rng.random_range(0..3u8) {
            0 => UnsyncedFate::Lost,
            1 => torn(len_bytes, rng),
            _ => UnsyncedFate::Landed,
        },
    }
}

fn removal_fate(mode: CrashMode, rng: &mut ChaCha8Rng) -> UnsyncedFate {
    match mode {
        CrashMode::DropUnsynced | CrashMode::TearUnsynced => UnsyncedFate::Lost,
        CrashMode::Arbitrary if rng.random_bool(0.5) => UnsyncedFate::Landed,
        CrashMode::Arbitrary => UnsyncedFate::Lost,
    }
}

/// Puts on the platter what `fate` keeps of an unsynced write of `bytes`.
fn land_write(entry: &mut Entry, bytes: &Arc<Vec<u8>>, fate: UnsyncedFate) {
    match fate {
        UnsyncedFate::Lost => {}
        UnsyncedFate::Torn { kept_bytes } => {
            entry.durable = Some(Arc::new(bytes[..kept_bytes as usize].to_vec()));
        }
        UnsyncedFate::Landed => entry.durable = Some(Arc::clone(bytes)),
    }
}
