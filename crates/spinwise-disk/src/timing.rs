//! How long a disk takes: the rack's latency distributions (spin-up, mount, unmount), sampled
//! per disk from a seeded ChaCha8 stream, and the bandwidth/seek that the model disk charges and
//! the emulated disk's throttle enforces.
//!
//! Invariants: a sample lies in its distribution's declared range and is never negative, by
//! `Distribution::sample_s` (spinwise-model), the simulator's own sampling, so a disk here and a
//! disk in the simulator draw latencies with one definition. The same seed and disk index give
//! the same sample sequence.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use spinwise_model::rack::DiskModel;
use spinwise_model::{DiskIndex, Distribution};

use crate::DiskError;
use crate::timeline::Timeline;

/// The timing of one disk, taken from the rack's [`DiskModel`].
#[derive(Clone, Debug, PartialEq)]
pub struct DiskTiming {
    pub spin_up_latency_s: Distribution,
    pub mount_latency_s: Distribution,
    pub unmount_latency_s: Distribution,
    /// Reads and writes share it (the simulator's rule). Bytes per second, decimal MB × 10⁶.
    pub bandwidth_bytes_per_s: f64,
    /// Charged once per IO by the model disk (the emulated disk's real filesystem seeks itself).
    pub seek_s: f64,
}

impl DiskTiming {
    /// The rack's disk model: its latencies, `bandwidth_mb_per_s` × 10⁶ and `seek_ms` / 10³.
    pub fn from_model(model: &DiskModel) -> DiskTiming {
        DiskTiming {
            spin_up_latency_s: model.spin_up_latency_s.clone(),
            mount_latency_s: model.mount_latency_s.clone(),
            unmount_latency_s: model.unmount_latency_s.clone(),
            bandwidth_bytes_per_s: model.bandwidth_mb_per_s * 1e6,
            seek_s: model.seek_ms / 1e3,
        }
    }

    /// No latency, no seek, unbounded bandwidth: for tests that only check behaviour.
    pub fn instant() -> DiskTiming {
        let zero = Distribution::Fixed { value: 0.0 };
        DiskTiming {
            spin_up_latency_s: zero.clone(),
            mount_latency_s: zero.clone(),
            unmount_latency_s: zero,
            bandwidth_bytes_per_s: f64::INFINITY,
            seek_s: 0.0,
        }
    }

    /// Refuses timings the disks cannot honour (negative or NaN bandwidth or seek).
    pub(crate) fn check(&self) -> Result<(), DiskError> {
        let bandwidth_fine = self.bandwidth_bytes_per_s > 0.0;
        let seek_fine = self.seek_s.is_finite() && self.seek_s >= 0.0;
        if bandwidth_fine && seek_fine {
            Ok(())
        } else {
            Err(DiskError::BadConfig {
                reason: format!(
                    "bandwidth must be > 0 bytes/s and seek a finite time ≥ 0 s, got {} bytes/s and {} s",
                    self.bandwidth_bytes_per_s, self.seek_s
                ),
            })
        }
    }
}

/// The largest time factor: at 1,000 a 20 s spin-up takes five and a half hours, slower than
/// anyone emulates a rack. Past it the scaled latencies saturate a `Duration` and a disk's
/// thread sleeps for ever (`time_factor = 1e300` made every store command after one interrupted
/// flush hang, found 2026-12-01).
pub const MAX_TIME_FACTOR: f64 = 1_000.0;

/// Checks a time factor (0 = instant, 1 = the rack's real latencies, at most
/// [`MAX_TIME_FACTOR`]).
pub(crate) fn check_time_factor(time_factor: f64) -> Result<(), DiskError> {
    if time_factor.is_finite() && (0.0..=MAX_TIME_FACTOR).contains(&time_factor) {
        Ok(())
    } else {
        Err(DiskError::BadConfig {
            reason: format!(
                "time factor must be a number from 0 to {MAX_TIME_FACTOR}, got {time_factor}"
            ),
        })
    }
}

/// A disk's own ChaCha8 stream from a rack-wide `seed`: the index is mixed into the seed so the
/// disks of one rack draw independent streams from one number.
pub(crate) fn disk_stream(seed: u64, disk: DiskIndex) -> ChaCha8Rng {
    let mixed = seed ^ (u64::from(disk).wrapping_add(1)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ChaCha8Rng::seed_from_u64(mixed)
}

/// One disk's latency stream: a ChaCha8 RNG seeded from (seed, disk index), behind a mutex so
/// the disk stays `Sync`.
#[derive(Debug)]
pub(crate) struct LatencySampler {
    rng: Mutex<ChaCha8Rng>,
}

impl LatencySampler {
    pub(crate) fn new(seed: u64, disk: DiskIndex) -> LatencySampler {
        LatencySampler {
            rng: Mutex::new(disk_stream(seed, disk)),
        }
    }

    /// The sum of one sample of each distribution, in seconds.
    pub(crate) fn sample_total_s(&self, distributions: &[&Distribution]) -> f64 {
        let mut rng = self.rng.lock().expect("latency sampler lock poisoned");
        distributions.iter().map(|d| d.sample_s(&mut *rng)).sum()
    }

    /// Spin-up plus mount: how long a disk in standby takes to answer IO.
    pub(crate) fn spin_up_s(&self, timing: &DiskTiming) -> f64 {
        self.sample_total_s(&[&timing.spin_up_latency_s, &timing.mount_latency_s])
    }

    /// Unmount: how long a spin-down holds the disk before it is in standby.
    pub(crate) fn spin_down_s(&self, timing: &DiskTiming) -> f64 {
        self.sample_total_s(&[&timing.unmount_latency_s])
    }
}

/// Seconds as a `Duration`, saturating instead of panicking on huge values.
pub(crate) fn duration_from_s(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(Duration::MAX)
}

/// How far back a throttle booking may start, µs (see [`Throttle::reserve`]).
const THROTTLE_SLACK_US: u64 = 10_000;

/// Paces one disk's reads and writes together to `bytes_per_s`: each chunk reserves its
/// transfer time on a shared timeline, starting no earlier than the chunk's IO began, and the
/// operation waits for its reservations to end before moving on. So the host's own IO time
/// overlaps the paced time instead of adding to it, concurrent operations share the rate (as
/// the platters do), and an idle disk earns no credit. Bookings and waits are on the disk's
/// [`Timeline`]: the wall clock, or a virtual time line whose waits end when the run's time
/// reaches them.
#[derive(Debug)]
pub(crate) struct Throttle {
    bytes_per_s: f64,
    /// The disk's index: orders its waits among others ending at the same instant.
    disk: DiskIndex,
    timeline: Arc<dyn Timeline>,
    next_free_us: Mutex<u64>,
}

impl Throttle {
    pub(crate) fn new(
        bytes_per_s: f64,
        disk: DiskIndex,
        timeline: Arc<dyn Timeline>,
    ) -> Result<Throttle, DiskError> {
        if !(bytes_per_s.is_finite() && bytes_per_s > 0.0) {
            return Err(DiskError::BadConfig {
                reason: format!("throttle must be a finite rate > 0 bytes/s, got {bytes_per_s}"),
            });
        }
        let next_free_us = Mutex::new(timeline.now_us());
        Ok(Throttle {
            bytes_per_s,
            disk,
            timeline,
            next_free_us,
        })
    }

    /// Now on the throttle's time line, µs: when an IO begins.
    pub(crate) fn now_us(&self) -> u64 {
        self.timeline.now_us()
    }

    /// Books `bytes` whose IO began at `started_us` (or, for a chunk continuing an operation,
    /// when the previous chunk's booking ended); returns when the booking ends, µs. A booking
    /// continues the previous one when that ended at most [`THROTTLE_SLACK_US`] before
    /// `started_us`, so a sleep that woke late on a busy host does not lower a stream's rate; a
    /// disk idle for longer starts its booking at `started_us` and earns no credit. (It once
    /// earned the slack: every read's first IO was up to 10 ms early, which in a time-scaled
    /// cross-validation run made the store's small reads 15% faster than the disks they stand
    /// for.)
    pub(crate) fn reserve(&self, bytes: u64, started_us: u64) -> u64 {
        let transfer_us = (bytes as f64 / self.bytes_per_s * 1e6).round() as u64;
        let mut next_free_us = self.next_free_us.lock().expect("throttle lock poisoned");
        let streaming = next_free_us.saturating_add(THROTTLE_SLACK_US) >= started_us;
        let start_us = if streaming { *next_free_us } else { started_us };
        *next_free_us = start_us.saturating_add(transfer_us);
        *next_free_us
    }

    /// Waits until `deadline_us` (if any) on the throttle's time line.
    pub(crate) fn wait_until(&self, deadline_us: Option<u64>) {
        if let Some(deadline_us) = deadline_us {
            self.timeline
                .sleep_until_us(deadline_us, u64::from(self.disk));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::WallTimeline;

    #[test]
    fn samples_match_the_simulators_ranges_and_seeds() {
        let normal = Distribution::Normal {
            mean: 10.0,
            stddev: 1.0,
            min: 8.0,
            max: 14.0,
        };
        let first = LatencySampler::new(7, 3);
        let again = LatencySampler::new(7, 3);
        let other_disk = LatencySampler::new(7, 4);
        let a: Vec<f64> = (0..100).map(|_| first.sample_total_s(&[&normal])).collect();
        let b: Vec<f64> = (0..100).map(|_| again.sample_total_s(&[&normal])).collect();
        let c: Vec<f64> = (0..100)
            .map(|_| other_disk.sample_total_s(&[&normal]))
            .collect();
        assert_eq!(a, b, "same seed and disk give the same latencies");
        assert_ne!(a, c, "another disk draws another stream");
        assert!(a.iter().all(|s| (8.0..=14.0).contains(s)));
    }

    #[test]
    fn bad_time_factors_and_rates_are_refused() {
        assert!(check_time_factor(-0.1).is_err());
        assert!(check_time_factor(f64::NAN).is_err());
        assert!(check_time_factor(0.0).is_ok());
        let wall = || -> Arc<dyn Timeline> { Arc::new(WallTimeline::new()) };
        assert!(Throttle::new(0.0, 0, wall()).is_err());
        assert!(Throttle::new(f64::INFINITY, 0, wall()).is_err());
    }
}
