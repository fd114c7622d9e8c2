//! The plan's batches and reads: every step writes, batches tile the file set in order and track
//! the utilisation goals, reads name only written files, and the same plan reads the same keys.

use proptest::prelude::*;
use spinwise_bench::{BenchPlan, FileSpec, ReadSkew};

fn plan_of(sizes: &[u64], steps: u32, reads_per_step: u32, read_skew: ReadSkew) -> BenchPlan {
    let files: Vec<FileSpec> = sizes
        .iter()
        .enumerate()
        .map(|(index, &size_bytes)| FileSpec {
            key: format!("f{index}"),
            size_bytes,
        })
        .collect();
    let total: u64 = sizes.iter().sum();
    BenchPlan {
        files,
        capacity_bytes: total.max(1) * 2,
        steps,
        reads_per_step,
        read_skew,
        concurrency: 2,
        seed: 7,
    }
}

proptest! {
    #[test]
    fn batches_tile_the_file_set_in_order_with_at_least_one_file_each(
        sizes in proptest::collection::vec(0u64..5_000_000, 1..200),
        steps in 1u32..20,
    ) {
        prop_assume!(steps as usize <= sizes.len());
        let plan = plan_of(&sizes, steps, 3, ReadSkew::Uniform);
        plan.validate().unwrap();
        let batches = plan.steps();
        prop_assert_eq!(batches.len(), steps as usize);
        let mut next = 0;
        for step in &batches {
            prop_assert_eq!(step.writes.start, next);
            prop_assert!(!step.writes.is_empty());
            next = step.writes.end;
            let written: u64 = sizes[..step.writes.end].iter().sum();
            prop_assert_eq!(step.written_bytes, written);
        }
        prop_assert_eq!(next, sizes.len());
    }

    #[test]
    fn a_step_reads_only_files_written_by_then(
        sizes in proptest::collection::vec(1u64..1_000, 1..100),
        steps in 1u32..10,
        zipf in proptest::bool::ANY,
    ) {
        prop_assume!(steps as usize <= sizes.len());
        let skew = if zipf { ReadSkew::Zipf { exponent: 1.1 } } else { ReadSkew::Uniform };
        let plan = plan_of(&sizes, steps, 50, skew);
        for step in plan.steps() {
            prop_assert_eq!(step.reads.len(), 50);
            prop_assert!(step.reads.iter().all(|&index| index < step.writes.end));
        }
    }
}

#[test]
fn equal_files_split_into_equal_batches() {
    let plan = plan_of(&[100; 12], 4, 0, ReadSkew::Uniform);
    let ends: Vec<usize> = plan.steps().iter().map(|s| s.writes.end).collect();
    assert_eq!(ends, vec![3, 6, 9, 12]);
}

#[test]
fn the_same_plan_reads_the_same_files_and_another_seed_does_not() {
    let plan = plan_of(&[10; 500], 3, 40, ReadSkew::Uniform);
    let reads = |plan: &BenchPlan| -> Vec<Vec<usize>> {
        plan.steps().into_iter().map(|s| s.reads).collect()
    };
    assert_eq!(reads(&plan), reads(&plan.clone()));
    let other = BenchPlan {
        seed: 8,
        ..plan.clone()
    };
    assert_ne!(reads(&plan), reads(&other));
}

#[test]
fn zipf_reads_favour_the_newest_files() {
    let plan = plan_of(&[10; 1000], 1, 20_000, ReadSkew::Zipf { exponent: 1.2 });
    let reads = &plan.steps()[0].reads;
    let newest_tenth = reads.iter().filter(|&&index| index >= 900).count();
    let oldest_tenth = reads.iter().filter(|&&index| index < 100).count();
    assert!(
        newest_tenth > 10 * oldest_tenth,
        "newest tenth {newest_tenth} reads, oldest tenth {oldest_tenth}"
    );
    let uniform = plan_of(&[10; 1000], 1, 20_000, ReadSkew::Uniform);
    let newest_uniform = uniform.steps()[0]
        .reads
        .iter()
        .filter(|&&i| i >= 900)
        .count();
    assert!((1_600..2_400).contains(&newest_uniform), "{newest_uniform}");
}

#[test]
fn validation_names_the_limit_broken() {
    let refusal = |plan: BenchPlan| plan.validate().unwrap_err().to_string();
    let base = plan_of(&[10; 4], 2, 1, ReadSkew::Uniform);
    assert!(
        refusal(BenchPlan {
            files: Vec::new(),
            ..base.clone()
        })
        .contains("empty")
    );
    assert!(
        refusal(BenchPlan {
            steps: 5,
            ..base.clone()
        })
        .contains("at least one file")
    );
    assert!(
        refusal(BenchPlan {
            steps: 0,
            ..base.clone()
        })
        .contains("steps")
    );
    assert!(
        refusal(BenchPlan {
            concurrency: 0,
            ..base.clone()
        })
        .contains("concurrency")
    );
    assert!(
        refusal(BenchPlan {
            capacity_bytes: 39,
            ..base.clone()
        })
        .contains("capacity")
    );
    let zipf = ReadSkew::Zipf { exponent: f64::NAN };
    assert!(
        refusal(BenchPlan {
            read_skew: zipf,
            ..base.clone()
        })
        .contains("Zipf")
    );
    let mut huge = base.clone();
    huge.files[1].size_bytes = (1 << 30) + 1;
    huge.capacity_bytes = u64::MAX;
    assert!(refusal(huge).contains("f1"));
}
