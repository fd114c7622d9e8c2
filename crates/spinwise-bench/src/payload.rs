//! The bytes the benchmark writes: one seeded random pool, and each file a window of it at an
//! offset of its own. A PUT body is a zero-copy slice of the pool, and a read is checked against
//! the same slice, so the benchmark holds one buffer however many files it writes.
//!
//! Invariants: file i's bytes depend only on the seed, i and its size; two files of the same
//! size start at different offsets unless their indices are equal modulo [`OFFSETS`], so a
//! store that returned another file's bytes is caught (a deduplicating target also sees
//! distinct content for neighbouring files).

use bytes::Bytes;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Distinct starting offsets in the pool.
pub const OFFSETS: u64 = 4093;

/// The pool of bytes every file is cut from.
#[derive(Clone, Debug)]
pub struct Payload {
    pool: Bytes,
}

impl Payload {
    /// A pool large enough for a file of `largest_file_bytes` at any offset.
    pub fn new(largest_file_bytes: u64, seed: u64) -> Payload {
        let length = usize::try_from(largest_file_bytes + OFFSETS).expect("a bounded file size");
        let mut pool = vec![0u8; length];
        ChaCha8Rng::seed_from_u64(seed).fill_bytes(&mut pool);
        Payload {
            pool: Bytes::from(pool),
        }
    }

    /// File `index`'s bytes.
    pub fn file(&self, index: usize, size_bytes: u64) -> Bytes {
        let offset = (index as u64 * 7919) % OFFSETS;
        let end = offset + size_bytes;
        assert!(end <= self.pool.len() as u64, "the pool covers every file");
        self.pool.slice(offset as usize..end as usize)
    }
}
