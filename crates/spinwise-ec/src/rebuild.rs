//! `StackRebuilder`: an `io::Read` producing a lost column's whole stripe-stack file (header,
//! then every stripe's reconstructed framed fragment), to hand to `Disk::write_file` with
//! the length `Code::stack_file_bytes`.
//!
//! Invariants: memory is one stripe; the bytes produced are exactly the file the original
//! encoder wrote (same header, same fragments, same crcs); a stripe that cannot be rebuilt
//! ends the read with an error (the `DecodeError` is kept for the caller), so the atomic
//! write never completes with wrong bytes.

use std::io::{self, Read};

use crate::code::Code;
use crate::decoder::{DecodeError, FetchError, RepairReport, StripeDecoder};
use crate::header::StackHeader;

/// Reads as the stack file of `header.column`, rebuilt from the other columns.
pub struct StackRebuilder<'c, F> {
    decoder: StripeDecoder<'c>,
    fetch: F,
    column: usize,
    framed_bytes: usize,
    stripes: u64,
    next_stripe: u64,
    /// Bytes ready to be read (the header, then one framed fragment at a time).
    pending: Vec<u8>,
    pending_offset: usize,
    report: RepairReport,
    failure: Option<DecodeError>,
}

impl<'c, F> StackRebuilder<'c, F>
where
    F: FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
{
    /// Rebuilds the file whose header is `header` (from the catalog or a surviving column,
    /// with `column` set to the lost one). Panics if `code` is not the header's code (build it
    /// with `header.code()`).
    pub fn new(code: &'c Code, header: StackHeader, fetch: F) -> StackRebuilder<'c, F> {
        assert_eq!(usize::from(header.data_columns), code.data_columns());
        assert_eq!(usize::from(header.parity_columns), code.parity_columns());
        assert_eq!(header.fragment_bytes as usize, code.fragment_bytes());
        let mut pending = Vec::with_capacity(code.framed_fragment_bytes());
        pending.extend_from_slice(&header.encode());
        StackRebuilder {
            decoder: StripeDecoder::new(code, header.blob_bytes),
            fetch,
            column: usize::from(header.column),
            framed_bytes: code.framed_fragment_bytes(),
            stripes: header.stripe_count,
            next_stripe: 0,
            pending,
            pending_offset: 0,
            report: RepairReport::default(),
            failure: None,
        }
    }

    /// Bad fragments met on the other columns so far.
    pub fn report(&self) -> &RepairReport {
        &self.report
    }

    /// Why the read failed, if it did.
    pub fn take_failure(&mut self) -> Option<DecodeError> {
        self.failure.take()
    }

    fn refill(&mut self) -> Result<(), DecodeError> {
        self.pending.clear();
        self.pending.resize(self.framed_bytes, 0);
        self.pending_offset = 0;
        let report = self.decoder.rebuild_fragment(
            self.next_stripe,
            self.column,
            &mut self.fetch,
            &mut self.pending,
        )?;
        self.report.merge(report);
        self.next_stripe += 1;
        Ok(())
    }
}

impl<F> Read for StackRebuilder<'_, F>
where
    F: FnMut(usize, u64, &mut [u8]) -> Result<usize, FetchError>,
{
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if self.failure.is_some() {
            return Err(io::Error::other("stripe-stack rebuild already failed"));
        }
        if self.pending_offset == self.pending.len() {
            if self.next_stripe == self.stripes {
                return Ok(0);
            }
            if let Err(error) = self.refill() {
                let message = error.to_string();
                self.failure = Some(error);
                return Err(io::Error::other(message));
            }
        }
        let available = &self.pending[self.pending_offset..];
        let copied = available.len().min(buffer.len());
        buffer[..copied].copy_from_slice(&available[..copied]);
        self.pending_offset += copied;
        Ok(copied)
    }
}
