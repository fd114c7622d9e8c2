//! How the design's program scales with the number of blocks, for docs/BENCHMARKS.md
//! ("Design: the solver"): seeded random catalogues shaped like real ones (cost roughly
//! proportional to stored data, power and capex correlated with it, power caps and budgets on
//! some seeds), the size of the Pareto front the solver sees after dominance pruning, the
//! solver's time, and whether exhaustive enumeration finds the same optimum.
//!
//! `cargo run --release -p spinwise-design --example solver_scaling`

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spinwise_design::program::{Item, Program};
use std::time::Instant;

/// Largest catalogue enumeration is run against (it is exponential in the block types).
const ENUMERATED_UP_TO: usize = 200;
const SEEDS: u64 = 10;

fn catalogue(blocks: usize, seed: u64) -> Program {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let items = (0..blocks)
        .map(|_| {
            let stored_tb: f64 = rng.random_range(200.0..30_000.0);
            let tco = stored_tb * rng.random_range(30.0..60.0) * rng.random_range(0.9..1.1)
                + rng.random_range(5_000.0..50_000.0);
            Item {
                tco,
                stored_tb,
                peak_w: stored_tb * rng.random_range(0.3..1.2) + rng.random_range(200.0..2_000.0),
                capex: tco * rng.random_range(0.7..0.9),
            }
        })
        .collect();
    let capacity_tb = rng.random_range(2_000.0..50_000.0);
    Program {
        items,
        capacity_tb,
        power_cap_w: seed
            .is_multiple_of(2)
            .then(|| capacity_tb * rng.random_range(0.4..0.8)),
        budget: seed
            .is_multiple_of(3)
            .then(|| capacity_tb * rng.random_range(35.0..45.0)),
        max_types: 2,
    }
}

fn main() {
    println!("blocks,seed,front,solve_s,feasible,enumerate_s,same_optimum");
    for blocks in [20, 50, 100, 200, 400, 1000] {
        for seed in 0..SEEDS {
            let program = catalogue(blocks, seed);
            let front = program.front().len();
            let started = Instant::now();
            let solved = program.solve();
            let solve_s = started.elapsed().as_secs_f64();
            let (enumerate_s, same) = if blocks <= ENUMERATED_UP_TO {
                let started = Instant::now();
                let enumerated = program.enumerate();
                let same = match (&solved, &enumerated) {
                    (Ok(a), Ok(b)) => (a.tco - b.tco).abs() <= 1e-6 * b.tco,
                    (Err(_), Err(_)) => true,
                    _ => false,
                };
                (
                    format!("{:.4}", started.elapsed().as_secs_f64()),
                    same.to_string(),
                )
            } else {
                (String::new(), String::new())
            };
            println!(
                "{blocks},{seed},{front},{solve_s:.4},{},{enumerate_s},{same}",
                solved.is_ok()
            );
        }
    }
}
