//! Migrated reads choose which k of a blob's k + r columns to read (crates/spinwise-store/src/
//! columns.rs): the least busy, so reads a group serves at once spread over its disks. On the
//! dense-jbod-60 test store (k = 3, r = 2, groups of 6): a read whose data disks are busy takes
//! parity columns and decodes, byte-exact over the whole object and unaligned ranges; with the
//! disks idle, with `read_columns = "data"`, or for a short range it takes the data columns; a
//! failed data disk is read around by choice (no per-stripe repairs); a bad fragment on a
//! parity column standing in is still read around; and two reads served at once on one group
//! take different disks.

use crate::common;

use common::{pattern, put_and_flush, read_to_end};
use spinwise_disk::Disk;
use spinwise_store::{ReadColumns, SqliteStore, Store, StoreConfig};
use std::path::Path;

/// 5 MiB objects: 14 stripes of 3 × 128 KiB, past `MIN_SPREAD_STRIPES`.
const OBJECT_BYTES: usize = 5 << 20;

fn config(read_columns: ReadColumns) -> StoreConfig {
    let mut config = common::jbod_config();
    config.bundle_bytes = 6 << 20;
    config.read_columns = read_columns;
    // Two reads of a group served at once, as a Pelican class does (the preset serves four).
    config.layout.scheduler.concurrent_requests_per_class = 2;
    config
}

async fn new_store(dir: &Path, read_columns: ReadColumns) -> SqliteStore {
    Store::init_sqlite(&dir.join("data"), config(read_columns))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_takes_parity_columns_in_place_of_busy_data_disks_and_is_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), ReadColumns::LeastBusy).await;
    let bytes = pattern(OBJECT_BYTES, 1);
    let disks = put_and_flush(&store, &[("a", bytes.clone())]).await;
    let reads = store.rack_io().disk_reads.clone();

    let (read, reader) = read_to_end(&store, "a", None).await.unwrap();
    assert!(read == bytes);
    assert_eq!(
        reader.columns_read(),
        vec![0, 1, 2],
        "idle disks: the data columns"
    );

    // Data columns 0 and 1 busy with other reads: both parity columns stand in.
    let busy = reads.claim(vec![disks[0], disks[1]]);
    let stripe = store.rack_io().code.stripe_data_bytes();
    let ranges = [
        0..OBJECT_BYTES as u64,
        100_001..4_900_000,
        stripe - 1..9 * stripe + 1,
    ];
    for range in ranges {
        let (read, reader) = read_to_end(&store, "a", Some(range.clone())).await.unwrap();
        assert!(
            read[..] == bytes[range.start as usize..range.end as usize],
            "{range:?}"
        );
        assert_eq!(reader.columns_read(), vec![2, 3, 4], "{range:?}");
        assert!(reader.repairs().is_clean(), "a choice, not a repair");
    }
    // A short range reads the data columns it covers whatever the load: a decode would need k
    // fragments of each stripe where the range needs one.
    let (read, reader) = read_to_end(&store, "a", Some(10..1_000)).await.unwrap();
    assert!(read[..] == bytes[10..1_000]);
    assert_eq!(reader.columns_read(), vec![0]);
    drop(busy);
    for disk in disks {
        assert_eq!(reads.in_progress(disk), 0, "every read gave its disks back");
    }
    // Five reads; the three that chose parity columns decoded with them (the others may too,
    // on a stripe where a standby stood in for a data column that fell behind on this host).
    let status = store.status().await.unwrap();
    assert_eq!(status.migrated_reads, 5);
    assert!(
        (3..=5).contains(&status.migrated_reads_with_parity),
        "{status:?}"
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_read_columns_data_a_read_takes_its_data_columns_however_busy() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), ReadColumns::Data).await;
    let bytes = pattern(OBJECT_BYTES, 2);
    let disks = put_and_flush(&store, &[("a", bytes.clone())]).await;
    let _busy = store.rack_io().disk_reads.claim(vec![disks[0], disks[1]]);
    let (read, reader) = read_to_end(&store, "a", None).await.unwrap();
    assert!(read == bytes);
    assert_eq!(reader.columns_read(), vec![0, 1, 2]);
    store.close().await;
    // The setting is written to store.toml (only when not the default) and read back.
    let data = dir.path().join("data");
    let text = std::fs::read_to_string(data.join("store.toml")).unwrap();
    assert!(text.contains("read_columns = \"data\"\n"), "{text}");
    let reopened = Store::open_sqlite(&data).await.unwrap();
    assert_eq!(reopened.config().read_columns, ReadColumns::Data);
    reopened.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_read_columns_value_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), ReadColumns::LeastBusy).await;
    store.close().await;
    let data = dir.path().join("data");
    let path = data.join("store.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("read_columns"),
        "the default is not written: {text}"
    );
    let edited = text.replacen(
        "bundle_bytes",
        "read_columns = \"fastest\"\nbundle_bytes",
        1,
    );
    std::fs::write(&path, edited).unwrap();
    match Store::open_sqlite(&data).await {
        Err(error) => {
            let message = error.to_string();
            assert!(
                message.contains("read_columns") || message.contains("fastest"),
                "{message}"
            );
        }
        Ok(_) => panic!("read_columns = \"fastest\" was accepted"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_data_disk_is_read_around_by_choice_not_stripe_by_stripe() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), ReadColumns::LeastBusy).await;
    let bytes = pattern(OBJECT_BYTES, 3);
    let disks = put_and_flush(&store, &[("a", bytes.clone())]).await;
    store.rack_io().emulated[disks[1] as usize].mark_failed();
    let (read, reader) = read_to_end(&store, "a", None).await.unwrap();
    assert!(read == bytes);
    assert_eq!(reader.columns_read(), vec![0, 2, 3]);
    assert!(
        reader.repairs().is_clean(),
        "no fragment of the failed disk was tried: {:?}",
        reader.repairs()
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_fragment_on_a_parity_column_standing_in_is_read_around() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), ReadColumns::LeastBusy).await;
    let bytes = pattern(OBJECT_BYTES, 4);
    let disks = put_and_flush(&store, &[("a", bytes.clone())]).await;
    let spinwise_catalog::ObjectLocation::Migrated { blob, .. } =
        store.stat("a").await.unwrap().location
    else {
        panic!("not migrated");
    };
    let code = store.rack_io().code.clone();
    // Damage parity column 3 in stripes 0 to 11. A standby may read a stripe in its place when
    // column 3 falls behind on a busy host, but never stripe 0: a chosen column that has not
    // yet read is never late (crates/spinwise-store/src/board.rs), so stripe 0 is always met.
    for stripe in 0..12 {
        common::flip_byte(&store, disks[3], blob, 3, code.fragment_offset(stripe) + 17);
    }
    let _busy = store.rack_io().disk_reads.claim(vec![disks[0]]);
    let (read, reader) = read_to_end(&store, "a", None).await.unwrap();
    assert!(read == bytes);
    assert_eq!(reader.columns_read(), vec![1, 2, 3]);
    let report = reader.repairs();
    assert!(!report.repaired.is_empty(), "no damage met: {report:?}");
    for bad in &report.repaired {
        assert_eq!(bad.column, 3, "{report:?}");
        assert!((0..12).contains(&bad.stripe), "{report:?}");
    }
    assert_eq!(report.repaired[0].stripe, 0, "{report:?}");
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_reads_served_at_once_on_one_group_take_different_disks() {
    let dir = tempfile::tempdir().unwrap();
    let store = new_store(dir.path(), ReadColumns::LeastBusy).await;
    let first = pattern(OBJECT_BYTES, 5);
    let second = pattern(OBJECT_BYTES, 6);
    put_and_flush(&store, &[("first", first.clone())]).await;
    put_and_flush(&store, &[("second", second.clone())]).await;
    let blob_disks = |key: &'static str| {
        let store = &store;
        async move {
            let spinwise_catalog::ObjectLocation::Migrated { blob, .. } =
                store.stat(key).await.unwrap().location
            else {
                panic!("{key} not migrated");
            };
            use spinwise_catalog::Catalog;
            store.catalog().blob(blob).await.unwrap().unwrap()
        }
    };
    let (one, two) = (blob_disks("first").await, blob_disks("second").await);
    assert_eq!(
        one.group, two.group,
        "both flushes go to the group left spinning"
    );
    // The first read holds its job (the caller has taken one chunk and waits) while the second
    // chooses: the first's data disks are busy, so the second reads around the ones it shares.
    let mut holding = store.get("first", None).await.unwrap();
    let head = holding.next_chunk().await.unwrap().expect("a first chunk");
    let busy: Vec<u32> = one.disks[..3].to_vec();
    for disk in &busy {
        assert_eq!(store.rack_io().disk_reads.in_progress(*disk), 1);
    }
    let (read, reader) = read_to_end(&store, "second", None).await.unwrap();
    assert!(read == second);
    let taken: Vec<u32> = reader
        .columns_read()
        .iter()
        .map(|&column| two.disks[column])
        .collect();
    let idle_columns = two.disks.iter().filter(|d| !busy.contains(d)).count();
    let shared = taken.iter().filter(|d| busy.contains(d)).count();
    assert_eq!(
        shared,
        3usize.saturating_sub(idle_columns),
        "the second read took {taken:?} with {busy:?} busy"
    );
    let mut rest = head.to_vec();
    while let Some(chunk) = holding.next_chunk().await.unwrap() {
        rest.extend_from_slice(&chunk);
    }
    assert!(rest == first);
    store.close().await;
}
