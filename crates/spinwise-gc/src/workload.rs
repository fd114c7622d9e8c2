//! Seeded synthetic request streams with the shape of the slides' traces: Poisson arrivals at a
//! mean rate, exponentially distributed request sizes with a mean, a read share, and offsets
//! uniform over the logical space (DiskSim's synthetic generator draws the same kinds of
//! distributions; the traces themselves are not public).
//!
//! Invariant: a stream is a function of (workload, logical pages, page size, seed): the same
//! inputs give the same requests in the same order.

use crate::GcError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    pub name: &'static str,
    pub mean_request_bytes: f64,
    /// Share of requests that are reads, 0 to 1.
    pub read_fraction: f64,
    pub arrivals_per_s: f64,
}

/// The slides' four traces (Lee et al., "Workloads"): mean request size, read share, rate.
pub const TRACES: &[Workload] = &[
    Workload {
        name: "financial",
        mean_request_bytes: 7.09 * 1024.0,
        read_fraction: 0.1892,
        arrivals_per_s: 47.19,
    },
    Workload {
        name: "cello",
        mean_request_bytes: 7.06 * 1024.0,
        read_fraction: 0.1963,
        arrivals_per_s: 74.24,
    },
    Workload {
        name: "tpc-h",
        mean_request_bytes: 31.62 * 1024.0,
        read_fraction: 0.9180,
        arrivals_per_s: 172.73,
    },
    Workload {
        name: "openmail",
        mean_request_bytes: 9.49 * 1024.0,
        read_fraction: 0.6330,
        arrivals_per_s: 846.62,
    },
];

/// The largest request the generator makes, in pages (a draw above it is cut to it).
pub const MAX_REQUEST_PAGES: u32 = 256;

/// One host request: `pages` logical pages from `first_page`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    pub arrival_us: f64,
    pub read: bool,
    pub first_page: u32,
    pub pages: u32,
}

impl Workload {
    pub fn trace(name: &str) -> Option<Workload> {
        TRACES.iter().copied().find(|w| w.name == name)
    }

    pub fn validate(&self) -> Result<(), GcError> {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !(positive(self.mean_request_bytes) && positive(self.arrivals_per_s)) {
            return Err(GcError::Invalid(format!(
                "{}: request size and arrival rate must be positive",
                self.name
            )));
        }
        if !(0.0..=1.0).contains(&self.read_fraction) {
            return Err(GcError::Invalid(format!(
                "{}: read share {} is not 0 to 1",
                self.name, self.read_fraction
            )));
        }
        Ok(())
    }
}

/// An endless stream of requests over `logical_pages` pages of `page_bytes`.
pub struct Stream {
    workload: Workload,
    logical_pages: u32,
    page_bytes: f64,
    rng: ChaCha8Rng,
    clock_us: f64,
}

impl Stream {
    pub fn new(workload: Workload, logical_pages: u32, page_bytes: u32, seed: u64) -> Stream {
        Stream {
            workload,
            logical_pages,
            page_bytes: f64::from(page_bytes),
            rng: ChaCha8Rng::seed_from_u64(seed),
            clock_us: 0.0,
        }
    }

    /// An exponential draw with `mean` (1 - U is in (0, 1], so the logarithm is finite).
    fn exponential(&mut self, mean: f64) -> f64 {
        -(1.0 - self.rng.random::<f64>()).ln() * mean
    }

    pub fn next_request(&mut self) -> Request {
        self.clock_us += self.exponential(1e6 / self.workload.arrivals_per_s);
        let bytes = self.exponential(self.workload.mean_request_bytes);
        let pages = ((bytes / self.page_bytes).ceil() as u32).clamp(1, MAX_REQUEST_PAGES);
        let pages = pages.min(self.logical_pages);
        let first_page = self.rng.random_range(0..=self.logical_pages - pages);
        let read = self.rng.random::<f64>() < self.workload.read_fraction;
        Request {
            arrival_us: self.clock_us,
            read,
            first_page,
            pages,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_has_the_workloads_rate_read_share_and_size() {
        let cello = Workload::trace("cello").unwrap();
        let mut stream = Stream::new(cello, 50_000, 4096, 7);
        let requests: Vec<Request> = (0..100_000).map(|_| stream.next_request()).collect();
        let seconds = requests.last().unwrap().arrival_us / 1e6;
        let rate = requests.len() as f64 / seconds;
        assert!(
            (rate / cello.arrivals_per_s - 1.0).abs() < 0.02,
            "rate {rate}"
        );
        let reads = requests.iter().filter(|r| r.read).count() as f64 / requests.len() as f64;
        assert!(
            (reads - cello.read_fraction).abs() < 0.01,
            "read share {reads}"
        );
        // Pages are sizes rounded up: the mean in pages is a little above bytes / 4096.
        let mean_pages =
            requests.iter().map(|r| f64::from(r.pages)).sum::<f64>() / requests.len() as f64;
        assert!((2.0..2.8).contains(&mean_pages), "mean pages {mean_pages}");
        assert!(requests.iter().all(|r| r.first_page + r.pages <= 50_000));
    }

    #[test]
    fn the_same_seed_gives_the_same_stream() {
        let financial = Workload::trace("financial").unwrap();
        let mut a = Stream::new(financial, 1000, 4096, 3);
        let mut b = Stream::new(financial, 1000, 4096, 3);
        for _ in 0..1000 {
            assert_eq!(a.next_request(), b.next_request());
        }
    }

    #[test]
    fn a_workload_out_of_range_is_refused() {
        let bad = Workload {
            read_fraction: 1.5,
            ..TRACES[0]
        };
        assert!(bad.validate().is_err());
        let zero_rate = Workload {
            arrivals_per_s: 0.0,
            ..TRACES[0]
        };
        assert!(zero_rate.validate().is_err());
    }
}
