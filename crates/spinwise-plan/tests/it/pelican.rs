//! Must-show: the Pelican preset plans to Pelican's layout parameters, and the hand-designed
//! Pelican layout is available and verified.

use spinwise_model::parse_rack;
use spinwise_plan::{pelican_layout, plan, quality};

fn preset(name: &str) -> spinwise_model::Rack {
    let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    parse_rack(&path, &text).unwrap()
}

#[test]
fn pelican_preset_plans_48_groups_of_24_with_15_plus_3_four_active() {
    let rack = preset("pelican");
    let plan = plan(&rack).unwrap();
    let layout = &plan.layout;
    eprintln!(
        "method {} attempts {} low {} high {}",
        layout.solver.method,
        layout.solver.attempts,
        layout.solver.low_load_sampled,
        layout.solver.high_load_sampled
    );
    assert_eq!(layout.group_size, 24);
    assert_eq!(layout.groups.len(), 48);
    assert_eq!((layout.erasure.k, layout.erasure.r), (15, 3));
    assert_eq!(layout.max_active_groups, 4);
    assert_eq!(layout.bottleneck, vec!["cooling".to_string()]);
    assert!(layout.verified);
    assert!(layout.efficient);
}

#[test]
fn pelican_preset_hands_its_scheduler_the_racks_fairness_targets_with_staggered_switches() {
    let rack = preset("pelican");
    let scheduler = plan(&rack).unwrap().layout.scheduler;
    let fairness = &rack.targets.fairness;
    assert_eq!(scheduler.reordering_bound_gb, 500.0);
    assert_eq!(scheduler.max_queue_depth, fairness.max_queue_depth);
    assert_eq!(scheduler.concurrent_requests_per_class, 4);
    assert_eq!(scheduler.stagger_switches_min_queue, Some(100));
    // The cross-validation rack keeps Pelican's independent switches.
    let prototype = plan(&preset("pelican-prototype")).unwrap().layout.scheduler;
    assert_eq!(prototype.stagger_switches_min_queue, None);
}

#[test]
fn pelican_manual_layout_is_verified_and_reaches_full_quality() {
    let rack = preset("pelican");
    let plan = pelican_layout(&rack).unwrap();
    assert!(plan.layout.verified);
    assert_eq!(plan.layout.max_active_groups, 4);
    assert!(plan.layout.symmetric);
    let quality = quality(&plan.layout, 20_000, 7);
    assert_eq!(quality.low_load, 1.0);
    assert_eq!(quality.high_load, 1.0);
}
