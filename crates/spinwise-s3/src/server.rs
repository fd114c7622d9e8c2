//! The HTTP side: the s3s service with SigV4 authentication (header and presigned query, one key
//! pair, no anonymous access) served by hyper 1 over HTTP/1.1 on tokio, and its graceful stop.
//!
//! Invariants:
//! - every request is authenticated by s3s before it reaches [`crate::SpinwiseS3`]; a request
//!   without a signature is refused (AccessDenied), a wrong secret is SignatureDoesNotMatch;
//! - stopping closes the listener first, then waits for the requests in flight to finish;
//! - a response carrying a [`StatusOverride`] extension gets that status (s3s fixes each
//!   operation's status otherwise).

use crate::credentials::Credentials;
use crate::service::SpinwiseS3;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use s3s::auth::SimpleAuth;
use s3s::service::{S3Service, S3ServiceBuilder};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long a client may take to send a request's headers (a slow-header guard; bodies and
/// responses, such as a cold GET waiting for a spin-up, are not limited).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A status a handler sets that s3s's generated serializers cannot (RestoreObject's `202
/// Accepted`): the handler puts it in its response's extensions, the connection applies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StatusOverride(pub(crate) http::StatusCode);

/// The s3s service over `s3`, accepting only requests signed with `credentials`.
pub fn build_service(s3: SpinwiseS3, credentials: &Credentials) -> S3Service {
    let mut builder = S3ServiceBuilder::new(s3);
    builder.set_auth(SimpleAuth::from_single(
        credentials.access_key.clone(),
        credentials.secret_key.clone(),
    ));
    builder.build()
}

/// A server accepting connections on a task of its own.
pub struct RunningServer {
    local_addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl RunningServer {
    /// Starts serving `service` on `listener`.
    pub fn start(listener: TcpListener, service: S3Service) -> io::Result<RunningServer> {
        let local_addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(listener, service, stopped));
        Ok(RunningServer {
            local_addr,
            stop,
            task,
        })
    }

    /// Where it listens (the port chosen when it bound port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting connections and waits for the requests in flight.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        if let Err(error) = self.task.await {
            tracing::error!(%error, "the S3 server task failed");
        }
    }
}

async fn accept_loop(listener: TcpListener, service: S3Service, mut stop: oneshot::Receiver<()>) {
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let socket = match accepted {
                    Ok((socket, _peer)) => socket,
                    Err(error) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        tracing::warn!(%error, "accepting a connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let service = service.clone();
                let with_status = hyper::service::service_fn(move |request| {
                    let call = hyper::service::Service::call(&service, request);
                    async move {
                        let mut response = call.await?;
                        if let Some(StatusOverride(status)) = response.extensions_mut().remove() {
                            *response.status_mut() = status;
                        }
                        Ok::<_, s3s::HttpError>(response)
                    }
                });
                let connection = http.serve_connection(TokioIo::new(socket), with_status);
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    if let Err(error) = connection.await {
                        tracing::debug!(%error, "an S3 connection ended with an error");
                    }
                });
            }
            _ = &mut stop => break,
        }
    }
    drop(listener);
    graceful.shutdown().await;
}
