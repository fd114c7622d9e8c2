//! summary.md building blocks: the run settings line and the table of each paper claim beside
//! ours, and the verdicts a row may reach.
//!
//! Invariants:
//! - every "ours" column is computed from the experiment's rows by the caller; this module
//!   judges and formats. The paper's column is quoted text with its section;
//! - a verdict is reached on the configuration the paper describes (the "as described"
//!   column); Spinwise's additions get their own column and are never judged against the paper;
//! - a quantity the preset was calibrated on says "calibrated", never "agrees" ([`Basis`]);
//!   arithmetic on the rack file says so; a direction-only claim says so and is checked at
//!   every step ([`judge_trend`]);
//! - every tested row states its tolerance and why; a row that differs carries a diagnostic the
//!   caller measured.

use super::Context;
use super::sweep::Row;
use spinwise_sim::BlobSizes;

/// One line of the comparison table: the paper's claim, ours on the configuration the paper
/// describes, ours with Spinwise's additions when they were run, the verdict and its tolerance.
pub struct Comparison {
    pub quantity: String,
    /// The paper's value as quoted, with its section ("≈ 40 Gbps (Pelican §4.2)").
    pub paper: String,
    /// Ours on the rack and scheduler as the paper describes them.
    pub as_described: String,
    /// Ours with Spinwise's additions on (staggered switches, several reads per class, FP's
    /// queue per group), when the experiment ran them; never judged against the paper.
    pub with_additions: Option<String>,
    pub verdict: Verdict,
    /// The tolerance and why it is that wide ("±10%: ..."), or why there is none.
    pub tolerance: String,
}

/// What a row's number is, which decides the verdicts it can reach.
#[derive(Clone, Copy, Debug)]
pub enum Basis {
    /// Not tuned on the paper's value: agreement is a test of the model.
    Test(Tolerance),
    /// The preset was tuned so this quantity matches the paper (the text says how): the row
    /// says "calibrated" and never "agrees", whatever the numbers.
    Calibrated(&'static str),
    /// Arithmetic (on the rack file, or on the paper's own numbers), not a simulation result.
    Arithmetic,
}

/// Why a row about one of Spinwise's additions is not judged.
pub const OUR_ADDITION: &str = "our addition, not a paper claim";

/// How far from the paper's value still counts as agreeing, and why that far.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// A fraction of the paper's value (0.1 = ±10%), or absolute units for [`Tolerance::points`].
    pub width: f64,
    /// Whether `width` is absolute (percentage points of a rate) rather than relative.
    pub absolute: bool,
    /// Why: the precision the paper gives (a number read off a figure, "about", a bound).
    pub why: &'static str,
}

impl Tolerance {
    /// ±`fraction` of the paper's value.
    pub const fn relative(fraction: f64, why: &'static str) -> Tolerance {
        Tolerance {
            width: fraction,
            absolute: false,
            why,
        }
    }

    /// ±`points` percentage points (for rates given as fractions, `points` in 0..1 units).
    pub const fn points(points: f64, why: &'static str) -> Tolerance {
        Tolerance {
            width: points,
            absolute: true,
            why,
        }
    }

    fn holds(&self, ours: f64, paper: f64) -> bool {
        if self.absolute {
            (ours - paper).abs() <= self.width + 1e-12
        } else {
            relative(ours, paper).abs() <= self.width + 1e-12
        }
    }

    pub fn text(&self) -> String {
        if self.absolute {
            let points = self.width * 100.0;
            let unit = if points.round() == 1.0 {
                "point"
            } else {
                "points"
            };
            format!("±{points:.0} {unit}: {}", self.why)
        } else {
            format!("±{:.0}%: {}", self.width * 100.0, self.why)
        }
    }
}

/// A row's verdict. A `Differs` or `TrendBroken` carries a diagnostic the experiment measured
/// (an ablation, a second configuration, a count from the rows), never text written in advance.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Agrees,
    Differs(String),
    /// The quantity was calibrated to the paper's value: not evidence either way.
    Calibrated(&'static str),
    /// Arithmetic (on the rack file, or on the paper's own numbers), not a test of the simulator.
    Arithmetic,
    /// A direction-only claim held at every step checked (the count says how many).
    TrendHolds {
        steps: usize,
    },
    TrendBroken(String),
    /// Shown, not judged against the paper, and why (one of Spinwise's additions, a number the
    /// paper does not give, a per-rate detail of a judged row).
    NotJudged(&'static str),
}

impl Verdict {
    pub fn text(&self) -> String {
        match self {
            Verdict::Agrees => "agrees".into(),
            Verdict::Differs(diagnostic) => format!("differs: {diagnostic}"),
            Verdict::Calibrated(how) => format!("calibrated ({how}), not a test"),
            Verdict::Arithmetic => "arithmetic, not a test".into(),
            Verdict::TrendHolds { steps } => {
                format!("agrees in direction at every step ({steps} checked; trend only)")
            }
            Verdict::TrendBroken(diagnostic) => format!("trend broken: {diagnostic}"),
            Verdict::NotJudged(why) => format!("not judged: {why}"),
        }
    }
}

/// The verdict on `ours` against `paper` under `basis`, and the tolerance column's text.
/// `diagnose` runs only when a tested quantity falls outside its tolerance; it gets the signed
/// relative difference and must measure why (from the rows, an ablation run).
pub fn judge(
    ours: f64,
    paper: f64,
    basis: Basis,
    diagnose: impl FnOnce(f64) -> String,
) -> (Verdict, String) {
    match basis {
        Basis::Calibrated(how) => (
            Verdict::Calibrated(how),
            "none: a calibrated quantity cannot test the model".into(),
        ),
        Basis::Arithmetic => (
            Verdict::Arithmetic,
            "none: computed from the rack file".into(),
        ),
        Basis::Test(tolerance) if tolerance.holds(ours, paper) => {
            (Verdict::Agrees, tolerance.text())
        }
        Basis::Test(tolerance) => {
            let difference = if tolerance.absolute {
                ours - paper
            } else {
                relative(ours, paper)
            };
            let measured = if tolerance.absolute {
                format!("{:+.0} points", difference * 100.0)
            } else {
                format!("{:+.0}%", difference * 100.0)
            };
            (
                Verdict::Differs(format!("{measured}; {}", diagnose(difference))),
                tolerance.text(),
            )
        }
    }
}

/// A claim that holds or not, with no number to compare (a bound, an order): `Agrees` when it
/// holds, else `Differs` with the measured diagnostic.
pub fn judge_claim(
    holds: bool,
    tolerance: &str,
    diagnose: impl FnOnce() -> String,
) -> (Verdict, String) {
    if holds {
        (Verdict::Agrees, tolerance.into())
    } else {
        (Verdict::Differs(diagnose()), tolerance.into())
    }
}

/// A direction-only claim checked at every step of `values` (in the order the paper's axis
/// runs): each must be strictly above (`rising`) or below the one before. `label` names a step.
pub fn judge_trend(
    values: &[(String, f64)],
    rising: bool,
    diagnose: impl FnOnce(&str) -> String,
) -> (Verdict, String) {
    let tolerance = "none: a direction, checked at every step".to_string();
    for pair in values.windows(2) {
        let ((_, before), (label, after)) = (&pair[0], &pair[1]);
        let holds = if rising {
            after > before
        } else {
            after < before
        };
        if !holds {
            return (Verdict::TrendBroken(diagnose(label)), tolerance);
        }
    }
    (
        Verdict::TrendHolds {
            steps: values.len().saturating_sub(1),
        },
        tolerance,
    )
}

/// The summary's header: what ran, how long, with which seeds.
pub fn header(title: &str, context: &Context, rows: &[Row]) -> String {
    let violations: u64 = rows.iter().map(|r| r.budget_violations).sum();
    format!(
        "# {title}\n\n{} runs, {} measured simulated hours each after {} h of warm-up, {} seed(s) \
         per configuration from base seed {}{}. Budget violations found by the simulator's \
         independent checker over all runs: {violations}. Every number below is computed from \
         `results.csv`. {}{}\n\n",
        rows.len(),
        context.hours,
        context.warmup_hours,
        context.seeds,
        context.base_seed,
        if context.quick {
            " (--quick: fewer points and short runs, so numbers are noisy)"
        } else {
            ""
        },
        blob_text(context),
        stagger_text(rows),
    )
}

/// Which runs staggered the switches of classes sharing a NIC (our addition to Pelican's
/// scheduler, which the pelican preset ships with), so no reader takes them for Pelican §2.3's.
fn stagger_text(rows: &[Row]) -> String {
    let staggered: Vec<u32> = rows
        .iter()
        .filter_map(|r| r.stagger_switches_min_queue)
        .collect();
    let Some(depth) = staggered.iter().min() else {
        return String::new();
    };
    let depths = if staggered.iter().all(|d| d == depth) {
        format!("{depth}")
    } else {
        format!("{depth} or more")
    };
    let which = if staggered.len() == rows.len() {
        "every run".to_string()
    } else {
        format!(
            "{} of the {} runs (the others switch independently)",
            staggered.len(),
            rows.len()
        )
    };
    format!(
        " In {which} the classes that share a NIC stagger their group switches from {depths} \
         queued reads (the layout's `stagger_switches_min_queue`, which the pelican preset \
         sets: our addition, not Pelican §2.3's scheduler; docs/simulator.md, \"Staggered \
         switches\")."
    )
}

/// What one request reads; the paper values quoted in the tables are for 1 GB blobs.
fn blob_text(context: &Context) -> String {
    match context.blob_sizes {
        BlobSizes::VhdLike => "Requests read VHD-like sizes (200 MB–9 GB, mean 3.3 GB), so the \
                               paper's 1 GB figures below are not like for like."
            .into(),
        BlobSizes::Fixed if context.blob_bytes == 1_000_000_000 => {
            "Every request reads one 1 GB blob, as in the papers.".into()
        }
        BlobSizes::Fixed => format!(
            "Every request reads {} bytes, so the paper's 1 GB figures below are not like for like.",
            context.blob_bytes
        ),
    }
}

pub fn table(comparisons: &[Comparison]) -> String {
    let mut text = String::from(
        "| quantity | paper | as described | with our additions | verdict | tolerance and why |\n\
         |---|---|---|---|---|---|\n",
    );
    for c in comparisons {
        text.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            c.quantity,
            c.paper,
            c.as_described,
            c.with_additions.as_deref().unwrap_or("—"),
            c.verdict.text(),
            c.tolerance
        ));
    }
    text
}

/// Relative difference of `ours` from `paper`, as a fraction of `paper`.
pub fn relative(ours: f64, paper: f64) -> f64 {
    (ours - paper) / paper
}

/// Mean of `metric` over rows matching `keep`; `None` when nothing matches.
pub fn mean_of(
    rows: &[Row],
    keep: impl Fn(&Row) -> bool,
    metric: impl Fn(&Row) -> f64,
) -> Option<f64> {
    let values: Vec<f64> = rows.iter().filter(|r| keep(r)).map(metric).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// A rate as people write it (0.0625, 0.5, 4).
pub fn rate(value: f64) -> String {
    let text = format!("{value:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEN_PERCENT: Tolerance = Tolerance::relative(0.1, "read off a figure");

    #[test]
    fn a_calibrated_quantity_is_never_reported_as_agreement_even_when_it_matches() {
        let (verdict, tolerance) = judge(14.2, 14.2, Basis::Calibrated("tuned to it"), |_| {
            panic!("a calibrated quantity is not diagnosed")
        });
        assert_eq!(verdict, Verdict::Calibrated("tuned to it"));
        assert!(!verdict.text().contains("agrees"), "{}", verdict.text());
        assert!(tolerance.contains("calibrated"), "{tolerance}");
    }

    #[test]
    fn a_tested_quantity_agrees_inside_its_tolerance_and_differs_with_its_diagnostic_outside() {
        let (inside, tolerance) = judge(43.9, 40.0, Basis::Test(TEN_PERCENT), |_| unreachable!());
        assert_eq!(inside, Verdict::Agrees);
        assert_eq!(tolerance, "±10%: read off a figure");
        let (outside, _) = judge(30.0, 40.0, Basis::Test(TEN_PERCENT), |difference| {
            format!("measured {difference:+.2}")
        });
        assert_eq!(outside, Verdict::Differs("-25%; measured -0.25".into()));
        let points = Tolerance::points(0.05, "whole percentages");
        let (verdict, _) = judge(0.31, 0.35, Basis::Test(points), |_| unreachable!());
        assert_eq!(verdict, Verdict::Agrees);
        let (verdict, _) = judge(0.20, 0.35, Basis::Test(points), |_| "why".into());
        assert_eq!(verdict, Verdict::Differs("-15 points; why".into()));
    }

    #[test]
    fn arithmetic_says_so_whatever_the_numbers() {
        let (verdict, _) = judge(10.0, 10.9, Basis::Arithmetic, |_| unreachable!());
        assert_eq!(verdict, Verdict::Arithmetic);
        assert!(verdict.text().contains("not a test"));
    }

    #[test]
    fn a_trend_is_checked_at_every_step_not_only_its_ends() {
        let steps = |values: &[f64]| -> Vec<(String, f64)> {
            values
                .iter()
                .enumerate()
                .map(|(i, &v)| (format!("step {i}"), v))
                .collect()
        };
        let (holds, _) = judge_trend(&steps(&[9.0, 5.0, 2.0]), false, |_| unreachable!());
        assert_eq!(holds, Verdict::TrendHolds { steps: 2 });
        // Falling from end to end, but rising in the middle: broken at that step.
        let (broken, _) = judge_trend(&steps(&[9.0, 5.0, 6.0, 2.0]), false, |label| {
            format!("at {label}")
        });
        assert_eq!(broken, Verdict::TrendBroken("at step 2".into()));
        assert!(holds.text().contains("trend only"), "{}", holds.text());
    }

    #[test]
    fn the_table_has_a_column_for_each_configuration_the_verdict_and_the_tolerance() {
        let text = table(&[Comparison {
            quantity: "q".into(),
            paper: "p".into(),
            as_described: "a".into(),
            with_additions: None,
            verdict: Verdict::NotJudged(OUR_ADDITION),
            tolerance: "t".into(),
        }]);
        assert!(text.starts_with(
            "| quantity | paper | as described | with our additions | verdict | tolerance and why |"
        ));
        assert!(
            text.contains("| q | p | a | — | not judged: our addition, not a paper claim | t |")
        );
    }
}
