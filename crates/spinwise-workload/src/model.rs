//! File-size models: Gamma, generalised Gamma (Stacy's a, d, p) and lognormal, each describing
//! either the size in bytes or log2 of it ([`Variable`]); their pdf, cdf and survival function,
//! sampling of whole-byte sizes, confidence envelopes, and the `name=value,…` text form of their
//! parameters that `spinwise workload` reads and prints (docs/workload.md).
//!
//! Invariants: a [`FileSizeModel`] that exists has finite, positive parameters (lognormal's `mu`
//! may be any finite number) and, when present, a finite non-negative `log_scale_error`; its cdf
//! is non-decreasing from 0 to 1 with `cdf + sf = 1`; every sampled size lies in
//! `1..=MAX_FILE_BYTES`. Envelopes only move the scale, so the upper envelope's cdf is at least
//! the model's and the lower envelope's at most the model's at every size.

use crate::error::ParamsError;
use rand::Rng;
use rand_distr::Distribution;
use serde::Serialize;
use statrs::function::{erf, gamma};

/// The largest file a generated set holds, in bytes: the simulator's largest request
/// (`spinwise_sim::MAX_BLOB_BYTES`, 1 TB), so every file can be replayed. Draws above it are
/// redrawn (the model is truncated there); a test checks the two constants agree.
pub const MAX_FILE_BYTES: u64 = 1_000_000_000_000;

/// Redraws of a size above [`MAX_FILE_BYTES`] before it is clamped instead. A model whose mass
/// above 1 TB is so large that 64 draws in a row land there is not a file-size model; the bound
/// keeps the loop finite whatever the parameters.
const MAX_REDRAWS: u32 = 64;

/// What the model's random variable is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Variable {
    /// The file's size in bytes.
    #[default]
    Bytes,
    /// log2 of the file's size in bytes: a model over the axis the log2-bucket histograms are
    /// drawn on, where a Gamma is bell-shaped like the surveys' histograms (sizes ≥ 1 byte).
    Log2,
}

impl Variable {
    pub fn name(self) -> &'static str {
        match self {
            Variable::Bytes => "bytes",
            Variable::Log2 => "log2",
        }
    }

    /// The model's variable at a size in bytes (`size_bytes` > 0).
    pub fn from_bytes(self, size_bytes: f64) -> f64 {
        match self {
            Variable::Bytes => size_bytes,
            Variable::Log2 => size_bytes.log2(),
        }
    }

    /// The size in bytes at a value of the model's variable.
    pub fn to_bytes(self, value: f64) -> f64 {
        match self {
            Variable::Bytes => value,
            Variable::Log2 => value.exp2(),
        }
    }
}

/// Which family a model belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Gamma,
    GeneralizedGamma,
    LogNormal,
}

impl Family {
    pub const ALL: [Family; 3] = [Family::Gamma, Family::GeneralizedGamma, Family::LogNormal];

    /// The name on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Family::Gamma => "gamma",
            Family::GeneralizedGamma => "gengamma",
            Family::LogNormal => "lognormal",
        }
    }

    /// The parameter names, in the order of [`Shape::values`].
    pub fn parameter_names(self) -> &'static [&'static str] {
        match self {
            Family::Gamma => &["shape", "scale"],
            Family::GeneralizedGamma => &["a", "d", "p"],
            Family::LogNormal => &["mu", "sigma"],
        }
    }
}

/// A distribution's parameters (of the model's [`Variable`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "family", rename_all = "snake_case")]
pub enum Shape {
    /// Density x^(shape−1) e^(−x/scale) / (Γ(shape) scale^shape).
    Gamma { shape: f64, scale: f64 },
    /// Stacy (1962): density p x^(d−1) e^(−(x/a)^p) / (a^d Γ(d/p)); p = 1 is Gamma(d, a),
    /// d = p is Weibull, and p → 0 tends to the lognormal.
    GeneralizedGamma { a: f64, d: f64, p: f64 },
    /// ln x is normal with mean `mu` and standard deviation `sigma`; its scale is e^mu.
    LogNormal { mu: f64, sigma: f64 },
}

impl Shape {
    pub fn family(&self) -> Family {
        match self {
            Shape::Gamma { .. } => Family::Gamma,
            Shape::GeneralizedGamma { .. } => Family::GeneralizedGamma,
            Shape::LogNormal { .. } => Family::LogNormal,
        }
    }

    /// The parameters in [`Family::parameter_names`] order.
    pub fn values(&self) -> Vec<f64> {
        match *self {
            Shape::Gamma { shape, scale } => vec![shape, scale],
            Shape::GeneralizedGamma { a, d, p } => vec![a, d, p],
            Shape::LogNormal { mu, sigma } => vec![mu, sigma],
        }
    }

    /// Builds a shape from values in [`Family::parameter_names`] order, checking each.
    pub fn from_values(family: Family, values: &[f64]) -> Result<Shape, ParamsError> {
        let names = family.parameter_names();
        assert_eq!(values.len(), names.len(), "one value per parameter");
        for (name, &value) in names.iter().zip(values) {
            let valid = match *name {
                "mu" => value.is_finite(),
                _ => value.is_finite() && value > 0.0,
            };
            if !valid {
                return Err(ParamsError::OutOfRange {
                    name: (*name).into(),
                    value,
                    expected: if *name == "mu" {
                        "a finite number"
                    } else {
                        "a finite number above 0"
                    },
                });
            }
        }
        let shape = match family {
            Family::Gamma => Shape::Gamma {
                shape: values[0],
                scale: values[1],
            },
            Family::GeneralizedGamma => Shape::GeneralizedGamma {
                a: values[0],
                d: values[1],
                p: values[2],
            },
            Family::LogNormal => Shape::LogNormal {
                mu: values[0],
                sigma: values[1],
            },
        };
        shape.check_sampleable()?;
        Ok(shape)
    }

    /// Refuses parameters each finite and positive on its own whose combination a draw cannot
    /// use: a gamma scale whose reciprocal overflows, Stacy's d/p or 1/p outside the positive
    /// finite numbers, a lognormal mu + sigma beyond f64. Such values panicked in `sample`
    /// (`workload generate` with `d=5e-324,p=1e308`, or an envelope that moved a scale to 0,
    /// until 2026-12-01).
    fn check_sampleable(&self) -> Result<(), ParamsError> {
        let positive_finite = |value: f64| value.is_finite() && value > 0.0;
        let (name, value, fine) = match *self {
            Shape::Gamma { shape, scale } => (
                "scale",
                scale,
                rand_distr::Gamma::new(shape, scale).is_ok() && positive_finite(scale.recip()),
            ),
            Shape::GeneralizedGamma { a, d, p } => (
                "d/p",
                d / p,
                positive_finite(a)
                    && positive_finite(d / p)
                    && positive_finite(p.recip())
                    && rand_distr::Gamma::new(d / p, 1.0).is_ok(),
            ),
            Shape::LogNormal { mu, sigma } => (
                "mu",
                mu,
                mu.is_finite() && positive_finite(sigma) && (mu + sigma).is_finite(),
            ),
        };
        if fine {
            Ok(())
        } else {
            Err(ParamsError::OutOfRange {
                name: name.into(),
                value,
                expected: "a value a draw can use (neither so large nor so small that it overflows)",
            })
        }
    }

    /// ln of the scale parameter (Gamma's scale, Stacy's a, lognormal's e^mu): the one
    /// coordinate an envelope moves.
    pub fn log_scale(&self) -> f64 {
        match *self {
            Shape::Gamma { scale, .. } => scale.ln(),
            Shape::GeneralizedGamma { a, .. } => a.ln(),
            Shape::LogNormal { mu, .. } => mu,
        }
    }

    /// The same shape with its scale multiplied by e^`shift`: the distribution of e^shift · X,
    /// stochastically larger for a positive shift and smaller for a negative one.
    pub fn with_log_scale_shifted(&self, shift: f64) -> Shape {
        match *self {
            Shape::Gamma { shape, scale } => Shape::Gamma {
                shape,
                scale: scale * shift.exp(),
            },
            Shape::GeneralizedGamma { a, d, p } => Shape::GeneralizedGamma {
                a: a * shift.exp(),
                d,
                p,
            },
            Shape::LogNormal { mu, sigma } => Shape::LogNormal {
                mu: mu + shift,
                sigma,
            },
        }
    }

    /// P(X ≤ x).
    pub fn cdf(&self, x: f64) -> f64 {
        if x.is_nan() {
            return f64::NAN;
        }
        match *self {
            Shape::LogNormal { mu, sigma } => {
                if x <= 0.0 {
                    return 0.0;
                }
                0.5 * erf::erfc(-(x.ln() - mu) / (sigma * std::f64::consts::SQRT_2))
            }
            _ => {
                let (order, argument) = self.gamma_argument(x);
                regularized_lower(order, argument)
            }
        }
    }

    /// P(X > x), computed directly rather than as 1 − cdf so the far tail keeps its precision
    /// (the likelihood of a histogram's last buckets depends on it).
    pub fn sf(&self, x: f64) -> f64 {
        if x.is_nan() {
            return f64::NAN;
        }
        match *self {
            Shape::LogNormal { mu, sigma } => {
                if x <= 0.0 {
                    return 1.0;
                }
                0.5 * erf::erfc((x.ln() - mu) / (sigma * std::f64::consts::SQRT_2))
            }
            _ => {
                let (order, argument) = self.gamma_argument(x);
                regularized_upper(order, argument)
            }
        }
    }

    /// ln P(X ≤ x), finite wherever the probability is positive, even below f64's smallest
    /// number (e^−745): a fit's optimiser must see the likelihood fall smoothly as a model puts
    /// less and less mass in an occupied bucket, not meet a cliff where the probability
    /// underflows to 0.
    pub fn ln_cdf(&self, x: f64) -> f64 {
        if x.is_nan() {
            return f64::NAN;
        }
        match *self {
            Shape::LogNormal { mu, sigma } => {
                if x <= 0.0 {
                    return f64::NEG_INFINITY;
                }
                ln_normal_sf(-(x.ln() - mu) / sigma)
            }
            _ => {
                let (order, argument) = self.gamma_argument(x);
                ln_regularized_lower(order, argument)
            }
        }
    }

    /// ln P(X > x), finite wherever the probability is positive (see [`Shape::ln_cdf`]).
    pub fn ln_sf(&self, x: f64) -> f64 {
        if x.is_nan() {
            return f64::NAN;
        }
        match *self {
            Shape::LogNormal { mu, sigma } => {
                if x <= 0.0 {
                    return 0.0;
                }
                ln_normal_sf((x.ln() - mu) / sigma)
            }
            _ => {
                let (order, argument) = self.gamma_argument(x);
                ln_regularized_upper(order, argument)
            }
        }
    }

    /// The probability density at x.
    pub fn pdf(&self, x: f64) -> f64 {
        if x.is_nan() {
            return f64::NAN;
        }
        if x <= 0.0 {
            return 0.0;
        }
        let ln_density = match *self {
            Shape::Gamma { shape, scale } => {
                (shape - 1.0) * x.ln() - x / scale - gamma::ln_gamma(shape) - shape * scale.ln()
            }
            Shape::GeneralizedGamma { a, d, p } => {
                p.ln() - d * a.ln() + (d - 1.0) * x.ln() - (x / a).powf(p) - gamma::ln_gamma(d / p)
            }
            Shape::LogNormal { mu, sigma } => {
                let z = (x.ln() - mu) / sigma;
                -0.5 * z * z - x.ln() - sigma.ln() - 0.5 * (std::f64::consts::TAU).ln()
            }
        };
        ln_density.exp()
    }

    /// One draw of the variable.
    fn sample(&self, rng: &mut impl Rng) -> f64 {
        match *self {
            Shape::Gamma { shape, scale } => rand_distr::Gamma::new(shape, scale)
                .expect("parameters were checked positive and finite")
                .sample(rng),
            Shape::GeneralizedGamma { a, d, p } => {
                // If G ~ Gamma(d/p, 1) then a · G^(1/p) has Stacy's density (change of variable).
                let g = rand_distr::Gamma::new(d / p, 1.0)
                    .expect("parameters were checked positive and finite")
                    .sample(rng);
                a * g.powf(1.0 / p)
            }
            Shape::LogNormal { mu, sigma } => {
                let z: f64 = rng.sample(rand_distr::StandardNormal);
                (mu + sigma * z).exp()
            }
        }
    }

    /// For the two gamma families: the order and argument of the regularised incomplete gamma
    /// function whose value is the cdf at x.
    fn gamma_argument(&self, x: f64) -> (f64, f64) {
        match *self {
            Shape::Gamma { shape, scale } => (shape, x / scale),
            Shape::GeneralizedGamma { a, d, p } => {
                (d / p, if x <= 0.0 { 0.0 } else { (x / a).powf(p) })
            }
            Shape::LogNormal { .. } => unreachable!("lognormal has no gamma argument"),
        }
    }
}

/// P(order, x) with the edges statrs refuses: 0 at x ≤ 0, 1 at x = ∞, NaN for an order that is
/// not a positive finite number (the optimiser treats NaN as an impossible point).
fn regularized_lower(order: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x == f64::INFINITY {
        return 1.0;
    }
    gamma::checked_gamma_lr(order, x).unwrap_or(f64::NAN)
}

/// Q(order, x) = 1 − P(order, x), computed directly for the upper tail.
fn regularized_upper(order: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    gamma::checked_gamma_ur(order, x).unwrap_or(f64::NAN)
}

/// Terms of the series and continued fractions below: both converge in a few dozen terms where
/// they are used (the series for x < order + 1, the fraction above); the bound keeps a
/// pathological argument finite in time.
const MAX_TERMS: usize = 1_000;

/// ln P(order, x). Where P is far from underflow statrs' value is used; below, the series
/// P = x^a e^−x / Γ(a + 1) · Σ_n x^n / ((a + 1)…(a + n)) summed in log space (it converges
/// fastest exactly where P is small: x < a + 1).
fn ln_regularized_lower(order: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if !(order > 0.0 && order.is_finite()) {
        return f64::NAN;
    }
    if x < order + 1.0 {
        let mut term = 1.0;
        let mut sum = 1.0;
        for n in 1..MAX_TERMS {
            term *= x / (order + n as f64);
            sum += term;
            if term < sum * 1e-17 {
                break;
            }
        }
        return order * x.ln() - x - gamma::ln_gamma(order + 1.0) + sum.ln();
    }
    // Here P ≥ 1 − Q with Q ≤ ~0.7, nowhere near underflow.
    (-regularized_upper(order, x)).ln_1p()
}

/// ln Q(order, x): for x > order + 1 Legendre's continued fraction (modified Lentz), in log
/// space, so the far tail stays finite; elsewhere Q is not small and statrs' value is used.
fn ln_regularized_upper(order: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x == f64::INFINITY {
        return f64::NEG_INFINITY;
    }
    if !(order > 0.0 && order.is_finite()) {
        return f64::NAN;
    }
    if x <= order + 1.0 {
        return regularized_upper(order, x).ln();
    }
    const TINY: f64 = 1e-300;
    let mut b = x + 1.0 - order;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut fraction = d;
    for i in 1..MAX_TERMS {
        let an = -(i as f64) * (i as f64 - order);
        b += 2.0;
        d = an * d + b;
        if d.abs() < TINY {
            d = TINY;
        }
        c = b + an / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let delta = d * c;
        fraction *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    order * x.ln() - x - gamma::ln_gamma(order) + fraction.ln()
}

/// ln P(Z > z) for a standard normal Z: erfc while it is representable, and beyond z = 30 the
/// asymptotic series ln(φ(z)/z) + ln(1 − 1/z² + 3/z⁴ − 15/z⁶) (relative error below 10^−9).
fn ln_normal_sf(z: f64) -> f64 {
    if z < 30.0 {
        return (0.5 * erf::erfc(z / std::f64::consts::SQRT_2)).ln();
    }
    let z2 = z * z;
    let series = 1.0 - 1.0 / z2 + 3.0 / (z2 * z2) - 15.0 / (z2 * z2 * z2);
    -0.5 * z2 - z.ln() - 0.5 * std::f64::consts::TAU.ln() + series.ln()
}

/// ln(1 − e^d) for d ≤ 0, accurate near both ends (Mächler 2012).
pub(crate) fn ln_one_minus_exp(d: f64) -> f64 {
    if d > -std::f64::consts::LN_2 {
        (-d.exp_m1()).ln()
    } else {
        (-d.exp()).ln_1p()
    }
}

/// Which envelope of a model to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Envelope {
    /// The paper's lower bound: more large files (the scale at the top of its confidence
    /// interval; the cdf lies below the model's everywhere).
    Lower,
    /// The paper's upper bound: more small files (the scale at the bottom of its confidence
    /// interval; the cdf lies above the model's everywhere).
    Upper,
}

impl Envelope {
    pub fn name(self) -> &'static str {
        match self {
            Envelope::Lower => "lower",
            Envelope::Upper => "upper",
        }
    }
}

/// The default confidence level of an envelope.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// A file-size model: a distribution of [`Variable`], and when it came from a fit the standard
/// error its envelopes are made of.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FileSizeModel {
    pub shape: Shape,
    pub variable: Variable,
    /// The standard error, from the fit's observed information by the delta method, of the
    /// fitted E[ln X] (the log of the variable's geometric mean: Gamma ψ(shape) + ln scale,
    /// Stacy ln a + ψ(d/p)/p, lognormal mu). Scaling X by e^δ shifts E[ln X] by exactly δ, so
    /// this is a standard error in units of ln(scale): see [`FileSizeModel::envelope`].
    pub log_scale_error: Option<f64>,
}

impl FileSizeModel {
    pub fn new(shape: Shape, variable: Variable) -> FileSizeModel {
        FileSizeModel {
            shape,
            variable,
            log_scale_error: None,
        }
    }

    /// The envelope at confidence `level` (in (0, 1)): the same family, variable and shape
    /// parameters with the scale multiplied by e^(±z · log_scale_error), z = Φ⁻¹((1 + level)/2)
    /// (1.96 at 95%): the model moved to either end of the two-sided Wald interval of its
    /// log geometric mean. Plus for the lower envelope (more large files), minus for the upper
    /// (more small files). Moving only the scale makes the order exact: X_upper ≤ X ≤ X_lower
    /// in distribution, at every size.
    pub fn envelope(&self, envelope: Envelope, level: f64) -> Result<FileSizeModel, ParamsError> {
        let Some(error) = self.log_scale_error else {
            return Err(ParamsError::NoScaleError);
        };
        if !(level > 0.0 && level < 1.0) {
            return Err(ParamsError::Confidence { level });
        }
        let shift = normal_quantile_two_sided(level) * error;
        let shift = match envelope {
            Envelope::Lower => shift,
            Envelope::Upper => -shift,
        };
        let shape = self.shape.with_log_scale_shifted(shift);
        shape.check_sampleable()?;
        Ok(FileSizeModel {
            shape,
            variable: self.variable,
            log_scale_error: self.log_scale_error,
        })
    }

    /// P(size ≤ size_bytes).
    pub fn cdf_bytes(&self, size_bytes: f64) -> f64 {
        if size_bytes <= 0.0 {
            return 0.0;
        }
        self.shape.cdf(self.variable.from_bytes(size_bytes))
    }

    /// P(size > size_bytes).
    pub fn sf_bytes(&self, size_bytes: f64) -> f64 {
        if size_bytes <= 0.0 {
            return 1.0;
        }
        self.shape.sf(self.variable.from_bytes(size_bytes))
    }

    /// One file size in whole bytes, in `1..=MAX_FILE_BYTES`: the draw rounded down and raised
    /// to 1 (a file-size model has no empty files), redrawn above the maximum. Rounding down
    /// keeps every draw in its log2 bucket (2^b is whole, so ⌊x⌋ ∈ [2^b, 2^(b+1)) when x is),
    /// so the histogram of a generated set is a sample of the model's bucket probabilities;
    /// rounding to nearest moved draws just under 2^(b+1) into the next bucket, which a fit
    /// over small sizes detected.
    pub fn sample_bytes(&self, rng: &mut impl Rng) -> u64 {
        for _ in 0..MAX_REDRAWS {
            let size_bytes = self.variable.to_bytes(self.shape.sample(rng)).floor();
            // NaN fails both comparisons and is redrawn; so is anything above the maximum.
            if size_bytes <= MAX_FILE_BYTES as f64 {
                return (size_bytes as u64).max(1);
            }
        }
        MAX_FILE_BYTES
    }

    /// The parameters as `--params` text: `name=value,…` plus `log_scale_error` when known.
    /// Values print with Rust's shortest round-trip form, so the text reads back exactly.
    pub fn params_text(&self) -> String {
        let mut parts: Vec<String> = self
            .shape
            .family()
            .parameter_names()
            .iter()
            .zip(self.shape.values())
            .map(|(name, value)| format!("{name}={}", number_text(value)))
            .collect();
        if let Some(error) = self.log_scale_error {
            parts.push(format!("log_scale_error={}", number_text(error)));
        }
        parts.join(",")
    }

    /// Reads `name=value,…` for `family`: every parameter exactly once, optionally
    /// `log_scale_error`, nothing else.
    pub fn parse_params(
        family: Family,
        variable: Variable,
        text: &str,
    ) -> Result<FileSizeModel, ParamsError> {
        let names = family.parameter_names();
        let mut values: Vec<Option<f64>> = vec![None; names.len()];
        let mut log_scale_error = None;
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, value_text)) = part.split_once('=') else {
                return Err(ParamsError::NotAPair { text: quote(part) });
            };
            let name = name.trim();
            let value: f64 = value_text
                .trim()
                .parse()
                .map_err(|_| ParamsError::NotANumber {
                    name: quote(name),
                    text: quote(value_text.trim()),
                })?;
            let slot = if name == "log_scale_error" {
                &mut log_scale_error
            } else if let Some(index) = names.iter().position(|n| *n == name) {
                &mut values[index]
            } else {
                return Err(ParamsError::Unknown {
                    name: quote(name),
                    family: family.name(),
                    expected: names.join(", "),
                });
            };
            if slot.replace(value).is_some() {
                return Err(ParamsError::Repeated { name: quote(name) });
            }
        }
        let mut present = Vec::with_capacity(names.len());
        for (name, value) in names.iter().zip(&values) {
            match value {
                Some(value) => present.push(*value),
                None => {
                    return Err(ParamsError::Missing {
                        name,
                        family: family.name(),
                        expected: names.join(", "),
                    });
                }
            }
        }
        let shape = Shape::from_values(family, &present)?;
        if let Some(error) = log_scale_error
            && !(error.is_finite() && error >= 0.0)
        {
            return Err(ParamsError::OutOfRange {
                name: "log_scale_error".into(),
                value: error,
                expected: "a finite number at least 0",
            });
        }
        Ok(FileSizeModel {
            shape,
            variable,
            log_scale_error,
        })
    }
}

/// A number in the shortest text that reads back to the same f64: plain decimals between 10^-4
/// and 10^15, exponent form outside (so 4e-31 is not printed with thirty zeros).
fn number_text(value: f64) -> String {
    if value == 0.0 || (1e-4..1e15).contains(&value.abs()) {
        format!("{value}")
    } else {
        format!("{value:e}")
    }
}

/// z such that P(|Z| ≤ z) = level for a standard normal Z.
pub fn normal_quantile_two_sided(level: f64) -> f64 {
    std::f64::consts::SQRT_2 * erf::erf_inv(level)
}

/// At most 40 characters of user text, for error messages (a pasted file must not flood them).
fn quote(text: &str) -> String {
    text.chars().take(40).collect()
}
