//! Public-read buckets end to end: a real server, the owner's aws-sdk-s3 client (signed), an
//! anonymous aws-sdk-s3 client (no credentials: nothing signed, as `aws --no-sign-request`) and
//! bare HTTP requests (as curl). A private bucket refuses every anonymous request with 403
//! AccessDenied; PutBucketAcl or CreateBucket's `x-amz-acl: public-read` opens GET, HEAD and
//! listings (byte-exact) and nothing else; making the bucket private again closes them at once;
//! GetBucketAcl shows the AllUsers READ grant only while public; unsupported ACLs are refused and
//! change nothing; a wrong signature is still SignatureDoesNotMatch; the setting survives a
//! restart; a cold object in an async bucket is InvalidObjectState for anonymous readers too.

use crate::common;

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Region};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    AccessControlPolicy, BucketCannedAcl, CompletedMultipartUpload, Delete, Grant, Grantee,
    ObjectIdentifier, Permission, RestoreRequest, StorageClass, Tag, Tagging, Type,
};
use common::wire::{Answer, exchange, signed_headers};
use common::{
    code, get_bytes, get_error, md5_hex, pattern, put, restart, start, start_with, status,
};
use spinwise_s3::{RestoreMode, S3Settings};
use std::net::SocketAddr;

const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";

/// An aws-sdk-s3 client with no credentials: it sends requests unsigned.
fn anonymous(addr: SocketAddr) -> Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(format!("http://{addr}"))
        .force_path_style(true)
        .allow_no_auth()
        .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .build();
    Client::from_conf(config)
}

/// A bare, unsigned HTTP request, as curl sends it.
async fn bare(addr: SocketAddr, method: &str, target: &str) -> Answer {
    let headers = [("host".to_string(), addr.to_string())];
    exchange(addr, method, target, &headers, b"", None).await
}

async fn create(client: &Client, bucket: &str, acl: Option<BucketCannedAcl>) {
    client
        .create_bucket()
        .bucket(bucket)
        .set_acl(acl)
        .send()
        .await
        .unwrap();
}

async fn set_acl(client: &Client, bucket: &str, acl: BucketCannedAcl) {
    client
        .put_bucket_acl()
        .bucket(bucket)
        .acl(acl)
        .send()
        .await
        .unwrap();
}

/// The grants GetBucketAcl shows, as `(grantee, permission)` with the grantee's URI or ID.
async fn grants(client: &Client, bucket: &str) -> Vec<(String, String)> {
    let acl = client.get_bucket_acl().bucket(bucket).send().await.unwrap();
    acl.grants()
        .iter()
        .map(|grant| {
            let grantee = grant.grantee().unwrap();
            let who = grantee.uri().or(grantee.id()).unwrap().to_string();
            (who, grant.permission().unwrap().as_str().to_string())
        })
        .collect()
}

fn owner_id_of(grants: &[(String, String)]) -> String {
    grants
        .iter()
        .find(|(_, permission)| permission == "FULL_CONTROL")
        .expect("the owner's FULL_CONTROL grant")
        .0
        .clone()
}

/// Whether GetBucketAcl shows the AllUsers READ grant (checked against the whole grant list:
/// the owner's FULL_CONTROL, and that grant only when public).
async fn shows_all_users_read(client: &Client, bucket: &str) -> bool {
    let grants = grants(client, bucket).await;
    let owner = owner_id_of(&grants);
    assert_eq!(owner.len(), 64, "a canonical user id: {grants:?}");
    let public = vec![
        (owner.clone(), "FULL_CONTROL".to_string()),
        (ALL_USERS.to_string(), "READ".to_string()),
    ];
    if grants == public {
        return true;
    }
    assert_eq!(grants, vec![(owner, "FULL_CONTROL".to_string())]);
    false
}

/// Asserts that every anonymous read of `bucket` (and its `key`) is refused with 403
/// AccessDenied, through the SDK and as bare HTTP.
async fn assert_anonymous_reads_refused(addr: SocketAddr, bucket: &str, key: &str) {
    let anonymous = anonymous(addr);
    assert_eq!(get_error(&anonymous, bucket, key).await, "403 AccessDenied");
    let head = anonymous
        .head_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .expect_err("anonymous HEAD of a private bucket");
    assert_eq!(status(&head), 403);
    let list = anonymous
        .list_objects_v2()
        .bucket(bucket)
        .send()
        .await
        .expect_err("anonymous ListObjectsV2 of a private bucket");
    assert_eq!((status(&list), code(&list).as_str()), (403, "AccessDenied"));
    let list = anonymous
        .list_objects()
        .bucket(bucket)
        .send()
        .await
        .expect_err("anonymous ListObjects of a private bucket");
    assert_eq!((status(&list), code(&list).as_str()), (403, "AccessDenied"));
    let head = anonymous
        .head_bucket()
        .bucket(bucket)
        .send()
        .await
        .expect_err("anonymous HeadBucket of a private bucket");
    assert_eq!(status(&head), 403);
    for target in [format!("/{bucket}/{key}"), format!("/{bucket}?list-type=2")] {
        let answer = bare(addr, "GET", &target).await;
        assert_eq!(
            (answer.status, answer.code()),
            (403, Some("AccessDenied")),
            "bare GET {target}: {answer:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_bucket_refuses_every_anonymous_read_with_access_denied() {
    let harness = start().await;
    let addr = harness.server.local_addr();
    create(&harness.client, "closed", None).await;
    put(&harness.client, "closed", "secret.txt", b"not for you").await;
    assert!(!shows_all_users_read(&harness.client, "closed").await);
    assert_anonymous_reads_refused(addr, "closed", "secret.txt").await;
    // A bucket that does not exist answers the same: anonymous clients learn nothing.
    assert_anonymous_reads_refused(addr, "nowhere", "secret.txt").await;
    let root = bare(addr, "GET", "/").await;
    assert_eq!((root.status, root.code()), (403, Some("AccessDenied")));
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_bucket_acl_public_read_opens_get_head_and_lists_and_private_closes_them_at_once() {
    let harness = start().await;
    let addr = harness.server.local_addr();
    let owner = &harness.client;
    create(owner, "photos", None).await;
    let bytes = pattern(3 << 20, 7);
    let etag = put(owner, "photos", "2026/big.bin", &bytes).await;
    put(owner, "photos", "2026/small.txt", b"hello").await;
    assert_anonymous_reads_refused(addr, "photos", "2026/big.bin").await;

    set_acl(owner, "photos", BucketCannedAcl::PublicRead).await;
    assert!(shows_all_users_read(owner, "photos").await);
    let anonymous = anonymous(addr);
    let got = get_bytes(&anonymous, "photos", "2026/big.bin", None).await;
    assert!(got == bytes, "anonymous GET differs from what was PUT");
    assert_eq!(md5_hex(&got), etag.trim_matches('"'));
    let ranged = get_bytes(&anonymous, "photos", "2026/big.bin", Some("bytes=100-199")).await;
    assert_eq!(ranged, &bytes[100..200]);
    let head = anonymous
        .head_object()
        .bucket("photos")
        .key("2026/big.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(head.content_length, Some(bytes.len() as i64));
    assert_eq!(head.e_tag.as_deref(), Some(etag.as_str()));
    let listed = anonymous
        .list_objects_v2()
        .bucket("photos")
        .prefix("2026/")
        .send()
        .await
        .unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["2026/big.bin", "2026/small.txt"]);
    let listed = anonymous
        .list_objects()
        .bucket("photos")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.contents().len(), 2);
    anonymous
        .head_bucket()
        .bucket("photos")
        .send()
        .await
        .unwrap();
    anonymous
        .get_bucket_location()
        .bucket("photos")
        .send()
        .await
        .unwrap();
    let curl = bare(addr, "GET", "/photos/2026/small.txt").await;
    assert_eq!((curl.status, curl.body.as_str()), (200, "hello"));
    // Only public-read buckets open: a private neighbour stays closed.
    create(owner, "neighbour", None).await;
    put(owner, "neighbour", "2026/small.txt", b"mine").await;
    assert_anonymous_reads_refused(addr, "neighbour", "2026/small.txt").await;

    set_acl(owner, "photos", BucketCannedAcl::Private).await;
    assert!(!shows_all_users_read(owner, "photos").await);
    assert_anonymous_reads_refused(addr, "photos", "2026/big.bin").await;
    // The owner still reads it.
    assert!(get_bytes(owner, "photos", "2026/big.bin", None).await == bytes);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_writes_deletes_restores_uploads_and_acl_changes_on_a_public_bucket_are_refused()
{
    let harness = start().await;
    let addr = harness.server.local_addr();
    let owner = &harness.client;
    create(owner, "open", Some(BucketCannedAcl::PublicRead)).await;
    let bytes = pattern(4096, 3);
    let etag = put(owner, "open", "keep.bin", &bytes).await;
    let anonymous = anonymous(addr);

    let mut refusals = Vec::new();
    let mut refused = |call: &str, result: Result<(), (u16, String)>| {
        refusals.push(format!("{call}: {result:?}"));
        assert_eq!(
            result,
            Err((403, "AccessDenied".to_string())),
            "anonymous {call}"
        );
    };
    macro_rules! attempt {
        ($call:expr) => {
            $call
                .send()
                .await
                .map(|_| ())
                .map_err(|error| (status(&error), code(&error)))
        };
    }
    refused(
        "PutObject",
        attempt!(
            anonymous
                .put_object()
                .bucket("open")
                .key("keep.bin")
                .body(ByteStream::from_static(b"overwritten"))
        ),
    );
    refused(
        "PutObject (new key)",
        attempt!(
            anonymous
                .put_object()
                .bucket("open")
                .key("new.bin")
                .body(ByteStream::from_static(b"new"))
        ),
    );
    refused(
        "DeleteObject",
        attempt!(anonymous.delete_object().bucket("open").key("keep.bin")),
    );
    let delete = Delete::builder()
        .objects(ObjectIdentifier::builder().key("keep.bin").build().unwrap())
        .build()
        .unwrap();
    refused(
        "DeleteObjects",
        attempt!(anonymous.delete_objects().bucket("open").delete(delete)),
    );
    refused(
        "CopyObject",
        attempt!(
            anonymous
                .copy_object()
                .bucket("open")
                .key("copy.bin")
                .copy_source("open/keep.bin")
        ),
    );
    refused(
        "CreateMultipartUpload",
        attempt!(
            anonymous
                .create_multipart_upload()
                .bucket("open")
                .key("parts.bin")
        ),
    );
    // An upload the owner opened: anonymous clients may neither add to, finish nor abort it.
    let upload = owner
        .create_multipart_upload()
        .bucket("open")
        .key("parts.bin")
        .send()
        .await
        .unwrap();
    let upload_id = upload.upload_id().unwrap();
    refused(
        "UploadPart",
        attempt!(
            anonymous
                .upload_part()
                .bucket("open")
                .key("parts.bin")
                .upload_id(upload_id)
                .part_number(1)
                .body(ByteStream::from_static(b"part"))
        ),
    );
    refused(
        "CompleteMultipartUpload",
        attempt!(
            anonymous
                .complete_multipart_upload()
                .bucket("open")
                .key("parts.bin")
                .upload_id(upload_id)
                .multipart_upload(CompletedMultipartUpload::builder().build())
        ),
    );
    refused(
        "AbortMultipartUpload",
        attempt!(
            anonymous
                .abort_multipart_upload()
                .bucket("open")
                .key("parts.bin")
                .upload_id(upload_id)
        ),
    );
    refused(
        "ListMultipartUploads",
        attempt!(anonymous.list_multipart_uploads().bucket("open")),
    );
    refused(
        "RestoreObject",
        attempt!(
            anonymous
                .restore_object()
                .bucket("open")
                .key("keep.bin")
                .restore_request(RestoreRequest::builder().days(1).build())
        ),
    );
    refused(
        "PutBucketAcl",
        attempt!(
            anonymous
                .put_bucket_acl()
                .bucket("open")
                .acl(BucketCannedAcl::Private)
        ),
    );
    refused(
        "GetBucketAcl",
        attempt!(anonymous.get_bucket_acl().bucket("open")),
    );
    let tagging = Tagging::builder()
        .tag_set(
            Tag::builder()
                .key("spinwise-restore-mode")
                .value("async")
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    refused(
        "PutBucketTagging",
        attempt!(
            anonymous
                .put_bucket_tagging()
                .bucket("open")
                .tagging(tagging)
        ),
    );
    refused(
        "DeleteBucket",
        attempt!(anonymous.delete_bucket().bucket("open")),
    );
    refused(
        "CreateBucket",
        attempt!(anonymous.create_bucket().bucket("another")),
    );
    refused("ListBuckets", attempt!(anonymous.list_buckets()));
    for (method, target) in [
        ("PUT", "/open/keep.bin"),
        ("DELETE", "/open/keep.bin"),
        ("PUT", "/open?acl"),
    ] {
        let answer = bare(addr, method, target).await;
        assert_eq!(
            (answer.status, answer.code()),
            (403, Some("AccessDenied")),
            "bare {method} {target}: {answer:?}"
        );
    }
    assert_eq!(refusals.len(), 17, "{refusals:#?}");

    // Nothing changed: the object, the ACL, the owner's upload, the bucket list.
    assert!(get_bytes(owner, "open", "keep.bin", None).await == bytes);
    let head = owner
        .head_object()
        .bucket("open")
        .key("keep.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(head.e_tag.as_deref(), Some(etag.as_str()));
    let listed = owner.list_objects_v2().bucket("open").send().await.unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["keep.bin"]);
    assert!(shows_all_users_read(owner, "open").await);
    let uploads = owner
        .list_multipart_uploads()
        .bucket("open")
        .send()
        .await
        .unwrap();
    assert_eq!(uploads.uploads().len(), 1);
    assert!(uploads.uploads()[0].upload_id() == Some(upload_id));
    let parts = owner
        .list_parts()
        .bucket("open")
        .key("parts.bin")
        .upload_id(upload_id)
        .send()
        .await
        .unwrap();
    assert!(parts.parts().is_empty());
    let buckets = owner.list_buckets().send().await.unwrap();
    let names: Vec<&str> = buckets.buckets().iter().filter_map(|b| b.name()).collect();
    assert_eq!(names, ["open"]);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_bucket_with_x_amz_acl_public_read_is_public_and_private_or_no_acl_is_private() {
    let harness = start().await;
    let addr = harness.server.local_addr();
    let owner = &harness.client;
    create(owner, "made-public", Some(BucketCannedAcl::PublicRead)).await;
    create(owner, "made-private", Some(BucketCannedAcl::Private)).await;
    create(owner, "made-plain", None).await;
    for bucket in ["made-public", "made-private", "made-plain"] {
        put(owner, bucket, "k", bucket.as_bytes()).await;
    }
    assert!(shows_all_users_read(owner, "made-public").await);
    let got = get_bytes(&anonymous(addr), "made-public", "k", None).await;
    assert_eq!(got, b"made-public");
    for bucket in ["made-private", "made-plain"] {
        assert!(!shows_all_users_read(owner, bucket).await, "{bucket}");
        assert_anonymous_reads_refused(addr, bucket, "k").await;
    }
    // Creating an existing bucket again with another ACL changes nothing.
    let again = owner
        .create_bucket()
        .bucket("made-plain")
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await
        .expect_err("the bucket exists");
    assert_eq!(code(&again), "BucketAlreadyOwnedByYou");
    assert!(!shows_all_users_read(owner, "made-plain").await);
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_acls_are_refused_and_create_or_change_nothing() {
    let harness = start().await;
    let addr = harness.server.local_addr();
    let owner = &harness.client;
    for acl in [
        BucketCannedAcl::PublicReadWrite,
        BucketCannedAcl::AuthenticatedRead,
    ] {
        let error = owner
            .create_bucket()
            .bucket("never")
            .acl(acl.clone())
            .send()
            .await
            .expect_err("an unsupported canned ACL");
        assert_eq!(
            (status(&error), code(&error).as_str()),
            (501, "NotImplemented"),
            "{acl:?}"
        );
    }
    let error = owner
        .create_bucket()
        .bucket("never")
        .grant_read(format!("uri=\"{ALL_USERS}\""))
        .send()
        .await
        .expect_err("explicit grant headers");
    assert_eq!(
        (status(&error), code(&error).as_str()),
        (501, "NotImplemented")
    );
    let error = owner
        .create_bucket()
        .bucket("never")
        .acl(BucketCannedAcl::from("public-ish"))
        .send()
        .await
        .expect_err("not a canned ACL");
    assert_eq!(
        (status(&error), code(&error).as_str()),
        (400, "InvalidArgument")
    );
    let missing = owner
        .head_bucket()
        .bucket("never")
        .send()
        .await
        .expect_err("no bucket was created");
    assert_eq!(status(&missing), 404);
    assert!(
        owner
            .list_buckets()
            .send()
            .await
            .unwrap()
            .buckets()
            .is_empty()
    );

    create(owner, "kept-private", None).await;
    put(owner, "kept-private", "k", b"x").await;
    for acl in [
        BucketCannedAcl::PublicReadWrite,
        BucketCannedAcl::AuthenticatedRead,
        BucketCannedAcl::from("log-delivery-write"),
    ] {
        let error = owner
            .put_bucket_acl()
            .bucket("kept-private")
            .acl(acl.clone())
            .send()
            .await
            .expect_err("an unsupported canned ACL");
        assert_eq!(
            (status(&error), code(&error).as_str()),
            (501, "NotImplemented"),
            "{acl:?}"
        );
    }
    let error = owner
        .put_bucket_acl()
        .bucket("kept-private")
        .grant_read(format!("uri=\"{ALL_USERS}\""))
        .send()
        .await
        .expect_err("explicit grant headers");
    assert_eq!(code(&error), "NotImplemented");
    assert!(!shows_all_users_read(owner, "kept-private").await);
    assert_anonymous_reads_refused(addr, "kept-private", "k").await;
    let error = owner
        .put_bucket_acl()
        .bucket("no-such-bucket")
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await
        .expect_err("no such bucket");
    assert_eq!(
        (status(&error), code(&error).as_str()),
        (404, "NoSuchBucket")
    );
    let error = owner
        .get_bucket_acl()
        .bucket("no-such-bucket")
        .send()
        .await
        .expect_err("no such bucket");
    assert_eq!(code(&error), "NoSuchBucket");
    harness.server.stop().await;
}

fn grant(grantee: Grantee, permission: Permission) -> Grant {
    Grant::builder()
        .grantee(grantee)
        .permission(permission)
        .build()
}

fn owner_grantee(id: &str) -> Grantee {
    Grantee::builder()
        .r#type(Type::CanonicalUser)
        .id(id)
        .build()
        .unwrap()
}

fn all_users_grantee() -> Grantee {
    Grantee::builder()
        .r#type(Type::Group)
        .uri(ALL_USERS)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_body_equal_to_public_read_or_private_is_applied_and_any_other_is_refused() {
    let harness = start().await;
    let addr = harness.server.local_addr();
    let owner = &harness.client;
    create(owner, "by-policy", None).await;
    put(owner, "by-policy", "k", b"policy").await;
    let shown = owner
        .get_bucket_acl()
        .bucket("by-policy")
        .send()
        .await
        .unwrap();
    let owner_id = shown.owner().unwrap().id().unwrap().to_string();
    let policy = |grants: Vec<Grant>| {
        AccessControlPolicy::builder()
            .owner(shown.owner().unwrap().clone())
            .set_grants(Some(grants))
            .build()
    };
    let put_policy = |grants: Vec<Grant>| {
        owner
            .put_bucket_acl()
            .bucket("by-policy")
            .access_control_policy(policy(grants))
            .send()
    };

    // What a client that edits GetBucketAcl's answer sends: the owner's grant plus AllUsers READ.
    put_policy(vec![
        grant(owner_grantee(&owner_id), Permission::FullControl),
        grant(all_users_grantee(), Permission::Read),
    ])
    .await
    .unwrap();
    assert!(shows_all_users_read(owner, "by-policy").await);
    assert_eq!(
        get_bytes(&anonymous(addr), "by-policy", "k", None).await,
        b"policy"
    );

    for (what, grants) in [
        (
            "AllUsers WRITE",
            vec![
                grant(owner_grantee(&owner_id), Permission::FullControl),
                grant(all_users_grantee(), Permission::Write),
            ],
        ),
        (
            "another user READ",
            vec![
                grant(owner_grantee(&owner_id), Permission::FullControl),
                grant(owner_grantee(&"0".repeat(64)), Permission::Read),
            ],
        ),
        (
            "no owner FULL_CONTROL",
            vec![grant(all_users_grantee(), Permission::Read)],
        ),
    ] {
        let error = put_policy(grants).await.expect_err(what);
        assert_eq!(
            (status(&error), code(&error).as_str()),
            (501, "NotImplemented"),
            "{what}"
        );
        assert!(shows_all_users_read(owner, "by-policy").await, "{what}");
    }

    // The owner's grant alone is private.
    put_policy(vec![grant(
        owner_grantee(&owner_id),
        Permission::FullControl,
    )])
    .await
    .unwrap();
    assert!(!shows_all_users_read(owner, "by-policy").await);
    assert_anonymous_reads_refused(addr, "by-policy", "k").await;
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_signature_on_a_public_bucket_is_still_signature_does_not_match() {
    let harness = start().await;
    let addr = harness.server.local_addr();
    create(&harness.client, "open", Some(BucketCannedAcl::PublicRead)).await;
    put(&harness.client, "open", "k", b"public bytes").await;
    let intruder = common::client(addr, common::ACCESS_KEY, "not-the-secret");
    let error = intruder
        .get_object()
        .bucket("open")
        .key("k")
        .send()
        .await
        .expect_err("a wrong secret is not anonymous");
    assert_eq!(
        (status(&error), code(&error).as_str()),
        (403, "SignatureDoesNotMatch")
    );
    let error = intruder
        .list_objects_v2()
        .bucket("open")
        .send()
        .await
        .expect_err("a wrong secret is not anonymous");
    assert_eq!(code(&error), "SignatureDoesNotMatch");

    // Hand-signed, then one signature digit flipped.
    let mut headers = signed_headers(
        addr,
        "GET",
        "/open/k",
        &[],
        common::ACCESS_KEY,
        common::SECRET_KEY,
    );
    let good = exchange(addr, "GET", "/open/k", &headers, b"", None).await;
    assert_eq!((good.status, good.body.as_str()), (200, "public bytes"));
    let authorization = headers
        .iter_mut()
        .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        .expect("the signer adds an Authorization header");
    let last = authorization.1.pop().unwrap();
    authorization.1.push(if last == '0' { '1' } else { '0' });
    let flipped = exchange(addr, "GET", "/open/k", &headers, b"", None).await;
    assert_eq!(
        (flipped.status, flipped.code()),
        (403, Some("SignatureDoesNotMatch")),
        "{flipped:?}"
    );
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_read_survives_a_restart_and_a_deleted_then_recreated_bucket_is_private() {
    let harness = start().await;
    create(&harness.client, "lasting", None).await;
    create(&harness.client, "closed", None).await;
    put(&harness.client, "lasting", "k", b"still here").await;
    put(&harness.client, "closed", "k", b"still closed").await;
    set_acl(&harness.client, "lasting", BucketCannedAcl::PublicRead).await;

    let harness = restart(harness, S3Settings::default()).await;
    let addr = harness.server.local_addr();
    assert!(shows_all_users_read(&harness.client, "lasting").await);
    assert_eq!(
        get_bytes(&anonymous(addr), "lasting", "k", None).await,
        b"still here"
    );
    assert_anonymous_reads_refused(addr, "closed", "k").await;

    // The ACL belongs to the bucket: deleting it drops the ACL with it.
    harness
        .client
        .delete_object()
        .bucket("lasting")
        .key("k")
        .send()
        .await
        .unwrap();
    harness
        .client
        .delete_bucket()
        .bucket("lasting")
        .send()
        .await
        .unwrap();
    create(&harness.client, "lasting", None).await;
    put(&harness.client, "lasting", "k", b"new owner data").await;
    assert!(!shows_all_users_read(&harness.client, "lasting").await);
    assert_anonymous_reads_refused(addr, "lasting", "k").await;
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anonymous_get_of_a_cold_object_in_an_async_public_bucket_is_invalid_object_state() {
    let settings = S3Settings {
        default_restore_mode: RestoreMode::Async,
        ..S3Settings::default()
    };
    let harness = start_with(common::config(None), settings).await;
    let addr = harness.server.local_addr();
    create(&harness.client, "vault", Some(BucketCannedAcl::PublicRead)).await;
    let bytes = pattern(64 << 10, 11);
    put(&harness.client, "vault", "cold.bin", &bytes).await;
    common::cold::migrate_everything(&harness.store).await;

    let anonymous = anonymous(addr);
    let head = anonymous
        .head_object()
        .bucket("vault")
        .key("cold.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(head.storage_class, Some(StorageClass::Glacier));
    assert_eq!(
        get_error(&anonymous, "vault", "cold.bin").await,
        "403 InvalidObjectState"
    );
    // Anonymous clients cannot restore it; the owner can, and then everyone reads the copy.
    let refused = anonymous
        .restore_object()
        .bucket("vault")
        .key("cold.bin")
        .restore_request(RestoreRequest::builder().days(1).build())
        .send()
        .await
        .expect_err("anonymous RestoreObject");
    assert_eq!(code(&refused), "AccessDenied");
    harness
        .client
        .restore_object()
        .bucket("vault")
        .key("cold.bin")
        .restore_request(RestoreRequest::builder().days(1).build())
        .send()
        .await
        .unwrap();
    common::eventually("the restore finished", async || {
        let head = harness
            .client
            .head_object()
            .bucket("vault")
            .key("cold.bin")
            .send()
            .await
            .unwrap();
        head.restore()
            .is_some_and(|r| r.contains("ongoing-request=\"false\""))
    })
    .await;
    assert!(get_bytes(&anonymous, "vault", "cold.bin", None).await == bytes);
    harness.server.stop().await;
}
