//! Seeded synthetic request streams for the tail cache (the slides' MSR Cambridge and MS
//! Enterprise traces are not available here, so every mix is our own workload, never the
//! slides'): a mix is several streams, each over its own region of logical pages, each with a
//! share of the requests, a read share and a Zipf popularity over its pages (reads and writes
//! draw from the same popularity, so hot pages are both rewritten and reread).
//!
//! Invariant: a stream of operations is a function of (mix, seed); regions do not overlap.

use crate::{GeckoError, require};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One kind of client stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StreamKind {
    pub name: &'static str,
    pub region_pages: u64,
    /// Zipf exponent of page popularity (0: uniform).
    pub zipf_exponent: f64,
    pub read_fraction: f64,
    /// Relative share of the mix's requests.
    pub weight: f64,
}

/// Our eight stream kinds, loosely after the roles of the slides' traces (a proxy, source
/// control, user homes, mail, a map back end, a file server, a build server, a print server);
/// sizes are at the tail-cache simulation's 1/1024 scale (1 page stands for 1,024 4-KiB pages).
/// Our parameters, not measured from those traces.
pub const STREAM_KINDS: [StreamKind; 8] = [
    kind("proxy", 32_768, 1.1, 0.6, 3.0),
    kind("source", 131_072, 0.9, 0.7, 1.5),
    kind("project", 262_144, 0.8, 0.85, 1.0),
    kind("mail", 131_072, 1.0, 0.45, 2.0),
    kind("maps", 262_144, 0.9, 0.8, 1.0),
    kind("files", 65_536, 1.0, 0.65, 1.0),
    kind("builds", 98_304, 0.85, 0.6, 0.7),
    kind("print", 32_768, 1.2, 0.7, 0.8),
];

const fn kind(
    name: &'static str,
    region_pages: u64,
    zipf_exponent: f64,
    read_fraction: f64,
    weight: f64,
) -> StreamKind {
    StreamKind {
        name,
        region_pages,
        zipf_exponent,
        read_fraction,
        weight,
    }
}

/// A mix of streams.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub streams: Vec<StreamKind>,
}

impl Workload {
    pub fn validate(&self) -> Result<(), GeckoError> {
        require(!self.streams.is_empty(), || "a mix needs a stream".into())?;
        for s in &self.streams {
            require(s.region_pages >= 1, || {
                format!("{}: an empty region", s.name)
            })?;
            require(
                s.zipf_exponent.is_finite() && s.zipf_exponent >= 0.0,
                || format!("{}: Zipf exponent {}", s.name, s.zipf_exponent),
            )?;
            require((0.0..=1.0).contains(&s.read_fraction), || {
                format!("{}: read share {}", s.name, s.read_fraction)
            })?;
            require(s.weight.is_finite() && s.weight > 0.0, || {
                format!("{}: weight {}", s.name, s.weight)
            })?;
        }
        Ok(())
    }

    pub fn logical_pages(&self) -> u64 {
        self.streams.iter().map(|s| s.region_pages).sum()
    }

    pub fn names(&self) -> String {
        let names: Vec<&str> = self.streams.iter().map(|s| s.name).collect();
        names.join("+")
    }

    /// `count` mixes of 4 to 8 of [`STREAM_KINDS`] (as the slides' 21 mixes of 4 to 8
    /// traces), chosen by a seeded shuffle.
    pub fn mixes(count: usize, seed: u64) -> Vec<Workload> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..count)
            .map(|i| {
                let mut kinds = STREAM_KINDS.to_vec();
                kinds.shuffle(&mut rng);
                kinds.truncate(4 + i % 5);
                Workload { streams: kinds }
            })
            .collect()
    }
}

/// One client operation on a logical page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    pub read: bool,
    pub page: u64,
}

/// The seeded operation stream of a mix.
pub struct Stream {
    rng: ChaCha8Rng,
    streams: Vec<StreamKind>,
    /// Cumulative request shares of the streams.
    shares: Vec<f64>,
    /// Per stream, the sampler of its pages' popularity ranks.
    popularity: Vec<Zipf>,
    offsets: Vec<u64>,
}

impl Stream {
    pub fn new(workload: &Workload, seed: u64) -> Result<Stream, GeckoError> {
        workload.validate()?;
        let total: f64 = workload.streams.iter().map(|s| s.weight).sum();
        let shares = cumulative(workload.streams.iter().map(|s| s.weight / total));
        let popularity = workload
            .streams
            .iter()
            .map(|s| Zipf::new(s.region_pages, s.zipf_exponent))
            .collect();
        let offsets = workload
            .streams
            .iter()
            .scan(0, |next, s| {
                let offset = *next;
                *next += s.region_pages;
                Some(offset)
            })
            .collect();
        Ok(Stream {
            rng: ChaCha8Rng::seed_from_u64(seed),
            streams: workload.streams.clone(),
            shares,
            popularity,
            offsets,
        })
    }

    pub fn next_operation(&mut self) -> Operation {
        let which = pick(&self.shares, self.rng.random());
        let rank = self.popularity[which].sample(&mut self.rng) - 1;
        let read = self.rng.random::<f64>() < self.streams[which].read_fraction;
        Operation {
            read,
            page: self.offsets[which] + rank,
        }
    }
}

fn cumulative(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut sum = 0.0;
    values
        .map(|v| {
            sum += v;
            sum
        })
        .collect()
}

/// Zipf ranks 1..=n with P(k) ∝ k^-exponent, drawn by rejection-inversion (Hörmann and
/// Derflinger 1996, as rand_distr's `Zipf`): O(1) per draw and no table, so regions of
/// hundreds of thousands of pages cost nothing to set up.
#[derive(Clone, Copy, Debug)]
struct Zipf {
    pages: f64,
    exponent: f64,
    t: f64,
    q: f64,
}

impl Zipf {
    fn new(pages: u64, exponent: f64) -> Zipf {
        let n = pages as f64;
        let one = exponent == 1.0;
        let q = if one { 0.0 } else { 1.0 / (1.0 - exponent) };
        let t = if one {
            1.0 + n.ln()
        } else {
            (n.powf(1.0 - exponent) - exponent) * q
        };
        Zipf {
            pages: n,
            exponent,
            t,
            q,
        }
    }

    fn inverse_cdf(&self, p: f64) -> f64 {
        let pt = p * self.t;
        if pt <= 1.0 {
            pt
        } else if self.exponent == 1.0 {
            (pt - 1.0).exp()
        } else {
            (pt * (1.0 - self.exponent) + self.exponent).powf(self.q)
        }
    }

    fn sample(&self, rng: &mut ChaCha8Rng) -> u64 {
        loop {
            let inverse = self.inverse_cdf(rng.random::<f64>());
            let rank = (inverse + 1.0).floor();
            let mut ratio = rank.powf(-self.exponent);
            if rank > 1.0 {
                ratio *= inverse.powf(self.exponent);
            }
            if rng.random::<f64>() < ratio {
                return rank.clamp(1.0, self.pages) as u64;
            }
        }
    }
}

/// The index whose cumulative share first reaches `u` (clamped to the last: rounding).
fn pick(cumulative: &[f64], u: f64) -> usize {
    cumulative
        .partition_point(|&c| c < u)
        .min(cumulative.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_has_four_to_eight_distinct_streams_and_the_same_seed_gives_the_same_operations() {
        let mixes = Workload::mixes(21, 5);
        assert_eq!(mixes.len(), 21);
        for mix in &mixes {
            assert!((4..=8).contains(&mix.streams.len()));
            let mut names: Vec<&str> = mix.streams.iter().map(|s| s.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), mix.streams.len());
        }
        let mut a = Stream::new(&mixes[0], 9).unwrap();
        let mut b = Stream::new(&mixes[0], 9).unwrap();
        for _ in 0..1000 {
            let op = a.next_operation();
            assert_eq!(op, b.next_operation());
            assert!(op.page < mixes[0].logical_pages());
        }
    }

    #[test]
    fn zipf_popularity_makes_the_first_ranks_hot() {
        let mix = Workload {
            streams: vec![kind("one", 10_000, 1.0, 0.5, 1.0)],
        };
        let mut stream = Stream::new(&mix, 1).unwrap();
        let hot = (0..20_000)
            .filter(|_| stream.next_operation().page < 100)
            .count();
        // Ranks 1-100 of 10,000 hold H(100)/H(10000) ≈ 5.19/9.79 ≈ 53% of draws.
        assert!((9_500..11_700).contains(&hot), "{hot}");
        for exponent in [0.0, 0.8, 1.2] {
            let mix = Workload {
                streams: vec![kind("one", 10_000, exponent, 0.5, 1.0)],
            };
            let mut stream = Stream::new(&mix, 2).unwrap();
            let harmonic = |n: u64| (1..=n).map(|k| (k as f64).powf(-exponent)).sum::<f64>();
            let expected = harmonic(100) / harmonic(10_000);
            let draws = 40_000;
            let hot = (0..draws)
                .filter(|_| stream.next_operation().page < 100)
                .count() as f64
                / draws as f64;
            assert!(
                (hot - expected).abs() < 0.015,
                "{exponent}: {hot} vs {expected}"
            );
        }
    }

    #[test]
    fn a_bad_stream_is_refused() {
        let mix = Workload {
            streams: vec![kind("bad", 10, 1.0, 1.5, 1.0)],
        };
        assert!(Stream::new(&mix, 1).is_err());
        assert!(Stream::new(&Workload { streams: vec![] }, 1).is_err());
    }
}
