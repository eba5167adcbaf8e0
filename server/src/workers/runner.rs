//! One shape for background work: a [`Worker`] says its name, how its work is leased, how it
//! is paced, and does one pass; the runner starts every worker, takes a named lease around a
//! pass when the worker has one, paces the passes, counts them in the metrics and stops them
//! all when the server stops. Every pass runs detached, so stopping never cuts a write short.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tidemark_domain::{now_millis, Millis};
use tidemark_store::{leases, Db, Writer};
use tokio::sync::Notify;

use crate::http::metrics::Metrics;

/// Who may do a worker's work at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// One replica at a time: the runner takes the named lease for the pass (the pass may
    /// renew it as it goes, under the same holder) and gives it back after.
    Named { name: &'static str, ttl_ms: Millis },
    /// Every replica works: the pass claims each item under a lease of its own (a delivery,
    /// a due check), so a replica that dies mid-item leaves it due again.
    PerItem,
}

/// When passes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// Before the first pass after start-up.
    pub first_after: Duration,
    /// After a pass that found nothing to do (or could not run).
    pub idle: Duration,
    /// After a pass that did some work: more may be waiting.
    pub busy: Duration,
}

impl Pacing {
    /// A queue to drain: pass again at once while there is work, else poll every `idle`.
    pub const fn draining(idle: Duration) -> Self {
        Self {
            first_after: Duration::ZERO,
            idle,
            busy: Duration::ZERO,
        }
    }

    /// A pass every `every`, whatever the last one found; the first after `first_after`.
    pub const fn every(every: Duration, first_after: Duration) -> Self {
        Self {
            first_after,
            idle: every,
            busy: every,
        }
    }
}

/// What a pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Worked on this many items.
    Worked(u64),
    Idle,
    /// Another replica holds the worker's lease.
    Skipped,
    Failed,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Worked(_) => "worked",
            Outcome::Idle => "idle",
            Outcome::Skipped => "skipped",
            Outcome::Failed => "failed",
        }
    }
}

#[async_trait::async_trait]
pub trait Worker: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    fn lease(&self) -> Lease;
    fn pacing(&self) -> Pacing;

    /// What wakes the worker before its idle pause ends (work queued on this replica).
    fn wakeup(&self) -> Option<Arc<Notify>> {
        None
    }

    /// The pause after an idle pass; a worker that knows when its next item is due
    /// shortens it.
    async fn idle_pause(&self, _db: &Db) -> Duration {
        self.pacing().idle
    }

    /// One pass under `holder`'s name: how many items it worked on.
    async fn pass(&self, db: &Writer, holder: &str) -> anyhow::Result<u64>;
}

/// One pass of `worker`, with its lease taken and given back, counted in `metrics`. The
/// operator's `housekeeping run` calls this too, so a pass is the same whoever starts it.
pub async fn run_once(
    worker: Arc<dyn Worker>,
    db: &Db,
    holder: &str,
    metrics: Option<&Metrics>,
) -> Outcome {
    let started = Instant::now();
    let holder = holder.to_owned();
    let ran = {
        let worker = worker.clone();
        db.detached(|db| async move { Ok(leased_pass(worker.as_ref(), &db, &holder).await) })
            .await
    };
    let outcome = match ran {
        Ok(Ok(Some(0))) => Outcome::Idle,
        Ok(Ok(Some(n))) => Outcome::Worked(n),
        Ok(Ok(None)) => Outcome::Skipped,
        Ok(Err(err)) => {
            tracing::warn!(worker = worker.name(), error = %err, "background pass failed");
            Outcome::Failed
        }
        Err(err) => {
            tracing::warn!(worker = worker.name(), error = %err, "background pass failed");
            Outcome::Failed
        }
    };
    if let Some(metrics) = metrics {
        metrics.count_worker_pass(worker.name(), outcome.label(), started.elapsed());
    }
    outcome
}

/// `None` when another replica holds the lease.
async fn leased_pass(
    worker: &dyn Worker,
    db: &Writer,
    holder: &str,
) -> anyhow::Result<Option<u64>> {
    with_lease(db, worker.lease(), holder, || worker.pass(db, holder)).await
}

/// Runs `work` under `lease` for `holder`: at once for per-item leases; for a named lease
/// only if `holder` gets it (`Ok(None)` when another holds it), giving it back after.
pub async fn with_lease<T, E, F>(
    db: &Writer,
    lease: Lease,
    holder: &str,
    work: impl FnOnce() -> F,
) -> Result<Option<T>, E>
where
    F: std::future::Future<Output = Result<T, E>>,
    E: From<tidemark_store::StoreError>,
{
    match lease {
        Lease::PerItem => work().await.map(Some),
        Lease::Named { name, ttl_ms } => {
            if !leases::acquire(db, name, holder, now_millis(), ttl_ms).await? {
                return Ok(None);
            }
            let done = work().await;
            leases::release(db, name, holder).await?;
            done.map(Some)
        }
    }
}

/// The running workers; dropping it stops them all.
pub struct Runner {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Runner {
    /// Starts each worker on its own task, named `holder` for its leases.
    pub fn start(
        workers: Vec<Arc<dyn Worker>>,
        db: &Db,
        holder: &str,
        metrics: Arc<Metrics>,
    ) -> Self {
        let tasks = workers
            .into_iter()
            .map(|worker| {
                let (db, holder, metrics) = (db.clone(), holder.to_owned(), metrics.clone());
                tracing::debug!(worker = worker.name(), "background worker started");
                tokio::spawn(async move { run_forever(worker, db, holder, metrics).await })
            })
            .collect();
        Self { tasks }
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn run_forever(worker: Arc<dyn Worker>, db: Db, holder: String, metrics: Arc<Metrics>) {
    let pacing = worker.pacing();
    let wakeup = worker.wakeup();
    tokio::time::sleep(pacing.first_after).await;
    loop {
        let outcome = run_once(worker.clone(), &db, &holder, Some(&metrics)).await;
        let pause = match outcome {
            Outcome::Worked(_) => pacing.busy,
            Outcome::Idle | Outcome::Skipped | Outcome::Failed => worker.idle_pause(&db).await,
        };
        if pause.is_zero() {
            tokio::task::yield_now().await;
            continue;
        }
        match &wakeup {
            Some(wakeup) => tokio::select! {
                () = wakeup.notified() => {}
                () = tokio::time::sleep(pause) => {}
            },
            None => tokio::time::sleep(pause).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// Works `left` items one pass at a time, then idles.
    struct Countdown {
        left: AtomicU64,
        lease: Lease,
    }

    #[async_trait::async_trait]
    impl Worker for Countdown {
        fn name(&self) -> &'static str {
            "countdown"
        }
        fn lease(&self) -> Lease {
            self.lease
        }
        fn pacing(&self) -> Pacing {
            Pacing {
                first_after: Duration::ZERO,
                idle: Duration::from_secs(3600),
                busy: Duration::ZERO,
            }
        }
        async fn pass(&self, _db: &Writer, _holder: &str) -> anyhow::Result<u64> {
            let left = self.left.load(Ordering::SeqCst);
            if left == 0 {
                return Ok(0);
            }
            self.left.store(left - 1, Ordering::SeqCst);
            Ok(1)
        }
    }

    #[tokio::test]
    async fn a_named_lease_lets_one_holder_pass_and_is_given_back() {
        let test_db = tidemark_store::testing::fresh(tidemark_store::Backend::Sqlite).await;
        let db = test_db.db.db().clone();
        let worker = Arc::new(Countdown {
            left: AtomicU64::new(5),
            lease: Lease::Named {
                name: "countdown",
                ttl_ms: 60_000,
            },
        });
        assert_eq!(
            run_once(worker.clone(), &db, "a", None).await,
            Outcome::Worked(1)
        );
        // Held by another holder: this one is skipped and nothing is done.
        let writer = test_db.writer();
        assert!(
            leases::acquire(&writer, "countdown", "b", now_millis(), 60_000)
                .await
                .unwrap()
        );
        assert_eq!(
            run_once(worker.clone(), &db, "a", None).await,
            Outcome::Skipped
        );
        assert_eq!(worker.left.load(Ordering::SeqCst), 4);
        leases::release(&writer, "countdown", "b").await.unwrap();
        assert_eq!(
            run_once(worker.clone(), &db, "a", None).await,
            Outcome::Worked(1)
        );
        // Given back after the pass: another holder takes it at once.
        assert!(
            leases::acquire(&writer, "countdown", "b", now_millis(), 60_000)
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn the_runner_works_through_what_is_due_then_idles_and_stops_when_dropped() {
        let test_db = tidemark_store::testing::fresh(tidemark_store::Backend::Sqlite).await;
        let db = test_db.db.db().clone();
        let worker = Arc::new(Countdown {
            left: AtomicU64::new(3),
            lease: Lease::PerItem,
        });
        let metrics = Metrics::new();
        let runner = Runner::start(vec![worker.clone()], &db, "test", metrics.clone());
        assert_eq!(runner.len(), 1);
        for _ in 0..200 {
            if worker.left.load(Ordering::SeqCst) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            worker.left.load(Ordering::SeqCst),
            0,
            "busy passes follow each other"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        let text = metrics.render();
        assert!(
            text.contains(r#"tidemark_worker_passes_total{worker="countdown",outcome="worked"} 3"#),
            "{text}"
        );
        assert!(
            text.contains(r#"tidemark_worker_passes_total{worker="countdown",outcome="idle"} 1"#),
            "{text}"
        );
        drop(runner);
        worker.left.store(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            worker.left.load(Ordering::SeqCst),
            1,
            "a dropped runner runs nothing"
        );
    }
}
