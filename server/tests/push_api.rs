//! `POST /v1/dashboard/push`: every rule of the contract, on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common;

use common::{assert_error, sample_push, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_store::on_db;
use tidemark_wire::Tier;

tidemark_store::test_each_backend! {
    async fn a_first_push_creates_the_project_and_the_next_one_chains_its_delta(backend) {
        let app = TestApp::spawn_with(
            backend,
            &[("TIDEMARK_DASHBOARD_URL", "https://dash.example.com")],
        )
        .await;
        let (_, key) = app.with_key(Tier::Team).await;

        let res = app
            .push(
                &key,
                &sample_push("Payments API (prod)", 80.0, "2026-11-22T11:15:30+01:00"),
            )
            .await;
        assert_eq!(res.status(), StatusCode::CREATED, "{backend:?}");
        let first: Value = res.json().await.unwrap();
        let project_id = first["project_id"].as_str().unwrap().to_owned();
        assert!(
            tidemark_wire::ids::ProjectId::has_shape(&project_id),
            "{project_id}"
        );
        assert_eq!(first["scan_id"], "20261122-101530-payments-api-prod");
        assert_eq!(first["score_delta"], 0.0);
        assert_eq!(
            first["dashboard_url"],
            format!("https://dash.example.com/projects/{project_id}/scans/20261122-101530-payments-api-prod")
        );

        let second: Value = app
            .push(
                &key,
                &sample_push("Payments API (prod)", 72.5, "2026-11-23T08:00:00Z"),
            )
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(
            second["project_id"],
            project_id.as_str(),
            "same label, same project"
        );
        assert_eq!(second["score_delta"], -7.5, "a regression is negative");
        assert_eq!(app.count("scans").await, 2);
        assert_eq!(app.count("projects").await, 1);
        // Findings are kept apart from the scan record, as spans of its branch: the second
        // scan's two findings are the first's, stored once.
        assert_eq!(app.count("finding_spans").await, 2);
        assert_eq!(app.count("findings").await, 0);
    }
}

#[tokio::test]
async fn labels_are_compared_exactly() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let (_, key) = app.with_key(Tier::Agency).await;
    let a = app
        .push_json(&key, &sample_push("web", 50.0, "2026-11-22T10:00:00Z"))
        .await;
    let b = app
        .push_json(&key, &sample_push("Web", 50.0, "2026-11-22T10:00:00Z"))
        .await;
    assert_ne!(a["project_id"], b["project_id"]);
}

tidemark_store::test_each_backend! {
    async fn a_taken_scan_id_gets_a_numbered_suffix(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Team).await;
        let at = "2026-11-22T10:00:00Z";
        let ids: Vec<String> = {
            let mut ids = Vec::new();
            for score in [10.0, 20.0, 30.0] {
                let body = app.push_json(&key, &sample_push("api", score, at)).await;
                ids.push(body["scan_id"].as_str().unwrap().to_owned());
            }
            ids
        };
        assert_eq!(
            ids,
            [
                "20261122-100000-api",
                "20261122-100000-api-2",
                "20261122-100000-api-3"
            ],
            "{backend:?}"
        );
    }
}

tidemark_store::test_each_backend! {
    /// Retries are replays; while the write budget is spent only a byte-identical retry is
    /// (decisions.md, 2026-11-24), and anything else is refused before it is parsed.
    async fn a_retried_push_is_answered_again_without_a_second_entry(backend) {
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_WRITES_PER_MINUTE", "4")]).await;
        let (_, key) = app.with_key(Tier::Team).await;
        let send_text = |text: String| {
            let req = app
                .client
                .post(app.url("/v1/dashboard/push"))
                .header("X-API-Key", &key)
                .header("Content-Type", "application/json")
                .body(text);
            async move { req.send().await.unwrap() }
        };
        let on_feature = json!({"branch": "feature", "default_branch": "main"});
        let mut feature = sample_push("api", 70.0, "2026-11-20T10:00:00Z");
        feature["git"] = on_feature;
        let feature_text = serde_json::to_string(&feature).unwrap();
        let feature_first: Value = send_text(feature_text.clone()).await.json().await.unwrap();
        app.push(&key, &sample_push("api", 90.0, "2026-11-21T10:00:00Z")).await;
        let body = sample_push("api", 91.0, "2026-11-22T10:00:00Z");
        let first = app.push(&key, &body).await;
        assert_eq!(first.status(), StatusCode::CREATED);
        let first: Value = first.json().await.unwrap();

        // With budget left (3 of 4 used): the same JSON value, written differently (key
        // order, whitespace, an unknown field), is a replay.
        let mut respelled = body.clone();
        respelled["client_version"] = json!("1.2.3");
        let res = send_text(serde_json::to_string_pretty(&respelled).unwrap()).await;
        assert_eq!(res.status(), StatusCode::CREATED, "{backend:?}");
        assert_eq!(res.json::<Value>().await.unwrap(), first);
        assert_eq!(app.count("scans").await, 3);

        // The last write of the minute.
        let last_body = sample_push("api", 92.0, "2026-11-23T10:00:00Z");
        let last_text = serde_json::to_string(&last_body).unwrap();
        let last = send_text(last_text.clone()).await;
        assert_eq!(last.status(), StatusCode::CREATED);
        let last: Value = last.json().await.unwrap();

        // The budget is spent: byte-identical retries of a line's latest scan are answered
        // as before, without using budget...
        for _ in 0..3 {
            let res = send_text(last_text.clone()).await;
            assert_eq!(res.status(), StatusCode::CREATED, "{backend:?}");
            assert_eq!(res.json::<Value>().await.unwrap(), last);
        }
        let res = send_text(feature_text).await;
        assert_eq!(res.status(), StatusCode::CREATED, "the feature branch's latest scan too");
        assert_eq!(res.json::<Value>().await.unwrap(), feature_first);
        // ... but a re-spelled retry, a body that is not even JSON, and a new scan are refused
        // before their bodies are parsed.
        let mut respelled = last_body.clone();
        respelled["client_version"] = json!("1.2.3");
        for text in [
            serde_json::to_string_pretty(&respelled).unwrap(),
            "this is not JSON".to_owned(),
            serde_json::to_string(&sample_push("api", 93.0, "2026-11-24T10:00:00Z")).unwrap(),
        ] {
            let res = send_text(text).await;
            assert!(res.headers().contains_key("retry-after"));
            assert_error(res, StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded").await;
        }
        // The replayed scan is no longer the latest once another is stored: an older scan's
        // bytes are not a replay.
        assert_eq!(app.count("scans").await, 4, "{backend:?}");
        let res = app.push(&key, &body).await;
        assert_error(res, StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded").await;
    }
}

#[tokio::test]
async fn a_repeat_of_an_older_scan_is_a_new_entry() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let (_, key) = app.with_key(Tier::Team).await;
    let a = sample_push("api", 50.0, "2026-11-22T10:00:00Z");
    let b = sample_push("api", 60.0, "2026-11-22T11:00:00Z");
    for body in [&a, &b, &a] {
        assert_eq!(app.push(&key, body).await.status(), StatusCode::CREATED);
    }
    assert_eq!(
        app.count("scans").await,
        3,
        "only the latest scan can be replayed"
    );
}

tidemark_store::test_each_backend! {
    async fn api_key_failures_are_told_apart(backend) {
        let app = TestApp::spawn(backend).await;
        let body = sample_push("api", 50.0, "2026-11-22T10:00:00Z");

        let res = app
            .client
            .post(app.url("/v1/dashboard/push"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(res.headers().contains_key("ratelimit-policy"));
        assert_error(res, StatusCode::UNAUTHORIZED, "missing_api_key").await;

        let msg = assert_error(
            app.push("tm_live_abc", &body).await,
            StatusCode::UNAUTHORIZED,
            "malformed_api_key",
        )
        .await;
        assert!(msg.contains("activate"), "{msg}");

        let unknown = tidemark_domain::secrets::ApiKey::generate();
        assert_error(
            app.push(unknown.expose(), &body).await,
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
        )
        .await;
        assert_eq!(app.count("scans").await, 0);
    }
}

tidemark_store::test_each_backend! {
    async fn rotation_revokes_every_key_at_once(backend) {
        let app = TestApp::spawn(backend).await;
        let (license, old_a) = app.with_key(Tier::Team).await;
        let old_b = app.activate(&license, "laptop").await;
        let body = sample_push("api", 50.0, "2026-11-22T10:00:00Z");
        assert_eq!(app.push(&old_a, &body).await.status(), StatusCode::CREATED);

        let tidemark_services::api_keys::Rotated { key: new_key, revoked } =
            tidemark_services::api_keys::rotate(&app.db, &license.account_id, "rotated", &tidemark_store::testing::audit())
                .await
                .unwrap();
        assert_eq!(revoked, 2);
        for old in [&old_a, &old_b] {
            assert_error(
                app.push(old, &body).await,
                StatusCode::UNAUTHORIZED,
                "invalid_api_key",
            )
            .await;
        }
        let next = sample_push("api", 55.0, "2026-11-22T11:00:00Z");
        assert_eq!(
            app.push(new_key.expose(), &next).await.status(),
            StatusCode::CREATED,
            "{backend:?}"
        );
    }
}

tidemark_store::test_each_backend! {
    async fn tier_and_license_state_are_enforced(backend) {
        let app = TestApp::spawn(backend).await;
        let body = sample_push("api", 50.0, "2026-11-22T10:00:00Z");

        let (_, individual) = app.with_key(Tier::Individual).await;
        let res = app.push(&individual, &body).await;
        assert!(
            res.headers().contains_key("ratelimit"),
            "the account is known: budget reported"
        );
        let msg = assert_error(res, StatusCode::FORBIDDEN, "insufficient_tier").await;
        assert!(
            msg.contains("Team tier or above") && msg.contains("individual"),
            "{msg}"
        );

        let (license, key) = app.with_key(Tier::Team).await;
        app.set_suspended(&license, true).await;
        let msg = assert_error(
            app.push(&key, &body).await,
            StatusCode::FORBIDDEN,
            "license_inactive",
        )
        .await;
        assert!(msg.contains("suspended since"), "{msg}");
        app.set_suspended(&license, false).await;
        assert_eq!(app.push(&key, &body).await.status(), StatusCode::CREATED);

        tidemark_services::licensing::change(
            &app.db,
            &license.license_id,
            tidemark_services::licensing::LicenseChange::Expiry(1_000),
            &tidemark_store::testing::audit(),
        )
            .await
            .unwrap();
        let msg = assert_error(
            app.push(&key, &body).await,
            StatusCode::FORBIDDEN,
            "license_inactive",
        )
        .await;
        assert!(
            msg.contains("expired at 1970-01-01T00:00:01Z") && msg.contains("Renew"),
            "{msg}"
        );
        assert_eq!(app.count("scans").await, 1, "{backend:?}");
    }
}

tidemark_store::test_each_backend! {
    async fn the_project_cap_refuses_new_labels_and_archiving_frees_a_slot(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Team).await;
        let first = app
            .push_json(&key, &sample_push("one", 50.0, "2026-11-22T10:00:00Z"))
            .await;
        let msg = assert_error(
            app.push(&key, &sample_push("two", 50.0, "2026-11-22T10:00:00Z"))
                .await,
            StatusCode::CONFLICT,
            "project_limit_reached",
        )
        .await;
        assert!(
            msg.contains("allows 1 active project")
                && msg.contains("Archive")
                && msg.contains("upgrade"),
            "{msg}"
        );
        assert_eq!(app.count("projects").await, 1);

        // Archive the first project (the dashboard's Settings will do this).
        let project_id = first["project_id"].as_str().unwrap().to_owned();
        on_db!(&app.db, pool => {
            sqlx::query("UPDATE projects SET archived_at = 1 WHERE id = $1").bind(&project_id).execute(pool).await.map(|_| ())
        })
        .unwrap();
        let msg = assert_error(
            app.push(&key, &sample_push("one", 60.0, "2026-11-22T11:00:00Z"))
                .await,
            StatusCode::CONFLICT,
            "project_archived",
        )
        .await;
        assert!(msg.contains(&project_id), "{msg}");
        assert_eq!(
            app.push(&key, &sample_push("two", 50.0, "2026-11-22T10:00:00Z"))
                .await
                .status(),
            StatusCode::CREATED,
            "{backend:?}: the archived project's slot is free"
        );

        // Agency: five; enterprise: unlimited unless an operator sets a cap.
        let (_, agency) = app.with_key(Tier::Agency).await;
        push_new_labels(&app, &agency, "p", 5).await;
        let msg = assert_error(
            app.push(&agency, &sample_push("p5", 1.0, "2026-11-22T10:00:00Z"))
                .await,
            StatusCode::CONFLICT,
            "project_limit_reached",
        )
        .await;
        assert!(
            msg.contains("agency tier allows 5 active projects"),
            "{msg}"
        );
        let (_, enterprise) = app.with_key(Tier::Enterprise).await;
        push_new_labels(&app, &enterprise, "e", 8).await;
        let capped = app
            .create_license_with(Tier::Enterprise, None, Some(2))
            .await;
        let capped_key = app.activate(&capped, "ci").await;
        push_new_labels(&app, &capped_key, "c", 2).await;
        assert_error(
            app.push(&capped_key, &sample_push("c2", 1.0, "2026-11-22T10:00:00Z"))
                .await,
            StatusCode::CONFLICT,
            "project_limit_reached",
        )
        .await;
    }
}

tidemark_store::test_each_backend! {
    async fn the_write_rate_is_per_account_with_retry_after_and_ratelimit_headers(backend) {
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_WRITES_PER_MINUTE", "5")]).await;
        let (license, key_a) = app.with_key(Tier::Agency).await;
        let key_b = app.activate(&license, "second-ci-runner").await;
        for i in 0..5 {
            let key = if i % 2 == 0 { &key_a } else { &key_b };
            let res = app
                .push(
                    key,
                    &sample_push("api", f64::from(i), &format!("2026-11-22T10:00:0{i}Z")),
                )
                .await;
            assert_eq!(res.status(), StatusCode::CREATED);
            assert_eq!(res.headers()["ratelimit-policy"], "\"writes\";q=5;w=60");
            let remaining = 4 - i;
            let rl = res.headers()["ratelimit"].to_str().unwrap().to_owned();
            assert!(
                rl.starts_with(&format!("\"writes\";r={remaining};t=")),
                "{rl}"
            );
        }
        // The sixth write of the account, with either key, is refused.
        let res = app
            .push(&key_b, &sample_push("api", 9.0, "2026-11-22T10:00:09Z"))
            .await;
        let retry: u64 = res.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&retry), "{retry}");
        assert!(res.headers()["ratelimit"]
            .to_str()
            .unwrap()
            .starts_with("\"writes\";r=0;"));
        let msg = assert_error(res, StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded").await;
        assert!(
            msg.contains("5 per minute") && msg.contains(&format!("{retry} seconds")),
            "{msg}"
        );
        assert_eq!(app.count("scans").await, 5, "{backend:?}");

        // Another account has its own budget.
        let (_, other) = app.with_key(Tier::Team).await;
        assert_eq!(
            app.push(&other, &sample_push("api", 1.0, "2026-11-22T10:00:00Z"))
                .await
                .status(),
            StatusCode::CREATED
        );
    }
}

tidemark_store::test_each_backend! {
    async fn concurrent_writes_never_exceed_the_budget(backend) {
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_WRITES_PER_MINUTE", "5")]).await;
        let (_, key) = app.with_key(Tier::Team).await;
        let mut tasks = Vec::new();
        for i in 0..10 {
            let (client, url, key) = (
                app.client.clone(),
                app.url("/v1/dashboard/push"),
                key.clone(),
            );
            let body = sample_push("api", f64::from(i), &format!("2026-11-22T10:00:0{i}Z"));
            tasks.push(tokio::spawn(async move {
                client
                    .post(url)
                    .header("X-API-Key", key)
                    .json(&body)
                    .send()
                    .await
                    .unwrap()
                    .status()
            }));
        }
        let mut created = 0;
        for t in tasks {
            match t.await.unwrap() {
                StatusCode::CREATED => created += 1,
                StatusCode::TOO_MANY_REQUESTS => {}
                other => panic!("{backend:?}: unexpected {other}"),
            }
        }
        assert_eq!(created, 5, "{backend:?}");
        assert_eq!(app.count("scans").await, 5);
    }
}

tidemark_store::test_each_backend! {
    /// 40 CI jobs push to one project at once: 40 entries whose deltas chain exactly.
    async fn concurrent_pushes_to_one_project_chain_their_deltas_exactly(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Team).await;
        let mut tasks = Vec::new();
        for i in 0..40u32 {
            let (client, url, key) = (
                app.client.clone(),
                app.url("/v1/dashboard/push"),
                key.clone(),
            );
            // Distinct, irregular scores so a wrong predecessor shows up in the delta.
            let score = f64::from((i * 37) % 101);
            let body = sample_push("shared", score, &format!("2026-11-22T10:{:02}:00Z", i % 60));
            tasks.push(tokio::spawn(async move {
                let res = client
                    .post(url)
                    .header("X-API-Key", key)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(res.status(), StatusCode::CREATED);
                res.json::<Value>().await.unwrap()
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let rows: Vec<(i64, f64, f64)> = on_db!(&app.db, pool => {
            sqlx::query_as("SELECT seq, score, score_delta FROM scans ORDER BY seq").fetch_all(pool).await
        })
        .unwrap();
        assert_eq!(rows.len(), 40, "{backend:?}");
        assert_eq!(
            rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            (1..=40).collect::<Vec<_>>()
        );
        assert_eq!(rows[0].2, 0.0);
        for pair in rows.windows(2) {
            let (prev, cur) = (&pair[0], &pair[1]);
            assert_eq!(
                cur.2,
                cur.1 - prev.1,
                "{backend:?}: seq {} must chain to seq {}",
                cur.0,
                prev.0
            );
        }
    }
}

tidemark_store::test_each_backend! {
    /// Two first pushes with new labels at once under a cap of 1: exactly one project.
    async fn concurrent_new_labels_never_exceed_the_cap(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Team).await;
        let mut tasks = Vec::new();
        for i in 0..8 {
            let (client, url, key) = (
                app.client.clone(),
                app.url("/v1/dashboard/push"),
                key.clone(),
            );
            let body = sample_push(&format!("label-{i}"), 50.0, "2026-11-22T10:00:00Z");
            tasks.push(tokio::spawn(async move {
                client
                    .post(url)
                    .header("X-API-Key", key)
                    .json(&body)
                    .send()
                    .await
                    .unwrap()
                    .status()
            }));
        }
        let statuses: Vec<StatusCode> = futures_join(tasks).await;
        assert_eq!(
            statuses
                .iter()
                .filter(|s| **s == StatusCode::CREATED)
                .count(),
            1,
            "{backend:?}: {statuses:?}"
        );
        assert_eq!(
            statuses
                .iter()
                .filter(|s| **s == StatusCode::CONFLICT)
                .count(),
            7
        );
        assert_eq!(app.count("projects").await, 1);
    }
}

/// Pushes to `n` new labels `{prefix}0`, `{prefix}1`, …, each of which must be accepted.
async fn push_new_labels(app: &TestApp, key: &str, prefix: &str, n: usize) {
    for i in 0..n {
        let body = sample_push(&format!("{prefix}{i}"), 1.0, "2026-11-22T10:00:00Z");
        assert_eq!(
            app.push(key, &body).await.status(),
            StatusCode::CREATED,
            "{prefix}{i}"
        );
    }
}

type BadInput<'a> = (&'a str, Vec<u8>, &'a str, StatusCode, &'a str, &'a str);

async fn futures_join<T>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

tidemark_store::test_each_backend! {
    /// Every bad input gets its documented status and code, and nothing is stored.
    async fn bad_inputs_are_refused_with_their_documented_codes_and_change_nothing(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Team).await;
        let good = sample_push("api", 50.0, "2026-11-22T10:00:00Z");
        let with = |path: &str, value: Value| {
            let mut v = good.clone();
            let mut target = &mut v;
            let parts: Vec<&str> = path.split('.').collect();
            for p in &parts[..parts.len() - 1] {
                target = match p.parse::<usize>() {
                    Ok(i) => &mut target[i],
                    Err(_) => &mut target[*p],
                };
            }
            let last = parts[parts.len() - 1];
            if value.is_null() && last != "failed" {
                target.as_object_mut().unwrap().remove(last);
            } else {
                target[last] = value;
            }
            serde_json::to_vec(&v).unwrap()
        };
        let json_ct = "application/json";
        // (case, body, content type, status, code, text the message must contain)
        let cases: Vec<BadInput> = vec![
            (
                "not JSON",
                b"{\"project_label\": ".to_vec(),
                json_ct,
                StatusCode::BAD_REQUEST,
                "invalid_json",
                "not valid JSON",
            ),
            (
                "empty body",
                Vec::new(),
                json_ct,
                StatusCode::BAD_REQUEST,
                "invalid_json",
                "JSON",
            ),
            (
                "trailing garbage",
                b"{} x".to_vec(),
                json_ct,
                StatusCode::BAD_REQUEST,
                "invalid_json",
                "JSON",
            ),
            (
                "wrong content type",
                serde_json::to_vec(&good).unwrap(),
                "text/plain",
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "application/json",
            ),
            (
                "array body",
                b"[]".to_vec(),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "expected struct",
            ),
            (
                "score over 100",
                with("score", json!(100.5)),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "score must be between 0 and 100",
            ),
            (
                "negative score",
                with("score", json!(-0.1)),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "score must be between 0 and 100",
            ),
            (
                "score as text",
                with("score", json!("90")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "score",
            ),
            (
                "missing label",
                with("project_label", Value::Null),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "project_label",
            ),
            (
                "empty label",
                with("project_label", json!("")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "project_label",
            ),
            (
                "long label",
                with("project_label", json!("x".repeat(129))),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "project_label",
            ),
            (
                "control char in label",
                with("project_label", json!("a\u{1b}b")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "project_label",
            ),
            (
                "unknown cloud",
                with("cloud", json!("oracle")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "cloud",
            ),
            (
                "no frameworks",
                with("frameworks", json!([])),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "frameworks",
            ),
            (
                "negative passed",
                with("passed", json!(-1)),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "passed",
            ),
            (
                "fractional failed",
                with("failed", json!(1.5)),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "failed",
            ),
            (
                "null failed",
                with("failed", Value::Null),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "failed",
            ),
            (
                "missing severity key",
                with("severity_counts.low", Value::Null),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "low",
            ),
            (
                "extra severity key",
                with("severity_counts.info", json!(1)),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "severity_counts",
            ),
            (
                "bad finding status",
                with("findings.0.status", json!("BROKEN")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "findings[0].status",
            ),
            (
                "bad finding severity",
                with("findings.1.severity", json!("info")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "findings[1].severity",
            ),
            (
                "finding without rule",
                with("findings.0.rule_id", Value::Null),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "rule_id",
            ),
            (
                "bad state source",
                with("state_source", json!("laptop")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "state_source",
            ),
            (
                "timestamp without offset",
                with("scanned_at", json!("2026-11-22T10:00:00")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "scanned_at",
            ),
            (
                "not a timestamp",
                with("scanned_at", json!("yesterday")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "scanned_at",
            ),
            // The same answer on both databases (PostgreSQL cannot store NUL in text).
            (
                "NUL in a finding's message",
                with("findings.0.message", json!("bucket\u{0}is public")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "findings[0].message must not contain NUL",
            ),
            (
                "escape sequence in a resource",
                with("findings.1.resource", json!("\u{1b}[2Jbucket")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "findings[1].resource",
            ),
            (
                "count over the documented maximum",
                with("passed", json!(1_000_000_001_u64)),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "passed must be at most 1000000000",
            ),
            (
                "a number no count can hold",
                serde_json::to_vec(&good)
                    .unwrap()
                    .pipe_replace("\"failed\":", "\"failed\":1e400,\"x\":"),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "failed",
            ),
            (
                "an impossible date",
                with("scanned_at", json!("2024-02-30T10:00:00Z")),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "scanned_at",
            ),
            (
                "a key given twice",
                serde_json::to_vec(&good)
                    .unwrap()
                    .pipe_replace("{", "{\"score\":1,"),
                json_ct,
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "duplicate field `score`",
            ),
        ];
        for (name, body, content_type, status, code, needle) in cases {
            let res = app
                .client
                .post(app.url("/v1/dashboard/push"))
                .header("X-API-Key", &key)
                .header("Content-Type", content_type)
                .body(body)
                .send()
                .await
                .unwrap();
            let msg = assert_error(res, status, code).await;
            assert!(
                msg.contains(needle),
                "{backend:?} {name}: {msg:?} should mention {needle:?}"
            );
        }
        assert_eq!(app.count("scans").await, 0, "{backend:?}");
        assert_eq!(app.count("projects").await, 0);
        assert_eq!(app.count("findings").await, 0);
    }
}

/// Replaces the first `from` in a JSON body's text.
trait PipeReplace {
    fn pipe_replace(self, from: &str, to: &str) -> Vec<u8>;
}

impl PipeReplace for Vec<u8> {
    fn pipe_replace(self, from: &str, to: &str) -> Vec<u8> {
        String::from_utf8(self)
            .expect("JSON text")
            .replacen(from, to, 1)
            .into_bytes()
    }
}

#[tokio::test]
async fn oversized_pushes_are_refused_with_413() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let (_, key) = app.with_key(Tier::Team).await;
    let mut body = sample_push("api", 50.0, "2026-11-22T10:00:00Z");
    let finding = body["findings"][0].clone();
    body["findings"] = Value::Array(vec![finding.clone(); 50_001]);
    let msg = assert_error(
        app.push(&key, &body).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    )
    .await;
    assert!(msg.contains("50000") && msg.contains("50001"), "{msg}");

    let mut huge = finding;
    huge["message"] = json!("x".repeat(400));
    body["findings"] = Value::Array(vec![huge; 45_000]);
    let bytes = serde_json::to_vec(&body).unwrap();
    assert!(bytes.len() > 16 * 1024 * 1024);
    let res = app
        .client
        .post(app.url("/v1/dashboard/push"))
        .header("X-API-Key", &key)
        .header("Content-Type", "application/json")
        .body(bytes)
        .send()
        .await
        .unwrap();
    let msg = assert_error(res, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
    assert!(msg.contains("16 MiB"), "{msg}");
    assert_eq!(app.count("scans").await, 0);

    // At the limit it is accepted: 50,000 findings in one push.
    body["findings"] = Value::Array(vec![
        sample_push("x", 1.0, "2026-11-22T10:00:00Z")
            ["findings"][0]
            .clone();
        50_000
    ]);
    assert_eq!(app.push(&key, &body).await.status(), StatusCode::CREATED);
    assert_eq!(app.count("finding_spans").await, 50_000);
}

#[tokio::test]
async fn unknown_routes_and_wrong_methods_answer_json() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    assert_error(
        app.get("/v1/dashboard/pull").await,
        StatusCode::NOT_FOUND,
        "not_found",
    )
    .await;
    assert_error(app.get("/v1").await, StatusCode::NOT_FOUND, "not_found").await;
    assert_error(
        app.get("/v1/dashboard/push").await,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    )
    .await;
    let res = app
        .client
        .delete(app.url("/v1/license/validate"))
        .send()
        .await
        .unwrap();
    assert_error(res, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;
}

tidemark_store::test_each_backend! {
    /// Clients that hang up mid-request (CI jobs killed, timeouts) must not leave the database
    /// unusable: the server must keep accepting pushes and the history must stay consistent.
    async fn clients_that_hang_up_mid_push_leave_the_server_healthy(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Team).await;
        // Ten waves of twenty clients that give up after 2 to 60 ms: requests are cancelled
        // at varying points (some before, some during, some after their transaction).
        for wave in 0..10u64 {
            let mut tasks = Vec::new();
            for j in 0..20u64 {
                let i = wave * 20 + j;
                let (url, key) = (app.url("/v1/dashboard/push"), key.clone());
                let at = format!(
                    "2026-11-22T{:02}:{:02}:{:02}Z",
                    i / 3600,
                    (i / 60) % 60,
                    i % 60
                );
                let body = sample_push("api", (i % 100) as f64, &at);
                tasks.push(tokio::spawn(async move {
                    let patience = std::time::Duration::from_micros(2_000 + (i * 7_919) % 58_000);
                    let client = reqwest::Client::builder()
                        .timeout(patience)
                        .build()
                        .unwrap();
                    let _ = client
                        .post(url)
                        .header("X-API-Key", key)
                        .json(&body)
                        .send()
                        .await;
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        }
        let res = app
            .push(&key, &sample_push("api", 1.0, "2026-11-23T00:00:00Z"))
            .await;
        assert_eq!(
            res.status(),
            StatusCode::CREATED,
            "{backend:?}: still writable"
        );
        let res = app
            .client
            .post(app.url("/v1/license/resend"))
            .json(&json!({"email": "someone@example.com"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{backend:?}");
        let rows: Vec<(i64, f64, f64)> = on_db!(&app.db, pool => {
            sqlx::query_as("SELECT seq, score, score_delta FROM scans ORDER BY seq").fetch_all(pool).await
        })
        .unwrap();
        eprintln!("{backend:?}: {} of 201 pushes were stored", rows.len());
        assert!(
            rows.len() > 1,
            "{backend:?}: some pushes must get through to test anything"
        );
        for pair in rows.windows(2) {
            assert_eq!(
                pair[1].2,
                pair[1].1 - pair[0].1,
                "{backend:?}: deltas chain"
            );
        }
    }
}
