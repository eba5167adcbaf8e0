//! As deployed (issue 15): replicas on one PostgreSQL behind Debian's nginx with the documented
//! site file and TLS. A rolling restart under push load loses no acknowledged push; a project's
//! pushes reach one replica, and everything else is spread over both.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::nginx::Nginx;
use common::{sample_push, TestApp};
use tidemark_cli::client::{Client, RetryPolicy};
use tidemark_store::on_db;
use tidemark_wire::Tier;

/// What the load saw: each acknowledged push's scan id, and how often a client had to retry.
#[derive(Default)]
struct Load {
    acknowledged: Vec<String>,
    retries: u32,
    failed: Vec<String>,
}

/// Pushes distinct scans through the proxy from `workers` clients (the CLI's own client, with
/// its retries) until `stop` is set.
async fn push_load(
    url: String,
    ca: Vec<u8>,
    key: String,
    workers: usize,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Load {
    let load = Arc::new(Mutex::new(Load::default()));
    let tasks: Vec<_> = (0..workers)
        .map(|w| {
            let (url, ca, key, stop, load) = (
                url.clone(),
                ca.clone(),
                key.clone(),
                stop.clone(),
                load.clone(),
            );
            tokio::spawn(async move {
                let client = Client::new(&url, Some(&ca)).unwrap();
                let policy = RetryPolicy {
                    max_retries: 8,
                    max_jitter: Duration::from_millis(50),
                    backoff_base: Duration::from_millis(100),
                    ..RetryPolicy::default()
                };
                let mut n = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    // Distinct bodies, one project (the team tier allows one): each worker's
                    // scans on seconds of their own.
                    let second = i64::from(n) * workers as i64 + w as i64;
                    let at = chrono::DateTime::from_timestamp(1_790_000_000 + second, 0)
                        .unwrap()
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                    let body = sample_push("payments", f64::from(n % 100), &at);
                    let body = serde_json::to_vec(&body).unwrap();
                    let mut waits = 0;
                    let result = client
                        .push(&key, &body, Some("payments"), policy, |_, _, _| waits += 1)
                        .await;
                    let mut load = load.lock().unwrap();
                    load.retries += waits;
                    match result {
                        Ok(answer) => load.acknowledged.push(answer.scan_id),
                        Err(e) => load.failed.push(e.to_string()),
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    Arc::try_unwrap(load).ok().unwrap().into_inner().unwrap()
}

#[tokio::test]
async fn a_rolling_restart_behind_the_proxy_loses_no_acknowledged_push() {
    let Some(backend) = tidemark_store::testing::postgres_backend() else {
        return; // TIDEMARK_TEST_SKIP_POSTGRES=1: replicas share PostgreSQL only
    };
    let a = TestApp::spawn_with(backend, &[("TIDEMARK_TRUSTED_PROXIES", "127.0.0.1")]).await;
    let b = a.replica().await;
    let nginx = Nginx::start(&[a.addr, b.addr]).await;
    let (_, key) = a.with_key(Tier::Team).await;
    let ca = std::fs::read(&nginx.ca_pem).unwrap();

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = tokio::spawn(push_load(nginx.https_url.clone(), ca, key, 4, stop.clone()));
    let started = Instant::now();
    tokio::time::sleep(Duration::from_millis(800)).await;
    // Deploy: one replica at a time, as a rolling update does.
    let restarting = Instant::now();
    let b = b.rolling_restart().await;
    let b_took = restarting.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let restarting = Instant::now();
    let a = a.rolling_restart().await;
    let a_took = restarting.elapsed();
    tokio::time::sleep(Duration::from_millis(800)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let load = load.await.unwrap();
    let elapsed = started.elapsed();

    assert!(
        load.failed.is_empty(),
        "pushes that failed for good: {:?}",
        load.failed
    );
    assert!(
        load.acknowledged.len() >= 20,
        "a real load: {} pushes",
        load.acknowledged.len()
    );
    let stored: Vec<(String,)> = on_db!(&a.db, pool => {
        sqlx::query_as("SELECT scan_id FROM scans").fetch_all(pool).await
    })
    .unwrap();
    let stored: HashSet<String> = stored.into_iter().map(|(id,)| id).collect();
    let acknowledged: HashSet<String> = load.acknowledged.iter().cloned().collect();
    assert_eq!(
        acknowledged.len(),
        load.acknowledged.len(),
        "one scan per push"
    );
    let lost: Vec<&String> = acknowledged.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged but not stored: {lost:?}");
    assert_eq!(
        stored.len(),
        acknowledged.len(),
        "nothing stored that was never acknowledged"
    );
    eprintln!(
        "rolling restart: {} pushes acknowledged and stored in {:.1?}, {} client retries; \
         replicas restarted in {b_took:.1?} and {a_took:.1?}",
        acknowledged.len(),
        elapsed,
        load.retries
    );
    drop((a, b));
}

/// The pushes each replica answered, from its own `/metrics`.
async fn pushes_answered(app: &TestApp) -> f64 {
    app.metric(r#"tidemark_pushes_total{outcome="created",code=""}"#)
        .await
        .unwrap_or(0.0)
}

#[tokio::test]
async fn a_projects_pushes_reach_one_replica_behind_the_proxy() {
    let Some(backend) = tidemark_store::testing::postgres_backend() else {
        return; // TIDEMARK_TEST_SKIP_POSTGRES=1: replicas share PostgreSQL only
    };
    let a = TestApp::spawn_with(backend, &[("TIDEMARK_TRUSTED_PROXIES", "127.0.0.1")]).await;
    let b = a.replica().await;
    let nginx = Nginx::start(&[a.addr, b.addr]).await;
    let (_, key) = a.with_key(Tier::Enterprise).await;
    let ca = std::fs::read(&nginx.ca_pem).unwrap();
    let client = Client::new(&nginx.https_url, Some(&ca)).unwrap();
    let policy = RetryPolicy::default();

    // The CLI's client names the project: all of one project's pushes reach one replica.
    for project in ["payments", "ledger", "search"] {
        let before = (pushes_answered(&a).await, pushes_answered(&b).await);
        for n in 0..8 {
            let at = format!("2026-11-22T10:0{n}:00Z");
            let body = serde_json::to_vec(&sample_push(project, 50.0 + f64::from(n), &at)).unwrap();
            client
                .push(&key, &body, Some(project), policy, |_, _, _| {})
                .await
                .unwrap();
        }
        let after = (pushes_answered(&a).await, pushes_answered(&b).await);
        let moved = (after.0 - before.0, after.1 - before.1);
        assert!(
            moved == (8.0, 0.0) || moved == (0.0, 8.0),
            "{project}: {moved:?}"
        );
    }

    // Without the header (another client, the browser) requests are spread over both: 24
    // pushes all landing on one replica by chance is one in eight million.
    let before = (pushes_answered(&a).await, pushes_answered(&b).await);
    for n in 0..24 {
        let at = format!("2026-11-22T11:{n:02}:00Z");
        let body = serde_json::to_vec(&sample_push("unnamed", 50.0, &at)).unwrap();
        client
            .push(&key, &body, None, policy, |_, _, _| {})
            .await
            .unwrap();
    }
    let after = (pushes_answered(&a).await, pushes_answered(&b).await);
    assert_eq!(after.0 - before.0 + after.1 - before.1, 24.0);
    assert!(
        after.0 > before.0 && after.1 > before.1,
        "{before:?} -> {after:?}"
    );
}
