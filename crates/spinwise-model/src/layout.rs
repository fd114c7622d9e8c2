//! The layout file (`layout.json`, docs/layout-format.md): what the planner hands to the scheduler,
//! the simulator and the store. It holds the disk→group assignment, the erasure parameters, the
//! group constraints and the planner's claims about them.
//!
//! Invariants of a layout written by the planner (the verifier re-checks them from the rack):
//! every disk is in exactly one group; all groups have `group_size` disks; `k + r + f ≤ group_size`;
//! the `active_witness` groups can spin up together without breaking any hard budget.
//! Readers refuse any `format`/`version` they do not know.

use crate::amount::Amount;
use crate::limits;
use crate::rack::{DiskIndex, Fairness, Rack, ResourceKind};
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub const LAYOUT_FORMAT: &str = "spinwise-layout";
pub const LAYOUT_VERSION: u32 = 1;

/// Index of a group in [`Layout::groups`].
pub type GroupIndex = u32;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    pub format: String,
    pub version: u32,
    pub rack: String,
    /// FNV-1a 64 of the rack description's canonical JSON, in hex: ties the layout to its rack.
    pub rack_fingerprint: String,
    pub disks: u32,
    pub group_size: u32,
    /// Disk ids of each group, ascending.
    #[serde(deserialize_with = "bounded::groups")]
    pub groups: Vec<Vec<u32>>,
    pub erasure: Erasure,
    /// State names in rack order; group-constraint costs are indexed like this.
    #[serde(deserialize_with = "bounded::vec::<_, _, { limits::MAX_STATES }>")]
    pub states: Vec<String>,
    pub resting_state: String,
    pub active_state: String,
    /// Resting → active, both included.
    #[serde(deserialize_with = "bounded::vec::<_, _, { limits::MAX_STATES }>")]
    pub spin_up_path: Vec<String>,
    pub group_constraints: Vec<GroupConstraint>,
    #[serde(deserialize_with = "bounded::vec::<_, _, { limits::MAX_RESOURCES }>")]
    pub bottleneck: Vec<String>,
    /// Flamingo's M: disks that may be in their costliest state at once.
    pub max_disks_at_highest: u64,
    /// Groups the layout lets spin up together (proved by `active_witness`).
    pub max_active_groups: u32,
    /// Upper bound on `max_active_groups` from the bottleneck: ⌊M / n⌋.
    pub max_active_groups_bound: u32,
    /// Upper bound on groups concurrently active while one more spins up (high-load metric's m).
    pub high_load_bound: u32,
    #[serde(deserialize_with = "bounded::vec::<_, _, { limits::MAX_DISKS }>")]
    pub active_witness: Vec<GroupIndex>,
    /// Most groups found spinning at once: all of `spinning_witness` but the last active, the last
    /// spinning up beside them.
    pub max_spinning_groups: u32,
    #[serde(deserialize_with = "bounded::vec::<_, _, { limits::MAX_DISKS }>")]
    pub spinning_witness: Vec<GroupIndex>,
    /// Class of each group when the solver built classes of colliding groups.
    #[serde(
        default,
        deserialize_with = "bounded::optional_vec::<_, _, { limits::MAX_DISKS }>"
    )]
    pub classes: Option<Vec<u32>>,
    pub symmetric: bool,
    pub efficient: bool,
    pub verified: bool,
    pub solver: SolverReport,
    pub scheduler: SchedulerConfig,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Erasure {
    /// Data fragments per stripe.
    pub k: u32,
    /// Redundancy fragments per stripe.
    pub r: u32,
    /// Disks per group expected to fail within a service interval (spares).
    pub f: u32,
}

impl Erasure {
    pub fn stripe_width(&self) -> u32 {
        self.k + self.r
    }

    pub fn capacity_overhead(&self) -> f64 {
        f64::from(self.r) / f64::from(self.k + self.r)
    }
}

/// One resource domain rewritten over groups (Flamingo §4.3): the groups with disks in the domain,
/// each weighted by how many of its disks are there. A set of groups may be in given states at
/// once only if Σ weight × cost[state] ≤ budget for every constraint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupConstraint {
    pub resource: String,
    pub kind: ResourceKind,
    pub budget: Amount,
    /// Per-disk cost in each state, indexed like [`Layout::states`].
    #[serde(deserialize_with = "bounded::vec::<_, _, { limits::MAX_STATES }>")]
    pub cost: Vec<Amount>,
    /// (group, disks of that group in the domain), ascending by group.
    #[serde(deserialize_with = "bounded::vec::<_, _, { limits::MAX_DISKS }>")]
    pub members: Vec<(GroupIndex, u32)>,
}

impl GroupConstraint {
    /// Cost when every member rests: the floor no schedule can go below.
    pub fn resting_load(&self, resting: usize) -> Amount {
        let disks: u64 = self.members.iter().map(|(_, w)| u64::from(*w)).sum();
        self.cost[resting].times(disks)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolverReport {
    /// Name of the ordering and heuristic that produced the layout (or `pelican-manual`).
    pub method: String,
    /// Candidate layouts the solver examined before stopping.
    pub attempts: u32,
    /// Random orderings sampled by the efficiency check.
    pub samples: u32,
    pub low_load_sampled: f64,
    pub high_load_sampled: f64,
}

/// Scheduler settings derived from the rack's fairness targets (Pelican §2.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerConfig {
    pub reordering_bound_gb: f64,
    pub rebuild_share: f64,
    pub max_queue_depth: u32,
    /// Requests a class serves at once from its spinning group; absent in layouts written
    /// before it existed, which served one at a time.
    #[serde(default = "one_request", skip_serializing_if = "is_one_request")]
    pub concurrent_requests_per_class: u32,
    /// Staggered switches (docs/simulator.md, "Staggered switches"): a class whose client queue
    /// holds at least this many requests does not start a group switch while another class
    /// sending through the same network link is switching and none streams. Absent: classes
    /// switch independently, as Pelican §2.3's. The planner copies the rack's
    /// `targets.fairness.stagger_switches_min_queue`; `spinwise sim --stagger-switches N` and
    /// `--no-stagger-switches` override it for one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stagger_switches_min_queue: Option<u32>,
}

impl SchedulerConfig {
    /// The ranges the rack parser enforces on `[targets.fairness]` ([`Fairness::out_of_range`]),
    /// so a hand-edited layout file cannot hand a scheduler what a rack description could not.
    fn check(&self) -> Result<(), String> {
        let fairness = Fairness {
            reordering_bound_gb: self.reordering_bound_gb,
            rebuild_share: self.rebuild_share,
            max_queue_depth: self.max_queue_depth,
            concurrent_requests_per_class: self.concurrent_requests_per_class,
            stagger_switches_min_queue: self.stagger_switches_min_queue,
        };
        match fairness.out_of_range() {
            Some(problem) => Err(format!(
                "scheduler.{} = {} is out of range: expected {}",
                problem.key, problem.value, problem.expected
            )),
            None => Ok(()),
        }
    }
}

fn one_request() -> u32 {
    1
}

fn is_one_request(count: &u32) -> bool {
    *count == 1
}

/// Why a layout file was refused. Every text taken from the file (a JSON message quoting a
/// value, a format string, a state name) is displayed through [`crate::quote`], so a refusal
/// stays small whatever the file holds.
#[derive(Debug, Error)]
pub enum LayoutError {
    #[error("{source_name}: not a layout file: {}", crate::quote::message(message))]
    Json {
        source_name: String,
        message: String,
    },
    #[error(
        "{source_name}: format `{}` is not `{LAYOUT_FORMAT}`",
        crate::quote::excerpt(found)
    )]
    Format { source_name: String, found: String },
    #[error(
        "{source_name}: layout version {} is not supported (this build reads version {LAYOUT_VERSION})",
        crate::quote::excerpt(found)
    )]
    Version { source_name: String, found: String },
    #[error("{source_name}: {}", crate::quote::message(message))]
    Inconsistent {
        source_name: String,
        message: String,
    },
}

/// Why a layout cannot drive a rack. The simulator and the store's driver bind a layout with
/// [`Layout::group_disk_indices`], so both refuse the same layouts with the same words.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BindError {
    #[error(
        "the layout was planned for rack `{layout_rack}` (fingerprint {layout_fingerprint}), not `{rack}` ({rack_fingerprint})"
    )]
    RackMismatch {
        layout_rack: String,
        layout_fingerprint: String,
        rack: String,
        rack_fingerprint: String,
    },
    #[error("the layout names disk id {id}, which the rack does not have")]
    UnknownDisk { id: u32 },
}

impl Layout {
    /// Refuses a layout planned for another rack description (the fingerprints differ): its
    /// groups and constraints were derived from budgets and domains this rack may not have.
    pub fn check_rack(&self, rack: &Rack) -> Result<(), BindError> {
        let rack_fingerprint = rack.fingerprint();
        if self.rack_fingerprint == rack_fingerprint {
            return Ok(());
        }
        Err(BindError::RackMismatch {
            layout_rack: self.rack.clone(),
            layout_fingerprint: self.rack_fingerprint.clone(),
            rack: rack.name.clone(),
            rack_fingerprint,
        })
    }

    /// Each group's disks as indices into `rack.disks` (the layout names disk ids), after
    /// [`Layout::check_rack`].
    pub fn group_disk_indices(&self, rack: &Rack) -> Result<Vec<Vec<DiskIndex>>, BindError> {
        self.check_rack(rack)?;
        let index_of = |id: &u32| {
            rack.disks
                .binary_search_by_key(id, |d| d.id)
                .map(|index| index as DiskIndex)
                .map_err(|_| BindError::UnknownDisk { id: *id })
        };
        self.groups
            .iter()
            .map(|ids| ids.iter().map(index_of).collect())
            .collect()
    }

    /// Per group, the server whose NIC carries its client reads ([`crate::Servers::read_server`] of its
    /// first k disks, the data columns a healthy read streams): the link two classes share when
    /// their groups' reads leave by the same server.
    pub fn group_read_servers(&self, rack: &Rack) -> Result<Vec<usize>, BindError> {
        let servers = rack.servers();
        let data_disks = self.erasure.k as usize;
        Ok(self
            .group_disk_indices(rack)?
            .iter()
            .map(|disks| servers.read_server(&disks[..data_disks.min(disks.len())]))
            .collect())
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("layouts always serialize")
    }

    /// Reads a layout, refusing unknown formats and versions and structurally broken files.
    /// JSON nesting is bounded by serde_json's recursion limit (128), so a depth bomb is refused,
    /// not a stack overflow.
    pub fn from_json(source_name: &str, text: &str) -> Result<Layout, LayoutError> {
        // The format and version are read first, so a file of another format or version is
        // refused as such rather than for its fields. Both passes are typed (no JSON tree: a
        // tree costs ~10 times the file in memory); everything else is skipped by the probe.
        #[derive(Deserialize)]
        struct Probe {
            format: Option<serde_json::Value>,
            version: Option<serde_json::Value>,
        }
        let json_error = |e: serde_json::Error| LayoutError::Json {
            source_name: source_name.into(),
            message: e.to_string(),
        };
        let probe: Probe = serde_json::from_str(text).map_err(json_error)?;
        let format = probe
            .format
            .as_ref()
            .and_then(|f| f.as_str())
            .unwrap_or("(missing)");
        if format != LAYOUT_FORMAT {
            return Err(LayoutError::Format {
                source_name: source_name.into(),
                found: format.into(),
            });
        }
        if probe.version.as_ref().and_then(|v| v.as_u64()) != Some(u64::from(LAYOUT_VERSION)) {
            // Named as the JSON value it is (`1e+300`, `"1"`, `(missing)`), not as a number it
            // might round or wrap to.
            let found = probe
                .version
                .as_ref()
                .map_or_else(|| "(missing)".into(), ToString::to_string);
            return Err(LayoutError::Version {
                source_name: source_name.into(),
                found,
            });
        }
        let layout: Layout = serde_json::from_str(text).map_err(json_error)?;
        layout
            .check_structure()
            .map_err(|message| LayoutError::Inconsistent {
                source_name: source_name.into(),
                message,
            })?;
        Ok(layout)
    }

    /// Structural checks a reader needs before indexing into the file.
    fn check_structure(&self) -> Result<(), String> {
        self.scheduler.check()?;
        let group_count = self.groups.len() as u32;
        if self
            .groups
            .iter()
            .any(|g| g.len() as u32 != self.group_size)
        {
            return Err(format!(
                "a group does not have group_size = {} disks",
                self.group_size
            ));
        }
        if self.disks as usize > crate::limits::MAX_DISKS
            || group_count as u64 * u64::from(self.group_size) != u64::from(self.disks)
        {
            return Err(format!(
                "{group_count} groups of {} do not make {} disks (at most {})",
                self.group_size,
                self.disks,
                crate::limits::MAX_DISKS
            ));
        }
        let states = self.states.len();
        for constraint in &self.group_constraints {
            if constraint.cost.len() != states {
                return Err(format!(
                    "constraint on `{}` has {} costs for {states} states",
                    constraint.resource,
                    constraint.cost.len()
                ));
            }
            // Bounding the weights bounds every cost sum: ≤ MAX_DISKS × MAX_UNITS fits i64.
            let disks: u64 = constraint.members.iter().map(|(_, w)| u64::from(*w)).sum();
            if disks > u64::from(self.disks)
                || constraint.members.iter().any(|(_, w)| *w > self.group_size)
            {
                return Err(format!(
                    "constraint on `{}` weighs more disks than the layout has",
                    constraint.resource
                ));
            }
            if let Some((group, _)) = constraint.members.iter().find(|(g, _)| *g >= group_count) {
                return Err(format!(
                    "constraint on `{}` names group {group} of {group_count}",
                    constraint.resource
                ));
            }
        }
        for name in self
            .spin_up_path
            .iter()
            .chain([&self.resting_state, &self.active_state])
        {
            if !self.states.contains(name) {
                return Err(format!("unknown state `{name}`"));
            }
        }
        // The path runs from the resting state to the active one, both ends included (an empty
        // one reached `verify`, `quality` and `sim --layout` and panicked there until
        // 2026-12-01).
        if self.spin_up_path.first() != Some(&self.resting_state)
            || self.spin_up_path.last() != Some(&self.active_state)
        {
            return Err(format!(
                "spin_up_path must run from resting_state `{}` to active_state `{}`, both included; got {:?}",
                self.resting_state, self.active_state, self.spin_up_path
            ));
        }
        for (name, witness) in [
            ("active_witness", &self.active_witness),
            ("spinning_witness", &self.spinning_witness),
        ] {
            if let Some(group) = witness.iter().find(|g| **g >= group_count) {
                return Err(format!("{name} names group {group} of {group_count}"));
            }
            let distinct: std::collections::BTreeSet<_> = witness.iter().collect();
            if distinct.len() != witness.len() {
                return Err(format!("{name} names a group twice"));
            }
        }
        Ok(())
    }

    pub fn state_index(&self, name: &str) -> Option<usize> {
        self.states.iter().position(|s| s == name)
    }
}

/// FNV-1a 64: a stable, dependency-free fingerprint (not a security hash).
pub fn fingerprint(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Sequences read from a layout file with at most as many elements as a valid layout can hold,
/// refused at the first one too many. Why: serde's `Vec` grows as long as the file goes on,
/// and a 16 MiB file of `[],` is 5.6 million empty groups (134 MB) before any structural check
/// could see that a layout has at most `MAX_DISKS` of them.
mod bounded {
    use crate::limits::MAX_DISKS;
    use serde::Deserialize;
    use serde::de::{DeserializeSeed, Deserializer, Error, SeqAccess, Visitor};
    use std::fmt;
    use std::marker::PhantomData;

    /// A sequence of at most `MAX` elements.
    pub fn vec<'de, D, T, const MAX: usize>(deserializer: D) -> Result<Vec<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        deserializer.deserialize_seq(Bounded::<T, MAX>(PhantomData))
    }

    /// `null` or a sequence of at most `MAX` elements.
    pub fn optional_vec<'de, D, T, const MAX: usize>(
        deserializer: D,
    ) -> Result<Option<Vec<T>>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        struct Optional<T, const MAX: usize>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for Optional<T, MAX> {
            type Value = Option<Vec<T>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "null or a sequence of at most {MAX} elements")
            }
            fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                vec::<D, T, MAX>(d).map(Some)
            }
        }
        deserializer.deserialize_option(Optional::<T, MAX>(PhantomData))
    }

    struct Bounded<T, const MAX: usize>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for Bounded<T, MAX> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a sequence of at most {MAX} elements")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::new();
            while let Some(element) = seq.next_element()? {
                if out.len() == MAX {
                    return Err(A::Error::custom(format!("more than {MAX} elements")));
                }
                out.push(element);
            }
            Ok(out)
        }
    }

    /// The groups: at most `MAX_DISKS` groups holding at most `MAX_DISKS` disk ids in all (a
    /// disk is in one group), counted across groups as they are read.
    pub fn groups<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Vec<u32>>, D::Error> {
        struct Groups;
        impl<'de> Visitor<'de> for Groups {
            type Value = Vec<Vec<u32>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "groups of at most {MAX_DISKS} disk ids in all")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut groups = Vec::new();
                let mut ids_left = MAX_DISKS;
                while let Some(group) = seq.next_element_seed(Ids {
                    left: &mut ids_left,
                })? {
                    if groups.len() == MAX_DISKS {
                        return Err(A::Error::custom(format!("more than {MAX_DISKS} groups")));
                    }
                    groups.push(group);
                }
                Ok(groups)
            }
        }
        deserializer.deserialize_seq(Groups)
    }

    /// One group's ids, taken from the budget shared by all groups.
    struct Ids<'a> {
        left: &'a mut usize,
    }

    impl<'de> DeserializeSeed<'de> for Ids<'_> {
        type Value = Vec<u32>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<u32>, D::Error> {
            d.deserialize_seq(self)
        }
    }

    impl<'de> Visitor<'de> for Ids<'_> {
        type Value = Vec<u32>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a group's disk ids")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u32>, A::Error> {
            let mut ids = Vec::new();
            while let Some(id) = seq.next_element()? {
                if *self.left == 0 {
                    return Err(A::Error::custom(format!(
                        "more than {MAX_DISKS} disk ids in all groups"
                    )));
                }
                *self.left -= 1;
                ids.push(id);
            }
            Ok(ids)
        }
    }
}
