//! The random layout's disk-level scheduler driven by the fixed-latency event loop: it serves in
//! arrival order (expedited reads ahead of the standard ones, in arrival order among
//! themselves), never exceeds a hard budget (checked from the rack's domains and each disk's
//! state in the books after every action), spins idle disks down to make room, and refuses bad
//! placement sets with typed errors.

use crate::common;

use common::{
    drive_policy, expedited, planned, poll_all, read, same_class_pair, served_ids, settle,
};
use proptest::prelude::*;
use spinwise_model::{Amount, DiskIndex, Layout, Rack, ResourceKind};
use spinwise_sched::policy::Policy;
use spinwise_sched::random::{PlacementError, RandomPlacement};
use spinwise_sched::scheduler::{Action, Rejected, Request};

/// Placement sets made of the first 18 disks (Pelican's k + r) of each planned group: a group's
/// disks are domain-disjoint, so each set can spin at once.
fn group_sets(rack: &Rack, layout: &Layout) -> Vec<Vec<DiskIndex>> {
    layout
        .groups
        .iter()
        .map(|ids| {
            ids.iter()
                .take(18)
                .map(|id| rack.disks.binary_search_by_key(id, |d| d.id).unwrap() as DiskIndex)
                .collect()
        })
        .collect()
}

/// Every hard domain whose draw exceeds its budget, disk by disk from the books.
fn check_disks(rack: &Rack) -> impl FnMut(&RandomPlacement) + '_ {
    move |policy: &RandomPlacement| {
        let books = policy.budget();
        for resource in rack
            .resources
            .iter()
            .filter(|r| r.kind == ResourceKind::Hard)
        {
            for domain in &resource.domains {
                let draw = domain.iter().fold(Amount::ZERO, |sum, disk| {
                    sum + resource.cost[books.state(*disk)]
                });
                assert!(draw <= resource.budget, "{}: {draw}", resource.name);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

    #[test]
    fn random_placement_serves_in_arrival_order_within_every_hard_budget(
        arrivals in prop::collection::vec((0u64..300_000_000, any::<u32>()), 1..80),
    ) {
        let (rack, layout) = &planned()[1];
        let sets = group_sets(rack, layout);
        let mut arrivals: Vec<(u64, Request)> = arrivals
            .iter()
            .enumerate()
            .map(|(id, (at, set))| (*at, read(id as u64, set % sets.len() as u32)))
            .collect();
        arrivals.sort_by_key(|(at, r)| (*at, r.id));
        let mut policy = RandomPlacement::new(rack, sets, 1_000).unwrap();
        let trace = drive_policy(&mut policy, &arrivals, check_disks(rack));
        prop_assert_eq!(trace.served.len(), arrivals.len());
        // Strict FIFO: requests start in arrival order.
        let started: Vec<u64> = trace
            .actions
            .iter()
            .filter_map(|(_, a)| match a { Action::Serve(r) => Some(r.id), _ => None })
            .collect();
        let arrived: Vec<u64> = arrivals.iter().map(|(_, r)| r.id).collect();
        prop_assert_eq!(started, arrived);
    }
}

#[test]
fn idle_disks_are_spun_down_to_make_room_for_the_head() {
    let (rack, layout) = &planned()[1];
    let (a, b) = same_class_pair(layout);
    let sets = group_sets(rack, layout);
    let mut policy = RandomPlacement::new(rack, sets.clone(), 10).unwrap();
    let trace = drive_policy(
        &mut policy,
        &[(0, read(0, b)), (30_000_000, read(1, a))],
        check_disks(rack),
    );
    assert_eq!(trace.served.len(), 2);
    let spun_down: Vec<u32> = trace
        .actions
        .iter()
        .filter_map(|(_, a)| match a {
            Action::SpinDown(disk) => Some(*disk),
            _ => None,
        })
        .collect();
    assert!(!spun_down.is_empty(), "set a collides with set b");
    assert!(
        spun_down.iter().all(|d| sets[b as usize].contains(d)),
        "only b's idle disks make room"
    );
    // At most the disks of both sets were ever spinning, never all of both at once.
    assert!(trace.max_busy < 2 * 18);
}

#[test]
fn bad_placement_sets_are_refused_with_typed_errors() {
    let (rack, _) = &planned()[1];
    let disks = rack.disk_count() as DiskIndex;
    let refused = |sets: Vec<Vec<DiskIndex>>| RandomPlacement::new(rack, sets, 10).unwrap_err();
    assert_eq!(refused(vec![]), PlacementError::NoSets);
    assert_eq!(refused(vec![vec![]]), PlacementError::EmptySet { set: 0 });
    assert!(matches!(
        refused(vec![vec![0], vec![disks]]),
        PlacementError::UnknownDisk { set: 1, .. }
    ));
    assert_eq!(
        refused(vec![vec![3, 3]]),
        PlacementError::RepeatedDisk { set: 0, disk: 3 }
    );
    // A whole cooling domain (one disk may spin in it) cannot spin at once.
    let cooling = rack
        .resources
        .iter()
        .find(|r| r.kind == ResourceKind::Hard && r.disks_at_highest_per_domain() == Some(1))
        .expect("Pelican has a resource allowing one spinning disk per domain");
    assert!(matches!(
        refused(vec![cooling.domains[0].clone()]),
        PlacementError::Infeasible { set: 0, .. }
    ));
}

#[test]
fn the_one_fifo_is_bounded_and_unknown_sets_are_refused() {
    let (rack, layout) = &planned()[1];
    let mut policy = RandomPlacement::new(rack, group_sets(rack, layout), 2).unwrap();
    policy.submit(0, read(0, 0)).unwrap();
    policy.submit(0, read(1, 5)).unwrap();
    assert_eq!(
        policy.submit(0, read(2, 7)),
        Err(Rejected::QueueFull { class: 0, depth: 2 })
    );
    assert!(matches!(
        policy.submit(0, read(3, 10_000)),
        Err(Rejected::UnknownGroup { .. })
    ));
}

#[test]
fn expedited_reads_go_ahead_of_every_standard_read_in_arrival_order() {
    // Read 0 is the head and its disks are spinning up when expedited reads 2 and 3 arrive:
    // they become the head in turn, and the standard reads follow in arrival order.
    let (rack, layout) = &planned()[1];
    let sets = group_sets(rack, layout);
    let mut policy = RandomPlacement::new(rack, sets.clone(), 100).unwrap();
    policy.submit(0, read(0, 0)).unwrap();
    policy.submit(0, read(1, 1)).unwrap();
    let spin_ups = poll_all(&mut policy, 0);
    assert_eq!(
        spin_ups.len(),
        sets[0].len(),
        "the head's disks: {spin_ups:?}"
    );
    policy.submit(1, expedited(2, 2)).unwrap();
    policy.submit(1, expedited(3, 3)).unwrap();
    policy.submit(1, read(4, 4)).unwrap();
    let actions = settle(&mut policy, 1, &spin_ups);
    assert_eq!(served_ids(&actions), [2, 3, 0, 1, 4], "{actions:?}");
}
