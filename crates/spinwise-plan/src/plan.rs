//! Synthesis of one configuration (Flamingo §4.2–4.3): rack → layout.
//!
//! analyse (M, bottleneck) → erasure candidates (k, r) → smallest group size n with
//! M mod n = 0, N mod n = 0 and k + r + f ≤ n → solver (disk → group) → group constraints →
//! concurrency witness → independent verifier. A pure, deterministic function: the same rack gives
//! the same layout, byte for byte.

use crate::admission::{Admission, Mode};
use crate::analysis::{Analysis, analyse, high_load_target, low_load_bound};
use crate::constraints::group_constraints;
use crate::durability::{ErasureCandidate, erasure_candidates, spares_for_group};
use crate::error::PlanError;
use crate::high_load::{DEFAULT_NODE_LIMIT, HighLoadMaximum, high_load_maximum};
use crate::solver::{self, Problem, sampled_quality};
use crate::verify::verify;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use spinwise_model::layout::{LAYOUT_FORMAT, LAYOUT_VERSION};
use spinwise_model::{DiskIndex, Erasure, GroupIndex, Layout, Rack, SchedulerConfig, SolverReport};

/// Layouts with at most this many groups get an exact maximum-concurrency search instead of a
/// sampled witness (branch and bound is exponential in the group count).
pub const EXACT_SEARCH_MAX_GROUPS: usize = 24;
/// Orderings tried when looking for the largest concurrently startable set of a big layout.
const WITNESS_SAMPLES: u32 = 2_000;

#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub layout: Layout,
    pub analysis: Analysis,
    pub erasure: ErasureCandidate,
    /// How the layout's `max_spinning_groups` and `high_load_bound` were established (method,
    /// nodes, whether the node limit stopped the search).
    pub high_load: HighLoadMaximum,
}

/// Group size and erasure parameters for a rack, before any disk is assigned.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sizing {
    pub group_size: u32,
    pub erasure: ErasureCandidate,
    pub spares: u32,
}

/// Plans `rack`: the layout, verified.
pub fn plan(rack: &Rack) -> Result<Plan, PlanError> {
    let analysis = analyse(rack);
    let sizing = size_groups(rack, &analysis)?;
    let problem = Problem {
        rack,
        group_size: sizing.group_size as usize,
        low_load_bound: low_load_bound(rack, u64::from(sizing.group_size)),
        high_load_target: high_load_target(rack, u64::from(sizing.group_size)),
        stripe_width: sizing.erasure.width(),
        redundancy: sizing.erasure.r,
    };
    let outcome = solver::solve(&problem);
    let candidate = outcome.best.ok_or(PlanError::NoLayout {
        group_size: sizing.group_size,
        attempts: outcome.attempts,
    })?;
    let assembly = Assembly {
        groups: candidate.groups,
        classes: candidate.classes,
        method: candidate.method,
        attempts: outcome.attempts,
    };
    finish(rack, analysis, sizing, assembly)
}

/// Chooses n, (k, r) and f: the smallest candidate n that fits the best-ranked code with its
/// spares, provided ⌊M / n⌋ still meets the concurrency target.
pub fn size_groups(rack: &Rack, analysis: &Analysis) -> Result<Sizing, PlanError> {
    let codes = erasure_candidates(rack);
    let Some(narrowest) = codes.iter().map(ErasureCandidate::width).min() else {
        return Err(PlanError::NoErasureCode {
            reason: erasure_failure_reason(rack),
        });
    };
    let (disks, max_at_highest) = (analysis.disks, analysis.max_disks_at_highest);
    for group_size in (1..=max_at_highest).filter(|n| max_at_highest % n == 0 && disks % n == 0) {
        let spares = spares_for_group(rack, group_size as u32);
        let Some(code) = codes
            .iter()
            .find(|c| u64::from(c.width() + spares) <= group_size)
        else {
            continue;
        };
        let concurrent = max_at_highest / group_size;
        let target = rack.targets.io_concurrency_target;
        if concurrent < u64::from(target) {
            return Err(PlanError::ConcurrencyBelowTarget {
                groups: concurrent,
                group_size: group_size as u32,
                target,
            });
        }
        return Ok(Sizing {
            group_size: group_size as u32,
            erasure: code.clone(),
            spares,
        });
    }
    Err(PlanError::NoGroupSize {
        max_disks_at_highest: max_at_highest,
        disks,
        needed: narrowest,
    })
}

/// Explains an empty candidate list by the first target that alone rules every code out.
fn erasure_failure_reason(rack: &Rack) -> String {
    let targets = &rack.targets;
    let minimum_k = (targets.file_bandwidth_floor_mb_per_s / rack.disk_model.bandwidth_mb_per_s)
        .ceil()
        .max(1.0);
    if minimum_k > f64::from(crate::durability::MAX_DATA_FRAGMENTS) {
        return format!(
            "the bandwidth floor needs k ≥ {minimum_k}, above the limit of {}",
            crate::durability::MAX_DATA_FRAGMENTS
        );
    }
    if let Some(domain) = rack
        .failure_domains
        .iter()
        .find(|d| d.spread && d.annual_failure_rate > 0.0 && d.domains.len() < 2)
    {
        return format!(
            "failure domain `{}` holds every disk, so no stripe can survive its failure; mark it `spread = false`",
            domain.name
        );
    }
    format!(
        "no k ≥ {minimum_k} and r ≤ {} reaches {} nines within a capacity overhead of {} while surviving any one component failure",
        crate::durability::MAX_REDUNDANCY_FRAGMENTS,
        targets.durability_nines,
        targets.capacity_overhead_max
    )
}

/// A disk → group assignment from any source (the solver, or a hand-designed layout).
pub struct Assembly {
    pub groups: Vec<Vec<DiskIndex>>,
    pub classes: Option<Vec<u32>>,
    pub method: String,
    pub attempts: u32,
}

/// Turns an assignment into a verified layout: group constraints, concurrency witness, metrics.
pub fn finish(
    rack: &Rack,
    analysis: Analysis,
    sizing: Sizing,
    assembly: Assembly,
) -> Result<Plan, PlanError> {
    let group_size = u64::from(sizing.group_size);
    let low_bound = low_load_bound(rack, group_size);
    let constraints = group_constraints(rack, &assembly.groups);
    let (path, resting, active) = (
        rack.spin_up_path(),
        rack.resting_state(),
        rack.active_state(),
    );
    let mut admission = Admission::new(&constraints, assembly.groups.len(), &path, resting, active);
    let witness = concurrency_witness(&mut admission, low_bound);
    // The greedy witness seeds the exact search, which either proves it maximal or beats it;
    // the proven upper bound is the high-load metric's m, so the efficiency label is judged
    // against the true figure and not an estimate.
    let greedy = spinning_witness(&mut admission);
    let high_load = high_load_maximum(rack, &assembly.groups, &greedy, DEFAULT_NODE_LIMIT);
    let spinning_witness = high_load.witness.clone();
    let high_bound = high_load.upper_bound;
    let ((low, low_all), (high, high_all)) = sampled_quality(
        &mut admission,
        low_bound,
        high_bound,
        solver::EFFICIENCY_SAMPLES,
    );
    let name_of = |state: usize| rack.states[state].name.clone();
    let mut layout = Layout {
        format: LAYOUT_FORMAT.to_string(),
        version: LAYOUT_VERSION,
        rack: rack.name.clone(),
        rack_fingerprint: rack.fingerprint(),
        disks: rack.disk_count() as u32,
        group_size: sizing.group_size,
        groups: assembly
            .groups
            .iter()
            .map(|g| g.iter().map(|&d| rack.disks[d as usize].id).collect())
            .collect(),
        erasure: Erasure {
            k: sizing.erasure.k,
            r: sizing.erasure.r,
            f: sizing.spares,
        },
        states: rack.states.iter().map(|s| s.name.clone()).collect(),
        resting_state: name_of(resting),
        active_state: name_of(active),
        spin_up_path: path.iter().map(|&s| name_of(s)).collect(),
        group_constraints: constraints,
        bottleneck: analysis.bottleneck.clone(),
        max_disks_at_highest: analysis.max_disks_at_highest,
        max_active_groups: witness.len() as u32,
        max_active_groups_bound: low_bound as u32,
        high_load_bound: high_bound as u32,
        active_witness: witness,
        max_spinning_groups: spinning_witness.len() as u32,
        spinning_witness,
        classes: assembly.classes,
        symmetric: false,
        efficient: low_all && high_all,
        verified: false,
        solver: SolverReport {
            method: assembly.method,
            attempts: assembly.attempts,
            samples: solver::EFFICIENCY_SAMPLES,
            low_load_sampled: low,
            high_load_sampled: high,
        },
        scheduler: SchedulerConfig {
            reordering_bound_gb: rack.targets.fairness.reordering_bound_gb,
            rebuild_share: rack.targets.fairness.rebuild_share,
            max_queue_depth: rack.targets.fairness.max_queue_depth,
            concurrent_requests_per_class: rack.targets.fairness.concurrent_requests_per_class,
            stagger_switches_min_queue: rack.targets.fairness.stagger_switches_min_queue,
        },
    };
    layout.symmetric = crate::quality::is_symmetric(&layout);
    verify(rack, &layout).map_err(PlanError::Unverified)?;
    layout.verified = true;
    Ok(Plan {
        layout,
        analysis,
        erasure: sizing.erasure,
        high_load,
    })
}

/// The largest set of groups found that can spin up together: exact for small layouts, otherwise
/// the best of many seeded greedy passes (stopping early at the upper bound).
fn concurrency_witness(admission: &mut Admission, bound: u64) -> Vec<GroupIndex> {
    if admission.groups() <= EXACT_SEARCH_MAX_GROUPS {
        return admission.exact_maximum(bound);
    }
    let mut order: Vec<GroupIndex> = (0..admission.groups() as GroupIndex).collect();
    let mut best = admission.greedy_set(&order, bound, Mode::Spinning);
    let mut rng = ChaCha8Rng::seed_from_u64(0x_0057_17e5);
    for _ in 0..WITNESS_SAMPLES {
        if best.len() as u64 >= bound {
            break;
        }
        order.shuffle(&mut rng);
        let set = admission.greedy_set(&order, bound, Mode::Spinning);
        if set.len() > best.len() {
            best = set;
        }
    }
    best.sort_unstable();
    best
}

/// The most groups found spinning at once in the high-load sense: all but the last active, the
/// last spinning up beside them (Flamingo's scheduler on OCP keeps three groups spinning where a
/// conservative one keeps two). Best of seeded greedy passes; not a proof of the maximum, only the
/// starting witness of the exact search ([`crate::high_load`]).
fn spinning_witness(admission: &mut Admission) -> Vec<GroupIndex> {
    let groups = admission.groups() as u64;
    let mut order: Vec<GroupIndex> = (0..groups as GroupIndex).collect();
    let mut best = admission.greedy_set(&order, groups, Mode::Active);
    let mut rng = ChaCha8Rng::seed_from_u64(0x5b17_4e55);
    for _ in 0..WITNESS_SAMPLES {
        order.shuffle(&mut rng);
        let set = admission.greedy_set(&order, groups, Mode::Active);
        if set.len() > best.len() {
            best = set;
        }
    }
    best
}
