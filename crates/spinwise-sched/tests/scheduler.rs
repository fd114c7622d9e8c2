//! The class scheduler driven by a small deterministic event loop with fixed latencies (10 s spin
//! up, 1 s spin down, 1 GB/s per request): it batches requests of a group under the reordering
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
                run.rejected += usize::from(scheduler.submit(arrivals[index].1).is_err())
            }
            Event::SpunUp(group) => scheduler.spun_up(group),
            Event::SpunDown(group) => scheduler.spun_down(group),
            Event::Served(id) => {
                let request = serving.remove(&id).unwrap();
                scheduler.served(&request);
                run.served.push(request);
            }
        }
        while let Some(action) = scheduler.poll_action() {
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
                        now + request.bytes.div_ceil(BYTES_PER_US),
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
        scheduler.submit(client(id, 0)).unwrap();
    }
    assert!(matches!(
        scheduler.submit(client(3, 0)),
        Err(Rejected::QueueFull { depth: 3, .. })
    ));
    let other_class = (0..small.groups.len() as u32)
        .find(|g| {
            small.classes.as_ref().unwrap()[*g as usize] != small.classes.as_ref().unwrap()[0]
        })
        .unwrap();
    scheduler.submit(client(4, other_class)).unwrap();
    assert!(matches!(
        scheduler.submit(client(5, 999)),
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
    assert_eq!(run.end_us, SPIN_UP_US + 1_000_000);
}

#[test]
fn rebuild_and_client_requests_of_equal_disk_time_alternate_at_a_half_share() {
    let (rack, layout) = &planned()[1];
    let k = u64::from(layout.erasure.k);
    // A client read of k × 100 MB keeps each data disk busy as long as one 100 MB rebuild stack.
    let mut arrivals = Vec::new();
    for id in 0..20u64 {
        let (kind, bytes) = if id % 2 == 0 {
            (Kind::Rebuild, 100_000_000)
        } else {
            (Kind::Client, k * 100_000_000)
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
    // 50% share, equal disk time, both backlogged: the two kinds alternate.
    for pair in kinds.chunks(2) {
        assert_ne!(pair[0], pair[1], "{kinds:?}");
    }
}

/// Service time of a request on one group whose disks stream `disk_bytes_per_us` each: a client
/// read from k disks at once, a rebuild stack at one disk's rate (k reads and a write in parallel).
fn service_us(request: &Request, k: u64, disk_bytes_per_us: u64) -> u64 {
    match request.kind {
        Kind::Client => request.bytes.div_ceil(k * disk_bytes_per_us),
        Kind::Rebuild => request.bytes.div_ceil(disk_bytes_per_us),
    }
}

#[test]
fn a_saturated_class_gives_rebuild_half_of_the_disk_time_at_a_half_share() {
    // Pelican's case: 1 GB client reads at 15 × 105 MB/s against 66.5 MB rebuild stacks at
    // 105 MB/s. A byte-fair share would serve 15 stacks per read (rebuild ~94% of the time); a
    // time-fair one gives each queue half.
    let (_, layout) = &planned()[0];
    let mut layout = layout.clone();
    layout.scheduler.rebuild_share = 0.5;
    let k = u64::from(layout.erasure.k);
    let disk_bytes_per_us = 105;
    let mut scheduler = ClassScheduler::new(&layout).unwrap();
    let mut next_id = 0u64;
    let mut submit = |scheduler: &mut ClassScheduler, kind: Kind| {
        let bytes = match kind {
            Kind::Client => 1_000_000_000,
            Kind::Rebuild => 66_532_000,
        };
        next_id += 1;
        scheduler
            .submit(Request {
                id: next_id,
                group: 0,
                bytes,
                kind,
            })
            .unwrap();
    };
    for _ in 0..10 {
        submit(&mut scheduler, Kind::Client);
        submit(&mut scheduler, Kind::Rebuild);
    }
    let (mut rebuild_us, mut client_us) = (0u64, 0u64);
    for _ in 0..4_000 {
        let action = scheduler.poll_action().expect("backlogged");
        match action {
            Action::SpinUp(group) => scheduler.spun_up(group),
            Action::Serve(request) => {
                let took_us = service_us(&request, k, disk_bytes_per_us);
                match request.kind {
                    Kind::Client => client_us += took_us,
                    Kind::Rebuild => rebuild_us += took_us,
                }
                scheduler.served(&request);
                // Keep both queues backlogged: replace what was served.
                submit(&mut scheduler, request.kind);
            }
            Action::SpinDown(group) => panic!("group {group} spun down with work queued"),
        }
    }
    let rebuild_fraction = rebuild_us as f64 / (rebuild_us + client_us) as f64;
    assert!(
        (rebuild_fraction - 0.5).abs() < 0.02,
        "rebuild got {rebuild_fraction} of the disk time ({rebuild_us} µs against {client_us} µs)"
    );
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

#[test]
fn a_rebuild_shares_its_class_with_clients_of_other_groups_instead_of_keeping_it() {
    // Rebuild stacks for one group, clients for another group of the same class, both always
    // backlogged: group affinity alone would keep the rebuild's group spinning for ever. The class
    // must alternate, each side holding the disks for about u / k of disk time per turn, so each
    // gets about half of the serving time.
    let (_, layout) = &planned()[0];
    let layout = layout.clone();
    let classes = layout.classes.as_ref().expect("pelican has classes");
    let (rebuild_group, client_group) = (
        0u32,
        (1..classes.len() as u32)
            .find(|g| classes[*g as usize] == classes[0])
            .unwrap(),
    );
    let k = u64::from(layout.erasure.k);
    let disk_bytes_per_us = 105;
    let mut scheduler = ClassScheduler::new(&layout).unwrap();
    let mut next_id = 0u64;
    let mut submit = |scheduler: &mut ClassScheduler, kind: Kind| {
        let (group, bytes) = match kind {
            Kind::Client => (client_group, 1_000_000_000),
            Kind::Rebuild => (rebuild_group, 66_532_000),
        };
        next_id += 1;
        scheduler
            .submit(Request {
                id: next_id,
                group,
                bytes,
                kind,
            })
            .unwrap();
    };
    for _ in 0..10 {
        submit(&mut scheduler, Kind::Client);
        submit(&mut scheduler, Kind::Rebuild);
    }
    let (mut rebuild_us, mut client_us, mut spin_ups) = (0u64, 0u64, 0u32);
    for _ in 0..40_000 {
        match scheduler.poll_action().expect("backlogged") {
            Action::SpinUp(group) => {
                spin_ups += 1;
                scheduler.spun_up(group);
            }
            Action::SpinDown(group) => scheduler.spun_down(group),
            Action::Serve(request) => {
                let took_us = service_us(&request, k, disk_bytes_per_us);
                match request.kind {
                    Kind::Client => client_us += took_us,
                    Kind::Rebuild => rebuild_us += took_us,
                }
                scheduler.served(&request);
                submit(&mut scheduler, request.kind);
            }
        }
    }
    let rebuild_fraction = rebuild_us as f64 / (rebuild_us + client_us) as f64;
    assert!(
        (rebuild_fraction - 0.5).abs() < 0.05,
        "rebuild got {rebuild_fraction} of the serving time with {spin_ups} spin-ups"
    );
    // Turns are long: each holds the disks for about u / k of disk time (~317 s here).
    let total_s = (rebuild_us + client_us) as f64 / 1e6;
    assert!(spin_ups >= 4, "the class switched groups: {spin_ups}");
    assert!(
        f64::from(spin_ups) <= total_s / 250.0 + 2.0,
        "{spin_ups} spin-ups in {total_s} s of serving"
    );
}
