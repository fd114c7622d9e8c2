//! GF(2^8) dot products on x86-64 CPUs with GFNI and AVX-512 (F and BW): the `r` parity
//! fragments of a stripe from its `k` data fragments, and lost fragments from `k` survivors,
//! each in one pass over the inputs, 128 bytes at a time.
//!
//! Why it exists: rustfs-erasure-codec's fastest x86 path (its AVX2 "codegen" dot product, also
//! what it runs when the CPU has GFNI) encodes 15+3 at 14.1 GB/s per core in cache and 7.9 GB/s
//! past the L3 on the Zen 4 of docs/BENCHMARKS.md, where ISA-L's GFNI kernels reach 22.4 and
//! 11.7, and the target is ISA-L's rate. Multiplying a vector of bytes by a constant of
//! GF(2^8) is one `vgf2p8affineqb` with that constant's 8×8 bit matrix, so a parity vector is
//! `k` affine products XORed together. Up to eight parity rows per pass, each with two
//! accumulators (the two 64-byte halves of a 128-byte step), stay in registers: every data
//! byte is read once per pass, and the two independent halves keep the affine unit busy (one
//! vector per step measured 14.9 GB/s in cache, two 24.4). No crate offers this kernel
//! without C: ISA-L's own needs nasm and autotools (the `isal-peer` bench feature).
//!
//! Invariants:
//! - The matrix is ISA-L's `gf_gen_cauchy1_matrix` over GF(2^8) with the polynomial
//!   x^8 + x^4 + x^3 + x^2 + 1 (0x11D): parity row `i`, data column `j` holds
//!   `1 / ((k + i) XOR j)`. The tests check the parity byte for byte against
//!   rustfs-erasure-codec, which the ISA-L peer of `ec_bench` checks against ISA-L itself.
//! - A `GfniCode` exists only when the running CPU reports `gfni`, `avx512f` and `avx512bw`
//!   (checked once in [`GfniCode::new`]); that check is what makes the `unsafe` calls sound.
//! - Every slice handed to the kernel has the same length (asserted: a mismatch is a bug in
//!   `Code`, which checks the caller's buffers).
//! - Reconstruction reads exactly the first `k` present fragments and writes exactly the absent
//!   ones it was asked for; its matrix (the inverse of those `k` generator rows) is made once
//!   per loss pattern and kept for the next stripes (the last eight patterns).

use std::sync::{Arc, Mutex};

use crate::code::{EcError, MAX_COLUMNS};

/// Output rows computed per pass: 8 rows × 2 accumulators, 2 input vectors and their products
/// stay within the 32 vector registers.
const OUTPUTS_PER_PASS: usize = 8;

/// `a × b` in GF(2^8) modulo 0x11D (shift-and-add; only used to build matrices).
pub(crate) fn gf_multiply(mut a: u8, mut b: u8) -> u8 {
    let mut product = 0u8;
    while b != 0 {
        if b & 1 == 1 {
            product ^= a;
        }
        let carry = a & 0x80 != 0;
        a <<= 1;
        if carry {
            a ^= 0x1D;
        }
        b >>= 1;
    }
    product
}

/// `1 / a` in GF(2^8) (`a^254`); 0 for 0, as ISA-L's `gf_inv`.
pub(crate) fn gf_inverse(a: u8) -> u8 {
    let mut result = 1u8;
    let mut power = a;
    let mut exponent = 254u32;
    while exponent != 0 {
        if exponent & 1 == 1 {
            result = gf_multiply(result, power);
        }
        power = gf_multiply(power, power);
        exponent >>= 1;
    }
    result
}

/// The Cauchy coefficient of parity row `parity_row` and data column `data_column` in a code
/// with `data_columns` data columns (ISA-L's `gf_gen_cauchy1_matrix`).
pub(crate) fn cauchy_coefficient(data_columns: usize, parity_row: usize, data_column: usize) -> u8 {
    let row = data_columns + parity_row;
    assert!(
        row < 256 && data_column < data_columns,
        "Cauchy index out of range"
    );
    gf_inverse((row ^ data_column) as u8)
}

/// The 8×8 bit matrix `A` for which `vgf2p8affineqb(x, A, 0)` is `c × x`: bit `i` of the
/// result is the parity of `x AND` byte `7 − i` of `A`, so byte `7 − i` lists the input bits
/// whose products with `c` have bit `i` set.
pub(crate) fn affine_matrix(coefficient: u8) -> u64 {
    let mut matrix = 0u64;
    for output_bit in 0..8 {
        let mut row = 0u8;
        for input_bit in 0..8 {
            if (gf_multiply(coefficient, 1 << input_bit) >> output_bit) & 1 == 1 {
                row |= 1 << input_bit;
            }
        }
        matrix |= u64::from(row) << (8 * (7 - output_bit));
    }
    matrix
}

/// What `vgf2p8affineqb(x, matrix, 0)` computes for one byte (the instruction's definition,
/// written out so the matrices can be checked on any CPU).
#[cfg(test)]
pub(crate) fn affine_reference(x: u8, matrix: u64) -> u8 {
    (0..8).fold(0u8, |result, output_bit| {
        let row = (matrix >> (8 * (7 - output_bit))) as u8;
        result | ((((row & x).count_ones() & 1) as u8) << output_bit)
    })
}

/// Whether the running CPU has what [`GfniCode`] needs.
pub(crate) fn cpu_supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("gfni")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Loss patterns whose decoding rows a `GfniCode` keeps: concurrent degraded reads and a
/// rebuild of a few different disks each find theirs; more than that evicts the oldest.
const CACHED_PLANS: usize = 8;

/// One `k + r` Cauchy code on the GFNI kernel: its parity rows as affine matrices, and the
/// decoding rows of the loss patterns it reconstructed lately.
pub(crate) struct GfniCode {
    data_columns: usize,
    parity_columns: usize,
    /// The parity rows, laid out by [`pass_matrices`].
    parity_matrices: Vec<u64>,
    /// A degraded blob loses the same columns in every stripe, so the inversion is made once
    /// per pattern; most recent first, at most [`CACHED_PLANS`]; the `Arc` lets a reader use
    /// a plan without holding the lock.
    plans: Mutex<Vec<Arc<DecodePlan>>>,
}

/// How to rebuild one loss pattern: which columns are read, which are written, and the rows
/// (over the read columns) that compute the written ones.
struct DecodePlan {
    present: Vec<bool>,
    data_only: bool,
    /// The first `k` present columns, ascending: the inputs.
    survivors: Vec<usize>,
    /// The absent columns to compute, ascending: the outputs (absent parity columns only
    /// when not `data_only`).
    rebuilt: Vec<usize>,
    /// The rows for `rebuilt`, laid out by [`pass_matrices`].
    matrices: Vec<u64>,
}

impl GfniCode {
    /// The kernel for `k + r` (`r ≥ 1`), or `None` when this CPU lacks GFNI or AVX-512 BW.
    pub(crate) fn new(data_columns: usize, parity_columns: usize) -> Option<GfniCode> {
        if !cpu_supported() {
            return None;
        }
        let parity_rows: Vec<Vec<u8>> = (0..parity_columns)
            .map(|row| {
                (0..data_columns)
                    .map(|column| cauchy_coefficient(data_columns, row, column))
                    .collect()
            })
            .collect();
        Some(GfniCode {
            data_columns,
            parity_columns,
            parity_matrices: pass_matrices(&parity_rows, data_columns),
            plans: Mutex::new(Vec::new()),
        })
    }

    /// Writes the parity of `data` (`k` fragments) into `parity` (`r` fragments), all of one
    /// length.
    pub(crate) fn encode(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) {
        assert_eq!(data.len(), self.data_columns, "data fragment count");
        assert_eq!(parity.len(), self.parity_columns, "parity fragment count");
        dot_products(&self.parity_matrices, data, parity);
    }

    /// Rebuilds the absent fragments (absent data only, if `data_only`) from the first `k`
    /// present ones, in place. The caller (`Code::reconstruct`) has checked the counts: `k + r`
    /// fragments of one length, at least `k` present.
    pub(crate) fn reconstruct(
        &self,
        fragments: &mut [&mut [u8]],
        present: &[bool],
        data_only: bool,
    ) -> Result<(), EcError> {
        let plan = self.plan(present, data_only)?;
        let mut inputs: [&[u8]; MAX_COLUMNS] = [&[]; MAX_COLUMNS];
        let mut outputs: [&mut [u8]; MAX_COLUMNS] = std::array::from_fn(|_| <&mut [u8]>::default());
        let (mut input_count, mut output_count) = (0, 0);
        let (mut next_survivor, mut next_rebuilt) = (0, 0);
        for (column, fragment) in fragments.iter_mut().enumerate() {
            if plan.survivors.get(next_survivor) == Some(&column) {
                inputs[input_count] = &**fragment;
                input_count += 1;
                next_survivor += 1;
            } else if plan.rebuilt.get(next_rebuilt) == Some(&column) {
                outputs[output_count] = &mut **fragment;
                output_count += 1;
                next_rebuilt += 1;
            }
        }
        assert!(input_count == self.data_columns && output_count == plan.rebuilt.len());
        dot_products(
            &plan.matrices,
            &inputs[..input_count],
            &mut outputs[..output_count],
        );
        Ok(())
    }

    /// The plan for `present`, from the cache or made (and cached) now.
    fn plan(&self, present: &[bool], data_only: bool) -> Result<Arc<DecodePlan>, EcError> {
        let mut plans = self
            .plans
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some(index) = plans
            .iter()
            .position(|plan| plan.present == present && plan.data_only == data_only)
        {
            let plan = plans.remove(index);
            plans.insert(0, Arc::clone(&plan));
            return Ok(plan);
        }
        let plan = Arc::new(self.make_plan(present, data_only)?);
        plans.insert(0, Arc::clone(&plan));
        plans.truncate(CACHED_PLANS);
        Ok(plan)
    }

    fn make_plan(&self, present: &[bool], data_only: bool) -> Result<DecodePlan, EcError> {
        let k = self.data_columns;
        let survivors: Vec<usize> = (0..present.len()).filter(|&c| present[c]).take(k).collect();
        let rebuilt: Vec<usize> = (0..present.len())
            .filter(|&column| !present[column] && (column < k || !data_only))
            .collect();
        // Row `t` of the generator restricted to the survivors: the identity row of a data
        // column, the Cauchy row of a parity column. Its inverse maps survivors to data.
        let mut generator = vec![0u8; k * k];
        for (row, &column) in survivors.iter().enumerate() {
            for data_column in 0..k {
                generator[row * k + data_column] = if column < k {
                    u8::from(column == data_column)
                } else {
                    cauchy_coefficient(k, column - k, data_column)
                };
            }
        }
        let inverse = invert(generator, k).ok_or_else(|| {
            EcError::Codec(format!(
                "the rows of columns {survivors:?} are not invertible"
            ))
        })?;
        let rows: Vec<Vec<u8>> = rebuilt
            .iter()
            .map(|&column| {
                if column < k {
                    inverse[column * k..][..k].to_vec()
                } else {
                    // Parity = Cauchy row × data = (Cauchy row × inverse) × survivors.
                    (0..k)
                        .map(|survivor| {
                            (0..k).fold(0u8, |sum, data_column| {
                                sum ^ gf_multiply(
                                    cauchy_coefficient(k, column - k, data_column),
                                    inverse[data_column * k + survivor],
                                )
                            })
                        })
                        .collect()
                }
            })
            .collect();
        Ok(DecodePlan {
            present: present.to_vec(),
            data_only,
            survivors,
            matrices: pass_matrices(&rows, k),
            rebuilt,
        })
    }
}

/// The inverse of the `n × n` row-major `matrix` over GF(2^8) (Gauss-Jordan), `None` when it
/// is singular (a Cauchy code's survivor rows never are).
fn invert(mut matrix: Vec<u8>, n: usize) -> Option<Vec<u8>> {
    let mut inverse = vec![0u8; n * n];
    for diagonal in 0..n {
        inverse[diagonal * n + diagonal] = 1;
    }
    for column in 0..n {
        let pivot = (column..n).find(|&row| matrix[row * n + column] != 0)?;
        for index in 0..n {
            matrix.swap(pivot * n + index, column * n + index);
            inverse.swap(pivot * n + index, column * n + index);
        }
        let scale = gf_inverse(matrix[column * n + column]);
        for index in 0..n {
            matrix[column * n + index] = gf_multiply(scale, matrix[column * n + index]);
            inverse[column * n + index] = gf_multiply(scale, inverse[column * n + index]);
        }
        for row in (0..n).filter(|&row| row != column) {
            let factor = matrix[row * n + column];
            if factor == 0 {
                continue;
            }
            for index in 0..n {
                matrix[row * n + index] ^= gf_multiply(factor, matrix[column * n + index]);
                inverse[row * n + index] ^= gf_multiply(factor, inverse[column * n + index]);
            }
        }
    }
    Some(inverse)
}

/// `rows` (each of `inputs` coefficients) as affine matrices, in passes of up to
/// [`OUTPUTS_PER_PASS`] rows: pass `p` holds its `n` rows' matrices ordered by input, then
/// row (entry `(j, i)` at `j × n + i`), right after pass `p − 1`.
fn pass_matrices(rows: &[Vec<u8>], inputs: usize) -> Vec<u64> {
    let mut matrices = Vec::with_capacity(rows.len() * inputs);
    for pass in rows.chunks(OUTPUTS_PER_PASS) {
        for input in 0..inputs {
            matrices.extend(pass.iter().map(|row| affine_matrix(row[input])));
        }
    }
    matrices
}

/// `outputs[i] = Σ_j row_i[j] × inputs[j]` for matrices laid out by [`pass_matrices`]; only
/// called on a `GfniCode`, which exists only where [`cpu_supported`] holds.
fn dot_products(matrices: &[u64], inputs: &[&[u8]], outputs: &mut [&mut [u8]]) {
    let length = inputs.first().map_or(0, |fragment| fragment.len());
    assert!(
        inputs.iter().all(|fragment| fragment.len() == length)
            && outputs.iter().all(|fragment| fragment.len() == length),
        "fragments of different lengths"
    );
    assert_eq!(matrices.len(), inputs.len() * outputs.len(), "matrix count");
    let mut matrices = matrices;
    for pass_outputs in outputs.chunks_mut(OUTPUTS_PER_PASS) {
        let (pass, rest) = matrices.split_at(inputs.len() * pass_outputs.len());
        matrices = rest;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a `GfniCode` (our only caller) exists only after `cpu_supported()`; the
        // lengths were checked above: every slice `length` bytes, `inputs × outputs` matrices.
        unsafe {
            kernel::dot_product_pass(pass, inputs, pass_outputs, length)
        };
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("GfniCode is only constructed on x86-64: {pass:?} {pass_outputs:?}");
    }
}

#[cfg(target_arch = "x86_64")]
mod kernel {
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
                *low_sum =
                    _mm512_xor_si512(*low_sum, _mm512_gf2p8affine_epi64_epi8::<0>(low, matrix));
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;
    use proptest::prelude::*;
    use rustfs_erasure_codec::{CodecOptions, MatrixMode, galois_8::ReedSolomon};

    #[test]
    fn each_affine_matrix_multiplies_every_byte_by_its_coefficient() {
        for coefficient in 0..=255u8 {
            let matrix = affine_matrix(coefficient);
            for x in 0..=255u8 {
                assert_eq!(
                    affine_reference(x, matrix),
                    gf_multiply(coefficient, x),
                    "{coefficient} × {x}"
                );
            }
        }
    }

    #[test]
    fn inverses_are_inverses() {
        assert_eq!(gf_inverse(0), 0);
        for a in 1..=255u8 {
            assert_eq!(gf_multiply(a, gf_inverse(a)), 1, "{a}");
        }
    }

    #[test]
    fn the_gfni_kernel_computes_parity_exactly_where_the_cpu_has_gfni_and_avx512() {
        let code = Code::new(15, 3, 4096).unwrap();
        let expected = if cpu_supported() {
            "gfni-avx512"
        } else {
            "rustfs-erasure-codec"
        };
        assert_eq!(code.parity_backend(), expected);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_instruction_agrees_with_its_written_out_definition() {
        use std::arch::x86_64::{
            _mm512_gf2p8affine_epi64_epi8, _mm512_loadu_si512, _mm512_set1_epi64,
            _mm512_storeu_si512,
        };
        if !cpu_supported() {
            // The kernel is not used on this CPU (the test above checks that); there is
            // no instruction to compare with.
            eprintln!("this CPU has no GFNI/AVX-512 BW: the kernel is not used here");
            return;
        }
        let bytes: Vec<u8> = (0..=255u8).collect();
        for coefficient in 0..=255u8 {
            let matrix = affine_matrix(coefficient);
            let mut products = [0u8; 256];
            for (input, output) in bytes.chunks_exact(64).zip(products.chunks_exact_mut(64)) {
                // SAFETY: cpu_supported(); 64-byte loads and stores inside 64-byte chunks.
                unsafe { affine_64(input, output, matrix) };
            }
            for x in 0..=255u8 {
                assert_eq!(products[x as usize], affine_reference(x, matrix));
            }
        }

        #[target_feature(enable = "avx512f,avx512bw,gfni")]
        unsafe fn affine_64(input: &[u8], output: &mut [u8], matrix: u64) {
            // SAFETY: the caller passes 64-byte slices.
            unsafe {
                let vector = _mm512_loadu_si512(input.as_ptr().cast());
                let product =
                    _mm512_gf2p8affine_epi64_epi8::<0>(vector, _mm512_set1_epi64(matrix as i64));
                _mm512_storeu_si512(output.as_mut_ptr().cast(), product);
            }
        }
    }

    /// Parity from rustfs-erasure-codec directly, the reference for `Code::encode_stripe`.
    fn reference_parity(data_columns: usize, parity_columns: usize, data: &[u8]) -> Vec<u8> {
        let options = CodecOptions::builder()
            .matrix_mode(MatrixMode::Cauchy)
            .max_parallel_jobs(1)
            .build();
        let codec = ReedSolomon::with_options(data_columns, parity_columns, options).unwrap();
        let fragment_bytes = data.len() / data_columns;
        let inputs: Vec<&[u8]> = data.chunks_exact(fragment_bytes).collect();
        let mut parity = vec![0u8; parity_columns * fragment_bytes];
        let mut outputs: Vec<&mut [u8]> = parity.chunks_exact_mut(fragment_bytes).collect();
        codec.encode_sep(&inputs, &mut outputs).unwrap();
        parity
    }

    #[test]
    fn a_matrix_times_its_inverse_is_the_identity() {
        let n = 6;
        let matrix: Vec<u8> = (0..n * n)
            .map(|index| cauchy_coefficient(n, index / n, index % n))
            .collect();
        let inverse = invert(matrix.clone(), n).unwrap();
        for row in 0..n {
            for column in 0..n {
                let product = (0..n).fold(0u8, |sum, index| {
                    sum ^ gf_multiply(matrix[row * n + index], inverse[index * n + column])
                });
                assert_eq!(product, u8::from(row == column), "({row}, {column})");
            }
        }
        assert_eq!(
            invert(vec![1, 2, 2, 4], 2),
            None,
            "a singular matrix has no inverse"
        );
    }

    #[test]
    fn interleaved_loss_patterns_each_rebuild_correctly_and_the_plan_cache_stays_bounded() {
        let Some(kernel) = GfniCode::new(6, 3) else {
            eprintln!("this CPU has no GFNI/AVX-512 BW: the kernel is not used here");
            return;
        };
        let code = Code::new(6, 3, 200).unwrap();
        let data = xorshift_bytes(6 * 200, 7);
        let mut parity = vec![0u8; 3 * 200];
        code.encode_stripe(&data, &mut parity).unwrap();
        let whole: Vec<u8> = data.iter().chain(&parity).copied().collect();
        // 12 single-column and two-column losses, cycled twice: more patterns than the cache.
        let patterns: Vec<Vec<bool>> = (0..12)
            .map(|index| {
                (0..9)
                    .map(|column| column != index % 9 && column != (index * 5) % 9)
                    .collect()
            })
            .collect();
        for present in patterns.iter().chain(&patterns) {
            let mut stripe = whole.clone();
            for (column, fragment) in stripe.chunks_exact_mut(200).enumerate() {
                if !present[column] {
                    fragment.fill(0);
                }
            }
            let mut fragments: Vec<&mut [u8]> = stripe.chunks_exact_mut(200).collect();
            kernel.reconstruct(&mut fragments, present, false).unwrap();
            assert_eq!(stripe, whole, "pattern {present:?}");
            assert!(kernel.plans.lock().unwrap().len() <= CACHED_PLANS);
        }
    }

    fn xorshift_bytes(count: usize, seed: u64) -> Vec<u8> {
        let mut state = seed | 1;
        (0..count)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any loss of up to `r` columns, data only or all: the rebuilt fragments are the
        /// encoded ones (wiped to 0xEE first), the others untouched, and the same call on the
        /// same pattern (the cached plan) again gives them.
        #[test]
        fn reconstruction_restores_exactly_the_absent_fragments_for_any_loss_pattern(
            data_columns in 1usize..=20,
            parity_columns in 1usize..=12,
            fragment_bytes in 1usize..=300,
            loss_seed in any::<u64>(),
            data_only in any::<bool>(),
        ) {
            let code = Code::new(data_columns, parity_columns, fragment_bytes).unwrap();
            let columns = data_columns + parity_columns;
            let data = xorshift_bytes(data_columns * fragment_bytes, loss_seed ^ 0x5eed);
            let mut parity = vec![0u8; parity_columns * fragment_bytes];
            code.encode_stripe(&data, &mut parity).unwrap();
            let whole: Vec<u8> = data.iter().chain(&parity).copied().collect();
            // Up to r distinct lost columns chosen by the seed.
            let losses = (loss_seed % (parity_columns as u64 + 1)) as usize;
            let mut present = vec![true; columns];
            let mut state = loss_seed | 1;
            while present.iter().filter(|&&kept| !kept).count() < losses {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                present[(state >> 33) as usize % columns] = false;
            }
            for _ in 0..2 {
                let mut stripe = whole.clone();
                for (column, fragment) in stripe.chunks_exact_mut(fragment_bytes).enumerate() {
                    if !present[column] {
                        fragment.fill(0xEE);
                    }
                }
                let mut fragments: Vec<&mut [u8]> = stripe.chunks_exact_mut(fragment_bytes).collect();
                code.reconstruct(&mut fragments, &present, data_only).unwrap();
                for (column, fragment) in stripe.chunks_exact(fragment_bytes).enumerate() {
                    let original = &whole[column * fragment_bytes..][..fragment_bytes];
                    if present[column] || column < data_columns || !data_only {
                        prop_assert_eq!(fragment, original, "column {}", column);
                    } else {
                        prop_assert!(fragment.iter().all(|&byte| byte == 0xEE), "parity column {} left as it was", column);
                    }
                }
            }
        }

        /// Shapes with one to three passes (r up to 20) and fragments that end mid-vector.
        #[test]
        fn parity_equals_rustfs_erasure_codec_for_any_shape_and_fragment_length(
            data_columns in 1usize..=24,
            parity_columns in 1usize..=20,
            fragment_bytes in 1usize..=300,
            seed in any::<u64>(),
        ) {
            let code = Code::new(data_columns, parity_columns, fragment_bytes).unwrap();
            let mut state = seed | 1;
            let data: Vec<u8> = (0..data_columns * fragment_bytes)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            let mut parity = vec![0xA5u8; parity_columns * fragment_bytes];
            code.encode_stripe(&data, &mut parity).unwrap();
            prop_assert_eq!(parity, reference_parity(data_columns, parity_columns, &data));
        }
    }
}
