//! Presigned URLs end to end: URLs made by aws-sdk-s3's presigner (SigV4 query parameters, as
//! `aws s3 presign` and boto3's `generate_presigned_url` make them) sent as bare HTTP with no
//! `Authorization` header, as a browser or curl would. A URL opens exactly the method, bucket and
//! key it was signed for, byte-exact, until it expires; an expired, altered, wrongly keyed,
//! future-dated or over-a-week URL is refused with S3's error and changes nothing.

use crate::common;

use aws_sdk_s3::presigning::{PresignedRequest, PresigningConfig};
use common::wire::{Answer, exchange, presigned_target};
use common::{ACCESS_KEY, Harness, SECRET_KEY, bucket, get_bytes, md5_hex, pattern, put, start};
use spinwise_s3::MAX_PRESIGNED_LIFETIME_S;
use std::time::{Duration, SystemTime};

const HOUR: Duration = Duration::from_secs(3600);

/// Sends a presigned request as bare HTTP: its method, its URL's path and query, the headers
/// the presigner asks for, and `extra` headers (unsigned, such as `Range`).
async fn send(
    harness: &Harness,
    presigned: &PresignedRequest,
    extra: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let addr = harness.server.local_addr();
    let target = presigned
        .uri()
        .strip_prefix(&format!("http://{addr}"))
        .expect("the presigned URL names the server");
    let mut headers = vec![("host".to_string(), addr.to_string())];
    headers.extend(
        presigned
            .headers()
            .chain(extra.iter().copied())
            .map(|(name, value)| (name.to_string(), value.to_string())),
    );
    exchange(addr, presigned.method(), target, &headers, body, None).await
}

/// Sends a hand-presigned `method target` ([`presigned_target`]) as bare HTTP.
async fn send_raw(
    harness: &Harness,
    method: &str,
    target: &str,
    signed: (SystemTime, Duration),
) -> Answer {
    let addr = harness.server.local_addr();
    let target = presigned_target(addr, method, target, signed, SECRET_KEY);
    let headers = [("host".to_string(), addr.to_string())];
    exchange(addr, method, &target, &headers, b"", None).await
}

fn valid_for(lifetime: Duration) -> PresigningConfig {
    PresigningConfig::expires_in(lifetime).expect("a lifetime the presigner accepts")
}

async fn presigned_get(harness: &Harness, key: &str, config: PresigningConfig) -> PresignedRequest {
    harness
        .client
        .get_object()
        .bucket("shared")
        .key(key)
        .presigned(config)
        .await
        .expect("presigning a GET")
}

async fn presigned_put(harness: &Harness, key: &str, config: PresigningConfig) -> PresignedRequest {
    harness
        .client
        .put_object()
        .bucket("shared")
        .key(key)
        .presigned(config)
        .await
        .expect("presigning a PUT")
}

fn assert_refused(answer: &Answer, status: u16, code: &str, what: &str) {
    assert_eq!(
        (answer.status, answer.code()),
        (status, Some(code)),
        "{what}: {answer:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presigned_get_and_put_urls_work_without_an_authorization_header() {
    let harness = start().await;
    bucket(&harness, "shared").await;
    let data = pattern(1 << 20, 17);
    put(&harness.client, "shared", "photo.bin", &data).await;

    let get = presigned_get(&harness, "photo.bin", valid_for(HOUR)).await;
    let answer = send(&harness, &get, &[], b"").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        answer.body_bytes == data,
        "the presigned GET is not byte-exact"
    );
    // Only `host` is signed, so a client may add a Range, as browsers resuming a download do.
    let ranged = send(&harness, &get, &[("range", "bytes=1000-1999")], b"").await;
    assert_eq!(ranged.status, 206);
    assert!(ranged.body_bytes == data[1000..2000]);

    let upload = pattern(300_000, 18);
    let put_url = presigned_put(&harness, "dropped.bin", valid_for(HOUR)).await;
    let answer = send(&harness, &put_url, &[], &upload).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let stored = get_bytes(&harness.client, "shared", "dropped.bin", None).await;
    assert!(
        stored == upload,
        "the presigned PUT is not stored byte-exact"
    );
    let head = harness
        .client
        .head_object()
        .bucket("shared")
        .key("dropped.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(
        head.e_tag(),
        Some(format!("\"{}\"", md5_hex(&upload)).as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_presigned_url_is_access_denied_and_changes_nothing() {
    let harness = start().await;
    bucket(&harness, "shared").await;
    put(&harness.client, "shared", "kept.txt", b"original").await;
    let two_hours_ago = SystemTime::now() - 2 * HOUR;
    let expired = || {
        PresigningConfig::builder()
            .start_time(two_hours_ago)
            .expires_in(HOUR)
            .build()
            .unwrap()
    };

    let get = presigned_get(&harness, "kept.txt", expired()).await;
    let answer = send(&harness, &get, &[], b"").await;
    assert_refused(&answer, 403, "AccessDenied", "an expired GET");
    let put_url = presigned_put(&harness, "kept.txt", expired()).await;
    let answer = send(&harness, &put_url, &[], b"overwritten").await;
    assert_refused(&answer, 403, "AccessDenied", "an expired PUT");
    assert_eq!(
        get_bytes(&harness.client, "shared", "kept.txt", None).await,
        b"original"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_presigned_url_opens_only_its_own_method_bucket_and_key() {
    let harness = start().await;
    bucket(&harness, "shared").await;
    bucket(&harness, "other").await;
    put(&harness.client, "shared", "a.txt", b"a").await;
    put(&harness.client, "shared", "b.txt", b"b").await;
    put(&harness.client, "other", "a.txt", b"other a").await;
    let get = presigned_get(&harness, "a.txt", valid_for(HOUR)).await;
    let addr = harness.server.local_addr();
    let target = get
        .uri()
        .strip_prefix(&format!("http://{addr}"))
        .unwrap()
        .to_string();
    let headers = [("host".to_string(), addr.to_string())];

    for (method, altered, what) in [
        ("GET", target.replace("/a.txt", "/b.txt"), "another key"),
        (
            "GET",
            target.replace("/shared/", "/other/"),
            "another bucket",
        ),
        ("DELETE", target.clone(), "the GET URL as a DELETE"),
        ("PUT", target.clone(), "the GET URL as a PUT"),
    ] {
        let answer = exchange(addr, method, &altered, &headers, b"x", None).await;
        assert_refused(&answer, 403, "SignatureDoesNotMatch", what);
    }
    assert_eq!(
        get_bytes(&harness.client, "shared", "a.txt", None).await,
        b"a"
    );

    let forged = presigned_target(
        addr,
        "GET",
        "/shared/a.txt",
        (SystemTime::now(), HOUR),
        "not-the-secret",
    );
    let answer = exchange(addr, "GET", &forged, &headers, b"", None).await;
    assert_refused(
        &answer,
        403,
        "SignatureDoesNotMatch",
        "a URL signed with another secret",
    );
    assert!(
        forged.contains(ACCESS_KEY),
        "the forged URL names the real access key"
    );
    let stranger = target.replace(ACCESS_KEY, "UNKNOWNACCESSKEY0000");
    assert_ne!(stranger, target, "the URL names the access key");
    let answer = exchange(addr, "GET", &stranger, &headers, b"", None).await;
    assert_refused(
        &answer,
        403,
        "InvalidAccessKeyId",
        "a URL naming an access key the server does not know",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_presigned_url_may_live_a_week_and_no_longer() {
    let harness = start().await;
    bucket(&harness, "shared").await;
    put(&harness.client, "shared", "week.txt", b"seven days").await;
    let week = Duration::from_secs(MAX_PRESIGNED_LIFETIME_S);

    let answer = send_raw(
        &harness,
        "GET",
        "/shared/week.txt",
        (SystemTime::now(), week),
    )
    .await;
    assert_eq!((answer.status, answer.body.as_str()), (200, "seven days"));
    let longer = week + Duration::from_secs(1);
    let answer = send_raw(
        &harness,
        "GET",
        "/shared/week.txt",
        (SystemTime::now(), longer),
    )
    .await;
    assert_refused(
        &answer,
        400,
        "AuthorizationQueryParametersError",
        "a week and a second",
    );
    let years = Duration::from_secs(10 * 365 * 24 * 3600);
    let answer = send_raw(
        &harness,
        "DELETE",
        "/shared/week.txt",
        (SystemTime::now(), years),
    )
    .await;
    assert_refused(
        &answer,
        400,
        "AuthorizationQueryParametersError",
        "a ten-year DELETE",
    );
    assert_eq!(
        get_bytes(&harness.client, "shared", "week.txt", None).await,
        b"seven days"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_presigned_url_dated_in_the_future_is_refused_beyond_the_clock_skew() {
    let harness = start().await;
    bucket(&harness, "shared").await;
    put(&harness.client, "shared", "soon.txt", b"soon").await;
    let in_a_minute = SystemTime::now() + Duration::from_secs(60);
    let answer = send_raw(&harness, "GET", "/shared/soon.txt", (in_a_minute, HOUR)).await;
    assert_eq!(
        answer.status, 200,
        "a minute of skew is tolerated: {answer:?}"
    );
    let in_an_hour = SystemTime::now() + HOUR;
    let answer = send_raw(&harness, "GET", "/shared/soon.txt", (in_an_hour, HOUR)).await;
    assert_refused(
        &answer,
        403,
        "RequestTimeTooSkewed",
        "a URL dated an hour ahead",
    );
}
