//! Where a blob goes: which group, and which of the group's disks hold its k + r stripe stacks
//! (Pelican §2.2). Pure: decisions from the rack, the layout and the free space the caller
//! reports; no IO.
//!
//! Disks: a blob's w = k + r stacks go to w healthy disks of the group with room for a stack,
//! most spare capacity first (ties: lower disk index, so the choice is deterministic), spread
//! evenly over every failure-domain type the rack marks `spread`: no domain instance holds more
//! than ⌈w / D⌉ stacks, D being the number of that type's instances among the group's disks,
//! when a greedy pass finds such a choice (several domain types can make the even caps clash),
//! and never more than r, so one failed component never takes more than r stacks of a blob (the
//! planner's single-fault availability rule, docs/durability.md). On Pelican's rack that is three
//! disks from each of the group's six backplanes, as the paper places them. A group whose disks
//! sit in too few instances for that gets [`PlacementError::Unspreadable`], never a blob that
//! one component failure would make unreadable.
//!
//! Groups: a group already spinning is preferred (its spin-up is paid; Pelican migrates when the
//! scheduler brings a group up), then the group with the most free space on its emptiest usable
//! disks, so blobs fill the rack evenly.

use spinwise_model::{DiskIndex, GroupIndex, Layout, Rack};
use std::collections::BTreeMap;

/// What the placer knows about one disk right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskRoom {
    pub free_bytes: u64,
    pub healthy: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error(
        "group {group} has only {usable} healthy disks with {stack_bytes} bytes free, a blob needs {width}"
    )]
    TooFewDisks {
        group: GroupIndex,
        usable: usize,
        width: u32,
        stack_bytes: u64,
    },
    #[error(
        "group {group}: no spread of {width} stacks keeps at most {cap} in each `{domain}` (usable disks are bunched in few of them)"
    )]
    Unspreadable {
        group: GroupIndex,
        width: u32,
        domain: String,
        cap: u32,
    },
    #[error("no group has {width} healthy disks with {stack_bytes} bytes free: the rack is full")]
    RackFull { width: u32, stack_bytes: u64 },
    #[error("group {group} is not in the layout ({groups} groups)")]
    UnknownGroup { group: GroupIndex, groups: usize },
}

/// One spread failure-domain type: the instance of each disk.
#[derive(Clone, Debug)]
struct SpreadDomain {
    name: String,
    instance_of: BTreeMap<DiskIndex, usize>,
}

/// The placer for one rack and layout.
#[derive(Clone, Debug)]
pub struct Placement {
    groups: Vec<Vec<DiskIndex>>,
    width: u32,
    /// r: the most stacks of a blob one failed component may take (single-fault availability).
    redundancy: u32,
    spread: Vec<SpreadDomain>,
}

impl Placement {
    pub fn new(rack: &Rack, layout: &Layout) -> Placement {
        let spread = rack
            .failure_domains
            .iter()
            .filter(|domain| domain.spread)
            .map(|domain| SpreadDomain {
                name: domain.name.clone(),
                instance_of: domain
                    .domains
                    .iter()
                    .enumerate()
                    .flat_map(|(instance, disks)| disks.iter().map(move |&disk| (disk, instance)))
                    .collect(),
            })
            .collect();
        // Layouts name disks by rack id; failure domains and the store by index.
        let index_of = |id: &u32| {
            let index = rack.disks.binary_search_by_key(id, |disk| disk.id);
            index.expect("the layout was verified against this rack") as DiskIndex
        };
        let groups = layout
            .groups
            .iter()
            .map(|ids| ids.iter().map(index_of).collect())
            .collect();
        Placement {
            groups,
            width: layout.erasure.stripe_width(),
            redundancy: layout.erasure.r.max(1),
            spread,
        }
    }

    /// Stripe stacks per blob (k + r).
    pub fn width(&self) -> u32 {
        self.width
    }

    /// The group's disks, by rack index.
    pub fn group_disks(&self, group: GroupIndex) -> Result<&[DiskIndex], PlacementError> {
        self.groups
            .get(group as usize)
            .map(Vec::as_slice)
            .ok_or(PlacementError::UnknownGroup {
                group,
                groups: self.groups.len(),
            })
    }

    /// The group's w disks for a blob whose stacks take `stack_bytes` each, in column order
    /// (most spare capacity first). `room` must cover the group's disks; missing disks count as
    /// unusable.
    pub fn choose_disks(
        &self,
        group: GroupIndex,
        stack_bytes: u64,
        room: &BTreeMap<DiskIndex, DiskRoom>,
    ) -> Result<Vec<DiskIndex>, PlacementError> {
        let members = self.group_disks(group)?;
        let mut usable: Vec<(u64, DiskIndex)> = members
            .iter()
            .filter_map(|disk| room.get(disk).map(|space| (*disk, *space)))
            .filter(|(_, space)| space.healthy && space.free_bytes >= stack_bytes)
            .map(|(disk, space)| (space.free_bytes, disk))
            .collect();
        if usable.len() < self.width as usize {
            return Err(PlacementError::TooFewDisks {
                group,
                usable: usable.len(),
                width: self.width,
                stack_bytes,
            });
        }
        usable.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let even = self.caps(members);
        let at_most_r = vec![self.redundancy; self.spread.len()];
        // Even spread when the greedy pass finds one; otherwise anything within r per component.
        self.greedy(&usable, &even)
            .or_else(|_| self.greedy(&usable, &at_most_r))
            .map_err(|(domain, cap)| PlacementError::Unspreadable {
                group,
                width: self.width,
                domain,
                cap,
            })
    }

    /// True when `disks` (one blob's stacks) put at most r in every spread failure component:
    /// the rule a rebuild target must keep (single-fault availability), used by the repairer.
    pub fn within_redundancy(&self, disks: &[DiskIndex]) -> bool {
        let mut counts: Vec<BTreeMap<usize, u32>> = vec![BTreeMap::new(); self.spread.len()];
        for &disk in disks {
            self.count(disk, &mut counts);
        }
        counts
            .iter()
            .all(|components| components.values().all(|&count| count <= self.redundancy))
    }

    /// Takes disks in `usable` order while every spread component stays within its cap; on
    /// failure names the domain type with the most full components.
    fn greedy(
        &self,
        usable: &[(u64, DiskIndex)],
        caps: &[u32],
    ) -> Result<Vec<DiskIndex>, (String, u32)> {
        let mut counts: Vec<BTreeMap<usize, u32>> = vec![BTreeMap::new(); self.spread.len()];
        let mut chosen = Vec::with_capacity(self.width as usize);
        for &(_, disk) in usable {
            if chosen.len() == self.width as usize {
                break;
            }
            if self.fits_caps(disk, caps, &counts) {
                self.count(disk, &mut counts);
                chosen.push(disk);
            }
        }
        if chosen.len() < self.width as usize {
            return Err(self.tightest_domain(caps, &counts));
        }
        Ok(chosen)
    }

    /// The group for a new blob: a spinning one with room if any (lowest index first), else the
    /// one whose w-th emptiest usable disk has the most room.
    pub fn choose_group(
        &self,
        stack_bytes: u64,
        room: &BTreeMap<DiskIndex, DiskRoom>,
        spinning: &[GroupIndex],
    ) -> Result<GroupIndex, PlacementError> {
        let fits = |group: GroupIndex| self.choose_disks(group, stack_bytes, room).is_ok();
        if let Some(&group) = spinning.iter().filter(|&&g| fits(g)).min() {
            return Ok(group);
        }
        (0..self.groups.len() as GroupIndex)
            .filter(|&group| fits(group))
            .max_by_key(|&group| (self.wth_largest_free(group, room), std::cmp::Reverse(group)))
            .ok_or(PlacementError::RackFull {
                width: self.width,
                stack_bytes,
            })
    }

    fn wth_largest_free(&self, group: GroupIndex, room: &BTreeMap<DiskIndex, DiskRoom>) -> u64 {
        let mut free: Vec<u64> = self.groups[group as usize]
            .iter()
            .filter_map(|disk| room.get(disk))
            .filter(|space| space.healthy)
            .map(|space| space.free_bytes)
            .collect();
        free.sort_unstable_by(|a, b| b.cmp(a));
        free.get(self.width as usize - 1).copied().unwrap_or(0)
    }

    /// ⌈w / D⌉ per spread domain type, D its instances among the group's disks.
    fn caps(&self, members: &[DiskIndex]) -> Vec<u32> {
        self.spread
            .iter()
            .map(|domain| {
                let instances: std::collections::BTreeSet<usize> = members
                    .iter()
                    .filter_map(|disk| domain.instance_of.get(disk).copied())
                    .collect();
                let even = self.width.div_ceil(instances.len().max(1) as u32);
                even.min(self.redundancy)
            })
            .collect()
    }

    fn fits_caps(&self, disk: DiskIndex, caps: &[u32], counts: &[BTreeMap<usize, u32>]) -> bool {
        self.spread.iter().enumerate().all(|(index, domain)| {
            domain.instance_of.get(&disk).is_none_or(|instance| {
                counts[index].get(instance).copied().unwrap_or(0) < caps[index]
            })
        })
    }

    fn count(&self, disk: DiskIndex, counts: &mut [BTreeMap<usize, u32>]) {
        for (index, domain) in self.spread.iter().enumerate() {
            if let Some(&instance) = domain.instance_of.get(&disk) {
                *counts[index].entry(instance).or_insert(0) += 1;
            }
        }
    }

    /// The domain type with the most full instances, for the error message.
    fn tightest_domain(&self, caps: &[u32], counts: &[BTreeMap<usize, u32>]) -> (String, u32) {
        self.spread
            .iter()
            .enumerate()
            .max_by_key(|(index, _)| {
                counts[*index]
                    .values()
                    .filter(|&&n| n >= caps[*index])
                    .count()
            })
            .map(|(index, domain)| (domain.name.clone(), caps[index]))
            .unwrap_or_else(|| ("disk".to_string(), 1))
    }
}
