//! Readers of layout files never panic: numbers of a real layout replaced by hostile values are
//! refused by `Layout::from_json`, or, if accepted, measured by `quality`, judged by `verify` and
//! bound to the rack by `Layout::group_disk_indices` (what the simulator and the store's driver
//! do first) without a panic (an overflow, an out-of-range index). Layout files come from users'
//! disks, so this is input like any other. Binding also refuses what it must: another rack's
//! layout, and a disk id the rack does not have.

use crate::common;

use proptest::prelude::*;
use spinwise_model::{BindError, Layout};
use spinwise_plan::{plan, quality, verify};
use std::sync::OnceLock;

fn ocp() -> &'static (spinwise_model::Rack, String) {
    static OCP: OnceLock<(spinwise_model::Rack, String)> = OnceLock::new();
    OCP.get_or_init(|| {
        let rack = common::preset("ocp-cold-storage");
        let layout = plan(&rack).expect("the OCP preset plans").layout.to_json();
        (rack, layout)
    })
}

/// Byte spans of the JSON numbers in `text`.
fn number_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric());
        if starts {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_digit() || matches!(bytes[i], b'.' | b'e' | b'-' | b'+'))
            {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

fn hostile_number() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("1".to_string()),
        Just("4294967295".to_string()),
        Just("18446744073709551615".to_string()),
        Just("1000000".to_string()),
        Just("1e300".to_string()),
        Just("-1".to_string()),
        Just("0.5".to_string()),
        (0u32..100).prop_map(|n| n.to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

    #[test]
    fn a_layout_with_hostile_numbers_is_refused_or_read_safely(edits in prop::collection::vec((any::<usize>(), hostile_number()), 1..4)) {
        let (rack, json) = ocp();
        let mut text = json.clone();
        for (nth, value) in &edits {
            let spans = number_spans(&text);
            let (start, end) = spans[nth % spans.len()];
            text = format!("{}{}{}", &text[..start], value, &text[end..]);
        }
        if let Ok(layout) = Layout::from_json("edited.json", &text) {
            let measured = quality(&layout, 64, 1);
            prop_assert!((0.0..=1.0).contains(&measured.low_load) && (0.0..=1.0).contains(&measured.high_load));
            let _ = verify(rack, &layout);
            let _ = layout.group_disk_indices(rack);
        }
    }
}

#[test]
fn a_planned_layout_binds_to_its_rack_with_each_disk_id_at_its_index() {
    let (rack, json) = ocp();
    let layout = Layout::from_json("ocp.json", json).expect("a planned layout reads back");
    let groups = layout
        .group_disk_indices(rack)
        .expect("binds to its own rack");
    assert_eq!(groups.len(), layout.groups.len());
    for (indices, ids) in groups.iter().zip(&layout.groups) {
        let bound_ids: Vec<u32> = indices.iter().map(|&i| rack.disks[i as usize].id).collect();
        assert_eq!(&bound_ids, ids);
    }
}

#[test]
fn a_layout_is_refused_by_another_rack_and_when_it_names_a_disk_the_rack_lacks() {
    let (rack, json) = ocp();
    let layout = Layout::from_json("ocp.json", json).expect("a planned layout reads back");
    let other = common::preset("dense-jbod-60");
    let refused = layout.group_disk_indices(&other).unwrap_err();
    assert!(
        matches!(&refused, BindError::RackMismatch { layout_rack, rack, .. }
            if *layout_rack == layout.rack && *rack == other.name),
        "{refused:?}"
    );
    assert!(refused.to_string().contains(&other.name), "{refused}");

    let missing_id = rack.disks.iter().map(|d| d.id).max().expect("disks") + 1;
    let mut edited = layout.clone();
    edited.groups[0][0] = missing_id;
    assert_eq!(
        edited.group_disk_indices(rack),
        Err(BindError::UnknownDisk { id: missing_id })
    );
}

#[test]
fn a_layout_whose_spin_up_path_does_not_run_from_resting_to_active_is_refused_as_it_is_read() {
    // An empty path reached `verify`, `quality` and `sim --layout` and panicked there
    // ("path is never empty") until 2026-12-01.
    let (_, json) = ocp();
    let planned: serde_json::Value = serde_json::from_str(json).expect("planned JSON");
    let path = planned["spin_up_path"].as_array().expect("a path").clone();
    let mut reversed = path.clone();
    reversed.reverse();
    for edited_path in [
        vec![],
        reversed,
        path[1..].to_vec(),
        path[..path.len() - 1].to_vec(),
    ] {
        let mut edited = planned.clone();
        edited["spin_up_path"] = serde_json::Value::Array(edited_path.clone());
        let text = serde_json::to_string(&edited).expect("serializes");
        let refused = Layout::from_json("edited.json", &text)
            .err()
            .unwrap_or_else(|| panic!("spin_up_path {edited_path:?} was accepted"));
        assert!(refused.to_string().contains("spin_up_path"), "{refused}");
    }
}

#[test]
fn a_layout_whose_scheduler_settings_a_rack_could_not_give_is_refused_naming_the_key() {
    let (_, json) = ocp();
    let cases: [(&str, serde_json::Value); 8] = [
        ("stagger_switches_min_queue", 0.into()),
        ("stagger_switches_min_queue", 1001.into()),
        ("concurrent_requests_per_class", 0.into()),
        ("concurrent_requests_per_class", 65.into()),
        ("rebuild_share", 0.0.into()),
        ("rebuild_share", 1.5.into()),
        ("max_queue_depth", 0.into()),
        ("reordering_bound_gb", (-1.0).into()),
    ];
    for (key, value) in cases {
        let mut edited: serde_json::Value = serde_json::from_str(json).expect("planned JSON");
        edited["scheduler"][key] = value.clone();
        let text = serde_json::to_string(&edited).expect("serializes");
        let refused = Layout::from_json("edited.json", &text)
            .err()
            .unwrap_or_else(|| panic!("scheduler.{key} = {value} was accepted"));
        let message = refused.to_string();
        assert!(
            message.contains(&format!("scheduler.{key}")),
            "{key} = {value}: {message}"
        );
    }
    let mut edge: serde_json::Value = serde_json::from_str(json).expect("planned JSON");
    edge["scheduler"]["concurrent_requests_per_class"] = 64.into();
    edge["scheduler"]["rebuild_share"] = 1.0.into();
    edge["scheduler"]["stagger_switches_min_queue"] = edge["scheduler"]["max_queue_depth"].clone();
    let text = serde_json::to_string(&edge).expect("serializes");
    let layout = Layout::from_json("edge.json", &text).expect("the range's ends are accepted");
    assert_eq!(layout.scheduler.concurrent_requests_per_class, 64);
    assert_eq!(
        layout.scheduler.stagger_switches_min_queue,
        Some(layout.scheduler.max_queue_depth)
    );
}
