//! The simulator's draws from the run's one seeded RNG, in its clock unit: latency samples
//! (whose meaning `spinwise_model::sample` defines, shared with the store's disks) rounded to
//! whole microseconds, and exponential inter-arrival gaps for Poisson workloads.
//!
//! Invariants: every sample draws from the RNG in an order fixed by the call sequence, so the
//! same seed gives the same samples; a gap or latency is never negative.

use rand::Rng;
use spinwise_model::Distribution;

/// One sample in whole microseconds (rounded), the loop's clock unit.
pub fn sample_us(distribution: &Distribution, rng: &mut impl Rng) -> u64 {
    seconds_to_us(distribution.sample_s(rng))
}

/// Gap to the next Poisson arrival at `rate_per_s`, in µs (inverse-CDF of the exponential).
pub fn exponential_us(rate_per_s: f64, rng: &mut impl Rng) -> u64 {
    // `random` is in [0, 1), so 1 - u is in (0, 1] and the logarithm is finite.
    let u: f64 = rng.random();
    seconds_to_us(-(1.0 - u).ln() / rate_per_s)
}

/// Seconds to whole microseconds, rounded to nearest (the loop's clock unit).
pub fn seconds_to_us(seconds: f64) -> u64 {
    (seconds * 1e6).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn exponential_gaps_have_the_mean_of_the_rate() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let (n, rate) = (20_000, 2.0);
        let mean_gap_s =
            (0..n).map(|_| exponential_us(rate, &mut rng)).sum::<u64>() as f64 / n as f64 / 1e6;
        assert!((mean_gap_s - 0.5).abs() < 0.02, "{mean_gap_s}");
    }

    #[test]
    fn a_latency_sample_is_the_model_sample_rounded_to_microseconds() {
        let uniform = Distribution::Uniform { min: 1.0, max: 4.0 };
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut twin = rng.clone();
        for _ in 0..100 {
            let expected_us = (uniform.sample_s(&mut twin) * 1e6).round() as u64;
            assert_eq!(sample_us(&uniform, &mut rng), expected_us);
        }
    }
}
