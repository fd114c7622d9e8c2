//! The models' functions agree with each other and with their samples: cdf + sf = 1, the cdf
//! is the integral of the pdf, special cases match (Stacy with p = 1 is the Gamma), samples
//! follow the cdf, parameters read back from their own text, and envelopes order the cdfs.

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use spinwise_workload::{
    Envelope, Family, FileSizeModel, MAX_FILE_BYTES, ParamsError, Shape, Variable,
    normal_quantile_two_sided,
};

fn shapes() -> Vec<Shape> {
    vec![
        Shape::Gamma {
            shape: 0.6,
            scale: 3.0,
        },
        Shape::Gamma {
            shape: 4.0,
            scale: 0.5,
        },
        Shape::GeneralizedGamma {
            a: 2.0,
            d: 1.5,
            p: 0.7,
        },
        Shape::GeneralizedGamma {
            a: 1.0,
            d: 3.0,
            p: 2.5,
        },
        Shape::LogNormal {
            mu: 0.3,
            sigma: 0.8,
        },
    ]
}

/// Simpson's rule over [lower, upper] in `steps` (even) intervals.
fn integrate(f: impl Fn(f64) -> f64, lower: f64, upper: f64, steps: usize) -> f64 {
    let h = (upper - lower) / steps as f64;
    let mut sum = f(lower) + f(upper);
    for i in 1..steps {
        let weight = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += weight * f(lower + i as f64 * h);
    }
    sum * h / 3.0
}

#[test]
fn cdf_and_survival_function_add_up_to_one_and_the_cdf_never_decreases() {
    for shape in shapes() {
        let mut previous = 0.0;
        for i in 1..400 {
            let x = i as f64 * 0.05;
            let cdf = shape.cdf(x);
            assert!((cdf + shape.sf(x) - 1.0).abs() < 1e-12, "{shape:?} at {x}");
            assert!(cdf >= previous - 1e-15, "{shape:?} decreases at {x}");
            assert!((0.0..=1.0).contains(&cdf));
            previous = cdf;
        }
        assert_eq!(shape.cdf(0.0), 0.0);
        assert_eq!(shape.cdf(-1.0), 0.0);
        assert_eq!(shape.sf(0.0), 1.0);
    }
}

#[test]
fn the_cdf_is_the_integral_of_the_pdf() {
    for shape in shapes() {
        // Start a little above 0: a Gamma with shape < 1 has an integrable pole there.
        let lower = 0.5;
        for upper in [1.0, 2.0, 5.0] {
            let integral = integrate(|x| shape.pdf(x), lower, upper, 2_000);
            let difference = shape.cdf(upper) - shape.cdf(lower);
            assert!(
                (integral - difference).abs() < 1e-7,
                "{shape:?} on [{lower}, {upper}]: ∫pdf {integral} vs Δcdf {difference}"
            );
        }
    }
}

#[test]
fn stacy_with_power_one_is_the_gamma_with_shape_d_and_scale_a() {
    let stacy = Shape::GeneralizedGamma {
        a: 3.0,
        d: 2.2,
        p: 1.0,
    };
    let gamma = Shape::Gamma {
        shape: 2.2,
        scale: 3.0,
    };
    for i in 1..100 {
        let x = i as f64 * 0.3;
        assert!((stacy.cdf(x) - gamma.cdf(x)).abs() < 1e-12);
        assert!((stacy.pdf(x) - gamma.pdf(x)).abs() < 1e-12);
    }
}

#[test]
fn sampled_sizes_follow_the_model_cdf_in_every_bucket() {
    // 200,000 draws: each bucket's share within 5 standard errors of the model's (plus the
    // share lost to flooring below 1 byte, which the model puts in bucket 0 anyway).
    let models = [
        FileSizeModel::new(
            Shape::Gamma {
                shape: 0.7,
                scale: 5e5,
            },
            Variable::Bytes,
        ),
        FileSizeModel::new(
            Shape::GeneralizedGamma {
                a: 14.0,
                d: 5.0,
                p: 3.0,
            },
            Variable::Log2,
        ),
        FileSizeModel::new(
            Shape::LogNormal {
                mu: 10.0,
                sigma: 2.0,
            },
            Variable::Bytes,
        ),
    ];
    let draws = 200_000;
    for model in models {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let sizes: Vec<u64> = (0..draws).map(|_| model.sample_bytes(&mut rng)).collect();
        assert!(sizes.iter().all(|&s| (1..=MAX_FILE_BYTES).contains(&s)));
        for bucket_log2 in 1..40u32 {
            let lower = (bucket_log2 as f64).exp2();
            let upper = lower * 2.0;
            let expected = model.cdf_bytes(upper) - model.cdf_bytes(lower);
            let observed = sizes
                .iter()
                .filter(|&&s| s >= lower as u64 && s < upper as u64)
                .count() as f64
                / draws as f64;
            let error = (expected * (1.0 - expected) / draws as f64).sqrt();
            assert!(
                (observed - expected).abs() <= 5.0 * error + 1e-6,
                "{model:?} bucket {bucket_log2}: observed {observed}, expected {expected}"
            );
        }
    }
}

#[test]
fn the_same_seed_draws_the_same_sizes() {
    let model = FileSizeModel::new(
        Shape::Gamma {
            shape: 1.2,
            scale: 1e6,
        },
        Variable::Bytes,
    );
    let draw = |seed| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..100)
            .map(|_| model.sample_bytes(&mut rng))
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(5), draw(5));
    assert_ne!(draw(5), draw(6));
}

#[test]
fn parameters_read_back_from_their_own_text_exactly() {
    for shape in shapes() {
        for variable in [Variable::Bytes, Variable::Log2] {
            let mut model = FileSizeModel::new(shape, variable);
            model.log_scale_error = Some(0.0123456789);
            let text = model.params_text();
            let again = FileSizeModel::parse_params(shape.family(), variable, &text).unwrap();
            assert_eq!(again, model, "{text}");
        }
    }
}

#[test]
fn bad_parameter_texts_are_refused_with_the_reason() {
    let parse = |family, text| FileSizeModel::parse_params(family, Variable::Bytes, text);
    assert!(matches!(
        parse(Family::Gamma, "shape=1"),
        Err(ParamsError::Missing { name: "scale", .. })
    ));
    assert!(matches!(
        parse(Family::Gamma, "shape=1,scale=2,scale=3"),
        Err(ParamsError::Repeated { .. })
    ));
    assert!(matches!(
        parse(Family::Gamma, "shape=1,scale=2,d=3"),
        Err(ParamsError::Unknown { .. })
    ));
    assert!(matches!(
        parse(Family::Gamma, "shape=-1,scale=2"),
        Err(ParamsError::OutOfRange { .. })
    ));
    assert!(matches!(
        parse(Family::Gamma, "shape=1,scale=inf"),
        Err(ParamsError::OutOfRange { .. })
    ));
    assert!(matches!(
        parse(Family::Gamma, "shape=NaN,scale=2"),
        Err(ParamsError::OutOfRange { .. })
    ));
    assert!(matches!(
        parse(Family::LogNormal, "mu=x,sigma=1"),
        Err(ParamsError::NotANumber { .. })
    ));
    assert!(matches!(
        parse(Family::LogNormal, "mu 1"),
        Err(ParamsError::NotAPair { .. })
    ));
    assert!(matches!(
        parse(Family::LogNormal, "mu=-3,sigma=1,log_scale_error=-1"),
        Err(ParamsError::OutOfRange { .. })
    ));
    // A negative mu is a lognormal with median below 1: allowed.
    assert!(parse(Family::LogNormal, "mu=-3,sigma=1").is_ok());
    // Each value fine alone, their combination past what a draw can use (both panicked in
    // `workload generate` until 2026-12-01).
    assert!(matches!(
        parse(Family::GeneralizedGamma, "a=1000,d=5e-324,p=1e308"),
        Err(ParamsError::OutOfRange { .. })
    ));
    let wide = parse(Family::Gamma, "shape=2,scale=1000000,log_scale_error=1000")
        .expect("each value is fine");
    assert!(matches!(
        wide.envelope(Envelope::Upper, 0.95),
        Err(ParamsError::OutOfRange { .. })
    ));
}

#[test]
fn an_envelope_needs_a_scale_error_and_a_level_inside_zero_and_one() {
    let model = FileSizeModel::new(
        Shape::Gamma {
            shape: 1.0,
            scale: 1.0,
        },
        Variable::Bytes,
    );
    assert_eq!(
        model.envelope(Envelope::Lower, 0.95),
        Err(ParamsError::NoScaleError)
    );
    let with_error = FileSizeModel {
        log_scale_error: Some(0.1),
        ..model
    };
    for level in [0.0, 1.0, -0.5, f64::NAN] {
        assert!(matches!(
            with_error.envelope(Envelope::Upper, level),
            Err(ParamsError::Confidence { .. })
        ));
    }
}

#[test]
fn the_two_sided_normal_quantile_at_95_percent_is_1_96() {
    assert!((normal_quantile_two_sided(0.95) - 1.959963984540054).abs() < 1e-9);
    assert!((normal_quantile_two_sided(0.6826894921370859) - 1.0).abs() < 1e-9);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The definition's promise: at every size the upper envelope's cdf is at least the model's
    /// (more small files) and the lower envelope's at most (more large files).
    #[test]
    fn the_upper_envelope_cdf_is_above_the_model_and_the_lower_below_at_every_size(
        family in 0usize..3,
        first in 0.2f64..5.0,
        second in 0.2f64..5.0,
        third in 0.3f64..3.0,
        error in 0.001f64..0.5,
        log2 in any::<bool>(),
        size_log2 in 0.0f64..40.0,
    ) {
        let shape = match family {
            0 => Shape::Gamma { shape: first, scale: second * 1e4 },
            1 => Shape::GeneralizedGamma { a: second * 1e4, d: first, p: third },
            _ => Shape::LogNormal { mu: 8.0 + first, sigma: third },
        };
        let variable = if log2 { Variable::Log2 } else { Variable::Bytes };
        let model = FileSizeModel { shape, variable, log_scale_error: Some(error) };
        let upper = model.envelope(Envelope::Upper, 0.95).unwrap();
        let lower = model.envelope(Envelope::Lower, 0.95).unwrap();
        let size_bytes = size_log2.exp2();
        let tolerance = 1e-12;
        prop_assert!(upper.cdf_bytes(size_bytes) >= model.cdf_bytes(size_bytes) - tolerance);
        prop_assert!(lower.cdf_bytes(size_bytes) <= model.cdf_bytes(size_bytes) + tolerance);
    }
}

/// The log-space tails the fit relies on where probabilities underflow: checked against closed
/// forms (Gamma with shape 1 and 2, whose survival functions are e^−x and (1 + x)e^−x), against
/// the linear-space functions where both are representable, and for continuity where the
/// lognormal switches to its asymptotic series.
#[test]
fn log_tails_stay_finite_and_exact_where_the_probabilities_underflow() {
    let exponential = Shape::Gamma {
        shape: 1.0,
        scale: 1.0,
    };
    let gamma_two = Shape::Gamma {
        shape: 2.0,
        scale: 1.0,
    };
    for x in [50.0, 700.0, 800.0, 5_000.0, 1e5] {
        assert!((exponential.ln_sf(x) + x).abs() <= 1e-12 * x, "e^-x at {x}");
        let expected = (1.0 + x).ln() - x;
        assert!(
            (gamma_two.ln_sf(x) - expected).abs() <= 1e-12 * x,
            "(1 + x)e^-x at {x}: {} vs {expected}",
            gamma_two.ln_sf(x)
        );
    }
    // Lower tail: P(1, x) = 1 − e^−x ≈ x for tiny x, far below f64 for x^k with large k.
    for x in [1e-10, 1e-200, 1e-300] {
        assert!((exponential.ln_cdf(x) - x.ln()).abs() < 1e-9);
    }
    let steep = Shape::Gamma {
        shape: 50.0,
        scale: 1.0,
    };
    assert!(steep.cdf(1e-10) == 0.0 && steep.ln_cdf(1e-10).is_finite());
    // Where both are representable, they agree.
    for shape in shapes() {
        for i in 1..60 {
            let x = i as f64 * 0.25;
            for (linear, log) in [
                (shape.cdf(x), shape.ln_cdf(x)),
                (shape.sf(x), shape.ln_sf(x)),
            ] {
                if linear > 1e-250 {
                    assert!(
                        (linear.ln() - log).abs() <= 1e-9 * linear.ln().abs().max(1.0),
                        "{shape:?} at {x}: ln {linear} vs {log}"
                    );
                }
            }
        }
    }
    // The lognormal's switch to its asymptotic series at 30 standard deviations is seamless.
    let lognormal = Shape::LogNormal {
        mu: 0.0,
        sigma: 1.0,
    };
    let just_below = lognormal.ln_sf(29.999_999f64.exp());
    let just_above = lognormal.ln_sf(30.000_001f64.exp());
    assert!(just_below > just_above && (just_below - just_above) < 1e-4);
    assert!(lognormal.ln_sf(60.0f64.exp()).is_finite());
}
