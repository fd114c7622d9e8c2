//! spinwise-store: the cold blob store (issue 4), in layers that use only themselves and the
//! layers below (docs/ARCHITECTURE.md, "Inside spinwise-store"; tests/it/layers.rs checks it):
//! - foundations: [`clock`] (time as an interface), [`driver`] (the shell that runs the rack
//!   engine, spinwise-engine, against the disks), [`durable`] (host-file fsyncs and their crash
//!   model), [`owner`] (one owning process per data directory), [`placement`] (a blob's group
//!   and disks, Pelican §2.2), [`tail_cache`] (recently written objects in RAM and a flash
//!   directory, issue 33), the blob object index, checksums, buffers and the ordered parallel
//!   pipeline;
//! - formats and settings: [`staging`] (the staging log, docs/staging-format.md, where a PUT is
//!   durable before it is acknowledged; many processes may append to one staging directory,
//!   each to the segments it holds `flock`ed), [`stacks`] (stripe stacks on disks,
//!   docs/stripe-format.md: written, fetched, rebuilt), [`config`] (`store.toml`,
//!   `layout.json`), [`StoreError`], heal's queue of repairs, disk space, the upkeep lock;
//! - the rack: the disks, their driver and the placer of one data directory, and a survey of
//!   what the directory holds outside the catalog;
//! - [`Store`]: the state every operation shares and the object API's writes and lookups;
//! - operations: open and close, GET, reads of blobs through the scheduler, flush (bundles
//!   into blobs), compaction, failing disks, rebuild and repair, scrub, the start-up check,
//!   [`recover`];
//! - background work: the upkeep task ([`UpkeepHandle`]) and its duties.

// The public face: the modules other crates program against. Everything else is internal,
// and what callers need of it is re-exported below (docs/ARCHITECTURE.md, "Inside
// spinwise-store", draws the layers; tests/it/layers.rs checks that uses only point down).
pub mod clock;
pub mod config;
pub mod driver;
pub mod durable;
pub mod owner;
pub mod placement;
pub mod stacks;
pub mod staging;
pub mod tail_cache;

mod blob_index;
mod board;
mod buffers;
mod columns;
mod compact;
mod crash;
mod damaged;
mod duties;
mod error;
mod get;
mod hashing;
mod heal;
mod lock;
mod migrate;
mod open;
mod ordered;
mod rack;
mod read;
mod recover;
mod repair;
mod runs;
mod scrub;
mod space;
mod startup;
mod store;
mod subtree_hash;
mod survey;
mod upkeep;
mod warm_gc;
mod writeback;

pub use blob_index::{INDEX_DIR, index_path, read_index};
pub use compact::CompactReport;
pub use config::{
    CompactionMode, RackSource, ReadColumns, StoreConfig, UpkeepConfig, WarmCollector, WarmConfig,
    WarmWhenFull,
};
pub use damaged::DamagedStaged;
pub use duties::DutyReport;
pub use error::{RepairFailure, StoreError, StoreResult};
pub use get::ObjectReader;
pub use heal::{DamagedStack, FailDiskReport, HealCounters, HealReport};
pub use lock::UpkeepGuard;
pub use migrate::{Bundle, FlushProgress, FlushReport, pack};
pub use rack::{Environment, StoreRack, disk_directory, emulated_config};
pub use read::{ReadTiming, column_batch_stripes};
pub use recover::{RecoverError, RecoverReport, Skipped, recover, recover_in};
pub use repair::{RebuildProgress, RebuildReport};
pub use scrub::{ScrubLedger, ScrubMode, ScrubReport};
pub use space::DiskSpace;
pub use spinwise_catalog::Tier;
pub use staging::{ContentCheck, StagingConfig, StagingError, StagingLog};
pub use startup::{DiskProblem, StartupReport};
pub use store::{CATALOG_FILE, ReadPriority, SqliteStore, Store, StoreRecovery, StoreStatus};
pub use tail_cache::{TailCacheConfig, TailCacheStats};
pub use upkeep::{UpkeepHandle, UpkeepReport};
pub use warm_gc::WarmCollectReport;
