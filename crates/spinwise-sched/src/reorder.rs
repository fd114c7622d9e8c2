//! Pelican's reordering queue (Pelican §2.3, "Reordering"): one queue of requests that batches
//! requests for the same group behind each other, so one spin-up serves many of them, while
//! bounding how far any request falls behind its first-in-first-out position.
//!
//! # The paper's algorithm, as implemented here
//!
//! The queue keeps a counter t. A request r is tagged with a timestamp t_r (the counter when r
//! is enqueued) and a reordering counter o_r, initially t_r. o_a − t_a is how far a has moved
//! compared with a FIFO queue: positive when later requests were put ahead of it, negative when
//! it was put ahead of earlier ones. The bound u must hold for every queued request a:
//! o_a − t_a ≤ u. On inserting r:
//!
//! 1. find l, the last queued request of r's group; if there is none, append r at the tail;
//! 2. otherwise, if for any request i after l, o_i + cost(r) − t_i > u, append r at the tail;
//! 3. otherwise add cost(r) to o_i for every request i after l, insert r right after l and set
//!    o_r = t_r − Σ cost(i) over those overtaken requests.
//!
//! # Where it generalises the paper
//!
//! - **Cost instead of "one".** The paper counts requests (every o_i grows by one, the counter by
//!   one per request) and notes that this suits uniform blob sizes only; for non-uniform sizes it
//!   measures u in estimated wall-clock time. Here every request carries a cost in one unit
//!   chosen by the caller ([`CostModel`]): requests (cost 1, exactly the paper), bytes, or
//!   estimated service time in microseconds (bytes / bandwidth). The counter advances by cost(r)
//!   on each insert, overtaking adds cost(r) to each overtaken request, and o_r subtracts the
//!   overtaken costs. The bound u is in the same unit (Pelican's evaluation uses u = 500 GB).
//!   The paper's time estimate also counts the spin-ups ahead of a request; those depend on the
//!   order that reordering itself is choosing, so a per-request cost cannot include them. A caller
//!   that wants a fixed per-request overhead (a seek) adds it to the cost.
//! - **Cancellation.** The paper has no cancelled requests. [`ReorderQueue::remove_where`]
//!   removes requests and corrects the others' counters as if the removed ones had never been
//!   enqueued: a request they overtook gets its slack back, a request that overtook them loses the
//!   credit it earned by jumping ahead of them. Keeping the counters unchanged instead would still
//!   satisfy o − t ≤ u, but a request that had overtaken a cancelled one could then be overtaken
//!   by more than u (tests/it/reorder.rs, `cancelling_a_request_that_was_overtaken_takes_back_the_
//!   credit_of_those_that_overtook_it`), breaking the delay guarantee below.
//!
//! # Invariants
//!
//! - (bound) o_a − t_a ≤ u for every queued request a; asserted in debug builds after every push
//!   and removal.
//! - (meaning) o_a − t_a = G(a) − E(a), where G(a) is the total cost of requests enqueued after a
//!   and served or queued ahead of it, and E(a) the total cost of requests enqueued before a and
//!   still queued behind it (cancelled requests count in neither).
//! - (delay) From the two: G(a) ≤ u for every request, served or queued — no request waits
//!   behind more than u cost units of later requests. (Take b, the earliest-enqueued request at or
//!   behind a: E(b) = 0 and G(b) ≥ G(a), so G(a) ≤ o_b − t_b ≤ u.) With u = 0 and positive costs
//!   the queue is FIFO; with u = [`UNBOUNDED`] every group's requests form one batch, batches in
//!   the order their groups first arrived.
//!
//! [`ReorderQueue::check_invariants`] checks (bound) and the part of (meaning) the queue can see.
//!
//! # Representation and cost of operations
//!
//! The queue is kept as **runs**: maximal stretches of consecutive requests of one group, front
//! first, each with its own storage. A push only ever adds a request at the end of its group's
//! last run or as a new run at the tail, and a pop only takes from the front run, so no request
//! is moved in memory once stored. Overtaking adds the same cost to every request of every run
//! behind the group's last run, so each run keeps that as one lazy **offset** (a request's o is
//! its stored base plus its run's offset), its total cost, and its **headroom**: the least
//! t_i + u − base_i over its requests, so that the bound check "o_i + cost ≤ t_i + u for every
//! request i behind l" is "headroom − offset ≥ cost" for every run behind l's. Popping the front
//! run's requests does not raise its headroom; it need not: the front run is never behind any
//! group's last run (it would be the group's last run, or come before it).
//!
//! [`ReorderQueue::push`] is therefore O(runs behind the group's last run), not O(queue length):
//! on the pelican rack at 8 req/s a class queues up to 1,000 requests of 12 groups, and the
//! linear scan and mid-queue insert this replaced were 11–22% of a simulated day in profiles
//! (issue 32; 2.7% after). [`ReorderQueue::pop_front`] is O(1). A maximum queue depth is the scheduler's business (Pelican: 1,000 requests per class),
//! not this queue's. [`ReorderQueue::remove_where`] is O(queue length × removed requests): it lays
//! the queue out flat, corrects the counters there and rebuilds the runs. Reading requests
//! ([`ReorderQueue::iter`], [`ReorderQueue::front`]) yields copies with their counters brought up
//! to date. Every operation gives exactly the positions and counters of the paper's algorithm on
//! one flat list (tests/it/reorder.rs compares both with a naive reference and with the flat
//! implementation this replaced, on random operations).

use spinwise_model::GroupIndex;
use std::collections::VecDeque;
use std::num::NonZeroU64;

/// The bound for Pelican's u = ∞: reordering is never refused, every group is one batch.
pub const UNBOUNDED: u64 = u64::MAX;

const MICROSECONDS_PER_SECOND: u128 = 1_000_000;

/// The unit a queue measures cost (and its bound u) in. One queue must use one model for every
/// request and for its bound.
///
/// Every request costs at least one unit: no request is free to serve (it needs its group spinning
/// and a turn at the disks), and a zero cost would let a request overtake others even under u = 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostModel {
    /// Cost 1 per request: the paper's formulation, for uniform blob sizes.
    Requests,
    /// Cost = the request's bytes.
    Bytes,
    /// Cost = the estimated service time in microseconds: bytes / bandwidth, rounded up.
    EstimatedTime { bytes_per_second: NonZeroU64 },
}

impl CostModel {
    /// The cost of a request moving `bytes`, in this model's unit (requests, bytes or
    /// microseconds); at least 1. A time too long for a u64 of microseconds (half a million years)
    /// saturates.
    pub fn cost(self, bytes: u64) -> u64 {
        match self {
            CostModel::Requests => 1,
            CostModel::Bytes => bytes.max(1),
            CostModel::EstimatedTime { bytes_per_second } => {
                let microseconds = (u128::from(bytes) * MICROSECONDS_PER_SECOND)
                    .div_ceil(u128::from(bytes_per_second.get()));
                u64::try_from(microseconds).unwrap_or(u64::MAX).max(1)
            }
        }
    }
}

/// One queued request with its reordering bookkeeping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<T> {
    pub item: T,
    pub group: GroupIndex,
    /// In the queue's cost unit.
    pub cost: u64,
    /// t_r: the queue's counter when the request was enqueued. Timestamps of requests with
    /// positive cost are distinct; their intervals [t, t + cost) never overlap.
    pub timestamp: u64,
    /// o_r: the reordering counter.
    pub reorder: u64,
}

impl<T> Entry<T> {
    /// o − t: how far the request is behind its FIFO position (positive: that much cost of later
    /// requests goes first, net of earlier requests it overtook) or ahead of it (negative).
    pub fn displacement(&self) -> i128 {
        i128::from(self.reorder) - i128::from(self.timestamp)
    }
}

/// A queued request as a run stores it: its reordering counter o is `reorder_base` plus its
/// run's offset (module documentation, "Representation").
#[derive(Clone, Debug)]
struct Stored<T> {
    item: T,
    cost: u64,
    timestamp: u64,
    /// o minus its run's offset when the request was stored: negative when the run had been
    /// overtaken by more than o by then.
    reorder_base: i128,
}

/// A maximal stretch of consecutive queued requests of one group.
#[derive(Clone, Debug)]
struct Run<T> {
    group: GroupIndex,
    /// Never empty while the run is in the queue.
    entries: VecDeque<Stored<T>>,
    /// Cost added to the reordering counter of every request of the run since it was stored.
    offset: u64,
    /// Σ cost over the run's requests.
    cost: u64,
    /// min over the requests stored in the run of t + u − reorder_base; the run's slack, the most
    /// any request of it may still be overtaken by, is `headroom − offset`. Exact for every run
    /// but the front one, whose pops may have removed its minimum (the front run is never
    /// checked: module documentation).
    headroom: i128,
}

impl<T> Run<T> {
    fn entry(&self, stored: &Stored<T>) -> (u64, u64, u64) {
        (stored.cost, stored.timestamp, self.reorder(stored))
    }

    /// o of `stored`, a request of this run.
    fn reorder(&self, stored: &Stored<T>) -> u64 {
        u64::try_from(stored.reorder_base + i128::from(self.offset))
            .expect("a reordering counter lies within the queue's counter")
    }

    /// The least cost-units any request of the run may still be overtaken by.
    fn slack(&self) -> i128 {
        self.headroom - i128::from(self.offset)
    }

    /// Stores a request at the run's end with reordering counter `reorder`.
    fn append(&mut self, item: T, cost: u64, timestamp: u64, reorder: u64, bound: u64) {
        let reorder_base = i128::from(reorder) - i128::from(self.offset);
        let headroom = i128::from(timestamp) + i128::from(bound) - reorder_base;
        self.headroom = self.headroom.min(headroom);
        self.cost = self.cost.checked_add(cost).expect("queued costs overflow");
        self.entries.push_back(Stored {
            item,
            cost,
            timestamp,
            reorder_base,
        });
    }
}

/// Pelican's reordering queue; see the module documentation.
#[derive(Clone, Debug)]
pub struct ReorderQueue<T> {
    /// Front first; adjacent runs are of different groups.
    runs: VecDeque<Run<T>>,
    /// Storage of emptied runs, kept to be reused.
    spare: Vec<VecDeque<Stored<T>>>,
    /// Requests queued: Σ over runs of their lengths.
    len: usize,
    /// u, in the cost unit.
    bound: u64,
    /// t: the timestamp the next request gets.
    counter: u64,
    /// Σ cost over queued requests.
    queued_cost: u64,
}

impl<T> ReorderQueue<T> {
    /// An empty queue with reordering bound u = `bound`, in the unit of the costs that will be
    /// pushed. `0` is FIFO, [`UNBOUNDED`] is the paper's u = ∞.
    pub fn new(bound: u64) -> Self {
        ReorderQueue {
            runs: VecDeque::new(),
            spare: Vec::new(),
            len: 0,
            bound,
            counter: 0,
            queued_cost: 0,
        }
    }

    /// Enqueues `item` for `group` at `cost`, following the paper's insertion rule, and returns
    /// the position it was inserted at (0 is the front). O(runs behind the group's last run).
    ///
    /// Panics if the counter would pass `u64::MAX` (16 EiB pushed through one queue in bytes).
    pub fn push(&mut self, item: T, group: GroupIndex, cost: u64) -> usize {
        let timestamp = self.counter;
        self.counter = timestamp
            .checked_add(cost)
            .expect("the reordering counter overflows u64");
        let tail = self.len;
        let position = match self.runs.iter().rposition(|run| run.group == group) {
            // Every request behind l may take cost(r) more: o_i + cost ≤ t_i + u.
            Some(last)
                if self
                    .runs
                    .range(last + 1..)
                    .all(|run| run.slack() >= i128::from(cost)) =>
            {
                let mut overtaken_cost = 0u64;
                let mut overtaken = 0usize;
                for run in self.runs.range_mut(last + 1..) {
                    // o_i ≤ t_i + u and o_i stays within the counter (invariant (meaning)).
                    run.offset = run
                        .offset
                        .checked_add(cost)
                        .expect("an overtaken request's reordering counter overflows");
                    overtaken_cost = overtaken_cost
                        .checked_add(run.cost)
                        .expect("overtaken costs overflow");
                    overtaken += run.entries.len();
                }
                // The overtaken requests were enqueued before r with disjoint intervals
                // [t_i, t_i + cost_i) below t_r, so their costs sum to at most t_r.
                let reorder = timestamp
                    .checked_sub(overtaken_cost)
                    .expect("overtaken costs exceed the new request's timestamp");
                self.runs[last].append(item, cost, timestamp, reorder, self.bound);
                tail - overtaken
            }
            // No request of the group is queued, or overtaking would break the bound: the tail.
            _ => {
                self.append_at_tail(item, group, cost, timestamp, timestamp);
                tail
            }
        };
        self.len += 1;
        self.queued_cost += cost;
        debug_assert!(self.bound_holds(), "push broke the reordering bound");
        position
    }

    /// Stores a request behind every other, in the tail run if it is of `group` (keeping runs
    /// maximal), else in a new run.
    fn append_at_tail(
        &mut self,
        item: T,
        group: GroupIndex,
        cost: u64,
        timestamp: u64,
        reorder: u64,
    ) {
        if self.runs.back().is_none_or(|run| run.group != group) {
            let entries = self.spare.pop().unwrap_or_default();
            self.runs.push_back(Run {
                group,
                entries,
                offset: 0,
                cost: 0,
                headroom: i128::MAX,
            });
        }
        let run = self.runs.back_mut().expect("just ensured");
        run.append(item, cost, timestamp, reorder, self.bound);
    }

    /// Removes and returns the request at the front: the next to serve. O(1).
    pub fn pop_front(&mut self) -> Option<Entry<T>> {
        let run = self.runs.front_mut()?;
        let stored = run
            .entries
            .pop_front()
            .expect("runs in the queue are not empty");
        let reorder = run.reorder(&stored);
        let group = run.group;
        run.cost -= stored.cost;
        if run.entries.is_empty() {
            let run = self.runs.pop_front().expect("the front run");
            self.spare.push(run.entries);
        }
        self.len -= 1;
        self.queued_cost -= stored.cost;
        Some(Entry {
            item: stored.item,
            group,
            cost: stored.cost,
            timestamp: stored.timestamp,
            reorder,
        })
    }

    /// A copy of the request at the front, its counter up to date.
    pub fn front(&self) -> Option<Entry<T>>
    where
        T: Clone,
    {
        self.iter().next()
    }

    /// The group of the request at the front.
    pub fn front_group(&self) -> Option<GroupIndex> {
        self.runs.front().map(|run| run.group)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies of the queued requests, front (next to serve) first, their counters up to date.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Entry<T>> + '_
    where
        T: Clone,
    {
        self.runs.iter().flat_map(|run| {
            run.entries.iter().map(move |stored| {
                let (cost, timestamp, reorder) = run.entry(stored);
                Entry {
                    item: stored.item.clone(),
                    group: run.group,
                    cost,
                    timestamp,
                    reorder,
                }
            })
        })
    }

    /// (group, cost, timestamp, reorder) of every queued request, front first.
    fn counters(&self) -> impl Iterator<Item = (GroupIndex, u64, u64, u64)> + '_ {
        self.runs.iter().flat_map(|run| {
            run.entries.iter().map(move |stored| {
                let (cost, timestamp, reorder) = run.entry(stored);
                (run.group, cost, timestamp, reorder)
            })
        })
    }

    /// u, in the cost unit.
    pub fn bound(&self) -> u64 {
        self.bound
    }

    /// t: the timestamp the next pushed request will get (the total cost ever pushed).
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// Σ cost over queued requests, in the cost unit.
    pub fn queued_cost(&self) -> u64 {
        self.queued_cost
    }

    /// The group of each batch (maximal run of same-group requests), front first: the order in
    /// which groups would spin up if the queue were served as it stands. A group appears more than
    /// once when the bound sent some of its requests to the tail.
    pub fn groups_in_order(&self) -> impl Iterator<Item = GroupIndex> + '_ {
        self.runs.iter().map(|run| run.group)
    }

    /// Removes every request for which `cancelled` is true (cancelled requests), returning them
    /// front first, and corrects the remaining counters as if the removed requests had never been
    /// enqueued (module documentation, "Cancellation"). The bound keeps holding: with the
    /// corrections, o_a − t_a = G(a) − E(a) ≤ G(a) ≤ u. O(queue length × removed requests).
    pub fn remove_where(&mut self, mut cancelled: impl FnMut(&Entry<T>) -> bool) -> Vec<Entry<T>> {
        let mut kept = Vec::with_capacity(self.len);
        let mut removed = Vec::new();
        // (position among all entries, timestamp, cost) of each removed request.
        let mut removed_at = Vec::new();
        let runs = std::mem::take(&mut self.runs);
        let flat = runs.into_iter().flat_map(|mut run| {
            let (group, offset) = (run.group, run.offset);
            let entries = std::mem::take(&mut run.entries);
            entries.into_iter().map(move |stored| Entry {
                reorder: u64::try_from(stored.reorder_base + i128::from(offset))
                    .expect("a reordering counter lies within the queue's counter"),
                item: stored.item,
                group,
                cost: stored.cost,
                timestamp: stored.timestamp,
            })
        });
        for (position, entry) in flat.enumerate() {
            if cancelled(&entry) {
                removed_at.push((position, entry.timestamp, entry.cost));
                self.queued_cost -= entry.cost;
                removed.push(entry);
            } else {
                kept.push((position, entry));
            }
        }
        self.len = 0;
        for (position, mut entry) in kept {
            for &(removed_position, removed_timestamp, removed_cost) in &removed_at {
                // A zero-cost request moved nobody. For a positive cost, "enqueued before a"
                // is exactly t_x < t_a, since intervals [t, t + cost) are disjoint.
                if removed_cost == 0 {
                    continue;
                }
                let enqueued_before = removed_timestamp < entry.timestamp;
                if removed_position < position && !enqueued_before {
                    // A later request ahead of a: it counted in G(a).
                    entry.reorder = entry
                        .reorder
                        .checked_sub(removed_cost)
                        .expect("a cancelled overtaker is not counted in the counter");
                } else if removed_position > position && enqueued_before {
                    // An earlier request behind a: it counted in E(a).
                    entry.reorder = entry
                        .reorder
                        .checked_add(removed_cost)
                        .expect("reordering counter overflows on cancellation");
                }
            }
            self.append_at_tail(
                entry.item,
                entry.group,
                entry.cost,
                entry.timestamp,
                entry.reorder,
            );
            self.len += 1;
        }
        debug_assert!(
            self.bound_holds(),
            "cancellation broke the reordering bound"
        );
        removed
    }

    /// Panics unless the queue's invariants hold: (bound) o_a − t_a ≤ u for every queued a; every
    /// timestamp interval [t, t + cost) lies below the counter and positive-cost intervals are
    /// disjoint; queued costs add up; and (meaning) o_a − t_a + E(a) − G_queued(a) ≥ 0, the cost of
    /// served requests that overtook a. Also the runs' books: no run empty, adjacent runs of
    /// different groups, each run's cost its requests' and its headroom their minimum (at most
    /// it for the front run). O(queue length²): for tests and debugging.
    pub fn check_invariants(&self) {
        assert!(self.bound_holds(), "a request exceeds the reordering bound");
        let mut length = 0usize;
        for (index, run) in self.runs.iter().enumerate() {
            assert!(!run.entries.is_empty(), "run {index} is empty");
            length += run.entries.len();
            if index > 0 {
                assert_ne!(
                    self.runs[index - 1].group,
                    run.group,
                    "runs {} and {index} are of one group",
                    index - 1
                );
            }
            let cost: u64 = run.entries.iter().map(|stored| stored.cost).sum();
            assert_eq!(cost, run.cost, "run {index}'s cost books disagree");
            let headroom = run
                .entries
                .iter()
                .map(|stored| {
                    i128::from(stored.timestamp) + i128::from(self.bound) - stored.reorder_base
                })
                .min()
                .expect("not empty");
            if index == 0 {
                assert!(
                    run.headroom <= headroom,
                    "the front run's headroom is too high"
                );
            } else {
                assert_eq!(
                    run.headroom, headroom,
                    "run {index}'s headroom is not its minimum"
                );
            }
        }
        assert_eq!(length, self.len, "queue length books disagree");
        let entries: Vec<(GroupIndex, u64, u64, u64)> = self.counters().collect();
        let mut queued_cost = 0u64;
        for (position, &(_, a_cost, a_timestamp, a_reorder)) in entries.iter().enumerate() {
            queued_cost += a_cost;
            assert!(
                u128::from(a_timestamp) + u128::from(a_cost) <= u128::from(self.counter),
                "request at {position} was enqueued beyond the counter"
            );
            assert!(
                a_reorder <= self.counter,
                "request at {position} has a reordering counter beyond the counter"
            );
            let mut later_ahead = 0i128;
            let mut earlier_behind = 0i128;
            for (other_position, &(_, x_cost, x_timestamp, _)) in entries.iter().enumerate() {
                if other_position == position || x_cost == 0 {
                    continue;
                }
                let (a_start, x_start) = (u128::from(a_timestamp), u128::from(x_timestamp));
                let overlaps = x_start < a_start + u128::from(a_cost)
                    && a_start < x_start + u128::from(x_cost);
                assert!(
                    a_cost == 0 || !overlaps,
                    "requests at {position} and {other_position} have overlapping timestamps"
                );
                let enqueued_before = x_timestamp < a_timestamp;
                if other_position < position && !enqueued_before {
                    later_ahead += i128::from(x_cost);
                } else if other_position > position && enqueued_before {
                    earlier_behind += i128::from(x_cost);
                }
            }
            let displacement = i128::from(a_reorder) - i128::from(a_timestamp);
            let served_ahead = displacement + earlier_behind - later_ahead;
            assert!(
                served_ahead >= 0,
                "request at {position}: displacement {displacement} is below its queued \
                 overtakers {later_ahead} minus the earlier requests behind it {earlier_behind}"
            );
        }
        assert_eq!(queued_cost, self.queued_cost, "queued cost books disagree");
    }

    /// (bound): o_a − t_a ≤ u for every queued a. O(queue length).
    fn bound_holds(&self) -> bool {
        self.counters().all(|(_, _, timestamp, reorder)| {
            u128::from(reorder) <= u128::from(timestamp) + u128::from(self.bound)
        })
    }
}
