//! Which k of a blob's k + r columns a migrated read takes, and the count of the store's reads
//! in progress on each disk that decides it.
//!
//! Why: a Pelican group's class serves several reads at once (`concurrent_requests_per_class`),
//! and each blob's k + r stacks sit on a different subset of the group's disks. A read that
//! always takes its data columns queues behind other reads on the disks they share while other
//! disks of the group idle. The choice here is where a read starts; the columns it does not
//! choose stand in for a chosen one that falls behind, stripe by stripe (`board.rs`), which is
//! what lifts a Pelican group at four reads from 82% to 97% of its disks (docs/BENCHMARKS.md,
//! "Least-busy columns"), as the simulator's pooled reads assume. A parity fragment standing in
//! costs a decode of its stripe; the CPU is cheap beside a disk that streams for two.
//!
//! The rule ([`least_busy_columns`]): the k columns whose disks have the fewest reads of this
//! store in progress; a disk that is not spun up for the read (failed, or withheld) only when
//! fewer than k others are; ties go to data columns (no decode), then to the lower column. A
//! read shorter than [`MIN_SPREAD_STRIPES`] stripes always takes the data columns its range
//! covers: a decode needs k fragments of a stripe, where a short range needs only a few.
//!
//! Invariants: a read's count on each disk it reads is taken under the same lock as its choice
//! (so reads that start together see each other) and given back exactly once, when its
//! [`ReadClaim`] drops, panic or early stop included; the choice depends only on the counts, so
//! it is deterministic for given counts.

use spinwise_model::DiskIndex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The fewest stripes a read must span before it may take parity columns instead of busy data
/// columns. Spreading reads the whole first and last stripes (a decode needs k fragments of
/// each), so at 8 stripes the extra bytes are at most a quarter of the read, and a disk shared
/// with one other read halves the read's speed.
pub const MIN_SPREAD_STRIPES: u64 = 8;

/// Reads of this store in progress per disk (indexed by rack disk index), and how many reads
/// of migrated objects this process has started.
#[derive(Debug)]
pub struct DiskReads {
    readers: Mutex<Vec<u32>>,
    started: AtomicU64,
    started_with_parity: AtomicU64,
}

/// Reads of migrated objects this process has started (`Store::status`, and the server's
/// metrics): all of them, and those that took a parity column in place of a busier or missing
/// data disk (and so decoded their stripes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadTotals {
    pub reads: u64,
    pub reads_with_parity: u64,
}

impl DiskReads {
    pub fn new(disks: usize) -> Arc<DiskReads> {
        Arc::new(DiskReads {
            readers: Mutex::new(vec![0; disks]),
            started: AtomicU64::new(0),
            started_with_parity: AtomicU64::new(0),
        })
    }

    /// Counts a read of a migrated object once its stripes are handed on (`with_parity`: it
    /// decoded a stripe from a parity fragment).
    pub(crate) fn count_read(&self, with_parity: bool) {
        self.started.fetch_add(1, Ordering::Relaxed);
        if with_parity {
            self.started_with_parity.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn totals(&self) -> ReadTotals {
        ReadTotals {
            reads: self.started.load(Ordering::Relaxed),
            reads_with_parity: self.started_with_parity.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<u32>> {
        // A panic while holding the lock cannot leave the counts half-updated (each update is
        // one loop of increments), so a poisoned lock's counts are still right.
        self.readers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads in progress on `disk` (0 for a disk the rack does not have).
    pub fn in_progress(&self, disk: DiskIndex) -> u32 {
        self.lock().get(disk as usize).copied().unwrap_or(0)
    }

    /// Counts one read on each of `disks` until the claim drops (a read that has chosen its
    /// columns; tests use it to make disks busy).
    pub fn claim(self: &Arc<Self>, disks: Vec<DiskIndex>) -> ReadClaim {
        count_on(&mut self.lock(), &disks);
        ReadClaim {
            reads: self.clone(),
            disks,
        }
    }

    /// Chooses the `k` least-busy of a blob's columns (`blob_disks` in column order; those for
    /// which `unavailable` holds last) and claims their disks in one step.
    pub fn choose(
        self: &Arc<Self>,
        blob_disks: &[DiskIndex],
        k: usize,
        unavailable: impl Fn(DiskIndex) -> bool,
    ) -> (Vec<usize>, ReadClaim) {
        let mut readers = self.lock();
        let loads: Vec<Option<u32>> = blob_disks
            .iter()
            .map(|&disk| {
                let count = readers.get(disk as usize).copied().unwrap_or(0);
                (!unavailable(disk)).then_some(count)
            })
            .collect();
        let columns = least_busy_columns(&loads, k);
        let disks: Vec<DiskIndex> = columns.iter().map(|&c| blob_disks[c]).collect();
        count_on(&mut readers, &disks);
        drop(readers);
        let claim = ReadClaim {
            reads: self.clone(),
            disks,
        };
        (columns, claim)
    }
}

/// Counts one more read on each of `disks` (a disk the rack lacks is ignored).
fn count_on(readers: &mut [u32], disks: &[DiskIndex]) {
    for &disk in disks {
        if let Some(count) = readers.get_mut(disk as usize) {
            *count += 1;
        }
    }
}

/// One read's count on the disks it reads; given back when dropped.
#[derive(Debug)]
pub struct ReadClaim {
    reads: Arc<DiskReads>,
    disks: Vec<DiskIndex>,
}

impl Drop for ReadClaim {
    fn drop(&mut self) {
        let mut readers = self.reads.lock();
        for &disk in &self.disks {
            if let Some(count) = readers.get_mut(disk as usize) {
                assert!(*count > 0, "disk {disk}: a read given back twice");
                *count -= 1;
            }
        }
    }
}

/// The `k` columns (ascending) with the lowest loads; `None` (a disk that cannot serve) sorts
/// after every count; ties: data columns (index < k) first, then the lower index. `loads` has
/// one entry per column, data columns first.
pub fn least_busy_columns(loads: &[Option<u32>], k: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..loads.len()).collect();
    order.sort_by_key(|&column| (loads[column].unwrap_or(u32::MAX), column >= k, column));
    let mut chosen: Vec<usize> = order.into_iter().take(k).collect();
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_disks_give_the_data_columns() {
        assert_eq!(least_busy_columns(&[Some(0); 5], 3), vec![0, 1, 2]);
    }

    #[test]
    fn a_busy_data_disk_is_replaced_by_the_first_idle_parity_column() {
        let loads = [Some(0), Some(2), Some(0), Some(0), Some(0)];
        assert_eq!(least_busy_columns(&loads, 3), vec![0, 2, 3]);
    }

    #[test]
    fn the_least_busy_win_even_when_every_disk_is_busy() {
        let loads = [Some(3), Some(1), Some(2), Some(1), Some(4)];
        assert_eq!(least_busy_columns(&loads, 3), vec![1, 2, 3]);
    }

    #[test]
    fn an_unavailable_disk_is_taken_only_when_fewer_than_k_others_remain() {
        let loads = [None, Some(9), Some(9), Some(9), Some(9)];
        assert_eq!(least_busy_columns(&loads, 3), vec![1, 2, 3]);
        let loads = [None, None, None, Some(0), Some(0)];
        assert_eq!(least_busy_columns(&loads, 3), vec![0, 3, 4]);
    }

    #[test]
    fn a_choice_claims_its_disks_until_the_claim_drops() {
        let reads = DiskReads::new(8);
        let held = reads.claim(vec![1]);
        let blob_disks = [1, 2, 3, 4, 5];
        let (columns, claim) = reads.choose(&blob_disks, 3, |_| false);
        assert_eq!(columns, vec![1, 2, 3]);
        for disk in [2, 3, 4] {
            assert_eq!(reads.in_progress(disk), 1, "disk {disk}");
        }
        assert_eq!(reads.in_progress(1), 1);
        assert_eq!(reads.in_progress(5), 0);
        // A second read takes the one idle disk, then the data columns among the busy.
        let (second, second_claim) = reads.choose(&blob_disks, 3, |_| false);
        assert_eq!(second, vec![0, 1, 4]);
        assert_eq!(reads.in_progress(1), 2);
        drop((claim, second_claim, held));
        assert!((0..8).all(|disk| reads.in_progress(disk) == 0));
    }

    #[test]
    fn a_disk_not_spun_up_is_read_around() {
        let reads = DiskReads::new(8);
        let (columns, _claim) = reads.choose(&[1, 2, 3, 4, 5], 3, |disk| disk == 2);
        assert_eq!(columns, vec![0, 2, 3]);
    }
}
