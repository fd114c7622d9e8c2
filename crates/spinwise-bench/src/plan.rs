//! The benchmark's plan: the file set, how it is cut into sequential-write batches, and which
//! files each step reads back. Nothing here is timed or touches a target, so a plan can be
//! checked (and its reads replayed by the simulator) before anything runs.
//!
//! Invariants:
//! - Files are written in their order in [`BenchPlan::files`]; step i writes the files whose
//!   cumulative bytes first reach i/steps of the set's total, so every step writes at least one
//!   file and the last step ends with the last file.
//! - A step's reads name only files written by it or by earlier steps, drawn from a generator
//!   seeded by the plan's seed and the step's number alone: the same plan reads the same keys on
//!   every target.
//! - Limits are checked by [`BenchPlan::validate`] before anything is written.

use crate::{BenchError, BenchResult};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Zipf};
use serde::Serialize;

/// Largest file the benchmark writes: its payload is one buffer held in memory.
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// Most files in one plan (the plan and its results are held in memory).
pub const MAX_FILES: usize = 10_000_000;
/// Most steps of capacity utilisation.
pub const MAX_STEPS: u32 = 100;
/// Most reads per step.
pub const MAX_READS_PER_STEP: u32 = 1_000_000;
/// Most requests in flight at once.
pub const MAX_CONCURRENCY: u32 = 256;

/// One file of the set: the key it is written under, relative to the run's prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileSpec {
    pub key: String,
    pub size_bytes: u64,
}

/// How reads pick among the files written so far.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum ReadSkew {
    /// Every written file equally likely.
    Uniform,
    /// Zipf over recency: the newest file is rank 1, and rank r is drawn with probability
    /// proportional to r^-exponent (recent archive data is retrieved more often).
    Zipf { exponent: f64 },
}

/// A benchmark to run: the files, the steps, the reads, the parallelism.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchPlan {
    pub files: Vec<FileSpec>,
    /// The capacity utilisation is measured against: written bytes ÷ this.
    pub capacity_bytes: u64,
    pub steps: u32,
    pub reads_per_step: u32,
    pub read_skew: ReadSkew,
    /// Requests in flight at once, for writes and for reads.
    pub concurrency: u32,
    pub seed: u64,
}

/// One step: the batch of files it writes, then the reads it makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// 1-based.
    pub number: u32,
    /// Indices into [`BenchPlan::files`] written in this step, in order.
    pub writes: std::ops::Range<usize>,
    /// Bytes written by this step and all before it.
    pub written_bytes: u64,
    /// Indices into [`BenchPlan::files`] read in this step, in order (repeats allowed).
    pub reads: Vec<usize>,
}

impl BenchPlan {
    /// Checks every limit, naming the first one broken.
    pub fn validate(&self) -> BenchResult<()> {
        let refuse = |reason: String| Err(BenchError::Plan(reason));
        if self.files.is_empty() {
            return refuse("the file set is empty".into());
        }
        if self.files.len() > MAX_FILES {
            return refuse(format!("{} files; at most {MAX_FILES}", self.files.len()));
        }
        if let Some(file) = self.files.iter().find(|f| f.size_bytes > MAX_FILE_BYTES) {
            return refuse(format!(
                "{} is {} bytes; at most {MAX_FILE_BYTES} per file",
                file.key, file.size_bytes
            ));
        }
        if !(1..=MAX_STEPS).contains(&self.steps) {
            return refuse(format!("{} steps; 1 to {MAX_STEPS}", self.steps));
        }
        if self.steps as usize > self.files.len() {
            return refuse(format!(
                "{} steps for {} files: each step writes at least one file",
                self.steps,
                self.files.len()
            ));
        }
        if self.reads_per_step > MAX_READS_PER_STEP {
            return refuse(format!(
                "{} reads per step; at most {MAX_READS_PER_STEP}",
                self.reads_per_step
            ));
        }
        if !(1..=MAX_CONCURRENCY).contains(&self.concurrency) {
            return refuse(format!(
                "concurrency {}; 1 to {MAX_CONCURRENCY}",
                self.concurrency
            ));
        }
        if let ReadSkew::Zipf { exponent } = self.read_skew
            && !(exponent.is_finite() && exponent > 0.0)
        {
            return refuse(format!("Zipf exponent {exponent}; it must be > 0"));
        }
        if self.capacity_bytes < self.total_bytes() {
            return refuse(format!(
                "capacity {} bytes is less than the file set's {} bytes",
                self.capacity_bytes,
                self.total_bytes()
            ));
        }
        Ok(())
    }

    /// Bytes of the whole file set.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size_bytes).sum()
    }

    /// The largest file's size.
    pub fn largest_file_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size_bytes).max().unwrap_or(0)
    }

    /// The steps, in order (call after [`BenchPlan::validate`]).
    pub fn steps(&self) -> Vec<Step> {
        let ends = self.batch_ends();
        let mut start = 0;
        let mut written_bytes = 0;
        ends.into_iter()
            .enumerate()
            .map(|(index, end)| {
                let number = index as u32 + 1;
                written_bytes += self.files[start..end]
                    .iter()
                    .map(|f| f.size_bytes)
                    .sum::<u64>();
                let step = Step {
                    number,
                    writes: start..end,
                    written_bytes,
                    reads: self.reads_of(number, end),
                };
                start = end;
                step
            })
            .collect()
    }

    /// Where each batch ends (exclusive): the first file at which the cumulative bytes reach
    /// i/steps of the total, pushed on so every batch has a file and left room for the rest.
    fn batch_ends(&self) -> Vec<usize> {
        let total = self.total_bytes() as u128;
        let steps = self.steps as usize;
        let count = self.files.len();
        let mut ends = Vec::with_capacity(steps);
        let mut cumulative = 0u128;
        let mut index = 0;
        for step in 1..=steps {
            let goal = total * step as u128 / steps as u128;
            let earliest = ends.last().copied().unwrap_or(0) + 1;
            let latest = count - (steps - step);
            while index < latest && (index < earliest || cumulative < goal) {
                cumulative += u128::from(self.files[index].size_bytes);
                index += 1;
            }
            ends.push(index);
        }
        ends
    }

    /// The reads of step `number` among the first `written` files.
    fn reads_of(&self, number: u32, written: usize) -> Vec<usize> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ (u64::from(number) << 48));
        let count = self.reads_per_step as usize;
        match self.read_skew {
            ReadSkew::Uniform => (0..count).map(|_| rng.random_range(0..written)).collect(),
            ReadSkew::Zipf { exponent } => {
                let zipf = Zipf::new(written as f64, exponent).expect("validated exponent");
                (0..count)
                    .map(|_| {
                        let rank = zipf.sample(&mut rng) as usize;
                        written - rank.clamp(1, written)
                    })
                    .collect()
            }
        }
    }
}
