//! One account's pushes to different projects at once: on PostgreSQL they are written side
//! by side (each holds its project's lock, not the account's), and every account-wide rule
//! still holds as if they were written one by one: the write budget, the project cap, and
//! each project's deltas chaining exactly. SQLite writes one at a time and must agree.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::common;

use common::{sample_push, TestApp};
use reqwest::StatusCode;
use serde_json::Value;
use tidemark_store::on_db;
use tidemark_wire::Tier;

/// Sends every body at once with `key`; the responses' statuses and `RateLimit` headers.
async fn push_all(app: &TestApp, key: &str, bodies: Vec<Value>) -> Vec<(StatusCode, String)> {
    let tasks: Vec<_> = bodies
        .into_iter()
        .map(|body| {
            let (client, url, key) = (
                app.client.clone(),
                app.url("/v1/dashboard/push"),
                key.to_owned(),
            );
            tokio::spawn(async move {
                let res = client
                    .post(url)
                    .header("X-API-Key", key)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let limit = res
                    .headers()
                    .get("ratelimit")
                    .map(|v| v.to_str().unwrap().to_owned())
                    .unwrap_or_default();
                (res.status(), limit)
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

fn count(statuses: &[(StatusCode, String)], status: StatusCode) -> usize {
    statuses.iter().filter(|(s, _)| *s == status).count()
}

tidemark_store::test_each_backend! {
    /// Ten pushes to ten projects with a budget of five: exactly five are appended, and each
    /// is told a different budget left (4, 3, 2, 1, 0), as if they had come one by one.
    async fn pushes_to_many_projects_share_one_budget_exactly(backend) {
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_WRITES_PER_MINUTE", "5")]).await;
        let (_, key) = app.with_key(Tier::Enterprise).await;
        let bodies = (0..10)
            .map(|i| sample_push(&format!("svc-{i}"), 50.0, "2026-11-22T10:00:00Z"))
            .collect();
        let statuses = push_all(&app, &key, bodies).await;
        assert_eq!(count(&statuses, StatusCode::CREATED), 5, "{backend:?}: {statuses:?}");
        assert_eq!(count(&statuses, StatusCode::TOO_MANY_REQUESTS), 5, "{statuses:?}");
        let mut left: Vec<String> = statuses
            .iter()
            .filter(|(s, _)| *s == StatusCode::CREATED)
            .map(|(_, rl)| rl.split(';').nth(1).unwrap().to_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["r=0", "r=1", "r=2", "r=3", "r=4"], "{backend:?}");
        for (status, rl) in &statuses {
            if *status == StatusCode::TOO_MANY_REQUESTS {
                assert!(rl.starts_with("\"writes\";r=0;"), "{rl}");
            }
        }
        assert_eq!(app.count("scans").await, 5);
        assert_eq!(app.count("projects").await, 5, "a refused push leaves no project");
    }
}

tidemark_store::test_each_backend! {
    /// Twelve first pushes at once under a cap of five: five projects, seven refusals.
    async fn first_pushes_to_many_labels_fill_the_cap_exactly(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Agency).await;
        let bodies = (0..12)
            .map(|i| sample_push(&format!("team-{i}"), 50.0, "2026-11-22T10:00:00Z"))
            .collect();
        let statuses = push_all(&app, &key, bodies).await;
        assert_eq!(count(&statuses, StatusCode::CREATED), 5, "{backend:?}: {statuses:?}");
        assert_eq!(count(&statuses, StatusCode::CONFLICT), 7, "{statuses:?}");
        assert_eq!(app.count("projects").await, 5);
        assert_eq!(app.count("scans").await, 5);
    }
}

tidemark_store::test_each_backend! {
    /// Forty pushes at once, ten to each of four projects: every project numbers its scans
    /// 1..=10 and each delta is taken from the scan before it in that project.
    async fn interleaved_pushes_chain_their_deltas_per_project(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Enterprise).await;
        let bodies = (0..40u32)
            .map(|i| {
                let score = f64::from((i * 37) % 101);
                let at = format!("2026-11-22T10:{:02}:00Z", i / 4);
                sample_push(&format!("p{}", i % 4), score, &at)
            })
            .collect();
        let statuses = push_all(&app, &key, bodies).await;
        assert_eq!(count(&statuses, StatusCode::CREATED), 40, "{backend:?}: {statuses:?}");
        let rows: Vec<(String, i64, f64, f64)> = on_db!(&app.db, pool => {
            sqlx::query_as(
                "SELECT p.label, s.seq, s.score, s.score_delta FROM scans s \
                 JOIN projects p ON p.id = s.project_id ORDER BY p.label, s.seq",
            )
            .fetch_all(pool)
            .await
        })
        .unwrap();
        for label in ["p0", "p1", "p2", "p3"] {
            let mine: Vec<_> = rows.iter().filter(|r| r.0 == label).collect();
            assert_eq!(
                mine.iter().map(|r| r.1).collect::<Vec<_>>(),
                (1..=10).collect::<Vec<_>>(),
                "{backend:?}: {label}"
            );
            assert_eq!(mine[0].3, 0.0);
            for pair in mine.windows(2) {
                assert_eq!(pair[1].3, pair[1].2 - pair[0].2, "{backend:?}: {label} seq {}", pair[1].1);
            }
        }
    }
}

/// PostgreSQL only: while one project of an account is being written (its lock held), a push
/// to another project of the account is written at once, and a push to the same project waits
/// for it. This is what lets a large account's pushes use every core and replica.
#[tokio::test]
async fn a_project_being_written_holds_up_only_itself() {
    let Some(backend) = tidemark_store::testing::postgres_backend() else {
        return;
    };
    let app = TestApp::spawn(backend).await;
    let (license, key) = app.with_key(Tier::Enterprise).await;
    let tidemark_store::Db::Postgres(pool) = app.db.db() else {
        unreachable!("a PostgreSQL app");
    };
    let mut writing = pool.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('project:' || $1 || '/' || $2, 0))")
        .bind(license.account_id.as_str())
        .bind("busy")
        .execute(&mut *writing)
        .await
        .unwrap();

    let other = tokio::time::timeout(
        Duration::from_secs(10),
        app.push(&key, &sample_push("free", 70.0, "2026-11-22T10:00:00Z")),
    )
    .await
    .expect("another project is not held up");
    assert_eq!(other.status(), StatusCode::CREATED);

    let waiting = tokio::spawn({
        let (client, url, key) = (
            app.client.clone(),
            app.url("/v1/dashboard/push"),
            key.clone(),
        );
        async move {
            let body = sample_push("busy", 60.0, "2026-11-22T10:00:00Z");
            let res = client
                .post(url)
                .header("X-API-Key", key)
                .json(&body)
                .send()
                .await
                .unwrap();
            res.status()
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "the same project waits for the write in progress"
    );
    assert_eq!(app.count("scans").await, 1);
    writing.rollback().await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("written once the project is free")
        .unwrap();
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(app.count("scans").await, 2);
}

/// On PostgreSQL a push holds its place under the budget only while it is written: a replay
/// gives it back, a place still held counts (another push being written), and one a crashed
/// replica left behind lapses after two minutes and is cleared.
#[tokio::test]
async fn a_place_under_the_budget_is_held_only_while_its_push_is_written() {
    let Some(backend) = tidemark_store::testing::postgres_backend() else {
        return;
    };
    let app = TestApp::spawn_with(backend, &[("TIDEMARK_WRITES_PER_MINUTE", "2")]).await;
    let (license, key) = app.with_key(Tier::Enterprise).await;
    let first = sample_push("api", 70.0, "2026-11-22T10:00:00Z");
    assert_eq!(app.push(&key, &first).await.status(), StatusCode::CREATED);
    assert_eq!(
        app.push(&key, &first).await.status(),
        StatusCode::CREATED,
        "a replay"
    );
    assert_eq!(
        app.count("push_admissions").await,
        0,
        "the replay gave its place back"
    );

    let tidemark_store::Db::Postgres(pool) = app.db.db() else {
        unreachable!("a PostgreSQL app");
    };
    let now = chrono::Utc::now().timestamp_millis();
    sqlx::query(
        "INSERT INTO push_admissions (id, account_id, admitted_at) VALUES ('held', $1, $2)",
    )
    .bind(license.account_id.as_str())
    .bind(now)
    .execute(pool)
    .await
    .unwrap();
    let second = sample_push("web", 60.0, "2026-11-22T10:00:00Z");
    let refused = app.push(&key, &second).await;
    assert_eq!(
        refused.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "one scan and one place: 2 of 2"
    );

    sqlx::query("UPDATE push_admissions SET admitted_at = $1 WHERE id = 'held'")
        .bind(now - 121_000)
        .execute(pool)
        .await
        .unwrap();
    let written = app.push(&key, &second).await;
    assert_eq!(
        written.status(),
        StatusCode::CREATED,
        "the lapsed place no longer counts"
    );
    assert_eq!(app.count("push_admissions").await, 0, "and is cleared");
    assert_eq!(app.count("scans").await, 2);
}
