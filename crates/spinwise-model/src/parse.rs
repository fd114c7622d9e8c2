//! Parsing a rack description (TOML, docs/rack-format.md) into a validated [`Rack`].
//!
//! Two stages: serde reads the text into `Raw*` structs that mirror the file (unknown fields are
//! refused, so a misspelt key is an error, not a silent default); then `validate` checks every
//! rule and builds the dense, indexed `Rack`. Every failure is a [`RackError`] naming the source,
//! the field and the reason; nothing here panics on user input.

use crate::amount::Amount;
use crate::error::{RackError, RackProblem};
use crate::limits;
use crate::quote;
use crate::rack::*;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRack {
    rack: RawHeader,
    #[serde(default)]
    axes: Vec<RawAxis>,
    disks: RawDisks,
    states: Vec<RawState>,
    transitions: Vec<RawTransition>,
    resources: Vec<RawResource>,
    #[serde(default)]
    failure_domains: Vec<RawFailureDomain>,
    disk: RawDiskModel,
    targets: RawTargets,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    sources: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAxis {
    name: String,
    size: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDisks {
    #[serde(default)]
    grid: bool,
    list: Option<Vec<RawDisk>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDisk {
    id: u32,
    #[serde(default)]
    at: Vec<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawState {
    name: String,
    #[serde(default)]
    resting: bool,
    #[serde(default)]
    active: bool,
    #[serde(default)]
    transient: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTransition {
    from: String,
    to: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResource {
    name: String,
    kind: ResourceKind,
    #[serde(default)]
    unit: String,
    cost: BTreeMap<String, Amount>,
    domains: RawDomains,
    budget: Amount,
    upper_bound: Option<Amount>,
    #[serde(default)]
    minimum_increase: Amount,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDomains {
    /// Group disks by these axes; `"y/2"` groups by floor(y / 2).
    by: Option<Vec<String>>,
    /// Explicit domains as lists of disk ids.
    lists: Option<Vec<Vec<u32>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFailureDomain {
    name: String,
    domains: RawDomains,
    annual_failure_rate: f64,
    #[serde(default = "yes")]
    spread: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "a number, or a table `{ distribution = \"fixed\" | \"uniform\" | \"normal\", ... }` with exactly that form's keys (value; min, max; mean, stddev, min, max)"
)]
enum RawDistribution {
    Number(f64),
    Table(Distribution),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDiskModel {
    capacity_tb: RawDistribution,
    bandwidth_mb_per_s: f64,
    seek_ms: f64,
    spin_up_latency_s: RawDistribution,
    mount_latency_s: RawDistribution,
    #[serde(default)]
    mount_latency_high_load_s: Option<RawDistribution>,
    unmount_latency_s: RawDistribution,
    annual_failure_rate: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTargets {
    durability_nines: f64,
    service_interval_days: f64,
    deployment_lifetime_years: f64,
    file_bandwidth_floor_mb_per_s: f64,
    io_concurrency_target: u32,
    capacity_overhead_max: f64,
    #[serde(default = "default_spare_exhaustion_probability")]
    spare_exhaustion_probability: f64,
    fairness: RawFairness,
}

fn default_spare_exhaustion_probability() -> f64 {
    0.01
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFairness {
    reordering_bound_gb: f64,
    rebuild_share: f64,
    max_queue_depth: u32,
    #[serde(default = "one_request")]
    concurrent_requests_per_class: u32,
    stagger_switches_min_queue: Option<u32>,
}

fn one_request() -> u32 {
    1
}

/// Parses and validates a rack description. `source_name` (a path or `preset:NAME`) is quoted in
/// every error.
pub fn parse_rack(source_name: &str, text: &str) -> Result<Rack, RackError> {
    let checker = Checker { source_name };
    if text.len() > limits::MAX_RACK_FILE_BYTES {
        return Err(checker.error(
            "(file)",
            RackProblem::TooMany {
                what: "bytes",
                limit: limits::MAX_RACK_FILE_BYTES,
            },
        ));
    }
    // Counted before parsing, with a lexer that allocates nothing: the parser's memory grows
    // with the token count, not the byte count (limits::MAX_RACK_TOKENS says by how much).
    if toml_parser::Source::new(text)
        .lex()
        .take(limits::MAX_RACK_TOKENS + 1)
        .count()
        > limits::MAX_RACK_TOKENS
    {
        return Err(checker.error(
            "(file)",
            RackProblem::TooMany {
                what: "TOML tokens (keys, values, punctuation, spaces)",
                limit: limits::MAX_RACK_TOKENS,
            },
        ));
    }
    let raw: RawRack = toml::from_str(text).map_err(|error| checker.syntax_error(text, &error))?;
    checker.validate(raw)
}

struct Checker<'a> {
    source_name: &'a str,
}

type Checked<T> = Result<T, RackError>;
/// The states and the transitions between them (as state indices).
type StateMachine = (Vec<State>, Vec<(StateIndex, StateIndex)>);

impl Checker<'_> {
    fn error(&self, field: impl Into<String>, problem: RackProblem) -> RackError {
        RackError {
            source_name: self.source_name.to_string(),
            field: field.into(),
            problem,
        }
    }

    fn syntax_error(&self, text: &str, error: &toml::de::Error) -> RackError {
        let field = match error.span() {
            Some(span) => {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                let source_line = text.lines().nth(line - 1).unwrap_or("").trim();
                // A line may be the whole file: quote its start and say how long it is.
                format!("line {line} (`{}`)", quote::excerpt(source_line))
            }
            None => "(document)".to_string(),
        };
        self.error(
            field,
            RackProblem::Syntax {
                // The parser's message may quote the input (an unknown key, a string of the
                // wrong type): bounded like the line.
                message: quote::message(error.message().trim()),
            },
        )
    }

    fn validate(&self, raw: RawRack) -> Checked<Rack> {
        if raw.rack.name.trim().is_empty() {
            return Err(self.error(
                "rack.name",
                RackProblem::Missing {
                    what: "a rack name",
                },
            ));
        }
        let axes = self.axes(&raw.axes)?;
        let disks = self.disks(&raw.disks, &axes)?;
        let (states, transitions) = self.states(&raw.states, &raw.transitions)?;
        let resting = states
            .iter()
            .position(|s| s.resting)
            .expect("checked above");
        let disk_model = self.disk_model(&raw.disk)?;
        let targets = self.targets(&raw.targets)?;
        let index = DiskLookup::new(&disks);
        self.unique_names(
            "resources",
            "resource",
            "resources",
            raw.resources.iter().map(|r| r.name.as_str()),
            limits::MAX_RESOURCES,
        )?;
        let mut resources = Vec::with_capacity(raw.resources.len());
        for raw_resource in &raw.resources {
            let field = format!("resources[{}]", raw_resource.name);
            resources.push(self.resource(
                &field,
                raw_resource,
                &axes,
                &disks,
                &index,
                &states,
                resting,
            )?);
        }
        self.unique_names(
            "failure_domains",
            "failure domain",
            "failure domains",
            raw.failure_domains.iter().map(|d| d.name.as_str()),
            limits::MAX_FAILURE_DOMAINS,
        )?;
        let mut failure_domains = Vec::with_capacity(raw.failure_domains.len());
        for raw_domain in &raw.failure_domains {
            let field = format!("failure_domains[{}]", raw_domain.name);
            self.probability(
                &format!("{field}.annual_failure_rate"),
                raw_domain.annual_failure_rate,
            )?;
            let (domains, _) =
                self.partition(&field, &raw_domain.domains, &axes, &disks, &index)?;
            failure_domains.push(FailureDomain {
                name: raw_domain.name.clone(),
                domains,
                annual_failure_rate: raw_domain.annual_failure_rate,
                spread: raw_domain.spread,
            });
        }
        Ok(Rack {
            name: raw.rack.name,
            description: raw.rack.description,
            sources: raw.rack.sources,
            axes,
            disks,
            states,
            transitions,
            resources,
            failure_domains,
            disk_model,
            targets,
        })
    }

    /// A section's entries: at most `limit`, each name used once.
    fn unique_names<'n>(
        &self,
        section: &str,
        what: &'static str,
        plural: &'static str,
        names: impl ExactSizeIterator<Item = &'n str>,
        limit: usize,
    ) -> Checked<()> {
        if names.len() > limit {
            return Err(self.error(
                section,
                RackProblem::TooMany {
                    what: plural,
                    limit,
                },
            ));
        }
        let mut seen = BTreeSet::new();
        for name in names {
            if !seen.insert(name) {
                return Err(self.error(
                    format!("{section}[{name}]"),
                    RackProblem::Duplicate {
                        what,
                        name: name.to_string(),
                    },
                ));
            }
        }
        Ok(())
    }

    fn axes(&self, raw: &[RawAxis]) -> Checked<Vec<Axis>> {
        self.unique_names(
            "axes",
            "axis",
            "axes",
            raw.iter().map(|a| a.name.as_str()),
            limits::MAX_AXES,
        )?;
        let mut axes = Vec::with_capacity(raw.len());
        for axis in raw {
            if axis.size == 0 || axis.size as usize > limits::MAX_DISKS {
                return Err(self.error(
                    format!("axes[{}].size", axis.name),
                    RackProblem::OutOfRange {
                        value: axis.size.to_string(),
                        expected: "an axis size between 1 and 100,000 (limits::MAX_DISKS)",
                    },
                ));
            }
            axes.push(Axis {
                name: axis.name.clone(),
                size: axis.size,
            });
        }
        Ok(axes)
    }

    fn disks(&self, raw: &RawDisks, axes: &[Axis]) -> Checked<Vec<Disk>> {
        match (raw.grid, &raw.list) {
            (true, None) => self.grid_disks(axes),
            (false, Some(list)) => self.listed_disks(list, axes),
            (true, Some(_)) => {
                Err(self.error("disks", RackProblem::DiskSpecification { found: "both" }))
            }
            (false, None) => {
                Err(self.error("disks", RackProblem::DiskSpecification { found: "neither" }))
            }
        }
    }

    /// Every point of the axes, ids in row-major order (the last axis varies fastest).
    fn grid_disks(&self, axes: &[Axis]) -> Checked<Vec<Disk>> {
        if axes.is_empty() {
            return Err(self.error(
                "disks.grid",
                RackProblem::Missing {
                    what: "at least one axis for a grid",
                },
            ));
        }
        let count = axes.iter().try_fold(1usize, |product, axis| {
            product.checked_mul(axis.size as usize)
        });
        let count = match count {
            Some(count) if count <= limits::MAX_DISKS => count,
            _ => {
                return Err(self.error(
                    "disks.grid",
                    RackProblem::TooMany {
                        what: "disks",
                        limit: limits::MAX_DISKS,
                    },
                ));
            }
        };
        let disks = (0..count)
            .map(|id| {
                let mut rest = id;
                let mut coordinates = vec![0; axes.len()];
                for (slot, axis) in coordinates.iter_mut().zip(axes).rev() {
                    *slot = (rest % axis.size as usize) as u32;
                    rest /= axis.size as usize;
                }
                Disk {
                    id: id as u32,
                    coordinates,
                }
            })
            .collect();
        Ok(disks)
    }

    fn listed_disks(&self, list: &[RawDisk], axes: &[Axis]) -> Checked<Vec<Disk>> {
        if list.is_empty() {
            return Err(self.error(
                "disks.list",
                RackProblem::Missing {
                    what: "at least one disk",
                },
            ));
        }
        if list.len() > limits::MAX_DISKS {
            return Err(self.error(
                "disks.list",
                RackProblem::TooMany {
                    what: "disks",
                    limit: limits::MAX_DISKS,
                },
            ));
        }
        let mut ids = BTreeSet::new();
        // Position → the id first listed there. A rack without axes gives every disk the empty
        // position, which is not a collision (such a rack says nothing about where disks are).
        let mut positions: BTreeMap<&[u32], u32> = BTreeMap::new();
        let mut disks = Vec::with_capacity(list.len());
        for disk in list {
            let field = format!("disks.list[id={}]", disk.id);
            if !ids.insert(disk.id) {
                return Err(self.error(
                    field,
                    RackProblem::Duplicate {
                        what: "disk id",
                        name: disk.id.to_string(),
                    },
                ));
            }
            if disk.at.len() != axes.len() {
                return Err(self.error(
                    format!("{field}.at"),
                    RackProblem::CoordinateCount {
                        expected: axes.len(),
                        found: disk.at.len(),
                    },
                ));
            }
            for (value, axis) in disk.at.iter().zip(axes) {
                if *value >= axis.size {
                    return Err(self.error(
                        format!("{field}.at"),
                        RackProblem::CoordinateOutOfRange {
                            axis: axis.name.clone(),
                            value: *value,
                            size: axis.size,
                        },
                    ));
                }
            }
            if !axes.is_empty()
                && let Some(first) = positions.insert(&disk.at, disk.id)
            {
                let at = axes
                    .iter()
                    .zip(&disk.at)
                    .map(|(axis, value)| format!("{}={value}", axis.name))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(self.error(
                    format!("{field}.at"),
                    RackProblem::SameCoordinates {
                        first,
                        second: disk.id,
                        at: format!("({at})"),
                    },
                ));
            }
            disks.push(Disk {
                id: disk.id,
                coordinates: disk.at.clone(),
            });
        }
        disks.sort_by_key(|disk| disk.id);
        Ok(disks)
    }

    /// The state machine: names unique, at most one role flag per state, exactly one resting
    /// and one active state, transitions between known states, and both directions of the
    /// resting ↔ active path reachable, with no transient state a disk could get stuck in.
    fn states(&self, raw: &[RawState], transitions: &[RawTransition]) -> Checked<StateMachine> {
        if raw.len() > limits::MAX_STATES {
            return Err(self.error(
                "states",
                RackProblem::TooMany {
                    what: "states",
                    limit: limits::MAX_STATES,
                },
            ));
        }
        let names = self.state_names(raw)?;
        for (flag, count) in [
            ("resting", raw.iter().filter(|s| s.resting).count()),
            ("active", raw.iter().filter(|s| s.active).count()),
        ] {
            if count != 1 {
                return Err(self.error("states", RackProblem::StateFlagCount { flag, count }));
            }
        }
        let edges = self.transitions(&names, transitions)?;
        let states: Vec<State> = raw
            .iter()
            .map(|s| State {
                name: s.name.clone(),
                resting: s.resting,
                active: s.active,
                transient: s.transient,
            })
            .collect();
        self.check_paths(&states, &edges)?;
        Ok((states, edges))
    }

    /// Each state's index by name; refuses a repeated name or a state with two role flags.
    fn state_names<'r>(&self, raw: &'r [RawState]) -> Checked<BTreeMap<&'r str, StateIndex>> {
        let mut names: BTreeMap<&str, StateIndex> = BTreeMap::new();
        for (index, state) in raw.iter().enumerate() {
            let field = format!("states[{}]", state.name);
            if names.insert(&state.name, index).is_some() {
                return Err(self.error(
                    field,
                    RackProblem::Duplicate {
                        what: "state",
                        name: state.name.clone(),
                    },
                ));
            }
            let flags = [
                (state.resting, "resting"),
                (state.active, "active"),
                (state.transient, "transient"),
            ];
            let set: Vec<&str> = flags
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, name)| *name)
                .collect();
            if set.len() > 1 {
                return Err(self.error(
                    field,
                    RackProblem::ConflictingStateFlags {
                        name: state.name.clone(),
                        first: set[0],
                        second: set[1],
                    },
                ));
            }
        }
        Ok(names)
    }

    /// The transitions as (from, to) index pairs; both ends must be declared states.
    fn transitions(
        &self,
        names: &BTreeMap<&str, StateIndex>,
        transitions: &[RawTransition],
    ) -> Checked<Vec<(StateIndex, StateIndex)>> {
        let mut edges = Vec::with_capacity(transitions.len());
        for (position, transition) in transitions.iter().enumerate() {
            let field = format!("transitions[{position}]");
            let from = *names.get(transition.from.as_str()).ok_or_else(|| {
                self.error(
                    format!("{field}.from"),
                    RackProblem::UnknownState {
                        name: transition.from.clone(),
                    },
                )
            })?;
            let to = *names.get(transition.to.as_str()).ok_or_else(|| {
                self.error(
                    format!("{field}.to"),
                    RackProblem::TransitionToNowhere {
                        name: transition.to.clone(),
                    },
                )
            })?;
            edges.push((from, to));
        }
        Ok(edges)
    }

    /// A disk can go from resting to active and back, and leave every transient state. Called
    /// once exactly one resting and one active state are known to exist.
    fn check_paths(&self, states: &[State], edges: &[(StateIndex, StateIndex)]) -> Checked<()> {
        let resting = states
            .iter()
            .position(|s| s.resting)
            .expect("counted above");
        let active = states.iter().position(|s| s.active).expect("counted above");
        let (resting_name, active_name) =
            (states[resting].name.clone(), states[active].name.clone());
        if !reachable(edges, states.len(), resting)[active] {
            return Err(self.error(
                "transitions",
                RackProblem::ActiveUnreachable {
                    resting: resting_name,
                    active: active_name,
                },
            ));
        }
        if !reachable(edges, states.len(), active)[resting] {
            return Err(self.error(
                "transitions",
                RackProblem::RestingUnreachable {
                    resting: resting_name,
                    active: active_name,
                },
            ));
        }
        if let Some(stuck) = states
            .iter()
            .enumerate()
            .find(|(index, state)| state.transient && !edges.iter().any(|(from, _)| from == index))
        {
            return Err(self.error(
                format!("states[{}]", stuck.1.name),
                RackProblem::TransientWithoutExit {
                    state: stuck.1.name.clone(),
                },
            ));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn resource(
        &self,
        field: &str,
        raw: &RawResource,
        axes: &[Axis],
        disks: &[Disk],
        index: &DiskLookup,
        states: &[State],
        resting: StateIndex,
    ) -> Checked<Resource> {
        let mut cost = Vec::with_capacity(states.len());
        for state in states {
            let value = raw.cost.get(&state.name).ok_or_else(|| {
                self.error(
                    format!("{field}.cost"),
                    RackProblem::MissingCost {
                        state: state.name.clone(),
                    },
                )
            })?;
            cost.push(*value);
        }
        if let Some(name) = raw
            .cost
            .keys()
            .find(|name| !states.iter().any(|s| &s.name == *name))
        {
            return Err(self.error(
                format!("{field}.cost"),
                RackProblem::UnknownState { name: name.clone() },
            ));
        }
        let (domains, domain_of) = self.partition(field, &raw.domains, axes, disks, index)?;
        let resource = Resource {
            name: raw.name.clone(),
            kind: raw.kind,
            unit: raw.unit.clone(),
            cost,
            domains,
            domain_of,
            budget: raw.budget,
            upper_bound: raw.upper_bound,
            minimum_increase: raw.minimum_increase,
        };
        if let Some(upper_bound) = raw.upper_bound
            && upper_bound < raw.budget
        {
            return Err(self.error(
                format!("{field}.upper_bound"),
                RackProblem::UpperBoundBelowBudget {
                    upper_bound: upper_bound.to_string(),
                    budget: raw.budget.to_string(),
                },
            ));
        }
        if resource.kind == ResourceKind::Hard {
            self.hard_budget(field, &resource, states, resting)?;
        }
        Ok(resource)
    }

    /// A hard resource: resting must be its cheapest state, and one disk per domain must be able to
    /// reach every state while the rest of its domain rests.
    fn hard_budget(
        &self,
        field: &str,
        resource: &Resource,
        states: &[State],
        resting: StateIndex,
    ) -> Checked<()> {
        let resting_cost = resource.cost[resting];
        for (state, cost) in states.iter().zip(&resource.cost) {
            if *cost < resting_cost {
                return Err(self.error(
                    format!("{field}.cost"),
                    RackProblem::RestingNotCheapest {
                        state: state.name.clone(),
                        cost: cost.to_string(),
                        resting_cost: resting_cost.to_string(),
                    },
                ));
            }
        }
        let size = resource.domain_size() as u64;
        let (costliest, highest) = resource
            .cost
            .iter()
            .enumerate()
            .max_by_key(|(_, c)| **c)
            .expect("states exist");
        let needed = resting_cost.times(size - 1) + *highest;
        if needed > resource.budget {
            return Err(self.error(
                format!("{field}.budget"),
                RackProblem::BudgetAdmitsNoDisk {
                    budget: resource.budget.to_string(),
                    domain_size: size as usize,
                    resting: resting_cost.times(size).to_string(),
                    state: states[costliest].name.clone(),
                    needed: needed.to_string(),
                },
            ));
        }
        Ok(())
    }

    /// Builds a partition of the disks into equal-size domains, from axes or explicit lists.
    fn partition(
        &self,
        field: &str,
        raw: &RawDomains,
        axes: &[Axis],
        disks: &[Disk],
        index: &DiskLookup,
    ) -> Checked<(Vec<Vec<DiskIndex>>, Vec<u32>)> {
        let domains = match (&raw.by, &raw.lists) {
            (Some(by), None) => {
                self.domains_by_axes(&format!("{field}.domains.by"), by, axes, disks)?
            }
            (None, Some(lists)) => {
                self.domains_from_lists(&format!("{field}.domains.lists"), lists, index)?
            }
            _ => {
                return Err(self.error(
                    format!("{field}.domains"),
                    RackProblem::Missing {
                        what: "exactly one of `by` or `lists`",
                    },
                ));
            }
        };
        let field = format!("{field}.domains");
        let domain_of = self.domain_of_each_disk(&field, &domains, disks)?;
        // `field` is `resources[NAME].domains` or `failure_domains[NAME].domains`: report NAME.
        let resource = field
            .split_once('[')
            .and_then(|(_, rest)| rest.split_once(']'))
            .map_or(field.as_str(), |(name, _)| name)
            .to_string();
        if let Some(disk) = domain_of.iter().position(|d| *d == u32::MAX) {
            return Err(self.error(
                &field,
                RackProblem::DiskAbsentFromDomains {
                    disk_id: disks[disk].id,
                    resource,
                },
            ));
        }
        Ok((domains, domain_of))
    }

    /// Each disk's domain (`u32::MAX` for a disk in none, which the caller reports); refuses an
    /// empty domain, domains of unequal sizes and a disk in two domains.
    fn domain_of_each_disk(
        &self,
        field: &str,
        domains: &[Vec<DiskIndex>],
        disks: &[Disk],
    ) -> Checked<Vec<u32>> {
        let mut domain_of = vec![u32::MAX; disks.len()];
        for (domain_index, domain) in domains.iter().enumerate() {
            if domain.is_empty() {
                return Err(self.error(
                    field,
                    RackProblem::EmptyDomain {
                        index: domain_index,
                    },
                ));
            }
            if domain.len() != domains[0].len() {
                return Err(self.error(
                    field,
                    RackProblem::UnequalDomainSizes {
                        first_size: domains[0].len(),
                        other: domain_index,
                        other_size: domain.len(),
                    },
                ));
            }
            for &disk in domain {
                let slot = &mut domain_of[disk as usize];
                if *slot != u32::MAX {
                    return Err(self.error(
                        field,
                        RackProblem::DiskInTwoDomains {
                            disk_id: disks[disk as usize].id,
                            first: *slot as usize,
                            second: domain_index,
                        },
                    ));
                }
                *slot = domain_index as u32;
            }
        }
        Ok(domain_of)
    }

    fn domains_by_axes(
        &self,
        field: &str,
        by: &[String],
        axes: &[Axis],
        disks: &[Disk],
    ) -> Checked<Vec<Vec<DiskIndex>>> {
        let mut keys = Vec::with_capacity(by.len());
        for term in by {
            let (name, divisor) = match term.split_once('/') {
                Some((name, divisor)) => {
                    let divisor: u32 =
                        divisor
                            .trim()
                            .parse()
                            .ok()
                            .filter(|d| *d > 0)
                            .ok_or_else(|| {
                                self.error(
                                    field,
                                    RackProblem::OutOfRange {
                                        value: term.clone(),
                                        expected: "`axis` or `axis/positive-integer`",
                                    },
                                )
                            })?;
                    (name.trim(), divisor)
                }
                None => (term.trim(), 1),
            };
            let axis = axes.iter().position(|a| a.name == name).ok_or_else(|| {
                self.error(
                    field,
                    RackProblem::UnknownAxis {
                        name: name.to_string(),
                    },
                )
            })?;
            keys.push((axis, divisor));
        }
        let mut groups: BTreeMap<Vec<u32>, Vec<DiskIndex>> = BTreeMap::new();
        for (position, disk) in disks.iter().enumerate() {
            let key = keys
                .iter()
                .map(|&(axis, divisor)| disk.coordinates[axis] / divisor)
                .collect();
            groups.entry(key).or_default().push(position as DiskIndex);
        }
        Ok(groups.into_values().collect())
    }

    fn domains_from_lists(
        &self,
        field: &str,
        lists: &[Vec<u32>],
        index: &DiskLookup,
    ) -> Checked<Vec<Vec<DiskIndex>>> {
        let mut domains = Vec::with_capacity(lists.len());
        for list in lists {
            let mut domain = Vec::with_capacity(list.len());
            for id in list {
                let disk = index
                    .find(*id)
                    .ok_or_else(|| self.error(field, RackProblem::UnknownDisk { id: *id }))?;
                domain.push(disk);
            }
            domain.sort_unstable();
            if let Some(pair) = domain.windows(2).find(|pair| pair[0] == pair[1]) {
                let id = lists
                    .iter()
                    .flatten()
                    .find(|id| index.find(**id) == Some(pair[0]))
                    .copied()
                    .unwrap_or_default();
                return Err(self.error(
                    field,
                    RackProblem::Duplicate {
                        what: "disk id within one domain",
                        name: id.to_string(),
                    },
                ));
            }
            domains.push(domain);
        }
        Ok(domains)
    }

    fn disk_model(&self, raw: &RawDiskModel) -> Checked<DiskModel> {
        self.positive("disk.bandwidth_mb_per_s", raw.bandwidth_mb_per_s)?;
        self.non_negative("disk.seek_ms", raw.seek_ms)?;
        self.at_most(
            "disk.seek_ms",
            raw.seek_ms,
            limits::MAX_SEEK_MS,
            "at most 600,000 ms (ten minutes)",
        )?;
        self.probability("disk.annual_failure_rate", raw.annual_failure_rate)?;
        Ok(DiskModel {
            capacity_tb: self.distribution("disk.capacity_tb", &raw.capacity_tb, true)?,
            bandwidth_mb_per_s: raw.bandwidth_mb_per_s,
            seek_ms: raw.seek_ms,
            spin_up_latency_s: self.latency("disk.spin_up_latency_s", &raw.spin_up_latency_s)?,
            mount_latency_s: self.latency("disk.mount_latency_s", &raw.mount_latency_s)?,
            mount_latency_high_load_s: raw
                .mount_latency_high_load_s
                .as_ref()
                .map(|high| self.latency("disk.mount_latency_high_load_s", high))
                .transpose()?,
            unmount_latency_s: self.latency("disk.unmount_latency_s", &raw.unmount_latency_s)?,
            annual_failure_rate: raw.annual_failure_rate,
        })
    }

    fn distribution(
        &self,
        field: &str,
        raw: &RawDistribution,
        positive: bool,
    ) -> Checked<Distribution> {
        let distribution = match raw {
            RawDistribution::Number(value) => Distribution::Fixed { value: *value },
            RawDistribution::Table(table) => table.clone(),
        };
        let (low, high) = match distribution {
            Distribution::Fixed { value } => (value, value),
            Distribution::Uniform { min, max } => (min, max),
            Distribution::Normal {
                mean,
                stddev,
                min,
                max,
            } => {
                self.non_negative(&format!("{field}.stddev"), stddev)?;
                self.non_negative(&format!("{field}.mean"), mean)?;
                if !(min..=max).contains(&mean) {
                    return Err(self.error(
                        format!("{field}.mean"),
                        RackProblem::OutOfRange {
                            value: quote::number(mean),
                            expected: "a mean within [min, max]",
                        },
                    ));
                }
                (min, max)
            }
        };
        if positive {
            self.positive(field, low)?
        } else {
            self.non_negative(field, low)?
        }
        self.non_negative(field, high)?;
        if low > high {
            return Err(self.error(
                field,
                RackProblem::InvertedRange {
                    min: low,
                    max: high,
                },
            ));
        }
        Ok(distribution)
    }

    /// A latency distribution: values ≥ 0, none above [`limits::MAX_LATENCY_S`].
    fn latency(&self, field: &str, raw: &RawDistribution) -> Checked<Distribution> {
        let distribution = self.distribution(field, raw, false)?;
        let highest_s = match distribution {
            Distribution::Fixed { value } => value,
            Distribution::Uniform { max, .. } | Distribution::Normal { max, .. } => max,
        };
        self.at_most(
            field,
            highest_s,
            limits::MAX_LATENCY_S,
            "at most 86,400 s (a day) for every value it can take",
        )?;
        Ok(distribution)
    }

    fn at_most(&self, field: &str, value: f64, limit: f64, expected: &'static str) -> Checked<()> {
        self.in_range(field, value, value <= limit, expected)
    }

    /// `Ok` when `fine`, else `value` out of range for `field`, expected `expected`.
    fn in_range(&self, field: &str, value: f64, fine: bool, expected: &'static str) -> Checked<()> {
        if fine {
            Ok(())
        } else {
            Err(self.error(
                field,
                RackProblem::OutOfRange {
                    value: quote::number(value),
                    expected,
                },
            ))
        }
    }

    fn targets(&self, raw: &RawTargets) -> Checked<Targets> {
        self.positive("targets.durability_nines", raw.durability_nines)?;
        self.positive("targets.service_interval_days", raw.service_interval_days)?;
        self.positive(
            "targets.deployment_lifetime_years",
            raw.deployment_lifetime_years,
        )?;
        self.non_negative(
            "targets.file_bandwidth_floor_mb_per_s",
            raw.file_bandwidth_floor_mb_per_s,
        )?;
        if raw.io_concurrency_target == 0 {
            return Err(self.error(
                "targets.io_concurrency_target",
                RackProblem::OutOfRange {
                    value: "0".into(),
                    expected: "at least 1 group",
                },
            ));
        }
        if !(raw.capacity_overhead_max > 0.0 && raw.capacity_overhead_max < 1.0) {
            return Err(self.error(
                "targets.capacity_overhead_max",
                RackProblem::OutOfRange {
                    value: quote::number(raw.capacity_overhead_max),
                    expected: "a fraction strictly between 0 and 1",
                },
            ));
        }
        if !(raw.spare_exhaustion_probability > 0.0 && raw.spare_exhaustion_probability < 1.0) {
            return Err(self.error(
                "targets.spare_exhaustion_probability",
                RackProblem::OutOfRange {
                    value: quote::number(raw.spare_exhaustion_probability),
                    expected: "a probability strictly between 0 and 1",
                },
            ));
        }
        let fairness = Fairness {
            reordering_bound_gb: raw.fairness.reordering_bound_gb,
            rebuild_share: raw.fairness.rebuild_share,
            max_queue_depth: raw.fairness.max_queue_depth,
            concurrent_requests_per_class: raw.fairness.concurrent_requests_per_class,
            stagger_switches_min_queue: raw.fairness.stagger_switches_min_queue,
        };
        if let Some(problem) = fairness.out_of_range() {
            return Err(self.error(
                format!("targets.fairness.{}", problem.key),
                RackProblem::OutOfRange {
                    value: problem.value,
                    expected: problem.expected,
                },
            ));
        }
        Ok(Targets {
            durability_nines: raw.durability_nines,
            service_interval_days: raw.service_interval_days,
            deployment_lifetime_years: raw.deployment_lifetime_years,
            file_bandwidth_floor_mb_per_s: raw.file_bandwidth_floor_mb_per_s,
            io_concurrency_target: raw.io_concurrency_target,
            capacity_overhead_max: raw.capacity_overhead_max,
            spare_exhaustion_probability: raw.spare_exhaustion_probability,
            fairness,
        })
    }

    fn positive(&self, field: &str, value: f64) -> Checked<()> {
        let fine = value.is_finite() && value > 0.0;
        self.in_range(field, value, fine, "a positive finite number")
    }

    fn non_negative(&self, field: &str, value: f64) -> Checked<()> {
        let fine = value.is_finite() && value >= 0.0;
        self.in_range(field, value, fine, "a finite number ≥ 0")
    }

    fn probability(&self, field: &str, value: f64) -> Checked<()> {
        let fine = (0.0..=1.0).contains(&value);
        self.in_range(field, value, fine, "a probability between 0 and 1")
    }
}

/// Maps user disk ids to dense indices.
struct DiskLookup {
    by_id: BTreeMap<u32, DiskIndex>,
}

impl DiskLookup {
    fn new(disks: &[Disk]) -> DiskLookup {
        DiskLookup {
            by_id: disks
                .iter()
                .enumerate()
                .map(|(index, disk)| (disk.id, index as DiskIndex))
                .collect(),
        }
    }

    fn find(&self, id: u32) -> Option<DiskIndex> {
        self.by_id.get(&id).copied()
    }
}

fn reachable(edges: &[(StateIndex, StateIndex)], count: usize, start: StateIndex) -> Vec<bool> {
    let mut seen = vec![false; count];
    let mut stack = vec![start];
    seen[start] = true;
    while let Some(state) = stack.pop() {
        for &(from, to) in edges {
            if from == state && !seen[to] {
                seen[to] = true;
                stack.push(to);
            }
        }
    }
    seen
}
