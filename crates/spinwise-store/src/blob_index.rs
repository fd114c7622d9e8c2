//! Blob object indexes (`DATA/blob-index/blob-<16 hex>.index`, format in
//! docs/stripe-format.md, "Blob object index"): which objects (key, offset, size, BLAKE3) a
//! blob's data holds, written when the blob is made, so `spinwise store recover` can rebuild a
//! lost catalog's migrated objects. The stripe stacks name a blob's id, code, size and hash but
//! not the objects packed into it; this file is the rest.
//!
//! Invariants:
//! - an index is written whole (temporary file, fsync, rename, directory fsync) before its
//!   blob's commit, so every committed blob made since this format exists has one;
//! - an index names its blob's id, size and content hash, and recovery uses it only for a blob
//!   whose stack headers agree, so a stale index (a blob abandoned or removed) describes nothing;
//! - a reader never trusts the file: its length is bounded ([`MAX_INDEX_BYTES`]), every field is
//!   checked and a crc32c covers it all; a bad index is an error value, never a panic;
//! - version 2 gives each entry its object's *origin*, the staging-log place its PUT first wrote
//!   it (`crate::staging`, "moved records"), so recovery ranks a migrated version against staged
//!   ones by when each was written, not by tier; version 3 adds the time its PUT began (the
//!   record's stamp), which ranks before the place; versions 1 (no origins) and 2 (origins
//!   without stamps) are still read.

use crate::durable::HostFiles;
use spinwise_catalog::{BlobId, ContentHash, SegmentId};
use spinwise_ec::checksum::crc32c;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The directory of blob indexes in the data directory (on the always-on disk).
pub const INDEX_DIR: &str = "blob-index";
/// The first 8 bytes of every index file.
pub const INDEX_MAGIC: [u8; 8] = *b"SWBLBIDX";
/// The version written: 3, entries with stamped origins. Versions 1 (entries without origins)
/// and 2 (origins without stamps) are still read.
pub const INDEX_VERSION: u32 = 3;
/// The oldest version read.
const FIRST_READ_VERSION: u32 = 1;
/// Bytes of an entry's origin (segment id u64, offset u64), version 2 on.
const ORIGIN_BYTES: usize = 16;
/// Bytes of an entry's stamp (µs since 1970 u64), version 3 on.
const STAMP_BYTES: usize = 8;
/// The origin field's value for an object whose origin is not known (copied by compaction out
/// of a blob whose index had none).
const UNKNOWN_ORIGIN: (u64, u64) = (u64::MAX, u64::MAX);
/// The stamp field's value when the stamp is not known (no origin, or a record from before
/// stamps).
const UNKNOWN_STAMP: u64 = u64::MAX;
/// Bytes before the first entry.
const PREAMBLE_BYTES: usize = 64;
/// Bytes of an entry besides its key.
const ENTRY_FIXED_BYTES: usize = 4 + 8 + 8 + 32 + ORIGIN_BYTES + STAMP_BYTES;
/// The longest key an entry may carry (the staging log's limit).
pub const MAX_KEY_BYTES: usize = 1088;
/// The largest index file read: a flush round's most objects (16,384) with the longest keys
/// take about 19.0 MB (18.7 MB in version 1).
pub const MAX_INDEX_BYTES: u64 = 64 << 20;

/// When and where a PUT wrote an object, which a lost catalog's recovery ranks its versions
/// by (docs/store.md, "Recovering a lost catalog"): ordered by the time first, then the place,
/// so a version with a stamp outranks one without (written by a binary from before stamps,
/// so before it), and versions with equal or no stamps rank by place as before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    /// When the PUT began, µs since 1970 on the writing store's clock (the record's stamp;
    /// `None` for records written before stamps, 2026-11-30).
    pub written_unix_us: Option<u64>,
    /// The staging segment and offset of the record the PUT wrote.
    pub segment: SegmentId,
    pub offset: u64,
}

impl Origin {
    /// The place of a record with no stamp.
    pub fn unstamped((segment, offset): (SegmentId, u64)) -> Origin {
        Origin {
            written_unix_us: None,
            segment,
            offset,
        }
    }

    /// The place (segment, offset), without the stamp.
    pub fn place(&self) -> (SegmentId, u64) {
        (self.segment, self.offset)
    }
}

/// One object in a blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub key: String,
    /// Where the object's bytes start in the blob's data.
    pub offset: u64,
    pub size_bytes: u64,
    pub content_hash: ContentHash,
    /// When and where its PUT first wrote it in the staging log: the origin of the record it
    /// was migrated from (that record's stamp and place, or its original's if the warm
    /// collector had moved it); carried over by compaction. `None` when not known (a version 1
    /// index, or compacted out of one); without a stamp from a version 2 index.
    pub origin: Option<Origin>,
}

/// A blob's object index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobIndex {
    pub blob: BlobId,
    pub blob_bytes: u64,
    pub blob_hash: ContentHash,
    /// In the order the blob was packed (offset order).
    pub entries: Vec<IndexEntry>,
}

/// The path of `blob`'s index under `data_dir`.
pub fn index_path(data_dir: &Path, blob: BlobId) -> PathBuf {
    data_dir
        .join(INDEX_DIR)
        .join(format!("blob-{blob:016x}.index"))
}

impl BlobIndex {
    /// The file's bytes (docs/stripe-format.md, "Blob object index").
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes =
            Vec::with_capacity(PREAMBLE_BYTES + self.entries.len() * (ENTRY_FIXED_BYTES + 16));
        bytes.extend_from_slice(&INDEX_MAGIC);
        bytes.extend_from_slice(&INDEX_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&self.blob.to_le_bytes());
        bytes.extend_from_slice(&self.blob_bytes.to_le_bytes());
        bytes.extend_from_slice(&self.blob_hash);
        for entry in &self.entries {
            bytes.extend_from_slice(&(entry.key.len() as u32).to_le_bytes());
            bytes.extend_from_slice(entry.key.as_bytes());
            bytes.extend_from_slice(&entry.offset.to_le_bytes());
            bytes.extend_from_slice(&entry.size_bytes.to_le_bytes());
            bytes.extend_from_slice(&entry.content_hash);
            let (segment, offset) = entry.origin.map_or(UNKNOWN_ORIGIN, |o| o.place());
            let stamp = (entry.origin).and_then(|o| o.written_unix_us);
            bytes.extend_from_slice(&segment.to_le_bytes());
            bytes.extend_from_slice(&offset.to_le_bytes());
            bytes.extend_from_slice(&stamp.unwrap_or(UNKNOWN_STAMP).to_le_bytes());
        }
        let crc = crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        bytes
    }

    /// Parses an index file's bytes, or says why they are not one.
    pub fn decode(bytes: &[u8]) -> Result<BlobIndex, String> {
        let Some((body, crc)) = bytes.split_last_chunk::<4>() else {
            return Err("shorter than its crc".into());
        };
        if crc32c(body) != u32::from_le_bytes(*crc) {
            return Err("crc mismatch".into());
        }
        let mut cursor = Cursor { bytes: body };
        if cursor.take(8)? != INDEX_MAGIC {
            return Err("not a blob index (magic)".into());
        }
        let version = cursor.u32()?;
        if !(FIRST_READ_VERSION..=INDEX_VERSION).contains(&version) {
            return Err(format!("unsupported version {version}"));
        }
        let entry_count = cursor.u32()?;
        let mut index = BlobIndex {
            blob: cursor.u64()?,
            blob_bytes: cursor.u64()?,
            blob_hash: cursor.hash()?,
            entries: Vec::new(),
        };
        for _ in 0..entry_count {
            index.entries.push(cursor.entry(version)?);
        }
        if !cursor.bytes.is_empty() {
            return Err("bytes after the last entry".into());
        }
        index.check_offsets()?;
        Ok(index)
    }

    /// Every entry lies inside the blob.
    fn check_offsets(&self) -> Result<(), String> {
        for entry in &self.entries {
            let end = entry.offset.checked_add(entry.size_bytes);
            if end.is_none_or(|end| end > self.blob_bytes) {
                return Err(format!("`{}` lies outside the blob", entry.key));
            }
        }
        Ok(())
    }
}

/// A bounds-checked reader over an index's bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], String> {
        if self.bytes.len() < count {
            return Err("truncated".into());
        }
        let (taken, rest) = self.bytes.split_at(count);
        self.bytes = rest;
        Ok(taken)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn hash(&mut self) -> Result<ContentHash, String> {
        Ok(self.take(32)?.try_into().expect("32 bytes"))
    }
    fn entry(&mut self, version: u32) -> Result<IndexEntry, String> {
        let key_bytes = self.u32()? as usize;
        if key_bytes == 0 || key_bytes > MAX_KEY_BYTES {
            return Err(format!("key length {key_bytes} out of range"));
        }
        let key = std::str::from_utf8(self.take(key_bytes)?)
            .map_err(|_| "a key is not UTF-8".to_string())?
            .to_string();
        let (offset, size_bytes, content_hash) = (self.u64()?, self.u64()?, self.hash()?);
        let place = if version >= 2 {
            Some((self.u64()?, self.u64()?)).filter(|&place| place != UNKNOWN_ORIGIN)
        } else {
            None
        };
        let stamp = if version >= 3 {
            Some(self.u64()?).filter(|&stamp| stamp != UNKNOWN_STAMP)
        } else {
            None
        };
        let origin = place.map(|(segment, offset)| Origin {
            written_unix_us: stamp,
            segment,
            offset,
        });
        Ok(IndexEntry {
            key,
            offset,
            size_bytes,
            content_hash,
            origin,
        })
    }
}

/// Writes `index` durably under `data_dir` (temporary file, fsync, rename, directory fsync), so
/// a crash leaves either the whole index or none.
pub fn write_index(data_dir: &Path, index: &BlobIndex, host: &HostFiles) -> std::io::Result<()> {
    let directory = data_dir.join(INDEX_DIR);
    // fsync-site: blob-index-directory-created
    host.create_directory("blob-index-directory-created", &directory)?;
    let path = index_path(data_dir, index.blob);
    let temporary = directory.join(format!(".tmp-blob-{:016x}.index", index.blob));
    let mut file = std::fs::File::create(&temporary)?;
    host.created(&temporary);
    file.write_all(&index.encode())?;
    // fsync-site: blob-index-file
    host.sync_file("blob-index-file", &file, &temporary)?;
    host.rename(&temporary, &path)?;
    // fsync-site: blob-index-renamed
    host.sync_directory("blob-index-renamed", &directory)?;
    Ok(())
}

/// Removes `blob`'s index if there is one (its blob is gone); an index left behind is harmless
/// (recovery ignores an index whose blob has no stacks).
pub fn remove_index(data_dir: &Path, blob: BlobId, host: &HostFiles) {
    let path = index_path(data_dir, blob);
    if let Err(error) = host.remove_file(&path)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(%error, path = %path.display(), "removing a blob index");
    }
}

/// Reads and parses the index file at `path`, bounded by [`MAX_INDEX_BYTES`].
pub fn read_index(path: &Path) -> Result<BlobIndex, String> {
    let file = std::fs::File::open(path).map_err(|error| error.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_INDEX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| error.to_string())?;
    if bytes.len() as u64 > MAX_INDEX_BYTES {
        return Err(format!("longer than {MAX_INDEX_BYTES} bytes"));
    }
    BlobIndex::decode(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BlobIndex {
        BlobIndex {
            blob: 0x2a,
            blob_bytes: 10,
            blob_hash: [7; 32],
            entries: vec![
                IndexEntry {
                    key: "a/b".into(),
                    offset: 0,
                    size_bytes: 4,
                    content_hash: [1; 32],
                    origin: Some(Origin {
                        written_unix_us: Some(1_764_486_000_123_456),
                        segment: 3,
                        offset: 128,
                    }),
                },
                IndexEntry {
                    key: "d".into(),
                    offset: 4,
                    size_bytes: 0,
                    content_hash: [3; 32],
                    origin: Some(Origin::unstamped((2, 32))),
                },
                IndexEntry {
                    key: "c".into(),
                    offset: 4,
                    size_bytes: 6,
                    content_hash: [2; 32],
                    origin: None,
                },
            ],
        }
    }

    #[test]
    fn an_index_decodes_to_what_was_encoded() {
        assert_eq!(BlobIndex::decode(&sample().encode()), Ok(sample()));
    }

    #[test]
    fn any_flipped_or_missing_byte_is_refused_without_panicking() {
        let bytes = sample().encode();
        for position in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[position] ^= 0x10;
            assert!(BlobIndex::decode(&flipped).is_err(), "byte {position}");
            assert!(BlobIndex::decode(&bytes[..position]).is_err());
        }
    }

    /// `index` as an older `version` wrote it: each entry without the last `dropped_bytes` of
    /// its fields (version 2: the stamp; version 1: origin and stamp).
    fn encode_as(index: &BlobIndex, version: u32, dropped_bytes: usize) -> Vec<u8> {
        let mut bytes = index.encode();
        bytes.truncate(bytes.len() - 4);
        bytes[8..12].copy_from_slice(&version.to_le_bytes());
        let mut older = bytes[..PREAMBLE_BYTES].to_vec();
        let mut at = PREAMBLE_BYTES;
        for entry in &index.entries {
            let kept = ENTRY_FIXED_BYTES - dropped_bytes + entry.key.len();
            older.extend_from_slice(&bytes[at..at + kept]);
            at += kept + dropped_bytes;
        }
        let crc = crc32c(&older);
        older.extend_from_slice(&crc.to_le_bytes());
        older
    }

    #[test]
    fn a_version_1_index_is_read_with_every_origin_unknown() {
        let mut expected = sample();
        for entry in &mut expected.entries {
            entry.origin = None;
        }
        let version_1 = encode_as(&sample(), 1, ORIGIN_BYTES + STAMP_BYTES);
        assert_eq!(BlobIndex::decode(&version_1), Ok(expected));
    }

    #[test]
    fn a_version_2_index_is_read_with_origins_and_no_stamps() {
        let mut expected = sample();
        for entry in &mut expected.entries {
            entry.origin = entry.origin.map(|origin| Origin::unstamped(origin.place()));
        }
        let version_2 = encode_as(&sample(), 2, STAMP_BYTES);
        assert_eq!(BlobIndex::decode(&version_2), Ok(expected));
    }

    #[test]
    fn an_unknown_version_is_refused() {
        let mut bytes = sample().encode();
        bytes.truncate(bytes.len() - 4);
        bytes[8..12].copy_from_slice(&4u32.to_le_bytes());
        let crc = crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(
            BlobIndex::decode(&bytes),
            Err("unsupported version 4".to_string())
        );
    }

    #[test]
    fn an_entry_outside_its_blob_is_refused() {
        let mut index = sample();
        index.entries[1].size_bytes = 7;
        assert!(BlobIndex::decode(&index.encode()).is_err());
    }
}
