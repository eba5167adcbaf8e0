//! Prometheus metrics: request counts and latencies by route and status, pushes by outcome,
//! refusals by limit, the push committer, the durable queues, the database pools and this
//! process, served as text at `/metrics`. Each app owns its registry (no process-wide
//! globals), so in-process tests that run several apps do not see each other's numbers.
//!
//! Handlers do not reach for the registry: a response that should be counted carries a marker
//! in its extensions ([`PushCounted`], [`LimitReached`]) and [`track_requests`] counts it.

mod push_groups;

use push_groups::PushGroups;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// The database is read for `/metrics` at most this often per replica: a scrape is otherwise
/// free for anyone who can reach it to repeat.
const DB_SAMPLE_EVERY_MS: i64 = 5_000;
/// A pool that cannot lend a connection within this long is reported as waiting this long.
const ACQUIRE_PROBE_LIMIT: Duration = Duration::from_secs(2);

/// On a push's response: how it ended, for `tidemark_pushes_total`.
#[derive(Clone, Copy, Debug)]
pub struct PushCounted {
    /// `created`, `replayed`, `refused` (the caller's to fix or retry) or `failed` (ours).
    pub outcome: &'static str,
    /// The error code of a push that was not stored; empty otherwise.
    pub code: &'static str,
}

/// On a keyless CI exchange's response: `issued`, or `refused` with the claim that failed
/// (`unavailable` when the issuer's keys could not be had), for `tidemark_oidc_exchanges_total`.
#[derive(Clone, Copy, Debug)]
pub struct ExchangeCounted {
    pub outcome: &'static str,
    pub claim: &'static str,
}

/// On a `429`: which limit refused it (`writes`, `resend`, `signin`, `oidc`).
#[derive(Clone, Copy, Debug)]
pub struct LimitReached(pub &'static str);

/// On a `503 database_unavailable` or `507 storage_full`: the database's fault.
#[derive(Clone, Copy, Debug)]
pub struct DatabaseFault(pub tidemark_store::Fault);

/// How long the database may take to answer the scrape's ping before it counts as down.
const DB_PING_LIMIT: Duration = Duration::from_secs(1);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerLabels {
    worker: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PushLabels {
    outcome: &'static str,
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExchangeLabels {
    outcome: &'static str,
    claim: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FaultLabels {
    fault: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolNameLabels {
    pool: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    pool: &'static str,
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    queue: &'static str,
}

type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// Figures read at scrape time (the database's queues, pools, the committer, this process).
#[derive(Default)]
struct Sampled {
    /// When the database may next be read (Unix milliseconds).
    next_db_sample: AtomicI64,
    pool_acquire_wait: Family<PoolNameLabels, FloatGauge>,
    push_queue: Gauge,
    push_body_bytes: Gauge,
    push_groups: Arc<PushGroups>,
    outbox_pending: Family<QueueLabels, Gauge>,
    outbox_oldest_age: Family<QueueLabels, FloatGauge>,
    outbox_failing: Family<QueueLabels, Gauge>,
    sessions_active: Gauge,
    pool_connections: Family<PoolLabels, Gauge>,
    resident_memory: Gauge,
    cpu_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    open_fds: Gauge,
    start_time: FloatGauge,
    database_up: Gauge,
    disk_free: Gauge,
    disk_size: Gauge,
    database_size: Gauge,
    scans_as_rows: Gauge,
    scans_posture_pending: Gauge,
    log_lines_dropped: Counter,
}

type HistogramFamily = Family<RequestLabels, Histogram, fn() -> Histogram>;

pub struct Metrics {
    registry: Registry,
    /// The conventional `process_*` names, without the `tidemark_` prefix.
    process: Registry,
    sampled: Sampled,
    requests: Family<RequestLabels, Counter>,
    latency: HistogramFamily,
    webhook_deliveries: Family<OutcomeLabels, Counter>,
    worker_passes: Family<WorkerLabels, Counter>,
    worker_seconds: WorkerSeconds,
    pushes: Family<PushLabels, Counter>,
    limited: Family<LimitLabels, Counter>,
    database_faults: Family<FaultLabels, Counter>,
    oidc_exchanges: Family<ExchangeLabels, Counter>,
    scim_requests: Family<ScimLabels, Counter>,
    answered_early: Family<EarlyLabels, Counter>,
    panics: Counter,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScimLabels {
    resource: &'static str,
    outcome: &'static str,
}

/// Put on a `/scim/v2` answer: counted as `tidemark_scim_requests{resource, outcome}`.
#[derive(Clone, Copy, Debug)]
pub struct ScimCounted {
    pub resource: &'static str,
    pub outcome: &'static str,
}

/// Every outcome a SCIM answer is counted under.
pub const SCIM_OUTCOMES: &[&str] = &[
    "ok",
    "invalid",
    "unauthorized",
    "not_found",
    "conflict",
    "limited",
    "unavailable",
];

fn fault_label(fault: tidemark_store::Fault) -> &'static str {
    match fault {
        tidemark_store::Fault::Unavailable => "unavailable",
        tidemark_store::Fault::StorageFull => "storage_full",
    }
}

fn latency_histogram() -> Histogram {
    // 1 ms to ~8 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 14))
}

impl Sampled {
    /// Registers the sampled gauges; the process's own go in the registry it returns.
    fn register(&self, registry: &mut Registry) -> Registry {
        registry.register(
            "outbox_pending",
            "Messages waiting in a durable outbox (mail, webhook), all replicas together",
            self.outbox_pending.clone(),
        );
        registry.register(
            "outbox_oldest_age_seconds",
            "Age of the oldest message waiting in an outbox (0 when empty)",
            self.outbox_oldest_age.clone(),
        );
        registry.register(
            "outbox_failing",
            "Waiting messages whose last attempt failed",
            self.outbox_failing.clone(),
        );
        registry.register(
            "sessions_active",
            "Dashboard sessions not yet expired, all replicas together",
            self.sessions_active.clone(),
        );
        registry.register(
            "db_pool_connections",
            "This replica's database connections by pool and state (in_use, idle, max)",
            self.pool_connections.clone(),
        );
        registry.register(
            "db_pool_acquire_wait_seconds",
            "How long the last sample waited for a connection from each pool (requests queue \
             behind the same wait); sampled at most every 5 s",
            self.pool_acquire_wait.clone(),
        );
        registry.register(
            "push_queue_depth",
            "Pushes handed to the SQLite committer and not yet answered (0 on PostgreSQL)",
            self.push_queue.clone(),
        );
        registry.register(
            "push_body_bytes",
            "Push body bytes this replica holds now, against TIDEMARK_PUSH_BUDGET_MIB",
            self.push_body_bytes.clone(),
        );
        registry.register_collector(Box::new(self.push_groups.clone()));
        registry.register(
            "database_up",
            "1 when this replica's last sample reached the database within 1 s, 0 when it did \
             not; sampled at most every 5 s",
            self.database_up.clone(),
        );
        registry.register(
            "data_disk_free_bytes",
            "Bytes free (to this process) on the file system of TIDEMARK_DATA_DIR (the SQLite \
             file's, by default)",
            self.disk_free.clone(),
        );
        registry.register(
            "data_disk_size_bytes",
            "Size in bytes of the file system of TIDEMARK_DATA_DIR",
            self.disk_size.clone(),
        );
        registry.register(
            "database_size_bytes",
            "Bytes the database takes (SQLite: its pages; PostgreSQL: pg_database_size); \
             sampled at most every 5 s",
            self.database_size.clone(),
        );
        registry.register(
            "scans_stored_as_rows",
            "Scans still stored one row per finding, which housekeeping moves to spans",
            self.scans_as_rows.clone(),
        );
        registry.register(
            "scans_posture_pending",
            "Scans stored before compliance posture was kept, whose posture housekeeping has \
             yet to judge",
            self.scans_posture_pending.clone(),
        );
        registry.register(
            "log_lines_dropped",
            "Log lines that could not be written (the log reader went away, or its disk is full)",
            self.log_lines_dropped.clone(),
        );
        let mut process = Registry::default();
        process.register(
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            self.resident_memory.clone(),
        );
        process.register(
            "process_cpu_seconds",
            "User and system CPU time spent, in seconds",
            self.cpu_seconds.clone(),
        );
        process.register(
            "process_open_fds",
            "Open file descriptors",
            self.open_fds.clone(),
        );
        process.register(
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch, in seconds",
            self.start_time.clone(),
        );
        process
    }
}

type WorkerSeconds = Family<WorkerLabels, Counter<f64, std::sync::atomic::AtomicU64>>;

/// The runner's counts of background passes (`workers::runner`).
fn register_workers(registry: &mut Registry) -> (Family<WorkerLabels, Counter>, WorkerSeconds) {
    let passes = Family::<WorkerLabels, Counter>::default();
    registry.register(
        "worker_passes",
        "Background passes, by worker and outcome (worked, idle, skipped, failed)",
        passes.clone(),
    );
    let seconds = WorkerSeconds::default();
    registry.register(
        "worker_pass_seconds",
        "Time spent in background passes, by worker and outcome",
        seconds.clone(),
    );
    (passes, seconds)
}

impl Metrics {
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("tidemark");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency: HistogramFamily = Family::new_with_constructor(latency_histogram);
        registry.register(
            "http_requests",
            "HTTP requests answered, by route and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by route and status",
            latency.clone(),
        );
        let webhook_deliveries = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "webhook_deliveries",
            "Webhook delivery attempts, by outcome (delivered, retrying, gave_up)",
            webhook_deliveries.clone(),
        );
        let (worker_passes, worker_seconds) = register_workers(&mut registry);
        registry.register(
            "build",
            "This binary: its version",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
        );
        let sampled = Sampled::default();
        let process = sampled.register(&mut registry);
        let pushes = Family::<PushLabels, Counter>::default();
        registry.register(
            "pushes",
            "Scan pushes answered, by outcome (created, replayed, refused, failed) and error code",
            pushes.clone(),
        );
        let limited = Family::<LimitLabels, Counter>::default();
        registry.register(
            "rate_limited",
            "Requests refused with 429, by the limit that refused them (writes, resend, signin, \
             oidc, scim)",
            limited.clone(),
        );
        let database_faults = Family::<FaultLabels, Counter>::default();
        registry.register(
            "database_faults",
            "Requests answered 503 database_unavailable or 507 storage_full, by fault \
             (unavailable, storage_full)",
            database_faults.clone(),
        );
        let oidc_exchanges = Family::<ExchangeLabels, Counter>::default();
        registry.register(
            "oidc_exchanges",
            "Keyless CI token exchanges, by outcome (issued, refused, unavailable) and, for a \
             refusal, the claim that failed",
            oidc_exchanges.clone(),
        );
        let scim_requests = Family::<ScimLabels, Counter>::default();
        registry.register(
            "scim_requests",
            "SCIM provisioning requests, by resource (Users, Groups, discovery) and outcome \
             (ok, invalid, unauthorized, not_found, conflict, limited, unavailable)",
            scim_requests.clone(),
        );
        for resource in ["Users", "Groups"] {
            for &outcome in SCIM_OUTCOMES {
                let _ = scim_requests.get_or_create(&ScimLabels { resource, outcome });
            }
        }
        let answered_early = Family::<EarlyLabels, Counter>::default();
        registry.register(
            "http_requests_answered_early",
            "Requests answered from memory ahead of the router (validations the cache holds, \
             TIDEMARK_VALIDATION_CACHE_MS), by route; also counted in http_requests",
            answered_early.clone(),
        );
        let panics = Counter::default();
        registry.register(
            "panics",
            "Requests whose handler panicked (each answered 500 internal_error)",
            panics.clone(),
        );
        // Known series start at 0, so a rate over them works from a replica's first scrape
        // and an alert on one never waits for its first occurrence.
        for outcome in ["delivered", "retrying", "gave_up"] {
            let _ = webhook_deliveries.get_or_create(&OutcomeLabels { outcome });
        }
        for outcome in ["created", "replayed"] {
            let _ = pushes.get_or_create(&PushLabels { outcome, code: "" });
        }
        let _ = oidc_exchanges.get_or_create(&ExchangeLabels {
            outcome: "issued",
            claim: "",
        });
        for limit in ["writes", "resend", "signin", "oidc", "scim"] {
            let _ = limited.get_or_create(&LimitLabels { limit });
        }
        for fault in [
            tidemark_store::Fault::Unavailable,
            tidemark_store::Fault::StorageFull,
        ] {
            let fault = fault_label(fault);
            let _ = database_faults.get_or_create(&FaultLabels { fault });
        }
        Arc::new(Self {
            registry,
            process,
            sampled,
            requests,
            latency,
            webhook_deliveries,
            worker_passes,
            worker_seconds,
            pushes,
            limited,
            database_faults,
            oidc_exchanges,
            scim_requests,
            answered_early,
            panics,
        })
    }

    fn observe(&self, labels: RequestLabels, seconds: f64, res: &Response) {
        self.latency.get_or_create(&labels).observe(seconds);
        self.requests.get_or_create(&labels).inc();
        if let Some(&ExchangeCounted { outcome, claim }) = res.extensions().get() {
            self.oidc_exchanges
                .get_or_create(&ExchangeLabels { outcome, claim })
                .inc();
        }
        if let Some(&ScimCounted { resource, outcome }) = res.extensions().get() {
            self.scim_requests
                .get_or_create(&ScimLabels { resource, outcome })
                .inc();
        }
        if let Some(&PushCounted { outcome, code }) = res.extensions().get() {
            self.pushes
                .get_or_create(&PushLabels { outcome, code })
                .inc();
        }
        if let Some(&AnsweredEarly(route)) = res.extensions().get() {
            self.answered_early
                .get_or_create(&EarlyLabels { route })
                .inc();
        }
        if let Some(&LimitReached(limit)) = res.extensions().get() {
            self.limited.get_or_create(&LimitLabels { limit }).inc();
        }
        if let Some(&DatabaseFault(fault)) = res.extensions().get() {
            let fault = fault_label(fault);
            self.database_faults
                .get_or_create(&FaultLabels { fault })
                .inc();
        }
        if res
            .extensions()
            .get::<crate::http::panics::Panicked>()
            .is_some()
        {
            self.panics.inc();
        }
    }

    pub fn count_worker_pass(&self, worker: &'static str, outcome: &'static str, took: Duration) {
        let labels = WorkerLabels { worker, outcome };
        self.worker_passes.get_or_create(&labels).inc();
        self.worker_seconds
            .get_or_create(&labels)
            .inc_by(took.as_secs_f64());
    }

    pub fn count_webhook_delivery(&self, outcome: &'static str) {
        self.webhook_deliveries
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    pub fn render(&self) -> String {
        use prometheus_client::encoding::text::{encode_eof, encode_registry};
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode_registry(&mut out, &self.registry);
        let _ = encode_registry(&mut out, &self.process);
        let _ = encode_eof(&mut out);
        out
    }

    /// Reads the figures that are sampled rather than counted: from memory at every scrape,
    /// from the database when [`DB_SAMPLE_EVERY_MS`] has passed. `push_bytes` is the push
    /// bodies held now; `data_dir` the disk whose space is reported.
    pub async fn sample(
        &self,
        db: &tidemark_store::Db,
        push_bytes: u64,
        data_dir: &std::path::Path,
    ) {
        let s = &self.sampled;
        let groups = db.push_group_stats();
        s.push_queue
            .set(groups.map_or(0, |g| i64::try_from(g.in_flight).unwrap_or(i64::MAX)));
        *s.push_groups.0.lock().unwrap_or_else(|e| e.into_inner()) = groups;
        s.push_body_bytes
            .set(i64::try_from(push_bytes).unwrap_or(i64::MAX));
        for p in db.pool_stats() {
            let in_use = p.open.saturating_sub(p.idle);
            for (state, value) in [("in_use", in_use), ("idle", p.idle), ("max", p.max)] {
                s.pool_connections
                    .get_or_create(&PoolLabels {
                        pool: p.pool,
                        state,
                    })
                    .set(i64::from(value));
            }
        }
        if let Some(p) = process::sample() {
            s.resident_memory.set(p.resident_bytes);
            s.open_fds.set(p.open_fds);
            s.start_time.set(p.start_time_seconds);
            let counted = s.cpu_seconds.get();
            if p.cpu_seconds > counted {
                s.cpu_seconds.inc_by(p.cpu_seconds - counted);
            }
        }
        let dropped = crate::telemetry::log_lines_dropped();
        let counted = s.log_lines_dropped.get();
        if dropped > counted {
            s.log_lines_dropped.inc_by(dropped - counted);
        }
        if let Some((free, size)) = disk_space(data_dir) {
            s.disk_free.set(free);
            s.disk_size.set(size);
        }
        // One scrape at a time reads the database; the others keep the last figures.
        let now = tidemark_domain::now_millis();
        let due = s.next_db_sample.load(Ordering::Relaxed);
        if now < due
            || s.next_db_sample
                .compare_exchange(
                    due,
                    now + DB_SAMPLE_EVERY_MS,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            return;
        }
        // A database that does not answer keeps the last figures of everything else: the
        // scrape answers at once instead of waiting on each read in turn.
        let up = matches!(
            tokio::time::timeout(DB_PING_LIMIT, db.is_ready()).await,
            Ok(Ok(_))
        );
        s.database_up.set(i64::from(up));
        if !up {
            return;
        }
        for (pool, waited) in db.acquire_waits(ACQUIRE_PROBE_LIMIT).await {
            s.pool_acquire_wait
                .get_or_create(&PoolNameLabels { pool })
                .set(waited.as_secs_f64());
        }
        match tidemark_store::gauges::backlog(db, now).await {
            Ok(b) => {
                let age = |oldest: Option<i64>| {
                    oldest.map_or(0.0, |at| (now - at).max(0) as f64 / 1000.0)
                };
                for (queue, pending, oldest, failing) in [
                    ("mail", b.mail_pending, b.mail_oldest_at, b.mail_failing),
                    (
                        "webhook",
                        b.webhooks_pending,
                        b.webhooks_oldest_at,
                        b.webhooks_failing,
                    ),
                ] {
                    let labels = QueueLabels { queue };
                    s.outbox_pending.get_or_create(&labels).set(pending);
                    s.outbox_oldest_age.get_or_create(&labels).set(age(oldest));
                    s.outbox_failing.get_or_create(&labels).set(failing);
                }
                s.sessions_active.set(b.sessions_active);
                s.database_size.set(b.database_bytes);
                s.scans_as_rows.set(b.scans_as_rows);
                s.scans_posture_pending.set(b.scans_posture_pending);
            }
            // The scrape still answers, with the last figures; the log says why.
            Err(err) => tracing::warn!(%err, "metrics: could not read the outbox figures"),
        }
    }
}

/// Records one observation per request. The route label is the matched route pattern, never
/// the raw path, so ids in URLs cannot blow up the number of series.
pub async fn track_requests(
    State(metrics): State<Arc<Metrics>>,
    req: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = req.method().as_str().to_owned();
    let matched = req.extensions().get::<MatchedPath>().cloned();
    let res = next.run(req).await;
    // Outside the router the route is known only once it has answered (`note_matched_path`).
    let route = matched
        .or_else(|| res.extensions().get::<MatchedPath>().cloned())
        .map(|p| p.as_str().to_owned())
        .or_else(|| {
            res.extensions()
                .get::<AnsweredEarly>()
                .map(|r| r.0.to_owned())
        })
        .unwrap_or_else(|| "unmatched".to_owned());
    let labels = RequestLabels {
        method,
        route,
        status: res.status().as_u16(),
    };
    metrics.observe(labels, started.elapsed().as_secs_f64(), &res);
    res
}

/// On an answer given ahead of the router from memory (which is also ahead of `MatchedPath`):
/// the route it answered for, so it is counted as the router would have counted it, and in
/// `tidemark_http_requests_answered_early{route}`.
#[derive(Clone, Copy, Debug)]
pub struct AnsweredEarly(pub &'static str);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EarlyLabels {
    route: &'static str,
}

/// Inside the router, on each route: the route the request matched goes out with its answer,
/// for the layers that wrap the whole router (`track_requests`).
pub async fn note_matched_path(req: Request, next: Next) -> Response {
    let matched = req.extensions().get::<MatchedPath>().cloned();
    let mut res = next.run(req).await;
    if let Some(matched) = matched {
        res.extensions_mut().insert(matched);
    }
    res
}

/// Bytes available to this process and the size of the file system holding `dir`.
fn disk_space(dir: &std::path::Path) -> Option<(i64, i64)> {
    let stat = rustix::fs::statvfs(dir).ok()?;
    let block = stat.f_frsize;
    let free = stat.f_bavail.saturating_mul(block);
    let size = stat.f_blocks.saturating_mul(block);
    Some((
        i64::try_from(free).unwrap_or(i64::MAX),
        i64::try_from(size).unwrap_or(i64::MAX),
    ))
}

/// This process's figures from `/proc` (Linux); `None` elsewhere.
mod process {
    pub struct Sample {
        pub resident_bytes: i64,
        pub cpu_seconds: f64,
        pub open_fds: i64,
        pub start_time_seconds: f64,
    }

    /// `/proc` reports CPU times in USER_HZ ticks, fixed at 100 by the kernel's ABI.
    const TICKS_PER_SECOND: f64 = 100.0;

    pub fn sample() -> Option<Sample> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let resident_kib: i64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
        // utime, stime and starttime are fields 14, 15 and 22 of the whole line.
        let cpu_seconds = (tick(11)? + tick(12)?) / TICKS_PER_SECOND;
        let started_after_boot = tick(19)? / TICKS_PER_SECOND;
        let boot_time: f64 = std::fs::read_to_string("/proc/stat")
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("btime "))?
            .trim()
            .parse()
            .ok()?;
        let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as i64;
        Some(Sample {
            resident_bytes: resident_kib * 1024,
            cpu_seconds,
            open_fds,
            start_time_seconds: boot_time + started_after_boot,
        })
    }
}
