//! Flamingo's scheduler driven by a small deterministic event loop with fixed latencies (10 s spin
//! up, 1 s spin down, 1 GB/s per request), budgets checked disk by disk from the rack after every
//! action: it never exceeds a hard budget, spins idle groups down to make room, keeps more groups
//! spinning than Pelican's one per class when the budgets allow, and lets no request starve.
//!
//! Expedited reads, stepped by hand: a resting group holding one is starving at once (no
//! timeout needed) and is brought up before deeper groups, taking the disks of a busy group once
//! that group's batch is done; groups holding one rank first among those that may spin beside a
//! starving group; an active group serves them before its rebuild and standard work.

use crate::common;

use common::{
    SPIN_DOWN_US, SPIN_UP_US, disk_level_violations, drive_policy, expedited, planned, poll_all,
    read, same_class_pair, served_ids, settle,
};
use proptest::prelude::*;
use spinwise_model::{Layout, Rack, ResourceKind};
use spinwise_sched::budget::GroupBudget;
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

/// Whether `a` and `b` of `layout` cannot both spin up at once (nothing else spinning).
fn collide(layout: &Layout, a: u32, b: u32) -> bool {
    let spinning_up = layout.state_index("spinning_up").unwrap();
    let mut books = GroupBudget::from_layout(layout);
    books.enter(a, spinning_up).unwrap();
    !books.fits(b, spinning_up)
}

#[test]
fn a_resting_group_with_one_expedited_read_is_brought_up_before_a_deeper_group_of_standard_reads() {
    // b holds three standard reads, a one expedited read that arrived last; they cannot spin
    // together. Depth (and age) would pick b; the expedited read picks a.
    let (_, layout) = &planned()[1];
    let (a, b) = same_class_pair(layout);
    let mut flamingo = Flamingo::new(layout).unwrap();
    assert!(collide(layout, a, b));
    for id in 0..3 {
        flamingo.submit(id, read(id, b)).unwrap();
    }
    flamingo.submit(3, expedited(3, a)).unwrap();
    let first = poll_all(&mut flamingo, 3);
    assert_eq!(first, [Action::SpinUp(a)]);
    let actions = settle(&mut flamingo, 3, &first);
    assert_eq!(served_ids(&actions), [3, 0, 1, 2], "{actions:?}");
}

/// The pelican layout with its groups serving `concurrent` requests at once (the preset: 4).
fn pelican_serving(concurrent: u32) -> Layout {
    let mut layout = planned()[1].1.clone();
    layout.scheduler.concurrent_requests_per_class = concurrent;
    layout
}

#[test]
fn an_active_group_serves_up_to_its_concurrent_requests_at_once_in_queue_order() {
    let layout = pelican_serving(4);
    let mut flamingo = Flamingo::new(&layout).unwrap();
    for id in 0..6 {
        flamingo.submit(0, read(id, 0)).unwrap();
    }
    assert_eq!(poll_all(&mut flamingo, 0), [Action::SpinUp(0)]);
    flamingo.spun_up(SPIN_UP_US, 0);
    let first = poll_all(&mut flamingo, SPIN_UP_US);
    assert_eq!(served_ids(&first), [0, 1, 2, 3], "four at once: {first:?}");
    flamingo.served(SPIN_UP_US + 5, &read(2, 0));
    assert_eq!(served_ids(&poll_all(&mut flamingo, SPIN_UP_US + 5)), [4]);
    let in_service = [0, 1, 3, 4].map(|id| Action::Serve(read(id, 0)));
    let rest = settle(&mut flamingo, SPIN_UP_US + 5, &in_service);
    assert_eq!(served_ids(&rest), [5], "{rest:?}");
}

#[test]
fn an_active_group_serves_its_expedited_reads_before_its_rebuild_and_standard_work() {
    // Stepped one request at a time.
    let layout = &pelican_serving(1);
    let rebuild = |id| Request {
        kind: Kind::Rebuild,
        ..read(id, 0)
    };
    let mut flamingo = Flamingo::new(layout).unwrap();
    for request in [rebuild(1), rebuild(2), read(3, 0), read(4, 0)] {
        flamingo.submit(0, request).unwrap();
    }
    assert_eq!(poll_all(&mut flamingo, 0), [Action::SpinUp(0)]);
    flamingo.spun_up(SPIN_UP_US, 0);
    assert_eq!(
        poll_all(&mut flamingo, SPIN_UP_US),
        [Action::Serve(rebuild(1))]
    );
    flamingo.submit(SPIN_UP_US + 1, expedited(5, 0)).unwrap();
    flamingo.submit(SPIN_UP_US + 2, expedited(6, 0)).unwrap();
    assert_eq!(poll_all(&mut flamingo, SPIN_UP_US + 2), []);
    let now_us = SPIN_UP_US + 1_000_000;
    flamingo.served(now_us, &rebuild(1));
    let rest = settle(&mut flamingo, now_us, &[]);
    assert_eq!(served_ids(&rest), [5, 6, 2, 3, 4], "{rest:?}");
}

#[test]
fn an_expedited_read_starves_its_group_at_once_which_takes_the_disks_once_the_busy_batch_is_done() {
    let (_, layout) = &planned()[1];
    let (a, b) = same_class_pair(layout);
    let mut flamingo = Flamingo::new(layout).unwrap();
    flamingo.submit(0, read(0, b)).unwrap();
    assert_eq!(poll_all(&mut flamingo, 0), [Action::SpinUp(b)]);
    flamingo.submit(5, expedited(9, a)).unwrap();
    assert_eq!(poll_all(&mut flamingo, 5), [], "a collides with b");
    // A standard read would ask for a wake-up at 5 µs + the bound; a is starving already.
    assert_eq!(flamingo.next_timeout_us(), None);
    flamingo.spun_up(SPIN_UP_US, b);
    // b serves the batch it was brought up for.
    assert_eq!(
        poll_all(&mut flamingo, SPIN_UP_US),
        [Action::Serve(read(0, b))]
    );
    // Later reads for b wait: b is held, and spun down once its read is done.
    flamingo.submit(SPIN_UP_US + 1, read(1, b)).unwrap();
    flamingo.submit(SPIN_UP_US + 2, read(2, b)).unwrap();
    assert_eq!(poll_all(&mut flamingo, SPIN_UP_US + 2), []);
    let mut now_us = SPIN_UP_US + 1_000_000;
    flamingo.served(now_us, &read(0, b));
    assert_eq!(poll_all(&mut flamingo, now_us), [Action::SpinDown(b)]);
    now_us += SPIN_DOWN_US;
    flamingo.spun_down(now_us, b);
    let up = poll_all(&mut flamingo, now_us);
    assert_eq!(up, [Action::SpinUp(a)]);
    let rest = settle(&mut flamingo, now_us, &up);
    assert_eq!(served_ids(&rest), [9, 1, 2], "{rest:?}");
}

#[test]
fn while_a_starving_group_waits_groups_with_expedited_reads_rank_first_among_those_that_may_spin() {
    // x (expedited, starving) cannot spin beside y, which is spinning up. Groups sharing no hard
    // constraint with x may spin meanwhile: c with one expedited read and d with three standard
    // reads, which cannot spin together. c goes first although d is deeper and older.
    let (_, layout) = &planned()[1];
    let (x, y) = same_class_pair(layout);
    let mut flamingo = Flamingo::new(layout).unwrap();
    let groups = layout.groups.len() as u32;
    let free = |g: &u32| !flamingo.budget().interact(x, *g);
    let c = (0..groups)
        .find(free)
        .expect("a group sharing nothing with x");
    let d = (c + 1..groups)
        .find(|g| free(g) && collide(layout, c, *g))
        .expect("a group colliding with c");
    assert!(collide(layout, x, y));
    flamingo.submit(0, read(0, y)).unwrap();
    let up_y = poll_all(&mut flamingo, 0);
    assert_eq!(up_y, [Action::SpinUp(y)]);
    for id in 1..4 {
        flamingo.submit(id, read(id, d)).unwrap();
    }
    flamingo.submit(4, expedited(4, x)).unwrap();
    flamingo.submit(5, expedited(5, c)).unwrap();
    let up_c = poll_all(&mut flamingo, 5);
    assert_eq!(up_c, [Action::SpinUp(c)]);
    let actions = settle(&mut flamingo, 5, &[up_y, up_c].concat());
    let order = served_ids(&actions);
    let position = |id| order.iter().position(|served| *served == id).unwrap();
    assert!(position(5) < position(1), "{actions:?}");
    assert!(position(4) < position(1), "{actions:?}");
}
