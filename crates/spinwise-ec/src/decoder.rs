//! `StripeDecoder`: reads verified blob bytes stripe by stripe through a caller's fetch
//! closure, reconstructing around missing, short or corrupt fragments, and reports what it
//! repaired; also rebuilds one column's fragment (for a lost stripe stack) and scrubs stripes.
//!
//! Invariants: no byte reaches the sink unless its fragment's crc32c matched or it was
//! reconstructed from `k` fragments whose crcs matched; a read fetches only the data
//! fragments covering the requested range while they are good, and fetches more (other data
//! columns first, then parity) only to reach `k` good ones; memory is one stripe of framed
//! fragments (`(k + r) × (F + 4)` bytes), reused across stripes.

use std::io::{self, Write};
use std::ops::Range;

use crate::code::{Code, EcError};

/// Why the caller's fetch closure could not supply a framed fragment (disk failed, file
/// missing, header invalid for this column, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FetchError(pub String);

/// What was wrong with one fragment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FragmentFault {
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("short: {got_bytes} B of {expected_bytes} B")]
    Short {
        got_bytes: usize,
        expected_bytes: usize,
    },
    #[error("crc32c mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum { stored: u32, computed: u32 },
}

/// One bad fragment a read met (and read around).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairedFragment {
    pub stripe: u64,
    pub column: usize,
    pub fault: FragmentFault,
}

/// Every bad fragment met by a read, rebuild or scrub, in the order met. A data fragment
/// listed here was reconstructed for the output; the stack files are unchanged (rewriting
/// them is the store's decision).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    pub repaired: Vec<RepairedFragment>,
}

impl RepairReport {
    /// True when every fragment read was good.
    pub fn is_clean(&self) -> bool {
        self.repaired.is_empty()
    }

    /// Appends another report's entries.
    pub fn merge(&mut self, other: RepairReport) {
        self.repaired.extend(other.repaired);
    }
}

/// Why a read failed.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("stripe {stripe} is corrupt beyond repair: {}", describe_bad(.bad))]
    CorruptBeyondRepair {
        stripe: u64,
        bad: Vec<(usize, FragmentFault)>,
    },
    #[error("content hash mismatch: expected {expected}, decoded bytes hash to {computed}")]
    ContentHashMismatch { expected: String, computed: String },
    #[error("writing decoded bytes failed: {0}")]
    Sink(#[from] io::Error),
    #[error(transparent)]
    Code(#[from] EcError),
}

fn describe_bad(bad: &[(usize, FragmentFault)]) -> String {
    let parts: Vec<String> = bad
        .iter()
        .map(|(column, fault)| format!("column {column} {fault}"))
        .collect();
    parts.join(", ")
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ColumnState {
    Unread,
    Good,
    Bad(FragmentFault),
}

/// Reads stripes of one blob. The fetch closure `fetch(column, stripe, buffer)` must fill
/// `buffer` (`F + 4` bytes) with the framed fragment at `Code::fragment_offset(stripe)` of
/// that column's stack file and return how many bytes it read (fewer only at end of file);
/// filling a caller buffer keeps reads allocation-free and maps directly onto
/// `Disk::read_at`.
pub struct StripeDecoder<'c> {
    code: &'c Code,
    blob_bytes: u64,
    stripes: u64,
    framed: Vec<u8>,
    states: Vec<ColumnState>,
}

impl<'c> StripeDecoder<'c> {
    /// A decoder for a blob of `blob_bytes` bytes coded with `code`.
    pub fn new(code: &'c Code, blob_bytes: u64) -> StripeDecoder<'c> {
        StripeDecoder {
            code,
            blob_bytes,
            stripes: code.stripes_for(blob_bytes),
            framed: vec![0; code.columns() * code.framed_fragment_bytes()],
            states: vec![ColumnState::Unread; code.columns()],
        }
    }

    /// Writes the verified blob bytes `range` to `sink`, fetching only what it needs.
    pub fn read_range<F>(
        &mut self,
        range: Range<u64>,
        mut fetch: F,
        sink: &mut dyn Write,
    ) -> Result<RepairReport, DecodeError>
    where
        F: FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
    {
        let mut report = RepairReport::default();
        if range.start == range.end && range.end <= self.blob_bytes {
            return Ok(report);
        }
        let location = self.code.locate(self.blob_bytes, range.clone())?;
        let stripe_bytes = self.code.stripe_data_bytes();
        let fragment_bytes = self.code.fragment_bytes() as u64;
        for stripe in location.first_stripe..=location.last_stripe {
            let stripe_start = stripe * stripe_bytes;
            let local_start = range.start.max(stripe_start) - stripe_start;
            let local_end = range.end.min(stripe_start + stripe_bytes) - stripe_start;
            let first_column = (local_start / fragment_bytes) as usize;
            let last_column = ((local_end - 1) / fragment_bytes) as usize;
            self.load_stripe(
                stripe,
                first_column..last_column + 1,
                &mut fetch,
                &mut report,
            )?;
            for column in first_column..=last_column {
                let column_start = column as u64 * fragment_bytes;
                let from = local_start.max(column_start) - column_start;
                let to = local_end.min(column_start + fragment_bytes) - column_start;
                sink.write_all(&self.fragment(column)[from as usize..to as usize])?;
            }
        }
        Ok(report)
    }

    /// Reconstructs fragment `column` of `stripe` from the other columns and writes it,
    /// framed with its crc, into `framed_out` (`F + 4` bytes): one step of rebuilding a lost
    /// stripe stack.
    pub fn rebuild_fragment<F>(
        &mut self,
        stripe: u64,
        column: usize,
        mut fetch: F,
        framed_out: &mut [u8],
    ) -> Result<RepairReport, DecodeError>
    where
        F: FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
    {
        self.check_stripe(stripe)?;
        let columns = self.code.columns();
        if column >= columns {
            return Err(EcError::NoSuchColumn { column, columns }.into());
        }
        let framed_bytes = self.code.framed_fragment_bytes();
        if framed_out.len() != framed_bytes {
            return Err(EcError::BufferSize {
                what: "framed fragment",
                expected_bytes: framed_bytes,
                got_bytes: framed_out.len(),
            }
            .into());
        }
        let mut report = RepairReport::default();
        self.states.fill(ColumnState::Unread);
        // The target is never read: it is the one being replaced.
        self.states[column] = ColumnState::Bad(FragmentFault::Unavailable("rebuilding".into()));
        self.fetch_until_k_good(stripe, &mut fetch)?;
        self.reconstruct(stripe, column >= self.code.data_columns())?;
        self.record_faults(stripe, Some(column), &mut report);
        let fragment = self.fragment(column);
        let crc = crate::checksum::crc32c(fragment);
        framed_out[..fragment.len()].copy_from_slice(fragment);
        framed_out[fragment.len()..].copy_from_slice(&crc.to_le_bytes());
        Ok(report)
    }

    /// Fetches and checks every fragment of `stripe` (a scrub step). Fails only when fewer
    /// than `k` are good; otherwise reports the bad ones.
    pub fn scrub_stripe<F>(
        &mut self,
        stripe: u64,
        mut fetch: F,
    ) -> Result<RepairReport, DecodeError>
    where
        F: FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
    {
        self.check_stripe(stripe)?;
        self.states.fill(ColumnState::Unread);
        for column in 0..self.code.columns() {
            self.fetch_column(stripe, column, &mut fetch);
        }
        self.fail_unless_k_good(stripe)?;
        let mut report = RepairReport::default();
        self.record_faults(stripe, None, &mut report);
        Ok(report)
    }

    fn check_stripe(&self, stripe: u64) -> Result<(), EcError> {
        if stripe < self.stripes {
            Ok(())
        } else {
            Err(EcError::NoSuchStripe {
                stripe,
                stripes: self.stripes,
            })
        }
    }

    /// Makes data columns `needed` of `stripe` readable from `self.framed`.
    fn load_stripe<F>(
        &mut self,
        stripe: u64,
        needed: Range<usize>,
        fetch: &mut F,
        report: &mut RepairReport,
    ) -> Result<(), DecodeError>
    where
        F: FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
    {
        self.states.fill(ColumnState::Unread);
        for column in needed.clone() {
            self.fetch_column(stripe, column, fetch);
        }
        if needed
            .clone()
            .all(|column| self.states[column] == ColumnState::Good)
        {
            return Ok(());
        }
        self.fetch_until_k_good(stripe, fetch)?;
        self.reconstruct(stripe, false)?;
        self.record_faults(stripe, None, report);
        Ok(())
    }

    /// Fetches unread columns (data first, then parity) until `k` are good.
    fn fetch_until_k_good<F>(&mut self, stripe: u64, fetch: &mut F) -> Result<(), DecodeError>
    where
        F: FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
    {
        for column in 0..self.code.columns() {
            if self.good_count() >= self.code.data_columns() {
                break;
            }
            if self.states[column] == ColumnState::Unread {
                self.fetch_column(stripe, column, fetch);
            }
        }
        self.fail_unless_k_good(stripe)
    }

    fn good_count(&self) -> usize {
        self.states
            .iter()
            .filter(|state| **state == ColumnState::Good)
            .count()
    }

    fn fail_unless_k_good(&self, stripe: u64) -> Result<(), DecodeError> {
        if self.good_count() >= self.code.data_columns() {
            return Ok(());
        }
        let bad = self
            .states
            .iter()
            .enumerate()
            .filter_map(|(column, state)| match state {
                ColumnState::Bad(fault) => Some((column, fault.clone())),
                _ => None,
            })
            .collect();
        Err(DecodeError::CorruptBeyondRepair { stripe, bad })
    }

    /// Rebuilds every non-good data fragment (and, with `parity_too`, parity fragment).
    fn reconstruct(&mut self, stripe: u64, parity_too: bool) -> Result<(), DecodeError> {
        debug_assert!(
            self.good_count() >= self.code.data_columns(),
            "stripe {stripe}"
        );
        let fragment_bytes = self.code.fragment_bytes();
        let mut present = [false; crate::code::MAX_COLUMNS];
        for (flag, state) in present.iter_mut().zip(&self.states) {
            *flag = *state == ColumnState::Good;
        }
        let mut fragments: [&mut [u8]; crate::code::MAX_COLUMNS] =
            std::array::from_fn(|_| <&mut [u8]>::default());
        for (slot, framed) in fragments
            .iter_mut()
            .zip(self.framed.chunks_exact_mut(fragment_bytes + 4))
        {
            *slot = &mut framed[..fragment_bytes];
        }
        let columns = self.code.columns();
        self.code
            .reconstruct(&mut fragments[..columns], &present[..columns], !parity_too)?;
        Ok(())
    }

    /// Adds every bad column of the current stripe (except `skip`) to `report`.
    fn record_faults(&self, stripe: u64, skip: Option<usize>, report: &mut RepairReport) {
        for (column, state) in self.states.iter().enumerate() {
            if let ColumnState::Bad(fault) = state
                && Some(column) != skip
            {
                report.repaired.push(RepairedFragment {
                    stripe,
                    column,
                    fault: fault.clone(),
                });
            }
        }
    }

    /// Fetches one framed fragment into its slot and records whether it is good.
    fn fetch_column<F>(&mut self, stripe: u64, column: usize, fetch: &mut F)
    where
        F: FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
    {
        let framed_bytes = self.code.framed_fragment_bytes();
        let framed = &mut self.framed[column * framed_bytes..][..framed_bytes];
        self.states[column] = match fetch(column, stripe, framed) {
            Err(FetchError(reason)) => ColumnState::Bad(FragmentFault::Unavailable(reason)),
            Ok(got_bytes) if got_bytes != framed_bytes => ColumnState::Bad(FragmentFault::Short {
                got_bytes,
                expected_bytes: framed_bytes,
            }),
            Ok(_) => check_crc(framed),
        };
    }

    /// Fragment `column` of the loaded stripe (`F` bytes).
    fn fragment(&self, column: usize) -> &[u8] {
        let framed_bytes = self.code.framed_fragment_bytes();
        &self.framed[column * framed_bytes..][..self.code.fragment_bytes()]
    }
}

fn check_crc(framed: &[u8]) -> ColumnState {
    match verify_framed(framed) {
        Ok(()) => ColumnState::Good,
        Err(fault) => ColumnState::Bad(fault),
    }
}

/// Checks a framed fragment (`F` bytes followed by their crc32c, little-endian) against its
/// crc: `Err(FragmentFault::Checksum)` when they differ. For callers that fetch fragments
/// themselves (the store's parallel read path) and fall back to [`StripeDecoder`] on a fault.
pub fn verify_framed(framed: &[u8]) -> Result<(), FragmentFault> {
    assert!(
        framed.len() >= 4,
        "a framed fragment ends with its 4-byte crc"
    );
    let (fragment, crc) = framed.split_at(framed.len() - 4);
    let stored = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
    let computed = crate::checksum::crc32c(fragment);
    if stored == computed {
        Ok(())
    } else {
        Err(FragmentFault::Checksum { stored, computed })
    }
}

/// Streams a whole blob to `sink`, verifying every fragment and, at the end, the BLAKE3
/// content hash (`ContentHashMismatch` after the bytes were written: the caller must discard
/// the output on error).
pub fn decode_blob<F>(
    code: &Code,
    blob_bytes: u64,
    content_hash: [u8; 32],
    fetch: F,
    sink: &mut dyn Write,
) -> Result<RepairReport, DecodeError>
where
    F: FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
{
    let mut hashing = HashingWriter {
        inner: sink,
        hasher: blake3::Hasher::new(),
    };
    let mut decoder = StripeDecoder::new(code, blob_bytes);
    let report = decoder.read_range(0..blob_bytes, fetch, &mut hashing)?;
    let computed = hashing.hasher.finalize();
    if *computed.as_bytes() != content_hash {
        return Err(DecodeError::ContentHashMismatch {
            expected: blake3::Hash::from_bytes(content_hash).to_hex().to_string(),
            computed: computed.to_hex().to_string(),
        });
    }
    Ok(report)
}

struct HashingWriter<'a> {
    inner: &'a mut dyn Write,
    hasher: blake3::Hasher,
}

impl Write for HashingWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(bytes)?;
        self.hasher.update(&bytes[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A fetch closure over in-memory stack files (`stacks[column]`, `None` = lost), for tests
/// and small blobs: it reads like `Disk::read_at`, short at end of file.
pub fn fetch_from_stacks<'a>(
    code: &'a Code,
    stacks: &'a [Option<Vec<u8>>],
) -> impl FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError> + 'a {
    move |column, stripe, buffer| {
        let Some(stack) = stacks.get(column).and_then(Option::as_ref) else {
            return Err(FetchError(format!("column {column} is lost")));
        };
        let offset = usize::try_from(code.fragment_offset(stripe)).unwrap_or(usize::MAX);
        let available = stack.get(offset..).unwrap_or(&[]);
        let read_bytes = available.len().min(buffer.len());
        buffer[..read_bytes].copy_from_slice(&available[..read_bytes]);
        Ok(read_bytes)
    }
}
