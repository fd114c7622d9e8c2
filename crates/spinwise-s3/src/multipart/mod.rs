//! S3 multipart upload: CreateMultipartUpload, UploadPart, UploadPartCopy,
//! CompleteMultipartUpload, AbortMultipartUpload, ListParts, ListMultipartUploads. Uploads and
//! parts are rows of the metadata database ([`rows`]); part bytes are files in
//! `DATA/s3-multipart/<upload id>/` ([`files`]). docs/s3.md ("Multipart upload") documents
//! the limits, errors and crash behaviour.
//!
//! Invariants:
//! - upload ids are 128 random bits; a request's id is parsed before it names a directory, and
//!   an id that is not open *for this bucket and key* is `NoSuchUpload`;
//! - part uploads hold their upload's lock shared and Complete/Abort exclusively, so a part
//!   never lands in (or is replaced under) an upload being completed or aborted;
//! - Complete stores the object through the same path as PutObject (key lock, bucket gate,
//!   metadata row before the store's commit; content hash BLAKE3 of the whole), and removes the
//!   upload's rows only after the store committed: a crash leaves the upload open (complete it
//!   again) or the object stored, never a partial object;
//! - start-up ([`SpinwiseS3::sweep_multipart`]) removes part files no row names and part rows
//!   whose file is missing;
//! - an upload older than `S3Settings::abandon_uploads_after_s` is aborted by [`expiry`]'s
//!   sweeper through the same [`remove_upload`] as AbortMultipartUpload, never while a part
//!   upload or a completion holds its lock.

pub mod expiry;
pub mod files;
pub mod rows;

use crate::body::{BodyStream, Expected, Upload, Wanted};
use crate::conditions::{ReadConditions, WriteCondition};
use crate::listing::KeyEncoding;
use crate::meta::{MetaDb, MetaError};
use crate::names::store_key;
use crate::restore::RestoredSource;
use crate::service::{
    Described, SpinwiseS3, WriteTarget, body_stream, checksum_headers, copy_source, described_from,
    expected_of, hex, internal, meta_error, slow_down, trailer_names,
};
use files::{UploadId, parse_part_file_name, parts_stream, random_generation, write_part_file};
use rows::{PartRow, UploadRow};
use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};
use spinwise_catalog::ObjectRecord;
use std::collections::BTreeSet;
use std::time::{Duration, UNIX_EPOCH};

pub use files::{MULTIPART_DIR, Multipart};

/// Part numbers run 1..=MAX_PARTS (S3's limit).
pub const MAX_PARTS: u32 = 10_000;
/// The most parts or uploads one list page returns.
const MAX_LIST: i32 = 1000;

fn no_such_upload(upload_id: &str) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::NoSuchUpload,
        format!(
            "no open multipart upload `{upload_id}` for this key (completed, aborted or never started)"
        ),
    )
}

fn timestamp(unix_ms: i64) -> Timestamp {
    Timestamp::from(UNIX_EPOCH + Duration::from_millis(u64::try_from(unix_ms).unwrap_or(0)))
}

fn check_part_number(part_number: i32) -> S3Result<u32> {
    u32::try_from(part_number)
        .ok()
        .filter(|n| (1..=MAX_PARTS).contains(n))
        .ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                format!(
                    "part number must be an integer between 1 and {MAX_PARTS}, not {part_number}"
                ),
            )
        })
}

fn unquoted(etag: &str) -> &str {
    etag.trim().trim_matches('"')
}

/// The stored parts a Complete request names, in order, after S3's checks: at least one part,
/// strictly ascending numbers (`InvalidPartOrder`), each uploaded with that ETag
/// (`InvalidPart`), each but the last at least `min_part_bytes` (`EntityTooSmall`).
pub fn choose_parts(
    requested: &[CompletedPart],
    stored: &[PartRow],
    min_part_bytes: u64,
) -> S3Result<Vec<PartRow>> {
    if requested.is_empty() {
        return Err(S3Error::with_message(
            S3ErrorCode::MalformedXML,
            "a CompleteMultipartUpload request must name at least one part",
        ));
    }
    let mut chosen: Vec<PartRow> = Vec::with_capacity(requested.len());
    for part in requested {
        let Some(number) = part.part_number else {
            return Err(S3Error::with_message(
                S3ErrorCode::MalformedXML,
                "a part without a PartNumber",
            ));
        };
        let number = u32::try_from(number).unwrap_or(0);
        if chosen.last().is_some_and(|last| last.part_number >= number) {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidPartOrder,
                "the list of parts was not in ascending order",
            ));
        }
        let invalid = || {
            S3Error::with_message(
                S3ErrorCode::InvalidPart,
                format!("part {number} was not uploaded, or its ETag does not match"),
            )
        };
        let row = stored
            .iter()
            .find(|row| row.part_number == number)
            .ok_or_else(invalid)?;
        let etag = part.e_tag.as_ref().map(|e| unquoted(e.value()));
        if etag != Some(row.etag.as_str()) {
            return Err(invalid());
        }
        chosen.push(row.clone());
    }
    let last_index = chosen.len() - 1;
    if let Some(small) = chosen[..last_index]
        .iter()
        .find(|part| part.size_bytes < min_part_bytes)
    {
        return Err(S3Error::with_message(
            S3ErrorCode::EntityTooSmall,
            format!(
                "part {} has {} bytes; every part but the last needs at least {min_part_bytes}",
                small.part_number, small.size_bytes
            ),
        ));
    }
    Ok(chosen)
}

/// S3's multipart ETag: the hex MD5 of the concatenated binary part MD5s, `-` and the count.
pub fn multipart_etag(parts: &[PartRow]) -> String {
    use s3s::crypto::Checksum as _;
    let mut md5 = s3s::crypto::Md5::new();
    for part in parts {
        let binary: Vec<u8> = (0..part.etag.len() / 2)
            .filter_map(|i| u8::from_str_radix(&part.etag[2 * i..2 * i + 2], 16).ok())
            .collect();
        md5.update(&binary);
    }
    format!("{}-{}", hex(&md5.finalize()), parts.len())
}

/// An `x-amz-copy-source-range` (`bytes=a-b`) as a range.
fn parse_copy_range(text: &str) -> S3Result<Range> {
    Range::parse(text).map_err(|_| {
        S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            format!("bad x-amz-copy-source-range `{text}` (want bytes=first-last)"),
        )
    })
}

impl SpinwiseS3 {
    /// The open upload `upload_id` of `bucket`/`key`, or `NoSuchUpload`.
    async fn open_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> S3Result<(UploadId, UploadRow)> {
        let id = UploadId::parse(upload_id).ok_or_else(|| no_such_upload(upload_id))?;
        let row = self.meta.upload(&id.hex()).await.map_err(meta_error)?;
        match row {
            Some(row) if row.bucket == bucket && row.object_key == key => Ok((id, row)),
            _ => Err(no_such_upload(upload_id)),
        }
    }

    pub(crate) async fn multipart_create(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        let input = req.input;
        store_key(&input.bucket, &input.key)?;
        crate::service::check_storage_class(input.storage_class.as_ref())?;
        let _bucket_open = self.bucket_gate.read().await;
        self.require_bucket(&input.bucket).await?;
        let headers = crate::headers::object_headers!(input);
        let described = described_from(input.content_type, input.metadata, headers);
        let id = UploadId::random().map_err(internal)?;
        let row = UploadRow {
            upload_id: id.hex(),
            bucket: input.bucket.clone(),
            object_key: input.key.clone(),
            content_type: described.content_type,
            user_metadata: described.user_metadata,
            headers: described.headers,
            started_unix_ms: self.store.now_unix_ms(),
        };
        let max_open = self.settings.max_open_uploads;
        if !self
            .meta
            .insert_upload(&row, max_open)
            .await
            .map_err(meta_error)?
        {
            return Err(slow_down(
                format!("{max_open} multipart uploads are open: complete or abort some"),
                self.settings.retry_after_s,
            ));
        }
        tracing::debug!(
            upload = row.upload_id,
            key = input.key,
            "multipart upload started"
        );
        Ok(S3Response::new(CreateMultipartUploadOutput {
            bucket: Some(input.bucket),
            key: Some(input.key),
            upload_id: Some(row.upload_id),
            ..Default::default()
        }))
    }

    pub(crate) async fn multipart_upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        let trailer_names = trailer_names(&req.headers);
        let trailers = req.trailing_headers;
        let input = req.input;
        store_key(&input.bucket, &input.key)?;
        let part_number = check_part_number(input.part_number)?;
        if let Some(length) = input.content_length
            && u64::try_from(length).unwrap_or(0) > self.settings.max_part_bytes
        {
            return Err(self.part_too_large(length));
        }
        self.require_bucket(&input.bucket).await?;
        let expected = expected_of(
            input.content_md5.as_deref(),
            checksum_headers!(input),
            trailer_names,
            trailers,
        )?;
        let stream = body_stream(input.body);
        let (part, checksums) = self
            .write_part(
                &input.bucket,
                &input.key,
                &input.upload_id,
                part_number,
                stream,
                expected,
            )
            .await?;
        Ok(S3Response::new(UploadPartOutput {
            e_tag: Some(ETag::Strong(part.etag)),
            checksum_crc32: checksums.checksum_crc32,
            checksum_crc32c: checksums.checksum_crc32c,
            checksum_crc64nvme: checksums.checksum_crc64nvme,
            checksum_sha1: checksums.checksum_sha1,
            checksum_sha256: checksums.checksum_sha256,
            ..Default::default()
        }))
    }

    fn part_too_large(&self, length: impl std::fmt::Display) -> S3Error {
        S3Error::with_message(
            S3ErrorCode::EntityTooLarge,
            format!(
                "{length} bytes exceed this server's part limit of {} bytes",
                self.settings.max_part_bytes
            ),
        )
    }

    pub(crate) async fn multipart_upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        let input = req.input;
        store_key(&input.bucket, &input.key)?;
        let part_number = check_part_number(input.part_number)?;
        let (source_bucket, source_key) = copy_source(&input.copy_source)?;
        let source = store_key(&source_bucket, &source_key)?;
        self.require_bucket(&source_bucket).await?;
        self.require_bucket(&input.bucket).await?;
        let range = input
            .copy_source_range
            .as_deref()
            .map(parse_copy_range)
            .transpose()?;
        let conditions = ReadConditions::for_copy_source(
            input.copy_source_if_match,
            input.copy_source_if_none_match,
            input.copy_source_if_modified_since,
            input.copy_source_if_unmodified_since,
        );
        let RestoredSource { stream, bytes, .. } = self
            .open_copy_source(&source_bucket, &source, range.as_ref(), &conditions)
            .await?;
        if bytes.end - bytes.start > self.settings.max_part_bytes {
            return Err(self.part_too_large(bytes.end - bytes.start));
        }
        let (part, _) = self
            .write_part(
                &input.bucket,
                &input.key,
                &input.upload_id,
                part_number,
                stream,
                Expected::default(),
            )
            .await?;
        Ok(S3Response::new(UploadPartCopyOutput {
            copy_part_result: Some(CopyPartResult {
                e_tag: Some(ETag::Strong(part.etag)),
                last_modified: Some(timestamp(part.written_unix_ms)),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    /// Writes one part's file, then its row (replacing an older upload of that part number,
    /// whose file is removed); returns the row and the checksums computed.
    async fn write_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        stream: BodyStream,
        expected: Expected,
    ) -> S3Result<(PartRow, Checksum)> {
        let id = UploadId::parse(upload_id).ok_or_else(|| no_such_upload(upload_id))?;
        let _upload_open = self.multipart.lock(&id).read().await;
        self.open_upload(bucket, key, upload_id).await?;
        self.multipart
            .ensure_upload_dir(&id)
            .await
            .map_err(internal)?;
        let generation = random_generation().map_err(internal)?;
        let path = self.multipart.part_path(&id, part_number, generation);
        let wanted = Wanted {
            md5: true,
            blake3: true,
        };
        let (upload, outcome) = Upload::new(stream, expected, wanted, self.settings.max_part_bytes);
        let digests = write_part_file(&path, upload, outcome).await?;
        let durable = files::sync_dir(&self.multipart.upload_dir(&id)).await;
        let part = PartRow {
            part_number,
            generation,
            size_bytes: digests.size_bytes,
            etag: hex(&digests.md5.expect("wanted")),
            content_hash: digests.blake3.expect("wanted"),
            written_unix_ms: self.store.now_unix_ms(),
        };
        let recorded = match durable {
            Ok(()) => self
                .meta
                .put_part(&id.hex(), &part)
                .await
                .map_err(meta_error),
            Err(error) => Err(internal(error)),
        };
        let replaced = match recorded {
            Ok(replaced) => replaced,
            Err(error) => {
                let _ = tokio::fs::remove_file(&path).await;
                return Err(error);
            }
        };
        if let Some(old) = replaced.filter(|old| *old != generation) {
            let old_path = self.multipart.part_path(&id, part_number, old);
            if let Err(error) = tokio::fs::remove_file(&old_path).await {
                tracing::warn!(%error, path = %old_path.display(), "removing a replaced part");
            }
        }
        Ok((part, digests.checksums))
    }

    pub(crate) async fn multipart_complete(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let input = req.input;
        let store_key = store_key(&input.bucket, &input.key)?;
        let condition = WriteCondition::of(input.if_match, input.if_none_match)?;
        self.require_bucket(&input.bucket).await?;
        let id =
            UploadId::parse(&input.upload_id).ok_or_else(|| no_such_upload(&input.upload_id))?;
        let _upload_held = self.multipart.lock(&id).write().await;
        let (_, upload) = self
            .open_upload(&input.bucket, &input.key, &input.upload_id)
            .await?;
        let requested = input
            .multipart_upload
            .and_then(|upload| upload.parts)
            .unwrap_or_default();
        let chosen = self.parts_to_complete(&upload, &requested).await?;
        let etag = multipart_etag(&chosen);
        let target = WriteTarget {
            bucket: &input.bucket,
            store_key: &store_key,
            condition,
        };
        let record = self
            .ingest_parts(target, &id, &upload, &chosen, &etag)
            .await?;
        // Committed: the upload is finished. A crash before these lines leaves it open.
        self.meta
            .delete_upload(&upload.upload_id)
            .await
            .map_err(meta_error)?;
        self.multipart.remove_upload_dir(&id).await;
        tracing::debug!(
            key = record.key,
            size_bytes = record.size_bytes,
            parts = chosen.len(),
            "multipart upload completed"
        );
        Ok(S3Response::new(CompleteMultipartUploadOutput {
            bucket: Some(input.bucket.clone()),
            key: Some(input.key.clone()),
            e_tag: Some(ETag::Strong(etag)),
            location: Some(format!("/{}/{}", input.bucket, input.key)),
            ..Default::default()
        }))
    }

    /// The stored parts a completion names, checked against what was uploaded
    /// ([`choose_parts`]) and, together, within this server's object limit.
    async fn parts_to_complete(
        &self,
        upload: &UploadRow,
        requested: &[CompletedPart],
    ) -> S3Result<Vec<PartRow>> {
        let stored = self
            .meta
            .parts(&upload.upload_id, 0, MAX_PARTS)
            .await
            .map_err(meta_error)?;
        let chosen = choose_parts(requested, &stored, self.settings.min_part_bytes)?;
        let total_bytes: u64 = chosen.iter().map(|part| part.size_bytes).sum();
        if total_bytes > self.settings.max_object_bytes {
            return Err(S3Error::with_message(
                S3ErrorCode::EntityTooLarge,
                format!(
                    "the parts add up to {total_bytes} bytes, over this server's object limit of {} bytes",
                    self.settings.max_object_bytes
                ),
            ));
        }
        Ok(chosen)
    }

    /// Streams the chosen part files, in order, into the store as one object of `store_key`
    /// carrying the upload's content type, metadata and the multipart `etag`.
    async fn ingest_parts(
        &self,
        target: WriteTarget<'_>,
        id: &UploadId,
        upload: &UploadRow,
        chosen: &[PartRow],
        etag: &str,
    ) -> S3Result<ObjectRecord> {
        let files = chosen
            .iter()
            .map(|part| {
                let path = self
                    .multipart
                    .part_path(id, part.part_number, part.generation);
                (path, part.size_bytes)
            })
            .collect();
        let described = Described {
            content_type: upload.content_type.clone(),
            user_metadata: upload.user_metadata.clone(),
            headers: upload.headers.clone(),
            etag: Some(etag.to_string()),
        };
        let ingested = self
            .ingest(
                target,
                parts_stream(files),
                Expected::default(),
                described,
                self.settings.max_object_bytes,
            )
            .await
            .map_err(|error| match error.code() {
                // The body is our own part files: a short read is the server's fault.
                S3ErrorCode::IncompleteBody => internal(format!(
                    "reading the parts of upload {}: {}",
                    upload.upload_id,
                    error.message().unwrap_or("failed")
                )),
                _ => error,
            })?;
        Ok(ingested.record)
    }

    pub(crate) async fn multipart_abort(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        let input = req.input;
        store_key(&input.bucket, &input.key)?;
        self.require_bucket(&input.bucket).await?;
        let id =
            UploadId::parse(&input.upload_id).ok_or_else(|| no_such_upload(&input.upload_id))?;
        let _upload_held = self.multipart.lock(&id).write().await;
        self.open_upload(&input.bucket, &input.key, &input.upload_id)
            .await?;
        remove_upload(&self.meta, &self.multipart, &id)
            .await
            .map_err(meta_error)?;
        Ok(S3Response::new(AbortMultipartUploadOutput::default()))
    }

    pub(crate) async fn multipart_list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        let input = req.input;
        store_key(&input.bucket, &input.key)?;
        self.require_bucket(&input.bucket).await?;
        let (_, upload) = self
            .open_upload(&input.bucket, &input.key, &input.upload_id)
            .await?;
        let max_parts = input.max_parts.unwrap_or(MAX_LIST).clamp(0, MAX_LIST);
        let after = u32::try_from(input.part_number_marker.unwrap_or(0)).unwrap_or(0);
        let mut parts = self
            .meta
            .parts(&upload.upload_id, after, max_parts as u32 + 1)
            .await
            .map_err(meta_error)?;
        let truncated = parts.len() > max_parts as usize;
        parts.truncate(max_parts as usize);
        let next = parts.last().map(|part| part.part_number as i32);
        Ok(S3Response::new(ListPartsOutput {
            bucket: Some(input.bucket),
            key: Some(input.key),
            upload_id: Some(upload.upload_id),
            max_parts: Some(max_parts),
            part_number_marker: input.part_number_marker,
            next_part_number_marker: truncated.then_some(next).flatten(),
            is_truncated: Some(truncated),
            storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
            parts: Some(
                parts
                    .into_iter()
                    .map(|part| Part {
                        e_tag: Some(ETag::Strong(part.etag)),
                        last_modified: Some(timestamp(part.written_unix_ms)),
                        part_number: Some(part.part_number as i32),
                        size: Some(part.size_bytes as i64),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }))
    }

    pub(crate) async fn multipart_list_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        let input = req.input;
        let encoding = KeyEncoding::of_request(input.encoding_type.as_ref())?;
        self.require_bucket(&input.bucket).await?;
        let prefix = input.prefix.clone().unwrap_or_default();
        let max_uploads = input.max_uploads.unwrap_or(MAX_LIST).clamp(0, MAX_LIST) as usize;
        let delimiter = input.delimiter.as_deref().filter(|d| !d.is_empty());
        let open = self
            .meta
            .uploads(&input.bucket, &prefix)
            .await
            .map_err(meta_error)?;
        let page = list_uploads_page(
            &open,
            &UploadsQuery {
                prefix: &prefix,
                delimiter,
                key_marker: input.key_marker.as_deref(),
                upload_id_marker: input.upload_id_marker.as_deref(),
                max_uploads,
            },
        );
        Ok(S3Response::new(ListMultipartUploadsOutput {
            bucket: Some(input.bucket),
            prefix: encoding.encode_option(input.prefix),
            delimiter: encoding.encode_option(input.delimiter),
            key_marker: encoding.encode_option(input.key_marker),
            upload_id_marker: input.upload_id_marker,
            max_uploads: Some(max_uploads as i32),
            is_truncated: Some(page.truncated),
            next_key_marker: encoding.encode_option(
                page.truncated
                    .then(|| page.next_key_marker.clone())
                    .flatten(),
            ),
            next_upload_id_marker: page
                .truncated
                .then(|| page.next_upload_id_marker.clone())
                .flatten(),
            uploads: Some(
                page.uploads
                    .iter()
                    .map(|upload| MultipartUpload {
                        key: Some(encoding.encode(&upload.object_key)),
                        upload_id: Some(upload.upload_id.clone()),
                        initiated: Some(timestamp(upload.started_unix_ms)),
                        storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
                        ..Default::default()
                    })
                    .collect(),
            ),
            common_prefixes: (!page.prefixes.is_empty()).then(|| {
                page.prefixes
                    .iter()
                    .map(|prefix| CommonPrefix {
                        prefix: Some(encoding.encode(prefix)),
                    })
                    .collect()
            }),
            encoding_type: encoding.answered(),
            ..Default::default()
        }))
    }

    /// Start-up cleanup: part rows of gone uploads and part rows whose file is missing are
    /// removed, then directories of uploads not open and part files no row names.
    pub(crate) async fn sweep_multipart(&self) -> Result<(), MetaError> {
        let mut removed_rows = self.meta.delete_orphan_parts().await?;
        let mut named = BTreeSet::new();
        let open = self.meta.upload_ids().await?;
        for upload_id in &open {
            let Some(id) = UploadId::parse(upload_id) else {
                continue;
            };
            for part in self.meta.parts(upload_id, 0, MAX_PARTS).await? {
                let path = self
                    .multipart
                    .part_path(&id, part.part_number, part.generation);
                if tokio::fs::try_exists(&path).await.unwrap_or(true) {
                    named.insert(path);
                } else {
                    self.meta.delete_part(upload_id, part.part_number).await?;
                    removed_rows += 1;
                }
            }
        }
        let open: BTreeSet<String> = open.into_iter().collect();
        let removed_files = self.sweep_part_files(&open, &named).await;
        if removed_rows + removed_files > 0 {
            tracing::info!(
                rows = removed_rows,
                files = removed_files,
                "removed multipart parts left by an interrupted upload"
            );
        }
        Ok(())
    }

    /// Removes what under `DATA/s3-multipart` belongs to no open upload or part row.
    async fn sweep_part_files(
        &self,
        open: &BTreeSet<String>,
        named: &BTreeSet<std::path::PathBuf>,
    ) -> u64 {
        let mut removed = 0;
        let Ok(mut uploads) = tokio::fs::read_dir(self.multipart.root()).await else {
            return 0; // no multipart upload ever wrote a part
        };
        while let Ok(Some(entry)) = uploads.next_entry().await {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let live = UploadId::parse(&name)
                .is_some_and(|id| open.contains(&id.hex()) && id.hex() == name);
            if !live {
                let outcome = match entry.file_type().await {
                    Ok(kind) if kind.is_dir() => tokio::fs::remove_dir_all(&path).await,
                    _ => tokio::fs::remove_file(&path).await,
                };
                match outcome {
                    Ok(()) => removed += 1,
                    Err(error) => {
                        tracing::warn!(%error, path = %path.display(), "sweeping multipart files")
                    }
                }
                continue;
            }
            let Ok(mut parts) = tokio::fs::read_dir(&path).await else {
                continue;
            };
            while let Ok(Some(part)) = parts.next_entry().await {
                let part_path = part.path();
                let name = part.file_name().to_string_lossy().into_owned();
                if parse_part_file_name(&name).is_some() && named.contains(&part_path) {
                    continue;
                }
                match tokio::fs::remove_file(&part_path).await {
                    Ok(()) => removed += 1,
                    Err(error) => {
                        tracing::warn!(%error, path = %part_path.display(), "sweeping a part file")
                    }
                }
            }
        }
        removed
    }
}

/// Aborts upload `id`: its rows (one transaction), then its part files. The caller holds the
/// upload's lock exclusively (AbortMultipartUpload and the expiry sweep, [`expiry`]); false if
/// it was not open.
pub(crate) async fn remove_upload(
    meta: &MetaDb,
    multipart: &Multipart,
    id: &UploadId,
) -> Result<bool, MetaError> {
    let removed = meta.delete_upload(&id.hex()).await?;
    multipart.remove_upload_dir(id).await;
    Ok(removed)
}

struct UploadsQuery<'a> {
    prefix: &'a str,
    delimiter: Option<&'a str>,
    key_marker: Option<&'a str>,
    upload_id_marker: Option<&'a str>,
    max_uploads: usize,
}

#[derive(Default)]
struct UploadsPage<'a> {
    uploads: Vec<&'a UploadRow>,
    prefixes: Vec<String>,
    truncated: bool,
    next_key_marker: Option<String>,
    next_upload_id_marker: Option<String>,
}

/// One ListMultipartUploads page of `open` (sorted by key, then upload id, all under the
/// prefix): entries after the markers, keys grouped by the delimiter into common prefixes.
fn list_uploads_page<'a>(open: &'a [UploadRow], query: &UploadsQuery<'_>) -> UploadsPage<'a> {
    let mut page = UploadsPage::default();
    // A key marker that is a common prefix we returned resumes past all of that prefix.
    let skipped_prefix = query
        .key_marker
        .zip(query.delimiter)
        .filter(|(marker, delimiter)| {
            marker.ends_with(delimiter) && marker.starts_with(query.prefix)
        })
        .map(|(marker, _)| marker);
    let after_markers = |upload: &&UploadRow| match query.key_marker {
        None => true,
        Some(_) if skipped_prefix.is_some_and(|p| upload.object_key.starts_with(p)) => false,
        Some(marker) => match (
            upload.object_key.as_str().cmp(marker),
            query.upload_id_marker,
        ) {
            (std::cmp::Ordering::Greater, _) => true,
            (std::cmp::Ordering::Equal, Some(id_marker)) => upload.upload_id.as_str() > id_marker,
            _ => false,
        },
    };
    for upload in open.iter().filter(after_markers) {
        let common = query.delimiter.and_then(|delimiter| {
            let rest = &upload.object_key[query.prefix.len()..];
            rest.find(delimiter).map(|at| {
                upload.object_key[..query.prefix.len() + at + delimiter.len()].to_string()
            })
        });
        if let Some(common) = &common
            && page.prefixes.last() == Some(common)
        {
            continue;
        }
        if page.uploads.len() + page.prefixes.len() == query.max_uploads {
            page.truncated = true;
            break;
        }
        match common {
            Some(common) => {
                page.next_key_marker = Some(common.clone());
                page.next_upload_id_marker = None;
                page.prefixes.push(common);
            }
            None => {
                page.next_key_marker = Some(upload.object_key.clone());
                page.next_upload_id_marker = Some(upload.upload_id.clone());
                page.uploads.push(upload);
            }
        }
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(number: u32, size_bytes: u64, etag: &str) -> PartRow {
        PartRow {
            part_number: number,
            generation: 1,
            size_bytes,
            etag: etag.to_string(),
            content_hash: [0; 32],
            written_unix_ms: 0,
        }
    }

    fn completed(number: i32, etag: &str) -> CompletedPart {
        CompletedPart {
            part_number: Some(number),
            e_tag: Some(ETag::Strong(etag.to_string())),
            ..Default::default()
        }
    }

    fn code(result: S3Result<Vec<PartRow>>) -> String {
        result
            .err()
            .map(|e| e.code().as_str().to_string())
            .unwrap_or_default()
    }

    #[test]
    fn complete_checks_parts_like_s3() {
        let stored = [part(1, 10, "aa"), part(2, 10, "bb"), part(3, 1, "cc")];
        let chosen =
            choose_parts(&[completed(1, "aa"), completed(3, "\"cc\"")], &stored, 10).unwrap();
        assert_eq!(
            chosen.iter().map(|p| p.part_number).collect::<Vec<_>>(),
            [1, 3]
        );
        assert_eq!(code(choose_parts(&[], &stored, 10)), "MalformedXML");
        assert_eq!(
            code(choose_parts(&[completed(4, "dd")], &stored, 10)),
            "InvalidPart"
        );
        assert_eq!(
            code(choose_parts(&[completed(1, "bb")], &stored, 10)),
            "InvalidPart"
        );
        let reversed = [completed(2, "bb"), completed(1, "aa")];
        assert_eq!(
            code(choose_parts(&reversed, &stored, 10)),
            "InvalidPartOrder"
        );
        let repeated = [completed(1, "aa"), completed(1, "aa")];
        assert_eq!(
            code(choose_parts(&repeated, &stored, 10)),
            "InvalidPartOrder"
        );
        let small_first = [completed(3, "cc"), completed(2, "bb")];
        assert_eq!(
            code(choose_parts(&small_first, &stored, 10)),
            "InvalidPartOrder"
        );
        let small_middle = [part(1, 10, "aa"), part(2, 9, "bb"), part(3, 10, "cc")];
        let all = [completed(1, "aa"), completed(2, "bb"), completed(3, "cc")];
        assert_eq!(
            code(choose_parts(&all, &small_middle, 10)),
            "EntityTooSmall"
        );
        assert!(choose_parts(&all, &small_middle, 9).is_ok());
    }

    #[test]
    fn multipart_etag_is_the_md5_of_binary_part_md5s_and_the_count() {
        use s3s::crypto::Checksum as _;
        let first = s3s::crypto::Md5::checksum(b"first");
        let second = s3s::crypto::Md5::checksum(b"second");
        let mut joined = first.to_vec();
        joined.extend_from_slice(&second);
        let expected = format!("{}-2", hex(&s3s::crypto::Md5::checksum(&joined)));
        let parts = [part(1, 5, &hex(&first)), part(2, 6, &hex(&second))];
        assert_eq!(multipart_etag(&parts), expected);
    }

    fn upload(key: &str, id: &str) -> UploadRow {
        UploadRow {
            upload_id: id.to_string(),
            bucket: "b".into(),
            object_key: key.to_string(),
            content_type: None,
            user_metadata: Default::default(),
            headers: Default::default(),
            started_unix_ms: 0,
        }
    }

    #[test]
    fn upload_pages_resume_after_their_markers_and_group_by_delimiter() {
        let open = [
            upload("a", "1"),
            upload("a", "2"),
            upload("d/x", "3"),
            upload("d/y", "4"),
            upload("z", "5"),
        ];
        let query = |key_marker, upload_id_marker, delimiter, max_uploads| UploadsQuery {
            prefix: "",
            delimiter,
            key_marker,
            upload_id_marker,
            max_uploads,
        };
        let first = list_uploads_page(&open, &query(None, None, Some("/"), 2));
        assert!(first.truncated);
        assert_eq!(
            first
                .uploads
                .iter()
                .map(|u| &u.upload_id[..])
                .collect::<Vec<_>>(),
            ["1", "2"]
        );
        let second = list_uploads_page(&open, &query(Some("a"), Some("2"), Some("/"), 2));
        assert_eq!(second.prefixes, ["d/"]);
        assert_eq!(
            second
                .uploads
                .iter()
                .map(|u| &u.upload_id[..])
                .collect::<Vec<_>>(),
            ["5"]
        );
        assert!(!second.truncated);
        let after_prefix = list_uploads_page(&open, &query(Some("d/"), None, Some("/"), 10));
        assert_eq!(
            after_prefix
                .uploads
                .iter()
                .map(|u| &u.upload_id[..])
                .collect::<Vec<_>>(),
            ["5"]
        );
        let flat = list_uploads_page(&open, &query(Some("a"), None, None, 10));
        assert_eq!(flat.uploads.len(), 3);
    }
}
