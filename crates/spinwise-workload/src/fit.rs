//! Fitting a file-size model to a log2-bucket histogram by maximum likelihood on the binned data,
//! and the goodness of fit (docs/workload.md, "Fitting").
//!
//! The likelihood is multinomial: the histogram's N files fall in its cells with the model's
//! cell probabilities, ln L = Σ n_i ln p_i (constant dropped). The cells are the buckets, except
//! that the first extends down to size 0 and the last up to ∞, so the probabilities sum to 1
//! whatever the model puts outside the listed range. The optimiser (Nelder–Mead) works on
//! unbounded coordinates: Gamma (ln shape, ln scale); lognormal (mu, ln sigma); the generalised
//! Gamma in Prentice's (1974) location, scale and shape of ln X, (m, ln s, ln q) with
//! q = 1/√(d/p), s = q/p and m = ln a + ln(d/p)/p, because Stacy's own (a, d, p) lie along a
//! narrow curved ridge of the likelihood (their observed information is numerically singular)
//! while Prentice's are nearly orthogonal.
//!
//! Invariants: a returned fit has a finite log-likelihood, positive finite parameters, a
//! chi-square statistic ≥ 0 and a KS distance in [0, 1]; its `log_scale_error`, when present,
//! is finite and positive (the observed information was positive definite).

use crate::error::FitError;
use crate::histogram::Histogram;
use crate::model::{Family, FileSizeModel, Shape, Variable, ln_one_minus_exp};
use crate::optimize::{Minimum, invert, nelder_mead};
use serde::Serialize;
use statrs::function::gamma;

/// Objective evaluations per Nelder–Mead run: a 3-parameter fit converges in a few hundred; the
/// bound keeps a pathological histogram from running long (each evaluation costs ~60 incomplete
/// gamma functions, about 50 µs).
const MAX_EVALUATIONS: usize = 4_000;

/// Cells with fewer expected files than this are pooled with a neighbour before the chi-square
/// test (the usual rule that keeps its χ² approximation valid).
pub const MIN_EXPECTED_PER_CELL: f64 = 5.0;

/// Where the optimiser may look, in its coordinates: within ±70 (ln of a parameter in
/// 10^±30, far past any file size); outside, the likelihood is treated as impossible so the
/// special functions are never asked for orders or arguments they cannot evaluate.
const COORDINATE_LIMIT: f64 = 70.0;

/// The largest order of the incomplete gamma function a fit may use (Gamma's shape, Stacy's
/// d/p): beyond it a model is indistinguishable from its normal or lognormal limit, and the
/// series converge slowly.
const MAX_GAMMA_ORDER: f64 = 1e5;

/// The goodness of a fit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Goodness {
    /// Pearson's Σ (observed − expected)² / expected over the pooled cells.
    pub chi_square: f64,
    /// Pooled cells − 1 − fitted parameters; the p-value exists only when this is at least 1.
    pub degrees_of_freedom: i64,
    /// P(χ²(df) ≥ chi_square).
    pub p_value: Option<f64>,
    /// Cells after pooling those with fewer than [`MIN_EXPECTED_PER_CELL`] expected files.
    pub cells: usize,
    /// The largest |empirical − model| cdf over the bucket edges.
    pub ks_distance: f64,
}

/// A fitted model and how well it fits.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fit {
    pub model: FileSizeModel,
    /// ln L = Σ n_i ln p_i at the fit (the multinomial coefficient left out).
    pub log_likelihood: f64,
    /// Standard errors of the parameters (same order as the family's names) from the inverse
    /// observed information, by the delta method; `None` when it is not positive definite.
    pub standard_errors: Option<Vec<f64>>,
    pub goodness: Goodness,
    pub files: u64,
    pub evaluations: usize,
    pub converged: bool,
    /// Whether the best point lies on the edge of what the parameters can hold (a step further
    /// along some coordinate leaves the searched region): the likelihood still rose toward the
    /// edge, so the family's best member is a limit it cannot reach here (for Stacy's model
    /// over bytes usually the lognormal limit, where a underflows; fit the lognormal instead).
    pub at_search_boundary: bool,
}

impl Fit {
    /// The fit with its standard errors (and so its envelopes) widened as if the histogram held
    /// `files` independent files instead of its count: errors scale as 1/√N, so each is
    /// multiplied by √(counted / files). For a survey of millions of files the statistical
    /// envelope is a fraction of a percent wide; when the histogram stands for fewer independent
    /// observations (one of a few sites or snapshots whose files are not independent draws),
    /// this says how many. Files at or above the counted number leave the fit unchanged.
    pub fn with_effective_files(mut self, files: u64) -> Fit {
        assert!(files > 0, "at least one effective file");
        if files >= self.files {
            return self;
        }
        let factor = (self.files as f64 / files as f64).sqrt();
        if let Some(errors) = &mut self.standard_errors {
            errors.iter_mut().for_each(|e| *e *= factor);
        }
        if let Some(error) = &mut self.model.log_scale_error {
            *error *= factor;
        }
        self
    }
}

/// Fits `family` over `variable` to `histogram` by binned maximum likelihood.
pub fn fit(histogram: &Histogram, family: Family, variable: Variable) -> Result<Fit, FitError> {
    if histogram.occupied_buckets() < 2 {
        let offset = histogram
            .counts
            .iter()
            .position(|&c| c > 0)
            .expect("a histogram counts files");
        return Err(FitError::OneBucket {
            bucket_log2: histogram.first_bucket_log2 + offset as u32,
        });
    }
    let cells = Cells::new(histogram, variable);
    let mut negative_log_likelihood = |point: &[f64]| match shape_at(family, point) {
        Some(shape) => -cells.log_likelihood(&shape),
        None => f64::INFINITY,
    };
    let starts = starting_points(&cells, family, &mut negative_log_likelihood);
    let mut best: Option<Minimum> = None;
    let mut evaluations = 0;
    for start in starts {
        // A restart from the first run's best point lets the simplex rebuild its shape:
        // Nelder–Mead can stall on a ridge.
        let first = nelder_mead(&mut negative_log_likelihood, &start, 0.5, MAX_EVALUATIONS);
        let second = nelder_mead(
            &mut negative_log_likelihood,
            &first.point,
            0.05,
            MAX_EVALUATIONS,
        );
        evaluations += first.evaluations + second.evaluations;
        if best.as_ref().is_none_or(|b| second.value < b.value) {
            best = Some(second);
        }
    }
    let best = best.expect("at least one start");
    if !best.value.is_finite() {
        return Err(FitError::NoFiniteLikelihood);
    }
    let shape = shape_at(family, &best.point).expect("a finite likelihood has a shape");
    let at_search_boundary = at_search_boundary(&mut negative_log_likelihood, &best.point);
    let covariance = covariance(&mut negative_log_likelihood, &best.point);
    let standard_errors = covariance
        .as_ref()
        .map(|c| natural_errors(family, &best.point, c));
    let log_scale_error = covariance
        .as_ref()
        .and_then(|c| log_location_error(family, &best.point, c));
    let model = FileSizeModel {
        shape,
        variable,
        log_scale_error,
    };
    let goodness = goodness(&cells, &model.shape, family.parameter_names().len());
    Ok(Fit {
        model,
        log_likelihood: -best.value,
        standard_errors,
        goodness,
        files: histogram.total_files(),
        evaluations,
        converged: best.converged,
        at_search_boundary,
    })
}

/// The histogram as the likelihood sees it: counts and the cells' edges in the model's variable.
struct Cells {
    counts: Vec<f64>,
    /// Edges between cells (the buckets' inner boundaries), `counts.len() − 1` of them.
    inner_edges: Vec<f64>,
    total: f64,
    /// Mean and variance of ln(variable) at the buckets' geometric midpoints, for starts.
    log_mean: f64,
    log_variance: f64,
}

impl Cells {
    fn new(histogram: &Histogram, variable: Variable) -> Cells {
        let counts = histogram.counts.iter().map(|&c| c as f64).collect();
        Cells::over(histogram.first_bucket_log2, counts, variable)
    }

    /// Cells of buckets `first_bucket_log2..` holding `counts` (at least one positive).
    fn over(first_bucket_log2: u32, counts: Vec<f64>, variable: Variable) -> Cells {
        let inner_edges = (1..counts.len())
            .map(|i| {
                let bucket_log2 = first_bucket_log2 + i as u32;
                variable.from_bytes((bucket_log2 as f64).exp2())
            })
            .collect();
        let total: f64 = counts.iter().sum();
        let midpoint = |i: usize| {
            let bucket_log2 = (first_bucket_log2 + i as u32) as f64;
            variable.from_bytes((bucket_log2 + 0.5).exp2()).ln()
        };
        let log_mean = counts
            .iter()
            .enumerate()
            .map(|(i, c)| c * midpoint(i))
            .sum::<f64>()
            / total;
        let log_variance = counts
            .iter()
            .enumerate()
            .map(|(i, c)| c * (midpoint(i) - log_mean).powi(2))
            .sum::<f64>()
            / total;
        Cells {
            counts,
            inner_edges,
            total,
            log_mean,
            log_variance: log_variance.max(1e-6),
        }
    }

    /// Each cell's probability under `shape`.
    fn probabilities(&self, shape: &Shape) -> Vec<f64> {
        self.log_probabilities(shape)
            .into_iter()
            .map(f64::exp)
            .collect()
    }

    /// ln of each cell's probability, in log space throughout: a cell far in a tail has a
    /// probability below f64's range, and its logarithm must still be finite and smooth for the
    /// optimiser (the cliff where a probability underflowed once stopped a Gamma fit short of
    /// its maximum). A cell in the upper half of the distribution is a difference of survival
    /// functions, so the tail does not cancel to 0.
    fn log_probabilities(&self, shape: &Shape) -> Vec<f64> {
        let cells = self.counts.len();
        (0..cells)
            .map(|i| {
                let lower = (i > 0).then(|| self.inner_edges[i - 1]);
                let upper = (i + 1 < cells).then(|| self.inner_edges[i]);
                match (lower, upper) {
                    (None, None) => 0.0,
                    (None, Some(upper)) => shape.ln_cdf(upper),
                    (Some(lower), None) => shape.ln_sf(lower),
                    (Some(lower), Some(upper)) => {
                        // A bound whose probability is 0 in f64 (ln = −∞) makes the cell 0:
                        // −∞ − (−∞) would be NaN, and a NaN cell made the chi-square NaN for a
                        // concentrated fit (generalised Gamma with p ≈ 540 over 6 buckets).
                        if shape.cdf(lower) < 0.5 {
                            let below_upper = shape.ln_cdf(upper);
                            if below_upper == f64::NEG_INFINITY {
                                return f64::NEG_INFINITY;
                            }
                            let below_lower = shape.ln_cdf(lower);
                            below_upper + ln_one_minus_exp(below_lower - below_upper)
                        } else {
                            let above_lower = shape.ln_sf(lower);
                            if above_lower == f64::NEG_INFINITY {
                                return f64::NEG_INFINITY;
                            }
                            let above_upper = shape.ln_sf(upper);
                            above_lower + ln_one_minus_exp(above_upper - above_lower)
                        }
                    }
                }
            })
            .collect()
    }

    fn log_likelihood(&self, shape: &Shape) -> f64 {
        let mut total = 0.0;
        for (count, log_probability) in self.counts.iter().zip(self.log_probabilities(shape)) {
            if *count == 0.0 {
                continue;
            }
            if log_probability.is_nan() || log_probability == f64::NEG_INFINITY {
                return f64::NEG_INFINITY;
            }
            total += count * log_probability;
        }
        total
    }
}

/// Stacy's (a, d, p) from Prentice's coordinates (m, ln s, ln q): order k = d/p = 1/q²,
/// p = q/s, d = k p, ln a = m − ln(k)/p.
fn stacy_from_prentice(point: &[f64]) -> (f64, f64, f64) {
    let (m, s, q) = (point[0], point[1].exp(), point[2].exp());
    let order = 1.0 / (q * q);
    let p = q / s;
    let log_a = m - order.ln() / p;
    (log_a.exp(), order * p, p)
}

/// Prentice's (m, ln s, ln q) of Stacy's (a, d, p) (inverse of [`stacy_from_prentice`]).
fn prentice_from_stacy(log_a: f64, d: f64, p: f64) -> Vec<f64> {
    let order = d / p;
    let q = 1.0 / order.sqrt();
    vec![log_a + order.ln() / p, (q / p).ln(), q.ln()]
}

/// The model at an optimiser point, or `None` outside the searched region.
fn shape_at(family: Family, point: &[f64]) -> Option<Shape> {
    if point
        .iter()
        .any(|c| !c.is_finite() || c.abs() > COORDINATE_LIMIT)
    {
        return None;
    }
    let shape = match family {
        Family::Gamma => Shape::Gamma {
            shape: point[0].exp(),
            scale: point[1].exp(),
        },
        Family::GeneralizedGamma => {
            let (a, d, p) = stacy_from_prentice(point);
            Shape::GeneralizedGamma { a, d, p }
        }
        Family::LogNormal => Shape::LogNormal {
            mu: point[0],
            sigma: point[1].exp(),
        },
    };
    let order = match shape {
        Shape::Gamma { shape, .. } => shape,
        Shape::GeneralizedGamma { d, p, .. } => d / p,
        Shape::LogNormal { .. } => 1.0,
    };
    let values = shape.values();
    let positive = match family {
        Family::LogNormal => values[1] > 0.0 && values[1].is_finite(),
        _ => values.iter().all(|v| *v > 0.0 && v.is_finite()),
    };
    (positive && order <= MAX_GAMMA_ORDER).then_some(shape)
}

/// Whether a step of 10^-3 along some coordinate leaves the searched region.
fn at_search_boundary(objective: &mut impl FnMut(&[f64]) -> f64, point: &[f64]) -> bool {
    (0..point.len()).any(|axis| {
        [1e-3, -1e-3].iter().any(|step| {
            let mut moved = point.to_vec();
            moved[axis] += step;
            objective(&moved) == f64::INFINITY
        })
    })
}

/// Starting points from the log-moments of the histogram: for each candidate shape, the scale
/// that matches the mean of ln X (E ln X = ln scale + ψ(order)/p for the gamma families). The
/// best few by likelihood start a Nelder–Mead run each.
fn starting_points(
    cells: &Cells,
    family: Family,
    objective: &mut impl FnMut(&[f64]) -> f64,
) -> Vec<Vec<f64>> {
    let m = cells.log_mean;
    let candidates: Vec<Vec<f64>> = match family {
        Family::LogNormal => vec![vec![m, 0.5 * cells.log_variance.ln()]],
        Family::Gamma => [
            0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 300.0,
        ]
        .iter()
        .map(|&k: &f64| vec![k.ln(), m - gamma::digamma(k)])
        .collect(),
        Family::GeneralizedGamma => {
            let mut points = Vec::new();
            for p in [0.05_f64, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0] {
                for order in [0.1_f64, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1000.0] {
                    let log_a = m - gamma::digamma(order) / p;
                    points.push(prentice_from_stacy(log_a, order * p, p));
                }
            }
            points
        }
    };
    let mut scored: Vec<(f64, Vec<f64>)> = candidates
        .into_iter()
        .map(|point| (objective(&point), point))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let keep = match family {
        Family::GeneralizedGamma => 3,
        _ => 1,
    };
    scored
        .into_iter()
        .take(keep)
        .map(|(_, point)| point)
        .collect()
}

/// The inverse of the observed information (the Hessian of −ln L by central differences in the
/// optimiser's coordinates), or `None` when that Hessian is not positive definite.
fn covariance(objective: &mut impl FnMut(&[f64]) -> f64, point: &[f64]) -> Option<Vec<Vec<f64>>> {
    const STEP: f64 = 1e-3;
    let size = point.len();
    let mut at = |moves: &[(usize, f64)]| {
        let mut moved = point.to_vec();
        for &(axis, by) in moves {
            moved[axis] += by;
        }
        objective(&moved)
    };
    let center = at(&[]);
    let mut hessian = vec![vec![0.0; size]; size];
    let pairs: Vec<(usize, usize)> = (0..size)
        .flat_map(|i| (i..size).map(move |j| (i, j)))
        .collect();
    // The upper triangle, mirrored: the Hessian is symmetric.
    for (i, j) in pairs {
        let value = if i == j {
            let plus = at(&[(i, STEP)]);
            let minus = at(&[(i, -STEP)]);
            (plus - 2.0 * center + minus) / (STEP * STEP)
        } else {
            let pp = at(&[(i, STEP), (j, STEP)]);
            let pm = at(&[(i, STEP), (j, -STEP)]);
            let mp = at(&[(i, -STEP), (j, STEP)]);
            let mm = at(&[(i, -STEP), (j, -STEP)]);
            (pp - pm - mp + mm) / (4.0 * STEP * STEP)
        };
        hessian[i][j] = value;
        hessian[j][i] = value;
    }
    let inverse = invert(&hessian)?;
    let positive = (0..size).all(|i| inverse[i][i].is_finite() && inverse[i][i] > 0.0);
    positive.then_some(inverse)
}

/// The natural parameters at an optimiser point, in [`Family::parameter_names`] order.
fn natural_values(family: Family, point: &[f64]) -> Vec<f64> {
    match family {
        Family::Gamma => vec![point[0].exp(), point[1].exp()],
        Family::GeneralizedGamma => {
            let (a, d, p) = stacy_from_prentice(point);
            vec![a, d, p]
        }
        Family::LogNormal => vec![point[0], point[1].exp()],
    }
}

/// The gradient of `function` at `point` by central differences.
fn gradient(function: impl Fn(&[f64]) -> f64, point: &[f64]) -> Vec<f64> {
    const STEP: f64 = 1e-6;
    (0..point.len())
        .map(|axis| {
            let mut plus = point.to_vec();
            let mut minus = point.to_vec();
            plus[axis] += STEP;
            minus[axis] -= STEP;
            (function(&plus) - function(&minus)) / (2.0 * STEP)
        })
        .collect()
}

/// √(∇gᵀ Σ ∇g): the delta-method standard error of g at `point`.
fn delta_error(function: impl Fn(&[f64]) -> f64, point: &[f64], covariance: &[Vec<f64>]) -> f64 {
    let g = gradient(function, point);
    let mut variance = 0.0;
    for i in 0..g.len() {
        for j in 0..g.len() {
            variance += g[i] * covariance[i][j] * g[j];
        }
    }
    variance.max(0.0).sqrt()
}

/// Standard errors of the natural parameters by the delta method.
fn natural_errors(family: Family, point: &[f64], covariance: &[Vec<f64>]) -> Vec<f64> {
    (0..point.len())
        .map(|index| delta_error(|p| natural_values(family, p)[index], point, covariance))
        .collect()
}

/// The standard error of the fitted E[ln X] (the log of the variable's geometric mean): Gamma
/// ψ(shape) + ln scale, Stacy ln a + ψ(d/p)/p, lognormal mu. Multiplying the scale by e^δ
/// shifts E[ln X] by exactly δ, so this is the envelope's unit of scale shift
/// (`FileSizeModel::envelope`). It is well determined even where the shape parameters trade
/// off along a ridge, unlike the marginal error of ln(scale) itself. `None` when not finite and
/// positive.
fn log_location_error(family: Family, point: &[f64], covariance: &[Vec<f64>]) -> Option<f64> {
    let location = |p: &[f64]| match family {
        Family::Gamma => gamma::digamma(p[0].exp()) + p[1],
        Family::GeneralizedGamma => {
            // ln a + ψ(k)/p = m + (ψ(k) − ln k)/p in Prentice's coordinates.
            let (s, q) = (p[1].exp(), p[2].exp());
            let order = 1.0 / (q * q);
            p[0] + (gamma::digamma(order) - order.ln()) * s / q
        }
        Family::LogNormal => p[0],
    };
    let error = delta_error(location, point, covariance);
    (error.is_finite() && error > 0.0).then_some(error)
}

/// Pearson's chi-square over cells pooled to at least [`MIN_EXPECTED_PER_CELL`] expected files,
/// and the KS distance between the binned cdfs.
fn goodness(cells: &Cells, shape: &Shape, parameters: usize) -> Goodness {
    let probabilities = cells.probabilities(shape);
    let mut pooled: Vec<(f64, f64)> = Vec::new();
    let mut pending = (0.0, 0.0);
    for (count, probability) in cells.counts.iter().zip(&probabilities) {
        pending.0 += count;
        pending.1 += probability * cells.total;
        if pending.1 >= MIN_EXPECTED_PER_CELL {
            pooled.push(pending);
            pending = (0.0, 0.0);
        }
    }
    if pending.1 > 0.0 || pending.0 > 0.0 {
        match pooled.last_mut() {
            Some(last) => {
                last.0 += pending.0;
                last.1 += pending.1;
            }
            None => pooled.push(pending),
        }
    }
    let chi_square: f64 = pooled
        .iter()
        .map(|(observed, expected)| (observed - expected).powi(2) / expected)
        .sum();
    let degrees_of_freedom = pooled.len() as i64 - 1 - parameters as i64;
    let p_value = (degrees_of_freedom >= 1).then(|| {
        let half = degrees_of_freedom as f64 / 2.0;
        if chi_square <= 0.0 {
            1.0
        } else {
            gamma::checked_gamma_ur(half, chi_square / 2.0).unwrap_or(0.0)
        }
    });
    let mut observed_cdf = 0.0;
    let mut model_cdf = 0.0;
    let mut ks_distance: f64 = 0.0;
    for (count, probability) in cells.counts.iter().zip(&probabilities) {
        observed_cdf += count / cells.total;
        model_cdf += probability;
        ks_distance = ks_distance.max((observed_cdf - model_cdf).abs());
    }
    Goodness {
        chi_square,
        degrees_of_freedom,
        p_value,
        cells: pooled.len(),
        ks_distance: ks_distance.min(1.0),
    }
}

/// The expected count of each bucket of `model` for `files` files over the given bucket range
/// (the end buckets take the tails, as in the fit), rounded to whole files: a synthetic
/// histogram with no sampling noise, for checking that fitting recovers known parameters.
pub fn expected_histogram(
    model: &FileSizeModel,
    first_bucket_log2: u32,
    last_bucket_log2: u32,
    files: u64,
) -> Histogram {
    assert!(first_bucket_log2 <= last_bucket_log2, "an ordered range");
    // The counts only weigh the starting moments, which this does not use.
    let uniform = vec![1.0; (last_bucket_log2 - first_bucket_log2) as usize + 1];
    let cells = Cells::over(first_bucket_log2, uniform, model.variable);
    let counts = cells
        .probabilities(&model.shape)
        .iter()
        .map(|p| (p * files as f64).round() as u64)
        .collect();
    Histogram::from_counts(first_bucket_log2, counts)
}
