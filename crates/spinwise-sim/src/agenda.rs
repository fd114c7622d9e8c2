//! The simulator's agenda: the events still to happen, in (time, sequence) order. Every event
//! takes the next sequence number when it is queued, so ties at one microsecond resolve in the
//! order events were queued, whatever lane holds them; nothing depends on `Event`'s own order.
//!
//! Most events have a lane of their own instead of the heap, because their order is known:
//! - **the next arrival**: one pending at a time (each arrival draws the next gap);
//! - **first bytes**: every served request's seek takes the same time, so they come due in the
//!   order they were queued (a FIFO);
//! - **the network's next completion**: one at a time, replaced whenever it moves
//!   ([`Agenda::set_flow_wake`]), so a replaced wake-up never pops (the loop counts it stale).
//!
//! Only disk and group transitions, policy timeouts and the failure go through the binary
//! heap, about one event in five on a busy Pelican day instead of every one (a heap push and
//! pop cost more than a comparison of the lanes' heads). Popping compares the four heads by
//! (time, sequence), so the order is exactly that of one heap holding everything.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::report::TraceHash;
use spinwise_model::{DiskIndex, GroupIndex};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Event {
    /// The next client read arrives (one pending at a time: each arrival draws the next gap).
    Arrive,
    /// One disk of a spinning-up group reached the active state (its mount may still run).
    DiskSpunUp { disk: DiskIndex },
    /// Every disk of the group is spun up and mounted: tell the scheduler.
    GroupSpunUp { group: GroupIndex },
    /// One disk of a spinning-down group finished unmounting: it rests (spinning down itself is
    /// taken as instant).
    DiskSpunDown { disk: DiskIndex },
    /// Every disk of the group has unmounted: tell the scheduler.
    GroupSpunDown { group: GroupIndex },
    /// The seek of a request being served is over: its flow starts.
    FirstByte { request: u64 },
    /// The network's earliest flow completion, valid only if `generation` is still the
    /// network's (one pending at a time; see [`crate::network`]).
    FlowDone { generation: u64 },
    /// The policy asked to be polled at this time (`Policy::next_timeout_us`); stale when the
    /// policy has since asked for another time.
    Timeout,
    /// The configured disk fails: its stripe stacks start being rebuilt.
    Fail,
}

impl Event {
    /// The trace hash's encoding: a tag and two fields, hashed as the tag's byte, then the two
    /// fields' little-endian bytes.
    pub(crate) fn hash_into(&self, trace: &mut TraceHash) {
        let (tag, a, b) = self.fields();
        trace.write(&[tag]);
        trace.write_u64_le(a);
        trace.write_u64_le(b);
    }

    /// A fixed encoding for the trace hash: tag, then two little-endian u64 fields.
    #[cfg(test)]
    pub(crate) fn encode(&self) -> [u8; 17] {
        let (tag, a, b) = self.fields();
        let mut bytes = [0u8; 17];
        bytes[0] = tag;
        bytes[1..9].copy_from_slice(&a.to_le_bytes());
        bytes[9..17].copy_from_slice(&b.to_le_bytes());
        bytes
    }

    /// (tag, a, b): the trace's fixed encoding of the event.
    fn fields(&self) -> (u8, u64, u64) {
        match *self {
            Event::Arrive => (0u8, 0, 0),
            Event::DiskSpunUp { disk } => (1, u64::from(disk), 0),
            Event::GroupSpunUp { group } => (2, u64::from(group), 0),
            Event::GroupSpunDown { group } => (3, u64::from(group), 0),
            Event::FirstByte { request } => (4, request, 0),
            Event::FlowDone { generation } => (5, generation, 0u64),
            Event::Timeout => (6, 0, 0),
            Event::Fail => (7, 0, 0),
            // Tag 8 was a deferred read's deadline, now the engine's (a `Timeout`).
            Event::DiskSpunDown { disk } => (9, u64::from(disk), 0),
        }
    }
}

/// When an event is due and its place among events due at the same time.
type Key = (u64, u64);

/// The events still to happen (module documentation).
#[derive(Clone, Debug, Default)]
pub(crate) struct Agenda {
    /// Disk and group transitions, timeouts and the failure.
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    /// The pending arrival: (time, sequence).
    arrival: Option<Key>,
    /// Pending first bytes, due in queue order: (time, sequence, request).
    first_bytes: VecDeque<(u64, u64, u64)>,
    /// The network's pending completion: (time, sequence, generation).
    flow_wake: Option<(u64, u64, u64)>,
    sequence: u64,
}

/// Where the earliest event waits.
#[derive(Clone, Copy)]
enum Lane {
    Heap,
    Arrival,
    FirstByte,
    FlowWake,
}

impl Agenda {
    /// Queues `event` at `at_us` (not a flow completion: see [`Agenda::set_flow_wake`]).
    pub(crate) fn push(&mut self, at_us: u64, event: Event) {
        self.sequence += 1;
        let sequence = self.sequence;
        match event {
            Event::Arrive => {
                assert!(self.arrival.is_none(), "one arrival is pending at a time");
                self.arrival = Some((at_us, sequence));
            }
            Event::FirstByte { request } => {
                assert!(
                    self.first_bytes.back().is_none_or(|last| last.0 <= at_us),
                    "first bytes come due in the order they are queued"
                );
                self.first_bytes.push_back((at_us, sequence, request));
            }
            Event::FlowDone { .. } => unreachable!("a flow completion is set, not pushed"),
            _ => self.heap.push(Reverse((at_us, sequence, event))),
        }
    }

    /// Makes `(at_us, generation)` the network's pending completion, with the next sequence
    /// number; returns the time of the one it replaces, if any.
    pub(crate) fn set_flow_wake(&mut self, at_us: u64, generation: u64) -> Option<u64> {
        self.sequence += 1;
        let replaced = self.flow_wake.replace((at_us, self.sequence, generation));
        replaced.map(|(replaced_us, _, _)| replaced_us)
    }

    /// The next event in (time, sequence) order, and its time.
    pub(crate) fn pop(&mut self) -> Option<(u64, Event)> {
        let mut earliest: Option<(Key, Lane)> = None;
        let mut consider = |key: Option<Key>, lane: Lane| {
            if let Some(key) = key
                && earliest.is_none_or(|(best, _)| key < best)
            {
                earliest = Some((key, lane));
            }
        };
        consider(
            self.heap
                .peek()
                .map(|Reverse((at_us, sequence, _))| (*at_us, *sequence)),
            Lane::Heap,
        );
        consider(self.arrival, Lane::Arrival);
        consider(
            self.first_bytes
                .front()
                .map(|(at_us, sequence, _)| (*at_us, *sequence)),
            Lane::FirstByte,
        );
        consider(
            self.flow_wake.map(|(at_us, sequence, _)| (at_us, sequence)),
            Lane::FlowWake,
        );
        let ((at_us, _), lane) = earliest?;
        let event = match lane {
            Lane::Heap => self.heap.pop().expect("peeked").0.2,
            Lane::Arrival => {
                self.arrival = None;
                Event::Arrive
            }
            Lane::FirstByte => {
                let (_, _, request) = self.first_bytes.pop_front().expect("seen");
                Event::FirstByte { request }
            }
            Lane::FlowWake => {
                let (_, _, generation) = self.flow_wake.take().expect("seen");
                Event::FlowDone { generation }
            }
        };
        Some((at_us, event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Drives the agenda and one heap of everything through the same random pushes and pops.
    #[test]
    fn the_agenda_pops_events_in_the_order_one_heap_of_them_all_would() {
        let mut rng = ChaCha8Rng::seed_from_u64(32);
        for _ in 0..200 {
            let (mut agenda, mut heap) = (Agenda::default(), BinaryHeap::new());
            let (mut sequence, mut now_us, mut last_first_byte_us) = (0u64, 0u64, 0u64);
            let mut wake: Option<(u64, u64)> = None;
            for _ in 0..300 {
                match rng.random_range(0..6) {
                    0 if agenda.arrival.is_none() => {
                        let at_us = now_us + rng.random_range(0..5);
                        agenda.push(at_us, Event::Arrive);
                        sequence += 1;
                        heap.push(Reverse((at_us, sequence, Event::Arrive)));
                    }
                    1 => {
                        let at_us = (now_us + 3).max(last_first_byte_us);
                        last_first_byte_us = at_us;
                        let event = Event::FirstByte { request: sequence };
                        agenda.push(at_us, event);
                        sequence += 1;
                        heap.push(Reverse((at_us, sequence, event)));
                    }
                    2 => {
                        let at_us = now_us + rng.random_range(0..4);
                        let generation = sequence;
                        agenda.set_flow_wake(at_us, generation);
                        sequence += 1;
                        wake = Some((at_us, sequence));
                        heap.push(Reverse((at_us, sequence, Event::FlowDone { generation })));
                    }
                    3 => {
                        let at_us = now_us + rng.random_range(0..6);
                        let event = Event::DiskSpunUp {
                            disk: rng.random_range(0..9),
                        };
                        agenda.push(at_us, event);
                        sequence += 1;
                        heap.push(Reverse((at_us, sequence, event)));
                    }
                    _ => {
                        // The one heap also holds replaced wake-ups: skip them as the loop does.
                        let expected = loop {
                            match heap.pop() {
                                Some(Reverse((at_us, seq, Event::FlowDone { .. })))
                                    if wake != Some((at_us, seq)) => {}
                                Some(Reverse((at_us, _, event))) => {
                                    if matches!(event, Event::FlowDone { .. }) {
                                        wake = None;
                                    }
                                    break Some((at_us, event));
                                }
                                None => break None,
                            }
                        };
                        let popped = agenda.pop();
                        assert_eq!(popped, expected);
                        if let Some((at_us, _)) = popped {
                            now_us = at_us;
                        }
                    }
                }
            }
        }
    }
}
