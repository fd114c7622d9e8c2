//! `spinwise store recover`: rebuilds a lost catalog (missing, empty or unreadable) from what
//! the data directory itself says — the staging log's records (key, size, BLAKE3 each;
//! docs/staging-format.md), the stripe stacks' headers (blob id, column, code, size, BLAKE3;
//! docs/stripe-format.md) and the blob object indexes ([`crate::blob_index`]). docs/store.md,
//! "A lost catalog", has the procedure and the rule for which version of a key wins.
//!
//! Invariants:
//! - it never runs over a catalog that opens: a healthy catalog is the truth, recovery a guess;
//! - it deletes nothing: a catalog that is there but unreadable (or empty) is moved aside to
//!   `catalog.sqlite.unreadable-<n>` with its `-wal`/`-shm`, and the segments and stacks are
//!   only read (staging recovery at the next open frees what the new catalog does not name);
//! - the new catalog is built in `catalog.sqlite.recovering` and renamed into place only once
//!   complete, so a crash mid-way leaves no half catalog where the store looks;
//! - what the world left damaged (a torn record, a bad header, an index that disagrees with
//!   its stacks) is skipped and reported with why, never a panic; every read is bounded (a
//!   stack header is 84 bytes, an index at most `MAX_INDEX_BYTES`);
//! - the blob id counter ends above every blob id a stack file's name or header carries;
//! - the disks are read as the store reads them: group by group, each group's listing a job of
//!   the rack engine ([`recover_in`] on any environment), so recovery keeps every hard budget;
//!   a disk that answers failed is marked so first and never commanded (before 2026-11-29 it
//!   listed every disk directory on the host at once, which a rack with sleeping disks cannot
//!   do within its budgets).

use crate::blob_index::{BlobIndex, IndexEntry, index_path, read_index};
use crate::config::{self, STORE_FILE};
use crate::driver::{GroupDisks, Job, Purpose};
use crate::durable::HostFiles;
use crate::error::StoreError;
use crate::rack::{Environment, disk_directory, open_rack};
use crate::staging::{Origin, ScannedRecord, StagingLog};
use crate::store::CATALOG_FILE;
use serde::Serialize;
use spinwise_catalog::{
    BlobId, BlobRecord, BlobState, Catalog, CatalogError, DiskIndex, GroupIndex, Migration,
    ObjectLocation, ObjectRecord, SegmentId, SqliteCatalog, Tier,
};
use spinwise_disk::{Disk, PowerState};
use spinwise_ec::{HEADER_BYTES, StackHeader};
use spinwise_model::Rack;
use spinwise_sched::scheduler::Kind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The staging segment a migrated object is first recorded in (a catalog row only, inside the
/// new catalog's file before it is put in place) so `commit_blob` can move it into its blob;
/// no real segment has this id (ids count up from 1).
const PLACEHOLDER_SEGMENT: SegmentId = i64::MAX as u64;
/// The suffix of the catalog being built.
const RECOVERING_SUFFIX: &str = ".recovering";

#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    #[error(
        "catalog {path} opens fine; recover rebuilds only a missing, empty or unreadable catalog (it never replaces a healthy one)"
    )]
    CatalogHealthy { path: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("the new catalog {path} kept a write-ahead log after closing; it was not put in place")]
    UncheckpointedCatalog { path: String },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> RecoverError + '_ {
    move |source| RecoverError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Something found but not recovered, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub what: String,
    pub reason: String,
}

/// What [`recover`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RecoverReport {
    /// `missing`, `empty` or `unreadable (why)`: the catalog's condition before.
    pub catalog_was: String,
    /// Where the old catalog's files were moved (they were there, but empty or unreadable; or
    /// a `-wal`/`-shm` the deleted catalog left).
    pub catalog_moved_to: Option<String>,
    pub staged_objects: u64,
    pub migrated_objects: u64,
    /// Blobs put back in the catalog (committed), with or without live objects.
    pub blobs: u64,
    /// Older versions of keys a later version replaced (not recovered, by the rule).
    pub versions_replaced: u64,
    /// The highest blob id found on the disks: the new catalog hands out only ids above it.
    pub highest_blob_id: Option<BlobId>,
    pub skipped: Vec<Skipped>,
    /// Stacks whose header is damaged in blobs recovered from their other columns (at least k
    /// good ones): the blob is back, its reads reconstruct the column and repair the stack, and
    /// so does `store scrub`. Until 2026-12-01 one such stack kept the whole blob's objects out.
    pub stacks_to_repair: Vec<Skipped>,
}

/// Where a version of a key stands among its others: later versions order higher ([`Rank`]'s
/// variants ascend, as the derived order has it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    /// A migrated copy whose blob index gives no origin (an index of version 1, written before
    /// 2026-11-30, or a copy compaction made out of such a blob): by (blob id, place in the
    /// index), blob ids being handed out upward. Below every version with an origin, as every
    /// migrated copy once ranked below every staged record (a flush migrates what is staged).
    Unplaced { blob: BlobId, place: u64 },
    /// When and where the version's PUT first wrote it in the staging log ([`Origin`]: the
    /// time the PUT began, then the place, segment ids ascending and records appended): a
    /// staged record's own, or its original's for a copy the warm collector made; a migrated
    /// copy's from its blob index. So a dead warm record that outlived a newer version's
    /// migration (its segment kept alive by live neighbours) ranks below that version, and of
    /// two versions written one after the other the later ranks higher even when concurrent
    /// PUTs left it in a lower segment (the stamp decides first; versions from before stamps
    /// rank by place alone, below every stamped one). At one origin (one PUT) the migrated copy
    /// wins over the record it came from: the object was cold when it migrated, so a demotion
    /// the lost catalog held is kept; a record and the warm collector's copy of it tie, and
    /// the one met first (the original, in a lower segment) is kept.
    Written { origin: Origin, migrated: bool },
}

/// One version of a key found on disk, ranked by [`Rank`].
#[derive(Clone, Debug)]
struct Version {
    rank: Rank,
    size_bytes: u64,
    content_hash: [u8; 32],
    /// `Staged` at its record, or `Migrated` at its blob and offset.
    location: ObjectLocation,
    /// A staged version's tier as its record says (a demotion lived only in the lost catalog,
    /// so a demoted object comes back warm: nothing is lost, it waits to be demoted again);
    /// migrated versions are cold.
    tier: Tier,
}

/// A blob whose stacks agree with each other and with its index.
struct FoundBlob {
    header: StackHeader,
    /// Column → the disk holding its stack (damaged ones included).
    columns: BTreeMap<u16, DiskIndex>,
    /// Columns whose stack is there, named for this blob, but whose header cannot be read:
    /// the stack's path and why.
    damaged_columns: BTreeMap<u16, Skipped>,
    index: Option<BlobIndex>,
}

/// Rebuilds `data_dir`'s catalog (see the module docs), on the emulated disks.
pub async fn recover(data_dir: &Path) -> Result<RecoverReport, RecoverError> {
    recover_in(data_dir, Environment::Emulated).await
}

/// [`recover`] on `environment`'s disks, clock and host files. The disks are read group by
/// group through the rack engine, as the store reads them, so recovery keeps every budget.
pub async fn recover_in(
    data_dir: &Path,
    environment: Environment,
) -> Result<RecoverReport, RecoverError> {
    let host = environment.host_files();
    let now_unix_ms = match &environment {
        Environment::Emulated => crate::clock::wall_unix_ms(),
        Environment::Given { clock, .. } => clock.unix_ms(),
    };
    let store_config = config::read(data_dir)?;
    let rack = config::validate(&store_config, &data_dir.join(STORE_FILE))?;
    let catalog_path = data_dir.join(CATALOG_FILE);
    let mut report = RecoverReport {
        catalog_was: catalog_condition(&catalog_path).await?,
        ..RecoverReport::default()
    };
    report.catalog_moved_to = move_aside(&catalog_path)?;
    let records = staged_records(data_dir, &store_config, host, &mut report).await?;
    let listed = list_stacks(data_dir, &rack, &store_config, environment).await?;
    let mut blobs = stacked_blobs(data_dir, &listed, &mut report);
    read_indexes(data_dir, &mut blobs, &mut report);
    let groups = store_config
        .layout
        .group_disk_indices(&rack)
        .map_err(|error| StoreError::Config {
            path: data_dir.join(STORE_FILE).display().to_string(),
            message: error.to_string(),
        })?;
    let blob_records = blob_records(&blobs, &groups, &mut report);
    let winners = choose_versions(&records, &blob_records, &blobs, &mut report);
    let highest = highest_blob_id(data_dir, &listed, &blobs)?;
    report.highest_blob_id = highest;
    let recovering = path_with_suffix(&catalog_path, RECOVERING_SUFFIX);
    remove_catalog_files(&recovering)?;
    let catalog = SqliteCatalog::open(&recovering).await?;
    let built = build(
        &catalog,
        highest,
        &blob_records,
        winners,
        now_unix_ms,
        &mut report,
    )
    .await;
    catalog.checkpoint_and_close().await;
    built?;
    put_in_place(&recovering, &catalog_path)?;
    Ok(report)
}

/// The catalog's condition, or [`RecoverError::CatalogHealthy`] when it opens.
async fn catalog_condition(path: &Path) -> Result<String, RecoverError> {
    match SqliteCatalog::open_existing(path).await {
        Ok(catalog) => {
            catalog.close().await;
            Err(RecoverError::CatalogHealthy {
                path: path.display().to_string(),
            })
        }
        Err(CatalogError::Absent { absence, .. }) => Ok(absence.to_string()),
        Err(CatalogError::Open { message, .. }) => Ok(format!("unreadable ({message})")),
        Err(other) => Err(other.into()),
    }
}

fn path_with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Moves the catalog file and its `-wal`/`-shm` (a stale WAL must never be replayed into the
/// new catalog) to the first free `<file>.unreadable-<n>`; returns where the catalog went.
fn move_aside(catalog_path: &Path) -> Result<Option<String>, RecoverError> {
    let parts = ["", "-wal", "-shm"].map(|suffix| path_with_suffix(catalog_path, suffix));
    if parts.iter().all(|part| !part.exists()) {
        return Ok(None);
    }
    let free = (1u32..)
        .map(|n| path_with_suffix(catalog_path, &format!(".unreadable-{n}")))
        .find(|target| {
            ["", "-wal", "-shm"]
                .iter()
                .all(|suffix| !path_with_suffix(target, suffix).exists())
        })
        .expect("some number is free");
    for (part, suffix) in parts.iter().zip(["", "-wal", "-shm"]) {
        if part.exists() {
            let target = path_with_suffix(&free, suffix);
            std::fs::rename(part, &target).map_err(io_error(part))?;
        }
    }
    sync_parent(catalog_path)?;
    Ok(Some(free.display().to_string()))
}

fn sync_parent(path: &Path) -> Result<(), RecoverError> {
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::File::open(parent)
        .and_then(|directory| directory.sync_all())
        .map_err(io_error(parent))
}

/// Removes a leftover catalog this recovery builds (a previous run cut short): it is ours.
fn remove_catalog_files(path: &Path) -> Result<(), RecoverError> {
    for suffix in ["", "-wal", "-shm"] {
        let part = path_with_suffix(path, suffix);
        match std::fs::remove_file(&part) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(io_error(&part)(error));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every valid staging record, in (segment, offset) order. Opening the log claims segments and
/// reads headers only; dropping it changes nothing.
async fn staged_records(
    data_dir: &Path,
    store_config: &config::StoreConfig,
    host: HostFiles,
    report: &mut RecoverReport,
) -> Result<Vec<ScannedRecord>, RecoverError> {
    let log = StagingLog::open_chain(
        store_config.staging_devices(data_dir),
        store_config.staging,
        host,
    )
    .await
    .map_err(StoreError::from)?;
    for segment in log.segments_in_use_at_open() {
        report.skipped.push(Skipped {
            what: format!("staging segment {segment}"),
            reason: "another live process holds it".into(),
        });
    }
    for (segment, readable) in log.damaged_segment_headers() {
        if readable {
            tracing::warn!(
                "staging segment {segment}: its header is damaged; its records were read by \
                 the chunk size their own headers give"
            );
        } else {
            report.skipped.push(Skipped {
                what: format!("staging segment {segment}"),
                reason: "its header is damaged and so is its first record's: no record read \
                         (the next open removes it, as a segment no object names)"
                    .into(),
            });
        }
    }
    Ok(log.scanned_records())
}

/// A file named like a stack on one disk, and its header or why it could not be read.
struct ListedStack {
    disk: DiskIndex,
    name: String,
    header: Result<StackHeader, String>,
}

/// The stack files on every disk, with their headers (84 bytes each, no more), listed group by
/// group through the rack engine: each group's listing is a job on it, so its disks spin up
/// only as the budgets allow, as for any other work. A failed or absent disk lists nothing:
/// its columns are missing, counted per blob.
async fn list_stacks(
    data_dir: &Path,
    rack: &Rack,
    store_config: &config::StoreConfig,
    environment: Environment,
) -> Result<Vec<ListedStack>, RecoverError> {
    let rack_io = open_rack(data_dir, rack, store_config, &[], environment).await?;
    // A disk that answers failed (removed, marked) is never commanded, as at the store's open:
    // without the lost catalog's list, its own answer is all there is.
    for disk in &rack_io.disks {
        if disk.power_state() == PowerState::Failed {
            let _ = rack_io.driver.mark_failed(disk.index()).await;
        }
    }
    let groups = store_config.layout.groups.len() as GroupIndex;
    let mut handles = Vec::with_capacity(groups as usize);
    for group in 0..groups {
        let job = Job::new(group, 1, Kind::Client, list_group).for_purpose(Purpose::Check);
        let handle =
            rack_io.driver.submit(job).await.map_err(|refusal| {
                StoreError::Driver(format!("listing group {group}: {refusal}"))
            })?;
        handles.push(handle);
    }
    let mut listed = Vec::new();
    for handle in handles {
        let done = handle
            .wait()
            .await
            .map_err(|lost| StoreError::Driver(lost.to_string()))?;
        listed.extend(done.output);
    }
    let _ = rack_io.driver.shutdown().await;
    Ok(listed)
}

/// Inside a group's job: every stack-named file of its usable disks, temporary ones included
/// (their ids count for the id counter), with the header of each complete one.
fn list_group(disks: &GroupDisks) -> Vec<ListedStack> {
    let mut listed = Vec::new();
    for disk in disks.usable() {
        let Ok(names) = disk.list_files() else {
            continue;
        };
        for name in names {
            let Some((_, temporary)) = crate::stacks::stack_blob_id(&name) else {
                continue;
            };
            let header = if temporary {
                Err("a temporary file".to_string())
            } else {
                read_header(disk.as_ref(), &name)
            };
            listed.push(ListedStack {
                disk: disk.index(),
                name,
                header,
            });
        }
    }
    listed
}

/// Reads a stack file's header (84 bytes, no more).
fn read_header(disk: &dyn Disk, name: &str) -> Result<StackHeader, String> {
    let mut bytes = [0u8; HEADER_BYTES];
    let mut filled = 0;
    while filled < HEADER_BYTES {
        let read = disk
            .read_at(name, filled as u64, &mut bytes[filled..])
            .map_err(|error| error.to_string())?;
        if read == 0 {
            break;
        }
        filled += read;
    }
    StackHeader::decode(&bytes[..filled]).map_err(|error| error.to_string())
}

/// The listed stripe stacks grouped by blob, each header checked against its name and its
/// blob's other columns.
fn stacked_blobs(
    data_dir: &Path,
    listed: &[ListedStack],
    report: &mut RecoverReport,
) -> BTreeMap<BlobId, FoundBlob> {
    let mut blobs: BTreeMap<BlobId, FoundBlob> = BTreeMap::new();
    let mut unreadable = Vec::new();
    for stack in listed {
        let Some((blob, false)) = crate::stacks::stack_blob_id(&stack.name) else {
            continue;
        };
        let path = disk_directory(data_dir, stack.disk as usize).join(&stack.name);
        let skip = |reason: String| Skipped {
            what: path.display().to_string(),
            reason,
        };
        match &stack.header {
            Ok(header)
                if header.blob_id != blob || !name_has_column(&stack.name, header.column) =>
            {
                report
                    .skipped
                    .push(skip("its header names another blob or column".into()));
            }
            Ok(header) => add_column(&mut blobs, *header, stack.disk, report, &path),
            Err(reason) => unreadable.push((blob, stack, path, reason)),
        }
    }
    for (blob, stack, path, reason) in unreadable {
        add_damaged_column(&mut blobs, blob, stack, path, reason, report);
    }
    blobs
}

/// Adds a stack whose header cannot be read to its blob as a damaged column, when the blob's
/// other stacks were found (they give its code, size and hash) and none of them holds the
/// column its name gives; otherwise it is skipped.
fn add_damaged_column(
    blobs: &mut BTreeMap<BlobId, FoundBlob>,
    blob: BlobId,
    stack: &ListedStack,
    path: PathBuf,
    reason: &str,
    report: &mut RecoverReport,
) {
    let damaged = Skipped {
        what: path.display().to_string(),
        reason: format!("bad header: {reason}"),
    };
    let column = crate::stacks::stack_identity(&stack.name).map(|(_, column, _)| column);
    match (blobs.get_mut(&blob), column) {
        (Some(found), Some(column)) if !found.columns.contains_key(&column) => {
            found.columns.insert(column, stack.disk);
            found.damaged_columns.insert(column, damaged);
        }
        _ => report.skipped.push(damaged),
    }
}

fn name_has_column(name: &str, column: u16) -> bool {
    name.ends_with(&format!("-c{column:03}.stack"))
}

/// Adds one column's stack to its blob, unless its header disagrees with the blob's others.
fn add_column(
    blobs: &mut BTreeMap<BlobId, FoundBlob>,
    header: StackHeader,
    disk: DiskIndex,
    report: &mut RecoverReport,
    path: &Path,
) {
    let found = blobs.entry(header.blob_id).or_insert_with(|| FoundBlob {
        header,
        columns: BTreeMap::new(),
        damaged_columns: BTreeMap::new(),
        index: None,
    });
    let same_blob = StackHeader {
        column: header.column,
        ..found.header
    } == header;
    if !same_blob || found.columns.contains_key(&header.column) {
        report.skipped.push(Skipped {
            what: path.display().to_string(),
            reason: "its header disagrees with another stack of the blob".into(),
        });
        return;
    }
    found.columns.insert(header.column, disk);
}

/// Reads each found blob's index and keeps it when it names the blob's id, size and hash.
fn read_indexes(
    data_dir: &Path,
    blobs: &mut BTreeMap<BlobId, FoundBlob>,
    report: &mut RecoverReport,
) {
    for (id, blob) in blobs.iter_mut() {
        let path = index_path(data_dir, *id);
        let why = match read_index(&path) {
            Ok(index)
                if index.blob == *id
                    && index.blob_bytes == blob.header.blob_bytes
                    && index.blob_hash == blob.header.content_hash =>
            {
                blob.index = Some(index);
                continue;
            }
            Ok(_) => "its index names another blob, size or hash".to_string(),
            Err(_) if !path.exists() => {
                "no object index (written before indexes existed, or lost)".into()
            }
            Err(reason) => format!("bad object index: {reason}"),
        };
        report.skipped.push(Skipped {
            what: format!("blob {id}"),
            reason: format!("{why}; its objects are not recovered and its stacks are left"),
        });
    }
}

/// The catalog record of every found blob that has all its columns (at least k of them with
/// a readable header), an index and a group. A recovered blob's damaged stacks are reported to
/// repair, a skipped one's as skipped.
fn blob_records(
    blobs: &BTreeMap<BlobId, FoundBlob>,
    groups: &[Vec<DiskIndex>],
    report: &mut RecoverReport,
) -> BTreeMap<BlobId, BlobRecord> {
    let mut records = BTreeMap::new();
    for (id, blob) in blobs {
        let damaged = blob.damaged_columns.values().cloned();
        if blob.index.is_none() {
            report.skipped.extend(damaged);
            continue;
        }
        match blob_record(blob, groups) {
            Ok(record) => {
                records.insert(*id, record);
                report.stacks_to_repair.extend(damaged);
            }
            Err(reason) => {
                report.skipped.push(Skipped {
                    what: format!("blob {id}"),
                    reason: format!(
                        "{reason}; its objects are not recovered and its stacks are left"
                    ),
                });
                report.skipped.extend(damaged);
            }
        }
    }
    records
}

fn blob_record(blob: &FoundBlob, groups: &[Vec<DiskIndex>]) -> Result<BlobRecord, String> {
    let header = &blob.header;
    let width = usize::from(header.data_columns) + usize::from(header.parity_columns);
    if blob.columns.len() != width {
        return Err(format!(
            "{} of its {width} columns found (a failed disk's columns are rebuilt only from a catalog)",
            blob.columns.len()
        ));
    }
    let good = blob.columns.len() - blob.damaged_columns.len();
    if good < usize::from(header.data_columns) {
        return Err(format!(
            "only {good} of its {width} stacks have a readable header, fewer than the {} it needs",
            header.data_columns
        ));
    }
    let disks: Vec<DiskIndex> = blob.columns.values().copied().collect();
    let group = groups
        .iter()
        .position(|members| disks.iter().all(|disk| members.contains(disk)))
        .ok_or("its columns are not all in one group of the layout")?;
    Ok(BlobRecord {
        id: header.blob_id,
        group: group as GroupIndex,
        disks,
        k: u32::from(header.data_columns),
        r: u32::from(header.parity_columns),
        fragment_bytes: header.fragment_bytes,
        size_bytes: header.blob_bytes,
        content_hash: header.content_hash,
        state: BlobState::Writing,
        live_bytes: 0,
    })
}

/// Each key's latest version (the rule on [`Version`]).
fn choose_versions(
    records: &[ScannedRecord],
    blob_records: &BTreeMap<BlobId, BlobRecord>,
    blobs: &BTreeMap<BlobId, FoundBlob>,
    report: &mut RecoverReport,
) -> BTreeMap<String, Version> {
    let mut winners: BTreeMap<String, Version> = BTreeMap::new();
    let mut offer = |key: &str, version: Version| match winners.get(key) {
        Some(held) if held.rank >= version.rank => report.versions_replaced += 1,
        Some(_) => {
            report.versions_replaced += 1;
            winners.insert(key.to_string(), version);
        }
        None => {
            winners.insert(key.to_string(), version);
        }
    };
    for id in blob_records.keys() {
        let entries: &[IndexEntry] = blobs[id].index.as_ref().map_or(&[], |i| &i.entries);
        for (place, entry) in entries.iter().enumerate() {
            let rank = match entry.origin {
                Some(origin) => Rank::Written {
                    origin,
                    migrated: true,
                },
                None => Rank::Unplaced {
                    blob: *id,
                    place: place as u64,
                },
            };
            let version = Version {
                rank,
                size_bytes: entry.size_bytes,
                content_hash: entry.content_hash,
                location: ObjectLocation::Migrated {
                    blob: *id,
                    offset: entry.offset,
                },
                tier: Tier::Cold,
            };
            offer(&entry.key, version);
        }
    }
    for record in records {
        let version = Version {
            // A copy the warm collector made ranks where the object was first written, so it
            // never outranks a version written after that but before the copy (staging.rs).
            rank: Rank::Written {
                origin: record.origin,
                migrated: false,
            },
            size_bytes: record.size_bytes,
            content_hash: record.content_hash,
            location: ObjectLocation::Staged {
                segment: record.segment,
                offset: record.offset,
            },
            tier: record.tier,
        };
        offer(&record.key, version);
    }
    winners
}

/// The highest blob id any stack file's name (temporary ones included) or header carries.
fn highest_blob_id(
    data_dir: &Path,
    listed: &[ListedStack],
    blobs: &BTreeMap<BlobId, FoundBlob>,
) -> Result<Option<BlobId>, RecoverError> {
    let surveyed = crate::survey::survey(data_dir)?.highest_blob_id;
    let named = listed
        .iter()
        .filter_map(|stack| crate::stacks::stack_blob_id(&stack.name))
        .map(|(blob, _)| blob)
        .max();
    Ok(surveyed.max(named).max(blobs.keys().next_back().copied()))
}

/// Fills the new catalog: the counter, each blob with its objects, then the staged objects.
async fn build(
    catalog: &SqliteCatalog,
    highest: Option<BlobId>,
    blob_records: &BTreeMap<BlobId, BlobRecord>,
    winners: BTreeMap<String, Version>,
    now: i64,
    report: &mut RecoverReport,
) -> Result<(), RecoverError> {
    if let Some(highest) = highest {
        catalog.reserve_blob_ids_through(highest).await?;
    }
    let mut by_blob: BTreeMap<BlobId, Vec<(String, Version)>> = BTreeMap::new();
    for (key, version) in winners {
        match version.location {
            ObjectLocation::Migrated { blob, .. } => {
                by_blob.entry(blob).or_default().push((key, version))
            }
            ObjectLocation::Staged { .. } => {
                catalog.put_object(object(key, &version, now)).await?;
                report.staged_objects += 1;
            }
        }
    }
    let mut placeholder_offset = 0u64;
    for (id, record) in blob_records {
        catalog.begin_blob(record.clone()).await?;
        let mut moves = Vec::new();
        for (key, version) in by_blob.remove(id).unwrap_or_default() {
            let ObjectLocation::Migrated { offset, .. } = version.location else {
                continue;
            };
            let from = ObjectLocation::Staged {
                segment: PLACEHOLDER_SEGMENT,
                offset: placeholder_offset,
            };
            placeholder_offset += 1;
            let placeholder = ObjectRecord {
                location: from.clone(),
                ..object(key.clone(), &version, now)
            };
            catalog.put_object(placeholder).await?;
            moves.push(Migration {
                key,
                from,
                blob_offset: offset,
            });
        }
        report.migrated_objects += catalog.commit_blob(*id, moves).await?;
        report.blobs += 1;
    }
    Ok(())
}

/// `version` of `key` as a catalog row. Its creation time is when its PUT began, from its stamp
/// (as the store sets it at PUT), or `now_unix_ms` for a version from before stamps.
fn object(key: String, version: &Version, now_unix_ms: i64) -> ObjectRecord {
    let stamp = match version.rank {
        Rank::Written { origin, .. } => origin.written_unix_us,
        Rank::Unplaced { .. } => None,
    };
    let created_unix_ms = stamp.map_or(now_unix_ms, |stamp_us| (stamp_us / 1000) as i64);
    ObjectRecord {
        key,
        size_bytes: version.size_bytes,
        content_hash: version.content_hash,
        created_unix_ms,
        location: version.location.clone(),
        tier: version.tier,
    }
}

/// Renames the finished catalog into place (after checking SQLite left no WAL beside it).
fn put_in_place(recovering: &Path, catalog_path: &Path) -> Result<(), RecoverError> {
    let wal = path_with_suffix(recovering, "-wal");
    if std::fs::metadata(&wal).is_ok_and(|metadata| metadata.len() > 0) {
        return Err(RecoverError::UncheckpointedCatalog {
            path: recovering.display().to_string(),
        });
    }
    // An empty WAL and the shared-memory index hold nothing: the database file is complete.
    for leftover in [wal, path_with_suffix(recovering, "-shm")] {
        match std::fs::remove_file(&leftover) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(io_error(&leftover)(error));
            }
            _ => {}
        }
    }
    std::fs::rename(recovering, catalog_path).map_err(io_error(recovering))?;
    sync_parent(catalog_path)
}
