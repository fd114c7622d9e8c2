//! Prometheus metrics of a running server (`spinwise serve --metrics-listen ADDR`): what an
//! operator of a power-budgeted store watches — which groups are spinning, how often each spins
//! up, how much work waits for each, how close the rack runs to its disk budget, how many budget
//! changes the audit refused — and the S3 answers by status. Served as OpenMetrics text at
//! `GET /metrics` on a listener of its own (no authentication: bind it where only the monitoring
//! system reaches).
//!
//! Invariants:
//! - gauges are read from the driver's own snapshot at each scrape, so they are never stale;
//!   the counters of the driver (jobs served, budget refusals) and of the store (migrated reads,
//!   and those that read a parity column) are carried over by difference, so they only grow;
//! - spin-ups and spin-downs are counted from the driver's activity broadcast by a task of
//!   [`S3Metrics::watch`]; a broadcast that lagged loses events, which is counted too
//!   (`spinwise_activity_events_missed_total`) rather than hidden; spin-downs are also counted
//!   by cause as they start (`spinwise_group_spin_downs_by_cause_total{group, cause}`, cause
//!   `idle`, `make_room` or `shutdown`), every group and cause from 0;
//! - a scrape never blocks S3 requests: it takes the driver's snapshot like any status call;
//! - with [`S3Metrics::with_restores`], restores by state and tier are counted from the
//!   restores table at each scrape (every pair has a series, 0 when none), and the Bulk
//!   restores waiting for a spin-up from the restorer's live count;
//! - the tail cache's counters (hits by level, misses, bytes served, insertions, evictions by
//!   level, damaged flash files) are carried over from the store's totals by difference like the
//!   driver's, and its size (bytes and entries by level) is a gauge read at each scrape.

use crate::restore::Restorer;
use crate::tier::RestoreTier;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use spinwise_store::driver::{GroupActivity, GroupPhase, SpinDownCause};
use spinwise_store::staging::ChainState;
use spinwise_store::{SqliteStore, TailCacheStats};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::net::TcpListener;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

/// The OpenMetrics text format's content type.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabel {
    group: u32,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    group: u32,
    phase: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabels {
    group: u32,
    cause: &'static str,
}

/// Every cause a spin-down can have, each with a series per group.
const SPIN_DOWN_CAUSES: [SpinDownCause; 3] = [
    SpinDownCause::Idle,
    SpinDownCause::MakeRoom,
    SpinDownCause::Shutdown,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LevelLabel {
    level: &'static str,
}

/// The tail cache's levels, each with a series from the start.
const CACHE_LEVELS: [&str; 2] = ["ram", "flash"];

/// The tail cache's metrics (see [`spinwise_store::tail_cache`]).
#[derive(Default)]
struct TailCacheMetrics {
    hits: Family<LevelLabel, Counter>,
    misses: Counter,
    served_bytes: Counter,
    insertions: Counter,
    evictions: Family<LevelLabel, Counter>,
    flash_damaged: Counter,
    used_bytes: Family<LevelLabel, Gauge>,
    entries: Family<LevelLabel, Gauge>,
    /// The store's totals at the last scrape (the counters grow by the difference).
    last: std::sync::Mutex<TailCacheStats>,
}

impl TailCacheMetrics {
    fn register(&self, registry: &mut Registry) {
        for level in CACHE_LEVELS {
            self.hits.get_or_create(&LevelLabel { level }).inc_by(0);
            self.evictions
                .get_or_create(&LevelLabel { level })
                .inc_by(0);
            self.used_bytes.get_or_create(&LevelLabel { level }).set(0);
            self.entries.get_or_create(&LevelLabel { level }).set(0);
        }
        registry.register(
            "tail_cache_hits",
            "GETs of staged objects served from the tail cache, by level (ram, flash)",
            self.hits.clone(),
        );
        registry.register(
            "tail_cache_misses",
            "GETs of staged objects the tail cache could not serve (read from their staging segment)",
            self.misses.clone(),
        );
        registry.register(
            "tail_cache_served_bytes",
            "Bytes GETs were served from the tail cache",
            self.served_bytes.clone(),
        );
        registry.register(
            "tail_cache_insertions",
            "Objects put into the tail cache's RAM (by PUTs, by GETs that missed, and flash hits copied back)",
            self.insertions.clone(),
        );
        registry.register(
            "tail_cache_evictions",
            "Entries the tail cache evicted to stay within its bound, by level (RAM's go to flash when there is a flash directory)",
            self.evictions.clone(),
        );
        registry.register(
            "tail_cache_flash_damaged",
            "Flash entry files found missing or failing their checks (each a miss)",
            self.flash_damaged.clone(),
        );
        registry.register(
            "tail_cache_used_bytes",
            "Bytes the tail cache holds now, by level (RAM counts a fixed overhead per entry)",
            self.used_bytes.clone(),
        );
        registry.register(
            "tail_cache_entries",
            "Objects the tail cache holds now, by level",
            self.entries.clone(),
        );
    }

    /// Moves the counters on to `now` and sets the gauges.
    fn read(&self, now: TailCacheStats) {
        let before = std::mem::replace(
            &mut *self.last.lock().expect("tail cache metrics lock"),
            now,
        );
        let grow = |counter: &Counter, now: u64, before: u64| {
            counter.inc_by(now.saturating_sub(before));
        };
        let level = |level| LevelLabel { level };
        grow(
            &self.hits.get_or_create(&level("ram")),
            now.ram_hits,
            before.ram_hits,
        );
        grow(
            &self.hits.get_or_create(&level("flash")),
            now.flash_hits,
            before.flash_hits,
        );
        grow(&self.misses, now.misses, before.misses);
        grow(&self.served_bytes, now.served_bytes, before.served_bytes);
        grow(&self.insertions, now.insertions, before.insertions);
        grow(
            &self.evictions.get_or_create(&level("ram")),
            now.ram_evictions,
            before.ram_evictions,
        );
        grow(
            &self.evictions.get_or_create(&level("flash")),
            now.flash_evictions,
            before.flash_evictions,
        );
        grow(&self.flash_damaged, now.flash_damaged, before.flash_damaged);
        let gauge = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        self.used_bytes
            .get_or_create(&level("ram"))
            .set(gauge(now.ram_used_bytes));
        self.used_bytes
            .get_or_create(&level("flash"))
            .set(gauge(now.flash_used_bytes));
        self.entries
            .get_or_create(&level("ram"))
            .set(gauge(now.ram_entries));
        self.entries
            .get_or_create(&level("flash"))
            .set(gauge(now.flash_entries));
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeviceLabel {
    device: u64,
}

/// The staging log's devices and the warm tier's collector (see [`spinwise_store::WarmCollectReport`]
/// and docs/store.md, "The warm tier's collector").
#[derive(Default)]
struct WarmMetrics {
    records_moved: Counter,
    records_dead: Counter,
    segments_freed: Counter,
    bytes_reclaimed: Counter,
    yields: Counter,
    device_used_bytes: Family<DeviceLabel, Gauge>,
    tail_device: Gauge,
    /// The store's totals at the last scrape (the counters grow by the difference).
    last: std::sync::Mutex<spinwise_store::WarmCollectReport>,
}

impl WarmMetrics {
    fn register(&self, registry: &mut Registry) {
        let counters = [
            (
                "warm_records_moved",
                "Live warm records the warm tier's collector moved out of half-dead staging segments",
                &self.records_moved,
            ),
            (
                "warm_records_dead",
                "Warm records deleted or overwritten while the collector was moving them (their copies are dead)",
                &self.records_dead,
            ),
            (
                "warm_segments_freed",
                "Staging segments freed after the warm tier's collections",
                &self.segments_freed,
            ),
            (
                "warm_bytes_reclaimed",
                "Staging bytes freed after the warm tier's collections",
                &self.bytes_reclaimed,
            ),
            (
                "warm_collection_yields",
                "Times a record's move waited for PUTs and GETs in flight (semi-preemptive collection)",
                &self.yields,
            ),
        ];
        for (name, help, counter) in counters {
            registry.register(name, help, counter.clone());
        }
        registry.register(
            "staging_device_used_bytes",
            "Bytes in each staging device's sealed and idle segments (device 0 is DATA/staging, then [staging] chain)",
            self.device_used_bytes.clone(),
        );
        registry.register(
            "staging_tail_device",
            "The staging device PUTs append to now",
            self.tail_device.clone(),
        );
    }

    /// Moves the counters on to `now` and sets the gauges from `chain`.
    fn read(&self, now: spinwise_store::WarmCollectReport, chain: &ChainState) {
        let mut last = self.last.lock().expect("warm metrics lock");
        let grow = |counter: &Counter, now: u64, before: u64| {
            counter.inc_by(now.saturating_sub(before));
        };
        grow(&self.records_moved, now.records_moved, last.records_moved);
        grow(&self.records_dead, now.records_dead, last.records_dead);
        grow(
            &self.segments_freed,
            now.segments_freed,
            last.segments_freed,
        );
        grow(
            &self.bytes_reclaimed,
            now.bytes_reclaimed,
            last.bytes_reclaimed,
        );
        grow(&self.yields, now.yields, last.yields);
        *last = now;
        let gauge = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        for (device, used_bytes) in chain.used_bytes.iter().enumerate() {
            self.device_used_bytes
                .get_or_create(&DeviceLabel {
                    device: device as u64,
                })
                .set(gauge(*used_bytes));
        }
        self.tail_device.set(gauge(chain.tail as u64));
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RestoreLabels {
    state: &'static str,
    tier: &'static str,
}

/// The restores' states and tiers, every pair of which has a series.
const RESTORE_STATES: [&str; 3] = ["ongoing", "done", "failed"];
const RESTORE_TIERS: [RestoreTier; 3] = [
    RestoreTier::Expedited,
    RestoreTier::Standard,
    RestoreTier::Bulk,
];

/// The restore gauges, read from the [`Restorer`] at each scrape.
struct RestoreGauges {
    restorer: Arc<Restorer>,
    restores: Family<RestoreLabels, Gauge>,
    bytes: Family<RestoreLabels, Gauge>,
    waiting: Gauge,
}

/// The server's metrics and the store they describe.
pub struct S3Metrics {
    store: Arc<SqliteStore>,
    registry: Registry,
    responses: Family<StatusLabel, Counter>,
    spin_ups: Family<GroupLabel, Counter>,
    spin_downs: Family<GroupLabel, Counter>,
    spin_downs_by_cause: Family<CauseLabels, Counter>,
    idle_spin_down_seconds: Gauge<f64, std::sync::atomic::AtomicU64>,
    missed_events: Counter,
    phase: Family<PhaseLabels, Gauge>,
    queued_jobs: Family<GroupLabel, Gauge>,
    disks_active: Gauge,
    disks_spinning_up: Gauge,
    disks_active_peak: Gauge,
    failed_disks: Gauge,
    jobs_served: Counter,
    budget_refusals: Counter,
    migrated_reads: Counter,
    migrated_reads_parity: Counter,
    /// The driver's and the store's totals at the last scrape (the counters above grow by the
    /// difference).
    last_jobs_served: AtomicU64,
    last_refusals: AtomicU64,
    last_migrated_reads: AtomicU64,
    last_migrated_reads_parity: AtomicU64,
    tail_cache: TailCacheMetrics,
    warm: WarmMetrics,
    restores: Option<RestoreGauges>,
}

impl S3Metrics {
    /// The metrics of a server over `store`, all at zero.
    pub fn new(store: Arc<SqliteStore>) -> S3Metrics {
        let metrics = S3Metrics {
            store,
            registry: Registry::with_prefix("spinwise"),
            responses: Family::default(),
            spin_ups: Family::default(),
            spin_downs: Family::default(),
            spin_downs_by_cause: Family::default(),
            idle_spin_down_seconds: Gauge::default(),
            missed_events: Counter::default(),
            phase: Family::default(),
            queued_jobs: Family::default(),
            disks_active: Gauge::default(),
            disks_spinning_up: Gauge::default(),
            disks_active_peak: Gauge::default(),
            failed_disks: Gauge::default(),
            jobs_served: Counter::default(),
            budget_refusals: Counter::default(),
            migrated_reads: Counter::default(),
            migrated_reads_parity: Counter::default(),
            last_jobs_served: AtomicU64::new(0),
            last_refusals: AtomicU64::new(0),
            last_migrated_reads: AtomicU64::new(0),
            last_migrated_reads_parity: AtomicU64::new(0),
            tail_cache: TailCacheMetrics::default(),
            warm: WarmMetrics::default(),
            restores: None,
        };
        // Every group's series exist from the start (at 0), so a rate over them is defined
        // before a group first spins and a dashboard lists the quiet groups too.
        for group in 0..metrics.store.layout().groups.len() as u32 {
            metrics
                .spin_ups
                .get_or_create(&GroupLabel { group })
                .inc_by(0);
            metrics
                .spin_downs
                .get_or_create(&GroupLabel { group })
                .inc_by(0);
            for cause in SPIN_DOWN_CAUSES {
                let labels = CauseLabels {
                    group,
                    cause: cause.name(),
                };
                metrics.spin_downs_by_cause.get_or_create(&labels).inc_by(0);
            }
        }
        metrics.registered()
    }

    /// Registers every metric (clones share their values) under the `spinwise_` prefix.
    fn registered(mut self) -> S3Metrics {
        let registry = &mut self.registry;
        registry.register(
            "s3_responses",
            "S3 answers sent, by HTTP status",
            self.responses.clone(),
        );
        registry.register(
            "group_spin_ups",
            "Spin-ups of each disk group",
            self.spin_ups.clone(),
        );
        registry.register(
            "group_spin_downs",
            "Spin-downs of each disk group (finished)",
            self.spin_downs.clone(),
        );
        registry.register(
            "group_spin_downs_by_cause",
            "Spin-downs of each disk group as they start, by cause: idle (no work for the idle spin-down time), make_room (another group needed its budget), shutdown",
            self.spin_downs_by_cause.clone(),
        );
        registry.register(
            "idle_spin_down_seconds",
            "How long a group may stay idle before it is spun down, in the driver's seconds (-1: never)",
            self.idle_spin_down_seconds.clone(),
        );
        registry.register(
            "activity_events_missed",
            "Power-change events the spin counters missed (the broadcast lagged)",
            self.missed_events.clone(),
        );
        registry.register(
            "group_phase",
            "1 for each group's current phase (resting, spinning_up, active, spinning_down)",
            self.phase.clone(),
        );
        registry.register(
            "group_queued_jobs",
            "Jobs waiting for each group (reads, migration, rebuild, scrub)",
            self.queued_jobs.clone(),
        );
        registry.register(
            "disks_active",
            "Disks the budget audit books active now",
            self.disks_active.clone(),
        );
        registry.register(
            "disks_spinning_up",
            "Disks the budget audit books spinning up now",
            self.disks_spinning_up.clone(),
        );
        registry.register(
            "disks_active_peak",
            "Most disks booked active at once since the server started",
            self.disks_active_peak.clone(),
        );
        registry.register(
            "failed_disks",
            "Disks marked failed",
            self.failed_disks.clone(),
        );
        registry.register(
            "jobs_served",
            "Jobs the driver finished",
            self.jobs_served.clone(),
        );
        registry.register(
            "budget_refusals",
            "Power changes the budget audit refused (each also logged)",
            self.budget_refusals.clone(),
        );
        registry.register(
            "migrated_reads",
            "Reads of migrated objects started",
            self.migrated_reads.clone(),
        );
        registry.register(
            "migrated_reads_parity",
            "Reads of migrated objects that took a parity column in place of a busier or missing data disk, decoding their stripes",
            self.migrated_reads_parity.clone(),
        );
        self.tail_cache.register(registry);
        self.warm.register(registry);
        self
    }

    /// Adds the restores' gauges: restores and their bytes by state and tier, and the Bulk
    /// restores waiting for a spin-up now.
    pub fn with_restores(mut self, restorer: Arc<Restorer>) -> S3Metrics {
        let gauges = RestoreGauges {
            restorer,
            restores: Family::default(),
            bytes: Family::default(),
            waiting: Gauge::default(),
        };
        let registry = &mut self.registry;
        registry.register(
            "restores",
            "Restores by state and tier (done includes copies expired but not yet swept)",
            gauges.restores.clone(),
        );
        registry.register(
            "restore_bytes",
            "Bytes of the objects restored or being restored, by state and tier",
            gauges.bytes.clone(),
        );
        registry.register(
            "restores_waiting_for_spin_up",
            "Bulk restores waiting for their group to spin up for other work",
            gauges.waiting.clone(),
        );
        self.restores = Some(gauges);
        self
    }

    /// Counts one S3 answer.
    pub fn record_response(&self, status: u16) {
        self.responses.get_or_create(&StatusLabel { status }).inc();
    }

    /// Counts spin-ups and spin-downs from the driver's activity broadcast until the driver
    /// closes it.
    pub fn watch(self: &Arc<Self>) -> JoinHandle<()> {
        let metrics = Arc::clone(self);
        let mut activity = self.store.rack_io().driver.subscribe_activity();
        tokio::spawn(async move {
            loop {
                match activity.recv().await {
                    Ok(GroupActivity::Up { group, .. }) => {
                        metrics.spin_ups.get_or_create(&GroupLabel { group }).inc();
                    }
                    Ok(GroupActivity::Down { group, .. }) => {
                        metrics
                            .spin_downs
                            .get_or_create(&GroupLabel { group })
                            .inc();
                    }
                    Ok(GroupActivity::GoingDown { group, cause, .. }) => {
                        let labels = CauseLabels {
                            group,
                            cause: cause.name(),
                        };
                        metrics.spin_downs_by_cause.get_or_create(&labels).inc();
                    }
                    Ok(GroupActivity::SpinningUp { .. }) => {}
                    Err(RecvError::Lagged(missed)) => {
                        metrics.missed_events.inc_by(missed);
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        })
    }

    /// Reads the driver's snapshot into the gauges and counters, then encodes everything.
    pub async fn scrape(&self) -> Result<String, String> {
        let state = self
            .store
            .rack_io()
            .driver
            .state()
            .await
            .map_err(|error| format!("reading the driver's state: {error}"))?;
        for group in &state.groups {
            for phase in [
                GroupPhase::Resting,
                GroupPhase::SpinningUp,
                GroupPhase::Active,
                GroupPhase::SpinningDown,
            ] {
                let labels = PhaseLabels {
                    group: group.group,
                    phase: phase_name(phase),
                };
                self.phase
                    .get_or_create(&labels)
                    .set(i64::from(group.phase == phase));
            }
            self.queued_jobs
                .get_or_create(&GroupLabel { group: group.group })
                .set(group.queued_jobs as i64);
        }
        self.disks_active.set(i64::from(state.audit.active_now));
        self.disks_spinning_up
            .set(i64::from(state.audit.spinning_up_now));
        self.disks_active_peak
            .set(i64::from(state.audit.max_active));
        self.failed_disks.set(state.failed_disks.len() as i64);
        self.idle_spin_down_seconds
            .set(state.idle_spin_down_us.map_or(-1.0, |us| us as f64 / 1e6));
        carry(&self.jobs_served, &self.last_jobs_served, state.jobs_served);
        carry(
            &self.budget_refusals,
            &self.last_refusals,
            state.audit.refusals,
        );
        let reads = self.store.rack_io().disk_reads.totals();
        carry(&self.migrated_reads, &self.last_migrated_reads, reads.reads);
        carry(
            &self.migrated_reads_parity,
            &self.last_migrated_reads_parity,
            reads.reads_with_parity,
        );
        self.tail_cache.read(self.store.tail_cache_stats());
        self.warm.read(
            self.store.warm_collection_totals(),
            &self.store.staging().chain_state(),
        );
        if let Some(restores) = &self.restores {
            restores.read().await?;
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .map_err(|error| format!("encoding the metrics: {error}"))?;
        Ok(text)
    }
}

impl RestoreGauges {
    /// Sets every (state, tier) series, those without rows to 0.
    async fn read(&self) -> Result<(), String> {
        let census = self
            .restorer
            .census()
            .await
            .map_err(|error| format!("reading the restores: {error}"))?;
        for state in RESTORE_STATES {
            for tier in RESTORE_TIERS {
                let found = census.iter().find(|c| c.state == state && c.tier == tier);
                let labels = RestoreLabels {
                    state,
                    tier: tier.as_str(),
                };
                let (restores, bytes) = found.map_or((0, 0), |c| (c.restores, c.bytes));
                self.restores
                    .get_or_create(&labels)
                    .set(i64::try_from(restores).unwrap_or(i64::MAX));
                self.bytes
                    .get_or_create(&labels)
                    .set(i64::try_from(bytes).unwrap_or(i64::MAX));
            }
        }
        let waiting = self.restorer.waiting_for_spin_up();
        self.waiting.set(i64::try_from(waiting).unwrap_or(i64::MAX));
        Ok(())
    }
}

/// Grows `counter` by how far `total` moved since the last scrape.
fn carry(counter: &Counter, last: &AtomicU64, total: u64) {
    let before = last.swap(total, Ordering::Relaxed);
    counter.inc_by(total.saturating_sub(before));
}

fn phase_name(phase: GroupPhase) -> &'static str {
    match phase {
        GroupPhase::Resting => "resting",
        GroupPhase::SpinningUp => "spinning_up",
        GroupPhase::Active => "active",
        GroupPhase::SpinningDown => "spinning_down",
    }
}

/// Serves `GET /metrics` on `listener` until the task is aborted; anything else is 404.
pub fn serve_metrics(listener: TcpListener, metrics: Arc<S3Metrics>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            };
            // As the S3 listener: no small answer waits on the scraper's delayed ACK.
            let _ = socket.set_nodelay(true);
            let metrics = Arc::clone(&metrics);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let metrics = Arc::clone(&metrics);
                    async move { Ok::<_, std::convert::Infallible>(answer(&metrics, &request).await) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(socket), service);
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "a metrics connection ended with an error");
                }
            });
        }
    })
}

async fn answer<B>(metrics: &S3Metrics, request: &http::Request<B>) -> http::Response<Full<Bytes>> {
    let respond = |status: http::StatusCode, content_type: &str, body: String| {
        http::Response::builder()
            .status(status)
            .header(http::header::CONTENT_TYPE, content_type)
            .body(Full::new(Bytes::from(body)))
            .expect("a valid response")
    };
    if request.method() != http::Method::GET || request.uri().path() != "/metrics" {
        return respond(
            http::StatusCode::NOT_FOUND,
            "text/plain",
            "only GET /metrics is served here\n".into(),
        );
    }
    match metrics.scrape().await {
        Ok(text) => respond(http::StatusCode::OK, CONTENT_TYPE, text),
        Err(error) => respond(
            http::StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            format!("{error}\n"),
        ),
    }
}
