//! Group states under hard budgets: the books grant exactly the moves the rack allows, refuse the
//! others naming the resource, and — checked disk by disk from the rack, independently of the
//! group constraints — never let a hard domain exceed its budget, whatever the sequence of moves.

use crate::common;

use common::{disk_level_violations, planned, preset};
use proptest::prelude::*;
use spinwise_model::{Layout, ResourceKind};
use spinwise_sched::budget::GroupBudget;

fn state(layout: &Layout, name: &str) -> usize {
    layout.state_index(name).unwrap()
}

#[test]
fn pelican_admits_one_group_per_class_spinning_up_and_refuses_a_fifth_naming_the_resource() {
    let (_, layout) = preset("pelican");
    let mut books = GroupBudget::from_layout(&layout);
    let spinning_up = state(&layout, "spinning_up");
    for &group in &layout.active_witness {
        books.enter(group, spinning_up).unwrap();
    }
    assert_eq!(books.busy_groups().count(), 4);
    let refused = (0..layout.groups.len() as u32)
        .filter(|g| !layout.active_witness.contains(g))
        .map(|g| books.check(g, spinning_up))
        .find_map(Result::err)
        .expect("a fifth group collides");
    // A fifth group shares a cooling column with its class-mate, and a tray with two spinning
    // disks of other classes: either budget is a correct reason.
    assert!(
        ["cooling", "power"].contains(&refused.resource.as_str()),
        "{refused}"
    );
    assert!(refused.load_micros > refused.budget_micros);
}

#[test]
fn a_refused_move_changes_nothing_and_resting_again_frees_the_budget() {
    let (_, layout) = preset("pelican");
    let mut books = GroupBudget::from_layout(&layout);
    let spinning_up = state(&layout, "spinning_up");
    let before: Vec<_> = books.loads().map(|(_, load, _)| load).collect();
    let first = layout.active_witness[0];
    books.enter(first, spinning_up).unwrap();
    let rival = (0..layout.groups.len() as u32)
        .find(|g| books.check(*g, spinning_up).is_err())
        .unwrap();
    let loads_with_first: Vec<_> = books.loads().map(|(_, load, _)| load).collect();
    assert!(books.enter(rival, spinning_up).is_err());
    assert_eq!(
        books.loads().map(|(_, load, _)| load).collect::<Vec<_>>(),
        loads_with_first
    );
    assert_eq!(books.blockers(rival, spinning_up), vec![first]);
    books.enter(first, books.resting_state()).unwrap();
    assert_eq!(
        books.loads().map(|(_, load, _)| load).collect::<Vec<_>>(),
        before
    );
    books.enter(rival, spinning_up).unwrap();
}

#[test]
fn ocp_spins_up_two_groups_and_keeps_more_spinning_once_they_are_active() {
    // Multi-state accounting: a tray powers one spin-up, or one spin-up beside an active disk.
    let (_, layout) = preset("ocp-cold-storage");
    let mut books = GroupBudget::from_layout(&layout);
    let (spinning_up, active) = (state(&layout, "spinning_up"), state(&layout, "active"));
    let groups = layout.groups.len() as u32;
    let mut spinning = Vec::new();
    for group in 0..groups {
        if books.enter(group, spinning_up).is_ok() {
            spinning.push(group);
        }
    }
    assert_eq!(
        spinning.len() as u32,
        layout.max_active_groups,
        "spin-ups from rest"
    );
    for &group in &spinning {
        books.enter(group, active).unwrap();
    }
    let third = (0..groups).find(|g| !spinning.contains(g) && books.check(*g, spinning_up).is_ok());
    assert!(
        third.is_some(),
        "with both active, a third group can spin up"
    );
}

/// The groups blocking `group`'s move to `state`, from the layout alone: every member of a hard
/// constraint of `group` that the move would take over its budget, other than `group`, that is
/// not resting; ascending, each once.
fn blockers_by_definition(
    layout: &Layout,
    books: &GroupBudget,
    group: u32,
    state: usize,
) -> Vec<u32> {
    let hard = layout
        .group_constraints
        .iter()
        .filter(|c| c.kind == ResourceKind::Hard);
    let from = books.state(group);
    let mut blockers: Vec<u32> = hard
        .zip(books.loads())
        .filter_map(|(constraint, (_, load, budget))| {
            let weight = constraint
                .members
                .iter()
                .find(|(member, _)| *member == group)?
                .1;
            let change = i64::from(weight)
                * (constraint.cost[state].micros() - constraint.cost[from].micros());
            (load + change > budget).then_some(&constraint.members)
        })
        .flatten()
        .map(|(member, _)| *member)
        .filter(|&member| member != group && books.state(member) != books.resting_state())
        .collect();
    blockers.sort_unstable();
    blockers.dedup();
    blockers
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

    #[test]
    fn no_sequence_of_moves_exceeds_a_hard_budget_checked_disk_by_disk_and_fits_agrees_with_check(
        preset_choice in 0usize..3,
        moves in prop::collection::vec((any::<u32>(), any::<usize>()), 1..300),
    ) {
        let (rack, layout) = &planned()[preset_choice];
        let mut books = GroupBudget::from_layout(layout);
        let (groups, states) = (layout.groups.len() as u32, layout.states.len());
        let mut granted = 0;
        for (group, state) in moves {
            let (group, state) = (group % groups, state % states);
            let predicted = books.check(group, state).is_ok();
            prop_assert_eq!(books.fits(group, state), predicted);
            // Every refused group's blockers are those of the definition (kept books of busy
            // members must follow every move), and, filtered, what `blockers_where` keeps.
            if !predicted {
                prop_assert_eq!(books.blockers(group, state), blockers_by_definition(layout, &books, group, state));
                let mut odd = Vec::new();
                books.blockers_where(group, state, |b| b % 2 == 1, &mut odd);
                let expected: Vec<u32> = books.blockers(group, state).into_iter().filter(|b| b % 2 == 1).collect();
                prop_assert_eq!(odd, expected);
            }
            let outcome = books.enter(group, state);
            prop_assert_eq!(predicted, outcome.is_ok());
            granted += usize::from(outcome.is_ok());
            let violations = disk_level_violations(rack, layout, &books);
            prop_assert!(violations.is_empty(), "{:?}", violations);
        }
        prop_assert!(granted > 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

    /// The what-if agrees with really spinning the released groups down and trying the move.
    #[test]
    fn room_after_releasing_groups_matches_spinning_them_down(
        preset in 0usize..3,
        busy in prop::collection::vec((any::<u32>(), any::<bool>()), 0..12),
        release_mask in any::<u64>(),
        wanted in any::<u32>(),
    ) {
        let (_, layout) = &planned()[preset];
        let groups = layout.groups.len() as u32;
        let (spinning_up, active) = (state(layout, "spinning_up"), state(layout, "active"));
        let mut books = GroupBudget::from_layout(layout);
        for (group, is_active) in busy {
            let _ = books.enter(group % groups, if is_active { active } else { spinning_up });
        }
        let wanted = wanted % groups;
        let released: Vec<u32> = books
            .busy_groups()
            .enumerate()
            .filter(|(i, g)| release_mask & (1 << (i % 64)) != 0 && *g != wanted)
            .map(|(_, g)| g)
            .collect();
        let mut room = books.room(wanted, spinning_up);
        for &group in &released {
            books.release(&mut room, group);
        }
        let mut after = books.clone();
        for &group in &released {
            after.enter(group, after.resting_state()).unwrap();
        }
        prop_assert_eq!(room.fits(), after.check(wanted, spinning_up).is_ok());
    }
}

#[test]
fn per_disk_books_grant_one_spinning_disk_per_pelican_cooling_domain() {
    let (rack, _) = preset("pelican");
    let mut books = GroupBudget::per_disk(&rack);
    assert_eq!(books.groups(), rack.disk_count());
    let spinning_up = rack
        .states
        .iter()
        .position(|s| s.name == "spinning_up")
        .unwrap();
    let path = rack.spin_up_path();
    assert_eq!(books.spin_up_charge(&path), Some(spinning_up));
    let cooling = rack.resources.iter().find(|r| r.name == "cooling").unwrap();
    let domain = &cooling.domains[0];
    books.enter(domain[0], spinning_up).unwrap();
    let refused = books.check(domain[1], spinning_up).unwrap_err();
    assert_eq!(refused.resource, "cooling");
    assert_eq!(books.blockers(domain[1], spinning_up), vec![domain[0]]);
}
