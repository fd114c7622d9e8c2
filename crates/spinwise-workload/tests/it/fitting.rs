//! Fitting recovers known parameters: from noise-free histograms (expected counts of 10^9
//! files) to a relative error of 10^-4, and from histograms of 100,000 sampled files within four
//! of the fit's own standard errors (and, for Gamma and lognormal, 3%). Goodness of fit is
//! reported sensibly: a model fitted to its own samples passes, a wrong family fails.
//!
//! Method: sampled histograms come from `FileSizeModel::sample_bytes` (whole bytes, rounded
//! down, so bucket membership is the continuous draw's). Parameters are chosen so the mass
//! above 1 TB, where generation truncates, is negligible (< 10^-6).

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use spinwise_workload::{
    Family, FileSizeModel, FitError, Histogram, Shape, Variable, expected_histogram, fit,
};

fn models() -> Vec<FileSizeModel> {
    let bytes = |shape| FileSizeModel::new(shape, Variable::Bytes);
    let log2 = |shape| FileSizeModel::new(shape, Variable::Log2);
    vec![
        bytes(Shape::Gamma {
            shape: 0.5,
            scale: 2e6,
        }),
        bytes(Shape::Gamma {
            shape: 2.0,
            scale: 1e5,
        }),
        log2(Shape::Gamma {
            shape: 16.0,
            scale: 1.0,
        }),
        bytes(Shape::GeneralizedGamma {
            a: 1e5,
            d: 1.0,
            p: 0.3,
        }),
        log2(Shape::GeneralizedGamma {
            a: 15.0,
            d: 6.0,
            p: 3.0,
        }),
        bytes(Shape::LogNormal {
            mu: 12.0,
            sigma: 2.5,
        }),
        log2(Shape::LogNormal {
            mu: 2.7,
            sigma: 0.2,
        }),
    ]
}

fn relative_errors(truth: &Shape, fitted: &Shape) -> Vec<f64> {
    truth
        .values()
        .iter()
        .zip(fitted.values())
        .map(|(t, f)| ((f - t) / t).abs())
        .collect()
}

fn sampled_histogram(model: &FileSizeModel, files: usize, seed: u64) -> Histogram {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let sizes: Vec<u64> = (0..files).map(|_| model.sample_bytes(&mut rng)).collect();
    Histogram::from_sizes(&sizes)
}

#[test]
fn fitting_noise_free_histograms_recovers_every_parameter_to_one_part_in_ten_thousand() {
    for model in models() {
        let histogram = expected_histogram(&model, 0, 50, 1_000_000_000);
        let fitted = fit(&histogram, model.shape.family(), model.variable).unwrap();
        let errors = relative_errors(&model.shape, &fitted.model.shape);
        println!("noise-free {model:?}: relative errors {errors:?}");
        assert!(
            errors.iter().all(|e| *e < 1e-4),
            "{model:?} → {:?}: {errors:?}",
            fitted.model.shape
        );
        assert!(fitted.converged);
        assert!(fitted.goodness.ks_distance < 1e-6);
        assert!(fitted.goodness.p_value.unwrap() > 0.99);
    }
}

#[test]
fn fitting_100k_sampled_files_lands_within_four_standard_errors() {
    for (index, model) in models().into_iter().enumerate() {
        let histogram = sampled_histogram(&model, 100_000, 40 + index as u64);
        let fitted = fit(&histogram, model.shape.family(), model.variable).unwrap();
        let errors = relative_errors(&model.shape, &fitted.model.shape);
        let standard_errors = fitted.standard_errors.clone().expect("a proper maximum");
        println!(
            "100k sampled {model:?}: relative errors {errors:?}, standard errors {standard_errors:?}"
        );
        for ((truth, estimate), error) in model
            .shape
            .values()
            .iter()
            .zip(fitted.model.shape.values())
            .zip(&standard_errors)
        {
            assert!(
                (estimate - truth).abs() <= 4.0 * error,
                "{model:?}: {estimate} is more than 4 × {error} from {truth}"
            );
        }
        if model.shape.family() != Family::GeneralizedGamma {
            assert!(errors.iter().all(|e| *e < 0.03), "{model:?}: {errors:?}");
        }
        // Its own samples: the chi-square test has no reason to reject (1 in 10^4 by chance).
        assert!(
            fitted.goodness.p_value.unwrap() > 1e-4,
            "{:?}",
            fitted.goodness
        );
        assert!(fitted.goodness.ks_distance < 0.01);
    }
}

#[test]
fn the_wrong_family_is_rejected_by_the_chi_square_test() {
    // A lognormal on bytes is far from any Gamma on bytes once 10^6 files are counted.
    let model = FileSizeModel::new(
        Shape::LogNormal {
            mu: 11.0,
            sigma: 2.5,
        },
        Variable::Bytes,
    );
    let histogram = sampled_histogram(&model, 1_000_000, 3);
    let gamma = fit(&histogram, Family::Gamma, Variable::Bytes).unwrap();
    let lognormal = fit(&histogram, Family::LogNormal, Variable::Bytes).unwrap();
    assert!(
        gamma.goodness.p_value.unwrap() < 1e-10,
        "{:?}",
        gamma.goodness
    );
    assert!(gamma.goodness.ks_distance > 10.0 * lognormal.goodness.ks_distance);
    assert!(lognormal.log_likelihood > gamma.log_likelihood);
}

#[test]
fn the_generalised_gamma_fits_at_least_as_well_as_the_gamma_it_contains() {
    let text = include_str!("../../data/example-histogram.csv");
    let histogram = Histogram::parse(text).unwrap();
    for variable in [Variable::Bytes, Variable::Log2] {
        let gamma = fit(&histogram, Family::Gamma, variable).unwrap();
        let stacy = fit(&histogram, Family::GeneralizedGamma, variable).unwrap();
        // Stacy with p = 1 is the Gamma: its maximum cannot be lower (up to the optimiser).
        assert!(
            stacy.log_likelihood >= gamma.log_likelihood - 1e-6 * gamma.log_likelihood.abs(),
            "{variable:?}: Stacy {} < Gamma {}",
            stacy.log_likelihood,
            gamma.log_likelihood
        );
    }
}

#[test]
fn a_histogram_with_one_occupied_bucket_is_refused() {
    let histogram = Histogram::from_counts(3, vec![0, 10, 0]);
    assert_eq!(
        fit(&histogram, Family::Gamma, Variable::Bytes).unwrap_err(),
        FitError::OneBucket { bucket_log2: 4 }
    );
}

#[test]
fn a_fit_reports_the_standard_error_its_envelopes_use_and_it_shrinks_as_one_over_root_n() {
    let model = FileSizeModel::new(
        Shape::Gamma {
            shape: 0.8,
            scale: 1e6,
        },
        Variable::Bytes,
    );
    let small = fit(
        &sampled_histogram(&model, 10_000, 1),
        Family::Gamma,
        Variable::Bytes,
    )
    .unwrap();
    let large = fit(
        &sampled_histogram(&model, 1_000_000, 1),
        Family::Gamma,
        Variable::Bytes,
    )
    .unwrap();
    let small_error = small.model.log_scale_error.unwrap();
    let large_error = large.model.log_scale_error.unwrap();
    // Standard errors shrink as 1/√N: 100× the files, a tenth of the error (±30%).
    let ratio = small_error / large_error;
    assert!((7.0..13.0).contains(&ratio), "ratio {ratio}");
    // For the lognormal E[ln X] is mu itself: the envelope's error is mu's standard error.
    let lognormal = FileSizeModel::new(
        Shape::LogNormal {
            mu: 13.0,
            sigma: 1.5,
        },
        Variable::Bytes,
    );
    let fitted = fit(
        &sampled_histogram(&lognormal, 100_000, 2),
        Family::LogNormal,
        Variable::Bytes,
    )
    .unwrap();
    let mu_error = fitted.standard_errors.unwrap()[0];
    let envelope_error = fitted.model.log_scale_error.unwrap();
    assert!((mu_error - envelope_error).abs() < 1e-6 * mu_error);
}

/// The statistical properties' cases come from a fixed seed, so the suite is deterministic:
/// each check passes with probability ~1 − 6·10⁻⁵ (4 standard errors), and a random draw of
/// cases failed by chance in CI on 2026-12-01 (z = 4.2 at shape 1.51, scale 10³; 200 seeds
/// there gave z a mean of −0.10 and an sd of 0.95, none beyond 4: an unbiased fit, unlucky).
const STATISTICAL_SEED: u64 = 0x05ee_df17;

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(STATISTICAL_SEED),
        ..ProptestConfig::with_cases(24)
    })]

    /// Any Gamma over bytes with shape 0.3–3 and scale 10^3–10^8 bytes, 50,000 sampled files:
    /// shape and scale within 4 standard errors and 6%.
    #[test]
    fn gamma_fits_recover_shape_and_scale_from_sampled_histograms(
        shape in 0.3f64..3.0,
        scale_log10 in 3.0f64..8.0,
        seed in any::<u64>(),
    ) {
        let model = FileSizeModel::new(
            Shape::Gamma { shape, scale: 10f64.powf(scale_log10) },
            Variable::Bytes,
        );
        let fitted = fit(&sampled_histogram(&model, 50_000, seed), Family::Gamma, Variable::Bytes)
            .unwrap();
        let errors = relative_errors(&model.shape, &fitted.model.shape);
        let standard_errors = fitted.standard_errors.unwrap();
        for ((truth, estimate), error) in model.shape.values().iter()
            .zip(fitted.model.shape.values()).zip(&standard_errors)
        {
            prop_assert!((estimate - truth).abs() <= 4.0 * error,
                "{} vs {} (se {})", estimate, truth, error);
        }
        prop_assert!(errors.iter().all(|e| *e < 0.06), "{:?}", errors);
    }

    /// Any lognormal over bytes, median 2^10–2^24 bytes, σ 0.5–2.3 (mass above 1 TB, where
    /// generation truncates, below 10^-6): within 4 standard errors.
    #[test]
    fn lognormal_fits_recover_mu_and_sigma_from_sampled_histograms(
        median_log2 in 10.0f64..24.0,
        sigma in 0.5f64..2.3,
        seed in any::<u64>(),
    ) {
        let model = FileSizeModel::new(
            Shape::LogNormal { mu: median_log2 * std::f64::consts::LN_2, sigma },
            Variable::Bytes,
        );
        let fitted = fit(&sampled_histogram(&model, 50_000, seed), Family::LogNormal, Variable::Bytes)
            .unwrap();
        let standard_errors = fitted.standard_errors.unwrap();
        for ((truth, estimate), error) in model.shape.values().iter()
            .zip(fitted.model.shape.values()).zip(&standard_errors)
        {
            prop_assert!((estimate - truth).abs() <= 4.0 * error,
                "{} vs {} (se {})", estimate, truth, error);
        }
    }

    /// Any Stacy model over log2 bytes with a 12–18, d 2–8, p 1.5–4, from noise-free
    /// histograms (the continuous model's bucket probabilities, no truncation): every parameter
    /// to 10^-3. From samples Stacy's d and p trade off along a ridge, so only the standard-error
    /// bound of the test above holds there.
    #[test]
    fn generalised_gamma_fits_recover_a_d_and_p_from_noise_free_histograms(
        a in 12.0f64..18.0,
        d in 2.0f64..8.0,
        p in 1.5f64..4.0,
    ) {
        let model = FileSizeModel::new(Shape::GeneralizedGamma { a, d, p }, Variable::Log2);
        let fitted = fit(&expected_histogram(&model, 0, 50, 100_000_000), Family::GeneralizedGamma, Variable::Log2)
            .unwrap();
        let errors = relative_errors(&model.shape, &fitted.model.shape);
        prop_assert!(errors.iter().all(|e| *e < 1e-3), "{:?} → {:?}", model.shape, fitted.model.shape);
    }
}

/// A fit concentrated far from the empty buckets (generalised Gamma over bytes runs to p ≈ 540
/// here) gives those buckets probability 0, not NaN: CI's proptest found a NaN chi-square.
#[test]
fn a_concentrated_fit_has_a_finite_chi_square_and_ks_distance() {
    let histogram = Histogram::from_counts(0, vec![0, 0, 1, 0, 19, 0]);
    let fitted = fit(&histogram, Family::GeneralizedGamma, Variable::Bytes).expect("fits");
    let goodness = &fitted.goodness;
    assert!(
        goodness.chi_square.is_finite() && goodness.chi_square >= 0.0,
        "{goodness:?}"
    );
    // One file of twenty lies two buckets below the rest: the binned cdfs differ by ~1/20.
    assert!(
        goodness.ks_distance > 0.0 && goodness.ks_distance < 0.1,
        "{goodness:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Whatever counts a histogram holds, a fit returns a result or a typed refusal, never a
    /// panic, and a returned fit is finite with a KS distance in [0, 1].
    #[test]
    fn any_histogram_fits_or_is_refused_without_panicking(
        first in 0u32..40,
        counts in proptest::collection::vec(prop_oneof![Just(0u64), 1u64..10, 1u64..1_000_000_000], 1..23),
        family in 0usize..3,
        log2 in any::<bool>(),
    ) {
        prop_assume!(counts.iter().any(|&c| c > 0));
        let histogram = Histogram::from_counts(first, counts);
        let family = Family::ALL[family];
        let variable = if log2 { Variable::Log2 } else { Variable::Bytes };
        match fit(&histogram, family, variable) {
            Ok(fitted) => {
                prop_assert!(fitted.log_likelihood.is_finite());
                prop_assert!((0.0..=1.0).contains(&fitted.goodness.ks_distance));
                prop_assert!(fitted.goodness.chi_square >= 0.0);
                if let Some(error) = fitted.model.log_scale_error {
                    prop_assert!(error.is_finite() && error > 0.0);
                }
            }
            Err(FitError::OneBucket { .. }) => prop_assert_eq!(histogram.occupied_buckets(), 1),
            Err(FitError::NoFiniteLikelihood) => {}
        }
    }
}
