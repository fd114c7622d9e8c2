//! Compaction (issue 4 item 7): reclaims the dead bytes deletes and overwrites leave in blobs.
//! One blob at a time: its live objects are decoded through the normal blob read path (the
//! decoder over its stripe stacks, crc-checked, reconstructing from any k) inside a
//! `Kind::Rebuild` job on its group, so the scheduler's rebuild share bounds how much it delays
//! client work, and written as a new blob in the SAME group (the group is up anyway) by the
//! migrator's code (`begin_blob_in`, `stacks::write_stacks`, `commit_blob`). Then the old
//! blob's stacks and record are removed. A blob with no live object is just removed. The
//! sequence, crash points and policy are in docs/store.md ("Compaction").
//!
//! Per blob: list its live objects (catalog, offset order) → job 1 hashes their bytes (BLAKE3
//! of the new blob, which its stack headers carry) → `begin_blob_in` (`Writing`, same group) →
//! `compact:after-begin` → job 2 decodes them again and encodes the new blob's stacks →
//! `compact:after-stacks` → `commit_blob` moving each object only if it still points at the old
//! blob and offset → `compact:after-commit` → job 3 removes the old stacks → `remove_blob`.
//!
//! **Between reads** (issue 33; docs/store.md "Compaction between reads"): non-preemptive
//! compaction copies a blob's live objects as one unit, so a read queued behind it on a class
//! that serves one request at a time waits for the whole copy. Semi-preemptive compaction (the
//! default) cuts them into units of at most `compact_unit_bytes` (whole objects; each unit the
//! sequence above, with its own new blob) and, between units, asks spinwise-gc's policy, the one
//! the simulator runs: while the group's free space is at or above the hard threshold, reads
//! waiting on the group's class go first (`compact:between-units` is the crash point there).
//!
//! Invariants:
//! - never loses or duplicates an acknowledged object: an object points at the old blob until
//!   the commit moves it, atomically, to bytes already durable in the new blob; a delete or
//!   overwrite during compaction wins (the commit skips the object, its bytes are dead in the
//!   new blob);
//! - the old blob is removed only when the catalog says nothing points into it (stacks first,
//!   then the record, so a crash in between leaves a record with no live bytes, which the next
//!   compaction removes; one left by a crash after the commit is removed the same way);
//! - a crash before the commit leaves a `Writing` blob, abandoned like the migrator's (at open,
//!   at the start of every flush and of every forced compaction);
//! - memory is bounded whatever the blob size: [`CHUNKS_IN_FLIGHT`] × [`COMPACT_CHUNK_BYTES`]
//!   between the decoder and the encoder plus their stripes, and the live objects' records
//!   (at most one bundle's, `migrate::ROUND_OBJECTS`);
//! - the flush lock is held per blob, so a flush in this process never abandons a blob being
//!   compacted; the caller holds the upkeep lock (no other process flushes or compacts).

use crate::config::{CompactionMode, UpkeepConfig, check_dead_fraction};
use crate::crash;
use crate::driver::{GroupDisks, Job, Purpose};
use crate::error::{StoreError, StoreResult};
use crate::migrate::CHUNKS_IN_FLIGHT;
use crate::stacks::blob_code;
use crate::stacks::{fetch_from_disks, remove_stacks, write_stacks};
use crate::store::Store;
use serde::Serialize;
use spinwise_catalog::{
    BlobId, BlobRecord, BlobState, Catalog, GroupIndex, Migration, ObjectLocation, ObjectRecord,
};
use spinwise_disk::Disk;
use spinwise_ec::{Code, DecodeError, StripeDecoder};
use spinwise_gc::{Decision, GcPolicy, GcThresholds, GcView};
use spinwise_sched::scheduler::Kind;
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Duration;

/// How often a unit waiting for reads looks again, µs of the store's clock: short beside a
/// read's service (tens of ms on a disk), long beside the driver's state query (µs).
const YIELD_POLL_US: u64 = 2_000;

/// The policy the store's compaction asks between units: the configured mode, the hard
/// threshold in thousandths of the fullest disk's capacity. The soft threshold is one above
/// it: the store starts a collection by its own rules (the dead fraction, a group up anyway;
/// docs/store.md "Compaction"), so the policy is only asked inside one, where soft plays no
/// part (spinwise-gc's state table).
fn compaction_policy(upkeep: &UpkeepConfig) -> GcPolicy {
    let hard_free_blocks = ((upkeep.compact_hard_free_fraction * 1000.0).ceil() as u64).max(1);
    let thresholds = GcThresholds::new(hard_free_blocks + 1, hard_free_blocks)
        .expect("soft is one above a hard threshold of at least 1");
    GcPolicy::new(upkeep.compaction.gc_mode(), thresholds)
}

/// Waits until `policy`, asked with what `view` sees now, lets a collector's next unit go:
/// while it says foreground work goes first, looks again every [`YIELD_POLL_US`] of `clock`,
/// for at most `max_wait_us` (then the unit goes anyway: a steady stream of requests delays a
/// collection, never starves it). `on_yield` is called once, when a wait starts. Shared by
/// compaction and the warm tier's collector (crate::warm_gc), which ask the same policy.
pub(crate) async fn wait_between_units<Fut: std::future::Future<Output = GcView>>(
    clock: &dyn crate::clock::Clock,
    policy: &GcPolicy,
    max_wait_us: u64,
    mut view: impl FnMut() -> Fut,
    mut on_yield: impl FnMut(),
) {
    let started_us = clock.now_us();
    let mut waited = false;
    loop {
        match policy.decide(view().await) {
            Decision::GcUnit => return,
            Decision::Foreground if clock.now_us().saturating_sub(started_us) < max_wait_us => {
                if !waited {
                    waited = true;
                    on_yield();
                }
                clock.sleep(Duration::from_micros(YIELD_POLL_US)).await;
            }
            Decision::Foreground => return, // waited long enough: a unit goes
            Decision::Wait => unreachable!("a collection under way always has a unit to do"),
        }
    }
}

/// Bytes per chunk between the decoder and the encoder of a compaction.
pub const COMPACT_CHUNK_BYTES: usize = 1 << 20;
/// Blobs (or a blob's objects) read from the catalog per page.
const PAGE: u32 = 256;

/// What a compaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CompactReport {
    /// Blobs rewritten without their dead bytes.
    pub blobs_compacted: u64,
    /// Blobs removed because nothing pointed into them any more (stacks, then record).
    pub blobs_removed: u64,
    /// Objects the commits moved into new blobs.
    pub objects_moved: u64,
    /// Objects deleted or overwritten while their blob was being compacted (they stay deleted).
    pub objects_dead: u64,
    /// Data bytes copied into new blobs.
    pub bytes_moved: u64,
    /// Data bytes no longer stored: old blobs' sizes minus the new blobs' sizes.
    pub bytes_reclaimed: u64,
    /// Units copied (each a new blob): one per compacted blob when non-preemptive, one per
    /// [`crate::UpkeepConfig::compact_unit_bytes`] of live bytes when semi-preemptive.
    pub units: u64,
    /// Times a unit waited for reads on its group's class to start first (semi-preemptive).
    pub yields: u64,
    /// The blobs written, in order.
    pub new_blobs: Vec<BlobId>,
    /// `Writing` blobs left by an earlier crash or failure and cleaned up first (forced runs).
    pub abandoned_blobs: Vec<BlobId>,
}

impl CompactReport {
    /// Adds `part` (one batch) to this report.
    pub fn merge(&mut self, part: CompactReport) {
        self.blobs_compacted += part.blobs_compacted;
        self.blobs_removed += part.blobs_removed;
        self.objects_moved += part.objects_moved;
        self.objects_dead += part.objects_dead;
        self.bytes_moved += part.bytes_moved;
        self.bytes_reclaimed += part.bytes_reclaimed;
        self.units += part.units;
        self.yields += part.yields;
        self.new_blobs.extend(part.new_blobs);
        self.abandoned_blobs.extend(part.abandoned_blobs);
    }
}

/// Which blobs a compaction batch takes and when it stops.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CompactLimits {
    /// A blob is compacted when dead/size reaches this (one with no live bytes always is).
    pub min_dead_fraction: f64,
    /// Live bytes copied before the batch stops (at least one blob is compacted).
    pub budget_bytes: u64,
    /// Stop when the group is no longer active (checked before each blob and before the
    /// write): a job for a group that went down would spin it up for compaction alone.
    pub only_while_active: bool,
}

/// Whether `blob` is worth compacting: committed, and either nothing live in it or a dead
/// fraction of at least `min_dead_fraction` (never a blob without dead bytes).
pub fn is_due(blob: &BlobRecord, min_dead_fraction: f64) -> bool {
    if blob.state != BlobState::Committed {
        return false;
    }
    let dead_bytes = blob.size_bytes.saturating_sub(blob.live_bytes);
    blob.live_bytes == 0
        || (dead_bytes > 0 && dead_bytes as f64 >= min_dead_fraction * blob.size_bytes as f64)
}

/// The live objects of a blob and where they go in the new one.
struct Plan {
    objects: Vec<ObjectRecord>,
    /// Old blob byte ranges to copy, in order (adjacent objects merged).
    ranges: Vec<Range<u64>>,
    /// The new blob's data bytes (the live bytes, packed from offset 0).
    size_bytes: u64,
}

impl Plan {
    fn new(objects: Vec<ObjectRecord>) -> Plan {
        let mut ranges: Vec<Range<u64>> = Vec::new();
        let mut size_bytes = 0;
        for object in &objects {
            let start = old_offset(object);
            let end = start + object.size_bytes;
            size_bytes += object.size_bytes;
            match ranges.last_mut() {
                Some(last) if last.end == start => last.end = end,
                _ if start == end => {}
                _ => ranges.push(start..end),
            }
        }
        Plan {
            objects,
            ranges,
            size_bytes,
        }
    }

    /// This plan cut into units of at most `unit_bytes` live bytes, in offset order: an object
    /// larger than a unit is a unit of its own, and an empty object joins the unit it follows
    /// (a unit is never only empty objects unless the whole plan is).
    fn into_units(self, unit_bytes: u64) -> Vec<Plan> {
        let mut units: Vec<Vec<ObjectRecord>> = Vec::new();
        let mut unit_size_bytes = 0u64;
        for object in self.objects {
            let size_bytes = object.size_bytes;
            let full =
                unit_size_bytes > 0 && size_bytes > 0 && unit_size_bytes + size_bytes > unit_bytes;
            if full || units.is_empty() {
                units.push(Vec::new());
                unit_size_bytes = 0;
            }
            unit_size_bytes += size_bytes;
            units
                .last_mut()
                .expect("a unit was just pushed")
                .push(object);
        }
        units.into_iter().map(Plan::new).collect()
    }

    /// The new blob's object index: each object at its packed offset, with the origin the old
    /// blob's index gave it (unknown if it gave none).
    fn index_entries(&self, origins: &Origins) -> Vec<crate::blob_index::IndexEntry> {
        let mut offset = 0;
        self.objects
            .iter()
            .map(|object| {
                let origin = origins.get(&(old_offset(object), object.key.clone()));
                let entry = crate::migrate::index_entry(object, offset, origin.copied());
                offset += object.size_bytes;
                entry
            })
            .collect()
    }

    /// The commit: each object from the old blob and offset to its packed offset.
    fn moves(&self) -> Vec<Migration> {
        let mut offset = 0;
        self.objects
            .iter()
            .map(|object| {
                let migration = Migration {
                    key: object.key.clone(),
                    from: object.location.clone(),
                    blob_offset: offset,
                };
                offset += object.size_bytes;
                migration
            })
            .collect()
    }
}

/// The origins (`crate::blob_index`) of a blob's objects by (offset in the blob, key).
type Origins = BTreeMap<(u64, String), crate::staging::Origin>;

fn old_offset(object: &ObjectRecord) -> u64 {
    match object.location {
        ObjectLocation::Migrated { offset, .. } => offset,
        ObjectLocation::Staged { .. } => unreachable!("objects_in_blob lists migrated objects"),
    }
}

/// Decodes `ranges` of `blob` (the read path's decoder, crc-checked, reconstructing from any
/// k) into `sink`, in order.
fn decode_ranges(
    code: &Code,
    blob: &BlobRecord,
    disks: &[Arc<dyn Disk>],
    ranges: &[Range<u64>],
    sink: &mut dyn Write,
) -> Result<(), DecodeError> {
    let mut decoder = StripeDecoder::new(code, blob.size_bytes);
    let mut fetch = fetch_from_disks(code, blob.id, disks);
    for range in ranges {
        decoder.read_range(range.clone(), &mut fetch, sink)?;
    }
    sink.flush()?;
    Ok(())
}

/// A sink that only hashes (job 1).
struct HashSink(blake3::Hasher);

impl Write for HashSink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The decoder's end of the pipe to the encoder (job 2): chunks of [`COMPACT_CHUNK_BYTES`].
struct ChannelWriter {
    sender: SyncSender<io::Result<Vec<u8>>>,
    buffer: Vec<u8>,
}

impl Write for ChannelWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let taken = (COMPACT_CHUNK_BYTES - self.buffer.len()).min(bytes.len());
        self.buffer.extend_from_slice(&bytes[..taken]);
        if self.buffer.len() == COMPACT_CHUNK_BYTES {
            self.flush()?;
        }
        Ok(taken)
    }
    fn flush(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(COMPACT_CHUNK_BYTES));
        self.sender
            .send(Ok(chunk))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the encoder stopped"))
    }
}

/// The encoder's end of the pipe: the channel closing is the end of the input (the encoder
/// refuses a short input, so a decoder that died early never yields a complete blob).
struct ChannelReader {
    receiver: Receiver<io::Result<Vec<u8>>>,
    current: Vec<u8>,
    position: usize,
}

impl Read for ChannelReader {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        while self.position == self.current.len() {
            match self.receiver.recv() {
                Ok(Ok(chunk)) => {
                    self.current = chunk;
                    self.position = 0;
                }
                Ok(Err(error)) => return Err(error),
                Err(_) => return Ok(0),
            }
        }
        let count = buffer.len().min(self.current.len() - self.position);
        buffer[..count].copy_from_slice(&self.current[self.position..][..count]);
        self.position += count;
        Ok(count)
    }
}

/// What job 2 needs on its blocking thread.
struct CopyJob {
    old: BlobRecord,
    old_disks: Vec<Arc<dyn Disk>>,
    ranges: Vec<Range<u64>>,
    new: BlobRecord,
    new_disks: Vec<Arc<dyn Disk>>,
    code: Arc<Code>,
}

/// Job 2: a decoder thread feeds the old blob's live bytes to the encoder writing the new
/// blob's stacks (`write_stacks` removes what it wrote if anything fails).
fn copy_live_bytes(copy: CopyJob) -> Result<(), String> {
    let old_code = blob_code(&copy.old).map_err(|error| error.to_string())?;
    let (sender, receiver) = sync_channel(CHUNKS_IN_FLIGHT);
    std::thread::scope(|scope| {
        let decoding = scope.spawn(|| {
            let mut sink = ChannelWriter {
                sender,
                buffer: Vec::with_capacity(COMPACT_CHUNK_BYTES),
            };
            let decoded = decode_ranges(
                &old_code,
                &copy.old,
                &copy.old_disks,
                &copy.ranges,
                &mut sink,
            );
            if let Err(error) = &decoded {
                let _ = sink.sender.send(Err(io::Error::other(error.to_string())));
            }
            decoded
        });
        let reader = ChannelReader {
            receiver,
            current: Vec::new(),
            position: 0,
        };
        let new = &copy.new;
        let written = write_stacks(
            &copy.code,
            new.id,
            new.size_bytes,
            new.content_hash,
            reader,
            &copy.new_disks,
        );
        let decoded = decoding.join().expect("the compaction decoder panicked");
        match (decoded, written) {
            (_, Ok(())) => Ok(()),
            (Err(error), Err(_)) => Err(format!("reading blob {}: {error}", copy.old.id)),
            (Ok(()), Err(error)) => Err(error.to_string()),
        }
    })
}

impl<C: Catalog> Store<C> {
    /// Compacts every committed blob whose dead fraction is at least `min_dead_fraction`
    /// (`None`: the `[upkeep] compact_dead_fraction` policy) and removes every blob nothing
    /// points into, group by group, spinning groups up as needed (the operator asked). Cleans
    /// up `Writing` blobs a crash left first. Holds the upkeep lock. `progress` hears after
    /// every blob, and when a unit starts waiting for reads (`yields` counts it then).
    pub async fn compact(
        &self,
        min_dead_fraction: Option<f64>,
        mut progress: impl FnMut(&CompactReport),
    ) -> StoreResult<CompactReport> {
        let _upkeep = self.upkeep_lock()?;
        let fraction = min_dead_fraction.unwrap_or(self.config().upkeep.compact_dead_fraction);
        check_dead_fraction(fraction).map_err(|message| StoreError::Config {
            path: "compact".into(),
            message,
        })?;
        let mut report = CompactReport {
            abandoned_blobs: {
                let _only_flush = self.migration().flush_lock().lock().await;
                self.abandon_writing_blobs_locked().await?
            },
            ..CompactReport::default()
        };
        let limits = CompactLimits {
            min_dead_fraction: fraction,
            budget_bytes: u64::MAX,
            only_while_active: false,
        };
        for group in 0..self.layout().groups.len() as GroupIndex {
            self.compact_group(group, limits, &mut report, &mut progress, || true)
                .await?;
        }
        Ok(report)
    }

    /// Compacts `group`'s due blobs (see [`is_due`]) until `limits.budget_bytes` of live bytes
    /// were copied (at least one blob) or `keep_going` says stop; returns how many blobs it
    /// compacted or removed. The caller holds the upkeep lock.
    pub(crate) async fn compact_group(
        &self,
        group: GroupIndex,
        limits: CompactLimits,
        report: &mut CompactReport,
        progress: &mut impl FnMut(&CompactReport),
        mut keep_going: impl FnMut() -> bool,
    ) -> StoreResult<u64> {
        let mut spent_bytes = 0u64;
        let mut done = 0u64;
        let mut after = None;
        loop {
            // Only blobs with dead bytes: the group's others are never due, and an archive's
            // blobs are mostly all live (the catalog's partial index finds these directly).
            let blobs = self
                .catalog()
                .blobs_with_dead_bytes(group, after, PAGE)
                .await?;
            let Some(last) = blobs.last() else {
                return Ok(done);
            };
            after = Some(last.id);
            let full_page = blobs.len() == PAGE as usize;
            for blob in blobs
                .into_iter()
                .filter(|blob| is_due(blob, limits.min_dead_fraction))
            {
                if done > 0 && (spent_bytes >= limits.budget_bytes || !keep_going()) {
                    return Ok(done);
                }
                if limits.only_while_active && !self.group_is_active(group).await {
                    return Ok(done);
                }
                spent_bytes += blob.live_bytes;
                if self.compact_blob(blob.id, limits, report, progress).await? {
                    done += 1;
                    progress(report);
                }
            }
            if !full_page {
                return Ok(done);
            }
        }
    }

    /// Compacts (or removes) one blob; `false` if there was nothing to do after all (the blob
    /// is gone or no longer due, or the group went down under `only_while_active` before any
    /// unit). Non-preemptive: the live objects are one unit. Semi-preemptive: units of at most
    /// `compact_unit_bytes`, and before each unit after the first the GC policy decides
    /// whether reads waiting on the group's class go first ([`Store::wait_for_turn`]).
    async fn compact_blob(
        &self,
        id: BlobId,
        limits: CompactLimits,
        report: &mut CompactReport,
        progress: &mut impl FnMut(&CompactReport),
    ) -> StoreResult<bool> {
        let _only_flush = self.migration().flush_lock().lock().await;
        let Some(old) = self.catalog().blob(id).await? else {
            return Ok(false);
        };
        if !is_due(&old, limits.min_dead_fraction) {
            return Ok(false);
        }
        let plan = Plan::new(self.live_objects(id).await?);
        if plan.objects.is_empty() {
            return self.remove_dead_blob(id, report).await;
        }
        if plan.size_bytes >= old.size_bytes {
            return Ok(false); // only empty objects died: nothing to reclaim
        }
        let origins = self.origins_in(id).await;
        let upkeep = &self.config().upkeep;
        let units = match upkeep.compaction {
            CompactionMode::NonPreemptive => vec![plan],
            CompactionMode::SemiPreemptive => plan.into_units(upkeep.compact_unit_bytes),
        };
        let mut moved_bytes = 0;
        for (index, unit) in units.iter().enumerate() {
            if index > 0 {
                self.wait_for_turn(old.group, report, progress).await;
                crash::point("compact:between-units");
            }
            if !self
                .compact_unit((&old, &origins), unit, limits, report)
                .await?
            {
                return Ok(index > 0); // the group went down: the rest waits for the next time
            }
            moved_bytes += unit.size_bytes;
        }
        report.blobs_compacted += 1;
        report.bytes_reclaimed += old.size_bytes - moved_bytes;
        // Nothing points into the old blob now (objects never move into a committed blob). If
        // the group went down, its removal waits for the next compaction (it is dead bytes).
        if !limits.only_while_active || self.group_is_active(old.group).await {
            let mut counted_above = CompactReport::default();
            self.remove_dead_blob(id, &mut counted_above).await?;
        }
        Ok(true)
    }

    /// Copies one unit of `old`'s live objects into a new blob in the same group and commits
    /// their moves; `false` if the group went down first under `only_while_active`.
    async fn compact_unit(
        &self,
        (old, origins): (&BlobRecord, &Origins),
        unit: &Plan,
        limits: CompactLimits,
        report: &mut CompactReport,
    ) -> StoreResult<bool> {
        // Checked before each job: a unit that waited for reads of a sibling group may find its
        // group spun down, and a job would spin it up for compaction alone.
        if limits.only_while_active && !self.group_is_active(old.group).await {
            return Ok(false);
        }
        let content_hash = self.hash_live_bytes(old, unit).await?;
        if limits.only_while_active && !self.group_is_active(old.group).await {
            return Ok(false);
        }
        let new = self
            .begin_blob_in(unit.size_bytes, content_hash, Some(old.group))
            .await?;
        crash::point("compact:after-begin");
        if let Err(error) = self.write_compacted(old, unit, &new).await {
            return Err(self.fail(&new, error).await);
        }
        if let Err(error) = self
            .write_blob_index(&new, unit.index_entries(origins))
            .await
        {
            return Err(self.fail(&new, error).await);
        }
        crash::point("compact:after-stacks");
        let moved = match self.catalog().commit_blob(new.id, unit.moves()).await {
            Ok(moved) => moved,
            Err(error) => return Err(self.fail(&new, error.into()).await),
        };
        crash::point("compact:after-commit");
        // Every fragment was just written with its crc and fsynced: the blob's scrub clock starts
        // now, so the next start-up does not spin its group up to verify what is minutes old.
        self.mark_verified_now(new.id).await;
        report.units += 1;
        report.objects_moved += moved;
        report.objects_dead += unit.objects.len() as u64 - moved;
        report.bytes_moved += unit.size_bytes;
        report.new_blobs.push(new.id);
        Ok(true)
    }

    /// The GC policy between two units of a blob's collection (spinwise-gc's, the slides'
    /// states): while the group's free fraction is at or above the hard threshold, reads
    /// waiting on the group's class go first and the unit waits for them to start, polling
    /// every [`YIELD_POLL_US`] of the store's clock, at most `compact_max_yield_s`; below it,
    /// the unit goes at once. A wait counts in `report.yields` when it starts, and `progress`
    /// hears of it then.
    async fn wait_for_turn(
        &self,
        group: GroupIndex,
        report: &mut CompactReport,
        progress: &mut impl FnMut(&CompactReport),
    ) {
        let upkeep = &self.config().upkeep;
        let policy = compaction_policy(upkeep);
        let max_wait_us = (upkeep.compact_max_yield_s * 1e6) as u64;
        let view = || async {
            GcView {
                free_blocks: self.free_per_mille(group).await,
                collecting: true,
                work_available: true,
                foreground_waiting: self.reads_waiting(group).await,
            }
        };
        let on_yield = || {
            report.yields += 1;
            progress(report);
        };
        wait_between_units(self.clock().as_ref(), &policy, max_wait_us, view, on_yield).await;
    }

    /// Whether reads are queued on any group of `group`'s class (a class serves one group at a
    /// time, so a read of a sibling group waits for this one too). A stopped driver has none.
    async fn reads_waiting(&self, group: GroupIndex) -> bool {
        let Ok(state) = self.rack_io().driver.state().await else {
            return false;
        };
        let classes = self.layout().classes.as_ref();
        let class_of = |g: GroupIndex| classes.and_then(|c| c.get(g as usize).copied());
        state.groups.iter().any(|other| {
            let same_class = other.group == group
                || (class_of(group).is_some() && class_of(other.group) == class_of(group));
            same_class && other.waiting.jobs(Purpose::Read) > 0
        })
    }

    /// The group's free space in thousandths of a disk, on its fullest disk (the one a new
    /// blob's stack runs out of first): the policy's "free blocks". A catalog that cannot be
    /// counted reads as no room, so compaction does not wait for reads (and says why).
    async fn free_per_mille(&self, group: GroupIndex) -> u64 {
        let space = match self.migration().space(self.catalog()).await {
            Ok(space) => space,
            Err(error) => {
                tracing::warn!(group, %error, "counting the disks' space for compaction");
                return 0;
            }
        };
        let capacity_bytes = space.capacity_bytes().max(1);
        let Some(disks) = self.layout().groups.get(group as usize) else {
            return 0;
        };
        disks
            .iter()
            .map(|&disk| {
                let free_bytes = capacity_bytes.saturating_sub(space.used_bytes(disk));
                (u128::from(free_bytes) * 1000 / u128::from(capacity_bytes)) as u64
            })
            .min()
            .unwrap_or(0)
    }

    /// The origins the index of `blob` gives its objects, so the compacted copies keep them: none
    /// for a blob whose index is missing, unreadable or of version 1 (its copies then rank as
    /// that blob's did in a lost catalog's recovery, by blob id: docs/store.md).
    async fn origins_in(&self, blob: BlobId) -> Origins {
        let path = crate::blob_index::index_path(self.data_dir(), blob);
        let read = tokio::task::spawn_blocking(move || crate::blob_index::read_index(&path))
            .await
            .unwrap_or_else(|error| Err(error.to_string()));
        match read {
            Ok(index) => (index.entries.into_iter())
                .filter_map(|entry| Some(((entry.offset, entry.key), entry.origin?)))
                .collect(),
            Err(error) => {
                tracing::warn!(%error, blob, "reading a blob index for its origins");
                Origins::new()
            }
        }
    }

    /// Every object pointing into `blob`, in offset order.
    async fn live_objects(&self, blob: BlobId) -> StoreResult<Vec<ObjectRecord>> {
        let mut objects: Vec<ObjectRecord> = Vec::new();
        loop {
            let after = objects
                .last()
                .map(|object| (old_offset(object), object.key.as_str()));
            let page = self.catalog().objects_in_blob(blob, after, PAGE).await?;
            let full_page = page.len() == PAGE as usize;
            objects.extend(page);
            if !full_page {
                return Ok(objects);
            }
        }
    }

    /// Job 1: the BLAKE3 of the live bytes, the new blob's content hash.
    async fn hash_live_bytes(&self, old: &BlobRecord, plan: &Plan) -> StoreResult<[u8; 32]> {
        let code = blob_code(old)?;
        let disks = self.column_disks(old);
        let blob = old.clone();
        let ranges = plan.ranges.clone();
        let job = Job::new(
            old.group,
            plan.size_bytes,
            Kind::Rebuild,
            move |_: &GroupDisks| {
                let mut sink = HashSink(blake3::Hasher::new());
                decode_ranges(&code, &blob, &disks, &ranges, &mut sink)
                    .map(|()| *sink.0.finalize().as_bytes())
                    .map_err(|error| error.to_string())
            },
        )
        .for_purpose(Purpose::Compaction);
        self.run_job(old.id, job).await
    }

    /// Job 2: the live bytes, decoded again, into the new blob's stacks.
    async fn write_compacted(
        &self,
        old: &BlobRecord,
        plan: &Plan,
        new: &BlobRecord,
    ) -> StoreResult<()> {
        let copy = CopyJob {
            old: old.clone(),
            old_disks: self.column_disks(old),
            ranges: plan.ranges.clone(),
            new: new.clone(),
            new_disks: self.column_disks(new),
            code: Arc::clone(&self.rack_io().code),
        };
        let job = Job::new(
            old.group,
            plan.size_bytes,
            Kind::Rebuild,
            move |_: &GroupDisks| copy_live_bytes(copy),
        )
        .for_purpose(Purpose::Compaction);
        self.run_job(old.id, job).await
    }

    /// Submits a compaction job and waits for its output.
    async fn run_job<T: Send + 'static>(
        &self,
        old: BlobId,
        job: Job<Result<T, String>>,
    ) -> StoreResult<T> {
        let failed = |reason: String| StoreError::Compaction { blob: old, reason };
        let handle = self
            .rack_io()
            .driver
            .submit(job)
            .await
            .map_err(|error| failed(error.to_string()))?;
        let done = handle
            .wait()
            .await
            .map_err(|error| failed(error.to_string()))?;
        done.output.map_err(failed)
    }

    /// Removes a committed blob nothing points into: its stacks in a job on its group, then
    /// its record. `false` if objects point into it (or it is gone).
    async fn remove_dead_blob(&self, id: BlobId, report: &mut CompactReport) -> StoreResult<bool> {
        let Some(blob) = self.catalog().blob(id).await? else {
            return Ok(false);
        };
        let referenced = !self
            .catalog()
            .objects_in_blob(id, None, 1)
            .await?
            .is_empty();
        if blob.state != BlobState::Committed || blob.live_bytes != 0 || referenced {
            return Ok(false);
        }
        let disks = self.column_disks(&blob);
        let job = Job::new(blob.group, 0, Kind::Rebuild, move |_: &GroupDisks| {
            remove_stacks(id, &disks);
            Ok(())
        })
        .for_purpose(Purpose::Compaction);
        self.run_job(id, job).await?;
        let mut books = self.migration().books().await;
        self.catalog().remove_blob(id).await?;
        books.remove_blob(&blob);
        drop(books);
        crate::blob_index::remove_index(self.data_dir(), id, self.host_files());
        report.blobs_removed += 1;
        report.bytes_reclaimed += blob.size_bytes;
        Ok(true)
    }
}
