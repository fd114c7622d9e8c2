//! The class scheduler driven by a small deterministic event loop with fixed latencies (10 s spin
//! up, 1 s spin down, 1 GB/s per disk — a client read streams from k disks, a rebuild stack at one
//! disk's rate): it batches requests of a group under the reordering
//! bound, serves everything it accepts, keeps one group per class, and — checked disk by disk
//! from the rack after every action — never exceeds a hard budget.
//!
//! Expedited reads, stepped by hand: one goes next on its class's client turns, before every
//! standard read (for another group, the class switches once the request in hand is done),
//! expedited reads are first-in-first-out among themselves, count in the class's queue depth,
//! yield to a rebuild for the spinning group only within the affinity bound, and make as few
//! busy groups of other classes yield as make room for their spin-up.

use crate::common;

use common::{disk_level_violations, expedited, planned, poll_all, served_ids, settle};
use proptest::prelude::*;
use spinwise_model::{Layout, Rack};
use spinwise_sched::scheduler::{Action, ClassScheduler, Kind, Rejected, Request};
use std::collections::{BTreeMap, BinaryHeap};

const SPIN_UP_US: u64 = 10_000_000;
const SPIN_DOWN_US: u64 = 1_000_000;
const BYTES_PER_US: u64 = 1_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Arrive(usize),
    SpunUp(u32),
    SpunDown(u32),
    Served(u64),
}

#[derive(Debug, Default)]
struct Run {
    served: Vec<Request>,
    rejected: usize,
    spin_ups: usize,
    end_us: u64,
}

/// Runs `arrivals` (time, request) to completion; checks budgets after every action.
fn drive(rack: &Rack, layout: &Layout, arrivals: &[(u64, Request)]) -> Run {
    drive_sharing(rack, layout, arrivals, None)
}

/// [`drive`], with the groups' network links named for staggered switches.
fn drive_sharing(
    rack: &Rack,
    layout: &Layout,
    arrivals: &[(u64, Request)],
    link_of_group: Option<&[usize]>,
) -> Run {
    let mut scheduler = ClassScheduler::new(layout).unwrap();
    if let Some(links) = link_of_group {
        scheduler.share_links(links);
    }
    let k = u64::from(layout.erasure.k);
    let mut events = BinaryHeap::new();
    let mut sequence = 0u64;
    let mut push = |events: &mut BinaryHeap<_>, at: u64, event: Event| {
        sequence += 1;
        events.push(std::cmp::Reverse((at, sequence, event)));
    };
    for (index, (at, _)) in arrivals.iter().enumerate() {
        push(&mut events, *at, Event::Arrive(index));
    }
    let mut run = Run::default();
    let mut serving: BTreeMap<u64, Request> = BTreeMap::new();
    while let Some(std::cmp::Reverse((now, _, event))) = events.pop() {
        run.end_us = now;
        match event {
            Event::Arrive(index) => {
                run.rejected += usize::from(scheduler.submit(now, arrivals[index].1).is_err())
            }
            Event::SpunUp(group) => scheduler.spun_up(now, group),
            Event::SpunDown(group) => scheduler.spun_down(now, group),
            Event::Served(id) => {
                let request = serving.remove(&id).unwrap();
                scheduler.served(now, &request);
                run.served.push(request);
            }
        }
        while let Some(action) = scheduler.poll_action(now) {
            let violations = disk_level_violations(rack, layout, scheduler.budget());
            assert!(violations.is_empty(), "after {action:?}: {violations:?}");
            match action {
                Action::SpinUp(group) => {
                    run.spin_ups += 1;
                    push(&mut events, now + SPIN_UP_US, Event::SpunUp(group));
                }
                Action::SpinDown(group) => {
                    push(&mut events, now + SPIN_DOWN_US, Event::SpunDown(group))
                }
                Action::Serve(request) => {
                    serving.insert(request.id, request);
                    assert_within_concurrency(layout, &serving);
                    push(
                        &mut events,
                        now + service_us(&request, k, BYTES_PER_US),
                        Event::Served(request.id),
                    );
                }
            }
        }
    }
    assert!(scheduler.is_idle(), "work left behind");
    run
}

/// Per class, at most `concurrent_requests_per_class` requests in service, all of one group.
fn assert_within_concurrency(layout: &Layout, serving: &BTreeMap<u64, Request>) {
    let class_of = |group: u32| layout.classes.as_ref().map_or(group, |c| c[group as usize]);
    let mut by_class: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for request in serving.values() {
        by_class
            .entry(class_of(request.group))
            .or_default()
            .push(request.group);
    }
    for (class, groups) in by_class {
        assert!(
            groups.len() <= layout.scheduler.concurrent_requests_per_class as usize,
            "class {class} serves {} requests at once",
            groups.len()
        );
        assert!(
            groups.iter().all(|g| *g == groups[0]),
            "class {class} serves several groups at once: {groups:?}"
        );
    }
}

fn client(id: u64, group: u32) -> Request {
    Request {
        id,
        group,
        bytes: 1_000_000_000,
        kind: Kind::Client,
    }
}

/// Two groups of one class (they collide), four requests alternating between them.
fn alternating(layout: &Layout) -> Vec<(u64, Request)> {
    let classes = layout
        .classes
        .as_ref()
        .expect("the pelican layout has classes");
    let (a, b) = (
        0u32,
        (1..classes.len() as u32)
            .find(|g| classes[*g as usize] == classes[0])
            .unwrap(),
    );
    [a, b, a, b]
        .iter()
        .enumerate()
        .map(|(i, g)| (0, client(i as u64, *g)))
        .collect()
}

#[test]
fn requests_for_a_group_are_batched_behind_its_first_request() {
    let (rack, layout) = &planned()[1];
    let run = drive(rack, layout, &alternating(layout));
    assert_eq!(run.served.len(), 4);
    assert_eq!(run.spin_ups, 2, "A, B, A, B is served as A, A, B, B");
    let groups: Vec<u32> = run.served.iter().map(|r| r.group).collect();
    assert_eq!(groups[0], groups[1]);
    assert_eq!(groups[2], groups[3]);
}

#[test]
fn a_zero_reordering_bound_serves_in_arrival_order_paying_a_spin_up_per_switch() {
    let (rack, layout) = &planned()[1];
    let mut fifo = layout.clone();
    fifo.scheduler.reordering_bound_gb = 0.0;
    let run = drive(rack, &fifo, &alternating(&fifo));
    assert_eq!(
        run.served.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    assert_eq!(run.spin_ups, 4);
}

#[test]
fn a_full_class_rejects_new_requests() {
    let (rack, layout) = &planned()[1];
    let mut small = layout.clone();
    small.scheduler.max_queue_depth = 3;
    let mut scheduler = ClassScheduler::new(&small).unwrap();
    for id in 0..3 {
        scheduler.submit(0, client(id, 0)).unwrap();
    }
    assert!(matches!(
        scheduler.submit(0, client(3, 0)),
        Err(Rejected::QueueFull { depth: 3, .. })
    ));
    let other_class = (0..small.groups.len() as u32)
        .find(|g| {
            small.classes.as_ref().unwrap()[*g as usize] != small.classes.as_ref().unwrap()[0]
        })
        .unwrap();
    scheduler.submit(0, client(4, other_class)).unwrap();
    assert!(matches!(
        scheduler.submit(0, client(5, 999)),
        Err(Rejected::UnknownGroup { .. })
    ));
    let run = drive(rack, &small, &[(0, client(0, 0))]);
    assert_eq!(run.served.len(), 1);
}

#[test]
fn groups_of_different_classes_spin_up_together() {
    let (rack, layout) = &planned()[1];
    let arrivals: Vec<(u64, Request)> = layout
        .active_witness
        .iter()
        .enumerate()
        .map(|(i, g)| (0, client(i as u64, *g)))
        .collect();
    let run = drive(rack, layout, &arrivals);
    // Four classes, one spin-up each, all at once: done after one spin-up and one transfer.
    assert_eq!(run.spin_ups, 4);
    let k = u64::from(layout.erasure.k);
    assert_eq!(
        run.end_us,
        SPIN_UP_US + 1_000_000_000u64.div_ceil(k * BYTES_PER_US)
    );
}

#[test]
fn rebuild_and_client_requests_of_equal_disk_time_alternate_at_a_half_share() {
    let (rack, layout) = &one_at_a_time();
    let k = u64::from(layout.erasure.k);
    // A client read of k × 10 GB keeps each data disk busy as long as one 10 GB rebuild stack:
    // 10 s, as long as the spin-up.
    let mut arrivals = Vec::new();
    for id in 0..20u64 {
        let (kind, bytes) = if id % 2 == 0 {
            (Kind::Rebuild, 10_000_000_000)
        } else {
            (Kind::Client, k * 10_000_000_000)
        };
        arrivals.push((
            0,
            Request {
                id,
                group: 0,
                bytes,
                kind,
            },
        ));
    }
    let run = drive(rack, layout, &arrivals);
    let kinds: Vec<Kind> = run.served.iter().map(|r| r.kind).collect();
    // 50% share, equal disk time, both backlogged: the two kinds alternate. The rebuild's head
    // (a tie goes to the rebuild) asked for the spin-up and paid its 10 s, so the client goes
    // first.
    assert_eq!(kinds[0], Kind::Client, "{kinds:?}");
    for pair in kinds.chunks(2) {
        assert_ne!(pair[0], pair[1], "{kinds:?}");
    }
}

/// The pelican layout serving one request per class at a time (the preset serves four): the
/// tests that step a class through "the request in hand" one request at a time.
fn one_at_a_time() -> (&'static Rack, Layout) {
    with_concurrency(1)
}

/// The pelican layout serving up to `concurrent` requests per class at once.
fn with_concurrency(concurrent: u32) -> (&'static Rack, Layout) {
    let (rack, layout) = &planned()[1];
    let mut layout = layout.clone();
    layout.scheduler.concurrent_requests_per_class = concurrent;
    (rack, layout)
}

#[test]
fn a_class_serves_up_to_its_concurrency_from_its_group_and_switches_when_all_are_done() {
    let (_, layout) = with_concurrency(3);
    let (a, b) = common::same_class_pair(&layout);
    let mut scheduler = ClassScheduler::new(&layout).unwrap();
    for id in 0..5 {
        scheduler.submit(0, client(id, a)).unwrap();
    }
    scheduler.submit(0, client(5, b)).unwrap();
    assert_eq!(poll_all(&mut scheduler, 0), vec![Action::SpinUp(a)]);
    scheduler.spun_up(SPIN_UP_US, a);
    let first = poll_all(&mut scheduler, SPIN_UP_US);
    assert_eq!(
        served_ids(&first),
        vec![0, 1, 2],
        "three at once: {first:?}"
    );
    scheduler.served(SPIN_UP_US + 1, &client(1, a));
    assert_eq!(
        served_ids(&poll_all(&mut scheduler, SPIN_UP_US + 1)),
        vec![3]
    );
    for (at, id) in [(2, 0), (3, 2)] {
        scheduler.served(SPIN_UP_US + at, &client(id, a));
    }
    assert_eq!(
        served_ids(&poll_all(&mut scheduler, SPIN_UP_US + 3)),
        vec![4]
    );
    // Group a's queue is empty while 3 and 4 are in service: no switch yet.
    scheduler.served(SPIN_UP_US + 4, &client(3, a));
    assert_eq!(poll_all(&mut scheduler, SPIN_UP_US + 4), vec![]);
    scheduler.served(SPIN_UP_US + 5, &client(4, a));
    assert_eq!(
        poll_all(&mut scheduler, SPIN_UP_US + 5),
        vec![Action::SpinDown(a)]
    );
}

#[test]
fn requests_served_at_once_are_charged_the_class_time_once() {
    let (_, layout) = with_concurrency(2);
    let mut scheduler = ClassScheduler::new(&layout).unwrap();
    for id in 0..2 {
        scheduler.submit(0, client(id, 0)).unwrap();
    }
    assert_eq!(poll_all(&mut scheduler, 0), vec![Action::SpinUp(0)]);
    scheduler.spun_up(SPIN_UP_US, 0);
    let switch_us = scheduler.charged_time_us(0).1;
    assert_eq!(
        served_ids(&poll_all(&mut scheduler, SPIN_UP_US)),
        vec![0, 1]
    );
    // Both in service for 2 s, then one alone for 1 s: the class was busy 3 s.
    scheduler.served(SPIN_UP_US + 2_000_000, &client(0, 0));
    scheduler.served(SPIN_UP_US + 3_000_000, &client(1, 0));
    assert_eq!(scheduler.charged_time_us(0).1 - switch_us, 3_000_000);
}

/// Service time of a request on one group whose disks stream `disk_bytes_per_us` each: a client
/// read from k disks at once, a rebuild stack at one disk's rate (k reads and a write in parallel).
fn service_us(request: &Request, k: u64, disk_bytes_per_us: u64) -> u64 {
    match request.kind {
        Kind::Client | Kind::Expedited => request.bytes.div_ceil(k * disk_bytes_per_us),
        Kind::Rebuild => request.bytes.div_ceil(disk_bytes_per_us),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

    #[test]
    fn every_accepted_request_is_served_and_no_hard_budget_is_exceeded(
        rack_choice in 0usize..3,
        concurrent in 1u32..4,
        stagger in prop::option::of((1u32..20, 1usize..4)),
        requests in prop::collection::vec((0u64..600_000_000, any::<u32>(), 1u64..3_000_000_000, any::<bool>()), 1..200),
    ) {
        let (rack, layout) = &planned()[rack_choice];
        let mut layout = layout.clone();
        layout.scheduler.concurrent_requests_per_class = concurrent;
        // Staggered switches: the classes spread over `links` shared links.
        layout.scheduler.stagger_switches_min_queue = stagger.map(|(depth, _)| depth);
        let links: Option<Vec<usize>> = stagger.map(|(_, links)| {
            let classes = layout.classes.clone().unwrap_or_else(|| (0..layout.groups.len() as u32).collect());
            classes.iter().map(|c| *c as usize % links).collect()
        });
        let layout = &layout;
        let groups = layout.groups.len() as u32;
        let arrivals: Vec<(u64, Request)> = requests
            .iter()
            .enumerate()
            .map(|(i, (at, group, bytes, rebuild))| (*at, Request { id: i as u64, group: group % groups, bytes: *bytes, kind: if *rebuild { Kind::Rebuild } else { Kind::Client } }))
            .collect();
        let run = drive_sharing(rack, layout, &arrivals, links.as_deref());
        prop_assert_eq!(run.served.len() + run.rejected, arrivals.len());
        prop_assert!(run.spin_ups <= run.served.len());
    }
}

/// Time the closed loop below spent on each side, switches included.
#[derive(Debug, Default)]
struct Tally {
    rebuild_serving_us: u64,
    client_serving_us: u64,
    rebuild_switch_us: u64,
    client_switch_us: u64,
    spin_ups: u32,
}

impl Tally {
    /// The rebuild's fraction of the class's busy time, switches included.
    fn rebuild_fraction_of_time(&self) -> f64 {
        let rebuild = self.rebuild_serving_us + self.rebuild_switch_us;
        let client = self.client_serving_us + self.client_switch_us;
        rebuild as f64 / (rebuild + client) as f64
    }

    fn rebuild_fraction_of_serving(&self) -> f64 {
        self.rebuild_serving_us as f64 / (self.rebuild_serving_us + self.client_serving_us) as f64
    }
}

/// Runs one class saturated for `steps` actions on a virtual clock (10 s spin-up, 1 s spin-down,
/// 105 MB/s per disk): `next(kind)` makes each new request, and every served request is replaced
/// by a new one of its kind, so both queues stay backlogged at their initial depth. A switch
/// (spin-down of the old group, spin-up of the new) counts for the side that owns the new group,
/// `owner(group)`: the clock, not the scheduler's books, decides the split.
fn saturate(
    layout: &Layout,
    depths: (usize, usize),
    steps: usize,
    mut next: impl FnMut(Kind) -> Request,
    owner: impl Fn(u32) -> Kind,
) -> Tally {
    let k = u64::from(layout.erasure.k);
    let disk_bytes_per_us = 105;
    let mut scheduler = ClassScheduler::new(layout).unwrap();
    let mut now_us = 0u64;
    let (rebuild_depth, client_depth) = depths;
    for kind in std::iter::repeat_n(Kind::Rebuild, rebuild_depth)
        .chain(std::iter::repeat_n(Kind::Client, client_depth))
    {
        scheduler.submit(now_us, next(kind)).unwrap();
    }
    let mut tally = Tally::default();
    let mut switch_us = 0u64;
    for _ in 0..steps {
        match scheduler.poll_action(now_us).expect("backlogged") {
            Action::SpinDown(group) => {
                now_us += SPIN_DOWN_US;
                switch_us += SPIN_DOWN_US;
                scheduler.spun_down(now_us, group);
            }
            Action::SpinUp(group) => {
                tally.spin_ups += 1;
                now_us += SPIN_UP_US;
                switch_us += SPIN_UP_US;
                match owner(group) {
                    Kind::Rebuild => tally.rebuild_switch_us += switch_us,
                    Kind::Client | Kind::Expedited => tally.client_switch_us += switch_us,
                }
                switch_us = 0;
                scheduler.spun_up(now_us, group);
            }
            Action::Serve(request) => {
                let took_us = service_us(&request, k, disk_bytes_per_us);
                now_us += took_us;
                match request.kind {
                    Kind::Client | Kind::Expedited => tally.client_serving_us += took_us,
                    Kind::Rebuild => tally.rebuild_serving_us += took_us,
                }
                scheduler.served(now_us, &request);
                scheduler.submit(now_us, next(request.kind)).unwrap();
            }
        }
    }
    tally
}

/// The groups of group 0's class, group 0 first.
fn class_of_group_zero(layout: &Layout) -> Vec<u32> {
    let classes = layout.classes.as_ref().expect("pelican has classes");
    (0..classes.len() as u32)
        .filter(|g| classes[*g as usize] == classes[0])
        .collect()
}

#[test]
fn a_saturated_class_gives_rebuild_half_of_the_disk_time_at_a_half_share() {
    // Pelican's case: 1 GB client reads at 15 × 105 MB/s against 66.5 MB rebuild stacks at
    // 105 MB/s. A byte-fair share would serve 15 stacks per read (rebuild ~94% of the time); a
    // time-fair one gives each queue half.
    let (_, layout) = &planned()[0];
    let mut layout = layout.clone();
    layout.scheduler.rebuild_share = 0.5;
    let mut next_id = 0u64;
    let next = |kind: Kind| {
        next_id += 1;
        let bytes = match kind {
            Kind::Client | Kind::Expedited => 1_000_000_000,
            Kind::Rebuild => 66_532_000,
        };
        Request {
            id: next_id,
            group: 0,
            bytes,
            kind,
        }
    };
    let tally = saturate(&layout, (10, 10), 4_000, next, |_| Kind::Client);
    let rebuild_fraction = tally.rebuild_fraction_of_serving();
    assert_eq!(tally.spin_ups, 1, "one group, one spin-up");
    assert!(
        (rebuild_fraction - 0.5).abs() < 0.02,
        "rebuild got {rebuild_fraction} of the disk time: {tally:?}"
    );
}

#[test]
fn a_rebuild_shares_its_class_with_clients_of_other_groups_instead_of_keeping_it() {
    // Rebuild stacks for one group, clients for another group of the same class, both always
    // backlogged: group affinity alone would keep the rebuild's group spinning for ever. The class
    // must alternate, each side holding the disks for about u / k of disk time per turn, so each
    // gets about half of the serving time.
    let (_, layout) = &planned()[0];
    let groups = class_of_group_zero(layout);
    let (rebuild_group, client_group) = (groups[0], groups[1]);
    let mut next_id = 0u64;
    let next = |kind: Kind| {
        next_id += 1;
        let (group, bytes) = match kind {
            Kind::Client | Kind::Expedited => (client_group, 1_000_000_000),
            Kind::Rebuild => (rebuild_group, 66_532_000),
        };
        Request {
            id: next_id,
            group,
            bytes,
            kind,
        }
    };
    let owner = |group| {
        if group == rebuild_group {
            Kind::Rebuild
        } else {
            Kind::Client
        }
    };
    let tally = saturate(layout, (10, 10), 40_000, next, owner);
    let rebuild_fraction = tally.rebuild_fraction_of_serving();
    assert!(
        (rebuild_fraction - 0.5).abs() < 0.05,
        "rebuild got {rebuild_fraction} of the serving time: {tally:?}"
    );
    // Turns are long: each holds the disks for about u / k of disk time (~317 s here).
    let total_s = (tally.rebuild_serving_us + tally.client_serving_us) as f64 / 1e6;
    assert!(tally.spin_ups >= 4, "the class switched groups: {tally:?}");
    assert!(
        f64::from(tally.spin_ups) <= total_s / 250.0 + 2.0,
        "{} spin-ups in {total_s} s of serving",
        tally.spin_ups
    );
}

#[test]
fn a_rebuild_gets_half_of_its_class_time_including_spin_ups_against_clients_spread_over_groups() {
    // Pelican §4.3 under saturation: the rebuild's stacks all for one group, client reads spread
    // over the class's other groups (a few per group queued at a time, so client batches are
    // short and every client turn pays spin-ups). A client that gives up its turn because its
    // head is for another group keeps it, and each side pays for the switches it causes, so the
    // rebuild's share of the class's time — serving and switching — is w = 50%.
    let (_, layout) = &planned()[0];
    let mut layout = layout.clone();
    layout.scheduler.rebuild_share = 0.5;
    let groups = class_of_group_zero(&layout);
    let rebuild_group = groups[0];
    let client_groups = &groups[1..];
    assert!(client_groups.len() >= 4, "{groups:?}");
    // A fixed-seed linear congruential draw of each client's group (no RNG needed in this crate).
    let mut state = 0x5eed_u64;
    let mut next_id = 0u64;
    let next = |kind: Kind| {
        next_id += 1;
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let (group, bytes) = match kind {
            Kind::Client | Kind::Expedited => (
                client_groups[((state >> 33) % client_groups.len() as u64) as usize],
                1_000_000_000,
            ),
            Kind::Rebuild => (rebuild_group, 66_532_000),
        };
        Request {
            id: next_id,
            group,
            bytes,
            kind,
        }
    };
    let owner = |group| {
        if group == rebuild_group {
            Kind::Rebuild
        } else {
            Kind::Client
        }
    };
    let tally = saturate(&layout, (8, 60), 60_000, next, owner);
    let rebuild_fraction = tally.rebuild_fraction_of_time();
    assert!(
        (rebuild_fraction - 0.5).abs() <= 0.05,
        "rebuild got {rebuild_fraction} of the class's time: {tally:?}"
    );
    assert!(
        tally.client_switch_us > tally.client_serving_us / 10,
        "clients did pay for spin-ups: {tally:?}"
    );
}

/// A class with group `a` active and serving read 0, reads 1 to 3 for `a` queued behind it (the
/// state every expedited test below starts from), at 11 s on the test clock.
fn serving_the_first_of_four_reads_for(layout: &Layout, a: u32) -> ClassScheduler {
    let mut scheduler = ClassScheduler::new(layout).unwrap();
    for id in 0..4 {
        scheduler.submit(0, client(id, a)).unwrap();
    }
    assert_eq!(poll_all(&mut scheduler, 0), [Action::SpinUp(a)]);
    scheduler.spun_up(SPIN_UP_US, a);
    assert_eq!(
        poll_all(&mut scheduler, SPIN_UP_US),
        [Action::Serve(client(0, a))]
    );
    scheduler
}

#[test]
fn an_expedited_read_for_another_group_of_the_class_is_served_right_after_the_request_in_hand() {
    let (_, layout) = &one_at_a_time();
    let groups = class_of_group_zero(layout);
    let (a, b) = (groups[0], groups[1]);
    let mut scheduler = serving_the_first_of_four_reads_for(layout, a);
    let mut now_us = SPIN_UP_US + 1;
    scheduler.submit(now_us, expedited(10, b)).unwrap();
    assert_eq!(
        poll_all(&mut scheduler, now_us),
        [],
        "one request at a time per class: the read in hand is not cut short"
    );
    now_us += 1_000_000;
    scheduler.served(now_us, &client(0, a));
    // Reads 1 to 3 are for the spinning group, yet the class switches to b at once.
    assert_eq!(poll_all(&mut scheduler, now_us), [Action::SpinDown(a)]);
    now_us += SPIN_DOWN_US;
    scheduler.spun_down(now_us, a);
    assert_eq!(poll_all(&mut scheduler, now_us), [Action::SpinUp(b)]);
    now_us += SPIN_UP_US;
    scheduler.spun_up(now_us, b);
    assert_eq!(
        poll_all(&mut scheduler, now_us),
        [Action::Serve(expedited(10, b))]
    );
    now_us += 1_000_000;
    scheduler.served(now_us, &expedited(10, b));
    // Then back to a for the standard reads it passed, in their order.
    let rest = settle(&mut scheduler, now_us, &[]);
    assert_eq!(
        rest[..2],
        [Action::SpinDown(b), Action::SpinUp(a)],
        "{rest:?}"
    );
    assert_eq!(served_ids(&rest), [1, 2, 3]);
}

#[test]
fn an_expedited_read_for_the_spinning_group_is_served_next_before_its_earlier_standard_reads() {
    let (_, layout) = &one_at_a_time();
    let a = class_of_group_zero(layout)[0];
    let mut scheduler = serving_the_first_of_four_reads_for(layout, a);
    scheduler.submit(SPIN_UP_US + 1, expedited(10, a)).unwrap();
    let now_us = SPIN_UP_US + 1_000_000;
    scheduler.served(now_us, &client(0, a));
    let rest = settle(&mut scheduler, now_us, &[]);
    assert_eq!(served_ids(&rest), [10, 1, 2, 3], "{rest:?}");
    assert_eq!(rest.len(), 4, "no group switch: {rest:?}");
}

#[test]
fn expedited_reads_are_served_first_in_first_out_among_themselves_whatever_their_groups() {
    // Expedited reads for c, b, c and standard reads for a, all queued on an idle class: the
    // expedited ones go first and in arrival order, though batching c's two would save a switch.
    let (_, layout) = &planned()[1];
    let groups = class_of_group_zero(layout);
    let (a, b, c) = (groups[0], groups[1], groups[2]);
    let mut scheduler = ClassScheduler::new(layout).unwrap();
    for request in [
        client(0, a),
        expedited(1, c),
        expedited(2, b),
        client(3, a),
        expedited(4, c),
    ] {
        scheduler.submit(0, request).unwrap();
    }
    let actions = settle(&mut scheduler, 0, &[]);
    assert_eq!(served_ids(&actions), [1, 2, 4, 0, 3], "{actions:?}");
    let spin_ups: Vec<u32> = actions
        .iter()
        .filter_map(|action| match action {
            Action::SpinUp(group) => Some(*group),
            _ => None,
        })
        .collect();
    assert_eq!(spin_ups, [c, b, c, a]);
}

#[test]
fn a_full_class_refuses_expedited_reads_too_and_counts_them_in_its_depth() {
    let (_, layout) = &one_at_a_time();
    let mut small = layout.clone();
    small.scheduler.max_queue_depth = 3;
    let a = class_of_group_zero(&small)[0];
    let mut scheduler = ClassScheduler::new(&small).unwrap();
    scheduler.submit(0, expedited(0, a)).unwrap();
    scheduler.submit(0, expedited(1, a)).unwrap();
    scheduler.submit(0, client(2, a)).unwrap();
    assert_eq!(scheduler.queued(), 3);
    for request in [expedited(3, a), client(4, a)] {
        assert!(
            matches!(
                scheduler.submit(0, request),
                Err(Rejected::QueueFull { depth: 3, .. })
            ),
            "{request:?}"
        );
    }
    // A place freed by serving an expedited read takes an expedited read again.
    assert_eq!(poll_all(&mut scheduler, 0), [Action::SpinUp(a)]);
    scheduler.spun_up(SPIN_UP_US, a);
    assert_eq!(
        poll_all(&mut scheduler, SPIN_UP_US),
        [Action::Serve(expedited(0, a))]
    );
    scheduler.submit(SPIN_UP_US, expedited(3, a)).unwrap();
    assert_eq!(scheduler.queued(), 3);
}

#[test]
fn a_rebuild_for_the_spinning_group_may_pass_an_expedited_read_only_within_the_affinity_bound() {
    // Rebuild stacks of 10 GB and two standard reads for a. The rebuild paid a's spin-up, so the
    // client side has the next turns: read 20 is in hand when an expedited read for b arrives.
    // The client turn is now b's, whose head is for another group: the standard read 21, for
    // the spinning group, does not take it, while a's rebuild may use the turn out of turn until
    // it has taken u / k of disk-bytes (~33 GB on Pelican: 4 stacks); then the class switches.
    let (_, layout) = &one_at_a_time();
    let groups = class_of_group_zero(layout);
    let (a, b) = (groups[0], groups[1]);
    let stack = |id: u64| Request {
        id,
        group: a,
        bytes: 10_000_000_000,
        kind: Kind::Rebuild,
    };
    let mut scheduler = ClassScheduler::new(layout).unwrap();
    for request in (0..10).map(stack).chain([client(20, a), client(21, a)]) {
        scheduler.submit(0, request).unwrap();
    }
    assert_eq!(poll_all(&mut scheduler, 0), [Action::SpinUp(a)]);
    scheduler.spun_up(SPIN_UP_US, a);
    assert_eq!(
        poll_all(&mut scheduler, SPIN_UP_US),
        [Action::Serve(client(20, a))]
    );
    scheduler.submit(SPIN_UP_US + 1, expedited(100, b)).unwrap();
    let now_us = SPIN_UP_US + 1_000_000;
    scheduler.served(now_us, &client(20, a));
    let rest = settle(&mut scheduler, now_us, &[]);
    let bound = (layout.scheduler.reordering_bound_gb * 1e9) as u64 / u64::from(layout.erasure.k);
    let out_of_turn = bound.div_ceil(scheduler.disk_bytes(&stack(0)));
    assert_eq!(out_of_turn, 4, "Pelican's u / k against 10 GB stacks");
    let order = served_ids(&rest);
    assert_eq!(order[..5], [0, 1, 2, 3, 100], "{rest:?}");
    let mut others = order[5..].to_vec();
    others.sort_unstable();
    assert_eq!(others, [4, 5, 6, 7, 8, 9, 21]);
}

#[test]
fn a_group_asked_to_yield_keeps_serving_when_the_room_is_made_another_way_first() {
    // The dense JBOD again: groups 0 and 2 are active and serving; 0 has two more reads queued,
    // 2 none. An expedited read for 4 needs one of them gone. Group 2's read ends first and 2,
    // now idle, makes the room: group 0 must then go on serving, not spin down for a room
    // already made (who yields is decided afresh on every poll).
    let (_, layout) = &planned()[2];
    let (a, c, b) = (0, 2, 4);
    let mut scheduler = ClassScheduler::new(layout).unwrap();
    for id in 0..3 {
        scheduler.submit(0, client(id, a)).unwrap();
    }
    scheduler.submit(0, client(20, c)).unwrap();
    let mut up = poll_all(&mut scheduler, 0);
    up.sort_by_key(|action| format!("{action:?}"));
    assert_eq!(up, [Action::SpinUp(a), Action::SpinUp(c)]);
    scheduler.spun_up(SPIN_UP_US, a);
    scheduler.spun_up(SPIN_UP_US, c);
    let mut in_hand = served_ids(&poll_all(&mut scheduler, SPIN_UP_US));
    in_hand.sort_unstable();
    assert_eq!(in_hand, [0, 20]);
    let now_us = SPIN_UP_US + 1;
    scheduler.submit(now_us, expedited(10, b)).unwrap();
    assert_eq!(poll_all(&mut scheduler, now_us), []);

    scheduler.served(now_us + 1, &client(20, c));
    assert_eq!(poll_all(&mut scheduler, now_us + 1), [Action::SpinDown(c)]);
    scheduler.spun_down(now_us + 2, c);
    assert_eq!(poll_all(&mut scheduler, now_us + 2), [Action::SpinUp(b)]);
    scheduler.served(now_us + 3, &client(0, a));
    assert_eq!(
        poll_all(&mut scheduler, now_us + 3),
        [Action::Serve(client(1, a))]
    );
}

#[test]
fn an_expedited_read_makes_as_few_busy_groups_of_other_classes_yield_as_make_room() {
    // The dense JBOD: one group per class. Groups 0 and 2 are active and serving the first of
    // four reads each; group 4 cannot spin up beside both, but can beside either. A standard
    // read for 4 waits until one of their classes runs dry; an expedited one has one of them
    // (only one) spin down after its read in hand, and that group's class resumes afterwards.
    let (_, layout) = &planned()[2];
    assert!(layout.classes.is_none(), "one class per group");
    let (a, c, b) = (0, 2, 4);
    let books = ClassScheduler::new(layout).unwrap().budget().clone();
    let spinning_up = layout.state_index("spinning_up").unwrap();
    let active = layout.state_index(&layout.active_state).unwrap();
    let fits_beside = |busy: &[u32]| {
        let mut books = books.clone();
        for group in busy {
            books.enter(*group, active).unwrap();
        }
        books.fits(b, spinning_up)
    };
    assert!(!fits_beside(&[a, c]) && fits_beside(&[a]) && fits_beside(&[c]));
    let run_with = |newcomer: Request| {
        let mut scheduler = ClassScheduler::new(layout).unwrap();
        for id in 0..4 {
            scheduler.submit(0, client(id, a)).unwrap();
            scheduler.submit(0, client(20 + id, c)).unwrap();
        }
        let mut up = poll_all(&mut scheduler, 0);
        up.sort_by_key(|action| format!("{action:?}"));
        assert_eq!(up, [Action::SpinUp(a), Action::SpinUp(c)]);
        scheduler.spun_up(SPIN_UP_US, a);
        scheduler.spun_up(SPIN_UP_US, c);
        let in_hand = poll_all(&mut scheduler, SPIN_UP_US);
        assert_eq!(in_hand.len(), 2, "{in_hand:?}");
        scheduler.submit(SPIN_UP_US + 1, newcomer).unwrap();
        assert_eq!(poll_all(&mut scheduler, SPIN_UP_US + 1), []);
        settle(&mut scheduler, SPIN_UP_US + 1, &in_hand)
    };
    let position = |actions: &[Action], id| served_ids(actions).iter().position(|s| *s == id);
    let standard = run_with(client(10, b));
    let ran_dry = |ids: [u64; 3]| {
        ids.iter()
            .all(|id| position(&standard, *id) < position(&standard, 10))
    };
    assert!(ran_dry([1, 2, 3]) || ran_dry([21, 22, 23]), "{standard:?}");
    let expedited_run = run_with(expedited(10, b));
    let up_b = expedited_run
        .iter()
        .position(|action| *action == Action::SpinUp(b))
        .unwrap();
    let yielded: Vec<&Action> = expedited_run[..up_b]
        .iter()
        .filter(|action| matches!(action, Action::SpinDown(_)))
        .collect();
    assert_eq!(yielded.len(), 1, "{expedited_run:?}");
    let Action::SpinDown(yielded) = *yielded[0] else {
        unreachable!()
    };
    let first_after = if yielded == a { 1 } else { 21 };
    assert!(
        position(&expedited_run, 10) < position(&expedited_run, first_after),
        "{expedited_run:?}"
    );
    // Only the request in hand went before it on the yielding group.
    assert_eq!(
        expedited_run[..up_b]
            .iter()
            .filter(|action| matches!(action, Action::Serve(r) if r.group == yielded))
            .count(),
        0,
        "{expedited_run:?}"
    );
    assert_eq!(served_ids(&expedited_run).len(), 7);
}

#[test]
fn a_group_serving_several_requests_yields_to_an_expedited_read_without_taking_new_ones() {
    // As above, with two requests in service per group: the yielding group finishes both and
    // serves nothing new before it spins down for the expedited read's group.
    let (_, layout) = &planned()[2];
    let mut layout = layout.clone();
    layout.scheduler.concurrent_requests_per_class = 2;
    let (a, c, b) = (0, 2, 4);
    let mut scheduler = ClassScheduler::new(&layout).unwrap();
    for id in 0..4 {
        scheduler.submit(0, client(id, a)).unwrap();
        scheduler.submit(0, client(20 + id, c)).unwrap();
    }
    assert_eq!(poll_all(&mut scheduler, 0).len(), 2, "a and c spin up");
    scheduler.spun_up(SPIN_UP_US, a);
    scheduler.spun_up(SPIN_UP_US, c);
    let in_hand = poll_all(&mut scheduler, SPIN_UP_US);
    assert_eq!(served_ids(&in_hand), vec![0, 1, 20, 21], "two each");
    scheduler.submit(SPIN_UP_US + 1, expedited(10, b)).unwrap();
    assert_eq!(poll_all(&mut scheduler, SPIN_UP_US + 1), []);
    let after = settle(&mut scheduler, SPIN_UP_US + 1, &in_hand);
    let up_b = after
        .iter()
        .position(|action| *action == Action::SpinUp(b))
        .unwrap();
    let yielded: Vec<u32> = after[..up_b]
        .iter()
        .filter_map(|action| match action {
            Action::SpinDown(group) => Some(*group),
            _ => None,
        })
        .collect();
    assert_eq!(yielded.len(), 1, "{after:?}");
    let new_on_yielded = after[..up_b]
        .iter()
        .filter(|action| matches!(action, Action::Serve(r) if r.group == yielded[0]))
        .count();
    assert_eq!(new_on_yielded, 0, "{after:?}");
    assert_eq!(served_ids(&in_hand).len() + served_ids(&after).len(), 9);
}

/// Staggered switches on the pelican layout, one request at a time: classes X (groups x1, x2)
/// and Y (y1, y2) share one link, every other class has its own; X waits for a partner's switch
/// once it queues `min_queue` client reads.
struct Staggered {
    scheduler: ClassScheduler,
    x: (u32, u32),
    y: (u32, u32),
}

fn staggered(min_queue: u32, share: bool) -> Staggered {
    let (_, mut layout) = one_at_a_time();
    layout.scheduler.stagger_switches_min_queue = Some(min_queue);
    let classes = layout.classes.clone().expect("pelican has classes");
    let x = common::same_class_pair(&layout);
    let class_y = classes[x.0 as usize] + 1;
    let y_groups: Vec<u32> = (0..classes.len() as u32)
        .filter(|g| classes[*g as usize] == class_y)
        .collect();
    let y = (y_groups[0], y_groups[1]);
    let mut scheduler = ClassScheduler::new(&layout).unwrap();
    if share {
        let class_x = classes[x.0 as usize];
        let links: Vec<usize> = classes
            .iter()
            .map(|c| if *c == class_y { class_x } else { *c } as usize)
            .collect();
        scheduler.share_links(&links);
    }
    assert_eq!(scheduler.staggers_switches(), share);
    Staggered { scheduler, x, y }
}

impl Staggered {
    /// X serving read 0 on x1 with reads 1–3 for x2 queued (and, if asked, an expedited read or
    /// a rebuild request for x2 half a second before X is done); both groups came up at
    /// `SPIN_UP_US`, a 10 s switch; Y served read 10 on y1 after `y_batch_us` and is spinning y1
    /// down to serve read 11 on y2. Returns what X does when read 0 ends a second after Y's.
    fn x_done_while_y_switches(
        &mut self,
        urgent_for_x2: Option<Kind>,
        y_batch_us: u64,
    ) -> Vec<Action> {
        let (x, y) = (self.x, self.y);
        let scheduler = &mut self.scheduler;
        scheduler.submit(0, client(0, x.0)).unwrap();
        for id in 1..4 {
            scheduler.submit(0, client(id, x.1)).unwrap();
        }
        scheduler.submit(0, client(10, y.0)).unwrap();
        scheduler.submit(0, client(11, y.1)).unwrap();
        let mut up = poll_all(scheduler, 0);
        up.sort_by_key(|a| format!("{a:?}"));
        assert_eq!(up, [Action::SpinUp(x.0), Action::SpinUp(y.0)]);
        scheduler.spun_up(SPIN_UP_US, x.0);
        scheduler.spun_up(SPIN_UP_US, y.0);
        assert_eq!(served_ids(&poll_all(scheduler, SPIN_UP_US)).len(), 2);
        let y_done_us = SPIN_UP_US + y_batch_us;
        scheduler.served(y_done_us, &client(10, y.0));
        assert_eq!(
            poll_all(scheduler, y_done_us),
            [Action::SpinDown(y.0)],
            "Y switches to y2"
        );
        let x_done_us = y_done_us + 1_000_000;
        if let Some(kind) = urgent_for_x2 {
            let urgent = Request {
                kind,
                ..client(4, x.1)
            };
            scheduler.submit(x_done_us - 500_000, urgent).unwrap();
            assert_eq!(poll_all(scheduler, x_done_us - 500_000), []);
        }
        let read_zero = client(0, x.0);
        scheduler.served(x_done_us, &read_zero);
        poll_all(scheduler, x_done_us)
    }
}

/// A batch of Y's long enough to cover X's 10 s switch.
const LONG_BATCH_US: u64 = 11_000_000;
/// When X is done after Y's long batch.
const X_DONE_US: u64 = SPIN_UP_US + LONG_BATCH_US + 1_000_000;

#[test]
fn a_class_does_not_wait_for_a_partner_whose_last_batch_was_shorter_than_its_own_switch() {
    let mut run = staggered(2, true);
    let x = run.x;
    assert_eq!(
        run.x_done_while_y_switches(None, 1_000_000),
        [Action::SpinDown(x.0)],
        "Y streamed 1 s after a 10 s switch: waiting would only delay X"
    );
}

#[test]
fn a_loaded_class_waits_for_a_switch_on_its_shared_link_and_switches_when_its_partner_is_up() {
    let mut run = staggered(2, true);
    let (x, y) = (run.x, run.y);
    assert_eq!(
        run.x_done_while_y_switches(None, LONG_BATCH_US),
        [],
        "X waits: Y is switching"
    );
    let y_down_us = X_DONE_US + 500_000;
    run.scheduler.spun_down(y_down_us, y.0);
    assert_eq!(
        poll_all(&mut run.scheduler, y_down_us),
        [Action::SpinUp(y.1)]
    );
    let y_up_us = y_down_us + SPIN_UP_US;
    run.scheduler.spun_up(y_up_us, y.1);
    let mut after = poll_all(&mut run.scheduler, y_up_us);
    after.sort_by_key(|a| format!("{a:?}"));
    assert_eq!(
        after,
        [Action::Serve(client(11, y.1)), Action::SpinDown(x.0)],
        "Y streams while X switches"
    );
}

#[test]
fn with_three_classes_on_a_link_a_class_waits_for_a_switch_only_while_no_partner_streams() {
    for z_streams in [true, false] {
        let (_, mut layout) = one_at_a_time();
        layout.scheduler.stagger_switches_min_queue = Some(2);
        let classes = layout.classes.clone().expect("pelican has classes");
        let x = common::same_class_pair(&layout);
        let class_x = classes[x.0 as usize];
        let groups_of = |class: u32| -> Vec<u32> {
            (0..classes.len() as u32)
                .filter(|g| classes[*g as usize] == class)
                .collect()
        };
        let (y, z) = (groups_of(class_x + 1), groups_of(class_x + 2)[0]);
        let on_the_link = class_x..=class_x + 2;
        let links: Vec<usize> = classes
            .iter()
            .map(|c| if on_the_link.contains(c) { class_x } else { *c } as usize)
            .collect();
        let mut scheduler = ClassScheduler::new(&layout).unwrap();
        scheduler.share_links(&links);
        scheduler.submit(0, client(0, x.0)).unwrap();
        for id in 1..4 {
            scheduler.submit(0, client(id, x.1)).unwrap();
        }
        scheduler.submit(0, client(10, y[0])).unwrap();
        scheduler.submit(0, client(11, y[1])).unwrap();
        scheduler.submit(0, client(20, z)).unwrap();
        assert_eq!(
            poll_all(&mut scheduler, 0).len(),
            3,
            "x1, y1 and z1 spin up"
        );
        for group in [x.0, y[0], z] {
            scheduler.spun_up(SPIN_UP_US, group);
        }
        assert_eq!(
            served_ids(&poll_all(&mut scheduler, SPIN_UP_US)),
            [0, 10, 20]
        );
        let y_done_us = SPIN_UP_US + LONG_BATCH_US;
        if !z_streams {
            scheduler.served(y_done_us - 500_000, &client(20, z));
            assert_eq!(
                poll_all(&mut scheduler, y_done_us - 500_000),
                [],
                "Z idles, up"
            );
        }
        scheduler.served(y_done_us, &client(10, y[0]));
        assert_eq!(
            poll_all(&mut scheduler, y_done_us),
            [Action::SpinDown(y[0])]
        );
        scheduler.served(X_DONE_US, &client(0, x.0));
        let x_done = poll_all(&mut scheduler, X_DONE_US);
        if z_streams {
            assert_eq!(x_done, [Action::SpinDown(x.0)], "Z keeps the link busy");
        } else {
            assert_eq!(x_done, [], "X's switch would leave the link idle");
        }
    }
}

#[test]
fn without_a_shared_link_or_below_the_queue_threshold_or_with_an_expedited_read_or_rebuild_work_a_class_switches_at_once()
 {
    for (min_queue, share, urgent) in [
        (2, false, None),
        (4, true, None),
        (2, true, Some(Kind::Expedited)),
        (2, true, Some(Kind::Rebuild)),
    ] {
        let mut run = staggered(min_queue, share);
        let x = run.x;
        assert_eq!(
            run.x_done_while_y_switches(urgent, LONG_BATCH_US),
            [Action::SpinDown(x.0)],
            "min_queue {min_queue}, shared {share}, queued {urgent:?}"
        );
    }
}
