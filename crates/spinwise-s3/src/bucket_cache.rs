//! [`BucketCache`]: which buckets exist and their lifecycle rules, kept in memory so a GET or
//! HEAD does not ask SQLite twice per request what almost never changes (issue 28: two of the
//! six queries of a staged 4 KiB GET).
//!
//! Invariants:
//! - only buckets that exist are cached; an unknown name always goes to the database, so a
//!   bucket created by a request is seen by the next one;
//! - every change to a bucket's row or rules (create, delete, lifecycle put or delete) holds a
//!   [`BucketChange`] while it writes; dropping it (on every path, errors included) bumps the
//!   epoch and forgets the bucket, so what the change wrote is read from the database again;
//! - a reader fills the cache only if no change ended between its miss and its fill (the epoch
//!   it saw on the miss is still current), so an answer read before a change never outlives it;
//! - at most [`MAX_CACHED_BUCKETS`] entries: a full cache is emptied, not grown.

use crate::lifecycle::Lifecycle;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The most buckets remembered at once (S3 allows 10,000 per account by default).
pub const MAX_CACHED_BUCKETS: usize = 10_000;

/// What the cache knows of an existing bucket.
#[derive(Clone, Debug, Default)]
pub struct CachedBucket {
    /// The bucket's lifecycle rules, if it has any.
    pub lifecycle: Option<Arc<Lifecycle>>,
}

/// A cache lookup: the bucket, or a miss with the epoch to fill it under.
pub enum Lookup {
    Hit(CachedBucket),
    Miss(Epoch),
}

/// The change count a miss saw; [`BucketCache::fill`] takes it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Epoch(u64);

#[derive(Default)]
struct State {
    /// Changes ended so far.
    epoch: u64,
    buckets: BTreeMap<String, CachedBucket>,
}

/// Existing buckets and their rules; see the module comment for when entries are trusted.
#[derive(Default)]
pub struct BucketCache {
    state: Mutex<State>,
}

impl BucketCache {
    pub fn lookup(&self, bucket: &str) -> Lookup {
        let state = self.lock();
        match state.buckets.get(bucket) {
            Some(cached) => Lookup::Hit(cached.clone()),
            None => Lookup::Miss(Epoch(state.epoch)),
        }
    }

    /// Remembers `bucket` as read from the database after the miss that returned `epoch`,
    /// unless a change ended since.
    pub fn fill(&self, bucket: &str, epoch: Epoch, cached: CachedBucket) {
        let mut state = self.lock();
        if state.epoch != epoch.0 {
            return;
        }
        if state.buckets.len() >= MAX_CACHED_BUCKETS {
            state.buckets.clear();
        }
        state.buckets.insert(bucket.to_string(), cached);
    }

    /// Marks a change of `bucket` in progress until the returned guard drops.
    pub fn change<'a>(&'a self, bucket: &'a str) -> BucketChange<'a> {
        BucketChange {
            cache: self,
            bucket,
        }
    }

    fn changed(&self, bucket: &str) {
        let mut state = self.lock();
        state.epoch += 1;
        state.buckets.remove(bucket);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a map and a counter, each left whole by every operation: a panic
        // elsewhere while it was held does not make it wrong.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Held while a bucket's row or rules are written; its drop makes the cache forget the bucket.
#[must_use = "the cache forgets the bucket when this drops: hold it across the writes"]
pub struct BucketChange<'a> {
    cache: &'a BucketCache,
    bucket: &'a str,
}

impl Drop for BucketChange<'_> {
    fn drop(&mut self) {
        self.cache.changed(self.bucket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(cache: &BucketCache, bucket: &str) -> bool {
        matches!(cache.lookup(bucket), Lookup::Hit(_))
    }

    fn miss(cache: &BucketCache, bucket: &str) -> Epoch {
        match cache.lookup(bucket) {
            Lookup::Miss(epoch) => epoch,
            Lookup::Hit(_) => panic!("{bucket} is cached"),
        }
    }

    #[test]
    fn a_filled_bucket_is_a_hit_until_a_change_of_it_ends() {
        let cache = BucketCache::default();
        let epoch = miss(&cache, "photos");
        cache.fill("photos", epoch, CachedBucket::default());
        assert!(hit(&cache, "photos"));
        let change = cache.change("photos");
        drop(change);
        assert!(!hit(&cache, "photos"));
    }

    #[test]
    fn a_fill_from_before_a_change_ended_is_dropped() {
        let cache = BucketCache::default();
        let epoch = miss(&cache, "photos");
        drop(cache.change("photos"));
        cache.fill("photos", epoch, CachedBucket::default());
        assert!(!hit(&cache, "photos"), "a deleted bucket came back");
        let epoch = miss(&cache, "photos");
        cache.fill("photos", epoch, CachedBucket::default());
        assert!(hit(&cache, "photos"));
    }

    #[test]
    fn a_change_of_one_bucket_keeps_the_others() {
        let cache = BucketCache::default();
        for bucket in ["a-bucket", "b-bucket"] {
            let epoch = miss(&cache, bucket);
            cache.fill(bucket, epoch, CachedBucket::default());
        }
        drop(cache.change("a-bucket"));
        assert!(!hit(&cache, "a-bucket"));
        assert!(hit(&cache, "b-bucket"));
    }

    #[test]
    fn a_full_cache_is_emptied_before_it_grows() {
        let cache = BucketCache::default();
        for index in 0..=MAX_CACHED_BUCKETS {
            let bucket = format!("bucket-{index}");
            let epoch = miss(&cache, &bucket);
            cache.fill(&bucket, epoch, CachedBucket::default());
        }
        assert_eq!(cache.lock().buckets.len(), 1);
        assert!(hit(&cache, &format!("bucket-{MAX_CACHED_BUCKETS}")));
    }
}
