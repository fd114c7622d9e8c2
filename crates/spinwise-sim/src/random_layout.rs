//! The random straw-man layout of Pelican §2.2: each blob on k + r disks chosen by a greedy —
//! pick a disk uniformly at random, remove every disk that is domain-conflicting with it, repeat
//! until k + r disks are chosen.
//!
//! Domain-conflicting is taken in its simplest sound form: two disks conflict when they share a
//! domain of any hard resource (on Pelican, a tray's power or a cooling domain). A set is then
//! one disk per hard domain at most, so on every rack the parser accepts (each hard domain lets
//! at least one disk spin up) the whole set can spin at once.
//!
//! The blobs are summarised by [`PLACEMENT_SETS`] independent sets; a read picks one uniformly,
//! standing for "uniform over stored blobs" when every set holds as many blobs. 4,096 sets on
//! Pelican's 1,152 disks put each disk in ~64 sets, so two sets share disks and domains as often
//! as random blobs do, while building them costs a few milliseconds.
//!
//! Invariants: every set has exactly k + r distinct disks, pairwise without a common hard domain;
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
    let hard: Vec<usize> = rack.hard_resources().map(|(index, _)| index).collect();
    let mut blocked = vec![false; rack.disk_count()];
    (0..sets)
        .map(|_| {
            blocked.fill(false);
            let set = greedy_set(rack, &hard, width, &mut blocked, &mut rng)?;
            Ok(set)
        })
        .collect()
}

/// One set: pick a free disk, block every disk sharing a hard domain with it, repeat.
fn greedy_set(
    rack: &Rack,
    hard: &[usize],
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
        for &resource in hard {
            let resource = &rack.resources[resource];
            let domain = resource.domain_of[disk as usize] as usize;
            for &other in &resource.domains[domain] {
                blocked[other as usize] = true;
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
