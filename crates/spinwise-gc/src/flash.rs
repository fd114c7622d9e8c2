//! A page-mapped flash translation layer: logical pages written out of place into the block being
//! filled, the page they replace marked invalid, blocks erased whole. The model the simulator
//! runs; timings are the slides' (25 µs page read, 200 µs page write, 1.5 ms block erase) plus
//! the channel transfer of DiskSim's SSD model (0.025 µs a byte, 102.4 µs a 4 KiB page).
//!
//! Invariants (checked by [`Ftl::check`], run by the tests after every operation):
//! - `map[l] = p` exactly when `owner[p] = l`; every other physical page is free or invalid;
//! - a block's valid count is the number of pages it owns;
//! - a free block has no written page; only the active block is partly written, and it is never
//!   full (a block leaves `active` with its last page);
//! - every full block is listed once, under its valid count, as a candidate victim;
//! - host writes never take the last `RESERVED_BLOCKS` free blocks, so relocation always has a
//!   page to move into (a victim with an invalid page frees more than it takes).

use crate::GcError;
use std::collections::{BTreeSet, VecDeque};

/// Free blocks only relocation may take.
pub const RESERVED_BLOCKS: usize = 1;

const UNMAPPED: u32 = u32::MAX;

/// Microseconds per flash operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlashTimings {
    pub page_read_us: f64,
    pub page_write_us: f64,
    pub block_erase_us: f64,
    /// Moving one page between the controller and a chip over the channel.
    pub transfer_us_per_page: f64,
}

impl FlashTimings {
    /// The slides' cell timings and DiskSim's SSD channel rate for 4 KiB pages.
    pub const SLIDES: FlashTimings = FlashTimings {
        page_read_us: 25.0,
        page_write_us: 200.0,
        block_erase_us: 1500.0,
        transfer_us_per_page: 102.4,
    };

    /// A host read of one page: the cell read, then the transfer out.
    pub fn host_read_us(&self) -> f64 {
        self.page_read_us + self.transfer_us_per_page
    }

    /// A host write of one page: the transfer in, then the program.
    pub fn host_write_us(&self) -> f64 {
        self.transfer_us_per_page + self.page_write_us
    }

    /// Relocating one valid page inside a chip (copy-back: no channel transfer).
    pub fn move_us(&self) -> f64 {
        self.page_read_us + self.page_write_us
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlashConfig {
    pub blocks: u32,
    pub pages_per_block: u32,
    pub page_bytes: u32,
    /// The share of physical pages not exposed as logical space (DiskSim's default: 15%).
    pub over_provision_fraction: f64,
    pub timings: FlashTimings,
}

impl FlashConfig {
    /// 1,024 blocks of 64 pages of 4 KiB (256 MiB), 15% over-provisioned: DiskSim's SSD
    /// geometry per block, fewer blocks so a run reaches steady state in a second.
    pub const DEFAULT: FlashConfig = FlashConfig {
        blocks: 1024,
        pages_per_block: 64,
        page_bytes: 4096,
        over_provision_fraction: 0.15,
        timings: FlashTimings::SLIDES,
    };

    pub fn physical_pages(&self) -> u64 {
        u64::from(self.blocks) * u64::from(self.pages_per_block)
    }

    pub fn logical_pages(&self) -> u64 {
        (self.physical_pages() as f64 * (1.0 - self.over_provision_fraction)).floor() as u64
    }

    pub fn validate(&self) -> Result<(), GcError> {
        let invalid = |what: String| Err(GcError::Invalid(what));
        if !(4..=1 << 20).contains(&self.blocks) {
            return invalid(format!("blocks must be 4 to 2^20, got {}", self.blocks));
        }
        if !(2..=4096).contains(&self.pages_per_block) {
            return invalid(format!(
                "pages per block must be 2 to 4096, got {}",
                self.pages_per_block
            ));
        }
        if self.physical_pages() >= u64::from(UNMAPPED) {
            return invalid("more than 2^32 - 1 physical pages".into());
        }
        let spare_pages = self.physical_pages() - self.logical_pages();
        let needed = (RESERVED_BLOCKS as u64 + 2) * u64::from(self.pages_per_block);
        if !(self.over_provision_fraction < 1.0 && spare_pages >= needed) {
            return invalid(format!(
                "over-provisioning {} leaves {spare_pages} spare pages; at least {needed} (three blocks) are needed",
                self.over_provision_fraction
            ));
        }
        let timings = self.timings;
        let times = [
            timings.page_read_us,
            timings.page_write_us,
            timings.block_erase_us,
            timings.transfer_us_per_page,
        ];
        if !times.iter().all(|t| t.is_finite() && *t >= 0.0) {
            return invalid("flash timings must be finite and not negative".into());
        }
        Ok(())
    }
}

/// The mapping and the blocks' states.
#[derive(Clone, Debug)]
pub struct Ftl {
    pages_per_block: u32,
    logical_pages: u32,
    /// Logical page → physical page, or `UNMAPPED`.
    map: Vec<u32>,
    /// Physical page → the logical page it holds, or `UNMAPPED` (free or invalid).
    owner: Vec<u32>,
    valid: Vec<u32>,
    /// Pages programmed since the block's last erase.
    written: Vec<u32>,
    /// Erased blocks, taken oldest first (spreads erases).
    free: VecDeque<u32>,
    active: Option<u32>,
    /// Full blocks (not being filled) by valid count, for greedy victims in O(pages per block).
    full_by_valid: Vec<BTreeSet<u32>>,
    erases: u64,
}

impl Ftl {
    pub fn new(config: &FlashConfig) -> Result<Ftl, GcError> {
        config.validate()?;
        let physical = config.physical_pages() as usize;
        Ok(Ftl {
            pages_per_block: config.pages_per_block,
            logical_pages: config.logical_pages() as u32,
            map: vec![UNMAPPED; config.logical_pages() as usize],
            owner: vec![UNMAPPED; physical],
            valid: vec![0; config.blocks as usize],
            written: vec![0; config.blocks as usize],
            free: (0..config.blocks).collect(),
            active: None,
            full_by_valid: vec![BTreeSet::new(); config.pages_per_block as usize + 1],
            erases: 0,
        })
    }

    pub fn logical_pages(&self) -> u32 {
        self.logical_pages
    }

    /// Erased blocks, not counting the one being filled.
    pub fn free_blocks(&self) -> u64 {
        self.free.len() as u64
    }

    pub fn erases(&self) -> u64 {
        self.erases
    }

    /// The block holding `lpn`'s current copy, if it was ever written.
    pub fn block_of(&self, lpn: u32) -> Option<u32> {
        let physical = self.map[lpn as usize];
        (physical != UNMAPPED).then_some(physical / self.pages_per_block)
    }

    /// Writes `lpn` into the next free page; `relocation` may take the reserved blocks.
    /// `false` when there is no page to write into (host writes: collection must run first).
    pub fn write(&mut self, lpn: u32, relocation: bool) -> bool {
        assert!(lpn < self.logical_pages, "logical page {lpn} out of range");
        let Some(physical) = self.allocate(relocation) else {
            return false;
        };
        let old = self.map[lpn as usize];
        if old != UNMAPPED {
            self.owner[old as usize] = UNMAPPED;
            self.change_valid(old / self.pages_per_block, -1);
        }
        self.map[lpn as usize] = physical;
        self.owner[physical as usize] = lpn;
        let block = physical / self.pages_per_block;
        self.valid[block as usize] += 1;
        if self.written[block as usize] == self.pages_per_block {
            // Full: no longer the block being filled, and a candidate victim from now on.
            self.active = None;
            self.full_by_valid[self.valid[block as usize] as usize].insert(block);
        }
        true
    }

    /// Pages a host write can still take (the reserved blocks excluded).
    pub fn host_writable_pages(&self) -> u64 {
        let active = self.active.map_or(0, |block| {
            self.pages_per_block - self.written[block as usize]
        });
        let free = self.free.len().saturating_sub(RESERVED_BLOCKS) as u64;
        u64::from(active) + free * u64::from(self.pages_per_block)
    }

    fn is_full(&self, block: u32) -> bool {
        self.written[block as usize] == self.pages_per_block && Some(block) != self.active
    }

    fn change_valid(&mut self, block: u32, delta: i32) {
        let before = self.valid[block as usize];
        let after = before
            .checked_add_signed(delta)
            .expect("valid count in range");
        if self.is_full(block) {
            self.full_by_valid[before as usize].remove(&block);
            self.full_by_valid[after as usize].insert(block);
        }
        self.valid[block as usize] = after;
    }

    fn allocate(&mut self, relocation: bool) -> Option<u32> {
        let has_room = |block: u32| self.written[block as usize] < self.pages_per_block;
        let block = match self.active.filter(|&block| has_room(block)) {
            Some(block) => block,
            None => {
                if self.free.len() <= RESERVED_BLOCKS && !relocation {
                    return None;
                }
                let block = self.free.pop_front()?;
                self.active = Some(block);
                block
            }
        };
        let page = self.written[block as usize];
        self.written[block as usize] += 1;
        Some(block * self.pages_per_block + page)
    }

    /// Greedy victim: the full block (not the one being filled) with the fewest valid pages,
    /// lowest index on ties; `None` when no full block has an invalid page.
    pub fn pick_victim(&self) -> Option<u32> {
        self.full_by_valid[..self.pages_per_block as usize]
            .iter()
            .find_map(|blocks| blocks.first().copied())
    }

    /// The logical pages `block` holds, in page order.
    pub fn valid_pages(&self, block: u32) -> Vec<u32> {
        let start = (block * self.pages_per_block) as usize;
        self.owner[start..start + self.pages_per_block as usize]
            .iter()
            .copied()
            .filter(|&lpn| lpn != UNMAPPED)
            .collect()
    }

    pub fn valid_count(&self, block: u32) -> u32 {
        self.valid[block as usize]
    }

    /// Erases `block`, which must hold no valid page, and frees it.
    pub fn erase(&mut self, block: u32) {
        assert_eq!(
            self.valid[block as usize], 0,
            "erasing block {block} with valid pages"
        );
        assert!(
            self.is_full(block),
            "erasing block {block}, which is not full"
        );
        self.full_by_valid[0].remove(&block);
        self.written[block as usize] = 0;
        self.free.push_back(block);
        self.erases += 1;
    }

    /// Every invariant of the module documentation, or the first one broken.
    pub fn check(&self) -> Result<(), String> {
        for (lpn, &physical) in self.map.iter().enumerate() {
            if physical != UNMAPPED && self.owner[physical as usize] != lpn as u32 {
                return Err(format!(
                    "logical page {lpn} maps to {physical}, owned by another"
                ));
            }
        }
        let mut valid = vec![0u32; self.valid.len()];
        for (physical, &lpn) in self.owner.iter().enumerate() {
            if lpn != UNMAPPED {
                if self.map[lpn as usize] != physical as u32 {
                    return Err(format!(
                        "physical page {physical} owned by {lpn}, not mapped"
                    ));
                }
                valid[physical / self.pages_per_block as usize] += 1;
            }
        }
        if valid != self.valid {
            return Err("valid counts differ from the pages owned".into());
        }
        for &block in &self.free {
            if self.written[block as usize] != 0 {
                return Err(format!("free block {block} has written pages"));
            }
        }
        let partial = (0..self.written.len() as u32).filter(|&block| {
            let written = self.written[block as usize];
            written != 0 && written != self.pages_per_block
        });
        for block in partial {
            if Some(block) != self.active {
                return Err(format!("block {block} is partly written and not active"));
            }
        }
        for block in 0..self.valid.len() as u32 {
            let listed = self.full_by_valid[self.valid[block as usize] as usize].contains(&block);
            if listed != self.is_full(block) {
                return Err(format!(
                    "block {block}: victim list disagrees with its state"
                ));
            }
        }
        let listed: usize = self.full_by_valid.iter().map(BTreeSet::len).sum();
        let full = (0..self.valid.len() as u32)
            .filter(|&b| self.is_full(b))
            .count();
        if listed != full {
            return Err("a block is listed under a valid count it does not have".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> FlashConfig {
        FlashConfig {
            blocks: 8,
            pages_per_block: 4,
            over_provision_fraction: 0.5,
            ..FlashConfig::DEFAULT
        }
    }

    #[test]
    fn a_configuration_without_room_to_relocate_is_refused() {
        let tight = FlashConfig {
            over_provision_fraction: 0.05,
            ..small()
        };
        assert!(Ftl::new(&tight).is_err());
        assert!(Ftl::new(&small()).is_ok());
        let nan = FlashConfig {
            timings: FlashTimings {
                page_read_us: f64::NAN,
                ..FlashTimings::SLIDES
            },
            ..small()
        };
        assert!(Ftl::new(&nan).is_err());
    }

    #[test]
    fn an_overwrite_goes_out_of_place_and_invalidates_the_old_copy() {
        let mut ftl = Ftl::new(&small()).unwrap();
        assert!(ftl.write(3, false));
        let first = ftl.block_of(3).unwrap();
        for lpn in [0, 1, 2, 3] {
            assert!(ftl.write(lpn, false));
            ftl.check().unwrap();
        }
        assert_eq!(ftl.valid_count(first), 3, "page 3's first copy is invalid");
        assert_eq!(ftl.pick_victim(), Some(first));
        assert_eq!(ftl.valid_pages(first), vec![0, 1, 2]);
    }

    #[test]
    fn host_writes_leave_the_reserved_block_to_relocation() {
        let config = small();
        let mut ftl = Ftl::new(&config).unwrap();
        let mut written = 0u64;
        // Overwrite the same 16 logical pages until host writes are refused.
        while ftl.write((written % 16) as u32, false) {
            written += 1;
            ftl.check().unwrap();
        }
        assert_eq!(ftl.free_blocks(), RESERVED_BLOCKS as u64);
        let victim = ftl.pick_victim().expect("garbage to collect");
        for lpn in ftl.valid_pages(victim) {
            assert!(ftl.write(lpn, true), "relocation takes the reserve");
        }
        ftl.erase(victim);
        ftl.check().unwrap();
        assert!(ftl.write(0, false), "space again after one collection");
    }

    #[test]
    #[should_panic(expected = "with valid pages")]
    fn erasing_a_block_with_valid_pages_is_a_broken_invariant() {
        let mut ftl = Ftl::new(&small()).unwrap();
        for lpn in 0..5 {
            ftl.write(lpn, false);
        }
        ftl.erase(ftl.block_of(0).unwrap());
    }
}
