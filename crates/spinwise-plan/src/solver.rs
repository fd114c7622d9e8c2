//! The group-assignment solver (Flamingo §4.2, "Mapping HDDs to groups").
//!
//! Deterministic search over a small, structured space:
//! 1. Coordinates: each disk's coordinate on dimension r is the index of its domain of hard
//!    resource r (domains come from the rack, so this is "derived from the domains").
//! 2. Orderings: disks sorted lexicographically on a permutation of the dimensions, each
//!    dimension ascending or descending (the most restrictive dimensions are permuted first).
//! 3. Classes: the ordered disks are cut into C consecutive blocks, one class each, with C the
//!    largest divisor of the group count not above ⌊M / n⌋ (the concurrency bound), then the
//!    next smaller divisor, then C = 1 (no class structure, only the real budgets).
//!    A class may use at most its share of each domain's budget: ⌊m_r × (class disks in the
//!    domain) / N_r⌋ disks per group. So groups of different classes never over-commit a domain
//!    together, and groups of one class collide — Pelican's classes, found rather than drawn.
//! 4. Greedy assignment inside each block under those caps, with several heuristics for the group
//!    a disk tries first, and a one-swap repair when a disk fits nowhere.
//! 5. Each complete candidate is scored with the quality metrics on sampled orderings; the first
//!    candidate that reaches both bounds on every sample is efficient and ends the search.
//!    Otherwise the best-scoring candidate is returned, marked inefficient.

use crate::admission::Admission;
use crate::analysis::spinning_per_domain;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use spinwise_model::{DiskIndex, GroupIndex, Rack};

/// Dimensions permuted when building orderings; beyond this the rest keep their order, which bounds
/// the orderings to 4! × 2³ = 192.
const MAX_PERMUTED_DIMENSIONS: usize = 4;
/// Candidate layouts examined before giving up on finding an efficient one.
pub const MAX_ATTEMPTS: u32 = 768;
/// Sampled orderings per metric when scoring a candidate (the full metric uses 250,000).
pub const EFFICIENCY_SAMPLES: u32 = 400;
/// Moves one repair may try before the attempt is abandoned: repair is a last resort, and an
/// ordering that needs more is better replaced by the next ordering.
const MAX_REPAIR_PROBES: u32 = 20_000;
/// Seed of the sampling RNG: the solver is deterministic.
const SAMPLING_SEED: u64 = 0x5eed_f1a3_1160;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Heuristic {
    /// Disk j tries group j mod G first: spreads each domain's disks across groups.
    Rotate,
    /// Disk j tries group (j + ⌊j / G⌋) mod G first: shifts the rotation every round.
    Diagonal,
    /// The emptiest group that fits, ties by rotation.
    LeastLoaded,
    /// The lowest-numbered group that fits: packs domains into few groups.
    Fill,
}

const HEURISTICS: [Heuristic; 4] = [
    Heuristic::Rotate,
    Heuristic::Diagonal,
    Heuristic::LeastLoaded,
    Heuristic::Fill,
];

/// Problem statement shared by every attempt.
pub struct Problem<'a> {
    pub rack: &'a Rack,
    pub group_size: usize,
    /// ⌊M / n⌋ for spinning up (low-load bound).
    pub low_load_bound: u64,
    /// The high-load figure candidates are scored against: Flamingo's m from the bottleneck
    /// ([`crate::analysis::high_load_target`]), an estimate — the finished layout is judged
    /// against its exact maximum instead.
    pub high_load_target: u64,
    /// k + r: a group must hold a stripe this wide with at most `redundancy` fragments in any
    /// component of a `spread` failure domain (single-fault availability, docs/durability.md).
    pub stripe_width: u32,
    pub redundancy: u32,
}

#[derive(Clone, Debug)]
pub struct Candidate {
    pub groups: Vec<Vec<DiskIndex>>,
    pub classes: Option<Vec<u32>>,
    pub method: String,
    pub low_load_sampled: f64,
    pub high_load_sampled: f64,
    pub efficient: bool,
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub best: Option<Candidate>,
    pub attempts: u32,
}

/// Per hard resource: each disk's domain, the domain size and m (disks per domain that may spin up).
struct Dimension {
    domain_of: Vec<u32>,
    domains: usize,
    domain_size: usize,
    spinning_per_domain: usize,
}

pub fn solve(problem: &Problem) -> Outcome {
    let dimensions = dimensions(problem.rack);
    let groups = problem.rack.disk_count() / problem.group_size;
    let class_options = class_counts(problem.low_load_bound as usize, groups);
    // Each class count gets an equal share of the attempts, so a class structure that never
    // fits cannot starve the ones after it.
    let attempts_per_option = MAX_ATTEMPTS / class_options.len() as u32;
    let orderings = orderings(&dimensions, problem.rack.disk_count());
    let spread = SpreadRule::new(problem);
    let mut attempts = 0;
    let mut best: Option<Candidate> = None;
    for classes in class_options {
        let mut option_attempts = 0;
        for (name, order) in &orderings {
            if option_attempts >= attempts_per_option {
                break;
            }
            // A class share that rounds to zero makes the ordering infeasible for every heuristic.
            if !blocks_feasible(&dimensions, order, classes, groups, problem.group_size) {
                continue;
            }
            for heuristic in HEURISTICS {
                option_attempts += 1;
                attempts += 1;
                let Some(assignment) = assign(
                    &dimensions,
                    order,
                    classes,
                    groups,
                    problem.group_size,
                    heuristic,
                ) else {
                    continue;
                };
                if !spread.holds(&assignment) {
                    continue;
                }
                let noun = if classes == 1 { "class" } else { "classes" };
                let method = format!("{name} / {classes} {noun} / {heuristic:?}");
                let candidate = score(problem, assignment, classes, method);
                if candidate.efficient {
                    return Outcome {
                        best: Some(candidate),
                        attempts,
                    };
                }
                if best.as_ref().is_none_or(|b| {
                    candidate.low_load_sampled + candidate.high_load_sampled
                        > b.low_load_sampled + b.high_load_sampled
                }) {
                    best = Some(candidate);
                }
            }
        }
    }
    Outcome { best, attempts }
}

/// Each `spread` failure domain as a component index per disk, and the stripe it must hold.
struct SpreadRule {
    component_of: Vec<Vec<Option<usize>>>,
    components: Vec<usize>,
    stripe_width: u32,
    redundancy: u32,
}

impl SpreadRule {
    fn new(problem: &Problem) -> SpreadRule {
        let rack = problem.rack;
        let domains: Vec<_> = rack
            .failure_domains
            .iter()
            .filter(|d| d.spread && d.annual_failure_rate > 0.0)
            .collect();
        let component_of = domains
            .iter()
            .map(|domain| {
                let mut of = vec![None; rack.disk_count()];
                for (component, disks) in domain.domains.iter().enumerate() {
                    for &disk in disks {
                        of[disk as usize] = Some(component);
                    }
                }
                of
            })
            .collect();
        SpreadRule {
            component_of,
            components: domains.iter().map(|d| d.domains.len()).collect(),
            stripe_width: problem.stripe_width,
            redundancy: problem.redundancy,
        }
    }

    /// Every group can place a full stripe with at most r fragments per component.
    fn holds(&self, groups: &[Vec<DiskIndex>]) -> bool {
        groups.iter().all(|members| {
            self.component_of
                .iter()
                .zip(&self.components)
                .all(|(of, &count)| {
                    let mut here = vec![0u32; count];
                    for &disk in members {
                        if let Some(component) = of[disk as usize] {
                            here[component] += 1;
                        }
                    }
                    let room: u32 = here.iter().map(|&n| n.min(self.redundancy)).sum();
                    room >= self.stripe_width
                })
        })
    }
}

fn dimensions(rack: &Rack) -> Vec<Dimension> {
    let mut dimensions: Vec<Dimension> = rack
        .hard_resources()
        .map(|(_, resource)| Dimension {
            domain_of: resource.domain_of.clone(),
            domains: resource.domains.len(),
            domain_size: resource.domain_size(),
            spinning_per_domain: spinning_per_domain(rack, resource) as usize,
        })
        .collect();
    // Most restrictive first (fewest disks rack-wide may spin up); the sort is stable, so ties
    // keep the rack file's order.
    dimensions.sort_by_key(|d| d.domains * d.spinning_per_domain);
    dimensions
}

/// Class counts to try: the largest divisor of the group count not above the concurrency bound
/// (more classes than concurrently active groups would over-commit the bottleneck), the next
/// smaller divisor, then one class (no class structure, only the real budgets).
fn class_counts(bound: usize, groups: usize) -> Vec<usize> {
    let divisors = (2..=bound.min(groups))
        .rev()
        .filter(|c| groups.is_multiple_of(*c));
    let mut counts: Vec<usize> = divisors.take(2).collect();
    counts.push(1);
    counts
}

fn blocks_feasible(
    dimensions: &[Dimension],
    order: &[DiskIndex],
    classes: usize,
    groups: usize,
    group_size: usize,
) -> bool {
    order
        .chunks(order.len() / classes)
        .all(|block| Block::new(dimensions, block, groups / classes, group_size).is_some())
}

/// Named disk orderings: permutations of the leading dimensions × directions of all but the first.
fn orderings(dimensions: &[Dimension], disks: usize) -> Vec<(String, Vec<DiskIndex>)> {
    let permuted = dimensions.len().min(MAX_PERMUTED_DIMENSIONS);
    let mut result = Vec::new();
    for permutation in permutations(permuted) {
        let mut sequence = permutation.clone();
        sequence.extend(permuted..dimensions.len());
        let flips = if sequence.len() > 1 {
            1usize << (sequence.len().min(MAX_PERMUTED_DIMENSIONS) - 1)
        } else {
            1
        };
        for mask in 0..flips {
            let descending = |position: usize| position > 0 && mask & (1 << (position - 1)) != 0;
            let mut order: Vec<DiskIndex> = (0..disks as DiskIndex).collect();
            order.sort_by_key(|&disk| {
                sequence
                    .iter()
                    .enumerate()
                    .map(|(position, &dimension)| {
                        let d = &dimensions[dimension];
                        let coordinate = d.domain_of[disk as usize] as usize;
                        if descending(position) {
                            d.domains - 1 - coordinate
                        } else {
                            coordinate
                        }
                    })
                    .collect::<Vec<_>>()
            });
            let name = sequence
                .iter()
                .enumerate()
                .map(|(p, d)| format!("{}{d}", if descending(p) { "-" } else { "+" }))
                .collect::<Vec<_>>()
                .join(",");
            result.push((format!("order[{name}]"), order));
        }
    }
    result
}

fn permutations(count: usize) -> Vec<Vec<usize>> {
    if count == 0 {
        return vec![Vec::new()];
    }
    let mut result = Vec::new();
    for rest in permutations(count - 1) {
        for position in 0..=rest.len() {
            let mut next = rest.clone();
            next.insert(position, count - 1);
            result.push(next);
        }
    }
    result.sort();
    result
}

/// Assignment state of one block: per dimension, each (group, domain) count.
struct Block<'a> {
    dimensions: &'a [Dimension],
    groups: usize,
    group_size: usize,
    counts: Vec<Vec<u16>>,
    caps: Vec<Vec<u16>>,
    members: Vec<Vec<DiskIndex>>,
}

impl<'a> Block<'a> {
    /// A block of `disks` split into `groups` groups; `None` when some domain's share rounds to zero.
    fn new(
        dimensions: &'a [Dimension],
        disks: &[DiskIndex],
        groups: usize,
        group_size: usize,
    ) -> Option<Block<'a>> {
        let mut caps = Vec::with_capacity(dimensions.len());
        for dimension in dimensions {
            let mut present = vec![0usize; dimension.domains];
            for &disk in disks {
                present[dimension.domain_of[disk as usize] as usize] += 1;
            }
            let mut cap = vec![0u16; dimension.domains];
            for (domain, &count) in present.iter().enumerate() {
                if count == 0 {
                    continue;
                }
                let share = dimension.spinning_per_domain * count / dimension.domain_size;
                if share == 0 {
                    return None;
                }
                cap[domain] = share.min(u16::MAX as usize) as u16;
            }
            caps.push(cap);
        }
        let counts = dimensions
            .iter()
            .map(|d| vec![0u16; d.domains * groups])
            .collect();
        Some(Block {
            dimensions,
            groups,
            group_size,
            counts,
            caps,
            members: vec![Vec::new(); groups],
        })
    }

    fn fits(&self, disk: DiskIndex, group: usize) -> bool {
        self.members[group].len() < self.group_size
            && self.dimensions.iter().enumerate().all(|(i, d)| {
                let domain = d.domain_of[disk as usize] as usize;
                self.counts[i][group * d.domains + domain] < self.caps[i][domain]
            })
    }

    fn place(&mut self, disk: DiskIndex, group: usize) {
        for (i, d) in self.dimensions.iter().enumerate() {
            self.counts[i][group * d.domains + d.domain_of[disk as usize] as usize] += 1;
        }
        self.members[group].push(disk);
    }

    fn unplace(&mut self, disk: DiskIndex, group: usize) {
        for (i, d) in self.dimensions.iter().enumerate() {
            self.counts[i][group * d.domains + d.domain_of[disk as usize] as usize] -= 1;
        }
        let position = self.members[group]
            .iter()
            .position(|&m| m == disk)
            .expect("disk is in the group it leaves");
        self.members[group].swap_remove(position);
    }

    fn choose(&self, disk: DiskIndex, sequence: usize, heuristic: Heuristic) -> Option<usize> {
        let groups = self.groups;
        let start = match heuristic {
            Heuristic::Rotate | Heuristic::LeastLoaded => sequence % groups,
            Heuristic::Diagonal => (sequence + sequence / groups) % groups,
            Heuristic::Fill => 0,
        };
        let candidates = (0..groups)
            .map(|offset| (start + offset) % groups)
            .filter(|&g| self.fits(disk, g));
        if heuristic == Heuristic::LeastLoaded {
            candidates.min_by_key(|&g| self.members[g].len())
        } else {
            candidates.into_iter().next()
        }
    }

    /// One-swap repair: move some placed disk x from group h to a group g with room, so that
    /// `disk` can take x's place in h.
    fn repair(&mut self, disk: DiskIndex) -> bool {
        let mut probes = 0;
        for g in 0..self.groups {
            if self.members[g].len() >= self.group_size {
                continue;
            }
            for h in (0..self.groups).filter(|&h| h != g) {
                for position in 0..self.members[h].len() {
                    probes += 1;
                    if probes > MAX_REPAIR_PROBES {
                        return false;
                    }
                    let moved = self.members[h][position];
                    // `moved` is not in g, so whether it fits there needs no bookkeeping.
                    if !self.fits(moved, g) {
                        continue;
                    }
                    self.unplace(moved, h);
                    if self.fits(disk, h) {
                        self.place(moved, g);
                        self.place(disk, h);
                        return true;
                    }
                    self.place(moved, h);
                    let last = self.members[h].len() - 1;
                    self.members[h].swap(position, last);
                }
            }
        }
        false
    }
}

fn assign(
    dimensions: &[Dimension],
    order: &[DiskIndex],
    classes: usize,
    groups: usize,
    group_size: usize,
    heuristic: Heuristic,
) -> Option<Vec<Vec<DiskIndex>>> {
    let per_class = order.len() / classes;
    let groups_per_class = groups / classes;
    let mut result = Vec::with_capacity(groups);
    for block_disks in order.chunks(per_class) {
        let mut block = Block::new(dimensions, block_disks, groups_per_class, group_size)?;
        for (sequence, &disk) in block_disks.iter().enumerate() {
            match block.choose(disk, sequence, heuristic) {
                Some(group) => block.place(disk, group),
                None if block.repair(disk) => {}
                None => return None,
            }
        }
        for mut members in block.members {
            members.sort_unstable();
            result.push(members);
        }
    }
    Some(result)
}

/// Sampled orderings in the first, cheap pass of scoring: most candidates that fail, fail here.
const SCREENING_SAMPLES: u32 = 48;

fn score(
    problem: &Problem,
    groups: Vec<Vec<DiskIndex>>,
    classes: usize,
    method: String,
) -> Candidate {
    let rack = problem.rack;
    let mut group_of = vec![0 as GroupIndex; rack.disk_count()];
    for (group, disks) in groups.iter().enumerate() {
        for &disk in disks {
            group_of[disk as usize] = group as GroupIndex;
        }
    }
    let mut admission = Admission::from_rack(rack, &group_of, groups.len());
    let (low_bound, high_bound) = (problem.low_load_bound, problem.high_load_target);
    let mut quality = sampled_quality(&mut admission, low_bound, high_bound, SCREENING_SAMPLES);
    if quality.0.1 && quality.1.1 {
        quality = sampled_quality(&mut admission, low_bound, high_bound, EFFICIENCY_SAMPLES);
    }
    let ((low, low_all), (high, high_all)) = quality;
    let class_of = (classes > 1).then(|| {
        (0..groups.len())
            .map(|g| (g / (groups.len() / classes)) as u32)
            .collect()
    });
    Candidate {
        groups,
        classes: class_of,
        method,
        efficient: low_all && high_all,
        low_load_sampled: low,
        high_load_sampled: high,
    }
}

/// Mean normalised low- and high-load metrics over `samples` seeded orderings, and whether every
/// sample reached its bound.
pub fn sampled_quality(
    admission: &mut Admission,
    low_bound: u64,
    high_bound: u64,
    samples: u32,
) -> ((f64, bool), (f64, bool)) {
    let mut rng = ChaCha8Rng::seed_from_u64(SAMPLING_SEED);
    let mut order: Vec<GroupIndex> = (0..admission.groups() as GroupIndex).collect();
    let (mut low_sum, mut high_sum, mut low_all, mut high_all) = (0.0, 0.0, true, true);
    for _ in 0..samples {
        order.shuffle(&mut rng);
        let low = admission.low_load_trial(&order, low_bound);
        let high = admission.high_load_trial(&order, high_bound);
        low_all &= low >= low_bound;
        high_all &= high >= high_bound;
        low_sum += low as f64 / low_bound.max(1) as f64;
        high_sum += high as f64 / high_bound.max(1) as f64;
    }
    let samples = f64::from(samples.max(1));
    ((low_sum / samples, low_all), (high_sum / samples, high_all))
}
