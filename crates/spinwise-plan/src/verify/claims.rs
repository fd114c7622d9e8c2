//! The figures a layout file claims about itself, recomputed from the rack and compared:
//! `disks`, `max_disks_at_highest`, `bottleneck`, `max_active_groups_bound`, `high_load_bound`,
//! `classes`, `symmetric`, `efficient` with `solver.{samples, low_load_sampled,
//! high_load_sampled}`, and `scheduler`.
//!
//! Why refuse a wrong claim that breaks no budget: consumers trust these figures. `spinwise
//! quality` divides by `max_active_groups_bound` (an inflated 48 on Pelican's layout reported a
//! low-load quality of 4 / 48 = 0.083 instead of 1.0), the scheduler sizes its queues from
//! `classes` and runs with `scheduler`, and a designer reads `efficient` and the bounds.
//!
//! Invariants: every figure is recomputed with the planner's own function (crate::analysis,
//! crate::quality, crate::solver), so a layout the planner wrote always passes; bounds are
//! compared for equality, because each is a definition of the rack and group size, not an
//! estimate. Runs only after membership passed (every group names rack disks, every state name
//! is known), so nothing here indexes out of range.

use super::{Figure, Requirement, Violation};
use crate::admission::Admission;
use crate::analysis::{analyse, low_load_bound};
use crate::high_load::{DEFAULT_NODE_LIMIT, high_load_maximum};
use crate::quality::is_symmetric;
use crate::solver::{EFFICIENCY_SAMPLES, sampled_quality};
use spinwise_model::{DiskIndex, Layout, Rack};

/// Sampled means are stored as JSON decimals; a reader may round the last bit.
const SAMPLED_TOLERANCE: f64 = 1e-9;

/// Adds a violation for every claim of `layout` that its rack does not bear out.
/// `groups` are the layout's groups as rack disk indices.
pub(super) fn check(
    rack: &Rack,
    layout: &Layout,
    groups: &[Vec<DiskIndex>],
    violations: &mut Vec<Violation>,
) {
    check_analysis(rack, layout, violations);
    let low = check_low_load_bound(rack, layout, violations);
    let high = check_high_load(rack, layout, groups, violations);
    let bounds = (low, high);
    check_classes(layout, violations);
    check_scheduler(rack, layout, violations);
    // Symmetry and sampling index by the constraints' groups and states; a layout built in
    // memory (not read by `Layout::from_json`) may break that, and the checks above report it.
    if constraints_are_well_formed(layout) {
        check_symmetric(layout, violations);
        check_sampled_quality(layout, bounds, violations);
    }
}

/// What `Layout::from_json` guarantees of the group constraints, re-checked here so the
/// recomputations cannot index out of range or overflow on a layout built in memory: one cost
/// per state, members naming existing groups, at most the layout's disks weighed (which bounds
/// every cost sum: ≤ MAX_DISKS × MAX_UNITS fits i64).
fn constraints_are_well_formed(layout: &Layout) -> bool {
    let (states, groups) = (layout.states.len(), layout.groups.len());
    layout.group_constraints.iter().all(|constraint| {
        let disks: u64 = constraint.members.iter().map(|(_, w)| u64::from(*w)).sum();
        constraint.cost.len() == states
            && disks <= u64::from(layout.disks)
            && constraint
                .members
                .iter()
                .all(|(group, weight)| (*group as usize) < groups && *weight <= layout.group_size)
    })
}

fn count(value: impl Into<u64>) -> Figure {
    Figure::Count(value.into())
}

/// N, M and the bottleneck (Flamingo eq. 1–2) are the rack's.
fn check_analysis(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) {
    let analysis = analyse(rack);
    if u64::from(layout.disks) != analysis.disks {
        violations.push(Violation::measured(
            "disks",
            format!(
                "disks = {}, but the rack has {} disks",
                layout.disks, analysis.disks
            ),
            count(layout.disks),
            Requirement::exactly(count(analysis.disks)),
        ));
    }
    if layout.max_disks_at_highest != analysis.max_disks_at_highest {
        violations.push(Violation::measured(
            "max_disks_at_highest",
            format!(
                "max_disks_at_highest = {}, but the rack's bottleneck lets M = {} disks be in their costliest state",
                layout.max_disks_at_highest, analysis.max_disks_at_highest
            ),
            count(layout.max_disks_at_highest),
            Requirement::exactly(count(analysis.max_disks_at_highest)),
        ));
    }
    if layout.bottleneck != analysis.bottleneck {
        violations.push(Violation::measured(
            "bottleneck",
            format!(
                "bottleneck = {:?}, but the rack's is {:?}",
                layout.bottleneck, analysis.bottleneck
            ),
            Figure::Names(layout.bottleneck.clone()),
            Requirement::exactly(Figure::Names(analysis.bottleneck)),
        ));
    }
}

/// `max_active_groups_bound`, the low-load metric's divisor: ⌊M / n⌋ with the spin-up path's
/// costliest state, recomputed from the rack and the group size; the witnessed
/// `max_active_groups` may not exceed it. Returns the recomputed bound.
fn check_low_load_bound(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) -> u64 {
    let group_size = u64::from(layout.group_size);
    let low = low_load_bound(rack, group_size);
    if u64::from(layout.max_active_groups_bound) != low {
        violations.push(Violation::measured(
            "max_active_groups_bound",
            format!(
                "max_active_groups_bound = {}, but the rack's hard budgets let at most {low} groups of {group_size} spin up together",
                layout.max_active_groups_bound
            ),
            count(layout.max_active_groups_bound),
            Requirement::exactly(count(low)),
        ));
    }
    if u64::from(layout.max_active_groups) > low {
        violations.push(Violation::measured(
            "max_active_groups",
            format!(
                "max_active_groups = {} is above the upper bound of {low} groups of {group_size} spinning up together",
                layout.max_active_groups
            ),
            count(layout.max_active_groups),
            Requirement::at_most(count(low)),
        ));
    }
    low
}

/// `high_load_bound` (the high-load metric's divisor) and `max_spinning_groups`, against the
/// planner's exact high-load search (crate::high_load) over these groups, seeded with the
/// layout's own witness. The search proves a set it found (`witness`) and an upper bound; the
/// claimed bound must lie between them (equal to both when the search completed), and a
/// completed search's maximum is the claimed `max_spinning_groups`. Returns the figure the
/// sampled quality is measured against: the claim when it is in range (a search stopped by its
/// node limit may prove a looser bound than the planner's did), else the proven upper bound.
fn check_high_load(
    rack: &Rack,
    layout: &Layout,
    groups: &[Vec<DiskIndex>],
    violations: &mut Vec<Violation>,
) -> u64 {
    let searched = high_load_maximum(rack, groups, &layout.spinning_witness, DEFAULT_NODE_LIMIT);
    let (found_groups, upper_bound) = (searched.witness.len() as u64, searched.upper_bound);
    let claimed = u64::from(layout.high_load_bound);
    let how = if searched.exact {
        "exactly".to_string()
    } else {
        format!("at least {found_groups} and at most")
    };
    if claimed > upper_bound {
        violations.push(Violation::measured(
            "high_load_bound",
            format!(
                "high_load_bound = {claimed}, but {how} {upper_bound} groups can be spinning at once (all active but one spinning up)"
            ),
            count(claimed),
            Requirement::at_most(count(upper_bound)),
        ));
    } else if claimed < found_groups {
        violations.push(Violation::measured(
            "high_load_bound",
            format!(
                "high_load_bound = {claimed} is not an upper bound: {found_groups} groups can be spinning at once (all active but one spinning up)"
            ),
            count(claimed),
            Requirement::at_least(count(found_groups)),
        ));
    }
    let spinning = u64::from(layout.max_spinning_groups);
    if searched.exact && spinning != found_groups {
        violations.push(Violation::measured(
            "max_spinning_groups",
            format!(
                "max_spinning_groups = {spinning}, but exactly {found_groups} groups can be spinning at once (all active but one spinning up)"
            ),
            count(spinning),
            Requirement::exactly(count(found_groups)),
        ));
    }
    if (found_groups..=upper_bound).contains(&claimed) {
        claimed
    } else {
        upper_bound
    }
}

/// One class per group, numbered 0 … C − 1 with every class used: the scheduler keeps state per
/// class up to the largest number, so a stray 1,000,000 would allocate a million classes.
fn check_classes(layout: &Layout, violations: &mut Vec<Violation>) {
    let Some(classes) = &layout.classes else {
        return;
    };
    let groups = layout.groups.len() as u64;
    if classes.len() as u64 != groups {
        violations.push(Violation::measured(
            "classes",
            format!(
                "classes names {} groups' classes, the layout has {groups} groups",
                classes.len()
            ),
            count(classes.len() as u64),
            Requirement::exactly(count(groups)),
        ));
        return;
    }
    let distinct: std::collections::BTreeSet<u32> = classes.iter().copied().collect();
    let largest = distinct.last().copied().unwrap_or(0);
    if u64::from(largest) + 1 != distinct.len() as u64 {
        violations.push(Violation::measured(
            "classes",
            format!(
                "classes uses {} distinct numbers up to {largest}; they must be 0 to {} with none skipped",
                distinct.len(),
                distinct.len().saturating_sub(1)
            ),
            count(largest),
            Requirement::exactly(count(distinct.len().saturating_sub(1) as u64)),
        ));
    }
}

/// `symmetric` is Flamingo's heuristic over the layout's own hard constraints.
fn check_symmetric(layout: &Layout, violations: &mut Vec<Violation>) {
    let symmetric = is_symmetric(layout);
    if layout.symmetric != symmetric {
        violations.push(Violation::measured(
            "symmetric",
            format!(
                "symmetric = {}, but the groups conflict with {} numbers of other groups",
                layout.symmetric,
                if symmetric { "equal" } else { "different" }
            ),
            Figure::Flag(layout.symmetric),
            Requirement::exactly(Figure::Flag(symmetric)),
        ));
    }
}

/// The scheduler settings are the rack's `[targets.fairness]`, copied by the planner.
fn check_scheduler(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) {
    let (ours, theirs) = (&layout.scheduler, &rack.targets.fairness);
    let measures = [
        (
            "reordering_bound_gb",
            ours.reordering_bound_gb,
            theirs.reordering_bound_gb,
        ),
        ("rebuild_share", ours.rebuild_share, theirs.rebuild_share),
    ];
    for (key, found, required) in measures {
        // Relative: both numbers went through a decimal text format (TOML, JSON).
        if (found - required).abs() > 1e-12 * required.abs().max(1.0) {
            violations.push(Violation::measured(
                "scheduler",
                format!(
                    "scheduler.{key} = {found}, the rack's targets.fairness.{key} is {required}"
                ),
                Figure::Measure(found),
                Requirement::exactly(Figure::Measure(required)),
            ));
        }
    }
    let counts = [
        (
            "max_queue_depth",
            Some(ours.max_queue_depth),
            Some(theirs.max_queue_depth),
        ),
        (
            "concurrent_requests_per_class",
            Some(ours.concurrent_requests_per_class),
            Some(theirs.concurrent_requests_per_class),
        ),
        (
            "stagger_switches_min_queue",
            ours.stagger_switches_min_queue,
            theirs.stagger_switches_min_queue,
        ),
    ];
    let shown = |value: Option<u32>| value.map_or("absent".to_string(), |v| v.to_string());
    for (key, found, required) in counts {
        if found != required {
            violations.push(Violation {
                check: "scheduler",
                detail: format!(
                    "scheduler.{key} = {}, the rack's targets.fairness.{key} is {}",
                    shown(found),
                    shown(required)
                ),
                found: found.map(count),
                required: required.map(|value| Requirement::exactly(count(value))),
            });
        }
    }
}

/// `efficient` and the sampled means: the planner's seeded sampling over the layout's own group
/// constraints, with the recomputed bounds, gives exactly these figures.
fn check_sampled_quality(layout: &Layout, bounds: (u64, u64), violations: &mut Vec<Violation>) {
    let solver = &layout.solver;
    if solver.samples != EFFICIENCY_SAMPLES {
        // Also a limit: the sample count is not taken from the file, so a hostile one cannot
        // make verification run for hours.
        violations.push(Violation::measured(
            "solver.samples",
            format!(
                "solver.samples = {}, the planner samples {EFFICIENCY_SAMPLES} orderings",
                solver.samples
            ),
            count(solver.samples),
            Requirement::exactly(count(EFFICIENCY_SAMPLES)),
        ));
    }
    let state = |name: &str| layout.state_index(name);
    let path: Option<Vec<usize>> = layout.spin_up_path.iter().map(|s| state(s)).collect();
    let (Some(resting), Some(active), Some(path)) = (
        state(&layout.resting_state),
        state(&layout.active_state),
        path,
    ) else {
        return; // the reader refuses unknown state names; nothing to sample without them
    };
    let (low_bound, high_bound) = bounds;
    let mut admission = Admission::new(
        &layout.group_constraints,
        layout.groups.len(),
        &path,
        resting,
        active,
    );
    let ((low, low_all), (high, high_all)) =
        sampled_quality(&mut admission, low_bound, high_bound, EFFICIENCY_SAMPLES);
    for (key, found, required) in [
        ("solver.low_load_sampled", solver.low_load_sampled, low),
        ("solver.high_load_sampled", solver.high_load_sampled, high),
    ] {
        // Written as "close", then negated, so a NaN in the file (never close) is refused too.
        let close = (found - required).abs() <= SAMPLED_TOLERANCE;
        if !close {
            violations.push(Violation::measured(
                "sampled quality",
                format!(
                    "{key} = {found}, but {EFFICIENCY_SAMPLES} seeded orderings of these groups reach {required:.6} of the bound"
                ),
                Figure::Measure(found),
                Requirement::exactly(Figure::Measure(required)),
            ));
        }
    }
    let efficient = low_all && high_all;
    if layout.efficient != efficient {
        violations.push(Violation::measured(
            "efficient",
            format!(
                "efficient = {}, but the sampled orderings {} their bounds every time",
                layout.efficient,
                if efficient { "reach" } else { "do not reach" }
            ),
            Figure::Flag(layout.efficient),
            Requirement::exactly(Figure::Flag(efficient)),
        ));
    }
}
