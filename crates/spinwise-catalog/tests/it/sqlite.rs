//! SqliteCatalog-only specifications: durability across reopen and across a crash-time copy of
//! the files, the schema version check, concurrent writers, and the integrity check finding
//! rows corrupted behind the catalog's back (raw SQL on the database file).

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{runtime, staged, writing_blob};
use spinwise_catalog::{
    Absence, BlobState, Catalog, CatalogError, CatalogStats, DiskHealth, DiskRecord, MemoryCatalog,
    Migration, ObjectLocation, ObjectRecord, RebuildTask, SqliteCatalog,
};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{Connection, Executor};

/// Everything a catalog answers, for comparing two catalogs (or one before and after reopen).
#[derive(Debug, PartialEq)]
struct Snapshot {
    objects: Vec<ObjectRecord>,
    staged: Vec<ObjectRecord>,
    segments: Vec<u64>,
    writing: Vec<spinwise_catalog::BlobRecord>,
    committed: Vec<spinwise_catalog::BlobRecord>,
    unhealthy: Vec<DiskRecord>,
    tasks: Vec<RebuildTask>,
    stats: CatalogStats,
}

async fn snapshot<C: Catalog>(catalog: &C) -> Snapshot {
    Snapshot {
        objects: catalog.list_objects("", None, 10_000).await.unwrap(),
        staged: catalog.staged_objects(None, 10_000).await.unwrap(),
        segments: catalog
            .segments_in_use()
            .await
            .unwrap()
            .into_iter()
            .collect(),
        writing: catalog
            .blobs_in_state(BlobState::Writing, 10_000)
            .await
            .unwrap(),
        committed: catalog
            .blobs_in_state(BlobState::Committed, 10_000)
            .await
            .unwrap(),
        unhealthy: catalog.unhealthy_disks().await.unwrap(),
        tasks: catalog.rebuild_tasks(10_000).await.unwrap(),
        stats: catalog.stats().await.unwrap(),
    }
}

/// Objects staged and migrated, a writing and a committed blob, a failed disk with a task.
async fn populate<C: Catalog>(catalog: &C) {
    for (index, key) in ["a", "b", "c", "d/\u{10ffff}"].iter().enumerate() {
        catalog
            .put_object(staged(key, 4, 1 + index as u64 / 2, 4 * index as u64))
            .await
            .unwrap();
    }
    let committed = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(committed, 3, [0, 1, 2], 8))
        .await
        .unwrap();
    let moves = ["a", "b"]
        .iter()
        .enumerate()
        .map(|(index, key)| Migration {
            key: key.to_string(),
            from: ObjectLocation::Staged {
                segment: 1,
                offset: 4 * index as u64,
            },
            blob_offset: 4 * index as u64,
        })
        .collect();
    assert_eq!(catalog.commit_blob(committed, moves).await.unwrap(), 2);
    let writing = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(writing, 3, [3, 4, 5], 8))
        .await
        .unwrap();
    catalog
        .set_disk_health(1, DiskHealth::Failed)
        .await
        .unwrap();
    catalog
        .add_rebuild_tasks(vec![RebuildTask {
            blob: committed,
            column: 1,
            failed_disk: 1,
        }])
        .await
        .unwrap();
}

async fn raw_connection(path: &Path) -> SqliteConnection {
    SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(path))
        .await
        .expect("raw connection to the catalog file")
}

/// The integrity check finds nothing wrong with `catalog`.
async fn assert_consistent(catalog: &SqliteCatalog) {
    let problems = catalog.integrity_check().await.unwrap().problems;
    assert!(problems.is_empty(), "{problems:?}");
}

/// A populated catalog's file, closed, then changed behind the catalog's back by `statements`
/// (raw SQL, run in order): what the migration and recount tests reopen.
struct Altered {
    /// Keeps the file alive.
    _directory: tempfile::TempDir,
    path: PathBuf,
    /// What the catalog answered before it was closed.
    before: Snapshot,
}

async fn populated_and_altered(statements: &[&'static str]) -> Altered {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("catalog.db");
    let catalog = SqliteCatalog::open(&path).await.unwrap();
    populate(&catalog).await;
    assert_consistent(&catalog).await;
    let before = snapshot(&catalog).await;
    catalog.close().await;
    let mut raw = raw_connection(&path).await;
    for statement in statements {
        raw.execute(*statement).await.unwrap();
    }
    raw.close().await.unwrap();
    Altered {
        _directory: directory,
        path,
        before,
    }
}

/// The schema version the file at `path` records.
async fn schema_version(path: &Path) -> i64 {
    let mut raw = raw_connection(path).await;
    let version = sqlx::query_scalar("SELECT version FROM schema_version")
        .fetch_one(&mut raw)
        .await
        .unwrap();
    raw.close().await.unwrap();
    version
}

#[test]
fn sqlite_catalog_keeps_everything_across_close_and_reopen() {
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("catalog.db");
        let catalog = SqliteCatalog::open(&path).await.unwrap();
        populate(&catalog).await;
        let before = snapshot(&catalog).await;
        let last_id = catalog.next_blob_id().await.unwrap();
        catalog.close().await;

        let reopened = SqliteCatalog::open(&path).await.unwrap();
        assert_eq!(snapshot(&reopened).await, before);
        assert!(reopened.next_blob_id().await.unwrap() > last_id);
        assert_eq!(
            reopened.integrity_check().await.unwrap().problems,
            Vec::<String>::new()
        );
        reopened.close().await;
    });
}

#[test]
fn acknowledged_changes_are_in_the_files_while_the_catalog_is_still_open() {
    // Copying the database and its WAL while the catalog runs is what a crash leaves behind:
    // every acknowledged change must be in those files already (WAL, synchronous = FULL).
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("catalog.db");
        let catalog = SqliteCatalog::open(&path).await.unwrap();
        populate(&catalog).await;
        let before = snapshot(&catalog).await;
        let crashed = tempfile::tempdir().unwrap();
        for suffix in ["", "-wal"] {
            let from = format!("{}{suffix}", path.display());
            let to = format!("{}{suffix}", crashed.path().join("catalog.db").display());
            std::fs::copy(&from, &to).unwrap();
        }
        let recovered = SqliteCatalog::open(&crashed.path().join("catalog.db"))
            .await
            .unwrap();
        assert_eq!(snapshot(&recovered).await, before);
        assert_eq!(
            recovered.integrity_check().await.unwrap().problems,
            Vec::<String>::new()
        );
        recovered.close().await;
        catalog.close().await;
    });
}

#[test]
fn next_blob_id_never_repeats_across_reopen() {
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("catalog.db");
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..3 {
            let catalog = SqliteCatalog::open(&path).await.unwrap();
            for _ in 0..5 {
                assert!(seen.insert(catalog.next_blob_id().await.unwrap()));
            }
            catalog.close().await;
        }
        assert_eq!(seen.len(), 15);
    });
}

#[test]
fn open_creates_a_wal_database_and_reopens_it() {
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("catalog.db");
        SqliteCatalog::open(&path).await.unwrap().close().await;
        let mut raw = raw_connection(&path).await;
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&mut raw)
            .await
            .unwrap();
        assert_eq!(mode, "wal");
        raw.close().await.unwrap();
        assert_eq!(
            schema_version(&path).await,
            spinwise_catalog::sqlite::SCHEMA_VERSION
        );
        SqliteCatalog::open(&path).await.unwrap().close().await;
    });
}

#[test]
fn open_refuses_a_schema_version_newer_than_it_knows() {
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("catalog.db");
        SqliteCatalog::open(&path).await.unwrap().close().await;
        let mut raw = raw_connection(&path).await;
        raw.execute("UPDATE schema_version SET version = 5")
            .await
            .unwrap();
        raw.close().await.unwrap();
        match SqliteCatalog::open(&path).await {
            Err(CatalogError::Open { message, .. }) => {
                assert!(message.contains("newer"), "{message}")
            }
            other => panic!("expected an Open error, got {other:?}"),
        }
    });
}

/// Takes a catalog's schema back from version 4 to version 3's shape (its version number aside).
const UNDO_VERSION_4: &str = "
    DROP INDEX blobs_dead;
    DROP TRIGGER disk_usage_column_added;
    DROP TRIGGER disk_usage_column_moved;
    DROP TRIGGER disk_usage_blob_removed;
    DROP TABLE disk_usage;
    DROP TRIGGER totals_object_added;
    DROP TRIGGER totals_object_removed;
    DROP TRIGGER totals_object_changed;
    DROP TRIGGER totals_blob_added;
    DROP TRIGGER totals_blob_removed;
    DROP TRIGGER totals_blob_changed;
    DROP TABLE totals;";

/// A version-1 catalog (before scrub bookkeeping) opens, is migrated to the current version in
/// place, keeps everything, and its blobs start unverified.
#[test]
fn a_version_1_catalog_is_migrated_and_keeps_everything_with_blobs_unverified() {
    runtime().block_on(async {
        // The database taken back to version 1's shape.
        let altered = populated_and_altered(&[
            UNDO_VERSION_4,
            "DROP INDEX objects_warm;
             ALTER TABLE objects DROP COLUMN tier;
             DROP INDEX blobs_by_scrub;
             ALTER TABLE blobs DROP COLUMN verified_unix_ms;
             UPDATE schema_version SET version = 1;",
        ])
        .await;
        let reopened = SqliteCatalog::open(&altered.path).await.unwrap();
        assert_eq!(snapshot(&reopened).await, altered.before);
        let due = reopened.scrub_due(3, i64::MAX, 10).await.unwrap();
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].verified_unix_ms, None);
        reopened.record_scrub(due[0].blob.id, 1_234).await.unwrap();
        assert_eq!(reopened.last_scrub_in_group(3).await.unwrap(), Some(1_234));
        assert_consistent(&reopened).await;
        reopened.close().await;
        assert_eq!(
            schema_version(&altered.path).await,
            spinwise_catalog::sqlite::SCHEMA_VERSION
        );
    });
}

/// A version-2 catalog (before tiers) opens, is migrated in place, keeps everything, and every
/// object in it is cold (before tiers every object was headed for the groups); warm objects
/// can be written afterwards, and the rule that a warm object is staged holds in the schema.
#[test]
fn a_version_2_catalog_is_migrated_with_every_object_cold() {
    runtime().block_on(async {
        let altered = populated_and_altered(&[
            UNDO_VERSION_4,
            "DROP INDEX objects_warm;
             ALTER TABLE objects DROP COLUMN tier;
             UPDATE schema_version SET version = 2;",
        ])
        .await;
        let reopened = SqliteCatalog::open(&altered.path).await.unwrap();
        assert_eq!(snapshot(&reopened).await, altered.before);
        assert_eq!(reopened.stats().await.unwrap().warm_objects, 0);
        reopened
            .put_object(common::warm("late", 7, 3, 40))
            .await
            .unwrap();
        assert_eq!(reopened.warm_objects(10).await.unwrap().len(), 1);
        reopened.close().await;
        let mut raw = raw_connection(&altered.path).await;
        let refused = raw
            .execute("UPDATE objects SET staged_segment = NULL, blob = 1 WHERE key = 'late'")
            .await;
        let message = format!("{refused:?}");
        assert!(message.contains("CHECK constraint failed"), "{message}");
        raw.close().await.unwrap();
    });
}

/// A version-3 catalog (before kept disk usage) opens, is migrated in place, and its disk usage
/// is counted from the blobs it holds: the same as the reference model's recount, and kept
/// from then on as blobs begin, move a column, abort and go.
#[test]
fn a_version_3_catalog_is_migrated_with_its_disk_usage_counted_from_the_blobs() {
    runtime().block_on(async {
        let altered =
            populated_and_altered(&[UNDO_VERSION_4, "UPDATE schema_version SET version = 3"]).await;
        let model = MemoryCatalog::new();
        populate(&model).await;
        let reopened = SqliteCatalog::open(&altered.path).await.unwrap();
        let usage = reopened.disk_usage().await.unwrap();
        assert!(!usage.is_empty(), "populate leaves blobs on disks");
        assert_eq!(usage, model.disk_usage().await.unwrap());
        exercise_disk_usage(&reopened).await;
        exercise_disk_usage(&model).await;
        assert_eq!(
            reopened.disk_usage().await.unwrap(),
            model.disk_usage().await.unwrap()
        );
        assert_consistent(&reopened).await;
        reopened.close().await;
    });
}

/// The kept totals `stats` answers from are checked against a recount: a total written behind
/// the catalog's back is one problem line, and `stats` answers what is kept (O(1)).
#[test]
fn the_integrity_check_recounts_the_kept_totals_from_the_rows() {
    runtime().block_on(async {
        let altered =
            populated_and_altered(&["UPDATE totals SET warm_bytes = warm_bytes + 7"]).await;
        let stats = altered.before.stats;
        let reopened = SqliteCatalog::open(&altered.path).await.unwrap();
        assert_eq!(
            reopened.stats().await.unwrap().warm_bytes,
            stats.warm_bytes + 7
        );
        let problems = reopened.integrity_check().await.unwrap().problems;
        assert_eq!(
            problems,
            vec![format!(
                "totals: the kept warm_bytes is {}, the rows say {}",
                stats.warm_bytes + 7,
                stats.warm_bytes
            )]
        );
        reopened.close().await;
    });
}

/// The kept usage is checked against a recount: a total a trigger missed (here, written behind
/// the catalog's back) is an integrity problem naming the disk and both counts.
#[test]
fn the_integrity_check_recounts_the_kept_disk_usage_from_the_blobs() {
    runtime().block_on(async {
        let altered =
            populated_and_altered(&["UPDATE disk_usage SET stripes = stripes + 5 WHERE disk = 1"])
                .await;
        let reopened = SqliteCatalog::open(&altered.path).await.unwrap();
        let problems = reopened.integrity_check().await.unwrap().problems;
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("disk 1: the kept usage says"),
            "{problems:?}"
        );
        reopened.close().await;
    });
}

/// What the usage test does to either catalog: a blob of 13 stripes per stack, one of its
/// columns rebuilt onto another disk, and a blob begun and aborted.
async fn exercise_disk_usage<C: Catalog>(catalog: &C) {
    let big = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(big, 1, [4, 5, 6], 3_300_000))
        .await
        .unwrap();
    catalog.commit_blob(big, Vec::new()).await.unwrap();
    catalog
        .set_disk_health(5, DiskHealth::Failed)
        .await
        .unwrap();
    let task = RebuildTask {
        blob: big,
        column: 1,
        failed_disk: 5,
    };
    catalog.add_rebuild_tasks(vec![task.clone()]).await.unwrap();
    catalog.complete_rebuild(task, 9).await.unwrap();
    let aborted = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(aborted, 1, [4, 7, 8], 300_000))
        .await
        .unwrap();
    catalog.abort_blob(aborted).await.unwrap();
}

#[test]
fn open_refuses_a_database_that_is_not_a_catalog() {
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("other.db");
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let mut raw = SqliteConnection::connect_with(&options).await.unwrap();
        raw.execute("CREATE TABLE photos (id INTEGER)")
            .await
            .unwrap();
        raw.close().await.unwrap();
        let result = SqliteCatalog::open(&path).await;
        assert!(
            matches!(result, Err(CatalogError::Open { .. })),
            "{result:?}"
        );
    });
}

#[test]
fn open_existing_refuses_a_missing_or_empty_catalog_and_creates_nothing() {
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("catalog.db");
        let absent = |result: Result<SqliteCatalog, CatalogError>| match result {
            Err(CatalogError::Absent { absence, .. }) => absence,
            other => panic!("expected Absent, got {other:?}"),
        };
        assert_eq!(
            absent(SqliteCatalog::open_existing(&path).await),
            Absence::Missing
        );
        assert!(!path.exists(), "open_existing created a file");
        std::fs::File::create(&path).unwrap();
        assert_eq!(
            absent(SqliteCatalog::open_existing(&path).await),
            Absence::Empty
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0, "wrote to it");
        // A database with no tables at all (a header and nothing else) is empty too.
        let options = SqliteConnectOptions::new().filename(&path);
        let mut raw = SqliteConnection::connect_with(&options).await.unwrap();
        raw.execute("PRAGMA user_version = 7").await.unwrap();
        raw.close().await.unwrap();
        assert_eq!(
            absent(SqliteCatalog::open_existing(&path).await),
            Absence::Empty
        );
        let mut raw = raw_connection(&path).await;
        let tables: i64 = sqlx::query_scalar("SELECT count(*) FROM sqlite_schema")
            .fetch_one(&mut raw)
            .await
            .unwrap();
        raw.close().await.unwrap();
        assert_eq!(tables, 0, "open_existing created the schema");
        // A real catalog opens, with what it holds.
        std::fs::remove_file(&path).unwrap();
        let catalog = SqliteCatalog::open(&path).await.unwrap();
        assert_eq!(catalog.next_blob_id().await.unwrap(), 1);
        catalog.close().await;
        let catalog = SqliteCatalog::open_existing(&path).await.unwrap();
        assert_eq!(catalog.next_blob_id().await.unwrap(), 2);
        catalog.close().await;
    });
}

#[test]
fn reserved_blob_ids_stay_reserved_across_reopen() {
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("catalog.db");
        let catalog = SqliteCatalog::open(&path).await.unwrap();
        assert_eq!(catalog.reserve_blob_ids_through(41).await.unwrap(), Some(1));
        catalog.close().await;
        let catalog = SqliteCatalog::open(&path).await.unwrap();
        assert_eq!(catalog.next_blob_id().await.unwrap(), 42);
        catalog.close().await;
    });
}

#[test]
fn open_reports_an_unusable_path_as_an_open_error() {
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let path = directory
            .path()
            .join("missing-directory")
            .join("catalog.db");
        let result = SqliteCatalog::open(&path).await;
        assert!(
            matches!(result, Err(CatalogError::Open { .. })),
            "{result:?}"
        );
    });
}

#[test]
fn concurrent_writers_all_succeed() {
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let catalog = Arc::new(
            SqliteCatalog::open(&directory.path().join("catalog.db"))
                .await
                .unwrap(),
        );
        let mut tasks = Vec::new();
        for writer in 0..8u64 {
            let catalog = Arc::clone(&catalog);
            tasks.push(tokio::spawn(async move {
                for index in 0..10u64 {
                    let key = format!("w{writer}/{index}");
                    catalog
                        .put_object(staged(&key, index, writer, index))
                        .await
                        .unwrap();
                    catalog.next_blob_id().await.unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(catalog.stats().await.unwrap().objects, 80);
        // 80 ids handed out, all distinct: the next is 81.
        assert_eq!(catalog.next_blob_id().await.unwrap(), 81);
        catalog.close().await;
    });
}

/// Opens a populated catalog, runs `corruption` as raw SQL on its file, and returns the
/// problems the integrity check reports.
fn problems_after(corruption: &'static str) -> Vec<String> {
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("catalog.db");
        let catalog = SqliteCatalog::open(&path).await.unwrap();
        populate(&catalog).await;
        assert_eq!(
            catalog.integrity_check().await.unwrap().problems,
            Vec::<String>::new()
        );
        let mut raw = raw_connection(&path).await;
        raw.execute(corruption).await.unwrap();
        raw.close().await.unwrap();
        let problems = catalog.integrity_check().await.unwrap().problems;
        catalog.close().await;
        problems
    })
}

#[test]
fn integrity_check_reports_live_bytes_that_disagree_with_the_objects() {
    let problems =
        problems_after("UPDATE blobs SET live_bytes = live_bytes + 1 WHERE state = 'committed'");
    assert_eq!(
        problems,
        ["blob 1 records 9 live bytes, its objects hold 8"]
    );
}

#[test]
fn integrity_check_reports_an_object_outside_its_blob() {
    let problems = problems_after("UPDATE objects SET byte_offset = 6 WHERE key = 'b'");
    assert_eq!(
        problems,
        ["object \"b\" ends at byte 10 of blob 1, which has 8 bytes"]
    );
}

#[test]
fn integrity_check_reports_a_dangling_object_and_a_missing_disk_column() {
    let problems = problems_after(
        "PRAGMA foreign_keys = OFF; DELETE FROM blob_disks WHERE blob = 1 AND column_index = 2;
         DELETE FROM blobs WHERE id = 2; UPDATE objects SET blob = 2 WHERE key = 'b';",
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("sqlite foreign_key_check: a row of objects")),
        "{problems:?}"
    );
    assert!(
        problems
            .contains(&"object \"b\" points into blob 2, which is not in the catalog".to_string()),
        "{problems:?}"
    );
    assert!(
        problems.contains(&"blob 1 has 2 disks, k + r = 3".to_string()),
        "{problems:?}"
    );
    assert!(
        problems.contains(&"blob 1 records 8 live bytes, its objects hold 4".to_string()),
        "{problems:?}"
    );
}

#[test]
fn integrity_check_reports_a_rebuild_task_for_a_healthy_disk() {
    let problems = problems_after("UPDATE disks SET health = 'healthy' WHERE disk = 1");
    assert_eq!(
        problems,
        ["rebuild task for blob 1 column 1 names disk 1, which is not marked failed"]
    );
}

#[test]
fn integrity_check_reports_a_blob_id_counter_that_went_backwards() {
    let problems = problems_after("UPDATE counters SET value = 2 WHERE name = 'next_blob_id'");
    assert_eq!(
        problems,
        ["next blob id 2 is not above the largest blob id 2"]
    );
}

/// The access paths of the catalog's queries (as written in src/sqlite.rs), checked with
/// EXPLAIN QUERY PLAN: each is an index search, never a full table scan or a temporary sort.
/// (`rebuild_tasks` and `stats` are deliberately walks: in primary-key order with a limit, and
/// totals over every object.)
#[test]
fn schema_indexes_serve_the_catalog_queries_without_full_scans_or_sorts() {
    let queries = [
        "SELECT * FROM objects WHERE key >= ?1 AND key < ?1 ORDER BY key LIMIT ?1",
        "SELECT * FROM objects WHERE key > ?1 AND key < ?1 ORDER BY key LIMIT ?1",
        "SELECT * FROM objects WHERE staged_segment IS NOT NULL
         ORDER BY staged_segment, byte_offset, key LIMIT ?1",
        "SELECT DISTINCT staged_segment FROM objects WHERE staged_segment IS NOT NULL",
        "SELECT * FROM objects WHERE staged_segment = ?1
             AND (?1 IS NULL OR byte_offset > ?1 OR (byte_offset = ?1 AND key > ?1))
         ORDER BY byte_offset, key LIMIT ?1",
        "UPDATE objects SET staged_segment = ?1, byte_offset = ?1
         WHERE key = ?1 AND staged_segment = ?1 AND byte_offset = ?1",
        "SELECT staged_segment, COUNT(*), SUM(size_bytes), SUM(tier = 'warm') FROM objects
         WHERE staged_segment IS NOT NULL AND staged_segment > ?1
         GROUP BY staged_segment ORDER BY staged_segment LIMIT ?1",
        "SELECT COALESCE(SUM(size_bytes), 0) FROM objects WHERE blob = ?1",
        "SELECT COUNT(*) FROM objects WHERE blob = ?1",
        "SELECT * FROM blobs WHERE state = ?1 ORDER BY id LIMIT ?1",
        "SELECT * FROM blobs WHERE group_index = ?1 AND id > ?1 ORDER BY id LIMIT ?1",
        "SELECT * FROM blobs WHERE id IN
             (SELECT blob FROM blob_disks WHERE disk = ?1 AND blob > ?1 ORDER BY blob LIMIT ?1)
         ORDER BY id",
        "SELECT blob, group_concat(column_index || ':' || disk) AS columns
         FROM blob_disks WHERE blob IN (?1, ?1) GROUP BY blob",
        "SELECT disk, health FROM disks WHERE health <> 'healthy' ORDER BY disk",
        "SELECT failed_disk FROM rebuild_tasks WHERE blob = ?1 AND column_index = ?1",
        "SELECT * FROM blobs WHERE group_index = ?1 AND verified_unix_ms < ?1
         AND state = 'committed' ORDER BY verified_unix_ms, id LIMIT ?1",
        "SELECT MAX(verified_unix_ms) FROM blobs WHERE group_index = ?1",
        "SELECT * FROM blobs WHERE state = 'committed' AND (live_bytes < size_bytes OR live_bytes = 0)
         AND group_index = ?1 AND id > ?1 ORDER BY id LIMIT ?1",
    ];
    runtime().block_on(async {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("catalog.db");
        SqliteCatalog::open(&path).await.unwrap().close().await;
        let mut raw = raw_connection(&path).await;
        for query in queries {
            let plan: Vec<(i64, i64, i64, String)> =
                sqlx::query_as(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {query}")))
                    .bind(1_i64)
                    .fetch_all(&mut raw)
                    .await
                    .unwrap();
            if query.contains("live_bytes < size_bytes") {
                // Compaction's candidates come from the partial index of blobs with dead bytes,
                // not from the group's every blob.
                assert!(
                    plan.iter()
                        .any(|(_, _, _, step)| step.contains("blobs_dead")),
                    "{query}: {plan:?}"
                );
            }
            for (_, _, _, step) in &plan {
                let full_scan = step.starts_with("SCAN ") && !step.contains("USING");
                assert!(
                    !full_scan && !step.contains("TEMP B-TREE"),
                    "{query}: {step}"
                );
            }
        }
        raw.close().await.unwrap();
    });
}
