//! Prometheus metrics: request counts and latencies by route and status, served as text at
//! `/metrics`. Each app owns its registry (no process-wide globals), so in-process tests that
//! run several apps do not see each other's numbers.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

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
struct PoolLabels {
    pool: &'static str,
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    queue: &'static str,
}

type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// Figures read at each scrape (the database's queues, pools, this process).
#[derive(Default)]
struct Sampled {
    outbox_pending: Family<QueueLabels, Gauge>,
    outbox_oldest_age: Family<QueueLabels, FloatGauge>,
    outbox_failing: Family<QueueLabels, Gauge>,
    sessions_active: Gauge,
    pool_connections: Family<PoolLabels, Gauge>,
    resident_memory: Gauge,
    cpu_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    open_fds: Gauge,
    start_time: FloatGauge,
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
}

fn latency_histogram() -> Histogram {
    // 1 ms to ~8 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 14))
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
        registry.register(
            "build",
            "This binary: its version",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
        );
        let sampled = Sampled::default();
        registry.register(
            "outbox_pending",
            "Messages waiting in a durable outbox (mail, webhook), all replicas together",
            sampled.outbox_pending.clone(),
        );
        registry.register(
            "outbox_oldest_age_seconds",
            "Age of the oldest message waiting in an outbox (0 when empty)",
            sampled.outbox_oldest_age.clone(),
        );
        registry.register(
            "outbox_failing",
            "Waiting messages whose last attempt failed",
            sampled.outbox_failing.clone(),
        );
        registry.register(
            "sessions_active",
            "Dashboard sessions not yet expired, all replicas together",
            sampled.sessions_active.clone(),
        );
        registry.register(
            "db_pool_connections",
            "This replica's database connections by pool and state (in_use, idle, max)",
            sampled.pool_connections.clone(),
        );
        let mut process = Registry::default();
        process.register(
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            sampled.resident_memory.clone(),
        );
        process.register(
            "process_cpu_seconds",
            "User and system CPU time spent, in seconds",
            sampled.cpu_seconds.clone(),
        );
        process.register(
            "process_open_fds",
            "Open file descriptors",
            sampled.open_fds.clone(),
        );
        process.register(
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch, in seconds",
            sampled.start_time.clone(),
        );
        Arc::new(Self {
            registry,
            process,
            sampled,
            requests,
            latency,
            webhook_deliveries,
        })
    }

    fn observe(&self, labels: RequestLabels, seconds: f64) {
        self.latency.get_or_create(&labels).observe(seconds);
        self.requests.get_or_create(&labels).inc();
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

    /// Reads the figures that are sampled rather than counted.
    async fn sample(&self, db: &tidemark_store::Db) {
        let s = &self.sampled;
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
        let now = tidemark_domain::now_millis();
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
            }
            // The scrape still answers, with the last figures; the log says why.
            Err(err) => tracing::warn!(%err, "metrics: could not read the outbox figures"),
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
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let res = next.run(req).await;
    let labels = RequestLabels {
        method,
        route,
        status: res.status().as_u16(),
    };
    metrics.observe(labels, started.elapsed().as_secs_f64());
    res
}

pub async fn get_metrics(State(state): State<crate::state::AppState>) -> impl IntoResponse {
    let metrics = &state.metrics;
    metrics.sample(&state.db).await;
    (
        [(
            CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.render(),
    )
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
