//! [`MetaDb`]: the S3 layer's own SQLite database (`DATA/s3.sqlite`, WAL, `synchronous = FULL`),
//! holding what the store does not know: buckets (and whether each is public-read), and each
//! object's S3 metadata (ETag, Content-Type, standard headers, user metadata). The byte/row
//! layout is documented in docs/s3.md.
//!
//! Invariants:
//! - the store's catalog decides whether an object exists; a metadata row only describes an
//!   object whose store record has the same key *and* content hash (BLAKE3), so a row left by a
//!   PUT that never committed (crash, refused body) describes nothing and is harmless;
//! - a PUT writes its row (fsynced) before the store commits the object, so a committed object
//!   always has its row (see [`crate::body`]);
//! - rows that describe nothing are removed after the next PUT or DELETE of their key and at
//!   start-up ([`MetaDb::orphans`]).

use crate::access::BucketAcl;
use crate::headers::ObjectHeaders;
use sqlx::Row;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

/// The metadata database's file in the data directory.
pub const META_FILE: &str = "s3.sqlite";
const MAX_CONNECTIONS: u32 = 4;
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The schema, one step per version: step `i` brings a database at version `i` to `i + 1`. A new
/// version appends a step; a released step never changes, so every older database upgrades.
const MIGRATIONS: &[&str] = &[
    SCHEMA_V1,
    crate::multipart::rows::SCHEMA_STEP,
    SCHEMA_RESTORE,
    SCHEMA_PUBLIC_READ,
    SCHEMA_RESTORE_TIER,
    SCHEMA_OBJECT_HEADERS,
    crate::lifecycle::SCHEMA_STEP,
];

const SCHEMA_V1: &str = r#"
CREATE TABLE schema_version (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    version INTEGER NOT NULL
) STRICT;
CREATE TABLE buckets (
    name TEXT PRIMARY KEY NOT NULL,
    created_unix_ms INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TABLE object_meta (
    store_key TEXT NOT NULL,
    content_hash BLOB NOT NULL CHECK (length(content_hash) = 32),
    size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
    etag TEXT NOT NULL,
    content_type TEXT,
    user_metadata TEXT NOT NULL,
    written_unix_ms INTEGER NOT NULL,
    PRIMARY KEY (store_key, content_hash)
) STRICT, WITHOUT ROWID;
"#;

/// Restores (see [`crate::restore`]): each bucket's restore mode and tags, and one row per
/// restored copy. Buckets that predate this step get mode `sync`, the behaviour they had.
const SCHEMA_RESTORE: &str = r#"
CREATE TABLE bucket_config (
    bucket TEXT PRIMARY KEY NOT NULL,
    restore_mode TEXT NOT NULL CHECK (restore_mode IN ('sync', 'async')),
    tags TEXT NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO bucket_config (bucket, restore_mode, tags) SELECT name, 'sync', '[]' FROM buckets;
CREATE TABLE restores (
    store_key TEXT PRIMARY KEY NOT NULL,
    content_hash BLOB NOT NULL CHECK (length(content_hash) = 32),
    file_name TEXT NOT NULL UNIQUE,
    size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
    days INTEGER NOT NULL CHECK (days >= 1),
    state TEXT NOT NULL CHECK (state IN ('ongoing', 'done', 'failed')),
    error TEXT,
    requested_unix_ms INTEGER NOT NULL,
    completed_unix_ms INTEGER,
    expiry_unix_ms INTEGER
) STRICT, WITHOUT ROWID;
"#;

/// Public-read buckets (see [`crate::access`]): 1 when anonymous clients may read the bucket.
/// Buckets that predate this step stay private (0), the only access they had.
const SCHEMA_PUBLIC_READ: &str = r#"
ALTER TABLE buckets ADD COLUMN public_read INTEGER NOT NULL DEFAULT 0 CHECK (public_read IN (0, 1));
"#;

/// Restore tiers (see [`crate::tier`]): the Tier each restore was asked with. Restores that
/// predate this step were all queued at once: `Standard`.
const SCHEMA_RESTORE_TIER: &str = r#"
ALTER TABLE restores ADD COLUMN tier TEXT NOT NULL DEFAULT 'Standard'
    CHECK (tier IN ('Expedited', 'Standard', 'Bulk'));
"#;

/// Standard object headers (see [`crate::headers`]): Cache-Control, Content-Disposition,
/// Content-Encoding, Content-Language and Expires as a JSON object, kept with each object and each
/// open multipart upload. Rows that predate this step were written without them: `{}`.
const SCHEMA_OBJECT_HEADERS: &str = r#"
ALTER TABLE object_meta ADD COLUMN headers TEXT NOT NULL DEFAULT '{}';
ALTER TABLE multipart_uploads ADD COLUMN headers TEXT NOT NULL DEFAULT '{}';
"#;

#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("the S3 metadata database {path}: {message}")]
    Open { path: String, message: String },
    #[error("the S3 metadata database: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("the S3 metadata database holds a bad row for `{key}`: {message}")]
    Corrupt { key: String, message: String },
    #[error("the S3 restores: {0}")]
    Restore(#[from] crate::restore::RestoreError),
}

/// One object's S3 metadata, valid for the store object with this key and content hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectMeta {
    pub store_key: String,
    pub content_hash: [u8; 32],
    pub size_bytes: u64,
    /// The ETag without quotes (hex MD5 of the body for a single PUT).
    pub etag: String,
    pub content_type: Option<String>,
    /// `x-amz-meta-*` headers, names lower-case without the prefix.
    pub user_metadata: BTreeMap<String, String>,
    /// Cache-Control, Content-Disposition, Content-Encoding, Content-Language, Expires.
    pub headers: ObjectHeaders,
    pub written_unix_ms: i64,
}

/// A bucket and when it was created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketRow {
    pub name: String,
    pub created_unix_ms: i64,
}

#[derive(Clone, Debug)]
pub struct MetaDb {
    pool: SqlitePool,
}

impl MetaDb {
    /// Opens (creating if missing) the database at `path`.
    pub async fn open(path: &Path) -> Result<MetaDb, MetaError> {
        let open_error = |message: String| MetaError::Open {
            path: path.display().to_string(),
            message,
        };
        let options = SqliteConnectOptions::from_str("sqlite:")
            .map_err(|error| open_error(error.to_string()))?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .connect_with(options)
            .await
            .map_err(|error| open_error(error.to_string()))?;
        let db = MetaDb { pool };
        if let Err(error) = db.migrate().await {
            db.pool.close().await;
            return Err(open_error(error.to_string()));
        }
        Ok(db)
    }

    async fn migrate(&self) -> Result<(), MetaError> {
        let mut transaction = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )
        .fetch_all(&mut *transaction)
        .await?;
        let version: i64 = if tables.is_empty() {
            0
        } else {
            sqlx::query_scalar("SELECT version FROM schema_version")
                .fetch_one(&mut *transaction)
                .await?
        };
        let newest = MIGRATIONS.len() as i64;
        if !(0..=newest).contains(&version) {
            return Err(MetaError::Corrupt {
                key: "schema_version".into(),
                message: format!("version {version}, this build reads up to {newest}"),
            });
        }
        for &step in &MIGRATIONS[version as usize..] {
            sqlx::raw_sql(step).execute(&mut *transaction).await?;
        }
        sqlx::query(
            "INSERT INTO schema_version (singleton, version) VALUES (1, ?) \
             ON CONFLICT (singleton) DO UPDATE SET version = excluded.version",
        )
        .bind(newest)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    /// Creates `name`, private; false if it already exists.
    pub async fn create_bucket(&self, name: &str, now_unix_ms: i64) -> Result<bool, MetaError> {
        self.create_bucket_with_acl(name, now_unix_ms, BucketAcl::Private)
            .await
    }

    /// Creates `name` with `acl` in one insert, so a bucket is never visible with another ACL
    /// than the one it was created with; false if it already exists (its ACL is left as it is).
    pub async fn create_bucket_with_acl(
        &self,
        name: &str,
        now_unix_ms: i64,
        acl: BucketAcl,
    ) -> Result<bool, MetaError> {
        let done = sqlx::query(
            "INSERT INTO buckets (name, created_unix_ms, public_read) VALUES (?, ?, ?) \
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(now_unix_ms)
        .bind(acl.is_public_read())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// `name`'s ACL; `None` when there is no such bucket.
    pub async fn bucket_acl(&self, name: &str) -> Result<Option<BucketAcl>, MetaError> {
        let public_read: Option<bool> =
            sqlx::query_scalar("SELECT public_read FROM buckets WHERE name = ?")
                .bind(name)
                .fetch_optional(&self.pool)
                .await?;
        Ok(public_read.map(BucketAcl::from_public_read))
    }

    /// Sets `name`'s ACL (durable on return); false when there is no such bucket.
    pub async fn set_bucket_acl(&self, name: &str, acl: BucketAcl) -> Result<bool, MetaError> {
        let done = sqlx::query("UPDATE buckets SET public_read = ? WHERE name = ?")
            .bind(acl.is_public_read())
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn bucket(&self, name: &str) -> Result<Option<BucketRow>, MetaError> {
        let row = sqlx::query("SELECT name, created_unix_ms FROM buckets WHERE name = ?")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|row| BucketRow {
            name: row.get(0),
            created_unix_ms: row.get(1),
        }))
    }

    /// Every bucket, by name.
    pub async fn buckets(&self) -> Result<Vec<BucketRow>, MetaError> {
        let rows = sqlx::query("SELECT name, created_unix_ms FROM buckets ORDER BY name")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .into_iter()
            .map(|row| BucketRow {
                name: row.get(0),
                created_unix_ms: row.get(1),
            })
            .collect())
    }

    /// Removes `name`; false if it did not exist.
    pub async fn delete_bucket(&self, name: &str) -> Result<bool, MetaError> {
        let done = sqlx::query("DELETE FROM buckets WHERE name = ?")
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Writes (or replaces) the row for `meta`'s key and content hash; durable on return.
    pub async fn put_object_meta(&self, meta: &ObjectMeta) -> Result<(), MetaError> {
        let user_metadata =
            serde_json::to_string(&meta.user_metadata).expect("a string map serializes");
        let size_bytes = i64::try_from(meta.size_bytes).map_err(|_| MetaError::Corrupt {
            key: meta.store_key.clone(),
            message: format!("size {} is too large", meta.size_bytes),
        })?;
        sqlx::query(
            "INSERT OR REPLACE INTO object_meta \
             (store_key, content_hash, size_bytes, etag, content_type, user_metadata, \
              written_unix_ms, headers) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&meta.store_key)
        .bind(&meta.content_hash[..])
        .bind(size_bytes)
        .bind(&meta.etag)
        .bind(&meta.content_type)
        .bind(user_metadata)
        .bind(meta.written_unix_ms)
        .bind(meta.headers.to_json())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The row describing the store object `store_key` whose content hash is `content_hash`.
    pub async fn object_meta(
        &self,
        store_key: &str,
        content_hash: &[u8; 32],
    ) -> Result<Option<ObjectMeta>, MetaError> {
        let row = sqlx::query(
            "SELECT size_bytes, etag, content_type, user_metadata, written_unix_ms, headers \
             FROM object_meta WHERE store_key = ? AND content_hash = ?",
        )
        .bind(store_key)
        .bind(&content_hash[..])
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let corrupt = |message: String| MetaError::Corrupt {
            key: store_key.to_string(),
            message,
        };
        let size_bytes: i64 = row.get(0);
        let user_metadata: String = row.get(3);
        let headers: String = row.get(5);
        Ok(Some(ObjectMeta {
            store_key: store_key.to_string(),
            content_hash: *content_hash,
            size_bytes: u64::try_from(size_bytes).map_err(|e| corrupt(e.to_string()))?,
            etag: row.get(1),
            content_type: row.get(2),
            user_metadata: serde_json::from_str(&user_metadata)
                .map_err(|e| corrupt(e.to_string()))?,
            headers: ObjectHeaders::from_json(&headers).map_err(corrupt)?,
            written_unix_ms: row.get(4),
        }))
    }

    /// Removes the rows of `store_key` except the one for `keep` (all of them for `None`).
    pub async fn delete_object_meta_except(
        &self,
        store_key: &str,
        keep: Option<&[u8; 32]>,
    ) -> Result<u64, MetaError> {
        let done = match keep {
            Some(hash) => {
                sqlx::query("DELETE FROM object_meta WHERE store_key = ? AND content_hash <> ?")
                    .bind(store_key)
                    .bind(&hash[..])
                    .execute(&self.pool)
                    .await?
            }
            None => {
                sqlx::query("DELETE FROM object_meta WHERE store_key = ?")
                    .bind(store_key)
                    .execute(&self.pool)
                    .await?
            }
        };
        Ok(done.rows_affected())
    }

    /// Up to `limit` (store key, content hash) pairs after `after`, in key order: the start-up
    /// sweep pages through them and drops the ones the store does not hold.
    pub async fn object_meta_page(
        &self,
        after: Option<(&str, &[u8; 32])>,
        limit: u32,
    ) -> Result<Vec<(String, [u8; 32])>, MetaError> {
        let (key, hash): (&str, &[u8]) = match after {
            Some((key, hash)) => (key, &hash[..]),
            None => ("", &[]),
        };
        let rows = sqlx::query(
            "SELECT store_key, content_hash FROM object_meta \
             WHERE (store_key, content_hash) > (?, ?) ORDER BY store_key, content_hash LIMIT ?",
        )
        .bind(key)
        .bind(hash)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|row| {
                let key: String = row.get(0);
                let hash: Vec<u8> = row.get(1);
                let hash =
                    <[u8; 32]>::try_from(hash.as_slice()).map_err(|_| MetaError::Corrupt {
                        key: key.clone(),
                        message: "content hash is not 32 bytes".into(),
                    })?;
                Ok((key, hash))
            })
            .collect()
    }

    /// Removes one (key, hash) row.
    pub async fn delete_one(&self, store_key: &str, hash: &[u8; 32]) -> Result<(), MetaError> {
        sqlx::query("DELETE FROM object_meta WHERE store_key = ? AND content_hash = ?")
            .bind(store_key)
            .bind(&hash[..])
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The connection pool, for the tables other modules own (multipart uploads, restores).
    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Closes the connections (checkpointing the WAL).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database as a build of schema `version` left it, after `then` ran on it.
    async fn old_database(path: &Path, version: usize, then: &'static str) {
        let options = SqliteConnectOptions::from_str("sqlite:")
            .unwrap()
            .filename(path)
            .create_if_missing(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .unwrap();
        for &step in &MIGRATIONS[..version] {
            sqlx::raw_sql(step).execute(&pool).await.unwrap();
        }
        sqlx::query("INSERT INTO schema_version (singleton, version) VALUES (1, ?)")
            .bind(version as i64)
            .execute(&pool)
            .await
            .unwrap();
        sqlx::raw_sql(then).execute(&pool).await.unwrap();
        pool.close().await;
    }

    /// A database as a build before public-read buckets left it (schema version 3, one bucket).
    async fn version_3_database(path: &Path) {
        let bucket = "INSERT INTO buckets (name, created_unix_ms) VALUES ('old', 1);";
        old_database(path, 3, bucket).await;
    }

    #[tokio::test]
    async fn objects_and_uploads_from_before_object_headers_open_with_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(META_FILE);
        let rows = "INSERT INTO object_meta (store_key, content_hash, size_bytes, etag, \
                    content_type, user_metadata, written_unix_ms) \
                    VALUES ('b/k', zeroblob(32), 1, 'e', 'text/plain', '{}', 5); \
                    INSERT INTO multipart_uploads (upload_id, bucket, object_key, content_type, \
                    user_metadata, started_unix_ms) VALUES ('u', 'b', 'k', NULL, '{}', 5);";
        old_database(&path, 5, rows).await;
        let db = MetaDb::open(&path).await.unwrap();
        let meta = db.object_meta("b/k", &[0; 32]).await.unwrap().unwrap();
        assert_eq!(meta.content_type.as_deref(), Some("text/plain"));
        assert_eq!(meta.headers, ObjectHeaders::default());
        let upload = db.upload("u").await.unwrap().unwrap();
        assert_eq!(upload.headers, ObjectHeaders::default());
        db.close().await;
    }

    #[tokio::test]
    async fn an_object_row_keeps_its_headers_and_a_corrupt_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = MetaDb::open(&dir.path().join(META_FILE)).await.unwrap();
        let mut row = ObjectMeta {
            store_key: "b/k".into(),
            content_hash: [7; 32],
            size_bytes: 3,
            etag: "e".into(),
            content_type: None,
            user_metadata: BTreeMap::new(),
            headers: ObjectHeaders {
                content_disposition: Some("attachment; filename=\"k.txt\"".into()),
                content_encoding: Some("gzip".into()),
                ..ObjectHeaders::default()
            },
            written_unix_ms: 9,
        };
        db.put_object_meta(&row).await.unwrap();
        assert_eq!(
            db.object_meta("b/k", &[7; 32]).await.unwrap(),
            Some(row.clone())
        );
        sqlx::query("UPDATE object_meta SET headers = '{\"expires\":\"never\"}'")
            .execute(db.pool())
            .await
            .unwrap();
        let error = db.object_meta("b/k", &[7; 32]).await.unwrap_err();
        assert!(matches!(error, MetaError::Corrupt { .. }), "{error}");
        row.headers = ObjectHeaders::default();
        db.put_object_meta(&row).await.unwrap();
        assert_eq!(db.object_meta("b/k", &[7; 32]).await.unwrap(), Some(row));
        db.close().await;
    }

    #[tokio::test]
    async fn restores_from_before_tiers_open_as_standard_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(META_FILE);
        let restore = "INSERT INTO restores (store_key, content_hash, file_name, size_bytes, \
                       days, state, requested_unix_ms) \
                       VALUES ('b/k', zeroblob(32), 'f', 1, 1, 'ongoing', 5);";
        old_database(&path, 4, restore).await;
        let db = MetaDb::open(&path).await.unwrap();
        let tier: String = sqlx::query_scalar("SELECT tier FROM restores")
            .fetch_one(db.pool())
            .await
            .unwrap();
        assert_eq!(tier, "Standard");
        db.close().await;
    }

    #[tokio::test]
    async fn a_database_from_before_public_read_opens_with_its_buckets_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(META_FILE);
        version_3_database(&path).await;
        let db = MetaDb::open(&path).await.unwrap();
        assert_eq!(
            db.bucket_acl("old").await.unwrap(),
            Some(BucketAcl::Private)
        );
        assert!(
            db.set_bucket_acl("old", BucketAcl::PublicRead)
                .await
                .unwrap()
        );
        assert_eq!(
            db.bucket_acl("old").await.unwrap(),
            Some(BucketAcl::PublicRead)
        );
        assert_eq!(db.bucket_acl("missing").await.unwrap(), None);
        assert!(
            !db.set_bucket_acl("missing", BucketAcl::PublicRead)
                .await
                .unwrap()
        );
        db.close().await;
        // Reopening applies nothing twice and keeps the flag.
        let db = MetaDb::open(&path).await.unwrap();
        assert_eq!(
            db.bucket_acl("old").await.unwrap(),
            Some(BucketAcl::PublicRead)
        );
        db.close().await;
    }

    #[tokio::test]
    async fn a_bucket_is_created_with_its_acl_and_an_existing_one_keeps_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let db = MetaDb::open(&dir.path().join(META_FILE)).await.unwrap();
        assert!(
            db.create_bucket_with_acl("pub", 1, BucketAcl::PublicRead)
                .await
                .unwrap()
        );
        assert!(db.create_bucket("priv", 1).await.unwrap());
        assert!(
            !db.create_bucket_with_acl("priv", 2, BucketAcl::PublicRead)
                .await
                .unwrap()
        );
        assert_eq!(
            db.bucket_acl("pub").await.unwrap(),
            Some(BucketAcl::PublicRead)
        );
        assert_eq!(
            db.bucket_acl("priv").await.unwrap(),
            Some(BucketAcl::Private)
        );
        db.close().await;
    }
}
