//! Operation streams over a file set (the archival paper's two access patterns): sequential-write
//! batches (migration: files in order, packed into batches that arrive together) followed by
//! random reads (retrieval: Poisson arrivals, files chosen uniformly or by Zipf popularity), and
//! the two files they are written as: the manifest (`key,size_bytes`) and the simulator's trace
//! (`time_s,operation,key,size_bytes`, docs/simulator.md). Formats in docs/workload.md.
//!
//! Invariants: a stream is a pure function of (set, options, seed); its times are
//! non-decreasing, start at 0 and end by [`MAX_TRACE_SECONDS`]; every file is written exactly
//! once, in index order, before any read; it holds at most [`MAX_TRACE_RECORDS`] operations.

use crate::error::GenerateError;
use crate::generate::{FileSet, key};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::Distribution;
use serde::Serialize;
use std::io::Write;

/// The most records a trace may hold: the simulator's `MAX_TRACE_RECORDS` (a test checks).
pub const MAX_TRACE_RECORDS: usize = 5_000_000;

/// The latest time a trace may hold, in seconds: the simulator's `MAX_HOURS` (366 days).
pub const MAX_TRACE_SECONDS: f64 = 24.0 * 366.0 * 3600.0;

/// The exact header of the simulator's trace.
pub const TRACE_HEADER: &str = "time_s,operation,key,size_bytes";

/// The exact header of the manifest.
pub const MANIFEST_HEADER: &str = "key,size_bytes";

/// The ChaCha stream the reads are drawn from (the sizes use [`crate::SIZE_STREAM`]).
pub const READ_STREAM: u64 = 1;

/// Which files the reads choose.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Popularity {
    /// Every file equally likely.
    Uniform,
    /// The file of popularity rank r (1-based) chosen with probability ∝ r^(−exponent). Ranks
    /// are a seeded random permutation of the files, so popularity is independent of size and
    /// of write order.
    Zipf { exponent: f64 },
}

/// How the stream is shaped.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StreamOptions {
    /// A batch closes before the file that would take it past this many bytes (a larger file
    /// forms a batch of its own).
    pub batch_bytes: u64,
    /// Batch i arrives, all its files at once in order, at i × this many seconds.
    pub batch_interval_s: f64,
    /// Reads after the writes.
    pub reads: u64,
    /// Mean reads per second (exponential gaps), starting one batch interval after the last
    /// batch.
    pub read_rate_per_s: f64,
    pub popularity: Popularity,
}

impl Default for StreamOptions {
    /// 1 GiB batches a minute apart (the store's default bundle, written as one blob), and no
    /// reads.
    fn default() -> StreamOptions {
        StreamOptions {
            batch_bytes: 1 << 30,
            batch_interval_s: 60.0,
            reads: 0,
            read_rate_per_s: 1.0,
            popularity: Popularity::Uniform,
        }
    }
}

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationKind {
    Write,
    Read,
}

impl OperationKind {
    pub fn name(self) -> &'static str {
        match self {
            OperationKind::Write => "write",
            OperationKind::Read => "read",
        }
    }
}

/// One operation on one file.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Operation {
    pub time_s: f64,
    pub kind: OperationKind,
    pub file_index: usize,
}

/// A stream of operations with counts of its parts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stream {
    pub operations: Vec<Operation>,
    pub batches: usize,
    pub writes: usize,
    pub reads: usize,
}

/// The write batches then the reads over `set`.
pub fn operations(
    set: &FileSet,
    options: &StreamOptions,
    seed: u64,
) -> Result<Stream, GenerateError> {
    check_options(options)?;
    if set.is_empty() && options.reads > 0 {
        return Err(GenerateError::NothingToRead);
    }
    let total = set.len() as u128 + u128::from(options.reads);
    if total > MAX_TRACE_RECORDS as u128 {
        return Err(GenerateError::TooManyRecords {
            files: set.len(),
            reads: options.reads,
            max: MAX_TRACE_RECORDS,
        });
    }
    let mut operations = Vec::with_capacity(total as usize);
    let mut batch = 0usize;
    let mut batch_filled_bytes = 0u64;
    for (file_index, &size_bytes) in set.sizes_bytes.iter().enumerate() {
        if batch_filled_bytes > 0 && batch_filled_bytes + size_bytes > options.batch_bytes {
            batch += 1;
            batch_filled_bytes = 0;
        }
        batch_filled_bytes += size_bytes;
        operations.push(Operation {
            time_s: batch as f64 * options.batch_interval_s,
            kind: OperationKind::Write,
            file_index,
        });
    }
    let batches = if set.is_empty() { 0 } else { batch + 1 };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(READ_STREAM);
    let mut time_s = batches as f64 * options.batch_interval_s;
    let chooser = Chooser::new(set.len(), options.popularity, &mut rng);
    for _ in 0..options.reads {
        // Exponential gaps: −ln(U)/rate with U in (0, 1], so the gap is finite.
        let uniform: f64 = 1.0 - rng.random::<f64>();
        time_s += -uniform.ln() / options.read_rate_per_s;
        operations.push(Operation {
            time_s,
            kind: OperationKind::Read,
            file_index: chooser.choose(&mut rng),
        });
    }
    let duration_s = operations.last().map_or(0.0, |o| o.time_s);
    if duration_s > MAX_TRACE_SECONDS {
        return Err(GenerateError::TooLong {
            duration_s,
            max_s: MAX_TRACE_SECONDS,
        });
    }
    Ok(Stream {
        operations,
        batches,
        writes: set.len(),
        reads: options.reads as usize,
    })
}

fn check_options(options: &StreamOptions) -> Result<(), GenerateError> {
    let out = |name, value, expected| {
        Err(GenerateError::OutOfRange {
            name,
            value,
            expected,
        })
    };
    if options.batch_bytes == 0 {
        return out("batch_bytes", 0.0, "at least 1");
    }
    if !(options.batch_interval_s.is_finite() && options.batch_interval_s >= 0.0) {
        return out(
            "batch_interval_s",
            options.batch_interval_s,
            "a finite number at least 0",
        );
    }
    if !(options.read_rate_per_s.is_finite() && options.read_rate_per_s > 0.0) {
        return out(
            "read_rate_per_s",
            options.read_rate_per_s,
            "a finite number above 0",
        );
    }
    if let Popularity::Zipf { exponent } = options.popularity
        && !(exponent.is_finite() && (0.0..=10.0).contains(&exponent))
    {
        return out("zipf_exponent", exponent, "a number in [0, 10]");
    }
    Ok(())
}

/// Picks a file for each read.
enum Chooser {
    Uniform {
        files: usize,
    },
    Zipf {
        distribution: rand_distr::Zipf<f64>,
        /// `file_by_rank[r − 1]` is the file of popularity rank r.
        file_by_rank: Vec<usize>,
    },
}

impl Chooser {
    fn new(files: usize, popularity: Popularity, rng: &mut ChaCha8Rng) -> Chooser {
        match popularity {
            Popularity::Uniform => Chooser::Uniform { files },
            Popularity::Zipf { exponent } => {
                let mut file_by_rank: Vec<usize> = (0..files).collect();
                // Fisher–Yates by hand: the order of draws is then this file's, not a crate's.
                for i in (1..files).rev() {
                    let j = rng.random_range(0..=i);
                    file_by_rank.swap(i, j);
                }
                let distribution = rand_distr::Zipf::new(files.max(1) as f64, exponent)
                    .expect("n ≥ 1 and the exponent was checked non-negative");
                Chooser::Zipf {
                    distribution,
                    file_by_rank,
                }
            }
        }
    }

    fn choose(&self, rng: &mut ChaCha8Rng) -> usize {
        match self {
            Chooser::Uniform { files } => rng.random_range(0..*files),
            Chooser::Zipf {
                distribution,
                file_by_rank,
            } => {
                let rank = distribution.sample(rng) as usize;
                file_by_rank[rank.clamp(1, file_by_rank.len()) - 1]
            }
        }
    }
}

/// Writes the manifest: [`MANIFEST_HEADER`], then `key,size_bytes` per file in write order.
pub fn write_manifest(set: &FileSet, sink: &mut impl Write) -> std::io::Result<()> {
    writeln!(sink, "{MANIFEST_HEADER}")?;
    for (index, size_bytes) in set.sizes_bytes.iter().enumerate() {
        writeln!(sink, "{},{size_bytes}", key(index))?;
    }
    Ok(())
}

/// Writes the trace: [`TRACE_HEADER`], then `time_s,operation,key,size_bytes` per operation.
/// Times print in Rust's shortest round-trip decimal form (`0`, `60`, `12.345678901`).
pub fn write_trace(set: &FileSet, stream: &Stream, sink: &mut impl Write) -> std::io::Result<()> {
    writeln!(sink, "{TRACE_HEADER}")?;
    for operation in &stream.operations {
        writeln!(
            sink,
            "{},{},{},{}",
            operation.time_s,
            operation.kind.name(),
            key(operation.file_index),
            set.sizes_bytes[operation.file_index]
        )?;
    }
    Ok(())
}
