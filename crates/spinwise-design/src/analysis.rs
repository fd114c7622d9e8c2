//! How the answer moves: every input moved down and up in turn (sensitivity), and the least
//! cost as the read rate grows, for the best design and for each enclosure alone (the cost
//! frontier).

use crate::block::{Block, PriceScales};
use crate::catalogue::{DesignFile, Requirements};
use crate::design::{Candidates, Measurements, design_text, measure_all, price_all, solve};
use crate::performance::{SimMemo, SimSettings};
use serde::Serialize;

/// The factors every input is moved by.
pub const SENSITIVITY_FACTORS: [f64; 2] = [0.8, 1.25];
/// The read rates of the frontier, as multiples of the required one.
pub const FRONTIER_FACTORS: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];

/// One input moved: the design and cost that result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sensitivity {
    pub input: &'static str,
    pub factor: f64,
    /// `None`: no design meets the moved requirements.
    pub tco: Option<f64>,
    pub tco_change: Option<f64>,
    pub design: String,
    pub design_changes: bool,
}

/// What a sensitivity or frontier run needs besides the inputs it moves.
pub struct Context<'a> {
    pub file: &'a DesignFile,
    pub candidates: &'a Candidates,
    pub settings: &'a SimSettings,
    pub memo: &'a dyn SimMemo,
}

impl Context<'_> {
    fn blocks_for(&self, requirements: &Requirements, scales: &PriceScales) -> Vec<Block> {
        let measurements: Measurements = measure_all(
            self.file,
            self.candidates,
            requirements,
            self.settings,
            self.memo,
            &|_, _| {},
        );
        price_all(self.file, self.candidates, &measurements, scales).0
    }
}

/// Every input moved by each of [`SENSITIVITY_FACTORS`]; `base` is the unmoved design's text
/// and cost, `measurements` the unmoved measurements (re-priced for the price rows).
pub fn sensitivity(
    context: &Context,
    measurements: &Measurements,
    base: (&str, f64),
) -> Vec<Sensitivity> {
    let requirements = &context.file.requirements;
    // The power-cap and budget rows move only a constraint: the unmoved blocks, priced once.
    let base_blocks = price_all(
        context.file,
        context.candidates,
        measurements,
        &PriceScales::default(),
    )
    .0;
    let mut rows = Vec::new();
    for factor in SENSITIVITY_FACTORS {
        let row = |input: &'static str, requirements: &Requirements, blocks: &[Block]| {
            let solution = solve(requirements, blocks).ok();
            let design = solution
                .as_ref()
                .map_or_else(|| "infeasible".to_string(), design_text);
            Sensitivity {
                input,
                factor,
                tco: solution.as_ref().map(|s| s.tco),
                tco_change: solution.as_ref().map(|s| s.tco / base.1 - 1.0),
                design_changes: design != base.0,
                design,
            }
        };
        for (input, scales) in price_scales(factor) {
            let blocks = price_all(context.file, context.candidates, measurements, &scales).0;
            rows.push(row(input, requirements, &blocks));
        }
        let mut moved = requirements.clone();
        moved.capacity_tb *= factor;
        rows.push(row(
            "capacity",
            &moved,
            &context.blocks_for(&moved, &PriceScales::default()),
        ));
        let mut moved = requirements.clone();
        moved.read_mb_per_s *= factor;
        rows.push(row(
            "read rate",
            &moved,
            &context.blocks_for(&moved, &PriceScales::default()),
        ));
        if let Some(cap) = requirements.power_cap_kw {
            let mut moved = requirements.clone();
            moved.power_cap_kw = Some(cap * factor);
            rows.push(row("power cap", &moved, &base_blocks));
        }
        if let Some(budget) = requirements.budget {
            let mut moved = requirements.clone();
            moved.budget = Some(budget * factor);
            rows.push(row("budget", &moved, &base_blocks));
        }
    }
    rows
}

fn price_scales(factor: f64) -> [(&'static str, PriceScales); 5] {
    let one = PriceScales::default();
    [
        (
            "disk prices",
            PriceScales {
                disks: factor,
                ..one
            },
        ),
        (
            "enclosure prices",
            PriceScales {
                enclosures: factor,
                ..one
            },
        ),
        (
            "server and NIC prices",
            PriceScales {
                servers_and_nics: factor,
                ..one
            },
        ),
        (
            "electricity price",
            PriceScales {
                electricity: factor,
                ..one
            },
        ),
        (
            "service life",
            PriceScales {
                service_life: factor,
                ..one
            },
        ),
    ]
}

/// One read rate of the frontier: the least TCO overall and with each enclosure alone.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrontierPoint {
    pub read_mb_per_s: f64,
    pub best_tco: Option<f64>,
    pub best_design: String,
    /// Per enclosure (catalogue order): the least TCO using only it.
    pub by_enclosure: Vec<Option<f64>>,
}

/// The cost frontier over [`FRONTIER_FACTORS`] of the required read rate.
pub fn frontier(context: &Context) -> Vec<FrontierPoint> {
    let requirements = &context.file.requirements;
    FRONTIER_FACTORS
        .iter()
        .map(|&factor| {
            let mut moved = requirements.clone();
            moved.read_mb_per_s *= factor;
            let blocks = context.blocks_for(&moved, &PriceScales::default());
            let best = solve(&moved, &blocks).ok();
            let by_enclosure = (0..context.file.enclosures.len())
                .map(|enclosure| {
                    let only: Vec<Block> = blocks
                        .iter()
                        .filter(|b| b.parts.enclosure == enclosure)
                        .cloned()
                        .collect();
                    solve(&moved, &only).ok().map(|s| s.tco)
                })
                .collect();
            FrontierPoint {
                read_mb_per_s: moved.read_mb_per_s,
                best_tco: best.as_ref().map(|s| s.tco),
                best_design: best
                    .as_ref()
                    .map_or_else(|| "infeasible".to_string(), design_text),
                by_enclosure,
            }
        })
        .collect()
}
