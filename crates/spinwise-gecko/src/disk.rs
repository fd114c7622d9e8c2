//! A disk whose cost of interleaving streams is positioning (issue 33, item 5): a request
//! transfers its pages at the sequential bandwidth, and pays a seek plus half a rotation first
//! unless it starts exactly where the previous request ended. Two streams that alternate on one
//! disk therefore pay a positioning per request; one stream alone pays none.
//!
//! The positioning cost is constant, not a function of distance: the slides give no seek
//! curve, and the interleavings that matter here (the log's tail against its head, a write
//! against a random read) jump across a large share of the disk, where the average seek is the
//! usual figure. A constant also makes results independent of the scaled-down capacity the
//! simulations use (docs/gecko.md, "Parameters").
//!
//! Invariant: a disk's clock only moves forward (`busy_until_s` is monotone), and its head is
//! where its last request ended.

use crate::{GeckoError, require};

/// Bytes per page: the log's unit of mapping (the slides' 4 KiB pages).
pub const PAGE_BYTES: u64 = 4096;

/// What a disk costs. [`DiskParams::WD_10K`] is the slides' drive as we assume it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskParams {
    /// Sequential transfer rate, bytes per second.
    pub bandwidth_bytes_per_s: f64,
    /// Average seek, charged when a request does not start where the last one ended.
    pub seek_ms: f64,
    /// Rotational latency charged with every seek (half a revolution on average).
    pub half_rotation_ms: f64,
}

impl DiskParams {
    /// The slides' WD 600 GB 2.5" 10K RPM SATA drive, as we assume it (the slides give no
    /// datasheet numbers): 120 MB/s sequential, where their "max sequential throughput of
    /// 1 disk" line sits on a 0-250 MB/s axis (2 disks near 240); 4.2 ms average seek, the
    /// usual figure for 10K RPM drives of that family; 3 ms, half a revolution at 10,000 RPM.
    pub const WD_10K: DiskParams = DiskParams {
        bandwidth_bytes_per_s: 120e6,
        seek_ms: 4.2,
        half_rotation_ms: 3.0,
    };

    pub fn validate(&self) -> Result<(), GeckoError> {
        require(
            self.bandwidth_bytes_per_s.is_finite() && self.bandwidth_bytes_per_s > 0.0,
            || {
                format!(
                    "disk bandwidth must be positive, got {}",
                    self.bandwidth_bytes_per_s
                )
            },
        )?;
        for (name, value) in [
            ("seek_ms", self.seek_ms),
            ("half_rotation_ms", self.half_rotation_ms),
        ] {
            require(value.is_finite() && value >= 0.0, || {
                format!("disk {name} must be zero or positive, got {value}")
            })?;
        }
        Ok(())
    }

    /// Seconds to move the head to a request that does not continue the last one.
    pub fn positioning_s(&self) -> f64 {
        (self.seek_ms + self.half_rotation_ms) / 1e3
    }

    /// Seconds to transfer `pages` sequentially.
    pub fn transfer_s(&self, pages: u64) -> f64 {
        (pages * PAGE_BYTES) as f64 / self.bandwidth_bytes_per_s
    }
}

/// One disk's state on the simulated clock.
#[derive(Clone, Debug)]
pub struct Disk {
    pub params: DiskParams,
    /// The page just after the last one transferred.
    head_page: u64,
    busy_until_s: f64,
    /// Requests that paid a positioning.
    pub positionings: u64,
    pub pages_transferred: u64,
}

impl Disk {
    pub fn new(params: DiskParams) -> Disk {
        Disk {
            params,
            head_page: 0,
            busy_until_s: 0.0,
            positionings: 0,
            pages_transferred: 0,
        }
    }

    /// Serves `pages` from `start_page`, beginning no earlier than `now_s`; returns when it
    /// completes and whether it paid a positioning.
    pub fn serve(&mut self, now_s: f64, start_page: u64, pages: u64) -> (f64, bool) {
        let begin_s = now_s.max(self.busy_until_s);
        let moved = start_page != self.head_page;
        let positioning_s = if moved {
            self.positionings += 1;
            self.params.positioning_s()
        } else {
            0.0
        };
        let done_s = begin_s + positioning_s + self.params.transfer_s(pages);
        assert!(
            done_s >= self.busy_until_s,
            "a disk's clock never runs back"
        );
        self.busy_until_s = done_s;
        self.head_page = start_page + pages;
        self.pages_transferred += pages;
        (done_s, moved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_that_continues_the_last_pays_no_positioning() {
        let mut disk = Disk::new(DiskParams::WD_10K);
        let (first_s, moved) = disk.serve(0.0, 0, 32);
        assert!(!moved, "the head starts at page 0");
        let (second_s, moved) = disk.serve(first_s, 32, 32);
        assert!(!moved);
        let transfer_s = DiskParams::WD_10K.transfer_s(32);
        assert!((second_s - 2.0 * transfer_s).abs() < 1e-12);
    }

    #[test]
    fn alternating_between_two_places_pays_a_seek_and_half_a_rotation_each_time() {
        let mut disk = Disk::new(DiskParams::WD_10K);
        let mut now_s = 0.0;
        for i in 0..10u64 {
            let start_page = if i % 2 == 0 {
                1_000_000 + i * 32
            } else {
                i * 32
            };
            now_s = disk.serve(now_s, start_page, 32).0;
        }
        assert_eq!(disk.positionings, 10);
        let expected_s = 10.0 * (0.0072 + DiskParams::WD_10K.transfer_s(32));
        assert!((now_s - expected_s).abs() < 1e-9, "{now_s} vs {expected_s}");
    }

    #[test]
    fn bad_parameters_are_refused_not_panicked_on() {
        let bad = DiskParams {
            bandwidth_bytes_per_s: 0.0,
            ..DiskParams::WD_10K
        };
        assert!(bad.validate().is_err());
        let bad = DiskParams {
            seek_ms: f64::NAN,
            ..DiskParams::WD_10K
        };
        assert!(bad.validate().is_err());
        assert!(DiskParams::WD_10K.validate().is_ok());
    }
}
