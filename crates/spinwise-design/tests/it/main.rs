//! Every integration test of spinwise-design, one module per concern, built as one binary.

mod candidates;
mod catalogues;
mod designs;
mod programs;

use spinwise_design::DesignFile;
use spinwise_design::catalogue::Nic;

/// The small catalogue the CLI's tests use too (data/small-design.toml: dense-jbod-60, two
/// disks, one server), with a second NIC of 1 Gbps, asking for `capacity_tb` at `read_mb_per_s`
/// of fixed 1 GB reads and no first-byte target.
pub fn small_design(capacity_tb: f64, read_mb_per_s: f64) -> DesignFile {
    let mut file = DesignFile::parse(include_str!("../../data/small-design.toml"))
        .expect("the small design parses");
    let requirements = &mut file.requirements;
    requirements.capacity_tb = capacity_tb;
    requirements.read_mb_per_s = read_mb_per_s;
    requirements.first_byte_p99_s = None;
    file.nics.push(Nic {
        name: "1g".into(),
        gbps: 1.0,
        price: 20.0,
        watts: 2.0,
    });
    file.validate().expect("still valid");
    file
}

/// The text of a shipped rack preset.
pub fn preset(name: &str) -> String {
    spinwise_model::presets::text(name)
        .expect("a shipped preset")
        .to_string()
}
