//! The time line a blocking thread waits on: the emulated disk's latencies and throttle, and the
//! store's column threads. [`WallTimeline`] is the wall clock (what every emulated disk used
//! before there was a choice, and still the default); a caller may give another, such as the
//! cross-validation's discrete-event virtual time (`spinwise-cli`'s `virtual_time`), where a
//! wait ends when the run's time reaches it, not when the host's does.
//!
//! Invariants: `now_us` never decreases; `sleep_until_us(at_us, _)` returns only once
//! `now_us() >= at_us`; a wake given to `schedule_wake` runs at most once, and only once
//! `now_us() >= at_us`. `order` only breaks ties between waits ending at one instant (a
//! timeline that runs waits one at a time wakes equal instants in increasing `order`). The
//! orders in use: a disk's waits its index; the store's read path `1 << 32 | thread` for a
//! standby's grace and `2 << 32 | blob` for a read job's start.

use std::time::{Duration, Instant};

/// Something that wakes one waiter (a condvar's notify), run by the timeline.
pub type Wake = Box<dyn FnOnce() + Send>;

/// A time line, in µs from its origin, that blocking threads wait on.
pub trait Timeline: Send + Sync + std::fmt::Debug {
    /// Microseconds since the time line's origin; never less than a previous answer.
    fn now_us(&self) -> u64;

    /// Blocks the calling thread until `now_us() >= at_us`. `order` ranks this wait among those
    /// ending at the same instant (a disk passes its index).
    fn sleep_until_us(&self, at_us: u64, order: u64);

    /// Runs `wake` once `now_us() >= at_us`, from another thread, and answers true; or answers
    /// false (dropping `wake`) when this time line does not run wakes, and the caller waits with
    /// a timeout of its own (the wall clock's condvars already can).
    fn schedule_wake(&self, at_us: u64, order: u64, wake: Wake) -> bool;

    /// Whether waits on this time line end by the host's clock (so a caller may use the
    /// host's own timed waits instead).
    fn is_wall(&self) -> bool {
        false
    }
}

/// The wall clock, from when it was made.
#[derive(Debug)]
pub struct WallTimeline {
    origin: Instant,
}

impl WallTimeline {
    pub fn new() -> WallTimeline {
        WallTimeline {
            origin: Instant::now(),
        }
    }
}

impl Default for WallTimeline {
    fn default() -> WallTimeline {
        WallTimeline::new()
    }
}

impl Timeline for WallTimeline {
    fn now_us(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn sleep_until_us(&self, at_us: u64, _order: u64) {
        let now_us = self.now_us();
        if at_us > now_us {
            std::thread::sleep(Duration::from_micros(at_us - now_us));
        }
    }

    fn schedule_wake(&self, _at_us: u64, _order: u64, _wake: Wake) -> bool {
        false
    }

    fn is_wall(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wall_timeline_sleeps_until_its_deadline_and_runs_no_wakes() {
        let timeline = WallTimeline::new();
        let start_us = timeline.now_us();
        timeline.sleep_until_us(start_us + 2_000, 0);
        assert!(timeline.now_us() >= start_us + 2_000);
        assert!(!timeline.schedule_wake(0, 0, Box::new(|| {})));
        assert!(timeline.is_wall());
    }
}
