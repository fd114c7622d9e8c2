//! Weighted fair sharing between the scheduler's two queues (Pelican §2.3, "Rate limiting"): the
//! rebuild queue gets a share w of the service and the client queue 1 − w (Pelican's default
//! w = 50%), so a rebuild finishes in about x / t × 1 / w (x the failed disk's data, t one disk's
//! throughput) without starving clients.
//!
//! The selector is start-time fair queuing (Goyal, Vin and Cheng) over two flows, with service
//! measured in cost units chosen by the caller (the class scheduler charges microseconds of
//! service and of group switches). Each queue has a finish tag F, its normalised service so far;
//! the virtual time v is the start tag of the last request charged. The next request of a queue
//! starts at S = max(v, F), and the waiting queue with the smaller start tag goes next. Serving
//! `cost` from a queue of weight φ moves its F to S + cost / φ. Taking max with v means a queue
//! that was empty does not bank credit: on its return it competes from the start of the last
//! request served (so it is owed at most that one request), instead of starving the other queue
//! while it catches up on everything it did not use.
//!
//! Turns given up for lack of a servable head are kept: [`FairShare::charge_out_of_turn`] serves
//! the other queue without moving v, so the skipped queue's start tag stays where it was and it
//! is served first once it can be (module invariants below hold over the skipped queue's deferred
//! turns; its credit is bounded by what the caller lets the other queue take out of turn).
//!
//! Why start tags: the choice needs only which queues are waiting, not the cost of their heads,
//! so the caller can ask before it has sized the next request; and the decision stays correct
//! when the caller charges a queue other than the one chosen (for example because the chosen
//! request's group cannot spin up yet) — that queue simply forfeits the turn.
//!
//! Invariants and guarantees:
//! - Exact integer arithmetic: weights are integer parts per million (φ_rebuild + φ_client =
//!   1,000,000) and tags are kept scaled by φ_rebuild × φ_client, so serving `cost` adds
//!   cost × φ_client to the rebuild tag and cost × φ_rebuild to the client tag. No rounding
//!   drift, and the same inputs always give the same choices.
//! - Work-conserving: when one queue is empty the other is chosen, whatever the weights.
//! - Ties go to the rebuild queue (durability first), deterministically.
//! - With both queues backlogged from the start and every choice charged as chosen, the rebuild
//!   queue's served cost W_r of total served T satisfies −w × L_c ≤ W_r − w × T ≤ (1 − w) × L_r,
//!   L_r and L_c the largest request costs served from each queue: within one maximum request cost
//!   of its share. Over any interval in which both stay backlogged, |W_r / w − W_c / (1 − w)| ≤
//!   L_r / w + L_c / (1 − w), L the largest request each queue ever had (the SFQ fairness bound).
//! - w = 1 gives the client queue weight 0: it is served only when the rebuild queue is empty.

use thiserror::Error;

/// Weights are integer parts of this; it is also the resolution of a share.
pub const PARTS_PER_MILLION: u32 = 1_000_000;

/// One of the scheduler's two queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Queue {
    Rebuild,
    Client,
}

#[derive(Clone, Copy, Debug, PartialEq, Error)]
pub enum FairShareError {
    #[error("rebuild share is not a number")]
    NotANumber,
    /// Shares are kept in parts per million, so a share that rounds to zero parts would starve
    /// rebuild: it is refused like zero.
    #[error(
        "rebuild share {share} is outside (0, 1] (resolution one part per million, so at least 0.000001)"
    )]
    OutOfRange { share: f64 },
}

/// The selector between the rebuild and client queues; see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FairShare {
    /// φ_rebuild in parts per million, in 1..=1,000,000; φ_client is the rest.
    rebuild_weight_ppm: u32,
    /// Finish tags, scaled by φ_rebuild × φ_client (module documentation).
    rebuild_finish: u128,
    client_finish: u128,
    /// v: the start tag of the last request charged, on the same scale.
    virtual_time: u128,
    /// Σ cost charged to each queue, for reports.
    rebuild_served_cost: u128,
    client_served_cost: u128,
}

impl FairShare {
    /// A selector giving the rebuild queue `rebuild_share` of the service, in (0, 1]. The share is
    /// rounded to the nearest part per million.
    pub fn new(rebuild_share: f64) -> Result<FairShare, FairShareError> {
        if rebuild_share.is_nan() {
            return Err(FairShareError::NotANumber);
        }
        let parts = (rebuild_share * f64::from(PARTS_PER_MILLION)).round();
        if rebuild_share <= 0.0 || rebuild_share > 1.0 || parts < 1.0 {
            return Err(FairShareError::OutOfRange {
                share: rebuild_share,
            });
        }
        // parts is in [1, 1e6] here, so the cast is exact.
        Ok(FairShare::from_parts_per_million(parts as u32))
    }

    /// A selector whose rebuild weight is `rebuild_weight_ppm` parts per million.
    ///
    /// Panics unless 1 ≤ `rebuild_weight_ppm` ≤ 1,000,000 (use [`FairShare::new`] for a share
    /// read from configuration).
    pub fn from_parts_per_million(rebuild_weight_ppm: u32) -> FairShare {
        assert!(
            (1..=PARTS_PER_MILLION).contains(&rebuild_weight_ppm),
            "rebuild weight {rebuild_weight_ppm} ppm is outside 1..=1,000,000"
        );
        FairShare {
            rebuild_weight_ppm,
            rebuild_finish: 0,
            client_finish: 0,
            virtual_time: 0,
            rebuild_served_cost: 0,
            client_served_cost: 0,
        }
    }

    /// The rebuild share actually used (after rounding to parts per million).
    pub fn rebuild_share(&self) -> f64 {
        f64::from(self.rebuild_weight_ppm) / f64::from(PARTS_PER_MILLION)
    }

    /// φ_rebuild in parts per million; the client's weight is the rest of a million.
    pub fn rebuild_weight_ppm(&self) -> u32 {
        self.rebuild_weight_ppm
    }

    /// Which queue's head to serve next, given which queues have a request waiting; `None` when
    /// neither has. Work-conserving; ties go to the rebuild queue. Does not change the state: call
    /// [`FairShare::charge`] for the request actually served.
    pub fn choose(&self, rebuild_waiting: bool, client_waiting: bool) -> Option<Queue> {
        match (rebuild_waiting, client_waiting) {
            (false, false) => None,
            (true, false) => Some(Queue::Rebuild),
            (false, true) => Some(Queue::Client),
            (true, true) => {
                if self.start(Queue::Rebuild) <= self.start(Queue::Client) {
                    Some(Queue::Rebuild)
                } else {
                    Some(Queue::Client)
                }
            }
        }
    }

    /// Records that a request of `cost` (bytes, or whatever unit all charges use) was served from
    /// `queue`.
    ///
    /// Panics if a tag overflows u128 (more than 10^20 maximum-cost requests).
    pub fn charge(&mut self, queue: Queue, cost: u64) {
        let start = self.start(queue);
        // Scaled by φ_rebuild × φ_client: cost / φ_queue becomes cost × φ_other.
        let other_weight_ppm = match queue {
            Queue::Rebuild => PARTS_PER_MILLION - self.rebuild_weight_ppm,
            Queue::Client => self.rebuild_weight_ppm,
        };
        let finish = start
            .checked_add(u128::from(cost) * u128::from(other_weight_ppm))
            .expect("a fair-share tag overflows u128");
        let (finish_tag, served_cost) = match queue {
            Queue::Rebuild => (&mut self.rebuild_finish, &mut self.rebuild_served_cost),
            Queue::Client => (&mut self.client_finish, &mut self.client_served_cost),
        };
        *finish_tag = finish;
        *served_cost = served_cost
            .checked_add(u128::from(cost))
            .expect("served cost overflows u128");
        self.virtual_time = start;
    }

    /// Records that a request of `cost` was served from `queue` *out of turn*: the fair choice
    /// was the other queue, which stays backlogged but could not be served (its head was for
    /// another group). The served queue's finish tag advances as in [`FairShare::charge`], but the
    /// virtual time does not, so the skipped queue keeps its start tag: it is owed the turns it
    /// gave up and gets them as soon as it can be served. The caller bounds how much it serves out
    /// of turn before serving the skipped queue (the class scheduler: u / k of disk time), which
    /// bounds the credit: this is SFQ with the skipped queue's service deferred, not dropped.
    ///
    /// Panics if a tag overflows u128.
    pub fn charge_out_of_turn(&mut self, queue: Queue, cost: u64) {
        let virtual_time = self.virtual_time;
        self.charge(queue, cost);
        self.virtual_time = virtual_time;
    }

    /// Σ cost charged to `queue` so far.
    pub fn served_cost(&self, queue: Queue) -> u128 {
        match queue {
            Queue::Rebuild => self.rebuild_served_cost,
            Queue::Client => self.client_served_cost,
        }
    }

    /// S = max(v, F): the start tag the queue's next request would get.
    fn start(&self, queue: Queue) -> u128 {
        let finish = match queue {
            Queue::Rebuild => self.rebuild_finish,
            Queue::Client => self.client_finish,
        };
        finish.max(self.virtual_time)
    }
}
