//! The store's time source, for the store and the S3 layer over it: microseconds on a monotonic
//! time line (`now_us`, what every scheduler call carries and every duration or deadline is
//! measured on), calendar time (`unix_ms`, what is written into rows and shown to clients:
//! Last-Modified, restore expiry dates, lifecycle day boundaries) and waiting on that time line
//! (`sleep_until_us`, every background loop's timer).
//!
//! [`SystemClock`] is the only reader of the wall clock in the store and the S3 layer: it counts
//! the time since it was made on [`std::time::Instant`], which never goes back, reads calendar
//! time from [`std::time::SystemTime`] and sleeps on tokio's timer. The server and the CLI use
//! it. [`ManualClock`] is moved by hand, for tests: its calendar time is where it started plus
//! how far it was advanced, and its sleepers wake when [`ManualClock::advance_us`] passes their
//! deadline, so a test that "waits a day" advances a day and never sleeps on the wall clock.
//!
//! A background loop that waits on the clock publishes, through a [`Pacing`], when it next
//! wakes each time it goes back to waiting; a test that advanced a [`ManualClock`] awaits
//! [`Paced::past`] to know the passes the advance made due are done, with no wall-clock wait.
//!
//! Invariants: `now_us` never decreases between two calls on the same clock, from any thread;
//! `sleep_until_us(at_us)` returns only once `now_us() >= at_us`; a loop publishes its next wake
//! only after its pass's effects are visible (rows written, report updated).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{Notify, watch};

/// A wait on a [`Clock`]'s time line.
pub type Sleep<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// A time source shared by the driver, its blocking tasks, the background loops and the callers.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Microseconds since the clock's origin; never less than a previous answer.
    fn now_us(&self) -> u64;

    /// Milliseconds since 1970-01-01 UTC: calendar time, for dates kept or shown.
    fn unix_ms(&self) -> i64;

    /// Microseconds since 1970-01-01 UTC (0 before): calendar time finer than
    /// [`Clock::unix_ms`], for the stamp a PUT writes into its staging record. By default the
    /// milliseconds, scaled.
    fn unix_us(&self) -> u64 {
        u64::try_from(self.unix_ms()).map_or(0, |ms| ms.saturating_mul(1000))
    }

    /// Resolves once `now_us()` has reached `at_us` (at once if it already has).
    fn sleep_until_us(&self, at_us: u64) -> Sleep<'_>;

    /// [`Clock::sleep_until_us`], ranked by `order` among waits ending at the same instant on a
    /// clock that runs them one at a time (a virtual one, where it then also waits when
    /// `at_us` is now); the wall clock ignores `order`.
    fn sleep_until_us_ordered(&self, at_us: u64, order: u64) -> Sleep<'_> {
        let _ = order;
        self.sleep_until_us(at_us)
    }

    /// The time line blocking threads wait on when this clock is not the host's (a virtual
    /// one): the read path measures and waits out its standbys' grace on it. `None`: the wall
    /// clock's, which the blocking threads' own timed waits follow.
    fn timeline(&self) -> Option<std::sync::Arc<dyn spinwise_disk::Timeline>> {
        None
    }

    /// Resolves once `duration` has passed on this clock.
    fn sleep(&self, duration: Duration) -> Sleep<'_> {
        let duration_us = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        self.sleep_until_us(self.now_us().saturating_add(duration_us))
    }
}

/// Real time: monotonic since the clock was made, calendar from the system, tokio's timer.
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    pub fn new() -> SystemClock {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> SystemClock {
        SystemClock::new()
    }
}

/// The wall clock's calendar time in milliseconds (0 before 1970, which no real clock shows):
/// [`SystemClock`]'s, and the offline recover tool's, which runs with no store to give a clock.
pub(crate) fn wall_unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

/// The wall clock's calendar time in microseconds (0 before 1970): [`SystemClock`]'s, and the
/// stamp of a record appended to a bare staging log (no store, so no store clock).
pub(crate) fn wall_unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)
        })
}

impl Clock for SystemClock {
    fn now_us(&self) -> u64 {
        // u64 microseconds last 584,000 years; saturate rather than wrap.
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn unix_ms(&self) -> i64 {
        wall_unix_ms()
    }

    fn unix_us(&self) -> u64 {
        wall_unix_us()
    }

    fn sleep_until_us(&self, at_us: u64) -> Sleep<'_> {
        // Relative to now on tokio's timer, which also honours a test's paused tokio time.
        let left = Duration::from_micros(at_us.saturating_sub(self.now_us()));
        Box::pin(tokio::time::sleep(left))
    }
}

/// A clock that moves only when told: starts at 0 µs (and, for calendar time, at the wall
/// clock's reading when made, so dates look real), [`ManualClock::advance_us`] moves it on and
/// wakes the sleepers it passes.
#[derive(Debug)]
pub struct ManualClock {
    now_us: AtomicU64,
    start_unix_ms: i64,
    /// Woken on every advance; each sleeper checks its own deadline.
    advanced: Notify,
}

impl Default for ManualClock {
    fn default() -> ManualClock {
        ManualClock::starting_at_unix_ms(wall_unix_ms())
    }
}

impl ManualClock {
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// A manual clock whose calendar time starts at `start_unix_ms`.
    pub fn starting_at_unix_ms(start_unix_ms: i64) -> ManualClock {
        ManualClock {
            now_us: AtomicU64::new(0),
            start_unix_ms,
            advanced: Notify::new(),
        }
    }

    /// Moves the clock `delta_us` forward (saturating at `u64::MAX`), wakes the sleepers whose
    /// deadline it reached; returns the new time.
    pub fn advance_us(&self, delta_us: u64) -> u64 {
        let previous = self
            .now_us
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(delta_us))
            })
            .expect("the update always returns Some");
        self.advanced.notify_waiters();
        previous.saturating_add(delta_us)
    }

    /// [`ManualClock::advance_us`] by a [`Duration`].
    pub fn advance(&self, delta: Duration) -> u64 {
        self.advance_us(u64::try_from(delta.as_micros()).unwrap_or(u64::MAX))
    }
}

impl Clock for ManualClock {
    fn now_us(&self) -> u64 {
        self.now_us.load(Ordering::SeqCst)
    }

    fn unix_ms(&self) -> i64 {
        let advanced_ms = i64::try_from(self.now_us() / 1000).unwrap_or(i64::MAX);
        self.start_unix_ms.saturating_add(advanced_ms)
    }

    fn unix_us(&self) -> u64 {
        let start_us = u64::try_from(self.start_unix_ms).map_or(0, |ms| ms.saturating_mul(1000));
        start_us.saturating_add(self.now_us())
    }

    fn sleep_until_us(&self, at_us: u64) -> Sleep<'_> {
        Box::pin(async move {
            loop {
                // Registered before the check, so an advance between the two is not missed.
                let advanced = self.advanced.notified();
                tokio::pin!(advanced);
                advanced.as_mut().enable();
                if self.now_us() >= at_us {
                    return;
                }
                advanced.await;
            }
        })
    }
}

/// The loop's side of its published next wake ([`pacing`]).
#[derive(Debug)]
pub struct Pacing {
    next_wake_us: watch::Sender<u64>,
}

/// The observers' side: a loop's next wake, in µs of its clock (0 until it first waits).
#[derive(Clone, Debug)]
pub struct Paced {
    next_wake_us: watch::Receiver<u64>,
}

/// A new pair, for one background loop.
pub fn pacing() -> (Pacing, Paced) {
    let (sender, receiver) = watch::channel(0);
    (
        Pacing {
            next_wake_us: sender,
        },
        Paced {
            next_wake_us: receiver,
        },
    )
}

impl Pacing {
    /// Publishes that the loop is done for now and waits until `at_us` (or an event).
    pub fn waiting_until(&self, at_us: u64) {
        self.next_wake_us.send_replace(at_us);
    }
}

impl Paced {
    /// Resolves once the loop has finished every pass due at `now_us` (it waits for a later
    /// time), or has ended.
    pub async fn past(&self, now_us: u64) {
        let mut next_wake_us = self.next_wake_us.clone();
        let _ = next_wake_us.wait_for(|&at_us| at_us > now_us).await;
    }

    /// Resolves once `done()` holds, checked now and after each time the loop goes back to
    /// waiting; `false` if the loop ended first and it still does not hold.
    pub async fn until(&self, mut done: impl FnMut() -> bool) -> bool {
        let mut next_wake_us = self.next_wake_us.clone();
        loop {
            if done() {
                return true;
            }
            if next_wake_us.changed().await.is_err() {
                return done();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced() {
        let clock = ManualClock::new();
        assert_eq!(clock.now_us(), 0);
        assert_eq!(clock.advance_us(20_000_000), 20_000_000);
        assert_eq!(clock.now_us(), 20_000_000);
        assert_eq!(clock.advance_us(u64::MAX), u64::MAX);
    }

    #[test]
    fn a_manual_clocks_calendar_time_moves_with_it() {
        let clock = ManualClock::starting_at_unix_ms(1_700_000_000_000);
        assert_eq!(clock.unix_ms(), 1_700_000_000_000);
        clock.advance(Duration::from_secs(86_400));
        assert_eq!(clock.unix_ms(), 1_700_000_000_000 + 86_400_000);
    }

    #[tokio::test]
    async fn a_manual_sleeper_wakes_when_an_advance_reaches_its_deadline_and_not_before() {
        let clock = std::sync::Arc::new(ManualClock::new());
        let sleeper = {
            let clock = clock.clone();
            tokio::spawn(async move { clock.sleep(Duration::from_secs(3600)).await })
        };
        tokio::task::yield_now().await;
        clock.advance(Duration::from_secs(3599));
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished(), "woke before its deadline");
        clock.advance(Duration::from_secs(1));
        sleeper.await.unwrap();
        assert!(clock.now_us() >= 3_600_000_000);
    }

    #[tokio::test]
    async fn a_paced_loop_is_past_a_time_once_it_waits_for_a_later_one() {
        let clock = std::sync::Arc::new(ManualClock::new());
        let (pacing, paced) = pacing();
        let passes = std::sync::Arc::new(AtomicU64::new(0));
        let task = {
            let (clock, passes) = (clock.clone(), passes.clone());
            tokio::spawn(async move {
                for _ in 0..3 {
                    let next_us = clock.now_us() + 1_000_000;
                    pacing.waiting_until(next_us);
                    clock.sleep_until_us(next_us).await;
                    passes.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        paced.past(0).await;
        assert_eq!(passes.load(Ordering::SeqCst), 0);
        let now_us = clock.advance_us(1_000_000);
        paced.past(now_us).await;
        assert_eq!(passes.load(Ordering::SeqCst), 1);
        // An advance past several wakes runs one pass: the loop waits from where it is.
        let now_us = clock.advance_us(10_000_000);
        paced.past(now_us).await;
        assert_eq!(passes.load(Ordering::SeqCst), 2);
        clock.advance_us(1_000_000);
        task.await.unwrap();
        paced.past(u64::MAX).await; // an ended loop is past every time
        assert!(paced.until(|| passes.load(Ordering::SeqCst) == 3).await);
    }

    #[test]
    fn the_system_clock_never_goes_back_and_reads_the_calendar() {
        let clock = SystemClock::new();
        let mut last_us = clock.now_us();
        for _ in 0..1000 {
            let now_us = clock.now_us();
            assert!(now_us >= last_us);
            last_us = now_us;
        }
        assert!(clock.unix_ms() >= wall_unix_ms() - 1000);
    }

    #[tokio::test]
    async fn a_system_sleep_returns_once_its_time_has_passed() {
        let clock = SystemClock::new();
        let before_us = clock.now_us();
        clock.sleep(Duration::from_millis(2)).await;
        assert!(clock.now_us() >= before_us + 2000);
    }
}
