//! Property tests of the planner over random small racks, written as TOML text so every case goes
//! through the real parser (docs/rack-format.md): `spinwise_testkit::racks::any_rack`, whose
//! module doc describes the family of racks.
//!
//! Properties:
//! - (a) a plan that succeeds passes the independent verifier and is marked verified; a plan that
//!   fails is a typed refusal, never `Unverified`; enough cases plan that this is not vacuous;
//! - (b) on these racks (at most 24 groups: exact search) `max_active_groups` is the true maximum,
//!   found by a brute-force enumeration written here, from the rack's domains disk by disk and
//!   independent of the planner's `Admission`;
//! - (c) `analysis::low_load_bound` is at least that maximum, and is the bound the layout records;
//! - (d) planning is deterministic.
//!
//! The runner is seeded deterministically; a failure prints the (shrunk) rack's TOML.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use spinwise_model::{Amount, Layout, Rack, parse_rack};
use spinwise_plan::analysis::low_load_bound;
use spinwise_plan::explore::Terminal;
use spinwise_plan::plan::EXACT_SEARCH_MAX_GROUPS;
use spinwise_plan::{PlanError, explore, plan, verify};
use spinwise_testkit::racks::{GeneratedRack, any_rack};
use std::cell::Cell;
use std::collections::BTreeSet;

/// Whether the disks of the groups in `chosen` can all be at their costliest spin-up-path state at
/// once, every other disk resting, within every hard budget. Computed from the rack alone, disk by
/// disk, domain by domain.
struct BruteForce<'a> {
    rack: &'a Rack,
    /// Group of each disk (by disk index).
    group_of: Vec<usize>,
    groups: usize,
    /// Per resource: the costliest state on the spin-up path.
    worst_state: Vec<usize>,
}

impl<'a> BruteForce<'a> {
    fn new(rack: &'a Rack, layout: &Layout) -> BruteForce<'a> {
        let mut group_of = vec![usize::MAX; rack.disk_count()];
        for (group, ids) in layout.groups.iter().enumerate() {
            for id in ids {
                let disk = rack
                    .disks
                    .iter()
                    .position(|d| d.id == *id)
                    .expect("layout names rack disks");
                group_of[disk] = group;
            }
        }
        assert!(group_of.iter().all(|g| *g != usize::MAX));
        let path = rack.spin_up_path();
        let worst_state = rack
            .resources
            .iter()
            .map(|r| *path.iter().max_by_key(|&&s| r.cost[s]).expect("path"))
            .collect();
        BruteForce {
            rack,
            group_of,
            groups: layout.groups.len(),
            worst_state,
        }
    }

    fn feasible(&self, chosen: &[bool]) -> bool {
        let resting = self.rack.resting_state();
        self.rack.hard_resources().all(|(index, resource)| {
            resource.domains.iter().all(|disks| {
                let load = disks.iter().fold(Amount::ZERO, |sum, &disk| {
                    let state = if chosen[self.group_of[disk as usize]] {
                        self.worst_state[index]
                    } else {
                        resting
                    };
                    sum + resource.cost[state]
                });
                load <= resource.budget
            })
        })
    }

    /// The largest feasible set size, over every subset of groups, largest sizes first.
    /// Exponential: only for at most 16 groups.
    fn maximum_over_all_subsets(&self) -> usize {
        assert!(self.groups <= 16);
        let mut masks: Vec<u32> = (0..1u32 << self.groups).collect();
        masks.sort_by_key(|m| std::cmp::Reverse(m.count_ones()));
        let mut chosen = vec![false; self.groups];
        for mask in masks {
            for (group, slot) in chosen.iter_mut().enumerate() {
                *slot = mask & (1 << group) != 0;
            }
            if self.feasible(&chosen) {
                return mask.count_ones() as usize;
            }
        }
        unreachable!("the empty set is always feasible")
    }

    /// The largest feasible set, enumerating every feasible subset: feasibility is closed under
    /// removing groups (every hard cost is at least the resting cost), so a set that breaks a
    /// budget has no feasible superset and the walk need not extend it.
    fn maximum_over_feasible_subsets(&self) -> usize {
        fn walk(this: &BruteForce, next: usize, size: usize, chosen: &mut Vec<bool>) -> usize {
            let mut best = size;
            for group in next..this.groups {
                chosen[group] = true;
                if this.feasible(chosen) {
                    best = best.max(walk(this, group + 1, size + 1, chosen));
                }
                chosen[group] = false;
            }
            best
        }
        walk(self, 0, 0, &mut vec![false; self.groups])
    }
}

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

fn run(cases: u32, property: impl Fn(&GeneratedRack) -> Result<(), TestCaseError>) {
    let mut runner = runner(cases);
    if let Err(error) = runner.run(&any_rack(), |rack| property(&rack)) {
        panic!("{error}");
    }
}

#[test]
fn generated_racks_parse() {
    run(256, |generated| {
        parse_rack("generated.toml", &generated.toml)
            .map_err(|e| TestCaseError::fail(format!("refused: {e}")))?;
        Ok(())
    });
}

#[test]
fn every_successful_plan_passes_the_verifier_and_every_failure_is_a_typed_refusal() {
    let (planned, refused) = (Cell::new(0u32), Cell::new(0u32));
    run(128, |generated| {
        let rack = generated.parse();
        match plan(&rack) {
            Ok(plan) => {
                planned.set(planned.get() + 1);
                prop_assert!(plan.layout.verified, "layout not marked verified");
                let verdict = verify(&rack, &plan.layout);
                prop_assert!(verdict.is_ok(), "verifier rejects the plan: {:?}", verdict);
                prop_assert!(
                    plan.layout.max_active_groups >= rack.targets.io_concurrency_target,
                    "{} groups spin up together, below the IO concurrency target {}",
                    plan.layout.max_active_groups,
                    rack.targets.io_concurrency_target
                );
            }
            Err(PlanError::Unverified(violations)) => {
                return Err(TestCaseError::fail(format!(
                    "the planner built a layout its verifier rejects: {violations:?}"
                )));
            }
            Err(PlanError::NotPelicanGeometry { reason }) => {
                return Err(TestCaseError::fail(format!("Pelican-only error: {reason}")));
            }
            Err(_) => refused.set(refused.get() + 1),
        }
        Ok(())
    });
    // The last run is the 128 passing cases (shrinking only happens on failure).
    let (planned, refused) = (planned.get(), refused.get());
    eprintln!("{planned} racks planned, {refused} refused");
    assert!(
        planned * 2 >= planned + refused,
        "only {planned} of {} generated racks planned: the property is nearly vacuous",
        planned + refused
    );
}

#[test]
fn exact_search_finds_the_brute_force_maximum_of_concurrently_spinning_groups() {
    let (checked, all_subsets) = (Cell::new(0u32), Cell::new(0u32));
    run(128, |generated| {
        let rack = generated.parse();
        let Ok(plan) = plan(&rack) else {
            return Ok(());
        };
        let layout = &plan.layout;
        prop_assert!(layout.groups.len() <= EXACT_SEARCH_MAX_GROUPS);
        let brute = BruteForce::new(&rack, layout);
        let maximum = brute.maximum_over_feasible_subsets();
        if layout.groups.len() <= 16 {
            all_subsets.set(all_subsets.get() + 1);
            prop_assert_eq!(
                brute.maximum_over_all_subsets(),
                maximum,
                "the two enumerations disagree"
            );
        }
        checked.set(checked.get() + 1);
        prop_assert_eq!(
            layout.max_active_groups as usize,
            maximum,
            "planner claims {} concurrently spinning groups, brute force finds {}",
            layout.max_active_groups,
            maximum
        );
        // The witness itself is one of the maximum sets.
        let mut chosen = vec![false; layout.groups.len()];
        for &group in &layout.active_witness {
            chosen[group as usize] = true;
        }
        prop_assert!(
            brute.feasible(&chosen),
            "witness {:?} breaks a budget",
            layout.active_witness
        );
        Ok(())
    });
    assert!(checked.get() >= 40, "only {} racks checked", checked.get());
    assert!(
        all_subsets.get() >= 20,
        "only {} racks fully enumerated",
        all_subsets.get()
    );
}

#[test]
fn the_low_load_bound_is_at_least_the_brute_force_maximum() {
    run(128, |generated| {
        let rack = generated.parse();
        let Ok(plan) = plan(&rack) else {
            return Ok(());
        };
        let layout = &plan.layout;
        let maximum = BruteForce::new(&rack, layout).maximum_over_feasible_subsets();
        let bound = low_load_bound(&rack, u64::from(layout.group_size));
        prop_assert!(
            bound >= maximum as u64,
            "low-load bound {} is below the achievable {}",
            bound,
            maximum
        );
        prop_assert_eq!(u64::from(layout.max_active_groups_bound), bound);
        Ok(())
    });
}

#[test]
fn planning_a_generated_rack_twice_gives_identical_layouts() {
    run(64, |generated| {
        let rack = generated.parse();
        match (plan(&rack), plan(&rack)) {
            (Ok(first), Ok(second)) => {
                prop_assert_eq!(first.layout.to_json(), second.layout.to_json())
            }
            (Err(first), Err(second)) => prop_assert_eq!(first, second),
            (first, second) => {
                return Err(TestCaseError::fail(format!(
                    "one plan succeeded and the other did not: {:?} / {:?}",
                    first.err(),
                    second.err()
                )));
            }
        }
        Ok(())
    });
}

#[test]
fn exploring_a_generated_rack_never_lowers_m_and_its_configurations_plan_or_refuse() {
    let (explored, configurations_planned) = (Cell::new(0u32), Cell::new(0u32));
    run(64, |generated| {
        let rack = generated.parse();
        let exploration = explore(&rack, 2_000);
        let configurations = &exploration.configurations;
        let own: Vec<Amount> = rack.resources.iter().map(|r| r.budget).collect();
        prop_assert_eq!(&configurations[0].budgets, &own);
        let distinct: BTreeSet<&Vec<Amount>> = configurations.iter().map(|c| &c.budgets).collect();
        prop_assert_eq!(
            distinct.len(),
            configurations.len(),
            "a budget vector repeats"
        );
        let disks = rack.disk_count() as u64;
        for configuration in configurations {
            let m = configuration.analysis.max_disks_at_highest;
            if let Some(parent) = configuration.parent {
                let before = configurations[parent].analysis.max_disks_at_highest;
                prop_assert!(
                    before <= m,
                    "M fell from {} to {} at {}",
                    before,
                    m,
                    configuration.index
                );
            }
            for (resource, budget) in rack.resources.iter().zip(&configuration.budgets) {
                if let Some(bound) = resource.upper_bound {
                    prop_assert!(*budget <= bound, "{} above its upper bound", resource.name);
                }
            }
            match configuration.terminal {
                Some(Terminal::FullyProvisioned) => prop_assert_eq!(m, disks),
                _ => prop_assert!(
                    m < disks,
                    "M = N at {} but not terminal",
                    configuration.index
                ),
            }
        }
        if !exploration.truncated {
            explored.set(explored.get() + 1);
            prop_assert!(configurations.last().unwrap().terminal.is_some());
        }
        let stride = configurations.len().div_ceil(3);
        for configuration in configurations
            .iter()
            .skip(stride / 2)
            .step_by(stride.max(1))
        {
            let variant = configuration.rack(&rack);
            match plan(&variant) {
                Ok(plan) => {
                    configurations_planned.set(configurations_planned.get() + 1);
                    let verdict = verify(&variant, &plan.layout);
                    prop_assert!(
                        verdict.is_ok(),
                        "configuration {}: {:?}",
                        configuration.index,
                        verdict
                    );
                }
                Err(PlanError::Unverified(violations)) => {
                    return Err(TestCaseError::fail(format!(
                        "configuration {}: unverified layout: {violations:?}",
                        configuration.index
                    )));
                }
                Err(_) => {}
            }
        }
        Ok(())
    });
    assert!(
        explored.get() >= 32,
        "only {} explorations finished",
        explored.get()
    );
    assert!(
        configurations_planned.get() >= 32,
        "only {} configurations planned",
        configurations_planned.get()
    );
}

/// Found by `every_successful_plan_passes_the_verifier_and_every_failure_is_a_typed_refusal`
/// (shrunk), a regression case since: a hard resource whose states all cost the same never binds
/// (docs/rack-format.md, "What is not checked"), and the parser accepts a budget equal to its
/// resting load (headroom 0). The verifier used to demand a group constraint with positive
/// headroom for every hard domain, so the planner refused its own layout as `Unverified`.
const NEVER_BINDING_AT_ZERO_HEADROOM: &str = r#"
[rack]
name = "never-binding"

[[axes]]
name = "slot"
size = 4

[disks]
grid = true

[[states]]
name = "standby"
resting = true
[[states]]
name = "spinning_up"
transient = true
[[states]]
name = "active"
active = true

[[transitions]]
from = "standby"
to = "spinning_up"
[[transitions]]
from = "spinning_up"
to = "active"
[[transitions]]
from = "active"
to = "standby"

[[resources]]
name = "flat"
kind = "hard"
cost = { standby = 0, spinning_up = 0, active = 0 }
domains = { by = ["slot/4"] }
budget = 0

[disk]
capacity_tb = 1.0
bandwidth_mb_per_s = 100
seek_ms = 5
spin_up_latency_s = 10
mount_latency_s = 1
unmount_latency_s = 1
annual_failure_rate = 0.0001

[targets]
durability_nines = 1
service_interval_days = 30
deployment_lifetime_years = 1
file_bandwidth_floor_mb_per_s = 0
io_concurrency_target = 1
capacity_overhead_max = 0.9
spare_exhaustion_probability = 0.5

[targets.fairness]
reordering_bound_gb = 10
rebuild_share = 0.5
max_queue_depth = 10
"#;

#[test]
fn a_never_binding_hard_resource_with_headroom_plans_and_verifies() {
    // The same rack with one unit of headroom: no disk state costs anything, so every group can
    // spin up together.
    let text = NEVER_BINDING_AT_ZERO_HEADROOM.replace("budget = 0", "budget = 1");
    let rack = parse_rack("never-binding.toml", &text).unwrap();
    let plan = plan(&rack).unwrap_or_else(|e| panic!("{e}"));
    assert!(plan.layout.verified);
    assert_eq!(
        plan.layout.max_active_groups as usize,
        plan.layout.groups.len()
    );
}

#[test]
fn a_hard_resource_whose_states_all_cost_the_same_and_whose_budget_is_its_resting_load_plans() {
    let rack = parse_rack("never-binding.toml", NEVER_BINDING_AT_ZERO_HEADROOM)
        .expect("the parser accepts the rack (headroom 0 is allowed when no state costs more)");
    match plan(&rack) {
        Ok(plan) => {
            assert!(plan.layout.verified);
            verify(&rack, &plan.layout).unwrap();
            assert_eq!(
                plan.layout.max_active_groups as usize,
                plan.layout.groups.len()
            );
        }
        Err(error) => panic!("{error:?}"),
    }
}
