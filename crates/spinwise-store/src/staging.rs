//! The staging log: where a PUT's bytes become durable before they are acknowledged, and where
//! staged objects are read from until the migrator moves them into a blob. The byte format,
//! the PUT durability sequence and recovery are specified in docs/staging-format.md; this file
//! implements exactly that.
//!
//! Several processes may open one staging directory at once (many `spinwise store put`s, a
//! server). Who may change a segment file is decided by an exclusive advisory lock on the file
//! itself (`flock`, through std's `File::try_lock`, on the descriptor that created it):
//! - **the writer's lock**: a segment is created with `O_CREAT|O_EXCL` and locked before its
//!   header is written; the creating process keeps the lock for as long as it may still append
//!   to the segment (open or idle in its pool) or holds a record in it whose catalog commit is
//!   pending (a [`StagedRecord`] not yet dropped). It is released when the segment is sealed
//!   *and* its last such record is committed, or when the process dies (the kernel drops
//!   `flock`s with the last descriptor, kill -9 included);
//! - **claims**: recovery and reclaim never truncate or delete a segment without first taking
//!   that lock themselves ([`StagingLog::claim_segment`], on a fresh descriptor, then checking
//!   the path still names the locked file). A segment whose lock is held is *in use*: left
//!   alone, and counted in [`RecoveryReport::segments_in_use`]. The catalog is asked what is
//!   referenced only *after* the claim, so a record committed before the claim is seen, and
//!   none can be committed into a claimed segment;
//! - a segment id is taken by `create_new`: an id another process created first
//!   (`AlreadyExists`), or a new file someone else's claim got to before our lock, is skipped
//!   for the next id, so two processes never append to one file.
//!
//! Invariants:
//! - appends within one segment are sequential, and an append fsyncs before the next append to
//!   that segment starts, so only a segment's last record can be torn;
//! - segments that existed when the log was opened are sealed: new records go to new segments;
//! - a segment holds records of one tier; creating a cold or warm segment seals this process's
//!   open segments of the other tier, so its records' segment ids follow the order it wrote
//!   them in (moved records, which only the warm collector writes, rank by their origin);
//! - a segment's file is on device `id % devices` of the chain ([`ChainState`]), and new ids
//!   only grow, across reopens too: the highest segment present is emptied to its header when
//!   freed, never deleted, so no id ever names two segments (origins in blob indexes outlive
//!   their segments; docs/staging-format.md, "Freeing space");
//! - a segment is truncated or deleted only under a claim (its lock taken by the claimer); it is
//!   deleted only when it is sealed, unpinned (no append in flight whose catalog commit is
//!   pending) and the caller, having asked the catalog after claiming, says nothing references
//!   it;
//! - memory per append or read is one chunk (`chunk_bytes`, 1 MiB by default);
//! - the bytes of all segments plus in-flight reservations never exceed `limit_bytes`;
//! - every segment deleted, found gone or truncated is reported, once the change is made, to
//!   the hook given to [`StagingLog::on_segment_gone`] (the store's tail cache drops its
//!   records), so nothing outside the log keeps serving a freed segment's bytes.

pub use crate::blob_index::Origin;
use crate::buffers::BufferPool;
use crate::durable::HostFiles;
use crate::hashing::BackgroundHasher;
use bytes::Bytes;
use spinwise_ec::checksum::{crc32c, crc32c_of_parts};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncSeekExt};

pub use spinwise_catalog::{ContentHash, SegmentId, Tier};

const SEGMENT_MAGIC: &[u8; 8] = b"SWSTGSEG";
const RECORD_MAGIC: &[u8; 8] = b"SWSTGREC";
const FORMAT_VERSION: u32 = 1;
/// Record flag bit 0: the object is warm (stays staged). Cold records keep flags 0, the only
/// value binaries from before tiers accept, so a store with no warm object stays readable by
/// them; every other bit is refused.
const RECORD_FLAG_WARM: u16 = 1;
/// Record flag bit 1: the record is a copy the warm tier's collector made (crate::warm_gc);
/// its header carries the place the object was first written (`origin`), which a lost
/// catalog's recovery ranks it by, so a copy never outranks a newer version written before the
/// copy was made. Written since 2026-11-30; binaries from before refuse the bit.
const RECORD_FLAG_MOVED: u16 = 2;
/// Bytes of a moved record's origin (segment id u64, offset u64) after its key.
const ORIGIN_BYTES: usize = 16;
/// Record flag bit 2: the header carries the time its object's PUT began (`written_unix_us`,
/// u64 µs since 1970 on the writing store's clock) after the key and any origin; a moved record
/// carries its original's. A lost catalog's recovery ranks versions by it before their place,
/// so two versions of a key written one after the other rank in that order whatever segments
/// concurrent PUTs left them in. Written since 2026-11-30; binaries from before refuse the bit.
const RECORD_FLAG_STAMPED: u16 = 4;
/// Bytes of a stamped record's `written_unix_us`.
const STAMP_BYTES: usize = 8;
/// Bytes of the segment header at offset 0.
pub const SEGMENT_HEADER_BYTES: u64 = 32;
/// Record header bytes before the key (magic, version, flags, chunk size, key length).
const RECORD_HEADER_FIXED_BYTES: u64 = 20;
/// Bytes of a chunk frame's header (length, crc).
const FRAME_HEADER_BYTES: u64 = 8;
/// Bytes of a record's trailer (end marker, size, BLAKE3, crc).
const TRAILER_BYTES: u64 = 48;
/// Keys are 1 ..= this many bytes of UTF-8: room for S3's longest key (1,024 bytes) under its
/// longest bucket name (63) and the `/` between them, since the S3 layer's store keys are
/// `"<bucket>/<key>"`. (1,024 until 2026-11-28, which refused S3 keys of 1,024 bytes; the
/// record layout is unchanged, the key length being a u32.)
pub const MAX_KEY_BYTES: usize = 1088;
const MIN_CHUNK_BYTES: u32 = 4 * 1024;
const MAX_CHUNK_BYTES: u32 = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum StagingError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "object keys are 1 to {MAX_KEY_BYTES} bytes of UTF-8; this one is {length_bytes} bytes"
    )]
    KeyLength { length_bytes: usize },
    #[error(
        "staging is full: {used_bytes} of {limit_bytes} bytes in use, {requested_bytes} more needed"
    )]
    Full {
        used_bytes: u64,
        limit_bytes: u64,
        requested_bytes: u64,
    },
    #[error("staging segment {segment:016x}, record at {offset}: {detail}")]
    Corrupt {
        segment: SegmentId,
        offset: u64,
        detail: String,
    },
    #[error("range {start}..{end} is outside the object's {size_bytes} bytes")]
    Range {
        start: u64,
        end: u64,
        size_bytes: u64,
    },
    #[error("staging configuration: {0}")]
    Config(String),
    #[error("staging segment {segment:016x} cannot be freed: {reason}")]
    NotFreeable {
        segment: SegmentId,
        reason: &'static str,
    },
}

type Result<T> = std::result::Result<T, StagingError>;

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StagingError + '_ {
    move |source| StagingError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Sizes and limits of a staging log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StagingConfig {
    /// A segment is sealed once it reaches this length (default 1 GiB).
    pub segment_bytes: u64,
    /// Payload chunk size (default 1 MiB): the unit of checksumming and of memory per transfer.
    pub chunk_bytes: u32,
    /// Total bytes of all segments (default 64 GiB); an append beyond it fails with `Full`.
    pub limit_bytes: u64,
}

impl Default for StagingConfig {
    fn default() -> Self {
        StagingConfig {
            segment_bytes: 1 << 30,
            chunk_bytes: 1 << 20,
            limit_bytes: 64 << 30,
        }
    }
}

impl StagingConfig {
    fn check(&self) -> Result<()> {
        if !(MIN_CHUNK_BYTES..=MAX_CHUNK_BYTES).contains(&self.chunk_bytes) {
            return Err(StagingError::Config(format!(
                "chunk_bytes {} is outside {MIN_CHUNK_BYTES}..={MAX_CHUNK_BYTES}",
                self.chunk_bytes
            )));
        }
        if self.segment_bytes < SEGMENT_HEADER_BYTES + 1 {
            return Err(StagingError::Config(format!(
                "segment_bytes {} leaves no room for records",
                self.segment_bytes
            )));
        }
        Ok(())
    }
}

/// A durable record, as `append` returns it. Holding it keeps its segment pinned (never freed)
/// and its writer's lock held (other processes' recovery and reclaim leave the segment alone)
/// until the caller has committed it to the catalog and drops it.
#[derive(Debug)]
pub struct StagedRecord {
    pub segment: SegmentId,
    /// Offset of the record header in the segment file.
    pub offset: u64,
    pub size_bytes: u64,
    pub content_hash: ContentHash,
    _pin: SegmentPin,
}

/// One valid record found by the recovery scan (structure and header/trailer crcs checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScannedRecord {
    pub segment: SegmentId,
    pub offset: u64,
    pub key: String,
    pub size_bytes: u64,
    pub content_hash: ContentHash,
    /// The tier the PUT wrote (a later demotion lives only in the catalog).
    pub tier: Tier,
    /// When and where the object was first written: this record's own stamp and place, or for
    /// a copy the warm collector made, those of the record it copies (carried through every
    /// move). A lost catalog's recovery ranks staged versions by it.
    pub origin: Origin,
}

/// What `recover` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub segments_deleted: Vec<SegmentId>,
    /// Segments another live process held locked at open (appending to them, or committing a
    /// record in them): not scanned, not changed.
    pub segments_in_use: Vec<SegmentId>,
    /// Bytes cut from torn or corrupt tails of kept segments.
    pub bytes_truncated: u64,
    /// Referenced (segment, offset) pairs with no valid record: a broken invariant, reported.
    pub missing: Vec<(SegmentId, u64)>,
}

/// The writer's exclusive `flock` on a segment it created: held while this process may append
/// to the segment or has an uncommitted record in it (see the module docs). Shared by the open
/// segment and every pin of a record in it. The lock belongs to the open file description,
/// which the segment's write descriptors (`dup`s) share; those close with the open segment or
/// before its append returns, so the last of these `Arc`s dropped releases the lock.
#[derive(Debug)]
struct WriterLock {
    _file: std::fs::File,
}

#[derive(Debug)]
struct SegmentPin {
    segment: SegmentId,
    pins: Arc<Mutex<BTreeMap<SegmentId, usize>>>,
    /// Keeps other processes' recovery and reclaim off the segment until the commit.
    _lock: Arc<WriterLock>,
}

impl SegmentPin {
    fn new(
        segment: SegmentId,
        pins: &Arc<Mutex<BTreeMap<SegmentId, usize>>>,
        lock: &Arc<WriterLock>,
    ) -> SegmentPin {
        *pins
            .lock()
            .expect("pin map lock")
            .entry(segment)
            .or_default() += 1;
        SegmentPin {
            segment,
            pins: Arc::clone(pins),
            _lock: Arc::clone(lock),
        }
    }
}

impl Drop for SegmentPin {
    fn drop(&mut self) {
        let mut pins = self.pins.lock().expect("pin map lock");
        let count = pins
            .get_mut(&self.segment)
            .expect("a pinned segment is in the pin map");
        *count -= 1;
        if *count == 0 {
            pins.remove(&self.segment);
        }
    }
}

/// A segment open for appends (taken by one appender at a time).
struct OpenSegment {
    id: SegmentId,
    file: tokio::fs::File,
    length_bytes: u64,
    lock: Arc<WriterLock>,
}

/// A segment file locked by this log's claimer (recovery or reclaim): while it is held, no
/// other process appends to it or commits a record into it, so it may be cut or deleted.
/// Dropping it releases the lock.
#[derive(Debug)]
pub struct ClaimedSegment {
    segment: SegmentId,
    path: PathBuf,
    /// The locked descriptor (read-write: truncation goes through it).
    file: std::fs::File,
}

impl ClaimedSegment {
    pub fn segment(&self) -> SegmentId {
        self.segment
    }
}

/// What [`StagingLog::claim_segment`] found.
#[derive(Debug)]
pub enum Claim {
    Claimed(ClaimedSegment),
    /// A live process holds the segment's lock: it may still append to it or commit into it.
    InUse,
    /// The file is gone (or was replaced while claiming): another claimer deleted it.
    Gone,
}

/// Attempts at a fresh segment id before `append` gives up (each failure means another
/// process took that id first).
const SEGMENT_ID_ATTEMPTS: u32 = 1024;

/// What is known of one claimed segment. Opening reads only its header and length; records
/// are checked when recovery asks for them ([`StagingLog::find_records`]), and the whole
/// segment is walked only when that is not enough (see docs/staging-format.md, "Recovery").
#[derive(Debug)]
struct SegmentScan {
    file_length: u64,
    /// The chunk size the segment header names (or, when the header is damaged, its first
    /// record's); `None` when neither is valid.
    chunk_bytes: Option<u32>,
    /// Whether the segment's own header failed its checks.
    header_damaged: bool,
    /// Records checked valid, by offset, each with its end offset.
    records: BTreeMap<u64, (ScannedRecord, u64)>,
    /// Where the valid prefix ends, once the whole segment has been walked.
    walked_to: Option<u64>,
}

struct Space {
    used_bytes: u64,
}

/// Where a new segment goes (see [`StagingLog::copy_record`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// The chain's tail device, where every PUT appends.
    #[default]
    Tail,
    /// A body device, neither the tail's nor the head's (Gecko's compact-in-body); the tail
    /// on a chain of fewer than three devices, where there is no such device.
    Body,
}

/// Which segments a pool of open segments holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pool {
    Cold,
    Warm,
    /// Warm records the collector moved into a body device.
    Body,
}

/// The log's devices (Gecko's chain; one directory is a chain of one). A segment's device is
/// its id modulo the chain's length, so ids stay unique across devices with `create_new` on
/// each, and any process finds a segment's file without asking another.
#[derive(Clone, Debug)]
pub struct ChainState {
    /// How many devices.
    pub devices: usize,
    /// The device new segments of PUTs go to.
    pub tail: usize,
    /// The device after the tail, which the tail moves to next: the collector empties it first.
    pub head: usize,
    /// Each device's share of `limit_bytes`.
    pub capacity_bytes: u64,
    /// Each device's bytes in sealed and idle open segments.
    pub used_bytes: Vec<u64>,
}

/// The staging log over one directory or a chain of them (see the module docs).
pub struct StagingLog {
    /// The chain's devices: `devices[0]` is `DATA/staging`, the rest `staging.chain`.
    devices: Vec<PathBuf>,
    /// The device the next segment of a PUT goes to.
    tail: Mutex<usize>,
    /// Every fsync of a segment or of a device's directory goes through it (crate::durable).
    host: HostFiles,
    config: StagingConfig,
    /// Open segments between appends, cold and warm apart (a segment holds records of one
    /// tier: cold ones leave with migration, warm ones stay and are collected), and the body
    /// segments the collector writes moved records into (compact-in-body).
    idle: Mutex<Vec<OpenSegment>>,
    idle_warm: Mutex<Vec<OpenSegment>>,
    idle_body: Mutex<Vec<OpenSegment>>,
    /// Held by whoever chooses and frees segments ([`StagingLog::reclaim_guard`]): two
    /// concurrent reclaims would otherwise both pick a segment and the second fail to delete it.
    reclaiming: tokio::sync::Mutex<()>,
    /// Sealed segments and their lengths.
    sealed: Mutex<BTreeMap<SegmentId, u64>>,
    next_segment: Mutex<SegmentId>,
    /// The highest id of a segment this log found at open or created since (0: none). That
    /// segment is never deleted, only emptied to its header ([`StagingLog::delete_claimed`]),
    /// so the next open hands out ids above every id ever handed out: blob indexes keep the
    /// origins of migrated objects after their segments are gone, and a lost catalog's
    /// recovery ranks versions by origin, so an id must never name two segments.
    highest_present: Mutex<SegmentId>,
    pins: Arc<Mutex<BTreeMap<SegmentId, usize>>>,
    space: Mutex<Space>,
    scans: Mutex<BTreeMap<SegmentId, SegmentScan>>,
    /// Segments claimed at open, scanned, and held until [`StagingLog::recover`] is done.
    open_claims: Mutex<BTreeMap<SegmentId, ClaimedSegment>>,
    /// Segments another process held locked at open (neither scanned nor recovered).
    in_use_at_open: Vec<SegmentId>,
    /// Told of every segment this log forgets (deleted, or found gone) or cuts: the store's
    /// tail cache drops what it holds of it ([`StagingLog::on_segment_gone`]).
    segment_gone: std::sync::OnceLock<SegmentHook>,
}

/// Removes the idle segment with the highest id. The newest, not the last returned: after two
/// concurrent appends end, the next append goes to the newer of their segments, so a record
/// written after another lands in a segment numbered at or above it unless that segment is
/// held by an append still running (a lost catalog's recovery ranks staged records by
/// position; docs/store.md "Recovering a lost catalog").
fn take_newest(idle: &mut Vec<OpenSegment>) -> Option<OpenSegment> {
    let newest = idle
        .iter()
        .enumerate()
        .max_by_key(|(_, open)| open.id)
        .map(|(index, _)| index)?;
    Some(idle.swap_remove(newest))
}

/// What [`StagingLog::on_segment_gone`] calls.
type SegmentHook = Box<dyn Fn(SegmentId) + Send + Sync>;

pub fn segment_path(dir: &Path, segment: SegmentId) -> PathBuf {
    dir.join(format!("seg-{segment:016x}.log"))
}

fn parse_segment_name(name: &str) -> Option<SegmentId> {
    let hex = name.strip_prefix("seg-")?.strip_suffix(".log")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Err(StagingError::KeyLength {
            length_bytes: key.len(),
        });
    }
    Ok(())
}

fn segment_header(segment: SegmentId, chunk_bytes: u32) -> [u8; 32] {
    let mut header = [0u8; 32];
    header[0..8].copy_from_slice(SEGMENT_MAGIC);
    header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header[12..16].copy_from_slice(&chunk_bytes.to_le_bytes());
    header[16..24].copy_from_slice(&segment.to_le_bytes());
    let crc = crc32c(&header[0..28]);
    header[28..32].copy_from_slice(&crc.to_le_bytes());
    header
}

fn record_flags(tier: Tier, stamp: &RecordStamp) -> u16 {
    let tier_flag = match tier {
        Tier::Warm => RECORD_FLAG_WARM,
        Tier::Cold => 0,
    };
    let moved_flag = stamp.moved_from.map_or(0, |_| RECORD_FLAG_MOVED);
    let stamped_flag = stamp.written_unix_us.map_or(0, |_| RECORD_FLAG_STAMPED);
    tier_flag | moved_flag | stamped_flag
}

/// What a record header says of when and where its object was written: the time its PUT began
/// (flag bit 2, every record a PUT writes since stamps) and, only for a copy the warm collector
/// makes, the place of the original (flag bit 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RecordStamp {
    written_unix_us: Option<u64>,
    moved_from: Option<(SegmentId, u64)>,
}

impl RecordStamp {
    /// The stamp of a record a PUT writes now.
    fn written(written_unix_us: u64) -> RecordStamp {
        RecordStamp {
            written_unix_us: Some(written_unix_us),
            moved_from: None,
        }
    }

    /// The stamp of a copy of a record whose origin is `origin`.
    fn copy_of(origin: Origin) -> RecordStamp {
        RecordStamp {
            written_unix_us: origin.written_unix_us,
            moved_from: Some(origin.place()),
        }
    }

    /// The origin of the record at (`segment`, `offset`) with this stamp.
    fn origin_at(&self, segment: SegmentId, offset: u64) -> Origin {
        let (segment, offset) = self.moved_from.unwrap_or((segment, offset));
        Origin {
            written_unix_us: self.written_unix_us,
            segment,
            offset,
        }
    }
}

/// A record header: the origin only for a copy the warm collector makes (flag bit 1), then the
/// stamp when there is one (flag bit 2).
fn record_header(key: &str, tier: Tier, chunk_bytes: u32, stamp: &RecordStamp) -> Vec<u8> {
    let mut header = Vec::with_capacity(
        RECORD_HEADER_FIXED_BYTES as usize + key.len() + ORIGIN_BYTES + STAMP_BYTES + 4,
    );
    header.extend_from_slice(RECORD_MAGIC);
    header.extend_from_slice(&(FORMAT_VERSION as u16).to_le_bytes());
    header.extend_from_slice(&record_flags(tier, stamp).to_le_bytes());
    header.extend_from_slice(&chunk_bytes.to_le_bytes());
    header.extend_from_slice(&(key.len() as u32).to_le_bytes());
    header.extend_from_slice(key.as_bytes());
    if let Some((segment, offset)) = stamp.moved_from {
        header.extend_from_slice(&segment.to_le_bytes());
        header.extend_from_slice(&offset.to_le_bytes());
    }
    if let Some(written_unix_us) = stamp.written_unix_us {
        header.extend_from_slice(&written_unix_us.to_le_bytes());
    }
    let crc = crc32c(&header);
    header.extend_from_slice(&crc.to_le_bytes());
    header
}

fn trailer(size_bytes: u64, hash: &ContentHash) -> [u8; 48] {
    let mut trailer = [0u8; 48];
    trailer[4..12].copy_from_slice(&size_bytes.to_le_bytes());
    trailer[12..44].copy_from_slice(hash);
    let crc = crc32c(&trailer[0..44]);
    trailer[44..48].copy_from_slice(&crc.to_le_bytes());
    trailer
}

fn frame_crc(length_bytes: u32, data: &[u8]) -> u32 {
    crc32c_of_parts(&[&length_bytes.to_le_bytes(), data])
}

fn le_u16(bytes: &[u8]) -> u16 {
    u16::from_le_bytes(bytes.try_into().expect("2 bytes"))
}
fn le_u32(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes.try_into().expect("4 bytes"))
}
fn le_u64(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

/// A parsed, crc-checked record header.
struct RecordHeader {
    chunk_bytes: u32,
    key: String,
    tier: Tier,
    /// A moved record's original place (flag bit 1) and the stamp (flag bit 2).
    stamp: RecordStamp,
    /// Header length (`24 + key length`, 16 more for a moved record, 8 more for a stamped
    /// one): the payload starts at `offset + length`.
    length_bytes: u64,
}

/// Parses the record header at the reader's position; `Err(detail)` when it is not valid.
fn read_record_header(reader: &mut impl Read) -> std::result::Result<RecordHeader, String> {
    let mut fixed = [0u8; RECORD_HEADER_FIXED_BYTES as usize];
    reader
        .read_exact(&mut fixed)
        .map_err(|e| format!("record header: {e}"))?;
    if &fixed[0..8] != RECORD_MAGIC {
        return Err("no record magic".into());
    }
    let version = le_u16(&fixed[8..10]);
    if u32::from(version) != FORMAT_VERSION {
        return Err(format!("record version {version} is not supported"));
    }
    let flags = le_u16(&fixed[10..12]);
    if flags & !(RECORD_FLAG_WARM | RECORD_FLAG_MOVED | RECORD_FLAG_STAMPED) != 0 {
        return Err(format!("record flags {flags:#06x} are not supported"));
    }
    let tier = if flags & RECORD_FLAG_WARM != 0 {
        Tier::Warm
    } else {
        Tier::Cold
    };
    let chunk_bytes = le_u32(&fixed[12..16]);
    let key_bytes = le_u32(&fixed[16..20]) as usize;
    if key_bytes == 0 || key_bytes > MAX_KEY_BYTES {
        return Err(format!("key length {key_bytes} is out of range"));
    }
    let origin_bytes = if flags & RECORD_FLAG_MOVED != 0 {
        ORIGIN_BYTES
    } else {
        0
    };
    let stamp_bytes = if flags & RECORD_FLAG_STAMPED != 0 {
        STAMP_BYTES
    } else {
        0
    };
    let covered = key_bytes + origin_bytes + stamp_bytes;
    let mut rest = vec![0u8; covered + 4];
    reader
        .read_exact(&mut rest)
        .map_err(|e| format!("record key: {e}"))?;
    let crc = crc32c_of_parts(&[&fixed, &rest[..covered]]);
    if crc != le_u32(&rest[covered..]) {
        return Err("record header crc mismatch".into());
    }
    let origin_at = key_bytes;
    let moved_from = (origin_bytes > 0).then(|| {
        (
            le_u64(&rest[origin_at..origin_at + 8]),
            le_u64(&rest[origin_at + 8..origin_at + ORIGIN_BYTES]),
        )
    });
    let stamp_at = key_bytes + origin_bytes;
    let written_unix_us = (stamp_bytes > 0).then(|| le_u64(&rest[stamp_at..covered]));
    if !(MIN_CHUNK_BYTES..=MAX_CHUNK_BYTES).contains(&chunk_bytes) {
        return Err(format!("chunk size {chunk_bytes} is out of range"));
    }
    let key = String::from_utf8(rest[..key_bytes].to_vec()).map_err(|_| "key is not UTF-8")?;
    Ok(RecordHeader {
        chunk_bytes,
        key,
        tier,
        stamp: RecordStamp {
            written_unix_us,
            moved_from,
        },
        length_bytes: RECORD_HEADER_FIXED_BYTES + covered as u64 + 4,
    })
}

/// Parses a trailer; returns (size, hash) or the reason it is invalid.
fn parse_trailer(trailer: &[u8; 48]) -> std::result::Result<(u64, ContentHash), String> {
    if le_u32(&trailer[0..4]) != 0 {
        return Err("trailer end marker is not 0".into());
    }
    if crc32c(&trailer[0..44]) != le_u32(&trailer[44..48]) {
        return Err("trailer crc mismatch".into());
    }
    let hash: ContentHash = trailer[12..44].try_into().expect("32 bytes");
    Ok((le_u64(&trailer[4..12]), hash))
}

/// Walks one record's structure from `offset` without reading chunk data (frame headers and
/// the trailer only). Returns the record and its end offset, or why it is not valid.
fn scan_record(
    file: &mut (impl Read + Seek),
    segment: SegmentId,
    offset: u64,
    file_length: u64,
    segment_chunk_bytes: u32,
) -> std::result::Result<(ScannedRecord, u64), String> {
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| e.to_string())?;
    let header = read_record_header(file)?;
    if header.chunk_bytes != segment_chunk_bytes {
        return Err("record chunk size differs from its segment's".into());
    }
    let mut position = offset + header.length_bytes;
    let mut size_bytes = 0u64;
    let mut last_was_short = false;
    loop {
        let mut frame = [0u8; 4];
        file.seek(SeekFrom::Start(position))
            .map_err(|e| e.to_string())?;
        file.read_exact(&mut frame)
            .map_err(|e| format!("frame at {position}: {e}"))?;
        let length_bytes = le_u32(&frame);
        if length_bytes == 0 {
            return finish_record(file, (segment, offset), header, position, size_bytes);
        }
        if length_bytes > header.chunk_bytes || last_was_short {
            return Err(format!("bad chunk length {length_bytes} at {position}"));
        }
        last_was_short = length_bytes < header.chunk_bytes;
        position += FRAME_HEADER_BYTES + u64::from(length_bytes);
        if position > file_length {
            return Err(format!("chunk at {position} runs past the end of the file"));
        }
        size_bytes += u64::from(length_bytes);
    }
}

/// Reads one (claimed) segment's header and length; records are checked later, on demand.
fn open_segment(claimed: &ClaimedSegment) -> Result<SegmentScan> {
    let (path, segment) = (&claimed.path, claimed.segment);
    let mut file = &claimed.file;
    file.seek(SeekFrom::Start(0)).map_err(io_error(path))?;
    let file_length = file.metadata().map_err(io_error(path))?.len();
    let mut header = [0u8; 32];
    let header_ok = file.read_exact(&mut header).is_ok()
        && &header[0..8] == SEGMENT_MAGIC
        && le_u32(&header[8..12]) == FORMAT_VERSION
        && le_u64(&header[16..24]) == segment
        && crc32c(&header[0..28]) == le_u32(&header[28..32]);
    let chunk_bytes = if header_ok {
        Some(le_u32(&header[12..16]))
    } else {
        first_record_chunk_bytes(file)
    };
    Ok(SegmentScan {
        file_length,
        chunk_bytes,
        header_damaged: !header_ok,
        records: BTreeMap::new(),
        walked_to: None,
    })
}

/// The chunk size of a segment whose own header is damaged, from its first record's header
/// (which carries it under its own crc; every record of a segment has the segment's): so one
/// bad header does not lose every record behind it. Until 2026-12-01 such a segment read as
/// empty, `recover` dropped its objects without a word and the next open deleted the file.
/// `None` when that record is not readable either.
fn first_record_chunk_bytes(mut file: &std::fs::File) -> Option<u32> {
    file.seek(SeekFrom::Start(SEGMENT_HEADER_BYTES)).ok()?;
    read_record_header(&mut file)
        .ok()
        .map(|header| header.chunk_bytes)
}

/// Walks a whole segment: records from the header on, until the first invalid one. Reads a
/// few bytes per chunk (one seek each), so it runs only when the catalog's sizes did not
/// locate every referenced record ([`check_record_at`]).
fn walk_segment(claimed: &ClaimedSegment, scan: &mut SegmentScan) {
    if scan.walked_to.is_some() {
        return;
    }
    scan.records.clear();
    let Some(chunk_bytes) = scan.chunk_bytes else {
        scan.walked_to = Some(0);
        return;
    };
    let mut file = &claimed.file;
    let mut valid_end = SEGMENT_HEADER_BYTES;
    while valid_end < scan.file_length {
        let walked = scan_record(
            &mut file,
            claimed.segment,
            valid_end,
            scan.file_length,
            chunk_bytes,
        );
        let Ok((record, end)) = walked else { break };
        scan.records.insert(valid_end, (record, end));
        valid_end = end;
    }
    scan.walked_to = Some(valid_end);
}

/// Checks the record at `offset` that the catalog says holds `size_bytes`, without walking its
/// chunks: the record header (crc), the last chunk's length, the end marker and the trailer
/// (crc, size). The chunks between are not looked at here; every read checks each one's
/// length and crc32c. Returns the record and its end, or why it is not there.
fn check_record_at(
    file: &mut (impl Read + Seek),
    segment: SegmentId,
    (offset, size_bytes): (u64, u64),
    scan: &SegmentScan,
) -> std::result::Result<(ScannedRecord, u64), String> {
    let chunk_bytes = scan.chunk_bytes.ok_or("the segment header is not valid")?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| e.to_string())?;
    let header = read_record_header(file)?;
    if header.chunk_bytes != chunk_bytes {
        return Err("record chunk size differs from its segment's".into());
    }
    let chunk = u64::from(chunk_bytes);
    let chunks = size_bytes.div_ceil(chunk);
    let payload = offset + header.length_bytes;
    // Checked: the size comes from the catalog, and a damaged one must not overflow.
    let trailer_at = chunks
        .checked_mul(FRAME_HEADER_BYTES)
        .and_then(|frames| frames.checked_add(size_bytes))
        .and_then(|body| body.checked_add(payload));
    let Some((trailer_at, end)) = trailer_at.map(|at| (at, at.saturating_add(TRAILER_BYTES)))
    else {
        return Err(format!("a record of {size_bytes} bytes cannot fit a file"));
    };
    if end > scan.file_length {
        return Err(format!(
            "a record of {size_bytes} bytes runs past the file's end"
        ));
    }
    let mut length = [0u8; 4];
    if chunks > 0 {
        let last_at = payload + (chunks - 1) * (FRAME_HEADER_BYTES + chunk);
        file.seek(SeekFrom::Start(last_at))
            .and_then(|_| file.read_exact(&mut length))
            .map_err(|e| format!("last chunk at {last_at}: {e}"))?;
        if u64::from(le_u32(&length)) != size_bytes - (chunks - 1) * chunk {
            return Err(format!("the last chunk's length at {last_at} does not fit"));
        }
    }
    finish_record(file, (segment, offset), header, trailer_at, size_bytes)
}

/// Reads the trailer at `trailer_at` of the record at `(segment, offset)` with `header`, checks
/// it says `size_bytes`, and returns the record with its end offset.
fn finish_record(
    file: &mut (impl Read + Seek),
    (segment, offset): (SegmentId, u64),
    header: RecordHeader,
    trailer_at: u64,
    size_bytes: u64,
) -> std::result::Result<(ScannedRecord, u64), String> {
    let mut trailer = [0u8; 48];
    file.seek(SeekFrom::Start(trailer_at))
        .and_then(|_| file.read_exact(&mut trailer))
        .map_err(|e| format!("trailer at {trailer_at}: {e}"))?;
    let (trailer_size, content_hash) = parse_trailer(&trailer)?;
    if trailer_size != size_bytes {
        return Err(format!(
            "trailer says {trailer_size} bytes, the chunks hold {size_bytes}"
        ));
    }
    let record = ScannedRecord {
        segment,
        offset,
        key: header.key,
        size_bytes,
        content_hash,
        tier: header.tier,
        origin: header.stamp.origin_at(segment, offset),
    };
    Ok((record, trailer_at + TRAILER_BYTES))
}

/// Finds the record at `offset` of `size_bytes` in a claimed segment: one already checked, else
/// checked now from the size ([`check_record_at`]), else by walking the whole segment.
fn find_record(
    claimed: &ClaimedSegment,
    scan: &mut SegmentScan,
    offset: u64,
    size_bytes: u64,
) -> Option<ScannedRecord> {
    let known = |scan: &SegmentScan| scan.records.get(&offset).map(|(record, _)| record.clone());
    if let Some(record) = known(scan) {
        return Some(record);
    }
    if scan.walked_to.is_none() {
        let mut file = &claimed.file;
        match check_record_at(&mut file, claimed.segment, (offset, size_bytes), scan) {
            Ok((record, end)) => {
                scan.records.insert(offset, (record.clone(), end));
                return Some(record);
            }
            Err(_) => walk_segment(claimed, scan),
        }
    }
    known(scan)
}

/// Whether `path` still names the file open as `file` (same device and inode).
fn names_file(path: &Path, file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let open = file.metadata()?;
    match std::fs::metadata(path) {
        Ok(named) => Ok(named.dev() == open.dev() && named.ino() == open.ino()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

/// Takes the lock of segment `segment` at `path` (blocking IO; see [`StagingLog::claim_segment`]).
fn claim_file(path: &Path, segment: SegmentId) -> Result<Claim> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Claim::Gone),
        Err(error) => return Err(io_error(path)(error)),
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(Claim::InUse),
        Err(std::fs::TryLockError::Error(error)) => return Err(io_error(path)(error)),
    }
    // Deleted (and perhaps its id taken again) between our open and our lock: not ours to judge.
    if !names_file(path, &file).map_err(io_error(path))? {
        return Ok(Claim::Gone);
    }
    Ok(Claim::Claimed(ClaimedSegment {
        segment,
        path: path.to_path_buf(),
        file,
    }))
}

/// Creates segment `segment` (`create_new`), locks it and writes its durable header; `None`
/// when the id is taken (the file exists) or someone else's claim reached the new, still
/// empty file before our lock (it is theirs to delete: never write into it).
fn create_locked_segment(
    host: &HostFiles,
    dir: &Path,
    segment: SegmentId,
    chunk_bytes: u32,
) -> Result<Option<std::fs::File>> {
    use std::os::unix::fs::FileExt;
    let path = segment_path(dir, segment);
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => return Ok(None),
        Err(error) => return Err(io_error(&path)(error)),
    };
    host.created(&path);
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
        Err(std::fs::TryLockError::Error(error)) => return Err(io_error(&path)(error)),
    }
    if !names_file(&path, &file).map_err(io_error(&path))? {
        return Ok(None);
    }
    file.write_all_at(&segment_header(segment, chunk_bytes), 0)
        .map_err(io_error(&path))?;
    // fsync-site: staging-segment-header
    host.sync_file("staging-segment-header", &file, &path)
        .map_err(io_error(&path))?;
    // fsync-site: staging-segment-created
    host.sync_directory("staging-segment-created", dir)
        .map_err(io_error(dir))?;
    Ok(Some(file))
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .expect("staging IO task does not panic")
}

/// What opening found in the directory.
struct OpenScan {
    scans: BTreeMap<SegmentId, SegmentScan>,
    claims: BTreeMap<SegmentId, ClaimedSegment>,
    /// Segments held by a live process, with their current length.
    in_use: BTreeMap<SegmentId, u64>,
}

/// Lists the segments of `dir` (creating it durably if needed), claims each one that no live
/// process holds and reads its header, and notes the others as in use.
fn claim_and_scan(dir: &Path, host: &HostFiles) -> Result<OpenScan> {
    // fsync-site: staging-directory-created
    host.create_directory("staging-directory-created", dir)
        .map_err(io_error(dir))?;
    let mut found = OpenScan {
        scans: BTreeMap::new(),
        claims: BTreeMap::new(),
        in_use: BTreeMap::new(),
    };
    for entry in std::fs::read_dir(dir).map_err(io_error(dir))? {
        let entry = entry.map_err(io_error(dir))?;
        let name = entry.file_name();
        let Some(segment) = name.to_str().and_then(parse_segment_name) else {
            continue;
        };
        let path = entry.path();
        match claim_file(&path, segment)? {
            Claim::Claimed(claimed) => {
                found.scans.insert(segment, open_segment(&claimed)?);
                found.claims.insert(segment, claimed);
            }
            Claim::InUse => match std::fs::metadata(&path) {
                Ok(metadata) => {
                    found.in_use.insert(segment, metadata.len());
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(io_error(&path)(error)),
            },
            Claim::Gone => {}
        }
    }
    Ok(found)
}

/// [`claim_and_scan`] on every device of a chain; a file on a device its id does not name
/// (id modulo the chain's length) is not the chain's and is left alone, with a warning.
fn claim_and_scan_chain(devices: &[PathBuf], host: &HostFiles) -> Result<OpenScan> {
    let mut found = OpenScan {
        scans: BTreeMap::new(),
        claims: BTreeMap::new(),
        in_use: BTreeMap::new(),
    };
    for (device, dir) in devices.iter().enumerate() {
        let OpenScan {
            mut scans,
            claims,
            in_use,
        } = claim_and_scan(dir, host)?;
        let belongs = |segment: SegmentId| {
            let ours = (segment % devices.len() as u64) as usize == device;
            if !ours {
                tracing::warn!(
                    segment,
                    dir = %dir.display(),
                    "a staging segment on a device of the chain its id does not name; left alone"
                );
            }
            ours
        };
        found
            .in_use
            .extend(in_use.into_iter().filter(|(id, _)| belongs(*id)));
        for (id, claim) in claims {
            if belongs(id) {
                let scan = scans.remove(&id).expect("every claimed segment is scanned");
                found.scans.insert(id, scan);
                found.claims.insert(id, claim);
            }
        }
    }
    Ok(found)
}

impl StagingLog {
    /// Opens (creating if needed) the log in `dir`, claims every segment no live process holds
    /// and reads its header (records are checked by [`StagingLog::find_records`] and
    /// [`StagingLog::recover`]); all existing segments are sealed. Nothing is changed on disk until
    /// [`StagingLog::recover`], which releases the claims (so does dropping the log).
    pub async fn open(dir: &Path, config: StagingConfig) -> Result<StagingLog> {
        StagingLog::open_in(dir, config, HostFiles::default()).await
    }

    /// [`StagingLog::open`] with its fsyncs through `host` (a simulation's crash model).
    pub async fn open_in(dir: &Path, config: StagingConfig, host: HostFiles) -> Result<StagingLog> {
        StagingLog::open_chain(vec![dir.to_path_buf()], config, host).await
    }

    /// [`StagingLog::open_in`] over a chain of devices (`devices[0]` first; at least one):
    /// every device's segments are claimed and sealed, and the tail is the device of the
    /// newest segment.
    pub async fn open_chain(
        devices: Vec<PathBuf>,
        config: StagingConfig,
        host: HostFiles,
    ) -> Result<StagingLog> {
        config.check()?;
        if devices.is_empty() {
            return Err(StagingError::Config(
                "a staging chain needs a device".into(),
            ));
        }
        let scan_devices = devices.clone();
        let scan_host = host.clone();
        let found = blocking(move || claim_and_scan_chain(&scan_devices, &scan_host)).await?;
        let mut sealed: BTreeMap<SegmentId, u64> = found
            .scans
            .iter()
            .map(|(id, scan)| (*id, scan.file_length))
            .collect();
        sealed.extend(found.in_use.iter().map(|(id, length)| (*id, *length)));
        let used_bytes = sealed.values().sum();
        let next_segment = sealed.keys().next_back().map_or(1, |last| last + 1);
        let tail = sealed
            .keys()
            .next_back()
            .map_or(0, |last| (last % devices.len() as u64) as usize);
        Ok(StagingLog {
            devices,
            tail: Mutex::new(tail),
            host,
            config,
            idle: Mutex::new(Vec::new()),
            idle_warm: Mutex::new(Vec::new()),
            idle_body: Mutex::new(Vec::new()),
            reclaiming: tokio::sync::Mutex::new(()),
            sealed: Mutex::new(sealed),
            next_segment: Mutex::new(next_segment),
            highest_present: Mutex::new(next_segment - 1),
            pins: Arc::new(Mutex::new(BTreeMap::new())),
            space: Mutex::new(Space { used_bytes }),
            scans: Mutex::new(found.scans),
            open_claims: Mutex::new(found.claims),
            in_use_at_open: found.in_use.keys().copied().collect(),
            segment_gone: std::sync::OnceLock::new(),
        })
    }

    /// Has `hook` called with every segment this log deletes, finds gone or truncates from now
    /// on (after the change on disk), so a cache of its records can drop them. One hook per
    /// log: a second is refused (`false`).
    pub fn on_segment_gone(&self, hook: impl Fn(SegmentId) + Send + Sync + 'static) -> bool {
        self.segment_gone.set(Box::new(hook)).is_ok()
    }

    fn segment_changed(&self, segment: SegmentId) {
        if let Some(hook) = self.segment_gone.get() {
            hook(segment);
        }
    }

    /// Segments another live process held locked when this log was opened: their records were
    /// not scanned, and recovery leaves them alone.
    pub fn segments_in_use_at_open(&self) -> &[SegmentId] {
        &self.in_use_at_open
    }

    /// The claimed segments whose header is damaged, each with whether its records could still
    /// be read (by the chunk size of its first record).
    pub fn damaged_segment_headers(&self) -> Vec<(SegmentId, bool)> {
        let scans = self.scans.lock().expect("scan lock");
        scans
            .iter()
            .filter(|(_, scan)| scan.header_damaged)
            .map(|(segment, scan)| (*segment, scan.chunk_bytes.is_some()))
            .collect()
    }

    pub fn config(&self) -> StagingConfig {
        self.config
    }

    /// The first device's directory (`DATA/staging`).
    pub fn dir(&self) -> &Path {
        &self.devices[0]
    }

    /// Every device's directory, in chain order.
    pub fn devices(&self) -> &[PathBuf] {
        &self.devices
    }

    /// The device `segment`'s file is on (its id modulo the chain's length).
    pub fn device_of(&self, segment: SegmentId) -> usize {
        (segment % self.devices.len() as u64) as usize
    }

    fn path_of(&self, segment: SegmentId) -> PathBuf {
        segment_path(&self.devices[self.device_of(segment)], segment)
    }

    /// The chain's tail and head and each device's bytes now (see [`ChainState`]).
    pub fn chain_state(&self) -> ChainState {
        let devices = self.devices.len();
        let tail = *self.tail.lock().expect("tail lock");
        ChainState {
            devices,
            tail,
            head: (tail + 1) % devices,
            capacity_bytes: self.device_capacity_bytes(),
            used_bytes: (0..devices).map(|device| self.bytes_on(device)).collect(),
        }
    }

    /// Each device's share of the staging limit.
    fn device_capacity_bytes(&self) -> u64 {
        self.config.limit_bytes / self.devices.len() as u64
    }

    /// Bytes of `device`'s sealed and idle open segments (segments being appended to now are
    /// not counted: the tail moves on a segment late at most).
    fn bytes_on(&self, device: usize) -> u64 {
        let on_device = |segment: &SegmentId| self.device_of(*segment) == device;
        let sealed: u64 = {
            let sealed = self.sealed.lock().expect("sealed lock");
            sealed
                .iter()
                .filter(|(segment, _)| on_device(segment))
                .map(|(_, length)| *length)
                .sum()
        };
        let idle: u64 = [&self.idle, &self.idle_warm, &self.idle_body]
            .iter()
            .map(|pool| {
                let pool = pool.lock().expect("idle lock");
                pool.iter()
                    .filter(|open| on_device(&open.id))
                    .map(|open| open.length_bytes)
                    .sum::<u64>()
            })
            .sum();
        sealed + idle
    }

    /// The device a new segment of `pool` goes to. A PUT's goes to the tail, which first moves
    /// on to the next device once its own share of the limit would not hold one more segment;
    /// a body segment to the emptiest device that is neither the tail nor the head (the tail
    /// on a chain of fewer than three).
    fn device_for_new(&self, pool: Pool) -> usize {
        let devices = self.devices.len();
        if devices == 1 {
            return 0;
        }
        let mut tail = self.tail.lock().expect("tail lock");
        if pool != Pool::Body
            && self.bytes_on(*tail) + self.config.segment_bytes > self.device_capacity_bytes()
        {
            *tail = (*tail + 1) % devices;
        }
        let head = (*tail + 1) % devices;
        match pool {
            Pool::Cold | Pool::Warm => *tail,
            Pool::Body => (0..devices)
                .filter(|device| *device != *tail && *device != head)
                .min_by_key(|device| self.bytes_on(*device))
                .unwrap_or(*tail),
        }
    }

    /// Where the store's host-file fsyncs go (crate::durable).
    pub fn host_files(&self) -> &HostFiles {
        &self.host
    }

    /// Every valid record of the claimed segments (in segment and offset order), found by
    /// walking each whole segment: a few bytes read per chunk. For tools and tests; the store
    /// asks only for the records it references ([`StagingLog::find_records`]).
    pub fn scanned_records(&self) -> Vec<ScannedRecord> {
        let claims = self.open_claims.lock().expect("claims lock");
        let mut scans = self.scans.lock().expect("scan lock");
        let mut records = Vec::new();
        for (segment, scan) in scans.iter_mut() {
            let claimed = claims
                .get(segment)
                .expect("every scanned segment is claimed until recovery");
            walk_segment(claimed, scan);
            records.extend(scan.records.values().map(|(record, _)| record.clone()));
        }
        records
    }

    /// Checks the records the catalog says are staged, `wanted` as (segment, offset, size),
    /// in the claimed segments (others are skipped), and returns those found valid. Each costs
    /// a few small reads ([`check_record_at`]); a segment where one is not where its size says
    /// is walked whole. Call between [`StagingLog::open`] and [`StagingLog::recover`], before
    /// the log is shared: the claims are lent to a blocking thread meanwhile.
    pub async fn find_records(
        &self,
        wanted: Vec<(SegmentId, u64, u64)>,
    ) -> Result<Vec<ScannedRecord>> {
        let claims = std::mem::take(&mut *self.open_claims.lock().expect("claims lock"));
        let mut scans = std::mem::take(&mut *self.scans.lock().expect("scan lock"));
        let (claims, scans, found) = blocking(move || {
            let mut found = Vec::new();
            for (segment, offset, size_bytes) in wanted {
                let (Some(claimed), Some(scan)) = (claims.get(&segment), scans.get_mut(&segment))
                else {
                    continue;
                };
                found.extend(find_record(claimed, scan, offset, size_bytes));
            }
            Ok((claims, scans, found))
        })
        .await?;
        *self.open_claims.lock().expect("claims lock") = claims;
        *self.scans.lock().expect("scan lock") = scans;
        Ok(found)
    }

    /// Reconciles the scanned (claimed) segments with what the catalog references
    /// (`referenced`: the (segment, offset) of every staged object, read *after* this log was
    /// opened, so after the claims): segments with no referenced record are deleted; a kept
    /// segment is truncated after its last referenced record (torn tails and unacknowledged
    /// records go). A reference with no valid record is reported missing, and then only the
    /// invalid tail is cut, never bytes at or after such a reference. Segments in use by a live
    /// process at open are only reported. The claims are released on return.
    pub async fn recover(&self, referenced: &BTreeSet<(SegmentId, u64)>) -> Result<RecoveryReport> {
        let scans = std::mem::take(&mut *self.scans.lock().expect("scan lock"));
        let mut claims = std::mem::take(&mut *self.open_claims.lock().expect("claims lock"));
        let mut report = RecoveryReport {
            segments_in_use: self.in_use_at_open.clone(),
            ..RecoveryReport::default()
        };
        for (segment, mut scan) in scans {
            let claimed = claims
                .remove(&segment)
                .expect("every scanned segment is claimed until recovery");
            let references: Vec<u64> = referenced
                .range((segment, 0)..=(segment, u64::MAX))
                .map(|(_, offset)| *offset)
                .collect();
            if references.is_empty() {
                if self.delete_claimed(claimed).await? {
                    report.segments_deleted.push(segment);
                }
                continue;
            }
            // The records `find_records` checked usually cover every reference; a reference
            // they miss needs the whole segment walked to know where its valid prefix ends.
            let (claimed, scan) = if references.iter().all(|at| scan.records.contains_key(at)) {
                (claimed, scan)
            } else {
                blocking(move || {
                    walk_segment(&claimed, &mut scan);
                    Ok((claimed, scan))
                })
                .await?
            };
            let missing: Vec<u64> = references
                .iter()
                .copied()
                .filter(|offset| !scan.records.contains_key(offset))
                .collect();
            report
                .missing
                .extend(missing.iter().map(|offset| (segment, *offset)));
            // Everything after the last referenced record is garbage (torn, unacknowledged,
            // deleted); with a reference that matches no record, cut only what is invalid, and
            // nothing if that reference lies in it.
            let end_of = |offset: &u64| scan.records[offset].1;
            let cut_at = if missing.is_empty() {
                references.iter().map(end_of).max()
            } else {
                let valid_end = scan
                    .walked_to
                    .expect("a segment with a missing reference was walked");
                references
                    .iter()
                    .all(|offset| *offset < valid_end)
                    .then_some(valid_end)
            };
            if let Some(cut_at) = cut_at.filter(|cut| *cut < scan.file_length) {
                self.truncate_claimed(claimed, cut_at).await?;
                report.bytes_truncated += scan.file_length - cut_at;
            }
        }
        Ok(report)
    }

    /// Cuts a claimed segment to `length_bytes` (through the locked descriptor, then fsync)
    /// and releases the claim.
    async fn truncate_claimed(&self, claimed: ClaimedSegment, length_bytes: u64) -> Result<()> {
        let segment = claimed.segment;
        let host = self.host.clone();
        blocking(move || {
            let (file, path) = (&claimed.file, &claimed.path);
            host.set_len(file, path, length_bytes)
                .map_err(io_error(path))?;
            // fsync-site: staging-recovery-truncate
            host.sync_file("staging-recovery-truncate", file, path)
                .map_err(io_error(path))?;
            Ok(())
        })
        .await?;
        // Only records nothing references are cut, but a cache need not keep even those.
        self.segment_changed(segment);
        let mut sealed = self.sealed.lock().expect("sealed lock");
        let old = sealed
            .insert(segment, length_bytes)
            .expect("a scanned segment is sealed");
        let mut space = self.space.lock().expect("space lock");
        space.used_bytes = space.used_bytes + length_bytes - old;
        Ok(())
    }

    /// Deletes a claimed segment's file while its lock is held (nobody else can delete or
    /// recreate that name meanwhile), fsyncs the directory and releases the claim; returns
    /// whether it deleted it. The highest segment present is instead cut to its header (see
    /// `highest_present`): it holds no record, and its id stays taken.
    async fn delete_claimed(&self, claimed: ClaimedSegment) -> Result<bool> {
        let segment = claimed.segment;
        if segment >= *self.highest_present.lock().expect("highest segment lock") {
            let length = self
                .sealed
                .lock()
                .expect("sealed lock")
                .get(&segment)
                .copied();
            if length.is_some_and(|length| length > SEGMENT_HEADER_BYTES) {
                self.truncate_claimed(claimed, SEGMENT_HEADER_BYTES).await?;
            }
            return Ok(false);
        }
        let dir = self.devices[self.device_of(segment)].clone();
        let host = self.host.clone();
        blocking(move || {
            host.remove_file(&claimed.path)
                .map_err(io_error(&claimed.path))?;
            // fsync-site: staging-segment-deleted
            host.sync_directory("staging-segment-deleted", &dir)
                .map_err(io_error(&dir))?;
            Ok(())
        })
        .await?;
        self.forget_segment(segment);
        Ok(true)
    }

    /// Drops a segment that no longer exists from the sealed set and the used space.
    fn forget_segment(&self, segment: SegmentId) {
        if let Some(length) = self.sealed.lock().expect("sealed lock").remove(&segment) {
            self.space.lock().expect("space lock").used_bytes -= length;
        }
        self.segment_changed(segment);
    }

    /// Sealed segments (the candidates for freeing) in id order.
    pub fn sealed_segments(&self) -> Vec<SegmentId> {
        self.sealed
            .lock()
            .expect("sealed lock")
            .keys()
            .copied()
            .collect()
    }

    /// Serializes reclaims: hold it from [`StagingLog::freeable_segments`] through the last
    /// [`StagingLog::free_claimed`] of one pass.
    pub async fn reclaim_guard(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.reclaiming.lock().await
    }

    /// Sealed segments with no append of this process awaiting its catalog commit: the
    /// candidates for freeing. Other processes' appends are not known here; callers
    /// [`StagingLog::claim_segment`] each candidate and ask the catalog which segments are in
    /// use *after* claiming (a writer commits before it releases its lock).
    pub fn freeable_segments(&self) -> Vec<SegmentId> {
        let pins = self.pins.lock().expect("pin map lock");
        let sealed = self.sealed.lock().expect("sealed lock");
        sealed
            .keys()
            .copied()
            .filter(|segment| !pins.contains_key(segment))
            .collect()
    }

    /// [`StagingLog::freeable_segments`] with each one's length: the warm collector's
    /// candidates (it weighs a segment's live bytes against its length).
    pub fn freeable_lengths(&self) -> BTreeMap<SegmentId, u64> {
        let pins = self.pins.lock().expect("pin map lock");
        let sealed = self.sealed.lock().expect("sealed lock");
        sealed
            .iter()
            .filter(|(segment, _)| !pins.contains_key(segment))
            .map(|(segment, length)| (*segment, *length))
            .collect()
    }

    /// Takes the lock of a segment so it may be cut or deleted (see the module docs): in use
    /// when a live process (this one included) holds it; gone (and forgotten here) when the
    /// file no longer exists.
    pub async fn claim_segment(&self, segment: SegmentId) -> Result<Claim> {
        let path = self.path_of(segment);
        let claim = blocking(move || claim_file(&path, segment)).await?;
        if let Claim::Gone = claim {
            self.forget_segment(segment);
        }
        Ok(claim)
    }

    /// Deletes a claimed, sealed segment. The caller guarantees nothing references it, having
    /// asked the catalog after claiming.
    pub async fn free_claimed(&self, claimed: ClaimedSegment) -> Result<()> {
        if !self
            .sealed
            .lock()
            .expect("sealed lock")
            .contains_key(&claimed.segment)
        {
            return Err(StagingError::NotFreeable {
                segment: claimed.segment,
                reason: "it is open for appends or does not exist",
            });
        }
        self.delete_claimed(claimed).await.map(|_| ())
    }

    /// Claims and deletes a sealed, unpinned segment, for a caller that knows nothing
    /// references it (a single-process caller: across processes, ask the catalog after
    /// [`StagingLog::claim_segment`] instead). A segment gone already counts as freed.
    pub async fn free_segment(&self, segment: SegmentId) -> Result<()> {
        if self
            .pins
            .lock()
            .expect("pin map lock")
            .contains_key(&segment)
        {
            return Err(StagingError::NotFreeable {
                segment,
                reason: "an append into it awaits its catalog commit",
            });
        }
        match self.claim_segment(segment).await? {
            Claim::Claimed(claimed) => self.free_claimed(claimed).await,
            Claim::InUse => Err(StagingError::NotFreeable {
                segment,
                reason: "a live process holds its lock (appending, or committing into it)",
            }),
            Claim::Gone => Ok(()),
        }
    }

    /// Bytes of all segments plus in-flight reservations.
    pub fn used_bytes(&self) -> u64 {
        self.space.lock().expect("space lock").used_bytes
    }

    fn reserve(&self, requested_bytes: u64) -> Result<()> {
        let mut space = self.space.lock().expect("space lock");
        if space.used_bytes + requested_bytes > self.config.limit_bytes {
            return Err(StagingError::Full {
                used_bytes: space.used_bytes,
                limit_bytes: self.config.limit_bytes,
                requested_bytes,
            });
        }
        space.used_bytes += requested_bytes;
        Ok(())
    }

    fn release(&self, bytes: u64) {
        self.space.lock().expect("space lock").used_bytes -= bytes;
    }

    /// The idle pool `pool`.
    fn idle_of(&self, pool: Pool) -> &Mutex<Vec<OpenSegment>> {
        match pool {
            Pool::Cold => &self.idle,
            Pool::Warm => &self.idle_warm,
            Pool::Body => &self.idle_body,
        }
    }

    /// An idle open segment of `pool`, or a new one (header written and durable, directory
    /// fsynced) on the device [`StagingLog::device_for_new`] picks. Before a new cold or warm
    /// one is created, every idle segment of the other tier is sealed, so the records appended
    /// from then on go to segments numbered above every segment still open: this process's
    /// segment ids stay in the order its records were written, across tiers. (Body segments
    /// hold only moved records, which rank by their origin.) See [`StagingLog::append`].
    async fn take_segment(&self, pool: Pool) -> Result<OpenSegment> {
        if let Some(open) = take_newest(&mut self.idle_of(pool).lock().expect("idle lock")) {
            return Ok(open);
        }
        let other = match pool {
            Pool::Cold => Some(Pool::Warm),
            Pool::Warm => Some(Pool::Cold),
            Pool::Body => None,
        };
        if let Some(other) = other {
            let idle: Vec<OpenSegment> = self
                .idle_of(other)
                .lock()
                .expect("idle lock")
                .drain(..)
                .collect();
            for open in idle {
                self.seal(open);
            }
        }
        self.reserve(SEGMENT_HEADER_BYTES)?;
        let created = self.create_segment(self.device_for_new(pool)).await;
        if created.is_err() {
            self.release(SEGMENT_HEADER_BYTES);
        }
        created
    }

    /// The lowest id above every id handed out so far that names `device` (id modulo the
    /// chain's length).
    fn next_segment_id(&self, device: usize) -> SegmentId {
        let devices = self.devices.len() as u64;
        let mut next = self.next_segment.lock().expect("segment id lock");
        let id = *next + (device as u64 + devices - *next % devices) % devices;
        *next = id + 1;
        id
    }

    /// Creates a segment on `device` under a fresh id, locked by this process (the writer's
    /// lock), trying the next id whenever another process took one first.
    async fn create_segment(&self, device: usize) -> Result<OpenSegment> {
        for _ in 0..SEGMENT_ID_ATTEMPTS {
            let id = self.next_segment_id(device);
            let dir = self.devices[device].clone();
            let chunk_bytes = self.config.chunk_bytes;
            let host = self.host.clone();
            let created = blocking(move || create_locked_segment(&host, &dir, id, chunk_bytes));
            let Some(file) = created.await? else {
                continue;
            };
            let path = self.path_of(id);
            let lock = Arc::new(WriterLock {
                _file: file.try_clone().map_err(io_error(&path))?,
            });
            let mut file = tokio::fs::File::from_std(file);
            file.seek(SeekFrom::Start(SEGMENT_HEADER_BYTES))
                .await
                .map_err(io_error(&path))?;
            let mut highest = self.highest_present.lock().expect("highest segment lock");
            *highest = (*highest).max(id);
            return Ok(OpenSegment {
                id,
                file,
                length_bytes: SEGMENT_HEADER_BYTES,
                lock,
            });
        }
        Err(StagingError::Io {
            path: self.devices[device].display().to_string(),
            source: std::io::Error::other(format!(
                "no free segment id in {SEGMENT_ID_ATTEMPTS} attempts (other processes took them)"
            )),
        })
    }

    /// Puts a segment of `pool` back after an append: sealed when full, idle otherwise.
    fn return_segment(&self, open: OpenSegment, pool: Pool) {
        if open.length_bytes >= self.config.segment_bytes {
            self.seal(open);
        } else {
            self.idle_of(pool).lock().expect("idle lock").push(open);
        }
    }

    /// Seals every idle open segment of `tier` (for warm, the collector's body segments
    /// too): their records become candidates for freeing (and, warm, for collection). For
    /// tests and tools that need a segment sealed before it is full; appends after it go to
    /// new segments.
    pub fn seal_idle(&self, tier: Tier) {
        let pools: &[Pool] = match tier {
            Tier::Cold => &[Pool::Cold],
            Tier::Warm => &[Pool::Warm, Pool::Body],
        };
        let idle: Vec<OpenSegment> = pools
            .iter()
            .flat_map(|pool| {
                let drained: Vec<OpenSegment> = self
                    .idle_of(*pool)
                    .lock()
                    .expect("idle lock")
                    .drain(..)
                    .collect();
                drained
            })
            .collect();
        for open in idle {
            self.seal(open);
        }
    }

    /// No more appends to `open`: it joins the sealed segments (freed whole once unreferenced).
    fn seal(&self, open: OpenSegment) {
        self.sealed
            .lock()
            .expect("sealed lock")
            .insert(open.id, open.length_bytes);
    }

    /// Appends one record of `tier` holding everything `reader` yields, fsyncs it, and returns
    /// where it is. Memory: one chunk. On any error (reader, IO, `Full`) the segment is cut back
    /// to where the record began, so nothing of it remains.
    ///
    /// Warm and cold records never share a segment. Cold segments are freed whole once
    /// migration has moved all their records; warm ones hold objects for months, and the dead
    /// records that deletes and overwrites leave in them are reclaimed by the warm collector
    /// (crate::warm_gc), which copies the live ones on ([`StagingLog::copy_record`]) so the
    /// segment can be freed. Until then a dead warm record stays on disk, which matters to a
    /// lost catalog's recovery (docs/store.md, "Recovering a lost catalog"). When a record of
    /// one tier needs a new segment, the other tier's open segments are sealed, so a later
    /// record never lands in a segment numbered below an earlier one.
    ///
    /// The record is stamped with the system clock's calendar time now; the store stamps its
    /// PUTs with its own clock's ([`StagingLog::append_stamped`]).
    pub async fn append(
        &self,
        key: &str,
        tier: Tier,
        reader: impl AsyncRead + Unpin,
    ) -> Result<StagedRecord> {
        // The clock module is the store's only reader of the wall clock.
        let written_unix_us = crate::clock::wall_unix_us();
        self.append_stamped(key, tier, written_unix_us, reader)
            .await
    }

    /// [`StagingLog::append`] with the stamp given: `written_unix_us`, when the PUT began
    /// (µs since 1970), which a lost catalog's recovery ranks versions of a key by.
    pub async fn append_stamped(
        &self,
        key: &str,
        tier: Tier,
        written_unix_us: u64,
        reader: impl AsyncRead + Unpin,
    ) -> Result<StagedRecord> {
        let pool = match tier {
            Tier::Cold => Pool::Cold,
            Tier::Warm => Pool::Warm,
        };
        let stamp = RecordStamp::written(written_unix_us);
        self.append_record((key, tier), stamp, pool, reader).await
    }

    /// [`StagingLog::append`] with the header's `stamp` given (a moved record's carries its
    /// original's).
    async fn append_record(
        &self,
        (key, tier): (&str, Tier),
        stamp: RecordStamp,
        pool: Pool,
        reader: impl AsyncRead + Unpin,
    ) -> Result<StagedRecord> {
        check_key(key)?;
        let mut open = self.take_segment(pool).await?;
        let pin = SegmentPin::new(open.id, &self.pins, &open.lock);
        let offset = open.length_bytes;
        let mut reserved_bytes = 0u64;
        let header = record_header(key, tier, self.config.chunk_bytes, &stamp);
        let result = self
            .write_record(
                &mut open,
                (key, header, stamp.moved_from.is_some()),
                reader,
                &mut reserved_bytes,
            )
            .await;
        match result {
            Ok((size_bytes, content_hash, end)) => {
                open.length_bytes = end;
                let segment = open.id;
                self.return_segment(open, pool);
                Ok(StagedRecord {
                    segment,
                    offset,
                    size_bytes,
                    content_hash,
                    _pin: pin,
                })
            }
            Err(error) => {
                self.release(reserved_bytes);
                let cut = async {
                    let file = open.file.try_clone().await?.into_std().await;
                    let path = self.path_of(open.id);
                    let host = self.host.clone();
                    tokio::task::spawn_blocking(move || {
                        host.set_len(&file, &path, offset)?;
                        // fsync-site: staging-append-cut
                        host.sync_file("staging-append-cut", &file, &path)?;
                        Ok::<(), std::io::Error>(())
                    })
                    .await
                    .expect("a cut does not panic")?;
                    open.file.seek(SeekFrom::Start(offset)).await.map(|_| ())
                }
                .await;
                match cut {
                    Ok(()) => self.return_segment(open, pool),
                    // The tail could not be cut: seal the segment so nothing is appended after
                    // the partial record; recovery truncates or deletes it later.
                    Err(_) => {
                        self.sealed
                            .lock()
                            .expect("sealed lock")
                            .insert(open.id, offset);
                    }
                }
                Err(error)
            }
        }
    }

    /// Writes header, chunks and trailer, then fsyncs. Returns (size, hash, end offset).
    ///
    /// Two stages overlap: this task reads the body chunk by chunk and reserves space, and a
    /// blocking writer thread checksums, hashes and writes each chunk, starting writeback as it
    /// goes (docs/staging-format.md, "Write pipeline"). At most [`WRITE_AHEAD_CHUNKS`] chunks
    /// wait between them, so memory stays a few chunks. The writer writes the trailer and
    /// fsyncs only after an explicit end: a failed body read leaves no trailer.
    async fn write_record(
        &self,
        open: &mut OpenSegment,
        (key, header, moved): (&str, Vec<u8>, bool),
        mut reader: impl AsyncRead + Unpin,
        reserved_bytes: &mut u64,
    ) -> Result<(u64, ContentHash, u64)> {
        let path = self.path_of(open.id);
        let chunk_bytes = self.config.chunk_bytes as usize;
        self.reserve(header.len() as u64 + TRAILER_BYTES)?;
        *reserved_bytes += header.len() as u64 + TRAILER_BYTES;
        let file = open.file.try_clone().await.map_err(io_error(&path))?;
        let file = file.into_std().await;
        let (pieces, receiver) = tokio::sync::mpsc::channel(WRITE_AHEAD_CHUNKS);
        let writer = RecordWriter {
            file,
            host: self.host.clone(),
            path: path.clone(),
            position: open.length_bytes,
            written_back: open.length_bytes,
            moved,
        };
        let writer = tokio::task::spawn_blocking(move || writer.run(header, receiver));
        let buffers = BufferPool::new(WRITE_BUFFERS);
        let body = async {
            loop {
                let chunk = read_chunk(&mut reader, chunk_bytes, &buffers)
                    .await
                    .map_err(|source| StagingError::Io {
                        path: format!("PUT body of `{key}`"),
                        source,
                    })?;
                let filled = chunk.len();
                if filled > 0 {
                    self.reserve(FRAME_HEADER_BYTES + filled as u64)?;
                    *reserved_bytes += FRAME_HEADER_BYTES + filled as u64;
                    if pieces.send(Piece::Chunk(chunk)).await.is_err() {
                        return Ok(()); // the writer stopped; its error is the one to report
                    }
                }
                if filled < chunk_bytes {
                    let _ = pieces.send(Piece::End).await;
                    return Ok(());
                }
            }
        }
        .await;
        drop(pieces);
        let written = writer.await.expect("staging writer thread does not panic");
        body?;
        written
    }

    /// A reader of `range` of the record of `key` at (`segment`, `offset`), `size_bytes`
    /// long, yielding crc-verified chunks; with [`ContentCheck::WholeObject`], a whole-object
    /// read also checks size and BLAKE3 against the trailer at the end.
    pub async fn read(
        &self,
        segment: SegmentId,
        offset: u64,
        key: &str,
        size_bytes: u64,
        range: Range<u64>,
        check: ContentCheck,
    ) -> Result<StagedReader> {
        if range.start > range.end || range.end > size_bytes {
            return Err(StagingError::Range {
                start: range.start,
                end: range.end,
                size_bytes,
            });
        }
        let path = self.path_of(segment);
        let expected_key = key.to_string();
        let corrupt = move |detail: String| StagingError::Corrupt {
            segment,
            offset,
            detail,
        };
        let (file, header) = blocking(move || {
            let mut file = std::fs::File::open(&path).map_err(io_error(&path))?;
            file.seek(SeekFrom::Start(offset))
                .map_err(io_error(&path))?;
            let mut buffered = std::io::BufReader::new(&mut file);
            let header = read_record_header(&mut buffered).map_err(corrupt)?;
            if header.key != expected_key {
                return Err(corrupt(format!(
                    "record holds key `{}`, not `{expected_key}`",
                    header.key
                )));
            }
            Ok((file, header))
        })
        .await?;
        let chunk_bytes = u64::from(header.chunk_bytes);
        let whole =
            (check == ContentCheck::WholeObject && range.start == 0 && range.end == size_bytes)
                .then(|| BackgroundHasher::new(READ_AHEAD_CHUNKS));
        let producer = ChunkProducer {
            path: self.path_of(segment),
            file,
            segment,
            offset,
            payload_start: offset + header.length_bytes,
            chunk_bytes,
            size_bytes,
            range,
            whole,
            // Enough for the queue, the hasher's queue, the consumer's chunk and the readers'.
            buffers: BufferPool::new(
                2 * READ_AHEAD_CHUNKS
                    + 1
                    + crate::ordered::MAX_READ_WORKERS * (READ_AHEAD_PER_WORKER + 1),
            ),
        };
        let (sender, chunks) = tokio::sync::mpsc::channel(READ_AHEAD_CHUNKS);
        tokio::task::spawn_blocking(move || producer.run(sender));
        Ok(StagedReader {
            chunks,
            origin: header.stamp.origin_at(segment, offset),
            pending: Bytes::new(),
        })
    }

    /// Copies the record of `key` at (`segment`, `offset`), `size_bytes` long, to a new place
    /// in the log as a moved record of `tier` (the warm collector's unit of work,
    /// crate::warm_gc): read whole and verified (each chunk's crc32c, then size and BLAKE3
    /// against its trailer; a record that fails is not copied), written with the origin the
    /// record carries (its own place, or the one it was itself copied from), fsynced. Memory:
    /// a few chunks. The copy is pinned like an append until the returned record is dropped:
    /// the caller repoints the catalog at it only if the object is still at the old place
    /// (`Catalog::restage`), and otherwise the copy is garbage.
    pub async fn copy_record(
        &self,
        (segment, offset): (SegmentId, u64),
        key: &str,
        size_bytes: u64,
        (tier, placement): (Tier, Placement),
    ) -> Result<StagedRecord> {
        let reader = self
            .read(
                segment,
                offset,
                key,
                size_bytes,
                0..size_bytes,
                ContentCheck::WholeObject,
            )
            .await?;
        let origin = reader.origin;
        let pool = match (tier, placement) {
            (Tier::Cold, _) => Pool::Cold,
            (Tier::Warm, Placement::Tail) => Pool::Warm,
            (Tier::Warm, Placement::Body) => Pool::Body,
        };
        let copy = self
            .append_record((key, tier), RecordStamp::copy_of(origin), pool, reader)
            .await?;
        if copy.size_bytes != size_bytes {
            // The read checked the size against the trailer; a copy of another length is a
            // broken invariant of this log, not of the world.
            panic!(
                "copy of ({segment}, {offset}) holds {} bytes, not {size_bytes}",
                copy.size_bytes
            );
        }
        Ok(copy)
    }
}

/// What a collection of the log's warm segments did (crate::warm_gc collects; the report is
/// the log's, so the store's state can keep its totals without depending on the collector).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WarmCollectReport {
    /// Segments whose live warm records were all moved (each then freed by the reclaim).
    pub segments_collected: u64,
    /// Segments the reclaim freed after the collection (the collected ones, and any other
    /// segment nothing referenced).
    pub segments_freed: u64,
    /// Records copied and repointed.
    pub records_moved: u64,
    /// Objects deleted or overwritten while their record was being copied (the copy is dead).
    pub records_dead: u64,
    /// Payload bytes of the records moved.
    pub bytes_moved: u64,
    /// Staging bytes freed by the reclaim after the collection.
    pub bytes_reclaimed: u64,
    /// Times a unit waited for PUTs and staged GETs to go first (semi-preemptive).
    pub yields: u64,
    /// Records that could not be copied (damaged: every chunk's crc and the BLAKE3 are checked
    /// on the way), one line each; each stays where it is, for scrub and the operator.
    pub problems: Vec<String>,
}

impl WarmCollectReport {
    /// Adds `part` (one collection) to this report.
    pub fn merge(&mut self, part: WarmCollectReport) {
        self.segments_collected += part.segments_collected;
        self.segments_freed += part.segments_freed;
        self.records_moved += part.records_moved;
        self.records_dead += part.records_dead;
        self.bytes_moved += part.bytes_moved;
        self.bytes_reclaimed += part.bytes_reclaimed;
        self.yields += part.yields;
        self.problems.extend(part.problems);
    }
}

/// Chunks queued between a PUT's body reader and its writer thread.
const WRITE_AHEAD_CHUNKS: usize = 4;
/// Chunk buffers a PUT keeps for reuse: the writer's queue and the hasher's, the chunk each of
/// them holds, and the one being filled. Reuse is what keeps a long PUT from page-faulting in a
/// fresh megabyte per chunk: with a new allocation per chunk, glibc hands trimmed memory back
/// and a 1 GiB S3 PUT took ~150,000 minor faults and ~20% more CPU (docs/BENCHMARKS.md).
const WRITE_BUFFERS: usize = 2 * WRITE_AHEAD_CHUNKS + 3;

/// What the body reader hands the writer thread.
enum Piece {
    Chunk(Bytes),
    /// The body ended: write the trailer and fsync.
    End,
}

/// The blocking half of an append: frames, hashes and writes chunks at explicit offsets.
struct RecordWriter {
    file: std::fs::File,
    host: HostFiles,
    path: PathBuf,
    /// Where the next byte goes.
    position: u64,
    /// Everything before this offset has had writeback started.
    written_back: u64,
    /// A copy the warm collector makes (its fsync is a site of its own, so the swarm's
    /// mutation test can remove it alone).
    moved: bool,
}

impl RecordWriter {
    /// Writes the record; returns (size, hash, end offset) once it is fsynced. Without an
    /// explicit [`Piece::End`] (the body failed) it stops with no trailer written.
    fn run(
        mut self,
        header: Vec<u8>,
        mut pieces: tokio::sync::mpsc::Receiver<Piece>,
    ) -> Result<(u64, ContentHash, u64)> {
        self.write(&header)?;
        let mut hasher = BackgroundHasher::new(WRITE_AHEAD_CHUNKS);
        let mut size_bytes = 0u64;
        while let Some(piece) = pieces.blocking_recv() {
            let Piece::Chunk(data) = piece else {
                let content_hash = hasher.finish();
                self.write(&trailer(size_bytes, &content_hash))?;
                self.sync()?;
                return Ok((size_bytes, content_hash, self.position));
            };
            hasher.update(data.clone());
            let length = data.len() as u32;
            let mut frame_header = [0u8; FRAME_HEADER_BYTES as usize];
            frame_header[0..4].copy_from_slice(&length.to_le_bytes());
            frame_header[4..8].copy_from_slice(&frame_crc(length, &data).to_le_bytes());
            self.write(&frame_header)?;
            self.write(&data)?;
            size_bytes += u64::from(length);
        }
        Err(StagingError::Io {
            path: self.path.display().to_string(),
            source: std::io::Error::other("the PUT body ended without completing"),
        })
    }

    /// The record's fsync, before it is acknowledged (a PUT) or repointed to (a move).
    fn sync(&self) -> Result<()> {
        if self.moved {
            // fsync-site: staging-move
            self.host
                .sync_file("staging-move", &self.file, &self.path)
                .map_err(io_error(&self.path))
        } else {
            // fsync-site: staging-append
            self.host
                .sync_file("staging-append", &self.file, &self.path)
                .map_err(io_error(&self.path))
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        self.file
            .write_all_at(bytes, self.position)
            .map_err(io_error(&self.path))?;
        self.position += bytes.len() as u64;
        if self.position - self.written_back >= crate::writeback::WRITEBACK_INTERVAL_BYTES {
            crate::writeback::start_writeback(
                &self.file,
                self.written_back,
                self.position - self.written_back,
            );
            self.written_back = self.position;
        }
        Ok(())
    }
}

/// Reads up to `chunk_bytes` (fewer only at the end of the body) into a buffer of `buffers`,
/// not zeroed first; the chunk goes back to the pool when the writer and the hasher drop it.
async fn read_chunk(
    reader: &mut (impl AsyncRead + Unpin),
    chunk_bytes: usize,
    buffers: &BufferPool,
) -> std::io::Result<Bytes> {
    let mut chunk = buffers.take(chunk_bytes);
    let mut limited = reader.take(chunk_bytes as u64);
    while chunk.len() < chunk_bytes {
        if limited.read_buf(&mut chunk).await? == 0 {
            break;
        }
    }
    Ok(buffers.freeze(chunk))
}

/// How much a read verifies beyond the per-chunk crc32c that every read checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ContentCheck {
    /// Every chunk's (or fragment's) crc32c: every byte returned is covered by a checksum.
    #[default]
    ChunksOnly,
    /// Also the whole object's size and BLAKE3 against the PUT's, at the end of a read of the
    /// whole object (a ranged read has no whole-object hash to check). Costs a hash pass (on a
    /// 2-core VM, GET of a staged object drops from ~1.2 to ~0.7 GB/s, docs/BENCHMARKS.md), like
    /// S3's `ChecksumMode: ENABLED`; the migrator always uses it.
    WholeObject,
}

/// Chunks a staged read verifies ahead of its consumer.
const READ_AHEAD_CHUNKS: usize = 4;

/// Yields a staged record's bytes in a range as verified chunks (see [`StagingLog::read`]).
/// Reader threads read and check frames a few ahead each ([`crate::ordered`]), a blocking
/// thread hashes them in order and queues up to [`READ_AHEAD_CHUNKS`] chunks; all stop when
/// the reader is dropped.
pub struct StagedReader {
    chunks: tokio::sync::mpsc::Receiver<Result<Bytes>>,
    /// The record's origin (see [`ScannedRecord::origin`]).
    origin: Origin,
    /// What an [`AsyncRead`] caller has not taken yet of the last chunk.
    pending: Bytes,
}

impl StagedReader {
    /// When and where the record's object was first written (see [`ScannedRecord::origin`]).
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The next verified piece of the range, or `None` at its end (after the whole-object
    /// check, on whole-object reads).
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>> {
        self.chunks.recv().await.transpose()
    }
}

/// The verified bytes as a byte stream (how [`StagingLog::copy_record`] feeds an append). A
/// failed check arrives as an error, never as the end of the stream, so a copy of a damaged
/// record fails rather than ending short.
impl AsyncRead for StagedReader {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
        buffer: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        while self.pending.is_empty() {
            match self.chunks.poll_recv(context) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Ready(Some(Ok(chunk))) => self.pending = chunk,
                Poll::Ready(Some(Err(error))) => {
                    return Poll::Ready(Err(std::io::Error::other(error)));
                }
            }
        }
        let taken = buffer.remaining().min(self.pending.len());
        let piece = self.pending.split_to(taken);
        buffer.put_slice(&piece);
        Poll::Ready(Ok(()))
    }
}

/// Reader threads of a staged read. One: a staging segment is one sequential stream, and on
/// the 2-core VM of docs/BENCHMARKS.md two threads taking alternate frames made cold reads
/// slower (the kernel's read-ahead stops keeping up: 0.78-1.04 s per GiB with one reader,
/// 0.93-1.62 s with two, caches dropped), although they were faster from the page cache
/// (0.25 against 0.33 s). Migrated reads, spread over k stack files, use one thread per core.
const STAGED_READ_WORKERS: usize = 1;

/// Frames each reader thread of a staged read verifies ahead of its consumer.
const READ_AHEAD_PER_WORKER: usize = 2;

/// The blocking half of a staged read: reader threads ([`crate::ordered`]) each read and
/// check frames (length and crc32c), the producer hands them on in order and, on a
/// whole-object read, checks the size and BLAKE3 in the trailer.
struct ChunkProducer {
    path: PathBuf,
    file: std::fs::File,
    segment: SegmentId,
    offset: u64,
    payload_start: u64,
    chunk_bytes: u64,
    size_bytes: u64,
    range: Range<u64>,
    /// Hash of every byte so far, on whole-object reads.
    whole: Option<BackgroundHasher>,
    /// Chunk buffers, reused once the consumer and the hasher drop them.
    buffers: BufferPool,
}

impl ChunkProducer {
    fn run(mut self, sender: tokio::sync::mpsc::Sender<Result<Bytes>>) {
        if let Err(error) = self.produce(&sender) {
            let _ = sender.blocking_send(Err(error));
        }
    }

    fn corrupt(&self, detail: String) -> StagingError {
        StagingError::Corrupt {
            segment: self.segment,
            offset: self.offset,
            detail,
        }
    }

    /// Sends every chunk of the range; returns early (Ok) when the consumer has gone.
    fn produce(&mut self, sender: &tokio::sync::mpsc::Sender<Result<Bytes>>) -> Result<()> {
        let first_chunk = self.range.start / self.chunk_bytes;
        let end_chunk = self.range.end.div_ceil(self.chunk_bytes).max(first_chunk);
        let chunks = end_chunk - first_chunk;
        let workers = STAGED_READ_WORKERS.min(crate::ordered::read_workers(chunks));
        let readers = Mutex::new(self.frame_readers(workers)?);
        let mut outcome = Ok(true);
        crate::ordered::run_ordered(
            chunks,
            workers,
            READ_AHEAD_PER_WORKER,
            || {
                let mut reader = readers.lock().expect("frame readers").pop();
                move |item: u64| {
                    let reader = reader.as_mut().expect("one frame reader per worker");
                    reader.read_frame(first_chunk + item)
                }
            },
            |frame| match frame
                .and_then(|frame| {
                    check_frame(frame, self.chunk_bytes, self.size_bytes)
                        .map_err(|detail| self.corrupt(detail))
                })
                .and_then(|frame| self.hand_on(frame, sender))
            {
                Ok(true) => std::ops::ControlFlow::Continue(()),
                other => {
                    outcome = other;
                    std::ops::ControlFlow::Break(())
                }
            },
        );
        if outcome? {
            self.finish()?;
        }
        Ok(())
    }

    /// One reader per worker, all on one descriptor (reads are `pread`s at explicit offsets).
    /// The descriptor is the one `read` opened and checked the record header on, never the path
    /// opened again: an overwrite of the key may free (delete) the segment meanwhile, which a
    /// second open would meet as a missing file in the middle of a GET already answering.
    fn frame_readers(&self, workers: usize) -> Result<Vec<FrameReader>> {
        let file = Arc::new(self.file.try_clone().map_err(io_error(&self.path))?);
        crate::writeback::advise_sequential(&file);
        (0..workers)
            .map(|_| {
                Ok(FrameReader {
                    file: file.clone(),
                    segment: self.segment,
                    offset: self.offset,
                    payload_start: self.payload_start,
                    chunk_bytes: self.chunk_bytes,
                    size_bytes: self.size_bytes,
                    buffers: self.buffers.clone(),
                })
            })
            .collect()
    }

    /// Hashes a verified frame (whole-object reads) and sends the part of its data inside the
    /// range, without copying; `Ok(false)` when the consumer has gone.
    fn hand_on(
        &mut self,
        (chunk, frame): (u64, Bytes),
        sender: &tokio::sync::mpsc::Sender<Result<Bytes>>,
    ) -> Result<bool> {
        let header = FRAME_HEADER_BYTES as usize;
        if let Some(hasher) = &mut self.whole {
            hasher.update(frame.slice(header..));
        }
        let chunk_start = chunk * self.chunk_bytes;
        let from = header + self.range.start.saturating_sub(chunk_start) as usize;
        let to = header + ((self.range.end - chunk_start) as usize).min(frame.len() - header);
        Ok(sender.blocking_send(Ok(frame.slice(from..to))).is_ok())
    }

    /// On a whole-object read, checks the trailer's size and BLAKE3 against what was read.
    fn finish(&mut self) -> Result<()> {
        let Some(hasher) = self.whole.take() else {
            return Ok(());
        };
        let chunks = self.size_bytes.div_ceil(self.chunk_bytes);
        let position = self.payload_start + chunks * FRAME_HEADER_BYTES + self.size_bytes;
        let mut trailer = [0u8; 48];
        self.file
            .seek(SeekFrom::Start(position))
            .and_then(|_| self.file.read_exact(&mut trailer))
            .map_err(|e| self.corrupt(format!("trailer: {e}")))?;
        let (size_bytes, hash) = parse_trailer(&trailer).map_err(|d| self.corrupt(d))?;
        if size_bytes != self.size_bytes || hash != hasher.finish() {
            return Err(self.corrupt("size or BLAKE3 differs from the trailer".into()));
        }
        Ok(())
    }
}

/// Checks a frame's length and crc32c. It runs on the producer's thread, not the reader's, so
/// the one reader thread of a staged read only issues `pread`s back to back (as `dd` does) while
/// the crc of the previous frame is computed beside it: with both on the reader, a cold 1 GiB
/// GET took 0.64–0.80 s against `dd`'s 0.38–0.49 s of the same segment (docs/BENCHMARKS.md).
fn check_frame(
    (chunk, frame): (u64, Bytes),
    chunk_bytes: u64,
    size_bytes: u64,
) -> std::result::Result<(u64, Bytes), String> {
    let expected = (size_bytes - chunk * chunk_bytes).min(chunk_bytes) as usize;
    let length = le_u32(&frame[0..4]);
    let data = &frame[FRAME_HEADER_BYTES as usize..];
    if length as usize != expected || frame_crc(length, data) != le_u32(&frame[4..8]) {
        return Err(format!("chunk {chunk} fails its length or crc32c check"));
    }
    Ok((chunk, frame))
}

/// One reader thread's view of a staged record: reads whole frames.
struct FrameReader {
    /// Shared by the readers: one descriptor, so the kernel's read-ahead sees one stream.
    file: Arc<std::fs::File>,
    segment: SegmentId,
    offset: u64,
    payload_start: u64,
    chunk_bytes: u64,
    size_bytes: u64,
    buffers: BufferPool,
}

impl FrameReader {
    fn corrupt(&self, detail: String) -> StagingError {
        StagingError::Corrupt {
            segment: self.segment,
            offset: self.offset,
            detail,
        }
    }

    /// Reads frame `chunk` (header included), unchecked: [`check_frame`] checks it on the
    /// consumer's thread.
    fn read_frame(&mut self, chunk: u64) -> Result<(u64, Bytes)> {
        let chunk_start = chunk * self.chunk_bytes;
        let expected = (self.size_bytes - chunk_start).min(self.chunk_bytes) as usize;
        let frame_bytes = FRAME_HEADER_BYTES as usize + expected;
        let position = self.payload_start + chunk * (FRAME_HEADER_BYTES + self.chunk_bytes);
        let mut buffer = self.buffers.take_initialized(frame_bytes);
        // One read of the whole frame: the IO size is what a cold read's speed depends on
        // (measured: 128 KiB pieces, each crc'd while in cache, read a cold segment at half the
        // speed of `dd`'s 1 MiB reads, and the in-cache crc saved no time).
        self.read_exact_at(&mut buffer, position, chunk)?;
        Ok((chunk, self.buffers.freeze(buffer)))
    }

    /// Fills `buffer` from `offset`; a file that ends first is a short (corrupt) frame.
    fn read_exact_at(&self, buffer: &mut [u8], offset: u64, chunk: u64) -> Result<()> {
        use std::os::unix::fs::FileExt;
        match self.file.read_exact_at(buffer, offset) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(self.corrupt(format!("chunk {chunk}: short")))
            }
            Err(e) => Err(self.corrupt(format!("chunk {chunk}: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all_chunks(body: &[u8], chunk_bytes: usize, buffers: &BufferPool) -> Vec<Vec<u8>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime");
        runtime.block_on(async {
            let mut reader = body;
            let mut chunks = Vec::new();
            let mut addresses = Vec::new();
            // Allocations of the chunk's size made between chunks: without the pool, each would
            // take the memory the chunk before just freed, and the next chunk would land
            // elsewhere.
            let mut others = Vec::new();
            loop {
                let chunk = read_chunk(&mut reader, chunk_bytes, buffers)
                    .await
                    .expect("reading a slice cannot fail");
                addresses.push(chunk.as_ptr());
                let done = chunk.len() < chunk_bytes;
                chunks.push(chunk.to_vec());
                drop(chunk);
                others.push(Vec::<u8>::with_capacity(chunk_bytes));
                if done {
                    break;
                }
            }
            assert!(
                addresses.windows(2).all(|pair| pair[0] == pair[1]),
                "each chunk reuses the buffer the one before returned: {addresses:?}"
            );
            chunks
        })
    }

    #[test]
    fn a_put_body_is_read_in_whole_chunks_into_one_reused_buffer() {
        let body: Vec<u8> = (0..3_500u32).map(|i| (i * 7 % 251) as u8).collect();
        let buffers = BufferPool::new(WRITE_BUFFERS);
        let chunks = read_all_chunks(&body, 1_000, &buffers);
        let lengths: Vec<usize> = chunks.iter().map(Vec::len).collect();
        assert_eq!(lengths, [1_000, 1_000, 1_000, 500]);
        assert_eq!(chunks.concat(), body);
    }

    #[test]
    fn a_record_header_keeps_its_tier_stamp_and_original_place_and_a_flipped_byte_is_refused() {
        let stamps = [
            RecordStamp::default(),
            RecordStamp::written(1_764_486_000_123_456),
            RecordStamp::copy_of(Origin {
                written_unix_us: Some(7),
                segment: 3,
                offset: 4_096,
            }),
            RecordStamp::copy_of(Origin::unstamped((2, 32))),
        ];
        for stamp in stamps {
            for tier in [Tier::Warm, Tier::Cold] {
                let header = record_header("photos/cat.jpg", tier, 4_096, &stamp);
                let parsed = read_record_header(&mut header.as_slice()).expect("valid");
                assert_eq!((parsed.tier, parsed.stamp), (tier, stamp));
                assert_eq!(parsed.length_bytes, header.len() as u64);
                assert_eq!(parsed.key, "photos/cat.jpg");
                let origin = parsed.stamp.origin_at(9, 64);
                let place = stamp.moved_from.unwrap_or((9, 64));
                assert_eq!(origin.place(), place);
                assert_eq!(origin.written_unix_us, stamp.written_unix_us);
                for position in 0..header.len() {
                    let mut flipped = header.clone();
                    flipped[position] ^= 0x04;
                    assert!(read_record_header(&mut flipped.as_slice()).is_err());
                }
            }
        }
    }

    #[test]
    fn origins_rank_by_stamp_first_and_an_unstamped_one_below_every_stamped_one() {
        let at = |stamp: Option<u64>, segment: u64| Origin {
            written_unix_us: stamp,
            segment,
            offset: 32,
        };
        assert!(at(Some(2), 1) > at(Some(1), 9));
        assert!(at(Some(1), 2) > at(Some(1), 1));
        assert!(at(Some(0), 1) > at(None, 9));
        assert!(at(None, 2) > at(None, 1));
    }

    #[test]
    fn a_body_of_whole_chunks_ends_with_an_empty_chunk() {
        let body = vec![9u8; 2_000];
        let chunks = read_all_chunks(&body, 1_000, &BufferPool::new(WRITE_BUFFERS));
        let lengths: Vec<usize> = chunks.iter().map(Vec::len).collect();
        assert_eq!(lengths, [1_000, 1_000, 0]);
    }
}
