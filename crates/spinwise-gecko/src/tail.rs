//! The tail cache under a mix of streams, trace-driven (no timing): which reads of data on the
//! tail disk the cache serves. A page is on the tail disk while it is among the last
//! `tail_data_pages` pages the log appended (the tail disk holds what was written since the
//! tail reached it; a sliding window of that size stands for a tail disk that far filled).
//! Data written before the run (the prefilled logical space) is in the body. Reads of the body
//! do not touch the tail cache (Gecko's body cache is not modelled). Until the window has
//! filled only writes are applied; then `warmup_operations` warm the cache unmeasured.
//!
//! Invariant: a run is a function of its [`TailConfig`]; hits + misses = reads of the tail.

use crate::cache::{CacheLevel, TailCache};
use crate::workload::{Stream, Workload};
use crate::{GeckoError, require};

#[derive(Clone, Debug, PartialEq)]
pub struct TailConfig {
    pub workload: Workload,
    /// How much data the tail disk holds: the window of latest appends.
    pub tail_data_pages: u64,
    pub ram_pages: u64,
    pub flash_pages: u64,
    /// Operations measured, after the window has filled and `warmup_operations` more.
    pub operations: u64,
    pub warmup_operations: u64,
    pub seed: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TailReport {
    pub reads: u64,
    pub writes: u64,
    pub tail_reads: u64,
    pub ram_hits: u64,
    pub flash_hits: u64,
}

impl TailReport {
    /// Share of the tail disk's reads the cache served (RAM or flash); 0 without tail reads.
    pub fn hit_rate(&self) -> f64 {
        ratio(self.ram_hits + self.flash_hits, self.tail_reads)
    }

    pub fn ram_hit_rate(&self) -> f64 {
        ratio(self.ram_hits, self.tail_reads)
    }

    /// Share of all reads that went to the tail disk.
    pub fn tail_read_share(&self) -> f64 {
        ratio(self.tail_reads, self.reads)
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Most operations one run may measure.
pub const MAX_OPERATIONS: u64 = 100_000_000;

pub fn simulate_tail(config: &TailConfig) -> Result<TailReport, GeckoError> {
    require(config.tail_data_pages >= 1, || {
        "the tail disk holds no data".into()
    })?;
    require(
        (1..=MAX_OPERATIONS).contains(&config.operations)
            && config.warmup_operations <= MAX_OPERATIONS,
        || format!("operations must be 1 to {MAX_OPERATIONS}"),
    )?;
    require(
        config
            .workload
            .streams
            .iter()
            .any(|s| s.read_fraction < 1.0),
        || "a mix that never writes never fills the tail disk".into(),
    )?;
    let mut stream = Stream::new(&config.workload, config.seed)?;
    let mut cache = TailCache::new(config.ram_pages, config.flash_pages);
    // The append sequence number of each page's latest write; 0: never written in the run.
    let mut written_at = vec![0u64; config.workload.logical_pages() as usize];
    let mut appended = 0u64;
    let mut measured = TailReport {
        reads: 0,
        writes: 0,
        tail_reads: 0,
        ram_hits: 0,
        flash_hits: 0,
    };
    let total = config.warmup_operations + config.operations;
    let mut counted = 0u64;
    while counted < total {
        let op = stream.next_operation();
        // Operations count once the tail disk holds its window; the first ones warm the cache.
        let measuring = appended >= config.tail_data_pages && {
            counted += 1;
            counted > config.warmup_operations
        };
        let slot = &mut written_at[op.page as usize];
        if !op.read {
            appended += 1;
            *slot = appended;
            cache.written(op.page);
            measured.writes += u64::from(measuring);
            continue;
        }
        if appended < config.tail_data_pages {
            continue; // filling the tail disk: only writes matter yet
        }
        measured.reads += u64::from(measuring);
        let on_tail = *slot != 0 && appended - *slot < config.tail_data_pages;
        if !on_tail {
            continue;
        }
        let level = cache.read(op.page);
        if measuring {
            measured.tail_reads += 1;
            match level {
                CacheLevel::Ram => measured.ram_hits += 1,
                CacheLevel::Flash => measured.flash_hits += 1,
                CacheLevel::Miss => {}
            }
        }
    }
    Ok(measured)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::STREAM_KINDS;

    fn config(ram_pages: u64, flash_pages: u64, tail_data_pages: u64) -> TailConfig {
        TailConfig {
            workload: Workload {
                streams: STREAM_KINDS[..4].to_vec(),
            },
            tail_data_pages,
            ram_pages,
            flash_pages,
            operations: 200_000,
            warmup_operations: 20_000,
            seed: 3,
        }
    }

    #[test]
    fn a_bigger_cache_never_serves_fewer_tail_reads_on_the_same_stream() {
        let mut last = -1.0;
        for flash_pages in [0, 1_000, 4_000, 16_000] {
            let report = simulate_tail(&config(500, flash_pages, 50_000)).unwrap();
            assert!(report.hit_rate() >= last, "{flash_pages}: {report:?}");
            last = report.hit_rate();
        }
        assert!(last > 0.3, "{last}");
    }

    #[test]
    fn a_cache_as_large_as_the_tail_disk_serves_every_tail_read() {
        let report = simulate_tail(&config(50_000, 0, 50_000)).unwrap();
        assert!(report.tail_reads > 1000);
        assert_eq!(report.hit_rate(), 1.0, "{report:?}");
    }

    #[test]
    fn no_cache_serves_nothing_and_a_run_is_a_function_of_its_seed() {
        let report = simulate_tail(&config(0, 0, 50_000)).unwrap();
        assert_eq!(report.hit_rate(), 0.0);
        assert_eq!(report, simulate_tail(&config(0, 0, 50_000)).unwrap());
        assert!(simulate_tail(&config(0, 0, 0)).is_err());
    }
}
