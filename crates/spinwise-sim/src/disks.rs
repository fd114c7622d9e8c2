//! The model disks' operating states, the independent budget checker fed by every state change,
//! and the time-weighted meters over them (power, disks not resting).
//!
//! The checker shares nothing with the scheduler's books (`spinwise_sched::budget`): it reads the
//! rack's hard resources — their domains, per-state costs and budgets — and the state each disk
//! is in *physically* in the model (a disk that finished spinning up is active even while the
//! scheduler still charges its group as spinning up). After every state change it recomputes from
//! scratch, disk by disk, the draw of every hard domain holding a disk that changed; other
//! domains' draws cannot have changed. (Recomputing all ~750 of Pelican's domains after each of
//! the ~26 changes of a group's spin-up cycle would cost more than the rest of the loop.)
//!
//! Invariants: `state_of[d]` is the state disk `d` is in now; `power_draw_micros` and
//! `not_resting` are exactly the sums over disks of the current states (kept incrementally;
//! `not_resting` is re-derived in debug builds); meters have integrated everything up to `metered_us`.

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
    /// Scratch: (resource, domain) pairs touched by one change.
    touched: Vec<(usize, u32)>,
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
        let mut disks = Disks {
            state_of: vec![resting; rack.disk_count()],
            resting,
            hard: rack.hard_resources().map(|(index, _)| index).collect(),
            power_cost_micros,
            power_draw_micros,
            not_resting: 0,
            window_us,
            metered_us: 0,
            power_integral: 0,
            peak_power_micros: 0,
            max_not_resting: 0,
            violations: 0,
            touched: Vec::new(),
        };
        for &resource in &disks.hard {
            for domain in 0..rack.resources[resource].domains.len() {
                disks.touched.push((resource, domain as u32));
            }
        }
        disks.check_touched(rack);
        disks.note_current(0);
        disks
    }

    /// Moves `moved` disks to `state` at `now_us`, then checks the domains they are in.
    pub fn set(&mut self, rack: &Rack, now_us: u64, moved: &[DiskIndex], state: StateIndex) {
        self.meter_until(now_us);
        for &disk in moved {
            let from = std::mem::replace(&mut self.state_of[disk as usize], state);
            if let Some(cost) = &self.power_cost_micros {
                self.power_draw_micros += cost[state] - cost[from];
            }
            self.not_resting = self.not_resting - u32::from(from != self.resting)
                + u32::from(state != self.resting);
            for &resource in &self.hard {
                self.touched
                    .push((resource, rack.resources[resource].domain_of[disk as usize]));
            }
        }
        self.check_touched(rack);
        debug_assert_eq!(
            self.not_resting as usize,
            self.state_of.iter().filter(|s| **s != self.resting).count()
        );
        self.note_current(now_us);
    }

    /// Ends the window at `end_us` if it was open longer (a burst's window closes at the run's
    /// last event). Meters never ran past the last event, so nothing integrated is lost.
    pub fn close_window(&mut self, end_us: u64) {
        assert!(end_us > self.window_us.0, "a window has a positive length");
        self.window_us.1 = self.window_us.1.min(end_us);
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

    /// Recomputes each touched hard domain's draw from the disks' states; counts every domain
    /// over budget as one violation.
    fn check_touched(&mut self, rack: &Rack) {
        self.touched.sort_unstable();
        self.touched.dedup();
        for &(resource, domain) in &self.touched {
            let resource = &rack.resources[resource];
            let draw = resource.domains[domain as usize]
                .iter()
                .fold(Amount::ZERO, |sum, disk| {
                    sum + resource.cost[self.state_of[*disk as usize]]
                });
            if draw > resource.budget {
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
