//! Whole designs over the small catalogue: every block measured by the simulator keeps its
//! load within what it measured, a NIC caps what a block moves, the program's optimum is the
//! enumeration's, and a read rate the cheapest blocks cannot serve binds.

use crate::small_design;
use spinwise_design::block::PriceScales;
use spinwise_design::catalogue::DesignFile;
use spinwise_design::design::{
    Candidates, bindings, measure_all, plan_candidates, price_all, program, solve,
};
use spinwise_design::performance::{NoMemo, SimMemo, SimOutcome, SimSettings};
use std::collections::BTreeMap;
use std::sync::Mutex;

const SETTINGS: SimSettings = SimSettings {
    hours: 2.0,
    warmup_hours: 0.5,
    seed: 3,
};

fn planned(file: &DesignFile) -> Candidates {
    let texts = vec![crate::preset("dense-jbod-60")];
    plan_candidates(file, &texts)
}

fn blocks(file: &DesignFile, memo: &dyn SimMemo) -> Vec<spinwise_design::block::Block> {
    let candidates = planned(file);
    let measurements = measure_all(
        file,
        &candidates,
        &file.requirements,
        &SETTINGS,
        memo,
        &|_, _| {},
    );
    let (blocks, refused) = price_all(file, &candidates, &measurements, &PriceScales::default());
    assert!(refused.is_empty(), "{refused:?}");
    blocks
}

#[test]
fn every_block_is_loaded_within_its_measured_saturation_and_its_nic() {
    let file = small_design(2000.0, 400.0);
    let blocks = blocks(&file, &NoMemo);
    assert_eq!(blocks.len(), 4, "2 disks × 1 server × 2 NICs");
    for block in &blocks {
        let measured = &block.measured;
        assert!(measured.saturation_mb_per_s > 0.0, "{}", block.name);
        assert!(
            measured.load_mb_per_s <= 0.8 * measured.saturation_mb_per_s + 1e-9,
            "{}: load {} over 80% of {}",
            block.name,
            measured.load_mb_per_s,
            measured.saturation_mb_per_s
        );
        if block.name.ends_with("+1g") {
            // One 1 Gbps NIC moves at most 125 MB/s whatever the disks could do.
            assert!(
                measured.saturation_mb_per_s <= 125.0 * 1.001,
                "{}",
                measured.saturation_mb_per_s
            );
        } else {
            assert!(
                measured.saturation_mb_per_s > 300.0,
                "{}",
                measured.saturation_mb_per_s
            );
        }
        assert!(block.stored_tb <= block.figures.usable_tb + 1e-9);
    }
}

#[test]
fn the_design_is_the_optimum_exhaustive_enumeration_finds() {
    let file = small_design(2000.0, 400.0);
    let blocks = blocks(&file, &NoMemo);
    let the_program = program(&file.requirements, &blocks);
    let solved = the_program.solve().expect("a design exists");
    let enumerated = the_program.enumerate().expect("a design exists");
    assert!((solved.tco - enumerated.tco).abs() <= 1e-6 * solved.tco);
    let design = solve(&file.requirements, &blocks).unwrap();
    assert!(design.stored_tb >= 2000.0 * (1.0 - 1e-9));
    assert!(design.verified_read_mb_per_s >= 400.0 * (1.0 - 1e-9));
}

#[test]
fn a_read_rate_the_blocks_cannot_serve_at_full_capacity_binds() {
    // 1 GB/s for every 0.5 PB: about 1.0 GB/s per 60-disk block, above 80% of what one
    // jbod-60 delivers at saturation, so blocks are filled only partly and more are bought.
    let file = small_design(500.0, 1000.0);
    let blocks = blocks(&file, &NoMemo);
    let design = solve(&file.requirements, &blocks).unwrap();
    assert!(
        design.lines.iter().any(|line| line.block.read_bound),
        "{design:?}"
    );
    let rows = bindings(&file.requirements, &blocks, &design);
    let read_rate = rows
        .iter()
        .find(|row| row.constraint == "read rate")
        .unwrap();
    assert!(read_rate.binds, "{rows:?}");
    assert!(read_rate.relaxed_tco.unwrap() < design.tco);
}

#[test]
fn a_first_byte_target_below_a_spin_up_leaves_no_design() {
    let mut file = small_design(2000.0, 400.0);
    file.requirements.first_byte_p99_s = Some(5.0);
    let blocks = blocks(&file, &NoMemo);
    assert!(
        blocks
            .iter()
            .all(|block| block.stored_tb == 0.0 && block.measured.limited_by_latency)
    );
    assert!(solve(&file.requirements, &blocks).is_err());
}

#[derive(Default)]
struct CountingMemo {
    outcomes: Mutex<BTreeMap<String, SimOutcome>>,
    hits: Mutex<u32>,
}

impl SimMemo for CountingMemo {
    fn get(&self, key: &str) -> Option<SimOutcome> {
        let found = self.outcomes.lock().unwrap().get(key).copied();
        if found.is_some() {
            *self.hits.lock().unwrap() += 1;
        }
        found
    }
    fn put(&self, key: &str, outcome: &SimOutcome) {
        self.outcomes.lock().unwrap().insert(key.into(), *outcome);
    }
}

#[test]
fn a_second_design_of_the_same_file_is_answered_by_the_memo_with_the_same_blocks() {
    let file = small_design(2000.0, 400.0);
    let memo = CountingMemo::default();
    let first = blocks(&file, &memo);
    assert_eq!(*memo.hits.lock().unwrap(), 0);
    let mut second = blocks(&file, &memo);
    assert!(*memo.hits.lock().unwrap() >= 4);
    for block in &mut second {
        assert_eq!(block.measured.remembered, block.measured.simulations);
        block.measured.remembered = 0;
    }
    assert_eq!(first, second, "the memo changes nothing it answers");
}
