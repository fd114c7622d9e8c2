//! The tail cache (issue 33 item 3; Gecko's RAM+flash tail cache): the payload bytes of
//! recently written staged records, so that a GET of an object just PUT is served from memory
//! (or a flash directory) instead of seeking the staging device away from its appends. It owns
//! two byte-bounded LRU levels keyed by a record's location in the staging log — (segment,
//! offset) — and the files of the optional flash level (`[tail_cache] dir`).
//!
//! How entries arrive: a PUT copies the body it streams into the staging log (at most
//! `max_object_bytes`; [`TailCache::capture`]) and inserts it once the catalog has committed the
//! record (write-through: that is what makes it a *tail* cache); a GET that missed and read a
//! whole small staged object fills it after the read checked every chunk (`fill_on_read`). What
//! RAM evicts is written to the flash directory, one file per entry; a flash hit is copied back
//! into RAM and its file kept, so an entry evicted again costs no second write.
//!
//! Invariants:
//! - a staged record never changes, so an entry cannot go stale while its segment exists; every
//!   lookup also compares the entry's size and BLAKE3 with the catalog record it was asked for,
//!   so an entry whose location was reused (a segment id freed and taken again by another
//!   process) is a miss, never another object's bytes;
//! - when the staging log forgets a segment (freed, or found gone), [`TailCache::drop_segment`]
//!   drops its entries from both levels; an insertion prepared before a drop (a fill whose read
//!   began before it, a spill whose file was being written) is abandoned, so no entry of a
//!   freed segment is added afterwards;
//! - each level's bytes never exceed its bound: RAM counts payload plus
//!   [`ENTRY_OVERHEAD_BYTES`] per entry (`ram_bytes`), flash counts its files' lengths
//!   (`dir_bytes`); an object above `max_object_bytes` is never cached;
//! - the flash directory is a cache, never a source of truth: its entry files (`*.entry`, and
//!   `*.tmp` of an interrupted write) are removed when the cache opens, each file is written
//!   atomically (temporary file, rename; no fsync, since a torn one is only a miss) and carries
//!   its location, size, BLAKE3 and a crc32c of everything, and a file that does not check out
//!   is a miss (counted in `flash_damaged`, the file removed), never wrong bytes; one process at
//!   a time uses a directory (`LOCK`, `flock`ed), another opens with RAM only;
//! - a cache IO error is a miss, logged; nothing here fails a PUT or a GET;
//! - no clock: recency is a counter, so the same operations evict the same entries.
//!
//! Why hand-written rather than the `lru` crate (already in Cargo.lock through the AWS SDK): the
//! levels are bounded by bytes, not entries, and freeing a segment must drop all its entries;
//! a `BTreeMap` keyed by (segment, offset) gives that as one range, where `lru`'s hash map would
//! need a scan or a second index. A second `BTreeMap` from a recency counter to the key orders
//! eviction; both are O(log n) per operation.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use spinwise_catalog::{ContentHash, SegmentId};
use spinwise_ec::checksum::crc32c_of_parts;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// A staged record's place: its segment and the offset of its header there.
pub type Location = (SegmentId, u64);

/// The default RAM bound: modest, so a server on a small host does not notice it.
pub const DEFAULT_RAM_BYTES: u64 = 64 << 20;
/// The default `max_object_bytes` is `ram_bytes / 16`, at most this: a cache of small objects
/// that a handful of large ones cannot flush.
pub const DEFAULT_MAX_OBJECT_BYTES: u64 = 4 << 20;
/// The default `dir_bytes` when a `dir` is given.
pub const DEFAULT_DIR_BYTES: u64 = 1 << 30;
/// What one RAM entry costs beyond its payload (maps' nodes, the `Bytes` header), charged
/// against `ram_bytes` so that many empty objects cannot grow the cache without bound.
pub const ENTRY_OVERHEAD_BYTES: u64 = 128;
/// The flash level's files: `<segment:016x>-<offset:016x>.entry`.
const ENTRY_SUFFIX: &str = ".entry";
const TEMPORARY_SUFFIX: &str = ".tmp";
const LOCK_FILE: &str = "LOCK";
const ENTRY_MAGIC: &[u8; 8] = b"SWTCACH1";
/// magic, segment, offset, size, BLAKE3.
const ENTRY_HEADER_BYTES: usize = 8 + 8 + 8 + 8 + 32;
const ENTRY_CRC_BYTES: usize = 4;

/// `[tail_cache]` in store.toml (docs/store.md, "Tail cache").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TailCacheConfig {
    /// Bytes of RAM for cached objects, entry overhead included (default 64 MiB; 0 turns the
    /// whole cache off).
    pub ram_bytes: u64,
    /// Objects larger than this are never cached (default `ram_bytes / 16`, at most 4 MiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_object_bytes: Option<u64>,
    /// Whether a GET that missed fills the cache with the staged object it read whole
    /// (default true).
    pub fill_on_read: bool,
    /// The flash level's directory (relative: to the data directory); `None`: RAM only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// Bytes of the flash level's files (default 1 GiB when `dir` is given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir_bytes: Option<u64>,
}

impl Default for TailCacheConfig {
    fn default() -> TailCacheConfig {
        TailCacheConfig {
            ram_bytes: DEFAULT_RAM_BYTES,
            max_object_bytes: None,
            fill_on_read: true,
            dir: None,
            dir_bytes: None,
        }
    }
}

impl TailCacheConfig {
    /// A configuration with the cache off (`ram_bytes = 0`).
    pub fn disabled() -> TailCacheConfig {
        TailCacheConfig {
            ram_bytes: 0,
            ..TailCacheConfig::default()
        }
    }

    pub fn is_default(&self) -> bool {
        *self == TailCacheConfig::default()
    }

    /// The largest object cached.
    pub fn max_object_bytes(&self) -> u64 {
        self.max_object_bytes
            .unwrap_or((self.ram_bytes / 16).min(DEFAULT_MAX_OBJECT_BYTES))
    }

    /// The flash level's bound (meaningful with a `dir`).
    pub fn dir_bytes(&self) -> u64 {
        self.dir_bytes.unwrap_or(DEFAULT_DIR_BYTES)
    }

    /// Checks the settings; the message names the field.
    pub fn check(&self) -> Result<(), String> {
        if self.ram_bytes == 0 {
            if self.dir.is_some() {
                return Err(
                    "tail_cache.dir needs tail_cache.ram_bytes above 0: the flash level holds what RAM evicts"
                        .into(),
                );
            }
            return Ok(());
        }
        if let Some(max_object_bytes) = self.max_object_bytes
            && max_object_bytes > self.ram_bytes
        {
            return Err(format!(
                "tail_cache.max_object_bytes {max_object_bytes} is above tail_cache.ram_bytes {}: \
                 no such object would fit",
                self.ram_bytes
            ));
        }
        match (&self.dir, self.dir_bytes) {
            (Some(dir), _) if dir.as_os_str().is_empty() => {
                Err("tail_cache.dir is empty (leave it out for RAM only)".into())
            }
            (Some(_), Some(0)) => Err(
                "tail_cache.dir_bytes must be above 0 (leave out tail_cache.dir for RAM only)"
                    .into(),
            ),
            (None, Some(_)) => Err("tail_cache.dir_bytes is set but tail_cache.dir is not".into()),
            _ => Ok(()),
        }
    }
}

/// What the cache did since it opened, and what it holds now (in [`crate::StoreStatus`] and
/// the S3 server's metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TailCacheStats {
    /// Lookups of staged objects answered from RAM.
    pub ram_hits: u64,
    /// Lookups answered from the flash directory.
    pub flash_hits: u64,
    /// Lookups of staged objects the cache could not answer (only counted while it is on).
    pub misses: u64,
    /// Bytes GETs were served from the cache (the ranges asked for).
    pub served_bytes: u64,
    /// Entries put into RAM: by PUTs, by GETs that missed, and flash hits copied back.
    pub insertions: u64,
    /// Entries RAM evicted to stay under `ram_bytes` (spilled to flash when it has one).
    pub ram_evictions: u64,
    /// Entry files written to the flash directory.
    pub flash_writes: u64,
    /// Entry files the flash directory evicted to stay under `dir_bytes`.
    pub flash_evictions: u64,
    /// Flash files that were missing, unreadable or failed their checks (each a miss).
    pub flash_damaged: u64,
    /// Hits refused because their bytes did not hash to the record's BLAKE3 (a `--verify`
    /// read; each a miss, the entry dropped).
    pub verify_failures: u64,
    /// Entries dropped because their segment was freed.
    pub segment_drops: u64,
    /// Bytes in RAM now (payload plus [`ENTRY_OVERHEAD_BYTES`] each).
    pub ram_used_bytes: u64,
    pub ram_entries: u64,
    /// Bytes of entry files in the flash directory now.
    pub flash_used_bytes: u64,
    pub flash_entries: u64,
}

/// A byte-bounded LRU map from locations to values: what each level of the cache is.
#[derive(Debug)]
pub struct Lru<V> {
    limit_bytes: u64,
    used_bytes: u64,
    next_tick: u64,
    entries: BTreeMap<Location, Slot<V>>,
    /// Recency: the smallest tick is the least recently used.
    order: BTreeMap<u64, Location>,
}

#[derive(Debug)]
struct Slot<V> {
    value: V,
    weight_bytes: u64,
    tick: u64,
}

impl<V> Lru<V> {
    pub fn new(limit_bytes: u64) -> Lru<V> {
        Lru {
            limit_bytes,
            used_bytes: 0,
            next_tick: 0,
            entries: BTreeMap::new(),
            order: BTreeMap::new(),
        }
    }

    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn contains(&self, key: &Location) -> bool {
        self.entries.contains_key(key)
    }

    fn tick(&mut self) -> u64 {
        self.next_tick += 1;
        self.next_tick
    }

    /// The value at `key`, made the most recently used.
    pub fn get(&mut self, key: &Location) -> Option<&V> {
        let tick = self.tick();
        let slot = self.entries.get_mut(key)?;
        self.order.remove(&slot.tick);
        slot.tick = tick;
        self.order.insert(tick, *key);
        Some(&slot.value)
    }

    /// Puts `value` (weighing `weight_bytes`) at `key` as the most recently used, replacing
    /// what was there, and evicts least recently used entries until the bound holds again;
    /// returns them, oldest first. A value heavier than the whole bound is refused (`Err`)
    /// and nothing changes.
    pub fn insert(
        &mut self,
        key: Location,
        value: V,
        weight_bytes: u64,
    ) -> Result<Vec<(Location, V)>, V> {
        if weight_bytes > self.limit_bytes {
            return Err(value);
        }
        self.remove(&key);
        let mut evicted = Vec::new();
        while self.used_bytes + weight_bytes > self.limit_bytes {
            let Some((_, oldest)) = self.order.first_key_value() else {
                break;
            };
            let oldest = *oldest;
            if let Some(value) = self.remove(&oldest) {
                evicted.push((oldest, value));
            }
        }
        let tick = self.tick();
        self.order.insert(tick, key);
        self.entries.insert(
            key,
            Slot {
                value,
                weight_bytes,
                tick,
            },
        );
        self.used_bytes += weight_bytes;
        Ok(evicted)
    }

    pub fn remove(&mut self, key: &Location) -> Option<V> {
        let slot = self.entries.remove(key)?;
        self.order.remove(&slot.tick);
        self.used_bytes -= slot.weight_bytes;
        Some(slot.value)
    }

    /// Removes every entry of `segment`; returns them.
    pub fn remove_segment(&mut self, segment: SegmentId) -> Vec<(Location, V)> {
        let keys: Vec<Location> = self
            .entries
            .range((segment, 0)..=(segment, u64::MAX))
            .map(|(key, _)| *key)
            .collect();
        keys.into_iter()
            .filter_map(|key| self.remove(&key).map(|value| (key, value)))
            .collect()
    }

    /// The keys, least recently used first.
    pub fn keys_by_recency(&self) -> Vec<Location> {
        self.order.values().copied().collect()
    }
}

/// A RAM entry: the whole payload and the BLAKE3 the PUT recorded for it.
#[derive(Clone, Debug)]
struct RamEntry {
    bytes: Bytes,
    content_hash: ContentHash,
}

/// A flash entry: what its file must say.
#[derive(Clone, Copy, Debug)]
struct FlashEntry {
    size_bytes: u64,
    content_hash: ContentHash,
}

struct Levels {
    ram: Lru<RamEntry>,
    flash: Option<Lru<FlashEntry>>,
    /// Grows at every [`TailCache::drop_segment`]: an insertion prepared under an older value
    /// is abandoned (see the module invariants).
    generation: u64,
    stats: TailCacheStats,
}

/// The flash level's directory, locked for this process.
struct FlashDir {
    path: PathBuf,
    /// Holds the directory's `flock` while the cache lives.
    _lock: std::fs::File,
}

/// Which level answered a lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Ram,
    Flash,
}

/// A lookup's answer: the whole object's bytes and where they came from.
#[derive(Clone, Debug)]
pub struct Hit {
    pub bytes: Bytes,
    pub level: Level,
}

/// Taken before a read whose bytes may fill the cache ([`TailCache::ticket`]).
#[derive(Clone, Copy, Debug)]
pub struct FillTicket {
    generation: u64,
}

/// The tail cache of one store (see the module docs).
pub struct TailCache {
    config: TailCacheConfig,
    max_object_bytes: u64,
    flash_dir: Option<FlashDir>,
    levels: Mutex<Levels>,
    /// Names temporary files uniquely (two spills of one entry may overlap).
    next_temporary: AtomicU64,
}

impl std::fmt::Debug for TailCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TailCache")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish()
    }
}

fn entry_name(location: Location) -> String {
    format!("{:016x}-{:016x}{ENTRY_SUFFIX}", location.0, location.1)
}

/// The bytes of an entry file for `location` holding `bytes`.
fn entry_file(location: Location, content_hash: &ContentHash, bytes: &[u8]) -> Vec<u8> {
    let mut header = Vec::with_capacity(ENTRY_HEADER_BYTES);
    header.extend_from_slice(ENTRY_MAGIC);
    header.extend_from_slice(&location.0.to_le_bytes());
    header.extend_from_slice(&location.1.to_le_bytes());
    header.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    header.extend_from_slice(content_hash);
    let crc = crc32c_of_parts(&[&header, bytes]);
    let mut file = header;
    file.reserve(bytes.len() + ENTRY_CRC_BYTES);
    file.extend_from_slice(bytes);
    file.extend_from_slice(&crc.to_le_bytes());
    file
}

/// An entry file's length for a payload of `size_bytes`.
fn entry_file_bytes(size_bytes: u64) -> u64 {
    (ENTRY_HEADER_BYTES + ENTRY_CRC_BYTES) as u64 + size_bytes
}

/// The payload of entry file `file` if it is the whole, undamaged entry `expected` at
/// `location`; otherwise why not.
fn parse_entry_file(
    file: Vec<u8>,
    location: Location,
    expected: &FlashEntry,
) -> Result<Bytes, String> {
    if file.len() as u64 != entry_file_bytes(expected.size_bytes) {
        return Err(format!(
            "{} bytes, not the {} an entry of {} bytes takes",
            file.len(),
            entry_file_bytes(expected.size_bytes),
            expected.size_bytes
        ));
    }
    let (body, crc) = file.split_at(file.len() - ENTRY_CRC_BYTES);
    let (header, payload) = body.split_at(ENTRY_HEADER_BYTES);
    let crc = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
    if crc32c_of_parts(&[header, payload]) != crc {
        return Err("crc32c mismatch".into());
    }
    let mut wanted = Vec::with_capacity(ENTRY_HEADER_BYTES);
    wanted.extend_from_slice(ENTRY_MAGIC);
    wanted.extend_from_slice(&location.0.to_le_bytes());
    wanted.extend_from_slice(&location.1.to_le_bytes());
    wanted.extend_from_slice(&expected.size_bytes.to_le_bytes());
    wanted.extend_from_slice(&expected.content_hash);
    if header != wanted.as_slice() {
        return Err("its header names another entry".into());
    }
    let start = ENTRY_HEADER_BYTES;
    let end = start + payload.len();
    Ok(Bytes::from(file).slice(start..end))
}

/// Opens (creating) the flash directory, locks it and removes the entry files left in it.
fn open_flash_dir(path: &Path) -> std::io::Result<Option<FlashDir>> {
    std::fs::create_dir_all(path)?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.join(LOCK_FILE))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
        Err(std::fs::TryLockError::Error(error)) => return Err(error),
    }
    // What a previous run left is not indexed: remove it (the directory is never a source of
    // truth, and keeping unindexed files would break `dir_bytes`).
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(ENTRY_SUFFIX) || name.ends_with(TEMPORARY_SUFFIX) {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(Some(FlashDir {
        path: path.to_path_buf(),
        _lock: lock,
    }))
}

fn remove_entry_files(dir: &Path, locations: &[Location]) {
    for location in locations {
        let path = dir.join(entry_name(*location));
        if let Err(error) = std::fs::remove_file(&path)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %path.display(), %error, "removing a tail cache file");
        }
    }
}

impl TailCache {
    /// A cache that holds nothing and counts nothing.
    pub fn disabled() -> TailCache {
        TailCache::with_flash(TailCacheConfig::disabled(), None)
    }

    /// The cache `config` describes; its `dir`, when relative, is in `data_dir`. A flash
    /// directory that cannot be opened (or that another process uses) leaves the cache with
    /// RAM only, logged: a cache never stops a store from opening.
    pub fn open(config: &TailCacheConfig, data_dir: &Path) -> TailCache {
        let mut config = config.clone();
        let flash_dir = match config.dir.as_ref().filter(|_| config.ram_bytes > 0) {
            None => None,
            Some(dir) => {
                let path = data_dir.join(dir);
                match open_flash_dir(&path) {
                    Ok(Some(flash)) => Some(flash),
                    Ok(None) => {
                        tracing::warn!(dir = %path.display(), "another process uses this tail cache directory: caching in RAM only");
                        None
                    }
                    Err(error) => {
                        tracing::warn!(dir = %path.display(), %error, "the tail cache directory could not be opened: caching in RAM only");
                        None
                    }
                }
            }
        };
        if flash_dir.is_none() {
            config.dir = None;
        }
        TailCache::with_flash(config, flash_dir)
    }

    fn with_flash(config: TailCacheConfig, flash_dir: Option<FlashDir>) -> TailCache {
        let flash = flash_dir.as_ref().map(|_| Lru::new(config.dir_bytes()));
        TailCache {
            max_object_bytes: if config.ram_bytes == 0 {
                0
            } else {
                config.max_object_bytes()
            },
            levels: Mutex::new(Levels {
                ram: Lru::new(config.ram_bytes),
                flash,
                generation: 0,
                stats: TailCacheStats::default(),
            }),
            config,
            flash_dir,
            next_temporary: AtomicU64::new(0),
        }
    }

    /// Whether the cache is on (`ram_bytes` above 0).
    pub fn enabled(&self) -> bool {
        self.config.ram_bytes > 0
    }

    /// Whether GETs that miss fill the cache.
    pub fn fill_on_read(&self) -> bool {
        self.enabled() && self.config.fill_on_read
    }

    /// Whether an object of `size_bytes` may be cached.
    pub fn fits(&self, size_bytes: u64) -> bool {
        self.enabled() && size_bytes <= self.max_object_bytes
    }

    /// Whether the flash level is in use.
    pub fn has_flash(&self) -> bool {
        self.flash_dir.is_some()
    }

    pub fn stats(&self) -> TailCacheStats {
        let levels = self.levels.lock().expect("tail cache lock");
        let mut stats = levels.stats;
        stats.ram_used_bytes = levels.ram.used_bytes();
        stats.ram_entries = levels.ram.len() as u64;
        if let Some(flash) = &levels.flash {
            stats.flash_used_bytes = flash.used_bytes();
            stats.flash_entries = flash.len() as u64;
        }
        stats
    }

    /// `reader`, copying what it yields (up to `max_object_bytes`) for [`TailCache::insert`].
    pub fn capture<R: AsyncRead + Unpin>(&self, reader: R) -> Capture<R> {
        Capture {
            inner: reader,
            limit_bytes: self.max_object_bytes,
            bytes: self.enabled().then(Vec::new),
        }
    }

    /// Taken before reading bytes that may [`TailCache::fill`] the cache afterwards.
    pub fn ticket(&self) -> FillTicket {
        FillTicket {
            generation: self.levels.lock().expect("tail cache lock").generation,
        }
    }

    /// Puts the whole payload of the record at `location` into RAM (a PUT's write-through:
    /// call it while the record's segment is still pinned, so it cannot be freed meanwhile).
    pub async fn insert(&self, location: Location, content_hash: ContentHash, bytes: Bytes) {
        self.insert_if(None, location, content_hash, bytes).await;
    }

    /// [`TailCache::insert`] of bytes read since `ticket` was taken: abandoned if a segment
    /// was dropped since (it may have been this one).
    pub async fn fill(
        &self,
        ticket: FillTicket,
        location: Location,
        content_hash: ContentHash,
        bytes: Bytes,
    ) {
        self.insert_if(Some(ticket), location, content_hash, bytes)
            .await;
    }

    async fn insert_if(
        &self,
        ticket: Option<FillTicket>,
        location: Location,
        content_hash: ContentHash,
        bytes: Bytes,
    ) {
        if !self.fits(bytes.len() as u64) {
            return;
        }
        let (evicted, generation) = {
            let mut levels = self.levels.lock().expect("tail cache lock");
            if ticket.is_some_and(|ticket| ticket.generation != levels.generation) {
                return;
            }
            let weight_bytes = bytes.len() as u64 + ENTRY_OVERHEAD_BYTES;
            let entry = RamEntry {
                bytes,
                content_hash,
            };
            let Ok(evicted) = levels.ram.insert(location, entry, weight_bytes) else {
                return;
            };
            levels.stats.insertions += 1;
            levels.stats.ram_evictions += evicted.len() as u64;
            (evicted, levels.generation)
        };
        self.spill(evicted, generation).await;
    }

    /// Writes what RAM evicted to the flash directory (when there is one): an entry already
    /// there is only made the most recently used there.
    async fn spill(&self, evicted: Vec<(Location, RamEntry)>, generation: u64) {
        let Some(flash_dir) = &self.flash_dir else {
            return;
        };
        for (location, entry) in evicted {
            let file_bytes = entry_file_bytes(entry.bytes.len() as u64);
            {
                let mut levels = self.levels.lock().expect("tail cache lock");
                let flash = levels.flash.as_mut().expect("a flash dir has a level");
                if flash.get(&location).is_some() || file_bytes > self.config.dir_bytes() {
                    continue;
                }
            }
            let number = self.next_temporary.fetch_add(1, Ordering::Relaxed);
            let dir = flash_dir.path.clone();
            let written = tokio::task::spawn_blocking(move || {
                let temporary = dir.join(format!("{number}{TEMPORARY_SUFFIX}"));
                let contents = entry_file(location, &entry.content_hash, &entry.bytes);
                let result = std::fs::write(&temporary, contents)
                    .and_then(|()| std::fs::rename(&temporary, dir.join(entry_name(location))));
                if result.is_err() {
                    let _ = std::fs::remove_file(&temporary);
                }
                result.map(|()| entry)
            })
            .await;
            let entry = match written {
                Ok(Ok(entry)) => entry,
                Ok(Err(error)) => {
                    tracing::warn!(dir = %flash_dir.path.display(), %error, "writing a tail cache file");
                    continue;
                }
                Err(error) => {
                    tracing::warn!(%error, "the tail cache's file writer failed");
                    continue;
                }
            };
            let mut levels = self.levels.lock().expect("tail cache lock");
            if levels.generation != generation {
                // A segment was freed while the file was written: it may be this entry's.
                drop(levels);
                remove_entry_files(&flash_dir.path, &[location]);
                continue;
            }
            let flash_entry = FlashEntry {
                size_bytes: entry.bytes.len() as u64,
                content_hash: entry.content_hash,
            };
            let flash = levels.flash.as_mut().expect("a flash dir has a level");
            let Ok(gone) = flash.insert(location, flash_entry, file_bytes) else {
                continue;
            };
            levels.stats.flash_writes += 1;
            levels.stats.flash_evictions += gone.len() as u64;
            drop(levels);
            let gone: Vec<Location> = gone.into_iter().map(|(location, _)| location).collect();
            remove_entry_files(&flash_dir.path, &gone);
        }
    }

    /// The whole payload of the record at `location` if the cache has it and it is the one
    /// the catalog describes (`size_bytes`, `content_hash`); `verify` also hashes the bytes
    /// and refuses them unless they give `content_hash`. `served_bytes` (the range the GET
    /// will return) is counted on a hit. A lookup while the cache is off counts nothing.
    pub async fn lookup(
        &self,
        location: Location,
        size_bytes: u64,
        content_hash: &ContentHash,
        served_bytes: u64,
        verify: bool,
    ) -> Option<Hit> {
        if !self.enabled() {
            return None;
        }
        let ram = {
            let mut levels = self.levels.lock().expect("tail cache lock");
            let found = levels.ram.get(&location).map(|entry| {
                let same =
                    entry.bytes.len() as u64 == size_bytes && entry.content_hash == *content_hash;
                same.then(|| entry.bytes.clone())
            });
            match found {
                Some(Some(bytes)) => Some(bytes),
                Some(None) => {
                    // Another record at a reused location: never this object's bytes.
                    levels.ram.remove(&location);
                    None
                }
                None => None,
            }
        };
        if let Some(bytes) = ram {
            if verify && !self.verified(location, &bytes, content_hash) {
                return self.missed();
            }
            self.count_hit(Level::Ram, served_bytes);
            return Some(Hit {
                bytes,
                level: Level::Ram,
            });
        }
        // Taken before the file is read: a drop of its segment meanwhile abandons the copy.
        let ticket = self.ticket();
        let Some(bytes) = self.read_flash(location, size_bytes, content_hash).await else {
            return self.missed();
        };
        if verify && !self.verified(location, &bytes, content_hash) {
            return self.missed();
        }
        self.count_hit(Level::Flash, served_bytes);
        // Back into RAM: a hot object is read from memory from now on. Its file stays, so
        // evicting it again costs no write.
        self.fill(ticket, location, *content_hash, bytes.clone())
            .await;
        Some(Hit {
            bytes,
            level: Level::Flash,
        })
    }

    fn count_hit(&self, level: Level, served_bytes: u64) {
        let mut levels = self.levels.lock().expect("tail cache lock");
        match level {
            Level::Ram => levels.stats.ram_hits += 1,
            Level::Flash => levels.stats.flash_hits += 1,
        }
        levels.stats.served_bytes += served_bytes;
    }

    fn missed(&self) -> Option<Hit> {
        self.levels.lock().expect("tail cache lock").stats.misses += 1;
        None
    }

    /// Whether `bytes` hash to `content_hash`; if not, the entry goes from both levels.
    fn verified(&self, location: Location, bytes: &[u8], content_hash: &ContentHash) -> bool {
        if blake3::hash(bytes).as_bytes() == content_hash {
            return true;
        }
        tracing::warn!(
            segment = location.0,
            offset = location.1,
            "a tail cache entry does not hash to its record's BLAKE3: dropped"
        );
        self.forget(location, |stats| stats.verify_failures += 1);
        false
    }

    /// Drops `location` from both levels (and its file), counting why in the stats.
    fn forget(&self, location: Location, count: impl FnOnce(&mut TailCacheStats)) {
        let had_file = {
            let mut levels = self.levels.lock().expect("tail cache lock");
            count(&mut levels.stats);
            levels.ram.remove(&location);
            levels
                .flash
                .as_mut()
                .and_then(|flash| flash.remove(&location))
                .is_some()
        };
        if let (true, Some(flash_dir)) = (had_file, &self.flash_dir) {
            remove_entry_files(&flash_dir.path, &[location]);
        }
    }

    /// The payload of the flash entry at `location`, if there is one describing this record
    /// and its file checks out; a damaged or missing file is dropped and counted.
    async fn read_flash(
        &self,
        location: Location,
        size_bytes: u64,
        content_hash: &ContentHash,
    ) -> Option<Bytes> {
        let flash_dir = self.flash_dir.as_ref()?;
        let expected = {
            let mut levels = self.levels.lock().expect("tail cache lock");
            let flash = levels.flash.as_mut()?;
            let entry = *flash.get(&location)?;
            if entry.size_bytes != size_bytes || entry.content_hash != *content_hash {
                drop(levels);
                self.forget(location, |_| {});
                return None;
            }
            entry
        };
        let path = flash_dir.path.join(entry_name(location));
        let read_path = path.clone();
        let read = tokio::task::spawn_blocking(move || std::fs::read(&read_path)).await;
        let checked = match read {
            Ok(Ok(file)) => parse_entry_file(file, location, &expected),
            Ok(Err(error)) => Err(error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match checked {
            Ok(bytes) => Some(bytes),
            Err(problem) => {
                tracing::warn!(path = %path.display(), %problem, "a damaged tail cache file: a miss");
                self.forget(location, |stats| stats.flash_damaged += 1);
                None
            }
        }
    }

    /// Drops every entry of `segment` (the staging log freed it, or found it gone), and
    /// abandons insertions prepared before (see the module invariants).
    pub fn drop_segment(&self, segment: SegmentId) {
        let files: Vec<Location> = {
            let mut levels = self.levels.lock().expect("tail cache lock");
            levels.generation += 1;
            let ram = levels.ram.remove_segment(segment).len() as u64;
            let flash = levels
                .flash
                .as_mut()
                .map(|flash| flash.remove_segment(segment))
                .unwrap_or_default();
            levels.stats.segment_drops += ram + flash.len() as u64;
            flash.into_iter().map(|(location, _)| location).collect()
        };
        if let Some(flash_dir) = &self.flash_dir {
            remove_entry_files(&flash_dir.path, &files);
        }
    }

    /// The keys in RAM, least recently used first (for tests and tools).
    pub fn ram_keys(&self) -> Vec<Location> {
        self.levels
            .lock()
            .expect("tail cache lock")
            .ram
            .keys_by_recency()
    }

    /// The keys in the flash directory, least recently used first.
    pub fn flash_keys(&self) -> Vec<Location> {
        let levels = self.levels.lock().expect("tail cache lock");
        levels
            .flash
            .as_ref()
            .map(Lru::keys_by_recency)
            .unwrap_or_default()
    }

    /// The file holding `location`'s flash entry (whether or not it exists).
    pub fn flash_file(&self, location: Location) -> Option<PathBuf> {
        self.flash_dir
            .as_ref()
            .map(|flash_dir| flash_dir.path.join(entry_name(location)))
    }
}

/// A PUT body being read, and a copy of it while it stays within the cache's
/// `max_object_bytes` ([`TailCache::capture`]).
pub struct Capture<R> {
    inner: R,
    limit_bytes: u64,
    /// `None` once over the limit (or with the cache off).
    bytes: Option<Vec<u8>>,
}

impl<R> Capture<R> {
    /// The whole body read, if it was at most `max_object_bytes`.
    pub fn into_bytes(self) -> Option<Bytes> {
        self.bytes.map(Bytes::from)
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Capture<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let (Poll::Ready(Ok(())), Some(bytes)) = (&polled, &mut this.bytes) {
            let new = &buf.filled()[before..];
            if (bytes.len() + new.len()) as u64 > this.limit_bytes {
                this.bytes = None; // too large to cache: stop copying
            } else {
                bytes.extend_from_slice(new);
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn location(segment: u64, offset: u64) -> Location {
        (segment, offset)
    }

    #[test]
    fn an_lru_evicts_the_least_recently_used_first_and_a_get_makes_an_entry_recent() {
        let mut lru = Lru::new(30);
        assert!(lru.insert(location(1, 0), "a", 10).unwrap().is_empty());
        assert!(lru.insert(location(1, 10), "b", 10).unwrap().is_empty());
        assert!(lru.insert(location(2, 0), "c", 10).unwrap().is_empty());
        assert_eq!(lru.get(&location(1, 0)), Some(&"a"));
        let evicted = lru.insert(location(3, 0), "d", 15).unwrap();
        assert_eq!(evicted, vec![(location(1, 10), "b"), (location(2, 0), "c")]);
        assert_eq!(lru.keys_by_recency(), vec![location(1, 0), location(3, 0)]);
        assert_eq!(lru.used_bytes(), 25);
    }

    #[test]
    fn an_lru_refuses_a_value_heavier_than_its_bound_and_keeps_what_it_has() {
        let mut lru = Lru::new(10);
        lru.insert(location(1, 0), 1, 5).unwrap();
        assert_eq!(lru.insert(location(1, 5), 2, 11), Err(2));
        assert_eq!(lru.keys_by_recency(), vec![location(1, 0)]);
    }

    #[test]
    fn an_lru_drops_every_entry_of_a_segment_and_no_other() {
        let mut lru = Lru::new(100);
        for (segment, offset) in [(1, 0), (2, 0), (2, 40), (2, u64::MAX), (3, 0)] {
            lru.insert(location(segment, offset), (), 1).unwrap();
        }
        let dropped: Vec<Location> = lru.remove_segment(2).into_iter().map(|(k, _)| k).collect();
        assert_eq!(dropped, vec![(2, 0), (2, 40), (2, u64::MAX)]);
        assert_eq!(lru.keys_by_recency(), vec![(1, 0), (3, 0)]);
        assert_eq!(lru.used_bytes(), 2);
    }

    #[derive(Clone, Debug)]
    enum Operation {
        Insert { key: Location, weight_bytes: u64 },
        Get { key: Location },
        Remove { key: Location },
        RemoveSegment { segment: SegmentId },
    }

    fn operation() -> impl Strategy<Value = Operation> {
        let key = (0u64..4, 0u64..4);
        prop_oneof![
            4 => (key.clone(), 0u64..40).prop_map(|(key, weight_bytes)| Operation::Insert { key, weight_bytes }),
            3 => key.clone().prop_map(|key| Operation::Get { key }),
            1 => key.prop_map(|key| Operation::Remove { key }),
            1 => (0u64..4).prop_map(|segment| Operation::RemoveSegment { segment }),
        ]
    }

    proptest! {
        /// The LRU against the plainest model: a list in recency order, oldest first, cut from
        /// the front until the weights fit.
        #[test]
        fn an_lru_behaves_as_a_list_in_recency_order_and_never_exceeds_its_bound(
            limit_bytes in 0u64..100,
            operations in proptest::collection::vec(operation(), 0..200),
        ) {
            let mut lru = Lru::new(limit_bytes);
            let mut model: Vec<(Location, u64)> = Vec::new();
            for operation in operations {
                match operation {
                    Operation::Insert { key, weight_bytes } => {
                        let inserted = lru.insert(key, weight_bytes, weight_bytes);
                        if weight_bytes > limit_bytes {
                            prop_assert!(inserted.is_err());
                            continue;
                        }
                        model.retain(|(k, _)| *k != key);
                        let mut expected = Vec::new();
                        while model.iter().map(|(_, w)| w).sum::<u64>() + weight_bytes > limit_bytes {
                            expected.push(model.remove(0));
                        }
                        model.push((key, weight_bytes));
                        prop_assert_eq!(inserted.unwrap(), expected);
                    }
                    Operation::Get { key } => {
                        let found = lru.get(&key).copied();
                        let at = model.iter().position(|(k, _)| *k == key);
                        prop_assert_eq!(found, at.map(|at| model[at].1));
                        if let Some(at) = at {
                            let entry = model.remove(at);
                            model.push(entry);
                        }
                    }
                    Operation::Remove { key } => {
                        let removed = lru.remove(&key);
                        let at = model.iter().position(|(k, _)| *k == key);
                        prop_assert_eq!(removed, at.map(|at| model.remove(at).1));
                    }
                    Operation::RemoveSegment { segment } => {
                        let mut removed: Vec<Location> =
                            lru.remove_segment(segment).into_iter().map(|(k, _)| k).collect();
                        removed.sort();
                        let mut expected: Vec<Location> =
                            model.iter().map(|(k, _)| *k).filter(|k| k.0 == segment).collect();
                        expected.sort();
                        model.retain(|(k, _)| k.0 != segment);
                        prop_assert_eq!(removed, expected);
                    }
                }
                prop_assert!(lru.used_bytes() <= limit_bytes);
                prop_assert_eq!(lru.used_bytes(), model.iter().map(|(_, w)| w).sum::<u64>());
                prop_assert_eq!(lru.keys_by_recency(), model.iter().map(|(k, _)| *k).collect::<Vec<_>>());
            }
        }
    }

    fn config(ram_bytes: u64) -> TailCacheConfig {
        TailCacheConfig {
            ram_bytes,
            max_object_bytes: Some(ram_bytes),
            ..TailCacheConfig::default()
        }
    }

    fn hash(bytes: &[u8]) -> ContentHash {
        *blake3::hash(bytes).as_bytes()
    }

    async fn put(cache: &TailCache, location: Location, bytes: &[u8]) {
        cache
            .insert(location, hash(bytes), Bytes::copy_from_slice(bytes))
            .await;
    }

    async fn get(cache: &TailCache, location: Location, bytes: &[u8]) -> Option<Hit> {
        cache
            .lookup(
                location,
                bytes.len() as u64,
                &hash(bytes),
                bytes.len() as u64,
                true,
            )
            .await
    }

    #[tokio::test]
    async fn ram_never_holds_more_than_ram_bytes_counting_each_entry_overhead() {
        let object = [7u8; 100];
        let per_entry = 100 + ENTRY_OVERHEAD_BYTES;
        let cache = TailCache::with_flash(config(3 * per_entry), None);
        for offset in 0..10 {
            put(&cache, location(1, offset), &object).await;
            assert!(cache.stats().ram_used_bytes <= 3 * per_entry);
        }
        let stats = cache.stats();
        assert_eq!(stats.ram_entries, 3);
        assert_eq!(stats.insertions, 10);
        assert_eq!(stats.ram_evictions, 7);
        assert_eq!(
            cache.ram_keys(),
            vec![location(1, 7), location(1, 8), location(1, 9)]
        );
    }

    #[tokio::test]
    async fn an_object_above_max_object_bytes_is_not_cached() {
        let cache = TailCache::with_flash(
            TailCacheConfig {
                ram_bytes: 1 << 20,
                max_object_bytes: Some(10),
                ..TailCacheConfig::default()
            },
            None,
        );
        put(&cache, location(1, 0), &[1u8; 11]).await;
        put(&cache, location(1, 64), &[1u8; 10]).await;
        assert_eq!(cache.ram_keys(), vec![location(1, 64)]);
        let mut capture = cache.capture(&[5u8; 11][..]);
        let mut sink = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut capture, &mut sink)
            .await
            .unwrap();
        assert_eq!(sink, [5u8; 11]);
        assert!(capture.into_bytes().is_none());
    }

    #[tokio::test]
    async fn a_lookup_of_another_record_at_the_same_location_is_a_miss() {
        let cache = TailCache::with_flash(config(1 << 20), None);
        put(&cache, location(1, 32), b"old bytes").await;
        assert!(get(&cache, location(1, 32), b"new bytes").await.is_none());
        assert!(get(&cache, location(1, 32), b"old bytes").await.is_none());
        assert_eq!(cache.stats().misses, 2);
    }

    #[tokio::test]
    async fn a_fill_prepared_before_a_segment_was_dropped_is_abandoned() {
        let cache = TailCache::with_flash(config(1 << 20), None);
        let ticket = cache.ticket();
        cache.drop_segment(1);
        cache
            .fill(
                ticket,
                location(1, 32),
                hash(b"x"),
                Bytes::from_static(b"x"),
            )
            .await;
        assert!(cache.ram_keys().is_empty());
        let ticket = cache.ticket();
        cache
            .fill(
                ticket,
                location(1, 32),
                hash(b"x"),
                Bytes::from_static(b"x"),
            )
            .await;
        assert_eq!(cache.ram_keys(), vec![location(1, 32)]);
    }

    fn flash_cache(dir: &Path, ram_entries: u64, dir_entries: u64) -> TailCache {
        let per_entry = 100 + ENTRY_OVERHEAD_BYTES;
        TailCache::open(
            &TailCacheConfig {
                ram_bytes: ram_entries * per_entry,
                max_object_bytes: Some(100),
                fill_on_read: true,
                dir: Some(dir.to_path_buf()),
                dir_bytes: Some(dir_entries * entry_file_bytes(100)),
            },
            Path::new("/"),
        )
    }

    fn object(n: u8) -> [u8; 100] {
        [n; 100]
    }

    #[tokio::test]
    async fn what_ram_evicts_is_served_from_the_flash_directory_within_dir_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = flash_cache(dir.path(), 1, 2);
        assert!(cache.has_flash());
        for n in 0..4u8 {
            put(&cache, location(1, u64::from(n)), &object(n)).await;
        }
        // RAM holds 3; flash 1 and 2 (0 was evicted from flash by 2).
        assert_eq!(cache.ram_keys(), vec![location(1, 3)]);
        assert_eq!(cache.flash_keys(), vec![location(1, 1), location(1, 2)]);
        assert!(!cache.flash_file(location(1, 0)).unwrap().exists());
        let stats = cache.stats();
        assert!(stats.flash_used_bytes <= 2 * entry_file_bytes(100));
        assert_eq!(stats.flash_writes, 3);
        assert_eq!(stats.flash_evictions, 1);
        let hit = get(&cache, location(1, 1), &object(1)).await.unwrap();
        assert_eq!(hit.level, Level::Flash);
        assert_eq!(hit.bytes, object(1)[..]);
        // Now in RAM again; its file stayed, so RAM's eviction of 3 wrote only 3's file.
        assert_eq!(
            get(&cache, location(1, 1), &object(1)).await.unwrap().level,
            Level::Ram
        );
        assert!(get(&cache, location(1, 0), &object(0)).await.is_none());
        let stats = cache.stats();
        assert_eq!((stats.ram_hits, stats.flash_hits, stats.misses), (1, 1, 1));
    }

    #[tokio::test]
    async fn a_damaged_flash_file_is_a_miss_never_wrong_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = flash_cache(dir.path(), 1, 4);
        put(&cache, location(1, 0), &object(1)).await;
        put(&cache, location(1, 1), &object(2)).await;
        put(&cache, location(1, 2), &object(3)).await;
        let first = cache.flash_file(location(1, 0)).unwrap();
        let mut file = std::fs::read(&first).unwrap();
        file[ENTRY_HEADER_BYTES + 50] ^= 1;
        std::fs::write(&first, file).unwrap();
        std::fs::remove_file(cache.flash_file(location(1, 1)).unwrap()).unwrap();
        assert!(get(&cache, location(1, 0), &object(1)).await.is_none());
        assert!(get(&cache, location(1, 1), &object(2)).await.is_none());
        let stats = cache.stats();
        assert_eq!(stats.flash_damaged, 2);
        assert_eq!(stats.misses, 2);
        assert_eq!(stats.flash_hits, 0);
        assert!(!first.exists());
        assert!(cache.flash_keys().is_empty());
    }

    #[tokio::test]
    async fn dropping_a_segment_drops_its_entries_and_files_from_both_levels() {
        let dir = tempfile::tempdir().unwrap();
        let cache = flash_cache(dir.path(), 2, 4);
        put(&cache, location(1, 0), &object(1)).await;
        put(&cache, location(2, 0), &object(2)).await;
        put(&cache, location(1, 100), &object(3)).await;
        put(&cache, location(3, 0), &object(4)).await;
        assert_eq!(cache.flash_keys(), vec![location(1, 0), location(2, 0)]);
        cache.drop_segment(1);
        assert_eq!(cache.ram_keys(), vec![location(3, 0)]);
        assert_eq!(cache.flash_keys(), vec![location(2, 0)]);
        assert!(!cache.flash_file(location(1, 0)).unwrap().exists());
        assert_eq!(cache.stats().segment_drops, 2);
    }

    #[tokio::test]
    async fn opening_wipes_the_entries_a_previous_run_left_and_a_second_user_gets_ram_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("0000000000000001-0000000000000000.entry"),
            b"x",
        )
        .unwrap();
        std::fs::write(dir.path().join("7.tmp"), b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"kept").unwrap();
        let cache = flash_cache(dir.path(), 1, 4);
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, vec!["LOCK", "notes.txt"]);
        assert!(cache.has_flash());
        let second = flash_cache(dir.path(), 1, 4);
        assert!(!second.has_flash());
        assert!(second.enabled());
    }

    #[test]
    fn the_settings_are_checked_naming_the_field() {
        assert!(TailCacheConfig::default().check().is_ok());
        assert!(TailCacheConfig::disabled().check().is_ok());
        let with = |f: fn(&mut TailCacheConfig)| {
            let mut config = TailCacheConfig::default();
            f(&mut config);
            config.check().unwrap_err()
        };
        assert!(
            with(|c| c.max_object_bytes = Some(c.ram_bytes + 1))
                .contains("tail_cache.max_object_bytes")
        );
        assert!(
            with(|c| {
                c.ram_bytes = 0;
                c.dir = Some("cache".into());
            })
            .contains("tail_cache.dir")
        );
        assert!(
            with(|c| {
                c.dir = Some("cache".into());
                c.dir_bytes = Some(0);
            })
            .contains("tail_cache.dir_bytes")
        );
        assert!(with(|c| c.dir_bytes = Some(5)).contains("tail_cache.dir_bytes"));
        assert_eq!(TailCacheConfig::default().max_object_bytes(), 4 << 20);
        assert_eq!(
            TailCacheConfig {
                ram_bytes: 16 << 20,
                ..TailCacheConfig::default()
            }
            .max_object_bytes(),
            1 << 20
        );
    }
}
