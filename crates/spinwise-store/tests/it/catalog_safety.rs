//! A catalog that cannot silently lose data (issue 30 item 3), one test per defect:
//!
//! - a store whose catalog is missing, empty or unreadable refuses to open while the data
//!   directory holds staging segments or stripe stacks, with `StoreError::CatalogLost`, and
//!   changes no file; a store with nothing to lose opens over a new catalog;
//! - blob ids are never handed out twice: a catalog older than the disks (restored from a copy)
//!   continues above every blob id on the disks, so a flush neither fails on nor removes the
//!   older blob's stacks;
//! - cleanup after a failed stack write removes only the files that write made, and abandoning
//!   a `Writing` blob leaves a file of the same name that another blob wrote.
//!
//! What "changes no file" means here: every file under the data directory keeps its name, size
//! and bytes (a snapshot taken before the refused open equals one taken after).

use crate::common;

use common::{jbod_config, pattern, put_and_flush};
use spinwise_catalog::{BlobRecord, BlobState, Catalog, ObjectLocation};
use spinwise_disk::{Disk, EmulatedConfig, EmulatedDisk};
use spinwise_ec::{Code, content_hash};
use spinwise_store::CATALOG_FILE;
use spinwise_store::disk_directory;
use spinwise_store::stacks::{StackWriteError, stack_name, write_stacks};
use spinwise_store::{SqliteStore, Store, StoreError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Every file under `root` (relative path → bytes), sorted by path.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_path_buf();
                files.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// The stack files of every disk (path relative to the data directory → bytes).
fn stacks_on_disks(data: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    snapshot(data)
        .into_iter()
        .filter(|(path, _)| path.to_string_lossy().ends_with(".stack"))
        .collect()
}

async fn new_store(data: &Path) -> SqliteStore {
    Store::init_sqlite(data, jbod_config()).await.unwrap()
}

/// A store with two staged objects, closed (its catalog checkpointed into catalog.sqlite).
async fn store_with_staged_objects(data: &Path) {
    let store = new_store(data).await;
    store.put("a", &pattern(10_000, 1)[..]).await.unwrap();
    store.put("b", &pattern(20_000, 2)[..]).await.unwrap();
    store.close().await;
}

/// Opens the store expecting `CatalogLost`; checks what the error says and that no file changed.
async fn assert_refused(data: &Path, condition: &str, segments: bool, stacks: bool) -> String {
    let before = snapshot(data);
    let refused = Store::open_sqlite(data).await;
    let Err(error) = refused else {
        panic!("the store opened over a {condition} catalog");
    };
    let StoreError::CatalogLost {
        condition: said,
        staging_segments,
        stripe_stacks,
        ..
    } = &error
    else {
        panic!("a {condition} catalog must be CatalogLost, not {error:?}");
    };
    assert!(said.starts_with(condition), "{said}");
    assert_eq!(*staging_segments > 0, segments, "{error}");
    assert_eq!(*stripe_stacks > 0, stacks, "{error}");
    let message = error.to_string();
    for needle in [
        &data.display().to_string(),
        CATALOG_FILE,
        "nothing was deleted",
        "recover",
    ] {
        assert!(message.contains(needle), "{message} must mention {needle}");
    }
    assert!(
        snapshot(data) == before,
        "the refused open changed files under the data directory"
    );
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_whose_catalog_was_emptied_refuses_to_open_and_keeps_its_staging_segments() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    store_with_staged_objects(&data).await;
    let catalog = data.join(CATALOG_FILE);
    let kept = std::fs::read(&catalog).unwrap();
    std::fs::File::create(&catalog).unwrap(); // truncate -s 0
    assert_refused(&data, "empty", true, false).await;
    // Refused again (the first refusal wrote nothing, not even an SQLite header).
    assert_refused(&data, "empty", true, false).await;
    // The catalog put back, every object is there byte-exact: nothing was lost meanwhile.
    std::fs::write(&catalog, kept).unwrap();
    let store = Store::open_sqlite(&data).await.unwrap();
    assert_eq!(store.list("", None, 10).await.unwrap().len(), 2);
    let (bytes, _) = common::read_to_end(&store, "b", None).await.unwrap();
    assert!(bytes == pattern(20_000, 2));
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_whose_catalog_was_deleted_refuses_to_open_and_creates_no_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    store_with_staged_objects(&data).await;
    for file in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(data.join(format!("{CATALOG_FILE}{file}")));
    }
    assert_refused(&data, "missing", true, false).await;
    assert!(!data.join(CATALOG_FILE).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_whose_catalog_is_unreadable_refuses_to_open_naming_why() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    store_with_staged_objects(&data).await;
    std::fs::write(data.join(CATALOG_FILE), vec![0x5a; 8192]).unwrap();
    assert_refused(&data, "unreadable", true, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_holding_only_stripe_stacks_refuses_to_open_without_its_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = new_store(&data).await;
    put_and_flush(&store, &[("a", pattern(50_000, 3))]).await;
    let columns = store.rack_io().code.columns();
    store.close().await;
    // The object is migrated: its staging segment holds nothing the store needs, and goes (as
    // reclaim frees it once sealed), leaving the stacks the only data.
    for entry in std::fs::read_dir(data.join("staging")).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    std::fs::File::create(data.join(CATALOG_FILE)).unwrap();
    let message = assert_refused(&data, "empty", false, true).await;
    assert!(
        message.contains(&format!("{columns} stripe stack")),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_with_nothing_to_lose_opens_over_a_new_catalog_when_its_catalog_went() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    new_store(&data).await.close().await;
    std::fs::remove_file(data.join(CATALOG_FILE)).unwrap();
    let store = Store::open_sqlite(&data).await.unwrap();
    store.put("a", &b"fresh"[..]).await.unwrap();
    assert_eq!(store.list("", None, 10).await.unwrap().len(), 1);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blob_ids_continue_above_the_stacks_on_disk_when_the_catalog_is_older_than_the_disks() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = new_store(&data).await;
    store.close().await;
    // A copy of the catalog from before any blob: what a restore from an old backup brings.
    let catalog = data.join(CATALOG_FILE);
    let old_copy = std::fs::read(&catalog).unwrap();
    let store = Store::open_sqlite(&data).await.unwrap();
    put_and_flush(&store, &[("first", pattern(40_000, 4))]).await;
    store.close().await;
    let first_stacks = stacks_on_disks(&data);
    assert!(!first_stacks.is_empty());
    std::fs::write(&catalog, old_copy).unwrap();

    let store = Store::open_sqlite(&data).await.unwrap();
    store.put("second", &pattern(30_000, 5)[..]).await.unwrap();
    // Before blob ids were kept above the disks', this flush reused blob id 1, failed on the
    // existing stack files, and its cleanup removed the older blob's stacks.
    let flushed = store.flush(|_| {}).await;
    let older_stacks_now = stacks_on_disks(&data);
    let lost = first_stacks
        .iter()
        .filter(|(path, bytes)| older_stacks_now.get(*path) != Some(*bytes))
        .count();
    assert_eq!(
        lost, 0,
        "the flush removed or changed the older blob's stacks"
    );
    let report = flushed.unwrap();
    assert_eq!(report.objects_moved, 1);
    let ObjectLocation::Migrated { blob, .. } = store.stat("second").await.unwrap().location else {
        panic!("`second` was not migrated");
    };
    assert!(blob > 1, "blob id {blob} was handed out before");
    let (bytes, _) = common::read_to_end(&store, "second", None).await.unwrap();
    assert!(bytes == pattern(30_000, 5));
    // The operator hears that the catalog is older than the disks.
    assert!(
        store
            .recovery()
            .problems
            .iter()
            .any(|problem| problem.contains("older than the disks")),
        "{:?}",
        store.recovery().problems
    );
    store.close().await;
    let now = stacks_on_disks(&data);
    for (path, bytes) in &first_stacks {
        assert!(
            now.get(path) == Some(bytes),
            "{} of the older blob was changed or removed",
            path.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_stack_write_removes_the_stacks_it_wrote_and_not_a_file_that_was_there() {
    let directory = tempfile::tempdir().unwrap();
    let disks: Vec<Arc<dyn Disk>> = (0..6)
        .map(|index| {
            let path = directory.path().join(format!("disk-{index}"));
            let disk = EmulatedDisk::create(EmulatedConfig::new(path, index, 1 << 30)).unwrap();
            disk.spin_up().unwrap();
            Arc::new(disk) as Arc<dyn Disk>
        })
        .collect();
    let code = Code::new(4, 2, 64 * 1024).unwrap();
    let data = pattern(300_000, 6);
    // Column 2's name is already taken by a file this write did not make.
    let there = b"an older blob's stack".to_vec();
    disks[2]
        .write_file(
            &stack_name(9, 2),
            there.len() as u64,
            &mut &there[..],
            spinwise_disk::Overwrite::Refuse,
        )
        .unwrap();
    let written = write_stacks(
        &code,
        9,
        data.len() as u64,
        content_hash(&data),
        &data[..],
        &disks,
    );
    let Err(StackWriteError::Columns { failures }) = written else {
        panic!("writing over an existing stack must fail: {written:?}");
    };
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].0, 2);
    let mut kept = vec![0u8; there.len()];
    let read = disks[2].read_at(&stack_name(9, 2), 0, &mut kept);
    assert_eq!(
        read.ok(),
        Some(there.len()),
        "the file that was there is gone"
    );
    assert!(kept == there);
    for (column, disk) in disks.iter().enumerate().filter(|(c, _)| *c != 2) {
        assert!(
            disk.file_len(&stack_name(9, column)).is_err(),
            "column {column}'s stack of the failed write was left behind"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoning_a_writing_blob_keeps_a_file_of_its_name_that_another_blob_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = new_store(&data).await;
    let disks = put_and_flush(&store, &[("a", pattern(60_000, 7))]).await;
    let ObjectLocation::Migrated { blob: old, .. } = store.stat("a").await.unwrap().location else {
        panic!("`a` was not migrated");
    };
    let old_record = store.catalog().blob(old).await.unwrap().unwrap();
    // A `Writing` blob on the same disks, as a crashed flush leaves one; under its stack names
    // lie copies of the older blob's stacks (as a blob id reused after a lost catalog made).
    let id = store.catalog().next_blob_id().await.unwrap();
    let writing = BlobRecord {
        id,
        state: BlobState::Writing,
        size_bytes: 1234,
        content_hash: content_hash(b"another blob"),
        live_bytes: 0,
        ..old_record.clone()
    };
    store.catalog().begin_blob(writing).await.unwrap();
    let mut planted = BTreeMap::new();
    for (column, &disk) in disks.iter().enumerate() {
        let directory = disk_directory(&data, disk as usize);
        let bytes = std::fs::read(directory.join(stack_name(old, column))).unwrap();
        let path = directory.join(stack_name(id, column));
        std::fs::write(&path, &bytes).unwrap();
        planted.insert(path, bytes);
    }
    let abandoned = store.abandon_writing_blobs().await.unwrap();
    assert_eq!(abandoned, vec![id]);
    assert!(store.catalog().blob(id).await.unwrap().is_none());
    for (path, bytes) in &planted {
        assert!(
            std::fs::read(path).ok().as_ref() == Some(bytes),
            "{} was removed by a cleanup that never wrote it",
            path.display()
        );
    }
    store.close().await;
}

/// The ids the counter must pass are read from the listings the disks make as they open, and a
/// crash's leftover temporary stack counts too (its id was taken when the file got it), although
/// opening removes the file: a catalog older than the disks continues above it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leftover_temporary_stack_raises_the_blob_id_counter_although_opening_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = new_store(&data).await;
    store.close().await;
    let leftover_id = 40;
    let leftover = disk_directory(&data, 3).join(format!(".tmp-0-{}", stack_name(leftover_id, 0)));
    std::fs::write(&leftover, b"a stack cut short").unwrap();

    let store = Store::open_sqlite(&data).await.unwrap();
    assert!(!leftover.exists(), "opening removes a crash's leftover");
    assert!(
        (store.recovery().problems.iter()).any(|problem| problem.contains("older than the disks")),
        "{:?}",
        store.recovery().problems
    );
    put_and_flush(&store, &[("next", pattern(20_000, 8))]).await;
    let ObjectLocation::Migrated { blob, .. } = store.stat("next").await.unwrap().location else {
        panic!("`next` was not migrated");
    };
    assert!(
        blob > leftover_id,
        "blob id {blob} does not pass the leftover's {leftover_id}"
    );
    store.close().await;
}
