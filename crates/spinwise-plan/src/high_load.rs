//! The exact high-load maximum of a layout (issue 29): the most groups that can be spinning at
//! once in Flamingo's high-load sense — all of them active but one, which spins up beside them —
//! with every hard budget holding disk by disk.
//!
//! The feasibility test is the verifier's: each hard domain of the rack is charged, per disk, the
//! active step for an active group's disks and the spin-up path's costliest step for the spinning
//! group's disks, on top of every disk of the domain resting. Nothing here is sampled.
//!
//! Method, by size of the space:
//! - **Exhaustive** ([`EXHAUSTIVE_MAX_GROUPS`] groups or fewer): every subset, every choice of the
//!   spinning group in it.
//! - **Branch and bound** otherwise: first the all-active relaxation (no group spinning up; a
//!   spin-up costs at least the active state, so it bounds every spinning choice at once), then
//!   for each choice of the spinning group a depth-first search over the other groups
//!   (Tomita-style: candidates coloured into classes of pairwise incompatible groups, at most one
//!   per class joins), also pruned by an admissible capacity count (per hard resource, the active
//!   disks each domain can still take, capped by the disks the candidates have there, summed per
//!   component of the resource's domains — domains a group's disks join — and divided by the
//!   group size: a layout that keeps each group inside one pair of columns fills each pair's air
//!   channels on its own, which a rack-wide sum cannot see). The search starts from the best greedy witness, so it only has
//!   to beat it or prove nothing does. Nodes count groups added to a partial set plus one per
//!   candidate whose compatibility row is compiled; the node limit bounds both.
//!
//! Invariants: `witness` always fits (its last group spinning up); `upper_bound ≥ witness.len()`
//! is proven (by a completed search, or by the capacity count at every node left open when the
//! node limit stopped the search); `exact` iff they are equal. Deterministic: fixed orders, no
//! clock, no randomness.

use serde::Serialize;
use spinwise_model::{DiskIndex, GroupIndex, Rack};

/// Layouts with at most this many groups are searched exhaustively (2^16 subsets × 16 spinning
/// choices is well under a second).
pub const EXHAUSTIVE_MAX_GROUPS: usize = 16;
/// Search nodes allowed for one layout (a limit on everything: a pathological rack stops here and
/// reports a lower bound and a proven upper bound instead of running for hours).
pub const DEFAULT_NODE_LIMIT: u64 = 200_000;

/// How the figure was established.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HighLoadMethod {
    Exhaustive,
    BranchAndBound,
}

impl HighLoadMethod {
    pub fn name(self) -> &'static str {
        match self {
            HighLoadMethod::Exhaustive => "exhaustive",
            HighLoadMethod::BranchAndBound => "branch-and-bound",
        }
    }
}

/// Result of [`high_load_maximum`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HighLoadMaximum {
    /// Groups that fit, the last spinning up while the others are active.
    pub witness: Vec<GroupIndex>,
    /// Proven: no larger set fits.
    pub upper_bound: u64,
    /// `witness.len() == upper_bound`: the search completed (or met its bound).
    pub exact: bool,
    pub method: HighLoadMethod,
    /// Subsets examined (exhaustive) or search nodes expanded (branch and bound).
    pub nodes: u64,
    /// The node limit stopped the search: `witness` is then only a lower bound.
    pub limit_hit: bool,
}

/// One hard domain of the rack, in micro-units per disk above resting.
struct Domain {
    headroom: i64,
    spinning: i64,
    active: i64,
}

/// The rack's hard domains compiled over a disk → group assignment.
struct Compiled {
    domains: Vec<Domain>,
    /// Domain indices of each hard resource (in rack order).
    resources: Vec<Vec<usize>>,
    /// Per domain: its component within its resource — domains joined by a group with disks in
    /// both. A group's disks never leave its component, so capacity is counted per component.
    component: Vec<usize>,
    /// Components of each hard resource (parallel to `resources`).
    component_counts: Vec<usize>,
    /// Per group: (domain, disks of the group in it), ascending by domain.
    weights: Vec<Vec<(usize, i64)>>,
    group_size: i64,
}

impl Compiled {
    fn new(rack: &Rack, groups: &[Vec<DiskIndex>]) -> Compiled {
        let path = rack.spin_up_path();
        let (resting, active) = (rack.resting_state(), rack.active_state());
        let mut group_of = vec![usize::MAX; rack.disk_count()];
        for (group, disks) in groups.iter().enumerate() {
            for &disk in disks {
                if let Some(slot) = group_of.get_mut(disk as usize) {
                    *slot = group;
                }
            }
        }
        let mut domains = Vec::new();
        let mut resources = Vec::new();
        let mut weights: Vec<Vec<(usize, i64)>> = vec![Vec::new(); groups.len()];
        for (_, resource) in rack.hard_resources() {
            let rest = resource.cost[resting];
            // The costliest instant of the spin-up path, as the verifier charges it.
            let spinning = path
                .iter()
                .map(|s| resource.cost[*s] - rest)
                .max()
                .unwrap_or_default()
                .micros();
            let active = (resource.cost[active] - rest).micros();
            let mut members = Vec::new();
            for disks in &resource.domains {
                let domain = domains.len();
                members.push(domain);
                domains.push(Domain {
                    headroom: (resource.budget - rest.times(disks.len() as u64)).micros(),
                    spinning,
                    active,
                });
                let mut count: std::collections::BTreeMap<usize, i64> = Default::default();
                for &disk in disks {
                    if let Some(&group) = group_of.get(disk as usize).filter(|g| **g != usize::MAX)
                    {
                        *count.entry(group).or_default() += 1;
                    }
                }
                for (group, disks) in count {
                    weights[group].push((domain, disks));
                }
            }
            resources.push(members);
        }
        let group_size = groups.first().map_or(1, Vec::len).max(1) as i64;
        let (component, component_counts) = components(domains.len(), &resources, &weights);
        Compiled {
            domains,
            resources,
            component,
            component_counts,
            weights,
            group_size,
        }
    }

    fn groups(&self) -> usize {
        self.weights.len()
    }

    /// Whether `active` groups active and `spinning` spinning up fit every hard domain.
    fn fits(&self, active: &[GroupIndex], spinning: GroupIndex) -> bool {
        let mut load = vec![0i64; self.domains.len()];
        for &group in active {
            for &(domain, disks) in &self.weights[group as usize] {
                load[domain] += disks * self.domains[domain].active;
            }
        }
        for &(domain, disks) in &self.weights[spinning as usize] {
            load[domain] += disks * self.domains[domain].spinning;
        }
        load.iter()
            .zip(&self.domains)
            .all(|(load, domain)| *load <= domain.headroom)
    }
}

/// Per domain, the index of its component within its resource (domains a group's disks join,
/// transitively), numbered from 0 in order of first domain; and the component count of each
/// resource.
fn components(
    domain_count: usize,
    resources: &[Vec<usize>],
    weights: &[Vec<(usize, i64)>],
) -> (Vec<usize>, Vec<usize>) {
    // Union-find over domains; a group joins every domain it has disks in (across resources
    // too, which is harmless: each resource's domains are then numbered separately below, and
    // a group links only domains of the resources it touches — every one).
    let mut parent: Vec<usize> = (0..domain_count).collect();
    fn root(parent: &mut [usize], mut node: usize) -> usize {
        while parent[node] != node {
            parent[node] = parent[parent[node]];
            node = parent[node];
        }
        node
    }
    let mut resource_of = vec![0; domain_count];
    for (resource, members) in resources.iter().enumerate() {
        for &domain in members {
            resource_of[domain] = resource;
        }
    }
    for group in weights {
        let mut first_of_resource: std::collections::BTreeMap<usize, usize> = Default::default();
        for &(domain, _) in group {
            let first = *first_of_resource
                .entry(resource_of[domain])
                .or_insert(domain);
            let (a, b) = (root(&mut parent, first), root(&mut parent, domain));
            parent[a] = b;
        }
    }
    let mut component = vec![0; domain_count];
    let mut counts = Vec::with_capacity(resources.len());
    for members in resources {
        let mut numbers: std::collections::BTreeMap<usize, usize> = Default::default();
        for &domain in members {
            let next = numbers.len();
            component[domain] = *numbers.entry(root(&mut parent, domain)).or_insert(next);
        }
        counts.push(numbers.len());
    }
    (component, counts)
}

/// The exact high-load maximum of the layout `groups` on `rack` (see the module comment).
/// `seed` is a known witness (e.g. a greedy one), checked before use; `node_limit` caps the work.
pub fn high_load_maximum(
    rack: &Rack,
    groups: &[Vec<DiskIndex>],
    seed: &[GroupIndex],
    node_limit: u64,
) -> HighLoadMaximum {
    let method = if groups.len() <= EXHAUSTIVE_MAX_GROUPS {
        HighLoadMethod::Exhaustive
    } else {
        HighLoadMethod::BranchAndBound
    };
    high_load_maximum_by(method, rack, groups, seed, node_limit)
}

/// [`high_load_maximum`] with the method forced (so tests can check one method against the
/// other). Exhaustive search is refused above [`EXHAUSTIVE_MAX_GROUPS`] groups — its subsets would
/// not fit the mask — and branch and bound runs instead; the result names the method used.
pub fn high_load_maximum_by(
    method: HighLoadMethod,
    rack: &Rack,
    groups: &[Vec<DiskIndex>],
    seed: &[GroupIndex],
    node_limit: u64,
) -> HighLoadMaximum {
    let compiled = Compiled::new(rack, groups);
    let mut best: Vec<GroupIndex> = match seed.split_last() {
        Some((last, actives))
            if seed.iter().all(|g| (*g as usize) < compiled.groups())
                && compiled.fits(actives, *last) =>
        {
            seed.to_vec()
        }
        _ => Vec::new(),
    };
    if method == HighLoadMethod::Exhaustive && compiled.groups() <= EXHAUSTIVE_MAX_GROUPS {
        return exhaustive(&compiled, best);
    }
    let mut search = Search::new(&compiled, node_limit);
    // Phase 1, the relaxation: every group active, none spinning up. A spin-up costs at least
    // the active state on every resource (the path ends in it), so no set is larger with one of
    // its groups spinning up than the largest all-active set: one search bounds them all, where
    // phase 2 needs one per spinning choice. The witness is such a set to start from.
    search.node_limit = node_limit / 2;
    let mut all_active = best.clone();
    search.run(None, &mut all_active);
    let relaxed_bound = if search.stopped {
        search.open_bound.max(all_active.len() as u64)
    } else {
        all_active.len() as u64
    };
    search.node_limit = node_limit;
    search.stopped = false;
    search.open_bound = 0;
    // Phase 2, each spinning choice, the largest root bound first (the best witness tends to
    // come early, and choices whose bound cannot beat it are closed without a node).
    let mut choices: Vec<(u64, GroupIndex)> = Vec::new();
    if relaxed_bound > best.len() as u64 {
        choices = (0..compiled.groups() as GroupIndex)
            .filter_map(|g| search.root_bound(g).map(|b| (b.min(relaxed_bound), g)))
            .collect();
        choices.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    }
    let mut upper_bound = best.len() as u64;
    for &(root_bound, spinning) in &choices {
        if root_bound <= best.len() as u64 {
            continue;
        }
        if search.stopped {
            upper_bound = upper_bound.max(root_bound);
            continue;
        }
        search.run(Some(spinning), &mut best);
        if search.stopped {
            upper_bound = upper_bound.max(search.open_bound.min(relaxed_bound));
        }
    }
    let upper_bound = upper_bound.max(best.len() as u64);
    let best_len = best.len() as u64;
    HighLoadMaximum {
        exact: upper_bound == best.len() as u64,
        witness: best,
        upper_bound,
        method: HighLoadMethod::BranchAndBound,
        nodes: search.nodes,
        // Only the node limit leaves a gap: a completed phase 2 closes every choice.
        limit_hit: upper_bound > best_len,
    }
}

/// Every subset of at most [`EXHAUSTIVE_MAX_GROUPS`] groups, every spinning choice in it.
fn exhaustive(compiled: &Compiled, mut best: Vec<GroupIndex>) -> HighLoadMaximum {
    let groups = compiled.groups();
    let mut nodes = 0;
    let mut members = Vec::with_capacity(groups);
    for mask in 1u32..(1u32 << groups) {
        nodes += 1;
        if mask.count_ones() as usize <= best.len() {
            continue;
        }
        members.clear();
        members.extend((0..groups as GroupIndex).filter(|g| mask & (1 << g) != 0));
        for position in 0..members.len() {
            let spinning = members[position];
            let actives: Vec<GroupIndex> =
                members.iter().copied().filter(|g| *g != spinning).collect();
            if compiled.fits(&actives, spinning) {
                best = actives;
                best.push(spinning);
                break;
            }
        }
    }
    HighLoadMaximum {
        upper_bound: best.len() as u64,
        exact: true,
        witness: best,
        method: HighLoadMethod::Exhaustive,
        nodes,
        limit_hit: false,
    }
}

struct Search<'a> {
    compiled: &'a Compiled,
    /// Load of each domain above resting, in micro-units.
    load: Vec<i64>,
    /// Scratch: disks each domain holds of a node's candidate groups (zero between uses).
    available: Vec<i64>,
    /// Scratch: room counted per component of one resource (zero between uses).
    component_room: Vec<i64>,
    /// Candidate active groups of the current spinning choice.
    order: Vec<GroupIndex>,
    /// Per group, bit set of the groups it can be active beside (with the spinning group and
    /// nothing else): two groups that cannot are never in one solution.
    compatible: Vec<Vec<u64>>,
    current: Vec<GroupIndex>,
    nodes: u64,
    node_limit: u64,
    stopped: bool,
    /// When stopped: the largest bound (spinning group included, if any) of any node left open.
    open_bound: u64,
}

impl<'a> Search<'a> {
    fn new(compiled: &'a Compiled, node_limit: u64) -> Search<'a> {
        let largest_resource = compiled.component_counts.iter().copied().max();
        Search {
            compiled,
            load: vec![0; compiled.domains.len()],
            available: vec![0; compiled.domains.len()],
            component_room: vec![0; largest_resource.unwrap_or(0)],
            order: Vec::new(),
            compatible: Vec::new(),
            current: Vec::new(),
            nodes: 0,
            node_limit,
            stopped: false,
            open_bound: 0,
        }
    }
}

fn has(set: &[u64], group: GroupIndex) -> bool {
    set[group as usize / 64] & (1 << (group % 64)) != 0
}

impl Search<'_> {
    /// Admissible bound on the set size (spinning group included) with `spinning` spinning up;
    /// `None` when that group cannot even spin up alone.
    fn root_bound(&mut self, spinning: GroupIndex) -> Option<u64> {
        if !self.start(Some(spinning)) {
            return None;
        }
        let candidates = std::mem::take(&mut self.order);
        let bound = 1 + self.capacity_bound(&candidates);
        self.order = candidates;
        Some(bound)
    }

    /// Resets the state for `spinning` (`None`: every group active, no spin-up); false when it
    /// cannot spin up alone.
    fn start(&mut self, spinning: Option<GroupIndex>) -> bool {
        let compiled = self.compiled;
        self.load.iter_mut().for_each(|l| *l = 0);
        for &(domain, disks) in spinning.map_or(&[][..], |g| &compiled.weights[g as usize]) {
            self.load[domain] += disks * compiled.domains[domain].spinning;
        }
        if self
            .load
            .iter()
            .zip(&compiled.domains)
            .any(|(l, d)| *l > d.headroom)
        {
            return false;
        }
        self.order = (0..compiled.groups() as GroupIndex)
            .filter(|g| Some(*g) != spinning && self.fits(*g))
            .collect();
        self.current.clear();
        true
    }

    /// Fills `compatible` for the candidates of the current spinning choice.
    fn compile_pairs(&mut self) {
        let compiled = self.compiled;
        let words = compiled.groups().div_ceil(64);
        self.compatible = vec![vec![0; words]; compiled.groups()];
        let order = std::mem::take(&mut self.order);
        for &a in &order {
            for &(domain, disks) in &compiled.weights[a as usize] {
                self.load[domain] += disks * compiled.domains[domain].active;
            }
            for &b in &order {
                if b != a && self.fits(b) {
                    self.compatible[a as usize][b as usize / 64] |= 1 << (b % 64);
                }
            }
            for &(domain, disks) in &compiled.weights[a as usize] {
                self.load[domain] -= disks * compiled.domains[domain].active;
            }
        }
        self.order = order;
    }

    fn fits(&self, group: GroupIndex) -> bool {
        self.compiled.weights[group as usize]
            .iter()
            .all(|&(domain, disks)| {
                let d = &self.compiled.domains[domain];
                self.load[domain] + disks * d.active <= d.headroom
            })
    }

    /// Admissible bound on how many of `candidates` can be made active on top of the current
    /// load: per hard resource, each domain takes at most ⌊remaining headroom / active step⌋ more
    /// active disks and at most the disks the candidates have there; a group's `group_size` disks
    /// all land in one component of the resource's domains (see [`components`]), so each
    /// component holds at most ⌊its room / group_size⌋ more groups. Also at most the candidates.
    fn capacity_bound(&mut self, candidates: &[GroupIndex]) -> u64 {
        let compiled = self.compiled;
        for &group in candidates {
            for &(domain, disks) in &compiled.weights[group as usize] {
                self.available[domain] += disks;
            }
        }
        let mut bound = candidates.len() as u64;
        for (members, &count) in compiled.resources.iter().zip(&compiled.component_counts) {
            for &domain in members {
                let d = &compiled.domains[domain];
                let room = if d.active > 0 {
                    ((d.headroom - self.load[domain]).max(0) / d.active).min(self.available[domain])
                } else {
                    self.available[domain]
                };
                self.component_room[compiled.component[domain]] += room;
            }
            let groups: i64 = self.component_room[..count]
                .iter_mut()
                .map(|room| std::mem::take(room) / compiled.group_size)
                .sum();
            bound = bound.min(groups as u64);
        }
        for &group in candidates {
            for &(domain, _) in &compiled.weights[group as usize] {
                self.available[domain] = 0;
            }
        }
        bound
    }

    /// Searches with `spinning` spinning up (`None`: all active), improving `best`: with a
    /// spinning group `best` is a witness (that group last), without one a set of active groups.
    fn run(&mut self, spinning: Option<GroupIndex>, best: &mut Vec<GroupIndex>) {
        if !self.start(spinning) {
            return;
        }
        // Compiling the pairs costs a row of fit checks per candidate, as much as a node each:
        // they count against the limit, so the limit bounds all the work, not only the branching.
        let rows = self.order.len() as u64;
        if self.nodes + rows > self.node_limit {
            let candidates = std::mem::take(&mut self.order);
            let bound = u64::from(spinning.is_some()) + self.capacity_bound(&candidates);
            self.order = candidates;
            self.stopped = true;
            self.open_bound = self.open_bound.max(bound);
            return;
        }
        self.nodes += rows;
        self.compile_pairs();
        let candidates = std::mem::take(&mut self.order);
        self.branch(&candidates, spinning, best);
        self.order = candidates;
    }

    /// Greedy colouring of `candidates` into classes of pairwise incompatible groups (at most one
    /// of each class can join a solution). Returns the candidates ordered by class, with the
    /// class number (1-based) of each.
    fn colour(&self, candidates: &[GroupIndex]) -> Vec<(GroupIndex, u64)> {
        let words = self.compiled.groups().div_ceil(64);
        let mut classes: Vec<Vec<u64>> = Vec::new();
        let mut members: Vec<Vec<GroupIndex>> = Vec::new();
        for &group in candidates {
            let compatible = &self.compatible[group as usize];
            let class = classes
                .iter()
                .position(|set| set.iter().zip(compatible).all(|(s, c)| s & c == 0));
            let class = class.unwrap_or_else(|| {
                classes.push(vec![0; words]);
                members.push(Vec::new());
                classes.len() - 1
            });
            classes[class][group as usize / 64] |= 1 << (group % 64);
            members[class].push(group);
        }
        members
            .into_iter()
            .enumerate()
            .flat_map(|(class, groups)| groups.into_iter().map(move |g| (g, class as u64 + 1)))
            .collect()
    }

    /// Extends `current` with groups of `candidates`, each compatible with every group of
    /// `current` and fitting on top of the current load (Tomita-style maximum clique search over
    /// the compatibility graph, with the capacity count as a second bound).
    fn branch(
        &mut self,
        candidates: &[GroupIndex],
        spinning: Option<GroupIndex>,
        best: &mut Vec<GroupIndex>,
    ) {
        let base = u64::from(spinning.is_some()) + self.current.len() as u64;
        if base > best.len() as u64 {
            *best = self.current.clone();
            best.extend(spinning);
        }
        if candidates.is_empty() {
            return;
        }
        let capacity = base + self.capacity_bound(candidates);
        if capacity <= best.len() as u64 {
            return;
        }
        let compiled = self.compiled;
        let coloured = self.colour(candidates);
        // Highest class first: a group with class c and those before it hold at most c groups
        // of any solution, so once base + c cannot beat the best, nothing left can.
        for position in (0..coloured.len()).rev() {
            let (group, class) = coloured[position];
            let bound = (base + class).min(capacity);
            if bound <= best.len() as u64 {
                return;
            }
            if self.nodes >= self.node_limit {
                self.stopped = true;
                self.open_bound = self.open_bound.max(bound);
                return;
            }
            self.nodes += 1;
            let weights = &compiled.weights[group as usize];
            for &(domain, disks) in weights {
                self.load[domain] += disks * compiled.domains[domain].active;
            }
            // Loads only grow down this branch, so a group that does not fit now never will.
            let next: Vec<GroupIndex> = coloured[..position]
                .iter()
                .map(|(g, _)| *g)
                .filter(|g| has(&self.compatible[group as usize], *g) && self.fits(*g))
                .collect();
            self.current.push(group);
            self.branch(&next, spinning, best);
            self.current.pop();
            for &(domain, disks) in weights {
                self.load[domain] -= disks * compiled.domains[domain].active;
            }
            if self.stopped {
                // The groups before this one stay open; this position's bound covers them.
                self.open_bound = self.open_bound.max(bound);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two domains of one resource, 3 W of headroom each, active 1 W, spinning 2 W per disk;
    /// four groups of two disks, one disk in each domain.
    fn compiled() -> Compiled {
        Compiled {
            domains: (0..2)
                .map(|_| Domain {
                    headroom: 3,
                    spinning: 2,
                    active: 1,
                })
                .collect(),
            resources: vec![vec![0, 1]],
            component: vec![0, 0],
            component_counts: vec![1],
            weights: vec![vec![(0, 1), (1, 1)]; 4],
            group_size: 2,
        }
    }

    /// One resource of six domains, one active disk of headroom each, in two components of
    /// three domains: groups 0 and 1 share domain 1, groups 2 and 3 share domain 4.
    fn two_components() -> Compiled {
        let weights = vec![
            vec![(0, 1), (1, 1)],
            vec![(1, 1), (2, 1)],
            vec![(3, 1), (4, 1)],
            vec![(4, 1), (5, 1)],
        ];
        let resources = vec![(0..6).collect::<Vec<usize>>()];
        let (component, component_counts) = components(6, &resources, &weights);
        Compiled {
            domains: (0..6)
                .map(|_| Domain {
                    headroom: 1,
                    spinning: 1,
                    active: 1,
                })
                .collect(),
            resources,
            component,
            component_counts,
            weights,
            group_size: 2,
        }
    }

    #[test]
    fn capacity_is_counted_per_component_of_the_domains_groups_join() {
        let compiled = two_components();
        assert_eq!(compiled.component, vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(compiled.component_counts, vec![1 + 1]);
        // Six disks of room would hold three groups of two counted together; each component's
        // three disks hold one group only, as the groups' shared domains force.
        let mut search = Search::new(&compiled, 1_000);
        assert_eq!(search.capacity_bound(&[0, 1, 2, 3]), 2);
        assert_eq!(exhaustive(&compiled, Vec::new()).witness.len(), 2);
    }

    #[test]
    fn exhaustive_finds_one_spinning_beside_one_active() {
        // 2 (spinning) + 1 (active) = 3 per domain: two groups; a third active would make 4.
        let result = exhaustive(&compiled(), Vec::new());
        assert_eq!(result.witness.len(), 2);
        assert!(result.exact);
    }
}
