//! The Catalog trait's specification, each test one generic body run against MemoryCatalog and
//! SqliteCatalog (see `common::for_both!`); every run also ends with a clean integrity check.

use crate::common;

use common::{staged, warm, writing_blob};
use spinwise_catalog::{
    BlobState, Catalog, CatalogError, CatalogStats, DiskHealth, DiskRecord, Migration,
    ObjectLocation, ObjectRecord, RebuildTask, SegmentUsage, Tier,
};

for_both!(
    put_inserts_replaces_and_delete_removes_returning_the_previous_record,
    put_object_refuses_migrated_records_and_numbers_above_i64_max,
    list_objects_honours_prefix_after_and_limit,
    list_objects_prefixes_work_at_multibyte_and_max_code_point_boundaries,
    staged_objects_come_in_log_order,
    segments_in_use_are_the_segments_of_staged_objects_only,
    next_blob_id_never_repeats,
    reserve_blob_ids_through_raises_the_counter_above_ids_in_use_and_never_lowers_it,
    begin_commit_and_abort_follow_the_blob_lifecycle,
    begin_blob_refuses_ids_never_handed_out_duplicates_and_bad_disk_sets,
    commit_blob_moves_only_objects_still_at_from_and_sets_live_bytes,
    commit_blob_refuses_a_move_outside_the_blob_and_changes_nothing,
    deleting_or_overwriting_a_migrated_object_lowers_live_bytes,
    compaction_moves_between_blobs_lower_the_old_blobs_live_bytes,
    blobs_in_state_group_and_on_disk_page_by_id,
    remove_blob_only_removes_committed_blobs_without_objects,
    unhealthy_disks_lists_disks_marked_failed,
    rebuild_tasks_are_idempotent_and_complete_rebuild_moves_the_column,
    rebuild_requests_that_break_the_rules_are_refused,
    stats_count_objects_bytes_blobs_and_pending_rebuilds,
    scrub_due_lists_committed_blobs_of_a_group_most_overdue_first,
    record_scrub_refuses_unknown_and_writing_blobs_and_non_positive_times,
    compaction_moves_live_objects_between_blobs_unless_deleted_and_dead_bytes_count_the_rest,
    warm_objects_stay_staged_and_are_listed_oldest_first_by_tier,
    demote_changes_only_the_version_it_was_decided_on,
    demote_at_a_place_above_i64_max_matches_nothing_and_is_no_error,
    restage_moves_only_the_version_it_was_decided_on,
    restage_refuses_a_place_above_i64_max_and_changes_nothing,
    staged_in_segment_lists_one_segment_in_offset_order_after_a_position,
    segment_usage_counts_objects_live_bytes_and_warm_objects_per_segment,
    a_put_that_takes_the_objects_above_i64_max_bytes_is_refused,
);

fn is_invalid<T: std::fmt::Debug>(result: Result<T, CatalogError>) -> bool {
    matches!(result, Err(CatalogError::Invalid { .. }))
}

async fn put_inserts_replaces_and_delete_removes_returning_the_previous_record<C: Catalog>(
    catalog: &C,
) {
    let first = staged("photos/cat.jpg", 10, 1, 0);
    assert_eq!(catalog.put_object(first.clone()).await.unwrap(), None);
    assert_eq!(
        catalog.object("photos/cat.jpg").await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(catalog.object("photos/dog.jpg").await.unwrap(), None);

    let second = staged("photos/cat.jpg", 25, 1, 64);
    assert_eq!(
        catalog.put_object(second.clone()).await.unwrap(),
        Some(first)
    );
    assert_eq!(
        catalog.object("photos/cat.jpg").await.unwrap(),
        Some(second.clone())
    );

    assert_eq!(
        catalog.delete_object("photos/cat.jpg").await.unwrap(),
        Some(second)
    );
    assert_eq!(catalog.delete_object("photos/cat.jpg").await.unwrap(), None);
    assert_eq!(catalog.object("photos/cat.jpg").await.unwrap(), None);

    // The empty key and keys with NUL or newline bytes are ordinary keys.
    for key in ["", "a\0b", "line\nbreak"] {
        let record = staged(key, 3, 2, 0);
        catalog.put_object(record.clone()).await.unwrap();
        assert_eq!(catalog.object(key).await.unwrap(), Some(record));
    }
}

async fn put_object_refuses_migrated_records_and_numbers_above_i64_max<C: Catalog>(catalog: &C) {
    let mut migrated = staged("m", 1, 0, 0);
    migrated.location = ObjectLocation::Migrated { blob: 1, offset: 0 };
    assert!(is_invalid(catalog.put_object(migrated).await));

    let too_big = [
        staged("big", u64::MAX, 0, 0),
        staged("big", i64::MAX as u64 + 1, 0, 0),
        staged("big", 1, i64::MAX as u64 + 1, 0),
        staged("big", 1, 0, u64::MAX),
    ];
    for record in too_big {
        let result = catalog.put_object(record).await;
        assert!(matches!(result, Err(CatalogError::Limit(_))), "{result:?}");
    }
    assert_eq!(catalog.object("big").await.unwrap(), None);
    assert_eq!(catalog.object("m").await.unwrap(), None);

    // i64::MAX itself fits.
    let largest = staged("largest", i64::MAX as u64, i64::MAX as u64, i64::MAX as u64);
    catalog.put_object(largest.clone()).await.unwrap();
    assert_eq!(catalog.object("largest").await.unwrap(), Some(largest));
}

async fn keys<C: Catalog>(
    catalog: &C,
    prefix: &str,
    after: Option<&str>,
    limit: u32,
) -> Vec<String> {
    let records = catalog.list_objects(prefix, after, limit).await.unwrap();
    records.into_iter().map(|record| record.key).collect()
}

async fn list_objects_honours_prefix_after_and_limit<C: Catalog>(catalog: &C) {
    for (index, key) in ["b", "a/2/x", "a/1", "ab", "a/2", "a", "a0"]
        .iter()
        .enumerate()
    {
        catalog
            .put_object(staged(key, 1, 0, index as u64))
            .await
            .unwrap();
    }
    assert_eq!(
        keys(catalog, "", None, 100).await,
        ["a", "a/1", "a/2", "a/2/x", "a0", "ab", "b"]
    );
    assert_eq!(
        keys(catalog, "a/", None, 100).await,
        ["a/1", "a/2", "a/2/x"]
    );
    assert_eq!(
        keys(catalog, "a/", Some("a/1"), 100).await,
        ["a/2", "a/2/x"]
    );
    assert_eq!(
        keys(catalog, "a/", Some("a/2/x"), 100).await,
        Vec::<String>::new()
    );
    // `after` below the prefix range does not matter; above it empties the answer.
    assert_eq!(
        keys(catalog, "a/", Some("0"), 100).await,
        ["a/1", "a/2", "a/2/x"]
    );
    assert_eq!(
        keys(catalog, "a/", Some("z"), 100).await,
        Vec::<String>::new()
    );
    assert_eq!(keys(catalog, "a/", None, 2).await, ["a/1", "a/2"]);
    assert_eq!(keys(catalog, "", None, 0).await, Vec::<String>::new());
    assert_eq!(keys(catalog, "c", None, 100).await, Vec::<String>::new());
    assert_eq!(
        keys(catalog, "a/2/x/", None, 100).await,
        Vec::<String>::new()
    );
    // Paging with `after` visits every key once.
    let mut paged = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = keys(catalog, "a", after.as_deref(), 2).await;
        if page.is_empty() {
            break;
        }
        after = page.last().cloned();
        paged.extend(page);
    }
    assert_eq!(paged, ["a", "a/1", "a/2", "a/2/x", "a0", "ab"]);
}

/// Keys around the boundaries where the byte-wise successor of a prefix is tricky: U+00FF
/// (bytes C3 BF), U+07FF/U+0800 (2 → 3 bytes), U+D7FF/U+E000 (either side of the surrogates),
/// U+FFFF/U+10000 (3 → 4 bytes) and U+10FFFF, the largest code point (F4 8F BF BF).
const BOUNDARY_KEYS: [&str; 16] = [
    "\u{ff}",
    "\u{ff}a",
    "\u{ff}\u{ff}",
    "\u{100}",
    "\u{7ff}",
    "\u{7ff}z",
    "\u{800}",
    "\u{d7ff}",
    "\u{d7ff}\u{10ffff}",
    "\u{e000}",
    "\u{ffff}",
    "\u{10000}",
    "\u{10ffff}",
    "\u{10ffff}a",
    "\u{10ffff}\u{10ffff}",
    "z",
];

async fn list_objects_prefixes_work_at_multibyte_and_max_code_point_boundaries<C: Catalog>(
    catalog: &C,
) {
    for (index, key) in BOUNDARY_KEYS.iter().enumerate() {
        catalog
            .put_object(staged(key, 1, 0, index as u64))
            .await
            .unwrap();
    }
    let prefixes = [
        "",
        "\u{ff}",
        "\u{ff}\u{ff}",
        "\u{7ff}",
        "\u{d7ff}",
        "\u{ffff}",
        "\u{10ffff}",
        "\u{10ffff}\u{10ffff}",
        "\u{10ffff}\u{10ffff}\u{10ffff}",
        "\u{100}",
        "y",
    ];
    for prefix in prefixes {
        // Byte-wise order of UTF-8 is code-point order, which is `str`'s order.
        let mut expected: Vec<&str> = BOUNDARY_KEYS
            .iter()
            .copied()
            .filter(|key| key.starts_with(prefix))
            .collect();
        expected.sort();
        assert_eq!(
            keys(catalog, prefix, None, 100).await,
            expected,
            "prefix {prefix:?}"
        );
        if let Some(first) = expected.first() {
            assert_eq!(
                keys(catalog, prefix, Some(first), 100).await,
                expected[1..],
                "prefix {prefix:?} after {first:?}"
            );
        }
    }
}

async fn staged_objects_come_in_log_order<C: Catalog>(catalog: &C) {
    let positions = [
        ("e", 2, 0),
        ("a", 3, 10),
        ("c", 1, 500),
        ("b", 1, 20),
        ("d", 2, 7),
    ];
    for (key, segment, offset) in positions {
        catalog
            .put_object(staged(key, 5, segment, offset))
            .await
            .unwrap();
    }
    let order: Vec<String> = catalog
        .staged_objects(None, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(order, ["b", "c", "e", "d", "a"]);
    let first_two: Vec<String> = catalog
        .staged_objects(None, 2)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(first_two, ["b", "c"]);
}

/// Stages `keys` (4 bytes each) in segment 1 at offsets 0, 4, …; commits blob `id` on
/// `disks` holding them all, consecutively. Returns how many moved.
async fn migrate<C: Catalog>(catalog: &C, keys: &[&str], disks: [u32; 3]) -> (u64, u64) {
    let id = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(id, 0, disks, 4 * keys.len() as u64))
        .await
        .unwrap();
    let mut moves = Vec::new();
    for (index, key) in keys.iter().enumerate() {
        let from = catalog
            .object(key)
            .await
            .unwrap()
            .map(|object| object.location);
        moves.push(Migration {
            key: key.to_string(),
            from: from.unwrap_or(ObjectLocation::Staged {
                segment: 1,
                offset: 0,
            }),
            blob_offset: 4 * index as u64,
        });
    }
    (id, catalog.commit_blob(id, moves).await.unwrap())
}

async fn segments_in_use_are_the_segments_of_staged_objects_only<C: Catalog>(catalog: &C) {
    assert!(catalog.segments_in_use().await.unwrap().is_empty());
    catalog.put_object(staged("a", 4, 1, 0)).await.unwrap();
    catalog.put_object(staged("b", 4, 1, 4)).await.unwrap();
    catalog.put_object(staged("c", 4, 7, 0)).await.unwrap();
    catalog.put_object(staged("d", 4, 3, 0)).await.unwrap();
    assert_eq!(
        catalog
            .segments_in_use()
            .await
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        [1, 3, 7]
    );
    migrate(catalog, &["a", "b"], [0, 1, 2]).await;
    catalog.delete_object("d").await.unwrap();
    assert_eq!(
        catalog
            .segments_in_use()
            .await
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        [7]
    );
}

async fn next_blob_id_never_repeats<C: Catalog>(catalog: &C) {
    let mut previous = 0;
    for _ in 0..50 {
        let id = catalog.next_blob_id().await.unwrap();
        assert!(id > previous, "{id} after {previous}");
        previous = id;
    }
    // An aborted blob's id is not handed out again either.
    let id = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(id, 0, [0, 1, 2], 8))
        .await
        .unwrap();
    catalog.abort_blob(id).await.unwrap();
    assert!(catalog.next_blob_id().await.unwrap() > id);
}

async fn reserve_blob_ids_through_raises_the_counter_above_ids_in_use_and_never_lowers_it<
    C: Catalog,
>(
    catalog: &C,
) {
    assert_eq!(catalog.next_blob_id().await.unwrap(), 1);
    // Ids 1..=9 found in use (stacks on the disks): the counter was 2, now 10.
    assert_eq!(catalog.reserve_blob_ids_through(9).await.unwrap(), Some(2));
    assert_eq!(catalog.next_blob_id().await.unwrap(), 10);
    // Already above: nothing changes, never lowered.
    assert_eq!(catalog.reserve_blob_ids_through(3).await.unwrap(), None);
    assert_eq!(catalog.reserve_blob_ids_through(10).await.unwrap(), None);
    assert_eq!(catalog.next_blob_id().await.unwrap(), 11);
    // An id whose successor cannot be stored is a limit, and changes nothing.
    for highest in [i64::MAX as u64, u64::MAX] {
        assert!(
            matches!(
                catalog.reserve_blob_ids_through(highest).await,
                Err(CatalogError::Limit(_))
            ),
            "{highest}"
        );
    }
    assert_eq!(catalog.next_blob_id().await.unwrap(), 12);
    // Ids up to near the storable maximum are fine.
    let highest = i64::MAX as u64 - 2;
    assert_eq!(
        catalog.reserve_blob_ids_through(highest).await.unwrap(),
        Some(13)
    );
    assert_eq!(catalog.next_blob_id().await.unwrap(), highest + 1);
}

async fn begin_commit_and_abort_follow_the_blob_lifecycle<C: Catalog>(catalog: &C) {
    let kept = catalog.next_blob_id().await.unwrap();
    let dropped = catalog.next_blob_id().await.unwrap();
    let mut record = writing_blob(kept, 4, [10, 11, 12], 100);
    record.live_bytes = 77; // ignored: a writing blob holds no objects yet
    catalog.begin_blob(record.clone()).await.unwrap();
    catalog
        .begin_blob(writing_blob(dropped, 4, [10, 11, 13], 50))
        .await
        .unwrap();
    record.live_bytes = 0;
    assert_eq!(catalog.blob(kept).await.unwrap(), Some(record.clone()));
    let writing = catalog
        .blobs_in_state(BlobState::Writing, 10)
        .await
        .unwrap();
    assert_eq!(
        writing.iter().map(|b| b.id).collect::<Vec<_>>(),
        [kept, dropped]
    );

    assert_eq!(catalog.commit_blob(kept, Vec::new()).await.unwrap(), 0);
    let committed = catalog.blob(kept).await.unwrap().unwrap();
    assert_eq!(committed.state, BlobState::Committed);
    assert_eq!(committed.live_bytes, 0);
    assert!(matches!(
        catalog.commit_blob(kept, Vec::new()).await,
        Err(CatalogError::BlobState {
            state: BlobState::Committed,
            expected: BlobState::Writing,
            ..
        })
    ));
    assert!(matches!(
        catalog.abort_blob(kept).await,
        Err(CatalogError::BlobState {
            state: BlobState::Committed,
            ..
        })
    ));

    catalog.abort_blob(dropped).await.unwrap();
    assert_eq!(catalog.blob(dropped).await.unwrap(), None);
    assert!(matches!(
        catalog.abort_blob(dropped).await,
        Err(CatalogError::UnknownBlob { .. })
    ));
    assert!(matches!(
        catalog.commit_blob(dropped, Vec::new()).await,
        Err(CatalogError::UnknownBlob { .. })
    ));
    assert_eq!(
        catalog
            .blobs_in_state(BlobState::Writing, 10)
            .await
            .unwrap(),
        Vec::new()
    );
    let committed_list = catalog
        .blobs_in_state(BlobState::Committed, 10)
        .await
        .unwrap();
    assert_eq!(committed_list, vec![committed]);
}

async fn begin_blob_refuses_ids_never_handed_out_duplicates_and_bad_disk_sets<C: Catalog>(
    catalog: &C,
) {
    let id = catalog.next_blob_id().await.unwrap();
    assert!(is_invalid(
        catalog
            .begin_blob(writing_blob(id + 1, 0, [0, 1, 2], 8))
            .await
    ));
    assert!(is_invalid(
        catalog.begin_blob(writing_blob(0, 0, [0, 1, 2], 8)).await
    ));
    assert!(is_invalid(
        catalog.begin_blob(writing_blob(id, 0, [0, 1, 1], 8)).await
    ));
    let mut short = writing_blob(id, 0, [0, 1, 2], 8);
    short.disks.pop();
    assert!(is_invalid(catalog.begin_blob(short).await));
    let mut committed = writing_blob(id, 0, [0, 1, 2], 8);
    committed.state = BlobState::Committed;
    assert!(matches!(
        catalog.begin_blob(committed).await,
        Err(CatalogError::BlobState { .. })
    ));
    let huge = writing_blob(id, 0, [0, 1, 2], u64::MAX);
    assert!(matches!(
        catalog.begin_blob(huge).await,
        Err(CatalogError::Limit(_))
    ));
    assert_eq!(catalog.blob(id).await.unwrap(), None);

    catalog
        .begin_blob(writing_blob(id, 0, [0, 1, 2], 8))
        .await
        .unwrap();
    assert!(is_invalid(
        catalog.begin_blob(writing_blob(id, 0, [3, 4, 5], 8)).await
    ));
    assert_eq!(catalog.blob(id).await.unwrap().unwrap().disks, [0, 1, 2]);
}

async fn commit_blob_moves_only_objects_still_at_from_and_sets_live_bytes<C: Catalog>(catalog: &C) {
    catalog.put_object(staged("kept", 4, 1, 0)).await.unwrap();
    catalog
        .put_object(staged("overwritten", 4, 1, 4))
        .await
        .unwrap();
    catalog
        .put_object(staged("deleted", 4, 1, 8))
        .await
        .unwrap();
    catalog
        .put_object(staged("also-kept", 3, 1, 12))
        .await
        .unwrap();
    let id = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(id, 2, [0, 1, 2], 16))
        .await
        .unwrap();
    // Meanwhile a client overwrites one object and deletes another.
    let newer = staged("overwritten", 9, 2, 0);
    catalog.put_object(newer.clone()).await.unwrap();
    catalog.delete_object("deleted").await.unwrap();

    let staged_at = |offset| ObjectLocation::Staged { segment: 1, offset };
    let moves = vec![
        Migration {
            key: "kept".into(),
            from: staged_at(0),
            blob_offset: 0,
        },
        Migration {
            key: "overwritten".into(),
            from: staged_at(4),
            blob_offset: 4,
        },
        Migration {
            key: "deleted".into(),
            from: staged_at(8),
            blob_offset: 8,
        },
        Migration {
            key: "also-kept".into(),
            from: staged_at(12),
            blob_offset: 12,
        },
        // Listed twice: moves once.
        Migration {
            key: "kept".into(),
            from: staged_at(0),
            blob_offset: 0,
        },
    ];
    assert_eq!(catalog.commit_blob(id, moves).await.unwrap(), 2);

    let kept = catalog.object("kept").await.unwrap().unwrap();
    assert_eq!(
        kept.location,
        ObjectLocation::Migrated {
            blob: id,
            offset: 0
        }
    );
    let also_kept = catalog.object("also-kept").await.unwrap().unwrap();
    assert_eq!(
        also_kept.location,
        ObjectLocation::Migrated {
            blob: id,
            offset: 12
        }
    );
    assert_eq!(catalog.object("overwritten").await.unwrap(), Some(newer));
    assert_eq!(catalog.object("deleted").await.unwrap(), None);
    let blob = catalog.blob(id).await.unwrap().unwrap();
    assert_eq!((blob.state, blob.live_bytes), (BlobState::Committed, 7));
    let staged_keys: Vec<String> = catalog
        .staged_objects(None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(staged_keys, ["overwritten"]);
}

async fn commit_blob_refuses_a_move_outside_the_blob_and_changes_nothing<C: Catalog>(catalog: &C) {
    catalog.put_object(staged("fits", 4, 1, 0)).await.unwrap();
    catalog.put_object(staged("spills", 4, 1, 4)).await.unwrap();
    let id = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(id, 0, [0, 1, 2], 7))
        .await
        .unwrap();
    let moves = vec![
        Migration {
            key: "fits".into(),
            from: ObjectLocation::Staged {
                segment: 1,
                offset: 0,
            },
            blob_offset: 0,
        },
        Migration {
            key: "spills".into(),
            from: ObjectLocation::Staged {
                segment: 1,
                offset: 4,
            },
            blob_offset: 4,
        },
    ];
    assert!(is_invalid(catalog.commit_blob(id, moves).await));
    assert_eq!(
        catalog.blob(id).await.unwrap().unwrap().state,
        BlobState::Writing
    );
    let fits = catalog.object("fits").await.unwrap().unwrap();
    assert_eq!(
        fits.location,
        ObjectLocation::Staged {
            segment: 1,
            offset: 0
        }
    );
    let too_far = vec![Migration {
        key: "fits".into(),
        from: ObjectLocation::Staged {
            segment: 1,
            offset: 0,
        },
        blob_offset: u64::MAX,
    }];
    assert!(matches!(
        catalog.commit_blob(id, too_far).await,
        Err(CatalogError::Limit(_))
    ));
    catalog.abort_blob(id).await.unwrap();
}

async fn deleting_or_overwriting_a_migrated_object_lowers_live_bytes<C: Catalog>(catalog: &C) {
    for (index, key) in ["a", "b", "c"].iter().enumerate() {
        catalog
            .put_object(staged(key, 4, 1, 4 * index as u64))
            .await
            .unwrap();
    }
    let (id, moved) = migrate(catalog, &["a", "b", "c"], [0, 1, 2]).await;
    assert_eq!(moved, 3);
    assert_eq!(catalog.blob(id).await.unwrap().unwrap().live_bytes, 12);
    let removed = catalog.delete_object("a").await.unwrap().unwrap();
    assert_eq!(
        removed.location,
        ObjectLocation::Migrated {
            blob: id,
            offset: 0
        }
    );
    assert_eq!(catalog.blob(id).await.unwrap().unwrap().live_bytes, 8);
    let replaced = catalog
        .put_object(staged("b", 100, 5, 0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        replaced.location,
        ObjectLocation::Migrated {
            blob: id,
            offset: 4
        }
    );
    assert_eq!(catalog.blob(id).await.unwrap().unwrap().live_bytes, 4);
    catalog.delete_object("c").await.unwrap();
    assert_eq!(catalog.blob(id).await.unwrap().unwrap().live_bytes, 0);
}

async fn compaction_moves_between_blobs_lower_the_old_blobs_live_bytes<C: Catalog>(catalog: &C) {
    for (index, key) in ["a", "b", "c"].iter().enumerate() {
        catalog
            .put_object(staged(key, 4, 1, 4 * index as u64))
            .await
            .unwrap();
    }
    let (old, _) = migrate(catalog, &["a", "b", "c"], [0, 1, 2]).await;
    catalog.delete_object("b").await.unwrap();
    // Compaction copies the live objects a and c into a new blob.
    let (new, moved) = migrate(catalog, &["a", "c"], [3, 4, 5]).await;
    assert_eq!(moved, 2);
    assert_eq!(catalog.blob(old).await.unwrap().unwrap().live_bytes, 0);
    assert_eq!(catalog.blob(new).await.unwrap().unwrap().live_bytes, 8);
    let c = catalog.object("c").await.unwrap().unwrap();
    assert_eq!(
        c.location,
        ObjectLocation::Migrated {
            blob: new,
            offset: 4
        }
    );
    catalog.remove_blob(old).await.unwrap();
    assert_eq!(catalog.blob(old).await.unwrap(), None);
}

async fn blobs_in_state_group_and_on_disk_page_by_id<C: Catalog>(catalog: &C) {
    let placements = [
        (1, [0, 1, 2]),
        (2, [3, 4, 5]),
        (1, [2, 6, 7]),
        (1, [8, 2, 9]),
        (2, [0, 4, 9]),
    ];
    let mut ids = Vec::new();
    for (group, disks) in placements {
        let id = catalog.next_blob_id().await.unwrap();
        catalog
            .begin_blob(writing_blob(id, group, disks, 8))
            .await
            .unwrap();
        ids.push(id);
    }
    catalog.commit_blob(ids[2], Vec::new()).await.unwrap();
    let id_list = |blobs: Vec<spinwise_catalog::BlobRecord>| {
        blobs.into_iter().map(|b| b.id).collect::<Vec<_>>()
    };
    assert_eq!(
        id_list(catalog.blobs_in_group(1, None, 10).await.unwrap()),
        [ids[0], ids[2], ids[3]]
    );
    assert_eq!(
        id_list(catalog.blobs_in_group(1, Some(ids[0]), 1).await.unwrap()),
        [ids[2]]
    );
    assert_eq!(
        id_list(catalog.blobs_in_group(2, Some(ids[4]), 10).await.unwrap()),
        Vec::<u64>::new()
    );
    assert_eq!(
        id_list(catalog.blobs_in_group(3, None, 10).await.unwrap()),
        Vec::<u64>::new()
    );
    assert_eq!(
        id_list(catalog.blobs_on_disk(2, None, 10).await.unwrap()),
        [ids[0], ids[2], ids[3]]
    );
    assert_eq!(
        id_list(catalog.blobs_on_disk(2, Some(ids[2]), 10).await.unwrap()),
        [ids[3]]
    );
    assert_eq!(
        id_list(catalog.blobs_on_disk(9, None, 1).await.unwrap()),
        [ids[3]]
    );
    assert_eq!(
        id_list(catalog.blobs_on_disk(9, Some(u64::MAX), 10).await.unwrap()),
        Vec::<u64>::new()
    );
    assert_eq!(
        id_list(
            catalog
                .blobs_in_state(BlobState::Committed, 10)
                .await
                .unwrap()
        ),
        [ids[2]]
    );
    assert_eq!(
        id_list(catalog.blobs_in_state(BlobState::Writing, 2).await.unwrap()),
        [ids[0], ids[1]]
    );
    let full = catalog.blobs_on_disk(6, None, 10).await.unwrap();
    assert_eq!(full, vec![catalog.blob(ids[2]).await.unwrap().unwrap()]);
}

async fn remove_blob_only_removes_committed_blobs_without_objects<C: Catalog>(catalog: &C) {
    catalog.put_object(staged("empty", 0, 1, 0)).await.unwrap();
    let (id, moved) = migrate(catalog, &["empty"], [0, 1, 2]).await;
    assert_eq!(moved, 1);
    // A zero-byte object still points into the blob: live_bytes is 0 but it is in use.
    assert!(is_invalid(catalog.remove_blob(id).await));
    catalog.delete_object("empty").await.unwrap();
    catalog.remove_blob(id).await.unwrap();
    assert!(matches!(
        catalog.remove_blob(id).await,
        Err(CatalogError::UnknownBlob { .. })
    ));
    let writing = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(writing, 0, [0, 1, 2], 8))
        .await
        .unwrap();
    assert!(matches!(
        catalog.remove_blob(writing).await,
        Err(CatalogError::BlobState {
            state: BlobState::Writing,
            expected: BlobState::Committed,
            ..
        })
    ));
}

async fn unhealthy_disks_lists_disks_marked_failed<C: Catalog>(catalog: &C) {
    assert_eq!(catalog.unhealthy_disks().await.unwrap(), Vec::new());
    catalog
        .set_disk_health(9, DiskHealth::Failed)
        .await
        .unwrap();
    catalog
        .set_disk_health(3, DiskHealth::Failed)
        .await
        .unwrap();
    catalog
        .set_disk_health(5, DiskHealth::Healthy)
        .await
        .unwrap();
    let failed = |disk| DiskRecord {
        disk,
        health: DiskHealth::Failed,
    };
    assert_eq!(
        catalog.unhealthy_disks().await.unwrap(),
        [failed(3), failed(9)]
    );
    catalog
        .set_disk_health(9, DiskHealth::Healthy)
        .await
        .unwrap();
    assert_eq!(catalog.unhealthy_disks().await.unwrap(), [failed(3)]);
}

async fn rebuild_tasks_are_idempotent_and_complete_rebuild_moves_the_column<C: Catalog>(
    catalog: &C,
) {
    catalog.put_object(staged("a", 4, 1, 0)).await.unwrap();
    let (first, _) = migrate(catalog, &["a"], [0, 1, 2]).await;
    let (second, _) = migrate(catalog, &[], [2, 3, 4]).await;
    catalog
        .set_disk_health(2, DiskHealth::Failed)
        .await
        .unwrap();
    let tasks = vec![
        RebuildTask {
            blob: second,
            column: 0,
            failed_disk: 2,
        },
        RebuildTask {
            blob: first,
            column: 2,
            failed_disk: 2,
        },
    ];
    catalog.add_rebuild_tasks(tasks.clone()).await.unwrap();
    catalog.add_rebuild_tasks(tasks.clone()).await.unwrap();
    catalog
        .add_rebuild_tasks(vec![tasks[1].clone(), tasks[1].clone()])
        .await
        .unwrap();
    let mut sorted = tasks.clone();
    sorted.sort();
    assert_eq!(catalog.rebuild_tasks(10).await.unwrap(), sorted);
    assert_eq!(catalog.rebuild_tasks(1).await.unwrap(), sorted[..1]);

    catalog
        .complete_rebuild(sorted[0].clone(), 7)
        .await
        .unwrap();
    assert_eq!(catalog.blob(first).await.unwrap().unwrap().disks, [0, 1, 7]);
    assert_eq!(catalog.rebuild_tasks(10).await.unwrap(), sorted[1..]);
    let on_seven: Vec<u64> = catalog
        .blobs_on_disk(7, None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(on_seven, [first]);
    let on_two: Vec<u64> = catalog
        .blobs_on_disk(2, None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(on_two, [second]);
    // Done once: doing it again is refused.
    assert!(is_invalid(
        catalog.complete_rebuild(sorted[0].clone(), 8).await
    ));
    // Adding a finished task again (its column is no longer on the failed disk) is refused.
    assert!(is_invalid(
        catalog.add_rebuild_tasks(vec![sorted[0].clone()]).await
    ));
}

async fn rebuild_requests_that_break_the_rules_are_refused<C: Catalog>(catalog: &C) {
    let (blob, _) = migrate(catalog, &[], [0, 1, 2]).await;
    let task = RebuildTask {
        blob,
        column: 1,
        failed_disk: 1,
    };
    // Disk 1 is still healthy.
    assert!(is_invalid(
        catalog.add_rebuild_tasks(vec![task.clone()]).await
    ));
    catalog
        .set_disk_health(1, DiskHealth::Failed)
        .await
        .unwrap();
    catalog
        .set_disk_health(6, DiskHealth::Failed)
        .await
        .unwrap();
    let wrong_disk = RebuildTask {
        blob,
        column: 0,
        failed_disk: 1,
    };
    let no_column = RebuildTask {
        blob,
        column: 3,
        failed_disk: 1,
    };
    let no_blob = RebuildTask {
        blob: blob + 100,
        column: 0,
        failed_disk: 1,
    };
    // One bad task refuses the whole batch.
    assert!(is_invalid(
        catalog
            .add_rebuild_tasks(vec![task.clone(), wrong_disk])
            .await
    ));
    assert!(is_invalid(catalog.add_rebuild_tasks(vec![no_column]).await));
    assert!(matches!(
        catalog.add_rebuild_tasks(vec![no_blob]).await,
        Err(CatalogError::UnknownBlob { .. })
    ));
    assert_eq!(catalog.rebuild_tasks(10).await.unwrap(), Vec::new());
    let writing = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(writing, 0, [1, 4, 5], 8))
        .await
        .unwrap();
    let on_writing = RebuildTask {
        blob: writing,
        column: 0,
        failed_disk: 1,
    };
    assert!(matches!(
        catalog.add_rebuild_tasks(vec![on_writing]).await,
        Err(CatalogError::BlobState { .. })
    ));
    catalog.abort_blob(writing).await.unwrap();

    catalog.add_rebuild_tasks(vec![task.clone()]).await.unwrap();
    // Onto a disk the blob already uses, or onto a failed disk: refused.
    assert!(is_invalid(catalog.complete_rebuild(task.clone(), 2).await));
    assert!(is_invalid(catalog.complete_rebuild(task.clone(), 6).await));
    let mismatched = RebuildTask {
        failed_disk: 9,
        ..task.clone()
    };
    assert!(is_invalid(catalog.complete_rebuild(mismatched, 8).await));
    assert_eq!(
        catalog.rebuild_tasks(10).await.unwrap(),
        std::slice::from_ref(&task)
    );
    assert_eq!(catalog.blob(blob).await.unwrap().unwrap().disks, [0, 1, 2]);
    catalog.complete_rebuild(task, 8).await.unwrap();
}

async fn stats_count_objects_bytes_blobs_and_pending_rebuilds<C: Catalog>(catalog: &C) {
    assert_eq!(catalog.stats().await.unwrap(), CatalogStats::default());
    catalog.put_object(staged("a", 4, 1, 0)).await.unwrap();
    catalog.put_object(staged("b", 4, 1, 4)).await.unwrap();
    catalog.put_object(staged("c", 10, 2, 0)).await.unwrap();
    let (blob, _) = migrate(catalog, &["a", "b"], [0, 1, 2]).await;
    let writing = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(writing, 0, [3, 4, 5], 8))
        .await
        .unwrap();
    catalog
        .set_disk_health(0, DiskHealth::Failed)
        .await
        .unwrap();
    catalog
        .add_rebuild_tasks(vec![RebuildTask {
            blob,
            column: 0,
            failed_disk: 0,
        }])
        .await
        .unwrap();
    let expected = CatalogStats {
        objects: 3,
        bytes: 18,
        staged_objects: 1,
        staged_bytes: 10,
        warm_objects: 0,
        warm_bytes: 0,
        blobs: 2,
        rebuild_pending: 1,
        dead_bytes: 0,
    };
    assert_eq!(catalog.stats().await.unwrap(), expected);
}

/// Commits a fresh empty blob in `group` and returns its id.
async fn committed_blob<C: Catalog>(catalog: &C, group: u32) -> u64 {
    let id = catalog.next_blob_id().await.unwrap();
    let disks = [id as u32 % 8, (id as u32 + 1) % 8, (id as u32 + 2) % 8];
    catalog
        .begin_blob(writing_blob(id, group, disks, 10))
        .await
        .unwrap();
    catalog.commit_blob(id, Vec::new()).await.unwrap();
    id
}

async fn scrub_due_lists_committed_blobs_of_a_group_most_overdue_first<C: Catalog>(catalog: &C) {
    let a = committed_blob(catalog, 1).await;
    let b = committed_blob(catalog, 1).await;
    let c = committed_blob(catalog, 1).await;
    let other_group = committed_blob(catalog, 2).await;
    let writing = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(writing, 1, [5, 6, 7], 10))
        .await
        .unwrap();
    assert_eq!(catalog.last_scrub_in_group(1).await.unwrap(), None);
    catalog.record_scrub(a, 2_000).await.unwrap();
    catalog.record_scrub(c, 1_000).await.unwrap();
    catalog.record_scrub(other_group, 500).await.unwrap();
    let order = |entries: Vec<spinwise_catalog::ScrubEntry>| {
        entries
            .into_iter()
            .map(|entry| (entry.blob.id, entry.verified_unix_ms))
            .collect::<Vec<_>>()
    };
    // Never verified first, then the oldest verification; writing blobs and other groups never.
    assert_eq!(
        order(catalog.scrub_due(1, 10_000, 10).await.unwrap()),
        [(b, None), (c, Some(1_000)), (a, Some(2_000))]
    );
    assert_eq!(
        order(catalog.scrub_due(1, 2_000, 10).await.unwrap()),
        [(b, None), (c, Some(1_000))]
    );
    assert_eq!(
        order(catalog.scrub_due(1, 10_000, 1).await.unwrap()),
        [(b, None)]
    );
    assert_eq!(catalog.last_scrub_in_group(1).await.unwrap(), Some(2_000));
    assert_eq!(catalog.last_scrub_in_group(2).await.unwrap(), Some(500));
    // A later verification moves the blob to the back; removing a blob forgets it.
    catalog.record_scrub(b, 3_000).await.unwrap();
    assert_eq!(
        order(catalog.scrub_due(1, 10_000, 10).await.unwrap()),
        [(c, Some(1_000)), (a, Some(2_000)), (b, Some(3_000))]
    );
    catalog.remove_blob(b).await.unwrap();
    assert_eq!(catalog.last_scrub_in_group(1).await.unwrap(), Some(2_000));
    let full = catalog.scrub_due(1, 10_000, 10).await.unwrap();
    assert_eq!(full[0].blob, catalog.blob(c).await.unwrap().unwrap());
}

async fn record_scrub_refuses_unknown_and_writing_blobs_and_non_positive_times<C: Catalog>(
    catalog: &C,
) {
    let committed = committed_blob(catalog, 0).await;
    let writing = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(writing, 0, [5, 6, 7], 10))
        .await
        .unwrap();
    assert!(matches!(
        catalog.record_scrub(99, 1_000).await,
        Err(CatalogError::UnknownBlob { blob: 99 })
    ));
    assert!(matches!(
        catalog.record_scrub(writing, 1_000).await,
        Err(CatalogError::BlobState {
            state: BlobState::Writing,
            expected: BlobState::Committed,
            ..
        })
    ));
    assert!(is_invalid(catalog.record_scrub(committed, 0).await));
    assert!(is_invalid(catalog.record_scrub(committed, -5).await));
    assert_eq!(catalog.last_scrub_in_group(0).await.unwrap(), None);
}

async fn compaction_moves_live_objects_between_blobs_unless_deleted_and_dead_bytes_count_the_rest<
    C: Catalog,
>(
    catalog: &C,
) {
    for (offset, key) in ["a", "b", "c", "d"].iter().enumerate() {
        catalog
            .put_object(staged(key, 4, 1, 4 * offset as u64))
            .await
            .unwrap();
    }
    let (old, _) = migrate(catalog, &["a", "b", "c", "d"], [0, 1, 2]).await;
    catalog.delete_object("b").await.unwrap();
    assert_eq!(catalog.stats().await.unwrap().dead_bytes, 4);
    // Paging by (offset, key): after "a" at 0 come "c" at 8 and "d" at 12.
    let first = catalog.objects_in_blob(old, None, 1).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].key, "a");
    let rest = catalog
        .objects_in_blob(old, Some((0, "a")), 10)
        .await
        .unwrap();
    let keys: Vec<&str> = rest.iter().map(|object| object.key.as_str()).collect();
    assert_eq!(keys, ["c", "d"]);
    // Compaction: a new blob of the three live objects; "d" is deleted before the commit.
    let new = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(new, 0, [0, 1, 2], 12))
        .await
        .unwrap();
    let moves: Vec<Migration> = ["a", "c", "d"]
        .iter()
        .enumerate()
        .map(|(index, key)| Migration {
            key: key.to_string(),
            from: ObjectLocation::Migrated {
                blob: old,
                offset: [0, 8, 12][index],
            },
            blob_offset: 4 * index as u64,
        })
        .collect();
    catalog.delete_object("d").await.unwrap();
    assert_eq!(catalog.commit_blob(new, moves).await.unwrap(), 2);
    let old_record = catalog.blob(old).await.unwrap().unwrap();
    assert_eq!(old_record.live_bytes, 0);
    assert_eq!(catalog.blob(new).await.unwrap().unwrap().live_bytes, 8);
    assert_eq!(
        catalog.object("c").await.unwrap().unwrap().location,
        ObjectLocation::Migrated {
            blob: new,
            offset: 4
        }
    );
    assert!(
        catalog
            .objects_in_blob(old, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // The old blob is all dead (16) and the new one has 4 dead bytes (d's slot).
    assert_eq!(catalog.stats().await.unwrap().dead_bytes, 20);
    catalog.remove_blob(old).await.unwrap();
    assert_eq!(catalog.stats().await.unwrap().dead_bytes, 4);
    assert!(catalog.integrity_check().await.unwrap().problems.is_empty());
}

fn keys_of(objects: Vec<ObjectRecord>) -> Vec<String> {
    objects.into_iter().map(|object| object.key).collect()
}

async fn warm_objects_stay_staged_and_are_listed_oldest_first_by_tier<C: Catalog>(catalog: &C) {
    // Sizes pick the creation times (see `common::staged`): "w-new" is younger than "w-old".
    catalog.put_object(warm("w-new", 9, 1, 100)).await.unwrap();
    catalog.put_object(warm("w-old", 2, 1, 200)).await.unwrap();
    catalog.put_object(staged("cold", 4, 1, 300)).await.unwrap();
    let in_tier = |tier| catalog.staged_objects(Some(tier), 10);
    assert_eq!(
        keys_of(in_tier(Tier::Warm).await.unwrap()),
        ["w-new", "w-old"]
    );
    assert_eq!(keys_of(in_tier(Tier::Cold).await.unwrap()), ["cold"]);
    assert_eq!(
        keys_of(catalog.warm_objects(10).await.unwrap()),
        ["w-old", "w-new"]
    );
    assert_eq!(keys_of(catalog.warm_objects(1).await.unwrap()), ["w-old"]);
    let stats = catalog.stats().await.unwrap();
    assert_eq!((stats.warm_objects, stats.warm_bytes), (2, 11));
    assert_eq!((stats.staged_objects, stats.staged_bytes), (3, 15));
    // A migration naming every staged object moves only the cold one.
    let blob = catalog.next_blob_id().await.unwrap();
    catalog
        .begin_blob(writing_blob(blob, 0, [0, 1, 2], 15))
        .await
        .unwrap();
    let moves = [("w-new", 100, 0), ("w-old", 200, 9), ("cold", 300, 11)]
        .map(|(key, offset, blob_offset)| Migration {
            key: key.into(),
            from: ObjectLocation::Staged { segment: 1, offset },
            blob_offset,
        })
        .to_vec();
    assert_eq!(catalog.commit_blob(blob, moves).await.unwrap(), 1);
    assert_eq!(catalog.stats().await.unwrap().warm_objects, 2);
    assert!(matches!(
        catalog.object("w-old").await.unwrap().unwrap().location,
        ObjectLocation::Staged { .. }
    ));
}

async fn demote_changes_only_the_version_it_was_decided_on<C: Catalog>(catalog: &C) {
    catalog.put_object(warm("k", 5, 1, 100)).await.unwrap();
    let first = ObjectLocation::Staged {
        segment: 1,
        offset: 100,
    };
    // A newer warm version replaced it: the demotion decided on the old one does nothing.
    catalog.put_object(warm("k", 5, 2, 32)).await.unwrap();
    assert!(!catalog.demote("k", &first).await.unwrap());
    assert_eq!(catalog.object("k").await.unwrap().unwrap().tier, Tier::Warm);
    let current = ObjectLocation::Staged {
        segment: 2,
        offset: 32,
    };
    assert!(catalog.demote("k", &current).await.unwrap());
    assert_eq!(catalog.object("k").await.unwrap().unwrap().tier, Tier::Cold);
    // Demoting twice, or a key that does not exist, changes nothing.
    assert!(!catalog.demote("k", &current).await.unwrap());
    assert!(!catalog.demote("absent", &current).await.unwrap());
    assert_eq!(
        keys_of(catalog.staged_objects(Some(Tier::Cold), 10).await.unwrap()),
        ["k"]
    );
    assert_eq!(catalog.stats().await.unwrap().warm_bytes, 0);
}

async fn demote_at_a_place_above_i64_max_matches_nothing_and_is_no_error<C: Catalog>(catalog: &C) {
    let largest = i64::MAX as u64;
    catalog
        .put_object(warm("k", 5, largest, largest))
        .await
        .unwrap();
    // Nothing is ever stored above i64::MAX, so no object is there: no change, no error (as
    // `restage` treats such a `from`), whichever number is too large.
    for (segment, offset) in [(largest + 1, 0), (0, largest + 1), (u64::MAX, u64::MAX)] {
        let place = ObjectLocation::Staged { segment, offset };
        assert!(!catalog.demote("k", &place).await.unwrap());
        assert!(!catalog.demote("absent", &place).await.unwrap());
    }
    assert_eq!(catalog.object("k").await.unwrap().unwrap().tier, Tier::Warm);
    // i64::MAX itself is a place like any other.
    let place = ObjectLocation::Staged {
        segment: largest,
        offset: largest,
    };
    assert!(catalog.demote("k", &place).await.unwrap());
    assert_eq!(catalog.object("k").await.unwrap().unwrap().tier, Tier::Cold);
}

async fn segments<C: Catalog>(catalog: &C) -> Vec<u64> {
    catalog
        .segments_in_use()
        .await
        .unwrap()
        .into_iter()
        .collect()
}

async fn restage_moves_only_the_version_it_was_decided_on<C: Catalog>(catalog: &C) {
    catalog.put_object(warm("k", 5, 1, 100)).await.unwrap();
    // A newer version replaced it: the move decided on the old one does nothing.
    let newer = warm("k", 7, 2, 32);
    catalog.put_object(newer.clone()).await.unwrap();
    assert!(!catalog.restage("k", (1, 100), (3, 0)).await.unwrap());
    assert_eq!(catalog.object("k").await.unwrap(), Some(newer.clone()));
    assert_eq!(segments(catalog).await, [2]);

    // The current version moves, keeping tier, size, hash and creation time.
    assert!(catalog.restage("k", (2, 32), (3, 0)).await.unwrap());
    let moved = ObjectRecord {
        location: ObjectLocation::Staged {
            segment: 3,
            offset: 0,
        },
        ..newer
    };
    assert_eq!(catalog.object("k").await.unwrap(), Some(moved.clone()));
    assert_eq!(segments(catalog).await, [3]);
    // Its old place no longer names it: moving from there again does nothing.
    assert!(!catalog.restage("k", (2, 32), (4, 0)).await.unwrap());
    assert_eq!(catalog.object("k").await.unwrap(), Some(moved));

    // A cold object moves the same way and stays cold.
    catalog.put_object(staged("c", 4, 5, 8)).await.unwrap();
    assert!(catalog.restage("c", (5, 8), (3, 5)).await.unwrap());
    let cold = catalog.object("c").await.unwrap().unwrap();
    assert_eq!(cold, staged("c", 4, 3, 5));
    assert_eq!(segments(catalog).await, [3]);

    // A migrated object is staged nowhere, and an absent key is nowhere: neither moves.
    catalog.put_object(staged("m", 4, 1, 0)).await.unwrap();
    migrate(catalog, &["m"], [0, 1, 2]).await;
    let migrated = catalog.object("m").await.unwrap();
    assert!(!catalog.restage("m", (1, 0), (6, 0)).await.unwrap());
    assert_eq!(catalog.object("m").await.unwrap(), migrated);
    assert!(!catalog.restage("absent", (1, 0), (6, 0)).await.unwrap());
    assert_eq!(catalog.object("absent").await.unwrap(), None);
    assert_eq!(segments(catalog).await, [3]);
    let stats = catalog.stats().await.unwrap();
    assert_eq!((stats.warm_objects, stats.warm_bytes), (1, 7));
    assert_eq!((stats.staged_objects, stats.staged_bytes), (2, 11));
}

async fn restage_refuses_a_place_above_i64_max_and_changes_nothing<C: Catalog>(catalog: &C) {
    let record = staged("k", 5, 1, 0);
    catalog.put_object(record.clone()).await.unwrap();
    let above = i64::MAX as u64 + 1;
    // Refused before anything is looked at: for a present key, an absent one, any `from`.
    for key in ["k", "absent"] {
        for to in [(above, 0), (0, above), (u64::MAX, u64::MAX)] {
            for from in [(1, 0), (above, 0)] {
                let result = catalog.restage(key, from, to).await;
                assert!(matches!(result, Err(CatalogError::Limit(_))), "{result:?}");
            }
        }
    }
    assert_eq!(catalog.object("k").await.unwrap(), Some(record.clone()));
    // A `from` above i64::MAX names no record: nothing moves, and that is no error.
    assert!(!catalog.restage("k", (above, 0), (2, 0)).await.unwrap());
    assert!(!catalog.restage("k", (1, above), (2, 0)).await.unwrap());
    assert_eq!(catalog.object("k").await.unwrap(), Some(record));
    // i64::MAX itself fits.
    let largest = i64::MAX as u64;
    assert!(
        catalog
            .restage("k", (1, 0), (largest, largest))
            .await
            .unwrap()
    );
    assert_eq!(
        catalog.object("k").await.unwrap().unwrap(),
        staged("k", 5, largest, largest)
    );
}

async fn staged_in_segment_lists_one_segment_in_offset_order_after_a_position<C: Catalog>(
    catalog: &C,
) {
    // Segment 2 holds, in log order: e@0, w@5 (warm), a@10 and b@10 (a tie: key order).
    catalog.put_object(staged("a", 3, 2, 10)).await.unwrap();
    catalog.put_object(staged("b", 0, 2, 10)).await.unwrap();
    catalog.put_object(warm("w", 5, 2, 5)).await.unwrap();
    catalog.put_object(staged("e", 5, 2, 0)).await.unwrap();
    catalog.put_object(staged("c", 1, 1, 3)).await.unwrap();
    // Migrated out of segment 2: no longer in it.
    catalog.put_object(staged("m", 4, 2, 20)).await.unwrap();
    migrate(catalog, &["m"], [0, 1, 2]).await;

    let in_segment = |segment, after, limit| catalog.staged_in_segment(segment, after, limit);
    let all = in_segment(2, None, 100).await.unwrap();
    assert_eq!(keys_of(all.clone()), ["e", "w", "a", "b"]);
    assert_eq!(all[0], staged("e", 5, 2, 0));
    assert_eq!(all[1], warm("w", 5, 2, 5));
    assert_eq!(keys_of(in_segment(2, None, 2).await.unwrap()), ["e", "w"]);
    assert!(in_segment(2, None, 0).await.unwrap().is_empty());
    // Strictly after (offset, key).
    let after = |offset, key| Some((offset, key));
    assert_eq!(
        keys_of(in_segment(2, after(0, "e"), 100).await.unwrap()),
        ["w", "a", "b"]
    );
    assert_eq!(
        keys_of(in_segment(2, after(5, ""), 100).await.unwrap()),
        ["w", "a", "b"]
    );
    assert_eq!(
        keys_of(in_segment(2, after(5, "w"), 1).await.unwrap()),
        ["a"]
    );
    assert_eq!(
        keys_of(in_segment(2, after(10, "a"), 100).await.unwrap()),
        ["b"]
    );
    assert!(in_segment(2, after(10, "b"), 100).await.unwrap().is_empty());
    assert!(
        in_segment(2, after(u64::MAX, ""), 100)
            .await
            .unwrap()
            .is_empty()
    );
    // Other segments: their own objects only; none at all above i64::MAX.
    assert_eq!(keys_of(in_segment(1, None, 100).await.unwrap()), ["c"]);
    assert!(in_segment(7, None, 100).await.unwrap().is_empty());
    assert!(in_segment(u64::MAX, None, 100).await.unwrap().is_empty());
    assert!(
        in_segment(i64::MAX as u64 + 1, None, 100)
            .await
            .unwrap()
            .is_empty()
    );
    // A restaged object leaves its old segment's listing for its new one.
    assert!(catalog.restage("w", (2, 5), (1, 0)).await.unwrap());
    assert_eq!(
        keys_of(in_segment(2, None, 100).await.unwrap()),
        ["e", "a", "b"]
    );
    assert_eq!(keys_of(in_segment(1, None, 100).await.unwrap()), ["w", "c"]);
}

async fn segment_usage_counts_objects_live_bytes_and_warm_objects_per_segment<C: Catalog>(
    catalog: &C,
) {
    assert!(catalog.segment_usage(None, 100).await.unwrap().is_empty());
    catalog.put_object(staged("a", 4, 3, 0)).await.unwrap();
    catalog.put_object(warm("b", 6, 3, 4)).await.unwrap();
    catalog.put_object(warm("c", 1, 1, 0)).await.unwrap();
    catalog.put_object(staged("d", 10, 7, 0)).await.unwrap();
    // An empty object still counts as an object.
    catalog.put_object(staged("z", 0, 7, 10)).await.unwrap();
    // A migrated object is in no segment.
    catalog.put_object(staged("m", 4, 1, 8)).await.unwrap();
    migrate(catalog, &["m"], [0, 1, 2]).await;

    let usage = |segment, objects, live_bytes, warm_objects| SegmentUsage {
        segment,
        objects,
        live_bytes,
        warm_objects,
    };
    assert_eq!(
        catalog.segment_usage(None, 100).await.unwrap(),
        [usage(1, 1, 1, 1), usage(3, 2, 10, 1), usage(7, 2, 10, 0)]
    );
    assert_eq!(
        catalog.segment_usage(None, 2).await.unwrap(),
        [usage(1, 1, 1, 1), usage(3, 2, 10, 1)]
    );
    assert!(catalog.segment_usage(None, 0).await.unwrap().is_empty());
    // Pages: the segments after the last one listed, none past the last or past i64::MAX.
    assert_eq!(
        catalog.segment_usage(Some(1), 1).await.unwrap(),
        [usage(3, 2, 10, 1)]
    );
    assert_eq!(
        catalog.segment_usage(Some(3), 100).await.unwrap(),
        [usage(7, 2, 10, 0)]
    );
    assert_eq!(
        catalog.segment_usage(Some(2), 100).await.unwrap(),
        [usage(3, 2, 10, 1), usage(7, 2, 10, 0)]
    );
    assert!(
        catalog
            .segment_usage(Some(7), 100)
            .await
            .unwrap()
            .is_empty()
    );
    let above = i64::MAX as u64 + 1;
    assert!(
        catalog
            .segment_usage(Some(above), 100)
            .await
            .unwrap()
            .is_empty()
    );

    // The rows follow restages, demotions and deletes.
    assert!(catalog.restage("d", (7, 0), (3, 16)).await.unwrap());
    assert!(
        catalog
            .demote(
                "b",
                &ObjectLocation::Staged {
                    segment: 3,
                    offset: 4
                }
            )
            .await
            .unwrap()
    );
    catalog.delete_object("c").await.unwrap();
    assert_eq!(
        catalog.segment_usage(None, 100).await.unwrap(),
        [usage(3, 3, 20, 0), usage(7, 1, 0, 0)]
    );
    // The rows agree with segments_in_use and with stats' staged totals.
    let rows = catalog.segment_usage(None, 100).await.unwrap();
    let listed: Vec<u64> = rows.iter().map(|row| row.segment).collect();
    assert_eq!(listed, segments(catalog).await);
    let stats = catalog.stats().await.unwrap();
    assert_eq!(
        rows.iter().map(|row| row.objects).sum::<u64>(),
        stats.staged_objects
    );
    assert_eq!(
        rows.iter().map(|row| row.live_bytes).sum::<u64>(),
        stats.staged_bytes
    );
}

async fn a_put_that_takes_the_objects_above_i64_max_bytes_is_refused<C: Catalog>(catalog: &C) {
    // The catalog holds at most i64::MAX bytes of objects in all (the SQLite catalog keeps the
    // total), so no segment can sum above it either: the PUT that would is refused first.
    let largest = i64::MAX as u64;
    catalog
        .put_object(staged("a", largest - 1, 1, 0))
        .await
        .unwrap();
    catalog.put_object(staged("b", 1, 2, 0)).await.unwrap();
    let refused = catalog.put_object(staged("c", 1, 2, 1)).await;
    assert!(
        matches!(&refused, Err(CatalogError::Limit(message)) if message.contains("above its maximum")),
        "{refused:?}"
    );
    assert_eq!(
        catalog.object("c").await.unwrap(),
        None,
        "a refused PUT writes nothing"
    );
    // Replacing an object counts only the difference.
    catalog
        .put_object(staged("a", largest - 1, 1, 8))
        .await
        .unwrap();
    assert_eq!(catalog.stats().await.unwrap().bytes, largest);
    assert_eq!(
        catalog.segment_usage(None, 1).await.unwrap(),
        [SegmentUsage {
            segment: 1,
            objects: 1,
            live_bytes: largest - 1,
            warm_objects: 0,
        }]
    );
}
