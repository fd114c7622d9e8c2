//! Bucket lifecycle rules (PutBucketLifecycleConfiguration): objects expire by age or on a date,
//! warm objects transition to a cold class (GLACIER, DEEP_ARCHIVE, GLACIER_IR) by age or on a
//! date, and multipart uploads left open are aborted, per prefix, as S3's rules do. The rules live as
//! JSON in `bucket_config.lifecycle` of the metadata database; [`LifecycleSweeper`] applies
//! them. docs/s3.md "Lifecycle" describes what is supported.
//!
//! Invariants:
//! - an object expires at S3's time: its creation plus `Days`, rounded up to the next midnight
//!   UTC (a multiple of `S3Settings::lifecycle_day_s`, which tests shorten), or at a rule's
//!   `Date` (midnight UTC); only `Enabled` rules whose prefix the key starts with count, the
//!   earliest wins;
//! - an object is removed only if, under its key's lock, it is still the version that was
//!   listed (same content hash) and still expired: a PUT that replaced it in between is never
//!   expired by the old one's age;
//! - expiry deletes exactly as DELETE does (object, metadata rows, restored copy) and needs no
//!   spin-up: a migrated object's bytes become dead space that compaction reclaims later;
//! - a transition is due at the same kind of time as an expiry (`Days`, 0 allowed, rounded up
//!   to the next midnight, or a `Date`); it demotes the object in the store
//!   (`Store::demote`, conditional on the listed version), after which the migrator moves it to
//!   the groups; it never spins a disk up itself and never touches an object already cold;
//! - a rule the server cannot honour exactly (transitions to online classes, noncurrent
//!   versions, tag or size filters) is refused with `501 NotImplemented` and the stored rules
//!   stay as they were;
//! - one sweep expires at most [`MAX_EXPIRATIONS_PER_SWEEP`] objects and aborts at most
//!   [`crate::multipart::expiry::MAX_ABORTS_PER_SWEEP`] uploads; the rest wait for the next.

use crate::headers::http_date;
use crate::meta::{MetaDb, MetaError};
use crate::multipart::Multipart;
use crate::multipart::expiry::{MAX_ABORTS_PER_SWEEP, abort_uploads};
use crate::names::bucket_prefix;
use crate::restore::Restorer;
use crate::service::tier_of_class;
use crate::service::{KeyLocks, Removed, SpinwiseS3, meta_error, remove_object};
use crate::sweeper::{FirstPass, Sweep, sweep_until_dropped};
use s3s::dto::{
    AbortIncompleteMultipartUpload, BucketLifecycleConfiguration, ExpirationStatus,
    LifecycleExpiration, LifecycleRule, LifecycleRuleFilter, Timestamp, Transition,
    TransitionStorageClass,
};
use s3s::{S3Error, S3ErrorCode, S3Result};
use serde::{Deserialize, Serialize};
use spinwise_catalog::{ObjectRecord, Tier};
use spinwise_store::clock::{Clock, Paced, pacing};
use spinwise_store::{SqliteStore, StoreError};
use sqlx::Row;
use std::sync::Arc;
use std::time::Duration;

/// The most rules one bucket may have (S3's limit).
pub const MAX_RULES: usize = 1000;
/// The longest rule ID, in characters (S3's limit).
pub const MAX_RULE_ID_CHARS: usize = 255;
/// The most objects one sweep expires; more wait for the next sweep.
pub const MAX_EXPIRATIONS_PER_SWEEP: usize = 10_000;
/// The most objects one sweep transitions; more wait for the next sweep.
pub const MAX_TRANSITIONS_PER_SWEEP: usize = 10_000;
/// Objects listed per catalog query while sweeping.
const LIST_PAGE: u32 = 1000;
const MIN_SWEEP_INTERVAL: Duration = Duration::from_millis(50);
const MAX_SWEEP_INTERVAL: Duration = Duration::from_secs(3600);

/// The migration step adding the rules' column (appended to `meta::MIGRATIONS`); NULL: none.
pub const SCHEMA_STEP: &str = "ALTER TABLE bucket_config ADD COLUMN lifecycle TEXT;";

/// One rule as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub id: String,
    pub enabled: bool,
    /// Keys in the bucket starting with this (empty: every key).
    pub prefix: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_after_days: Option<u32>,
    /// A midnight UTC, in seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_on_unix_s: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_uploads_after_days: Option<u32>,
    /// A transition to a cold class: the class, and when (`Days` after creation or a `Date`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transition: Option<TransitionRule>,
}

/// A rule's transition to a cold class (stored form).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransitionRule {
    /// `GLACIER`, `DEEP_ARCHIVE` or `GLACIER_IR`: every one of them goes to the sleeping disks.
    pub storage_class: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_days: Option<u32>,
    /// A midnight UTC, in seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_unix_s: Option<i64>,
}

/// A bucket's rules, in the order they were given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lifecycle {
    pub rules: Vec<Rule>,
}

fn invalid(code: S3ErrorCode, message: impl Into<String>) -> S3Error {
    S3Error::with_message(code, message.into())
}

fn unsupported(what: &str) -> S3Error {
    invalid(
        S3ErrorCode::NotImplemented,
        format!(
            "lifecycle rules with {what} are not supported here: rules may expire objects (Days or \
             Date), transition them to GLACIER, DEEP_ARCHIVE or GLACIER_IR (Days or Date; all go \
             to the sleeping disks) and abort incomplete multipart uploads, filtered by prefix"
        ),
    )
}

impl Lifecycle {
    /// Checks and converts a PutBucketLifecycleConfiguration body.
    pub fn from_s3(config: BucketLifecycleConfiguration) -> S3Result<Lifecycle> {
        if config.rules.is_empty() || config.rules.len() > MAX_RULES {
            return Err(invalid(
                S3ErrorCode::MalformedXML,
                format!("a lifecycle configuration has 1 to {MAX_RULES} rules"),
            ));
        }
        let mut rules = Vec::with_capacity(config.rules.len());
        for (index, rule) in config.rules.into_iter().enumerate() {
            let rule = Rule::from_s3(rule, index)?;
            if rules.iter().any(|other: &Rule| other.id == rule.id) {
                return Err(invalid(
                    S3ErrorCode::InvalidArgument,
                    format!(
                        "Rule ID must be unique. Found same ID for more than one rule: {}",
                        rule.id
                    ),
                ));
            }
            rules.push(rule);
        }
        Ok(Lifecycle { rules })
    }

    /// The rules as GetBucketLifecycleConfiguration shows them (the `Filter` form).
    pub fn to_s3(&self) -> Vec<LifecycleRule> {
        self.rules.iter().map(Rule::to_s3).collect()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("plain fields serialize")
    }

    pub fn from_json(json: &str) -> Result<Lifecycle, String> {
        serde_json::from_str(json).map_err(|error| error.to_string())
    }

    /// When the object `key` (in the bucket) created at `created_unix_ms` expires, and by which
    /// rule: the earliest of the enabled rules whose prefix it has.
    pub fn expiry(&self, key: &str, created_unix_ms: i64, day_ms: i64) -> Option<(i64, &str)> {
        self.rules
            .iter()
            .filter(|rule| rule.enabled && key.starts_with(&rule.prefix))
            .filter_map(|rule| {
                Some((
                    rule.expiry_unix_ms(created_unix_ms, day_ms)?,
                    rule.id.as_str(),
                ))
            })
            .min()
    }

    /// When the object `key` created at `created_unix_ms` transitions to a cold class, and by
    /// which rule: the earliest of the enabled rules with a transition whose prefix it has.
    pub fn transition(&self, key: &str, created_unix_ms: i64, day_ms: i64) -> Option<(i64, &str)> {
        self.rules
            .iter()
            .filter(|rule| rule.enabled && key.starts_with(&rule.prefix))
            .filter_map(|rule| {
                let transition = rule.transition.as_ref()?;
                let due = due_unix_ms(
                    created_unix_ms,
                    day_ms,
                    transition.after_days,
                    transition.on_unix_s,
                )?;
                Some((due, rule.id.as_str()))
            })
            .min()
    }
}

impl Rule {
    fn from_s3(rule: LifecycleRule, index: usize) -> S3Result<Rule> {
        if rule.noncurrent_version_expiration.is_some()
            || rule
                .noncurrent_version_transitions
                .as_ref()
                .is_some_and(|t| !t.is_empty())
        {
            return Err(unsupported(
                "noncurrent versions (buckets here are not versioned)",
            ));
        }
        let id = rule.id.unwrap_or_else(|| format!("rule-{}", index + 1));
        if id.is_empty() || id.chars().count() > MAX_RULE_ID_CHARS {
            return Err(invalid(
                S3ErrorCode::InvalidArgument,
                format!("a rule ID has 1 to {MAX_RULE_ID_CHARS} characters"),
            ));
        }
        let enabled = match rule.status.as_str() {
            ExpirationStatus::ENABLED => true,
            ExpirationStatus::DISABLED => false,
            other => {
                return Err(invalid(
                    S3ErrorCode::MalformedXML,
                    format!("rule {id}: Status is Enabled or Disabled, not {other:?}"),
                ));
            }
        };
        let prefix = rule_prefix(rule.prefix, rule.filter, &id)?;
        let (expire_after_days, expire_on_unix_s) = match rule.expiration {
            Some(expiration) => expiration_of(expiration, &id)?,
            None => (None, None),
        };
        let abort_uploads_after_days = match rule.abort_incomplete_multipart_upload {
            Some(abort) => Some(abort_days(abort, &id)?),
            None => None,
        };
        let transition = transition_of(rule.transitions.unwrap_or_default(), &id)?;
        if expire_after_days.is_none()
            && expire_on_unix_s.is_none()
            && abort_uploads_after_days.is_none()
            && transition.is_none()
        {
            return Err(invalid(
                S3ErrorCode::InvalidRequest,
                format!("rule {id}: at least one action needs to be specified in a rule"),
            ));
        }
        Ok(Rule {
            id,
            enabled,
            prefix,
            expire_after_days,
            expire_on_unix_s,
            abort_uploads_after_days,
            transition,
        })
    }

    fn to_s3(&self) -> LifecycleRule {
        let expiration = (self.expire_after_days.is_some() || self.expire_on_unix_s.is_some())
            .then(|| LifecycleExpiration {
                days: self.expire_after_days.map(|days| days as i32),
                date: self.expire_on_unix_s.map(timestamp_of),
                expired_object_delete_marker: None,
            });
        LifecycleRule {
            id: Some(self.id.clone()),
            status: ExpirationStatus::from_static(if self.enabled {
                ExpirationStatus::ENABLED
            } else {
                ExpirationStatus::DISABLED
            }),
            filter: Some(LifecycleRuleFilter {
                prefix: Some(self.prefix.clone()),
                ..LifecycleRuleFilter::default()
            }),
            expiration,
            abort_incomplete_multipart_upload: self.abort_uploads_after_days.map(|days| {
                AbortIncompleteMultipartUpload {
                    days_after_initiation: Some(days as i32),
                }
            }),
            noncurrent_version_expiration: None,
            noncurrent_version_transitions: None,
            prefix: None,
            transitions: self.transition.as_ref().map(|transition| {
                vec![Transition {
                    days: transition.after_days.map(|days| days as i32),
                    date: transition.on_unix_s.map(timestamp_of),
                    storage_class: Some(TransitionStorageClass::from(
                        transition.storage_class.clone(),
                    )),
                }]
            }),
        }
    }

    /// When an object created at `created_unix_ms` expires by this rule (unix ms), if it does.
    pub fn expiry_unix_ms(&self, created_unix_ms: i64, day_ms: i64) -> Option<i64> {
        due_unix_ms(
            created_unix_ms,
            day_ms,
            self.expire_after_days,
            self.expire_on_unix_s,
        )
    }
}

/// When an action of `after_days` (rounded up to the next midnight UTC, as S3 does; here the
/// next whole "day") or on the midnight `on_unix_s` is due for an object created at
/// `created_unix_ms`, whichever is earlier; `None` when the rule gives neither.
fn due_unix_ms(
    created_unix_ms: i64,
    day_ms: i64,
    after_days: Option<u32>,
    on_unix_s: Option<i64>,
) -> Option<i64> {
    let by_age = after_days.map(|days| {
        let due = created_unix_ms.saturating_add(i64::from(days).saturating_mul(day_ms));
        due.div_euclid(day_ms)
            .saturating_add(i64::from(due.rem_euclid(day_ms) > 0))
            * day_ms
    });
    let on_date = on_unix_s.map(|seconds| seconds.saturating_mul(1000));
    by_age.into_iter().chain(on_date).min()
}

/// The rule's transition: at most one, to a cold class, with exactly one of Days (0 or more)
/// and Date. A transition to an online class (STANDARD_IA, ONEZONE_IA, INTELLIGENT_TIERING)
/// would leave the object where it is, so it is refused rather than silently ignored.
fn transition_of(transitions: Vec<Transition>, id: &str) -> S3Result<Option<TransitionRule>> {
    let mut transitions = transitions.into_iter();
    let Some(transition) = transitions.next() else {
        return Ok(None);
    };
    if transitions.next().is_some() {
        return Err(unsupported("more than one transition per rule"));
    }
    let storage_class = transition
        .storage_class
        .map(|class| class.as_str().to_owned())
        .ok_or_else(|| {
            invalid(
                S3ErrorCode::MalformedXML,
                format!("rule {id}: a Transition needs a StorageClass"),
            )
        })?;
    if tier_of_class(Some(&storage_class), Tier::Warm) != Tier::Cold {
        return Err(unsupported(&format!(
            "transitions to {storage_class} (an online class: objects in it stay warm)"
        )));
    }
    let (after_days, on_unix_s) = match (transition.days, transition.date) {
        (Some(days), None) => {
            let days = u32::try_from(days).map_err(|_| {
                invalid(
                    S3ErrorCode::InvalidArgument,
                    format!("rule {id}: 'Days' in a Transition must be 0 or more"),
                )
            })?;
            (Some(days), None)
        }
        (None, Some(date)) => (None, Some(midnight_of(&date, id)?)),
        _ => {
            return Err(invalid(
                S3ErrorCode::MalformedXML,
                format!("rule {id}: a Transition has exactly one of Days and Date"),
            ));
        }
    };
    Ok(Some(TransitionRule {
        storage_class,
        after_days,
        on_unix_s,
    }))
}

/// The rule's prefix, from `Filter` (`Prefix`, or `And` with only a prefix) or the older
/// rule-level `Prefix`; tag and size filters are not supported.
fn rule_prefix(
    legacy: Option<String>,
    filter: Option<LifecycleRuleFilter>,
    id: &str,
) -> S3Result<String> {
    let Some(filter) = filter else {
        return Ok(legacy.unwrap_or_default());
    };
    if legacy.is_some() {
        return Err(invalid(
            S3ErrorCode::MalformedXML,
            format!("rule {id}: Filter and Prefix cannot both be given"),
        ));
    }
    if filter.tag.is_some()
        || filter.object_size_greater_than.is_some()
        || filter.object_size_less_than.is_some()
    {
        return Err(unsupported("tag or object size filters"));
    }
    match filter.and {
        Some(and) => {
            let has_tags = and.tags.as_ref().is_some_and(|tags| !tags.is_empty());
            if has_tags
                || and.object_size_greater_than.is_some()
                || and.object_size_less_than.is_some()
            {
                return Err(unsupported("tag or object size filters"));
            }
            Ok(and.prefix.or(filter.prefix).unwrap_or_default())
        }
        None => Ok(filter.prefix.unwrap_or_default()),
    }
}

fn expiration_of(
    expiration: LifecycleExpiration,
    id: &str,
) -> S3Result<(Option<u32>, Option<i64>)> {
    if expiration.expired_object_delete_marker.is_some() {
        return Err(unsupported(
            "ExpiredObjectDeleteMarker (buckets here are not versioned)",
        ));
    }
    match (expiration.days, expiration.date) {
        (Some(days), None) => {
            let days = u32::try_from(days)
                .ok()
                .filter(|&days| days >= 1)
                .ok_or_else(|| {
                    invalid(
                        S3ErrorCode::InvalidArgument,
                        format!(
                            "rule {id}: 'Days' in the Expiration action must be a positive integer"
                        ),
                    )
                })?;
            Ok((Some(days), None))
        }
        (None, Some(date)) => Ok((None, Some(midnight_of(&date, id)?))),
        _ => Err(invalid(
            S3ErrorCode::MalformedXML,
            format!("rule {id}: an Expiration has exactly one of Days and Date"),
        )),
    }
}

fn abort_days(abort: AbortIncompleteMultipartUpload, id: &str) -> S3Result<u32> {
    abort
        .days_after_initiation
        .and_then(|days| u32::try_from(days).ok())
        .filter(|&days| days >= 1)
        .ok_or_else(|| {
            invalid(
                S3ErrorCode::InvalidArgument,
                format!("rule {id}: 'DaysAfterInitiation' must be a positive integer"),
            )
        })
}

/// The date's seconds since the epoch; it must be a midnight UTC, as S3 requires.
fn midnight_of(date: &Timestamp, id: &str) -> S3Result<i64> {
    let time = time::OffsetDateTime::from(date.clone());
    let seconds = time.unix_timestamp();
    if seconds < 0 || seconds % 86_400 != 0 || time.nanosecond() != 0 {
        return Err(invalid(
            S3ErrorCode::InvalidArgument,
            format!("rule {id}: 'Date' must be at midnight GMT"),
        ));
    }
    Ok(seconds)
}

fn timestamp_of(unix_s: i64) -> Timestamp {
    let time = std::time::UNIX_EPOCH + Duration::from_secs(u64::try_from(unix_s).unwrap_or(0));
    Timestamp::from(time)
}

// ---- the metadata database ----

impl MetaDb {
    /// Sets (or, with `None`, removes) `bucket`'s rules; false when the bucket has no config row.
    pub async fn set_lifecycle(
        &self,
        bucket: &str,
        lifecycle: Option<&Lifecycle>,
    ) -> Result<bool, MetaError> {
        let done = sqlx::query("UPDATE bucket_config SET lifecycle = ? WHERE bucket = ?")
            .bind(lifecycle.map(Lifecycle::to_json))
            .bind(bucket)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// `bucket`'s rules, if it has any.
    pub async fn lifecycle(&self, bucket: &str) -> Result<Option<Lifecycle>, MetaError> {
        let json: Option<Option<String>> =
            sqlx::query_scalar("SELECT lifecycle FROM bucket_config WHERE bucket = ?")
                .bind(bucket)
                .fetch_optional(self.pool())
                .await?;
        json.flatten()
            .map(|json| parse_lifecycle(bucket, &json))
            .transpose()
    }

    /// Every bucket that has rules, by name.
    pub async fn lifecycles(&self) -> Result<Vec<(String, Lifecycle)>, MetaError> {
        let rows = sqlx::query(
            "SELECT bucket, lifecycle FROM bucket_config WHERE lifecycle IS NOT NULL ORDER BY bucket",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                let bucket: String = row.get(0);
                let json: String = row.get(1);
                let lifecycle = parse_lifecycle(&bucket, &json)?;
                Ok((bucket, lifecycle))
            })
            .collect()
    }
}

fn parse_lifecycle(bucket: &str, json: &str) -> Result<Lifecycle, MetaError> {
    Lifecycle::from_json(json).map_err(|message| MetaError::Corrupt {
        key: format!("lifecycle of {bucket}"),
        message,
    })
}

// ---- the sweeper ----

/// What one sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub objects_expired: usize,
    /// Warm objects demoted to cold by a transition (the migrator moves them afterwards).
    pub objects_transitioned: usize,
    pub uploads_aborted: usize,
}

/// Applies the buckets' rules: what it needs of the service, shared with the [`SpinwiseS3`]
/// that owns it (the sweeper task holds it only while sweeping).
pub struct LifecycleSweeper {
    store: Arc<SqliteStore>,
    meta: MetaDb,
    restorer: Arc<Restorer>,
    key_locks: Arc<KeyLocks>,
    multipart: Arc<Multipart>,
    day_ms: i64,
    /// The sweeper task's next wake ([`crate::sweeper`]).
    paced: Paced,
    /// Wakes the task for a pass now: rules were set ([`LifecycleSweeper::nudge`]).
    nudges: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for LifecycleSweeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LifecycleSweeper")
            .field("day_ms", &self.day_ms)
            .finish_non_exhaustive()
    }
}

impl LifecycleSweeper {
    /// Starts the sweeper task, which sweeps at once (what expired while the server was down;
    /// on its own task, so a large bucket does not delay start-up) and then every interval.
    pub(crate) fn start(service: &SpinwiseS3) -> Arc<LifecycleSweeper> {
        let day_s = service.settings.lifecycle_day_s.max(1);
        let (pacing, paced) = pacing();
        let sweeper = Arc::new(LifecycleSweeper {
            paced,
            store: Arc::clone(&service.store),
            meta: service.meta.clone(),
            restorer: Arc::clone(service.restorer()),
            key_locks: Arc::clone(&service.key_locks),
            multipart: Arc::clone(&service.multipart),
            day_ms: i64::try_from(day_s.saturating_mul(1000)).unwrap_or(i64::MAX),
            nudges: Arc::new(tokio::sync::Notify::new()),
        });
        let weak = Arc::downgrade(&sweeper);
        tokio::spawn(sweep_until_dropped(weak, pacing, FirstPass::AtOnce));
        sweeper
    }

    /// Asks for a pass now rather than an interval later (a pass already running is followed
    /// by one more): what new rules make due (a transition on a past Date, say) happens at once.
    pub fn nudge(&self) {
        self.nudges.notify_one();
    }

    /// When the sweeper task next sweeps (see [`crate::sweeper`]).
    pub fn paced(&self) -> &Paced {
        &self.paced
    }

    /// Expires the objects and aborts the uploads the rules say are due now.
    pub async fn sweep(&self) -> Result<SweepReport, MetaError> {
        let now_ms = self.store.now_unix_ms();
        let mut report = SweepReport::default();
        for (bucket, lifecycle) in self.meta.lifecycles().await? {
            report.objects_expired += self.expire_in(&bucket, &lifecycle, now_ms).await?;
            report.objects_transitioned += self.transition_in(&bucket, &lifecycle, now_ms).await;
            report.uploads_aborted += self.abort_in(&bucket, &lifecycle, now_ms).await?;
        }
        Ok(report)
    }

    /// Expires `bucket`'s due objects, rule prefix by rule prefix.
    async fn expire_in(
        &self,
        bucket: &str,
        lifecycle: &Lifecycle,
        now_ms: i64,
    ) -> Result<usize, MetaError> {
        let base = bucket_prefix(bucket);
        let mut expired = 0;
        let expiring = lifecycle.rules.iter().filter(|rule| {
            rule.enabled && (rule.expire_after_days.is_some() || rule.expire_on_unix_s.is_some())
        });
        for rule in expiring {
            let prefix = format!("{base}{}", rule.prefix);
            let mut after: Option<String> = None;
            loop {
                let records = match self.store.list(&prefix, after.as_deref(), LIST_PAGE).await {
                    Ok(records) => records,
                    Err(error) => {
                        tracing::warn!(%error, bucket, "listing objects for lifecycle expiry");
                        return Ok(expired);
                    }
                };
                let Some(last) = records.last() else { break };
                after = Some(last.key.clone());
                for record in &records {
                    if expired >= MAX_EXPIRATIONS_PER_SWEEP {
                        return Ok(expired);
                    }
                    let key = &record.key[base.len()..];
                    let due = lifecycle.expiry(key, record.created_unix_ms, self.day_ms);
                    if let Some((due_ms, rule_id)) = due.filter(|(due_ms, _)| *due_ms <= now_ms)
                        && self.expire_one(record, now_ms).await?
                    {
                        expired += 1;
                        tracing::info!(
                            bucket,
                            key,
                            rule = rule_id,
                            due_unix_ms = due_ms,
                            "lifecycle expired an object"
                        );
                    }
                }
            }
        }
        Ok(expired)
    }

    /// Demotes `bucket`'s warm objects whose transition is due, rule prefix by rule prefix;
    /// returns how many. A store failure ends this bucket's pass (logged; the next sweep
    /// retries): a transition is never urgent, nothing is lost by waiting.
    async fn transition_in(&self, bucket: &str, lifecycle: &Lifecycle, now_ms: i64) -> usize {
        let base = bucket_prefix(bucket);
        let mut transitioned = 0;
        let moving = lifecycle
            .rules
            .iter()
            .filter(|rule| rule.enabled && rule.transition.is_some());
        for rule in moving {
            let prefix = format!("{base}{}", rule.prefix);
            let mut after: Option<String> = None;
            loop {
                let records = match self.store.list(&prefix, after.as_deref(), LIST_PAGE).await {
                    Ok(records) => records,
                    Err(error) => {
                        tracing::warn!(%error, bucket, "listing objects for lifecycle transitions");
                        return transitioned;
                    }
                };
                let Some(last) = records.last() else { break };
                after = Some(last.key.clone());
                for record in records.iter().filter(|record| record.tier == Tier::Warm) {
                    if transitioned >= MAX_TRANSITIONS_PER_SWEEP {
                        return transitioned;
                    }
                    let key = &record.key[base.len()..];
                    let due = lifecycle.transition(key, record.created_unix_ms, self.day_ms);
                    let Some((due_ms, rule_id)) = due.filter(|(due_ms, _)| *due_ms <= now_ms)
                    else {
                        continue;
                    };
                    match self.store.demote_listed(record).await {
                        Ok(true) => {
                            transitioned += 1;
                            tracing::info!(
                                bucket,
                                key,
                                rule = rule_id,
                                due_unix_ms = due_ms,
                                "lifecycle transitioned an object to the cold tier"
                            );
                        }
                        Ok(false) | Err(StoreError::NoSuchKey { .. }) => {}
                        Err(error) => {
                            tracing::warn!(%error, key, "lifecycle transition; next sweep");
                            return transitioned;
                        }
                    }
                }
            }
        }
        transitioned
    }

    /// Removes the listed object if, under its key's lock, it is still that version and due.
    async fn expire_one(&self, listed: &ObjectRecord, now_ms: i64) -> Result<bool, MetaError> {
        let _key_held = self.key_locks.of(&listed.key).lock().await;
        match self.store.stat(&listed.key).await {
            Ok(current) if current.content_hash == listed.content_hash => {
                debug_assert!(current.created_unix_ms <= now_ms);
            }
            Ok(_) | Err(StoreError::NoSuchKey { .. }) => return Ok(false),
            Err(error) => {
                tracing::warn!(%error, key = listed.key, "looking up an object lifecycle would expire");
                return Ok(false);
            }
        }
        match remove_object(&self.store, &self.meta, &self.restorer, &listed.key).await {
            Ok(()) => Ok(true),
            Err(Removed::Meta(error)) => Err(error),
            Err(Removed::Store(error)) => {
                tracing::warn!(%error, key = listed.key, "expiring an object by lifecycle; next sweep");
                Ok(false)
            }
        }
    }

    /// Aborts `bucket`'s uploads older than a rule's `DaysAfterInitiation`.
    async fn abort_in(
        &self,
        bucket: &str,
        lifecycle: &Lifecycle,
        now_ms: i64,
    ) -> Result<usize, MetaError> {
        let mut aborted = 0;
        for rule in lifecycle.rules.iter().filter(|rule| rule.enabled) {
            let Some(days) = rule.abort_uploads_after_days else {
                continue;
            };
            let cutoff_ms = now_ms.saturating_sub(i64::from(days).saturating_mul(self.day_ms));
            let uploads = self
                .meta
                .bucket_uploads_started_before(
                    bucket,
                    &rule.prefix,
                    cutoff_ms,
                    MAX_ABORTS_PER_SWEEP,
                )
                .await?;
            aborted +=
                abort_uploads(&self.meta, &self.multipart, &uploads, now_ms, &rule.id).await?;
        }
        Ok(aborted)
    }

    fn sweep_interval(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.day_ms / 8).unwrap_or(u64::MAX))
            .clamp(MIN_SWEEP_INTERVAL, MAX_SWEEP_INTERVAL)
    }
}

impl Sweep for LifecycleSweeper {
    fn interval(&self) -> Duration {
        self.sweep_interval()
    }

    fn nudges(&self) -> Option<Arc<tokio::sync::Notify>> {
        Some(Arc::clone(&self.nudges))
    }

    fn clock(&self) -> Arc<dyn Clock> {
        self.store.clock().clone()
    }

    async fn sweep_once(&self) {
        if let Err(error) = self.sweep().await {
            tracing::warn!(%error, "applying lifecycle rules");
        }
    }
}

// ---- the S3 calls ----

impl SpinwiseS3 {
    pub(crate) async fn put_lifecycle(
        &self,
        bucket: &str,
        configuration: Option<BucketLifecycleConfiguration>,
    ) -> S3Result<()> {
        self.require_bucket(bucket).await?;
        let configuration = configuration.ok_or_else(|| {
            invalid(
                S3ErrorCode::MalformedXML,
                "a LifecycleConfiguration body is required",
            )
        })?;
        let lifecycle = Lifecycle::from_s3(configuration)?;
        let _changing = self.buckets.change(bucket);
        self.meta
            .set_lifecycle(bucket, Some(&lifecycle))
            .await
            .map_err(meta_error)?;
        if let Some(sweeper) = self.lifecycle() {
            sweeper.nudge();
        }
        Ok(())
    }

    pub(crate) async fn get_lifecycle(&self, bucket: &str) -> S3Result<Vec<LifecycleRule>> {
        match self.existing_bucket(bucket).await?.lifecycle {
            Some(lifecycle) => Ok(lifecycle.to_s3()),
            None => Err(invalid(
                S3ErrorCode::NoSuchLifecycleConfiguration,
                "The lifecycle configuration does not exist",
            )),
        }
    }

    /// The `x-amz-expiration` of a GET or HEAD: when the bucket's rules expire `record`, and by
    /// which rule (`expiry-date="Fri, 23 Dec 2012 00:00:00 GMT", rule-id="..."`, as S3 sends).
    pub(crate) async fn expiration_header(
        &self,
        bucket: &str,
        record: &ObjectRecord,
    ) -> S3Result<Option<String>> {
        let Some(lifecycle) = self.existing_bucket(bucket).await?.lifecycle else {
            return Ok(None);
        };
        let key = &record.key[bucket_prefix(bucket).len()..];
        let day_ms = i64::try_from(self.settings.lifecycle_day_s.max(1).saturating_mul(1000))
            .unwrap_or(i64::MAX);
        let expiry = lifecycle.expiry(key, record.created_unix_ms, day_ms);
        Ok(expiry.map(|(unix_ms, rule_id)| {
            let date = timestamp_of(unix_ms.div_euclid(1000));
            format!(
                "expiry-date=\"{}\", rule-id=\"{rule_id}\"",
                http_date(&date)
            )
        }))
    }

    pub(crate) async fn delete_lifecycle(&self, bucket: &str) -> S3Result<()> {
        self.require_bucket(bucket).await?;
        let _changing = self.buckets.change(bucket);
        self.meta
            .set_lifecycle(bucket, None)
            .await
            .map_err(meta_error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use s3s::dto::LifecycleRuleAndOperator;

    const DAY_MS: i64 = 86_400_000;

    fn rule(id: &str, prefix: &str, days: i32) -> LifecycleRule {
        LifecycleRule {
            id: Some(id.into()),
            status: ExpirationStatus::from_static(ExpirationStatus::ENABLED),
            filter: Some(LifecycleRuleFilter {
                prefix: Some(prefix.into()),
                ..LifecycleRuleFilter::default()
            }),
            expiration: Some(LifecycleExpiration {
                days: Some(days),
                date: None,
                expired_object_delete_marker: None,
            }),
            abort_incomplete_multipart_upload: None,
            noncurrent_version_expiration: None,
            noncurrent_version_transitions: None,
            prefix: None,
            transitions: None,
        }
    }

    fn parse(rules: Vec<LifecycleRule>) -> S3Result<Lifecycle> {
        Lifecycle::from_s3(BucketLifecycleConfiguration { rules })
    }

    fn code_of(result: S3Result<Lifecycle>) -> S3ErrorCode {
        result
            .expect_err("the rules should be refused")
            .code()
            .clone()
    }

    #[test]
    fn an_object_expires_at_the_first_midnight_after_its_creation_plus_days() {
        let lifecycle = parse(vec![rule("logs", "logs/", 30)]).unwrap();
        let created = 10 * DAY_MS + 5 * 3_600_000; // day 10, 05:00
        assert_eq!(
            lifecycle.expiry("logs/a", created, DAY_MS),
            Some((41 * DAY_MS, "logs"))
        );
        // Created exactly at midnight: no rounding.
        assert_eq!(
            lifecycle.expiry("logs/a", 10 * DAY_MS, DAY_MS),
            Some((40 * DAY_MS, "logs"))
        );
        assert_eq!(lifecycle.expiry("other/a", created, DAY_MS), None);
        assert_eq!(
            lifecycle.expiry("logs", created, DAY_MS),
            None,
            "the prefix is logs/"
        );
    }

    #[test]
    fn the_earliest_enabled_matching_rule_wins_and_disabled_rules_expire_nothing() {
        let mut disabled = rule("off", "", 1);
        disabled.status = ExpirationStatus::from_static(ExpirationStatus::DISABLED);
        let mut dated = rule("dated", "tmp/", 1);
        dated.expiration = Some(LifecycleExpiration {
            days: None,
            date: Some(timestamp_of(5 * 86_400)),
            expired_object_delete_marker: None,
        });
        let lifecycle = parse(vec![disabled, rule("all", "", 90), dated]).unwrap();
        assert_eq!(
            lifecycle.expiry("tmp/x", 0, DAY_MS),
            Some((5 * DAY_MS, "dated"))
        );
        assert_eq!(
            lifecycle.expiry("keep/x", 0, DAY_MS),
            Some((90 * DAY_MS, "all"))
        );
        let only_disabled = Lifecycle {
            rules: vec![Rule {
                enabled: false,
                ..lifecycle.rules[1].clone()
            }],
        };
        assert_eq!(only_disabled.expiry("keep/x", 0, DAY_MS), None);
    }

    #[test]
    fn rules_round_trip_through_json_and_the_s3_form() {
        let mut with_abort = rule("uploads", "", 7);
        with_abort.abort_incomplete_multipart_upload = Some(AbortIncompleteMultipartUpload {
            days_after_initiation: Some(2),
        });
        let lifecycle = parse(vec![with_abort, rule("logs", "logs/", 30)]).unwrap();
        assert_eq!(
            Lifecycle::from_json(&lifecycle.to_json()).unwrap(),
            lifecycle
        );
        let again = Lifecycle::from_s3(BucketLifecycleConfiguration {
            rules: lifecycle.to_s3(),
        })
        .unwrap();
        assert_eq!(again, lifecycle);
        assert!(Lifecycle::from_json("{").is_err());
    }

    #[test]
    fn ids_are_unique_and_bounded_and_missing_ones_are_numbered() {
        assert_eq!(
            code_of(parse(vec![rule("a", "", 1), rule("a", "x", 1)])),
            S3ErrorCode::InvalidArgument
        );
        assert_eq!(
            code_of(parse(vec![rule(&"i".repeat(256), "", 1)])),
            S3ErrorCode::InvalidArgument
        );
        let mut anonymous = rule("", "", 1);
        anonymous.id = None;
        assert_eq!(
            parse(vec![rule("a", "", 1), anonymous]).unwrap().rules[1].id,
            "rule-2"
        );
        assert_eq!(code_of(parse(Vec::new())), S3ErrorCode::MalformedXML);
    }

    fn to_class(class: &'static str, days: i32) -> s3s::dto::Transition {
        s3s::dto::Transition {
            days: Some(days),
            date: None,
            storage_class: Some(TransitionStorageClass::from_static(class)),
        }
    }

    #[test]
    fn a_transition_to_a_cold_class_is_due_at_the_first_midnight_after_creation_plus_days() {
        let mut archive = rule("archive", "packs/", 1);
        archive.expiration = None;
        archive.transitions = Some(vec![to_class("GLACIER", 0)]);
        let lifecycle = parse(vec![archive]).unwrap();
        let stored = &lifecycle.rules[0];
        assert_eq!(stored.transition.as_ref().unwrap().after_days, Some(0));
        // Days = 0: the next midnight after creation (a day here is 1,000 ms).
        assert_eq!(
            lifecycle.transition("packs/a", 1_500, 1000),
            Some((2_000, "archive"))
        );
        assert_eq!(
            lifecycle.transition("packs/a", 2_000, 1000),
            Some((2_000, "archive"))
        );
        assert_eq!(lifecycle.transition("index/a", 1_500, 1000), None);
        assert_eq!(lifecycle.expiry("packs/a", 1_500, 1000), None);
        // Round trip through the stored JSON and the S3 form.
        assert_eq!(
            Lifecycle::from_json(&lifecycle.to_json()).unwrap(),
            lifecycle
        );
        let shown = lifecycle.to_s3();
        assert_eq!(parse(shown).unwrap(), lifecycle);
        let mut bad_days = rule("neg", "", 1);
        bad_days.transitions = Some(vec![to_class("GLACIER", -1)]);
        assert_eq!(code_of(parse(vec![bad_days])), S3ErrorCode::InvalidArgument);
        let mut no_class = rule("none", "", 1);
        no_class.transitions = Some(vec![s3s::dto::Transition::default()]);
        assert_eq!(code_of(parse(vec![no_class])), S3ErrorCode::MalformedXML);
    }

    #[test]
    fn what_cannot_be_honoured_exactly_is_not_implemented() {
        let mut tagged = rule("t", "", 1);
        tagged.filter = Some(LifecycleRuleFilter {
            tag: Some(s3s::dto::Tag {
                key: Some("k".into()),
                value: Some("v".into()),
            }),
            ..LifecycleRuleFilter::default()
        });
        let mut sized = rule("s", "", 1);
        sized.filter = Some(LifecycleRuleFilter {
            and: Some(LifecycleRuleAndOperator {
                object_size_greater_than: Some(10),
                prefix: Some("a".into()),
                ..LifecycleRuleAndOperator::default()
            }),
            ..LifecycleRuleFilter::default()
        });
        let mut transition = rule("tr", "", 1);
        transition.transitions = Some(vec![to_class("STANDARD_IA", 30)]);
        let mut two = rule("two", "", 1);
        two.transitions = Some(vec![to_class("GLACIER", 1), to_class("DEEP_ARCHIVE", 9)]);
        let mut marker = rule("m", "", 1);
        marker.expiration = Some(LifecycleExpiration {
            expired_object_delete_marker: Some(true),
            ..LifecycleExpiration::default()
        });
        for refused in [tagged, sized, transition, two, marker] {
            assert_eq!(code_of(parse(vec![refused])), S3ErrorCode::NotImplemented);
        }
    }

    #[test]
    fn bad_days_dates_statuses_and_empty_rules_are_refused() {
        assert_eq!(
            code_of(parse(vec![rule("z", "", 0)])),
            S3ErrorCode::InvalidArgument
        );
        let mut noon = rule("noon", "", 1);
        noon.expiration = Some(LifecycleExpiration {
            days: None,
            date: Some(timestamp_of(86_400 + 43_200)),
            expired_object_delete_marker: None,
        });
        assert_eq!(code_of(parse(vec![noon])), S3ErrorCode::InvalidArgument);
        let mut both = rule("both", "", 1);
        both.expiration.as_mut().unwrap().date = Some(timestamp_of(86_400));
        assert_eq!(code_of(parse(vec![both])), S3ErrorCode::MalformedXML);
        let mut status = rule("st", "", 1);
        status.status = ExpirationStatus::from("enabled".to_string());
        assert_eq!(code_of(parse(vec![status])), S3ErrorCode::MalformedXML);
        let mut nothing = rule("n", "", 1);
        nothing.expiration = None;
        assert_eq!(code_of(parse(vec![nothing])), S3ErrorCode::InvalidRequest);
        let mut legacy_and_filter = rule("lf", "", 1);
        legacy_and_filter.prefix = Some("a".into());
        assert_eq!(
            code_of(parse(vec![legacy_and_filter])),
            S3ErrorCode::MalformedXML
        );
        let mut legacy = rule("legacy", "", 1);
        legacy.filter = None;
        legacy.prefix = Some("old/".into());
        assert_eq!(parse(vec![legacy]).unwrap().rules[0].prefix, "old/");
    }
}
