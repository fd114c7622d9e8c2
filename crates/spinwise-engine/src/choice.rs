//! The policies a rack of groups can run, built the same way for the simulator and the store:
//! Pelican's class scheduler, Flamingo's constraint-aware group scheduler and the fully
//! provisioned baseline. (The random straw-man layout schedules single disks over placement
//! sets the simulator draws; it has no groups to store blobs in, so only the simulator builds it.)
//!
//! Invariant: a built policy has been told the layout's idle spin-down choice by nobody yet; the
//! [`Engine`](crate::Engine) tells it ([`Engine::set_idle_spin_down_us`](crate::Engine::set_idle_spin_down_us)).

use crate::engine::EngineError;
use spinwise_model::{Layout, Rack};
use spinwise_sched::flamingo::Flamingo;
use spinwise_sched::policy::{FullyProvisioned, Policy};
use spinwise_sched::scheduler::ClassScheduler;

/// Which scheduling policy a rack runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PolicyChoice {
    /// Pelican's class scheduler (the layout's classes, reordering bound, rebuild share, queue
    /// limit).
    #[default]
    Pelican,
    /// Flamingo's scheduler: per-group queues, as many groups spinning as the rack's constraints
    /// allow at once.
    Flamingo,
    /// Every group spun up once and kept up (Pelican's FP baseline): only on a rack whose hard
    /// budgets allow every disk up at once, or the audit refuses its spin-ups.
    FullyProvisioned,
}

impl PolicyChoice {
    pub const ALL: [PolicyChoice; 3] = [
        PolicyChoice::Pelican,
        PolicyChoice::Flamingo,
        PolicyChoice::FullyProvisioned,
    ];

    /// The choice spelled `name` ([`PolicyChoice::name`]), if any.
    pub fn from_name(name: &str) -> Option<PolicyChoice> {
        PolicyChoice::ALL.into_iter().find(|c| c.name() == name)
    }

    /// One lowercase word, as the CLI and store.toml spell it.
    pub fn name(self) -> &'static str {
        match self {
            PolicyChoice::Pelican => "pelican",
            PolicyChoice::Flamingo => "flamingo",
            PolicyChoice::FullyProvisioned => "fp",
        }
    }

    /// Whether the policy spins idle groups down (FP keeps every group up by design).
    pub fn spins_idle_groups_down(self) -> bool {
        !matches!(self, PolicyChoice::FullyProvisioned)
    }
}

/// Pelican's scheduler for `layout`. With `share_links` and the layout's staggered switches, it
/// is told which classes send through one server's NIC ([`Layout::group_read_servers`]): the
/// store's reads always cross one, the simulator's only when it models a network (without NICs
/// nothing is shared that one class could fill).
pub fn class_scheduler(
    rack: &Rack,
    layout: &Layout,
    share_links: bool,
) -> Result<ClassScheduler, EngineError> {
    let mut scheduler = ClassScheduler::new(layout)?;
    if share_links && layout.scheduler.stagger_switches_min_queue.is_some() {
        scheduler.share_links(&layout.group_read_servers(rack)?);
    }
    Ok(scheduler)
}

/// The policy `choice` for `layout`, as the store runs it (links shared: see
/// [`class_scheduler`]).
pub fn build_policy(
    rack: &Rack,
    layout: &Layout,
    choice: PolicyChoice,
) -> Result<Box<dyn Policy + Send>, EngineError> {
    Ok(match choice {
        PolicyChoice::Pelican => Box::new(class_scheduler(rack, layout, true)?),
        PolicyChoice::Flamingo => Box::new(Flamingo::new(layout)?),
        PolicyChoice::FullyProvisioned => Box::new(FullyProvisioned::new(layout)),
    })
}
