//! Measures the exact high-load maximum (issue 29) on every preset, for docs/BENCHMARKS.md:
//! the planner's greedy figure, the exact maximum and its proven bound, the method, the nodes and
//! the time of the search alone (best of three unseeded runs on the planned layout) and of the
//! whole plan (one run; the planner seeds the search with its greedy witness).
//!
//! `cargo run --release -p spinwise-plan --example high_load_maximum [PRESET…]`
//!
//! An example, not part of the library: it reads files and the wall clock, which the planner
//! itself never does.

use spinwise_model::{DiskIndex, GroupIndex, parse_rack};
use spinwise_plan::high_load::{DEFAULT_NODE_LIMIT, high_load_maximum};
use spinwise_plan::plan::plan;
use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let presets_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../presets");
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    // The search's node limit (default the planner's): `HIGH_LOAD_NODE_LIMIT=N` to see what a
    // larger or smaller budget buys.
    let node_limit = match std::env::var("HIGH_LOAD_NODE_LIMIT") {
        Ok(text) => text.parse()?,
        Err(_) => DEFAULT_NODE_LIMIT,
    };
    if names.is_empty() {
        for entry in std::fs::read_dir(&presets_dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "toml")
                && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
            {
                names.push(stem.to_string());
            }
        }
        names.sort();
    }
    println!(
        "| preset | groups | greedy (before) | previous bound | exact maximum | proven upper bound | method | nodes | search ms (best of 3) | plan ms (search seeded by the greedy witness) | efficient |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for name in names {
        let text = std::fs::read_to_string(presets_dir.join(format!("{name}.toml")))?;
        let rack = parse_rack(&format!("preset:{name}"), &text)?;
        let started = Instant::now();
        let planned = plan(&rack)?;
        let plan_ms = started.elapsed().as_secs_f64() * 1e3;
        let layout = &planned.layout;
        let index_of: std::collections::BTreeMap<u32, DiskIndex> = rack
            .disks
            .iter()
            .enumerate()
            .map(|(index, disk)| (disk.id, index as DiskIndex))
            .collect();
        let groups: Vec<Vec<DiskIndex>> = layout
            .groups
            .iter()
            .map(|g| g.iter().map(|id| index_of[id]).collect())
            .collect();
        // The greedy figure the planner reported before issue 29: best of the seeded passes, the
        // seed the search starts from. Recomputed here without a seed to show the search alone.
        let previous_bound =
            spinwise_plan::analysis::high_load_target(&rack, u64::from(layout.group_size));
        let greedy = greedy_figure(&rack, &groups);
        let mut best_ms = f64::INFINITY;
        let mut result = None;
        for _ in 0..3 {
            let start = Instant::now();
            let found = high_load_maximum(&rack, &groups, &[], node_limit);
            best_ms = best_ms.min(start.elapsed().as_secs_f64() * 1e3);
            result = Some(found);
        }
        let result = result.expect("three runs");
        if node_limit == DEFAULT_NODE_LIMIT
            && result.upper_bound != u64::from(layout.high_load_bound)
        {
            return Err("the search disagrees with the planner's figure".into());
        }
        println!(
            "| {name} | {} | {greedy} | {previous_bound} | {}{} | {} | {} | {} | {best_ms:.1} | {plan_ms:.0} | {} |",
            layout.groups.len(),
            result.witness.len(),
            if result.exact { "" } else { " (lower bound)" },
            result.upper_bound,
            result.method.name(),
            result.nodes,
            layout.efficient,
        );
    }
    Ok(())
}

/// The old figure: the best of the planner's seeded greedy passes (all but the last active).
fn greedy_figure(rack: &spinwise_model::Rack, groups: &[Vec<DiskIndex>]) -> usize {
    let mut group_of = vec![0 as GroupIndex; rack.disk_count()];
    for (group, disks) in groups.iter().enumerate() {
        for &disk in disks {
            group_of[disk as usize] = group as GroupIndex;
        }
    }
    let mut admission =
        spinwise_plan::admission::Admission::from_rack(rack, &group_of, groups.len());
    let count = groups.len() as u64;
    let mut order: Vec<GroupIndex> = (0..count as GroupIndex).collect();
    let mut best = admission.high_load_trial(&order, count);
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5b17_4e55);
    for _ in 0..2_000 {
        order.shuffle(&mut rng);
        best = best.max(admission.high_load_trial(&order, count));
    }
    best as usize
}
