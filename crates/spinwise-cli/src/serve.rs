//! `spinwise serve`: the S3-compatible server over a data directory (docs/s3.md).
//!
//! With no arguments it creates (or reopens) `./spinwise-data` on the `dense-jbod-60` preset at
//! time factor 1, listens on 127.0.0.1:9000, runs the upkeep task, logs every group spin-up and
//! spin-down, and on Ctrl-C or SIGTERM stops accepting, finishes the requests in flight, stops
//! upkeep and closes the store (catalog checkpointed). The rack, layout and time factor are fixed
//! when the directory is created; given again for an existing directory (flag or configuration
//! file) they must equal the store's. Settings resolve flag over file over default
//! (crate::serve_config).
//! With `--tls-cert` and `--tls-key` it serves HTTPS (rustls); the PEM files are checked before
//! anything else, so a bad one fails the start and creates nothing. With `--metrics-listen` it
//! also serves Prometheus metrics on a listener of their own.

use crate::error::{CliError, CliResult};
use crate::output::outln;
use crate::serve_config::{RackChoice, ServeSettings};
use crate::source::{PRESETS, layout_or_plan, load_preset, read_layout};
use clap::Args;
use spinwise_model::parse_rack;
use spinwise_s3::metrics::{S3Metrics, serve_metrics};
use spinwise_s3::{
    CredentialSource, Credentials, EtagMode, META_FILE, MetaDb, RestoreMode, Restorer,
    RunningServer, S3Settings, SpinwiseS3, TlsConfig, build_service_with,
};
use spinwise_store::driver::{DiskEvent, GroupActivity};
use spinwise_store::{RackSource, SqliteStore, Store, StoreConfig, StoreError};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The preset a new data directory gets: the smallest shipped rack that plans (60 disks in one
/// enclosure, erasure 3 + 2), so it fits a laptop.
pub const DEFAULT_PRESET: &str = "dense-jbod-60";

// Settings with a default are Options here, the defaults applied in `serve_config` after the
// configuration file, so a flag left out never hides the file's value; "[default: …]" is written
// into their help by hand for that reason.
#[derive(Args)]
pub struct ServeArgs {
    /// A TOML file with any of these settings, named as the flags with `_` for `-` (`data`,
    /// `listen`, `metrics_listen`, `domains` (a list), `preset` or `rack`, `layout`,
    /// `time_factor`, `access_key` and `secret_key`,
    /// `max_put_bytes`, `default_storage_class`, `restore_mode`, `restore_capacity_bytes`,
    /// `restore_bulk_wait_s`,
    /// `restore_max_ongoing`, `restore_expedited_max_ongoing`, `restore_expedited_per_hour`,
    /// `etag`,
    /// `abandon_uploads_after_days`, `idle_spin_down_s` (seconds, 0 for never), `tls_cert` and
    /// `tls_key`); flags and environment override
    /// it, relative paths in it are relative to its directory (docs/s3.md "Configuration file").
    #[arg(long, value_name = "FILE", env = "SPINWISE_CONFIG")]
    pub config: Option<PathBuf>,
    /// The data directory (created with a store on first start) [default: spinwise-data]
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Where to listen for S3 requests [default: 127.0.0.1:9000]
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Serve Prometheus metrics (groups' phases and spin-ups, queued jobs, disks active against
    /// the budget, S3 answers by status) at http://ADDR/metrics, unauthenticated: bind it where
    /// only your monitoring reaches [default: off]
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// A domain for virtual-hosted-style requests: `Host: <bucket>.<NAME>` names the bucket
    /// (as AWS SDKs send for DNS names); repeat for several. Other hosts stay path style
    /// [default: none, path style only]
    #[arg(long = "domain", value_name = "NAME")]
    pub domains: Vec<String>,
    /// A shipped rack for a new data directory (default dense-jbod-60); for an existing one it
    /// must be the rack the store was created with.
    #[arg(long, value_name = "NAME", conflicts_with = "rack")]
    pub preset: Option<String>,
    /// A rack description (TOML) for a new data directory (for an existing one: its rack).
    #[arg(long, value_name = "RACK.toml")]
    pub rack: Option<PathBuf>,
    /// A layout written by `spinwise plan --out` for a new data directory (default: plan now;
    /// for an existing one: its layout).
    #[arg(long, value_name = "LAYOUT.json")]
    pub layout: Option<PathBuf>,
    /// Multiplies spin-up and mount latencies of a new data directory's emulated disks
    /// (default 1: real time; for an existing one: its time factor).
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
    /// The largest single PUT body in bytes (5 GiB, as S3) [default: 5368709120]
    #[arg(long, value_name = "BYTES")]
    pub max_put_bytes: Option<u64>,
    /// The restore mode new buckets get: `sync` (a GET of a migrated object waits for the
    /// spin-up) or `async` (403 InvalidObjectState until RestoreObject); a bucket's tag
    /// `spinwise-restore-mode` changes it (docs/s3.md "Restore") [default: sync]
    #[arg(long, value_name = "MODE", value_parser = parse_restore_mode)]
    pub restore_mode: Option<RestoreMode>,
    /// The storage class of a PUT, CopyObject or multipart upload that names none. S3's is
    /// STANDARD: such objects stay warm (staged on the always-on devices, readable in an `async`
    /// bucket without a restore) until a lifecycle Transition or a full warm tier moves them
    /// cold; GLACIER (or DEEP_ARCHIVE, GLACIER_IR) sends them to the sleeping disks, as every
    /// object went before tiers (docs/s3.md "Storage classes") [default: STANDARD]
    #[arg(long, value_name = "CLASS", value_parser = parse_storage_class)]
    pub default_storage_class: Option<spinwise_catalog::Tier>,
    /// The most bytes restored copies may hold in DATA/s3-restored (16 GiB); a RestoreObject
    /// over it answers 503 SlowDown [default: 17179869184]
    #[arg(long, value_name = "BYTES")]
    pub restore_capacity_bytes: Option<u64>,
    /// How long a RestoreObject with Tier Bulk waits for its group to spin up for other work
    /// (a GET, another restore, a migration, a scrub) before it spins the group up itself; a
    /// Bulk restore rides that spin-up and costs none of its own (docs/s3.md "Restore tiers")
    /// [default: 43200]
    #[arg(long, value_name = "SECONDS")]
    pub restore_bulk_wait_s: Option<u64>,
    /// The most restores ongoing at once (queued, waiting for a spin-up or copying); one more
    /// RestoreObject answers 503 SlowDown [default: 10000]
    #[arg(long, value_name = "N")]
    pub restore_max_ongoing: Option<u64>,
    /// The most RestoreObject calls with Tier Expedited ongoing at once. Their reads go ahead of
    /// every standard read and bring their group up next, which can cost a spin-up that
    /// batching would have saved; one more answers 503 GlacierExpeditedRetrievalNotAvailable, as
    /// S3 does when it lacks Expedited capacity (docs/s3.md "Restore tiers") [default: 8]
    #[arg(long, value_name = "N")]
    pub restore_expedited_max_ongoing: Option<u64>,
    /// The most RestoreObject calls with Tier Expedited started an hour, in bursts of up to
    /// --restore-expedited-max-ongoing: a steady stream of them slows every other read, since
    /// each may cost a spin-up that batching would have saved (docs/experiments.md
    /// "expedited-restores"). One more answers 503 GlacierExpeditedRetrievalNotAvailable with a
    /// Retry-After of when the next may start; 0 refuses them all [default: 36]
    #[arg(long, value_name = "N")]
    pub restore_expedited_per_hour: Option<u64>,
    /// What a PUT's ETag is: `md5` (S3's; clients such as rclone check it) or `blake3` (the
    /// store's content hash, 64 hex digits: no MD5 pass over the body, the costliest step of a
    /// large PUT on a small machine; docs/s3.md "ETags") [default: md5]
    #[arg(long, value_name = "MODE")]
    pub etag: Option<EtagMode>,
    /// Abort multipart uploads still open this many days after they started, freeing their
    /// part files and open-upload slots (0: never; S3's AbortIncompleteMultipartUpload)
    /// [default: 7]
    #[arg(long, value_name = "DAYS")]
    pub abandon_uploads_after_days: Option<u64>,
    /// Spin a group down once it has had no work for S seconds (real time, whatever the
    /// store's time factor), or `never` (0 too), for this run; each spin-down is logged with
    /// its reason and counted in the metrics (`spinwise_group_spin_downs_by_cause_total`)
    /// [default: the store's `idle_spin_down_s` in store.toml, 120 unless set]
    #[arg(long, value_name = "S|never")]
    pub idle_spin_down_s: Option<String>,
    /// A PEM certificate chain (leaf first): serve HTTPS instead of plain HTTP (with --tls-key).
    #[arg(long, value_name = "CERT.pem", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key (PKCS#8, PKCS#1 or SEC1) that goes with --tls-cert.
    #[arg(long, value_name = "KEY.pem", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

fn parse_storage_class(text: &str) -> Result<spinwise_catalog::Tier, String> {
    spinwise_s3::service::tier_of_known_class(text)
}

fn parse_restore_mode(text: &str) -> Result<RestoreMode, String> {
    text.parse()
        .map_err(|e: spinwise_s3::restore::BadRestoreMode| e.to_string())
}

fn store_error(error: StoreError) -> CliError {
    CliError::Usage(error.to_string())
}

/// The environment variable that sets which logs `serve` writes, as `target=level` directives
/// (tracing-subscriber's `Targets` syntax), e.g. `info,spinwise_store=debug`.
pub const LOG_VARIABLE: &str = "SPINWISE_LOG";

/// What `serve` logs when [`LOG_VARIABLE`] is unset: info and above, but nothing from s3s. s3s
/// logs every error answer at ERROR — a NoSuchKey, the 403 InvalidObjectState of a cold object
/// before its restore, an unsigned request — which are the client's business and would bury
/// the server's own errors; the S3 layer logs its own failures (`S3 request failed`), and the
/// metrics count answers by status. `SPINWISE_LOG=info,s3s=error` brings s3s's lines back.
pub const DEFAULT_LOG: &str = "info,s3s=off";

/// The log filter: [`LOG_VARIABLE`] if set, else [`DEFAULT_LOG`]; a directive that does not
/// parse is refused by name.
fn log_filter() -> CliResult<tracing_subscriber::filter::Targets> {
    let (text, from) = match std::env::var(LOG_VARIABLE) {
        Ok(text) => (text, LOG_VARIABLE),
        Err(_) => (DEFAULT_LOG.to_string(), "the default log filter"),
    };
    text.parse().map_err(|error| {
        CliError::Usage(format!(
            "{from} `{text}`: {error} (expected `level` or `target=level` directives separated \
             by commas, e.g. `info,s3s=error`)"
        ))
    })
}

pub fn run(args: &ServeArgs) -> CliResult<()> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(log_filter()?)
        .try_init();
    let settings = ServeSettings::resolve(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("starting the async runtime: {e}")))?;
    runtime.block_on(serve(&settings))
}

/// The rack TOML a setting names, with the name a store records for it.
fn rack_text(choice: Option<&RackChoice>) -> CliResult<(RackSource, String)> {
    match choice {
        Some(RackChoice::File(path)) => {
            let text = crate::source::read_rack_file(path)?;
            Ok((RackSource::File(path.clone()), text))
        }
        Some(RackChoice::Preset(name)) => preset_text(name),
        None => preset_text(DEFAULT_PRESET),
    }
}

fn preset_text(name: &str) -> CliResult<(RackSource, String)> {
    load_preset(name)?;
    let (_, text) = PRESETS
        .iter()
        .find(|(preset, _)| *preset == name)
        .expect("load_preset found it");
    Ok((RackSource::Preset(name.to_string()), text.to_string()))
}

/// Where a setting came from, for messages.
fn origin(settings: &ServeSettings) -> String {
    match &settings.config_file {
        Some(file) => format!("the flags or {}", file.display()),
        None => "the flags".to_string(),
    }
}

/// Refuses creation settings (rack, layout, time factor) that differ from those `existing` was
/// created with; the same values are accepted, so a configuration file can keep them. The
/// refusal says both ways out: serve the store as it is, or create another one.
fn check_fixed(settings: &ServeSettings, existing: &StoreConfig) -> CliResult<()> {
    let data = settings.data.display();
    let differs = |what: &str, setting: &str, leave_out: &str| {
        CliError::Usage(format!(
            "{data} already holds a store, and a store's rack, layout and time factor are fixed \
             when it is created: its {what}, and {setting} from {} differs. To serve that store, \
             leave out {leave_out}; to start a new store with {setting}, give another data \
             directory (e.g. --data {data}-2), or remove {data} if its objects are not needed.",
            origin(settings)
        ))
    };
    if settings.rack.is_some() && rack_text(settings.rack.as_ref())?.1 != existing.rack_toml {
        let what = match &existing.rack_source {
            RackSource::Preset(name) => format!("rack is the {name} preset"),
            RackSource::File(path) => format!("rack came from {}", path.display()),
        };
        return Err(differs(&what, "the rack", "--preset/--rack"));
    }
    if let Some(path) = &settings.layout
        && read_layout(path)? != existing.layout
    {
        let setting = format!("the layout {}", path.display());
        return Err(differs("layout was planned then", &setting, "--layout"));
    }
    if let Some(factor) = settings.time_factor
        && factor != existing.time_factor
    {
        let what = format!("time factor is {}", existing.time_factor);
        let setting = format!("time factor {factor}");
        return Err(differs(&what, &setting, "--time-factor"));
    }
    Ok(())
}

/// Opens the data directory's store, creating it first if it holds none.
async fn open_or_create(settings: &ServeSettings) -> CliResult<SqliteStore> {
    let data = &settings.data;
    if data.join(spinwise_store::config::STORE_FILE).exists() {
        let existing = spinwise_store::config::read(data).map_err(store_error)?;
        check_fixed(settings, &existing)?;
        return Store::open_sqlite(data).await.map_err(store_error);
    }
    let (source, rack_toml) = rack_text(settings.rack.as_ref())?;
    let rack = parse_rack(&format!("{source:?}"), &rack_toml)?;
    let layout = layout_or_plan(&rack, settings.layout.as_deref())?;
    let mut config = StoreConfig::new(source, rack_toml, layout);
    config.time_factor = settings.time_factor.unwrap_or(1.0);
    let store = Store::init_sqlite(data, config)
        .await
        .map_err(store_error)?;
    tracing::info!(
        data = %data.display(),
        rack = store.rack().name,
        disks = store.rack().disk_count(),
        groups = store.layout().groups.len(),
        "created a store"
    );
    Ok(store)
}

/// Applies `--idle-spin-down-s` (or the file's) for this run; logs the time in effect.
async fn set_idle_spin_down(settings: &ServeSettings, store: &SqliteStore) -> CliResult<()> {
    let config = store.config();
    let idle_s = match settings.idle_spin_down_s {
        Some(seconds) => (seconds > 0.0).then_some(seconds),
        None => config.idle_spin_down_s,
    };
    let after_us = spinwise_store::config::idle_spin_down_us(idle_s);
    if settings.idle_spin_down_s.is_some() {
        let driver = &store.rack_io().driver;
        driver
            .set_idle_spin_down_us(after_us)
            .await
            .map_err(|e| CliError::Usage(format!("setting the idle spin-down time: {e}")))?;
    }
    match after_us {
        Some(us) => tracing::info!(
            idle_spin_down_s = us as f64 / 1e6,
            "idle groups spin down after this many seconds without work"
        ),
        None => tracing::info!("idle groups are never spun down"),
    }
    Ok(())
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
                    Ok(GroupActivity::SpinningUp { group, work, .. }) => {
                        tracing::info!(group, jobs = work.total_jobs(), "group spinning up for {work}");
                    }
                    Ok(GroupActivity::Up { group, took_us, work, .. }) => {
                        tracing::info!(group, jobs = work.total_jobs(), took_s = took_us as f64 / 1e6, "group spun up for {work}");
                    }
                    Ok(GroupActivity::GoingDown { group, cause, .. }) => {
                        tracing::info!(group, reason = cause.name(), "group spinning down: {cause}");
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

fn credentials(settings: &ServeSettings) -> CliResult<Credentials> {
    let usage = |e: spinwise_s3::CredentialsError| CliError::Usage(e.to_string());
    let data = &settings.data;
    if let Some((access_key, secret_key)) = &settings.keys {
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

/// The TLS configuration from the certificate and key (flags or file; each source gives both),
/// read before anything is created so a bad file leaves no new data directory behind.
fn tls_config(settings: &ServeSettings) -> CliResult<Option<TlsConfig>> {
    match &settings.tls {
        Some((certificate, key)) => TlsConfig::from_pem_files(certificate, key)
            .map(Some)
            .map_err(|e| CliError::Usage(e.to_string())),
        None => Ok(None),
    }
}

async fn serve(settings: &ServeSettings) -> CliResult<()> {
    let tls = tls_config(settings)?;
    // Held until serve returns: one process drives the disks (crate::ownership).
    let claimed = crate::ownership::own_for_serve(&settings.data).await?;
    let store = Arc::new(open_or_create(settings).await?);
    let _owner = crate::ownership::own_new(&settings.data, claimed).await?;
    set_idle_spin_down(settings, &store).await?;
    for problem in &store.recovery().problems {
        tracing::warn!(problem, "recovery");
    }
    let credentials = credentials(settings)?;
    let meta_path = settings.data.join(META_FILE);
    let meta = MetaDb::open(&meta_path)
        .await
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let s3_settings = S3Settings {
        max_put_bytes: settings.max_put_bytes,
        default_restore_mode: settings.restore_mode,
        default_tier: settings.default_tier,
        restore_capacity_bytes: settings.restore_capacity_bytes,
        restore_bulk_wait_s: settings.restore_bulk_wait_s,
        restore_max_ongoing: settings.restore_max_ongoing,
        restore_expedited_max_ongoing: settings.restore_expedited_max_ongoing,
        restore_expedited_per_hour: settings.restore_expedited_per_hour,
        etag_mode: settings.etag,
        abandon_uploads_after_s: settings.abandon_uploads_after_days.saturating_mul(86_400),
        ..S3Settings::default()
    };
    let s3 = SpinwiseS3::new(Arc::clone(&store), meta.clone(), s3_settings)
        .await
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let upkeep = store.start_upkeep().await.map_err(store_error)?;
    // Other `spinwise store` commands are served by this process while it owns the disks.
    let admin = crate::admin::AdminEndpoint::start(&settings.data, Arc::clone(&store))?;
    let activity = log_activity(&store);
    let listener = bind(settings.listen).await?;
    let metrics = start_metrics(settings, &store, s3.restorer()).await?;
    let service = build_service_with(s3, &credentials, settings.domains.clone());
    let observed = metrics.as_ref().map(|(metrics, _)| Arc::clone(metrics));
    let server =
        RunningServer::start_observed(listener, service, tls, observed).map_err(|source| {
            CliError::Io {
                path: settings.listen.to_string(),
                source,
            }
        })?;
    let stop = shutdown_signal();
    outln!(
        "serving S3 on {}://{} (data {}); Ctrl-C stops",
        server.scheme(),
        server.local_addr(),
        settings.data.display()
    );
    stop.await;
    tracing::info!("stopping: finishing requests in flight");
    server.stop().await;
    admin.stop();
    let report = upkeep.stop().await;
    tracing::info!(
        scrub_spin_ups = report.scrub_spin_ups,
        piggyback_batches = report.piggyback_batches,
        "upkeep stopped"
    );
    activity.abort();
    for task in metrics.into_iter().flat_map(|(_, tasks)| tasks) {
        task.abort();
    }
    meta.close().await;
    close_store(store).await;
    tracing::info!("stopped");
    Ok(())
}

async fn bind(addr: SocketAddr) -> CliResult<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| CliError::Io {
            path: addr.to_string(),
            source,
        })
}

/// With `--metrics-listen`: the metrics, counting from now, served on their own listener (its
/// address printed), and the tasks to stop at shutdown.
async fn start_metrics(
    settings: &ServeSettings,
    store: &Arc<SqliteStore>,
    restorer: &Arc<Restorer>,
) -> CliResult<Option<(Arc<S3Metrics>, [tokio::task::JoinHandle<()>; 2])>> {
    let Some(addr) = settings.metrics_listen else {
        return Ok(None);
    };
    let listener = bind(addr).await?;
    let local = listener.local_addr().map_err(|source| CliError::Io {
        path: addr.to_string(),
        source,
    })?;
    let metrics = S3Metrics::new(Arc::clone(store)).with_restores(Arc::clone(restorer));
    let metrics = Arc::new(metrics);
    let tasks = [
        metrics.watch(),
        serve_metrics(listener, Arc::clone(&metrics)),
    ];
    outln!("metrics on http://{local}/metrics");
    Ok(Some((metrics, tasks)))
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
