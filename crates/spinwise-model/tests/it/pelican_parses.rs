//! The Pelican preset parses into the rack the paper describes, with its two servers.

use spinwise_model::{Servers, parse_rack};

#[test]
fn pelican_preset_has_paper_geometry() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../presets/pelican.toml"
    ))
    .unwrap();
    let rack = parse_rack("pelican.toml", &text).unwrap();
    assert_eq!(rack.disk_count(), 1152);
    let power = &rack.resources[rack.resource_index("power").unwrap()];
    assert_eq!(power.domains.len(), 72);
    assert_eq!(power.disks_at_highest_per_domain(), Some(2));
    let cooling = &rack.resources[rack.resource_index("cooling").unwrap()];
    assert_eq!(cooling.domains.len(), 96);
    assert_eq!(cooling.disks_at_highest_per_domain(), Some(1));
    let vibration = &rack.resources[rack.resource_index("vibration").unwrap()];
    assert_eq!(vibration.domains.len(), 576);
    assert_eq!(rack.spin_up_path().len(), 3);
    let servers = rack.servers();
    assert_eq!(servers.count, 2, "two servers, each with half the disks");
    assert_eq!(servers.of_disk.iter().filter(|s| **s == 1).count(), 576);
}

#[test]
fn a_read_leaves_by_the_server_holding_most_of_its_disks_the_first_on_a_tie() {
    let servers = Servers {
        of_disk: vec![0, 0, 1, 1, 1, 2],
        count: 3,
    };
    assert_eq!(servers.read_server(&[0, 2, 3]), 1);
    assert_eq!(servers.read_server(&[0, 1, 2, 3]), 0);
    assert_eq!(servers.read_server(&[5, 2]), 1);
    assert_eq!(servers.read_server(&[5]), 2);
    assert_eq!(servers.read_server(&[]), 0);
}
