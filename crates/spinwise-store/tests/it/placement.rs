//! Placement on the real presets: Pelican's three-per-backplane spread, most spare capacity
//! first, failed and full disks skipped, and typed refusals when a group cannot take a blob.

use spinwise_model::{DiskIndex, GroupIndex, Layout, Rack, parse_rack};
use spinwise_store::placement::{DiskRoom, Placement, PlacementError};
use std::collections::BTreeMap;

fn preset(name: &str) -> (Rack, Layout) {
    let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("preset file");
    let rack = parse_rack(&path, &text).expect("preset parses");
    let layout = spinwise_plan::plan(&rack).expect("preset plans").layout;
    (rack, layout)
}

fn uniform_room(layout: &Layout, free_bytes: u64) -> BTreeMap<DiskIndex, DiskRoom> {
    (0..layout.disks)
        .map(|disk| {
            (
                disk,
                DiskRoom {
                    free_bytes,
                    healthy: true,
                },
            )
        })
        .collect()
}

fn domain_counts(rack: &Rack, domain: &str, disks: &[DiskIndex]) -> Vec<usize> {
    let domain = rack
        .failure_domains
        .iter()
        .find(|d| d.name == domain)
        .unwrap();
    domain
        .domains
        .iter()
        .map(|members| disks.iter().filter(|d| members.contains(d)).count())
        .filter(|&count| count > 0)
        .collect()
}

#[test]
fn pelican_blobs_take_three_disks_from_each_of_six_backplanes() {
    // Pelican's hand-designed layout (§2.2): each group has four disks on each of six backplanes.
    let (rack, _) = preset("pelican");
    let layout = spinwise_plan::pelican::pelican_layout(&rack)
        .unwrap()
        .layout;
    let placement = Placement::new(&rack, &layout);
    let room = uniform_room(&layout, 1 << 40);
    for group in [0, 17, 47] {
        let disks = placement.choose_disks(group, 1 << 30, &room).unwrap();
        assert_eq!(disks.len(), 18);
        assert!(
            disks
                .iter()
                .all(|d| layout.groups[group as usize].contains(d))
        );
        let mut per_chassis = domain_counts(&rack, "chassis", &disks);
        per_chassis.sort();
        assert_eq!(per_chassis, vec![3; 6], "group {group}: {disks:?}");
    }
}

#[test]
fn the_disks_with_most_spare_capacity_are_chosen_first() {
    let (rack, layout) = preset("dense-jbod-60");
    let placement = Placement::new(&rack, &layout);
    let mut room = uniform_room(&layout, 1 << 40);
    let group: GroupIndex = 3;
    let members = layout.groups[group as usize].clone();
    for (rank, disk) in members.iter().enumerate() {
        room.get_mut(disk).unwrap().free_bytes = (1 << 40) - ((rank as u64) << 30);
    }
    let disks = placement.choose_disks(group, 1 << 30, &room).unwrap();
    assert_eq!(disks.len(), placement.width() as usize);
    // Columns in order of spare capacity: the ranks chosen are ascending, and the one left out
    // is the fullest disk that the spread rule lets go.
    let ranks: Vec<usize> = disks
        .iter()
        .map(|disk| members.iter().position(|m| m == disk).unwrap())
        .collect();
    assert!(ranks.windows(2).all(|pair| pair[0] < pair[1]), "{ranks:?}");
    let left_out = (0..members.len())
        .find(|rank| !ranks.contains(rank))
        .unwrap();
    if left_out != members.len() - 1 {
        // Passed over for a fuller disk only because its row already holds its share.
        let mut with_it = disks.clone();
        with_it.push(members[left_out]);
        let cap = placement
            .width()
            .div_ceil(domain_counts(&rack, "row", &members).len() as u32);
        assert!(
            domain_counts(&rack, "row", &with_it)
                .iter()
                .any(|&n| n as u32 > cap)
        );
    }
}

#[test]
fn failed_and_full_disks_are_never_chosen_and_too_few_is_a_typed_error() {
    let (rack, layout) = preset("dense-jbod-60");
    let placement = Placement::new(&rack, &layout);
    let mut room = uniform_room(&layout, 1 << 40);
    let members = layout.groups[0].clone();
    room.get_mut(&members[1]).unwrap().healthy = false;
    let disks = placement.choose_disks(0, 1 << 30, &room).unwrap();
    assert!(!disks.contains(&members[1]));
    room.get_mut(&members[2]).unwrap().free_bytes = 10;
    let refused = placement.choose_disks(0, 1 << 30, &room).unwrap_err();
    assert!(matches!(
        refused,
        PlacementError::TooFewDisks {
            group: 0,
            usable: 4,
            width: 5,
            ..
        }
    ));
}

#[test]
fn a_spinning_group_with_room_is_preferred_over_an_emptier_resting_one() {
    let (rack, layout) = preset("dense-jbod-60");
    let placement = Placement::new(&rack, &layout);
    let mut room = uniform_room(&layout, 1 << 40);
    for disk in &layout.groups[5] {
        room.get_mut(disk).unwrap().free_bytes = 1 << 32;
    }
    assert_eq!(placement.choose_group(1 << 30, &room, &[5]).unwrap(), 5);
    // Nothing spinning: the emptiest group wins (all equal but group 5: the lowest index).
    assert_eq!(placement.choose_group(1 << 30, &room, &[]).unwrap(), 0);
}

#[test]
fn a_full_rack_is_a_typed_error() {
    let (rack, layout) = preset("dense-jbod-60");
    let placement = Placement::new(&rack, &layout);
    let room = uniform_room(&layout, 1 << 20);
    let refused = placement.choose_group(1 << 30, &room, &[]).unwrap_err();
    assert!(matches!(refused, PlacementError::RackFull { width: 5, .. }));
}

#[test]
fn every_group_of_every_shipped_layout_takes_a_blob_with_at_most_r_stacks_per_component() {
    let names = [
        "dense-jbod-60",
        "ocp-cold-storage",
        "pelican",
        "pelican-prototype",
        "shelf-stack-480",
        "rack-e-1920",
    ];
    for name in names {
        let (rack, layout) = preset(name);
        let placement = Placement::new(&rack, &layout);
        let room = uniform_room(&layout, 1 << 40);
        for group in 0..layout.groups.len() as GroupIndex {
            let disks = placement
                .choose_disks(group, 1 << 30, &room)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            for domain in rack.failure_domains.iter().filter(|d| d.spread) {
                let worst = domain_counts(&rack, &domain.name, &disks).into_iter().max();
                assert!(
                    worst.unwrap_or(0) as u32 <= layout.erasure.r,
                    "{name} group {group}: {} holds {worst:?}",
                    domain.name
                );
            }
        }
    }
}
