//! Every integration test of spinwise-store, one module per former test file, built as one
//! binary: each test binary links the crate and all its dependencies again, and with one
//! binary per file that linking was most of CI's build time.

mod catalog_safety;
mod common;
mod compact;
mod concurrent;
mod content_check;
mod driver;
mod heal;
mod layers;
mod migrate;
mod no_wall_clock_waits;
mod placement;
mod read;
mod recover;
mod repair;
mod shared_staging;
mod spread;
mod stacks;
mod staging;
mod startup;
mod store;
mod support;
mod swarm;
mod tail_cache;
mod throttle;
mod tiers;
mod upkeep;
mod warm_gc;
