//! Faults: the database restarts or freezes, the disk fills, the log stream breaks, a handler
//! panics. Every caller still gets an honest answer (`503 database_unavailable` or `507
//! storage_full` with `Retry-After`, a JSON `500`), fast, and no acknowledged push is lost.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use tidemark_store::testing::at_url;
use tidemark_store::{on_db, Backend};
use tidemark_wire::Tier;

use crate::cli_client::{tidemark, with_ci_secret_key};
use crate::common::postgres::{PrivatePostgres, SmallDisk};
use crate::common::{sample_push, TestApp};

/// A push's answer and how long it took.
async fn timed_push(
    app: &TestApp,
    key: &str,
    body: &Value,
) -> (StatusCode, Duration, Value, Option<String>) {
    let started = Instant::now();
    let res = app.push(key, body).await;
    let status = res.status();
    let retry_after = res
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let body: Value = res.json().await.unwrap_or(Value::Null);
    (status, started.elapsed(), body, retry_after)
}

/// What the pushers saw: every scan acknowledged with 201, and how many refusals.
#[derive(Default)]
struct Seen {
    acknowledged: HashSet<String>,
    refusals: usize,
}

/// Four CI jobs pushing one project's scans until `stop`: each scan is sent until it is
/// acknowledged (as a CI job's retry would: the same bytes), and every refusal must be the
/// documented one, within `limit`.
fn pushers(
    app: &Arc<TestApp>,
    key: &str,
    stop: &Arc<AtomicBool>,
    limit: Duration,
) -> (Arc<Mutex<Seen>>, Vec<tokio::task::JoinHandle<()>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let tasks = (0..4)
        .map(|pusher| {
            let (app, key, stop, seen) = (app.clone(), key.to_owned(), stop.clone(), seen.clone());
            tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let at = format!("2026-11-25T{:02}:{:02}:{:02}Z", pusher, n / 60, n % 60);
                    let body = sample_push("api", f64::from(n % 100), &at);
                    loop {
                        let (status, took, answer, retry_after) =
                            timed_push(&app, &key, &body).await;
                        if status == StatusCode::CREATED {
                            let id = answer["scan_id"].as_str().unwrap().to_owned();
                            seen.lock().unwrap().acknowledged.insert(id);
                            break;
                        }
                        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
                        assert_eq!(answer["error"], "database_unavailable", "{answer}");
                        assert!(retry_after.is_some(), "503 without Retry-After");
                        assert!(took <= limit, "a refusal took {took:?}");
                        seen.lock().unwrap().refusals += 1;
                        tokio::time::sleep(Duration::from_millis(300)).await;
                    }
                }
            })
        })
        .collect();
    (seen, tasks)
}

/// Every acknowledged scan of the `api` project is stored, and its history is a gap-free
/// chain: line numbers 1..n, each delta against its predecessor.
async fn assert_history_intact(app: &TestApp, acknowledged: &HashSet<String>) {
    let rows: Vec<(String, i64, f64, f64)> = on_db!(&app.db, pool => {
        sqlx::query_as(
            "SELECT s.scan_id, s.line_seq, s.score, s.score_delta FROM scans s \
             JOIN projects p ON p.id = s.project_id WHERE p.label = 'api' ORDER BY s.line_seq",
        )
        .fetch_all(pool)
        .await
    })
    .unwrap();
    let stored: HashSet<String> = rows.iter().map(|r| r.0.clone()).collect();
    assert!(
        acknowledged.is_subset(&stored),
        "acknowledged but lost: {:?}",
        acknowledged.difference(&stored).collect::<Vec<_>>()
    );
    let mut previous: Option<f64> = None;
    for (i, (id, line_seq, score, delta)) in rows.iter().enumerate() {
        assert_eq!(*line_seq, i as i64 + 1, "a gap before {id}");
        let expected = previous.map_or(0.0, |p| score - p);
        assert!(
            (delta - expected).abs() < 1e-9,
            "{id}: delta {delta}, expected {expected}"
        );
        previous = Some(*score);
    }
}

async fn timed_get(app: &TestApp, path: &str) -> (StatusCode, Duration, Value) {
    let started = Instant::now();
    let res = app.get(path).await;
    let status = res.status();
    (
        status,
        started.elapsed(),
        res.json().await.unwrap_or(Value::Null),
    )
}

/// PostgreSQL stopped for 8 s under four pushers and a CI job's `tidemark push`: refusals are
/// `503 database_unavailable` with `Retry-After` within 5 s, `/readyz` says so within 1 s,
/// everything recovers without a restart of Tidemark, the CLI's push succeeds, and no
/// acknowledged push is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_postgres_restart_is_answered_503_fast_and_loses_nothing() {
    let pg = tokio::task::spawn_blocking(PrivatePostgres::start)
        .await
        .unwrap();
    let provider = crate::common::oidc::ScriptedProvider::start().await;
    let settings = provider.env();
    let mut settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // Four unthrottled pushers on a fast disk outrun any per-minute budget, which is not
    // this test's subject.
    settings.push(("TIDEMARK_WRITES_PER_MINUTE", "1000000"));
    let app = Arc::new(TestApp::spawn_on(at_url(&pg.url).await, &settings).await);
    let (license, key) = app.with_key(Tier::Enterprise).await;
    let mut browser = app.signed_in(&provider, &license.email).await;
    let stop = Arc::new(AtomicBool::new(false));
    let (e, _config, file) = ci_job(&app).await;
    let (seen, tasks) = pushers(&app, &key, &stop, Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(800)).await;

    let pg = Arc::new(pg);
    let stopping = pg.clone();
    tokio::task::spawn_blocking(move || stopping.stop())
        .await
        .unwrap();
    let down_at = Instant::now();
    // A CI job pushes while the database is away.
    let ci = tokio::spawn(async move { tidemark(&e, &["push", file.to_str().unwrap()]).await });

    let (status, took, body) = timed_get(&app, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["status"], "database_unreachable", "{body}");
    assert!(took < Duration::from_secs(1), "/readyz took {took:?}");
    let (status, took, _) = timed_get(&app, "/healthz").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "liveness never depends on the database"
    );
    assert!(took < Duration::from_millis(500));
    // A signed-in person is told what is wrong (and the page retries by itself), not sent
    // to sign in again; within 5 s, as /v1 answers (one wait for the database, not two).
    let asked = Instant::now();
    let page = browser.get(&app.url("/projects")).await;
    let took = asked.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "a signed-in page took {took:?}"
    );
    assert_eq!(page.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(page.headers().contains_key("retry-after"));
    let html = page.text().await.unwrap();
    assert!(
        html.contains("The database is unavailable") && html.contains("http-equiv=\"refresh\""),
        "{html}"
    );
    let (status, took, body, retry_after) =
        timed_push(&app, &key, &sample_push("api", 1.0, "2026-11-25T23:00:00Z")).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("database_unavailable")
        ),
        "{body}"
    );
    assert!(took < Duration::from_secs(5), "a push took {took:?}");
    assert_eq!(retry_after.as_deref(), Some("5"));

    tokio::time::sleep(Duration::from_secs(8).saturating_sub(down_at.elapsed())).await;
    let starting = pg.clone();
    tokio::task::spawn_blocking(move || starting.start_again())
        .await
        .unwrap();
    // Back without restarting Tidemark.
    let ready = crate::common::wait_for_async(Duration::from_secs(15), || async {
        (app.get("/readyz").await.status() == StatusCode::OK).then_some(())
    })
    .await;
    assert!(ready.is_some(), "/readyz never came back");
    let page = browser.get(&app.url("/projects")).await;
    assert_eq!(
        page.status(),
        StatusCode::OK,
        "still signed in once it is back"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let run = ci.await.unwrap();
    assert_eq!(run.code, Ok(0), "{}", run.out);
    assert!(
        run.out.contains("database is unavailable") && run.out.contains("Pushed: "),
        "the CLI says what it waited for: {}",
        run.out
    );

    let (refusals, acknowledged) = {
        let seen = seen.lock().unwrap();
        (seen.refusals, seen.acknowledged.clone())
    };
    assert!(refusals > 0, "the pushers met the outage");
    let faults = app
        .metric("tidemark_database_faults_total{fault=\"unavailable\"}")
        .await
        .unwrap();
    assert!(faults >= 1.0, "{faults}");
    assert_history_intact(&app, &acknowledged).await;
    assert_eq!(ci_scans(&app).await, 1, "the CI job's scan, once");
}

/// A CI job of another account (a key from its secret store) with a scan of project `ci`.
async fn ci_job(
    app: &TestApp,
) -> (
    tidemark_cli::cli::Env,
    tempfile::TempDir,
    std::path::PathBuf,
) {
    let (e, config, _key, file) = with_ci_secret_key(app).await;
    let scan = sample_push("ci", 70.0, "2026-11-25T22:00:00Z");
    std::fs::write(&file, serde_json::to_vec(&scan).unwrap()).unwrap();
    (e, config, file)
}

/// How many scans the CI job's project holds.
async fn ci_scans(app: &TestApp) -> i64 {
    let (n,): (i64,) = on_db!(&app.db, pool => {
        sqlx::query_as(
            "SELECT COUNT(*) FROM scans s JOIN projects p ON p.id = s.project_id \
             WHERE p.label = 'ci'",
        )
        .fetch_one(pool)
        .await
    })
    .unwrap();
    n
}

/// PostgreSQL frozen (SIGSTOP) for 75 s, as long as a managed database's failover: pushes
/// are answered `503` within 10 s, including one whose write had begun; after the thaw the
/// write is there, its retry is answered as the replay it is, and a CI job's `tidemark push`
/// started during the freeze succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_frozen_postgres_is_answered_503_within_10_s_and_loses_nothing() {
    let mut pg = tokio::task::spawn_blocking(PrivatePostgres::start)
        .await
        .unwrap();
    let app = Arc::new(TestApp::spawn_on(at_url(&pg.url).await, &[]).await);
    let (_license, key) = app.with_key(Tier::Enterprise).await;
    let (e, _config, file) = ci_job(&app).await;
    let first = sample_push("api", 40.0, "2026-11-25T10:00:00Z");
    assert_eq!(timed_push(&app, &key, &first).await.0, StatusCode::CREATED);

    pg = tokio::task::spawn_blocking(move || {
        pg.freeze();
        pg
    })
    .await
    .unwrap();
    let frozen_at = Instant::now();
    let ci = tokio::spawn(async move { tidemark(&e, &["push", file.to_str().unwrap()]).await });
    let during = sample_push("api", 45.0, "2026-11-25T10:01:00Z");
    let (status, took, body, retry_after) = timed_push(&app, &key, &during).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"], "database_unavailable");
    assert!(retry_after.is_some());
    assert!(
        took <= Duration::from_secs(10),
        "a push during the freeze took {took:?}"
    );
    let (status, took, _) = timed_get(&app, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(took < Duration::from_secs(1), "/readyz took {took:?}");
    // Several more, as CI jobs keep coming: each answered in time.
    for second in 2..5 {
        let body = sample_push("api", 50.0, &format!("2026-11-25T10:0{second}:00Z"));
        let (status, took, _, _) = timed_push(&app, &key, &body).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(took <= Duration::from_secs(10), "took {took:?}");
    }

    tokio::time::sleep(Duration::from_secs(75).saturating_sub(frozen_at.elapsed())).await;
    let mut pg = tokio::task::spawn_blocking(move || {
        pg.thaw();
        pg
    })
    .await
    .unwrap();
    // The retry of the push refused during the freeze: stored once, whether its write
    // finished behind the 503 or only now.
    let ok = crate::common::wait_for_async(Duration::from_secs(20), || async {
        (timed_push(&app, &key, &during).await.0 == StatusCode::CREATED).then_some(())
    })
    .await;
    assert!(ok.is_some(), "pushes never came back after the thaw");
    let (status, _, again, _) = timed_push(&app, &key, &during).await;
    assert_eq!(status, StatusCode::CREATED);
    let run = ci.await.unwrap();
    assert_eq!(run.code, Ok(0), "{}", run.out);
    assert!(run.out.contains("database is unavailable"), "{}", run.out);

    // Stored once, whether its write finished behind the 503 or only now; nothing else of
    // the refused pushes was kept half-way.
    let rows: Vec<(String,)> = on_db!(&app.db, pool => {
        sqlx::query_as(
            "SELECT s.scan_id FROM scans s JOIN projects p ON p.id = s.project_id \
             WHERE p.label = 'api' AND s.scanned_at = $1",
        )
        .bind(chrono::DateTime::parse_from_rfc3339("2026-11-25T10:01:00Z").unwrap().timestamp_millis())
        .fetch_all(pool)
        .await
    })
    .unwrap();
    assert_eq!(
        rows.len(),
        1,
        "the refused-then-retried push is stored once"
    );
    assert_eq!(again["scan_id"].as_str(), Some(rows[0].0.as_str()));
    assert_eq!(ci_scans(&app).await, 1);
    assert_history_intact(&app, &HashSet::from([rows[0].0.clone()])).await;
    pg.thaw();
}

/// SQLite on a disk that fills up: pushes are `507 storage_full` with `Retry-After`, reads
/// and `/readyz` still work, the metrics show the disk, and pushes succeed again once space
/// is freed.
#[tokio::test]
async fn a_full_disk_is_507_reads_go_on_and_writes_come_back() {
    let disk = SmallDisk::mount(24);
    let data = disk.path().to_str().unwrap().to_owned();
    let url = format!("sqlite://{data}/tidemark.db");
    let app = TestApp::spawn_on(at_url(&url).await, &[("TIDEMARK_DATA_DIR", &data)]).await;
    let (license, key) = app.with_key(Tier::Team).await;
    let first = app
        .push(&key, &sample_push("api", 50.0, "2026-11-25T10:00:00Z"))
        .await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();

    let filler = disk.fill();
    let mut findings = sample_push("api", 60.0, "2026-11-25T11:00:00Z");
    // Large enough that its rows cannot fit in pages SQLite already has.
    let many: Vec<Value> = (0..2000)
        .map(|i| serde_json::json!({"rule_id": format!("r-{i}"), "resource": format!("bucket-{i}"), "status": "FAIL", "severity": "high", "message": "x".repeat(200), "remediation": "y".repeat(100)}))
        .collect();
    findings["findings"] = Value::Array(many);
    let (status, _, body, retry_after) = timed_push(&app, &key, &findings).await;
    assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE, "{body}");
    assert_eq!(body["error"], "storage_full");
    assert_eq!(retry_after.as_deref(), Some("30"));

    // Reads go on: validation, an export, readiness.
    let res = app
        .client
        .post(app.url("/v1/license/validate"))
        .header("X-License-Key-Hash", &license.hash)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let res = app
        .client
        .get(app.url(&format!(
            "/v1/projects/{}/history.csv",
            first["project_id"].as_str().unwrap()
        )))
        .header("X-API-Key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(app.get("/readyz").await.status(), StatusCode::OK);
    let free = app.metric("tidemark_data_disk_free_bytes").await.unwrap();
    let size = app.metric("tidemark_data_disk_size_bytes").await.unwrap();
    assert!(
        size > 20.0 * 1024.0 * 1024.0 && free < 1024.0 * 1024.0,
        "{free} of {size}"
    );
    assert_eq!(
        app.metric("tidemark_database_faults_total{fault=\"storage_full\"}")
            .await,
        Some(1.0)
    );

    std::fs::remove_file(filler).unwrap();
    let (status, _, body, _) = timed_push(&app, &key, &findings).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(app.count("scans").await, 2);
}

/// A handler that panics is answered with the contract's JSON `500` naming the request id,
/// and counted; the server goes on serving.
#[tokio::test]
async fn a_panicking_handler_is_answered_with_json_500() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let router = server::router_with(
        app.state.clone(),
        axum::Router::new().route(
            "/boom",
            axum::routing::get(|| async {
                if std::hint::black_box(true) {
                    panic!("a bug in a handler");
                }
                "unreachable"
            }),
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move { axum::serve(listener, router).await });
    let res = app
        .client
        .get(format!("http://{addr}/boom"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let id = res.headers()["x-request-id"].to_str().unwrap().to_owned();
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "internal_error");
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(&id), "{message}");
    assert!(
        !message.contains("a bug in a handler"),
        "no internals: {message}"
    );
    let res = app
        .client
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "still serving");
    assert_eq!(app.metric("tidemark_panics_total").await, Some(1.0));
    serving.abort();
}

mod binary {
    //! The real binary, with its standard streams where the faults are.
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    use reqwest::StatusCode;

    use crate::common::postgres::SmallDisk;
    use crate::common::{free_port, sample_push};

    struct Serving {
        child: Child,
        base: String,
    }

    impl Drop for Serving {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// `tidemark-server serve` on `data_dir`, with debug logs (so every request writes
    /// lines) going to `stdout` and `stderr`; waits until it answers.
    async fn serve(data_dir: &std::path::Path, stdout: Stdio, stderr: Stdio) -> Serving {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_tidemark-server"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("TIDEMARK_DATA_DIR", data_dir)
            .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
            .env("TIDEMARK_VALIDATION_CACHE_MS", "0")
            .env("RUST_LOG", "debug")
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut serving = Serving {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        let client = reqwest::Client::new();
        for _ in 0..150 {
            if let Ok(res) = client.get(format!("{}/healthz", serving.base)).send().await {
                if res.status() == StatusCode::OK {
                    return serving;
                }
            }
            assert!(
                serving.child.try_wait().unwrap().is_none(),
                "the server exited at start-up"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("the server never answered");
    }

    /// A license made by the operator command on the same data directory: its raw key.
    fn create_license(data_dir: &std::path::Path) -> String {
        let dir = data_dir.display().to_string();
        let (ok, out, err) = crate::common::tidemark_server(
            &[("TIDEMARK_DATA_DIR", &dir)],
            &[
                "--json",
                "license",
                "create",
                "--email",
                "ops@example.com",
                "--tier",
                "team",
            ],
        );
        assert!(ok, "{err}");
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        doc["license_key"]
            .as_str()
            .unwrap_or_else(|| panic!("{doc}"))
            .to_owned()
    }

    fn hash(key: &str) -> String {
        tidemark_domain::secrets::sha256_hex(key.as_bytes())
    }

    /// Requests that log lines (every request at debug), a write among them, all answered.
    async fn every_request_is_answered(base: &str, license_hash: &str) -> String {
        let client = reqwest::Client::new();
        for _ in 0..20 {
            let res = client.get(format!("{base}/healthz")).send().await.unwrap();
            assert_eq!(res.status(), StatusCode::OK);
        }
        let res = client
            .post(format!("{base}/v1/license/validate"))
            .header("X-License-Key-Hash", "not-a-hash")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        let res = client
            .post(format!("{base}/v1/license/activate"))
            .header("X-License-Key-Hash", license_hash)
            .json(&serde_json::json!({"machine": "ci"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        let body: serde_json::Value = res.json().await.unwrap();
        body["api_key"].as_str().unwrap().to_owned()
    }

    /// stdout and stderr on a pipe whose reader exits (a log shipper that died, `serve |
    /// tee` interrupted): every request is still answered, and the lost lines are counted.
    #[tokio::test]
    async fn a_log_reader_that_exits_takes_no_request_down() {
        let dir = tempfile::tempdir().unwrap();
        let key = create_license(dir.path());
        let serving = serve(dir.path(), Stdio::piped(), Stdio::piped()).await;
        let mut serving = serving;
        // The reader goes away.
        drop(serving.child.stdout.take());
        drop(serving.child.stderr.take());
        every_request_is_answered(&serving.base, &hash(&key)).await;
        let metrics = reqwest::get(format!("{}/metrics", serving.base))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let dropped =
            crate::common::metric_value(&metrics, "tidemark_log_lines_dropped_total").unwrap();
        assert!(dropped > 0.0, "{dropped}");
        assert!(serving.child.try_wait().unwrap().is_none(), "still running");
    }

    /// stdout and stderr on `/dev/full` from the start (every write fails): it starts and
    /// serves.
    #[tokio::test]
    async fn an_unwritable_stderr_at_start_up_still_serves() {
        let dir = tempfile::tempdir().unwrap();
        let key = create_license(dir.path());
        let full = || {
            Stdio::from(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
        };
        let serving = serve(dir.path(), full(), full()).await;
        every_request_is_answered(&serving.base, &hash(&key)).await;
    }

    /// One disk for the database and the log (a single-disk host), and it fills: a push is
    /// answered `507 storage_full`, not a reset connection.
    #[tokio::test]
    async fn a_full_disk_under_the_log_too_is_still_507() {
        let disk = SmallDisk::mount(24);
        let key = create_license(disk.path());
        let log = std::fs::File::create(disk.path().join("server.log")).unwrap();
        let serving = serve(disk.path(), Stdio::null(), Stdio::from(log)).await;
        let api_key = every_request_is_answered(&serving.base, &hash(&key)).await;
        let client = reqwest::Client::new();
        let push = |at: &str| {
            client
                .post(format!("{}/v1/dashboard/push", serving.base))
                .header("X-API-Key", &api_key)
                .json(&sample_push("api", 50.0, at))
        };
        assert_eq!(
            push("2026-11-25T10:00:00Z").send().await.unwrap().status(),
            StatusCode::CREATED
        );
        let filler = disk.fill();
        let mut statuses = Vec::new();
        for minute in 1..4 {
            let res = push(&format!("2026-11-25T10:0{minute}:00Z"))
                .send()
                .await
                .expect("an answer, never a reset");
            statuses.push(res.status());
        }
        assert!(
            statuses.contains(&StatusCode::INSUFFICIENT_STORAGE),
            "{statuses:?}"
        );
        assert!(
            statuses
                .iter()
                .all(|s| *s == StatusCode::INSUFFICIENT_STORAGE || *s == StatusCode::CREATED),
            "{statuses:?}"
        );
        std::fs::remove_file(filler).unwrap();
        assert_eq!(
            push("2026-11-25T11:00:00Z").send().await.unwrap().status(),
            StatusCode::CREATED
        );
    }
}
