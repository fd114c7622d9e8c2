//! The whole design: plan every enclosure × disk candidate, measure every block under the
//! workload, price it, solve the program, then say which constraint binds and how the answer
//! moves when each input moves.
//!
//! Planning is done once per design file ([`Candidates`]); measuring depends on the read
//! intensity (required MB/s per stored TB), so the sensitivity rows that move the capacity or
//! the read rate measure again (a [`SimMemo`] makes repeated runs free). Pricing depends only
//! on prices, so the rows that move a price re-price the same measurements.

use crate::block::{Block, Parts, PriceScales, network_gbps, price_block};
use crate::candidate::{Candidate, plan_candidate};
use crate::catalogue::{DesignFile, MAX_BLOCK_TYPES, Requirements};
use crate::performance::{Measured, ReadWorkload, SimMemo, SimSettings, Trial, measure};
use crate::program::{Choice, Item, Program, SolveError};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// Every enclosure × disk pair, planned (or why not).
pub struct Candidates {
    /// (enclosure, disk) → the planned rack or the reason it is none.
    pub planned: BTreeMap<(usize, usize), Result<Candidate, String>>,
}

/// A candidate the design could not use, and why (for the output: a design is also the list
/// of what was ruled out).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Refusal {
    pub candidate: String,
    pub reason: String,
}

/// Plans every candidate; `enclosure_texts[e]` is enclosure e's rack file text.
pub fn plan_candidates(file: &DesignFile, enclosure_texts: &[String]) -> Candidates {
    let pairs: Vec<(usize, usize)> = (0..file.enclosures.len())
        .flat_map(|e| (0..file.disks.len()).map(move |d| (e, d)))
        .collect();
    let planned = pairs
        .par_iter()
        .map(|&(e, d)| {
            let result = plan_candidate(
                &file.enclosures[e].name,
                &enclosure_texts[e],
                &file.disks[d],
            )
            .map_err(|error| error.to_string());
            ((e, d), result)
        })
        .collect();
    Candidates { planned }
}

/// Every block measured at one read intensity.
#[derive(Clone, Debug)]
pub struct Measurements {
    /// (enclosure, disk, network Gbps bits) → measurement or why none.
    by_network: BTreeMap<(usize, usize, u64), Result<Measured, String>>,
    pub intensity_mb_per_s_per_tb: f64,
}

/// Measures every (candidate, network) pair the servers and NICs make, at the requirements'
/// read intensity; `progress(done, total)` is called as runs finish.
pub fn measure_all(
    file: &DesignFile,
    candidates: &Candidates,
    requirements: &Requirements,
    settings: &SimSettings,
    memo: &dyn SimMemo,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Measurements {
    let workload = ReadWorkload::new(
        requirements
            .workload
            .read_size()
            .expect("validated with the design file"),
    );
    let intensity = requirements.read_mb_per_s / requirements.capacity_tb;
    let mut trials = Vec::new();
    for (&(e, d), planned) in &candidates.planned {
        let Ok(candidate) = planned else { continue };
        let mut networks: Vec<u64> = file
            .servers
            .iter()
            .flat_map(|s| {
                file.nics
                    .iter()
                    .map(|n| network_gbps(&candidate.figures, s, n).to_bits())
            })
            .collect();
        networks.sort_unstable();
        networks.dedup();
        trials.extend(networks.into_iter().map(|bits| (e, d, bits, candidate)));
    }
    let total = trials.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let by_network = trials
        .par_iter()
        .map(|&(e, d, bits, candidate)| {
            let trial = Trial {
                candidate,
                network_gbps: f64::from_bits(bits),
                demand_mb_per_s: intensity * candidate.figures.usable_tb,
                max_utilisation: requirements.max_utilisation,
                first_byte_p99_s: requirements.first_byte_p99_s,
            };
            let result = measure(&trial, &workload, settings, memo);
            let finished = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress(finished, total);
            ((e, d, bits), result)
        })
        .collect();
    Measurements {
        by_network,
        intensity_mb_per_s_per_tb: intensity,
    }
}

/// Prices every block that has a measurement; the rest become refusals.
pub fn price_all(
    file: &DesignFile,
    candidates: &Candidates,
    measurements: &Measurements,
    scales: &PriceScales,
) -> (Vec<Block>, Vec<Refusal>) {
    let mut blocks = Vec::new();
    let mut refusals = Vec::new();
    for (&(e, d), planned) in &candidates.planned {
        let name = format!("{}+{}", file.enclosures[e].name, file.disks[d].name);
        let candidate = match planned {
            Ok(candidate) => candidate,
            Err(reason) => {
                refusals.push(Refusal {
                    candidate: name,
                    reason: reason.clone(),
                });
                continue;
            }
        };
        for (s, server) in file.servers.iter().enumerate() {
            for (n, nic) in file.nics.iter().enumerate() {
                let bits = network_gbps(&candidate.figures, server, nic).to_bits();
                let parts = Parts {
                    enclosure: e,
                    disk: d,
                    server: s,
                    nic: n,
                };
                match &measurements.by_network[&(e, d, bits)] {
                    Ok(measured) => blocks.push(price_block(
                        file,
                        parts,
                        &candidate.figures,
                        measured,
                        measurements.intensity_mb_per_s_per_tb,
                        scales,
                    )),
                    Err(reason) => refusals.push(Refusal {
                        candidate: format!("{name}+{}+{}", server.name, nic.name),
                        reason: format!("the simulator: {reason}"),
                    }),
                }
            }
        }
    }
    refusals.sort_by(|a, b| a.candidate.cmp(&b.candidate));
    refusals.dedup();
    (blocks, refusals)
}

/// The program over `blocks` for `requirements`.
pub fn program(requirements: &Requirements, blocks: &[Block]) -> Program {
    Program {
        items: blocks
            .iter()
            .map(|block| Item {
                tco: block.tco,
                stored_tb: block.stored_tb,
                peak_w: block.peak_w,
                capex: block.capex,
            })
            .collect(),
        capacity_tb: requirements.capacity_tb,
        power_cap_w: requirements.power_cap_kw.map(|kw| kw * 1000.0),
        budget: requirements.budget,
        max_types: requirements.max_block_types,
    }
}

/// One line of the bill of materials.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Line {
    pub count: u32,
    pub block: Block,
}

/// A solved design and its totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Solved {
    pub lines: Vec<Line>,
    pub tco: f64,
    pub capex: f64,
    pub energy_cost: f64,
    pub replacement_cost: f64,
    pub stored_tb: f64,
    pub usable_tb: f64,
    pub peak_kw: f64,
    pub mean_kw: f64,
    /// Reads the design's blocks were each simulated at within the targets, MB/s: every block
    /// at the load its stored data attracts, so at least the requirement (the blocks store at
    /// least the capacity).
    pub verified_read_mb_per_s: f64,
    /// What the blocks delivered at saturation, MB/s: the ceiling, not a load to run at.
    pub saturation_read_mb_per_s: f64,
    /// Time to first byte at the design's load: the read-weighted mean of its blocks' means,
    /// and the worst of their 99th percentiles.
    pub ttfb_mean_s: f64,
    pub ttfb_p99_s: f64,
    pub disks: u64,
    pub servers: u64,
}

/// Turns a choice into bill of materials and totals.
pub fn solved(choice: &Choice, blocks: &[Block], intensity: f64) -> Solved {
    let lines: Vec<Line> = choice
        .counts
        .iter()
        .map(|&(i, count)| Line {
            count,
            block: blocks[i].clone(),
        })
        .collect();
    let sum = |value: &dyn Fn(&Block) -> f64| -> f64 {
        lines
            .iter()
            .map(|line| f64::from(line.count) * value(&line.block))
            .sum()
    };
    let stored_tb = sum(&|b| b.stored_tb);
    let reads = |b: &Block| b.stored_tb * intensity;
    let ttfb_mean_s =
        sum(&|b| reads(b) * b.measured.ttfb_mean_s) / sum(&reads).max(f64::MIN_POSITIVE);
    Solved {
        tco: sum(&|b| b.tco),
        capex: sum(&|b| b.capex),
        energy_cost: sum(&|b| b.energy_cost),
        replacement_cost: sum(&|b| b.replacement_cost),
        stored_tb,
        usable_tb: sum(&|b| b.figures.usable_tb),
        peak_kw: sum(&|b| b.peak_w) / 1000.0,
        mean_kw: sum(&|b| b.mean_w) / 1000.0,
        verified_read_mb_per_s: sum(&|b| b.measured.load_mb_per_s),
        saturation_read_mb_per_s: sum(&|b| b.measured.saturation_mb_per_s),
        ttfb_mean_s,
        ttfb_p99_s: lines
            .iter()
            .map(|line| line.block.measured.ttfb_p99_s)
            .fold(0.0, f64::max),
        disks: lines
            .iter()
            .map(|line| u64::from(line.count) * u64::from(line.block.figures.disks))
            .sum(),
        servers: lines
            .iter()
            .map(|line| u64::from(line.count) * u64::from(line.block.figures.servers))
            .sum(),
        lines,
    }
}

/// Whether one constraint binds: the optimum with it removed, and the slack it has now.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Binding {
    pub constraint: &'static str,
    /// What is left of it in the design (in its own unit), when it has a limit.
    pub slack: Option<f64>,
    pub unit: &'static str,
    /// The least TCO without it (`None`: still infeasible without it).
    pub relaxed_tco: Option<f64>,
    /// Removing it would lower the cost.
    pub binds: bool,
}

/// Each constraint removed in turn (the capacity cannot be: it is what is bought).
pub fn bindings(requirements: &Requirements, blocks: &[Block], solution: &Solved) -> Vec<Binding> {
    let base = program(requirements, blocks);
    let relax = |change: &dyn Fn(&mut Program)| -> Option<f64> {
        let mut relaxed = base.clone();
        change(&mut relaxed);
        relaxed.solve().ok().map(|choice| choice.tco)
    };
    let binding = |constraint, slack, unit, relaxed_tco: Option<f64>| Binding {
        constraint,
        slack,
        unit,
        relaxed_tco,
        binds: relaxed_tco.is_some_and(|tco| tco < solution.tco * (1.0 - 1e-9)),
    };
    // The capacity is what is bought: without it the cheapest design is none, so it always
    // binds; its slack is the data the last block adds beyond the requirement.
    let mut rows = vec![Binding {
        constraint: "capacity",
        slack: Some(solution.stored_tb - requirements.capacity_tb),
        unit: "TB",
        relaxed_tco: Some(0.0),
        binds: true,
    }];
    rows.push(binding(
        "read rate",
        Some(solution.verified_read_mb_per_s - requirements.read_mb_per_s),
        "MB/s",
        relax(&|p| {
            for (item, block) in p.items.iter_mut().zip(blocks) {
                item.stored_tb = if block.measured.load_mb_per_s > 0.0 {
                    block.figures.usable_tb
                } else {
                    0.0
                };
            }
        }),
    ));
    if let Some(cap) = requirements.power_cap_kw {
        rows.push(binding(
            "power cap",
            Some(cap - solution.peak_kw),
            "kW",
            relax(&|p| p.power_cap_w = None),
        ));
    }
    if let Some(budget) = requirements.budget {
        rows.push(binding(
            "budget",
            Some(budget - solution.capex),
            "",
            relax(&|p| p.budget = None),
        ));
    }
    rows.push(binding(
        "block types",
        Some(f64::from(requirements.max_block_types) - solution.lines.len() as f64),
        "kinds",
        relax(&|p| p.max_types = MAX_BLOCK_TYPES),
    ));
    rows
}

/// The blocks' program solved, or why not.
pub fn solve(requirements: &Requirements, blocks: &[Block]) -> Result<Solved, SolveError> {
    let choice = program(requirements, blocks).solve()?;
    let intensity = requirements.read_mb_per_s / requirements.capacity_tb;
    Ok(solved(&choice, blocks, intensity))
}

/// The name of a design for comparisons: `count × block` lines.
pub fn design_text(solution: &Solved) -> String {
    solution
        .lines
        .iter()
        .map(|line| format!("{} × {}", line.count, line.block.name))
        .collect::<Vec<_>>()
        .join(" + ")
}
