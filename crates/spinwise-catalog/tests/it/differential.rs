//! Differential test: random operation sequences run against SqliteCatalog and MemoryCatalog
//! (the reference model) must get identical answers, errors included, call by call; after the
//! sequence both pass the integrity check and a reopened SQLite catalog still answers the same.
//!
//! Operations name keys, blobs and tasks by small indices so sequences hit the interesting
//! cases often: replacing, deleting and listing around multi-byte prefixes, ids handed out or
//! not, stale and current migration sources, rebuild tasks on failed and healthy disks.

use crate::common;

use common::{runtime, staged, writing_blob};
use proptest::prelude::*;
use spinwise_catalog::{
    BlobId, BlobState, Catalog, DiskHealth, MemoryCatalog, Migration, ObjectLocation, RebuildTask,
    SqliteCatalog, Tier,
};

const KEYS: [&str; 10] = [
    "",
    "a",
    "a/b",
    "a/c",
    "ab",
    "\u{ff}",
    "\u{ff}x",
    "\u{10ffff}",
    "\u{10ffff}a",
    "é",
];
const PREFIXES: [&str; 8] = ["", "a", "a/", "\u{ff}", "\u{10ffff}", "é", "z", "a/b"];

#[derive(Clone, Debug)]
enum Op {
    Put {
        key: usize,
        size_bytes: u64,
        segment: u64,
        offset: u64,
        warm: bool,
    },
    Get {
        key: usize,
    },
    Delete {
        key: usize,
    },
    List {
        prefix: usize,
        after: Option<usize>,
        limit: u32,
    },
    /// Staged objects of every tier (`None`), or only warm (`Some(true)`) or cold ones.
    Staged {
        warm: Option<bool>,
        limit: u32,
    },
    /// Warm objects, oldest first.
    WarmOldest {
        limit: u32,
    },
    /// Demotes a key at its current location, or at a made-up stale one (now and then above
    /// i64::MAX, which matches nothing and is no error).
    Demote {
        key: usize,
        current: bool,
        above: bool,
    },
    Segments,
    /// Moves a key's record from its current place (`from` = None) or from a random one (stale,
    /// or another object's, or now and then above i64::MAX) to `to`; a `to` above i64::MAX
    /// occurs now and then too (refused with Limit).
    Restage {
        key: usize,
        from: Option<(u64, u64)>,
        to: (u64, u64),
    },
    /// Staged objects of a segment, after (offset, key) when given.
    InSegment {
        segment: u64,
        after: Option<(u64, usize)>,
        limit: u32,
    },
    /// Segment usage after a segment when given (0..5, as segments are drawn; now and then
    /// above i64::MAX).
    SegmentUsage {
        after: Option<u64>,
        limit: u32,
    },
    NextBlobId,
    /// Blob ids are `last handed out - back` (so 0, duplicates and unknown ids occur).
    Begin {
        back: u64,
        group: u32,
        disks: [u32; 3],
        size_bytes: u64,
    },
    /// A writing blob (the `pick`-th, or an unknown id when there is none). Each move: key,
    /// whether `from` is the object's current location (else a stale one), offset.
    Commit {
        pick: usize,
        moves: Vec<(usize, bool, u64)>,
    },
    /// The migrator's whole step: a fresh id, a blob sized for `keys` plus `slack_bytes`, and a
    /// commit moving them from where they are now, packed from offset 0.
    Migrate {
        keys: Vec<usize>,
        group: u32,
        disks: [u32; 3],
        slack_bytes: u64,
    },
    /// The `pick`-th writing blob (or an unknown id).
    Abort {
        pick: usize,
    },
    /// The `pick`-th committed blob (or an unknown id).
    Remove {
        pick: usize,
    },
    /// The store's reaction to a failed disk: mark it failed, add a task for each column on it.
    FailDisk {
        disk: u32,
    },
    Blob {
        back: u64,
    },
    InState {
        committed: bool,
        limit: u32,
    },
    Dead {
        group: u32,
        after: Option<u64>,
        limit: u32,
    },
    InGroup {
        group: u32,
        after: Option<BlobId>,
        limit: u32,
    },
    OnDisk {
        disk: u32,
        after: Option<BlobId>,
        limit: u32,
    },
    Health {
        disk: u32,
        failed: bool,
    },
    /// Objects in a blob (by `back`), after (offset, key) when given.
    InBlob {
        back: u64,
        after: Option<(u64, usize)>,
        limit: u32,
    },
    Unhealthy,
    /// Each task: blob back, column, and the failed disk (None = the column's current disk).
    AddTasks {
        tasks: Vec<(u64, u32, Option<u32>)>,
    },
    Tasks {
        limit: u32,
    },
    /// Completes the `index`-th pending task (or a made-up one when none is pending); disks 8..12
    /// hold no blob yet, so they are likely rebuild targets.
    Complete {
        index: usize,
        new_disk: u32,
    },
    Stats,
    DiskUsage,
    /// Scrub bookkeeping: a blob (by `back`) verified at `at_unix_ms` (0 and negatives occur).
    RecordScrub {
        back: u64,
        at_unix_ms: i64,
    },
    ScrubDue {
        group: u32,
        before_unix_ms: i64,
        limit: u32,
    },
    LastScrub {
        group: u32,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    let back = 0u64..3;
    let limit = 0u32..6;
    // A place in the staging log: mostly where Put puts objects, rarely one no catalog stores.
    let above = i64::MAX as u64 + 1;
    let position = prop_oneof![
        9 => (0u64..4, 0u64..4),
        1 => prop_oneof![Just((above, 0)), Just((0, above)), Just((u64::MAX, u64::MAX))],
    ];
    // Mostly distinct disks (a valid blob), sometimes a random triple (maybe a repeat).
    let disks = prop_oneof![
        3 => (0u32..8).prop_map(|disk| [disk, (disk + 1) % 8, (disk + 3) % 8]),
        1 => [0u32..8, 0u32..8, 0u32..8],
    ];
    prop_oneof![
        4 => (key.clone(), 0u64..6, 0u64..4, 0u64..4, proptest::bool::weighted(0.4)).prop_map(|(key, size_bytes, segment, offset, warm)| Op::Put { key, size_bytes, segment, offset, warm }),
        1 => key.clone().prop_map(|key| Op::Get { key }),
        2 => key.clone().prop_map(|key| Op::Delete { key }),
        2 => (0..PREFIXES.len(), proptest::option::of(key.clone()), limit.clone()).prop_map(|(prefix, after, limit)| Op::List { prefix, after, limit }),
        1 => (proptest::option::of(proptest::bool::ANY), limit.clone()).prop_map(|(warm, limit)| Op::Staged { warm, limit }),
        1 => limit.clone().prop_map(|limit| Op::WarmOldest { limit }),
        2 => (key.clone(), proptest::bool::weighted(0.8), proptest::bool::weighted(0.2)).prop_map(|(key, current, above)| Op::Demote { key, current, above }),
        1 => Just(Op::Segments),
        3 => (key.clone(), proptest::option::weighted(0.3, position.clone()), position).prop_map(|(key, from, to)| Op::Restage { key, from, to }),
        2 => (0u64..5, proptest::option::of((0u64..5, key.clone())), limit.clone()).prop_map(|(segment, after, limit)| Op::InSegment { segment, after, limit }),
        1 => (proptest::option::of(prop_oneof![9 => 0u64..5, 1 => Just(i64::MAX as u64 + 1)]), limit.clone()).prop_map(|(after, limit)| Op::SegmentUsage { after, limit }),
        2 => Just(Op::NextBlobId),
        2 => (back.clone(), 0u32..3, disks.clone(), prop_oneof![3 => 0u64..24, 1 => 0u64..1_000_000]).prop_map(|(back, group, disks, size_bytes)| Op::Begin { back, group, disks, size_bytes }),
        2 => (0usize..3, proptest::collection::vec((key.clone(), proptest::bool::weighted(0.8), 0u64..12), 0..5)).prop_map(|(pick, moves)| Op::Commit { pick, moves }),
        4 => (proptest::collection::vec(key.clone(), 0..5), 0u32..3, disks, 0u64..3).prop_map(|(keys, group, disks, slack_bytes)| Op::Migrate { keys, group, disks, slack_bytes }),
        1 => (0usize..3).prop_map(|pick| Op::Abort { pick }),
        2 => (0usize..3).prop_map(|pick| Op::Remove { pick }),
        2 => (0u32..8).prop_map(|disk| Op::FailDisk { disk }),
        1 => back.clone().prop_map(|back| Op::Blob { back }),
        1 => (proptest::bool::ANY, limit.clone()).prop_map(|(committed, limit)| Op::InState { committed, limit }),
        1 => (0u32..3, proptest::option::of(0u64..6), limit.clone()).prop_map(|(group, after, limit)| Op::InGroup { group, after, limit }),
        2 => (0u32..3, proptest::option::of(0u64..6), limit.clone()).prop_map(|(group, after, limit)| Op::Dead { group, after, limit }),
        1 => (0u32..8, proptest::option::of(0u64..6), limit.clone()).prop_map(|(disk, after, limit)| Op::OnDisk { disk, after, limit }),
        2 => (0u32..8, proptest::bool::weighted(0.3)).prop_map(|(disk, failed)| Op::Health { disk, failed }),
        1 => Just(Op::Unhealthy),
        2 => (back.clone(), proptest::option::of((0u64..8, key.clone())), limit.clone()).prop_map(|(back, after, limit)| Op::InBlob { back, after, limit }),
        2 => proptest::collection::vec((back.clone(), 0u32..4, proptest::option::weighted(0.2, 0u32..8)), 1..4).prop_map(|tasks| Op::AddTasks { tasks }),
        1 => limit.clone().prop_map(|limit| Op::Tasks { limit }),
        2 => (0usize..4, prop_oneof![3 => 8u32..12, 1 => 0u32..8]).prop_map(|(index, new_disk)| Op::Complete { index, new_disk }),
        1 => Just(Op::Stats),
        2 => Just(Op::DiskUsage),
        2 => (back.clone(), -1i64..5).prop_map(|(back, at_unix_ms)| Op::RecordScrub { back, at_unix_ms }),
        1 => (0u32..3, 0i64..6, limit.clone()).prop_map(|(group, before_unix_ms, limit)| Op::ScrubDue { group, before_unix_ms, limit }),
        1 => (0u32..3).prop_map(|group| Op::LastScrub { group }),
    ]
}

/// An operation with every index resolved to concrete arguments (the same for both catalogs).
#[derive(Clone, Debug)]
enum Call {
    Op(Op),
    Begin(spinwise_catalog::BlobRecord),
    Commit(BlobId, Vec<Migration>),
    Abort(BlobId),
    Remove(BlobId),
    Blob(BlobId),
    AddTasks(Vec<RebuildTask>),
    Complete(RebuildTask, u32),
    RecordScrub(BlobId, i64),
    InBlob(BlobId, Option<(u64, usize)>, u32),
}

/// The `pick`-th blob in `state`, or an id no blob has.
async fn pick_blob(
    model: &MemoryCatalog,
    state: BlobState,
    pick: usize,
    last_id: BlobId,
) -> BlobId {
    let blobs = model.blobs_in_state(state, 1_000).await.unwrap();
    if blobs.is_empty() {
        last_id + 1 + pick as u64
    } else {
        blobs[pick % blobs.len()].id
    }
}

/// Resolves `op` against the model's current state into the calls to make, in order.
async fn resolve(model: &MemoryCatalog, op: Op, last_id: BlobId) -> Vec<Call> {
    let id = |back: u64| last_id.saturating_sub(back);
    let call = match op {
        Op::Migrate {
            keys,
            group,
            disks,
            slack_bytes,
        } => {
            let blob = last_id + 1;
            let mut moves = Vec::new();
            let mut blob_offset = 0;
            for key in keys {
                let Some(object) = model.object(KEYS[key]).await.unwrap() else {
                    continue;
                };
                moves.push(Migration {
                    key: object.key,
                    from: object.location,
                    blob_offset,
                });
                blob_offset += object.size_bytes;
            }
            return vec![
                Call::Op(Op::NextBlobId),
                Call::Begin(writing_blob(blob, group, disks, blob_offset + slack_bytes)),
                Call::Commit(blob, moves),
            ];
        }
        Op::FailDisk { disk } => {
            let mut tasks = Vec::new();
            for blob in model.blobs_on_disk(disk, None, 1_000).await.unwrap() {
                if blob.state == BlobState::Committed {
                    let column = blob.disks.iter().position(|&d| d == disk).unwrap() as u32;
                    tasks.push(RebuildTask {
                        blob: blob.id,
                        column,
                        failed_disk: disk,
                    });
                }
            }
            return vec![
                Call::Op(Op::Health { disk, failed: true }),
                Call::AddTasks(tasks),
            ];
        }
        Op::Begin {
            back,
            group,
            disks,
            size_bytes,
        } => Call::Begin(writing_blob(id(back), group, disks, size_bytes)),
        Op::Commit { pick, moves } => {
            let blob = pick_blob(model, BlobState::Writing, pick, last_id).await;
            let mut migrations = Vec::new();
            for (key, current, blob_offset) in moves {
                let key = KEYS[key];
                let location = model
                    .object(key)
                    .await
                    .unwrap()
                    .map(|object| object.location);
                let from = match (current, location) {
                    (true, Some(location)) => location,
                    _ => ObjectLocation::Staged {
                        segment: 9,
                        offset: 9,
                    },
                };
                migrations.push(Migration {
                    key: key.to_string(),
                    from,
                    blob_offset,
                });
            }
            Call::Commit(blob, migrations)
        }
        Op::Abort { pick } => {
            Call::Abort(pick_blob(model, BlobState::Writing, pick, last_id).await)
        }
        Op::Remove { pick } => {
            Call::Remove(pick_blob(model, BlobState::Committed, pick, last_id).await)
        }
        Op::Blob { back } => Call::Blob(id(back)),
        Op::InBlob { back, after, limit } => Call::InBlob(id(back), after, limit),
        Op::RecordScrub { back, at_unix_ms } => Call::RecordScrub(id(back), at_unix_ms),
        Op::AddTasks { tasks } => {
            let mut resolved = Vec::new();
            for (back, column, disk) in tasks {
                let blob = model.blob(id(back)).await.unwrap();
                let current = blob.and_then(|blob| blob.disks.get(column as usize).copied());
                let failed_disk = disk.or(current).unwrap_or(0);
                resolved.push(RebuildTask {
                    blob: id(back),
                    column,
                    failed_disk,
                });
            }
            Call::AddTasks(resolved)
        }
        Op::Complete { index, new_disk } => {
            let pending = model.rebuild_tasks(100).await.unwrap();
            let task = if pending.is_empty() {
                RebuildTask {
                    blob: last_id,
                    column: 0,
                    failed_disk: 0,
                }
            } else {
                pending[index % pending.len()].clone()
            };
            Call::Complete(task, new_disk)
        }
        other => Call::Op(other),
    };
    vec![call]
}

/// Runs `call` and renders the answer (value or error) for comparison.
async fn run<C: Catalog>(catalog: &C, call: &Call) -> String {
    match call.clone() {
        Call::Begin(record) => format!("{:?}", catalog.begin_blob(record).await),
        Call::Commit(blob, moves) => format!("{:?}", catalog.commit_blob(blob, moves).await),
        Call::Abort(blob) => format!("{:?}", catalog.abort_blob(blob).await),
        Call::Remove(blob) => format!("{:?}", catalog.remove_blob(blob).await),
        Call::Blob(blob) => format!("{:?}", catalog.blob(blob).await),
        Call::AddTasks(tasks) => format!("{:?}", catalog.add_rebuild_tasks(tasks).await),
        Call::Complete(task, new_disk) => {
            format!("{:?}", catalog.complete_rebuild(task, new_disk).await)
        }
        Call::RecordScrub(blob, at) => format!("{:?}", catalog.record_scrub(blob, at).await),
        Call::InBlob(blob, after, limit) => {
            let after = after.map(|(offset, key)| (offset, KEYS[key]));
            format!("{:?}", catalog.objects_in_blob(blob, after, limit).await)
        }
        Call::Op(op) => run_op(catalog, op).await,
    }
}

async fn run_op<C: Catalog>(catalog: &C, op: Op) -> String {
    match op {
        Op::Put {
            key,
            size_bytes,
            segment,
            offset,
            warm,
        } => {
            let record = if warm {
                common::warm(KEYS[key], size_bytes, segment, offset)
            } else {
                staged(KEYS[key], size_bytes, segment, offset)
            };
            format!("{:?}", catalog.put_object(record).await)
        }
        Op::Get { key } => format!("{:?}", catalog.object(KEYS[key]).await),
        Op::Delete { key } => format!("{:?}", catalog.delete_object(KEYS[key]).await),
        Op::List {
            prefix,
            after,
            limit,
        } => {
            format!(
                "{:?}",
                catalog
                    .list_objects(PREFIXES[prefix], after.map(|key| KEYS[key]), limit)
                    .await
            )
        }
        Op::Staged { warm, limit } => {
            let tier = warm.map(|warm| if warm { Tier::Warm } else { Tier::Cold });
            format!("{:?}", catalog.staged_objects(tier, limit).await)
        }
        Op::WarmOldest { limit } => format!("{:?}", catalog.warm_objects(limit).await),
        Op::Demote {
            key,
            current,
            above,
        } => {
            let at = match catalog.object(KEYS[key]).await {
                Ok(Some(object)) if current => object.location,
                _ => ObjectLocation::Staged {
                    segment: if above { i64::MAX as u64 + 1 } else { 9 },
                    offset: 9,
                },
            };
            format!("{:?}", catalog.demote(KEYS[key], &at).await)
        }
        Op::Segments => format!("{:?}", catalog.segments_in_use().await),
        Op::Restage { key, from, to } => {
            // Like Demote: the current place as this catalog sees it; a migrated object's blob
            // and offset stand in for a place in the log, which must not match.
            let from = match (from, catalog.object(KEYS[key]).await) {
                (Some(from), _) => from,
                (None, Ok(Some(object))) => match object.location {
                    ObjectLocation::Staged { segment, offset } => (segment, offset),
                    ObjectLocation::Migrated { blob, offset } => (blob, offset),
                },
                (None, _) => (1, 1),
            };
            format!("{:?}", catalog.restage(KEYS[key], from, to).await)
        }
        Op::InSegment {
            segment,
            after,
            limit,
        } => {
            let after = after.map(|(offset, key)| (offset, KEYS[key]));
            format!(
                "{:?}",
                catalog.staged_in_segment(segment, after, limit).await
            )
        }
        Op::SegmentUsage { after, limit } => {
            format!("{:?}", catalog.segment_usage(after, limit).await)
        }
        Op::NextBlobId => format!("{:?}", catalog.next_blob_id().await),
        Op::InState { committed, limit } => {
            let state = if committed {
                BlobState::Committed
            } else {
                BlobState::Writing
            };
            format!("{:?}", catalog.blobs_in_state(state, limit).await)
        }
        Op::Dead {
            group,
            after,
            limit,
        } => format!(
            "{:?}",
            catalog.blobs_with_dead_bytes(group, after, limit).await
        ),
        Op::InGroup {
            group,
            after,
            limit,
        } => format!("{:?}", catalog.blobs_in_group(group, after, limit).await),
        Op::OnDisk { disk, after, limit } => {
            format!("{:?}", catalog.blobs_on_disk(disk, after, limit).await)
        }
        Op::Health { disk, failed } => {
            let health = if failed {
                DiskHealth::Failed
            } else {
                DiskHealth::Healthy
            };
            format!("{:?}", catalog.set_disk_health(disk, health).await)
        }
        Op::Unhealthy => format!("{:?}", catalog.unhealthy_disks().await),
        Op::Tasks { limit } => format!("{:?}", catalog.rebuild_tasks(limit).await),
        Op::Stats => format!("{:?}", catalog.stats().await),
        Op::DiskUsage => format!("{:?}", catalog.disk_usage().await),
        Op::ScrubDue {
            group,
            before_unix_ms,
            limit,
        } => format!(
            "{:?}",
            catalog.scrub_due(group, before_unix_ms, limit).await
        ),
        Op::LastScrub { group } => format!("{:?}", catalog.last_scrub_in_group(group).await),
        Op::Begin { .. }
        | Op::Commit { .. }
        | Op::Migrate { .. }
        | Op::FailDisk { .. }
        | Op::Abort { .. }
        | Op::Remove { .. }
        | Op::Blob { .. }
        | Op::InBlob { .. }
        | Op::AddTasks { .. }
        | Op::Complete { .. }
        | Op::RecordScrub { .. } => {
            unreachable!("resolved into a Call first")
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

    #[test]
    fn sqlite_catalog_answers_every_operation_sequence_like_the_memory_model(ops in proptest::collection::vec(op(), 1..60)) {
        runtime().block_on(async {
            let directory = tempfile::tempdir().unwrap();
            let path = directory.path().join("catalog.db");
            let sqlite = SqliteCatalog::open(&path).await.unwrap();
            let model = MemoryCatalog::new();
            let mut last_id = 0;
            for (step, op) in ops.into_iter().enumerate() {
                for call in resolve(&model, op, last_id).await {
                    let expected = run(&model, &call).await;
                    let actual = run(&sqlite, &call).await;
                    assert_eq!(actual, expected, "step {step}: {call:?}");
                    if matches!(call, Call::Op(Op::NextBlobId)) {
                        last_id += 1;
                    }
                }
            }
            // Both report the same; the one invariant a caller can break through the trait is
            // marking a disk healthy while rebuild tasks still name it (set_disk_health allows it).
            let model_problems = model.integrity_check().await.unwrap().problems;
            assert_eq!(sqlite.integrity_check().await.unwrap().problems, model_problems);
            for problem in &model_problems {
                assert!(problem.ends_with("which is not marked failed"), "{problem}");
            }
            // Everything the model holds is durable: a reopened catalog answers the same.
            sqlite.close().await;
            let reopened = SqliteCatalog::open(&path).await.unwrap();
            for op in [Op::List { prefix: 0, after: None, limit: 100 }, Op::Staged { warm: None, limit: 100 }, Op::WarmOldest { limit: 100 }, Op::Stats, Op::SegmentUsage { after: None, limit: 100 }, Op::Tasks { limit: 100 }, Op::Unhealthy, Op::DiskUsage, Op::InState { committed: true, limit: 100 }, Op::InState { committed: false, limit: 100 }] {
                assert_eq!(run_op(&reopened, op.clone()).await, run_op(&model, op).await);
            }
            reopened.close().await;
        });
    }
}
