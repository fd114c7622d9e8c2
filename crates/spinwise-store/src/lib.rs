//! spinwise-store: the cold blob store (issue 4; being built).

pub mod audit;
pub mod clock;
pub mod driver;
pub mod placement;
pub mod stacks;
