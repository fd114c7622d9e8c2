//! Restore tiers: what RestoreObject's `Tier` means on a rack whose disks sleep, and the wait
//! of a `Bulk` restore for a spin-up that happens anyway. docs/s3.md "Restore tiers" describes
//! the behaviour.
//!
//! - `Standard` (the default) queues the restore's read at once; the scheduler batches it with
//!   every other read of the object's group.
//! - `Expedited` queues its read at once as an expedited scheduler request
//!   ([`ReadPriority::Expedited`]): ahead of every standard read, its group brought up next. At
//!   most `restore_expedited_max_ongoing` run at once and `restore_expedited_per_hour` start an
//!   hour (`ExpeditedTokens`); one more is refused with 503
//!   GlacierExpeditedRetrievalNotAvailable, as S3 answers when it lacks Expedited capacity.
//! - `Bulk` queues nothing until the object's group is up (spinning up or active) for other
//!   work — a GET, another restore, a migration, a scrub — and then rides that spin-up, or until
//!   its start-by time (request time + `restore_bulk_wait_s`) passes and it queues its read
//!   anyway; the spin-up that read causes wakes every other Bulk restore of that group, so they
//!   share it. A Bulk restore therefore never costs a spin-up of its own before its deadline.
//!   The wait is the rack engine's deferral (spinwise-engine's `Engine::defer`, through the
//!   store driver's `submit_deferred`): the restore defers a zero-byte job for the object's
//!   group with its start-by time, and queues its read when the engine starts that job (the
//!   group is then up). The engine holds the rule, so the simulator's Bulk reads are the same.
//!
//! Invariants: the wait holds the restorer only weakly (a stopping server is not kept alive by
//! restores waiting for hours; the driver's shutdown withdraws the deferred job, and start-up
//! resumes the wait with the same start-by time, derived from the stored request time). The
//! start-by time is on the store's calendar; the driver runs on its own clock (the same clock in
//! a server; real time under a test's manual store clock), so the job's start-by is converted to
//! the driver's clock, and the wait also ends when the store's clock reaches it: then the read
//! is queued anyway and the deferred job rides the spin-up it causes.

use crate::restore::Restorer;
use spinwise_catalog::GroupIndex;
use spinwise_store::driver::{GroupDisks, Job, Kind, Purpose, Rejected};
use spinwise_store::{ReadPriority, SqliteStore};
use std::str::FromStr;
use std::sync::Weak;
use std::time::Duration;

/// RestoreObject's `Tier`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RestoreTier {
    /// Queued at once, ahead of the standard reads (a bounded number at a time).
    Expedited,
    /// Queued at once (S3's default when no Tier is given).
    #[default]
    Standard,
    /// Waits for a spin-up of the object's group that happens anyway, up to its start-by time.
    Bulk,
}

impl RestoreTier {
    /// The name S3 uses, which is also how the restores table stores it.
    pub fn as_str(self) -> &'static str {
        match self {
            RestoreTier::Expedited => "Expedited",
            RestoreTier::Standard => "Standard",
            RestoreTier::Bulk => "Bulk",
        }
    }
}

impl RestoreTier {
    /// How urgently the restore's read is submitted once it starts (a Bulk restore has waited
    /// for its ride by then and reads at Standard).
    pub fn read_priority(self) -> ReadPriority {
        match self {
            RestoreTier::Expedited => ReadPriority::Expedited,
            RestoreTier::Standard | RestoreTier::Bulk => ReadPriority::Standard,
        }
    }
}

impl FromStr for RestoreTier {
    type Err = String;

    fn from_str(text: &str) -> Result<RestoreTier, String> {
        match text {
            "Expedited" => Ok(RestoreTier::Expedited),
            "Standard" => Ok(RestoreTier::Standard),
            "Bulk" => Ok(RestoreTier::Bulk),
            other => Err(format!(
                "the restore tier must be Expedited, Standard or Bulk, not `{other}`"
            )),
        }
    }
}

/// Why a Bulk restore stopped waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ride {
    /// The object's group is up for other work: the read joins it.
    SpinUp,
    /// The start-by time passed: the read is queued and may spin the group up.
    Deadline,
    /// The server is stopping (the restorer or the driver is gone); start-up resumes the wait.
    Stopped,
}

/// The group holding a migrated object's blob; `None` for a staged object, a key gone, or a
/// blob the catalog no longer has (the restore's read then reports what happened).
pub(crate) async fn group_of(store: &SqliteStore, store_key: &str) -> Option<GroupIndex> {
    store.migrated_group(store_key).await.ok().flatten()
}

/// How long a Bulk restore waits before deferring again when the engine holds its limit of
/// deferred jobs (`DEFAULT_DEFERRED_MAX`, a million): that many restores waiting is a flood the
/// restorer's own `restore_max_ongoing` normally prevents, and a minute lets some drain.
const DEFERRAL_FULL_RETRY: Duration = Duration::from_secs(60);

/// Waits until `group` is up for other work or `start_by_unix_ms` (the store's calendar time)
/// has passed: defers a zero-byte job for `group` in the driver and waits for it to start.
pub(crate) async fn wait_for_spin_up(
    restorer: Weak<Restorer>,
    group: GroupIndex,
    start_by_unix_ms: i64,
) -> Ride {
    loop {
        let (handle, clock, start_by_us, driver_start_by_us) = {
            let Some(strong) = restorer.upgrade() else {
                return Ride::Stopped;
            };
            let store = strong.store();
            // Held strongly (unlike the restorer): a clock keeps nothing else alive.
            let clock = store.clock().clone();
            let driver = store.rack_io().driver.clone();
            drop(strong);
            let left_ms = start_by_unix_ms.saturating_sub(clock.unix_ms()).max(0);
            let left_us = u64::try_from(left_ms).unwrap_or(0).saturating_mul(1000);
            let start_by_us = clock.now_us().saturating_add(left_us);
            let job =
                Job::new(group, 0, Kind::Client, |_: &GroupDisks| ()).for_purpose(Purpose::Read);
            // The driver's clock may not be the store's (see the module's invariants).
            let driver_start_by_us = driver.now_us().saturating_add(left_us);
            match driver.submit_deferred(job, driver_start_by_us).await {
                Ok(handle) => (handle, clock, start_by_us, driver_start_by_us),
                Err(Rejected::DeferralFull { held }) => {
                    tracing::warn!(
                        held,
                        group,
                        "the engine holds its limit of deferred jobs; a bulk restore waits a minute"
                    );
                    clock.sleep(DEFERRAL_FULL_RETRY).await;
                    continue;
                }
                Err(_) => return Ride::Stopped,
            }
        };
        return tokio::select! {
            started = handle.wait() => match started {
                // Started at its start-by: its own spin-up (or one that began just before).
                Ok(done) if done.timing.started_us >= driver_start_by_us => Ride::Deadline,
                Ok(_) => Ride::SpinUp,
                // Withdrawn by the driver's shutdown, or the driver died.
                Err(_) => Ride::Stopped,
            },
            // The store's clock reached the start-by first: the read goes anyway, and the
            // deferred job rides the spin-up it causes.
            () = clock.sleep_until_us(start_by_us) => Ride::Deadline,
        };
    }
}

/// The start-by time of a restore of `tier` requested at `requested_unix_ms`: at once unless
/// Bulk, which waits up to `bulk_wait_s`.
pub(crate) fn start_by_unix_ms(tier: RestoreTier, requested_unix_ms: i64, bulk_wait_s: u64) -> i64 {
    match tier {
        RestoreTier::Bulk => {
            let wait_ms = i64::try_from(bulk_wait_s.saturating_mul(1000)).unwrap_or(i64::MAX);
            requested_unix_ms.saturating_add(wait_ms)
        }
        RestoreTier::Expedited | RestoreTier::Standard => requested_unix_ms,
    }
}

/// The rate limit on Expedited restores: a token bucket refilled at `per_hour` tokens an hour,
/// holding at most `burst`; each Expedited restore started takes one. The limit on ongoing
/// Expedited restores bounds a burst but not a steady stream, and a steady stream is what hurts
/// the other reads (`spinwise experiment expedited-restores`: on the pelican rack, standard reads
/// slowed more than twofold from about 0.1 Expedited reads a second). Kept in memory: a restart
/// starts with a full bucket.
#[derive(Debug)]
pub(crate) struct ExpeditedTokens {
    per_hour: u64,
    burst: f64,
    tokens: f64,
    /// When the bucket was last topped up, µs of the store's clock.
    refilled_us: u64,
}

impl ExpeditedTokens {
    /// A full bucket at `now_us` (the store's clock); `burst` is at least 1 (0 per hour refuses
    /// every Expedited restore).
    pub(crate) fn new(per_hour: u64, burst: u64, now_us: u64) -> ExpeditedTokens {
        let burst = burst.max(1) as f64;
        ExpeditedTokens {
            per_hour,
            burst,
            tokens: burst,
            refilled_us: now_us,
        }
    }

    /// Takes a token at `now_us` (the store's clock), or says in how many whole seconds the
    /// next one comes (`None`: never, the rate is 0).
    pub(crate) fn take(&mut self, now_us: u64) -> Result<(), Option<u64>> {
        if self.per_hour == 0 {
            return Err(None);
        }
        let per_second = self.per_hour as f64 / 3600.0;
        let elapsed_s = now_us.saturating_sub(self.refilled_us) as f64 / 1e6;
        self.tokens = (self.tokens + elapsed_s * per_second).min(self.burst);
        self.refilled_us = self.refilled_us.max(now_us);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        Err(Some(((1.0 - self.tokens) / per_second).ceil() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_parse_their_s3_names_and_nothing_else() {
        for tier in [
            RestoreTier::Expedited,
            RestoreTier::Standard,
            RestoreTier::Bulk,
        ] {
            assert_eq!(tier.as_str().parse::<RestoreTier>(), Ok(tier));
        }
        assert!("bulk".parse::<RestoreTier>().is_err());
        assert!("".parse::<RestoreTier>().is_err());
    }

    #[test]
    fn only_bulk_restores_wait_and_then_for_the_configured_time() {
        assert_eq!(start_by_unix_ms(RestoreTier::Standard, 1_000, 60), 1_000);
        assert_eq!(start_by_unix_ms(RestoreTier::Expedited, 1_000, 60), 1_000);
        assert_eq!(start_by_unix_ms(RestoreTier::Bulk, 1_000, 60), 61_000);
        assert_eq!(
            start_by_unix_ms(RestoreTier::Bulk, 1_000, u64::MAX),
            i64::MAX
        );
    }

    #[test]
    fn expedited_tokens_allow_a_burst_then_one_per_refill_interval() {
        const SECOND_US: u64 = 1_000_000;
        let start = 5 * SECOND_US;
        let mut tokens = ExpeditedTokens::new(36, 2, start);
        assert_eq!(tokens.take(start), Ok(()));
        assert_eq!(tokens.take(start), Ok(()));
        // 36 an hour: one every 100 s.
        assert_eq!(tokens.take(start), Err(Some(100)));
        let later = start + 40 * SECOND_US;
        assert_eq!(tokens.take(later), Err(Some(60)));
        assert_eq!(tokens.take(start + 100 * SECOND_US), Ok(()));
        // A long pause refills only up to the burst.
        let much_later = start + 100_000 * SECOND_US;
        assert_eq!(tokens.take(much_later), Ok(()));
        assert_eq!(tokens.take(much_later), Ok(()));
        assert!(tokens.take(much_later).is_err());
    }

    #[test]
    fn a_zero_rate_refuses_every_expedited_restore() {
        let start_us = 0;
        let mut tokens = ExpeditedTokens::new(0, 8, start_us);
        assert_eq!(tokens.take(start_us), Err(None));
        assert_eq!(tokens.take(start_us + 86_400_000_000), Err(None));
    }
}
