//! File sets: sizes drawn from a model until a target capacity is filled, from one seed.
//!
//! Invariants: a set is a pure function of (model, capacity, seed); it holds 1 to [`MAX_FILES`]
//! files, each of `1..=MAX_FILE_BYTES` bytes, whose total is at most the capacity; the sizes use
//! their own RNG stream ([`SIZE_STREAM`]), so the operation streams drawn later (another stream of
//! the same seed) never change which files exist.

use crate::error::GenerateError;
use crate::model::FileSizeModel;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The most files a set may hold: the simulator's trace limit (`spinwise_sim::MAX_TRACE_RECORDS`,
/// 5 million), since every file is written once in the trace. A test checks the two agree.
pub const MAX_FILES: usize = 5_000_000;

/// The ChaCha stream the file sizes are drawn from.
pub const SIZE_STREAM: u64 = 0;

/// The files of a workload, in the order they are written (file i is `key(i)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSet {
    pub sizes_bytes: Vec<u64>,
    pub total_bytes: u64,
    pub capacity_bytes: u64,
}

impl FileSet {
    pub fn len(&self) -> usize {
        self.sizes_bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sizes_bytes.is_empty()
    }
}

/// The key of file `index`: `file-` and the index in at least 8 digits, so keys sort in write
/// order and hold no comma (the trace format cannot quote one).
pub fn key(index: usize) -> String {
    format!("file-{index:08}")
}

/// Draws sizes from `model` and keeps each while the total stays within `capacity_bytes`; the
/// first draw that does not fit ends the set (it is not kept, so the total never passes the
/// capacity and falls short of it by less than that one draw).
pub fn generate_file_set(
    model: &FileSizeModel,
    capacity_bytes: u64,
    seed: u64,
) -> Result<FileSet, GenerateError> {
    if capacity_bytes == 0 {
        return Err(GenerateError::NoCapacity);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(SIZE_STREAM);
    let mut sizes_bytes = Vec::new();
    let mut total_bytes: u64 = 0;
    loop {
        let size_bytes = model.sample_bytes(&mut rng);
        // Both terms are at most 2^64 / 2 here (capacity_bytes ≤ u64::MAX, size ≤ 10^12, and
        // total ≤ capacity), but the checked form keeps that argument out of the invariant.
        match total_bytes.checked_add(size_bytes) {
            Some(next) if next <= capacity_bytes => {
                if sizes_bytes.len() == MAX_FILES {
                    return Err(GenerateError::TooManyFiles { max: MAX_FILES });
                }
                sizes_bytes.push(size_bytes);
                total_bytes = next;
            }
            _ => {
                if sizes_bytes.is_empty() {
                    return Err(GenerateError::EmptySet { size_bytes });
                }
                break;
            }
        }
    }
    debug_assert_eq!(sizes_bytes.iter().sum::<u64>(), total_bytes);
    Ok(FileSet {
        sizes_bytes,
        total_bytes,
        capacity_bytes,
    })
}
