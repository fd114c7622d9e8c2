//! Virtual-hosted-style addressing through SigV4-signed requests on the wire: with the server's
//! domain `s3.test`, `Host: <bucket>.s3.test:PORT` names the bucket (PUT, GET, HEAD, list), the
//! same objects are reachable path style at the IP address, a host outside the domains stays
//! path style, and the signature covers the host (a request signed for another bucket's host is
//! SignatureDoesNotMatch).

use crate::common;

use common::wire::{exchange, signed_headers_for_host};
use common::{ACCESS_KEY, Harness, SECRET_KEY, bucket, get_bytes, start_with_domains};
use spinwise_s3::BucketDomains;

const DOMAIN: &str = "s3.test";

/// A signed request to the harness's address with `host` in its Host header.
async fn send(
    harness: &Harness,
    host: &str,
    method: &str,
    target: &str,
    body: &[u8],
) -> common::wire::Answer {
    let headers = signed_headers_for_host(host, method, target, &[], ACCESS_KEY, SECRET_KEY);
    let addr = harness.server.local_addr();
    exchange(addr, method, target, &headers, body, None).await
}

fn host_of(harness: &Harness, name: &str) -> String {
    format!("{name}:{}", harness.server.local_addr().port())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_named_by_the_host_serves_put_get_head_and_list() {
    let harness = start_with_domains(BucketDomains::new([DOMAIN]).unwrap()).await;
    bucket(&harness, "photos").await;
    let host = host_of(&harness, "photos.s3.test");

    let put = send(&harness, &host, "PUT", "/trip/day-1.txt", b"virtual").await;
    assert_eq!(put.status, 200, "{put:?}");
    let got = get_bytes(&harness.client, "photos", "trip/day-1.txt", None).await;
    assert_eq!(got, b"virtual", "the object is the path-style one");

    let get = send(&harness, &host, "GET", "/trip/day-1.txt", b"").await;
    assert_eq!((get.status, get.body.as_str()), (200, "virtual"));
    let head = send(&harness, &host, "HEAD", "/trip/day-1.txt", b"").await;
    assert_eq!(head.status, 200);
    let list = send(&harness, &host, "GET", "/?list-type=2&prefix=trip/", b"").await;
    assert_eq!(list.status, 200, "{list:?}");
    assert!(
        list.body.contains("<Key>trip/day-1.txt</Key>"),
        "{}",
        list.body
    );

    // The domain itself is path style: its first path segment is the bucket.
    let domain_host = host_of(&harness, DOMAIN);
    let path_style = send(&harness, &domain_host, "GET", "/photos/trip/day-1.txt", b"").await;
    assert_eq!(
        (path_style.status, path_style.body.as_str()),
        (200, "virtual")
    );
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_outside_the_domains_stay_path_style_and_the_signature_covers_the_host() {
    let harness = start_with_domains(BucketDomains::new([DOMAIN]).unwrap()).await;
    bucket(&harness, "photos").await;
    bucket(&harness, "other").await;
    let host = host_of(&harness, "photos.s3.test");
    assert_eq!(
        send(&harness, &host, "PUT", "/kkk", b"mine").await.status,
        200
    );

    // Not below s3.test: path style, so `/kkk` names bucket `kkk`, which does not exist.
    let elsewhere_host = host_of(&harness, "photos.elsewhere.test");
    let elsewhere = send(&harness, &elsewhere_host, "GET", "/kkk", b"").await;
    assert_eq!(
        (elsewhere.status, elsewhere.code()),
        (404, Some("NoSuchBucket"))
    );

    // Signed for photos.s3.test, sent with Host other.s3.test: the host is part of what is signed.
    let addr = harness.server.local_addr();
    let mut headers = signed_headers_for_host(&host, "GET", "/kkk", &[], ACCESS_KEY, SECRET_KEY);
    for (name, value) in &mut headers {
        if name == "host" {
            *value = host_of(&harness, "other.s3.test");
        }
    }
    let forged = exchange(addr, "GET", "/kkk", &headers, b"", None).await;
    assert_eq!(
        (forged.status, forged.code()),
        (403, Some("SignatureDoesNotMatch"))
    );
    harness.server.stop().await;
}
