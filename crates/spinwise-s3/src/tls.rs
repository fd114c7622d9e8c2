//! Optional TLS for the server: a rustls server configuration (the `ring` crypto provider, TLS 1.2
//! and 1.3, ALPN `http/1.1`) built from a PEM certificate chain and a PEM private key, and the
//! timeout a client gets to finish its handshake.
//!
//! Invariants:
//! - a [`TlsConfig`] always holds a usable configuration: the chain is non-empty and the key
//!   matches its first certificate (rustls checks this), so a bad file is refused when the
//!   server starts, never on a client's connection;
//! - every error names the file it came from;
//! - the provider is chosen explicitly, so the configuration does not depend on which rustls
//!   provider features other crates in the build happen to enable.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::{self, PemObject as _};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// How long a client may take from connecting to finishing its TLS handshake before the server
/// drops the connection (a slow-loris guard before hyper's own header timeout starts).
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a certificate chain and key do not make a TLS configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading the TLS certificate chain {path}: {source}")]
    Certificate { path: PathBuf, source: pem::Error },
    #[error("{path} holds no PEM certificate (expected -----BEGIN CERTIFICATE-----)")]
    NoCertificate { path: PathBuf },
    #[error(
        "reading the TLS private key {path}: {source} (expected a PEM PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)"
    )]
    PrivateKey { path: PathBuf, source: pem::Error },
    #[error("the TLS certificate {certificate} and key {key} are not usable together: {source}")]
    Mismatch {
        certificate: PathBuf,
        key: PathBuf,
        source: rustls::Error,
    },
}

/// A checked TLS server configuration and its handshake timeout.
#[derive(Clone)]
pub struct TlsConfig {
    acceptor: TlsAcceptor,
    handshake_timeout: Duration,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// Reads the certificate chain (leaf first, then intermediates) from `certificate_path` and
    /// the private key (PKCS#8, PKCS#1 or SEC1) from `key_path`, both PEM.
    pub fn from_pem_files(certificate_path: &Path, key_path: &Path) -> Result<TlsConfig, TlsError> {
        let chain = read_chain(certificate_path)?;
        let key =
            PrivateKeyDer::from_pem_file(key_path).map_err(|source| TlsError::PrivateKey {
                path: key_path.to_path_buf(),
                source,
            })?;
        TlsConfig::from_der(chain, key).map_err(|source| TlsError::Mismatch {
            certificate: certificate_path.to_path_buf(),
            key: key_path.to_path_buf(),
            source,
        })
    }

    /// A configuration from an already decoded chain (non-empty, leaf first) and key.
    pub fn from_der(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<TlsConfig, rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        // The server speaks HTTP/1.1 only; saying so lets an h2-capable client settle at once.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsConfig {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        })
    }

    /// The same configuration with another handshake timeout (must be positive).
    pub fn with_handshake_timeout(mut self, handshake_timeout: Duration) -> TlsConfig {
        assert!(
            !handshake_timeout.is_zero(),
            "a zero handshake timeout would refuse every client"
        );
        self.handshake_timeout = handshake_timeout;
        self
    }

    /// How long a client may take to finish its handshake.
    pub fn handshake_timeout(&self) -> Duration {
        self.handshake_timeout
    }

    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let error = |source| TlsError::Certificate {
        path: path.to_path_buf(),
        source,
    };
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(error)?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(chain)
}
