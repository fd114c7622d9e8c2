//! `Code`: one erasure code shape (k data + r parity columns, `F`-byte fragments), its layout
//! arithmetic (stripes, stack-file sizes, fragment offsets, byte range → stripes and columns)
//! and the parity computation of one stripe.
//!
//! Invariants: a `Code` exists only for a valid shape (`1 ≤ k`, `k + r ≤ MAX_COLUMNS`,
//! `1 ≤ F ≤ MAX_FRAGMENT_BYTES`); parity is systematic Cauchy Reed-Solomon over GF(2^8)
//! (ISA-L's `gf_gen_cauchy1_matrix`), computed and reconstructed on one thread by the fastest
//! kernel the CPU has: our GFNI kernel (`simd/`, AVX-512 or AVX2), else rustfs-erasure-codec.
//! All produce the same bytes (tested).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use rustfs_erasure_codec::{CodecOptions, MatrixMode, galois_8::ReedSolomon};

use crate::header::HEADER_BYTES;
use crate::simd::{GfniCode, Kernel};

/// Default fragment size: 128 KiB.
pub const DEFAULT_FRAGMENT_BYTES: usize = 128 * 1024;
/// Largest `k + r` (GF(2^8) has 256 elements; 255 keeps every Cauchy index a distinct byte
/// with room to spare, and matches ISA-L's limit).
pub const MAX_COLUMNS: usize = 255;
/// Largest fragment size the format allows (64 MiB; the header field is a u32).
pub const MAX_FRAGMENT_BYTES: usize = 64 * 1024 * 1024;
/// Bytes of the crc32c that follows every fragment.
pub const FRAGMENT_CRC_BYTES: usize = 4;

/// A bad code shape or a buffer of the wrong size handed to the code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EcError {
    #[error("invalid code shape {data_columns}+{parity_columns}: {reason}")]
    InvalidShape {
        data_columns: usize,
        parity_columns: usize,
        reason: &'static str,
    },
    #[error("invalid fragment size {fragment_bytes} B: must be 1..={max} B")]
    InvalidFragmentBytes { fragment_bytes: usize, max: usize },
    #[error("{what} buffer is {got_bytes} B, expected {expected_bytes} B")]
    BufferSize {
        what: &'static str,
        expected_bytes: usize,
        got_bytes: usize,
    },
    #[error("byte range {start}..{end} is not inside the blob of {blob_bytes} B")]
    RangeOutsideBlob {
        start: u64,
        end: u64,
        blob_bytes: u64,
    },
    #[error("stripe {stripe} does not exist (the blob has {stripes} stripes)")]
    NoSuchStripe { stripe: u64, stripes: u64 },
    #[error("column {column} does not exist (the code has {columns} columns)")]
    NoSuchColumn { column: usize, columns: usize },
    #[error("{present} fragments present, reconstruction needs {needed}")]
    TooFewFragments { present: usize, needed: usize },
    #[error("erasure codec failed: {0}")]
    Codec(String),
    #[error("the {kernel} kernel needs CPU features this machine does not have")]
    KernelUnavailable { kernel: &'static str },
}

/// Which stripes and data columns a blob byte range touches (see [`Code::locate`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeLocation {
    /// First stripe touched.
    pub first_stripe: u64,
    /// Last stripe touched (inclusive).
    pub last_stripe: u64,
    /// Data columns (ascending) holding at least one byte of the range in some stripe.
    pub data_columns: Vec<usize>,
}

/// One erasure code shape: `k` data columns, `r` parity columns, `F`-byte fragments.
pub struct Code {
    data_columns: usize,
    parity_columns: usize,
    fragment_bytes: usize,
    /// What computes parity and reconstructs.
    kernel: Kernel,
    /// `kernel`'s state; `None` when `r = 0` (nothing to compute, and the codec crate refuses
    /// zero parity).
    engine: Option<Engine>,
}

/// The one implementation a `Code` runs (only the chosen one is built).
enum Engine {
    Gfni(GfniCode),
    Rustfs(Arc<ReedSolomon>),
}

/// The most code shapes [`shared_codec`] keeps: a rack uses one or two, so this is a bound,
/// not a tuning knob.
const MAX_SHARED_CODECS: usize = 64;

/// Shared codecs by `(k, r)`.
type CodecsByShape = BTreeMap<(usize, usize), Arc<ReedSolomon>>;

/// The rustfs codec for `k + r`, built once per shape and shared. Building one costs far more
/// than coding a small stripe (it resolves its parallel policy, reading the cgroup files of
/// `available_parallelism` each time), and the store builds a `Code` per blob it touches.
/// Past [`MAX_SHARED_CODECS`] shapes a codec is built and not kept.
fn shared_codec(data_columns: usize, parity_columns: usize) -> Result<Arc<ReedSolomon>, EcError> {
    static CODECS: OnceLock<Mutex<CodecsByShape>> = OnceLock::new();
    let codecs = CODECS.get_or_init(|| Mutex::new(BTreeMap::new()));
    let shape = (data_columns, parity_columns);
    // A panic elsewhere cannot leave the map half-changed (insert is the only write).
    if let Some(codec) = codecs.lock().unwrap_or_else(|e| e.into_inner()).get(&shape) {
        return Ok(Arc::clone(codec));
    }
    let options = CodecOptions::builder()
        .matrix_mode(MatrixMode::Cauchy)
        .max_parallel_jobs(1)
        .build();
    let codec = Arc::new(
        ReedSolomon::with_options(data_columns, parity_columns, options)
            .map_err(|error| EcError::Codec(format!("{error:?}")))?,
    );
    let mut codecs = codecs.lock().unwrap_or_else(|e| e.into_inner());
    if codecs.len() < MAX_SHARED_CODECS {
        codecs.entry(shape).or_insert_with(|| Arc::clone(&codec));
    }
    Ok(codec)
}

impl std::fmt::Debug for Code {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "Code({}+{}, {} B fragments)",
            self.data_columns, self.parity_columns, self.fragment_bytes
        )
    }
}

impl Code {
    /// A `k + r` Cauchy code with `fragment_bytes`-byte fragments, on the fastest kernel this
    /// CPU has ([`Kernel::fastest_available`]).
    pub fn new(
        data_columns: usize,
        parity_columns: usize,
        fragment_bytes: usize,
    ) -> Result<Code, EcError> {
        Code::with_kernel(
            data_columns,
            parity_columns,
            fragment_bytes,
            Kernel::fastest_available(),
        )
    }

    /// The same code on a chosen kernel (benchmarks and tests compare them; every kernel
    /// gives the same bytes). A kernel this CPU cannot run is [`EcError::KernelUnavailable`].
    pub fn with_kernel(
        data_columns: usize,
        parity_columns: usize,
        fragment_bytes: usize,
        kernel: Kernel,
    ) -> Result<Code, EcError> {
        if !kernel.is_available() {
            return Err(EcError::KernelUnavailable {
                kernel: kernel.name(),
            });
        }
        let shape_error = |reason| EcError::InvalidShape {
            data_columns,
            parity_columns,
            reason,
        };
        if data_columns == 0 {
            return Err(shape_error("k must be at least 1"));
        }
        if data_columns.saturating_add(parity_columns) > MAX_COLUMNS {
            return Err(shape_error("k + r must be at most 255"));
        }
        if fragment_bytes == 0 || fragment_bytes > MAX_FRAGMENT_BYTES {
            return Err(EcError::InvalidFragmentBytes {
                fragment_bytes,
                max: MAX_FRAGMENT_BYTES,
            });
        }
        let engine = if parity_columns == 0 {
            None
        } else if let Some(gfni) = GfniCode::new(kernel, data_columns, parity_columns) {
            Some(Engine::Gfni(gfni))
        } else {
            Some(Engine::Rustfs(shared_codec(data_columns, parity_columns)?))
        };
        Ok(Code {
            data_columns,
            parity_columns,
            fragment_bytes,
            kernel,
            engine,
        })
    }

    /// The kernel that computes parity and reconstructs (benchmarks print its name).
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// `k`.
    pub fn data_columns(&self) -> usize {
        self.data_columns
    }

    /// `r`.
    pub fn parity_columns(&self) -> usize {
        self.parity_columns
    }

    /// `k + r`: one stripe-stack file (one disk) per column.
    pub fn columns(&self) -> usize {
        self.data_columns + self.parity_columns
    }

    /// `F`.
    pub fn fragment_bytes(&self) -> usize {
        self.fragment_bytes
    }

    /// `F + 4`: a fragment followed by its crc32c.
    pub fn framed_fragment_bytes(&self) -> usize {
        self.fragment_bytes + FRAGMENT_CRC_BYTES
    }

    /// `k × F`: blob bytes per stripe.
    pub fn stripe_data_bytes(&self) -> u64 {
        self.data_columns as u64 * self.fragment_bytes as u64
    }

    /// `ceil(B / (k × F))`; 0 for an empty blob.
    pub fn stripes_for(&self, blob_bytes: u64) -> u64 {
        blob_bytes.div_ceil(self.stripe_data_bytes())
    }

    /// The length of every stripe-stack file of a `blob_bytes` blob.
    pub fn stack_file_bytes(&self, blob_bytes: u64) -> u64 {
        HEADER_BYTES as u64 + self.stripes_for(blob_bytes) * self.framed_fragment_bytes() as u64
    }

    /// Where stripe `stripe`'s framed fragment starts in any column's stack file.
    pub fn fragment_offset(&self, stripe: u64) -> u64 {
        HEADER_BYTES as u64 + stripe * self.framed_fragment_bytes() as u64
    }

    /// Which stripes and data columns hold the blob bytes `range` (non-empty, inside the blob).
    pub fn locate(&self, blob_bytes: u64, range: Range<u64>) -> Result<RangeLocation, EcError> {
        if range.start >= range.end || range.end > blob_bytes {
            return Err(EcError::RangeOutsideBlob {
                start: range.start,
                end: range.end,
                blob_bytes,
            });
        }
        let stripe_bytes = self.stripe_data_bytes();
        let first_stripe = range.start / stripe_bytes;
        let last_stripe = (range.end - 1) / stripe_bytes;
        let first_fragment = range.start / self.fragment_bytes as u64;
        let last_fragment = (range.end - 1) / self.fragment_bytes as u64;
        let fragments = last_fragment - first_fragment + 1;
        let data_columns = if fragments >= self.data_columns as u64 {
            (0..self.data_columns).collect()
        } else {
            let mut columns: Vec<usize> = (first_fragment..=last_fragment)
                .map(|fragment| (fragment % self.data_columns as u64) as usize)
                .collect();
            columns.sort_unstable();
            columns
        };
        Ok(RangeLocation {
            first_stripe,
            last_stripe,
            data_columns,
        })
    }

    /// Computes the `r` parity fragments of one stripe: `data` is the stripe's `k × F` bytes
    /// (fragment `j` at `j × F`), `parity` receives `r × F` bytes. Allocates nothing.
    pub fn encode_stripe(&self, data: &[u8], parity: &mut [u8]) -> Result<(), EcError> {
        let fragment_bytes = self.fragment_bytes;
        check_size("data", self.data_columns * fragment_bytes, data.len())?;
        check_size("parity", self.parity_columns * fragment_bytes, parity.len())?;
        let Some(engine) = &self.engine else {
            return Ok(());
        };
        // Fixed-size arrays of slices keep the hot loop free of heap allocation.
        let mut data_fragments: [&[u8]; MAX_COLUMNS] = [&[]; MAX_COLUMNS];
        for (slot, fragment) in data_fragments
            .iter_mut()
            .zip(data.chunks_exact(fragment_bytes))
        {
            *slot = fragment;
        }
        let mut parity_fragments: [&mut [u8]; MAX_COLUMNS] =
            std::array::from_fn(|_| <&mut [u8]>::default());
        for (slot, fragment) in parity_fragments
            .iter_mut()
            .zip(parity.chunks_exact_mut(fragment_bytes))
        {
            *slot = fragment;
        }
        let data_fragments = &data_fragments[..self.data_columns];
        let parity_fragments = &mut parity_fragments[..self.parity_columns];
        match engine {
            Engine::Gfni(gfni) => {
                gfni.encode(data_fragments, parity_fragments);
                Ok(())
            }
            Engine::Rustfs(codec) => codec
                .encode_sep(data_fragments, parity_fragments)
                .map_err(|error| EcError::Codec(format!("{error:?}"))),
        }
    }

    /// Rebuilds the fragments marked absent in `present` from the present ones, in place
    /// (no crc checks: the caller marks only verified fragments present). `fragments` holds
    /// `k + r` fragments of `F` bytes; at least `k` must be present. `data_only` skips
    /// absent parity fragments (they are left as they are).
    pub fn reconstruct(
        &self,
        fragments: &mut [&mut [u8]],
        present: &[bool],
        data_only: bool,
    ) -> Result<(), EcError> {
        check_size("fragment list", self.columns(), fragments.len())?;
        check_size("presence list", self.columns(), present.len())?;
        for fragment in fragments.iter() {
            check_size("fragment", self.fragment_bytes, fragment.len())?;
        }
        let present_count = present.iter().filter(|&&is_present| is_present).count();
        if present_count < self.data_columns {
            return Err(EcError::TooFewFragments {
                present: present_count,
                needed: self.data_columns,
            });
        }
        let codec = match &self.engine {
            // r = 0 and k present: nothing is missing.
            None => return Ok(()),
            Some(Engine::Gfni(gfni)) => return gfni.reconstruct(fragments, present, data_only),
            Some(Engine::Rustfs(codec)) => codec,
        };
        let mut shards: [(&mut [u8], bool); MAX_COLUMNS] =
            std::array::from_fn(|_| (<&mut [u8]>::default(), false));
        for ((shard, fragment), &is_present) in shards.iter_mut().zip(fragments).zip(present) {
            *shard = (&mut **fragment, is_present);
        }
        let shards = &mut shards[..self.columns()];
        let result = if data_only {
            codec.reconstruct_data(shards)
        } else {
            codec.reconstruct(shards)
        };
        result.map_err(|error| EcError::Codec(format!("{error:?}")))
    }
}

fn check_size(what: &'static str, expected_bytes: usize, got_bytes: usize) -> Result<(), EcError> {
    if expected_bytes == got_bytes {
        Ok(())
    } else {
        Err(EcError::BufferSize {
            what,
            expected_bytes,
            got_bytes,
        })
    }
}
