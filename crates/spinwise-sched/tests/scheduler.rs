//! The class scheduler driven by a small deterministic event loop with fixed latencies (10 s spin
//! up, 1 s spin down, 1 GB/s per disk — a client read streams from k disks, a rebuild stack at one
//! disk's rate): it batches requests of a group under the reordering
//! bound, serves everything it accepts, keeps one group per class, and — checked disk by disk
//! from the rack after every action — never exceeds a hard budget.

mod common;

use common::{disk_level_violations, planned};
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
    let mut scheduler = ClassScheduler::new(layout).unwrap();
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
    let (rack, layout) = &planned()[1];
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
        requests in prop::collection::vec((0u64..600_000_000, any::<u32>(), 1u64..3_000_000_000, any::<bool>()), 1..200),
    ) {
        let (rack, layout) = &planned()[rack_choice];
        let groups = layout.groups.len() as u32;
        let arrivals: Vec<(u64, Request)> = requests
            .iter()
            .enumerate()
            .map(|(i, (at, group, bytes, rebuild))| (*at, Request { id: i as u64, group: group % groups, bytes: *bytes, kind: if *rebuild { Kind::Rebuild } else { Kind::Client } }))
            .collect();
        let run = drive(rack, layout, &arrivals);
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
