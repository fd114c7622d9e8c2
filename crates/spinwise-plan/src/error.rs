//! `PlanError`: why a rack configuration has no layout. These are answers about the rack (a
//! designer's input), not bugs; the planner returns them instead of panicking.

use crate::verify::Violation;
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum PlanError {
    #[error("no erasure code meets the targets: {reason}")]
    NoErasureCode { reason: String },
    #[error(
        "no group size n divides both M = {max_disks_at_highest} and N = {disks} with room for k + r + f = {needed}"
    )]
    NoGroupSize {
        max_disks_at_highest: u64,
        disks: u64,
        needed: u32,
    },
    #[error(
        "only {groups} group(s) of {group_size} could spin up together, below the IO concurrency target of {target}"
    )]
    ConcurrencyBelowTarget {
        groups: u64,
        group_size: u32,
        target: u32,
    },
    #[error(
        "the solver found no assignment of disks to groups of {group_size} after {attempts} attempts"
    )]
    NoLayout { group_size: u32, attempts: u32 },
    #[error("the layout failed verification ({} violation(s)); first: {}", .0.len(), .0.first().map(|v| v.detail.as_str()).unwrap_or(""))]
    Unverified(Vec<Violation>),
    #[error(
        "the Pelican layout needs the Pelican geometry (axes x=6, y=16, z=12 on a full grid): {reason}"
    )]
    NotPelicanGeometry { reason: String },
}
