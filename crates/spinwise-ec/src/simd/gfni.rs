//! The GFNI/AVX-512 pass: up to `ROWS_PER_PASS` (8) output rows from all inputs, 128 bytes (two
//! 64-byte vectors) per step, one `vgf2p8affineqb` per (input vector, row) with the row's 8×8
//! bit matrix for that input (`field::affine_matrix`).
//!
//! Invariants: called only where `super::Kernel::GfniAvx512` is available (gfni, avx512f,
//! avx512bw); the caller has checked every slice is `length` bytes and the matrix count.

use std::arch::x86_64::{
    __m512i, _mm512_gf2p8affine_epi64_epi8, _mm512_loadu_si512, _mm512_mask_storeu_epi8,
    _mm512_maskz_loadu_epi8, _mm512_set1_epi64, _mm512_setzero_si512, _mm512_storeu_si512,
    _mm512_xor_si512,
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
    // A const row count keeps the accumulators in registers.
    // SAFETY: forwarded from this function's contract.
    unsafe {
        match outputs.len() {
            1 => pass::<1>(matrices, inputs, outputs, length),
            2 => pass::<2>(matrices, inputs, outputs, length),
            3 => pass::<3>(matrices, inputs, outputs, length),
            4 => pass::<4>(matrices, inputs, outputs, length),
            5 => pass::<5>(matrices, inputs, outputs, length),
            6 => pass::<6>(matrices, inputs, outputs, length),
            7 => pass::<7>(matrices, inputs, outputs, length),
            8 => pass::<8>(matrices, inputs, outputs, length),
            rows => unreachable!("a pass has 1..=8 rows, not {rows}"),
        }
    }
}

#[target_feature(enable = "avx512f,avx512bw,gfni")]
unsafe fn pass<const ROWS: usize>(
    matrices: &[u64],
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
    length: usize,
) {
    assert!(matrices.len() == inputs.len() * ROWS && outputs.len() == ROWS);
    let whole_pairs = length / (2 * VECTOR_BYTES);
    for pair in 0..whole_pairs {
        let offset = pair * 2 * VECTOR_BYTES;
        // SAFETY: offset + 128 ≤ length, the length of every slice.
        let (low, high) = unsafe { sum_pair::<ROWS>(matrices, inputs, offset) };
        for ((output, low), high) in outputs.iter_mut().zip(low).zip(high) {
            // SAFETY: as the load.
            unsafe {
                let pointer = output.as_mut_ptr().add(offset);
                _mm512_storeu_si512(pointer.cast(), low);
                _mm512_storeu_si512(pointer.add(VECTOR_BYTES).cast(), high);
            }
        }
    }
    let whole_vectors = length / VECTOR_BYTES;
    for vector in 2 * whole_pairs..whole_vectors {
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

#[target_feature(enable = "avx512f,avx512bw,gfni")]
#[inline]
unsafe fn sum_pair<const ROWS: usize>(
    matrices: &[u64],
    inputs: &[&[u8]],
    offset: usize,
) -> ([__m512i; ROWS], [__m512i; ROWS]) {
    let mut low_sums = [_mm512_setzero_si512(); ROWS];
    let mut high_sums = [_mm512_setzero_si512(); ROWS];
    for (input, column_matrices) in inputs.iter().zip(matrices.chunks_exact(ROWS)) {
        // SAFETY: the caller keeps offset + 128 within every input.
        let (low, high) = unsafe {
            let pointer = input.as_ptr().add(offset);
            (
                _mm512_loadu_si512(pointer.cast()),
                _mm512_loadu_si512(pointer.add(VECTOR_BYTES).cast()),
            )
        };
        for ((low_sum, high_sum), &matrix) in low_sums
            .iter_mut()
            .zip(high_sums.iter_mut())
            .zip(column_matrices)
        {
            let matrix = _mm512_set1_epi64(matrix as i64);
            *low_sum = _mm512_xor_si512(*low_sum, _mm512_gf2p8affine_epi64_epi8::<0>(low, matrix));
            *high_sum =
                _mm512_xor_si512(*high_sum, _mm512_gf2p8affine_epi64_epi8::<0>(high, matrix));
        }
    }
    (low_sums, high_sums)
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
