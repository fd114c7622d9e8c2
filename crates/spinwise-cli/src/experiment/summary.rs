//! summary.md building blocks: the run settings line and the "ours beside the paper's" table.
//!
//! Invariant: the "ours" column is always computed from the experiment's rows by the caller; this
//! module only formats. The paper's column is quoted text with its section, and a row's note says
//! why the numbers differ only when the caller's comparison found that they do.

use super::Context;
use super::sweep::Row;
use spinwise_sim::BlobSizes;

/// One line of the comparison table.
pub struct Comparison {
    pub quantity: String,
    /// The paper's value as quoted, with its section ("≈ 40 Gbps (Pelican §4.2)").
    pub paper: String,
    pub ours: String,
    pub note: String,
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
    let mut text = String::from("| quantity | paper | ours | note |\n|---|---|---|---|\n");
    for c in comparisons {
        text.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            c.quantity, c.paper, c.ours, c.note
        ));
    }
    text
}

/// Relative difference of `ours` from `paper`, as a fraction of `paper`.
pub fn relative(ours: f64, paper: f64) -> f64 {
    (ours - paper) / paper
}

/// "agrees (within N%)" when `ours` is within `tolerance` of `paper`, else `why`, prefixed by the
/// measured difference.
pub fn agreement(ours: f64, paper: f64, tolerance: f64, why: &str) -> String {
    let difference = relative(ours, paper);
    if difference.abs() <= tolerance {
        format!("agrees (within {:.0}%)", tolerance * 100.0)
    } else {
        format!("{:+.0}% from the paper: {why}", difference * 100.0)
    }
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
