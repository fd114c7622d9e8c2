//! memory.rs: [`MemoryCatalog`], the whole [`Catalog`] trait over BTreeMaps behind one mutex.
//! It is the reference model the SQLite backend is tested against, and a quick catalog for
//! unit tests of the store. Nothing is durable: dropping it forgets everything.
//!
//! Invariants: every method validates its whole request (through `rules`, shared with the
//! SQLite backend) before it changes anything, so a refused request leaves the state untouched,
//! like a rolled-back transaction. The mutex is never held across an `.await` (no method
//! awaits while holding it; the guard is not `Send`, so the compiler would refuse it).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

use crate::rules;
use crate::{
    BlobId, BlobRecord, BlobState, Catalog, CatalogError, CatalogStats, DiskHealth, DiskIndex,
    DiskRecord, DiskUsage, GroupIndex, IntegrityReport, Migration, ObjectLocation, ObjectRecord,
    RebuildTask, ScrubEntry, SegmentId, SegmentUsage, Tier,
};

/// The in-memory catalog; see the module documentation.
#[derive(Debug, Default)]
pub struct MemoryCatalog {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    objects: BTreeMap<String, ObjectRecord>,
    blobs: BTreeMap<BlobId, BlobRecord>,
    /// Disks absent here are healthy.
    disks: BTreeMap<DiskIndex, DiskHealth>,
    /// (blob, column) → the failed disk the column was on.
    rebuild: BTreeMap<(BlobId, u32), DiskIndex>,
    /// The id the next `next_blob_id` hands out; ids start at 1.
    next_blob_id: BlobId,
    /// Committed blob → its last scrub verification (absent: never verified).
    verified: BTreeMap<BlobId, i64>,
}

impl Default for State {
    fn default() -> Self {
        State {
            objects: BTreeMap::new(),
            blobs: BTreeMap::new(),
            disks: BTreeMap::new(),
            rebuild: BTreeMap::new(),
            next_blob_id: 1,
            verified: BTreeMap::new(),
        }
    }
}

fn limited<T>(items: impl Iterator<Item = T>, limit: u32) -> Vec<T> {
    items.take(limit as usize).collect()
}

impl State {
    fn health(&self, disk: DiskIndex) -> DiskHealth {
        self.disks
            .get(&disk)
            .copied()
            .unwrap_or(DiskHealth::Healthy)
    }

    /// The object leaves wherever it was: a migrated object's blob loses its live bytes.
    fn release(&mut self, old: &ObjectRecord) {
        if let ObjectLocation::Migrated { blob, .. } = old.location {
            let record = self
                .blobs
                .get_mut(&blob)
                .expect("a migrated object points into a recorded blob");
            record.live_bytes = record
                .live_bytes
                .checked_sub(old.size_bytes)
                .expect("a blob's live bytes include each of its objects");
        }
    }

    fn referencing_objects(&self, blob: BlobId) -> u64 {
        self.objects
            .values()
            .filter(|object| matches!(object.location, ObjectLocation::Migrated { blob: b, .. } if b == blob))
            .count() as u64
    }

    fn commit_blob(&mut self, id: BlobId, moves: Vec<Migration>) -> Result<u64, CatalogError> {
        let blob = rules::check_blob_state(id, self.blobs.get(&id), BlobState::Writing)?.clone();
        // Validate every move first so a refused commit changes nothing.
        let mut applicable = Vec::new();
        let mut seen = BTreeSet::new();
        for migration in &moves {
            let Some(object) = self.objects.get(&migration.key) else {
                continue;
            };
            // A key listed twice moves once: after the first move it is no longer at `from`.
            // A warm object never moves into a blob: the rule is the catalog's, so no caller
            // can break the invariant that warm objects are staged.
            if object.location != migration.from
                || object.tier == Tier::Warm
                || !seen.insert(migration.key.clone())
            {
                continue;
            }
            rules::check_move(&blob, migration, object)?;
            applicable.push(migration);
        }
        for migration in &applicable {
            let old = self.objects[&migration.key].clone();
            self.release(&old);
            let object = self.objects.get_mut(&migration.key).expect("checked above");
            object.location = ObjectLocation::Migrated {
                blob: id,
                offset: migration.blob_offset,
            };
        }
        let live_bytes = self
            .objects
            .values()
            .filter(|object| matches!(object.location, ObjectLocation::Migrated { blob, .. } if blob == id))
            .map(|object| object.size_bytes)
            .sum();
        let record = self.blobs.get_mut(&id).expect("checked above");
        record.state = BlobState::Committed;
        record.live_bytes = live_bytes;
        Ok(applicable.len() as u64)
    }

    fn complete_rebuild(
        &mut self,
        task: &RebuildTask,
        new_disk: DiskIndex,
    ) -> Result<(), CatalogError> {
        rules::check_complete_rebuild(
            task,
            self.rebuild.get(&(task.blob, task.column)).copied(),
            self.blobs.get(&task.blob),
            new_disk,
            self.health(new_disk),
        )?;
        let blob = self.blobs.get_mut(&task.blob).expect("checked above");
        blob.disks[task.column as usize] = new_disk;
        self.rebuild.remove(&(task.blob, task.column));
        Ok(())
    }

    fn stats(&self) -> Result<CatalogStats, CatalogError> {
        let total = |sizes: &mut dyn Iterator<Item = u64>| -> Result<u64, CatalogError> {
            let sum: u128 = sizes.map(u128::from).sum();
            u64::try_from(sum)
                .ok()
                .and_then(|sum| rules::stored(sum, "total bytes").ok().map(|_| sum))
                .ok_or_else(|| CatalogError::Limit(format!("total bytes {sum} overflow")))
        };
        let staged = || {
            self.objects
                .values()
                .filter(|object| matches!(object.location, ObjectLocation::Staged { .. }))
        };
        let warm = || staged().filter(|object| object.tier == Tier::Warm);
        Ok(CatalogStats {
            objects: self.objects.len() as u64,
            bytes: total(&mut self.objects.values().map(|object| object.size_bytes))?,
            staged_objects: staged().count() as u64,
            staged_bytes: total(&mut staged().map(|object| object.size_bytes))?,
            warm_objects: warm().count() as u64,
            warm_bytes: total(&mut warm().map(|object| object.size_bytes))?,
            blobs: self.blobs.len() as u64,
            rebuild_pending: self.rebuild.len() as u64,
            dead_bytes: total(
                &mut self
                    .blobs
                    .values()
                    .filter(|blob| blob.state == BlobState::Committed)
                    .map(|blob| blob.size_bytes.saturating_sub(blob.live_bytes)),
            )?,
        })
    }

    fn integrity_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut live: BTreeMap<BlobId, u128> = BTreeMap::new();
        for object in self.objects.values() {
            let ObjectLocation::Migrated { blob, offset } = object.location else {
                continue;
            };
            if object.tier == Tier::Warm {
                problems.push(rules::problem_warm_object_migrated(&object.key, blob));
            }
            *live.entry(blob).or_default() += u128::from(object.size_bytes);
            let Some(record) = self.blobs.get(&blob) else {
                problems.push(rules::problem_object_in_missing_blob(&object.key, blob));
                continue;
            };
            if record.state != BlobState::Committed {
                problems.push(rules::problem_object_in_uncommitted_blob(&object.key, blob));
            }
            let end = u128::from(offset) + u128::from(object.size_bytes);
            if end > u128::from(record.size_bytes) {
                problems.push(rules::problem_object_outside_blob(
                    &object.key,
                    blob,
                    end,
                    record.size_bytes,
                ));
            }
        }
        for blob in self.blobs.values() {
            let actual = live.get(&blob.id).copied().unwrap_or(0);
            if u128::from(blob.live_bytes) != actual {
                problems.push(rules::problem_live_bytes(blob.id, blob.live_bytes, actual));
            }
            let columns = u64::from(blob.k) + u64::from(blob.r);
            if blob.disks.len() as u64 != columns {
                problems.push(rules::problem_disk_count(
                    blob.id,
                    blob.disks.len() as u64,
                    columns,
                ));
            }
            let mut seen = BTreeSet::new();
            for &disk in &blob.disks {
                if !seen.insert(disk) {
                    problems.push(rules::problem_repeated_disk(blob.id, disk));
                }
            }
        }
        for (&(blob, column), &failed_disk) in &self.rebuild {
            let task = RebuildTask {
                blob,
                column,
                failed_disk,
            };
            match self.blobs.get(&blob) {
                Some(record) if record.state == BlobState::Committed => {
                    let current = record.disks.get(column as usize).copied();
                    if current != Some(failed_disk) {
                        problems.push(rules::problem_task_disk(&task, current));
                    }
                    if self.health(failed_disk) != DiskHealth::Failed {
                        problems.push(rules::problem_task_healthy_disk(&task));
                    }
                }
                _ => problems.push(rules::problem_task_blob(&task)),
            }
        }
        if let Some(&max_blob) = self.blobs.keys().next_back()
            && self.next_blob_id <= max_blob
        {
            problems.push(rules::problem_blob_id_counter(self.next_blob_id, max_blob));
        }
        problems
    }
}

impl MemoryCatalog {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock may have left half a change behind: do not go on.
        self.state
            .lock()
            .expect("memory catalog mutex poisoned by an earlier panic")
    }

    /// A page of `group`'s blobs that `matches` accepts, by id after `after`.
    fn group_page(
        &self,
        group: GroupIndex,
        after: Option<BlobId>,
        limit: u32,
        matches: impl Fn(&BlobRecord) -> bool,
    ) -> Vec<BlobRecord> {
        let state = self.lock();
        let matching = state.blobs.values().filter(|blob| {
            blob.group == group && after.is_none_or(|after| blob.id > after) && matches(blob)
        });
        limited(matching.cloned(), limit)
    }
}

impl Catalog for MemoryCatalog {
    async fn put_object(&self, record: ObjectRecord) -> Result<Option<ObjectRecord>, CatalogError> {
        rules::check_object(&record)?;
        let mut state = self.lock();
        let total: u128 = state
            .objects
            .values()
            .map(|o| u128::from(o.size_bytes))
            .sum();
        let replaced = state.objects.get(&record.key).map_or(0, |o| o.size_bytes);
        rules::check_total_bytes(total - u128::from(replaced) + u128::from(record.size_bytes))?;
        let old = state.objects.insert(record.key.clone(), record);
        if let Some(old) = &old {
            state.release(old);
        }
        Ok(old)
    }

    async fn object(&self, key: &str) -> Result<Option<ObjectRecord>, CatalogError> {
        Ok(self.lock().objects.get(key).cloned())
    }

    async fn delete_object(&self, key: &str) -> Result<Option<ObjectRecord>, CatalogError> {
        let mut state = self.lock();
        let old = state.objects.remove(key);
        if let Some(old) = &old {
            state.release(old);
        }
        Ok(old)
    }

    async fn list_objects(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ObjectRecord>, CatalogError> {
        let state = self.lock();
        let matching = state
            .objects
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter(|(key, _)| after.is_none_or(|after| key.as_str() > after))
            .map(|(_, object)| object.clone());
        Ok(limited(matching, limit))
    }

    async fn objects_in_blob(
        &self,
        blob: BlobId,
        after: Option<(u64, &str)>,
        limit: u32,
    ) -> Result<Vec<ObjectRecord>, CatalogError> {
        let state = self.lock();
        let mut inside: Vec<(u64, &ObjectRecord)> = state
            .objects
            .values()
            .filter_map(|object| match object.location {
                ObjectLocation::Migrated { blob: b, offset } if b == blob => Some((offset, object)),
                _ => None,
            })
            .filter(|(offset, object)| {
                after.is_none_or(|(after_offset, after_key)| {
                    (*offset, object.key.as_str()) > (after_offset, after_key)
                })
            })
            .collect();
        inside.sort_by(|a, b| (a.0, &a.1.key).cmp(&(b.0, &b.1.key)));
        Ok(limited(inside.into_iter().map(|(_, o)| o.clone()), limit))
    }

    async fn staged_objects(
        &self,
        tier: Option<Tier>,
        limit: u32,
    ) -> Result<Vec<ObjectRecord>, CatalogError> {
        let state = self.lock();
        let mut staged: Vec<(SegmentId, u64, &ObjectRecord)> = state
            .objects
            .values()
            .filter(|object| tier.is_none_or(|tier| object.tier == tier))
            .filter_map(|object| match object.location {
                ObjectLocation::Staged { segment, offset } => Some((segment, offset, object)),
                ObjectLocation::Migrated { .. } => None,
            })
            .collect();
        // Ties (two records claiming one log position) fall back to key order.
        staged.sort_by(|a, b| (a.0, a.1, &a.2.key).cmp(&(b.0, b.1, &b.2.key)));
        Ok(limited(
            staged.into_iter().map(|(_, _, o)| o.clone()),
            limit,
        ))
    }

    async fn warm_objects(&self, limit: u32) -> Result<Vec<ObjectRecord>, CatalogError> {
        let state = self.lock();
        let mut warm: Vec<&ObjectRecord> = state
            .objects
            .values()
            .filter(|object| object.tier == Tier::Warm)
            .collect();
        warm.sort_by(|a, b| (a.created_unix_ms, &a.key).cmp(&(b.created_unix_ms, &b.key)));
        Ok(limited(warm.into_iter().cloned(), limit))
    }

    async fn demote(&self, key: &str, at: &ObjectLocation) -> Result<bool, CatalogError> {
        let mut state = self.lock();
        let Some(object) = state.objects.get_mut(key) else {
            return Ok(false);
        };
        if object.tier != Tier::Warm || &object.location != at {
            return Ok(false);
        }
        object.tier = Tier::Cold;
        Ok(true)
    }

    async fn restage(
        &self,
        key: &str,
        from: (SegmentId, u64),
        to: (SegmentId, u64),
    ) -> Result<bool, CatalogError> {
        // Validated before the lock, like SQLite before its statement; a `from` above i64::MAX
        // matches no record here by itself, as it matches no row there.
        rules::check_restage(from, to)?;
        let mut state = self.lock();
        let Some(object) = state.objects.get_mut(key) else {
            return Ok(false);
        };
        let (segment, offset) = from;
        if object.location != (ObjectLocation::Staged { segment, offset }) {
            return Ok(false);
        }
        let (segment, offset) = to;
        object.location = ObjectLocation::Staged { segment, offset };
        Ok(true)
    }

    async fn staged_in_segment(
        &self,
        segment: SegmentId,
        after: Option<(u64, &str)>,
        limit: u32,
    ) -> Result<Vec<ObjectRecord>, CatalogError> {
        let state = self.lock();
        let mut inside: Vec<(u64, &ObjectRecord)> = state
            .objects
            .values()
            .filter_map(|object| match object.location {
                ObjectLocation::Staged {
                    segment: staged_segment,
                    offset,
                } if staged_segment == segment => Some((offset, object)),
                _ => None,
            })
            .filter(|(offset, object)| {
                after.is_none_or(|(after_offset, after_key)| {
                    (*offset, object.key.as_str()) > (after_offset, after_key)
                })
            })
            .collect();
        inside.sort_by(|left, right| (left.0, &left.1.key).cmp(&(right.0, &right.1.key)));
        Ok(limited(
            inside.into_iter().map(|(_, object)| object.clone()),
            limit,
        ))
    }

    async fn segment_usage(
        &self,
        after: Option<SegmentId>,
        limit: u32,
    ) -> Result<Vec<SegmentUsage>, CatalogError> {
        let state = self.lock();
        // (objects, bytes, warm objects) per segment; bytes in u128 so an overflow is seen.
        let mut usage: BTreeMap<SegmentId, (u64, u128, u64)> = BTreeMap::new();
        for object in state.objects.values() {
            let ObjectLocation::Staged { segment, .. } = object.location else {
                continue;
            };
            if after.is_some_and(|after| segment <= after) {
                continue;
            }
            let entry = usage.entry(segment).or_default();
            entry.0 += 1;
            entry.1 += u128::from(object.size_bytes);
            entry.2 += u64::from(object.tier == Tier::Warm);
        }
        // Only the rows returned are totalled, as SQLite stops summing at its LIMIT.
        limited(usage.into_iter(), limit)
            .into_iter()
            .map(|(segment, (objects, bytes, warm_objects))| {
                Ok(SegmentUsage {
                    segment,
                    objects,
                    live_bytes: rules::segment_bytes(bytes)?,
                    warm_objects,
                })
            })
            .collect()
    }

    async fn segments_in_use(&self) -> Result<BTreeSet<SegmentId>, CatalogError> {
        let state = self.lock();
        Ok(state
            .objects
            .values()
            .filter_map(|object| match object.location {
                ObjectLocation::Staged { segment, .. } => Some(segment),
                ObjectLocation::Migrated { .. } => None,
            })
            .collect())
    }

    async fn next_blob_id(&self) -> Result<BlobId, CatalogError> {
        let mut state = self.lock();
        let id = state.next_blob_id;
        rules::stored(id, "next blob id")?;
        state.next_blob_id += 1;
        Ok(id)
    }

    async fn reserve_blob_ids_through(
        &self,
        highest_used: BlobId,
    ) -> Result<Option<BlobId>, CatalogError> {
        let floor = rules::blob_id_floor(highest_used)?;
        let mut state = self.lock();
        if state.next_blob_id >= floor {
            return Ok(None);
        }
        let before = std::mem::replace(&mut state.next_blob_id, floor);
        Ok(Some(before))
    }

    async fn begin_blob(&self, mut record: BlobRecord) -> Result<(), CatalogError> {
        let mut state = self.lock();
        let exists = state.blobs.contains_key(&record.id);
        rules::check_new_blob(&record, state.next_blob_id, exists)?;
        // A writing blob has no objects yet; commit_blob sets live_bytes.
        record.live_bytes = 0;
        state.blobs.insert(record.id, record);
        Ok(())
    }

    async fn commit_blob(&self, blob: BlobId, moves: Vec<Migration>) -> Result<u64, CatalogError> {
        self.lock().commit_blob(blob, moves)
    }

    async fn abort_blob(&self, blob: BlobId) -> Result<(), CatalogError> {
        let mut state = self.lock();
        rules::check_blob_state(blob, state.blobs.get(&blob), BlobState::Writing)?;
        state.blobs.remove(&blob);
        Ok(())
    }

    async fn blob(&self, blob: BlobId) -> Result<Option<BlobRecord>, CatalogError> {
        Ok(self.lock().blobs.get(&blob).cloned())
    }

    async fn blobs_in_state(
        &self,
        state: BlobState,
        limit: u32,
    ) -> Result<Vec<BlobRecord>, CatalogError> {
        let guard = self.lock();
        let matching = guard.blobs.values().filter(|blob| blob.state == state);
        Ok(limited(matching.cloned(), limit))
    }

    async fn blobs_in_group(
        &self,
        group: GroupIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> Result<Vec<BlobRecord>, CatalogError> {
        Ok(self.group_page(group, after, limit, |_| true))
    }

    async fn blobs_with_dead_bytes(
        &self,
        group: GroupIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> Result<Vec<BlobRecord>, CatalogError> {
        Ok(self.group_page(group, after, limit, |blob| {
            blob.state == BlobState::Committed
                && (blob.live_bytes < blob.size_bytes || blob.live_bytes == 0)
        }))
    }

    async fn blobs_on_disk(
        &self,
        disk: DiskIndex,
        after: Option<BlobId>,
        limit: u32,
    ) -> Result<Vec<BlobRecord>, CatalogError> {
        let state = self.lock();
        let matching = state
            .blobs
            .values()
            .filter(|blob| blob.disks.contains(&disk) && after.is_none_or(|after| blob.id > after));
        Ok(limited(matching.cloned(), limit))
    }

    async fn remove_blob(&self, blob: BlobId) -> Result<(), CatalogError> {
        let mut state = self.lock();
        let referencing = state.referencing_objects(blob);
        rules::check_remove(blob, state.blobs.get(&blob), referencing)?;
        state.blobs.remove(&blob);
        state.rebuild.retain(|&(task_blob, _), _| task_blob != blob);
        state.verified.remove(&blob);
        Ok(())
    }

    async fn set_disk_health(
        &self,
        disk: DiskIndex,
        health: DiskHealth,
    ) -> Result<(), CatalogError> {
        self.lock().disks.insert(disk, health);
        Ok(())
    }

    async fn unhealthy_disks(&self) -> Result<Vec<DiskRecord>, CatalogError> {
        let state = self.lock();
        Ok(state
            .disks
            .iter()
            .filter(|(_, health)| **health != DiskHealth::Healthy)
            .map(|(&disk, &health)| DiskRecord { disk, health })
            .collect())
    }

    async fn add_rebuild_tasks(&self, tasks: Vec<RebuildTask>) -> Result<(), CatalogError> {
        let mut state = self.lock();
        for task in &tasks {
            rules::check_rebuild_task(
                task,
                state.blobs.get(&task.blob),
                state.health(task.failed_disk),
            )?;
        }
        for task in tasks {
            state
                .rebuild
                .entry((task.blob, task.column))
                .or_insert(task.failed_disk);
        }
        Ok(())
    }

    async fn rebuild_tasks(&self, limit: u32) -> Result<Vec<RebuildTask>, CatalogError> {
        let state = self.lock();
        let tasks = state
            .rebuild
            .iter()
            .map(|(&(blob, column), &failed_disk)| RebuildTask {
                blob,
                column,
                failed_disk,
            });
        Ok(limited(tasks, limit))
    }

    async fn complete_rebuild(
        &self,
        task: RebuildTask,
        new_disk: DiskIndex,
    ) -> Result<(), CatalogError> {
        self.lock().complete_rebuild(&task, new_disk)
    }

    async fn stats(&self) -> Result<CatalogStats, CatalogError> {
        self.lock().stats()
    }

    async fn record_scrub(&self, blob: BlobId, verified_unix_ms: i64) -> Result<(), CatalogError> {
        rules::check_scrub_time(verified_unix_ms)?;
        let mut state = self.lock();
        rules::check_blob_state(blob, state.blobs.get(&blob), BlobState::Committed)?;
        state.verified.insert(blob, verified_unix_ms);
        Ok(())
    }

    async fn scrub_due(
        &self,
        group: GroupIndex,
        before_unix_ms: i64,
        limit: u32,
    ) -> Result<Vec<ScrubEntry>, CatalogError> {
        let state = self.lock();
        // Never verified sorts as 0, as the SQLite column stores it.
        let mut due: Vec<(i64, BlobId)> = state
            .blobs
            .values()
            .filter(|blob| blob.group == group && blob.state == BlobState::Committed)
            .map(|blob| (state.verified.get(&blob.id).copied().unwrap_or(0), blob.id))
            .filter(|&(verified, _)| verified < before_unix_ms)
            .collect();
        due.sort_unstable();
        Ok(limited(due.into_iter(), limit)
            .into_iter()
            .map(|(verified, id)| ScrubEntry {
                blob: state.blobs[&id].clone(),
                verified_unix_ms: (verified > 0).then_some(verified),
            })
            .collect())
    }

    async fn disk_usage(&self) -> Result<Vec<DiskUsage>, CatalogError> {
        // The reference model counts from the blobs each time; the SQLite catalog keeps totals.
        Ok(DiskUsage::of(self.lock().blobs.values()))
    }

    async fn last_scrub_in_group(&self, group: GroupIndex) -> Result<Option<i64>, CatalogError> {
        let state = self.lock();
        Ok(state
            .verified
            .iter()
            .filter(|(id, _)| state.blobs.get(id).is_some_and(|blob| blob.group == group))
            .map(|(_, &verified)| verified)
            .max())
    }

    async fn integrity_check(&self) -> Result<IntegrityReport, CatalogError> {
        Ok(IntegrityReport {
            problems: self.lock().integrity_problems(),
        })
    }
}
