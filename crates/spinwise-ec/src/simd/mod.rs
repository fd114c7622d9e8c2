//! GF(2^8) dot products on x86-64 CPUs with GFNI: the `r` parity fragments of a stripe from its
//! `k` data fragments, and lost fragments from `k` survivors, each in one pass over the inputs.
//!
//! Why it exists: rustfs-erasure-codec's fastest x86 path (its AVX2 "codegen" dot product, also
//! what it runs when the CPU has GFNI) encodes 15+3 at 14.1 GB/s per core in cache and 7.9 GB/s
//! past the L3 on the Zen 4 of docs/BENCHMARKS.md, where ISA-L's GFNI kernels reach 22.4 and
//! 11.7, and the target is ISA-L's rate. No crate offers ISA-L's kernels without C
//! (ISA-L's own binding needs nasm and autotools: the `isal-peer` bench feature).
//!
//! Multiplying a vector of bytes by a constant of GF(2^8) is one `vgf2p8affineqb` with the
//! constant's 8×8 bit matrix, so an output vector is `k` affine products XORed together. The
//! output rows of a pass stay in registers, each with several accumulators (several vectors per
//! step, so independent chains overlap: one vector per step measured 14.9 GB/s in cache, two
//! 24.4, four with three-way XORs 54 on 64-byte-aligned buffers), and every input byte is read
//! once per pass. Two widths:
//!
//! - [`Kernel::GfniAvx512`] (`gfni.rs`): 64-byte vectors, up to 8 rows per pass.
//! - [`Kernel::GfniAvx2`] (`gfni_avx2.rs`): 32-byte vectors, up to 4 rows per pass, for CPUs
//!   with GFNI but not AVX-512 (Intel's Atom cores, storage SoCs among them, and client cores).
//!
//! An AVX2 kernel without GFNI, of the same shape (nibble tables and `vpshufb`), measured no
//! faster than rustfs-erasure-codec's AVX2 path on the Zen 4 (docs/BENCHMARKS.md) and was not
//! kept: CPUs without GFNI use rustfs-erasure-codec.
//!
//! Invariants:
//! - The matrix is ISA-L's `gf_gen_cauchy1_matrix` (`field.rs`). The tests check parity and
//!   reconstruction byte for byte against rustfs-erasure-codec; the ISA-L peer of `ec_bench`
//!   checks against ISA-L itself.
//! - A `GfniCode` exists only for a kernel the running CPU has ([`Kernel::is_available`],
//!   checked in [`GfniCode::new`]); that check is what makes the `unsafe` calls sound.
//! - Every slice handed to a kernel has the same length (asserted: a mismatch is a bug in
//!   `Code`, which checks the caller's buffers).
//! - Reconstruction reads exactly the first `k` present fragments and writes exactly the absent
//!   ones it was asked for; its rows (from the inverse of those `k` generator rows) are made
//!   once per loss pattern and kept for the next stripes (the last eight patterns).

mod field;
#[cfg(target_arch = "x86_64")]
mod gfni;
#[cfg(target_arch = "x86_64")]
mod gfni_avx2;

use std::sync::{Arc, Mutex};

use crate::code::{EcError, MAX_COLUMNS};
use field::{affine_matrix, cauchy_coefficient, gf_multiply, invert};

/// Which implementation computes parity and reconstructs lost fragments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// `vgf2p8affineqb` on 512-bit vectors: needs the CPU flags gfni, avx512f and avx512bw.
    GfniAvx512,
    /// `vgf2p8affineqb` on 256-bit vectors: needs gfni and avx2 (GFNI without AVX-512).
    GfniAvx2,
    /// rustfs-erasure-codec, on any CPU.
    RustfsErasureCodec,
}

impl Kernel {
    /// Every kernel, fastest first.
    pub const ALL: [Kernel; 3] = [
        Kernel::GfniAvx512,
        Kernel::GfniAvx2,
        Kernel::RustfsErasureCodec,
    ];

    /// The fastest kernel this CPU can run (what [`crate::Code::new`] uses).
    pub fn fastest_available() -> Kernel {
        Kernel::ALL
            .into_iter()
            .find(|kernel| kernel.is_available())
            .unwrap_or(Kernel::RustfsErasureCodec)
    }

    /// Whether the running CPU has what this kernel needs.
    pub fn is_available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected;
            match self {
                Kernel::GfniAvx512 => {
                    is_x86_feature_detected!("gfni")
                        && is_x86_feature_detected!("avx512f")
                        && is_x86_feature_detected!("avx512bw")
                }
                Kernel::GfniAvx2 => {
                    is_x86_feature_detected!("gfni") && is_x86_feature_detected!("avx2")
                }
                Kernel::RustfsErasureCodec => true,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Kernel::RustfsErasureCodec
        }
    }

    /// The name benchmarks print: `gfni-avx512`, `gfni-avx2` or `rustfs-erasure-codec`.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::GfniAvx512 => "gfni-avx512",
            Kernel::GfniAvx2 => "gfni-avx2",
            Kernel::RustfsErasureCodec => "rustfs-erasure-codec",
        }
    }
}

/// Output rows per pass: with AVX-512, 8 rows × 2 accumulators (4 × 4 up to four rows), the
/// input vectors of two inputs and their products stay within the 32 vector registers; with
/// AVX2's 16, 4 rows.
fn rows_per_pass(kernel: Kernel) -> usize {
    match kernel {
        Kernel::GfniAvx512 => 8,
        Kernel::GfniAvx2 => 4,
        Kernel::RustfsErasureCodec => unreachable!("rustfs-erasure-codec has no passes here"),
    }
}

/// Loss patterns whose decoding rows a `GfniCode` keeps: concurrent degraded reads and a
/// rebuild of a few different disks each find theirs; more than that evicts the oldest.
const CACHED_PLANS: usize = 8;

/// One `k + r` Cauchy code on a GFNI kernel: its parity rows as affine matrices, and the
/// decoding rows of the loss patterns it reconstructed lately.
pub(crate) struct GfniCode {
    /// [`Kernel::GfniAvx512`] or [`Kernel::GfniAvx2`], available on this CPU.
    kernel: Kernel,
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

/// `rows` (each of `inputs` coefficients) as affine matrices, in passes of up to
/// [`rows_per_pass`] rows: pass `p` holds its `n` rows' matrices ordered by input, then row
/// (entry `(j, i)` at `j × n + i`), right after pass `p − 1`.
fn pass_matrices(kernel: Kernel, rows: &[Vec<u8>], inputs: usize) -> Vec<u64> {
    let mut matrices = Vec::with_capacity(rows.len() * inputs);
    for pass in rows.chunks(rows_per_pass(kernel)) {
        for input in 0..inputs {
            matrices.extend(pass.iter().map(|row| affine_matrix(row[input])));
        }
    }
    matrices
}

impl GfniCode {
    /// `kernel` for `k + r` (`r ≥ 1`) when it is a GFNI kernel this CPU can run; `None`
    /// otherwise (rustfs-erasure-codec computes).
    pub(crate) fn new(
        kernel: Kernel,
        data_columns: usize,
        parity_columns: usize,
    ) -> Option<GfniCode> {
        if kernel == Kernel::RustfsErasureCodec || !kernel.is_available() {
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
            kernel,
            data_columns,
            parity_columns,
            parity_matrices: pass_matrices(kernel, &parity_rows, data_columns),
            plans: Mutex::new(Vec::new()),
        })
    }

    /// Writes the parity of `data` (`k` fragments) into `parity` (`r` fragments), all of one
    /// length.
    pub(crate) fn encode(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) {
        assert_eq!(data.len(), self.data_columns, "data fragment count");
        assert_eq!(parity.len(), self.parity_columns, "parity fragment count");
        dot_products(self.kernel, &self.parity_matrices, data, parity);
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
            self.kernel,
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
            matrices: pass_matrices(self.kernel, &rows, k),
            rebuilt,
        })
    }
}

/// `outputs[i] = Σ_j row_i[j] × inputs[j]` for matrices laid out by [`pass_matrices`] for
/// `kernel`; only called on a `GfniCode`, which exists only where its kernel is available.
fn dot_products(kernel: Kernel, matrices: &[u64], inputs: &[&[u8]], outputs: &mut [&mut [u8]]) {
    let length = inputs.first().map_or(0, |fragment| fragment.len());
    assert!(
        inputs.iter().all(|fragment| fragment.len() == length)
            && outputs.iter().all(|fragment| fragment.len() == length),
        "fragments of different lengths"
    );
    assert_eq!(matrices.len(), inputs.len() * outputs.len(), "matrix count");
    let mut matrices = matrices;
    for pass_outputs in outputs.chunks_mut(rows_per_pass(kernel)) {
        let (pass, rest) = matrices.split_at(inputs.len() * pass_outputs.len());
        matrices = rest;
        // SAFETY: a `GfniCode` exists only where its kernel is available; the lengths were
        // checked above: every slice `length` bytes, `inputs × outputs` matrices.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            match kernel {
                Kernel::GfniAvx512 => gfni::dot_product_pass(pass, inputs, pass_outputs, length),
                Kernel::GfniAvx2 => gfni_avx2::dot_product_pass(pass, inputs, pass_outputs, length),
                Kernel::RustfsErasureCodec => unreachable!("not a GFNI kernel"),
            }
        };
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("a GfniCode exists only on x86-64: {pass:?} {pass_outputs:?} {length}");
    }
}

#[cfg(test)]
mod tests {
    use super::field::{affine_reference, gf_inverse};
    use super::*;
    use crate::Code;
    use proptest::prelude::*;
    use rustfs_erasure_codec::{CodecOptions, MatrixMode, galois_8::ReedSolomon};

    /// The SIMD kernels this CPU runs (the property tests cover each of them; a CPU without
    /// GFNI runs rustfs-erasure-codec only, which the `Code` tests cover).
    fn available_simd_kernels() -> Vec<Kernel> {
        [Kernel::GfniAvx512, Kernel::GfniAvx2]
            .into_iter()
            .filter(|kernel| kernel.is_available())
            .collect()
    }

    #[test]
    fn each_affine_matrix_multiplies_every_byte_by_its_coefficient() {
        for coefficient in 0..=255u8 {
            let matrix = affine_matrix(coefficient);
            for x in 0..=255u8 {
                let product = gf_multiply(coefficient, x);
                assert_eq!(affine_reference(x, matrix), product, "{coefficient} × {x}");
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
    fn a_code_runs_on_the_fastest_kernel_the_cpu_has_and_refuses_one_it_lacks() {
        let code = Code::new(15, 3, 4096).unwrap();
        assert_eq!(code.kernel(), Kernel::fastest_available());
        let fastest = Kernel::ALL.into_iter().find(|kernel| kernel.is_available());
        assert_eq!(Some(code.kernel()), fastest);
        for kernel in Kernel::ALL {
            let result = Code::with_kernel(15, 3, 4096, kernel);
            assert_eq!(result.is_ok(), kernel.is_available(), "{kernel:?}");
        }
        assert!(Kernel::RustfsErasureCodec.is_available());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_gfni_instruction_agrees_with_its_written_out_definition() {
        use std::arch::x86_64::{
            _mm512_gf2p8affine_epi64_epi8, _mm512_loadu_si512, _mm512_set1_epi64,
            _mm512_storeu_si512,
        };
        if !Kernel::GfniAvx512.is_available() {
            // The kernel is not used on this CPU (the test above checks that); there is
            // no instruction to compare with.
            eprintln!("this CPU has no GFNI/AVX-512 BW: that kernel is not used here");
            return;
        }
        let bytes: Vec<u8> = (0..=255u8).collect();
        for coefficient in 0..=255u8 {
            let matrix = affine_matrix(coefficient);
            let mut products = [0u8; 256];
            for (input, output) in bytes.chunks_exact(64).zip(products.chunks_exact_mut(64)) {
                // SAFETY: checked available above; 64-byte loads and stores in 64-byte chunks.
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

    #[test]
    fn interleaved_loss_patterns_each_rebuild_correctly_and_the_plan_cache_stays_bounded() {
        for kernel in available_simd_kernels() {
            let simd = GfniCode::new(kernel, 6, 3).unwrap();
            let code = Code::new(6, 3, 200).unwrap();
            let data = xorshift_bytes(6 * 200, 7);
            let mut parity = vec![0u8; 3 * 200];
            code.encode_stripe(&data, &mut parity).unwrap();
            let whole: Vec<u8> = data.iter().chain(&parity).copied().collect();
            // 12 one- and two-column losses (9 distinct), cycled twice: more than the cache.
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
                simd.reconstruct(&mut fragments, present, false).unwrap();
                assert_eq!(stripe, whole, "{kernel:?}, pattern {present:?}");
                assert!(simd.plans.lock().unwrap().len() <= CACHED_PLANS);
            }
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

    /// Parity from rustfs-erasure-codec directly, the reference for the kernels.
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Shapes with one to five passes (r up to 20), fragments of zero to two whole steps
        /// that end mid-vector, odd and even input counts (inputs go in pairs); every
        /// kernel through `Code`, rustfs's included (its wiring, against the crate used directly).
        #[test]
        fn every_kernel_computes_the_parity_rustfs_erasure_codec_computes(
            data_columns in 1usize..=24,
            parity_columns in 1usize..=20,
            fragment_bytes in 1usize..=700,
            seed in any::<u64>(),
        ) {
            let data = xorshift_bytes(data_columns * fragment_bytes, seed);
            let expected = reference_parity(data_columns, parity_columns, &data);
            for kernel in Kernel::ALL.into_iter().filter(|kernel| kernel.is_available()) {
                let code = Code::with_kernel(data_columns, parity_columns, fragment_bytes, kernel)
                    .unwrap();
                let mut parity = vec![0xA5u8; parity_columns * fragment_bytes];
                code.encode_stripe(&data, &mut parity).unwrap();
                prop_assert_eq!(&parity, &expected, "{:?}", kernel);
            }
        }

        /// Any loss of up to `r` columns, data only or all: the rebuilt fragments are the
        /// encoded ones (wiped to 0xEE first), the others untouched, and the same call on the
        /// same pattern (the cached plan) again gives them. Every kernel, rustfs's included.
        #[test]
        fn reconstruction_restores_exactly_the_absent_fragments_for_any_loss_pattern(
            data_columns in 1usize..=20,
            parity_columns in 1usize..=12,
            fragment_bytes in 1usize..=700,
            loss_seed in any::<u64>(),
            data_only in any::<bool>(),
        ) {
            let columns = data_columns + parity_columns;
            let data = xorshift_bytes(data_columns * fragment_bytes, loss_seed ^ 0x5eed);
            let parity = reference_parity(data_columns, parity_columns, &data);
            let whole: Vec<u8> = data.iter().chain(&parity).copied().collect();
            // Up to r distinct lost columns chosen by the seed.
            let losses = (loss_seed % (parity_columns as u64 + 1)) as usize;
            let mut present = vec![true; columns];
            let mut state = loss_seed | 1;
            while present.iter().filter(|&&kept| !kept).count() < losses {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                present[(state >> 33) as usize % columns] = false;
            }
            let kernels = Kernel::ALL.into_iter().filter(|kernel| kernel.is_available());
            for kernel in kernels {
                let code = Code::with_kernel(data_columns, parity_columns, fragment_bytes, kernel)
                    .unwrap();
                for _ in 0..2 {
                    let mut stripe = whole.clone();
                    for (column, fragment) in stripe.chunks_exact_mut(fragment_bytes).enumerate() {
                        if !present[column] {
                            fragment.fill(0xEE);
                        }
                    }
                    let mut fragments: Vec<&mut [u8]> =
                        stripe.chunks_exact_mut(fragment_bytes).collect();
                    code.reconstruct(&mut fragments, &present, data_only).unwrap();
                    for (column, fragment) in stripe.chunks_exact(fragment_bytes).enumerate() {
                        let original = &whole[column * fragment_bytes..][..fragment_bytes];
                        if present[column] || column < data_columns || !data_only {
                            prop_assert_eq!(fragment, original, "{:?}, column {}", kernel, column);
                        } else {
                            prop_assert!(
                                fragment.iter().all(|&byte| byte == 0xEE),
                                "{:?}: parity column {} left as it was", kernel, column
                            );
                        }
                    }
                }
            }
        }
    }
}
