//! The failure model (crates/spinwise-plan/src/durability.rs, docs/durability.md) and the refusals
//! it leads to: loss probability against k and r, the ranked erasure candidates, spares per group,
//! and the typed `PlanError`s for targets no code or group size can meet. Rack variants are made by
//! editing preset text, so they go through the real parser.

use crate::common;

use spinwise_model::{Rack, parse_rack};
use spinwise_plan::durability::{
    MAX_DATA_FRAGMENTS, MAX_REDUNDANCY_FRAGMENTS, erasure_candidates, lifetime_loss_probability,
    spares_for_group, survives_component_failures,
};
use spinwise_plan::{PlanError, plan};

/// Preset `name` with the one line that starts with `key` replaced by `key = value`.
fn preset_with(name: &str, key: &str, value: &str) -> Rack {
    let text = common::preset_text(name);
    let matching = text
        .lines()
        .filter(|line| line.trim_start().starts_with(key))
        .count();
    assert_eq!(matching, 1, "{name}: {matching} lines start with `{key}`");
    let edited: String = text
        .lines()
        .map(|line| {
            if line.trim_start().starts_with(key) {
                format!("{key} = {value}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    parse_rack(&format!("preset:{name} ({key} = {value})"), &edited)
        .unwrap_or_else(|e| panic!("edited preset does not parse: {e}"))
}

#[test]
fn lifetime_loss_probability_falls_as_r_rises() {
    let rack = common::preset("pelican");
    for k in [1, 5, 10, 15, 30, MAX_DATA_FRAGMENTS] {
        let losses: Vec<f64> = (1..=6)
            .map(|r| lifetime_loss_probability(&rack, k, r))
            .collect();
        assert!(losses.iter().all(|p| (0.0..=1.0).contains(p)), "{losses:?}");
        assert!(
            losses.windows(2).all(|pair| pair[1] < pair[0]),
            "k = {k}: loss does not fall with r: {losses:?}"
        );
    }
}

#[test]
fn lifetime_loss_probability_rises_with_k() {
    let rack = common::preset("pelican");
    for r in 1..=4 {
        let losses: Vec<f64> = (1..=MAX_DATA_FRAGMENTS)
            .map(|k| lifetime_loss_probability(&rack, k, r))
            .collect();
        assert!(
            losses.windows(2).all(|pair| pair[1] > pair[0]),
            "r = {r}: loss does not rise with k: {losses:?}"
        );
    }
}

#[test]
fn lifetime_loss_probability_rises_with_the_disk_failure_rate_and_the_lifetime() {
    let base = common::preset("pelican");
    let mut flaky = base.clone();
    flaky.disk_model.annual_failure_rate = 0.08;
    let mut long_lived = base.clone();
    long_lived.targets.deployment_lifetime_years *= 3.0;
    let loss = |rack: &Rack| lifetime_loss_probability(rack, 15, 3);
    assert!(loss(&flaky) > loss(&base));
    assert!(loss(&long_lived) > loss(&base));
}

/// The spread rule, computed here: no `spread` component with a failure rate may hold more than r
/// of a stripe's fragments when they are spread evenly over its domains.
fn spread_allows(rack: &Rack, k: u32, r: u32) -> bool {
    rack.failure_domains
        .iter()
        .filter(|d| d.spread && d.annual_failure_rate > 0.0)
        .all(|d| (k + r).div_ceil(d.domains.len() as u32) <= r)
}

/// Whether (k, r) meets every target of `rack`, computed from the targets directly.
fn meets_targets(rack: &Rack, k: u32, r: u32) -> bool {
    let targets = &rack.targets;
    f64::from(k) * rack.disk_model.bandwidth_mb_per_s >= targets.file_bandwidth_floor_mb_per_s
        && f64::from(r) / f64::from(k + r) <= targets.capacity_overhead_max
        && (k + r) as usize <= rack.disk_count()
        && spread_allows(rack, k, r)
        && lifetime_loss_probability(rack, k, r) <= 10f64.powf(-targets.durability_nines)
}

#[test]
fn erasure_candidates_are_sorted_by_overhead_and_are_exactly_the_codes_that_meet_the_targets() {
    for (name, rack) in common::all_presets() {
        let candidates = erasure_candidates(&rack);
        assert!(!candidates.is_empty(), "{name}: no candidate");
        for pair in candidates.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            // r_a / w_a ≤ r_b / w_b, exactly; on a tie the narrower stripe first.
            let (left, right) = (a.r * b.width(), b.r * a.width());
            assert!(
                left < right || (left == right && a.width() <= b.width()),
                "{name}: ({}, {}) ranked before ({}, {})",
                a.k,
                a.r,
                b.k,
                b.r
            );
        }
        for candidate in &candidates {
            let (k, r) = (candidate.k, candidate.r);
            assert!(
                meets_targets(&rack, k, r),
                "{name}: ({k}, {r}) misses a target"
            );
            assert!(
                survives_component_failures(&rack, k + r, r),
                "{name}: ({k}, {r})"
            );
            assert_eq!(
                candidate.lifetime_loss_probability,
                lifetime_loss_probability(&rack, k, r)
            );
        }
        let listed: std::collections::BTreeSet<(u32, u32)> =
            candidates.iter().map(|c| (c.k, c.r)).collect();
        assert_eq!(
            listed.len(),
            candidates.len(),
            "{name}: a code listed twice"
        );
        for k in 1..=MAX_DATA_FRAGMENTS {
            for r in 1..=MAX_REDUNDANCY_FRAGMENTS {
                assert_eq!(
                    listed.contains(&(k, r)),
                    meets_targets(&rack, k, r),
                    "{name}: ({k}, {r})"
                );
            }
        }
    }
}

#[test]
fn pelicans_best_code_is_15_plus_3_and_15_plus_2_misses_eight_nines() {
    let rack = common::preset("pelican");
    let candidates = erasure_candidates(&rack);
    assert_eq!((candidates[0].k, candidates[0].r), (15, 3));
    assert!(candidates[0].lifetime_loss_probability <= 1e-8);
    // 15 + 2 has less overhead (2/17 < 3/18) but loses a blob with probability above 10^-8.
    let loss = lifetime_loss_probability(&rack, 15, 2);
    assert!(loss > 1e-8, "15 + 2 loses a blob with probability {loss}");
    assert!(!candidates.iter().any(|c| (c.k, c.r) == (15, 2)));
    // And k = 14 would miss the 1,500 MB/s floor at 105 MB/s per disk.
    assert!(candidates.iter().all(|c| c.k >= 15));
}

#[test]
fn spares_grow_with_group_size_and_with_the_disk_failure_rate() {
    let rack = common::preset("pelican");
    let by_size: Vec<u32> = (1..=240).map(|n| spares_for_group(&rack, n)).collect();
    assert!(
        by_size.windows(2).all(|pair| pair[0] <= pair[1]),
        "{by_size:?}"
    );
    assert!(by_size[239] > by_size[7], "{by_size:?}");
    assert_eq!(
        spares_for_group(&rack, 24),
        2,
        "Pelican's groups of 24 keep two spares"
    );
    let mut previous = 0;
    let mut grew = false;
    for afr in [0.0, 0.01, 0.03, 0.1, 0.3, 0.6] {
        let mut variant = rack.clone();
        variant.disk_model.annual_failure_rate = afr;
        let spares = spares_for_group(&variant, 24);
        assert!(
            spares >= previous,
            "AFR {afr}: {spares} spares, fewer than {previous}"
        );
        assert!(spares <= 24);
        grew |= spares > previous;
        previous = spares;
    }
    assert!(grew);
    let mut never_fails = rack.clone();
    never_fails.disk_model.annual_failure_rate = 0.0;
    assert_eq!(spares_for_group(&never_fails, 24), 0);
}

#[test]
fn spares_are_the_smallest_count_exceeded_with_at_most_the_target_probability() {
    // Poisson with mean n × λ × interval (λ from the AFR, exponential lifetimes), summed here.
    let rack = common::preset("pelican");
    let allowed = rack.targets.spare_exhaustion_probability;
    let rate_per_year = -(1.0 - rack.disk_model.annual_failure_rate).ln();
    for n in [8u32, 24, 48, 96] {
        let mean = f64::from(n) * rate_per_year * rack.targets.service_interval_days / 365.0;
        let exceeded = |f: u32| {
            let mut term = (-mean).exp();
            let mut at_most = term;
            for i in 1..=f {
                term *= mean / f64::from(i);
                at_most += term;
            }
            1.0 - at_most
        };
        let f = spares_for_group(&rack, n);
        assert!(exceeded(f) <= allowed + 1e-12, "n = {n}, f = {f}");
        if f > 0 {
            assert!(
                exceeded(f - 1) > allowed,
                "n = {n}: f = {f} is not the smallest"
            );
        }
    }
}

#[test]
fn a_spread_failure_domain_holding_every_disk_leaves_no_erasure_code_and_is_named() {
    // The OCP half rack's only server holds all 240 disks; it is `spread = false` because no
    // stripe can survive it. Asking for spread makes every code fail the component rule.
    let spread = preset_with("ocp-cold-storage", "spread", "true");
    assert!(erasure_candidates(&spread).is_empty());
    match plan(&spread) {
        Err(PlanError::NoErasureCode { reason }) => {
            assert!(reason.contains("`server`"), "{reason}");
            assert!(reason.contains("spread = false"), "{reason}");
        }
        other => panic!(
            "expected NoErasureCode, got {:?}",
            other.map(|p| p.layout.rack)
        ),
    }
    // As shipped (`spread = false`) the same rack plans.
    assert!(plan(&common::preset("ocp-cold-storage")).is_ok());
}

#[test]
fn a_bandwidth_floor_above_64_disks_leaves_no_erasure_code() {
    let rack = common::preset("pelican");
    let bandwidth = rack.disk_model.bandwidth_mb_per_s;
    let limit = f64::from(MAX_DATA_FRAGMENTS) * bandwidth;
    let above = preset_with(
        "pelican",
        "file_bandwidth_floor_mb_per_s",
        &format!("{}", limit + 1.0),
    );
    assert!(erasure_candidates(&above).is_empty());
    match plan(&above) {
        Err(PlanError::NoErasureCode { reason }) => {
            assert!(reason.contains("bandwidth floor"), "{reason}");
            assert!(reason.contains("k ≥ 65"), "{reason}");
        }
        other => panic!(
            "expected NoErasureCode, got {:?}",
            other.map(|p| p.layout.rack)
        ),
    }
    // At exactly 64 disks' bandwidth a code exists (k = 64): whatever refuses the rack then, it is
    // not the erasure code.
    let at = preset_with(
        "pelican",
        "file_bandwidth_floor_mb_per_s",
        &format!("{limit}"),
    );
    let candidates = erasure_candidates(&at);
    assert!(candidates.iter().all(|c| c.k == MAX_DATA_FRAGMENTS) && !candidates.is_empty());
    assert!(!matches!(plan(&at), Err(PlanError::NoErasureCode { .. })));
}

#[test]
fn an_io_concurrency_target_above_m_over_n_is_refused() {
    // Pelican: M = 96 disks spinning, n = 24, so 4 groups; OCP: M = 16, n = 8, so 2 groups.
    for (name, target, groups, group_size) in [("pelican", 5, 4, 24), ("ocp-cold-storage", 3, 2, 8)]
    {
        let rack = preset_with(name, "io_concurrency_target", &target.to_string());
        assert_eq!(
            plan(&rack).err(),
            Some(PlanError::ConcurrencyBelowTarget {
                groups,
                group_size,
                target,
            }),
            "{name}"
        );
        let at_bound = preset_with(name, "io_concurrency_target", &groups.to_string());
        let layout = plan(&at_bound)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .layout;
        assert_eq!(u64::from(layout.max_active_groups), groups, "{name}");
    }
}
