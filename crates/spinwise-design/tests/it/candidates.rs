//! Candidate racks: an enclosure filled with the disk it was described with plans as the
//! preset does; another disk changes what is the disk's and nothing that is the enclosure's.

use crate::{preset, small_design};
use spinwise_design::candidate::{CandidateError, plan_candidate};

#[test]
fn a_preset_filled_with_its_own_disk_plans_as_the_preset() {
    let file = small_design(1000.0, 100.0);
    let candidate = plan_candidate("jbod", &preset("dense-jbod-60"), &file.disks[0])
        .expect("the preset's own disk plans");
    let original = spinwise_plan::plan(&spinwise_model::presets::load("dense-jbod-60").unwrap())
        .unwrap()
        .layout;
    assert_eq!(candidate.layout.group_size, original.group_size);
    assert_eq!(candidate.layout.erasure, original.erasure);
    assert_eq!(
        candidate.layout.max_active_groups,
        original.max_active_groups
    );
    let figures = &candidate.figures;
    assert_eq!((figures.disks, figures.servers), (60, 1));
    // 338.4 W: the enclosure's one power domain.
    assert!(
        (figures.peak_disk_w - 338.4).abs() < 1e-6,
        "{}",
        figures.peak_disk_w
    );
    let data_disks = f64::from(60 - figures.groups * figures.f);
    let expected = data_disks * 18.0 * f64::from(figures.k) / f64::from(figures.k + figures.r);
    assert!((figures.usable_tb - expected).abs() < 1e-9);
}

#[test]
fn a_disk_with_a_costlier_spin_up_gets_fewer_spin_ups_from_the_enclosure_budget() {
    let mut file = small_design(1000.0, 100.0);
    let disk = &mut file.disks[0];
    // (338.4 − 60 × 0.8) / (29.0 − 0.8) = 10.3: ten spin-ups instead of twelve, so one group
    // of ten at a time, below the enclosure's target of two.
    disk.watts.insert("spinning_up".into(), 29.0);
    let error = plan_candidate("jbod", &preset("dense-jbod-60"), disk).unwrap_err();
    let CandidateError::Plan(reason) = error else {
        panic!("{error}")
    };
    assert!(reason.contains("only 1 group(s) of 10"), "{reason}");
}

#[test]
fn the_spin_up_distribution_is_rescaled_to_the_disk_mean() {
    let mut file = small_design(1000.0, 100.0);
    file.disks[0].spin_up_s = 10.0;
    let candidate = plan_candidate("jbod", &preset("dense-jbod-60"), &file.disks[0]).unwrap();
    let spin_up = &candidate.rack.disk_model.spin_up_latency_s;
    assert!((spin_up.mean() - 10.0).abs() < 1e-9, "{}", spin_up.mean());
}

#[test]
fn a_disk_without_watts_for_a_state_of_the_enclosure_is_refused() {
    let mut file = small_design(1000.0, 100.0);
    file.disks[0].watts.remove("spinning_up");
    let error = plan_candidate("jbod", &preset("dense-jbod-60"), &file.disks[0]).unwrap_err();
    assert_eq!(
        error,
        CandidateError::MissingState {
            disk: "big".into(),
            state: "spinning_up".into()
        }
    );
}

#[test]
fn a_disk_whose_standby_draw_alone_breaks_the_budget_is_refused_not_planned() {
    let mut file = small_design(1000.0, 100.0);
    file.disks[0].watts.insert("standby".into(), 6.0);
    let result = plan_candidate("jbod", &preset("dense-jbod-60"), &file.disks[0]);
    assert!(result.is_err(), "60 × 6 W standby exceeds 338.4 W");
}
