//! The independent layout verifier: everything `spinwise verify` checks, and what the planner
//! runs on every layout it writes. Three families, all reported together (never only the first):
//!
//! - **Hard budgets** (this file): the layout belongs to this rack; every disk is in exactly one
//!   group and groups have equal size; k + r + f fits a group; each group can walk the spin-up
//!   path alone while every other disk rests; the claimed `max_active_groups` is witnessed by
//!   groups that really can spin up together; the claimed `max_spinning_groups` is witnessed by
//!   groups that can be active while the last of them spins up; each group can spread a stripe
//!   with at most r fragments in any component of a `spread` failure domain; and the layout's
//!   group constraints are at least as strict as the rack's domains (so a scheduler obeying them
//!   cannot break a hard budget).
//! - **Targets** ([`targets`]): the erasure code against every target the rack states (per-read
//!   bandwidth floor, capacity overhead cap, durability, the spares f the durability model
//!   computes, the model's range of k and r) and the witnessed concurrency against the IO
//!   concurrency target.
//! - **Derived claims** ([`claims`]): every figure the layout file carries that the planner
//!   derives (disk count, M, bottleneck, both bounds, classes, symmetry, sampled quality, the
//!   scheduler settings) recomputed and compared; a mismatch is refused because consumers
//!   (`spinwise quality`, the scheduler) trust these figures.
//!
//! Invariants: `verify` never panics on a layout `Layout::from_json` accepted; it returns `Ok`
//! only with no violation at all; every violation names its check, and those comparing numbers
//! carry the number found and the number required.
//!
//! The hard-budget checks are deliberately written without the planner's admission or constraint
//! code: two derivations that agree are evidence, one derivation checked against itself is not.
//! The target and claim checks do call the planner's definitions (durability model, bounds,
//! sampling): a claim *is* what those functions compute, so a second formula could only drift.

mod claims;
mod targets;

use serde::Serialize;
use spinwise_model::rack::FailureDomain;
use spinwise_model::{Amount, DiskIndex, Erasure, Layout, Rack, ResourceKind};
use std::collections::BTreeMap;

/// A number a violation found or requires. Counts are exact; measures are what the rack states
/// (MB/s, fractions, probabilities).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Figure {
    Count(u64),
    Measure(f64),
    Flag(bool),
    Names(Vec<String>),
}

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Figure::Count(count) => write!(f, "{count}"),
            Figure::Measure(measure) => write!(f, "{measure}"),
            Figure::Flag(flag) => write!(f, "{flag}"),
            Figure::Names(names) => write!(f, "{names:?}"),
        }
    }
}

/// How the found number must relate to the required one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    AtLeast,
    AtMost,
    Exactly,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Requirement {
    pub relation: Relation,
    pub value: Figure,
}

impl Requirement {
    pub fn at_least(value: Figure) -> Requirement {
        Requirement {
            relation: Relation::AtLeast,
            value,
        }
    }

    pub fn at_most(value: Figure) -> Requirement {
        Requirement {
            relation: Relation::AtMost,
            value,
        }
    }

    pub fn exactly(value: Figure) -> Requirement {
        Requirement {
            relation: Relation::Exactly,
            value,
        }
    }
}

/// One reason a layout is refused.
#[derive(Clone, Debug, PartialEq, Serialize, thiserror::Error)]
#[error("{check}: {detail}")]
pub struct Violation {
    /// What was checked: a target (`bandwidth floor`), a hard constraint (`budget`), or the
    /// layout field whose claim is wrong (`max_active_groups_bound`).
    pub check: &'static str,
    /// One sentence for a person, naming the numbers.
    pub detail: String,
    /// The number the layout has, where the check compares numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<Figure>,
    /// The number the rack or the planner's definitions require of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<Requirement>,
}

impl Violation {
    /// A violation comparing numbers: `found` against `required`.
    pub fn measured(
        check: &'static str,
        detail: String,
        found: Figure,
        required: Requirement,
    ) -> Violation {
        Violation {
            check,
            detail,
            found: Some(found),
            required: Some(required),
        }
    }
}

/// Verifies `layout` against `rack`; `Ok` carries the number of hard domains checked.
pub fn verify(rack: &Rack, layout: &Layout) -> Result<usize, Vec<Violation>> {
    let mut violations = Vec::new();
    let Some(group_of) = membership(rack, layout, &mut violations) else {
        return Err(violations);
    };
    check_erasure(layout, &mut violations);
    check_spread(rack, layout, &mut violations);
    let worst = worst_step_per_resource(rack);
    let active = active_step_per_resource(rack);
    let disks_of = |groups: &[u32]| -> Vec<usize> {
        let ids = groups
            .iter()
            .flat_map(|g| layout.groups.get(*g as usize).into_iter().flatten());
        ids.map(|id| index_of(rack, *id).expect("membership checked"))
            .collect()
    };
    let mut domains_checked = 0;
    for group in 0..layout.groups.len() as u32 {
        let members = disks_of(&[group]);
        let what = format!("group {group} alone");
        domains_checked += check_budgets(rack, &[(&worst, &members)], &mut violations, &what);
    }
    check_witness_groups(layout, &mut violations);
    check_state_machine(rack, layout, &mut violations);
    let witness = disks_of(&layout.active_witness);
    let what = format!("groups {:?} spinning up together", layout.active_witness);
    check_budgets(rack, &[(&worst, &witness)], &mut violations, &what);
    if let Some((last, actives)) = layout.spinning_witness.split_last() {
        let (spinning, active_disks) = (disks_of(&[*last]), disks_of(actives));
        let what = format!("groups {actives:?} active while {last} spins up");
        check_budgets(
            rack,
            &[(&worst, &spinning), (&active, &active_disks)],
            &mut violations,
            &what,
        );
    }
    check_constraints_cover_rack(rack, layout, &group_of, &mut violations);
    targets::check(rack, layout, &mut violations);
    // Membership passed, so every id names a rack disk.
    let groups: Vec<Vec<DiskIndex>> = layout
        .groups
        .iter()
        .map(|ids| {
            ids.iter()
                .filter_map(|id| index_of(rack, *id))
                .map(|index| index as DiskIndex)
                .collect()
        })
        .collect();
    claims::check(rack, layout, &groups, &mut violations);
    if violations.is_empty() {
        Ok(domains_checked)
    } else {
        Err(violations)
    }
}

fn index_of(rack: &Rack, id: u32) -> Option<usize> {
    rack.disks.binary_search_by_key(&id, |d| d.id).ok()
}

/// Each rack disk in exactly one group, every group the same size: returns each disk's group.
fn membership(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) -> Option<Vec<u32>> {
    if layout.rack_fingerprint != rack.fingerprint() {
        violations.push(Violation {
            found: None,
            required: None,
            check: "rack",
            detail: format!(
                "layout was planned for rack `{}` with another description",
                layout.rack
            ),
        });
    }
    let mut group_of = vec![u32::MAX; rack.disk_count()];
    for (group, disks) in layout.groups.iter().enumerate() {
        if disks.len() != layout.group_size as usize {
            violations.push(Violation {
                found: None,
                required: None,
                check: "group size",
                detail: format!(
                    "group {group} has {} disks, not {}",
                    disks.len(),
                    layout.group_size
                ),
            });
        }
        for id in disks {
            match index_of(rack, *id) {
                None => violations.push(Violation {
                    found: None,
                    required: None,
                    check: "membership",
                    detail: format!("group {group} names disk {id}, which the rack lacks"),
                }),
                Some(disk) if group_of[disk] != u32::MAX => violations.push(Violation {
                    found: None,
                    required: None,
                    check: "membership",
                    detail: format!("disk {id} is in groups {} and {group}", group_of[disk]),
                }),
                Some(disk) => group_of[disk] = group as u32,
            }
        }
    }
    if let Some(disk) = group_of.iter().position(|g| *g == u32::MAX) {
        violations.push(Violation {
            found: None,
            required: None,
            check: "membership",
            detail: format!("disk {} is in no group", rack.disks[disk].id),
        });
    }
    if violations.is_empty() {
        Some(group_of)
    } else {
        None
    }
}

fn check_erasure(layout: &Layout, violations: &mut Vec<Violation>) {
    let erasure = layout.erasure;
    // In u64: a layout file's f of 4294967295 wrapped the u32 sum to below the group size and
    // was verified (found 2026-12-01).
    let width = u64::from(erasure.k) + u64::from(erasure.r) + u64::from(erasure.f);
    if erasure.k == 0 || erasure.r == 0 || width > u64::from(layout.group_size) {
        violations.push(Violation {
            found: None,
            required: None,
            check: "erasure",
            detail: format!(
                "k={} r={} f={} does not fit groups of {}",
                erasure.k, erasure.r, erasure.f, layout.group_size
            ),
        });
    }
}

/// Single-fault availability (docs/durability.md): each group must be able to hold a stripe of
/// k + r fragments with at most r in any one component of a failure-domain type marked `spread`,
/// i.e. Σ over the components of min(group's disks there, r) ≥ k + r. Otherwise the planner's
/// code choice assumed a spread its groups cannot give.
fn check_spread(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) {
    let Erasure { k, r, .. } = layout.erasure;
    for (group, ids) in layout.groups.iter().enumerate() {
        let members: Vec<usize> = ids.iter().filter_map(|id| index_of(rack, *id)).collect();
        for domain in spread_domains(rack) {
            let room = spread_room(domain, &members, r);
            let width = u64::from(k) + u64::from(r);
            if u64::from(room) < width {
                violations.push(Violation {
 found: None, required: None,
                    check: "spread",
                    detail: format!(
                        "group {group}: at most {room} fragments fit with ≤ {r} per `{}`, a stripe has {width}",
                        domain.name,
                    ),
                });
            }
        }
    }
}

/// Failure-domain types a stripe must survive losing one component of.
fn spread_domains(rack: &Rack) -> impl Iterator<Item = &FailureDomain> {
    rack.failure_domains
        .iter()
        .filter(|d| d.spread && d.annual_failure_rate > 0.0)
}

/// How many fragments of one stripe `members` (disk indices) can hold with at most `per_component`
/// in each component of `domain`.
fn spread_room(domain: &FailureDomain, members: &[usize], per_component: u32) -> u32 {
    domain
        .domains
        .iter()
        .map(|component| {
            let here = members
                .iter()
                .filter(|m| component.contains(&(**m as DiskIndex)))
                .count() as u32;
            here.min(per_component)
        })
        .sum()
}

/// For each resource, the largest cost above resting of any state on the spin-up path: a disk
/// walking that path costs at most this at any instant.
fn worst_step_per_resource(rack: &Rack) -> Vec<Amount> {
    let path = rack.spin_up_path();
    let resting = rack.resting_state();
    rack.resources
        .iter()
        .map(|r| {
            path.iter()
                .map(|s| r.cost[*s] - r.cost[resting])
                .max()
                .unwrap_or(Amount::ZERO)
        })
        .collect()
}

/// Active-state cost above resting, per resource.
fn active_step_per_resource(rack: &Rack) -> Vec<Amount> {
    let (resting, active) = (rack.resting_state(), rack.active_state());
    rack.resources
        .iter()
        .map(|r| r.cost[active] - r.cost[resting])
        .collect()
}

/// Charges each listed disk its step (per resource) above resting, every other disk resting, and
/// checks every hard domain's budget. Returns the number of domains checked.
fn check_budgets(
    rack: &Rack,
    charged: &[(&[Amount], &[usize])],
    violations: &mut Vec<Violation>,
    what: &str,
) -> usize {
    let resting = rack.resting_state();
    let mut checked = 0;
    for (index, resource) in rack.resources.iter().enumerate() {
        if resource.kind != ResourceKind::Hard {
            continue;
        }
        let mut extra: BTreeMap<u32, Amount> = BTreeMap::new();
        for (steps, disks) in charged {
            for &disk in *disks {
                *extra.entry(resource.domain_of[disk]).or_default() += steps[index];
            }
        }
        for (domain, added) in extra {
            checked += 1;
            let load = resource.cost[resting].times(resource.domains[domain as usize].len() as u64)
                + added;
            if load > resource.budget {
                violations.push(Violation {
                    found: None,
                    required: None,
                    check: "budget",
                    detail: format!(
                        "{what}: {} domain {domain} would draw {load} {} of a {} budget",
                        resource.name, resource.unit, resource.budget
                    ),
                });
            }
        }
    }
    checked
}

/// Every hard rack domain, rewritten over groups, must be enforced by some layout constraint with
/// the same members that is at least as strict in every state.
fn check_constraints_cover_rack(
    rack: &Rack,
    layout: &Layout,
    group_of: &[u32],
    violations: &mut Vec<Violation>,
) {
    let resting = rack.resting_state();
    if layout
        .states
        .iter()
        .map(String::as_str)
        .ne(rack.states.iter().map(|s| s.name.as_str()))
    {
        violations.push(Violation {
            found: None,
            required: None,
            check: "states",
            detail: "layout states differ from the rack's".into(),
        });
        return;
    }
    let mut by_members: BTreeMap<Vec<(u32, u32)>, Vec<usize>> = BTreeMap::new();
    for (index, constraint) in layout.group_constraints.iter().enumerate() {
        if constraint.kind == ResourceKind::Hard {
            by_members
                .entry(constraint.members.clone())
                .or_default()
                .push(index);
        }
    }
    // A hard resource whose every state costs as much as resting can never be exceeded (the
    // parser guarantees its budget covers every disk resting): it needs no group constraint.
    let binds = |r: &&spinwise_model::Resource| r.cost.iter().any(|c| *c != r.cost[resting]);
    for resource in rack
        .resources
        .iter()
        .filter(|r| r.kind == ResourceKind::Hard)
        .filter(binds)
    {
        for (domain, disks) in resource.domains.iter().enumerate() {
            let mut weights: BTreeMap<u32, u32> = BTreeMap::new();
            for &disk in disks {
                *weights.entry(group_of[disk as usize]).or_default() += 1;
            }
            let members: Vec<(u32, u32)> = weights.into_iter().collect();
            let headroom = resource.budget - resource.cost[resting].times(disks.len() as u64);
            let enforced = by_members.get(&members).is_some_and(|candidates| {
                candidates.iter().any(|&i| {
                    let constraint = &layout.group_constraints[i];
                    let their_headroom =
                        constraint.budget - constraint.cost[resting].times(disks.len() as u64);
                    their_headroom > Amount::ZERO
                        && constraint
                            .cost
                            .iter()
                            .zip(&resource.cost)
                            .all(|(theirs, ours)| {
                                let their_step =
                                    i128::from((*theirs - constraint.cost[resting]).micros());
                                let our_step =
                                    i128::from((*ours - resource.cost[resting]).micros());
                                their_step * i128::from(headroom.micros())
                                    >= our_step * i128::from(their_headroom.micros())
                            })
                })
            });
            if !enforced {
                violations.push(Violation {
                    found: None,
                    required: None,
                    check: "group constraints",
                    detail: format!(
                        "{} domain {domain} is not enforced by any group constraint",
                        resource.name
                    ),
                });
            }
        }
    }
}

/// Each witness holds as many groups as its claim, all existing, each once (a repeated group
/// would count twice).
fn check_witness_groups(layout: &Layout, violations: &mut Vec<Violation>) {
    let claims = [
        (
            "active_witness",
            &layout.active_witness,
            layout.max_active_groups,
        ),
        (
            "spinning_witness",
            &layout.spinning_witness,
            layout.max_spinning_groups,
        ),
    ];
    for (name, witness, claim) in claims {
        if witness.len() != claim as usize {
            violations.push(Violation {
                found: None,
                required: None,
                check: "witness",
                detail: format!(
                    "{name} holds {} groups for a claim of {claim}",
                    witness.len()
                ),
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        for group in witness {
            if *group as usize >= layout.groups.len() {
                violations.push(Violation {
                    found: None,
                    required: None,
                    check: "witness",
                    detail: format!("{name} names group {group}, which the layout lacks"),
                });
            } else if !seen.insert(group) {
                violations.push(Violation {
                    found: None,
                    required: None,
                    check: "witness",
                    detail: format!("{name} names group {group} twice"),
                });
            }
        }
    }
}

/// The layout's states, resting and active states, spin-up path and cost vectors are the rack's:
/// the scheduler charges groups by them, so a shortened path would admit spin-ups the rack
/// cannot power.
fn check_state_machine(rack: &Rack, layout: &Layout, violations: &mut Vec<Violation>) {
    let name = |state: usize| rack.states[state].name.as_str();
    let path: Vec<&str> = rack.spin_up_path().into_iter().map(name).collect();
    let mismatch = layout
        .spin_up_path
        .iter()
        .map(String::as_str)
        .ne(path.iter().copied())
        || layout.resting_state != name(rack.resting_state())
        || layout.active_state != name(rack.active_state());
    if mismatch {
        violations.push(Violation {
            found: None,
            required: None,
            check: "states",
            detail: format!(
                "layout's spin-up path {:?} differs from the rack's {path:?}",
                layout.spin_up_path
            ),
        });
    }
    if let Some(constraint) = layout
        .group_constraints
        .iter()
        .find(|c| c.cost.len() != rack.states.len())
    {
        violations.push(Violation {
            found: None,
            required: None,
            check: "group constraints",
            detail: format!(
                "a `{}` constraint has {} costs for {} states",
                constraint.resource,
                constraint.cost.len(),
                rack.states.len()
            ),
        });
    }
}
