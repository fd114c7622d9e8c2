//! The GFNI/AVX-512 pass: up to `ROWS_PER_PASS` (8) output rows from all inputs, one
//! `vgf2p8affineqb` per (input vector, row) with the row's 8×8 bit matrix for that input
//! (`field::affine_matrix`).
//!
//! Why its shape (docs/BENCHMARKS.md, "Past ISA-L in cache"): a pass of up to 4 rows takes 256
//! bytes (four 64-byte vectors) of every input per step, one of 5 to 8 rows 128 bytes, so each
//! matrix is broadcast once for several vectors and the accumulators (rows × vectors ≤ 16) and
//! loaded vectors stay in the 32 registers; inputs are taken two at a time, so one
//! `vpternlogq` adds both products where two `vpxorq` did. Against two vectors per step and
//! one XOR per product: 15+3 encode 1.14–1.16× and 3-lost decode 1.18–1.19× in cache on a Zen 4.
//!
//! Invariants: called only where `super::Kernel::GfniAvx512` is available (gfni, avx512f,
//! avx512bw); the caller has checked every slice is `length` bytes and the matrix count.

use std::arch::x86_64::{
    __m512i, _mm512_gf2p8affine_epi64_epi8, _mm512_loadu_si512, _mm512_mask_storeu_epi8,
    _mm512_maskz_loadu_epi8, _mm512_set1_epi64, _mm512_setzero_si512, _mm512_storeu_si512,
    _mm512_ternarylogic_epi64, _mm512_xor_si512,
};

const VECTOR_BYTES: usize = 64;

/// One pass: `outputs.len()` (1..=8) output fragments from all input fragments.
///
/// # Safety
/// The CPU has gfni, avx512f and avx512bw; `matrices` holds `inputs.len() × outputs.len()`
/// entries; every input and output slice is `length` bytes.
pub(super) unsafe fn dot_product_pass(
    matrices: &[u64],
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
    length: usize,
) {
    // A const row count keeps the accumulators in registers; vectors per step as the module
    // docs say.
    // SAFETY: forwarded from this function's contract.
    unsafe {
        match outputs.len() {
            1 => pass::<1, 4>(matrices, inputs, outputs, length),
            2 => pass::<2, 4>(matrices, inputs, outputs, length),
            3 => pass::<3, 4>(matrices, inputs, outputs, length),
            4 => pass::<4, 4>(matrices, inputs, outputs, length),
            5 => pass::<5, 2>(matrices, inputs, outputs, length),
            6 => pass::<6, 2>(matrices, inputs, outputs, length),
            7 => pass::<7, 2>(matrices, inputs, outputs, length),
            8 => pass::<8, 2>(matrices, inputs, outputs, length),
            rows => unreachable!("a pass has 1..=8 rows, not {rows}"),
        }
    }
}

#[target_feature(enable = "avx512f,avx512bw,gfni")]
unsafe fn pass<const ROWS: usize, const VECTORS: usize>(
    matrices: &[u64],
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
    length: usize,
) {
    assert!(matrices.len() == inputs.len() * ROWS && outputs.len() == ROWS);
    let block_bytes = VECTORS * VECTOR_BYTES;
    let whole_blocks = length / block_bytes;
    for block in 0..whole_blocks {
        let offset = block * block_bytes;
        // SAFETY: offset + block_bytes ≤ length, the length of every slice.
        let sums = unsafe { sum_block::<ROWS, VECTORS>(matrices, inputs, offset) };
        for (output, row_sums) in outputs.iter_mut().zip(sums) {
            for (vector, sum) in row_sums.into_iter().enumerate() {
                // SAFETY: as the load.
                unsafe {
                    let pointer = output.as_mut_ptr().add(offset + vector * VECTOR_BYTES);
                    _mm512_storeu_si512(pointer.cast(), sum);
                }
            }
        }
    }
    let whole_vectors = length / VECTOR_BYTES;
    for vector in whole_blocks * VECTORS..whole_vectors {
        let offset = vector * VECTOR_BYTES;
        // SAFETY: offset + 64 ≤ length, the length of every slice.
        let sums = unsafe {
            sum_products::<ROWS>(matrices, inputs, |input| {
                _mm512_loadu_si512(input.as_ptr().add(offset).cast())
            })
        };
        for (output, sum) in outputs.iter_mut().zip(sums) {
            // SAFETY: as the load.
            unsafe { _mm512_storeu_si512(output.as_mut_ptr().add(offset).cast(), sum) };
        }
    }
    let offset = whole_vectors * VECTOR_BYTES;
    let tail_bytes = length - offset;
    if tail_bytes == 0 {
        return;
    }
    // The last 1..=63 bytes through byte masks: masked-off bytes are neither read nor
    // written, so nothing past a slice's end is touched.
    let mask = (1u64 << tail_bytes) - 1;
    // SAFETY: the mask covers only bytes offset..length of each slice.
    let sums = unsafe {
        sum_products::<ROWS>(matrices, inputs, |input| {
            _mm512_maskz_loadu_epi8(mask, input.as_ptr().add(offset).cast())
        })
    };
    for (output, sum) in outputs.iter_mut().zip(sums) {
        // SAFETY: as the masked load.
        unsafe { _mm512_mask_storeu_epi8(output.as_mut_ptr().add(offset).cast(), mask, sum) };
    }
}

/// For each row `i` and each of `VECTORS` consecutive vectors at `offset`, the XOR over inputs
/// `j` of `matrix(j, i) × input j`: each matrix is broadcast once for all the vectors.
#[target_feature(enable = "avx512f,avx512bw,gfni")]
#[inline]
unsafe fn sum_block<const ROWS: usize, const VECTORS: usize>(
    matrices: &[u64],
    inputs: &[&[u8]],
    offset: usize,
) -> [[__m512i; VECTORS]; ROWS] {
    let mut sums = [[_mm512_setzero_si512(); VECTORS]; ROWS];
    let load = |input: &[u8]| -> [__m512i; VECTORS] {
        // SAFETY: the caller keeps offset + VECTORS × 64 within every input.
        std::array::from_fn(|vector| unsafe {
            _mm512_loadu_si512(input.as_ptr().add(offset + vector * VECTOR_BYTES).cast())
        })
    };
    // Inputs two at a time: one three-way XOR (`vpternlogq`) adds both products.
    let mut pairs = inputs.chunks_exact(2);
    let mut pair_matrices = matrices.chunks_exact(2 * ROWS);
    for (pair, column_matrices) in (&mut pairs).zip(&mut pair_matrices) {
        let (first, second) = (load(pair[0]), load(pair[1]));
        for row in 0..ROWS {
            let first_matrix = _mm512_set1_epi64(column_matrices[row] as i64);
            let second_matrix = _mm512_set1_epi64(column_matrices[ROWS + row] as i64);
            for vector in 0..VECTORS {
                let a = _mm512_gf2p8affine_epi64_epi8::<0>(first[vector], first_matrix);
                let b = _mm512_gf2p8affine_epi64_epi8::<0>(second[vector], second_matrix);
                sums[row][vector] = _mm512_ternarylogic_epi64::<0x96>(sums[row][vector], a, b);
            }
        }
    }
    for (input, column_matrices) in pairs
        .remainder()
        .iter()
        .zip(pair_matrices.remainder().chunks_exact(ROWS))
    {
        let bytes = load(input);
        for (row_sums, &matrix) in sums.iter_mut().zip(column_matrices) {
            let matrix = _mm512_set1_epi64(matrix as i64);
            for (sum, &vector) in row_sums.iter_mut().zip(&bytes) {
                *sum = _mm512_xor_si512(*sum, _mm512_gf2p8affine_epi64_epi8::<0>(vector, matrix));
            }
        }
    }
    sums
}

/// For each row `i`, the XOR over inputs `j` of `matrix(j, i) × load(input j)`.
#[target_feature(enable = "avx512f,avx512bw,gfni")]
#[inline]
unsafe fn sum_products<const ROWS: usize>(
    matrices: &[u64],
    inputs: &[&[u8]],
    load: impl Fn(&[u8]) -> __m512i,
) -> [__m512i; ROWS] {
    let mut sums = [_mm512_setzero_si512(); ROWS];
    for (input, column_matrices) in inputs.iter().zip(matrices.chunks_exact(ROWS)) {
        let bytes = load(input);
        for (sum, &matrix) in sums.iter_mut().zip(column_matrices) {
            let product =
                _mm512_gf2p8affine_epi64_epi8::<0>(bytes, _mm512_set1_epi64(matrix as i64));
            *sum = _mm512_xor_si512(*sum, product);
        }
    }
    sums
}
