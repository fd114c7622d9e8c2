//! The staging log against its specification (docs/staging-format.md): byte-exact round trips
//! at chunk boundaries, range reads, corruption detected on read, torn tails truncated and
//! unreferenced segments deleted by recovery, the staging limit.

use crate::common;

use common::pattern;
use spinwise_store::staging::{
    ContentCheck, MAX_KEY_BYTES, SEGMENT_HEADER_BYTES, StagingConfig, StagingError, StagingLog,
    Tier, segment_path,
};
use std::collections::BTreeSet;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

fn small_chunks() -> StagingConfig {
    StagingConfig {
        segment_bytes: 1 << 20,
        chunk_bytes: 4096,
        limit_bytes: 64 << 20,
    }
}

/// Segments of 4 KiB: a record of 5,000 bytes fills (and seals) one of its own.
fn one_record_per_segment() -> StagingConfig {
    StagingConfig {
        segment_bytes: 4096,
        ..small_chunks()
    }
}

async fn read_all(
    log: &StagingLog,
    record: (u64, u64, u64),
    key: &str,
    range: std::ops::Range<u64>,
) -> Result<Vec<u8>, StagingError> {
    let (segment, offset, size_bytes) = record;
    let mut reader = log
        .read(
            segment,
            offset,
            key,
            size_bytes,
            range,
            ContentCheck::WholeObject,
        )
        .await?;
    let mut bytes = Vec::new();
    while let Some(chunk) = reader.next_chunk().await? {
        assert!(chunk.len() <= log.config().chunk_bytes as usize);
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

#[tokio::test]
async fn records_round_trip_byte_exact_around_chunk_and_fragment_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let log = StagingLog::open(dir.path(), StagingConfig::default())
        .await
        .unwrap();
    let sizes = [
        0,
        1,
        128 * 1024 - 1,
        128 * 1024,
        128 * 1024 + 1,
        (1 << 20) - 1,
        1 << 20,
        (3 << 20) + 5,
    ];
    for (index, size) in sizes.into_iter().enumerate() {
        let data = pattern(size, index as u64);
        let key = format!("object-{index}");
        let record = log.append(&key, Tier::Cold, &data[..]).await.unwrap();
        assert_eq!(record.size_bytes, size as u64);
        assert_eq!(record.content_hash, *blake3::hash(&data).as_bytes());
        let place = (record.segment, record.offset, record.size_bytes);
        let back = read_all(&log, place, &key, 0..size as u64).await.unwrap();
        assert!(back == data, "size {size} did not round-trip");
    }
}

#[tokio::test]
async fn many_small_chunks_round_trip_and_any_range_reads_exactly_those_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let log = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    let data = pattern(10 * 4096 + 123, 7);
    let record = log.append("k", Tier::Cold, &data[..]).await.unwrap();
    let place = (record.segment, record.offset, record.size_bytes);
    let size = data.len() as u64;
    let ranges = [
        0..0,
        0..1,
        4095..4097,
        4096..8192,
        5..size,
        size - 1..size,
        3 * 4096 + 17..9 * 4096 + 1,
        0..size,
    ];
    for range in ranges {
        let back = read_all(&log, place, "k", range.clone()).await.unwrap();
        assert_eq!(back, data[range.start as usize..range.end as usize]);
    }
    let beyond = read_all(&log, place, "k", 0..size + 1).await;
    assert!(matches!(beyond, Err(StagingError::Range { .. })));
}

#[tokio::test]
async fn a_flipped_byte_in_a_chunk_is_detected_and_other_chunks_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let log = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    let data = pattern(5 * 4096, 3);
    let record = log.append("k", Tier::Cold, &data[..]).await.unwrap();
    let place = (record.segment, record.offset, record.size_bytes);
    // Chunk 2's data starts at offset + header (24 + 1, and the 8-byte stamp) + 2 frames +
    // frame header.
    let flip_at = record.offset + 25 + 8 + 2 * (8 + 4096) + 8 + 100;
    flip_byte(&segment_path(dir.path(), record.segment), flip_at);
    let whole = read_all(&log, place, "k", 0..data.len() as u64).await;
    assert!(
        matches!(&whole, Err(StagingError::Corrupt { detail, .. }) if detail.contains("chunk 2")),
        "{whole:?}"
    );
    let before = read_all(&log, place, "k", 0..2 * 4096).await.unwrap();
    assert_eq!(before, data[..2 * 4096]);
    let after = read_all(&log, place, "k", 3 * 4096..5 * 4096)
        .await
        .unwrap();
    assert_eq!(after, data[3 * 4096..]);
}

#[tokio::test]
async fn a_read_naming_the_wrong_key_is_refused_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let log = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    let record = log
        .append("right", Tier::Cold, &b"bytes"[..])
        .await
        .unwrap();
    let place = (record.segment, record.offset, record.size_bytes);
    let wrong = read_all(&log, place, "wrong", 0..5).await;
    assert!(matches!(wrong, Err(StagingError::Corrupt { .. })));
}

fn flip_byte(path: &Path, at: u64) {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut byte = [0u8; 1];
    file.seek(SeekFrom::Start(at)).unwrap();
    std::io::Read::read_exact(&mut file, &mut byte).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(&[byte[0] ^ 0x40]).unwrap();
}

fn file_length(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

#[tokio::test]
async fn recovery_truncates_a_torn_tail_and_keeps_referenced_records() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(3 * 4096 + 9, 11);
    let (kept, segment, kept_end) = {
        let log = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
        let kept = log.append("kept", Tier::Cold, &data[..]).await.unwrap();
        let path = segment_path(dir.path(), kept.segment);
        let kept_end = file_length(&path);
        log.append("torn", Tier::Cold, &pattern(4 * 4096, 12)[..])
            .await
            .unwrap();
        // A crash in the middle of the second record: only part of it reached the disk.
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(kept_end + 2 * 4096 + 5).unwrap();
        (
            (kept.segment, kept.offset, kept.size_bytes),
            kept.segment,
            kept_end,
        )
    };
    let log = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    let scanned: Vec<String> = log.scanned_records().into_iter().map(|r| r.key).collect();
    assert_eq!(scanned, ["kept"]);
    let referenced = BTreeSet::from([(kept.0, kept.1)]);
    let report = log.recover(&referenced).await.unwrap();
    assert_eq!(report.bytes_truncated, 2 * 4096 + 5);
    assert!(report.missing.is_empty() && report.segments_deleted.is_empty());
    assert_eq!(file_length(&segment_path(dir.path(), segment)), kept_end);
    assert_eq!(read_all(&log, kept, "kept", 0..kept.2).await.unwrap(), data);
    // Appends after a restart go to a new segment, never after a recovered tail.
    let next = log.append("next", Tier::Cold, &b"after"[..]).await.unwrap();
    assert!(next.segment > segment);
}

#[tokio::test]
async fn recovery_deletes_segments_nothing_references_and_reports_missing_records() {
    let dir = tempfile::tempdir().unwrap();
    let config = one_record_per_segment();
    let (first, second) = {
        let log = StagingLog::open(dir.path(), config).await.unwrap();
        let first = log
            .append("a", Tier::Cold, &pattern(5000, 1)[..])
            .await
            .unwrap();
        let second = log
            .append("b", Tier::Cold, &pattern(5000, 2)[..])
            .await
            .unwrap();
        assert_ne!(first.segment, second.segment, "a full segment is sealed");
        (
            (first.segment, first.offset),
            (second.segment, second.offset),
        )
    };
    let log = StagingLog::open(dir.path(), config).await.unwrap();
    let referenced = BTreeSet::from([second, (second.0, 999_999)]);
    let report = log.recover(&referenced).await.unwrap();
    assert_eq!(report.segments_deleted, [first.0]);
    assert_eq!(report.missing, [(second.0, 999_999)]);
    assert!(!segment_path(dir.path(), first.0).exists());
    assert!(segment_path(dir.path(), second.0).exists());
    assert_eq!(
        log.used_bytes(),
        file_length(&segment_path(dir.path(), second.0))
    );
}

#[tokio::test]
async fn a_sealed_segment_is_freed_only_once_unpinned() {
    let dir = tempfile::tempdir().unwrap();
    let config = one_record_per_segment();
    let log = StagingLog::open(dir.path(), config).await.unwrap();
    let record = log
        .append("a", Tier::Cold, &pattern(5000, 1)[..])
        .await
        .unwrap();
    let segment = record.segment;
    assert!(log.freeable_segments().is_empty(), "pinned until dropped");
    assert!(matches!(
        log.free_segment(segment).await,
        Err(StagingError::NotFreeable { .. })
    ));
    drop(record);
    assert_eq!(log.freeable_segments(), [segment]);
    log.free_segment(segment).await.unwrap();
    // The highest segment is emptied to its header, not deleted, so its id stays taken.
    let path = segment_path(dir.path(), segment);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        SEGMENT_HEADER_BYTES
    );
    assert_eq!(log.used_bytes(), SEGMENT_HEADER_BYTES);
}

#[tokio::test]
async fn a_freed_segment_below_the_highest_is_deleted_and_a_reopened_log_never_reuses_an_id() {
    let dir = tempfile::tempdir().unwrap();
    let config = one_record_per_segment();
    let log = StagingLog::open(dir.path(), config).await.unwrap();
    // Each record fills (and seals) a segment of its own.
    let first = log
        .append("a", Tier::Cold, &pattern(5000, 1)[..])
        .await
        .unwrap()
        .segment;
    let second = log
        .append("b", Tier::Cold, &pattern(5000, 2)[..])
        .await
        .unwrap()
        .segment;
    assert!(second > first);
    log.free_segment(first).await.unwrap();
    log.free_segment(second).await.unwrap();
    assert!(
        !segment_path(dir.path(), first).exists(),
        "a lower segment is deleted"
    );
    assert!(
        segment_path(dir.path(), second).exists(),
        "the highest is kept"
    );
    assert_eq!(log.used_bytes(), SEGMENT_HEADER_BYTES);
    drop(log);
    // Were the highest deleted, a reopened log would number its next segment `first` again,
    // and a blob index naming an origin in the old one would outrank every record in the new.
    let log = StagingLog::open(dir.path(), config).await.unwrap();
    log.recover(&BTreeSet::new()).await.unwrap();
    let third = log
        .append("c", Tier::Cold, &pattern(10, 3)[..])
        .await
        .unwrap()
        .segment;
    assert!(
        third > second,
        "segment id {third} handed out again (highest was {second})"
    );
}

#[tokio::test]
async fn a_put_over_the_staging_limit_fails_typed_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let config = StagingConfig {
        limit_bytes: 64 * 1024,
        ..small_chunks()
    };
    let log = StagingLog::open(dir.path(), config).await.unwrap();
    let small = log
        .append("small", Tier::Cold, &pattern(1000, 1)[..])
        .await
        .unwrap();
    let path = segment_path(dir.path(), small.segment);
    let length_before = file_length(&path);
    let used_before = log.used_bytes();
    let full = log
        .append("big", Tier::Cold, &pattern(100 * 1024, 2)[..])
        .await;
    assert!(matches!(full, Err(StagingError::Full { .. })), "{full:?}");
    assert_eq!(file_length(&path), length_before);
    assert_eq!(log.used_bytes(), used_before);
    drop(small);
    // The cut-back segment keeps working, and a restart finds only the first record.
    log.append("fits", Tier::Cold, &pattern(1000, 3)[..])
        .await
        .unwrap();
    drop(log);
    let reopened = StagingLog::open(dir.path(), config).await.unwrap();
    let keys: Vec<String> = reopened
        .scanned_records()
        .into_iter()
        .map(|r| r.key)
        .collect();
    assert_eq!(keys, ["small", "fits"]);
}

#[tokio::test]
async fn keys_outside_one_to_1088_bytes_are_refused_and_the_longest_reads_back_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let log = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    for key in [String::new(), "x".repeat(MAX_KEY_BYTES + 1)] {
        let refused = log.append(&key, Tier::Cold, &b"v"[..]).await;
        assert!(matches!(refused, Err(StagingError::KeyLength { .. })));
    }
    // S3's longest key (1,024 bytes) under its longest bucket name (63) and '/'.
    let longest = format!("{}/{}", "b".repeat(63), "k".repeat(1024));
    assert_eq!(longest.len(), MAX_KEY_BYTES);
    log.append(&longest, Tier::Cold, &b"v"[..]).await.unwrap();
    drop(log);
    let reopened = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    let keys: Vec<String> = reopened
        .scanned_records()
        .into_iter()
        .map(|r| r.key)
        .collect();
    assert_eq!(keys, [longest]);
}

#[tokio::test]
async fn two_logs_on_one_directory_never_append_to_the_same_segment() {
    let dir = tempfile::tempdir().unwrap();
    // Both open an empty directory, so both would pick segment 1 first.
    let first = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    let second = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    let a = first
        .append("a", Tier::Cold, &pattern(5000, 1)[..])
        .await
        .unwrap();
    let b = second
        .append("b", Tier::Cold, &pattern(7000, 2)[..])
        .await
        .unwrap();
    assert_ne!(
        a.segment, b.segment,
        "the second log skipped the id the first took"
    );
    let a = (a.segment, a.offset, a.size_bytes);
    let b = (b.segment, b.offset, b.size_bytes);
    assert_eq!(
        read_all(&second, a, "a", 0..a.2).await.unwrap(),
        pattern(5000, 1)
    );
    assert_eq!(
        read_all(&first, b, "b", 0..b.2).await.unwrap(),
        pattern(7000, 2)
    );
}

#[tokio::test]
async fn a_segment_another_log_writes_is_in_use_until_that_log_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let writer = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    let record = writer
        .append("a", Tier::Cold, &pattern(5000, 1)[..])
        .await
        .unwrap();
    let segment = record.segment;
    drop(record); // committed; the segment stays open for appends, so still locked
    let other = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    assert!(
        other.scanned_records().is_empty(),
        "a locked segment is not scanned"
    );
    let report = other.recover(&BTreeSet::new()).await.unwrap();
    assert_eq!(report.segments_in_use, [segment]);
    assert!(report.segments_deleted.is_empty() && report.bytes_truncated == 0);
    assert!(matches!(
        other.free_segment(segment).await,
        Err(StagingError::NotFreeable { .. })
    ));
    assert!(segment_path(dir.path(), segment).exists());
    drop(writer);
    // The writer gone (as a process dies), the segment can be claimed and freed: emptied to its
    // header, as the highest segment is.
    other.free_segment(segment).await.unwrap();
    let path = segment_path(dir.path(), segment);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        SEGMENT_HEADER_BYTES
    );
    assert_eq!(other.used_bytes(), SEGMENT_HEADER_BYTES);
}

/// Where chunk `chunk`'s frame starts in a record at `offset` with key `key` (docs/staging-format.md:
/// a 20-byte fixed header, the key, a 4-byte crc, then frames of 8 + chunk bytes).
/// Where chunk `chunk`'s frame starts in a stamped record of `key` at `offset` (4 KiB chunks):
/// after the header's 20 fixed bytes, the key, the 8-byte stamp and the crc.
fn frame_at(offset: u64, key: &str, chunk: u64) -> u64 {
    offset + 20 + key.len() as u64 + 8 + 4 + chunk * (8 + 4096)
}

#[tokio::test]
async fn recovery_finds_referenced_records_from_their_sizes_without_walking_their_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let big_data = pattern(10 * 4096 + 100, 21);
    let (big, next) = {
        let log = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
        let big = log.append("big", Tier::Cold, &big_data[..]).await.unwrap();
        let next = log
            .append("next", Tier::Cold, &b"after big"[..])
            .await
            .unwrap();
        (
            (big.segment, big.offset, big.size_bytes),
            (next.segment, next.offset, next.size_bytes),
        )
    };
    // Bit rot in a middle chunk's length field: walking the chunks would end the segment's
    // valid prefix before `big`, losing `next` with it.
    let path = segment_path(dir.path(), big.0);
    flip_byte(&path, frame_at(big.1, "big", 3));
    let length_before = file_length(&path);

    let log = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    let found = log
        .find_records(vec![big, next])
        .await
        .unwrap()
        .into_iter()
        .map(|record| (record.key, record.size_bytes))
        .collect::<Vec<_>>();
    assert_eq!(found, [("big".to_string(), big.2), ("next".to_string(), 9)]);
    let report = log
        .recover(&BTreeSet::from([(big.0, big.1), (next.0, next.1)]))
        .await
        .unwrap();
    assert!(report.missing.is_empty(), "{report:?}");
    assert_eq!(report.bytes_truncated, 0);
    assert_eq!(file_length(&path), length_before);
    // The damage is caught where every chunk is checked: on read.
    let read = read_all(&log, big, "big", 0..big.2).await;
    assert!(
        matches!(read, Err(StagingError::Corrupt { .. })),
        "{read:?}"
    );
    assert_eq!(
        read_all(&log, next, "next", 0..next.2).await.unwrap(),
        b"after big"
    );
    drop(log);

    // The whole-segment walk, for contrast, stops at the damaged chunk.
    let walked = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    assert!(walked.scanned_records().is_empty());
}

#[tokio::test]
async fn a_size_the_record_does_not_have_falls_back_to_walking_the_segment() {
    let dir = tempfile::tempdir().unwrap();
    let record = {
        let log = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
        let a = log
            .append("a", Tier::Cold, &pattern(5000, 1)[..])
            .await
            .unwrap();
        (a.segment, a.offset, a.size_bytes)
    };
    let log = StagingLog::open(dir.path(), small_chunks()).await.unwrap();
    let found = log
        .find_records(vec![
            (record.0, record.1, 4999),
            (record.0, 999_999, 1),
            (record.0, record.1, u64::MAX),
        ])
        .await
        .unwrap();
    // One answer per request found: the record as it is, whatever size was asked for; nothing
    // at an offset where no record starts.
    let found: Vec<(u64, u64)> = found.iter().map(|r| (r.offset, r.size_bytes)).collect();
    assert_eq!(found, [(record.1, 5000), (record.1, 5000)]);
}
