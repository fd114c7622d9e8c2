//! Random small racks as TOML text, so every case goes through the real parser
//! (docs/rack-format.md): the one rack generator of the planner's property tests
//! (crates/spinwise-plan/tests/properties.rs) and the simulator's policy properties
//! (crates/spinwise-sim/tests/policies.rs).
//!
//! Each generated rack has 1–3 axes (4–48 disks), 1–3 hard resources grouping the disks by a random
//! non-empty set of axes (with a divisor such as `"y/2"` where the axis size allows), random
//! per-state costs with the resting state cheapest, a budget between the least that lets one disk
//! per domain spin up and a whole domain at its costliest, an optional soft resource, an optional
//! spin-down state off the spin-up path, optional failure domains, and permissive targets.
//!
//! Two strategies draw from this family:
//! - [`any_rack`]: every rack of the family; the parser accepts each one.
//! - [`schedulable_rack`]: the same draws, but spinning up never costs less than active on any
//!   resource, so the spin-up state dominates the spin-up path as the schedulers require.
//!
//! Invariants: both strategies make the same random draws in the same order (they differ only in
//! how the draws become TOML), and changing the draws here changes the cases every property test
//! built on them sees for its fixed seed. Every rack written parses ([`GeneratedRack::parse`]
//! panics, printing the TOML, if one does not).

use proptest::prelude::*;
use spinwise_model::{Rack, parse_rack};
use std::fmt;

const AXIS_NAMES: [&str; 3] = ["a", "b", "c"];

/// A generated rack: its TOML text is the value, so proptest prints it on failure.
#[derive(Clone)]
pub struct GeneratedRack {
    pub toml: String,
}

impl fmt::Debug for GeneratedRack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "\n----- rack.toml -----\n{}---------------------",
            self.toml
        )
    }
}

impl GeneratedRack {
    /// The rack, through the real parser. Panics (printing the TOML) if the parser refuses it:
    /// the generator only writes racks the parser accepts.
    pub fn parse(&self) -> Rack {
        parse_rack("generated.toml", &self.toml).unwrap_or_else(|e| {
            panic!("the generator wrote a rack the parser refuses: {e}{self:?}")
        })
    }
}

/// Raw random choices for one resource or failure domain; turned into TOML once the axes are known.
#[derive(Clone, Debug)]
struct RawDomains {
    axis_mask: u8,
    divisor_picks: [u8; 3],
}

#[derive(Clone, Debug)]
struct RawResource {
    domains: RawDomains,
    /// Costs in half-units: resting, spinning up, active, spinning down.
    cost_picks: [u32; 4],
    /// Picks m (disks of a domain at the costliest state) and the extra headroom below one more.
    budget_picks: (u32, u32),
    /// Exploration: an upper bound this many half-units above the budget, and a minimum increase.
    upper_bound_pick: Option<u32>,
    minimum_increase_pick: u8,
}

#[derive(Clone, Debug)]
struct RawFailureDomain {
    domains: RawDomains,
    spread: bool,
}

#[derive(Clone, Debug)]
struct RawRack {
    sizes: Vec<u32>,
    hard: Vec<RawResource>,
    soft: Option<RawResource>,
    failure_domains: Vec<RawFailureDomain>,
    spin_down_state: bool,
    targets_pick: u8,
    io_target_pick: u8,
    /// `None`: a grid (ids are grid positions). `Some((offset, stride))`: an explicit list whose
    /// ids run backwards, `offset + stride × (N − 1 − position)`, so disk ids, disk indices and
    /// grid positions all differ.
    listed_ids: Option<(u32, u32)>,
}

fn raw_domains() -> impl Strategy<Value = RawDomains> {
    (1u8..8, any::<[u8; 3]>()).prop_map(|(axis_mask, divisor_picks)| RawDomains {
        axis_mask,
        divisor_picks,
    })
}

fn raw_resource() -> impl Strategy<Value = RawResource> {
    (
        raw_domains(),
        (0u32..3, 0u32..41, 0u32..41, 0u32..41),
        (any::<u32>(), any::<u32>()),
        (prop::option::of(0u32..200), 0u8..4),
    )
        .prop_map(
            |(domains, (rest, spin, active, down), budget_picks, (upper, minimum))| RawResource {
                domains,
                cost_picks: [rest, spin, active, down],
                budget_picks,
                upper_bound_pick: upper,
                minimum_increase_pick: minimum,
            },
        )
}

fn raw_rack() -> impl Strategy<Value = RawRack> {
    (
        prop::collection::vec(1u32..=8, 1..=3).prop_filter("4 to 48 disks", |s| {
            (4..=48).contains(&s.iter().product::<u32>())
        }),
        prop::collection::vec(raw_resource(), 1..=3),
        prop::option::of(raw_resource()),
        prop::collection::vec(
            (raw_domains(), any::<bool>())
                .prop_map(|(domains, spread)| RawFailureDomain { domains, spread }),
            0..=2,
        ),
        any::<bool>(),
        0u8..4,
        0u8..4,
        prop::option::of((0u32..1000, 1u32..=5)),
    )
        .prop_map(
            |(
                sizes,
                hard,
                soft,
                failure_domains,
                spin_down_state,
                targets_pick,
                io_target_pick,
                listed_ids,
            )| {
                RawRack {
                    sizes,
                    hard,
                    soft,
                    failure_domains,
                    spin_down_state,
                    targets_pick,
                    io_target_pick,
                    listed_ids,
                }
            },
        )
}

/// Every rack of the family (the planner's properties).
pub fn any_rack() -> impl Strategy<Value = GeneratedRack> {
    racks(SpinUpCost::Any)
}

/// The racks of the family whose spin-up state costs at least as much as active on every
/// resource (the simulator's policy properties). The schedulers charge a spinning-up group its
/// spin-up state, which must dominate the spin-up path: racks where it does not are refused with a
/// typed error, so a property over them would only skip them. Same draws as [`any_rack`], the
/// spin-up and active costs of each resource written the other way round where spin-up's is lower.
pub fn schedulable_rack() -> impl Strategy<Value = GeneratedRack> {
    racks(SpinUpCost::AtLeastActive)
}

/// How the spin-up cost of each resource relates to its active cost.
#[derive(Clone, Copy, Debug)]
enum SpinUpCost {
    /// Drawn independently: spinning up may be cheaper than active.
    Any,
    /// Never below active: of the two drawn costs, spinning up takes the larger.
    AtLeastActive,
}

fn racks(spin_up: SpinUpCost) -> impl Strategy<Value = GeneratedRack> {
    raw_rack().prop_map(move |raw| GeneratedRack {
        toml: raw.to_toml(spin_up),
    })
}

/// A quantity of `halves` half-units as TOML (`3`, `3.5`).
fn halves(halves: u64) -> String {
    if halves.is_multiple_of(2) {
        format!("{}", halves / 2)
    } else {
        format!("{}.5", halves / 2)
    }
}

impl RawDomains {
    /// The `by` terms and the number of domains they make. Without `whole_axis`, an axis is never
    /// divided by its whole size (which would merge its domains into one).
    fn terms(&self, sizes: &[u32], whole_axis: bool) -> (Vec<String>, u32) {
        let mut terms = Vec::new();
        let mut domains = 1;
        for (axis, &size) in sizes.iter().enumerate() {
            if self.axis_mask & (1 << axis) == 0 {
                continue;
            }
            let divisors: Vec<u32> = (1..=size)
                .filter(|d| size % d == 0 && (whole_axis || *d < size || size == 1))
                .collect();
            let divisor = divisors[usize::from(self.divisor_picks[axis]) % divisors.len()];
            domains *= size / divisor;
            terms.push(if divisor == 1 {
                format!("\"{}\"", AXIS_NAMES[axis])
            } else {
                format!("\"{}/{divisor}\"", AXIS_NAMES[axis])
            });
        }
        if terms.is_empty() {
            // The mask named only axes this rack lacks: group by the first axis.
            terms.push(format!("\"{}\"", AXIS_NAMES[0]));
            domains = sizes[0];
        }
        (terms, domains)
    }
}

impl RawRack {
    fn disks(&self) -> u32 {
        self.sizes.iter().product()
    }

    fn to_toml(&self, spin_up: SpinUpCost) -> String {
        let mut t = String::new();
        t.push_str("[rack]\nname = \"generated\"\n\n");
        for (axis, size) in self.sizes.iter().enumerate() {
            t.push_str(&format!(
                "[[axes]]\nname = \"{}\"\nsize = {size}\n",
                AXIS_NAMES[axis]
            ));
        }
        match self.listed_ids {
            None => t.push_str("\n[disks]\ngrid = true\n\n"),
            Some((offset, stride)) => {
                t.push_str("\n[disks]\nlist = [\n");
                let disks = self.disks();
                for position in 0..disks {
                    // Coordinates of grid position `position`, last axis fastest.
                    let mut rest = position;
                    let mut at = vec![0; self.sizes.len()];
                    for (axis, size) in self.sizes.iter().enumerate().rev() {
                        at[axis] = rest % size;
                        rest /= size;
                    }
                    let id = offset + stride * (disks - 1 - position);
                    t.push_str(&format!("  {{ id = {id}, at = {at:?} }},\n"));
                }
                t.push_str("]\n\n");
            }
        }
        t.push_str("[[states]]\nname = \"standby\"\nresting = true\n");
        t.push_str("[[states]]\nname = \"spinning_up\"\ntransient = true\n");
        t.push_str("[[states]]\nname = \"active\"\nactive = true\n");
        if self.spin_down_state {
            t.push_str("[[states]]\nname = \"spinning_down\"\ntransient = true\n");
        }
        t.push_str("\n[[transitions]]\nfrom = \"standby\"\nto = \"spinning_up\"\n");
        t.push_str("[[transitions]]\nfrom = \"spinning_up\"\nto = \"active\"\n");
        if self.spin_down_state {
            t.push_str("[[transitions]]\nfrom = \"active\"\nto = \"spinning_down\"\n");
            t.push_str("[[transitions]]\nfrom = \"spinning_down\"\nto = \"standby\"\n");
        } else {
            t.push_str("[[transitions]]\nfrom = \"active\"\nto = \"standby\"\n");
        }
        for (index, resource) in self.hard.iter().enumerate() {
            t.push_str(&self.resource_toml(&format!("hard{index}"), "hard", resource, spin_up));
        }
        if let Some(soft) = &self.soft {
            t.push_str(&self.resource_toml("link", "soft", soft, spin_up));
        }
        for (index, failure) in self.failure_domains.iter().enumerate() {
            let (terms, _) = failure.domains.terms(&self.sizes, false);
            t.push_str(&format!(
                "\n[[failure_domains]]\nname = \"component{index}\"\ndomains = {{ by = [{}] }}\nannual_failure_rate = 0.001\nspread = {}\n",
                terms.join(", "),
                failure.spread
            ));
        }
        let (floor, overhead, nines) = match self.targets_pick {
            0 => (0, 0.9, 1),
            1 => (0, 0.5, 2),
            2 => (150, 0.9, 1),
            _ => (0, 0.34, 1),
        };
        let io_target = if self.io_target_pick == 0 { 2 } else { 1 };
        t.push_str(&format!(
            "
[disk]
capacity_tb = 1.0
bandwidth_mb_per_s = 100
seek_ms = 5
spin_up_latency_s = 10
mount_latency_s = 1
unmount_latency_s = 1
annual_failure_rate = 0.0001

[targets]
durability_nines = {nines}
service_interval_days = 30
deployment_lifetime_years = 1
file_bandwidth_floor_mb_per_s = {floor}
io_concurrency_target = {io_target}
capacity_overhead_max = {overhead}
spare_exhaustion_probability = 0.5

[targets.fairness]
reordering_bound_gb = 10
rebuild_share = 0.5
max_queue_depth = 10
"
        ));
        t
    }

    fn resource_toml(
        &self,
        name: &str,
        kind: &str,
        raw: &RawResource,
        spin_up: SpinUpCost,
    ) -> String {
        let (terms, domains) = raw.domains.terms(&self.sizes, true);
        let domain_size = u64::from(self.disks() / domains);
        let [rest, spin, active, down] = raw.cost_picks.map(u64::from);
        let (spin, active) = match spin_up {
            SpinUpCost::Any => (spin, active),
            SpinUpCost::AtLeastActive => (spin.max(active), spin.min(active)),
        };
        let (spin, active, down) = (rest + spin, rest + active, rest + down);
        let highest = if self.spin_down_state {
            spin.max(active).max(down)
        } else {
            spin.max(active)
        };
        let step = highest - rest;
        // m disks of the domain at the costliest state, the others resting, plus less than one
        // more step: from the least the parser accepts (m = 1) to a whole domain (m = N_r).
        let budget = if step == 0 {
            // A resource that never binds, its budget from exactly the resting load (headroom 0,
            // see `NEVER_BINDING_AT_ZERO_HEADROOM` in crates/spinwise-plan/tests/properties.rs)
            // upwards.
            domain_size * rest + u64::from(raw.budget_picks.1 % 5)
        } else {
            let m = 1 + u64::from(raw.budget_picks.0) % domain_size;
            (domain_size - m) * rest + m * highest + u64::from(raw.budget_picks.1) % step
        };
        let mut cost = format!(
            "standby = {}, spinning_up = {}, active = {}",
            halves(rest),
            halves(spin),
            halves(active)
        );
        if self.spin_down_state {
            cost.push_str(&format!(", spinning_down = {}", halves(down)));
        }
        let mut text = format!(
            "\n[[resources]]\nname = \"{name}\"\nkind = \"{kind}\"\ncost = {{ {cost} }}\ndomains = {{ by = [{}] }}\nbudget = {}\n",
            terms.join(", "),
            halves(budget)
        );
        if let Some(extra) = raw.upper_bound_pick {
            text.push_str(&format!(
                "upper_bound = {}\n",
                halves(budget + u64::from(extra))
            ));
        }
        if raw.minimum_increase_pick > 0 {
            text.push_str(&format!(
                "minimum_increase = {}\n",
                halves(u64::from(raw.minimum_increase_pick))
            ));
        }
        text
    }
}
