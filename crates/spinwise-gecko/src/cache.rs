//! Gecko's tail cache (slides 14 and 24): reads of data on the tail disk would seek the tail
//! away from its writes, so recently written pages and the tail's read misses are kept in an
//! LRU in RAM, over an optional second LRU on flash that takes what RAM evicts.
//!
//! Invariants: a page is in at most one level; neither level holds more pages than its
//! capacity; a level of capacity zero holds nothing. Orders are by a use stamp in ordered maps,
//! so eviction is deterministic.

use std::collections::BTreeMap;

/// Where a read was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheLevel {
    Ram,
    Flash,
    Miss,
}

/// A least-recently-used set of pages.
#[derive(Clone, Debug, Default)]
struct Lru {
    capacity_pages: u64,
    stamp_of: BTreeMap<u64, u64>,
    page_of: BTreeMap<u64, u64>,
    next_stamp: u64,
}

impl Lru {
    fn new(capacity_pages: u64) -> Lru {
        Lru {
            capacity_pages,
            ..Lru::default()
        }
    }

    fn contains(&self, page: u64) -> bool {
        self.stamp_of.contains_key(&page)
    }

    fn remove(&mut self, page: u64) -> bool {
        match self.stamp_of.remove(&page) {
            Some(stamp) => {
                self.page_of.remove(&stamp);
                true
            }
            None => false,
        }
    }

    /// Makes `page` the most recent; returns the page evicted to make room, if any.
    fn touch(&mut self, page: u64) -> Option<u64> {
        if self.capacity_pages == 0 {
            return Some(page);
        }
        self.remove(page);
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        self.stamp_of.insert(page, stamp);
        self.page_of.insert(stamp, page);
        if self.stamp_of.len() as u64 <= self.capacity_pages {
            return None;
        }
        let (_, oldest) = self
            .page_of
            .pop_first()
            .expect("over capacity, so not empty");
        self.stamp_of.remove(&oldest);
        Some(oldest)
    }

    fn len(&self) -> u64 {
        self.stamp_of.len() as u64
    }
}

/// RAM over flash, with hit counters per level.
#[derive(Clone, Debug)]
pub struct TailCache {
    ram: Lru,
    flash: Lru,
    pub ram_hits: u64,
    pub flash_hits: u64,
    pub misses: u64,
}

impl TailCache {
    pub fn new(ram_pages: u64, flash_pages: u64) -> TailCache {
        TailCache {
            ram: Lru::new(ram_pages),
            flash: Lru::new(flash_pages),
            ram_hits: 0,
            flash_hits: 0,
            misses: 0,
        }
    }

    /// Puts `page` in RAM as the most recent; what RAM evicts goes to flash (and what flash
    /// evicts is dropped: the disk holds every page).
    fn put(&mut self, page: u64) {
        self.flash.remove(page);
        if let Some(evicted) = self.ram.touch(page) {
            self.flash.touch(evicted);
        }
        self.check();
    }

    /// A page was written at the tail: its new contents are the most recent.
    pub fn written(&mut self, page: u64) {
        self.put(page);
    }

    /// A read of a page on the tail disk: served from RAM or flash (promoted to RAM), or a
    /// miss that is then cached (it came from the tail, and will likely be read again).
    pub fn read(&mut self, page: u64) -> CacheLevel {
        let level = if self.ram.contains(page) {
            self.ram_hits += 1;
            CacheLevel::Ram
        } else if self.flash.contains(page) {
            self.flash_hits += 1;
            CacheLevel::Flash
        } else {
            self.misses += 1;
            CacheLevel::Miss
        };
        self.put(page);
        level
    }

    fn check(&self) {
        assert!(
            self.ram.len() <= self.ram.capacity_pages,
            "RAM over capacity"
        );
        assert!(
            self.flash.len() <= self.flash.capacity_pages,
            "flash over capacity"
        );
    }

    pub fn reads(&self) -> u64 {
        self.ram_hits + self.flash_hits + self.misses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recent_write_is_read_from_ram_and_an_older_one_from_flash() {
        let mut cache = TailCache::new(2, 2);
        for page in 0..4 {
            cache.written(page);
        }
        assert_eq!(cache.read(3), CacheLevel::Ram);
        assert_eq!(cache.read(0), CacheLevel::Flash, "RAM evicted it to flash");
        assert_eq!(cache.read(0), CacheLevel::Ram, "a flash hit is promoted");
        assert_eq!((cache.ram_hits, cache.flash_hits, cache.misses), (2, 1, 0));
    }

    #[test]
    fn without_flash_what_ram_evicts_is_gone_and_a_page_is_in_one_level_only() {
        let mut cache = TailCache::new(1, 0);
        cache.written(1);
        cache.written(2);
        assert_eq!(cache.read(1), CacheLevel::Miss);
        let mut two_levels = TailCache::new(1, 4);
        two_levels.written(1);
        two_levels.written(2);
        two_levels.written(1);
        assert!(two_levels.ram.contains(1) && !two_levels.flash.contains(1));
        assert!(two_levels.flash.contains(2));
    }

    #[test]
    fn a_cache_of_no_pages_misses_every_read() {
        let mut cache = TailCache::new(0, 0);
        cache.written(5);
        assert_eq!(cache.read(5), CacheLevel::Miss);
        assert_eq!(cache.reads(), 1);
    }
}
