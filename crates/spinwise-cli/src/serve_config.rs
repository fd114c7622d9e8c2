//! `spinwise serve`'s settings, resolved once at start: a flag (or its environment variable)
//! over the configuration file (`--config FILE`, TOML) over the built-in default.
//!
//! Invariants:
//! - every setting has exactly one source, and pairs (access and secret key; TLS certificate and
//!   key) and the rack choice (preset or rack file) come whole from one source: a flag for
//!   either half of a pair replaces both halves from the file, so a file's secret never goes with
//!   a flag's access key;
//! - `domains` (a list) comes whole from the flags (`--domain`, repeated) or the file;
//! - relative paths in the file are relative to the file's directory, so the file means the
//!   same from any working directory;
//! - an unknown key, a wrong type or a half pair in the file is an error naming the file, before
//!   anything is created.

use crate::error::{CliError, CliResult};
use crate::serve::ServeArgs;
use serde::Deserialize;
use spinwise_catalog::Tier;
use spinwise_s3::{BucketDomains, EtagMode, RestoreMode};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The data directory when neither flag nor file names one.
pub const DEFAULT_DATA: &str = "spinwise-data";
/// The listen address when neither flag nor file names one.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9000";
/// The largest single PUT body by default (5 GiB, as S3).
pub const DEFAULT_MAX_PUT_BYTES: u64 = 5 << 30;
/// What restored copies may hold by default (16 GiB).
pub const DEFAULT_RESTORE_CAPACITY_BYTES: u64 = 16 << 30;
/// How long a Bulk restore waits for a spin-up that happens anyway: 12 h.
pub const DEFAULT_RESTORE_BULK_WAIT_S: u64 = 12 * 3600;
/// The most restores ongoing at once.
pub const DEFAULT_RESTORE_MAX_ONGOING: u64 = 10_000;
/// The most Expedited restores ongoing at once (see spinwise-s3's `DEFAULT_EXPEDITED_MAX_ONGOING`).
pub const DEFAULT_RESTORE_EXPEDITED_MAX_ONGOING: u64 = spinwise_s3::DEFAULT_EXPEDITED_MAX_ONGOING;
/// The most Expedited restores started an hour (see spinwise-s3's `DEFAULT_EXPEDITED_PER_HOUR`).
pub const DEFAULT_RESTORE_EXPEDITED_PER_HOUR: u64 = spinwise_s3::DEFAULT_EXPEDITED_PER_HOUR;
/// Days after which an open multipart upload is aborted by default.
pub const DEFAULT_ABANDON_UPLOADS_AFTER_DAYS: u64 = 7;

/// The configuration file as written: every key optional, no others allowed.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServeFile {
    data: Option<PathBuf>,
    listen: Option<SocketAddr>,
    metrics_listen: Option<SocketAddr>,
    domains: Option<Vec<String>>,
    preset: Option<String>,
    rack: Option<PathBuf>,
    layout: Option<PathBuf>,
    time_factor: Option<f64>,
    access_key: Option<String>,
    secret_key: Option<String>,
    max_put_bytes: Option<u64>,
    default_storage_class: Option<String>,
    restore_mode: Option<String>,
    restore_capacity_bytes: Option<u64>,
    restore_bulk_wait_s: Option<u64>,
    restore_max_ongoing: Option<u64>,
    restore_expedited_max_ongoing: Option<u64>,
    restore_expedited_per_hour: Option<u64>,
    etag: Option<String>,
    abandon_uploads_after_days: Option<u64>,
    idle_spin_down_s: Option<f64>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
}

/// Where a new store's rack comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum RackChoice {
    Preset(String),
    File(PathBuf),
}

/// Everything `serve` runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeSettings {
    pub data: PathBuf,
    pub listen: SocketAddr,
    /// Where to serve Prometheus metrics (None: not served).
    pub metrics_listen: Option<SocketAddr>,
    /// Domains for virtual-hosted-style requests (None: path style only).
    pub domains: Option<BucketDomains>,
    /// The rack for a new store (None: the default preset); must match an existing store's.
    pub rack: Option<RackChoice>,
    /// A layout file for a new store (None: plan now); must match an existing store's.
    pub layout: Option<PathBuf>,
    /// The time factor for a new store (None: 1); must match an existing store's.
    pub time_factor: Option<f64>,
    /// The key pair (None: saved in the data directory, or generated).
    pub keys: Option<(String, String)>,
    pub max_put_bytes: u64,
    /// The tier of a write naming no storage class (`default_storage_class`; STANDARD: warm).
    pub default_tier: Tier,
    pub restore_mode: RestoreMode,
    pub restore_capacity_bytes: u64,
    pub restore_bulk_wait_s: u64,
    pub restore_max_ongoing: u64,
    pub restore_expedited_max_ongoing: u64,
    pub restore_expedited_per_hour: u64,
    pub etag: EtagMode,
    pub abandon_uploads_after_days: u64,
    /// Idle spin-down for this run, in seconds (0: never); `None`: the store's own
    /// `idle_spin_down_s`.
    pub idle_spin_down_s: Option<f64>,
    /// The TLS certificate chain and key files (None: plain HTTP).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Which file, if any, these came from (for messages).
    pub config_file: Option<PathBuf>,
}

impl ServeSettings {
    /// Resolves `args` over the file they name (if any) over the defaults.
    pub fn resolve(args: &ServeArgs) -> CliResult<ServeSettings> {
        let file = match &args.config {
            Some(path) => read_file(path)?,
            None => ServeFile::default(),
        };
        let base = args
            .config
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        merge(args, file, &base)
    }
}

/// Largest `serve --config` file: a few dozen settings take a few kilobytes; the bound keeps a
/// wrong path (a disk image, `/dev/zero`) from being read whole before it is refused.
pub const MAX_CONFIG_FILE_BYTES: usize = 1024 * 1024;

fn read_file(path: &Path) -> CliResult<ServeFile> {
    let text = crate::source::read_bounded(
        path,
        MAX_CONFIG_FILE_BYTES,
        "a serve configuration file",
        "serve_config::MAX_CONFIG_FILE_BYTES",
    )?;
    let file: ServeFile = toml::from_str(&text).map_err(|error| {
        // The line the error points at names the key; toml's own rendering spans several lines.
        let at = error.span().map_or(0, |span| span.start).min(text.len());
        let line_number = text[..at].matches('\n').count() + 1;
        let line = text.lines().nth(line_number - 1).unwrap_or("").trim();
        CliError::Usage(format!(
            "{}: line {line_number} (`{line}`): {}",
            path.display(),
            error.message()
        ))
    })?;
    let invalid = |what: &str| CliError::Usage(format!("{}: {what}", path.display()));
    if file.preset.is_some() && file.rack.is_some() {
        return Err(invalid("`preset` and `rack` both name the rack: keep one"));
    }
    if file.access_key.is_some() != file.secret_key.is_some() {
        return Err(invalid(
            "`access_key` and `secret_key` go together: give both or neither",
        ));
    }
    if file.tls_cert.is_some() != file.tls_key.is_some() {
        return Err(invalid(
            "`tls_cert` and `tls_key` go together: give both or neither",
        ));
    }
    if file.access_key.is_some() {
        warn_if_readable_by_others(path);
    }
    Ok(file)
}

/// A file holding a secret key should be readable by its owner only.
fn warn_if_readable_by_others(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(metadata) = std::fs::metadata(path)
            && metadata.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                file = %path.display(),
                "the configuration holds a secret key but others may read it (chmod 600)"
            );
        }
    }
}

fn merge(args: &ServeArgs, file: ServeFile, base: &Path) -> CliResult<ServeSettings> {
    let from_file = |path: PathBuf| base.join(path);
    let flag_rack = match (&args.preset, &args.rack) {
        (Some(name), _) => Some(RackChoice::Preset(name.clone())),
        (None, Some(path)) => Some(RackChoice::File(path.clone())),
        (None, None) => None,
    };
    let file_rack = match (file.preset, file.rack) {
        (Some(name), _) => Some(RackChoice::Preset(name)),
        (None, Some(path)) => Some(RackChoice::File(from_file(path))),
        (None, None) => None,
    };
    let flag_keys = args.access_key.clone().zip(args.secret_key.clone());
    let flag_tls = args.tls_cert.clone().zip(args.tls_key.clone());
    let file_tls = file
        .tls_cert
        .map(from_file)
        .zip(file.tls_key.map(from_file));
    Ok(ServeSettings {
        data: args
            .data
            .clone()
            .or(file.data.map(from_file))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA)),
        listen: match args.listen.or(file.listen) {
            Some(listen) => listen,
            None => DEFAULT_LISTEN.parse().expect("the default address parses"),
        },
        metrics_listen: args.metrics_listen.or(file.metrics_listen),
        domains: domains(args, file.domains)?,
        rack: flag_rack.or(file_rack),
        layout: args.layout.clone().or(file.layout.map(from_file)),
        time_factor: args.time_factor.or(file.time_factor),
        keys: flag_keys.or(file.access_key.zip(file.secret_key)),
        max_put_bytes: args
            .max_put_bytes
            .or(file.max_put_bytes)
            .unwrap_or(DEFAULT_MAX_PUT_BYTES),
        default_tier: match (args.default_storage_class, file.default_storage_class) {
            (Some(tier), _) => tier,
            (None, Some(text)) => {
                spinwise_s3::service::tier_of_known_class(&text).map_err(|error| {
                    let file = args.config.as_deref().unwrap_or(Path::new("?"));
                    CliError::Usage(format!(
                        "{}: `default_storage_class`: {error}",
                        file.display()
                    ))
                })?
            }
            (None, None) => Tier::Warm,
        },
        restore_mode: match (args.restore_mode, file.restore_mode) {
            (Some(mode), _) => mode,
            (None, Some(text)) => parse_in_file(args, "restore_mode", &text)?,
            (None, None) => RestoreMode::Sync,
        },
        restore_capacity_bytes: args
            .restore_capacity_bytes
            .or(file.restore_capacity_bytes)
            .unwrap_or(DEFAULT_RESTORE_CAPACITY_BYTES),
        restore_bulk_wait_s: args
            .restore_bulk_wait_s
            .or(file.restore_bulk_wait_s)
            .unwrap_or(DEFAULT_RESTORE_BULK_WAIT_S),
        restore_max_ongoing: args
            .restore_max_ongoing
            .or(file.restore_max_ongoing)
            .unwrap_or(DEFAULT_RESTORE_MAX_ONGOING),
        restore_expedited_max_ongoing: args
            .restore_expedited_max_ongoing
            .or(file.restore_expedited_max_ongoing)
            .unwrap_or(DEFAULT_RESTORE_EXPEDITED_MAX_ONGOING),
        restore_expedited_per_hour: args
            .restore_expedited_per_hour
            .or(file.restore_expedited_per_hour)
            .unwrap_or(DEFAULT_RESTORE_EXPEDITED_PER_HOUR),
        etag: match (args.etag, file.etag) {
            (Some(mode), _) => mode,
            (None, Some(text)) => parse_in_file(args, "etag", &text)?,
            (None, None) => EtagMode::Md5,
        },
        abandon_uploads_after_days: args
            .abandon_uploads_after_days
            .or(file.abandon_uploads_after_days)
            .unwrap_or(DEFAULT_ABANDON_UPLOADS_AFTER_DAYS),
        idle_spin_down_s: idle_spin_down_s(args, file.idle_spin_down_s)?,
        tls: flag_tls.or(file_tls),
        config_file: args.config.clone(),
    })
}

/// `--idle-spin-down-s` (seconds or `never`), else the file's `idle_spin_down_s` (seconds, 0
/// for never), as seconds with 0 for never; checked now so a bad one creates nothing.
fn idle_spin_down_s(args: &ServeArgs, from_file: Option<f64>) -> CliResult<Option<f64>> {
    if let Some(text) = &args.idle_spin_down_s {
        return Ok(Some(crate::sim::idle_spin_down_s(text)?.unwrap_or(0.0)));
    }
    match from_file {
        Some(seconds) if !(seconds.is_finite() && seconds >= 0.0) => {
            let file = args.config.as_deref().unwrap_or(Path::new("?"));
            Err(CliError::Usage(format!(
                "{}: `idle_spin_down_s` must be a number of seconds ≥ 0 (0: never), got {seconds}",
                file.display()
            )))
        }
        other => Ok(other),
    }
}

/// The domains of the flags, else of the file, checked now so a bad one creates nothing.
fn domains(args: &ServeArgs, from_file: Option<Vec<String>>) -> CliResult<Option<BucketDomains>> {
    let (names, source) = match (args.domains.is_empty(), from_file) {
        (false, _) => (args.domains.clone(), "--domain".to_string()),
        (true, Some(names)) => {
            let file = args.config.as_deref().unwrap_or(Path::new("?"));
            (names, format!("{}: `domains`", file.display()))
        }
        (true, None) => return Ok(None),
    };
    if names.is_empty() {
        return Ok(None);
    }
    BucketDomains::new(&names)
        .map(Some)
        .map_err(|error| CliError::Usage(format!("{source}: {error}")))
}

/// A file value that has its own grammar (`restore_mode`, `etag`), with the file named in the
/// error.
fn parse_in_file<T>(args: &ServeArgs, key: &str, text: &str) -> CliResult<T>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|error| {
        let file = args.config.as_deref().unwrap_or(Path::new("?"));
        CliError::Usage(format!("{}: `{key}`: {error}", file.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn settings(flags: &[&str]) -> CliResult<ServeSettings> {
        let args = Command::try_parse_from(std::iter::once("serve").chain(flags.iter().copied()))
            .expect("the flags parse");
        ServeSettings::resolve(&args.serve)
    }

    fn config_file(dir: &Path, text: &str) -> String {
        let path = dir.join("serve.toml");
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    }

    #[test]
    fn without_a_file_or_flags_the_defaults_apply() {
        let defaults = settings(&[]).unwrap();
        assert_eq!(defaults.data, PathBuf::from("spinwise-data"));
        assert_eq!(defaults.listen.to_string(), "127.0.0.1:9000");
        assert_eq!(
            (
                defaults.rack,
                defaults.layout,
                defaults.time_factor,
                defaults.keys
            ),
            (None, None, None, None)
        );
        assert_eq!(defaults.max_put_bytes, 5 << 30);
        assert_eq!(defaults.restore_mode, RestoreMode::Sync);
        assert_eq!(defaults.default_tier, Tier::Warm);
        assert_eq!(defaults.restore_capacity_bytes, 16 << 30);
        assert_eq!(defaults.restore_bulk_wait_s, 12 * 3600);
        assert_eq!(defaults.restore_max_ongoing, 10_000);
        assert_eq!(defaults.restore_expedited_max_ongoing, 8);
        assert_eq!(defaults.restore_expedited_per_hour, 36);
        assert_eq!(defaults.etag, EtagMode::Md5);
        assert_eq!(defaults.abandon_uploads_after_days, 7);
        assert_eq!(defaults.tls, None);
        assert_eq!(defaults.domains, None);
        assert_eq!(defaults.metrics_listen, None);
        assert_eq!(defaults.idle_spin_down_s, None);
    }

    #[test]
    fn idle_spin_down_comes_from_the_flag_over_the_file_and_never_is_zero() {
        let dir = tempfile::tempdir().unwrap();
        let file = config_file(dir.path(), "idle_spin_down_s = 30\n");
        let from_file = settings(&["--config", &file]).unwrap();
        assert_eq!(from_file.idle_spin_down_s, Some(30.0));
        let flag = settings(&["--config", &file, "--idle-spin-down-s", "never"]).unwrap();
        assert_eq!(flag.idle_spin_down_s, Some(0.0));
        let flag = settings(&["--idle-spin-down-s", "1.5"]).unwrap();
        assert_eq!(flag.idle_spin_down_s, Some(1.5));
        assert!(settings(&["--idle-spin-down-s", "soon"]).is_err());
        let negative = config_file(dir.path(), "idle_spin_down_s = -1\n");
        assert!(settings(&["--config", &negative]).is_err());
    }

    #[test]
    fn the_file_sets_every_setting_and_its_relative_paths_are_relative_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = config_file(
            dir.path(),
            r#"
data = "archive"
listen = "0.0.0.0:9100"
metrics_listen = "127.0.0.1:9101"
domains = ["s3.example.com"]
rack = "racks/mine.toml"
layout = "/abs/layout.json"
time_factor = 0.01
access_key = "AKIAEXAMPLE0000001"
secret_key = "secret-from-the-file-0123456789"
max_put_bytes = 1000
default_storage_class = "GLACIER"
restore_mode = "async"
restore_capacity_bytes = 2000
restore_bulk_wait_s = 60
restore_max_ongoing = 5
restore_expedited_max_ongoing = 2
restore_expedited_per_hour = 12
etag = "blake3"
abandon_uploads_after_days = 0
tls_cert = "cert.pem"
tls_key = "key.pem"
"#,
        );
        let from_file = settings(&["--config", &file]).unwrap();
        assert_eq!(from_file.data, dir.path().join("archive"));
        assert_eq!(from_file.listen.to_string(), "0.0.0.0:9100");
        assert_eq!(
            from_file.metrics_listen.map(|a| a.to_string()),
            Some("127.0.0.1:9101".into())
        );
        assert_eq!(
            from_file.domains,
            Some(BucketDomains::new(["s3.example.com"]).unwrap())
        );
        assert_eq!(
            from_file.rack,
            Some(RackChoice::File(dir.path().join("racks/mine.toml")))
        );
        assert_eq!(from_file.layout, Some(PathBuf::from("/abs/layout.json")));
        assert_eq!(from_file.time_factor, Some(0.01));
        assert_eq!(
            from_file.keys,
            Some((
                "AKIAEXAMPLE0000001".to_string(),
                "secret-from-the-file-0123456789".to_string()
            ))
        );
        assert_eq!(from_file.max_put_bytes, 1000);
        assert_eq!(from_file.restore_mode, RestoreMode::Async);
        assert_eq!(from_file.default_tier, Tier::Cold);
        assert_eq!(from_file.restore_capacity_bytes, 2000);
        assert_eq!(from_file.restore_bulk_wait_s, 60);
        assert_eq!(from_file.restore_max_ongoing, 5);
        assert_eq!(from_file.restore_expedited_max_ongoing, 2);
        assert_eq!(from_file.restore_expedited_per_hour, 12);
        assert_eq!(from_file.etag, EtagMode::Blake3);
        assert_eq!(from_file.abandon_uploads_after_days, 0);
        assert_eq!(
            from_file.tls,
            Some((dir.path().join("cert.pem"), dir.path().join("key.pem")))
        );
    }

    #[test]
    fn flags_override_the_file_and_a_flag_rack_or_key_pair_replaces_the_files_whole() {
        let dir = tempfile::tempdir().unwrap();
        let file = config_file(
            dir.path(),
            "listen = \"0.0.0.0:9100\"\ndomains = [\"file.test\"]\nrack = \"mine.toml\"\naccess_key = \"FILEKEY000000000001\"\nsecret_key = \"file-secret-0123456789abcdef\"\netag = \"blake3\"\n",
        );
        let flags = [
            "--config",
            file.as_str(),
            "--listen",
            "127.0.0.1:9200",
            "--domain",
            "flag-one.test",
            "--domain",
            "flag-two.test",
            "--preset",
            "pelican",
            "--access-key",
            "FLAGKEY000000000001",
            "--secret-key",
            "flag-secret-0123456789abcdef",
        ];
        let merged = settings(&flags).unwrap();
        assert_eq!(merged.listen.to_string(), "127.0.0.1:9200");
        assert_eq!(
            merged.domains,
            Some(BucketDomains::new(["flag-one.test", "flag-two.test"]).unwrap())
        );
        assert_eq!(merged.rack, Some(RackChoice::Preset("pelican".into())));
        assert_eq!(
            merged.keys,
            Some((
                "FLAGKEY000000000001".to_string(),
                "flag-secret-0123456789abcdef".to_string()
            ))
        );
        assert_eq!(
            merged.etag,
            EtagMode::Blake3,
            "not given as a flag: the file's"
        );
    }

    #[test]
    fn a_bad_file_is_an_error_naming_it_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        for (text, expected) in [
            ("listen_on = \"x\"\n", "listen_on"),
            ("listen = \"not an address\"\n", "serve.toml"),
            ("time_factor = \"fast\"\n", "time_factor"),
            ("preset = \"pelican\"\nrack = \"r.toml\"\n", "keep one"),
            ("access_key = \"ONLYHALF00000000001\"\n", "go together"),
            ("tls_key = \"key.pem\"\n", "go together"),
            ("restore_mode = \"later\"\n", "restore_mode"),
            (
                "default_storage_class = \"COLDEST\"\n",
                "default_storage_class",
            ),
            ("etag = \"sha1\"\n", "etag"),
            ("domains = [\"bad_domain\"]\n", "domains"),
            ("domains = \"s3.example.com\"\n", "domains"),
        ] {
            let file = config_file(dir.path(), text);
            let error = settings(&["--config", &file]).unwrap_err().to_string();
            assert!(error.contains("serve.toml"), "{text}: {error}");
            assert!(error.contains(expected), "{text}: {error}");
        }
        let missing = dir.path().join("absent.toml");
        let error = settings(&["--config", missing.to_str().unwrap()]).unwrap_err();
        assert!(error.to_string().contains("absent.toml"), "{error}");
    }
}
