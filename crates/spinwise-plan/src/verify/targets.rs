//! The layout against the targets its rack states (`[targets]` in docs/rack-format.md): the
//! erasure code (k, r, f) and the concurrency the layout proves.
//!
//! Each target is checked on its own and every broken one is reported, so a code like (3, 3) is
//! refused for both reasons it fails (its reads are too slow *and* it spends too much capacity on
//! redundancy), not for whichever check happens to run first.
//!
//! Invariants: the formulas are the durability model's (crate::durability), the same functions
//! the planner chose the code with, so a layout the planner writes always passes and the verifier
//! refuses exactly the codes the planner would not have chosen for these reasons. Arithmetic is
//! in f64 on values the rack parser bounded (finite, positive) and u64 on counts, so nothing here
//! overflows or panics on a hostile layout.

use super::{Figure, Requirement, Violation};
use crate::durability::{
    MAX_DATA_FRAGMENTS, MAX_REDUNDANCY_FRAGMENTS, allowed_loss_probability,
    lifetime_loss_probability, minimum_data_fragments, spares_for_group,
};
use spinwise_model::{Layout, Rack};

/// Adds a violation for every rack target `layout` breaks.
pub(super) fn check(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) {
    let erasure = layout.erasure;
    // The model's formulas are only meaningful inside the range it searches, and a k or r of 0
    // is no code at all (the structural `erasure` check reports those).
    let in_model_range = (1..=MAX_DATA_FRAGMENTS).contains(&erasure.k)
        && (1..=MAX_REDUNDANCY_FRAGMENTS).contains(&erasure.r);
    check_model_range(layout, violations);
    if erasure.k > 0 {
        check_bandwidth_floor(rack, layout, violations);
    }
    if erasure.k > 0 && erasure.r > 0 {
        check_capacity_overhead(rack, layout, violations);
    }
    if in_model_range {
        check_durability(rack, layout, violations);
    }
    check_spares(rack, layout, violations);
    check_concurrency(rack, layout, violations);
}

/// k and r inside the range the durability model covers (k ≤ 64: wider stripes gain little and
/// cost memory per read; r ≤ 16: no disk rack uses more).
fn check_model_range(layout: &Layout, violations: &mut Vec<Violation>) {
    let erasure = layout.erasure;
    for (name, value, maximum) in [
        ("k", erasure.k, MAX_DATA_FRAGMENTS),
        ("r", erasure.r, MAX_REDUNDANCY_FRAGMENTS),
    ] {
        if value > maximum {
            violations.push(Violation::measured(
                "erasure",
                format!(
                    "{name} = {value} is above the {maximum} the durability model covers, so its durability cannot be judged"
                ),
                Figure::Count(u64::from(value)),
                Requirement::at_most(Figure::Count(u64::from(maximum))),
            ));
        }
    }
}

/// A read streams its k data fragments from k disks at once: k × disk bandwidth must reach the
/// rack's `file_bandwidth_floor_mb_per_s`.
fn check_bandwidth_floor(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) {
    let k = layout.erasure.k;
    let minimum_k = minimum_data_fragments(rack);
    if k >= minimum_k {
        return;
    }
    let disk_mb_per_s = rack.disk_model.bandwidth_mb_per_s;
    let floor_mb_per_s = rack.targets.file_bandwidth_floor_mb_per_s;
    let read_mb_per_s = f64::from(k) * disk_mb_per_s;
    violations.push(Violation::measured(
        "bandwidth floor",
        format!(
            "k = {k} streams a read at {k} × {disk_mb_per_s} MB/s = {read_mb_per_s} MB/s, below the rack's floor of {floor_mb_per_s} MB/s (needs k ≥ {minimum_k})"
        ),
        Figure::Measure(read_mb_per_s),
        Requirement::at_least(Figure::Measure(floor_mb_per_s)),
    ));
}

/// r / (k + r) of the capacity holds redundancy: at most the rack's `capacity_overhead_max`.
fn check_capacity_overhead(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) {
    let erasure = layout.erasure;
    let overhead = erasure.capacity_overhead();
    let cap = rack.targets.capacity_overhead_max;
    if overhead <= cap {
        return;
    }
    violations.push(Violation::measured(
        "capacity overhead",
        format!(
            "(k, r) = ({}, {}) spends r / (k + r) = {} / {} = {:.1}% of the capacity on redundancy, above the rack's cap of {:.1}%",
            erasure.k,
            erasure.r,
            erasure.r,
            erasure.k + erasure.r,
            overhead * 100.0,
            cap * 100.0
        ),
        Figure::Measure(overhead),
        Requirement::at_most(Figure::Measure(cap)),
    ));
}

/// The probability of losing a blob over the deployment lifetime: at most 10^-durability_nines.
fn check_durability(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) {
    let erasure = layout.erasure;
    let loss = lifetime_loss_probability(rack, erasure.k, erasure.r);
    let allowed = allowed_loss_probability(rack);
    if loss <= allowed {
        return;
    }
    violations.push(Violation::measured(
        "durability",
        format!(
            "(k, r) = ({}, {}) loses a blob over {} years with probability {loss:.2e}, above the {allowed:.0e} of the rack's {} nines",
            erasure.k,
            erasure.r,
            rack.targets.deployment_lifetime_years,
            rack.targets.durability_nines
        ),
        Figure::Measure(loss),
        Requirement::at_most(Figure::Measure(allowed)),
    ));
}

/// f spares per group: at least the failures the durability model expects within one service
/// interval (exceeded with probability at most `spare_exhaustion_probability`). More spares only
/// reserve more disks, which the `erasure` check already bounds by the group size.
fn check_spares(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) {
    let f = layout.erasure.f;
    let required = spares_for_group(rack, layout.group_size);
    if f >= required {
        return;
    }
    violations.push(Violation::measured(
        "spares",
        format!(
            "f = {f} spares per group of {}, below the {required} failures the durability model expects within a {}-day service interval (exceeded with probability at most {})",
            layout.group_size,
            rack.targets.service_interval_days,
            rack.targets.spare_exhaustion_probability
        ),
        Figure::Count(u64::from(f)),
        Requirement::at_least(Figure::Count(u64::from(required))),
    ));
}

/// The groups proven able to spin up together (`max_active_groups`, whose witness the budget
/// checks verify) must reach the rack's `io_concurrency_target`.
fn check_concurrency(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) {
    let target = rack.targets.io_concurrency_target;
    let proven = layout.max_active_groups;
    if proven >= target {
        return;
    }
    violations.push(Violation::measured(
        "concurrency target",
        format!(
            "max_active_groups = {proven} groups can spin up together, below the rack's IO concurrency target of {target}"
        ),
        Figure::Count(u64::from(proven)),
        Requirement::at_least(Figure::Count(u64::from(target))),
    ));
}
