//! spinwise-sched: the building blocks of the sans-IO IO scheduler (issue 3). Pure: no clock
//! reads, no IO, no async, no threads; time, when it matters, is an argument. The server and the
//! simulator will drive the same code.
//!
//! Present so far:
//! - [`budget`]: group operating states under the layout's hard group constraints, with exact
//!   multi-state accounting (spinning up costs more than active); a transition that would exceed a
//!   hard budget is refused, and the books are asserted on every change.
//! - [`reorder`]: Pelican's reordering queue (§2.3), bounded by u in requests, bytes or estimated
//!   service time.
//! - [`fair`]: weighted fair sharing between the rebuild queue and the client queue.
//! - [`scheduler`]: the class scheduler combining them (Pelican §2.3): requests and completions
//!   in (with the caller's `now_us`), spin-up / spin-down / serve actions out; the fair share
//!   splits each class's time, group switches included.
//! - [`policy`]: the `Policy` interface drivers use, and the fully provisioned (FP) baseline.
//! - [`flamingo`]: Flamingo's constraint-aware scheduler (§3.2): per-group queues, as many groups
//!   spinning as the hard budgets allow, greedy spin-downs to make room, starvation-free.
//! - [`idle`]: idle spin-down, the timer Pelican's and Flamingo's schedulers keep for active
//!   groups without work, so both drivers spin the same idle groups down at the same times.
//! - [`random`]: the random straw-man layout's scheduler (Pelican §2.2), at disk level over the
//!   rack's hard domains ([`budget::GroupBudget::per_disk`]).
//!
//! It reads layouts from spinwise-model, never from the planner, so the server does not link the
//! planning algorithms.

pub mod budget;
pub mod fair;
pub mod flamingo;
pub mod idle;
#[cfg(test)]
mod lockstep;
pub mod policy;
pub mod random;
pub mod reorder;
pub mod scheduler;
