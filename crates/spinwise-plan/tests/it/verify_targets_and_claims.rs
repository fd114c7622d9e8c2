//! Issue 29, defect 1: `verify` checks the rack's targets and every derived claim a layout file
//! carries, not only the hard budgets.
//!
//! Every test plans the real pelican preset (once, shared), edits one field of the layout the way
//! a person editing `layout.json` would, and asserts the verifier refuses it for exactly the
//! target or claim the edit breaks, with the number found and the number required. The planned
//! layout of every preset, and Pelican's hand-designed one, verify clean.

use crate::common;

use common::all_presets;
use spinwise_model::{Layout, Rack};
use spinwise_plan::verify::{Figure, Relation, Requirement, Violation, verify};
use spinwise_plan::{pelican_layout, plan, quality};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// The pelican preset and its planned layout, planned once for every test here.
fn pelican() -> &'static (Rack, Layout) {
    static PELICAN: OnceLock<(Rack, Layout)> = OnceLock::new();
    PELICAN.get_or_init(|| {
        let rack = common::preset("pelican");
        let layout = plan(&rack)
            .unwrap_or_else(|e| panic!("pelican: {e}"))
            .layout;
        (rack, layout)
    })
}

/// The pelican layout after `edit`, and the violations the verifier reports for it (panics if
/// it accepts the edited layout).
fn refused_after(edit: impl FnOnce(&mut Layout)) -> Vec<Violation> {
    let (rack, layout) = pelican();
    let mut edited = layout.clone();
    edit(&mut edited);
    match verify(rack, &edited) {
        Ok(_) => panic!("the verifier accepted the edited layout"),
        Err(violations) => violations,
    }
}

fn checks(violations: &[Violation]) -> BTreeSet<&'static str> {
    violations.iter().map(|v| v.check).collect()
}

/// The one violation of `check` (panics if there is none or several).
fn the<'a>(violations: &'a [Violation], check: &str) -> &'a Violation {
    let matching: Vec<&Violation> = violations.iter().filter(|v| v.check == check).collect();
    assert_eq!(
        matching.len(),
        1,
        "expected one `{check}` violation among {violations:#?}"
    );
    matching[0]
}

fn measure(figure: &Option<Figure>) -> f64 {
    match figure {
        Some(Figure::Measure(value)) => *value,
        other => panic!("expected a measure, found {other:?}"),
    }
}

fn required_measure(requirement: &Option<Requirement>, relation: Relation) -> f64 {
    let requirement = requirement.as_ref().expect("a requirement");
    assert_eq!(requirement.relation, relation);
    match &requirement.value {
        Figure::Measure(value) => *value,
        other => panic!("expected a measure, found {other:?}"),
    }
}

fn counted(found: &Option<Figure>, required: &Option<Requirement>) -> (u64, Relation, u64) {
    let requirement = required.as_ref().expect("a requirement");
    match (found, &requirement.value) {
        (Some(Figure::Count(found)), Figure::Count(required)) => {
            (*found, requirement.relation, *required)
        }
        other => panic!("expected counts, found {other:?}"),
    }
}

#[test]
fn the_planned_layout_of_every_preset_verifies_clean() {
    for (name, rack) in all_presets() {
        let planned = plan(&rack).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Err(violations) = verify(&rack, &planned.layout) {
            panic!("{name}: {violations:#?}");
        }
    }
}

#[test]
fn pelicans_hand_designed_layout_verifies_clean() {
    let (rack, _) = pelican();
    let manual = pelican_layout(rack).unwrap_or_else(|e| panic!("{e}"));
    verify(rack, &manual.layout).unwrap_or_else(|v| panic!("{v:#?}"));
}

#[test]
fn the_pelican_layout_these_tests_edit_is_the_15_3_code_with_2_spares() {
    // The edits below are chosen against these numbers (issue 29's examples).
    let (rack, layout) = pelican();
    let erasure = layout.erasure;
    assert_eq!((erasure.k, erasure.r, erasure.f), (15, 3, 2));
    assert_eq!(layout.group_size, 24);
    assert_eq!(layout.max_active_groups_bound, 4);
    assert_eq!(rack.disk_model.bandwidth_mb_per_s, 105.0);
    assert_eq!(rack.targets.file_bandwidth_floor_mb_per_s, 1500.0);
    assert_eq!(rack.targets.capacity_overhead_max, 0.2);
}

#[test]
fn a_layout_edited_to_k_14_is_refused_for_its_read_bandwidth() {
    let violations = refused_after(|layout| layout.erasure.k = 14);
    assert_eq!(checks(&violations), BTreeSet::from(["bandwidth floor"]));
    let violation = the(&violations, "bandwidth floor");
    assert_eq!(measure(&violation.found), 1470.0);
    assert_eq!(
        required_measure(&violation.required, Relation::AtLeast),
        1500.0
    );
    for words in ["1470 MB/s", "1500 MB/s", "k ≥ 15"] {
        assert!(violation.detail.contains(words), "{}", violation.detail);
    }
}

#[test]
fn a_layout_edited_to_15_4_is_refused_for_its_capacity_overhead() {
    let violations = refused_after(|layout| layout.erasure.r = 4);
    assert_eq!(checks(&violations), BTreeSet::from(["capacity overhead"]));
    let violation = the(&violations, "capacity overhead");
    assert!((measure(&violation.found) - 4.0 / 19.0).abs() < 1e-12);
    assert_eq!(required_measure(&violation.required, Relation::AtMost), 0.2);
    for words in ["21.1%", "20.0%"] {
        assert!(violation.detail.contains(words), "{}", violation.detail);
    }
}

#[test]
fn a_layout_edited_to_f_0_is_refused_for_too_few_spares() {
    let violations = refused_after(|layout| layout.erasure.f = 0);
    assert_eq!(checks(&violations), BTreeSet::from(["spares"]));
    let violation = the(&violations, "spares");
    assert_eq!(
        counted(&violation.found, &violation.required),
        (0, Relation::AtLeast, 2)
    );
}

#[test]
fn a_layout_edited_to_3_3_is_refused_for_its_read_bandwidth_and_its_capacity_overhead() {
    // 3 × 105 MB/s = 315 MB/s per read, and half the capacity spent on redundancy.
    let violations = refused_after(|layout| {
        layout.erasure.k = 3;
        layout.erasure.r = 3;
    });
    assert_eq!(
        checks(&violations),
        BTreeSet::from(["bandwidth floor", "capacity overhead"])
    );
    assert_eq!(measure(&the(&violations, "bandwidth floor").found), 315.0);
    assert_eq!(measure(&the(&violations, "capacity overhead").found), 0.5);
}

#[test]
fn a_layout_edited_to_12_6_is_refused_for_its_read_bandwidth_and_its_capacity_overhead() {
    // 12 × 105 MB/s = 1260 MB/s per read, and a third of the capacity spent on redundancy.
    let violations = refused_after(|layout| {
        layout.erasure.k = 12;
        layout.erasure.r = 6;
    });
    assert_eq!(
        checks(&violations),
        BTreeSet::from(["bandwidth floor", "capacity overhead"])
    );
    assert_eq!(measure(&the(&violations, "bandwidth floor").found), 1260.0);
    assert!((measure(&the(&violations, "capacity overhead").found) - 1.0 / 3.0).abs() < 1e-12);
}

#[test]
fn a_code_too_weak_for_the_durability_target_is_refused_for_its_durability() {
    // (20, 1): one redundant fragment loses blobs far more often than 8 nines allow; it also
    // cannot spread over the six chassis with one fragment in each, hence `spread`.
    let violations = refused_after(|layout| {
        layout.erasure.k = 20;
        layout.erasure.r = 1;
        layout.erasure.f = 2;
    });
    let violation = the(&violations, "durability");
    assert!(measure(&violation.found) > 1e-8);
    assert_eq!(
        required_measure(&violation.required, Relation::AtMost),
        1e-8
    );
    assert!(checks(&violations).is_subset(&BTreeSet::from(["durability", "spread"])));
}

#[test]
fn a_code_wider_than_the_durability_model_covers_is_refused() {
    let violations = refused_after(|layout| layout.erasure.r = 17);
    let violation = violations
        .iter()
        .find(|v| v.check == "erasure" && v.detail.contains("r = 17"))
        .unwrap_or_else(|| panic!("{violations:#?}"));
    assert_eq!(
        counted(&violation.found, &violation.required),
        (17, Relation::AtMost, 16)
    );
}

#[test]
fn an_inflated_max_active_groups_bound_of_48_is_refused() {
    let violations = refused_after(|layout| layout.max_active_groups_bound = 48);
    assert_eq!(
        checks(&violations),
        BTreeSet::from(["max_active_groups_bound"])
    );
    let violation = the(&violations, "max_active_groups_bound");
    assert_eq!(
        counted(&violation.found, &violation.required),
        (48, Relation::Exactly, 4)
    );
}

#[test]
fn a_deflated_max_active_groups_bound_is_refused() {
    let violations = refused_after(|layout| layout.max_active_groups_bound = 3);
    let checks = checks(&violations);
    assert!(
        checks.contains("max_active_groups_bound"),
        "{violations:#?}"
    );
    // The witnessed 4 groups also exceed the claimed bound of 3.
    assert!(
        checks.is_subset(&BTreeSet::from([
            "max_active_groups_bound",
            "max_active_groups"
        ])),
        "{violations:#?}"
    );
}

#[test]
fn the_inflated_bound_is_what_made_quality_report_0_083() {
    // Why the claim matters: quality divides by it. 4 of 48 is the 0.083.
    let (_, layout) = pelican();
    let mut inflated = layout.clone();
    inflated.max_active_groups_bound = 48;
    let measured = quality(&inflated, 200, 1);
    assert!((measured.low_load - 4.0 / 48.0).abs() < 1e-9);
    assert_eq!(quality(layout, 200, 1).low_load, 1.0);
}

#[test]
fn an_inflated_high_load_bound_is_refused() {
    let (_, layout) = pelican();
    let claimed = layout.high_load_bound + 1;
    let violations = refused_after(|layout| layout.high_load_bound = claimed);
    assert_eq!(checks(&violations), BTreeSet::from(["high_load_bound"]));
    let (found, relation, required) = {
        let violation = the(&violations, "high_load_bound");
        counted(&violation.found, &violation.required)
    };
    assert_eq!((found, relation), (u64::from(claimed), Relation::AtMost));
    assert_eq!(required, u64::from(layout.high_load_bound));
}

#[test]
fn a_high_load_bound_below_the_witnessed_spinning_groups_is_refused() {
    let (_, layout) = pelican();
    let claimed = layout.max_spinning_groups - 1;
    let violations = refused_after(|layout| layout.high_load_bound = claimed);
    let violation = the(&violations, "high_load_bound");
    assert_eq!(
        counted(&violation.found, &violation.required),
        (
            u64::from(claimed),
            Relation::AtLeast,
            u64::from(layout.max_spinning_groups)
        )
    );
}

#[test]
fn a_witnessed_concurrency_below_the_io_concurrency_target_is_refused() {
    let (rack, _) = pelican();
    let target = rack.targets.io_concurrency_target;
    let violations = refused_after(|layout| {
        layout.active_witness.truncate(target as usize - 1);
        layout.max_active_groups = target - 1;
    });
    assert_eq!(checks(&violations), BTreeSet::from(["concurrency target"]));
    let violation = the(&violations, "concurrency target");
    assert_eq!(
        counted(&violation.found, &violation.required),
        (u64::from(target - 1), Relation::AtLeast, u64::from(target))
    );
}

#[test]
fn an_edited_m_and_bottleneck_are_refused() {
    let (_, layout) = pelican();
    let violations = refused_after(|layout| {
        layout.max_disks_at_highest += 24;
        layout.bottleneck = vec!["pcie".into()];
    });
    assert_eq!(
        checks(&violations),
        BTreeSet::from(["bottleneck", "max_disks_at_highest"])
    );
    let violation = the(&violations, "max_disks_at_highest");
    assert_eq!(
        counted(&violation.found, &violation.required),
        (
            layout.max_disks_at_highest + 24,
            Relation::Exactly,
            layout.max_disks_at_highest
        )
    );
}

#[test]
fn a_class_number_out_of_sequence_is_refused() {
    let (rack, _) = pelican();
    let manual = pelican_layout(rack)
        .unwrap_or_else(|e| panic!("{e}"))
        .layout;
    let mut edited = manual.clone();
    let classes = edited
        .classes
        .as_mut()
        .expect("Pelican's layout has classes");
    classes[0] = 1_000_000;
    let violations = verify(rack, &edited).expect_err("a stray class number");
    assert_eq!(checks(&violations), BTreeSet::from(["classes"]));
    let mut shorter = manual;
    shorter.classes.as_mut().unwrap().pop();
    let violations = verify(rack, &shorter).expect_err("a missing class");
    assert_eq!(checks(&violations), BTreeSet::from(["classes"]));
}

#[test]
fn a_flipped_symmetric_flag_is_refused() {
    let violations = refused_after(|layout| layout.symmetric = !layout.symmetric);
    assert_eq!(checks(&violations), BTreeSet::from(["symmetric"]));
}

#[test]
fn scheduler_settings_that_are_not_the_racks_fairness_targets_are_refused() {
    let violations = refused_after(|layout| {
        layout.scheduler.rebuild_share = 0.25;
        layout.scheduler.max_queue_depth += 1;
    });
    assert_eq!(checks(&violations), BTreeSet::from(["scheduler"]));
    assert_eq!(violations.len(), 2, "{violations:#?}");
    let share = violations
        .iter()
        .find(|v| v.detail.contains("rebuild_share"))
        .expect("the rebuild share");
    assert_eq!(measure(&share.found), 0.25);
    assert_eq!(required_measure(&share.required, Relation::Exactly), 0.5);
}

#[test]
fn edited_sampled_quality_figures_are_refused() {
    let violations = refused_after(|layout| {
        layout.efficient = !layout.efficient;
        layout.solver.low_load_sampled = 0.5;
    });
    assert_eq!(
        checks(&violations),
        BTreeSet::from(["efficient", "sampled quality"])
    );
    let violations = refused_after(|layout| layout.solver.samples = u32::MAX);
    assert_eq!(checks(&violations), BTreeSet::from(["solver.samples"]));
}

#[test]
fn every_broken_target_and_claim_is_reported_not_only_the_first() {
    let violations = refused_after(|layout| {
        layout.erasure.k = 14;
        layout.erasure.f = 0;
        layout.max_active_groups_bound = 48;
    });
    assert_eq!(
        checks(&violations),
        BTreeSet::from(["bandwidth floor", "max_active_groups_bound", "spares"])
    );
}

#[test]
fn violations_serialize_with_the_number_found_and_the_number_required() {
    let violations = refused_after(|layout| layout.erasure.k = 14);
    let json = serde_json::to_value(&violations).unwrap();
    assert_eq!(json[0]["check"], "bandwidth floor");
    assert_eq!(json[0]["found"], 1470.0);
    assert_eq!(json[0]["required"]["relation"], "at_least");
    assert_eq!(json[0]["required"]["value"], 1500.0);
    assert_eq!(
        violations[0].to_string(),
        format!("bandwidth floor: {}", violations[0].detail)
    );
}
