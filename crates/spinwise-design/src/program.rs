//! The design as a mixed-integer program, solved by good_lp over microlp, and the same problem
//! solved by exhaustive enumeration as an independent check.
//!
//! ```text
//! minimise    Σ tco_b · x_b
//! subject to  Σ stored_b · x_b ≥ capacity            (data; reads are folded into stored_b)
//!             Σ peak_b · x_b   ≤ power cap            (if given)
//!             Σ capex_b · x_b  ≤ budget               (if given)
//!             x_b ≤ U_b · y_b,  Σ y_b ≤ max types     (at most that many kinds of block)
//!             x_b ∈ ℤ≥0, y_b ∈ {0, 1},  U_b = ⌈capacity / stored_b⌉
//! ```
//!
//! Before solving, blocks another block dominates (no more costly, no less stored, no more
//! power, no more capex) are dropped: swapping a dominated block for its dominator keeps any
//! solution feasible and no dearer, so the optimum is unchanged, and the program shrinks from
//! the catalogue's product to its Pareto front. The enumeration sees every block, so it checks
//! the pruning as well as the solver.

use good_lp::{
    Expression, ProblemVariables, ResolutionError, Solution, SolverModel, Variable, constraint,
    microlp, variable,
};
use serde::Serialize;
use thiserror::Error;

/// Most enumerated count vectors before the enumeration gives up (it is a check for small
/// catalogues, not a solver).
pub const MAX_ENUMERATED: u64 = 200_000_000;
/// Relative slack on the capacity constraint when checking a rounded solution.
const CAPACITY_TOLERANCE: f64 = 1e-9;

/// One block as the program sees it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Item {
    pub tco: f64,
    pub stored_tb: f64,
    pub peak_w: f64,
    pub capex: f64,
}

/// The program's data.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Program {
    pub items: Vec<Item>,
    pub capacity_tb: f64,
    pub power_cap_w: Option<f64>,
    pub budget: Option<f64>,
    pub max_types: u32,
}

/// An optimum: how many of which items, and the objective.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Choice {
    /// (item index, count), counts ≥ 1, by index.
    pub counts: Vec<(usize, u32)>,
    pub tco: f64,
}

#[derive(Debug, Error, Clone, PartialEq)]
pub enum SolveError {
    #[error("no design meets the requirements with this catalogue")]
    Infeasible,
    #[error("the solver failed: {0}")]
    Solver(String),
    #[error("enumeration would visit more than {MAX_ENUMERATED} count vectors; use the solver")]
    TooLarge,
}

impl Program {
    fn upper_bound(&self, item: &Item) -> u32 {
        (self.capacity_tb / item.stored_tb)
            .ceil()
            .min(f64::from(u32::MAX)) as u32
    }

    /// Items that can hold data and that no other item dominates (module docs).
    pub fn front(&self) -> Vec<usize> {
        let usable: Vec<usize> = (0..self.items.len())
            .filter(|&i| self.items[i].stored_tb > 0.0)
            .collect();
        usable
            .iter()
            .copied()
            .filter(|&i| !usable.iter().any(|&j| dominates(j, i, &self.items)))
            .collect()
    }

    /// The sums of a count vector: (tco, stored, peak, capex).
    pub fn totals(&self, counts: &[(usize, u32)]) -> (f64, f64, f64, f64) {
        counts.iter().fold((0.0, 0.0, 0.0, 0.0), |sums, &(i, n)| {
            let (item, n) = (&self.items[i], f64::from(n));
            (
                sums.0 + item.tco * n,
                sums.1 + item.stored_tb * n,
                sums.2 + item.peak_w * n,
                sums.3 + item.capex * n,
            )
        })
    }

    /// Whether a count vector meets every constraint.
    pub fn feasible(&self, counts: &[(usize, u32)]) -> bool {
        let (_, stored, peak, capex) = self.totals(counts);
        stored >= self.capacity_tb * (1.0 - CAPACITY_TOLERANCE)
            && self
                .power_cap_w
                .is_none_or(|cap| peak <= cap * (1.0 + 1e-9))
            && self
                .budget
                .is_none_or(|budget| capex <= budget * (1.0 + 1e-9))
            && counts.iter().filter(|(_, n)| *n > 0).count() <= self.max_types as usize
    }

    /// Solves the program with good_lp over microlp.
    pub fn solve(&self) -> Result<Choice, SolveError> {
        let front = self.front();
        if front.is_empty() {
            return Err(SolveError::Infeasible);
        }
        let mut variables = ProblemVariables::new();
        let counts: Vec<Variable> = front
            .iter()
            .map(|&i| {
                let bound = f64::from(self.upper_bound(&self.items[i]));
                variables.add(variable().integer().min(0.0).max(bound))
            })
            .collect();
        let used: Vec<Variable> = front
            .iter()
            .map(|_| variables.add(variable().binary()))
            .collect();
        let sum = |weight: &dyn Fn(&Item) -> f64| -> Expression {
            front
                .iter()
                .zip(&counts)
                .map(|(&i, &x)| weight(&self.items[i]) * x)
                .sum()
        };
        let objective = sum(&|item| item.tco);
        let mut model = variables
            .minimise(objective)
            .using(microlp)
            .with(constraint!(sum(&|item| item.stored_tb) >= self.capacity_tb));
        if let Some(cap) = self.power_cap_w {
            model = model.with(constraint!(sum(&|item| item.peak_w) <= cap));
        }
        if let Some(budget) = self.budget {
            model = model.with(constraint!(sum(&|item| item.capex) <= budget));
        }
        for ((&i, &x), &y) in front.iter().zip(&counts).zip(&used) {
            let bound = f64::from(self.upper_bound(&self.items[i]));
            model = model.with(constraint!(x <= bound * y));
        }
        let types: Expression = used.iter().copied().sum();
        model = model.with(constraint!(types <= f64::from(self.max_types)));
        let solution = model.solve().map_err(|error| match error {
            ResolutionError::Infeasible => SolveError::Infeasible,
            other => SolveError::Solver(other.to_string()),
        })?;
        let chosen: Vec<(usize, u32)> = front
            .iter()
            .zip(&counts)
            .map(|(&i, &x)| (i, solution.value(x).round() as u32))
            .filter(|&(_, n)| n > 0)
            .collect();
        // The solver works to a tolerance: a requirement below it (a capacity of 1e-9 TB is
        // met by 1e-10 of a block) rounds to a choice that breaks it. That is the input's doing,
        // not a broken invariant (an assertion here panicked until 2026-12-01).
        if !self.feasible(&chosen) {
            return Err(SolveError::Solver(format!(
                "its answer rounded to whole blocks ({chosen:?}) breaks a constraint: a requirement is likely below the solver's precision (e.g. a capacity of a few kilobytes)"
            )));
        }
        let tco = self.totals(&chosen).0;
        Ok(Choice {
            counts: chosen,
            tco,
        })
    }

    /// Solves the program by trying every count vector of every set of at most `max_types`
    /// items (the last item of a set takes the fewest blocks that reach the capacity: more only
    /// cost, draw and spend more). Exponential: a check for small catalogues.
    pub fn enumerate(&self) -> Result<Choice, SolveError> {
        let usable: Vec<usize> = (0..self.items.len())
            .filter(|&i| self.items[i].stored_tb > 0.0)
            .collect();
        let mut search = Enumeration {
            program: self,
            usable: &usable,
            best: None,
            visited: 0,
        };
        search.extend(0, &mut Vec::new(), 0.0)?;
        search.best.ok_or(SolveError::Infeasible)
    }
}

fn dominates(j: usize, i: usize, items: &[Item]) -> bool {
    let (a, b) = (&items[j], &items[i]);
    let no_worse =
        a.tco <= b.tco && a.stored_tb >= b.stored_tb && a.peak_w <= b.peak_w && a.capex <= b.capex;
    let better =
        a.tco < b.tco || a.stored_tb > b.stored_tb || a.peak_w < b.peak_w || a.capex < b.capex;
    // Equal items: the lower index stays, so exactly one of a tie survives.
    j != i && no_worse && (better || j < i)
}

struct Enumeration<'a> {
    program: &'a Program,
    usable: &'a [usize],
    best: Option<Choice>,
    visited: u64,
}

impl Enumeration<'_> {
    /// Chooses counts for items from `usable[from..]`, `chosen` holding the earlier choices and
    /// `stored` their data.
    fn extend(
        &mut self,
        from: usize,
        chosen: &mut Vec<(usize, u32)>,
        stored: f64,
    ) -> Result<(), SolveError> {
        let program = self.program;
        for position in from..self.usable.len() {
            let index = self.usable[position];
            let item = program.items[index];
            let missing = (program.capacity_tb - stored).max(0.0);
            // As the last item of the set: the fewest that close the gap.
            let closing = (missing / item.stored_tb * (1.0 - CAPACITY_TOLERANCE)).ceil() as u32;
            self.consider(chosen, (index, closing.max(1)));
            if chosen.len() + 1 < program.max_types as usize {
                for count in 1..closing {
                    self.visited += 1;
                    if self.visited > MAX_ENUMERATED {
                        return Err(SolveError::TooLarge);
                    }
                    chosen.push((index, count));
                    self.extend(
                        position + 1,
                        chosen,
                        stored + f64::from(count) * item.stored_tb,
                    )?;
                    chosen.pop();
                }
            }
        }
        Ok(())
    }

    fn consider(&mut self, chosen: &[(usize, u32)], last: (usize, u32)) {
        let mut counts = chosen.to_vec();
        counts.push(last);
        counts.sort_unstable();
        if !self.program.feasible(&counts) {
            return;
        }
        let tco = self.program.totals(&counts).0;
        if self.best.as_ref().is_none_or(|best| tco < best.tco) {
            self.best = Some(Choice { counts, tco });
        }
    }
}
