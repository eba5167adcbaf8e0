//! The replica's budget of push body bytes in flight: past it (or past an account's half of
//! it) a push is refused at once with `503 server_busy` and `Retry-After`, before its body is
//! read, and nothing is stored; the budget comes back when a push ends, however it ends.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::common;

use common::{assert_error, sample_push, stall_a_push, TestApp};
use reqwest::StatusCode;
use tidemark_store::Backend;
use tidemark_wire::Tier;

const MIB: usize = 1024 * 1024;

#[tokio::test]
async fn pushes_past_the_budget_are_refused_before_their_body_is_read() {
    // 32 MiB: two pushes of the largest size, and one account may hold one of them.
    let app = TestApp::spawn_with(Backend::Sqlite, &[("TIDEMARK_PUSH_BUDGET_MIB", "32")]).await;
    let (_, a) = app.with_key(Tier::Team).await;
    let (_, b) = app.with_key(Tier::Team).await;
    let body = |label: &str| sample_push(label, 80.0, "2026-11-22T10:15:00Z");

    // Account a announces 16 MiB and sends it slowly: its half is taken.
    let slow_a = stall_a_push(&app, &a, 16 * MIB).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let res = app.push(&a, &body("api")).await;
    assert_eq!(res.headers()["retry-after"], "2");
    let message = assert_error(res, StatusCode::SERVICE_UNAVAILABLE, "server_busy").await;
    assert!(message.contains("This account"), "{message}");

    // Account b still has room...
    assert_eq!(
        app.push(&b, &body("api")).await.status(),
        StatusCode::CREATED
    );
    // ...until its own large push fills the replica's budget: now every push waits.
    let slow_b = stall_a_push(&app, &b, 16 * MIB).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let res = app.push(&b, &body("web")).await;
    let message = assert_error(res, StatusCode::SERVICE_UNAVAILABLE, "server_busy").await;
    assert!(message.contains("Retry after 2 seconds"), "{message}");
    assert_eq!(app.count("scans").await, 1, "refused pushes store nothing");

    // The budget comes back when the slow pushes end (here: their clients hang up).
    drop((slow_a, slow_b));
    let started = Instant::now();
    loop {
        let res = app.push(&a, &body("api")).await;
        if res.status() == StatusCode::CREATED {
            break;
        }
        assert_error(res, StatusCode::SERVICE_UNAVAILABLE, "server_busy").await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the budget never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(app.count("scans").await, 2);
}
