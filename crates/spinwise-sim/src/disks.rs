//! The model disks' operating states, the independent budget checker fed by every state change,
//! and the time-weighted meters over them (power, disks not resting).
//!
//! The checker shares nothing with the scheduler's books (`spinwise_sched::budget`): it reads the
//! rack's hard resources — their domains, per-state costs and budgets — and the state each disk
//! is in *physically* in the model (a disk that finished spinning up is active even while the
//! scheduler still charges its group as spinning up). It keeps the draw of every hard domain in
//! integer micro-units, moved by the exact cost difference of each disk that changes state, and
//! after every state change checks each domain holding a disk that changed against its budget;
//! other domains' draws cannot have changed. Integer deltas give exactly the sums a recomputation
//! disk by disk would (debug builds recompute every checked domain from scratch and compare);
//! recomputing instead cost ~6% of a simulated day (issue 32), and recomputing all ~750 of
//! Pelican's domains after each of the ~26 changes of a group's spin-up cycle would cost more
//! than the rest of the loop.
//!
//! Invariants: `state_of[d]` is the state disk `d` is in now; `power_draw_micros`,
//! `not_resting` and every `draw_micros` are exactly the sums over disks of the current states
//! (kept incrementally; re-derived in debug builds); meters have integrated everything up to
//! `metered_us`.

use spinwise_model::{Amount, DiskIndex, Rack, ResourceKind, StateIndex};

#[derive(Clone, Debug)]
pub struct Disks {
    state_of: Vec<StateIndex>,
    resting: StateIndex,
    /// Indices of the rack's hard resources.
    hard: Vec<usize>,
    /// Per-state cost of one disk on the rack's hard resource named "power", if any.
    power_cost_micros: Option<Vec<i64>>,
    power_draw_micros: i64,
    not_resting: u32,
    window_us: (u64, u64),
    metered_us: u64,
    /// ∫ draw dt over the window, in micro-watt-microseconds (i128: exceeds i64 within a day).
    power_integral: i128,
    peak_power_micros: i64,
    max_not_resting: u32,
    violations: u64,
    /// The checker's books, in one flat numbering of every hard domain (the domains of the first
    /// hard resource, then the next's, …) copied out of the rack once, so a change reads a few
    /// short arrays of its own rather than each resource's vectors (issue 32: ~15% of a Pelican
    /// day at 0.25 req/s was this checker).
    books: FlatDomains,
    /// Per flat domain, its draw in micro-units.
    draw_micros: Vec<i64>,
    /// Per flat domain, the change that last touched it; `change` counts the changes.
    touched_by: Vec<u64>,
    change: u64,
    /// Scratch: the flat domains one change touched, each once.
    touched: Vec<u32>,
    /// For a window that may close when the run has drained, before its configured end: the
    /// meters as they stood before the latest event, and before the latest event the window
    /// contains ([`Disks::mark_possible_end`], [`Disks::keep_possible_end`]).
    possible_end: Option<Meters>,
    kept_end: Option<Meters>,
}

/// The rack's hard domains in one flat numbering (see [`Disks`]'s `books`).
#[derive(Clone, Debug)]
struct FlatDomains {
    /// `domain_of[disk × hard + position]`: the flat domain of `disk` on the `position`-th hard
    /// resource (`hard` resources in all).
    domain_of: Vec<u32>,
    /// `cost_micros[position × states + state]`: one disk's cost in `state` on the
    /// `position`-th hard resource.
    cost_micros: Vec<i64>,
    states: usize,
    /// Per flat domain, its resource's budget in micro-units.
    budget_micros: Vec<i64>,
    /// Per hard resource (in position order), its first flat domain.
    first_domain: Vec<u32>,
}

impl FlatDomains {
    fn new(rack: &Rack, hard: &[usize]) -> FlatDomains {
        let states = rack.states.len();
        let mut first_domain = Vec::with_capacity(hard.len());
        let mut budget_micros = Vec::new();
        let mut cost_micros = Vec::with_capacity(hard.len() * states);
        for &resource in hard {
            let resource = &rack.resources[resource];
            first_domain.push(budget_micros.len() as u32);
            budget_micros.extend(std::iter::repeat_n(
                resource.budget.micros(),
                resource.domains.len(),
            ));
            assert_eq!(resource.cost.len(), states, "a resource costs each state");
            cost_micros.extend(resource.cost.iter().map(|c| c.micros()));
        }
        let domain_of = (0..rack.disk_count())
            .flat_map(|disk| {
                hard.iter()
                    .zip(&first_domain)
                    .map(move |(&resource, first)| first + rack.resources[resource].domain_of[disk])
            })
            .collect();
        FlatDomains {
            domain_of,
            cost_micros,
            states,
            budget_micros,
            first_domain,
        }
    }

    /// (position of the hard resource, domain within it) of flat domain `flat`.
    fn resource_domain(&self, flat: u32) -> (usize, u32) {
        let position = self.first_domain.partition_point(|first| *first <= flat) - 1;
        (position, flat - self.first_domain[position])
    }
}

/// The meters as they stood at `at_us`.
#[derive(Clone, Copy, Debug)]
struct Meters {
    at_us: u64,
    power_integral: i128,
    peak_power_micros: i64,
    max_not_resting: u32,
}

impl Disks {
    /// Every disk resting at time 0; the whole rack is checked once.
    pub fn new(rack: &Rack, window_us: (u64, u64)) -> Disks {
        let resting = rack.resting_state();
        let power_cost_micros = rack
            .resources
            .iter()
            .find(|r| r.name == "power" && r.kind == ResourceKind::Hard)
            .map(|r| r.cost.iter().map(|c| c.micros()).collect::<Vec<i64>>());
        let power_draw_micros = power_cost_micros
            .as_ref()
            .map_or(0, |cost| cost[resting] * rack.disk_count() as i64);
        let hard: Vec<usize> = rack.hard_resources().map(|(index, _)| index).collect();
        let books = FlatDomains::new(rack, &hard);
        let draw_micros: Vec<i64> = hard
            .iter()
            .flat_map(|&resource| {
                let resource = &rack.resources[resource];
                let resting_micros = resource.cost[resting].micros();
                (resource.domains.iter()).map(move |domain| resting_micros * domain.len() as i64)
            })
            .collect();
        let domains = draw_micros.len();
        let mut disks = Disks {
            state_of: vec![resting; rack.disk_count()],
            resting,
            hard,
            books,
            draw_micros,
            touched_by: vec![0; domains],
            change: 0,
            power_cost_micros,
            power_draw_micros,
            not_resting: 0,
            window_us,
            metered_us: 0,
            power_integral: 0,
            peak_power_micros: 0,
            max_not_resting: 0,
            violations: 0,
            touched: (0..domains as u32).collect(),
            possible_end: None,
            kept_end: None,
        };
        disks.check_touched(rack);
        disks.note_current(0);
        disks
    }

    /// Moves `moved` disks to `state` at `now_us`, then checks the domains they are in.
    pub fn set(&mut self, rack: &Rack, now_us: u64, moved: &[DiskIndex], state: StateIndex) {
        self.meter_until(now_us);
        self.change += 1;
        for &disk in moved {
            let from = std::mem::replace(&mut self.state_of[disk as usize], state);
            if let Some(cost) = &self.power_cost_micros {
                self.power_draw_micros += cost[state] - cost[from];
            }
            self.not_resting = self.not_resting - u32::from(from != self.resting)
                + u32::from(state != self.resting);
            let hard = self.hard.len();
            let row = &self.books.domain_of[disk as usize * hard..][..hard];
            for (position, &flat) in row.iter().enumerate() {
                let cost_micros = &self.books.cost_micros[position * self.books.states..];
                self.draw_micros[flat as usize] += cost_micros[state] - cost_micros[from];
                let touched_by = &mut self.touched_by[flat as usize];
                if *touched_by != self.change {
                    *touched_by = self.change;
                    self.touched.push(flat);
                }
            }
        }
        self.check_touched(rack);
        debug_assert_eq!(
            self.not_resting as usize,
            self.state_of.iter().filter(|s| **s != self.resting).count()
        );
        self.note_current(now_us);
    }

    /// `now_us`, before an event changes anything, may turn out to be where the window ends: a
    /// run that drains before its window's end (a burst always, a trace or Poisson run whose
    /// arrivals stop early) closes it there (meters up to it are noted).
    pub fn mark_possible_end(&mut self, now_us: u64) {
        self.meter_until(now_us);
        self.possible_end = Some(Meters {
            at_us: now_us,
            power_integral: self.power_integral,
            peak_power_micros: self.peak_power_micros,
            max_not_resting: self.max_not_resting,
        });
    }

    /// The event after the last [`Disks::mark_possible_end`] belongs to the window: the window
    /// ends there or later.
    pub fn keep_possible_end(&mut self) {
        if let Some(meters) = self.possible_end.take() {
            self.kept_end = Some(meters);
        }
    }

    /// Ends the window at `end_us` if it was open longer (it closes when the run has drained).
    /// The meters ran on past that, through the idle spin-downs after it, so they are set back
    /// to where they stood at `end_us` when it is the last kept possible end.
    pub fn close_window(&mut self, end_us: u64) {
        assert!(end_us > self.window_us.0, "a window has a positive length");
        self.window_us.1 = self.window_us.1.min(end_us);
        if let Some(meters) = self.kept_end.filter(|meters| meters.at_us == end_us) {
            self.power_integral = meters.power_integral;
            self.peak_power_micros = meters.peak_power_micros;
            self.max_not_resting = meters.max_not_resting;
        }
    }

    /// Closes the meters at the end of the window (or at `now_us` if later events ran past it).
    pub fn finish(&mut self, now_us: u64) {
        self.meter_until(now_us.max(self.window_us.1));
    }

    pub fn violations(&self) -> u64 {
        self.violations
    }

    pub fn has_power(&self) -> bool {
        self.power_cost_micros.is_some()
    }

    /// Mean and peak rack power over the window, in watts (zeros without a "power" resource).
    pub fn power_w(&self) -> (f64, f64) {
        if !self.has_power() {
            return (0.0, 0.0);
        }
        let window_us = (self.window_us.1 - self.window_us.0) as f64;
        (
            self.power_integral as f64 / window_us / 1e6,
            self.peak_power_micros as f64 / 1e6,
        )
    }

    pub fn max_not_resting(&self) -> u32 {
        self.max_not_resting
    }

    /// Checks each touched hard domain's draw against its budget; counts every domain over
    /// budget as one violation. Debug builds recompute each draw from the disks' states.
    fn check_touched(&mut self, rack: &Rack) {
        for &flat in &self.touched {
            let draw_micros = self.draw_micros[flat as usize];
            if cfg!(debug_assertions) {
                let (position, domain) = self.books.resource_domain(flat);
                let resource = &rack.resources[self.hard[position]];
                assert_eq!(
                    draw_micros,
                    resource.domains[domain as usize]
                        .iter()
                        .fold(Amount::ZERO, |sum, disk| {
                            sum + resource.cost[self.state_of[*disk as usize]]
                        })
                        .micros(),
                    "the draw of `{}` domain {domain} drifted from its disks' states",
                    resource.name
                );
                assert_eq!(
                    self.books.budget_micros[flat as usize],
                    resource.budget.micros()
                );
            }
            if draw_micros > self.books.budget_micros[flat as usize] {
                self.violations += 1;
            }
        }
        self.touched.clear();
    }

    /// Integrates the current draw from `metered_us` to `now_us`, clipped to the window; the
    /// values in effect over a non-empty part of the window count for peak and maximum.
    fn meter_until(&mut self, now_us: u64) {
        let (start, end) = self.window_us;
        let overlap_us = now_us.min(end).saturating_sub(self.metered_us.max(start));
        if overlap_us > 0 {
            self.power_integral += i128::from(self.power_draw_micros) * i128::from(overlap_us);
            self.peak_power_micros = self.peak_power_micros.max(self.power_draw_micros);
            self.max_not_resting = self.max_not_resting.max(self.not_resting);
        }
        self.metered_us = self.metered_us.max(now_us);
    }

    /// Values set at an instant inside the window are in effect there.
    fn note_current(&mut self, now_us: u64) {
        if (self.window_us.0..self.window_us.1).contains(&now_us) {
            self.peak_power_micros = self.peak_power_micros.max(self.power_draw_micros);
            self.max_not_resting = self.max_not_resting.max(self.not_resting);
        }
    }
}
