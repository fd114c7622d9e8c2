//! A Nelder–Mead simplex minimiser (Lagarias et al. 1998 coefficients: reflection 1, expansion 2,
//! contraction ½, shrink ½), small enough to read, for the two or three parameters of a fit. It
//! is derivative-free because the binned likelihood's gradient would need derivatives of the
//! incomplete gamma function in its order, which statrs does not provide.
//!
//! Invariants: at most `max_evaluations` evaluations of the objective; a NaN value counts as
//! +∞ (an impossible point), so the simplex never moves onto one while a finite point exists;
//! the returned point is the best evaluated.

/// The result of a minimisation.
#[derive(Clone, Debug, PartialEq)]
pub struct Minimum {
    pub point: Vec<f64>,
    pub value: f64,
    pub evaluations: usize,
    /// Whether the simplex shrank below the tolerances before the evaluation budget ran out.
    pub converged: bool,
}

/// Minimises `objective` from `start`, the first simplex spanning `step` along each axis.
/// Stops when the simplex's values differ by less than `value_tolerance` (relative, plus an
/// absolute 1e-12) and its vertices by less than `point_tolerance` along every axis.
pub fn nelder_mead(
    objective: &mut impl FnMut(&[f64]) -> f64,
    start: &[f64],
    step: f64,
    max_evaluations: usize,
) -> Minimum {
    const VALUE_TOLERANCE: f64 = 1e-12;
    const POINT_TOLERANCE: f64 = 1e-9;
    assert!(!start.is_empty(), "at least one parameter");
    assert!(step > 0.0, "a positive initial step");
    let dimensions = start.len();
    let evaluations = std::cell::Cell::new(0usize);
    let mut evaluate = |point: &[f64]| {
        evaluations.set(evaluations.get() + 1);
        let value = objective(point);
        if value.is_nan() { f64::INFINITY } else { value }
    };
    let mut simplex: Vec<(Vec<f64>, f64)> = Vec::with_capacity(dimensions + 1);
    simplex.push((start.to_vec(), evaluate(start)));
    for axis in 0..dimensions {
        let mut vertex = start.to_vec();
        vertex[axis] += step;
        let value = evaluate(&vertex);
        simplex.push((vertex, value));
    }
    let mut converged = false;
    while evaluations.get() < max_evaluations {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let best = simplex[0].1;
        let worst = simplex[dimensions].1;
        let spread_value = (worst - best).abs();
        let spread_point = (0..dimensions)
            .map(|axis| {
                simplex
                    .iter()
                    .map(|(v, _)| (v[axis] - simplex[0].0[axis]).abs())
                    .fold(0.0, f64::max)
            })
            .fold(0.0, f64::max);
        if best.is_finite()
            && spread_value <= VALUE_TOLERANCE * best.abs() + 1e-12
            && spread_point <= POINT_TOLERANCE
        {
            converged = true;
            break;
        }
        let centroid: Vec<f64> = (0..dimensions)
            .map(|axis| {
                simplex[..dimensions]
                    .iter()
                    .map(|(v, _)| v[axis])
                    .sum::<f64>()
            })
            .map(|sum| sum / dimensions as f64)
            .collect();
        let along = |t: f64| -> Vec<f64> {
            centroid
                .iter()
                .zip(&simplex[dimensions].0)
                .map(|(c, w)| c + t * (w - c))
                .collect()
        };
        let reflected = along(-1.0);
        let reflected_value = evaluate(&reflected);
        let second_worst = simplex[dimensions - 1].1;
        if reflected_value < best {
            let expanded = along(-2.0);
            let expanded_value = evaluate(&expanded);
            simplex[dimensions] = if expanded_value < reflected_value {
                (expanded, expanded_value)
            } else {
                (reflected, reflected_value)
            };
            continue;
        }
        if reflected_value < second_worst {
            simplex[dimensions] = (reflected, reflected_value);
            continue;
        }
        // Contract toward the better of the worst vertex and its reflection.
        let (contracted, contracted_value) = if reflected_value < worst {
            let point = along(-0.5);
            let value = evaluate(&point);
            (point, value)
        } else {
            let point = along(0.5);
            let value = evaluate(&point);
            (point, value)
        };
        if contracted_value < worst.min(reflected_value) {
            simplex[dimensions] = (contracted, contracted_value);
            continue;
        }
        let anchor = simplex[0].0.clone();
        for vertex in simplex.iter_mut().skip(1) {
            let point: Vec<f64> = anchor
                .iter()
                .zip(&vertex.0)
                .map(|(a, v)| a + 0.5 * (v - a))
                .collect();
            let value = evaluate(&point);
            *vertex = (point, value);
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (point, value) = simplex.swap_remove(0);
    Minimum {
        point,
        value,
        evaluations: evaluations.get(),
        converged,
    }
}

/// The inverse of a small symmetric matrix by Gauss–Jordan elimination with partial pivoting;
/// `None` when it is singular to working precision.
pub fn invert(matrix: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let size = matrix.len();
    let mut left: Vec<Vec<f64>> = matrix.to_vec();
    let mut right: Vec<Vec<f64>> = (0..size)
        .map(|row| {
            (0..size)
                .map(|col| f64::from(u8::from(row == col)))
                .collect()
        })
        .collect();
    let scale = matrix.iter().flatten().fold(0.0_f64, |m, v| m.max(v.abs()));
    if !(scale.is_finite() && scale > 0.0) {
        return None;
    }
    for col in 0..size {
        let pivot =
            (col..size).max_by(|&a, &b| left[a][col].abs().total_cmp(&left[b][col].abs()))?;
        if left[pivot][col].abs() <= 1e-13 * scale {
            return None;
        }
        left.swap(col, pivot);
        right.swap(col, pivot);
        let divisor = left[col][col];
        for j in 0..size {
            left[col][j] /= divisor;
            right[col][j] /= divisor;
        }
        for row in 0..size {
            if row != col {
                let factor = left[row][col];
                for j in 0..size {
                    left[row][j] -= factor * left[col][j];
                    right[row][j] -= factor * right[col][j];
                }
            }
        }
    }
    Some(right)
}
