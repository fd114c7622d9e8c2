//! Staged objects whose bytes are damaged, as the migrator meets them: what counts as damage to
//! one record (as against a failure of the staging log as a whole), what a flush reports of
//! each, and the store's memory of the records already found damaged, so a flush neither stops
//! on one bad record nor re-reads it at every upkeep tick.
//!
//! Invariants:
//! - damage is what one record's own checks say of it: a chunk's crc32c, its record header, the
//!   whole object's size and BLAKE3 against its PUT's ([`StagingError::Corrupt`]), or the
//!   device refusing to read it (`EIO`). Any other error (the segment missing, the catalog, the
//!   cold tier's disks) still stops the flush, as before;
//! - a damaged object is never moved, deleted or rewritten by the migrator: it stays staged
//!   where it is, so its GET reports the same damage and `store delete` or a new PUT resolves it,
//!   and its segment is never freed under it (a staged object keeps its segment);
//! - the memory is keyed by the record's place (segment, offset), which no other record ever
//!   takes, so a new PUT of the same key is read afresh; it lives as long as the store is open
//!   (a new process reads each damaged record once more) and holds at most one entry per
//!   damaged record it met.

use crate::error::StoreError;
use crate::staging::StagingError;
use serde::Serialize;
use spinwise_catalog::{ObjectLocation, ObjectRecord, SegmentId};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Linux's `EIO`: the device could not read the bytes (a bad sector), as against a missing file
/// or a refused permission, which are not damage to one record.
const EIO: i32 = 5;

/// A staged object a flush skipped because its staged bytes failed their checks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DamagedStaged {
    pub key: String,
    /// Where the damaged record is: its staging segment and the record's offset in it.
    pub segment: SegmentId,
    pub offset: u64,
    pub size_bytes: u64,
    /// What the check said, as the GET of the object would say it.
    pub reason: String,
}

impl DamagedStaged {
    /// `object` (staged), damaged as `error` says.
    pub(crate) fn new(object: &ObjectRecord, error: &StoreError) -> DamagedStaged {
        let (segment, offset) = staged_place(object);
        DamagedStaged {
            key: object.key.clone(),
            segment,
            offset,
            size_bytes: object.size_bytes,
            reason: error.to_string(),
        }
    }
}

/// The staged record `object` points at.
pub(crate) fn staged_place(object: &ObjectRecord) -> (SegmentId, u64) {
    match object.location {
        ObjectLocation::Staged { segment, offset } => (segment, offset),
        ObjectLocation::Migrated { .. } => unreachable!("the bundler packs staged objects only"),
    }
}

/// Whether `error`, met reading one staged object, is damage to that object's record (skip the
/// object) rather than a failure of the staging log or the store (stop the flush).
pub(crate) fn is_damage(error: &StoreError) -> bool {
    match error {
        StoreError::Staging(StagingError::Corrupt { .. }) => true,
        StoreError::Staging(StagingError::Io { source, .. }) => source.raw_os_error() == Some(EIO),
        _ => false,
    }
}

/// The records this store has found damaged, by place.
#[derive(Debug, Default)]
pub(crate) struct DamagedRecords {
    found: Mutex<BTreeMap<(SegmentId, u64), DamagedStaged>>,
}

impl DamagedRecords {
    /// What was found of the record `object` points at, if it was found damaged before.
    pub(crate) fn known(&self, object: &ObjectRecord) -> Option<DamagedStaged> {
        let found = self.found.lock().expect("damaged records lock");
        found.get(&staged_place(object)).cloned()
    }

    /// Remembers `damaged`.
    pub(crate) fn remember(&self, damaged: &DamagedStaged) {
        let mut found = self.found.lock().expect("damaged records lock");
        found.insert((damaged.segment, damaged.offset), damaged.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(kind: std::io::Error) -> StoreError {
        StoreError::Staging(StagingError::Io {
            path: "seg".to_string(),
            source: kind,
        })
    }

    #[test]
    fn a_failed_check_and_an_unreadable_sector_are_damage_and_a_missing_segment_is_not() {
        let corrupt = StoreError::Staging(StagingError::Corrupt {
            segment: 1,
            offset: 32,
            detail: "crc32c mismatch".to_string(),
        });
        assert!(is_damage(&corrupt));
        assert!(is_damage(&io(std::io::Error::from_raw_os_error(EIO))));
        assert!(!is_damage(&io(std::io::Error::from(
            std::io::ErrorKind::NotFound
        ))));
        assert!(!is_damage(&io(std::io::Error::from_raw_os_error(13))));
        assert!(!is_damage(&StoreError::Driver("disk gone".to_string())));
    }
}
