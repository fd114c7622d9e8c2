//! spinwise-store: the cold blob store (issue 4).
//! - [`staging`] is the staging log (docs/staging-format.md), where a PUT is durable before it is
//!   acknowledged; many processes may append to one staging directory at once, each to the
//!   segments it created and holds `flock`ed, and recovery and reclaim change only segments
//!   they claimed (locked) themselves;
//! - [`store`] holds [`Store`], the object API over a [`spinwise_catalog::Catalog`] (put, get with
//!   ranges, delete, list, stat, status) and recovery on open;
//! - [`config`] holds the data directory's `store.toml` and `layout.json`;
//! - [`error`] holds [`StoreError`];
//! - [`placement`] decides a blob's group and disks (Pelican §2.2);
//! - [`stacks`] writes a blob's stripe stacks to its disks and reads fragments back;
//! - [`driver`] runs the rack engine (spinwise-engine: the scheduler, the budget audit, group
//!   phases, job purposes) with a real [`clock`] against the disks;
//! - [`migrate`] is the bundler and migrator ([`Store::flush`]), [`space`] the disks' used space
//!   it places by;
//! - [`read`] reads migrated objects: one scheduler job per GET on the blob's group, decoding
//!   only the covering fragments, reconstructing from any k; [`ordered`] is the ordered
//!   parallel pipeline that spreads a GET's reading and crc checks over the cores;
//! - [`startup`] checks every disk at start-up, group by group under the budgets;
//! - [`survey`] counts what the data directory holds outside the catalog (staging segments,
//!   stripe stacks): a store whose catalog is lost refuses to open over them, and blob ids
//!   continue above every id on the disks;
//! - [`repair`] fails disks, rebuilds their stripe stacks under the rebuild share and repairs
//!   damaged stacks in place; [`scrub`] verifies every stripe and repairs what it finds;
//! - [`heal`] repairs the stacks a read found damaged (on the read's spin-up) and records disks
//!   found failed (at open, by the check, by reads), queueing their rebuild.
//! - [`compact`] reclaims dead bytes: a blob's live objects rewritten as a new blob in the same
//!   group, the old blob removed ([`Store::compact`], and piggybacked by [`upkeep`]);
//! - [`upkeep`] runs scrub (and compaction) piggybacked on spin-ups that happen anyway (and scrub-only spin-ups no
//!   more often than configured); [`lock`] is the upkeep lock file that keeps two processes
//!   from running flush, rebuild, scrub or upkeep on one data directory at once; [`duties`] are
//!   the task's other work: migrating staged objects by policy and rebuilding failed disks.

/// The budget audit, now the rack engine's (spinwise-engine), under its old path.
pub use spinwise_engine::audit;
pub mod blob_index;
mod board;
pub mod buffers;
pub mod clock;
pub mod columns;
pub mod compact;
pub mod config;
pub mod crash;
pub mod driver;
pub mod durable;
pub mod duties;
pub mod error;
pub mod hashing;
pub mod heal;
pub mod lock;
pub mod migrate;
pub mod ordered;
pub mod owner;
pub mod placement;
pub mod rack;
pub mod read;
pub mod recover;
pub mod repair;
pub mod scrub;
pub mod space;
pub mod stacks;
pub mod staging;
pub mod startup;
pub mod store;
pub mod survey;
pub mod upkeep;
pub mod writeback;

pub use compact::CompactReport;
pub use config::{RackSource, ReadColumns, StoreConfig};
pub use error::StoreError;
pub use migrate::{FlushProgress, FlushReport};
pub use rack::Environment;
pub use staging::{ContentCheck, StagingConfig, StagingError, StagingLog};
pub use store::{ObjectReader, ReadPriority, SqliteStore, Store, StoreRecovery, StoreStatus};
pub use upkeep::{UpkeepConfig, UpkeepHandle, UpkeepReport};
