//! Shared helpers for the scheduler tests: planned presets and the independent, disk-level budget
//! checker (it reads the rack's domains, not the layout's group constraints).

#![allow(dead_code)] // each test crate uses a different subset

use spinwise_model::{Amount, Layout, Rack, ResourceKind, parse_rack};
use spinwise_sched::budget::GroupBudget;
use std::sync::OnceLock;

pub fn preset(name: &str) -> (Rack, Layout) {
    let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let rack = parse_rack(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    (rack, layout)
}

/// OCP, Pelican and the 60-bay JBOD, planned once per test binary.
pub fn planned() -> &'static [(Rack, Layout)] {
    static PLANNED: OnceLock<Vec<(Rack, Layout)>> = OnceLock::new();
    PLANNED.get_or_init(|| {
        ["ocp-cold-storage", "pelican", "dense-jbod-60"]
            .map(preset)
            .to_vec()
    })
}

/// Every hard domain whose draw exceeds its budget with each disk in its group's state.
pub fn disk_level_violations(rack: &Rack, layout: &Layout, books: &GroupBudget) -> Vec<String> {
    let mut state_of_disk = vec![rack.resting_state(); rack.disk_count()];
    for (group, ids) in layout.groups.iter().enumerate() {
        for id in ids {
            let disk = rack.disks.binary_search_by_key(id, |d| d.id).unwrap();
            state_of_disk[disk] = books.state(group as u32);
        }
    }
    let mut violations = Vec::new();
    for resource in rack
        .resources
        .iter()
        .filter(|r| r.kind == ResourceKind::Hard)
    {
        for (index, domain) in resource.domains.iter().enumerate() {
            let draw = domain.iter().fold(Amount::ZERO, |sum, disk| {
                sum + resource.cost[state_of_disk[*disk as usize]]
            });
            if draw > resource.budget {
                violations.push(format!(
                    "{} domain {index}: {draw} > {}",
                    resource.name, resource.budget
                ));
            }
        }
    }
    violations
}
