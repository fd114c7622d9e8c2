//! Pelican Fig. 7 (Pelican §4.3, /work/shared/papers/pelican.txt): one disk holding 4.28 TB in
//! 64,329 stripe stacks fails at the end of the warm-up and is rebuilt inside its group while
//! clients read at a given rate; rebuild time and the clients' time to first byte vs that rate.
//!
//! Invariants: every rate runs twice with the same seed index, once with the failure and once
//! healthy, so the time-to-first-byte ratio compares like with like; the simulator keeps running
//! after arrivals stop until the rebuild is done, so every failed run has a `rebuild_s`, and the
//! summary says when a rebuild outlasted the client load (then its tail ran unloaded). The
//! per-class comparison pairs each failed run with the healthy run of the same rate and seed
//! index and reads, in both, the class that holds the failed disk in the failed run
//! (`rebuild_class`): the paper's × 2.2 is that class's failed ÷ healthy time to first byte, its
//! × 1 the other classes' (their reads pooled, each class weighted by its reads).

use super::summary::{
    Basis, Comparison, Tolerance, Verdict, header, judge, judge_trend, mean_of, rate, table,
};
use super::sweep::{Job, Row, Setup, points, run_sweep};
use super::{Context, Figure, Outcome};
use crate::error::ExperimentResult;
use spinwise_report::{LineChart, LinePoint, Series, SeriesStyle, YScale};
use spinwise_sim::{DiskFailure, PolicyKind};

/// Client rates (req/s). The paper's axis starts at 0; the simulator needs a positive rate, so the
/// lowest point is Fig. 5's lowest, 0.0625 req/s (0.5 Gbps offered, next to no load).
const RATES: &[f64] = &[0.0625, 0.5, 1.0, 2.0, 4.0, 5.0, 8.0];
const QUICK_RATES: &[f64] = &[1.0, 5.0];
/// Two servers × 20 Gbps, as in Pelican §4.3 ("the same as that of the previous section").
const NETWORK_GBPS: f64 = 40.0;
/// Pelican §4.3's numbers: x / t / w with x = 4.28 TB, t = 105 MB/s, w = 0.5.
const FAILED_BYTES: f64 = 4.28e12;
const DISK_BYTES_PER_S: f64 = 105e6;
const REBUILD_SHARE: f64 = 0.5;

fn is_failed(row: &Row) -> bool {
    row.rebuild_s.is_some()
}

pub fn fig7(context: &Context) -> ExperimentResult<Outcome> {
    let setups = [Setup::synthesized("pelican")?];
    let rates = if context.quick { QUICK_RATES } else { RATES };
    let mut jobs = Vec::new();
    for &rate_per_s in rates {
        for failure in [Some(DiskFailure::default()), None] {
            jobs.push(Job {
                setup: 0,
                policy: PolicyKind::Pelican,
                network_gbps: Some(NETWORK_GBPS),
                rate_per_s,
                failure,
                ..Job::default()
            });
        }
    }
    let rows = run_sweep("pelican-fig7", context, &setups, &jobs)?;
    let figures = figures(&rows);
    let summary = header(
        "Pelican Fig. 7: rebuild after a disk failure vs client load",
        context,
        &rows,
    ) + &table(&comparisons(&rows))
        + &window_note(&rows);
    Ok(Outcome {
        rows: rows.into(),
        figures,
        summary,
    })
}

fn series(rows: &[Row], name: &str, failed: bool, y: fn(&Row) -> f64) -> Series {
    Series {
        name: name.into(),
        style: SeriesStyle::LineWithMarkers,
        points: points(rows, |r| is_failed(r) == failed, |r| r.rate_per_s, y),
    }
}

fn figures(rows: &[Row]) -> Vec<Figure> {
    let rate_label = "request rate (req/s)";
    let rebuild_hours = |r: &Row| r.rebuild_s.unwrap_or(0.0) / 3600.0;
    let chart = |title: &str, y_label: &str, series: Vec<Series>| LineChart {
        title: title.into(),
        x_label: rate_label.into(),
        y_label: y_label.into(),
        y_scale: YScale::Linear,
        series: series
            .into_iter()
            .filter(|s| !s.points.is_empty())
            .collect(),
    };
    vec![
        Figure {
            stem: "rebuild_time",
            chart: chart(
                "Pelican Fig. 7(a): time to rebuild 4.28 TB vs client request rate",
                "rebuild time (h)",
                vec![series(
                    rows,
                    "Pelican, one failed disk",
                    true,
                    rebuild_hours,
                )],
            ),
        },
        Figure {
            stem: "time_to_first_byte",
            chart: chart(
                "Pelican Fig. 7(b): client time to first byte, failed vs healthy rack",
                "mean time to first byte, all classes (s)",
                vec![
                    series(rows, "one failed disk", true, |r| r.ttfb_mean_s),
                    series(rows, "healthy", false, |r| r.ttfb_mean_s),
                ],
            ),
        },
        Figure {
            stem: "time_to_first_byte_by_class",
            chart: chart(
                "Pelican Fig. 7(b): time to first byte in the failed group's class and the others",
                "mean time to first byte (s)",
                class_series(rows),
            ),
        },
    ]
}

/// Per-class mean time to first byte at each rate: the failed group's class and the other classes
/// pooled, failed rack and healthy rack (same class index, same seed index).
fn class_series(rows: &[Row]) -> Vec<Series> {
    let pairs = class_pairs(rows);
    let line = |name: &str, value: fn(&ClassPair) -> f64| Series {
        name: name.into(),
        style: SeriesStyle::LineWithMarkers,
        points: pairs
            .iter()
            .map(|pair| LinePoint::new(pair.rate_per_s, value(pair)))
            .collect(),
    };
    vec![
        line("failed group's class, one failed disk", |p| {
            p.failed_class.0
        }),
        line("same class, healthy", |p| p.failed_class.1),
        line("other classes, one failed disk", |p| p.other_classes.0),
        line("other classes, healthy", |p| p.other_classes.1),
    ]
}

/// One rate's per-class time to first byte (mean over its seeds), failed run then healthy run.
#[derive(Clone, Copy, Debug)]
struct ClassPair {
    rate_per_s: f64,
    failed_class: (f64, f64),
    other_classes: (f64, f64),
}

/// Read-weighted mean time to first byte of the classes `keep` selects.
fn pooled_mean(row: &Row, keep: impl Fn(usize) -> bool) -> Option<f64> {
    let (mut reads, mut total_s) = (0u64, 0.0);
    for (_, (&count, &mean_s)) in row
        .ttfb_class_count
        .iter()
        .zip(&row.ttfb_class_mean_s)
        .enumerate()
        .filter(|(class, _)| keep(*class))
    {
        reads += count;
        total_s += count as f64 * mean_s;
    }
    (reads > 0).then(|| total_s / reads as f64)
}

/// Pairs each failed run with the healthy run of the same rate and seed index and reads both at
/// the failed run's `rebuild_class`; averages the seeds of each rate. Rates sorted ascending;
/// a rate without per-class numbers (no classes) is left out.
fn class_pairs(rows: &[Row]) -> Vec<ClassPair> {
    let mut by_rate: Vec<(f64, [f64; 4], u32)> = Vec::new();
    for failed in rows.iter().filter(|r| is_failed(r)) {
        let Some(class) = failed.rebuild_class.map(|c| c as usize) else {
            continue;
        };
        let Some(healthy) = rows.iter().find(|r| {
            !is_failed(r) && r.rate_per_s == failed.rate_per_s && r.seed_index == failed.seed_index
        }) else {
            continue;
        };
        let values = [
            pooled_mean(failed, |c| c == class),
            pooled_mean(healthy, |c| c == class),
            pooled_mean(failed, |c| c != class),
            pooled_mean(healthy, |c| c != class),
        ];
        let [Some(a), Some(b), Some(c), Some(d)] = values else {
            continue;
        };
        match by_rate
            .iter_mut()
            .find(|(rate, ..)| *rate == failed.rate_per_s)
        {
            Some((_, sums, seeds)) => {
                for (sum, value) in sums.iter_mut().zip([a, b, c, d]) {
                    *sum += value;
                }
                *seeds += 1;
            }
            None => by_rate.push((failed.rate_per_s, [a, b, c, d], 1)),
        }
    }
    by_rate.sort_by(|x, y| x.0.total_cmp(&y.0));
    by_rate
        .into_iter()
        .map(|(rate_per_s, sums, seeds)| {
            let mean = |i: usize| sums[i] / f64::from(seeds);
            ClassPair {
                rate_per_s,
                failed_class: (mean(0), mean(1)),
                other_classes: (mean(2), mean(3)),
            }
        })
        .collect()
}

/// The paper's per-class effect: × 2.2 in the failed group's class at high rates, × 1 in the
/// others (Pelican §4.3), beside ours at the highest rate, then ours at every rate.
fn class_comparisons(rows: &[Row]) -> Vec<Comparison> {
    let pairs = class_pairs(rows);
    let Some(highest) = pairs.last() else {
        return Vec::new();
    };
    let ratio = |(failed, healthy): (f64, f64)| failed / healthy;
    let by_rate = |value: fn(&ClassPair) -> (f64, f64)| {
        pairs
            .iter()
            .map(|p| format!("× {:.2} at {}", ratio(value(p)), rate(p.rate_per_s)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (failed, healthy) = highest.failed_class;
    let (other_failed, other_healthy) = highest.other_classes;
    let rejects = || {
        let failed = at(rows, true, highest.rate_per_s, |r| r.reject_rate).unwrap_or(0.0);
        let healthy = at(rows, false, highest.rate_per_s, |r| r.reject_rate).unwrap_or(0.0);
        format!(
            "at {} req/s {:.1}% of the reads are rejected on the failed rack and {:.1}% on the \
             healthy one",
            rate(highest.rate_per_s),
            failed * 100.0,
            healthy * 100.0
        )
    };
    let failed_class = judge(
        failed / healthy,
        2.2,
        Basis::Test(Tolerance::relative(0.2, "read off Fig. 7(b) (§4.3)")),
        |_| rejects(),
    );
    let other_classes = judge(
        other_failed / other_healthy,
        1.0,
        Basis::Test(Tolerance::relative(0.1, "\"unaffected\" (§4.3)")),
        |_| rejects(),
    );
    vec![
        Comparison {
            quantity: format!(
                "mean time to first byte in the failed group's class at {} req/s, failed ÷ \
                 healthy rack (same class)",
                rate(highest.rate_per_s)
            ),
            paper: "× 2.2 at high rates (Pelican §4.3, Fig. 7(b))".into(),
            as_described: format!("× {:.2} ({healthy:.0} s → {failed:.0} s)", failed / healthy),
            with_additions: None,
            verdict: failed_class.0,
            tolerance: failed_class.1,
        },
        Comparison {
            quantity: format!(
                "mean time to first byte in the other classes at {} req/s, failed ÷ healthy rack",
                rate(highest.rate_per_s)
            ),
            paper: "× 1: unaffected (Pelican §4.3)".into(),
            as_described: format!(
                "× {:.2} ({other_healthy:.0} s → {other_failed:.0} s)",
                other_failed / other_healthy
            ),
            with_additions: None,
            verdict: other_classes.0,
            tolerance: other_classes.1,
        },
        Comparison {
            quantity: "failed group's class, failed ÷ healthy, by rate".into(),
            paper: "× 2.2 at high rates".into(),
            as_described: by_rate(|p| p.failed_class),
            with_additions: None,
            verdict: Verdict::NotJudged("the per-rate detail of the rows above"),
            tolerance: "per rate, same class and seed index on both racks".into(),
        },
        Comparison {
            quantity: "other classes, failed ÷ healthy, by rate".into(),
            paper: "× 1".into(),
            as_described: by_rate(|p| p.other_classes),
            with_additions: None,
            verdict: Verdict::NotJudged("the per-rate detail of the rows above"),
            tolerance: "per rate, the other classes' reads pooled".into(),
        },
    ]
}

/// Mean of `metric` over the failed (or healthy) runs at one rate.
fn at(rows: &[Row], failed: bool, rate_per_s: f64, metric: fn(&Row) -> f64) -> Option<f64> {
    mean_of(
        rows,
        |r| is_failed(r) == failed && r.rate_per_s == rate_per_s,
        metric,
    )
}

fn rebuild_hours(row: &Row) -> f64 {
    row.rebuild_s.unwrap_or(f64::NAN) / 3600.0
}

fn comparisons(rows: &[Row]) -> Vec<Comparison> {
    let mut rates: Vec<f64> = rows.iter().map(|r| r.rate_per_s).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let (Some(&lowest), Some(&highest)) = (rates.first(), rates.last()) else {
        return Vec::new();
    };
    let transfer_hours = FAILED_BYTES / DISK_BYTES_PER_S / 3600.0;
    let plateau_hours = transfer_hours / REBUILD_SHARE;
    let mut out = Vec::new();
    let by_rate: Vec<(f64, f64)> = rates
        .iter()
        .filter_map(|&r| Some((r, at(rows, true, r, rebuild_hours)?)))
        .collect();
    if by_rate.len() >= 2 {
        let steps: Vec<(String, f64)> = by_rate
            .iter()
            .map(|&(r, hours)| (format!("{} req/s", rate(r)), hours))
            .collect();
        let (verdict, tolerance) = judge_trend(&steps, true, |label| {
            format!(
                "the rebuild does not grow at {label}; it takes {:.0}% of its class's time at \
                 the lowest rate ({transfer_hours:.1} h of transfer in {:.1} h)",
                transfer_hours / by_rate[0].1 * 100.0,
                by_rate[0].1
            )
        });
        out.push(Comparison {
            quantity: format!("rebuild time at {} → {} req/s", rate(lowest), rate(highest)),
            paper: "low when clients leave resources idle, grows with load (Pelican §4.3)".into(),
            as_described: steps
                .iter()
                .map(|(label, h)| format!("{h:.1} h at {label}"))
                .collect::<Vec<_>>()
                .join(", "),
            with_additions: None,
            verdict,
            tolerance,
        });
    }
    if let Some(&(at_rate, longest)) = by_rate.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
        let tolerance = Tolerance::relative(
            0.15,
            "the paper's own estimate x / t × 1 / w (§2.3), \"approximate\"",
        );
        let (verdict, tolerance) = judge(longest, plateau_hours, Basis::Test(tolerance), |_| {
            format!(
                "the rebuild got {:.0}% of its class's time at {} req/s ({transfer_hours:.1} h of \
                 transfer in {longest:.1} h), not the 50% share",
                transfer_hours / longest * 100.0,
                rate(at_rate)
            )
        });
        out.push(Comparison {
            quantity: "longest rebuild over the rates".into(),
            paper: format!(
                "plateau below 24 h: x / t / w = 4.28 TB / 105 MB/s / 0.5 = {plateau_hours:.1} h \
                 (Pelican §4.3, §2.3)"
            ),
            as_described: format!("{longest:.1} h at {} req/s", rate(at_rate)),
            with_additions: None,
            verdict,
            tolerance,
        });
    }
    out.extend(class_comparisons(rows));
    out.extend(ttfb_comparisons(rows, &rates));
    if let (Some(failed), Some(healthy)) = (
        at(rows, true, highest, |r| r.reject_rate),
        at(rows, false, highest, |r| r.reject_rate),
    ) {
        out.push(Comparison {
            quantity: format!("reject rate at {} req/s, failed vs healthy", rate(highest)),
            paper: "not reported".into(),
            as_described: format!("{:.1}% vs {:.1}%", failed * 100.0, healthy * 100.0),
            with_additions: None,
            verdict: Verdict::NotJudged("not reported in the paper"),
            tolerance: "none".into(),
        });
    }
    out
}

/// Time to first byte of the failed rack over the healthy one, at every rate and at the highest.
fn ttfb_comparisons(rows: &[Row], rates: &[f64]) -> Vec<Comparison> {
    let ratio = |rate_per_s: f64, metric: fn(&Row) -> f64| {
        let failed = at(rows, true, rate_per_s, metric)?;
        let healthy = at(rows, false, rate_per_s, metric)?;
        (healthy > 0.0).then_some((rate_per_s, failed, healthy))
    };
    // If only the failed group's class (1 of 4) slows by 2.2×, all classes together slow by
    // (3 + 2.2) / 4 = 1.3×.
    let diluted = (3.0 + 2.2) / 4.0;
    let paper = format!(
        "× 2.2 in the failed group's class at high rates, × 1 elsewhere (Pelican §4.3), so ≈ × \
         {diluted:.1} over all four classes"
    );
    let tolerance = Tolerance::relative(
        0.2,
        "derived from Fig. 7(b)'s × 2.2, itself read off the figure: (3 + 2.2) / 4",
    );
    // Which classes the slowdown is in, at that rate, from the per-class rows.
    let pairs = class_pairs(rows);
    let rejects = |rate_per_s: f64| {
        let failed = at(rows, true, rate_per_s, |r| r.reject_rate).unwrap_or(0.0);
        let healthy = at(rows, false, rate_per_s, |r| r.reject_rate).unwrap_or(0.0);
        let split = pairs
            .iter()
            .find(|p| p.rate_per_s == rate_per_s)
            .map(|p| {
                format!(
                    "the failed group's class slows × {:.2} and the others × {:.2}; ",
                    p.failed_class.0 / p.failed_class.1,
                    p.other_classes.0 / p.other_classes.1
                )
            })
            .unwrap_or_default();
        format!(
            "at {} req/s {split}{:.1}% of the reads are rejected on the failed rack, {:.1}% on \
             the healthy one",
            rate(rate_per_s),
            failed * 100.0,
            healthy * 100.0
        )
    };
    let mut out = Vec::new();
    let mean_ratios: Vec<(f64, f64, f64)> = rates
        .iter()
        .filter_map(|&r| ratio(r, |row| row.ttfb_mean_s))
        .collect();
    if let Some(&(at_rate, failed, healthy)) = mean_ratios
        .iter()
        .max_by(|a, b| (a.1 / a.2).total_cmp(&(b.1 / b.2)))
    {
        let p99 = ratio(at_rate, |row| row.ttfb_p99_s);
        let (verdict, tolerance) = judge(failed / healthy, diluted, Basis::Test(tolerance), |_| {
            rejects(at_rate)
        });
        out.push(Comparison {
            quantity: "mean time to first byte, failed ÷ healthy rack (all classes), largest \
                       over the rates"
                .into(),
            paper: paper.clone(),
            as_described: format!(
                "× {:.1} at {} req/s ({healthy:.0} s → {failed:.0} s; p99 {})",
                failed / healthy,
                rate(at_rate),
                p99.map_or("n/a".into(), |(_, f, h)| format!("{h:.0} s → {f:.0} s"))
            ),
            with_additions: None,
            verdict,
            tolerance,
        });
    }
    if let Some(&(at_rate, failed, healthy)) = mean_ratios.last() {
        let (verdict, tolerance) = judge(failed / healthy, diluted, Basis::Test(tolerance), |_| {
            rejects(at_rate)
        });
        out.push(Comparison {
            quantity: format!(
                "mean time to first byte at {} req/s, failed ÷ healthy rack (all classes)",
                rate(at_rate)
            ),
            paper,
            as_described: format!("× {:.2} ({healthy:.0} s → {failed:.0} s)", failed / healthy),
            with_additions: None,
            verdict,
            tolerance,
        });
    }
    out
}

/// Says which rebuilds outlasted the client load (arrivals stop at the end of the run).
fn window_note(rows: &[Row]) -> String {
    let outlasted: Vec<String> = rows
        .iter()
        .filter(|r| {
            r.rebuild_s
                .is_some_and(|s| s / 3600.0 > r.hours - r.warmup_hours)
        })
        .map(|r| rate(r.rate_per_s))
        .collect();
    if outlasted.is_empty() {
        "\nEvery rebuild finished while clients were still arriving.\n".into()
    } else {
        format!(
            "\nAt {} req/s the rebuild outlasted the client load (arrivals stop at the end of \
             the run); its tail ran unloaded, so run longer (`--hours`) to measure it under load.\n",
            outlasted.join(", ")
        )
    }
}
