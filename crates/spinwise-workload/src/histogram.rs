//! Histograms of file sizes in log2 buckets, the shape fsstats-style surveys publish: the CSV
//! parser ([`Histogram::parse`], a pure function from text to counts with typed errors) and
//! the cell edges a fit compares a model against (format byte by byte in docs/workload.md).
//!
//! Invariants: a parsed histogram covers the buckets `first_bucket_log2..=last_bucket_log2()`
//! contiguously (buckets between listed ones count 0), every bucket is at most
//! [`MAX_BUCKET_LOG2`], at least one count is positive and the counts sum to at most
//! [`MAX_HISTOGRAM_FILES`].

use crate::error::{HistogramError, HistogramProblem};
use std::collections::BTreeMap;

/// The exact header line of a histogram file.
pub const HISTOGRAM_HEADER: &str = "bucket_log2,count";

/// The highest bucket: sizes in [2^62, 2^63) bytes, beyond any file system's largest file.
pub const MAX_BUCKET_LOG2: u32 = 62;

/// The most files a histogram may count: 2^53, so every count and partial sum is exact in the
/// f64 arithmetic of the likelihood (surveys count billions, far below).
pub const MAX_HISTOGRAM_FILES: u64 = 1 << 53;

/// File counts per log2 bucket: bucket b holds the files of size in [2^b, 2^(b+1)) bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    pub first_bucket_log2: u32,
    /// Counts of buckets `first_bucket_log2`, `first_bucket_log2 + 1`, …
    pub counts: Vec<u64>,
}

impl Histogram {
    /// Builds a histogram from counts of contiguous buckets starting at `first_bucket_log2`.
    /// Panics on an empty or all-zero list or a bucket past [`MAX_BUCKET_LOG2`]: callers build
    /// these from known values (tests, generators); files go through [`Histogram::parse`].
    pub fn from_counts(first_bucket_log2: u32, counts: Vec<u64>) -> Histogram {
        assert!(!counts.is_empty(), "a histogram has at least one bucket");
        assert!(
            first_bucket_log2 as usize + counts.len() - 1 <= MAX_BUCKET_LOG2 as usize,
            "buckets past 2^{MAX_BUCKET_LOG2}"
        );
        let total: u128 = counts.iter().map(|&c| u128::from(c)).sum();
        assert!(total > 0, "a histogram counts at least one file");
        assert!(total <= u128::from(MAX_HISTOGRAM_FILES), "too many files");
        Histogram {
            first_bucket_log2,
            counts,
        }
    }

    /// Bins sizes in bytes (each ≥ 1) into the buckets from the smallest to the largest size.
    pub fn from_sizes(sizes_bytes: &[u64]) -> Histogram {
        let mut by_bucket: BTreeMap<u32, u64> = BTreeMap::new();
        for &size_bytes in sizes_bytes {
            assert!(size_bytes >= 1, "a file-size histogram has no empty files");
            *by_bucket.entry(size_bytes.ilog2()).or_default() += 1;
        }
        Self::from_map(&by_bucket)
    }

    fn from_map(by_bucket: &BTreeMap<u32, u64>) -> Histogram {
        let first = *by_bucket.keys().next().expect("at least one bucket");
        let last = *by_bucket.keys().next_back().expect("at least one bucket");
        let counts = (first..=last)
            .map(|b| by_bucket.get(&b).copied().unwrap_or(0))
            .collect();
        Histogram::from_counts(first, counts)
    }

    pub fn last_bucket_log2(&self) -> u32 {
        self.first_bucket_log2 + self.counts.len() as u32 - 1
    }

    pub fn total_files(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Buckets with at least one file.
    pub fn occupied_buckets(&self) -> usize {
        self.counts.iter().filter(|&&c| c > 0).count()
    }

    /// Parses a histogram CSV: the header [`HISTOGRAM_HEADER`], then `bucket_log2,count` lines
    /// in any order. Lines end in `\n` (a `\r` before it is dropped); blank lines and lines
    /// starting with `#` are skipped; fields are trimmed of spaces and tabs.
    pub fn parse(text: &str) -> Result<Histogram, HistogramError> {
        let mut header_seen = false;
        let mut by_bucket: BTreeMap<u32, u64> = BTreeMap::new();
        let mut total: u64 = 0;
        for (index, raw) in text.split('\n').enumerate() {
            let line_number = index + 1;
            let error = |problem| HistogramError {
                line: line_number,
                problem,
            };
            let line = raw
                .strip_suffix('\r')
                .unwrap_or(raw)
                .trim_matches([' ', '\t']);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if !header_seen {
                if line != HISTOGRAM_HEADER {
                    let found = line.chars().take(80).collect();
                    return Err(error(HistogramProblem::Header { found }));
                }
                header_seen = true;
                continue;
            }
            let fields: Vec<&str> = line
                .split(',')
                .map(|f| f.trim_matches([' ', '\t']))
                .collect();
            let [bucket_text, count_text] = fields[..] else {
                return Err(error(HistogramProblem::FieldCount {
                    found: fields.len(),
                }));
            };
            let bucket_log2: u32 = bucket_text
                .parse()
                .ok()
                .filter(|b| *b <= MAX_BUCKET_LOG2)
                .ok_or_else(|| {
                    error(HistogramProblem::Bucket {
                        text: bucket_text.chars().take(40).collect(),
                        max: MAX_BUCKET_LOG2,
                    })
                })?;
            let count: u64 = count_text.parse().map_err(|_| {
                error(HistogramProblem::Count {
                    text: count_text.chars().take(40).collect(),
                })
            })?;
            total = total
                .checked_add(count)
                .filter(|t| *t <= MAX_HISTOGRAM_FILES)
                .ok_or_else(|| {
                    error(HistogramProblem::TooManyFiles {
                        max: MAX_HISTOGRAM_FILES,
                    })
                })?;
            if by_bucket.insert(bucket_log2, count).is_some() {
                return Err(error(HistogramProblem::Repeated { bucket_log2 }));
            }
        }
        let whole = |problem| HistogramError { line: 0, problem };
        if !header_seen {
            return Err(whole(HistogramProblem::Empty));
        }
        if total == 0 {
            return Err(whole(HistogramProblem::NoFiles));
        }
        Ok(Self::from_map(&by_bucket))
    }

    /// The histogram as CSV text that [`Histogram::parse`] reads back to the same value.
    pub fn to_csv(&self) -> String {
        let mut text = format!("{HISTOGRAM_HEADER}\n");
        for (offset, count) in self.counts.iter().enumerate() {
            text.push_str(&format!(
                "{},{count}\n",
                self.first_bucket_log2 + offset as u32
            ));
        }
        text
    }
}
