//! Sampling the rack's latency distributions and exponential inter-arrival gaps from the run's
//! one seeded RNG, with only `rand::Rng` (no `rand_distr`, to keep the dependency set small).
//!
//! Invariants: a sample of a `Distribution` lies in its declared range (`[min, max]`, or the fixed
//! value) and is never negative; every sample draws from the RNG in an order fixed by the call
//! sequence, so the same seed gives the same samples.

use rand::Rng;
use spinwise_model::Distribution;

/// Normal draws tried before a truncated normal falls back to clamping. With the presets' ranges
/// (±2σ and wider) a draw is accepted with probability ≥ 0.95, so 64 consecutive rejections
/// (< 1e-80) never happen there; the bound only keeps a pathological range (far in a tail) from
/// looping for ever.
const MAX_NORMAL_REJECTIONS: u32 = 64;

/// One sample in seconds. Truncated normals are sampled by rejection (Box–Muller draws outside
/// `[min, max]` are redrawn), which keeps the shape of the truncated density; after
/// [`MAX_NORMAL_REJECTIONS`] the last draw is clamped into the range.
pub fn sample_s(distribution: &Distribution, rng: &mut impl Rng) -> f64 {
    let value = match *distribution {
        Distribution::Fixed { value } => value,
        Distribution::Uniform { min, max } => {
            if max > min {
                min + (max - min) * rng.random::<f64>()
            } else {
                min
            }
        }
        Distribution::Normal {
            mean,
            stddev,
            min,
            max,
        } => {
            let mut draw = mean;
            for _ in 0..MAX_NORMAL_REJECTIONS {
                draw = mean + stddev * standard_normal(rng);
                if (min..=max).contains(&draw) {
                    break;
                }
            }
            draw.clamp(min, max)
        }
    };
    value.max(0.0)
}

/// One sample in whole microseconds (rounded), the loop's clock unit.
pub fn sample_us(distribution: &Distribution, rng: &mut impl Rng) -> u64 {
    seconds_to_us(sample_s(distribution, rng))
}

/// Gap to the next Poisson arrival at `rate_per_s`, in µs (inverse-CDF of the exponential).
pub fn exponential_us(rate_per_s: f64, rng: &mut impl Rng) -> u64 {
    // `random` is in [0, 1), so 1 - u is in (0, 1] and the logarithm is finite.
    let u: f64 = rng.random();
    seconds_to_us(-(1.0 - u).ln() / rate_per_s)
}

pub fn seconds_to_us(seconds: f64) -> u64 {
    (seconds * 1e6).round() as u64
}

/// A standard normal variate by Box–Muller (one of the pair; the other is discarded so every
/// call consumes exactly two uniforms, which keeps the draw order simple to reason about).
pub(crate) fn standard_normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]: ln is finite
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn samples_stay_in_range_and_have_the_right_mean() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let normal = Distribution::Normal {
            mean: 10.0,
            stddev: 1.0,
            min: 8.0,
            max: 14.0,
        };
        let uniform = Distribution::Uniform { min: 1.0, max: 4.0 };
        let n = 20_000;
        let (mut sum_normal, mut sum_uniform) = (0.0, 0.0);
        for _ in 0..n {
            let a = sample_s(&normal, &mut rng);
            let b = sample_s(&uniform, &mut rng);
            assert!((8.0..=14.0).contains(&a));
            assert!((1.0..=4.0).contains(&b));
            sum_normal += a;
            sum_uniform += b;
        }
        // The truncation at 8 (−2σ) lifts the mean by ~0.05.
        assert!((sum_normal / n as f64 - 10.05).abs() < 0.05);
        assert!((sum_uniform / n as f64 - 2.5).abs() < 0.05);
        let rate = 2.0;
        let mean_gap_s =
            (0..n).map(|_| exponential_us(rate, &mut rng)).sum::<u64>() as f64 / n as f64 / 1e6;
        assert!((mean_gap_s - 0.5).abs() < 0.02, "{mean_gap_s}");
    }

    #[test]
    fn a_range_far_in_the_tail_is_clamped_not_looped_on() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let tail = Distribution::Normal {
            mean: 0.0,
            stddev: 1.0,
            min: 50.0,
            max: 60.0,
        };
        assert_eq!(sample_s(&tail, &mut rng), 50.0);
    }
}
