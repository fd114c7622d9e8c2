//! Seeded synthetic request streams with the shape of the slides' traces: arrivals at a mean
//! rate, exponentially distributed request sizes with a mean, a read share, and offsets uniform
//! over the logical space (DiskSim's synthetic generator draws the same kinds of distributions;
//! the traces themselves are not public).
//!
//! Arrivals are Poisson ([`Arrivals::Poisson`], inter-arrival coefficient of variation 1) or
//! on/off bursts ([`Arrivals::Bursty`]): an interrupted Poisson process, a two-state
//! Markov-modulated Poisson process whose "off" state sends nothing. The slides call the traces
//! bursty but give no burst statistics, so a bursty workload names its two parameters (the
//! rate in a burst over the mean rate, and the mean requests per burst) and keeps the mean rate.
//!
//! Invariants: a stream is a function of (workload, logical pages, page size, seed): the same
//! inputs give the same requests in the same order; a Poisson stream draws exactly what it drew
//! before bursty arrivals existed (one draw per gap), so its requests are unchanged; every
//! arrival process has the workload's long-run mean rate.

use crate::GcError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    pub name: &'static str,
    pub mean_request_bytes: f64,
    /// Share of requests that are reads, 0 to 1.
    pub read_fraction: f64,
    /// The long-run mean rate, whatever the arrival process.
    pub arrivals_per_s: f64,
    pub arrivals: Arrivals,
}

/// The largest burst factor a bursty workload may ask for.
pub const MAX_BURST_FACTOR: f64 = 1000.0;

/// How requests arrive, at the workload's mean rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrivals {
    /// Exponential gaps with the mean rate.
    Poisson,
    /// On/off bursts (an interrupted Poisson process): in a burst requests arrive as a Poisson
    /// process at `burst_factor` times the mean rate; between bursts nothing arrives. Burst
    /// lengths are exponential with a mean of `mean_burst_requests / (burst_factor × rate)`,
    /// gaps between bursts exponential with `burst_factor - 1` times that mean, so a burst is
    /// on a `1 / burst_factor` share of the time and the long-run rate is the mean rate.
    /// `burst_factor` 1 is Poisson.
    Bursty {
        burst_factor: f64,
        mean_burst_requests: f64,
    },
}

impl Arrivals {
    /// "poisson", or "bursty ×B, L requests a burst".
    pub fn label(&self) -> String {
        match self {
            Arrivals::Poisson => "poisson".into(),
            Arrivals::Bursty {
                burst_factor,
                mean_burst_requests,
            } => format!("bursty x{burst_factor} ({mean_burst_requests} requests a burst)"),
        }
    }
}

/// The slides' four traces (Lee et al., "Workloads"): mean request size, read share, rate.
pub const TRACES: &[Workload] = &[
    Workload {
        name: "financial",
        mean_request_bytes: 7.09 * 1024.0,
        read_fraction: 0.1892,
        arrivals_per_s: 47.19,
        arrivals: Arrivals::Poisson,
    },
    Workload {
        name: "cello",
        mean_request_bytes: 7.06 * 1024.0,
        read_fraction: 0.1963,
        arrivals_per_s: 74.24,
        arrivals: Arrivals::Poisson,
    },
    Workload {
        name: "tpc-h",
        mean_request_bytes: 31.62 * 1024.0,
        read_fraction: 0.9180,
        arrivals_per_s: 172.73,
        arrivals: Arrivals::Poisson,
    },
    Workload {
        name: "openmail",
        mean_request_bytes: 9.49 * 1024.0,
        read_fraction: 0.6330,
        arrivals_per_s: 846.62,
        arrivals: Arrivals::Poisson,
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
        if let Arrivals::Bursty {
            burst_factor,
            mean_burst_requests,
        } = self.arrivals
        {
            let factor_ok =
                burst_factor.is_finite() && (1.0..=MAX_BURST_FACTOR).contains(&burst_factor);
            let length_ok = mean_burst_requests.is_finite() && mean_burst_requests >= 1.0;
            if !(factor_ok && length_ok) {
                return Err(GcError::Invalid(format!(
                    "{}: a burst factor must be 1 to {MAX_BURST_FACTOR} and a burst at least 1 request on average, got {burst_factor} and {mean_burst_requests}",
                    self.name
                )));
            }
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
    /// What is left of the burst under way (bursty arrivals only; a stream starts in a burst).
    burst_left_us: f64,
}

impl Stream {
    pub fn new(workload: Workload, logical_pages: u32, page_bytes: u32, seed: u64) -> Stream {
        Stream {
            workload,
            logical_pages,
            page_bytes: f64::from(page_bytes),
            rng: ChaCha8Rng::seed_from_u64(seed),
            clock_us: 0.0,
            burst_left_us: f64::NAN,
        }
    }

    /// An exponential draw with `mean` (1 - U is in (0, 1], so the logarithm is finite).
    fn exponential(&mut self, mean: f64) -> f64 {
        -(1.0 - self.rng.random::<f64>()).ln() * mean
    }

    /// The gap to the next arrival, µs.
    fn gap_us(&mut self) -> f64 {
        let mean_gap_us = 1e6 / self.workload.arrivals_per_s;
        let Arrivals::Bursty {
            burst_factor,
            mean_burst_requests,
        } = self.workload.arrivals
        else {
            return self.exponential(mean_gap_us);
        };
        let burst_gap_us = mean_gap_us / burst_factor;
        let mean_burst_us = mean_burst_requests * burst_gap_us;
        if self.burst_left_us.is_nan() {
            self.burst_left_us = self.exponential(mean_burst_us);
        }
        let mut gap_us = 0.0;
        loop {
            // Exponential gaps are memoryless: a draw that overruns the burst is dropped and
            // drawn again in the next one.
            let draw_us = self.exponential(burst_gap_us);
            if draw_us <= self.burst_left_us {
                self.burst_left_us -= draw_us;
                return gap_us + draw_us;
            }
            gap_us += self.burst_left_us + self.exponential(mean_burst_us * (burst_factor - 1.0));
            self.burst_left_us = self.exponential(mean_burst_us);
        }
    }

    pub fn next_request(&mut self) -> Request {
        self.clock_us += self.gap_us();
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

    /// Mean rate and the inter-arrival gaps' coefficient of variation over 200,000 arrivals.
    fn rate_and_variation(workload: Workload, seed: u64) -> (f64, f64) {
        let mut stream = Stream::new(workload, 50_000, 4096, seed);
        let arrivals: Vec<f64> = (0..200_000)
            .map(|_| stream.next_request().arrival_us)
            .collect();
        let gaps: Vec<f64> = std::iter::once(arrivals[0])
            .chain(arrivals.windows(2).map(|w| w[1] - w[0]))
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let variance = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        (1e6 / mean, variance.sqrt() / mean)
    }

    #[test]
    fn bursty_arrivals_keep_the_mean_rate_and_vary_more_than_poisson() {
        let cello = Workload::trace("cello").unwrap();
        let (poisson_rate, poisson_cv) = rate_and_variation(cello, 5);
        assert!((poisson_rate / cello.arrivals_per_s - 1.0).abs() < 0.02);
        assert!(
            (poisson_cv - 1.0).abs() < 0.02,
            "Poisson's CV is 1: {poisson_cv}"
        );
        let mut previous_cv = poisson_cv;
        for burst_factor in [4.0, 16.0] {
            let bursty = Workload {
                arrivals: Arrivals::Bursty {
                    burst_factor,
                    mean_burst_requests: 32.0,
                },
                ..cello
            };
            let (rate, cv) = rate_and_variation(bursty, 5);
            assert!(
                (rate / cello.arrivals_per_s - 1.0).abs() < 0.05,
                "x{burst_factor}: rate {rate}"
            );
            assert!(
                cv > previous_cv + 0.2,
                "x{burst_factor}: CV {cv} vs {previous_cv}"
            );
            previous_cv = cv;
        }
        // A burst factor of 1 is Poisson (never off), whatever the burst length.
        let flat = Workload {
            arrivals: Arrivals::Bursty {
                burst_factor: 1.0,
                mean_burst_requests: 8.0,
            },
            ..cello
        };
        let (_, flat_cv) = rate_and_variation(flat, 5);
        assert!((flat_cv - 1.0).abs() < 0.02, "CV {flat_cv}");
    }

    #[test]
    fn a_bursty_stream_is_a_function_of_its_seed() {
        let bursty = Workload {
            arrivals: Arrivals::Bursty {
                burst_factor: 8.0,
                mean_burst_requests: 16.0,
            },
            ..TRACES[0]
        };
        let mut a = Stream::new(bursty, 1000, 4096, 3);
        let mut b = Stream::new(bursty, 1000, 4096, 3);
        let mut c = Stream::new(bursty, 1000, 4096, 4);
        let first: Vec<Request> = (0..1000).map(|_| a.next_request()).collect();
        let second: Vec<Request> = (0..1000).map(|_| b.next_request()).collect();
        let other: Vec<Request> = (0..1000).map(|_| c.next_request()).collect();
        assert_eq!(first, second);
        assert_ne!(first, other);
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
        for (burst_factor, mean_burst_requests) in [
            (0.5, 8.0),
            (f64::NAN, 8.0),
            (4.0, 0.5),
            (4.0, f64::INFINITY),
            (1e6, 8.0),
        ] {
            let bad = Workload {
                arrivals: Arrivals::Bursty {
                    burst_factor,
                    mean_burst_requests,
                },
                ..TRACES[0]
            };
            assert!(
                bad.validate().is_err(),
                "{burst_factor} {mean_burst_requests}"
            );
        }
    }
}
