//! spinwise-engine: the rack engine, the one place where rack behaviour lives. Everything between
//! "work arrives" and "disk commands" is here, pure (no clock, no IO, no threads), so the
//! simulator and the store's driver run the same code and differ only in what they do with its
//! commands:
//! - [`engine`] holds [`Engine`]: group (unit) phases and every disk's booked power state, the
//!   scheduling [`Policy`](spinwise_sched::policy::Policy), the job books (queued and being
//!   served), Bulk deferral (jobs held until their group spins up for other work or their
//!   start-by time), idle spin-down (the policy's, `spinwise_sched::idle`), disk-failure
//!   marking, the shutdown drain, and the announcements a store piggybacks on;
//! - [`audit`] is the budget audit every disk power-state change passes, booked before a command
//!   that can raise a draw and after the disk obeyed one that lowers it;
//! - [`purpose`] names what a job is for, so every spin-up can be explained;
//! - [`choice`] builds the policies a rack can run (Pelican's class scheduler, Flamingo's
//!   group scheduler, the fully provisioned baseline).
//!
//! A shell feeds the engine inputs that carry `now_us` (a submission, a disk that answered, a
//! served job, a failed disk, a timer that fired) and carries out its [`Output`]s in order: spin
//! these disks up or down, start this job, announce this. [`Engine::next_wake_us`] says when to
//! call again although nothing happened. The simulator's shell turns commands into model events
//! (spinwise-sim's `sim.rs`); the store's turns them into disk IO on blocking threads
//! (spinwise-store's `driver.rs`). docs/ARCHITECTURE.md draws it.

pub mod audit;
pub mod choice;
pub mod engine;
pub mod purpose;

pub use audit::{AuditCounters, AuditError, AuditRefusal, BudgetAudit, DiskPower, ResourcePeak};
pub use choice::{PolicyChoice, build_policy};
pub use engine::{
    DEFAULT_DEFERRED_MAX, DiskEvent, Engine, EngineError, EngineState, GroupActivity, GroupPhase,
    GroupState, Output, Rejected, SpinDownCause, UnknownDisk,
};
pub use purpose::{Purpose, WaitingWork};
