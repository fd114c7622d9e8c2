//! Pelican's hand-designed layout (Pelican §2.2), reconstructed so it can be compared with the
//! synthesized one: 48 groups of 24 disks in 4 classes of 12.
//!
//! Class c covers one half of the width (x < 3 or x ≥ 3) and one half of the depth (y < 8 or
//! y ≥ 8): 3 × 8 cooling columns of 12 disks. Group g of a class takes, in every one of its 24
//! cooling columns (x, y), the disk at height z = (g + y_i + 4 x_i) mod 12, where x_i and y_i are
//! the column's position inside the class. So:
//! - each cooling column gives each of the class's 12 groups exactly one disk: the 12 groups fully
//!   collide and each uses the column's budget of one;
//! - a group has at most one disk per tray (its 8 depths give 8 distinct heights per x), so two
//!   classes sharing a tray (same x-half, other y-half) stay within its budget of two;
//! - no two disks of a group share a back-to-back vibration pair (different heights);
//! - the heights cover every z twice, so each of the six chassis (z pairs) holds four disks of
//!   every group, from which a blob takes three (Pelican's 15 + 3 across six backplanes).
//!
//! Classes of different x-halves share no domain at all. The paper's classes cannot be fully
//! domain-disjoint on this geometry (a class closed under trays and cooling columns would be
//! 1.5 x-slices); the tray budget of two is what lets two classes share trays.

use crate::analysis::analyse;
use crate::durability::{ErasureCandidate, lifetime_loss_probability, spares_for_group};
use crate::error::PlanError;
use crate::plan::{Assembly, Plan, Sizing, finish};
use spinwise_model::{DiskIndex, Rack};

const WIDTH: u32 = 6;
const DEPTH: u32 = 16;
const HEIGHT: u32 = 12;
const GROUPS_PER_CLASS: u32 = 12;

/// Plans `rack` with Pelican's hand-designed groups and Pelican's 15 + 3 code.
pub fn pelican_layout(rack: &Rack) -> Result<Plan, PlanError> {
    let axes: Vec<(&str, u32)> = rack
        .axes
        .iter()
        .map(|a| (a.name.as_str(), a.size))
        .collect();
    if axes != [("x", WIDTH), ("y", DEPTH), ("z", HEIGHT)] {
        return Err(PlanError::NotPelicanGeometry {
            reason: format!("axes are {axes:?}"),
        });
    }
    if rack.disk_count() != (WIDTH * DEPTH * HEIGHT) as usize {
        return Err(PlanError::NotPelicanGeometry {
            reason: format!("{} disks, not a full grid", rack.disk_count()),
        });
    }
    let mut disk_at = vec![0 as DiskIndex; rack.disk_count()];
    for (index, disk) in rack.disks.iter().enumerate() {
        let [x, y, z] = [
            disk.coordinates[0],
            disk.coordinates[1],
            disk.coordinates[2],
        ];
        disk_at[((x * DEPTH + y) * HEIGHT + z) as usize] = index as DiskIndex;
    }
    let mut groups = Vec::new();
    let mut classes = Vec::new();
    for (class, (x_half, y_half)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
        for group in 0..GROUPS_PER_CLASS {
            let mut members = Vec::with_capacity(24);
            for x_offset in 0..3 {
                for y_offset in 0..8 {
                    let (x, y) = (3 * x_half + x_offset, 8 * y_half + y_offset);
                    let z = (group + y_offset + 4 * x_offset) % HEIGHT;
                    members.push(disk_at[((x * DEPTH + y) * HEIGHT + z) as usize]);
                }
            }
            members.sort_unstable();
            groups.push(members);
            classes.push(class as u32);
        }
    }
    let sizing = Sizing {
        group_size: 24,
        erasure: ErasureCandidate {
            k: 15,
            r: 3,
            lifetime_loss_probability: lifetime_loss_probability(rack, 15, 3),
        },
        spares: spares_for_group(rack, 24),
    };
    let assembly = Assembly {
        groups,
        classes: Some(classes),
        method: "pelican-manual (Pelican §2.2)".into(),
        attempts: 1,
    };
    finish(rack, analyse(rack), sizing, assembly)
}
