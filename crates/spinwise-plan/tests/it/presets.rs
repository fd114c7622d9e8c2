//! Every preset in presets/ (found by listing the directory) plans to a verified layout that keeps
//! its promises: the bounds it claims, the rack's targets, Flamingo's group-size rule; planning is
//! deterministic; design-space exploration of every preset is complete, monotone and terminates,
//! and a deterministic sample of its configurations plans to verified layouts or typed errors.
//!
//! Must-shows from the papers: the OCP Cold Storage half rack is power-bound with two groups
//! spinning up together and three spinning (two active, one spinning up) (Flamingo §5); the
//! synthesized Pelican layout reaches quality 1.0 on both metrics over 250,000 orderings
//! (Flamingo §5's test of a good layout).

use crate::common;

use common::all_presets;
use spinwise_model::{Amount, Layout, Rack};
use spinwise_plan::admission::{Admission, Mode};
use spinwise_plan::explore::{Terminal, relaxation_step};
use spinwise_plan::{Plan, PlanError, explore, plan, quality, verify};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Each preset planned once, shared by the tests of this file (the large racks take seconds).
fn planned_presets() -> &'static [(String, Rack, Plan)] {
    static PLANS: OnceLock<Vec<(String, Rack, Plan)>> = OnceLock::new();
    PLANS.get_or_init(|| {
        all_presets()
            .into_iter()
            .map(|(name, rack)| {
                let plan =
                    plan(&rack).unwrap_or_else(|e| panic!("preset {name}: plan failed: {e}"));
                (name, rack, plan)
            })
            .collect()
    })
}

fn planned(name: &str) -> &'static (String, Rack, Plan) {
    planned_presets()
        .iter()
        .find(|(n, _, _)| n == name)
        .unwrap_or_else(|| panic!("no preset {name} in presets/"))
}

/// The promises every planned layout keeps, checked against the rack it came from.
fn assert_layout_keeps_its_promises(what: &str, rack: &Rack, layout: &Layout) {
    assert!(layout.verified, "{what}: layout not marked verified");
    if let Err(violations) = verify(rack, layout) {
        panic!("{what}: verifier rejects the planned layout: {violations:#?}");
    }
    let disks = rack.disk_count() as u64;
    let n = u64::from(layout.group_size);
    assert_eq!(u64::from(layout.disks), disks, "{what}: disk count");
    assert!(n > 0, "{what}: empty groups");
    assert_eq!(disks % n, 0, "{what}: n = {n} does not divide N = {disks}");
    assert_eq!(
        layout.max_disks_at_highest % n,
        0,
        "{what}: n = {n} does not divide M = {}",
        layout.max_disks_at_highest
    );
    assert_eq!(layout.groups.len() as u64 * n, disks, "{what}: group count");
    assert!(
        layout.max_active_groups <= layout.max_active_groups_bound,
        "{what}: claims {} active groups above its bound {}",
        layout.max_active_groups,
        layout.max_active_groups_bound
    );
    assert!(
        layout.max_active_groups >= rack.targets.io_concurrency_target,
        "{what}: {} concurrently spinning groups, below the target {}",
        layout.max_active_groups,
        rack.targets.io_concurrency_target
    );
    assert_eq!(
        layout.active_witness.len(),
        layout.max_active_groups as usize,
        "{what}: witness size"
    );
    let erasure = layout.erasure;
    assert!(erasure.k >= 1 && erasure.r >= 1, "{what}: {erasure:?}");
    assert!(
        erasure.k + erasure.r + erasure.f <= layout.group_size,
        "{what}: k + r + f = {} exceeds n = {}",
        erasure.k + erasure.r + erasure.f,
        layout.group_size
    );
    assert!(
        erasure.capacity_overhead() <= rack.targets.capacity_overhead_max,
        "{what}: overhead {} above {}",
        erasure.capacity_overhead(),
        rack.targets.capacity_overhead_max
    );
    assert!(
        f64::from(erasure.k) * rack.disk_model.bandwidth_mb_per_s
            >= rack.targets.file_bandwidth_floor_mb_per_s,
        "{what}: k = {} × {} MB/s is below the floor of {} MB/s",
        erasure.k,
        rack.disk_model.bandwidth_mb_per_s,
        rack.targets.file_bandwidth_floor_mb_per_s
    );
}

#[test]
fn every_preset_plans_to_a_verified_layout_that_meets_its_bounds_and_targets() {
    for (name, rack, plan) in planned_presets() {
        assert_layout_keeps_its_promises(&format!("preset {name}"), rack, &plan.layout);
        assert_eq!(
            plan.layout.max_disks_at_highest, plan.analysis.max_disks_at_highest,
            "preset {name}: layout and analysis disagree on M"
        );
        assert_eq!(
            plan.layout.bottleneck, plan.analysis.bottleneck,
            "preset {name}"
        );
    }
}

#[test]
fn planning_every_preset_twice_gives_byte_identical_layouts() {
    for (name, rack, first) in planned_presets() {
        let second = plan(rack).unwrap_or_else(|e| panic!("preset {name}: second plan: {e}"));
        assert!(
            first.layout.to_json() == second.layout.to_json(),
            "preset {name}: two plans of one rack differ"
        );
    }
}

#[test]
fn ocp_cold_storage_is_power_bound_with_30_groups_of_8_and_two_spinning_up_together() {
    let (_, rack, plan) = planned("ocp-cold-storage");
    let layout = &plan.layout;
    assert_eq!(layout.bottleneck, vec!["power".to_string()]);
    assert_eq!(layout.max_disks_at_highest, 16);
    assert_eq!(layout.group_size, 8);
    assert_eq!(layout.groups.len(), 30);
    // Flamingo §5: "sufficient provisioning to allow two groups to spin up concurrently".
    assert_eq!(layout.max_active_groups, 2);
    assert_eq!(layout.max_active_groups_bound, 2);
    assert_eq!(rack.targets.io_concurrency_target, 2);
}

#[test]
fn ocp_cold_storage_keeps_three_groups_spinning_two_active_and_one_spinning_up() {
    // Flamingo §5: the fine-grained scheduler "is able to keep up to three groups concurrently
    // spinning as opposed to two for the conservative scheduler". An active disk draws 8 W against
    // a spin-up's 20 W, so once two groups are active the trays still have room for a third group
    // to spin up. Search the layout's group constraints for such a sequence: a spins up and becomes
    // active, b spins up beside it and becomes active, then c spins up beside both.
    let (_, rack, plan) = planned("ocp-cold-storage");
    let layout = &plan.layout;
    let path = rack.spin_up_path();
    let groups = layout.groups.len() as u32;
    let mut admission = Admission::new(
        &layout.group_constraints,
        layout.groups.len(),
        &path,
        rack.resting_state(),
        rack.active_state(),
    );
    let mut found = None;
    'search: for a in 0..groups {
        for b in (0..groups).filter(|&b| b != a) {
            admission.clear();
            assert!(
                admission.fits(a, Mode::Spinning),
                "group {a} cannot spin up alone"
            );
            admission.add(a, Mode::Active);
            if !admission.fits(b, Mode::Spinning) {
                continue;
            }
            admission.add(b, Mode::Active);
            if let Some(c) =
                (0..groups).find(|&c| c != a && c != b && admission.fits(c, Mode::Spinning))
            {
                found = Some((a, b, c));
                break 'search;
            }
        }
    }
    admission.clear();
    let (a, b, c) = found.expect("no two active groups leave room for a third to spin up");
    // The planner's own high-load witness claims at least as many.
    assert!(
        layout.max_spinning_groups >= 3,
        "layout claims only {} groups spinning",
        layout.max_spinning_groups
    );
    // Cross-check with the rack itself, disk by disk: a and b active, c at its spin-up peak.
    assert_budgets_hold(rack, layout, &[a, b], &[c]);
}

/// Every hard domain's budget holds with the disks of `active` groups active, those of `spinning`
/// groups at their costliest spin-up-path state, and every other disk resting.
fn assert_budgets_hold(rack: &Rack, layout: &Layout, active: &[u32], spinning: &[u32]) {
    #[derive(Clone, Copy)]
    enum DiskState {
        Resting,
        Active,
        SpinningUp,
    }
    let path = rack.spin_up_path();
    let mut state = vec![DiskState::Resting; rack.disk_count()];
    let index_of = |id: u32| rack.disks.binary_search_by_key(&id, |d| d.id).unwrap();
    for (groups, disk_state) in [
        (active, DiskState::Active),
        (spinning, DiskState::SpinningUp),
    ] {
        for &group in groups {
            for &id in &layout.groups[group as usize] {
                state[index_of(id)] = disk_state;
            }
        }
    }
    for (_, resource) in rack.hard_resources() {
        let cost = |disk: u32| match state[disk as usize] {
            DiskState::Resting => resource.cost[rack.resting_state()],
            DiskState::Active => resource.cost[rack.active_state()],
            DiskState::SpinningUp => path.iter().map(|&s| resource.cost[s]).max().unwrap(),
        };
        for (domain, disks) in resource.domains.iter().enumerate() {
            let load = disks
                .iter()
                .fold(Amount::ZERO, |sum, &disk| sum + cost(disk));
            assert!(
                load <= resource.budget,
                "{} domain {domain}: {load} > budget {}",
                resource.name,
                resource.budget
            );
        }
    }
}

#[test]
fn pelican_synthesized_layout_reaches_full_quality_over_250000_orderings() {
    let (_, _, plan) = planned("pelican");
    let quality = quality(&plan.layout, 250_000, 0x9e11_ca17);
    assert_eq!(quality.trials, 250_000);
    assert_eq!(quality.low_load, 1.0, "{quality:?}");
    assert_eq!(quality.high_load, 1.0, "{quality:?}");
    assert_eq!(quality.low_load_min, 1.0, "{quality:?}");
    assert_eq!(quality.high_load_min, 1.0, "{quality:?}");
    assert_eq!(quality.low_load_bound, 4);
}

#[test]
fn exploring_every_preset_is_complete_monotone_and_ends_in_terminal_configurations() {
    for (name, rack) in all_presets() {
        let exploration = explore(&rack, 50_000);
        let configurations = &exploration.configurations;
        assert!(!exploration.truncated, "{name}: exploration truncated");
        assert!(!configurations.is_empty(), "{name}: no configuration");
        let own: Vec<Amount> = rack.resources.iter().map(|r| r.budget).collect();
        assert_eq!(
            configurations[0].budgets, own,
            "{name}: first configuration"
        );
        assert_eq!(configurations[0].parent, None, "{name}");
        let distinct: BTreeSet<&Vec<Amount>> = configurations.iter().map(|c| &c.budgets).collect();
        assert_eq!(
            distinct.len(),
            configurations.len(),
            "{name}: repeated budgets"
        );
        let disks = rack.disk_count() as u64;
        let mut has_child = vec![false; configurations.len()];
        for (index, configuration) in configurations.iter().enumerate() {
            let what = format!("{name} configuration {index}");
            assert_eq!(configuration.index, index, "{what}");
            let m = configuration.analysis.max_disks_at_highest;
            for (resource, budget) in rack.resources.iter().zip(&configuration.budgets) {
                assert!(
                    budget >= &resource.budget,
                    "{what}: {} lowered",
                    resource.name
                );
                if let Some(bound) = resource.upper_bound {
                    assert!(
                        budget <= &bound,
                        "{what}: {} above its upper bound",
                        resource.name
                    );
                }
            }
            if let Some(parent) = configuration.parent {
                assert!(parent < index, "{what}: parent {parent} comes later");
                has_child[parent] = true;
                let before = &configurations[parent];
                assert!(
                    before.analysis.max_disks_at_highest <= m,
                    "{what}: M fell from {} to {m}",
                    before.analysis.max_disks_at_highest
                );
                let relaxed = configuration
                    .relaxed
                    .as_deref()
                    .expect("a child names its relaxation");
                assert!(
                    before.analysis.bottleneck.iter().any(|b| b == relaxed),
                    "{what}"
                );
                let changed: Vec<usize> = (0..rack.resources.len())
                    .filter(|&r| before.budgets[r] != configuration.budgets[r])
                    .collect();
                let relaxed_index = rack.resource_index(relaxed).unwrap();
                assert_eq!(changed, vec![relaxed_index], "{what}: budgets changed");
                assert!(configuration.budgets[relaxed_index] > before.budgets[relaxed_index]);
            }
            match configuration.terminal {
                Some(Terminal::FullyProvisioned) => assert_eq!(m, disks, "{what}"),
                Some(Terminal::UpperBound) => {
                    assert!(m < disks, "{what}");
                    // Every bottleneck resource is at its bound: one more step would exceed it.
                    let current = configuration.rack(&rack);
                    for bottleneck in &configuration.analysis.bottleneck {
                        let resource =
                            &current.resources[current.resource_index(bottleneck).unwrap()];
                        let bound = resource
                            .upper_bound
                            .expect("upper-bound terminal has a bound");
                        assert!(
                            relaxation_step(resource)
                                .is_none_or(|step| resource.budget + step > bound),
                            "{what}: {bottleneck} could still be relaxed"
                        );
                    }
                }
                None => assert!(m < disks, "{what}: fully provisioned but not terminal"),
            }
        }
        let last = configurations.last().unwrap();
        assert!(
            last.terminal.is_some(),
            "{name}: the last configuration is not terminal"
        );
        for (index, configuration) in configurations.iter().enumerate() {
            if configuration.terminal.is_some() {
                assert!(
                    !has_child[index],
                    "{name} configuration {index}: terminal with children"
                );
            }
        }
        // Leaves of the walk: a configuration without children is terminal, unless every
        // relaxation of it was already reached from another parent (ties branch and rejoin).
        for (index, configuration) in configurations.iter().enumerate() {
            if has_child[index] || configuration.terminal.is_some() {
                continue;
            }
            let current = configuration.rack(&rack);
            for bottleneck in &configuration.analysis.bottleneck {
                let r = current.resource_index(bottleneck).unwrap();
                let step = relaxation_step(&current.resources[r]).unwrap();
                let mut next = configuration.budgets.clone();
                next[r] += step;
                assert!(
                    distinct.contains(&next),
                    "{name} configuration {index}: a leaf whose relaxation of {bottleneck} is missing"
                );
            }
        }
    }
}

/// Most configurations planned per preset; fewer for racks over 2,000 disks, whose plans take
/// seconds each.
fn sample_size(rack: &Rack) -> usize {
    if rack.disk_count() > 2_000 { 2 } else { 8 }
}

#[test]
fn sampled_exploration_configurations_plan_to_verified_layouts_or_typed_errors() {
    let mut planned = 0;
    let mut refused = 0;
    for (name, rack) in all_presets() {
        let exploration = explore(&rack, 50_000);
        let configurations = &exploration.configurations;
        let stride = configurations.len().div_ceil(sample_size(&rack));
        // Offset by half a stride: configuration 0 (the preset itself) is planned by the tests
        // above, so the sample covers relaxed configurations only.
        for configuration in configurations.iter().skip(stride / 2).step_by(stride) {
            let what = format!(
                "{name} configuration {} (budgets {})",
                configuration.index,
                configuration
                    .budgets
                    .iter()
                    .map(Amount::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let variant = configuration.rack(&rack);
            let outcome = std::panic::catch_unwind(|| plan(&variant))
                .unwrap_or_else(|_| panic!("{what}: the planner panicked"));
            match outcome {
                Ok(plan) => {
                    planned += 1;
                    assert_layout_keeps_its_promises(&what, &variant, &plan.layout);
                    assert_eq!(
                        plan.layout.max_disks_at_highest,
                        configuration.analysis.max_disks_at_highest,
                        "{what}: M"
                    );
                }
                Err(PlanError::Unverified(violations)) => {
                    panic!(
                        "{what}: the planner produced a layout its verifier rejects: {violations:#?}"
                    )
                }
                Err(
                    PlanError::NoErasureCode { .. }
                    | PlanError::NoGroupSize { .. }
                    | PlanError::ConcurrencyBelowTarget { .. }
                    | PlanError::NoLayout { .. },
                ) => refused += 1,
                Err(other @ PlanError::NotPelicanGeometry { .. }) => {
                    panic!("{what}: unexpected error {other}")
                }
            }
        }
    }
    assert!(
        planned >= 7,
        "only {planned} sampled configurations planned ({refused} refused)"
    );
}
