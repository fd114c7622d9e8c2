//! The server over TLS (rustls, ring): a self-signed certificate for 127.0.0.1 made at test time
//! (rcgen; nothing secret or expiring is checked in), aws-sdk-s3 trusting only that certificate;
//! byte-exact PUT/GET of empty, small and multi-MiB objects; a plaintext HTTP request to the TLS
//! port fails without an HTTP answer and the server keeps serving; silent clients that never
//! handshake delay no one and are dropped after the handshake timeout; bad PEM files are refused
//! with errors naming the file; stopping works with a handshake still pending.

use crate::common;

use common::pattern;
use spinwise_s3::{TlsConfig, TlsError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// A certificate for 127.0.0.1 and localhost with its key, as PEM.
struct TestCertificate {
    certificate_pem: String,
    key_pem: String,
}

fn self_signed() -> TestCertificate {
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .unwrap();
    TestCertificate {
        certificate_pem: made.cert.pem(),
        key_pem: made.signing_key.serialize_pem(),
    }
}

/// Writes the certificate and key as `cert.pem` and `key.pem` under `dir`.
fn write_pem_files(dir: &Path, certificate: &TestCertificate) -> (PathBuf, PathBuf) {
    let certificate_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    std::fs::write(&certificate_path, &certificate.certificate_pem).unwrap();
    std::fs::write(&key_path, &certificate.key_pem).unwrap();
    (certificate_path, key_path)
}

/// A TLS configuration read back from PEM files, as `spinwise serve` reads it.
fn tls_config(certificate: &TestCertificate, handshake_timeout: Duration) -> TlsConfig {
    let dir = tempfile::tempdir().unwrap();
    let (certificate_path, key_path) = write_pem_files(dir.path(), certificate);
    TlsConfig::from_pem_files(&certificate_path, &key_path)
        .unwrap()
        .with_handshake_timeout(handshake_timeout)
}

async fn put_and_get_back(client: &aws_sdk_s3::Client, key: &str, bytes: &[u8]) {
    client
        .put_object()
        .bucket("secure")
        .key(key)
        .body(bytes.to_vec().into())
        .send()
        .await
        .unwrap();
    let read = common::get_bytes(client, "secure", key, None).await;
    assert_eq!(read.len(), bytes.len(), "{key}: length");
    assert!(read == bytes, "{key}: bytes differ");
}

/// Sends `request` on a fresh TCP connection and reads until the server closes it (or 10 s).
async fn plaintext_exchange(addr: std::net::SocketAddr, request: &[u8]) -> (Vec<u8>, bool) {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        let mut buffer = [0u8; 4096];
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(read) => answer.extend_from_slice(&buffer[..read]),
            }
        }
    })
    .await
    .is_ok();
    (answer, closed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_sdk_over_tls_puts_and_gets_empty_small_and_multi_mib_objects_byte_exact() {
    let certificate = self_signed();
    let tls = tls_config(&certificate, Duration::from_secs(10));
    let harness = common::start_tls(tls, &certificate.certificate_pem).await;
    assert_eq!(harness.server.scheme(), "https");
    let client = &harness.client;
    client
        .create_bucket()
        .bucket("secure")
        .send()
        .await
        .unwrap();

    put_and_get_back(client, "empty", &[]).await;
    put_and_get_back(client, "one-byte", &[0x5a]).await;
    let large = pattern(6 << 20, 7);
    put_and_get_back(client, "six-mib", &large).await;

    let ranged =
        common::get_bytes(client, "secure", "six-mib", Some("bytes=1048570-3145727")).await;
    assert!(ranged == large[1_048_570..3_145_728], "ranged GET over TLS");
    let listed = client
        .list_objects_v2()
        .bucket("secure")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.key_count(), Some(3));
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_trust_the_certificate_is_refused() {
    let certificate = self_signed();
    let other = self_signed();
    let tls = tls_config(&certificate, Duration::from_secs(10));
    let harness = common::start_tls(tls, &certificate.certificate_pem).await;
    let stranger = common::tls_client(harness.server.local_addr(), &other.certificate_pem);
    let refused = stranger.list_buckets().send().await;
    assert!(
        refused.is_err(),
        "a client trusting another root must not get through"
    );
    harness.client.list_buckets().send().await.unwrap();
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_http_to_the_tls_port_gets_no_http_answer_and_the_server_keeps_serving() {
    let certificate = self_signed();
    let tls = tls_config(&certificate, Duration::from_secs(10));
    let harness = common::start_tls(tls, &certificate.certificate_pem).await;
    let addr = harness.server.local_addr();
    harness
        .client
        .create_bucket()
        .bucket("secure")
        .send()
        .await
        .unwrap();

    for _ in 0..3 {
        let (answer, closed) = plaintext_exchange(
            addr,
            b"GET /secure HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(closed, "the server must close a plaintext connection");
        assert!(
            !answer.starts_with(b"HTTP/"),
            "a plaintext request must not be served: {:?}",
            String::from_utf8_lossy(&answer)
        );
    }
    // Garbage that is not even HTTP, then a TLS-looking record cut short.
    let (_, closed) = plaintext_exchange(addr, &[0u8; 64]).await;
    assert!(closed);
    let (_, closed) = plaintext_exchange(addr, &[0x16, 0x03, 0x01, 0xff, 0xff, 0x01]).await;
    assert!(
        closed,
        "a truncated ClientHello is dropped at the handshake timeout at the latest"
    );

    put_and_get_back(&harness.client, "after-plaintext", &pattern(100_000, 3)).await;
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_handshake_delay_no_one_and_are_dropped_at_the_timeout() {
    let certificate = self_signed();
    let handshake_timeout = Duration::from_secs(3);
    let tls = tls_config(&certificate, handshake_timeout);
    let harness = common::start_tls(tls, &certificate.certificate_pem).await;
    let addr = harness.server.local_addr();
    let mut silent = Vec::new();
    for _ in 0..8 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    let connected_at = Instant::now();

    // Everyone else is served while the silent clients hold their connections open.
    harness
        .client
        .create_bucket()
        .bucket("secure")
        .send()
        .await
        .unwrap();
    for index in 0..4 {
        put_and_get_back(
            &harness.client,
            &format!("meanwhile-{index}"),
            &pattern(64 << 10, index),
        )
        .await;
    }
    let served_after = connected_at.elapsed();
    assert!(
        served_after < handshake_timeout,
        "requests waited {served_after:?} behind silent clients (timeout {handshake_timeout:?})"
    );

    // Each silent client is dropped once its handshake time is up, not before.
    for socket in &mut silent {
        let mut buffer = [0u8; 16];
        let read = tokio::time::timeout(Duration::from_secs(15), socket.read(&mut buffer))
            .await
            .expect("a silent client must be dropped after the handshake timeout");
        assert!(
            matches!(read, Ok(0) | Err(_)),
            "no bytes for a silent client"
        );
    }
    let dropped_after = connected_at.elapsed();
    assert!(
        dropped_after >= handshake_timeout - Duration::from_millis(200),
        "dropped after {dropped_after:?}, before the {handshake_timeout:?} timeout"
    );
    harness.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_does_not_wait_for_a_pending_handshake() {
    let certificate = self_signed();
    let tls = tls_config(&certificate, Duration::from_secs(60));
    let harness = common::start_tls(tls, &certificate.certificate_pem).await;
    harness.client.list_buckets().send().await.unwrap();
    let _silent = TcpStream::connect(harness.server.local_addr())
        .await
        .unwrap();
    // A request on a fresh connection is answered only once the server accepted the ones
    // before it (the listen queue is FIFO): the silent one's handshake is under way.
    let fresh = common::tls_client(harness.server.local_addr(), &certificate.certificate_pem);
    fresh.list_buckets().send().await.unwrap();
    let stopping = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), harness.server.stop())
        .await
        .expect("stop must not wait out a 60 s handshake timeout");
    assert!(stopping.elapsed() < Duration::from_secs(10));
}

#[test]
fn pem_files_that_are_missing_empty_swapped_or_mismatched_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let certificate = self_signed();
    let (certificate_path, key_path) = write_pem_files(dir.path(), &certificate);
    TlsConfig::from_pem_files(&certificate_path, &key_path).unwrap();

    let missing = dir.path().join("missing.pem");
    let error = TlsConfig::from_pem_files(&missing, &key_path).unwrap_err();
    assert!(matches!(error, TlsError::Certificate { .. }), "{error:?}");
    assert!(error.to_string().contains("missing.pem"), "{error}");

    let error = TlsConfig::from_pem_files(&certificate_path, &missing).unwrap_err();
    assert!(matches!(error, TlsError::PrivateKey { .. }), "{error:?}");
    assert!(error.to_string().contains("missing.pem"), "{error}");

    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let error = TlsConfig::from_pem_files(&empty, &key_path).unwrap_err();
    assert!(matches!(error, TlsError::NoCertificate { .. }), "{error:?}");
    assert!(error.to_string().contains("empty.pem"), "{error}");

    // The files given the wrong way round: the key file holds no certificate.
    let error = TlsConfig::from_pem_files(&key_path, &certificate_path).unwrap_err();
    assert!(matches!(error, TlsError::NoCertificate { .. }), "{error:?}");
    assert!(error.to_string().contains("key.pem"), "{error}");

    let broken = dir.path().join("broken.pem");
    std::fs::write(
        &broken,
        "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let error = TlsConfig::from_pem_files(&broken, &key_path).unwrap_err();
    assert!(matches!(error, TlsError::Certificate { .. }), "{error:?}");
    assert!(error.to_string().contains("broken.pem"), "{error}");

    // Another certificate's key does not go with this certificate.
    let other_dir = tempfile::tempdir().unwrap();
    let (_, other_key_path) = write_pem_files(other_dir.path(), &self_signed());
    let error = TlsConfig::from_pem_files(&certificate_path, &other_key_path).unwrap_err();
    assert!(matches!(error, TlsError::Mismatch { .. }), "{error:?}");
    assert!(error.to_string().contains("cert.pem"), "{error}");
}
