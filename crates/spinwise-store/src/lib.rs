//! spinwise-store: the cold blob store (issue 4; being built).
pub mod placement;
pub mod stacks;
