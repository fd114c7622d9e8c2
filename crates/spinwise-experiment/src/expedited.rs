//! `expedited-restores`: what S3's Expedited restore tier buys its users and what it costs
//! everyone else on a rack that keeps its disks asleep. Pelican's and Flamingo's schedulers on
//! the pelican preset at 40 Gbps, with a share of the reads submitted as Expedited (served ahead
//! of the standard reads, their group brought up first: the scheduler's `Kind::Expedited`, the
//! simulator's `SimConfig::expedited_fraction`, docs/s3.md "Restore tiers"), swept over that
//! share and three request rates. Not a figure of the papers: it measures the trade the server's
//! Expedited tier offers, a first byte within one group switch for some reads against the group
//! switches, spin-ups and waiting it costs the standard reads.
//!
//! Invariants: a share of 0 is the plain run of its policy and rate (no tier is drawn); the
//! simulator admits every Expedited read the queues take, so the server's limit on ongoing
//! Expedited restores is not enforced here: the summary holds it against the Expedited reads each
//! run had in flight (Little's law); every number in the summary is computed from the rows, and
//! the limit is read from the server's default, never restated.

use super::summary::{Comparison, Verdict, header, mean_of, rate, table as summary_table};
use super::sweep::{Job, Row, Setting, Setup, points, policy_label, policy_name, run_sweep};
use super::{Context, Figure, Outcome};
use crate::error::ExperimentResult;
use spinwise_report::{LineChart, Series, SeriesStyle, YScale};
use spinwise_s3::{
    DEFAULT_EXPEDITED_MAX_ONGOING as DEFAULT_RESTORE_EXPEDITED_MAX_ONGOING,
    DEFAULT_EXPEDITED_PER_HOUR as DEFAULT_RESTORE_EXPEDITED_PER_HOUR,
};
use spinwise_sim::PolicyKind;

/// Shares of the reads submitted as Expedited.
const FRACTIONS: &[f64] = &[0.0, 0.01, 0.05, 0.2, 0.5];
const QUICK_FRACTIONS: &[f64] = &[0.0, 0.2];
/// Light, around Fig. 9(a)'s spin-up peak, and busy (req/s).
const RATES: &[f64] = &[0.25, 1.0, 2.0];
const QUICK_RATES: &[f64] = &[1.0];
/// The server's scheduler (Pelican's class scheduler) and Flamingo's, which can spin more groups.
const POLICIES: &[PolicyKind] = &[PolicyKind::Pelican, PolicyKind::Flamingo];
const NETWORK_GBPS: f64 = 40.0;
/// The shares the findings quote, when the sweep ran them: a few urgent reads, and half.
const HEADLINE_SHARES: &[f64] = &[0.05, 0.5];
/// Standard reads count as hurt by Expedited ones when their mean first byte is more than this
/// many times that of the run of the same policy and rate without Expedited reads (or when more
/// reads are rejected).
const HURT_FACTOR: f64 = 2.0;
/// Pelican §4.2: time to first byte of an idle rack, one group switch.
const PAPER_IDLE_TTFB_S: f64 = 14.2;
/// AWS: Expedited retrievals are "typically made available within 1–5 minutes".
const AWS_EXPEDITED_MAX_S: f64 = 300.0;

/// One number of a row.
type Metric = fn(&Row) -> f64;

pub fn expedited_restores(context: &Context) -> ExperimentResult<Outcome> {
    let setups = [Setup::synthesized("pelican")?];
    let (fractions, rates) = match context.quick {
        true => (QUICK_FRACTIONS, QUICK_RATES),
        false => (FRACTIONS, RATES),
    };
    let mut jobs = Vec::new();
    for &policy in POLICIES {
        for &rate_per_s in rates {
            for &expedited_fraction in fractions {
                jobs.push(Job {
                    setup: 0,
                    policy,
                    network_gbps: Some(NETWORK_GBPS),
                    rate_per_s,
                    expedited_fraction,
                    // Spinwise's restore tiers on the preset as shipped: no paper to match.
                    setting: Setting::WithAdditions,
                    ..Job::default()
                });
            }
        }
    }
    let rows = run_sweep("expedited-restores", context, &setups, &jobs)?;
    let policies: Vec<String> = POLICIES.iter().map(|&p| policy_name(p)).collect();
    let figures = figures(&rows, &policies, rates);
    let summary = header(
        "Expedited restores: a fast first byte for some reads, and what it costs the others",
        context,
        &rows,
    ) + &format!(
        "Standard reads are those neither Expedited nor Bulk. They count as hurt when their mean \
         first byte is more than × {HURT_FACTOR} that of the run of the same policy and rate \
         without Expedited reads, or when more reads are rejected (a class queue full: the \
         server answers 503 SlowDown there and the client retries).\n\n"
    ) + &table(&rows, &policies, rates, fractions)
        + &findings(&rows, &policies, rates, fractions)
        + &limit(&rows, &policies)
        + "\n"
        + &summary_table(&comparisons(&rows, &policies));
    Ok(Outcome {
        rows: rows.into(),
        figures,
        summary,
    })
}

/// Rows of one policy and rate at a share.
fn is(row: &Row, policy: &str, rate_per_s: f64, fraction: f64) -> bool {
    row.policy == policy && row.rate_per_s == rate_per_s && row.expedited_fraction == fraction
}

fn at(rows: &[Row], policy: &str, rate_per_s: f64, fraction: f64, metric: Metric) -> Option<f64> {
    mean_of(rows, |r| is(r, policy, rate_per_s, fraction), metric)
}

fn window_s(row: &Row) -> f64 {
    (row.hours - row.warmup_hours) * 3600.0
}

/// Expedited reads arriving per second in the window.
fn expedited_rate(row: &Row) -> f64 {
    row.expedited_requests as f64 / window_s(row)
}

/// An Expedited read's turnaround: its mean first byte plus the mean service of a read (the
/// seek and transfer; a restore is ongoing until its copy is written).
fn expedited_turnaround_s(row: &Row) -> f64 {
    row.expedited_ttfb_mean_s + row.service_mean_s
}

/// Mean Expedited reads in flight, by Little's law: completions per second × turnaround. What a
/// limit on ongoing Expedited restores would be held against.
fn expedited_in_flight(row: &Row) -> f64 {
    row.expedited_completed as f64 / window_s(row) * expedited_turnaround_s(row)
}

/// Whether the Expedited reads of `row` hurt its standard reads (see [`HURT_FACTOR`]); `None`
/// without a run at share 0 to compare with.
fn hurts_standard(rows: &[Row], row: &Row) -> Option<bool> {
    let (policy, rate_per_s) = (row.policy.as_str(), row.rate_per_s);
    let base_ttfb = at(rows, policy, rate_per_s, 0.0, |r| r.standard_ttfb_mean_s)?;
    let base_rejects = at(rows, policy, rate_per_s, 0.0, |r| r.reject_rate)?;
    Some(row.standard_ttfb_mean_s > HURT_FACTOR * base_ttfb || row.reject_rate > base_rejects)
}

fn share(fraction: f64) -> String {
    format!("{}%", rate(fraction * 100.0))
}

fn figures(rows: &[Row], policies: &[String], rates: &[f64]) -> Vec<Figure> {
    let x = |r: &Row| r.expedited_fraction * 100.0;
    let x_label = "reads submitted as Expedited (%)";
    // One line per (policy, rate) of `y`; a log axis leaves out points without a value.
    let per_policy_and_rate = |y: Metric, y_scale: YScale| -> Vec<Series> {
        let mut out = Vec::new();
        for policy in policies {
            for &rate_per_s in rates {
                let mut pts = points(
                    rows,
                    |r| r.policy == *policy && r.rate_per_s == rate_per_s,
                    x,
                    y,
                );
                if y_scale == YScale::Log {
                    pts.retain(|p| p.y > 0.0);
                }
                out.push(Series {
                    name: format!("{}, {} req/s", policy_label(policy), rate(rate_per_s)),
                    style: SeriesStyle::LineWithMarkers,
                    points: pts,
                });
            }
        }
        out.retain(|s| !s.points.is_empty());
        out
    };
    // Expedited against standard first byte of one policy, one pair of lines per rate.
    let first_byte = |policy: &str| -> Vec<Series> {
        let mut out = Vec::new();
        for &rate_per_s in rates {
            let mut line = |kind: &str, y: Metric, has: fn(&Row) -> bool| {
                let mut pts = points(
                    rows,
                    |r| r.policy == policy && r.rate_per_s == rate_per_s && has(r),
                    x,
                    y,
                );
                pts.retain(|p| p.y > 0.0);
                out.push(Series {
                    name: format!("{kind}, {} req/s", rate(rate_per_s)),
                    style: SeriesStyle::LineWithMarkers,
                    points: pts,
                });
            };
            line(
                "Expedited",
                |r| r.expedited_ttfb_mean_s,
                |r| r.expedited_completed > 0,
            );
            line(
                "standard",
                |r| r.standard_ttfb_mean_s,
                |r| r.standard_completed > 0,
            );
        }
        out.retain(|s| !s.points.is_empty());
        out
    };
    let chart = |title: &str, y_label: &str, y_scale: YScale, series: Vec<Series>| LineChart {
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        y_scale,
        series,
    };
    let mut figures = Vec::new();
    for (stem, policy) in [
        ("ttfb_vs_expedited", PolicyKind::Pelican),
        ("flamingo_ttfb_vs_expedited", PolicyKind::Flamingo),
    ] {
        let name = policy_name(policy);
        let series = first_byte(&name);
        if policies.contains(&name) && !series.is_empty() {
            figures.push(Figure {
                stem,
                chart: chart(
                    &format!(
                        "{} at 40 Gbps: Expedited vs standard reads' first byte",
                        policy_label(&name)
                    ),
                    "mean time to first byte (s)",
                    YScale::Log,
                    series,
                ),
            });
        }
    }
    figures.extend([
        Figure {
            stem: "spin_ups_vs_expedited",
            chart: chart(
                "pelican rack at 40 Gbps: disk spin-ups per year vs Expedited share",
                "spin-ups per disk per year",
                YScale::Linear,
                per_policy_and_rate(|r| r.spin_ups_per_disk_year, YScale::Linear),
            ),
        },
        Figure {
            stem: "throughput_vs_expedited",
            chart: chart(
                "pelican rack at 40 Gbps: throughput vs Expedited share",
                "throughput (Gbps)",
                YScale::Linear,
                per_policy_and_rate(|r| r.throughput_gbps, YScale::Linear),
            ),
        },
        Figure {
            stem: "standard_p99_vs_expedited",
            chart: chart(
                "pelican rack at 40 Gbps: the standard reads' p99 first byte vs Expedited share",
                "p99 time to first byte of standard reads (s)",
                YScale::Log,
                per_policy_and_rate(|r| r.standard_ttfb_p99_s, YScale::Log),
            ),
        },
    ]);
    figures
}

/// One line per (policy, rate, share).
fn table(rows: &[Row], policies: &[String], rates: &[f64], fractions: &[f64]) -> String {
    let mut text = String::from(
        "| policy | req/s | Expedited share | Expedited reads (per s) | Expedited first byte, \
         mean / p99 (s) | standard first byte, mean / p99 (s) | standard mean vs share 0 \
         | spin-ups per disk per year (vs share 0) | throughput (Gbps) | rejected \
         | Expedited in flight, mean |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for policy in policies {
        for &rate_per_s in rates {
            let base_spin_ups = at(rows, policy, rate_per_s, 0.0, |r| r.spin_ups_per_disk_year);
            let base_standard = at(rows, policy, rate_per_s, 0.0, |r| r.standard_ttfb_mean_s);
            for &fraction in fractions {
                let get = |metric: Metric| at(rows, policy, rate_per_s, fraction, metric);
                let (
                    Some(requests),
                    Some(per_s),
                    Some(exp_mean),
                    Some(exp_p99),
                    Some(std_mean),
                    Some(std_p99),
                    Some(spin_ups),
                    Some(throughput),
                    Some(rejected),
                    Some(in_flight),
                ) = (
                    get(|r| r.expedited_requests as f64),
                    get(expedited_rate),
                    get(|r| r.expedited_ttfb_mean_s),
                    get(|r| r.expedited_ttfb_p99_s),
                    get(|r| r.standard_ttfb_mean_s),
                    get(|r| r.standard_ttfb_p99_s),
                    get(|r| r.spin_ups_per_disk_year),
                    get(|r| r.throughput_gbps),
                    get(|r| r.reject_rate),
                    get(expedited_in_flight),
                )
                else {
                    continue;
                };
                let none = fraction == 0.0;
                let expedited = match none {
                    true => "–".to_string(),
                    false => format!("{requests:.0} ({per_s:.4})"),
                };
                let expedited_ttfb = match none {
                    true => "–".to_string(),
                    false => format!("{exp_mean:.1} / {exp_p99:.1}"),
                };
                let versus = match base_standard {
                    Some(b) if b > 0.0 && !none => format!("× {:.2}", std_mean / b),
                    _ => "–".into(),
                };
                let change = base_spin_ups
                    .filter(|b| *b > 0.0 && !none)
                    .map_or(String::new(), |b| {
                        format!(" ({:+.0}%)", percent_change(b, spin_ups))
                    });
                let in_flight = match none {
                    true => "–".to_string(),
                    false => format!("{in_flight:.2}"),
                };
                text.push_str(&format!(
                    "| {} | {} | {} | {expedited} | {expedited_ttfb} | {std_mean:.1} / {std_p99:.1} \
                     | {versus} | {spin_ups:.0}{change} | {throughput:.2} | {:.2}% | {in_flight} |\n",
                    policy_label(policy),
                    rate(rate_per_s),
                    share(fraction),
                    rejected * 100.0,
                ));
            }
        }
    }
    text.push('\n');
    text
}

/// The shares the findings quote: [`HEADLINE_SHARES`] where the sweep ran them, else every
/// share it ran above 0.
fn headline_shares(fractions: &[f64]) -> Vec<f64> {
    let ran: Vec<f64> = HEADLINE_SHARES
        .iter()
        .copied()
        .filter(|s| fractions.contains(s))
        .collect();
    match ran.is_empty() {
        true => fractions.iter().copied().filter(|f| *f > 0.0).collect(),
        false => ran,
    }
}

/// Per policy and rate: what an Expedited read gains over a standard one, and what the
/// standard reads, the disks and the throughput pay from share 0 to each headline share.
fn findings(rows: &[Row], policies: &[String], rates: &[f64], fractions: &[f64]) -> String {
    let shares = headline_shares(fractions);
    let mut text = String::from("What it shows:\n\n");
    for policy in policies {
        for &rate_per_s in rates {
            let get = |fraction, metric| at(rows, policy, rate_per_s, fraction, metric);
            let (Some(std0), Some(p99_0), Some(spin0), Some(gbps0)) = (
                get(0.0, |r| r.standard_ttfb_mean_s),
                get(0.0, |r| r.standard_ttfb_p99_s),
                get(0.0, |r| r.spin_ups_per_disk_year),
                get(0.0, |r| r.throughput_gbps),
            ) else {
                continue;
            };
            let mut line = format!("- {} at {} req/s", policy_label(policy), rate(rate_per_s));
            if let Some(&first) = shares.first()
                && let (Some(exp), Some(std)) = (
                    get(first, |r| r.expedited_ttfb_mean_s),
                    get(first, |r| r.standard_ttfb_mean_s),
                )
                && exp > 0.0
            {
                line.push_str(&format!(
                    ": with {} Expedited, an Expedited read's first byte is {exp:.1} s mean \
                     against {std:.1} s for a standard read (× {:.1} sooner)",
                    share(first),
                    std / exp,
                ));
            }
            line.push_str(&format!(
                ". Without Expedited reads the standard reads' first byte is {std0:.1} s mean, \
                 {p99_0:.1} s p99, with {spin0:.0} spin-ups per disk per year and {gbps0:.2} Gbps"
            ));
            for &fraction in &shares {
                let (Some(std), Some(p99), Some(spin), Some(gbps), Some(rejected)) = (
                    get(fraction, |r| r.standard_ttfb_mean_s),
                    get(fraction, |r| r.standard_ttfb_p99_s),
                    get(fraction, |r| r.spin_ups_per_disk_year),
                    get(fraction, |r| r.throughput_gbps),
                    get(fraction, |r| r.reject_rate),
                ) else {
                    continue;
                };
                line.push_str(&format!(
                    "; at {}: {std:.1} s (× {:.2}), p99 {p99:.1} s, {spin:.0} spin-ups \
                     ({:+.0}%), {gbps:.2} Gbps",
                    share(fraction),
                    std / std0.max(f64::MIN_POSITIVE),
                    percent_change(spin0, spin),
                ));
                if rejected > 0.0 {
                    line.push_str(&format!(", {:.2}% rejected", rejected * 100.0));
                }
            }
            line.push_str(".\n");
            text.push_str(&line);
        }
    }
    for policy in policies {
        let runs: Vec<&Row> = rows
            .iter()
            .filter(|r| r.policy == *policy && r.expedited_fraction > 0.0)
            .collect();
        let hurt = runs
            .iter()
            .filter(|r| hurts_standard(rows, r) == Some(true))
            .count();
        text.push_str(&format!(
            "- {}: the Expedited reads hurt the standard ones in {hurt} of {} runs with \
             Expedited reads.\n",
            policy_label(policy),
            runs.len()
        ));
    }
    text.push_str(
        "\nUnder Pelican's scheduler an Expedited read arriving while its group rests makes its \
         class switch groups once the read in hand is done, before the batch the standard reads \
         were waiting for, so each costs a group switch the reordering queue would have saved. \
         A class switches only so often (one switch takes the preset's unmount, spin-up and \
         mount time), so once Expedited reads ask for switches faster than that the standard \
         reads wait behind them, their class queues fill and reads are rejected. Flamingo's \
         scheduler lets a busy group in the way start every read it came up for before it \
         yields, so the batches survive and the Expedited reads wait instead.\n",
    );
    text
}

/// The server's limit on ongoing Expedited restores held against the Pelican runs (the
/// scheduler `spinwise serve` runs): the Expedited reads in flight where the standard reads
/// were and were not hurt.
fn limit(rows: &[Row], policies: &[String]) -> String {
    let limit = DEFAULT_RESTORE_EXPEDITED_MAX_ONGOING;
    let server = policy_name(PolicyKind::Pelican);
    if !policies.contains(&server) {
        return String::new();
    }
    let runs: Vec<(&Row, bool)> = rows
        .iter()
        .filter(|r| r.policy == server && r.expedited_fraction > 0.0 && r.expedited_completed > 0)
        .filter_map(|r| Some((r, hurts_standard(rows, r)?)))
        .collect();
    let hurt: Vec<&Row> = runs.iter().filter(|(_, h)| *h).map(|(r, _)| *r).collect();
    let fine: Vec<&Row> = runs.iter().filter(|(_, h)| !*h).map(|(r, _)| *r).collect();
    let by = |f: Metric| move |a: &&&Row, b: &&&Row| f(a).total_cmp(&f(b));
    let mut text = format!(
        "\n**The server's limit.** `spinwise serve` admits at most {limit} Expedited restores at \
         once (`--restore-expedited-max-ongoing`, default {limit}); the simulator admits every \
         one the queues take, so each run's mean Expedited reads in flight (Little's law: \
         completions per second × mean first byte and service) shows what that limit would \
         have held back. With Pelican's scheduler, the one the server runs:"
    );
    match fine.iter().max_by(by(expedited_rate)) {
        Some(r) => text.push_str(&format!(
            " the standard reads were not hurt while Expedited reads arrived at up to {:.4}/s \
             ({} of {} req/s, {:.2} in flight on average);",
            expedited_rate(r),
            share(r.expedited_fraction),
            rate(r.rate_per_s),
            expedited_in_flight(r),
        )),
        None => text.push_str(" the standard reads were hurt in every run with Expedited reads;"),
    }
    let Some(first_hurt) = hurt.iter().min_by(by(expedited_rate)) else {
        text.push_str(&format!(
            " they were hurt in no run, so the default of {limit} was not tested here.\n"
        ));
        return text;
    };
    text.push_str(&format!(
        " they were hurt from {:.4}/s ({} of {} req/s, {:.2} in flight).",
        expedited_rate(first_hurt),
        share(first_hurt.expedited_fraction),
        rate(first_hurt.rate_per_s),
        expedited_in_flight(first_hurt),
    ));
    let below: Vec<&&Row> = hurt
        .iter()
        .filter(|r| expedited_in_flight(r) < limit as f64)
        .collect();
    let quickest = runs
        .iter()
        .map(|(r, _)| expedited_turnaround_s(r))
        .fold(f64::INFINITY, f64::min);
    if below.is_empty() {
        text.push_str(&format!(
            " Every run that hurt them had at least {limit} Expedited reads in flight on \
             average, so the default of {limit} would have held the Expedited reads below where \
             they hurt the standard ones in this sweep.\n"
        ));
        return text;
    }
    let safe_rate = fine.iter().map(|r| expedited_rate(r)).fold(0.0, f64::max);
    text.push_str(&format!(
        " In {} of the {} runs that hurt them fewer than {limit} Expedited reads were in flight \
         on average, so the default of {limit} would not have protected the standard reads: it \
         bounds how many Expedited reads pass a standard one at a time, not how many pass it \
         per hour. At the quickest Expedited turnaround measured ({quickest:.1} s), {limit} \
         ongoing restores admit up to {:.3} Expedited reads per second, × {:.1} the lowest rate \
         that hurt the standard reads here",
        below.len(),
        hurt.len(),
        limit as f64 / quickest,
        limit as f64 / quickest / expedited_rate(first_hurt),
    ));
    if safe_rate > 0.0 {
        text.push_str(&format!(
            "; to admit no more than the highest rate that did not hurt them \
             ({safe_rate:.4}/s), the limit on this rack would have to be about {}",
            (safe_rate * quickest).round().max(1.0),
        ));
    }
    text.push_str(&hourly_limit_sentence(safe_rate));
    text.push_str(".\n");
    text
}

/// What the server's hourly rate limit (`--restore-expedited-per-hour`) admits against the
/// highest Expedited rate that left the standard reads unharmed.
fn hourly_limit_sentence(safe_rate: f64) -> String {
    let per_hour = DEFAULT_RESTORE_EXPEDITED_PER_HOUR;
    let per_second = per_hour as f64 / 3600.0;
    let verdict = if safe_rate <= 0.0 {
        "no rate was measured safe here".to_string()
    } else if per_second <= safe_rate {
        format!("{:.2} of the highest harmless rate", per_second / safe_rate)
    } else {
        format!(
            "× {:.1} the highest harmless rate, too many for this rack",
            per_second / safe_rate
        )
    };
    format!(
        ". So the server also limits the rate: at most {per_hour} Expedited restores started an \
         hour (`--restore-expedited-per-hour`, default {per_hour}), {per_second:.4}/s: {verdict}"
    )
}

/// Expedited first byte against AWS's promise and against Pelican's idle first byte (one
/// group switch, which an Expedited read cannot beat).
fn comparisons(rows: &[Row], policies: &[String]) -> Vec<Comparison> {
    let runs: Vec<&Row> = rows
        .iter()
        .filter(|r| r.expedited_completed > 0 && policies.contains(&r.policy))
        .collect();
    let mut out = Vec::new();
    if !runs.is_empty() {
        let means = runs.iter().map(|r| r.expedited_ttfb_mean_s);
        let low = means.clone().fold(f64::INFINITY, f64::min);
        let high = means.fold(0.0, f64::max);
        let within: Vec<&&Row> = runs
            .iter()
            .filter(|r| r.expedited_ttfb_p99_s <= AWS_EXPEDITED_MAX_S)
            .collect();
        let largest = runs
            .iter()
            .map(|r| r.expedited_ttfb_p99_s)
            .fold(0.0, f64::max);
        let over_only_where_hurt = runs
            .iter()
            .filter(|r| r.expedited_ttfb_p99_s > AWS_EXPEDITED_MAX_S)
            .all(|r| hurts_standard(rows, r) == Some(true));
        out.push(Comparison {
            quantity: "Expedited reads' first byte (every run with Expedited reads)".into(),
            paper: "typically 1–5 minutes (AWS S3 User Guide, \"Understanding archive retrieval \
                    options\"; for objects under 250 MB)"
                .into(),
            as_described: "—".into(),
            with_additions: Some(format!(
                "mean {low:.1}–{high:.1} s; p99 within 5 min in {} of {} runs (largest {largest:.0} s)",
                within.len(),
                runs.len()
            )),
            tolerance: "p99 ≤ 5 min in every run: a product promise, judged on the preset as \
                        shipped"
                .into(),
            verdict: if within.len() == runs.len() {
                Verdict::Agrees
            } else if over_only_where_hurt {
                Verdict::Differs(
                "beyond 5 min only in runs whose Expedited reads also hurt the standard ones: \
                 the class queues fill and Expedited reads wait for each other"
                    .into(),
                )
            } else {
                let listed: Vec<String> = runs
                    .iter()
                    .filter(|r| {
                        r.expedited_ttfb_p99_s > AWS_EXPEDITED_MAX_S
                            && hurts_standard(rows, r) != Some(true)
                    })
                    .map(|r| {
                        format!(
                            "{} at {} req/s, {}",
                            policy_label(&r.policy),
                            rate(r.rate_per_s),
                            share(r.expedited_fraction)
                        )
                    })
                    .collect();
                Verdict::Differs(format!(
                    "beyond 5 min also where the standard reads were not hurt ({})",
                    listed.join("; ")
                ))
            },
        });
    }
    let server = policy_name(PolicyKind::Pelican);
    let lightest = rows
        .iter()
        .filter(|r| r.policy == server && r.expedited_completed > 0)
        .min_by(|a, b| {
            (a.rate_per_s, a.expedited_fraction)
                .partial_cmp(&(b.rate_per_s, b.expedited_fraction))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    if let Some(row) = lightest {
        let ours = at(rows, &server, row.rate_per_s, row.expedited_fraction, |r| {
            r.expedited_ttfb_mean_s
        })
        .unwrap_or(row.expedited_ttfb_mean_s);
        out.push(Comparison {
            quantity: format!(
                "Pelican: Expedited read's mean first byte at {} req/s, {} Expedited",
                rate(row.rate_per_s),
                share(row.expedited_fraction)
            ),
            paper: format!(
                "{PAPER_IDLE_TTFB_S} s idle time to first byte, one group switch (Pelican §4.2)"
            ),
            as_described: "—".into(),
            with_additions: Some(format!("{ours:.1} s")),
            // 14.2 s is what the preset's mount latency was tuned to: the row can only show how
            // close an Expedited read comes to one switch.
            verdict: Verdict::Calibrated(
                "the preset's mount latency was tuned so an idle rack gives 14.2 s",
            ),
            tolerance: "none: a calibrated quantity cannot test the model".into(),
        });
    }
    out
}

fn percent_change(before: f64, after: f64) -> f64 {
    (after / before.max(f64::MIN_POSITIVE) - 1.0) * 100.0
}
