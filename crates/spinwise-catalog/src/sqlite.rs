//! sqlite.rs: [`SqliteCatalog`], the embedded durable catalog: one SQLite database in WAL mode
//! through sqlx, on the always-on disk. The schema, its indexes and the durability settings are
//! described column by column in docs/catalog.md; `SCHEMA_V1` below is the source of truth.
//!
//! Invariants:
//! - every method that changes more than one row runs in one `BEGIN IMMEDIATE` transaction
//!   (taking the write lock up front, so two writers never deadlock on a lock upgrade), reads
//!   the rows it needs, validates them with `rules` (shared with MemoryCatalog) and only then
//!   writes; a refused request rolls back and changes nothing;
//! - `synchronous = FULL` with WAL: a method that returns `Ok` after a write has fsynced the
//!   log, so the change survives power loss;
//! - numbers are stored as INTEGER (i64); a `u64` above `i64::MAX` is refused with
//!   `CatalogError::Limit`, and a negative number read back is reported as corruption;
//! - key ranges use `key >= prefix AND key < successor(prefix)` on the primary key (binary
//!   collation = byte order = `str` order), never LIKE.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{Row, SqliteConnection};

use crate::rules;
use crate::{
    Absence, BlobId, BlobRecord, BlobState, Catalog, CatalogError, CatalogStats, ContentHash,
    DiskHealth, DiskIndex, DiskRecord, DiskUsage, GroupIndex, IntegrityReport, Migration,
    ObjectLocation, ObjectRecord, RebuildTask, ScrubEntry, SegmentId, SegmentUsage, Tier,
};

/// The schema version this build creates and understands.
pub const SCHEMA_VERSION: i64 = 4;

/// Connections in the pool: writers serialize on SQLite's write lock anyway; the rest let
/// reads (WAL readers never block the writer) proceed concurrently.
const MAX_CONNECTIONS: u32 = 4;
/// How long a connection waits for another's write lock before failing with "busy".
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

const SCHEMA_V1: &str = r#"
CREATE TABLE schema_version (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    version INTEGER NOT NULL
) STRICT;
CREATE TABLE counters (
    name TEXT PRIMARY KEY NOT NULL,
    value INTEGER NOT NULL CHECK (value >= 1)
) STRICT, WITHOUT ROWID;
CREATE TABLE blobs (
    id INTEGER PRIMARY KEY CHECK (id >= 1),
    group_index INTEGER NOT NULL CHECK (group_index BETWEEN 0 AND 4294967295),
    k INTEGER NOT NULL CHECK (k BETWEEN 1 AND 4294967295),
    r INTEGER NOT NULL CHECK (r BETWEEN 0 AND 4294967295),
    fragment_bytes INTEGER NOT NULL CHECK (fragment_bytes BETWEEN 0 AND 4294967295),
    size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
    content_hash BLOB NOT NULL CHECK (length(content_hash) = 32),
    state TEXT NOT NULL CHECK (state IN ('writing', 'committed')),
    live_bytes INTEGER NOT NULL CHECK (live_bytes >= 0)
) STRICT;
CREATE INDEX blobs_by_state ON blobs (state, id);
CREATE INDEX blobs_by_group ON blobs (group_index, id);
CREATE TABLE blob_disks (
    blob INTEGER NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
    column_index INTEGER NOT NULL CHECK (column_index >= 0),
    disk INTEGER NOT NULL CHECK (disk BETWEEN 0 AND 4294967295),
    PRIMARY KEY (blob, column_index),
    UNIQUE (disk, blob)
) STRICT, WITHOUT ROWID;
CREATE TABLE disks (
    disk INTEGER PRIMARY KEY CHECK (disk BETWEEN 0 AND 4294967295),
    health TEXT NOT NULL CHECK (health IN ('healthy', 'failed'))
) STRICT;
CREATE INDEX disks_unhealthy ON disks (disk) WHERE health <> 'healthy';
CREATE TABLE objects (
    key TEXT PRIMARY KEY NOT NULL,
    size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
    content_hash BLOB NOT NULL CHECK (length(content_hash) = 32),
    created_unix_ms INTEGER NOT NULL,
    staged_segment INTEGER CHECK (staged_segment >= 0),
    blob INTEGER REFERENCES blobs (id),
    byte_offset INTEGER NOT NULL CHECK (byte_offset >= 0),
    CHECK ((staged_segment IS NULL) <> (blob IS NULL))
) STRICT, WITHOUT ROWID;
CREATE INDEX objects_staged ON objects (staged_segment, byte_offset) WHERE staged_segment IS NOT NULL;
CREATE INDEX objects_by_blob ON objects (blob) WHERE blob IS NOT NULL;
CREATE TABLE rebuild_tasks (
    blob INTEGER NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
    column_index INTEGER NOT NULL CHECK (column_index >= 0),
    failed_disk INTEGER NOT NULL CHECK (failed_disk BETWEEN 0 AND 4294967295),
    PRIMARY KEY (blob, column_index)
) STRICT, WITHOUT ROWID;
INSERT INTO counters (name, value) VALUES ('next_blob_id', 1);
INSERT INTO schema_version (singleton, version) VALUES (1, 1);
"#;

/// Version 1 → 2: each blob's last scrub verification (0 = never; existing blobs start
/// unverified), and the index `scrub_due` and `last_scrub_in_group` search.
const SCHEMA_V2_STEP: &str = r#"
ALTER TABLE blobs ADD COLUMN verified_unix_ms INTEGER NOT NULL DEFAULT 0 CHECK (verified_unix_ms >= 0);
CREATE INDEX blobs_by_scrub ON blobs (group_index, verified_unix_ms, id);
UPDATE schema_version SET version = 2;
"#;

/// Version 2 → 3: each object's tier ('warm' stays staged, 'cold' migrates; existing objects
/// were all headed for the cold groups, so they start cold), the rule that a warm object is
/// staged, and the index the warm tier's demotion order (oldest first) reads.
const SCHEMA_V3_STEP: &str = r#"
ALTER TABLE objects ADD COLUMN tier TEXT NOT NULL DEFAULT 'cold'
    CHECK (tier IN ('warm', 'cold') AND (tier = 'cold' OR staged_segment IS NOT NULL));
CREATE INDEX objects_warm ON objects (created_unix_ms, key) WHERE tier = 'warm';
UPDATE schema_version SET version = 3;
"#;

/// Version 3 → 4: what each disk's blobs keep on it (`disk_usage`: blobs with a column there
/// and their stripes, `BlobRecord::stripes`), filled from the blobs and kept by triggers as
/// columns are added (`begin_blob`), moved (`complete_rebuild`) and removed with their blob
/// (`abort_blob`, `remove_blob`: before the blob's row goes, while its columns are there), so
/// a store reads its disks' used space in O(disks) instead of reading every blob. A row whose
/// disk holds no blob any more stays with zeros. And `totals`, what `stats` answers (objects,
/// staged, warm, blobs and their bytes, dead bytes), kept by triggers on `objects` and `blobs`
/// so `stats` is O(1) where it counted every object (upkeep asks it every tick). Objects are
/// replaced by an upsert, never `INSERT OR REPLACE`, whose implicit delete fires no trigger.
/// `integrity_check` recounts both from the rows. And the partial index `blobs_dead`: the
/// committed blobs with dead bytes, compaction's candidates, by group.
fn schema_v4_step() -> String {
    let column_stripes = stripes_sql("b");
    let removed_stripes = stripes_sql("OLD");
    let counted_totals = COUNTED_TOTALS
        .map(|(_, count)| format!("({count})"))
        .join(",\n        ");
    let (object_added, object_removed) = (object_totals("NEW", '+'), object_totals("OLD", '-'));
    let (blob_added, blob_removed) = (blob_totals("NEW", '+'), blob_totals("OLD", '-'));
    format!(
        r#"
CREATE TABLE disk_usage (
    disk INTEGER PRIMARY KEY CHECK (disk BETWEEN 0 AND 4294967295),
    blobs INTEGER NOT NULL CHECK (blobs >= 0),
    stripes INTEGER NOT NULL CHECK (stripes >= 0)
) STRICT;
INSERT INTO disk_usage (disk, blobs, stripes)
    SELECT d.disk, COUNT(*), SUM({column_stripes})
    FROM blob_disks d JOIN blobs b ON b.id = d.blob GROUP BY d.disk;
CREATE TRIGGER disk_usage_column_added AFTER INSERT ON blob_disks BEGIN
    INSERT INTO disk_usage (disk, blobs, stripes)
        SELECT NEW.disk, 1, {column_stripes}
        FROM blobs b WHERE b.id = NEW.blob
    ON CONFLICT (disk) DO UPDATE SET blobs = blobs + 1, stripes = stripes + excluded.stripes;
END;
CREATE TRIGGER disk_usage_column_moved AFTER UPDATE OF disk ON blob_disks
    WHEN OLD.disk <> NEW.disk BEGIN
    UPDATE disk_usage SET blobs = blobs - 1, stripes = stripes - (
        SELECT {column_stripes}
        FROM blobs b WHERE b.id = OLD.blob)
    WHERE disk = OLD.disk;
    INSERT INTO disk_usage (disk, blobs, stripes)
        SELECT NEW.disk, 1, {column_stripes}
        FROM blobs b WHERE b.id = NEW.blob
    ON CONFLICT (disk) DO UPDATE SET blobs = blobs + 1, stripes = stripes + excluded.stripes;
END;
CREATE TRIGGER disk_usage_blob_removed BEFORE DELETE ON blobs BEGIN
    UPDATE disk_usage SET blobs = blobs - 1, stripes = stripes - (
        {removed_stripes})
    WHERE disk IN (SELECT disk FROM blob_disks WHERE blob = OLD.id);
END;
CREATE INDEX blobs_dead ON blobs (group_index, id)
    WHERE state = 'committed' AND (live_bytes < size_bytes OR live_bytes = 0);
CREATE TABLE totals (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    objects INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    staged_objects INTEGER NOT NULL,
    staged_bytes INTEGER NOT NULL,
    warm_objects INTEGER NOT NULL,
    warm_bytes INTEGER NOT NULL,
    blobs INTEGER NOT NULL,
    dead_bytes INTEGER NOT NULL
) STRICT;
INSERT INTO totals (singleton, objects, bytes, staged_objects, staged_bytes, warm_objects,
                    warm_bytes, blobs, dead_bytes)
    SELECT 1,
        {counted_totals};
CREATE TRIGGER totals_object_added AFTER INSERT ON objects BEGIN
    {object_added}
END;
CREATE TRIGGER totals_object_removed AFTER DELETE ON objects BEGIN
    {object_removed}
END;
CREATE TRIGGER totals_object_changed AFTER UPDATE ON objects BEGIN
    {object_removed}
    {object_added}
END;
CREATE TRIGGER totals_blob_added AFTER INSERT ON blobs BEGIN
    {blob_added}
END;
CREATE TRIGGER totals_blob_removed AFTER DELETE ON blobs BEGIN
    {blob_removed}
END;
CREATE TRIGGER totals_blob_changed AFTER UPDATE OF state, size_bytes, live_bytes ON blobs BEGIN
    {blob_removed}
    {blob_added}
END;
UPDATE schema_version SET version = 4;
"#
    )
}

/// A blob's stripes per stack (`BlobRecord::stripes`) in SQL, for the blob row named `blob` (an
/// alias in a query, `OLD` in a trigger): ceil(size / (k × fragment)), 0 for a blob without k
/// or fragment bytes. The v4 step's fill and triggers and `integrity_check`'s recount share it.
fn stripes_sql(blob: &str) -> String {
    format!(
        "CASE WHEN {blob}.k * {blob}.fragment_bytes = 0 THEN 0
        ELSE {blob}.size_bytes / ({blob}.k * {blob}.fragment_bytes) + ({blob}.size_bytes % ({blob}.k * {blob}.fragment_bytes) > 0) END"
    )
}

/// Each `totals` column and how it is counted from the rows: the v4 step fills it so and
/// `integrity_check` recounts it so.
const COUNTED_TOTALS: [(&str, &str); 8] = [
    ("objects", "SELECT COUNT(*) FROM objects"),
    ("bytes", "SELECT COALESCE(SUM(size_bytes), 0) FROM objects"),
    (
        "staged_objects",
        "SELECT COUNT(*) FROM objects WHERE staged_segment IS NOT NULL",
    ),
    (
        "staged_bytes",
        "SELECT COALESCE(SUM(size_bytes), 0) FROM objects WHERE staged_segment IS NOT NULL",
    ),
    (
        "warm_objects",
        "SELECT COUNT(*) FROM objects WHERE tier = 'warm'",
    ),
    (
        "warm_bytes",
        "SELECT COALESCE(SUM(size_bytes), 0) FROM objects WHERE tier = 'warm'",
    ),
    ("blobs", "SELECT COUNT(*) FROM blobs"),
    (
        "dead_bytes",
        "SELECT COALESCE(SUM(size_bytes - live_bytes), 0) FROM blobs WHERE state = 'committed'",
    ),
];

/// The change an object row makes to `totals` (a trigger statement): `sign` `+` as `row` (NEW)
/// comes, `-` as `row` (OLD) goes; an update is one of each.
fn object_totals(row: &str, sign: char) -> String {
    format!(
        "UPDATE totals SET objects = objects {sign} 1, bytes = bytes {sign} {row}.size_bytes,
        staged_objects = staged_objects {sign} ({row}.staged_segment IS NOT NULL),
        staged_bytes = staged_bytes {sign} (CASE WHEN {row}.staged_segment IS NOT NULL THEN {row}.size_bytes ELSE 0 END),
        warm_objects = warm_objects {sign} ({row}.tier = 'warm'),
        warm_bytes = warm_bytes {sign} (CASE WHEN {row}.tier = 'warm' THEN {row}.size_bytes ELSE 0 END);"
    )
}

/// The change a blob row makes to `totals`, as [`object_totals`].
fn blob_totals(row: &str, sign: char) -> String {
    format!(
        "UPDATE totals SET blobs = blobs {sign} 1,
        dead_bytes = dead_bytes {sign} (CASE WHEN {row}.state = 'committed' THEN {row}.size_bytes - {row}.live_bytes ELSE 0 END);"
    )
}

const OBJECT_COLUMNS: &str =
    "key, size_bytes, content_hash, created_unix_ms, staged_segment, blob, byte_offset, tier";
const BLOB_COLUMNS: &str =
    "id, group_index, k, r, fragment_bytes, size_bytes, content_hash, state, live_bytes";

/// The SQLite catalog; see the module documentation. Cheap to share (`Arc` it or borrow it).
#[derive(Debug, Clone)]
pub struct SqliteCatalog {
    pool: SqlitePool,
}

fn query_error(operation: &'static str) -> impl Fn(sqlx::Error) -> CatalogError {
    move |error| CatalogError::Query {
        operation,
        message: error.to_string(),
    }
}

fn corrupt(operation: &'static str, message: String) -> CatalogError {
    CatalogError::Query {
        operation,
        message: format!("corrupt catalog row: {message}"),
    }
}

fn unsigned<T: TryFrom<i64>>(value: i64, what: &str) -> Result<T, CatalogError> {
    T::try_from(value).map_err(|_| corrupt("decode", format!("{what} = {value} is out of range")))
}

fn get<'r, T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>>(
    row: &'r SqliteRow,
    column: &str,
) -> Result<T, CatalogError> {
    row.try_get(column).map_err(query_error("decode"))
}

fn hash_of(bytes: Vec<u8>) -> Result<ContentHash, CatalogError> {
    let length = bytes.len();
    bytes
        .try_into()
        .map_err(|_| corrupt("decode", format!("content hash of {length} bytes")))
}

fn state_name(state: BlobState) -> &'static str {
    match state {
        BlobState::Writing => "writing",
        BlobState::Committed => "committed",
    }
}

fn health_name(health: DiskHealth) -> &'static str {
    match health {
        DiskHealth::Healthy => "healthy",
        DiskHealth::Failed => "failed",
    }
}

fn decode_object(row: &SqliteRow) -> Result<ObjectRecord, CatalogError> {
    let offset = unsigned(get::<i64>(row, "byte_offset")?, "byte_offset")?;
    let segment: Option<i64> = get(row, "staged_segment")?;
    let blob: Option<i64> = get(row, "blob")?;
    let location = match (segment, blob) {
        (Some(segment), None) => ObjectLocation::Staged {
            segment: unsigned(segment, "staged_segment")?,
            offset,
        },
        (None, Some(blob)) => ObjectLocation::Migrated {
            blob: unsigned(blob, "blob")?,
            offset,
        },
        _ => return Err(corrupt("decode", "object with both or no location".into())),
    };
    let tier = match get::<String>(row, "tier")?.as_str() {
        "warm" => Tier::Warm,
        "cold" => Tier::Cold,
        other => return Err(corrupt("decode", format!("object tier {other:?}"))),
    };
    Ok(ObjectRecord {
        key: get(row, "key")?,
        size_bytes: unsigned(get::<i64>(row, "size_bytes")?, "size_bytes")?,
        content_hash: hash_of(get(row, "content_hash")?)?,
        created_unix_ms: get(row, "created_unix_ms")?,
        location,
        tier,
    })
}

/// The blob row without its disks (filled by `load_disks`).
fn decode_blob(row: &SqliteRow) -> Result<BlobRecord, CatalogError> {
    let state = match get::<String>(row, "state")?.as_str() {
        "writing" => BlobState::Writing,
        "committed" => BlobState::Committed,
        other => return Err(corrupt("decode", format!("blob state {other:?}"))),
    };
    Ok(BlobRecord {
        id: unsigned(get::<i64>(row, "id")?, "blob id")?,
        group: unsigned(get::<i64>(row, "group_index")?, "group_index")?,
        disks: Vec::new(),
        k: unsigned(get::<i64>(row, "k")?, "k")?,
        r: unsigned(get::<i64>(row, "r")?, "r")?,
        fragment_bytes: unsigned(get::<i64>(row, "fragment_bytes")?, "fragment_bytes")?,
        size_bytes: unsigned(get::<i64>(row, "size_bytes")?, "size_bytes")?,
        content_hash: hash_of(get(row, "content_hash")?)?,
        state,
        live_bytes: unsigned(get::<i64>(row, "live_bytes")?, "live_bytes")?,
    })
}

/// The smallest string above every string that starts with `prefix`, if there is one: the last
/// code point that has a successor is incremented and the rest dropped. UTF-8 byte order is
/// code-point order, so `prefix <= key < successor` is exactly "key starts with prefix".
fn prefix_successor(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last {
            '\u{d7ff}' => Some('\u{e000}'),
            char::MAX => None,
            other => char::from_u32(other as u32 + 1),
        };
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The most blobs whose disks one query loads (each is a bound variable; SQLite allows 32,766).
const DISK_QUERY_BLOBS: usize = 512;

/// Fills `blobs[..].disks` with one query and one row per blob: a store reads every blob when it
/// first needs its disks' space (`spinwise_store::space`), and sqlx hands each row from its worker thread to
/// the caller (a context switch each), so a row per column made 10,000 blobs of 18 columns cost
/// ~0.25 s (`examples/blob_listing.rs`, docs/BENCHMARKS.md). SQLite joins each blob's columns
/// as `column:disk` pairs in no promised order (ordering them in SQL costs a sort per blob), and
/// [`decode_columns`] puts them in column order.
async fn load_disks(
    connection: &mut SqliteConnection,
    blobs: &mut [BlobRecord],
) -> Result<(), CatalogError> {
    let operation = "load blob disks";
    let placeholders = vec!["?"; blobs.len()].join(", ");
    let sql = format!(
        "SELECT blob, group_concat(column_index || ':' || disk) AS columns \
         FROM blob_disks WHERE blob IN ({placeholders}) GROUP BY blob"
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for blob in blobs.iter() {
        query = query.bind(rules::stored(blob.id, "blob id")?);
    }
    let rows = query
        .fetch_all(&mut *connection)
        .await
        .map_err(query_error(operation))?;
    let position: BTreeMap<BlobId, usize> = blobs
        .iter()
        .enumerate()
        .map(|(position, blob)| (blob.id, position))
        .collect();
    for blob in blobs.iter_mut() {
        blob.disks.clear();
    }
    for row in &rows {
        let id: BlobId = unsigned(get::<i64>(row, "blob")?, "blob id")?;
        let Some(&at) = position.get(&id) else {
            return Err(corrupt(operation, format!("blob {id} was not asked for")));
        };
        blobs[at].disks = decode_columns(id, &get::<String>(row, "columns")?)?;
    }
    Ok(())
}

/// Blob `id`'s disks from `column:disk` pairs joined by ',' in any order; every column from 0
/// up must be there once.
fn decode_columns(id: BlobId, columns: &str) -> Result<Vec<DiskIndex>, CatalogError> {
    let malformed = || corrupt("load blob disks", format!("blob {id}: columns {columns:?}"));
    let mut pairs = Vec::new();
    for pair in columns.split(',') {
        let (column, disk) = pair.split_once(':').ok_or_else(malformed)?;
        let column: usize = column.parse().map_err(|_| malformed())?;
        let disk: DiskIndex = disk.parse().map_err(|_| malformed())?;
        pairs.push((column, disk));
    }
    pairs.sort_unstable();
    let mut disks = Vec::with_capacity(pairs.len());
    for (column, disk) in pairs {
        if column != disks.len() {
            return Err(corrupt(
                "load blob disks",
                format!("blob {id} is missing column {}", disks.len()),
            ));
        }
        disks.push(disk);
    }
    Ok(disks)
}

async fn load_blobs(
    connection: &mut SqliteConnection,
    rows: Vec<SqliteRow>,
) -> Result<Vec<BlobRecord>, CatalogError> {
    let mut blobs = rows
        .iter()
        .map(decode_blob)
        .collect::<Result<Vec<_>, _>>()?;
    for chunk in blobs.chunks_mut(DISK_QUERY_BLOBS) {
        load_disks(connection, chunk).await?;
    }
    Ok(blobs)
}

async fn load_blob(
    connection: &mut SqliteConnection,
    id: BlobId,
) -> Result<Option<BlobRecord>, CatalogError> {
    let Ok(id) = i64::try_from(id) else {
        return Ok(None);
    };
    let sql = format!("SELECT {BLOB_COLUMNS} FROM blobs WHERE id = ?");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id)
        .fetch_optional(&mut *connection)
        .await
        .map_err(query_error("load blob"))?;
    Ok(load_blobs(connection, row.into_iter().collect())
        .await?
        .pop())
}

async fn load_object(
    connection: &mut SqliteConnection,
    key: &str,
) -> Result<Option<ObjectRecord>, CatalogError> {
    let sql = format!("SELECT {OBJECT_COLUMNS} FROM objects WHERE key = ?");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(key)
        .fetch_optional(&mut *connection)
        .await
        .map_err(query_error("load object"))?;
    row.as_ref().map(decode_object).transpose()
}

async fn disk_health(
    connection: &mut SqliteConnection,
    disk: DiskIndex,
) -> Result<DiskHealth, CatalogError> {
    let health: Option<String> = sqlx::query_scalar("SELECT health FROM disks WHERE disk = ?")
        .bind(i64::from(disk))
        .fetch_optional(&mut *connection)
        .await
        .map_err(query_error("disk health"))?;
    match health.as_deref() {
        None | Some("healthy") => Ok(DiskHealth::Healthy),
        Some("failed") => Ok(DiskHealth::Failed),
        Some(other) => Err(corrupt("disk health", format!("health {other:?}"))),
    }
}

/// Adds `delta_bytes` (may be negative) to a blob's live bytes.
async fn adjust_live_bytes(
    connection: &mut SqliteConnection,
    blob: BlobId,
    delta_bytes: i64,
) -> Result<(), CatalogError> {
    sqlx::query("UPDATE blobs SET live_bytes = live_bytes + ? WHERE id = ?")
        .bind(delta_bytes)
        .bind(rules::stored(blob, "blob id")?)
        .execute(&mut *connection)
        .await
        .map_err(query_error("adjust live bytes"))?;
    Ok(())
}

/// The object leaves its place: a migrated object's blob loses its live bytes.
async fn release(
    connection: &mut SqliteConnection,
    old: &ObjectRecord,
) -> Result<(), CatalogError> {
    if let ObjectLocation::Migrated { blob, .. } = old.location {
        let size = rules::stored(old.size_bytes, "object size_bytes")?;
        adjust_live_bytes(connection, blob, -size).await?;
    }
    Ok(())
}

async fn next_blob_id_value(connection: &mut SqliteConnection) -> Result<BlobId, CatalogError> {
    let value: i64 = sqlx::query_scalar("SELECT value FROM counters WHERE name = 'next_blob_id'")
        .fetch_one(&mut *connection)
        .await
        .map_err(query_error("read blob id counter"))?;
    unsigned(value, "next_blob_id")
}

/// Whether opening may create the catalog's schema (and file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Creation {
    Allowed,
    Refused,
}

/// Why [`SqliteCatalog::migrate`] stopped.
enum MigrateFailure {
    /// No tables, and creating them was refused.
    Empty,
    Other(String),
}

impl From<String> for MigrateFailure {
    fn from(message: String) -> Self {
        MigrateFailure::Other(message)
    }
}

impl SqliteCatalog {
    /// Creates (from an empty or missing file) or opens the catalog at `path`, migrating the
    /// schema to [`SCHEMA_VERSION`]. Refuses a database written by a newer version, or one that
    /// holds tables but is not a catalog. Needs a tokio runtime. For a store's `init` (or a
    /// directory known to hold nothing the catalog would have to name): opening an existing
    /// store uses [`SqliteCatalog::open_existing`], which never creates one.
    pub async fn open(path: &Path) -> Result<Self, CatalogError> {
        SqliteCatalog::open_with(path, Creation::Allowed).await
    }

    /// Opens the catalog at `path` as [`SqliteCatalog::open`] does, but never creates one: a
    /// missing file is [`CatalogError::Absent`] `Missing`, and a file of no bytes or a database
    /// without tables is `Absent` `Empty` (nothing is written to it). Why: a store's catalog
    /// that vanished must not be silently replaced by an empty one while the data it named is
    /// still on disk (the store decides what to do, see spinwise-store's `open_sqlite`).
    pub async fn open_existing(path: &Path) -> Result<Self, CatalogError> {
        let absent = |absence| CatalogError::Absent {
            path: path.display().to_string(),
            absence,
        };
        match std::fs::metadata(path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(absent(Absence::Missing));
            }
            // Zero bytes: not even SQLite's header. Checked before connecting, so the file is
            // left exactly as found.
            Ok(metadata) if metadata.is_file() && metadata.len() == 0 => {
                return Err(absent(Absence::Empty));
            }
            // Anything else (a directory, unreadable metadata) is for SQLite to refuse.
            _ => {}
        }
        SqliteCatalog::open_with(path, Creation::Refused).await
    }

    async fn open_with(path: &Path, creation: Creation) -> Result<Self, CatalogError> {
        let open_error = |message: String| CatalogError::Open {
            path: path.display().to_string(),
            message,
        };
        let options = SqliteConnectOptions::from_str("sqlite:")
            .map_err(|error| open_error(error.to_string()))?
            .filename(path)
            .create_if_missing(creation == Creation::Allowed)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .connect_with(options)
            .await
            .map_err(|error| open_error(error.to_string()))?;
        let catalog = SqliteCatalog { pool };
        if let Err(failure) = catalog.migrate(creation).await {
            catalog.pool.close().await;
            return Err(match failure {
                MigrateFailure::Empty => CatalogError::Absent {
                    path: path.display().to_string(),
                    absence: Absence::Empty,
                },
                MigrateFailure::Other(message) => open_error(message),
            });
        }
        Ok(catalog)
    }

    /// Brings the schema to [`SCHEMA_VERSION`] in one transaction.
    async fn migrate(&self, creation: Creation) -> Result<(), MigrateFailure> {
        let mut transaction = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|error| error.to_string())?;
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )
        .fetch_all(&mut *transaction)
        .await
        .map_err(|error| error.to_string())?;
        let mut version = if tables.is_empty() {
            if creation == Creation::Refused {
                // Dropping the transaction rolls it back: nothing was written.
                return Err(MigrateFailure::Empty);
            }
            sqlx::raw_sql(SCHEMA_V1)
                .execute(&mut *transaction)
                .await
                .map_err(|error| format!("creating schema version 1: {error}"))?;
            1
        } else if tables.iter().any(|table| table == "schema_version") {
            let version: i64 = sqlx::query_scalar("SELECT version FROM schema_version")
                .fetch_one(&mut *transaction)
                .await
                .map_err(|error| format!("reading the schema version: {error}"))?;
            if version > SCHEMA_VERSION {
                return Err(MigrateFailure::Other(format!(
                    "schema version {version} is newer than this build understands \
                     ({SCHEMA_VERSION}); use a newer spinwise"
                )));
            }
            if version < 1 {
                return Err(MigrateFailure::Other(format!(
                    "unknown schema version {version}"
                )));
            }
            version
        } else {
            return Err(MigrateFailure::Other(format!(
                "not a spinwise catalog (has tables {tables:?} but no schema_version)"
            )));
        };
        // Each step brings the schema one version up, inside this transaction.
        if version == 1 {
            sqlx::raw_sql(SCHEMA_V2_STEP)
                .execute(&mut *transaction)
                .await
                .map_err(|error| format!("migrating schema version 1 to 2: {error}"))?;
            version = 2;
        }
        if version == 2 {
            sqlx::raw_sql(SCHEMA_V3_STEP)
                .execute(&mut *transaction)
                .await
                .map_err(|error| format!("migrating schema version 2 to 3: {error}"))?;
            version = 3;
        }
        if version == 3 {
            sqlx::raw_sql(sqlx::AssertSqlSafe(schema_v4_step()))
                .execute(&mut *transaction)
                .await
                .map_err(|error| format!("migrating schema version 3 to 4: {error}"))?;
            version = 4;
        }
        debug_assert_eq!(version, SCHEMA_VERSION);
        transaction
            .commit()
            .await
            .map_err(|error| MigrateFailure::Other(error.to_string()))
    }

    /// Waits for running queries and closes every connection (checkpointing the WAL). Every
    /// change acknowledged before is already durable; this only tidies up.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Copies the write-ahead log into the database and truncates it to zero bytes, then
    /// closes: for a catalog that is about to be renamed into place. Closing alone leaves the
    /// WAL behind when the pool's connections close at once and none of them finds itself the
    /// last (SQLite deletes it only from the last connection that can lock the file alone),
    /// which failed a recovery in the store's swarm once. Best effort: an error leaves the WAL,
    /// which the caller checks for.
    pub async fn checkpoint_and_close(&self) {
        let _ = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.pool)
            .await;
        self.pool.close().await;
    }

    async fn write(
        &self,
        operation: &'static str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, CatalogError> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(query_error(operation))
    }

    async fn read(
        &self,
        operation: &'static str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, CatalogError> {
        self.pool.begin().await.map_err(query_error(operation))
    }

    async fn integrity_problems(&self) -> Result<Vec<String>, CatalogError> {
        let operation = "integrity_check";
        let mut transaction = self.read(operation).await?;
        let connection = &mut *transaction;
        let mut problems = Vec::new();
        let integrity: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_all(&mut *connection)
            .await
            .map_err(query_error(operation))?;
        problems.extend(
            integrity
                .into_iter()
                .filter(|line| line != "ok")
                .map(|line| format!("sqlite integrity_check: {line}")),
        );
        let foreign = sqlx::query("PRAGMA foreign_key_check")
            .fetch_all(&mut *connection)
            .await
            .map_err(query_error(operation))?;
        for row in &foreign {
            let table: String = row.try_get(0).map_err(query_error(operation))?;
            let rowid: Option<i64> = row.try_get(1).map_err(query_error(operation))?;
            let parent: String = row.try_get(2).map_err(query_error(operation))?;
            problems.push(format!(
                "sqlite foreign_key_check: a row of {table} (rowid {rowid:?}) points to a missing {parent} row"
            ));
        }
        self.invariant_problems(connection, &mut problems).await?;
        transaction.commit().await.map_err(query_error(operation))?;
        Ok(problems)
    }

    /// The crate's invariants as SQL, one problem line per offending row.
    async fn invariant_problems(
        &self,
        connection: &mut SqliteConnection,
        problems: &mut Vec<String>,
    ) -> Result<(), CatalogError> {
        Self::object_problems(connection, problems).await?;
        Self::blob_problems(connection, problems).await?;
        Self::disk_usage_problems(connection, problems).await?;
        Self::totals_problems(connection, problems).await?;
        self.task_problems(connection, problems).await?;
        Self::counter_problems(connection, problems).await
    }

    /// `totals` against a recount from the objects and blobs: one line per total that differs.
    async fn totals_problems(
        connection: &mut SqliteConnection,
        problems: &mut Vec<String>,
    ) -> Result<(), CatalogError> {
        let operation = "integrity_check";
        let kept = COUNTED_TOTALS
            .map(|(total, _)| format!("t.{total}"))
            .join(", ");
        let counted = COUNTED_TOTALS
            .map(|(total, count)| format!("({count}) AS counted_{total}"))
            .join(", ");
        let sql = format!("SELECT {kept}, {counted} FROM totals t");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut *connection)
            .await
            .map_err(query_error(operation))?;
        for (total, _) in COUNTED_TOTALS {
            let kept: i64 = get(&row, total)?;
            let counted: i64 = get(&row, &format!("counted_{total}"))?;
            if kept != counted {
                problems.push(format!(
                    "totals: the kept {total} is {kept}, the rows say {counted}"
                ));
            }
        }
        Ok(())
    }

    /// `disk_usage` against a recount from the blobs: every disk whose kept totals differ (a
    /// trigger missed a change) is a problem line.
    async fn disk_usage_problems(
        connection: &mut SqliteConnection,
        problems: &mut Vec<String>,
    ) -> Result<(), CatalogError> {
        let operation = "integrity_check";
        let stripes = stripes_sql("b");
        let sql = format!(
            "WITH counted AS (
                 SELECT d.disk, COUNT(*) AS blobs, SUM({stripes}) AS stripes
                 FROM blob_disks d JOIN blobs b ON b.id = d.blob GROUP BY d.disk)
             SELECT u.disk, u.blobs AS kept_blobs, u.stripes AS kept_stripes,
                    COALESCE(c.blobs, 0) AS blobs, COALESCE(c.stripes, 0) AS stripes
             FROM disk_usage u LEFT JOIN counted c ON c.disk = u.disk
             WHERE u.blobs <> COALESCE(c.blobs, 0) OR u.stripes <> COALESCE(c.stripes, 0)
             UNION ALL
             SELECT c.disk, 0, 0, c.blobs, c.stripes FROM counted c
             WHERE c.disk NOT IN (SELECT disk FROM disk_usage)
             ORDER BY 1"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(&mut *connection)
            .await
            .map_err(query_error(operation))?;
        for row in &rows {
            problems.push(format!(
                "disk {}: the kept usage says {} blobs and {} stripes, the blobs say {} and {}",
                get::<i64>(row, "disk")?,
                get::<i64>(row, "kept_blobs")?,
                get::<i64>(row, "kept_stripes")?,
                get::<i64>(row, "blobs")?,
                get::<i64>(row, "stripes")?,
            ));
        }
        Ok(())
    }

    /// Migrated objects: blob present, committed, bytes inside it.
    async fn object_problems(
        connection: &mut SqliteConnection,
        problems: &mut Vec<String>,
    ) -> Result<(), CatalogError> {
        let operation = "integrity_check";
        let fetch = |sql: &'static str| sqlx::query(sql);
        let rows = fetch(
            "SELECT o.key, o.blob, o.tier, b.state, o.byte_offset, o.size_bytes,
                    b.size_bytes AS blob_size
             FROM objects o LEFT JOIN blobs b ON b.id = o.blob WHERE o.blob IS NOT NULL",
        )
        .fetch_all(&mut *connection)
        .await
        .map_err(query_error(operation))?;
        for row in &rows {
            let key: String = get(row, "key")?;
            let blob: BlobId = unsigned(get::<i64>(row, "blob")?, "blob")?;
            if get::<String>(row, "tier")? == Tier::Warm.as_str() {
                problems.push(rules::problem_warm_object_migrated(&key, blob));
            }
            let Some(state) = get::<Option<String>>(row, "state")? else {
                problems.push(rules::problem_object_in_missing_blob(&key, blob));
                continue;
            };
            if state != "committed" {
                problems.push(rules::problem_object_in_uncommitted_blob(&key, blob));
            }
            let offset = get::<i64>(row, "byte_offset")? as i128;
            let size = get::<i64>(row, "size_bytes")? as i128;
            let blob_size = get::<i64>(row, "blob_size")?;
            if offset + size > blob_size as i128 {
                let end = (offset + size).max(0) as u128;
                problems.push(rules::problem_object_outside_blob(
                    &key,
                    blob,
                    end,
                    unsigned(blob_size, "blob size")?,
                ));
            }
        }
        Ok(())
    }

    /// Live bytes match the objects, `k + r` disks, columns in range, no disk twice.
    async fn blob_problems(
        connection: &mut SqliteConnection,
        problems: &mut Vec<String>,
    ) -> Result<(), CatalogError> {
        let operation = "integrity_check";
        let fetch = |sql: &'static str| sqlx::query(sql);
        // live_bytes is the sum of the sizes of the objects pointing into the blob (computed
        // per blob through the objects_by_blob index).
        let rows = fetch(
            "SELECT b.id, b.live_bytes,
                    (SELECT COALESCE(SUM(o.size_bytes), 0) FROM objects o WHERE o.blob = b.id) AS actual
             FROM blobs b WHERE b.live_bytes <>
                    (SELECT COALESCE(SUM(o.size_bytes), 0) FROM objects o WHERE o.blob = b.id)",
        )
        .fetch_all(&mut *connection)
        .await
        .map_err(query_error(operation))?;
        for row in &rows {
            problems.push(rules::problem_live_bytes(
                unsigned(get::<i64>(row, "id")?, "blob id")?,
                unsigned(get::<i64>(row, "live_bytes")?, "live_bytes")?,
                unsigned(get::<i64>(row, "actual")?, "actual live bytes")?,
            ));
        }
        // k + r disks per blob, columns in range, no disk twice.
        let rows = fetch(
            "SELECT b.id, b.k + b.r AS columns, COUNT(d.disk) AS disks
             FROM blobs b LEFT JOIN blob_disks d ON d.blob = b.id
             GROUP BY b.id HAVING COUNT(d.disk) <> b.k + b.r",
        )
        .fetch_all(&mut *connection)
        .await
        .map_err(query_error(operation))?;
        for row in &rows {
            problems.push(rules::problem_disk_count(
                unsigned(get::<i64>(row, "id")?, "blob id")?,
                unsigned(get::<i64>(row, "disks")?, "disks")?,
                unsigned(get::<i64>(row, "columns")?, "columns")?,
            ));
        }
        let rows = fetch(
            "SELECT d.blob, d.column_index FROM blob_disks d JOIN blobs b ON b.id = d.blob
             WHERE d.column_index >= b.k + b.r",
        )
        .fetch_all(&mut *connection)
        .await
        .map_err(query_error(operation))?;
        for row in &rows {
            problems.push(rules::problem_column_range(
                unsigned(get::<i64>(row, "blob")?, "blob")?,
                unsigned(get::<i64>(row, "column_index")?, "column_index")?,
            ));
        }
        let rows =
            fetch("SELECT blob, disk FROM blob_disks GROUP BY blob, disk HAVING COUNT(*) > 1")
                .fetch_all(&mut *connection)
                .await
                .map_err(query_error(operation))?;
        for row in &rows {
            problems.push(rules::problem_repeated_disk(
                unsigned(get::<i64>(row, "blob")?, "blob")?,
                unsigned(get::<i64>(row, "disk")?, "disk")?,
            ));
        }
        Ok(())
    }

    /// The blob id counter exists and is above every blob id.
    async fn counter_problems(
        connection: &mut SqliteConnection,
        problems: &mut Vec<String>,
    ) -> Result<(), CatalogError> {
        let operation = "integrity_check";
        let fetch = |sql: &'static str| sqlx::query(sql);
        let row = fetch(
            "SELECT (SELECT value FROM counters WHERE name = 'next_blob_id') AS next,
                    (SELECT MAX(id) FROM blobs) AS max_blob",
        )
        .fetch_one(&mut *connection)
        .await
        .map_err(query_error(operation))?;
        let next: Option<i64> = get(&row, "next")?;
        let max_blob: Option<i64> = get(&row, "max_blob")?;
        match (next, max_blob) {
            (None, _) => problems.push("the next_blob_id counter is missing".to_string()),
            (Some(next), Some(max_blob)) if next <= max_blob => problems.push(
                rules::problem_blob_id_counter(unsigned(next, "next")?, unsigned(max_blob, "id")?),
            ),
            _ => {}
        }
        Ok(())
    }

    /// Rebuild tasks name a committed blob, the disk its column is on, and that disk is failed.
    async fn task_problems(
        &self,
        connection: &mut SqliteConnection,
        problems: &mut Vec<String>,
    ) -> Result<(), CatalogError> {
        let operation = "integrity_check";
        let rows = sqlx::query(
            "SELECT t.blob, t.column_index, t.failed_disk, b.state, d.disk AS current_disk,
                    COALESCE(h.health, 'healthy') AS health
             FROM rebuild_tasks t
             LEFT JOIN blobs b ON b.id = t.blob
             LEFT JOIN blob_disks d ON d.blob = t.blob AND d.column_index = t.column_index
             LEFT JOIN disks h ON h.disk = t.failed_disk
             ORDER BY t.blob, t.column_index",
        )
        .fetch_all(&mut *connection)
        .await
        .map_err(query_error(operation))?;
        for row in &rows {
            let task = RebuildTask {
                blob: unsigned(get::<i64>(row, "blob")?, "blob")?,
                column: unsigned(get::<i64>(row, "column_index")?, "column_index")?,
                failed_disk: unsigned(get::<i64>(row, "failed_disk")?, "failed_disk")?,
            };
            if get::<Option<String>>(row, "state")?.as_deref() != Some("committed") {
                problems.push(rules::problem_task_blob(&task));
                continue;
            }
            let current: Option<DiskIndex> = get::<Option<i64>>(row, "current_disk")?
                .map(|disk| unsigned(disk, "disk"))
                .transpose()?;
            if current != Some(task.failed_disk) {
                problems.push(rules::problem_task_disk(&task, current));
            }
            if get::<String>(row, "health")? != "failed" {
                problems.push(rules::problem_task_healthy_disk(&task));
            }
        }
        Ok(())
    }

    async fn commit_blob_in(
        connection: &mut SqliteConnection,
        id: BlobId,
        moves: Vec<Migration>,
    ) -> Result<u64, CatalogError> {
        let operation = "commit_blob";
        let loaded = load_blob(connection, id).await?;
        let blob = rules::check_blob_state(id, loaded.as_ref(), BlobState::Writing)?;
        let blob_id = rules::stored(id, "blob id")?;
        let mut moved = 0u64;
        for migration in &moves {
            let Some(object) = load_object(connection, &migration.key).await? else {
                continue;
            };
            // A warm object never moves into a blob (see the memory catalog's twin).
            if object.location != migration.from || object.tier == Tier::Warm {
                continue;
            }
            rules::check_move(blob, migration, &object)?;
            release(connection, &object).await?;
            sqlx::query(
                "UPDATE objects SET staged_segment = NULL, blob = ?, byte_offset = ? WHERE key = ?",
            )
            .bind(blob_id)
            .bind(rules::stored(migration.blob_offset, "blob_offset")?)
            .bind(&migration.key)
            .execute(&mut *connection)
            .await
            .map_err(query_error(operation))?;
            moved += 1;
        }
        sqlx::query(
            "UPDATE blobs SET state = 'committed',
                 live_bytes = (SELECT COALESCE(SUM(size_bytes), 0) FROM objects WHERE blob = ?1)
             WHERE id = ?1",
        )
        .bind(blob_id)
        .execute(&mut *connection)
        .await
        .map_err(query_error(operation))?;
        Ok(moved)
    }
}

impl SqliteCatalog {
    /// A page of the objects whose `column` (`blob` or `staged_segment`: fixed names, never
    /// user input) is `place`, in (offset, key) order after `after`: the one query behind
    /// `objects_in_blob` and `staged_in_segment`.
    async fn objects_by_place(
        &self,
        operation: &'static str,
        column: &'static str,
        place: u64,
        after: Option<(u64, &str)>,
        limit: u32,
    ) -> Result<Vec<ObjectRecord>, CatalogError> {
        // Ids, segments and offsets above i64::MAX are never stored: nothing is there.
        let Ok(place) = i64::try_from(place) else {
            return Ok(Vec::new());
        };
        let (after_offset, after_key) = match after {
            None => (None, ""),
            Some((offset, key)) => match i64::try_from(offset) {
                Ok(offset) => (Some(offset), key),
                Err(_) => return Ok(Vec::new()),
            },
        };
        let sql = format!(
            "SELECT {OBJECT_COLUMNS} FROM objects WHERE {column} = ?1
                 AND (?2 IS NULL OR byte_offset > ?2 OR (byte_offset = ?2 AND key > ?3))
             ORDER BY byte_offset, key LIMIT ?4"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(place)
            .bind(after_offset)
            .bind(after_key)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(query_error(operation))?;
        rows.iter().map(decode_object).collect()
    }

    /// A page of blobs by id after `after`: `sql` selects [`BLOB_COLUMNS`] with three
    /// parameters, `key` (a group or a disk), the id after which to start, and the page's size.
    /// The one query shape behind `blobs_in_group`, `blobs_with_dead_bytes` and
    /// `blobs_on_disk`.
    async fn blob_page(
        &self,
        operation: &'static str,
        sql: String,
        key: u32,
        after: Option<BlobId>,
        limit: u32,
    ) -> Result<Vec<BlobRecord>, CatalogError> {
        // Ids are at least 1, so "after 0" is "from the start"; above i64::MAX nothing follows.
        let Ok(after) = i64::try_from(after.unwrap_or(0)) else {
            return Ok(Vec::new());
        };
        let mut transaction = self.read(operation).await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(i64::from(key))
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        let blobs = load_blobs(&mut transaction, rows).await?;
        transaction.commit().await.map_err(query_error(operation))?;
        Ok(blobs)
    }
}

impl Catalog for SqliteCatalog {
    async fn put_object(&self, record: ObjectRecord) -> Result<Option<ObjectRecord>, CatalogError> {
        let operation = "put_object";
        rules::check_object(&record)?;
        let ObjectLocation::Staged { segment, offset } = record.location else {
            unreachable!("check_object admits only staged records");
        };
        let mut transaction = self.write(operation).await?;
        let old = load_object(&mut transaction, &record.key).await?;
        let total: i64 = sqlx::query_scalar("SELECT bytes FROM totals")
            .fetch_one(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        let replaced = old.as_ref().map_or(0, |old| old.size_bytes);
        let total = unsigned::<u64>(total, "total bytes")?;
        rules::check_total_bytes(
            u128::from(total) - u128::from(replaced) + u128::from(record.size_bytes),
        )?;
        if let Some(old) = &old {
            release(&mut transaction, old).await?;
        }
        // An upsert, not INSERT OR REPLACE: a REPLACE's implicit delete fires no trigger, and
        // the kept totals (`totals`) count through the UPDATE trigger.
        let sql = format!(
            "INSERT INTO objects ({OBJECT_COLUMNS}) VALUES (?, ?, ?, ?, ?, NULL, ?, ?)
             ON CONFLICT (key) DO UPDATE SET size_bytes = excluded.size_bytes,
                 content_hash = excluded.content_hash, created_unix_ms = excluded.created_unix_ms,
                 staged_segment = excluded.staged_segment, blob = NULL,
                 byte_offset = excluded.byte_offset, tier = excluded.tier"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&record.key)
            .bind(rules::stored(record.size_bytes, "object size_bytes")?)
            .bind(&record.content_hash[..])
            .bind(record.created_unix_ms)
            .bind(rules::stored(segment, "staging segment")?)
            .bind(rules::stored(offset, "staging offset")?)
            .bind(record.tier.as_str())
            .execute(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        transaction.commit().await.map_err(query_error(operation))?;
        Ok(old)
    }

    async fn object(&self, key: &str) -> Result<Option<ObjectRecord>, CatalogError> {
        let mut connection = self.pool.acquire().await.map_err(query_error("object"))?;
        load_object(&mut connection, key).await
    }

    async fn delete_object(&self, key: &str) -> Result<Option<ObjectRecord>, CatalogError> {
        let operation = "delete_object";
        let mut transaction = self.write(operation).await?;
        let old = load_object(&mut transaction, key).await?;
        if let Some(old) = &old {
            release(&mut transaction, old).await?;
            sqlx::query("DELETE FROM objects WHERE key = ?")
                .bind(key)
                .execute(&mut *transaction)
                .await
                .map_err(query_error(operation))?;
        }
        transaction.commit().await.map_err(query_error(operation))?;
        Ok(old)
    }

    async fn list_objects(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ObjectRecord>, CatalogError> {
        // Lower bound: `after` (exclusive) when it is at or above the prefix, else the prefix.
        let (lower, lower_operator) = match after {
            Some(after) if after >= prefix => (after, ">"),
            _ => (prefix, ">="),
        };
        let upper = prefix_successor(prefix);
        let upper_clause = if upper.is_some() { "AND key < ?" } else { "" };
        let sql = format!(
            "SELECT {OBJECT_COLUMNS} FROM objects WHERE key {lower_operator} ? {upper_clause}
             ORDER BY key LIMIT ?"
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(lower);
        if let Some(upper) = upper {
            query = query.bind(upper);
        }
        let rows = query
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(query_error("list_objects"))?;
        rows.iter().map(decode_object).collect()
    }

    async fn objects_in_blob(
        &self,
        blob: BlobId,
        after: Option<(u64, &str)>,
        limit: u32,
    ) -> Result<Vec<ObjectRecord>, CatalogError> {
        self.objects_by_place("objects_in_blob", "blob", blob, after, limit)
            .await
    }

    async fn staged_objects(
        &self,
        tier: Option<Tier>,
        limit: u32,
    ) -> Result<Vec<ObjectRecord>, CatalogError> {
        let sql = format!(
            "SELECT {OBJECT_COLUMNS} FROM objects WHERE staged_segment IS NOT NULL
                 AND (?1 IS NULL OR tier = ?1)
             ORDER BY staged_segment, byte_offset, key LIMIT ?2"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(tier.map(Tier::as_str))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(query_error("staged_objects"))?;
        rows.iter().map(decode_object).collect()
    }

    async fn warm_objects(&self, limit: u32) -> Result<Vec<ObjectRecord>, CatalogError> {
        let sql = format!(
            "SELECT {OBJECT_COLUMNS} FROM objects WHERE tier = 'warm'
             ORDER BY created_unix_ms, key LIMIT ?"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(query_error("warm_objects"))?;
        rows.iter().map(decode_object).collect()
    }

    async fn demote(&self, key: &str, at: &ObjectLocation) -> Result<bool, CatalogError> {
        let operation = "demote";
        let ObjectLocation::Staged { segment, offset } = *at else {
            // Warm objects are staged: a migrated location names no warm object.
            return Ok(false);
        };
        // A place above i64::MAX holds no object, here as in the memory catalog.
        let Some((segment, offset)) = rules::stored_place((segment, offset)) else {
            return Ok(false);
        };
        let changed = sqlx::query(
            "UPDATE objects SET tier = 'cold'
             WHERE key = ? AND tier = 'warm' AND staged_segment = ? AND byte_offset = ?",
        )
        .bind(key)
        .bind(segment)
        .bind(offset)
        .execute(&self.pool)
        .await
        .map_err(query_error(operation))?;
        Ok(changed.rows_affected() == 1)
    }

    async fn restage(
        &self,
        key: &str,
        from: (SegmentId, u64),
        to: (SegmentId, u64),
    ) -> Result<bool, CatalogError> {
        let operation = "restage";
        let stored = rules::check_restage(from, to)?;
        let (to_segment, to_offset) = stored.to;
        let Some((from_segment, from_offset)) = stored.from else {
            return Ok(false);
        };
        // One statement: the check that the object is still at `from` and the move are atomic,
        // and with `synchronous = FULL` it is durable when it returns.
        let changed = sqlx::query(
            "UPDATE objects SET staged_segment = ?, byte_offset = ?
             WHERE key = ? AND staged_segment = ? AND byte_offset = ?",
        )
        .bind(to_segment)
        .bind(to_offset)
        .bind(key)
        .bind(from_segment)
        .bind(from_offset)
        .execute(&self.pool)
        .await
        .map_err(query_error(operation))?;
        Ok(changed.rows_affected() == 1)
    }

    async fn staged_in_segment(
        &self,
        segment: SegmentId,
        after: Option<(u64, &str)>,
        limit: u32,
    ) -> Result<Vec<ObjectRecord>, CatalogError> {
        self.objects_by_place("staged_in_segment", "staged_segment", segment, after, limit)
            .await
    }

    async fn segment_usage(
        &self,
        after: Option<SegmentId>,
        limit: u32,
    ) -> Result<Vec<SegmentUsage>, CatalogError> {
        let operation = "segment_usage";
        // Segments are stored as i64 from 0: -1 is below every one, and past i64::MAX is none.
        let after = match after.map(i64::try_from) {
            None => -1,
            Some(Ok(after)) => after,
            Some(Err(_)) => return Ok(Vec::new()),
        };
        let rows = sqlx::query(
            "SELECT staged_segment, COUNT(*) AS objects, SUM(size_bytes) AS live_bytes,
                    SUM(tier = 'warm') AS warm_objects
             FROM objects WHERE staged_segment IS NOT NULL AND staged_segment > ?
             GROUP BY staged_segment ORDER BY staged_segment LIMIT ?",
        )
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|error| match &error {
            // SUM of integers fails rather than wrap; the memory catalog refuses the same sum.
            sqlx::Error::Database(database) if database.message() == "integer overflow" => {
                rules::segment_bytes_overflow()
            }
            _ => query_error(operation)(error),
        })?;
        rows.iter()
            .map(|row| {
                let field = |name: &str| -> Result<u64, CatalogError> {
                    unsigned(get::<i64>(row, name)?, name)
                };
                Ok(SegmentUsage {
                    segment: field("staged_segment")?,
                    objects: field("objects")?,
                    live_bytes: field("live_bytes")?,
                    warm_objects: field("warm_objects")?,
                })
            })
            .collect()
    }

    async fn segments_in_use(&self) -> Result<BTreeSet<SegmentId>, CatalogError> {
        let segments: Vec<i64> = sqlx::query_scalar(
            "SELECT DISTINCT staged_segment FROM objects WHERE staged_segment IS NOT NULL",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(query_error("segments_in_use"))?;
        segments
            .into_iter()
            .map(|segment| unsigned(segment, "staged_segment"))
            .collect()
    }

    async fn next_blob_id(&self) -> Result<BlobId, CatalogError> {
        let operation = "next_blob_id";
        let mut transaction = self.write(operation).await?;
        let id = next_blob_id_value(&mut transaction).await?;
        rules::stored(id, "next blob id")?;
        sqlx::query("UPDATE counters SET value = value + 1 WHERE name = 'next_blob_id'")
            .execute(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        transaction.commit().await.map_err(query_error(operation))?;
        Ok(id)
    }

    async fn reserve_blob_ids_through(
        &self,
        highest_used: BlobId,
    ) -> Result<Option<BlobId>, CatalogError> {
        let operation = "reserve_blob_ids_through";
        let floor = rules::blob_id_floor(highest_used)?;
        // Read and raised in one write transaction: a concurrent `next_blob_id` hands out its
        // id either before (and the raise starts above it) or after the raise.
        let mut transaction = self.write(operation).await?;
        let next = next_blob_id_value(&mut transaction).await?;
        if next >= floor {
            return Ok(None);
        }
        sqlx::query("UPDATE counters SET value = ? WHERE name = 'next_blob_id'")
            .bind(rules::stored(floor, "next blob id")?)
            .execute(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        transaction.commit().await.map_err(query_error(operation))?;
        Ok(Some(next))
    }

    async fn begin_blob(&self, record: BlobRecord) -> Result<(), CatalogError> {
        let operation = "begin_blob";
        let mut transaction = self.write(operation).await?;
        let next = next_blob_id_value(&mut transaction).await?;
        let exists = load_blob(&mut transaction, record.id).await?.is_some();
        rules::check_new_blob(&record, next, exists)?;
        let id = rules::stored(record.id, "blob id")?;
        let sql = format!("INSERT INTO blobs ({BLOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .bind(i64::from(record.group))
            .bind(i64::from(record.k))
            .bind(i64::from(record.r))
            .bind(i64::from(record.fragment_bytes))
            .bind(rules::stored(record.size_bytes, "blob size_bytes")?)
            .bind(&record.content_hash[..])
            .bind(state_name(BlobState::Writing))
            .execute(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        for (column, &disk) in record.disks.iter().enumerate() {
            sqlx::query("INSERT INTO blob_disks (blob, column_index, disk) VALUES (?, ?, ?)")
                .bind(id)
                .bind(column as i64)
                .bind(i64::from(disk))
                .execute(&mut *transaction)
                .await
                .map_err(query_error(operation))?;
        }
        transaction.commit().await.map_err(query_error(operation))
    }

    async fn commit_blob(&self, blob: BlobId, moves: Vec<Migration>) -> Result<u64, CatalogError> {
        let operation = "commit_blob";
        let mut transaction = self.write(operation).await?;
        // On error the transaction is dropped, which rolls it back.
        let moved = Self::commit_blob_in(&mut transaction, blob, moves).await?;
        transaction.commit().await.map_err(query_error(operation))?;
        Ok(moved)
    }

    async fn abort_blob(&self, blob: BlobId) -> Result<(), CatalogError> {
        let operation = "abort_blob";
        let mut transaction = self.write(operation).await?;
        let loaded = load_blob(&mut transaction, blob).await?;
        rules::check_blob_state(blob, loaded.as_ref(), BlobState::Writing)?;
        sqlx::query("DELETE FROM blobs WHERE id = ?")
            .bind(rules::stored(blob, "blob id")?)
            .execute(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        transaction.commit().await.map_err(query_error(operation))
    }

    async fn blob(&self, blob: BlobId) -> Result<Option<BlobRecord>, CatalogError> {
        let mut transaction = self.read("blob").await?;
        let loaded = load_blob(&mut transaction, blob).await?;
        transaction.commit().await.map_err(query_error("blob"))?;
        Ok(loaded)
    }

    async fn blobs_in_state(
        &self,
        state: BlobState,
        limit: u32,
    ) -> Result<Vec<BlobRecord>, CatalogError> {
        let operation = "blobs_in_state";
        let mut transaction = self.read(operation).await?;
        let sql = format!("SELECT {BLOB_COLUMNS} FROM blobs WHERE state = ? ORDER BY id LIMIT ?");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(state_name(state))
            .bind(i64::from(limit))
            .fetch_all(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        let blobs = load_blobs(&mut transaction, rows).await?;
        transaction.commit().await.map_err(query_error(operation))?;
        Ok(blobs)
    }

    async fn blobs_in_group(
        &self,
        group: GroupIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> Result<Vec<BlobRecord>, CatalogError> {
        let sql = format!(
            "SELECT {BLOB_COLUMNS} FROM blobs WHERE group_index = ? AND id > ? ORDER BY id LIMIT ?"
        );
        self.blob_page("blobs_in_group", sql, group, after, limit)
            .await
    }

    async fn blobs_with_dead_bytes(
        &self,
        group: GroupIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> Result<Vec<BlobRecord>, CatalogError> {
        // The partial index `blobs_dead` holds exactly these blobs (its WHERE, repeated here so
        // the planner may use it).
        let sql = format!(
            "SELECT {BLOB_COLUMNS} FROM blobs
             WHERE state = 'committed' AND (live_bytes < size_bytes OR live_bytes = 0)
               AND group_index = ? AND id > ? ORDER BY id LIMIT ?"
        );
        self.blob_page("blobs_with_dead_bytes", sql, group, after, limit)
            .await
    }

    async fn blobs_on_disk(
        &self,
        disk: DiskIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> Result<Vec<BlobRecord>, CatalogError> {
        // The (disk, blob) unique index answers this range directly.
        let sql = format!(
            "SELECT {BLOB_COLUMNS} FROM blobs WHERE id IN
                 (SELECT blob FROM blob_disks WHERE disk = ? AND blob > ? ORDER BY blob LIMIT ?)
             ORDER BY id"
        );
        self.blob_page("blobs_on_disk", sql, disk, after, limit)
            .await
    }

    async fn remove_blob(&self, blob: BlobId) -> Result<(), CatalogError> {
        let operation = "remove_blob";
        let mut transaction = self.write(operation).await?;
        let loaded = load_blob(&mut transaction, blob).await?;
        let referencing: i64 = match i64::try_from(blob) {
            Ok(id) => sqlx::query_scalar("SELECT COUNT(*) FROM objects WHERE blob = ?")
                .bind(id)
                .fetch_one(&mut *transaction)
                .await
                .map_err(query_error(operation))?,
            Err(_) => 0,
        };
        rules::check_remove(blob, loaded.as_ref(), unsigned(referencing, "count")?)?;
        // blob_disks and rebuild_tasks rows go with it (ON DELETE CASCADE).
        sqlx::query("DELETE FROM blobs WHERE id = ?")
            .bind(rules::stored(blob, "blob id")?)
            .execute(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        transaction.commit().await.map_err(query_error(operation))
    }

    async fn set_disk_health(
        &self,
        disk: DiskIndex,
        health: DiskHealth,
    ) -> Result<(), CatalogError> {
        sqlx::query(
            "INSERT INTO disks (disk, health) VALUES (?, ?)
             ON CONFLICT (disk) DO UPDATE SET health = excluded.health",
        )
        .bind(i64::from(disk))
        .bind(health_name(health))
        .execute(&self.pool)
        .await
        .map_err(query_error("set_disk_health"))?;
        Ok(())
    }

    async fn unhealthy_disks(&self) -> Result<Vec<DiskRecord>, CatalogError> {
        let rows =
            sqlx::query("SELECT disk, health FROM disks WHERE health <> 'healthy' ORDER BY disk")
                .fetch_all(&self.pool)
                .await
                .map_err(query_error("unhealthy_disks"))?;
        rows.iter()
            .map(|row| {
                let health = match get::<String>(row, "health")?.as_str() {
                    "failed" => DiskHealth::Failed,
                    other => return Err(corrupt("unhealthy_disks", format!("health {other:?}"))),
                };
                Ok(DiskRecord {
                    disk: unsigned(get::<i64>(row, "disk")?, "disk")?,
                    health,
                })
            })
            .collect()
    }

    async fn add_rebuild_tasks(&self, tasks: Vec<RebuildTask>) -> Result<(), CatalogError> {
        let operation = "add_rebuild_tasks";
        let mut transaction = self.write(operation).await?;
        for task in &tasks {
            let blob = load_blob(&mut transaction, task.blob).await?;
            let health = disk_health(&mut transaction, task.failed_disk).await?;
            rules::check_rebuild_task(task, blob.as_ref(), health)?;
            sqlx::query(
                "INSERT INTO rebuild_tasks (blob, column_index, failed_disk) VALUES (?, ?, ?)
                 ON CONFLICT (blob, column_index) DO NOTHING",
            )
            .bind(rules::stored(task.blob, "blob id")?)
            .bind(i64::from(task.column))
            .bind(i64::from(task.failed_disk))
            .execute(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        }
        transaction.commit().await.map_err(query_error(operation))
    }

    async fn rebuild_tasks(&self, limit: u32) -> Result<Vec<RebuildTask>, CatalogError> {
        let rows = sqlx::query(
            "SELECT blob, column_index, failed_disk FROM rebuild_tasks
             ORDER BY blob, column_index LIMIT ?",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(query_error("rebuild_tasks"))?;
        rows.iter()
            .map(|row| {
                Ok(RebuildTask {
                    blob: unsigned(get::<i64>(row, "blob")?, "blob")?,
                    column: unsigned(get::<i64>(row, "column_index")?, "column_index")?,
                    failed_disk: unsigned(get::<i64>(row, "failed_disk")?, "failed_disk")?,
                })
            })
            .collect()
    }

    async fn complete_rebuild(
        &self,
        task: RebuildTask,
        new_disk: DiskIndex,
    ) -> Result<(), CatalogError> {
        let operation = "complete_rebuild";
        let mut transaction = self.write(operation).await?;
        let blob_id = i64::try_from(task.blob).ok();
        let pending: Option<i64> = match blob_id {
            Some(blob_id) => sqlx::query_scalar(
                "SELECT failed_disk FROM rebuild_tasks WHERE blob = ? AND column_index = ?",
            )
            .bind(blob_id)
            .bind(i64::from(task.column))
            .fetch_optional(&mut *transaction)
            .await
            .map_err(query_error(operation))?,
            None => None,
        };
        let pending = pending
            .map(|disk| unsigned(disk, "failed_disk"))
            .transpose()?;
        let blob = load_blob(&mut transaction, task.blob).await?;
        let health = disk_health(&mut transaction, new_disk).await?;
        rules::check_complete_rebuild(&task, pending, blob.as_ref(), new_disk, health)?;
        let blob_id = rules::stored(task.blob, "blob id")?;
        sqlx::query("UPDATE blob_disks SET disk = ? WHERE blob = ? AND column_index = ?")
            .bind(i64::from(new_disk))
            .bind(blob_id)
            .bind(i64::from(task.column))
            .execute(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        sqlx::query("DELETE FROM rebuild_tasks WHERE blob = ? AND column_index = ?")
            .bind(blob_id)
            .bind(i64::from(task.column))
            .execute(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        transaction.commit().await.map_err(query_error(operation))
    }

    async fn stats(&self) -> Result<CatalogStats, CatalogError> {
        let operation = "stats";
        // The kept totals (O(1)); the rebuild tasks are few (a failed disk's blobs) and counted.
        let row = sqlx::query(
            "SELECT objects, bytes, staged_objects, staged_bytes, warm_objects, warm_bytes, blobs,
                    dead_bytes, (SELECT COUNT(*) FROM rebuild_tasks) AS rebuild_pending
             FROM totals",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(query_error(operation))?;
        let field =
            |name: &str| -> Result<u64, CatalogError> { unsigned(get::<i64>(&row, name)?, name) };
        Ok(CatalogStats {
            objects: field("objects")?,
            bytes: field("bytes")?,
            staged_objects: field("staged_objects")?,
            staged_bytes: field("staged_bytes")?,
            warm_objects: field("warm_objects")?,
            warm_bytes: field("warm_bytes")?,
            blobs: field("blobs")?,
            rebuild_pending: field("rebuild_pending")?,
            dead_bytes: field("dead_bytes")?,
        })
    }

    async fn record_scrub(&self, blob: BlobId, verified_unix_ms: i64) -> Result<(), CatalogError> {
        let operation = "record_scrub";
        rules::check_scrub_time(verified_unix_ms)?;
        let mut transaction = self.write(operation).await?;
        let loaded = load_blob(&mut transaction, blob).await?;
        rules::check_blob_state(blob, loaded.as_ref(), BlobState::Committed)?;
        sqlx::query("UPDATE blobs SET verified_unix_ms = ? WHERE id = ?")
            .bind(verified_unix_ms)
            .bind(rules::stored(blob, "blob id")?)
            .execute(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        transaction.commit().await.map_err(query_error(operation))
    }

    async fn scrub_due(
        &self,
        group: GroupIndex,
        before_unix_ms: i64,
        limit: u32,
    ) -> Result<Vec<ScrubEntry>, CatalogError> {
        let operation = "scrub_due";
        let mut transaction = self.read(operation).await?;
        // A range of blobs_by_scrub: in (verified, id) order, never-verified (0) first.
        let sql = format!(
            "SELECT {BLOB_COLUMNS}, verified_unix_ms FROM blobs
             WHERE group_index = ? AND verified_unix_ms < ? AND state = 'committed'
             ORDER BY verified_unix_ms, id LIMIT ?"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(i64::from(group))
            .bind(before_unix_ms)
            .bind(i64::from(limit))
            .fetch_all(&mut *transaction)
            .await
            .map_err(query_error(operation))?;
        let verified: Vec<i64> = rows
            .iter()
            .map(|row| get::<i64>(row, "verified_unix_ms"))
            .collect::<Result<_, _>>()?;
        let blobs = load_blobs(&mut transaction, rows).await?;
        transaction.commit().await.map_err(query_error(operation))?;
        Ok(blobs
            .into_iter()
            .zip(verified)
            .map(|(blob, verified)| ScrubEntry {
                blob,
                verified_unix_ms: (verified > 0).then_some(verified),
            })
            .collect())
    }

    async fn last_scrub_in_group(&self, group: GroupIndex) -> Result<Option<i64>, CatalogError> {
        let latest: Option<i64> =
            sqlx::query_scalar("SELECT MAX(verified_unix_ms) FROM blobs WHERE group_index = ?")
                .bind(i64::from(group))
                .fetch_one(&self.pool)
                .await
                .map_err(query_error("last_scrub_in_group"))?;
        Ok(latest.filter(|&verified| verified > 0))
    }

    async fn disk_usage(&self) -> Result<Vec<DiskUsage>, CatalogError> {
        let operation = "disk_usage";
        let rows = sqlx::query(
            "SELECT disk, blobs, stripes FROM disk_usage WHERE blobs > 0 ORDER BY disk",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(query_error(operation))?;
        rows.iter()
            .map(|row| {
                Ok(DiskUsage {
                    disk: unsigned(get::<i64>(row, "disk")?, "disk")?,
                    blobs: unsigned(get::<i64>(row, "blobs")?, "blobs")?,
                    stripes: unsigned(get::<i64>(row, "stripes")?, "stripes")?,
                })
            })
            .collect()
    }

    async fn integrity_check(&self) -> Result<IntegrityReport, CatalogError> {
        Ok(IntegrityReport {
            problems: self.integrity_problems().await?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{decode_columns, prefix_successor};

    #[test]
    fn decode_columns_orders_the_pairs_by_column_and_refuses_a_gap_or_garbage() {
        assert_eq!(decode_columns(7, "2:30,0:10,1:20").unwrap(), [10, 20, 30]);
        assert_eq!(decode_columns(7, "0:4").unwrap(), [4]);
        let gap = decode_columns(7, "0:10,2:30").unwrap_err().to_string();
        assert!(gap.contains("blob 7 is missing column 1"), "{gap}");
        let twice = decode_columns(7, "0:10,0:11").unwrap_err().to_string();
        assert!(twice.contains("missing column 1"), "{twice}");
        for garbage in ["", "0-10", "x:1", "0:-1", "0:4294967296"] {
            assert!(decode_columns(7, garbage).is_err(), "{garbage:?} decoded");
        }
    }

    #[test]
    fn prefix_successor_increments_the_last_code_point_that_has_a_successor() {
        assert_eq!(prefix_successor("ab").as_deref(), Some("ac"));
        assert_eq!(prefix_successor("a\u{ff}").as_deref(), Some("a\u{100}"));
        assert_eq!(prefix_successor("a\u{d7ff}").as_deref(), Some("a\u{e000}"));
        assert_eq!(prefix_successor("a\u{10ffff}").as_deref(), Some("b"));
        assert_eq!(prefix_successor("\u{10ffff}\u{10ffff}"), None);
        assert_eq!(prefix_successor(""), None);
    }
}
