//! `spinwise serve`: the S3-compatible server over a data directory (docs/s3.md).
//!
//! With no arguments it creates (or reopens) `./spinwise-data` on the `dense-jbod-60` preset at
//! time factor 1, listens on 127.0.0.1:9000, runs the upkeep task, logs every group spin-up and
//! spin-down, and on Ctrl-C or SIGTERM stops accepting, finishes the requests in flight, stops
//! upkeep and closes the store (catalog checkpointed). The rack, layout and time factor are fixed
//! when the directory is created; given again for an existing directory they must be absent.
//! With `--tls-cert` and `--tls-key` it serves HTTPS (rustls); the PEM files are checked before
//! anything else, so a bad one fails the start and creates nothing.

use crate::error::{CliError, CliResult, io_error};
use crate::output::outln;
use crate::source::{PRESETS, layout_or_plan, load_preset};
use clap::Args;
use spinwise_model::parse_rack;
use spinwise_s3::{
    CredentialSource, Credentials, EtagMode, META_FILE, MetaDb, RestoreMode, RunningServer,
    S3Settings, SpinwiseS3, TlsConfig, build_service,
};
use spinwise_store::driver::{DiskEvent, GroupActivity};
use spinwise_store::{RackSource, SqliteStore, Store, StoreConfig, StoreError};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The preset a new data directory gets: the smallest shipped rack that plans (60 disks in one
/// enclosure, erasure 3 + 2), so it fits a laptop.
pub const DEFAULT_PRESET: &str = "dense-jbod-60";

#[derive(Args)]
pub struct ServeArgs {
    /// The data directory (created with a store on first start).
    #[arg(long, value_name = "DIR", default_value = "spinwise-data")]
    pub data: PathBuf,
    /// Where to listen for S3 requests.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9000")]
    pub listen: SocketAddr,
    /// A shipped rack for a new data directory (default dense-jbod-60).
    #[arg(long, value_name = "NAME", conflicts_with = "rack")]
    pub preset: Option<String>,
    /// A rack description (TOML) for a new data directory.
    #[arg(long, value_name = "RACK.toml")]
    pub rack: Option<PathBuf>,
    /// A layout written by `spinwise plan --out` for a new data directory (default: plan now).
    #[arg(long, value_name = "LAYOUT.json")]
    pub layout: Option<PathBuf>,
    /// Multiplies spin-up and mount latencies of a new data directory's emulated disks
    /// (default 1: real time).
    #[arg(long, value_name = "F")]
    pub time_factor: Option<f64>,
    /// The access key clients sign with (default: saved in DATA/s3-credentials.toml, generated
    /// and printed on first start).
    #[arg(
        long,
        value_name = "KEY",
        env = "SPINWISE_ACCESS_KEY",
        requires = "secret_key"
    )]
    pub access_key: Option<String>,
    /// The secret key that goes with --access-key.
    #[arg(
        long,
        value_name = "SECRET",
        env = "SPINWISE_SECRET_KEY",
        hide_env_values = true,
        requires = "access_key"
    )]
    pub secret_key: Option<String>,
    /// The largest single PUT body in bytes (default 5 GiB, as S3).
    #[arg(long, value_name = "BYTES", default_value_t = 5 << 30)]
    pub max_put_bytes: u64,
    /// The restore mode new buckets get: `sync` (a GET of a migrated object waits for the
    /// spin-up) or `async` (403 InvalidObjectState until RestoreObject); a bucket's tag
    /// `spinwise-restore-mode` changes it (docs/s3.md "Restore").
    #[arg(long, value_name = "MODE", default_value = "sync", value_parser = parse_restore_mode)]
    pub restore_mode: RestoreMode,
    /// The most bytes restored copies may hold in DATA/s3-restored (default 16 GiB); a
    /// RestoreObject over it answers 503 SlowDown.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 30)]
    pub restore_capacity_bytes: u64,
    /// What a PUT's ETag is: `md5` (S3's; clients such as rclone check it) or `blake3` (the
    /// store's content hash, 64 hex digits: no MD5 pass over the body, the costliest step of a
    /// large PUT on a small machine; docs/s3.md "ETags").
    #[arg(long, value_name = "MODE", default_value = "md5")]
    pub etag: EtagMode,
    /// Abort multipart uploads still open this many days after they started, freeing their
    /// part files and open-upload slots (0: never; S3's AbortIncompleteMultipartUpload).
    #[arg(long, value_name = "DAYS", default_value_t = 7)]
    pub abandon_uploads_after_days: u64,
    /// A PEM certificate chain (leaf first): serve HTTPS instead of plain HTTP (with --tls-key).
    #[arg(long, value_name = "CERT.pem", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key (PKCS#8, PKCS#1 or SEC1) that goes with --tls-cert.
    #[arg(long, value_name = "KEY.pem", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

fn parse_restore_mode(text: &str) -> Result<RestoreMode, String> {
    text.parse()
        .map_err(|e: spinwise_s3::restore::BadRestoreMode| e.to_string())
}

fn store_error(error: StoreError) -> CliError {
    CliError::Usage(error.to_string())
}

pub fn run(args: &ServeArgs) -> CliResult<()> {
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("starting the async runtime: {e}")))?;
    runtime.block_on(serve(args))
}

/// Opens the data directory's store, creating it first if it holds none.
async fn open_or_create(args: &ServeArgs) -> CliResult<SqliteStore> {
    let creating_only = args.preset.is_some()
        || args.rack.is_some()
        || args.layout.is_some()
        || args.time_factor.is_some();
    if args.data.join(spinwise_store::config::STORE_FILE).exists() {
        if creating_only {
            return Err(CliError::Usage(format!(
                "{} already holds a store: its rack, layout and time factor were fixed when it was created (drop --preset/--rack/--layout/--time-factor)",
                args.data.display()
            )));
        }
        return Store::open_sqlite(&args.data).await.map_err(store_error);
    }
    let (source, rack_toml) = match (&args.preset, &args.rack) {
        (_, Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(io_error(path))?;
            (RackSource::File(path.clone()), text)
        }
        (preset, None) => {
            let name = preset.as_deref().unwrap_or(DEFAULT_PRESET);
            load_preset(name)?;
            let (_, text) = PRESETS
                .iter()
                .find(|(preset, _)| *preset == name)
                .expect("load_preset found it");
            (RackSource::Preset(name.to_string()), text.to_string())
        }
    };
    let rack = parse_rack(&format!("{source:?}"), &rack_toml)?;
    let layout = layout_or_plan(&rack, args.layout.as_deref())?;
    let mut config = StoreConfig::new(source, rack_toml, layout);
    config.time_factor = args.time_factor.unwrap_or(1.0);
    let store = Store::init_sqlite(&args.data, config)
        .await
        .map_err(store_error)?;
    tracing::info!(
        data = %args.data.display(),
        rack = store.rack().name,
        disks = store.rack().disk_count(),
        groups = store.layout().groups.len(),
        "created a store"
    );
    Ok(store)
}

/// Logs every group power change (with the jobs that wait for it) and every disk failure.
fn log_activity(store: &Arc<SqliteStore>) -> tokio::task::JoinHandle<()> {
    let driver = store.rack_io().driver.clone();
    let mut activity = driver.subscribe_activity();
    let mut disk_events = driver.subscribe_disk_events();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                event = activity.recv() => match event {
                    Ok(GroupActivity::Up { group, .. }) => {
                        let queued = match driver.state().await {
                            Ok(state) => state
                                .groups
                                .iter()
                                .find(|g| g.group == group)
                                .map_or(0, |g| g.queued_jobs + usize::from(g.serving)),
                            Err(_) => return,
                        };
                        tracing::info!(group, jobs = queued, "group spun up: work queued for it (reads, migration, rebuild or scrub)");
                    }
                    Ok(GroupActivity::GoingDown { group, .. }) => {
                        tracing::info!(group, "group spinning down: idle, or yielding to a group with waiting work");
                    }
                    Ok(GroupActivity::Down { group, .. }) => tracing::info!(group, "group spun down"),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "power-change log fell behind");
                    }
                    Err(_) => return,
                },
                event = disk_events.recv() => match event {
                    Ok(DiskEvent::SpinUpFailed { disk, group, error, .. }) => tracing::warn!(disk, group, error, "disk failed to spin up"),
                    Ok(DiskEvent::SpinDownFailed { disk, group, error, .. }) => tracing::warn!(disk, group, error, "disk failed to spin down"),
                    Ok(DiskEvent::Withheld { disk, group, .. }) => tracing::warn!(disk, group, "disk withheld from a spin-up by the budget audit"),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(_) => return,
                },
            }
        }
    })
}

fn credentials(args: &ServeArgs, data: &Path) -> CliResult<Credentials> {
    let usage = |e: spinwise_s3::CredentialsError| CliError::Usage(e.to_string());
    if let (Some(access_key), Some(secret_key)) = (&args.access_key, &args.secret_key) {
        return Credentials::given(access_key, secret_key).map_err(usage);
    }
    let (credentials, source) = Credentials::load_or_generate(data).map_err(usage)?;
    if source == CredentialSource::Generated {
        outln!(
            "generated S3 credentials (saved in {}, shown once):\n  access key: {}\n  secret key: {}",
            data.join(spinwise_s3::credentials::CREDENTIALS_FILE)
                .display(),
            credentials.access_key,
            credentials.secret_key
        );
    }
    Ok(credentials)
}

/// Resolves on Ctrl-C or SIGTERM. The handlers are installed when this is called, not when the
/// future is first polled: `serve` calls it before printing its address, so a SIGTERM sent as
/// soon as the address shows (a supervisor, a test) stops the server cleanly instead of killing
/// it with the signal's default action.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut interrupt), Ok(mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = terminate.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// The TLS configuration from --tls-cert/--tls-key (clap makes them come together), read before
/// anything is created so a bad file leaves no new data directory behind.
fn tls_config(args: &ServeArgs) -> CliResult<Option<TlsConfig>> {
    match (&args.tls_cert, &args.tls_key) {
        (Some(certificate), Some(key)) => TlsConfig::from_pem_files(certificate, key)
            .map(Some)
            .map_err(|e| CliError::Usage(e.to_string())),
        (None, None) => Ok(None),
        _ => Err(CliError::Usage(
            "--tls-cert and --tls-key go together: give both or neither".to_string(),
        )),
    }
}

async fn serve(args: &ServeArgs) -> CliResult<()> {
    let tls = tls_config(args)?;
    let store = Arc::new(open_or_create(args).await?);
    for problem in &store.recovery().problems {
        tracing::warn!(problem, "recovery");
    }
    let credentials = credentials(args, &args.data)?;
    let meta_path = args.data.join(META_FILE);
    let meta = MetaDb::open(&meta_path)
        .await
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let settings = S3Settings {
        max_put_bytes: args.max_put_bytes,
        default_restore_mode: args.restore_mode,
        restore_capacity_bytes: args.restore_capacity_bytes,
        etag_mode: args.etag,
        abandon_uploads_after_s: args.abandon_uploads_after_days.saturating_mul(86_400),
        ..S3Settings::default()
    };
    let s3 = SpinwiseS3::new(Arc::clone(&store), meta.clone(), settings)
        .await
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let upkeep = store.start_upkeep().await.map_err(store_error)?;
    let activity = log_activity(&store);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|source| CliError::Io {
            path: args.listen.to_string(),
            source,
        })?;
    let server = RunningServer::start_with(listener, build_service(s3, &credentials), tls)
        .map_err(|source| CliError::Io {
            path: args.listen.to_string(),
            source,
        })?;
    let stop = shutdown_signal();
    outln!(
        "serving S3 on {}://{} (data {}); Ctrl-C stops",
        server.scheme(),
        server.local_addr(),
        args.data.display()
    );
    stop.await;
    tracing::info!("stopping: finishing requests in flight");
    server.stop().await;
    let report = upkeep.stop().await;
    tracing::info!(
        scrub_spin_ups = report.scrub_spin_ups,
        piggyback_batches = report.piggyback_batches,
        "upkeep stopped"
    );
    activity.abort();
    meta.close().await;
    close_store(store).await;
    tracing::info!("stopped");
    Ok(())
}

/// Closes the store once the last request's reader has let go of it.
async fn close_store(mut store: Arc<SqliteStore>) {
    for _ in 0..100 {
        match Arc::try_unwrap(store) {
            Ok(store) => {
                store.close().await;
                return;
            }
            Err(shared) => {
                store = shared;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    tracing::warn!(
        "the store is still in use after 5 s; exiting without closing it (acknowledged writes are durable)"
    );
}
