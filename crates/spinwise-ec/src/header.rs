//! `StackHeader`: the 84-byte header of a stripe-stack file, version 1 (docs/stripe-format.md),
//! and its typed decoding errors.
//!
//! Invariants: `encode` writes exactly the bytes the format document specifies (little-endian,
//! crc32c of bytes 0..80 last); `decode` accepts a header only if every rule of version 1
//! holds, so a decoded header always describes a valid code shape and a consistent stripe count.

use crate::code::{Code, MAX_COLUMNS, MAX_FRAGMENT_BYTES};

/// `SPWSTRIP`.
pub const MAGIC: [u8; 8] = *b"SPWSTRIP";
/// The only format version this crate reads and writes.
pub const FORMAT_VERSION: u16 = 1;
/// Header length in version 1 (also the offset of stripe 0's fragment).
pub const HEADER_BYTES: usize = 84;
/// Bytes covered by the header crc.
const CHECKED_BYTES: usize = 80;

/// Why bytes are not a valid version-1 stripe-stack header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("stripe-stack header needs {HEADER_BYTES} B, got {got_bytes} B")]
    TooShort { got_bytes: usize },
    #[error("not a stripe-stack file (bad magic)")]
    BadMagic,
    #[error("unsupported stripe-stack format version {version} (this reader knows 1)")]
    UnsupportedVersion { version: u16 },
    #[error("header length {header_bytes} B, version 1 requires {HEADER_BYTES} B")]
    BadHeaderLength { header_bytes: u16 },
    #[error("header checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    HeaderChecksum { stored: u32, computed: u32 },
    #[error("reserved header field is {value}, must be 0")]
    Reserved { value: u16 },
    #[error("inconsistent header: {0}")]
    Inconsistent(String),
}

/// The header of one column's stripe-stack file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackHeader {
    pub column: u16,
    pub data_columns: u16,
    pub parity_columns: u16,
    pub fragment_bytes: u32,
    pub blob_id: u64,
    pub blob_bytes: u64,
    pub stripe_count: u64,
    /// BLAKE3 of the blob's `blob_bytes` bytes.
    pub content_hash: [u8; 32],
}

impl StackHeader {
    /// The header of `column` for a blob coded with `code`. Panics if `column ≥ k + r` (the
    /// caller iterates its own code's columns).
    pub fn new(
        code: &Code,
        column: usize,
        blob_id: u64,
        blob_bytes: u64,
        content_hash: [u8; 32],
    ) -> StackHeader {
        assert!(column < code.columns(), "column {column} outside {code:?}");
        // Code::new bounds k + r by 255 and F by 64 MiB, so these narrowings are exact.
        StackHeader {
            column: column as u16,
            data_columns: code.data_columns() as u16,
            parity_columns: code.parity_columns() as u16,
            fragment_bytes: code.fragment_bytes() as u32,
            blob_id,
            blob_bytes,
            stripe_count: code.stripes_for(blob_bytes),
            content_hash,
        }
    }

    /// The 84 header bytes.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut bytes = [0u8; HEADER_BYTES];
        bytes[0..8].copy_from_slice(&MAGIC);
        bytes[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes[10..12].copy_from_slice(&(HEADER_BYTES as u16).to_le_bytes());
        bytes[12..14].copy_from_slice(&self.column.to_le_bytes());
        bytes[14..16].copy_from_slice(&self.data_columns.to_le_bytes());
        bytes[16..18].copy_from_slice(&self.parity_columns.to_le_bytes());
        // 18..20 reserved, zero.
        bytes[20..24].copy_from_slice(&self.fragment_bytes.to_le_bytes());
        bytes[24..32].copy_from_slice(&self.blob_id.to_le_bytes());
        bytes[32..40].copy_from_slice(&self.blob_bytes.to_le_bytes());
        bytes[40..48].copy_from_slice(&self.stripe_count.to_le_bytes());
        bytes[48..80].copy_from_slice(&self.content_hash);
        let crc = crate::checksum::crc32c(&bytes[..CHECKED_BYTES]);
        bytes[80..84].copy_from_slice(&crc.to_le_bytes());
        bytes
    }

    /// Parses and checks a header from the first bytes of a stack file (extra bytes ignored).
    pub fn decode(bytes: &[u8]) -> Result<StackHeader, FormatError> {
        if bytes.len() < 12 {
            return Err(FormatError::TooShort {
                got_bytes: bytes.len(),
            });
        }
        if bytes[0..8] != MAGIC {
            return Err(FormatError::BadMagic);
        }
        let version = read_u16(bytes, 8);
        if version != FORMAT_VERSION {
            return Err(FormatError::UnsupportedVersion { version });
        }
        let header_bytes = read_u16(bytes, 10);
        if usize::from(header_bytes) != HEADER_BYTES {
            return Err(FormatError::BadHeaderLength { header_bytes });
        }
        if bytes.len() < HEADER_BYTES {
            return Err(FormatError::TooShort {
                got_bytes: bytes.len(),
            });
        }
        let stored = read_u32(bytes, 80);
        let computed = crate::checksum::crc32c(&bytes[..CHECKED_BYTES]);
        if stored != computed {
            return Err(FormatError::HeaderChecksum { stored, computed });
        }
        let reserved = read_u16(bytes, 18);
        if reserved != 0 {
            return Err(FormatError::Reserved { value: reserved });
        }
        let header = StackHeader {
            column: read_u16(bytes, 12),
            data_columns: read_u16(bytes, 14),
            parity_columns: read_u16(bytes, 16),
            fragment_bytes: read_u32(bytes, 20),
            blob_id: read_u64(bytes, 24),
            blob_bytes: read_u64(bytes, 32),
            stripe_count: read_u64(bytes, 40),
            content_hash: bytes[48..80].try_into().expect("32-byte slice"),
        };
        header.check_consistent()?;
        Ok(header)
    }

    /// The code this header describes.
    pub fn code(&self) -> Result<Code, FormatError> {
        Code::new(
            usize::from(self.data_columns),
            usize::from(self.parity_columns),
            self.fragment_bytes as usize,
        )
        .map_err(|error| FormatError::Inconsistent(error.to_string()))
    }

    /// The length the whole stack file must have.
    pub fn stack_file_bytes(&self) -> u64 {
        HEADER_BYTES as u64 + self.stripe_count * (u64::from(self.fragment_bytes) + 4)
    }

    fn check_consistent(&self) -> Result<(), FormatError> {
        let columns = usize::from(self.data_columns) + usize::from(self.parity_columns);
        let problem = if self.data_columns == 0 {
            Some("k is 0".to_string())
        } else if columns > MAX_COLUMNS {
            Some(format!("k + r = {columns} exceeds {MAX_COLUMNS}"))
        } else if usize::from(self.column) >= columns {
            Some(format!("column {} outside k + r = {columns}", self.column))
        } else if self.fragment_bytes == 0 || self.fragment_bytes as usize > MAX_FRAGMENT_BYTES {
            Some(format!("fragment size {} B", self.fragment_bytes))
        } else {
            let stripe_bytes = u64::from(self.data_columns) * u64::from(self.fragment_bytes);
            let stripes = self.blob_bytes.div_ceil(stripe_bytes);
            (stripes != self.stripe_count).then(|| {
                format!(
                    "stripe count {} but {} B in {stripe_bytes} B stripes needs {stripes}",
                    self.stripe_count, self.blob_bytes
                )
            })
        };
        match problem {
            Some(reason) => Err(FormatError::Inconsistent(reason)),
            None => Ok(()),
        }
    }
}

fn read_u16(bytes: &[u8], offset: usize) -> u16 {
    u16::from_le_bytes(bytes[offset..offset + 2].try_into().expect("2 bytes"))
}

fn read_u32(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes"))
}

fn read_u64(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("8 bytes"))
}
