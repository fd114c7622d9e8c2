//! `gecko-chain`: read and write throughput against chain length (Gecko, Shin et al., FAST 2013,
//! slide 23) on spinwise-gecko's seek-cost disk model (docs/gecko.md): Gecko's chain of 1 to 5
//! disks with its tail cache, beside one log striped over RAID-0 of as many disks with the same
//! cache. One writer of skewed random 128-KiB extents and eight readers of skewed extents
//! (90% of accesses to 10% of the data) over 0.4 disk of logical data (the slides' 200 GB on
//! 512-GB disks), aged by two passes of overwrites so the data is spread over the log as in a
//! long-running store. The slides' mix of eight MSR/MS traces is not available: the load is
//! ours.
//!
//! Invariant: every configuration of one seed index sees the same seed; rows are per run, each
//! with the mean and the standard deviation over its seconds (the slide's error bars).

use crate::summary::{Comparison, OUR_ADDITION, Verdict, judge_claim, judge_trend, table};
use crate::sweep::run_seed;
use crate::{Context, ExperimentError, ExperimentResult, Figure, Outcome, Rows};
use rayon::prelude::*;
use serde::Serialize;
use spinwise_gecko::{
    CacheSize, ClientLoad, Collector, DiskParams, Interval, Layout, LogConfig, SimConfig,
    SimReport, simulate,
};
use spinwise_report::{LineChart, LinePoint, Series, SeriesStyle, YScale};

const NAME: &str = "gecko-chain";
/// 1 GiB per disk (capacity only sets how long the log takes to fill).
const PAGES_PER_DISK: u64 = 262_144;
/// 0.4 disk of data, whole 128-KiB extents: the slides' 200 GB prefilled on 512-GB disks.
const LOGICAL_PAGES: u64 = PAGES_PER_DISK * 2 / 5 / 32 * 32;
/// The slides' 2 GB RAM + 32 GB flash per 512-GB disk, scaled to our disk.
const CACHE: CacheSize = CacheSize {
    ram_pages: PAGES_PER_DISK / 256,
    flash_pages: PAGES_PER_DISK / 16,
};
const READERS: u32 = 8;
const DISKS: u32 = 5;
const QUICK_DISKS: u32 = 3;
const DURATION_S: f64 = 60.0;
const QUICK_DURATION_S: f64 = 15.0;
/// Leading seconds left out of the means (the queues filling).
const SETTLE_S: usize = 2;

/// One run: a layout on some disks.
#[derive(Clone, Debug, Serialize)]
pub struct GeckoChainRow {
    pub experiment: &'static str,
    pub configuration: usize,
    pub seed: u64,
    pub layout: &'static str,
    pub disks: u32,
    pub readers: u32,
    pub seconds: usize,
    pub read_mb_per_s: f64,
    pub read_stdev_mb_per_s: f64,
    pub write_mb_per_s: f64,
    pub write_stdev_mb_per_s: f64,
    pub total_mb_per_s: f64,
    pub gc_mb_per_s: f64,
    pub cache_hit_share: f64,
    pub reads_on_tail_disk: u64,
    /// Share of the disk reads (cache misses) the tail disk served.
    pub tail_read_share: f64,
    pub segments_cleaned: u64,
    pub positionings: u64,
}

fn jobs(context: &Context) -> Vec<(Layout, u32)> {
    let most = if context.quick { QUICK_DISKS } else { DISKS };
    let mut jobs = Vec::new();
    for disks in 1..=most {
        jobs.push((Layout::Chain, disks));
        // One disk striped is the one-disk chain: run once.
        if disks >= 2 {
            jobs.push((Layout::Raid0, disks));
        }
    }
    jobs
}

fn run(layout: Layout, disks: u32, seed: u64, duration_s: f64) -> ExperimentResult<SimReport> {
    let log = LogConfig::new(
        layout,
        Collector::MoveToTail,
        disks,
        PAGES_PER_DISK,
        LOGICAL_PAGES,
    );
    let mut config = SimConfig::new(
        log,
        ClientLoad::Mixed { readers: READERS },
        duration_s,
        seed,
    );
    config.aging_passes = 2.0;
    config.tail_cache = Some(CACHE);
    simulate(&config).map_err(|e| ExperimentError::Invalid(format!("{NAME}: {e}")))
}

fn stats(report: &SimReport, metric: fn(&Interval) -> f64) -> (f64, f64) {
    let values: Vec<f64> = report.intervals.iter().skip(SETTLE_S).map(metric).collect();
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, variance.sqrt())
}

fn read(i: &Interval) -> f64 {
    i.app_read_bytes as f64 / 1e6
}

fn write(i: &Interval) -> f64 {
    i.app_write_bytes as f64 / 1e6
}

fn row(
    configuration: usize,
    layout: Layout,
    disks: u32,
    seed: u64,
    r: &SimReport,
) -> GeckoChainRow {
    let (read_mb_per_s, read_stdev_mb_per_s) = stats(r, read);
    let (write_mb_per_s, write_stdev_mb_per_s) = stats(r, write);
    GeckoChainRow {
        experiment: NAME,
        configuration,
        seed,
        layout: layout.name(),
        disks,
        readers: READERS,
        seconds: r.intervals.len(),
        read_mb_per_s,
        read_stdev_mb_per_s,
        write_mb_per_s,
        write_stdev_mb_per_s,
        total_mb_per_s: read_mb_per_s + write_mb_per_s,
        gc_mb_per_s: stats(r, Interval::gc_mb_per_s).0,
        cache_hit_share: (r.ram_hits + r.flash_hits) as f64 / r.pages_read.max(1) as f64,
        reads_on_tail_disk: r.app_reads_on_tail_disk,
        tail_read_share: r.app_reads_on_tail_disk as f64 / r.app_read_requests.max(1) as f64,
        segments_cleaned: r.segments_cleaned,
        positionings: r.positionings,
    }
}

pub fn gecko_chain(context: &Context) -> ExperimentResult<Outcome> {
    let duration_s = if context.quick {
        QUICK_DURATION_S
    } else {
        DURATION_S
    };
    let jobs = jobs(context);
    let plan: Vec<(usize, u32)> = (0..jobs.len())
        .flat_map(|job| (0..context.seeds).map(move |seed| (job, seed)))
        .collect();
    let rows: Vec<GeckoChainRow> = context.pool.install(|| {
        plan.par_iter()
            .map(|&(configuration, seed_index)| {
                let seed = run_seed(context.base_seed, 0, seed_index);
                let (layout, disks) = jobs[configuration];
                run(layout, disks, seed, duration_s)
                    .map(|report| row(configuration, layout, disks, seed, &report))
            })
            .collect::<ExperimentResult<_>>()
    })?;
    let summary = summary(context, &rows, duration_s);
    Ok(Outcome {
        figures: vec![figure(&rows)],
        rows: Rows::GeckoChain(rows),
        summary,
    })
}

/// Mean over seeds of `metric` for a layout on `disks`.
fn mean(
    rows: &[GeckoChainRow],
    layout: Layout,
    disks: u32,
    metric: fn(&GeckoChainRow) -> f64,
) -> Option<f64> {
    let values: Vec<f64> = rows
        .iter()
        .filter(|r| r.layout == layout.name() && r.disks == disks)
        .map(metric)
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn disk_counts(rows: &[GeckoChainRow]) -> Vec<u32> {
    let mut disks: Vec<u32> = rows.iter().map(|r| r.disks).collect();
    disks.sort_unstable();
    disks.dedup();
    disks
}

fn describe(rows: &[GeckoChainRow], layout: Layout, disks: u32) -> String {
    let get = |metric: fn(&GeckoChainRow) -> f64| mean(rows, layout, disks, metric).unwrap_or(0.0);
    format!(
        "{disks} disk(s): read {:.1} + write {:.1} MB/s (cache served {:.0}% of page reads)",
        get(|r| r.read_mb_per_s),
        get(|r| r.write_mb_per_s),
        100.0 * get(|r| r.cache_hit_share)
    )
}

fn summary(context: &Context, rows: &[GeckoChainRow], duration_s: f64) -> String {
    let disks = disk_counts(rows);
    let total = |r: &GeckoChainRow| r.total_mb_per_s;
    let gecko: Vec<(String, f64)> = disks
        .iter()
        .map(|&d| {
            (
                format!("{d} disks"),
                mean(rows, Layout::Chain, d, total).unwrap_or(0.0),
            )
        })
        .collect();
    let mut comparisons = Vec::new();
    let (verdict, tolerance) = judge_trend(&gecko, true, |label| {
        let at: u32 = label
            .split(' ')
            .next()
            .and_then(|d| d.parse().ok())
            .unwrap_or(1);
        format!(
            "at {label}: {}; one fewer: {}",
            describe(rows, Layout::Chain, at),
            describe(rows, Layout::Chain, at.saturating_sub(1).max(1))
        )
    });
    comparisons.push(Comparison {
        quantity: "Gecko's read + write throughput against chain length".into(),
        paper: "rises with the chain: \"separating reads and writes → better performance\" \
                (slide 23; our reading of its bars, which we cannot read numbers off)"
            .into(),
        as_described: gecko
            .iter()
            .map(|(label, v)| format!("{label}: {v:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
            + " MB/s",
        with_additions: None,
        verdict,
        tolerance,
    });
    let pairs: Vec<(u32, f64, f64)> = disks
        .iter()
        .filter(|&&d| d >= 2)
        .filter_map(|&d| {
            Some((
                d,
                mean(rows, Layout::Chain, d, total)?,
                mean(rows, Layout::Raid0, d, total)?,
            ))
        })
        .collect();
    let losing: Vec<String> = pairs
        .iter()
        .filter(|(_, g, r)| g <= r)
        .map(|&(d, _, _)| {
            let gc = mean(rows, Layout::Chain, d, |r| r.gc_mb_per_s).unwrap_or(0.0);
            format!(
                "Gecko {}, {:.0}% of its disk reads on the tail disk, its collector moving \
                 {gc:.1} MB/s; log+RAID-0 {}",
                describe(rows, Layout::Chain, d),
                100.0 * mean(rows, Layout::Chain, d, |r| r.tail_read_share).unwrap_or(0.0),
                describe(rows, Layout::Raid0, d)
            )
        })
        .collect();
    let (verdict, tolerance) = judge_claim(
        losing.is_empty() && !pairs.is_empty(),
        "a direction: Gecko above log+RAID-0 at every disk count from 2",
        || format!("log+RAID-0 at least as high at: {}", losing.join("; ")),
    );
    comparisons.push(Comparison {
        quantity: "read + write throughput, Gecko vs log+RAID-0 of as many disks".into(),
        paper: "Gecko higher (slides 22-23: \"2X-3X higher\" on the trace mix)".into(),
        as_described: pairs
            .iter()
            .map(|(d, g, r)| format!("{d} disks: {g:.1} vs {r:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
            + " MB/s",
        with_additions: None,
        verdict,
        tolerance,
    });
    let one_disk = DiskParams::WD_10K.bandwidth_bytes_per_s / 1e6;
    comparisons.push(Comparison {
        quantity: "Gecko's write throughput against chain length".into(),
        paper: format!("a \"single uncontended disk\" line (slide 23; ours: {one_disk:.0} MB/s)"),
        as_described: disks
            .iter()
            .filter_map(|&d| {
                mean(rows, Layout::Chain, d, |r| r.write_mb_per_s)
                    .map(|w| format!("{d} disks: {w:.1}"))
            })
            .collect::<Vec<_>>()
            .join(", ")
            + " MB/s",
        with_additions: None,
        verdict: Verdict::NotJudged("the slide draws a reference line, it gives no number"),
        tolerance: "none".into(),
    });
    comparisons.push(Comparison {
        quantity: "share of page reads the cache served, Gecko (tail) vs log+RAID-0 (all)".into(),
        paper: "not given for this run".into(),
        as_described: disks
            .iter()
            .map(|&d| {
                let g = mean(rows, Layout::Chain, d, |r| r.cache_hit_share).unwrap_or(0.0);
                match mean(rows, Layout::Raid0, d, |r| r.cache_hit_share) {
                    Some(r) => format!("{d}: {:.0}% vs {:.0}%", 100.0 * g, 100.0 * r),
                    None => format!("{d}: {:.0}%", 100.0 * g),
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
        with_additions: None,
        verdict: Verdict::NotJudged(OUR_ADDITION),
        tolerance: "none".into(),
    });
    format!(
        "# gecko-chain: throughput against chain length (Shin et al., FAST 2013)\n\n{} runs of \
         {duration_s:.0} simulated seconds (means over seconds {SETTLE_S} on), {} seed(s) per \
         configuration from base seed {}{}, on spinwise-gecko's disk model (docs/gecko.md). \
         One writer and {READERS} readers of 128-KiB extents, 90% of accesses to 10% of {:.2} \
         GiB of data aged by two passes of overwrites; a tail cache of {} RAM + {} flash pages \
         (the slides' 2 GB + 32 GB per 512-GB disk, scaled) in front of both layouts (Gecko: \
         reads of the tail disk; RAID-0: every read). The load is ours, not the slides' trace \
         mix. Every number below is computed from `results.csv`.\n\n{}",
        rows.len(),
        context.seeds,
        context.base_seed,
        if context.quick {
            " (--quick: 1 to 3 disks, 15 s runs)"
        } else {
            ""
        },
        (LOGICAL_PAGES * 4096) as f64 / f64::from(1u32 << 30),
        CACHE.ram_pages,
        CACHE.flash_pages,
        table(&comparisons)
    )
}

/// Slide 23: read and write throughput per configuration, error bars one standard deviation
/// over the seconds (the first seed's).
fn figure(rows: &[GeckoChainRow]) -> Figure {
    let mut series = Vec::new();
    for layout in [Layout::Chain, Layout::Raid0] {
        for (name, metric, stdev) in [
            (
                "read",
                (|r: &GeckoChainRow| r.read_mb_per_s) as fn(&GeckoChainRow) -> f64,
                (|r: &GeckoChainRow| r.read_stdev_mb_per_s) as fn(&GeckoChainRow) -> f64,
            ),
            ("write", |r| r.write_mb_per_s, |r| r.write_stdev_mb_per_s),
        ] {
            let points: Vec<LinePoint> = disk_counts(rows)
                .into_iter()
                .filter_map(|d| {
                    let y = mean(rows, layout, d, metric)?;
                    let s = mean(rows, layout, d, stdev)?;
                    Some(LinePoint {
                        x: f64::from(d),
                        y,
                        error: Some(((y - s).max(0.0), y + s)),
                    })
                })
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    name: format!("{} {name}", layout.name()),
                    style: SeriesStyle::LineWithMarkers,
                    points,
                });
            }
        }
    }
    let one_disk = DiskParams::WD_10K.bandwidth_bytes_per_s / 1e6;
    let most = disk_counts(rows).last().copied().unwrap_or(1);
    series.push(Series {
        name: "single uncontended disk".into(),
        style: SeriesStyle::Dashed,
        points: vec![
            LinePoint::new(1.0, one_disk),
            LinePoint::new(f64::from(most), one_disk),
        ],
    });
    Figure {
        stem: "chain_throughput",
        chart: LineChart {
            title: "gecko-chain: read and write throughput against disks (error bars: stdev over seconds)".into(),
            x_label: "disks (Gecko: chain length)".into(),
            y_label: "throughput (MB/s)".into(),
            y_scale: YScale::Linear,
            series,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    #[test]
    fn quick_gecko_chain_runs_each_length_and_judges_the_trend_at_every_step() {
        let context = Context::new(Options {
            quick: true,
            ..Options::default()
        })
        .unwrap();
        let outcome = gecko_chain(&context).unwrap();
        let Rows::GeckoChain(rows) = &outcome.rows else {
            panic!("gecko-chain writes its own rows")
        };
        assert_eq!(rows.len(), 5, "chains of 1-3 disks, RAID-0 of 2 and 3");
        assert!(
            rows.iter()
                .all(|r| r.write_mb_per_s > 0.0 && r.read_mb_per_s > 0.0)
        );
        let line = outcome
            .summary
            .lines()
            .find(|l| l.contains("against chain length") && l.contains("read + write"))
            .expect("a trend row");
        assert!(
            line.contains("2 checked") || line.contains("trend broken: at "),
            "{line}"
        );
        let out = tempfile::tempdir().unwrap();
        let files = crate::write_outcome(&outcome, out.path()).unwrap();
        assert!(
            files.iter().any(|f| f == "chain_throughput.svg"),
            "{files:?}"
        );
    }
}
