//! Helpers shared by several of the store's test modules.

pub mod poll;
pub mod wall_clock;
