//! Opening and closing a [`Store`]: `init` writes a data directory's configuration and opens
//! it; `open` reads it, opens the staging log, the disks and the rack engine's driver, raises
//! the catalog's blob id counter above every id the disks' names carry, reconciles
//! the staging log with the catalog (recovery), abandons `Writing` blobs a crash left (under the
//! upkeep lock) and records disks that opened failed; `close` settles read repairs and drains the
//! driver. The SQLite flavour refuses to open a lost catalog over data only a catalog names.
//!
//! Invariants:
//! - recovery at open touches only segments it claimed; the catalog is read after the claims,
//!   and catalog rows in segments another live process holds are not checked (their writer may
//!   be committing them right now);
//! - a store whose catalog is missing, empty or unreadable while the directory holds staging
//!   segments or stripe stacks is refused ([`StoreError::CatalogLost`]), and nothing changes.

use crate::clock::{Clock, SystemClock};
use crate::config::{self, STORE_FILE, StoreConfig};
use crate::error::{StoreError, StoreResult, io_error};
use crate::rack::{Environment, create_disks, failed_disks, open_rack};
use crate::staging::{ScannedRecord, SegmentId, StagingLog};
use crate::store::{CATALOG_FILE, SqliteStore, Store, StoreRecovery};
use crate::tail_cache::TailCache;
use spinwise_catalog::{Catalog, DiskIndex, ObjectLocation, SqliteCatalog};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// Raises `catalog`'s blob id counter above `highest`, the highest blob id named on the disks;
/// returns a line for [`StoreRecovery::problems`] when it had to (the catalog is older than the
/// disks: lost and recreated, or restored from a copy), `None` when the counter was already
/// above.
async fn reserve_blob_ids<C: Catalog>(
    catalog: &C,
    highest: Option<spinwise_catalog::BlobId>,
) -> StoreResult<Option<String>> {
    let Some(highest) = highest else {
        return Ok(None);
    };
    let Some(counter) = catalog.reserve_blob_ids_through(highest).await? else {
        return Ok(None);
    };
    let problem = format!(
        "stripe stacks on the disks carry blob ids up to {highest}, but the catalog's next blob id was {counter}: \
         the catalog is older than the disks (lost and recreated, or restored from a copy), and blobs it does not \
         know may hold objects it does not list; blob ids now continue from {}, and no stack was removed",
        highest + 1
    );
    tracing::warn!(
        highest,
        counter,
        "raised the catalog's blob id counter above the disks'"
    );
    Ok(Some(problem))
}

impl<C: Catalog> Store<C> {
    /// Creates the store in `data_dir` (created if missing; refused if it holds a store):
    /// writes `layout.json` and `store.toml`, then opens it.
    pub async fn init(data_dir: &Path, config: StoreConfig, catalog: C) -> StoreResult<Store<C>> {
        Store::init_in(data_dir, config, catalog, Environment::Emulated).await
    }

    /// [`Store::init`] on `environment`'s disks and clock (no emulated disks are created when
    /// it gives its own).
    pub async fn init_in(
        data_dir: &Path,
        config: StoreConfig,
        catalog: C,
        environment: Environment,
    ) -> StoreResult<Store<C>> {
        config::validate(&config, &data_dir.join(STORE_FILE))?;
        std::fs::create_dir_all(data_dir).map_err(io_error(data_dir))?;
        if data_dir.join(STORE_FILE).exists() {
            return Err(StoreError::AlreadyInitialized {
                path: data_dir.display().to_string(),
            });
        }
        let rack = config::validate(&config, &data_dir.join(STORE_FILE))?;
        if matches!(environment, Environment::Emulated) {
            create_disks(data_dir, &rack, &config)?;
        }
        config::write_in(data_dir, &config, &environment.host_files())?;
        Store::open_in(data_dir, catalog, environment).await
    }

    /// Opens the store in `data_dir` with `catalog` and runs staging recovery against it. The
    /// catalog's blob id counter is raised above every blob id the disks' names carry (seen as
    /// the disks open, [`crate::rack::StoreRack::highest_blob_id_listed`]) before anything can
    /// hand one out, so no id is handed out twice even if `catalog` is older than the disks;
    /// when it had to be raised, a line in [`StoreRecovery::problems`] says so.
    pub async fn open(data_dir: &Path, catalog: C) -> StoreResult<Store<C>> {
        Store::open_in(data_dir, catalog, Environment::Emulated).await
    }

    /// [`Store::open`] on `environment`'s disks and clock.
    pub async fn open_in(
        data_dir: &Path,
        catalog: C,
        environment: Environment,
    ) -> StoreResult<Store<C>> {
        let config = config::read(data_dir)?;
        let rack = config::validate(&config, &data_dir.join(STORE_FILE))?;
        let staging = StagingLog::open_chain(
            config.staging_devices(data_dir),
            config.staging,
            environment.host_files(),
        )
        .await?;
        // A given environment's clock is the whole store's (dates, upkeep, the driver); the
        // emulated one runs on the real clock.
        let clock: Arc<dyn Clock> = match &environment {
            Environment::Emulated => Arc::new(SystemClock::new()),
            Environment::Given { clock, .. } => clock.clone(),
        };
        let failed: Vec<DiskIndex> = failed_disks(&catalog).await?.into_iter().collect();
        let given_disks = matches!(environment, Environment::Given { .. });
        let rack_io = open_rack(data_dir, &rack, &config, &failed, environment).await?;
        // The disks' names were listed as they opened, before the counter is read (inside the
        // reservation), so a stack another process is writing now carries an id the counter
        // has already passed. One listing per disk: the disks' own. Given disks have no host
        // directory; the survey of `DATA/disks/` stands in.
        let highest_blob_id = if given_disks {
            crate::survey::survey(data_dir)?.highest_blob_id
        } else {
            rack_io.highest_blob_id_listed
        };
        let blob_ids_raised = reserve_blob_ids(&catalog, highest_blob_id).await?;
        let migration = crate::space::MigrationState::new(&rack, rack_io.code.clone());
        // Told of every segment the log frees from now on; recovery's deletions below find
        // it empty.
        let tail_cache = Arc::new(TailCache::open(&config.tail_cache, data_dir));
        let dropper = Arc::clone(&tail_cache);
        staging.on_segment_gone(move |segment| dropper.drop_segment(segment));
        let mut store = Store {
            data_dir: data_dir.to_path_buf(),
            config,
            rack,
            catalog,
            staging,
            recovery: StoreRecovery::default(),
            rack_io,
            migration,
            heal: Default::default(),
            upkeep_lock: crate::lock::UpkeepLock::new(data_dir),
            clock,
            tail_cache,
            staging_requests: Default::default(),
            warm_collected: Default::default(),
        };
        store.recovery = store.recover().await?;
        store.recovery.problems.extend(blob_ids_raised);
        // A crash mid-migration left `Writing` blobs: remove their stacks now (docs/store.md,
        // "Migration"); on failure they stay counted as used space and flush retries.
        // Only under the upkeep lock: a `Writing` blob may be another process's flush at work.
        // Taken only when there is one, so opens for PUT/GET never make a flush elsewhere busy.
        let writing = store
            .catalog
            .blobs_in_state(spinwise_catalog::BlobState::Writing, 1)
            .await?;
        if !writing.is_empty() {
            match store.upkeep_lock() {
                Ok(_guard) => {
                    if let Err(error) = store.abandon_writing_blobs().await {
                        tracing::warn!(%error, "abandoning blobs a crash left half-written");
                    }
                }
                Err(error) => tracing::info!(%error, "leaving writing blobs to the lock holder"),
            }
        }
        // Disks that open failed (removed, or marked) are recorded and their rebuild queued.
        if let Err(error) = store.record_disks_failed_at_open().await {
            tracing::warn!(%error, "recording disks that opened failed");
        }
        Ok(store)
    }

    /// Reconciles the scanned staging log with the catalog's staged objects.
    async fn recover(&self) -> StoreResult<StoreRecovery> {
        // Read after the staging log claimed its segments (in `StagingLog::open`).
        let staged = self.catalog.staged_objects(None, u32::MAX).await?;
        let in_use = self.staging.segments_in_use_at_open();
        let mut wanted = Vec::new();
        let mut referenced = BTreeSet::new();
        for object in &staged {
            if let ObjectLocation::Staged { segment, offset } = object.location {
                referenced.insert((segment, offset));
                wanted.push((segment, offset, object.size_bytes));
            }
        }
        // Only the records the catalog references are looked for (a few reads each), not
        // every chunk of every segment; segments in use by a live process are skipped.
        let found: BTreeMap<(SegmentId, u64), ScannedRecord> = self
            .staging
            .find_records(wanted)
            .await?
            .into_iter()
            .map(|record| ((record.segment, record.offset), record))
            .collect();
        let mut problems = Vec::new();
        for object in &staged {
            let ObjectLocation::Staged { segment, offset } = object.location else {
                continue;
            };
            if in_use.contains(&segment) {
                continue; // another live process's segment: not scanned, not ours to judge
            }
            match found.get(&(segment, offset)) {
                Some(record)
                    if record.key == object.key
                        && record.size_bytes == object.size_bytes
                        && record.content_hash == object.content_hash => {}
                Some(record) => problems.push(format!(
                    "`{}`: staging record {segment:016x}@{offset} holds `{}` ({} bytes), not this object",
                    object.key, record.key, record.size_bytes
                )),
                None => problems.push(format!(
                    "`{}`: no valid staging record at {segment:016x}@{offset}",
                    object.key
                )),
            }
        }
        let report = self.staging.recover(&referenced).await?;
        Ok(StoreRecovery {
            staging: report,
            problems,
        })
    }
}

impl Store<SqliteCatalog> {
    /// [`Store::init`] with a new SQLite catalog at `DATA/catalog.sqlite`.
    pub async fn init_sqlite(data_dir: &Path, config: StoreConfig) -> StoreResult<SqliteStore> {
        config::validate(&config, &data_dir.join(STORE_FILE))?;
        if data_dir.join(STORE_FILE).exists() {
            return Err(StoreError::AlreadyInitialized {
                path: data_dir.display().to_string(),
            });
        }
        std::fs::create_dir_all(data_dir).map_err(io_error(data_dir))?;
        let catalog = SqliteCatalog::open(&data_dir.join(CATALOG_FILE)).await?;
        Store::init(data_dir, config, catalog).await
    }

    /// [`Store::open`] with the SQLite catalog at `DATA/catalog.sqlite`. A catalog that is
    /// missing, empty or unreadable while the directory holds staging segments or stripe stacks
    /// is [`StoreError::CatalogLost`], and nothing is changed (docs/store.md, "A lost
    /// catalog"); one that is missing or empty where there is nothing to lose is created anew.
    pub async fn open_sqlite(data_dir: &Path) -> StoreResult<SqliteStore> {
        if !data_dir.join(STORE_FILE).exists() {
            return Err(StoreError::NotInitialized {
                path: data_dir.display().to_string(),
            });
        }
        let path = data_dir.join(CATALOG_FILE);
        let catalog = match SqliteCatalog::open_existing(&path).await {
            Ok(catalog) => catalog,
            Err(error) => replace_lost_catalog(data_dir, &path, error).await?,
        };
        Store::open(data_dir, catalog).await
    }

    /// Waits for the repairs reads queued (and records disks they found failed), then closes
    /// the catalog's connections (checkpointing its WAL); acknowledged work is durable without
    /// this.
    pub async fn close(self) {
        if let Err(error) = self.settle_repairs().await {
            tracing::warn!(%error, "settling read repairs at close");
        }
        let _ = self.rack_io.driver.shutdown().await;
        self.catalog.close().await;
    }
}

/// The catalog at `path` did not open as an existing one (`error`). Refuses with
/// [`StoreError::CatalogLost`] while `data_dir` holds data only a catalog names; otherwise a
/// missing or empty catalog is created anew (a store whose catalog went before any PUT loses
/// nothing) and an unreadable one stays the error it was.
async fn replace_lost_catalog(
    data_dir: &Path,
    path: &Path,
    error: spinwise_catalog::CatalogError,
) -> StoreResult<SqliteCatalog> {
    use spinwise_catalog::CatalogError;
    let condition = match &error {
        CatalogError::Absent { absence, .. } => absence.to_string(),
        CatalogError::Open { message, .. } => format!("unreadable ({message})"),
        _ => return Err(error.into()),
    };
    let found = crate::survey::survey(data_dir)?;
    if found.holds_data() {
        return Err(StoreError::CatalogLost {
            data_dir: data_dir.display().to_string(),
            catalog: path.display().to_string(),
            condition,
            staging_segments: found.staging_segments,
            stripe_stacks: found.stripe_stacks,
        });
    }
    match error {
        CatalogError::Absent { .. } => {
            tracing::warn!(catalog = %path.display(), %condition, "creating a new catalog: the data directory holds no data");
            Ok(SqliteCatalog::open(path).await?)
        }
        other => Err(other.into()),
    }
}
