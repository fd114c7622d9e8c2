//! The GFNI pass on 256-bit vectors, for CPUs with GFNI and AVX2 but not AVX-512 (Intel's Atom
//! cores, storage SoCs among them, and client cores since Alder Lake): up to `ROWS_PER_PASS`
//! (4: the 16 vector registers hold 4 rows × 2 accumulators, 2 inputs and a product) output
//! rows from all inputs, 64 bytes (two 32-byte vectors) per step, one `vgf2p8affineqb` per
//! (input vector, row) as in `gfni.rs`. AVX2 has no byte-masked loads, so the last
//! `length mod 64` bytes go through zero-padded copies on the stack.
//!
//! Invariants: called only where `super::Kernel::GfniAvx2` is available (gfni, avx2); the
//! caller has checked every slice is `length` bytes and the matrix count.

use std::arch::x86_64::{
    __m256i, _mm256_gf2p8affine_epi64_epi8, _mm256_loadu_si256, _mm256_set1_epi64x,
    _mm256_setzero_si256, _mm256_storeu_si256, _mm256_xor_si256,
};

use super::MAX_COLUMNS;

const VECTOR_BYTES: usize = 32;
/// Bytes per step: two vectors.
const STEP_BYTES: usize = 2 * VECTOR_BYTES;

/// One pass: `outputs.len()` (1..=4) output fragments from all input fragments.
///
/// # Safety
/// The CPU has gfni and avx2; `matrices` holds `inputs.len() × outputs.len()` entries; every
/// input and output slice is `length` bytes.
pub(super) unsafe fn dot_product_pass(
    matrices: &[u64],
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
    length: usize,
) {
    // A const row count keeps the accumulators in registers.
    // SAFETY: forwarded from this function's contract.
    unsafe {
        match outputs.len() {
            1 => pass::<1>(matrices, inputs, outputs, length),
            2 => pass::<2>(matrices, inputs, outputs, length),
            3 => pass::<3>(matrices, inputs, outputs, length),
            4 => pass::<4>(matrices, inputs, outputs, length),
            rows => unreachable!("a pass has 1..=4 rows, not {rows}"),
        }
    }
}

#[target_feature(enable = "avx2,gfni")]
unsafe fn pass<const ROWS: usize>(
    matrices: &[u64],
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
    length: usize,
) {
    assert!(matrices.len() == inputs.len() * ROWS && outputs.len() == ROWS);
    assert!(inputs.len() <= MAX_COLUMNS);
    let whole_steps = length / STEP_BYTES;
    for step in 0..whole_steps {
        let offset = step * STEP_BYTES;
        // SAFETY: offset + 64 ≤ length, the length of every slice.
        let steps = inputs
            .iter()
            .map(|input| input.as_ptr().wrapping_add(offset));
        let (low, high) = unsafe { sum_step::<ROWS>(matrices, steps) };
        for ((output, low), high) in outputs.iter_mut().zip(low).zip(high) {
            // SAFETY: as the loads.
            unsafe { store_step(output.as_mut_ptr().add(offset), low, high) };
        }
    }
    let offset = whole_steps * STEP_BYTES;
    let tail_bytes = length - offset;
    if tail_bytes == 0 {
        return;
    }
    // The last 1..=63 bytes: each input copied into a zero-padded step, the step computed, and
    // only `tail_bytes` of each result copied out, so nothing past a slice's end is touched.
    let mut padded_inputs = [[0u8; STEP_BYTES]; MAX_COLUMNS];
    for (padded, input) in padded_inputs.iter_mut().zip(inputs) {
        padded[..tail_bytes].copy_from_slice(&input[offset..]);
    }
    let steps = padded_inputs[..inputs.len()]
        .iter()
        .map(|padded| padded.as_ptr());
    // SAFETY: every pointer is the start of a 64-byte array.
    let (low, high) = unsafe { sum_step::<ROWS>(matrices, steps) };
    for ((output, low), high) in outputs.iter_mut().zip(low).zip(high) {
        let mut result = [0u8; STEP_BYTES];
        // SAFETY: `result` is 64 bytes.
        unsafe { store_step(result.as_mut_ptr(), low, high) };
        output[offset..].copy_from_slice(&result[..tail_bytes]);
    }
}

/// Stores a step's two vectors at `pointer`.
///
/// # Safety
/// `pointer` is valid for 64 bytes of writes.
#[target_feature(enable = "avx2,gfni")]
#[inline]
unsafe fn store_step(pointer: *mut u8, low: __m256i, high: __m256i) {
    // SAFETY: the caller's contract.
    unsafe {
        _mm256_storeu_si256(pointer.cast(), low);
        _mm256_storeu_si256(pointer.add(VECTOR_BYTES).cast(), high);
    }
}

/// For each row, the sums over inputs of its products with the 64 bytes at each input's
/// pointer in `steps` (one per input, in order).
///
/// # Safety
/// Every pointer of `steps` is valid for 64 bytes of reads.
#[target_feature(enable = "avx2,gfni")]
#[inline]
unsafe fn sum_step<const ROWS: usize>(
    matrices: &[u64],
    steps: impl Iterator<Item = *const u8>,
) -> ([__m256i; ROWS], [__m256i; ROWS]) {
    let mut low_sums = [_mm256_setzero_si256(); ROWS];
    let mut high_sums = [_mm256_setzero_si256(); ROWS];
    for (pointer, column_matrices) in steps.zip(matrices.chunks_exact(ROWS)) {
        // SAFETY: the caller's contract.
        let (low, high) = unsafe {
            (
                _mm256_loadu_si256(pointer.cast()),
                _mm256_loadu_si256(pointer.add(VECTOR_BYTES).cast()),
            )
        };
        for ((low_sum, high_sum), &matrix) in low_sums
            .iter_mut()
            .zip(high_sums.iter_mut())
            .zip(column_matrices)
        {
            let matrix = _mm256_set1_epi64x(matrix as i64);
            *low_sum = _mm256_xor_si256(*low_sum, _mm256_gf2p8affine_epi64_epi8::<0>(low, matrix));
            *high_sum =
                _mm256_xor_si256(*high_sum, _mm256_gf2p8affine_epi64_epi8::<0>(high, matrix));
        }
    }
    (low_sums, high_sums)
}
