//! Workloads: when client requests arrive ([`Arrivals`]: Poisson, a burst, or a replayed trace),
//! how large each blob is ([`BlobSizes`]: fixed or VHD-like), which group a request targets, and
//! the trace CSV parser ([`parse_trace`], a pure function from text to records with typed errors).
//!
//! Invariants: a parsed trace has at most [`MAX_TRACE_RECORDS`] records, in non-decreasing time,
//! each with a non-empty key and a size in `1..=MAX_BLOB_BYTES`; a key maps to the same group on
//! every run and every machine ([`group_of_key`]: FNV-1a 64 of its UTF-8 bytes modulo the group
//! count); a VHD-like size lies in `[VHD_MIN_BYTES, VHD_MAX_BYTES]`. Every random draw comes from
//! the run's one RNG, in a fixed order.

use crate::config::{MAX_BLOB_BYTES, MAX_HOURS};
use crate::report::TraceHash;
use crate::sample::seconds_to_us;
use rand::Rng;
use serde::Serialize;
use spinwise_model::GroupIndex;
use spinwise_model::sample::standard_normal;
use thiserror::Error;

/// Most records a trace may hold: the simulator's [`crate::MAX_REQUESTS`] (memory for latency
/// samples; about a second of loop per million requests).
pub const MAX_TRACE_RECORDS: usize = 5_000_000;

/// Longest key in a trace, in bytes: keys are identifiers, not payloads; the bound keeps a
/// malformed file (a missing newline) from being read as one giant key.
pub const MAX_KEY_BYTES: usize = 1024;

/// Longest line of a trace, in bytes: a key of [`MAX_KEY_BYTES`] plus three short fields fits many
/// times over. Readers stop a line here, so a file without newlines (`/dev/zero`, a binary file
/// passed by mistake) is refused after a few kilobytes instead of being read whole.
pub const MAX_TRACE_LINE_BYTES: usize = 4 * 1024;

/// A burst's requests arrive at independent uniform times over this many seconds (Pelican §4.4:
/// "a burst of b read requests for 1GB blobs uniformly distributed over 60 seconds").
pub const BURST_SPREAD_S: f64 = 60.0;

/// The exact header line of a trace file.
pub const TRACE_HEADER: &str = "time_s,operation,key,size_bytes";

/// VHD-like blob sizes (Pelican §4.1 and Fig. 3(d): VHD images of 200 MB to 9 GB, mean 3.3 GB):
/// a log-normal with median [`VHD_MEDIAN_BYTES`] and shape [`VHD_SIGMA`], truncated to
/// `[VHD_MIN_BYTES, VHD_MAX_BYTES]`. The figure's curve is not published as numbers; the shape
/// σ = 0.75 is an assumption (a right-skewed spread of sizes), and the median was then solved for
/// so the *truncated* mean is 3.300 GB (E = e^(μ+σ²/2) [Φ(β−σ) − Φ(α−σ)] / [Φ(β) − Φ(α)],
/// α, β the standardised log bounds). About 7.5% of untruncated draws fall outside and are redrawn.
pub const VHD_MIN_BYTES: f64 = 200e6;
pub const VHD_MAX_BYTES: f64 = 9e9;
pub const VHD_MEDIAN_BYTES: f64 = 3.05e9;
pub const VHD_SIGMA: f64 = 0.75;
/// The truncated mean the parameters give (the test samples it).
pub const VHD_MEAN_BYTES: f64 = 3.3e9;

/// Rejected draws before a VHD size falls back to clamping. Each draw is accepted with
/// probability 0.925, so 64 rejections in a row (< 10^-72) never happen; the bound only keeps
/// the loop finite.
const MAX_VHD_REJECTIONS: u32 = 64;

/// When client requests arrive.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// A Poisson process at the configuration's `rate_per_s` until `hours`, each request for a
    /// uniformly random group (uniform over stored blobs when every group stores as many).
    #[default]
    Poisson,
    /// `requests` reads at independent uniform times in `[0, 60 s)`, uniform over groups; the
    /// run then drains. The measured window is the whole run (see `SimConfig::window_us`).
    Burst { requests: u64 },
    /// Replays these records (times from the run's start); records at or after `hours` are not
    /// replayed. Each targets [`group_of_key`] of its key and reads its `size_bytes`.
    Trace(Vec<TraceRecord>),
}

/// How many bytes a Poisson or burst request reads (trace records carry their own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlobSizes {
    /// Every request reads the configuration's `blob_bytes`.
    #[default]
    Fixed,
    /// Each request draws a VHD-like size (see [`VHD_MEDIAN_BYTES`]); `blob_bytes` is unused.
    VhdLike,
}

/// What a trace record asks. The scheduler treats both alike: a write of a blob occupies its
/// group's disks like a read of the same size (k data fragments streamed, Pelican's writes are
/// absorbed by other tiers and land in bulk), so a `write` becomes a client request of that size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Read,
    Write,
}

/// One line of a trace file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceRecord {
    /// Arrival time from the start of the run, in whole µs (the file's seconds, rounded).
    pub time_us: u64,
    pub operation: Operation,
    pub key: String,
    pub size_bytes: u64,
}

/// What is wrong with one field of one line.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TraceProblem {
    #[error("the file is empty; it must start with the header `{TRACE_HEADER}`")]
    Empty,
    #[error("the header must be exactly `{TRACE_HEADER}`, found `{found}`")]
    Header { found: String },
    #[error("expected 4 comma-separated fields, found {found}")]
    FieldCount { found: usize },
    #[error("`{text}` is not a number")]
    NotANumber { text: String },
    #[error("{value} is outside {expected}")]
    OutOfRange { value: String, expected: String },
    #[error("`{text}` is neither `read` nor `write`")]
    Operation { text: String },
    #[error("the key is empty")]
    EmptyKey,
    #[error("the key is {bytes} bytes long, more than {MAX_KEY_BYTES}")]
    LongKey { bytes: usize },
    #[error(
        "time {time_s} s is before the previous record's {previous_s} s (records must be in time order)"
    )]
    TimeWentBack { time_s: String, previous_s: String },
    #[error("more than {MAX_TRACE_RECORDS} records")]
    TooManyRecords,
    #[error("the line is longer than {MAX_TRACE_LINE_BYTES} bytes")]
    LongLine,
    #[error("the line is not UTF-8 (byte {offset})")]
    NotUtf8 { offset: usize },
    #[error("reading failed: {message}")]
    Read { message: String },
}

/// A refused trace: the 1-based line, the field (`header`, `time_s`, `operation`, `key`,
/// `size_bytes`, or `line` for the line as a whole) and the problem.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("line {line}, {field}: {problem}")]
pub struct TraceError {
    pub line: usize,
    pub field: &'static str,
    pub problem: TraceProblem,
}

/// Parses a trace CSV (format in docs/simulator.md): the header line [`TRACE_HEADER`], then one
/// record per line. Lines end in `\n` (a `\r` before it is dropped); blank lines are skipped;
/// fields are split at every comma (no quoting: a key cannot contain a comma) and trimmed of
/// spaces and tabs.
pub fn parse_trace(text: &str) -> Result<Vec<TraceRecord>, TraceError> {
    read_trace(text.as_bytes())
}

/// [`parse_trace`] over a reader, a line at a time: memory is the records plus one line of at
/// most [`MAX_TRACE_LINE_BYTES`], whatever the source holds (a file, a pipe, a device).
pub fn read_trace(mut reader: impl std::io::BufRead) -> Result<Vec<TraceRecord>, TraceError> {
    use std::io::BufRead as _;
    let mut parser = TraceParser::default();
    let mut buffer = Vec::new();
    for number in 1.. {
        let error = |problem| TraceError {
            line: number,
            field: "line",
            problem,
        };
        buffer.clear();
        let read = std::io::Read::take(&mut reader, MAX_TRACE_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buffer)
            .map_err(|e| {
                error(TraceProblem::Read {
                    message: e.to_string(),
                })
            })?;
        if read == 0 {
            break;
        }
        if buffer.last() == Some(&b'\n') {
            buffer.pop();
        }
        if buffer.len() > MAX_TRACE_LINE_BYTES {
            return Err(error(TraceProblem::LongLine));
        }
        if buffer.last() == Some(&b'\r') {
            buffer.pop();
        }
        let line = std::str::from_utf8(&buffer).map_err(|e| {
            error(TraceProblem::NotUtf8 {
                offset: e.valid_up_to(),
            })
        })?;
        parser.line(number, line)?;
    }
    parser.finish()
}

/// The records read so far and what the next line is checked against.
#[derive(Default)]
struct TraceParser {
    header_seen: bool,
    records: Vec<TraceRecord>,
    previous_s: f64,
}

impl TraceParser {
    fn line(&mut self, number: usize, line: &str) -> Result<(), TraceError> {
        let error = |field, problem| TraceError {
            line: number,
            field,
            problem,
        };
        if !self.header_seen {
            // Blank lines are skipped before the header too, as everywhere else in the file
            // (until 2026-12-01 a blank first line read "the file is empty").
            if line.trim().is_empty() {
                return Ok(());
            }
            if line.trim() != TRACE_HEADER {
                let found = line.chars().take(80).collect();
                return Err(error("header", TraceProblem::Header { found }));
            }
            self.header_seen = true;
            return Ok(());
        }
        if line.trim().is_empty() {
            return Ok(());
        }
        if self.records.len() == MAX_TRACE_RECORDS {
            return Err(error("line", TraceProblem::TooManyRecords));
        }
        let (record, time_s) = parse_record(line, self.previous_s)
            .map_err(|(field, problem)| error(field, problem))?;
        self.previous_s = time_s;
        self.records.push(record);
        Ok(())
    }

    fn finish(self) -> Result<Vec<TraceRecord>, TraceError> {
        if !self.header_seen {
            return Err(TraceError {
                line: 1,
                field: "header",
                problem: TraceProblem::Empty,
            });
        }
        Ok(self.records)
    }
}

type FieldError = (&'static str, TraceProblem);

/// One record line; returns it with its time in seconds (for the next line's order check).
fn parse_record(line: &str, previous_s: f64) -> Result<(TraceRecord, f64), FieldError> {
    let fields: Vec<&str> = line
        .split(',')
        .map(|f| f.trim_matches([' ', '\t']))
        .collect();
    let [time, operation, key, size] = fields[..] else {
        return Err((
            "line",
            TraceProblem::FieldCount {
                found: fields.len(),
            },
        ));
    };
    let time_s = parse_time_s(time, previous_s)?;
    let operation = match operation {
        "read" => Operation::Read,
        "write" => Operation::Write,
        text => {
            return Err(("operation", TraceProblem::Operation { text: text.into() }));
        }
    };
    if key.is_empty() {
        return Err(("key", TraceProblem::EmptyKey));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(("key", TraceProblem::LongKey { bytes: key.len() }));
    }
    let size_bytes = parse_size_bytes(size)?;
    let record = TraceRecord {
        time_us: seconds_to_us(time_s),
        operation,
        key: key.into(),
        size_bytes,
    };
    Ok((record, time_s))
}

fn parse_time_s(text: &str, previous_s: f64) -> Result<f64, FieldError> {
    let time_s: f64 = text
        .parse()
        .map_err(|_| ("time_s", TraceProblem::NotANumber { text: text.into() }))?;
    let max_s = MAX_HOURS * 3600.0;
    // Written as "not (in range)" so NaN is refused too.
    if !(time_s.is_finite() && (0.0..=max_s).contains(&time_s)) {
        return Err((
            "time_s",
            TraceProblem::OutOfRange {
                value: text.into(),
                expected: format!("[0, {max_s}] s"),
            },
        ));
    }
    if time_s < previous_s {
        return Err((
            "time_s",
            TraceProblem::TimeWentBack {
                time_s: text.into(),
                previous_s: previous_s.to_string(),
            },
        ));
    }
    Ok(time_s)
}

fn parse_size_bytes(text: &str) -> Result<u64, FieldError> {
    let size_bytes: u64 = text
        .parse()
        .map_err(|_| ("size_bytes", TraceProblem::NotANumber { text: text.into() }))?;
    if !(1..=MAX_BLOB_BYTES).contains(&size_bytes) {
        return Err((
            "size_bytes",
            TraceProblem::OutOfRange {
                value: text.into(),
                expected: format!("1..={MAX_BLOB_BYTES} bytes"),
            },
        ));
    }
    Ok(size_bytes)
}

/// The group a key's blob is stored in: FNV-1a 64 of the key's UTF-8 bytes, modulo `groups`.
/// Stable across runs, platforms and versions (the store replays the same traces).
///
/// Panics if `groups` is 0 (a layout always has a group).
pub fn group_of_key(key: &str, groups: u32) -> GroupIndex {
    assert!(groups > 0, "a layout has at least one group");
    let mut hash = TraceHash::new();
    hash.write(key.as_bytes());
    (hash.finish() % u64::from(groups)) as GroupIndex
}

/// One VHD-like blob size in bytes (see [`VHD_MEDIAN_BYTES`]), by rejection from the log-normal.
pub fn vhd_blob_bytes(rng: &mut impl Rng) -> u64 {
    let mu = VHD_MEDIAN_BYTES.ln();
    let mut bytes = VHD_MEDIAN_BYTES;
    for _ in 0..MAX_VHD_REJECTIONS {
        bytes = (mu + VHD_SIGMA * standard_normal(rng)).exp();
        if (VHD_MIN_BYTES..=VHD_MAX_BYTES).contains(&bytes) {
            break;
        }
    }
    bytes.clamp(VHD_MIN_BYTES, VHD_MAX_BYTES).round() as u64
}

/// A burst's `requests` arrival times in µs: independent uniform draws over [`BURST_SPREAD_S`],
/// sorted (the order statistics of the uniform sample).
pub fn burst_times_us(requests: u64, rng: &mut impl Rng) -> Vec<u64> {
    let spread_us = seconds_to_us(BURST_SPREAD_S);
    let mut times: Vec<u64> = (0..requests)
        .map(|_| rng.random_range(0..spread_us))
        .collect();
    times.sort_unstable();
    times
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn vhd_like_sizes_stay_in_200_mb_to_9_gb_with_a_mean_of_3_3_gb() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
        let n = 200_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let bytes = vhd_blob_bytes(&mut rng) as f64;
            assert!((VHD_MIN_BYTES..=VHD_MAX_BYTES).contains(&bytes), "{bytes}");
            sum += bytes;
        }
        let mean = sum / f64::from(n);
        assert!(
            (mean - VHD_MEAN_BYTES).abs() <= 0.02 * VHD_MEAN_BYTES,
            "sampled mean {mean}"
        );
    }

    #[test]
    fn a_burst_spreads_its_requests_sorted_over_sixty_seconds() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let times = burst_times_us(1920, &mut rng);
        assert_eq!(times.len(), 1920);
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        assert!(*times.last().unwrap() < 60_000_000);
        // Uniform: about half in the first 30 s (binomial sd ≈ 22).
        let early = times.iter().filter(|t| **t < 30_000_000).count();
        assert!((860..1060).contains(&early), "{early}");
    }

    #[test]
    fn keys_map_to_groups_by_fnv_1a_modulo_the_group_count() {
        // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c.
        assert_eq!(
            u64::from(group_of_key("a", 1000)),
            0xaf63_dc4c_8601_ec8c % 1000
        );
        assert_eq!(group_of_key("blob-17", 48), group_of_key("blob-17", 48));
        let spread: std::collections::BTreeSet<_> = (0..1000)
            .map(|i| group_of_key(&format!("blob-{i}"), 48))
            .collect();
        assert_eq!(spread.len(), 48, "a thousand keys reach every group");
    }

    #[test]
    fn a_well_formed_trace_parses_field_by_field() {
        let text =
            "time_s,operation,key,size_bytes\r\n0,read,a,1000000000\n\n 1.5 , write ,blob/b, 42\n";
        let records = parse_trace(text).unwrap();
        assert_eq!(
            records,
            vec![
                TraceRecord {
                    time_us: 0,
                    operation: Operation::Read,
                    key: "a".into(),
                    size_bytes: 1_000_000_000
                },
                TraceRecord {
                    time_us: 1_500_000,
                    operation: Operation::Write,
                    key: "blob/b".into(),
                    size_bytes: 42
                },
            ]
        );
        assert_eq!(parse_trace(TRACE_HEADER).unwrap(), vec![]);
    }

    #[test]
    fn a_bad_trace_is_refused_with_its_line_field_and_problem() {
        let refused = |body: &str| parse_trace(&format!("{TRACE_HEADER}\n{body}")).unwrap_err();
        let cases: [(&str, usize, &str); 10] = [
            ("0,read,a", 2, "line"),
            ("0,read,a,1,extra", 2, "line"),
            ("soon,read,a,1", 2, "time_s"),
            ("-1,read,a,1", 2, "time_s"),
            ("NaN,read,a,1", 2, "time_s"),
            ("0,delete,a,1", 2, "operation"),
            ("0,read,,1", 2, "key"),
            ("0,read,a,0", 2, "size_bytes"),
            ("0,read,a,1.5", 2, "size_bytes"),
            ("5,read,a,1\n4,read,b,1", 3, "time_s"),
        ];
        for (body, line, field) in cases {
            let error = refused(body);
            assert_eq!((error.line, error.field), (line, field), "{body}: {error}");
        }
        assert!(matches!(
            refused("5,read,a,1\n4,read,b,1").problem,
            TraceProblem::TimeWentBack { .. }
        ));
        let huge = format!("0,read,a,{}", MAX_BLOB_BYTES + 1);
        assert!(matches!(
            refused(&huge).problem,
            TraceProblem::OutOfRange { .. }
        ));
        let long_key = format!("0,read,{},1", "k".repeat(MAX_KEY_BYTES + 1));
        assert!(matches!(
            refused(&long_key).problem,
            TraceProblem::LongKey { .. }
        ));
        assert_eq!(parse_trace("").unwrap_err().problem, TraceProblem::Empty);
        assert_eq!(
            parse_trace("\n \r\n\n").unwrap_err().problem,
            TraceProblem::Empty
        );
        let leading_blank = format!("\n\n{TRACE_HEADER}\n0,read,a,100\n\n1,read,b,xx\n");
        let refused = parse_trace(&leading_blank).unwrap_err();
        assert_eq!((refused.line, refused.field), (6, "size_bytes"));
        let fixed = leading_blank.replace("xx", "7");
        assert_eq!(parse_trace(&fixed).unwrap().len(), 2);
        assert!(matches!(
            parse_trace("time,op,key,size\n").unwrap_err().problem,
            TraceProblem::Header { .. }
        ));
    }
}
