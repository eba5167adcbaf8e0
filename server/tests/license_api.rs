//! `/v1/license/*` and bundle downloads, on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common;

use std::time::{Duration, Instant};

use common::smtp::SmtpSink;
use common::{assert_error, free_port, wait_for_async, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_domain::secrets::sha256_hex;
use tidemark_wire::Tier;

async fn validate(app: &TestApp, hash: &str) -> reqwest::Response {
    app.client
        .post(app.url("/v1/license/validate"))
        .header("X-License-Key-Hash", hash)
        .send()
        .await
        .unwrap()
}

/// The answer's fields but `verdict`, which is present and signed (tests/verdicts.rs checks
/// what it says).
async fn answer_without_verdict(res: reqwest::Response) -> Value {
    let mut body: Value = res.json().await.unwrap();
    let verdict = body.as_object_mut().unwrap().remove("verdict");
    assert!(
        verdict
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|v| v.split('.').count() == 3),
        "a compact JWS: {verdict:?}"
    );
    body
}

tidemark_store::test_each_backend! {
    async fn validation_reports_tier_features_expiry_and_the_latest_bundle(backend) {
        let app = TestApp::spawn(backend).await;
        let expires = server::operator::cli::parse_timestamp("2031-05-01T12:00:00+02:00").unwrap();
        let license = app
            .create_license_with(Tier::Agency, Some(expires), None)
            .await;

        let body = answer_without_verdict(validate(&app, &license.hash).await).await;
        assert_eq!(
            body,
            json!({
                "valid": true,
                "tier": "agency",
                "features": ["hosted_dashboard", "drift_detection", "custom_frameworks"],
                "expiry": "2031-05-01T10:00:00Z",
                "bundle_url": null,
                "bundle_checksum": null
            }),
            "{backend:?}"
        );

        let bytes = b"profiles: [cis-gcp-2.0]\n".repeat(1000);
        let published =
            tidemark_services::bundles::publish(&app.db, &app.base_url, "profiles-2026.11.tar", &bytes, &tidemark_store::testing::audit())
                .await
                .unwrap();
        let upper = license.hash.to_ascii_uppercase();
        let res = validate(&app, &upper).await;
        assert_eq!(res.status(), StatusCode::OK, "upper-case hex is accepted");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["bundle_url"], published.bundle_url);
        assert_eq!(
            body["bundle_checksum"],
            format!("sha256:{}", sha256_hex(&bytes))
        );

        // The checksum is of exactly the bytes served, and only a valid license may fetch them.
        let url = body["bundle_url"].as_str().unwrap();
        let res = app
            .client
            .get(url)
            .header("X-License-Key-Hash", &license.hash)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let served = res.bytes().await.unwrap();
        assert_eq!(
            format!("sha256:{}", sha256_hex(&served)),
            body["bundle_checksum"]
        );
        assert_error(
            app.client.get(url).send().await.unwrap(),
            StatusCode::BAD_REQUEST,
            "invalid_license_hash",
        )
        .await;
        assert_error(
            app.client
                .get(url)
                .header("X-License-Key-Hash", "0".repeat(64))
                .send()
                .await
                .unwrap(),
            StatusCode::NOT_FOUND,
            "license_not_found",
        )
        .await;
        assert_error(
            app.client
                .get(app.url("/v1/bundles/bnd_nope"))
                .header("X-License-Key-Hash", &license.hash)
                .send()
                .await
                .unwrap(),
            StatusCode::NOT_FOUND,
            "not_found",
        )
        .await;
        app.set_suspended(&license, true).await;
        assert_error(
            app.client
                .get(url)
                .header("X-License-Key-Hash", &license.hash)
                .send()
                .await
                .unwrap(),
            StatusCode::FORBIDDEN,
            "license_inactive",
        )
        .await;
    }
}

tidemark_store::test_each_backend! {
    async fn expired_and_suspended_licenses_validate_as_not_valid(backend) {
        let app = TestApp::spawn(backend).await;
        tidemark_services::bundles::publish(&app.db, &app.base_url, "b.tar", b"bundle", &tidemark_store::testing::audit())
            .await
            .unwrap();
        let expired = app
            .create_license_with(Tier::Team, Some(1_700_000_000_000), None)
            .await;
        let body = answer_without_verdict(validate(&app, &expired.hash).await).await;
        assert_eq!(
            body,
            json!({"valid": false, "tier": "team", "features": [], "expiry": "2023-11-14T22:13:20Z",
                   "bundle_url": null, "bundle_checksum": null}),
            "{backend:?}"
        );

        let suspended = app.create_license(Tier::Enterprise).await;
        app.set_suspended(&suspended, true).await;
        let res = validate(&app, &suspended.hash).await;
        assert_eq!(res.status(), StatusCode::OK);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["valid"], false);
        assert_eq!(body["tier"], "enterprise");
        assert_eq!(body["features"], json!([]));

        app.set_suspended(&suspended, false).await;
        let body = answer_without_verdict(validate(&app, &suspended.hash).await).await;
        assert_eq!(body["valid"], true);
        assert_eq!(body["features"].as_array().unwrap().len(), 4);
    }
}

tidemark_store::test_each_backend! {
    async fn unknown_and_malformed_license_hashes(backend) {
        let app = TestApp::spawn(backend).await;
        assert_error(
            validate(&app, &"a".repeat(64)).await,
            StatusCode::NOT_FOUND,
            "license_not_found",
        )
        .await;
        for bad in ["", "abc", &"z".repeat(64), &"a".repeat(65)] {
            assert_error(
                validate(&app, bad).await,
                StatusCode::BAD_REQUEST,
                "invalid_license_hash",
            )
            .await;
        }
        let res = app
            .client
            .post(app.url("/v1/license/validate"))
            .send()
            .await
            .unwrap();
        assert_error(res, StatusCode::BAD_REQUEST, "invalid_license_hash").await;
        // The raw key in place of its hash is refused as malformed, never looked up.
        let license = app.create_license(Tier::Team).await;
        assert_error(
            validate(&app, &license.key).await,
            StatusCode::BAD_REQUEST,
            "invalid_license_hash",
        )
        .await;
    }
}

tidemark_store::test_each_backend! {
    async fn activation_issues_a_key_per_machine(backend) {
        let app = TestApp::spawn(backend).await;
        let license = app.create_license(Tier::Team).await;
        let activate = |hash: String, body: Value| {
            let (client, url) = (app.client.clone(), app.url("/v1/license/activate"));
            async move {
                client
                    .post(url)
                    .header("X-License-Key-Hash", hash)
                    .json(&body)
                    .send()
                    .await
                    .unwrap()
            }
        };
        let res = activate(license.hash.clone(), json!({"machine": "ci-main"})).await;
        assert_eq!(res.status(), StatusCode::CREATED, "{backend:?}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["account_id"], license.account_id.as_str());
        assert_eq!(body["tier"], "team");
        let key_a = body["api_key"].as_str().unwrap().to_owned();
        assert!(
            key_a.starts_with("svc_api_") && key_a.len() >= 48,
            "{key_a}"
        );
        let key_b = app.activate(&license, "laptop").await;
        assert_ne!(key_a, key_b);
        assert_eq!(app.count("api_keys").await, 2);

        assert_error(
            activate("f".repeat(64), json!({"machine": "x"})).await,
            StatusCode::NOT_FOUND,
            "license_not_found",
        )
        .await;
        assert_error(
            activate("nope".into(), json!({"machine": "x"})).await,
            StatusCode::BAD_REQUEST,
            "invalid_license_hash",
        )
        .await;
        let msg = assert_error(
            activate(license.hash.clone(), json!({"machine": ""})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
        )
        .await;
        assert!(msg.contains("machine"), "{msg}");
        assert_error(
            activate(license.hash.clone(), json!({})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
        )
        .await;
        let res = app
            .client
            .post(app.url("/v1/license/activate"))
            .header("X-License-Key-Hash", &license.hash)
            .header("Content-Type", "text/plain")
            .body("machine=x")
            .send()
            .await
            .unwrap();
        assert_error(
            res,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        )
        .await;

        app.set_suspended(&license, true).await;
        let msg = assert_error(
            activate(license.hash.clone(), json!({"machine": "x"})).await,
            StatusCode::FORBIDDEN,
            "license_inactive",
        )
        .await;
        assert!(msg.contains("suspended"), "{msg}");
        assert_eq!(
            app.count("api_keys").await,
            2,
            "{backend:?}: refusals store nothing"
        );
    }
}

async fn resend(app: &TestApp, email: &str, forwarded_for: Option<&str>) -> reqwest::Response {
    let mut req = app
        .client
        .post(app.url("/v1/license/resend"))
        .json(&json!({ "email": email }));
    if let Some(xff) = forwarded_for {
        req = req.header("X-Forwarded-For", xff);
    }
    req.send().await.unwrap()
}

tidemark_store::test_each_backend! {
    async fn resend_answers_the_same_whether_or_not_a_license_exists(backend) {
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_RESEND_PER_MINUTE", "100")]).await;
        let license = app.create_license(Tier::Team).await;
        let known = resend(&app, &license.email.to_uppercase(), None).await;
        let unknown = resend(&app, "nobody@example.org", None).await;
        assert_eq!(known.status(), StatusCode::OK);
        assert_eq!(unknown.status(), StatusCode::OK);
        let known: Value = known.json().await.unwrap();
        let unknown: Value = unknown.json().await.unwrap();
        assert_eq!(known, unknown);
        assert_eq!(
            known,
            json!({"ok": true, "message": "If a license exists for this address, it has been sent."})
        );
        // Both took the same path: one queued message each.
        assert_eq!(app.count("mail_outbox").await, 2, "{backend:?}");

        let msg = assert_error(
            resend(&app, "not-an-address", None).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
        )
        .await;
        assert!(msg.contains("email"), "{msg}");
        assert_eq!(app.count("mail_outbox").await, 2);

        // The background sender writes the message as an .eml file (no SMTP configured):
        // only the known address gets one, carrying key, tier and expiry.
        let outbox = app.data_dir.path().join("outbox");
        let mail = wait_for(Duration::from_secs(20), || {
            let files: Vec<_> = std::fs::read_dir(&outbox)
                .ok()?
                .filter_map(Result::ok)
                .collect();
            (!files.is_empty()).then_some(files)
        })
        .await
        .expect("a mail file");
        assert_eq!(
            mail.len(),
            1,
            "{backend:?}: no mail for the unknown address"
        );
        let text = std::fs::read_to_string(mail[0].path()).unwrap();
        assert!(text.contains(&license.key), "the mail carries the key");
        assert!(
            text.contains("Tier: team") && text.contains("Expires: "),
            "{text}"
        );
        assert!(text.contains(&format!("To: {}", license.email)), "{text}");
    }
}

async fn wait_for<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

tidemark_store::test_each_backend! {
    async fn resend_allows_three_a_minute_per_ip_then_bans_for_fifteen_minutes(backend) {
        let app = TestApp::spawn(backend).await;
        for _ in 0..3 {
            assert_eq!(
                resend(&app, "a@example.com", None).await.status(),
                StatusCode::OK
            );
        }
        let res = resend(&app, "a@example.com", None).await;
        let retry: u64 = res.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (899..=900).contains(&retry),
            "{backend:?}: the 4th starts a 15-minute ban: {retry}"
        );
        let msg = assert_error(res, StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded").await;
        assert!(
            msg.contains("3 per minute") && msg.contains("15 minutes"),
            "{msg}"
        );

        // The ban is not a refilling bucket: even once the minute's events are gone, every
        // request (valid or not) is refused until the ban ends.
        tidemark_store::on_db!(&app.db, pool => {
            sqlx::query("DELETE FROM rate_events").execute(pool).await.map(|_| ())
        })
        .unwrap();
        assert_error(
            resend(&app, "b@example.com", None).await,
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_exceeded",
        )
        .await;
        assert_error(
            resend(&app, "garbage", None).await,
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_exceeded",
        )
        .await;
        assert_eq!(app.count("mail_outbox").await, 3, "{backend:?}");

        // When the ban has run out, requests are served again.
        tidemark_store::on_db!(&app.db, pool => {
            sqlx::query("UPDATE rate_bans SET until = 1").execute(pool).await.map(|_| ())
        })
        .unwrap();
        assert_eq!(
            resend(&app, "a@example.com", None).await.status(),
            StatusCode::OK
        );
    }
}

#[tokio::test]
async fn forwarded_addresses_count_only_behind_trusted_proxies() {
    // Untrusted peer: X-Forwarded-For is ignored, so rotating it does not dodge the limit.
    let app = TestApp::spawn_with(
        tidemark_store::Backend::Sqlite,
        &[("TIDEMARK_RESEND_PER_MINUTE", "2")],
    )
    .await;
    for i in 0..2 {
        assert_eq!(
            resend(&app, "a@example.com", Some(&format!("198.51.100.{i}")))
                .await
                .status(),
            StatusCode::OK
        );
    }
    assert_error(
        resend(&app, "a@example.com", Some("198.51.100.99")).await,
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limit_exceeded",
    )
    .await;
    assert_eq!(
        app.metric(r#"tidemark_rate_limited_total{limit="resend"}"#)
            .await,
        Some(1.0)
    );

    // Behind a trusted proxy (loopback here), each client address has its own budget.
    let app = TestApp::spawn_with(
        tidemark_store::Backend::Sqlite,
        &[
            ("TIDEMARK_RESEND_PER_MINUTE", "2"),
            ("TIDEMARK_TRUSTED_PROXIES", "127.0.0.0/8"),
        ],
    )
    .await;
    for _ in 0..2 {
        assert_eq!(
            resend(&app, "a@example.com", Some("203.0.113.5"))
                .await
                .status(),
            StatusCode::OK
        );
    }
    assert_error(
        resend(&app, "a@example.com", Some("203.0.113.5")).await,
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limit_exceeded",
    )
    .await;
    // A client cannot pose as another by prepending an address: the right-most untrusted hop counts.
    assert_error(
        resend(&app, "a@example.com", Some("192.0.2.1, 203.0.113.5")).await,
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limit_exceeded",
    )
    .await;
    assert_eq!(
        resend(&app, "a@example.com", Some("203.0.113.6"))
            .await
            .status(),
        StatusCode::OK
    );
}

tidemark_store::test_each_backend! {
    /// A real SMTP server (Python's aiosmtpd) receives the mail, and a message queued while
    /// the mail server was down is delivered after the Tidemark server restarts.
    async fn resend_mail_reaches_a_real_smtp_server_and_survives_a_restart(backend) {
        let port = free_port();
        let smtp_url = format!("smtp://127.0.0.1:{port}");
        // The SMTP server is not running yet: delivery fails and the message stays queued.
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_SMTP_URL", &smtp_url)]).await;
        let license = app.create_license(Tier::Agency).await;
        assert_eq!(
            resend(&app, &license.email, None).await.status(),
            StatusCode::OK
        );
        let db = app.db.clone();
        let failed_once = wait_for_async(Duration::from_secs(20), || {
            let db = db.clone();
            async move {
                let row: Option<(i64, Option<String>)> = tidemark_store::on_db!(&db, pool => {
                    sqlx::query_as("SELECT attempts, last_error FROM mail_outbox").fetch_optional(pool).await
                })
                .unwrap();
                row.filter(|(attempts, err)| *attempts >= 1 && err.is_some())
            }
        })
        .await;
        assert!(
            failed_once.is_some(),
            "{backend:?}: the first attempt fails while SMTP is down"
        );
        assert_eq!(
            tidemark_store::outbox::pending_count(&app.db)
                .await
                .unwrap(),
            1
        );

        let sink = SmtpSink::start(port);
        let app = app.restart(&[]).await;
        let received = wait_for_async(Duration::from_secs(30), || {
            let text = sink.output();
            let found = text.contains(&license.key);
            async move { found.then_some(text) }
        })
        .await
        .unwrap_or_else(|| {
            panic!(
                "{backend:?}: no mail delivered; sink saw: {}",
                sink.output()
            )
        });
        assert!(received.contains("Tier: agency"), "{received}");
        assert!(received.contains("Your Tidemark license"), "{received}");
        let db = app.db.clone();
        let delivered =
            wait_for_async(Duration::from_secs(10), || {
                let db = db.clone();
                async move {
                    (tidemark_store::outbox::pending_count(&db).await.unwrap() == 0).then_some(())
                }
            })
            .await;
        assert!(delivered.is_some(), "marked as sent");
    }
}

/// `valid` as `POST /v1/license/validate` answers it for `hash` (and a machine, if named).
async fn is_valid(app: &TestApp, hash: &str, machine: Option<&str>) -> bool {
    let mut req = app
        .client
        .post(app.url("/v1/license/validate"))
        .header("X-License-Key-Hash", hash);
    if let Some(machine) = machine {
        req = req.header("X-Machine-Fingerprint", machine);
    }
    let body: Value = req.send().await.unwrap().json().await.unwrap();
    body["valid"].as_bool().unwrap()
}

/// Validation may be answered from memory for TIDEMARK_VALIDATION_CACHE_MS, never longer;
/// pushes are never answered from it.
#[tokio::test]
async fn validation_reflects_operator_changes_within_the_cache_time() {
    let app = TestApp::spawn_with(
        tidemark_store::Backend::Sqlite,
        &[("TIDEMARK_VALIDATION_CACHE_MS", "3000")],
    )
    .await;
    let license = app.create_license(Tier::Team).await;
    let key = app.activate(&license, "ci").await;
    let valid = || is_valid(&app, &license.hash, None);
    assert!(valid().await);
    app.set_suspended(&license, true).await;
    assert!(valid().await, "answered from memory within the cache time");
    // The push path reads the database: the suspension applies at once.
    let res = app
        .push(
            &key,
            &common::sample_push("api", 1.0, "2026-11-22T10:00:00Z"),
        )
        .await;
    assert_error(res, StatusCode::FORBIDDEN, "license_inactive").await;
    tokio::time::sleep(Duration::from_millis(3100)).await;
    assert!(
        !valid().await,
        "the suspension shows once the cache time has passed"
    );
}

/// A validation the cache holds is answered ahead of the router (the hottest request skips
/// what only the dashboard and the router need), and that answer is the handler's, header for
/// header, counted under the same route; a question the cache does not hold, or one the
/// handler refuses, still reaches the handler.
#[tokio::test]
async fn a_kept_validation_is_answered_ahead_of_the_router_as_the_handler_answers_it() {
    let app = TestApp::spawn_with(
        tidemark_store::Backend::Sqlite,
        &[("TIDEMARK_VALIDATION_CACHE_MS", "60000")],
    )
    .await;
    let license = app.create_license(Tier::Team).await;
    let early = r#"tidemark_http_requests_answered_early_total{route="/v1/license/validate"}"#;
    let answered =
        r#"tidemark_http_requests_total{method="POST",route="/v1/license/validate",status="200"}"#;
    let shape = |res: &reqwest::Response| {
        let mut headers: Vec<(String, String)> = res
            .headers()
            .iter()
            .filter(|(name, _)| !["date", "x-request-id"].contains(&name.as_str()))
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        headers.sort();
        (res.status(), headers)
    };
    // A machine each: the first question of each round is the handler's.
    for (machine, accept) in [("laptop-1", None), ("laptop-2", Some("gzip, br"))] {
        let ask = || {
            let req = app
                .client
                .post(app.url("/v1/license/validate?from=scanner"))
                .header("X-License-Key-Hash", &license.hash)
                .header("X-Machine-Fingerprint", machine);
            match accept {
                Some(encodings) => req.header("Accept-Encoding", encodings),
                None => req,
            }
            .send()
        };
        let before = app.metric(early).await.unwrap_or(0.0);
        let first = ask().await.unwrap();
        let (first_shape, first_body) = (shape(&first), first.bytes().await.unwrap());
        let second = ask().await.unwrap();
        let (second_shape, second_body) = (shape(&second), second.bytes().await.unwrap());
        assert_eq!(first_shape.0, StatusCode::OK);
        assert_eq!(second_shape, first_shape, "accept-encoding {accept:?}");
        assert_eq!(second_body, first_body, "the kept answer, byte for byte");
        assert_eq!(
            app.metric(early).await,
            Some(before + 1.0),
            "the second answer came from ahead of the router"
        );
    }
    assert_eq!(
        app.metric(answered).await,
        Some(4.0),
        "counted under its route"
    );
    // Refusals are the handler's: a malformed fingerprint, a GET, an unknown licence.
    let res = app
        .client
        .post(app.url("/v1/license/validate"))
        .header("X-License-Key-Hash", &license.hash)
        .header("X-Machine-Fingerprint", "not ok")
        .send()
        .await
        .unwrap();
    assert_error(res, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
    let res = app
        .client
        .get(app.url("/v1/license/validate"))
        .header("X-License-Key-Hash", &license.hash)
        .send()
        .await
        .unwrap();
    assert_error(res, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;
    let unknown = sha256_hex(b"no such licence");
    assert_error(
        validate(&app, &unknown).await,
        StatusCode::NOT_FOUND,
        "license_not_found",
    )
    .await;
    assert_eq!(app.metric(early).await, Some(2.0));
}

/// A whole answer kept for one machine lives no longer than the licence read it was built
/// from: a licence read early in the window and answered late for a new machine still shows
/// a suspension once the window after that read has passed (not a window after the answer).
#[tokio::test]
async fn a_kept_answer_ends_with_the_read_it_was_built_from() {
    let app = TestApp::spawn_with(
        tidemark_store::Backend::Sqlite,
        &[("TIDEMARK_VALIDATION_CACHE_MS", "3000")],
    )
    .await;
    let license = app.create_license(Tier::Team).await;
    let valid = |machine| is_valid(&app, &license.hash, Some(machine));
    let started = std::time::Instant::now();
    assert!(valid("first").await, "reads the licence and keeps it");
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(valid("second").await, "built from the kept licence");
    app.set_suspended(&license, true).await;
    tokio::time::sleep(Duration::from_millis(3200).saturating_sub(started.elapsed())).await;
    assert!(
        !valid("second").await,
        "the suspension shows a window after the licence was read"
    );
}

tidemark_store::test_each_backend! {
    /// Resend requests for one address beyond its hourly cap get the same answer, and the
    /// extra mails are dropped at delivery: the inbox gets the cap, no more.
    async fn resend_mail_to_one_address_is_capped_per_hour(backend) {
        let port = free_port();
        let sink = SmtpSink::start(port);
        let smtp_url = format!("smtp://127.0.0.1:{port}");
        let app = TestApp::spawn_with(
            backend,
            &[
                ("TIDEMARK_SMTP_URL", &smtp_url),
                ("TIDEMARK_RESEND_PER_RECIPIENT_PER_HOUR", "2"),
                ("TIDEMARK_RESEND_PER_MINUTE", "100"),
            ],
        )
        .await;
        let license = app.create_license(Tier::Team).await;
        let mut answers = Vec::new();
        for _ in 0..4 {
            let res = resend(&app, &license.email, None).await;
            assert_eq!(res.status(), StatusCode::OK);
            answers.push(res.text().await.unwrap());
        }
        answers.dedup();
        assert_eq!(answers.len(), 1, "every request answered alike: {answers:?}");
        let db = app.db.clone();
        let outcomes = wait_for_async(Duration::from_secs(30), || {
            let db = db.clone();
            async move {
                let rows: Vec<(Option<String>,)> = tidemark_store::on_db!(&db, pool => {
                    sqlx::query_as("SELECT outcome FROM mail_outbox WHERE sent_at IS NOT NULL ORDER BY outcome")
                        .fetch_all(pool)
                        .await
                })
                .unwrap();
                (rows.len() == 4).then_some(rows)
            }
        })
        .await
        .unwrap_or_else(|| panic!("{backend:?}: the sender did not finish the four messages"));
        let outcomes: Vec<String> = outcomes.into_iter().filter_map(|(o,)| o).collect();
        assert_eq!(outcomes, ["capped", "capped", "delivered", "delivered"], "{backend:?}");
        let delivered = sink.output().matches(license.key.as_str()).count();
        assert_eq!(delivered, 2, "{backend:?}: {}", sink.output());
    }
}

/// Behind a trusted proxy, IPv6 clients are counted per /64 (one subscriber holds a whole
/// /64), and the standard `Forwarded` header names the client like `X-Forwarded-For`.
#[tokio::test]
async fn resend_counts_ipv6_clients_per_64_and_reads_forwarded() {
    let app = TestApp::spawn_with(
        tidemark_store::Backend::Sqlite,
        &[("TIDEMARK_TRUSTED_PROXIES", "127.0.0.1")],
    )
    .await;
    let from = |forwarded: &str| {
        app.client
            .post(app.url("/v1/license/resend"))
            .header("Forwarded", forwarded)
            .json(&json!({ "email": "a@example.com" }))
            .send()
    };
    // Three addresses of one /64 share its budget of three; the fourth is refused.
    for client in [
        "2001:db8:1:2::1",
        "2001:db8:1:2::2",
        "2001:db8:1:2:ffff:ffff:ffff:ffff",
    ] {
        let res = from(&format!("for=\"[{client}]:4711\"")).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{client}");
    }
    let res = from("for=\"[2001:db8:1:2::99]\"").await.unwrap();
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    // The neighbouring /64 is someone else.
    let res = from("for=\"[2001:db8:1:3::1]\"").await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}
