//! The random straw-man layout of Pelican §2.2: each blob on k + r disks chosen by a greedy —
//! pick a disk uniformly at random, remove every disk that is domain-conflicting with it, repeat
//! until k + r disks are chosen.
//!
//! Domain-conflicting, for a set being built: a disk conflicts with the set when one of its hard
//! domains already holds as many chosen disks as its budget lets be in the costliest state at once
//! (Flamingo eq. 1, `Resource::disks_at_highest_per_domain`; a resource that never binds has no
//! limit). Where a domain lets one disk spin (Pelican's cooling columns, trays' power) this is
//! Pelican's rule — two disks sharing the domain conflict — and where it lets more (the dense
//! JBOD's one enclosure-wide power domain, twelve spin-ups) it is what lets a set exist at all.
//! Either way every set can spin at once on a resting rack.
//!
//! The blobs are summarised by [`PLACEMENT_SETS`] independent sets; a read picks one uniformly,
//! standing for "uniform over stored blobs" when every set holds as many blobs. 4,096 sets on
//! Pelican's 1,152 disks put each disk in ~64 sets, so two sets share disks and domains as often
//! as random blobs do, while building them costs a few milliseconds.
//!
//! Invariants: every set has exactly k + r distinct disks, no hard domain holding more of them
//! than it lets be at the costliest state;
//! the sets depend only on the rack, the width and the seed (a ChaCha8 stream of its own, so the
//! workload's draws are not shifted by the layout's).

use crate::config::SimError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spinwise_model::{DiskIndex, Rack};

/// Placement sets built for a run of the random layout.
pub const PLACEMENT_SETS: usize = 4_096;

/// Tries of uniform rejection sampling before falling back to listing the free disks (both draw
/// uniformly from the free disks, so mixing them keeps the pick uniform).
const REJECTION_TRIES: usize = 32;

/// `sets` placement sets of `width` disks each on `rack`, from `seed`.
pub fn random_placements(
    rack: &Rack,
    width: u32,
    sets: usize,
    seed: u64,
) -> Result<Vec<Vec<DiskIndex>>, SimError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Stream 1: the simulator's own generator uses stream 0 of the same seed.
    rng.set_stream(1);
    // Per hard resource: how many chosen disks each of its domains may hold.
    let limits: Vec<(usize, u64)> = rack
        .hard_resources()
        .filter_map(|(index, r)| r.disks_at_highest_per_domain().map(|m| (index, m)))
        .collect();
    let mut room: Vec<Vec<u64>> = limits
        .iter()
        .map(|(index, _)| vec![0; rack.resources[*index].domains.len()])
        .collect();
    let mut blocked = vec![false; rack.disk_count()];
    (0..sets)
        .map(|_| {
            blocked.fill(false);
            for (domains, (resource, limit)) in room.iter_mut().zip(&limits) {
                domains.fill(*limit);
                if *limit == 0 {
                    // Not even one disk of such a domain may spin: none can be chosen.
                    for disk in rack.resources[*resource].domains.iter().flatten() {
                        blocked[*disk as usize] = true;
                    }
                }
            }
            greedy_set(rack, &limits, &mut room, width, &mut blocked, &mut rng)
        })
        .collect()
}

/// One set: pick a free disk, take one place in each of its limited domains, block every disk of
/// a domain left without room; repeat.
fn greedy_set(
    rack: &Rack,
    limits: &[(usize, u64)],
    room: &mut [Vec<u64>],
    width: u32,
    blocked: &mut [bool],
    rng: &mut ChaCha8Rng,
) -> Result<Vec<DiskIndex>, SimError> {
    let mut set = Vec::with_capacity(width as usize);
    while set.len() < width as usize {
        let Some(disk) = pick_free(blocked, rng) else {
            return Err(SimError::RandomLayout {
                width,
                chosen: set.len() as u32,
            });
        };
        set.push(disk);
        blocked[disk as usize] = true;
        for ((resource, _), domains) in limits.iter().zip(room.iter_mut()) {
            let resource = &rack.resources[*resource];
            let domain = resource.domain_of[disk as usize] as usize;
            // A chosen disk's domains had room, or it would have been blocked.
            domains[domain] -= 1;
            if domains[domain] == 0 {
                for &other in &resource.domains[domain] {
                    blocked[other as usize] = true;
                }
            }
        }
    }
    Ok(set)
}

/// A uniformly random unblocked disk, if any.
fn pick_free(blocked: &[bool], rng: &mut ChaCha8Rng) -> Option<DiskIndex> {
    for _ in 0..REJECTION_TRIES {
        let disk = rng.random_range(0..blocked.len());
        if !blocked[disk] {
            return Some(disk as DiskIndex);
        }
    }
    let free: Vec<usize> = (0..blocked.len()).filter(|d| !blocked[*d]).collect();
    if free.is_empty() {
        return None;
    }
    Some(free[rng.random_range(0..free.len())] as DiskIndex)
}
