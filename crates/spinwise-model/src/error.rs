//! `RackError`: why a rack description was refused, naming the file, the field and the reason.
//!
//! Every rule of docs/rack-format.md that can fail has its own `RackProblem` variant, so callers
//! and tests match on the reason rather than on message text.

use thiserror::Error;

/// Displayed as `{source_name}: {field}: {problem}`, with the field and the problem cut to
/// [`crate::quote::MAX_MESSAGE_CHARS`] each: both may quote the file (a name, a line), and a
/// refusal must stay small whatever the file holds.
#[derive(Debug, Clone, PartialEq, Error)]
#[error(
    "{source_name}: {}: {}",
    crate::quote::message(field),
    crate::quote::message(&problem.to_string())
)]
pub struct RackError {
    /// The file (or preset) the description came from.
    pub source_name: String,
    /// Where in the file: a dotted path such as `resources[power].budget`, or a line for syntax.
    pub field: String,
    pub problem: RackProblem,
}

#[derive(Debug, Clone, PartialEq, Error)]
pub enum RackProblem {
    #[error("{message}")]
    Syntax { message: String },
    #[error("{what} is required")]
    Missing { what: &'static str },
    #[error("{value} is out of range: expected {expected}")]
    OutOfRange {
        value: String,
        expected: &'static str,
    },
    #[error("more than {limit} {what}")]
    TooMany { what: &'static str, limit: usize },
    #[error("duplicate {what} `{name}`")]
    Duplicate { what: &'static str, name: String },
    #[error("unknown state `{name}`")]
    UnknownState { name: String },
    #[error("transition to nowhere: `{name}` is not a declared state")]
    TransitionToNowhere { name: String },
    #[error("unknown axis `{name}`")]
    UnknownAxis { name: String },
    #[error("unknown disk id {id}")]
    UnknownDisk { id: u32 },
    #[error("coordinate {value} on axis `{axis}` is outside 0..{size}")]
    CoordinateOutOfRange { axis: String, value: u32, size: u32 },
    /// Two listed disks at one position: a typo in the list (one rack slot holds one disk), so
    /// both ids are named for the operator to find the wrong one.
    #[error("disks {first} and {second} are both at {at}")]
    SameCoordinates { first: u32, second: u32, at: String },
    #[error("expected {expected} coordinates (one per axis), found {found}")]
    CoordinateCount { expected: usize, found: usize },
    #[error("disks must be given either as `grid = true` or as a `list`, not {found}")]
    DiskSpecification { found: &'static str },
    #[error("exactly one state must be {flag}, found {count}")]
    StateFlagCount { flag: &'static str, count: usize },
    #[error("state `{name}` cannot be both {first} and {second}")]
    ConflictingStateFlags {
        name: String,
        first: &'static str,
        second: &'static str,
    },
    #[error("the active state `{active}` cannot be reached from the resting state `{resting}`")]
    ActiveUnreachable { resting: String, active: String },
    #[error(
        "the resting state `{resting}` cannot be reached again from the active state `{active}`"
    )]
    RestingUnreachable { resting: String, active: String },
    #[error(
        "transient state `{state}` has no transition out of it: a disk entering it would be stuck"
    )]
    TransientWithoutExit { state: String },
    #[error("no cost given for state `{state}`")]
    MissingCost { state: String },
    #[error(
        "state `{state}` costs {cost}, less than the resting state's {resting_cost}; the resting state must be the cheapest of a hard resource"
    )]
    RestingNotCheapest {
        state: String,
        cost: String,
        resting_cost: String,
    },
    #[error("disk {disk_id} is in no domain of `{resource}`")]
    DiskAbsentFromDomains { disk_id: u32, resource: String },
    #[error(
        "disk {disk_id} is in two domains ({first} and {second}); give overlapping domains their own resource"
    )]
    DiskInTwoDomains {
        disk_id: u32,
        first: usize,
        second: usize,
    },
    #[error(
        "domains of unequal size: domain 0 has {first_size} disks, domain {other} has {other_size}"
    )]
    UnequalDomainSizes {
        first_size: usize,
        other: usize,
        other_size: usize,
    },
    #[error("domain {index} is empty")]
    EmptyDomain { index: usize },
    #[error(
        "budget {budget} lets no disk become active: {domain_size} disks resting cost {resting}, and one more disk in state `{state}` needs {needed} in all"
    )]
    BudgetAdmitsNoDisk {
        budget: String,
        domain_size: usize,
        resting: String,
        state: String,
        needed: String,
    },
    #[error("upper bound {upper_bound} is below the budget {budget}")]
    UpperBoundBelowBudget { upper_bound: String, budget: String },
    #[error(
        "distribution min {} exceeds max {}",
        crate::quote::number(*min),
        crate::quote::number(*max)
    )]
    InvertedRange { min: f64, max: f64 },
}
