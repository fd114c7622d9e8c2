//! Shared helpers for the scheduler tests: planned presets, the independent, disk-level budget
//! checker (it reads the rack's domains, not the layout's group constraints), a fixed-latency
//! event loop for any policy, and, for tests that step a policy by hand, `poll_all` and
//! `settle` (finish what is in hand and everything after it, one action at a time).

#![allow(dead_code)] // each test crate uses a different subset

use spinwise_model::{Amount, Layout, Rack, ResourceKind, parse_rack};
use spinwise_sched::budget::GroupBudget;
use std::sync::OnceLock;

pub fn preset(name: &str) -> (Rack, Layout) {
    let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let rack = parse_rack(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    (rack, layout)
}

/// OCP, Pelican and the 60-bay JBOD, planned once per test binary.
pub fn planned() -> &'static [(Rack, Layout)] {
    static PLANNED: OnceLock<Vec<(Rack, Layout)>> = OnceLock::new();
    PLANNED.get_or_init(|| {
        ["ocp-cold-storage", "pelican", "dense-jbod-60"]
            .map(preset)
            .to_vec()
    })
}

/// Every hard domain whose draw exceeds its budget with each disk in its group's state.
pub fn disk_level_violations(rack: &Rack, layout: &Layout, books: &GroupBudget) -> Vec<String> {
    let mut state_of_disk = vec![rack.resting_state(); rack.disk_count()];
    for (group, ids) in layout.groups.iter().enumerate() {
        for id in ids {
            let disk = rack.disks.binary_search_by_key(id, |d| d.id).unwrap();
            state_of_disk[disk] = books.state(group as u32);
        }
    }
    let mut violations = Vec::new();
    for resource in rack
        .resources
        .iter()
        .filter(|r| r.kind == ResourceKind::Hard)
    {
        for (index, domain) in resource.domains.iter().enumerate() {
            let draw = domain.iter().fold(Amount::ZERO, |sum, disk| {
                sum + resource.cost[state_of_disk[*disk as usize]]
            });
            if draw > resource.budget {
                violations.push(format!(
                    "{} domain {index}: {draw} > {}",
                    resource.name, resource.budget
                ));
            }
        }
    }
    violations
}

/// Fixed latencies of [`drive_policy`]: 10 s spin-up, 1 s spin-down, 1 GB/s per request.
pub const SPIN_UP_US: u64 = 10_000_000;
pub const SPIN_DOWN_US: u64 = 1_000_000;
pub const BYTES_PER_US: u64 = 1_000;

/// What a policy did when driven by [`drive_policy`].
#[derive(Debug, Default)]
pub struct Trace {
    /// (time, action) in the order the policy handed them out.
    pub actions: Vec<(u64, spinwise_sched::scheduler::Action)>,
    /// (time served, request), in completion order.
    pub served: Vec<(u64, spinwise_sched::scheduler::Request)>,
    pub rejected: usize,
    /// Most units (groups or disks) not resting at once.
    pub max_busy: usize,
    pub end_us: u64,
}

/// Drives `policy` through `arrivals` (time, request) with fixed latencies until everything is
/// served, polling at every event and at the policy's timeouts; `check` runs after every action
/// (the budget checks).
pub fn drive_policy<P: spinwise_sched::policy::Policy>(
    policy: &mut P,
    arrivals: &[(u64, spinwise_sched::scheduler::Request)],
    mut check: impl FnMut(&P),
) -> Trace {
    use spinwise_sched::scheduler::Action;
    use std::cmp::Reverse;
    use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    enum Event {
        Arrive(usize),
        SpunUp(u32),
        SpunDown(u32),
        Served(u64),
        Timeout,
    }
    let mut events = BinaryHeap::new();
    let mut sequence = 0u64;
    let mut push = |events: &mut BinaryHeap<_>, at: u64, event: Event| {
        sequence += 1;
        events.push(Reverse((at, sequence, event)));
    };
    for (index, (at, _)) in arrivals.iter().enumerate() {
        push(&mut events, *at, Event::Arrive(index));
    }
    let mut trace = Trace::default();
    let mut serving: BTreeMap<u64, spinwise_sched::scheduler::Request> = BTreeMap::new();
    let mut busy: BTreeSet<u32> = BTreeSet::new();
    let mut timeout_us = None;
    while let Some(Reverse((now, _, event))) = events.pop() {
        if event == Event::Timeout && timeout_us != Some(now) {
            continue;
        }
        trace.end_us = now;
        match event {
            Event::Arrive(index) => {
                trace.rejected += usize::from(policy.submit(now, arrivals[index].1).is_err())
            }
            Event::SpunUp(unit) => policy.spun_up(now, unit),
            Event::SpunDown(unit) => {
                busy.remove(&unit);
                policy.spun_down(now, unit)
            }
            Event::Served(id) => {
                let request = serving.remove(&id).unwrap();
                policy.served(now, &request);
                trace.served.push((now, request));
            }
            Event::Timeout => timeout_us = None,
        }
        while let Some(action) = policy.poll_action(now) {
            check(policy);
            trace.actions.push((now, action));
            match action {
                Action::SpinUp(unit) => {
                    busy.insert(unit);
                    trace.max_busy = trace.max_busy.max(busy.len());
                    push(&mut events, now + SPIN_UP_US, Event::SpunUp(unit));
                }
                Action::SpinDown(unit) => {
                    push(&mut events, now + SPIN_DOWN_US, Event::SpunDown(unit))
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
        match policy.next_timeout_us() {
            Some(at) => {
                assert!(at > now, "a timeout must lie in the future");
                if timeout_us != Some(at) {
                    timeout_us = Some(at);
                    push(&mut events, at, Event::Timeout);
                }
            }
            // A queued wake-up the policy no longer wants is skipped as stale.
            None => timeout_us = None,
        }
    }
    assert!(policy.is_idle(), "work left behind");
    trace
}

/// A client read of 1 GB (1 s at [`BYTES_PER_US`]).
pub fn read(id: u64, group: u32) -> spinwise_sched::scheduler::Request {
    spinwise_sched::scheduler::Request {
        id,
        group,
        bytes: 1_000_000_000,
        kind: spinwise_sched::scheduler::Kind::Client,
    }
}

/// An expedited client read of 1 GB ([`read`] at [`spinwise_sched::scheduler::Kind::Expedited`]).
pub fn expedited(id: u64, group: u32) -> spinwise_sched::scheduler::Request {
    spinwise_sched::scheduler::Request {
        kind: spinwise_sched::scheduler::Kind::Expedited,
        ..read(id, group)
    }
}

/// Finishes `unfinished` (actions already handed out, in order) and then performs the actions
/// `policy` hands out from `now_us` on, one at a time with the fixed latencies of
/// [`drive_policy`] (each finishes before the next starts), polling after every completion and
/// at the policy's timeouts, until nothing is left; returns the new actions in the order handed
/// out. For tests that step a policy by hand into a state and then let it finish.
pub fn settle<P: spinwise_sched::policy::Policy>(
    policy: &mut P,
    mut now_us: u64,
    unfinished: &[spinwise_sched::scheduler::Action],
) -> Vec<spinwise_sched::scheduler::Action> {
    use spinwise_sched::scheduler::Action;
    let mut handed_out = Vec::new();
    let mut outstanding: std::collections::VecDeque<Action> = unfinished.iter().copied().collect();
    loop {
        while let Some(action) = policy.poll_action(now_us) {
            handed_out.push(action);
            outstanding.push_back(action);
        }
        let Some(action) = outstanding.pop_front() else {
            match policy.next_timeout_us() {
                Some(at) => {
                    assert!(at > now_us, "a timeout must lie in the future");
                    now_us = at;
                    continue;
                }
                None => break,
            }
        };
        match action {
            Action::SpinUp(unit) => {
                now_us += SPIN_UP_US;
                policy.spun_up(now_us, unit);
            }
            Action::SpinDown(unit) => {
                now_us += SPIN_DOWN_US;
                policy.spun_down(now_us, unit);
            }
            Action::Serve(request) => {
                now_us += request.bytes.div_ceil(BYTES_PER_US);
                policy.served(now_us, &request);
            }
        }
    }
    assert!(policy.is_idle(), "work left behind");
    handed_out
}

/// The ids of the `Serve` actions among `actions`, in order.
pub fn served_ids(actions: &[spinwise_sched::scheduler::Action]) -> Vec<u64> {
    actions
        .iter()
        .filter_map(|action| match action {
            spinwise_sched::scheduler::Action::Serve(request) => Some(request.id),
            _ => None,
        })
        .collect()
}

/// Everything `policy` hands out at `now_us`, polled until `None`.
pub fn poll_all<P: spinwise_sched::policy::Policy>(
    policy: &mut P,
    now_us: u64,
) -> Vec<spinwise_sched::scheduler::Action> {
    std::iter::from_fn(|| policy.poll_action(now_us)).collect()
}

/// Two groups of the same class of a layout with classes (on Pelican they collide).
pub fn same_class_pair(layout: &Layout) -> (u32, u32) {
    let classes = layout.classes.as_ref().expect("the layout has classes");
    let other = (1..classes.len() as u32)
        .find(|g| classes[*g as usize] == classes[0])
        .expect("a class with two groups");
    (0, other)
}
