//! The bundler and the migrator (issue 4 item 5, second half): [`Store::flush`] packs cold
//! staged objects (warm ones stay in the staging log: see [`spinwise_catalog::Tier`]), in log
//! order, into bundles of at most `bundle_bytes` (an object at least that large
//! is its own blob), erasure-codes each into a group's k + r disks as one blob, commits the
//! catalog, then frees the staging space. [`Store::flush_placed`] does the same except that the
//! objects its caller names a group for go alone, each as its own blob, into that group.
//! docs/store.md ("Migration") has the sequence.
//!
//! Per blob: content hash (a single-object blob reuses the object's BLAKE3; a bundle's is
//! computed by a first pass over its staged bytes) → group (the caller's, or the placer's) and
//! disks from the placer → `begin_blob` (`Writing`) → one driver job writes every stripe stack →
//! `commit_blob` → staging reclaimed. Crash points: `migrate:after-begin`, `migrate:after-stacks`, `migrate:after-commit`.
//!
//! Invariants:
//! - nothing acknowledged is ever unreadable: an object stays staged (and its segment on disk)
//!   until the commit points it into the blob, and the commit moves an object only if it is
//!   still where the migrator read it (an object deleted or overwritten meanwhile stays dead
//!   bytes in the blob);
//! - the segments a migration reads are pinned ([`MigrationState`]) so `reclaim_staging` never
//!   deletes one under it;
//! - a failed migration leaves no `Writing` blob and no stacks when cleanup succeeds, and when it
//!   does not (or the process dies) the `Writing` record names what to remove: such blobs are
//!   abandoned (stacks removed in a job on their group, then `abort_blob`) when the store opens
//!   and at the start of every flush; cleanup removes only stacks the blob's write made (their
//!   headers name the blob, column, size and hash), never another file under the same name;
//! - memory per migration is bounded whatever the blob size: [`CHUNKS_IN_FLIGHT`] staging chunks
//!   between the staging reader and the encoder, plus the encoder's stripe and writer queues;
//! - one flush at a time per store (a lock), so no object is migrated twice by this process;
//! - a caller's group is checked against the layout for a whole round before any of the round is
//!   pinned or begun, so a bad index is a typed error that leaves the round staged.

use crate::blob_index::{BlobIndex, IndexEntry};
use crate::crash;
use crate::damaged::{DamagedStaged, is_damage, staged_place};
use crate::error::{StoreError, StoreResult};
use crate::placement::PlacementError;
use crate::stacks::{StackWriteError, remove_own_stacks, write_stacks};
use crate::staging::{ContentCheck, Origin};
use crate::store::Store;
use bytes::Bytes;
use serde::Serialize;
use spinwise_catalog::{
    BlobId, BlobRecord, BlobState, Catalog, ContentHash, DiskIndex, GroupIndex, Migration,
    ObjectRecord, SegmentId, Tier,
};
use spinwise_disk::Disk;
use spinwise_ec::EncodeError;
use spinwise_sched::scheduler::Kind;
use std::collections::BTreeSet;
use std::io::{self, Read};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Staging chunks queued between the async staging reader and the encoder's blocking reader.
pub const CHUNKS_IN_FLIGHT: usize = 4;
/// Staged objects the bundler takes from the catalog per round (bounds the flush's memory).
pub const ROUND_OBJECTS: u32 = 16_384;
/// `Writing` blobs abandoned per catalog page.
const WRITING_PAGE: u32 = 256;

/// Where a flush is, after each chunk handed to the encoder and after each blob.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlushProgress {
    /// Bytes handed to the encoder so far.
    pub bytes_done: u64,
    /// Staged bytes when the flush started (objects staged later may add to the work).
    pub bytes_staged: u64,
    pub blobs_written: u64,
}

/// What a flush did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlushReport {
    pub blobs_written: u64,
    /// Objects the commits pointed into blobs.
    pub objects_moved: u64,
    /// Objects packed but deleted or overwritten before their blob's commit (dead bytes).
    pub objects_dead: u64,
    /// Data bytes of the blobs written (before coding).
    pub bytes_migrated: u64,
    /// Groups that received blobs, ascending.
    pub groups_used: Vec<GroupIndex>,
    /// The blobs written, in order.
    pub blobs: Vec<BlobId>,
    /// `Writing` blobs left by an earlier crash or failure and cleaned up first.
    pub abandoned_blobs: Vec<BlobId>,
    /// Staged objects skipped because their staged bytes failed their checks, in the order met:
    /// they stay staged (a GET reports the damage) until deleted or overwritten, and every later
    /// flush lists them again. The rest of the log migrates past them.
    pub damaged: Vec<DamagedStaged>,
    pub seconds: f64,
}

/// Staged objects packed for one blob, in log order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bundle {
    pub objects: Vec<ObjectRecord>,
}

impl Bundle {
    pub fn size_bytes(&self) -> u64 {
        self.objects.iter().map(|object| object.size_bytes).sum()
    }
}

/// Packs `staged` (log order) into bundles: consecutive objects while the bundle stays within
/// `bundle_bytes`; an object of at least `bundle_bytes` is a bundle of its own.
pub fn pack(staged: Vec<ObjectRecord>, bundle_bytes: u64) -> Vec<Bundle> {
    let mut bundles = Vec::new();
    let mut current: Vec<ObjectRecord> = Vec::new();
    let mut current_bytes = 0u64;
    for object in staged {
        if object.size_bytes >= bundle_bytes {
            bundles.push(Bundle {
                objects: vec![object],
            });
            continue;
        }
        if current_bytes + object.size_bytes > bundle_bytes {
            bundles.push(Bundle {
                objects: std::mem::take(&mut current),
            });
            current_bytes = 0;
        }
        current_bytes += object.size_bytes;
        current.push(object);
    }
    if !current.is_empty() {
        bundles.push(Bundle { objects: current });
    }
    bundles
}

/// `object`'s entry in the index of the blob it is packed into at `offset`, with when and where
/// its PUT first wrote it, when known (`crate::blob_index`).
pub(crate) fn index_entry(
    object: &ObjectRecord,
    offset: u64,
    origin: Option<Origin>,
) -> IndexEntry {
    IndexEntry {
        key: object.key.clone(),
        offset,
        size_bytes: object.size_bytes,
        content_hash: object.content_hash,
        origin,
    }
}

fn is_not_found(error: &StoreError) -> bool {
    matches!(
        error,
        StoreError::Staging(crate::staging::StagingError::Io { source, .. })
            if source.kind() == io::ErrorKind::NotFound
    )
}

/// Skips a damaged object for the rest of a flush and reports it.
fn skip(
    damaged: DamagedStaged,
    skipped: &mut BTreeSet<(SegmentId, u64)>,
    report: &mut FlushReport,
) {
    skipped.insert((damaged.segment, damaged.offset));
    report.damaged.push(damaged);
}

/// Fails the encoder's input with `error`, met reading `object`; returns the object when the
/// error is damage to its record.
async fn refuse_feed(
    sender: &mpsc::Sender<Result<Bytes, String>>,
    object: &ObjectRecord,
    error: StoreError,
) -> Option<DamagedStaged> {
    let _ = sender.send(Err(error.to_string())).await;
    is_damage(&error).then(|| DamagedStaged::new(object, &error))
}

/// The blocking reader the encoder pulls a bundle's bytes through: chunks the async staging
/// reader sends. The channel closing early is a short input, which the encoder refuses.
struct ChunkReader {
    chunks: mpsc::Receiver<Result<Bytes, String>>,
    current: Bytes,
}

impl Read for ChunkReader {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(message)) => return Err(io::Error::other(message)),
                None => return Ok(0),
            }
        }
        let count = buffer.len().min(self.current.len());
        buffer[..count].copy_from_slice(&self.current.split_to(count));
        Ok(count)
    }
}

/// A bundle ready to write: the objects still staged, their offsets, size and hash.
struct Prepared {
    objects: Vec<Packed>,
    size_bytes: u64,
    content_hash: ContentHash,
}

/// One object of a bundle: where it goes in the blob, and when and where its PUT first wrote it
/// (its record's own stamp and place, or the original's for a record the warm collector
/// moved), which the blob's index keeps for a lost catalog's recovery.
struct Packed {
    object: ObjectRecord,
    offset: u64,
    origin: Origin,
}

impl<C: Catalog> Store<C> {
    /// Migrates everything staged when it starts (and, round by round, what was staged before
    /// it), then returns what it did. `progress` hears of every chunk encoded and blob written;
    /// it runs on the flush's task, so keep it quick.
    pub async fn flush(&self, progress: impl Fn(FlushProgress)) -> StoreResult<FlushReport> {
        self.flush_placed(|_| None, progress).await
    }

    /// [`Store::flush`], except that an object for which `place` returns `Some(group)` is
    /// migrated alone, as its own blob, into `group` (the placer still picks the group's disks);
    /// objects for which it returns `None` are packed into bundles and placed as by `flush`.
    ///
    /// For replaying a trace whose keys name their groups: the simulator puts a key in group
    /// FNV-1a 64 of its bytes mod the layout's group count (docs/simulator.md "Trace files"), and
    /// a `place` applying the same rule makes the store put each blob in the same group, so the
    /// two systems' spin-ups can be compared (cross-validation). `flush`'s placer would instead
    /// pack a bulk preload into whichever group is spinning.
    ///
    /// `place` is asked once per object, a round of up to [`ROUND_OBJECTS`] objects before any
    /// of them is migrated. A group not in the layout is
    /// `StoreError::Placement(PlacementError::UnknownGroup)`: that round stays staged (nothing of
    /// it pinned or begun) and readable; blobs committed by earlier rounds stay committed.
    pub async fn flush_placed(
        &self,
        place: impl Fn(&ObjectRecord) -> Option<GroupIndex>,
        progress: impl Fn(FlushProgress),
    ) -> StoreResult<FlushReport> {
        let _upkeep = self.upkeep_lock()?;
        let _only_flush = self.migration().flush_lock().lock().await;
        let started_us = self.clock().now_us();
        let started_unix_ms = self.now_unix_ms();
        let mut report = FlushReport {
            abandoned_blobs: self.abandon_writing_blobs_locked().await?,
            ..FlushReport::default()
        };
        let mut state = FlushProgress {
            bytes_staged: {
                let stats = self.catalog().stats().await?;
                stats.staged_bytes.saturating_sub(stats.warm_bytes)
            },
            ..FlushProgress::default()
        };
        let mut groups = BTreeSet::new();
        let mut skipped = BTreeSet::new();
        loop {
            let staged = self
                .next_round(started_unix_ms, &mut skipped, &mut report)
                .await?;
            if staged.is_empty() {
                break;
            }
            for (group, bundle) in self.plan_round(staged, &place)? {
                let migrated = self
                    .migrate_bundle(bundle, group, &mut state, &progress)
                    .await?;
                for damaged in migrated.damaged {
                    self.skip_damaged(damaged, &mut skipped, &mut report);
                }
                let Some(outcome) = migrated.blob else {
                    continue;
                };
                report.blobs_written += 1;
                report.blobs.push(outcome.blob);
                report.objects_moved += outcome.moved;
                report.objects_dead += outcome.packed - outcome.moved;
                report.bytes_migrated += outcome.size_bytes;
                groups.insert(outcome.group);
                state.blobs_written += 1;
                progress(state);
            }
        }
        report.groups_used = groups.into_iter().collect();
        report.seconds = self.clock().now_us().saturating_sub(started_us) as f64 / 1e6;
        Ok(report)
    }

    /// The next round's objects: cold objects staged before the flush began, in log order, less
    /// those skipped as damaged (a record found damaged by an earlier flush of this store is
    /// skipped without being read again, and reported). Damaged objects stay at the head of the
    /// log, so each round asks the catalog for as many more as have been skipped.
    async fn next_round(
        &self,
        started_unix_ms: i64,
        skipped: &mut BTreeSet<(SegmentId, u64)>,
        report: &mut FlushReport,
    ) -> StoreResult<Vec<ObjectRecord>> {
        let skipped_count = u32::try_from(skipped.len()).unwrap_or(u32::MAX);
        let limit = ROUND_OBJECTS.saturating_add(skipped_count);
        let staged = self
            .catalog()
            .staged_objects(Some(Tier::Cold), limit)
            .await?;
        let mut round = Vec::with_capacity(staged.len());
        for object in staged {
            if object.created_unix_ms > started_unix_ms || skipped.contains(&staged_place(&object))
            {
                continue;
            }
            match self.migration().damaged().known(&object) {
                Some(known) => skip(known, skipped, report),
                None => round.push(object),
            }
        }
        Ok(round)
    }

    /// Leaves an object just found damaged staged: warned of once, remembered by the store,
    /// skipped for the rest of this flush, reported (every later flush reports it too).
    fn skip_damaged(
        &self,
        damaged: DamagedStaged,
        skipped: &mut BTreeSet<(SegmentId, u64)>,
        report: &mut FlushReport,
    ) {
        tracing::warn!(
            key = %damaged.key,
            segment = damaged.segment,
            offset = damaged.offset,
            reason = %damaged.reason,
            "a staged object's bytes are damaged: it stays staged and the flush goes on without it"
        );
        self.migration().damaged().remember(&damaged);
        skip(damaged, skipped, report);
    }

    /// One round's blobs in migration order: each object `place` names a group for, alone,
    /// group by group (ascending; log order within a group), then the rest packed as `flush`
    /// packs them (the placer chooses their groups). Grouping spins each group up once per
    /// round: in log order, keys hashed over the groups hopped between them, a spin-up per
    /// object (110 objects over dense-jbod-60's 10 groups took over 15 minutes in real time).
    /// Checks every group first, so a bad one refuses the round before anything is pinned.
    fn plan_round(
        &self,
        staged: Vec<ObjectRecord>,
        place: &impl Fn(&ObjectRecord) -> Option<GroupIndex>,
    ) -> StoreResult<Vec<(Option<GroupIndex>, Bundle)>> {
        let groups = self.config().layout.groups.len();
        let mut placed = Vec::new();
        let mut unplaced = Vec::new();
        for object in staged {
            match place(&object) {
                Some(group) if group as usize >= groups => {
                    return Err(PlacementError::UnknownGroup { group, groups }.into());
                }
                Some(group) => placed.push((
                    Some(group),
                    Bundle {
                        objects: vec![object],
                    },
                )),
                None => unplaced.push(object),
            }
        }
        // Stable: log order stays within each group.
        placed.sort_by_key(|(group, _)| *group);
        let packed = pack(unplaced, self.config().bundle_bytes);
        placed.extend(packed.into_iter().map(|bundle| (None, bundle)));
        Ok(placed)
    }

    /// Removes the stacks of every `Writing` blob (a crash or failed cleanup mid-migration left
    /// them) in a job on its group, then forgets the blob; returns their ids. Waits for a flush
    /// in progress, so it never removes a blob that is being written.
    pub async fn abandon_writing_blobs(&self) -> StoreResult<Vec<BlobId>> {
        let _only_flush = self.migration().flush_lock().lock().await;
        self.abandon_writing_blobs_locked().await
    }

    /// [`Store::abandon_writing_blobs`] with the flush lock held by the caller.
    pub(crate) async fn abandon_writing_blobs_locked(&self) -> StoreResult<Vec<BlobId>> {
        let mut abandoned = Vec::new();
        loop {
            let writing = self
                .catalog()
                .blobs_in_state(BlobState::Writing, WRITING_PAGE)
                .await?;
            if writing.is_empty() {
                return Ok(abandoned);
            }
            for blob in writing {
                self.discard_blob(&blob).await?;
                abandoned.push(blob.id);
            }
        }
    }

    /// Stripe-stack bytes on `disk` by the catalog's blobs (committed and writing).
    pub async fn disk_used_bytes(&self, disk: DiskIndex) -> StoreResult<u64> {
        Ok(self
            .migration()
            .space(self.catalog())
            .await?
            .used_bytes(disk))
    }

    /// Migrates one bundle into `group` (`None`: the placer's choice); `None` if every object in
    /// it vanished before it was read.
    async fn migrate_bundle(
        &self,
        bundle: Bundle,
        group: Option<GroupIndex>,
        state: &mut FlushProgress,
        progress: &impl Fn(FlushProgress),
    ) -> StoreResult<Migrated> {
        let segments: BTreeSet<SegmentId> =
            bundle.objects.iter().map(|o| staged_place(o).0).collect();
        let pins = self.migration().pin(&segments);
        let (prepared, mut damaged) = self.prepare(bundle).await?;
        let Some(prepared) = prepared else {
            return Ok(Migrated {
                blob: None,
                damaged,
            });
        };
        let blob = self
            .begin_blob_in(prepared.size_bytes, prepared.content_hash, group)
            .await?;
        crash::point("migrate:after-begin");
        match self.write_blob(&blob, &prepared, state, progress).await {
            Ok(None) => {}
            Ok(Some(found)) => {
                // The blob cannot be finished without the damaged object's bytes, so it goes;
                // the rest of its bundle is still staged and the next round takes it.
                let reason = format!("{}: {}", found.key, found.reason);
                let _ = self
                    .fail(
                        &blob,
                        StoreError::Migration {
                            blob: blob.id,
                            reason,
                        },
                    )
                    .await;
                damaged.push(found);
                return Ok(Migrated {
                    blob: None,
                    damaged,
                });
            }
            Err(error) => return Err(self.fail(&blob, error).await),
        }
        let entries = prepared
            .objects
            .iter()
            .map(|packed| index_entry(&packed.object, packed.offset, Some(packed.origin)))
            .collect();
        if let Err(error) = self.write_blob_index(&blob, entries).await {
            return Err(self.fail(&blob, error).await);
        }
        crash::point("migrate:after-stacks");
        let moves = prepared
            .objects
            .iter()
            .map(|packed| Migration {
                key: packed.object.key.clone(),
                from: packed.object.location.clone(),
                blob_offset: packed.offset,
            })
            .collect();
        let moved = match self.catalog().commit_blob(blob.id, moves).await {
            Ok(moved) => moved,
            Err(error) => return Err(self.fail(&blob, error.into()).await),
        };
        crash::point("migrate:after-commit");
        // Every fragment was just written with its crc and fsynced: the blob's scrub clock starts
        // now, so the next start-up does not spin its group up to verify what is minutes old.
        self.mark_verified_now(blob.id).await;
        drop(pins);
        self.reclaim_staging().await?;
        Ok(Migrated {
            blob: Some(BlobOutcome {
                blob: blob.id,
                group: blob.group,
                packed: prepared.objects.len() as u64,
                moved,
                size_bytes: prepared.size_bytes,
            }),
            damaged,
        })
    }

    /// Writes `blob`'s object index (crate::blob_index) before its commit, so a lost catalog
    /// can be rebuilt with the blob's objects (`spinwise store recover`).
    pub(crate) async fn write_blob_index(
        &self,
        blob: &BlobRecord,
        entries: Vec<IndexEntry>,
    ) -> StoreResult<()> {
        let index = BlobIndex {
            blob: blob.id,
            blob_bytes: blob.size_bytes,
            blob_hash: blob.content_hash,
            entries,
        };
        let data_dir = self.data_dir().to_path_buf();
        let path = crate::blob_index::index_path(&data_dir, blob.id);
        let host = self.host_files().clone();
        tokio::task::spawn_blocking(move || {
            crate::blob_index::write_index(&data_dir, &index, &host)
        })
        .await
        .map_err(|error| StoreError::Migration {
            blob: blob.id,
            reason: format!("writing the blob index: {error}"),
        })?
        .map_err(crate::error::io_error(&path))
    }

    /// Records `blob` as verified now; a failure only costs an early scrub, so it is logged.
    pub(crate) async fn mark_verified_now(&self, blob: BlobId) {
        if let Err(error) = self.catalog().record_scrub(blob, self.now_unix_ms()).await {
            tracing::warn!(%error, blob, "recording a new blob as verified");
        }
    }

    /// Pass one: drops objects whose records are gone (deleted and reclaimed before the pins
    /// were taken) and objects whose staged bytes are damaged (returned beside), computes
    /// offsets and the content hash (a bundle's by reading its bytes).
    async fn prepare(&self, bundle: Bundle) -> StoreResult<(Option<Prepared>, Vec<DamagedStaged>)> {
        let single = bundle.objects.len() == 1;
        let mut hasher = blake3::Hasher::new();
        let mut objects = Vec::with_capacity(bundle.objects.len());
        let mut damaged = Vec::new();
        let mut offset = 0u64;
        for object in bundle.objects {
            match self.check_staged(&object, single, &mut hasher).await {
                Ok(Some(origin)) => {
                    let size = object.size_bytes;
                    objects.push(Packed {
                        object,
                        offset,
                        origin,
                    });
                    offset += size;
                }
                Ok(None) => {}
                Err(error) if is_damage(&error) => {
                    damaged.push(DamagedStaged::new(&object, &error));
                }
                Err(error) => return Err(error),
            }
        }
        let content_hash = match objects.as_slice() {
            [] => return Ok((None, damaged)),
            [packed] if single => packed.object.content_hash,
            _ => *hasher.finalize().as_bytes(),
        };
        let prepared = Prepared {
            objects,
            size_bytes: offset,
            content_hash,
        };
        Ok((Some(prepared), damaged))
    }

    /// Opens `object`'s staged record and, in a bundle of several, reads it whole against its
    /// PUT's hash, adding its bytes to the bundle's `hasher` only if all of them pass. Its
    /// origin, or `None` when it has moved away meanwhile.
    async fn check_staged(
        &self,
        object: &ObjectRecord,
        single: bool,
        hasher: &mut blake3::Hasher,
    ) -> StoreResult<Option<Origin>> {
        let (segment, record_offset) = staged_place(object);
        let size = object.size_bytes;
        let opened = self
            .staging()
            .read(
                segment,
                record_offset,
                &object.key,
                size,
                0..size,
                // A bundle's hash is taken here, so each object is checked against its PUT's
                // hash first; a single object's blob hash *is* its PUT's hash, which the encoder
                // verifies, so its bytes need not be read here at all.
                if single {
                    ContentCheck::ChunksOnly
                } else {
                    ContentCheck::WholeObject
                },
            )
            .await
            .map_err(StoreError::from);
        let mut reader = match opened {
            Ok(reader) => reader,
            Err(error) if is_not_found(&error) && self.moved_away(object).await? => {
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        if !single {
            let mut with_object = hasher.clone();
            while let Some(chunk) = reader.next_chunk().await? {
                with_object.update(&chunk);
            }
            *hasher = with_object;
        }
        Ok(Some(reader.origin()))
    }

    /// Whether `object` is no longer staged where the bundler found it.
    async fn moved_away(&self, object: &ObjectRecord) -> StoreResult<bool> {
        let now = self.catalog().object(&object.key).await?;
        Ok(now.is_none_or(|now| now.location != object.location))
    }

    /// Places a blob of `size_bytes` (in `group` when given, as compaction and
    /// [`Store::flush_placed`] need; else the group the placer picks) on the group's disks with the most room, and records it
    /// `Writing`; its stacks' room is taken at once.
    pub(crate) async fn begin_blob_in(
        &self,
        size_bytes: u64,
        content_hash: ContentHash,
        group: Option<GroupIndex>,
    ) -> StoreResult<BlobRecord> {
        let rack_io = self.rack_io();
        let code = &rack_io.code;
        let stack_bytes = code.stack_file_bytes(size_bytes);
        let driver_state = rack_io
            .driver
            .state()
            .await
            .map_err(|error| StoreError::Driver(error.to_string()))?;
        let spinning: Vec<GroupIndex> = driver_state
            .groups
            .iter()
            .filter(|group| {
                use crate::driver::GroupPhase;
                matches!(group.phase, GroupPhase::Active | GroupPhase::SpinningUp)
            })
            .map(|group| group.group)
            .collect();
        let mut unhealthy: BTreeSet<DiskIndex> = driver_state.failed_disks.into_iter().collect();
        for record in self.catalog().unhealthy_disks().await? {
            unhealthy.insert(record.disk);
        }
        let room = self
            .migration()
            .space(self.catalog())
            .await?
            .room(&unhealthy);
        let placement = &rack_io.placement;
        let group = match group {
            Some(group) => group,
            None => placement.choose_group(stack_bytes, &room, &spinning)?,
        };
        let disks = placement.choose_disks(group, stack_bytes, &room)?;
        let blob = BlobRecord {
            id: self.catalog().next_blob_id().await?,
            group,
            disks,
            k: code.data_columns() as u32,
            r: code.parity_columns() as u32,
            fragment_bytes: code.fragment_bytes() as u32,
            size_bytes,
            content_hash,
            state: BlobState::Writing,
            live_bytes: 0,
        };
        let mut books = self.migration().books().await;
        self.catalog().begin_blob(blob.clone()).await?;
        books.add_blob(&blob);
        Ok(blob)
    }

    /// The blob's disks in column order.
    pub(crate) fn column_disks(&self, blob: &BlobRecord) -> Vec<Arc<dyn Disk>> {
        let disks = &self.rack_io().disks;
        blob.disks
            .iter()
            .map(|&disk| Arc::clone(&disks[disk as usize]))
            .collect()
    }

    /// Pass two: one driver job encodes the bundle's staged bytes into every stripe stack while
    /// this task feeds it the staged records, chunk by chunk. `Ok(Some(..))` when the blob
    /// failed because one object's staged bytes are damaged (the caller discards the blob and
    /// leaves the object staged); an error for any other failure.
    async fn write_blob(
        &self,
        blob: &BlobRecord,
        prepared: &Prepared,
        state: &mut FlushProgress,
        progress: &impl Fn(FlushProgress),
    ) -> StoreResult<Option<DamagedStaged>> {
        let (sender, receiver) = mpsc::channel::<Result<Bytes, String>>(CHUNKS_IN_FLIGHT);
        let code = Arc::clone(&self.rack_io().code);
        let column_disks = self.column_disks(blob);
        let (id, size, hash) = (blob.id, blob.size_bytes, blob.content_hash);
        let job = crate::driver::Job::new(blob.group, size, Kind::Client, move |_: &_| {
            let reader = ChunkReader {
                chunks: receiver,
                current: Bytes::new(),
            };
            write_stacks(&code, id, size, hash, reader, &column_disks)
        })
        .for_purpose(crate::driver::Purpose::Migration);
        let run =
            async {
                let handle =
                    self.rack_io().driver.submit(job).await.map_err(|error| {
                        StoreError::Driver(format!("migrating blob {id}: {error}"))
                    })?;
                let done = handle
                    .wait()
                    .await
                    .map_err(|error| StoreError::Driver(format!("migrating blob {id}: {error}")))?;
                Ok::<_, StoreError>(done.output)
            };
        let feed = self.feed(prepared, sender, state, progress);
        let (written, fed) = tokio::join!(run, feed);
        let Err(failure) = written? else {
            return Ok(None);
        };
        let hash_mismatch = matches!(
            failure,
            StackWriteError::Encode(EncodeError::ContentHashMismatch { .. })
        );
        let error = StoreError::Migration {
            blob: id,
            reason: failure.to_string(),
        };
        match (fed, prepared.objects.as_slice()) {
            (Some(damaged), _) => Ok(Some(damaged)),
            // A lone object whose chunks all passed their crc32c but whose bytes are not its
            // PUT's is damaged too (in a bundle of several, pass one checked each object whole,
            // so a mismatch there is no one object's and stops the flush).
            (None, [packed]) if hash_mismatch => {
                Ok(Some(DamagedStaged::new(&packed.object, &error)))
            }
            (None, _) => Err(error),
        }
    }

    /// Sends the bundle's staged bytes, in order, to the encoder; stops early if it has gone.
    /// On a read error it hands the encoder the error (which fails the blob) and returns the
    /// object when the error is damage to that object's record.
    async fn feed(
        &self,
        prepared: &Prepared,
        sender: mpsc::Sender<Result<Bytes, String>>,
        state: &mut FlushProgress,
        progress: &impl Fn(FlushProgress),
    ) -> Option<DamagedStaged> {
        for Packed { object, .. } in &prepared.objects {
            let (segment, offset) = staged_place(object);
            let size = object.size_bytes;
            let opened = self
                .staging()
                .read(
                    segment,
                    offset,
                    &object.key,
                    size,
                    0..size,
                    // The encoder verifies the whole blob's BLAKE3 before any stack is final.
                    ContentCheck::ChunksOnly,
                )
                .await;
            let mut reader = match opened {
                Ok(reader) => reader,
                Err(error) => return refuse_feed(&sender, object, error.into()).await,
            };
            loop {
                let chunk = match reader.next_chunk().await {
                    Ok(Some(chunk)) => chunk,
                    Ok(None) => break,
                    Err(error) => return refuse_feed(&sender, object, error.into()).await,
                };
                let length = chunk.len() as u64;
                if sender.send(Ok(chunk)).await.is_err() {
                    return None;
                }
                state.bytes_done += length;
                progress(*state);
            }
        }
        None
    }

    /// Cleans up after a failed migration (best effort) and returns `error` to report.
    pub(crate) async fn fail(&self, blob: &BlobRecord, error: StoreError) -> StoreError {
        if let Err(cleanup) = self.discard_blob(blob).await {
            tracing::warn!(
                blob = blob.id,
                %cleanup,
                "cleaning up a failed migration; the Writing blob is retried at the next flush or open"
            );
        }
        error
    }

    /// Removes a `Writing` blob's stacks in a job on its group, then aborts it in the catalog.
    async fn discard_blob(&self, blob: &BlobRecord) -> StoreResult<()> {
        // Never remove the stacks of a blob that got committed after it was listed.
        match self.catalog().blob(blob.id).await? {
            Some(current) if current.state == BlobState::Writing => {}
            Some(_) => return Ok(()),
            None => {
                // Gone already (aborted elsewhere): its booking, if these books made one, goes.
                self.migration().books().await.remove_blob(blob);
                return Ok(());
            }
        }
        let column_disks = self.column_disks(blob);
        let id = blob.id;
        let code = crate::stacks::blob_code(blob)?;
        let (size_bytes, content_hash) = (blob.size_bytes, blob.content_hash);
        // Only the stacks this blob's write made (their headers say so): a file of the same
        // name another blob wrote stays (see crate::stacks).
        let job = crate::driver::Job::new(blob.group, 0, Kind::Client, move |_: &_| {
            remove_own_stacks(&code, id, size_bytes, content_hash, &column_disks)
        })
        .for_purpose(crate::driver::Purpose::Cleanup);
        let driver = &self.rack_io().driver;
        let handle = driver
            .submit(job)
            .await
            .map_err(|error| StoreError::Driver(format!("removing blob {id}'s stacks: {error}")))?;
        let removal = handle
            .wait()
            .await
            .map_err(|error| StoreError::Driver(format!("removing blob {id}'s stacks: {error}")))?
            .output;
        for (column, reason) in &removal.kept {
            tracing::warn!(blob = id, column, %reason, "a failed blob's stack name holds a file it did not write");
        }
        let mut books = self.migration().books().await;
        self.catalog().abort_blob(id).await?;
        books.remove_blob(blob);
        drop(books);
        crate::blob_index::remove_index(self.data_dir(), id, self.host_files());
        Ok(())
    }
}

/// What migrating one bundle did: the blob written, if any, and the objects left staged because
/// their bytes are damaged.
struct Migrated {
    blob: Option<BlobOutcome>,
    damaged: Vec<DamagedStaged>,
}

/// One blob written by a flush.
struct BlobOutcome {
    blob: BlobId,
    group: GroupIndex,
    packed: u64,
    moved: u64,
    size_bytes: u64,
}
