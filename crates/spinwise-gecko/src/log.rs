//! A log-structured block store of 4-KiB pages over N disks (issue 33, item 2, as a model):
//! every write is appended at the log's tail, a logical-to-physical map says where each
//! logical page lives, and the head's segment is cleaned when free space runs low.
//!
//! The log's address space (`0..disks × pages_per_disk`, circular) is laid on the disks in one
//! of two ways ([`Layout`]):
//! - RAID-0: striped, `stripe_pages` per disk in turn, so the tail and the head each span
//!   every disk and a collector's reads land on the disks the tail writes;
//! - Gecko's chain: concatenated, disk 0's pages then disk 1's, so the tail is on one disk.
//!   A chain of two or more disks cleans while the head is on the disk after the tail's, so
//!   that disk is empty by the time the tail reaches it and the collector never reads the tail
//!   disk (our reading of the slides' "GC reads do not interrupt the sequential write"; the
//!   slides do not say how far ahead the head is kept).
//!
//! Both layouts also clean whenever free space falls below `gc_free_pages` (for the chain, an
//! emergency that only a collector slower than its clients reaches). Cleaning takes the head
//! segment's live pages and either appends them at the tail ([`Collector::MoveToTail`]) or
//! writes them into dead slots of body segments on neither the tail's nor the head's disk
//! ([`Collector::CompactInBody`]; what does not fit goes to the tail, so on two disks, where
//! there is no such body, it is move-to-tail), then frees the segment. The caller (the simulator) decides when and pays the
//! disk time; this module only keeps the books.
//!
//! Invariants ([`Log::check`] verifies them all): every mapped logical page has exactly one
//! live physical page, inside the written part of the log, that names it back; every live
//! physical page is named by exactly one logical page; each segment's live and written counts
//! match its pages; used + free = physical pages, and used = the pages from head to tail.

use crate::{GeckoError, require};

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layout {
    /// One log striped over RAID-0 of all the disks.
    Raid0,
    /// Gecko's chained log: the address space concatenated across the disks.
    Chain,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Raid0 => "log+raid0",
            Layout::Chain => "gecko",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Collector {
    /// Live pages of the head segment are re-appended at the tail.
    MoveToTail,
    /// Live pages of the head segment go into dead slots of body segments off the tail disk.
    CompactInBody,
}

impl Collector {
    pub fn name(self) -> &'static str {
        match self {
            Collector::MoveToTail => "move-to-tail",
            Collector::CompactInBody => "compact-in-body",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogConfig {
    pub layout: Layout,
    pub collector: Collector,
    pub disks: u32,
    pub pages_per_disk: u64,
    /// The unit of cleaning.
    pub segment_pages: u64,
    /// RAID-0's stripe unit (unused by the chain).
    pub stripe_pages: u64,
    /// The logical space clients address.
    pub logical_pages: u64,
    /// The collector cleans while fewer pages than this are free.
    pub gc_free_pages: u64,
    /// Free pages client writes may not take: held for the collector's own writes.
    pub reserve_pages: u64,
}

/// The segment: 4 MiB (1,024 pages), a common LFS segment size (Sprite LFS used 512 KiB-1 MiB;
/// larger segments keep head reads sequential on today's disks).
pub const SEGMENT_PAGES: u64 = 1024;
/// RAID-0's stripe unit: 128 KiB (32 pages), the request size the simulator issues.
pub const STRIPE_PAGES: u64 = 32;

impl LogConfig {
    /// A layout with the default segment (RAID-0: [`SEGMENT_PAGES`] on each disk, so a segment
    /// is whole stripe rows) and stripe, cleaning below 8 free segments (and, in a chain of two
    /// or more, while the head is on the disk after the tail's), 2 held back.
    pub fn new(
        layout: Layout,
        collector: Collector,
        disks: u32,
        pages_per_disk: u64,
        logical_pages: u64,
    ) -> LogConfig {
        let segment_pages = match layout {
            Layout::Raid0 => SEGMENT_PAGES * u64::from(disks),
            Layout::Chain => SEGMENT_PAGES,
        };
        LogConfig {
            layout,
            collector,
            disks,
            pages_per_disk,
            segment_pages,
            stripe_pages: STRIPE_PAGES,
            logical_pages,
            gc_free_pages: 8 * segment_pages,
            reserve_pages: 2 * segment_pages,
        }
    }

    pub fn physical_pages(&self) -> u64 {
        u64::from(self.disks) * self.pages_per_disk
    }

    pub fn validate(&self) -> Result<(), GeckoError> {
        require(self.disks >= 1, || "a log needs at least one disk".into())?;
        require(self.segment_pages >= 1 && self.stripe_pages >= 1, || {
            "segments and stripe units need at least one page".into()
        })?;
        // A chain's segment lies on one disk; RAID-0's spans them all.
        let holder = match self.layout {
            Layout::Chain => self.pages_per_disk,
            Layout::Raid0 => self.physical_pages(),
        };
        require(holder.is_multiple_of(self.segment_pages), || {
            format!(
                "{holder} pages (a disk in a chain, the array in RAID-0) must be whole segments \
                 of {}",
                self.segment_pages
            )
        })?;
        let stripe_row = self.stripe_pages * u64::from(self.disks);
        require(
            self.layout == Layout::Chain || self.segment_pages.is_multiple_of(stripe_row),
            || {
                format!(
                    "a RAID-0 segment ({} pages) must be whole stripe rows ({stripe_row} pages)",
                    self.segment_pages
                )
            },
        )?;
        let physical = self.physical_pages();
        require(physical < u64::from(NONE), || {
            format!("{physical} physical pages do not fit the map's 32-bit addresses")
        })?;
        require(self.reserve_pages >= self.segment_pages, || {
            "the collector's reserve must hold at least a segment".into()
        })?;
        require(self.gc_free_pages >= self.reserve_pages, || {
            "collection must start before free space reaches the reserve".into()
        })?;
        require(
            self.logical_pages >= 1
                && self.logical_pages + self.gc_free_pages + 2 * self.segment_pages <= physical,
            || {
                format!(
                    "{} logical pages leave no room to collect in {physical} physical pages \
                     (the collector keeps {} free)",
                    self.logical_pages, self.gc_free_pages
                )
            },
        )?;
        // A chain empties a whole disk per turn: the live data must fit on the others.
        let others = u64::from(self.disks.saturating_sub(1)) * self.pages_per_disk;
        require(
            self.layout == Layout::Raid0
                || self.disks == 1
                || self.logical_pages + self.gc_free_pages <= others,
            || {
                format!(
                    "a chain of {} disks empties one disk per turn: {} logical pages must fit \
                     in {others} pages less the collector's {}",
                    self.disks, self.logical_pages, self.gc_free_pages
                )
            },
        )
    }
}

/// A run of pages on one disk. `payload_pages` of them carry data the caller asked to move
/// (a compaction's span also passes over live pages it leaves alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub disk: u32,
    pub start_page: u64,
    pub pages: u64,
    pub payload_pages: u64,
}

/// The store's books.
#[derive(Clone, Debug)]
pub struct Log {
    config: LogConfig,
    /// Logical page → log address.
    map: Vec<u32>,
    /// Log address → logical page, for live pages.
    owner: Vec<u32>,
    live: Vec<u32>,
    written: Vec<u32>,
    /// The head segment's first address.
    head: u64,
    /// The next address appended.
    tail: u64,
    used: u64,
    /// Pages the collector put at the tail because the body had no dead slot off the tail disk.
    pub body_fallback_pages: u64,
}

impl Log {
    pub fn new(config: LogConfig) -> Result<Log, GeckoError> {
        config.validate()?;
        let physical = config.physical_pages();
        let segments = physical / config.segment_pages;
        Ok(Log {
            config,
            map: vec![NONE; config.logical_pages as usize],
            owner: vec![NONE; physical as usize],
            live: vec![0; segments as usize],
            written: vec![0; segments as usize],
            head: 0,
            tail: 0,
            used: 0,
            body_fallback_pages: 0,
        })
    }

    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    pub fn free_pages(&self) -> u64 {
        self.config.physical_pages() - self.used
    }

    /// Free pages a client write may take: not the reserve (the collector's), and in a chain,
    /// while the head is on the next disk, not the room the tail disk must keep for the live
    /// pages the collector has still to move off that disk (the tail waits for the collector
    /// to empty it rather than spill onto it and write beside its reads).
    pub fn client_free_pages(&self) -> u64 {
        let room = self.free_pages().saturating_sub(self.config.reserve_pages);
        if self.head_on_next_disk() && self.head_disk() != self.tail_disk() {
            let left_on_disk = self.config.pages_per_disk - self.locate(self.tail).1;
            room.min(left_on_disk.saturating_sub(self.live_left_on_head_disk()))
        } else {
            room
        }
    }

    /// Live pages from the head segment to the end of the head's disk.
    fn live_left_on_head_disk(&self) -> u64 {
        let segment_pages = self.config.segment_pages;
        let first = self.segment_of(self.head);
        let per_disk = (self.config.pages_per_disk / segment_pages) as usize;
        let end = (first / per_disk + 1) * per_disk;
        self.live[first..end].iter().map(|&l| u64::from(l)).sum()
    }

    /// The k-th full segment from the head (0: the head's), if the tail has moved past it and,
    /// in a chain, it is not on the tail disk: what the collector may read next. Below the
    /// free-space threshold a chain collects on the tail disk too (the live data has outgrown
    /// the body, and only collection frees room): the simulator counts those reads.
    pub fn segment_ahead(&self, k: u64) -> Option<u64> {
        let segment_pages = self.config.segment_pages;
        if self.used <= (k + 1) * segment_pages {
            return None;
        }
        let start = (self.head + k * segment_pages) % self.config.physical_pages();
        let on_tail_disk = self.locate(start).0 == self.tail_disk();
        let low = self.free_pages() < self.config.gc_free_pages;
        (self.config.layout == Layout::Raid0 || !on_tail_disk || low).then_some(start)
    }

    /// The extents of the segment starting at `start`, for the collector to read.
    pub fn segment_extents(&self, start: u64) -> Vec<Extent> {
        self.extents((start..start + self.config.segment_pages).map(|a| (a, true)))
    }

    pub fn wants_collection(&self) -> bool {
        if !self.head_cleanable() {
            return false;
        }
        let low = self.free_pages() < self.config.gc_free_pages;
        low || self.head_on_next_disk()
    }

    /// In a chain of two or more: the head is on the disk the tail will enter next.
    fn head_on_next_disk(&self) -> bool {
        let disks = self.config.disks;
        self.config.layout == Layout::Chain
            && disks >= 2
            && self.head_disk() == (self.tail_disk() + 1) % disks
    }

    /// The disk the head segment starts on.
    pub fn head_disk(&self) -> u32 {
        self.locate(self.head).0
    }

    /// The head segment is written whole and the tail has moved past it.
    fn head_cleanable(&self) -> bool {
        self.used > self.config.segment_pages
    }

    /// Where a log address lives: (disk, page on that disk).
    pub fn locate(&self, address: u64) -> (u32, u64) {
        let config = &self.config;
        match config.layout {
            Layout::Chain => (
                (address / config.pages_per_disk) as u32,
                address % config.pages_per_disk,
            ),
            Layout::Raid0 => {
                let unit = address / config.stripe_pages;
                let disks = u64::from(config.disks);
                let disk = (unit % disks) as u32;
                let row = unit / disks;
                (
                    disk,
                    row * config.stripe_pages + address % config.stripe_pages,
                )
            }
        }
    }

    /// The disk the next append lands on.
    pub fn tail_disk(&self) -> u32 {
        self.locate(self.tail).0
    }

    fn segment_of(&self, address: u64) -> usize {
        (address / self.config.segment_pages) as usize
    }

    /// Where `logical` lives, if it was ever written.
    pub fn address_of(&self, logical: u64) -> Option<u64> {
        let address = *self.map.get(logical as usize)?;
        (address != NONE).then_some(u64::from(address))
    }

    /// Extents covering `addresses` in order, merging runs contiguous on one disk.
    pub fn extents(&self, addresses: impl IntoIterator<Item = (u64, bool)>) -> Vec<Extent> {
        let mut extents: Vec<Extent> = Vec::new();
        for (address, payload) in addresses {
            let (disk, page) = self.locate(address);
            let payload_pages = u64::from(payload);
            match extents.last_mut() {
                Some(last) if last.disk == disk && last.start_page + last.pages == page => {
                    last.pages += 1;
                    last.payload_pages += payload_pages;
                }
                _ => extents.push(Extent {
                    disk,
                    start_page: page,
                    pages: 1,
                    payload_pages,
                }),
            }
        }
        extents
    }

    /// Marks `logical`'s current copy dead.
    fn invalidate(&mut self, logical: u64) {
        let old = self.map[logical as usize];
        if old != NONE {
            let segment = self.segment_of(u64::from(old));
            assert_eq!(
                self.owner[old as usize], logical as u32,
                "map and owner agree"
            );
            self.owner[old as usize] = NONE;
            self.live[segment] -= 1;
        }
    }

    fn place(&mut self, logical: u64, address: u64) {
        self.invalidate(logical);
        self.map[logical as usize] = address as u32;
        self.owner[address as usize] = logical as u32;
        let segment = self.segment_of(address);
        self.live[segment] += 1;
    }

    /// Appends `logicals` at the tail, in order; `None` (nothing written) when the free space
    /// allowed to the writer (clients: above the reserve; the collector: all of it) is short.
    pub fn append(&mut self, logicals: &[u64], by_collector: bool) -> Option<Vec<Extent>> {
        let room = if by_collector {
            self.free_pages()
        } else {
            self.client_free_pages()
        };
        if (logicals.len() as u64) > room
            || logicals.iter().any(|&l| l >= self.config.logical_pages)
        {
            return None;
        }
        let physical = self.config.physical_pages();
        let mut addresses = Vec::with_capacity(logicals.len());
        for &logical in logicals {
            let address = self.tail;
            self.place(logical, address);
            let segment = self.segment_of(address);
            self.written[segment] += 1;
            addresses.push((address, true));
            self.tail = (self.tail + 1) % physical;
            self.used += 1;
        }
        Some(self.extents(addresses))
    }

    /// Whether `logical` still lives in the head segment.
    pub fn in_head(&self, logical: u64) -> bool {
        self.address_of(logical)
            .is_some_and(|address| self.segment_of(address) == self.segment_of(self.head))
    }

    /// The logical pages live in the head segment, in address order.
    pub fn head_live(&self) -> Vec<u64> {
        let start = self.head as usize;
        self.owner[start..start + self.config.segment_pages as usize]
            .iter()
            .filter(|&&logical| logical != NONE)
            .map(|&logical| u64::from(logical))
            .collect()
    }

    /// Frees the head segment once nothing in it is live.
    pub fn release_head(&mut self) {
        let segment = self.segment_of(self.head);
        assert_eq!(self.live[segment], 0, "a segment is freed only when empty");
        assert!(self.head_cleanable(), "the tail has left the head segment");
        self.written[segment] = 0;
        self.head = (self.head + self.config.segment_pages) % self.config.physical_pages();
        self.used -= self.config.segment_pages;
    }

    /// Moves `logicals` (live in the head segment) as the configured collector does; returns
    /// the extents written. Compact-in-body puts what the body cannot take at the tail.
    pub fn relocate(&mut self, logicals: &[u64]) -> Vec<Extent> {
        match self.config.collector {
            Collector::MoveToTail => self
                .append(logicals, true)
                .expect("the reserve holds a segment's live pages"),
            Collector::CompactInBody => {
                let (mut extents, rest) = self.compact_into_body(logicals);
                if !rest.is_empty() {
                    self.body_fallback_pages += rest.len() as u64;
                    extents.extend(
                        self.append(&rest, true)
                            .expect("the reserve holds a segment's live pages"),
                    );
                }
                extents
            }
        }
    }

    /// Full body segments a compaction may write into: after the head segment, before the
    /// tail's, and (in a chain) on neither the tail's disk nor the head's (which is being
    /// emptied); most dead slots first, then farthest from the head (so what is compacted is
    /// not soon cleaned again).
    fn body_targets(&self) -> Vec<usize> {
        let segment_pages = self.config.segment_pages;
        let segments = self.live.len();
        let head_segment = self.segment_of(self.head);
        let (tail_disk, head_disk) = (self.tail_disk(), self.head_disk());
        let full = (self.used / segment_pages) as usize;
        let mut targets: Vec<(u32, usize, usize)> = (1..full)
            .map(|k| (k, (head_segment + k) % segments))
            .filter(|&(_, s)| {
                let disk = self.locate(s as u64 * segment_pages).0;
                self.config.layout == Layout::Raid0 || (disk != tail_disk && disk != head_disk)
            })
            .map(|(k, s)| (self.written[s] - self.live[s], k, s))
            .filter(|&(dead, _, _)| dead > 0)
            .collect();
        targets.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
        targets.into_iter().map(|(_, _, s)| s).collect()
    }

    /// Writes `logicals` into dead slots of body segments; returns the extents (one sweep over
    /// each target segment's span of filled slots) and what did not fit.
    fn compact_into_body(&mut self, logicals: &[u64]) -> (Vec<Extent>, Vec<u64>) {
        let mut rest = logicals;
        let mut extents = Vec::new();
        for segment in self.body_targets() {
            if rest.is_empty() {
                break;
            }
            let start = segment as u64 * self.config.segment_pages;
            let slots: Vec<u64> = (start..start + self.config.segment_pages)
                .filter(|&a| self.owner[a as usize] == NONE)
                .take(rest.len())
                .collect();
            let (placed, remaining) = rest.split_at(slots.len());
            for (&logical, &address) in placed.iter().zip(&slots) {
                self.place(logical, address);
            }
            rest = remaining;
            let filled: std::collections::BTreeSet<u64> = slots.iter().copied().collect();
            let (first, last) = (slots[0], slots[slots.len() - 1]);
            extents.extend(self.extents((first..=last).map(|a| (a, filled.contains(&a)))));
        }
        (extents, rest.to_vec())
    }

    /// Cleans the head segment at once (no disk time): used to age a log before a timed run.
    pub fn clean_head_now(&mut self) {
        let live = self.head_live();
        self.relocate(&live);
        self.release_head();
    }

    /// Checks every invariant in the module's header; the first broken one, named.
    pub fn check(&self) -> Result<(), String> {
        let physical = self.config.physical_pages();
        if self.used > physical {
            return Err(format!("used {} exceeds {physical} pages", self.used));
        }
        if (self.head + self.used) % physical != self.tail {
            return Err(format!(
                "head {} + used {} is not the tail {}",
                self.head, self.used, self.tail
            ));
        }
        let in_log = |address: u64| (address + physical - self.head) % physical < self.used;
        for (logical, &address) in self.map.iter().enumerate() {
            if address == NONE {
                continue;
            }
            if self.owner[address as usize] != logical as u32 {
                return Err(format!(
                    "logical {logical} maps to {address}, which names another"
                ));
            }
            if !in_log(u64::from(address)) {
                return Err(format!(
                    "logical {logical} lives at {address}, outside the log"
                ));
            }
        }
        let mut live = vec![0u32; self.live.len()];
        for (address, &logical) in self.owner.iter().enumerate() {
            if logical == NONE {
                continue;
            }
            if self.map.get(logical as usize) != Some(&(address as u32)) {
                return Err(format!(
                    "page {address} names {logical}, which lives elsewhere"
                ));
            }
            live[self.segment_of(address as u64)] += 1;
        }
        if live != self.live {
            return Err("a segment's live count does not match its pages".into());
        }
        let written: u64 = self.written.iter().map(|&w| u64::from(w)).sum();
        if written != self.used {
            return Err(format!(
                "segments hold {written} written pages, used is {}",
                self.used
            ));
        }
        if self.live.iter().zip(&self.written).any(|(l, w)| l > w) {
            return Err("a segment has more live pages than written ones".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const PAGES_PER_DISK: u64 = 64 * SEGMENT_PAGES;

    fn log_on(layout: Layout, collector: Collector, disks: u32) -> Log {
        let config = LogConfig::new(layout, collector, disks, PAGES_PER_DISK, PAGES_PER_DISK / 2);
        Log::new(config).unwrap()
    }

    fn log(layout: Layout, collector: Collector) -> Log {
        log_on(layout, collector, 2)
    }

    /// Fills the logical space, then overwrites random pages, cleaning as a collector would.
    fn age(log: &mut Log, writes: u64, seed: u64) {
        let logical = log.config().logical_pages;
        let all: Vec<u64> = (0..logical).collect();
        log.append(&all, false).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for _ in 0..writes {
            while log.wants_collection() {
                log.clean_head_now();
            }
            let page = rng.random_range(0..logical);
            log.append(&[page], false).expect("cleaning keeps room");
        }
    }

    #[test]
    fn seeded_sweep_of_random_logs_keeps_every_invariant_after_every_cleaning() {
        let mut swept = 0;
        for seed in 0..12u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let disks = rng.random_range(1..=4u32);
            let layout = if rng.random::<bool>() {
                Layout::Chain
            } else {
                Layout::Raid0
            };
            let collector = if rng.random::<bool>() {
                Collector::MoveToTail
            } else {
                Collector::CompactInBody
            };
            let pages_per_disk = 16 * SEGMENT_PAGES;
            let mut config = LogConfig::new(layout, collector, disks, pages_per_disk, 1);
            // Anything from a sliver to the most the layout accepts.
            let most = (u64::from(disks.saturating_sub(1).max(1)) * pages_per_disk)
                .saturating_sub(config.gc_free_pages + 2 * config.segment_pages);
            config.logical_pages = rng.random_range(1..=most.max(1));
            let Ok(mut log) = Log::new(config) else {
                continue; // too small a layout for its own thresholds
            };
            let label = format!("seed {seed}: {layout:?} {collector:?} {disks} disks");
            let logical = config.logical_pages;
            log.append(&(0..logical).collect::<Vec<_>>(), false)
                .unwrap_or_else(|| panic!("{label}: prefill"));
            for _ in 0..3 * config.physical_pages() {
                while log.wants_collection() {
                    let low = log.free_pages() < config.gc_free_pages;
                    if layout == Layout::Chain && disks >= 2 && !low {
                        assert_ne!(log.head_disk(), log.tail_disk(), "{label}");
                    }
                    log.clean_head_now();
                    log.check().unwrap_or_else(|e| panic!("{label}: {e}"));
                }
                let page = rng.random_range(0..logical);
                if log.append(&[page], false).is_none() {
                    panic!("{label}: no room after cleaning");
                }
            }
            log.check().unwrap_or_else(|e| panic!("{label}: {e}"));
            swept += 1;
        }
        assert!(swept >= 8, "only {swept} of 12 random layouts were valid");
    }

    #[test]
    fn the_chain_puts_consecutive_addresses_on_one_disk_and_raid0_stripes_them() {
        let chain = log(Layout::Chain, Collector::MoveToTail);
        assert_eq!(chain.locate(0), (0, 0));
        assert_eq!(chain.locate(PAGES_PER_DISK), (1, 0));
        let raid = log(Layout::Raid0, Collector::MoveToTail);
        assert_eq!(raid.locate(0), (0, 0));
        assert_eq!(raid.locate(STRIPE_PAGES), (1, 0));
        assert_eq!(raid.locate(2 * STRIPE_PAGES + 1), (0, STRIPE_PAGES + 1));
    }

    #[test]
    fn every_collector_keeps_the_books_through_random_overwrites_on_every_layout() {
        for (layout, collector, disks) in [
            (Layout::Raid0, Collector::MoveToTail, 2),
            (Layout::Chain, Collector::MoveToTail, 2),
            (Layout::Chain, Collector::CompactInBody, 2),
            (Layout::Chain, Collector::CompactInBody, 3),
            (Layout::Chain, Collector::MoveToTail, 1),
        ] {
            for seed in 0..3 {
                let mut log = log_on(layout, collector, disks);
                age(&mut log, 3 * PAGES_PER_DISK, seed);
                log.check()
                    .unwrap_or_else(|e| panic!("{layout:?} {collector:?} seed {seed}: {e}"));
                let mapped = (0..log.config().logical_pages)
                    .filter(|&l| log.address_of(l).is_some())
                    .count() as u64;
                assert_eq!(
                    mapped,
                    log.config().logical_pages,
                    "every page still readable"
                );
            }
        }
    }

    #[test]
    fn the_chain_collector_never_cleans_a_segment_on_the_tail_disk() {
        for disks in [2, 3] {
            let mut log = log_on(Layout::Chain, Collector::MoveToTail, disks);
            let logical = log.config().logical_pages;
            log.append(&(0..logical).collect::<Vec<_>>(), false)
                .unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(8);
            let mut cleaned = 0;
            for _ in 0..6 * PAGES_PER_DISK {
                while log.wants_collection() {
                    assert_ne!(
                        log.head_disk(),
                        log.tail_disk(),
                        "{disks} disks: GC on the tail"
                    );
                    log.clean_head_now();
                    cleaned += 1;
                }
                log.append(&[rng.random_range(0..logical)], false).unwrap();
            }
            assert!(
                cleaned > 64,
                "{disks} disks: the collector ran ({cleaned} segments)"
            );
        }
    }

    #[test]
    fn compact_in_body_writes_nothing_on_the_tail_disk_while_the_body_has_room() {
        let mut log = log_on(Layout::Chain, Collector::CompactInBody, 3);
        age(&mut log, 4 * PAGES_PER_DISK, 3);
        while !log.wants_collection() {
            log.append(&[1], false).unwrap();
        }
        let tail_disk = log.tail_disk();
        let live = log.head_live();
        assert!(!live.is_empty(), "the aged head holds live pages");
        let extents = log.relocate(&live);
        assert_eq!(log.body_fallback_pages, 0, "the body had room");
        assert!(extents.iter().all(|e| e.disk != tail_disk), "{extents:?}");
        let moved: u64 = extents.iter().map(|e| e.payload_pages).sum();
        assert_eq!(moved, live.len() as u64);
        log.release_head();
        log.check().unwrap();
    }

    #[test]
    fn a_client_write_cannot_take_the_collectors_reserve_and_bad_sizes_are_refused() {
        let mut log = log(Layout::Raid0, Collector::MoveToTail);
        let free = log.client_free_pages();
        let too_many: Vec<u64> = (0..=free).map(|p| p % PAGES_PER_DISK / 2).collect();
        assert!(log.append(&too_many, false).is_none());
        log.check().unwrap();
        let mut config = *log.config();
        config.logical_pages = config.physical_pages();
        assert!(Log::new(config).is_err());
        config.logical_pages = 10;
        config.segment_pages += 1;
        assert!(Log::new(config).is_err());
    }
}
