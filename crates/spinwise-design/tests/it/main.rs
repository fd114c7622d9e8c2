//! Every integration test of spinwise-design, one module per concern, built as one binary.

mod candidates;
mod catalogues;
mod designs;
mod programs;

use spinwise_design::DesignFile;

/// A small catalogue: one enclosure (dense-jbod-60), two disks, one server, two NICs, asking
/// for `capacity_tb` at `read_mb_per_s` of fixed 1 GB reads.
pub fn small_design(capacity_tb: f64, read_mb_per_s: f64) -> DesignFile {
    DesignFile::parse(&format!(
        r#"
[requirements]
capacity_tb = {capacity_tb}
read_mb_per_s = {read_mb_per_s}
workload = {{ blob_bytes = 1000000000 }}

[economics]
electricity_per_kwh = 0.15
service_life_years = 5

[[disks]]
name = "as-preset"
capacity_tb = 18.0
price = 300.0
bandwidth_mb_per_s = 250
watts = {{ standby = 0.8, spinning_up = 25.0, active = 7.0 }}
spin_up_s = 20.0
annual_failure_rate = 0.02

[[disks]]
name = "small-cheap"
capacity_tb = 8.0
price = 90.0
bandwidth_mb_per_s = 200
watts = {{ standby = 0.8, spinning_up = 25.0, active = 6.0 }}
spin_up_s = 15.0
annual_failure_rate = 0.03

[[enclosures]]
name = "jbod"
rack = "dense-jbod-60"
price = 6000.0
watts = 150.0

[[servers]]
name = "server"
price = 3000.0
watts = 150.0
max_gbps = 40.0

[[nics]]
name = "10g"
gbps = 10.0
price = 150.0
watts = 8.0

[[nics]]
name = "1g"
gbps = 1.0
price = 20.0
watts = 2.0
"#
    ))
    .expect("the small design parses")
}

/// The text of a shipped rack preset.
pub fn preset(name: &str) -> String {
    spinwise_model::presets::text(name)
        .expect("a shipped preset")
        .to_string()
}
