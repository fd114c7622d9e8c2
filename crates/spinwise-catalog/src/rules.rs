//! rules.rs: the request checks and integrity-problem lines every backend shares. A backend
//! reads the records a request touches, calls the check here, and changes nothing unless it
//! passes; so [`crate::MemoryCatalog`] and [`crate::SqliteCatalog`] refuse the same requests
//! with the same errors, checked in the same order (the differential test relies on it).
//!
//! Numbers are stored as signed 64-bit integers (SQLite INTEGER, PostgreSQL BIGINT): a `u64`
//! above `i64::MAX` is refused with [`CatalogError::Limit`], never wrapped.

use std::collections::BTreeSet;

use crate::{
    BlobId, BlobRecord, BlobState, CatalogError, DiskHealth, DiskIndex, Migration, ObjectLocation,
    ObjectRecord, RebuildTask, SegmentId,
};

/// `value` as the signed integer it is stored as, or a `Limit` error naming `what`.
pub(crate) fn stored(value: u64, what: &str) -> Result<i64, CatalogError> {
    i64::try_from(value).map_err(|_| {
        CatalogError::Limit(format!(
            "{what} = {value} is above the catalog's maximum {}",
            i64::MAX
        ))
    })
}

/// The lowest id the counter may hold once `highest_used` is known to be taken: the id after
/// it, which must itself be storable (the counter is an i64 like every number).
pub(crate) fn blob_id_floor(highest_used: u64) -> Result<u64, CatalogError> {
    let floor = highest_used
        .checked_add(1)
        .ok_or_else(|| CatalogError::Limit(format!("no blob id is left above {highest_used}")))?;
    stored(floor, "next blob id")?;
    Ok(floor)
}

fn invalid(operation: &'static str, message: String) -> CatalogError {
    CatalogError::Invalid { operation, message }
}

/// `put_object`: the record is staged and every number fits.
pub(crate) fn check_object(record: &ObjectRecord) -> Result<(), CatalogError> {
    let ObjectLocation::Staged { segment, offset } = record.location else {
        return Err(invalid(
            "put_object",
            format!(
                "object {:?} must be Staged (only commit_blob migrates)",
                record.key
            ),
        ));
    };
    stored(record.size_bytes, "object size_bytes")?;
    stored(segment, "staging segment")?;
    stored(offset, "staging offset")?;
    Ok(())
}

/// A `restage` request as stored: (segment, offset) pairs as the signed integers in the rows.
pub(crate) struct StoredRestage {
    /// `None` when `from` is above `i64::MAX`: nothing is ever stored there, so nothing moves.
    pub(crate) from: Option<(i64, i64)>,
    pub(crate) to: (i64, i64),
}

/// `restage`: the new place must be storable, checked before anything is read or changed. A
/// `from` above `i64::MAX` names no record, so the move does not apply and is not an error.
pub(crate) fn check_restage(
    from: (SegmentId, u64),
    to: (SegmentId, u64),
) -> Result<StoredRestage, CatalogError> {
    let to = (
        stored(to.0, "staging segment")?,
        stored(to.1, "staging offset")?,
    );
    Ok(StoredRestage {
        from: stored_place(from),
        to,
    })
}

/// A staging place a request matches against, as stored: `None` when either number is above
/// `i64::MAX`, where nothing is ever stored, so the request matches no record (not an error:
/// `restage`'s `from`, `demote`'s place).
pub(crate) fn stored_place((segment, offset): (SegmentId, u64)) -> Option<(i64, i64)> {
    i64::try_from(segment).ok().zip(i64::try_from(offset).ok())
}

/// `segment_usage`: one segment's bytes, which must fit the signed range every number has (a
/// backend that sums in i64 cannot report more), as `stats` totals must.
pub(crate) fn segment_bytes(bytes: u128) -> Result<u64, CatalogError> {
    u64::try_from(bytes)
        .ok()
        .filter(|&bytes| i64::try_from(bytes).is_ok())
        .ok_or_else(segment_bytes_overflow)
}

/// The error for a segment whose staged bytes sum above `i64::MAX`.
pub(crate) fn segment_bytes_overflow() -> CatalogError {
    CatalogError::Limit(format!(
        "a staging segment's live bytes are above the catalog's maximum {}",
        i64::MAX
    ))
}

/// `put_object`: the bytes of every object in the catalog once the PUT is in, `total_after`,
/// must be a stored integer (the SQLite catalog keeps the total; 9.2 EB is the catalog's limit).
pub(crate) fn check_total_bytes(total_after: u128) -> Result<(), CatalogError> {
    if total_after > i64::MAX as u128 {
        return Err(CatalogError::Limit(format!(
            "the catalog's objects would hold {total_after} bytes, above its maximum {}",
            i64::MAX
        )));
    }
    Ok(())
}

/// `begin_blob`: a `Writing` blob with an id handed out by `next_blob_id` (all ids below
/// `next_blob_id` were), not yet recorded, with `k + r` distinct disks.
pub(crate) fn check_new_blob(
    record: &BlobRecord,
    next_blob_id: BlobId,
    exists: bool,
) -> Result<(), CatalogError> {
    if record.state != BlobState::Writing {
        return Err(CatalogError::BlobState {
            blob: record.id,
            state: record.state,
            expected: BlobState::Writing,
        });
    }
    stored(record.size_bytes, "blob size_bytes")?;
    // A stripe's data bytes must be a stored integer too: the catalog's disk usage divides by it.
    stored(
        u64::from(record.k) * u64::from(record.fragment_bytes),
        "blob k × fragment_bytes",
    )?;
    if record.k == 0 {
        return Err(invalid(
            "begin_blob",
            format!("blob {} has k = 0", record.id),
        ));
    }
    let columns = u64::from(record.k) + u64::from(record.r);
    if record.disks.len() as u64 != columns {
        return Err(invalid(
            "begin_blob",
            format!(
                "blob {} has {} disks, k + r = {columns}",
                record.id,
                record.disks.len()
            ),
        ));
    }
    let distinct: BTreeSet<DiskIndex> = record.disks.iter().copied().collect();
    if distinct.len() != record.disks.len() {
        return Err(invalid(
            "begin_blob",
            format!("blob {} names a disk twice: {:?}", record.id, record.disks),
        ));
    }
    if record.id == 0 || record.id >= next_blob_id {
        return Err(invalid(
            "begin_blob",
            format!("blob id {} was never handed out by next_blob_id", record.id),
        ));
    }
    if exists {
        return Err(invalid(
            "begin_blob",
            format!("blob {} is already in the catalog", record.id),
        ));
    }
    Ok(())
}

/// The blob exists and is in `expected` state.
pub(crate) fn check_blob_state(
    id: BlobId,
    blob: Option<&BlobRecord>,
    expected: BlobState,
) -> Result<&BlobRecord, CatalogError> {
    let blob = blob.ok_or(CatalogError::UnknownBlob { blob: id })?;
    if blob.state != expected {
        return Err(CatalogError::BlobState {
            blob: id,
            state: blob.state,
            expected,
        });
    }
    Ok(blob)
}

/// `record_scrub`: a positive time (0 is stored as "never verified").
pub(crate) fn check_scrub_time(verified_unix_ms: i64) -> Result<(), CatalogError> {
    if verified_unix_ms <= 0 {
        return Err(invalid(
            "record_scrub",
            format!("verification time {verified_unix_ms} ms is not positive"),
        ));
    }
    Ok(())
}

/// `commit_blob`, for one migration whose object is still at `from`: its bytes fit the blob.
pub(crate) fn check_move(
    blob: &BlobRecord,
    migration: &Migration,
    object: &ObjectRecord,
) -> Result<(), CatalogError> {
    stored(migration.blob_offset, "blob_offset")?;
    let end = migration.blob_offset.checked_add(object.size_bytes);
    if end.is_none_or(|end| end > blob.size_bytes) {
        return Err(invalid(
            "commit_blob",
            format!(
                "object {:?} ({} bytes at offset {}) does not fit blob {} of {} bytes",
                object.key, object.size_bytes, migration.blob_offset, blob.id, blob.size_bytes
            ),
        ));
    }
    Ok(())
}

/// `remove_blob`: a committed blob nothing points into.
pub(crate) fn check_remove(
    id: BlobId,
    blob: Option<&BlobRecord>,
    referencing_objects: u64,
) -> Result<(), CatalogError> {
    let blob = check_blob_state(id, blob, BlobState::Committed)?;
    if blob.live_bytes != 0 || referencing_objects != 0 {
        return Err(invalid(
            "remove_blob",
            format!(
                "blob {id} still has {} live bytes in {referencing_objects} objects",
                blob.live_bytes
            ),
        ));
    }
    Ok(())
}

/// `add_rebuild_tasks`, per task: a committed blob whose column `column` is on `failed_disk`,
/// and that disk is marked failed.
pub(crate) fn check_rebuild_task(
    task: &RebuildTask,
    blob: Option<&BlobRecord>,
    failed_disk_health: DiskHealth,
) -> Result<(), CatalogError> {
    let blob = check_blob_state(task.blob, blob, BlobState::Committed)?;
    let Some(&disk) = blob.disks.get(task.column as usize) else {
        return Err(invalid(
            "add_rebuild_tasks",
            format!("blob {} has no column {}", task.blob, task.column),
        ));
    };
    if disk != task.failed_disk {
        return Err(invalid(
            "add_rebuild_tasks",
            format!(
                "blob {} column {} is on disk {disk}, not {}",
                task.blob, task.column, task.failed_disk
            ),
        ));
    }
    if failed_disk_health != DiskHealth::Failed {
        return Err(invalid(
            "add_rebuild_tasks",
            format!("disk {} is not marked failed", task.failed_disk),
        ));
    }
    Ok(())
}

/// `complete_rebuild`: the task is pending exactly as given, and `new_disk` is healthy and not
/// already one of the blob's disks.
pub(crate) fn check_complete_rebuild(
    task: &RebuildTask,
    pending_failed_disk: Option<DiskIndex>,
    blob: Option<&BlobRecord>,
    new_disk: DiskIndex,
    new_disk_health: DiskHealth,
) -> Result<(), CatalogError> {
    if pending_failed_disk != Some(task.failed_disk) {
        return Err(invalid(
            "complete_rebuild",
            format!("no pending rebuild task {task:?}"),
        ));
    }
    let blob = blob.ok_or(CatalogError::UnknownBlob { blob: task.blob })?;
    if blob.disks.contains(&new_disk) {
        return Err(invalid(
            "complete_rebuild",
            format!("disk {new_disk} already holds a column of blob {}", blob.id),
        ));
    }
    if new_disk_health != DiskHealth::Healthy {
        return Err(invalid(
            "complete_rebuild",
            format!("disk {new_disk} is not healthy"),
        ));
    }
    Ok(())
}

// Integrity-problem lines, shared so both backends word a problem the same way.

pub(crate) fn problem_object_outside_blob(key: &str, blob: BlobId, end: u128, size: u64) -> String {
    format!("object {key:?} ends at byte {end} of blob {blob}, which has {size} bytes")
}

pub(crate) fn problem_warm_object_migrated(key: &str, blob: BlobId) -> String {
    format!("object {key:?} is warm but migrated into blob {blob}")
}

pub(crate) fn problem_object_in_missing_blob(key: &str, blob: BlobId) -> String {
    format!("object {key:?} points into blob {blob}, which is not in the catalog")
}

pub(crate) fn problem_object_in_uncommitted_blob(key: &str, blob: BlobId) -> String {
    format!("object {key:?} points into blob {blob}, which is not committed")
}

pub(crate) fn problem_live_bytes(blob: BlobId, recorded: u64, actual: u128) -> String {
    format!("blob {blob} records {recorded} live bytes, its objects hold {actual}")
}

pub(crate) fn problem_disk_count(blob: BlobId, disks: u64, columns: u64) -> String {
    format!("blob {blob} has {disks} disks, k + r = {columns}")
}

pub(crate) fn problem_column_range(blob: BlobId, column: u64) -> String {
    format!("blob {blob} has a disk for column {column}, outside 0..k + r")
}

pub(crate) fn problem_repeated_disk(blob: BlobId, disk: DiskIndex) -> String {
    format!("blob {blob} has disk {disk} in more than one column")
}

pub(crate) fn problem_task_blob(task: &RebuildTask) -> String {
    format!(
        "rebuild task for blob {} column {} names no committed blob",
        task.blob, task.column
    )
}

pub(crate) fn problem_task_disk(task: &RebuildTask, current: Option<DiskIndex>) -> String {
    format!(
        "rebuild task for blob {} column {} names disk {}, the column is on {current:?}",
        task.blob, task.column, task.failed_disk
    )
}

pub(crate) fn problem_task_healthy_disk(task: &RebuildTask) -> String {
    format!(
        "rebuild task for blob {} column {} names disk {}, which is not marked failed",
        task.blob, task.column, task.failed_disk
    )
}

pub(crate) fn problem_blob_id_counter(next_blob_id: BlobId, max_blob: BlobId) -> String {
    format!("next blob id {next_blob_id} is not above the largest blob id {max_blob}")
}
