//! Shared test helpers: record builders and fresh catalogs of each backend. Each specification
//! is one generic `async fn` over `C: Catalog`; `for_both!` runs it against MemoryCatalog and
//! SqliteCatalog (a fresh database file in a temporary directory).

#![allow(dead_code)] // each test binary uses a different subset

use spinwise_catalog::{
    BlobId, BlobRecord, BlobState, DiskIndex, ObjectLocation, ObjectRecord, Tier,
};

pub fn staged(key: &str, size_bytes: u64, segment: u64, offset: u64) -> ObjectRecord {
    ObjectRecord {
        key: key.to_string(),
        size_bytes,
        content_hash: hash_of(key, size_bytes),
        created_unix_ms: 1_700_000_000_000 + (size_bytes % 1_000) as i64,
        location: ObjectLocation::Staged { segment, offset },
        tier: Tier::Cold,
    }
}

/// [`staged`], in the warm tier.
pub fn warm(key: &str, size_bytes: u64, segment: u64, offset: u64) -> ObjectRecord {
    ObjectRecord {
        tier: Tier::Warm,
        ..staged(key, size_bytes, segment, offset)
    }
}

/// A hash that differs between keys and sizes (the catalog stores it, never computes it).
pub fn hash_of(key: &str, size_bytes: u64) -> [u8; 32] {
    let mut hash = [0u8; 32];
    for (index, byte) in key.bytes().chain(size_bytes.to_le_bytes()).enumerate() {
        hash[index % 32] ^= byte.rotate_left(index as u32 % 8);
    }
    hash
}

/// A `Writing` blob with k = 2, r = 1 on `disks`.
pub fn writing_blob(id: BlobId, group: u32, disks: [DiskIndex; 3], size_bytes: u64) -> BlobRecord {
    BlobRecord {
        id,
        group,
        disks: disks.to_vec(),
        k: 2,
        r: 1,
        fragment_bytes: 131_072,
        size_bytes,
        content_hash: [id as u8; 32],
        state: BlobState::Writing,
        live_bytes: 0,
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Runs the generic specification `$name(&catalog)` against both backends.
#[macro_export]
macro_rules! for_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn memory() {
                $crate::common::runtime().block_on(async {
                    let catalog = spinwise_catalog::MemoryCatalog::new();
                    super::$name(&catalog).await;
                    let report = spinwise_catalog::Catalog::integrity_check(&catalog)
                        .await
                        .expect("integrity check runs");
                    assert_eq!(report.problems, Vec::<String>::new());
                    let report = spinwise_catalog::Catalog::integrity_check(&catalog)
                        .await
                        .expect("integrity check runs");
                    assert_eq!(report.problems, Vec::<String>::new());
                });
            }

            #[test]
            fn sqlite() {
                $crate::common::runtime().block_on(async {
                    let directory = tempfile::tempdir().expect("temporary directory");
                    let catalog = spinwise_catalog::SqliteCatalog::open(
                        &directory.path().join("catalog.db"),
                    )
                    .await
                    .expect("open a fresh catalog");
                    super::$name(&catalog).await;
                    let report = spinwise_catalog::Catalog::integrity_check(&catalog)
                        .await
                        .expect("integrity check runs");
                    assert_eq!(report.problems, Vec::<String>::new());
                    catalog.close().await;
                });
            }
        }
    )*};
}
