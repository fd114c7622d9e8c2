//! The budget audit: the checker outside the policy under test (BRIEF). Every power-state change
//! the engine makes to a disk passes [`BudgetAudit::change`] *before* the command goes to the
//! disk when the change can raise a draw (resting → spinning up, spinning up → active), and is
//! recorded *after* the disk obeyed when it can only lower one (→ resting). The books therefore
//! never charge less than the disks draw: a disk is charged its spin-up cost from before its
//! spin-up starts until after it has finished.
//!
//! The audit shares nothing with the scheduler's books (which charge whole groups over the
//! layout's group constraints): it keeps its own disk-level books,
//! [`GroupBudget::per_disk`] over the *rack's* hard resources, with the rack's own spin-up path,
//! so a wrong layout, a scheduler bug or an engine bug shows up here as a refusal. A refused
//! change is counted and returned as a typed [`AuditRefusal`] (the engine announces it; the
//! shells log it); the caller must not send the command.
//!
//! Disk states follow the rack's spin-up path: resting → spinning up → active → resting, or
//! spinning up → resting for a spin-up that failed or was abandoned. A disk spinning up is
//! charged the path's last state before active, which the audit checks costs at least as much as
//! every path state on every hard resource (else construction fails with
//! [`AuditError::SpinUpPath`]). Any other move (resting → active skipping the spin-up draw,
//! a move to the state the disk is in) is refused as [`AuditRefusal::Transition`].
//!
//! Invariants (asserted after every change): the books balance — each hard domain's load held by
//! the books equals the audit's own sum over its disks' states, kept by its own arithmetic (a
//! delta per change) — and no load exceeds its budget. [`BudgetAudit::verify_from_scratch`]
//! recomputes every domain's load and the counters of disks spinning up and active from the
//! disks' states alone (O(disks): checkers and tests call it; a rack-wide power domain would make
//! it O(disks) per change, which the simulator cannot afford).

use spinwise_model::{DiskIndex, Rack, StateIndex};
use spinwise_sched::budget::GroupBudget;
use thiserror::Error;

/// A disk's power state as the audit books it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DiskPower {
    Resting,
    SpinningUp,
    Active,
}

/// Why the audit cannot be built for a rack.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum AuditError {
    #[error(
        "the rack's spin-up path {path:?} has no state costing at least as much as every path state: a spinning-up disk cannot be charged safely"
    )]
    SpinUpPath { path: Vec<String> },
}

/// A power-state change the audit refused; the command must not be sent.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum AuditRefusal {
    #[error(
        "disk {disk} → {to:?} would load `{resource}` to {load_micros} micro-units against a hard budget of {budget_micros}"
    )]
    OverBudget {
        disk: DiskIndex,
        to: DiskPower,
        resource: String,
        load_micros: i64,
        budget_micros: i64,
    },
    #[error("disk {disk} cannot go from {from:?} to {to:?}: not a step of the spin-up cycle")]
    Transition {
        disk: DiskIndex,
        from: DiskPower,
        to: DiskPower,
    },
    #[error("disk {disk} is not in the rack ({disks} disks)")]
    UnknownDisk { disk: DiskIndex, disks: usize },
}

/// The most loaded domain of one hard resource, ever, against its budget (micro-units).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePeak {
    pub resource: String,
    pub peak_micros: i64,
    pub budget_micros: i64,
}

/// What the audit saw, for `status` and tests.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct AuditCounters {
    /// Changes granted (and booked).
    pub changes: u64,
    /// Changes refused (each also logged).
    pub refusals: u64,
    pub spinning_up_now: u32,
    pub active_now: u32,
    pub max_spinning_up: u32,
    pub max_active: u32,
    /// Most disks not resting (spinning up or active) at once.
    pub max_not_resting: u32,
    /// One entry per hard resource of the rack, in rack order.
    pub peaks: Vec<ResourcePeak>,
}

/// One hard resource of the rack, as the audit recomputes it.
#[derive(Clone, Debug)]
struct HardResource {
    name: String,
    cost_micros: Vec<i64>,
    domain_of: Vec<u32>,
    domains: Vec<Vec<DiskIndex>>,
    /// Each domain's load by the audit's own arithmetic (micro-units).
    load_micros: Vec<i64>,
    /// Index in the books' constraint order of this resource's domain 0.
    first_constraint: usize,
}

#[derive(Clone, Debug)]
pub struct BudgetAudit {
    books: GroupBudget,
    hard: Vec<HardResource>,
    /// The rack state each [`DiskPower`] is booked as: resting, spinning up, active.
    state_index: [StateIndex; 3],
    power_of: Vec<DiskPower>,
    counters: AuditCounters,
}

impl BudgetAudit {
    /// Books for `rack`, every disk resting.
    pub fn new(rack: &Rack) -> Result<BudgetAudit, AuditError> {
        let books = GroupBudget::per_disk(rack);
        let spinning_up =
            books
                .spin_up_charge(&rack.spin_up_path())
                .ok_or_else(|| AuditError::SpinUpPath {
                    path: rack
                        .spin_up_path()
                        .iter()
                        .map(|s| rack.states[*s].name.clone())
                        .collect(),
                })?;
        let mut first_constraint = 0;
        let hard: Vec<HardResource> = rack
            .hard_resources()
            .map(|(_, resource)| {
                let cost_micros: Vec<i64> = resource.cost.iter().map(|c| c.micros()).collect();
                let resting_micros = cost_micros[rack.resting_state()];
                let entry = HardResource {
                    name: resource.name.clone(),
                    load_micros: resource
                        .domains
                        .iter()
                        .map(|members| resting_micros * members.len() as i64)
                        .collect(),
                    cost_micros,
                    domain_of: resource.domain_of.clone(),
                    domains: resource.domains.clone(),
                    first_constraint,
                };
                first_constraint += resource.domains.len();
                entry
            })
            .collect();
        let peaks = hard
            .iter()
            .zip(rack.hard_resources())
            .map(|(h, (_, resource))| ResourcePeak {
                resource: h.name.clone(),
                peak_micros: 0,
                budget_micros: resource.budget.micros(),
            })
            .collect();
        let audit = BudgetAudit {
            books,
            hard,
            state_index: [rack.resting_state(), spinning_up, rack.active_state()],
            power_of: vec![DiskPower::Resting; rack.disk_count()],
            counters: AuditCounters {
                peaks,
                ..AuditCounters::default()
            },
        };
        audit.verify_from_scratch();
        Ok(audit)
    }

    /// Books `disk` in `to` if the step is one of the spin-up cycle and every hard budget allows
    /// it; otherwise logs, counts and returns the refusal (nothing booked).
    pub fn change(&mut self, disk: DiskIndex, to: DiskPower) -> Result<(), AuditRefusal> {
        match self.try_change(disk, to) {
            Ok(()) => {
                self.counters.changes += 1;
                Ok(())
            }
            Err(refusal) => {
                self.counters.refusals += 1;
                Err(refusal)
            }
        }
    }

    /// The state `disk` is booked in (`None` for a disk not in the rack).
    pub fn power(&self, disk: DiskIndex) -> Option<DiskPower> {
        self.power_of.get(disk as usize).copied()
    }

    pub fn disks(&self) -> usize {
        self.power_of.len()
    }

    pub fn counters(&self) -> &AuditCounters {
        &self.counters
    }

    fn try_change(&mut self, disk: DiskIndex, to: DiskPower) -> Result<(), AuditRefusal> {
        let from = self.power(disk).ok_or(AuditRefusal::UnknownDisk {
            disk,
            disks: self.power_of.len(),
        })?;
        let step = matches!(
            (from, to),
            (DiskPower::Resting, DiskPower::SpinningUp)
                | (DiskPower::SpinningUp, DiskPower::Active)
                | (DiskPower::SpinningUp, DiskPower::Resting)
                | (DiskPower::Active, DiskPower::Resting)
        );
        if !step {
            return Err(AuditRefusal::Transition { disk, from, to });
        }
        self.books
            .enter(disk, self.state_index[to as usize])
            .map_err(|refusal| AuditRefusal::OverBudget {
                disk,
                to,
                resource: refusal.resource,
                load_micros: refusal.load_micros,
                budget_micros: refusal.budget_micros,
            })?;
        self.power_of[disk as usize] = to;
        self.count(from, to);
        self.assert_balanced(disk, from, to);
        Ok(())
    }

    fn count(&mut self, from: DiskPower, to: DiskPower) {
        let counters = &mut self.counters;
        for (power, delta) in [(from, -1i64), (to, 1)] {
            let slot = match power {
                DiskPower::Resting => continue,
                DiskPower::SpinningUp => &mut counters.spinning_up_now,
                DiskPower::Active => &mut counters.active_now,
            };
            *slot = u32::try_from(i64::from(*slot) + delta).expect("counts stay in range");
        }
        counters.max_spinning_up = counters.max_spinning_up.max(counters.spinning_up_now);
        counters.max_active = counters.max_active.max(counters.active_now);
        counters.max_not_resting = counters
            .max_not_resting
            .max(counters.spinning_up_now + counters.active_now);
    }

    /// Moves the load of every hard domain holding `disk` by its change of state, checks it
    /// against the books and the budget, and notes the peaks.
    fn assert_balanced(&mut self, disk: DiskIndex, from: DiskPower, to: DiskPower) {
        let (from, to) = (
            self.state_index[from as usize],
            self.state_index[to as usize],
        );
        for (resource, peak) in self.hard.iter_mut().zip(&mut self.counters.peaks) {
            let domain = resource.domain_of[disk as usize] as usize;
            resource.load_micros[domain] += resource.cost_micros[to] - resource.cost_micros[from];
            let load = resource.load_micros[domain];
            let (books_load, budget) = self.books.load_of(resource.first_constraint + domain);
            assert_eq!(
                load, books_load,
                "the audit's books of `{}` domain {domain} do not balance",
                resource.name
            );
            assert!(
                load <= budget,
                "hard budget of `{}` exceeded",
                resource.name
            );
            peak.peak_micros = peak.peak_micros.max(load);
        }
    }

    /// Recomputes every hard domain's load and the counts of disks spinning up and active from
    /// the disks' booked states alone, and asserts they match the running books and budgets.
    pub fn verify_from_scratch(&self) {
        for resource in &self.hard {
            for (domain, members) in resource.domains.iter().enumerate() {
                let load: i64 = members
                    .iter()
                    .map(|member| {
                        let power = self.power_of[*member as usize];
                        resource.cost_micros[self.state_index[power as usize]]
                    })
                    .sum();
                let (books_load, budget) = self.books.load_of(resource.first_constraint + domain);
                assert_eq!(
                    (load, load),
                    (books_load, resource.load_micros[domain]),
                    "`{}` domain {domain}: recomputed load, books and running sum disagree",
                    resource.name
                );
                assert!(
                    load <= budget,
                    "hard budget of `{}` exceeded",
                    resource.name
                );
            }
        }
        let counted = (
            self.count_in(DiskPower::SpinningUp),
            self.count_in(DiskPower::Active),
        );
        assert_eq!(
            counted,
            (self.counters.spinning_up_now, self.counters.active_now),
            "the audit's counters of disks spinning up and active do not match its books"
        );
    }

    fn count_in(&self, power: DiskPower) -> u32 {
        self.power_of.iter().filter(|p| **p == power).count() as u32
    }
}
