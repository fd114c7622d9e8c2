//! The independent verifier rejects broken layouts, each for the right reason (`Violation.check`),
//! and the layout file round-trips and refuses what it cannot read (`LayoutError`).
//!
//! Every test starts from a valid layout planned from a preset (Pelican, or the OCP half rack where
//! its cheaper active state matters) and breaks one thing.

use crate::common;

use spinwise_model::layout::LAYOUT_VERSION;
use spinwise_model::{Amount, Layout, LayoutError, Rack, ResourceKind};
use spinwise_plan::admission::Admission;
use spinwise_plan::{Violation, plan, verify};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// The Pelican rack and its planned layout, planned once for every test here.
fn pelican() -> &'static (Rack, Layout) {
    static PELICAN: OnceLock<(Rack, Layout)> = OnceLock::new();
    PELICAN.get_or_init(|| planned("pelican"))
}

/// The OCP half rack and its planned layout (active drives cost far less than spinning up).
fn ocp() -> &'static (Rack, Layout) {
    static OCP: OnceLock<(Rack, Layout)> = OnceLock::new();
    OCP.get_or_init(|| planned("ocp-cold-storage"))
}

fn planned(name: &str) -> (Rack, Layout) {
    let rack = common::preset(name);
    let layout = plan(&rack).unwrap_or_else(|e| panic!("{name}: {e}")).layout;
    (rack, layout)
}

/// The checks named by the violations `verify` reports; panics if it accepts the layout.
fn rejected(rack: &Rack, layout: &Layout) -> Vec<Violation> {
    match verify(rack, layout) {
        Ok(_) => panic!("the verifier accepted a broken layout"),
        Err(violations) => {
            assert!(!violations.is_empty(), "an error with no violation");
            violations
        }
    }
}

fn checks(violations: &[Violation]) -> BTreeSet<&'static str> {
    violations.iter().map(|v| v.check).collect()
}

/// Asserts some violation has `check` and a detail containing every one of `words`.
fn assert_violation(violations: &[Violation], check: &str, words: &[&str]) {
    assert!(
        violations
            .iter()
            .any(|v| v.check == check && words.iter().all(|w| v.detail.contains(w))),
        "no `{check}` violation mentioning {words:?} among {violations:#?}"
    );
}

fn disk_index(rack: &Rack, id: u32) -> usize {
    rack.disks.binary_search_by_key(&id, |d| d.id).unwrap()
}

#[test]
fn the_planned_layouts_verify() {
    for (rack, layout) in [pelican(), ocp()] {
        let domains = verify(rack, layout).unwrap_or_else(|v| panic!("{v:#?}"));
        assert!(domains > 0);
    }
}

#[test]
fn a_disk_added_to_a_second_group_is_a_membership_and_group_size_violation() {
    let (rack, layout) = pelican();
    let mut broken = layout.clone();
    let disk = broken.groups[0][0];
    broken.groups[1].push(disk);
    let violations = rejected(rack, &broken);
    assert_violation(
        &violations,
        "membership",
        &[&format!("disk {disk} is in groups 0 and 1")],
    );
    assert_violation(&violations, "group size", &["group 1 has 25 disks"]);
}

#[test]
fn a_disk_moved_into_a_second_group_in_place_of_another_is_a_membership_violation() {
    let (rack, layout) = pelican();
    let mut broken = layout.clone();
    let (disk, displaced) = (broken.groups[0][0], broken.groups[1][0]);
    broken.groups[1][0] = disk;
    let violations = rejected(rack, &broken);
    assert_eq!(checks(&violations), BTreeSet::from(["membership"]));
    assert_violation(
        &violations,
        "membership",
        &[&format!("disk {disk} is in groups 0 and 1")],
    );
    assert_violation(
        &violations,
        "membership",
        &[&format!("disk {displaced} is in no group")],
    );
}

#[test]
fn a_dropped_disk_is_in_no_group_and_shrinks_its_group() {
    let (rack, layout) = pelican();
    let mut broken = layout.clone();
    let dropped = broken.groups[3].pop().unwrap();
    let violations = rejected(rack, &broken);
    assert_eq!(
        checks(&violations),
        BTreeSet::from(["group size", "membership"])
    );
    assert_violation(
        &violations,
        "membership",
        &[&format!("disk {dropped} is in no group")],
    );
    assert_violation(&violations, "group size", &["group 3 has 23 disks, not 24"]);
}

#[test]
fn a_disk_id_the_rack_lacks_is_a_membership_violation() {
    let (rack, layout) = pelican();
    let mut broken = layout.clone();
    let replaced = broken.groups[5][2];
    broken.groups[5][2] = 1_000_000;
    let violations = rejected(rack, &broken);
    assert_eq!(checks(&violations), BTreeSet::from(["membership"]));
    assert_violation(
        &violations,
        "membership",
        &["names disk 1000000, which the rack lacks"],
    );
    assert_violation(
        &violations,
        "membership",
        &[&format!("disk {replaced} is in no group")],
    );
}

#[test]
fn two_disks_of_one_cooling_column_in_one_group_break_the_cooling_budget() {
    let (rack, layout) = pelican();
    let cooling = &rack.resources[rack.resource_index("cooling").unwrap()];
    assert_eq!(
        cooling.budget,
        Amount::from_units(1),
        "one disk spinning per column"
    );
    let column_of = |id: u32| cooling.domain_of[disk_index(rack, id)];
    // Group 0's first disk sits in column c; some other group B has a disk b in c. Swap b with a
    // disk of group 0 from another column: group 0 then holds two disks of column c.
    let a = layout.groups[0][0];
    let c = column_of(a);
    let (b_group, b) = layout
        .groups
        .iter()
        .enumerate()
        .skip(1)
        .find_map(|(g, ids)| {
            ids.iter()
                .find(|&&id| column_of(id) == c)
                .map(|&id| (g, id))
        })
        .expect("another group uses column c");
    let a2 = *layout.groups[0]
        .iter()
        .find(|&&id| column_of(id) != c)
        .expect("group 0 spans several columns");
    let mut broken = layout.clone();
    let swap = |ids: &mut Vec<u32>, out: u32, into: u32| {
        let slot = ids.iter().position(|&id| id == out).unwrap();
        ids[slot] = into;
        ids.sort_unstable();
    };
    swap(&mut broken.groups[0], a2, b);
    swap(&mut broken.groups[b_group], b, a2);
    let violations = rejected(rack, &broken);
    assert!(
        !checks(&violations).contains("membership"),
        "{violations:#?}"
    );
    assert_violation(
        &violations,
        "budget",
        &["group 0 alone", &format!("cooling domain {c} would draw 2")],
    );
}

#[test]
fn one_more_active_group_than_the_witness_holds_is_a_witness_violation() {
    let (rack, layout) = pelican();
    let mut broken = layout.clone();
    broken.max_active_groups += 1;
    let violations = rejected(rack, &broken);
    // 5 is also above the rack's bound of 4 groups of 24 spinning up together.
    assert_eq!(
        checks(&violations),
        BTreeSet::from(["max_active_groups", "witness"])
    );
    assert_violation(&violations, "witness", &["4 groups for a claim of 5"]);
}

#[test]
fn one_more_active_group_witnessed_by_a_conflicting_group_breaks_a_budget() {
    // Pelican: 4 groups of 24 use all 96 cooling columns, so any fifth group collides.
    let (rack, layout) = pelican();
    assert_eq!(layout.max_active_groups, 4);
    let extra = (0..layout.groups.len() as u32)
        .find(|g| !layout.active_witness.contains(g))
        .unwrap();
    let mut broken = layout.clone();
    broken.max_active_groups += 1;
    broken.active_witness.push(extra);
    let violations = rejected(rack, &broken);
    // 5 is also above the rack's bound of 4 groups of 24 spinning up together.
    assert_eq!(
        checks(&violations),
        BTreeSet::from(["budget", "max_active_groups"])
    );
    assert_violation(&violations, "budget", &["spinning up together", "cooling"]);
}

#[test]
fn one_more_spinning_group_than_witnessed_or_a_conflicting_one_is_rejected() {
    let (rack, layout) = pelican();
    let mut unwitnessed = layout.clone();
    unwitnessed.max_spinning_groups += 1;
    // Also above the exact high-load maximum the verifier's search finds.
    assert_eq!(
        checks(&rejected(rack, &unwitnessed)),
        BTreeSet::from(["max_spinning_groups", "witness"])
    );

    // A fifth group spinning up beside four active ones: each cooling column already has its
    // one spinning disk.
    let extra = (0..layout.groups.len() as u32)
        .find(|g| !layout.spinning_witness.contains(g))
        .unwrap();
    let mut conflicting = layout.clone();
    conflicting.max_spinning_groups += 1;
    conflicting.spinning_witness.push(extra);
    let violations = rejected(rack, &conflicting);
    assert_eq!(
        checks(&violations),
        BTreeSet::from(["budget", "max_spinning_groups"])
    );
    assert_violation(
        &violations,
        "budget",
        &[&format!("active while {extra} spins up")],
    );
}

/// Index of a hard constraint that no other hard constraint duplicates (same members), with the
/// most members: removing or loosening it leaves its domains unenforced.
fn sole_hard_constraint(layout: &Layout) -> usize {
    let hard: Vec<usize> = (0..layout.group_constraints.len())
        .filter(|&i| layout.group_constraints[i].kind == ResourceKind::Hard)
        .collect();
    hard.iter()
        .copied()
        .filter(|&i| {
            let members = &layout.group_constraints[i].members;
            hard.iter()
                .filter(|&&j| &layout.group_constraints[j].members == members)
                .count()
                == 1
        })
        .max_by_key(|&i| {
            (
                layout.group_constraints[i].members.len(),
                std::cmp::Reverse(i),
            )
        })
        .expect("some hard constraint stands alone")
}

#[test]
fn removing_a_hard_group_constraint_the_rack_needs_is_rejected() {
    let (rack, layout) = pelican();
    let index = sole_hard_constraint(layout);
    let mut broken = layout.clone();
    let removed = broken.group_constraints.remove(index);
    let violations = rejected(rack, &broken);
    assert_eq!(checks(&violations), BTreeSet::from(["group constraints"]));
    assert_violation(
        &violations,
        "group constraints",
        &[&removed.resource, "is not enforced by any group constraint"],
    );
}

#[test]
fn a_group_constraint_with_a_looser_budget_than_the_rack_is_rejected() {
    let (rack, layout) = pelican();
    let index = sole_hard_constraint(layout);
    let resting = layout.state_index(&layout.resting_state).unwrap();
    let mut broken = layout.clone();
    let constraint = &mut broken.group_constraints[index];
    let headroom = constraint.budget - constraint.resting_load(resting);
    assert!(headroom > Amount::ZERO);
    constraint.budget += headroom; // room for twice the disks the rack allows
    let resource = constraint.resource.clone();
    let violations = rejected(rack, &broken);
    assert_eq!(checks(&violations), BTreeSet::from(["group constraints"]));
    assert_violation(&violations, "group constraints", &[&resource]);
}

#[test]
fn a_group_constraint_stricter_than_the_rack_is_accepted() {
    // The check is "at least as strict", not "equal": halving a constraint's headroom only makes
    // the scheduler more cautious.
    let (rack, layout) = pelican();
    let index = sole_hard_constraint(layout);
    let resting = layout.state_index(&layout.resting_state).unwrap();
    let mut stricter = layout.clone();
    let constraint = &mut stricter.group_constraints[index];
    let resting_load = constraint.resting_load(resting);
    let headroom = constraint.budget - resting_load;
    constraint.budget = resting_load + Amount::from_micros(headroom.micros() / 2);
    verify(rack, &stricter).unwrap_or_else(|v| panic!("{v:#?}"));
}

#[test]
fn a_hard_group_constraint_relabelled_soft_is_rejected() {
    let (rack, layout) = pelican();
    let index = sole_hard_constraint(layout);
    let mut broken = layout.clone();
    broken.group_constraints[index].kind = ResourceKind::Soft;
    assert_eq!(
        checks(&rejected(rack, &broken)),
        BTreeSet::from(["group constraints"])
    );
}

#[test]
fn k_plus_r_plus_f_above_the_group_size_is_an_erasure_violation() {
    let (rack, layout) = pelican();
    let mut broken = layout.clone();
    broken.erasure.f = broken.group_size - broken.erasure.k - broken.erasure.r + 1;
    let violations = rejected(rack, &broken);
    assert_eq!(checks(&violations), BTreeSet::from(["erasure"]));
    assert_violation(&violations, "erasure", &["does not fit groups of 24"]);

    let mut no_data = layout.clone();
    no_data.erasure.k = 0;
    assert_eq!(
        checks(&rejected(rack, &no_data)),
        BTreeSet::from(["erasure"])
    );

    // 15 + 3 + (2^32 - 5) wraps a u32 sum to 13, which fits 24: it must still be refused.
    let mut wrapping = layout.clone();
    wrapping.erasure.f = u32::MAX - 4;
    let violations = rejected(rack, &wrapping);
    assert!(checks(&violations).contains("erasure"), "{violations:?}");
}

#[test]
fn a_changed_rack_fingerprint_is_a_rack_violation() {
    let (rack, layout) = pelican();
    let mut broken = layout.clone();
    broken.rack_fingerprint = "0123456789abcdef".into();
    let violations = rejected(rack, &broken);
    assert_eq!(checks(&violations), BTreeSet::from(["rack"]));
    assert_violation(&violations, "rack", &["pelican"]);
}

#[test]
fn a_layout_checked_against_another_rack_is_a_rack_violation() {
    // pelican-prototype has the same disks but a smaller tray power budget.
    let (_, layout) = pelican();
    let prototype = common::preset("pelican-prototype");
    assert_eq!(
        checks(&rejected(&prototype, layout)),
        BTreeSet::from(["rack"])
    );
}

#[test]
fn a_layout_whose_spin_up_path_skips_the_spin_up_state_is_rejected() {
    // The scheduler and quality() charge a group what the layout's spin_up_path says. On the OCP
    // rack a spin-up draws 20 W and an active drive 8 W: with the path cut to standby → active,
    // the group constraints admit spin-ups the trays cannot power.
    let (rack, layout) = ocp();
    let mut broken = layout.clone();
    broken.spin_up_path = vec![broken.resting_state.clone(), broken.active_state.clone()];
    // The consequence: admission compiled from the broken file admits more groups spinning up
    // together than the rack's power allows (M / n = 2).
    let state = |name: &str| broken.state_index(name).unwrap();
    let path: Vec<usize> = broken.spin_up_path.iter().map(|s| state(s)).collect();
    let mut admission = Admission::new(
        &broken.group_constraints,
        broken.groups.len(),
        &path,
        state(&broken.resting_state),
        state(&broken.active_state),
    );
    let admitted = admission.exact_maximum(broken.groups.len() as u64);
    assert!(admitted.len() > 2, "the broken path admits {admitted:?}");
    // So the verifier must refuse the file.
    let violations = rejected(rack, &broken);
    eprintln!("{violations:#?}");
}

#[test]
fn a_spinning_witness_naming_a_group_the_layout_lacks_is_rejected() {
    let (rack, layout) = pelican();
    let mut broken = layout.clone();
    broken.spinning_witness.insert(0, 9_999);
    broken.max_spinning_groups += 1;
    // The file reader does not catch it either (it does for active_witness).
    let reread = Layout::from_json("tampered.json", &broken.to_json());
    let violations = rejected(rack, &broken);
    assert!(
        reread.is_err(),
        "from_json accepts it; verify says {violations:?}"
    );
}

#[test]
fn an_active_witness_naming_a_group_the_layout_lacks_is_rejected() {
    let (rack, layout) = pelican();
    let mut broken = layout.clone();
    broken.active_witness.push(9_999);
    broken.max_active_groups += 1;
    let violations = rejected(rack, &broken);
    // 5 is also above the rack's bound of 4 groups of 24 spinning up together.
    assert_eq!(
        checks(&violations),
        BTreeSet::from(["max_active_groups", "witness"])
    );
}

#[test]
fn a_spinning_witness_that_repeats_a_group_is_rejected() {
    // OCP: one disk of a group active (8 W) beside one of the same group spinning up (20 W) fits
    // a tray's 41 W, so counting one group twice passes every budget.
    let (rack, layout) = ocp();
    let mut broken = layout.clone();
    let first = broken.spinning_witness[0];
    broken.spinning_witness.insert(0, first);
    broken.max_spinning_groups += 1;
    let distinct: BTreeSet<u32> = broken.spinning_witness.iter().copied().collect();
    assert!(distinct.len() < broken.max_spinning_groups as usize);
    rejected(rack, &broken);
}

#[test]
fn a_group_constraint_with_fewer_costs_than_states_is_rejected() {
    let (rack, layout) = pelican();
    let mut broken = layout.clone();
    for constraint in &mut broken.group_constraints {
        constraint.cost.truncate(1); // only the resting state's cost
    }
    rejected(rack, &broken);
}

// ----- the layout file -----

#[test]
fn a_layout_survives_a_json_round_trip_unchanged() {
    for (_, layout) in [pelican(), ocp()] {
        let json = layout.to_json();
        let reread = Layout::from_json("layout.json", &json).unwrap();
        assert_eq!(&reread, layout);
        assert_eq!(reread.to_json(), json);
    }
}

/// The layout as a JSON value, changed by `edit`, as text.
fn edited_json(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let (_, layout) = pelican();
    let mut value: serde_json::Value = serde_json::from_str(&layout.to_json()).unwrap();
    edit(&mut value);
    serde_json::to_string(&value).unwrap()
}

#[test]
fn from_json_refuses_another_format() {
    let text = edited_json(|v| v["format"] = "flamingo-layout".into());
    match Layout::from_json("other.json", &text) {
        Err(LayoutError::Format { source_name, found }) => {
            assert_eq!(source_name, "other.json");
            assert_eq!(found, "flamingo-layout");
        }
        other => panic!("expected a format error, got {other:?}"),
    }
    let text = edited_json(|v| {
        v.as_object_mut().unwrap().remove("format");
    });
    assert!(matches!(
        Layout::from_json("missing.json", &text),
        Err(LayoutError::Format { found, .. }) if found == "(missing)"
    ));
}

#[test]
fn from_json_refuses_a_future_version() {
    let text = edited_json(|v| v["version"] = (LAYOUT_VERSION + 1).into());
    match Layout::from_json("future.json", &text) {
        Err(LayoutError::Version { found, .. }) => {
            assert_eq!(found, (LAYOUT_VERSION + 1).to_string())
        }
        other => panic!("expected a version error, got {other:?}"),
    }
}

#[test]
fn from_json_names_a_version_as_a_json_value_not_as_a_number_it_rounds_to() {
    for (written, shown) in [
        ("1e300", "layout version 1e+300 is not supported"),
        ("\"1\"", "layout version \"1\" is not supported"),
        ("-1", "layout version -1 is not supported"),
    ] {
        let text = edited_json(|v| v["version"] = serde_json::from_str(written).unwrap());
        let error = Layout::from_json("odd.json", &text).unwrap_err();
        assert!(error.to_string().contains(shown), "{written}: {error}");
    }
    let text = edited_json(|v| {
        v.as_object_mut().unwrap().remove("version");
    });
    let error = Layout::from_json("missing.json", &text).unwrap_err();
    assert!(error.to_string().contains("version (missing)"), "{error}");
}

#[test]
fn from_json_reports_a_huge_version_without_truncating_it() {
    let huge = (1u64 << 32) + u64::from(LAYOUT_VERSION);
    let text = edited_json(|v| v["version"] = huge.into());
    let error = Layout::from_json("huge.json", &text).unwrap_err();
    assert!(matches!(error, LayoutError::Version { .. }), "{error:?}");
    assert!(
        !error
            .to_string()
            .contains(&format!("version {LAYOUT_VERSION} is not supported")),
        "{error}"
    );
}

#[test]
fn from_json_refuses_malformed_json_and_unknown_fields() {
    let (_, layout) = pelican();
    let json = layout.to_json();
    let truncated = &json[..json.len() / 2];
    assert!(matches!(
        Layout::from_json("cut.json", truncated),
        Err(LayoutError::Json { .. })
    ));
    assert!(matches!(
        Layout::from_json("empty.json", ""),
        Err(LayoutError::Json { .. })
    ));
    let text = edited_json(|v| v["surprise"] = true.into());
    assert!(matches!(
        Layout::from_json("extra.json", &text),
        Err(LayoutError::Json { .. })
    ));
    let text = edited_json(|v| v["groups"] = "all of them".into());
    assert!(matches!(
        Layout::from_json("typed.json", &text),
        Err(LayoutError::Json { .. })
    ));
}

#[test]
fn from_json_refuses_a_constraint_naming_a_group_the_layout_lacks() {
    let (_, layout) = pelican();
    let groups = layout.groups.len() as u64;
    let text = edited_json(|v| v["group_constraints"][0]["members"][0][0] = groups.into());
    match Layout::from_json("dangling.json", &text) {
        Err(LayoutError::Inconsistent { message, .. }) => {
            assert!(
                message.contains(&format!("names group {groups} of {groups}")),
                "{message}"
            )
        }
        other => panic!("expected an inconsistency, got {other:?}"),
    }
}
