//! The store's clock: microseconds on a monotonic time line, the `now_us` every scheduler call
//! carries (spinwise-sched reads no clock; the simulator passes model time, the store this).
//!
//! [`SystemClock`] is the only reader of the wall clock in the store: it counts the time since it
//! was made on [`std::time::Instant`], which never goes back. [`ManualClock`] is moved by hand, for
//! tests that want exact timings (a test disk that "takes" 20 s to spin up advances it by 20 s).
//!
//! Invariant: `now_us` never decreases between two calls on the same clock, from any thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A monotonic microsecond clock shared by the driver, its blocking tasks and the callers.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Microseconds since the clock's origin; never less than a previous answer.
    fn now_us(&self) -> u64;
}

/// Real time since the clock was made.
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

impl Clock for SystemClock {
    fn now_us(&self) -> u64 {
        // u64 microseconds last 584,000 years; saturate rather than wrap.
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

/// A clock that moves only when told: starts at 0, [`ManualClock::advance_us`] moves it on.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_us: AtomicU64,
}

impl ManualClock {
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// Moves the clock `delta_us` forward (saturating at `u64::MAX`); returns the new time.
    pub fn advance_us(&self, delta_us: u64) -> u64 {
        let previous = self
            .now_us
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(delta_us))
            })
            .expect("the update always returns Some");
        previous.saturating_add(delta_us)
    }
}

impl Clock for ManualClock {
    fn now_us(&self) -> u64 {
        self.now_us.load(Ordering::SeqCst)
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
    fn the_system_clock_never_goes_back() {
        let clock = SystemClock::new();
        let mut last_us = clock.now_us();
        for _ in 0..1000 {
            let now_us = clock.now_us();
            assert!(now_us >= last_us);
            last_us = now_us;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(clock.now_us() >= last_us + 2000);
    }
}
