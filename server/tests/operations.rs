//! Health, readiness, metrics, request ids, the rendered page and the server binary itself.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common;

use common::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_store::on_db;

tidemark_store::test_each_backend! {
    async fn healthz_and_readyz_report_the_database_state(backend) {
        let app = TestApp::spawn(backend).await;
        let res = app.get("/healthz").await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.json::<Value>().await.unwrap(), json!({"status": "ok"}));

        let res = app.get("/readyz").await;
        assert_eq!(res.status(), StatusCode::OK, "{backend:?}");
        assert_eq!(
            res.json::<Value>().await.unwrap(),
            json!({"status": "ready", "database": backend.as_str()})
        );

        // Forget the applied migrations: the server must stop claiming readiness.
        on_db!(&app.db, pool => {
            sqlx::query("DELETE FROM _sqlx_migrations").execute(pool).await.map(|_| ())
        })
        .unwrap();
        let res = app.get("/readyz").await;
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE, "{backend:?}");
        assert_eq!(
            res.json::<Value>().await.unwrap()["status"],
            "migrations_pending"
        );
    }
}

tidemark_store::test_each_backend! {
    /// Rolling upgrades: with `TIDEMARK_MIGRATE=never` the server leaves the schema alone and
    /// is not ready until someone migrates; an older binary on a newer schema is ready.
    async fn with_migrate_never_the_server_waits_for_the_schema(backend) {
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_MIGRATE", "never")]).await;
        let res = app.get("/readyz").await;
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE, "{backend:?}");
        assert_eq!(res.json::<Value>().await.unwrap()["status"], "migrations_pending");
        let applied: Result<Vec<(i64,)>, _> = on_db!(&app.db, pool => {
            sqlx::query_as("SELECT version FROM _sqlx_migrations").fetch_all(pool).await
        });
        assert!(applied.is_err(), "not one migration applied: {applied:?}");

        // The deploy step (`tidemark-server migrate`) runs; the same server becomes ready.
        app.state.db.migrate().await.unwrap();
        let res = app.get("/readyz").await;
        assert_eq!(res.status(), StatusCode::OK, "{backend:?}");

        // A newer release has applied a migration this binary does not know: this one
        // still starts (and migrates, under `auto`) and is ready.
        on_db!(&app.db, pool => {
            sqlx::query(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                 VALUES (29991231000001, 'from a newer release', TRUE, $1, 1)",
            )
            .bind(vec![0u8; 48])
            .execute(pool)
            .await
            .map(|_| ())
        })
        .unwrap();
        let app = app.restart(&[("TIDEMARK_MIGRATE", "auto")]).await;
        let res = app.get("/readyz").await;
        assert_eq!(res.status(), StatusCode::OK, "{backend:?}");
    }
}

#[tokio::test]
async fn every_response_carries_a_request_id() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;

    let generated = app.get("/healthz").await;
    let id = generated.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 36, "a generated UUID, got {id}");

    let echoed = app
        .client
        .get(app.url("/healthz"))
        .header("X-Request-Id", "ci-job-42.step_3")
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "ci-job-42.step_3");

    // An id that could forge log lines is replaced, not echoed.
    let replaced = app
        .client
        .get(app.url("/v1/nowhere"))
        .header("X-Request-Id", "x y=z")
        .send()
        .await
        .unwrap();
    let id = replaced.headers()["x-request-id"].to_str().unwrap();
    assert_ne!(id, "x y=z");
    assert_eq!(id.len(), 36);

    let page = app.get("/").await;
    assert!(page.headers().contains_key("x-request-id"));
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_status() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    for _ in 0..3 {
        assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
    }
    app.get("/v1/no-such-thing").await;
    let res = app.get("/metrics").await;
    assert_eq!(res.status(), StatusCode::OK);
    let text = res.text().await.unwrap();
    assert!(
        text.contains(
            r#"tidemark_http_requests_total{method="GET",route="/healthz",status="200"} 3"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"tidemark_http_request_duration_seconds_count{method="GET",route="/healthz",status="200"} 3"#),
        "{text}"
    );
    assert!(
        text.contains(r#"status="404"} 1"#),
        "the unknown route is counted: {text}"
    );
}

#[tokio::test]
async fn metrics_can_live_on_an_address_of_their_own() {
    let addr = format!("127.0.0.1:{}", crate::common::free_port());
    let app = TestApp::spawn_with(
        tidemark_store::Backend::Sqlite,
        &[("TIDEMARK_METRICS_ADDR", &addr)],
    )
    .await;
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
    // The server binds the metrics address as it starts: give it a moment.
    let mut answer = None;
    for _ in 0..50 {
        if let Ok(res) = reqwest::get(format!("http://{addr}/metrics")).await {
            answer = Some(res);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let res = answer.expect("the metrics address answers");
    assert_eq!(res.status(), StatusCode::OK);
    let text = res.text().await.unwrap();
    assert!(
        text.contains(r#"route="/healthz",status="200"} 1"#),
        "{text}"
    );
    assert_eq!(
        app.get("/metrics").await.status(),
        StatusCode::NOT_FOUND,
        "not on the public address"
    );
}

#[tokio::test]
async fn the_landing_page_is_server_rendered_with_hydration_scripts() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let res = app.get("/").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let html = res.text().await.unwrap();
    assert!(
        html.contains("Compliance scores, tracked over time."),
        "{html}"
    );
    assert!(
        html.contains("/pkg/tidemark.js"),
        "hydration script: {html}"
    );
    assert!(html.contains("/pkg/tidemark.css"), "stylesheet: {html}");

    let missing = app.get("/no/such/page").await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(missing.text().await.unwrap().contains("Page not found"));
}

#[tokio::test]
async fn unknown_v1_routes_answer_in_the_error_shape() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let res = app.get("/v1/nope").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"], "not_found");
    assert!(body["message"].as_str().unwrap().contains("openapi"));
}

mod binary {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    fn server_command(data_dir: &std::path::Path) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tidemark-server"));
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("TIDEMARK_DATA_DIR", data_dir)
            .env("RUST_LOG", "info");
        cmd
    }

    #[test]
    fn migrate_creates_the_sqlite_database_and_a_private_dev_key() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let out = server_command(dir.path()).arg("migrate").output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(dir.path().join("tidemark.db").exists());
        let mode = std::fs::metadata(dir.path().join("master.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("TIDEMARK_MASTER_KEY is not set"),
            "{stderr}"
        );
        assert!(!stderr.contains(&std::fs::read_to_string(dir.path().join("master.key")).unwrap()));
    }

    #[test]
    fn production_without_a_master_key_refuses_to_start() {
        let dir = tempfile::tempdir().unwrap();
        let out = server_command(dir.path())
            .env("TIDEMARK_ENV", "production")
            .arg("migrate")
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("TIDEMARK_MASTER_KEY is required"));
        assert!(!dir.path().join("tidemark.db").exists());
    }

    /// `serve` with another master key than the data was sealed under refuses to start,
    /// naming the key id, the column and the variables; with the previous key given, or
    /// with the documented override, it serves.
    #[test]
    fn a_wrong_master_key_is_refused_at_start() {
        use base64::Engine as _;
        let key = |byte: u8| base64::engine::general_purpose::STANDARD.encode([byte; 32]);
        let (sealed_under, other) = (key(1), key(2));
        let dir = tempfile::tempdir().unwrap();
        let out = server_command(dir.path())
            .env("TIDEMARK_MASTER_KEY", &sealed_under)
            .args([
                "license",
                "create",
                "--email",
                "ops@example.com",
                "--tier",
                "team",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );

        let serve = |env: &[(&str, &str)]| {
            let port = crate::common::free_port();
            let mut cmd = server_command(dir.path());
            cmd.env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"));
            for (k, v) in env {
                cmd.env(k, v);
            }
            let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    let mut err = String::new();
                    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err)
                        .unwrap();
                    return (Some(status), err);
                }
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    let _ = child.kill();
                    let _ = child.wait();
                    return (None, String::new());
                }
                assert!(Instant::now() < deadline, "neither served nor exited");
                std::thread::sleep(Duration::from_millis(50));
            }
        };
        let (exited, stderr) = serve(&[("TIDEMARK_MASTER_KEY", &other)]);
        assert!(exited.is_some_and(|s| !s.success()), "refused: {stderr}");
        let named = names_the_sealing_key(&stderr);
        assert!(named, "names the key id and the column: {stderr}");
        for variable in [
            "TIDEMARK_MASTER_KEY_PREVIOUS",
            "TIDEMARK_ALLOW_UNKNOWN_MASTER_KEYS",
        ] {
            assert!(stderr.contains(variable), "{variable}: {stderr}");
        }
        assert!(
            !stderr.contains(&other) && !stderr.contains(&sealed_under),
            "no key in the log"
        );
        assert_eq!(
            serve(&[("TIDEMARK_MASTER_KEY", &sealed_under)]).0,
            None,
            "its own key serves"
        );
        let rotating = [
            ("TIDEMARK_MASTER_KEY", other.as_str()),
            ("TIDEMARK_MASTER_KEY_PREVIOUS", sealed_under.as_str()),
        ];
        assert_eq!(
            serve(&rotating).0,
            None,
            "the sealing key as the previous one serves"
        );
        let recovery = [
            ("TIDEMARK_MASTER_KEY", other.as_str()),
            ("TIDEMARK_ALLOW_UNKNOWN_MASTER_KEYS", "1"),
        ];
        assert_eq!(serve(&recovery).0, None, "the documented override serves");
    }

    /// "key id <8 hex> (1 rows of licenses.key_ciphertext)" somewhere in `text`.
    fn names_the_sealing_key(text: &str) -> bool {
        text.match_indices("key id ").any(|(i, _)| {
            let rest = &text[i + 7..];
            rest.len() > 8
                && rest[..8].bytes().all(|b| b.is_ascii_hexdigit())
                && rest[8..].starts_with(" (1 rows of licenses.key_ciphertext)")
        })
    }

    #[test]
    fn sigterm_shuts_the_server_down_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let port = crate::common::free_port();
        let child = server_command(dir.path())
            .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "server never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "exit status {:?}", out.status);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("shut down cleanly"), "{stderr}");
    }
}

/// A sample's value in the exposition text, by its whole name-and-labels prefix.
use crate::common::metric_value as sample;

tidemark_store::test_each_backend! {
    async fn metrics_show_queues_sessions_pools_the_build_and_the_process(backend) {
        let closed = format!("http://127.0.0.1:{}/hook", crate::common::free_port());
        let (app, provider) = TestApp::spawn_with_oidc_and(
            backend,
            &[
                ("TIDEMARK_WEBHOOK_ALLOW_PRIVATE", "1"),
                ("TIDEMARK_WEBHOOK_RETRY_BASE_MS", "60000"),
                ("TIDEMARK_WRITES_PER_MINUTE", "2"),
            ],
        )
        .await;
        let (license, key) = app.with_key(tidemark_wire::Tier::Team).await;
        let mut admin = app.signed_in(&provider, &license.email).await;
        let res = admin.post_form("/api/create_webhook", &[("url", &closed), ("scan_pushed", "true")]).await;
        assert_eq!(res.status(), StatusCode::OK);
        // Pushes by outcome: one stored, its replay, one malformed, one more stored, one over
        // the writes limit (once it is spent, even a malformed push is only that).
        let first = crate::common::sample_push("api", 80.0, "2026-11-20T10:00:00Z");
        for (body, status) in [
            (&first, StatusCode::CREATED),
            (&first, StatusCode::CREATED),
            (&json!({"project_label": "api"}), StatusCode::UNPROCESSABLE_ENTITY),
            (&crate::common::sample_push("api", 81.0, "2026-11-20T11:00:00Z"), StatusCode::CREATED),
            (&crate::common::sample_push("api", 82.0, "2026-11-20T12:00:00Z"), StatusCode::TOO_MANY_REQUESTS),
        ] {
            assert_eq!(app.push(&key, body).await.status(), status);
        }

        // The deliveries of the two stored scans to the closed port fail once and wait a
        // minute for their retry.
        let text = crate::common::wait_for_async(std::time::Duration::from_secs(10), || async {
            let text = app.get("/metrics").await.text().await.unwrap();
            (sample(&text, r#"tidemark_outbox_failing{queue="webhook"}"#) == Some(2.0)).then_some(text)
        })
        .await
        .expect("the failed delivery shows");
        assert_eq!(sample(&text, r#"tidemark_outbox_pending{queue="webhook"}"#), Some(2.0));
        assert!(sample(&text, r#"tidemark_outbox_oldest_age_seconds{queue="webhook"}"#).unwrap() >= 0.0);
        assert!(sample(&text, r#"tidemark_outbox_pending{queue="mail"}"#).is_some(), "{text}");
        assert_eq!(sample(&text, "tidemark_sessions_active"), Some(1.0), "{text}");
        // The database's size, and no scan left for housekeeping to move to spans.
        assert!(sample(&text, "tidemark_database_size_bytes").unwrap() > 100_000.0, "{text}");
        assert_eq!(sample(&text, "tidemark_scans_stored_as_rows"), Some(0.0), "{text}");
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(sample(&text, &format!(r#"tidemark_build_info{{version="{version}"}}"#)), Some(1.0), "{text}");
        let pool = match backend {
            tidemark_store::Backend::Sqlite => "writer",
            tidemark_store::Backend::Postgres => "main",
        };
        assert!(sample(&text, &format!(r#"tidemark_db_pool_connections{{pool="{pool}",state="max"}}"#)).unwrap() >= 1.0, "{text}");
        assert!(sample(&text, &format!(r#"tidemark_db_pool_connections{{pool="{pool}",state="idle"}}"#)).is_some());
        assert!(sample(&text, "process_resident_memory_bytes").unwrap() > 1e6, "{text}");
        assert!(sample(&text, "process_open_fds").unwrap() > 3.0);
        assert!(sample(&text, "process_cpu_seconds_total").unwrap() > 0.0);
        let started = sample(&text, "process_start_time_seconds").unwrap();
        let now = chrono::Utc::now().timestamp() as f64;
        assert!(started <= now + 1.0 && started > now - 86_400.0 * 365.0, "{started}");
        assert!(text.trim_end().ends_with("# EOF"), "one well-formed exposition");

        for (outcome, code, n) in [
            ("created", "", 2.0),
            ("replayed", "", 1.0),
            ("refused", "rate_limit_exceeded", 1.0),
        ] {
            let series = format!(r#"tidemark_pushes_total{{outcome="{outcome}",code="{code}"}}"#);
            assert_eq!(sample(&text, &series), Some(n), "{series} in {text}");
        }
        let malformed = sample(&text, r#"tidemark_pushes_total{outcome="refused",code="invalid_request"}"#)
            .or_else(|| sample(&text, r#"tidemark_pushes_total{outcome="refused",code="invalid_json"}"#));
        assert_eq!(malformed, Some(1.0), "{text}");
        assert_eq!(sample(&text, r#"tidemark_rate_limited_total{limit="writes"}"#), Some(1.0), "{text}");
        let wait = sample(&text, &format!(r#"tidemark_db_pool_acquire_wait_seconds{{pool="{pool}"}}"#));
        assert!(wait.is_some_and(|w| (0.0..2.0).contains(&w)), "{text}");
        assert_eq!(sample(&text, "tidemark_push_body_bytes"), Some(0.0), "nothing held between pushes");
        match backend {
            tidemark_store::Backend::Sqlite => {
                assert_eq!(sample(&text, "tidemark_push_queue_depth"), Some(0.0), "{text}");
                // Three pushes reached the committer, each alone: not the malformed one, nor the
                // one refused before its body was read because the budget was spent.
                assert_eq!(sample(&text, r#"tidemark_push_group_size_bucket{le="1.0"}"#), Some(3.0), "{text}");
                assert_eq!(sample(&text, "tidemark_push_group_size_sum"), Some(3.0), "{text}");
                assert_eq!(sample(&text, r#"tidemark_push_group_size_bucket{le="+Inf"}"#), Some(3.0), "{text}");
                // Pushes one at a time find the writer idle: each is decided there unless its
                // plan beside the queue was ready first, and then it was written as planned.
                let early = sample(&text, "tidemark_push_decided_early_total");
                assert!(early.is_some_and(|n| n <= 2.0), "{text}");
                assert_eq!(sample(&text, "tidemark_push_decided_again_total"), Some(0.0), "{text}");
            }
            tidemark_store::Backend::Postgres => {
                assert!(!text.contains("tidemark_push_group_size"), "no committer on PostgreSQL");
                assert!(!text.contains("tidemark_push_decided"), "no committer on PostgreSQL");
            }
        }

        // The database is read at most every few seconds, whatever the scrape rate: a second
        // session shows in a later sample, not in the next scrape.
        let sampled_at = std::time::Instant::now();
        let _second = app.signed_in(&provider, &license.email).await;
        let soon = sample(&app.get("/metrics").await.text().await.unwrap(), "tidemark_sessions_active");
        if sampled_at.elapsed() < std::time::Duration::from_secs(4) {
            assert_eq!(soon, Some(1.0), "a scrape within the interval reads no database");
        }
        let later = crate::common::wait_for_async(std::time::Duration::from_secs(10), || async {
            let text = app.get("/metrics").await.text().await.unwrap();
            (sample(&text, "tidemark_sessions_active") == Some(2.0)).then_some(())
        })
        .await;
        assert!(later.is_some(), "the next sample sees the second session");
    }
}

/// Every series the example alerting rules name is one the server exposes, so the rules
/// cannot drift from the metrics (promtool checks their syntax and behaviour in `make test`).
#[tokio::test]
async fn the_example_alerting_rules_name_only_exposed_series() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    // Request metrics appear with the first request answered.
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
    let text = app.get("/metrics").await.text().await.unwrap();
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let rules = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/prometheus/alerts.yml"
    ))
    .expect("deploy/prometheus/alerts.yml");
    let mut named = Vec::new();
    for word in rules.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if (word.starts_with("tidemark_") || word.starts_with("process_")) && !named.contains(&word)
        {
            named.push(word);
        }
    }
    assert!(
        named.len() >= 8,
        "the rules name the series they watch: {named:?}"
    );
    for name in named {
        let family = ["_total", "_bucket", "_sum", "_count", "_info"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .unwrap_or(name);
        assert!(
            families.contains(&name) || families.contains(&family),
            "alerts.yml names {name}, which /metrics does not expose: {families:?}"
        );
    }
}

/// `serve` runs with the allocator settings that keep its memory down (issue 48), in the
/// same process the operator started, and an operator's own `GLIBC_TUNABLES` wins.
#[test]
fn serve_runs_with_the_allocator_settings_unless_the_operator_chose_others() {
    let dir = tempfile::tempdir().unwrap();
    // What the server logs it runs with, and whether the process started is the one that
    // serves with tunables set (its id is what an init system watches).
    let serve = |tunables: Option<&str>| {
        let port = common::free_port();
        let log = dir.path().join(format!("serve-{port}.log"));
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark-server"));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("TIDEMARK_DATA_DIR", dir.path())
            .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "info")
            .arg("serve")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        if let Some(tunables) = tunables {
            command.env("GLIBC_TUNABLES", tunables);
        }
        let mut child = command.spawn().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the server never listened"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let environ = std::fs::read(format!("/proc/{}/environ", child.id())).unwrap();
        let same_process = environ
            .split(|b| *b == 0)
            .any(|v| v.starts_with(b"GLIBC_TUNABLES="));
        child.kill().unwrap();
        child.wait().unwrap();
        let said = std::fs::read_to_string(&log).unwrap();
        let line = said
            .lines()
            .find(|l| l.contains("allocator"))
            .unwrap_or_else(|| panic!("no allocator line in {said}"))
            .to_owned();
        (same_process, line)
    };
    let (same_process, line) = serve(None);
    assert!(same_process, "the started process serves with the tunables");
    assert!(
        line.contains(&format!("GLIBC_TUNABLES={} ", server::allocator::TUNABLES)),
        "{line}"
    );
    let own = "glibc.malloc.arena_max=4";
    let (_, line) = serve(Some(own));
    assert!(line.contains(&format!("GLIBC_TUNABLES={own} ")), "{line}");
}

/// `healthcheck` (the container image's HEALTHCHECK) says whether a server answers on the
/// address it is configured to listen on, with no master key or database of its own.
#[test]
fn healthcheck_exits_zero_only_while_the_server_answers() {
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let probe = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_tidemark-server"))
            .env_clear()
            .env("LEPTOS_SITE_ADDR", format!("0.0.0.0:{port}"))
            .args(["--json", "healthcheck"])
            .output()
            .unwrap()
    };
    let before = probe();
    assert!(!before.status.success(), "nothing listens yet");
    assert!(
        String::from_utf8_lossy(&before.stdout).contains("\"error\""),
        "{before:?}"
    );
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_tidemark-server"))
        .env("TIDEMARK_DATA_DIR", dir.path())
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .arg("serve")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let answered = loop {
        let answer = probe();
        if answer.status.success() || std::time::Instant::now() > deadline {
            break answer;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(answered.status.success(), "{answered:?}");
    let said: serde_json::Value = serde_json::from_slice(&answered.stdout).unwrap();
    assert_eq!(said["url"], format!("http://127.0.0.1:{port}/healthz"));
    assert_eq!(said["healthy"], true);
}
