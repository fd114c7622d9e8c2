//! Public-read buckets: each bucket's ACL ([`BucketAcl`]: `private` or `public-read`), how S3
//! clients set and read it (CreateBucket's `x-amz-acl`, PutBucketAcl, GetBucketAcl), and
//! [`PublicReadAccess`], the s3s access check that lets anonymous clients read a public-read
//! bucket. docs/s3.md "Public-read buckets" describes the behaviour.
//!
//! What anonymous clients may do follows MinIO's `download` policy (GetBucketLocation,
//! ListBucket, GetObject) rather than S3's ACL letter: in S3 a bucket ACL's AllUsers READ only
//! lists the bucket and each object needs its own ACL to be read, but this server has no object
//! ACLs, and "anyone may download this bucket" is what people mean by a public-read bucket.
//!
//! Invariants:
//! - a signed request is never refused here (s3s has already verified its signature; a request
//!   with a bad signature never reaches this check);
//! - an anonymous request is allowed only when its operation is in [`ANONYMOUS_READS`] and the
//!   bucket it names is public-read at the moment of the check: the flag is read from the
//!   [`MetaDb`] for every anonymous request (no cache), so a bucket made private stops serving
//!   anonymous requests that arrive after the change;
//! - an anonymous request to a private or missing bucket, or for any other operation, gets the
//!   same `403 AccessDenied` as before public-read buckets existed (no bucket's existence leaks);
//! - an ACL this server cannot honour exactly is refused (`501 NotImplemented`) and changes
//!   nothing: a bucket is never left more public than what was asked, nor silently less;
//! - a SigV4 presigned URL lives at most [`MAX_PRESIGNED_LIFETIME_S`] (a week, as S3): s3s checks
//!   the signature and the expiry but not the lifetime a client chose, so a URL valid for years
//!   would otherwise be honoured. The limit is checked here, after the signature, before anything
//!   else runs.

use crate::meta::MetaDb;
use crate::names::check_bucket;
use crate::service::{SpinwiseS3, meta_error};
use s3s::access::{S3Access, S3AccessContext};
use s3s::dto::{
    AccessControlPolicy, BucketCannedACL, CreateBucketInput, GetBucketAclOutput, Grant, Grantee,
    Owner, Permission, PutBucketAclInput, Type,
};
use s3s::path::S3Path;
use s3s::{S3Error, S3ErrorCode, S3Result};
use std::fmt;

/// The canonical user id of the bucket owner: the server has one key pair, so one owner owns
/// every bucket. Fixed (64 hex digits, S3's form), so a client may send back the owner id a
/// GetBucketAcl showed it, even across a change of keys.
pub const OWNER_ID: &str = "5b9d4d5a1f0c6e1b3c2f8a7e6d5c4b3a29180f7e6d5c4b3a2918f0e1d2c3b4a5";
/// The owner's display name in ACLs.
pub const OWNER_DISPLAY_NAME: &str = "spinwise";
/// S3's group of every client, signed or not.
pub const ALL_USERS_URI: &str = "http://acs.amazonaws.com/groups/global/AllUsers";

/// The operations an anonymous client may call on a public-read bucket (s3s operation names).
/// Everything that writes, deletes, restores, uploads in parts or reads or changes a
/// configuration (ACL, tagging) stays signed-only.
pub const ANONYMOUS_READS: &[&str] = &[
    "GetObject",
    "HeadObject",
    "ListObjects",
    "ListObjectsV2",
    "HeadBucket",
    "GetBucketLocation",
];

/// The longest lifetime (`X-Amz-Expires`) of a SigV4 presigned URL, in seconds: a week, S3's limit.
pub const MAX_PRESIGNED_LIFETIME_S: u64 = 7 * 24 * 3600;

/// Who may read a bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BucketAcl {
    /// Only signed requests (the owner's key pair).
    #[default]
    Private,
    /// Anonymous clients may also read: [`ANONYMOUS_READS`].
    PublicRead,
}

impl BucketAcl {
    pub fn is_public_read(self) -> bool {
        self == BucketAcl::PublicRead
    }

    pub fn from_public_read(public_read: bool) -> BucketAcl {
        if public_read {
            BucketAcl::PublicRead
        } else {
            BucketAcl::Private
        }
    }

    /// S3's canned ACL name.
    pub fn as_str(self) -> &'static str {
        match self {
            BucketAcl::Private => BucketCannedACL::PRIVATE,
            BucketAcl::PublicRead => BucketCannedACL::PUBLIC_READ,
        }
    }

    /// The grants S3 shows for this canned ACL: the owner's FULL_CONTROL, and for public-read
    /// the AllUsers group's READ.
    pub fn grants(self) -> Vec<Grant> {
        let mut grants = vec![Grant {
            grantee: Some(Grantee {
                display_name: Some(OWNER_DISPLAY_NAME.to_string()),
                email_address: None,
                id: Some(OWNER_ID.to_string()),
                type_: Type::from_static(Type::CANONICAL_USER),
                uri: None,
            }),
            permission: Some(Permission::from_static(Permission::FULL_CONTROL)),
        }];
        if self.is_public_read() {
            grants.push(Grant {
                grantee: Some(Grantee {
                    display_name: None,
                    email_address: None,
                    id: None,
                    type_: Type::from_static(Type::GROUP),
                    uri: Some(ALL_USERS_URI.to_string()),
                }),
                permission: Some(Permission::from_static(Permission::READ)),
            });
        }
        grants
    }
}

impl fmt::Display for BucketAcl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The owner element of an ACL.
pub fn owner() -> Owner {
    Owner {
        display_name: Some(OWNER_DISPLAY_NAME.to_string()),
        id: Some(OWNER_ID.to_string()),
    }
}

/// 501 NotImplemented for an ACL this server cannot honour. NotImplemented rather than a 400:
/// the request is valid S3 (S3 itself would apply it), this server lacks the feature, and
/// MinIO answers unsupported ACLs the same way, which clients already report clearly.
fn unsupported(what: impl fmt::Display) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::NotImplemented,
        format!(
            "{what}: this server supports only the canned ACLs `private` and `public-read` \
             (or an AccessControlPolicy equal to one of them)"
        ),
    )
}

/// A canned ACL header's value as a [`BucketAcl`].
pub fn from_canned(acl: &BucketCannedACL) -> S3Result<BucketAcl> {
    match acl.as_str() {
        BucketCannedACL::PRIVATE => Ok(BucketAcl::Private),
        BucketCannedACL::PUBLIC_READ => Ok(BucketAcl::PublicRead),
        // S3's other canned ACLs: valid requests this server cannot honour.
        BucketCannedACL::PUBLIC_READ_WRITE
        | BucketCannedACL::AUTHENTICATED_READ
        | "aws-exec-read"
        | "log-delivery-write"
        | "bucket-owner-read"
        | "bucket-owner-full-control" => Err(unsupported(format_args!(
            "the canned ACL `{}`",
            acl.as_str()
        ))),
        // Not an S3 canned ACL at all: S3 answers 400 InvalidArgument.
        other => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            format!("`{other}` is not a canned ACL"),
        )),
    }
}

/// Explicit grant headers (`x-amz-grant-*`) are refused whatever they grant: they name grantees
/// by id, e-mail or URI, and honouring only the one combination equal to public-read is not
/// worth the parser; clients set public-read with the canned ACL.
fn refuse_grant_headers(headers: [&Option<String>; 5]) -> S3Result<()> {
    if headers.iter().any(|header| header.is_some()) {
        return Err(unsupported("explicit grant headers (x-amz-grant-*)"));
    }
    Ok(())
}

/// The ACL a CreateBucket asks for (private when it names none).
pub fn from_create_bucket(input: &CreateBucketInput) -> S3Result<BucketAcl> {
    refuse_grant_headers([
        &input.grant_full_control,
        &input.grant_read,
        &input.grant_read_acp,
        &input.grant_write,
        &input.grant_write_acp,
    ])?;
    input
        .acl
        .as_ref()
        .map_or(Ok(BucketAcl::Private), from_canned)
}

/// The ACL a PutBucketAcl sets: its canned ACL header or its AccessControlPolicy body.
pub fn from_put_bucket_acl(input: &PutBucketAclInput) -> S3Result<BucketAcl> {
    refuse_grant_headers([
        &input.grant_full_control,
        &input.grant_read,
        &input.grant_read_acp,
        &input.grant_write,
        &input.grant_write_acp,
    ])?;
    match (&input.acl, &input.access_control_policy) {
        (Some(acl), None) => from_canned(acl),
        (None, Some(policy)) => from_policy(policy),
        // S3 refuses both at once rather than picking one.
        (Some(_), Some(_)) => Err(S3Error::with_message(
            S3ErrorCode::InvalidRequest,
            "give either a canned ACL (x-amz-acl) or an AccessControlPolicy body, not both",
        )),
        (None, None) => Err(S3Error::with_message(
            S3ErrorCode::MissingSecurityHeader,
            "PutBucketAcl needs a canned ACL (x-amz-acl) or an AccessControlPolicy body",
        )),
    }
}

/// One grant of a policy, as far as this server can tell grants apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KnownGrant {
    OwnerFullControl,
    AllUsersRead,
}

/// An AccessControlPolicy as a [`BucketAcl`]: accepted only when its grants, as a set, are
/// exactly the owner's FULL_CONTROL, plus optionally AllUsers READ (what GetBucketAcl shows for
/// `private` and `public-read`), and its owner, if given, is [`OWNER_ID`]. Anything else would
/// change who may do what in a way this server cannot enforce.
pub fn from_policy(policy: &AccessControlPolicy) -> S3Result<BucketAcl> {
    if let Some(id) = policy.owner.as_ref().and_then(|owner| owner.id.as_deref())
        && id != OWNER_ID
    {
        return Err(unsupported(format_args!(
            "an owner other than `{OWNER_ID}` (`{id}`)"
        )));
    }
    let mut owner_full_control = false;
    let mut all_users_read = false;
    for grant in policy.grants.iter().flatten() {
        match known_grant(grant)? {
            KnownGrant::OwnerFullControl => owner_full_control = true,
            KnownGrant::AllUsersRead => all_users_read = true,
        }
    }
    if !owner_full_control {
        return Err(unsupported("an ACL without the owner's FULL_CONTROL grant"));
    }
    Ok(BucketAcl::from_public_read(all_users_read))
}

fn known_grant(grant: &Grant) -> S3Result<KnownGrant> {
    let malformed =
        |message: &'static str| S3Error::with_message(S3ErrorCode::MalformedACLError, message);
    let grantee = grant
        .grantee
        .as_ref()
        .ok_or_else(|| malformed("a Grant without a Grantee"))?;
    let permission = grant
        .permission
        .as_ref()
        .ok_or_else(|| malformed("a Grant without a Permission"))?
        .as_str();
    let type_ = grantee.type_.as_str();
    match type_ {
        Type::CANONICAL_USER => {
            let id = grantee
                .id
                .as_deref()
                .ok_or_else(|| malformed("a CanonicalUser Grantee without an ID"))?;
            if id == OWNER_ID && permission == Permission::FULL_CONTROL {
                Ok(KnownGrant::OwnerFullControl)
            } else {
                Err(unsupported(format_args!(
                    "the grant of {permission} to the user `{id}`"
                )))
            }
        }
        Type::GROUP => {
            let uri = grantee
                .uri
                .as_deref()
                .ok_or_else(|| malformed("a Group Grantee without a URI"))?;
            if uri == ALL_USERS_URI && permission == Permission::READ {
                Ok(KnownGrant::AllUsersRead)
            } else {
                Err(unsupported(format_args!(
                    "the grant of {permission} to the group `{uri}`"
                )))
            }
        }
        other => Err(unsupported(format_args!("a Grantee of type `{other}`"))),
    }
}

/// The bucket whose being public-read would let an anonymous client call `operation` on
/// `path`; `None` when nothing would (not a read, or the path does not fit the operation).
pub fn anonymous_read_bucket<'a>(operation: &str, path: &'a S3Path) -> Option<&'a str> {
    if !ANONYMOUS_READS.contains(&operation) {
        return None;
    }
    // Object reads act on an object path, the others on a bucket path; s3s routes them so,
    // checked again here so a routing surprise denies rather than allows.
    let on_object = matches!(operation, "GetObject" | "HeadObject");
    match path {
        S3Path::Object { bucket, .. } if on_object => Some(bucket),
        S3Path::Bucket { bucket } if !on_object => Some(bucket),
        _ => None,
    }
}

/// The s3s access check: signed requests pass; anonymous ones only read public-read buckets.
#[derive(Clone, Debug)]
pub struct PublicReadAccess {
    meta: MetaDb,
}

impl PublicReadAccess {
    pub fn new(meta: MetaDb) -> PublicReadAccess {
        PublicReadAccess { meta }
    }

    /// Whether an anonymous `operation` on `path` is allowed now.
    pub async fn allows_anonymous(&self, operation: &str, path: &S3Path) -> S3Result<bool> {
        let Some(bucket) = anonymous_read_bucket(operation, path) else {
            return Ok(false);
        };
        if check_bucket(bucket).is_err() {
            return Ok(false);
        }
        let acl = self.meta.bucket_acl(bucket).await.map_err(meta_error)?;
        Ok(acl.is_some_and(BucketAcl::is_public_read))
    }
}

#[async_trait::async_trait]
impl S3Access for PublicReadAccess {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        check_presigned_lifetime(cx.uri().query())?;
        if cx.credentials().is_some() {
            return Ok(());
        }
        if self
            .allows_anonymous(cx.s3_op().name(), cx.s3_path())
            .await?
        {
            return Ok(());
        }
        // s3s's own message for an unsigned request, as before public-read buckets existed.
        Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "Signature is required",
        ))
    }
}

/// Refuses a SigV4 presigned URL whose `X-Amz-Expires` exceeds [`MAX_PRESIGNED_LIFETIME_S`]
/// with S3's `400 AuthorizationQueryParametersError`. Other queries pass: an unparsable value
/// never gets here (s3s refuses it while checking the signature).
pub fn check_presigned_lifetime(query: Option<&str>) -> S3Result<()> {
    let lifetime_s = query
        .into_iter()
        .flat_map(|query| query.split('&'))
        .find_map(|pair| pair.strip_prefix("X-Amz-Expires="))
        .and_then(|value| value.parse::<u64>().ok());
    match lifetime_s {
        Some(seconds) if seconds > MAX_PRESIGNED_LIFETIME_S => Err(S3Error::with_message(
            S3ErrorCode::AuthorizationQueryParametersError,
            format!(
                "X-Amz-Expires must be less than a week (in seconds) that is, the given \
                 X-Amz-Expires must be less than {MAX_PRESIGNED_LIFETIME_S} seconds ({seconds} given)"
            ),
        )),
        _ => Ok(()),
    }
}

impl SpinwiseS3 {
    /// PutBucketAcl: sets the bucket's ACL from a canned ACL or an equivalent policy.
    pub(crate) async fn put_acl(&self, input: &PutBucketAclInput) -> S3Result<()> {
        let bucket = input.bucket.as_str();
        check_bucket(bucket)?;
        let acl = from_put_bucket_acl(input)?;
        if !self
            .meta
            .set_bucket_acl(bucket, acl)
            .await
            .map_err(meta_error)?
        {
            return Err(no_such_bucket(bucket));
        }
        tracing::info!(bucket, %acl, "bucket ACL set");
        Ok(())
    }

    /// GetBucketAcl: the owner's FULL_CONTROL, and AllUsers READ when public-read.
    pub(crate) async fn get_acl(&self, bucket: &str) -> S3Result<GetBucketAclOutput> {
        check_bucket(bucket)?;
        let acl = self
            .meta
            .bucket_acl(bucket)
            .await
            .map_err(meta_error)?
            .ok_or_else(|| no_such_bucket(bucket))?;
        Ok(GetBucketAclOutput {
            grants: Some(acl.grants()),
            owner: Some(owner()),
        })
    }
}

fn no_such_bucket(bucket: &str) -> S3Error {
    S3Error::with_message(S3ErrorCode::NoSuchBucket, format!("no bucket `{bucket}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presigned_urls_live_at_most_a_week() {
        let query = |seconds: u64| {
            format!("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires={seconds}&X-Amz-Signature=00")
        };
        assert!(check_presigned_lifetime(Some(&query(MAX_PRESIGNED_LIFETIME_S))).is_ok());
        let refused = check_presigned_lifetime(Some(&query(MAX_PRESIGNED_LIFETIME_S + 1)))
            .expect_err("a URL living a week and a second");
        assert_eq!(
            refused.code(),
            &S3ErrorCode::AuthorizationQueryParametersError
        );
        assert_eq!(refused.status_code(), Some(http::StatusCode::BAD_REQUEST));
        for other in [
            None,
            Some(""),
            Some("list-type=2&prefix=a"),
            Some("Expires=9999999999"),
        ] {
            assert!(check_presigned_lifetime(other).is_ok(), "{other:?}");
        }
    }

    fn canned(name: &str) -> BucketCannedACL {
        BucketCannedACL::from(name.to_string())
    }

    fn policy(grants: Vec<Grant>) -> AccessControlPolicy {
        AccessControlPolicy {
            grants: Some(grants),
            owner: Some(owner()),
        }
    }

    fn grant(type_: &'static str, id_or_uri: &str, permission: &'static str) -> Grant {
        let (id, uri) = if type_ == Type::GROUP {
            (None, Some(id_or_uri.to_string()))
        } else {
            (Some(id_or_uri.to_string()), None)
        };
        Grant {
            grantee: Some(Grantee {
                display_name: None,
                email_address: None,
                id,
                type_: Type::from_static(type_),
                uri,
            }),
            permission: Some(Permission::from_static(permission)),
        }
    }

    #[test]
    fn private_and_public_read_are_the_only_canned_acls_honoured() {
        assert_eq!(from_canned(&canned("private")).unwrap(), BucketAcl::Private);
        assert_eq!(
            from_canned(&canned("public-read")).unwrap(),
            BucketAcl::PublicRead
        );
        for name in [
            "public-read-write",
            "authenticated-read",
            "log-delivery-write",
            "bucket-owner-full-control",
        ] {
            let error = from_canned(&canned(name)).unwrap_err();
            assert_eq!(*error.code(), S3ErrorCode::NotImplemented, "{name}");
        }
        for name in ["PUBLIC-READ", "", "public"] {
            let error = from_canned(&canned(name)).unwrap_err();
            assert_eq!(*error.code(), S3ErrorCode::InvalidArgument, "{name:?}");
        }
    }

    #[test]
    fn the_grants_get_bucket_acl_shows_read_back_as_the_same_acl() {
        for acl in [BucketAcl::Private, BucketAcl::PublicRead] {
            assert_eq!(from_policy(&policy(acl.grants())).unwrap(), acl);
        }
        let all_users = |grants: &[Grant]| {
            grants
                .iter()
                .filter(|g| g.grantee.as_ref().unwrap().uri.as_deref() == Some(ALL_USERS_URI))
                .count()
        };
        assert_eq!(all_users(&BucketAcl::Private.grants()), 0);
        assert_eq!(all_users(&BucketAcl::PublicRead.grants()), 1);
    }

    #[test]
    fn a_policy_granting_anything_else_is_not_implemented() {
        let owner_full = grant(Type::CANONICAL_USER, OWNER_ID, Permission::FULL_CONTROL);
        let refused = [
            // AllUsers may write.
            vec![
                owner_full.clone(),
                grant(Type::GROUP, ALL_USERS_URI, Permission::WRITE),
            ],
            // Another group.
            vec![
                owner_full.clone(),
                grant(
                    Type::GROUP,
                    "http://acs.amazonaws.com/groups/global/AuthenticatedUsers",
                    Permission::READ,
                ),
            ],
            // Another user.
            vec![
                owner_full.clone(),
                grant(Type::CANONICAL_USER, &"0".repeat(64), Permission::READ),
            ],
            // The owner without FULL_CONTROL.
            vec![grant(Type::CANONICAL_USER, OWNER_ID, Permission::READ)],
            // No grants at all.
            vec![],
            // Only AllUsers READ.
            vec![grant(Type::GROUP, ALL_USERS_URI, Permission::READ)],
        ];
        for grants in refused {
            let error = from_policy(&policy(grants.clone())).unwrap_err();
            assert_eq!(*error.code(), S3ErrorCode::NotImplemented, "{grants:?}");
        }
        let mut other_owner = policy(vec![owner_full]);
        other_owner.owner.as_mut().unwrap().id = Some("f".repeat(64));
        let error = from_policy(&other_owner).unwrap_err();
        assert_eq!(*error.code(), S3ErrorCode::NotImplemented);
    }

    #[test]
    fn a_grant_missing_its_grantee_or_permission_is_malformed() {
        let mut no_grantee = grant(Type::CANONICAL_USER, OWNER_ID, Permission::FULL_CONTROL);
        no_grantee.grantee = None;
        let mut no_permission = grant(Type::GROUP, ALL_USERS_URI, Permission::READ);
        no_permission.permission = None;
        for grants in [vec![no_grantee], vec![no_permission]] {
            let error = from_policy(&policy(grants)).unwrap_err();
            assert_eq!(*error.code(), S3ErrorCode::MalformedACLError);
        }
    }

    #[test]
    fn put_bucket_acl_takes_a_header_or_a_body_never_both_and_no_grant_headers() {
        let mut input = PutBucketAclInput {
            bucket: "b".into(),
            acl: Some(canned("public-read")),
            ..Default::default()
        };
        assert_eq!(from_put_bucket_acl(&input).unwrap(), BucketAcl::PublicRead);
        input.access_control_policy = Some(policy(BucketAcl::Private.grants()));
        let both = from_put_bucket_acl(&input).unwrap_err();
        assert_eq!(*both.code(), S3ErrorCode::InvalidRequest);
        input.acl = None;
        assert_eq!(from_put_bucket_acl(&input).unwrap(), BucketAcl::Private);
        input.access_control_policy = None;
        let neither = from_put_bucket_acl(&input).unwrap_err();
        assert_eq!(*neither.code(), S3ErrorCode::MissingSecurityHeader);
        input.grant_read = Some(format!("uri=\"{ALL_USERS_URI}\""));
        let grants = from_put_bucket_acl(&input).unwrap_err();
        assert_eq!(*grants.code(), S3ErrorCode::NotImplemented);
    }

    #[test]
    fn anonymous_clients_may_only_read_objects_and_list_buckets() {
        let object = S3Path::object("pub", "k");
        let bucket = S3Path::bucket("pub");
        for op in ["GetObject", "HeadObject"] {
            assert_eq!(anonymous_read_bucket(op, &object), Some("pub"), "{op}");
            assert_eq!(anonymous_read_bucket(op, &bucket), None, "{op}");
        }
        for op in [
            "ListObjects",
            "ListObjectsV2",
            "HeadBucket",
            "GetBucketLocation",
        ] {
            assert_eq!(anonymous_read_bucket(op, &bucket), Some("pub"), "{op}");
            assert_eq!(anonymous_read_bucket(op, &object), None, "{op}");
        }
        for op in [
            "PutObject",
            "DeleteObject",
            "DeleteObjects",
            "CopyObject",
            "RestoreObject",
            "CreateMultipartUpload",
            "UploadPart",
            "CompleteMultipartUpload",
            "AbortMultipartUpload",
            "ListParts",
            "ListMultipartUploads",
            "PutBucketAcl",
            "GetBucketAcl",
            "GetObjectAcl",
            "PutBucketTagging",
            "GetBucketTagging",
            "CreateBucket",
            "DeleteBucket",
            "PostObject",
            "ListBuckets",
        ] {
            assert_eq!(anonymous_read_bucket(op, &object), None, "{op}");
            assert_eq!(anonymous_read_bucket(op, &bucket), None, "{op}");
            assert_eq!(anonymous_read_bucket(op, &S3Path::Root), None, "{op}");
        }
    }
}
