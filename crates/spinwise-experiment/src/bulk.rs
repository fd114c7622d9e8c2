//! `bulk-restores`: what S3's Bulk restore tier saves on a rack that keeps its disks asleep.
//! Pelican's scheduler on the pelican preset at 40 Gbps, with a share of the reads deferrable
//! (a Bulk read arriving while its group rests waits for the group's next spin-up for other
//! work, or for its deadline; docs/s3.md "Restore tiers", the simulator's `Deferral`), swept
//! over that share, two waits and three request rates. Not a figure of the papers: it measures
//! the trade the server's Bulk tier offers, spin-ups and power against time to first byte.
//!
//! Invariants: a share of 0 is the plain Pelican run (no deferral configured, so it draws what
//! `pelican-fig9` draws); every run's warm-up is at least its wait, so the window measures a
//! steady state (a read deferred before the window and released in it counts as a read deferred
//! in the window and released after it would); every number in the summary is computed from the
//! rows.

use super::summary::{
    Comparison, OUR_ADDITION, Verdict, header, mean_of, rate, table as summary_table,
};
use super::sweep::{Job, Row, Setting, Setup, points, run_sweep};
use super::{Context, Figure, Outcome};
use crate::error::ExperimentResult;
use spinwise_report::{LineChart, Series, SeriesStyle, YScale};
use spinwise_sim::{Deferral, PolicyKind};

/// Shares of the reads that may wait.
const FRACTIONS: &[f64] = &[0.0, 0.25, 0.5, 0.75, 1.0];
const QUICK_FRACTIONS: &[f64] = &[0.0, 1.0];
/// The longest a Bulk read waits, in hours (S3 Glacier's Bulk tier promises 5–12 h).
const WAITS_HOURS: &[f64] = &[1.0, 4.0];
/// Short enough that a quick run's 0.1 h warm-up still covers it.
const QUICK_WAITS_HOURS: &[f64] = &[0.1];
/// Light, Fig. 9(a)'s spin-up peak, and busy (req/s).
const RATES: &[f64] = &[0.125, 0.5, 2.0];
const QUICK_RATES: &[f64] = &[0.5];
const NETWORK_GBPS: f64 = 40.0;

/// The deferral of one (share, wait) point; none for a share of 0.
fn deferral(fraction: f64, wait_hours: f64) -> Option<Deferral> {
    (fraction > 0.0).then_some(Deferral {
        fraction,
        wait_hours,
    })
}

pub fn bulk_restores(context: &Context) -> ExperimentResult<Outcome> {
    let setups = [Setup::synthesized("pelican")?];
    let (fractions, waits, rates) = match context.quick {
        true => (QUICK_FRACTIONS, QUICK_WAITS_HOURS, QUICK_RATES),
        false => (FRACTIONS, WAITS_HOURS, RATES),
    };
    let longest_wait = waits.iter().copied().fold(0.0, f64::max);
    let mut jobs = Vec::new();
    for &rate_per_s in rates {
        for &fraction in fractions {
            // A share of 0 is one run, whatever the wait.
            let waits_here = if fraction == 0.0 { &[0.0][..] } else { waits };
            for &wait_hours in waits_here {
                jobs.push(Job {
                    setup: 0,
                    policy: PolicyKind::Pelican,
                    network_gbps: Some(NETWORK_GBPS),
                    rate_per_s,
                    deferral: deferral(fraction, wait_hours),
                    warmup_hours: Some(context.warmup_hours.max(longest_wait)),
                    // Spinwise's restore tiers on the preset as shipped: no paper to match.
                    setting: Setting::WithAdditions,
                    ..Job::default()
                });
            }
        }
    }
    let rows = run_sweep("bulk-restores", context, &setups, &jobs)?;
    let figures = figures(&rows, rates, waits);
    let summary = header(
        "Bulk restores: spin-ups and power saved by reads that wait for a spin-up",
        context,
        &rows,
    ) + &format!(
        "Every run's warm-up is {longest_wait} h or the context's, whichever is longer, so \
         each window is a steady state.\n\n"
    ) + &table(&rows, rates, fractions, waits)
        + &findings(&rows, rates, waits)
        + "\n"
        + &summary_table(&[baseline(&rows, rates)]);
    Ok(Outcome {
        rows: rows.into(),
        figures,
        summary,
    })
}

/// Rows of one rate at a share (with its wait, or any wait at share 0).
fn is(row: &Row, rate_per_s: f64, fraction: f64, wait_hours: f64) -> bool {
    row.rate_per_s == rate_per_s
        && row.bulk_fraction == fraction
        && (fraction == 0.0 || row.bulk_wait_hours == wait_hours)
}

fn at(
    rows: &[Row],
    rate_per_s: f64,
    fraction: f64,
    wait_hours: f64,
    metric: fn(&Row) -> f64,
) -> Option<f64> {
    mean_of(rows, |r| is(r, rate_per_s, fraction, wait_hours), metric)
}

/// Mean time to first byte of the reads that did not wait (all reads minus the Bulk ones).
fn immediate_ttfb_s(row: &Row) -> f64 {
    let immediate = row.completed.saturating_sub(row.bulk_completed);
    if immediate == 0 {
        return 0.0;
    }
    let all_s = row.ttfb_mean_s * row.completed as f64;
    let bulk_s = row.bulk_ttfb_mean_s * row.bulk_completed as f64;
    (all_s - bulk_s) / immediate as f64
}

fn figures(rows: &[Row], rates: &[f64], waits: &[f64]) -> Vec<Figure> {
    let series = |y: fn(&Row) -> f64| -> Vec<Series> {
        let mut out = Vec::new();
        for &rate_per_s in rates {
            for &wait_hours in waits {
                out.push(Series {
                    name: format!("{} req/s, wait ≤ {wait_hours} h", rate(rate_per_s)),
                    style: SeriesStyle::LineWithMarkers,
                    points: points(
                        rows,
                        |r| {
                            r.rate_per_s == rate_per_s
                                && (r.bulk_fraction == 0.0 || r.bulk_wait_hours == wait_hours)
                        },
                        |r| r.bulk_fraction * 100.0,
                        y,
                    ),
                });
            }
        }
        out
    };
    let chart = |title: &str, y_label: &str, y_scale: YScale, series: Vec<Series>| LineChart {
        title: title.into(),
        x_label: "reads that may wait for a spin-up (Bulk, %)".into(),
        y_label: y_label.into(),
        y_scale,
        series,
    };
    vec![
        Figure {
            stem: "spin_ups_vs_bulk",
            chart: chart(
                "Pelican at 40 Gbps: disk spin-ups per year vs Bulk share",
                "spin-ups per disk per year",
                YScale::Linear,
                series(|r| r.spin_ups_per_disk_year),
            ),
        },
        Figure {
            stem: "power_vs_bulk",
            chart: chart(
                "Pelican at 40 Gbps: mean power vs Bulk share",
                "mean power (W)",
                YScale::Linear,
                series(|r| r.power_mean_w),
            ),
        },
        Figure {
            stem: "bulk_ttfb_vs_bulk",
            chart: chart(
                "Pelican at 40 Gbps: a Bulk read's time to first byte",
                "mean time to first byte of Bulk reads (h)",
                YScale::Linear,
                series(|r| r.bulk_ttfb_mean_s / 3600.0),
            ),
        },
    ]
}

/// One line per (rate, share, wait): spin-ups, power, the two kinds of reads' first byte.
fn table(rows: &[Row], rates: &[f64], fractions: &[f64], waits: &[f64]) -> String {
    let mut text = String::from(
        "| req/s | Bulk share | wait ≤ | spin-ups per disk per year (vs share 0) | mean power (W) \
         | other reads' first byte, mean (s) | Bulk reads' first byte, mean / p99 (h) | rejected |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for &rate_per_s in rates {
        let base = at(rows, rate_per_s, 0.0, 0.0, |r| r.spin_ups_per_disk_year);
        for &fraction in fractions {
            let waits_here = if fraction == 0.0 { &[0.0][..] } else { waits };
            for &wait_hours in waits_here {
                let get =
                    |metric: fn(&Row) -> f64| at(rows, rate_per_s, fraction, wait_hours, metric);
                let (
                    Some(spin_ups),
                    Some(power),
                    Some(other),
                    Some(bulk),
                    Some(bulk_p99),
                    Some(rejected),
                ) = (
                    get(|r| r.spin_ups_per_disk_year),
                    get(|r| r.power_mean_w),
                    get(immediate_ttfb_s),
                    get(|r| r.bulk_ttfb_mean_s / 3600.0),
                    get(|r| r.bulk_ttfb_p99_s / 3600.0),
                    get(|r| r.reject_rate),
                )
                else {
                    continue;
                };
                let change = base.filter(|b| *b > 0.0).map_or(String::new(), |b| {
                    format!(" ({:+.0}%)", (spin_ups / b - 1.0) * 100.0)
                });
                let wait = if fraction == 0.0 {
                    "–".to_string()
                } else {
                    format!("{wait_hours} h")
                };
                text.push_str(&format!(
                    "| {} | {:.0}% | {wait} | {spin_ups:.0}{change} | {power:.0} | {other:.1} | {} | {:.2}% |\n",
                    rate(rate_per_s),
                    fraction * 100.0,
                    if fraction == 0.0 { "–".to_string() } else { format!("{bulk:.2} / {bulk_p99:.2}") },
                    rejected * 100.0,
                ));
            }
        }
    }
    text.push('\n');
    text
}

/// The headline per rate: what making every read Bulk saves at the longest wait, what a partial
/// share does to the other reads, and where releasing a group's backlog overflowed its queue.
fn findings(rows: &[Row], rates: &[f64], waits: &[f64]) -> String {
    let longest_wait = waits.iter().copied().fold(0.0, f64::max);
    let mut text = String::from("What it shows:\n\n");
    for &rate_per_s in rates {
        let get = |fraction, metric| at(rows, rate_per_s, fraction, longest_wait, metric);
        let spin_ups = |r: &Row| r.spin_ups_per_disk_year;
        let power = |r: &Row| r.power_mean_w;
        let (Some(s0), Some(s1), Some(p0), Some(p1)) = (
            get(0.0, spin_ups),
            get(1.0, spin_ups),
            get(0.0, power),
            get(1.0, power),
        ) else {
            continue;
        };
        text.push_str(&format!(
            "- at {} req/s, every read Bulk with a wait ≤ {longest_wait} h: {s0:.0} → {s1:.0} \
             spin-ups per disk per year ({:+.0}%), mean power {p0:.0} → {p1:.0} W ({:+.0}%)",
            rate(rate_per_s),
            percent_change(s0, s1),
            percent_change(p0, p1),
        ));
        if let (Some(o0), Some(o75)) = (get(0.0, immediate_ttfb_s), get(0.75, immediate_ttfb_s)) {
            text.push_str(&format!(
                "; with 75% Bulk the other reads' mean first byte goes {o0:.1} → {o75:.1} s"
            ));
        }
        match get(1.0, |r| r.reject_rate) {
            Some(rejected) if rejected > 0.0 => text.push_str(&format!(
                "; all-Bulk rejects {:.2}% of reads",
                rejected * 100.0
            )),
            _ => {}
        }
        text.push_str(".\n");
    }
    text.push_str(&others_not_slowed(rows, rates));
    text.push_str(
        "\nA Bulk read costs no spin-up of its own until its deadline, so the saving depends on \
         how many spin-ups the other reads still cause: a group visited by an immediate read \
         every few seconds spins as often with Bulk reads as without, which is why a partial \
         share saves little at high rates and the whole share saves most. The price is the \
         Bulk reads' time to first byte, bounded by the wait plus a spin-up and the queue. \
         When a deadline's spin-up releases more of a group's backlog than its class queue \
         has room for, the reads refused are tried again as places free, as the S3 server \
         retries a restore the queue refuses (docs/s3.md \"Restore\"): they are delayed, \
         never rejected.\n",
    );
    text
}

/// Whether any run with Bulk reads slowed the other reads by more than 1% against the run of
/// its rate without them.
fn others_not_slowed(rows: &[Row], rates: &[f64]) -> String {
    let slowed = rates.iter().any(|&rate_per_s| {
        let Some(base) = at(rows, rate_per_s, 0.0, 0.0, immediate_ttfb_s) else {
            return false;
        };
        rows.iter()
            .filter(|r| {
                r.rate_per_s == rate_per_s && r.bulk_fraction > 0.0 && r.bulk_fraction < 1.0
            })
            .any(|r| immediate_ttfb_s(r) > base * 1.01)
    });
    match slowed {
        false => "- In no run did Bulk reads slow the other reads (their mean first byte is at \
                  most 1% above the run without Bulk reads): fewer groups compete for the \
                  spin slots.\n"
            .into(),
        true => "- In some runs the other reads' mean first byte rose more than 1% above the \
                 run without Bulk reads (see the table).\n"
            .into(),
    }
}

/// The share-0 runs are Pelican runs as the preset ships: where their spin-ups peak, beside
/// Fig. 9(a)'s claim, which pelican-fig9 judges on the paper's configuration.
fn baseline(rows: &[Row], rates: &[f64]) -> Comparison {
    let by_rate: Vec<(f64, f64)> = rates
        .iter()
        .filter_map(|&r| Some((r, at(rows, r, 0.0, 0.0, |row| row.spin_ups_per_disk_year)?)))
        .collect();
    let peak = by_rate.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
    let listed: Vec<String> = by_rate
        .iter()
        .map(|(r, s)| format!("{s:.0} at {} req/s", rate(*r)))
        .collect();
    Comparison {
        quantity: "spin-ups per disk per year without Bulk reads".into(),
        paper: "peak near 0.5 req/s (Pelican §4.5, Fig. 9(a))".into(),
        as_described: "not run here: pelican-fig9 judges it".into(),
        with_additions: Some(match peak {
            Some((r, _)) => format!("{} (peak at {} req/s)", listed.join(", "), rate(r)),
            None => "no baseline run".into(),
        }),
        verdict: Verdict::NotJudged(OUR_ADDITION),
        tolerance: "none: the preset as shipped is not the paper's configuration".into(),
    }
}

fn percent_change(before: f64, after: f64) -> f64 {
    (after / before.max(f64::MIN_POSITIVE) - 1.0) * 100.0
}
