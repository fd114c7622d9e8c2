//! The multipart tables of the S3 metadata database (migration step [`SCHEMA_STEP`]): one row
//! per open upload and one per uploaded part. docs/s3.md ("Multipart upload") has the layout.
//!
//! Invariants:
//! - a part row names the one file holding its bytes, `<part number>-<generation>` in the
//!   upload's directory; the file is written and fsynced before its row, and replacing a part
//!   swaps the row to a new generation in one statement, so a row never names a file with other
//!   bytes (files no row names are swept);
//! - an upload's rows (upload and parts) are removed together in one transaction.

use crate::headers::ObjectHeaders;
use crate::meta::{MetaDb, MetaError};
use sqlx::Row;
use std::collections::BTreeMap;

/// The migration step adding the multipart tables (appended to `meta::MIGRATIONS`).
pub const SCHEMA_STEP: &str = r#"
CREATE TABLE multipart_uploads (
    upload_id TEXT PRIMARY KEY NOT NULL,
    bucket TEXT NOT NULL,
    object_key TEXT NOT NULL,
    content_type TEXT,
    user_metadata TEXT NOT NULL,
    started_unix_ms INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX multipart_uploads_by_key ON multipart_uploads (bucket, object_key, upload_id);
CREATE TABLE multipart_parts (
    upload_id TEXT NOT NULL,
    part_number INTEGER NOT NULL CHECK (part_number BETWEEN 1 AND 10000),
    generation INTEGER NOT NULL,
    size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
    etag TEXT NOT NULL,
    content_hash BLOB NOT NULL CHECK (length(content_hash) = 32),
    written_unix_ms INTEGER NOT NULL,
    PRIMARY KEY (upload_id, part_number)
) STRICT, WITHOUT ROWID;
"#;

/// An open multipart upload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadRow {
    /// 32 lower-case hex digits (128 random bits).
    pub upload_id: String,
    pub bucket: String,
    /// The object key inside the bucket.
    pub object_key: String,
    pub content_type: Option<String>,
    pub user_metadata: BTreeMap<String, String>,
    /// The standard headers the completed object gets (column `headers`, migration
    /// `meta::SCHEMA_OBJECT_HEADERS`).
    pub headers: ObjectHeaders,
    pub started_unix_ms: i64,
}

/// One uploaded part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartRow {
    pub part_number: u32,
    /// Names the part's file, `<part number>-<generation>`.
    pub generation: u64,
    pub size_bytes: u64,
    /// Hex MD5 of the part, without quotes.
    pub etag: String,
    /// BLAKE3 of the part.
    pub content_hash: [u8; 32],
    pub written_unix_ms: i64,
}

fn corrupt(key: &str, message: impl ToString) -> MetaError {
    MetaError::Corrupt {
        key: key.to_string(),
        message: message.to_string(),
    }
}

fn upload_from(row: &sqlx::sqlite::SqliteRow) -> Result<UploadRow, MetaError> {
    let upload_id: String = row.get(0);
    let user_metadata: String = row.get(4);
    let headers: String = row.get(6);
    Ok(UploadRow {
        user_metadata: serde_json::from_str(&user_metadata)
            .map_err(|error| corrupt(&upload_id, error))?,
        headers: ObjectHeaders::from_json(&headers).map_err(|error| corrupt(&upload_id, error))?,
        upload_id,
        bucket: row.get(1),
        object_key: row.get(2),
        content_type: row.get(3),
        started_unix_ms: row.get(5),
    })
}

fn part_from(upload_id: &str, row: &sqlx::sqlite::SqliteRow) -> Result<PartRow, MetaError> {
    let part_number: i64 = row.get(0);
    let generation: i64 = row.get(1);
    let size_bytes: i64 = row.get(2);
    let hash: Vec<u8> = row.get(4);
    Ok(PartRow {
        part_number: u32::try_from(part_number).map_err(|e| corrupt(upload_id, e))?,
        generation: generation as u64,
        size_bytes: u64::try_from(size_bytes).map_err(|e| corrupt(upload_id, e))?,
        etag: row.get(3),
        content_hash: <[u8; 32]>::try_from(hash.as_slice())
            .map_err(|_| corrupt(upload_id, "content hash is not 32 bytes"))?,
        written_unix_ms: row.get(5),
    })
}

/// Column lists as macros, so queries stay `&'static str` (sqlx takes no built strings).
macro_rules! upload_columns {
    () => {
        "upload_id, bucket, object_key, content_type, user_metadata, started_unix_ms, headers"
    };
}
macro_rules! part_columns {
    () => {
        "part_number, generation, size_bytes, etag, content_hash, written_unix_ms"
    };
}

impl MetaDb {
    /// Records a new upload unless `max_open` uploads are open already; false when full.
    pub async fn insert_upload(
        &self,
        upload: &UploadRow,
        max_open: u64,
    ) -> Result<bool, MetaError> {
        let user_metadata =
            serde_json::to_string(&upload.user_metadata).expect("a string map serializes");
        let done = sqlx::query(concat!(
            "INSERT INTO multipart_uploads (",
            upload_columns!(),
            ") SELECT ?, ?, ?, ?, ?, ?, ? \
             WHERE (SELECT count(*) FROM multipart_uploads) < ?"
        ))
        .bind(&upload.upload_id)
        .bind(&upload.bucket)
        .bind(&upload.object_key)
        .bind(&upload.content_type)
        .bind(user_metadata)
        .bind(upload.started_unix_ms)
        .bind(upload.headers.to_json())
        .bind(i64::try_from(max_open).unwrap_or(i64::MAX))
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn upload(&self, upload_id: &str) -> Result<Option<UploadRow>, MetaError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            upload_columns!(),
            " FROM multipart_uploads WHERE upload_id = ?"
        ))
        .bind(upload_id)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(upload_from).transpose()
    }

    /// The open uploads of `bucket` whose key starts with `prefix`, by key then upload id.
    pub async fn uploads(&self, bucket: &str, prefix: &str) -> Result<Vec<UploadRow>, MetaError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            upload_columns!(),
            " FROM multipart_uploads \
             WHERE bucket = ? AND substr(object_key, 1, length(?)) = ? \
             ORDER BY object_key, upload_id"
        ))
        .bind(bucket)
        .bind(prefix)
        .bind(prefix)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(upload_from).collect()
    }

    /// Every open upload's id (the start-up sweep).
    pub async fn upload_ids(&self) -> Result<Vec<String>, MetaError> {
        Ok(
            sqlx::query_scalar("SELECT upload_id FROM multipart_uploads ORDER BY upload_id")
                .fetch_all(self.pool())
                .await?,
        )
    }

    /// Up to `limit` open uploads started before `cutoff_unix_ms`, oldest first (the expiry
    /// sweep; at most `max_open_uploads` rows, so no index on the start time).
    pub async fn uploads_started_before(
        &self,
        cutoff_unix_ms: i64,
        limit: u32,
    ) -> Result<Vec<UploadRow>, MetaError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            upload_columns!(),
            " FROM multipart_uploads WHERE started_unix_ms < ? \
             ORDER BY started_unix_ms, upload_id LIMIT ?"
        ))
        .bind(cutoff_unix_ms)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(upload_from).collect()
    }

    /// Up to `limit` of `bucket`'s uploads whose key starts with `prefix`, started before
    /// `cutoff_unix_ms`, oldest first (a lifecycle rule's AbortIncompleteMultipartUpload).
    pub async fn bucket_uploads_started_before(
        &self,
        bucket: &str,
        prefix: &str,
        cutoff_unix_ms: i64,
        limit: u32,
    ) -> Result<Vec<UploadRow>, MetaError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            upload_columns!(),
            " FROM multipart_uploads WHERE bucket = ? AND started_unix_ms < ? \
             AND substr(object_key, 1, length(?)) = ? \
             ORDER BY started_unix_ms, upload_id LIMIT ?"
        ))
        .bind(bucket)
        .bind(cutoff_unix_ms)
        .bind(prefix)
        .bind(prefix)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(upload_from).collect()
    }

    /// Whether `bucket` has open uploads (DeleteBucket refuses then).
    pub async fn bucket_has_uploads(&self, bucket: &str) -> Result<bool, MetaError> {
        let found: Option<i64> =
            sqlx::query_scalar("SELECT 1 FROM multipart_uploads WHERE bucket = ? LIMIT 1")
                .bind(bucket)
                .fetch_optional(self.pool())
                .await?;
        Ok(found.is_some())
    }

    /// Records `part` for `upload_id`, replacing the row of the same part number in the same
    /// statement; returns the generation it replaced (whose file is now garbage).
    pub async fn put_part(
        &self,
        upload_id: &str,
        part: &PartRow,
    ) -> Result<Option<u64>, MetaError> {
        let size_bytes = i64::try_from(part.size_bytes).map_err(|e| corrupt(upload_id, e))?;
        let mut transaction = self.pool().begin_with("BEGIN IMMEDIATE").await?;
        let replaced: Option<i64> = sqlx::query_scalar(
            "SELECT generation FROM multipart_parts WHERE upload_id = ? AND part_number = ?",
        )
        .bind(upload_id)
        .bind(i64::from(part.part_number))
        .fetch_optional(&mut *transaction)
        .await?;
        sqlx::query(concat!(
            "INSERT OR REPLACE INTO multipart_parts (upload_id, ",
            part_columns!(),
            ") \
             VALUES (?, ?, ?, ?, ?, ?, ?)"
        ))
        .bind(upload_id)
        .bind(i64::from(part.part_number))
        .bind(part.generation as i64)
        .bind(size_bytes)
        .bind(&part.etag)
        .bind(&part.content_hash[..])
        .bind(part.written_unix_ms)
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(replaced.map(|generation| generation as u64))
    }

    /// Up to `limit` parts of `upload_id` numbered above `after`, by part number.
    pub async fn parts(
        &self,
        upload_id: &str,
        after: u32,
        limit: u32,
    ) -> Result<Vec<PartRow>, MetaError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            part_columns!(),
            " FROM multipart_parts \
             WHERE upload_id = ? AND part_number > ? ORDER BY part_number LIMIT ?"
        ))
        .bind(upload_id)
        .bind(i64::from(after))
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(|row| part_from(upload_id, row)).collect()
    }

    /// Removes one part row (the sweep, when its file is gone).
    pub async fn delete_part(&self, upload_id: &str, part_number: u32) -> Result<(), MetaError> {
        sqlx::query("DELETE FROM multipart_parts WHERE upload_id = ? AND part_number = ?")
            .bind(upload_id)
            .bind(i64::from(part_number))
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Removes an upload and its parts; false if it was not open.
    pub async fn delete_upload(&self, upload_id: &str) -> Result<bool, MetaError> {
        let mut transaction = self.pool().begin_with("BEGIN IMMEDIATE").await?;
        sqlx::query("DELETE FROM multipart_parts WHERE upload_id = ?")
            .bind(upload_id)
            .execute(&mut *transaction)
            .await?;
        let done = sqlx::query("DELETE FROM multipart_uploads WHERE upload_id = ?")
            .bind(upload_id)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    /// Removes part rows whose upload is gone; returns how many.
    pub async fn delete_orphan_parts(&self) -> Result<u64, MetaError> {
        let done = sqlx::query(
            "DELETE FROM multipart_parts \
             WHERE upload_id NOT IN (SELECT upload_id FROM multipart_uploads)",
        )
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }
}
