//! Flow-level bandwidth: reads in progress as fluid flows sharing one network link by max-min
//! fairness (research notes §6.2: one aggregate flow per request, not one per fragment).
//!
//! Each flow has a private cap (k data disks × disk bandwidth) and gets
//! `min(cap, equal share of what the capped flows leave)` — water-filling over one link. Rates
//! are recomputed whenever a flow starts or ends; each flow keeps its remaining bytes and the
//! time they were last brought up to date, and has exactly one valid completion event: when its
//! rate changes its `generation` is bumped and a new event is issued, and the loop drops popped
//! events whose generation is stale (lazy invalidation instead of deleting from the heap).
//!
//! Invariants: the rates of all flows sum to at most the link's capacity; every flow's rate is
//! positive and at most its cap; a flow's remaining bytes never go below zero.
//!
//! Units: bytes per microsecond (numerically MB/s), so `k × bandwidth_mb_per_s` is a cap as is,
//! and a link of G Gbps carries G × 125 bytes/µs.

use std::collections::BTreeMap;

/// A completion event the loop must schedule: flow `id` ends at `done_us` unless a later
/// generation supersedes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub id: u64,
    pub generation: u64,
    pub done_us: u64,
}

#[derive(Clone, Debug)]
struct Flow {
    cap_bytes_per_us: f64,
    rate_bytes_per_us: f64,
    remaining_bytes: f64,
    updated_us: u64,
    generation: u64,
}

#[derive(Clone, Debug)]
pub struct Network {
    /// `None`: unbounded, every flow runs at its cap.
    link_bytes_per_us: Option<f64>,
    /// Ordered by id so recomputation visits flows in a fixed order.
    flows: BTreeMap<u64, Flow>,
    window_us: (u64, u64),
    delivered_in_window_bytes: f64,
    /// Scratch for water-filling, kept to avoid an allocation per recompute.
    order: Vec<(f64, u64)>,
}

impl Network {
    /// A link of `link_gbps` (None = unbounded); bytes moved during `window_us` are counted.
    pub fn new(link_gbps: Option<f64>, window_us: (u64, u64)) -> Network {
        Network {
            link_bytes_per_us: link_gbps.map(|g| g * 125.0),
            flows: BTreeMap::new(),
            window_us,
            delivered_in_window_bytes: 0.0,
            order: Vec::new(),
        }
    }

    pub fn delivered_in_window_bytes(&self) -> f64 {
        self.delivered_in_window_bytes
    }

    pub fn flows(&self) -> usize {
        self.flows.len()
    }

    /// Starts flow `id` of `bytes` at `now_us`; pushes the completion events to (re)schedule.
    pub fn start(
        &mut self,
        now_us: u64,
        id: u64,
        bytes: u64,
        cap_bytes_per_us: f64,
        completions: &mut Vec<Completion>,
    ) {
        assert!(cap_bytes_per_us > 0.0, "a flow needs a positive cap");
        self.advance_all(now_us);
        let previous = self.flows.insert(
            id,
            Flow {
                cap_bytes_per_us,
                // Zero marks "no rate yet", so recompute always issues its first completion.
                rate_bytes_per_us: 0.0,
                remaining_bytes: bytes as f64,
                updated_us: now_us,
                generation: 0,
            },
        );
        assert!(previous.is_none(), "flow {id} started twice");
        self.recompute(now_us, completions);
    }

    /// Handles a popped completion event. `false` when it is stale (superseded generation); the
    /// flow then keeps running. `true` when the flow ended; the others' new completions are pushed.
    pub fn finish(
        &mut self,
        now_us: u64,
        id: u64,
        generation: u64,
        completions: &mut Vec<Completion>,
    ) -> bool {
        match self.flows.get(&id) {
            Some(flow) if flow.generation == generation => {}
            _ => return false,
        }
        self.advance_all(now_us);
        let flow = self.flows.remove(&id).expect("checked above");
        // Completion times are rounded up to whole µs, so at most a float rounding error is left.
        if (self.window_us.0..self.window_us.1).contains(&now_us) {
            self.delivered_in_window_bytes += flow.remaining_bytes;
        }
        self.recompute(now_us, completions);
        true
    }

    /// Brings every flow's remaining bytes up to `now_us` at its current rate.
    fn advance_all(&mut self, now_us: u64) {
        let (window_start, window_end) = self.window_us;
        for flow in self.flows.values_mut() {
            let elapsed_us = now_us - flow.updated_us;
            if elapsed_us == 0 {
                continue;
            }
            let moved = (flow.rate_bytes_per_us * elapsed_us as f64).min(flow.remaining_bytes);
            let overlap_us = now_us
                .min(window_end)
                .saturating_sub(flow.updated_us.max(window_start));
            self.delivered_in_window_bytes += moved * overlap_us as f64 / elapsed_us as f64;
            flow.remaining_bytes -= moved;
            flow.updated_us = now_us;
        }
    }

    /// Max-min rates by water-filling (flows in ascending cap, each taking the smaller of its cap
    /// and an equal share of the capacity left); flows whose rate changed get a new generation.
    fn recompute(&mut self, now_us: u64, completions: &mut Vec<Completion>) {
        self.order.clear();
        self.order
            .extend(self.flows.iter().map(|(id, f)| (f.cap_bytes_per_us, *id)));
        self.order
            .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut left_bytes_per_us = self.link_bytes_per_us.unwrap_or(f64::INFINITY);
        let mut unassigned = self.order.len();
        let mut total = 0.0;
        for &(cap, id) in &self.order {
            let rate = cap.min(left_bytes_per_us / unassigned as f64);
            left_bytes_per_us -= rate;
            unassigned -= 1;
            total += rate;
            let flow = self.flows.get_mut(&id).expect("ordered from the map");
            assert!(rate > 0.0 && rate <= cap, "rate {rate} outside (0, {cap}]");
            if rate != flow.rate_bytes_per_us {
                flow.rate_bytes_per_us = rate;
                flow.generation += 1;
                let wait_us = (flow.remaining_bytes / rate).ceil().max(0.0) as u64;
                completions.push(Completion {
                    id,
                    generation: flow.generation,
                    done_us: now_us + wait_us,
                });
            }
        }
        if let Some(link) = self.link_bytes_per_us {
            assert!(total <= link * (1.0 + 1e-9), "link oversubscribed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_share_the_link_equally_and_speed_up_when_one_ends() {
        // 10 Gbps = 1250 bytes/µs; two flows capped at 1000 bytes/µs get 625 each.
        let mut network = Network::new(Some(10.0), (0, u64::MAX));
        let mut out = Vec::new();
        network.start(0, 1, 625_000, 1000.0, &mut out);
        assert_eq!(
            out,
            vec![Completion {
                id: 1,
                generation: 1,
                done_us: 625
            }]
        );
        out.clear();
        network.start(0, 2, 1_250_000, 1000.0, &mut out);
        // Flow 1 slows to 625: new generation, done at 1000; flow 2 done at 2000 at 625.
        assert_eq!(out.len(), 2);
        assert!(out.contains(&Completion {
            id: 1,
            generation: 2,
            done_us: 1000
        }));
        out.clear();
        assert!(!network.finish(625, 1, 1, &mut out), "stale generation");
        assert!(network.finish(1000, 1, 2, &mut out));
        // Flow 2 has 625,000 left and now runs at its cap of 1000: done at 1625.
        assert_eq!(
            out,
            vec![Completion {
                id: 2,
                generation: 2,
                done_us: 1625
            }]
        );
        assert!(network.finish(1625, 2, 2, &mut out));
        assert!((network.delivered_in_window_bytes() - 1_875_000.0).abs() < 1e-6);
    }

    #[test]
    fn a_capped_flow_leaves_its_unused_share_to_the_others() {
        let mut network = Network::new(Some(10.0), (0, u64::MAX));
        let mut out = Vec::new();
        network.start(0, 1, 1_000_000, 100.0, &mut out);
        network.start(0, 2, 1_000_000, 5000.0, &mut out);
        out.clear();
        network.start(0, 3, 1_000_000, 5000.0, &mut out);
        // 1250 - 100 = 1150 split between the two uncapped flows.
        let rates: Vec<f64> = network
            .flows
            .values()
            .map(|f| f.rate_bytes_per_us)
            .collect();
        assert_eq!(rates, vec![100.0, 575.0, 575.0]);
    }
}
