//! The disks on a simulated clock (discrete events: a request's completion). Each disk serves
//! its queue in arrival order, one request at a time, paying a positioning whenever a request
//! does not continue the last ([`crate::disk`]); so two streams on one disk cost seeks and a
//! stream alone does not. Three kinds of actor issue requests, each closed-loop with a bounded
//! number outstanding:
//! - the writer: appends `request_pages` pages at a time (random 4-KiB pages, or random
//!   aligned extents in the mixed load) for as long as the log gives it room;
//! - readers (mixed load): each reads one random aligned extent at a time, wherever the map
//!   puts its pages;
//! - the collector: while the log wants collection it reads the head segment (and one segment
//!   ahead) in `request_pages` pieces, then relocates the head's live pages a piece at a time
//!   (the log's books move when a write is issued, so appends reach the disk in address
//!   order), then frees the segment.
//!
//! Throughput is counted per one-second interval at completion: application bytes (client
//! writes and reads) and the collector's bytes (reads of the head, live pages written);
//! aggregate is their sum. A compaction's sweep over live pages it leaves alone costs disk time
//! but is not counted as bytes moved.
//!
//! Invariant: a run is a function of its [`SimConfig`]; the log's invariants hold at its end
//! (checked after every run).

use crate::cache::{CacheLevel, TailCache};
use crate::disk::{Disk, DiskParams, PAGE_BYTES};
use crate::log::{Extent, Log, LogConfig};
use crate::{GeckoError, require};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// The longest run one simulation may cover, in simulated seconds.
pub const MAX_DURATION_S: f64 = 3600.0;
/// The most readers a mixed load may have.
pub const MAX_READERS: u32 = 10_000;

/// What the clients do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientLoad {
    /// One writer of random 4-KiB pages, as fast as the log takes them (the slides'
    /// write-only synthetic workload).
    WriteOnly,
    /// One writer of aligned extents and `readers` readers of aligned extents (extents of
    /// `request_pages`), both skewed: [`HOT_ACCESS_SHARE`] of accesses go to the first
    /// [`HOT_EXTENT_SHARE`] of the extents, so hot data is rewritten and reread.
    Mixed { readers: u32 },
}

/// The mixed load's skew (our choice: a 90/10 hot/cold split, a common rule of thumb).
pub const HOT_EXTENT_SHARE: f64 = 0.1;
pub const HOT_ACCESS_SHARE: f64 = 0.9;

/// A tail cache's size: RAM and flash pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSize {
    pub ram_pages: u64,
    pub flash_pages: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimConfig {
    pub disk: DiskParams,
    pub log: LogConfig,
    pub load: ClientLoad,
    /// Pages per disk request: the writer's append, the collector's read piece, a read extent.
    pub request_pages: u64,
    /// Requests the writer, and the collector, each keep outstanding.
    pub queue_depth: u32,
    pub duration_s: f64,
    /// Random overwrites before the run, in multiples of the logical space, with cleaning
    /// taking no time (spreads the data over the log as a long-running store would have it).
    pub aging_passes: f64,
    /// A tail cache over the reads of pages on the tail disk (RAID-0: every read, the tail
    /// spanning every disk); a hit costs no disk time, and the reader goes on to its next read.
    pub tail_cache: Option<CacheSize>,
    pub seed: u64,
}

impl SimConfig {
    /// 128-KiB requests, two outstanding per disk for each actor, no aging.
    pub fn new(log: LogConfig, load: ClientLoad, duration_s: f64, seed: u64) -> SimConfig {
        SimConfig {
            disk: DiskParams::WD_10K,
            log,
            load,
            request_pages: crate::log::STRIPE_PAGES,
            queue_depth: 2 * log.disks,
            duration_s,
            aging_passes: 0.0,
            tail_cache: None,
            seed,
        }
    }

    fn validate(&self) -> Result<(), GeckoError> {
        self.disk.validate()?;
        self.log.validate()?;
        require(
            self.duration_s.is_finite()
                && self.duration_s > 0.0
                && self.duration_s <= MAX_DURATION_S,
            || {
                format!(
                    "duration must be in (0, {MAX_DURATION_S}] s, got {}",
                    self.duration_s
                )
            },
        )?;
        require(self.request_pages >= 1 && self.queue_depth >= 1, || {
            "requests need a page and actors a queue depth of at least 1".into()
        })?;
        require(
            self.log.logical_pages.is_multiple_of(self.request_pages),
            || {
                format!(
                    "the logical space ({} pages) must be whole requests of {}",
                    self.log.logical_pages, self.request_pages
                )
            },
        )?;
        if let ClientLoad::Mixed { readers } = self.load {
            require(readers <= MAX_READERS, || {
                format!("at most {MAX_READERS} readers, got {readers}")
            })?;
        }
        require(
            self.aging_passes.is_finite() && (0.0..=100.0).contains(&self.aging_passes),
            || format!("aging passes must be 0 to 100, got {}", self.aging_passes),
        )
    }
}

/// Bytes completed in one second of simulated time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Interval {
    pub app_write_bytes: u64,
    pub app_read_bytes: u64,
    pub gc_read_bytes: u64,
    pub gc_write_bytes: u64,
}

impl Interval {
    pub fn app_mb_per_s(&self) -> f64 {
        (self.app_write_bytes + self.app_read_bytes) as f64 / 1e6
    }

    pub fn gc_mb_per_s(&self) -> f64 {
        (self.gc_read_bytes + self.gc_write_bytes) as f64 / 1e6
    }

    pub fn aggregate_mb_per_s(&self) -> f64 {
        self.app_mb_per_s() + self.gc_mb_per_s()
    }

    pub fn collecting(&self) -> bool {
        self.gc_read_bytes + self.gc_write_bytes > 0
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SimReport {
    pub intervals: Vec<Interval>,
    pub segments_cleaned: u64,
    pub pages_moved: u64,
    /// Compact-in-body pages that found no body slot and went to the tail.
    pub body_fallback_pages: u64,
    /// Requests that paid a positioning, on any disk.
    pub positionings: u64,
    /// Requests served on the disk holding the tail that paid a positioning.
    pub tail_disk_positionings: u64,
    /// Times the tail moved to another disk (in RAID-0, every stripe unit).
    pub tail_disk_changes: u64,
    /// Collector reads, and client reads, served on the disk holding the tail.
    pub gc_reads_on_tail_disk: u64,
    pub app_reads_on_tail_disk: u64,
    /// Simulated seconds the writer had nothing outstanding (waiting for room).
    pub writer_idle_s: f64,
    /// Client read requests a disk started serving (the cache's misses).
    pub app_read_requests: u64,
    /// Client page reads, and those the tail cache served (RAM, flash).
    pub pages_read: u64,
    pub ram_hits: u64,
    pub flash_hits: u64,
}

impl SimReport {
    /// Mean of `metric` over the intervals the collector worked in (`None`: it never did).
    pub fn mean_while_collecting(&self, metric: fn(&Interval) -> f64) -> Option<f64> {
        mean(self.intervals.iter().filter(|i| i.collecting()).map(metric))
    }

    /// Mean of `metric` over the leading intervals before the collector first worked.
    pub fn mean_before_collecting(&self, metric: fn(&Interval) -> f64) -> Option<f64> {
        mean(
            self.intervals
                .iter()
                .take_while(|i| !i.collecting())
                .map(metric),
        )
    }

    /// Mean of `metric` over every interval.
    pub fn mean_overall(&self, metric: fn(&Interval) -> f64) -> f64 {
        mean(self.intervals.iter().map(metric)).unwrap_or(0.0)
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (count > 0).then(|| sum / count as f64)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    Writer,
    Reader(usize),
    /// A read of the collector's `serial`-th segment.
    GcRead(u64),
    GcWrite,
}

#[derive(Clone, Copy, Debug)]
struct Request {
    extent: Extent,
    owner: Owner,
    read: bool,
}

/// The collector's pipeline: segments being read (front: the head's), and the head's live
/// pages being moved.
#[derive(Default)]
struct Collector {
    /// (serial, reads not yet completed) per segment started, from the head.
    reading: VecDeque<(u64, u64)>,
    planned: VecDeque<Request>,
    next_serial: u64,
    reads_outstanding: u32,
    writes_outstanding: u32,
    to_move: Option<VecDeque<u64>>,
}

/// Segments the collector reads ahead of the one it relocates.
const READ_AHEAD_SEGMENTS: u64 = 1;

struct Sim {
    config: SimConfig,
    log: Log,
    disks: Vec<Disk>,
    queues: Vec<VecDeque<Request>>,
    in_service: Vec<Option<(f64, Request)>>,
    rng: ChaCha8Rng,
    writer_outstanding: u32,
    /// Per reader, reads of its extent not yet completed (0: idle).
    readers: Vec<u64>,
    collector: Collector,
    report: SimReport,
    tail_disk: u32,
    cache: Option<TailCache>,
}

pub fn simulate(config: &SimConfig) -> Result<SimReport, GeckoError> {
    config.validate()?;
    let mut sim = Sim::new(config)?;
    sim.run();
    let check = sim.log.check();
    assert!(check.is_ok(), "the log's books after a run: {check:?}");
    sim.report.body_fallback_pages = sim.log.body_fallback_pages;
    sim.report.positionings = sim.disks.iter().map(|d| d.positionings).sum();
    Ok(sim.report)
}

impl Sim {
    fn new(config: &SimConfig) -> Result<Sim, GeckoError> {
        let mut log = Log::new(config.log)?;
        let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
        let logical = config.log.logical_pages;
        let prefill: Vec<u64> = (0..logical).collect();
        log.append(&prefill, false)
            .expect("validation leaves room for the logical space");
        let overwrites = (config.aging_passes * logical as f64) as u64 / config.request_pages;
        for _ in 0..overwrites {
            while log.wants_collection() {
                log.clean_head_now();
            }
            let pages = client_pages(config, &mut rng);
            log.append(&pages, false)
                .expect("cleaning at once keeps room for clients");
        }
        let disks = config.log.disks as usize;
        let readers = match config.load {
            ClientLoad::WriteOnly => 0,
            ClientLoad::Mixed { readers } => readers as usize,
        };
        let seconds = config.duration_s.ceil() as usize;
        let tail_disk = log.tail_disk();
        Ok(Sim {
            config: *config,
            log,
            disks: vec![Disk::new(config.disk); disks],
            queues: vec![VecDeque::new(); disks],
            in_service: vec![None; disks],
            rng,
            writer_outstanding: 0,
            readers: vec![0; readers],
            collector: Collector::default(),
            report: SimReport {
                intervals: vec![Interval::default(); seconds],
                segments_cleaned: 0,
                pages_moved: 0,
                body_fallback_pages: 0,
                positionings: 0,
                tail_disk_positionings: 0,
                tail_disk_changes: 0,
                gc_reads_on_tail_disk: 0,
                app_reads_on_tail_disk: 0,
                app_read_requests: 0,
                writer_idle_s: 0.0,
                pages_read: 0,
                ram_hits: 0,
                flash_hits: 0,
            },
            cache: config
                .tail_cache
                .map(|size| TailCache::new(size.ram_pages, size.flash_pages)),
            tail_disk,
        })
    }

    fn run(&mut self) {
        let mut now_s = 0.0;
        loop {
            self.issue(now_s);
            let next = self
                .in_service
                .iter()
                .enumerate()
                .filter_map(|(disk, slot)| slot.map(|(done_s, _)| (done_s, disk)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            let Some((done_s, disk)) = next else {
                return; // nothing in flight and nothing could be issued
            };
            let until_s = done_s.min(self.config.duration_s);
            if self.writer_outstanding == 0 {
                self.report.writer_idle_s += until_s - now_s;
            }
            if done_s >= self.config.duration_s {
                return;
            }
            now_s = done_s;
            let (_, request) = self.in_service[disk]
                .take()
                .expect("the earliest is in service");
            self.complete(now_s, request);
            self.start_next(now_s, disk);
        }
    }

    /// Every actor issues what it may.
    fn issue(&mut self, now_s: f64) {
        self.issue_collector(now_s);
        self.issue_writer(now_s);
        for reader in 0..self.readers.len() {
            if self.readers[reader] == 0 {
                self.issue_read(now_s, reader);
            }
        }
    }

    fn issue_writer(&mut self, now_s: f64) {
        while self.writer_outstanding < self.config.queue_depth {
            if self.log.client_free_pages() < self.config.request_pages {
                return; // blocked until the collector frees a segment
            }
            let pages = client_pages(&self.config, &mut self.rng);
            let extents = self.log.append(&pages, false).expect("room was checked");
            if let Some(cache) = self.cache.as_mut() {
                pages.iter().for_each(|&page| cache.written(page));
            }
            for extent in extents {
                self.writer_outstanding += 1;
                self.enqueue(now_s, extent, Owner::Writer, false);
            }
        }
    }

    /// The reader's next extent that needs a disk: extents the tail cache serves whole cost
    /// no disk time and are counted as hits (at most [`MAX_CACHED_READS`] in a row).
    fn issue_read(&mut self, now_s: f64, reader: usize) {
        for _ in 0..MAX_CACHED_READS {
            let first = extent_start(&self.config, &mut self.rng);
            let mut misses = Vec::new();
            for page in first..first + self.config.request_pages {
                let address = self
                    .log
                    .address_of(page)
                    .expect("the prefill wrote every page");
                self.report.pages_read += 1;
                if !self.cached(page, address) {
                    misses.push((address, true));
                }
            }
            if misses.is_empty() {
                continue;
            }
            for extent in self.log.extents(misses) {
                self.readers[reader] += 1;
                self.enqueue(now_s, extent, Owner::Reader(reader), true);
            }
            return;
        }
    }

    /// Whether the tail cache serves `page` (at `address`); a miss on the tail is cached.
    fn cached(&mut self, page: u64, address: u64) -> bool {
        let raid0 = self.config.log.layout == crate::log::Layout::Raid0;
        let on_tail = raid0 || self.log.locate(address).0 == self.log.tail_disk();
        let Some(cache) = self.cache.as_mut().filter(|_| on_tail) else {
            return false;
        };
        match cache.read(page) {
            CacheLevel::Ram => self.report.ram_hits += 1,
            CacheLevel::Flash => self.report.flash_hits += 1,
            CacheLevel::Miss => return false,
        }
        true
    }

    fn issue_collector(&mut self, now_s: f64) {
        loop {
            if self.collector.to_move.is_some() {
                self.issue_moves(now_s);
                if !self.finish_segment() {
                    break;
                }
            } else if self
                .collector
                .reading
                .front()
                .is_some_and(|&(_, left)| left == 0)
            {
                self.collector.to_move = Some(self.log.head_live().into());
            } else {
                break;
            }
        }
        self.start_segments();
        while self.collector.reads_outstanding < self.config.queue_depth {
            let Some(request) = self.collector.planned.pop_front() else {
                break;
            };
            self.collector.reads_outstanding += 1;
            self.enqueue(now_s, request.extent, request.owner, true);
        }
    }

    /// Relocates the head's live pages a request at a time, up to the queue depth.
    fn issue_moves(&mut self, now_s: f64) {
        while self.collector.writes_outstanding < self.config.queue_depth {
            let to_move = self.collector.to_move.as_mut().expect("moving");
            let chunk: Vec<u64> = std::iter::from_fn(|| to_move.pop_front())
                .take(self.config.request_pages as usize)
                .collect();
            if chunk.is_empty() {
                return;
            }
            // Pages the clients overwrote since the segment was read are dead: not moved.
            let live: Vec<u64> = chunk.into_iter().filter(|&p| self.log.in_head(p)).collect();
            self.report.pages_moved += live.len() as u64;
            for extent in self.log.relocate(&live) {
                self.collector.writes_outstanding += 1;
                self.enqueue(now_s, extent, Owner::GcWrite, false);
            }
        }
    }

    /// Frees the head segment once all its live pages are written; whether it did.
    fn finish_segment(&mut self) -> bool {
        let done = self
            .collector
            .to_move
            .as_ref()
            .is_some_and(VecDeque::is_empty)
            && self.collector.writes_outstanding == 0;
        if done {
            self.log.release_head();
            self.collector.reading.pop_front();
            self.collector.to_move = None;
            self.report.segments_cleaned += 1;
        }
        done
    }

    /// Starts reading the head segment, and one ahead, while the log wants collection.
    fn start_segments(&mut self) {
        while (self.collector.reading.len() as u64) <= READ_AHEAD_SEGMENTS
            && self.log.wants_collection()
        {
            let k = self.collector.reading.len() as u64;
            let Some(start) = self.log.segment_ahead(k) else {
                return;
            };
            let serial = self.collector.next_serial;
            self.collector.next_serial += 1;
            let mut reads = 0;
            for extent in split(self.log.segment_extents(start), self.config.request_pages) {
                reads += 1;
                self.collector.planned.push_back(Request {
                    extent,
                    owner: Owner::GcRead(serial),
                    read: true,
                });
            }
            self.collector.reading.push_back((serial, reads));
        }
    }

    fn enqueue(&mut self, now_s: f64, extent: Extent, owner: Owner, read: bool) {
        let disk = extent.disk as usize;
        self.queues[disk].push_back(Request {
            extent,
            owner,
            read,
        });
        if self.in_service[disk].is_none() {
            self.start_next(now_s, disk);
        }
    }

    fn start_next(&mut self, now_s: f64, disk: usize) {
        let Some(request) = self.queues[disk].pop_front() else {
            return;
        };
        let tail_disk = self.log.tail_disk();
        if tail_disk != self.tail_disk {
            self.tail_disk = tail_disk;
            self.report.tail_disk_changes += 1;
        }
        let extent = request.extent;
        let (done_s, moved) = self.disks[disk].serve(now_s, extent.start_page, extent.pages);
        if matches!(request.owner, Owner::Reader(_)) {
            self.report.app_read_requests += 1;
        }
        if disk as u32 == tail_disk {
            self.report.tail_disk_positionings += u64::from(moved);
            match request.owner {
                Owner::GcRead(_) => self.report.gc_reads_on_tail_disk += 1,
                Owner::Reader(_) => self.report.app_reads_on_tail_disk += 1,
                Owner::Writer | Owner::GcWrite => {}
            }
        }
        self.in_service[disk] = Some((done_s, request));
    }

    fn complete(&mut self, now_s: f64, request: Request) {
        let bytes = request.extent.payload_pages * PAGE_BYTES;
        let interval = &mut self.report.intervals[now_s as usize];
        match request.owner {
            Owner::Writer => {
                interval.app_write_bytes += bytes;
                self.writer_outstanding -= 1;
            }
            Owner::Reader(reader) => {
                interval.app_read_bytes += bytes;
                self.readers[reader] -= 1;
            }
            Owner::GcRead(serial) => {
                interval.gc_read_bytes += bytes;
                self.collector.reads_outstanding -= 1;
                let segment = self
                    .collector
                    .reading
                    .iter_mut()
                    .find(|(s, _)| *s == serial);
                segment.expect("a read belongs to a segment being read").1 -= 1;
            }
            Owner::GcWrite => {
                interval.gc_write_bytes += bytes;
                self.collector.writes_outstanding -= 1;
            }
        }
        assert!(request.read == matches!(request.owner, Owner::Reader(_) | Owner::GcRead(_)));
    }
}

/// The logical pages of one client write: random pages, or a random aligned extent.
fn client_pages(config: &SimConfig, rng: &mut ChaCha8Rng) -> Vec<u64> {
    let logical = config.log.logical_pages;
    let pages = config.request_pages;
    match config.load {
        ClientLoad::WriteOnly => (0..pages).map(|_| rng.random_range(0..logical)).collect(),
        ClientLoad::Mixed { .. } => {
            let first = extent_start(config, rng);
            (first..first + pages).collect()
        }
    }
}

/// Reads that the tail cache serves whole, in a row, before a reader yields.
const MAX_CACHED_READS: u32 = 10_000;

/// The first page of a skewed random aligned extent (the mixed load's hot/cold split).
fn extent_start(config: &SimConfig, rng: &mut ChaCha8Rng) -> u64 {
    let extents = config.log.logical_pages / config.request_pages;
    let hot = ((extents as f64 * HOT_EXTENT_SHARE) as u64).clamp(1, extents);
    let extent = if rng.random::<f64>() < HOT_ACCESS_SHARE || hot == extents {
        rng.random_range(0..hot)
    } else {
        rng.random_range(hot..extents)
    };
    extent * config.request_pages
}

/// `extents` cut into pieces of at most `pages`.
fn split(extents: Vec<Extent>, pages: u64) -> Vec<Extent> {
    let mut pieces = Vec::new();
    for extent in extents {
        let mut offset = 0;
        while offset < extent.pages {
            let length = pages.min(extent.pages - offset);
            pieces.push(Extent {
                disk: extent.disk,
                start_page: extent.start_page + offset,
                pages: length,
                payload_pages: length,
            });
            offset += length;
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Collector, Layout};

    const PAGES_PER_DISK: u64 = 64 * 1024;

    fn run(layout: Layout, collector: Collector, disks: u32, load: ClientLoad) -> SimReport {
        let log = LogConfig::new(layout, collector, disks, PAGES_PER_DISK, PAGES_PER_DISK / 2);
        simulate(&SimConfig::new(log, load, 12.0, 1)).unwrap()
    }

    fn ablated(layout: Layout) -> SimReport {
        let log = LogConfig::new(
            layout,
            Collector::MoveToTail,
            2,
            PAGES_PER_DISK,
            PAGES_PER_DISK / 2,
        );
        let mut config = SimConfig::new(log, ClientLoad::WriteOnly, 12.0, 1);
        config.disk.seek_ms = 0.0;
        config.disk.half_rotation_ms = 0.0;
        simulate(&config).unwrap()
    }

    #[test]
    fn gecko_chain_tail_disk_only_ever_sees_sequential_writes() {
        let report = run(
            Layout::Chain,
            Collector::MoveToTail,
            2,
            ClientLoad::WriteOnly,
        );
        assert!(
            report.segments_cleaned > 100,
            "the collector ran: {report:?}"
        );
        assert!(
            report.tail_disk_changes >= 2,
            "the tail moved across the chain"
        );
        assert_eq!(report.gc_reads_on_tail_disk, 0);
        // Only a move of the tail to another disk can cost it a positioning.
        assert!(
            report.tail_disk_positionings <= report.tail_disk_changes + 1,
            "{report:?}"
        );
    }

    #[test]
    fn raid0_log_throughput_collapses_when_gc_reads_interleave() {
        let report = run(
            Layout::Raid0,
            Collector::MoveToTail,
            2,
            ClientLoad::WriteOnly,
        );
        let before = report
            .mean_before_collecting(Interval::app_mb_per_s)
            .unwrap();
        let during = report
            .mean_while_collecting(Interval::app_mb_per_s)
            .unwrap();
        assert!(before > 200.0, "two disks stream before GC: {before}");
        assert!(during < before / 4.0, "{before} -> {during}");
        // Without positioning costs interleaving is free, and the collapse goes away.
        let no_seeks = ablated(Layout::Raid0);
        let during_no_seeks = no_seeks.mean_while_collecting(Interval::aggregate_mb_per_s);
        assert!(during_no_seeks.unwrap() > 200.0, "{no_seeks:?}");
    }

    #[test]
    fn compact_in_body_leaves_the_tail_disk_to_the_application() {
        let moving = run(
            Layout::Chain,
            Collector::MoveToTail,
            3,
            ClientLoad::WriteOnly,
        );
        let compacting = run(
            Layout::Chain,
            Collector::CompactInBody,
            3,
            ClientLoad::WriteOnly,
        );
        assert!(compacting.pages_moved > 0 && compacting.body_fallback_pages == 0);
        let app = |r: &SimReport| r.mean_while_collecting(Interval::app_mb_per_s).unwrap();
        assert!(
            app(&compacting) > app(&moving),
            "{} vs {}",
            app(&compacting),
            app(&moving)
        );
        let one_disk_mb_per_s = DiskParams::WD_10K.bandwidth_bytes_per_s / 1e6;
        assert!(app(&compacting) > 0.95 * one_disk_mb_per_s);
    }

    #[test]
    fn with_a_tail_cache_readers_on_a_chain_stay_off_the_tail_and_a_run_is_a_function_of_its_seed()
    {
        let load = ClientLoad::Mixed { readers: 4 };
        let aged = || {
            let log = LogConfig::new(
                Layout::Chain,
                Collector::MoveToTail,
                3,
                PAGES_PER_DISK,
                PAGES_PER_DISK / 2,
            );
            let mut config = SimConfig::new(log, load, 12.0, 1);
            config.aging_passes = 2.0;
            config.tail_cache = Some(CacheSize {
                ram_pages: 256,
                flash_pages: 4096,
            });
            simulate(&config).unwrap()
        };
        let chain = aged();
        let total_reads: u64 = chain.intervals.iter().map(|i| i.app_read_bytes).sum();
        assert!(total_reads > 0 && chain.ram_hits + chain.flash_hits > 0);
        let tail_share = chain.app_reads_on_tail_disk as f64 / chain.app_read_requests as f64;
        assert!(
            tail_share < 0.5,
            "the cache keeps most reads off the tail: {tail_share}"
        );
        assert_eq!(chain, aged());
    }

    #[test]
    fn bad_configurations_are_refused() {
        let log = LogConfig::new(
            Layout::Raid0,
            Collector::MoveToTail,
            2,
            PAGES_PER_DISK,
            1024,
        );
        let mut config = SimConfig::new(log, ClientLoad::WriteOnly, 0.0, 1);
        assert!(simulate(&config).is_err());
        config.duration_s = 1.0;
        config.request_pages = 1000;
        assert!(
            simulate(&config).is_err(),
            "1,024 pages are not whole requests of 1,000"
        );
        config.request_pages = 32;
        config.load = ClientLoad::Mixed {
            readers: MAX_READERS + 1,
        };
        assert!(simulate(&config).is_err());
        config.load = ClientLoad::WriteOnly;
        config.disk.bandwidth_bytes_per_s = -1.0;
        assert!(simulate(&config).is_err());
    }

    #[test]
    fn seeded_sweep_keeps_the_logs_books_on_every_layout_and_load() {
        for seed in 0..4 {
            for (layout, collector, disks) in [
                (Layout::Raid0, Collector::MoveToTail, 2),
                (Layout::Chain, Collector::CompactInBody, 3),
                (Layout::Chain, Collector::MoveToTail, 1),
            ] {
                for load in [ClientLoad::WriteOnly, ClientLoad::Mixed { readers: 3 }] {
                    let log = LogConfig::new(layout, collector, disks, 32 * 1024, 8 * 1024);
                    let mut config = SimConfig::new(log, load, 4.0, seed);
                    config.aging_passes = 1.0;
                    // simulate() checks the log's invariants after the run.
                    let report = simulate(&config).unwrap();
                    if load == ClientLoad::WriteOnly {
                        assert!(report.segments_cleaned > 0, "{layout:?} {seed}");
                    }
                }
            }
        }
    }
}
