//! A disk's space ledger: capacity, and the bytes its files and in-flight writes hold. The
//! directory-backed disks and the model disk book space through it, so `NoSpace` means the same
//! on every implementation.
//!
//! Invariants: `used_bytes` never exceeds what was reserved minus what was released (a release
//! of more than is held is a broken caller and asserts, except a shared directory's file
//! whose length another handle changed: `release_file`); a reservation that does not fit
//! changes nothing and is refused with `NoSpace`. Used bytes may exceed the capacity only when
//! a disk opened with more files than its configured capacity (free space is then 0).

use std::sync::Mutex;

use crate::{DiskError, DiskIndex, Space};

#[derive(Debug)]
pub(crate) struct SpaceLedger {
    disk: DiskIndex,
    capacity_bytes: u64,
    used_bytes: Mutex<u64>,
}

impl SpaceLedger {
    /// A ledger holding `used_bytes` already (the files found on opening a disk).
    pub(crate) fn new(disk: DiskIndex, capacity_bytes: u64, used_bytes: u64) -> SpaceLedger {
        SpaceLedger {
            disk,
            capacity_bytes,
            used_bytes: Mutex::new(used_bytes),
        }
    }

    pub(crate) fn space(&self) -> Space {
        let used = *self.used_bytes.lock().expect("space lock poisoned");
        Space {
            capacity_bytes: self.capacity_bytes,
            free_bytes: self.capacity_bytes.saturating_sub(used),
        }
    }

    /// Books `bytes` for a write, or refuses with `NoSpace` and books nothing.
    pub(crate) fn reserve(&self, bytes: u64) -> Result<(), DiskError> {
        let mut used = self.used_bytes.lock().expect("space lock poisoned");
        let free_bytes = self.capacity_bytes.saturating_sub(*used);
        if bytes > free_bytes {
            return Err(DiskError::NoSpace {
                disk: self.disk,
                needed_bytes: bytes,
                free_bytes,
            });
        }
        *used += bytes;
        Ok(())
    }

    /// Books all but `free_bytes` of what is free (a filler that makes the disk full); returns
    /// the bytes booked, 0 when no more than `free_bytes` were free.
    pub(crate) fn reserve_leaving(&self, free_bytes: u64) -> u64 {
        let mut used = self.used_bytes.lock().expect("space lock poisoned");
        let filler = self
            .capacity_bytes
            .saturating_sub(*used)
            .saturating_sub(free_bytes);
        *used += filler;
        filler
    }

    /// Swaps `released` bytes for `booked` ones without a capacity check: a crash that changed
    /// what the files hold (a dropped removal brings a file back whether or not it fits).
    pub(crate) fn rebook(&self, released: u64, booked: u64) {
        let mut used = self.used_bytes.lock().expect("space lock poisoned");
        assert!(
            *used >= released,
            "released {released} bytes of {used} used"
        );
        *used = *used - released + booked;
    }

    /// Gives back `bytes` of a file removed or replaced in a directory other handles may also
    /// write (other processes opening the same disk). This ledger counted the files it found
    /// when it sized them plus its own writes; a file another handle wrote since may be larger
    /// than what it holds, so the release stops at zero instead of asserting: the world, not
    /// a broken caller.
    pub(crate) fn release_file(&self, bytes: u64) {
        let mut used = self.used_bytes.lock().expect("space lock poisoned");
        *used = used.saturating_sub(bytes);
    }

    /// Gives back `bytes` of a failed write or a removed or replaced file.
    pub(crate) fn release(&self, bytes: u64) {
        let mut used = self.used_bytes.lock().expect("space lock poisoned");
        assert!(*used >= bytes, "released {bytes} bytes of {used} used");
        *used -= bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_that_does_not_fit_is_refused_and_books_nothing() {
        let ledger = SpaceLedger::new(3, 100, 40);
        assert!(matches!(
            ledger.reserve(61),
            Err(DiskError::NoSpace {
                disk: 3,
                needed_bytes: 61,
                free_bytes: 60
            })
        ));
        assert_eq!(ledger.space().free_bytes, 60);
        ledger.reserve(60).expect("exactly the free bytes fit");
        assert_eq!(ledger.space().free_bytes, 0);
        ledger.release(100);
        assert_eq!(ledger.space().free_bytes, 100);
    }

    #[test]
    fn a_disk_holding_more_than_its_capacity_reports_no_free_space() {
        let ledger = SpaceLedger::new(0, 10, 25);
        assert_eq!(
            ledger.space(),
            Space {
                capacity_bytes: 10,
                free_bytes: 0
            }
        );
        assert!(ledger.reserve(1).is_err());
    }
}
