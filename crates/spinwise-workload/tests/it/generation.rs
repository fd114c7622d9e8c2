//! File sets: filled to the capacity without passing it, reproducible from the seed, and the
//! paper's envelope property: the upper envelope yields more small files, the lower more large
//! ones (issue 34, "Must show").

use spinwise_workload::{
    Envelope, FileSizeModel, GenerateError, MAX_FILE_BYTES, MAX_FILES, Shape, Variable,
    generate_file_set,
};

fn gamma_model() -> FileSizeModel {
    FileSizeModel {
        shape: Shape::Gamma {
            shape: 0.6,
            scale: 4e6,
        },
        variable: Variable::Bytes,
        // About what a fit to 10^4 files gives: a visible envelope.
        log_scale_error: Some(0.05),
    }
}

fn stacy_log2_model() -> FileSizeModel {
    FileSizeModel {
        shape: Shape::GeneralizedGamma {
            a: 15.0,
            d: 6.0,
            p: 3.0,
        },
        variable: Variable::Log2,
        log_scale_error: Some(0.02),
    }
}

#[test]
fn a_set_fills_the_capacity_to_within_its_next_file_and_never_past_it() {
    let capacity_bytes = 10_000_000_000;
    let set = generate_file_set(&gamma_model(), capacity_bytes, 7).unwrap();
    assert_eq!(set.total_bytes, set.sizes_bytes.iter().sum::<u64>());
    assert!(set.total_bytes <= capacity_bytes);
    // The next draw did not fit; files of this model are rarely above 50 MB.
    assert!(capacity_bytes - set.total_bytes < 100_000_000);
    assert!(
        set.sizes_bytes
            .iter()
            .all(|s| (1..=MAX_FILE_BYTES).contains(s))
    );
}

#[test]
fn the_same_seed_gives_the_same_set_and_another_seed_another() {
    let model = stacy_log2_model();
    let first = generate_file_set(&model, 5_000_000_000, 1).unwrap();
    let again = generate_file_set(&model, 5_000_000_000, 1).unwrap();
    let other = generate_file_set(&model, 5_000_000_000, 2).unwrap();
    assert_eq!(first, again);
    assert_ne!(first.sizes_bytes, other.sizes_bytes);
}

#[test]
fn a_larger_capacity_extends_the_same_seed_set() {
    // The sizes are one stream of draws: a larger capacity keeps every file of the smaller set.
    let model = gamma_model();
    let small = generate_file_set(&model, 1_000_000_000, 3).unwrap();
    let large = generate_file_set(&model, 3_000_000_000, 3).unwrap();
    assert_eq!(small.sizes_bytes[..], large.sizes_bytes[..small.len()]);
}

/// Shares of a set's files below and above the central model's quartiles.
fn shares(sizes_bytes: &[u64], small_below: f64, large_above: f64) -> (usize, usize, f64, f64) {
    let small = sizes_bytes
        .iter()
        .filter(|&&s| (s as f64) < small_below)
        .count();
    let large = sizes_bytes
        .iter()
        .filter(|&&s| (s as f64) > large_above)
        .count();
    let files = sizes_bytes.len() as f64;
    (small, large, small as f64 / files, large as f64 / files)
}

/// The size below which the model puts `share` of its files (bisection on ln size).
fn quantile_bytes(model: &FileSizeModel, share: f64) -> f64 {
    let (mut lower, mut upper) = (0.0f64, 60.0f64);
    for _ in 0..200 {
        let middle = 0.5 * (lower + upper);
        if model.cdf_bytes(middle.exp2()) < share {
            lower = middle;
        } else {
            upper = middle;
        }
    }
    lower.exp2()
}

#[test]
fn the_upper_envelope_yields_more_small_files_and_the_lower_more_large_ones() {
    // Each model, each of several seeds, and envelope sets drawn with *other* seeds than the
    // central set, so the property is the distributions', not shared random draws.
    for model in [gamma_model(), stacy_log2_model()] {
        let upper = model.envelope(Envelope::Upper, 0.95).unwrap();
        let lower = model.envelope(Envelope::Lower, 0.95).unwrap();
        let small_below = quantile_bytes(&model, 0.25);
        let large_above = quantile_bytes(&model, 0.75);
        let capacity_bytes = 200_000_000_000;
        for seed in 0..3u64 {
            let central = generate_file_set(&model, capacity_bytes, seed).unwrap();
            let upper_set = generate_file_set(&upper, capacity_bytes, 100 + seed).unwrap();
            let lower_set = generate_file_set(&lower, capacity_bytes, 200 + seed).unwrap();
            let (c_small, c_large, c_small_share, c_large_share) =
                shares(&central.sizes_bytes, small_below, large_above);
            let (u_small, _, u_small_share, u_large_share) =
                shares(&upper_set.sizes_bytes, small_below, large_above);
            let (_, l_large, l_small_share, l_large_share) =
                shares(&lower_set.sizes_bytes, small_below, large_above);
            println!(
                "{:?} seed {seed}: files upper {} central {} lower {}; small share {u_small_share:.4} {c_small_share:.4} {l_small_share:.4}; large share {u_large_share:.4} {c_large_share:.4} {l_large_share:.4}",
                model.shape.family(),
                upper_set.len(),
                central.len(),
                lower_set.len()
            );
            // More small files: in number and as a share of the set.
            assert!(u_small > c_small, "upper {u_small} vs central {c_small}");
            assert!(u_small_share > c_small_share && c_small_share > l_small_share);
            // More large files: as a share of the set (a set of larger files at the same
            // capacity has fewer files, so the share is the fair comparison), and in bytes.
            assert!(l_large_share > c_large_share && c_large_share > u_large_share);
            assert!(upper_set.len() > central.len() && central.len() > lower_set.len());
            let _ = (c_large, l_large);
        }
    }
}

#[test]
fn impossible_sets_are_refused_with_the_reason() {
    let model = gamma_model();
    assert_eq!(
        generate_file_set(&model, 0, 1).unwrap_err(),
        GenerateError::NoCapacity
    );
    assert!(matches!(
        generate_file_set(&model, 10, 1).unwrap_err(),
        GenerateError::EmptySet { .. }
    ));
    let tiny = FileSizeModel::new(
        Shape::Gamma {
            shape: 1.0,
            scale: 2.0,
        },
        Variable::Bytes,
    );
    assert_eq!(
        generate_file_set(&tiny, 1_000_000_000_000, 1).unwrap_err(),
        GenerateError::TooManyFiles { max: MAX_FILES }
    );
}
