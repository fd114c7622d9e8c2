//! Sampling a [`Distribution`] from the caller's RNG: the one definition of what a latency in a
//! rack file means when drawn, shared by the simulator and by the store's emulated and model
//! disks, so the simulator and the real system it is cross-validated against cannot drift apart.
//! Only `rand::Rng` is used (no `rand_distr`, to keep the dependency set small).
//!
//! Invariants: a sample lies in its distribution's declared range (`[min, max]`, or the fixed
//! value) and is never negative; every sample draws from the RNG in an order fixed by the call
//! sequence (a normal draw consumes two uniforms per attempt), so the same seed gives the same
//! samples. This crate owns no RNG: randomness only ever comes from the caller.

use rand::Rng;

use crate::Distribution;

/// Normal draws tried before a truncated normal falls back to clamping. With the presets' ranges
/// (±2σ and wider) a draw is accepted with probability ≥ 0.95, so 64 consecutive rejections
/// (< 1e-80) never happen there; the bound only keeps a pathological range (far in a tail) from
/// looping for ever.
pub const MAX_NORMAL_REJECTIONS: u32 = 64;

impl Distribution {
    /// One sample in seconds. Truncated normals are sampled by rejection (Box–Muller draws outside
    /// `[min, max]` are redrawn), which keeps the shape of the truncated density; after
    /// [`MAX_NORMAL_REJECTIONS`] the last draw is clamped into the range.
    pub fn sample_s(&self, rng: &mut impl Rng) -> f64 {
        let value = match *self {
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
}

/// A standard normal variate by Box–Muller (one of the pair; the other is discarded so every
/// call consumes exactly two uniforms, which keeps the draw order simple to reason about).
pub fn standard_normal(rng: &mut impl Rng) -> f64 {
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
            let a = normal.sample_s(&mut rng);
            let b = uniform.sample_s(&mut rng);
            assert!((8.0..=14.0).contains(&a));
            assert!((1.0..=4.0).contains(&b));
            sum_normal += a;
            sum_uniform += b;
        }
        // The truncation at 8 (−2σ) lifts the mean by ~0.05.
        assert!((sum_normal / n as f64 - 10.05).abs() < 0.05);
        assert!((sum_uniform / n as f64 - 2.5).abs() < 0.05);
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
        assert_eq!(tail.sample_s(&mut rng), 50.0);
    }

    #[test]
    fn a_fixed_value_and_an_empty_uniform_draw_nothing_and_negatives_floor_at_zero() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut untouched = rng.clone();
        assert_eq!(Distribution::Fixed { value: 2.5 }.sample_s(&mut rng), 2.5);
        assert_eq!(
            Distribution::Uniform { min: 4.0, max: 4.0 }.sample_s(&mut rng),
            4.0
        );
        assert_eq!(Distribution::Fixed { value: -1.0 }.sample_s(&mut rng), 0.0);
        assert_eq!(rng.random::<u64>(), untouched.random::<u64>());
    }
}
