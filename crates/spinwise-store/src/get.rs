//! GET: an object's bytes, in bounded chunks, from wherever the catalog says it is: the tail
//! cache (a staged object written or read recently, crate::tail_cache), its staging segment
//! (read at once) or its blob (through the scheduler, crate::read). A GET whose object left
//! that place between the lookup and the open (a migration reclaimed its segment, compaction
//! removed its blob) looks it up again, at most [`GET_ATTEMPTS`] times.
//!
//! Invariants: GET memory is one staging chunk at a time (or the read pipeline's bounded queue),
//! plus, for a staged object read whole that the tail cache may keep, the object itself (at
//! most its `max_object_bytes`); every chunk read from a segment is checked against its crc32c
//! before it is returned, and a whole-object read with [`ContentCheck::WholeObject`] against
//! the BLAKE3 recorded at PUT before the end of the stream is reported — a tail cache hit too,
//! whose bytes are hashed before the first is returned (a mismatch is a miss: the segment is
//! read instead). A hit opens no segment.

use crate::error::{StoreError, StoreResult};
use crate::read::{MigratedReader, ReadTiming};
use crate::staging::{ContentCheck, StagedReader, StagingError};
use crate::store::{ReadPriority, Store};
use crate::tail_cache::{FillTicket, Location, TailCache};
use bytes::Bytes;
use spinwise_catalog::{Catalog, ObjectLocation, ObjectRecord};
use spinwise_ec::RepairReport;
use std::ops::Range;
use std::sync::Arc;

/// How often GET looks an object up again when its staging segment vanished between the catalog
/// lookup and opening the file (the object was deleted, overwritten or migrated meanwhile).
const GET_ATTEMPTS: u32 = 3;

impl<C: Catalog> Store<C> {
    /// A reader of the object's bytes (all, or `range`), in chunks of bounded size, each
    /// checked against its crc32c ([`ContentCheck::ChunksOnly`]).
    pub async fn get(&self, key: &str, range: Option<Range<u64>>) -> StoreResult<ObjectReader> {
        self.get_with(key, range, ContentCheck::ChunksOnly).await
    }

    /// [`Store::get`], choosing what is verified: [`ContentCheck::WholeObject`] also checks a
    /// whole-object read's BLAKE3 against the one recorded at PUT, before the end of the
    /// stream is reported (a mismatch is [`StoreError::ContentHashMismatch`] instead).
    pub async fn get_with(
        &self,
        key: &str,
        range: Option<Range<u64>>,
        check: ContentCheck,
    ) -> StoreResult<ObjectReader> {
        self.get_prioritized(key, range, check, ReadPriority::Standard)
            .await
    }

    /// [`Store::get_with`] at `priority`: an [`ReadPriority::Expedited`] read of a migrated
    /// object goes ahead of the scheduler's standard reads ([`Kind::Expedited`]). A staged
    /// object is read at once either way.
    pub async fn get_prioritized(
        &self,
        key: &str,
        range: Option<Range<u64>>,
        check: ContentCheck,
        priority: ReadPriority,
    ) -> StoreResult<ObjectReader> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let may_retry = attempt < GET_ATTEMPTS;
            let opened = self
                .open_reader(key, &range, check, priority, may_retry)
                .await?;
            if let Some(reader) = opened {
                return Ok(reader);
            }
        }
    }

    /// One try at opening `key`'s reader. `None` (only when `may_retry`) if the object left the
    /// place its record named between the lookup and the open: compaction moved it and removed
    /// its old blob, or a migration reclaimed its staging segment.
    async fn open_reader(
        &self,
        key: &str,
        range: &Option<Range<u64>>,
        check: ContentCheck,
        priority: ReadPriority,
        may_retry: bool,
    ) -> StoreResult<Option<ObjectReader>> {
        let record = self.stat(key).await?;
        let range = range.clone().unwrap_or(0..record.size_bytes);
        if range.start > range.end || range.end > record.size_bytes {
            return Err(StoreError::Range {
                key: key.into(),
                start: range.start,
                end: range.end,
                size_bytes: record.size_bytes,
            });
        }
        let (segment, offset) = match record.location {
            ObjectLocation::Staged { segment, offset } => (segment, offset),
            ObjectLocation::Migrated { blob, offset } => {
                let whole = check == ContentCheck::WholeObject
                    && range.start == 0
                    && range.end == record.size_bytes;
                let opened = self
                    .read_migrated(
                        &record,
                        (blob, offset),
                        range.clone(),
                        priority.kind(),
                        whole,
                    )
                    .await;
                let reader = match opened {
                    Err(_) if may_retry && self.moved(&record).await? => return Ok(None),
                    other => other?,
                };
                // The job hashes the object in subtrees on its column threads when it can
                // (crate::subtree_hash); otherwise this reader hashes what it returns.
                let hasher = (whole && !reader.hashes_whole()).then(blake3::Hasher::new);
                return Ok(Some(ObjectReader {
                    record,
                    range,
                    source: Source::Migrated(reader),
                    whole_hash: hasher,
                    fill: None,
                    _staging_request: None,
                }));
            }
        };
        let whole = range.start == 0 && range.end == record.size_bytes;
        let location = (segment, offset);
        let hit = self
            .tail_cache
            .lookup(
                location,
                record.size_bytes,
                &record.content_hash,
                range.end - range.start,
                check == ContentCheck::WholeObject && whole,
            )
            .await;
        if let Some(hit) = hit {
            let bytes = hit.bytes.slice(range.start as usize..range.end as usize);
            return Ok(Some(ObjectReader {
                record,
                range,
                source: Source::Cached {
                    rest: bytes,
                    chunk_bytes: self.staging.config().chunk_bytes as usize,
                },
                whole_hash: None, // checked by the lookup when asked for
                fill: None,
                _staging_request: None,
            }));
        }
        // Taken before the segment is opened: a freeing of it meanwhile abandons the fill.
        let fill =
            (whole && self.tail_cache.fill_on_read() && self.tail_cache.fits(record.size_bytes))
                .then(|| Fill {
                    cache: Arc::clone(&self.tail_cache),
                    ticket: self.tail_cache.ticket(),
                    location,
                    bytes: Vec::with_capacity(record.size_bytes as usize),
                });
        let request = self.staging_requests.start();
        let opened = self
            .staging
            .read(
                segment,
                offset,
                key,
                record.size_bytes,
                range.clone(),
                check,
            )
            .await;
        match opened {
            Ok(reader) => Ok(Some(ObjectReader {
                record,
                range,
                source: Source::Staged(Box::new(reader)),
                whole_hash: None, // the staging log checks its own trailer
                fill,
                _staging_request: Some(request),
            })),
            Err(StagingError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && may_retry =>
            {
                Ok(None)
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Whether `record`'s object is no longer where `record` says (moved, replaced or gone).
    async fn moved(&self, record: &ObjectRecord) -> StoreResult<bool> {
        let now = self.catalog.object(&record.key).await?;
        Ok(now.is_none_or(|now| now.location != record.location))
    }
}

/// Where a GET's bytes come from.
enum Source {
    /// The tail cache's copy of the range not returned yet, handed out in pieces of at most a
    /// staging chunk (the size every other source's consumer is used to).
    Cached {
        rest: Bytes,
        chunk_bytes: usize,
    },
    /// Boxed: a staged reader holds its chunk buffer inline, the migrated one a channel.
    Staged(Box<StagedReader>),
    Migrated(MigratedReader),
}

/// A whole staged object being read after a tail cache miss: its checked chunks are gathered
/// and given to the cache once the reader reports the end (every check passed).
struct Fill {
    cache: Arc<TailCache>,
    ticket: FillTicket,
    location: Location,
    bytes: Vec<u8>,
}

/// A GET in progress: the object's record and its bytes in the requested range.
pub struct ObjectReader {
    record: ObjectRecord,
    range: Range<u64>,
    source: Source,
    /// BLAKE3 of what a migrated whole-object read with [`ContentCheck::WholeObject`] has
    /// returned so far, checked against the record at the end; `None` as well when the read's
    /// job hashes the object in subtrees (`check_job_hash` checks its result).
    whole_hash: Option<blake3::Hasher>,
    /// The object's bytes for the tail cache (a whole staged read that missed it).
    fill: Option<Fill>,
    /// Counts a staged read among the requests the warm collector yields to, while it lasts.
    _staging_request: Option<crate::store::StagingRequest>,
}

impl ObjectReader {
    pub fn record(&self) -> &ObjectRecord {
        &self.record
    }
    /// Whether the bytes come from the tail cache (no segment was opened).
    pub fn from_tail_cache(&self) -> bool {
        matches!(self.source, Source::Cached { .. })
    }
    /// The byte range being read.
    pub fn range(&self) -> Range<u64> {
        self.range.clone()
    }
    /// The next verified piece of the range (at most one staging chunk, or the part of one
    /// stripe of a migrated object), or `None` at the end.
    pub async fn next_chunk(&mut self) -> StoreResult<Option<Bytes>> {
        let chunk = match &mut self.source {
            Source::Cached { rest, chunk_bytes } => {
                (!rest.is_empty()).then(|| rest.split_to((*chunk_bytes).min(rest.len())))
            }
            Source::Staged(reader) => reader.next_chunk().await?,
            Source::Migrated(reader) => reader.next_chunk().await?,
        };
        match &chunk {
            Some(bytes) => {
                if let Some(fill) = &mut self.fill {
                    fill.bytes.extend_from_slice(bytes);
                }
            }
            None => {
                if let Some(fill) = self.fill.take() {
                    let bytes = Bytes::from(fill.bytes);
                    if bytes.len() as u64 == self.record.size_bytes {
                        let hash = self.record.content_hash;
                        fill.cache
                            .fill(fill.ticket, fill.location, hash, bytes)
                            .await;
                    }
                }
            }
        }
        match (&chunk, &mut self.whole_hash) {
            (Some(bytes), Some(hasher)) => {
                hasher.update(bytes);
            }
            (None, Some(_)) => self.check_whole_hash()?,
            (None, None) => self.check_job_hash()?,
            (Some(_), None) => {}
        }
        Ok(chunk)
    }

    /// At the end of a migrated read whose job hashed the object in subtrees: the hash of
    /// what it handed on must be the record's (a read that handed on less or more has none).
    fn check_job_hash(&self) -> StoreResult<()> {
        let Source::Migrated(reader) = &self.source else {
            return Ok(());
        };
        if reader.hashes_whole() && reader.content_hash() != Some(self.record.content_hash) {
            return Err(StoreError::ContentHashMismatch {
                key: self.record.key.clone(),
            });
        }
        Ok(())
    }

    fn check_whole_hash(&mut self) -> StoreResult<()> {
        let hasher = self.whole_hash.take().expect("called with a hasher");
        if *hasher.finalize().as_bytes() != self.record.content_hash {
            return Err(StoreError::ContentHashMismatch {
                key: self.record.key.clone(),
            });
        }
        Ok(())
    }
    /// For a migrated object, once read to the end: where its time went (`None` for staged
    /// objects, which wait for nothing).
    pub fn timing(&self) -> Option<ReadTiming> {
        match &self.source {
            Source::Cached { .. } | Source::Staged(_) => None,
            Source::Migrated(reader) => reader.timing(),
        }
    }
    /// The fragments a migrated read found bad and read around (empty for staged objects).
    pub fn repairs(&self) -> RepairReport {
        match &self.source {
            Source::Cached { .. } | Source::Staged(_) => RepairReport::default(),
            Source::Migrated(reader) => reader.repairs().clone(),
        }
    }
    /// For a migrated object, once read to the end: the blob's columns the read took (a column
    /// ≥ k is a parity column standing in for a busy or missing data disk); empty for staged
    /// objects.
    pub fn columns_read(&self) -> Vec<usize> {
        match &self.source {
            Source::Cached { .. } | Source::Staged(_) => Vec::new(),
            Source::Migrated(reader) => reader.columns_read().to_vec(),
        }
    }
}
