//! The server's one key pair: given (flags, environment), or saved in the data directory
//! (`DATA/s3-credentials.toml`, mode 0600), or generated on first start from the OS's random
//! source and saved there.
//!
//! Invariants:
//! - a generated pair is on disk (fsynced, 0600, created exclusively) before it is used, so the
//!   pair printed once is the pair every later start reads;
//! - given keys are never written to disk;
//! - a request signed with any other access key is 403 `InvalidAccessKeyId`, S3's answer
//!   ([`KeyPairAuth`]).

use serde::{Deserialize, Serialize};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

pub const CREDENTIALS_FILE: &str = "s3-credentials.toml";
const ACCESS_KEY_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const SECRET_KEY_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const ACCESS_KEY_LENGTH: usize = 20;
const SECRET_KEY_LENGTH: usize = 40;

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<hidden>")
            .finish()
    }
}

/// Where the pair in use came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CredentialSource {
    Given,
    Saved,
    /// Made now: print it once.
    Generated,
}

#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{0}")]
    Given(String),
}

fn check_key(what: &str, key: &str) -> Result<(), String> {
    if key.is_empty() || key.len() > 128 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "the {what} must be 1 to 128 printable ASCII characters without spaces"
        ));
    }
    Ok(())
}

impl Credentials {
    /// A pair given on the command line or in the environment.
    pub fn given(access_key: &str, secret_key: &str) -> Result<Credentials, CredentialsError> {
        check_key("access key", access_key).map_err(CredentialsError::Given)?;
        check_key("secret key", secret_key).map_err(CredentialsError::Given)?;
        Ok(Credentials {
            access_key: access_key.to_string(),
            secret_key: secret_key.to_string(),
        })
    }

    /// The pair saved in `data_dir`, or a new one generated and saved there.
    pub fn load_or_generate(
        data_dir: &Path,
    ) -> Result<(Credentials, CredentialSource), CredentialsError> {
        let path = data_dir.join(CREDENTIALS_FILE);
        let io_error = |source| CredentialsError::Io {
            path: path.clone(),
            source,
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let invalid = |message: String| CredentialsError::Invalid {
                    path: path.clone(),
                    message,
                };
                let saved: Credentials =
                    toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
                check_key("access key", &saved.access_key).map_err(invalid)?;
                check_key("secret key", &saved.secret_key).map_err(invalid)?;
                Ok((saved, CredentialSource::Saved))
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let generated = Credentials {
                    access_key: random_text(ACCESS_KEY_CHARS, ACCESS_KEY_LENGTH)
                        .map_err(io_error)?,
                    secret_key: random_text(SECRET_KEY_CHARS, SECRET_KEY_LENGTH)
                        .map_err(io_error)?,
                };
                save(&path, &generated).map_err(io_error)?;
                Ok((generated, CredentialSource::Generated))
            }
            Err(error) => Err(io_error(error)),
        }
    }
}

/// `length` characters of `alphabet` from the OS's random source (rejection sampling, so each
/// character is uniform).
fn random_text(alphabet: &[u8], length: usize) -> std::io::Result<String> {
    let mut random = std::fs::File::open("/dev/urandom")?;
    let limit = 256 - 256 % alphabet.len();
    let mut text = String::with_capacity(length);
    let mut byte = [0u8; 1];
    while text.len() < length {
        random.read_exact(&mut byte)?;
        if usize::from(byte[0]) < limit {
            text.push(char::from(alphabet[usize::from(byte[0]) % alphabet.len()]));
        }
    }
    Ok(text)
}

fn save(path: &Path, credentials: &Credentials) -> std::io::Result<()> {
    let text = toml::to_string(credentials).expect("credentials serialize");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// s3s's authentication over the one key pair. s3s's own `SimpleAuth` answers an unknown key
/// with `NotSignedUp`; S3 answers `InvalidAccessKeyId`, which is what clients report and what
/// people search for when a key is mistyped.
pub struct KeyPairAuth {
    access_key: String,
    secret_key: s3s::auth::SecretKey,
}

impl KeyPairAuth {
    pub fn new(credentials: &Credentials) -> KeyPairAuth {
        KeyPairAuth {
            access_key: credentials.access_key.clone(),
            secret_key: credentials.secret_key.clone().into(),
        }
    }
}

#[async_trait::async_trait]
impl s3s::auth::S3Auth for KeyPairAuth {
    async fn get_secret_key(&self, access_key: &str) -> s3s::S3Result<s3s::auth::SecretKey> {
        if access_key == self.access_key {
            return Ok(self.secret_key.clone());
        }
        Err(s3s::S3Error::with_message(
            s3s::S3ErrorCode::InvalidAccessKeyId,
            "The AWS Access Key Id you provided does not exist in our records.",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_start_generates_and_saves_a_private_pair_that_later_starts_read() {
        let dir = tempfile::tempdir().unwrap();
        let (first, source) = Credentials::load_or_generate(dir.path()).unwrap();
        assert_eq!(source, CredentialSource::Generated);
        assert_eq!(first.access_key.len(), ACCESS_KEY_LENGTH);
        assert_eq!(first.secret_key.len(), SECRET_KEY_LENGTH);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(CREDENTIALS_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let (again, source) = Credentials::load_or_generate(dir.path()).unwrap();
        assert_eq!(source, CredentialSource::Saved);
        assert_eq!(again, first);
        let other = tempfile::tempdir().unwrap();
        let (second, _) = Credentials::load_or_generate(other.path()).unwrap();
        assert_ne!(second.secret_key, first.secret_key);
    }

    #[test]
    fn given_keys_with_spaces_or_empty_are_refused() {
        assert!(Credentials::given("", "secret").is_err());
        assert!(Credentials::given("key", "has space").is_err());
        assert!(Credentials::given("key", "secret").is_ok());
    }
}
