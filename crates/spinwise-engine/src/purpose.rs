//! What a driver job is for ([`Purpose`]) and what waits for a group when it spins up
//! ([`WaitingWork`]): the reason an operator reads in the log line of every spin-up ("3 reads,
//! oldest waited 42 s; 1 migration") instead of one fixed phrase.
//!
//! Invariants: [`WaitingWork`] is a fixed-size value (it rides in `Copy` announcements); its
//! counts are of jobs accepted and not yet started, taken when the spin-up starts or ends.

use std::fmt;

/// Why a job was submitted. The scheduler only knows client or rebuild ([`Kind`]); the store
/// knows the rest, and says it so a spin-up can be explained.
///
/// [`Kind`]: spinwise_sched::scheduler::Kind
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Purpose {
    /// A client read (GET, restore, copy source).
    Read,
    /// Writing a bundle or large object from staging into the group.
    Migration,
    /// Regenerating a failed disk's stripe stack.
    Rebuild,
    /// Rewriting a damaged stack in place (found by a read or a scrub).
    Repair,
    /// Verifying stored fragments.
    Scrub,
    /// Rewriting a blob without its deleted objects.
    Compaction,
    /// Removing a blob's stacks (an abandoned or emptied blob).
    Cleanup,
    /// Checking the group's disks (`store check`, start-up).
    Check,
}

impl Purpose {
    pub const ALL: [Purpose; 8] = [
        Purpose::Read,
        Purpose::Migration,
        Purpose::Rebuild,
        Purpose::Repair,
        Purpose::Scrub,
        Purpose::Compaction,
        Purpose::Cleanup,
        Purpose::Check,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// The noun for `count` jobs of this purpose.
    fn noun(self, count: u32) -> &'static str {
        let (one, many) = match self {
            Purpose::Read => ("read", "reads"),
            Purpose::Migration => ("migration", "migrations"),
            Purpose::Rebuild => ("rebuild", "rebuilds"),
            Purpose::Repair => ("repair", "repairs"),
            Purpose::Scrub => ("scrub", "scrubs"),
            Purpose::Compaction => ("compaction", "compactions"),
            Purpose::Cleanup => ("cleanup", "cleanups"),
            Purpose::Check => ("disk check", "disk checks"),
        };
        if count == 1 { one } else { many }
    }
}

/// The jobs queued for one group at one moment, by purpose, with how long the oldest of each
/// purpose had waited then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitingWork {
    /// Per [`Purpose`] (in [`Purpose::ALL`] order): jobs queued.
    jobs: [u32; Purpose::ALL.len()],
    /// Per [`Purpose`]: how long its oldest queued job had waited, in µs of the driver's clock.
    oldest_wait_us: [u64; Purpose::ALL.len()],
}

impl WaitingWork {
    /// Counts one job of `purpose` that has waited `waited_us`.
    pub fn add(&mut self, purpose: Purpose, waited_us: u64) {
        let index = purpose.index();
        self.jobs[index] += 1;
        self.oldest_wait_us[index] = self.oldest_wait_us[index].max(waited_us);
    }

    /// Jobs of `purpose` queued.
    pub fn jobs(&self, purpose: Purpose) -> u32 {
        self.jobs[purpose.index()]
    }

    /// How long the oldest queued job of `purpose` had waited (0 when there is none).
    pub fn oldest_wait_us(&self, purpose: Purpose) -> u64 {
        self.oldest_wait_us[purpose.index()]
    }

    /// Jobs of every purpose.
    pub fn total_jobs(&self) -> u32 {
        self.jobs.iter().sum()
    }
}

/// "3 reads, oldest waited 42 s; 1 migration, waited 0.1 s", or "no queued work".
impl fmt::Display for WaitingWork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for purpose in Purpose::ALL {
            let count = self.jobs(purpose);
            if count == 0 {
                continue;
            }
            if !first {
                f.write_str("; ")?;
            }
            first = false;
            let waited = if count == 1 {
                "waited"
            } else {
                "oldest waited"
            };
            write!(f, "{count} {}, {waited} ", purpose.noun(count))?;
            write_seconds(f, self.oldest_wait_us(purpose))?;
        }
        if first {
            f.write_str("no queued work")?;
        }
        Ok(())
    }
}

/// Seconds with the precision a person reads: "42 s", "3.5 s", "0.02 s".
pub(crate) fn write_seconds(f: &mut impl fmt::Write, us: u64) -> fmt::Result {
    let seconds = us as f64 / 1e6;
    if seconds >= 10.0 {
        write!(f, "{seconds:.0} s")
    } else if seconds >= 1.0 {
        write!(f, "{seconds:.1} s")
    } else {
        write!(f, "{seconds:.2} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_work_reads_as_counts_and_oldest_waits_by_purpose() {
        let mut work = WaitingWork::default();
        work.add(Purpose::Read, 42_000_000);
        work.add(Purpose::Read, 3_000_000);
        work.add(Purpose::Read, 41_600_000);
        work.add(Purpose::Migration, 120_000);
        assert_eq!(
            work.to_string(),
            "3 reads, oldest waited 42 s; 1 migration, waited 0.12 s"
        );
        assert_eq!(work.total_jobs(), 4);
        assert_eq!(work.oldest_wait_us(Purpose::Read), 42_000_000);
    }

    #[test]
    fn every_purpose_has_its_own_words_and_nothing_queued_says_so() {
        assert_eq!(WaitingWork::default().to_string(), "no queued work");
        let mut work = WaitingWork::default();
        for purpose in Purpose::ALL {
            work.add(purpose, 2_500_000);
        }
        assert_eq!(
            work.to_string(),
            "1 read, waited 2.5 s; 1 migration, waited 2.5 s; 1 rebuild, waited 2.5 s; \
             1 repair, waited 2.5 s; 1 scrub, waited 2.5 s; 1 compaction, waited 2.5 s; \
             1 cleanup, waited 2.5 s; 1 disk check, waited 2.5 s"
        );
    }
}
