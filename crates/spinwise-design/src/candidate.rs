//! A candidate rack: one enclosure's rack description filled with one catalogue disk model, and
//! the planner's layout for it.
//!
//! The enclosure keeps everything that is the enclosure's: geometry, states, failure domains,
//! resource domains and budgets (its power supplies do not change with the disks). The disk
//! model brings what is the disk's: capacity, bandwidth, failure rate, its spin-up time (the
//! enclosure's distribution rescaled to the disk's mean), its watts in every state of every
//! resource measured in W, and the per-state cost of every bandwidth resource (Gbps, MB/s)
//! rescaled by the bandwidth ratio. The edit is made on the TOML text and the result parsed
//! again by spinwise-model, so a candidate passes every check a hand-written rack file does; a
//! disk whose standby draw alone breaks the enclosure's budget is refused there, not here.

use crate::catalogue::DiskModel;
use serde::Serialize;
use spinwise_model::{Layout, Rack, parse_rack};
use thiserror::Error;
use toml::{Table, Value};

/// Why an enclosure and a disk make no rack Spinwise can run.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum CandidateError {
    #[error("the enclosure's rack: {0}")]
    Enclosure(String),
    #[error("disk `{disk}` names no watts for state `{state}` of the enclosure")]
    MissingState { disk: String, state: String },
    #[error("the filled rack is not valid: {0}")]
    Rack(String),
    #[error("the planner found no layout: {0}")]
    Plan(String),
}

/// A planned candidate rack and the figures the design needs from its layout.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub rack: Rack,
    pub layout: Layout,
    pub figures: RackFigures,
}

/// What a candidate's layout means in capacity and power.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RackFigures {
    pub disks: u32,
    pub group_size: u32,
    pub k: u32,
    pub r: u32,
    pub f: u32,
    pub groups: u32,
    /// Groups that may be active at once (the layout's witness).
    pub max_spinning_groups: u32,
    /// Servers the rack's `server` failure domain names (1 without one).
    pub servers: u32,
    /// User data the rack holds: every non-spare disk's capacity × k / (k + r), TB.
    pub usable_tb: f64,
    /// The most the disks may draw at once: the tightest total of the rack's W resources
    /// (budget × domains), or every disk at its costliest state without one.
    pub peak_disk_w: f64,
}

/// Fills `enclosure_text` (a rack file's text) with `disk` and plans it.
pub fn plan_candidate(
    enclosure_name: &str,
    enclosure_text: &str,
    disk: &DiskModel,
) -> Result<Candidate, CandidateError> {
    let original = parse_rack(enclosure_name, enclosure_text)
        .map_err(|error| CandidateError::Enclosure(error.to_string()))?;
    let text = filled_text(enclosure_name, enclosure_text, &original, disk)?;
    let rack = parse_rack(&format!("{enclosure_name}+{}", disk.name), &text)
        .map_err(|error| CandidateError::Rack(error.to_string()))?;
    let plan =
        spinwise_plan::plan(&rack).map_err(|error| CandidateError::Plan(error.to_string()))?;
    let figures = figures(&rack, &plan.layout, disk.capacity_tb);
    Ok(Candidate {
        rack,
        layout: plan.layout,
        figures,
    })
}

/// The enclosure's TOML with the disk model's figures written in.
fn filled_text(
    enclosure_name: &str,
    text: &str,
    original: &Rack,
    disk: &DiskModel,
) -> Result<String, CandidateError> {
    let mut table: Table = text
        .parse()
        .map_err(|error: toml::de::Error| CandidateError::Enclosure(error.to_string()))?;
    let rack = section(&mut table, "rack")?;
    rack.insert(
        "name".into(),
        Value::String(format!("{enclosure_name}+{}", disk.name)),
    );
    let old_bandwidth = original.disk_model.bandwidth_mb_per_s;
    let spin_up_factor = disk.spin_up_s / original.disk_model.spin_up_latency_s.mean();
    let disk_section = section(&mut table, "disk")?;
    disk_section.insert("capacity_tb".into(), Value::Float(disk.capacity_tb));
    disk_section.insert(
        "bandwidth_mb_per_s".into(),
        Value::Float(disk.bandwidth_mb_per_s),
    );
    disk_section.insert(
        "annual_failure_rate".into(),
        Value::Float(disk.annual_failure_rate),
    );
    if let Some(spin_up) = disk_section.get_mut("spin_up_latency_s") {
        scale_numbers(spin_up, spin_up_factor);
    }
    let states: Vec<String> = original.states.iter().map(|s| s.name.clone()).collect();
    let bandwidth_factor = disk.bandwidth_mb_per_s / old_bandwidth;
    let resources = table
        .get_mut("resources")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| CandidateError::Enclosure("no [[resources]]".into()))?;
    for resource in resources.iter_mut().filter_map(Value::as_table_mut) {
        let unit = resource.get("unit").and_then(Value::as_str).unwrap_or("");
        match unit {
            "W" => {
                resource.insert("cost".into(), Value::Table(watts_table(disk, &states)?));
            }
            "Gbps" | "MB/s" => {
                if let Some(cost) = resource.get_mut("cost") {
                    scale_numbers(cost, bandwidth_factor);
                }
            }
            _ => {}
        }
    }
    Ok(toml::to_string(&table).expect("a parsed TOML table serializes"))
}

fn section<'a>(table: &'a mut Table, name: &str) -> Result<&'a mut Table, CandidateError> {
    table
        .get_mut(name)
        .and_then(Value::as_table_mut)
        .ok_or_else(|| CandidateError::Enclosure(format!("no [{name}] section")))
}

fn watts_table(disk: &DiskModel, states: &[String]) -> Result<Table, CandidateError> {
    states
        .iter()
        .map(|state| match disk.watts.get(state) {
            Some(&watts) => Ok((state.clone(), Value::Float(watts))),
            None => Err(CandidateError::MissingState {
                disk: disk.name.clone(),
                state: state.clone(),
            }),
        })
        .collect()
}

/// Multiplies every number in `value` (a number, or a distribution's table) by `factor`;
/// strings (a distribution's name) stay.
fn scale_numbers(value: &mut Value, factor: f64) {
    match value {
        Value::Float(number) => *number *= factor,
        Value::Integer(number) => *value = Value::Float(*number as f64 * factor),
        Value::Table(table) => {
            for (_, inner) in table.iter_mut() {
                scale_numbers(inner, factor);
            }
        }
        _ => {}
    }
}

fn figures(rack: &Rack, layout: &Layout, capacity_tb: f64) -> RackFigures {
    let erasure = &layout.erasure;
    let groups = layout.groups.len() as u32;
    let disks = rack.disk_count() as u32;
    let data_disks = f64::from(disks - groups * erasure.f);
    let usable_tb =
        data_disks * capacity_tb * f64::from(erasure.k) / f64::from(erasure.k + erasure.r);
    RackFigures {
        disks,
        group_size: layout.group_size,
        k: erasure.k,
        r: erasure.r,
        f: erasure.f,
        groups,
        max_spinning_groups: layout.max_active_groups,
        servers: rack.servers().count as u32,
        usable_tb,
        peak_disk_w: peak_disk_w(rack),
    }
}

fn peak_disk_w(rack: &Rack) -> f64 {
    let costliest = |resource: &spinwise_model::Resource| {
        resource
            .cost
            .iter()
            .map(|amount| amount.as_f64())
            .fold(0.0, f64::max)
    };
    rack.hard_resources()
        .filter(|(_, resource)| resource.unit == "W")
        .map(|(_, resource)| resource.budget.as_f64() * resource.domains.len() as f64)
        .reduce(f64::min)
        .unwrap_or_else(|| {
            rack.resources
                .iter()
                .find(|r| r.unit == "W")
                .map_or(0.0, |r| costliest(r) * rack.disk_count() as f64)
        })
}
