//! Compaction on a real store (dense-jbod-60, k=3 r=2, emulated disks at time factor 0.001):
//! it reclaims dead bytes and every live object reads back byte-exact from the new blob; a
//! delete landing between compaction's read and its commit stays deleted; a blob nothing points
//! into is removed with its stacks; the upkeep task compacts only groups that come up for other
//! work (it never spins a group up for compaction alone, counted from the driver's activity).
//!
//! The racing delete is made deterministic by a catalog wrapper ([`RacingCatalog`]) that
//! deletes a chosen key just before it forwards the next `commit_blob`.

use crate::common;

use common::{advance_upkeep, migrate, on_manual_clock, pattern, upkeep_until};
use spinwise_catalog::{
    BlobId, BlobRecord, BlobState, Catalog, CatalogError, CatalogStats, DiskHealth, DiskIndex,
    DiskRecord, GroupIndex, IntegrityReport, MemoryCatalog, Migration, ObjectLocation,
    ObjectRecord, RebuildTask, ScrubEntry, SegmentId,
};
use spinwise_sched::scheduler::Kind;
use spinwise_store::disk_directory;
use spinwise_store::driver::{GroupActivity, GroupDisks, GroupPhase, Job, Purpose};
use spinwise_store::stacks::stack_name;
use spinwise_store::{CompactReport, CompactionMode, SqliteStore, Store, StoreConfig};
use spinwise_store::{ScrubLedger, ScrubMode};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Small fragments so a few KiB make several stripes.
const FRAGMENT_BYTES: u32 = 4096;

fn config() -> StoreConfig {
    let mut config = common::jbod_config();
    config.fragment_bytes = FRAGMENT_BYTES;
    config
}

async fn get_all<C: Catalog>(store: &Store<C>, key: &str) -> Vec<u8> {
    let mut reader = store.get(key, None).await.unwrap();
    let mut bytes = Vec::new();
    while let Some(chunk) = reader.next_chunk().await.unwrap() {
        bytes.extend_from_slice(&chunk);
    }
    bytes
}

/// Puts `sizes` as objects `object-NN` and flushes them into one bundle; returns the bodies
/// and the blob.
async fn bundle<C: Catalog>(store: &Store<C>, sizes: &[usize]) -> (BTreeMap<String, Vec<u8>>, u64) {
    let mut bodies = BTreeMap::new();
    for (index, &size) in sizes.iter().enumerate() {
        let key = format!("object-{index:02}");
        let body = pattern(size, index as u64 + 7);
        store.put(&key, &body[..]).await.unwrap();
        bodies.insert(key, body);
    }
    let report = store.flush(|_| {}).await.unwrap();
    assert_eq!(report.blobs.len(), 1, "{report:?}");
    (bodies, report.blobs[0])
}

/// Whether any stack file of `blob` is still on any of `disks`.
fn has_stacks(data: &Path, blob: &BlobRecord) -> bool {
    blob.disks.iter().enumerate().any(|(column, &disk)| {
        disk_directory(data, disk as usize)
            .join(stack_name(blob.id, column))
            .exists()
    })
}

fn location_blob(record: &ObjectRecord) -> u64 {
    match record.location {
        ObjectLocation::Migrated { blob, .. } => blob,
        ObjectLocation::Staged { .. } => panic!("`{}` is staged", record.key),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_reclaims_the_dead_bytes_and_every_live_object_reads_back_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = Store::init_sqlite(&data, config()).await.unwrap();
    let sizes = [5_000, 0, 12_289, 4_096, 30_000, 1, 9_999, 20_000];
    let (mut bodies, old_id) = bundle(&store, &sizes).await;
    let old = store.catalog().blob(old_id).await.unwrap().unwrap();
    // Delete most of the bytes (dead fraction above the 0.5 default).
    let mut dead_bytes = 0;
    for key in ["object-00", "object-04", "object-07", "object-01"] {
        dead_bytes += bodies.remove(key).unwrap().len() as u64;
        store.delete(key).await.unwrap();
    }
    assert_eq!(store.status().await.unwrap().dead_bytes, dead_bytes);

    let report = store.compact(None, |_| {}).await.unwrap();
    assert_eq!(report.blobs_compacted, 1, "{report:?}");
    assert_eq!(report.objects_moved, bodies.len() as u64);
    assert_eq!(report.objects_dead, 0);
    assert_eq!(report.bytes_reclaimed, dead_bytes);
    let new_id = report.new_blobs[0];
    let new = store.catalog().blob(new_id).await.unwrap().unwrap();
    assert_eq!(new.group, old.group, "compaction stays in the blob's group");
    assert_eq!(new.size_bytes, old.size_bytes - dead_bytes);
    assert_eq!(new.live_bytes, new.size_bytes);
    assert_eq!(store.catalog().blob(old_id).await.unwrap(), None);
    assert!(!has_stacks(&data, &old), "the old stacks are removed");
    assert!(has_stacks(&data, &new));
    for (key, body) in &bodies {
        assert_eq!(location_blob(&store.stat(key).await.unwrap()), new_id);
        assert!(get_all(&store, key).await == *body, "`{key}` differs");
    }
    let mut reader = store.get("object-02", Some(4_000..9_000)).await.unwrap();
    let mut range = Vec::new();
    while let Some(chunk) = reader.next_chunk().await.unwrap() {
        range.extend_from_slice(&chunk);
    }
    assert!(range == bodies["object-02"][4_000..9_000]);
    assert_eq!(store.status().await.unwrap().dead_bytes, 0);
    common::assert_catalog_consistent(&store).await;
    // Nothing more to do: a second run compacts nothing.
    let again = store.compact(None, |_| {}).await.unwrap();
    assert_eq!((again.blobs_compacted, again.blobs_removed), (0, 0));
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blob_below_the_dead_fraction_is_left_alone_unless_the_operator_lowers_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init_sqlite(&dir.path().join("data"), config())
        .await
        .unwrap();
    let (bodies, old_id) = bundle(&store, &[10_000, 10_000, 10_000, 10_000]).await;
    store.delete("object-03").await.unwrap();
    let report = store.compact(None, |_| {}).await.unwrap();
    assert_eq!(
        report.blobs_compacted, 0,
        "25% dead is below the 0.5 default"
    );
    assert!(store.catalog().blob(old_id).await.unwrap().is_some());
    let report = store.compact(Some(0.25), |_| {}).await.unwrap();
    assert_eq!(report.blobs_compacted, 1, "{report:?}");
    assert_eq!(report.bytes_reclaimed, 10_000);
    for key in ["object-00", "object-01", "object-02"] {
        assert!(get_all(&store, key).await == bodies[key]);
    }
    assert!(store.compact(Some(0.0), |_| {}).await.is_err());
    assert!(store.compact(Some(f64::NAN), |_| {}).await.is_err());
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fully_dead_blob_is_removed_with_its_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = Store::init_sqlite(&data, config()).await.unwrap();
    let (_, dead_id) = bundle(&store, &[7_000, 8_000]).await;
    let dead = store.catalog().blob(dead_id).await.unwrap().unwrap();
    assert!(has_stacks(&data, &dead));
    store.delete("object-00").await.unwrap();
    store.delete("object-01").await.unwrap();
    assert_eq!(store.status().await.unwrap().dead_bytes, 15_000);
    let report = store.compact(None, |_| {}).await.unwrap();
    assert_eq!(
        (
            report.blobs_removed,
            report.blobs_compacted,
            report.bytes_reclaimed
        ),
        (1, 0, 15_000),
        "{report:?}"
    );
    assert!(report.new_blobs.is_empty());
    assert_eq!(store.catalog().blob(dead_id).await.unwrap(), None);
    assert!(!has_stacks(&data, &dead));
    assert_eq!(store.status().await.unwrap().dead_bytes, 0);
    assert_eq!(store.disk_used_bytes(dead.disks[0]).await.unwrap(), 0);
    store.close().await;
}

/// A catalog that deletes `race_key` just before it forwards the next `commit_blob`: the delete
/// lands after compaction read the object and before its commit.
///
/// Its `gate`, when set, stops the next `commit_blob` instead: it says so on the first channel
/// and waits for the second before it commits (the semi-preemptive tests queue reads there).
struct RacingCatalog {
    inner: MemoryCatalog,
    race_key: Mutex<Option<String>>,
    gate: Mutex<Option<CommitGate>>,
    commits: std::sync::atomic::AtomicU64,
}

/// "A commit is waiting" and "let it go".
type CommitGate = (
    tokio::sync::oneshot::Sender<()>,
    tokio::sync::oneshot::Receiver<()>,
);

impl RacingCatalog {
    fn new() -> RacingCatalog {
        RacingCatalog {
            inner: MemoryCatalog::new(),
            race_key: Mutex::new(None),
            gate: Mutex::new(None),
            commits: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl Catalog for RacingCatalog {
    async fn commit_blob(&self, blob: BlobId, moves: Vec<Migration>) -> Result<u64, CatalogError> {
        let gate = self.gate.lock().unwrap().take();
        if let Some((reached, go)) = gate {
            reached.send(()).unwrap();
            go.await.unwrap();
        }
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let key = self.race_key.lock().unwrap().take();
        if let Some(key) = key {
            self.inner
                .delete_object(&key)
                .await?
                .expect("the key exists");
        }
        self.inner.commit_blob(blob, moves).await
    }
    fn put_object(
        &self,
        record: ObjectRecord,
    ) -> impl Future<Output = Result<Option<ObjectRecord>, CatalogError>> + Send {
        self.inner.put_object(record)
    }
    fn object(
        &self,
        key: &str,
    ) -> impl Future<Output = Result<Option<ObjectRecord>, CatalogError>> + Send {
        self.inner.object(key)
    }
    fn delete_object(
        &self,
        key: &str,
    ) -> impl Future<Output = Result<Option<ObjectRecord>, CatalogError>> + Send {
        self.inner.delete_object(key)
    }
    fn list_objects(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ObjectRecord>, CatalogError>> + Send {
        self.inner.list_objects(prefix, after, limit)
    }
    fn objects_in_blob(
        &self,
        blob: BlobId,
        after: Option<(u64, &str)>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ObjectRecord>, CatalogError>> + Send {
        self.inner.objects_in_blob(blob, after, limit)
    }
    fn staged_objects(
        &self,
        tier: Option<spinwise_catalog::Tier>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ObjectRecord>, CatalogError>> + Send {
        self.inner.staged_objects(tier, limit)
    }
    fn warm_objects(
        &self,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ObjectRecord>, CatalogError>> + Send {
        self.inner.warm_objects(limit)
    }
    fn demote(
        &self,
        key: &str,
        at: &spinwise_catalog::ObjectLocation,
    ) -> impl Future<Output = Result<bool, CatalogError>> + Send {
        self.inner.demote(key, at)
    }
    fn restage(
        &self,
        key: &str,
        from: (SegmentId, u64),
        to: (SegmentId, u64),
    ) -> impl Future<Output = Result<bool, CatalogError>> + Send {
        self.inner.restage(key, from, to)
    }
    fn staged_in_segment(
        &self,
        segment: SegmentId,
        after: Option<(u64, &str)>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ObjectRecord>, CatalogError>> + Send {
        self.inner.staged_in_segment(segment, after, limit)
    }
    fn segment_usage(
        &self,
        after: Option<SegmentId>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<spinwise_catalog::SegmentUsage>, CatalogError>> + Send
    {
        self.inner.segment_usage(after, limit)
    }
    fn segments_in_use(
        &self,
    ) -> impl Future<Output = Result<BTreeSet<SegmentId>, CatalogError>> + Send {
        self.inner.segments_in_use()
    }
    fn next_blob_id(&self) -> impl Future<Output = Result<BlobId, CatalogError>> + Send {
        self.inner.next_blob_id()
    }
    fn reserve_blob_ids_through(
        &self,
        highest_used: BlobId,
    ) -> impl Future<Output = Result<Option<BlobId>, CatalogError>> + Send {
        self.inner.reserve_blob_ids_through(highest_used)
    }
    fn begin_blob(
        &self,
        record: BlobRecord,
    ) -> impl Future<Output = Result<(), CatalogError>> + Send {
        self.inner.begin_blob(record)
    }
    fn abort_blob(&self, blob: BlobId) -> impl Future<Output = Result<(), CatalogError>> + Send {
        self.inner.abort_blob(blob)
    }
    fn blob(
        &self,
        blob: BlobId,
    ) -> impl Future<Output = Result<Option<BlobRecord>, CatalogError>> + Send {
        self.inner.blob(blob)
    }
    fn blobs_in_state(
        &self,
        state: BlobState,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<BlobRecord>, CatalogError>> + Send {
        self.inner.blobs_in_state(state, limit)
    }
    fn blobs_in_group(
        &self,
        group: GroupIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<BlobRecord>, CatalogError>> + Send {
        self.inner.blobs_in_group(group, after, limit)
    }
    fn blobs_on_disk(
        &self,
        disk: DiskIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<BlobRecord>, CatalogError>> + Send {
        self.inner.blobs_on_disk(disk, after, limit)
    }
    fn remove_blob(&self, blob: BlobId) -> impl Future<Output = Result<(), CatalogError>> + Send {
        self.inner.remove_blob(blob)
    }
    fn disk_usage(
        &self,
    ) -> impl Future<Output = Result<Vec<spinwise_catalog::DiskUsage>, CatalogError>> + Send {
        self.inner.disk_usage()
    }
    fn blobs_with_dead_bytes(
        &self,
        group: GroupIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<BlobRecord>, CatalogError>> + Send {
        self.inner.blobs_with_dead_bytes(group, after, limit)
    }
    fn set_disk_health(
        &self,
        disk: DiskIndex,
        health: DiskHealth,
    ) -> impl Future<Output = Result<(), CatalogError>> + Send {
        self.inner.set_disk_health(disk, health)
    }
    fn unhealthy_disks(
        &self,
    ) -> impl Future<Output = Result<Vec<DiskRecord>, CatalogError>> + Send {
        self.inner.unhealthy_disks()
    }
    fn add_rebuild_tasks(
        &self,
        tasks: Vec<RebuildTask>,
    ) -> impl Future<Output = Result<(), CatalogError>> + Send {
        self.inner.add_rebuild_tasks(tasks)
    }
    fn rebuild_tasks(
        &self,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RebuildTask>, CatalogError>> + Send {
        self.inner.rebuild_tasks(limit)
    }
    fn complete_rebuild(
        &self,
        task: RebuildTask,
        new_disk: DiskIndex,
    ) -> impl Future<Output = Result<(), CatalogError>> + Send {
        self.inner.complete_rebuild(task, new_disk)
    }
    fn stats(&self) -> impl Future<Output = Result<CatalogStats, CatalogError>> + Send {
        self.inner.stats()
    }
    fn record_scrub(
        &self,
        blob: BlobId,
        verified_unix_ms: i64,
    ) -> impl Future<Output = Result<(), CatalogError>> + Send {
        self.inner.record_scrub(blob, verified_unix_ms)
    }
    fn scrub_due(
        &self,
        group: GroupIndex,
        before_unix_ms: i64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<ScrubEntry>, CatalogError>> + Send {
        self.inner.scrub_due(group, before_unix_ms, limit)
    }
    fn last_scrub_in_group(
        &self,
        group: GroupIndex,
    ) -> impl Future<Output = Result<Option<i64>, CatalogError>> + Send {
        self.inner.last_scrub_in_group(group)
    }
    fn integrity_check(
        &self,
    ) -> impl Future<Output = Result<IntegrityReport, CatalogError>> + Send {
        self.inner.integrity_check()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_racing_a_compaction_stays_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = RacingCatalog::new();
    let store = Store::init(&dir.path().join("data"), config(), catalog)
        .await
        .unwrap();
    let (bodies, old_id) = bundle(&store, &[6_000, 6_000, 6_000, 6_000, 6_000]).await;
    store.delete("object-00").await.unwrap();
    store.delete("object-01").await.unwrap();
    store.delete("object-02").await.unwrap();
    // Compaction reads object-03 and object-04; object-04 is deleted just before its commit.
    *store.catalog().race_key.lock().unwrap() = Some("object-04".into());
    let report = store.compact(None, |_| {}).await.unwrap();
    assert_eq!(report.blobs_compacted, 1, "{report:?}");
    assert_eq!((report.objects_moved, report.objects_dead), (1, 1));
    assert!(store.stat("object-04").await.is_err(), "the delete won");
    assert!(get_all(&store, "object-03").await == bodies["object-03"]);
    let new = store
        .catalog()
        .blob(report.new_blobs[0])
        .await
        .unwrap()
        .unwrap();
    assert_eq!((new.size_bytes, new.live_bytes), (12_000, 6_000));
    assert_eq!(store.catalog().blob(old_id).await.unwrap(), None);
    common::assert_catalog_consistent(&store).await;
    // The racing delete's bytes are dead in the new blob: the status says so.
    assert_eq!(store.status().await.unwrap().dead_bytes, 6_000);
}

/// Spins `groups` up with empty client jobs (so others the budget cannot keep go down).
async fn touch_groups(store: &SqliteStore, groups: &[u32]) {
    for &group in groups {
        let job = Job::new(group, 0, Kind::Client, |_: &GroupDisks| ());
        let io = store.rack_io();
        io.driver.submit(job).await.unwrap().wait().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upkeep_task_compacts_only_groups_that_come_up_for_other_work() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = Store::init_sqlite(&data, config()).await.unwrap();
    let (store, clock) = on_manual_clock(store);
    // A fully dead blob in group 0 and one in group 1.
    let dead0 = migrate(&store, "dead-0", &pattern(9_000, 1), 0).await;
    let dead1 = migrate(&store, "dead-1", &pattern(11_000, 2), 1).await;
    store.delete("dead-0").await.unwrap();
    store.delete("dead-1").await.unwrap();
    // Every blob verified now, so no scrub is due and nothing spins up for scrub either.
    store
        .scrub(ScrubMode::Forced, &ScrubLedger::default(), |_| {})
        .await
        .unwrap();
    // Groups 0 and 1 go down (the budgets keep only a few groups up).
    touch_groups(&store, &[2, 3, 4, 5, 6, 7, 8, 9]).await;
    let state = store.rack_io().driver.state().await.unwrap();
    assert_eq!(state.groups[0].phase, GroupPhase::Resting, "{state:?}");
    assert_eq!(state.groups[1].phase, GroupPhase::Resting, "{state:?}");

    let store = Arc::new(store);
    let mut activity = store.rack_io().driver.subscribe_activity();
    let upkeep = store.start_upkeep().await.unwrap();
    // Group 0 comes up for a client job: its compaction is piggybacked.
    touch_groups(&store, &[0]).await;
    upkeep_until(&upkeep, "a compaction", |report| {
        report.compaction.blobs_removed > 0
    })
    .await;
    // Ticks (every 60 s by default) in which the task could (wrongly) go after group 1 too.
    for _ in 0..3 {
        advance_upkeep(&clock, &upkeep, Duration::from_secs(60)).await;
    }
    let report = upkeep.stop().await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.compaction.blobs_removed, 1, "{report:?}");
    assert_eq!(report.compact_batches, 1, "{report:?}");
    assert_eq!(report.scrub_spin_ups, 0, "{report:?}");
    let mut ups = Vec::new();
    while let Ok(event) = activity.try_recv() {
        if let GroupActivity::Up { group, .. } = event {
            ups.push(group);
        }
    }
    assert_eq!(ups, [0], "only the client's spin-up");
    assert_eq!(store.catalog().blob(dead0.id).await.unwrap(), None);
    assert!(!has_stacks(&data, &dead0));
    assert!(store.catalog().blob(dead1.id).await.unwrap().is_some());
    assert_eq!(store.status().await.unwrap().dead_bytes, 11_000);
    Arc::try_unwrap(store).ok().unwrap().close().await;
}

/// A config whose compaction copies `unit_bytes` of live objects per unit, on a layout whose
/// classes serve one request at a time (Pelican as described), so a queued read really waits.
fn unit_config(mode: CompactionMode, unit_bytes: u64) -> StoreConfig {
    let mut config = config();
    config.upkeep.compaction = mode;
    config.upkeep.compact_unit_bytes = unit_bytes;
    config.layout.scheduler.concurrent_requests_per_class = 1;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semi_preemptive_compaction_copies_a_blob_in_units_and_every_object_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = unit_config(CompactionMode::SemiPreemptive, 16_384);
    let store = Store::init_sqlite(&data, config).await.unwrap();
    let sizes = [9_000, 0, 12_289, 4_096, 30_000, 1, 9_999, 20_000, 7_000];
    let (mut bodies, old_id) = bundle(&store, &sizes).await;
    let old = store.catalog().blob(old_id).await.unwrap().unwrap();
    let mut dead_bytes = 0;
    for key in ["object-00", "object-07"] {
        dead_bytes += bodies.remove(key).unwrap().len() as u64;
        store.delete(key).await.unwrap();
    }
    let report = store.compact(Some(0.1), |_| {}).await.unwrap();
    // Live, in offset order: 0 | 12,289 + 4,096 | 30,000 + 1 | 9,999 | 7,000: the empty object
    // joins the next, a 30,000-byte object is a unit of its own, 9,999 + 7,000 > 16,384.
    assert_eq!(report.units, 5, "{report:?}");
    assert_eq!(report.new_blobs.len(), 5);
    assert_eq!(report.blobs_compacted, 1);
    assert_eq!(report.objects_moved, bodies.len() as u64);
    assert_eq!(report.bytes_reclaimed, dead_bytes);
    assert_eq!(report.yields, 0, "no read was waiting");
    let mut stored_bytes = 0;
    for id in &report.new_blobs {
        let new = store.catalog().blob(*id).await.unwrap().unwrap();
        assert_eq!(new.group, old.group, "every unit stays in the blob's group");
        assert_eq!(new.live_bytes, new.size_bytes);
        stored_bytes += new.size_bytes;
    }
    assert_eq!(stored_bytes, old.size_bytes - dead_bytes);
    assert_eq!(store.catalog().blob(old_id).await.unwrap(), None);
    assert!(!has_stacks(&data, &old), "the old stacks are removed");
    for (key, body) in &bodies {
        assert!(get_all(&store, key).await == *body, "`{key}` differs");
    }
    assert_eq!(store.status().await.unwrap().dead_bytes, 0);
    common::assert_catalog_consistent(&store).await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_preemptive_compaction_copies_a_blob_as_one_unit() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = unit_config(CompactionMode::NonPreemptive, 16_384);
    let store = Store::init_sqlite(&data, config).await.unwrap();
    let (bodies, _) = bundle(&store, &[9_000, 30_000, 12_000, 20_000]).await;
    store.delete("object-00").await.unwrap();
    let report = store.compact(Some(0.1), |_| {}).await.unwrap();
    assert_eq!((report.units, report.new_blobs.len()), (1, 1), "{report:?}");
    for key in ["object-01", "object-02", "object-03"] {
        assert!(get_all(&store, key).await == bodies[key], "`{key}` differs");
    }
    store.close().await;
}

/// Runs a semi-preemptive compaction of a blob of three 6,000-byte units; when the first
/// unit's commit is reached, occupies the group's one slot with a job that blocks and queues a
/// read behind it, then lets the commit go, and keeps the slot until either the compaction
/// says it waits for the read (its progress hears a yield) or the next unit's job is queued
/// (it did not wait). Returns the report and the commits seen at that moment.
async fn compaction_meeting_a_queued_read(hard_free_fraction: f64) -> (CompactReport, u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = unit_config(CompactionMode::SemiPreemptive, 6_000);
    config.upkeep.compact_hard_free_fraction = hard_free_fraction;
    let store = Arc::new(
        Store::init(&dir.path().join("data"), config, RacingCatalog::new())
            .await
            .unwrap(),
    );
    let (_, old_id) = bundle(&*store, &[6_000, 6_000, 6_000, 6_000]).await;
    let group = store.catalog().blob(old_id).await.unwrap().unwrap().group;
    store.delete("object-00").await.unwrap();
    // Count compaction's commits only (the flush above committed one).
    let commits = || {
        store
            .catalog()
            .commits
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    store
        .catalog()
        .commits
        .store(0, std::sync::atomic::Ordering::SeqCst);
    let (reached_tx, reached_rx) = tokio::sync::oneshot::channel();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel();
    *store.catalog().gate.lock().unwrap() = Some((reached_tx, go_rx));
    let (yielded_tx, mut yielded_rx) = tokio::sync::mpsc::unbounded_channel();
    let compacting = tokio::spawn({
        let store = Arc::clone(&store);
        async move {
            let heard = move |so_far: &CompactReport| {
                if so_far.yields > 0 {
                    let _ = yielded_tx.send(());
                }
            };
            store.compact(Some(0.1), heard).await.unwrap()
        }
    });
    reached_rx.await.unwrap();
    let driver = store.rack_io().driver.clone();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let blocker = Job::new(group, 0, Kind::Client, move |_: &GroupDisks| {
        release_rx.recv().unwrap();
    });
    let blocking = driver.submit(blocker).await.unwrap();
    let queued = driver
        .submit(Job::new(group, 0, Kind::Client, |_: &GroupDisks| ()))
        .await
        .unwrap();
    go_tx.send(()).unwrap();
    let next_unit_queued = async {
        loop {
            let state = driver.state().await.unwrap();
            let waiting = state.groups[group as usize].waiting;
            if waiting.jobs(Purpose::Compaction) > 0 {
                return;
            }
            // The driver announces no queued job, so its state is polled every millisecond.
            // wall-clock: a poll of the driver's state for the next unit's job, ended by an event.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::select! {
        _ = yielded_rx.recv() => {}
        () = next_unit_queued => {}
    }
    let commits_then = commits();
    release_tx.send(()).unwrap();
    blocking.wait().await.unwrap();
    queued.wait().await.unwrap();
    (compacting.await.unwrap(), commits_then)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_queued_between_units_goes_before_the_next_unit() {
    let (report, commits_then) = compaction_meeting_a_queued_read(0.0).await;
    assert_eq!(report.units, 3, "{report:?}");
    assert_eq!(
        report.yields, 1,
        "the second unit waited for the read: {report:?}"
    );
    assert_eq!(commits_then, 1, "no unit committed while the read waited");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_the_hard_free_threshold_units_no_longer_wait_for_reads() {
    // A hard threshold of 99.99% free: every group is below it, so collection is
    // non-preemptible and the next unit is submitted at once, queued behind the read.
    let (report, commits_then) = compaction_meeting_a_queued_read(0.9999).await;
    assert_eq!(report.units, 3, "{report:?}");
    assert_eq!(report.yields, 0, "{report:?}");
    assert_eq!(commits_then, 1);
}
