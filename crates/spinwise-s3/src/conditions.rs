//! Conditional requests, as S3 applies RFC 7232: the `If-*` headers of GetObject and
//! HeadObject, the `x-amz-copy-source-if-*` headers of CopyObject and UploadPartCopy, and the
//! conditional writes of PutObject and CompleteMultipartUpload (`If-None-Match: *`, `If-Match`)
//! and the conditional deletes of DeleteObject (`If-Match`) and DeleteObjects (per-key ETag).
//!
//! Invariants:
//! - evaluation is a pure function of the headers and the object's ETag and Last-Modified, so the
//!   service can check before it opens a cold object (a 304 never waits for a spin-up) and again
//!   on the bytes it actually serves;
//! - the order is RFC 7232 §6's, which S3 documents: If-Match, else If-Unmodified-Since; then
//!   If-None-Match, else If-Modified-Since. A true If-Match overrides a false
//!   If-Unmodified-Since, and a false If-None-Match overrides a true If-Modified-Since;
//! - times compare at whole seconds, the resolution of the HTTP dates a client saw;
//! - If-Match compares strongly (a weak ETag never matches), If-None-Match weakly (RFC 7232 §2.3.2);
//! - a conditional write or delete is checked under the key's lock, so no other write of the key can
//!   slip between the check and the commit.

use s3s::dto::{ETag, ETagCondition, Timestamp};
use s3s::{S3Error, S3ErrorCode, S3Result};

/// What a failed read condition answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    /// GetObject and HeadObject: If-None-Match and If-Modified-Since answer `304 Not Modified`.
    NotModified,
    /// CopyObject's source: every failed condition is `412 Precondition Failed`, as S3 does.
    PreconditionFailed,
}

/// The read preconditions of one request (all absent: always true).
#[derive(Clone, Debug)]
pub(crate) struct ReadConditions {
    if_match: Option<ETagCondition>,
    if_none_match: Option<ETagCondition>,
    if_modified_since: Option<Timestamp>,
    if_unmodified_since: Option<Timestamp>,
    failure: Failure,
}

impl ReadConditions {
    /// GetObject's or HeadObject's `If-Match`, `If-None-Match`, `If-Modified-Since`,
    /// `If-Unmodified-Since`.
    pub(crate) fn for_read(
        if_match: Option<ETagCondition>,
        if_none_match: Option<ETagCondition>,
        if_modified_since: Option<Timestamp>,
        if_unmodified_since: Option<Timestamp>,
    ) -> ReadConditions {
        ReadConditions {
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            failure: Failure::NotModified,
        }
    }

    /// A copy's `x-amz-copy-source-if-*` headers: the same rules, every failure a 412.
    pub(crate) fn for_copy_source(
        if_match: Option<ETagCondition>,
        if_none_match: Option<ETagCondition>,
        if_modified_since: Option<Timestamp>,
        if_unmodified_since: Option<Timestamp>,
    ) -> ReadConditions {
        ReadConditions {
            failure: Failure::PreconditionFailed,
            ..ReadConditions::for_read(
                if_match,
                if_none_match,
                if_modified_since,
                if_unmodified_since,
            )
        }
    }

    /// True when the request carries no condition (nothing to look up before reading).
    pub(crate) fn is_empty(&self) -> bool {
        self.if_match.is_none()
            && self.if_none_match.is_none()
            && self.if_modified_since.is_none()
            && self.if_unmodified_since.is_none()
    }

    /// Whether the request may proceed for an object with `etag` (None: the object has no S3
    /// metadata row, so no ETag matches it) last modified at `last_modified`.
    pub(crate) fn check(&self, etag: Option<&ETag>, last_modified: &Timestamp) -> S3Result<()> {
        let modified_s = unix_seconds(last_modified);
        if let Some(wanted) = &self.if_match {
            if !strong_match(wanted, etag) {
                return Err(precondition_failed("If-Match"));
            }
        } else if let Some(since) = &self.if_unmodified_since
            && modified_s > unix_seconds(since)
        {
            return Err(precondition_failed("If-Unmodified-Since"));
        }
        if let Some(unwanted) = &self.if_none_match {
            if weak_match(unwanted, etag) {
                return Err(self.not_modified("If-None-Match"));
            }
        } else if let Some(since) = &self.if_modified_since
            && modified_s <= unix_seconds(since)
        {
            return Err(self.not_modified("If-Modified-Since"));
        }
        Ok(())
    }

    fn not_modified(&self, header: &str) -> S3Error {
        match self.failure {
            Failure::NotModified => {
                S3Error::with_message(S3ErrorCode::NotModified, format!("not modified ({header})"))
            }
            Failure::PreconditionFailed => precondition_failed(header),
        }
    }
}

/// A conditional write: PutObject's or CompleteMultipartUpload's `If-None-Match` / `If-Match`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum WriteCondition {
    /// No condition: the write replaces whatever is there.
    #[default]
    Always,
    /// `If-None-Match: *`: only if the key holds no object.
    IfAbsent,
    /// `If-Match: "etag"` (or `*`: any object): only if the key holds an object with this ETag.
    IfMatch(ETagCondition),
}

impl WriteCondition {
    /// The condition of a write's headers. S3 takes only `*` in a write's If-None-Match, and
    /// refuses both headers together; either is `501 NotImplemented` / `400 InvalidRequest`
    /// here too, before any byte is read.
    pub(crate) fn of(
        if_match: Option<ETagCondition>,
        if_none_match: Option<ETagCondition>,
    ) -> S3Result<WriteCondition> {
        match (if_match, if_none_match) {
            (None, None) => Ok(WriteCondition::Always),
            (None, Some(ETagCondition::Any)) => Ok(WriteCondition::IfAbsent),
            (None, Some(ETagCondition::ETag(_))) => Err(S3Error::with_message(
                S3ErrorCode::NotImplemented,
                "a write's If-None-Match takes only `*` (write only if the key is absent)",
            )),
            (Some(wanted), None) => Ok(WriteCondition::IfMatch(wanted)),
            (Some(_), Some(_)) => Err(S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                "If-Match and If-None-Match cannot be used together on a write",
            )),
        }
    }

    /// Whether the write may go ahead over the key's current object: `None` when the key holds
    /// none, else its ETag (itself `None` when the object has no S3 metadata row).
    pub(crate) fn check(&self, current: Option<Option<&ETag>>) -> S3Result<()> {
        match (self, current) {
            (WriteCondition::Always, _) | (WriteCondition::IfAbsent, None) => Ok(()),
            (WriteCondition::IfAbsent, Some(_)) => Err(precondition_failed("If-None-Match")),
            // S3: a conditional overwrite of a key that holds nothing is NoSuchKey.
            (WriteCondition::IfMatch(_), None) => Err(S3Error::with_message(
                S3ErrorCode::NoSuchKey,
                "If-Match: the key holds no object",
            )),
            (WriteCondition::IfMatch(wanted), Some(etag)) if strong_match(wanted, etag) => Ok(()),
            (WriteCondition::IfMatch(_), Some(_)) => Err(precondition_failed("If-Match")),
        }
    }
}

/// DeleteObject's `If-Match` (and DeleteObjects' per-key ETag): delete only the named version.
/// `current` is as for [`WriteCondition::check`]; a key that holds nothing is already deleted,
/// which succeeds, as in S3.
pub(crate) fn check_delete(wanted: &ETagCondition, current: Option<Option<&ETag>>) -> S3Result<()> {
    match current {
        None => Ok(()),
        Some(etag) if strong_match(wanted, etag) => Ok(()),
        Some(_) => Err(precondition_failed("If-Match")),
    }
}

fn strong_match(wanted: &ETagCondition, etag: Option<&ETag>) -> bool {
    match (wanted, etag) {
        (_, None) => false,
        (ETagCondition::Any, Some(_)) => true,
        (ETagCondition::ETag(wanted), Some(etag)) => wanted.strong_cmp(etag),
    }
}

fn weak_match(unwanted: &ETagCondition, etag: Option<&ETag>) -> bool {
    match (unwanted, etag) {
        (_, None) => false,
        (ETagCondition::Any, Some(_)) => true,
        (ETagCondition::ETag(unwanted), Some(etag)) => unwanted.value() == etag.value(),
    }
}

fn unix_seconds(timestamp: &Timestamp) -> i64 {
    time::OffsetDateTime::from(timestamp.clone()).unix_timestamp()
}

fn precondition_failed(header: &str) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::PreconditionFailed,
        format!("At least one of the pre-conditions you specified did not hold ({header})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(seconds: u64, millis: u64) -> Timestamp {
        Timestamp::from(UNIX_EPOCH + Duration::from_millis(seconds * 1000 + millis))
    }
    fn strong(value: &str) -> ETag {
        ETag::Strong(value.into())
    }
    fn tag(value: &str) -> Option<ETagCondition> {
        Some(ETagCondition::ETag(strong(value)))
    }
    fn code(result: S3Result<()>) -> Option<S3ErrorCode> {
        result.err().map(|e| e.code().clone())
    }

    const MODIFIED_S: u64 = 1_000;

    fn read(
        if_match: Option<ETagCondition>,
        if_none_match: Option<ETagCondition>,
        if_modified_since: Option<Timestamp>,
        if_unmodified_since: Option<Timestamp>,
    ) -> Option<S3ErrorCode> {
        let conditions = ReadConditions::for_read(
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
        );
        code(conditions.check(Some(&strong("abc")), &at(MODIFIED_S, 750)))
    }

    #[test]
    fn no_headers_always_proceed_even_without_an_etag() {
        let none = ReadConditions::for_read(None, None, None, None);
        assert!(none.check(None, &at(0, 0)).is_ok());
    }

    #[test]
    fn if_match_proceeds_on_the_same_etag_or_star_and_fails_412_otherwise() {
        assert_eq!(read(tag("abc"), None, None, None), None);
        assert_eq!(read(Some(ETagCondition::Any), None, None, None), None);
        assert_eq!(
            read(tag("abd"), None, None, None),
            Some(S3ErrorCode::PreconditionFailed)
        );
    }

    #[test]
    fn if_match_is_strong_so_a_weak_etag_never_matches() {
        let weak = Some(ETagCondition::ETag(ETag::Weak("abc".into())));
        assert_eq!(
            read(weak, None, None, None),
            Some(S3ErrorCode::PreconditionFailed)
        );
    }

    #[test]
    fn if_none_match_answers_304_on_the_same_etag_weak_or_strong() {
        assert_eq!(
            read(None, tag("abc"), None, None),
            Some(S3ErrorCode::NotModified)
        );
        let weak = Some(ETagCondition::ETag(ETag::Weak("abc".into())));
        assert_eq!(read(None, weak, None, None), Some(S3ErrorCode::NotModified));
        assert_eq!(read(None, tag("other"), None, None), None);
    }

    #[test]
    fn if_modified_since_compares_whole_seconds() {
        // Last-Modified is sent at second resolution: a client echoing it sees 304.
        let echoed = Some(at(MODIFIED_S, 0));
        assert_eq!(
            read(None, None, echoed, None),
            Some(S3ErrorCode::NotModified)
        );
        assert_eq!(read(None, None, Some(at(MODIFIED_S - 1, 0)), None), None);
        assert_eq!(
            read(None, None, Some(at(MODIFIED_S + 60, 0)), None),
            Some(S3ErrorCode::NotModified)
        );
    }

    #[test]
    fn if_unmodified_since_fails_412_only_when_modified_later() {
        assert_eq!(read(None, None, None, Some(at(MODIFIED_S, 0))), None);
        assert_eq!(
            read(None, None, None, Some(at(MODIFIED_S - 1, 0))),
            Some(S3ErrorCode::PreconditionFailed)
        );
    }

    #[test]
    fn a_true_if_match_overrides_a_false_if_unmodified_since() {
        assert_eq!(
            read(tag("abc"), None, None, Some(at(MODIFIED_S - 1, 0))),
            None
        );
    }

    #[test]
    fn a_false_if_none_match_overrides_a_true_if_modified_since() {
        // If-None-Match does not match (so the body would be new) → 200, even though the object
        // was not modified since the date: S3's documented precedence.
        assert_eq!(
            read(None, tag("other"), Some(at(MODIFIED_S + 1, 0)), None),
            None
        );
    }

    #[test]
    fn if_match_failure_wins_over_if_none_match() {
        assert_eq!(
            read(tag("other"), tag("abc"), None, None),
            Some(S3ErrorCode::PreconditionFailed)
        );
    }

    #[test]
    fn copy_source_conditions_fail_412_where_a_get_would_answer_304() {
        let copy = ReadConditions::for_copy_source(None, tag("abc"), None, None);
        assert_eq!(
            code(copy.check(Some(&strong("abc")), &at(MODIFIED_S, 0))),
            Some(S3ErrorCode::PreconditionFailed)
        );
    }

    #[test]
    fn an_object_without_an_etag_matches_no_etag_condition() {
        let if_match = ReadConditions::for_read(Some(ETagCondition::Any), None, None, None);
        assert_eq!(
            code(if_match.check(None, &at(0, 0))),
            Some(S3ErrorCode::PreconditionFailed)
        );
        let if_none_match = ReadConditions::for_read(None, Some(ETagCondition::Any), None, None);
        assert!(if_none_match.check(None, &at(0, 0)).is_ok());
    }

    #[test]
    fn a_conditional_delete_removes_only_the_named_version_and_an_absent_key_is_already_gone() {
        let etag = strong("abc");
        let wanted = ETagCondition::ETag(strong("abc"));
        assert!(check_delete(&wanted, Some(Some(&etag))).is_ok());
        assert!(check_delete(&wanted, None).is_ok());
        let other = ETagCondition::ETag(strong("abd"));
        assert_eq!(
            code(check_delete(&other, Some(Some(&etag)))),
            Some(S3ErrorCode::PreconditionFailed)
        );
    }

    #[test]
    fn writes_take_star_in_if_none_match_and_not_both_headers() {
        assert_eq!(
            WriteCondition::of(None, None).unwrap(),
            WriteCondition::Always
        );
        assert_eq!(
            WriteCondition::of(None, Some(ETagCondition::Any)).unwrap(),
            WriteCondition::IfAbsent
        );
        let refused = WriteCondition::of(None, tag("abc")).unwrap_err();
        assert_eq!(refused.code(), &S3ErrorCode::NotImplemented);
        let both = WriteCondition::of(tag("abc"), Some(ETagCondition::Any)).unwrap_err();
        assert_eq!(both.code(), &S3ErrorCode::InvalidRequest);
    }

    #[test]
    fn if_absent_writes_only_where_no_object_is() {
        let etag = strong("abc");
        assert!(WriteCondition::IfAbsent.check(None).is_ok());
        assert_eq!(
            code(WriteCondition::IfAbsent.check(Some(Some(&etag)))),
            Some(S3ErrorCode::PreconditionFailed)
        );
        // An object without a metadata row still exists.
        assert_eq!(
            code(WriteCondition::IfAbsent.check(Some(None))),
            Some(S3ErrorCode::PreconditionFailed)
        );
    }

    #[test]
    fn if_match_writes_only_over_the_named_etag_and_is_no_such_key_on_an_absent_key() {
        let etag = strong("abc");
        let same = WriteCondition::IfMatch(ETagCondition::ETag(strong("abc")));
        let other = WriteCondition::IfMatch(ETagCondition::ETag(strong("abd")));
        assert!(same.check(Some(Some(&etag))).is_ok());
        assert_eq!(
            code(other.check(Some(Some(&etag)))),
            Some(S3ErrorCode::PreconditionFailed)
        );
        assert_eq!(code(same.check(None)), Some(S3ErrorCode::NoSuchKey));
        assert!(WriteCondition::Always.check(Some(Some(&etag))).is_ok());
    }
}
