//! Pelican's reordering queue (§2.3): hand-built examples of the paper's behaviour (batching
//! behind the last request of a group, the tail when a bound would break, u = 0 is FIFO, u = ∞
//! batches whole groups, costs in bytes), cancellation, the cost models, and properties against a
//! deliberately naive reference written here from the paper's prose:
//! - the queue's order, timestamps and reordering counters equal the reference's after every
//!   push, pop and cancellation, and its invariants hold;
//! - no request is ever served after more than u cost units of requests enqueued after it, and
//!   each counter's displacement o − t equals the movement measured from the service order.
//!
//! Proptest runs from a fixed seed; a failure prints the shrunk operation sequence.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use spinwise_sched::reorder::{CostModel, ReorderQueue, UNBOUNDED};
use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU64;

const A: u32 = 0;
const B: u32 = 1;
const C: u32 = 2;
const D: u32 = 3;

fn labels(queue: &ReorderQueue<&'static str>) -> Vec<&'static str> {
    queue.iter().map(|entry| entry.item).collect()
}

/// (label, timestamp, reordering counter) of every queued request, front first.
fn counters(queue: &ReorderQueue<&'static str>) -> Vec<(&'static str, u64, u64)> {
    queue
        .iter()
        .map(|entry| (entry.item, entry.timestamp, entry.reorder))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The paper's behaviour on hand-built examples (cost 1: the paper's "number of operations").

#[test]
fn a_request_for_a_group_already_queued_joins_its_last_request_and_overtakes_the_rest() {
    let mut queue = ReorderQueue::new(1);
    assert_eq!(queue.push("a1", A, 1), 0);
    assert_eq!(queue.push("b1", B, 1), 1);
    assert_eq!(queue.push("a2", A, 1), 1, "a2 goes right after a1");
    assert_eq!(labels(&queue), ["a1", "a2", "b1"]);
    // a2: t = 2, o = t − |overtaken| = 1; b1 was overtaken once: o = 1 + 1.
    assert_eq!(counters(&queue), [("a1", 0, 0), ("a2", 2, 1), ("b1", 1, 2)]);
    assert_eq!(queue.counter(), 3);
    queue.check_invariants();
}

#[test]
fn a_request_with_no_queued_request_of_its_group_goes_to_the_tail() {
    let mut queue = ReorderQueue::new(UNBOUNDED);
    queue.push("a1", A, 1);
    queue.push("b1", B, 1);
    assert_eq!(queue.push("c1", C, 1), 2);
    assert_eq!(counters(&queue), [("a1", 0, 0), ("b1", 1, 1), ("c1", 2, 2)]);
}

#[test]
fn a_request_whose_overtaking_would_break_some_bound_goes_to_the_tail() {
    let mut queue = ReorderQueue::new(1);
    queue.push("a1", A, 1);
    queue.push("b1", B, 1);
    queue.push("a2", A, 1);
    // b1 is already one behind its FIFO position; a3 overtaking it would make that two.
    assert_eq!(queue.push("a3", A, 1), 3);
    assert_eq!(labels(&queue), ["a1", "a2", "b1", "a3"]);
    assert_eq!(counters(&queue)[2], ("b1", 1, 2), "b1 is untouched");
    assert_eq!(
        counters(&queue)[3],
        ("a3", 3, 3),
        "a3 keeps o = t at the tail"
    );
    queue.check_invariants();
}

#[test]
fn every_request_after_the_last_of_the_group_is_checked_not_only_the_first() {
    let mut queue = ReorderQueue::new(1);
    queue.push("a1", A, 1);
    queue.push("b1", B, 1);
    queue.push("c1", C, 1);
    queue.push("b2", B, 1); // overtakes c1: c1 is now at the bound
    assert_eq!(labels(&queue), ["a1", "b1", "b2", "c1"]);
    // b1 and b2 have slack, c1 (last) has none: a2 must go to the tail.
    assert_eq!(queue.push("a2", A, 1), 4);
    assert_eq!(labels(&queue), ["a1", "b1", "b2", "c1", "a2"]);
    queue.check_invariants();
}

#[test]
fn the_request_is_inserted_after_the_last_request_of_its_group_not_the_first() {
    let mut queue = ReorderQueue::new(1);
    queue.push("a1", A, 1);
    queue.push("b1", B, 1);
    queue.push("a2", A, 1);
    queue.push("a3", A, 1); // tail: b1 at the bound
    queue.push("c1", C, 1);
    // a4's last group mate is a3 (the tail batch); only c1 follows it.
    assert_eq!(queue.push("a4", A, 1), 4);
    assert_eq!(labels(&queue), ["a1", "a2", "b1", "a3", "a4", "c1"]);
    queue.check_invariants();
}

#[test]
fn u_zero_is_fifo() {
    let mut queue = ReorderQueue::new(0);
    let pushes = [
        ("a1", A),
        ("b1", B),
        ("a2", A),
        ("c1", C),
        ("b2", B),
        ("a3", A),
    ];
    for (position, (label, group)) in pushes.into_iter().enumerate() {
        assert_eq!(
            queue.push(label, group, 1),
            position,
            "{label} goes to the tail"
        );
    }
    assert_eq!(labels(&queue), pushes.map(|(label, _)| label));
    assert!(queue.iter().all(|entry| entry.displacement() == 0));
}

#[test]
fn an_unbounded_queue_batches_every_group_in_the_order_groups_arrived() {
    let mut queue = ReorderQueue::new(UNBOUNDED);
    let pushes = [
        ("c1", C),
        ("a1", A),
        ("c2", C),
        ("b1", B),
        ("a2", A),
        ("c3", C),
        ("b2", B),
        ("a3", A),
    ];
    for (label, group) in pushes {
        queue.push(label, group, 1);
    }
    assert_eq!(
        labels(&queue),
        ["c1", "c2", "c3", "a1", "a2", "a3", "b1", "b2"]
    );
    assert_eq!(queue.groups_in_order().collect::<Vec<_>>(), [C, A, B]);
    queue.check_invariants();
}

#[test]
fn groups_in_order_lists_each_batch_once_and_a_group_again_after_a_tail_append() {
    let mut queue = ReorderQueue::new(1);
    assert_eq!(queue.groups_in_order().count(), 0);
    queue.push("a1", A, 1);
    queue.push("b1", B, 1);
    queue.push("a2", A, 1);
    queue.push("a3", A, 1); // tail
    queue.push("d1", D, 1);
    assert_eq!(queue.groups_in_order().collect::<Vec<_>>(), [A, B, A, D]);
}

#[test]
fn pop_front_serves_the_front_and_leaves_the_others_counters_alone() {
    let mut queue = ReorderQueue::new(1);
    queue.push("a1", A, 1);
    queue.push("b1", B, 1);
    queue.push("a2", A, 1);
    let first = queue.pop_front().unwrap();
    assert_eq!(
        (first.item, first.group, first.timestamp, first.reorder),
        ("a1", A, 0, 0)
    );
    assert_eq!(counters(&queue), [("a2", 2, 1), ("b1", 1, 2)]);
    assert_eq!(queue.front().map(|entry| entry.item), Some("a2"));
    assert_eq!((queue.len(), queue.queued_cost()), (2, 2));
    queue.pop_front();
    queue.pop_front();
    assert!(queue.is_empty());
    assert!(queue.pop_front().is_none());
    assert_eq!(queue.counter(), 3, "the counter never goes back");
}

#[test]
fn a_request_can_join_a_batch_that_is_being_served_at_the_front() {
    let mut queue = ReorderQueue::new(2);
    queue.push("a1", A, 1);
    queue.push("a2", A, 1);
    queue.push("b1", B, 1);
    queue.pop_front(); // a1 served; a2 is now the front
    assert_eq!(queue.push("a3", A, 1), 1);
    assert_eq!(labels(&queue), ["a2", "a3", "b1"]);
}

// ---------------------------------------------------------------------------------------------
// Costs other than one request.

#[test]
fn with_byte_costs_the_bound_limits_the_bytes_overtaking_each_request() {
    let mut queue = ReorderQueue::new(100);
    queue.push("a1", A, 10);
    queue.push("b1", B, 50);
    assert_eq!(queue.push("a2", A, 60), 1);
    // a2: t = 60, o = 60 − 50 (it overtook b1's 50 bytes); b1 is 60 bytes behind.
    assert_eq!(
        counters(&queue),
        [("a1", 0, 10 - 10), ("a2", 60, 10), ("b1", 10, 70)]
    );
    assert_eq!(
        queue.push("a3", A, 40),
        2,
        "b1 reaches exactly 100 bytes behind"
    );
    assert_eq!(queue.iter().last().unwrap().displacement(), 100);
    assert_eq!(
        queue.push("a4", A, 1),
        4,
        "one more byte would put b1 beyond u"
    );
    assert_eq!(queue.counter(), 161);
    assert_eq!(queue.queued_cost(), 161);
    queue.check_invariants();
}

#[test]
fn one_large_request_can_be_refused_where_several_small_ones_were_accepted() {
    let mut queue = ReorderQueue::new(100);
    queue.push("a1", A, 1);
    queue.push("b1", B, 1);
    assert_eq!(
        queue.push("a2", A, 101),
        3 - 1,
        "101 bytes would put b1 beyond u: tail"
    );
    assert_eq!(labels(&queue), ["a1", "b1", "a2"]);
    for label in ["a3", "a4", "a5", "a6"] {
        queue.push(label, A, 1);
    }
    // The small ones batch behind a2, which is now the last request of group A.
    assert_eq!(labels(&queue), ["a1", "b1", "a2", "a3", "a4", "a5", "a6"]);
}

#[test]
fn a_zero_cost_request_delays_no_one_so_it_joins_its_batch_even_under_u_zero() {
    let mut queue = ReorderQueue::new(0);
    queue.push("a1", A, 1);
    queue.push("b1", B, 1);
    assert_eq!(queue.push("a2", A, 0), 1);
    assert_eq!(counters(&queue), [("a1", 0, 0), ("a2", 2, 1), ("b1", 1, 1)]);
    queue.check_invariants();
}

#[test]
fn with_pelicans_500_gb_bound_and_1_gb_requests_a_batch_overtakes_500_gb_then_goes_to_the_tail() {
    const GIGABYTE: u64 = 1_000_000_000;
    let mut queue = ReorderQueue::new(500 * GIGABYTE);
    // One request for each of 48 groups (the Pelican layout), then many more for group 0.
    for group in 0..48 {
        queue.push(group, group, GIGABYTE);
    }
    for request in 0..500 {
        assert_eq!(queue.push(100 + request, 0, GIGABYTE), 1 + request as usize);
    }
    // Each of the 47 others is now exactly 500 GB behind its FIFO position.
    assert!(
        queue
            .iter()
            .skip(501)
            .all(|entry| entry.displacement() == 500 * GIGABYTE as i128)
    );
    assert_eq!(
        queue.push(1_000, 0, GIGABYTE),
        548,
        "a 501st GB would break the bound: tail"
    );
    queue.check_invariants();
}

#[test]
fn the_request_model_costs_one_per_request_whatever_its_size() {
    assert_eq!(CostModel::Requests.cost(0), 1);
    assert_eq!(CostModel::Requests.cost(1 << 40), 1);
}

#[test]
fn the_byte_model_costs_the_bytes_and_at_least_one() {
    assert_eq!(CostModel::Bytes.cost(1_234_567), 1_234_567);
    assert_eq!(CostModel::Bytes.cost(0), 1);
    assert_eq!(CostModel::Bytes.cost(u64::MAX), u64::MAX);
}

#[test]
fn the_estimated_time_model_costs_microseconds_at_the_given_bandwidth_rounded_up() {
    let disk = CostModel::EstimatedTime {
        bytes_per_second: NonZeroU64::new(105_000_000).unwrap(),
    };
    assert_eq!(
        disk.cost(105_000_000),
        1_000_000,
        "one second of a 105 MB/s disk"
    );
    // 1 GiB at 105 MB/s is 10,226,112.6 µs.
    assert_eq!(disk.cost(1 << 30), 10_226_113);
    assert_eq!(disk.cost(1), 1);
    assert_eq!(disk.cost(0), 1);
    let slow = CostModel::EstimatedTime {
        bytes_per_second: NonZeroU64::new(1).unwrap(),
    };
    assert_eq!(
        slow.cost(u64::MAX),
        u64::MAX,
        "saturates rather than wrapping"
    );
}

// ---------------------------------------------------------------------------------------------
// Cancellation.

#[test]
fn cancelling_an_overtaker_gives_the_requests_it_overtook_their_slack_back() {
    let mut queue = ReorderQueue::new(1);
    queue.push("a1", A, 1);
    queue.push("b1", B, 1);
    queue.push("a2", A, 1);
    let removed = queue.remove_where(|entry| entry.item == "a2");
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].item, "a2");
    assert_eq!(counters(&queue), [("a1", 0, 0), ("b1", 1, 1)]);
    // b1 is back at its FIFO position, so a3 may overtake it again.
    assert_eq!(queue.push("a3", A, 1), 1);
    queue.check_invariants();
}

#[test]
fn cancelling_a_request_that_was_overtaken_takes_back_the_credit_of_those_that_overtook_it() {
    let mut queue = ReorderQueue::new(1);
    queue.push("w", A, 1);
    queue.push("z", B, 1);
    queue.push("j", C, 1);
    queue.push("i", B, 1); // overtakes j: i is one ahead of its FIFO position
    assert_eq!(labels(&queue), ["w", "z", "i", "j"]);
    assert_eq!(queue.iter().nth(2).unwrap().displacement(), -1);
    let removed = queue.remove_where(|entry| entry.item == "j" || entry.item == "z");
    assert_eq!(
        removed.iter().map(|entry| entry.item).collect::<Vec<_>>(),
        ["z", "j"]
    );
    // With z and j gone, i overtook no one: back at its FIFO position.
    assert_eq!(counters(&queue), [("w", 0, 0), ("i", 3, 3)]);
    queue.push("a1", A, 1); // overtakes i: i at the bound
    // Had i kept its credit for overtaking j, a2 could overtake it too and i would wait behind two
    // later requests with u = 1.
    assert_eq!(queue.push("a2", A, 1), 3);
    assert_eq!(labels(&queue), ["w", "a1", "i", "a2"]);
    queue.check_invariants();
}

#[test]
fn cancelling_nothing_changes_nothing() {
    let mut queue = ReorderQueue::new(3);
    for (label, group) in [("a1", A), ("b1", B), ("a2", A), ("c1", C), ("b2", B)] {
        queue.push(label, group, 2);
    }
    let before = counters(&queue);
    assert!(queue.remove_where(|_| false).is_empty());
    assert_eq!(counters(&queue), before);
}

// ---------------------------------------------------------------------------------------------
// Properties against a naive reference.

/// The reference: a Vec of (group, cost, t, o), following the paper's prose step by step, with
/// signed arithmetic and an explicit enqueue sequence (the queue under test uses neither).
#[derive(Clone, Debug, PartialEq, Eq)]
struct ReferenceRequest {
    id: u64,
    group: u32,
    cost: i128,
    t: i128,
    o: i128,
    sequence: u64,
}

struct Reference {
    requests: Vec<ReferenceRequest>,
    t: i128,
    u: i128,
    pushed: u64,
}

impl Reference {
    fn new(u: u64) -> Self {
        Reference {
            requests: Vec::new(),
            t: 0,
            u: i128::from(u),
            pushed: 0,
        }
    }

    fn push(&mut self, id: u64, group: u32, cost: u64) -> usize {
        let cost = i128::from(cost);
        // "it is tagged with a timestamp t_r = t and is assigned a reordering counter o_r = t"
        let mut r = ReferenceRequest {
            id,
            group,
            cost,
            t: self.t,
            o: self.t,
            sequence: self.pushed,
        };
        // "a timestamp counter t that is incremented each time an operation is queued" (by cost)
        self.t += cost;
        self.pushed += 1;
        // "finds l, the last operation in the same group as r"
        let mut l = None;
        for (index, request) in self.requests.iter().enumerate() {
            if request.group == group {
                l = Some(index);
            }
        }
        // "If no such operation exists, r is appended to the tail of the queue"
        let Some(l) = l else {
            self.requests.push(r);
            return self.requests.len() - 1;
        };
        // "It considers all operations i following l. If o_i + 1 − t_i ≤ u no longer holds for
        // any i, then r is appended to the tail of the queue."
        let mut breaks = false;
        for i in &self.requests[l + 1..] {
            if i.o + cost - i.t > self.u {
                breaks = true;
            }
        }
        if breaks {
            self.requests.push(r);
            return self.requests.len() - 1;
        }
        // "Otherwise all o_i counters are incremented by one, and r is inserted after l with
        // o_r = t_r − |i|"
        let mut overtaken = 0;
        for i in &mut self.requests[l + 1..] {
            i.o += cost;
            overtaken += i.cost;
        }
        r.o = r.t - overtaken;
        self.requests.insert(l + 1, r);
        l + 1
    }

    fn pop(&mut self) -> Option<ReferenceRequest> {
        if self.requests.is_empty() {
            None
        } else {
            Some(self.requests.remove(0))
        }
    }

    /// Removes the requests with the given ids one at a time, each time correcting every other
    /// request as if the removed one had never been enqueued.
    fn cancel(&mut self, ids: &BTreeSet<u64>) {
        while let Some(position) = self.requests.iter().position(|r| ids.contains(&r.id)) {
            let x = self.requests.remove(position);
            for (index, a) in self.requests.iter_mut().enumerate() {
                let x_ahead_of_a = position <= index;
                if x.sequence > a.sequence && x_ahead_of_a {
                    a.o -= x.cost;
                }
                if x.sequence < a.sequence && !x_ahead_of_a {
                    a.o += x.cost;
                }
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Operation {
    Push {
        group: u32,
        cost: u64,
    },
    Pop,
    /// Cancel one queued request, chosen by index.
    Cancel(Index),
    /// Cancel every queued request whose id ≡ residue (mod modulus): several at once.
    CancelEvery {
        modulus: u64,
        residue: u64,
    },
}

fn operations(cost: BoxedStrategy<u64>) -> impl Strategy<Value = Vec<Operation>> {
    let operation = prop_oneof![
        12 => (0..5u32, cost).prop_map(|(group, cost)| Operation::Push { group, cost }),
        5 => Just(Operation::Pop),
        1 => any::<Index>().prop_map(Operation::Cancel),
        1 => (2..5u64, 0..5u64).prop_map(|(modulus, residue)| Operation::CancelEvery {
            modulus,
            residue: residue % modulus
        }),
    ];
    prop::collection::vec(operation, 0..120)
}

fn small_costs() -> BoxedStrategy<u64> {
    prop_oneof![1 => Just(0u64), 10 => 1..=6u64].boxed()
}

fn small_bound() -> BoxedStrategy<u64> {
    prop_oneof![2 => Just(0u64), 6 => 1..=24u64, 2 => Just(UNBOUNDED)].boxed()
}

/// Costs like bytes of blobs: 1 KiB to 64 GiB, and the odd empty request.
fn byte_costs() -> BoxedStrategy<u64> {
    prop_oneof![1 => Just(0u64), 10 => 1u64 << 10..=1u64 << 36].boxed()
}

fn byte_bound() -> BoxedStrategy<u64> {
    prop_oneof![1 => Just(0u64), 6 => 1u64 << 20..=1u64 << 40, 1 => Just(UNBOUNDED)].boxed()
}

fn run(
    cases: u32,
    bound: BoxedStrategy<u64>,
    cost: BoxedStrategy<u64>,
    property: impl Fn(u64, &[Operation]) -> Result<(), TestCaseError>,
) {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4_000,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let strategy = (bound, operations(cost));
    if let Err(error) = runner.run(&strategy, |(bound, operations)| {
        property(bound, &operations)
    }) {
        panic!("{error}");
    }
}

/// The ids an operation cancels, given the queued ids front first.
fn cancelled_ids(operation: &Operation, queued: &[u64]) -> BTreeSet<u64> {
    match operation {
        Operation::Cancel(index) if !queued.is_empty() => {
            BTreeSet::from([queued[index.index(queued.len())]])
        }
        Operation::CancelEvery { modulus, residue } => queued
            .iter()
            .copied()
            .filter(|id| id % modulus == *residue)
            .collect(),
        _ => BTreeSet::new(),
    }
}

fn same_as_reference(bound: u64, operations: &[Operation]) -> Result<(), TestCaseError> {
    let mut queue = ReorderQueue::new(bound);
    let mut reference = Reference::new(bound);
    for (step, operation) in operations.iter().enumerate() {
        match operation {
            Operation::Push { group, cost } => {
                let id = step as u64;
                let position = queue.push(id, *group, *cost);
                let reference_position = reference.push(id, *group, *cost);
                prop_assert_eq!(position, reference_position, "step {}: push position", step);
            }
            Operation::Pop => {
                let popped = queue.pop_front().map(|e| (e.item, e.timestamp, e.reorder));
                let expected = reference.pop().map(|r| (r.id, r.t as u64, r.o as u64));
                prop_assert_eq!(popped, expected, "step {}: pop", step);
            }
            Operation::Cancel(_) | Operation::CancelEvery { .. } => {
                let queued: Vec<u64> = queue.iter().map(|entry| entry.item).collect();
                let ids = cancelled_ids(operation, &queued);
                let removed: Vec<u64> = queue
                    .remove_where(|entry| ids.contains(&entry.item))
                    .into_iter()
                    .map(|entry| entry.item)
                    .collect();
                let expected: Vec<u64> = queued.into_iter().filter(|id| ids.contains(id)).collect();
                prop_assert_eq!(removed, expected, "step {}: removed, front first", step);
                reference.cancel(&ids);
            }
        }
        let actual: Vec<(u64, u32, u64, u64, u64)> = queue
            .iter()
            .map(|e| (e.item, e.group, e.cost, e.timestamp, e.reorder))
            .collect();
        let expected: Vec<(u64, u32, u64, u64, u64)> = reference
            .requests
            .iter()
            .map(|r| (r.id, r.group, r.cost as u64, r.t as u64, r.o as u64))
            .collect();
        prop_assert_eq!(actual, expected, "step {}: order and counters", step);
        prop_assert_eq!(
            i128::from(queue.counter()),
            reference.t,
            "step {}: counter",
            step
        );
        let reference_cost: i128 = reference.requests.iter().map(|r| r.cost).sum();
        prop_assert_eq!(i128::from(queue.queued_cost()), reference_cost);
        for r in &reference.requests {
            prop_assert!(
                r.o - r.t <= reference.u,
                "step {}: o − t > u for {}",
                step,
                r.id
            );
        }
        queue.check_invariants();
    }
    Ok(())
}

#[test]
fn the_queue_matches_a_naive_reference_of_the_papers_prose_after_every_operation() {
    run(1_000, small_bound(), small_costs(), same_as_reference);
}

#[test]
fn with_byte_sized_costs_the_queue_matches_the_reference_after_every_operation() {
    run(500, byte_bound(), byte_costs(), same_as_reference);
}

/// Measured from the outside: each request's enqueue order and cost, and the order of service.
fn delay_bounded(bound: u64, operations: &[Operation]) -> Result<(), TestCaseError> {
    let mut queue = ReorderQueue::new(bound);
    // id → cost; ids are enqueue order.
    let mut cost_of: BTreeMap<u64, u64> = BTreeMap::new();
    let mut served: Vec<u64> = Vec::new();
    let served_drain = operations.len();
    let steps = operations
        .iter()
        .map(Some)
        .chain(std::iter::repeat_n(None, served_drain));
    for (step, operation) in steps.enumerate() {
        match operation {
            Some(Operation::Push { group, cost }) => {
                cost_of.insert(step as u64, *cost);
                queue.push(step as u64, *group, *cost);
            }
            Some(Operation::Pop) | None => {
                if let Some(entry) = queue.pop_front() {
                    served.push(entry.item);
                }
            }
            Some(operation) => {
                let queued: Vec<u64> = queue.iter().map(|entry| entry.item).collect();
                let ids = cancelled_ids(operation, &queued);
                queue.remove_where(|entry| ids.contains(&entry.item));
                for id in ids {
                    cost_of.remove(&id);
                }
            }
        }
        // The service order so far and from here: served, then queued front first.
        let order: Vec<u64> = served
            .iter()
            .copied()
            .chain(queue.iter().map(|entry| entry.item))
            .collect();
        for (place, &a) in order.iter().enumerate() {
            // Later requests (cancelled ones excluded) served or queued ahead of a.
            let later_ahead: u64 = order[..place]
                .iter()
                .filter(|&&x| x > a)
                .map(|x| cost_of[x])
                .sum();
            prop_assert!(
                later_ahead <= bound,
                "step {}: request {} waits behind {} of later requests, u = {}",
                step,
                a,
                later_ahead,
                bound
            );
        }
        for (place, entry) in queue.iter().enumerate() {
            let a = entry.item;
            let place = served.len() + place;
            let later_ahead: i128 = order[..place]
                .iter()
                .filter(|&&x| x > a)
                .map(|x| i128::from(cost_of[x]))
                .sum();
            let earlier_behind: i128 = order[place + 1..]
                .iter()
                .filter(|&&x| x < a)
                .map(|x| i128::from(cost_of[x]))
                .sum();
            prop_assert_eq!(
                entry.displacement(),
                later_ahead - earlier_behind,
                "step {}: o − t of request {} is not its measured movement",
                step,
                a
            );
        }
    }
    prop_assert!(queue.is_empty());
    Ok(())
}

#[test]
fn no_request_is_served_after_more_than_u_cost_of_requests_enqueued_after_it() {
    run(1_000, small_bound(), small_costs(), delay_bounded);
}

#[test]
fn with_byte_sized_costs_no_request_waits_behind_more_than_u_bytes_of_later_requests() {
    run(300, byte_bound(), byte_costs(), delay_bounded);
}

#[test]
fn u_zero_serves_positive_cost_requests_in_fifo_order() {
    let positive = (1..=6u64).boxed();
    run(300, Just(0u64).boxed(), positive, |_, operations| {
        let mut queue = ReorderQueue::new(0);
        for (step, operation) in operations.iter().enumerate() {
            if let Operation::Push { group, cost } = operation {
                queue.push(step as u64, *group, *cost);
            }
        }
        let order: Vec<u64> = queue.iter().map(|entry| entry.item).collect();
        prop_assert!(order.is_sorted(), "not FIFO: {:?}", order);
        Ok(())
    });
}

#[test]
fn an_unbounded_queue_holds_each_group_as_one_batch_in_group_arrival_order() {
    run(
        300,
        Just(UNBOUNDED).boxed(),
        small_costs(),
        |_, operations| {
            let mut queue = ReorderQueue::new(UNBOUNDED);
            let mut popped = false;
            for (step, operation) in operations.iter().enumerate() {
                match operation {
                    Operation::Push { group, cost } => {
                        queue.push(step as u64, *group, *cost);
                    }
                    Operation::Pop => {
                        popped |= queue.pop_front().is_some();
                    }
                    _ => {}
                }
                let batches: Vec<u32> = queue.groups_in_order().collect();
                let distinct: BTreeSet<u32> = batches.iter().copied().collect();
                prop_assert_eq!(
                    batches.len(),
                    distinct.len(),
                    "a group split: {:?}",
                    batches
                );
                // Until something is served (which can leave a batch's later requests at the front),
                // batches are in the order of each group's first request.
                if !popped {
                    let mut first_of_group: BTreeMap<u32, u64> = BTreeMap::new();
                    for entry in queue.iter() {
                        first_of_group.entry(entry.group).or_insert(entry.item);
                    }
                    let firsts: Vec<u64> =
                        batches.iter().map(|group| first_of_group[group]).collect();
                    prop_assert!(
                        firsts.is_sorted(),
                        "batches out of arrival order: {:?}",
                        batches
                    );
                }
                // Within a batch, enqueue order.
                for pair in queue.iter().collect::<Vec<_>>().windows(2) {
                    if pair[0].group == pair[1].group {
                        prop_assert!(pair[0].item < pair[1].item);
                    }
                }
            }
            Ok(())
        },
    );
}
