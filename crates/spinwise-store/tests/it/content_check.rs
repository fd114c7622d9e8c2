//! What a GET verifies: every chunk's crc32c always, and with `ContentCheck::WholeObject` the
//! whole object's BLAKE3 against the PUT's. The whole-object check is the guard against faults
//! the per-fragment checksums cannot see; here one is made on purpose (a fragment changed *and*
//! its crc32c recomputed, as a bug writing wrong bytes with a fresh checksum would).

use crate::common;

use spinwise_catalog::{Catalog, ObjectLocation};
use spinwise_disk::Disk;
use spinwise_store::stacks::stack_name;
use spinwise_store::{ContentCheck, SqliteStore, Store, StoreConfig, StoreError};

/// Bytes before stripe 0's fragment in a stripe-stack file (docs/stripe-format.md).
const STACK_HEADER_BYTES: usize = 84;

fn config() -> StoreConfig {
    common::jbod_config()
}

fn pattern(size_bytes: usize) -> Vec<u8> {
    (0..size_bytes).map(|i| (i * 31 + i / 7) as u8).collect()
}

async fn read(store: &SqliteStore, key: &str, check: ContentCheck) -> Result<Vec<u8>, StoreError> {
    let mut reader = store.get_with(key, None, check).await?;
    let mut bytes = Vec::new();
    while let Some(chunk) = reader.next_chunk().await? {
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Changes one byte of column 0's first fragment and rewrites that fragment's crc32c to match.
fn corrupt_with_a_valid_checksum(store: &SqliteStore, disk: u32, blob: u64) {
    corrupt_fragment_with_a_valid_checksum(store, (disk, blob), (0, 0));
}

/// [`corrupt_with_a_valid_checksum`] for `column`'s fragment of `stripe` (on `disk`).
fn corrupt_fragment_with_a_valid_checksum(
    store: &SqliteStore,
    (disk, blob): (u32, u64),
    (column, stripe): (usize, usize),
) {
    let fragment_bytes = store.config().fragment_bytes as usize;
    let path = spinwise_store::disk_directory(store.data_dir(), disk as usize)
        .join(stack_name(blob, column));
    let mut raw = std::fs::read(&path).unwrap();
    let start = STACK_HEADER_BYTES + stripe * (fragment_bytes + 4);
    let fragment = start..start + fragment_bytes;
    raw[fragment.start + 100] ^= 0x40;
    let crc = crc32c::crc32c(&raw[fragment.clone()]);
    raw[fragment.end..fragment.end + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, raw).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_object_check_catches_a_fault_the_fragment_checksums_cannot_see() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init_sqlite(&dir.path().join("data"), config())
        .await
        .unwrap();
    let bytes = pattern(300_000);
    store.put("k", &bytes[..]).await.unwrap();
    // While staged, both checks pass on intact bytes.
    assert_eq!(
        read(&store, "k", ContentCheck::WholeObject).await.unwrap(),
        bytes
    );
    store.flush(|_| {}).await.unwrap();
    assert_eq!(
        read(&store, "k", ContentCheck::WholeObject).await.unwrap(),
        bytes
    );

    let record = store.stat("k").await.unwrap();
    let ObjectLocation::Migrated { blob, .. } = record.location else {
        panic!("k was not migrated");
    };
    let disks = store.catalog().blob(blob).await.unwrap().unwrap().disks;
    corrupt_with_a_valid_checksum(&store, disks[0], blob);

    let unchecked = read(&store, "k", ContentCheck::ChunksOnly).await.unwrap();
    assert_ne!(
        unchecked, bytes,
        "the crcs pass, so the changed byte comes through"
    );
    match read(&store, "k", ContentCheck::WholeObject).await {
        Err(StoreError::ContentHashMismatch { key }) => assert_eq!(key, "k"),
        other => panic!("expected ContentHashMismatch, got {other:?}"),
    }
    store.close().await;
}

/// A large object read whole is hashed in subtrees on the column threads (crate
/// `subtree_hash`): the check still passes when stripes are decoded around failed disks (their
/// pieces are hashed by the hand-on) and still catches a changed byte deep inside the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_object_check_over_subtrees_passes_decoded_stripes_and_catches_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init_sqlite(&dir.path().join("data"), config())
        .await
        .unwrap();
    let fragment_bytes = store.config().fragment_bytes as usize;
    // Twenty stripes and a partial one: a spread read (at least 8 stripes) with a short last
    // subtree.
    let bytes = pattern(20 * 3 * fragment_bytes + 777);
    store.put("big", &bytes[..]).await.unwrap();
    store.flush(|_| {}).await.unwrap();
    assert_eq!(
        read(&store, "big", ContentCheck::WholeObject)
            .await
            .unwrap(),
        bytes
    );
    let record = store.stat("big").await.unwrap();
    let ObjectLocation::Migrated { blob, .. } = record.location else {
        panic!("big was not migrated");
    };
    let disks = store.catalog().blob(blob).await.unwrap().unwrap().disks;

    let emulated = &store.rack_io().emulated;
    emulated[disks[1] as usize].mark_failed();
    assert_eq!(
        read(&store, "big", ContentCheck::WholeObject)
            .await
            .unwrap(),
        bytes,
        "stripes decoded around a failed data disk hash like the object"
    );

    corrupt_fragment_with_a_valid_checksum(&store, (disks[2], blob), (2, 7));
    let unchecked = read(&store, "big", ContentCheck::ChunksOnly).await.unwrap();
    assert_ne!(
        unchecked, bytes,
        "the crcs pass, so the change comes through"
    );
    match read(&store, "big", ContentCheck::WholeObject).await {
        Err(StoreError::ContentHashMismatch { key }) => assert_eq!(key, "big"),
        other => panic!(
            "expected ContentHashMismatch, got {:?}",
            other.map(|b| b.len())
        ),
    }
    store.close().await;
}
