//! Gecko's tail cache (slides 14 and 24): reads of data on the tail disk would seek the tail
//! away from its writes, so recently written pages and the tail's read misses are kept in an
//! LRU in RAM, over an optional second LRU on flash that takes what RAM evicts.
//!
//! Invariants: a page is in at most one level; neither level holds more pages than its
//! capacity; a level of capacity zero holds nothing. Order is a linked list by last use, so
//! eviction is deterministic.

/// Where a read was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheLevel {
    Ram,
    Flash,
    Miss,
}

/// No page: the end of a list.
const NIL: u64 = u64::MAX;

/// A least-recently-used set of pages: a doubly linked list threaded through vectors indexed
/// by page (grown on demand), so every operation is O(1) and the order is deterministic.
#[derive(Clone, Debug)]
struct Lru {
    capacity_pages: u64,
    len: u64,
    present: Vec<bool>,
    /// Toward the most recent.
    newer: Vec<u64>,
    /// Toward the least recent.
    older: Vec<u64>,
    newest: u64,
    oldest: u64,
}

impl Lru {
    fn new(capacity_pages: u64) -> Lru {
        Lru {
            capacity_pages,
            len: 0,
            present: Vec::new(),
            newer: Vec::new(),
            older: Vec::new(),
            newest: NIL,
            oldest: NIL,
        }
    }

    fn contains(&self, page: u64) -> bool {
        self.present.get(page as usize).copied().unwrap_or(false)
    }

    fn grow(&mut self, page: u64) {
        let needed = page as usize + 1;
        if self.present.len() < needed {
            self.present.resize(needed, false);
            self.newer.resize(needed, NIL);
            self.older.resize(needed, NIL);
        }
    }

    fn remove(&mut self, page: u64) -> bool {
        if !self.contains(page) {
            return false;
        }
        let (newer, older) = (self.newer[page as usize], self.older[page as usize]);
        match newer {
            NIL => self.newest = older,
            n => self.older[n as usize] = older,
        }
        match older {
            NIL => self.oldest = newer,
            o => self.newer[o as usize] = newer,
        }
        self.present[page as usize] = false;
        self.len -= 1;
        true
    }

    /// Makes `page` the most recent; returns the page evicted to make room, if any.
    fn touch(&mut self, page: u64) -> Option<u64> {
        if self.capacity_pages == 0 {
            return Some(page);
        }
        self.remove(page);
        self.grow(page);
        let index = page as usize;
        self.present[index] = true;
        self.newer[index] = NIL;
        self.older[index] = self.newest;
        if self.newest != NIL {
            self.newer[self.newest as usize] = page;
        }
        self.newest = page;
        if self.oldest == NIL {
            self.oldest = page;
        }
        self.len += 1;
        if self.len <= self.capacity_pages {
            return None;
        }
        let oldest = self.oldest;
        self.remove(oldest);
        Some(oldest)
    }

    fn len(&self) -> u64 {
        self.len
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
    fn the_lru_evicts_the_least_recently_used_page_whatever_the_order_of_touches() {
        let mut lru = Lru::new(3);
        for page in [5, 1, 9] {
            assert_eq!(lru.touch(page), None);
        }
        assert_eq!(
            lru.touch(5),
            None,
            "a touch of a present page evicts nothing"
        );
        assert_eq!(lru.touch(7), Some(1));
        assert_eq!(lru.touch(2), Some(9));
        assert!(lru.remove(5) && !lru.remove(5));
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.touch(3), None);
        assert_eq!(lru.touch(4), Some(7));
    }

    #[test]
    fn a_cache_of_no_pages_misses_every_read() {
        let mut cache = TailCache::new(0, 0);
        cache.written(5);
        assert_eq!(cache.read(5), CacheLevel::Miss);
        assert_eq!(cache.reads(), 1);
    }
}
