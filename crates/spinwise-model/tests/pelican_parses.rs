//! The Pelican preset parses into the rack the paper describes.

use spinwise_model::parse_rack;

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
}
