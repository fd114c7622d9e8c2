//! Flamingo's scheduler driven by a small deterministic event loop with fixed latencies (10 s spin
//! up, 1 s spin down, 1 GB/s per request), budgets checked disk by disk from the rack after every
//! action: it never exceeds a hard budget, spins idle groups down to make room, keeps more groups
//! spinning than Pelican's one per class when the budgets allow, and lets no request starve.

mod common;

use common::{
    SPIN_DOWN_US, SPIN_UP_US, disk_level_violations, drive_policy, planned, read, same_class_pair,
};
use proptest::prelude::*;
use spinwise_model::{Layout, Rack, ResourceKind};
use spinwise_sched::flamingo::{DEFAULT_STARVATION_BOUND_US, Flamingo};
use spinwise_sched::policy::Policy;
use spinwise_sched::scheduler::{Action, ClassScheduler, Kind, Rejected, Request};

fn checked(rack: &Rack, layout: &Layout) -> impl FnMut(&Flamingo) {
    move |flamingo: &Flamingo| {
        let violations = disk_level_violations(rack, layout, flamingo.budget());
        assert!(violations.is_empty(), "{violations:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

    #[test]
    fn flamingo_never_exceeds_a_hard_budget_and_serves_everything_it_accepts(
        preset in 0usize..3,
        arrivals in prop::collection::vec((0u64..600_000_000, any::<u32>(), any::<bool>(), 1u64..3_000_000_000), 1..150),
        bound_s in 1u64..300,
    ) {
        let (rack, layout) = &planned()[preset];
        let groups = layout.groups.len() as u32;
        let arrivals: Vec<(u64, Request)> = arrivals
            .iter()
            .enumerate()
            .map(|(id, (at, group, rebuild, bytes))| {
                let kind = if *rebuild { Kind::Rebuild } else { Kind::Client };
                (*at, Request { id: id as u64, group: group % groups, bytes: *bytes, kind })
            })
            .collect();
        let mut flamingo = Flamingo::new(layout).unwrap().with_starvation_bound_us(bound_s * 1_000_000);
        let trace = drive_policy(&mut flamingo, &arrivals, checked(rack, layout));
        prop_assert_eq!(trace.served.len() + trace.rejected, arrivals.len());
    }
}

#[test]
fn idle_groups_are_spun_down_to_make_room_for_a_waiting_one() {
    let (rack, layout) = &planned()[1];
    let (a, b) = same_class_pair(layout);
    let mut flamingo = Flamingo::new(layout).unwrap();
    assert!(
        flamingo.budget().clone().enter(a, 1).is_ok(),
        "a alone can spin up"
    );
    let trace = drive_policy(
        &mut flamingo,
        &[(0, read(0, b)), (30_000_000, read(1, a))],
        checked(rack, layout),
    );
    let actions: Vec<Action> = trace.actions.iter().map(|(_, action)| *action).collect();
    let down = actions.iter().position(|x| *x == Action::SpinDown(b));
    let up = actions.iter().position(|x| *x == Action::SpinUp(a));
    assert!(
        matches!((down, up), (Some(down), Some(up)) if down < up),
        "{actions:?}"
    );
    // b: spin-up + read; a: waits for b's spin-down only, then spin-up + read.
    let (served_us, _) = trace.served.iter().find(|(_, r)| r.id == 1).unwrap();
    assert_eq!(
        *served_us,
        30_000_000 + SPIN_DOWN_US + SPIN_UP_US + 1_000_000
    );
}

#[test]
fn more_groups_than_one_per_class_spin_together_when_budgets_allow() {
    // Pelican's rack and layout with every hard budget doubled: each class's groups no longer
    // exclude each other, but the layout keeps its four classes.
    let (rack, layout) = &planned()[1];
    let mut rack = rack.clone();
    for resource in rack
        .resources
        .iter_mut()
        .filter(|r| r.kind == ResourceKind::Hard)
    {
        resource.budget = resource.budget.times(2);
    }
    let mut layout = layout.clone();
    for constraint in layout
        .group_constraints
        .iter_mut()
        .filter(|c| c.kind == ResourceKind::Hard)
    {
        constraint.budget = constraint.budget.times(2);
    }
    let classes = 1 + *layout.classes.as_ref().unwrap().iter().max().unwrap() as usize;
    let arrivals: Vec<(u64, Request)> = (0..layout.groups.len() as u32)
        .map(|g| (0, read(u64::from(g), g)))
        .collect();
    let mut flamingo = Flamingo::new(&layout).unwrap();
    let trace = drive_policy(&mut flamingo, &arrivals, checked(&rack, &layout));
    assert_eq!(trace.served.len(), arrivals.len());
    assert!(
        trace.max_busy > classes,
        "Flamingo kept {} groups spinning, no more than the {classes} classes",
        trace.max_busy
    );
    // Pelican's class scheduler on the same books: one group per class.
    let mut pelican = ClassScheduler::new(&layout).unwrap();
    let trace = drive_policy(&mut pelican, &arrivals, |_| {});
    assert_eq!(trace.max_busy, classes);
}

/// Group `b` gets a request every 0.5 s for 2,000 s (it never runs dry at 1 s per request); group
/// `a`, colliding with it, one request at 1 s. Returns when `a`'s request was served.
fn starving_group_served_at_us(bound_us: u64) -> u64 {
    let (rack, layout) = &planned()[1];
    let (a, b) = same_class_pair(layout);
    let mut arrivals: Vec<(u64, Request)> = (0..4_000u64)
        .map(|i| (i * 500_000, read(i + 1, b)))
        .collect();
    arrivals.push((1_000_000, read(0, a)));
    arrivals.sort_by_key(|(at, r)| (*at, r.id));
    let mut flamingo = Flamingo::new(layout)
        .unwrap()
        .with_starvation_bound_us(bound_us);
    let trace = drive_policy(&mut flamingo, &arrivals, checked(rack, layout));
    assert_eq!(trace.served.len() + trace.rejected, arrivals.len());
    trace
        .served
        .iter()
        .find(|(_, r)| r.id == 0)
        .map(|(at, _)| *at)
        .expect("a's request is served")
}

#[test]
fn a_group_whose_head_waited_past_the_bound_preempts_a_busy_group() {
    let bound_us = 100_000_000;
    // Starving at 101 s; b finishes the request in hand (≤ 1 s), spins down, a spins up, reads.
    let served_us = starving_group_served_at_us(bound_us);
    assert!(
        (1_000_000 + bound_us
            ..1_000_000 + bound_us + 1_000_000 + SPIN_DOWN_US + SPIN_UP_US + 1_000_000 + 1)
            .contains(&served_us),
        "served at {served_us} µs"
    );
    // Without the bound (larger than the run), a waits until b's stream ends at 2,000 s.
    let unbounded_us = starving_group_served_at_us(u64::MAX / 4);
    assert!(unbounded_us > 2_000_000_000, "served at {unbounded_us} µs");
}

#[test]
fn the_policy_asks_to_be_woken_when_a_waiting_head_reaches_the_bound() {
    let (_, layout) = &planned()[1];
    let (a, b) = same_class_pair(layout);
    let mut flamingo = Flamingo::new(layout).unwrap();
    assert_eq!(flamingo.next_timeout_us(), None);
    flamingo.submit(0, read(0, b)).unwrap();
    assert_eq!(flamingo.poll_action(0), Some(Action::SpinUp(b)));
    flamingo.submit(5, read(1, a)).unwrap();
    assert_eq!(flamingo.poll_action(5), None, "a collides with b");
    // b is spinning up; a's head arrived at 5 µs (b's request is no longer waiting for a spin-up).
    assert_eq!(
        flamingo.next_timeout_us(),
        Some(5 + DEFAULT_STARVATION_BOUND_US)
    );
}

#[test]
fn the_rack_wide_queue_is_bounded_by_max_queue_depth_per_class() {
    let (_, layout) = &planned()[1];
    let mut small = layout.clone();
    small.scheduler.max_queue_depth = 2;
    let classes = 1 + *small.classes.as_ref().unwrap().iter().max().unwrap() as u64;
    let mut flamingo = Flamingo::new(&small).unwrap();
    for id in 0..2 * classes {
        flamingo.submit(0, read(id, (id % 7) as u32)).unwrap();
    }
    assert!(matches!(
        flamingo.submit(0, read(99, 3)),
        Err(Rejected::QueueFull { depth, .. }) if u64::from(depth) == 2 * classes
    ));
    assert!(matches!(
        flamingo.submit(0, read(100, 9_999)),
        Err(Rejected::UnknownGroup { .. })
    ));
}

#[test]
fn rebuild_requests_of_a_group_are_served_before_its_client_requests() {
    let (rack, layout) = &planned()[1];
    let mut rebuild = read(1, 0);
    rebuild.kind = Kind::Rebuild;
    let mut flamingo = Flamingo::new(layout).unwrap();
    let trace = drive_policy(
        &mut flamingo,
        &[(0, read(0, 0)), (0, rebuild)],
        checked(rack, layout),
    );
    let order: Vec<u64> = trace.served.iter().map(|(_, r)| r.id).collect();
    assert_eq!(order, vec![1, 0]);
}
