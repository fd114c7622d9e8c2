//! spinwise-store: the cold blob store (issue 4). Wave 1 holds the write path and reads of
//! staged objects:
//! - [`staging`] is the staging log (docs/staging-format.md), where a PUT is durable before it is
//!   acknowledged;
//! - [`store`] holds [`Store`], the object API over a [`spinwise_catalog::Catalog`] (put, get with
//!   ranges, delete, list, stat, status) and recovery on open;
//! - [`config`] holds the data directory's `store.toml` and `layout.json`;
//! - [`error`] holds [`StoreError`].
//!
//! Not here yet: the bundler and migrator (objects stay staged), reads of migrated objects
//! ([`StoreError::MigratedReadUnavailable`]), the disk driver, rebuild and scrub.

pub mod config;
pub mod error;
pub mod staging;
pub mod store;

pub use config::{RackSource, StoreConfig};
pub use error::StoreError;
pub use staging::{StagingConfig, StagingError, StagingLog};
pub use store::{ObjectReader, SqliteStore, Store, StoreRecovery, StoreStatus};
