//! The HTTP side: the s3s service with SigV4 authentication (header and presigned query, one key
//! pair; anonymous requests only read public-read buckets, [`crate::access`]) served by hyper 1
//! over HTTP/1.1 on tokio, plain or over TLS ([`crate::tls`]), and its graceful stop.
//!
//! Invariants:
//! - every accepted socket has TCP_NODELAY set, so no response waits on a delayed ACK;
//! - the accept loop only accepts: each connection's TLS handshake runs on that connection's own
//!   task under the handshake timeout, so a slow, silent or non-TLS client delays no one else;
//!   a failed handshake is logged (debug) and the connection dropped;
//! - every request is authenticated by s3s before it reaches [`crate::SpinwiseS3`]; a wrong
//!   secret is SignatureDoesNotMatch, an unknown access key InvalidAccessKeyId; a request without a signature is refused (AccessDenied)
//!   unless [`PublicReadAccess`] allows it (a read of a public-read bucket);
//! - stopping closes the listener first, abandons handshakes still running, then waits for the
//!   requests in flight to finish;
//! - a response carrying a [`StatusOverride`] extension gets that status (s3s fixes each
//!   operation's status otherwise);
//! - a refusal (any status but 2xx) of a request that declared a body closes the connection
//!   ([`close_after_refused_body`]): the body may be unread, and the bytes that follow on the
//!   connection are then not known to be the next request;
//! - an answer to an empty request that asked `Expect: 100-continue` closes the connection
//!   ([`close_after_unanswered_expect`]): no `100 Continue` went out, and botocore before
//!   1.43.77 (the aws CLI 1.46 bundles 1.43.62) misreads the next answer on that connection.

use crate::access::PublicReadAccess;
use crate::credentials::{Credentials, KeyPairAuth};
use crate::hosts::BucketDomains;
use crate::metrics::S3Metrics;
use crate::service::SpinwiseS3;
use crate::tls::TlsConfig;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use s3s::service::{S3Service, S3ServiceBuilder};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// How long a client may take to send a request's headers (a slow-header guard; bodies and
/// responses, such as a cold GET waiting for a spin-up, are not limited).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A status a handler sets that s3s's generated serializers cannot (RestoreObject's `202
/// Accepted`): the handler puts it in its response's extensions, the connection applies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StatusOverride(pub(crate) http::StatusCode);

/// The s3s service over `s3`, accepting requests signed with `credentials`, and anonymous reads
/// of public-read buckets; path-style addressing only.
pub fn build_service(s3: SpinwiseS3, credentials: &Credentials) -> S3Service {
    build_service_with(s3, credentials, None)
}

/// [`build_service`], also taking `<bucket>.<domain>` hosts as virtual-hosted-style requests
/// when `domains` are given ([`BucketDomains`]).
pub fn build_service_with(
    s3: SpinwiseS3,
    credentials: &Credentials,
    domains: Option<BucketDomains>,
) -> S3Service {
    // Reads the ACLs from the same database (one pool): a PutBucketAcl is seen by the next check.
    let access = PublicReadAccess::new(s3.meta().clone());
    let mut builder = S3ServiceBuilder::new(s3);
    builder.set_auth(KeyPairAuth::new(credentials));
    // s3s calls the access check only when auth is set (above); it runs after the signature
    // check, so a bad signature is refused before an anonymous-read decision is ever made.
    builder.set_access(access);
    if let Some(domains) = domains {
        builder.set_host(domains);
    }
    builder.build()
}

/// A server accepting connections on a task of its own.
pub struct RunningServer {
    local_addr: SocketAddr,
    tls: bool,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl RunningServer {
    /// Starts serving `service` over plain HTTP on `listener`.
    pub fn start(listener: TcpListener, service: S3Service) -> io::Result<RunningServer> {
        RunningServer::start_with(listener, service, None)
    }

    /// Starts serving `service` on `listener`, over TLS when `tls` is given.
    pub fn start_with(
        listener: TcpListener,
        service: S3Service,
        tls: Option<TlsConfig>,
    ) -> io::Result<RunningServer> {
        RunningServer::start_observed(listener, service, tls, None)
    }

    /// [`RunningServer::start_with`], counting every answer's status in `metrics` if given.
    pub fn start_observed(
        listener: TcpListener,
        service: S3Service,
        tls: Option<TlsConfig>,
        metrics: Option<Arc<S3Metrics>>,
    ) -> io::Result<RunningServer> {
        let local_addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel();
        let secure = tls.is_some();
        let task = tokio::spawn(accept_loop(listener, service, tls, metrics, stopped));
        Ok(RunningServer {
            local_addr,
            tls: secure,
            stop,
            task,
        })
    }

    /// Where it listens (the port chosen when it bound port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `https` when it serves TLS, `http` otherwise.
    pub fn scheme(&self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }

    /// Stops accepting connections and waits for the requests in flight.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        if let Err(error) = self.task.await {
            tracing::error!(%error, "the S3 server task failed");
        }
    }
}

/// What every connection task shares: the HTTP settings, the service and its metrics.
#[derive(Clone)]
struct Connections {
    http: hyper::server::conn::http1::Builder,
    service: S3Service,
    metrics: Option<Arc<S3Metrics>>,
}

impl Connections {
    /// Serves one connection (plain or TLS) until it ends or the server stops.
    async fn serve<IO>(self, io: IO, watcher: Watcher)
    where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let service = self.service;
        let metrics = self.metrics;
        let with_status = hyper::service::service_fn(move |request: http::Request<_>| {
            let declares_body = declares_body(request.headers());
            let expects_continue = expects_continue(request.headers());
            let call = hyper::service::Service::call(&service, request);
            let metrics = metrics.clone();
            async move {
                let mut response = call.await?;
                if let Some(StatusOverride(status)) = response.extensions_mut().remove() {
                    *response.status_mut() = status;
                }
                if let Some(metrics) = &metrics {
                    metrics.record_response(response.status().as_u16());
                }
                if declares_body {
                    close_after_refused_body(&mut response);
                } else if expects_continue {
                    close_after_unanswered_expect(&mut response);
                }
                Ok::<_, s3s::HttpError>(response)
            }
        });
        let connection = self.http.serve_connection(TokioIo::new(io), with_status);
        if let Err(error) = watcher.watch(connection).await {
            tracing::debug!(%error, "an S3 connection ended with an error");
        }
    }
}

/// Whether a request's headers announce a body: a `Content-Length` above zero, or any
/// `Transfer-Encoding` (chunked).
fn declares_body(headers: &http::HeaderMap) -> bool {
    let length = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    headers.contains_key(http::header::TRANSFER_ENCODING) || length.is_some_and(|length| length > 0)
}

/// Marks a refusal of a request with a body `Connection: close`.
///
/// Why: a refusal (unknown bucket, bad signature, too large) is sent without reading the body.
/// A client that sent `Expect: 100-continue` (boto3's PutObject does) then never sends the body
/// and reuses the connection for its next request, while hyper, which has not decided whether
/// the body is still coming, may later read that next request's first bytes as the refused
/// body: a GET became `ET /…`, which failed its signature check (403 SignatureDoesNotMatch).
/// Closing the connection is what RFC 9110 §10.1.1 offers a server that answers before the
/// body; the client opens a new connection for its next request. Successful answers have read
/// their body to the end, so their connection stays open.
fn close_after_refused_body<B>(response: &mut http::Response<B>) {
    if !response.status().is_success() {
        response.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
    }
}

/// Whether a request asks `Expect: 100-continue` (the only expectation HTTP/1.1 defines).
fn expects_continue(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::EXPECT)
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// Marks the answer to an empty request that asked `Expect: 100-continue` `Connection: close`.
///
/// Why: hyper sends `100 Continue` only when a handler reads the body, and an empty body is
/// never read, so the final answer comes first, as RFC 9110 §10.1.1 allows. botocore before
/// 1.43.77 (boto/botocore#3755) then keeps that answer's status line for the connection and
/// reads the next answer on it, to a request that also waited for `100 Continue`, as headers:
/// it sees none and waits for a body until the server drops the connection 30 s later. The
/// aws CLI 1.46 bundles such a botocore (1.43.62): `aws s3 sync` of a tree with an empty file
/// and a 9 MiB file failed its upload part ("'ETag'") after 31 s in five runs of six. Closing
/// the connection resets botocore's state (its `close()` restores the response class); the
/// cost is one new connection after each empty PUT from such a client.
fn close_after_unanswered_expect<B>(response: &mut http::Response<B>) {
    response.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
}

async fn accept_loop(
    listener: TcpListener,
    service: S3Service,
    tls: Option<TlsConfig>,
    metrics: Option<Arc<S3Metrics>>,
    mut stop: oneshot::Receiver<()>,
) {
    let graceful = GracefulShutdown::new();
    // Tells handshakes still running that the server stops (they hold no HTTP connection yet
    // for `graceful` to close).
    let (stopping, _) = watch::channel(false);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let connections = Connections {
        http,
        service,
        metrics,
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (socket, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        tracing::warn!(%error, "accepting a connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                // Responses go out as hyper writes them: with Nagle's algorithm a small response
                // written in two segments waits for the client's delayed ACK (~40 ms on Linux),
                // which made every GET of 100 B-16 KiB take 44 ms. A failure only costs latency.
                if let Err(error) = socket.set_nodelay(true) {
                    tracing::debug!(%peer, %error, "setting TCP_NODELAY");
                }
                // Taken now, before any stop: shutdown then waits for this task too.
                let watcher = graceful.watcher();
                let connections = connections.clone();
                match &tls {
                    None => tokio::spawn(connections.serve(socket, watcher)),
                    Some(tls) => tokio::spawn(handshake_then_serve(
                        tls.clone(),
                        socket,
                        peer,
                        connections,
                        watcher,
                        stopping.subscribe(),
                    )),
                };
            }
            _ = &mut stop => break,
        }
    }
    drop(listener);
    stopping.send_replace(true);
    graceful.shutdown().await;
}

/// Runs a client's TLS handshake on the connection's own task (a slow or silent client never
/// holds up the accept loop), within the handshake timeout, then serves it. A failed, timed-out
/// or interrupted handshake drops the connection.
async fn handshake_then_serve(
    tls: TlsConfig,
    socket: TcpStream,
    peer: SocketAddr,
    connections: Connections,
    watcher: Watcher,
    mut stopping: watch::Receiver<bool>,
) {
    let handshake = tokio::time::timeout(tls.handshake_timeout(), tls.acceptor().accept(socket));
    let stream = tokio::select! {
        finished = handshake => match finished {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => {
                tracing::debug!(%peer, %error, "TLS handshake failed; connection dropped");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, timeout_ms = tls.handshake_timeout().as_millis(), "TLS handshake timed out; connection dropped");
                return;
            }
        },
        _ = stopping.wait_for(|stopping| *stopping) => return,
    };
    connections.serve(stream, watcher).await;
}
